/* targets/lpu/lower.c: the lpu target (Groq TSP v1, Groq 3 LPU): graph -> cycle-stamped plan.
 *
 * Calls are flattened (targets/flatten.c); chips.c places every node on a chip (one chip, the
 * graph's @device annotations, or a greedy fill of as many chips as the weights need) and builds
 * the program: kernels on functional slice groups, column shards of matrices too large for one
 * chip, and chip-to-chip copies.  schedule.c gives each op its issue cycle and occupancy on one
 * global clock.  The plan has one stream per chip in issue-cycle order (a copy sits on the
 * receiving chip's stream, after a wait for the event its source's producer records), so the
 * interpreter executes in a valid order, the verifier checks units, link directions and
 * operand-ready (arrival) cycles, and the timing engine (cost.c) reproduces the schedule length
 * exactly.  One chip keeps the single-device names (device `lpu`, space `lpu.sram`, units
 * `lpu.mxm.e`, stream `lpu0`); several chips are devices `lpuK` with spaces `lpuK.sram`, units
 * `lpuK.mxm.e` and streams `lpuK`, joined by links `c2c.lpuA-lpuB` (one per pair used).
 * Memory: the LPU has no HBM (hardware.md §2.15, §3.6): weights, activations and KV cache all
 * live in on-chip SRAM.  Capacity is checked per chip at the storage width (floats at the matmul
 * format: 2 bytes f16 on v1, 1 byte fp8 on the Groq 3 part); a chip that overflows is a clear
 * error with required and available bytes.  Plan buffers hold f32 activations for the
 * interpreter (the MXM operand rounding is RtExecOpts.mma_in) and are placed first-fit by
 * cycle-exact live ranges per chip: a region is reused only after the last reader of its
 * previous tenant has finished.
 * Schedule facts ride as `t.*` attributes: per instruction t.slice (or t.link), t.compute,
 * t.stream, t.vectors, t.critical; on the first instruction the schedule summary (cycles,
 * seconds, steps/s, utilisation per functional unit and of the C2C links, chips, the critical
 * path); on each chip's first instruction its SRAM bytes and unit utilisation. */
#include "targets/lpu/lpu.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN LPU_WORD

typedef struct Lw {
	const TgtInput *in;
	LpuArch a;
	LpuProg pg;
	Plan *p;
	Flat f;
	int *buf;                /* per LpuVal: plan buffer */
	int *ev;                 /* per LpuVal: event recorded after its producer, or -1 */
	int *space, *stream, *unit0, *plink;   /* per chip (plink: per program link) */
	int64_t *start, *end;    /* per LpuVal: cycles of its live range (-1 / INT64_MAX: whole run) */
	int64_t *sram;           /* per chip: SRAM bytes at storage width */
	int64_t (*size)(const struct Lw *, int);
	unsigned char *exact;    /* per flat value: 1 when held in its model dtype (tgt_exact_values) */
	RtError *e;
} Lw;

static int64_t numel(const LpuVal *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= v->dims[i];
	return n;
}

static int is_param(const Flat *f, int v) { return f->vals[v].def < 0 && f->vals[v].v && f->vals[v].v->kind == V_PARAM; }

/* Plan dtype: float parameters (weights), graph inputs (KV cache) and layout ops of them are
 * stored at the matmul format, as in SRAM (lpu_weight_like), except constants the format cannot
 * hold (lpu_wide_values: f32); float activations are f32 in the plan (the interpreter's values;
 * MXM operand rounding is mma_in). */
static DType plan_dtype(const Lw *w, int flat)
{
	const FlatVal *v = &w->f.vals[flat];
	if (!rt_dtype_isfloat(v->dt) || (w->exact && w->exact[flat]) ||
	    (v->def >= 0 && tgt_explicit_conversion(w->f.nodes[v->def].n->op)))
		return v->dt;      /* the model's own conversions and what they read (targets/exact.c) */
	if (v->dt == DT_F64 && w->a.f64_slow > 0)
		return DT_F64;     /* binary64 in software on the vector ALUs (no f64 format) */
	if (is_param(&w->f, flat) && !v->v->init)
		return DT_F32;
	return lpu_at_mma(&w->pg, &w->f, flat) ? w->a.mma : DT_F32;
}

static int64_t storage_size(const Lw *w, int v) { return lpu_val_bytes(&w->a, &w->f, &w->pg.vals[v]); }
static int64_t plan_size(const Lw *w, int v)
{
	return rt_dtype_bytes(plan_dtype(w, w->pg.vals[v].flat), numel(&w->pg.vals[v]));
}

/* Live ranges in cycles: from the producer's issue to the end of the last reader. */
static void live_ranges(Lw *w)
{
	const LpuProg *pg = &w->pg;
	for (int v = 0; v < pg->nvals; v++) {
		const LpuVal *lv = &pg->vals[v];
		const LpuOp *d = lv->def >= 0 ? &pg->ops[lv->def] : NULL;
		w->start[v] = d ? d->cycle : -1;
		w->end[v] = d ? d->cycle + d->dur : INT64_MAX;
	}
	for (int i = 0; i < w->f.noutputs; i++)
		if (pg->home[w->f.outputs[i]] >= 0)
			w->end[pg->home[w->f.outputs[i]]] = INT64_MAX;
	for (int i = 0; i < pg->nops; i++) {
		const LpuOp *o = &pg->ops[i];
		const int *in = lpu_ins(pg, o);
		for (int k = 0; k < o->nin; k++)
			if (in[k] >= 0 && w->end[in[k]] != INT64_MAX && o->cycle + o->dur > w->end[in[k]])
				w->end[in[k]] = o->cycle + o->dur;
	}
}

static const Lw *sort_w;
static int by_start(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	const LpuVal *va = &sort_w->pg.vals[a], *vb = &sort_w->pg.vals[b];
	if (va->chip != vb->chip)
		return va->chip < vb->chip ? -1 : 1;
	if (sort_w->start[a] != sort_w->start[b])
		return sort_w->start[a] < sort_w->start[b] ? -1 : 1;
	if (va->flat != vb->flat)
		return va->flat < vb->flat ? -1 : 1;
	return a - b;
}

/* First-fit placement of every value by live range on its chip, w->size(v) bytes each.  Fills
 * off[] and top[chip] (the high-water mark); returns 0, or -1 when out of memory. */
static int place_all(Lw *w, int64_t *off, int64_t *top)
{
	int n = w->pg.nvals;
	int *idx = malloc(sizeof(int) * (size_t)(n + 1)), *live = malloc(sizeof(int) * (size_t)(n + 1));
	if (!idx || !live) {
		free(idx), free(live);
		return -1;
	}
	for (int v = 0; v < n; v++)
		idx[v] = v;
	sort_w = w;
	qsort(idx, (size_t)n, sizeof *idx, by_start);
	for (int c = 0; c < w->pg.nchips; c++)
		top[c] = 0;
	int nlive = 0, chip = -1;
	for (int i = 0; i < n; i++) {
		int v = idx[i];
		if (w->pg.vals[v].chip != chip)
			chip = w->pg.vals[v].chip, nlive = 0;
		int64_t sz = w->size(w, v), o = 0;
		int k = 0;
		for (int j = 0; j < nlive; j++)          /* drop tenants whose last reader has ended */
			if (w->end[live[j]] > w->start[v])
				live[k++] = live[j];
		nlive = k;
		for (int moved = 1; moved;) {            /* lowest offset clear of every live tenant */
			moved = 0;
			for (int j = 0; j < nlive; j++) {
				int64_t lo = off[live[j]], hi = lo + w->size(w, live[j]);
				if (o < hi && lo < o + sz && sz > 0 && hi > lo) {
					o = (hi + ALIGN - 1) / ALIGN * ALIGN;
					moved = 1;
				}
			}
		}
		off[v] = o;
		live[nlive++] = v;
		if (o + sz > top[chip])
			top[chip] = o + sz;
	}
	free(idx), free(live);
	return 0;
}

/* The plan name of value v: its flat name; a shard adds ".cols<off>" (".rows<off>" for a row
 * slice), a value on another chip than its first "@lpuK". */
static int add_buffers(Lw *w, int64_t *off)
{
	const LpuProg *pg = &w->pg;
	for (int fv = 0; fv < w->f.nvals; fv++)
		for (int v = pg->first[fv]; v >= 0; v = pg->vals[v].next) {
			const LpuVal *lv = &pg->vals[v];
			char raw[512], name[512];
			int o = snprintf(raw, sizeof raw, "%s", w->f.vals[fv].name);
			if (lv->shard_axis >= 0 && o < 400)   /* a column, row or other slice */
				o += snprintf(raw + o, sizeof raw - (size_t)o, ".%s%" PRId64, lv->shard_axis == lv->rank - 1 ?
					      "cols" : lv->shard_axis == 0 ? "rows" : "part", lv->shard_off);
			if (v != pg->first[fv] && o < 400)
				snprintf(raw + o, sizeof raw - (size_t)o, "@%s%d", w->a.d->id, lv->chip);
			tgt_plan_name(name, sizeof name, raw);
			if (strcmp(name, raw) && plan_find_buffer(w->p, name) >= 0) {
				size_t n = strlen(name);
				snprintf(name + (n > 200 ? 200 : n), 56, ".%d", v);
			}
			w->buf[v] = plan_add_buffer(w->p, name, w->space[lv->chip], off[v], plan_dtype(w, fv), lv->rank,
						    lv->dims, w->e);
			if (w->buf[v] < 0)
				return -1;
		}
	return 0;
}

/* Constants: every stored parameter (a shard: the slice of its initialiser it holds,
 * PlanConst.shard_*). */
static int add_consts(Lw *w)
{
	const LpuProg *pg = &w->pg;
	for (int fv = 0; fv < w->f.nvals; fv++) {
		if (!is_param(&w->f, fv))
			continue;
		for (int v = pg->first[fv]; v >= 0; v = pg->vals[v].next) {
			const LpuVal *lv = &pg->vals[v];
			if (tgt_add_const(w->p, w->buf[v], &w->f.vals[fv], w->in->m->dir, w->e) < 0)
				return -1;
			PlanConst *c = &w->p->consts[w->p->nconsts - 1];
			if (lv->shard_axis >= 0 && c->kind != PINIT_UNBOUND) {   /* an unbound shard is just unbound */
				c->shard_axis = lv->shard_axis, c->shard_off = lv->shard_off, c->shard_full = lv->shard_full;
			}
		}
	}
	return 0;
}

static int is_matrix_float(const LpuOp *o, const Flat *f)
{
	if (o->what == LW_COPY || o->what == LW_CONCAT)
		return 0;
	const FlatNode *fn = &f->nodes[o->node];
	return ir_ops[fn->n->op].cls == OC_matrix && fn->nin > 0 && fn->in[0] >= 0 && rt_dtype_isfloat(f->vals[fn->in[0]].dt);
}

/* Appends a record of every output of op o that a copy on another chip waits for. */
static int records(Lw *w, const LpuOp *o, int stream)
{
	const int *out = lpu_outs(&w->pg, o);
	for (int k = 0; k < o->nout; k++)
		if (w->ev[out[k]] >= 0) {
			PlanInstr r;
			plan_instr_init(&r, PI_RECORD);
			r.event = w->ev[out[k]];
			if (plan_add_instr(w->p, stream, &r, w->e) < 0)
				return -1;
		}
	return 0;
}

/* A chip-to-chip copy: on the receiving chip's stream, after a wait for its source. */
static int add_copy(Lw *w, const LpuOp *o, PlanKV *kv, int nkv)
{
	int src = lpu_ins(&w->pg, o)[0], dst = lpu_outs(&w->pg, o)[0];
	int stream = w->stream[o->chip];
	if (w->pg.vals[src].def >= 0) {
		PlanInstr wt;
		plan_instr_init(&wt, PI_WAIT);
		wt.event = w->ev[src];
		if (plan_add_instr(w->p, stream, &wt, w->e) < 0)
			return -1;
	}
	char link[64], bytes[32], why[160], util[32];
	int from = w->pg.vals[src].chip;
	const LpuLink *l = &w->pg.links[o->link];
	int64_t busy = w->pg.busy[w->pg.nchips * LPU_UNITS + 2 * o->link + (from == l->a ? 0 : 1)];
	/* this link direction's busy cycles / schedule length */
	tgt_fmt(util, sizeof util, "%.4f", (double)busy / (double)(w->pg.length > 0 ? w->pg.length : 1));
	tgt_fmt(link, sizeof link, "%s%d->%s%d", w->a.d->id, from, w->a.d->id, o->chip);
	tgt_fmt(bytes, sizeof bytes, "%" PRId64, storage_size(w, src));
	tgt_fmt(why, sizeof why, "C2C %s%d -> %s%d, cycles %" PRId64 "-%" PRId64 "%s", w->a.d->id, from, w->a.d->id,
		 o->chip, o->cycle, o->cycle + o->dur, o->critical ? ", critical path" : "");
	PlanKV t[40];
	int n = 0;
	t[n++] = (PlanKV){ "link", link };
	t[n++] = (PlanKV){ "bytes", bytes };
	t[n++] = (PlanKV){ "link_util", util };
	t[n++] = (PlanKV){ "placement_reason", why };
	if (o->critical)
		t[n++] = (PlanKV){ "critical", "yes" };
	for (int k = 0; k < nkv && n < 40; k++)
		t[n++] = kv[k];
	PlanInstr in;
	plan_instr_init(&in, PI_COPY);
	int ib = w->buf[src], ob = w->buf[dst];
	in.in = &ib, in.nin = 1;
	in.out = &ob, in.nout = 1;
	in.link = w->plink[o->link];
	in.cycle = o->cycle;
	in.dur = o->dur;
	in.node = w->p->buffers[ob].name;
	in.tile = t, in.ntile = n;
	if (plan_add_instr(w->p, stream, &in, w->e) < 0)
		return -1;
	return records(w, o, stream);
}

static int add_instr(Lw *w, int j, PlanKV *sum, int nsum)
{
	const LpuOp *o = &w->pg.ops[w->pg.order[j]];
	if (o->what == LW_COPY)
		return add_copy(w, o, sum, nsum);
	const FlatNode *fn = &w->f.nodes[o->node];
	const int *oin = lpu_ins(&w->pg, o), *oout = lpu_outs(&w->pg, o);
	int ins[TGT_MAX_OPERANDS * 4], outs[TGT_MAX_OPERANDS];
	for (int k = 0; k < o->nin; k++)
		ins[k] = oin[k] >= 0 ? w->buf[oin[k]] : -1;
	for (int k = 0; k < o->nout; k++)
		outs[k] = w->buf[oout[k]];
	char slice[16], comp[32], strm[32], vec[32];
	tgt_fmt(slice, sizeof slice, "%s.%c", lpu_kind_names[o->kind], o->unit % LPU_HEMIS ? 'w' : 'e');
	tgt_fmt(comp, sizeof comp, "%" PRId64, o->compute);
	tgt_fmt(strm, sizeof strm, "%" PRId64, o->stream);
	tgt_fmt(vec, sizeof vec, "%" PRId64, o->vectors);
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
	char attn[96];
	if (o->qk || o->softmax || o->pv) {   /* Attention in its parts (schedule.c lpu_attn) */
		tgt_fmt(attn, sizeof attn, "qk=%" PRId64 " softmax=%" PRId64 " pv=%" PRId64, o->qk, o->softmax, o->pv);
		kv[nkv++] = (PlanKV){ "attn_cycles", attn };
	}
	char why[160];
	tgt_fmt(why, sizeof why, "%s slice, %s hemisphere, cycles %" PRId64 "-%" PRId64 "%s%s",
		 lpu_kind_names[o->kind], o->unit % LPU_HEMIS ? "west" : "east", o->cycle, o->cycle + o->dur,
		 o->what == LW_SHARD ? ", column shard of a matrix split over chips" :
		 o->what == LW_CONCAT ? ", joins the column shards" : "", o->critical ? ", critical path" : "");
	kv[nkv++] = (PlanKV){ "placement_reason", why };
	if (o->critical)
		kv[nkv++] = (PlanKV){ "critical", "yes" };
	for (int k = 0; k < nsum && nkv < 48; k++)
		kv[nkv++] = sum[k];
	Attr axis = { .name = "axis", .kind = ATTR_INT, .i = w->pg.vals[oout[0]].rank - 1 };
	PlanInstr in;
	plan_instr_init(&in, PI_KERNEL);
	in.op = o->what == LW_CONCAT ? RT_OP_Concat : (RtOp)fn->n->op;
	in.in = ins, in.nin = o->nin;
	in.out = outs, in.nout = o->nout;
	in.attrs = o->what == LW_CONCAT ? (Attrs){ 1, &axis } : fn->n->attrs;
	in.opts.mma_in = is_matrix_float(o, &w->f) ? w->a.mma : DT_INVALID;
	in.flops = o->flops;
	in.node = o->nout ? w->p->buffers[outs[0]].name : NULL;
	in.unit = w->unit0[o->chip] + o->unit % LPU_UNITS;
	in.cycle = o->cycle;
	in.dur = o->dur;
	in.tile = kv, in.ntile = nkv;
	if (plan_add_instr(w->p, w->stream[o->chip], &in, w->e) < 0)
		return -1;
	return records(w, o, w->stream[o->chip]);
}

#define SUMMAX 28
/* The schedule summary carried by the first instruction. */
static int summary(Lw *w, char txt[][48], PlanKV *kv)
{
	static const char *const names[LPU_UNITS] = {
		"util.mxm.e", "util.mxm.w", "util.vxm.e", "util.vxm.w", "util.sxm.e", "util.sxm.w" };
	const LpuProg *pg = &w->pg;
	int n = 0;
	int64_t len = pg->length > 0 ? pg->length : 1;
	snprintf(txt[n], 48, "%" PRId64, pg->length), kv[n] = (PlanKV){ "schedule_cycles", txt[n] }, n++;
	snprintf(txt[n], 48, "%.9g", (double)pg->length / w->a.clock), kv[n] = (PlanKV){ "schedule_s", txt[n] }, n++;
	/* one step per schedule: for a decode step that is tokens/s per user */
	snprintf(txt[n], 48, "%.6g", w->a.clock / (double)len), kv[n] = (PlanKV){ "steps_per_s", txt[n] }, n++;
	for (int u = 0; u < LPU_UNITS; u++) {   /* busy cycles / schedule length, averaged over the chips */
		int64_t b = 0;
		for (int c = 0; c < pg->nchips; c++)
			b += pg->busy[c * LPU_UNITS + u];
		snprintf(txt[n], 48, "%.4f", (double)b / (double)len / pg->nchips), kv[n] = (PlanKV){ (char *)names[u], txt[n] }, n++;
	}
	snprintf(txt[n], 48, "%d", pg->ncritical), kv[n] = (PlanKV){ "critical_ops", txt[n] }, n++;
	snprintf(txt[n], 48, "%d", pg->nchips), kv[n] = (PlanKV){ "chips", txt[n] }, n++;
	int64_t smax = 0, stot = 0;
	for (int c = 0; c < pg->nchips; c++)
		smax = w->sram[c] > smax ? w->sram[c] : smax, stot += w->sram[c];
	snprintf(txt[n], 48, "%" PRId64, smax), kv[n] = (PlanKV){ "sram_max", txt[n] }, n++;
	snprintf(txt[n], 48, "%" PRId64, stot), kv[n] = (PlanKV){ "sram_total", txt[n] }, n++;
	int64_t ck[LK_COUNT] = { 0 };   /* critical-path cycles per slice kind */
	for (int i = 0; i < pg->nops; i++)
		if (pg->ops[i].critical && pg->ops[i].what != LW_COPY)
			ck[pg->ops[i].kind] += pg->ops[i].dur;
	static const char *const cnames[LK_COUNT] = { "critical_cycles.mxm", "critical_cycles.vxm", "critical_cycles.sxm" };
	for (int k = 0; k < LK_COUNT; k++)
		snprintf(txt[n], 48, "%" PRId64, ck[k]), kv[n] = (PlanKV){ (char *)cnames[k], txt[n] }, n++;
	if (pg->nlinks > 0) {
		int64_t lb = 0, cc = 0, ccyc = 0, ncopy = 0;
		int used = 0;
		for (int r = 0; r < 2 * pg->nlinks; r++)
			lb += pg->busy[pg->nchips * LPU_UNITS + r], used += pg->busy[pg->nchips * LPU_UNITS + r] > 0;
		for (int i = 0; i < pg->nops; i++)
			if (pg->ops[i].what == LW_COPY) {
				ncopy++;
				if (pg->ops[i].critical)
					cc++, ccyc += pg->ops[i].dur;
			}
		snprintf(txt[n], 48, "%" PRId64, ncopy), kv[n] = (PlanKV){ "c2c_copies", txt[n] }, n++;
		snprintf(txt[n], 48, "%d", used), kv[n] = (PlanKV){ "c2c_directions", txt[n] }, n++;
		/* busy cycles / schedule length, averaged over the link directions used */
		snprintf(txt[n], 48, "%.4f", (double)lb / (double)len / (used ? used : 1)), kv[n] = (PlanKV){ "util.c2c", txt[n] }, n++;
		snprintf(txt[n], 48, "%" PRId64, cc), kv[n] = (PlanKV){ "critical_c2c", txt[n] }, n++;
		snprintf(txt[n], 48, "%" PRId64, ccyc), kv[n] = (PlanKV){ "critical_c2c_cycles", txt[n] }, n++;
	}
	return n;
}

/* Per chip, on its first instruction: SRAM bytes and unit utilisation (both hemispheres). */
static int chip_summary(Lw *w, int c, char txt[][48], PlanKV *kv)
{
	static const char *const names[LK_COUNT] = { "chip_util.mxm", "chip_util.vxm", "chip_util.sxm" };
	int n = 0;
	int64_t len = w->pg.length > 0 ? w->pg.length : 1;
	snprintf(txt[n], 48, "%" PRId64, w->sram[c]), kv[n] = (PlanKV){ "chip_sram", txt[n] }, n++;
	for (int k = 0; k < LK_COUNT; k++) {
		int64_t b = w->pg.busy[c * LPU_UNITS + k * LPU_HEMIS] + w->pg.busy[c * LPU_UNITS + k * LPU_HEMIS + 1];
		snprintf(txt[n], 48, "%.4f", (double)b / (double)len / LPU_HEMIS), kv[n] = (PlanKV){ (char *)names[k], txt[n] }, n++;
	}
	return n;
}

static int capacity(Lw *w, int64_t *off)
{
	w->size = storage_size;
	if (place_all(w, off, w->sram) < 0)
		return rt_errorf(w->e, RT_ENOMEM, "out of memory planning SRAM");
	for (int c = 0; c < w->pg.nchips; c++) {
		int64_t need = w->sram[c];
		if (need <= w->a.sram)
			continue;
		char nb[32], hb[32];
		rt_si_str((double)need, "B", nb, sizeof nb);
		rt_si_str((double)w->a.sram, "B", hb, sizeof hb);
		char fm[128];
		lpu_formats(&w->a, fm, sizeof fm);
		if (w->pg.nchips == 1) {
			int64_t chips = (need + w->a.sram - 1) / w->a.sram;
			char alt[512];
			return rt_errorf(w->e, RT_EUSER, "aicc: error: the model needs %s of SRAM (%s), but one "
					 "%s chip has %s and the LPU has no HBM: at least %" PRId64 " chips are needed, "
					 "and machine '%s' has %d%s", nb, fm, w->a.d->name, hb, chips, w->a.machine,
					 w->a.chips, lpu_more_chips(&w->a, chips, alt, sizeof alt));
		}
		return rt_errorf(w->e, RT_EUSER, "aicc: error: chip %s%d needs %s of SRAM (%s) but has %s",
				 w->a.d->id, c, nb, fm, hb);
	}
	return 0;
}

/* Plan devices, spaces, units and streams: one chip keeps the machine's entities; several get
 * one device per chip, copied from the machine's LPU device, and one link per pair used. */
static int entities(Lw *w)
{
	const Plan *desc = w->in->machine->desc;
	const Device *d = w->a.d;
	int nc = w->pg.nchips;
	const char *mem = dev_mem_kind(d, MEM_SRAM)->name;
	int ddesc = plan_find_device(desc, d->id);
	if (ddesc < 0)
		return rt_errorf(w->e, RT_EINTERNAL, "aicc: internal error: LPU device missing from the machine");
	if (nc == 1 && tgt_machine_copy(w->in->machine, w->p, w->e) < 0)
		return -1;
	for (int c = 0; c < nc; c++) {
		char name[128], sname[160];
		snprintf(name, sizeof name, nc == 1 ? "%s" : "%s%d", d->id, c);
		int dev = nc == 1 ? plan_find_device(w->p, d->id) : -1;
		if (nc > 1) {
			PlanDevice pd = desc->devices[ddesc];
			pd.name = name;
			PlanSpace ps = { .name = sname, .capacity = w->a.sram };
			snprintf(sname, sizeof sname, "%s.%s", name, mem);
			char dsname[160];
			snprintf(dsname, sizeof dsname, "%s.%s", d->id, mem);
			int sd = plan_find_space(desc, dsname);
			ps.bandwidth = sd >= 0 ? desc->spaces[sd].bandwidth : 1;
			if ((dev = plan_add_device(w->p, &pd, w->e)) < 0)
				return -1;
			ps.device = dev;
			if ((w->space[c] = plan_add_space(w->p, &ps, w->e)) < 0)
				return -1;
		} else {   /* one chip: the machine's own space (a search per chip was quadratic in chips) */
			snprintf(sname, sizeof sname, "%s.%s", name, mem);
			w->space[c] = plan_find_space(w->p, sname);
		}
		w->unit0[c] = w->p->nunits;
		for (int u = 0; u < LPU_UNITS; u++) {
			char un[160];
			snprintf(un, sizeof un, "%s.%s.%c", name, lpu_kind_names[u / LPU_HEMIS], u % LPU_HEMIS ? 'w' : 'e');
			PlanUnit pu = { .name = un, .kind = (char *)lpu_kind_names[u / LPU_HEMIS], .device = dev };
			if (plan_add_unit(w->p, &pu, w->e) < 0)
				return -1;
		}
		char st[64];
		snprintf(st, sizeof st, "%s%d", d->id, c);
		if (dev < 0 || w->space[c] < 0)
			return rt_errorf(w->e, RT_EINTERNAL, "aicc: internal error: LPU device or SRAM space missing");
		if ((w->stream[c] = plan_add_stream(w->p, st, dev, w->e)) < 0)
			return -1;
	}
	for (int l = 0; l < w->pg.nlinks; l++) {
		const LpuLink *k = &w->pg.links[l];
		char name[160];
		snprintf(name, sizeof name, "%s.%s%d-%s%d", w->a.c2c->id, d->id, k->a, d->id, k->b);
		PlanLink pl = { .name = name, .src = w->p->spaces[w->space[k->a]].device,
				.dst = w->p->spaces[w->space[k->b]].device, .bandwidth = link_oneway_bw(w->a.c2c),
				.latency_s = num_has(&w->a.c2c->latency) ? w->a.c2c->latency.v : 0 };
		if ((w->plink[l] = plan_add_link(w->p, &pl, w->e)) < 0)
			return -1;
	}
	return 0;
}

/* Events: one per value a copy reads on another chip after its producer wrote it. */
static int events(Lw *w)
{
	for (int v = 0; v < w->pg.nvals; v++)
		w->ev[v] = -1;
	for (int i = 0; i < w->pg.nops; i++) {
		const LpuOp *o = &w->pg.ops[i];
		int src = o->what == LW_COPY ? lpu_ins(&w->pg, o)[0] : -1;
		if (src < 0 || w->pg.vals[src].def < 0 || w->ev[src] >= 0)
			continue;
		char name[300];
		snprintf(name, sizeof name, "%s.ready", w->p->buffers[w->buf[src]].name);
		if ((w->ev[src] = plan_add_event(w->p, name, w->e)) < 0)
			return -1;
	}
	return 0;
}

static int io(Lw *w)
{
	for (int i = 0; i < w->f.ninputs; i++) {
		int v = w->pg.home[w->f.inputs[i]];
		if (v >= 0 && plan_add_input(w->p, w->p->buffers[w->buf[v]].name, w->buf[v], w->e) < 0)
			return -1;
	}
	for (int i = 0; i < w->f.noutputs; i++) {
		char name[256];
		tgt_plan_name(name, sizeof name, w->in->g->outputs[i]->name);
		int v = w->pg.home[w->f.outputs[i]];
		if (v < 0 || plan_add_output(w->p, name, w->buf[v], w->e) < 0)
			return v < 0 ? rt_errorf(w->e, RT_EINTERNAL, "aicc: internal error: output '%s' not placed", name) : -1;
	}
	return 0;
}

static int emit(Lw *w)
{
	char txt[SUMMAX][48], ctxt[8][48];
	PlanKV sum[SUMMAX], csum[8], all[SUMMAX + 8];
	int nsum = summary(w, txt, sum);
	unsigned char *seen = calloc((size_t)w->pg.nchips + 1, 1);
	int rc = seen ? 0 : rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	for (int j = 0; rc == 0 && j < w->pg.nops; j++) {
		const LpuOp *o = &w->pg.ops[w->pg.order[j]];
		int n = 0;
		for (int k = 0; j == 0 && k < nsum; k++)
			all[n++] = sum[k];
		if (!seen[o->chip]) {
			seen[o->chip] = 1;
			int nc = chip_summary(w, o->chip, ctxt, csum);
			for (int k = 0; k < nc; k++)
				all[n++] = csum[k];
		}
		rc = add_instr(w, j, all, n);
	}
	free(seen);
	return rc;
}

static int lower(Lw *w)
{
	const Machine *m = w->in->machine->m;
	const Device *d = machine_first(m, DEV_LPU);
	if (!d)
		return rt_errorf(w->e, RT_EUSER, "aicc: error: machine '%s' has no LPU device", m->name);
	if (lpu_arch(m, d, &w->a, w->e) < 0 || tgt_flatten(w->in->g, &w->f, w->e) < 0 ||
	    lpu_build(&w->a, &w->f, &w->pg, w->e) < 0 || lpu_schedule(&w->a, &w->f, &w->pg, w->e) < 0)
		return -1;
	size_t n = (size_t)w->pg.nvals + 1, nc = (size_t)w->pg.nchips + 1;
	w->buf = malloc(sizeof(int) * n);
	w->ev = malloc(sizeof(int) * n);
	w->start = malloc(sizeof(int64_t) * n);
	w->end = malloc(sizeof(int64_t) * n);
	w->space = malloc(sizeof(int) * nc);
	w->stream = malloc(sizeof(int) * nc);
	w->unit0 = malloc(sizeof(int) * nc);
	w->sram = malloc(sizeof(int64_t) * nc);
	w->plink = malloc(sizeof(int) * ((size_t)w->pg.nlinks + 1));
	w->exact = tgt_exact_values(&w->f);
	int64_t *off = malloc(sizeof(int64_t) * n), *top = malloc(sizeof(int64_t) * nc);
	int rc = w->buf && w->ev && w->start && w->end && w->space && w->stream && w->unit0 && w->sram && w->plink &&
		 w->exact && off && top ? 0 : rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	if (rc == 0) {
		live_ranges(w);
		rc = capacity(w, off);
	}
	const Plan *desc = w->in->machine->desc;
	if (rc == 0 && (!(w->p = plan_new("lpu", desc->machine, desc->machine_hash, w->e)) ||
			plan_set_source(w->p, w->in->model, w->in->binds, w->in->prec->spec, w->e) < 0 || entities(w) < 0))
		rc = -1;
	if (rc == 0) {
		w->size = plan_size;
		if (place_all(w, off, top) < 0)
			rc = rt_errorf(w->e, RT_ENOMEM, "out of memory planning SRAM");
		for (int c = 0; rc == 0 && c < w->pg.nchips; c++)
			if (top[c] > w->p->spaces[w->space[c]].capacity)
				rc = rt_errorf(w->e, RT_EUSER, "aicc: error: the plan's f32 buffers on %s need %s, "
					       "more than the chip's %s of SRAM", w->p->devices[w->p->spaces[w->space[c]].device].name,
					       rt_si_str((double)top[c], "B", (char[32]){ 0 }, 32),
					       rt_si_str((double)w->p->spaces[w->space[c]].capacity, "B", (char[32]){ 0 }, 32));
	}
	if (rc == 0)
		rc = add_buffers(w, off);
	if (rc == 0)
		rc = add_consts(w);
	if (rc == 0)
		rc = events(w);
	if (rc == 0)
		rc = emit(w);
	if (rc == 0)
		rc = io(w);
	free(off), free(top);
	return rc;
}

Plan *lpu_lower(const TgtInput *in, RtError *e)
{
	Lw w = { .in = in, .e = e };
	int rc = lower(&w);
	if (rc == 0 && plan_verify(w.p, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rc = rt_errorf(e, RT_EINTERNAL, "aicc: internal error: the lpu plan fails verification: %s", msg);
	}
	tgt_flat_free(&w.f);
	lpu_prog_free(&w.pg);
	free(w.buf), free(w.ev), free(w.start), free(w.end);
	free(w.space), free(w.stream), free(w.unit0), free(w.sram), free(w.plink), free(w.exact);
	if (rc < 0) {
		plan_free(w.p);
		return NULL;
	}
	return w.p;
}
