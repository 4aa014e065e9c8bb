/* targets/gpu/cost.c: the cost hook of the GPU targets (hopper, blackwell; vera-rubin's GPU
 * pool).  Kernels carry their resource times (t.mma_us, t.smem_us, t.hbm_us, t.l2_us, t.sfu_us,
 * t.fma_us, t.overlap, t.fixed_us, t.floor_us) from the GPU model (targets/gpu/model.c,
 * backends.md §0-§1b); the hook recombines them (gpu_cost_total), so the timing engine prices
 * plans without the machine file.  A collective adds its t.base_us to the runtime's ring time. */
#include "targets/gpu/gpu.h"

#include <math.h>

double gpu_cost_pooled(const GpuCost *c, double pool)
{
	if (!(pool >= 1))
		pool = 1;
	GpuCost k = *c;
	k.mma /= pool, k.smem /= pool, k.hbm /= pool, k.l2 /= pool, k.sfu /= pool, k.fma /= pool;
	double t = gpu_cost_total(&k);
	return t >= 0 && isfinite(t) ? t : 0;
}

double gpu_instr_cost(const PlanInstr *in, double pool)
{
	if (in->kind == PI_COLLECTIVE)
		return fmax(0, plan_instr_num(in, "base_us", 0)) * 1e-6;
	if (in->kind != PI_KERNEL || plan_instr_num(in, "fixed_us", -1) < 0)
		return -1;
	GpuCost c = { .mma = plan_instr_num(in, "mma_us", 0), .smem = plan_instr_num(in, "smem_us", 0), .hbm = plan_instr_num(in, "hbm_us", 0),
		      .l2 = plan_instr_num(in, "l2_us", 0), .sfu = plan_instr_num(in, "sfu_us", 0), .fma = plan_instr_num(in, "fma_us", 0),
		      .overlap = plan_instr_num(in, "overlap", 1), .fixed = plan_instr_num(in, "fixed_us", 0), .floor = plan_instr_num(in, "floor_us", 0) };
	return gpu_cost_pooled(&c, pool) * 1e-6;
}

double gpu_cost(const Plan *p, int stream, const PlanInstr *in)
{
	double t = gpu_instr_cost(in, 1);
	if (in->kind == PI_COLLECTIVE)   /* alpha-beta ring time plus the library's base latency */
		return rt_cost_roofline(p, stream, in) + t;
	return t >= 0 ? t : rt_cost_roofline(p, stream, in);
}

/* Scales every term of c by k (a kernel k times as long: the backward at the forward's rate per
 * FLOP, a context-parallel share of the tokens). */
static void cost_scale(GpuCost *c, double k)
{
	c->mma *= k, c->smem *= k, c->hbm *= k, c->l2 *= k, c->sfu *= k, c->fma *= k, c->fixed *= k, c->fill *= k, c->floor *= k;
}

int gpu_node_cost(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w, GpuCost *res)
{
	const GpuHooks *h = t->family;
	GpuArch a;
	RtError e = { 0 };
	TgtGemmDims g;
	TgtAttnDims at;
	(void)m;
	if (!w->tiles || w->to || !h || !w->node || w->reduce > 0 || gpu_arch(d, &a, &e) < 0)
		return 0;
	int graph = p && p->graph;
	if (h->gemm && tgt_work_gemm(w, &g) && dev_supports(d, g.in) && num_has(&d->peak[g.in])) {
		GemmShape s = { .batch = g.batch, .M = g.M, .N = g.N, .K = g.K, .in = g.in,
				.out_bytes = rt_dtype_bytes(g.out, 1) };
		GemmTile tile = { 0 };
		char why[256];
		if (h->gemm(&a, &s, &tile, why, sizeof why)) {
			gpu_launch(&a, graph, &tile.c);
			*res = tile.c;
			return 1;
		}
	}
	const Node *gn = w->node;
	if (h->gemm && gn->op == OP_GroupedMatMul && gn->nin >= 3 && gn->in[0] && gn->in[2] && gn->in[0]->type.rank == 2 &&
	    gn->in[2]->type.rank == 3 && gn->nout >= 1 && dev_supports(d, gn->in[0]->type.dt) && num_has(&d->peak[gn->in[0]->type.dt])) {
		/* MoE experts as the lowering's grouped GEMM (gmm_kernel: the expected active experts),
		 * cut over w->chips devices along the experts' N (column part) or else K (row part) */
		const Type *X = &gn->in[0]->type, *W = &gn->in[2]->type;
		int64_t R = dim_isconst(X->dims[0]) ? X->dims[0].k : 0, E = dim_isconst(W->dims[0]) ? W->dims[0].k : 0,
			K = dim_isconst(W->dims[1]) ? W->dims[1].k : 0, N = dim_isconst(W->dims[2]) ? W->dims[2].k : 0;
		int64_t ch = w->chips > 1 ? w->chips : 1;
		if (N % ch == 0)
			N /= ch;
		else if (K % ch == 0)
			K /= ch;
		else
			R = 0;
		GemmShape s = { .in = X->dt, .out_bytes = rt_dtype_bytes(gn->out[0]->type.dt, 1) };
		GemmTile tile = { 0 };
		char why[256];
		if (R >= 1 && E >= 1 && K >= 1 && N >= 1 && (gpu_grouped_shape(R, E, K, N, &s), h->gemm(&a, &s, &tile, why, sizeof why))) {
			gpu_launch(&a, graph, &tile.c);
			*res = tile.c;
			return 1;
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
		cost_scale(&tile.c, at.grad / (double)at.rest);
		*res = tile.c;
		return 1;
	}
	const Node *n = w->node;
	unsigned fl = ir_ops[n->op].flags;
	if (w->tiles < 2 || n->op == OP_Call || (fl & F_MATMUL) || (fl & F_ATTN))   /* no model here: the roofline */
		return 0;
	if (fl & F_VIEW) {
		*res = (GpuCost){ .overlap = 1 };
		return 1;
	}
	/* as the lowering's memory-bound kernel (mem_kernel): every operand and result once, a
	 * table lookup reading no more of its table than it writes, shared by w->chips devices;
	 * inside a fusion group (passes/fuse.c's fusion_group) only the group's external traffic,
	 * the result once, by its last member, and one launch, by its first */
	int64_t grp = rt_attr_int(&n->attrs, "fusion_group", -1);
	const Node *lead = NULL, *last = NULL;
	for (const Node *o = grp >= 0 && n->graph ? n->graph->first : NULL; o; o = o->next)
		if (rt_attr_int(&o->attrs, "fusion_group", -1) == grp)
			last = o, lead = lead ? lead : o;
	double out = 0, outn = 0, bytes = 0, chips = w->chips > 1 ? w->chips : 1;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] && ir_type_numel(n->out[i]->type) > 0) {
			out += (double)rt_dtype_bytes(n->out[i]->type.dt, ir_type_numel(n->out[i]->type));
			outn += (double)ir_type_numel(n->out[i]->type);
		}
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && ir_type_numel(n->in[i]->type) > 0 &&
		    !(grp >= 0 && n->in[i]->kind == V_NODE && n->in[i]->def && rt_attr_int(&n->in[i]->def->attrs, "fusion_group", -1) == grp)) {
			double b = (double)rt_dtype_bytes(n->in[i]->type.dt, ir_type_numel(n->in[i]->type));
			bytes += ir_op_is_lookup(n->op, i) && b > out ? out : b;
		}
	gpu_mem_cost(&a, (bytes + (!lead || n == last ? out : 0)) / chips, ir_node_flops(n) / chips, fl & F_TRANS ? outn / chips : 0, res);
	if (!lead || n == lead)
		gpu_launch(&a, graph, res);
	return 1;
}

double gpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	GpuArch a;
	RtError e = { 0 };
	GpuCost c;
	if (!w->node && w->tiles >= 2 && !w->to && t->family && gpu_arch(d, &a, &e) == 0) {
		/* an all-reduce: the timing engine's ring and the library's cost per call */
		const Link *l = machine_link(m, d, d);
		double bw = l ? link_coll_bw(l) : 0;
		if (!(w->reduce > 0) || w->chips < 2 || !(bw > 0) || w->flops > 0 || w->bytes > 0 || w->kernels > 0)
			return tgt_roofline_time(t, m, d, p, w);
		return rt_allreduce_ring_s(w->chips, w->reduce, num_has(&l->latency) ? l->latency.v : 0, bw) + a.coll_base;
	}
	if (gpu_node_cost(t, m, d, p, w, &c))
		return gpu_cost_total(&c);
	return tgt_roofline_time(t, m, d, p, w);
}
