/* ir/shape_ext.c: shape rules for the ONNX operators of runtime/kernels/math.c, index.c,
 * loss.c and normx.c: IsNaN/IsInf, the losses, DepthToSpace/SpaceToDepth, Compress, OneHot,
 * Scatter*, GatherND, EyeLike, ReverseSequence, InstanceNormalization, LRN, and the rule of
 * operators whose output shape depends on input values (NonZero, NonMaxSuppression, Unique):
 * those are evaluated at compile time (ir/eval.c) and take the shape of the result.
 * Specs: https://onnx.ai/onnx/operators/onnx__<Op>.html.
 */
#include <string.h>

#include "ir/shape_int.h"

int shape_bcast(ShapeCtx *c, Node *n);   /* ir/shape_elem.c */

/* IsNaN, IsInf: a bool of X's shape; X floating point. */
int shape_isnan(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (sh_want_float(c, n, 0, "X") < 0)
		return -1;
	return sh_set(c, n, 0, DT_BOOL, x.rank, x.dims);
}

/* BitShift: X and Y unsigned integers of one dtype, broadcast. */
int shape_bitshift(ShapeCtx *c, Node *n)
{
	const char *dir = rt_attr_str(&n->attrs, "direction", "");
	if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
		return sh_err(c, n, "attribute direction must be \"LEFT\" or \"RIGHT\", got \"%s\"", dir);
	if (rt_dtypes[n->in[0]->type.dt].kind != K_UINT)
		return sh_err(c, n, "X must have an unsigned integer type, got %s", sh_ty(c, n->in[0]->type));
	return shape_bcast(c, n);
}

/* NegativeLogLikelihoodLoss(Input [N, C, d...], Target [N, d...], Weight [C]) and
 * SoftmaxCrossEntropyLoss (the same, second output log_prob shaped like scores). */
int shape_nllloss(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, t = n->in[1]->type;
	const Type *w = sh_in(n, 2);
	const char *red = rt_attr_str(&n->attrs, "reduction", "mean");
	if (sh_want_float(c, n, 0, "input") < 0 || sh_want_int(c, n, 1, "target") < 0)
		return -1;
	if (x.rank < 2)
		return sh_err(c, n, "input must be [N, C, d1..dk], got %s", sh_ty(c, x));
	if (t.rank != x.rank - 1 || !dim_eq(t.dims[0], x.dims[0]))
		return sh_err(c, n, "target must be [N, d1..dk] for input %s, got %s", sh_ty(c, x), sh_ty(c, t));
	for (int i = 1; i < t.rank; i++)
		if (!dim_eq(t.dims[i], x.dims[i + 1]))
			return sh_err(c, n, "target %s does not match input %s at dimension %d", sh_ty(c, t),
				      sh_ty(c, x), i);
	if (w && (w->rank != 1 || !dim_eq(w->dims[0], x.dims[1])))
		return sh_err(c, n, "weight must be [%s] (one per class), got %s", sh_dim(c, x.dims[1]), sh_ty(c, *w));
	int none = strcmp(red, "none") == 0;
	if (!none && strcmp(red, "sum") && strcmp(red, "mean"))
		return sh_err(c, n, "attribute reduction must be \"none\", \"sum\" or \"mean\", got \"%s\"", red);
	if (sh_set(c, n, 0, x.dt, none ? t.rank : 0, t.dims) < 0)
		return -1;
	return sh_set_type(c, n, 1, x);
}

/* DepthToSpace / SpaceToDepth {blocksize}: X [N, C, H, W]. */
int shape_d2s(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t b = rt_attr_int(&n->attrs, "blocksize", 0);
	Dim d[4], bb = dim_c(b), b2 = dim_c(b * b);
	if (x.rank != 4)
		return sh_err(c, n, "input must be [N, C, H, W], got %s", sh_ty(c, x));
	if (b <= 0)
		return sh_err(c, n, "attribute blocksize must be positive, got %lld", (long long)b);
	d[0] = x.dims[0];
	int bad;
	if (n->op == OP_DepthToSpace) {
		const char *mode = rt_attr_str(&n->attrs, "mode", "DCR");
		if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
			return sh_err(c, n, "attribute mode must be \"DCR\" or \"CRD\", got \"%s\"", mode);
		bad = dim_div(c->m, x.dims[1], b2, &d[1]) < 0 || dim_mul(c->m, x.dims[2], bb, &d[2]) < 0 ||
		      dim_mul(c->m, x.dims[3], bb, &d[3]) < 0;
	} else {
		bad = dim_mul(c->m, x.dims[1], b2, &d[1]) < 0 || dim_div(c->m, x.dims[2], bb, &d[2]) < 0 ||
		      dim_div(c->m, x.dims[3], bb, &d[3]) < 0;
	}
	if (bad)
		return sh_err(c, n, "blocksize %lld does not divide %s", (long long)b, sh_ty(c, x));
	return sh_set(c, n, 0, x.dt, 4, d);
}

/* Compress {axis}(X, condition): the count of true conditions must be known at compile time. */
int shape_compress(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, cd = n->in[1]->type;
	const Attr *ax = rt_attr_find(&n->attrs, "axis");
	int axis = 0;
	if (cd.rank != 1)
		return sh_err(c, n, "condition must be 1-D, got %s", sh_ty(c, cd));
	if (ax && sh_axis(c, n, "axis", ax->i, x.rank, &axis) < 0)
		return -1;
	const RtTensor *t = sh_value(c, n->in[1]);
	if (!t)
		return sh_unknown(c, n, 1, "condition");
	int64_t cnt = 0;
	for (int64_t i = 0; i < t->n; i++)
		cnt += rt_geti(t, i) != 0;
	Dim d[IR_MAX_RANK];
	if (!ax) {
		d[0] = dim_c(cnt);
		return sh_set(c, n, 0, x.dt, 1, d);
	}
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	d[axis] = dim_c(cnt);
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* OneHot {axis=-1}(indices, depth, values): depth known; Y has values' dtype. */
int shape_onehot(ShapeCtx *c, Node *n)
{
	Type ix = n->in[0]->type;
	const RtTensor *dep = sh_value(c, n->in[1]);
	if (ir_type_numel(n->in[2]->type) != 2)
		return sh_err(c, n, "values must hold two elements [off, on], got %s", sh_ty(c, n->in[2]->type));
	if (!dep)
		return sh_unknown(c, n, 1, "depth");
	if (dep->n != 1 || rt_get(dep, 0) < 1)
		return sh_err(c, n, "depth must be one positive number");
	int axis;
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", -1), ix.rank + 1, &axis) < 0)
		return -1;
	Dim d[IR_MAX_RANK];
	for (int i = 0, j = 0; i <= ix.rank && i < IR_MAX_RANK; i++)
		d[i] = i == axis ? dim_c((int64_t)rt_get(dep, 0)) : ix.dims[j++];
	return sh_set(c, n, 0, n->in[2]->type.dt, ix.rank + 1, d);
}

/* ScatterElements / ScatterND (data, indices, updates): Y is data's type. */
int shape_scatter(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, ix = n->in[1]->type, u = n->in[2]->type;
	if (sh_want_int(c, n, 1, "indices") < 0 || sh_same_dtype(c, n, 0, 2, "data", "updates") < 0)
		return -1;
	if (n->op == OP_ScatterElements) {
		int axis;
		if (ix.rank != x.rank || !ir_type_eq(ix, (Type){ ix.dt, u.rank, u.dims }))
			return sh_err(c, n, "indices %s and updates %s must have data's rank and one shape",
				      sh_ty(c, ix), sh_ty(c, u));
		if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 0), x.rank, &axis) < 0)
			return -1;
	} else if (ix.rank < 1 || !dim_isconst(ix.dims[ix.rank - 1]) || ix.dims[ix.rank - 1].k > x.rank) {
		return sh_err(c, n, "indices %s must end in a constant index depth <= data's rank %d",
			      sh_ty(c, ix), x.rank);
	}
	return sh_set_type(c, n, 0, x);
}

/* GatherND {batch_dims=b}: Y is indices.shape[:-1] + data.shape[b+q:]. */
int shape_gathernd(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, ix = n->in[1]->type;
	int64_t b = rt_attr_int(&n->attrs, "batch_dims", 0);
	if (sh_want_int(c, n, 1, "indices") < 0)
		return -1;
	if (ix.rank < 1 || !dim_isconst(ix.dims[ix.rank - 1]) || b < 0 || b >= ix.rank)
		return sh_err(c, n, "indices %s must end in a constant index depth (batch_dims %lld)",
			      sh_ty(c, ix), (long long)b);
	int64_t q = ix.dims[ix.rank - 1].k;
	if (b + q > x.rank)
		return sh_err(c, n, "index depth %lld + batch_dims %lld exceeds data's rank %d", (long long)q,
			      (long long)b, x.rank);
	Dim d[2 * IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i < ix.rank - 1; i++)
		d[r++] = ix.dims[i];
	for (int64_t i = b + q; i < x.rank; i++)
		d[r++] = x.dims[i];
	return sh_set(c, n, 0, x.dt, r, d);
}

/* EyeLike {dtype, k}: 2-D, X's shape. */
int shape_eyelike(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	DType dt = x.dt;
	if (x.rank != 2)
		return sh_err(c, n, "input must be 2-D, got %s", sh_ty(c, x));
	if (sh_attr_dtype(c, n, "dtype", &dt) < 0)
		return -1;
	return sh_set(c, n, 0, dt, 2, x.dims);
}

/* ReverseSequence {batch_axis=1, time_axis=0}(X, sequence_lens [batch]). */
int shape_revseq(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int ba, ta;
	if (sh_want_int(c, n, 1, "sequence_lens") < 0 || sh_want_rank(c, n, 1, "sequence_lens", 1) < 0)
		return -1;
	if (sh_axis(c, n, "batch_axis", rt_attr_int(&n->attrs, "batch_axis", 1), x.rank, &ba) < 0 ||
	    sh_axis(c, n, "time_axis", rt_attr_int(&n->attrs, "time_axis", 0), x.rank, &ta) < 0)
		return -1;
	if (ba == ta)
		return sh_err(c, n, "batch_axis and time_axis must differ");
	return sh_set_type(c, n, 0, x);
}

/* InstanceNormalization (X [N, C, ...], scale [C], B [C]). */
int shape_instnorm(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (sh_want_float(c, n, 0, "input") < 0)
		return -1;
	if (x.rank < 3)
		return sh_err(c, n, "input must be [N, C, D1, ...], got %s", sh_ty(c, x));
	for (int i = 1; i < 3; i++) {
		Type t = n->in[i]->type;
		if (t.rank != 1 || !dim_eq(t.dims[0], x.dims[1]))
			return sh_err(c, n, "%s must be [%s] (one per channel), got %s", i == 1 ? "scale" : "B",
				      sh_dim(c, x.dims[1]), sh_ty(c, t));
	}
	return sh_set_type(c, n, 0, x);
}

/* LRN {size}: X [N, C, ...], floating point. */
int shape_lrn(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (sh_want_float(c, n, 0, "X") < 0)
		return -1;
	if (x.rank < 3)
		return sh_err(c, n, "X must be [N, C, D1, ...], got %s", sh_ty(c, x));
	if (rt_attr_int(&n->attrs, "size", 0) < 1)
		return sh_err(c, n, "attribute size (a positive channel count) is required");
	return sh_set_type(c, n, 0, x);
}

/* Operators whose output shapes are their values: evaluated at compile time. */
int shape_evaluated(ShapeCtx *c, Node *n)
{
	int r = sh_eval(c, n);
	if (r > 0) {
		for (int i = 0; i < n->nout; i++) {
			const RtTensor *t = c->val[n->out[i]->id];
			Dim d[RT_MAX_RANK];
			for (int k = 0; k < t->rank; k++)
				d[k] = dim_c(t->dims[k]);
			if (sh_set(c, n, i, t->dtype, t->rank, d) < 0)
				return -1;
		}
		return 0;
	}
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && !sh_value(c, n->in[i])) {
			char what[64];
			snprintf(what, sizeof what, "input %d, which determines the output shape,", i);
			return sh_unknown(c, n, i, what);
		}
	if (r < 0)
		return sh_err(c, n, "could not be evaluated at compile time (its kernel failed on the "
			      "known inputs)");
	return sh_err(c, n, "could not be evaluated at compile time: an input or the result exceeds "
		      "the evaluation limit of %lld elements (--fold-limit)", (long long)ir_eval_limit(c->m));
}
