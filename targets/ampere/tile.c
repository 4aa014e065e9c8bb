/* targets/ampere/tile.c: Ampere (sm_80, A100) tiling decisions.
 *
 * GEMM: no warpgroup MMA, no TMA, no thread-block clusters, no FP8 (hardware.md §2.1).  Each
 * warp issues mma.sync m16n8k16 (16-bit; m16n8k8 tf32, m16n8k32 int8) from registers that
 * ldmatrix fills from shared memory, which cp.async stages fill from global memory: CUTLASS's
 * sm80 multistage GEMMs, CTA tiles of 64, 128 or 256 rows by 64, 128 or 256 columns made of
 * 64x64 warp tiles, BK one 128-byte row, as many stages as fit beside the epilogue tile.  Each
 * candidate is priced by the family model (gpu_gemm_eval) with the warp tile as the row of
 * operand reuse: B is read from shared memory once per 64-row warp row (A once per stage), and
 * register accumulators leave the epilogue exposed once per wave.  The fastest wins; a GEMV on
 * the CUDA cores when it is faster (GPU_GEMV_ROWS).
 * Attention: FlashAttention-2 (arXiv 2307.08691): 128-row Q tiles (64 at head dim 256), K/V blocks
 * of 64, no ping-pong overlap (the machine gives no attention-overlap: softmax and MMA of a warp
 * serialise), exponentials on the SFU. */
#include "targets/gpu/gpu.h"

#include <math.h>
#include <stdio.h>

#define AMP_WARP_TILE 64   /* CUTLASS sm80 default warp shape 64x64 (x BK) */

int amp_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n)
{
	static const int tiles[] = { 64, 128, 256 };
	static const int splits[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64 };
	const MmaShape *r = gpu_mma_row(dev_mma(a->dev, "mma.sync"), s->in);
	GemmTile best = { .t = INFINITY }, v;
	for (size_t i = 0; r && i < sizeof tiles / sizeof tiles[0]; i++)
		for (size_t j = 0; j < sizeof tiles / sizeof tiles[0]; j++) {
			int bm = tiles[i], bn = tiles[j];
			int64_t out = s->batch * ((s->M + bm - 1) / bm) * ((s->N + bn - 1) / bn);
			for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
				if (k > 0 && (s->nosplit || out * splits[k - 1] >= (int64_t)a->sms))
					break;
				GemmTile c = { .family = "mma.sync", .im = AMP_WARP_TILE, .in = r->nmin, .ik = r->k, .bm = bm, .bn = bn,
					       .bk = gpu_bk(s->in), .split = splits[k] };
				if (gpu_gemm_eval(a, s, &c) && c.t < best.t)
					best = c;
			}
		}
	int mma = isfinite(best.t);
	if (gpu_gemv(a, s, &v) && (!mma || v.t < best.t)) {
		*t = v;
		snprintf(why, n, "GEMV on the CUDA cores: %lld rows, %s-bound, %.3g us (the best mma.sync tile: %.3g us)",
			 (long long)s->M, gpu_bound(&v), v.t * 1e6, best.t * 1e6);
		return 1;
	}
	if (!mma)
		return 0;
	*t = best;
	t->im = r->m[0];          /* the instruction, as recorded; the warp tile was the reuse row */
	gpu_cluster(a, s, t);
	snprintf(why, n, "fastest of the CUTLASS sm80 tiles: %s-bound, %d cp.async stages in %.0f KiB SMEM, %dx%d warps of "
		 "%dx%d, epilogue exposed per wave (register accumulators)", gpu_bound(t), t->stages, t->smem_bytes / 1024,
		 t->bm / AMP_WARP_TILE > 0 ? t->bm / AMP_WARP_TILE : 1, t->bn / AMP_WARP_TILE > 0 ? t->bn / AMP_WARP_TILE : 1,
		 AMP_WARP_TILE, AMP_WARP_TILE);
	return 1;
}

void amp_attn(const GpuArch *a, const AttnShape *s, AttnTile *t)
{
	t->bm = s->d <= 128 ? 128 : 64;
	t->bn = 64;
	t->emu = 0;
	t->poly = 0;
	gpu_attn_eval(a, s, t);
}
