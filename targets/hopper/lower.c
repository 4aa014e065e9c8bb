/* targets/hopper/lower.c: the hopper target (H100/H200, sm_90a): the shared GPU lowering walk
 * (targets/gpu/lower.c) with Hopper's tiling hooks (targets/hopper/tile.c) and FP8 GEMMs that
 * promote their limited-precision tensor-core sums every 128 K elements (numerics.md §7). */
#include "targets/gpu/gpu.h"

int hop_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void hop_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

static const GpuHooks hopper = { "hopper", hop_gemm, hop_attn, NULL, NULL };

Plan *hop_lower(const TgtInput *in, RtError *e)
{
	return gpu_lower(in, &hopper, e);
}
