/* passes/fuse.c: target-independent fusion: which nodes a target may run as one kernel.
 *
 * A fusion group is recorded in attributes, the constituent nodes stay: every member gets
 * `fusion_group=K` (an integer unique in its graph) and the group's anchor also gets
 * `fusion="kind"`.  So a fused graph prints, parses and runs in the reference interpreter
 * exactly as before (kernels ignore the two attributes), and a target that has a fused kernel
 * for a kind launches it once, at the position of the group's last member, instead of the
 * members.  Kinds, tried in this order (a node joins at most one group):
 *   swiglu           MatMul(x, Wg), MatMul(x, Wu) -> SwiGLU           anchor: the SwiGLU
 *   norm_residual    Add(a, b) -> LayerNormalization | RMSNormalization anchor: the norm; the
 *                    sum may have other readers: the fused kernel writes it too (vLLM's
 *                    fused_add_rms_norm)
 *   matmul_epilogue  MatMul | Gemm -> up to 4 elementwise epilogue ops (F_EPI: bias Add,
 *                    activation, scale, residual Add)            anchor: the MatMul
 *   conv_epilogue    Conv -> the same epilogue ops (a CNN's bias, Relu/HardSwish/Sigmoid and
 *                    the residual Add of a bottleneck block)    anchor: the Conv
 *   elementwise      chains of elementwise nodes                  anchor: the last one
 * A node joins its producer's group only when the producer's result has no other reader
 * (except the norm_residual sum), neither node is @nofuse, both are on the same @device, and
 * the node does not broadcast the producer's result to a larger shape.  Every such refusal is
 * a remark saying why.  Members of a group form a convex set: only the group's last value (and
 * the norm_residual sum) leaves it.  Requires inferred shapes.
 */
#include <string.h>

#include "passes/pass.h"

#define MAXEPI 4

static int grouped(const Node *n) { return rt_attr_find(&n->attrs, "fusion_group") != NULL; }

static const char *devname(const Node *n) { return n->annot.device ? n->annot.device : "(default)"; }

static int same_device(const Node *a, const Node *b)
{
	return a->annot.device == b->annot.device ||
	       (a->annot.device && b->annot.device && !strcmp(a->annot.device, b->annot.device));
}

/* The largest fusion_group in g, so new groups get fresh numbers. */
static int64_t max_group(const Graph *g)
{
	int64_t k = 0;
	ir_foreach_node(g, n) {
		int64_t v = rt_attr_int(&n->attrs, "fusion_group", 0);
		k = v > k ? v : k;
	}
	return k;
}

static int same_shape(Type a, Type b)
{
	if (a.rank != b.rank)
		return 0;
	for (int i = 0; i < a.rank; i++)
		if (!dim_eq(a.dims[i], b.dims[i]))
			return 0;
	return 1;
}

/* Why `next` may not join the group of `prev`, whose result it reads; NULL when it may. */
static const char *why_not(const Node *prev, const Node *next, char *buf, size_t n)
{
	if (prev->annot.nofuse || next->annot.nofuse)
		snprintf(buf, n, "'%s' is @nofuse", pass_node_name(prev->annot.nofuse ? prev : next));
	else if (!same_device(prev, next))
		snprintf(buf, n, "'%s' is on device %s, '%s' on %s", pass_node_name(next), devname(next),
			 pass_node_name(prev), devname(prev));
	else if (grouped(next))
		snprintf(buf, n, "'%s' is already in fusion group %lld", pass_node_name(next),
			 (long long)rt_attr_int(&next->attrs, "fusion_group", 0));
	else if (next->nout != 1)
		snprintf(buf, n, "'%s' has %d results", pass_node_name(next), next->nout);
	else if (!same_shape(next->out[0]->type, prev->out[0]->type))
		snprintf(buf, n, "'%s' broadcasts '%s' to a larger shape", pass_node_name(next), pass_node_name(prev));
	else if (next->out[0]->type.dt != prev->out[0]->type.dt)   /* same shape: only the dtype differs */
		snprintf(buf, n, "'%s' changes the dtype of '%s' (%s to %s)", pass_node_name(next), pass_node_name(prev),
			 rt_dtype_name(prev->out[0]->type.dt), rt_dtype_name(next->out[0]->type.dt));
	else
		return NULL;
	return buf;
}

/* The single reader of prev's result, or NULL; when there are several, remarks on the first
 * one that could have been an epilogue (unless quiet). */
static Node *sole_reader(PassCtx *c, Node *prev, const Node *anchor, int quiet)
{
	Value *v = prev->out[0];
	Node *u = pass_single_user(v);
	if (u || quiet || v->nuses < 1)
		return u;
	ir_foreach_node(prev->graph, r)
		for (int i = 0; i < r->nin; i++)
			if (r->in[i] == v && (ir_ops[r->op].flags & F_EPI)) {
				pass_remark(c, REMARK_MISSED, r->graph, r, "did not fuse %s '%s' into %s '%s': "
					    "'%s' has %d users%s", ir_ops[r->op].name, pass_node_name(r),
					    ir_ops[anchor->op].name, pass_node_name(anchor), v->name,
					    v->nuses, pass_is_output(v) ? " (it is a graph output)" : "");
				return NULL;
			}
	return NULL;
}

typedef struct Group {
	Node *m[MAXEPI + 4];
	int n;
} Group;

/* Stamps the group's members and its anchor; remarks what was fused. */
static void commit(PassCtx *c, Group *gr, Node *anchor, const char *kind)
{
	Graph *g = anchor->graph;
	int64_t id = max_group(g) + 1;
	char list[512] = "";
	size_t len = 0;
	for (int i = 0; i < gr->n; i++) {
		ir_set_attr_int(gr->m[i], "fusion_group", id);
		if (gr->m[i] != anchor && len < sizeof list - 1)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s '%s'", len ? ", " : "",
						ir_ops[gr->m[i]->op].name, pass_node_name(gr->m[i]));
	}
	ir_set_attr_str(anchor, "fusion", kind);
	pass_remark(c, REMARK_APPLIED, g, anchor, "fused %s into %s '%s' (%s, group %lld)", list,
		    ir_ops[anchor->op].name, pass_node_name(anchor), kind, (long long)id);
	pass_stat(c, kind, 1);
	pass_stat(c, "nodes fused", gr->n - 1);
}

/* ---- swiglu ---- */
static void fuse_swiglu(PassCtx *c, Node *s)
{
	Node *a = s->in[0]->kind == V_NODE ? s->in[0]->def : NULL, *b = s->in[1]->kind == V_NODE ? s->in[1]->def : NULL;
	char buf[256];
	if (!a || !b || a->op != OP_MatMul || b->op != OP_MatMul || a->in[0] != b->in[0] || grouped(a) || grouped(b))
		return;
	const char *why = why_not(a, s, buf, sizeof buf);
	if (!why)
		why = why_not(b, s, buf, sizeof buf);
	if (!why && (!pass_single_user(a->out[0]) || !pass_single_user(b->out[0])))
		why = "a projection has other users";
	if (why) {
		pass_remark(c, REMARK_MISSED, s->graph, s, "did not fuse SwiGLU '%s' with its projections: %s",
			    pass_node_name(s), why);
		return;
	}
	if (!pass_bisect(c, s, "fuse swiglu"))
		return;
	Group gr = { { a, b, s }, 3 };
	commit(c, &gr, s, "swiglu");
}

/* ---- norm + residual ---- */
static void fuse_norm_residual(PassCtx *c, Node *nrm)
{
	Value *x = nrm->in[0];
	Node *add = x->kind == V_NODE ? x->def : NULL;
	char buf[256];
	if (!add || add->op != OP_Add || grouped(add))
		return;
	const char *why = why_not(add, nrm, buf, sizeof buf);
	if (!why && !ir_type_eq(add->in[0]->type, add->in[1]->type))
		why = "the Add broadcasts (a bias, not a residual)";
	if (why) {
		pass_remark(c, REMARK_MISSED, nrm->graph, nrm, "did not fuse residual Add '%s' into %s '%s': %s",
			    pass_node_name(add), ir_ops[nrm->op].name, pass_node_name(nrm), why);
		return;
	}
	if (!pass_bisect(c, nrm, "fuse norm + residual"))
		return;
	Group gr = { { add, nrm }, 2 };
	commit(c, &gr, nrm, "norm_residual");
}

/* ---- matmul epilogues ---- */
static int is_epilogue(const Node *n) { return (ir_ops[n->op].flags & F_EPI) && n->op != OP_SwiGLU; }

static void fuse_epilogue(PassCtx *c, Node *mm)
{
	int conv = mm->op == OP_Conv;
	Group gr = { { mm }, 1 };
	Node *prev = mm;
	char buf[256];
	while (gr.n <= MAXEPI) {
		Node *u = sole_reader(c, prev, mm, gr.n > 1);
		if (!u || !is_epilogue(u))
			break;
		const char *why = why_not(prev, u, buf, sizeof buf);
		if (why) {
			pass_remark(c, REMARK_MISSED, u->graph, u, "did not fuse %s '%s' into %s '%s': %s",
				    ir_ops[u->op].name, pass_node_name(u), ir_ops[mm->op].name, pass_node_name(mm), why);
			break;
		}
		gr.m[gr.n++] = prev = u;
	}
	if (gr.n > 1 && pass_bisect(c, mm, conv ? "fuse conv epilogue" : "fuse matmul epilogue"))
		commit(c, &gr, mm, conv ? "conv_epilogue" : "matmul_epilogue");
}

/* ---- elementwise chains ---- */
static void fuse_chain(PassCtx *c, Node *first)
{
	Group gr = { { first }, 1 };
	Node *prev = first;
	char buf[256];
	while (gr.n < MAXEPI + 4) {
		Node *u = pass_single_user(prev->out[0]);
		if (!u || !(ir_ops[u->op].flags & F_ELEM) || why_not(prev, u, buf, sizeof buf))
			break;
		gr.m[gr.n++] = prev = u;
	}
	if (gr.n > 1 && pass_bisect(c, prev, "fuse elementwise chain"))
		commit(c, &gr, prev, "elementwise");
}

/* Visits the nodes of g with `fn` when `want` accepts them and they are not grouped yet. */
static void each(PassCtx *c, Graph *g, int (*want)(const Node *), void (*fn)(PassCtx *, Node *))
{
	ir_foreach_node(g, n)
		if (want(n) && !grouped(n) && n->nout == 1)
			fn(c, n);
}

static int is_swiglu(const Node *n) { return n->op == OP_SwiGLU; }
static int is_norm(const Node *n) { return n->op == OP_LayerNormalization || n->op == OP_RMSNormalization; }
static int is_mm(const Node *n) { return n->op == OP_MatMul || n->op == OP_Gemm || n->op == OP_Conv; }

/* A chain starts at an elementwise node whose producer could not take it. */
static int is_chain_start(const Node *n)
{
	if (!(ir_ops[n->op].flags & F_ELEM))
		return 0;
	for (int i = 0; i < n->nin; i++) {
		Value *v = n->in[i];
		if (v && v->kind == V_NODE && !grouped(v->def) && (ir_ops[v->def->op].flags & F_ELEM) &&
		    pass_single_user(v) == n)
			return 0;
	}
	return 1;
}

int pass_fuse(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next) {
		each(c, g, is_swiglu, fuse_swiglu);
		each(c, g, is_norm, fuse_norm_residual);
		each(c, g, is_mm, fuse_epilogue);
		each(c, g, is_chain_start, fuse_chain);
	}
	return 0;
}
