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
#include "runtime/codec.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef TgtAnn Ann;        /* the t.* attributes of one kernel */

/* The GPU family's lowering state (TgtLower.ctx). */
struct GpuLw {
	TgtLower *l;                 /* the walk: plan, flat graph, buffers, fusion groups, devices */
	const GpuHooks *h;           /* the target's tiling hooks (Target.family) */
	GpuArch a;
	const Precision *pol;        /* --precision (targets/precision.h) */
	unsigned char *gate;         /* flat value -> 1: MoE router logits, held in f32 */
	unsigned char *exact;        /* flat value -> 1: held in its model dtype (tgt_exact_values) */
	const char **fmt;            /* flat value -> its buffer format (NULL: row), weight_formats */
	void *foreign_ctx;           /* GpuHooks.foreign's state (gpu_set_foreign_ctx) */
	double link_eff;             /* the GPU-to-GPU link's link_coll_eff: what collectives get */
	/* The tile searches done so far (a model repeats its layers' GEMM shapes; the search is a
	 * pure function of the shape on this arch), the oldest replaced when full. */
	struct GemmMemo { GemmShape s; GemmTile t; int ok; char why[256]; } memo[32];
	int nmemo, next_memo;
	/* The kernels lowered so far by what decides their t.* and numerics (kernel_sig); layer
	 * instances repeat them. */
	TgtKernMemo km;
	/* The formats gpu_kernel's "converted to bf16" remark has named (once per format per
	 * compile: a repeated layer's instances would say it once each, 58 lines for DeepSeek-V3's
	 * f32 routers on an H200, newcomer 34 item 49). */
	DType said[8];
	int nsaid;
};

static int same_gemm(const GemmShape *a, const GemmShape *b)
{
	return a->nosplit == b->nosplit && a->batch == b->batch && a->M == b->M && a->N == b->N && a->K == b->K &&
	       a->in == b->in && a->out_bytes == b->out_bytes && a->scale == b->scale && a->promote == b->promote &&
	       a->b_bytes == b->b_bytes && a->a_bytes == b->a_bytes;
}

/* w->h->gemm(&w->a, s, t, why, nwhy) for a zeroed t, each distinct shape searched once. */
static int tile_gemm(GpuLw *w, const GemmShape *s, GemmTile *t, char *why, size_t nwhy)
{
	enum { N = sizeof w->memo / sizeof w->memo[0] };
	for (int i = 0; i < w->nmemo; i++)
		if (same_gemm(&w->memo[i].s, s)) {
			*t = w->memo[i].t;
			size_t k = strnlen(w->memo[i].why, nwhy - 1);
			memcpy(why, w->memo[i].why, k);
			why[k] = 0;
			return w->memo[i].ok;
		}
	struct GemmMemo *m = &w->memo[w->next_memo];
	w->next_memo = (w->next_memo + 1) % N;
	w->nmemo += w->nmemo < N;
	m->why[0] = 0;
	m->ok = w->h->gemm(&w->a, s, t, m->why, sizeof m->why);
	m->s = *s;
	m->t = *t;
	snprintf(why, nwhy, "%s", m->why);
	return m->ok;
}

/* The components as one GPU would spend them; time_us and bound as the node's pool_chips GPUs
 * do (vera-rubin's pools: the cost hook divides the streaming and compute terms by the chips,
 * launch and fill stay, so a pool's small kernel is bound by its fixed time). */
static void put_cost(Ann *t, const GpuCost *one, const FlatNode *fn)
{
	double pool = fn ? (double)rt_attr_int(&fn->n->attrs, "pool_chips", 1) : 1;
	GpuCost d = *one;
	const GpuCost *c = &d;
	if (pool > 1)
		d.mma /= pool, d.smem /= pool, d.hbm /= pool, d.l2 /= pool, d.sfu /= pool, d.fma /= pool;
	tgt_ann_put(t, "mma_us", "%.4g", one->mma * 1e6);
	tgt_ann_put(t, "smem_us", "%.4g", one->smem * 1e6);
	tgt_ann_put(t, "hbm_us", "%.4g", one->hbm * 1e6);
	if (one->l2 > 0)
		tgt_ann_put(t, "l2_us", "%.4g", one->l2 * 1e6);
	tgt_ann_put(t, "sfu_us", "%.4g", one->sfu * 1e6);
	tgt_ann_put(t, "fma_us", "%.4g", one->fma * 1e6);
	tgt_ann_put(t, "overlap", "%.4g", c->overlap);
	tgt_ann_put(t, "fixed_us", "%.4g", c->fixed * 1e6);
	if (c->fill > 0)   /* the part of fixed_us that is HBM traffic (explain's fixed costs leave it out) */
		tgt_ann_put(t, "fill_us", "%.4g", c->fill * 1e6);
	if (c->floor > 0)
		tgt_ann_put(t, "floor_us", "%.4g", c->floor * 1e6);
	tgt_ann_put(t, "time_us", "%.4g", gpu_cost_total(c) * 1e6);
	double term;
	const char *b = gpu_cost_bound(c, &term);
	/* a vera-rubin pool's tensor-parallel all-reduce of this kernel's result over NVLink (the
	 * disaggregate pass's comm_s, which the cost hook adds): link time, not launch or fixed
	 * time (newcomer 32 item 3) */
	double link = fn ? rt_attr_float(&fn->n->attrs, "comm_s", 0) : 0;
	if (link > 0) {
		tgt_ann_put(t, "link_us", "%.4g", link * 1e6);
		if (link > term)
			b = "nvlink", term = link;
	}
	if (gpu_cost_total(c) + link > 0) {
		tgt_ann_put(t, "bound", "%s", b);
		tgt_ann_put(t, "bound_us", "%.4g", term * 1e6);
	}
}

/* ---- buffers (first fit, as the reference target) ---- */
static DType gpu_dtype(const GpuLw *w, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt) || (w->exact && w->exact[v - w->l->f.vals]))
		return v->dt;
	DType forced = tgt_forced_dtype(&w->l->f, v);
	if (forced != DT_INVALID)
		return forced;   /* @precision(f32) on the statement: held as asked */
	if (v->def >= 0) {
		const Node *n = w->l->f.nodes[v->def].n;
		/* Quantize {to} returns its values dequantized in its input's dtype (ir/ops.def) */
		if (n->op == OP_Quantize && w->l->f.nodes[v->def].nin >= 1 && w->l->f.nodes[v->def].in[0] >= 0 &&
		    rt_dtypes[v->dt].kind == K_FLOAT && rt_dtypes[v->dt].bits >= 16)
			return gpu_dtype(w, &w->l->f.vals[w->l->f.nodes[v->def].in[0]]);
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
	}
	if (rt_dtypes[v->dt].bits < 16)
		return v->dt;      /* already narrow (FP8 inputs): kept */
	/* router logits stay f32 from the MMA's f32 accumulator: expert choice is discrete, and
	 * serving stacks gate in f32 (vLLM's fused_moe and HF Mixtral take the router softmax and
	 * top-k in f32) */
	if (w->gate && w->gate[v - w->l->f.vals])
		return DT_F32;
	/* f64 stays f64 where the GPU has FP64 units (H100, B200: the machine's formats); bf16 would
	 * overflow at 3.4e38 as f32 would */
	if (v->dt == DT_F64)
		return dev_supports(w->a.dev, DT_F64) ? DT_F64 : DT_F32;
	return DT_BF16;
}

DType gpu_value_dtype(const TgtLower *l, const FlatVal *v) { return gpu_dtype(l->ctx, v); }




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
static int load_value(const GpuLw *w, int v) { return tgt_load_value(&w->l->f, v); }

/* Bytes per element a GEMM reads for its weight operand v when v was quantized at load to a
 * narrower storage format than the MMA's (w4a16: int4 codes plus one f32 scale per group, the
 * dequantization to the MMA format happening in the kernel's mainloop, as Marlin-style W4A16
 * kernels do); 0 when v is not such a weight. */
static double load_weight_bytes(const GpuLw *w, int v)
{
	while (v >= 0 && w->l->f.vals[v].def >= 0 && load_value(w, v)) {
		const FlatNode *fn = &w->l->f.nodes[w->l->f.vals[v].def];
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
	if (fp8_operands(&w->l->f.vals[fn->in[0]], &w->l->f.vals[fn->in[1]]))
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
				  fp8_operands(&w->l->f.vals[fn->in[0]], &w->l->f.vals[fn->in[fn->n->op == OP_GroupedMatMul ? 2 : 1]]));
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
	unsigned char *mixed = calloc((size_t)w->l->f.nvals + 1, 1);
	if (!(w->fmt = tgt_lower_alloc(w->l, (size_t)w->l->f.nvals + 1, sizeof *w->fmt)) || !mixed) {
		free(mixed);
		return rt_errorf(w->l->e, RT_ENOMEM, "out of memory lowering the graph");
	}
	for (int i = 0; i < w->l->f.nnodes; i++) {
		const FlatNode *fn = &w->l->f.nodes[i];
		for (int k = 0; k < fn->nin; k++) {
			int v = fn->in[k];
			if (v < 0 || mixed[v])
				continue;
			const char *f = gemm_node(fn) && k == weight_input(fn) && rt_dtypes[w->l->f.vals[v].dt].bits > 8 && stored_weight(w, v)
					? weight_format(w, fn) : NULL;   /* already narrow (quantized at load): as it is */
			if (!f || (w->fmt[v] && strcmp(w->fmt[v], f)))
				mixed[v] = 1, w->fmt[v] = NULL;
			else
				w->fmt[v] = f;
		}
	}
	for (int v = 0; v < w->l->f.nvals; v++)     /* a graph output is handed back as it is */
		if (w->l->f.vals[v].is_output)
			w->fmt[v] = NULL;
	free(mixed);
	return 0;
}

static const char *gpu_format_of(const void *ctx, const FlatVal *v)
{
	const GpuLw *w = ctx;
	return w->fmt ? w->fmt[v - w->l->f.vals] : NULL;
}

static int gemm_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *A = &w->l->f.vals[fn->in[0]], *B = &w->l->f.vals[fn->in[1]], *Y = &w->l->f.vals[fn->out[0]];
	GemmShape s = { .in = node_format(w, fn->n, 1), .out_bytes = rt_dtype_bytes(gpu_dtype(w, Y), 1),
			.nosplit = w->pol->nosplitk };
	if (Y->rank < 1 || A->rank < 1 || B->rank < 1)
		return 0;
	TgtGemmDims g;   /* [B, S, K] x [K, N]: one GEMM over B*S rows, the weight read once */
	tgt_gemm_extents(Y->dims, Y->rank, A->dims, A->rank, B->rank,
			 fn->n->op == OP_Gemm && rt_attr_int(&fn->n->attrs, "transA", 0), &g);
	s.batch = g.batch, s.M = g.M, s.N = g.N, s.K = g.K;
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
	if (s.M == 0 || s.N == 0 || s.K == 0 || !tile_gemm(w, &s, &tile, why, sizeof why))
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
	put_cost(t, &tile.c, fn);
	return 1;
}

/* A Conv as cuDNN runs it on the tensor cores: an implicit GEMM (its im2col view gathered by
 * the TMA's im2col mode, never written out) of M = N x OH x OW output pixels, N = Cout / group
 * filters and K = Cin / group x KH x KW taps, one GEMM per group, priced by the target's tile
 * search with its GEMM efficiency; the image is read from HBM once per group (a_bytes), the
 * overlapping windows come from L2 and SMEM.  A depthwise or thin grouped Conv (K under one
 * MMA k-step of 16, or fewer than 8 filters per group: the MMA's smallest N) runs on the
 * CUDA cores, the memory-bound kernel being its model (returns 2); operands the tensor cores do
 * not take (f32, f64 values held exact) have no model (0).  Bias and activation ride in the
 * epilogue. */
static int conv_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *X = &w->l->f.vals[fn->in[0]], *W = &w->l->f.vals[fn->in[1]], *Y = &w->l->f.vals[fn->out[0]];
	if (Y->rank < 3 || W->rank != Y->rank || X->rank != Y->rank)
		return 0;
	DType op = gpu_dtype(w, X);
	if ((op != DT_BF16 && op != DT_F16) || gpu_dtype(w, W) != op)
		return 0;
	int64_t g = rt_attr_int(&fn->n->attrs, "group", 1);
	GemmShape s = { .in = op, .out_bytes = rt_dtype_bytes(gpu_dtype(w, Y), 1), .nosplit = w->pol->nosplitk,
			.batch = g > 0 ? g : 1 };
	s.M = Y->dims[0], s.K = W->dims[1], s.N = W->dims[0] / s.batch;
	for (int i = 2; i < Y->rank; i++)
		s.M *= Y->dims[i], s.K *= W->dims[i];
	if (s.M <= 0)
		return 0;
	if (s.K < 16 || s.N < 8)
		return 2;   /* depthwise or thin groups: the CUDA cores' direct kernel */
	s.a_bytes = numel(X) / (double)s.batch * gpu_elem_bytes(op);
	GemmTile tile = { 0 };
	char why[256] = "";
	if (!tile_gemm(w, &s, &tile, why, sizeof why))
		return 0;
	gpu_launch(&w->a, w->pol->graph, &tile.c);
	tgt_ann_put(t, "kind", "gemm");
	tgt_ann_put(t, "algo", "implicit GEMM %lldx%lldx%lld%s", (long long)s.M, (long long)s.N, (long long)s.K,
		    s.batch > 1 ? " per group" : "");
	if (s.batch > 1)
		tgt_ann_put(t, "groups", "%lld", (long long)s.batch);
	tgt_ann_put(t, "mma", "%s.m%dn%dk%d.%s", tile.family, tile.im, tile.in, tile.ik, rt_dtype_name(s.in));
	tgt_ann_put(t, "tile", "%dx%dx%d", tile.bm, tile.bn, tile.bk);
	tgt_ann_put(t, "cta", "%d", tile.cta2 ? 2 : 1);
	tgt_ann_put(t, "stages", "%d", tile.stages);
	tgt_ann_put(t, "waves", "%lld", (long long)tile.waves);
	tgt_ann_put(t, "tiles", "%lld on %lld units", (long long)tile.tiles, (long long)tile.units);
	if (tile.split > 1)
		tgt_ann_put(t, "split_k", "%d", tile.split);
	put_l2(t, &w->a, &tile);
	if (*why)
		tgt_ann_put(t, "why", "%s", why);
	put_cost(t, &tile.c, fn);
	(void)pi;   /* numerics as before: the operands are already the MMA's format */
	return 1;
}

int64_t gpu_grouped_shape(int64_t R, int64_t E, int64_t K, int64_t N, GemmShape *s)
{
	assert(R >= 1 && E >= 1 && K >= 1 && N >= 1);
	double active = (double)E * (1 - pow(1 - 1.0 / (double)E, (double)R));
	int64_t ea = (int64_t)ceil(active - 1e-9);
	if (ea < 1)
		ea = 1;
	if (ea > E)
		ea = E;
	s->batch = ea, s->M = (R + ea - 1) / ea, s->K = K, s->N = N;
	return ea;
}

/* A grouped GEMM (MoE experts: GroupedMatMul Y[r] = Xs[r] @ W[e] over each expert's rows): R
 * routed rows spread over E experts, priced as gpu_grouped_shape's batch of GEMMs (routing is
 * data-dependent: the expected experts under uniform routing). */
static int gmm_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *X = &w->l->f.vals[fn->in[0]], *W = &w->l->f.vals[fn->in[2]], *Y = &w->l->f.vals[fn->out[0]];
	if (X->rank != 2 || W->rank != 3 || Y->rank != 2 || X->dims[0] < 1 || W->dims[0] < 1)
		return 0;
	int64_t R = X->dims[0], E = W->dims[0];
	GemmShape s = { .in = node_format(w, fn->n, 1), .out_bytes = rt_dtype_bytes(gpu_dtype(w, Y), 1),
			.nosplit = w->pol->nosplitk };
	int64_t ea = gpu_grouped_shape(R, E, W->dims[1], W->dims[2], &s);
	int fp8pol = w->pol->word->mma == DT_F8E4M3, promote = fp8pol ? w->pol->promote : w->a.dev->fp8_promote;
	if (s.in == DT_F8E4M3) {
		s.scale = fp8_operands(X, W) ? PREC_SCALE_NONE : fp8pol ? w->pol->scale : PREC_SCALE_128X128;
		s.promote = promote > 0 ? promote : 0;
	}
	GemmTile tile = { 0 };
	char why[256] = "";
	if (s.M == 0 || s.N == 0 || s.K == 0 || !tile_gemm(w, &s, &tile, why, sizeof why))
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
	put_cost(t, &tile.c, fn);
	return 1;
}

static int attn_kernel(GpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *Q = &w->l->f.vals[fn->in[0]], *K = &w->l->f.vals[fn->in[1]], *V = &w->l->f.vals[fn->in[2]];
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
		const FlatVal *pk = &w->l->f.vals[fn->in[4]];
		s.P = pk->rank == 4 ? pk->dims[2] : 0;
		s.kv_bytes = rt_dtype_bytes(gpu_dtype(w, pk), 1);   /* the cache's format (--kv-format) */
		s.T += s.P;
	}
	if (s.B == 0 || s.qh == 0 || s.kvh == 0 || s.Sq == 0 || s.T == 0)
		return 0;
	if (!s.P)
		s.off = tgt_seq_offsets(at, s.Sq, s.T, &s.noff);
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
	put_cost(t, &tile.c, fn);
	return 1;
}

/* Memory-bound kernels: bytes at HBM bandwidth, FLOP on the FMA pipe, transcendental outputs on
 * the SFU (backends.md §0).  Inside a fusion group only the group's external traffic counts;
 * a table lookup reads at most as many bytes of its table as it writes. */
static void mem_kernel(GpuLw *w, int i, PlanInstr *pi, Ann *t)
{
	const FlatNode *fn = &w->l->f.nodes[i];
	int grp = w->l->gfirst[i] >= 0, lead = !grp || w->l->gfirst[i] == i;
	double bytes = 0, out = 0, out_bytes = 0;
	for (int k = 0; k < fn->nout; k++)
		out_bytes += (double)w->l->p->buffers[w->l->buf[fn->out[k]]].size;
	for (int k = 0; k < fn->nin; k++) {
		if (fn->in[k] < 0)
			continue;
		int def = w->l->f.vals[fn->in[k]].def;
		double b = (double)w->l->p->buffers[w->l->buf[fn->in[k]]].size;
		if (ir_op_is_lookup(fn->n->op, k) && b > out_bytes)
			b = out_bytes;
		if (!(grp && def >= 0 && w->l->gfirst[def] == w->l->gfirst[i]))
			bytes += b;
	}
	for (int k = 0; k < fn->nout; k++) {
		out += numel(&w->l->f.vals[fn->out[k]]);
		if (!grp || w->l->glast[w->l->gfirst[i]] == i || w->l->f.vals[fn->out[k]].is_output)
			bytes += (double)w->l->p->buffers[w->l->buf[fn->out[k]]].size;
	}
	GpuCost c = { .overlap = 1 };
	if (ir_ops[fn->n->op].flags & F_VIEW) {
		tgt_ann_put(t, "kind", "view");
	} else {
		gpu_mem_cost(&w->a, bytes, pi->flops, ir_ops[fn->n->op].flags & F_TRANS ? out : 0, &c);
		if (lead)
			gpu_launch(&w->a, w->pol->graph, &c);
		tgt_ann_put(t, "kind", "memory");
	}
	if (grp && !lead)
		tgt_ann_put(t, "fused", "into %s", w->l->p->buffers[w->l->buf[w->l->f.nodes[w->l->gfirst[i]].out[0]]].name);
	if (tgt_load_kernel(&w->l->f, w->l->gfirst, i)) {
		tgt_ann_put(t, "phase", "load");
		tgt_ann_put(t, "load_us", "%.4g", gpu_cost_total(&c) * 1e6);
		c = (GpuCost){ .overlap = 1 };
	}
	put_cost(t, &c, fn);
}

/* ---- kernels already lowered (tgt_kernel_sig) ----
 * Besides what every target's hook reads, a GEMM's weight's stored bytes. */
static int kernel_sig(const GpuLw *w, int i, int64_t *sig)
{
	const FlatNode *fn = &w->l->f.nodes[i];
	int n = tgt_kernel_sig(w->l, i, sig, TGT_SIG_MAX - 1);
	if (n > 0 && gemm_node(fn) && fn->n->op != OP_GroupedMatMul) {
		double wb = load_weight_bytes(w, fn->in[1]);
		memcpy(&sig[n++], &wb, sizeof wb);
	}
	return n;
}

static int kernel(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t);

/* The kernel hook: a node on a GPU gets its GEMM, grouped GEMM or attention tiling from the
 * target's hooks, or a memory-bound kernel; a node placed on another device kind is the family
 * member's (GpuHooks.foreign: vera-rubin's LPU pool). */
int gpu_kernel(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t)
{
	GpuLw *w = l->ctx;
	const FlatNode *fn = &l->f.nodes[i];
	int dev = l->devs.dev[l->devs.node_pl[i]];
	if (strcmp(l->p->devices[dev].kind, "gpu")) {
		if (!w->h->foreign)
			return rt_errorf(l->e, RT_EUSER, "aicc: error: target %s places '%s' on device '%s', which is not a GPU",
					 l->t->name, l->f.vals[fn->out[0]].name, l->p->devices[dev].name);
		return w->h->foreign(l, w->foreign_ctx, dev, i, pi, t);
	}
	/* a node placed at a format this GPU's tensor cores lack (fp8 on an A100: @precision, the
	 * quantization pass) runs at bf16 (node_format); say so in the plan for each node, on
	 * stderr once per format */
	const char *want = rt_attr_str(&fn->n->attrs, "precision", NULL);
	DType wdt = prec_node_format(want);
	if (wdt != DT_INVALID && !(dev_supports(w->a.dev, wdt) && num_has(&w->a.dev->peak[wdt]))) {
		tgt_ann_put(t, "converted", "%s -> bf16: %s (%s) has no %s tensor-core format", want, w->a.dev->name ? w->a.dev->name : "?",
			    w->a.dev->arch ? w->a.dev->arch : "?", want);
		int said = 0;
		for (int k = 0; k < w->nsaid; k++)
			said |= w->said[k] == wdt;
		if (!said && w->nsaid < (int)(sizeof w->said / sizeof w->said[0]))
			w->said[w->nsaid++] = wdt;
		if (!said)
			fprintf(stderr, "aicc: remark: precision: '%s': %s is not a tensor-core format of %s (%s): converted to "
				"bf16; so is every other node placed at %s (said once)\n",
				l->f.vals[fn->out[0]].name, want, l->in->machine->m->name, w->a.dev->arch ? w->a.dev->arch : "?", want);
		return kernel(l, i, pi, t);
	}
	int64_t sig[TGT_SIG_MAX];
	return tgt_memo_lower(l, &w->km, sig, kernel_sig(w, i, sig), kernel, i, pi, t);
}

/* gpu_kernel's GPU kernel, lowered. */
static int kernel(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t)
{
	GpuLw *w = l->ctx;
	const FlatNode *fn = &l->f.nodes[i];
	unsigned fl_op = ir_ops[fn->n->op].flags;
	int done = 0;
	if ((fn->n->op == OP_MatMul || fn->n->op == OP_Gemm) && fn->nin >= 2)
		done = gemm_kernel(w, fn, pi, t);
	else if (fn->n->op == OP_GroupedMatMul && fn->nin >= 3)
		done = gmm_kernel(w, fn, pi, t);
	else if (fn->n->op == OP_Conv && fn->nin >= 2)
		done = conv_kernel(w, fn, pi, t);
	else if ((fl_op & F_ATTN) && fn->nin >= 3)
		done = attn_kernel(w, fn, pi, t);
	if (done == 2) {   /* a depthwise Conv: the CUDA cores' direct kernel is the model */
		t->n = 0;
		mem_kernel(w, i, pi, t);
		tgt_ann_put(t, "algo", "direct on the CUDA cores (depthwise or under 16 taps / 8 filters per group)");
	} else if (!done) {
		t->n = 0;
		mem_kernel(w, i, pi, t);
		/* no kernel model of its own: a matrix-unit op (or attention) priced as a memory-bound
		 * kernel is a coverage gap, said so in the plan (t.coverage) and by `aicc run` */
		if (ir_ops[fn->n->op].cls == OC_matrix || (fl_op & F_ATTN))
			tgt_ann_put(t, "coverage", "no %s model for %s on this target: priced as a memory-bound kernel "
				    "(bytes at HBM bandwidth, FLOP on the FMA pipe)", ir_ops[fn->n->op].cls == OC_matrix ?
				    "matrix-unit" : "attention", ir_ops[fn->n->op].name);
	}
	return 0;
}

/* The collective hook: the collective library's fixed cost per call (NCCL's own latency model:
 * base latency of the ring/LL protocol), on top of the runtime's alpha-beta ring time. */
/* A collective: the library's base latency; a compressed all-reduce (compress, runtime/codec.h)
 * also its encode/decode time on the vector pipes (rt_codec_work's element and instruction
 * counts): the larger of its HBM traffic at the achievable HBM bandwidth and its instructions at
 * the SMs' f32 vector rate (machine file: vector-peak f32 / 2 per SM, x SMs), both sources in
 * the machine XML; t.codec_us is what the timing engine adds to the link time. */
int gpu_collective(TgtLower *l, int node, TgtAnn *t)
{
	const GpuLw *w = l->ctx;
	const FlatNode *fn = &l->f.nodes[node];
	tgt_ann_put(t, "kind", "collective");
	tgt_ann_put(t, "base_us", "%.4g", w->a.coll_base * 1e6);
	if (w->link_eff < 1)   /* the ring's share of the line rate (NCCL's protocol overhead) */
		tgt_ann_put(t, "link_eff", "%.4g", w->link_eff);
	tgt_ann_put(t, "bound", "link");
	const char *spec = fn->n->op == OP_AllReduce ? rt_attr_str(&fn->n->attrs, "compress", NULL) : NULL;
	RtCodec c;
	char why[160];
	if (!spec || rt_codec_parse(spec, &c, why, sizeof why) < 0 || fn->nout < 1 || fn->out[0] < 0)
		return 0;
	const FlatVal *v = &l->f.vals[fn->out[0]];
	int64_t n = 1;
	for (int k = 0; k < v->rank; k++)
		n *= v->dims[k];
	RtCodecWork k;
	rt_codec_work(&c, n, fn->nin, rt_dtypes[v->dt].bits / 8.0, &k);
	double hbm = w->a.hbm_bw > 0 ? k.bytes / w->a.hbm_bw : 0, vec = w->a.fma > 0 ? k.ops / (w->a.fma * w->a.sms) : 0;
	tgt_ann_put(t, "codec_hbm_us", "%.4g", hbm * 1e6);
	tgt_ann_put(t, "codec_vec_us", "%.4g", vec * 1e6);
	tgt_ann_put(t, "codec_us", "%.4g", fmax(hbm, vec) * 1e6);
	return 0;
}

void gpu_set_foreign_ctx(TgtLower *l, void *ctx) { ((GpuLw *)l->ctx)->foreign_ctx = ctx; }

/* The setup hook: the machine's first GPU (with the MMA family the target needs: wgmma for
 * hopper, tcgen05 otherwise), its numbers, HBM for the values, the router logits kept f32 and
 * the weights' stored formats. */
int gpu_setup(TgtLower *l)
{
	const TgtMachine *tm = l->in->machine;
	GpuLw *w = tgt_lower_state(l, sizeof *w);
	if (!w)
		return -1;
	w->l = l;
	w->h = l->t->family;
	w->pol = l->in->prec;
	const Device *d = machine_first(tm->m, DEV_GPU);
	if (!d)
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' has no GPU for target %s", tm->m->name, l->t->name);
	if (!dev_mma(d, w->h->mma_family))
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' (%s) has no %s MMA; target %s needs it",
				 tm->m->name, d->arch ? d->arch : "?", w->h->mma_family, l->t->name);
	if (gpu_arch(d, &w->a, l->e) < 0)
		return -1;
	w->link_eff = link_coll_eff(machine_link(tm->m, d, d));
	if (strcmp(l->p->spaces[l->devs.space[0]].name + strlen(l->p->devices[l->devs.dev[0]].name), ".hbm") &&
	    !strcmp(l->p->devices[l->devs.dev[0]].kind, "gpu"))
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' has no HBM space on '%s'", tm->m->name,
				 l->p->devices[l->devs.dev[0]].name);
	if (!(w->gate = tgt_lower_alloc(l, (size_t)l->f.nvals + 1, 1)) || !(w->exact = tgt_lower_exact(l, DT_BF16)))
		return -1;
	for (int i = 0; i < l->f.nnodes; i++)
		if (l->f.nodes[i].n->op == OP_TopKRouter && l->f.nodes[i].nin >= 1 && l->f.nodes[i].in[0] >= 0)
			w->gate[l->f.nodes[i].in[0]] = 1;
	if (weight_formats(w) < 0)
		return -1;
	l->devs.format = gpu_format_of, l->devs.format_ctx = w;
	return 0;
}
