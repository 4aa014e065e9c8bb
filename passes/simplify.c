/* passes/simplify.c: algebraic simplification, each rule exact (bit for bit, up to the sign of
 * a zero) in the reference semantics.
 *
 * A node whose result equals one of its inputs is removed and its users read that input:
 * Identity, Dropout (inference, mask unused), x+0, 0+x, x-0, x*1, 1*x, x/1, x^1, Cast to the
 * dtype x already has, Expand to x's own shape, Transpose by the identity permutation, and
 * chains of row-major views (Reshape, Squeeze, Unsqueeze, Flatten) that end in x's own type.
 * Every rule checks that the result has exactly x's type, so broadcasting never hides in it.
 * Two rules rewrite instead: Transpose(Transpose(x, p), q) becomes one Transpose by p∘q, and
 * Reshape(view chain(x), s) reads x directly when s has no 0 entry copying an input dim, and
 * Reshape(Softmax(Flatten(x, axis=rank-1)), s) of x's own type becomes Softmax(x, axis=-1).
 * Requires inferred shapes; leaves new nodes untyped.
 */
#include <string.h>

#include "passes/pass.h"

static int same_type(const Value *a, const Value *b) { return ir_type_eq(a->type, b->type); }

/* The input of n its result equals, or NULL: the binary identities with a constant. */
static Value *binary_identity(Node *n)
{
	Value *a = n->in[0], *b = n->nin > 1 ? n->in[1] : NULL;
	switch (n->op) {
	case OP_Add:
		return pass_const_all(b, 0) ? a : pass_const_all(a, 0) ? b : NULL;
	case OP_Mul:
		return pass_const_all(b, 1) ? a : pass_const_all(a, 1) ? b : NULL;
	case OP_Sub: return pass_const_all(b, 0) ? a : NULL;
	case OP_Div:
	case OP_Pow: return pass_const_all(b, 1) ? a : NULL;
	default: return NULL;
	}
}

static int is_identity_perm(const Node *n, int rank)
{
	int k;
	const int64_t *p = rt_attr_ints(&n->attrs, "perm", &k);
	if (!p)
		return rank <= 1;
	for (int i = 0; i < k; i++)
		if ((p[i] < 0 ? p[i] + rank : p[i]) != i)
			return 0;
	return 1;
}

static int is_view(const Node *n)
{
	return n->op == OP_Reshape || n->op == OP_Squeeze || n->op == OP_Unsqueeze ||
	       n->op == OP_Flatten || n->op == OP_Identity;
}

/* The first value of the chain of views ending in n that is not itself a view's result. */
static Value *view_source(Node *n, int *len)
{
	Value *v = n->in[0];
	*len = 1;
	while (v->kind == V_NODE && is_view(v->def) && v->def->nout == 1) {
		v = v->def->in[0];
		++*len;
	}
	return v;
}

/* The input whose value n's result is, or NULL. */
static Value *forwarded(Node *n)
{
	Value *x = n->nin > 0 ? n->in[0] : NULL, *r = NULL;
	int len;
	if (!x || n->nout < 1)
		return NULL;
	switch (n->op) {
	case OP_Identity:   /* kept: a weight shard staged on the device it is pinned to (ZeRO 3's
			     * all-gather of the replicas' own shards, passes/autodiff.c) */
		r = n->annot.device && x->kind == V_NODE && x->def->op == OP_Split &&
		    rt_attr_str(&x->def->attrs, "shard", NULL) ? NULL : x;
		break;
	case OP_Dropout: r = n->nout == 1 || n->out[1]->nuses == 0 ? x : NULL; break;
	case OP_Cast:
	case OP_Expand: r = x; break;
	case OP_Transpose: r = is_identity_perm(n, x->type.rank) ? x : NULL; break;
	case OP_Reshape:
	case OP_Squeeze:
	case OP_Unsqueeze:
	case OP_Flatten: r = view_source(n, &len); break;
	default: r = binary_identity(n);
	}
	return r && same_type(r, n->out[0]) ? r : NULL;
}

/* Makes n's users read `to` instead; remarks either way. */
static void forward(PassCtx *c, Graph *g, Node *n, Value *to)
{
	const char *op = ir_ops[n->op].name, *name = pass_node_name(n), *src = to->name;
	if (!pass_bisect(c, n, "forward"))
		return;
	if (pass_replace_node(g, n, to) < 0) {
		pass_remark(c, REMARK_MISSED, g, n, "kept %s '%s' (it computes '%s'): '%s' is a graph output "
			    "and '%s' cannot take its name", op, name, to->name, name, to->name);
		return;
	}
	pass_remark(c, REMARK_APPLIED, g, n, "removed %s '%s': it computes '%s' unchanged", op, name, src);
	pass_changed(c, "nodes simplified away");
}

/* Transpose(Transpose(x, p), q) -> Transpose(x, p∘q): result axis i is x's axis p[q[i]]. */
static void merge_transposes(PassCtx *c, Node *n)
{
	Value *y = n->in[0];
	if (y->kind != V_NODE || y->def->op != OP_Transpose || y->type.rank < 1)
		return;
	int r = y->type.rank, kp, kq;
	const int64_t *p = rt_attr_ints(&y->def->attrs, "perm", &kp), *q = rt_attr_ints(&n->attrs, "perm", &kq);
	int64_t comp[IR_MAX_RANK];
	if (r > IR_MAX_RANK || !pass_bisect(c, n, "merge transposes"))
		return;
	for (int i = 0; i < r; i++) {
		int64_t qi = q ? (q[i] < 0 ? q[i] + r : q[i]) : r - 1 - i;
		int64_t pi = p ? (p[qi] < 0 ? p[qi] + r : p[qi]) : r - 1 - qi;
		comp[i] = pi;
	}
	ir_set_input(n, 0, y->def->in[0]);
	ir_set_attr_ints(n, "perm", comp, r);
	pass_changed(c, "transposes merged");
}

/* Reshape(views(x), s) -> Reshape(x, s) when s copies no input dim (no 0, or allowzero). */
static void skip_views(PassCtx *c, Node *n)
{
	int len;
	Value *src = view_source(n, &len);
	const RtTensor *s = ir_const_data(n->in[1]);
	if (len < 2 || !s)
		return;
	if (!rt_attr_int(&n->attrs, "allowzero", 0))
		for (int64_t i = 0; i < s->n; i++)
			if (rt_geti(s, i) == 0)
				return;
	if (!pass_bisect(c, n, "reshape the source"))
		return;
	ir_set_input(n, 0, src);
	pass_changed(c, "reshape chains shortened");
}

/* Reshape(Softmax(Flatten(x, axis=r-1)), s) back to x's own type -> Softmax(x, axis=-1) (and
 * LogSoftmax): the ONNX importer's pre-opset-13 form (frontend/onnx/ops.c, rank unknown at import)
 * normalises the rows of the 2-D view, which are x's last-axis rows. */
static int unflatten_softmax(PassCtx *c, Node *n)
{
	Value *sv = n->in[0];
	Node *sm = sv->kind == V_NODE ? sv->def : NULL;
	if (!sm || (sm->op != OP_Softmax && sm->op != OP_LogSoftmax) || sm->nout != 1 || sv->nuses != 1 ||
	    pass_is_output(sv) || sv->type.rank != 2)
		return 0;
	Value *fv = sm->in[0];
	Node *fl = fv->kind == V_NODE ? fv->def : NULL;
	int64_t sax = rt_attr_int(&sm->attrs, "axis", -1);
	if (!fl || fl->op != OP_Flatten || fv->nuses != 1 || pass_is_output(fv) || (sax != 1 && sax != -1))
		return 0;
	Value *x = fl->in[0];
	int64_t fax = rt_attr_int(&fl->attrs, "axis", 1);
	if (x->type.rank < 2 || (fax != x->type.rank - 1 && fax != -1) || !same_type(x, n->out[0]) ||
	    !pass_bisect(c, n, "softmax on the last axis"))
		return 0;
	ir_set_input(sm, 0, x);
	ir_set_attr_int(sm, "axis", -1);
	sv->type = x->type;
	pass_changed(c, "flattened softmaxes restored");
	forward(c, n->graph, n, sv);
	return 1;
}

static void simplify_node(PassCtx *c, Graph *g, Node *n)
{
	Value *to = forwarded(n);
	if (to)
		forward(c, g, n, to);
	else if (n->op == OP_Transpose) {
		merge_transposes(c, n);
		if ((to = forwarded(n)))        /* the two cancelled */
			forward(c, g, n, to);
	}
	else if (n->op == OP_Reshape && n->nin == 2) {
		if (!unflatten_softmax(c, n))
			skip_views(c, n);
	}
}

int pass_simplify(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next)
		for (Node *n = g->first, *next; n; n = next) {
			next = n->next;
			if (n->op != OP_Call)
				simplify_node(c, g, n);
		}
	return 0;
}
