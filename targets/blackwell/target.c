/* targets/blackwell/target.c: the blackwell target's data and hooks (targets/target.h). */
#include "passes/pass.h"
#include "targets/gpu/gpu.h"

Plan *bw_lower(const TgtInput *in, RtError *e);

const Target tgt_blackwell = {
	.name = "blackwell",
	.help = "NVIDIA Blackwell sm_100a: tcgen05 1-/2-CTA MMA in TMEM, block-scaled MX/NVFP4, FA4 attention with software exp2",
	.default_machine = "b200",
	.kind = DEV_GPU,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "bf16 f16 fp8 mxfp8 mxfp6 mxfp4 nvfp4 int8 w4a16 auto +graph +nopromote +tensor +1x128 +128x128 +nosplitk",
	.default_precision = "bf16",
	.matrix_peak = 1,
	.lower = bw_lower,
	.cost = gpu_cost,
};
