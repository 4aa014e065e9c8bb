/* testsuite/unit/test_autodiff.c: the training step of passes/autodiff.c against finite
 * differences, per operator and on small-dimension Llama, Mixtral and GPT-2 (examples/), and a tiny
 * model whose loss falls over a few hundred steps.
 *
 * Gradient checks run in f64 (every `f32`/`bf16` of the graph text read as `f64`, so the
 * kernels compute and store in f64): the autodiff gradient g_i of the loss L is compared with
 * the central difference (L(p + h e_i) - L(p - h e_i)) / 2h.  Its error is the truncation
 * h^2 |L'''| / 6 plus the rounding of the two losses, 2 K u |L| / (2h) with u = 2^-53 and K
 * the longest reduction feeding L (each of its K additions rounds once, Higham 2002 §3.1).  With
 * h = 2^-14, |L| <= 10, K <= 4096 and |L'''| <= 10^2 on these models (weights of std <= 0.5),
 * that is 6e-8 + 3.7e-8 < 1e-7 absolute; the tolerance below is 1e-7 + 1e-6 |g| (the relative
 * part for the gradient's own f64 evaluation order).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "passes/pass.h"
#include "runtime/kernels.h"
#include "runtime/random.h"

/* ---- an IR evaluator with explicit tensors per value (parameters and inputs set first) ---- */
typedef struct Ev {
	Graph *g;
	RtTensor **val;      /* by value id */
	int n;
} Ev;

static RtTensor *tensor(DType dt, Type t)
{
	RtTensor *x = calloc(1, sizeof *x);
	int64_t d[RT_MAX_RANK];
	for (int i = 0; i < t.rank; i++)
		d[i] = t.dims[i].k;
	assert_int_equal(rt_tensor_alloc(x, dt, t.rank, d, NULL), 0);
	return x;
}

/* A parameter's data: literal, fill, seeded normal/uniform; unbound ones normal(0, 0.3). */
static RtTensor *param_data(Value *p, uint64_t salt)
{
	RtTensor *t = tensor(p->type.dt, p->type);
	const RtTensor *k = ir_const_data(p);
	ParamInit *pi = p->init;
	float *tmp = malloc(sizeof(float) * (size_t)(t->n + 1));
	if (pi && pi->kind == INIT_UNIFORM)
		rt_fill_uniform(tmp, t->n, (float)pi->a, (float)pi->b, pi->seed, 0);
	else if (pi && pi->kind == INIT_NORMAL)
		rt_fill_normal(tmp, t->n, (float)pi->a, (float)pi->b, pi->seed, 0);
	else
		rt_fill_normal(tmp, t->n, 0, 0.3f, 1000 + salt, 0);
	for (int64_t i = 0; i < t->n; i++)
		rt_set(t, i, k ? rt_get(k, i) : pi && pi->kind == INIT_FILL ? pi->a : tmp[i]);
	free(tmp);
	return t;
}

static void ev_init(Ev *e, Graph *g)
{
	e->g = g;
	e->n = g->nvalues;
	e->val = calloc((size_t)e->n, sizeof *e->val);
	for (int i = 0; i < g->nparams; i++)
		e->val[g->params[i]->id] = param_data(g->params[i], (uint64_t)i);
}

static void ev_free_nodes(Ev *e)
{
	ir_foreach_node(e->g, n)
		for (int i = 0; i < n->nout; i++)
			if (e->val[n->out[i]->id]) {
				rt_tensor_free(e->val[n->out[i]->id]);
				free(e->val[n->out[i]->id]);
				e->val[n->out[i]->id] = NULL;
			}
}

static void ev_free(Ev *e)
{
	ev_free_nodes(e);
	for (int i = 0; i < e->n; i++)
		if (e->val[i]) {
			rt_tensor_free(e->val[i]);
			free(e->val[i]);
		}
	free(e->val);
}

static void ev_run(Ev *e)
{
	RtExecOpts opts = { 0 };
	ev_free_nodes(e);
	ir_foreach_node(e->g, n) {
		RtTensor *in[16] = { 0 }, out[4];
		memset(out, 0, sizeof out);
		for (int i = 0; i < n->nin; i++)
			in[i] = n->in[i] ? e->val[n->in[i]->id] : NULL;
		for (int i = 0; i < n->nout; i++)
			out[i].dtype = n->out[i]->type.dt;
		RtKernelArgs a = { in, n->nin, out, n->nout, &n->attrs, &opts };
		RtError err = { 0 };
		if (rt_kernel((RtOp)n->op)(&a, &err) < 0)
			fail_msg("node '%s' (%s): %s", n->out[0]->name, ir_ops[n->op].name, err.msg);
		for (int i = 0; i < n->nout; i++) {
			e->val[n->out[i]->id] = malloc(sizeof(RtTensor));
			*e->val[n->out[i]->id] = out[i];
		}
	}
}

static Value *find_input(Graph *g, const char *name)
{
	for (int i = 0; i < g->nin; i++)
		if (strcmp(g->inputs[i]->name, name) == 0)
			return g->inputs[i];
	return NULL;
}

/* Integer input `name` filled with (i * mul + add) mod k, or 0..S-1 along the last axis (pos). */
static void set_ints(Ev *e, const char *name, int64_t mul, int64_t add, int64_t k, int positions)
{
	Value *v = find_input(e->g, name);
	if (!v)
		return;
	RtTensor *t = tensor(v->type.dt, v->type);
	int64_t last = v->type.dims[v->type.rank - 1].k;
	for (int64_t i = 0; i < t->n; i++)
		rt_i64(t)[i] = positions ? i % last : (i * mul + add) % k;
	e->val[v->id] = t;
}

/* text with each `dim NAME = ...` line of a bound NAME replaced by `dim NAME = VALUE` (what
 * --bind does to a model's dim constants). */
static char *bind_dims(const char *text, const char *binds[], int nb)
{
	size_t cap = strlen(text) + 64 * (size_t)nb + 1, k = 0;
	char *s = malloc(cap);
	for (const char *l = text; *l; ) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
		int done = 0;
		for (int i = 0; i < nb && !done && strncmp(l, "dim ", 4) == 0; i++) {
			size_t nl = strcspn(binds[i], "=");
			if (strncmp(l + 4, binds[i], nl) == 0 && l[4 + nl] == ' ') {
				k += (size_t)snprintf(s + k, cap - k, "dim %.*s = %s\n", (int)nl, binds[i], binds[i] + nl + 1);
				done = 1;
			}
		}
		if (!done) {
			memcpy(s + k, l, len);
			k += len;
		}
		l += len;
	}
	s[k] = 0;
	return s;
}

static int accum = 1;    /* --grad-accum of train_graph */
static const int64_t *pack;   /* --pack of train_graph: the packed sequences' offsets (NULL: none) */
static int npack;

/* The train graph of `text` (dtypes rewritten to f64 when f64), with --bind `binds`. */
static Module *train_graph(const char *text, const char *binds[], int nb, int f64, double lr)
{
	char *s = bind_dims(text, binds, nb);
	for (char *p = s; f64 && (p = strstr(p, "bf16[")); )
		memcpy(p, " f64[", 5);
	for (char *p = s; f64 && (p = strstr(p, "f32[")); )
		memcpy(p, "f64[", 4);
	Module *m = fe_parse_aig_text("t.aig", s, strlen(s));
	assert_non_null(m);
	for (int i = 0; i < nb; i++) {
		char name[32];
		long long v;
		assert_int_equal(sscanf(binds[i], "%31[^=]=%lld", name, &v), 2);
		if (ir_sym_find(m, name) >= 0)
			assert_int_equal(ir_bind(m, name, v), 0);
	}
	assert_int_equal(ir_verify(m), 0);
	assert_int_equal(ir_infer_shapes(m), 0);
	PassCtx c;
	pass_ctx_init(&c);
	c.verify_each = 1;
	c.out = fopen("/dev/null", "w");
	c.phase = "train";
	c.lr = lr;
	c.grad_accum = accum;
	if (pack) {
		c.seq_offsets = malloc((size_t)npack * sizeof *pack);
		memcpy(c.seq_offsets, pack, (size_t)npack * sizeof *pack);
		c.nseq_offsets = npack;
	}
	assert_int_equal(pass_run_pipeline(m, &c, "autodiff"), 0);
	fclose(c.out);
	pass_ctx_free(&c);
	free(s);
	return m;
}

/* The AdamW node updating parameter p (its input 1 is p's gradient). */
static Node *adamw_of(Graph *g, Value *p)
{
	ir_foreach_node(g, n)
		if (n->op == OP_AdamW && n->in[0] == p)
			return n;
	return NULL;
}

static double loss_of(Ev *e)
{
	ev_run(e);
	return rt_get(e->val[e->g->outputs[0]->id], 0);
}

/* Checks `nel` elements of every trained parameter (or of those named in only) by central
 * differences; returns the number of elements checked. */
static int grad_check(Ev *e, int nel, const char *only)
{
	const double h = 1.0 / 16384;
	int checked = 0;
	Graph *g = e->g;
	for (int i = 0; i < g->nparams; i++) {
		Value *p = g->params[i];
		Node *a = adamw_of(g, p);
		if (!a || (only && !strstr(only, p->name)))
			continue;
		ev_run(e);    /* the gradients at the unperturbed point */
		RtTensor *w = e->val[p->id];
		RtTensor gr = *e->val[a->in[1]->id];
		double *gv = malloc(sizeof(double) * (size_t)gr.n);
		for (int64_t k = 0; k < gr.n; k++)
			gv[k] = rt_get(&gr, k);
		for (int j = 0; j < nel; j++) {
			int64_t k = (int64_t)((j * 7919 + 13) % w->n);
			double x0 = rt_get(w, k);
			rt_set(w, k, x0 + h);
			double lp = loss_of(e);
			rt_set(w, k, x0 - h);
			double lm = loss_of(e);
			rt_set(w, k, x0);
			double fd = (lp - lm) / (2 * h), tol = 1e-7 + 1e-6 * fabs(gv[k]);
			if (!(fabs(fd - gv[k]) <= tol))
				fail_msg("%s[%lld]: autodiff %.12g, finite difference %.12g (tolerance %.3g)", p->name,
					 (long long)k, gv[k], fd, tol);
			checked++;
		}
		free(gv);
	}
	return checked;
}

static void check_text(const char *text, const char *binds[], int nb, int min_checked)
{
	Module *m = train_graph(text, binds, nb, 1, 0);
	Ev e;
	ev_init(&e, ir_entry(m));
	set_ints(&e, "ids", 5, 3, ir_entry(m)->params[0]->type.dims[0].k, 0);
	set_ints(&e, "pos", 0, 0, 1, 1);
	assert_non_null(find_input(ir_entry(m), "labels"));
	set_ints(&e, "labels", 3, 1, 7, 0);      /* the examples are bound with V = 11 > 7 */
	int n = grad_check(&e, 3, NULL);
	assert_true(n >= min_checked);
	ev_free(&e);
	ir_module_free(m);
}

/* ---- per operator: each graph puts one operator between parameters and logits [2, 3, 7] ---- */
static const char *OPS[] = {
	/* MatMul (broadcast batch), Add (bias broadcast), Mul, Sub, Neg */
	"graph main(x: f32[2, 3, 4]) -> (y: f32[2, 3, 7]) {\n  param w: f32[4, 7] = normal(std=0.5, seed=1)\n"
	"  param b: f32[7] = normal(std=0.5, seed=2)\n  param s: f32[1, 3, 1] = normal(std=0.5, seed=3)\n"
	"  h = MatMul(x, w)\n  h1 = Add(h, b)\n  h2 = Mul(h1, s)\n  h3 = Sub(h2, b)\n  y = Neg(h3)\n}\n",
	/* LayerNormalization with bias, Gelu (exact and tanh) */
	"graph main(x: f32[2, 3, 7]) -> (y: f32[2, 3, 7]) {\n  param g: f32[7] = normal(mean=1, std=0.3, seed=4)\n"
	"  param b: f32[7] = normal(std=0.3, seed=5)\n  param w: f32[7, 7] = normal(std=0.5, seed=6)\n"
	"  h = MatMul(x, w)\n  a = Gelu(h)\n  a2 = Gelu(a) {approximate=\"tanh\"}\n"
	"  y = LayerNormalization(a2, g, b) {epsilon=1e-5}\n}\n",
	/* RMSNormalization, SwiGLU, Sigmoid, Tanh, Silu */
	"graph main(x: f32[2, 3, 7]) -> (y: f32[2, 3, 7]) {\n  param g: f32[7] = normal(mean=1, std=0.3, seed=7)\n"
	"  param wg: f32[7, 7] = normal(std=0.5, seed=8)\n  param wu: f32[7, 7] = normal(std=0.5, seed=9)\n"
	"  n = RMSNormalization(x, g) {epsilon=1e-5}\n  gt = MatMul(n, wg)\n  u = MatMul(n, wu)\n"
	"  s = SwiGLU(gt, u)\n  t = Sigmoid(s)\n  t2 = Tanh(u)\n  t3 = Silu(t2)\n  y = Add(t, t3)\n}\n",
	/* Embedding (repeated ids: the scatter adds), Split, Concat, Transpose, Reshape */
	"graph main(ids: i64[2, 3]) -> (y: f32[2, 3, 7]) {\n  param emb: f32[5, 6] = normal(std=0.5, seed=10)\n"
	"  param w: f32[3, 7] = normal(std=0.5, seed=11)\n  x = Embedding(emb, ids)\n"
	"  a, b = Split(x, [3, 3]) {axis=-1}\n  t = Transpose(b) {perm=[0, 2, 1]}\n  r = Reshape(t, [2, 3, 3])\n"
	"  c = Concat(a, r) {axis=-1}\n  c2, c3 = Split(c, [3, 3]) {axis=-1}\n  y = MatMul(c2, w)\n}\n",
	/* Attention: causal, grouped-query (4 query heads over 2 KV heads), RoPE on Q and K */
	"graph main(x: f32[2, 3, 8], cos: f32[3, 1], sin: f32[3, 1], pos: i64[2, 3]) -> (y: f32[2, 3, 7]) {\n"
	"  param wq: f32[8, 8] = normal(std=0.5, seed=12)\n  param wk: f32[8, 4] = normal(std=0.5, seed=13)\n"
	"  param wv: f32[8, 4] = normal(std=0.5, seed=14)\n  param wo: f32[8, 7] = normal(std=0.5, seed=15)\n"
	"  q = MatMul(x, wq)\n  k = MatMul(x, wk)\n  v = MatMul(x, wv)\n"
	"  qr = RotaryEmbedding(q, cos, sin, pos) {num_heads=4}\n  kr = RotaryEmbedding(k, cos, sin, pos) {num_heads=2}\n"
	"  a = Attention(qr, kr, v) {q_num_heads=4, kv_num_heads=2, is_causal=1}\n  y = MatMul(a, wo)\n}\n",
	/* the MoE block: TopKRouter (softmax, top-2 of 4, renormalised), MoEDispatch, GroupedMatMul
	 * (gate, up, down: the rows' and the stacked weights' gradients), SwiGLU, MoECombine, then
	 * a sigmoid router without renormalisation (scale 2) weighting a second combine */
	"graph main(x: f32[2, 3, 4]) -> (y: f32[2, 3, 7]) {\n  param wr: f32[4, 4] = normal(std=0.5, seed=16)\n"
	"  param wg: f32[4, 4, 5] = normal(std=0.5, seed=17)\n  param wu: f32[4, 4, 5] = normal(std=0.5, seed=18)\n"
	"  param wd: f32[4, 5, 7] = normal(std=0.5, seed=19)\n  param wr2: f32[4, 4] = normal(std=0.5, seed=20)\n"
	"  param wd2: f32[4, 4, 7] = normal(std=0.5, seed=21)\n"
	"  t = Reshape(x, [6, 4])\n  lg = MatMul(t, wr)\n  rw, re = TopKRouter(lg) {k=2, scoring=\"softmax\", normalize=1}\n"
	"  xs, offs = MoEDispatch(t, re) {num_experts=4}\n  g = GroupedMatMul(xs, offs, wg)\n"
	"  u = GroupedMatMul(xs, offs, wu)\n  act = SwiGLU(g, u)\n  ys = GroupedMatMul(act, offs, wd)\n"
	"  m = MoECombine(ys, rw, re)\n  lg2 = MatMul(t, wr2)\n"
	"  rw2, re2 = TopKRouter(lg2) {k=2, scoring=\"sigmoid\", normalize=0, scale=2.0}\n"
	"  xs2, offs2 = MoEDispatch(t, re2) {num_experts=4}\n  ys2 = GroupedMatMul(xs2, offs2, wd2)\n"
	"  m2 = MoECombine(ys2, rw2, re2)\n  s = Add(m, m2)\n  y = Reshape(s, [2, 3, 7])\n}\n",
	/* the identities and views (Identity, Dropout, Unsqueeze, Squeeze, Flatten, Cast) and a
	 * partitioned step's Transfer and AllReduce (both partial sums get dY) */
	"graph main(x: f32[2, 3, 4]) -> (y: f32[2, 3, 7]) {\n  param w: f32[4, 7] = normal(std=0.5, seed=22)\n"
	"  param w2: f32[4, 7] = normal(std=0.5, seed=23)\n  h = MatMul(x, w)\n  h1 = Identity(h)\n  h2 = Dropout(h1)\n"
	"  h3 = Unsqueeze(h2, [0])\n  h4 = Squeeze(h3, [0])\n  h5 = Flatten(h4) {axis=2}\n  h6 = Cast(h5) {to=\"f64\"}\n"
	"  t = Transfer(h6) {device=\"gpu1\"}\n  p = MatMul(x, w2)\n  p2 = Reshape(p, [6, 7])\n"
	"  ar = AllReduce(t, p2) {devices=\"gpu1,gpu0\"}\n  y = Reshape(ar, [2, 3, 7])\n}\n",
};

static void fill_floats(Ev *e, uint64_t seed)
{
	for (int i = 0; i < e->g->nin; i++) {
		Value *v = e->g->inputs[i];
		if (!rt_dtype_isfloat(v->type.dt))
			continue;
		RtTensor *t = tensor(v->type.dt, v->type);
		float *tmp = malloc(sizeof(float) * (size_t)(t->n + 1));
		rt_fill_normal(tmp, t->n, 0, 1, seed, (uint64_t)i);
		for (int64_t k = 0; k < t->n; k++)
			rt_set(t, k, tmp[k]);
		free(tmp);
		e->val[v->id] = t;
	}
}

static void test_operators(void **st)
{
	(void)st;
	for (size_t k = 0; k < sizeof OPS / sizeof OPS[0]; k++) {
		Module *m = train_graph(OPS[k], NULL, 0, 1, 0);
		Ev e;
		ev_init(&e, ir_entry(m));
		fill_floats(&e, 40 + k);
		set_ints(&e, "ids", 3, 1, 5, 0);   /* ids 1, 4, 2, 0, 3, 1: id 1 twice */
		set_ints(&e, "pos", 0, 0, 1, 1);
		set_ints(&e, "labels", 5, 2, 7, 0);
		assert_true(grad_check(&e, 4, NULL) >= 8);
		ev_free(&e);
		ir_module_free(m);
	}
}

/* ---- the examples at small dims ---- */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

static void test_gpt2(void **st)
{
	(void)st;
	char *s = slurp("examples/gpt2-small.aig");
	const char *binds[] = { "B=1", "S=4", "L=2", "H=2", "HD=4", "F=16", "V=11", "P=4" };
	check_text(s, binds, 8, 12);
	free(s);
}

/* Mixtral (examples/mixtral-8x7b.aig): attention, then the MoE FFN of 4 experts, top-2 */
static void test_mixtral(void **st)
{
	(void)st;
	char *s = slurp("examples/mixtral-8x7b.aig");
	const char *binds[] = { "B=1", "S=4", "L=2", "H=4", "KV=2", "HD=4", "E=4", "K=2", "F=6", "V=11", "CTX=4" };
	check_text(s, binds, 11, 12);
	free(s);
}

static void test_llama(void **st)
{
	(void)st;
	char *s = slurp("examples/llama3.1-8b.aig");
	const char *binds[] = { "B=1", "S=4", "L=2", "H=4", "KV=2", "HD=4", "D=16", "F=24", "V=11", "CTX=4" };
	check_text(s, binds, 10, 12);
	free(s);
}

/* Llama with two packed sequences of 2 and 3 tokens per row (--pack 2,3: every Attention
 * block-diagonal, seq_offsets [0, 2, 5]); B = 2 rows.  The attention's own semantics against one
 * call per sequence: test_kernels_attention.c. */
static void test_llama_packed(void **st)
{
	(void)st;
	char *s = slurp("examples/llama3.1-8b.aig");
	const char *binds[] = { "B=2", "S=5", "L=2", "H=4", "KV=2", "HD=4", "D=16", "F=24", "V=11", "CTX=5" };
	static const int64_t off[] = { 0, 2, 5 };
	pack = off, npack = 3;
	Module *m = train_graph(s, binds, 10, 1, 0);
	pack = NULL, npack = 0;
	int na = 0;
	ir_foreach_node(ir_entry(m), n) {
		int k = 0;
		const int64_t *o = (n->op == OP_Attention || n->op == OP_AttentionGrad) ? rt_attr_ints(&n->attrs, "seq_offsets", &k) : NULL;
		na += o && k == 3 && o[1] == 2 && o[2] == 5;
	}
	assert_int_equal(na, 4);   /* two layers' Attention and AttentionGrad */
	ir_module_free(m);
	pack = off, npack = 3;
	check_text(s, binds, 10, 12);
	pack = NULL, npack = 0;
	free(s);
}

/* ---- a tiny model learns a fixed batch ----
 * labels = (3 id + 1) mod 16 on 8 distinct ids, so the labels' own distribution is uniform over
 * 8 values: a model that ignores its input can reach no lower loss than their entropy ln 8
 * (Cover & Thomas, Thm 2.6.3: cross-entropy >= entropy).  After 300 AdamW steps (f32, lr 1e-2)
 * the loss must be below ln 8, i.e. the model has learned the map from ids to labels, and below
 * half of the first step's loss (about ln 16, the uniform prediction). */
static const char *TINY =
	"dim V = 16\ndim D = 16\n"
	"graph main(ids: i64[B, S]) -> (logits: f32[B, S, V]) {\n"
	"  param emb: f32[V, D] = normal(std=0.5, seed=1)\n  param w1: f32[D, D] = normal(std=0.25, seed=2)\n"
	"  param b1: f32[D] = zeros\n  param g: f32[D] = ones\n  param wo: f32[D, V] = normal(std=0.25, seed=3)\n"
	"  x = Embedding(emb, ids)\n  h = MatMul(x, w1)\n  h1 = Add(h, b1)\n  a = Gelu(h1)\n  r = Add(a, x)\n"
	"  n = RMSNormalization(r, g) {epsilon=1e-5}\n  logits = MatMul(n, wo)\n}\n";

static void test_loss_decreases(void **st)
{
	(void)st;
	const char *binds[] = { "B=2", "S=4" };
	Module *m = train_graph(TINY, binds, 2, 0, 1e-2);
	Graph *g = ir_entry(m);
	Ev e;
	ev_init(&e, g);
	set_ints(&e, "ids", 1, 0, 8, 0);        /* ids 0..7 */
	set_ints(&e, "labels", 3, 1, 16, 0);    /* (3 i + 1) mod 16 */
	double first = 0, last = 0;
	for (int step = 0; step < 300; step++) {
		last = loss_of(&e);
		if (step == 0)
			first = last;
		/* outputs after the loss: P.next, P.exp_avg.next, P.exp_avg_sq.next per AdamW, then the step */
		for (int i = 1; i < g->nout; i++) {
			Value *o = g->outputs[i];
			Node *d = o->def;
			Value *p = d->op == OP_AdamW ? d->in[o->defidx ? o->defidx + 1 : 0] : d->in[0];
			RtTensor *t = e.val[p->id];
			const RtTensor *x = e.val[o->id];
			for (int64_t k = 0; k < t->n; k++)
				rt_set(t, k, rt_get(x, k));
		}
	}
	print_message("tiny model: loss %.4f -> %.4f after 300 steps (ln 8 = %.4f)\n", first, last, log(8.0));
	assert_true(last < log(8.0));
	assert_true(last < first / 2);
	ev_free(&e);
	ir_module_free(m);
}

/* Gradient accumulation over 2 micro-batches (different ids and labels): the step's loss is the
 * micro-batches' mean and its gradients, accumulated by the backward sweeps of both copies of
 * the forward pass, match the finite differences of that mean (f64, the tolerance above). */
static void test_grad_accum(void **st)
{
	(void)st;
	const char *binds[] = { "B=2", "S=4" };
	accum = 2;
	Module *m = train_graph(TINY, binds, 2, 1, 0);
	accum = 1;
	Graph *g = ir_entry(m);
	assert_string_equal(g->outputs[0]->name, "loss");
	assert_int_equal(g->outputs[0]->def->op, OP_Mean);
	Ev e;
	ev_init(&e, g);
	set_ints(&e, "ids", 1, 0, 8, 0);
	set_ints(&e, "labels", 3, 1, 16, 0);
	set_ints(&e, "ids.mb1", 5, 2, 16, 0);
	set_ints(&e, "labels.mb1", 7, 3, 16, 0);
	assert_non_null(find_input(g, "ids.mb1"));
	assert_true(grad_check(&e, 4, NULL) >= 20);
	ev_free(&e);
	ir_module_free(m);
}

/* An operator without a rule between a parameter and the loss is an error at its node. */
static void test_no_rule(void **st)
{
	(void)st;
	const char *t = "graph main(x: f32[2, 3]) -> (y: f32[2, 3]) {\n  param w: f32[3, 3] = normal(seed=1)\n"
			"  h = MatMul(x, w)\n  y = Softsign(h)\n}\n";
	Module *m = fe_parse_aig_text("t.aig", t, strlen(t));
	assert_int_equal(ir_infer_shapes(m), 0);
	PassCtx c;
	pass_ctx_init(&c);
	c.out = fopen("/dev/null", "w");
	c.phase = "train";
	FILE *null = fopen("/dev/null", "w");
	diag_set_output(null);
	assert_true(pass_run_pipeline(m, &c, "autodiff") > 0);
	diag_set_output(stderr);
	fclose(null);
	fclose(c.out);
	pass_ctx_free(&c);
	ir_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_operators),
		cmocka_unit_test(test_gpt2),
		cmocka_unit_test(test_llama),
		cmocka_unit_test(test_mixtral),
		cmocka_unit_test(test_llama_packed),
		cmocka_unit_test(test_loss_decreases),
		cmocka_unit_test(test_grad_accum),
		cmocka_unit_test(test_no_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
