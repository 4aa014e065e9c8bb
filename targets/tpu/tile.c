/* targets/tpu/tile.c: how one matrix product maps onto the MXUs of a TPU chip.
 *
 * Weight-stationary dataflow (hardware.md §3.5, backends.md §2a, SCALE-Sim's WS mapping): the
 * right-hand operand B[K, N] is cut into R x C tiles latched in the array (rows hold K, columns
 * hold N), the left-hand operand A[M, K] streams through it in (8,128)-layout rows.  Padding is
 * exact: K pads to R and N to C (128, or 256 on chips with 256x256 MXUs: scaling-tpus, "matrix
 * dims should be multiples of 256 on v6e"), M pads to the sublane tile of the operand format
 * (8 rows of 32 bits, 16 of bf16, 32 of int8/fp8: backends.md §2a layout strings); the padded
 * MACs are reported as wasted work.  Folds (one latched weight tile each, SCALE-Sim's
 * ceil(Sr/R) x ceil(Sc/C)) are spread over every MXU of the chip; when there are fewer folds
 * than MXUs the streamed rows are split across MXUs instead.
 *
 * MXU time, per MXU (backends.md §2b "TPU-level model", T(M) = T0 + M / rows-per-cycle with
 * overlapped weight pushes):
 *     cycles = T0 + items_per_mxu x max(T / rate, R)
 * T0 the machine's measured fixed MXU latency (fill and drain, ~180 cycles on v4), T the rows
 * streamed per fold at one row per cycle (one 8x128 vreg per 8 cycles: scaling-tpus), `rate`
 * the format's speed-up over bf16 (peak[fmt] / peak[bf16]), and R cycles to push the next R x C
 * weight tile, which overlaps the current fold's stream (double-buffered weights, tpuv1) and is
 * exposed only when the fold streams fewer than R rows: small batches waste the array.
 * SCALE-Sim v2's conservative closed form, folds x (2R + C + T - 2) - 1 (backends.md §2b), is
 * recorded beside it as a cross-check.
 *
 * VMEM blocks (Pallas BlockSpec grid, backends.md §2a): bm x bk of A, bk x bn of B, bm x bn of Y,
 * each double-buffered against the HBM->VMEM DMA, plus an f32 accumulator; the block that fits
 * VMEM and minimises fixed + max(MXU, VMEM, HBM) wins: A is read from HBM once per column block,
 * B once per row block (their tiled-layout sizes), Y written once; only the first block's load
 * and the last block's store are exposed (double buffering hides the rest).  Every grid step
 * (one block iteration) adds the machine's per-step time to the TensorCore's (the scalar unit's
 * latency: DMA issue and semaphore waits, issued from the same VLIW stream as the MXU pushes, so
 * serial with them, while the DMA engines keep streaming; a chip's TensorCores each issue their
 * share of the steps): core = MXU + steps x step / TensorCores, and the
 * time is fixed + max(core, VMEM, HBM).  Small blocks pay for their many steps: the JAX Pallas
 * guide's 128x128x128-block matmul on v5e runs at 0.35 us per step (6 % of peak; each step's DMA
 * takes 0.08 us), and its 512x1024x1024 blocks at 8192^3 lose about 0.4 us per step against the
 * MXU time (docs/machines.md); an HBM-bound product (decode) hides its steps under the HBM. */
#include "targets/tpu/tpu.h"

#include <math.h>

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t rup(int64_t a, int64_t b) { return cdiv(a, b) * b; }

int tpu_sublanes(int bits)
{
	int s = TPU_SUBLANES * 32 / (bits > 0 && bits < 32 ? bits : 32);
	return s < TPU_SUBLANES ? TPU_SUBLANES : s;
}

double tpu_padded_numel(int rank, const int64_t *dims, int bits)
{
	double n = 1;
	for (int i = 0; i < rank; i++) {
		int64_t d = dims[i];
		if (i == rank - 1)
			d = rup(d, TPU_LANES);
		else if (i == rank - 2)
			d = rup(d, tpu_sublanes(bits));
		n *= (double)d;
	}
	return n;
}

/* HBM traffic and exposed DMA of blocks (bm, bn, bk) for s; 0 if the blocks do not fit VMEM. */
static int try_blocks(const TpuArch *a, const MxuShape *s, MxuPlan *p, int64_t bm, int64_t bn, int64_t bk)
{
	double ab = s->in_bytes, bb = s->w_bytes, ob = s->out_bytes;
	double foot = 2 * ((double)bm * bk * ab + (double)bk * bn * bb) + (double)bm * bn * 4 + 2 * (double)bm * bn * ob;
	if (foot > a->vmem_cap)
		return 0;
	int abits = (int)(ab * 8), bbits = (int)(bb * 8), obits = (int)(ob * 8);
	/* Tiled-layout sizes in HBM: A [M, K], B [K, N], Y [M, N] each padded to (sublanes, 128). */
	double A = (double)rup(s->M, tpu_sublanes(abits)) * rup(s->K, TPU_LANES) * ab;
	double B = (double)rup(s->K, tpu_sublanes(bbits)) * rup(s->N, TPU_LANES) * bb;
	double Y = (double)rup(s->M, tpu_sublanes(obits)) * rup(s->N, TPU_LANES) * ob;
	double bytes = (double)s->batch * (A * cdiv(p->Np, bn) + B * cdiv(p->Mp, bm) + Y);
	double hbm = bytes / a->hbm_bw;
	int64_t steps = s->batch * cdiv(p->Mp, bm) * cdiv(p->Np, bn) * cdiv(p->Kp, bk);
	double fixed = a->fixed + a->dma_latency + ((double)bm * bk * ab + (double)bk * bn * bb + (double)bm * bn * ob) / a->hbm_bw
		       + a->t0;
	double core = p->mxu + (double)steps * a->step / a->ncores;   /* each TensorCore issues its share */
	double t = fixed + fmax(fmax(core, p->vmem), hbm);
	if (t < p->t || (t == p->t && foot > p->vmem_bytes)) {
		p->t = t, p->hbm = hbm, p->fixed = fixed, p->vmem_bytes = foot, p->core = core;
		p->bm = bm, p->bn = bn, p->bk = bk, p->steps = steps;
	}
	return 1;
}

int tpu_mxu_plan(const TpuArch *a, const MxuShape *s, MxuPlan *p)
{
	*p = (MxuPlan){ .t = INFINITY };
	int bits = rt_dtypes[s->in].bits;
	p->sub = tpu_sublanes(bits);
	p->Mp = rup(s->M, p->sub), p->Np = rup(s->N, a->C), p->Kp = rup(s->K, a->R);
	p->pad_waste = 1 - (double)s->M * s->N * s->K / ((double)p->Mp * p->Np * p->Kp);
	p->kfold = p->Kp / a->R, p->nfold = p->Np / a->C;
	p->folds = s->batch * p->kfold * p->nfold;
	/* Fewer folds than MXUs: split the streamed rows (in whole sublane tiles) across MXUs. */
	p->mchunks = 1;
	if (p->folds < a->nmxu) {
		int64_t want = cdiv(a->nmxu, p->folds), most = p->Mp / p->sub;
		p->mchunks = want < most ? want : most;
	}
	p->T = rup(cdiv(p->Mp, p->mchunks), p->sub);
	p->items = p->folds * p->mchunks;
	p->per_mxu = cdiv(p->items, a->nmxu);
	double pb = a->dev->peak[DT_BF16].v, pf = a->dev->peak[s->in].v;
	p->rate = pb > 0 && pf > 0 ? pf / pb : 1;
	double t0c = a->t0 * a->clock;
	p->cycles = t0c + (double)p->per_mxu * fmax((double)p->T / p->rate, a->R);
	p->scalesim_cycles = (double)p->per_mxu * (2.0 * a->R + a->C + (double)p->T / p->rate - 2) - 1;
	/* T0 is charged with the fixed terms; the streaming cycles run at the sustained fraction of
	 * the peak a large product reaches (device efficiency `gemm`, docs/machines.md) */
	p->mxu = (p->cycles - t0c) / a->clock / (a->gemm_eff > 0 ? a->gemm_eff : 1);
	/* VMEM traffic: A streamed once per column fold, B latched once, the f32 accumulator read
	 * and written once per output (partial sums stay in the result buffer across row folds). */
	p->vmem = (double)s->batch * (s->in_bytes * p->Mp * p->Kp * p->nfold + s->w_bytes * p->Kp * p->Np + 8.0 * p->Mp * p->Np)
		  / a->vmem_bw;
	int found = 0;
	for (int64_t bm = p->sub; ; bm = bm * 2 < p->Mp ? bm * 2 : p->Mp) {
		for (int64_t bn = a->C; ; bn = bn * 2 < p->Np ? bn * 2 : p->Np) {
			for (int64_t bk = a->R; ; bk = bk * 2 < p->Kp ? bk * 2 : p->Kp) {
				found |= try_blocks(a, s, p, bm, bn, bk);
				if (bk == p->Kp)
					break;
			}
			if (bn == p->Np)
				break;
		}
		if (bm == p->Mp)
			break;
	}
	if (!found)
		return 0;
	double peak = (pf > 0 ? pf : pb);
	double busy = p->mxu + a->t0;
	p->util = busy > 0 ? 2.0 * s->batch * s->M * s->N * s->K / (busy * peak) : 0;
	return 1;
}
