/* targets/gpu/tile.c: the tile search both GPU targets share: legal MMA shapes from the machine
 * description's <mma> tables, CTA tiles built from them, each priced by gpu_gemm_eval, the
 * fastest kept; cluster shape and the one-line reason recorded with the choice. */
#include "targets/gpu/gpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The shape row of family f for format dt (NULL: the family has no instruction for dt). */
const MmaShape *gpu_mma_row(const MmaFamily *f, DType dt)
{
	for (int i = 0; f && i < f->nshapes; i++)
		if (f->shapes[i].dtypes & (1ull << dt))
			return &f->shapes[i];
	return NULL;
}

/* BK: one 128-byte swizzled row of K per stage (GPU_SWIZZLE_BYTES). */
int gpu_bk(DType dt)
{
	int bits = rt_dtypes[dt].bits;
	return GPU_SWIZZLE_BYTES * 8 / (bits > 0 ? bits : 8);
}

/* Searches the tiles of family `name`, one or two CTAs per tile; best->t is the time of the best
 * so far (start at INFINITY).  Candidates: instruction M from the row's list (on Hopper also two
 * and four instruction rows per CTA), and every legal instruction N that is a multiple of 16
 * (DeepGEMM's block_n range on Hopper, CUTLASS's N step at M = 128 on Blackwell), each with
 * the K splits 1..64 that still leave SMs without an output tile. */
int gpu_search(const GpuArch *a, const GemmShape *s, const char *name, int cta2, GemmTile *best)
{
	static const int splits[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64 };
	const MmaFamily *f = dev_mma(a->dev, name);
	const MmaShape *r = gpu_mma_row(f, s->in);
	int found = 0;
	if (!r)
		return 0;
	int64_t units = (int64_t)(a->sms / (cta2 ? 2 : 1));
	for (int mi = r->nm - 1; mi >= 0; mi--) {
		int ms[3] = { r->m[mi], r->m[mi] * 2, r->m[mi] * 4 }, nms = cta2 || a->tmem > 0 ? 1 : 3;
		for (int j = nms - 1; j >= 0; j--)
			for (int n = r->nmax; n >= r->nmin; n -= r->nstep ? r->nstep : 8) {
				if (n % 16)
					continue;
				/* K splits only while the output tiles leave SMs idle (split-K and
				 * stream-K exist for small-M GEMMs: a decode GEMV's few tiles) */
				int64_t out = s->batch * ((s->M + ms[j] - 1) / ms[j]) * ((s->N + n - 1) / n);
				for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
					if (k > 0 && (s->nosplit || out * splits[k - 1] >= units))
						break;
					GemmTile t = { .family = f->name, .im = r->m[mi], .in = n, .ik = r->k, .bm = ms[j], .bn = n,
						       .bk = gpu_bk(s->in), .cta2 = cta2, .split = splits[k] };
					if (gpu_gemm_eval(a, s, &t) && t.t < best->t) {
						*best = t;
						found = 1;
					}
				}
			}
	}
	return found;
}

/* GEMV (backends.md §1b "GEMV / small-M GEMM"): for a few rows (M <= GPU_GEMV_ROWS per matrix)
 * serving stacks run a CUDA-core kernel (TensorRT-LLM's and vLLM's GEMV / fpA_intB kernels) in
 * which every SM streams its share of the weight from HBM straight into registers, each thread
 * block a group of output columns, so all SMs read once N >= 8 columns per SM; no SMEM tile, no
 * 64-row MMA padding.  Time: the weight (and A, read by every SM through L2) at HBM bandwidth in
 * proportion to the SMs busy, one FMA per multiply-add on the FMA pipe (plus one per weight
 * element to convert a narrow weight), fixed: A's load at the SM's share of HBM. */
int gpu_gemv(const GpuArch *a, const GemmShape *s, GemmTile *t)
{
	if (s->M > GPU_GEMV_ROWS || s->M < 1)
		return 0;
	double sa = gpu_elem_bytes(s->in), sbw = s->b_bytes > 0 ? s->b_bytes : sa;
	if (s->scale == PREC_SCALE_1X128 || s->scale == PREC_SCALE_128X128)
		sa += 4.0 / 128, sbw += s->scale == PREC_SCALE_128X128 ? 4.0 / (128 * 128) : 4.0 / 128;
	double mats = (double)s->batch, A = (double)s->M * s->K * sa, B = (double)s->N * s->K * sbw;
	double busy = fmin(1.0, mats * (double)s->N / (8.0 * a->sms));
	double narrow = rt_dtypes[s->in].bits < 16 ? 1 : 0;
	*t = (GemmTile){ .family = "gemv", .im = 1, .in = 8, .ik = 1, .bm = (int)s->M, .bn = 8, .bk = 128, .split = 1,
			 .stages = 2, .acc_stages = 1, .cm = 1, .cn = 1 };
	t->tiles = (int64_t)mats * ((s->N + 7) / 8);
	t->units = (int64_t)a->sms;
	t->waves = (t->tiles + t->units - 1) / t->units;
	t->l2_foot = A + B;
	t->reload_a = t->reload_b = 1;
	t->c = (GpuCost){ .hbm = mats * (A + B + (double)s->M * s->N * s->out_bytes) / (a->hbm_bw * busy),
			  .fma = mats * (double)s->N * s->K * (s->M + narrow) / (a->fma * a->sms * busy), .overlap = 1 };
	t->c.fixed = t->c.fill = A / (a->hbm_bw / a->sms);
	t->t = gpu_cost_total(&t->c);
	return 1;
}

/* Cluster and multicast (backends.md §1a): CTAs of a (cM x cN) cluster that share an N block
 * share B; pair along M when there are M blocks to pair (2-CTA tiles always pair), else along N. */
void gpu_cluster(const GpuArch *a, const GemmShape *s, GemmTile *t)
{
	int64_t mb = (s->M + t->bm - 1) / t->bm, nb = (s->N + t->bn - 1) / t->bn;
	t->cm = t->cn = 1;
	if (t->cta2)
		t->cm = 2;
	else if (a->cluster_max >= 2 && mb >= 2)
		t->cm = 2;
	else if (a->cluster_max >= 2 && nb >= 2)
		t->cn = 2;
}

/* Which resource bounds tile t: "mma", "smem", "hbm", "promotion". */
const char *gpu_bound(const GemmTile *t)
{
	const GpuCost *c = &t->c;
	double m = c->mma;
	const char *b = "mma";
	if (c->smem > m)
		m = c->smem, b = "smem";
	if (c->hbm > m)
		m = c->hbm, b = "hbm";
	if (c->fma > m)
		b = "promotion";
	return b;
}
