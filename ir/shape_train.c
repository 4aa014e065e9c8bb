/* ir/shape_train.c: shape rules of the training operators (runtime/kernels/train.c, the
 * autodiff pass passes/autodiff.c): each gradient has the type of what it differentiates. */
#include <string.h>

#include "ir/shape_int.h"

/* Inputs a and b of n have one type (a gradient and the value it belongs to). */
static int same(ShapeCtx *c, Node *n, int a, int b)
{
	if (!ir_type_eq(n->in[a]->type, n->in[b]->type))
		return sh_err(c, n, "input %d is %s but input %d is %s", a, sh_ty(c, n->in[a]->type), b,
			      sh_ty(c, n->in[b]->type));
	return 0;
}

/* SoftmaxCrossEntropyLossGrad(dL, S[N, C], T[N]) -> dS of S's type. */
int shape_sceloss_grad(ShapeCtx *c, Node *n)
{
	Type s = n->in[1]->type, t = n->in[2]->type;
	if (sh_want_rank(c, n, 1, "scores", 2) < 0 || sh_want_int(c, n, 2, "targets") < 0 ||
	    sh_want_rank(c, n, 2, "targets", 1) < 0)
		return -1;
	if (!dim_eq(s.dims[0], t.dims[0]))
		return sh_err(c, n, "targets %s do not match scores %s", sh_ty(c, t), sh_ty(c, s));
	if (ir_type_numel(n->in[0]->type) != 1)
		return sh_err(c, n, "dL must hold one value, got %s", sh_ty(c, n->in[0]->type));
	return sh_set_type(c, n, 0, s);
}

/* EmbeddingGrad(dY[..., D], Ids[...]) {num_rows=V} -> dTable[V, D] in dY's dtype. */
int shape_embedding_grad(ShapeCtx *c, Node *n)
{
	Type dy = n->in[0]->type, ids = n->in[1]->type;
	int64_t v = rt_attr_int(&n->attrs, "num_rows", 0);
	if (sh_want_int(c, n, 1, "ids") < 0)
		return -1;
	if (v < 1)
		return sh_err(c, n, "needs num_rows >= 1");
	if (dy.rank != ids.rank + 1)
		return sh_err(c, n, "dY %s must be the ids' shape %s plus one axis", sh_ty(c, dy), sh_ty(c, ids));
	for (int i = 0; i < ids.rank; i++)
		if (!dim_eq(dy.dims[i], ids.dims[i]))
			return sh_err(c, n, "dY %s must be the ids' shape %s plus one axis", sh_ty(c, dy), sh_ty(c, ids));
	Dim d[2] = { dim_c(v), dy.dims[dy.rank - 1] };
	return sh_set(c, n, 0, dy.dt, 2, d);
}

/* LayerNormalizationGrad / RMSNormalizationGrad(dY, X, Scale) -> dX (X's type), dScale (and
 * dB) of Scale's type. */
int shape_norm_grad(ShapeCtx *c, Node *n)
{
	if (same(c, n, 0, 1) < 0 || sh_set_type(c, n, 0, n->in[1]->type) < 0)
		return -1;
	for (int i = 1; i < n->nout; i++)
		if (sh_set_type(c, n, i, n->in[2]->type) < 0)
			return -1;
	return 0;
}

/* GeluGrad / SiluGrad(dY, X) -> dX of X's type. */
int shape_act_grad(ShapeCtx *c, Node *n)
{
	return same(c, n, 0, 1) < 0 ? -1 : sh_set_type(c, n, 0, n->in[1]->type);
}

/* AttentionGrad(dY, Q, K, V) -> dQ, dK, dV of Q's, K's and V's types. */
int shape_attention_grad(ShapeCtx *c, Node *n)
{
	for (int i = 0; i < n->nout; i++)
		if (sh_set_type(c, n, i, n->in[1 + i]->type) < 0)
			return -1;
	return 0;
}

/* TopKRouterGrad(dW[T, k], Logits[T, E], Experts[T, k]) -> dLogits of the logits' type. */
int shape_router_grad(ShapeCtx *c, Node *n)
{
	Type w = n->in[0]->type, l = n->in[1]->type, x = n->in[2]->type;
	if (sh_want_rank(c, n, 1, "logits", 2) < 0 || sh_want_int(c, n, 2, "experts") < 0)
		return -1;
	if (w.rank != 2 || x.rank != 2 || !dim_eq(w.dims[0], l.dims[0]) || !dim_eq(x.dims[0], l.dims[0]) ||
	    !dim_eq(w.dims[1], x.dims[1]))
		return sh_err(c, n, "dW %s and experts %s must be [T, k] for logits %s", sh_ty(c, w), sh_ty(c, x), sh_ty(c, l));
	return sh_set_type(c, n, 0, l);
}

/* GroupedMatMulGrad(dY[R, N], Xs[R, K], Offsets[E+1]) -> dW[E, K, N] in dY's dtype. */
int shape_groupedmm_grad(ShapeCtx *c, Node *n)
{
	Type dy = n->in[0]->type, x = n->in[1]->type, off = n->in[2]->type;
	Dim e;
	if (sh_want_rank(c, n, 0, "dY", 2) < 0 || sh_want_rank(c, n, 1, "xs", 2) < 0 ||
	    sh_want_rank(c, n, 2, "offsets", 1) < 0 || sh_want_int(c, n, 2, "offsets") < 0)
		return -1;
	if (!dim_eq(dy.dims[0], x.dims[0]))
		return sh_err(c, n, "dY %s and xs %s must have the same rows", sh_ty(c, dy), sh_ty(c, x));
	if (!dim_isconst(off.dims[0]) || off.dims[0].k < 2)
		return sh_err(c, n, "offsets %s must have a constant E + 1 >= 2 entries", sh_ty(c, off));
	e = dim_c(off.dims[0].k - 1);
	Dim d[3] = { e, x.dims[1], dy.dims[1] };
	return sh_set(c, n, 0, dy.dt, 3, d);
}

/* MoECombineGrad(dY[T, D], Ys[T*k, D], Weights[T, k], Experts[T, k]) -> dYs (Ys' type), dWeights
 * (Weights' type). */
int shape_combine_grad(ShapeCtx *c, Node *n)
{
	Type dy = n->in[0]->type, y = n->in[1]->type, w = n->in[2]->type;
	if (sh_want_rank(c, n, 0, "dY", 2) < 0 || sh_want_rank(c, n, 1, "ys", 2) < 0 ||
	    sh_want_rank(c, n, 2, "weights", 2) < 0 || sh_want_int(c, n, 3, "experts") < 0)
		return -1;
	if (!dim_eq(dy.dims[0], w.dims[0]) || !dim_eq(dy.dims[1], y.dims[1]))
		return sh_err(c, n, "dY %s must be [T, D] for ys %s and weights %s", sh_ty(c, dy), sh_ty(c, y), sh_ty(c, w));
	if (sh_set_type(c, n, 0, y) < 0)
		return -1;
	return n->nout > 1 ? sh_set_type(c, n, 1, w) : 0;
}

/* AdamW(W, G, M, V, Step) -> W' (W's type), M', V' (M's and V's types). */
int shape_adamw(ShapeCtx *c, Node *n)
{
	Type w = n->in[0]->type;
	for (int i = 1; i < 4; i++)
		if (w.rank != n->in[i]->type.rank || ir_type_numel(w) != ir_type_numel(n->in[i]->type))
			return sh_err(c, n, "input %d is %s but W is %s", i, sh_ty(c, n->in[i]->type), sh_ty(c, w));
	if (ir_type_numel(n->in[4]->type) != 1)
		return sh_err(c, n, "step must hold one value, got %s", sh_ty(c, n->in[4]->type));
	for (int i = 0; i < n->nout; i++)
		if (sh_set_type(c, n, i, n->in[i ? i + 1 : 0]->type) < 0)
			return -1;
	return 0;
}
