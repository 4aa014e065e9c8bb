/* testsuite/unit/test_passes.c: the pass manager and the passes through their C API: the pass
 * table, remarks kept whether printed or not, statistics, bisection, CSE of commutative
 * operands, DCE of nodes and parameters, the memory plan's invariant (buffers live at the same
 * time never overlap), and differential checks: every pass leaves the outputs of seeded graphs
 * unchanged when evaluated node by node with the reference kernels (rt_kernel, the same kernels
 * the interpreter dispatches to; these tests skip until runtime/kernels is linked in). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "passes/pass.h"
#include "runtime/kernels.h"
#include "runtime/random.h"

static Module *parse(const char *text)
{
	Module *m = fe_parse_aig_text("t.aig", text, strlen(text));
	assert_non_null(m);
	assert_int_equal(ir_verify(m), 0);
	assert_int_equal(ir_infer_shapes(m), 0);
	return m;
}

static PassCtx quiet_ctx(void)
{
	PassCtx c;
	pass_ctx_init(&c);
	c.verify_each = 1;
	c.out = fopen("/dev/null", "w");
	return c;
}

static void ctx_done(PassCtx *c)
{
	fclose(c->out);
	pass_ctx_free(c);
}

/* The op of the node defining graph output i. */
static Op out_op(Module *m, int i) { return ir_entry(m)->outputs[i]->def->op; }

/* ---- the table ---- */
static void test_table(void **st)
{
	(void)st;
	for (int i = 0; i < pass_count; i++) {
		assert_non_null(pass_table[i].fn);
		assert_true(strlen(pass_table[i].description) > 10);
		assert_ptr_equal(pass_find(pass_table[i].name), &pass_table[i]);
		assert_int_not_equal(pass_remark_category(pass_table[i].category), 0);
	}
	assert_null(pass_find("nope"));
	assert_int_equal(pass_check_list(PASS_DEFAULT_PIPELINE), 0);
	assert_int_equal(pass_remark_category("nope"), 0);
	assert_int_not_equal(pass_remark_category("placement"), 0);   /* the partition pass's */
}

static const char *MLP =
	"graph main(x: f32[2, 8]) -> (y: f32[2, 8]) {\n"
	"  param w: f32[8, 8] = normal(std=0.3, seed=1)\n"
	"  param b: f32[8] = normal(std=0.3, seed=2)\n"
	"  param z: f32[8] = zeros\n"
	"  h = MatMul(x, w)\n"
	"  h0 = Add(h, z)\n"
	"  a = Add(h0, b)\n"
	"  c = Add(b, h0)\n"
	"  s = Sigmoid(a)\n"
	"  g = Mul(a, s)\n"
	"  y = Add(g, c)\n"
	"}\n";

/* ---- remarks, stats, bisection ---- */
static void test_remarks_kept(void **st)
{
	(void)st;
	Module *m = parse(MLP);
	PassCtx c = quiet_ctx();
	assert_int_equal(pass_run_pipeline(m, &c, "canonicalize,fuse"), 0);
	int applied = 0;
	for (const Remark *r = pass_remarks(&c); r; r = r->next) {
		assert_non_null(r->msg);
		assert_non_null(r->pass);
		applied += r->kind == REMARK_APPLIED;
	}
	assert_true(applied >= 3);
	assert_int_equal(c.nremarks > 0, 1);
	assert_int_equal(pass_stat_get(&c, "canonicalize", "nodes merged (CSE)"), 1);
	assert_int_equal(pass_stat_get(&c, "canonicalize", "patterns recognized"), 1);
	assert_int_equal(out_op(m, 0), OP_Add);
	ctx_done(&c);
	ir_module_free(m);
}

static void test_bisect_zero(void **st)
{
	(void)st;
	Module *m = parse(MLP);
	PassCtx c = quiet_ctx();
	c.bisect_limit = 0;
	int before = ir_entry(m)->nnodes;
	assert_int_equal(pass_run_pipeline(m, &c, "canonicalize,fuse"), 0);
	assert_int_equal(ir_entry(m)->nnodes, before);
	assert_true(c.bisect_count > 0);
	assert_int_equal(c.changes, 0);
	ctx_done(&c);
	ir_module_free(m);
}

/* ---- cse, dce ---- */
static void test_cse_commutative(void **st)
{
	(void)st;
	Module *m = parse("graph main(a: f32[4], b: f32[4]) -> (y: f32[4]) {\n"
			  "  p = Mul(a, b)\n  q = Mul(b, a)\n  r = Sub(a, b)\n  s = Sub(b, a)\n"
			  "  t = Add(p, q)\n  u = Add(r, s)\n  y = Add(t, u)\n}\n");
	PassCtx c = quiet_ctx();
	assert_int_equal(pass_run_pipeline(m, &c, "cse,dce"), 0);
	assert_int_equal(pass_stat_get(&c, "cse", "nodes merged (CSE)"), 1);   /* Mul only: Sub is not commutative */
	assert_int_equal(ir_entry(m)->nnodes, 6);
	ctx_done(&c);
	ir_module_free(m);
}

static void test_dce(void **st)
{
	(void)st;
	Module *m = parse("graph main(a: f32[4]) -> (y: f32[4]) {\n  param w: f32[4] = ones\n"
			  "  param k: f32[4] = zeros\n  d = Mul(a, k)\n  e = Exp(d)\n  y = Add(a, w)\n}\n");
	PassCtx c = quiet_ctx();
	assert_int_equal(pass_run_pipeline(m, &c, "dce"), 0);
	assert_int_equal(ir_entry(m)->nnodes, 1);
	assert_int_equal(ir_entry(m)->nparams, 1);
	ctx_done(&c);
	ir_module_free(m);
}

/* ---- memory ---- */
static void test_memory_no_overlap(void **st)
{
	(void)st;
	Module *m = parse("graph main(x: f32[16, 16]) -> (y: f32[16, 16], z: f32[16, 16]) {\n"
			  "  param w: f32[16, 16] = normal(seed=1)\n"
			  "  a = MatMul(x, w)\n  b = Relu(a)\n  c = MatMul(b, w)\n  d = Add(c, a)\n"
			  "  e = Tanh(d)\n  f = MatMul(e, w)\n  y = Add(f, b)\n  z = Exp(e)\n}\n");
	PassCtx c = quiet_ctx();
	assert_int_equal(pass_run_pipeline(m, &c, "plan-memory"), 0);
	const MemPlan *p = c.plans;
	assert_non_null(p);
	Graph *g = ir_entry(m);
	/* values live at the same node never share bytes unless one is the other in place */
	int t = 0;
	ir_foreach_node(g, n) {
		for (int i = 0; i < n->nin; i++)
			for (int j = 0; j < n->nout; j++) {
				Value *a = n->in[i], *b = n->out[j];
				if (a->kind == V_PARAM || p->offset[a->id] == p->offset[b->id])
					continue;
				assert_true(p->offset[a->id] + p->size[a->id] <= p->offset[b->id] ||
					    p->offset[b->id] + p->size[b->id] <= p->offset[a->id]);
			}
		t++;
	}
	assert_true(p->peak >= p->live_peak);
	assert_true(p->peak <= 6 * 1024);     /* 1 KiB buffers: far fewer than 8 of them */
	ctx_done(&c);
	ir_module_free(m);
}

static void test_capacity(void **st)
{
	(void)st;
	Module *m = parse("graph main(x: f32[256, 256]) -> (y: f32[256, 256]) {\n  y = Exp(x)\n}\n");
	PassCtx c = quiet_ctx();
	FILE *sink = fopen("/dev/null", "w");
	diag_set_output(sink);
	c.capacity.bytes = 1000;
	assert_int_equal(pass_run_pipeline(m, &c, "plan-memory"), 1);
	c.capacity.bytes = 1 << 20;
	assert_int_equal(pass_run_pipeline(m, &c, "plan-memory"), 0);
	diag_set_output(stderr);
	fclose(sink);
	diag_reset();
	ctx_done(&c);
	ir_module_free(m);
}

/* ---- differential: a tiny evaluator over the IR with the reference kernels ---- */
typedef struct Env {
	RtTensor **val;
	int n;
} Env;

/* Materialises a parameter: literal data, fill, or seeded normal/uniform. */
static RtTensor *param_data(Value *p)
{
	RtTensor *t = calloc(1, sizeof *t);
	const RtTensor *k = ir_const_data(p);
	int64_t dims[RT_MAX_RANK];
	for (int i = 0; i < p->type.rank; i++)
		dims[i] = p->type.dims[i].k;
	assert_int_equal(rt_tensor_alloc(t, k ? k->dtype : p->type.dt, p->type.rank, dims, NULL), 0);
	for (int64_t i = 0; i < t->n; i++) {
		ParamInit *pi = p->init;
		double v = k ? rt_get(k, i) : pi->kind == INIT_FILL ? pi->a : 0;
		rt_set(t, i, v);
	}
	if (!k && p->init->kind == INIT_NORMAL)
		rt_fill_normal(rt_f32(t), t->n, (float)p->init->a, (float)p->init->b, p->init->seed, 0);
	return t;
}

/* Runs g on inputs seeded by `seed`; returns output 0..nout-1 (caller frees). */
static RtTensor **evaluate(Graph *g, uint64_t seed)
{
	Env env = { calloc((size_t)g->nvalues, sizeof(RtTensor *)), g->nvalues };
	RtExecOpts opts = { 0 };
	for (int i = 0; i < g->nin; i++) {
		Value *v = g->inputs[i];
		RtTensor *t = calloc(1, sizeof *t);
		int64_t dims[RT_MAX_RANK];
		for (int d = 0; d < v->type.rank; d++)
			dims[d] = v->type.dims[d].k;
		assert_int_equal(rt_tensor_alloc(t, v->type.dt, v->type.rank, dims, NULL), 0);
		rt_fill_normal(rt_f32(t), t->n, 0, 1, seed, (uint64_t)i);
		env.val[v->id] = t;
	}
	for (int i = 0; i < g->nparams; i++)
		env.val[g->params[i]->id] = param_data(g->params[i]);
	ir_foreach_node(g, n) {
		RtTensor *in[16] = { 0 }, out[4];
		memset(out, 0, sizeof out);
		for (int i = 0; i < n->nin; i++)
			in[i] = n->in[i] ? env.val[n->in[i]->id] : NULL;
		for (int i = 0; i < n->nout; i++)
			out[i].dtype = n->out[i]->type.dt;
		RtKernelArgs a = { in, n->nin, out, n->nout, &n->attrs, &opts, NULL };
		RtError e = { 0 };
		if (rt_kernel((RtOp)n->op)(&a, &e) < 0)
			fail_msg("node '%s' (%s): %s", n->out[0]->name, ir_ops[n->op].name, e.msg);
		for (int i = 0; i < n->nout; i++) {
			env.val[n->out[i]->id] = malloc(sizeof(RtTensor));
			*env.val[n->out[i]->id] = out[i];
		}
	}
	RtTensor **res = calloc((size_t)g->nout, sizeof *res);
	for (int i = 0; i < g->nout; i++) {
		res[i] = env.val[g->outputs[i]->id];
		env.val[g->outputs[i]->id] = NULL;
	}
	for (int i = 0; i < env.n; i++)
		if (env.val[i]) {
			int shared = 0;
			for (int j = 0; j < i; j++)
				shared |= env.val[j] == env.val[i];
			if (!shared) {
				rt_tensor_free(env.val[i]);
				free(env.val[i]);
			}
		}
	free(env.val);
	return res;
}

/* |a - b| <= 1e-4 + 1e-4 |b| everywhere: f32 reassociation tolerance. */
static void assert_close(const RtTensor *a, const RtTensor *b, const char *what)
{
	assert_int_equal(a->n, b->n);
	for (int64_t i = 0; i < a->n; i++) {
		double x = rt_get(a, i), y = rt_get(b, i);
		if (!(fabs(x - y) <= 1e-4 + 1e-4 * fabs(y)))
			fail_msg("%s: element %lld: %.9g vs %.9g", what, (long long)i, x, y);
	}
}

static const char *DIFF[] = {
	/* every canonicalize pattern in one graph */
	"graph main(x: f32[2, 4, 8], q: f32[1, 2, 4, 8], k: f32[1, 2, 4, 8], v: f32[1, 2, 4, 8]) ->"
	" (ln: f32[2, 4, 8], rms: f32[2, 4, 8], ge: f32[2, 4, 8], gt: f32[2, 4, 8], si: f32[2, 4, 8], at: f32[1, 2, 4, 8]) {\n"
	"  param g: f32[8] = normal(seed=1)\n  param b: f32[8] = normal(seed=2)\n"
	"  m = ReduceMean(x) {axes=[-1]}\n  d = Sub(x, m)\n  p = Pow(d, [2.0])\n  va = ReduceMean(p) {axes=[-1]}\n"
	"  e = Add(va, [1e-5])\n  s = Sqrt(e)\n  n = Div(d, s)\n  ng = Mul(n, g)\n  ln = Add(ng, b)\n"
	"  r0 = Mul(x, x)\n  r1 = ReduceMean(r0, [-1])\n  r2 = Add(r1, [1e-6])\n  r3 = Sqrt(r2)\n"
	"  r4 = Reciprocal(r3)\n  r5 = Mul(x, r4)\n  rms = Mul(r5, g)\n"
	"  e0 = Div(ln, [1.4142135381698608])\n  e1 = Erf(e0)\n  e2 = Add(e1, [1.0])\n  e3 = Mul(ln, e2)\n"
	"  ge = Mul(e3, [0.5])\n"
	"  t0 = Pow(x, [3.0])\n  t1 = Mul([0.044715], t0)\n  t2 = Add(x, t1)\n  t3 = Mul(t2, [0.7978845608028654])\n"
	"  t4 = Tanh(t3)\n  t5 = Add([1.0], t4)\n  t6 = Mul([0.5], x)\n  gt = Mul(t6, t5)\n"
	"  s0 = Sigmoid(rms)\n  si = Mul(s0, rms)\n"
	"  kt = Transpose(k) {perm=[0, 1, 3, 2]}\n  a0 = MatMul(q, kt)\n  a1 = Mul(a0, [0.35355339])\n"
	"  a3 = Softmax(a1) {axis=-1}\n  at = MatMul(a3, v)\n}\n",
	/* identities, shape chains, duplicates, constants */
	"graph main(x: f32[4, 6]) -> (y: f32[4, 6], z: f32[6, 4]) {\n"
	"  param w: f32[6, 6] = normal(seed=3)\n  param c: f32[6] = [1, 2, 3, 4, 5, 6]\n"
	"  c2 = Mul(c, c)\n  c3 = Exp(c2)\n  h = MatMul(x, w)\n  h1 = Add(h, c3)\n  i = Identity(h1)\n"
	"  u = Unsqueeze(i, [0])\n  r = Reshape(u, [4, 6])\n  a = Mul(r, [1.0])\n  b = Add(a, x)\n  b2 = Add(x, a)\n"
	"  y = Mul(b, b2)\n  t = Transpose(y) {perm=[1, 0]}\n  t2 = Transpose(t) {perm=[1, 0]}\n"
	"  z = Transpose(t2) {perm=[1, 0]}\n}\n",
};

static void test_differential(void **st)
{
	(void)st;
	for (size_t k = 0; k < sizeof DIFF / sizeof DIFF[0]; k++)
		for (int i = 0; i < pass_count; i++) {
			Module *ref = parse(DIFF[k]), *m = parse(DIFF[k]);
			PassCtx c = quiet_ctx();
			assert_int_equal(pass_run_pipeline(m, &c, pass_table[i].name), 0);
			RtTensor **want = evaluate(ir_entry(ref), 7), **got = evaluate(ir_entry(m), 7);
			for (int o = 0; o < ir_entry(m)->nout; o++) {
				assert_close(got[o], want[o], pass_table[i].name);
				rt_tensor_free(got[o]), rt_tensor_free(want[o]);
				free(got[o]), free(want[o]);
			}
			free(got), free(want);
			ctx_done(&c);
			ir_module_free(ref);
			ir_module_free(m);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_remarks_kept),
		cmocka_unit_test(test_bisect_zero),
		cmocka_unit_test(test_cse_commutative),
		cmocka_unit_test(test_dce),
		cmocka_unit_test(test_memory_no_overlap),
		cmocka_unit_test(test_capacity),
		cmocka_unit_test(test_differential),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
