/* serve/pool.c: pools of identical engines: the spec ("hopper:dgx-h100,tp=8"), the machine
 * loaded once, and the KV-cache capacity read from the plans' memory.
 *
 * KV capacity (docs/serving.md "KV cache"): vLLM profiles one forward pass at its largest batch
 * and gives the KV cache what is left of gpu_memory_utilization (0.9) of the device after the
 * weights and that pass's activations (vllm/worker/worker.py determine_num_available_blocks).
 * Here the profile is a plan of the pool's largest iteration: per memory space that holds KV
 * (the past_* inputs of a small decode plan), free = capacity * mem_util - constants - (peak
 * live bytes - constants - KV inputs and outputs), and the capacity in tokens is the smallest
 * free / (KV bytes per token in that space) over those spaces.  With kv=fp8 a token's KV takes
 * one byte per value instead of the plan's KV dtype.
 * Requires serve/cost.c (sv_plan_compile); provides sv_pool_*.
 */
#include "serve/serve.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "serve/internal.h"

int sv_err(SvError *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (e)
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int64_t sv_batch_tokens(const SvBatch *b)
{
	int64_t t = b->decodes * (b->decode_s > 0 ? b->decode_s : 1);
	for (int i = 0; i < b->nchunks; i++)
		t += b->chunk[i].s;
	return t;
}

void sv_pool_init(SvPool *p, const char *role, const char *model)
{
	memset(p, 0, sizeof *p);
	p->role = strdup(role);
	p->model = model ? strdup(model) : NULL;
	p->tp = p->pp = p->replicas = 1;
	p->cpu_s = SV_CPU_DEFAULT_S;
	p->mem_util = 0.9;
	p->mode = SV_COST_GRID;
}

void sv_pool_free(SvPool *p)
{
	if (!p)
		return;
	sv_cache_free(p->cache);
	if (p->mach_loaded)
		tgt_machine_free(&p->mach);
	free(p->role), free(p->model), free(p->binds), free(p->target), free(p->machine), free(p->precision);
	free(p->passes);
	for (int i = 0; i < p->nsets; i++)
		free(p->sets[i]);
	memset(p, 0, sizeof *p);
}

/* Machine aliases NAMExK: K chips of one kind in one box. */
static const struct { const char *alias, *machine; } aliases[] = {
	{ "h100", "h100-sxm" }, { "h100x8", "dgx-h100" }, { "h200", "h200-sxm" },
	{ "b200x8", "dgx-b200" }, { "lpx", "groq-lpx" }, { "vr", "vera-rubin" },
};

static const char *unalias(const char *m)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (strcmp(m, aliases[i].alias) == 0)
			return aliases[i].machine;
	return m;
}

/* "4ms", "0.5s", "250us", "0": seconds; -1 when malformed. */
double sv_parse_seconds(const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || !isfinite(v))
		return -1;
	if (!*end || strcmp(end, "s") == 0)
		return v;
	if (strcmp(end, "ms") == 0)
		return v * 1e-3;
	if (strcmp(end, "us") == 0)
		return v * 1e-6;
	return -1;
}

/* A positive integer option of a pool spec. */
static int spec_int(const char *key, const char *v, int *out, SvError *e)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (end == v || *end || n < 1 || n > 4096)
		return sv_err(e, "aicc: error: pool option %s expects an integer from 1 to 4096, got '%s'", key, v);
	*out = (int)n;
	return 0;
}

static int spec_option(SvPool *p, char *kv, SvError *e)
{
	char *eq = strchr(kv, '=');
	if (!eq)
		return sv_err(e, "aicc: error: pool option '%s' is not KEY=VALUE", kv);
	*eq = 0;
	const char *k = kv, *v = eq + 1;
	if (strcmp(k, "tp") == 0)
		return spec_int(k, v, &p->tp, e);
	if (strcmp(k, "pp") == 0)
		return spec_int(k, v, &p->pp, e);
	if (strcmp(k, "replicas") == 0)
		return spec_int(k, v, &p->replicas, e);
	if (strcmp(k, "precision") == 0) {
		free(p->precision);
		p->precision = strdup(v);
		return 0;
	}
	if (strcmp(k, "kv") == 0) {
		if (strcmp(v, "fp8") && strcmp(v, "bf16"))
			return sv_err(e, "aicc: error: pool option kv expects bf16 or fp8, got '%s'", v);
		p->kv_fp8 = strcmp(v, "fp8") == 0;
		return 0;
	}
	if (strcmp(k, "cpu") == 0) {
		if ((p->cpu_s = sv_parse_seconds(v)) < 0)
			return sv_err(e, "aicc: error: pool option cpu expects a time such as 4ms, got '%s'", v);
		return 0;
	}
	if (strcmp(k, "set") == 0) {
		if (p->nsets == 16)
			return sv_err(e, "aicc: error: too many set= options in one pool");
		p->sets[p->nsets++] = strdup(v);
		return 0;
	}
	return sv_err(e, "aicc: error: unknown pool option '%s' (expected tp, pp, precision, replicas, kv, cpu or set)", k);
}

int sv_pool_parse(SvPool *p, const char *role, const char *model, const char *spec, SvError *e)
{
	sv_pool_init(p, role, model);
	char *s = strdup(spec), *colon = strchr(s, ':');
	if (!colon || colon == s || !colon[1]) {
		free(s);
		return sv_err(e, "aicc: error: --%s expects TARGET:MACHINE[,tp=N,...], got '%s'", role, spec);
	}
	*colon = 0;
	char *save = NULL, *mach = strtok_r(colon + 1, ",", &save);
	p->target = strdup(s);
	p->machine = strdup(unalias(mach ? mach : ""));
	int rc = 0;
	for (char *tok = strtok_r(NULL, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save))
		rc = spec_option(p, tok, e);
	free(s);
	if (rc == 0 && !tgt_find(p->target)) {
		char sug[512];
		tgt_suggest(p->target, sug, sizeof sug);
		rc = sv_err(e, "aicc: error: unknown target '%s' in --%s%s", p->target, role, sug);
	}
	return rc;
}

const char *sv_pool_describe(const SvPool *p, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "%s:%s", p->target, p->machine);
	if (p->tp > 1 && k < n)
		k += (size_t)snprintf(buf + k, n - k, ",tp=%d", p->tp);
	if (p->pp > 1 && k < n)
		k += (size_t)snprintf(buf + k, n - k, ",pp=%d", p->pp);
	if (p->replicas > 1 && k < n)
		k += (size_t)snprintf(buf + k, n - k, ",replicas=%d", p->replicas);
	if (p->kv_fp8 && k < n)
		snprintf(buf + k, n - k, ",kv=fp8");
	return buf;
}

/* The rows of the model's RoPE position tables (cos input of a RotaryEmbedding), 0 if none. */
static int64_t rope_positions(Module *m)
{
	for (Graph *g = m->graphs; g; g = g->next)
		ir_foreach_node(g, n)
			if (n->op == OP_RotaryEmbedding && n->nin > 1 && n->in[1] && n->in[1]->type.rank >= 1 &&
			    dim_isconst(n->in[1]->type.dims[0]))
				return n->in[1]->type.dims[0].k;
	return 0;
}

/* Reads the model once to find its context (and report parse errors up front). */
static int model_context(SvPool *p, SvError *e)
{
	Module *m = sv_load_model(p, 1, 1, e);
	if (!m)
		return -1;
	p->max_context = rope_positions(m);
	ir_module_free(m);
	return 0;
}

/* Per-space sums of a plan's buffers: constants, past_* inputs and present_* outputs. */
typedef struct SpaceUse {
	double consts, past, present;
	DType kv_dt;
} SpaceUse;

static void space_use(const Plan *pl, SpaceUse *u)
{
	for (int i = 0; i < pl->nspaces; i++)
		u[i] = (SpaceUse){ 0, 0, 0, DT_INVALID };
	for (int i = 0; i < pl->nconsts; i++)
		u[pl->buffers[pl->consts[i].buffer].space].consts += (double)pl->buffers[pl->consts[i].buffer].size;
	for (int i = 0; i < pl->ninputs; i++)
		if (strncmp(pl->inputs[i].name, "past_", 5) == 0)
			u[pl->buffers[pl->inputs[i].buffer].space].past += (double)pl->buffers[pl->inputs[i].buffer].size;
	for (int i = 0; i < pl->noutputs; i++) {
		const PlanBuffer *b = &pl->buffers[pl->outputs[i].buffer];
		if (strncmp(pl->outputs[i].name, "present_", 8) == 0) {
			u[b->space].present += (double)b->size;
			u[b->space].kv_dt = b->dtype;
		}
	}
}

/* The KV capacity from the profile plan of composition g (its largest iteration): per space
 * holding present_* outputs, KV bytes per token = those bytes / the tokens they hold. */
static int size_kv(SvPool *p, SvCompiled *prof, const PassMixGroup *g, SvError *e)
{
	const Plan *pl = prof->plan;
	SpaceUse *u = calloc((size_t)pl->nspaces + 1, sizeof *u);
	if (!u)
		abort();
	space_use(pl, u);
	double held = (double)(g->n * (g->s + g->p));
	double best = -1, bytes = 0, all = 0;
	const char *bound = NULL;
	p->weight_bytes = 0;
	for (int j = 0; j < pl->nspaces; j++) {
		p->weight_bytes += u[j].consts;
		if (u[j].present <= 0)
			continue;
		double per = u[j].present / held;
		if (p->kv_fp8)
			per /= (double)rt_dtype_bytes(u[j].kv_dt, 1);
		all += per;
		double act = (double)prof->timing.peak_bytes[j] - u[j].consts - u[j].past - u[j].present;
		double free_b = (double)pl->spaces[j].capacity * p->mem_util - u[j].consts - (act > 0 ? act : 0);
		double tok = free_b / per;
		if (best < 0 || tok < best)
			best = tok, bytes = per, bound = pl->spaces[j].name;
	}
	free(u);
	if (best < 0)
		return sv_err(e, "aicc: error: pool %s: its plans have no KV-cache outputs (is %s an LLM with Attention?)",
			      p->role, p->model);
	if (best < 1)
		return sv_err(e, "aicc: error: pool %s: no room for a KV cache on %s: the weights and activations "
			      "of a %lld-token iteration leave %.3g bytes of %.0f%% of its memory",
			      p->role, bound, (long long)p->max_tokens, best * bytes, p->mem_util * 100);
	p->kv_tokens = (int64_t)floor(best);
	p->kv_token_bytes = bytes;
	p->kv_token_bytes_all = all;
	return 0;
}

/* A statically scheduled all-SRAM target (the lpu backend) places every plan anew, so the
 * memory after weights is not one number: the capacity is the most KV a plan of the profile's
 * batch still places, found by bisection over its context (each step a compile). */
static int size_kv_by_compiling(SvPool *p, const PassMixGroup *prof, SvError *e)
{
	int64_t lo = prof->p, hi = p->max_context > 0 ? p->max_context : 1 << 20;
	SvPlanTime t;
	SvError ign;
	PassMixGroup g = *prof;
	g.s = 1;
	g.n = prof->s > 1 ? 1 : prof->n;
	g.p = hi;
	if (sv_plan_time(p, &g, 1, &t, &ign) == 0)
		lo = hi;
	while (hi - lo > (lo > 64 ? lo / 32 : 2)) {
		g.p = lo + (hi - lo) / 2;
		if (sv_plan_time(p, &g, 1, &t, &ign) == 0)
			lo = g.p;
		else
			hi = g.p;
	}
	p->kv_tokens = g.n * (lo + 1);
	(void)e;
	return 0;
}

/* The machine's host link to the pool's accelerators (PCIe, NVLink-C2C): swap bandwidth. */
static void host_link(SvPool *p)
{
	const Machine *m = p->mach.m;
	for (int i = 0; m && m->host && i < m->ndevs; i++) {
		const Link *l = m->devs[i].is_host ? NULL : machine_link(m, m->host, &m->devs[i]);
		if (l && num_has(&l->bandwidth)) {
			p->host_bw = link_oneway_bw(l);
			return;
		}
	}
}

int sv_pool_open(SvPool *p, int64_t max_tokens, SvError *e)
{
	RtError re = { 0 };
	if (!p->precision && strcmp(p->target, "vera-rubin") == 0)
		p->precision = strdup("bf16+graph");     /* docs/targets-vera-rubin.md: CUDA-graph launches */
	p->batch_form = strcmp(p->target, "vera-rubin") == 0;
	/* layer extrapolation where plans run their layers in sequence on fixed devices */
	p->extrapolate = !p->batch_form && p->pp <= 1 && strcmp(p->target, "lpu") != 0 && !p->no_extrapolate;
	p->max_tokens = max_tokens;
	if (p->mode == SV_COST_FIXED) {   /* test double: no plans, capacity from the spec */
		if (!p->kv_tokens)
			p->kv_tokens = 1 << 30;
		p->chips = p->tp * p->pp;
		return 0;
	}
	const Target *t = tgt_find(p->target);
	if (!t) {
		char sug[512];
		tgt_suggest(p->target, sug, sizeof sug);
		return sv_err(e, "aicc: error: unknown target '%s'%s", p->target, sug);
	}
	tgt_register_costs();    /* the timing engine prices instructions through the targets' hooks */
	if (!p->machine || !*p->machine) {
		free(p->machine);
		p->machine = strdup(t->default_machine);
	}
	if (tgt_machine_load(p->machine, (const char *const *)p->sets, p->nsets, &p->mach, &re) < 0)
		return sv_err(e, "%s", re.msg);
	p->mach_loaded = 1;
	if (prec_parse(p->precision, t, p->mach.m, &p->prec, &re) < 0)
		return sv_err(e, "%s", re.msg);
	p->passes = strdup(sv_pipeline(p));
	p->cache = sv_cache_new();
	if (model_context(p, e) < 0)
		return -1;
	/* a prompt past the model's positions is the workload's error (sv_workload_check, after the
	 * pools open): the profile stops at the last position, which the kv-cache pass accepts */
	if (strcmp(p->role, "decode") && p->max_context > 0 && max_tokens > p->max_context)
		p->max_tokens = max_tokens = p->max_context;
	/* the profile: the pool's largest iteration, in the form its scheduler runs */
	PassMixGroup prof = strcmp(p->role, "decode") == 0 ? (PassMixGroup){ max_tokens, 1, 16 }
							   : (PassMixGroup){ 1, max_tokens, 0 };
	SvCompiled a;
	if (sv_plan_compile(p, &prof, 1, &a, e) < 0) {
		char why[sizeof e->msg];
		memcpy(why, e->msg, sizeof why);
		return sv_err(e, "%.900s\naicc: note: pool %s: while profiling memory at its largest iteration (%lld tokens); "
			      "lower --max-batch / --token-budget or give the pool more devices", why, p->role,
			      (long long)max_tokens);
	}
	int rc = size_kv(p, &a, &prof, e);
	sv_compiled_free(&a);
	const Device *acc = machine_first(p->mach.m, DEV_LPU);
	if (rc == 0 && acc && acc->static_schedule && !machine_first(p->mach.m, DEV_GPU))
		rc = size_kv_by_compiling(p, &prof, e);
	host_link(p);
	return rc;
}
