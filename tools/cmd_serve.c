/* tools/cmd_serve.c: `aicc serve MODEL ...`: a serving simulation (serve/serve.h,
 * docs/serving.md): the deployment (one colocated pool, prefill and decode pools, the Vera Rubin
 * split, a draft pool), the scheduler and KV cache, the workload, the SLO, and what to write. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve/internal.h"
#include "tools/driver.h"

typedef struct ServeOpts {
	const char *model, *binds;
	const char *target, *machine, *precision, *pool, *prefill, *decode, *deployment;
	const char *draft, *draft_pool, *draft_binds;
	const char *sets[16];
	int nsets;
	int tp, pp, replicas;
	const char *scheduler, *kv_alloc, *kv_format, *preempt, *cost, *cpu, *kv_link;
	int cpu_overlap;
	long max_batch, token_budget, chunk, block, max_seq, spec_k, kv_tokens;
	double accept, mem_util;
	/* workload */
	const char *workload, *input, *output;
	long requests;
	double rate, cv;
	unsigned long long seed;
	/* outputs */
	const char *slo, *report, *trace, *plot;
	int log, capacity, search, cost_check;
	double rate_min, rate_max;
	long bisect;
} ServeOpts;

static void serve_help(void)
{
	printf("usage: aicc serve MODEL(.aig) [options]   (docs/serving.md)\n"
	       "deployment (one of):\n"
	       "  --target T --machine M [--tp N] [--pp N] [--precision P] [--replicas N] [--set k=v]\n"
	       "                        one colocated pool (default target hopper on its machine)\n"
	       "  --pool TARGET:MACHINE[,tp=N,pp=N,precision=P,replicas=N,kv=fp8,cpu=4ms,set=k=v]\n"
	       "  --prefill POOL --decode POOL   DistServe/Splitwise disaggregation, e.g.\n"
	       "                        --prefill blackwell:b200x8,tp=8 --decode lpu:groq-lpx\n"
	       "  --deployment vera-rubin  prefill on the Rubin GPUs, decode attention on the GPUs and\n"
	       "                        FFN on the LPX rack (the disaggregate pass)\n"
	       "  --kv-link BW[,LAT]    the link between prefill and decode pools on different machines\n"
	       "                        (default 50GB/s,10us: one 400 Gb/s NIC per replica)\n"
	       "  --draft MODEL --draft-pool POOL [--draft-bind ...] [--spec-k 4] [--accept 0.7]\n"
	       "                        speculative decoding with a draft model on its own pool\n"
	       "  --bind NAME=V,...     the model's dims (e.g. a small run: L=2,H=4,...)\n"
	       "scheduler and KV cache:\n"
	       "  --scheduler continuous|sarathi   Orca/vLLM batching (default) or Sarathi-Serve chunks\n"
	       "  --max-batch N (256) --token-budget N (2048) --chunk N (Sarathi: largest chunk)\n"
	       "  --block N (16) --kv-alloc paged|max|pow2|oracle (--max-seq N for max) --kv-format bf16|fp8\n"
	       "  --preempt recompute|swap --mem-util F (0.9) --kv-tokens N (override the capacity)\n"
	       "  --cpu-overhead T (4ms) [--cpu-overlap]   engine CPU time per iteration\n"
	       "  --cost grid|exact|fixed:BASE[,PER_TOKEN]   iteration prices (fixed: a test double)\n"
	       "workload:\n"
	       "  --rate R --requests N (1000) [--cv C] --input LEN --output LEN [--seed S]\n"
	       "                        LEN: N, uniform:MIN:MAX or lognormal:MEAN:SIGMA\n"
	       "  --workload FILE.csv|FILE.json   a trace (arrival_s,input_tokens,output_tokens) or\n"
	       "                        ShareGPT conversations (arrivals from --rate)\n"
	       "outputs:\n"
	       "  --slo ttft_p90=0.5s,tpot_p90=50ms   percentile limits; goodput counts requests within\n"
	       "  --report FILE.json  --trace FILE.json (Perfetto)  --plot PREFIX (PNG, gnuplot)  --log\n"
	       "  --capacity [--rate-min R --rate-max R --bisect N]   highest rate meeting the SLO\n"
	       "  --search              the deployment with the best goodput per chip (prints the frontier)\n"
	       "  --cost-check          the grid's prices against exact plans for sample batches of each pool\n");
}

static int parse_long(const char *opt, const char *v, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (end == v || *end || errno || n < lo || n > hi) {
		drv_error("%s expects an integer from %ld to %ld, got '%s'", opt, lo, hi, v);
		return -1;
	}
	*out = n;
	return 0;
}

static int parse_double(const char *opt, const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (end == v || *end || errno || !isfinite(d)) {
		drv_error("%s expects a number, got '%s'", opt, v);
		return -1;
	}
	*out = d;
	return 0;
}

static int parse_opts(int argc, char **argv, ServeOpts *o)
{
	memset(o, 0, sizeof *o);
	o->max_batch = 256, o->token_budget = 2048, o->block = 16, o->spec_k = 4, o->requests = 1000;
	o->accept = 0.7, o->mem_util = 0.9, o->cv = 1, o->seed = 1, o->rate = -1;
	o->rate_min = 0.05, o->rate_max = 200, o->bisect = 8;
	o->input = "512", o->output = "128";
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		const char **str[] = { &o->binds, &o->target, &o->machine, &o->precision, &o->pool, &o->prefill, &o->decode,
				       &o->deployment, &o->draft, &o->draft_pool, &o->draft_binds, &o->scheduler, &o->kv_alloc,
				       &o->kv_format, &o->preempt, &o->cost, &o->cpu, &o->kv_link, &o->workload, &o->input,
				       &o->output, &o->slo, &o->report, &o->trace, &o->plot };
		static const char *snames[] = { "--bind", "--target", "--machine", "--precision", "--pool", "--prefill",
						"--decode", "--deployment", "--draft", "--draft-pool", "--draft-bind", "--scheduler",
						"--kv-alloc", "--kv-format", "--preempt", "--cost", "--cpu-overhead", "--kv-link",
						"--workload", "--input", "--output", "--slo", "--report", "--trace", "--plot" };
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			serve_help();
			exit(EXIT_OK);
		}
		int done = 0;
		for (size_t k = 0; k < sizeof snames / sizeof snames[0] && !done; k++)
			if ((r = opt_value(argc, argv, &i, snames[k], str[k]))) {
				if (r < 0)
					return -1;
				done = 1;
			}
		if (done)
			continue;
		static const struct { const char *name; long lo, hi; size_t off; } ints[] = {
			{ "--tp", 1, 4096, offsetof(ServeOpts, tp) }, { "--pp", 1, 4096, offsetof(ServeOpts, pp) },
			{ "--replicas", 1, 4096, offsetof(ServeOpts, replicas) },
		};
		static const struct { const char *name; long lo, hi; size_t off; } longs[] = {
			{ "--max-batch", 1, 1 << 20, offsetof(ServeOpts, max_batch) },
			{ "--token-budget", 1, 1 << 24, offsetof(ServeOpts, token_budget) },
			{ "--chunk", 1, 1 << 24, offsetof(ServeOpts, chunk) },
			{ "--block", 1, 1 << 16, offsetof(ServeOpts, block) },
			{ "--max-seq", 1, 1L << 30, offsetof(ServeOpts, max_seq) },
			{ "--spec-k", 1, 16, offsetof(ServeOpts, spec_k) },
			{ "--requests", 1, 10000000, offsetof(ServeOpts, requests) },
			{ "--bisect", 1, 40, offsetof(ServeOpts, bisect) },
			{ "--kv-tokens", 1, 1L << 40, offsetof(ServeOpts, kv_tokens) },
		};
		for (size_t k = 0; k < sizeof ints / sizeof ints[0] && !done; k++)
			if ((r = opt_value(argc, argv, &i, ints[k].name, &v))) {
				long n;
				if (r < 0 || parse_long(ints[k].name, v, ints[k].lo, ints[k].hi, &n) < 0)
					return -1;
				*(int *)((char *)o + ints[k].off) = (int)n;
				done = 1;
			}
		for (size_t k = 0; k < sizeof longs / sizeof longs[0] && !done; k++)
			if ((r = opt_value(argc, argv, &i, longs[k].name, &v))) {
				if (r < 0 || parse_long(longs[k].name, v, longs[k].lo, longs[k].hi, (long *)((char *)o + longs[k].off)) < 0)
					return -1;
				done = 1;
			}
		static const struct { const char *name; size_t off; } dbls[] = {
			{ "--rate", offsetof(ServeOpts, rate) }, { "--cv", offsetof(ServeOpts, cv) },
			{ "--accept", offsetof(ServeOpts, accept) }, { "--mem-util", offsetof(ServeOpts, mem_util) },
			{ "--rate-min", offsetof(ServeOpts, rate_min) }, { "--rate-max", offsetof(ServeOpts, rate_max) },
		};
		for (size_t k = 0; k < sizeof dbls / sizeof dbls[0] && !done; k++)
			if ((r = opt_value(argc, argv, &i, dbls[k].name, &v))) {
				if (r < 0 || parse_double(dbls[k].name, v, (double *)((char *)o + dbls[k].off)) < 0)
					return -1;
				/* -1 is "not given" (a CSV trace's own rate): a given rate must be positive */
				if (!strcmp(dbls[k].name, "--rate") && !(o->rate > 0)) {
					drv_error("--rate must be a positive number of requests per second, got %g", o->rate);
					return -1;
				}
				done = 1;
			}
		if (done)
			continue;
		if ((r = opt_value(argc, argv, &i, "--seed", &v))) {
			long n;
			if (r < 0 || parse_long("--seed", v, 0, 0x7fffffffL, &n) < 0)
				return -1;
			o->seed = (unsigned long long)n;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--set", &v))) {
			if (r < 0)
				return -1;
			if (o->nsets == 16) {
				drv_error("too many --set options");
				return -1;
			}
			o->sets[o->nsets++] = v;
			continue;
		}
		const struct { const char *name; int *flag; } flags[] = {
			{ "--cost-check", &o->cost_check }, { "--cpu-overlap", &o->cpu_overlap }, { "--log", &o->log },
			{ "--capacity", &o->capacity }, { "--search", &o->search },
		};
		for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !done; k++)
			if (strcmp(argv[i], flags[k].name) == 0)
				*flags[k].flag = done = 1;
		if (done)
			continue;
		if (drv_operand(argv[i], &o->model, "model", "serve") < 0)
			return -1;
	}
	if (!o->model) {
		drv_error("no model given (see aicc serve --help)");
		return -1;
	}
	if (!(o->accept >= 0 && o->accept < 1)) {
		drv_error("--accept expects a draft acceptance rate in [0, 1), got %g", o->accept);
		return -1;
	}
	if (!(o->mem_util > 0 && o->mem_util <= 1)) {
		drv_error("--mem-util expects a fraction in (0, 1], got %g", o->mem_util);
		return -1;
	}
	return 0;
}

/* Applies the deployment-wide options to a pool. */
static int pool_common(const ServeOpts *o, SvPool *p, SvError *e)
{
	if (o->cost) {
		if (strcmp(o->cost, "grid") == 0)
			p->mode = SV_COST_GRID;
		else if (strcmp(o->cost, "exact") == 0)
			p->mode = SV_COST_EXACT;
		else if (strncmp(o->cost, "fixed:", 6) == 0) {
			char buf[128];
			snprintf(buf, sizeof buf, "%s", o->cost + 6);
			char *comma = strchr(buf, ',');
			if (comma)
				*comma = 0;
			p->mode = SV_COST_FIXED;
			p->fixed_base_s = sv_parse_seconds(buf);
			p->fixed_token_s = comma ? sv_parse_seconds(comma + 1) : 0;
			if (p->fixed_base_s < 0 || p->fixed_token_s < 0)
				return sv_err(e, "aicc: error: --cost fixed:BASE[,PER_TOKEN] expects times such as fixed:10ms,0.1ms, got '%s'", o->cost);
		} else
			return sv_err(e, "aicc: error: --cost expects grid, exact or fixed:BASE[,PER_TOKEN], got '%s'", o->cost);
	}
	if (o->cpu && (p->cpu_s = sv_parse_seconds(o->cpu)) < 0)
		return sv_err(e, "aicc: error: --cpu-overhead expects a time such as 4ms, got '%s'", o->cpu);
	p->cpu_overlap = o->cpu_overlap;
	p->mem_util = o->mem_util;
	if (o->kv_format) {
		if (strcmp(o->kv_format, "fp8") && strcmp(o->kv_format, "bf16"))
			return sv_err(e, "aicc: error: --kv-format expects bf16 or fp8, got '%s'", o->kv_format);
		p->kv_fp8 = strcmp(o->kv_format, "fp8") == 0;
	}
	return 0;
}

static int colocated_pool(const ServeOpts *o, SvPool *p, SvError *e)
{
	if (o->pool) {
		if (sv_pool_parse(p, "colocated", o->model, o->pool, e) < 0)
			return -1;
	} else {
		sv_pool_init(p, "colocated", o->model);
		p->target = strdup(o->target ? o->target : "hopper");
		const Target *t = tgt_find(p->target);
		if (!t) {
			char sug[512];
			tgt_suggest(p->target, sug, sizeof sug);
			return sv_err(e, "aicc: error: unknown target '%s'%s", p->target, sug);
		}
		p->machine = strdup(o->machine ? o->machine : t->default_machine);
		if (o->precision)
			p->precision = strdup(o->precision);
		p->tp = o->tp ? o->tp : 1;
		p->pp = o->pp ? o->pp : 1;
		p->replicas = o->replicas ? o->replicas : 1;
		for (int i = 0; i < o->nsets; i++)
			p->sets[p->nsets++] = strdup(o->sets[i]);
	}
	return 0;
}

/* The link a KV cache crosses between the pools: the machine's own link between the two
 * accelerator classes when both pools are one machine, else --kv-link. */
static int kv_link(const ServeOpts *o, SvDeploy *d, SvError *e)
{
	SvPool *a = d->prefill, *b = d->main;
	if (o->kv_link) {
		char buf[128];
		snprintf(buf, sizeof buf, "%s", o->kv_link);
		char *comma = strchr(buf, ','), *end;
		if (comma)
			*comma = 0;
		double bw = strtod(buf, &end), mul = strcmp(end, "GB/s") == 0 ? 1e9 : strcmp(end, "TB/s") == 0 ? 1e12 : 0;
		d->kv_link_bw = bw * mul;
		d->kv_link_lat = comma ? sv_parse_seconds(comma + 1) : d->kv_link_lat;
		if (!(d->kv_link_bw > 0) || d->kv_link_lat < 0)
			return sv_err(e, "aicc: error: --kv-link expects BANDWIDTH[,LATENCY] such as 50GB/s,10us, got '%s'", o->kv_link);
		d->kv_link_name = "--kv-link";
		return 0;
	}
	if (a->mode != SV_COST_FIXED && strcmp(a->machine, b->machine) == 0) {
		const Machine *m = b->mach.m;
		const Device *x = machine_first(m, DEV_GPU) ? machine_first(m, DEV_GPU) : machine_first(m, DEV_LPU);
		const Link *l = x ? machine_link(m, x, x) : NULL;
		if (l && num_has(&l->bandwidth)) {
			int lanes = a->tp < b->tp ? a->tp : b->tp;
			d->kv_link_bw = link_oneway_bw(l) * (lanes > 0 ? lanes : 1);
			d->kv_link_lat = num_has(&l->latency) ? l->latency.v : d->kv_link_lat;
			d->kv_link_name = l->id;
		}
	}
	return 0;
}

/* Largest prompt of the workload (a non-chunked prefill runs it whole). */
static int64_t max_prompt(const SvWorkload *w)
{
	int64_t m = 1;
	for (int i = 0; i < w->n; i++)
		m = w->r[i].in > m ? w->r[i].in : m;
	return m;
}

static int open_pools(const ServeOpts *o, SvDeploy *d, const SvWorkload *w, SvError *e)
{
	int64_t budget = d->token_budget, prompt = max_prompt(w);
	int64_t pre = d->sched == SV_SARATHI ? budget : (prompt > budget ? prompt : budget);
	if (d->prefill && sv_pool_open(d->prefill, pre, e) < 0)
		return -1;
	if (sv_pool_open(d->main, d->prefill ? d->max_batch : pre, e) < 0)
		return -1;
	if (d->draft && sv_pool_open(d->draft, pre, e) < 0)
		return -1;
	for (SvPool *p = d->main; o->kv_tokens && p; p = p == d->main ? d->prefill : NULL)
		p->kv_tokens = o->kv_tokens;   /* what-if: a KV cache of this many tokens per replica */
	if (sv_workload_check(w, d->main->max_context, e) < 0)
		return -1;
	if (d->prefill)
		return kv_link(o, d, e);
	return 0;
}

static int build_deploy(const ServeOpts *o, SvDeploy *d, SvPool *pools, SvError *e)
{
	sv_deploy_init(d);
	d->max_batch = (int)o->max_batch;
	d->token_budget = o->token_budget;
	d->chunk = o->chunk;
	d->block = (int)o->block;
	d->max_seq = o->max_seq;
	d->seed = o->seed;
	d->log = o->log;
	d->spec_k = (int)o->spec_k;
	d->accept = o->accept;
	if (o->scheduler && strcmp(o->scheduler, "continuous") && strcmp(o->scheduler, "vllm") && strcmp(o->scheduler, "orca") &&
	    strcmp(o->scheduler, "sarathi"))
		return sv_err(e, "aicc: error: --scheduler expects continuous or sarathi, got '%s'", o->scheduler);
	d->sched = o->scheduler && strcmp(o->scheduler, "sarathi") == 0 ? SV_SARATHI : SV_CONTINUOUS;
	if (o->kv_alloc) {
		static const char *names[] = { "paged", "max", "pow2", "oracle" };
		int k = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(o->kv_alloc, names[i]) == 0)
				k = i;
		if (k < 0)
			return sv_err(e, "aicc: error: --kv-alloc expects paged, max, pow2 or oracle, got '%s'", o->kv_alloc);
		d->kv_alloc = (SvKvAlloc)k;
	}
	if (o->preempt) {
		if (strcmp(o->preempt, "recompute") && strcmp(o->preempt, "swap"))
			return sv_err(e, "aicc: error: --preempt expects recompute or swap, got '%s'", o->preempt);
		d->preempt = strcmp(o->preempt, "swap") == 0 ? SV_SWAP : SV_RECOMPUTE;
	}
	int disagg = o->prefill || o->decode || o->deployment;
	if ((o->prefill != NULL) != (o->decode != NULL) && !o->deployment)
		return sv_err(e, "aicc: error: a disaggregated deployment needs both --prefill and --decode");
	if (disagg && (o->pool || o->target || o->machine || o->tp))
		return sv_err(e, "aicc: error: --prefill/--decode/--deployment replace --pool, --target, --machine and --tp");
	if (disagg && d->sched == SV_SARATHI)
		return sv_err(e, "aicc: error: --scheduler sarathi is for colocated pools; disaggregated prefill runs whole prompts");
	if (o->deployment && strcmp(o->deployment, "vera-rubin"))
		return sv_err(e, "aicc: error: --deployment expects vera-rubin, got '%s'", o->deployment);
	if (o->deployment) {
		if (sv_pool_parse(&pools[1], "prefill", o->model, o->prefill ? o->prefill : "vera-rubin:vera-rubin", e) < 0 ||
		    sv_pool_parse(&pools[0], "decode", o->model, o->decode ? o->decode : "vera-rubin:vera-rubin", e) < 0)
			return -1;
		d->name = "vera-rubin";
	} else if (disagg) {
		if (sv_pool_parse(&pools[1], "prefill", o->model, o->prefill, e) < 0 ||
		    sv_pool_parse(&pools[0], "decode", o->model, o->decode, e) < 0)
			return -1;
		d->name = "disaggregated";
	} else {
		if (colocated_pool(o, &pools[0], e) < 0)
			return -1;
		d->name = "colocated";
	}
	d->main = &pools[0];
	if (disagg) {
		d->prefill = &pools[1];
		d->sched = SV_DISAGG;
	}
	if (o->draft || o->draft_pool) {
		if (!o->draft || !o->draft_pool)
			return sv_err(e, "aicc: error: speculative decoding needs --draft MODEL and --draft-pool POOL");
		if (sv_pool_parse(&pools[2], "draft", o->draft, o->draft_pool, e) < 0)
			return -1;
		if (o->draft_binds)
			pools[2].binds = strdup(o->draft_binds);
		d->draft = &pools[2];
	}
	for (int i = 0; i < 3; i++) {
		if (!pools[i].role)
			continue;
		if (o->binds && i < 2)
			pools[i].binds = strdup(o->binds);
		if (pool_common(o, &pools[i], e) < 0)
			return -1;
		if (d->sched == SV_SARATHI && strcmp(pools[i].target, "vera-rubin") == 0)
			return sv_err(e, "aicc: error: the vera-rubin target prices whole decode steps and whole prompts: "
				      "no chunked prefill (use --deployment vera-rubin or the continuous scheduler)");
	}
	return 0;
}

static int make_workload(const ServeOpts *o, SvGenSpec *g, SvWorkload *w, SvError *e)
{
	memset(g, 0, sizeof *g);
	g->n = (int)o->requests;
	g->rate = o->rate;
	g->cv = o->cv;
	g->seed = o->seed;
	if (o->rate == -1 && !(o->workload && strstr(o->workload, ".csv")))
		return sv_err(e, "aicc: error: give the request rate (--rate R, requests/s) or a CSV trace (--workload FILE.csv)");
	if (sv_lengths_parse(o->input, "--input", &g->in, e) < 0 || sv_lengths_parse(o->output, "--output", &g->out, e) < 0)
		return -1;
	if (o->workload)
		return sv_workload_read(o->workload, g, w, e);
	return sv_workload_generate(g, w, e);
}

static int write_outputs(const ServeOpts *o, const SvDeploy *d, const SvWorkload *w, const SvRun *r,
			 const SvMetrics *m, const SvSlo *slo, SvError *e)
{
	OutFile f;
	if (o->report) {
		if (out_open(&f, o->report) < 0)
			return -1;
		if (sv_report_write(f.f, d, w, r, m, slo, e) < 0) {
			out_abort(&f);
			return -1;
		}
		if (out_commit(&f) < 0)
			return -1;
	}
	if (o->trace) {
		if (out_open(&f, o->trace) < 0)
			return -1;
		if (sv_trace_write(f.f, d, r, e) < 0) {
			out_abort(&f);
			return -1;
		}
		if (out_commit(&f) < 0)
			return -1;
	}
	if (o->plot) {
		char path[4096];
		snprintf(path, sizeof path, "%s-cdf.png", o->plot);
		if (sv_plot_cdf(path, r, e) < 0)
			return -1;
	}
	return 0;
}

static void print_costs(const SvDeploy *d, FILE *f)
{
	const SvPool *p[3] = { d->prefill, d->main, d->draft };
	for (int i = 0; i < 3; i++)
		if (p[i] && p[i]->mode != SV_COST_FIXED)
			fprintf(f, "cost model  %s pool: %s, %d plans compiled in %.3g s (pipeline %s)\n", p[i]->role,
				p[i]->mode == SV_COST_GRID ? "grid" : "exact", p[i]->compiles, p[i]->compile_s, p[i]->passes);
}

/* --cost-check: sample batches of each pool priced by the grid and by their exact plans. */
static int cost_check(const SvDeploy *d, SvError *e)
{
	SvPool *ps[3] = { d->prefill, d->main, d->draft };
	printf("%-10s %-40s %12s %12s %8s\n", "pool", "batch", "grid ms", "exact ms", "error");
	for (int k = 0; k < 3; k++) {
		SvPool *p = ps[k];
		if (!p || p->mode == SV_COST_FIXED)
			continue;
		int decode = strcmp(p->role, "decode") == 0, mix = !decode && !p->batch_form && strcmp(p->role, "prefill");
		int64_t mb = d->max_batch, tb = d->token_budget;
		struct { int64_t nd, pd, cs, cp; } c[] = {
			{ mb / 8 + 3, 700, 0, 0 }, { mb / 2 - 5, 1900, 0, 0 }, { mb - 7, 333, 0, 0 },
			{ 0, 0, tb / 4 + 37, 0 }, { 0, 0, tb - 100, 0 }, { 0, 0, tb / 2 + 11, 1500 },
			{ mb / 4 + 1, 1200, tb / 2 - 30, 0 }, { mb / 2 + 3, 600, tb / 4 + 9, 2100 },
		};
		for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
			if ((decode && c[i].cs) || (!decode && !mix && (c[i].nd || c[i].cp)) || (c[i].nd && c[i].cs && !mix))
				continue;
			SvBatch b;
			memset(&b, 0, sizeof b);
			b.decodes = c[i].nd, b.decode_s = 1, b.decode_p = c[i].pd;
			if (c[i].cs)
				b.chunk[b.nchunks++] = (SvChunk){ c[i].cs, c[i].cp };
			SvCostMode m = p->mode;
			p->mode = SV_COST_GRID;
			double g = serve_iter_cost(p, &b, e);
			p->mode = SV_COST_EXACT;
			double x = g < 0 ? -1 : serve_iter_cost(p, &b, e);
			p->mode = m;
			if (g < 0 || x < 0)
				return -1;
			char desc[96];
			snprintf(desc, sizeof desc, "%lld decodes at %lld%s", (long long)b.decodes, (long long)b.decode_p, "");
			if (b.nchunks)
				snprintf(desc + (b.decodes ? strlen(desc) : 0), sizeof desc - (b.decodes ? strlen(desc) : 0), "%s%lld-token chunk after %lld",
					 b.decodes ? " + " : "", (long long)b.chunk[0].s, (long long)b.chunk[0].p);
			printf("%-10s %-40s %12.4g %12.4g %+7.2f%%\n", p->role, desc, g * 1e3, x * 1e3, 100 * (g - x) / x);
		}
	}
	return 0;
}

static int do_capacity(const ServeOpts *o, const SvDeploy *d, const SvGenSpec *g, const SvWorkload *w, const SvSlo *slo,
		       SvError *e)
{
	SvCapacity c;
	const SvWorkload *trace = o->workload ? w : NULL;
	SvGenSpec gen = *g;
	if (trace && gen.rate <= 0)    /* a CSV trace's own mean rate */
		gen.rate = w->n > 1 && w->r[w->n - 1].arrival > 0 ? (w->n - 1) / w->r[w->n - 1].arrival : 1;
	if (sv_capacity(d, &gen, trace, slo, o->rate_min, o->rate_max, (int)o->bisect, &c, e) < 0)
		return -1;
	int chips = sv_deploy_chips(d);
	printf("capacity    %.4g req/s under the SLO (%.4g per chip, %d chips); bisection over %d rates\n", c.rate,
	       chips ? c.rate / chips : 0, chips, c.n);
	for (int i = 0; i < c.n; i++)
		printf("  rate %-10.4g goodput %-10.4g %s\n", c.rates[i], c.goodput[i], c.ok[i] ? "met" : "missed");
	if (c.rate > 0)
		printf("  at capacity: TTFT p90 %.4g s, TPOT p90 %.4g s, attainment %.1f%%\n", c.at.ttft[1], c.at.tpot[1],
		       100 * c.at.attainment);
	if (o->plot) {
		char path[4096];
		snprintf(path, sizeof path, "%s-goodput.png", o->plot);
		if (sv_plot_goodput(path, c.rates, c.goodput, c.ok, c.n, e) < 0)
			return -1;
	}
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	ServeOpts o;
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USER;
	SvError e = { { 0 } };
	SvDeploy d;
	SvPool pools[3];
	memset(pools, 0, sizeof pools);
	SvWorkload w = { 0 };
	SvGenSpec g;
	SvSlo slo = { .n = 0 };
	SvRun r = { 0 };
	int rc = EXIT_USER;
	if ((o.capacity || o.search) && !o.slo) {
		drv_error("--capacity and --search need an SLO (--slo ttft_p90=0.5s,tpot_p90=50ms)");
		return EXIT_USER;
	}
	if ((o.slo && sv_slo_parse(o.slo, &slo, &e) < 0) || build_deploy(&o, &d, pools, &e) < 0 ||
	    make_workload(&o, &g, &w, &e) < 0 || open_pools(&o, &d, &w, &e) < 0)
		goto out;
	if (o.cost_check) {
		rc = cost_check(&d, &e) < 0 ? EXIT_USER : EXIT_OK;
		goto out;
	}
	if (o.search) {
		rc = sv_search_print(&d, pools, &g, o.workload ? &w : NULL, &slo, o.rate_min, o.rate_max, (int)o.bisect, stdout, &e) < 0
			     ? EXIT_USER : EXIT_OK;
		goto out;
	}
	if (o.capacity) {
		rc = do_capacity(&o, &d, &g, &w, &slo, &e) < 0 ? EXIT_USER : EXIT_OK;
		if (rc == EXIT_OK)
			print_costs(&d, stdout);
		goto out;
	}
	if (sv_simulate(&d, &w, &r, &e) < 0)
		goto out;
	SvMetrics m;
	sv_metrics(&r, slo.n ? &slo : NULL, &m);
	printf("workload    %s\n", w.source);
	sv_print_summary(stdout, &d, &r, &m, slo.n ? &slo : NULL);
	print_costs(&d, stdout);
	double cs = 0;
	for (int i = 0; i < 3; i++)
		cs += pools[i].compile_s;
	printf("simulation  %.3g s for %d requests (%lld iterations), plan compiles included: %.3g s\n", r.sim_wall_s, w.n,
	       (long long)r.iterations, cs);
	if (write_outputs(&o, &d, &w, &r, &m, slo.n ? &slo : NULL, &e) < 0)
		goto out;
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK && e.msg[0])
		drv_report(e.msg);
	sv_run_free(&r);
	sv_workload_free(&w);
	for (int i = 0; i < 3; i++)
		sv_pool_free(&pools[i]);
	return rc;
}
