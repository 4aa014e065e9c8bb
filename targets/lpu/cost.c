/* targets/lpu/cost.c: the LPU target's cost hook.  The LPU is deterministic (hardware.md §3.6:
 * fixed latencies, no arbitration), so an instruction's time is its scheduled occupancy, dur
 * cycles at the device clock; with every instruction also starting at cycle / clock, the
 * predicted latency is exactly the schedule length.  Instructions without a schedule (a plan
 * edited by hand) fall back to the generic roofline. */
#include "targets/lpu/lpu.h"

#include <math.h>

double lpu_cost(const Plan *p, int stream, const PlanInstr *in)
{
	double clock = p->devices[p->streams[stream].device].clock_hz;
	if (in->cycle >= 0 && in->dur > 0 && clock > 0)
		return (double)in->dur / clock;
	return rt_cost_roofline(p, stream, in);
}

/* Node pricing for passes (Target.node_time): the LPU streams operands from SRAM through one
 * slice group (docs/targets-lpu.md §Cost), so work takes max(bytes / (chips x SRAM bandwidth x
 * its efficiency), FLOP / (chips x the matrix peak at the matmul format: fp8 where the chip has
 * it, else f16)) plus the MXM pipeline latency per kernel, plus the C2C all-reduce of w->reduce
 * (recursive doubling); a transfer: the link's alpha + bytes / one-way bandwidth.  One IR node
 * (partition's pipeline stages): the roofline of targets/lower.c over SRAM, matrix products at
 * the matmul format. */
double lpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	if (w->to || d->kind != DEV_LPU)
		return tgt_roofline_time(t, m, d, p, w);
	DType mma = num_has(&d->peak[DT_F8E4M3]) ? DT_F8E4M3 : DT_F16;
	if (w->node) {   /* matrix products run at the matmul format, the rest as the node's dtype */
		TgtWork n = *w;
		if (ir_ops[w->node->op].cls == OC_matrix)
			n.fmt = mma;
		return tgt_roofline_time(t, m, d, p, &n);
	}
	double fl = w->flops, by = w->bytes, chips = w->chips > 1 ? w->chips : 1;
	const MemSpace *s = dev_mem_kind(d, MEM_SRAM);
	double bw = s && num_has(&s->bandwidth) ? s->bandwidth.v * (num_has(&s->efficiency) ? s->efficiency.v : 1) : 0;
	double peak = dev_peak(d, mma);
	const Unit *mxm = d->nunits ? &d->units[0] : NULL;
	double time = fmax(bw > 0 ? by / (chips * bw) : 0, peak > 0 ? fl / (chips * peak) : 0);
	time += (mxm && num_has(&mxm->latency) ? mxm->latency.v : 0) * w->kernels;
	if (w->reduce > 0 && chips > 1) {
		TgtWork r = { .chips = w->chips, .reduce = w->reduce, .fmt = DT_INVALID };
		time += tgt_roofline_time(t, m, d, p, &r);
	}
	return time;
}
