/* targets/wafer/lower.c: the lowering hooks of the spatial targets (wafer, hardwired; contract
 * and model in targets/wafer/wafer.h).  `arrange` runs before devices are placed: it sizes every
 * region's resident state, chooses resident or streamed weights, packs the regions onto wafers
 * in order (each wafer a device instance "wafer<k>" when there are several: the layer pipeline
 * crosses the wafer-to-wafer link as plan copies), and gives each region its share of the
 * wafer.  `kernel` prices one node on its region.  Numerics are the reference's at the policy's
 * 16-bit format: one kernel per node, f32 accumulation. */
#include "targets/wafer/wafer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double numel(const FlatVal *v)
{
	double n = 1;
	for (int i = 0; i < v->rank; i++)
		n *= (double)v->dims[i];
	return n;
}

/* The plan dtype of v: the policy's 16-bit format for computed floats (f32 under --precision
 * f32), explicit conversions' and discrete values' operands as the graph types them. */
static DType dtype_of(const TgtLower *l, const unsigned char *exact, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt) || (exact && exact[v - l->f.vals]))
		return v->dt;
	if (v->def >= 0) {
		const Node *n = l->f.nodes[v->def].n;
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
	}
	DType m = l->in->prec->word->mma;
	return m == DT_F32 || m == DT_F16 || m == DT_BF16 ? m : DT_BF16;
}

typedef struct WaferCtx { WaferLw w; unsigned char *exact; } WaferCtx;

DType wafer_dtype(const TgtLower *l, const FlatVal *v)
{
	const WaferCtx *c = l->ctx;
	return dtype_of(l, c->exact, v);
}

static double vbytes(const TgtLower *l, const WaferCtx *c, int v)
{
	const FlatVal *fv = &l->f.vals[v];
	return numel(fv) * rt_dtype_bytes(dtype_of(l, c->exact, fv), 1);
}

/* Whether flat value v is a weight: a parameter, or a weight transform of parameters only. */
static int weight_value(const TgtLower *l, int v)
{
	const FlatVal *fv = &l->f.vals[v];
	return fv->def < 0 ? fv->v && fv->v->kind == V_PARAM : tgt_load_value(&l->f, v);
}

/* Whether flat value v is resident state: a weight, or a graph input (the KV cache, the token
 * ids). */
static int state_value(const TgtLower *l, int v)
{
	return v >= 0 && (l->f.vals[v].def < 0 || weight_value(l, v));
}

int wafer_arrange(TgtLower *l)
{
	WaferCtx *c = tgt_lower_state(l, sizeof *c);
	DType fmt = dtype_of(l, NULL, &(FlatVal){ .dt = DT_BF16, .def = -1 });
	/* parameters the 16-bit format cannot hold stay in the model dtype (targets/exact.c) */
	if (!c || !(c->exact = tgt_lower_exact(l, fmt)))
		return -1;
	WaferLw *w = &c->w;
	const Machine *m = l->in->machine->m;
	const Device *d = machine_first(m, l->t->kind);
	int hard = strcmp(l->t->name, "hardwired") == 0;
	if (!d)
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' has no %s device (the %s target needs one: %s)", m->name,
				 devkind_name((DevKind)l->t->kind), l->t->name, hard ? "taalas-hc1" : "cerebras-wse3, cs3-cluster");
	if (hard && hw_check_tapeout(l, d, l->e) < 0)
		return -1;
	const MemSpace *sram = dev_mem_kind(d, MEM_SRAM), *mx = dev_mem(d, "memoryx");
	w->dev = d;
	w->cores = dev_units(d);
	w->peak = dev_peak(d, fmt);
	w->sram_cap = sram ? mem_total_capacity(d, sram) : 0;
	w->sram_bw = sram && num_has(&sram->bandwidth) ? sram->bandwidth.v : 0;
	w->cycle = num_has(&d->clock) && d->clock.v > 0 ? 1 / d->clock.v : 0;
	for (int i = 0; i < d->nengines; i++) {
		if (strcmp(d->engines[i].name, "fabric") != 0)
			continue;
		if (num_has(&d->engines[i].bandwidth))
			/* the aggregate over every core's four links; a cut across the wafer crosses
			 * sqrt(cores) of them */
			w->cut_bw = d->engines[i].bandwidth.v / (4 * w->cores) * sqrt(w->cores);
		if (num_has(&d->engines[i].latency))
			w->hop = d->engines[i].latency.v;   /* one core-to-core hop */
	}
	w->stream_bw = mx && num_has(&mx->bandwidth) ? mx->bandwidth.v : 0;
	w->stream_cap = mx ? mem_total_capacity(d, mx) : 0;
	const Link *lk = machine_link(m, d, d);
	w->link_bw = lk ? link_oneway_bw(lk) : 0;
	w->link_lat = lk && num_has(&lk->latency) ? lk->latency.v : 0;
	if (!(w->peak > 0) || !(w->sram_cap > 0))
		return rt_errorf(l->e, RT_EUSER, "aicc: error: machine '%s' device '%s' lacks %s, which the %s target needs", m->name,
				 d->id, !(w->peak > 0) ? "a matrix peak at the precision's format" : "an sram memory", l->t->name);
	/* regions: the entry graph's own nodes, then each call instance in order of first use */
	int nn = l->f.nnodes;
	int64_t maxinst = 0;
	for (int i = 0; i < nn; i++)
		maxinst = l->f.nodes[i].instance > maxinst ? l->f.nodes[i].instance : maxinst;
	int *of = tgt_lower_alloc(l, (size_t)maxinst + 1, sizeof *of);
	if (!of || !(w->group = tgt_lower_alloc(l, (size_t)nn + 1, sizeof *w->group)))
		return -1;
	for (int64_t k = 0; k <= maxinst; k++)
		of[k] = -1;
	for (int i = 0; i < nn; i++) {
		int64_t k = l->f.nodes[i].instance;
		if (of[k] < 0)
			of[k] = w->ngroups++;
		w->group[i] = of[k];
	}
	if (!(w->wafer = tgt_lower_alloc(l, (size_t)w->ngroups, sizeof *w->wafer)) ||
	    !(w->share = tgt_lower_alloc(l, (size_t)w->ngroups, sizeof *w->share)) ||
	    !(w->state = tgt_lower_alloc(l, (size_t)w->ngroups, sizeof *w->state)))
		return -1;
	/* resident state per region, each value once (at its first reader); the largest live
	 * activations are kept free beside it */
	unsigned char *seen = tgt_lower_alloc(l, (size_t)l->f.nvals + 1, 1);
	if (!seen)
		return -1;
	double reserve = 0;
	for (int i = 0; i < nn; i++) {
		const FlatNode *fn = &l->f.nodes[i];
		for (int k = 0; k < fn->nin; k++) {
			int v = fn->in[k];
			if (v < 0 || seen[v] || !state_value(l, v))
				continue;
			seen[v] = 1;
			int wt = weight_value(l, v);
			if (hard && !wt)
				continue;            /* the silicon's MACs follow its weights */
			w->state[w->group[i]] += hard ? numel(&l->f.vals[v]) : vbytes(l, c, v);
			if (wt)
				w->weights += vbytes(l, c, v);
			else
				w->kv += vbytes(l, c, v);
		}
		for (int k = 0; k < fn->nout; k++) {
			int v = fn->out[k];
			if (v < 0)
				continue;
			if (l->f.vals[v].is_output && !hard)    /* live to the end: the present KV cache */
				w->state[w->group[i]] += vbytes(l, c, v), w->kv += vbytes(l, c, v);
			else
				reserve = fmax(reserve, 2 * vbytes(l, c, v));
		}
	}
	int avail = num_has(&d->count) ? (int)d->count.v : 1;
	w->mode = hard ? WAFER_HARDWIRED : WAFER_RESIDENT;
	w->wafers = 1;
	if (!hard) {
		double used = 0;
		for (int g = 0; g < w->ngroups; g++) {
			if (used > 0 && used + w->state[g] + reserve > w->sram_cap)
				w->wafers++, used = 0;
			w->wafer[g] = w->wafers - 1;
			used += w->state[g];
			if (used + reserve > w->sram_cap)
				w->wafers = avail + 1;   /* one region alone overflows a wafer */
		}
		if (w->wafers > avail) {
			if (!(w->stream_bw > 0))
				return rt_errorf(l->e, RT_EUSER, "aicc: error: the model's weights (%.4g GB) and KV cache (%.4g GB) do not fit "
						 "the SRAM of machine '%s' (%d wafer%s of %.4g GB), which has no external weight memory "
						 "to stream them from (cs3-cluster has MemoryX)", w->weights / 1e9, w->kv / 1e9, m->name,
						 avail, avail > 1 ? "s" : "", w->sram_cap / 1e9);
			if (w->kv + reserve > w->sram_cap)
				return rt_errorf(l->e, RT_EUSER, "aicc: error: the KV cache (%.4g GB) does not fit one wafer's %.4g GB of "
						 "SRAM, even with the weights streamed from MemoryX", w->kv / 1e9, w->sram_cap / 1e9);
			w->mode = WAFER_STREAM;
			w->wafers = 1;
			l->space = "memoryx";     /* the plan's buffers: weights live off the wafer */
		}
	}
	/* shares: each region's part of its wafer, in proportion to its state */
	for (int k = 0; k < w->wafers; k++) {
		double sum = 0;
		int n = 0;
		for (int g = 0; g < w->ngroups; g++)
			if (w->mode == WAFER_STREAM || w->wafer[g] == k)
				sum += w->state[g], n++;
		for (int g = 0; g < w->ngroups; g++)
			if (w->mode == WAFER_STREAM)
				w->share[g] = 1;
			else if (w->wafer[g] == k)
				w->share[g] = sum > 0 ? fmax(w->state[g] / sum, 1.0 / (1 << 20)) : 1.0 / n;
	}
	if (w->wafers > 1)
		for (int i = 0; i < nn; i++) {
			if (l->f.nodes[i].device)
				return rt_errorf(l->e, RT_EUSER, "aicc: error: the %s target places layers on wafers itself; drop the "
						 "@device placements (--tp, --pp)", l->t->name);
			char *name = tgt_lower_alloc(l, 32, 1);
			if (!name)
				return -1;
			snprintf(name, 32, "%s%d", d->id, w->wafer[w->group[i]]);
			l->f.nodes[i].device = name;
		}
	return 0;
}

int wafer_setup(TgtLower *l)
{
	(void)l;
	return 0;
}

int wafer_kernel(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t)
{
	const WaferCtx *c = l->ctx;
	const WaferLw *w = &c->w;
	const FlatNode *fn = &l->f.nodes[node];
	int g = w->group[node];
	double f = w->share[g], act = 0, wts = 0;
	for (int k = 0; k < fn->nin; k++)
		if (fn->in[k] >= 0)
			*(weight_value(l, fn->in[k]) ? &wts : &act) += vbytes(l, c, fn->in[k]);
	double out = 0, cross = 0;
	for (int k = 0; k < fn->nout; k++) {
		int v = fn->out[k];
		if (v < 0)
			continue;
		out += vbytes(l, c, v);
		/* the next region reads it across the fabric cut (another wafer: a plan copy) */
		for (int j = node + 1; j < l->f.nnodes && j <= l->f.vals[v].last; j++) {
			int reads = 0;
			for (int q = 0; q < l->f.nodes[j].nin; q++)
				reads |= l->f.nodes[j].in[q] == v;
			if (reads && w->group[j] != g && w->wafer[w->group[j]] == w->wafer[g]) {
				cross += vbytes(l, c, v);
				break;
			}
		}
	}
	pi->opts.accum_f64 = 0;
	int load = tgt_load_kernel(&l->f, l->gfirst, node);
	/* the cores the kernel occupies: its region's, but no more than its largest operand has
	 * elements (a 4096-element Add cannot spread over 28,000 cores); the region's share of the
	 * peak and of the SRAM bandwidth is the share of the wafer's cores it occupies */
	double region = f * w->cores, nel = 1;
	for (int k = 0; k < fn->nin; k++)
		if (fn->in[k] >= 0)
			nel = fmax(nel, numel(&l->f.vals[fn->in[k]]));
	for (int k = 0; k < fn->nout; k++)
		if (fn->out[k] >= 0)
			nel = fmax(nel, numel(&l->f.vals[fn->out[k]]));
	/* (the hardwired chip's units are its layers' stages, not cores: the share is the region's) */
	double used = w->mode == WAFER_HARDWIRED ? region : fmax(1, fmin(region, nel)), u = used / w->cores;
	double tc = pi->flops / (w->peak * u);
	double ts = w->sram_bw > 0 ? (act + out + (w->mode == WAFER_RESIDENT ? wts : 0)) / (w->sram_bw * u) : 0;
	double tw = w->mode == WAFER_STREAM && wts > 0 ? wts / w->stream_bw : 0;
	double tf = cross > 0 && w->cut_bw > 0 ? cross / w->cut_bw : 0;
	/* the mesh: a kernel whose outputs combine values held across its cores (a contraction, a
	 * normalisation, a reduction, a lookup) broadcasts its input along one side of its patch of
	 * cores and gathers the partial results along the other, 2 x sqrt(cores) hops in sequence;
	 * a value handed to the next region travels sqrt(region) hops to reach it (the cores its
	 * resident state fills, when that is fewer) */
	const OpInfo *oi = &ir_ops[fn->n->op];
	int gathers = fn->n->op == OP_MatMul || fn->n->op == OP_Gemm || fn->n->op == OP_GroupedMatMul ||
		      fn->n->op == OP_Attention || fn->n->op == OP_Embedding || fn->n->op == OP_Gather ||
		      (oi->flags & (F_REDUCE | F_NORM));
	double held = w->state[g] / (w->sram_cap / w->cores);   /* cores its resident state fills */
	double hops = (gathers ? 2 * sqrt(used) : 0) + (cross > 0 ? sqrt(fmax(1, fmin(region, held))) : 0);
	double tl = hops * w->hop;
	double body = fmax(fmax(tc, ts), fmax(tw, w->cycle));   /* at least one core cycle */
	double time = load ? 0 : body + tf + tl;
	const char *bound = tl > body || w->cycle >= fmax(tc, fmax(ts, tw)) ? "latency" : tc >= ts && tc >= tw ? "compute" : ts >= tw ? "memory" : "dma";   /* SRAM; MemoryX stream */
	static const char *const modes[] = { "resident", "stream", "hardwired" };
	tgt_ann_put(t, "kind", "%s", fn->n->op == OP_MatMul || fn->n->op == OP_Gemm || fn->n->op == OP_GroupedMatMul ? "gemm" : fn->n->op == OP_Attention ? "attention" : "memory");
	tgt_ann_put(t, "mode", "%s", modes[w->mode]);
	if (w->wafers > 1)
		tgt_ann_put(t, "wafer", "%d", w->wafer[g]);
	tgt_ann_put(t, "region", "%d: %.4g%% of the %s (%.0f %s), %.4g MB resident", g, 100 * f,
		    w->mode == WAFER_HARDWIRED ? "chip's MACs" : "wafer", f * w->cores, w->dev->units ? w->dev->units[0].name : "units",
		    w->state[g] / 1e6);
	if (load)
		tgt_ann_put(t, "phase", "load");
	tgt_ann_put(t, "compute_us", "%.4g", tc * 1e6);
	tgt_ann_put(t, "sram_us", "%.4g", ts * 1e6);
	if (w->mode == WAFER_STREAM)
		tgt_ann_put(t, "stream_us", "%.4g", tw * 1e6);
	if (tf > 0)
		tgt_ann_put(t, "fabric_us", "%.4g", tf * 1e6);
	if (tl > 0) {
		tgt_ann_put(t, "hops", "%.0f", hops);
		tgt_ann_put(t, "mesh_us", "%.4g", tl * 1e6);
	}
	tgt_ann_put(t, "time_us", "%.4g", time * 1e6);
	if (time > 0) {
		tgt_ann_put(t, "bound", "%s", bound);
		tgt_ann_put(t, "bound_us", "%.4g", fmax(body, tl) * 1e6);
	}
	tgt_ann_put(t, "why", "%s", w->mode == WAFER_HARDWIRED
		    ? "hardwired weights: no weight traffic; the layer's stage has the share of the MACs its weights take"
		    : w->mode == WAFER_STREAM ? "weights streamed from MemoryX layer by layer, overlapped with compute on the whole wafer"
		    : "weights resident in the region's SRAM: a spatial pipeline, one region per layer");
	return 0;
}
