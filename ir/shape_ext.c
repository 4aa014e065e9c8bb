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

/* GridSample (X [N, C, H, W], grid [N, H_out, W_out, 2]): Y [N, C, H_out, W_out]. */
int shape_gridsample(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, g = n->in[1]->type;
	if (sh_want_float(c, n, 0, "X") < 0 || sh_same_dtype(c, n, 0, 1, "X", "grid") < 0)
		return -1;
	if (x.rank != 4 || g.rank != 4 || !dim_eq(g.dims[0], x.dims[0]) || !dim_eq(g.dims[3], dim_c(2)))
		return sh_err(c, n, "X must be [N, C, H, W] and grid [N, H_out, W_out, 2], got %s and %s",
			      sh_ty(c, x), sh_ty(c, g));
	Dim d[4] = { x.dims[0], x.dims[1], g.dims[1], g.dims[2] };
	return sh_set(c, n, 0, x.dt, 4, d);
}

/* RoiAlign (X [N, C, H, W], rois [R, 4], batch_indices [R]) {output_height, output_width}:
 * Y [R, C, output_height, output_width]. */
int shape_roialign(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, r = n->in[1]->type, b = n->in[2]->type;
	int64_t oh = rt_attr_int(&n->attrs, "output_height", 1), ow = rt_attr_int(&n->attrs, "output_width", 1);
	if (sh_want_float(c, n, 0, "X") < 0 || sh_same_dtype(c, n, 0, 1, "X", "rois") < 0)
		return -1;
	if (x.rank != 4 || r.rank != 2 || !dim_eq(r.dims[1], dim_c(4)) || b.rank != 1 || !dim_eq(b.dims[0], r.dims[0]))
		return sh_err(c, n, "X must be [N, C, H, W], rois [R, 4] and batch_indices [R], got %s, %s and %s",
			      sh_ty(c, x), sh_ty(c, r), sh_ty(c, b));
	if (oh < 1 || ow < 1)
		return sh_err(c, n, "output_height and output_width must be positive, got %lld and %lld", (long long)oh,
			      (long long)ow);
	Dim d[4] = { r.dims[0], x.dims[1], dim_c(oh), dim_c(ow) };
	return sh_set(c, n, 0, x.dt, 4, d);
}

/* RNN, GRU, LSTM {hidden_size, direction, layout}: Y [seq, dirs, batch, hidden] (layout 1:
 * [batch, seq, dirs, hidden]), Y_h and Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]). */
int shape_rnn(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, w = n->in[1]->type;
	const char *dir = rt_attr_str(&n->attrs, "direction", "forward");
	int64_t hs = rt_attr_int(&n->attrs, "hidden_size", 0), layout = rt_attr_int(&n->attrs, "layout", 0);
	int dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	if (strcmp(dir, "forward") && strcmp(dir, "reverse") && dirs == 1)
		return sh_err(c, n, "attribute direction must be forward, reverse or bidirectional, got \"%s\"", dir);
	if (sh_want_float(c, n, 0, "X") < 0)
		return -1;
	if (x.rank != 3 || w.rank != 3)
		return sh_err(c, n, "X and W must be 3-D, got %s and %s", sh_ty(c, x), sh_ty(c, w));
	int gates = n->op == OP_RNN ? 1 : n->op == OP_GRU ? 3 : 4;
	if (hs <= 0 && dim_isconst(w.dims[1]))
		hs = w.dims[1].k / gates;
	if (hs <= 0 || !dim_eq(w.dims[1], dim_c(gates * hs)) || !dim_eq(w.dims[0], dim_c(dirs)))
		return sh_err(c, n, "W must be [%d, %lld, input], got %s", dirs, (long long)(gates * hs), sh_ty(c, w));
	Dim seq = x.dims[layout ? 1 : 0], batch = x.dims[layout ? 0 : 1], H = dim_c(hs), D = dim_c(dirs);
	Dim y[4] = { seq, D, batch, H }, yl[4] = { batch, seq, D, H };
	Dim h[3] = { D, batch, H }, hl[3] = { batch, D, H };
	for (int i = 0; i < n->nout; i++) {
		int r = i == 0 ? sh_set(c, n, 0, x.dt, 4, layout ? yl : y) : sh_set(c, n, i, x.dt, 3, layout ? hl : h);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* If(cond, then_1..k, else_1..k) -> k outputs.  A compile-time-known condition takes the chosen
 * branch's types (the other branch's nodes were skipped: ir/shape.c); an unknown one is a
 * run-time select, which needs both branches to give the same types. */
int shape_if(ShapeCtx *c, Node *n)
{
	int k = n->nout;
	if (n->nin != 1 + 2 * k)
		return sh_err(c, n, "expected 1 + 2*%d inputs (condition, then and else outputs), got %d", k, n->nin);
	Type cd = n->in[0]->type;
	if (cd.rank < 0)
		return -1;
	if (cd.dt != DT_BOOL || ir_type_numel(cd) != 1)
		return sh_err(c, n, "cond must be a bool with one element, got %s", sh_ty(c, cd));
	const RtTensor *v = sh_value(c, n->in[0]);
	int lo = v ? (rt_geti(v, 0) ? 1 : 1 + k) : 1;
	for (int i = 0; i < k; i++) {
		Value *t = n->in[lo + i], *el = n->in[1 + k + i];
		if (!t || t->type.rank < 0 || (!v && (!el || el->type.rank < 0)))
			return -1;         /* an error inside a branch was reported there */
		if (!v && !ir_type_eq(t->type, el->type)) {
			char what[160];
			snprintf(what, sizeof what, "condition (the branches give output %d as %s and %s, so a "
				 "run-time select is impossible)", i, sh_ty(c, t->type), sh_ty(c, el->type));
			return sh_unknown(c, n, 0, what);
		}
		if (sh_set_type(c, n, i, t->type) < 0)
			return -1;
	}
	return 0;
}

/* DFT {axis=1, onesided=0}(input [..., 1|2], dft_length): the axis becomes n (or n/2+1), the
 * last dimension 2 (complex). */
int shape_dft(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int ax;
	if (sh_want_float(c, n, 0, "input") < 0)
		return -1;
	if (x.rank < 2 || !(dim_eq(x.dims[x.rank - 1], dim_c(1)) || dim_eq(x.dims[x.rank - 1], dim_c(2))))
		return sh_err(c, n, "input must end in a dimension of 1 (real) or 2 (complex), got %s", sh_ty(c, x));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 1), x.rank - 1, &ax) < 0)
		return -1;
	Dim d[IR_MAX_RANK], len = x.dims[ax];
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	if (sh_in(n, 1)) {
		const RtTensor *t = sh_value(c, n->in[1]);
		if (!t)
			return sh_unknown(c, n, 1, "dft_length");
		len = dim_c(rt_geti(t, 0));
	}
	if (rt_attr_int(&n->attrs, "onesided", 0)) {
		if (!dim_isconst(len))
			return sh_err(c, n, "a one-sided DFT needs a constant length, got %s", sh_dim(c, len));
		len = dim_c(len.k / 2 + 1);
	}
	d[ax] = len;
	d[x.rank - 1] = dim_c(2);
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* STFT {onesided=1}(signal [B, L, 1|2], frame_step, window [W], frame_length): [B, frames, bins, 2]. */
int shape_stft(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	const RtTensor *st = sh_value(c, n->in[1]), *fl = sh_in(n, 3) ? sh_value(c, n->in[3]) : NULL;
	const Type *w = sh_in(n, 2);
	if (x.rank != 3 || !dim_isconst(x.dims[1]))
		return sh_err(c, n, "signal must be [batch, length, 1 or 2] with a constant length, got %s", sh_ty(c, x));
	if (!st)
		return sh_unknown(c, n, 1, "frame_step");
	if (sh_in(n, 3) && !fl)
		return sh_unknown(c, n, 3, "frame_length");
	int64_t F = fl ? rt_geti(fl, 0) : w && w->rank == 1 && dim_isconst(w->dims[0]) ? w->dims[0].k : 0;
	int64_t step = rt_geti(st, 0), L = x.dims[1].k;
	if (F < 1 || step < 1 || F > L)
		return sh_err(c, n, "frame length %lld and frame_step %lld must be positive and fit the signal "
			      "length %lld", (long long)F, (long long)step, (long long)L);
	int64_t bins = rt_attr_int(&n->attrs, "onesided", 1) ? F / 2 + 1 : F;
	Dim d[4] = { x.dims[0], dim_c((L - F) / step + 1), dim_c(bins), dim_c(2) };
	return sh_set(c, n, 0, x.dt, 4, d);
}

/* Det: [..., M, M] -> [...]. */
int shape_det(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (sh_want_float(c, n, 0, "X") < 0)
		return -1;
	if (x.rank < 2 || !dim_eq(x.dims[x.rank - 1], x.dims[x.rank - 2]))
		return sh_err(c, n, "X must be [..., M, M], got %s", sh_ty(c, x));
	return sh_set(c, n, 0, x.dt, x.rank - 2, x.dims);
}

/* MaxUnpool {kernel_shape, strides, pads}(X, I, output_shape). */
int shape_maxunpool(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int nk, ns, np, sp = x.rank - 2;
	const int64_t *k = rt_attr_ints(&n->attrs, "kernel_shape", &nk), *s = rt_attr_ints(&n->attrs, "strides", &ns);
	const int64_t *p = rt_attr_ints(&n->attrs, "pads", &np);
	Dim d[IR_MAX_RANK];
	if (x.rank < 3 || !k || nk != sp)
		return sh_err(c, n, "X must be [N, C, ...] with a kernel_shape entry per spatial axis, got %s",
			      sh_ty(c, x));
	if (sh_in(n, 2)) {
		int cnt;
		if (sh_dims_input(c, n, 2, "output_shape", d, IR_MAX_RANK, &cnt) < 0)
			return -1;
		if (cnt != x.rank)
			return sh_err(c, n, "output_shape must have %d entries, got %d", x.rank, cnt);
		return sh_set(c, n, 0, x.dt, x.rank, d);
	}
	d[0] = x.dims[0], d[1] = x.dims[1];
	for (int i = 0; i < sp; i++) {
		if (!dim_isconst(x.dims[2 + i]))
			return sh_err(c, n, "spatial dimension %s must be constant", sh_dim(c, x.dims[2 + i]));
		d[2 + i] = dim_c((x.dims[2 + i].k - 1) * (s && i < ns ? s[i] : 1) + k[i] - (p && i < np ? p[i] : 0) -
				 (p && sp + i < np ? p[sp + i] : 0));
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* TfIdfVectorizer: X integer [C] or [N, C] -> f32 [max(ngram_indexes)+1] or [N, that]. */
int shape_tfidf(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int ni;
	const int64_t *idx = rt_attr_ints(&n->attrs, "ngram_indexes", &ni);
	if (sh_want_int(c, n, 0, "X") < 0)
		return -1;
	if (!rt_attr_find(&n->attrs, "pool_int64s"))
		return sh_err(c, n, "attribute pool_int64s is required (pool_strings: aicc has no string dtype)");
	if (!idx || (x.rank != 1 && x.rank != 2))
		return sh_err(c, n, "X must be [C] or [N, C] and ngram_indexes given, got %s", sh_ty(c, x));
	int64_t w = 0;
	for (int i = 0; i < ni; i++)
		w = idx[i] + 1 > w ? idx[i] + 1 : w;
	Dim d[2] = { x.dims[0], dim_c(w) };
	if (x.rank == 1)
		d[0] = dim_c(w);
	return sh_set(c, n, 0, DT_F32, x.rank, d);
}
