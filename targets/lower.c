/* targets/lower.c: the one lowering walk (contract in targets/target.h, "the lowering walk") and
 * the roofline most targets price a pass's work with.
 *
 * A target supplies data (device kind, value space, alignment) and hooks (setup, dtype,
 * kernel, optional prepare and finish); this file does everything else in one order for the
 * reference, hopper, blackwell, tpu and vera-rubin targets: the call flattening, the device
 * placement and multi-device plumbing of targets/devices.c, buffers placed first fit with reuse
 * after the last reader, fusion groups, the per-node kernel instructions, inputs and outputs,
 * and the plan verifier.  Memory the hooks take with tgt_lower_alloc is freed here.
 */
#include "targets/target.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void *tgt_lower_alloc(TgtLower *l, size_t n, size_t size)
{
	if (l->nallocs == l->capallocs) {
		int cap = l->capallocs ? 2 * l->capallocs : 8;
		void **a = realloc(l->allocs, sizeof *a * (size_t)cap);
		if (!a) {
			rt_errorf(l->e, RT_ENOMEM, "out of memory lowering the graph");
			return NULL;
		}
		l->allocs = a, l->capallocs = cap;
	}
	void *m = calloc(n ? n : 1, size ? size : 1);
	if (!m) {
		rt_errorf(l->e, RT_ENOMEM, "out of memory lowering the graph");
		return NULL;
	}
	return l->allocs[l->nallocs++] = m;
}

void *tgt_lower_state(TgtLower *l, size_t size) { return l->ctx = tgt_lower_alloc(l, 1, size); }

/* ---- kernels already lowered (contract in targets/target.h) ---- */
int tgt_kernel_sig(const TgtLower *l, int i, int64_t *sig, int max)
{
	const FlatNode *fn = &l->f.nodes[i];
	int n = 0, g = l->gfirst[i];
	if (2 + (fn->nin + fn->nout) * (4 + RT_MAX_RANK) + 1 > max)
		return -1;
	sig[n++] = (int64_t)(uintptr_t)fn->n;
	sig[n++] = (int64_t)l->devs.node_pl[i] << 32 | (int64_t)fn->nin << 16 | fn->nout;
	for (int k = 0; k < fn->nin + fn->nout; k++) {
		int v = k < fn->nin ? fn->in[k] : fn->out[k - fn->nin];
		if (v < 0) {
			sig[n++] = -1;
			continue;
		}
		const FlatVal *fv = &l->f.vals[v];
		if (l->buf[v] < 0)
			return -1;
		const PlanBuffer *b = &l->p->buffers[l->buf[v]];
		int def = fv->def, ingrp = g >= 0 && def >= 0 && l->gfirst[def] == g;
		sig[n++] = (int64_t)b->dtype | (int64_t)fv->dt << 8 | (int64_t)fv->rank << 16 | (int64_t)fv->is_output << 24 |
			   (int64_t)ingrp << 25;
		sig[n++] = b->size;
		sig[n++] = (int64_t)(uintptr_t)b->format;
		for (int r = 0; r < fv->rank; r++)
			sig[n++] = fv->dims[r];
	}
	sig[n++] = (g < 0 ? 0 : g == i ? 1 : 2) | (g >= 0 && l->glast[g] == i) << 2 | tgt_load_kernel(&l->f, l->gfirst, i) << 3;
	return n;
}

static uint64_t sig_hash(const int64_t *sig, int n) { return rt_checksum(sig, sizeof *sig * (size_t)n); }

TgtKernEntry *tgt_memo_slot(TgtLower *l, TgtKernMemo *m, const int64_t *sig, int n)
{
	if (2 * (m->nkm + 1) > m->capkm) {
		size_t cap = m->capkm ? 2 * m->capkm : 1024;
		TgtKernEntry *t = tgt_lower_alloc(l, cap, sizeof *t);
		if (!t)
			return NULL;
		for (size_t j = 0; j < m->capkm; j++)
			if (m->km[j].sig) {
				size_t h = (size_t)sig_hash(m->km[j].sig, m->km[j].nsig) & (cap - 1);
				while (t[h].sig)
					h = (h + 1) & (cap - 1);
				t[h] = m->km[j];
			}
		m->km = t, m->capkm = cap;   /* the old table is freed with the walk */
	}
	size_t h = (size_t)sig_hash(sig, n) & (m->capkm - 1);
	for (; m->km[h].sig; h = (h + 1) & (m->capkm - 1))
		if (m->km[h].nsig == n && !memcmp(m->km[h].sig, sig, sizeof *sig * (size_t)n))
			break;
	return &m->km[h];
}

int tgt_memo_put(TgtLower *l, TgtKernMemo *m, TgtKernEntry *k, const int64_t *sig, int n, const PlanInstr *pi,
		 const TgtAnn *t)
{
	int64_t *s = tgt_lower_alloc(l, (size_t)n, sizeof *s);
	PlanKV *kv = tgt_lower_alloc(l, (size_t)t->n, sizeof *kv);
	if (!s || !kv)
		return -1;
	memcpy(s, sig, sizeof *s * (size_t)n);
	int fused = -1;
	for (int j = 0; j < t->n; j++) {
		if (!(kv[j].key = plan_intern(l->p, t->kv[j].key)) || !(kv[j].val = plan_intern(l->p, t->kv[j].val)))
			return rt_errorf(l->e, RT_ENOMEM, "out of memory lowering the graph");
		if (!strcmp(t->kv[j].key, "fused"))
			fused = j;
	}
	*k = (TgtKernEntry){ s, n, t->n, fused, pi->unit, kv, pi->opts };
	m->nkm++;
	return 0;
}

/* Remembered entry k as node i's: its pairs into t (the fused-into name of i's group), pi's
 * numerics and unit. */
static void memo_get(const TgtLower *l, const TgtKernEntry *k, int i, PlanInstr *pi, TgtAnn *t)
{
	t->n = k->n;
	memcpy(t->kv, k->kv, sizeof *t->kv * (size_t)k->n);
	pi->opts = k->opts;
	pi->unit = k->unit;
	pi->tile_interned = 1;     /* the remembered pairs are interned; so is the fused-into name */
	if (k->fused >= 0) {
		tgt_fmt(t->val[k->fused], sizeof t->val[0], "into %s", l->p->buffers[l->buf[l->f.nodes[l->gfirst[i]].out[0]]].name);
		char *v = plan_intern(l->p, t->val[k->fused]);
		t->kv[k->fused].val = v ? v : t->val[k->fused];
		pi->tile_interned = v != NULL;
	}
}

int tgt_memo_lower(TgtLower *l, TgtKernMemo *m, const int64_t *sig, int nsig,
		   int (*lower)(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t), int i, PlanInstr *pi, TgtAnn *t)
{
	TgtKernEntry *k = nsig > 0 ? tgt_memo_slot(l, m, sig, nsig) : NULL;
	if (k && k->sig) {
		memo_get(l, k, i, pi, t);
		return 0;
	}
	if (lower(l, i, pi, t) < 0)
		return -1;
	return k ? tgt_memo_put(l, m, k, sig, nsig, pi, t) : 0;
}

static DType dtype_of(const void *l, const FlatVal *v)
{
	const TgtLower *w = l;
	return w->t->dtype(w, v);
}

/* The device kind values live on: the target's, else the machine's first accelerator's. */
static DevKind value_kind(const TgtLower *l)
{
	const Device *d = prec_device(l->t, l->in->machine->m);
	return l->t->kind >= 0 ? (DevKind)l->t->kind : d ? d->kind : DEV_CPU;
}

/* devices -> values: the plan, its devices and streams, every buffer, the fusion groups. */
static int place(TgtLower *l)
{
	const TgtMachine *tm = l->in->machine;
	if (!(l->p = plan_new(l->t->name, tm->desc->machine, tm->desc->machine_hash, l->e)) ||
	    plan_set_source(l->p, l->in->model, l->in->binds, l->in->prec->spec, l->e) < 0 ||
	    tgt_devs_init(&l->devs, l->p, tm, &l->f, value_kind(l), l->space ? l->space : l->t->space, l->t->align, l->e) < 0)
		return -1;
	size_t nv = (size_t)l->f.nvals + 1, nn = (size_t)l->f.nnodes + 1;
	if (!(l->buf = tgt_lower_alloc(l, nv, sizeof *l->buf)) || !(l->gfirst = tgt_lower_alloc(l, nn, sizeof *l->gfirst)) ||
	    !(l->glast = tgt_lower_alloc(l, nn, sizeof *l->glast)))
		return -1;
	return 0;
}

/* One node: lowered by devices.c (a transfer, collective or weight shard), else a kernel the
 * target completes. */
static int node(TgtLower *l, int i)
{
	int ins[TGT_MAX_OPERANDS], outs[TGT_MAX_OPERANDS];
	PlanInstr pi;
	Op op = l->f.nodes[i].n->op;
	if (tgt_devs_handles(&l->devs, &l->f, i)) {
		if (!ir_op_is_collective(op) || !l->t->collective)
			return tgt_devs_emit(&l->devs, l->p, &l->f, i, l->buf, NULL, l->e);
		TgtAnn t;      /* not zeroed: 11 KB a node; tgt_ann_put fills entries [0, n) */
		t.n = 0;
		plan_instr_init(&pi, PI_COLLECTIVE);
		if (l->t->collective(l, i, &t) < 0)
			return -1;
		pi.tile = t.kv, pi.ntile = t.n;
		return tgt_devs_emit(&l->devs, l->p, &l->f, i, l->buf, &pi, l->e);
	}
	tgt_devs_bufs(&l->devs, &l->f, i, l->buf);
	if (tgt_kernel_instr(&pi, l->p, &l->f, i, l->buf, ins, outs, l->e) < 0)
		return -1;
	TgtAnn t;
	t.n = 0;
	if (l->t->kernel(l, i, &pi, &t) < 0)
		return -1;
	pi.tile = t.kv, pi.ntile = t.n;
	return tgt_devs_emit(&l->devs, l->p, &l->f, i, l->buf, &pi, l->e);
}

static int walk(TgtLower *l)
{
	if (tgt_flatten(l->in->g, &l->f, l->e) < 0 || (l->t->arrange && l->t->arrange(l) < 0) || place(l) < 0 ||
	    (l->t->setup && l->t->setup(l) < 0))
		return -1;
	if (tgt_devs_values(&l->devs, l->p, &l->f, dtype_of, l, l->buf, l->in->m->dir, l->e) < 0)
		return -1;
	tgt_fusion_groups(&l->f, l->gfirst, l->glast);
	if (l->t->prepare && l->t->prepare(l) < 0)
		return -1;
	for (int i = 0; i < l->f.nnodes; i++)
		if (node(l, i) < 0)
			return -1;
	if (l->t->finish && l->t->finish(l) < 0)
		return -1;
	if (tgt_add_io(l->p, &l->f, l->in->g, l->buf, l->e) < 0)
		return -1;
	if (plan_verify(l->p, l->e) < 0) {
		char msg[sizeof l->e->msg];
		snprintf(msg, sizeof msg, "%s", l->e->msg);
		return rt_errorf(l->e, RT_EINTERNAL, "aicc: internal error: the %s plan fails verification: %s", l->t->name, msg);
	}
	return 0;
}

Plan *tgt_lower(const Target *t, const TgtInput *in, RtError *e)
{
	if (t->lower)
		return t->lower(in, e);
	TgtLower l = { .t = t, .in = in, .e = e };
	int rc = walk(&l);
	if (rc == 0)
		tgt_record_peaks(l.p, in->machine->m);
	tgt_flat_free(&l.f);
	tgt_devs_free(&l.devs);
	for (int i = 0; i < l.nallocs; i++)
		free(l.allocs[i]);
	free(l.allocs);
	if (rc < 0) {
		plan_free(l.p);
		return NULL;
	}
	return l.p;
}

/* ---- pricing a pass's work ---- */

static double lat(const Link *l) { return l && num_has(&l->latency) ? l->latency.v : 0; }

/* alpha + bytes / one-way bandwidth over link l (0 without a link). */
static double link_time(const Link *l, double bytes)
{
	double bw = l ? link_oneway_bw(l) : 0;
	return l && bw > 0 ? lat(l) + bytes / bw : 0;
}

/* The device's main memory: HBM, else DRAM, else SRAM; NULL when it has none with a bandwidth. */
static const MemSpace *main_memory(const Device *d)
{
	static const MemKind kinds[] = { MEM_HBM, MEM_DRAM, MEM_SRAM };
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		const MemSpace *s = dev_mem_kind(d, kinds[i]);
		if (s && num_has(&s->bandwidth))
			return s;
	}
	return NULL;
}

static double value_bytes(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 || v->type.dt == DT_INVALID ? 0 : (double)rt_dtype_bytes(v->type.dt, n);
}

/* FLOP and bytes of one IR node (a Call: its callee's weights x repeat). */
static void node_work(const Node *n, double *fl, double *by)
{
	*fl = ir_node_flops(n);
	*by = 0;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i])
			*by += value_bytes(n->in[i]);
	for (int i = 0; i < n->nout; i++)
		*by += value_bytes(n->out[i]);
	if (n->op == OP_Call && n->callee)
		*by += (double)ir_summary(n->callee).parameter_bytes * (double)(n->repeat > 0 ? n->repeat : 1);
}

/* Seconds per kernel launch: the device's `launch` engine, or `graph` under +graph. */
static double launch(const Device *d, const Precision *p)
{
	const char *name = p && p->graph ? "graph" : "launch";
	for (int i = 0; i < d->nengines; i++)
		if (!strcmp(d->engines[i].name, name) && num_has(&d->engines[i].latency))
			return d->engines[i].latency.v;
	return 0;
}

double tgt_roofline_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w)
{
	(void)t;
	if (w->to)
		return link_time(machine_link(m, d, w->to), w->bytes);
	double fl = w->flops, by = w->bytes, chips = w->chips > 1 ? w->chips : 1;
	DType fmt = w->fmt;
	if (w->node) {
		node_work(w->node, &fl, &by);
		if (fmt == DT_INVALID)
			fmt = w->node->nout ? w->node->out[0]->type.dt : DT_F32;
	}
	double peak = fmt != DT_INVALID ? dev_peak(d, fmt) : 0;
	DType pf = fmt;
	if (peak <= 0)
		peak = dev_peak(d, DT_F32), pf = DT_F32;
	peak *= dev_gemm_efficiency(d, pf);
	const MemSpace *mem = main_memory(d);
	double bw = mem ? mem->bandwidth.v * (num_has(&mem->efficiency) ? mem->efficiency.v : 1) : 0;
	double time = fmax(peak > 0 ? fl / (chips * peak) : 0, bw > 0 ? by / (chips * bw) : 0);
	time += w->kernels * launch(d, p);
	if (w->reduce > 0 && chips > 1)
		time += ceil(log2(chips)) * link_time(machine_link(m, d, d), w->reduce);
	return time;
}

/* A constant dimension of v, or -1. */
static int64_t cdim(const Value *v, int i)
{
	if (!v || v->type.rank < 0 || i < 0 || i >= v->type.rank || !dim_isconst(v->type.dims[i]))
		return -1;
	return v->type.dims[i].k;
}

/* Splits `chips` over the extents x[0..n) one prime factor at a time, each to the largest
 * extent it divides; returns the factor left over (1: all of it placed). */
static int64_t share(int64_t *x, int n, int64_t chips)
{
	for (int64_t p = 2; chips > 1 && p <= chips; p++)
		while (chips % p == 0) {
			int best = -1;
			for (int i = 0; i < n; i++)
				if (x[i] % p == 0 && (best < 0 || x[i] > x[best]))
					best = i;
			if (best < 0)
				return chips;
			x[best] /= p, chips /= p;
		}
	return chips;
}

void tgt_gemm_extents(const int64_t *y, int ry, const int64_t *a, int ra, int rb, int ta, TgtGemmDims *g)
{
	assert(ry >= 1 && ra >= 1 && rb >= 1);
	g->N = y[ry - 1];
	g->M = ry >= 2 ? y[ry - 2] : 1;
	g->K = a[ra >= 2 && ta ? ra - 2 : ra - 1];
	g->batch = 1;
	for (int i = 0; i + 2 < ry; i++)
		g->batch *= y[i];
	if (rb <= 2)
		g->M *= g->batch, g->batch = 1;
}

int tgt_work_gemm(const TgtWork *w, TgtGemmDims *g)
{
	const Node *n = w->node;
	memset(g, 0, sizeof *g);
	if (!n || (n->op != OP_MatMul && n->op != OP_Gemm) || n->nin < 2 || !n->in[0] || !n->in[1] || n->nout < 1)
		return 0;
	const Value *A = n->in[0], *B = n->in[1], *Y = n->out[0];
	int ry = Y->type.rank, ra = A->type.rank, rb = B->type.rank;
	if (ry < 1 || ra < 1 || rb < 1)
		return 0;
	if (ry > RT_MAX_RANK || ra > RT_MAX_RANK)
		return 0;
	g->in = A->type.dt, g->out = Y->type.dt;
	int64_t y[RT_MAX_RANK], a[RT_MAX_RANK];   /* a symbolic dimension as 0: no product */
	for (int i = 0; i < ry; i++)
		y[i] = cdim(Y, i) > 0 ? cdim(Y, i) : 0;
	for (int i = 0; i < ra; i++)
		a[i] = cdim(A, i) > 0 ? cdim(A, i) : 0;
	tgt_gemm_extents(y, ry, a, ra, rb, n->op == OP_Gemm && rt_attr_int(&n->attrs, "transA", 0), g);
	if (g->M <= 0 || g->N <= 0 || g->K <= 0 || g->batch <= 0)
		return 0;
	int64_t x[4] = { g->M, g->N, g->K, g->batch };
	if (share(x, 4, w->chips > 1 ? w->chips : 1) > 1)
		return 0;
	g->M = x[0], g->N = x[1], g->K = x[2], g->batch = x[3];
	return 1;
}

const int64_t *tgt_seq_offsets(const Attrs *at, int64_t Sq, int64_t T, int *n)
{
	const int64_t *off = rt_attr_ints(at, "seq_offsets", n);
	if (!off || *n < 2 || Sq != T || off[0] != 0 || off[*n - 1] != Sq) {
		*n = 0;
		return NULL;
	}
	return off;
}

int tgt_work_attn(const TgtWork *w, TgtAttnDims *a)
{
	const Node *n = w->node;
	memset(a, 0, sizeof *a);
	if (!n || (n->op != OP_Attention && n->op != OP_AttentionGrad))
		return 0;
	int o = n->op == OP_AttentionGrad;
	if (n->nin < o + 3 || !n->in[o] || !n->in[o + 1] || !n->in[o + 2])
		return 0;
	if (!o && n->nin > 4 && n->in[4])   /* a KV cache: inference, not this shape */
		return 0;
	const Value *Q = n->in[o], *K = n->in[o + 1], *V = n->in[o + 2];
	const Attrs *at = &n->attrs;
	a->in = Q->type.dt;
	a->causal = rt_attr_int(at, "is_causal", 0) != 0;
	if (Q->type.rank == 4) {
		a->B = cdim(Q, 0), a->qh = cdim(Q, 1), a->Sq = cdim(Q, 2), a->d = cdim(Q, 3);
		a->kvh = cdim(K, 1), a->T = cdim(K, 2), a->dv = cdim(V, 3);
	} else if (Q->type.rank == 3) {
		a->qh = rt_attr_int(at, "q_num_heads", 1), a->kvh = rt_attr_int(at, "kv_num_heads", 1);
		a->B = cdim(Q, 0), a->Sq = cdim(Q, 1), a->T = cdim(K, 1);
		a->d = a->qh > 0 && cdim(Q, 2) > 0 ? cdim(Q, 2) / a->qh : -1;
		a->dv = a->kvh > 0 && cdim(V, 2) > 0 ? cdim(V, 2) / a->kvh : -1;
	} else
		return 0;
	if (a->B <= 0 || a->qh <= 0 || a->kvh <= 0 || a->Sq <= 0 || a->T <= 0 || a->d <= 0 || a->dv <= 0)
		return 0;
	a->off = tgt_seq_offsets(at, a->Sq, a->T, &a->noff);
	int64_t chips = w->chips > 1 ? w->chips : 1;
	int64_t x[1] = { a->kvh };
	a->rest = share(x, 1, chips);   /* whole KV groups per device */
	a->qh /= a->kvh / x[0], a->kvh = x[0];
	a->grad = o ? (6.0 * (double)a->d + 4.0 * (double)a->dv + 8) / (2.0 * (double)a->d + 2.0 * (double)a->dv + 5) : 1;
	return 1;
}
