/* passes/fold.c: constant folding through the runtime's reference kernels.
 *
 * A node whose inputs are all constants (inline literals, fills, folded data) is evaluated
 * once at compile time with rt_kernel, the same kernel the reference interpreter runs, so a
 * folded value is exactly the value the unfolded graph computes.  Each output becomes a
 * parameter with INIT_DATA under the output's name.  Not folded, each with a remark: results
 * over the size limit (PassCtx.fold_limit elements, so a folded weight never balloons the
 * plan), symbolic shapes, graph outputs (their name is the graph's interface), calls, and nodes
 * whose kernel reports an error.  Requires inferred shapes.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "runtime/kernels.h"

#define MAXIN 16

/* The constant data of v, materialising fills of at most `limit` elements (ir/eval.c). */
static const RtTensor *const_tensor(Value *v, int64_t limit) { return ir_const_tensor(v, limit); }

/* Why n cannot be folded, or NULL when it can; in[] gets the input tensors. */
static const char *why_not(PassCtx *c, Node *n, RtTensor **in)
{
	if (n->op == OP_Call || n->nin > MAXIN || n->nout < 1)
		return "not foldable";
	for (int i = 0; i < n->nin; i++) {
		Value *v = n->in[i];
		int fill = v && v->kind == V_PARAM && v->init && v->init->kind == INIT_FILL;
		if (v && !ir_const_data(v) && !fill)
			return "";     /* not all-constant: no remark, the common case */
	}
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && !(in[i] = (RtTensor *)const_tensor(n->in[i], c->fold_limit)))
			return "an input is over the folding size limit";
	for (int i = 0; i < n->nout; i++) {
		int64_t k = ir_type_numel(n->out[i]->type);
		if (k < 0)
			return "its result has a symbolic shape";
		if (k > c->fold_limit)
			return "its result is over the folding size limit";
		if (pass_is_output(n->out[i]))
			return "its result is a graph output";
	}
	return NULL;
}

/* Replaces each output of n by a parameter holding out[i] (ownership passes to the module). */
static void install(Graph *g, Node *n, RtTensor *out)
{
	for (int i = 0; i < n->nout; i++) {
		Value *v = n->out[i];
		ParamInit *pi = arena_alloc(g->m->arena, sizeof *pi);
		RtTensor *t = arena_alloc(g->m->arena, sizeof *t);
		*t = out[i];
		pi->kind = INIT_DATA;
		pi->data = t;
		const char *name = v->name;
		v->name = ir_fresh_name(g, "folded");
		Value *p = ir_add_param(g, name, v->type, pi, n->loc);
		ir_replace_uses(g, v, p);
	}
	ir_remove_node(g, n);
}

static void fold_node(PassCtx *c, Graph *g, Node *n)
{
	RtTensor *in[MAXIN] = { 0 };
	const char *why = why_not(c, n, in);
	if (why) {
		if (*why)
			pass_remark(c, REMARK_MISSED, g, n, "did not fold %s '%s': %s", ir_ops[n->op].name,
				    pass_node_name(n), why);
		return;
	}
	if (!pass_bisect(c, n, "fold"))
		return;
	RtTensor out[8] = { 0 };
	RtExecOpts opts = { 0 };
	RtError e = { 0 };
	for (int i = 0; i < n->nout && i < 8; i++)
		out[i].dtype = n->out[i]->type.dt;
	RtKernelArgs a = { in, n->nin, out, n->nout, &n->attrs, &opts };
	if (n->nout > 8 || rt_kernel((RtOp)n->op)(&a, &e) < 0) {
		for (int i = 0; i < n->nout && i < 8; i++)
			rt_tensor_free(&out[i]);
		pass_remark(c, REMARK_MISSED, g, n, "did not fold %s '%s': the kernel failed: %s",
			    ir_ops[n->op].name, pass_node_name(n), e.msg);
		return;
	}
	pass_remark(c, REMARK_APPLIED, g, n, "folded %s '%s' to a constant", ir_ops[n->op].name, pass_node_name(n));
	install(g, n, out);
	pass_changed(c, "nodes folded");
}

int pass_fold(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next)
		for (Node *n = g->first, *next; n; n = next) {
			next = n->next;
			fold_node(c, g, n);
		}
	return 0;
}
