/* targets/heap.c: the first-fit buffer placement and plan-name sanitising every target shares.
 *
 * Buffers are placed in program order: a value takes the lowest aligned offset where it fits
 * between the values still live, and a value is released once the node that reads it last has
 * run (graph outputs never are), so memory is reused as in TFLite's arena planner.  The live
 * intervals are kept sorted by offset; the placements are those of a plain first-fit scan over
 * them, found in time linear in the values overall (issue 19). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"

int tgt_heap_init(TgtHeap *h, int capacity, int64_t align)
{
	memset(h, 0, sizeof *h);
	size_t n = (size_t)(capacity > 0 ? capacity : 1);
	h->lo = malloc(sizeof *h->lo * n);
	h->hi = malloc(sizeof *h->hi * n);
	h->owner = malloc(sizeof *h->owner * n);
	h->align = align;
	h->cap = (int)n;
	return h->lo && h->hi && h->owner ? 0 : -1;
}

void tgt_heap_free(TgtHeap *h)
{
	free(h->lo);
	free(h->hi);
	free(h->owner);
	free(h->rec);
	rt_heap_free(&h->dq);
	memset(h, 0, sizeof *h);
}

static int heap_grow(TgtHeap *h)
{
	int cap = h->cap * 2 + 16;
	int64_t *lo = realloc(h->lo, sizeof *lo * (size_t)cap);
	if (lo)
		h->lo = lo;
	int64_t *hi = lo ? realloc(h->hi, sizeof *hi * (size_t)cap) : NULL;
	if (hi)
		h->hi = hi;
	int *ow = hi ? realloc(h->owner, sizeof *ow * (size_t)cap) : NULL;
	if (!ow)
		return -1;
	h->owner = ow;
	h->cap = cap;
	return 0;
}

static int64_t align_up(const TgtHeap *h, int64_t x)
{
	return (x + h->align - 1) / h->align * h->align;
}

/* Intervals never overlap, so their ends rise with their starts and the first free byte after
 * intervals [0, at) is the aligned end of interval at-1. */
static int64_t end_before(const TgtHeap *h, int at)
{
	return at > 0 ? align_up(h, h->hi[at - 1]) : 0;
}

int64_t tgt_heap_place(TgtHeap *h, int64_t size, int owner)
{
	if (h->n >= h->cap && heap_grow(h) < 0)
		return -1;
	TgtHeapRec *rec = h->rec;
	if (!h->scan && h->nrec >= h->crec) {
		int c = h->crec * 2 + 16;
		if (!(rec = realloc(h->rec, sizeof *rec * (size_t)c)))
			return -1;
		h->rec = rec, h->crec = c;
	}
	while (h->tight < h->n && h->lo[h->tight] == end_before(h, h->tight))
		h->tight++;
	/* first fit: a gap of 0 bytes holds only an empty value, which goes first */
	int at = size > 0 ? h->tight : 0;
	int64_t off = size > 0 ? end_before(h, at) : 0;
	for (; at < h->n; at++) {
		if (h->lo[at] - off >= size)
			break;
		int64_t end = align_up(h, h->hi[at]);
		if (end > off)
			off = end;
	}
	memmove(h->lo + at + 1, h->lo + at, sizeof *h->lo * (size_t)(h->n - at));
	memmove(h->hi + at + 1, h->hi + at, sizeof *h->hi * (size_t)(h->n - at));
	memmove(h->owner + at + 1, h->owner + at, sizeof *h->owner * (size_t)(h->n - at));
	h->lo[at] = off;
	h->hi[at] = off + size;
	h->owner[at] = owner;
	h->n++;
	if (at < h->tight)
		h->tight = at;
	if (!h->scan)
		h->rec[h->nrec++] = (TgtHeapRec){ owner, off };
	if (off + size > h->top)
		h->top = off + size;
	return off;
}

/* The index of the interval at offset lo held by owner, or -1. */
static int heap_find(const TgtHeap *h, int64_t lo, int owner)
{
	int a = 0, b = h->n;
	while (a < b) {
		int m = a + (b - a) / 2;
		if (h->lo[m] < lo)
			a = m + 1;
		else
			b = m;
	}
	for (; a < h->n && h->lo[a] == lo; a++)
		if (h->owner[a] == owner)
			return a;
	return -1;
}

void tgt_heap_rename(TgtHeap *h, int64_t lo, int from, int to)
{
	int j = heap_find(h, lo, from);
	if (j >= 0)
		h->owner[j] = to;
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

/* Every live interval's death checked: once the queue could not grow, for good. */
static void release_scan(TgtHeap *h, const Flat *f, int node)
{
	int k = 0;
	for (int j = 0; j < h->n; j++)
		if (death(h, f, h->owner[j]) > node) {
			h->lo[k] = h->lo[j], h->hi[k] = h->hi[j], h->owner[k] = h->owner[j];
			k++;
		}
	h->n = k;
	h->tight = 0;
}

void tgt_heap_release(TgtHeap *h, const Flat *f, int node)
{
	for (; !h->scan && h->nqueued < h->nrec; h->nqueued++) {
		int dn = death(h, f, h->rec[h->nqueued].owner);
		if (dn != INT_MAX && rt_heap_push(&h->dq, dn, h->nqueued) < 0)
			h->scan = 1;
	}
	if (h->scan) {
		release_scan(h, f, node);
		return;
	}
	int lowest = h->n;     /* drop the dead intervals, then close the holes from the lowest */
	while (h->dq.n > 0 && h->dq.a[0].key <= node) {
		const TgtHeapRec *d = &h->rec[rt_heap_pop(&h->dq).id];
		int j = heap_find(h, d->lo, d->owner);
		if (j >= 0) {
			h->owner[j] = -1;
			if (j < lowest)
				lowest = j;
		}
	}
	if (lowest == h->n)
		return;
	int k = lowest;
	for (int j = lowest; j < h->n; j++)
		if (h->owner[j] >= 0) {
			h->lo[k] = h->lo[j], h->hi[k] = h->hi[j], h->owner[k] = h->owner[j];
			k++;
		}
	h->n = k;
	if (lowest < h->tight)
		h->tight = lowest;
}

void tgt_plan_name(char *d, size_t n, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		d[i] = ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || strchr("=,[]\"", s[i])) ? '_' : s[i];
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
