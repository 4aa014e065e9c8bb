/* targets/blackwell/target.c: the blackwell target (B200/GB200/B300, sm_100a): the GPU family's
 * lowering hooks and cost (targets/gpu/) with Blackwell's tiling (targets/blackwell/tile.c:
 * tcgen05 1-CTA and 2-CTA MMA with TMEM accumulators, block-scaled MXFP8/MXFP6/MXFP4/NVFP4, FA4
 * attention with the software exp2).  FP8 accumulates in f32 (no promotion). */
#include "passes/pass.h"
#include "targets/gpu/gpu.h"

int bw_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void bw_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

static const GpuHooks blackwell = { "tcgen05.1cta", bw_gemm, bw_attn, NULL };

const Target tgt_blackwell = {
	.name = "blackwell",
	.help = "NVIDIA Blackwell sm_100a: tcgen05 1-/2-CTA MMA in TMEM, block-scaled MX/NVFP4, FA4 attention with software exp2",
	.default_machine = "b200",
	.pipeline = PASS_DEVICES_PIPELINE,
	.family = &blackwell,
	GPU_TARGET_FIELDS,
	GPU_TARGET_COST,
};
