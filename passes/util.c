/* passes/util.c: small queries and rewrites the passes share: constant values of parameters
 * (inline literals, fills and folded data), users of a value, and replacing a node's result
 * while keeping the names of graph outputs (a graph's interface is its output names), and
 * the pricing of work through the compile's target. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "runtime/plan.h"
#include "targets/precision.h"
#include "targets/target.h"

double pass_work_time(const PassCtx *c, const Device *d, const TgtWork *w)
{
	const Target *t = c->target ? c->target : tgt_for_kind(d->kind);
	return t->node_time ? t->node_time(t, c->machine, d, c->precision, w) : tgt_roofline_time(t, c->machine, d, c->precision, w);
}

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

void pass_move_graph_before(Module *m, Graph *g, Graph *before)
{
	Graph **pp = &m->graphs;
	while (*pp && *pp != g)
		pp = &(*pp)->next;
	*pp = g->next;
	for (m->last_graph = m->graphs; m->last_graph && m->last_graph->next; )
		m->last_graph = m->last_graph->next;
	for (pp = &m->graphs; *pp && *pp != before; pp = &(*pp)->next)
		;
	g->next = *pp;
	*pp = g;
	if (!g->next)
		m->last_graph = g;
}

static void clone_node(Graph *g, const Node *n)
{
	Value **in = malloc(sizeof *in * ((size_t)n->nin + 1));
	const char **names = malloc(sizeof *names * ((size_t)n->nout + 1));
	if (!in || !names)
		abort();
	for (int i = 0; i < n->nin; i++)
		in[i] = n->in[i] ? n->in[i]->aux : NULL;
	for (int i = 0; i < n->nout; i++)
		names[i] = n->out[i]->name;
	Node *c = ir_add_node(g, n->op, in, n->nin, names, n->nout, n->loc);
	for (int i = 0; i < n->attrs.n; i++)
		ir_set_attr(c, &n->attrs.a[i]);
	c->callee = n->callee;
	c->repeat = n->repeat;
	c->annot = n->annot;
	for (int i = 0; i < n->nout; i++)
		n->out[i]->aux = c->out[i];
	free(in);
	free(names);
}

Graph *pass_clone_graph(Module *m, Graph *src, const char *name, Graph *before)
{
	Graph *g = ir_graph_new(m, arena_strdup(m->arena, name), src->loc);
	for (int i = 0; i < src->nin; i++)
		src->inputs[i]->aux = ir_add_input(g, src->inputs[i]->name, src->inputs[i]->type, src->inputs[i]->loc);
	for (int i = 0; i < src->nparams; i++) {
		Value *p = src->params[i];
		p->aux = ir_add_param(g, p->name, p->type, p->init, p->loc);
	}
	ir_foreach_node(src, n)
		clone_node(g, n);
	for (int i = 0; i < src->nout; i++)
		ir_add_output(g, src->outputs[i]->aux);
	g->out_decl = src->out_decl;
	ir_foreach_node(src, n)
		for (int i = 0; i < n->nout; i++)
			n->out[i]->aux = NULL;
	for (int i = 0; i < src->nin; i++)
		src->inputs[i]->aux = NULL;
	for (int i = 0; i < src->nparams; i++)
		src->params[i]->aux = NULL;
	pass_move_graph_before(m, g, before);
	return g;
}

/* Bytes weight input i of node n takes on the device: its stored format's when the target keeps
 * it encoded (a GPU stores the B operand of an FP8 or MX/NVFP4 matrix product at that format:
 * targets/precision.h prec_weight_format), else its declared size. */
int64_t pass_weight_bytes(const PassCtx *c, const Node *n, int i)
{
	const Value *v = n->in[i];
	int64_t ne = ir_type_numel(v->type);
	int64_t b = ne < 0 || v->type.dt == DT_INVALID ? 0 : rt_dtype_bytes(v->type.dt, ne);
	const Precision *pr = c->precision;
	int gmm = n->op == OP_GroupedMatMul;
	if (!pr || i != (gmm ? 2 : 1) || n->nin < 2 || (n->op != OP_MatMul && n->op != OP_Gemm && !gmm) || !n->in[0])
		return b;
	const Value *a = n->in[0];
	int fp8 = rt_dtypes[a->type.dt].bits == 8 && rt_dtypes[a->type.dt].kind == K_FLOAT &&
		  rt_dtypes[v->type.dt].bits == 8 && rt_dtypes[v->type.dt].kind == K_FLOAT;
	const char *f = prec_weight_format(pr, pr->dev, rt_attr_str(&n->attrs, "precision", NULL), fp8);
	int64_t dims[IR_MAX_RANK], q = -1;
	int r = v->type.rank, known = f && r >= 0 && r <= IR_MAX_RANK;
	for (int k = 0; known && k < r; k++)
		known = dim_isconst(v->type.dims[k]), dims[k] = v->type.dims[k].k;
	if (known)
		q = plan_format_bytes(f, v->type.dt, r, dims);
	return q >= 0 ? q : b;
}

/* A weight's load-time chain from its reader n (Transpose, Cast, Quantize, each read only by the
 * next, as the quantization pass builds them): the bytes of the last Quantize's result, the
 * format the weight is kept in (nvfp4: 4.5 bits an element), or -1 when there is none. */
static int64_t quantized_bytes(const Node *n)
{
	int64_t b = -1;
	for (int hops = 0; n && hops < 8; hops++) {
		if (n->op != OP_Transpose && n->op != OP_Cast && n->op != OP_Quantize)
			break;
		if (n->op == OP_Quantize && n->nout >= 1) {
			int64_t k = ir_type_numel(n->out[0]->type);
			b = k < 0 || n->out[0]->type.dt == DT_INVALID ? b : rt_dtype_bytes(n->out[0]->type.dt, k);
		}
		const Value *o = n->nout == 1 ? n->out[0] : NULL;
		const Node *next = NULL;
		for (const Node *q = n->next; o && o->nuses == 1 && q && !next; q = q->next)
			for (int j = 0; j < q->nin && !next; j++)
				next = q->in[j] == o ? q : NULL;
		n = next;
	}
	return b;
}

int64_t pass_graph_weight_bytes(const PassCtx *c, const Graph *g, int64_t mult, int depth)
{
	int64_t w = 0;
	ir_foreach_node(g, n) {
		if (n->op == OP_Call && n->callee && depth < 16)   /* and the parameters it is passed (RoPE tables) */
			w += pass_graph_weight_bytes(c, n->callee, mult * (n->repeat > 0 ? n->repeat : 1), depth + 1);
		for (int i = 0; i < n->nin; i++) {
			const Value *v = n->in[i];
			if (!v || v->kind != V_PARAM || (v->init && v->init->inline_lit))
				continue;
			int seen = 0;
			for (const Node *q = g->first; q != n && !seen; q = q->next)
				for (int j = 0; j < q->nin && !seen; j++)
					seen = q->in[j] == v;
			for (int j = 0; j < i && !seen; j++)
				seen = n->in[j] == v;
			int64_t q = seen ? -1 : quantized_bytes(n);
			if (!seen)
				w += mult * (q >= 0 ? q : pass_weight_bytes(c, n, i));
		}
	}
	return w;
}
