/* runtime/dist.c: one rank of a distributed run (runtime/dist.h): the interpreter's hooks for
 * copies, collectives and events that cross ranks, over an RtTransport, and the maps of devices
 * to ranks.  Values move as the interpreter holds them (f32, f64 or i64 storage): a tensor
 * message is its data followed by an 8-byte trailer (the nvfp4 tensor scale, as a double).
 * Every arithmetic step on values is the interpreter's own (rt_value_copy, rt_allreduce_add,
 * rt_value_round, the Concat kernel), applied to the same operands in the same order, so the
 * bits equal the one-process run's.
 *
 * Tags: step t uses 4t + phase (phase 0 data, 1 trailers, 2 reduced chunks); event e uses
 * 4n + e (n steps); output i uses 4n + nevents + 2i (+1 for its trailer). */
#include "runtime/dist.h"
#include "runtime/codec.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PH_DATA, PH_TRAIL, PH_REDUCED };

typedef struct ReqSet {          /* requests one operation waits for */
	int *ids;
	int n, cap;
} ReqSet;

typedef struct Staged {          /* a send from memory owned here, freed when it completes */
	int id;
	void *buf;
} Staged;

struct RtDist {
	const Plan *p;
	const RtTransport *tr;
	int me, nsteps;
	int *dev_rank;               /* per device */
	unsigned char *local;        /* per device */
	int *buf_rank;               /* per buffer */
	int *ev_rank;                /* per event: rank of the stream recording it (-1: none) */
	int *ev_off, *ev_wait;       /* per event: ev_wait[ev_off[e] .. ev_off[e+1]) = other ranks waiting */
	unsigned char *ev_got;       /* per event: its notice received in this run */
	Staged *staged;
	int nstaged, capstaged;
	RtDistHooks hooks;
	RtDistStats st;
	double epoch, t_start, *times;
	int involved;                /* the current step has a part on this rank */
	int tag_ev, tag_out;
	char where[320];
};

double rt_dist_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t esize(DType d) { return rt_dtypes[d].storage == S_F32 ? 4 : 8; }

static int brank(const RtDist *d, int b) { return d->buf_rank[b]; }

/* ---- messages ---- */
static int rs_add(ReqSet *s, int id, RtError *e)
{
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 8;
		int *ids = rt_realloc(s->ids, sizeof *ids * (size_t)cap);
		if (!ids)
			return rt_errorf(e, RT_ENOMEM, "out of memory for messages");
		s->ids = ids, s->cap = cap;
	}
	s->ids[s->n++] = id;
	return 0;
}

static int rs_wait(RtDist *d, ReqSet *s, RtError *e)
{
	if (!s->n)
		return 0;
	double t0 = rt_dist_now();
	int rc = d->tr->wait(d->tr->ctx, s->ids, s->n, e);
	d->st.comm_s += rt_dist_now() - t0;
	s->n = 0;
	return rc;
}

static void rs_free(ReqSet *s) { rt_free(s->ids); }

static int send_raw(RtDist *d, int to, int tag, const void *buf, size_t n, ReqSet *s, RtError *e)
{
	int id = d->tr->isend(d->tr->ctx, to, tag, buf, n, e);
	if (id < 0)
		return -1;
	d->st.sent_bytes += (int64_t)n;
	d->st.sent_msgs++;
	return rs_add(s, id, e);
}

static int recv_raw(RtDist *d, int from, int tag, void *buf, size_t n, ReqSet *s, RtError *e)
{
	int id = d->tr->irecv(d->tr->ctx, from, tag, buf, n, e);
	if (id < 0)
		return -1;
	d->st.recv_bytes += (int64_t)n;
	d->st.recv_msgs++;
	return rs_add(s, id, e);
}

/* Sends n bytes at buf (rt_malloc'd, taken over: freed once the send has completed, in reap or
 * flush, or here on failure). */
static int send_owned(RtDist *d, int to, int tag, void *buf, size_t n, RtError *e)
{
	if (d->nstaged == d->capstaged) {
		int cap = d->capstaged ? 2 * d->capstaged : 16;
		Staged *s = rt_realloc(d->staged, sizeof *s * (size_t)cap);
		if (!s) {
			rt_free(buf);
			return rt_errorf(e, RT_ENOMEM, "out of memory for messages");
		}
		d->staged = s, d->capstaged = cap;
	}
	int id = d->tr->isend(d->tr->ctx, to, tag, buf, n, e);
	if (id < 0) {
		rt_free(buf);
		return -1;
	}
	d->staged[d->nstaged++] = (Staged){ id, buf };
	d->st.sent_bytes += (int64_t)n;
	d->st.sent_msgs++;
	return 0;
}

/* Sends a copy of n bytes at buf. */
static int send_staged(RtDist *d, int to, int tag, const void *buf, size_t n, RtError *e)
{
	void *copy = rt_malloc(n ? n : 1);
	if (!copy)
		return rt_errorf(e, RT_ENOMEM, "out of memory staging a %zu-byte message", n);
	memcpy(copy, buf, n);
	return send_owned(d, to, tag, copy, n, e);
}

/* Frees the staging memory of completed sends. */
static int reap(RtDist *d, RtError *e)
{
	int k = 0;
	for (int i = 0; i < d->nstaged; i++) {
		int done = d->tr->test(d->tr->ctx, d->staged[i].id, e);
		if (done < 0)
			return -1;
		if (done)
			rt_free(d->staged[i].buf);
		else
			d->staged[k++] = d->staged[i];
	}
	d->nstaged = k;
	return 0;
}

static int flush(RtDist *d, RtError *e)
{
	ReqSet s = { 0 };
	int rc = 0;
	for (int i = 0; rc == 0 && i < d->nstaged; i++)
		rc = rs_add(&s, d->staged[i].id, e);
	if (rc == 0)
		rc = rs_wait(d, &s, e);
	rs_free(&s);
	if (rc == 0) {
		for (int i = 0; i < d->nstaged; i++)
			rt_free(d->staged[i].buf);
		d->nstaged = 0;
	}
	return rc;
}

/* A tensor message: t's data (sent from t itself, which must outlive s's wait, or staged) and its
 * trailer (always staged). */
static int send_tensor(RtDist *d, int to, int tag, const RtTensor *t, int stage, ReqSet *s, RtError *e)
{
	double trail = t->tensor_scale;
	size_t n = (size_t)t->n * esize(t->dtype);
	int rc = stage ? send_staged(d, to, tag, t->data, n, e) : send_raw(d, to, tag, t->data, n, s, e);
	return rc < 0 ? -1 : send_staged(d, to, tag + 1, &trail, sizeof trail, e);
}

/* Receives into t (allocated with the sender's dtype and shape); *trail gets the trailer. */
static int recv_tensor(RtDist *d, int from, int tag, RtTensor *t, double *trail, ReqSet *s, RtError *e)
{
	if (recv_raw(d, from, tag, t->data, (size_t)t->n * esize(t->dtype), s, e) < 0)
		return -1;
	return recv_raw(d, from, tag + 1, trail, sizeof *trail, s, e);
}

static int alloc_buf(const Plan *p, int b, RtTensor *t, RtError *e)
{
	const PlanBuffer *pb = &p->buffers[b];
	return rt_tensor_alloc(t, pb->dtype, pb->rank, pb->dims, e);
}

static void set_val(RtTensor *val, int b, RtTensor *t)
{
	rt_tensor_free(&val[b]);
	val[b] = *t;
}

/* A rank-1 view of elements [lo, lo + n) of t (borrowed). */
static RtTensor view1(const RtTensor *t, int64_t lo, int64_t n)
{
	RtTensor v;
	memset(&v, 0, sizeof v);
	v.dtype = t->dtype;
	v.rank = 1;
	v.dims[0] = v.n = n;
	v.data = (char *)t->data + (size_t)lo * esize(t->dtype);
	v.tensor_scale = t->tensor_scale;
	return v;
}

/* ---- what this rank is doing ---- */
static void set_where(RtDist *d, const PlanInstr *in, const char *fmt, const char *what, int peer)
{
	char detail[160];
	snprintf(detail, sizeof detail, fmt, what, peer);
	snprintf(d->where, sizeof d->where, "%s:%d (%s)", d->p->file ? d->p->file : "<plan>", in->line, detail);
}

/* ---- instructions ---- */
static int do_copy(RtDist *d, int t, const PlanInstr *in, RtTensor *val, RtError *e)
{
	const Plan *p = d->p;
	int src = in->in[0], dst = in->out[0], rs = brank(d, src), rd = brank(d, dst);
	if (rs != d->me && rd != d->me)
		return 1;
	d->involved = 1;
	if (rs == d->me && rd == d->me) {
		set_where(d, in, "%s", "copy", 0);
		return 0;
	}
	if (rs == d->me) {
		set_where(d, in, "%s to rank %d", "copy", rd);
		if (!val[src].data)
			return rt_errorf(e, RT_EINTERNAL, "the copy's source '%s' holds no value", p->buffers[src].name);
		return send_tensor(d, rd, 4 * t + PH_DATA, &val[src], 1, NULL, e) < 0 ? -1 : 1;
	}
	set_where(d, in, "%s from rank %d", "copy", rs);
	RtTensor tmp, out;
	double trail = 1;
	ReqSet s = { 0 };
	if (alloc_buf(p, src, &tmp, e) < 0)
		return -1;
	int rc = recv_tensor(d, rs, 4 * t + PH_DATA, &tmp, &trail, &s, e);
	if (rc == 0)
		rc = rs_wait(d, &s, e);
	rs_free(&s);
	tmp.tensor_scale = (float)trail;
	if (rc == 0 && (rc = rt_value_copy(p, dst, &tmp, &out, e)) == 0)
		set_val(val, dst, &out);
	rt_tensor_free(&tmp);
	return rc < 0 ? -1 : 1;
}

static int do_record(RtDist *d, int t, const PlanInstr *in, RtError *e)
{
	d->involved = 1;
	snprintf(d->where, sizeof d->where, "%s:%d (record %s)", d->p->file ? d->p->file : "<plan>", in->line,
		 d->p->events[in->event]);
	double now = rt_dist_now() - d->epoch;
	for (int k = d->ev_off[in->event]; k < d->ev_off[in->event + 1]; k++)
		if (send_staged(d, d->ev_wait[k], d->tag_ev + in->event, &now, sizeof now, e) < 0)
			return -1;
	return 1;
}

static int do_wait(RtDist *d, const PlanInstr *in, RtError *e)
{
	d->involved = 1;
	int r = d->ev_rank[in->event];
	snprintf(d->where, sizeof d->where, "%s:%d (wait %s, recorded on rank %d)", d->p->file ? d->p->file : "<plan>",
		 in->line, d->p->events[in->event], r);
	if (r == d->me || d->ev_got[in->event])
		return 1;
	double when;
	ReqSet s = { 0 };
	int rc = recv_raw(d, r, d->tag_ev + in->event, &when, sizeof when, &s, e);
	if (rc == 0)
		rc = rs_wait(d, &s, e);
	rs_free(&s);
	d->ev_got[in->event] = 1;
	return rc < 0 ? -1 : 1;
}

/* The distinct ranks holding buffers b[0..n), ascending, into out; returns how many. */
static int ranks_of(const RtDist *d, const int *b, int n, int *out)
{
	int k = 0;
	for (int r = 0; r < d->tr->nranks; r++)
		for (int i = 0; i < n; i++)
			if (b[i] >= 0 && brank(d, b[i]) == r) {
				out[k++] = r;
				break;
			}
	return k;
}

static int find(const int *a, int n, int v)
{
	for (int i = 0; i < n; i++)
		if (a[i] == v)
			return i;
	return -1;
}

/* All-reduce over ranks: the K ranks holding inputs each reduce one chunk of the elements
 * (chunk c: [c n / K, (c+1) n / K)), adding every input's chunk in input order into a chunk of
 * the dtype of output 0 (rt_allreduce_add, as one process does over all elements), and send
 * the sums to every rank holding an output; those assemble, round (rt_value_round) and copy
 * into their outputs.  Compressed (rt_instr_codec): each rank adds and sends Q(x) of its inputs
 * and every holder applies Q to the assembled sum, as one process does (the values sent are
 * the decoded ones: the same bits, not the wire bytes). */
static int allreduce(RtDist *d, int t, const PlanInstr *in, RtTensor *val, RtError *e)
{
	const Plan *p = d->p;
	int np = in->nin, me = d->me, nr = d->tr->nranks;
	int *red = rt_calloc((size_t)nr * 2 + 1, sizeof *red), *holder = red ? red + nr : NULL;
	RtTensor *part = rt_calloc((size_t)np + 1, sizeof *part), acc = { 0 }, mine = { 0 };
	ReqSet ra = { 0 }, rb = { 0 }, rs = { 0 };
	int rc = red && part ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory for an all-reduce");
	int K = rc ? 0 : ranks_of(d, in->in, np, red), nh = rc ? 0 : ranks_of(d, in->out, in->nout, holder);
	int cme = rc ? -1 : find(red, K, me), hme = rc ? -1 : find(holder, nh, me);
	int64_t n = rc ? 0 : plan_buffer_numel(&p->buffers[in->in[0]]);
	DType dt = p->buffers[in->out[0]].dtype;
	size_t zo = esize(dt);
	RtCodec codec;
	int cz = rc ? 0 : rt_instr_codec(in, &codec, e);
	RtTensor *qv = rc || cz <= 0 ? NULL : rt_calloc((size_t)np + 1, sizeof *qv);
	if (cz < 0 || (cz > 0 && !qv))
		rc = cz < 0 ? -1 : rt_errorf(e, RT_ENOMEM, "out of memory for an all-reduce");
	for (int r = 0; rc == 0 && qv && r < np; r++)
		if (brank(d, in->in[r]) == me)
			rc = rt_codec_apply(&codec, &val[in->in[r]], &qv[r], e);
#define SRC(r) (qv ? &qv[r] : &val[in->in[r]])
#define LO(c) (n * (int64_t)(c) / K)     /* n < 2^40 elements (rt_tensor_alloc), c <= ranks */
	/* receive the chunks this rank reduces, and the reduced chunks of the others */
	for (int r = 0; rc == 0 && cme >= 0 && r < np; r++) {
		int src = brank(d, in->in[r]);
		int64_t len = LO(cme + 1) - LO(cme);
		if (src == me || len == 0)
			continue;
		int64_t dims[1] = { len };
		if ((rc = rt_tensor_alloc(&part[r], p->buffers[in->in[r]].dtype, 1, dims, e)) == 0)
			rc = recv_raw(d, src, 4 * t + PH_DATA, part[r].data, (size_t)len * esize(part[r].dtype), &ra, e);
	}
	if (rc == 0 && hme >= 0)
		rc = alloc_buf(p, in->out[0], &acc, e);
	for (int c = 0; rc == 0 && hme >= 0 && c < K; c++)
		if (red[c] != me && LO(c + 1) > LO(c))
			rc = recv_raw(d, red[c], 4 * t + PH_REDUCED, (char *)acc.data + (size_t)LO(c) * zo,
				      (size_t)(LO(c + 1) - LO(c)) * zo, &rb, e);
	/* send this rank's inputs' chunks to their reducers, in input order */
	for (int c = 0; rc == 0 && c < K; c++)
		for (int r = 0; rc == 0 && red[c] != me && r < np; r++)
			if (brank(d, in->in[r]) == me && LO(c + 1) > LO(c)) {
				RtTensor v = view1(SRC(r), LO(c), LO(c + 1) - LO(c));
				rc = send_raw(d, red[c], 4 * t + PH_DATA, v.data, (size_t)v.n * esize(v.dtype), &rs, e);
			}
	if (rc == 0)
		rc = rs_wait(d, &ra, e);
	/* reduce this rank's chunk and send it to every holder of an output */
	if (rc == 0 && cme >= 0) {
		int64_t lo = LO(cme), len = LO(cme + 1) - lo, dims[1] = { len };
		rc = rt_tensor_alloc(&mine, dt, 1, dims, e);
		for (int r = 0; rc == 0 && r < np; r++) {
			RtTensor x = brank(d, in->in[r]) == me ? view1(SRC(r), lo, len) : part[r];
			if (len)
				rt_allreduce_add(&mine, &x);
		}
		for (int h = 0; rc == 0 && len && h < nh; h++)
			if (holder[h] != me)
				rc = send_raw(d, holder[h], 4 * t + PH_REDUCED, mine.data, (size_t)len * zo, &rs, e);
		if (rc == 0 && hme >= 0 && len)
			memcpy((char *)acc.data + (size_t)lo * zo, mine.data, (size_t)len * zo);
	}
	if (rc == 0)
		rc = rs_wait(d, &rb, e);
	if (rc == 0)
		rc = rs_wait(d, &rs, e);
#undef LO
#undef SRC
	if (rc == 0 && hme >= 0) {
		rt_value_round(&acc);
		RtTensor q = { 0 };
		if (cz > 0 && (rc = rt_codec_apply(&codec, &acc, &q, e)) == 0) {
			rt_tensor_free(&acc);
			acc = q;
		}
		for (int k = 0; rc == 0 && k < in->nout; k++) {
			RtTensor o;
			if (brank(d, in->out[k]) != me || (rc = alloc_buf(p, in->out[k], &o, e)) < 0)
				continue;
			memcpy(o.data, acc.data, (size_t)o.n * esize(o.dtype));
			set_val(val, in->out[k], &o);
		}
	}
	for (int r = 0; part && r < np; r++)
		rt_tensor_free(&part[r]);
	for (int r = 0; qv && r < np; r++)
		rt_tensor_free(&qv[r]);
	rt_free(qv);
	rt_tensor_free(&acc), rt_tensor_free(&mine);
	rs_free(&ra), rs_free(&rb), rs_free(&rs);
	rt_free(part), rt_free(red);
	return rc;
}

/* A kernel's result against its planned buffer (the interpreter's check_output). */
static int check_result(const Plan *p, const char *op, int b, const RtTensor *t, RtError *e)
{
	const PlanBuffer *pb = &p->buffers[b];
	int ok = t->dtype == pb->dtype && t->rank == pb->rank && t->data;
	for (int i = 0; ok && i < pb->rank; i++)
		ok = t->dims[i] == pb->dims[i];
	return ok ? 0 : rt_errorf(e, RT_EUSER, "%s output 0 does not match the plan's buffer '%s' (%s, rank %d)", op,
				  pb->name, rt_dtype_name(pb->dtype), pb->rank);
}

/* All-gather over ranks: every input goes to every rank holding an output, which concatenates
 * them with the Concat kernel (as one process does) and copies the result into its outputs. */
static int allgather(RtDist *d, int t, const PlanInstr *in, RtTensor *val, RtError *e)
{
	const Plan *p = d->p;
	int np = in->nin, me = d->me, nr = d->tr->nranks;
	int *holder = rt_calloc((size_t)nr + 1, sizeof *holder);
	RtTensor *tmp = rt_calloc((size_t)np + 1, sizeof *tmp), **ins = rt_calloc((size_t)np + 1, sizeof *ins);
	double *trail = rt_calloc((size_t)np + 1, sizeof *trail);
	ReqSet ra = { 0 }, rs = { 0 };
	int rc = holder && tmp && ins && trail ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory for an all-gather");
	int nh = rc ? 0 : ranks_of(d, in->out, in->nout, holder), hme = rc ? -1 : find(holder, nh, me);
	for (int r = 0; rc == 0 && hme >= 0 && r < np; r++) {
		int src = brank(d, in->in[r]);
		if (src == me)
			ins[r] = &val[in->in[r]];
		else if ((rc = alloc_buf(p, in->in[r], &tmp[r], e)) == 0) {
			ins[r] = &tmp[r];
			rc = recv_tensor(d, src, 4 * t + PH_DATA, &tmp[r], &trail[r], &ra, e);
		}
	}
	for (int h = 0; rc == 0 && h < nh; h++)
		for (int r = 0; rc == 0 && holder[h] != me && r < np; r++)
			if (brank(d, in->in[r]) == me)
				rc = send_tensor(d, holder[h], 4 * t + PH_DATA, &val[in->in[r]], 0, &rs, e);
	if (rc == 0)
		rc = rs_wait(d, &ra, e);
	if (rc == 0)
		rc = rs_wait(d, &rs, e);
	if (rc == 0 && hme >= 0) {
		for (int r = 0; r < np; r++)
			if (ins[r] == &tmp[r])
				tmp[r].tensor_scale = (float)trail[r];
		RtTensor res;
		memset(&res, 0, sizeof res);
		res.dtype = p->buffers[in->out[0]].dtype;
		RtKernelArgs a = { ins, np, &res, 1, &in->attrs, &in->opts, NULL };
		rc = rt_kernel(RT_OP_Concat)(&a, e);
		if (rc == 0 && (rc = check_result(p, "AllGather (Concat)", in->out[0], &res, e)) < 0)
			rt_tensor_free(&res);
		for (int k = 1; rc == 0 && k < in->nout; k++) {
			RtTensor o;
			if (brank(d, in->out[k]) == me && (rc = rt_value_copy(p, in->out[k], &res, &o, e)) == 0)
				set_val(val, in->out[k], &o);
		}
		if (rc == 0 && brank(d, in->out[0]) == me)
			set_val(val, in->out[0], &res);
		else
			rt_tensor_free(&res);
	}
	for (int r = 0; tmp && r < np; r++)
		rt_tensor_free(&tmp[r]);
	rs_free(&ra), rs_free(&rs);
	rt_free(holder), rt_free(tmp), rt_free(ins), rt_free(trail);
	return rc;
}

/* All-to-all over ranks: chunk j (along the axis) of input i goes to the rank of output j,
 * which places it as chunk i: the AllToAll kernel's copies (runtime/kernels/collective.c), with
 * its checks. */
static int alltoall(RtDist *d, int t, const PlanInstr *in, RtTensor *val, RtError *e)
{
	const Plan *p = d->p;
	int np = in->nin, me = d->me;
	const PlanBuffer *x = &p->buffers[in->in[0]];
	int64_t axis = rt_attr_int(&in->attrs, "axis", 0);
	if (in->nout != np)
		return rt_errorf(e, RT_EUSER, "AllToAll: %d inputs but %d outputs", np, in->nout);
	if (x->rank < 1)
		return rt_errorf(e, RT_EUSER, "AllToAll: inputs must have rank >= 1");
	if (axis < -x->rank || axis >= x->rank)
		return rt_errorf(e, RT_EUSER, "AllToAll: axis %lld is out of range for rank %d", (long long)axis, x->rank);
	int ax = (int)(axis < 0 ? axis + x->rank : axis);
	for (int i = 0; i < 2 * np; i++) {
		const PlanBuffer *y = &p->buffers[i < np ? in->in[i] : in->out[i - np]];
		int same = y->rank == x->rank && (i < np ? y->dtype == x->dtype :
						   rt_dtypes[y->dtype].storage == rt_dtypes[x->dtype].storage);
		for (int k = 0; same && k < x->rank; k++)
			same = y->dims[k] == x->dims[k];
		if (!same)
			return rt_errorf(e, RT_EUSER, "AllToAll: %s %d has a different type", i < np ? "input" : "output",
					 i < np ? i : i - np);
	}
	if (x->dims[ax] % np)
		return rt_errorf(e, RT_EUSER, "AllToAll: dimension %d (%lld) does not split into %d chunks", ax,
				 (long long)x->dims[ax], np);
	int64_t outer = 1, inner = 1, len = x->dims[ax], ch = len / np;
	for (int k = 0; k < ax; k++)
		outer *= x->dims[k];
	for (int k = ax + 1; k < x->rank; k++)
		inner *= x->dims[k];
	size_t z = esize(x->dtype), run = (size_t)(ch * inner) * z, pack = (size_t)outer * run;
	RtTensor *y = rt_calloc((size_t)np + 1, sizeof *y);
	char **got = rt_calloc((size_t)np * (size_t)np + 1, sizeof *got);
	ReqSet ra = { 0 };
	int rc = y && got ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory for an all-to-all");
	for (int j = 0; rc == 0 && j < np; j++)
		if (brank(d, in->out[j]) == me)
			rc = alloc_buf(p, in->out[j], &y[j], e);
	/* pairs (i, j) in one order on every rank, so the messages of a pair of ranks match */
	for (int i = 0; rc == 0 && i < np; i++)
		for (int j = 0; rc == 0 && j < np; j++) {
			int src = brank(d, in->in[i]), dst = brank(d, in->out[j]);
			if (dst == me && src != me) {
				if (!(got[i * np + j] = rt_malloc(pack ? pack : 1)))
					rc = rt_errorf(e, RT_ENOMEM, "out of memory for an all-to-all");
				else
					rc = recv_raw(d, src, 4 * t + PH_DATA, got[i * np + j], pack, &ra, e);
			} else if (src == me) {
				const char *xi = val[in->in[i]].data;
				char *buf = dst == me ? NULL : rt_malloc(pack ? pack : 1);
				if (dst != me && !buf) {
					rc = rt_errorf(e, RT_ENOMEM, "out of memory for an all-to-all");
					break;
				}
				for (int64_t o = 0; o < outer; o++) {
					const char *from = xi + (size_t)((o * len + j * ch) * inner) * z;
					if (dst == me)
						memcpy((char *)y[j].data + (size_t)((o * len + i * ch) * inner) * z, from, run);
					else
						memcpy(buf + (size_t)o * run, from, run);
				}
				if (buf)
					rc = send_owned(d, dst, 4 * t + PH_DATA, buf, pack, e);
			}
		}
	if (rc == 0)
		rc = rs_wait(d, &ra, e);
	for (int i = 0; rc == 0 && i < np; i++)
		for (int j = 0; j < np; j++)
			for (int64_t o = 0; got[i * np + j] && o < outer; o++)
				memcpy((char *)y[j].data + (size_t)((o * len + i * ch) * inner) * z, got[i * np + j] + (size_t)o * run,
				       run);
	for (int j = 0; y && j < np; j++)
		if (rc == 0 && y[j].data)
			set_val(val, in->out[j], &y[j]);
		else
			rt_tensor_free(&y[j]);
	for (int k = 0; got && k < np * np; k++)
		rt_free(got[k]);
	rs_free(&ra);
	rt_free(y), rt_free(got);
	return rc;
}

/* Reduce-scatter over ranks: chunk j (along the axis) of every input goes to the rank of output
 * j, which adds the chunks in input order from zero into output j's dtype (its own inputs' chunks
 * through rt_reducescatter_add, the received ones through rt_allreduce_add: the same additions
 * as one process) and rounds.  Each rank sends (p-1)/p of its input: the ring's volume.  The
 * messages of a pair of ranks are posted in one order (j, then i) on both sides. */
static int reducescatter(RtDist *d, int t, const PlanInstr *in, RtTensor *val, RtError *e)
{
	const Plan *p = d->p;
	int np = in->nin, me = d->me;
	const PlanBuffer *x = &p->buffers[in->in[0]];
	int64_t axis = rt_attr_int(&in->attrs, "axis", 0);
	int ax = (int)(axis < 0 ? axis + x->rank : axis);     /* checked by plan_verify */
	int64_t outer = 1, inner = 1, len = x->dims[ax], ch = len / np;
	for (int k = 0; k < ax; k++)
		outer *= x->dims[k];
	for (int k = ax + 1; k < x->rank; k++)
		inner *= x->dims[k];
	size_t z = esize(x->dtype), run = (size_t)(ch * inner) * z;
	RtTensor *part = rt_calloc((size_t)np * (size_t)np + 1, sizeof *part);
	ReqSet ra = { 0 };
	int rc = part ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory for a reduce-scatter");
	for (int j = 0; rc == 0 && j < np; j++)
		for (int i = 0; rc == 0 && i < np; i++) {
			int src = brank(d, in->in[i]), dst = brank(d, in->out[j]);
			if (dst == me && src != me) {
				int64_t dims[1] = { outer * ch * inner };
				if ((rc = rt_tensor_alloc(&part[j * np + i], x->dtype, 1, dims, e)) == 0)
					rc = recv_raw(d, src, 4 * t + PH_DATA, part[j * np + i].data, (size_t)outer * run, &ra, e);
			} else if (src == me && dst != me) {
				char *buf = rt_malloc((size_t)outer * run + 1);
				const char *xi = val[in->in[i]].data;
				if (!buf) {
					rc = rt_errorf(e, RT_ENOMEM, "out of memory for a reduce-scatter");
					break;
				}
				for (int64_t o = 0; o < outer; o++)
					memcpy(buf + (size_t)o * run, xi + (size_t)((o * len + j * ch) * inner) * z, run);
				rc = send_owned(d, dst, 4 * t + PH_DATA, buf, (size_t)outer * run, e);
			}
		}
	if (rc == 0)
		rc = rs_wait(d, &ra, e);
	for (int j = 0; rc == 0 && j < np; j++) {
		RtTensor acc;
		if (brank(d, in->out[j]) != me)
			continue;
		if ((rc = alloc_buf(p, in->out[j], &acc, e)) < 0)
			break;
		for (int i = 0; i < np; i++)
			if (brank(d, in->in[i]) == me)
				rt_reducescatter_add(&acc, &val[in->in[i]], ax, j, np);
			else
				rt_allreduce_add(&acc, &part[j * np + i]);
		rt_value_round(&acc);
		set_val(val, in->out[j], &acc);
	}
	for (int k = 0; part && k < np * np; k++)
		rt_tensor_free(&part[k]);
	rs_free(&ra);
	rt_free(part);
	return rc;
}

static int do_collective(RtDist *d, int t, const PlanInstr *in, RtTensor *val, RtError *e)
{
	int mine = 0, all = 1;
	for (int k = 0; k < in->nin + in->nout; k++) {
		int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
		mine |= brank(d, b) == d->me;
		all &= brank(d, b) == d->me;
	}
	if (!mine)
		return 1;
	d->involved = 1;
	char ranks[96] = "";
	int rk[64], nrk = ranks_of(d, in->in, in->nin, rk);
	for (int i = 0; i < nrk && strlen(ranks) < sizeof ranks - 16; i++)
		snprintf(ranks + strlen(ranks), sizeof ranks - strlen(ranks), "%s%d", i ? "," : "", rk[i]);
	snprintf(d->where, sizeof d->where, "%s:%d (%s over ranks %s)", d->p->file ? d->p->file : "<plan>", in->line,
		 plan_coll_names[in->coll], ranks);
	if (all)
		return 0;
	int rc = in->coll == PC_ALLREDUCE ? allreduce(d, t, in, val, e) :
		 in->coll == PC_ALLGATHER ? allgather(d, t, in, val, e) :
		 in->coll == PC_REDUCESCATTER ? reducescatter(d, t, in, val, e) : alltoall(d, t, in, val, e);
	return rc < 0 ? -1 : 1;
}

/* ---- hooks ---- */
static int h_step(void *ctx, int t, const PlanStep *s, RtTensor *val, RtError *e)
{
	RtDist *d = ctx;
	const Plan *p = d->p;
	const PlanInstr *in = &p->streams[s->stream].ins[s->index];
	int sdev = p->streams[s->stream].device;
	if (t == 0) {        /* a new run */
		memset(&d->st, 0, sizeof d->st);
		memset(d->ev_got, 0, (size_t)p->nevents + 1);
		for (int i = 0; i < 2 * d->nsteps; i++)
			d->times[i] = -1;
		d->t_start = rt_dist_now();
	}
	double t0 = rt_dist_now();
	d->involved = 0;
	if (d->nstaged && reap(d, e) < 0)
		return -1;
	int rc = 1;
	switch (in->kind) {
	case PI_KERNEL:
		if (d->local[sdev]) {
			d->involved = 1;
			snprintf(d->where, sizeof d->where, "%s:%d (%s)", p->file ? p->file : "<plan>", in->line,
				 plan_op_name(in->op));
			rc = 0;
		}
		break;
	case PI_COPY: rc = do_copy(d, t, in, val, e); break;
	case PI_RECORD: rc = d->local[sdev] ? do_record(d, t, in, e) : 1; break;
	case PI_WAIT: rc = d->local[sdev] ? do_wait(d, in, e) : 1; break;
	case PI_COLLECTIVE: rc = do_collective(d, t, in, val, e); break;
	case PI_COUNT: break;
	}
	if (d->involved)
		d->times[2 * t] = t0 - d->epoch, d->st.steps++;
	return rc;
}

static void h_done(void *ctx, int t)
{
	RtDist *d = ctx;
	if (d->times[2 * t] >= 0)
		d->times[2 * t + 1] = rt_dist_now() - d->epoch;
}

/* Every output's value to rank 0 (each buffer once). */
static int h_finish(void *ctx, RtTensor *val, RtError *e)
{
	RtDist *d = ctx;
	const Plan *p = d->p;
	double *trail = rt_calloc((size_t)p->noutputs + 1, sizeof *trail);
	ReqSet ra = { 0 }, rs = { 0 };
	int rc = trail ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory gathering outputs");
	snprintf(d->where, sizeof d->where, "%s (sending outputs to rank 0)", p->file ? p->file : "<plan>");
	for (int i = 0; rc == 0 && i < p->noutputs; i++) {
		int b = p->outputs[i].buffer, r = brank(d, b), dup = 0;
		for (int j = 0; j < i; j++)
			dup |= p->outputs[j].buffer == b;
		if (r == 0 || dup)
			continue;
		if (r == d->me) {
			if (!val[b].data)
				rc = rt_errorf(e, RT_EINTERNAL, "output '%s' holds no value", p->outputs[i].name);
			else
				rc = send_tensor(d, 0, d->tag_out + 2 * i, &val[b], 0, &rs, e);
		} else if (d->me == 0 && (rc = alloc_buf(p, b, &val[b], e)) == 0)
			rc = recv_tensor(d, r, d->tag_out + 2 * i, &val[b], &trail[i], &ra, e);
	}
	if (rc == 0)
		rc = rs_wait(d, &ra, e);
	if (rc == 0)
		rc = rs_wait(d, &rs, e);
	for (int i = 0; rc == 0 && d->me == 0 && i < p->noutputs; i++) {
		int b = p->outputs[i].buffer;
		if (brank(d, b) != 0 && trail[i] != 0)
			val[b].tensor_scale = (float)trail[i];
	}
	if (rc == 0)
		rc = flush(d, e);
	rs_free(&ra), rs_free(&rs);
	rt_free(trail);
	d->st.run_s = rt_dist_now() - d->t_start;
	snprintf(d->where, sizeof d->where, "%s (after the last instruction)", p->file ? p->file : "<plan>");
	return rc < 0 ? -1 : d->me == 0;
}

/* ---- setup ---- */
RtDist *rt_dist_new(const Plan *p, const int *dev_rank, const RtTransport *tr, RtError *e)
{
	RtDist *d = rt_calloc(1, sizeof *d);
	PlanStep *order = NULL;
	int n = 0;
	if (!d)
		return rt_errorf(e, RT_ENOMEM, "out of memory"), NULL;
	d->p = p, d->tr = tr, d->me = tr->rank;
	if (plan_linearize(p, &order, &n, e) < 0) {
		rt_free(d);
		return NULL;
	}
	d->nsteps = n;
	d->dev_rank = rt_calloc((size_t)p->ndevices + 1, sizeof *d->dev_rank);
	d->local = rt_calloc((size_t)p->ndevices + 1, 1);
	d->buf_rank = rt_calloc((size_t)p->nbuffers + 1, sizeof *d->buf_rank);
	d->ev_rank = rt_calloc((size_t)p->nevents + 1, sizeof *d->ev_rank);
	d->ev_off = rt_calloc((size_t)p->nevents + 2, sizeof *d->ev_off);
	d->ev_got = rt_calloc((size_t)p->nevents + 1, 1);
	d->times = rt_calloc((size_t)n * 2 + 1, sizeof *d->times);
	unsigned char *waits = rt_calloc((size_t)p->nevents * (size_t)tr->nranks + 1, 1);
	if (!d->dev_rank || !d->local || !d->buf_rank || !d->ev_rank || !d->ev_off || !d->ev_got || !d->times || !waits) {
		rt_free(waits), rt_free(order);
		rt_dist_free(d);
		return rt_errorf(e, RT_ENOMEM, "out of memory"), NULL;
	}
	for (int i = 0; i < p->ndevices; i++) {
		d->dev_rank[i] = dev_rank[i];
		d->local[i] = dev_rank[i] == d->me;
	}
	for (int b = 0; b < p->nbuffers; b++)
		d->buf_rank[b] = dev_rank[p->spaces[p->buffers[b].space].device];
	for (int ev = 0; ev < p->nevents; ev++)
		d->ev_rank[ev] = -1;
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			int r = dev_rank[p->streams[s].device];
			if (in->kind == PI_RECORD)
				d->ev_rank[in->event] = r;
			else if (in->kind == PI_WAIT)
				waits[(size_t)in->event * (size_t)tr->nranks + (size_t)r] = 1;
		}
	int nw = 0;
	for (int ev = 0; ev < p->nevents; ev++)
		for (int r = 0; r < tr->nranks; r++)
			nw += waits[(size_t)ev * (size_t)tr->nranks + (size_t)r] && r != d->ev_rank[ev];
	d->ev_wait = rt_calloc((size_t)nw + 1, sizeof *d->ev_wait);
	if (!d->ev_wait) {
		rt_free(waits), rt_free(order);
		rt_dist_free(d);
		return rt_errorf(e, RT_ENOMEM, "out of memory"), NULL;
	}
	nw = 0;
	for (int ev = 0; ev < p->nevents; ev++) {
		d->ev_off[ev] = nw;
		for (int r = 0; r < tr->nranks; r++)
			if (waits[(size_t)ev * (size_t)tr->nranks + (size_t)r] && r != d->ev_rank[ev])
				d->ev_wait[nw++] = r;
	}
	d->ev_off[p->nevents] = nw;
	rt_free(waits), rt_free(order);
	d->tag_ev = 4 * n;
	d->tag_out = d->tag_ev + p->nevents;
	if ((double)d->tag_out + 2.0 * p->noutputs + 2 > (double)tr->max_tag) {
		rt_dist_free(d);
		return rt_errorf(e, RT_EUSER, "the plan has too many instructions (%d) for the transport's %d message tags",
				 n, tr->max_tag), NULL;
	}
	d->hooks = (RtDistHooks){ d, d->local, d->me == 0, h_step, h_done, h_finish };
	d->epoch = rt_dist_now();
	snprintf(d->where, sizeof d->where, "%s (before the first instruction)", p->file ? p->file : "<plan>");
	return d;
}

void rt_dist_free(RtDist *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nstaged; i++) {
		RtError e;
		if (d->tr->test(d->tr->ctx, d->staged[i].id, &e) == 1)
			rt_free(d->staged[i].buf);
	}
	rt_free(d->staged);
	rt_free(d->dev_rank), rt_free(d->local), rt_free(d->buf_rank);
	rt_free(d->ev_rank), rt_free(d->ev_off), rt_free(d->ev_wait), rt_free(d->ev_got);
	rt_free(d->times);
	rt_free(d);
}

const RtDistHooks *rt_dist_hooks(const RtDist *d) { return &d->hooks; }
int rt_dist_local(const RtDist *d, int dev) { return d->local[dev]; }
const RtDistStats *rt_dist_stats(const RtDist *d) { return &d->st; }
const double *rt_dist_times(const RtDist *d, int *n)
{
	*n = d->nsteps;
	return d->times;
}
void rt_dist_set_epoch(RtDist *d, double t0) { d->epoch = t0; }
const char *rt_dist_where(const RtDist *d) { return d->where; }

/* ---- maps ---- */
/* "gpu0, gpu1, ... (N devices)" into buf. */
static const char *device_list(const Plan *p, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < p->ndevices && o + 40 < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", p->devices[i].name);
	if (o + 40 >= n)
		snprintf(buf + o, n - o, ", ...");
	return buf;
}

int rt_dist_map_default(const Plan *p, int nranks, int *dev_rank, RtError *e)
{
	int nd = p->ndevices;
	if (nranks >= 1 && nranks <= nd && nd % nranks == 0) {
		for (int i = 0; i < nd; i++)
			dev_rank[i] = i / (nd / nranks);
		return 0;
	}
	char devs[400], fits[200] = "";
	for (int k = 1, o = 0; k <= nd && o < (int)sizeof fits - 16; k++)
		if (nd % k == 0)
			o += snprintf(fits + o, sizeof fits - (size_t)o, "%s%d", o ? ", " : "", k);
	return rt_errorf(e, RT_EUSER, "the plan has %d device%s (%s); %d ranks cannot hold them in equal contiguous "
			 "groups: run mpirun -np N with N one of %s, or give --rank-map FILE", nd, nd == 1 ? "" : "s",
			 device_list(p, devs, sizeof devs), nranks, fits);
}

int rt_dist_map_file(const Plan *p, int nranks, const char *path, int *dev_rank, RtError *e)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return rt_errorf(e, RT_EUSER, "cannot read the rank map '%s': %s", path, strerror(errno));
	int *line_of = rt_calloc((size_t)p->ndevices + 1, sizeof *line_of);
	if (!line_of) {
		fclose(f);
		return rt_errorf(e, RT_ENOMEM, "out of memory reading '%s'", path);
	}
	char buf[512], devs[400];
	int ln = 0, rc = 0;
	while (rc == 0 && fgets(buf, sizeof buf, f)) {
		ln++;
		char *h = strchr(buf, '#'), name[256], extra[8];
		if (h)
			*h = 0;
		long r;
		int k = sscanf(buf, "%255s %ld %7s", name, &r, extra);
		if (k <= 0)
			continue;
		if (k != 2) {
			rc = rt_errorf(e, RT_EUSER, "%s:%d: error: expected 'DEVICE RANK'", path, ln);
			break;
		}
		int dv = plan_find_device(p, name);
		if (dv < 0)
			rc = rt_errorf(e, RT_EUSER, "%s:%d: error: the plan has no device '%s' (its devices: %s)", path, ln, name,
				       device_list(p, devs, sizeof devs));
		else if (line_of[dv])
			rc = rt_errorf(e, RT_EUSER, "%s:%d: error: device '%s' is mapped twice (first on line %d)", path, ln,
				       name, line_of[dv]);
		else if (r < 0 || r >= nranks)
			rc = rt_errorf(e, RT_EUSER, "%s:%d: error: rank %ld is outside 0..%d (the job has %d rank%s)", path, ln,
				       r, nranks - 1, nranks, nranks == 1 ? "" : "s");
		else {
			dev_rank[dv] = (int)r;
			line_of[dv] = ln;
		}
	}
	if (rc == 0 && ferror(f))
		rc = rt_errorf(e, RT_EUSER, "cannot read the rank map '%s': %s", path, strerror(errno));
	fclose(f);
	for (int i = 0; rc == 0 && i < p->ndevices; i++)
		if (!line_of[i])
			rc = rt_errorf(e, RT_EUSER, "%s: error: device '%s' has no rank (every device needs a line "
				       "'%s RANK')", path, p->devices[i].name, p->devices[i].name);
	for (int r = 0; rc == 0 && r < nranks; r++) {
		int any = 0;
		for (int i = 0; i < p->ndevices; i++)
			any |= dev_rank[i] == r;
		if (!any)
			rc = rt_errorf(e, RT_EUSER, "%s: error: rank %d holds no device (run with fewer ranks, or map a "
				       "device to it)", path, r);
	}
	rt_free(line_of);
	return rc;
}
