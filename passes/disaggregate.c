/* passes/disaggregate.c: attention/FFN disaggregation for decode on a GPU + LPU machine (pass
 * `disaggregate`; hardware.md §3.7, backends.md §4).
 *
 * Runs on a machine with both a GPU class and an LPU class (asked of the description, never of
 * the target's name); elsewhere it only says why it did nothing.  For every layer graph (a
 * graph holding an Attention, or calling one that does) it
 *   1. places the attention side on the GPU pool, `@device(gpu0)`: the Attention (and the KV
 *      cache it reads and writes), everything it depends on in the layer (norm, QKV
 *      projections, RoPE) and the chain from its output to the residual Add (O projection);
 *      everything after that residual, the FFN side (norm, dense FFN or router + MoE experts,
 *      second residual), on the LPU pool, `@device(lpu0)`.  So one activation crosses each way
 *      per layer: x1 = x + attn(x) to the LPUs and y = x1 + ffn(x1) back (backends.md §4a lists
 *      the FFN norm and the router on the attention pool; moving them to the LPUs halves the
 *      crossings, documented in docs/targets-vera-rubin.md);
 *   2. sizes the pools (backends.md §4a, §4b): the LPUs of one layer's FFN, g = ceil(FFN weight
 *      bytes at the LPU's matmul format / SRAM usable per LPU), times the layers, is the LPU
 *      pool; a stack whose FFN weights exceed the machine's LPUs stays on the GPUs (remark).
 *      The GPU pool is the fewest GPUs holding attention weights + KV cache, doubled while the
 *      predicted decode step gets shorter (tensor parallel inside the NVLink domain);
 *   3. predicts per micro-batch T_a (GPU: weights + KV bytes at HBM bandwidth, kernel launches,
 *      tensor-parallel all-reduce), T_e (LPU: weights touched at SRAM bandwidth or FLOP at the
 *      FP8 peak, chip-to-chip all-reduce) and T_c (link alpha + activation bytes / bandwidth),
 *      each priced by the target (Target.node_time: the GPU roofline of targets/lower.c, the
 *      LPU's of targets/lpu/cost.c; the pass holds no hardware rates of its own),
 *      and picks the micro-batch count m (a divisor of the batch, at most 8) that minimises the
 *      step L * max(m * T_f, T_a + T_e + 2 T_c), reporting MegaScale-Infer's rule
 *      m >= 2 (1 + T_c / T_f) next to it;
 *   4. realises m > 1 in the IR: the layer graph becomes `<layer>.mb<m>`, taking the m batch
 *      slices of the carried activation as its first m inputs and returning them as its first
 *      m outputs, so slice k of layer l+1 waits only for slice k of layer l; inside, its body
 *      is cloned per slice (batched inputs -- positions, past KV -- split on the GPU, present
 *      KV concatenated back), GPU part of every slice first, then the LPU part, so each pool's
 *      stream ping-pongs between slices; the entry graph splits the activation before the first
 *      layer and concatenates it after the last;
 *   Without --pools, steps 2-3 are priced once more with every FFN on the GPU pool and once with
 *   every layer on the LPUs (lpu_step: the whole layer on the LPUs holding its weights and KV
 *   cache), and the layout with the shortest predicted step is kept, the others' predictions in
 *   its remark (choose_pools);
 *   5. inserts a Transfer wherever a value crosses pools, and records every decision as a
 *      "placement" remark and as statistics.  Every placed node carries `pool_chips`, the
 *      chips of its pool that work on it (targets price it with that many).
 * Requires shape-inferred graphs (the kv-cache pass first for decode); invalidates shapes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "targets/target.h"

enum { MAXLAYERS = 64, MAXMB = 8, SIDE_GPU = 1, SIDE_LPU = 2 };

/* The per-layer-graph facts the cost model needs (bytes at the stored dtype unless noted). */
typedef struct Layer {
	Graph *g;
	int64_t reps;            /* layer instances in the model (calls x repeat) */
	double w_gpu;            /* attention-side weight bytes */
	double e_gpu;            /* attention-side weight elements */
	double w_lpu;            /* FFN-side weight bytes at the LPU's matmul format */
	double w_lpu_gpu;        /* the same at the stored dtype (if it stays on the GPU) */
	double w_moe;            /* part of w_lpu in routed experts (GroupedMatMul), LPU format */
	double kv;               /* KV cache bytes read + written per layer, whole batch */
	double kv_tok;           /* KV cache bytes per token per layer (K and V, every KV head) */
	int64_t kv_len;          /* tokens in the cache after this step (present length) */
	int64_t kv_seqs;         /* sequences (batch) of the cache */
	double fl_gpu, fl_lpu;   /* FLOP per layer, whole batch */
	double act;              /* bytes of the activation crossing each way, whole batch */
	int k_gpu, k_lpu;        /* kernels on each side */
	double topk, experts;    /* MoE routing: experts per token, experts */
	int on_lpu;              /* FFN side placed on the LPUs */
	int group;               /* LPUs per layer */
	int64_t batch;           /* dim 0 of the carried activation (0: not micro-batchable) */
	int64_t tokens;          /* batch x sequence of the activation */
	Graph *mb;               /* its micro-batched version, or NULL */
} Layer;

typedef struct Dis {
	Module *m;
	PassCtx *c;
	Graph *entry;
	const Device *gpu, *lpu;
	const Link *nvl, *c2c, *afd;
	double lpu_bytes;        /* bytes per weight element on the LPU (its matmul format) */
	Layer lay[MAXLAYERS];
	int nlay;
	int ngpu, nlpu, nmb;     /* chosen pool sizes and micro-batches */
	const char *gname, *lname;
} Dis;

static double vbytes(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 || v->type.dt == DT_INVALID ? 0 : (double)rt_dtype_bytes(v->type.dt, n);
}

static double velems(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 ? 0 : (double)n;
}

static int is_weight(const Value *v)
{
	return v && v->kind == V_PARAM && !(v->init && v->init->inline_lit);
}

/* Whether g, or a graph it calls, holds an Attention. */
static int holds_attn(const Graph *g, int depth)
{
	if (depth > 32)
		return 0;
	ir_foreach_node(g, n)
		if ((ir_ops[n->op].flags & F_ATTN) || (n->op == OP_Call && n->callee && holds_attn(n->callee, depth + 1)))
			return 1;
	return 0;
}

static int attn_like(const Node *n)
{
	return (ir_ops[n->op].flags & F_ATTN) || (n->op == OP_Call && n->callee && holds_attn(n->callee, 0));
}

/* ---- 1. which side each node of a layer graph is on (Node.aux) ---- */

/* Marks n and its producers in the graph as attention side. */
static void mark_up(Node *n)
{
	if ((intptr_t)n->aux == SIDE_GPU)
		return;
	n->aux = (void *)(intptr_t)SIDE_GPU;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && n->in[i]->kind == V_NODE)
			mark_up(n->in[i]->def);
}

/* Marks the chain from an attention output to the residual Add (an Add with an operand from
 * outside the chain) as attention side. */
static void mark_down(Value *v, int depth)
{
	for (Node *u = v->graph->first; u && depth < 16; u = u->next)
		for (int i = 0; i < u->nin; i++)
			if (u->in[i] == v && (intptr_t)u->aux != SIDE_GPU) {
				u->aux = (void *)(intptr_t)SIDE_GPU;
				if (u->op == OP_Add)
					break;
				for (int k = 0; k < u->nout; k++)
					mark_down(u->out[k], depth + 1);
			}
}

/* Sides of g's nodes; returns 1 when g has an FFN side. */
static int classify(Graph *g)
{
	int ffn = 0;
	ir_foreach_node(g, n)
		n->aux = NULL;
	ir_foreach_node(g, n)
		if (attn_like(n)) {
			mark_up(n);
			if (ir_ops[n->op].flags & F_ATTN)
				mark_down(n->out[0], 0);
		}
	ir_foreach_node(g, n)
		if (!n->aux) {
			n->aux = (void *)(intptr_t)SIDE_LPU;
			ffn |= n->op != OP_Call;
		}
	return ffn;
}

/* ---- 2./3. the cost model ---- */

/* Bytes per weight element on device d: its matmul format (the narrowest with a matrix peak),
 * else f32. */
static double weight_bytes(const Device *d)
{
	DType f = dev_matmul_format(d);
	return rt_dtypes[f != DT_INVALID ? f : DT_F32].bits / 8.0;
}

/* Adds the facts of graph g's nodes (sides from `side`; a call's callee with its own sides,
 * scaled by repeat) to l. */
static void gather(Dis *d, Layer *l, Graph *g, int side, double mul, int depth)
{
	if (depth > 32)
		return;
	ir_foreach_node(g, n) {
		int s = side ? side : (int)(intptr_t)n->aux;
		if (n->op == OP_Call && n->callee) {
			gather(d, l, n->callee, s == SIDE_LPU ? SIDE_LPU : 0, mul * (double)(n->repeat > 0 ? n->repeat : 1), depth + 1);
			continue;
		}
		double w = 0, we = 0, fl = ir_node_flops(n) * mul;
		for (int i = 0; i < n->nin; i++)
			if (is_weight(n->in[i])) {
				w += vbytes(n->in[i]) * mul;
				we += velems(n->in[i]) * mul;
			}
		if (n->op == OP_TopKRouter) {
			l->topk = (double)rt_attr_int(&n->attrs, "k", 1);
			l->experts = n->in[0] && n->in[0]->type.rank >= 1 && dim_isconst(n->in[0]->type.dims[n->in[0]->type.rank - 1])
				     ? (double)n->in[0]->type.dims[n->in[0]->type.rank - 1].k : 1;
		}
		if (s == SIDE_LPU) {
			l->w_lpu += we * d->lpu_bytes;
			l->w_lpu_gpu += w;
			if (n->op == OP_GroupedMatMul)
				l->w_moe += we * d->lpu_bytes;
			l->fl_lpu += fl;
			l->k_lpu += !(ir_ops[n->op].flags & F_VIEW);
		} else {
			l->w_gpu += w;
			l->e_gpu += we;
			l->fl_gpu += fl;
			l->k_gpu += !(ir_ops[n->op].flags & F_VIEW);
			if (ir_ops[n->op].flags & F_ATTN) {
				for (int i = 4; i < n->nin && i < 6; i++)
					if (n->in[i])
						l->kv += vbytes(n->in[i]) * mul;
				for (int i = 1; i < n->nout && i < 3; i++)
					l->kv += vbytes(n->out[i]) * mul;
				const Value *pk = n->nout > 1 ? n->out[1] : NULL;   /* present_key [B, KVH, T, HD] */
				if (pk && pk->type.rank == 4 && ir_type_numel(pk->type) > 0 && dim_isconst(pk->type.dims[2])) {
					l->kv_len = pk->type.dims[2].k;
					l->kv_seqs = pk->type.dims[0].k;
					l->kv_tok = 2 * vbytes(pk) / (double)(l->kv_len * l->kv_seqs) * mul;
				}
			}
		}
		/* a cache kept as one tensor (MLA's latent): Concat(past, new) -> present, [B, T, ...] */
		if (s != SIDE_LPU && n->op == OP_Concat && n->nout == 1 && pass_is_output(n->out[0]) &&
		    n->out[0]->type.rank >= 3 && ir_type_numel(n->out[0]->type) > 0 && dim_isconst(n->out[0]->type.dims[1]))
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] && n->in[i]->kind == V_INPUT) {
					const Value *o = n->out[0];
					l->kv += (vbytes(n->in[i]) + vbytes(o)) * mul;
					l->kv_len = o->type.dims[1].k;
					l->kv_seqs = o->type.dims[0].k;
					l->kv_tok = vbytes(o) / (double)(l->kv_len * l->kv_seqs) * mul;
					break;
				}
		/* the crossing: a value made on one side and read on the other */
		if (!side && s == SIDE_LPU)
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] && n->in[i]->kind == V_NODE && (intptr_t)n->in[i]->def->aux == SIDE_GPU)
					l->act = fmax(l->act, vbytes(n->in[i]));
	}
}

static double hbm_cap(const Device *d)
{
	const MemSpace *h = dev_mem_kind(d, MEM_HBM);
	return h ? mem_total_capacity(d, h) : 0;
}

static double sram_usable(const Device *d)
{
	const MemSpace *s = dev_mem_kind(d, MEM_SRAM);
	if (!s)
		return 0;
	return num_has(&s->usable) ? s->usable.v : s->capacity.v;
}

/* Seconds of work w on device dv, as the target prices it (Target.node_time): the pass holds no
 * hardware numbers of its own. */
static double price(const Dis *d, const Device *dv, TgtWork w) { return pass_work_time(d->c, dv, &w); }

/* Seconds to all-reduce n bytes over p devices of class dv (the target's collective model). */
static double allreduce(const Dis *d, const Device *dv, int p, double n)
{
	return p < 2 ? 0 : price(d, dv, (TgtWork){ .chips = p, .reduce = n, .fmt = DT_INVALID });
}

static double gpu_comm(const Dis *d, const Node *n, int ffn, int chips, double f);

/* Seconds of the nodes of graph g on side `want` (SIDE_GPU: the attention side, on the GPU
 * pool of ngpu; SIDE_LPU: the FFN side, on `group` LPUs; 0: every node on the GPU pool), each
 * priced as the plan prices its kernel (Target.node_time of one node: on the GPUs the GPU
 * model's kernel of the whole node with its parallel resources shared by the pool, plus the
 * tensor-parallel all-reduce the plan adds to it, gpu_comm's comm_s; on the LPUs the cycle model
 * with its row-split all-reduce), times mult; a call's callee times its repeat, its nodes on the
 * call's side (inherit); view ops are no kernel.  (One roofline over a layer put llama3.1-70b's
 * GPU-only decode step at batch 32 with CUDA-graph launches 17 % under its plan.) */
static double side_nodes(const Dis *d, const Graph *g, int want, int ngpu, int group, double mult, int inherit, int depth)
{
	double t = 0;
	ir_foreach_node(g, n) {
		int s = inherit ? inherit : (int)(intptr_t)n->aux;
		if (n->op == OP_Call && n->callee && depth < 32)
			t += side_nodes(d, n->callee, want, ngpu, group, mult * (double)(n->repeat > 0 ? n->repeat : 1),
					s == SIDE_LPU ? SIDE_LPU : 0, depth + 1);
		else if (n->op == OP_Call || (ir_ops[n->op].flags & F_VIEW) || (want && (want == SIDE_LPU) != (s == SIDE_LPU)))
			continue;
		else if (want == SIDE_LPU)
			t += mult * price(d, d->lpu, (TgtWork){ .node = n, .chips = group, .fmt = DT_INVALID });
		else
			t += mult * (price(d, d->gpu, (TgtWork){ .node = n, .chips = ngpu, .fmt = DT_INVALID }) +
				     gpu_comm(d, n, s == SIDE_LPU, ngpu, 1));
	}
	return t;
}

/* The attention side's roofline per micro-batch (share f of the layer's batch) on ngpu GPUs:
 * weights and KV bytes, FLOP at bf16, kernel launches, the tensor-parallel all-reduce of the
 * activation (twice when the FFN stays on the GPUs). */
static double attn_roof(const Dis *d, const Layer *l, double f, int ngpu, int ffn_here)
{
	TgtWork w = { .bytes = l->w_gpu + l->kv * f + (ffn_here ? l->w_lpu_gpu : 0),
		      .flops = l->fl_gpu * f + (ffn_here ? l->fl_lpu * f : 0),
		      .kernels = l->k_gpu + (ffn_here ? l->k_lpu : 0), .chips = ngpu, .fmt = DT_BF16 };
	return price(d, d->gpu, w) + allreduce(d, d->gpu, ngpu, l->act * f) * (ffn_here ? 2 : 1);
}

/* Attention-side seconds per micro-batch: the layer's nodes as the plan prices them
 * (side_nodes) for the whole batch; for a share f < 1 (micro-batches, whose sliced nodes exist
 * only once the split is made) that scaled by the roofline's ratio of share f to the whole. */
static double t_attn(const Dis *d, const Layer *l, double f, int ngpu, int ffn_here)
{
	double whole = side_nodes(d, l->g, ffn_here ? 0 : SIDE_GPU, ngpu, 1, 1, 0, 0);
	if (f >= 1)
		return whole;
	double r1 = attn_roof(d, l, 1, ngpu, ffn_here);
	return r1 > 0 ? whole * attn_roof(d, l, f, ngpu, ffn_here) / r1 : whole * f;
}

/* The FFN side's roofline on the layer's LPU group: routed experts touched by b*k tokens only. */
static double ffn_roof(const Dis *d, const Layer *l, double f)
{
	double touched = l->w_lpu - l->w_moe;
	if (l->w_moe > 0 && l->experts > 0)
		touched += l->w_moe * fmin(1, (double)l->tokens * f * l->topk / l->experts);
	int g = l->group > 0 ? l->group : 1;
	TgtWork w = { .bytes = touched, .flops = l->fl_lpu * f, .kernels = l->k_lpu, .chips = g, .fmt = DT_INVALID };
	return price(d, d->lpu, w) + allreduce(d, d->lpu, l->group, l->act * f);
}

/* FFN-side seconds per micro-batch on the layer's LPU group, as t_attn: the nodes as the plan
 * prices them, scaled by the roofline's ratio for a share f < 1. */
static double t_ffn(const Dis *d, const Layer *l, double f)
{
	double whole = side_nodes(d, l->g, SIDE_LPU, 1, l->group > 0 ? l->group : 1, 1, 0, 0);
	if (f >= 1)
		return whole;
	double r1 = ffn_roof(d, l, 1);
	return r1 > 0 ? whole * ffn_roof(d, l, f) / r1 : whole * f;
}

/* The activation's crossing from the GPU pool to the LPU pool. */
static double t_link(const Dis *d, const Layer *l, double f)
{
	return price(d, d->gpu, (TgtWork){ .bytes = l->act * f, .to = d->lpu, .fmt = DT_INVALID });
}

/* One decode step of the model's layers with m micro-batches on ngpu GPUs (seconds), each
 * micro-batch's pool times from ta/te (t_attn and t_ffn, or the pools' rooflines) and the link
 * crossings, overlapped as L * max(m * max(T_a, T_e), T_a + T_e + 2 T_c). */
static double step_of(const Dis *d, int m, int ngpu, int roof)
{
	double t = 0;
	for (int i = 0; i < d->nlay; i++) {
		const Layer *l = &d->lay[i];
		double f = 1.0 / m;
		if (!l->on_lpu) {
			t += (double)l->reps * m * (roof ? attn_roof(d, l, f, ngpu, 1) : t_attn(d, l, f, ngpu, 1));
			continue;
		}
		double ta = roof ? attn_roof(d, l, f, ngpu, 0) : t_attn(d, l, f, ngpu, 0),
		       te = roof ? ffn_roof(d, l, f) : t_ffn(d, l, f), tc = t_link(d, l, f);
		t += (double)l->reps * fmax(m * fmax(ta, te), ta + te + 2 * tc);
	}
	return t;
}

/* The step with m micro-batches: with one, every node as the plan prices it (step_of); with
 * more (whose sliced nodes exist only once the split is made), that times the pools' rooflines'
 * own ratio of m micro-batches to one, so splitting pays only where the roofline says it does
 * (scaling each pool's time instead predicted llama3.1-70b's hybrid at batch 32 on 2 micro-batches
 * 28 % under its plan, and chose them over one). */
static double t_step(const Dis *d, int m, int ngpu)
{
	double one = step_of(d, 1, ngpu, 0);
	if (m <= 1)
		return one;
	double r1 = step_of(d, 1, ngpu, 1);
	return r1 > 0 ? one * step_of(d, m, ngpu, 1) / r1 : one;
}

/* ---- 4. micro-batches in the IR ---- */

/* Whether input v of g is indexed by the batch (past KV, positions, masks), through calls. */
static int batched_input(const Graph *g, const Value *v, int depth)
{
	if (depth > 32)
		return 0;
	ir_foreach_node(g, n)
		for (int i = 0; i < n->nin; i++) {
			if (n->in[i] != v)
				continue;
			if (n->op == OP_Call && n->callee && i < n->callee->nin &&
			    batched_input(n->callee, n->callee->inputs[i], depth + 1))
				return 1;
			if (((ir_ops[n->op].flags & F_ATTN) && i >= 3) || (n->op == OP_RotaryEmbedding && i == 3))
				return 1;
		}
	return 0;
}

static int dim0(const Value *v, int64_t *b)
{
	if (v->type.rank < 1 || !dim_isconst(v->type.dims[0]))
		return 0;
	*b = v->type.dims[0].k;
	return 1;
}

/* Whether layer graph g can be cut into m slices along dim 0 of its carried activation.  Not
 * with calls inside: a cloned call would be a new call instance, and instances number the
 * weights (targets/flatten.c), so the slices would compute with different weights. */
static int can_split(const Graph *g, int64_t b, int m)
{
	int64_t k;
	ir_foreach_node(g, n)
		if (n->op == OP_Call)
			return 0;
	if (g->nin < 1 || g->nout < 1 || !ir_type_eq(g->inputs[0]->type, g->outputs[0]->type) ||
	    g->inputs[0]->type.rank < 2 || b % m)
		return 0;
	for (int i = 1; i < g->nin; i++)
		if (batched_input(g, g->inputs[i], 0) && (!dim0(g->inputs[i], &k) || k != b))
			return 0;
	for (int i = 1; i < g->nout; i++)
		if (!dim0(g->outputs[i], &k) || k != b)
			return 0;
	return 1;
}

static Type slice_type(Module *m, Type t, int64_t b)
{
	Dim dims[IR_MAX_RANK];
	for (int i = 0; i < t.rank; i++)
		dims[i] = t.dims[i];
	dims[0] = dim_c(b);
	return ir_type(m, t.dt, t.rank, dims);
}

static Node *split0(const Dis *d, Graph *g, Node *before, Value *v, int m, const char *dev)
{
	const char *names[MAXMB];
	char buf[256];
	for (int k = 0; k < m; k++) {
		snprintf(buf, sizeof buf, "%s.mb%d", v->name, k);
		names[k] = ir_fresh_name(g, buf);
	}
	Node *s = ir_insert_node(g, before, OP_Split, &v, 1, names, m, v->loc);
	ir_set_attr_int(s, "axis", 0);
	ir_set_attr_int(s, "num_outputs", m);
	ir_set_attr_int(s, "pool_chips", d->ngpu);
	ir_set_attr_str(s, "placement_reason", "micro-batch slices, cut on the GPU pool (disaggregate)");
	s->annot.device = dev;
	return s;
}

static Node *concat0(const Dis *d, Graph *g, Node *before, Value **parts, int m, const char *name, const char *dev)
{
	Node *c = ir_insert_node(g, before, OP_Concat, parts, m, &name, 1, parts[0]->loc);
	ir_set_attr_int(c, "axis", 0);
	ir_set_attr_int(c, "pool_chips", d->ngpu);
	ir_set_attr_str(c, "placement_reason", "micro-batch slices, joined on the GPU pool (disaggregate)");
	c->annot.device = dev;
	return c;
}

/* Copies node n of the source body into g, slice k (operands through map[k]). */
static void clone_into(Graph *g, Node *n, Value ***map, int k)
{
	Value *in[64];
	const char *names[64];
	char buf[256];
	if (n->nin > 64 || n->nout > 64)
		return;
	for (int i = 0; i < n->nin; i++)
		in[i] = n->in[i] ? map[k][n->in[i]->id] : NULL;
	for (int i = 0; i < n->nout; i++) {
		snprintf(buf, sizeof buf, "%s.mb%d", n->out[i]->name, k);
		names[i] = ir_fresh_name(g, buf);
	}
	Node *c = ir_add_node(g, n->op, in, n->nin, names, n->nout, n->loc);
	for (int i = 0; i < n->attrs.n; i++)
		ir_set_attr(c, &n->attrs.a[i]);
	c->callee = n->callee;
	c->repeat = n->repeat;
	c->annot = n->annot;
	for (int i = 0; i < n->nout; i++)
		map[k][n->out[i]->id] = c->out[i];
}

/* The graph `<src>.mb<m>`: m slices of the carried activation in and out first, the body cloned
 * per slice, attention side of every slice before the FFN side. */
static Graph *mb_graph(Dis *d, Graph *src, int m)
{
	char buf[256];
	int64_t b = src->inputs[0]->type.dims[0].k / m;
	snprintf(buf, sizeof buf, "%s.mb%d", src->name, m);
	Graph *g = ir_graph_new(d->m, buf, src->loc);
	int nv = src->nvalues + 1;
	Value **map[MAXMB];
	for (int k = 0; k < m; k++)
		map[k] = calloc((size_t)nv, sizeof **map);
	for (int k = 0; k < m; k++) {
		snprintf(buf, sizeof buf, "%s.mb%d", src->inputs[0]->name, k);
		map[k][src->inputs[0]->id] = ir_add_input(g, buf, slice_type(d->m, src->inputs[0]->type, b), src->inputs[0]->loc);
	}
	for (int i = 1; i < src->nin; i++) {
		Value *x = ir_add_input(g, src->inputs[i]->name, src->inputs[i]->type, src->inputs[i]->loc);
		for (int k = 0; k < m; k++)
			map[k][src->inputs[i]->id] = x;
	}
	for (int i = 0; i < src->nparams; i++) {
		Value *p = src->params[i], *c = ir_add_param(g, p->name, p->type, p->init, p->loc);
		for (int k = 0; k < m; k++)
			map[k][p->id] = c;
	}
	for (int i = 1; i < src->nin; i++)
		if (batched_input(src, src->inputs[i], 0)) {
			Node *s = split0(d, g, NULL, map[0][src->inputs[i]->id], m, d->gname);
			for (int k = 0; k < m; k++)
				map[k][src->inputs[i]->id] = s->out[k];
		}
	for (int side = SIDE_GPU; side <= SIDE_LPU; side++)
		for (int k = 0; k < m; k++)
			ir_foreach_node(src, n)
				if ((intptr_t)n->aux == side)
					clone_into(g, n, map, k);
	for (int k = 0; k < m; k++)
		ir_add_output(g, map[k][src->outputs[0]->id]);
	for (int i = 1; i < src->nout; i++) {
		Value *parts[MAXMB];
		for (int k = 0; k < m; k++)
			parts[k] = map[k][src->outputs[i]->id];
		Node *c = concat0(d, g, NULL, parts, m, ir_fresh_name(g, src->outputs[i]->name), d->gname);
		ir_add_output(g, c->out[0]);
	}
	for (int k = 0; k < m; k++)
		free(map[k]);
	pass_move_graph_before(d->m, g, d->entry);
	return g;
}

/* Rewrites the entry graph's calls of the layer graphs into calls of their .mb versions. */
static void rewrite_calls(Dis *d, Graph **from, Graph **to, int n, int m)
{
	Graph *e = d->entry;
	Node *olds[4096];
	int nold = 0;
	for (Node *c = e->first; c; c = c->next) {
		int j = 0;
		while (j < n && !(c->op == OP_Call && c->callee == from[j]))
			j++;
		if (j == n || nold == 4096)
			continue;
		Value *in[128];
		const char *names[128];
		int nin = m + c->nin - 1, nout = m + c->nout - 1;
		if (nin > 128 || nout > 128)
			continue;
		Value *x = c->in[0];
		Value **sl = x->aux;
		if (!sl) {
			Node *s = split0(d, e, c, x, m, d->gname);
			sl = s->out;
		}
		for (int k = 0; k < m; k++)
			in[k] = sl[k];
		for (int i = 1; i < c->nin; i++)
			in[m + i - 1] = c->in[i];
		for (int k = 0; k < nout; k++) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s%s", k < m ? c->out[0]->name : c->out[k - m + 1]->name, k < m ? ".mb" : "");
			names[k] = ir_fresh_name(e, buf);
		}
		Node *nc = ir_insert_node(e, c, OP_Call, in, nin, names, nout, c->loc);
		nc->callee = to[j];
		nc->repeat = c->repeat;
		for (int i = 1; i < c->nout; i++) {
			Value *o = c->out[i], *nv = nc->out[m + i - 1];
			const char *nm = o->name;
			ir_replace_uses(e, o, nv);
			o->name = nv->name;
			nv->name = nm;
		}
		c->out[0]->aux = nc->out;
		c->aux = nc;
		olds[nold++] = c;
	}
	for (int i = nold - 1; i >= 0; i--) {
		Node *c = olds[i], *nc = c->aux;
		Value *y = c->out[0];
		ir_remove_node(e, c);
		if (y->nuses > 0) {
			Node *cat = concat0(d, e, nc->next, nc->out, m, ir_fresh_name(e, y->name), d->gname);
			const char *nm = y->name;
			ir_replace_uses(e, y, cat->out[0]);
			y->name = cat->out[0]->name;
			cat->out[0]->name = nm;
		}
		y->aux = NULL;
		c->aux = NULL;
	}
}

/* ---- 5. annotations and transfers ---- */

/* Whether v comes out of an Attention, through views. */
static int from_attention(const Value *v)
{
	for (int k = 0; v && v->kind == V_NODE && k < 8; k++) {
		if (ir_ops[v->def->op].flags & F_ATTN)
			return 1;
		if (!(ir_ops[v->def->op].flags & (F_VIEW | F_SHAPEOP)) || v->def->nin < 1)
			return 0;
		v = v->def->in[0];
	}
	return 0;
}

/* Seconds the GPU pool's chips spend communicating for node n (attribute comm_s, added by the
 * target): the tensor-parallel all-reduce of a row-split projection over NVLink -- the attention
 * output projection, and an FFN down projection (K > N) kept on the GPUs (Megatron's pattern:
 * one all-reduce per row-split matmul, backends.md §7 recursive doubling).  f: the micro-batch's
 * share of the activation. */
static double gpu_comm(const Dis *d, const Node *n, int ffn, int chips, double f)
{
	if (chips < 2 || (n->op != OP_MatMul && n->op != OP_GroupedMatMul) || n->nin < 2 || !n->nout)
		return 0;
	const Value *a = n->in[0], *y = n->out[0];
	int shrinks = a->type.rank >= 1 && y->type.rank >= 1 && dim_isconst(a->type.dims[a->type.rank - 1]) &&
		      dim_isconst(y->type.dims[y->type.rank - 1]) &&
		      a->type.dims[a->type.rank - 1].k > y->type.dims[y->type.rank - 1].k;
	if (!(from_attention(a) || (ffn && shrinks)))
		return 0;
	return allreduce(d, d->gpu, chips, vbytes(y) * f);
}

static void annotate(Dis *d, Graph *g, int on_lpu, int group, int gchips, double f)
{
	ir_foreach_node(g, n) {
		if (n->op == OP_Call)
			continue;
		int lpu = on_lpu > 0 && (intptr_t)n->aux == SIDE_LPU;
		n->annot.device = lpu ? d->lname : d->gname;
		ir_set_attr_str(n, "placement_reason", d->gname == d->lname ? "--pools lpu: the whole model on the LPU pool" :
				lpu ? "FFN side (after the attention residual): weights in LPU SRAM (disaggregate)" :
				on_lpu > 0 ? "attention side (attention, its inputs, its output projection): KV cache in HBM (disaggregate)" :
				on_lpu < 0 ? "attention side: a graph a layer's attention calls, KV cache in HBM (disaggregate)" :
				"GPU pool: its layer's FFN does not go to the LPUs (disaggregate)");
		ir_set_attr_int(n, "pool_chips", lpu ? group : gchips);
		ir_set_attr_int(n, "pool_size", lpu || d->gname == d->lname ? d->nlpu : d->ngpu);
		double c = lpu || d->gname == d->lname ? 0 : gpu_comm(d, n, (intptr_t)n->aux == SIDE_LPU, gchips, f);
		if (c > 0)
			ir_set_attr_float(n, "comm_s", c);
	}
}

/* Where the value of input / output i of graph g lives: the carried activation of a layer whose
 * FFN is on the LPUs is made there (by the FFN's residual Add), so it lives on the LPU pool
 * between layers; everything else on the GPU pool. */
static const char *io_home(const Dis *d, const Graph *g, int i)
{
	for (int j = 0; j < d->nlay; j++)
		if (d->lay[j].on_lpu && (d->lay[j].g == g || d->lay[j].mb == g))
			return i < (d->lay[j].mb == g ? d->nmb : 1) ? d->lname : d->gname;
	return d->gname;
}

static const char *home(const Dis *d, const Value *v)
{
	if (v->kind == V_INPUT) {
		for (int i = 0; i < v->graph->nin; i++)
			if (v->graph->inputs[i] == v)
				return io_home(d, v->graph, i);
		return d->gname;
	}
	if (v->kind != V_NODE)
		return NULL;
	if (v->def->op == OP_Call && v->def->callee)
		return io_home(d, v->def->callee, v->defidx);
	return v->def->annot.device ? v->def->annot.device : d->gname;
}

/* The Transfer of v to device `to` before node `before` (NULL: at the end), reused when one
 * already exists in between. */
static Value *transfer(Dis *d, Graph *g, Node *before, Value *v, const char *to)
{
	Node *start = v->kind == V_NODE ? v->def->next : g->first;
	for (Node *q = start; q && q != before; q = q->next)
		if (q->op == OP_Transfer && q->in[0] == v && !strcmp(q->annot.device, to))
			return q->out[0];
	char buf[256];
	snprintf(buf, sizeof buf, "%s.to.%s", v->name, to);
	const char *name = ir_fresh_name(g, buf);
	Node *t = ir_insert_node(g, before, OP_Transfer, &v, 1, &name, 1, v->loc);
	ir_set_attr_str(t, "device", to);
	t->annot.device = to;
	pass_changed(d->c, "transfers inserted");
	pass_remark(d->c, REMARK_APPLIED, g, before ? before : t, "Transfer of '%s' (%.0f bytes) from %s to %s over link %s",
		    v->name, vbytes(v), home(d, v), to,
		    d->afd && strcmp(home(d, v), to) ? d->afd->id : "(same pool)");
	return t->out[0];
}

/* A Transfer wherever a value is read, or returned, away from where it lives. */
static void transfers(Dis *d, Graph *g)
{
	for (Node *n = g->first; n; n = n->next) {
		if (n->op == OP_Transfer)
			continue;
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			if (!v || v->kind == V_PARAM)
				continue;
			const char *want = n->op == OP_Call && n->callee ? io_home(d, n->callee, i) : n->annot.device;
			const char *have = home(d, v);
			if (want && have && strcmp(want, have))
				ir_set_input(n, i, transfer(d, g, n, v, want));
		}
	}
	if (g == d->entry)
		return;
	for (int i = 0; i < g->nout; i++) {
		Value *v = g->outputs[i];
		const char *want = io_home(d, g, i), *have = home(d, v);
		if (v->kind == V_PARAM || !have || !strcmp(want, have))
			continue;
		Value *t = transfer(d, g, NULL, v, want);
		v->nuses--;
		t->nuses++;
		g->outputs[i] = t;
	}
}

/* ---- the pass ---- */

static int collect_layers(Dis *d)
{
	ir_foreach_node(d->entry, n) {
		if (n->op != OP_Call || !n->callee || !holds_attn(n->callee, 0))
			continue;
		int j = 0;
		while (j < d->nlay && d->lay[j].g != n->callee)
			j++;
		if (j == MAXLAYERS)
			continue;
		if (j == d->nlay) {
			d->lay[d->nlay++] = (Layer){ .g = n->callee };
		}
		d->lay[j].reps += n->repeat > 0 ? n->repeat : 1;
	}
	return d->nlay;
}

static void describe(Dis *d, Layer *l)
{
	int64_t b = 0;
	Value *x = l->g->inputs[0];
	l->on_lpu = classify(l->g);
	gather(d, l, l->g, 0, 1, 0);
	if (l->g->nin && dim0(x, &b) && x->type.rank >= 2) {
		l->batch = b;
		l->tokens = b;
		for (int i = 1; i < x->type.rank - 1; i++)
			l->tokens *= dim_isconst(x->type.dims[i]) ? x->type.dims[i].k : 1;
	}
	double use = sram_usable(d->lpu);
	l->group = use > 0 ? (int)ceil(l->w_lpu / use) : 0;
	if (l->group < 1)
		l->group = 1;
}

/* Pool sizes: LPUs from capacity (dropping the largest FFN stacks that do not fit), GPUs from
 * capacity then by predicted step time. */
static void size_pools(Dis *d, int quiet)
{
	int lcount = num_has(&d->lpu->count) ? (int)d->lpu->count.v : 1;
	for (;;) {
		int64_t need = 0;
		int big = -1;
		for (int i = 0; i < d->nlay; i++)
			if (d->lay[i].on_lpu) {
				need += d->lay[i].reps * d->lay[i].group;
				if (big < 0 || d->lay[i].w_lpu * d->lay[i].reps > d->lay[big].w_lpu * d->lay[big].reps)
					big = i;
			}
		if (need <= lcount || big < 0) {
			d->nlpu = (int)need;
			break;
		}
		Layer *l = &d->lay[big];
		l->on_lpu = 0;
		if (!quiet)
			pass_remark(d->c, REMARK_MISSED, l->g, NULL, "FFN of '%s' stays on the GPU pool: %lld layers x %d %s = %lld "
			    "LPUs to hold %.4g GB of weights at %.0f byte(s) each, machine %s has %d (--set %s.count=N for more racks)",
			    l->g->name, (long long)l->reps, l->group, d->lpu->id, (long long)(l->reps * l->group),
			    l->w_lpu * (double)l->reps / 1e9, d->lpu_bytes, d->c->machine->name, lcount, d->lpu->id);
	}
	double need = 0;
	for (int i = 0; i < d->nlay; i++)
		need += (d->lay[i].w_gpu + d->lay[i].kv + (d->lay[i].on_lpu ? 0 : d->lay[i].w_lpu_gpu)) * (double)d->lay[i].reps;
	double cap = hbm_cap(d->gpu) * 0.9;
	int gcount = num_has(&d->gpu->count) ? (int)d->gpu->count.v : 1;
	if (d->nvl && num_has(&d->nvl->domain) && d->nvl->domain.v < gcount)
		gcount = (int)d->nvl->domain.v;
	int gmin = cap > 0 ? (int)ceil(need / cap) : 1;
	if (gmin < 1)
		gmin = 1;
	if (gmin > gcount)
		gmin = gcount;
	d->ngpu = gmin;
	for (int n = gmin * 2; n <= gcount; n *= 2)
		if (t_step(d, 1, n) < t_step(d, 1, d->ngpu) * 0.97)
			d->ngpu = n;
	if (quiet)
		return;
	pass_remark(d->c, REMARK_ANALYSIS, d->entry, NULL, "pools: %d %s (%.4g GB of weights and KV cache on the GPUs%s, at most "
		    "90%% of %.4g GB HBM each, then doubled while the predicted step shrinks by 3%%) and %d %s (FFN weights "
		    "at %.0f byte(s) per element in %.4g MB of SRAM per chip)", d->ngpu, d->gpu->id, need / 1e9,
		    d->ngpu > gmin ? "" : ", the fewest that hold them", hbm_cap(d->gpu) / 1e9, d->nlpu, d->lpu->id,
		    d->lpu_bytes, sram_usable(d->lpu) / 1e6);
}

/* Micro-batches: the divisor m of the batch (at most 8) with the shortest predicted step. */
static int choose_m(Dis *d)
{
	int64_t b = 0;
	int best = 1, any = 0;
	for (int i = 0; i < d->nlay; i++)
		if (d->lay[i].on_lpu) {
			if (!d->lay[i].batch)
				return 1;
			b = !any || d->lay[i].batch < b ? d->lay[i].batch : b;
			any = 1;
		}
	if (!any)
		return 1;
	if (d->c->microbatches > 0) {
		int m = d->c->microbatches;
		for (int i = 0; i < d->nlay; i++)
			if (d->lay[i].on_lpu && !can_split(d->lay[i].g, d->lay[i].batch, m)) {
				pass_remark(d->c, REMARK_MISSED, d->lay[i].g, NULL, "--micro-batches %d: the batch of %lld "
					    "sequences of '%s' does not split into %d equal slices, or it calls a graph: 1 micro-batch", m,
					    (long long)d->lay[i].batch, d->lay[i].g->name, m);
				return 1;
			}
		return m;
	}
	double tbest = t_step(d, 1, d->ngpu);
	for (int m = 2; m <= MAXMB && m <= b; m++) {
		int ok = 1;
		for (int i = 0; i < d->nlay && ok; i++)
			ok = !d->lay[i].on_lpu || can_split(d->lay[i].g, d->lay[i].batch, m);
		double t = t_step(d, m, d->ngpu);
		if (ok && t < tbest * 0.999)
			best = m, tbest = t;
	}
	return best;
}

/* The KV cache as vLLM's PagedAttention pages it: fixed blocks of tokens per sequence and layer,
 * a block table per sequence (Kwon et al., SOSP 2023; 16 tokens is vLLM's default block). */
enum { KV_BLOCK = 16 };
static void report_kv(Dis *d)
{
	double blocks = 0, bytes = 0;
	int64_t seqs = 0, len = 0;
	for (int i = 0; i < d->nlay; i++) {
		Layer *l = &d->lay[i];
		if (!l->kv_len)
			continue;
		double per = ceil((double)l->kv_len / KV_BLOCK) * (double)l->kv_seqs * (double)l->reps;
		blocks += per;
		bytes += per * KV_BLOCK * l->kv_tok;
		seqs = l->kv_seqs, len = l->kv_len;
	}
	if (blocks <= 0)
		return;
	pass_remark(d->c, REMARK_ANALYSIS, d->entry, NULL, "KV cache paged as vLLM's PagedAttention: %d-token blocks, "
		    "%lld sequence(s) x %lld tokens -> %.0f blocks (%lld per sequence and layer) of %.4g kB = %.4g GB in "
		    "the HBM of the %d %s of the GPU pool (%.4g GB each)", KV_BLOCK, (long long)seqs, (long long)len, blocks,
		    (long long)((len + KV_BLOCK - 1) / KV_BLOCK), bytes / blocks / 1e3, bytes / 1e9, d->ngpu, d->gpu->id,
		    bytes / 1e9 / d->ngpu);
	pass_stat(d->c, "kv blocks", (int64_t)blocks);
}

static void report(Dis *d)
{
	report_kv(d);
	for (int i = 0; i < d->nlay; i++) {
		Layer *l = &d->lay[i];
		if (!l->on_lpu)
			continue;
		double f = 1.0 / d->nmb, ta = t_attn(d, l, f, d->ngpu, 0), te = t_ffn(d, l, f), tc = t_link(d, l, f);
		double tf = fmax(ta, te);
		pass_remark(d->c, REMARK_ANALYSIS, l->g, NULL, "layer '%s' x %lld: attention side on %d %s (%.4g MB weights, "
			    "%.4g MB KV cache), FFN side on %d %s per layer (%.4g MB weights); per micro-batch of %lld: "
			    "T_a %.3g us, T_e %.3g us, T_c %.3g us; MegaScale-Infer rule m >= 2(1 + T_c/T_f) = %.2f",
			    l->g->name, (long long)l->reps, d->ngpu, d->gpu->id, l->w_gpu / 1e6, l->kv / 1e6, l->group,
			    d->lpu->id, l->w_lpu / 1e6, (long long)(l->batch / d->nmb), ta * 1e6, te * 1e6, tc * 1e6,
			    tf > 0 ? 2 * (1 + tc / tf) : 0);
	}
	double t1 = t_step(d, 1, d->ngpu), tm = t_step(d, d->nmb, d->ngpu);
	pass_remark(d->c, REMARK_ANALYSIS, d->entry, NULL, "micro-batches: %d (predicted layer time per step %.4g ms; "
		    "%.4g ms with 1)%s", d->nmb, tm * 1e3, t1 * 1e3, d->c->microbatches == d->nmb ? ", as --micro-batches asks" :
		    d->nmb == 1 ? ": the batch cannot be split, or splitting does not pay (weights are read once per "
				"micro-batch)" : "");
	pass_stat(d->c, "gpu pool", d->ngpu);
	pass_stat(d->c, "lpu pool", d->nlpu);
	pass_stat(d->c, "micro-batches", d->nmb);
}

/* --pools lpu: the whole model on LPUs (KV cache and weights in SRAM), for comparison: each layer
 * on the LPUs that hold its weights at the LPU's format and its KV cache, the entry graph's
 * weights on their own; no crossings, no micro-batches. */
/* The LPU-only pools: each layer's group (its weights at the LPU's format and its KV cache in
 * SRAM) in Layer.group, the entry graph's LPUs in *gentry; returns the LPUs in all. */
static int lpu_only_size(Dis *d, int *gentry)
{
	double use = sram_usable(d->lpu);
	double ew = 0;
	ir_foreach_node(d->entry, n)
		for (int i = 0; i < n->nin; i++)
			if (is_weight(n->in[i]))
				ew += velems(n->in[i]) * d->lpu_bytes;
	*gentry = use > 0 ? (int)ceil(ew / use) : 1;
	int total = *gentry > 0 ? *gentry : 1;
	for (int i = 0; i < d->nlay; i++) {
		Layer *l = &d->lay[i];
		double bytes = (l->e_gpu * d->lpu_bytes) + l->w_lpu + l->kv / 2;
		l->group = use > 0 ? (int)ceil(bytes / use) : 1;
		if (l->group < 1)
			l->group = 1;
		total += (int)(l->reps * l->group);
	}
	return total;
}

/* Seconds of graph g's nodes, each priced on `chips` LPUs as the lowering prices its kernel
 * (Target.node_time of one node: the LPU cycle model, its row-split all-reduce), times mult; a
 * call's callee times its repeat.  View ops are no kernel. */
static double lpu_nodes(const Dis *d, const Graph *g, int chips, double mult, int depth)
{
	double t = 0;
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee && depth < 32)
			t += lpu_nodes(d, n->callee, chips, mult * (double)(n->repeat > 0 ? n->repeat : 1), depth + 1);
		else if (n->op != OP_Call && !(ir_ops[n->op].flags & F_VIEW))
			t += mult * price(d, d->lpu, (TgtWork){ .node = n, .chips = chips, .fmt = DT_INVALID });
	}
	return t;
}

/* One decode step of the layers with every layer on its LPU group (lpu_only_size's groups): each
 * node priced as the plan will price it (lpu_nodes) and the activation's C2C hop to the layer's
 * LPUs (the comm_s lpu_only gives its first node), so the choice compares the plan's own
 * numbers (before, one roofline over the layer: 0.41 ms for a 0.93 ms llama3.1-70b plan). */
static double lpu_step(const Dis *d)
{
	double t = 0;
	for (int i = 0; i < d->nlay; i++) {
		const Layer *l = &d->lay[i];
		double hop = d->c2c && l->g->nin ? price(d, d->lpu, (TgtWork){ .bytes = vbytes(l->g->inputs[0]), .to = d->lpu,
									      .fmt = DT_INVALID }) : 0;
		t += (double)l->reps * (lpu_nodes(d, l->g, l->group > 0 ? l->group : 1, 1, 0) + hop);
	}
	return t;
}

static int lpu_only(Dis *d)
{
	int lcount = num_has(&d->lpu->count) ? (int)d->lpu->count.v : 1;
	int gentry, total = lpu_only_size(d, &gentry);
	d->nlpu = total;
	d->gname = d->lname;
	if (total > lcount) {
		fprintf(stderr, "aicc: error: disaggregate: --pools lpu needs %d %s (weights at %.0f byte(s) per element "
			"and the KV cache in %.4g MB of SRAM each) but machine %s has %d (--set %s.count=%d)\n", total,
			d->lpu->id, d->lpu_bytes, sram_usable(d->lpu) / 1e6, d->c->machine->name, lcount, d->lpu->id, total);
		return 1;
	}
	pass_remark(d->c, REMARK_ANALYSIS, d->entry, NULL, "--pools lpu: the whole model on %d %s (%d for the embedding "
		    "and output head), KV cache in SRAM", total, d->lpu->id, gentry);
	pass_stat(d->c, "lpu pool", total);
	ir_foreach_node(d->entry, n) {
		if (n->op == OP_Call)
			continue;
		n->annot.device = d->lname;
		ir_set_attr_int(n, "pool_chips", gentry > 0 ? gentry : 1);
		ir_set_attr_int(n, "pool_size", total);
	}
	for (int i = 0; i < d->nlay; i++) {
		ir_foreach_node(d->lay[i].g, n)
			n->aux = (void *)(intptr_t)SIDE_GPU;
		annotate(d, d->lay[i].g, 0, 1, d->lay[i].group, 1);
		Node *first = d->lay[i].g->first;   /* the activation hops to this layer's LPUs over C2C */
		if (first && d->c2c && d->lay[i].g->nin)
			ir_set_attr_float(first, "comm_s", price(d, d->lpu, (TgtWork){ .bytes = vbytes(d->lay[i].g->inputs[0]),
									       .to = d->lpu, .fmt = DT_INVALID }));
	}
	for (Graph *g = d->m->graphs; g; g = g->next) {
		int j = 0;
		while (j < d->nlay && d->lay[j].g != g)
			j++;
		if (g != d->entry && j == d->nlay)
			annotate(d, g, 0, 1, 1, 1);
		ir_foreach_node(g, n)
			n->aux = NULL;
	}
	return 0;
}

/* Without --pools (decode): the layout with the shortest predicted layer time per step among
 * hybrid (FFN on the LPUs; its pools and micro-batch count chosen as above), GPU-only (the FFN
 * beside the attention, the GPU pool sized again for all the weights) and LPU-only (every layer on
 * the LPUs that hold its weights and KV cache, when the machine has that many: lpu_step), all
 * priced by the target's node_time.  The FFN goes to the LPUs only when that makes the step
 * shorter (llama3.1-70b decode at batch 32: a GPU HBM stream beats the LPU group plus two link
 * crossings per layer), and the whole model goes to the LPUs when their SRAM bandwidth beats
 * both (small batches, where every step streams all the weights).  One remark names the choice
 * and gives the other two predictions; --pools hybrid|gpu|lpu keeps one regardless.  Returns 1
 * when LPU-only is chosen (the caller runs lpu_only), else 0 with Layer.on_lpu set. */
static int choose_pools(Dis *d)
{
	int keep[MAXLAYERS], group[MAXLAYERS], any = 0;
	for (int i = 0; i < d->nlay; i++)
		any |= keep[i] = d->lay[i].on_lpu, group[i] = d->lay[i].group;
	int lcount = num_has(&d->lpu->count) ? (int)d->lpu->count.v : 1, gentry;
	int ltotal = lpu_only_size(d, &gentry);
	double tl = ltotal <= lcount ? lpu_step(d) : INFINITY;
	for (int i = 0; i < d->nlay; i++)   /* the FFN groups again, for the hybrid */
		d->lay[i].group = group[i];
	int m = 1, gh = 0, lh = 0;
	double th = INFINITY;
	if (any) {
		size_pools(d, 1);
		m = choose_m(d), gh = d->ngpu, lh = d->nlpu;
		th = t_step(d, m, d->ngpu);
	}
	for (int i = 0; i < d->nlay; i++)
		d->lay[i].on_lpu = 0;
	size_pools(d, 1);
	double tg = t_step(d, 1, d->ngpu);
	char hy[160], lo[160];
	if (any)
		snprintf(hy, sizeof hy, "hybrid %.4g ms (FFN on %d %s, attention on %d %s, %d micro-batch(es))", th * 1e3,
			 lh, d->lpu->id, gh, d->gpu->id, m);
	else
		snprintf(hy, sizeof hy, "hybrid not possible (no layer's FFN fits the LPUs)");
	if (isfinite(tl))
		snprintf(lo, sizeof lo, "lpu-only %.4g ms (%d %s)", tl * 1e3, ltotal, d->lpu->id);
	else
		snprintf(lo, sizeof lo, "lpu-only not possible (needs %d %s, machine %s has %d)", ltotal, d->lpu->id,
			 d->c->machine->name, lcount);
	if (tl < th && tl < tg) {
		pass_remark(d->c, REMARK_ANALYSIS, d->entry, NULL, "pools: lpu-only, the shortest predicted layer time per "
			    "step: %s; %s; gpu-only %.4g ms (%d %s); --pools hybrid|gpu chooses another", lo, hy, tg * 1e3,
			    d->ngpu, d->gpu->id);
		return 1;
	}
	if (tg <= th) {
		pass_remark(d->c, any ? REMARK_MISSED : REMARK_ANALYSIS, d->entry, NULL, "pools: gpu-only (FFN stays on "
			    "the GPU pool), the shortest predicted layer time per step: gpu-only %.4g ms (%d %s); %s; %s; "
			    "--pools hybrid|lpu chooses another", tg * 1e3, d->ngpu, d->gpu->id, hy, lo);
		return 0;
	}
	for (int i = 0; i < d->nlay; i++)
		d->lay[i].on_lpu = keep[i];
	pass_remark(d->c, REMARK_ANALYSIS, d->entry, NULL, "pools: hybrid (FFN on the LPU pool), the shortest predicted "
		    "layer time per step: %s; gpu-only %.4g ms (%d %s); %s; --pools gpu|lpu chooses another", hy, tg * 1e3,
		    d->ngpu, d->gpu->id, lo);
	return 0;
}

static const char *inst(Module *m, const Device *dv)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s0", dv->id);
	return arena_strdup(m->arena, buf);
}

int pass_disaggregate(Module *m, PassCtx *c)
{
	const Machine *mach = c->machine;
	Dis d = { .m = m, .c = c, .entry = ir_entry(m) };
	if (!mach || !d.entry)
		return 0;
	d.gpu = machine_first(mach, DEV_GPU);
	d.lpu = machine_first(mach, DEV_LPU);
	if (!d.gpu || !d.lpu) {
		pass_remark(c, REMARK_MISSED, d.entry, NULL, "machine %s has no %s: nothing to disaggregate", mach->name,
			    d.gpu ? "LPU" : d.lpu ? "GPU" : "GPU and LPU");
		return 0;
	}
	d.nvl = machine_link(mach, d.gpu, d.gpu);
	d.c2c = machine_link(mach, d.lpu, d.lpu);
	d.afd = machine_link(mach, d.gpu, d.lpu);
	d.lpu_bytes = weight_bytes(d.lpu);
	d.gname = inst(m, d.gpu);
	d.lname = inst(m, d.lpu);
	if (!collect_layers(&d)) {
		pass_remark(c, REMARK_MISSED, d.entry, NULL, "no layer graph with an Attention: everything stays on %s", d.gname);
		ir_foreach_node(d.entry, n)
			n->annot.device = d.gname;
		return 0;
	}
	for (int i = 0; i < d.nlay; i++)
		describe(&d, &d.lay[i]);
	if (c->pools && !strcmp(c->pools, "lpu"))
		return lpu_only(&d);
	int prefill = c->phase && !strcmp(c->phase, "prefill");
	if (prefill)
		pass_remark(c, REMARK_ANALYSIS, d.entry, NULL, "prefill runs on the GPU pool (backends.md §4a, §5): "
			    "compute-bound over the prompt, and the KV cache it writes stays in the HBM where decode "
			    "attention reads it, so no KV transfer");
	if ((c->pools && !strcmp(c->pools, "gpu")) || prefill)
		for (int i = 0; i < d.nlay; i++)
			d.lay[i].on_lpu = 0;
	else if (!c->pools && choose_pools(&d))
		return lpu_only(&d);
	size_pools(&d, 0);
	d.nmb = choose_m(&d);
	report(&d);
	/* annotate: sides are in Node.aux of each layer graph and its callees */
	ir_foreach_node(d.entry, n) {
		n->aux = NULL;
		if (n->op == OP_Call)
			continue;
		n->annot.device = d.gname;
		ir_set_attr_str(n, "placement_reason", "outside the layers (embedding, final norm, output head): GPU pool (disaggregate)");
		ir_set_attr_int(n, "pool_chips", d.ngpu);
		ir_set_attr_int(n, "pool_size", d.ngpu);
	}
	for (Graph *g = m->graphs; g; g = g->next) {
		if (g == d.entry)
			continue;
		int j = 0;
		while (j < d.nlay && d.lay[j].g != g)
			j++;
		if (j == d.nlay) {      /* a callee of a layer: attention side unless a layer's FFN calls it */
			ir_foreach_node(g, n)
				n->aux = (void *)(intptr_t)SIDE_GPU;
			annotate(&d, g, -1, 1, d.ngpu, 1.0 / d.nmb);
		} else
			annotate(&d, g, d.lay[j].on_lpu, d.lay[j].group, d.ngpu,
				 d.lay[j].on_lpu && d.nmb > 1 ? 1.0 / d.nmb : 1);
	}
	for (int i = 0; i < d.nlay; i++)
		if (d.lay[i].on_lpu)
			ir_foreach_node(d.lay[i].g, n)
				if ((intptr_t)n->aux == SIDE_LPU || (intptr_t)n->aux == SIDE_GPU)
					pass_remark(c, REMARK_ANALYSIS, d.lay[i].g, n, "placed %s on %s: %s", ir_ops[n->op].name,
						    n->annot.device, (intptr_t)n->aux == SIDE_LPU ?
						    "FFN side (after the attention residual), weights in LPU SRAM" :
						    "attention side (attention, its inputs and its output projection), KV cache in HBM");
	if (d.nmb > 1) {
		Graph *from[MAXLAYERS], *to[MAXLAYERS];
		int n = 0;
		for (int i = 0; i < d.nlay; i++)
			if (d.lay[i].on_lpu) {
				from[n] = d.lay[i].g;
				to[n++] = d.lay[i].mb = mb_graph(&d, d.lay[i].g, d.nmb);
			}
		rewrite_calls(&d, from, to, n, d.nmb);
		for (int i = 0; i < n; i++) {      /* unlink the replaced bodies */
			Graph **pp = &m->graphs;
			while (*pp && *pp != from[i])
				pp = &(*pp)->next;
			if (*pp) {
				*pp = from[i]->next;
				m->ngraphs--;
			}
		}
		for (Graph *g = m->graphs; g; g = g->next)
			ir_foreach_node(g, nd)
				if (nd->op == OP_Split || nd->op == OP_Concat)
					if (!nd->annot.device)
						nd->annot.device = d.gname;
		pass_changed(c, "micro-batched layers");
		if (ir_infer_shapes(m))
			return 1;
	}
	for (Graph *g = m->graphs; g; g = g->next) {
		transfers(&d, g);
		ir_foreach_node(g, n)
			n->aux = NULL;
	}
	return 0;
}
