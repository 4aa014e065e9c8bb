/* ir/shape.c: shape and dtype inference, the driver and the helpers every rule uses.
 *
 * ir_infer_shapes() orders the module's graphs callees first (a call cycle is an error), then
 * for each graph substitutes bound symbols into the input, parameter and declared output types,
 * runs every node's rule `shape_<rule>` named in ir/ops.def (after a generic arity check) and
 * compares the graph's outputs with their declared types.  Rules live in ir/shape_elem.c
 * (elementwise, reductions), ir/shape_data.c (data movement), ir/shape_nn.c (contractions,
 * normalisation, attention, LLM and quantization operators); ir/shape_value.c propagates the
 * compile-time contents of small integer tensors.  Semantics follow the ONNX operator specs
 * (https://onnx.ai/onnx/operators/); the LLM operators follow docs/language.md.
 *
 * Errors go through diag_error at the node's location, "Op: what is wrong: what was found", and
 * are counted; a node whose inputs are untyped (after an earlier error) is skipped silently so
 * one mistake is reported once.  Also provides ir_const_data().
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "ir/shape_int.h"

/* ---- messages ---- */
int sh_err(ShapeCtx *c, const Node *n, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error(n->loc, "%s: %s", n->op == OP_Call && n->callee ? n->callee->name : ir_ops[n->op].name, msg);
	c->errors++;
	return -1;
}

static char *ring_buf(void)
{
	static char ring[8][512];
	static int next;
	next = (next + 1) % 8;
	return ring[next];
}

const char *sh_ty(ShapeCtx *c, Type t) { return ir_type_str(c->m, t, ring_buf(), 512); }

const char *sh_bind_hint(ShapeCtx *c)
{
	char *b = ring_buf();
	unsigned char *used = calloc((size_t)c->m->nsyms + 1, 1);
	int len = snprintf(b, 512, "(bind the dimension"), n = 0;
	for (int i = 0; used && c->g && i < c->g->nin; i++)
		for (int k = 0; k < c->g->inputs[i]->type.rank; k++)
			dim_mark_syms(c->g->inputs[i]->type.dims[k], used);
	for (int s = 0; used && s < c->m->nsyms && len < 480; s++)
		if (used[s] && !c->m->symbound[s])
			len += snprintf(b + len, 512 - (size_t)len, "%s%s=N", n++ ? "," : ": --bind ", c->m->symnames[s]);
	snprintf(b + len, 512 - (size_t)len, ")");
	free(used);
	return b;
}
const char *sh_dim(ShapeCtx *c, Dim d) { return dim_str(c->m, d, ring_buf(), 512); }

const Type *sh_in(const Node *n, int i)
{
	return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

/* ---- outputs ---- */
int sh_set(ShapeCtx *c, Node *n, int i, DType dt, int rank, const Dim *dims)
{
	if (i >= n->nout)
		return 0;   /* optional output not requested */
	if (rank > IR_MAX_RANK)
		return sh_err(c, n, "output %d would have rank %d, more than the supported %d", i, rank,
			      IR_MAX_RANK);
	Type t = ir_type(c->m, dt, rank, dims);
	int64_t k = 1;
	for (int d = 0; d < rank; d++) {
		if (dim_isconst(dims[d]) && dims[d].k < 0)
			return sh_err(c, n, "output %d would have a negative dimension: %s", i, sh_ty(c, t));
		if (dim_isconst(dims[d]) && __builtin_mul_overflow(k, dims[d].k, &k))
			return sh_err(c, n, "output %d has more than 2^63 elements: %s", i, sh_ty(c, t));
	}
	n->out[i]->type = t;
	return 0;
}

int sh_set_type(ShapeCtx *c, Node *n, int i, Type t) { return sh_set(c, n, i, t.dt, t.rank, t.dims); }

/* ---- axes and broadcasting ---- */
int sh_axis(ShapeCtx *c, const Node *n, const char *what, int64_t axis, int rank, int *out)
{
	if (axis < -(int64_t)rank || axis >= rank)
		return sh_err(c, n, "%s %lld is out of range for rank %d (expected %d..%d)", what,
			      (long long)axis, rank, -rank, rank - 1);
	*out = (int)(axis < 0 ? axis + rank : axis);
	return 0;
}

int sh_broadcast(ShapeCtx *c, const Node *n, const char *an, Type a, const char *bn, Type b,
		 int *rank, Dim *out)
{
	int r = a.rank > b.rank ? a.rank : b.rank;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a.rank), ib = i - (r - b.rank);
		Dim da = ia >= 0 ? a.dims[ia] : dim_c(1), db = ib >= 0 ? b.dims[ib] : dim_c(1);
		if (dim_eq(da, db) || dim_eq(db, dim_c(1)))
			out[i] = da;
		else if (dim_eq(da, dim_c(1)))
			out[i] = db;
		else
			return sh_err(c, n, "cannot broadcast %s %s with %s %s: dimension %s vs %s", an,
				      sh_ty(c, a), bn, sh_ty(c, b), sh_dim(c, da), sh_dim(c, db));
	}
	*rank = r;
	return 0;
}

int sh_unibroadcast_ok(Type from, int rank, const Dim *to)
{
	if (from.rank > rank)
		return 0;
	for (int i = 0; i < from.rank; i++) {
		Dim f = from.dims[i], t = to[rank - from.rank + i];
		if (!dim_eq(f, t) && !dim_eq(f, dim_c(1)))
			return 0;
	}
	return 1;
}

/* ---- input checks ---- */
int sh_want_dtype(ShapeCtx *c, const Node *n, int i, const char *what, DType d)
{
	const Type *t = sh_in(n, i);
	if (t && t->dt != d)
		return sh_err(c, n, "%s must be %s, got %s", what, rt_dtype_name(d), sh_ty(c, *t));
	return 0;
}

int sh_want_float(ShapeCtx *c, const Node *n, int i, const char *what)
{
	const Type *t = sh_in(n, i);
	if (t && !rt_dtype_isfloat(t->dt))
		return sh_err(c, n, "%s must have a floating-point type, got %s", what, sh_ty(c, *t));
	return 0;
}

int sh_want_int(ShapeCtx *c, const Node *n, int i, const char *what)
{
	const Type *t = sh_in(n, i);
	if (t && rt_dtypes[t->dt].kind != K_INT && rt_dtypes[t->dt].kind != K_UINT)
		return sh_err(c, n, "%s must have an integer type, got %s", what, sh_ty(c, *t));
	return 0;
}

int sh_want_rank(ShapeCtx *c, const Node *n, int i, const char *what, int rank)
{
	const Type *t = sh_in(n, i);
	if (t && t->rank != rank)
		return sh_err(c, n, "%s must have rank %d, got %s", what, rank, sh_ty(c, *t));
	return 0;
}

int sh_same_dtype(ShapeCtx *c, const Node *n, int i, int j, const char *wi, const char *wj)
{
	const Type *a = sh_in(n, i), *b = sh_in(n, j);
	if (a && b && a->dt != b->dt)
		return sh_err(c, n, "%s and %s must have the same dtype: %s is %s, %s is %s", wi, wj, wi,
			      sh_ty(c, *a), wj, sh_ty(c, *b));
	return 0;
}

int sh_prod(ShapeCtx *c, const Dim *d, int lo, int hi, Dim *out)
{
	Dim p = dim_c(1);
	for (int i = lo; i < hi; i++)
		if (dim_mul(c->m, p, d[i], &p) < 0)
			return -1;
	*out = p;
	return 0;
}

/* ---- constant inputs ---- */
void sh_need(ShapeCtx *c, Value *v)
{
	Module *m = c->m;
	for (int i = 0; i < m->nunknown; i++)
		if (m->unknown[i] == v)
			return;
	if (m->nunknown == m->cap_unknown) {
		int cap = m->cap_unknown ? 2 * m->cap_unknown : 8;
		Value **nv = arena_alloc(m->arena, (size_t)cap * sizeof *nv);
		if (m->nunknown)
			memcpy(nv, m->unknown, (size_t)m->nunknown * sizeof *nv);
		m->unknown = nv;
		m->cap_unknown = cap;
	}
	m->unknown[m->nunknown++] = v;
}

int ir_unknown_values(const Module *m, Value *const **out)
{
	*out = m->unknown;
	return m->nunknown;
}

int sh_unknown(ShapeCtx *c, const Node *n, int i, const char *what)
{
	char buf[600];
	sh_need(c, n->in[i]);
	return sh_err(c, n, "%s ('%s') must be known at compile time: %s", what, n->in[i]->name,
		      sh_why_unknown(c, n->in[i], buf, sizeof buf));
}

int sh_dims_input(ShapeCtx *c, const Node *n, int i, const char *what, Dim *out, int max, int *count)
{
	const Type *t = sh_in(n, i);
	if (!t)
		return sh_err(c, n, "input %s is missing", what);
	if (rt_dtypes[t->dt].kind != K_INT || t->rank > 1)
		return sh_err(c, n, "%s must be an integer scalar or 1-D tensor, got %s", what, sh_ty(c, *t));
	const Known *k = sh_known(c, n->in[i]);
	if (!k)
		return sh_unknown(c, n, i, what);
	if (k->n > max)
		return sh_err(c, n, "%s has %d elements, more than the %d allowed", what, k->n, max);
	memcpy(out, k->d, (size_t)k->n * sizeof *out);
	*count = k->n;
	return 0;
}

int sh_ints_input(ShapeCtx *c, const Node *n, int i, const char *what, int64_t *out, int max,
		  int *count)
{
	Dim d[SH_MAXKNOWN];
	if (sh_dims_input(c, n, i, what, d, max < SH_MAXKNOWN ? max : SH_MAXKNOWN, count) < 0)
		return -1;
	for (int j = 0; j < *count; j++) {
		if (!dim_isconst(d[j]))
			return sh_err(c, n, "%s must be constant, element %d is %s", what, j, sh_dim(c, d[j]));
		out[j] = d[j].k;
	}
	return 0;
}

int sh_axes(ShapeCtx *c, const Node *n, int i, int64_t *out, int max, int *count)
{
	if (sh_in(n, i))
		return sh_ints_input(c, n, i, "axes", out, max, count) < 0 ? -1 : 0;
	int k;
	const int64_t *a = rt_attr_ints(&n->attrs, "axes", &k);
	const Attr *at = rt_attr_find(&n->attrs, "axes");
	if (at && at->kind == ATTR_INT) {   /* a single axis written as {axes=1} */
		out[0] = at->i;
		*count = 1;
		return 0;
	}
	if (at && !a)
		return sh_err(c, n, "attribute axes must be a list of integers");
	if (!a)
		return 1;
	if (k > max)
		return sh_err(c, n, "attribute axes has %d entries, more than %d", k, max);
	memcpy(out, a, (size_t)k * sizeof *a);
	*count = k;
	return 0;
}

int sh_attr_dtype(ShapeCtx *c, const Node *n, const char *name, DType *out)
{
	const Attr *a = rt_attr_find(&n->attrs, name);
	if (!a)
		return 0;
	DType d = DT_INVALID;
	if (a->kind == ATTR_STRING)
		d = rt_dtype_lookup(a->s);
	else if (a->kind == ATTR_INT)
		d = rt_dtype_from_onnx(a->i);
	if (d == DT_INVALID) {
		if (a->kind == ATTR_STRING)
			return sh_err(c, n, "attribute %s: unknown dtype '%s'", name, a->s);
		if (a->kind == ATTR_INT)
			return sh_err(c, n, "attribute %s: unsupported ONNX data type %lld", name, (long long)a->i);
		return sh_err(c, n, "attribute %s must be a dtype name or an ONNX data type number", name);
	}
	*out = d;
	return 1;
}

/* ---- ir_const_data ---- */
/* Shape of an INIT_LITERAL parameter: its declared type when it matches nlit, else 1-D. */
static int literal_dims(const Value *v, int *rank, int64_t *dims)
{
	const Type *t = &v->type;
	if (t->rank < 0) {
		*rank = 1;
		dims[0] = v->init->nlit;
		return 0;
	}
	if (t->rank > RT_MAX_RANK)
		return -1;
	int64_t numel = ir_type_numel(*t);
	if (numel != v->init->nlit)
		return -1;
	*rank = t->rank;
	for (int i = 0; i < t->rank; i++)
		dims[i] = t->dims[i].k;
	return 0;
}

/* A literal number as an integer, saturating: 9223372036854775807 written in .aig is read as
 * the double 2^63 (ONNX exports use INT64_MAX as "to the end" in Slice). */
static int64_t sat_int(double x)
{
	if (x != x)
		return 0;
	if (x >= 9223372036854775807.0)
		return INT64_MAX;
	if (x <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)x;
}

const RtTensor *ir_const_data(Value *v)
{
	if (!v || v->kind != V_PARAM || !v->init)
		return NULL;
	ParamInit *pi = v->init;
	if (pi->data)
		return pi->data;
	if (pi->kind != INIT_LITERAL)
		return NULL;
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (literal_dims(v, &rank, dims) < 0)
		return NULL;
	DType dt = v->type.rank >= 0 && v->type.dt != DT_INVALID ? v->type.dt : DT_F32;
	if (v->type.rank < 0) {
		dt = DT_I64;
		for (int64_t i = 0; i < pi->nlit; i++)
			if (pi->lit[i] != (double)(int64_t)pi->lit[i])
				dt = DT_F32;
	}
	RtTensor *t = arena_alloc(v->graph->m->arena, sizeof *t);
	if (rt_tensor_alloc(t, dt, rank, dims, NULL) < 0)
		return NULL;
	for (int64_t i = 0; i < pi->nlit; i++)
		if (rt_dtypes[dt].storage == S_I64)
			rt_seti(t, i, sat_int(pi->lit[i]));
		else
			rt_set(t, i, pi->lit[i]);
	pi->data = t;
	return t;
}

/* ---- the driver ---- */
/* Substitutes bound symbols into t; reports overflow against `what` at loc. */
static int subst_type(ShapeCtx *c, Type *t, Loc loc, const char *what)
{
	if (t->rank <= 0)
		return 0;
	Dim d[IR_MAX_RANK];
	int64_t k = 1;
	for (int i = 0; i < t->rank && i < IR_MAX_RANK; i++) {
		if (dim_subst(c->m, t->dims[i], &d[i]) < 0 ||
		    (dim_isconst(d[i]) && __builtin_mul_overflow(k, d[i].k, &k))) {
			diag_error(loc, "%s: type %s has more than 2^63 elements with the bound dimensions",
				   what, sh_ty(c, *t));
			c->errors++;
			return -1;
		}
		if (dim_isconst(d[i]) && d[i].k < 0) {
			diag_error(loc, "%s: dimension %d of %s is negative", what, i, sh_ty(c, *t));
			c->errors++;
			return -1;
		}
	}
	*t = ir_type(c->m, t->dt, t->rank, d);
	return 0;
}

/* An inline literal must have as many numbers as its type has elements. */
static void check_literal(ShapeCtx *c, Value *p)
{
	if (!p->init || p->init->kind != INIT_LITERAL || p->type.rank < 0)
		return;
	int64_t n = ir_type_numel(p->type);
	if (n >= 0 && n != p->init->nlit) {
		diag_error(p->loc, "parameter %s: %s holds %lld elements but %lld values are given",
			   p->name, sh_ty(c, p->type), (long long)n, (long long)p->init->nlit);
		c->errors++;
	}
}

static void subst_graph(ShapeCtx *c, Graph *g)
{
	for (int i = 0; i < g->nin; i++)
		subst_type(c, &g->inputs[i]->type, g->inputs[i]->loc, g->inputs[i]->name);
	for (int i = 0; i < g->nparams; i++) {
		subst_type(c, &g->params[i]->type, g->params[i]->loc, g->params[i]->name);
		check_literal(c, g->params[i]);
	}
	if (g->out_decl)
		for (int i = 0; i < g->nout; i++)
			if (g->out_decl[i].rank >= 0)
				subst_type(c, &g->out_decl[i], g->loc, g->name);
}

/* Generic checks before a rule runs: arity, required inputs present.  Returns 1 to run the
 * rule, 0 to skip silently (an input is untyped after an earlier error), -1 on error. */
static int precheck(ShapeCtx *c, Node *n)
{
	const OpInfo *oi = &ir_ops[n->op];
	if (n->nin < oi->in_min || (oi->in_max >= 0 && n->nin > oi->in_max)) {
		if (oi->in_max < 0)
			return sh_err(c, n, "expected at least %d inputs, got %d", oi->in_min, n->nin);
		if (oi->in_min == oi->in_max)
			return sh_err(c, n, "expected %d inputs, got %d", oi->in_min, n->nin);
		return sh_err(c, n, "expected %d to %d inputs, got %d", oi->in_min, oi->in_max, n->nin);
	}
	if (n->nout < oi->out_min || (oi->out_max >= 0 && n->nout > oi->out_max)) {
		if (oi->out_min == oi->out_max)
			return sh_err(c, n, "expected %d outputs, got %d", oi->out_min, n->nout);
		return sh_err(c, n, "expected %d to %d outputs, got %d", oi->out_min, oi->out_max, n->nout);
	}
	for (int i = 0; i < n->nin; i++) {
		if (!n->in[i] && i < oi->in_min)
			return sh_err(c, n, "input %d is required but absent", i);
		if (n->in[i] && n->in[i]->type.rank < 0)
			return 0;
	}
	return 1;
}

static void infer_graph(ShapeCtx *c, Graph *g)
{
	c->g = g;
	c->known = arena_alloc(c->m->arena, (size_t)(g->nvalues ? g->nvalues : 1) * sizeof *c->known);
	c->val = rt_calloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof *c->val);
	c->nval = g->nvalues;
	subst_graph(c, g);
	ir_foreach_node(g, n) {
		for (int i = 0; i < n->nout; i++)
			n->out[i]->type = (Type){ DT_INVALID, -1, NULL };
		if (diag_stop())
			break;
		if (sh_guard_skipped(c, n))
			continue;       /* in the branch an If with a known condition does not take */
		int ok = n->op == OP_If ? n->nin > 0 && n->in[0] : precheck(c, n) > 0;
		if (ok && ir_ops[n->op].shape(c, n) == 0) {
			sh_known_propagate(c, n);
			sh_eval(c, n);
		}
	}
	if (!c->errors)
		sh_fold_ifs(c, g);
	sh_eval_free(c);
	if (!g->out_decl || diag_stop())
		return;
	for (int i = 0; i < g->nout; i++) {
		Type inf = g->outputs[i]->type, decl = g->out_decl[i];
		if (inf.rank >= 0 && decl.rank >= 0 && !ir_type_eq(inf, decl)) {
			diag_error(g->outputs[i]->loc, "graph %s: output %s is declared %s but inferred %s",
				   g->name, g->outputs[i]->name, sh_ty(c, decl), sh_ty(c, inf));
			c->errors++;
		}
	}
}

/* Depth-first post-order over call edges: callees before callers.  state: 0 new, 1 open, 2 done. */
static int order_graphs(ShapeCtx *c, Graph *g, Graph **all, int ng, unsigned char *state,
			Graph **order, int *no)
{
	int gi = 0;
	while (all[gi] != g)
		gi++;
	if (state[gi] == 2)
		return 0;
	state[gi] = 1;
	ir_foreach_node(g, n) {
		if (n->op != OP_Call || !n->callee)
			continue;
		int ci = 0;
		while (ci < ng && all[ci] != n->callee)
			ci++;
		if (ci == ng)
			continue;
		if (state[ci] == 1) {
			diag_error(n->loc, "call cycle: graph %s calls %s, which is still being defined",
				   g->name, n->callee->name);
			c->errors++;
			continue;
		}
		order_graphs(c, n->callee, all, ng, state, order, no);
	}
	state[gi] = 2;
	order[(*no)++] = g;
	return 0;
}

int ir_infer_shapes(Module *m)
{
	ShapeCtx c = { .m = m };
	m->nunknown = 0;
	int ng = m->ngraphs, no = 0;
	Graph **all = arena_alloc(m->arena, (size_t)(ng + 1) * 2 * sizeof *all);
	Graph **order = all + ng + 1;
	unsigned char *state = arena_alloc(m->arena, (size_t)ng + 1);
	int k = 0;
	for (Graph *g = m->graphs; g && k < ng; g = g->next)
		all[k++] = g;
	for (int i = 0; i < k; i++)
		order_graphs(&c, all[i], all, k, state, order, &no);
	for (int i = 0; i < no && !diag_stop(); i++)
		infer_graph(&c, order[i]);
	return c.errors;
}
