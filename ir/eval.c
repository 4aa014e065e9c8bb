/* ir/eval.c: the compile-time evaluator behind shape inference.
 *
 * A node whose inputs are all known at compile time and small (constant parameters, shape values,
 * results the evaluator computed before) is computed with the runtime's own reference kernel
 * (rt_kernel, the kernel the interpreter runs), so a compile-time value is exactly the value the
 * plan computes; every operator with a kernel is covered.  ir_infer_shapes visits nodes in
 * topological order and evaluates each after its shape rule, so one sweep reaches the fixed
 * point of the graph; rules whose output shape depends on values (NonZero, Compress, Unique,
 * NonMaxSuppression, Range, ...) ask for the evaluation first (sh_eval).  Limits: an input or a
 * result of more than Module.eval_limit elements (default 65536, `--fold-limit`) is not
 * evaluated.  Values are held per inference run and freed at its end; nothing here changes the
 * graph.  Kernels that call into BLAS are the kernels engineer's to keep host-independent; the
 * evaluator calls no BLAS itself.  sh_why_unknown explains, for an error, where the chain of
 * known values stops: the operator and its input that is not known.
 */
#include <stdio.h>
#include <string.h>

#include "ir/shape_int.h"
#include "runtime/kernels.h"

#define EV_MAXIN 64
#define EV_MAXOUT 16

int64_t ir_eval_limit(const Module *m) { return m->eval_limit > 0 ? m->eval_limit : 1 << 16; }

/* A fill parameter (zeros, ones, fill(x)) materialised once, when small. */
static const RtTensor *fill_data(Value *v, int64_t limit)
{
	int64_t n = ir_type_numel(v->type), dims[RT_MAX_RANK];
	if (n < 0 || n > limit || v->type.rank > RT_MAX_RANK || v->type.dt == DT_INVALID)
		return NULL;
	for (int i = 0; i < v->type.rank; i++)
		dims[i] = v->type.dims[i].k;
	RtTensor *f = arena_alloc(v->graph->m->arena, sizeof *f);
	if (rt_tensor_alloc(f, v->type.dt, v->type.rank, dims, NULL) < 0)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		rt_set(f, i, v->init->a);
	v->init->data = f;      /* owned by the module from now on, like a literal's */
	return f;
}

/* An i64-storage tensor holding the all-constant known dims k of v. */
static const RtTensor *from_known(ShapeCtx *c, Value *v, const Known *k)
{
	for (int i = 0; i < k->n; i++)
		if (!dim_isconst(k->d[i]))
			return NULL;
	DType dt = v->type.dt != DT_INVALID && rt_dtypes[v->type.dt].storage == S_I64 ? v->type.dt : DT_I64;
	int64_t dims[1] = { k->n };
	RtTensor *t = rt_calloc(1, sizeof *t);
	if (!t || rt_tensor_alloc(t, dt, k->rank, dims, NULL) < 0) {
		rt_free(t);
		return NULL;
	}
	for (int i = 0; i < k->n; i++)
		rt_i64(t)[i] = k->d[i].k;
	c->val[v->id] = t;
	return t;
}

const RtTensor *ir_const_tensor(Value *v, int64_t limit)
{
	const RtTensor *t = ir_const_data(v);
	if (!t && v && v->kind == V_PARAM && v->init && v->init->kind == INIT_FILL)
		t = fill_data(v, limit);
	return t;
}

const RtTensor *sh_value_raw(ShapeCtx *c, Value *v)
{
	if (!v)
		return NULL;
	if (v->kind == V_PARAM)
		return ir_const_tensor(v, ir_eval_limit(c->m));
	if (!c->val || v->graph != c->g || v->id >= c->nval)
		return NULL;
	return c->val[v->id];
}

const RtTensor *sh_value(ShapeCtx *c, Value *v)
{
	const RtTensor *t = sh_value_raw(c, v);
	if (t || !v || !c->val || v->graph != c->g || v->id >= c->nval)
		return t;
	if (c->known && c->known[v->id].ok)
		return from_known(c, v, &c->known[v->id]);
	return NULL;
}

/* Whether n's kernel may run at compile time: not a call, not a device operation. */
static int evaluable(const Node *n)
{
	switch (n->op) {
	case OP_Call: case OP_Transfer: case OP_AllReduce: case OP_AllGather: case OP_AllToAll: case OP_ReduceScatter:
		return 0;
	default:
		return n->nin <= EV_MAXIN && n->nout <= EV_MAXOUT && n->nout > 0;
	}
}

/* The shapes the rule inferred and the kernel computed agree (symbolic types: nothing to say). */
static int agrees(const Type *t, const RtTensor *r)
{
	if (t->rank < 0)
		return 1;
	if (t->rank != r->rank)
		return 0;
	for (int i = 0; i < t->rank; i++)
		if (dim_isconst(t->dims[i]) && t->dims[i].k != r->dims[i])
			return 0;
	return 1;
}

int sh_eval(ShapeCtx *c, Node *n)
{
	if (!c->val || !evaluable(n))
		return 0;
	for (int i = 0; i < n->nout; i++) {
		if (n->out[i]->id >= c->nval)
			return 0;        /* made after this inference started */
		if (c->val[n->out[i]->id])
			return 1;        /* already evaluated (a rule asked first) */
	}
	int64_t limit = ir_eval_limit(c->m);
	RtTensor *in[EV_MAXIN] = { 0 };
	for (int i = 0; i < n->nin; i++) {
		if (!n->in[i])
			continue;
		if (!(in[i] = (RtTensor *)sh_value(c, n->in[i])) || in[i]->n > limit)
			return 0;
	}
	for (int i = 0; i < n->nout; i++) {
		int64_t k = ir_type_numel(n->out[i]->type);
		if (n->out[i]->type.rank >= 0 && k > limit)
			return 0;
	}
	RtTensor out[EV_MAXOUT];
	memset(out, 0, sizeof out);
	for (int i = 0; i < n->nout; i++)
		out[i].dtype = n->out[i]->type.rank >= 0 ? n->out[i]->type.dt : DT_INVALID;
	RtExecOpts opts = { 0 };
	RtError e = { 0 };
	RtKernelArgs a = { in, n->nin, out, n->nout, &n->attrs, &opts, NULL };
	if (rt_kernel((RtOp)n->op)(&a, &e) < 0)
		return -1;
	int ok = 1;
	for (int i = 0; i < n->nout; i++)
		if (out[i].n > limit || !agrees(&n->out[i]->type, &out[i]))
			ok = 0;
	for (int i = 0; i < n->nout; i++) {
		RtTensor *t = ok ? rt_calloc(1, sizeof *t) : NULL;
		if (!t) {
			rt_tensor_free(&out[i]);
			continue;
		}
		*t = out[i];
		c->val[n->out[i]->id] = t;
	}
	return ok;
}

void sh_eval_free(ShapeCtx *c)
{
	if (!c->val)
		return;
	for (int i = 0; i < c->nval; i++)
		if (c->val[i]) {
			rt_tensor_free(c->val[i]);
			rt_free(c->val[i]);
		}
	rt_free(c->val);
	c->val = NULL;
}

/* Appends the reason v is not known to buf, following the first unknown input back. */
static void why(ShapeCtx *c, Value *v, char *buf, size_t nb, int depth)
{
	size_t len = strlen(buf);
	char *p = buf + len;
	size_t left = nb - len;
	if (left < 2)
		return;
	if (v->kind == V_INPUT) {
		snprintf(p, left, "'%s' is a graph input", v->name);
		return;
	}
	if (v->kind == V_PARAM) {
		snprintf(p, left, "'%s' is a parameter without compile-time data", v->name);
		return;
	}
	Node *d = v->def;
	if (!d || depth > 32) {
		snprintf(p, left, "'%s' is not known", v->name);
		return;
	}
	const char *op = ir_ops[d->op].name;
	if (d->op == OP_Shape || d->op == OP_Size) {
		snprintf(p, left, "'%s' (%s of %s) depends on symbolic dimensions; bind them", v->name, op,
			 sh_ty(c, d->in[0]->type));
		return;
	}
	if (!evaluable(d)) {
		snprintf(p, left, "'%s' is computed by %s, which is not evaluated at compile time", v->name, op);
		return;
	}
	for (int i = 0; i < d->nin; i++) {
		Value *x = d->in[i];
		if (!x || sh_value(c, x))
			continue;
		snprintf(p, left, "'%s' is computed by %s from input %d, ", v->name, op, i);
		why(c, x, buf, nb, depth + 1);
		return;
	}
	for (int i = 0; i < d->nin; i++) {
		const RtTensor *t = d->in[i] ? sh_value(c, d->in[i]) : NULL;
		if (t && t->n > ir_eval_limit(c->m)) {
			snprintf(p, left, "'%s' is computed by %s from '%s', which has %lld elements, more than "
				 "the evaluation limit %lld (--fold-limit)", v->name, op, d->in[i]->name,
				 (long long)t->n, (long long)ir_eval_limit(c->m));
			return;
		}
	}
	snprintf(p, left, "'%s' is computed by %s, which could not be evaluated (its result is too "
		 "large, symbolic or its kernel failed)", v->name, op);
}

const char *sh_why_unknown(ShapeCtx *c, Value *v, char *buf, size_t nb)
{
	buf[0] = 0;
	why(c, v, buf, nb, 0);
	return buf;
}

/* ---- If: guarded branches ---- */
/* 1 or 0 when the condition of If node f is known, -1 when not. */
static int cond_of(ShapeCtx *c, const Node *f)
{
	const RtTensor *t = f->nin > 0 ? sh_value(c, f->in[0]) : NULL;
	return t && t->n == 1 ? rt_geti(t, 0) != 0 : -1;
}

int sh_guard_skipped(ShapeCtx *c, const Node *n)
{
	for (const Node *x = n; x->guard; x = x->guard) {
		int k = cond_of(c, x->guard);    /* a folded (dead) If keeps its inputs */
		if (k >= 0 && k != x->guard_then)
			return 1;
	}
	return 0;
}

void sh_fold_ifs(ShapeCtx *c, Graph *g)
{
	int folded = 0;
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		int k = n->op == OP_If && !sh_guard_skipped(c, n) ? cond_of(c, n) : -1;
		if (k < 0)
			continue;
		n->aux = n;    /* marks a folded If for the sweep below */
		for (int i = 0; i < n->nout; i++) {
			/* Identity(chosen) takes over the output's name, so graph outputs keep theirs */
			Value *ch = n->in[(k ? 1 : 1 + n->nout) + i], *o = n->out[i];
			const char *name = o->name;
			o->name = ir_fresh_name(g, "if.folded");
			Node *id = ir_insert_node(g, n, OP_Identity, &ch, 1, &name, 1, n->loc);
			id->out[0]->type = ch->type;
			id->guard = n->guard, id->guard_then = n->guard_then;
			ir_replace_uses(g, o, id->out[0]);
		}
		folded = 1;
	}
	if (!folded)
		return;
	for (Node *n = g->last, *prev; n; n = prev) {   /* users before producers: reverse order */
		prev = n->prev;
		int unused = 1;
		for (int i = 0; i < n->nout; i++)
			unused &= n->out[i]->nuses == 0;
		if ((n->op == OP_If && n->aux == n) || (sh_guard_skipped(c, n) && unused))
			ir_remove_node(g, n);
	}
	ir_foreach_node(g, n)
		while (n->guard && n->guard->dead)
			n->guard_then = n->guard->guard_then, n->guard = n->guard->guard;
}
