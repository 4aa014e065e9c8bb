/* targets/lpu/cost.c: the LPU target's cost hook.  The LPU is deterministic (hardware.md §3.6:
 * fixed latencies, no arbitration), so an instruction's time is its scheduled occupancy, dur
 * cycles at the device clock; with every instruction also starting at cycle / clock, the
 * predicted latency is exactly the schedule length.  Instructions without a schedule (a plan
 * edited by hand) fall back to the generic roofline. */
#include "targets/lpu/lpu.h"

double lpu_cost(const Plan *p, int stream, const PlanInstr *in)
{
	double clock = p->devices[p->streams[stream].device].clock_hz;
	if (in->cycle >= 0 && in->dur > 0 && clock > 0)
		return (double)in->dur / clock;
	return rt_cost_roofline(p, stream, in);
}
