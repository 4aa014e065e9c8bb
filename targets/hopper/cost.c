/* targets/hopper/cost.c: the hopper target's cost hook.  Kernels carry their resource times
 * (t.mma_us, t.smem_us, t.hbm_us, t.sfu_us, t.fma_us, t.overlap, t.fixed_us) from the GPU model
 * (targets/gpu/model.c, backends.md §0-§1b); the hook recombines them (gpu_cost). */
#include "targets/gpu/gpu.h"

double hop_cost(const Plan *p, int stream, const PlanInstr *in)
{
	return gpu_cost(p, stream, in);
}
