/* tools/explain_compare.c: `aicc explain PLAN --compare`: the plan's model on a GPU + LPU machine
 * three ways, side by side: both pools (attention on the GPUs, FFN/MoE on the LPUs: the
 * disaggregate pass's hybrid), the GPU pool alone and the LPU pool alone (--pools gpu|lpu; the
 * LPU-only pool as large as the weights and KV cache need, whatever the machine's count).
 *
 * Each is rebuilt from what the plan records (model, binds, --init-unbound, precision, phase and
 * context, target and machine) with the pipeline kv-cache,disaggregate, lowered by the plan's
 * target and timed by its cost hook (rt_simulate), so the three columns use one model of the
 * hardware.  Per column: chips of each pool (the nodes' pool_size), micro-batches, TPOT (or
 * TTFT), tokens/s per user, tokens/s, tokens/s per chip, and where the time goes (busy time of
 * each pool and of the links).  Requires a plan compiled with --phase from a model file. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "targets/target.h"
#include "tools/driver.h"
#include "tools/plan_build.h"

typedef struct Column {
	const char *name, *pools;
	int ok, gpus, lpus, mb;
	RtPhase ph;
	double latency, busy_gpu, busy_lpu, busy_link;
	char err[1200];
} Column;

/* Chips of the pools a plan uses: the largest pool_size its kernels carry, per device kind. */
static void chips(const Plan *p, Column *c)
{
	for (int s = 0; s < p->nstreams; s++) {
		const char *kind = p->devices[p->streams[s].device].kind;
		for (int i = 0; i < p->streams[s].nins; i++) {
			int n = (int)rt_attr_int(&p->streams[s].ins[i].attrs, "pool_size", 0);
			int *dst = kind && !strcmp(kind, "lpu") ? &c->lpus : &c->gpus;
			if (p->streams[s].ins[i].kind == PI_KERNEL && n > *dst)
				*dst = n;
		}
	}
}

static void timing(const Plan *p, Column *c)
{
	RtTiming tm;
	RtError e = { 0 };
	if (rt_simulate(p, &tm, &e) < 0) {
		snprintf(c->err, sizeof c->err, "%s", e.msg);
		return;
	}
	c->latency = tm.latency_s;
	for (int d = 0; d < p->ndevices; d++)
		*(p->devices[d].kind && !strcmp(p->devices[d].kind, "lpu") ? &c->busy_lpu : &c->busy_gpu) += tm.busy_s[d];
	for (int l = 0; l < p->nlinks; l++)
		c->busy_link += tm.link_busy_s[l];
	rt_phase_metrics(p, tm.latency_s, &c->ph);
	chips(p, c);
	c->ok = 1;
	rt_timing_free(&tm);
}

/* Rebuilds p's model with `pools` and times it into c. */
static void variant(const Plan *p, Column *c)
{
	DrvBinds b = { 0 };
	Module *m = NULL;
	TgtMachine tm = { 0 };
	RtError e = { 0 };
	PassCtx pc;
	pass_ctx_init(&pc);
	if (p->source.binds && *p->source.binds && drv_binds_parse(&b, p->source.binds) < 0) {
		snprintf(c->err, sizeof c->err, "the plan's binds '%s' are malformed", p->source.binds);
		goto out;
	}
	if (!(m = drv_load_model_binds(p->source.model, &b)) ||
	    (p->source.init && drv_init_unbound(m, p->source.init) < 0) || ir_verify(m) > 0 || ir_infer_shapes(m) > 0) {
		snprintf(c->err, sizeof c->err, "'%s' does not rebuild", p->source.model);
		goto out;
	}
	if (tgt_machine_load(p->machine, NULL, 0, &tm, &e) < 0) {
		snprintf(c->err, sizeof c->err, "%s", e.msg);
		goto out;
	}
	/* the LPU-only pool takes as many LPUs as it needs: the machine's count is lifted to the
	 * largest a machine may declare (targets/machine.c) */
	char set[128];
	const char *sets[1] = { set };
	const Device *lpu = machine_first(tm.m, DEV_LPU);
	int nsets = 0;
	if (!strcmp(c->pools, "lpu") && lpu) {
		snprintf(set, sizeof set, "%s.count=65536", lpu->id);
		tgt_machine_free(&tm);
		if (tgt_machine_load(p->machine, sets, 1, &tm, &e) < 0) {
			snprintf(c->err, sizeof c->err, "%s", e.msg);
			goto out;
		}
		nsets = 1;
	}
	Precision prec;
	if (prec_parse(p->source.precision, tgt_find(p->target), tm.m, &prec, &e) < 0) {
		snprintf(c->err, sizeof c->err, "%s", e.msg);
		goto out;
	}
	pc.machine = tm.m;
	pc.phase = p->source.phase;
	pc.context = p->source.context;
	pc.precision = &prec;
	pc.target = tgt_find(p->target);
	pc.pools = c->pools;
	pc.out = stderr;
	if (pass_run_pipeline(m, &pc, p->source.phase ? "kv-cache,disaggregate" : "disaggregate") > 0) {
		snprintf(c->err, sizeof c->err, "the %s pools do not take the model (see the error above)", c->pools);
		goto out;
	}
	c->mb = (int)pass_stat_get(&pc, "disaggregate", "micro-batches");
	BuildOpts o = { p->source.model, p->source.binds, p->target, p->machine, sets, nsets, p->source.precision, p->source.init,
			&tm, &prec };
	Plan *q = drv_lower(m, &o, &e);
	if (!q) {
		snprintf(c->err, sizeof c->err, "%s", e.msg);
		goto out;
	}
	if (p->source.phase)
		plan_set_source_phase(q, p->source.phase, p->source.context, &e);
	timing(q, c);
	plan_free(q);
out:
	if (tm.m)
		tgt_machine_free(&tm);
	pass_ctx_free(&pc);
	if (m)
		ir_module_free(m);
	drv_binds_free(&b);
}

static void row(FILE *f, const char *label, const Column *c, int n, int prec, double (*get)(const Column *))
{
	fprintf(f, "  %-24s", label);
	for (int i = 0; i < n; i++)
		if (c[i].ok)
			fprintf(f, " %14.*g", prec, get(&c[i]));
		else
			fprintf(f, " %14s", "-");
	fputc('\n', f);
}

static double g_gpus(const Column *c) { return c->gpus; }
static double g_lpus(const Column *c) { return c->lpus; }
static double g_mb(const Column *c) { return c->mb > 0 ? c->mb : 1; }
static double g_step(const Column *c) { return (c->ph.tpot_s > 0 ? c->ph.tpot_s : c->latency) * 1e3; }
static double g_user(const Column *c) { return c->ph.tokens_per_s_user; }
static double g_tok(const Column *c) { return c->ph.tokens_per_s; }
static double g_chip(const Column *c) { return c->gpus + c->lpus > 0 ? c->ph.tokens_per_s / (c->gpus + c->lpus) : 0; }
static double g_bg(const Column *c) { return c->busy_gpu * 1e3; }
static double g_bl(const Column *c) { return c->busy_lpu * 1e3; }
static double g_bk(const Column *c) { return c->busy_link * 1e3; }

int drv_explain_compare(const Plan *p, int json, FILE *f)
{
	if (!p->source.model || !p->source.phase) {
		drv_error("explain --compare needs a plan compiled from a model file with --phase prefill|decode");
		return -1;
	}
	Column c[3] = { { .name = "hybrid", .pools = "hybrid" }, { .name = "gpu-only", .pools = "gpu" },
			{ .name = "lpu-only", .pools = "lpu" } };
	for (int i = 0; i < 3; i++)
		variant(p, &c[i]);
	int decode = !strcmp(p->source.phase, "decode");
	if (json) {
		fprintf(f, "{\"comparison\": [");
		for (int i = 0; i < 3; i++) {
			fprintf(f, "%s{\"pools\": \"%s\"", i ? ", " : "", c[i].name);
			if (c[i].ok)
				fprintf(f, ", \"gpus\": %d, \"lpus\": %d, \"micro_batches\": %g, \"%s_s\": %.6g, \"tokens_per_s_per_user\": %.6g, "
					"\"tokens_per_s\": %.6g, \"tokens_per_s_per_chip\": %.6g, \"gpu_busy_s\": %.6g, \"lpu_busy_s\": %.6g, "
					"\"link_busy_s\": %.6g}", c[i].gpus, c[i].lpus, g_mb(&c[i]), decode ? "tpot" : "ttft",
					g_step(&c[i]) / 1e3, g_user(&c[i]), g_tok(&c[i]), g_chip(&c[i]), c[i].busy_gpu, c[i].busy_lpu,
					c[i].busy_link);
			else
				fprintf(f, ", \"error\": \"%s\"}", c[i].err);
		}
		fprintf(f, "]}\n");
		return 0;
	}
	fprintf(f, "comparison: %s, %s, batch %lld, %s %lld; target %s, machine %s; each rebuilt with "
		"kv-cache,disaggregate\n", p->source.model, p->source.phase, (long long)(c[0].ok ? c[0].ph.batch : 0),
		decode ? "past tokens" : "prompt tokens", (long long)p->source.context, p->target, p->machine);
	fprintf(f, "  %-24s %14s %14s %14s\n", "", c[0].name, c[1].name, c[2].name);
	row(f, "GPUs", c, 3, 6, g_gpus);
	row(f, "LPUs", c, 3, 6, g_lpus);
	row(f, "micro-batches", c, 3, 3, g_mb);
	row(f, decode ? "TPOT ms" : "TTFT ms", c, 3, 4, g_step);
	if (decode)
		row(f, "tokens/s per user", c, 3, 4, g_user);
	row(f, "tokens/s", c, 3, 4, g_tok);
	row(f, "tokens/s per chip", c, 3, 4, g_chip);
	row(f, "GPU pool busy ms", c, 3, 4, g_bg);
	row(f, "LPU pool busy ms", c, 3, 4, g_bl);
	row(f, "links busy ms", c, 3, 4, g_bk);
	for (int i = 0; i < 3; i++)
		if (!c[i].ok)
			fprintf(f, "  %s: not built: %s\n", c[i].name, c[i].err);
	/* why a split can lose: its pools take turns per layer (one micro-batch: GPU, link, LPU, link
	 * in series), so it pays the LPU time and the crossings where the GPUs alone stream the FFN */
	if (c[0].ok && c[1].ok && g_step(&c[0]) > g_step(&c[1]))
		fprintf(f, "  hybrid is %.3gx slower than gpu-only: per step its GPU pool is busy %.4g ms, its LPU pool %.4g ms "
			"and its links %.4g ms (%g micro-batch(es) to overlap them), where %d GPUs alone take %.4g ms; "
			"without --pools the disaggregate pass keeps the FFN on the GPUs when it predicts this\n",
			g_step(&c[0]) / g_step(&c[1]), g_bg(&c[0]), g_bl(&c[0]), g_bk(&c[0]), g_mb(&c[0]), c[1].gpus, g_step(&c[1]));
	return 0;
}
