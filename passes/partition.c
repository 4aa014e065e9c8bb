/* passes/partition.c: assigns every node of the entry graph, and of the layer graphs it calls,
 * to a device of the machine.
 *
 * The pass reads the machine (PassCtx.machine): its accelerators (the first non-host device kind
 * and its count), each one's memory capacity (HBM, else DRAM, SRAM or VMEM), peak rates and
 * memory bandwidth.  With one device it only checks that weights + activations + KV cache fit,
 * and reports required against available bytes when they do not.  With several it
 *   1. splits Megatron-style regions over the --tp N devices of a pipeline stage: MatMul pairs
 *      (the first weight by columns, elementwise ops in between per shard, the second weight by
 *      rows) and attention blocks (Q/K/V weights by whole heads, RotaryEmbedding and Attention
 *      per shard with their head counts divided, the output projection by rows), each ending
 *      in an AllReduce of the partial products (docs/language.md "Devices and collectives");
 *   2. splits mixture-of-experts blocks (MoEDispatch -> GroupedMatMul ... -> MoECombine) over
 *      the --ep N devices of a stage: the stacked expert weights by experts, every device
 *      dispatching the (replicated) tokens and computing only its experts' rows, and an
 *      AllReduce of the weighted partial sums: exact, and k times less traffic than an exact
 *      static AllToAll, whose equal chunks would need room for every routed row (MoE volumes:
 *      shared/reference/backends.md section 6; docs/passes.md "Why not AllToAll");
 *   3. cuts the graph into --pp N pipeline stages (by default the fewest whose weights fit),
 *      balanced by predicted time: each node priced by the target (Target.node_time: the
 *      roofline of targets/lower.c for most targets);
 *      a stage index never decreases along an edge, so partitions form no cycle.  `@device`
 *      annotations take precedence: a pinned node stays on its device and the nodes before it
 *      are held at or below its stage;
 *   4. annotates every node `@device(gpuN)`, records the reason as a "placement" remark (operator
 *      support, pin, tensor- or expert-parallel shard, pipeline stage by time) and inserts a
 *      Transfer wherever a value crosses devices (one per value and destination);
 *   5. with a stage wider than one device (--tp or --ep), gives every layer graph called from
 *      stage s a copy of its own, "<graph>.stage<s>", split by 1. and 2. and placed on the
 *      stage's devices (calls keep their instance numbers, so every layer keeps its weights);
 *   6. checks memory per device and reports each device that does not fit, with numbers.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "ir/suggest.h"
#include "runtime/codec.h"
#include "targets/target.h"

/* MAXREG: nodes of one region; MAXREGIONS: regions per graph; SHARDS: the base of the
 * (region, shard) code kept in Node.aux while the pass runs (--tp is at most 4096). */
enum { MAXREG = 64, MAXREGIONS = 4096, SHARDS = 8192 };

/* A layer graph instantiated for one pipeline stage. */
typedef struct Inst {
	Graph *orig, *clone;
	int stage;
} Inst;

typedef struct Part {
	Module *m;
	Graph *g;
	PassCtx *c;
	const Device *dev;
	int ndev, tp, pp, ep;    /* ndev: the devices the plan may use (the survivors) */
	int *phys;               /* per device index 0..ndev-1: its instance on the machine ("gpu<phys>");
				    NULL: the identity (no --devices / --exclude-devices) */
	int limit;               /* the machine's instances considered: --devices N, else its count */
	int width;               /* devices per pipeline stage: max(tp, ep) */
	int base;                /* a layer graph: the first device of its stage; -1: the entry graph */
	int nreg;                /* regions of g so far */
	int nvocab;              /* of them, vocab-parallel output MatMuls (vocab_parallel) */
	int *attn_warned;        /* shared by the layer copies: the unsplit-attention warning was printed */
	char regkind[MAXREGIONS];   /* per region id: 'T' tensor parallel, 'E' expert parallel */
	int regn[MAXREGIONS];       /* per region id: its shards */
	int64_t regel[MAXREGIONS];  /* per expert-parallel region id: experts per device */
	Inst *insts;             /* layer graphs instantiated per stage */
	int ninsts, capinsts;
	double cap;              /* bytes per device */
	const char *capname;     /* "HBM" */
	int *stage;              /* per node id */
	int *devof;              /* per node id: device index, -1 for none (weight sharding) */
	int *region;             /* per node id: tensor-parallel region + 1, shard in shard[] */
	int *shard;
	int nids;
	Value **repin;           /* a layer graph's replica inputs (replicate): repin[i] lives on device */
	int *repdev, nrepin;     /* index repdev[i], not on the call's device */
	struct Reps *reps;       /* the entry graph's values with copies on other devices (replicate) */
	Value **copyw;           /* weight_shard: the Split of copy copyc[i] > 0 of weight copyw[i] */
	int *copyc;              /* (copy 0's is the weight's aux); arena-allocated */
	Node **copys;
	int ncopy, capcopy;
} Part;

/* Entry-graph values and their copies on other devices: a call's carried outputs (replicate). */
typedef struct Reps {
	Value **from, **to;
	int *dev, n, cap;        /* to[i]: from[i] on device index dev[i] */
} Reps;

static const char SHARD_SPLIT[] = "weight shard";   /* also a KV-cache input's shards */
static const char OUTPUT_CONCAT[] = "output shards"; /* a KV-cache output assembled from shards */

static const char *dev_name(Part *p, int i)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s%d", p->dev->id, p->phys ? p->phys[i] : i);
	return arena_strdup(p->m->arena, buf);
}

/* The device index of machine instance k, or -1 when k is not a survivor. */
static int index_of(const Part *p, long k)
{
	if (!p->phys)
		return k >= 0 && k < p->ndev ? (int)k : -1;
	for (int i = 0; i < p->ndev; i++)
		if (p->phys[i] == k)
			return i;
	return -1;
}

static int64_t value_bytes(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 || v->type.dt == DT_INVALID ? 0 : rt_dtype_bytes(v->type.dt, n);
}

/* Predicted seconds of one node on the device, as the target prices it (Target.node_time); a
 * shard Split of a weight or input, or the Concat of a sharded output, is no instruction: 0. */
static double node_time(Part *p, const Node *n)
{
	if (n->aux == SHARD_SPLIT || n->aux == OUTPUT_CONCAT)
		return 0;
	TgtWork w = { .node = n, .fmt = DT_INVALID };
	return pass_work_time(p->c, p->dev, &w);
}

static int64_t weight_bytes(const Part *p, const Node *n, int i)
{
	return pass_weight_bytes(p->c, n, i);
}

/* Stored weight bytes graph g reads, each weight once, times mult; calls recursively. */
static int64_t graph_weights(const Part *p, const Graph *g, int64_t mult, int depth)
{
	return pass_graph_weight_bytes(p->c, g, mult, depth);
}

/* Weight bytes a node reads (a Call: its callee's, times repeat). */
static int64_t node_weights(const Part *p, const Node *n)
{
	if (n->op == OP_Call && n->callee)
		return graph_weights(p, n->callee, n->repeat > 0 ? n->repeat : 1, 0);
	int64_t b = 0;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && n->in[i]->kind == V_PARAM && !(n->in[i]->init && n->in[i]->init->inline_lit))
			b += weight_bytes(p, n, i);
	return b;
}

/* ---- tensor parallelism: Megatron MatMul pairs and attention heads ---- */

typedef struct Region {
	Node *nodes[MAXREG];     /* column part, in graph order, then the row MatMul last */
	int np[MAXREG];          /* per node: the parts its split dimension is cut into, tp, or a
				    KV head's count kvh < tp (its nodes replicated on tp / kvh shards) */
	int n;
	int64_t cols;            /* N, the split dimension */
} Region;

static int is_weight(const Value *v, int rank)
{
	return v && v->kind == V_PARAM && v->type.rank == rank && !(v->init && v->init->inline_lit);
}

/* A weight read through load-time transforms (the quantization pass's weight-only
 * Transpose / Quantize / Cast chain in front of a MatMul: int8, w4a16): the 2-D parameter at its
 * root when v is one or such a chain of single-user nodes over it, else NULL. */
static Value *chain_param(Value *v, int depth)
{
	if (!v || depth > 8)
		return NULL;
	if (is_weight(v, 2))
		return v;
	if (v->kind != V_NODE || v->nuses != 1 || v->type.rank != 2 || v->def->annot.device || v->def->aux)
		return NULL;
	Node *n = v->def;
	if (!(n->op == OP_Transpose || n->op == OP_Quantize || n->op == OP_Cast) || n->nout != 1)
		return NULL;
	return chain_param(n->in[0], depth + 1);
}

static int weight_2d(Value *v) { return chain_param(v, 0) != NULL; }

/* Whether n is an expert GEMM, GroupedMatMul(rows [R, K], offsets, stacked weight [E, K, N]) with
 * constant K and N: tensor parallelism cuts every expert's weight like a MatMul's (N by columns
 * for gate/up, K by rows for down), each device computing its slice of every expert. */
static int is_expert_matmul(const Node *n)
{
	const Value *w = n->op == OP_GroupedMatMul && n->nin == 3 ? n->in[2] : NULL;
	return is_weight(w, 3) && dim_isconst(w->type.dims[1]) && dim_isconst(w->type.dims[2]) && n->in[0]->type.rank == 2;
}

/* A per-group Quantize's `group` attribute for one of k shards of its input cut along its last
 * axis: the group shrinks with the axis when it spans all of it (each shard scales its own
 * slice: TP int8 kernels quantize their local activations), else it is kept. */
static void shard_group(Node *c, const Value *in, int k)
{
	int64_t g = rt_attr_int(&c->attrs, "group", -2), last = in->type.rank > 0 && dim_isconst(in->type.dims[in->type.rank - 1])
					      ? in->type.dims[in->type.rank - 1].k : -1;
	if (c->op == OP_Quantize && g > 0 && g == last && g % k == 0)
		ir_set_attr_int(c, "group", g / k);
}

static int in_region(const Region *r, const Node *n)
{
	for (int i = 0; i < r->n; i++)
		if (r->nodes[i] == n)
			return 1;
	return 0;
}

/* The parts node n of region r is cut into (Region.np), or 0 when n is not in r. */
static int region_parts(const Region *r, const Node *n)
{
	for (int i = 0; i < r->n; i++)
		if (r->nodes[i] == n)
			return r->np[i];
	return 0;
}

/* The parts an attention's KV heads are cut into over tp devices: tp when tp divides them; the
 * KV heads themselves when they divide tp (GQA with fewer KV heads than devices: each KV head,
 * its K/V projection columns and its cache, replicated on the tp / kvh devices whose query
 * heads read it, as vLLM's QKVParallelLinear and TensorRT-LLM do); 0: neither. */
static int kv_parts(const Part *p, int64_t kvh)
{
	if (kvh < 1)
		return 0;
	return kvh % p->tp == 0 ? p->tp : p->tp % kvh == 0 ? (int)kvh : 0;
}

/* The axis attribute of n normalised against rank r (default 0). */
static int64_t norm_axis(const Node *n, int r)
{
	int64_t ax = rt_attr_int(&n->attrs, "axis", 0);
	return ax < 0 ? ax + r : ax;
}

/* The constant last dimension of v, or -1. */
static int64_t last_dim(const Value *v)
{
	if (!v || v->type.rank < 1 || !dim_isconst(v->type.dims[v->type.rank - 1]))
		return -1;
	return v->type.dims[v->type.rank - 1].k;
}

/* Whether KV-cache operand or result v ([B, kv_heads, T, d]) can be cut by KV heads: rank 4 with
 * kvh heads; a past input is a graph input read only here, a present result only a graph output. */
static int kv_splits(const Value *v, int64_t kvh, int past)
{
	if (v->type.rank != 4 || !dim_isconst(v->type.dims[1]) || v->type.dims[1].k != kvh)
		return 0;
	return past ? v->kind == V_INPUT && v->nuses == 1 : pass_is_output(v) && v->nuses == 1;
}

/* The Cast that is the only reader of present result v when its result is a graph output read
 * nowhere else (the prefill phase's FP8 KV cache, --kv-format fp8: the cache is stored cast), or
 * NULL. */
static Node *kv_cast(const Part *p, const Value *v)
{
	if (v->nuses != 1 || pass_is_output(v))
		return NULL;
	for (Node *n = p->g->first; n; n = n->next)
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] == v)
				return n->op == OP_Cast && n->nout == 1 && pass_is_output(n->out[0]) && n->out[0]->nuses == 1 ?
				       n : NULL;
	return NULL;
}

/* Whether Attention n can run per group of heads: 3-D Q, K, V ([B, S, heads * head]), no mask,
 * query heads divisible by tp, KV heads cut into kv_parts; a KV cache (past inputs, present
 * outputs: docs/passes.md "KV cache") is cut by KV heads too, so each shard keeps its heads'
 * cache (whole GQA groups, or its one KV head's, replicated). */
static int attention_splits(Part *p, const Node *n)
{
	int64_t qh = rt_attr_int(&n->attrs, "q_num_heads", 0), kvh = rt_attr_int(&n->attrs, "kv_num_heads", 0);
	if (qh < 1 || kvh < 1 || qh % p->tp || !kv_parts(p, kvh) || n->nin < 3 || n->nin > 6)
		return 0;
	if (n->nin > 3 && n->in[3])
		return 0;
	if (n->nin > 4 && (!n->in[4] || n->nin < 6 || !n->in[5] || !kv_splits(n->in[4], kvh, 1) ||
			   !kv_splits(n->in[5], kvh, 1)))
		return 0;
	for (int i = 0; i < 3; i++)
		if (!n->in[i] || n->in[i]->type.rank != 3)
			return 0;
	for (int i = 1; i < n->nout; i++) {
		const Node *cast = i <= 2 ? kv_cast(p, n->out[i]) : NULL;
		if (n->out[i]->nuses && (i > 2 || !(kv_splits(n->out[i], kvh, 0) || (cast && kv_splits(cast->out[0], kvh, 0)))))
			return 0;
	}
	return 1;
}

/* The dimension a value is split along: the heads of a [B, S, heads, d] value, else the last
 * (columns, head-major); -1 when it is not a constant. */
static int64_t split_dim(const Value *v)
{
	if (v && v->type.rank == 4)
		return dim_isconst(v->type.dims[2]) ? v->type.dims[2].k : -1;
	return last_dim(v);
}

/* Whether the shape operand s of a Reshape (lead 0, 0) or Expand (lead 1, 1) keeps the batch and
 * sequence axes and has a third element divisible by np (the heads, or heads * d). */
static int head_shape(Value *s, int lead, int rank, int np)
{
	const RtTensor *t = s ? ir_const_data(s) : NULL;
	return t && t->n == rank && rt_geti(t, 0) == lead && rt_geti(t, 1) == lead && rt_geti(t, 2) > 0 &&
	       rt_geti(t, 2) % np == 0;
}

/* Whether every input of n below `from` is column-split into np parts (adds their nodes). */
static int colsplit_inputs(Part *p, Region *r, Node *n, int from, int to, int np, int depth);

/* Whether v can be computed column-split (its split dimension, see split_dim, cut into np equal,
 * head-aligned parts: tp, or an attention's kv_parts for its keys and values); adds its nodes.
 * Leaves are MatMuls with [K, N] weights; in between: unary elementwise ops, Add/Sub/Mul/SwiGLU
 * with [N] biases, RotaryEmbedding and Attention by heads, and MLA's head layouts: Reshape
 * between [B, S, heads * d] and [B, S, heads, d], Expand of a shared [B, S, 1, d] to the heads,
 * Split and Concat along d. */
static int colsplit(Part *p, Region *r, Value *v, int np, int depth)
{
	if (depth > 16 || v->kind != V_NODE || r->n >= MAXREG - 1)
		return 0;
	Node *n = v->def;
	if (in_region(r, n))
		return region_parts(r, n) == np;
	int64_t w = split_dim(v);
	if (n->annot.device || v->nuses != 1 || pass_is_output(v) || n->aux || w < 1 || w % np)
		return 0;
	if (n->nout != 1 && n->op != OP_Attention && n->op != OP_Split)
		return 0;
	if (v->defidx != 0 && n->op != OP_Split)
		return 0;
	int ok = 0, rank = v->type.rank;
	if (n->op == OP_MatMul && weight_2d(n->in[1]) && n->in[0]->type.rank >= 1 && rank != 4)
		ok = 1;
	else if (p->ep <= 1 && is_expert_matmul(n) && rank == 2)
		ok = 1;   /* every expert's weight [E, K, N] cut along N (TensorRT-LLM's MoE tensor parallelism;
			     with --ep the experts are split by expert instead) */
	else if (((ir_ops[n->op].flags & (F_ELEM | F_UNARY)) == (F_ELEM | F_UNARY) && n->op != OP_Cast) ||
		 (n->op == OP_Quantize && n->nin == 1))      /* an activation quantized per token */
		ok = split_dim(n->in[0]) == w && n->in[0]->type.rank == rank && colsplit(p, r, n->in[0], np, depth + 1);
	else if (n->op == OP_Add || n->op == OP_Sub || n->op == OP_Mul || n->op == OP_SwiGLU) {
		int any = 0;
		ok = rank != 4;
		for (int i = 0; i < 2 && ok; i++) {
			Value *x = n->in[i];
			if (is_weight(x, 1) && dim_isconst(x->type.dims[0]) && x->type.dims[0].k == w)
				continue;
			ok = last_dim(x) == w && colsplit(p, r, x, np, depth + 1);
			any |= ok;
		}
		ok = ok && any;
	} else if (n->op == OP_RotaryEmbedding) {
		int64_t h = rt_attr_int(&n->attrs, "num_heads", 0);
		ok = h > 0 && h % np == 0 && rank == 3 && last_dim(n->in[0]) == w &&
		     colsplit(p, r, n->in[0], np, depth + 1);
	} else if (n->op == OP_Attention && np == p->tp && attention_splits(p, n)) {
		int kvp = kv_parts(p, rt_attr_int(&n->attrs, "kv_num_heads", 0));
		ok = colsplit_inputs(p, r, n, 0, 1, np, depth) && colsplit_inputs(p, r, n, 1, 3, kvp, depth);
	} else if (n->op == OP_Reshape && n->in[0]->type.rank + rank == 7 && head_shape(n->in[1], 0, rank, np))
		ok = split_dim(n->in[0]) > 0 && colsplit(p, r, n->in[0], np, depth + 1);   /* 3-D <-> 4-D */
	else if (n->op == OP_Expand && rank == 4 && head_shape(n->in[1], 1, 4, np) && n->in[0]->type.rank == 4 &&
		 dim_isconst(n->in[0]->type.dims[2]) && n->in[0]->type.dims[2].k == 1)
		ok = 1;   /* a value shared by all heads, expanded per shard */
	else if ((n->op == OP_Split || n->op == OP_Concat) && rank == 4 && norm_axis(n, 4) == 3)
		ok = colsplit_inputs(p, r, n, 0, n->op == OP_Split ? 1 : n->nin, np, depth);
	else if ((n->op == OP_Split || n->op == OP_Concat) && rank == 3 && norm_axis(n, 3) == 1)
		ok = colsplit_inputs(p, r, n, 0, n->op == OP_Split ? 1 : n->nin, np, depth);   /* token groups (--phase mixed) */
	else if (n->op == OP_Reshape && rank == 3 && n->in[0]->type.rank == 3 && last_dim(n->in[0]) == w &&
		 ir_const_data(n->in[1]) && ir_const_data(n->in[1])->n == 3 && rt_geti(ir_const_data(n->in[1]), 2) == w)
		ok = colsplit(p, r, n->in[0], np, depth + 1);   /* [1, N*S, X] <-> [N, S, X] (--phase mixed) */
	if (!ok || r->n >= MAXREG - 1)
		return 0;
	r->np[r->n] = np;
	r->nodes[r->n++] = n;
	return 1;
}

static int colsplit_inputs(Part *p, Region *r, Node *n, int from, int to, int np, int depth)
{
	for (int i = from; i < to; i++)
		if (!n->in[i] || !colsplit(p, r, n->in[i], np, depth + 1))
			return 0;
	return 1;
}

static Value *weight_shard(Part *p, Node *before, Value *w, int axis, int i, int k, int of);

/* Device shard i's part of a weight chain (chain_param) cut into k parts along `axis` of its
 * result (weight_shard): the parameter is cut (a weight shard) and the chain re-run on the
 * shard, a Transpose swapping the axis, a per-group Quantize cut along its last axis grouping per
 * shard (shard_group); the new nodes carry region code `aux` (they run on shard i's device). */
static Value *chain_shard(Part *p, Node *before, Value *v, int axis, int i, int k, intptr_t aux)
{
	if (is_weight(v, 2))
		return weight_shard(p, before, v, axis, i, k, p->tp);
	Node *n = v->def;
	Value *x = chain_shard(p, before, n->in[0], n->op == OP_Transpose ? 1 - axis : axis, i, k, aux);
	char buf[256];
	snprintf(buf, sizeof buf, "%s.tp%d", v->name, i);
	const char *name = ir_fresh_name(p->g, buf);
	Value *ins[4] = { x, n->nin > 1 ? n->in[1] : NULL, n->nin > 2 ? n->in[2] : NULL, n->nin > 3 ? n->in[3] : NULL };
	Node *c = ir_insert_node(p->g, before, n->op, ins, n->nin < 4 ? n->nin : 4, &name, 1, n->loc);
	for (int a = 0; a < n->attrs.n; a++)
		ir_set_attr(c, &n->attrs.a[a]);
	if (n->op == OP_Quantize && axis == n->in[0]->type.rank - 1)
		shard_group(c, n->in[0], k);
	c->aux = (void *)aux;
	return c->out[0];
}

/* Removes the nodes of weight chain v (chain_param) that nothing reads any more. */
static void drop_chain(Part *p, Value *v)
{
	while (v && v->kind == V_NODE && v->nuses == 0 && !pass_is_output(v)) {
		Node *n = v->def;
		Value *in = n->nin > 0 ? n->in[0] : NULL;
		ir_remove_node(p->g, n);
		v = in;
	}
}

/* The Split of copy c of weight (or KV-cache input) w: copy 0's is w's aux, the others' in the
 * table Part.copyw/copyc/copys; NULL when none yet.  slot: where a new one goes. */
static Node **copy_split(Part *p, Value *w, int c)
{
	if (c == 0)
		return (Node **)&w->aux;
	for (int i = 0; i < p->ncopy; i++)
		if (p->copyw[i] == w && p->copyc[i] == c)
			return &p->copys[i];
	if (p->ncopy == p->capcopy) {   /* arena-allocated: freed with the module */
		int cap = p->capcopy * 2 + 16;
		Value **cw = arena_alloc(p->m->arena, (size_t)cap * sizeof *cw);
		int *cc = arena_alloc(p->m->arena, (size_t)cap * sizeof *cc);
		Node **cs = arena_alloc(p->m->arena, (size_t)cap * sizeof *cs);
		for (int i = 0; i < p->ncopy; i++)
			cw[i] = p->copyw[i], cc[i] = p->copyc[i], cs[i] = p->copys[i];
		p->copyw = cw, p->copyc = cc, p->copys = cs, p->capcopy = cap;
	}
	p->copyw[p->ncopy] = w, p->copyc[p->ncopy] = c, p->copys[p->ncopy] = NULL;
	return &p->copys[p->ncopy++];
}

/* Device shard i's (of `of`: tp, or ep for experts) part of weight w cut into k parts along axis:
 * part i when k is `of` (one Split per weight, shared by the shards); with k < of parts (a KV
 * head's projection columns, bias or cache: kv_parts) part i / (of / k), and each of the of / k
 * shards holding a part reads it from a Split of its own ("<w>.shard<j>.copy<c>"), so every
 * device stores its copy as a constant or sharded input of its own, not a Transfer. */
static Value *weight_shard(Part *p, Node *before, Value *w, int axis, int i, int k, int of)
{
	int reps = k > 0 && of >= k ? of / k : 1, c = i % reps;
	Node **slot = copy_split(p, w, c);
	if (!*slot) {
		const char **names = arena_alloc(p->m->arena, (size_t)k * sizeof *names);
		for (int j = 0; j < k; j++) {
			char buf[256];
			if (c)
				snprintf(buf, sizeof buf, "%s.shard%d.copy%d", w->name, j, c);
			else
				snprintf(buf, sizeof buf, "%s.shard%d", w->name, j);
			names[j] = ir_fresh_name(p->g, buf);
		}
		Node *s = ir_insert_node(p->g, before, OP_Split, &w, 1, names, k, before->loc);
		ir_set_attr_int(s, "axis", axis);
		ir_set_attr_int(s, "num_outputs", k);
		/* the lowering stores the shards, it runs no Split (targets/devices.c) */
		ir_set_attr_str(s, "shard", w->kind == V_INPUT ? "input" : "weight");
		s->aux = (void *)SHARD_SPLIT;
		*slot = s;
	}
	return (*slot)->out[i / reps];
}

static Value *map_val(Region *r, Node **map, Value *v)
{
	if (v && v->kind == V_NODE)
		for (int k = 0; k < r->n; k++)
			if (r->nodes[k] == v->def)
				return map[k]->out[v->defidx];
	return v;
}

/* A shard's copy of the constant shape operand s of a Reshape or Expand: element 2 / k. */
static Value *shard_shape(Part *p, Value *s, int k, Loc loc)
{
	const RtTensor *t = ir_const_data(s);
	ParamInit *pi = arena_alloc(p->m->arena, sizeof *pi);
	pi->kind = INIT_LITERAL;
	pi->nlit = t->n;
	pi->lit = arena_alloc(p->m->arena, (size_t)t->n * sizeof *pi->lit);
	for (int64_t i = 0; i < t->n; i++)
		pi->lit[i] = (double)(rt_geti(t, i) / (i == 2 ? k : 1));
	pi->inline_lit = 1;
	return ir_add_param(p->g, ir_fresh_name(p->g, "c"), s->type, pi, loc);
}

/* Divides the integer attribute `name` of c by k (head counts of a shard). */
static void divide_attr(Node *c, const char *name, int k)
{
	int64_t v = rt_attr_int(&c->attrs, name, 0);
	if (v > 0)
		ir_set_attr_int(c, name, v / k);
}

/* The graph output v (a present key or value) := Concat {axis=1} of result j of the shard
 * Attentions: KV heads in shard order, k parts (kv_parts), each from the first of the tp / k
 * shards holding it (the others' copies are not outputs).  No @device: the lowering makes it a
 * sharded plan output (each device keeps its heads' cache; targets/devices.c), not an
 * instruction.  cast (or NULL): the Cast between result j and the graph output (kv_cast), done
 * per holder (region rid's shard), and v is then its result. */
static void assemble_output(Part *p, Node *before, Value *v, Node **attn, int j, Node *cast, int rid, int k)
{
	Value *parts[SHARDS];
	char buf[256];
	for (int q = 0; q < k; q++) {
		int i = q * (p->tp / k);
		parts[q] = attn[i]->out[j];
		if (cast) {
			snprintf(buf, sizeof buf, "%s.tp%d", v->name, i);
			const char *nm = ir_fresh_name(p->g, buf);
			Node *c = ir_insert_node(p->g, before, OP_Cast, &parts[q], 1, &nm, 1, cast->loc);
			for (int a = 0; a < cast->attrs.n; a++)
				ir_set_attr(c, &cast->attrs.a[a]);
			c->aux = (void *)(intptr_t)(rid * SHARDS + i + 1);
			parts[q] = c->out[0];
		}
	}
	snprintf(buf, sizeof buf, "%s.all", v->name);
	const char *name = ir_fresh_name(p->g, buf);
	Node *c = ir_insert_node(p->g, before, OP_Concat, parts, k, &name, 1, before->loc);
	ir_set_attr_int(c, "axis", 1);
	ir_set_attr_str(c, "shard", "output");   /* a sharded plan output, no instruction */
	c->aux = (void *)OUTPUT_CONCAT;
	ir_replace_uses(p->g, v, c->out[0]);
	c->out[0]->name = v->name;       /* the graph output keeps its name */
	v->name = name;
	if (cast)
		ir_remove_node(p->g, cast);
}

/* An AllReduce of the n partial results `parts` (region rid) that replaces node `row`: its
 * users read the sum; `row` is removed. */
static Node *replace_by_allreduce(Part *p, Node *row, Value **parts, int n, int rid)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s.allreduce", pass_node_name(row));
	const char *name = ir_fresh_name(p->g, buf);
	Node *ar = ir_insert_node(p->g, row, OP_AllReduce, parts, n, &name, 1, row->loc);
	ar->aux = (void *)(intptr_t)(rid * SHARDS + 1);
	if (pass_replace_node(p->g, row, ar->out[0]) < 0) {
		ir_replace_uses(p->g, row->out[0], ar->out[0]);
		ir_remove_node(p->g, row);
	}
	return ar;
}

/* Rewrites one region into tp shards and an AllReduce; marks the new nodes (aux = region). */
static void split_region(Part *p, Region *r, int rid)
{
	Node *row = r->nodes[r->n - 1];
	Value *parts[SHARDS];
	Node *map[MAXREG], *attn[SHARDS];
	for (int i = 0; i < p->tp; i++) {
		for (int k = 0; k < r->n; k++) {
			Node *n = r->nodes[k];
			int np = r->np[k], kvp = 0;   /* np: the parts this node is cut into (Region.np) */
			Value *in[8];
			int nin = n->nin < 8 ? n->nin : 8;
			if (n->op == OP_Attention) {
				nin = n->nin > 4 ? 6 : 3;
				kvp = kv_parts(p, rt_attr_int(&n->attrs, "kv_num_heads", 0));
			}
			for (int j = 0; j < nin; j++)
				in[j] = map_val(r, map, n->in[j]);
			if (n->op == OP_Attention && nin == 6) {   /* the KV cache by KV heads */
				in[3] = NULL;
				in[4] = weight_shard(p, row, n->in[4], 1, i, kvp, p->tp);
				in[5] = weight_shard(p, row, n->in[5], 1, i, kvp, p->tp);
			}
			if (n->op == OP_Reshape || n->op == OP_Expand)
				in[1] = shard_shape(p, n->in[1], np, n->loc);
			if (n->op == OP_GroupedMatMul)   /* [E, K, N]: rows (K) for the last, columns (N) before */
				in[2] = weight_shard(p, row, n->in[2], k == r->n - 1 ? 1 : 2, i, np, p->tp);
			else if (n->op == OP_MatMul && k == r->n - 1)
				in[1] = chain_shard(p, row, n->in[1], 0, i, np, rid * SHARDS + i + 1);
			else if (n->op == OP_MatMul)
				in[1] = chain_shard(p, row, n->in[1], 1, i, np, rid * SHARDS + i + 1);
			else
				for (int j = 0; j < nin; j++)
					if (is_weight(n->in[j], 1))
						in[j] = weight_shard(p, row, n->in[j], 0, i, np, p->tp);
			const char *names[8];
			int nout = (n->op == OP_Split || n->op == OP_Attention) && n->nout <= 8 ? n->nout : 1;
			for (int j = 0; j < nout; j++) {
				char buf[256];
				snprintf(buf, sizeof buf, "%s.tp%d", n->out[j]->name, i);
				names[j] = ir_fresh_name(p->g, buf);
			}
			Node *c = ir_insert_node(p->g, row, n->op, in, nin, names, nout, n->loc);
			for (int a = 0; a < n->attrs.n; a++)
				ir_set_attr(c, &n->attrs.a[a]);
			if (n->op == OP_RotaryEmbedding)
				divide_attr(c, "num_heads", np);
			if (n->op == OP_Quantize)   /* an activation's per-token groups over its shard */
				shard_group(c, n->in[0], np);
			if (n->op == OP_Attention) {
				divide_attr(c, "q_num_heads", p->tp);
				divide_attr(c, "kv_num_heads", kvp);
			}
			c->aux = (void *)(intptr_t)(rid * SHARDS + i + 1);
			map[k] = c;
			if (n->op == OP_Attention)
				attn[i] = c;
		}
		parts[i] = map[r->n - 1]->out[0];
	}
	for (int k = 0; k < r->n; k++)
		if (r->nodes[k]->op == OP_Attention) {
			int kvp = kv_parts(p, rt_attr_int(&r->nodes[k]->attrs, "kv_num_heads", 0));
			for (int j = 1; j < r->nodes[k]->nout && j < 3; j++) {
				Node *cast = kv_cast(p, r->nodes[k]->out[j]);
				if (pass_is_output(r->nodes[k]->out[j]))
					assemble_output(p, row, r->nodes[k]->out[j], attn, j, NULL, rid, kvp);
				else if (cast)
					assemble_output(p, row, cast->out[0], attn, j, cast, rid, kvp);
			}
		}
	Value *chains[MAXREG];
	int nch = 0;
	for (int k = 0; k < r->n; k++)
		if (r->nodes[k]->op == OP_MatMul && !is_weight(r->nodes[k]->in[1], 2))
			chains[nch++] = r->nodes[k]->in[1];
	replace_by_allreduce(p, row, parts, p->tp, rid);
	for (int k = r->n - 2; k >= 0; k--) {
		int used = 0;
		for (int j = 0; j < r->nodes[k]->nout; j++)
			used |= r->nodes[k]->out[j]->nuses > 0;
		if (!used)
			ir_remove_node(p->g, r->nodes[k]);
	}
	for (int c = 0; c < nch; c++)    /* the unpartitioned weights' load-time transforms */
		drop_chain(p, chains[c]);
}

/* A new region id of the given kind and width; 0 when the table is full. */
static int new_region(Part *p, char kind, int shards)
{
	if (p->nreg >= MAXREGIONS - 2)
		return 0;
	p->nreg++;
	p->regkind[p->nreg] = kind;
	p->regn[p->nreg] = shards;
	return p->nreg;
}

/* A lone MatMul whose result is only a graph output (the lm_head: logits = h W, W [D, V]) is
 * split by columns, vocab-parallel as Megatron-LM does (Shoeybi et al. 2019, section 3): shard
 * i computes logits[..., iV/tp, (i+1)V/tp) from its columns of W, and the shards are the plan
 * output's, assembled by no instruction (a shard="output" Concat, targets/devices.c).  Before,
 * it stayed whole on gpu0: the 405B's 1 GB lm_head read there alone (newcomer finding 4). */
static int vocab_parallel(Part *p, Node *n)
{
	Value *w = n->in[1], *y = n->out[0];
	if (n->op != OP_MatMul || n->aux || n->annot.device || !weight_2d(w) || !dim_isconst(w->type.dims[0]) ||
	    !dim_isconst(w->type.dims[1]) || w->type.dims[1].k % p->tp || !pass_is_output(y) || y->nuses != 1 ||
	    y->type.rank < 1 || p->nreg >= MAXREGIONS - 2 || !pass_bisect(p->c, n, "vocab-parallel split"))
		return 0;
	int rid = new_region(p, 'T', p->tp);
	Value *parts[SHARDS];
	for (int i = 0; i < p->tp; i++) {
		char buf[256];
		snprintf(buf, sizeof buf, "%s.tp%d", y->name, i);
		const char *nm = ir_fresh_name(p->g, buf);
		Value *in[2] = { n->in[0], chain_shard(p, n, w, 1, i, p->tp, rid * SHARDS + i + 1) };
		Node *c = ir_insert_node(p->g, n, OP_MatMul, in, 2, &nm, 1, n->loc);
		for (int a = 0; a < n->attrs.n; a++)
			ir_set_attr(c, &n->attrs.a[a]);
		c->aux = (void *)(intptr_t)(rid * SHARDS + i + 1);
		parts[i] = c->out[0];
	}
	char buf[256];
	snprintf(buf, sizeof buf, "%s.all", y->name);
	const char *name = ir_fresh_name(p->g, buf);
	Node *cat = ir_insert_node(p->g, n, OP_Concat, parts, p->tp, &name, 1, n->loc);
	ir_set_attr_int(cat, "axis", y->type.rank - 1);
	ir_set_attr_str(cat, "shard", "output");   /* a sharded plan output, no instruction */
	cat->aux = (void *)OUTPUT_CONCAT;
	ir_replace_uses(p->g, y, cat->out[0]);
	cat->out[0]->name = y->name;
	y->name = name;
	ir_remove_node(p->g, n);
	drop_chain(p, w);
	pass_remark(p->c, REMARK_APPLIED, p->g, cat, "tensor parallel over %d devices: vocab-parallel MatMul, "
		    "its weight cut by columns, each device computing its columns of the output, which is stored "
		    "sharded (no gather)", p->tp);
	return 1;
}

/* An explicit --tp that leaves an Attention unsplit must not pass silently (newcomer 32 item 9:
 * --tp 8 on 12 query / 2 KV heads kept attention, its projections and its KV cache on gpu0 with
 * no message, where --tp 3, which splits nothing, warns): one warning per compile, naming the
 * head counts and the --tp values that split them (the query heads divide by it and the KV
 * heads divide by it or it by them: kv_parts). */
static void warn_attention(Part *p, const Node *a, long long qh, long long kvh)
{
	if (p->c->tp < 2 || !p->attn_warned || *p->attn_warned)
		return;
	*p->attn_warned = 1;
	char ok[160] = "";
	size_t k = 0;
	for (int t = 2; t <= p->ndev && k < sizeof ok - 16; t++)
		if (qh > 0 && kvh > 0 && qh % t == 0 && (kvh % t == 0 || t % kvh == 0))
			k += (size_t)snprintf(ok + k, sizeof ok - k, "%s%d", k ? ", " : "", t);
	char hint[400];      /* room for ok[] whole: the -O1 sanitizer build checks the truncation */
	if (qh > 0 && kvh > 0 && (qh % p->tp || !kv_parts(p, kvh)))
		snprintf(hint, sizeof hint, "its %lld query / %lld KV heads do not split %d ways (a device holds whole "
			 "query heads, and whole KV heads or a copy of one); --tp %s split%s them", qh, kvh, p->tp,
			 k ? ok : "1", k && strchr(ok, ',') ? "" : "s");
	else
		snprintf(hint, sizeof hint, "it cannot be split by heads (--remarks=placement says why)");
	fprintf(stderr, "aicc: warning: --tp %d: attention '%s' of graph '%s' is not split: %s; it, its projections and "
		"its KV cache run on one device of each stage while the rest is split\n", p->tp, pass_node_name(a),
		p->g->name ? p->g->name : "?", hint);
}

static int tensor_parallel(Part *p)
{
	int nreg = 0;
	if (p->tp < 2)
		return 0;
	p->ncopy = 0;   /* weight_shard's copies: of this graph's weights only */
	for (Node *n = p->g->first, *next; n; n = next) {
		next = n->next;
		int experts = p->ep <= 1 && is_expert_matmul(n);
		if ((!experts && (n->op != OP_MatMul || !weight_2d(n->in[1]) || !dim_isconst(n->in[1]->type.dims[0]))) ||
		    n->aux || n->annot.device)
			continue;
		Region r = { .n = 0, .cols = experts ? n->in[2]->type.dims[1].k : n->in[1]->type.dims[0].k };
		if (r.cols % p->tp || last_dim(n->in[0]) != r.cols || !colsplit(p, &r, n->in[0], p->tp, 0))
			continue;
		int bad = 0, heads = 0, reps = 0;
		for (int k = 0; k < r.n; k++) {
			bad |= r.nodes[k]->op == OP_MatMul && (r.nodes[k]->in[1]->type.dims[1].k % r.np[k]) != 0;
			reps |= r.np[k] < p->tp;
			bad |= (r.nodes[k]->op == OP_MatMul && experts) || (r.nodes[k]->op == OP_GroupedMatMul && !experts);
			heads |= r.nodes[k]->op == OP_Attention;
		}
		if (bad || p->nreg >= MAXREGIONS - 2 || !pass_bisect(p->c, n, "tensor-parallel split"))
			continue;
		r.np[r.n] = p->tp;
		r.nodes[r.n++] = n;
		int rid = new_region(p, 'T', p->tp);
		nreg++;
		if (experts)
			pass_remark(p->c, REMARK_APPLIED, p->g, n, "tensor parallel over %d devices: every expert's "
				    "weights cut (%d column-split node(s) before this row-split GroupedMatMul), AllReduce "
				    "of the partial products before MoECombine", p->tp, r.n - 1);
		else if (heads && reps)
			pass_remark(p->c, REMARK_APPLIED, p->g, n, "tensor parallel over %d devices: attention by heads, "
				    "%d column-split node(s) (Q weights cut at head boundaries, query heads / %d; fewer KV "
				    "heads than devices, so each KV head's K/V columns and cache are replicated on the "
				    "devices whose query heads read it) before this row-split MatMul, AllReduce of the "
				    "partial products", p->tp, r.n - 1, p->tp);
		else if (heads)
			pass_remark(p->c, REMARK_APPLIED, p->g, n, "tensor parallel over %d devices: attention by heads, "
				    "%d column-split node(s) (Q/K/V weights cut at head boundaries, head counts / %d) "
				    "before this row-split MatMul, AllReduce of the partial products", p->tp, r.n - 1, p->tp);
		else
			pass_remark(p->c, REMARK_APPLIED, p->g, n, "tensor parallel over %d devices: %d column-split "
				    "node(s) before this row-split MatMul, AllReduce of the partial products", p->tp, r.n - 1);
		split_region(p, &r, rid);
		pass_changed(p->c, "tensor-parallel regions");
	}
	for (Node *n = p->g->first, *next; n; n = next) {
		next = n->next;
		if (vocab_parallel(p, n)) {
			nreg++, p->nvocab++;
			pass_changed(p->c, "tensor-parallel regions");
		}
	}
	ir_foreach_node(p->g, n) {
		if (n->op != OP_MatMul || n->aux || !weight_2d(n->in[1]))
			continue;
		Node *a = n->in[0]->kind == V_NODE ? n->in[0]->def : NULL;
		long long qh = a ? rt_attr_int(&a->attrs, "q_num_heads", 0) : 0, kvh = a ? rt_attr_int(&a->attrs, "kv_num_heads", 0) : 0;
		if (a && a->op == OP_Attention && !attention_splits(p, a))
			warn_attention(p, a, qh, kvh);
		if (a && a->op == OP_Attention && kvh > 0 && qh % p->tp == 0 && !kv_parts(p, kvh) && a->nin > 4)
			pass_remark(p->c, REMARK_MISSED, p->g, n, "MatMul not split over %d devices: Attention '%s' "
				    "has %lld KV heads, which %d neither divides nor is a multiple of: a device holds whole "
				    "KV heads or a copy of one (GQA), so the attention and its KV cache stay on one device",
				    p->tp, pass_node_name(a), kvh, p->tp);
		else if (a && a->op == OP_Attention && !attention_splits(p, a))
			pass_remark(p->c, REMARK_MISSED, p->g, n, "MatMul not split over %d devices: Attention '%s' "
				    "cannot be split by heads (%lld query / %lld KV heads: query heads divisible by the group, "
				    "KV heads divisible by it or dividing it, 3-D Q/K/V without mask, a KV cache only as graph "
				    "inputs and outputs needed)", p->tp,
				    pass_node_name(a), qh, kvh);
		else
			pass_remark(p->c, REMARK_MISSED, p->g, n, "MatMul not split over %d devices: not part of a "
				    "MatMul -> elementwise -> MatMul pair (single users, weights divisible by %d)", p->tp, p->tp);
	}
	return nreg;
}

/* ---- expert parallelism: MoEDispatch -> GroupedMatMul ... -> MoECombine ---- */

static Node *value_region_node(const Region *r, const Value *v)
{
	return v && v->kind == V_NODE && in_region(r, v->def) ? v->def : NULL;
}

/* Collects the MoE block that starts at dispatch d: every node reading its rows up to the one
 * MoECombine of the same expert ids.  Returns the combine, or NULL with *why set. */
static Node *moe_block(Part *p, Node *d, int64_t E, Region *r, const char **why)
{
	Node *comb = NULL;
	r->n = 0;
	r->nodes[r->n++] = d;
	for (Node *u = d->next; u; u = u->next) {
		int reads = 0;
		for (int i = 0; i < u->nin; i++)
			reads |= value_region_node(r, u->in[i]) != NULL;
		if (!reads)
			continue;
		if (r->n >= MAXREG - 1) {
			*why = "the block has too many nodes";
			return NULL;
		}
		for (int i = 0; i < u->nin; i++)
			if (u->in[i] == d->out[1] && !(u->op == OP_GroupedMatMul && i == 1)) {
				*why = "the expert offsets are read by a node other than GroupedMatMul";
				return NULL;
			}
		if (u->annot.device) {
			*why = "a node of the block has a @device annotation";
			return NULL;
		}
		if (u->op == OP_GroupedMatMul) {
			Value *w = u->in[2];
			if (!is_weight(w, 3) || !dim_isconst(w->type.dims[0]) || w->type.dims[0].k != E ||
			    u->in[1] != d->out[1] || !value_region_node(r, u->in[0])) {
				*why = "a GroupedMatMul does not read the dispatch's offsets and a stacked [E, K, N] weight";
				return NULL;
			}
		} else if (u->op == OP_MoECombine) {
			if (u->in[2] != d->in[1] || value_region_node(r, u->in[1]) ||
			    !value_region_node(r, u->in[0]) || u->in[0]->def->op != OP_GroupedMatMul) {
				*why = "MoECombine does not combine a GroupedMatMul's rows with the dispatch's expert ids";
				return NULL;
			}
			r->nodes[r->n++] = u;
			comb = u;
			break;
		} else if (!(ir_ops[u->op].flags & F_ELEM) || u->nout != 1) {
			*why = "a node other than GroupedMatMul, an elementwise op or MoECombine reads the dispatched rows";
			return NULL;
		}
		r->nodes[r->n++] = u;
	}
	if (!comb) {
		*why = "no MoECombine of the dispatched rows";
		return NULL;
	}
	for (int k = 0; k < r->n; k++)   /* every intermediate is read only inside the block */
		for (int j = 0; j < r->nodes[k]->nout && r->nodes[k] != comb; j++) {
			Value *v = r->nodes[k]->out[j];
			int inside = 0;
			for (int q = 0; q < r->n; q++)
				for (int i = 0; i < r->nodes[q]->nin; i++)
					inside += r->nodes[q]->in[i] == v;
			if (inside != v->nuses || pass_is_output(v)) {
				*why = "an intermediate of the block is read outside it";
				return NULL;
			}
		}
	return comb;
}

/* An inline i64[1] constant holding x (a Slice bound). */
static Value *i64_const(Part *p, int64_t x, Loc loc)
{
	ParamInit *pi = arena_alloc(p->m->arena, sizeof *pi);
	pi->kind = INIT_LITERAL;
	pi->lit = arena_alloc(p->m->arena, sizeof *pi->lit);
	pi->lit[0] = (double)x;
	pi->nlit = 1;
	pi->inline_lit = 1;
	Dim one = dim_c(1);
	return ir_add_param(p->g, ir_fresh_name(p->g, "c"), ir_type(p->m, DT_I64, 1, &one), pi, loc);
}

/* Rewrites the block r (ending in comb) into ep shards: device j dispatches every token, keeps
 * the offsets of its experts j*El .. (j+1)*El (GroupedMatMul leaves the other rows zero), runs
 * the block with its slice of each stacked weight and combines its rows into a partial sum;
 * an AllReduce adds the partial sums.  Each token's k weighted rows come from distinct experts,
 * so the result differs from the unsplit combine only by the order of the additions.  Returns
 * the AllReduce. */
static Node *split_experts(Part *p, Region *r, Node *comb, int64_t E, int rid)
{
	int64_t el = E / p->ep;
	Value *parts[SHARDS];
	Value *map[MAXREG][2];
	Node *d = r->nodes[0];
	for (int j = 0; j < p->ep; j++) {
		Value *loff = NULL;
		for (int k = 0; k < r->n; k++) {
			Node *n = r->nodes[k];
			Value *in[8];
			int nin = n->nin < 8 ? n->nin : 8;
			for (int i = 0; i < nin; i++) {
				Node *src = value_region_node(r, n->in[i]);
				in[i] = n->in[i];
				for (int q = 0; src && q < k; q++)
					if (r->nodes[q] == src)
						in[i] = map[q][n->in[i]->defidx];
			}
			if (n->op == OP_GroupedMatMul) {
				in[1] = loff;
				in[2] = weight_shard(p, d, n->in[2], 0, j, p->ep, p->ep);
			}
			const char *names[2];
			for (int i = 0; i < n->nout && i < 2; i++) {
				char buf[256];
				snprintf(buf, sizeof buf, "%s.ep%d", n->out[i]->name, j);
				names[i] = ir_fresh_name(p->g, buf);
			}
			Node *c = ir_insert_node(p->g, comb, n->op, in, nin, names, n->nout < 2 ? n->nout : 2, n->loc);
			for (int a = 0; a < n->attrs.n; a++)
				ir_set_attr(c, &n->attrs.a[a]);
			c->aux = (void *)(intptr_t)(rid * SHARDS + j + 1);
			for (int i = 0; i < c->nout; i++)
				map[k][i] = c->out[i];
			if (n == d) {   /* this device's experts: offsets[j*El .. (j+1)*El] */
				char buf[256];
				snprintf(buf, sizeof buf, "%s.ep%d.local", d->out[1]->name, j);
				const char *name = ir_fresh_name(p->g, buf);
				Value *sl[4] = { c->out[1], i64_const(p, j * el, d->loc), i64_const(p, (j + 1) * el + 1, d->loc),
						 i64_const(p, 0, d->loc) };
				Node *s = ir_insert_node(p->g, comb, OP_Slice, sl, 4, &name, 1, d->loc);
				s->aux = c->aux;
				loff = s->out[0];
			}
		}
		parts[j] = map[r->n - 1][0];
	}
	Node *ar = replace_by_allreduce(p, comb, parts, p->ep, rid);
	for (int k = r->n - 2; k >= 0; k--)
		ir_remove_node(p->g, r->nodes[k]);
	return ar;
}

static int expert_parallel(Part *p)
{
	int nreg = 0;
	if (p->ep < 2)
		return 0;
	for (Node *n = p->g->first, *next; n; n = next) {
		next = n->next;
		if (n->op != OP_MoEDispatch || n->aux || n->annot.device)
			continue;
		int64_t E = rt_attr_int(&n->attrs, "num_experts", 0);
		const char *why = NULL;
		Region r;
		Node *comb = NULL;
		if (E < 1 || E % p->ep)
			why = "its num_experts is not a multiple of --ep";
		else if (p->nreg >= MAXREGIONS - 2)
			why = "too many regions";
		else
			comb = moe_block(p, n, E, &r, &why);
		if (!comb) {
			pass_remark(p->c, REMARK_MISSED, p->g, n, "MoE block not split over %d devices: %s", p->ep, why);
			continue;
		}
		if (!pass_bisect(p->c, comb, "expert-parallel split"))
			continue;
		Value *t = n->in[0], *re = n->in[1], *rw = comb->in[1];
		int64_t k = re->type.rank == 2 && dim_isconst(re->type.dims[1]) ? re->type.dims[1].k : 0;
		int known = ir_type_numel(t->type) >= 0 && ir_type_numel(comb->out[0]->type) >= 0;
		int64_t send = (p->ep - 1) * (value_bytes(t) + value_bytes(re) + value_bytes(rw));
		int64_t sum = value_bytes(comb->out[0]);
		char sb[64] = "symbolic", ab[64] = "symbolic", xb[64] = "symbolic";
		if (known) {
			snprintf(sb, sizeof sb, "%lld", (long long)send);
			snprintf(ab, sizeof ab, "%lld", (long long)sum);
			snprintf(xb, sizeof xb, "%lld", (long long)(2 * (p->ep - 1) * k * value_bytes(t)));
		}
		pass_remark(p->c, REMARK_APPLIED, p->g, comb, "expert parallel over %d devices: %lld experts, %lld per "
			    "device (stacked expert weights split by experts); tokens and routing replicated to the "
			    "expert devices (%s bytes sent), weighted partial sums added by an AllReduce (%s bytes "
			    "per device); an exact AllToAll dispatch and combine would move %s bytes (routing is "
			    "data-dependent, so every chunk must hold all k=%lld routed rows of each of its tokens)",
			    p->ep, (long long)E, (long long)(E / p->ep), sb, ab, xb, (long long)k);
		int rid = new_region(p, 'E', p->ep);
		p->regel[rid] = E / p->ep;
		next = split_experts(p, &r, comb, E, rid)->next;   /* the block's nodes are gone */
		nreg++;
		pass_changed(p->c, "expert-parallel regions");
		if (!pass_stat_get(p->c, "partition", "experts per device"))
			pass_stat(p->c, "experts per device", E / p->ep);
		if (known) {
			pass_stat(p->c, "expert dispatch bytes (token broadcast)", send);
			pass_stat(p->c, "expert combine bytes (AllReduce inputs)", (int64_t)p->ep * sum);
		}
	}
	return nreg;
}

/* ---- pipeline cuts inside layer stacks ---- */

/* Splits every `Call repeat N` that a balanced stage boundary falls inside into calls of fewer
 * repetitions, cut at the boundary.  Call instances are numbered in expansion order, so every
 * repetition keeps its weights; the first `carried` outputs feed the next call's first inputs. */
static int split_calls(Part *p)
{
	double total = 0, acc = 0;
	int cuts = 0;
	ir_foreach_node(p->g, n)
		total += node_time(p, n);
	if (p->pp < 2 || total <= 0)
		return 0;
	for (Node *n = p->g->first; n; n = n->next) {
		double t = node_time(p, n);
		if (n->op == OP_Call && n->callee && n->repeat > 1 && !n->annot.device) {
			double t1 = t / (double)n->repeat, start = acc;
			for (int k = 1; k < p->pp; k++) {
				double b = total * k / p->pp;
				int64_t reps = (int64_t)floor((b - start) / t1 + 0.5);
				if (b <= start || reps <= 0 || reps >= n->repeat)
					continue;
				const char *names[64];
				int nout = n->nout < 64 ? n->nout : 64;
				for (int i = 0; i < nout; i++)
					names[i] = ir_fresh_name(p->g, n->out[i]->name);
				Node *c = ir_insert_node(p->g, n, OP_Call, n->in, n->nin, names, nout, n->loc);
				c->callee = n->callee;
				c->repeat = reps;
				for (int i = 0; i < nout && i < n->nin; i++)
					ir_set_input(n, i, c->out[i]);
				n->repeat -= reps;
				start += t1 * (double)reps;
				cuts++;
				pass_remark(p->c, REMARK_APPLIED, p->g, n, "cut layer stack '%s' after %lld of %lld "
					    "repetitions at the boundary of pipeline stage %d", n->callee->name,
					    (long long)reps, (long long)(reps + n->repeat), k);
			}
		}
		acc += t;
	}
	return cuts;
}

/* ---- placement ---- */

static int pin_index(Part *p, const Node *n, int *out)
{
	const char *d = n->annot.device;
	size_t l = strlen(p->dev->id);
	char *end;
	if (strncmp(d, p->dev->id, l) == 0 && d[l] >= '0' && d[l] <= '9') {
		long k = strtol(d + l, &end, 10);
		if (!*end && index_of(p, k) >= 0) {
			*out = index_of(p, k);
			return 0;
		}
		if (!*end && p->phys && k < p->limit) {
			pass_remark(p->c, REMARK_MISSED, p->g, n, "@device(%s) names a device left out by "
				    "--exclude-devices: ignored, placed on the survivors", d);
			return -1;
		}
	}
	pass_remark(p->c, REMARK_MISSED, p->g, n, "@device(%s) names no device of machine %s (%s0..%s%d): ignored",
		    d, p->c->machine->name, p->dev->id, p->dev->id, p->limit - 1);
	return -1;
}

static int grow(Part *p)
{
	int nid = p->g->nvalues + 1;
	ir_foreach_node(p->g, n)
		if (n->id + 1 > nid)
			nid = n->id + 1;
	p->nids = nid;
	p->stage = calloc((size_t)nid, sizeof *p->stage);
	p->devof = calloc((size_t)nid, sizeof *p->devof);
	p->region = calloc((size_t)nid, sizeof *p->region);
	p->shard = calloc((size_t)nid, sizeof *p->shard);
	return p->stage && p->devof && p->region && p->shard ? 0 : -1;
}

/* The nodes of a layer graph placed as a unit (the call carries the device) record why they run
 * there, for `aicc explain`: with their call, whose stage the placement remark explains. */
static void callee_reasons(Graph *g, int depth)
{
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee && depth < 8)
			callee_reasons(n->callee, depth + 1);
		else if (!n->annot.device && !rt_attr_str(&n->attrs, "placement_reason", NULL))
			ir_set_attr_str(n, "placement_reason", "with its call: a layer graph is placed as a unit, "
					"on its call's pipeline stage (partition)");
	}
}

/* Why node n of region rg runs where it does (a placement remark). */
static const char *region_reason(Part *p, const Node *n, int rg, int stage, char *buf, size_t size)
{
	int k = p->shard[n->id], w = p->regn[rg];
	if (p->regkind[rg] == 'E' && n->op == OP_AllReduce)
		snprintf(buf, size, "expert-parallel AllReduce of the weighted partial sums over %d devices, stage %d", w, stage);
	else if (p->regkind[rg] == 'E')
		snprintf(buf, size, "expert-parallel shard %d of %d: experts %lld..%lld and their weights live here, "
			 "stage %d", k, w, (long long)(k * p->regel[rg]), (long long)(k * p->regel[rg] + p->regel[rg] - 1), stage);
	else if (p->regkind[rg] == 'R')
		snprintf(buf, size, "replicated on each of the %d devices of its tensor-parallel group (copy %d; "
			 "a norm or elementwise op of values every device holds, recomputed there instead of "
			 "copied, as Megatron-LM does), stage %d", w, k, stage);
	else if (n->op == OP_AllReduce)
		snprintf(buf, size, "tensor-parallel AllReduce over %d devices, stage %d", w, stage);
	else
		snprintf(buf, size, "tensor-parallel shard %d of %d, stage %d", k, w, stage);
	return buf;
}

static void place(Part *p)
{
	double total = 0;
	ir_foreach_node(p->g, n) {
		total += node_time(p, n);
		intptr_t a = (intptr_t)n->aux;
		if (n->aux == SHARD_SPLIT || n->aux == OUTPUT_CONCAT || a <= 0)
			continue;
		p->region[n->id] = (int)(a / SHARDS);
		p->shard[n->id] = (int)(a % SHARDS) - 1;
	}
	/* cap: the smallest pinned stage among a node and its descendants */
	int *cap = malloc((size_t)p->nids * sizeof *cap);
	int *pin = malloc((size_t)p->nids * sizeof *pin);
	for (int i = 0; i < p->nids; i++)
		cap[i] = p->pp - 1, pin[i] = -1;
	ir_foreach_node(p->g, n)
		if (n->annot.device && !p->region[n->id] && n->aux != SHARD_SPLIT && n->aux != OUTPUT_CONCAT && pin_index(p, n, &pin[n->id]) == 0)
			cap[n->id] = pin[n->id] / p->width < p->pp ? pin[n->id] / p->width : p->pp - 1;
	for (Node *n = p->g->last; n; n = n->prev)
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] && n->in[i]->kind == V_NODE && cap[n->in[i]->def->id] > cap[n->id])
				cap[n->in[i]->def->id] = cap[n->id];
	int regstage[MAXREGIONS] = { 0 };
	double acc = 0;
	ir_foreach_node(p->g, n) {
		double t = node_time(p, n);
		int bal = total > 0 ? (int)((acc + t / 2) / total * p->pp) : 0;
		acc += t;
		if (bal >= p->pp)
			bal = p->pp - 1;
		int maxin = 0;
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] && n->in[i]->kind == V_NODE && p->stage[n->in[i]->def->id] > maxin)
				maxin = p->stage[n->in[i]->def->id];
		int s = bal > maxin ? bal : maxin;
		if (s > cap[n->id])
			s = cap[n->id];
		if (p->base >= 0)
			s = bal = p->base / p->width;   /* a layer graph: its stage */
		int rg = p->region[n->id];
		const char *why;
		char buf[256];
		if (n->aux == SHARD_SPLIT || n->aux == OUTPUT_CONCAT) {
			p->stage[n->id] = s;
			p->devof[n->id] = -1;
			continue;
		}
		if (rg && rg < MAXREGIONS) {
			if (!regstage[rg])
				regstage[rg] = s + 1;
			s = regstage[rg] - 1;
			p->stage[n->id] = s;
			p->devof[n->id] = s * p->width + p->shard[n->id];
			why = region_reason(p, n, rg, s, buf, sizeof buf);
		} else if (pin[n->id] >= 0) {
			p->stage[n->id] = pin[n->id] / p->width < p->pp ? pin[n->id] / p->width : p->pp - 1;
			p->devof[n->id] = pin[n->id];
			why = "@device annotation";
		} else if (p->base >= 0) {
			p->stage[n->id] = s;
			p->devof[n->id] = p->base;
			snprintf(buf, sizeof buf, "layer graph instantiated for pipeline stage %d, on the stage's first device", s);
			why = buf;
		} else {
			p->stage[n->id] = s;
			p->devof[n->id] = s * p->width;
			snprintf(buf, sizeof buf, "pipeline stage %d of %d by predicted time (%.3g s of %.3g s)%s",
				 s, p->pp, t, total, s < bal ? ", held back for a later @device pin" :
				 s > bal ? ", after its inputs' stage" : "");
			why = buf;
		}
		n->annot.device = dev_name(p, p->devof[n->id]);
		pass_remark(p->c, REMARK_ANALYSIS, p->g, n, "placed %s on %s: supported there; %s",
			    ir_ops[n->op].name, n->annot.device, why);
		if (n->op != OP_Call && pin[n->id] >= 0 && !p->region[n->id] &&
		    rt_attr_str(&n->attrs, "placement_reason", NULL))
			;   /* pinned by an earlier placement (a training step's forward pass, its gradients) */
		else if (n->op != OP_Call) {     /* what `aicc explain` shows for its kernel */
			char r[600];
			snprintf(r, sizeof r, "%s: %s (partition)", n->annot.device, why);
			ir_set_attr_str(n, "placement_reason", r);
		} else if (n->callee)
			callee_reasons(n->callee, 0);
	}
	free(cap);
	free(pin);
}

/* Whether layer-graph input v is bound, at every call of the graph, to a parameter or an entry-graph
 * input (not a loop-carried value of `repeat N`): such a value exists on every device from the
 * start (the lowering stores a parameter on each device that reads it and copies an input once),
 * so a read on another device needs no Transfer per layer (RoPE tables: 2 x 16.8 MB per layer
 * and device for llama3.1-70b). */
static int static_input(Part *p, const Value *v)
{
	int idx = -1, calls = 0;
	for (int i = 0; i < p->g->nin; i++)
		if (p->g->inputs[i] == v)
			idx = i;
	if (idx < 0)
		return 0;
	for (Graph *g = p->m->graphs; g; g = g->next)
		ir_foreach_node(g, n) {
			if (n->op != OP_Call || n->callee != p->g)
				continue;
			Value *a = idx < n->nin ? n->in[idx] : NULL;
			if (!a || (n->repeat > 1 && idx < p->g->nout) || !(a->kind == V_PARAM ||
			    (a->kind == V_INPUT && g == ir_entry(p->m))))
				return 0;
			calls++;
		}
	return calls > 0;
}

/* The device index layer-graph input v lives on: its call's (p->base), or a replica input's own. */
static int input_dev(const Part *p, const Value *v)
{
	for (int i = 0; i < p->nrepin; i++)
		if (p->repin[i] == v)
			return p->repdev[i];
	return p->base;
}

/* Clears the pass's scratch (aux) on g's nodes, parameters and inputs. */
static void clear_aux(Graph *g)
{
	ir_foreach_node(g, n)
		n->aux = NULL;
	for (int i = 0; i < g->nparams; i++)
		g->params[i]->aux = NULL;
	for (int i = 0; i < g->nin; i++)
		g->inputs[i]->aux = NULL;
}

/* A Transfer for every read of a value on another device (one per value and destination), put
 * right after the value's producer (a graph input's: at the top), not before its first reader:
 * the copy starts as soon as the value exists, and since plan-memory releases a value read on
 * another stream only once every stream is ordered after the reads (targets/devices.c
 * sync_death), a copy issued late kept the source's activations live through everything the
 * source stream ran before it (llama-70B prefill at batch 96 x 2048, TP2: each layer's
 * attention input held on gpu0 through its whole FFN, 82 GB live for 75.6 GB needed). */
static void transfers(Part *p)
{
	for (Node *n = p->g->first; n; n = n->next) {
		if (n->op == OP_Transfer || n->aux == SHARD_SPLIT || !n->annot.device ||
		    ir_op_is_collective(n->op))
			continue;   /* a collective reads input i on member i */
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			const char *from;
			if (v && v->kind == V_INPUT && p->base >= 0 && static_input(p, v))
				continue;
			else if (v && v->kind == V_INPUT && p->base >= 0)
				from = dev_name(p, input_dev(p, v));   /* a layer graph's inputs are on its call's device */
			else if (!v || v->kind != V_NODE || v->def->aux == SHARD_SPLIT || !v->def->annot.device)
				continue;
			else
				from = v->def->annot.device;
			if (!strcmp(from, n->annot.device))
				continue;
			if (v->kind == V_NODE && v->def->op == OP_AllReduce && p->region[v->def->id] &&
			    (p->region[n->id] == 0 || p->regkind[p->region[n->id]] == 'R') &&
			    p->stage[v->def->id] == p->stage[n->id])
				continue;   /* every member of the group holds the sum */
			Node *t = NULL;
			for (Node *q = v->kind == V_NODE ? v->def->next : p->g->first; q && q != n; q = q->next)
				if (q->op == OP_Transfer && q->in[0] == v && !strcmp(q->annot.device, n->annot.device))
					t = q;
			if (!t) {
				char buf[256];
				snprintf(buf, sizeof buf, "%s.to.%s", v->name, n->annot.device);
				const char *name = ir_fresh_name(p->g, buf);
				t = ir_insert_node(p->g, v->kind == V_NODE ? v->def->next : p->g->first, OP_Transfer, &v, 1, &name, 1, n->loc);
				ir_set_attr_str(t, "device", n->annot.device);
				t->annot.device = n->annot.device;
				char why[300];
				snprintf(why, sizeof why, "%s: '%s' is read here and produced on %s (partition)",
					 n->annot.device, v->name, from);
				ir_set_attr_str(t, "placement_reason", why);
				pass_changed(p->c, "transfers inserted");
				char size[64];
				if (ir_type_numel(v->type) < 0)
					snprintf(size, sizeof size, "symbolic size");
				else
					snprintf(size, sizeof size, "%lld bytes", (long long)value_bytes(v));
				pass_remark(p->c, REMARK_APPLIED, p->g, n, "Transfer of '%s' (%s) from %s to %s",
					    v->name, size, from, n->annot.device);
			}
			ir_set_input(n, i, t->out[0]);
		}
	}
	ir_foreach_node(p->g, n)
		if (n->op == OP_AllReduce && p->region[n->id]) {
			char buf[1024];
			size_t o = 0;
			int rg = p->region[n->id];
			for (int k = 0; k < p->regn[rg] && o < sizeof buf - 32; k++)
				o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", k ? "," : "",
						      dev_name(p, p->stage[n->id] * p->width + k));
			ir_set_attr_str(n, "devices", buf);
		}
}

/* ---- memory ---- */

/* The device index named by annotation d ("gpu3"), or -1. */
static int dev_index(Part *p, const char *d)
{
	size_t l = strlen(p->dev->id);
	return d && strncmp(d, p->dev->id, l) == 0 && d[l] >= '0' && d[l] <= '9' ? index_of(p, atol(d + l)) : -1;
}

/* The device index of n: from the placement, or for a node made after it (a Transfer) from
 * its annotation. */
static int devof_node(Part *p, const Node *n)
{
	if (n->id < p->nids)
		return p->devof[n->id];
	int d = dev_index(p, n->annot.device);
	return d < 0 ? 0 : d;
}

/* Whether v is stored as a weight: a parameter, or a shard of one (an unplaced Split). */
static int weight_like(const Value *v)
{
	if (v && v->kind == V_NODE && v->def->op == OP_Split && !v->def->annot.device)
		v = v->def->in[0];
	return v && v->kind == V_PARAM && !(v->init && v->init->inline_lit);
}

/* Adds to w[] the weights a placed layer graph g keeps on each device, times mult (its
 * repetitions); a weight (or shard) read twice on one device is stored once. */
static void layer_weights(Part *p, const Graph *g, int64_t mult, int64_t *w, int ndev)
{
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee) {
			layer_weights(p, n->callee, mult * (n->repeat > 0 ? n->repeat : 1), w, ndev);
			continue;
		}
		int d = dev_index(p, n->annot.device);
		if (d < 0 || d >= ndev)
			continue;
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			int seen = !weight_like(v);
			for (Node *q = g->first; q != n && !seen; q = q->next)
				for (int j = 0; j < q->nin && !seen; j++)
					seen = q->in[j] == v && dev_index(p, q->annot.device) == d;
			for (int j = 0; j < i && !seen; j++)
				seen = n->in[j] == v;
			if (!seen)
				w[d] += mult * weight_bytes(p, n, i);
		}
	}
}

/* Adds to kv[] the KV cache that the attentions of a called graph g read (past key and value
 * inputs, or their per-device shards), on the attention's device, else the call's (d). */
static void layer_kv(Part *p, const Graph *g, int d, int64_t *kv, int ndev, int depth)
{
	ir_foreach_node(g, n) {
		int dn = dev_index(p, n->annot.device);
		if (dn < 0 || dn >= ndev)
			dn = d;
		if (n->op == OP_Call && n->callee && depth < 8) {
			layer_kv(p, n->callee, dn, kv, ndev, depth + 1);
			continue;
		}
		if (n->op != OP_Attention || dn < 0 || dn >= ndev)
			continue;
		for (int i = 4; i < n->nin && i < 6; i++)
			if (n->in[i])
				kv[dn] += value_bytes(n->in[i]);
	}
}

/* Whether operand or result v of call n lives on a device other than d: a tensor-parallel
 * layer's copy of the residual stream on another shard (replicate), passed in by a Transfer
 * there or computed there by the callee. */
static int elsewhere(Part *p, const Node *n, const Value *v, int d)
{
	const Value *src = v;
	if (n->op != OP_Call || !n->callee || v->kind != V_NODE)
		return 0;
	if (v->def == n && v->defidx < n->callee->nout)
		src = n->callee->outputs[v->defidx];
	int k = src->kind == V_NODE && src->def ? dev_index(p, src->def->annot.device) : -1;
	return k >= 0 && k != d;
}

static int check_memory(Part *p, int ndev)
{
	int64_t *w = calloc((size_t)ndev, sizeof *w), *act = calloc((size_t)ndev, sizeof *act),
		*kv = calloc((size_t)ndev, sizeof *kv);
	int errors = 0, symbolic = 0;
	ir_foreach_node(p->g, n) {
		int d = ndev == 1 ? 0 : devof_node(p, n);
		if (d < 0 || d >= ndev || (n->op == OP_Split && !n->annot.device && ndev > 1))
			continue;   /* weight shards count where they are read */
		int64_t wb = 0;
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			int seen = !weight_like(v);   /* a weight (or shard) read twice on one device is stored once */
			for (Node *q = p->g->first; q != n && !seen; q = q->next)
				for (int j = 0; j < q->nin && !seen; j++)
					seen = q->in[j] == v && (ndev == 1 || devof_node(p, q) == d);
			for (int j = 0; j < i && !seen; j++)
				seen = n->in[j] == v;
			if (!seen)
				wb += weight_bytes(p, n, i);
		}
		if (n->op == OP_Call && p->width > 1 && ndev > 1 && n->callee)
			layer_weights(p, n->callee, n->repeat > 0 ? n->repeat : 1, w, ndev);
		else if (n->op == OP_Call)
			wb += node_weights(p, n);
		w[d] += wb;
		int64_t a = 0;
		for (int i = 0; i < n->nout; i++) {
			if (ir_type_numel(n->out[i]->type) < 0)
				symbolic = 1;
			if (!elsewhere(p, n, n->out[i], d))
				a += value_bytes(n->out[i]);
		}
		for (int i = 0; i < n->nin; i++)   /* a weight's shard is counted with the weights */
			if (n->in[i] && n->in[i]->kind != V_PARAM && !weight_like(n->in[i]) && !elsewhere(p, n, n->in[i], d))
				a += value_bytes(n->in[i]);
		if (n->op == OP_Attention)
			for (int i = 4; i < n->nin && i < 6; i++)
				if (n->in[i])
					kv[d] += value_bytes(n->in[i]);
		if (n->op == OP_Call && n->callee)   /* the layers' caches (kv-cache unrolls repeats) */
			layer_kv(p, n->callee, d, kv, ndev, 0);
		if (a > act[d])
			act[d] = a;
	}
	for (int d = 0; d < ndev; d++) {
		int64_t need = w[d] + act[d] + kv[d];
		if ((double)need <= p->cap)
			continue;
		char b[5][32];
		fprintf(stderr, "aicc: error: partition: the model does not fit on %s of machine %s: it needs %s "
			"(weights %s + activations %s%s + KV cache %s) but %s has %s%s\n",
			dev_name(p, d), p->c->machine->name, rt_si_str((double)need, "B", b[0], sizeof b[0]),
			rt_si_str((double)w[d], "B", b[1], sizeof b[1]), rt_si_str((double)act[d], "B", b[2], sizeof b[2]),
			symbolic ? " (symbolic shapes not counted; --bind them)" : "", rt_si_str((double)kv[d], "B", b[3], sizeof b[3]),
			p->capname, rt_si_str(p->cap, "B", b[4], sizeof b[4]),
			ndev == 1 ? "; a machine with more devices and --tp/--pp would spread it" : "");
		errors++;
	}
	free(w);
	free(act);
	free(kv);
	return errors;
}

/* ---- replicated norms and elementwise ops (Megatron-style) ---- */

/* Whether n may run on every device of a tensor-parallel group: a norm or an elementwise op
 * (not Dropout: its mask is drawn), with one used result. */
static int replicable_op(const Node *n)
{
	if (n->nout < 1 || n->op == OP_Dropout || n->annot.device)
		return 0;
	for (int i = 1; i < n->nout; i++)
		if (n->out[i]->nuses || pass_is_output(n->out[i]))
			return 0;
	if (n->op == OP_RMSNormalization || n->op == OP_LayerNormalization)
		return 1;
	return (ir_ops[n->op].flags & F_ELEM) && n->nout == 1;
}

/* Whether operand v is held by every device of the group without a copy (ok[]: the values found
 * so): a vector or inline parameter (a norm's weight, a bias: stored on each device that reads
 * it), a value ok[] marks. */
static int rep_held(const Value *v, const unsigned char *ok)
{
	if (!v)
		return 1;
	if (v->kind == V_PARAM)
		return v->type.rank <= 1 || (v->init && v->init->inline_lit);
	return ok[v->id];
}

/* The shard (0..) of a tensor-parallel node from its region code (Node.aux), or -1. */
static int aux_shard(const Node *n)
{
	intptr_t a = (intptr_t)n->aux;
	return n->aux == SHARD_SPLIT || n->aux == OUTPUT_CONCAT || a <= 0 ? -1 : (int)(a % SHARDS) - 1;
}

/* Names node n's result as copy 0 of a replicated op ("h" -> "h.tp0.N", as split_region names a
 * shard), so explain and the pictures group it with its copies. */
static void rename_copy0(Graph *g, Node *n)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s.tp0", n->out[0]->name);
	n->out[0]->name = ir_fresh_name(g, buf);
}

/* Shard k's copy of call argument a in the entry graph e: the replica a previous call made
 * (r[]: pairs of a value and its copies), else a Transfer of a to device dk (one per value and
 * device). */
static Value *rep_of(const Reps *r, const Value *a, int dk)
{
	for (int i = 0; r && i < r->n; i++)
		if (r->from[i] == a && r->dev[i] == dk)
			return r->to[i];
	return NULL;
}

static void rep_add(Reps *r, Value *a, Value *c, int dk)
{
	if (!r)
		return;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->from = realloc(r->from, (size_t)r->cap * sizeof *r->from);
		r->to = realloc(r->to, (size_t)r->cap * sizeof *r->to);
		r->dev = realloc(r->dev, (size_t)r->cap * sizeof *r->dev);
		if (!r->from || !r->to || !r->dev)
			abort();
	}
	r->from[r->n] = a;
	r->dev[r->n] = dk;
	r->to[r->n++] = c;
}

static Value *arg_copy(Part *p, Graph *e, Value *a, int dk)
{
	const char *dn = dev_name(p, dk);
	Value *c = rep_of(p->reps, a, dk);
	if (c)
		return c;
	if (a->kind == V_NODE && a->def->op == OP_Transfer && a->def->in[0]->kind == V_NODE) {
		/* the hand-over from the previous pipeline stage: shard k's copy there, sent to shard k
		 * here side by side, not through this stage's first device */
		Value *u = a->def->in[0];
		int ub = dev_index(p, u->def->annot.device);
		Value *ur = ub >= 0 ? rep_of(p->reps, u, ub - ub % p->width + dk % p->width) : NULL;
		if (ur && ur != a)
			a = ur;
	}
	ir_foreach_node(e, q)
		if (q->op == OP_Transfer && q->in[0] == a && q->annot.device && !strcmp(q->annot.device, dn))
			return q->out[0];
	char buf[256];
	snprintf(buf, sizeof buf, "%s.to.%s", a->name, dn);
	const char *name = ir_fresh_name(e, buf);
	Node *t = ir_insert_node(e, a->kind == V_NODE ? a->def->next : e->first, OP_Transfer, &a, 1, &name, 1,
				 a->kind == V_NODE ? a->def->loc : a->loc);
	ir_set_attr_str(t, "device", dn);
	t->annot.device = dn;
	const char *src = a->kind == V_NODE && a->def->annot.device ? a->def->annot.device : dev_name(p, 0);
	for (int i = 0; p->reps && i < p->reps->n; i++)
		if (p->reps->to[i] == a)
			src = dev_name(p, p->reps->dev[i]);   /* a call's copy lives on its shard's device */
	char why[400];
	snprintf(why, sizeof why, "%s: '%s' is produced on %s and read by the copies of the replicated norms "
		 "of the layers called here, once for every repetition (partition)", dn, a->name, src);
	ir_set_attr_str(t, "placement_reason", why);
	pass_changed(p->c, "transfers inserted");
	return t->out[0];
}

/* Tensor-parallel layer graph g (stage base p->base of width w): every norm and elementwise op
 * whose operands each device of the group holds (an AllReduce's sum, a vector parameter, an
 * input that is the same everywhere, another such op) and whose result a shard on another
 * device reads runs on every device, as Megatron-LM runs its LayerNorms and residual Adds,
 * instead of on the first device with its result copied to the others (405B TP8 prefill: 2
 * copies of [S, D] a layer on the critical path, 2.5 ms a step).  The residual stream a
 * `repeat N` carries gets a copy per device: input j and output j (the carried hidden state)
 * get one more pair per device, j-major after the first nout, and every call of g in the entry
 * graph e passes shard k's copy (the previous call's, else one Transfer for all repetitions).
 * The copies carry region code 'R' (place: device base + k).  Returns the ops replicated. */
static int replicate(Part *p, Graph *e)
{
	Graph *g = p->g;
	int w = p->width, nv = g->nvalues, nout0 = g->nout, nin0 = g->nin, ncalls = 0;
	if (w < 2 || p->base < 0 || !p->nreg || (p->c->phase && !strcmp(p->c->phase, "train")))
		return 0;
	for (int r = 1; r <= p->nreg; r++)
		if (p->regn[r] != w)
			return 0;   /* a group narrower than the stage (--tp 2 --ep 4): its sums are not everywhere */
	for (const Graph *h = p->m->graphs; h; h = h->next)
		ir_foreach_node(h, n)
			if (n->op == OP_Call && n->callee == g) {
				if (h != e)
					return 0;   /* a layer graph called from a layer graph: its callers not rebuilt */
				ncalls++;
			}
	if (!ncalls || nout0 > nin0)
		return 0;
	unsigned char *ok = calloc((size_t)nv + 1, 1), *need = calloc((size_t)nv + 1, 1),
		      *cand = calloc((size_t)nout0 + 1, 1), *isst = calloc((size_t)nin0 + 1, 1);
	Value **map = calloc(((size_t)nv + 1) * (size_t)w, sizeof *map);
	if (!ok || !need || !cand || !isst || !map) {
		free(ok), free(need), free(cand), free(isst), free(map);
		return 0;
	}
	for (int i = 0; i < nin0; i++)
		isst[i] = static_input(p, g->inputs[i]);
	for (int j = 0; j < nout0; j++)   /* carried: its output computed by replicable ops */
		cand[j] = !isst[j] && g->outputs[j]->kind == V_NODE && g->outputs[j]->type.dt == g->inputs[j]->type.dt;
	/* ok[]: held by every device, with the carried candidates assumed held, until every carried
	 * candidate's output is held itself */
	for (int changed = 1; changed; ) {
		memset(ok, 0, (size_t)nv + 1);
		for (int i = 0; i < nin0; i++)
			ok[g->inputs[i]->id] = isst[i] || (i < nout0 && cand[i]);
		ir_foreach_node(g, n) {
			int held = n->op == OP_AllReduce && aux_shard(n) >= 0;
			if (!held && !n->aux && replicable_op(n)) {
				held = 1;
				for (int i = 0; i < n->nin && held; i++)
					held = rep_held(n->in[i], ok);
			}
			if (held)
				ok[n->out[0]->id] = 1;
		}
		changed = 0;
		for (int j = 0; j < nout0; j++)
			if (cand[j] && !ok[g->outputs[j]->id])
				cand[j] = 0, changed = 1;
	}
	/* need[]: read by a shard on another device, or by a needed op; a needed carried input needs
	 * its output */
	ir_foreach_node(g, n)
		if (aux_shard(n) > 0 && n->op != OP_AllReduce)
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] && n->in[i]->kind != V_PARAM && ok[n->in[i]->id])
					need[n->in[i]->id] = 1;
	for (int changed = 1; changed; ) {
		changed = 0;
		for (Node *n = g->last; n; n = n->prev)
			if (!n->aux && need[n->out[0]->id])
				for (int i = 0; i < n->nin; i++)
					if (n->in[i] && n->in[i]->kind != V_PARAM && ok[n->in[i]->id] && !need[n->in[i]->id])
						need[n->in[i]->id] = 1, changed = 1;
		for (int j = 0; j < nout0; j++)
			if (cand[j] && need[g->inputs[j]->id] && !need[g->outputs[j]->id])
				need[g->outputs[j]->id] = 1, changed = 1;
	}
	for (int i = 0; i < nin0; i++)   /* a held input that is not carried is the same everywhere */
		if (need[g->inputs[i]->id] && (isst[i] || i >= nout0 || !cand[i]))
			need[g->inputs[i]->id] = 0;
	int nrep = 0, npairs = 0, rid = 0;
	ir_foreach_node(g, n)
		nrep += !n->aux && need[n->out[0]->id];
	for (int j = 0; j < nout0; j++)
		npairs += cand[j] && need[g->inputs[j]->id];
	if (nrep && !(rid = new_region(p, 'R', w)))
		nrep = 0;
	if (!nrep) {
		free(ok), free(need), free(cand), free(isst), free(map);
		return 0;
	}
	/* the carried copies: input j.tpk (on device base + k), output: its op's copy k */
	p->nrepin = npairs * (w - 1);
	p->repin = arena_alloc(p->m->arena, (size_t)(p->nrepin + 1) * sizeof *p->repin);
	p->repdev = arena_alloc(p->m->arena, (size_t)(p->nrepin + 1) * sizeof *p->repdev);
	int r = 0;
	for (int j = 0; j < nout0; j++)
		for (int k = 1; k < w && cand[j] && need[g->inputs[j]->id]; k++) {
			Value *x = g->inputs[j];
			char buf[256];
			snprintf(buf, sizeof buf, "%s.tp%d", x->name, k);
			Value *c = ir_add_input(g, ir_fresh_name(g, buf), x->type, x->loc);
			map[(size_t)x->id * (size_t)w + (size_t)k] = c;
			p->repin[r] = c;
			p->repdev[r++] = p->base + k;
		}
	/* the ops' copies, each right after its op */
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		if (n->aux || !need[n->out[0]->id])
			continue;
		n->aux = (void *)(intptr_t)(rid * SHARDS + 1);
		for (int k = 1; k < w; k++) {
			Value *in[16];
			int nin = n->nin < 16 ? n->nin : 16;
			for (int i = 0; i < nin; i++) {
				Value *v = n->in[i];
				Value *c = v && v->kind != V_PARAM ? map[(size_t)v->id * (size_t)w + (size_t)k] : NULL;
				in[i] = c ? c : v;
			}
			const char *names[4];
			int nout = n->nout < 4 ? n->nout : 4;
			for (int i = 0; i < nout; i++) {
				char buf[256];
				snprintf(buf, sizeof buf, "%s.tp%d", n->out[i]->name, k);
				names[i] = ir_fresh_name(g, buf);
			}
			Node *c = ir_insert_node(g, next, n->op, in, nin, names, nout, n->loc);
			for (int a = 0; a < n->attrs.n; a++)
				ir_set_attr(c, &n->attrs.a[a]);
			c->annot.precision = n->annot.precision;
			c->annot.nofuse = n->annot.nofuse;
			c->aux = (void *)(intptr_t)(rid * SHARDS + k + 1);
			map[(size_t)n->out[0]->id * (size_t)w + (size_t)k] = c->out[0];
		}
		rename_copy0(g, n);
	}
	/* the shards on device k read copy k */
	ir_foreach_node(g, n) {
		int k = aux_shard(n);
		if (k <= 0 || n->op == OP_AllReduce || (intptr_t)n->aux / SHARDS == rid)
			continue;
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i], *c = v && v->kind != V_PARAM && need[v->id] ? map[(size_t)v->id * (size_t)w + (size_t)k] : NULL;
			if (c)
				ir_set_input(n, i, c);
		}
	}
	/* the carried copies as outputs, paired with their inputs: both after the first nout0 */
	if (npairs) {
		Value **ins = arena_alloc(p->m->arena, (size_t)g->nin * sizeof *ins);
		int o = 0;
		for (int i = 0; i < nout0; i++)
			ins[o++] = g->inputs[i];
		for (int i = nin0; i < g->nin; i++)
			ins[o++] = g->inputs[i];
		for (int i = nout0; i < nin0; i++)
			ins[o++] = g->inputs[i];
		memcpy(g->inputs, ins, (size_t)g->nin * sizeof *ins);
		Type *decl = g->out_decl ? arena_alloc(p->m->arena, (size_t)(nout0 + p->nrepin) * sizeof *decl) : NULL;
		for (int j = 0; j < nout0; j++) {
			if (decl)
				decl[j] = g->out_decl[j];
			for (int k = 1; k < w && cand[j] && need[g->inputs[j]->id]; k++)
				ir_add_output(g, map[(size_t)g->outputs[j]->id * (size_t)w + (size_t)k]);
		}
		for (int j = 0, q = nout0; decl && j < nout0; j++)
			for (int k = 1; k < w && cand[j] && need[g->inputs[j]->id]; k++)
				decl[q++] = g->out_decl[j];
		g->out_decl = decl;
		/* every call: shard k's copy of each carried argument, and the copies it returns (the
		 * call's outputs are placed with it: the copies say where they live by their producer) */
		for (Node *c = e->first, *next; c; c = next) {
			next = c->next;
			if (c->op != OP_Call || c->callee != g || c->nin != nin0 || c->nout != nout0)
				continue;
			Value **a = arena_alloc(p->m->arena, (size_t)g->nin * sizeof *a);
			const char **names = arena_alloc(p->m->arena, (size_t)g->nout * sizeof *names);
			int q = 0, ro = nout0;
			for (int i = 0; i < nout0; i++)
				a[q++] = c->in[i], names[i] = c->out[i]->name;
			for (int j = 0; j < nout0; j++)
				for (int k = 1; k < w && cand[j] && need[g->inputs[j]->id]; k++) {
					a[q++] = arg_copy(p, e, c->in[j], p->base + k);
					char buf[256];
					snprintf(buf, sizeof buf, "%s.tp%d", c->out[j]->name, k);
					names[ro++] = ir_fresh_name(e, buf);
				}
			for (int i = nout0; i < nin0; i++)
				a[q++] = c->in[i];
			Node *nc = ir_insert_node(e, c, OP_Call, a, q, names, ro, c->loc);
			nc->callee = g;
			nc->repeat = c->repeat;
			nc->annot = c->annot;
			for (int i = 0; i < c->attrs.n; i++)
				ir_set_attr(nc, &c->attrs.a[i]);
			for (int i = 0; i < nout0; i++)
				ir_replace_uses(e, c->out[i], nc->out[i]);
			ir_remove_node(e, c);
			ro = nout0;
			for (int j = 0; j < nout0; j++)
				for (int k = 1; k < w && cand[j] && need[g->inputs[j]->id]; k++, ro++)
					rep_add(p->reps, nc->out[j], nc->out[ro], p->base + k);
		}
	}
	pass_stat(p->c, "ops replicated per tensor-parallel device", nrep);
	pass_changed(p->c, "replicated ops");
	free(ok), free(need), free(cand), free(isst), free(map);
	return nrep;
}

/* The entry graph after its layers are replicated (replicate): a Transfer of a norm's or an
 * elementwise op's result to a device where each of its operands has a copy (a call's carried
 * output, an earlier such op) or is a vector parameter becomes the op run there (the final norm
 * before a vocab-parallel lm_head: one copy of [S, D] to every shard, on the critical path).
 * Returns the ops replicated. */
static int replicate_entry(Part *p)
{
	int k = 0;
	if (!p->reps || !p->reps->n)
		return 0;
	for (Node *t = p->g->first, *next; t; t = next) {
		next = t->next;
		Value *v = t->op == OP_Transfer ? t->in[0] : NULL;
		int dk = t->op == OP_Transfer ? dev_index(p, t->annot.device) : -1;
		Node *n = v && v->kind == V_NODE ? v->def : NULL;
		if (!n || dk < 0 || n->op == OP_Transfer || !n->annot.device || rt_attr_str(&n->attrs, "shard", NULL) ||
		    (n->id < p->nids && p->region[n->id]))
			continue;
		Node probe = *n;
		probe.annot.device = NULL;   /* placed by this pass, not pinned */
		if (!replicable_op(&probe) || (n->id < p->nids && p->devof[n->id] != dk - dk % p->width))
			continue;   /* on the first device of the Transfer's stage only */
		Value *in[16];
		int nin = n->nin < 16 ? n->nin : 16, ok = n->nin <= 16;
		for (int i = 0; i < nin && ok; i++) {
			Value *u = n->in[i];
			in[i] = !u || (u->kind == V_PARAM && rep_held(u, NULL)) ? u : rep_of(p->reps, u, dk);
			ok = !u || in[i];
		}
		if (!ok)
			continue;
		const char *names[4];
		int nout = n->nout < 4 ? n->nout : 4;
		for (int i = 0; i < nout; i++) {
			char buf[256], *t0;
			snprintf(buf, sizeof buf, "%s", n->out[i]->name);
			if ((t0 = strstr(buf, ".tp0.")))   /* renamed copy 0 (rename_copy0) */
				*t0 = '\0';
			snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ".tp%d", dk % p->width);
			names[i] = ir_fresh_name(p->g, buf);
		}
		Node *c = ir_insert_node(p->g, t, n->op, in, nin, names, nout, n->loc);
		for (int a = 0; a < n->attrs.n; a++)
			ir_set_attr(c, &n->attrs.a[a]);
		c->annot = n->annot;
		c->annot.device = t->annot.device;
		char why[400];
		snprintf(why, sizeof why, "%s: replicated on each device that reads it (copy %d; a norm or elementwise "
			 "op of values every device holds, recomputed there instead of copied, as Megatron-LM does) "
			 "(partition)", c->annot.device, dk % p->width);
		ir_set_attr_str(c, "placement_reason", why);
		pass_remark(p->c, REMARK_APPLIED, p->g, n, "%s '%s' recomputed on %s instead of copied there",
			    ir_ops[n->op].name, pass_node_name(n), c->annot.device);
		ir_replace_uses(p->g, t->out[0], c->out[0]);
		ir_remove_node(p->g, t);
		if (!strstr(v->name, ".tp0."))
			rename_copy0(p->g, n);
		rep_add(p->reps, v, c->out[0], dk);
		k++;
	}
	if (k)
		pass_changed(p->c, "replicated ops");
	return k;
}

/* ---- layer graphs: one instance per pipeline stage ---- */

/* The instance of layer graph orig for pipeline stage s ("<orig>.stage<s>"), made on first use
 * with the graphs it calls instantiated for the same stage. */
static Graph *instantiate(Part *p, Graph *orig, int s)
{
	for (int i = 0; i < p->ninsts; i++)
		if (p->insts[i].orig == orig && p->insts[i].stage == s)
			return p->insts[i].clone;
	if (p->ninsts == p->capinsts) {
		p->capinsts = p->capinsts ? 2 * p->capinsts : 8;
		p->insts = realloc(p->insts, (size_t)p->capinsts * sizeof *p->insts);
		if (!p->insts)
			abort();
	}
	char name[256];
	snprintf(name, sizeof name, "%s.stage%d", orig->name, s);
	Graph *g = pass_clone_graph(p->m, orig, ir_graph_find(p->m, name) ? ir_fresh_name(p->g, name) : name, p->g);
	p->insts[p->ninsts++] = (Inst){ orig, g, s };
	ir_foreach_node(g, n)
		if (n->op == OP_Call && n->callee)
			n->callee = instantiate(p, n->callee, s);
	return g;
}

/* Splits and places one layer-graph instance on the devices of its stage; returns its regions. */
static int place_layer(Part *p, Graph *g, int s)
{
	Part q = *p;
	q.g = g;
	q.base = s * p->width;
	q.nreg = 0;
	q.nrepin = 0;
	clear_aux(g);
	int nreg = tensor_parallel(&q) + expert_parallel(&q);
	replicate(&q, p->g);
	if (ir_topo_sort(g) < 0 || ir_topo_sort(p->g) < 0 || ir_infer_shapes(p->m) || grow(&q) < 0) {
		free(q.stage), free(q.devof), free(q.region), free(q.shard);
		return -1;
	}
	place(&q);
	transfers(&q);
	clear_aux(g);
	free(q.stage), free(q.devof), free(q.region), free(q.shard);
	return nreg;
}

/* Whether some graph of m calls g. */
static int is_called(const Module *m, const Graph *g)
{
	for (const Graph *h = m->graphs; h; h = h->next)
		ir_foreach_node(h, n)
			if (n->op == OP_Call && n->callee == g)
				return 1;
	return 0;
}

/* Gives every call of the (placed) entry graph the instance of its callee for its stage, splits
 * and places the instances, and drops the layer graphs no call reaches any more. */
static int place_layers(Part *p)
{
	int nreg = 0;
	ir_foreach_node(p->g, n)
		if (n->op == OP_Call && n->callee) {
			int d = dev_index(p, n->annot.device);
			n->callee = instantiate(p, n->callee, (d < 0 ? 0 : d) / p->width);
		}
	if (ir_infer_shapes(p->m))
		return -1;
	for (int i = 0; i < p->ninsts; i++) {
		int k = place_layer(p, p->insts[i].clone, p->insts[i].stage);
		if (k < 0)
			return -1;
		nreg += k;
	}
	for (int removed = 1; removed; ) {   /* until no dropped graph was the last caller of another */
		removed = 0;
		for (int i = 0; i < p->ninsts; i++) {
			Graph *o = p->insts[i].orig, **pp = &p->m->graphs;
			while (*pp && *pp != o)
				pp = &(*pp)->next;
			if (!*pp || is_called(p->m, o))
				continue;
			*pp = o->next;
			removed++;
			if (p->m->last_graph == o)
				for (p->m->last_graph = p->m->graphs; p->m->last_graph && p->m->last_graph->next; )
					p->m->last_graph = p->m->last_graph->next;
		}
	}
	return nreg;
}

/* --compress-collectives: every AllReduce of every graph gets {compress} = c->compress, with a
 * remark giving its wire bytes and the error it introduces (rt_codec_error: relative to the
 * range of a block of its payload).  Returns how many it marked. */
static int compress_collectives(Module *m, PassCtx *c)
{
	RtCodec codec;
	char why[160];
	int k = 0;
	if (!c->compress || rt_codec_parse(c->compress, &codec, why, sizeof why) < 0)
		return 0;
	for (Graph *g = m->graphs; g; g = g->next)
		ir_foreach_node(g, n) {
			if (n->op != OP_AllReduce || rt_attr_str(&n->attrs, "compress", NULL))
				continue;
			ir_set_attr_str(n, "compress", c->compress);
			pass_changed(c, "collectives compressed");
			k++;
			double worst, rms;
			rt_codec_error(&codec, n->nin, &worst, &rms);
			int64_t el = ir_type_numel(n->out[0]->type), raw = el >= 0 ? value_bytes(n->out[0]) : -1;
			if (el > 0 && raw > 0)
				pass_remark(c, REMARK_APPLIED, g, n, "AllReduce over %d devices compressed as %s: %lld wire "
					    "bytes for %lld (%.2fx fewer); error per element at most %.3g, rms %.3g of its "
					    "block's range ((p+1)/(2(2^%d-1)), sqrt((p+1)/12)/(2^%d-1), p = %d)", n->nin,
					    c->compress, (long long)rt_codec_bytes(&codec, el), (long long)raw,
					    (double)raw / (double)rt_codec_bytes(&codec, el), worst, rms, codec.bits,
					    codec.bits, n->nin);
			else
				pass_remark(c, REMARK_APPLIED, g, n, "AllReduce over %d devices compressed as %s; error "
					    "per element at most %.3g, rms %.3g of its block's range", n->nin, c->compress,
					    worst, rms);
		}
	return k;
}

/* ---- the -O1 choice of --tp and --pp (PassCtx.partition_auto) ---- */

/* What the choice needs from the graph: the bytes an attention layer writes (the hidden state
 * a pipeline stage hands over), the KV cache they read, and whether tp devices can split every
 * attention by whole heads. */
typedef struct AutoFacts {
	double hidden_bytes, kv_bytes;
	int64_t heads_gcd;   /* gcd of every attention's query and KV head counts; 0: none */
} AutoFacts;

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b, b = t;
	}
	return a;
}

static void auto_facts(const Graph *g, int64_t mult, AutoFacts *f, int depth)
{
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee && depth < 16) {
			auto_facts(n->callee, mult * (n->repeat > 0 ? n->repeat : 1), f, depth + 1);
			continue;
		}
		if (n->op != OP_Attention || n->nout < 1)
			continue;
		int64_t qh = rt_attr_int(&n->attrs, "q_num_heads", 0), kvh = rt_attr_int(&n->attrs, "kv_num_heads", 0);
		f->hidden_bytes = fmax(f->hidden_bytes, (double)value_bytes(n->out[0]));
		for (int i = 4; i < n->nin && i < 6; i++)
			if (n->in[i])
				f->kv_bytes += (double)mult * (double)value_bytes(n->in[i]);
		f->heads_gcd = gcd64(gcd64(f->heads_gcd, qh > 0 ? qh : 1), kvh > 0 ? kvh : 1);
	}
}

/* Predicted seconds of one step of graph g (mult times; a Call: its callee x its repeat) on tp
 * devices, laid out as tensor_parallel lays it out: a MatMul of a 2-D weight reading a
 * replicated value is column-split (its result sharded), one reading a sharded value row-split
 * (its partial products all-reduced, the result replicated), any other node reading a sharded
 * value is split with it (RotaryEmbedding, Attention by heads, SwiGLU), norms and elementwise ops
 * of values every device holds (the sums, the inputs) run on every device (replicate), and the
 * rest (the embedding) run whole on the stage's first device, which copies each result a shard
 * reads to the others (one link time: the copies run side by side).
 * Every node is priced as the lowering prices its kernel (TgtWork.tiles 2: the GPU tile search,
 * the fused attention, the memory-bound kernel with its launch) and an all-reduce as the timing
 * engine's ring plus the library's cost per call, so the estimate is the plan's latency up to
 * the fusions that follow (newcomer finding 4: the roofline gave 31 ms for a 44.7 ms plan). */
static double auto_graph_time(Part *p, const Graph *g, int tp, double mult, int depth)
{
	int nv = g->nvalues;
	/* [id]: sharded; [nv + id]: copied to the shards; [2 nv + id]: held by every device (an
	 * all-reduced sum, an input, a replicated norm or elementwise op of such values: replicate) */
	unsigned char *sh = calloc((size_t)nv + 1, 3), *all = sh ? sh + 2 * nv : NULL;
	if (!sh)
		return INFINITY;
	for (int i = 0; i < g->nin; i++)
		if (g->inputs[i]->id < nv)
			all[g->inputs[i]->id] = 1;
	double t = 0;
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee && depth < 16) {
			t += auto_graph_time(p, n->callee, tp, mult * (double)(n->repeat > 0 ? n->repeat : 1), depth + 1);
			continue;
		}
		int in_sh = 0;
		for (int i = 0; i < n->nin; i++)
			in_sh |= n->in[i] && n->in[i]->id < nv && sh[n->in[i]->id];
		int mm = tp > 1 && n->op == OP_MatMul && n->nin >= 2 && weight_2d(n->in[1]), shard = mm || in_sh;
		TgtWork w = { .node = n, .fmt = DT_INVALID, .chips = shard ? tp : 1, .tiles = 2 };
		double s = pass_work_time(p->c, p->dev, &w);
		for (int i = 0; shard && i < n->nin; i++) {
			Value *v = n->in[i];
			if (v && v->kind == V_NODE && v->id < nv && !sh[v->id] && !sh[nv + v->id] && !all[v->id]) {
				TgtWork c = { .fmt = DT_INVALID, .bytes = (double)value_bytes(v), .to = p->dev };
				sh[nv + v->id] = 1;
				s += pass_work_time(p->c, p->dev, &c);
			}
		}
		int held = !shard && replicable_op(n);
		for (int i = 0; i < n->nin && held; i++)
			held = !n->in[i] || (n->in[i]->kind == V_PARAM ? rep_held(n->in[i], NULL) : n->in[i]->id < nv && all[n->in[i]->id]);
		if (held || (mm && in_sh))
			all[n->out[0]->id] = n->out[0]->id < nv;
		if (mm && in_sh) {
			TgtWork r = { .fmt = DT_INVALID, .chips = tp, .reduce = (double)value_bytes(n->out[0]), .tiles = 2 };
			s += pass_work_time(p->c, p->dev, &r);
		} else if (shard)
			for (int i = 0; i < n->nout; i++)
				if (n->out[i] && n->out[i]->id < nv)
					sh[n->out[i]->id] = 1;
		t += mult * s;
	}
	free(sh);
	return t;
}

/* Predicted seconds of one step of the graph over tp x pp devices (auto_graph_time) with the
 * pp - 1 hand-overs of the hidden state between stages. */
static double auto_time(Part *p, const AutoFacts *f, int tp, int pp)
{
	double t = auto_graph_time(p, p->g, tp, 1, 0);
	if (pp > 1) {
		TgtWork w = { .fmt = DT_INVALID, .bytes = f->hidden_bytes, .to = p->dev };
		t += (pp - 1) * pass_work_time(p->c, p->dev, &w);
	}
	return t;
}

/* Whether tp devices can split every attention by whole heads: tp divides the gcd of the head
 * counts (any tp when none is known, a power of two: the MLPs' widths are). */
static int tp_divides(const AutoFacts *f, int tp)
{
	return f->heads_gcd > 0 ? f->heads_gcd % tp == 0 : (tp & (tp - 1)) == 0;
}

/* The shapes that fit: for every tp of 1..ndev that splits the heads (tp_divides), the fewest pp
 * stages whose memory takes `need` bytes (90 % of each device, as --pp's default), priced by
 * auto_time; a shape needing more devices than p->ndev (tp 8 x pp 4 on 28 survivors: pp cannot
 * be 3.5) is listed as not fitting.  The list goes to tried (n bytes), the fastest (ties: fewer
 * devices) to *btp, *bpp; returns 0, or -1 when no shape fits. */
static int auto_search(Part *p, const AutoFacts *f, double need, char *tried, size_t n, int *btp, int *bpp)
{
	double room = p->cap * 0.9, best = 0;
	size_t k = 0;
	*btp = *bpp = 0;
	tried[0] = '\0';
	for (int tp = 1; tp <= (p->phys ? p->limit : p->ndev); tp++) {   /* past the survivors: said not to fit */
		if (!tp_divides(f, tp))
			continue;
		int pp = (int)ceil(need / (room * tp));
		if (pp < 1)
			pp = 1;
		if ((int64_t)tp * pp > p->ndev) {
			if (k < n)
				k += (size_t)snprintf(tried + k, n - k, "%stp %d x pp %d: %d devices, %d available", k ? "; " : "",
						      tp, pp, tp * pp, p->ndev);
			continue;
		}
		double t = auto_time(p, f, tp, pp);
		if (k < n)
			k += (size_t)snprintf(tried + k, n - k, "%stp %d x pp %d: %.3g ms", k ? "; " : "", tp, pp, t * 1e3);
		if (!*btp || t < best * (1 - 1e-9)) {
			best = t;
			*btp = tp;
			*bpp = pp;
		}
	}
	return *btp ? 0 : -1;
}

/* Prints remark fmt whatever --remarks selects (the user did not ask for the choice it reports). */
#define SAY(p, ...) do { unsigned mask_ = (p)->c->remark_mask; (p)->c->remark_mask = ~0u; \
		pass_remark((p)->c, REMARK_ANALYSIS, (p)->g, NULL, __VA_ARGS__); (p)->c->remark_mask = mask_; } while (0)

/* " (--devices 32, --exclude-devices gpu3,gpu17)" for remarks and errors, or "". */
static const char *survivors_text(const Part *p, char *buf, size_t n)
{
	buf[0] = '\0';
	if (!p->phys)
		return buf;
	size_t k = (size_t)snprintf(buf, n, " (");
	if (p->c->devices && k < n)
		k += (size_t)snprintf(buf + k, n - k, "--devices %d%s", p->c->devices, p->c->exclude ? ", " : "");
	if (p->c->exclude && k < n)
		k += (size_t)snprintf(buf + k, n - k, "--exclude-devices %s", p->c->exclude);
	if (k < n)
		snprintf(buf + k, n - k, ")");
	return buf;
}

/* -O1 on a machine of several devices without --tp/--pp/--ep: nothing when the weights and the
 * KV cache fit one device (90 % of its memory, as --pp's default); otherwise the fastest shape
 * of auto_search, said in a remark printed whatever --remarks selects.  Returns 0 to partition
 * with p->tp and p->pp, 1 to leave the graph on one device, -1 when no choice fits (reported
 * here, once for the machine). */
static int auto_choose(Part *p, int64_t weights)
{
	AutoFacts f = { 0 };
	auto_facts(p->g, 1, &f, 0);
	double need = (double)weights + f.kv_bytes, room = p->cap * 0.9;
	char tried[768], sv[400];
	if (need <= room)
		return 1;
	int best_tp, best_pp;
	if (auto_search(p, &f, need, tried, sizeof tried, &best_tp, &best_pp) < 0) {   /* one line, not one per device */
		fprintf(stderr, "aicc: error: partition: the model (%.4g GB of weights and KV cache) does not fit machine %s%s "
			"at any --tp/--pp: its %d %s devices hold %.4g GB (90%% of %.4g GB of %s each); use a smaller weight "
			"format (--precision fp8 halves bf16's weights) or a machine with more memory (aicc machines)\n",
			need / 1e9, p->c->machine->name, survivors_text(p, sv, sizeof sv), p->ndev, p->dev->id,
			p->ndev * room / 1e9, p->cap / 1e9, p->capname);
		return -1;
	}
	p->tp = best_tp;
	p->pp = best_pp;
	p->width = best_tp;
	char of[480] = "";
	if (p->phys)
		snprintf(of, sizeof of, " (%d devices of the %d surviving%s)", best_tp * best_pp, p->ndev,
			 survivors_text(p, sv, sizeof sv));
	SAY(p, "the model (%.4g GB of weights and KV cache) does not fit one %s (%.4g GB); chose --tp %d --pp %d%s "
	    "by the cost model's step time (%s); give --tp/--pp to choose",
	    need / 1e9, p->dev->id, p->cap / 1e9, best_tp, best_pp, of, tried);
	return 0;
}

/* --devices N and --exclude-devices a,b: p->phys, p->ndev and p->limit for the survivors.  Each
 * excluded name must be one of the considered instances ("gpu3"; did-you-mean otherwise); at
 * least one must survive.  Returns 0, or 1 after an error. */
static int survivors(Part *p, int count)
{
	const PassCtx *c = p->c;
	const char *mname = c->machine->name, *id = p->dev->id;
	p->limit = count;
	if (!c->devices && !c->exclude)
		return 0;
	if (c->devices > count) {
		fprintf(stderr, "aicc: error: partition: --devices %d: machine %s has %d %s device(s) (%s0..%s%d)\n",
			c->devices, mname, count, id, id, id, count - 1);
		return 1;
	}
	p->limit = c->devices ? c->devices : count;
	char *out = calloc((size_t)p->limit, 1);
	p->phys = malloc((size_t)p->limit * sizeof *p->phys);
	if (!out || !p->phys) {
		free(out);
		return 1;
	}
	int err = 0;
	for (const char *q = c->exclude; q && *q && !err; q = strchr(q, ',') ? strchr(q, ',') + 1 : NULL) {
		size_t len = strcspn(q, ","), l = strlen(id);
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), q);
		long k = -1;
		if (len > l && strncmp(name, id, l) == 0 && strspn(name + l, "0123456789") == strlen(name + l) && len - l < 8)
			k = atol(name + l);
		if (k >= 0 && k < p->limit) {
			out[k] = 1;
			continue;
		}
		if (k >= p->limit && k < count)
			fprintf(stderr, "aicc: error: partition: --exclude-devices: '%s' is not among the %d device(s) "
				"--devices %d takes (%s0..%s%d)\n", name, p->limit, p->limit, id, id, p->limit - 1);
		else {
			/* the nearest of the instance names */
			char near[80] = "", (*nb)[24] = malloc((size_t)p->limit * sizeof *nb);
			const char **cand = malloc((size_t)p->limit * sizeof *cand);
			const char *best = NULL;
			if (nb && cand) {
				for (int j = 0; j < p->limit; j++) {
					snprintf(nb[j], sizeof nb[j], "%s%d", id, j);
					cand[j] = nb[j];
				}
				best = diag_nearest(name, cand, p->limit);
			}
			if (best)
				snprintf(near, sizeof near, "did you mean '%s'?; ", best);
			free(nb);
			free(cand);
			fprintf(stderr, "aicc: error: partition: --exclude-devices: '%s' is no device of machine %s (%s"
				"its %s devices are %s0..%s%d)\n", name, mname, near, id, id, id, p->limit - 1);
		}
		err = 1;
	}
	p->ndev = 0;
	for (int k = 0; k < p->limit && !err; k++)
		if (!out[k])
			p->phys[p->ndev++] = k;
	free(out);
	if (!err && p->ndev == 0) {
		fprintf(stderr, "aicc: error: partition: --exclude-devices %s leaves none of the %d %s device(s) of "
			"machine %s%s: nothing to place the model on\n", c->exclude, p->limit, id, mname,
			c->devices ? " that --devices takes" : "");
		err = 1;
	}
	return err;
}

/* After an explicit --tp/--pp that the survivors cannot take: the shapes that fit them. */
static void fits_hint(Part *p, int64_t weights)
{
	AutoFacts f = { 0 };
	char tried[768];
	int tp, pp;
	auto_facts(p->g, 1, &f, 0);
	if (auto_search(p, &f, (double)weights + f.kv_bytes, tried, sizeof tried, &tp, &pp) == 0)
		fprintf(stderr, "aicc: note: on the %d surviving device(s), by the cost model's step time: %s; the "
			"fastest is --tp %d --pp %d (leave out --tp and --pp to have it chosen)\n", p->ndev, tried, tp, pp);
	else
		fprintf(stderr, "aicc: note: no tensor x pipeline shape fits the %d surviving device(s): %s\n", p->ndev, tried);
}

int pass_partition(Module *m, PassCtx *c)
{
	const Machine *mach = c->machine;
	Graph *g = ir_entry(m);
	if (!mach || !g)
		return 0;
	const Device *dev = NULL;
	for (int i = 0; i < mach->ndevs && !dev; i++)
		if (!mach->devs[i].is_host)
			dev = &mach->devs[i];
	if (!dev)
		return 0;
	int attn_warned = 0;
	Part p = { .m = m, .g = g, .c = c, .dev = dev, .base = -1, .attn_warned = &attn_warned };
	p.ndev = num_has(&dev->count) && dev->count.v >= 1 ? (int)dev->count.v : 1;
	if (survivors(&p, p.ndev)) {
		free(p.phys);
		return 1;
	}
	char sv[400];
	survivors_text(&p, sv, sizeof sv);
	const MemSpace *ms = NULL;
	static const MemKind kinds[] = { MEM_HBM, MEM_DRAM, MEM_SRAM, MEM_VMEM };
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !ms; i++)
		ms = dev_mem_kind(dev, kinds[i]);
	p.cap = ms ? mem_total_capacity(dev, ms) : 0;
	p.capname = ms ? memkind_name(ms->kind) : "memory";
	if (p.cap <= 0)
		p.cap = 9e18;
	p.tp = c->tp > 1 ? c->tp : 1;
	p.ep = c->ep > 1 ? c->ep : 1;
	p.width = p.tp > p.ep ? p.tp : p.ep;
	/* the weights as the device stores them (an FP8 or NVFP4 matrix product's weight at that
	 * format: pass_weight_bytes), each once; parameter_bytes counts the declared dtypes */
	int64_t weights = graph_weights(&p, g, 1, 0);
	if (p.width > p.ndev) {
		fprintf(stderr, "aicc: error: partition: --%s %d needs %d devices but machine %s has %d%s%s\n",
			p.tp >= p.ep ? "tp" : "ep", p.width, p.width, mach->name, p.ndev, p.phys ? " surviving" : "", sv);
		if (p.phys)
			fits_hint(&p, weights);
		free(p.phys);
		return 1;
	}
	if (c->partition_auto && p.ndev > 1 && !c->tp && !c->pp && !c->ep) {
		int a = auto_choose(&p, weights);
		if (a == 1 && !p.phys)
			return 0;   /* fits one device: the lowering places it there */
		if (a < 0)
			return 1;   /* reported */
		if (a == 1) {       /* ... which must be a survivor */
			p.pp = 1;
			SAY(&p, "the model (%.4g GB of weights) fits one %s (%.4g GB): placed on %s, the first of the %d "
			    "surviving devices", (double)weights / 1e9, dev->id, p.cap / 1e9, dev_name(&p, 0), p.ndev);
		}
	} else if (c->partition_auto && p.ndev == 1 && !p.phys)
		return 0;       /* one device: the lowering checks its memory */
	if (c->pp > 0 || p.pp > 0)
		p.pp = c->pp > 0 ? c->pp : p.pp;
	else {
		double per = p.cap * 0.9 * p.width;
		p.pp = per > 0 ? (int)ceil((double)weights / per) : 1;
		if (p.pp < 1)
			p.pp = 1;
		if (p.pp * p.width > p.ndev)
			p.pp = p.ndev / p.width;
	}
	if (p.pp * p.width > p.ndev) {
		fprintf(stderr, "aicc: error: partition: --%s %d x --pp %d needs %d devices but machine %s has %d%s%s\n",
			p.tp >= p.ep ? "tp" : "ep", p.width, p.pp, p.width * p.pp, mach->name, p.ndev, p.phys ? " surviving" : "", sv);
		if (p.phys)
			fits_hint(&p, weights);
		free(p.phys);
		return 1;
	}
	if (p.ndev == 1 && !p.phys) {
		ir_foreach_node(g, n)
			n->aux = NULL;
		if (grow(&p) < 0)
			return 1;
		int e = check_memory(&p, 1);
		free(p.stage), free(p.devof), free(p.region), free(p.shard);
		return e;
	}
	clear_aux(g);
	int prior = 0;          /* nodes placed by an earlier run (a training step's forward pass) */
	ir_foreach_node(g, n) {
		if (!n->annot.device && rt_attr_str(&n->attrs, "shard", NULL))   /* its shards */
			n->aux = (void *)(n->op == OP_Split ? SHARD_SPLIT : OUTPUT_CONCAT);
		prior += n->annot.device && rt_attr_str(&n->attrs, "placement_reason", NULL);
	}
	attn_warned = prior > 0;   /* a graph placed before had its unsplit attention said then */
	int nreg = tensor_parallel(&p) + expert_parallel(&p);
	if (nreg && (ir_topo_sort(g) < 0 || ir_infer_shapes(m)))   /* the shards' shapes, which split_calls prices */
		return 1;
	split_calls(&p);
	if (ir_topo_sort(g) < 0)
		return 1;
	if (ir_infer_shapes(m))
		return 1;
	if (grow(&p) < 0)
		return 1;
	place(&p);
	transfers(&p);
	clear_aux(g);
	Reps reps = { 0 };
	p.reps = &reps;
	if (p.width > 1) {
		int k = place_layers(&p);
		free(p.insts);
		if (k >= 0 && replicate_entry(&p) && (ir_topo_sort(g) < 0 || ir_infer_shapes(m)))
			k = -1;
		free(reps.from), free(reps.to), free(reps.dev);
		p.reps = NULL;
		if (k < 0) {
			free(p.stage), free(p.devof), free(p.region), free(p.shard), free(p.phys);
			return 1;
		}
		nreg += k;
	}
	pass_stat(c, "devices used", p.pp * p.width);
	char used[200] = "";
	if (p.phys)     /* the machine's instances the plan takes, as runs: ": gpu0..gpu2, gpu4..gpu16" */
		for (int i = 0, k = 0; i < p.pp * p.width && (size_t)k < sizeof used - 24; i++) {
			int j = i;
			while (j + 1 < p.pp * p.width && p.phys[j + 1] == p.phys[j] + 1)
				j++;
			if (j > i)
				k += snprintf(used + k, sizeof used - (size_t)k, "%s%s%d..%s%d", k ? ", " : " ", dev->id,
					      p.phys[i], dev->id, p.phys[j]);
			else
				k += snprintf(used + k, sizeof used - (size_t)k, "%s%s%d", k ? ", " : " ", dev->id, p.phys[i]);
			i = j;
		}
	if (p.ep > 1)
		pass_remark(c, REMARK_ANALYSIS, g, NULL, "partitioned over %d %s device(s)%s%s%s: %d pipeline stage(s) x "
			    "tensor parallel %d, expert parallel %d; %d tensor- and expert-parallel region(s); %lld weight bytes",
			    p.pp * p.width, dev->id, used, p.phys ? ", survivors" : "", sv, p.pp, p.tp, p.ep, nreg, (long long)weights);
	else
		pass_remark(c, REMARK_ANALYSIS, g, NULL, "partitioned over %d %s device(s)%s%s%s: %d pipeline stage(s) x "
			    "tensor parallel %d; %d tensor-parallel region(s); %lld weight bytes",
			    p.pp * p.width, dev->id, used, p.phys ? ", survivors" : "", sv, p.pp, p.tp, nreg, (long long)weights);
	/* an explicit --tp that split no layer must not pass silently; a graph placed before (the
	 * forward pass of --phase train, placed again with its backward) was said of then */
	if (c->tp > 1 && nreg == p.nvocab && !prior)
		fprintf(stderr, "aicc: warning: --tp %d split no MatMul%s over %d devices, so each pipeline stage runs on "
			"one device (--remarks=placement says why for each MatMul)\n", c->tp,
			p.nvocab ? " pair (only the output MatMul, vocab-parallel)" : "", c->tp);
	compress_collectives(m, c);
	int e = check_memory(&p, p.ndev);
	free(p.stage), free(p.devof), free(p.region), free(p.shard), free(p.phys);
	return e;
}
