/* serve/report.c: what a simulation reports.
 *
 * Per request (vLLM benchmark_serving.py definitions): TTFT = first token - arrival; TPOT =
 * (completion - first token) / (output tokens - 1), for requests of more than one output token;
 * E2E = completion - arrival.  Percentiles interpolate linearly between order statistics
 * (numpy's default).  An SLO is a list of percentile terms, "ttft_p90=0.5s,tpot_p90=50ms": it
 * holds when every term's percentile is within its limit.  Goodput (DistServe) is the rate of
 * requests that meet every term's limit themselves, over the run's duration (first arrival to
 * last completion); attainment is their fraction.
 * Outputs: a text summary, --report JSON (jansson), a Perfetto trace (Chrome trace-event JSON:
 * one process per pool, one thread per engine, a slice per iteration, counters for the batch
 * and the KV cache), and PNG plots drawn by gnuplot (Debian's gnuplot-nox, pngcairo terminal)
 * from a data file: never hand-written pictures.
 */
#include "serve/internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *metric_names[4] = { "ttft", "tpot", "e2e", "tbt" };

int sv_slo_parse(const char *s, SvSlo *slo, SvError *e)
{
	memset(slo, 0, sizeof *slo);
	char *copy = strdup(s), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *us = strstr(tok, "_p"), *end;
		int m = -1;
		for (int i = 0; i < 4 && us; i++)
			if ((size_t)(us - tok) == strlen(metric_names[i]) && strncmp(tok, metric_names[i], (size_t)(us - tok)) == 0)
				m = i;
		double pct = us && eq ? strtod(us + 2, &end) : -1;
		double lim = eq ? sv_parse_seconds(eq + 1) : -1;
		if (m < 0 || !eq || end != eq || !(pct > 0 && pct <= 100) || !(lim > 0) || slo->n == 6)
			rc = sv_err(e, "aicc: error: --slo expects METRIC_pN=TIME,... with METRIC ttft, tpot, e2e or tbt, "
				    "0 < N <= 100 and a positive time (e.g. ttft_p90=0.5s,tpot_p90=50ms), got '%s'", tok);
		else
			slo->t[slo->n++] = (SvSloTerm){ m, pct, lim };
	}
	free(copy);
	if (rc == 0 && slo->n == 0)
		rc = sv_err(e, "aicc: error: --slo is empty");
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

/* Quantile q of n sorted floats. */
static double sorted_quantile_f(const float *c, int64_t n, double q)
{
	if (n <= 0)
		return 0;
	double pos = q * (double)(n - 1), f = floor(pos);
	int64_t i = (int64_t)f;
	return i + 1 < n ? c[i] + (pos - f) * ((double)c[i + 1] - c[i]) : c[n - 1];
}

/* Quantile q of n sorted values. */
static double sorted_quantile(const double *c, int64_t n, double q)
{
	if (n <= 0)
		return 0;
	double pos = q * (double)(n - 1), f = floor(pos);
	int64_t i = (int64_t)f;
	return i + 1 < n ? c[i] + (pos - f) * (c[i + 1] - c[i]) : c[n - 1];
}

double sv_quantile(const double *v, int n, double q)
{
	if (n <= 0)
		return 0;
	double *c = malloc((size_t)n * sizeof *c);
	if (!c)
		abort();
	memcpy(c, v, (size_t)n * sizeof *c);
	qsort(c, (size_t)n, sizeof *c, cmp_double);
	double r = sorted_quantile(c, n, q);
	free(c);
	return r;
}

/* The three per-request metrics; tpot[i] < 0 for single-token requests. */
static void per_request(const SvReqResult *q, double *m)
{
	m[0] = q->first - q->arrival;
	m[1] = q->out > 1 ? (q->done - q->first) / (double)(q->out - 1) : -1;
	m[2] = q->done - q->arrival;
}

void sv_metrics(const SvRun *r, const SvSlo *slo, SvMetrics *m)
{
	memset(m, 0, sizeof *m);
	int n = r->nreq, nt = 0;
	double *v[3];
	for (int k = 0; k < 3; k++)
		if (!(v[k] = malloc(((size_t)n + 1) * sizeof *v[k])))
			abort();
	double t0 = INFINITY, t1 = 0, tok = 0;
	int good = 0;
	for (int i = 0; i < n; i++) {
		double x[3];
		per_request(&r->req[i], x);
		v[0][i] = x[0], v[2][i] = x[2];
		if (x[1] >= 0)
			v[1][nt++] = x[1];
		t0 = fmin(t0, r->req[i].arrival);
		t1 = fmax(t1, r->req[i].done);
		tok += (double)r->req[i].out;
		int ok = 1;
		for (int k = 0; slo && k < slo->n; k++)
			if (slo->t[k].metric < 3 && x[slo->t[k].metric] > slo->t[k].limit)
				ok = 0;
		good += ok;
	}
	m->n = n;
	m->duration = n ? t1 - t0 : 0;
	for (int i = 0; i < n; i++)
		m->ttft_mean += v[0][i] / n;
	for (int i = 0; i < nt; i++)
		m->tpot_mean += v[1][i] / nt;
	float *tb = malloc(((size_t)r->ntbt + 1) * sizeof *tb);
	if (!tb)
		abort();
	memcpy(tb, r->tbt, (size_t)r->ntbt * sizeof *tb);
	qsort(v[0], (size_t)n, sizeof *v[0], cmp_double);
	qsort(v[1], (size_t)nt, sizeof *v[1], cmp_double);
	qsort(v[2], (size_t)n, sizeof *v[2], cmp_double);
	qsort(tb, (size_t)r->ntbt, sizeof *tb, cmp_float);
	static const double q[3] = { 0.5, 0.9, 0.99 };
	for (int k = 0; k < 3; k++) {
		m->ttft[k] = sorted_quantile(v[0], n, q[k]);
		m->tpot[k] = sorted_quantile(v[1], nt, q[k]);
		m->e2e[k] = sorted_quantile(v[2], n, q[k]);
		m->tbt[k] = sorted_quantile_f(tb, r->ntbt, q[k]);
	}
	m->slo_ok = 1;
	for (int k = 0; slo && k < slo->n; k++) {
		int mt = slo->t[k].metric;
		double got = mt == 3 ? sorted_quantile_f(tb, r->ntbt, slo->t[k].pct / 100)
				     : sorted_quantile(v[mt], mt == 1 ? nt : n, slo->t[k].pct / 100);
		if (got > slo->t[k].limit)
			m->slo_ok = 0;
	}
	if (m->duration > 0) {
		m->throughput_req = n / m->duration;
		m->throughput_tok = tok / m->duration;
		m->goodput = good / m->duration;
	}
	m->attainment = n ? (double)good / n : 0;
	double bsum = 0;
	int nb = 0;
	for (int i = 0; i < r->nit; i++) {
		if (r->it[i].pool == 0) {
			bsum += r->it[i].batch;
			nb++;
			m->kv_util_mean += r->it[i].kv_used;
			m->kv_util_max = fmax(m->kv_util_max, r->it[i].kv_used);
		}
	}
	if (nb) {
		m->mean_batch = bsum / nb;
		m->kv_util_mean /= nb;
	}
	m->preemptions = r->preemptions;
	for (int k = 0; k < 3; k++)
		free(v[k]);
	free(tb);
}

/* "12.3 ms" / "1.23 s" / "45.6 us". */
static const char *fmt_s(double s, char *buf, size_t n)
{
	if (s >= 1)
		snprintf(buf, n, "%.4g s", s);
	else if (s >= 1e-3)
		snprintf(buf, n, "%.4g ms", s * 1e3);
	else
		snprintf(buf, n, "%.4g us", s * 1e6);
	return buf;
}

static const char *sched_name(const SvDeploy *d)
{
	const char *s = d->sched == SV_SARATHI ? "sarathi" : d->sched == SV_DISAGG ? "disaggregated" : "continuous";
	return d->draft ? (d->sched == SV_SARATHI ? "sarathi+speculative" : "continuous+speculative") : s;
}

static const char *kv_alloc_name(SvKvAlloc a)
{
	return a == SV_KV_MAX ? "contiguous-max" : a == SV_KV_POW2 ? "contiguous-pow2" : a == SV_KV_ORACLE ? "contiguous-oracle" : "paged";
}

static void print_pool(FILE *f, const char *what, const SvPool *p, int block)
{
	char d[256];
	fprintf(f, "%-12s%s, %d chip%s each x %d; KV %lld tokens (%lld blocks of %d, %.4g kB/token on %s), weights %.4g GB\n",
		what, sv_pool_describe(p, d, sizeof d), p->chips, p->chips == 1 ? "" : "s", p->replicas,
		(long long)p->kv_tokens, (long long)(p->kv_tokens / block), block, p->kv_token_bytes / 1e3,
		p->mode == SV_COST_FIXED ? "-" : "its tightest memory", p->weight_bytes / 1e9);
}

void sv_print_summary(FILE *f, const SvDeploy *d, const SvRun *r, const SvMetrics *m, const SvSlo *slo)
{
	char a[32], b[32], c[32];
	int chips = sv_deploy_chips(d);
	fprintf(f, "deployment  %s: %s scheduler, max batch %d, token budget %lld%s, KV %s, %d chip%s\n", d->name,
		sched_name(d), d->max_batch, (long long)d->token_budget, d->sched == SV_SARATHI && d->chunk ? " (chunk cap)" : "",
		kv_alloc_name(d->kv_alloc), chips, chips == 1 ? "" : "s");
	if (d->prefill)
		print_pool(f, "  prefill", d->prefill, d->block);
	print_pool(f, d->prefill ? "  decode" : "  pool", d->main, d->block);
	if (d->draft)
		print_pool(f, "  draft", d->draft, d->block);
	fprintf(f, "requests    %d in %.4g s\n", m->n, m->duration);
	fprintf(f, "TTFT        p50 %s  p90 %s  p99 %s\n", fmt_s(m->ttft[0], a, 32), fmt_s(m->ttft[1], b, 32), fmt_s(m->ttft[2], c, 32));
	fprintf(f, "TPOT        p50 %s  p90 %s  p99 %s\n", fmt_s(m->tpot[0], a, 32), fmt_s(m->tpot[1], b, 32), fmt_s(m->tpot[2], c, 32));
	fprintf(f, "E2E         p50 %s  p90 %s  p99 %s\n", fmt_s(m->e2e[0], a, 32), fmt_s(m->e2e[1], b, 32), fmt_s(m->e2e[2], c, 32));
	fprintf(f, "TBT         p50 %s  p90 %s  p99 %s\n", fmt_s(m->tbt[0], a, 32), fmt_s(m->tbt[1], b, 32), fmt_s(m->tbt[2], c, 32));
	fprintf(f, "throughput  %.4g req/s, %.4g output tokens/s (%.4g per chip)\n", m->throughput_req, m->throughput_tok,
		chips ? m->throughput_tok / chips : 0);
	if (slo && slo->n) {
		fprintf(f, "goodput     %.4g req/s (%.4g per chip), attainment %.1f%%; SLO", m->goodput,
			chips ? m->goodput / chips : 0, 100 * m->attainment);
		for (int k = 0; k < slo->n; k++)
			fprintf(f, "%s %s_p%g<=%s", k ? "," : "", metric_names[slo->t[k].metric], slo->t[k].pct,
				fmt_s(slo->t[k].limit, a, 32));
		fprintf(f, " %s\n", m->slo_ok ? "met" : "missed");
	}
	fprintf(f, "batch       mean %.4g sequences per iteration; KV cache in use mean %.1f%%, max %.1f%%\n", m->mean_batch,
		100 * m->kv_util_mean, 100 * m->kv_util_max);
	fprintf(f, "preemptions %lld (%lld by swap)\n", (long long)r->preemptions, (long long)r->swaps);
	double it = r->accel_s + r->cpu_s;
	fprintf(f, "time        %lld iterations: accelerators %.4g s, engine CPU %.4g s (%.1f%%)", (long long)r->iterations,
		r->accel_s, r->cpu_s, it > 0 ? 100 * r->cpu_s / it : 0);
	if (d->prefill)
		fprintf(f, ", KV transfers %.4g s", r->transfer_s);
	fputc('\n', f);
	/* why TPOT exceeds `aicc run`'s decode step (issue 17): the engine CPU time of each iteration
	 * and the other sequences' work in the same batch */
	if (r->iterations > 0) {
		int overlap = d->main->cpu_overlap;
		fprintf(f, "iteration   mean %s on the accelerators %s %s engine CPU (%s) for %.4g sequences; "
			"TPOT and TBT include both and any prefill sharing the batch, `aicc run` times one batch on "
			"the accelerators alone\n", fmt_s(r->accel_s / (double)r->iterations, a, 32),
			overlap ? "overlapped with" : "+", fmt_s(r->cpu_s / (double)r->iterations, b, 32),
			overlap ? "--cpu-overlap" : "--cpu-overhead, not overlapped: --cpu-overlap hides it", m->mean_batch);
	}
}

static json_t *pool_json(const SvPool *p, int block)
{
	char d[256];
	json_t *o = json_object();
	json_object_set_new(o, "role", json_string(p->role));
	json_object_set_new(o, "pool", json_string(sv_pool_describe(p, d, sizeof d)));
	json_object_set_new(o, "target", json_string(p->target));
	json_object_set_new(o, "machine", json_string(p->machine));
	json_object_set_new(o, "tp", json_integer(p->tp));
	json_object_set_new(o, "pp", json_integer(p->pp));
	json_object_set_new(o, "replicas", json_integer(p->replicas));
	json_object_set_new(o, "chips_per_replica", json_integer(p->chips));
	json_object_set_new(o, "precision", p->precision ? json_string(p->precision) : json_null());
	json_object_set_new(o, "kv_format", json_string(p->kv_fp8 ? "fp8" : "plan"));
	json_object_set_new(o, "kv_tokens", json_integer(p->kv_tokens));
	json_object_set_new(o, "kv_blocks", json_integer(p->kv_tokens / block));
	json_object_set_new(o, "kv_bytes_per_token", json_real(p->kv_token_bytes_all));
	json_object_set_new(o, "weight_bytes", json_real(p->weight_bytes));
	json_object_set_new(o, "cpu_overhead_s", json_real(p->cpu_s));
	json_object_set_new(o, "cpu_overlap", json_boolean(p->cpu_overlap));
	json_object_set_new(o, "cost", json_string(p->mode == SV_COST_GRID ? "grid" : p->mode == SV_COST_EXACT ? "exact" : "fixed"));
	json_object_set_new(o, "plans_compiled", json_integer(p->compiles));
	json_object_set_new(o, "compile_s", json_real(p->compile_s));
	return o;
}

static json_t *pct_json(const double *v)
{
	json_t *o = json_object();
	json_object_set_new(o, "p50", json_real(v[0]));
	json_object_set_new(o, "p90", json_real(v[1]));
	json_object_set_new(o, "p99", json_real(v[2]));
	return o;
}

int sv_report_write(FILE *f, const SvDeploy *d, const SvWorkload *w, const SvRun *r, const SvMetrics *m,
		    const SvSlo *slo, SvError *e)
{
	json_t *o = json_object(), *pools = json_array(), *series = json_array(), *so = json_array();
	json_object_set_new(o, "deployment", json_string(d->name));
	json_object_set_new(o, "scheduler", json_string(sched_name(d)));
	json_object_set_new(o, "kv_alloc", json_string(kv_alloc_name(d->kv_alloc)));
	json_object_set_new(o, "max_batch", json_integer(d->max_batch));
	json_object_set_new(o, "token_budget", json_integer(d->token_budget));
	json_object_set_new(o, "block", json_integer(d->block));
	json_object_set_new(o, "chips", json_integer(sv_deploy_chips(d)));
	if (d->prefill)
		json_array_append_new(pools, pool_json(d->prefill, d->block));
	json_array_append_new(pools, pool_json(d->main, d->block));
	if (d->draft)
		json_array_append_new(pools, pool_json(d->draft, d->block));
	json_object_set_new(o, "pools", pools);
	json_object_set_new(o, "workload", json_string(w->source ? w->source : ""));
	json_object_set_new(o, "requests", json_integer(m->n));
	json_object_set_new(o, "duration_s", json_real(m->duration));
	json_object_set_new(o, "ttft_s", pct_json(m->ttft));
	json_object_set_new(o, "tpot_s", pct_json(m->tpot));
	json_object_set_new(o, "e2e_s", pct_json(m->e2e));
	json_object_set_new(o, "tbt_s", pct_json(m->tbt));
	json_object_set_new(o, "throughput_req_per_s", json_real(m->throughput_req));
	json_object_set_new(o, "throughput_tokens_per_s", json_real(m->throughput_tok));
	for (int k = 0; slo && k < slo->n; k++) {
		json_t *t = json_object();
		json_object_set_new(t, "metric", json_string(metric_names[slo->t[k].metric]));
		json_object_set_new(t, "percentile", json_real(slo->t[k].pct));
		json_object_set_new(t, "limit_s", json_real(slo->t[k].limit));
		json_array_append_new(so, t);
	}
	json_object_set_new(o, "slo", so);
	json_object_set_new(o, "slo_met", json_boolean(m->slo_ok));
	json_object_set_new(o, "goodput_req_per_s", json_real(m->goodput));
	json_object_set_new(o, "goodput_per_chip", json_real(sv_deploy_chips(d) ? m->goodput / sv_deploy_chips(d) : 0));
	json_object_set_new(o, "attainment", json_real(m->attainment));
	json_object_set_new(o, "mean_batch", json_real(m->mean_batch));
	json_object_set_new(o, "kv_util_mean", json_real(m->kv_util_mean));
	json_object_set_new(o, "kv_util_max", json_real(m->kv_util_max));
	json_object_set_new(o, "preemptions", json_integer(r->preemptions));
	json_object_set_new(o, "swaps", json_integer(r->swaps));
	json_object_set_new(o, "iterations", json_integer(r->iterations));
	json_object_set_new(o, "accelerator_s", json_real(r->accel_s));
	json_object_set_new(o, "engine_cpu_s", json_real(r->cpu_s));
	json_object_set_new(o, "kv_transfer_s", json_real(r->transfer_s));
	int stride = r->nit > 2000 ? (r->nit + 1999) / 2000 : 1;
	for (int i = 0; i < r->nit; i += stride) {
		const SvSample *s = &r->it[i];
		json_t *p = json_object();
		json_object_set_new(p, "t", json_real(s->t));
		json_object_set_new(p, "pool", json_integer(s->pool));
		json_object_set_new(p, "engine", json_integer(s->engine));
		json_object_set_new(p, "batch", json_integer(s->batch));
		json_object_set_new(p, "tokens", json_integer(s->tokens));
		json_object_set_new(p, "kv_util", json_real(s->kv_used));
		json_array_append_new(series, p);
	}
	json_object_set_new(o, "series_stride", json_integer(stride));
	json_object_set_new(o, "series", series);
	int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	fputc('\n', f);
	json_decref(o);
	return rc < 0 ? sv_err(e, "aicc: error: cannot write the report") : 0;
}

static const char *pool_name(const SvDeploy *d, int pool)
{
	return pool == 1 ? "prefill pool" : d->prefill ? "decode pool" : "pool";
}

static void meta(json_t *ev, const char *what, int pid, int tid, const char *name)
{
	json_t *m = json_object(), *a = json_object();
	json_object_set_new(m, "ph", json_string("M"));
	json_object_set_new(m, "name", json_string(what));
	json_object_set_new(m, "pid", json_integer(pid));
	json_object_set_new(m, "tid", json_integer(tid));
	json_object_set_new(a, "name", json_string(name));
	json_object_set_new(m, "args", a);
	json_array_append_new(ev, m);
}

int sv_trace_write(FILE *f, const SvDeploy *d, const SvRun *r, SvError *e)
{
	json_t *o = json_object(), *ev = json_array();
	int seen[2][64] = { { 0 } };
	for (int p = 0; p < 2; p++)
		if (p == 0 || d->prefill)
			meta(ev, "process_name", p + 1, 0, pool_name(d, p));
	for (int i = 0; i < r->nit; i++) {
		const SvSample *s = &r->it[i];
		int tid = s->engine + 1;
		if (s->engine < 64 && !seen[s->pool][s->engine]) {
			char buf[64];
			snprintf(buf, sizeof buf, "engine %d", s->engine);
			meta(ev, "thread_name", s->pool + 1, tid, buf);
			seen[s->pool][s->engine] = 1;
		}
		char name[96];
		int64_t dec = s->tokens - s->prefill_tokens;
		if (s->prefill_tokens && dec)
			snprintf(name, sizeof name, "mixed: %lld decode + %lld prefill tokens", (long long)dec, (long long)s->prefill_tokens);
		else if (s->prefill_tokens)
			snprintf(name, sizeof name, "prefill: %lld tokens", (long long)s->prefill_tokens);
		else
			snprintf(name, sizeof name, "decode: %d sequences", s->batch);
		json_t *x = json_object(), *a = json_object();
		json_object_set_new(x, "ph", json_string("X"));
		json_object_set_new(x, "name", json_string(name));
		json_object_set_new(x, "pid", json_integer(s->pool + 1));
		json_object_set_new(x, "tid", json_integer(tid));
		json_object_set_new(x, "ts", json_real(s->t * 1e6));
		json_object_set_new(x, "dur", json_real(s->dur * 1e6));
		json_object_set_new(a, "sequences", json_integer(s->batch));
		json_object_set_new(a, "tokens", json_integer(s->tokens));
		json_object_set_new(a, "prefill_tokens", json_integer(s->prefill_tokens));
		json_object_set_new(a, "engine_cpu_us", json_real(s->cpu * 1e6));
		json_object_set_new(x, "args", a);
		json_array_append_new(ev, x);
		json_t *c = json_object(), *ca = json_object();
		char cname[48];
		snprintf(cname, sizeof cname, "engine %d", s->engine);
		json_object_set_new(c, "ph", json_string("C"));
		json_object_set_new(c, "name", json_string(cname));
		json_object_set_new(c, "pid", json_integer(s->pool + 1));
		json_object_set_new(c, "ts", json_real(s->t * 1e6));
		json_object_set_new(ca, "kv_util", json_real(s->kv_used));
		json_object_set_new(ca, "batch", json_integer(s->batch));
		json_object_set_new(c, "args", ca);
		json_array_append_new(ev, c);
	}
	json_object_set_new(o, "traceEvents", ev);
	json_object_set_new(o, "displayTimeUnit", json_string("ms"));
	int rc = json_dumpf(o, f, JSON_COMPACT);
	fputc('\n', f);
	json_decref(o);
	return rc < 0 ? sv_err(e, "aicc: error: cannot write the trace") : 0;
}

/* ---- plots (gnuplot) ---- */

/* Runs gnuplot on `script`, writing the PNG to path (through a temporary renamed on success). */
static int gnuplot(const char *path, const char *script, SvError *e)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
	FILE *g = popen("gnuplot 2>&1", "w");
	if (!g)
		return sv_err(e, "aicc: error: cannot run gnuplot: %s", strerror(errno));
	fprintf(g, "set terminal pngcairo size 1200,420 font 'DejaVu Sans,10'\nset output '%s'\n%s\nset output\n", tmp, script);
	int st = pclose(g);
	if (st != 0 || access(tmp, F_OK) != 0) {
		remove(tmp);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			return sv_err(e, "aicc: error: gnuplot is not installed (Debian package gnuplot-nox; tools/install-deps.sh installs it)");
		return sv_err(e, "aicc: error: gnuplot failed drawing '%s' (status %d)", path, st);
	}
	if (rename(tmp, path) < 0) {
		remove(tmp);
		return sv_err(e, "aicc: error: cannot write '%s': %s", path, strerror(errno));
	}
	return 0;
}

static int write_cdf(FILE *f, const double *v, int n)
{
	double *c = malloc(((size_t)n + 1) * sizeof *c);
	if (!c)
		return -1;
	memcpy(c, v, (size_t)n * sizeof *c);
	qsort(c, (size_t)n, sizeof *c, cmp_double);
	for (int i = 0; i < n; i++)
		fprintf(f, "%.9g %.6g\n", c[i], (double)(i + 1) / n);
	fprintf(f, "\n\n");
	free(c);
	return 0;
}

int sv_plot_cdf(const char *path, const SvRun *r, SvError *e)
{
	char data[] = "/tmp/aicc-serve-XXXXXX";
	int fd = mkstemp(data);
	if (fd < 0)
		return sv_err(e, "aicc: error: cannot create a temporary file: %s", strerror(errno));
	FILE *f = fdopen(fd, "w");
	double *v[3];
	int nt = 0;
	for (int k = 0; k < 3; k++)
		if (!(v[k] = malloc(((size_t)r->nreq + 1) * sizeof *v[k])))
			abort();
	for (int i = 0; i < r->nreq; i++) {
		double x[3];
		per_request(&r->req[i], x);
		v[0][i] = x[0], v[2][i] = x[2];
		if (x[1] >= 0)
			v[1][nt++] = x[1];
	}
	write_cdf(f, v[0], r->nreq);
	write_cdf(f, v[1], nt);
	write_cdf(f, v[2], r->nreq);
	fclose(f);
	for (int k = 0; k < 3; k++)
		free(v[k]);
	char script[2048];
	snprintf(script, sizeof script,
		 "set multiplot layout 1,3 title 'aicc serve: latency CDFs (%d requests)'\n"
		 "set grid\nset ylabel 'fraction of requests'\nset yrange [0:1]\nset key bottom right\n"
		 "set xlabel 'TTFT (s)'\nplot '%s' index 0 using 1:2 with lines lw 2 title 'TTFT'\n"
		 "set xlabel 'TPOT (s)'\nplot '%s' index 1 using 1:2 with lines lw 2 lc 2 title 'TPOT'\n"
		 "set xlabel 'end-to-end (s)'\nplot '%s' index 2 using 1:2 with lines lw 2 lc 3 title 'E2E'\n"
		 "unset multiplot", r->nreq, data, data, data);
	int rc = gnuplot(path, script, e);
	remove(data);
	return rc;
}

int sv_plot_goodput(const char *path, const double *rate, const double *goodput, const int *ok, int n, SvError *e)
{
	char data[] = "/tmp/aicc-serve-XXXXXX";
	int fd = mkstemp(data);
	if (fd < 0)
		return sv_err(e, "aicc: error: cannot create a temporary file: %s", strerror(errno));
	FILE *f = fdopen(fd, "w");
	int *idx = malloc(((size_t)n + 1) * sizeof *idx);
	if (!idx)
		abort();
	for (int i = 0; i < n; i++)
		idx[i] = i;
	for (int i = 1; i < n; i++)     /* by rate, for the line */
		for (int j = i; j > 0 && rate[idx[j]] < rate[idx[j - 1]]; j--) {
			int t = idx[j];
			idx[j] = idx[j - 1], idx[j - 1] = t;
		}
	for (int i = 0; i < n; i++)
		fprintf(f, "%.6g %.6g %d\n", rate[idx[i]], goodput[idx[i]], ok[idx[i]]);
	fclose(f);
	free(idx);
	char script[1024];
	snprintf(script, sizeof script,
		 "set title 'aicc serve: goodput vs request rate'\nset grid\nset xlabel 'request rate (req/s)'\n"
		 "set ylabel 'goodput (req/s within the SLO)'\nset key top left\n"
		 "plot '%s' using 1:2 with linespoints lw 2 pt 7 title 'goodput', "
		 "'' using 1:($3 > 0 ? $2 : 1/0) with points pt 6 ps 2 title 'SLO met', x with lines dt 2 lc 0 title 'rate'",
		 data);
	int rc = gnuplot(path, script, e);
	remove(data);
	return rc;
}
