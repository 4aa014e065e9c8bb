/* targets/heap.c: the first-fit buffer placement and plan-name sanitising every target shares.
 *
 * Buffers are placed in program order: a value takes the lowest aligned offset where it fits
 * between the values still live, and a value is released once the node that reads it last has
 * run (graph outputs never are), so memory is reused as in TFLite's arena planner.  The
 * placements are those of a plain first-fit scan over the live intervals sorted by offset
 * (testsuite/unit/test_heap.c holds the two side by side); the intervals are kept in a treap
 * (Seidel & Aragon 1996) ordered by offset, each node with the gap before its interval and the
 * largest gap of its subtree, so that placing and releasing take O(log n) each and a compile
 * grows linearly with the values overall (issue 19).  An empty value goes at offset 0 and holds
 * no interval: a gap of 0 bytes changes no other placement. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"

#define NIL (-1)

/* The treap priority of node i: a fixed mix of its index (Murmur3's finaliser), so that plans do
 * not depend on a random seed. */
static uint32_t node_pri(int i)
{
	uint32_t x = (uint32_t)i * 0x9e3779b1u + 0x7f4a7c15u;
	x ^= x >> 16, x *= 0x85ebca6bu, x ^= x >> 13, x *= 0xc2b2ae35u, x ^= x >> 16;
	return x;
}

/* Nodes [from, to) of the pool made free, chained through l. */
static void pool_chain(TgtHeap *h, int from, int to)
{
	for (int i = to - 1; i >= from; i--) {
		h->t[i] = (TgtHeapNode){ .owner = -1, .l = h->free, .r = NIL, .pri = node_pri(i) };
		h->free = i;
	}
}

int tgt_heap_init(TgtHeap *h, int capacity, int64_t align)
{
	memset(h, 0, sizeof *h);
	int n = capacity > 0 ? capacity : 1;
	h->t = malloc(sizeof *h->t * (size_t)n);
	h->align = align;
	h->root = h->free = NIL;
	if (!h->t)
		return -1;
	h->cap = n;
	pool_chain(h, 0, n);
	return 0;
}

void tgt_heap_free(TgtHeap *h)
{
	free(h->t);
	free(h->rec);
	rt_heap_free(&h->dq);
	memset(h, 0, sizeof *h);
}

/* A free node (the pool doubled when there is none), or NIL when out of memory. */
static int node_new(TgtHeap *h)
{
	if (h->free == NIL) {
		if (h->cap > INT_MAX / 2 - 16)
			return NIL;
		int cap = h->cap * 2 + 16;
		TgtHeapNode *t = realloc(h->t, sizeof *t * (size_t)cap);
		if (!t)
			return NIL;
		h->t = t;
		pool_chain(h, h->cap, cap);
		h->cap = cap;
	}
	int i = h->free;
	h->free = h->t[i].l;
	return i;
}

static void node_del(TgtHeap *h, int i)
{
	h->t[i].owner = -1, h->t[i].l = h->free, h->t[i].r = NIL;
	h->free = i;
}

static int64_t align_up(const TgtHeap *h, int64_t x)
{
	return (x + h->align - 1) / h->align * h->align;
}

static inline int64_t maxgap(const TgtHeap *h, int x) { return x == NIL ? INT64_MIN : h->t[x].maxgap; }

static inline void update(TgtHeap *h, int x)
{
	TgtHeapNode *n = &h->t[x];
	int64_t a = maxgap(h, n->l), b = maxgap(h, n->r), m = n->gap;
	m = a > m ? a : m;
	n->maxgap = b > m ? b : m;
}

/* Trees a and b joined, every interval of a below every one of b. */
static int merge(TgtHeap *h, int a, int b)
{
	if (a == NIL)
		return b;
	if (b == NIL)
		return a;
	if (h->t[a].pri > h->t[b].pri) {
		int r = merge(h, h->t[a].r, b);
		h->t[a].r = r;
		update(h, a);
		return a;
	}
	int l = merge(h, a, h->t[b].l);
	h->t[b].l = l;
	update(h, b);
	return b;
}

/* The aligned end of the last interval of tree x (where free memory after it starts), 0 for none:
 * intervals never overlap, so their ends rise with their starts. */
static int64_t end_of(const TgtHeap *h, int x)
{
	if (x == NIL)
		return 0;
	while (h->t[x].r != NIL)
		x = h->t[x].r;
	return align_up(h, h->t[x].hi);
}

/* The interval of tree x (not NIL) starting at lo given the gap `gap` before it. */
static void set_gap_at(TgtHeap *h, int x, int64_t lo, int64_t gap)
{
	if (h->t[x].lo == lo)
		h->t[x].gap = gap;
	else
		set_gap_at(h, lo < h->t[x].lo ? h->t[x].l : h->t[x].r, lo, gap);
	update(h, x);
}

/* Tree x with node k (a leaf, its interval apart from every other) inserted: down by offset,
 * then rotated up while its priority exceeds its parent's (the shape merge would give). */
static int insert(TgtHeap *h, int x, int k)
{
	if (x == NIL)
		return k;
	TgtHeapNode *n = &h->t[x];
	if (h->t[k].lo < n->lo) {
		int c = insert(h, n->l, k);
		n->l = c;
		if (h->t[c].pri > n->pri) {
			n->l = h->t[c].r;
			update(h, x);
			h->t[c].r = x;
			update(h, c);
			return c;
		}
	} else {
		int c = insert(h, n->r, k);
		n->r = c;
		if (h->t[c].pri > n->pri) {
			n->r = h->t[c].l;
			update(h, x);
			h->t[c].l = x;
			update(h, c);
			return c;
		}
	}
	update(h, x);
	return x;
}

/* Tree x without the interval starting at lo (which it holds). */
static int erase(TgtHeap *h, int x, int64_t lo)
{
	TgtHeapNode *n = &h->t[x];
	if (n->lo == lo)
		return merge(h, n->l, n->r);
	if (lo < n->lo) {
		int c = erase(h, n->l, lo);
		h->t[x].l = c;
	} else {
		int c = erase(h, n->r, lo);
		h->t[x].r = c;
	}
	update(h, x);
	return x;
}

/* The interval after the one starting at lo, or NIL. */
static int successor(const TgtHeap *h, int64_t lo)
{
	int x = h->root, best = NIL;
	while (x != NIL)
		if (h->t[x].lo > lo)
			best = x, x = h->t[x].l;
		else
			x = h->t[x].r;
	return best;
}

/* The first interval (in offset order) with at least `size` bytes free before it, or NIL. */
static int first_fit(const TgtHeap *h, int64_t size)
{
	int x = h->root;
	if (maxgap(h, x) < size)
		return NIL;
	for (;;) {
		const TgtHeapNode *n = &h->t[x];
		if (maxgap(h, n->l) >= size)
			x = n->l;
		else if (n->gap >= size)
			return x;
		else
			x = n->r;
	}
}

int64_t tgt_heap_place(TgtHeap *h, int64_t size, int owner)
{
	TgtHeapRec *rec = h->rec;
	if (!h->scan && h->nrec >= h->crec) {
		int c = h->crec * 2 + 16;
		if (!(rec = realloc(h->rec, sizeof *rec * (size_t)c)))
			return -1;
		h->rec = rec, h->crec = c;
	}
	int64_t off = 0;
	if (size > 0) {
		int k = node_new(h);
		if (k == NIL)
			return -1;
		/* at the start of the first gap that holds it (0 bytes after what precedes it), else
		 * after the last interval; the interval after it, if any, keeps what is left of the gap */
		int s = first_fit(h, size);
		off = s != NIL ? h->t[s].lo - h->t[s].gap : end_of(h, h->root);
		h->t[k] = (TgtHeapNode){ .lo = off, .hi = off + size, .gap = 0, .owner = owner, .l = NIL, .r = NIL,
					 .pri = h->t[k].pri };
		update(h, k);
		if (s != NIL)
			set_gap_at(h, h->root, h->t[s].lo, h->t[s].lo - align_up(h, off + size));
		h->root = insert(h, h->root, k);
		h->n++;
	}
	if (!h->scan)      /* an empty value's record at offset -1: it has no interval to release */
		h->rec[h->nrec++] = (TgtHeapRec){ owner, size > 0 ? off : -1 };
	if (off + size > h->top)
		h->top = off + size;
	return off;
}

/* The node of the interval at offset lo held by owner, or NIL. */
static int heap_find(const TgtHeap *h, int64_t lo, int owner)
{
	int x = h->root;
	while (x != NIL && h->t[x].lo != lo)
		x = lo < h->t[x].lo ? h->t[x].l : h->t[x].r;
	return x != NIL && h->t[x].owner == owner ? x : NIL;
}

/* Drops the interval at offset lo held by owner, when there is one. */
static void heap_drop(TgtHeap *h, int64_t lo, int owner)
{
	int m = heap_find(h, lo, owner);
	if (m == NIL)
		return;
	int64_t start = lo - h->t[m].gap;   /* the aligned end of what lies before it */
	int c = successor(h, lo);
	h->root = erase(h, h->root, lo);
	node_del(h, m);
	h->n--;
	if (c != NIL)      /* its gap now reaches back to start */
		set_gap_at(h, h->root, h->t[c].lo, h->t[c].lo - start);
}

void tgt_heap_rename(TgtHeap *h, int64_t lo, int from, int to)
{
	int j = heap_find(h, lo, from);
	if (j != NIL)
		h->t[j].owner = to;
	for (int k = h->nrec - 1; k >= h->nqueued; k--)
		if (h->rec[k].owner == from && h->rec[k].lo == lo) {
			h->rec[k].owner = to;
			break;
		}
}

/* The node from which value v of f is dead, or INT_MAX when it never is.  A graph input dies after
 * its last reader like a node result (the verifier's liveness, runtime/plan_verify.c, has it so):
 * a decode step's past KV cache then gives its memory to the later layers' present caches, and
 * the step holds the cache about once, as a serving engine's in-place cache does, not twice. */
static int death(const TgtHeap *h, const Flat *f, int v)
{
	const FlatVal *fv = &f->vals[v];
	if (fv->is_output)
		return INT_MAX;
	if (h->until && h->until[v] >= 0)
		return h->until[v];
	if (fv->def < 0)
		return fv->v && fv->v->kind == V_INPUT ? fv->last + 1 : INT_MAX;
	return (fv->last < 0 ? fv->def : fv->last) + 1;
}

void tgt_heap_release(TgtHeap *h, const Flat *f, int node)
{
	for (; !h->scan && h->nqueued < h->nrec; h->nqueued++) {
		int dn = death(h, f, h->rec[h->nqueued].owner);
		if (dn != INT_MAX && rt_heap_push(&h->dq, dn, h->nqueued) < 0)
			h->scan = 1;
	}
	if (h->scan) {      /* every live interval's death checked: once the queue could not grow, for good */
		for (int i = 0; i < h->cap; i++)
			if (h->t[i].owner >= 0 && death(h, f, h->t[i].owner) <= node)
				heap_drop(h, h->t[i].lo, h->t[i].owner);
		return;
	}
	while (h->dq.n > 0 && h->dq.a[0].key <= node) {
		const TgtHeapRec *d = &h->rec[rt_heap_pop(&h->dq).id];
		heap_drop(h, d->lo, d->owner);
	}
}

static int intervals(const TgtHeap *h, int x, int64_t *lo, int *owner, int max, int k)
{
	if (x == NIL)
		return k;
	k = intervals(h, h->t[x].l, lo, owner, max, k);
	if (k < max)
		lo[k] = h->t[x].lo, owner[k] = h->t[x].owner;
	return intervals(h, h->t[x].r, lo, owner, max, k + 1);
}

int tgt_heap_intervals(const TgtHeap *h, int64_t *lo, int *owner, int max)
{
	return intervals(h, h->root, lo, owner, max, 0);
}

/* The characters a plan name cannot hold (spaces and controls, non-ASCII, = , [ ] "): bit c%64 of
 * word c/64 (one test a character: every buffer's name passes through here). */
static const uint64_t name_bad[4] = {
	((UINT64_C(1) << 33) - 1) | UINT64_C(1) << '"' | UINT64_C(1) << ',' | UINT64_C(1) << '=',
	UINT64_C(1) << ('[' - 64) | UINT64_C(1) << (']' - 64) | UINT64_C(1) << (0x7f - 64),
	~UINT64_C(0), ~UINT64_C(0),
};

void tgt_plan_name(char *d, size_t n, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		d[i] = name_bad[c >> 6] >> (c & 63) & 1 ? '_' : s[i];
	}
	d[i] = 0;
	if (strcmp(d, "_") == 0 || !*d)
		snprintf(d, n, "v_");
}

int tgt_add_buffer(Plan *p, TgtHeap *h, const Flat *f, int v, DType dt, const char *format, int space, int64_t *end,
		   RtError *e)
{
	const FlatVal *fv = &f->vals[v];
	char name[256];
	tgt_plan_name(name, sizeof name, fv->name);
	if (strcmp(name, fv->name) && plan_find_buffer(p, name) >= 0) {
		size_t n = strlen(name);
		snprintf(name + (n > 200 ? 200 : n), 56, ".%d", v);
	}
	PlanBuffer tmp = { .dtype = dt, .rank = fv->rank };
	memcpy(tmp.dims, fv->dims, sizeof tmp.dims);
	int64_t n = plan_buffer_numel(&tmp);
	if (n < 0 || n > INT64_MAX / 64)
		return rt_errorf(e, RT_EUSER, "value '%s' has too many elements", fv->name);
	int64_t size = format ? plan_format_bytes(format, dt, fv->rank, fv->dims) : rt_dtype_bytes(dt, n);
	if (size < 0)
		return rt_errorf(e, RT_EINTERNAL, "value '%s': unknown buffer format '%s'", fv->name, format);
	int64_t off = tgt_heap_place(h, size, v);
	if (off < 0)
		return rt_errorf(e, RT_ENOMEM, "out of memory placing buffers");
	if (end)
		*end = off + size;
	int b = plan_add_buffer(p, name, space, off, dt, fv->rank, fv->dims, e);
	if (b >= 0 && format && plan_set_buffer_format(p, b, format, e) < 0)
		return -1;
	return b;
}

int tgt_add_io(Plan *p, const Flat *f, const Graph *g, const int *buf, RtError *e)
{
	char name[256];
	int *in0 = tgt_first_operand_lists(f), rc = in0 ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory adding the plan's inputs");
	for (int i = 0; rc == 0 && i < f->ninputs; i++) {
		int v = f->inputs[i], sh = 0;
		tgt_plan_name(name, sizeof name, f->vals[v].name);
		if (buf[v] < 0 && (sh = tgt_devs_io_shards(p, f, in0, v, 0, name, buf, e)) < 0)
			rc = -1;
		else if (!sh && plan_add_input(p, p->buffers[buf[v]].name, buf[v], e) < 0)
			rc = -1;
	}
	for (int i = 0; rc == 0 && i < f->noutputs; i++) {
		int v = f->outputs[i], sh = 0;
		tgt_plan_name(name, sizeof name, g->outputs[i]->name);
		if (buf[v] < 0 && (sh = tgt_devs_io_shards(p, f, in0, v, 1, name, buf, e)) < 0)
			rc = -1;
		else if (!sh && plan_add_output(p, name, buf[v], e) < 0)
			rc = -1;
	}
	free(in0);
	return rc;
}
