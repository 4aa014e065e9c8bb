/* targets/gpu/cost.c: the cost hook of the GPU targets (hopper, blackwell).  Kernels carry their
 * resource times (t.mma_us, t.smem_us, t.hbm_us, t.l2_us, t.sfu_us, t.fma_us, t.overlap,
 * t.fixed_us) from the GPU model (targets/gpu/model.c, backends.md §0-§1b); the hook recombines
 * them (gpu_cost_total), so the timing engine prices plans without the machine file. */
#include "targets/gpu/gpu.h"

#include <math.h>

double gpu_cost(const Plan *p, int stream, const PlanInstr *in)
{
	if (in->kind != PI_KERNEL || plan_instr_num(in, "fixed_us", -1) < 0)
		return rt_cost_roofline(p, stream, in);
	GpuCost c = { .mma = plan_instr_num(in, "mma_us", 0), .smem = plan_instr_num(in, "smem_us", 0),
		      .hbm = plan_instr_num(in, "hbm_us", 0), .l2 = plan_instr_num(in, "l2_us", 0),
		      .sfu = plan_instr_num(in, "sfu_us", 0), .fma = plan_instr_num(in, "fma_us", 0),
		      .overlap = plan_instr_num(in, "overlap", 1), .fixed = plan_instr_num(in, "fixed_us", 0) };
	double t = gpu_cost_total(&c) * 1e-6;
	return t >= 0 && isfinite(t) ? t : 0;
}
