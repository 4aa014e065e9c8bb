/* passes/plan_memory.c: activation memory planning, target-independent.
 *
 * For each graph, over its scheduled node order (the node list): every graph input and node
 * result is a buffer of rt_dtype_bytes(dtype, elements) bytes, live from its definition to its
 * last reader (graph outputs to the end; inputs from the start).  Views (Reshape, Squeeze,
 * Unsqueeze, Flatten, Identity) alias their input's buffer and extend its life.  An elementwise
 * node writes in place into an input buffer that dies at that node, is not a graph input and
 * is large enough.  A Call needs its callee's arena as a workspace at the call.  Buffers are
 * then placed greedily by size (largest first, each at the lowest 64-byte-aligned offset that
 * overlaps no placed buffer live at the same time: TFLite's ArenaPlanner "greedy by size",
 * Pisarchyk & Lee 2020), which gives the arena size; the peak of the bytes live at one node
 * is reported with the buffers live there (--remarks=memory), and checked against
 * PassCtx.capacity together with the weights, with the numbers in the error.  Graphs with
 * symbolic shapes are not planned (a remark says so).  The plan (offset and size per value)
 * is kept in PassCtx.plans for targets.  Weights are not planned here.
 *
 * Memory spaces: a partitioned graph (passes/partition.c: `@device(gpu1)` on its nodes) is
 * planned per device: a buffer belongs to the device of the node that defines it (graph inputs
 * and unplaced nodes' results, such as weight shards, to the device of their first reader;
 * call workspaces to the call's device), each device's buffers get their own greedy-by-size
 * arena in that device's memory, and each device is checked against its own capacity (the
 * machine's memory for that device class) together with the weights its nodes read.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "passes/pass.h"
#include "targets/machine.h"

#define ALIGN 64
#define MAXLIST 8

/* Per value id: the buffer it lives in (union-find), its size and lifetime. */
typedef struct Live {
	int nv, nvalues;        /* slots: value ids, one call workspace per node time, then shard slots */
	int nshard, xbase;      /* shard slots [xbase, nv): the per-device pieces of a call's results that
				 * its callee assembles from shards, and of inputs it reads only as shards */
	const char **xdev;      /* per shard slot: its device */
	Value **xval;           /* per shard slot: the callee value it holds */
	int *parent;
	int64_t *size;          /* bytes, -1: not a buffer (weights, absent) */
	int *first, *last;      /* node times; -1 for inputs, nnodes for graph outputs */
	Value **val;
	int64_t *off;
	int nnodes;
	Node **order;
	const char **rdev;      /* per value id: the device of its first reader that has one (slot_device) */
} Live;

static int find(Live *l, int v)
{
	while (l->parent[v] != v)
		v = l->parent[v] = l->parent[l->parent[v]];
	return v;
}

/* Merges b's buffer into a's: one buffer, the larger size, the union of the lifetimes. */
static void merge(Live *l, int a, int b)
{
	a = find(l, a), b = find(l, b);
	if (a == b)
		return;
	l->parent[b] = a;
	l->size[a] = l->size[a] > l->size[b] ? l->size[a] : l->size[b];
	l->first[a] = l->first[a] < l->first[b] ? l->first[a] : l->first[b];
	l->last[a] = l->last[a] > l->last[b] ? l->last[a] : l->last[b];
}

static void live_free(Live *l)
{
	free(l->parent), free(l->size), free(l->first), free(l->last), free(l->val), free(l->off), free(l->order);
	free(l->xdev), free(l->xval), free(l->rdev);
}

/* Bytes of v, or -1 when its shape is symbolic. */
static int64_t value_bytes(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 || v->type.dt == DT_INVALID ? -1 : rt_dtype_bytes(v->type.dt, n);
}

/* Whether slot v holds a buffer: a planned value or a call workspace. */
static int is_buf(const Live *l, int v) { return v < l->nvalues ? l->val[v] != NULL : l->size[v] > 0; }

/* Whether n is an output assembled from shards (passes/partition.c: Concat {shard="output"}, the
 * KV-cache outputs of a tensor-parallel layer): no buffer of its own, each shard stays on the
 * device that computed it (as the lowering makes it a sharded plan output, targets/devices.c). */
static int is_output_shards(const Node *n)
{
	const char *sh = n->op == OP_Concat ? rt_attr_str(&n->attrs, "shard", NULL) : NULL;
	return sh && strcmp(sh, "output") == 0;
}

/* The input-shard Split (passes/partition.c: Split {shard="input"}, a KV-cache input cut by heads)
 * that is the only reader of input j of call n's callee, or NULL. */
static const Node *call_input_shards(const Node *n, int j)
{
	const Graph *g = n->op == OP_Call ? n->callee : NULL;
	if (!g || j >= g->nin || !g->inputs[j])
		return NULL;
	const Node *sp = NULL;
	ir_foreach_node(g, r)
		for (int k = 0; k < r->nin; k++)
			if (r->in[k] == g->inputs[j]) {
				const char *sh = r->op == OP_Split ? rt_attr_str(&r->attrs, "shard", NULL) : NULL;
				if (sp || !sh || strcmp(sh, "input"))
					return NULL;
				sp = r;
			}
	return sp;
}

/* The device of the first node of g reading v, or NULL. */
static const char *reader_device(const Graph *g, const Value *v)
{
	ir_foreach_node(g, r)
		for (int k = 0; k < r->nin; k++)
			if (r->in[k] == v)
				return r->annot.device;
	return NULL;
}

/* The shard Concat that defines result j of call n's callee, or NULL. */
static const Node *call_shards(const Node *n, int j)
{
	const Graph *g = n->op == OP_Call ? n->callee : NULL;
	if (!g || j >= g->nout || !g->outputs[j] || g->outputs[j]->kind != V_NODE)
		return NULL;
	const Node *d = g->outputs[j]->def;
	return d && is_output_shards(d) ? d : NULL;
}

static int add_value(Live *l, Value *v, int t)
{
	int64_t b = value_bytes(v);
	if (b < 0)
		return -1;
	l->val[v->id] = v;
	l->size[v->id] = b;
	l->first[v->id] = l->last[v->id] = t;
	return 0;
}

/* Sizes and lifetimes of every buffer; -1 (nothing planned) when a shape is symbolic. */
static int collect(Live *l, Graph *g)
{
	int t = 0, nx = 0;
	ir_foreach_node(g, n) {
		for (int j = 0; j < n->nout; j++)
			nx += call_shards(n, j) ? call_shards(n, j)->nin : 0;
		for (int j = 0; j < n->nin; j++)
			nx += call_input_shards(n, j) ? call_input_shards(n, j)->nout : 0;
	}
	int nv = l->nv = g->nvalues + g->nnodes + nx;
	l->nvalues = g->nvalues;
	l->nshard = nx;
	l->xbase = g->nvalues + g->nnodes;
	l->xdev = calloc((size_t)(nx ? nx : 1), sizeof *l->xdev);
	l->xval = calloc((size_t)(nx ? nx : 1), sizeof *l->xval);
	l->parent = malloc((size_t)nv * sizeof *l->parent);
	l->size = malloc((size_t)nv * sizeof *l->size);
	l->first = malloc((size_t)nv * sizeof *l->first);
	l->last = malloc((size_t)nv * sizeof *l->last);
	l->val = calloc((size_t)nv, sizeof *l->val);
	l->off = malloc((size_t)nv * sizeof *l->off);
	l->order = malloc((size_t)(g->nnodes + 1) * sizeof *l->order);
	if (!l->parent || !l->size || !l->first || !l->last || !l->val || !l->off || !l->order || !l->xdev || !l->xval)
		abort();
	for (int i = 0; i < nv; i++)
		l->parent[i] = i, l->size[i] = -1, l->off[i] = -1;
	for (int i = 0; i < g->nin; i++)
		if (add_value(l, g->inputs[i], -1) < 0)
			return -1;
	ir_foreach_node(g, n) {
		l->order[t] = n;
		for (int i = 0; i < n->nout; i++)
			if (add_value(l, n->out[i], t) < 0)
				return -1;
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] && l->val[n->in[i]->id])
				l->last[n->in[i]->id] = t;
		t++;
	}
	l->nnodes = t;
	for (int i = 0; i < g->nout; i++)
		if (l->val[g->outputs[i]->id])
			l->last[g->outputs[i]->id] = t;
	/* outputs assembled from shards: the shards live to the end, the whole is no buffer; a call
	 * result that a callee assembles so is held as its shards, each on its own device */
	int x = l->xbase;
	for (t = 0; t < l->nnodes; t++) {
		Node *n = l->order[t];
		if (is_output_shards(n) && l->val[n->out[0]->id]) {
			for (int k = 0; k < n->nin; k++)
				if (n->in[k] && l->val[n->in[k]->id])
					l->last[n->in[k]->id] = l->nnodes;
			l->val[n->out[0]->id] = NULL;
		}
		for (int j = 0; j < n->nout; j++) {
			const Node *cat = call_shards(n, j);
			int id = n->out[j]->id;
			for (int k = 0; cat && k < cat->nin; k++, x++) {
				const Value *sv = cat->in[k];
				l->xval[x - l->xbase] = (Value *)sv;
				l->xdev[x - l->xbase] = sv && sv->kind == V_NODE && sv->def ? sv->def->annot.device : NULL;
				l->size[x] = sv ? value_bytes(sv) : -1;
				l->first[x] = l->first[id], l->last[x] = l->last[id];
			}
			if (cat && l->val[id])
				l->val[id] = NULL;
		}
		for (int j = 0; j < n->nin; j++) {   /* a graph input only this call reads, as shards */
			const Node *sp = call_input_shards(n, j);
			const Value *in = n->in[j];
			if (!sp || !in || in->kind != V_INPUT || !l->val[in->id] || l->last[in->id] != t) {
				x += sp ? sp->nout : 0;
				continue;
			}
			for (int k = 0; k < sp->nout; k++, x++) {
				const Value *sv = sp->out[k];
				l->xval[x - l->xbase] = (Value *)sv;
				l->xdev[x - l->xbase] = reader_device(n->callee, sv);
				l->size[x] = value_bytes(sv);
				l->first[x] = l->first[in->id], l->last[x] = t;
			}
			l->val[in->id] = NULL;
		}
	}
	return 0;
}

/* l->rdev: per value id, the device of the first node in order reading it that has one. */
static void reader_devices(Live *l)
{
	if (!(l->rdev = calloc((size_t)(l->nvalues ? l->nvalues : 1), sizeof *l->rdev)))
		abort();
	for (int t = 0; t < l->nnodes; t++)
		for (int i = 0; i < l->order[t]->nin; i++) {
			const Value *v = l->order[t]->in[i];
			if (v && l->order[t]->annot.device && !l->rdev[v->id])
				l->rdev[v->id] = l->order[t]->annot.device;
		}
}

static int is_view(const Node *n) { return (ir_ops[n->op].flags & F_VIEW) && n->nout == 1 && n->nin >= 1; }

static int is_input(const Value *v) { return v->kind == V_INPUT; }

static const char *slot_device(const Live *l, int b);

/* Whether two buffers live on the same device (both unplaced counts as the same). */
static int same_device(const Live *l, int a, int b)
{
	const char *x = slot_device(l, a), *y = slot_device(l, b);
	return x == y || (x && y && strcmp(x, y) == 0);
}

/* Views alias their input; elementwise nodes reuse a dying input buffer in place (on one
 * device: a partitioned graph never shares a buffer across devices). */
static void share(Live *l, PassCtx *c)
{
	for (int t = 0; t < l->nnodes; t++) {
		Node *n = l->order[t];
		if (is_view(n) && n->in[0] && l->val[n->in[0]->id] && same_device(l, n->in[0]->id, n->out[0]->id)) {
			merge(l, n->in[0]->id, n->out[0]->id);
			pass_stat(c, "views aliased", 1);
		}
	}
	for (int t = 0; t < l->nnodes; t++) {
		Node *n = l->order[t];
		if (!(ir_ops[n->op].flags & F_ELEM) || is_view(n) || n->nout != 1)
			continue;
		int o = n->out[0]->id;
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			int r = v && l->val[v->id] ? find(l, v->id) : -1;
			if (r < 0 || is_input(l->val[r]) || l->last[r] != t || l->size[r] < l->size[o] || find(l, o) != o ||
			    !same_device(l, r, o))
				continue;
			merge(l, r, o);
			pass_stat(c, "buffers reused in place", 1);
			break;
		}
	}
}

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static int overlaps(const Live *l, int a, int b) { return l->first[a] <= l->last[b] && l->first[b] <= l->last[a]; }

static int by_size(const void *pa, const void *pb, void *arg);

/* Sorts a[0, n) by by_size, ties in ascending slot order: a merge sort, O(n log n) (qsort_r is not
 * C11, and an insertion sort was quadratic in a 504-layer model's thousands of buffers). */
static void sort_bufs(int *a, int n, const Live *l)
{
	int *t = malloc((size_t)(n ? n : 1) * sizeof *t);
	if (!t)
		abort();
	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				t[k++] = by_size(&a[j], &a[i], (void *)l) < 0 ? a[j++] : a[i++];
			while (i < mid)
				t[k++] = a[i++];
			while (j < hi)
				t[k++] = a[j++];
		}
		memcpy(a, t, sizeof *a * (size_t)n);
	}
	free(t);
}

/* The roots (buffers), largest first. */
static int roots(Live *l, int *out)
{
	int k = 0;
	for (int v = 0; v < l->nv; v++)
		if (is_buf(l, v) && find(l, v) == v)
			out[k++] = v;
	sort_bufs(out, k, l);    /* by size desc, then first asc, then slot asc (a stable sort's order) */
	return k;
}

static int by_size(const void *pa, const void *pb, void *arg)
{
	const Live *l = arg;
	int a = *(const int *)pa, b = *(const int *)pb;
	if (l->size[a] != l->size[b])
		return l->size[a] > l->size[b] ? -1 : 1;
	return l->first[a] - l->first[b];
}

/* Greedy by size; returns the arena size.  Buffer b goes at the lowest aligned offset clear of
 * every placed buffer live at the same time: one pass over the placed buffers in offset order
 * (ord), moving past each one live then that overlaps [off, off + size), and stopping at the first
 * that starts at or above off + size (none after it can overlap).  That is the offset the
 * repeated scan over all placed buffers found, in one pass that ends early. */
static int64_t place(Live *l, int *bufs, int nb)
{
	int64_t arena = 0;
	int *ord = malloc((size_t)(nb ? nb : 1) * sizeof *ord);
	if (!ord)
		abort();
	for (int i = 0; i < nb; i++) {
		int b = bufs[i], at = 0, hi = i;
		int64_t off = 0, size = l->size[b];
		for (int j = 0; j < i; j++) {
			int p = ord[j];
			if (l->off[p] >= off + size)
				break;
			if (off < l->off[p] + l->size[p] && overlaps(l, p, b))
				off = align_up(l->off[p] + l->size[p]);
		}
		l->off[b] = off;
		while (at < hi) {      /* kept in offset order: after the placed ones at or below off */
			int m = at + (hi - at) / 2;
			if (l->off[ord[m]] <= off)
				at = m + 1;
			else
				hi = m;
		}
		memmove(ord + at + 1, ord + at, sizeof *ord * (size_t)(i - at));
		ord[at] = b;
		if (l->off[b] + l->size[b] > arena)
			arena = l->off[b] + l->size[b];
	}
	free(ord);
	return arena;
}

/* "1.50 GiB": three significant digits in the largest binary unit below the value. */
static char *human(int64_t b, char *buf, size_t n)
{
	static const char *unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 5)
		v /= 1024, u++;
	if (u == 0)
		snprintf(buf, n, "%lld bytes", (long long)b);
	else
		snprintf(buf, n, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit[u]);
	return buf;
}

/* Call workspaces: the callee's arena, live only at the call. */
static void add_workspaces(Live *l, const PassCtx *c)
{
	for (int t = 0; t < l->nnodes; t++) {
		const Node *n = l->order[t];
		for (const MemPlan *p = c->plans; p && n->op == OP_Call; p = p->next)
			if (p->graph == n->callee && p->peak > 0) {
				int s = l->nvalues + t;
				l->size[s] = p->peak;
				l->first[s] = l->last[s] = t;
			}
	}
}

/* The bytes live at each time; returns the worst time (the first of equals).  One sweep over the
 * times with the sizes added where a buffer starts and taken off after it ends. */
static int peak_time(Live *l, int *bufs, int nb, int64_t *bytes)
{
	int best = 0, T = l->nnodes;
	*bytes = -1;
	int64_t *delta = calloc((size_t)T + 1, sizeof *delta);
	if (!delta)
		abort();
	for (int i = 0; i < nb; i++) {
		int a = l->first[bufs[i]] < 0 ? 0 : l->first[bufs[i]], b = l->last[bufs[i]] >= T ? T - 1 : l->last[bufs[i]];
		if (a <= b)
			delta[a] += l->size[bufs[i]], delta[b + 1] -= l->size[bufs[i]];
	}
	int64_t sum = 0;
	for (int t = 0; t < T; t++) {
		sum += delta[t];
		if (sum > *bytes)
			*bytes = sum, best = t;
	}
	free(delta);
	if (*bytes < 0)
		*bytes = 0;
	return best;
}

/* The name of buffer slot b: its value, or "<callee> workspace". */
static const char *buf_name(const Live *l, int b, char *tmp, size_t n)
{
	if (b < l->nvalues)
		return l->val[b]->name;
	if (b >= l->xbase) {
		const Value *v = l->xval[b - l->xbase];
		snprintf(tmp, n, "%s (shard)", v && v->name ? v->name : "?");
		return tmp;
	}
	snprintf(tmp, n, "%s workspace", l->order[b - l->nvalues]->callee->name);
	return tmp;
}

/* "'a' 512 MiB, 'b' 256 MiB, ..." for the largest buffers live at time t. */
static void live_list(const Live *l, const int *bufs, int nb, int t, char *out, size_t n)
{
	size_t len = 0;
	int k = 0;
	out[0] = 0;
	for (int i = 0; i < nb && len < n; i++) {
		int b = bufs[i];
		char h[32], tmp[160];
		if (l->first[b] > t || t > l->last[b])
			continue;
		if (k++ == MAXLIST) {
			len += (size_t)snprintf(out + len, n - len, ", ...");
			break;
		}
		len += (size_t)snprintf(out + len, n - len, "%s'%s' %s", k > 1 ? ", " : "",
					buf_name(l, b, tmp, sizeof tmp), human(l->size[b], h, sizeof h));
	}
}

/* Keeps the plan in the context: offset and size per value id. */
static MemPlan *keep_plan(PassCtx *c, Graph *g, Live *l, int64_t arena, int64_t live, int t)
{
	MemPlan *p = calloc(1, sizeof *p);
	if (!p || !(p->offset = malloc((size_t)g->nvalues * sizeof *p->offset)) ||
	    !(p->size = calloc((size_t)g->nvalues, sizeof *p->size)))
		abort();
	p->graph = g;
	p->peak = arena;
	p->live_peak = live;
	p->peak_node = l->nnodes ? l->order[t] : NULL;
	for (int v = 0; v < g->nvalues; v++) {
		p->offset[v] = l->val[v] ? l->off[find(l, v)] : -1;
		p->size[v] = l->val[v] ? l->size[v] : 0;
		p->nbufs += l->val[v] && find(l, v) == v;
	}
	p->next = c->plans;
	c->plans = p;
	return p;
}

/* Weight and constant bytes of g with calls expanded (what the capacity check adds to the
 * activations). */
static int64_t stored_params(const PassCtx *c, Graph *g, int depth);
static int64_t weight_bytes(const PassCtx *c, Graph *g)
{
	Summary s = ir_summary(g);
	int64_t p = c->precision ? stored_params(c, g, 0) : s.parameter_bytes;
	return p + s.constant_bytes;
}

/* Every read of every value of a graph, in node order then operand order: the reads of value id v
 * are node[at[v] .. at[v + 1]) with operand indices k[...] (built in one pass, so that the
 * per-parameter questions below stay linear in the graph). */
typedef struct Reads {
	int *at, *k;
	Node **node;
} Reads;

static void reads_free(Reads *r) { free(r->at), free(r->k), free(r->node); }

static void reads_build(Reads *r, const Graph *g)
{
	int nv = g->nvalues, total = 0;
	r->at = calloc((size_t)nv + 2, sizeof *r->at);
	if (!r->at)
		abort();
	ir_foreach_node(g, n)
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && n->in[k]->id < nv)
				r->at[n->in[k]->id + 2]++, total++;
	for (int v = 0; v < nv; v++)
		r->at[v + 2] += r->at[v + 1];
	r->k = malloc((size_t)(total ? total : 1) * sizeof *r->k);
	r->node = malloc((size_t)(total ? total : 1) * sizeof *r->node);
	if (!r->k || !r->node)
		abort();
	ir_foreach_node(g, n)
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && n->in[k]->id < nv) {
				int i = r->at[n->in[k]->id + 1]++;
				r->node[i] = n, r->k[i] = k;
			}
}

/* Bytes of a parameter as stored: its first reader's view of it (pass_weight_bytes). */
static int64_t param_bytes(const PassCtx *c, const Reads *r, const Value *p)
{
	if (r->at[p->id] < r->at[p->id + 1])
		return pass_weight_bytes(c, r->node[r->at[p->id]], r->k[r->at[p->id]]);
	return value_bytes(p);
}

/* The parameter bytes of g as stored, calls expanded. */
static int64_t stored_params(const PassCtx *c, Graph *g, int depth)
{
	int64_t w = 0;
	Reads r;
	reads_build(&r, g);
	for (int i = 0; i < g->nparams; i++)
		if (!(g->params[i]->init && g->params[i]->init->inline_lit))
			w += param_bytes(c, &r, g->params[i]);
	reads_free(&r);
	ir_foreach_node(g, n)
		if (n->op == OP_Call && n->callee && depth < 16)
			w += stored_params(c, n->callee, depth + 1) * (n->repeat > 0 ? n->repeat : 1);
	return w;
}

/* The capacity check for the entry graph; 1 (an error reported) when it does not fit. */
static int check_capacity(PassCtx *c, Graph *g, const MemPlan *p, const char *live)
{
	const MemCapacity *cap = &c->capacity;
	int64_t w = weight_bytes(c, g);
	if (cap->bytes <= 0 || p->peak + w <= cap->bytes)
		return 0;
	char a[32], wb[32], h[32];
	Loc loc = p->peak_node ? p->peak_node->loc : g->loc;
	char where[160];
	if (cap->device)
		snprintf(where, sizeof where, "device '%s' %s holds", cap->device, cap->space ? cap->space : "memory");
	else
		snprintf(where, sizeof where, "the capacity given is");
	diag_error(loc, "activations need %s (%lld bytes) at node '%s' and weights %s (%lld bytes), but "
		   "%s %s (%lld bytes); live at the peak: %s",
		   human(p->peak, a, sizeof a), (long long)p->peak,
		   p->peak_node ? pass_node_name(p->peak_node) : g->name, human(w, wb, sizeof wb), (long long)w,
		   where, human(cap->bytes, h, sizeof h), (long long)cap->bytes, live);
	return 1;
}

/* ---- per device ---- */

/* The device buffer slot b lives on: its defining node's @device, else its first reader's
 * (NULL: unplaced). */
static const char *slot_device(const Live *l, int b)
{
	if (b >= l->xbase)
		return l->xdev[b - l->xbase];
	if (b >= l->nvalues)
		return l->order[b - l->nvalues]->annot.device;
	const Value *v = l->val[b];
	if (v->kind == V_NODE && v->def && v->def->op == OP_Call && v->def->callee && v->defidx < v->def->callee->nout) {
		/* a call's result lives where its callee computes it (a tensor-parallel layer's copy of
		 * the residual stream on each device: passes/partition.c replicate) */
		const Value *o = v->def->callee->outputs[v->defidx];
		if (o->kind == V_NODE && o->def && o->def->annot.device)
			return o->def->annot.device;
	}
	if (v->kind == V_NODE && v->def && v->def->annot.device)
		return v->def->annot.device;
	return l->rdev[b];
}

static int name_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	return strcmp(x ? x : "", y ? y : "");
}

static int on_device(const Node *n, const char *inherited, const char *dev)
{
	const char *d = n->annot.device ? n->annot.device : inherited;
	return d && strcmp(d, dev) == 0;
}

/* Weight bytes the nodes on device `dev` read, in g and the graphs it calls (a parameter read
 * twice there counts once; a call's nodes inherit its device and count times its repeat; a
 * weight-shard Split -- no @device, reading a parameter -- counts each shard on the device of
 * its readers).  bits > 0: float weights counted at that many bits per element (a pool that stores
 * them at its matmul format, device_pool). */
static int64_t device_weights(const PassCtx *c, Graph *g, const char *dev, const char *inherited, int bits, int depth)
{
	int64_t w = 0;
	Reads r;
	reads_build(&r, g);
	for (int i = 0; i < g->nparams; i++) {
		Value *p = g->params[i];
		int used = 0;
		for (int q = r.at[p->id]; q < r.at[p->id + 1] && !used; q++) {
			const Node *n = r.node[q];
			if (n->op == OP_Split && !n->annot.device) {
				for (int o = 0; o < n->nout; o++) {
					int here = 0, id = n->out[o]->id;
					int64_t b = value_bytes(n->out[o]);
					for (int j = r.at[id]; j < r.at[id + 1] && !here; j++)
						if ((here = on_device(r.node[j], inherited, dev)))
							b = pass_weight_bytes(c, r.node[j], r.k[j]);
					if (here && b > 0)
						w += b;
				}
			} else
				used = on_device(n, inherited, dev);
		}
		int64_t ne = ir_type_numel(p->type), b = !used ? 0 : bits > 0 && ne > 0 && rt_dtypes[p->type.dt].kind == K_FLOAT ?
			     ne * bits / 8 : param_bytes(c, &r, p);
		if (used && b > 0)
			w += b;
	}
	reads_free(&r);
	ir_foreach_node(g, n)
		if (n->op == OP_Call && n->callee && depth < 64)
			w += device_weights(c, n->callee, dev, n->annot.device ? n->annot.device : inherited, bits, depth + 1) *
			     (n->repeat > 0 ? n->repeat : 1);
	return w;
}

/* The machine's device of instance `dev` ("gpu3"), or NULL. */
static const Device *pm_machine_device(const PassCtx *c, const char *dev)
{
	const Machine *m = c->machine;
	for (int i = 0; m && i < m->ndevs; i++) {
		const Device *d = &m->devs[i];
		size_t n = strlen(d->id);
		if (!d->is_host && !strncmp(dev, d->id, n) && strspn(dev + n, "0123456789") == strlen(dev + n))
			return d;
	}
	return NULL;
}

/* The chips device instance `dev` stands for: the largest `pool_size` of the nodes placed on it
 * (passes/disaggregate.c: a pool of chips working on one layer graph, whose memory holds the
 * whole pool's, as the vera-rubin lowering sizes it), 1 without one. */
static int64_t device_pool(const Graph *g, const char *dev, const char *inherited, int depth)
{
	int64_t pool = 1;
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee && depth < 64) {
			int64_t q = device_pool(n->callee, dev, n->annot.device ? n->annot.device : inherited, depth + 1);
			pool = q > pool ? q : pool;
		} else if (on_device(n, inherited, dev)) {
			int64_t q = rt_attr_int(&n->attrs, "pool_size", 1);
			pool = q > pool ? q : pool;
		}
	}
	return pool;
}

/* The capacity of device instance `dev` ("gpu3") of the machine: its HBM, else DRAM, SRAM,
 * VMEM, times the chips of its pool (device_pool); 0 when the machine does not describe it.
 * *bits: for an LPU pool, the bits per element of its matmul format, at which it stores float
 * weights (dev_matmul_format; disaggregate sizes the pool so), else 0. */
static int64_t device_capacity(const PassCtx *c, const Graph *g, const char *dev, const char **space, int *bits)
{
	static const MemKind pref[] = { MEM_HBM, MEM_DRAM, MEM_SRAM, MEM_VMEM };
	const Device *d = pm_machine_device(c, dev);
	*bits = 0;
	for (size_t k = 0; d && k < sizeof pref / sizeof pref[0]; k++) {
		const MemSpace *s = dev_mem_kind(d, pref[k]);
		if (s && num_has(&s->capacity)) {
			int64_t pool = device_pool(g, dev, NULL, 0);
			DType f = pool > 1 && d->kind == DEV_LPU ? dev_matmul_format(d) : DT_INVALID;
			if (f != DT_INVALID)
				*bits = rt_dtypes[f].bits;
			*space = s->name;
			return (int64_t)mem_total_capacity(d, s) * pool;
		}
	}
	return 0;
}

/* Plans the buffers of every device separately (bufs: all buffers, largest first); returns the
 * largest arena and reports each device, with the capacity check. */
static int64_t place_devices(PassCtx *c, Graph *g, Live *l, int *bufs, int nb, int entry, int *errors)
{
	const char **dev = malloc((size_t)(nb ? nb : 1) * sizeof *dev), **names = malloc((size_t)(nb ? nb : 1) * sizeof *names);
	int *sub = malloc((size_t)(nb ? nb : 1) * sizeof *sub), nn = 0;
	if (!dev || !names || !sub)
		abort();
	for (int i = 0; i < nb; i++)
		names[nn++] = dev[i] = slot_device(l, bufs[i]);
	qsort(names, (size_t)nn, sizeof *names, name_cmp);
	int64_t worst = 0;
	for (int i = 0; i < nn; i++) {
		if (i > 0 && name_cmp(&names[i], &names[i - 1]) == 0)
			continue;
		int ns = 0;
		pass_stat(c, "device arenas planned", 1);
		for (int k = 0; k < nb; k++)
			if (name_cmp(&dev[k], &names[i]) == 0)
				sub[ns++] = bufs[k];
		int64_t arena = place(l, sub, ns), live;
		int t = peak_time(l, sub, ns, &live);
		if (arena > worst)
			worst = arena;
		char list[1024], a[32], lb[32], wb[32], cb[32];
		live_list(l, sub, ns, t, list, sizeof list);
		const char *dn = names[i] ? names[i] : "(unplaced)";
		pass_remark(c, REMARK_ANALYSIS, g, l->nnodes ? l->order[t] : NULL, "graph '%s' on %s: arena %s (%lld bytes) "
			    "for %d buffers; peak %s live at node '%s': %s", g->name, dn, human(arena, a, sizeof a),
			    (long long)arena, ns, human(live, lb, sizeof lb), l->nnodes ? pass_node_name(l->order[t]) : "-", list);
		const char *space = NULL;
		int bits = 0;
		int64_t cap = entry && names[i] ? device_capacity(c, g, names[i], &space, &bits) : 0, w = 0;
		if (cap > 0 && arena + (w = device_weights(c, g, names[i], NULL, bits, 0)) > cap) {
			diag_error(l->nnodes ? l->order[t]->loc : g->loc, "activations need %s (%lld bytes) on device '%s' "
				   "and the weights its nodes read %s (%lld bytes), but its %s holds %s (%lld bytes); live at "
				   "the peak: %s", human(arena, a, sizeof a), (long long)arena, names[i],
				   human(w, wb, sizeof wb), (long long)w, space, human(cap, cb, sizeof cb), (long long)cap, list);
			(*errors)++;
		}
	}
	free(dev), free(names), free(sub);
	return worst;
}

/* Whether any node of g is placed on a device. */
static int placed(const Graph *g)
{
	ir_foreach_node(g, n)
		if (n->annot.device)
			return 1;
	return 0;
}

/* Plans one graph; 0, or the number of errors. */
static int plan_graph(PassCtx *c, Graph *g, int entry)
{
	Live l = { 0 };
	int errors = 0;
	if (collect(&l, g) < 0) {
		pass_remark(c, REMARK_MISSED, g, NULL, "graph '%s' not planned: its shapes are symbolic "
			    "(bind the dimensions with --bind)", g->name);
		live_free(&l);
		return 0;
	}
	reader_devices(&l);
	share(&l, c);
	add_workspaces(&l, c);
	int *bufs = malloc((size_t)(l.nv ? l.nv : 1) * sizeof *bufs), nb = roots(&l, bufs);
	if (placed(g)) {
		int64_t arena = place_devices(c, g, &l, bufs, nb, entry, &errors), live;
		int t = peak_time(&l, bufs, nb, &live);
		keep_plan(c, g, &l, arena, live, t);
		pass_stat(c, "buffers planned", nb);
		free(bufs);
		live_free(&l);
		return errors;
	}
	int64_t arena = place(&l, bufs, nb), live;
	int t = peak_time(&l, bufs, nb, &live);
	char list[1024], a[32], lb[32];
	live_list(&l, bufs, nb, t, list, sizeof list);
	MemPlan *p = keep_plan(c, g, &l, arena, live, t);
	pass_remark(c, REMARK_ANALYSIS, g, p->peak_node, "graph '%s': arena %s (%lld bytes) for %d buffers; "
		    "peak %s live at node '%s': %s", g->name, human(arena, a, sizeof a), (long long)arena, nb,
		    human(live, lb, sizeof lb), p->peak_node ? pass_node_name(p->peak_node) : "-", list);
	pass_stat(c, "buffers planned", nb);
	if (entry)
		errors = check_capacity(c, g, p, list);
	free(bufs);
	live_free(&l);
	return errors;
}

/* Plans g after every graph it calls (depth first), each once. */
static int plan_tree(PassCtx *c, Graph *g, Graph *entry, unsigned char *done, Graph **all, int ng)
{
	int k = 0, errors = 0;
	while (k < ng && all[k] != g)
		k++;
	if (k == ng || done[k])
		return 0;
	done[k] = 1;
	ir_foreach_node(g, n)
		if (n->op == OP_Call && n->callee)
			errors += plan_tree(c, n->callee, entry, done, all, ng);
	return errors + plan_graph(c, g, g == entry);
}

int pass_plan_memory(Module *m, PassCtx *c)
{
	int ng = m->ngraphs, k = 0, errors = 0;
	Graph **all = malloc((size_t)(ng ? ng : 1) * sizeof *all);
	unsigned char *done = calloc((size_t)(ng ? ng : 1), 1);
	if (!all || !done)
		abort();
	for (Graph *g = m->graphs; g && k < ng; g = g->next)
		all[k++] = g;
	Graph *entry = ir_entry(m);
	if (entry)
		errors = plan_tree(c, entry, entry, done, all, k);
	for (int i = 0; i < k; i++)
		errors += plan_tree(c, all[i], entry, done, all, k);
	free(all);
	free(done);
	return errors;
}

void pass_capacity_from_machine(PassCtx *c, const Machine *mach)
{
	static const MemKind pref[] = { MEM_HBM, MEM_DRAM, MEM_SRAM, MEM_VMEM };
	const Device *d = machine_first(mach, DEV_GPU);
	for (int k = DEV_TPU; !d && k <= DEV_CPU; k++)
		d = machine_first(mach, (DevKind)k);
	for (size_t i = 0; d && i < sizeof pref / sizeof pref[0]; i++) {
		const MemSpace *s = dev_mem_kind(d, pref[i]);
		if (s && num_has(&s->capacity)) {
			c->capacity.device = d->id;
			c->capacity.space = s->name;
			c->capacity.bytes = (int64_t)mem_total_capacity(d, s);
			return;
		}
	}
}
