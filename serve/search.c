/* serve/search.c: serving capacity and the deployment search.
 *
 * Capacity (DistServe's per-GPU goodput, Sarathi-Serve's "capacity"): the highest request rate
 * whose run meets the SLO, found by bisection on a log scale between lo and hi: the workload is
 * regenerated at each rate with the same seed (a trace's arrivals are rescaled), so runs differ
 * only in the rate.  SLO attainment falls with the rate for every scheduler here, which is
 * what bisection assumes; each rate tried is kept (goodput vs rate plot).
 *
 * The search (DistServe section 4, "high node-affinity" placement): every candidate deployment
 * -- colocated with each tensor-parallel width and scheduler, and disaggregated with each pair
 * of widths and prefill:decode replica ratio -- gets its capacity per replica set, and is ranked
 * by capacity per chip; the rate asked for then needs ceil(rate / capacity) copies.
 */
#include "serve/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One run at `rate`; its metrics in *m. */
static int run_at(const SvDeploy *d, const SvGenSpec *gen, const SvWorkload *trace, const SvSlo *slo, double rate,
		  SvMetrics *m, SvError *e)
{
	SvWorkload w;
	if (trace) {
		w = *trace;
		w.r = malloc(((size_t)trace->n + 1) * sizeof *w.r);
		if (!w.r)
			return sv_err(e, "aicc: error: out of memory");
		memcpy(w.r, trace->r, (size_t)trace->n * sizeof *w.r);
		w.source = NULL;
		sv_workload_rescale(&w, gen->rate, rate);
	} else {
		SvGenSpec g = *gen;
		g.rate = rate;
		if (sv_workload_generate(&g, &w, e) < 0)
			return -1;
	}
	SvRun r;
	int rc = sv_simulate(d, &w, &r, e);
	if (rc == 0)
		sv_metrics(&r, slo, m);
	sv_run_free(&r);
	free(w.r);
	free(w.source);
	return rc;
}

static int note(SvCapacity *c, double rate, const SvMetrics *m)
{
	if (c->n < 64) {
		c->rates[c->n] = rate;
		c->goodput[c->n] = m->goodput;
		c->ok[c->n] = m->slo_ok;
		c->n++;
	}
	return m->slo_ok;
}

int sv_capacity(const SvDeploy *d, const SvGenSpec *gen, const SvWorkload *trace, const SvSlo *slo, double lo,
		double hi, int iters, SvCapacity *c, SvError *e)
{
	memset(c, 0, sizeof *c);
	if (!(lo > 0) || !(hi > lo))
		return sv_err(e, "aicc: error: --capacity needs 0 < --rate-min < --rate-max, got %g and %g", lo, hi);
	SvMetrics m;
	if (run_at(d, gen, trace, slo, hi, &m, e) < 0)
		return -1;
	if (note(c, hi, &m)) {
		c->rate = hi;
		c->at = m;
		return 0;
	}
	if (run_at(d, gen, trace, slo, lo, &m, e) < 0)
		return -1;
	if (!note(c, lo, &m))
		return 0;
	c->rate = lo;
	c->at = m;
	for (int i = 0; i < iters; i++) {
		double mid = sqrt(lo * hi);
		if (run_at(d, gen, trace, slo, mid, &m, e) < 0)
			return -1;
		if (note(c, mid, &m)) {
			lo = mid;
			c->rate = mid;
			c->at = m;
		} else
			hi = mid;
	}
	return 0;
}

/* ---- the deployment search ---- */

typedef struct Cand {
	char desc[160];
	SvDeploy d;
	int chips;
	double cap, per_chip, tpot90, ttft90;
	int ok, frontier;
	char why[200];
} Cand;

typedef struct PoolSet {
	SvPool *p[32];
	int n;
} PoolSet;

/* The pool of `role` with tensor-parallel width tp, like `base` otherwise (opened once). */
static SvPool *pool_for(PoolSet *ps, const SvPool *base, const char *role, int tp, int64_t max_tokens, SvError *e)
{
	for (int i = 0; i < ps->n; i++)
		if (ps->p[i]->tp == tp && strcmp(ps->p[i]->role, role) == 0)
			return ps->p[i]->kv_tokens > 0 ? ps->p[i] : NULL;
	if (ps->n == 32)
		return NULL;
	SvPool *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	sv_pool_init(p, role, base->model);
	p->binds = base->binds ? strdup(base->binds) : NULL;
	p->target = strdup(base->target);
	p->machine = strdup(base->machine);
	p->precision = base->precision ? strdup(base->precision) : NULL;
	for (int i = 0; i < base->nsets; i++)
		p->sets[p->nsets++] = strdup(base->sets[i]);
	p->tp = tp;
	p->mode = base->mode;
	p->fixed_base_s = base->fixed_base_s, p->fixed_token_s = base->fixed_token_s;
	p->cpu_s = base->cpu_s, p->cpu_overlap = base->cpu_overlap, p->mem_util = base->mem_util, p->kv_fp8 = base->kv_fp8;
	ps->p[ps->n++] = p;
	if (sv_pool_open(p, max_tokens, e) < 0) {
		p->kv_tokens = 0;
		return NULL;
	}
	return p;
}

static void eval(Cand *c, const SvGenSpec *g, const SvWorkload *trace, const SvSlo *slo, double lo, double hi, int iters)
{
	SvCapacity cap;
	SvError e;
	c->chips = sv_deploy_chips(&c->d);
	if (sv_capacity(&c->d, g, trace, slo, lo, hi, iters, &cap, &e) < 0) {
		snprintf(c->why, sizeof c->why, "%.190s", e.msg);
		return;
	}
	c->ok = 1;
	c->cap = cap.rate;
	c->per_chip = c->chips ? cap.rate / c->chips : 0;
	c->tpot90 = cap.at.tpot[1];
	c->ttft90 = cap.at.ttft[1];
}

int sv_search_print(const SvDeploy *base, SvPool *pools, const SvGenSpec *g, const SvWorkload *trace, const SvSlo *slo,
		    double lo, double hi, int iters, FILE *f, SvError *e)
{
	const SvPool *bp = base->prefill ? base->prefill : base->main;
	int ndev = bp->mach_loaded ? machine_ndevices(bp->mach.m) : 8;
	Cand *c = calloc(256, sizeof *c);
	PoolSet ps = { .n = 0 };
	int nc = 0;
	if (!c)
		abort();
	int64_t pre = base->token_budget;
	for (int tp = 1; tp <= ndev && nc < 200; tp *= 2) {
		SvError pe;
		SvPool *p = pool_for(&ps, bp, "colocated", tp, pre, &pe);
		for (int s = 0; s < 2; s++) {
			Cand *k = &c[nc++];
			k->d = *base;
			k->d.prefill = NULL, k->d.draft = NULL;
			k->d.sched = s ? SV_SARATHI : SV_CONTINUOUS;
			k->d.chunk = 0;
			snprintf(k->desc, sizeof k->desc, "colocated tp=%d %s", tp, s ? "sarathi" : "continuous");
			if (!p) {
				snprintf(k->why, sizeof k->why, "%.190s", pe.msg);
				continue;
			}
			k->d.main = p;
		}
	}
	static const int ratio[][2] = { { 1, 1 }, { 2, 1 }, { 1, 2 }, { 3, 1 } };
	for (int a = 1; a <= ndev; a *= 2)
		for (int b = 1; b <= ndev; b *= 2)
			for (int r = 0; r < 4 && nc < 250; r++) {
				if (ratio[r][0] * a + ratio[r][1] * b > ndev)
					continue;
				SvError pe;
				SvPool *pp = pool_for(&ps, bp, "prefill", a, pre, &pe);
				SvPool *dp = pp ? pool_for(&ps, bp, "decode", b, base->max_batch, &pe) : NULL;
				Cand *k = &c[nc++];
				snprintf(k->desc, sizeof k->desc, "disaggregated %dx prefill tp=%d + %dx decode tp=%d", ratio[r][0], a,
					 ratio[r][1], b);
				if (!pp || !dp) {
					snprintf(k->why, sizeof k->why, "%.190s", pe.msg);
					continue;
				}
				k->d = *base;
				k->d.sched = SV_DISAGG;
				k->d.draft = NULL;
				/* replicas are per candidate: copies of the pools with their counts */
				SvPool *pc = malloc(sizeof *pc), *dc = malloc(sizeof *dc);
				if (!pc || !dc)
					abort();
				*pc = *pp, *dc = *dp;
				pc->replicas = ratio[r][0], dc->replicas = ratio[r][1];
				k->d.prefill = pc, k->d.main = dc;
				const Link *l = NULL;
				const Device *x = bp->mach_loaded ? machine_first(bp->mach.m, DEV_GPU) : NULL;
				if (x)
					l = machine_link(bp->mach.m, x, x);
				if (l && num_has(&l->bandwidth)) {
					k->d.kv_link_bw = link_oneway_bw(l) * (a < b ? a : b);
					k->d.kv_link_lat = num_has(&l->latency) ? l->latency.v : k->d.kv_link_lat;
				}
			}
	for (int i = 0; i < nc; i++)
		if (c[i].d.main)
			eval(&c[i], g, trace, slo, lo, hi, iters);
	for (int i = 0; i < nc; i++) {   /* Pareto: no other has more goodput per chip and lower TPOT */
		c[i].frontier = c[i].ok && c[i].cap > 0;
		for (int j = 0; j < nc && c[i].frontier; j++)
			if (j != i && c[j].ok && c[j].cap > 0 && c[j].per_chip >= c[i].per_chip && c[j].tpot90 <= c[i].tpot90 &&
			    (c[j].per_chip > c[i].per_chip || c[j].tpot90 < c[i].tpot90))
				c[i].frontier = 0;
	}
	int *ord = malloc((size_t)nc * sizeof *ord);
	if (!ord)
		abort();
	for (int i = 0; i < nc; i++)
		ord[i] = i;
	for (int i = 1; i < nc; i++)
		for (int j = i; j > 0 && c[ord[j]].per_chip > c[ord[j - 1]].per_chip; j--) {
			int t = ord[j];
			ord[j] = ord[j - 1], ord[j - 1] = t;
		}
	fprintf(f, "search      %d deployments of %s on %s (%d chips), SLO-capacity by bisection in [%g, %g] req/s\n", nc,
		bp->model, bp->machine, ndev, lo, hi);
	fprintf(f, "            (>=: the SLO still holds at --rate-max; frontier *: no deployment has both more goodput per chip\n"
		   "            and a lower TPOT p90 at its capacity)\n");
	fprintf(f, "  %-46s %6s %12s %14s %12s %12s  %s\n", "deployment", "chips", "capacity", "per chip", "TTFT p90", "TPOT p90",
		"frontier");
	for (int i = 0; i < nc; i++) {
		Cand *k = &c[ord[i]];
		if (!k->ok) {
			fprintf(f, "  %-46s %6s %12s  (%s)\n", k->desc, "-", "-", k->why[0] ? strtok(k->why, "\n") : "not run");
			continue;
		}
		fprintf(f, "  %-46s %6d %2s%8.4g/s %12.4g/s %10.4g s %10.4g s  %s\n", k->desc, k->chips, k->cap >= hi ? ">=" : "",
			k->cap, k->per_chip, k->ttft90, k->tpot90, k->frontier ? "*" : "");
	}
	if (nc && c[ord[0]].ok && c[ord[0]].cap > 0) {
		Cand *b = &c[ord[0]];
		fprintf(f, "best        %s: %.4g req/s per chip", b->desc, b->per_chip);
		if (g->rate > 0)
			fprintf(f, "; %.4g req/s needs %d copies (%d chips)", g->rate, (int)ceil(g->rate / b->cap),
				(int)ceil(g->rate / b->cap) * b->chips);
		fputc('\n', f);
	}
	for (int i = 0; i < nc; i++)
		if (c[i].d.sched == SV_DISAGG && c[i].d.prefill) {
			free(c[i].d.prefill);
			free(c[i].d.main);
		}
	for (int i = 0; i < ps.n; i++) {
		sv_pool_free(ps.p[i]);
		free(ps.p[i]);
	}
	free(ord);
	free(c);
	(void)pools;
	(void)e;
	return 0;
}
