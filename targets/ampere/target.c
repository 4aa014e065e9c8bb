/* targets/ampere/target.c: the ampere target (A100, sm_80): the GPU family's lowering hooks and
 * cost (targets/gpu/) with Ampere's tiling (targets/ampere/tile.c: mma.sync from registers,
 * cp.async stages, FA2 attention).  No FP8: the machine lists no FP8 format, so --precision fp8
 * is refused and a node placed at fp8 (@precision, the quantization pass) runs at bf16 with a
 * remark. */
#include "passes/pass.h"
#include "targets/gpu/gpu.h"

int amp_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void amp_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

static const GpuHooks ampere = { "mma.sync", amp_gemm, amp_attn, NULL };

const Target tgt_ampere = {
	.name = "ampere",
	.help = "NVIDIA Ampere sm_80 (A100): mma.sync tiles, cp.async stages, FA2 attention; no FP8, no TMA",
	.default_machine = "a100-sxm",
	.pipeline = PASS_DEVICES_PIPELINE,   /* dgx-a100: partition when the model needs several GPUs */
	.family = &ampere,
	GPU_TARGET_FIELDS,
	GPU_TARGET_COST,
};
