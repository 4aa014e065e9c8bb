/* ir/shape_elem.c: shape rules for elementwise operators (unary, binary and variadic with ONNX
 * multidirectional broadcasting, https://onnx.ai/onnx/repo-docs/Broadcasting.html), casts,
 * reductions (ReduceX, ArgMax/ArgMin), Softmax/LogSoftmax, TopK and CumSum.
 * Specs: https://onnx.ai/onnx/operators/ (one page per operator).
 */
#include <string.h>

#include "ir/shape_int.h"

/* The same type as input 0. */
static int same_as_input(ShapeCtx *c, Node *n) { return sh_set_type(c, n, 0, n->in[0]->type); }

/* Unary elementwise operators; checks the attributes that restrict values. */
int shape_unary(ShapeCtx *c, Node *n)
{
	if ((ir_ops[n->op].flags & F_TRANS) && sh_want_float(c, n, 0, "X") < 0)
		return -1;
	if (n->op == OP_Not && sh_want_dtype(c, n, 0, "X", DT_BOOL) < 0)
		return -1;
	if (n->op == OP_Gelu) {   /* https://onnx.ai/onnx/operators/onnx__Gelu.html */
		const char *ap = rt_attr_str(&n->attrs, "approximate", "none");
		if (strcmp(ap, "none") && strcmp(ap, "tanh"))
			return sh_err(c, n, "attribute approximate must be \"none\" or \"tanh\", got \"%s\"", ap);
	}
	if (n->op == OP_Trilu && sh_in(n, 1)) {   /* k: an integer scalar */
		const Type *k = sh_in(n, 1);
		if (k->rank != 0 || rt_dtypes[k->dt].kind != K_INT)
			return sh_err(c, n, "k must be an integer scalar, got %s", sh_ty(c, *k));
	}
	if (n->op == OP_Trilu && n->in[0]->type.rank < 2)
		return sh_err(c, n, "input must have rank >= 2, got %s", sh_ty(c, n->in[0]->type));
	return same_as_input(c, n);
}

/* Clip: min and max, when given, are scalars of X's dtype (https://onnx.ai/onnx/operators/onnx__Clip.html). */
int shape_clip(ShapeCtx *c, Node *n)
{
	static const char *names[] = { "X", "min", "max" };
	for (int i = 1; i < 3; i++) {
		const Type *t = sh_in(n, i);
		if (!t)
			continue;
		if (ir_type_numel(*t) != 1)
			return sh_err(c, n, "%s must be a scalar, got %s", names[i], sh_ty(c, *t));
		if (sh_same_dtype(c, n, 0, i, "X", names[i]) < 0)
			return -1;
	}
	return same_as_input(c, n);
}

/* Cast {to}: `to` is a dtype name or an ONNX data type number. */
int shape_cast(ShapeCtx *c, Node *n)
{
	DType to;
	int r = sh_attr_dtype(c, n, "to", &to);
	if (r < 0)
		return -1;
	if (r == 0)
		return sh_err(c, n, "attribute to (the target dtype) is required");
	Type x = n->in[0]->type;
	return sh_set(c, n, 0, to, x.rank, x.dims);
}

int shape_castlike(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	return sh_set(c, n, 0, n->in[1]->type.dt, x.rank, x.dims);
}

/* Dropout (inference): Y = X, optional Mask bool of X's shape; ratio is a float scalar. */
int shape_dropout(ShapeCtx *c, Node *n)
{
	const Type *ratio = sh_in(n, 1), *train = sh_in(n, 2);
	if (ratio && (ratio->rank != 0 || !rt_dtype_isfloat(ratio->dt)))
		return sh_err(c, n, "ratio must be a float scalar, got %s", sh_ty(c, *ratio));
	if (train && (train->rank != 0 || train->dt != DT_BOOL))
		return sh_err(c, n, "training_mode must be a bool scalar, got %s", sh_ty(c, *train));
	Type x = n->in[0]->type;
	if (same_as_input(c, n) < 0)
		return -1;
	return sh_set(c, n, 1, DT_BOOL, x.rank, x.dims);
}

/* Broadcasts inputs lo..hi-1 (absent ones skipped) into rank/dims. */
static int broadcast_all(ShapeCtx *c, Node *n, int lo, int hi, int *rank, Dim *dims)
{
	Type acc = { DT_INVALID, 0, NULL };
	Dim buf[IR_MAX_RANK];
	char name[32] = "the inputs";
	for (int i = lo; i < hi; i++) {
		if (!n->in[i])
			continue;
		char bn[32];
		snprintf(bn, sizeof bn, "input %d", i);
		if (sh_broadcast(c, n, name, acc, bn, n->in[i]->type, rank, buf) < 0)
			return -1;
		acc = ir_type(c->m, n->in[i]->type.dt, *rank, buf);
		snprintf(name, sizeof name, "inputs %d..%d", lo, i);
	}
	if (acc.rank)     /* rank 0: dims may be NULL (found by fuzz_onnx under UBSan) */
		memcpy(dims, acc.dims, (size_t)acc.rank * sizeof *dims);
	*rank = acc.rank;
	return 0;
}

/* Two same-dtype inputs with broadcasting; output dtype `dt` (DT_INVALID: the inputs'). */
static int binary(ShapeCtx *c, Node *n, DType dt, int same_dtype)
{
	Type a = n->in[0]->type, b = n->in[1]->type;
	if (same_dtype && a.dt != b.dt)
		return sh_err(c, n, "A and B must have the same dtype: A is %s, B is %s", sh_ty(c, a),
			      sh_ty(c, b));
	int rank;
	Dim d[IR_MAX_RANK];
	if (a.rank > IR_MAX_RANK || b.rank > IR_MAX_RANK || sh_broadcast(c, n, "A", a, "B", b, &rank, d) < 0)
		return -1;
	return sh_set(c, n, 0, dt == DT_INVALID ? a.dt : dt, rank, d);
}

int shape_bcast(ShapeCtx *c, Node *n)
{
	if (n->op == OP_SwiGLU && sh_want_float(c, n, 0, "Gate") < 0)
		return -1;
	return binary(c, n, DT_INVALID, 1);
}

/* Pow: the exponent may have another numeric dtype; Z has X's. */
int shape_pow(ShapeCtx *c, Node *n) { return binary(c, n, DT_INVALID, 0); }

int shape_compare(ShapeCtx *c, Node *n) { return binary(c, n, DT_BOOL, 1); }

int shape_logical(ShapeCtx *c, Node *n)
{
	if (sh_want_dtype(c, n, 0, "A", DT_BOOL) < 0 || sh_want_dtype(c, n, 1, "B", DT_BOOL) < 0)
		return -1;
	return binary(c, n, DT_BOOL, 1);
}

/* Max/Min/Sum/Mean: every input has the same dtype; all broadcast together. */
int shape_vbcast(ShapeCtx *c, Node *n)
{
	for (int i = 1; i < n->nin; i++)
		if (n->in[i] && n->in[i]->type.dt != n->in[0]->type.dt)
			return sh_err(c, n, "all inputs must have the same dtype: input 0 is %s, input %d is %s",
				      sh_ty(c, n->in[0]->type), i, sh_ty(c, n->in[i]->type));
	int rank;
	Dim d[IR_MAX_RANK];
	if (broadcast_all(c, n, 0, n->nin, &rank, d) < 0)
		return -1;
	return sh_set(c, n, 0, n->in[0]->type.dt, rank, d);
}

/* Where(C, X, Y): C bool, X and Y one dtype, all three broadcast. */
int shape_where(ShapeCtx *c, Node *n)
{
	if (sh_want_dtype(c, n, 0, "condition", DT_BOOL) < 0 || sh_same_dtype(c, n, 1, 2, "X", "Y") < 0)
		return -1;
	int rank;
	Dim d[IR_MAX_RANK];
	if (broadcast_all(c, n, 0, 3, &rank, d) < 0)
		return -1;
	return sh_set(c, n, 0, n->in[1]->type.dt, rank, d);
}

/* Marks the normalized axes in `mark`; duplicates are an error. */
static int mark_axes(ShapeCtx *c, Node *n, const int64_t *axes, int k, int rank, char *mark)
{
	memset(mark, 0, IR_MAX_RANK);
	for (int i = 0; i < k; i++) {
		int a;
		if (sh_axis(c, n, "axis", axes[i], rank, &a) < 0)
			return -1;
		if (mark[a])
			return sh_err(c, n, "axis %lld is repeated in axes", (long long)axes[i]);
		mark[a] = 1;
	}
	return 0;
}

/* Drops (keepdims=0) or sets to 1 the marked axes of x into the output. */
static int reduced(ShapeCtx *c, Node *n, Type x, const char *mark, int keep, DType dt)
{
	Dim d[IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i < x.rank; i++)
		if (!mark[i])
			d[r++] = x.dims[i];
		else if (keep)
			d[r++] = dim_c(1);
	return sh_set(c, n, 0, dt, r, d);
}

/* ReduceX: axes from input 1 (opset 18; ReduceSum 13) or attribute; empty axes reduce all
 * unless noop_with_empty_axes (https://onnx.ai/onnx/operators/onnx__ReduceSum.html). */
int shape_reduce(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t axes[IR_MAX_RANK];
	int k = 0;
	int r = sh_axes(c, n, 1, axes, IR_MAX_RANK, &k);
	if (r < 0)
		return -1;
	int keep = rt_attr_int(&n->attrs, "keepdims", 1) != 0;
	char mark[IR_MAX_RANK];
	if (k == 0) {
		if (rt_attr_int(&n->attrs, "noop_with_empty_axes", 0))
			return same_as_input(c, n);
		memset(mark, 1, sizeof mark);
	} else if (mark_axes(c, n, axes, k, x.rank, mark) < 0)
		return -1;
	return reduced(c, n, x, mark, keep, x.dt);
}

/* ArgMax/ArgMin {axis=0, keepdims=1}: i64 indices. */
int shape_argmax(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t axis = rt_attr_int(&n->attrs, "axis", 0);
	char mark[IR_MAX_RANK];
	if (x.rank == 0)
		return sh_err(c, n, "input must have rank >= 1, got %s", sh_ty(c, x));
	if (mark_axes(c, n, &axis, 1, x.rank, mark) < 0)
		return -1;
	return reduced(c, n, x, mark, rt_attr_int(&n->attrs, "keepdims", 1) != 0, DT_I64);
}

/* Softmax/LogSoftmax {axis=-1}: axis in [-r, r-1]; float input. */
int shape_softmax(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int a;
	if (sh_want_float(c, n, 0, "input") < 0)
		return -1;
	if (x.rank == 0)
		return sh_err(c, n, "input must have rank >= 1, got %s", sh_ty(c, x));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", -1), x.rank, &a) < 0)
		return -1;
	return same_as_input(c, n);
}

/* TopK(X, K) {axis=-1}: K is a one-element i64 tensor, 0 <= K <= X.shape[axis]. */
int shape_topk(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	Dim k[1];
	int cnt, a;
	if (x.rank == 0)
		return sh_err(c, n, "input must have rank >= 1, got %s", sh_ty(c, x));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", -1), x.rank, &a) < 0 ||
	    sh_dims_input(c, n, 1, "K", k, 1, &cnt) < 0)
		return -1;
	if (cnt != 1)
		return sh_err(c, n, "K must hold one value, got %d", cnt);
	Dim ax = x.dims[a];
	if (dim_isconst(k[0]) && (k[0].k < 0 || (dim_isconst(ax) && k[0].k > ax.k)))
		return sh_err(c, n, "K = %lld is outside 0..%s (dimension %d of %s)", (long long)k[0].k,
			      sh_dim(c, ax), a, sh_ty(c, x));
	Dim d[IR_MAX_RANK];
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	d[a] = k[0];
	if (sh_set(c, n, 0, x.dt, x.rank, d) < 0)
		return -1;
	return sh_set(c, n, 1, DT_I64, x.rank, d);
}

/* CumSum(X, axis): axis is an integer scalar; when known it must be in range. */
int shape_cumsum(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	const Type *ax = sh_in(n, 1);
	if (ax->rank > 1 || rt_dtypes[ax->dt].kind != K_INT)
		return sh_err(c, n, "axis must be an integer scalar, got %s", sh_ty(c, *ax));
	const Known *k = sh_known(c, n->in[1]);
	int a;
	if (k && k->n == 1 && dim_isconst(k->d[0]) && sh_axis(c, n, "axis", k->d[0].k, x.rank, &a) < 0)
		return -1;
	return same_as_input(c, n);
}
