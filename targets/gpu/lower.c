/* targets/gpu/lower.c: the lowering walk of the GPU targets (hopper, blackwell).
 *
 * A shape-inferred graph becomes a GPU plan: calls flattened (targets/flatten.c), one kernel
 * per node in graph order on the stream of the GPU it is placed on (one GPU unless the graph is
 * partitioned: targets/devices.c lowers placements, transfers and collectives), float values held in bf16 (explicit conversions keep
 * their dtype, integers stay integers), buffers in HBM placed first-fit with reuse after their
 * last use.  Each kernel gets its numerics (RtExecOpts: the MMA operand format, the FP8 operand
 * scaling, the Hopper FP8 promotion interval, the software exp2) and its tiling and cost as `t.*`
 * attributes (the L2 reuse decision included): matrix
 * products and attention from the target's hooks (targets/<t>/tile.c), every other node as a
 * memory-bound kernel.  Nodes of a fusion group (passes/fuse.c: attribute fusion_group) after
 * the first run inside the first one's kernel: no launch, no HBM traffic for values the group
 * produces itself.  Weight-only transforms of parameters (the quantization pass's weight
 * Quantize nodes and their Transposes) run once at load: t.phase="load", no per-step cost.  The
 * precision policy is --precision FORMAT[+OPTION]... (docs/targets-gpu.md); a node's own
 * `precision` attribute (the quantization pass) overrides it. */
#include "targets/gpu/gpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 256          /* cudaMalloc alignment */
typedef TgtAnn Ann;        /* the t.* attributes of one kernel */

typedef struct GpuLw {
	const TgtInput *in;
	const GpuHooks *h;
	GpuArch a;
	const Precision *pol;        /* --precision (targets/precision.h) */
	Plan *p;
	Flat f;
	int *buf, *gfirst, *glast;   /* flat value -> buffer; flat node -> first/last node of its group */
	unsigned char *gate;         /* flat value -> 1: MoE router logits, held in f32 */
	const char **fmt;            /* flat value -> its buffer format (NULL: row), weight_formats */
	RtError *e;
	TgtDevs devs;        /* GPUs used, their HBM heaps and streams (targets/devices.c) */
} GpuLw;

static void put_cost(Ann *t, const GpuCost *c)
{
	tgt_ann_put(t, "mma_us", "%.4g", c->mma * 1e6);
	tgt_ann_put(t, "smem_us", "%.4g", c->smem * 1e6);
	tgt_ann_put(t, "hbm_us", "%.4g", c->hbm * 1e6);
	if (c->l2 > 0)
		tgt_ann_put(t, "l2_us", "%.4g", c->l2 * 1e6);
	tgt_ann_put(t, "sfu_us", "%.4g", c->sfu * 1e6);
	tgt_ann_put(t, "fma_us", "%.4g", c->fma * 1e6);
	tgt_ann_put(t, "overlap", "%.4g", c->overlap);
	tgt_ann_put(t, "fixed_us", "%.4g", c->fixed * 1e6);
	if (c->floor > 0)
		tgt_ann_put(t, "floor_us", "%.4g", c->floor * 1e6);
	tgt_ann_put(t, "time_us", "%.4g", gpu_cost_total(c) * 1e6);
	double term;
	const char *b = gpu_cost_bound(c, &term);
	if (gpu_cost_total(c) > 0) {
		tgt_ann_put(t, "bound", "%s", b);
		tgt_ann_put(t, "bound_us", "%.4g", term * 1e6);
	}
}

/* ---- buffers (first fit, as the reference target) ---- */
static DType gpu_dtype(const GpuLw *w, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt))
		return v->dt;
	if (v->def >= 0) {
		const Node *n = w->f.nodes[v->def].n;
		/* Quantize {to} returns its values dequantized in its input's dtype (ir/ops.def) */
		if (n->op == OP_Quantize && w->f.nodes[v->def].nin >= 1 && w->f.nodes[v->def].in[0] >= 0 &&
		    rt_dtypes[v->dt].kind == K_FLOAT && rt_dtypes[v->dt].bits >= 16)
			return gpu_dtype(w, &w->f.vals[w->f.nodes[v->def].in[0]]);
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
	}
	if (rt_dtypes[v->dt].bits < 16)
		return v->dt;      /* already narrow (FP8 inputs): kept */
	/* router logits stay f32 from the MMA's f32 accumulator: expert choice is discrete, and
	 * serving stacks gate in f32 (vLLM's fused_moe and HF Mixtral take the router softmax and
	 * top-k in f32) */
	if (w->gate && w->gate[v - w->f.vals])
		return DT_F32;
	return v->dt == DT_F64 ? DT_F32 : DT_BF16;
}

static DType gpu_dtype_of(const void *w, const FlatVal *v) { return gpu_dtype(w, v); }




/* ---- per-kernel tiling and cost ---- */
static double numel(const FlatVal *v)
{
	double n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= (double)v->dims[i];
	return n;
}

/* The MMA format of node n: its `precision` attribute, or the policy for matrix products.  A
 * precision the tensor cores lack (f32, f64: a node the quantization pass kept wide, such as a
 * first or last layer) runs at bf16, the format its buffers hold, not at the policy's. */
static DType node_format(const GpuLw *w, const Node *n, int matmul)
{
	DType dt = prec_node_format(rt_attr_str(&n->attrs, "precision", NULL));
	if (dt != DT_INVALID)
		return dev_supports(w->a.dev, dt) && num_has(&w->a.dev->peak[dt]) ? dt : DT_BF16;
	return matmul ? w->pol->word->mma : DT_BF16;
}


static const char *scale_name(PrecScale s)
{
	return s == PREC_SCALE_TENSOR ? "tensor" : s == PREC_SCALE_1X128 ? "1x128" : s == PREC_SCALE_128X128 ? "1x128,128x128" : "none";
}

/* ---- weight transforms done once at load (tgt_load_value, targets/instr.c) ---- */
static int load_value(const GpuLw *w, int v) { return tgt_load_value(&w->f, v); }

/* Bytes per element a GEMM reads for its weight operand v when v was quantized at load to a
 * narrower storage format than the MMA's (w4a16: int4 codes plus one f32 scale per group, the
 * dequantization to the MMA format happening in the kernel's mainloop, as Marlin-style W4A16
 * kernels do); 0 when v is not such a weight. */
static double load_weight_bytes(const GpuLw *w, int v)
{
	while (v >= 0 && w->f.vals[v].def >= 0 && load_value(w, v)) {
		const FlatNode *fn = &w->f.nodes[w->f.vals[v].def];
		if (fn->n->op == OP_Quantize) {
			const char *to = rt_attr_str(&fn->n->attrs, "to", NULL);
			DType dt = to ? rt_dtype_lookup(to) : DT_INVALID;
			int64_t g = rt_attr_int(&fn->n->attrs, "group", -2);
			if (dt == DT_INVALID)
				return 0;
			double b = gpu_elem_bytes(dt);
			if (g > 0)
				b += 4.0 / (double)g;          /* f32 scale per group (runtime/quant.c) */
			return b;
		}
		if (fn->nin < 1)
			return 0;
		v = fn->in[0];
	}
	return 0;
}

/* The L2 decision of a GEMM tile (gpu/model.c gemm_l2): what is re-read from HBM and why. */
static void put_l2(Ann *t, const GpuArch *a, const GemmTile *g)
{
	double mb = a->l2 / 1e6;
	if (a->l2 <= 0)
		tgt_ann_put(t, "l2", "not in the machine file: operands read once");
	else if (!g->raster)
		tgt_ann_put(t, "l2", "operands %.3g MB fit in %.3g MB: read once", g->l2_foot / 1e6, mb);
	else if (g->raster == 'T')
		tgt_ann_put(t, "l2", "a wave's panels (%.3g MB) exceed %.3g MB: each wave reads its own, A x%.3g, B x%.3g", g->l2_foot / 1e6,
		    mb, g->reload_a, g->reload_b);
	else
		tgt_ann_put(t, "l2", "raster along %c in groups of %d tile %s (wave %.3g MB of %.3g MB): A x%.0f, B x%.0f from HBM",
		    g->raster == 'N' ? 'N' : 'M', g->group, g->raster == 'N' ? "rows" : "columns", g->l2_foot / 1e6, mb,
		    g->reload_a, g->reload_b);
}

/* The interpreter's operand scaling (runtime/kernels/matmul.c) for a GEMM scaled as sc. */
static int fp8_scale_opt(PrecScale sc)
{
	return sc == PREC_SCALE_TENSOR ? RT_FP8_TENSOR : sc == PREC_SCALE_1X128 ? RT_FP8_1X128 : sc == PREC_SCALE_128X128
	       ? RT_FP8_128X128 : RT_FP8_NONE;
}

/* Whether both operands already are FP8 tensors: their values are on the E4M3 grid as given
 * (scale 1), so the kernel scales nothing. */
static int fp8_operands(const FlatVal *A, const FlatVal *B)
{
	return rt_dtypes[A->dt].bits == 8 && rt_dtypes[A->dt].kind == K_FLOAT && rt_dtypes[B->dt].bits == 8 &&
	       rt_dtypes[B->dt].kind == K_FLOAT;
}

/* The FP8 operand scaling of GEMM fn at MMA format `in`: none when both operands already are FP8
 * tensors, else the policy's, and the default recipe (128x128 weight blocks) for a node the
 * quantization pass put at fp8 under another policy. */
static PrecScale gemm_scale(const GpuLw *w, const FlatNode *fn, DType in)
{
	if (in != DT_F8E4M3)
		return PREC_SCALE_NONE;
	if (fp8_operands(&w->f.vals[fn->in[0]], &w->f.vals[fn->in[1]]))
		return PREC_SCALE_NONE;
	return w->pol->word->mma == DT_F8E4M3 ? w->pol->scale : PREC_SCALE_128X128;
}

/* ---- weights stored in their MMA format ----
 * A weight every reader of which is a GEMM taking it as B at a narrow MMA format (FP8 with its
 * scaling, or a block-scaled MX/NVFP4 format) is stored in HBM encoded that way, as serving
 * stacks keep FP8/FP4 checkpoints (TensorRT-LLM ModelOpt, vLLM): its buffer format is "q.FMT"
 * (runtime/plan.h plan_format_bytes) and it takes that format's bytes in the memory plan.  The
 * interpreter holds its values in the declared dtype and every reader encodes them with the
 * same scaling, so the numerics are those of the stored codes. */
static const char *weight_format(const GpuLw *w, const FlatNode *fn)
{
	return prec_weight_format(w->pol, w->a.dev, rt_attr_str(&fn->n->attrs, "precision", NULL),
				  fp8_operands(&w->f.vals[fn->in[0]], &w->f.vals[fn->in[fn->n->op == OP_GroupedMatMul ? 2 : 1]]));
}

/* A value computed at load (load_value; a tensor-parallel shard of one is too). */
static int stored_weight(const GpuLw *w, int v) { return load_value(w, v); }

static int gemm_node(const FlatNode *fn)
{
	return ((fn->n->op == OP_MatMul || fn->n->op == OP_Gemm) && fn->nin >= 2) || (fn->n->op == OP_GroupedMatMul && fn->nin >= 3);
}

/* The input of a matrix product that is its weight operand: B, or a grouped GEMM's expert W. */
static int weight_input(const FlatNode *fn) { return fn->n->op == OP_GroupedMatMul ? 2 : 1; }

/* Fills w->fmt: the stored format of every weight value (load-time values: parameters, their
 * shards and weight transforms) all of whose readers agree on one (weight_format), else row. */
static int weight_formats(GpuLw *w)
{
	unsigned char *mixed = calloc((size_t)w->f.nvals + 1, 1);
	if (!(w->fmt = calloc((size_t)w->f.nvals + 1, sizeof *w->fmt)) || !mixed) {
		free(mixed);
		return rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	}
	for (int i = 0; i < w->f.nnodes; i++) {
		const FlatNode *fn = &w->f.nodes[i];
		for (int k = 0; k < fn->nin; k++) {
			int v = fn->in[k];
			if (v < 0 || mixed[v])
				continue;
			const char *f = gemm_node(fn) && k == weight_input(fn) && rt_dtypes[w->f.vals[v].dt].bits > 8 && stored_weight(w, v)
					? weight_format(w, fn) : NULL;   /* already narrow (quantized at load): as it is */
			if (!f || (w->fmt[v] && strcmp(w->fmt[v], f)))
				mixed[v] = 1, w->fmt[v] = NULL;
			else
				w->fmt[v] = f;
		}
	}
	for (int v = 0; v < w->f.nvals; v++)     /* a graph output is handed back as it is */
		if (w->f.vals[v].is_output)
			w->fmt[v] = NULL;
	free(mixed);
	return 0;
}

static const char *gpu_format_of(const void *ctx, const FlatVal *v)
{
	const GpuLw *w = ctx;
	return w->fmt ? w->fmt[v - w->f.vals] : NULL;
}

static int gemm_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *A = &w->f.vals[fn->in[0]], *B = &w->f.vals[fn->in[1]], *Y = &w->f.vals[fn->out[0]];
	GemmShape s = { .in = node_format(w, fn->n, 1), .out_bytes = rt_dtype_bytes(gpu_dtype(w, Y), 1),
			.nosplit = w->pol->nosplitk };
	if (Y->rank < 1 || A->rank < 1 || B->rank < 1)
		return 0;
	s.N = Y->dims[Y->rank - 1];
	s.M = Y->rank >= 2 ? Y->dims[Y->rank - 2] : 1;
	int ta = fn->n->op == OP_Gemm && rt_attr_int(&fn->n->attrs, "transA", 0);
	s.K = A->rank >= 2 && ta ? A->dims[A->rank - 2] : A->dims[A->rank - 1];
	s.batch = 1;
	for (int i = 0; i + 2 < Y->rank; i++)
		s.batch *= Y->dims[i];
	if (B->rank <= 2)     /* [B, S, K] x [K, N]: one GEMM over B*S rows, the weight read once */
		s.M *= s.batch, s.batch = 1;
	s.b_bytes = load_weight_bytes(w, fn->in[1]);
	if (s.b_bytes >= gpu_elem_bytes(s.in))
		s.b_bytes = 0;   /* not narrower than the MMA operand: read as the MMA format */
	/* a node the quantization pass put at fp8 under another policy (auto, @precision) gets the
	 * default recipe: the pass left its operands to this kernel's block scaling; the promotion
	 * interval is the machine's (<fp8-scaling promote>: N_C = 128 on Hopper, 0 on Blackwell) */
	int fp8pol = w->pol->word->mma == DT_F8E4M3, promote = fp8pol ? w->pol->promote : w->a.dev->fp8_promote;
	if (s.in == DT_F8E4M3)
		s.scale = gemm_scale(w, fn, s.in), s.promote = promote > 0 ? promote : 0;
	GemmTile tile = { 0 };
	char why[256] = "";
	if (s.M == 0 || s.N == 0 || s.K == 0 || !w->h->gemm(&w->a, &s, &tile, why, sizeof why))
		return 0;
	gpu_launch(&w->a, w->pol->graph, &tile.c);
	pi->opts.mma_in = s.in;
	pi->opts.fp8_scale = fp8_scale_opt(s.scale);
	if (promote && s.in == DT_F8E4M3)   /* +nopromote: one promotion at the end of K */
		pi->opts.fp8_promote_k = promote > 0 ? promote : (int)((s.K + 31) / 32 * 32);
	tgt_ann_put(t, "kind", "gemm");
	tgt_ann_put(t, "mma", "%s.m%dn%dk%d.%s", tile.family, tile.im, tile.in, tile.ik, rt_dtype_name(s.in));
	tgt_ann_put(t, "tile", "%dx%dx%d", tile.bm, tile.bn, tile.bk);
	tgt_ann_put(t, "cta", "%d", tile.cta2 ? 2 : 1);
	tgt_ann_put(t, "cluster", "%dx%d", tile.cm, tile.cn);
	tgt_ann_put(t, "multicast", "%s", tile.cm * tile.cn > 1 ? (tile.cm > 1 ? "B" : "A") : "none");
	tgt_ann_put(t, "stages", "%d", tile.stages);
	tgt_ann_put(t, "smem", "%.0f", tile.smem_bytes);
	if (w->a.tmem > 0)
		tgt_ann_put(t, "tmem", "%.0f cols, %d accumulator stages", tile.tmem_cols, tile.acc_stages);
	tgt_ann_put(t, "sched", "persistent");
	tgt_ann_put(t, "waves", "%lld", (long long)tile.waves);
	tgt_ann_put(t, "tiles", "%lld on %lld units", (long long)tile.tiles, (long long)tile.units);
	if (tile.split > 1)
		tgt_ann_put(t, "split_k", "%d", tile.split);
	if (s.in == DT_F8E4M3) {
		tgt_ann_put(t, "scale", "%s", scale_name(s.scale));
		tgt_ann_put(t, "promote", "%s", pi->opts.fp8_promote_k == 128 ? "128" : w->a.dev->fp8_promote > 0 ? "none" : "exact");
	}
	if (rt_dtypes[s.in].kind == K_BLOCK)
		tgt_ann_put(t, "block_scale", "%s per %d, scale tiles via tcgen05.cp to TMEM", rt_dtype_name(rt_dtypes[s.in].scale),
		    rt_dtypes[s.in].block);
	put_l2(t, &w->a, &tile);
	if (s.b_bytes > 0)
		tgt_ann_put(t, "weight", "%.4g bytes/element in HBM (quantized at load), converted to %s in the mainloop", s.b_bytes,
		    rt_dtype_name(s.in));
	if (*why)
		tgt_ann_put(t, "why", "%s", why);
	put_cost(t, &tile.c);
	return 1;
}

/* A grouped GEMM (MoE experts: GroupedMatMul Y[r] = Xs[r] @ W[e] over each expert's rows): R
 * routed rows spread over E experts.  Routing is data-dependent; with uniform routing the
 * expected number of experts that receive rows is E (1 - (1 - 1/E)^R) (each row picks one of E
 * independently), and each runs one GEMM of its share of the rows against its own weight (read
 * once): priced as a batch of that many GEMMs of ceil(R / active) rows (the grouped GEMM of
 * CUTLASS / vLLM fused_moe: one kernel, one tile scheduler over all experts' tiles). */
static int gmm_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *X = &w->f.vals[fn->in[0]], *W = &w->f.vals[fn->in[2]], *Y = &w->f.vals[fn->out[0]];
	if (X->rank != 2 || W->rank != 3 || Y->rank != 2 || X->dims[0] < 1 || W->dims[0] < 1)
		return 0;
	int64_t R = X->dims[0], E = W->dims[0];
	double active = (double)E * (1 - pow(1 - 1.0 / (double)E, (double)R));
	int64_t ea = (int64_t)ceil(active - 1e-9);
	if (ea < 1)
		ea = 1;
	if (ea > E)
		ea = E;
	GemmShape s = { .in = node_format(w, fn->n, 1), .out_bytes = rt_dtype_bytes(gpu_dtype(w, Y), 1),
			.nosplit = w->pol->nosplitk, .batch = ea, .M = (R + ea - 1) / ea, .K = W->dims[1], .N = W->dims[2] };
	int fp8pol = w->pol->word->mma == DT_F8E4M3, promote = fp8pol ? w->pol->promote : w->a.dev->fp8_promote;
	if (s.in == DT_F8E4M3) {
		s.scale = fp8_operands(X, W) ? PREC_SCALE_NONE : fp8pol ? w->pol->scale : PREC_SCALE_128X128;
		s.promote = promote > 0 ? promote : 0;
	}
	GemmTile tile = { 0 };
	char why[256] = "";
	if (s.M == 0 || s.N == 0 || s.K == 0 || !w->h->gemm(&w->a, &s, &tile, why, sizeof why))
		return 0;
	gpu_launch(&w->a, w->pol->graph, &tile.c);
	pi->opts.mma_in = s.in;
	pi->opts.fp8_scale = fp8_scale_opt(s.scale);
	if (promote && s.in == DT_F8E4M3)
		pi->opts.fp8_promote_k = promote > 0 ? promote : (int)((s.K + 31) / 32 * 32);
	tgt_ann_put(t, "kind", "gemm");
	tgt_ann_put(t, "mma", "%s.m%dn%dk%d.%s", tile.family, tile.im, tile.in, tile.ik, rt_dtype_name(s.in));
	tgt_ann_put(t, "tile", "%dx%dx%d", tile.bm, tile.bn, tile.bk);
	tgt_ann_put(t, "experts", "%lld of %lld receive rows (expected, uniform routing of %lld rows): %lld rows each",
		    (long long)ea, (long long)E, (long long)R, (long long)s.M);
	tgt_ann_put(t, "waves", "%lld", (long long)tile.waves);
	tgt_ann_put(t, "tiles", "%lld on %lld units", (long long)tile.tiles, (long long)tile.units);
	if (tile.split > 1)
		tgt_ann_put(t, "split_k", "%d", tile.split);
	if (*why)
		tgt_ann_put(t, "why", "%s", why);
	put_cost(t, &tile.c);
	return 1;
}

static int attn_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *Q = &w->f.vals[fn->in[0]], *K = &w->f.vals[fn->in[1]], *V = &w->f.vals[fn->in[2]];
	const Attrs *at = &fn->n->attrs;
	AttnShape s = { .in = node_format(w, fn->n, 0), .io_bytes = rt_dtype_bytes(gpu_dtype(w, Q), 1),
			.kv_bytes = rt_dtype_bytes(gpu_dtype(w, K), 1), .causal = (int)rt_attr_int(at, "is_causal", 0) };
	/* FP8 Q and K (FA3's FP8 forward, arXiv 2407.08608 §3.3): both products at the FP8 rate */
	if (fp8_operands(Q, K) && dev_supports(w->a.dev, DT_F8E4M3) && num_has(&w->a.dev->peak[DT_F8E4M3]))
		s.in = DT_F8E4M3;
	if (Q->rank == 4) {
		s.B = Q->dims[0], s.qh = Q->dims[1], s.Sq = Q->dims[2], s.d = Q->dims[3];
		s.kvh = K->dims[1], s.T = K->dims[2], s.dv = V->dims[3];
	} else if (Q->rank == 3) {
		s.qh = rt_attr_int(at, "q_num_heads", 1), s.kvh = rt_attr_int(at, "kv_num_heads", 1);
		s.B = Q->dims[0], s.Sq = Q->dims[1], s.T = K->dims[1];
		s.d = Q->dims[2] / (s.qh ? s.qh : 1), s.dv = V->dims[2] / (s.kvh ? s.kvh : 1);
	} else
		return 0;
	if (fn->nin > 4 && fn->in[4] >= 0) {
		const FlatVal *pk = &w->f.vals[fn->in[4]];
		s.P = pk->rank == 4 ? pk->dims[2] : 0;
		s.kv_bytes = rt_dtype_bytes(gpu_dtype(w, pk), 1);   /* the cache's format (--kv-format) */
		s.T += s.P;
	}
	if (s.B == 0 || s.qh == 0 || s.kvh == 0 || s.Sq == 0 || s.T == 0)
		return 0;
	AttnTile tile = { 0 };
	w->h->attn(&w->a, &s, &tile);
	gpu_launch(&w->a, w->pol->graph, &tile.c);
	pi->opts.mma_in = s.in;
	if (tile.emu > 0)
		pi->opts.exp2_poly = tile.poly;
	tgt_ann_put(t, "kind", tile.decode ? "attention.decode" : "attention");
	tgt_ann_put(t, "tile", "%dx%dx%lld", tile.bm, tile.bn, (long long)s.d);
	if (tile.decode)
		tgt_ann_put(t, "split_kv", "%d", tile.split);
	tgt_ann_put(t, "sched", "persistent, longest first");
	tgt_ann_put(t, "waves", "%lld", (long long)tile.waves);
	tgt_ann_put(t, "tiles", "%lld", (long long)tile.tiles);
	tgt_ann_put(t, "exp2", "%.0f%% polynomial (degree %d) on the FMA pipe, %.0f%% on the SFU", tile.emu * 100, tile.poly,
	    (1 - tile.emu) * 100);
	if (!tile.decode)
		tgt_ann_put(t, "l2", tile.kv_reload > 1 ? "K/V of the heads in flight exceed L2: read once per wave of a head's Q tiles, x%.0f"
			  : "K/V of the heads in flight fit in L2: read once", tile.kv_reload);
	put_cost(t, &tile.c);
	return 1;
}

/* Memory-bound kernels: bytes at HBM bandwidth, FLOP on the FMA pipe, transcendental outputs on
 * the SFU (backends.md §0).  Inside a fusion group only the group's external traffic counts;
 * a table lookup reads at most as many bytes of its table as it writes. */
static void mem_kernel(GpuLw *w, int i, PlanInstr *pi, Ann *t)
{
	const FlatNode *fn = &w->f.nodes[i];
	int grp = w->gfirst[i] >= 0, lead = !grp || w->gfirst[i] == i;
	double bytes = 0, out = 0, out_bytes = 0;
	for (int k = 0; k < fn->nout; k++)
		out_bytes += (double)w->p->buffers[w->buf[fn->out[k]]].size;
	for (int k = 0; k < fn->nin; k++) {
		if (fn->in[k] < 0)
			continue;
		int def = w->f.vals[fn->in[k]].def;
		double b = (double)w->p->buffers[w->buf[fn->in[k]]].size;
		if (ir_op_is_lookup(fn->n->op, k) && b > out_bytes)
			b = out_bytes;
		if (!(grp && def >= 0 && w->gfirst[def] == w->gfirst[i]))
			bytes += b;
	}
	for (int k = 0; k < fn->nout; k++) {
		out += numel(&w->f.vals[fn->out[k]]);
		if (!grp || w->glast[w->gfirst[i]] == i || w->f.vals[fn->out[k]].is_output)
			bytes += (double)w->p->buffers[w->buf[fn->out[k]]].size;
	}
	GpuCost c = { .overlap = 1 };
	if (ir_ops[fn->n->op].flags & F_VIEW) {
		tgt_ann_put(t, "kind", "view");
	} else {
		c.hbm = bytes / w->a.hbm_bw;
		c.fma = pi->flops / 2 / (w->a.fma * w->a.sms);
		if (ir_ops[fn->n->op].flags & F_TRANS)
			c.sfu = out / (w->a.sfu * w->a.sms);
		if (lead)
			gpu_launch(&w->a, w->pol->graph, &c);
		tgt_ann_put(t, "kind", "memory");
	}
	if (grp && !lead)
		tgt_ann_put(t, "fused", "into %s", w->p->buffers[w->buf[w->f.nodes[w->gfirst[i]].out[0]]].name);
	if (tgt_load_kernel(&w->f, w->gfirst, i)) {
		tgt_ann_put(t, "phase", "load");
		tgt_ann_put(t, "load_us", "%.4g", gpu_cost_total(&c) * 1e6);
		c = (GpuCost){ .overlap = 1 };
	}
	put_cost(t, &c);
}

static int add_kernel(GpuLw *w, int i)
{
	const FlatNode *fn = &w->f.nodes[i];
	int ins[TGT_MAX_OPERANDS], outs[TGT_MAX_OPERANDS];
	PlanInstr pi;
	if (tgt_devs_handles(&w->devs, &w->f, i)) {   /* transfers, collectives, weight shards */
		Op op = fn->n->op;
		if (op != OP_AllReduce && op != OP_AllGather && op != OP_AllToAll)
			return tgt_devs_emit(&w->devs, w->p, &w->f, i, w->buf, NULL, w->e);
		Ann t = { .n = 0 };
		PlanInstr ci;
		plan_instr_init(&ci, PI_COLLECTIVE);
		tgt_ann_put(&t, "kind", "collective");
		/* the collective library's fixed cost per call (NCCL's own latency model: base
		 * latency of the ring/LL protocol), on top of the runtime's alpha-beta ring time */
		tgt_ann_put(&t, "base_us", "%.4g", w->a.coll_base * 1e6);
		tgt_ann_put(&t, "bound", "link");
		ci.tile = t.kv, ci.ntile = t.n;
		return tgt_devs_emit(&w->devs, w->p, &w->f, i, w->buf, &ci, w->e);
	}
	tgt_devs_bufs(&w->devs, &w->f, i, w->buf);
	if (tgt_kernel_instr(&pi, w->p, &w->f, i, w->buf, ins, outs, w->e) < 0)
		return -1;
	int dev = w->devs.dev[w->devs.node_pl[i]];
	if (strcmp(w->p->devices[dev].kind, "gpu")) {
		if (!w->h->foreign)
			return rt_errorf(w->e, RT_EUSER, "aicc: error: target %s places '%s' on device '%s', which is not a GPU",
					 w->h->target, w->f.vals[fn->out[0]].name, w->p->devices[dev].name);
		if (w->h->foreign(w->h->ctx, w->p, dev, &w->f, i, &pi, w->e) < 0)
			return -1;
		return tgt_devs_emit(&w->devs, w->p, &w->f, i, w->buf, &pi, w->e);
	}
	Ann t = { .n = 0 };
	unsigned fl_op = ir_ops[fn->n->op].flags;
	int done = 0;
	if ((fn->n->op == OP_MatMul || fn->n->op == OP_Gemm) && fn->nin >= 2)
		done = gemm_kernel(w, fn, &pi, &t);
	else if (fn->n->op == OP_GroupedMatMul && fn->nin >= 3)
		done = gmm_kernel(w, fn, &pi, &t);
	else if ((fl_op & F_ATTN) && fn->nin >= 3)
		done = attn_kernel(w, fn, &pi, &t);
	if (!done) {
		t.n = 0;
		mem_kernel(w, i, &pi, &t);
		/* no kernel model of its own: a matrix-unit op (or attention) priced as a memory-bound
		 * kernel is a coverage gap, said so in the plan (t.coverage) and by `aicc run` */
		if (ir_ops[fn->n->op].cls == OC_matrix || (fl_op & F_ATTN))
			tgt_ann_put(&t, "coverage", "no %s model for %s on this target: priced as a memory-bound kernel "
				    "(bytes at HBM bandwidth, FLOP on the FMA pipe)", ir_ops[fn->n->op].cls == OC_matrix ?
				    "matrix-unit" : "attention", ir_ops[fn->n->op].name);
	}
	pi.tile = t.kv, pi.ntile = t.n;
	return tgt_devs_emit(&w->devs, w->p, &w->f, i, w->buf, &pi, w->e);
}

static int lower_body(GpuLw *w)
{
	if (!(w->gate = calloc((size_t)w->f.nvals + 1, 1)))
		return rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	for (int i = 0; i < w->f.nnodes; i++)
		if (w->f.nodes[i].n->op == OP_TopKRouter && w->f.nodes[i].nin >= 1 && w->f.nodes[i].in[0] >= 0)
			w->gate[w->f.nodes[i].in[0]] = 1;
	if (weight_formats(w) < 0)
		return -1;
	w->devs.format = gpu_format_of, w->devs.format_ctx = w;
	if (tgt_devs_values(&w->devs, w->p, &w->f, gpu_dtype_of, w, w->buf, w->in->m->dir, w->e) < 0)
		return -1;
	tgt_fusion_groups(&w->f, w->gfirst, w->glast);
	for (int i = 0; i < w->f.nnodes; i++)
		if (add_kernel(w, i) < 0)
			return -1;
	return tgt_add_io(w->p, &w->f, w->in->g, w->buf, w->e);
}

static int lower_setup(GpuLw *w)
{
	const TgtMachine *tm = w->in->machine;
	const Device *d = machine_first(tm->m, DEV_GPU);
	if (!d)
		return rt_errorf(w->e, RT_EUSER, "aicc: error: machine '%s' has no GPU for target %s", tm->m->name, w->h->target);
	if (!dev_mma(d, strcmp(w->h->target, "hopper") == 0 ? "wgmma" : "tcgen05.1cta"))
		return rt_errorf(w->e, RT_EUSER, "aicc: error: machine '%s' (%s) has no %s MMA; target %s needs it",
				 tm->m->name, d->arch ? d->arch : "?", strcmp(w->h->target, "hopper") == 0 ? "wgmma" : "tcgen05",
				 w->h->target);
	if (gpu_arch(d, &w->a, w->e) < 0)
		return -1;
	w->pol = w->in->prec;
	w->p = plan_new(w->h->target, tm->desc->machine, tm->desc->machine_hash, w->e);
	if (!w->p)
		return -1;
	if (plan_set_source(w->p, w->in->model, w->in->binds, w->in->prec->spec, w->e) < 0)
		return -1;
	if (tgt_devs_init(&w->devs, w->p, tm, &w->f, DEV_GPU, "hbm", ALIGN, w->e) < 0)
		return -1;
	if (strcmp(w->p->spaces[w->devs.space[0]].name + strlen(w->p->devices[w->devs.dev[0]].name), ".hbm") &&
	    !strcmp(w->p->devices[w->devs.dev[0]].kind, "gpu"))
		return rt_errorf(w->e, RT_EUSER, "aicc: error: machine '%s' has no HBM space on '%s'", tm->m->name,
				 w->p->devices[w->devs.dev[0]].name);
	size_t n = (size_t)w->f.nvals + 1, nn = (size_t)w->f.nnodes + 1;
	w->buf = malloc(sizeof(int) * n);
	w->gfirst = malloc(sizeof(int) * nn);
	w->glast = malloc(sizeof(int) * nn);
	if (!w->buf || !w->gfirst || !w->glast)
		return rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	return 0;
}

Plan *gpu_lower(const TgtInput *in, const GpuHooks *h, RtError *e)
{
	GpuLw w = { .in = in, .h = h, .e = e };
	int rc = tgt_flatten(in->g, &w.f, e);
	if (rc == 0)
		rc = lower_setup(&w);
	if (rc == 0)
		rc = lower_body(&w);
	if (rc == 0 && plan_verify(w.p, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rc = rt_errorf(e, RT_EINTERNAL, "aicc: internal error: the %s plan fails verification: %s", h->target, msg);
	}
	tgt_flat_free(&w.f);
	free(w.buf), free(w.gfirst), free(w.glast), free(w.gate), free(w.fmt);
	tgt_devs_free(&w.devs);
	if (rc < 0) {
		plan_free(w.p);
		return NULL;
	}
	return w.p;
}

/* ---- the cost hook ---- */
static double tval(const PlanInstr *in, const char *key, double dflt)
{
	for (int i = 0; i < in->ntile; i++)
		if (strcmp(in->tile[i].key, key) == 0)
			return strtod(in->tile[i].val, NULL);
	return dflt;
}

double gpu_instr_cost(const PlanInstr *in, double pool)
{
	if (in->kind == PI_COLLECTIVE)
		return fmax(0, tval(in, "base_us", 0)) * 1e-6;
	if (in->kind != PI_KERNEL || tval(in, "fixed_us", -1) < 0)
		return -1;
	if (!(pool >= 1))
		pool = 1;
	GpuCost c = { .mma = tval(in, "mma_us", 0) / pool, .smem = tval(in, "smem_us", 0) / pool, .hbm = tval(in, "hbm_us", 0) / pool,
		      .l2 = tval(in, "l2_us", 0) / pool, .sfu = tval(in, "sfu_us", 0) / pool, .fma = tval(in, "fma_us", 0) / pool,
		      .overlap = tval(in, "overlap", 1), .fixed = tval(in, "fixed_us", 0), .floor = tval(in, "floor_us", 0) };
	double t = gpu_cost_total(&c) * 1e-6;
	return t >= 0 && isfinite(t) ? t : 0;
}

double gpu_cost(const Plan *p, int stream, const PlanInstr *in)
{
	double t = gpu_instr_cost(in, 1);
	if (in->kind == PI_COLLECTIVE)   /* alpha-beta ring time plus the library's base latency */
		return rt_cost_roofline(p, stream, in) + t;
	return t >= 0 ? t : rt_cost_roofline(p, stream, in);
}
