/* targets/blackwell/tile.c: Blackwell (sm_100a) tiling decisions.
 *
 * GEMM: tcgen05.mma shapes from the machine's tcgen05.1cta and tcgen05.2cta tables (block-scaled
 * kinds only at M = 128 per CTA and N in {64, 128, 192, 256}: backends.md §1a); accumulators in
 * TMEM, two stages when 2 x BN columns fit the 512 (so the epilogue hides behind the next
 * tile); the best 1-CTA and the best 2-CTA (cta_group::2) tiles are priced and 2-CTA is taken
 * only when it is faster, which happens when the 1-CTA tile is bound by SMEM bandwidth (2-CTA
 * halves each SM's B traffic, hardware.md §3.4); the reason is recorded.  Block-scaled formats
 * move their scale tiles with the operands (gpu_elem_bytes) and into TMEM.
 * Attention: FlashAttention-4 (arXiv 2603.05451): two 128-row Q tiles per CTA ping-ponged
 * against one MMA warp, K/V blocks of 128; the fraction of exponentials computed by the degree-3
 * polynomial on the FMA pipe is where the SFU stops being the bottleneck (gpu_exp2_split), from
 * the machine's SFU and FMA rates. */
#include "targets/gpu/gpu.h"

#include <math.h>
#include <stdio.h>

#define EXP2_DEGREE 3   /* FA4's default polynomial (numerics.md §9) */

int bw_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n)
{
	GemmTile one = { .t = INFINITY }, two = { .t = INFINITY };
	int h1 = gpu_search(a, s, "tcgen05.1cta", 0, &one), h2 = gpu_search(a, s, "tcgen05.2cta", 1, &two);
	GemmTile v;
	if (gpu_gemv(a, s, &v) && v.t < one.t && v.t < two.t) {
		*t = v;
		snprintf(why, n, "GEMV on the CUDA cores: %lld rows, %s-bound, %.3g us (the best tcgen05 tile: %.3g us)",
			 (long long)s->M, gpu_bound(&v), v.t * 1e6, fmin(one.t, two.t) * 1e6);
		return 1;
	}
	if (!h1 && !h2)
		return 0;
	if (h2 && (!h1 || two.t < one.t)) {
		*t = two;
		if (h1)
			snprintf(why, n, "2-CTA: %.3g us vs 1-CTA %.3g us; the 1-CTA tile %dx%d is %s-bound (SMEM %.3g us, MMA %.3g us) "
				 "and the pair halves each SM's B traffic", two.t * 1e6, one.t * 1e6, one.bm, one.bn, gpu_bound(&one),
				 one.c.smem * 1e6, one.c.mma * 1e6);
		else
			snprintf(why, n, "2-CTA: the only legal shape for %s", rt_dtype_name(s->in));
	} else {
		*t = one;
		if (h2)
			snprintf(why, n, "1-CTA: 2-CTA %.3g us is not faster than %.3g us (%s-bound; SMEM %.3g us under MMA %.3g us)",
				 two.t * 1e6, one.t * 1e6, gpu_bound(&one), one.c.smem * 1e6, one.c.mma * 1e6);
		else
			snprintf(why, n, "1-CTA: no 2-CTA shape for %s", rt_dtype_name(s->in));
	}
	gpu_cluster(a, s, t);
	return 1;
}

void bw_attn(const GpuArch *a, const AttnShape *s, AttnTile *t)
{
	t->bm = 256;
	t->bn = 128;
	t->emu = gpu_exp2_split(a, s, EXP2_DEGREE);
	t->poly = t->emu > 0 ? EXP2_DEGREE : 0;
	gpu_attn_eval(a, s, t);
}
