/* targets/lpu/lower.c: the lpu target (Groq TSP v1, Groq 3 LPU): graph -> cycle-stamped plan.
 *
 * Calls are flattened (targets/flatten.c); every node becomes one instruction on a functional
 * slice group (schedule.c: MXM for matrix products and attention, SXM for data movement and
 * layout, VXM for the rest; one group per hemisphere).  The list schedule gives each its issue
 * cycle and occupancy; the plan has one stream per chip in issue-cycle order, so the
 * interpreter executes in cycle order, the verifier checks unit conflicts and operand-ready
 * cycles, and the timing engine (cost.c) reproduces the schedule length exactly.
 * Memory: the LPU has no HBM (hardware.md §2.15, §3.6): weights, activations and KV cache all
 * live in on-chip SRAM.  Capacity is checked at the storage width (floats at the matmul format:
 * 2 bytes f16 on v1, 1 byte fp8 on the Groq 3 part); a model that does not fit is a clear error
 * with required and available bytes.  Plan buffers hold f32 values for the interpreter (the MXM
 * operand rounding is RtExecOpts.mma_in) and are placed first-fit by cycle-exact live ranges:
 * a buffer is reused only after the last reader of its previous tenant has finished.
 * Schedule facts ride as `t.*` attributes: per instruction t.slice, t.compute, t.stream,
 * t.vectors, t.critical; on the first instruction the schedule summary (cycles, seconds,
 * utilisation per functional unit, SRAM bytes, critical-path length). */
#include "targets/lpu/lpu.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 320   /* one vector: SRAM is addressed in 320-byte words (hardware.md §2.15) */

typedef struct Lw {
	const TgtInput *in;
	LpuArch a;
	LpuSched s;
	Plan *p;
	Flat f;
	int *buf;
	int space, stream, unit0;
	int64_t *start, *end;    /* per flat value: cycles of its live range (-1 / INT64_MAX: whole run) */
	RtError *e;
} Lw;


static int64_t numel(const FlatVal *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= v->dims[i];
	return n;
}

/* Plan dtype: float parameters (weights) are stored at the matmul format, as in SRAM; float
 * activations are f32 in the plan (the interpreter's values; MXM operand rounding is mma_in). */
static DType plan_dtype(const Lw *w, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt))
		return v->dt;
	return v->def < 0 && v->v && v->v->init ? w->a.mma : DT_F32;
}

/* Live ranges in cycles: from the producer's issue to the end of the last reader. */
static void live_ranges(Lw *w)
{
	const Flat *f = &w->f;
	for (int v = 0; v < f->nvals; v++) {
		const FlatVal *fv = &f->vals[v];
		w->start[v] = fv->def >= 0 ? w->s.ops[fv->def].cycle : -1;
		w->end[v] = fv->def >= 0 ? w->s.ops[fv->def].cycle + w->s.ops[fv->def].dur : INT64_MAX;
		if (fv->is_output)
			w->end[v] = INT64_MAX;
	}
	for (int i = 0; i < f->nnodes; i++) {
		const LpuOp *o = &w->s.ops[i];
		for (int k = 0; k < f->nodes[i].nin; k++) {
			int v = f->nodes[i].in[k];
			if (v >= 0 && w->end[v] != INT64_MAX && o->cycle + o->dur > w->end[v])
				w->end[v] = o->cycle + o->dur;
		}
	}
}

static const Lw *sort_w;
static int by_start(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	if (sort_w->start[a] != sort_w->start[b])
		return sort_w->start[a] < sort_w->start[b] ? -1 : 1;
	return a - b;
}

/* First-fit placement of every value by live range; size(v) bytes each.  Fills off[] and
 * returns the high-water mark, or -1 (no memory). */
static int64_t place_all(Lw *w, int64_t (*size)(const Lw *, int), int64_t *off)
{
	int n = w->f.nvals;
	int *idx = malloc(((size_t)n + 1) * sizeof *idx), *live = malloc(((size_t)n + 1) * sizeof *live);
	if (!idx || !live) {
		free(idx), free(live);
		return -1;
	}
	for (int v = 0; v < n; v++)
		idx[v] = v;
	sort_w = w;
	qsort(idx, (size_t)n, sizeof *idx, by_start);
	int nlive = 0;
	int64_t top = 0;
	for (int i = 0; i < n; i++) {
		int v = idx[i];
		int64_t sz = size(w, v), o = 0;
		int k = 0;
		for (int j = 0; j < nlive; j++)          /* drop tenants whose last reader has ended */
			if (w->end[live[j]] > w->start[v])
				live[k++] = live[j];
		nlive = k;
		for (int moved = 1; moved;) {            /* lowest offset clear of every live tenant */
			moved = 0;
			for (int j = 0; j < nlive; j++) {
				int64_t lo = off[live[j]], hi = lo + size(w, live[j]);
				if (o < hi && lo < o + sz && sz > 0 && hi > lo) {
					o = (hi + ALIGN - 1) / ALIGN * ALIGN;
					moved = 1;
				}
			}
		}
		off[v] = o;
		live[nlive++] = v;
		if (o + sz > top)
			top = o + sz;
	}
	free(idx), free(live);
	return top;
}

static int64_t storage_size(const Lw *w, int v)
{
	const FlatVal *fv = &w->f.vals[v];
	return rt_dtype_isfloat(fv->dt) ? numel(fv) * w->a.elem_bytes : rt_dtype_bytes(fv->dt, numel(fv));
}

static int64_t plan_size(const Lw *w, int v) { return rt_dtype_bytes(plan_dtype(w, &w->f.vals[v]), numel(&w->f.vals[v])); }

static int add_buffers(Lw *w, int64_t *off)
{
	for (int v = 0; v < w->f.nvals; v++) {
		const FlatVal *fv = &w->f.vals[v];
		char name[256];
		tgt_plan_name(name, sizeof name, fv->name);
		if (strcmp(name, fv->name) && plan_find_buffer(w->p, name) >= 0) {
			size_t n = strlen(name);
			snprintf(name + (n > 200 ? 200 : n), 56, ".%d", v);
		}
		w->buf[v] = plan_add_buffer(w->p, name, w->space, off[v], plan_dtype(w, fv), fv->rank, fv->dims, w->e);
		if (w->buf[v] < 0)
			return -1;
	}
	return 0;
}

static int is_matrix_float(const FlatNode *fn, const Flat *f)
{
	switch (fn->n->op) {
	case OP_MatMul: case OP_Gemm: case OP_Einsum: case OP_Conv: case OP_Attention: case OP_GroupedMatMul:
		return fn->nin > 0 && fn->in[0] >= 0 && rt_dtype_isfloat(f->vals[fn->in[0]].dt);
	default:
		return 0;
	}
}

static int add_instr(Lw *w, int j, PlanKV *sum, int nsum)
{
	const LpuOp *o = &w->s.ops[w->s.order[j]];
	const FlatNode *fn = &w->f.nodes[o->node];
	int ins[64], outs[64];
	if (fn->nin > 64 || fn->nout > 64)
		return rt_errorf(w->e, RT_EUSER, "node '%s' has more than 64 operands", w->f.vals[fn->out[0]].name);
	for (int k = 0; k < fn->nin; k++)
		ins[k] = fn->in[k] >= 0 ? w->buf[fn->in[k]] : -1;
	for (int k = 0; k < fn->nout; k++)
		outs[k] = w->buf[fn->out[k]];
	char slice[16], comp[32], strm[32], vec[32];
	snprintf(slice, sizeof slice, "%s.%c", lpu_kind_names[o->kind], o->unit % LPU_HEMIS ? 'w' : 'e');
	snprintf(comp, sizeof comp, "%" PRId64, o->compute);
	snprintf(strm, sizeof strm, "%" PRId64, o->stream);
	snprintf(vec, sizeof vec, "%" PRId64, o->vectors);
	PlanKV kv[48];
	int nkv = 0;
	kv[nkv++] = (PlanKV){ "slice", slice };
	kv[nkv++] = (PlanKV){ "compute", comp };
	kv[nkv++] = (PlanKV){ "stream", strm };
	kv[nkv++] = (PlanKV){ "vectors", vec };
	/* what bounds it: fixed latencies, the MXM/VXM work, or streaming operands through SRAM */
	int64_t fixed = o->dur - (o->compute > o->stream ? o->compute : o->stream);
	const char *bound = fixed >= o->compute && fixed >= o->stream ? "latency" :
			    o->compute >= o->stream ? "compute" : "memory";
	kv[nkv++] = (PlanKV){ "bound", (char *)bound };
	char why[96];
	snprintf(why, sizeof why, "%s slice, %s hemisphere, cycles %" PRId64 "-%" PRId64 "%s",
		 lpu_kind_names[o->kind], o->unit % LPU_HEMIS ? "west" : "east", o->cycle, o->cycle + o->dur,
		 o->critical ? ", critical path" : "");
	kv[nkv++] = (PlanKV){ "placement_reason", why };
	if (o->critical)
		kv[nkv++] = (PlanKV){ "critical", "yes" };
	for (int k = 0; k < nsum && nkv < 48; k++)
		kv[nkv++] = sum[k];
	PlanInstr in;
	plan_instr_init(&in, PI_KERNEL);
	in.op = (RtOp)fn->n->op;
	in.in = ins, in.nin = fn->nin;
	in.out = outs, in.nout = fn->nout;
	in.attrs = fn->n->attrs;
	in.opts.mma_in = is_matrix_float(fn, &w->f) ? w->a.mma : DT_INVALID;
	double fl = ir_node_flops(fn->n);
	in.flops = fl > 0 ? fl : 0;
	in.node = fn->nout ? w->p->buffers[outs[0]].name : NULL;
	in.unit = w->unit0 + o->unit;
	in.cycle = o->cycle;
	in.dur = o->dur;
	in.tile = kv, in.ntile = nkv;
	return plan_add_instr(w->p, w->stream, &in, w->e) < 0 ? -1 : 0;
}

/* The schedule summary carried by the first instruction. */
static int summary(Lw *w, char txt[][48], PlanKV *kv)
{
	static const char *const names[LK_COUNT * LPU_HEMIS] = {
		"util.mxm.e", "util.mxm.w", "util.vxm.e", "util.vxm.w", "util.sxm.e", "util.sxm.w" };
	int n = 0;
	int64_t len = w->s.length > 0 ? w->s.length : 1;
	snprintf(txt[n], 48, "%" PRId64, w->s.length), kv[n] = (PlanKV){ "schedule_cycles", txt[n] }, n++;
	snprintf(txt[n], 48, "%.9g", (double)w->s.length / w->a.clock), kv[n] = (PlanKV){ "schedule_s", txt[n] }, n++;
	/* one step per schedule: for a decode step that is tokens/s per user */
	snprintf(txt[n], 48, "%.6g", w->a.clock / (double)len), kv[n] = (PlanKV){ "steps_per_s", txt[n] }, n++;
	for (int u = 0; u < LK_COUNT * LPU_HEMIS; u++)
		snprintf(txt[n], 48, "%.4f", (double)w->s.busy[u] / (double)len), kv[n] = (PlanKV){ (char *)names[u], txt[n] }, n++;
	snprintf(txt[n], 48, "%d", w->s.ncritical), kv[n] = (PlanKV){ "critical_ops", txt[n] }, n++;
	snprintf(txt[n], 48, "%d", 1), kv[n] = (PlanKV){ "chips", txt[n] }, n++;
	return n;
}

static int capacity(Lw *w, int64_t *off)
{
	int64_t need = place_all(w, storage_size, off);
	if (need < 0)
		return rt_errorf(w->e, RT_ENOMEM, "out of memory planning SRAM");
	if (need > w->a.sram)
		return rt_errorf(w->e, RT_EUSER, "aicc: error: the model needs %" PRId64 " bytes of SRAM (weights, "
				 "activations and KV cache at %s), but one %s chip has %" PRId64 " bytes and the LPU has no "
				 "HBM: at least %" PRId64 " chips are needed, and this target places a model on one chip",
				 need, rt_dtype_name(w->a.mma), w->a.d->name, w->a.sram, (need + w->a.sram - 1) / w->a.sram);
	return 0;
}

static int lower(Lw *w)
{
	const Machine *m = w->in->machine->m;
	const Device *d = machine_first(m, DEV_LPU);
	if (!d)
		return rt_errorf(w->e, RT_EUSER, "aicc: error: machine '%s' has no LPU device", m->name);
	if (lpu_arch(d, &w->a, w->e) < 0 || tgt_flatten(w->in->g, &w->f, w->e) < 0 ||
	    lpu_schedule(&w->a, &w->f, &w->s, w->e) < 0)
		return -1;
	int n = w->f.nvals + 1;
	w->buf = malloc(sizeof(int) * (size_t)n);
	w->start = malloc(sizeof(int64_t) * (size_t)n);
	w->end = malloc(sizeof(int64_t) * (size_t)n);
	int64_t *off = malloc(sizeof(int64_t) * (size_t)n);
	int rc = w->buf && w->start && w->end && off ? 0 : rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	if (rc == 0) {
		live_ranges(w);
		rc = capacity(w, off);
	}
	const Plan *desc = w->in->machine->desc;
	if (rc == 0 && (!(w->p = plan_new("lpu", desc->machine, desc->machine_hash, w->e)) ||
			tgt_machine_copy(w->in->machine, w->p, w->e) < 0 ||
			plan_set_source(w->p, w->in->model, w->in->binds, "f32", w->e) < 0))
		rc = -1;
	if (rc == 0) {
		int dev = plan_find_device(w->p, d->id);
		char sname[128];
		snprintf(sname, sizeof sname, "%s.%s", d->id, dev_mem_kind(d, MEM_SRAM)->name);
		w->space = plan_find_space(w->p, sname);
		w->unit0 = w->p->nunits;
		for (int u = 0; u < LK_COUNT * LPU_HEMIS && rc == 0; u++) {
			char un[128];
			snprintf(un, sizeof un, "%s.%s.%c", d->id, lpu_kind_names[u / LPU_HEMIS], u % LPU_HEMIS ? 'w' : 'e');
			PlanUnit pu = { .name = un, .kind = (char *)lpu_kind_names[u / LPU_HEMIS], .device = dev };
			if (plan_add_unit(w->p, &pu, w->e) < 0)
				rc = -1;
		}
		if (rc == 0 && (dev < 0 || w->space < 0))
			rc = rt_errorf(w->e, RT_EINTERNAL, "aicc: internal error: LPU device or SRAM space missing");
		if (rc == 0 && (w->stream = plan_add_stream(w->p, "lpu0", dev, w->e)) < 0)
			rc = -1;
	}
	if (rc == 0) {
		int64_t top = place_all(w, plan_size, off);
		if (top < 0)
			rc = rt_errorf(w->e, RT_ENOMEM, "out of memory planning SRAM");
		else if (top > w->p->spaces[w->space].capacity)
			rc = rt_errorf(w->e, RT_EUSER, "aicc: error: the plan's f32 buffers need %" PRId64 " bytes, more than "
				       "the chip's %" PRId64 " bytes of SRAM", top, w->p->spaces[w->space].capacity);
	}
	if (rc == 0)
		rc = add_buffers(w, off);
	for (int i = 0; rc == 0 && i < w->f.nparams; i++)
		rc = tgt_add_const(w->p, w->buf[w->f.params[i]], &w->f.vals[w->f.params[i]], w->in->m->dir, w->e);
	char txt[16][48];
	PlanKV sum[16];
	int nsum = rc == 0 ? summary(w, txt, sum) : 0;
	for (int j = 0; rc == 0 && j < w->s.nops; j++)
		rc = add_instr(w, j, sum, j == 0 ? nsum : 0);
	for (int i = 0; rc == 0 && i < w->f.ninputs; i++)
		if (plan_add_input(w->p, w->p->buffers[w->buf[w->f.inputs[i]]].name, w->buf[w->f.inputs[i]], w->e) < 0)
			rc = -1;
	for (int i = 0; rc == 0 && i < w->f.noutputs; i++) {
		char name[256];
		tgt_plan_name(name, sizeof name, w->in->g->outputs[i]->name);
		if (plan_add_output(w->p, name, w->buf[w->f.outputs[i]], w->e) < 0)
			rc = -1;
	}
	free(off);
	return rc;
}

Plan *lpu_lower(const TgtInput *in, RtError *e)
{
	Lw w = { .in = in, .e = e };
	if (in->precision && strcmp(in->precision, "f32")) {
		rt_errorf(e, RT_EUSER, "aicc: error: the lpu target computes at the machine's matmul format "
			  "(f16 on v1, fp8 on the Groq 3 part), not '%s'", in->precision);
		return NULL;
	}
	int rc = lower(&w);
	if (rc == 0 && plan_verify(w.p, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rc = rt_errorf(e, RT_EINTERNAL, "aicc: internal error: the lpu plan fails verification: %s", msg);
	}
	tgt_flat_free(&w.f);
	lpu_sched_free(&w.s);
	free(w.buf), free(w.start), free(w.end);
	if (rc < 0) {
		plan_free(w.p);
		return NULL;
	}
	return w.p;
}
