/* testsuite/unit/test_serve.c: cmocka tests of the serving simulation (serve/): quantiles, SLO
 * parsing, deterministic workloads and their statistics, located trace errors, the event loop
 * on a fixed test cost, and the cost interface against directly compiled plans: interpolated
 * iterations against exact ones, and a mixed iteration against one plan of its composition
 * (not a prefill step plus a decode step).  Run from the repository root. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "serve/serve.h"

#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

static void test_quantile(void **state)
{
	double v[5] = { 5, 1, 4, 2, 3 };
	assert_near(sv_quantile(v, 5, 0.5), 3, 1e-12);
	assert_near(sv_quantile(v, 5, 0.9), 4.6, 1e-12);   /* numpy: 4 + 0.6 * (5 - 4) */
	assert_near(sv_quantile(v, 5, 0), 1, 1e-12);
	assert_near(sv_quantile(v, 5, 1), 5, 1e-12);
	assert_near(sv_quantile(v, 1, 0.99), 5, 1e-12);
}

static void test_slo_parse(void **state)
{
	SvSlo s;
	SvError e;
	assert_int_equal(sv_slo_parse("ttft_p90=0.5s,tpot_p99=50ms", &s, &e), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.t[0].metric, 0);
	assert_near(s.t[0].pct, 90, 0);
	assert_near(s.t[1].limit, 0.05, 1e-15);
	assert_int_equal(sv_slo_parse("tpot_p90=-1ms", &s, &e), -1);
	assert_int_equal(sv_slo_parse("latency_p90=1s", &s, &e), -1);
	assert_int_equal(sv_slo_parse("ttft_p0=1s", &s, &e), -1);
	assert_int_equal(sv_slo_parse("ttft_p90", &s, &e), -1);
	assert_non_null(strstr(e.msg, "--slo expects"));
}

/* Same seed: the same requests; the sample mean of the gaps and of lognormal lengths agree with
 * the spec within 4 standard errors (the gaps' sd is 1/rate for Poisson, cv/rate for gamma). */
static void test_workload_statistics(void **state)
{
	SvGenSpec g = { .n = 20000, .rate = 4, .cv = 1, .seed = 7 };
	SvError e;
	assert_int_equal(sv_lengths_parse("lognormal:300:0.5", "--input", &g.in, &e), 0);
	assert_int_equal(sv_lengths_parse("uniform:10:20", "--output", &g.out, &e), 0);
	SvWorkload a, b;
	assert_int_equal(sv_workload_generate(&g, &a, &e), 0);
	assert_int_equal(sv_workload_generate(&g, &b, &e), 0);
	assert_memory_equal(a.r, b.r, sizeof *a.r * (size_t)a.n);
	double gap = a.r[a.n - 1].arrival / (a.n - 1), in = 0, lo = 1e9, hi = 0;
	for (int i = 0; i < a.n; i++) {
		in += (double)a.r[i].in / a.n;
		lo = fmin(lo, (double)a.r[i].out), hi = fmax(hi, (double)a.r[i].out);
	}
	assert_near(gap, 0.25, 4 * 0.25 / sqrt(a.n));
	/* lognormal sd = mean * sqrt(exp(sigma^2) - 1) */
	assert_near(in, 300, 4 * 300 * sqrt(exp(0.25) - 1) / sqrt(a.n) + 0.5);
	assert_near(lo, 10, 0);
	assert_near(hi, 20, 0);
	sv_workload_free(&b);
	g.cv = 3;
	assert_int_equal(sv_workload_generate(&g, &b, &e), 0);
	gap = b.r[b.n - 1].arrival / (b.n - 1);
	assert_near(gap, 0.25, 4 * 3 * 0.25 / sqrt(b.n));
	sv_workload_free(&a);
	sv_workload_free(&b);
	g.rate = 0;
	assert_int_equal(sv_workload_generate(&g, &a, &e), -1);
	assert_non_null(strstr(e.msg, "--rate must be a positive"));
	assert_int_equal(sv_lengths_parse("-5", "--input", &g.in, &e), -1);
	assert_int_equal(sv_lengths_parse("uniform:9:3", "--input", &g.in, &e), -1);
}

static const char *write_tmp(const char *text)
{
	static char path[64];
	snprintf(path, sizeof path, "/tmp/aicc-test-serve-%d.csv", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

/* The message of reading text as a CSV trace ("" when it reads). */
static const char *csv_error(const char *text)
{
	static SvError e;
	SvGenSpec g = { .rate = 1, .cv = 1 };
	SvWorkload w;
	e.msg[0] = 0;
	const char *p = write_tmp(text);
	if (sv_workload_read(p, &g, &w, &e) == 0)
		sv_workload_free(&w);
	remove(p);
	char *colon = strchr(e.msg, ':');   /* drop the temporary's name */
	return colon ? colon + 1 : e.msg;
}

static void test_csv_errors(void **state)
{
	const char *h = "arrival_s,input_tokens,output_tokens\n";
	char buf[256];
	assert_string_equal(csv_error("arrival_s,input_tokens,output_tokens\n0,4,2\n1.5,8,3\n"), "");
	snprintf(buf, sizeof buf, "%s0,4,2\n1,-3,2\n", h);
	assert_non_null(strstr(csv_error(buf), "3:3: error: input_tokens must be a whole number of tokens >= 1, got -3"));
	snprintf(buf, sizeof buf, "%s0,4,2\nnan,3,2\n", h);
	assert_non_null(strstr(csv_error(buf), "3:1: error: arrival_s is nan"));
	snprintf(buf, sizeof buf, "%s2,4,2\n1,3,2\n", h);
	assert_non_null(strstr(csv_error(buf), "3:1: error: arrival_s 1 is before the previous request's 2"));
	snprintf(buf, sizeof buf, "%s0,4\n", h);
	assert_non_null(strstr(csv_error(buf), "2:4: error: expected 3 fields"));
	assert_non_null(strstr(csv_error("0,4,2\n"), "1:1: error: expected the header"));
	snprintf(buf, sizeof buf, "%s0,4,x\n", h);
	const char *m = csv_error(buf);
	assert_non_null(strstr(m, "2:5: error: output_tokens: expected a number, got 'x'\n  0,4,x\n      ^"));
}

/* Two requests of 4 prompt and 3 output tokens at t = 0, each iteration 10 ms: one prefill
 * iteration of both prompts (TTFT 10 ms), then two decode iterations (done at 30 ms, TPOT 10 ms). */
static void test_continuous_by_hand(void **state)
{
	SvPool p;
	SvDeploy d;
	SvError e;
	sv_pool_init(&p, "colocated", "unused.aig");
	p.mode = SV_COST_FIXED;
	p.fixed_base_s = 0.010;
	p.cpu_s = 0;
	p.kv_tokens = 1 << 20;
	sv_deploy_init(&d);
	d.main = &p;
	SvRequest r[2] = { { 0, 4, 3, 0 }, { 0, 4, 3, 0 } };
	SvWorkload w = { r, 2, NULL };
	SvRun run;
	assert_int_equal(sv_simulate(&d, &w, &run, &e), 0);
	assert_int_equal(run.iterations, 3);
	for (int i = 0; i < 2; i++) {
		assert_near(run.req[i].first, 0.010, 1e-12);
		assert_near(run.req[i].done, 0.030, 1e-12);
	}
	SvMetrics m;
	sv_metrics(&run, NULL, &m);
	assert_near(m.tpot[0], 0.010, 1e-12);
	sv_run_free(&run);
	sv_pool_free(&p);
}

/* ---- the cost interface against compiled plans ---- */

static SvPool pool;
static int pool_ok;

static int open_pool(void **state)
{
	SvError e;
	setenv("AICC_MACHINES", "targets/machines", 0);
	sv_pool_init(&pool, "colocated", "examples/llama3.1-8b.aig");
	pool.binds = strdup("L=8");       /* Llama-3.1-8B's layers, 8 of them: faster compiles */
	pool.target = strdup("hopper");
	pool.machine = strdup("h100-sxm");
	pool_ok = sv_pool_open(&pool, 2048, &e) == 0;
	if (!pool_ok)
		fprintf(stderr, "%s\n", e.msg);
	return pool_ok ? 0 : -1;
}

static int close_pool(void **state)
{
	sv_pool_free(&pool);
	return 0;
}

static SvBatch batch(int64_t nd, int64_t pd, int nc, const int64_t *cs, const int64_t *cp)
{
	SvBatch b;
	memset(&b, 0, sizeof b);
	b.decodes = nd, b.decode_s = 1, b.decode_p = pd;
	b.nchunks = nc;
	for (int i = 0; i < nc; i++)
		b.chunk[i] = (SvChunk){ cs[i], cp[i] };
	return b;
}

/* The grid's price of b and the exact plan's, relative difference returned. */
static double grid_vs_exact(const SvBatch *b, const char *what)
{
	SvError e;
	pool.mode = SV_COST_GRID;
	double g = serve_iter_cost(&pool, b, &e);
	pool.mode = SV_COST_EXACT;
	double x = serve_iter_cost(&pool, b, &e);
	pool.mode = SV_COST_GRID;
	assert_true(g > 0 && x > 0);
	double rel = (g - x) / x;
	printf("  grid vs exact  %-44s grid %9.4g ms  exact %9.4g ms  %+6.2f%%\n", what, g * 1e3, x * 1e3, 100 * rel);
	return rel;
}

/* Interpolated against directly compiled iterations, at points between grid nodes.  The bounds
 * are what docs/serving.md states: single-group batches within 5 %, mixed batches within 10 %. */
static void test_grid_accuracy(void **state)
{
	static const struct { int64_t nd, pd; int nc; int64_t cs[2], cp[2]; double bound; const char *what; } cases[] = {
		{ 5, 700, 0, { 0 }, { 0 }, 0.05, "5 decodes at 700" },
		{ 40, 3000, 0, { 0 }, { 0 }, 0.05, "40 decodes at 3000" },
		{ 100, 1234, 0, { 0 }, { 0 }, 0.05, "100 decodes at 1234" },
		{ 0, 0, 1, { 300 }, { 0 }, 0.05, "a 300-token prompt" },
		{ 0, 0, 1, { 700 }, { 1000 }, 0.05, "a 700-token chunk after 1000" },
		{ 24, 1500, 1, { 512 }, { 0 }, 0.10, "24 decodes at 1500 + 512-token chunk" },
		{ 60, 900, 1, { 200 }, { 2000 }, 0.10, "60 decodes at 900 + 200 after 2000" },
		{ 10, 400, 2, { 256, 100 }, { 0, 300 }, 0.10, "10 decodes at 400 + two chunks" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		SvBatch b = batch(cases[i].nd, cases[i].pd, cases[i].nc, cases[i].cs, cases[i].cp);
		double rel = grid_vs_exact(&b, cases[i].what);
		assert_true(fabs(rel) <= cases[i].bound);
	}
}

/* A mixed iteration is one step of its composition: its exact plan costs less than a prefill
 * step plus a decode step (the weights are read once) and more than either alone. */
static void test_mixed_is_one_step(void **state)
{
	SvError e;
	pool.mode = SV_COST_EXACT;
	int64_t s = 512, p0 = 0;
	SvBatch mixed = batch(32, 2000, 1, &s, &p0), dec = batch(32, 2000, 0, NULL, NULL), pre = batch(0, 0, 1, &s, &p0);
	double m = serve_iter_cost(&pool, &mixed, &e), d = serve_iter_cost(&pool, &dec, &e), q = serve_iter_cost(&pool, &pre, &e);
	pool.mode = SV_COST_GRID;
	printf("  mixed %.4g ms, decode %.4g ms + prefill %.4g ms = %.4g ms\n", m * 1e3, d * 1e3, q * 1e3, (d + q) * 1e3);
	assert_true(m < d + q);
	assert_true(m > d && m > q);
}

int main(void)
{
	const struct CMUnitTest basic[] = {
		cmocka_unit_test(test_quantile),
		cmocka_unit_test(test_slo_parse),
		cmocka_unit_test(test_workload_statistics),
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_continuous_by_hand),
	};
	const struct CMUnitTest plans[] = {
		cmocka_unit_test(test_grid_accuracy),
		cmocka_unit_test(test_mixed_is_one_step),
	};
	int f = cmocka_run_group_tests(basic, NULL, NULL);
	return f + cmocka_run_group_tests(plans, open_pool, close_pool);
}
