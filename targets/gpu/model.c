/* targets/gpu/model.c: the GPU kernel timing model shared by the Hopper and Blackwell targets.
 *
 * Every kernel is priced as backends.md §0 prescribes: fixed latencies plus the busiest of its
 * resources (tensor cores, shared-memory bandwidth, HBM, the special-function unit, the FMA
 * pipe), with wave quantization ceil(tiles / SMs) and tile quantization (partial edge tiles cost
 * a full tile) kept exact.  GEMM follows backends.md §1b line by line; fused attention prices one
 * (Q tile x K/V block) step and schedules the tiles on the SMs longest-first; decode attention
 * is the memory-bound split-KV roofline of §1b.  HBM traffic counts the operand re-reads the L2
 * cannot absorb (gemm_l2, attn_kv_reload: backends.md §1b reload_A/reload_B, from the machine's
 * L2 capacity), and an L2 bandwidth, when the machine gives one, makes the L2-to-SMEM traffic a
 * resource.  Every rate and efficiency comes from GpuArch,
 * which gpu_arch() reads from the machine description; the only constants here are instruction
 * counts of the algorithms themselves, each derived where it is defined. */
#include "targets/gpu/gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Online-softmax work on the FMA pipe per score, besides the exponential (FA2/FA3/FA4 inner
 * loop): one FFMA for scale*s - max, one FMNMX for the running max, one FADD for the row sum
 * and one conversion of P to 16 bits. */
#define SOFTMAX_FMA_OPS 4.0
/* Extra FMA-pipe instructions of one software exp2 besides the Horner FMAs of its polynomial
 * (numerics.md §9): add.rm and two subtractions for the range reduction, and the exponent
 * insertion (an integer add that maps to IMAD on the FMA pipe). */
#define EXP2_REDUCE_OPS 4.0
/* Barrier bytes per pipeline stage: a full and an empty mbarrier of 8 bytes (backends.md §1a). */
#define STAGE_BARRIER_BYTES 16.0

double gpu_elem_bytes(DType dt)
{
	const DTypeInfo *t = &rt_dtypes[dt];
	double b = t->bits / 8.0;
	if (t->kind == K_BLOCK)
		b += rt_dtypes[t->scale].bits / 8.0 / t->block;
	return b;
}

static const Engine *engine(const Device *d, const char *name)
{
	for (int i = 0; i < d->nengines; i++)
		if (strcmp(d->engines[i].name, name) == 0)
			return &d->engines[i];
	return NULL;
}

int gpu_arch(const Device *d, GpuArch *a, RtError *e)
{
	memset(a, 0, sizeof *a);
	a->dev = d;
	a->sms = dev_units(d);
	a->clock = d->clock.v;
	const MemSpace *sm = dev_mem_kind(d, MEM_SMEM), *hbm = dev_mem_kind(d, MEM_HBM), *tm = dev_mem_kind(d, MEM_TMEM);
	const Engine *l = engine(d, "launch"), *g = engine(d, "graph"), *co = engine(d, "collective");
	const char *miss = !sm || !num_has(&sm->bandwidth) ? "smem.bandwidth" : !hbm || !num_has(&hbm->bandwidth) ? "hbm.bandwidth"
			   : !num_has(&d->sfu.rate) ? "sfu.rate" : !num_has(&d->vpeak[DT_F32]) ? "vpeak.f32"
			   : !l || !num_has(&l->latency) ? "launch.latency" : !num_has(&d->clock) ? "clock" : NULL;
	if (miss)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine device '%s' lacks %s, which the GPU cost model needs",
				 d->id, miss);
	a->smem_usable = num_has(&sm->usable) ? sm->usable.v : sm->capacity.v;
	a->smem_bw = sm->bandwidth.v;
	a->tmem = tm ? tm->capacity.v : 0;
	a->hbm_bw = hbm->bandwidth.v * (num_has(&hbm->efficiency) ? hbm->efficiency.v : 1);
	a->sfu = d->sfu.rate.v;
	a->fma = d->vpeak[DT_F32].v / 2 / a->sms;
	const MemSpace *l2 = dev_mem_kind(d, MEM_L2);
	a->l2 = l2 && num_has(&l2->capacity) ? l2->capacity.v : 0;
	a->l2_bw = l2 && num_has(&l2->bandwidth) ? l2->bandwidth.v : 0;
	a->launch = l->latency.v;
	a->graph_launch = g && num_has(&g->latency) ? g->latency.v : a->launch;
	a->coll_base = co && num_has(&co->latency) ? co->latency.v : 0;
	a->eff_gemm = dev_efficiency(d, "gemm", 1);
	for (int dt = 0; dt < DT_COUNT; dt++)
		a->eff_gemm_dt[dt] = dev_gemm_efficiency(d, (DType)dt);
	a->overlap_attn = dev_efficiency(d, "attention-overlap", 0);
	a->cluster_max = num_has(&d->cluster_portable) ? (int)d->cluster_portable.v : 1;
	return 0;
}

double gpu_eff_gemm(const GpuArch *a, DType dt)
{
	return a->eff_gemm_dt[dt];
}

double gpu_attn_tile_fixed(const GpuArch *a, DType dt)
{
	char name[48];
	snprintf(name, sizeof name, "attention-tile-%s", rt_dtype_name(dt));
	return dev_efficiency(a->dev, name, 0);
}

/* backends.md §0: T = T_fixed + max(resources); attention adds the part of the smaller of MMA
 * and softmax (max of SFU and FMA pipes) that ping-pong scheduling does not hide. */
double gpu_cost_total(const GpuCost *c)
{
	double soft = fmax(c->sfu, c->fma);
	double busy = fmax(fmax(c->mma, soft), fmax(fmax(c->smem, c->hbm), c->l2));
	return fmax(c->fixed + busy + (1 - c->overlap) * fmin(c->mma, soft), c->floor);
}

const char *gpu_cost_bound(const GpuCost *c, double *term)
{
	double soft = fmax(c->sfu, c->fma);
	struct { const char *name; double t; } r[] = {
		{ "mma", c->mma }, { "smem", c->smem }, { "hbm", c->hbm }, { "l2", c->l2 },
		{ c->sfu >= c->fma ? "sfu" : "fma", soft }, { "fixed", c->fixed },
	};
	size_t best = 0;
	for (size_t i = 1; i < sizeof r / sizeof r[0]; i++)
		if (r[i].t > r[best].t)
			best = i;
	double total = gpu_cost_total(c);
	if (c->floor > 0 && c->floor >= total && c->floor > r[best].t) {
		*term = c->floor;
		return "launch";
	}
	*term = r[best].t;
	return r[best].name;
}

void gpu_launch(const GpuArch *a, int graph, GpuCost *c)
{
	c->fixed += a->graph_launch;
	if (!graph)
		c->floor = a->launch;
}

void gpu_mem_cost(const GpuArch *a, double bytes, double flops, double trans, GpuCost *c)
{
	*c = (GpuCost){ .overlap = 1 };
	c->hbm = bytes / a->hbm_bw;
	c->fma = flops / 2 / (a->fma * a->sms);
	if (trans > 0)
		c->sfu = trans / (a->sfu * a->sms);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- GEMM (backends.md §1b) ---- */
/* L2 reuse of the operands across tiles: backends.md §1b's reload_A/reload_B, the number of
 * times an operand is fetched from HBM because L2 does not hold it across tiles.  Per batch
 * matrix, with A = M·K·s_A and B = N·K·s_B bytes, panels p_A = BM·K·s_A and p_B = BN·K·s_B, and
 * U = min(units, tiles) tiles in flight:
 *   A + B <= L2                      both read once (the model without L2);
 *   else, rasterised in groups of g tile rows walking N (CUTLASS's threadblock swizzle, Triton's
 *   GROUP_SIZE_M "L2 cache optimizations"): a wave touches r = min(g, mt) A panels and
 *   c = min(ceil(U/r), nt) B panels; when r·p_A + c·p_B <= L2 the group's A panels stay in L2
 *   while B streams past, so A is read once and B once per group: reload_B = ceil(mt/r)
 *   (1 when all of B fits beside the group's A panels); symmetrically walking M;
 *   the raster with the least HBM traffic over g in {1, 2, 4, 8, 16} (CUTLASS's swizzle sizes)
 *   is taken; if no wave's panels fit, the tiles in flight (about sqrt(U) rows by U/sqrt(U)
 *   columns) stream their panels in step along K and share each read, and every wave reads its
 *   panels again: waves·(r·p_A + c·p_B) bytes.
 * [E: LRU-ideal L2, no set conflicts; the L2 is the machine's capacity, hardware.md §2.] */
static double gemm_l2(const GpuArch *a, const GemmShape *s, GemmTile *t, double sa, double sbw)
{
	int64_t mt = cdiv(s->M, t->bm), nt = cdiv(s->N, t->bn), tiles = mt * nt, U = t->units < tiles ? t->units : tiles;
	double A = s->a_bytes > 0 ? s->a_bytes : (double)s->M * s->K * sa, B = (double)s->N * s->K * sbw;
	double pa = (double)t->bm * s->K * sa, pb = (double)t->bn * s->K * sbw;
	t->raster = 0, t->group = 0, t->reload_a = t->reload_b = 1, t->l2_foot = A + B;
	if (a->l2 <= 0 || A + B <= a->l2)
		return A + B;
	static const int gs[] = { 1, 2, 4, 8, 16 };
	double best = INFINITY;
	for (int dir = 0; dir < 2; dir++)          /* 0: groups of tile rows walk N; 1: columns walk M */
		for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
			int64_t lines = dir ? nt : mt, other = dir ? mt : nt;
			double pl = dir ? pb : pa, po = dir ? pa : pb, L = dir ? B : A, O = dir ? A : B;
			int64_t r = gs[i] < lines ? gs[i] : lines, c = cdiv(U, r) < other ? cdiv(U, r) : other;
			double foot = r * pl + c * po;
			if (foot > a->l2)
				continue;
			double ro = O + r * pl <= a->l2 ? 1 : (double)cdiv(lines, r);
			if (L + O * ro < best) {
				best = L + O * ro;
				t->raster = dir ? 'M' : 'N', t->group = (int)r, t->l2_foot = foot;
				t->reload_a = dir ? ro : 1, t->reload_b = dir ? 1 : ro;
			}
		}
	if (!isfinite(best)) {   /* no wave's panels fit: the tiles in flight stream their panels in
				   step along K and share each read, the next wave reads them again */
		int64_t r = (int64_t)ceil(sqrt((double)U)) < mt ? (int64_t)ceil(sqrt((double)U)) : mt;
		int64_t c = cdiv(U, r) < nt ? cdiv(U, r) : nt, waves = cdiv(tiles, U);
		t->raster = 'T', t->group = (int)r, t->l2_foot = r * pa + c * pb;
		t->reload_a = (double)waves * r * pa / A, t->reload_b = (double)waves * c * pb / B;
		best = (double)waves * t->l2_foot;
	}
	return best;
}

int gpu_gemm_eval(const GpuArch *a, const GemmShape *s, GemmTile *t)
{
	const Device *d = a->dev;
	double sb = gpu_elem_bytes(s->in), fsm = d->peak[s->in].v / a->sms * gpu_eff_gemm(a, s->in);
	int cta = t->cta2 ? 2 : 1;
	double bm = t->bm / cta, bn_load = (double)t->bn / cta, im = (double)t->im / cta;
	/* DeepSeek-style FP8 scales: f32 per 1x128 activation block and 128x128 weight block
	 * (hardware.md §3.3); they ride with the operands. */
	double sa = sb, sbw = sb;
	if (s->scale == PREC_SCALE_1X128 || s->scale == PREC_SCALE_128X128)
		sa += 4.0 / 128, sbw += s->scale == PREC_SCALE_128X128 ? 4.0 / (128 * 128) : 4.0 / 128;
	/* Split-K (CUTLASS's split-K/stream-K, cuBLAS's small-M kernels): `split` tiles share one
	 * output tile, each over K/split in whole k-steps; none may be empty. */
	int64_t split = t->split > 1 ? t->split : 1;
	int64_t kper = cdiv(cdiv(s->K, split), t->bk) * t->bk;
	if (split > 1 && kper * (split - 1) >= s->K)
		return 0;
	int64_t ksteps = kper / t->bk;
	/* SMEM: the stages, the epilogue's staging tile, the barriers (hardware.md §3.1). */
	double stage = (bm * sa + bn_load * sbw) * t->bk, epi = bm * t->bn * s->out_bytes;
	int fit = (int)((a->smem_usable - epi) / (stage + STAGE_BARRIER_BYTES));
	if (fit < 2)
		return 0;
	t->stages = (int)(ksteps < 2 ? 2 : ksteps < fit ? ksteps : fit);
	t->smem_bytes = t->stages * (stage + STAGE_BARRIER_BYTES) + epi;
	/* TMEM (Blackwell): an f32 accumulator of BN columns per stage, plus block-scale columns;
	 * 128 lanes x 4 bytes per column (hardware.md §3.4). */
	t->acc_stages = 1;
	if (a->tmem > 0) {
		double cols = a->tmem / (128 * 4), sc = 0;
		if (rt_dtypes[s->in].kind == K_BLOCK)
			sc = 2 * ceil((double)t->bk / rt_dtypes[s->in].block / 4);
		if (t->bn + sc > cols)
			return 0;
		t->acc_stages = 2 * t->bn + sc <= cols ? 2 : 1;
		t->tmem_cols = t->acc_stages * t->bn + sc;
	}
	/* Per tile and per SM: tensor-core time over the padded K; SMEM traffic: the MMA's operand
	 * reads (A once, B once per instruction row; in 2-CTA mode each SM reads only its half of B:
	 * backends.md §1a) plus the TMA writes filling the stage, both through the SM's one SMEM
	 * port (its bandwidth in the machine file) [E: reads and fills assumed to share the port]. */
	double kp = (double)kper;
	double mma = 2 * bm * t->bn * kp / fsm;
	double smem = ksteps * (bm * t->bk * sa + (bm / im) * bn_load * t->bk * sbw + stage) / a->smem_bw;
	double promo = s->promote > 0 ? bm * t->bn * ceil(kp / s->promote) / a->fma : 0;
	t->tiles = s->batch * cdiv(s->M, t->bm) * cdiv(s->N, t->bn) * split;
	t->units = (int64_t)(a->sms / cta);
	t->waves = cdiv(t->tiles, t->units);
	double hbm_sm = a->hbm_bw / a->sms;
	/* HBM bandwidth is reached in proportion to the SMs streaming (as the decode attention
	 * roofline, backends.md §1b "Parallelism condition"): a GEMM of fewer tiles than SMs uses
	 * that share of it, which is what split-K recovers. */
	double busy = fmin(1.0, (double)t->tiles * cta / a->sms);
	double bw_hbm = s->b_bytes > 0 ? s->b_bytes : sbw;   /* weights stored narrower (quantized at load) */
	double bytes = (double)s->batch * (gemm_l2(a, s, t, sa, bw_hbm) + (double)s->M * s->N * s->out_bytes);
	/* The splits' f32 partials: written by each split, read by the reducing tile; through L2
	 * when they fit in half of it, else through HBM. */
	double ws = split > 1 ? 2.0 * split * (double)s->batch * s->M * s->N * 4 : 0;
	int ws_l2 = ws > 0 && a->l2 > 0 && ws <= a->l2 / 2;
	double epi_t = bm * t->bn * s->out_bytes / hbm_sm;
	t->c = (GpuCost){ .mma = t->waves * mma, .smem = t->waves * smem, .fma = t->waves * promo,
			  .hbm = (bytes + (ws_l2 ? 0 : ws)) / (a->hbm_bw * busy), .overlap = 1 };
	/* L2 to SMEM: every tile loads its A and B panels through L2 (TMA fills), and the output
	 * tiles' stores pass through the same L2 slices on their way to HBM (the L2 is the point of
	 * coherence: every global store goes through it), at the machine's L2 bandwidth when the
	 * file gives one [E: multicast not credited; loads and stores share the slices' bandwidth].
	 * The stores are what a short K leaves exposed: per tile the panels scale with K, the
	 * output tile does not. */
	if (a->l2_bw > 0)
		t->c.l2 = ((double)t->tiles * ((double)t->bm * sa + (double)t->bn * sbw) * kp + (ws_l2 ? ws : 0) +
			   (double)s->batch * s->M * s->N * s->out_bytes) / a->l2_bw;
	/* Fixed: the first stage's load, the epilogue (hidden behind the next tile's mainloop with
	 * two accumulator stages: persistent, TMEM double buffer; else once per wave), and with a K
	 * split the last tile's reduction of its tile's `split` f32 partials. */
	t->c.fixed = stage / hbm_sm + (t->acc_stages >= 2 ? epi_t : t->waves * epi_t) +
		     (split > 1 ? split * bm * t->bn * 4 / hbm_sm : 0);
	t->c.fill = t->c.fixed;   /* all of it at the SM's share of HBM */
	t->t = gpu_cost_total(&t->c);
	return 1;
}

/* ---- attention ---- */
/* Keys visible to Q tile i (rows i*bm .. ) of a sequence of sq queries and t keys under the
 * causal mask with p cached positions. */
static int64_t visible(int causal, int64_t sq, int64_t t, int64_t p, int64_t i, int bm)
{
	if (!causal)
		return t;
	int64_t last = (i + 1) * bm < sq ? (i + 1) * bm : sq;
	return p + last < t ? p + last : t;
}

static int by_length_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* Longest-first list scheduling of the tiles (blocks each) on `units` SMs: the makespan in
 * blocks.  Tiles of one Q-tile index come B*qh at a time.  Packed sequences (s->off: the varlen
 * kernel, FlashAttention's cu_seqlens) tile each sequence alone: its own Q tiles over its own keys. */
static double makespan(const AttnShape *s, int bm, int bn, int units, int64_t *ntiles)
{
	int nseg = s->off ? s->noff - 1 : 1;
	int64_t nq = 0, copies = s->B * s->qh;
	for (int k = 0; k < nseg; k++)
		nq += cdiv(s->off ? s->off[k + 1] - s->off[k] : s->Sq, bm);
	double *load = calloc((size_t)units, sizeof *load), *len = malloc((size_t)nq * sizeof *len), worst = 0;
	*ntiles = nq * copies;
	if (!load || !len) {
		free(load), free(len);
		return (double)cdiv(s->T, bn) * cdiv(*ntiles, units);
	}
	int64_t q = 0;
	for (int k = 0; k < nseg; k++) {
		int64_t sq = s->off ? s->off[k + 1] - s->off[k] : s->Sq, t = s->off ? sq : s->T;
		for (int64_t i = 0; i < cdiv(sq, bm); i++)
			len[q++] = (double)cdiv(visible(s->causal, sq, t, s->off ? 0 : s->P, i, bm), bn);
	}
	qsort(len, (size_t)nq, sizeof *len, by_length_desc);   /* longest first under the causal mask */
	for (int64_t i = 0; i < nq; i++)
		for (int64_t c = 0; c < copies; c++) {
			int best = 0;
			for (int u = 1; u < units; u++)
				if (load[u] < load[best])
					best = u;
			load[best] += len[i];
			if (load[best] > worst)
				worst = load[best];
		}
	free(load);
	free(len);
	return worst;
}

double gpu_exp2_split(const GpuArch *a, const AttnShape *s, int poly)
{
	/* Per score the softmax puts one exp2 on the SFU and SOFTMAX_FMA_OPS on the FMA pipe; moving a
	 * fraction f of the exponentials to the polynomial costs poly + EXP2_REDUCE_OPS FMA-pipe
	 * instructions each.  The softmax time max(SFU, FMA) is what ping-pong cannot fully hide
	 * (1 - overlap of it shows), so f balances the two pipes: sfu (1 - f) = fma0 + f fpoly; 0
	 * when the SFU is not the slower pipe (B300's doubled MUFU: hardware.md §3.4). */
	(void)s;
	double sfu = 1 / a->sfu, fma0 = SOFTMAX_FMA_OPS / a->fma, fpoly = (poly + EXP2_REDUCE_OPS) / a->fma;
	if (!a->dev->sfu.emulation || sfu <= fma0)
		return 0;
	double f = (sfu - fma0) / (sfu + fpoly);
	return f > 1 ? 1 : f;
}

/* The memory-bound decode kernel (backends.md §1b "Decode attention"): split-KV across SMs,
 * KV read once, bandwidth reached only in proportion to the SMs kept busy. */
static void attn_decode(const GpuArch *a, const AttnShape *s, AttnTile *t)
{
	int64_t heads = s->B * s->kvh, blocks = cdiv(s->T, t->bn);
	int64_t split = heads >= (int64_t)a->sms ? 1 : cdiv((int64_t)a->sms, heads);
	if (split > blocks)
		split = blocks;
	t->decode = 1;
	t->split = (int)split;
	t->tiles = heads * split;
	t->waves = cdiv(t->tiles, (int64_t)a->sms);
	double busy = fmin(1.0, (double)t->tiles / a->sms);
	double scores = (double)s->B * s->qh * s->Sq * s->T;
	double kvb = s->kv_bytes > 0 ? s->kv_bytes : s->io_bytes;
	double kv = (double)s->B * s->kvh * s->T * (s->d + s->dv) * kvb;
	double qo = (double)s->B * s->qh * s->Sq * (s->d + s->dv) * s->io_bytes;
	double part = split > 1 ? 2.0 * split * s->B * s->qh * s->Sq * (s->dv + 1) * 4 : 0;  /* f32 partials + LSE */
	double fsm = a->dev->peak[s->in].v / a->sms * gpu_eff_gemm(a, s->in);
	t->c = (GpuCost){ .hbm = (kv + qo + part) / (a->hbm_bw * busy),
			  .mma = scores * 2 * (s->d + s->dv) / (fsm * a->sms * busy),
			  .sfu = scores / (a->sfu * a->sms * busy),
			  .fma = scores * SOFTMAX_FMA_OPS / (a->fma * a->sms * busy),
			  .overlap = a->overlap_attn };
	t->c.fixed = split > 1 ? a->graph_launch : 0;    /* the LSE combine kernel: its launch gap */
	t->t = gpu_cost_total(&t->c);
}

/* K/V reuse in L2: FA3's grid runs the Q tiles of one head on consecutive CTAs (m block
 * fastest, arXiv 2407.08608 §3), so the SMs hold h = ceil(SMs / nq) heads at a time (nq Q tiles
 * per head), sharing ceil(h / (qh/kvh)) K/V heads of T·(d+dv)·s bytes each.  When those fit in
 * the L2, every head's K/V is read from HBM once.  Otherwise the Q tiles of a head that run
 * together stream its K/V blocks in step and share each read, but the next wave of that head's
 * Q tiles finds them evicted: K/V is read once per wave of the head, ceil(nq / min(nq, SMs)).
 * [E: LRU L2; concurrent tiles of a head in step.] */
static double attn_kv_reload(const GpuArch *a, const AttnShape *s, const AttnTile *t)
{
	int64_t nq = cdiv(s->Sq, t->bm), heads = s->B * s->qh, grp = s->kvh > 0 && s->qh >= s->kvh ? s->qh / s->kvh : 1;
	int64_t sms = (int64_t)a->sms, h = cdiv(sms, nq) < heads ? cdiv(sms, nq) : heads;
	double foot = (double)cdiv(h, grp) * s->T * (s->d + s->dv) * (s->kv_bytes > 0 ? s->kv_bytes : s->io_bytes);
	if (a->l2 <= 0 || foot <= a->l2)
		return 1;
	return (double)cdiv(nq, nq < sms ? nq : sms);
}

void gpu_attn_eval(const GpuArch *a, const AttnShape *s, AttnTile *t)
{
	/* Decode: the query rows of one KV head (GQA packing) fill less than one 64-row MMA. */
	if (s->Sq * (s->qh / (s->kvh ? s->kvh : 1)) < 64) {
		attn_decode(a, s, t);
		return;
	}
	double fsm = a->dev->peak[s->in].v / a->sms * gpu_eff_gemm(a, s->in), sb = gpu_elem_bytes(s->in);
	double sc = (double)t->bm * t->bn, e = t->emu;
	double mma = sc * 2 * (s->d + s->dv) / fsm;
	double sfu = (1 - e) * sc / a->sfu;
	double fma = sc * (SOFTMAX_FMA_OPS + e * (t->poly + EXP2_REDUCE_OPS)) / a->fma;
	double smem = (t->bm * s->d + t->bn * (double)(s->d + s->dv)) * sb / a->smem_bw;
	double blocks = makespan(s, t->bm, t->bn, (int)a->sms, &t->tiles);
	t->waves = cdiv(t->tiles, (int64_t)a->sms);
	t->kv_reload = attn_kv_reload(a, s, t);
	double kvb = s->kv_bytes > 0 ? s->kv_bytes : s->io_bytes;
	double bytes = (double)s->B * (s->qh * (double)s->Sq * (s->d + s->dv) * s->io_bytes +
				       t->kv_reload * s->kvh * (double)s->T * (s->d + s->dv) * kvb);
	double hbm_sm = a->hbm_bw / a->sms;
	t->c = (GpuCost){ .mma = blocks * mma, .sfu = blocks * sfu, .fma = blocks * fma, .smem = blocks * smem,
			  .hbm = bytes / a->hbm_bw, .overlap = a->overlap_attn };
	/* Per tile, what the in-tile pipelining cannot overlap (FA3 §3.2 intra-warpgroup pipelining,
	 * FA4's ping-pong of two Q tiles: both start and end a tile together): the first block's
	 * softmax (no P.V in flight yet), the last block's P.V (no softmax left to hide it under), and
	 * the epilogue staging O through SMEM for its TMA store; an SM runs `waves` tiles in turn.
	 * Plus, once: the first tile's Q and K/V loads at the SM's share of HBM. */
	double pv = sc * 2 * s->dv / fsm, epi = (double)t->bm * s->dv * s->io_bytes / a->smem_bw;
	t->c.fill = ((t->bm * (double)s->d + t->bm * (double)s->dv) * s->io_bytes + t->bn * (double)(s->d + s->dv) * kvb) / hbm_sm;
	t->c.fixed = t->c.fill + (double)t->waves * (fmax(sfu, fma) + pv + epi + gpu_attn_tile_fixed(a, s->in));
	t->t = gpu_cost_total(&t->c);
}
