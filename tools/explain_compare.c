/* tools/explain_compare.c: `aicc explain PLAN --compare`: the plan's model on a GPU + LPU machine
 * three ways, side by side: both pools (attention on the GPUs, FFN/MoE on the LPUs: the
 * disaggregate pass's hybrid), the GPU pool alone and the LPU pool alone (--pools gpu|lpu; the
 * LPU-only pool as large as the weights and KV cache need, whatever the machine's count).
 *
 * Each is rebuilt from what the plan records (model, binds, --init-unbound, precision, phase and
 * context, target and machine) with the passes the plan's compile ran (its source's `passes`,
 * disaggregate added when they lack it; a plan that does not record them: kv-cache and the
 * target's -O1 pipeline), only --pools differing, lowered by the plan's target and timed by its
 * cost hook (rt_simulate), so the columns use one model of the hardware and the variant whose
 * pools are the plan's is the plan.  A first column is the plan itself, as compiled.  Per
 * column: chips of each pool (the nodes' pool_size), micro-batches, TPOT (or TTFT), tokens/s per
 * user, tokens/s, tokens/s per chip, and where the time goes (busy time of each pool and of the
 * links); then which is fastest.  Requires a plan compiled with --phase from a model file. */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "targets/target.h"
#include "tools/driver.h"
#include "tools/plan_build.h"

typedef struct Column {
	const char *name, *pools;
	int ok, gpus, lpus, mb;
	int machine_lpus;        /* the LPUs the machine declares (before lpu-only lifts the count) */
	char lpu_id[32];         /* their device class ("lpu") */
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

/* The pipeline the variants run: the plan's recorded passes with disaggregate (before schedule
 * or plan-memory, else last), or kv-cache and the target's -O1 pipeline. */
static const char *variant_passes(const Plan *p, char *buf, size_t n)
{
	const Target *t = tgt_find(p->target);
	const char *rec = p->source.passes;
	if (!rec)
		snprintf(buf, n, "%s%s", p->source.phase ? "kv-cache," : "", t && t->pipeline ? t->pipeline : "disaggregate");
	else
		snprintf(buf, n, "%s", rec);
	if (strstr(buf, "disaggregate"))
		return buf;
	char tail[1024];
	char *at = strstr(buf, "schedule");
	if (!at)
		at = strstr(buf, "plan-memory");
	if (!at) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, "%sdisaggregate", k ? "," : "");
		return buf;
	}
	snprintf(tail, sizeof tail, "%s", at);
	snprintf(at, n - (size_t)(at - buf), "disaggregate,%s", tail);
	return buf;
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
	c->machine_lpus = lpu && num_has(&lpu->count) ? (int)lpu->count.v : 0;
	snprintf(c->lpu_id, sizeof c->lpu_id, "%s", lpu ? lpu->id : "lpu");
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
	char passes[1024];
	if (pass_run_pipeline(m, &pc, variant_passes(p, passes, sizeof passes)) > 0) {
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

/* The plan as compiled: timed as it stands; its micro-batches are those of the variant whose
 * pools it has (the same passes chose both), else unknown (-1). */
static void as_compiled(const Plan *p, Column *c, const Column *v, int nv)
{
	timing(p, c);
	c->mb = -1;
	for (int i = 0; c->ok && i < nv; i++)
		if (v[i].ok && v[i].gpus == c->gpus && v[i].lpus == c->lpus)
			c->mb = v[i].mb;
}

/* A column that needs more LPUs than the machine declares (lpu-only lifts the count). */
static int overfull(const Column *c) { return c->machine_lpus > 0 && c->lpus > c->machine_lpus; }

static void pools_str(const Column *c, char *buf, size_t n)
{
	if (c->gpus && c->lpus)
		snprintf(buf, n, "%d GPUs + %d LPUs", c->gpus, c->lpus);
	else if (c->lpus)
		snprintf(buf, n, "%d LPUs", c->lpus);
	else
		snprintf(buf, n, "%d GPU%s", c->gpus, c->gpus == 1 ? "" : "s");
}

int drv_explain_compare(const Plan *p, int json, FILE *f)
{
	if (!p->source.model || !p->source.phase) {
		drv_error("explain --compare needs a plan compiled from a model file with --phase prefill|decode");
		return -1;
	}
	enum { NC = 4 };
	Column c[NC] = { { .name = "as compiled" }, { .name = "hybrid", .pools = "hybrid" }, { .name = "gpu-only", .pools = "gpu" },
			 { .name = "lpu-only", .pools = "lpu" } };
	for (int i = 1; i < NC; i++)
		variant(p, &c[i]);
	as_compiled(p, &c[0], c + 1, NC - 1);
	int decode = !strcmp(p->source.phase, "decode");
	int fast = -1;   /* the fastest column built; the plan's own on a tie */
	for (int i = 0; i < NC; i++)
		if (c[i].ok && (fast < 0 || g_step(&c[i]) < g_step(&c[fast]) * (1 - 1e-9)))
			fast = i;
	char pl[64], pf[64], passes[1024];
	variant_passes(p, passes, sizeof passes);
	if (json) {
		fprintf(f, "{\"comparison\": [");
		for (int i = 0; i < NC; i++) {
			fprintf(f, "%s{\"pools\": \"%s\"", i ? ", " : "", i ? c[i].name : "as_compiled");
			if (c[i].ok)
				fprintf(f, ", \"gpus\": %d, \"lpus\": %d, \"micro_batches\": %g, \"%s_s\": %.6g, \"tokens_per_s_per_user\": %.6g, "
					"\"tokens_per_s\": %.6g, \"tokens_per_s_per_chip\": %.6g, \"gpu_busy_s\": %.6g, \"lpu_busy_s\": %.6g, "
					"\"link_busy_s\": %.6g}", c[i].gpus, c[i].lpus, c[i].mb < 0 ? -1.0 : g_mb(&c[i]), decode ? "tpot" : "ttft",
					g_step(&c[i]) / 1e3, g_user(&c[i]), g_tok(&c[i]), g_chip(&c[i]), c[i].busy_gpu, c[i].busy_lpu,
					c[i].busy_link);
			else
				fprintf(f, ", \"error\": \"%s\"}", c[i].err);
		}
		fprintf(f, "], \"fastest\": \"%s\"}\n", fast < 0 ? "" : fast ? c[fast].name : "as_compiled");
		return 0;
	}
	fprintf(f, "comparison: %s, %s, batch %lld, %s %lld; target %s, machine %s; the plan as compiled, then each "
		"pool choice rebuilt with its passes (%s)\n", p->source.model, p->source.phase,
		(long long)(c[0].ok ? c[0].ph.batch : 0), decode ? "past tokens" : "prompt tokens", (long long)p->source.context,
		p->target, p->machine, passes);
	fprintf(f, "  %-24s", "");
	for (int i = 0; i < NC; i++)
		fprintf(f, " %14s", c[i].name);
	fputc('\n', f);
	row(f, "GPUs", c, NC, 6, g_gpus);
	row(f, "LPUs", c, NC, 6, g_lpus);
	fprintf(f, "  %-24s", "micro-batches");
	for (int i = 0; i < NC; i++)
		if (c[i].ok && c[i].mb >= 0)
			fprintf(f, " %14.3g", g_mb(&c[i]));
		else
			fprintf(f, " %14s", "-");
	fputc('\n', f);
	row(f, decode ? "TPOT ms" : "TTFT ms", c, NC, 4, g_step);
	if (decode)
		row(f, "tokens/s per user", c, NC, 4, g_user);
	row(f, "tokens/s", c, NC, 4, g_tok);
	row(f, "tokens/s per chip", c, NC, 4, g_chip);
	row(f, "GPU pool busy ms", c, NC, 4, g_bg);
	row(f, "LPU pool busy ms", c, NC, 4, g_bl);
	row(f, "links busy ms", c, NC, 4, g_bk);
	for (int i = 0; i < NC; i++)
		if (!c[i].ok)
			fprintf(f, "  %s: not built: %s\n", c[i].name, c[i].err);
	/* the verdict: the fastest column; when it needs more LPUs than the machine has (lpu-only
	 * lifts the count), also the fastest the machine takes as it is; and the plan against it */
	int fit = -1;
	for (int i = 0; i < NC; i++)
		if (c[i].ok && !overfull(&c[i]) && (fit < 0 || g_step(&c[i]) < g_step(&c[fit]) * (1 - 1e-9)))
			fit = i;
	if (fast >= 0) {
		pools_str(&c[fast], pf, sizeof pf);
		fprintf(f, "  fastest: %s, %.4g ms on %s", c[fast].name, g_step(&c[fast]), pf);
		if (overfull(&c[fast]))
			fprintf(f, ", more LPUs than the machine's %d (--pools lpu --set %s.count=%d)", c[fast].machine_lpus,
				c[fast].lpu_id, c[fast].lpus);
		else if (fast != 0 && c[fast].pools)
			fprintf(f, " (--pools %s)", c[fast].pools);
		if (fit >= 0 && fit != fast) {
			pools_str(&c[fit], pf, sizeof pf);
			fprintf(f, "; on the machine as it is: %s, %.4g ms on %s", fit == 0 ? "the plan as compiled" : c[fit].name,
				g_step(&c[fit]), pf);
		}
		if (c[0].ok && fast != 0 && fit == 0)
			fprintf(f, ", %.3gx the fastest", g_step(&c[0]) / g_step(&c[fast]));
		else if (c[0].ok && fast != 0) {
			pools_str(&c[0], pl, sizeof pl);
			fprintf(f, "; the plan as compiled (%s) takes %.4g ms, %.3gx the fastest", pl, g_step(&c[0]),
				g_step(&c[0]) / g_step(&c[fast]));
		}
		fputc('\n', f);
	}
	/* why a split can lose: its pools take turns per layer (one micro-batch: GPU, link, LPU, link
	 * in series), so it pays the LPU time and the crossings where the GPUs alone stream the FFN */
	if (c[1].ok && c[2].ok && g_step(&c[1]) > g_step(&c[2]))
		fprintf(f, "  hybrid is %.3gx slower than gpu-only: per step its GPU pool is busy %.4g ms, its LPU pool %.4g ms "
			"and its links %.4g ms (%g micro-batch(es) to overlap them), where %d GPUs alone take %.4g ms; "
			"without --pools the disaggregate pass keeps the layout it predicts fastest of the three\n",
			g_step(&c[1]) / g_step(&c[2]), g_bg(&c[1]), g_bl(&c[1]), g_bk(&c[1]), g_mb(&c[1]), c[2].gpus, g_step(&c[2]));
	return 0;
}
