/* targets/vera-rubin/lower.c: the vera-rubin target: attention on a pool of Rubin GPUs, FFN/MoE on a
 * pool of Groq 3 LPUs, activations crossing every layer (hardware.md §3.7, backends.md §4).
 *
 * Input: a graph the disaggregate pass (passes/disaggregate.c) placed: `@device(gpu0)` nodes on
 * the GPU pool, `@device(lpu0)` nodes on the LPU pool, a Transfer at every crossing, micro-batches
 * already cut into the layer graphs, and on each node `pool_chips` (the chips of its pool that
 * work on it) and `pool_size` (the chips of its pool).  The multi-device GPU walk
 * (targets/gpu/lower.c through targets/devices.c, with targets/blackwell's tcgen05 and FA4 hooks
 * on Rubin's numbers) gives each pool a device, a stream and a memory space, turns each Transfer
 * into a copy over the GPU-LPU link and orders the streams with events, so both pools run
 * concurrently and the micro-batches ping-pong.  Nodes on the LPU pool come back to this file
 * (GpuHooks.foreign): priced by vr_lpu_time (targets/vera-rubin/cost.c), MMA operands rounded to
 * FP8 (the interpreter's MXFP8: FP8 elements with block scales, its nearest scaled FP8).
 *
 * A pool is one plan device: its chips work tensor-parallel on each node, so it is priced as
 * pool_chips chips, its memory space holds the whole pool -- the HBM of pool_size GPUs, the SRAM
 * of pool_size LPUs -- and its peak is the pool's (BF16 on the GPUs, FP8 on the LPUs).  The walk keeps float values at bf16 while an LPU stores weights at its
 * FP8 matmul format, so the LPU space is widened by that ratio: the plan's capacity check then
 * matches the pool's (the pass sized the pool at FP8).  A graph without placements stays a
 * one-GPU plan. */
#include "targets/vera-rubin/vr.h"

#include <stdio.h>
#include <string.h>

int bw_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void bw_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

#define NKV 7

typedef struct Vr {
	const Device *lpu;
	LpuArch arch;            /* the lpu backend's view of the LPU (slices, latencies, clock) */
	int have_arch;
	const Link *c2c;         /* LPU-LPU link: the pool's all-reduce */
	PlanKV kv[NKV];
	char val[NKV][48];
} Vr;

/* The pool size the nodes placed on device class `cls` (or, with cls NULL, on no LPU) carry. */
static int pool_size(const TgtInput *in, const Device *lpu, int want_lpu)
{
	int n = 1;
	for (Graph *g = in->m->graphs; g; g = g->next)
		ir_foreach_node(g, nd) {
			const char *d = nd->annot.device;
			int on_lpu = d && lpu && !strncmp(d, lpu->id, strlen(lpu->id));
			int c = (int)rt_attr_int(&nd->attrs, "pool_size", 1);
			if (on_lpu == want_lpu && c > n)
				n = c;
		}
	return n;
}

/* GpuHooks.foreign: an LPU-pool kernel's pricing, as tile attributes. */
static int lpu_node(void *ctx, const Plan *p, int device, const Flat *f, int node, PlanInstr *pi, RtError *e)
{
	Vr *v = ctx;
	if (!v->lpu || strcmp(p->devices[device].kind, "lpu"))
		return rt_errorf(e, RT_EUSER, "aicc: error: target vera-rubin places '%s' on device '%s', neither a GPU nor an LPU",
				 pi->node ? pi->node : "?", p->devices[device].name);
	int chips = (int)rt_attr_int(&f->nodes[node].n->attrs, "pool_chips", 1);
	if (pi->op == RT_OP_MatMul || pi->op == RT_OP_Gemm || pi->op == RT_OP_GroupedMatMul)
		pi->opts.mma_in = DT_MXFP8;
	LpuCost cyc;
	if (v->have_arch)
		lpu_node_cycles(&v->arch, f, node, &cyc);
	VrLpuTime t = vr_lpu_time(p, v->lpu, v->c2c, pi, chips, v->have_arch ? &cyc : NULL, v->arch.clock);
	static const char *const keys[NKV] = { "kind", "chips", "sram_us", "mxm_us", "fixed_us", "time_us", "bound" };
	snprintf(v->val[0], sizeof v->val[0], "lpu");
	snprintf(v->val[1], sizeof v->val[1], "%d", chips);
	snprintf(v->val[2], sizeof v->val[2], "%.4g", t.stream * 1e6);
	snprintf(v->val[3], sizeof v->val[3], "%.4g", t.compute * 1e6);
	snprintf(v->val[4], sizeof v->val[4], "%.4g", t.fixed * 1e6);
	snprintf(v->val[5], sizeof v->val[5], "%.4g", vr_lpu_total(&t) * 1e6);
	snprintf(v->val[6], sizeof v->val[6], "%s", t.stream >= t.compute ? "sram" : "mxm");
	for (int i = 0; i < NKV; i++)
		v->kv[i] = (PlanKV){ (char *)keys[i], v->val[i] };
	pi->tile = v->kv;
	pi->ntile = NKV;
	pi->unit = -1;
	return 0;
}

/* Widens space `name` of the machine's plan entities by `mul`; returns its index (or -1). */
static int widen(Plan *desc, const char *id, const char *mem, double mul, int64_t *old)
{
	char name[128];
	snprintf(name, sizeof name, "%s.%s", id, mem);
	int s = plan_find_space(desc, name);
	if (s >= 0) {
		*old = desc->spaces[s].capacity;
		desc->spaces[s].capacity = (int64_t)((double)*old * mul);
	}
	return s;
}

/* Sets the peak of device class `id` in the machine's plan entities to `peak` (FLOP/s); returns
 * its index (or -1) and the old value in *old. */
static int set_peak(Plan *desc, const char *id, double peak, double *old)
{
	int d = plan_find_device(desc, id);
	if (d >= 0) {
		*old = desc->devices[d].peak_flops;
		desc->devices[d].peak_flops = peak;
	}
	return d;
}

Plan *vr_lower(const TgtInput *in, RtError *e)
{
	const Machine *m = in->machine->m;
	const Device *gpu = machine_first(m, DEV_GPU);
	Vr v = { .lpu = machine_first(m, DEV_LPU) };
	if (v.lpu) {
		v.c2c = machine_link(m, v.lpu, v.lpu);
		if (lpu_arch(m, v.lpu, &v.arch, e) < 0)
			return NULL;
		v.have_arch = 1;
	}
	GpuHooks h = { "vera-rubin", bw_gemm, bw_attn, lpu_node, &v };
	/* the pools' memories, for the walk; the machine's entities are restored after it */
	Plan *desc = in->machine->desc;
	int64_t gold = 0, lold = 0;
	int ng = pool_size(in, v.lpu, 0);
	double gpeak = 0, lpeak = 0;
	int gs = gpu ? widen(desc, gpu->id, "hbm", ng, &gold) : -1;
	int gd = gpu ? set_peak(desc, gpu->id, dev_peak(gpu, DT_BF16) * ng, &gpeak) : -1;
	int ls = -1, ld = -1;
	if (v.lpu) {
		int nl = pool_size(in, v.lpu, 1);
		if (num_has(&v.lpu->count) && nl > v.lpu->count.v && nl > 1) {
			rt_errorf(e, RT_EUSER, "aicc: error: vera-rubin: the graph asks for a pool of %d %s but machine %s has %.0f",
				  nl, v.lpu->id, m->name, v.lpu->count.v);
			return NULL;
		}
		ls = widen(desc, v.lpu->id, "sram", nl * 2.0 / rt_dtype_bytes(vr_lpu_format(v.lpu), 1), &lold);
		/* the pool's matrix peak at its FP8 format (reports compare achieved FLOP/s with it) */
		ld = set_peak(desc, v.lpu->id, dev_peak(v.lpu, vr_lpu_format(v.lpu)) * nl, &lpeak);
	}
	Plan *p = gpu_lower(in, &h, e);
	if (gs >= 0)
		desc->spaces[gs].capacity = gold;
	if (ls >= 0)
		desc->spaces[ls].capacity = lold;
	if (gd >= 0)
		desc->devices[gd].peak_flops = gpeak;
	if (ld >= 0)
		desc->devices[ld].peak_flops = lpeak;
	return p;
}
