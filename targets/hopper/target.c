/* targets/hopper/target.c: the hopper target (H100/H200, sm_90a): the GPU family's lowering hooks
 * and cost (targets/gpu/) with Hopper's tiling (targets/hopper/tile.c: wgmma tiles, TMA
 * clusters, FA3 attention); FP8 GEMMs promote their limited-precision tensor-core sums every
 * N_C = 128 K elements, the machine's <fp8-scaling promote> (numerics.md §7). */
#include "passes/pass.h"
#include "targets/gpu/gpu.h"

int hop_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void hop_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

static const GpuHooks hopper = { "wgmma", hop_gemm, hop_attn, NULL };

const Target tgt_hopper = {
	.name = "hopper",
	.help = "NVIDIA Hopper sm_90a: wgmma tiles, TMA clusters, FP8 with DeepSeek promotion, FA3 attention",
	.default_machine = "h100-sxm",
	.pipeline = PASS_DEVICES_PIPELINE,
	.family = &hopper,
	GPU_TARGET_FIELDS,
	GPU_TARGET_COST,
};
