/* targets/gpu/cost.c: the cost hook of the GPU targets (hopper, blackwell; vera-rubin's GPU
 * pool).  Kernels carry their resource times (t.mma_us, t.smem_us, t.hbm_us, t.l2_us, t.sfu_us,
 * t.fma_us, t.overlap, t.fixed_us, t.floor_us) from the GPU model (targets/gpu/model.c,
 * backends.md §0-§1b); the hook recombines them (gpu_cost_total), so the timing engine prices
 * plans without the machine file.  A collective adds its t.base_us to the runtime's ring time. */
#include "targets/gpu/gpu.h"

#include <math.h>

double gpu_instr_cost(const PlanInstr *in, double pool)
{
	if (in->kind == PI_COLLECTIVE)
		return fmax(0, plan_instr_num(in, "base_us", 0)) * 1e-6;
	if (in->kind != PI_KERNEL || plan_instr_num(in, "fixed_us", -1) < 0)
		return -1;
	if (!(pool >= 1))
		pool = 1;
	GpuCost c = { .mma = plan_instr_num(in, "mma_us", 0) / pool, .smem = plan_instr_num(in, "smem_us", 0) / pool, .hbm = plan_instr_num(in, "hbm_us", 0) / pool,
		      .l2 = plan_instr_num(in, "l2_us", 0) / pool, .sfu = plan_instr_num(in, "sfu_us", 0) / pool, .fma = plan_instr_num(in, "fma_us", 0) / pool,
		      .overlap = plan_instr_num(in, "overlap", 1), .fixed = plan_instr_num(in, "fixed_us", 0), .floor = plan_instr_num(in, "floor_us", 0) };
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

double gpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	const GpuHooks *h = t->family;
	GpuArch a;
	RtError e = { 0 };
	TgtGemmDims g;
	TgtAttnDims at;
	if (!w->tiles || w->to || !h || gpu_arch(d, &a, &e) < 0)
		return tgt_roofline_time(t, m, d, p, w);
	int graph = p && p->graph;
	if (!w->node && w->tiles >= 2) {   /* an all-reduce: the timing engine's ring and the library's cost per call */
		const Link *l = machine_link(m, d, d);
		double bw = l ? link_coll_bw(l) : 0;
		if (!(w->reduce > 0) || w->chips < 2 || !(bw > 0) || w->flops > 0 || w->bytes > 0 || w->kernels > 0)
			return tgt_roofline_time(t, m, d, p, w);
		return rt_allreduce_ring_s(w->chips, w->reduce, num_has(&l->latency) ? l->latency.v : 0, bw) + a.coll_base;
	}
	if (!w->node || w->reduce > 0)
		return tgt_roofline_time(t, m, d, p, w);
	if (h->gemm && tgt_work_gemm(w, &g) && dev_supports(d, g.in) && num_has(&d->peak[g.in])) {
		GemmShape s = { .batch = g.batch, .M = g.M, .N = g.N, .K = g.K, .in = g.in,
				.out_bytes = rt_dtype_bytes(g.out, 1) };
		GemmTile tile = { 0 };
		char why[256];
		if (h->gemm(&a, &s, &tile, why, sizeof why)) {
			gpu_launch(&a, graph, &tile.c);
			return gpu_cost_total(&tile.c);
		}
	}
	if (h->attn && tgt_work_attn(w, &at) && dev_supports(d, at.in) && num_has(&d->peak[at.in])) {
		double io = rt_dtype_bytes(at.in, 1);
		AttnShape s = { .B = at.B, .qh = at.qh, .kvh = at.kvh, .Sq = at.Sq, .T = at.T, .d = at.d, .dv = at.dv,
				.causal = at.causal, .in = at.in, .io_bytes = io, .kv_bytes = io, .off = at.off, .noff = at.noff };
		AttnTile tile = { 0 };
		h->attn(&a, &s, &tile);
		gpu_launch(&a, graph, &tile.c);
		/* the backward at the forward kernel's rate per FLOP (its recomputed Q K^T and softmax,
		 * dP, dV, dQ and dK) */
		return gpu_cost_total(&tile.c) * at.grad / (double)at.rest;
	}
	const Node *n = w->node;
	unsigned fl = ir_ops[n->op].flags;
	if (w->tiles < 2 || n->op == OP_Call || (fl & F_MATMUL) || (fl & F_ATTN))   /* no model here: the roofline */
		return tgt_roofline_time(t, m, d, p, w);
	if (fl & F_VIEW)
		return 0;
	/* as the lowering's memory-bound kernel (mem_kernel): every operand and result once, a
	 * table lookup reading no more of its table than it writes, shared by w->chips devices */
	double out = 0, outn = 0, bytes = 0, chips = w->chips > 1 ? w->chips : 1;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] && ir_type_numel(n->out[i]->type) > 0) {
			out += (double)rt_dtype_bytes(n->out[i]->type.dt, ir_type_numel(n->out[i]->type));
			outn += (double)ir_type_numel(n->out[i]->type);
		}
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && ir_type_numel(n->in[i]->type) > 0) {
			double b = (double)rt_dtype_bytes(n->in[i]->type.dt, ir_type_numel(n->in[i]->type));
			bytes += ir_op_is_lookup(n->op, i) && b > out ? out : b;
		}
	GpuCost c;
	gpu_mem_cost(&a, (bytes + out) / chips, ir_node_flops(n) / chips, fl & F_TRANS ? outn / chips : 0, &c);
	gpu_launch(&a, graph, &c);
	return gpu_cost_total(&c);
}
