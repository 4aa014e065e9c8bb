/* targets/hopper/target.c: the hopper target's data and hooks (targets/target.h). */
#include "passes/pass.h"
#include "targets/gpu/gpu.h"

Plan *hop_lower(const TgtInput *in, RtError *e);

const Target tgt_hopper = {
	.name = "hopper",
	.help = "NVIDIA Hopper sm_90a: wgmma tiles, TMA clusters, FP8 with DeepSeek promotion, FA3 attention",
	.default_machine = "h100-sxm",
	.kind = DEV_GPU,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "bf16 f16 fp8 mxfp8 mxfp6 mxfp4 nvfp4 int8 w4a16 auto +graph +nopromote +tensor +1x128 +128x128 +nosplitk",
	.default_precision = "bf16",
	.matrix_peak = 1,
	.lower = hop_lower,
	.cost = gpu_cost,
};
