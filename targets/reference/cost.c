/* targets/reference/cost.c: the reference target's cost hook.  The reference machine is a plain
 * CPU socket with one compute unit and one memory level, so an instruction costs the generic
 * roofline of backends.md §0 with achievable fractions of 1: the device's fixed per-kernel
 * overhead plus max(FLOP / peak, bytes / DRAM bandwidth), peaks and bandwidth taken from the
 * plan's device and space lines (which come from the machine description). */
#include "targets/target.h"

double ref_cost(const Plan *p, int stream, const PlanInstr *in)
{
	return rt_cost_roofline(p, stream, in);
}
