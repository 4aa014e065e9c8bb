/* passes/util.c: small queries and rewrites the passes share: constant values of parameters
 * (inline literals, fills and folded data), users of a value, and replacing a node's result
 * while keeping the names of graph outputs (a graph's interface is its output names). */
#include <math.h>
#include <string.h>

#include "passes/pass.h"

const char *pass_node_name(const Node *n)
{
	return n->nout > 0 && n->out[0] ? n->out[0]->name : ir_ops[n->op].name;
}

/* Whether every element of parameter v equals x; x may be NaN only by mistake (never equal). */
int pass_const_all(Value *v, double x)
{
	double k;
	return pass_const_scalar(v, &k) && k == x;
}

int pass_const_scalar(Value *v, double *x)
{
	if (!v || v->kind != V_PARAM || !v->init)
		return 0;
	if (v->init->kind == INIT_FILL) {
		*x = v->init->a;
		return 1;
	}
	const RtTensor *t = ir_const_data(v);
	if (!t || t->n < 1)
		return 0;
	double first = rt_get(t, 0);
	for (int64_t i = 1; i < t->n; i++)
		if (rt_get(t, i) != first)
			return 0;
	*x = first;
	return 1;
}

int pass_is_output(const Value *v)
{
	const Graph *g = v->graph;
	for (int i = 0; i < g->nout; i++)
		if (g->outputs[i] == v)
			return 1;
	return 0;
}

Node *pass_single_user(Value *v)
{
	if (v->nuses != 1 || pass_is_output(v))
		return NULL;
	ir_foreach_node(v->graph, n)
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] == v)
				return n;
	return NULL;
}

int pass_replace_node(Graph *g, Node *old, Value *to)
{
	Value *from = old->out[0];
	if (pass_is_output(from)) {
		if (to->kind != V_NODE || pass_is_output(to))
			return -1;
		const char *name = to->name;
		to->name = from->name;
		from->name = name;
	}
	ir_replace_uses(g, from, to);
	if (from->nuses == 0)
		ir_remove_node(g, old);
	return 0;
}
