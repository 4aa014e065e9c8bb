/* targets/tpu/lower.c: the tpu target: a shape-inferred graph becomes a TPU plan, for one chip or,
 * when the partition pass placed it (@device(tpuK)), for a slice of chips.
 *
 * Calls are flattened (targets/flatten.c) and every node becomes one kernel in graph order on its
 * chip's stream, as XLA emits one fused program step per HLO fusion; targets/devices.c (TgtDevs)
 * gives every chip used its device, HBM space, stream and heap, stores weight shards on the chip
 * that reads them and emits Transfers and collectives with their events; every chip-to-chip copy
 * and collective is then priced on the ICI torus (targets/tpu/ici.c, t.ici*).  Float values are held in bf16 in
 * HBM (explicit conversions keep their dtype, integers stay integers); buffers are placed first
 * fit with reuse after their last use.  Each kernel gets its numerics and its decisions as `t.*`
 * attributes with a reason:
 *   - MatMul, Gemm and Conv (im2col: M = N*OH*OW, K = Cin/group*KH*KW, N = Cout/group) go to the
 *     MXUs through targets/tpu/tile.c: weight-stationary folds, (8,128) padding reported as
 *     t.pad_waste, double-buffered VMEM blocks; operands in the --precision format (bf16 by
 *     default; int8, fp8 or fp4 where the machine lists a peak for it) with f32 accumulation,
 *     which the interpreter reproduces through RtExecOpts.mma_in;
 *   - attention runs its two products on the MXUs and the softmax on the vector unit, scores kept
 *     in VMEM (flash-style: Q, K, V, O cross HBM once);
 *   - past KV-cache blocks stay in on-chip SRAM where the machine allows it (the 8i: kv_plan);
 *   - embedding Gather runs on a SparseCore where the chip has them (hardware.md §3.5);
 *   - everything else (softmax, norms, elementwise) is a vector-unit kernel in f32 (hardware.md
 *     §3.5: "vector unit work stays FP32") on its (8,128)-padded elements at the machine's VPU
 *     rate, bounded by HBM; nodes of a fusion group (passes/fuse.c) after the first add no
 *     fixed cost and no HBM traffic for values the group produces itself;
 *   - weight-only transforms of parameters (the quantization pass's int8 weight Quantize nodes
 *     and their Transposes, on tensor-parallel shards too) run once at load: t.phase="load",
 *     t.load_us, no per-step cost (tgt_load_kernel).
 * The precision policy is --precision bf16|int8|fp8|fp4 (docs/targets-tpu.md); a node's own
 * `precision` attribute (the quantization pass) overrides it. */
#include "targets/tpu/tpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


typedef TgtAnn Ann;        /* the t.* attributes of one kernel */

/* The target's lowering state (TgtLower.ctx). */
typedef struct TpuLw {
	TgtLower *l;         /* the walk: plan, flat graph, buffers, fusion groups, devices */
	TpuArch a;
	int *sc_unit;        /* per device instance: its SparseCore unit, or -1 */
	unsigned char *exact;        /* flat value -> 1: held in its model dtype (tgt_exact_values) */
	TpuIci ici;          /* the slice's interconnect (targets/tpu/ici.c) */
	/* KV-cache residency (kv_plan): the largest VMEM working set of one kernel on one
	 * TensorCore, the SRAM left for KV blocks, and per flat node the past tokens kept in SRAM */
	double ws, kv_sram, kv_budget, kv_used;
	int64_t kv_block, *kv_tok;
	int kv_dry;          /* kernels are being planned, not emitted (working-set pre-pass) */
	/* the last MXU plans made (mxu_plan): a model's layers and tensor-parallel shards repeat
	 * a few shapes, and the block search is the lowering's largest cost without it */
	struct { MxuShape s; MxuPlan m; int ok; } memo[32];
	int nmemo, next_memo;
	TgtKernMemo km;      /* the kernels lowered so far (kernel_sig): layer instances repeat them */
} TpuLw;

/* tpu_mxu_plan(&w->a, s, m), remembered per shape for this lowering (the arch is fixed). */
static int mxu_plan(TpuLw *w, const MxuShape *s, MxuPlan *m)
{
	for (int i = 0; i < w->nmemo; i++) {
		const MxuShape *k = &w->memo[i].s;
		if (k->batch == s->batch && k->M == s->M && k->N == s->N && k->K == s->K && k->in == s->in &&
		    k->in_bytes == s->in_bytes && k->w_bytes == s->w_bytes && k->out_bytes == s->out_bytes) {
			*m = w->memo[i].m;
			return w->memo[i].ok;
		}
	}
	int ok = tpu_mxu_plan(&w->a, s, m), i = w->next_memo;
	w->next_memo = (i + 1) % (int)(sizeof w->memo / sizeof w->memo[0]);
	if (w->nmemo < (int)(sizeof w->memo / sizeof w->memo[0]))
		w->nmemo++;
	w->memo[i].s = *s, w->memo[i].m = *m, w->memo[i].ok = ok;
	return ok;
}

static void put_cost(Ann *t, const TpuCost *c)
{
	tgt_ann_put(t, "mxu_us", "%.4g", c->mxu * 1e6);
	tgt_ann_put(t, "vpu_us", "%.4g", c->vpu * 1e6);
	tgt_ann_put(t, "vmem_us", "%.4g", c->vmem * 1e6);
	tgt_ann_put(t, "hbm_us", "%.4g", c->hbm * 1e6);
	tgt_ann_put(t, "fixed_us", "%.4g", c->fixed * 1e6);
	tgt_ann_put(t, "time_us", "%.4g", tpu_cost_total(c) * 1e6);
	/* what bounds it, in explain's words (viz/facts.c) */
	double top = fmax(fmax(c->mxu, c->vpu), fmax(c->vmem, c->hbm));
	tgt_ann_put(t, "bound", "%s", c->fixed >= top ? "overhead" : top == c->mxu ? "tensor" : top == c->vpu ? "vector" : "memory");
}

static int has_format(const TpuLw *w, DType dt)
{
	return dt != DT_INVALID && dev_supports(w->a.dev, dt) && num_has(&w->a.dev->peak[dt]);
}

/* The codec the interpreter rounds MXU operands with.  int8: symmetric per-row scale (the
 * kernel's i8 mode, as XLA's int8 matmuls quantize per channel); fp8 and fp4 carry no scale in
 * the sources, so the nearest scaled codecs the runtime has stand in: MXFP8 (E4M3, a power-of-
 * two scale per 32 along K) and MXFP4 (E2M1, likewise); without a scale small activations would
 * flush to zero. */
static DType mma_codec(DType dt)
{
	return dt == DT_F8E4M3 ? DT_MXFP8 : dt == DT_F4E2M1 ? DT_MXFP4 : dt;
}

/* ---- buffers (first fit, as the reference target) ---- */
static DType tpu_dtype(const TpuLw *w, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt) || (w->exact && w->exact[v - w->l->f.vals]))
		return v->dt;
	DType forced = tgt_forced_dtype(&w->l->f, v);
	if (forced != DT_INVALID)
		return forced;   /* @precision(f32) on the statement: held as asked */
	if (v->def >= 0) {
		const Node *n = w->l->f.nodes[v->def].n;
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
	}
	if (rt_dtypes[v->dt].bits < 16)
		return v->dt;      /* already narrow (FP8 inputs): kept */
	/* the TPU has no f64 format: f64 values are IEEE binary64 computed in software on the VPU
	 * (integer arithmetic on the 32-bit lanes, as Intel's IGC and GPUCompiler.jl emulate f64 on
	 * GPUs without it) where the machine gives that rate (<vpeak dtype="f64">), else f32 as
	 * PyTorch/XLA's XLA_DOWNCAST_BF16 holds torch.double */
	if (v->dt == DT_F64)
		return w->a.vpu64 > 0 || dev_supports(w->a.dev, DT_F64) ? DT_F64 : DT_F32;
	return DT_BF16;
}

DType tpu_value_dtype(const TgtLower *l, const FlatVal *v) { return tpu_dtype(l->ctx, v); }




/* Adds the buffer(s) of flat value v, one per chip that holds it (targets/devices.c checks each
 * chip's HBM capacity and says how to partition when one overflows). */
/* ---- per-kernel tiling and cost ---- */
static double numel(const FlatVal *v)
{
	double n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= (double)v->dims[i];
	return n;
}


/* The MXU format of node n: its `precision` attribute when the chip has that mode, else the
 * policy's. */
static DType node_format(const TpuLw *w, const Node *n)
{
	DType dt = prec_node_format(rt_attr_str(&n->attrs, "precision", NULL));
	return has_format(w, dt) ? dt : w->l->in->prec->word->mma;
}

static double elem_bytes(DType dt) { return rt_dtypes[dt].bits / 8.0; }

/* Records the fold plan of one matrix product and returns its cost. */
static void put_mxu(TpuLw *w, Ann *t, const MxuShape *s, const MxuPlan *m, const char *kind)
{
	const TpuArch *a = &w->a;
	w->ws = fmax(w->ws, m->vmem_bytes);
	if (w->kv_dry)    /* the working-set pre-pass needs only ws */
		return;
	tgt_ann_put(t, "kind", "%s", kind);
	tgt_ann_put(t, "mxu", "%dx%d x%d, weight-stationary, %s in, f32 accumulate", a->R, a->C, a->nmxu, rt_dtype_name(s->in));
	tgt_ann_put(t, "gemm", "%lldx%lldx%lld x%lld", (long long)s->M, (long long)s->N, (long long)s->K, (long long)s->batch);
	tgt_ann_put(t, "padded", "%lldx%lldx%lld", (long long)m->Mp, (long long)m->Np, (long long)m->Kp);
	tgt_ann_put(t, "pad_waste", "%.4f", m->pad_waste);
	tgt_ann_put(t, "layout", "(%d,%d) tiles of the streamed operand", m->sub, TPU_LANES);
	tgt_ann_put(t, "folds", "%lld (%lld row x %lld col x %lld batch)", (long long)m->folds, (long long)m->kfold, (long long)m->nfold,
	    (long long)s->batch);
	tgt_ann_put(t, "stream", "%lld rows per fold, %lld M chunks, %lld items per MXU", (long long)m->T, (long long)m->mchunks,
	    (long long)m->per_mxu);
	tgt_ann_put(t, "cycles", "%.0f", m->cycles);
	tgt_ann_put(t, "scalesim_cycles", "%.0f", m->scalesim_cycles);
	tgt_ann_put(t, "mxu_util", "%.4f", m->util);
	tgt_ann_put(t, "vmem_block", "%lldx%lldx%lld", (long long)m->bm, (long long)m->bn, (long long)m->bk);
	tgt_ann_put(t, "grid_steps", "%lld", (long long)m->steps);
	tgt_ann_put(t, "vmem", "%.0f bytes, 2 buffers per operand (HBM->VMEM DMA double-buffered)", m->vmem_bytes);
	char why[224];
	double fold_rows = (double)m->T / m->rate;
	snprintf(why, sizeof why, "%s; %s", fold_rows < a->R ? "weight-load bound: each fold streams fewer rows than the R cycles its weight "
		 "tile takes to load" : "stream bound: weight loads hide under the fold's stream",
		 m->hbm > fmax(m->core, m->vmem) ? "HBM-bound overall" : m->vmem > m->core ? "VMEM-bound overall" : "MXU-bound overall");
	tgt_ann_put(t, "why", "%s", why);
	TpuCost c = { .mxu = m->core, .vmem = m->vmem, .hbm = m->hbm, .fixed = m->fixed };
	put_cost(t, &c);
}

static int gemm_kernel(TpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *A = &w->l->f.vals[fn->in[0]], *B = &w->l->f.vals[fn->in[1]], *Y = &w->l->f.vals[fn->out[0]];
	if (Y->rank < 1 || A->rank < 1 || B->rank < 1)
		return 0;
	MxuShape s = { .in = node_format(w, fn->n), .batch = 1 };
	s.in_bytes = s.w_bytes = elem_bytes(s.in);
	s.out_bytes = rt_dtype_bytes(tpu_dtype(w, Y), 1);
	/* A weight operand without batch dimensions stays latched across the batch: fold the batch
	 * into the streamed rows (one [batch*M, K] product), as XLA does for dense layers. */
	TgtGemmDims g;
	tgt_gemm_extents(Y->dims, Y->rank, A->dims, A->rank, B->rank,
			 fn->n->op == OP_Gemm && rt_attr_int(&fn->n->attrs, "transA", 0), &g);
	s.batch = g.batch, s.M = g.M, s.N = g.N, s.K = g.K;
	MxuPlan m;
	if (s.M == 0 || s.N == 0 || s.K == 0 || !mxu_plan(w, &s, &m))
		return 0;
	pi->opts.mma_in = mma_codec(s.in);
	put_mxu(w, t, &s, &m, "matmul");
	return 1;
}

static int conv_kernel(TpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *X = &w->l->f.vals[fn->in[0]], *W = &w->l->f.vals[fn->in[1]], *Y = &w->l->f.vals[fn->out[0]];
	if (Y->rank < 3 || W->rank != Y->rank || X->rank != Y->rank)
		return 0;
	int64_t g = rt_attr_int(&fn->n->attrs, "group", 1);
	MxuShape s = { .in = node_format(w, fn->n), .batch = g > 0 ? g : 1 };
	s.in_bytes = s.w_bytes = elem_bytes(s.in);
	s.out_bytes = rt_dtype_bytes(tpu_dtype(w, Y), 1);
	s.M = Y->dims[0], s.K = W->dims[1], s.N = W->dims[0] / s.batch;
	for (int i = 2; i < Y->rank; i++)
		s.M *= Y->dims[i], s.K *= W->dims[i];
	MxuPlan m;
	if (s.M == 0 || s.N == 0 || s.K == 0 || !mxu_plan(w, &s, &m))
		return 0;
	pi->opts.mma_in = mma_codec(s.in);
	put_mxu(w, t, &s, &m, "conv.im2col");
	return 1;
}

/* ---- KV-cache residency in on-chip SRAM ----
 * A chip whose machine gives the efficiency `kv_resident` (the 8i: its 384 MB SRAM keeps
 * KV-cache state on chip across decode steps, hardware.md §2.14, Jeff Dean's note cited in
 * tpu-8i.xml) keeps part of the past KV cache in VMEM.  What else needs the SRAM: every
 * kernel's double-buffered VMEM blocks, on each TensorCore at once, so the largest working set
 * of any kernel of the plan (tile.c) times the TensorCores is reserved first; `kv_resident` x
 * the rest holds KV blocks.  A block is C tokens (one MXU column tile of Q K^T) of one layer's
 * past keys and values.  Every past block is read once per decode step, so every byte kept on
 * chip saves the same HBM time; a layer's attention costs max(MXU, VPU, VMEM, HBM), convex in
 * its HBM bytes, so spreading the blocks evenly over the layers (round robin, oldest block
 * first: they stay valid as the sequence grows) minimises the sum. */

/* Past tokens and bytes per past token (keys + values) of attention node fn; 0 without a
 * KV-cache input. */
static int64_t kv_past(const TpuLw *w, const FlatNode *fn, double *tok_bytes)
{
	if (!(ir_ops[fn->n->op].flags & F_ATTN) || fn->nin < 6 || fn->in[4] < 0 || fn->in[5] < 0)
		return 0;
	const FlatVal *k = &w->l->f.vals[fn->in[4]];
	if (k->rank != 4 || k->dims[2] <= 0)
		return 0;
	*tok_bytes = (double)(w->l->p->buffers[w->l->buf[fn->in[4]]].size + w->l->p->buffers[w->l->buf[fn->in[5]]].size) / (double)k->dims[2];
	return k->dims[2];
}

static int kv_plan(TpuLw *w)
{
	double frac = dev_efficiency(w->a.dev, "kv_resident", 0);
	const MemSpace *vm = dev_mem_kind(w->a.dev, MEM_VMEM);
	w->kv_block = w->a.C;
	if (frac <= 0 || !vm || !num_has(&vm->capacity))
		return 0;
	w->kv_sram = vm->capacity.v * (vm->scope == SCOPE_UNIT ? w->a.ncores : 1);
	w->kv_budget = frac * fmax(0, w->kv_sram - w->ws * w->a.ncores);
	/* every chip has its own SRAM: one budget per device instance */
	double *left = malloc(sizeof *left * ((size_t)w->l->devs.n + 1)), *used = calloc((size_t)w->l->devs.n + 1, sizeof *used);
	char *full = calloc((size_t)w->l->devs.n + 1, 1);
	if (!left || !used || !full) {
		free(left), free(used), free(full);
		return rt_errorf(w->l->e, RT_ENOMEM, "out of memory planning the KV cache");
	}
	for (int k = 0; k < w->l->devs.n; k++)
		left[k] = w->kv_budget;
	for (int64_t r = 0, more = 1; more; r++) {
		more = 0;
		for (int i = 0; i < w->l->f.nnodes; i++) {
			double tb = 0;
			int64_t past = kv_past(w, &w->l->f.nodes[i], &tb), first = r * w->kv_block;
			int k = w->l->devs.node_pl[i];
			if (first >= past || k < 0 || full[k])
				continue;
			int64_t n = past - first < w->kv_block ? past - first : w->kv_block;
			if ((double)n * tb > left[k]) {
				full[k] = 1;    /* this chip's SRAM is full: its later layers keep one block fewer */
				continue;
			}
			left[k] -= (double)n * tb;
			used[k] += (double)n * tb;
			w->kv_tok[i] += n;
			more = 1;
		}
	}
	for (int k = 0; k < w->l->devs.n; k++)
		w->kv_used = fmax(w->kv_used, used[k]);
	free(left), free(used), free(full);
	return 0;
}

/* Records node i's KV residency and returns the past-KV bytes it reads from SRAM. */
static double kv_attrs(TpuLw *w, int i, Ann *t)
{
	double tb = 0;
	int64_t past = kv_past(w, &w->l->f.nodes[i], &tb);
	if (past == 0)
		return 0;
	int64_t res = w->kv_tok[i], blk = w->kv_block, nb = (past + blk - 1) / blk, rb = (res + blk - 1) / blk;
	if (w->kv_budget <= 0) {
		tgt_ann_put(t, "kv_sram", "none: %lld past tokens (%.4g MB) in HBM (no KV residency on this chip)", (long long)past,
		    (double)past * tb / 1e6);
		tgt_ann_put(t, "kv_sram_bytes", "0");
		tgt_ann_put(t, "kv_hbm_bytes", "%.0f", (double)past * tb);
		return 0;
	}
	tgt_ann_put(t, "kv_sram", "%lld of %lld blocks of %lld tokens in SRAM (%.4g MB), %lld in HBM (%.4g MB)", (long long)rb,
	    (long long)nb, (long long)blk, (double)res * tb / 1e6, (long long)(nb - rb), (double)(past - res) * tb / 1e6);
	tgt_ann_put(t, "kv_sram_bytes", "%.0f", (double)res * tb);
	tgt_ann_put(t, "kv_hbm_bytes", "%.0f", (double)(past - res) * tb);
	tgt_ann_put(t, "kv_budget", "%.4g MB of KV blocks in %.4g MB SRAM: %.4g MB left after %d x %.4g MB kernel working set, %s",
	    w->kv_used / 1e6, w->kv_sram / 1e6, w->kv_budget / 1e6, w->a.ncores, w->ws / 1e6,
	    w->l->devs.partitioned ? "per chip, its layers" : "all layers");
	return (double)res * tb;
}

static int attn_kernel(TpuLw *w, const FlatNode *fn, PlanInstr *pi, Ann *t)
{
	const FlatVal *Q = &w->l->f.vals[fn->in[0]], *K = &w->l->f.vals[fn->in[1]], *V = &w->l->f.vals[fn->in[2]];
	const Attrs *at = &fn->n->attrs;
	int64_t B, qh, kvh, Sq, T, d, dv;
	if (Q->rank == 4) {
		B = Q->dims[0], qh = Q->dims[1], Sq = Q->dims[2], d = Q->dims[3];
		kvh = K->dims[1], T = K->dims[2], dv = V->dims[3];
	} else if (Q->rank == 3) {
		qh = rt_attr_int(at, "q_num_heads", 1), kvh = rt_attr_int(at, "kv_num_heads", 1);
		B = Q->dims[0], Sq = Q->dims[1], T = K->dims[1];
		d = Q->dims[2] / (qh ? qh : 1), dv = V->dims[2] / (kvh ? kvh : 1);
	} else
		return 0;
	if (fn->nin > 4 && fn->in[4] >= 0 && w->l->f.vals[fn->in[4]].rank == 4)
		T += w->l->f.vals[fn->in[4]].dims[2];
	if (B == 0 || qh == 0 || kvh == 0 || Sq == 0 || T == 0 || d == 0 || dv == 0)
		return 0;
	/* Two products per head, bf16 in: S = Q K^T (K^T stationary: K = d, N = T) and O = P V
	 * (V stationary: K = T, N = dv); GQA shares a KV head among qh/kvh query heads, whose rows
	 * stream through the same latched tile. */
	int64_t grp = qh / kvh > 0 ? qh / kvh : 1;
	MxuShape s1 = { .batch = B * kvh, .M = Sq * grp, .N = T, .K = d, .in = DT_BF16, .in_bytes = 2, .w_bytes = 2, .out_bytes = 4 };
	MxuShape s2 = { .batch = B * kvh, .M = Sq * grp, .N = dv, .K = T, .in = DT_BF16, .in_bytes = 2, .w_bytes = 2, .out_bytes = 2 };
	MxuPlan m1, m2;
	if (!mxu_plan(w, &s1, &m1) || !mxu_plan(w, &s2, &m2))
		return 0;
	double scores = (double)B * qh * Sq * T;
	double padded = (double)(m1.Mp * m1.Np) * s1.batch;
	w->ws = fmax(w->ws, fmax(m1.vmem_bytes, m2.vmem_bytes));
	if (w->kv_dry)    /* the working-set pre-pass needs only ws */
		return 1;
	double bytes = ((double)B * qh * Sq * (d + dv) + (double)B * kvh * T * (d + dv)) * 2;
	/* past KV blocks resident in SRAM are read at the VMEM bandwidth instead of HBM's */
	double onchip = w->kv_dry ? 0 : fmin(kv_attrs(w, (int)(fn - w->l->f.nodes), t), bytes);
	bytes -= onchip;
	TpuCost c = { .mxu = m1.mxu + m2.mxu, .vmem = m1.vmem + m2.vmem + onchip / w->a.vmem_bw, .hbm = bytes / w->a.hbm_bw,
		      .vpu = padded * TPU_SOFTMAX_VPU_OPS / w->a.vpu, .fixed = w->a.fixed + w->a.dma_latency + w->a.t0 };
	pi->opts.mma_in = DT_BF16;
	tgt_ann_put(t, "kind", "attention");
	tgt_ann_put(t, "mxu", "%dx%d x%d, QK^T then PV, bf16 in, f32 accumulate", w->a.R, w->a.C, w->a.nmxu);
	tgt_ann_put(t, "qk", "%lldx%lldx%lld x%lld padded %lldx%lldx%lld", (long long)s1.M, (long long)s1.N, (long long)s1.K,
	    (long long)s1.batch, (long long)m1.Mp, (long long)m1.Np, (long long)m1.Kp);
	tgt_ann_put(t, "pv", "%lldx%lldx%lld x%lld padded %lldx%lldx%lld", (long long)s2.M, (long long)s2.N, (long long)s2.K,
	    (long long)s2.batch, (long long)m2.Mp, (long long)m2.Np, (long long)m2.Kp);
	double useful = 2 * scores * (d + dv), padmacs = 2.0 * (m1.Mp * m1.Np * m1.Kp * s1.batch + m2.Mp * m2.Np * m2.Kp * s2.batch);
	tgt_ann_put(t, "pad_waste", "%.4f", padmacs > 0 ? 1 - useful / padmacs : 0);
	tgt_ann_put(t, "softmax", "vector unit, f32, %.0f ops per padded score, scores kept in VMEM", TPU_SOFTMAX_VPU_OPS);
	tgt_ann_put(t, "why", "%s-bound", c.hbm >= fmax(c.mxu, c.vpu) ? "HBM" : c.vpu > c.mxu ? "vector-unit" : "MXU");
	put_cost(t, &c);
	return 1;
}

/* Bytes input k of fn is read from HBM: lookups read only the rows they index (an embedding
 * table's gathered rows, the RoPE cos/sin rows at the positions), everything else whole. */
static double read_bytes(const TpuLw *w, const FlatNode *fn, int k)
{
	const PlanBuffer *b = &w->l->p->buffers[w->l->buf[fn->in[k]]];
	Op op = fn->n->op;
	if (!ir_op_is_lookup(op, k))
		return (double)b->size;
	if (op == OP_RotaryEmbedding && fn->nin > 3 && fn->in[3] >= 0) {
		const FlatVal *cs = &w->l->f.vals[fn->in[k]];
		double rows = numel(&w->l->f.vals[fn->in[3]]), row = cs->rank > 0 ? numel(cs) / (double)cs->dims[0] : 0;
		return fmin((double)b->size, rows * row * rt_dtype_bytes(b->dtype, 1));
	}
	if (fn->nout > 0) {
		const PlanBuffer *y = &w->l->p->buffers[w->l->buf[fn->out[0]]];
		double per = rt_dtype_bytes(b->dtype, 1) / (double)rt_dtype_bytes(y->dtype, 1);
		return fmin((double)b->size, (double)y->size * per);
	}
	return (double)b->size;
}

/* Whether node fn computes in f64 (an f64 operand or result held in f64), which the VPU does in
 * software at vpu64. */
static int emulated_f64(const TpuLw *w, const FlatNode *fn)
{
	for (int k = 0; k < fn->nin + fn->nout; k++) {
		int v = k < fn->nin ? fn->in[k] : fn->out[k - fn->nin];
		if (v >= 0 && tpu_dtype(w, &w->l->f.vals[v]) == DT_F64)
			return 1;
	}
	return 0;
}

/* Vector-unit and memory kernels: f32 work on the (8,128)-padded elements at the VPU rate,
 * bytes at HBM bandwidth (backends.md §0); inside a fusion group only external traffic counts. */
static void vec_kernel(TpuLw *w, int i, PlanInstr *pi, Ann *t)
{
	const FlatNode *fn = &w->l->f.nodes[i];
	int grp = w->l->gfirst[i] >= 0, lead = !grp || w->l->gfirst[i] == i;
	double bytes = 0, out = 0, pout = 0;
	for (int k = 0; k < fn->nin; k++) {
		if (fn->in[k] < 0)
			continue;
		int def = w->l->f.vals[fn->in[k]].def;
		if (!(grp && def >= 0 && w->l->gfirst[def] == w->l->gfirst[i]))
			bytes += read_bytes(w, fn, k);
	}
	for (int k = 0; k < fn->nout; k++) {
		const FlatVal *v = &w->l->f.vals[fn->out[k]];
		out += numel(v);
		pout += tpu_padded_numel(v->rank, v->dims, 32);
		if (!grp || w->l->glast[w->l->gfirst[i]] == i || v->is_output)
			bytes += (double)w->l->p->buffers[w->l->buf[fn->out[k]]].size;
	}
	TpuCost c = { 0 };
	int gather = fn->n->op == OP_Gather && w->a.sparsecores > 0;
	if (ir_ops[fn->n->op].flags & F_VIEW) {
		tgt_ann_put(t, "kind", "view");
	} else if (gather) {
		/* Embedding lookup on the SparseCores (hardware.md §3.5): rows move HBM to HBM by DMA;
		 * the TensorCore does no work. */
		pi->unit = w->sc_unit[w->l->devs.node_pl[i]];
		c.hbm = bytes / w->a.hbm_bw;
		c.fixed = w->a.fixed + w->a.dma_latency;
		tgt_ann_put(t, "kind", "gather");
		tgt_ann_put(t, "unit", "sparsecore x%d", w->a.sparsecores);
		tgt_ann_put(t, "why", "embedding lookup: irregular row gather offloaded to the SparseCores");
	} else {
		double ratio = out > 0 ? pout / out : 1;
		int f64 = w->a.vpu64 > 0 && emulated_f64(w, fn);
		c.hbm = bytes / w->a.hbm_bw;
		c.vpu = pi->flops * ratio / (f64 ? w->a.vpu64 : w->a.vpu);
		c.fixed = lead ? w->a.fixed + w->a.dma_latency : 0;
		tgt_ann_put(t, "kind", "vector");
		tgt_ann_put(t, "unit", "vpu %dx%d %s", TPU_SUBLANES, TPU_LANES, f64 ? "f64 (software)" : "f32");
		tgt_ann_put(t, "pad_waste", "%.4f", pout > 0 ? 1 - out / pout : 0);
		if (fn->n->op == OP_Gather)
			tgt_ann_put(t, "why", "no SparseCore on this chip: gather by TensorCore DMA");
	}
	if (grp && !lead)
		tgt_ann_put(t, "fused", "into %s", w->l->p->buffers[w->l->buf[w->l->f.nodes[w->l->gfirst[i]].out[0]]].name);
	if (tgt_load_kernel(&w->l->f, w->l->gfirst, i)) {
		/* a weight-only transform (int8 weight Quantize, its Transposes): run once when the model
		 * is loaded, as JetStream converts int8 checkpoints (tgt_load_value) */
		tgt_ann_put(t, "phase", "load");
		tgt_ann_put(t, "load_us", "%.4g", tpu_cost_total(&c) * 1e6);
		c = (TpuCost){ 0 };
	}
	put_cost(t, &c);
}

/* ---- ICI: the slice's copies and collectives (targets/tpu/ici.c) ---- */

/* The chip (instance number) holding plan buffer b: "tpu17" -> 17, "tpu" -> 0. */
static int chip_of(const TpuLw *w, int b)
{
	const char *name = w->l->p->devices[w->l->p->spaces[w->l->p->buffers[b].space].device].name;
	size_t n = strlen(w->a.dev->id);
	return strncmp(name, w->a.dev->id, n) == 0 ? atoi(name + n) : 0;
}

/* "16x16 torus with wraparound" / "4 chips fully connected" */
static void topo_str(const TpuIci *ici, char *buf, size_t n)
{
	if (ici->full_mesh) {
		snprintf(buf, n, "%d chips fully connected", ici->dims[0]);
		return;
	}
	size_t o = 0;
	for (int a = 0; a < ici->ndims && o < n; a++)
		o += (size_t)snprintf(buf + o, n - o, "%s%d", a ? "x" : "", ici->dims[a]);
	if (o < n)
		snprintf(buf + o, n - o, " %storus%s", ici->twist ? "twisted " : "", ici->wrap ? " with wraparound" : "");
}

/* Appends the n pairs add (interned in the plan) to instruction in's target attributes. */
static int set_tile(PlanInstr *in, const PlanKV *add, int n, RtError *e)
{
	PlanKV *kv = rt_realloc(in->tile, sizeof *kv * ((size_t)n + (size_t)in->ntile));
	if (!kv)
		return rt_errorf(e, RT_ENOMEM, "out of memory annotating ICI transfers");
	memcpy(kv + in->ntile, add, sizeof *kv * (size_t)n);
	in->tile = kv, in->ntile += n;
	return 0;
}

/* Prices one chip-to-chip copy or collective on the torus (topo: topo_str's) and records how. */
static void ici_instr(const TpuLw *w, const PlanInstr *in, const char *topo, Ann *t)
{
	const TpuIci *ici = &w->ici;
	TpuIciCost c;
	if (in->kind == PI_COPY) {
		int a = chip_of(w, in->in[0]), b = chip_of(w, in->out[0]);
		double bytes = (double)w->l->p->buffers[in->in[0]].size;
		tpu_ici_copy(ici, bytes, a, b, &c);
		tgt_ann_put(t, "kind", "ici.copy");
		tgt_ann_put(t, "ici", "%s%d -> %s%d: %d hop(s) on the %s, one link of %.4g GB/s each way", w->a.dev->id, a, w->a.dev->id, b,
		    c.hops, topo, ici->link_bw / 1e9);
	} else {
		int chips[TGT_MAX_OPERANDS], n = in->nin < TGT_MAX_OPERANDS ? in->nin : TGT_MAX_OPERANDS, ext[4];
		for (int k = 0; k < n; k++)
			chips[k] = chip_of(w, in->in[k]);
		tpu_ici_group(ici, chips, n, ext);
		double size = (double)w->l->p->buffers[in->in[0]].size;
		double V = in->coll == PC_ALLREDUCE || in->coll == PC_REDUCESCATTER ? size : in->coll == PC_ALLGATHER && in->nout > 0
			   ? (double)w->l->p->buffers[in->out[0]].size : size * n;
		tpu_ici_collective(ici, in->coll, V, ext, &c);
		char grp[96] = "";
		size_t o = 0;
		for (int a = 0; a < (ici->full_mesh ? 1 : ici->ndims) && o < sizeof grp; a++)
			o += (size_t)snprintf(grp + o, sizeof grp - o, "%s%d%s", a ? "x" : "", ext[a], c.wrapped[a] ? "w" : "");
		tgt_ann_put(t, "kind", "ici.%s", plan_coll_names[in->coll < PC_COUNT ? in->coll : 0]);
		tgt_ann_put(t, "ici", "%d chips as %s of the %s (w: axis wraps, bidirectional ring), %d latency step(s), %.4g MB, "
		    "latency x %.3g", n, grp, topo, c.hops, V / 1e6, ici->coll_latency);
	}
	tgt_ann_put(t, "ici_lat_us", "%.4g", c.lat * 1e6);
	tgt_ann_put(t, "ici_bw_us", "%.4g", c.bw * 1e6);
	tgt_ann_put(t, "ici_us", "%.4g", c.t * 1e6);
	tgt_ann_put(t, "why", "%s", c.lat >= c.bw ? "latency-bound: per-hop latency exceeds the transfer time" : "bandwidth-bound");
}

/* Every copy and collective between chips of the plan priced on the ICI torus. */
static int ici_annotate(TpuLw *w)
{
	if (!w->ici.present || !w->l->devs.partitioned)
		return 0;
	char topo[96];
	topo_str(&w->ici, topo, sizeof topo);
	for (int s = 0; s < w->l->p->nstreams; s++)
		for (int i = 0; i < w->l->p->streams[s].nins; i++) {
			PlanInstr *in = &w->l->p->streams[s].ins[i];
			if ((in->kind != PI_COPY && in->kind != PI_COLLECTIVE) || in->link < 0 || in->nin < 1)
				continue;
			/* a copy's pairs follow from its chips and bytes alone: a layer's instances and
			 * tensor-parallel ranks repeat them, interned once (the kernel memo's table) */
			int64_t sig[4] = { -2, in->kind == PI_COPY ? chip_of(w, in->in[0]) : -1, in->kind == PI_COPY ? chip_of(w, in->out[0]) : -1,
					   w->l->p->buffers[in->in[0]].size };
			TgtKernEntry *m = in->kind == PI_COPY ? tgt_memo_slot(w->l, &w->km, sig, 4) : NULL;
			TgtKernEntry one = { 0 };   /* a collective's entry, used after the block below */
			if (!m || !m->sig) {
				Ann t;      /* not zeroed: tgt_ann_put fills entries [0, n) */
				t.n = 0;
				ici_instr(w, in, topo, &t);
				PlanInstr none;
				plan_instr_init(&none, PI_COPY);
				if (tgt_memo_put(w->l, &w->km, m ? m : &one, sig, 4, &none, &t) < 0)
					return -1;
				if (!m)
					m = &one;
			}
			if (set_tile(in, m->kv, m->n, w->l->e) < 0)
				return -1;
		}
	return 0;
}

/* The largest VMEM working set of any MXU kernel (w->ws), before KV blocks claim the rest. */
static void plan_working_set(TpuLw *w)
{
	w->kv_dry = 1;
	for (int i = 0; i < w->l->f.nnodes; i++) {
		const FlatNode *fn = &w->l->f.nodes[i];
		PlanInstr pi;
		Ann t;      /* not zeroed: 11 KB a node; tgt_ann_put fills entries [0, n) */
		t.n = 0;
		plan_instr_init(&pi, PI_KERNEL);
		if ((fn->n->op == OP_MatMul || fn->n->op == OP_Gemm) && fn->nin >= 2)
			gemm_kernel(w, fn, &pi, &t);
		else if (fn->n->op == OP_Conv && fn->nin >= 2)
			conv_kernel(w, fn, &pi, &t);
		else if ((ir_ops[fn->n->op].flags & F_ATTN) && fn->nin >= 3)
			attn_kernel(w, fn, &pi, &t);
	}
	w->kv_dry = 0;
}

/* What decides node i's kernel (tgt_kernel_sig), with what the hooks above read besides: the
 * node's FLOP, its past tokens kept in SRAM (kv_plan) and the dtype every operand is held in
 * (tpu_dtype: the f64 emulation and an MXU product's output bytes). */
static int kernel_sig(const TpuLw *w, int i, const PlanInstr *pi, int64_t *sig)
{
	const FlatNode *fn = &w->l->f.nodes[i];
	int n = tgt_kernel_sig(w->l, i, sig, TGT_SIG_MAX - 3 - fn->nin - fn->nout);
	if (n < 0)
		return -1;
	memcpy(&sig[n++], &pi->flops, sizeof pi->flops);
	sig[n++] = w->kv_tok[i];
	sig[n++] = pi->unit;
	for (int k = 0; k < fn->nin + fn->nout; k++) {
		int v = k < fn->nin ? fn->in[k] : fn->out[k - fn->nin];
		sig[n++] = v < 0 ? -1 : (int64_t)tpu_dtype(w, &w->l->f.vals[v]);
	}
	return n;
}

static int kernel(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t);

/* The kernel hook: MXU products and convolutions, attention, else a vector-unit kernel; a node
 * lowered before by what decides it (kernel_sig) takes that result. */
int tpu_kernel(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t)
{
	TpuLw *w = l->ctx;
	int64_t sig[TGT_SIG_MAX];
	return tgt_memo_lower(l, &w->km, sig, kernel_sig(w, i, pi, sig), kernel, i, pi, t);
}

/* tpu_kernel's kernel, lowered. */
static int kernel(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t)
{
	TpuLw *w = l->ctx;
	const FlatNode *fn = &l->f.nodes[i];
	int done = 0;
	if ((fn->n->op == OP_MatMul || fn->n->op == OP_Gemm) && fn->nin >= 2)
		done = gemm_kernel(w, fn, pi, t);
	else if (fn->n->op == OP_Conv && fn->nin >= 2)
		done = conv_kernel(w, fn, pi, t);
	else if ((ir_ops[fn->n->op].flags & F_ATTN) && fn->nin >= 3)
		done = attn_kernel(w, fn, pi, t);
	if (!done) {
		t->n = 0;
		pi->opts.mma_in = DT_INVALID;
		vec_kernel(w, i, pi, t);
	}
	return 0;
}

/* The prepare hook: with every buffer placed, the kernels' VMEM working set and the KV blocks
 * the SRAM keeps. */
int tpu_prepare(TgtLower *l)
{
	plan_working_set(l->ctx);
	return kv_plan(l->ctx);
}

/* The finish hook: the slice's copies and collectives priced on the ICI torus. */
int tpu_finish(TgtLower *l) { return ici_annotate(l->ctx); }

/* The setup hook: the machine's first TPU with an MXU, its numbers and torus, and a SparseCore
 * unit per chip that has them. */
int tpu_setup(TgtLower *l)
{
	const TgtMachine *tm = l->in->machine;
	TpuLw *w = tgt_lower_state(l, sizeof *w);
	if (!w)
		return -1;
	w->l = l;
	const Device *d = machine_first(tm->m, DEV_TPU);
	if (!d)
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' has no TPU for target tpu", tm->m->name);
	if (!dev_mma(d, "mxu"))
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' (%s) has no mxu matrix family; target tpu needs it",
				 tm->m->name, d->arch ? d->arch : "?");
	if (tpu_arch(d, &w->a, l->e) < 0 || tpu_ici(tm->m, d, &w->ici, l->e) < 0)
		return -1;
	if (!(w->kv_tok = tgt_lower_alloc(l, (size_t)l->f.nnodes + 1, sizeof *w->kv_tok)) ||
	    !(w->sc_unit = tgt_lower_alloc(l, (size_t)l->devs.n + 1, sizeof *w->sc_unit)) ||
	    !(w->exact = tgt_lower_exact(l, DT_BF16)))
		return -1;
	for (int k = 0; k < l->devs.n; k++) {
		w->sc_unit[k] = -1;
		if (w->a.sparsecores > 0) {
			char sp[192];
			snprintf(sp, sizeof sp, "%s.sparsecore", l->p->devices[l->devs.dev[k]].name);
			PlanUnit u = { .name = sp, .kind = "sparsecore", .device = l->devs.dev[k] };
			if ((w->sc_unit[k] = plan_add_unit(l->p, &u, l->e)) < 0)
				return -1;
		}
	}
	return 0;
}
