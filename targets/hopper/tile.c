/* targets/hopper/tile.c: Hopper (sm_90a) tiling decisions.
 *
 * GEMM: wgmma instructions m64nNk16 (16-bit) or m64nNk32 (FP8) from the machine's <mma
 * family="wgmma"> table; CTA tiles of 1, 2 or 4 instruction rows (one or two consumer
 * warpgroups, hardware.md §3.1) by every legal N; BK one 128-byte swizzled row; as many SMEM
 * stages as fit beside the epilogue tile; the fastest under gpu_gemm_eval (wave and tile
 * quantization exact) wins.  Accumulators live in registers, so the epilogue is exposed once per
 * wave.  FP8 adds the DeepSeek-V3 promotion work on the CUDA cores (hardware.md §3.3).
 * Attention: FlashAttention-3 (arXiv 2407.08608): one 128-row Q tile per consumer warpgroup
 * pair, K/V blocks of 128 rows (80 at head dim 256, 192-row Q tiles at head dim 64, as the FA3
 * kernels' tile table), ping-pong overlap from the machine's attention-overlap efficiency; no
 * software exp2 on Hopper (its SFU keeps up: hardware.md §3.4). */
#include "targets/gpu/gpu.h"

#include <math.h>
#include <stdio.h>

int hop_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n)
{
	t->t = INFINITY;
	GemmTile v;
	int mma = gpu_search(a, s, "wgmma", 0, t);
	if (gpu_gemv(a, s, &v) && (!mma || v.t < t->t)) {
		double tm = mma ? t->t : INFINITY;
		*t = v;
		snprintf(why, n, "GEMV on the CUDA cores: %lld rows, %s-bound, %.3g us (the best wgmma tile, padded to 64 rows: "
			 "%.3g us)", (long long)s->M, gpu_bound(&v), v.t * 1e6, tm * 1e6);
		return 1;
	}
	if (!mma)
		return 0;
	gpu_cluster(a, s, t);
	snprintf(why, n, "fastest of the legal wgmma tiles: %s-bound, %d stages in %.0f KiB SMEM, epilogue exposed per wave "
		 "(register accumulators)", gpu_bound(t), t->stages, t->smem_bytes / 1024);
	return 1;
}

void hop_attn(const GpuArch *a, const AttnShape *s, AttnTile *t)
{
	t->bm = s->d <= 64 ? 192 : 128;
	t->bn = s->d <= 128 ? 128 : 80;
	t->emu = 0;
	t->poly = 0;
	gpu_attn_eval(a, s, t);
}
