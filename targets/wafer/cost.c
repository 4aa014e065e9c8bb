/* targets/wafer/cost.c: the cost hook of the spatial targets (wafer, hardwired): a kernel's
 * t.time_us as lowering priced it on its region (targets/wafer/lower.c); copies between wafers
 * and anything without it the generic roofline of the plan's link and space lines. */
#include "targets/wafer/wafer.h"

double wafer_cost(const Plan *p, int stream, const PlanInstr *in)
{
	double t = in->kind == PI_KERNEL ? plan_instr_num(in, "time_us", -1) : -1;
	return t >= 0 ? t * 1e-6 : rt_cost_roofline(p, stream, in);
}
