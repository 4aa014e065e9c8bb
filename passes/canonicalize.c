/* passes/canonicalize.c: dead code elimination, common subexpression elimination, and the
 * canonicalize pass that runs every canonicalising rewrite to a fixpoint.
 *
 * dce removes nodes none of whose outputs is read (graph outputs count as reads; a callee's
 * outputs are always read) and parameters nothing reads.  cse merges a node into an earlier
 * one with the same operator, the same inputs (for commutative operators as a multiset), equal
 * attributes (in any order), the same callee and the same annotations; parameters with equal
 * constant data (the inline literals of Reshape and Unsqueeze, say) are merged first, so nodes
 * that read equal constants become equal too.  canonicalize repeats simplify, recognize, fold,
 * cse and dce, re-inferring shapes in between, until a round changes nothing (at most 16).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

/* ---- dead code elimination ---- */
static int node_is_dead(const Node *n)
{
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]->nuses > 0)
			return 0;
	return 1;
}

/* Removes params no one reads, keeping the order of the others. */
static void dce_params(Graph *g, PassCtx *c)
{
	int k = 0;
	for (int i = 0; i < g->nparams; i++) {
		Value *p = g->params[i];
		if (p->nuses == 0 && pass_bisect(c, NULL, "remove unused parameter")) {
			if (p->init && p->init->data)
				rt_tensor_free(p->init->data);
			pass_changed(c, "parameters removed");
			continue;
		}
		g->params[k++] = p;
	}
	g->nparams = k;
}

static void dce_graph(Graph *g, PassCtx *c)
{
	for (Node *n = g->last, *prev; n; n = prev) {
		prev = n->prev;
		if (!node_is_dead(n) || !pass_bisect(c, n, "remove dead node"))
			continue;
		ir_remove_node(g, n);
		pass_changed(c, "nodes removed");
	}
	dce_params(g, c);
}

int pass_dce(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next)
		dce_graph(g, c);
	return 0;
}

/* ---- common subexpressions ---- */
static int attr_eq(const Attr *a, const Attr *b)
{
	if (a->kind != b->kind || strcmp(a->name, b->name))
		return 0;
	switch (a->kind) {
	case ATTR_INT: return a->i == b->i;
	case ATTR_FLOAT: return a->f == b->f || (a->f != a->f && b->f != b->f);
	case ATTR_STRING: return strcmp(a->s ? a->s : "", b->s ? b->s : "") == 0;
	case ATTR_INTS: return a->n == b->n && !memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints);
	case ATTR_FLOATS: return a->n == b->n && !memcmp(a->floats, b->floats, (size_t)a->n * sizeof *a->floats);
	}
	return 0;
}

static int attrs_eq(const Attrs *a, const Attrs *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++) {
		const Attr *o = rt_attr_find(b, a->a[i].name);
		if (!o || !attr_eq(&a->a[i], o))
			return 0;
	}
	return 1;
}

static int annot_eq(const Annot *a, const Annot *b)
{
	int dev = a->device == b->device || (a->device && b->device && !strcmp(a->device, b->device));
	return dev && a->precision == b->precision && a->nofuse == b->nofuse;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (Value *const *)a, y = (uintptr_t) * (Value *const *)b;
	return x < y ? -1 : x > y;
}

/* n's inputs in a canonical order: sorted for commutative operators. */
static void canon_inputs(const Node *n, Value **v)
{
	memcpy(v, n->in, (size_t)n->nin * sizeof *v);
	if (ir_ops[n->op].flags & F_COMMUTE)
		qsort(v, (size_t)n->nin, sizeof *v, cmp_ptr);
}

static int nodes_eq(const Node *a, const Node *b)
{
	if (a->op != b->op || a->nin != b->nin || a->nout != b->nout || a->callee != b->callee ||
	    a->repeat != b->repeat || !annot_eq(&a->annot, &b->annot) || !attrs_eq(&a->attrs, &b->attrs))
		return 0;
	Value *x[a->nin ? a->nin : 1], *y[b->nin ? b->nin : 1];
	canon_inputs(a, x);
	canon_inputs(b, y);
	return !memcmp(x, y, (size_t)a->nin * sizeof *x);
}

static uint64_t node_hash(const Node *n)
{
	Value *v[n->nin ? n->nin : 1];
	canon_inputs(n, v);
	uint64_t h = 1469598103934665603ull ^ (uint64_t)n->op;
	for (int i = 0; i < n->nin; i++)
		h = (h ^ (uint64_t)(uintptr_t)v[i]) * 1099511628211ull;
	return h ^ (uint64_t)n->attrs.n;
}

/* Replaces the outputs of dup by those of keep; 0, or -1 when an output name is in the way. */
static int merge_node(Graph *g, Node *keep, Node *dup)
{
	for (int i = 0; i < dup->nout; i++)
		if (pass_is_output(dup->out[i]) && (dup->nout > 1 || pass_is_output(keep->out[i])))
			return -1;
	if (dup->nout == 1)
		return pass_replace_node(g, dup, keep->out[0]);
	for (int i = 0; i < dup->nout; i++)
		ir_replace_uses(g, dup->out[i], keep->out[i]);
	ir_remove_node(g, dup);
	return 0;
}

typedef struct Table {
	Node **slot;
	uint64_t mask;
} Table;

/* The earlier node equal to n, or NULL after entering n. */
static Node *table_find_or_add(Table *t, Node *n)
{
	uint64_t i = node_hash(n) & t->mask;
	for (; t->slot[i]; i = (i + 1) & t->mask)
		if (nodes_eq(t->slot[i], n))
			return t->slot[i];
	t->slot[i] = n;
	return NULL;
}

static void cse_graph(Graph *g, PassCtx *c)
{
	uint64_t cap = 16;
	while (cap < 2 * (uint64_t)g->nnodes + 2)
		cap *= 2;
	Table t = { calloc(cap, sizeof *t.slot), cap - 1 };
	if (!t.slot)
		abort();
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		Node *keep = n->nout > 0 ? table_find_or_add(&t, n) : NULL;
		if (!keep)
			continue;
		if (!pass_bisect(c, n, "merge equal node"))
			continue;
		if (merge_node(g, keep, n) < 0) {
			pass_remark(c, REMARK_MISSED, g, n, "kept %s '%s' equal to '%s': both are graph outputs",
				    ir_ops[n->op].name, pass_node_name(n), pass_node_name(keep));
			continue;
		}
		pass_changed(c, "nodes merged (CSE)");
	}
	free(t.slot);
}

/* Whether constant parameters a and b hold equal data of equal types. */
static int params_eq(Value *a, Value *b)
{
	const RtTensor *x = ir_const_data(a), *y = ir_const_data(b);
	if (!x || !y || !ir_type_eq(a->type, b->type) || x->dtype != y->dtype || x->n != y->n)
		return 0;
	for (int64_t i = 0; i < x->n; i++)
		if (rt_get(x, i) != rt_get(y, i))
			return 0;
	return 1;
}

/* Whether parameter v is a value rather than a weight: an inline literal, a literal list, or data
 * held in memory (ONNX constants, folded results).  Declared weights (fill, random, file
 * initialisers) and the state a training step carries (AdamW's step, masters and moments, which
 * share their weight's initialiser) are never merged, even when their initial values are equal:
 * a checkpoint or the next step gives each its own values. */
static int param_is_value(const Value *v)
{
	return v->init && (v->init->inline_lit || v->init->kind == INIT_LITERAL || v->init->kind == INIT_DATA);
}

/* Merges equal small constant parameters (at most 64 elements: shapes, axes, scalars). */
static void cse_params(Graph *g, PassCtx *c)
{
	for (int i = 0; i < g->nparams; i++) {
		Value *a = g->params[i];
		const RtTensor *x = ir_const_data(a);
		if (!x || x->n > 64 || a->nuses == 0 || !param_is_value(a))
			continue;
		for (int j = i + 1; j < g->nparams; j++) {
			Value *b = g->params[j];
			if (b->nuses == 0 || pass_is_output(b) || !param_is_value(b) || !params_eq(a, b) ||
			    !pass_bisect(c, NULL, "merge equal constant"))
				continue;
			ir_replace_uses(g, b, a);
			pass_changed(c, "constants merged");
		}
	}
}

int pass_cse(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next) {
		cse_params(g, c);
		cse_graph(g, c);
	}
	return 0;
}

/* ---- the fixpoint ---- */
int pass_canonicalize(Module *m, PassCtx *c)
{
	static PassFn const steps[] = { pass_simplify, pass_recognize, pass_fold, pass_cse, pass_dce };
	for (int round = 0; round < 16; round++) {
		long before = c->changes;
		for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			int e = steps[i](m, c);
			if (!e)
				e = ir_infer_shapes(m);
			if (e)
				return e;
		}
		if (c->changes == before)
			break;
	}
	return 0;
}
