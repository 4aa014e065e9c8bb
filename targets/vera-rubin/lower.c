/* targets/vera-rubin/lower.c: the vera-rubin target: attention on a pool of Rubin GPUs, FFN/MoE on a
 * pool of Groq 3 LPUs, activations crossing every layer (hardware.md §3.7, backends.md §4).
 *
 * Input: a graph the disaggregate pass (passes/disaggregate.c) placed: `@device(gpu0)` nodes on
 * the GPU pool, `@device(lpu0)` nodes on the LPU pool, a Transfer at every crossing, micro-batches
 * already cut into the layer graphs, and on each node `pool_chips` (the chips of its pool that
 * work on it) and `pool_size` (the chips of its pool).  The lowering walk
 * (targets/lower.c and targets/devices.c, with the GPU family's hooks, targets/gpu/lower.c, with targets/blackwell's tcgen05 and FA4 hooks
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

#include <math.h>
#include <stdio.h>
#include <string.h>

int bw_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void bw_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

typedef struct Vr {
	const Device *lpu;
	LpuArch arch;            /* the lpu backend's view of the LPU (slices, latencies, clock) */
	int have_arch;
	const Link *c2c;         /* LPU-LPU link: the pool's all-reduce */
} Vr;

/* The pool size the nodes placed on device class `lpu` (want_lpu) or on no LPU carry. */
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

const char *vr_formats_note(const Machine *m, char *buf, size_t n)
{
	(void)m;
	snprintf(buf, n, "the LPU pool's MatMul operands at %s, the rest at the --precision word", rt_dtype_name(DT_MXFP8));
	return buf;
}

/* GpuHooks.foreign: an LPU-pool kernel's pricing, as tile attributes. */
static int lpu_node(TgtLower *l, void *ctx, int device, int node, PlanInstr *pi, TgtAnn *t)
{
	Vr *v = ctx;
	const Plan *p = l->p;
	if (!v->lpu || strcmp(p->devices[device].kind, "lpu"))
		return rt_errorf(l->e, RT_EUSER, "aicc: error: target vera-rubin places '%s' on device '%s', neither a GPU nor an LPU",
				 pi->node ? pi->node : "?", p->devices[device].name);
	int chips = (int)rt_attr_int(&l->f.nodes[node].n->attrs, "pool_chips", 1);
	if (pi->op == RT_OP_MatMul || pi->op == RT_OP_Gemm || pi->op == RT_OP_GroupedMatMul)
		pi->opts.mma_in = DT_MXFP8;
	LpuCost cyc;
	if (v->have_arch)
		lpu_node_cycles(&v->arch, &l->f, node, &cyc);
	VrLpuTime lt = vr_lpu_time(p, v->lpu, v->c2c, pi, chips, v->have_arch ? &cyc : NULL, v->arch.clock);
	tgt_ann_put(t, "kind", "lpu");
	tgt_ann_put(t, "chips", "%d", chips);
	tgt_ann_put(t, "sram_us", "%.4g", lt.stream * 1e6);
	tgt_ann_put(t, "mxm_us", "%.4g", lt.compute * 1e6);
	tgt_ann_put(t, "fixed_us", "%.4g", lt.fixed * 1e6);
	tgt_ann_put(t, "time_us", "%.4g", vr_lpu_total(&lt) * 1e6);
	/* the C2C hop and all-reduce inside fixed_us are link time (newcomer 32 item 4) */
	if (lt.link > 0)
		tgt_ann_put(t, "link_us", "%.4g", lt.link * 1e6);
	tgt_ann_put(t, "bound", "%s", lt.link > fmax(lt.stream, lt.compute) ? "c2c" : lt.stream >= lt.compute ? "sram" : "mxm");
	pi->unit = -1;
	return 0;
}

/* The pools in the plan: every device of kind `kind` gets the pool's peak (FLOP/s) and its
 * memory space `mem` the pool's capacity (x mul). */
static void widen(Plan *p, const char *kind, const char *mem, double mul, double peak)
{
	for (int d = 0; d < p->ndevices; d++) {
		if (strcmp(p->devices[d].kind, kind))
			continue;
		p->devices[d].peak_flops = peak;
		char name[160];
		snprintf(name, sizeof name, "%s.%s", p->devices[d].name, mem);
		int s = plan_find_space(p, name);
		if (s >= 0)
			p->spaces[s].capacity = (int64_t)((double)p->spaces[s].capacity * mul);
	}
}

/* The setup hook: the GPU family's, the LPU pool's numbers, and the pools' sizes in the plan. */
const GpuHooks vr_gpu_hooks = { "tcgen05.1cta", bw_gemm, bw_attn, lpu_node };

int vr_setup(TgtLower *l)
{
	const Machine *m = l->in->machine->m;
	const Device *gpu = machine_first(m, DEV_GPU);
	Vr *v = tgt_lower_alloc(l, 1, sizeof *v);
	if (!v || gpu_setup(l) < 0)
		return -1;
	gpu_set_foreign_ctx(l, v);
	if ((v->lpu = machine_first(m, DEV_LPU))) {
		v->c2c = machine_link(m, v->lpu, v->lpu);
		if (lpu_arch(m, v->lpu, &v->arch, l->e) < 0)
			return -1;
		v->have_arch = 1;
	}
	int ng = pool_size(l->in, v->lpu, 0);
	if (gpu)
		widen(l->p, "gpu", "hbm", ng, dev_peak(gpu, DT_BF16) * ng);
	if (v->lpu) {
		int nl = pool_size(l->in, v->lpu, 1);
		if (num_has(&v->lpu->count) && nl > v->lpu->count.v && nl > 1)
			return rt_errorf(l->e, RT_EUSER, "aicc: error: vera-rubin: the graph asks for a pool of %d %s but machine %s has %.0f",
					 nl, v->lpu->id, m->name, v->lpu->count.v);
		/* the walk keeps float values at bf16, the LPUs store weights at their FP8 format; the
		 * pool's matrix peak is at that format (reports compare achieved FLOP/s with it) */
		DType f = vr_lpu_format(v->lpu);
		widen(l->p, "lpu", "sram", nl * 2.0 / rt_dtype_bytes(f, 1), dev_peak(v->lpu, f) * nl);
	}
	return 0;
}
