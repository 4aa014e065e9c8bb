/* targets/vera-rubin/cost.c: the vera-rubin target's cost hook and the LPU pool's kernel pricing.
 *
 * The hook dispatches on the kind of the stream's device.  GPU pool: the GPU model's recorded
 * components (t.mma_us, t.hbm_us, ...: targets/gpu/model.c, backends.md §1b) of one Rubin GPU,
 * the streaming and compute terms divided by the node's pool_chips (the pool works tensor-
 * parallel; launch and fill stay) plus the node's comm_s (the disaggregate pass's tensor-parallel
 * all-reduce).  LPU pool: t.time_us recorded at lowering by vr_lpu_time.
 * Copies and events: the generic roofline (link alpha + bytes / bandwidth). */
#include "targets/vera-rubin/vr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_const(const Plan *p, int b)
{
	for (int i = 0; i < p->nconsts; i++)
		if (p->consts[i].buffer == b)
			return 1;
	return 0;
}

/* The narrowest float format with a matrix peak on the LPU: how its weights are stored. */
DType vr_lpu_format(const Device *d)
{
	DType f = dev_matmul_format(d);
	return f != DT_INVALID ? f : DT_F32;
}

/* What an LPU-pool kernel streams and computes, from the plan (vr_lpu_time) or the IR (passes). */
typedef struct VrLpuWork {
	double bytes;      /* operands and results streamed, weights at the LPU's format */
	double wbytes;     /* of a grouped matmul: its stacked weight's bytes (whole) */
	double frac;       /* of them, the share its routed rows touch */
	double out, flops, comm_s;
	int rowsplit;      /* a MatMul that shrinks (K > N): its partial sums are all-reduced */
} VrLpuWork;

static VrLpuTime vr_lpu_price(const Device *lpu, const Link *c2c, const VrLpuWork *w, int chips, const LpuCost *cyc,
			      double clock)
{
	VrLpuTime t = { 0 };
	DType wf = vr_lpu_format(lpu);
	if (chips < 1)
		chips = 1;
	const MemSpace *s = dev_mem_kind(lpu, MEM_SRAM);
	double bw = s && num_has(&s->bandwidth) ? s->bandwidth.v : 0;   /* lpu_arch requires it */
	double peak = dev_peak(lpu, wf);
	t.stream = bw > 0 ? w->bytes / (chips * bw) : 0;
	t.compute = peak > 0 ? w->flops / (chips * peak) : 0;
	const Unit *mxm = lpu->nunits ? &lpu->units[0] : NULL;
	t.fixed = (mxm && num_has(&mxm->latency) ? mxm->latency.v : 0) + w->comm_s;
	if (cyc && clock > 0) {
		/* the LPU backend's cycle model of the whole node on one chip (targets/lpu/schedule.c),
		 * its streaming and MXM/VXM cycles shared by the pool's chips; a grouped matmul streams
		 * only the experts its rows touch */
		double all = w->bytes + w->wbytes * (1 - w->frac), share = all > 0 ? w->bytes / all : 1;
		double busy = (double)(cyc->compute > cyc->stream ? cyc->compute : cyc->stream);
		t.stream = (double)cyc->stream * share / clock / chips;
		t.compute = (double)cyc->compute / clock / chips;
		t.fixed = ((double)cyc->dur - busy) / clock + w->comm_s;
	}
	t.link = w->comm_s;
	if (chips > 1 && c2c && w->rowsplit) {
		double ar = ceil(log2((double)chips)) * ((num_has(&c2c->latency) ? c2c->latency.v : 0) + w->out / link_oneway_bw(c2c));
		t.fixed += ar, t.link += ar;
	}
	return t;
}

VrLpuTime vr_lpu_time(const Plan *p, const Device *lpu, const Link *c2c, const PlanInstr *in, int chips,
		       const LpuCost *cyc, double clock)
{
	DType wf = vr_lpu_format(lpu);
	VrLpuWork w = { .frac = 1, .flops = in->flops, .comm_s = rt_attr_float(&in->attrs, "comm_s", 0) };
	if (in->op == RT_OP_GroupedMatMul && in->nin >= 3 && in->in[0] >= 0 && in->in[2] >= 0) {
		const PlanBuffer *x = &p->buffers[in->in[0]], *g = &p->buffers[in->in[2]];
		double rows = x->rank >= 1 ? (double)x->dims[0] : 1, experts = g->rank >= 1 ? (double)g->dims[0] : 1;
		w.frac = fmin(1, rows / experts);      /* experts touched by the routed rows */
	}
	for (int k = 0; k < in->nin; k++) {
		int b = in->in[k];
		if (b < 0)
			continue;
		const PlanBuffer *pb = &p->buffers[b];
		if (is_const(p, b)) {
			double wb = (double)rt_dtype_bytes(wf, plan_buffer_numel(pb));
			w.bytes += wb * (in->op == RT_OP_GroupedMatMul && k == 2 ? w.frac : 1);
			w.wbytes += in->op == RT_OP_GroupedMatMul && k == 2 ? wb : 0;
		} else
			w.bytes += (double)pb->size;
	}
	for (int k = 0; k < in->nout; k++)
		w.out += (double)p->buffers[in->out[k]].size;
	w.bytes += w.out;
	if ((in->op == RT_OP_MatMul || in->op == RT_OP_GroupedMatMul) && in->in[0] >= 0) {
		const PlanBuffer *a = &p->buffers[in->in[0]], *y = &p->buffers[in->out[0]];
		w.rowsplit = a->rank >= 1 && y->rank >= 1 && a->dims[a->rank - 1] > y->dims[y->rank - 1];
	}
	return vr_lpu_price(lpu, c2c, &w, chips, cyc, clock);
}

/* The last dimension of v, or 0. */
static double last_dim(const Value *v)
{
	return v && v->type.rank >= 1 && dim_isconst(v->type.dims[v->type.rank - 1]) ? (double)v->type.dims[v->type.rank - 1].k : 0;
}

/* IR node n on `chips` LPUs as vr_lpu_time will price its kernel (the same cycle model and the
 * same row-split all-reduce; the node's comm_s, set by disaggregate, included); -1 when a shape
 * is not known or the machine's LPU has no cycle model. */
static double vr_lpu_node(const Machine *m, const Device *lpu, const Node *n, int chips)
{
	LpuArch arch;
	LpuCost cyc;
	RtError e = { 0 };
	if (lpu_arch(m, lpu, &arch, &e) < 0 || lpu_ir_node_cycles(&arch, n, &cyc) < 0)
		return -1;
	DType wf = vr_lpu_format(lpu);
	int gmm = n->op == OP_GroupedMatMul && n->nin >= 3 && n->in[0] && n->in[2];
	VrLpuWork w = { .frac = 1, .flops = ir_node_flops(n), .comm_s = rt_attr_float(&n->attrs, "comm_s", 0) };
	if (gmm && n->in[0]->type.rank >= 1 && n->in[2]->type.rank >= 1 && dim_isconst(n->in[0]->type.dims[0]) &&
	    dim_isconst(n->in[2]->type.dims[0]))
		w.frac = fmin(1, (double)n->in[0]->type.dims[0].k / (double)n->in[2]->type.dims[0].k);
	for (int k = 0; k < n->nin + n->nout; k++) {
		const Value *v = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int64_t ne = v ? ir_type_numel(v->type) : 0;
		if (!v || ne <= 0)
			continue;
		if (k < n->nin && v->kind == V_PARAM) {
			double wb = (double)rt_dtype_bytes(wf, ne);
			w.bytes += wb * (gmm && k == 2 ? w.frac : 1);
			w.wbytes += gmm && k == 2 ? wb : 0;
			continue;
		}
		double b = (double)rt_dtype_bytes(v->type.dt, ne);
		w.bytes += b;
		w.out += k >= n->nin ? b : 0;
	}
	w.rowsplit = (n->op == OP_MatMul || gmm) && n->nin >= 1 && n->nout >= 1 && last_dim(n->in[0]) > last_dim(n->out[0]);
	VrLpuTime t = vr_lpu_price(lpu, machine_link(m, lpu, lpu), &w, chips, &cyc, arch.clock);
	return vr_lpu_total(&t);
}

double vr_lpu_total(const VrLpuTime *t) { return fmax(t->stream, t->compute) + t->fixed; }

double vr_cost(const Plan *p, int stream, const PlanInstr *in)
{
	const PlanDevice *d = &p->devices[p->streams[stream].device];
	if (in->kind == PI_COLLECTIVE)
		return gpu_cost(p, stream, in);
	if (in->kind != PI_KERNEL)
		return rt_cost_roofline(p, stream, in);
	if (d->kind && strcmp(d->kind, "lpu") == 0) {
		double t = plan_instr_num(in, "time_us", -1);
		return t >= 0 ? t * 1e-6 : rt_cost_roofline(p, stream, in);
	}
	double n = (double)rt_attr_int(&in->attrs, "pool_chips", 1);
	double t = gpu_instr_cost(in, n);
	if (t < 0)
		return rt_cost_roofline(p, stream, in);
	t += rt_attr_float(&in->attrs, "comm_s", 0);
	return t >= 0 && isfinite(t) ? t : 0;
}

/* Node pricing for passes (Target.node_time; disaggregate's pool sizes and micro-batches): one
 * node (TgtWork.node) as the lowering prices its kernel, on the GPU pool the GPU model's kernel
 * of the whole node (gpu_node_cost) with its parallel resources shared by the pool's w->chips
 * GPUs and its fixed costs not (gpu_cost_pooled, as vr_cost prices the plan's kernel), on the
 * LPU pool vr_lpu_node; other work by the GPU roofline of targets/lower.c or the LPU's
 * (targets/lpu/cost.c). */
double vr_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	if (d->kind == DEV_LPU && w->node && !w->to && !w->reduce) {
		double s = vr_lpu_node(m, d, w->node, w->chips);
		if (s >= 0)
			return s;
	}
	if (d->kind == DEV_GPU && w->node && !w->to && !(w->reduce > 0)) {
		TgtWork one = *w;
		GpuCost c;
		one.chips = 1, one.tiles = 2;
		if (gpu_node_cost(t, m, d, p, &one, &c))
			return gpu_cost_pooled(&c, w->chips);
	}
	return d->kind == DEV_LPU ? lpu_node_time(t, m, d, p, w) : tgt_roofline_time(t, m, d, p, w);
}
