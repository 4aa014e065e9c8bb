/* targets/tpu/cost.c: the TPU chip's numbers (tpu_arch, read only from the machine description)
 * and the tpu target's cost hook.
 *
 * Each kernel records its resource times (t.mxu_us, t.vpu_us, t.vmem_us, t.hbm_us, t.fixed_us)
 * computed by targets/tpu/tile.c and targets/tpu/lower.c; the hook recombines them as
 * backends.md §0 prescribes, T = T_fixed + max(W/F, Q/BW_hbm, Q_on/BW_vmem), here
 *     T = fixed + max(mxu, vpu, vmem, hbm)
 * because the MXUs, the vector unit and the DMA engines issue from one VLIW bundle stream and
 * HBM->VMEM copies are double-buffered against compute (hardware.md §3.5, backends.md §2a). */
#include "targets/tpu/tpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const Unit *unit(const Device *d, const char *name)
{
	for (int i = 0; i < d->nunits; i++)
		if (strcmp(d->units[i].name, name) == 0)
			return &d->units[i];
	return NULL;
}

int tpu_arch(const Device *d, TpuArch *a, RtError *e)
{
	memset(a, 0, sizeof *a);
	a->dev = d;
	const Unit *tc = unit(d, "tensorcore"), *mxu = unit(d, "mxu"), *sc = unit(d, "sparsecore"), *sc1 = unit(d, "scalar");
	const MemSpace *hbm = dev_mem_kind(d, MEM_HBM), *vm = dev_mem_kind(d, MEM_VMEM);
	const Engine *dma = NULL;
	for (int i = 0; i < d->nengines; i++)
		if (strcmp(d->engines[i].kind, "dma") == 0)
			dma = &d->engines[i];
	const char *miss = !tc ? "units tensorcore" : !mxu || !num_has(&mxu->size) ? "units mxu (with size)"
			   : !num_has(&mxu->latency) ? "mxu.latency" : !hbm || !num_has(&hbm->bandwidth) ? "hbm.bandwidth"
			   : !vm || !num_has(&vm->bandwidth) ? "vmem.bandwidth" : !num_has(&d->vpeak[DT_F32]) ? "vpeak.f32"
			   : !num_has(&d->peak[DT_BF16]) ? "peak.bf16" : !num_has(&d->clock) ? "clock" : NULL;
	if (miss)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine device '%s' lacks %s, which the TPU cost model needs",
				 d->id, miss);
	a->clock = d->clock.v;
	a->R = a->C = (int)mxu->size.v;
	a->ncores = (int)tc->count.v;
	a->nmxu = (int)mxu->count.v;
	a->t0 = mxu->latency.v;
	a->fixed = num_has(&tc->latency) ? tc->latency.v : 0;
	a->hbm_bw = hbm->bandwidth.v * (num_has(&hbm->efficiency) ? hbm->efficiency.v : 1);
	a->vmem_bw = vm->bandwidth.v;
	/* VMEM is private to each TensorCore (hardware.md §3.5); a device-scope capacity is the sum. */
	a->vmem_cap = vm->capacity.v / (vm->scope == SCOPE_DEVICE && a->ncores > 1 ? a->ncores : 1);
	a->vpu = d->vpeak[DT_F32].v;
	a->vpu64 = num_has(&d->vpeak[DT_F64]) && !dev_supports(d, DT_F64) ? d->vpeak[DT_F64].v : 0;
	a->dma_latency = dma && num_has(&dma->latency) ? dma->latency.v : 0;
	a->sparsecores = sc ? (int)sc->count.v : 0;
	a->step = sc1 && num_has(&sc1->latency) ? sc1->latency.v : 0;
	a->gemm_eff = dev_efficiency(d, "gemm", 1);
	if (a->R <= 0 || a->nmxu <= 0 || a->ncores <= 0)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine device '%s': MXU size and counts must be positive", d->id);
	return 0;
}

double tpu_cost_total(const TpuCost *c)
{
	return c->fixed + fmax(fmax(c->mxu, c->vpu), fmax(c->vmem, c->hbm));
}

double tpu_cost(const Plan *p, int stream, const PlanInstr *in)
{
	/* chip-to-chip copies and collectives priced on the ICI torus at lowering (targets/tpu/ici.c) */
	double ici = in->kind == PI_COPY || in->kind == PI_COLLECTIVE ? plan_instr_num(in, "ici_us", -1) : -1;
	if (ici >= 0 && isfinite(ici))
		return ici * 1e-6;
	if (in->kind != PI_KERNEL || plan_instr_num(in, "fixed_us", -1) < 0)
		return rt_cost_roofline(p, stream, in);
	TpuCost c = { .mxu = plan_instr_num(in, "mxu_us", 0), .vpu = plan_instr_num(in, "vpu_us", 0), .vmem = plan_instr_num(in, "vmem_us", 0),
		      .hbm = plan_instr_num(in, "hbm_us", 0), .fixed = plan_instr_num(in, "fixed_us", 0) };
	double t = tpu_cost_total(&c) * 1e-6;
	return t >= 0 && isfinite(t) ? t : 0;
}

double tpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	TpuArch a;
	RtError e = { 0 };
	TgtGemmDims g;
	TgtAttnDims at;
	if (!w->node || !w->tiles || w->to || w->reduce > 0 || tpu_arch(d, &a, &e) < 0)
		return tgt_roofline_time(t, m, d, p, w);
	/* the MXU format: the operands' when the chip has it, else the policy's (bf16) */
	DType mma = p && p->word ? p->word->mma : DT_BF16;
	if (tgt_work_gemm(w, &g)) {
		DType in = dev_supports(d, g.in) && num_has(&d->peak[g.in]) ? g.in : mma;
		double eb = rt_dtypes[in].bits / 8.0;
		MxuShape s = { .batch = g.batch, .M = g.M, .N = g.N, .K = g.K, .in = in, .in_bytes = eb, .w_bytes = eb,
			       .out_bytes = rt_dtype_bytes(g.out, 1) };
		MxuPlan pl;
		if (tpu_mxu_plan(&a, &s, &pl)) {
			TpuCost c = { .mxu = pl.core, .vmem = pl.vmem, .hbm = pl.hbm, .fixed = pl.fixed };
			return tpu_cost_total(&c);
		}
	}
	if (tgt_work_attn(w, &at)) {   /* as lower.c's attention kernel: Q K^T and P V on the MXUs, softmax on the VPU */
		int64_t grp = at.qh / at.kvh > 0 ? at.qh / at.kvh : 1;
		/* packed sequences (at.off): each sequence's own block of the scores, one after another */
		int nseg = at.off ? at.noff - 1 : 1, ok = 1;
		TpuCost c = { .fixed = a.fixed + a.dma_latency + a.t0 };
		for (int k = 0; k < nseg && ok; k++) {
			int64_t sq = at.off ? at.off[k + 1] - at.off[k] : at.Sq, tk = at.off ? sq : at.T;
			MxuShape s1 = { .batch = at.B * at.kvh, .M = sq * grp, .N = tk, .K = at.d, .in = DT_BF16, .in_bytes = 2,
					.w_bytes = 2, .out_bytes = 4 };
			MxuShape s2 = { .batch = at.B * at.kvh, .M = sq * grp, .N = at.dv, .K = tk, .in = DT_BF16, .in_bytes = 2,
					.w_bytes = 2, .out_bytes = 2 };
			MxuPlan m1, m2;
			ok = tpu_mxu_plan(&a, &s1, &m1) && tpu_mxu_plan(&a, &s2, &m2);
			if (ok) {
				c.mxu += m1.mxu + m2.mxu, c.vmem += m1.vmem + m2.vmem;
				c.vpu += (double)(m1.Mp * m1.Np) * (double)s1.batch * TPU_SOFTMAX_VPU_OPS / a.vpu;
			}
		}
		if (ok) {
			double bytes = ((double)(at.B * at.qh * at.Sq) + (double)(at.B * at.kvh * at.T)) * (double)(at.d + at.dv) * 2;
			c.hbm = bytes / a.hbm_bw;
			return tpu_cost_total(&c) * at.grad / (double)at.rest;
		}
	}
	return tgt_roofline_time(t, m, d, p, w);
}
