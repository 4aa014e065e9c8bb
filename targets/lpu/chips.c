/* targets/lpu/chips.c: which chip runs what, and the copies between chips.
 *
 * The LPU has no HBM: weights, activations and KV cache all live in the SRAM of the chips used
 * (hardware.md §3.6), so a large model is spread over many chips (ISCA 2022).  The chip of every
 * flat node comes from
 *   - the graph's @device(lpuK) annotations (the partition pass's pipeline stages, or the
 *     user's; a node inside a placed call takes the call's): a node without one runs where its
 *     first operand was produced, else with the node before it; a Transfer node to another chip becomes a
 *     C2C copy; a weight-shard Split (--tp) runs nowhere, its shards are slices of the
 *     parameter stored where they are read; a collective gathers its inputs to its chip and
 *     runs there as one kernel (AllReduce: Sum), its result copied to the members that read it;
 *   - otherwise, when the weights and graph inputs do not fit one chip of a multi-chip machine,
 *     from a greedy fill in node order: each chip takes nodes until the weights and inputs they
 *     read (and the graph outputs they write) reach 90 % of its SRAM, or, with the largest
 *     activation working set of a node on it (operands and results), fill it.  A MatMul or
 *     Embedding (or GroupedMatMul: its expert weights' last axis) whose weight does not fit the room left is split by columns: its columns are
 *     poured into the room left on this chip and the next ones; each chip computes its slice of
 *     the output columns from its shard of the weight (a pre-sharded constant,
 *     PlanConst.shard_*), and the slices are joined on the last of them, where the next nodes
 *     run;
 *   - else chip 0.
 * The program (LpuProg) then holds one LpuVal per value per chip that holds it: a parameter read
 * on several chips is stored on each (a replicated constant), any other value is copied from
 * the chip that produced it (a graph input: from the chip that reads it first) over the C2C link
 * between the two chips (one link per pair of chips, created on first use).  Ops are created in
 * dependence order, which is the order the list scheduler (schedule.c) takes them in. */
#include "targets/lpu/lpu.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FILL 0.9   /* share of a chip's SRAM the greedy fill gives to weights and inputs */

typedef struct Bx {
	const LpuArch *a;
	const Flat *f;
	LpuProg *pg;
	int *chip;               /* per flat node */
	int *split;              /* per flat node: chips it is split over (1: not split) */
	int64_t *cut;            /* per split node: column where the shard on chip chip[i] + j starts, */
	int *cut0;               /* from cut[cut0[i] + j] (j = 0 .. split[i]; the last is the width) */
	int ncut, capcut;
	int *tail;               /* per flat value: its last LpuVal */
	int *nread;              /* per flat value: the nodes that read it */
	unsigned char *fold;     /* per flat node: a tied Transpose placed with its MatMul (spread) */
	int *lhash, caplhash;    /* open-addressing table of link indices (-1: empty), power of 2 */
	RtError *e;
} Bx;

static int grow(void **p, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return 0;
	int n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, (size_t)n * size);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

static int is_param(const Flat *f, int v) { return f->vals[v].def < 0 && f->vals[v].v && f->vals[v].v->kind == V_PARAM; }

/* A new value of flat value `flat` on `chip`, produced by op def (-1: there from the start). */
static int new_val(Bx *x, int flat, int chip, int def)
{
	LpuProg *pg = x->pg;
	if (grow((void **)&pg->vals, &pg->capvals, pg->nvals + 1, sizeof *pg->vals) < 0)
		return rt_errorf(x->e, RT_ENOMEM, "out of memory building the LPU program");
	const FlatVal *fv = &x->f->vals[flat];
	int i = pg->nvals++;
	LpuVal *v = &pg->vals[i];
	memset(v, 0, sizeof *v);
	v->flat = flat, v->chip = chip, v->def = def, v->next = -1, v->shard_axis = -1;
	v->rank = fv->rank;
	memcpy(v->dims, fv->dims, sizeof v->dims);
	if (pg->first[flat] < 0)
		pg->first[flat] = i;
	else
		pg->vals[x->tail[flat]].next = i;
	x->tail[flat] = i;
	return i;
}

/* A new op with inputs in[0..nin) and room for nout outputs (filled by the caller). */
static int new_op(Bx *x, LpuWhat what, int node, int chip, const int *in, int nin, int nout)
{
	LpuProg *pg = x->pg;
	if (grow((void **)&pg->ops, &pg->capops, pg->nops + 1, sizeof *pg->ops) < 0 ||
	    grow((void **)&pg->args, &pg->capargs, pg->nargs + nin + nout, sizeof *pg->args) < 0)
		return rt_errorf(x->e, RT_ENOMEM, "out of memory building the LPU program");
	int i = pg->nops++;
	LpuOp *o = &pg->ops[i];
	memset(o, 0, sizeof *o);
	o->what = what, o->node = node, o->chip = chip, o->link = -1, o->unit = -1;
	o->arg = pg->nargs, o->nin = nin, o->nout = nout;
	memcpy(pg->args + pg->nargs, in, sizeof *in * (size_t)nin);
	pg->nargs += nin + nout;
	return i;
}

static uint64_t link_key(int lo, int hi) { return ((uint64_t)(uint32_t)lo << 32 | (uint32_t)hi) * 0x9e3779b97f4a7c15ull; }

/* The slot of pair (lo, hi) in the link table: its link, or the empty slot where it goes. */
static int link_slot(const Bx *x, int lo, int hi)
{
	const LpuLink *L = x->pg->links;
	int m = x->caplhash - 1, s = (int)(link_key(lo, hi) >> 32) & m;
	while (x->lhash[s] >= 0 && (L[x->lhash[s]].a != lo || L[x->lhash[s]].b != hi))
		s = (s + 1) & m;
	return s;
}

/* The link table doubled (kept at most half full); 0, or -1 when out of memory. */
static int link_rehash(Bx *x)
{
	int cap = x->caplhash ? x->caplhash * 2 : 64, *old = x->lhash, oldcap = x->caplhash;
	if (!(x->lhash = malloc(sizeof *x->lhash * (size_t)cap))) {
		x->lhash = old;
		return -1;
	}
	x->caplhash = cap;
	for (int i = 0; i < cap; i++)
		x->lhash[i] = -1;
	for (int i = 0; i < oldcap; i++)
		if (old[i] >= 0)
			x->lhash[link_slot(x, x->pg->links[old[i]].a, x->pg->links[old[i]].b)] = old[i];
	free(old);
	return 0;
}

/* The link between chips a and b (created on first use; links are numbered in that order and found
 * through a hash table, so that a pod of thousands of chips does not scan them all per copy). */
static int link_of(Bx *x, int a, int b)
{
	LpuProg *pg = x->pg;
	int lo = a < b ? a : b, hi = a < b ? b : a;
	if (2 * (pg->nlinks + 1) > x->caplhash && link_rehash(x) < 0)
		return rt_errorf(x->e, RT_ENOMEM, "out of memory building the LPU program");
	int s = link_slot(x, lo, hi);
	if (x->lhash[s] >= 0)
		return x->lhash[s];
	if (grow((void **)&pg->links, &pg->caplinks, pg->nlinks + 1, sizeof *pg->links) < 0)
		return rt_errorf(x->e, RT_ENOMEM, "out of memory building the LPU program");
	pg->links[pg->nlinks] = (LpuLink){ lo, hi };
	x->lhash[s] = pg->nlinks;
	return pg->nlinks++;
}

/* A copy of value src to `chip` (as flat value `flat`): the new value, or -1. */
static int copy_to(Bx *x, int src, int flat, int chip)
{
	if (!x->a->c2c)
		return rt_errorf(x->e, RT_EUSER, "aicc: error: value '%s' is read on chip %d but the machine describes "
				 "no chip-to-chip link", x->f->vals[flat].name, chip);
	int l = link_of(x, x->pg->vals[src].chip, chip);
	int op = l < 0 ? -1 : new_op(x, LW_COPY, -1, chip, &src, 1, 1);
	if (op < 0)
		return -1;
	x->pg->ops[op].link = l;
	int v = new_val(x, flat, chip, op);
	if (v < 0)
		return -1;
	LpuVal *s = &x->pg->vals[src], *d = &x->pg->vals[v];
	d->shard_axis = s->shard_axis, d->shard_off = s->shard_off, d->shard_full = s->shard_full;
	memcpy(d->dims, s->dims, sizeof d->dims);
	x->pg->args[x->pg->ops[op].arg + 1] = v;
	return v;
}

/* A weight-shard Split (the partition pass's --tp writes shard="weight" on it), reading a
 * parameter directly.  It runs nowhere: each shard is a slice of the parameter stored on the chip
 * that reads it. */
static int is_shard_split(const Flat *f, int i)
{
	const FlatNode *fn = &f->nodes[i];
	const char *s = rt_attr_str(&fn->n->attrs, "shard", NULL);
	return fn->n->op == OP_Split && s && strcmp(s, "weight") == 0 && fn->nin >= 1 && fn->in[0] >= 0 &&
	       is_param(f, fn->in[0]);
}

/* Output u of a weight-shard Split, on chip c: the parameter's slice, stored there. */
static int shard_const(Bx *x, int u, int c)
{
	const Flat *f = x->f;
	const FlatNode *fn = &f->nodes[f->vals[u].def];
	int w = fn->in[0], rank = f->vals[w].rank;
	int axis = (int)rt_attr_int(&fn->n->attrs, "axis", 0);
	axis = axis < 0 ? axis + rank : axis;
	int64_t off = 0;
	for (int k = 0; k < fn->nout && fn->out[k] != u; k++)
		off += f->vals[fn->out[k]].dims[axis];
	LpuProg *pg = x->pg;
	for (int v = pg->first[w]; v >= 0; v = pg->vals[v].next)
		if (pg->vals[v].chip == c && pg->vals[v].shard_axis == axis && pg->vals[v].shard_off == off &&
		    pg->vals[v].dims[axis] == f->vals[u].dims[axis])
			return v;
	int v = new_val(x, w, c, -1);
	if (v >= 0) {
		LpuVal *lv = &pg->vals[v];
		lv->shard_axis = axis, lv->shard_off = off, lv->shard_full = f->vals[w].dims[axis];
		lv->dims[axis] = f->vals[u].dims[axis];
	}
	return v;
}

/* Flat value u, whole, on chip c: found, stored there (a parameter or a slice of one), placed
 * there (a graph input read first here) or copied from the chip that holds it. */
static int need(Bx *x, int u, int c)
{
	LpuProg *pg = x->pg;
	if (x->f->vals[u].def >= 0 && is_shard_split(x->f, x->f->vals[u].def))
		return shard_const(x, u, c);
	for (int v = pg->first[u]; v >= 0; v = pg->vals[v].next)
		if (pg->vals[v].chip == c && pg->vals[v].shard_axis < 0)
			return v;
	if (is_param(x->f, u))
		return new_val(x, u, c, -1);
	if (pg->home[u] < 0) {
		if (x->f->vals[u].def >= 0)
			return rt_errorf(x->e, RT_EINTERNAL, "aicc: internal error: '%s' read before it is produced",
					 x->f->vals[u].name);
		return pg->home[u] = new_val(x, u, c, -1);
	}
	return copy_to(x, pg->home[u], u, c);
}

/* The outputs of op `op`: new values of node i's outputs on chip c. */
static int outputs(Bx *x, int op, int i, int c)
{
	const FlatNode *fn = &x->f->nodes[i];
	for (int k = 0; k < fn->nout; k++) {
		int v = new_val(x, fn->out[k], c, op);
		if (v < 0)
			return -1;
		x->pg->args[x->pg->ops[op].arg + x->pg->ops[op].nin + k] = v;
		if (x->pg->home[fn->out[k]] < 0)
			x->pg->home[fn->out[k]] = v;
	}
	return 0;
}

/* The Transpose node that makes MatMul i's weight when it is a tied weight: W^T of a 2-D parameter
 * (Transpose {perm=[1,0]}: a tied lm_head, Transpose(embed), as Qwen2, Gemma and GPT-2 write it)
 * that only node i reads.  A column split of i folds it in: each chip stores its rows of the
 * parameter and transposes them itself (build_split), so the whole W^T is never on one chip.
 * -1 when not.  (spread folds it only when the parameter does not fit a chip: tied_transpose.) */
static int tied_candidate(const Bx *x, int i)
{
	const Flat *f = x->f;
	const FlatNode *fn = &f->nodes[i];
	if (fn->n->op != OP_MatMul || fn->nin < 2 || fn->in[1] < 0 || !x->nread)
		return -1;
	int u = fn->in[1], t = f->vals[u].def, np = 0;
	if (t < 0 || f->vals[u].is_output || x->nread[u] != 1)
		return -1;
	const FlatNode *tn = &f->nodes[t];
	const int64_t *perm = rt_attr_ints(&tn->n->attrs, "perm", &np);
	if (tn->n->op != OP_Transpose || tn->nin != 1 || tn->nout != 1 || tn->in[0] < 0 || !is_param(f, tn->in[0]) ||
	    f->vals[tn->in[0]].rank != 2 || !(np == 0 || (np == 2 && perm[0] == 1 && perm[1] == 0)))
		return -1;
	return t;
}

/* tied_candidate when spread chose to fold it (its weight does not fit a chip whole), else -1. */
static int tied_transpose(const Bx *x, int i)
{
	int t = tied_candidate(x, i);
	return t >= 0 && x->fold && x->fold[t] ? t : -1;
}

/* The operand a column split shards (the weight): 1 for MatMul (a parameter, or a tied
 * Transpose of one: tied_transpose), 0 for Embedding, 2 for GroupedMatMul (the stacked expert
 * weights [E, K, N], cut along N: every chip holds every expert's slice of the columns, so any
 * routing runs on all of them); -1 when node i cannot be split. */
static int split_operand(const Bx *x, int i)
{
	const Flat *f = x->f;
	const FlatNode *fn = &f->nodes[i];
	int k = fn->n->op == OP_MatMul ? 1 : fn->n->op == OP_Embedding ? 0 : fn->n->op == OP_GroupedMatMul ? 2 : -1;
	if (k < 0 || fn->nin < 2 || fn->nout != 1 || fn->in[k] < 0 ||
	    !(is_param(f, fn->in[k]) || (k == 1 && tied_transpose(x, i) >= 0)) ||
	    f->vals[fn->in[k]].rank != (k == 2 ? 3 : 2) || f->vals[fn->out[0]].rank < 1)
		return -1;
	return k;
}

/* The weight axis a column split cuts: the last. */
static int split_axis(const Bx *x, int i) { return x->f->vals[x->f->nodes[i].in[split_operand(x, i)]].rank - 1; }

/* Node i split by columns over chips c .. c + g - 1 at the columns x->cut gives, joined on the
 * last of them (where the nodes after it run). */
static int build_split(Bx *x, int i, int c, int g)
{
	const FlatNode *fn = &x->f->nodes[i];
	int ws = split_operand(x, i), y = fn->out[0], wax = split_axis(x, i), tt = tied_transpose(x, i);
	int64_t n = x->f->vals[fn->in[ws]].dims[wax];
	const int64_t *cut = x->cut + x->cut0[i];
	int yaxis = x->f->vals[y].rank - 1, home = c + g - 1;
	int ins[TGT_MAX_OPERANDS], parts[TGT_MAX_OPERANDS * 4];
	if (g > (int)(sizeof parts / sizeof parts[0]) || fn->nin > TGT_MAX_OPERANDS)
		return rt_errorf(x->e, RT_EUSER, "aicc: error: '%s' would be split over %d chips; at most %d are supported",
				 x->f->vals[y].name, g, (int)(sizeof parts / sizeof parts[0]));
	for (int j = 0; j < g; j++) {
		int cj = c + j;
		int64_t off = cut[j], cols = cut[j + 1] - cut[j];
		for (int k = 0; k < fn->nin; k++) {
			if (k == ws && tt >= 0) {   /* rows off.. of the tied parameter, transposed here */
				int e = x->f->nodes[tt].in[0], ev = new_val(x, e, cj, -1);
				int top = ev < 0 ? -1 : new_op(x, LW_SHARD, tt, cj, &ev, 1, 1);
				ins[k] = top < 0 ? -1 : new_val(x, fn->in[k], cj, top);
				if (ins[k] >= 0) {
					LpuVal *r = &x->pg->vals[ev], *w = &x->pg->vals[ins[k]];
					r->shard_axis = 0, r->shard_off = off, r->shard_full = n, r->dims[0] = cols;
					w->shard_axis = wax, w->shard_off = off, w->shard_full = n, w->dims[wax] = cols;
					x->pg->args[x->pg->ops[top].arg + 1] = ins[k];
				}
			} else if (k == ws) {
				ins[k] = new_val(x, fn->in[k], cj, -1);
				if (ins[k] >= 0) {
					LpuVal *w = &x->pg->vals[ins[k]];
					w->shard_axis = wax, w->shard_off = off, w->shard_full = n, w->dims[wax] = cols;
				}
			} else
				ins[k] = fn->in[k] >= 0 ? need(x, fn->in[k], cj) : -1;
			if (ins[k] < 0 && fn->in[k] >= 0)
				return -1;
		}
		int op = new_op(x, LW_SHARD, i, cj, ins, fn->nin, 1);
		int v = op < 0 ? -1 : new_val(x, y, cj, op);
		if (v < 0)
			return -1;
		LpuVal *yv = &x->pg->vals[v];
		yv->shard_axis = yaxis, yv->shard_off = off, yv->shard_full = n, yv->dims[yaxis] = cols;
		x->pg->args[x->pg->ops[op].arg + fn->nin] = v;
		parts[j] = v;
	}
	for (int j = 0; j < g; j++)   /* the slices to the joining chip, after every shard's operands */
		if (c + j != home && (parts[j] = copy_to(x, parts[j], y, home)) < 0)
			return -1;
	int op = new_op(x, LW_CONCAT, i, home, parts, g, 1);
	int v = op < 0 ? -1 : new_val(x, y, home, op);
	if (v < 0)
		return -1;
	x->pg->args[x->pg->ops[op].arg + g] = v;
	x->pg->home[y] = v;
	return 0;
}

/* Bytes a value takes in the plan: weight-like values (parameters, graph inputs such as the KV
 * cache, layout ops of them) at the matmul format, other floats (activations) at f32, as
 * lower.c stores them. */
static int64_t plan_bytes(const Bx *x, int v)
{
	const FlatVal *fv = &x->f->vals[v];
	int64_t n = 1;
	for (int i = 0; i < fv->rank; i++)
		n *= fv->dims[i];
	if (!rt_dtype_isfloat(fv->dt))
		return rt_dtype_bytes(fv->dt, n);
	return n * (lpu_at_mma(x->pg, x->f, v) ? x->a->elem_bytes : 4);
}

/* 1 when value v is the transpose of weights that one node reads (a tied lm_head's W^T): it takes
 * SRAM like the weight it moves. */
static int tied_shape(const Bx *x, int v)
{
	const FlatVal *fv = &x->f->vals[v];
	if (fv->def < 0 || fv->is_output)
		return 0;
	const FlatNode *fn = &x->f->nodes[fv->def];
	return fn->n->op == OP_Transpose && fn->nout == 1 && x->nread && x->nread[v] == 1 && lpu_weight_like(x->f, v);
}

/* 1 when v is a tied transpose spread folded into its MatMul: counted with its weight there. */
static int tied_value(const Bx *x, int v)
{
	return x->f->vals[v].def >= 0 && x->fold && x->fold[x->f->vals[v].def];
}

/* 1 when value v takes SRAM for the whole step: a weight or graph input, a graph output, or a
 * tied transpose (tied_shape). */
static int stored(const Bx *x, int v)
{
	const FlatVal *fv = &x->f->vals[v];
	return fv->def < 0 || fv->is_output || tied_shape(x, v);
}

/* Bytes node i adds to a chip whose resident values are marked on[v] == chip + 1: the weights
 * and graph inputs it reads that are not there yet, and its results that are graph outputs
 * (they stay to the end, like the KV cache a decode step writes). */
static int64_t node_bytes(const Bx *x, int i, const int *on, int chip)
{
	const FlatNode *fn = &x->f->nodes[i];
	int64_t b = 0;
	for (int k = 0; k < fn->nin; k++) {
		int u = fn->in[k];
		if (u >= 0 && x->f->vals[u].def < 0 && on[u] != chip + 1)
			b += plan_bytes(x, u);
	}
	for (int k = 0; k < fn->nout; k++)
		if (x->f->vals[fn->out[k]].is_output)
			b += plan_bytes(x, fn->out[k]);
	return b;
}

/* The activation working set of node i: the produced values it reads and the values it writes
 * that are not graph outputs (those count with node_bytes) or tied transposes (counted as
 * weights, spread), at plan width. */
static int64_t act_bytes(const Bx *x, int i)
{
	const FlatNode *fn = &x->f->nodes[i];
	int64_t b = 0;
	for (int k = 0; k < fn->nin; k++)
		if (fn->in[k] >= 0 && x->f->vals[fn->in[k]].def >= 0 && !tied_value(x, fn->in[k]))
			b += plan_bytes(x, fn->in[k]);
	for (int k = 0; k < fn->nout; k++)
		if (!x->f->vals[fn->out[k]].is_output && !tied_value(x, fn->out[k]))
			b += plan_bytes(x, fn->out[k]);
	return b;
}

/* The greedy fill (see the file comment).  Sets x->chip, x->split, pg->nchips. */
static int spread(Bx *x)
{
	const Flat *f = x->f;
	int64_t budget = (int64_t)(x->a->sram * FILL), used = 0, total = 0;
	int *on = calloc((size_t)f->nvals + 1, sizeof *on);
	if (!on)
		return rt_errorf(x->e, RT_ENOMEM, "out of memory placing the model on chips");
	int chip = 0, top = 0, rc = 0;
	int64_t peak = 0;   /* the largest activation working set of a node on this chip */
	unsigned char *tied = calloc((size_t)f->nnodes + 1, 1);   /* tied_candidate Transposes */
	if (!tied) {
		free(on);
		return rt_errorf(x->e, RT_ENOMEM, "out of memory placing the model on chips");
	}
	for (int i = 0; i < f->nnodes; i++)
		if (tied_candidate(x, i) >= 0)
			tied[tied_candidate(x, i)] = 1;
	for (int v = 0; v < f->nvals; v++)
		if (stored(x, v))
			total += plan_bytes(x, v);
	for (int i = 0; i < f->nnodes && rc == 0; i++) {
		const FlatNode *fn = &f->nodes[i];
		if (tied[i] && 2 * plan_bytes(x, fn->out[0]) > budget) {
			/* the weight and its transpose do not fit one chip's budget together: placed
			 * (split) with its MatMul */
			x->fold[i] = 1;
			continue;
		}
		int ws = split_operand(x, i), tt = tied_transpose(x, i), e = tt >= 0 ? f->nodes[tt].in[0] : -1;
		/* a tied weight: the parameter's rows and their transpose, both stored */
		int64_t wb = ws >= 0 ? plan_bytes(x, fn->in[ws]) * (tt >= 0 ? 2 : 1) : 0;
		if (ws >= 0 && used + wb > budget && wb > budget / 2) {
			/* pour the weight's columns into the room left on this chip and the next ones */
			int64_t n = f->vals[fn->in[ws]].dims[split_axis(x, i)], col = 0;
			double per = (double)wb / (double)n;   /* bytes per column */
			if (grow((void **)&x->cut, &x->capcut, x->ncut + (int)(wb / (budget / 2)) + 4, sizeof *x->cut) < 0) {
				rc = rt_errorf(x->e, RT_ENOMEM, "out of memory placing the model on chips");
				break;
			}
			if ((double)(budget - used) < 0.05 * (double)wb)   /* too little room for a shard */
				chip++, used = 0;
			int c0 = chip, g = 0;
			x->cut0[i] = x->ncut;
			/* at plan width each shard also holds its slice of the result and the other
			 * operands (copied in); the chip that joins the slices (where the rest fits) also the
			 * slices copied in and the result */
			int64_t yb = plan_bytes(x, fn->out[0]), ain = 0;
			for (int k = 0; k < fn->nin; k++)
				if (k != ws && fn->in[k] >= 0 && f->vals[fn->in[k]].def >= 0)
					ain += plan_bytes(x, fn->in[k]);
			double pcol = per + (double)yb / (double)n;
			int64_t words = (16 + g) * LPU_WORD;   /* each buffer starts on a word (lower.c) */
			while (col < n) {
				int64_t take = (int64_t)fmin((double)(budget - used) / per,
							    (double)(x->a->sram - used - ain - words) / pcol);
				if (take >= n - col) {
					int64_t join = yb * (g > 0 ? 2 : 1);
					int64_t tj = (int64_t)((double)(x->a->sram - used - ain - join - words) / pcol);
					take = tj < n - col ? tj : n - col;
					if (take < 1 && used > 0) {   /* join on the next chip */
						chip++, used = 0;
						if (g == 0)
							c0 = chip;
						continue;
					}
				}
				if (take < 1) {
					rc = rt_errorf(x->e, RT_EUSER, "aicc: error: one column of '%s' does not fit a chip",
						       f->vals[fn->in[ws]].name);
					break;
				}
				x->cut[x->ncut++] = col;
				col += take, g++;
				used += (int64_t)((double)take * per);
				if (col < n)
					chip++, used = 0;
			}
			if (rc < 0)
				break;
			x->cut[x->ncut++] = n;
			x->chip[i] = c0, x->split[i] = g;
			if (tt >= 0)   /* folded into the shards (build_split), or run whole beside i */
				x->chip[tt] = c0, x->split[tt] = g > 1 ? 0 : 1;
			if (chip + 1 > top)
				top = chip + 1;
			peak = 0;
			if (g > 1)
				continue;
			x->chip[i] = chip, x->split[i] = 1;   /* it fit whole on one chip */
			for (int k = 0; k < fn->nin; k++)
				if (fn->in[k] >= 0 && f->vals[fn->in[k]].def < 0)
					on[fn->in[k]] = chip + 1;
			if (tt >= 0)
				x->chip[tt] = chip, on[e] = chip + 1;
			continue;
		}
		/* a tied weight's Transpose runs whole beside its MatMul: the parameter (unless this chip
		 * has it) and its transpose */
#define TIED_BYTES(c) (tt >= 0 ? plan_bytes(x, fn->in[1]) * (on[e] == (c) + 1 ? 1 : 2) : 0)
		int64_t w = node_bytes(x, i, on, chip) + TIED_BYTES(chip), act = act_bytes(x, i);
		if (w > budget || w + act > x->a->sram) {
			rc = rt_errorf(x->e, RT_EUSER, "aicc: error: node '%s' needs %s of weights and inputs "
				       "(at most %.0f %% of a chip) and %s of activations, more than one %s chip's "
				       "%s of SRAM, and this target splits only a MatMul (its weight, or a Transpose of one), "
				       "Embedding or GroupedMatMul weight across chips", f->vals[fn->out[0]].name, rt_si_str((double)w, "B", (char[32]){ 0 }, 32), FILL * 100,
				       rt_si_str((double)act, "B", (char[32]){ 0 }, 32), x->a->d->name,
				       rt_si_str((double)x->a->sram, "B", (char[32]){ 0 }, 32));
			break;
		}
		if (used + w > budget || used + w + (act > peak ? act : peak) > x->a->sram)
			chip++, used = 0, peak = 0, w = node_bytes(x, i, on, chip) + TIED_BYTES(chip);
#undef TIED_BYTES
		x->chip[i] = chip;
		if (tt >= 0)
			x->chip[tt] = chip, on[e] = chip + 1;
		used += w;
		peak = act > peak ? act : peak;
		if (chip + 1 > top)
			top = chip + 1;
		for (int k = 0; k < fn->nin; k++)
			if (fn->in[k] >= 0 && f->vals[fn->in[k]].def < 0)
				on[fn->in[k]] = chip + 1;
	}
	free(on);
	free(tied);
	x->pg->nchips = top > 0 ? top : 1;
	if (rc == 0 && x->pg->nchips > x->a->chips)
		rc = rt_errorf(x->e, RT_EUSER, "aicc: error: the model needs %s of SRAM for its weights and "
			       "inputs (KV cache), which fill %d chips of %s (%.0f %% each, the rest for "
			       "activations), but machine '%s' has %d chips (%s); the LPU has no HBM%s",
			       rt_si_str((double)total, "B", (char[32]){ 0 }, 32), x->pg->nchips,
			       rt_si_str((double)x->a->sram, "B", (char[32]){ 0 }, 32), FILL * 100, x->a->machine, x->a->chips,
			       rt_si_str((double)x->a->sram * x->a->chips, "B", (char[32]){ 0 }, 32),
			       lpu_more_chips(x->a, x->pg->nchips, (char[512]){ 0 }, 512));
	return rc;
}

/* The chip an @device annotation names: "<class id><k>", k below the machine's count. */
static int annotated(Bx *x, int i, int *chip)
{
	const char *d = x->f->nodes[i].device, *id = x->a->d->id;   /* its own, or its call's */
	size_t l = strlen(id);
	char *end;
	if (!d)
		return 0;
	long k = strncmp(d, id, l) == 0 && d[l] >= '0' && d[l] <= '9' ? strtol(d + l, &end, 10) : -1;
	if (k < 0 || *end || k >= x->a->chips)
		return rt_errorf(x->e, RT_EUSER, "aicc: error: node '%s' is placed on @device(%s), which is not one of the "
				 "%d chips %s0..%s%d of machine '%s'", x->f->vals[x->f->nodes[i].out[0]].name, d,
				 x->a->chips, id, id, x->a->chips - 1, x->a->machine);
	*chip = (int)k;
	return 1;
}

/* Chips from the annotations: unannotated nodes run where their first produced operand is, else
 * with the previous node.  Returns 1 when the graph has annotations, 0 when not, -1 on error. */
static int place_annotated(Bx *x)
{
	const Flat *f = x->f;
	int any = 0, prev = 0, top = 0;
	for (int i = 0; i < f->nnodes; i++) {
		int c = -1, r = annotated(x, i, &c);
		if (r < 0)
			return -1;
		any |= r;
		const FlatNode *fn = &f->nodes[i];
		for (int k = 0; k < fn->nin && c < 0; k++)
			if (fn->in[k] >= 0 && f->vals[fn->in[k]].def >= 0)
				c = x->chip[f->vals[fn->in[k]].def];
		x->chip[i] = prev = c >= 0 ? c : prev;
		if (prev + 1 > top)
			top = prev + 1;
	}
	x->pg->nchips = top;
	return any;
}

/* The ops of node i on chip c. */
static int build_node(Bx *x, int i)
{
	const FlatNode *fn = &x->f->nodes[i];
	int c = x->chip[i];
	if (is_shard_split(x->f, i) || x->split[i] == 0)   /* runs nowhere, or in its consumer's shards */
		return 0;
	if (x->split[i] > 1)
		return build_split(x, i, c, x->split[i]);
	if (fn->n->op == OP_Transfer && fn->nin == 1 && fn->in[0] >= 0) {
		int u = fn->in[0];
		int src = x->pg->home[u] >= 0 ? x->pg->home[u] : need(x, u, c);
		if (src < 0)
			return -1;
		if (x->pg->vals[src].chip != c) {
			int v = copy_to(x, src, fn->out[0], c);
			if (v < 0)
				return -1;
			x->pg->home[fn->out[0]] = v;
			return 0;
		}
	}
	int ins[TGT_MAX_OPERANDS];
	if (fn->nin > TGT_MAX_OPERANDS)
		return rt_errorf(x->e, RT_EUSER, "aicc: error: node '%s' has more than %d operands",
				 x->f->vals[fn->out[0]].name, TGT_MAX_OPERANDS);
	for (int k = 0; k < fn->nin; k++)
		if ((ins[k] = fn->in[k] >= 0 ? need(x, fn->in[k], c) : -1) < 0 && fn->in[k] >= 0)
			return -1;
	int op = new_op(x, LW_KERNEL, i, c, ins, fn->nin, fn->nout);
	return op < 0 ? -1 : outputs(x, op, i, c);
}

int lpu_build(const LpuArch *a, const Flat *f, LpuProg *pg, RtError *e)
{
	memset(pg, 0, sizeof *pg);
	Bx x = { .a = a, .f = f, .pg = pg, .e = e };
	size_t nv = (size_t)f->nvals + 1, nn = (size_t)f->nnodes + 1;
	x.chip = calloc(nn, sizeof *x.chip);
	x.split = calloc(nn, sizeof *x.split);
	x.cut0 = calloc(nn, sizeof *x.cut0);
	x.tail = calloc(nv, sizeof *x.tail);
	x.nread = calloc(nv, sizeof *x.nread);
	x.fold = calloc(nn, 1);
	for (int i = 0; x.nread && i < f->nnodes; i++)
		for (int k = 0; k < f->nodes[i].nin; k++)
			if (f->nodes[i].in[k] >= 0)
				x.nread[f->nodes[i].in[k]]++;
	pg->first = malloc(nv * sizeof *pg->first);
	pg->home = malloc(nv * sizeof *pg->home);
	pg->wide = lpu_wide_values(a, f);
	int rc = x.chip && x.split && x.cut0 && x.tail && x.nread && x.fold && pg->first && pg->home && pg->wide ? 0 :
		 rt_errorf(e, RT_ENOMEM, "out of memory building the LPU program");
	for (int v = 0; rc == 0 && v < f->nvals; v++)
		pg->first[v] = pg->home[v] = -1;
	for (int i = 0; rc == 0 && i < f->nnodes; i++)
		x.split[i] = 1;
	int placed = rc == 0 ? place_annotated(&x) : -1;
	if (placed < 0)
		rc = -1;
	else if (placed == 0) {
		int64_t total = 0;
		for (int v = 0; v < f->nvals; v++)
			if (stored(&x, v))
				total += plan_bytes(&x, v);
		memset(x.chip, 0, nn * sizeof *x.chip);
		pg->nchips = 1;
		if (a->chips > 1 && total > (int64_t)(a->sram * FILL)) {
			pg->spread = 1;
			rc = spread(&x);
		}
	}
	for (int i = 0; rc == 0 && i < f->nnodes; i++)
		rc = build_node(&x, i);
	for (int i = 0; rc == 0 && i < f->ninputs; i++)   /* inputs nothing reads */
		if (pg->home[f->inputs[i]] < 0)
			rc = need(&x, f->inputs[i], 0) < 0 ? -1 : 0;
	for (int i = 0; rc == 0 && i < f->noutputs; i++)   /* outputs no node computes (a constant) */
		if (pg->home[f->outputs[i]] < 0) {
			int v = need(&x, f->outputs[i], 0);
			rc = v < 0 ? -1 : 0;
			if (v >= 0 && pg->home[f->outputs[i]] < 0)
				pg->home[f->outputs[i]] = v;
		}
	free(x.chip), free(x.split), free(x.cut0), free(x.cut), free(x.tail), free(x.lhash), free(x.nread), free(x.fold);
	return rc;
}

void lpu_prog_free(LpuProg *pg)
{
	free(pg->vals), free(pg->ops), free(pg->args), free(pg->links);
	free(pg->first), free(pg->home), free(pg->wide), free(pg->order), free(pg->busy);
	memset(pg, 0, sizeof *pg);
}
