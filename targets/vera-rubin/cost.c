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

VrLpuTime vr_lpu_time(const Plan *p, const Device *lpu, const Link *c2c, const PlanInstr *in, int chips,
		       const LpuCost *cyc, double clock)
{
	VrLpuTime t = { 0 };
	DType wf = vr_lpu_format(lpu);
	double bytes = 0, frac = 1, wbytes = 0;
	if (chips < 1)
		chips = 1;
	if (in->op == RT_OP_GroupedMatMul && in->nin >= 3 && in->in[0] >= 0 && in->in[2] >= 0) {
		const PlanBuffer *x = &p->buffers[in->in[0]], *w = &p->buffers[in->in[2]];
		double rows = x->rank >= 1 ? (double)x->dims[0] : 1, experts = w->rank >= 1 ? (double)w->dims[0] : 1;
		frac = fmin(1, rows / experts);      /* experts touched by the routed rows */
	}
	for (int k = 0; k < in->nin; k++) {
		int b = in->in[k];
		if (b < 0)
			continue;
		const PlanBuffer *pb = &p->buffers[b];
		if (is_const(p, b)) {
			double w = (double)rt_dtype_bytes(wf, plan_buffer_numel(pb));
			bytes += w * (in->op == RT_OP_GroupedMatMul && k == 2 ? frac : 1);
			wbytes += in->op == RT_OP_GroupedMatMul && k == 2 ? w : 0;
		} else
			bytes += (double)pb->size;
	}
	double out = 0;
	for (int k = 0; k < in->nout; k++)
		out += (double)p->buffers[in->out[k]].size;
	bytes += out;
	const MemSpace *s = dev_mem_kind(lpu, MEM_SRAM);
	double bw = s && num_has(&s->bandwidth) ? s->bandwidth.v : 0;   /* lpu_arch requires it */
	double peak = dev_peak(lpu, wf);
	t.stream = bw > 0 ? bytes / (chips * bw) : 0;
	t.compute = peak > 0 ? in->flops / (chips * peak) : 0;
	const Unit *mxm = lpu->nunits ? &lpu->units[0] : NULL;
	t.fixed = (mxm && num_has(&mxm->latency) ? mxm->latency.v : 0) + rt_attr_float(&in->attrs, "comm_s", 0);
	if (cyc && clock > 0) {
		/* the LPU backend's cycle model of the whole node on one chip (targets/lpu/schedule.c),
		 * its streaming and MXM/VXM cycles shared by the pool's chips; a grouped matmul streams
		 * only the experts its rows touch */
		double all = bytes + wbytes * (1 - frac), share = all > 0 ? bytes / all : 1;
		double busy = (double)(cyc->compute > cyc->stream ? cyc->compute : cyc->stream);
		t.stream = (double)cyc->stream * share / clock / chips;
		t.compute = (double)cyc->compute / clock / chips;
		t.fixed = ((double)cyc->dur - busy) / clock + rt_attr_float(&in->attrs, "comm_s", 0);
	}
	t.link = rt_attr_float(&in->attrs, "comm_s", 0);
	/* a projection that shrinks (K > N) is the row-split one: its partial sums are all-reduced */
	if (chips > 1 && c2c && (in->op == RT_OP_MatMul || in->op == RT_OP_GroupedMatMul) && in->in[0] >= 0) {
		const PlanBuffer *a = &p->buffers[in->in[0]], *y = &p->buffers[in->out[0]];
		double ar = ceil(log2((double)chips)) * ((num_has(&c2c->latency) ? c2c->latency.v : 0) + out / link_oneway_bw(c2c));
		if (a->rank >= 1 && y->rank >= 1 && a->dims[a->rank - 1] > y->dims[y->rank - 1])
			t.fixed += ar, t.link += ar;
	}
	return t;
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

/* Node pricing for passes (Target.node_time; disaggregate's pool sizes and micro-batches): the
 * GPU pool by the roofline of targets/lower.c, the LPU pool by the LPU's (targets/lpu/cost.c). */
double vr_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	return d->kind == DEV_LPU ? lpu_node_time(t, m, d, p, w) : tgt_roofline_time(t, m, d, p, w);
}
