/* passes/fold.c: constant folding through the runtime's reference kernels.
 *
 * A node whose inputs are all constants (inline literals, fills, folded data) is evaluated
 * once at compile time with rt_kernel, the same kernel the reference interpreter runs, so a
 * folded value is exactly the value the unfolded graph computes; so is a Shape or Size of a
 * value whose shape is static and final (ONNX exporters compute reshape targets from Shape at run
 * time: PP-OCR's recogniser has 30 such Shape/Cast/Slice/Concat kernels; not where a later pass
 * re-shapes the graph: partition over several devices, phases, micro-batches).  Each output becomes a
 * parameter with INIT_DATA under the output's name.  Not folded, each with a remark: results
 * over the size limit (PassCtx.fold_limit elements, so a folded weight never balloons the
 * plan), symbolic shapes, graph outputs (their name is the graph's interface), calls, and nodes
 * whose kernel reports an error.  Requires inferred shapes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "runtime/kernels.h"
#include "targets/target.h"

#define MAXIN 16

/* The constant data of v, materialising fills of at most `limit` elements (ir/eval.c). */
static const RtTensor *const_tensor(Value *v, int64_t limit) { return ir_const_tensor(v, limit); }

/* Whether the values' shapes are final once inferred: no later pass re-shapes the graph (a
 * machine of one device without --tp/--pp/--ep, so partition splits nothing; no serving or
 * training phase, no disaggregation's micro-batches, which all cut batch, heads or tokens
 * after canonicalize).  Only then may a Shape fold into a constant. */
static int shapes_final(const PassCtx *c)
{
	if (c->phase || c->tp > 1 || c->pp > 1 || c->ep > 1 || c->microbatches > 1)
		return 0;
	double ndev = 0;
	for (int i = 0; c->machine && i < c->machine->ndevs; i++)
		if (!c->machine->devs[i].is_host)
			ndev += num_has(&c->machine->devs[i].count) ? c->machine->devs[i].count.v : 1;
	return ndev <= 1;
}

/* Shape and Size read only their input's type: of a value whose shape is static, hdr becomes a
 * data-less tensor of that shape (the kernels read dims and n only) and 1 is returned. */
static int shape_header(const PassCtx *c, const Node *n, RtTensor *hdr)
{
	if ((n->op != OP_Shape && n->op != OP_Size) || n->nin != 1 || !n->in[0] || n->in[0]->type.rank > RT_MAX_RANK ||
	    !shapes_final(c))
		return 0;
	Type t = n->in[0]->type;
	*hdr = (RtTensor){ .dtype = t.dt, .rank = t.rank, .n = 1, .tensor_scale = 1 };
	for (int i = 0; i < t.rank; i++) {
		if (!dim_isconst(t.dims[i]))
			return 0;
		hdr->dims[i] = t.dims[i].k;
		hdr->n *= t.dims[i].k;
	}
	return 1;
}

/* Why n cannot be folded, or NULL when it can; in[] gets the input tensors (hdr: the data-less
 * input of a Shape or Size of a static shape). */
static const char *why_not(PassCtx *c, Node *n, RtTensor **in, RtTensor *hdr)
{
	if (n->op == OP_Call || n->nin > MAXIN || n->nout < 1)
		return "not foldable";
	if (shape_header(c, n, hdr))
		in[0] = hdr;
	for (int i = 0; i < n->nin && in[0] != hdr; i++) {
		Value *v = n->in[i];
		int fill = v && v->kind == V_PARAM && v->init && v->init->kind == INIT_FILL;
		if (v && !ir_const_data(v) && !fill)
			return "";     /* not all-constant: no remark, the common case */
	}
	for (int i = 0; i < n->nin && in[0] != hdr; i++)
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
	RtTensor *in[MAXIN] = { 0 }, hdr;
	const char *why = why_not(c, n, in, &hdr);
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
	RtKernelArgs a = { in, n->nin, out, n->nout, &n->attrs, &opts, NULL };
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

/* ---- Conv + BatchNormalization ---- */

/* A constant f32/f64 parameter of exactly n elements, or NULL. */
static const RtTensor *float_const(Value *v, int64_t n)
{
	const RtTensor *t = v && v->kind == V_PARAM ? ir_const_tensor(v, n) : NULL;
	if (!t || t->n != n || (t->dtype != DT_F32 && t->dtype != DT_F64))
		return NULL;
	return t;
}

/* A new parameter named after `base` holding t (ownership passes to the module). */
static Value *new_const(Graph *g, const char *base, Type ty, RtTensor *t, Loc loc)
{
	ParamInit *pi = arena_alloc(g->m->arena, sizeof *pi);
	RtTensor *d = arena_alloc(g->m->arena, sizeof *d);
	*d = *t;
	pi->kind = INIT_DATA;
	pi->data = d;
	return ir_add_param(g, ir_fresh_name(g, base), ty, pi, loc);
}

/* BatchNormalization(Conv(x, W[, b]), scale, B, mean, var) in inference mode, with every operand
 * but x constant and the Conv read only by it, becomes Conv(x, W', b') with, per output channel
 * o, s = scale[o] / sqrt(var[o] + epsilon), W'[o] = W[o] * s and b'[o] = (b[o] - mean[o]) * s
 * + B[o] (b = 0 without a bias): the folding every inference engine does (onnxruntime's
 * ConvBNFusion, TensorRT).  Computed in double with one rounding to W's dtype (f32 or f64), so
 * the result is the same on every machine (no BLAS); it differs from the two-step graph only by
 * that rounding (the f32 reference rounds after the Conv and again after the normalisation). */
static void fold_conv_bn(PassCtx *c, Graph *g, Node *bn)
{
	Value *y = bn->in[0];
	Node *cv = y && y->kind == V_NODE ? y->def : NULL;
	if (!cv || cv->op != OP_Conv || cv->nout != 1 || cv->nin < 2 || bn->nin < 5 || rt_attr_int(&bn->attrs, "training_mode", 0))
		return;
	for (int i = 1; i < bn->nout; i++)
		if (bn->out[i] && bn->out[i]->nuses)
			return;
	Value *w = cv->in[1];
	if (w->type.rank < 3 || !dim_isconst(w->type.dims[0]) || ir_type_numel(w->type) < 1)
		return;
	int64_t C = w->type.dims[0].k, nw = ir_type_numel(w->type), per = nw / C;
	const RtTensor *W = float_const(w, nw), *B0 = cv->nin > 2 && cv->in[2] ? float_const(cv->in[2], C) : NULL;
	const RtTensor *sc = float_const(bn->in[1], C), *bb = float_const(bn->in[2], C), *mu = float_const(bn->in[3], C),
		       *var = float_const(bn->in[4], C);
	const char *why = NULL;
	if (!W || !sc || !bb || !mu || !var || (cv->nin > 2 && cv->in[2] && !B0))
		why = "the Conv weight, its bias or a BatchNormalization statistic is not a constant f32/f64 tensor";
	else if (y->nuses != 1 || pass_is_output(y))
		why = "the Conv's result has other readers";
	else if (cv->annot.device != bn->annot.device)
		why = "they are on different devices";
	if (why) {
		pass_remark(c, REMARK_MISSED, g, bn, "did not fold BatchNormalization '%s' into Conv '%s': %s",
			    pass_node_name(bn), pass_node_name(cv), why);
		return;
	}
	if (!pass_bisect(c, bn, "fold BatchNormalization into Conv"))
		return;
	double eps = rt_attr_float(&bn->attrs, "epsilon", 1e-5);
	RtTensor nw_t = { 0 }, nb_t = { 0 };
	int64_t wd[8], bd[1] = { C };
	for (int i = 0; i < w->type.rank && i < 8; i++)
		wd[i] = w->type.dims[i].k;
	RtError e = { 0 };
	if (rt_tensor_alloc(&nw_t, W->dtype, w->type.rank, wd, &e) < 0 || rt_tensor_alloc(&nb_t, W->dtype, 1, bd, &e) < 0) {
		rt_tensor_free(&nw_t);
		return;
	}
	for (int64_t o = 0; o < C; o++) {
		double s = rt_get(sc, o) / sqrt(rt_get(var, o) + eps);
		for (int64_t k = 0; k < per; k++)
			rt_set(&nw_t, o * per + k, rt_get(W, o * per + k) * s);
		rt_set(&nb_t, o, ((B0 ? rt_get(B0, o) : 0.0) - rt_get(mu, o)) * s + rt_get(bb, o));
	}
	Type bt = ir_type(g->m, W->dtype, 1, &w->type.dims[0]);
	Value *in[3] = { cv->in[0], new_const(g, w->name, w->type, &nw_t, w->loc),
			 new_const(g, cv->in[2] ? cv->in[2]->name : "bias", bt, &nb_t, bn->loc) };
	in[1]->type = w->type;
	const char *name = bn->out[0]->name;
	bn->out[0]->name = ir_fresh_name(g, "bn");
	Node *nc = ir_insert_node(g, bn, OP_Conv, in, 3, &name, 1, cv->loc);
	for (int i = 0; i < cv->attrs.n; i++)
		ir_set_attr(nc, &cv->attrs.a[i]);
	nc->annot = cv->annot;
	nc->out[0]->type = bn->out[0]->type;
	ir_replace_uses(g, bn->out[0], nc->out[0]);
	ir_remove_node(g, bn);
	ir_remove_node(g, cv);
	pass_remark(c, REMARK_APPLIED, g, nc, "folded BatchNormalization into Conv '%s' (weights and bias rescaled per "
		    "output channel at compile time)", name);
	pass_changed(c, "BatchNormalization folded into Conv");
}

int pass_fold(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next)
		for (Node *n = g->first, *next; n; n = next) {
			next = n->next;
			if (n->op == OP_BatchNormalization) {
				fold_conv_bn(c, g, n);
				continue;
			}
			fold_node(c, g, n);
		}
	return 0;
}
