/* targets/blackwell/lower.c: the blackwell target (B200/GB200/B300, sm_100a): the shared GPU
 * lowering walk (targets/gpu/lower.c) with Blackwell's tiling hooks (targets/blackwell/tile.c):
 * tcgen05 1-CTA and 2-CTA MMA with TMEM accumulators, block-scaled MXFP8/MXFP6/MXFP4/NVFP4, and
 * FA4 attention with the software exp2.  FP8 accumulates in f32 (no promotion needed). */
#include "targets/gpu/gpu.h"

int bw_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void bw_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

static const GpuHooks blackwell = { "blackwell", bw_gemm, bw_attn, NULL, NULL };

Plan *bw_lower(const TgtInput *in, RtError *e)
{
	return gpu_lower(in, &blackwell, e);
}
