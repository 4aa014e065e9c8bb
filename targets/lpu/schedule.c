/* targets/lpu/schedule.c: LPU instruction costs in cycles and the list scheduler.
 *
 * Cost of one instruction (docs/targets-lpu.md §Cost; backends.md §3b's per-layer estimate
 * applied per instruction): operands stream from SRAM, through one functional slice group, and
 * back to SRAM, so
 *     dur = mem_lat + lat(kind) + max(compute, ceil(vectors / mem_vec))
 * with vectors the 320-byte vectors read and written, mem_vec the vectors one hemisphere moves
 * per cycle (the smaller of its share of the SRAM bandwidth and its 2 x 32 stream registers,
 * hardware.md §3.6 / backends.md §3a), compute = ceil(MACs / MACs-per-cycle) on MXM (the
 * device's peak at the matmul format, split over two hemispheres) and ceil(ops / ALUs) on VXM;
 * SXM only moves data.  The latencies are the machine file's estimates.
 * Scheduling: flat nodes in order; each goes to the hemisphere of its kind where it can issue
 * first (operands ready, unit free; east on a tie), so no unit runs two instructions in one
 * cycle and every operand is in SRAM before its reader issues.  The critical path is traced
 * back from the instruction that ends last through whichever constraint (operand or unit) set
 * each start. */
#include "targets/lpu/lpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const lpu_kind_names[LK_COUNT] = { "mxm", "vxm", "sxm" };

static const Unit *unit_group(const Device *d, const char *name)
{
	for (int i = 0; i < d->nunits; i++)
		if (strcmp(d->units[i].name, name) == 0)
			return &d->units[i];
	return NULL;
}

static int cycles_of(const Unit *u, double clock)
{
	return u && num_has(&u->latency) ? (int)lround(u->latency.v * clock) : 0;
}

int lpu_arch(const Device *d, LpuArch *a, RtError *e)
{
	memset(a, 0, sizeof *a);
	a->d = d;
	a->clock = d->clock.v;
	const Unit *mxm = unit_group(d, "mxm"), *vxm = unit_group(d, "vxm"), *sxm = unit_group(d, "sxm");
	const Unit *mem = unit_group(d, "mem"), *str = unit_group(d, "streams");
	const MemSpace *sram = dev_mem_kind(d, MEM_SRAM);
	if (!(a->clock > 0) || !mxm || !vxm || !sxm || !mem || !sram || !num_has(&sram->bandwidth))
		return rt_errorf(e, RT_EUSER, "aicc: error: device '%s' is not an LPU description: it needs a clock, "
				 "unit groups mxm, vxm, sxm and mem, and an sram memory with a bandwidth", d->id);
	a->lat[LK_MXM] = cycles_of(mxm, a->clock);
	a->lat[LK_VXM] = cycles_of(vxm, a->clock);
	a->lat[LK_SXM] = cycles_of(sxm, a->clock);
	a->mem_lat = cycles_of(mem, a->clock);
	a->vec_bytes = num_has(&vxm->size) ? vxm->size.v : 320;
	double share = sram->bandwidth.v / a->clock / a->vec_bytes / LPU_HEMIS;
	double streams = str && num_has(&str->count) ? 2 * str->count.v : share;
	a->mem_vec = fmax(1, fmin(share, streams));
	a->mma = num_has(&d->peak[DT_F8E4M3]) ? DT_F8E4M3 : DT_F16;
	a->elem_bytes = a->mma == DT_F8E4M3 ? 1 : 2;
	if (!num_has(&d->peak[a->mma]))
		return rt_errorf(e, RT_EUSER, "aicc: error: device '%s' gives no matrix peak for %s", d->id,
				 rt_dtype_name(a->mma));
	a->macs = d->peak[a->mma].v / 2 / a->clock / LPU_HEMIS;
	a->valu = vxm->count.v / LPU_HEMIS;
	a->sram = (int64_t)mem_total_capacity(d, sram);
	return 0;
}

static LpuKind kind_of(Op op)
{
	switch (op) {
	case OP_MatMul: case OP_Gemm: case OP_MatMulInteger: case OP_QLinearMatMul: case OP_Einsum:
	case OP_Conv: case OP_Attention: case OP_GroupedMatMul:
		return LK_MXM;
	case OP_Reshape: case OP_Transpose: case OP_Concat: case OP_Split: case OP_Slice: case OP_Gather:
	case OP_GatherElements: case OP_Expand: case OP_Tile: case OP_Squeeze: case OP_Unsqueeze:
	case OP_Flatten: case OP_Pad: case OP_Identity: case OP_Embedding:
		return LK_SXM;
	default:
		return LK_VXM;
	}
}

static int64_t numel(const FlatVal *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= v->dims[i];
	return n;
}

/* 320-byte vectors value v occupies in SRAM (floats at the matmul format's width). */
static int64_t vectors(const LpuArch *a, const FlatVal *v)
{
	int64_t b = rt_dtype_isfloat(v->dt) ? numel(v) * a->elem_bytes : rt_dtype_bytes(v->dt, numel(v));
	return (int64_t)ceil((double)b / a->vec_bytes);
}

static void price(const LpuArch *a, const Flat *f, int i, LpuOp *o)
{
	const FlatNode *fn = &f->nodes[i];
	o->node = i;
	o->kind = kind_of(fn->n->op);
	o->vectors = 0;
	/* a gather reads only the rows it selects: as many vectors as it writes */
	int gather = fn->n->op == OP_Gather || fn->n->op == OP_Embedding;
	for (int k = gather ? 1 : 0; k < fn->nin; k++)
		if (fn->in[k] >= 0)
			o->vectors += vectors(a, &f->vals[fn->in[k]]);
	int64_t outn = 0;
	for (int k = 0; k < fn->nout; k++)
		o->vectors += vectors(a, &f->vals[fn->out[k]]), outn += numel(&f->vals[fn->out[k]]);
	double fl = ir_node_flops(fn->n);
	fl = fl > 0 ? fl : 0;
	o->stream = (int64_t)ceil((double)o->vectors / a->mem_vec);
	if (o->kind == LK_MXM)
		o->compute = (int64_t)ceil(fl / 2 / a->macs);
	else if (o->kind == LK_VXM)
		o->compute = (int64_t)ceil(fmax(fl, (double)outn) / a->valu);
	else
		o->compute = 0;
	o->dur = a->mem_lat + a->lat[o->kind] + (o->compute > o->stream ? o->compute : o->stream);
	if (o->dur < 1)
		o->dur = 1;
}

static LpuSched *sort_s;
static int by_cycle(const void *x, const void *y)
{
	const LpuOp *a = &sort_s->ops[*(const int *)x], *b = &sort_s->ops[*(const int *)y];
	if (a->cycle != b->cycle)
		return a->cycle < b->cycle ? -1 : 1;
	if (a->unit != b->unit)
		return a->unit < b->unit ? -1 : 1;
	return a->node - b->node;
}

int lpu_schedule(const LpuArch *a, const Flat *f, LpuSched *s, RtError *e)
{
	memset(s, 0, sizeof *s);
	int nu = LK_COUNT * LPU_HEMIS;
	s->nops = f->nnodes;
	s->ops = calloc((size_t)f->nnodes + 1, sizeof *s->ops);
	s->order = calloc((size_t)f->nnodes + 1, sizeof *s->order);
	int64_t *ready = calloc((size_t)f->nvals + 1, sizeof *ready);
	int *producer = malloc(((size_t)f->nvals + 1) * sizeof *producer);
	int *pred = malloc(((size_t)f->nnodes + 1) * sizeof *pred);
	int64_t free_at[LK_COUNT * LPU_HEMIS] = { 0 };
	int last_on[LK_COUNT * LPU_HEMIS];
	if (!s->ops || !s->order || !ready || !producer || !pred) {
		free(ready), free(producer), free(pred), lpu_sched_free(s);
		return rt_errorf(e, RT_ENOMEM, "out of memory scheduling the LPU plan");
	}
	for (int v = 0; v < f->nvals; v++)
		producer[v] = -1;
	for (int u = 0; u < nu; u++)
		last_on[u] = -1;
	int last = -1;
	for (int i = 0; i < f->nnodes; i++) {
		LpuOp *o = &s->ops[i];
		const FlatNode *fn = &f->nodes[i];
		price(a, f, i, o);
		int64_t r = 0;
		int rp = -1;
		for (int k = 0; k < fn->nin; k++)
			if (fn->in[k] >= 0 && ready[fn->in[k]] > r)
				r = ready[fn->in[k]], rp = producer[fn->in[k]];
		int best = -1;
		int64_t bt = 0;
		for (int h = 0; h < LPU_HEMIS; h++) {
			int u = (int)o->kind * LPU_HEMIS + h;
			int64_t t = r > free_at[u] ? r : free_at[u];
			if (best < 0 || t < bt)
				best = u, bt = t;
		}
		o->unit = best;
		o->cycle = bt;
		pred[i] = bt == r ? rp : last_on[best];
		free_at[best] = bt + o->dur;
		last_on[best] = i;
		s->busy[best] += o->dur;
		for (int k = 0; k < fn->nout; k++)
			ready[fn->out[k]] = bt + o->dur, producer[fn->out[k]] = i;
		if (bt + o->dur > s->length || last < 0)
			s->length = bt + o->dur, last = i;
	}
	for (int i = last; i >= 0; i = pred[i]) {
		s->ops[i].critical = 1;
		s->ncritical++;
	}
	s->critical_len = s->length;
	for (int i = 0; i < s->nops; i++)
		s->order[i] = i;
	sort_s = s;
	qsort(s->order, (size_t)s->nops, sizeof *s->order, by_cycle);
	free(ready), free(producer), free(pred);
	return 0;
}

void lpu_sched_free(LpuSched *s)
{
	free(s->ops);
	free(s->order);
	memset(s, 0, sizeof *s);
}
