/* serve/cost.c: what one serving iteration costs, read from aicc's own plans.
 *
 * Every price comes from a plan compiled through the library -- the model read with the pool's
 * binds, the kv-cache pass in its "mixed" phase for the batch's exact composition (decodes and
 * prefill chunks flattened into one token batch, passes/kv_cache.c), the pool's pass pipeline,
 * the target's lowering with the pool's machine (loaded once) and the runtime's timing
 * simulation (rt_simulate) -- never from a model of its own (design.md section 4).  Batch-form
 * pools (the vera-rubin target, whose disaggregate pass micro-batches the batch axis) compile
 * --phase decode / prefill plans instead.
 *
 * Two ways to use the plans (SvPool.mode):
 *   exact  one plan per distinct composition, memoised;
 *   grid   plans at grid points, compiled on first use and kept for the pool's lifetime:
 *            D(n, p)  n decodes of p past tokens, n on the token axis (1, 2, 3, 4, 6, 8, ... 64,
 *                     then every 64 to 1024, every 256 to 4096, then steps of 1/8), p on 1, 16,
 *                     32, 64, ... (powers of two)
 *            V(n, p)  n decodes verifying k drafts (k+1 tokens each), same axes
 *            P(s, p)  one prompt chunk of s tokens after p, s on the token axis, p on 0, 16, 32, ...
 *          A batch of one group is interpolated bilinearly from that group's table (exact at
 *          grid points; along a prompt's tokens above 64, rounded up to the next grid value,
 *          see bracket()).  A mixed batch of T tokens costs W(T) + the attention time of each
 *          group, where W(T) = total - attention of the plan P(T, 0) (interpolated in T) and a
 *          group's attention time is the Attention kernels' time (on the busiest stream) of its
 *          table, interpolated: token-wise work (projections, FFN, norms, collectives, the LM
 *          head) is paid once for all T tokens, as in one plan of that composition, and not once
 *          per group as a prefill step plus a decode step would.
 * testsuite/unit/test_serve.c compares both against each other; docs/serving.md gives the error.
 * A grid corner that does not compile (its batch does not fit) falls back to the exact plan.
 */
#include "serve/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontend/frontend.h"

/* ---- the plan cache: key string -> time (or the failure) ---- */

typedef struct CacheEnt {
	char *key;
	int ok;
	SvPlanTime t;
	char *err;
} CacheEnt;

struct SvCache {
	CacheEnt *e;
	int cap, n;
};

SvCache *sv_cache_new(void)
{
	SvCache *c = calloc(1, sizeof *c);
	if (!c)
		abort();
	c->cap = 256;
	c->e = calloc((size_t)c->cap, sizeof *c->e);
	if (!c->e)
		abort();
	return c;
}

void sv_cache_free(SvCache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->cap; i++)
		free(c->e[i].key), free(c->e[i].err);
	free(c->e);
	free(c);
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static CacheEnt *cache_slot(SvCache *c, const char *key)
{
	if (2 * (c->n + 1) > c->cap) {
		SvCache big = { calloc((size_t)c->cap * 2, sizeof *c->e), c->cap * 2, 0 };
		if (!big.e)
			abort();
		for (int i = 0; i < c->cap; i++)
			if (c->e[i].key) {
				uint64_t h = fnv(c->e[i].key);
				int j = (int)(h % (uint64_t)big.cap);
				while (big.e[j].key)
					j = (j + 1) % big.cap;
				big.e[j] = c->e[i];
				big.n++;
			}
		free(c->e);
		*c = big;
	}
	int j = (int)(fnv(key) % (uint64_t)c->cap);
	while (c->e[j].key && strcmp(c->e[j].key, key))
		j = (j + 1) % c->cap;
	return &c->e[j];
}

/* ---- compiling one plan ---- */

/* Parses "L=2,H=4" into FeBind entries (names strdup'd). */
static int parse_binds(const char *spec, FeBind *b, int max, SvError *e)
{
	int n = 0;
	char *s = strdup(spec), *save = NULL;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end = NULL;
		long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || eq == tok || !end || *end || v < 0 || n == max) {
			free(s);
			for (int i = 0; i < n; i++)
				free((char *)b[i].name);
			return sv_err(e, "aicc: error: --bind expects NAME=VALUE,..., got '%s'", spec);
		}
		*eq = 0;
		b[n++] = (FeBind){ strdup(tok), v, 0 };
	}
	free(s);
	return n;
}

Module *sv_load_model(SvPool *p, int64_t B, int64_t S, SvError *e)
{
	FeBind b[64];
	int nb = p->binds ? parse_binds(p->binds, b, 64, e) : 0;
	if (nb < 0)
		return NULL;
	size_t len = strlen(p->model);
	int onnx = len > 5 && strcmp(p->model + len - 5, ".onnx") == 0;
	Module *m = onnx ? fe_import_onnx(p->model) : fe_parse_aig_opts(p->model, b, nb);
	for (int i = 0; m && i < nb; i++)
		if (!b[i].used)
			ir_bind(m, b[i].name, b[i].value);
	for (int i = 0; i < nb; i++)
		free((char *)b[i].name);
	if (!m) {
		sv_err(e, "aicc: error: cannot read the model '%s'", p->model);
		return NULL;
	}
	ir_bind(m, "B", B);
	ir_bind(m, "S", S);
	if (ir_verify(m) > 0 || ir_infer_shapes(m) > 0) {
		ir_module_free(m);
		sv_err(e, "aicc: error: the model '%s' does not verify with B=%lld, S=%lld (a serving model's entry "
			  "inputs are [B, S] token ids and positions)", p->model, (long long)B, (long long)S);
		return NULL;
	}
	return m;
}

const char *sv_pipeline(const SvPool *p)
{
	static char buf[512];
	const Target *t = tgt_find(p->target);
	const char *pl = t && t->pipeline ? t->pipeline : PASS_DEFAULT_PIPELINE;
	const char *mem = strstr(pl, "plan-memory");
	/* vera-rubin: the disaggregate pass alone, as docs/targets-vera-rubin.md compiles it; its -O1
	 * pipeline's plan-memory checks the LPU pool against one LP30's SRAM and refuses llama3.1-70b */
	if (strstr(pl, "disaggregate"))
		return "kv-cache,disaggregate";
	/* targets that place chips themselves (lpu) or pools (disaggregate) get no partition pass */
	if (!mem || strstr(pl, "partition") || strstr(pl, "disaggregate") || strcmp(p->target, "lpu") == 0 ||
	    strcmp(p->target, "reference") == 0)
		snprintf(buf, sizeof buf, "kv-cache,%s", pl);
	else
		snprintf(buf, sizeof buf, "kv-cache,%.*spartition,%s", (int)(mem - pl), pl, mem);
	return buf;
}

/* The mixed phase's composition text for g[ng]. */
static void mix_text(const PassMixGroup *g, int ng, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < ng && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lldx%lld+%lld", i ? "," : "", (long long)g[i].n,
				      (long long)g[i].s, (long long)g[i].p);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Accelerator devices of plan pl (not hosts or CPUs). */
static int plan_chips(const Plan *pl)
{
	int n = 0;
	for (int i = 0; i < pl->ndevices; i++)
		n += strcmp(pl->devices[i].kind, "cpu") != 0 && strcmp(pl->devices[i].kind, "host") != 0;
	return n;
}

/* Whether graph g holds an Attention, itself or through its calls. */
static int has_attention(const Graph *g, int depth)
{
	if (depth > 8)
		return 0;
	ir_foreach_node(g, n)
		if (n->op == OP_Attention || (n->op == OP_Call && n->callee && has_attention(n->callee, depth + 1)))
			return 1;
	return 0;
}

/* The entry graph's one `repeat N` layer stack (a Call whose callee holds an Attention), or
 * NULL when there is none or more than one. */
static Node *layer_stack(Module *m)
{
	Node *found = NULL;
	Graph *g = ir_entry(m);
	if (!g)
		return NULL;
	ir_foreach_node(g, n)
		if (n->op == OP_Call && n->callee && n->repeat > 1 && has_attention(n->callee, 0)) {
			if (found)
				return NULL;
			found = n;
		}
	return found;
}

/* Compiles g[ng] with the model's layer stack cut to `layers` repetitions (0: as written). */
static int plan_compile_layers(SvPool *p, const PassMixGroup *g, int ng, int64_t layers, SvCompiled *out, SvError *e);

int sv_plan_compile(SvPool *p, const PassMixGroup *g, int ng, SvCompiled *out, SvError *e)
{
	return plan_compile_layers(p, g, ng, 0, out, e);
}

static int plan_compile_layers(SvPool *p, const PassMixGroup *g, int ng, int64_t layers, SvCompiled *out, SvError *e)
{
	memset(out, 0, sizeof *out);
	char mix[512];
	mix_text(g, ng, mix, sizeof mix);
	int64_t B = 1, S = pass_mix_tokens(g, ng), ctx = 0;
	const char *phase = "mixed";
	if (p->batch_form) {
		if (ng != 1 || (g[0].s > 1 && g[0].p > 0) || (g[0].s == 1 && g[0].p < 1) || (g[0].s > 1 && g[0].n > 1))
			return sv_err(e, "aicc: error: pool %s (%s) prices only whole decode steps and whole prompts, not '%s' "
				      "(use a disaggregated deployment without chunking)", p->role, p->target, mix);
		phase = g[0].s == 1 ? "decode" : "prefill";
		B = g[0].n, S = g[0].s, ctx = g[0].s == 1 ? g[0].p : 0;
	}
	double t0 = now_s();
	Module *m = sv_load_model(p, B, S, e);
	if (!m)
		return -1;
	Node *stack = layer_stack(m);
	if (stack && !p->layers)
		p->layers = stack->repeat;
	if (layers > 0) {
		if (!stack) {
			ir_module_free(m);
			return sv_err(e, "aicc: error: internal: no layer stack to shorten in '%s'", p->model);
		}
		stack->repeat = layers;
	}
	PassCtx c;
	pass_ctx_init(&c);
	c.phase = phase;
	c.mix = p->batch_form ? NULL : mix;
	c.context = ctx;
	c.kv_format = p->kv_fp8 ? DT_F8E4M3 : DT_INVALID;   /* kv=fp8: an FP8 cache in the plans */
	c.machine = p->mach.m;
	c.target = tgt_find(p->target);   /* passes price nodes through it (Target.node_time) */
	c.precision = &p->prec;
	c.tp = p->tp > 1 ? p->tp : 0;
	c.pp = p->pp > 1 ? p->pp : 0;
	int rc = 0;
	if (pass_run_pipeline(m, &c, p->passes) > 0)
		rc = sv_err(e, "aicc: error: pool %s: the plan of '%s' does not compile (see above)", p->role, mix);
	int vr_gpus = (int)pass_stat_get(&c, "disaggregate", "gpu pool"), vr_lpus = (int)pass_stat_get(&c, "disaggregate", "lpu pool");
	int vr_chips = vr_gpus + vr_lpus;
	pass_ctx_free(&c);
	RtError re = { 0 };
	if (rc == 0) {
		const Target *t = tgt_find(p->target);
		TgtInput in = { m, ir_entry(m), &p->mach, &p->prec, p->model, p->binds };
		out->plan = tgt_lower(t, &in, &re);
		if (!out->plan)
			rc = sv_err(e, "%.900s\naicc: note: pool %s, composition %s", re.msg, p->role, mix);
	}
	ir_module_free(m);
	if (rc == 0 && rt_simulate(out->plan, &out->timing, &re) < 0)
		rc = sv_err(e, "%s", re.msg);
	if (rc < 0) {
		sv_compiled_free(out);
		return -1;
	}
	out->chips = vr_chips > 0 ? vr_chips : plan_chips(out->plan);
	if (vr_chips > 0) {
		/* the pass sizes the pools per plan (an LPU-only layout at one batch, GPU-only at
		 * another): the replica holds the most of each class any of its plans takes, not the
		 * largest plan's sum (264 for 248 LPUs at one context and 16 GPUs at another) */
		p->vr_gpus = vr_gpus > p->vr_gpus ? vr_gpus : p->vr_gpus;
		p->vr_lpus = vr_lpus > p->vr_lpus ? vr_lpus : p->vr_lpus;
		if (p->vr_gpus + p->vr_lpus > p->chips)
			p->chips = p->vr_gpus + p->vr_lpus;
	} else if (out->chips > p->chips)
		p->chips = out->chips;
	p->compiles++;
	p->compile_s += now_s() - t0;
	return 0;
}

void sv_compiled_free(SvCompiled *c)
{
	if (c->plan) {
		rt_timing_free(&c->timing);
		plan_free(c->plan);
	}
	memset(c, 0, sizeof *c);
}

/* Seconds the busiest stream spends in Attention kernels. */
static double attention_s(const SvCompiled *c)
{
	int ns = c->plan->nstreams;
	double *per = calloc((size_t)ns + 1, sizeof *per), best = 0;
	if (!per)
		abort();
	for (int i = 0; i < c->timing.nspans; i++) {
		const RtSpan *s = &c->timing.spans[i];
		const PlanInstr *in = &c->plan->streams[s->stream].ins[s->index];
		if (in->kind == PI_KERNEL && in->op == RT_OP_Attention)
			per[s->stream] += s->end - s->start;
	}
	for (int i = 0; i < ns; i++)
		best = fmax(best, per[i]);
	free(per);
	return best;
}

static int time_layers(SvPool *p, const PassMixGroup *g, int ng, int64_t layers, SvPlanTime *out, SvError *e)
{
	SvCompiled c;
	if (plan_compile_layers(p, g, ng, layers, &c, e) < 0)
		return -1;
	out->total_s = c.timing.latency_s;
	out->attn_s = attention_s(&c);
	out->chips = c.chips;
	sv_compiled_free(&c);
	return 0;
}

int sv_plan_time(SvPool *p, const PassMixGroup *g, int ng, SvPlanTime *out, SvError *e)
{
	return time_layers(p, g, ng, 0, out, e);
}

/* Grid points of a model with one layer stack of L identical layers, on a target whose plans
 * run the layers one after another (not pipeline stages, not the vera-rubin pool sizing): the
 * plans of the composition with 2 and 3 layers, extrapolated, t(L) = t(2) + (L - 2)(t(3) - t(2))
 * -- two small compiles instead of one of L layers (first and last layers are peeled by the
 * placement passes, so the difference of 2 and 3 is one middle layer).  The exact mode and the
 * unit test compare it against full plans. */
static int grid_time(SvPool *p, const PassMixGroup *g, int ng, SvPlanTime *out, SvError *e)
{
	if (!p->extrapolate || p->layers < 4)
		return sv_plan_time(p, g, ng, out, e);
	SvPlanTime a, b;
	if (time_layers(p, g, ng, 2, &a, e) < 0 || time_layers(p, g, ng, 3, &b, e) < 0)
		return -1;
	double k = (double)(p->layers - 2);
	out->total_s = a.total_s + k * (b.total_s - a.total_s);
	out->attn_s = a.attn_s + k * (b.attn_s - a.attn_s);
	out->chips = b.chips;
	return 0;
}

/* The memoised time of composition g[ng] ("X:" key, a full plan) or of a grid point. */
static int cached_time(SvPool *p, const char *key, const PassMixGroup *g, int ng, SvPlanTime *t, SvError *e)
{
	CacheEnt *ce = cache_slot(p->cache, key);
	if (!ce->key) {
		ce->key = strdup(key);
		p->cache->n++;
		ce->ok = (key[0] == 'X' ? sv_plan_time(p, g, ng, &ce->t, e) : grid_time(p, g, ng, &ce->t, e)) == 0;
		if (!ce->ok)
			ce->err = strdup(e->msg);
	}
	if (!ce->ok)
		return sv_err(e, "%s", ce->err);
	*t = ce->t;
	return 0;
}

static int exact_time(SvPool *p, const PassMixGroup *g, int ng, SvPlanTime *t, SvError *e)
{
	char key[600] = "X:";
	mix_text(g, ng, key + 2, sizeof key - 2);
	return cached_time(p, key, g, ng, t, e);
}

/* ---- the grid ---- */

/* Grid value i of the token axis: 1, 2, 3, 4, 6, 8, 12, ..., 48, 64, then every 64 to 2048,
 * every 128 to 8192, every 512 beyond. */
static int64_t tok_at(int i)
{
	if (i == 0)
		return 1;
	if (i < 12)
		return i % 2 ? (int64_t)1 << ((i + 1) / 2) : (int64_t)3 << ((i - 2) / 2);
	if (i < 43)
		return 64 * (i - 10);             /* 128 .. 2048 */
	if (i < 91)
		return 2048 + 128 * (i - 42);     /* 2176 .. 8192 */
	return 8192 + 512 * (int64_t)(i - 90);
}
/* Grid value i of the context axis: first (0 or 1), then 16, 32, 64, ... */
static int64_t ctx_at(int i, int64_t first)
{
	return i == 0 ? first : (int64_t)8 << i;
}

/* The cell [lo, hi] around x on the token (ctx 0) or context axis; lo == hi when x is a grid
 * value.  With `step`, above 64 tokens x is rounded up to the next grid value (lo = hi): a
 * prompt's GEMMs and attention run whole row tiles (64, 128 or 256 rows, ending on multiples of
 * 64), so its time is a staircase whose steps the grid holds, and a chord across a step would
 * be up to a tile off.  Decode batches keep the chord: their attention grows linearly with the
 * sequences and their GEMMs stream weights, nearly flat in the rows. */
static void bracket(int64_t x, int64_t first, int ctx, int step, int64_t *lo, int64_t *hi)
{
	int n = ctx ? 50 : 1 << 20;
	for (int i = 0; i < n; i++) {
		int64_t a = ctx ? ctx_at(i, first) : tok_at(i), b = ctx ? ctx_at(i + 1, first) : tok_at(i + 1);
		if (x == a) {
			*lo = *hi = a;
			return;
		}
		if (x < b) {
			*lo = a, *hi = b;
			if (step && x > 64)
				*lo = b;
			return;
		}
	}
	*lo = *hi = x;
}

/* The plan time of grid point (kind, a, b): D (a decodes, b past), V (a verifying decodes of s
 * tokens each, b past), P (a chunk of a tokens after b). */
static int grid_point(SvPool *p, char kind, int64_t a, int64_t b, int64_t s, SvPlanTime *t, SvError *e)
{
	char key[96];
	snprintf(key, sizeof key, "%c:%lld:%lld:%lld", kind, (long long)a, (long long)b, (long long)s);
	PassMixGroup g = kind == 'P' ? (PassMixGroup){ 1, a, b } : (PassMixGroup){ a, kind == 'V' ? s : 1, b };
	return cached_time(p, key, &g, 1, t, e);
}

/* Bilinear interpolation (or extrapolation) of table `kind` over the cell [x0, x1] x [y0, y1]
 * at (x, y); -1 when a corner does not compile. */
static int cell(SvPool *p, char kind, int64_t x, int64_t y, int64_t s, int attn, const int64_t *xs, const int64_t *ys,
		double *out, SvError *e)
{
	SvPlanTime c[4];
	for (int i = 0; i < 4; i++)
		if (grid_point(p, kind, xs[i & 1], ys[i >> 1], s, &c[i], e) < 0)
			return -1;
	double fx = xs[1] > xs[0] ? (double)(x - xs[0]) / (double)(xs[1] - xs[0]) : 0;
	double fy = ys[1] > ys[0] ? (double)(y - ys[0]) / (double)(ys[1] - ys[0]) : 0;
	double v[4];
	for (int i = 0; i < 4; i++)
		v[i] = attn ? c[i].attn_s : c[i].total_s;
	*out = (1 - fy) * ((1 - fx) * v[0] + fx * v[1]) + fy * ((1 - fx) * v[2] + fx * v[3]);
	return 0;
}

/* Bilinear interpolation of table `kind` at (x, y): the total (attn = 0) or attention seconds.
 * A batch near what the pool can hold may have a corner that does not compile: then the cell
 * below (in x, in y, in both) is extrapolated, and only when that fails too the exact point is
 * compiled. */
static int interp2(SvPool *p, char kind, int64_t x, int64_t y, int64_t s, int attn, double *out, SvError *e)
{
	int64_t xs[2], ys[2], xp[2], yp[2], lo;
	int64_t yfirst = kind == 'P' ? 0 : 1;
	bracket(x, 1, 0, kind == 'P', &xs[0], &xs[1]);
	bracket(y, yfirst, 1, 0, &ys[0], &ys[1]);
	if (cell(p, kind, x, y, s, attn, xs, ys, out, e) == 0)
		return 0;
	/* the cells below: [prev(x0), x0] and [prev(y0), y0] */
	xp[1] = xs[0], yp[1] = ys[0];
	bracket(xs[0] - 1, 1, 0, 0, &xp[0], &lo);
	bracket(ys[0] - 1, yfirst, 1, 0, &yp[0], &lo);
	int xok = xs[0] > 1 && xp[0] < xp[1], yok = ys[0] > yfirst && yp[0] < yp[1];
	if ((xok && cell(p, kind, x, y, s, attn, xp, ys, out, e) == 0) ||
	    (yok && cell(p, kind, x, y, s, attn, xs, yp, out, e) == 0) ||
	    (xok && yok && cell(p, kind, x, y, s, attn, xp, yp, out, e) == 0))
		return 0;
	SvPlanTime t;
	if (grid_point(p, kind, x, y, s, &t, e) < 0)
		return -1;
	*out = attn ? t.attn_s : t.total_s;
	return 0;
}

/* W(T): the non-attention seconds of a T-token iteration, linear in T between grid plans. */
static int token_work(SvPool *p, int64_t T, double *out, SvError *e)
{
	int64_t t0, t1;
	bracket(T, 1, 0, 1, &t0, &t1);
	SvPlanTime a, b;
	if (grid_point(p, 'P', t0, 0, 0, &a, e) < 0 || grid_point(p, 'P', t1, 0, 0, &b, e) < 0)
		return -1;
	double f = t1 > t0 ? (double)(T - t0) / (double)(t1 - t0) : 0;
	*out = (1 - f) * (a.total_s - a.attn_s) + f * (b.total_s - b.attn_s);
	return 0;
}

/* The batch as kv-cache groups (decodes first); -1 when it has more than PASS_MIX_MAX. */
static int batch_groups(const SvBatch *b, PassMixGroup *g)
{
	int ng = 0;
	if (b->decodes > 0)
		g[ng++] = (PassMixGroup){ b->decodes, b->decode_s > 0 ? b->decode_s : 1, b->decode_p };
	for (int i = 0; i < b->nchunks; i++) {
		if (ng == PASS_MIX_MAX)
			return -1;
		g[ng++] = (PassMixGroup){ 1, b->chunk[i].s, b->chunk[i].p };
	}
	return ng;
}

static int grid_cost(SvPool *p, const SvBatch *b, double *out, SvError *e)
{
	int64_t ds = b->decode_s > 0 ? b->decode_s : 1;
	char dk = ds > 1 ? 'V' : 'D';
	if (b->decodes > 0 && b->nchunks == 0)
		return interp2(p, dk, b->decodes, b->decode_p, ds, 0, out, e);
	if (b->decodes == 0 && b->nchunks == 1)
		return interp2(p, 'P', b->chunk[0].s, b->chunk[0].p, 0, 0, out, e);
	double t, a;
	if (token_work(p, sv_batch_tokens(b), &t, e) < 0)
		return -1;
	if (b->decodes > 0) {
		if (interp2(p, dk, b->decodes, b->decode_p, ds, 1, &a, e) < 0)
			return -1;
		t += a;
	}
	for (int i = 0; i < b->nchunks; i++) {
		if (interp2(p, 'P', b->chunk[i].s, b->chunk[i].p, 0, 1, &a, e) < 0)
			return -1;
		t += a;
	}
	*out = t;
	return 0;
}

double serve_iter_cost(SvPool *p, const SvBatch *b, SvError *e)
{
	int64_t T = sv_batch_tokens(b);
	if (T <= 0)
		return 0;
	if (p->mode == SV_COST_FIXED)
		return p->fixed_base_s + p->fixed_token_s * (double)T;
	double t = 0;
	PassMixGroup g[PASS_MIX_MAX];
	int ng = batch_groups(b, g);
	if (p->mode == SV_COST_EXACT && ng > 0) {
		SvPlanTime pt;
		if (exact_time(p, g, ng, &pt, e) < 0)
			return -1;
		return pt.total_s;
	}
	if (grid_cost(p, b, &t, e) < 0)
		return -1;
	return t;
}
