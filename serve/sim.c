/* serve/sim.c: the discrete-event simulation of an inference server.
 *
 * Events (a binary heap ordered by time, then by creation, so runs are deterministic): a
 * request arrives; an engine's iteration ends; a KV transfer ends.  An engine is one replica of
 * a pool; when idle with work it forms the next batch with its scheduler, asks serve_iter_cost
 * for the accelerator time of that exact composition, adds the engine CPU time (or overlaps it),
 * and schedules the iteration's end, where tokens are emitted and KV blocks released.
 *
 * Schedulers (docs/serving.md names the papers and what is taken from each):
 *   continuous  Orca (OSDI'22) iteration-level batching as vLLM v0 runs it (vllm/core/scheduler.py
 *               _schedule_default): when waiting prompts fit (max batch, token budget, free KV
 *               blocks above a 1 % watermark, FCFS with head-of-line blocking) the iteration is
 *               prefill only; otherwise every running sequence decodes one token; a sequence that
 *               needs a block when none is free preempts the latest-arrived running one
 *               (recompute: its blocks are freed and prompt + generated tokens are prefilled
 *               again; swap: its blocks move to host memory over the host link and back later).
 *   sarathi     Sarathi-Serve (OSDI'24) stall-free batching: every running decode first, then
 *               the chunks of prefills in progress, then new prompts, up to the token budget tau
 *               per iteration, each chunk at most --chunk tokens: one hybrid batch.
 *   disagg      DistServe (OSDI'24) / Splitwise (ISCA'24): prompts run on prefill engines
 *               (prefill-only batches up to the token budget), whose last iteration emits the first
 *               token; the KV cache then crosses the link between the pools (FIFO per decode
 *               engine, latency + bytes / bandwidth) to the least-loaded decode engine, which
 *               batches decodes continuously.
 *   speculative decoding (Leviathan et al., ICML'23; vLLM's draft-model proposer): a decode
 *               iteration runs k draft steps on the draft pool, then one verify step of k + 1 tokens
 *               per sequence on the main pool; each draft is accepted with probability `accept`
 *               until the first rejection, and the verifier adds one token.
 * KV cache: per engine floor(kv_tokens / block) blocks of `block` tokens.  paged (vLLM): blocks
 * on demand; Orca's contiguous reservations: max (max_seq tokens), pow2 (in + out rounded up to a
 * power of two) and oracle (in + out) are reserved whole at admission and never grow.
 */
#include "serve/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/random.h"

enum { R_NEW, R_WAIT, R_RUN, R_XFER, R_SWAPPED, R_DONE };
enum { EV_ARRIVE, EV_ITER, EV_XFER };

typedef struct Req {
	int64_t in, out;
	int64_t target;      /* tokens to prefill: in, or in + gen after a recompute */
	int64_t filled;      /* of those, with KV computed */
	int64_t gen;         /* output tokens so far */
	int64_t blocks;      /* KV blocks held on its engine (or on the host when swapped) */
	int engine;          /* index into Sim.eng */
	int src;             /* disaggregated: the prefill engine holding its KV during the transfer */
	int state;
	double arrival, first, done, last;   /* last: when its latest output was streamed */
	int preempt;
} Req;

typedef struct IntVec {
	int *v;
	int n, cap;
} IntVec;

typedef struct Eng {
	SvPool *P;
	int pool;            /* 0 main / decode, 1 prefill */
	int idx;             /* replica within its pool */
	int prefill_only;
	int64_t nblocks, used;
	IntVec waiting, running, swapped;
	int busy;
	double start;
	/* the iteration in flight: members and what each runs */
	IntVec mem;
	int64_t *mem_s;      /* tokens of member i (chunk tokens, or decode tokens) */
	unsigned char *mem_decode;
	int cap_mem;
	double link_free;    /* inbound KV link (decode engines of a disaggregated deployment) */
	int dirty;           /* something changed: try to start an iteration */
	int inflight;        /* KV transfers on their way to it */
} Eng;

typedef struct Event {
	double t;
	int64_t seq;
	int kind, a;
} Event;

typedef struct Sim {
	const SvDeploy *d;
	const SvWorkload *w;
	SvRun *run;
	Req *r;
	Eng *eng;
	int neng, nmain;     /* engines: main pool first, then the prefill pool */
	Event *h;
	int nh, caph;
	int64_t seq;
	double now;
	int ndone;
	uint64_t draws;
	SvError *e;
	int failed;
} Sim;

static void vec_push(IntVec *v, int x)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 16;
		int *nv = realloc(v->v, (size_t)v->cap * sizeof *nv);
		if (!nv)
			abort();
		v->v = nv;
	}
	v->v[v->n++] = x;
}

static void vec_insert(IntVec *v, int at, int x)
{
	vec_push(v, x);
	memmove(v->v + at + 1, v->v + at, (size_t)(v->n - 1 - at) * sizeof *v->v);
	v->v[at] = x;
}

static void vec_remove_at(IntVec *v, int at)
{
	memmove(v->v + at, v->v + at + 1, (size_t)(v->n - 1 - at) * sizeof *v->v);
	v->n--;
}

static void vec_remove(IntVec *v, int x)
{
	for (int i = 0; i < v->n; i++)
		if (v->v[i] == x) {
			vec_remove_at(v, i);
			return;
		}
}

/* ---- events ---- */

static int ev_less(const Event *a, const Event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void ev_push(Sim *s, double t, int kind, int a)
{
	if (s->nh == s->caph) {
		s->caph = s->caph ? 2 * s->caph : 1024;
		Event *nh = realloc(s->h, (size_t)s->caph * sizeof *nh);
		if (!nh)
			abort();
		s->h = nh;
	}
	int i = s->nh++;
	s->h[i] = (Event){ t, s->seq++, kind, a };
	while (i > 0 && ev_less(&s->h[i], &s->h[(i - 1) / 2])) {
		Event tmp = s->h[i];
		s->h[i] = s->h[(i - 1) / 2];
		s->h[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static Event ev_pop(Sim *s)
{
	Event top = s->h[0];
	s->h[0] = s->h[--s->nh];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nh && ev_less(&s->h[l], &s->h[m]))
			m = l;
		if (r < s->nh && ev_less(&s->h[r], &s->h[m]))
			m = r;
		if (m == i)
			break;
		Event tmp = s->h[i];
		s->h[i] = s->h[m];
		s->h[m] = tmp;
		i = m;
	}
	return top;
}

/* ---- KV blocks ---- */

static int64_t blocks_for(const Sim *s, int64_t tokens)
{
	return (tokens + s->d->block - 1) / s->d->block;
}

/* Blocks a request holds once it has `tokens` of KV: on demand (paged) or its reservation. */
static int64_t need_blocks(const Sim *s, const Req *r, int64_t tokens)
{
	int64_t full = r->in + r->out, res;
	switch (s->d->kv_alloc) {
	case SV_KV_MAX:
		res = s->d->max_seq;
		break;
	case SV_KV_POW2:
		for (res = 1; res < full; res *= 2)
			;
		break;
	case SV_KV_ORACLE:
		res = full;
		break;
	default:
		return blocks_for(s, tokens);
	}
	return blocks_for(s, res > tokens ? res : tokens);
}

/* Grows (or allocates) r's blocks to hold `tokens`; 0 when they do not fit. */
static int grow(Sim *s, Eng *en, Req *r, int64_t tokens, int64_t reserve)
{
	int64_t need = need_blocks(s, r, tokens) - r->blocks;
	if (need <= 0)
		return 1;
	if (en->used + need > en->nblocks - reserve)
		return 0;
	en->used += need;
	r->blocks += need;
	return 1;
}

static void release(Eng *en, Req *r)
{
	en->used -= r->blocks;
	r->blocks = 0;
}

/* Past tokens of a decoding request: its prompt and all but the last generated token. */
static int64_t ctx_of(const Req *r)
{
	return r->in + r->gen - 1;
}

/* ---- preemption ---- */

static double preempt(Sim *s, Eng *en, int id)
{
	Req *r = &s->r[id];
	vec_remove(&en->running, id);
	r->preempt++;
	s->run->preemptions++;
	if (s->d->preempt == SV_SWAP && en->P->host_bw > 0) {
		double bytes = (double)(r->blocks * s->d->block) * en->P->kv_token_bytes_all;
		en->used -= r->blocks;        /* the blocks now live in host memory */
		r->state = R_SWAPPED;
		vec_push(&en->swapped, id);
		s->run->swaps++;
		return bytes / en->P->host_bw;
	}
	release(en, r);
	r->target = r->in + r->gen;      /* vLLM recomputes the prompt and every generated token */
	r->filled = 0;
	r->state = R_WAIT;
	vec_insert(&en->waiting, 0, id);
	return 0;
}

/* ---- forming a batch ---- */

static void add_member(Eng *en, int id, int64_t tokens, int decode)
{
	if (en->mem.n == en->cap_mem) {
		en->cap_mem = en->cap_mem ? 2 * en->cap_mem : 64;
		en->mem_s = realloc(en->mem_s, (size_t)en->cap_mem * sizeof *en->mem_s);
		en->mem_decode = realloc(en->mem_decode, (size_t)en->cap_mem);
		if (!en->mem_s || !en->mem_decode)
			abort();
	}
	en->mem_s[en->mem.n] = tokens;
	en->mem_decode[en->mem.n] = (unsigned char)decode;
	vec_push(&en->mem, id);
}

/* Tokens a decode step runs per sequence: 1, or k + 1 when verifying k drafts. */
static int64_t decode_tokens(const Sim *s)
{
	return s->d->draft ? s->d->spec_k + 1 : 1;
}

/* Every running, fully prefilled sequence decodes; those needing a block that is not free
 * preempt from the back of the running list (vLLM _schedule_running).  Returns swap seconds. */
static double schedule_decodes(Sim *s, Eng *en, int64_t *budget)
{
	double swap = 0;
	int64_t k = decode_tokens(s);
	for (int i = 0; i < en->running.n; i++) {
		int id = en->running.v[i];
		Req *r = &s->r[id];
		if (r->filled < r->target || r->gen < 1)
			continue;
		while (!grow(s, en, r, ctx_of(r) + k, 0)) {
			int victim = en->running.v[en->running.n - 1];
			swap += preempt(s, en, victim);
			if (victim == id) {
				i--;
				goto next;
			}
		}
		add_member(en, id, k, 1);
		*budget -= k;
	next:;
	}
	return swap;
}

/* Swapped sequences come back (FCFS) while their blocks fit; returns the swap-in seconds. */
static double swap_in(Sim *s, Eng *en)
{
	double t = 0;
	while (en->swapped.n) {
		Req *r = &s->r[en->swapped.v[0]];
		if (en->used + r->blocks > en->nblocks || en->running.n >= s->d->max_batch)
			break;
		en->used += r->blocks;
		t += (double)(r->blocks * s->d->block) * en->P->kv_token_bytes_all / en->P->host_bw;
		r->state = R_RUN;
		vec_push(&en->running, en->swapped.v[0]);
		vec_remove_at(&en->swapped, 0);
	}
	return t;
}

/* Admits waiting requests FCFS (max batch, KV blocks above the watermark); each admitted one
 * with prefill left adds a chunk of at most min(its remainder, budget, chunk cap) tokens.
 * `whole`: a prompt runs whole or not at all (no chunking). */
static void admit(Sim *s, Eng *en, int64_t *budget, int whole, int64_t cap)
{
	int64_t water = en->nblocks / 100;
	while (en->waiting.n && en->running.n < s->d->max_batch) {
		int id = en->waiting.v[0];
		Req *r = &s->r[id];
		int64_t rem = r->target - r->filled, c = rem < cap ? rem : cap;
		if (c > *budget)
			c = *budget;
		if (rem > 0 && (c <= 0 || (whole && c < rem && en->mem.n > 0)))
			break;
		if (whole)
			c = rem;
		int64_t kv = r->state == R_XFER ? r->in : r->target;   /* transferred KV, or the prompt */
		if (!grow(s, en, r, kv, water))
			break;
		vec_remove_at(&en->waiting, 0);
		r->state = R_RUN;
		vec_push(&en->running, id);
		if (c > 0) {
			add_member(en, id, c, 0);
			*budget -= c;
			if (en->P->batch_form)
				break;     /* its plans price one whole prompt per prefill step */
		}
	}
}

/* Chunks of prefills already admitted (Sarathi), FCFS. */
static void continue_prefills(Sim *s, Eng *en, int64_t *budget, int64_t cap)
{
	for (int i = 0; i < en->running.n && *budget > 0; i++) {
		Req *r = &s->r[en->running.v[i]];
		int64_t rem = r->target - r->filled, c = rem < cap ? rem : cap;
		if (rem <= 0)
			continue;
		if (c > *budget)
			c = *budget;
		add_member(en, en->running.v[i], c, 0);
		*budget -= c;
	}
}

/* Forms en's next batch (vLLM's order: _schedule_default, and _schedule_chunked_prefill for
 * Sarathi); returns extra seconds (swapping) that the iteration pays. */
static double form_batch(Sim *s, Eng *en)
{
	const SvDeploy *d = s->d;
	int64_t budget = d->token_budget, cap = d->chunk > 0 ? d->chunk : d->token_budget;
	int64_t pre0 = s->run->preemptions;
	double extra = 0;
	en->mem.n = 0;
	if (en->prefill_only) {
		admit(s, en, &budget, 1, INT64_MAX);
		return 0;
	}
	if (d->sched == SV_SARATHI) {
		extra += schedule_decodes(s, en, &budget);
		continue_prefills(s, en, &budget, cap);
		if (s->run->preemptions == pre0 && en->swapped.n)
			extra += swap_in(s, en);
		if (s->run->preemptions == pre0 && !en->swapped.n)
			admit(s, en, &budget, 0, cap);
		return extra;
	}
	/* continuous: a prefill-only iteration when prompts fit, else every sequence decodes */
	if (!en->swapped.n) {
		admit(s, en, &budget, 1, INT64_MAX);
		if (en->mem.n)
			return 0;
	}
	budget = d->token_budget;
	extra += schedule_decodes(s, en, &budget);
	if (s->run->preemptions == pre0 && en->swapped.n)
		extra += swap_in(s, en);
	return extra;
}

/* The SvBatch of the members (decodes as one group with their mean context). */
static void batch_of(Sim *s, Eng *en, SvBatch *b)
{
	memset(b, 0, sizeof *b);
	int64_t ctx = 0;
	for (int i = 0; i < en->mem.n; i++) {
		Req *r = &s->r[en->mem.v[i]];
		if (en->mem_decode[i]) {
			b->decodes++;
			b->decode_s = en->mem_s[i];
			ctx += ctx_of(r);
		} else if (b->nchunks < SV_MAX_CHUNKS) {
			b->chunk[b->nchunks++] = (SvChunk){ en->mem_s[i], r->filled };
		} else {   /* more prompts than a batch records: fold into the last chunk's tokens */
			b->chunk[SV_MAX_CHUNKS - 1].s += en->mem_s[i];
		}
	}
	if (b->decodes)
		b->decode_p = (ctx + b->decodes - 1) / b->decodes;
}

/* Accelerator seconds of the batch, draft steps included. */
static double batch_cost(Sim *s, Eng *en, const SvBatch *b)
{
	double t = serve_iter_cost(en->P, b, s->e);
	if (t < 0 || !s->d->draft || en->pool != 0)
		return t;
	SvBatch db = *b;
	double dt;
	if (b->decodes) {          /* k draft steps of one token, then the verify step (b itself) */
		db.decode_s = 1;
		db.nchunks = 0;
		dt = serve_iter_cost(s->d->draft, &db, s->e);
		if (dt < 0)
			return -1;
		t += s->d->spec_k * dt;
	}
	if (b->nchunks) {          /* the draft model prefills the same prompts alongside */
		db.decodes = 0;
		db = *b;
		db.decodes = 0;
		dt = serve_iter_cost(s->d->draft, &db, s->e);
		if (dt < 0)
			return -1;
		t = fmax(t, dt);
	}
	return t;
}

static void record(Sim *s, Eng *en, const SvBatch *b, double dur, double cpu)
{
	SvRun *r = s->run;
	if (r->nit == r->capit) {
		r->capit = r->capit ? 2 * r->capit : 4096;
		SvSample *ni = realloc(r->it, (size_t)r->capit * sizeof *ni);
		if (!ni)
			abort();
		r->it = ni;
	}
	int64_t pre = 0;
	for (int i = 0; i < b->nchunks; i++)
		pre += b->chunk[i].s;
	r->it[r->nit++] = (SvSample){ s->now, dur, cpu, en->pool, en->idx, en->mem.n, sv_batch_tokens(b), pre,
				      en->nblocks ? (double)en->used / (double)en->nblocks : 0 };
}

static void log_iter(Sim *s, Eng *en, const SvBatch *b, double accel, double cpu)
{
	FILE *f = s->d->logf ? s->d->logf : stdout;
	fprintf(f, "iter t=%.6f pool=%s engine=%d decodes=%lld", s->now, en->P->role, en->idx, (long long)b->decodes);
	if (b->decodes)
		fprintf(f, "x%lld+%lld", (long long)(b->decode_s ? b->decode_s : 1), (long long)b->decode_p);
	fprintf(f, " chunks=");
	for (int i = 0; i < b->nchunks; i++)
		fprintf(f, "%s%lld+%lld", i ? "," : "", (long long)b->chunk[i].s, (long long)b->chunk[i].p);
	if (!b->nchunks)
		fputc('-', f);
	fprintf(f, " accel=%.6f cpu=%.6f kv=%lld/%lld\n", accel, cpu, (long long)en->used, (long long)en->nblocks);
}

/* Starts en's next iteration if it is idle and has work. */
static void kick(Sim *s, Eng *en)
{
	if (en->busy || s->failed)
		return;
	double extra = form_batch(s, en);
	if (!en->mem.n)
		return;
	SvBatch b;
	batch_of(s, en, &b);
	double accel = batch_cost(s, en, &b);
	if (accel < 0) {
		s->failed = 1;
		return;
	}
	accel += extra;
	double cpu = en->P->cpu_s, dur = en->P->cpu_overlap ? fmax(accel, cpu) : accel + cpu;
	if (s->d->log)
		log_iter(s, en, &b, accel, cpu);
	record(s, en, &b, dur, cpu);
	s->run->accel_s += accel;
	s->run->cpu_s += cpu;
	s->run->iterations++;
	en->busy = 1;
	en->start = s->now;
	ev_push(s, s->now + dur, EV_ITER, (int)(en - s->eng));
}

/* ---- completing work ---- */

static void finish(Sim *s, Eng *en, int id)
{
	Req *r = &s->r[id];
	release(en, r);
	vec_remove(&en->running, id);
	r->state = R_DONE;
	r->done = s->now;
	s->ndone++;
}

/* The least-loaded engine in [lo, hi) (fewest requests queued, running or arriving). */
static int least_loaded(Sim *s, int lo, int hi)
{
	int best = lo;
	long bl = -1;
	for (int i = lo; i < hi; i++) {
		Eng *en = &s->eng[i];
		long load = en->waiting.n + en->running.n + en->swapped.n + en->inflight;
		if (bl < 0 || load < bl)
			best = i, bl = load;
	}
	return best;
}

/* A prefilled request leaves its prefill engine: its KV crosses the link to the least-loaded
 * decode engine (FIFO per inbound link); the prefill engine keeps the blocks until it lands. */
static void transfer(Sim *s, Eng *from, int id)
{
	Req *r = &s->r[id];
	vec_remove(&from->running, id);
	int to = least_loaded(s, 0, s->nmain);
	Eng *dst = &s->eng[to];
	double bytes = (double)r->in * from->P->kv_token_bytes_all;
	double start = fmax(s->now, dst->link_free), dur = s->d->kv_link_lat + bytes / s->d->kv_link_bw;
	dst->link_free = start + dur;
	dst->inflight++;
	s->run->transfer_s += dur;
	r->state = R_XFER;
	r->src = (int)(from - s->eng);
	r->engine = to;
	ev_push(s, start + dur, EV_XFER, id);
}

/* Tokens accepted in one speculative step: leading drafts accepted with probability `accept`,
 * at most k, plus the verifier's own token. */
static int64_t spec_tokens(Sim *s)
{
	int64_t a = 0;
	while (a < s->d->spec_k &&
	       (double)(rt_rand_u64(s->d->seed, 7, s->draws++) >> 11) * 0x1p-53 < s->d->accept)
		a++;
	return a + 1;
}

/* A request streams output at the end of this iteration: the gap since its previous output. */
static void stream(Sim *s, Req *r)
{
	SvRun *run = s->run;
	if (r->last > 0 || r->first > 0) {
		if (run->ntbt == run->captbt) {
			run->captbt = run->captbt ? 2 * run->captbt : 65536;
			float *n = realloc(run->tbt, (size_t)run->captbt * sizeof *n);
			if (!n)
				abort();
			run->tbt = n;
		}
		run->tbt[run->ntbt++] = (float)(s->now - r->last);
	}
	r->last = s->now;
}

static void iter_done(Sim *s, Eng *en)
{
	en->busy = 0;
	for (int i = 0; i < en->mem.n; i++) {
		int id = en->mem.v[i];
		Req *r = &s->r[id];
		if (r->state != R_RUN)
			continue;           /* preempted after joining (cannot happen mid-iteration) */
		if (en->mem_decode[i]) {
			int64_t got = s->d->draft ? spec_tokens(s) : 1;
			r->gen += got;
			stream(s, r);
		} else {
			r->filled += en->mem_s[i];
			if (r->filled < r->target)
				continue;
			r->gen++;          /* the prefill's last position samples a token */
			if (r->first == 0 && r->gen == 1) {
				r->first = s->now;
				r->last = s->now;
			} else
				stream(s, r);     /* after a recompute: the stall shows as one long gap */
			if (en->prefill_only && r->gen < r->out) {
				transfer(s, en, id);
				continue;
			}
		}
		if (r->gen >= r->out) {
			r->gen = r->out;
			finish(s, en, id);
		}
	}
	en->mem.n = 0;
}

/* The KV has landed: the prefill engine frees it, the decode engine queues the request. */
static void on_xfer(Sim *s, int id)
{
	Req *r = &s->r[id];
	Eng *src = &s->eng[r->src], *dst = &s->eng[r->engine];
	release(src, r);
	dst->inflight--;
	r->filled = r->target = r->in;
	vec_push(&dst->waiting, id);
	src->dirty = dst->dirty = 1;
}

/* ---- the run ---- */

static int init_engines(Sim *s, SvError *e)
{
	const SvDeploy *d = s->d;
	int np = d->sched == SV_DISAGG ? d->prefill->replicas : 0;
	s->nmain = d->main->replicas;
	s->neng = s->nmain + np;
	s->eng = calloc((size_t)s->neng, sizeof *s->eng);
	if (!s->eng)
		return sv_err(e, "aicc: error: out of memory");
	for (int i = 0; i < s->neng; i++) {
		Eng *en = &s->eng[i];
		en->P = i < s->nmain ? d->main : d->prefill;
		en->pool = i < s->nmain ? 0 : 1;
		en->idx = i < s->nmain ? i : i - s->nmain;
		en->prefill_only = i >= s->nmain;
		en->nblocks = en->P->kv_tokens / d->block;
		if (en->nblocks < 1)
			return sv_err(e, "aicc: error: pool %s holds %lld KV tokens, less than one block of %d",
				      en->P->role, (long long)en->P->kv_tokens, d->block);
	}
	return 0;
}

/* A request the engine can never hold is an error, not a hang. */
static int check_fits(Sim *s, SvError *e)
{
	for (int i = 0; i < s->w->n; i++) {
		const Req *r = &s->r[i];
		int64_t need = need_blocks(s, r, r->in + r->out);
		for (int k = 0; k < s->neng; k++)
			if (need > s->eng[k].nblocks)
				return sv_err(e, "aicc: error: request %d (%lld in + %lld out tokens) needs %lld KV blocks of %d "
					      "tokens; an engine of pool %s has %lld", i, (long long)r->in, (long long)r->out,
					      (long long)need, s->d->block, s->eng[k].P->role, (long long)s->eng[k].nblocks);
	}
	return 0;
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sv_deploy_init(SvDeploy *d)
{
	memset(d, 0, sizeof *d);
	d->name = "deployment";
	d->sched = SV_CONTINUOUS;
	d->max_batch = 256;
	d->token_budget = 2048;
	d->block = 16;
	d->kv_alloc = SV_KV_PAGED;
	d->preempt = SV_RECOMPUTE;
	d->kv_link_bw = 50e9;
	d->kv_link_lat = 10e-6;
	d->spec_k = 4;
	d->accept = 0.7;
	d->seed = 1;
}

int sv_deploy_chips(const SvDeploy *d)
{
	int n = d->main->chips * d->main->replicas;
	if (d->prefill)
		n += d->prefill->chips * d->prefill->replicas;
	if (d->draft)
		n += d->draft->chips * d->draft->replicas;
	return n;
}

int sv_simulate(const SvDeploy *d, const SvWorkload *w, SvRun *run, SvError *e)
{
	memset(run, 0, sizeof *run);
	double t0 = wall();
	Sim s = { .d = d, .w = w, .run = run, .e = e };
	if (d->sched == SV_DISAGG && !d->prefill)
		return sv_err(e, "aicc: error: a disaggregated deployment needs a prefill pool");
	if (init_engines(&s, e) < 0)
		goto fail;
	s.r = calloc((size_t)w->n + 1, sizeof *s.r);
	if (!s.r) {
		sv_err(e, "aicc: error: out of memory");
		goto fail;
	}
	for (int i = 0; i < w->n; i++) {
		s.r[i] = (Req){ .in = w->r[i].in, .out = w->r[i].out, .target = w->r[i].in, .arrival = w->r[i].arrival,
				.state = R_NEW };
		ev_push(&s, w->r[i].arrival, EV_ARRIVE, i);
	}
	if (check_fits(&s, e) < 0)
		goto fail;
	while (s.nh && !s.failed) {
		Event ev = ev_pop(&s);
		s.now = ev.t;
		if (ev.kind == EV_ARRIVE) {
			int lo = d->sched == SV_DISAGG ? s.nmain : 0, hi = d->sched == SV_DISAGG ? s.neng : s.nmain;
			int k = least_loaded(&s, lo, hi);
			s.r[ev.a].engine = k;
			s.r[ev.a].state = R_WAIT;
			vec_push(&s.eng[k].waiting, ev.a);
			s.eng[k].dirty = 1;
		} else if (ev.kind == EV_ITER) {
			Eng *en = &s.eng[ev.a];
			iter_done(&s, en);
			en->dirty = 1;
		} else
			on_xfer(&s, ev.a);
		/* engines start once every event of this instant is in (same-time arrivals batch) */
		if (!s.nh || s.h[0].t > s.now)
			for (int k = 0; k < s.neng; k++)
				if (s.eng[k].dirty) {
					s.eng[k].dirty = 0;
					kick(&s, &s.eng[k]);
				}
	}
	if (s.failed)
		goto fail;
	if (s.ndone < w->n) {
		sv_err(e, "aicc: error: the simulation stalled with %d of %d requests unfinished (a request waits for KV "
		       "blocks that never free up)", w->n - s.ndone, w->n);
		goto fail;
	}
	run->nreq = w->n;
	run->req = calloc((size_t)w->n + 1, sizeof *run->req);
	if (!run->req)
		abort();
	for (int i = 0; i < w->n; i++)
		run->req[i] = (SvReqResult){ s.r[i].arrival, s.r[i].first, s.r[i].done, s.r[i].in, s.r[i].out, s.r[i].preempt };
	run->sim_wall_s = wall() - t0;
	int rc = 0;
	if (0) {
fail:
		rc = -1;
	}
	for (int i = 0; i < s.neng; i++) {
		Eng *en = &s.eng[i];
		free(en->waiting.v), free(en->running.v), free(en->swapped.v), free(en->mem.v);
		free(en->mem_s), free(en->mem_decode);
	}
	free(s.eng);
	free(s.r);
	free(s.h);
	if (rc < 0)
		sv_run_free(run);
	return rc;
}

void sv_run_free(SvRun *r)
{
	free(r->req);
	free(r->it);
	free(r->tbt);
	memset(r, 0, sizeof *r);
}
