/* runtime/timing.c: cost hooks and the discrete-event timing simulation.
 *
 * Each stream is an in-order queue; each instruction occupies one resource: its unit (kernels,
 * on-device copies) or its link (copies and collectives between devices).  The simulation is a
 * list scheduler over events in time: among the stream heads whose waits are satisfied, the one
 * that can start earliest starts next, at max(its stream's previous end, its resource's free
 * time, the time the events it waits on were recorded); ties go to the lower stream index.  So
 * instructions overlap only where the plan allows it: different streams, different resources.
 * Static instructions (issue cycle given, device clock known) start exactly at cycle / clock.  Durations come
 * from the target's cost hook (rt_cost_register) or the generic roofline of backends.md §0.
 * Also computes FLOP totals, bytes per memory space, busy time per device, unit and link, and
 * peak live bytes per space (plan_liveness over the execution order).  A kernel marked
 * t.phase="load" (a weight transform run once when the model is loaded, docs/plan-format.md)
 * takes no time, FLOP or bytes in the step whatever its cost hook says; its t.load_us adds to
 * the load time. */
#include "runtime/interp.h"
#include "runtime/heap.h"
#include "runtime/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HOOKS 32
static struct { const char *name; RtCostFn fn; } hooks[MAX_HOOKS];
static int nhooks;

void rt_cost_register(const char *name, RtCostFn fn)
{
	for (int i = 0; i < nhooks; i++)
		if (strcmp(hooks[i].name, name) == 0) {
			hooks[i].fn = fn;
			return;
		}
	if (nhooks < MAX_HOOKS)
		hooks[nhooks].name = name, hooks[nhooks++].fn = fn;
}

RtCostFn rt_cost_lookup(const char *name)
{
	for (int i = 0; i < nhooks; i++)
		if (strcmp(hooks[i].name, name) == 0)
			return hooks[i].fn;
	return NULL;
}

void rt_instr_bytes(const Plan *p, const PlanInstr *in, double *bytes)
{
	for (int k = 0; k < in->nin + in->nout; k++) {
		int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
		if (b < 0)
			continue;
		int s = p->buffers[b].space, seen = 0;
		for (int j = 0; j < k && !seen; j++) {   /* each space once */
			int c = j < in->nin ? in->in[j] : in->out[j - in->nin];
			seen = c >= 0 && p->buffers[c].space == s;
		}
		if (seen)
			continue;
		double ops = 0;   /* each operand in the space once */
		for (int j = k; j < in->nin + in->nout; j++) {
			int c = j < in->nin ? in->in[j] : in->out[j - in->nin];
			if (c >= 0 && p->buffers[c].space == s)
				ops += (double)p->buffers[c].size;
		}
		/* and no more than the target's time in the space allows: t.hbm_us (the seconds its
		 * cost model spends on "gpu.hbm") at the space's bandwidth, so an Embedding's table
		 * counts the rows read and a KV cache updated in place the new token, as the timing
		 * does (a kernel that leaves SMs idle spends more time than its bytes need: the
		 * operands bound it then) */
		const char *dot = strrchr(p->spaces[s].name, '.');
		char key[48];
		snprintf(key, sizeof key, "%s_us", dot ? dot + 1 : p->spaces[s].name);
		double us = plan_instr_num(in, key, -1);
		bytes[s] += us >= 0 ? fmin(ops, us * 1e-6 * p->spaces[s].bandwidth) : ops;
	}
	/* A cache no buffer lives in (a GPU's L2, which every load and store passes): the traffic
	 * the target's cost model charged it, t.l2_us at its bandwidth, on the operands' device;
	 * so a kernel explain calls l2-bound moves bytes there in `aicc run` too. */
	double l2 = in->kind == PI_KERNEL ? plan_instr_num(in, "l2_us", 0) : 0;
	int dev = -1;
	for (int k = 0; k < in->nin + in->nout && dev < 0 && l2 > 0; k++) {
		int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
		dev = b >= 0 ? p->spaces[p->buffers[b].space].device : -1;
	}
	for (int s = 0; dev >= 0 && s < p->nspaces; s++) {
		const char *dot = strrchr(p->spaces[s].name, '.');
		int held = 0;   /* a buffer there: counted above */
		for (int k = 0; k < in->nin + in->nout && !held; k++) {
			int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
			held = b >= 0 && p->buffers[b].space == s;
		}
		if (!held && p->spaces[s].device == dev && dot && !strcmp(dot, ".l2") && p->spaces[s].bandwidth > 0)
			bytes[s] += l2 * 1e-6 * p->spaces[s].bandwidth;
	}
}

/* Seconds to move the operands of a kernel: each space's bytes at that space's bandwidth; the
 * slowest space bounds (spaces are accessed concurrently). */
static double kernel_mem_time(const Plan *p, const PlanInstr *in)
{
	double t = 0;
	for (int k = 0; k < in->nin + in->nout; k++) {
		int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
		if (b < 0)
			continue;
		const PlanSpace *s = &p->spaces[p->buffers[b].space];
		double tb = 0;
		for (int j = 0; j < in->nin + in->nout; j++) {
			int c = j < in->nin ? in->in[j] : in->out[j - in->nin];
			if (c >= 0 && p->buffers[c].space == p->buffers[b].space)
				tb += (double)p->buffers[c].size;
		}
		t = fmax(t, tb / s->bandwidth);
	}
	return t;
}

/* alpha + n * beta over a link, or the slower space's bandwidth for an on-device copy. */
static double copy_time(const Plan *p, const PlanInstr *in)
{
	double n = (double)p->buffers[in->in[0]].size;
	if (in->link >= 0)
		return p->links[in->link].latency_s + n / p->links[in->link].bandwidth;
	double bw = fmin(p->spaces[p->buffers[in->in[0]].space].bandwidth,
			 p->spaces[p->buffers[in->out[0]].space].bandwidth);
	return n / bw;
}

/* Ring algorithms (backends.md §7; Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005): all-reduce
 * moves 2(p-1)/p of the data per rank in 2(p-1) steps; reduce-scatter, its first half, (p-1)/p
 * of each rank's input in p-1 steps; all-gather (p-1)/p of the result in p-1 steps; all-to-all
 * (pairwise exchange, as NCCL's and DeepEP's dispatch) sends (p-1)/p of each rank's input in
 * p-1 steps.  A compressed all-reduce (rt_collective_wire) moves its wire bytes instead, plus
 * its encode/decode time. */
double rt_allreduce_ring_s(double ranks, double bytes, double latency_s, double bandwidth)
{
	return ranks < 2 ? 0 : 2 * (ranks - 1) * latency_s + 2 * (ranks - 1) / ranks * bytes / bandwidth;
}

double rt_collective_bw(const Plan *p, const PlanInstr *in)
{
	double eff = plan_instr_num(in, "link_eff", 1);
	return in->link < 0 ? 0 : p->links[in->link].bandwidth * (eff > 0 && eff <= 1 ? eff : 1);
}

static double collective_time(const Plan *p, const PlanInstr *in)
{
	double ranks = in->nin, n = (double)p->buffers[in->in[0]].size;
	if (ranks < 2 || in->link < 0)
		return 0;
	const PlanLink *l = &p->links[in->link];
	double bw = rt_collective_bw(p, in);
	if (in->coll == PC_ALLREDUCE) {
		RtCollWire w;
		rt_collective_wire(p, in, &w);
		return rt_allreduce_ring_s(ranks, w.wire, l->latency_s, bw) + w.codec_s;
	}
	if (in->coll == PC_ALLTOALL || in->coll == PC_REDUCESCATTER)
		return (ranks - 1) * l->latency_s + (ranks - 1) / ranks * n / bw;
	return (ranks - 1) * l->latency_s + (ranks - 1) * n / bw;
}

void rt_codec_work(const RtCodec *c, int64_t n, int ranks, double elem_bytes, RtCodecWork *w)
{
	double pp = ranks < 1 ? 1 : ranks, wire = (double)rt_codec_bytes(c, n), per = n > 0 ? wire / (double)n : 0;
	int planes = 0;
	for (int b = c->bits; b; b &= b - 1)
		planes++;
	w->enc_elems = (double)n * (1 + 1 / pp);
	w->dec_elems = 2 * (double)n * (pp - 1) / pp;
	w->bytes = (w->enc_elems + w->dec_elems) * (elem_bytes + per);
	w->ops = w->enc_elems * (7 + c->spikes + planes) + w->dec_elems * (3 + 3 * planes);
}

void rt_collective_wire(const Plan *p, const PlanInstr *in, RtCollWire *w)
{
	const PlanBuffer *b = &p->buffers[in->in[0]];
	RtCodec c;
	RtError e;
	w->raw = w->wire = (double)b->size;
	w->codec_s = 0;
	w->compressed = in->coll == PC_ALLREDUCE && rt_instr_codec(in, &c, &e) > 0;
	if (!w->compressed)
		return;
	int64_t n = plan_buffer_numel(b);
	RtCodecWork k;
	rt_codec_work(&c, n, in->nin, n > 0 ? (double)b->size / (double)n : 0, &k);
	w->wire = (double)rt_codec_bytes(&c, n);
	double us = plan_instr_num(in, "codec_us", -1);
	w->codec_s = us >= 0 ? us * 1e-6 : k.bytes / p->spaces[b->space].bandwidth;
}

double rt_cost_roofline(const Plan *p, int stream, const PlanInstr *in)
{
	const PlanDevice *d = &p->devices[p->streams[stream].device];
	switch (in->kind) {
	case PI_KERNEL: {
		double peak = in->opts.accum_f64 && d->peak_flops_f64 > 0 ? d->peak_flops_f64 : d->peak_flops;
		return d->overhead_s + fmax(in->flops / peak, kernel_mem_time(p, in));
	}
	case PI_COPY: return copy_time(p, in);
	case PI_COLLECTIVE: return collective_time(p, in);
	default: return 0;
	}
}

/* The one-time load time of instruction `in` in seconds (t.load_us of a t.phase="load" kernel;
 * a missing or malformed t.load_us counts 0), or -1 when it runs in every step. */
static double load_time(const PlanInstr *in)
{
	int load = 0;
	double us = 0;
	for (int i = 0; in->kind == PI_KERNEL && i < in->ntile; i++) {
		if (strcmp(in->tile[i].key, "phase") == 0)
			load = strcmp(in->tile[i].val, "load") == 0;
		else if (strcmp(in->tile[i].key, "load_us") == 0)
			us = strtod(in->tile[i].val, NULL);
	}
	if (!load)
		return -1;
	return us > 0 && isfinite(us) ? us * 1e-6 : 0;
}

/* ---- the simulation ---- */
typedef struct Sim {
	const Plan *p;
	RtCostFn cost;
	double *stream_t, *unit_t, *link_t, *event_t;
	int *pc;
	int total;
	int lowered;             /* a resource's free time moved back (a static instruction): rebuild */
	RtError *e;
} Sim;

/* The resource instruction `in` of stream s occupies: *unit or *link (the other is -1). */
static void resource(const Plan *p, int s, const PlanInstr *in, int *unit, int *link)
{
	*unit = *link = -1;
	if (in->kind == PI_RECORD || in->kind == PI_WAIT)
		return;
	if (in->link >= 0 && in->kind != PI_KERNEL)
		*link = in->link;
	else
		*unit = in->unit >= 0 ? in->unit : plan_default_unit(p, p->streams[s].device, in->kind);
}

/* Earliest start of stream s's next instruction, or INFINITY if it waits on an unrecorded event. */
static double earliest(const Sim *m, int s)
{
	const PlanInstr *in = &m->p->streams[s].ins[m->pc[s]];
	double t = m->stream_t[s];
	double clock = m->p->devices[m->p->streams[s].device].clock_hz;
	/* A static instruction issues at its cycle: the verifier has proved its unit free and its
	 * operands ready there, and the stream's order is only the issue order (lpu: one stream per
	 * chip, units working in parallel). */
	if (in->cycle >= 0 && clock > 0 && in->kind != PI_WAIT)
		return (double)in->cycle / clock;
	if (in->kind == PI_WAIT)
		return m->event_t[in->event] < 0 ? INFINITY : fmax(t, m->event_t[in->event]);
	int u, l;
	resource(m->p, s, in, &u, &l);
	if (u >= 0)
		t = fmax(t, m->unit_t[u]);
	if (l >= 0)
		t = fmax(t, m->link_t[l]);
	return t;
}

/* Runs stream s's next instruction from time t; records its span.  0, or -1 with m->e set when
 * its cost is not a finite non-negative number. */
static int step(Sim *m, RtTiming *tm, int s, double t)
{
	const Plan *p = m->p;
	const PlanInstr *in = &p->streams[s].ins[m->pc[s]];
	int u, l;
	resource(p, s, in, &u, &l);
	double load = load_time(in);
	double d = in->kind == PI_RECORD || in->kind == PI_WAIT || load >= 0 ? 0 : m->cost(p, s, in);
	if (!(d >= 0) || isinf(d))     /* never silently 0: a cost of inf or NaN is the machine's numbers */
		return rt_errorf(m->e, RT_EUSER, "%s:%d: error: timing: the %s's cost is %s seconds (a bandwidth, "
				 "peak or clock too small or too large for the work: check the machine's numbers)",
				 p->file ? p->file : "<plan>", in->line,
				 in->kind == PI_KERNEL ? plan_op_name(in->op) : plan_instr_names[in->kind],
				 isnan(d) ? "not a number" : d < 0 ? "negative" : "infinite");
	if (load >= 0) {
		tm->load_s += load;
		tm->dev_load_s[p->streams[s].device] += load;
		tm->nload++;
	}
	double end = t + d;
	if (in->kind == PI_RECORD)
		m->event_t[in->event] = end;
	if (!isfinite(end))
		return rt_errorf(m->e, RT_EUSER, "%s:%d: error: timing: the plan's time overflows (%g s + %g s)",
				 p->file ? p->file : "<plan>", in->line, t, d);
	if ((u >= 0 && end < m->unit_t[u]) || (l >= 0 && end < m->link_t[l]))
		m->lowered = 1;
	if (u >= 0)
		m->unit_t[u] = end, tm->unit_busy_s[u] += d, tm->busy_s[p->units[u].device] += d;
	if (l >= 0)
		m->link_t[l] = end, tm->link_busy_s[l] += d;
	m->stream_t[s] = in->cycle >= 0 ? fmax(m->stream_t[s], end) : end;
	tm->spans[tm->nspans++] = (RtSpan){ s, m->pc[s], u, l, t, end };
	if (load < 0) {      /* a step's work; load kernels' is done once, before */
		tm->flops += in->flops;
		tm->dev_flops[p->streams[s].device] += in->flops;
		if (in->kind != PI_RECORD && in->kind != PI_WAIT)
			rt_instr_bytes(p, in, tm->bytes);
	}
	if (end > tm->latency_s)
		tm->latency_s = end;
	m->pc[s]++;
	return 0;
}

static int alloc_timing(const Plan *p, RtTiming *t, Sim *m)
{
	size_t ns = (size_t)p->nstreams + 1, nu = (size_t)p->nunits + 1, nl = (size_t)p->nlinks + 1;
	t->bytes = rt_calloc((size_t)p->nspaces + 1, sizeof *t->bytes);
	t->busy_s = rt_calloc((size_t)p->ndevices + 1, sizeof *t->busy_s);
	t->dev_flops = rt_calloc((size_t)p->ndevices + 1, sizeof *t->dev_flops);
	t->dev_load_s = rt_calloc((size_t)p->ndevices + 1, sizeof *t->dev_load_s);
	t->unit_busy_s = rt_calloc(nu, sizeof *t->unit_busy_s);
	t->link_busy_s = rt_calloc(nl, sizeof *t->link_busy_s);
	t->peak_bytes = rt_calloc((size_t)p->nspaces + 1, sizeof *t->peak_bytes);
	t->spans = rt_calloc((size_t)m->total + 1, sizeof *t->spans);
	m->stream_t = rt_calloc(ns, sizeof *m->stream_t);
	m->unit_t = rt_calloc(nu, sizeof *m->unit_t);
	m->link_t = rt_calloc(nl, sizeof *m->link_t);
	m->event_t = rt_calloc((size_t)p->nevents + 1, sizeof *m->event_t);
	m->pc = rt_calloc(ns, sizeof *m->pc);
	if (!t->bytes || !t->busy_s || !t->dev_flops || !t->dev_load_s || !t->unit_busy_s || !t->link_busy_s || !t->peak_bytes || !t->spans ||
	    !m->stream_t || !m->unit_t || !m->link_t || !m->event_t || !m->pc)
		return -1;
	for (int i = 0; i < p->nevents; i++)
		m->event_t[i] = -1;
	return 0;
}

/* Peak bytes live at once per space over the execution order: a sweep over allocation (+size at
 * a buffer's first step) and release (-size after its last step) events. */
typedef struct MemEv { int step; int64_t delta; int space; } MemEv;
static int by_step(const void *x, const void *y)
{
	const MemEv *a = x, *b = y;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return (a->delta > b->delta) - (a->delta < b->delta);   /* releases first */
}

static int peak_memory(const Plan *p, RtTiming *t, RtError *e)
{
	PlanStep *order;
	int n, *first, *last, nev = 0;
	if (plan_linearize(p, &order, &n, e) < 0)
		return -1;
	int lrc = plan_liveness(p, order, n, &first, &last, e);
	rt_free(order);
	if (lrc < 0)
		return -1;
	MemEv *ev = rt_malloc(sizeof *ev * (size_t)(2 * p->nbuffers + 1));
	int64_t *live = rt_calloc((size_t)p->nspaces + 1, sizeof *live);
	int rc = ev && live ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory in the timing engine");
	for (int b = 0; rc == 0 && b < p->nbuffers; b++)
		if (first[b] <= last[b]) {
			ev[nev++] = (MemEv){ first[b], p->buffers[b].size, p->buffers[b].space };
			ev[nev++] = (MemEv){ last[b] + 1, -p->buffers[b].size, p->buffers[b].space };
		}
	if (rc == 0)
		qsort(ev, (size_t)nev, sizeof *ev, by_step);
	for (int i = 0; rc == 0 && i < nev; i++) {
		live[ev[i].space] += ev[i].delta;
		if (live[ev[i].space] > t->peak_bytes[ev[i].space])
			t->peak_bytes[ev[i].space] = live[ev[i].space];
	}
	rt_free(ev);
	rt_free(live);
	rt_free(first);
	rt_free(last);
	return rc;
}

/* Stream s back in the heap with its current earliest start, or parked on the event its head
 * waits for; nothing when it is finished. */
static int requeue(Sim *m, RtHeap *h, int *wait_head, int *wait_next, int s)
{
	const PlanStream *st = &m->p->streams[s];
	if (m->pc[s] >= st->nins)
		return 0;
	double ts = earliest(m, s);
	if (isinf(ts)) {      /* waits on an event not yet recorded */
		int ev = st->ins[m->pc[s]].event;
		wait_next[s] = wait_head[ev];
		wait_head[ev] = s;
		return 0;
	}
	return rt_heap_push(h, rt_heap_dkey(ts), s);
}

/* The list schedule: the stream head that can start earliest goes next (ties: the lower
 * stream).  Heads sit in a heap keyed by their earliest start, computed when they were queued:
 * a start only moves later as resources fill, so a popped key that is stale is recomputed and
 * queued again, and the first fresh one is the true minimum.  Waits on unrecorded events are
 * parked on the event.  When a static instruction moves a resource's free time back, keys may
 * have dropped: the heap is rebuilt.  O(n log streams). */
static int run_sim(Sim *m, RtTiming *t)
{
	const Plan *p = m->p;
	RtHeap h = { 0 };
	int *wait_head = rt_malloc(((size_t)p->nevents + 1) * sizeof *wait_head);
	int *wait_next = rt_malloc(((size_t)p->nstreams + 1) * sizeof *wait_next);
	int rc = wait_head && wait_next ? 0 : -1, stepfail = 0;
	for (int i = 0; rc == 0 && i < p->nevents; i++)
		wait_head[i] = -1;
	for (int s = 0; rc == 0 && s < p->nstreams; s++)
		rc = requeue(m, &h, wait_head, wait_next, s);
	for (int done = 0; rc == 0 && done < m->total;) {
		if (!h.n) {
			rc = rt_errorf(m->e, RT_EUSER, "timing: deadlock (a wait can never be satisfied)");
			stepfail = 1;
			break;
		}
		RtHeapItem it = rt_heap_pop(&h);
		int s = it.id;
		double ts = earliest(m, s);
		if (rt_heap_dkey(ts) != it.key) {
			rc = rt_heap_push(&h, rt_heap_dkey(ts), s);
			continue;
		}
		const PlanInstr *in = &p->streams[s].ins[m->pc[s]];
		if ((rc = step(m, t, s, ts)) < 0) {
			stepfail = 1;
			break;
		}
		done++;
		if (in->kind == PI_RECORD) {
			for (int w = wait_head[in->event]; w >= 0 && rc == 0; w = wait_next[w])
				rc = rt_heap_push(&h, rt_heap_dkey(earliest(m, w)), w);
			wait_head[in->event] = -1;
		}
		if (rc == 0)
			rc = requeue(m, &h, wait_head, wait_next, s);
		if (rc == 0 && m->lowered) {
			m->lowered = 0;
			h.n = 0;
			for (int q = 0; q < p->nstreams && rc == 0; q++)
				if (m->pc[q] < p->streams[q].nins && !isinf(earliest(m, q)))
					rc = rt_heap_push(&h, rt_heap_dkey(earliest(m, q)), q);
		}
	}
	if (rc < 0 && !stepfail)
		rt_errorf(m->e, RT_ENOMEM, "out of memory in the timing engine");
	rt_heap_free(&h);
	rt_free(wait_head);
	rt_free(wait_next);
	return rc;
}

int rt_simulate(const Plan *p, RtTiming *t, RtError *e)
{
	Sim m = { .p = p, .cost = rt_cost_lookup(p->target), .e = e };
	memset(t, 0, sizeof *t);
	if (!m.cost)
		return rt_errorf(e, RT_EUSER, "no cost model registered for target '%s'", p->target);
	for (int i = 0; i < p->nstreams; i++)
		m.total += p->streams[i].nins;
	int rc = alloc_timing(p, t, &m) < 0 ? rt_errorf(e, RT_ENOMEM, "out of memory in the timing engine") : 0;
	if (rc == 0)
		rc = run_sim(&m, t);
	if (rc == 0)
		rc = peak_memory(p, t, e);
	rt_free(m.stream_t), rt_free(m.unit_t), rt_free(m.link_t), rt_free(m.event_t), rt_free(m.pc);
	if (rc < 0)
		rt_timing_free(t);
	return rc;
}

/* A copy of v[0..n) (n elements of z bytes), or NULL when v is NULL. */
static void *dup_array(const void *v, size_t n, size_t z, int *fail)
{
	if (!v)
		return NULL;
	void *d = rt_malloc(n * z);
	if (d)
		memcpy(d, v, n * z);
	else
		*fail = 1;
	return d;
}

int rt_timing_copy(const Plan *p, RtTiming *d, const RtTiming *t, RtError *e)
{
	int fail = 0;
	size_t nsp = (size_t)p->nspaces + 1, nd = (size_t)p->ndevices + 1;
	*d = *t;
	d->bytes = dup_array(t->bytes, nsp, sizeof *t->bytes, &fail);
	d->busy_s = dup_array(t->busy_s, nd, sizeof *t->busy_s, &fail);
	d->dev_flops = dup_array(t->dev_flops, nd, sizeof *t->dev_flops, &fail);
	d->dev_load_s = dup_array(t->dev_load_s, nd, sizeof *t->dev_load_s, &fail);
	d->unit_busy_s = dup_array(t->unit_busy_s, (size_t)p->nunits + 1, sizeof *t->unit_busy_s, &fail);
	d->link_busy_s = dup_array(t->link_busy_s, (size_t)p->nlinks + 1, sizeof *t->link_busy_s, &fail);
	d->peak_bytes = dup_array(t->peak_bytes, nsp, sizeof *t->peak_bytes, &fail);
	d->spans = dup_array(t->spans, (size_t)t->nspans + 1, sizeof *t->spans, &fail);
	if (!fail)
		return 0;
	rt_timing_free(d);
	return rt_errorf(e, RT_ENOMEM, "out of memory copying the plan's timing");
}

void rt_timing_free(RtTiming *t)
{
	rt_free(t->bytes), rt_free(t->busy_s), rt_free(t->dev_flops), rt_free(t->dev_load_s), rt_free(t->unit_busy_s), rt_free(t->link_busy_s);
	rt_free(t->peak_bytes), rt_free(t->spans);
	memset(t, 0, sizeof *t);
}
