/* ir/shape_resample.c: shape rules for ConvTranspose and Resize.
 *
 * Both take their geometry from the runtime's own functions (rt_convtranspose_geometry,
 * rt_resize_geometry in runtime/kernels/), so the inferred shape is the one the kernel computes.
 * Resize's scales (floats) must be constants; its sizes may be known values computed from shapes
 * (Shape -> Gather -> Concat, ir/shape_value.c), symbolic where the axis is not resampled.
 * An operand that must be known and is not is recorded (sh_need) so the driver can name the
 * graph input it comes from.  Specs: https://onnx.ai/onnx/operators/onnx__ConvTranspose.html,
 * https://onnx.ai/onnx/operators/onnx__Resize.html.
 */
#include <string.h>

#include "ir/shape_int.h"
#include "runtime/kernels.h"

/* Reports a runtime geometry error (its "Op: " prefix dropped: sh_err adds it). */
static int geom_err(ShapeCtx *c, Node *n, const RtError *e)
{
	const char *m = e->msg, *p = strstr(m, ": ");
	return sh_err(c, n, "%s", p && !strncmp(m, ir_ops[n->op].name, (size_t)(p - m)) ? p + 2 : m);
}

/* ConvTranspose(X[N, C, D...], W[C, M/group, k...], B[M]). */
int shape_convtranspose(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, w = n->in[1]->type;
	int64_t g = rt_attr_int(&n->attrs, "group", 1), in[IR_MAX_RANK], ks[IR_MAX_RANK];
	if (x.rank < 3 || w.rank != x.rank)
		return sh_err(c, n, "X must be [N, C, D1, ...] and W [C, M/group, k1, ...] of the same rank: X is %s, W is %s",
			      sh_ty(c, x), sh_ty(c, w));
	if (g < 1)
		return sh_err(c, n, "group must be >= 1, got %lld", (long long)g);
	if (!dim_eq(w.dims[0], x.dims[1]))
		return sh_err(c, n, "channels differ: X is %s, W is %s (W.shape[0] must be X's channels)", sh_ty(c, x),
			      sh_ty(c, w));
	if (dim_isconst(w.dims[0]) && w.dims[0].k % g)
		return sh_err(c, n, "input channels %lld are not divisible by group %lld", (long long)w.dims[0].k, (long long)g);
	if (sh_same_dtype(c, n, 0, 1, "X", "W") < 0)
		return -1;
	for (int i = 2; i < x.rank; i++) {
		if (!dim_isconst(x.dims[i]) || !dim_isconst(w.dims[i]))
			return sh_err(c, n, "spatial dimensions must be constants (bind them): X is %s, W is %s", sh_ty(c, x),
				      sh_ty(c, w));
		in[i - 2] = x.dims[i].k, ks[i - 2] = w.dims[i].k;
	}
	RtConvTGeom geo;
	RtError e = { 0 };
	if (rt_convtranspose_geometry(&n->attrs, x.rank - 2, in, ks, &geo, &e) < 0)
		return geom_err(c, n, &e);
	Dim d[IR_MAX_RANK] = { x.dims[0] };
	if (dim_mul(c->m, w.dims[1], dim_c(g), &d[1]) < 0)
		return sh_err(c, n, "overflow");
	const Type *b = sh_in(n, 2);
	if (b && (b->rank != 1 || !dim_eq(b->dims[0], d[1])))
		return sh_err(c, n, "B must be [%s], got %s", sh_dim(c, d[1]), sh_ty(c, *b));
	for (int i = 0; i < geo.ns; i++)
		d[i + 2] = dim_c(geo.out[i]);
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* Element count of optional input i from its type (-1: absent; 0: an empty tensor, which ONNX
 * uses for "not given"). */
static int64_t input_count(const Node *n, int i)
{
	const Type *t = sh_in(n, i);
	if (!t)
		return -1;
	int64_t k = ir_type_numel(*t);
	return k < 0 ? 1 : k;
}

/* The float constant input i (roi, scales) into v: its count, or -1 after reporting. */
static int const_floats(ShapeCtx *c, Node *n, int i, const char *what, double *v, int max)
{
	const RtTensor *t = ir_const_data(n->in[i]);
	if (!rt_dtype_isfloat(n->in[i]->type.dt) || n->in[i]->type.rank != 1)
		return sh_err(c, n, "%s must be a 1-D float tensor, got %s", what, sh_ty(c, n->in[i]->type));
	if (!t) {
		sh_need(c, n->in[i]);
		return sh_err(c, n, "%s ('%s') must be known at compile time (a constant)", what, n->in[i]->name);
	}
	if (t->n > max)
		return sh_err(c, n, "%s has %lld values, more than %d", what, (long long)t->n, max);
	for (int64_t k = 0; k < t->n; k++)
		v[k] = rt_get(t, k);
	return (int)t->n;
}

/* Resize(X, roi, scales, sizes): one output axis per axis of X. */
int shape_resize(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	double roi[2 * IR_MAX_RANK], sc[IR_MAX_RANK];
	int64_t in[IR_MAX_RANK], sizes[IR_MAX_RANK];
	Dim sd[SH_MAXKNOWN], d[IR_MAX_RANK];
	int nroi = 0, nsc = 0, nsz = 0, symsize = 0;
	if (x.rank < 1)
		return sh_err(c, n, "X must have rank >= 1, got %s", sh_ty(c, x));
	int64_t kroi = input_count(n, 1), ksc = input_count(n, 2), ksz = input_count(n, 3);
	if (ksz > 0 && ksc > 0)
		return sh_err(c, n, "exactly one of scales and sizes must be given (non-empty)");
	if (ksz > 0) {
		if (sh_dims_input(c, n, 3, "sizes", sd, IR_MAX_RANK, &nsz) < 0)
			return -1;
		for (int i = 0; i < nsz; i++) {
			symsize |= !dim_isconst(sd[i]);
			sizes[i] = dim_isconst(sd[i]) ? sd[i].k : 1;
		}
	} else if (ksc > 0 && (nsc = const_floats(c, n, 2, "scales", sc, IR_MAX_RANK)) < 0) {
		return -1;
	}
	if (kroi > 0 && !strcmp(rt_attr_str(&n->attrs, "coordinate_transformation_mode", ""), "tf_crop_and_resize") &&
	    (nroi = const_floats(c, n, 1, "roi", roi, 2 * IR_MAX_RANK)) < 0)
		return -1;
	for (int i = 0; i < x.rank; i++)
		in[i] = dim_isconst(x.dims[i]) ? x.dims[i].k : 1;
	RtResizeGeom g;
	RtError e = { 0 };
	if (rt_resize_geometry(&n->attrs, x.rank, in, roi, nroi, sc, nsc, sizes, nsz, &g, &e) < 0)
		return geom_err(c, n, &e);
	int stretch = !strcmp(rt_attr_str(&n->attrs, "keep_aspect_ratio_policy", "stretch"), "stretch");
	int na, pos[IR_MAX_RANK];
	const int64_t *axes = rt_attr_ints(&n->attrs, "axes", &na);
	for (int i = 0; i < x.rank; i++)
		pos[i] = axes ? -1 : i;
	for (int i = 0; axes && i < na; i++)
		pos[axes[i] < 0 ? axes[i] + x.rank : axes[i]] = i;   /* in range: checked by the geometry */
	for (int i = 0; i < x.rank; i++) {
		int sym = !dim_isconst(x.dims[i]);
		if (pos[i] < 0 || (!nsz && g.scale[i] == 1 && g.roi1[i] - g.roi0[i] == 1))
			d[i] = x.dims[i];          /* not resampled: a symbol stays */
		else if (nsz && stretch)
			d[i] = sd[pos[i]];         /* sizes as given, symbolic ones included */
		else if (sym || symsize)
			return sh_err(c, n, "axis %d of X %s is resampled by %s: its length and the sizes must be constants "
				      "%s", i, sh_ty(c, x), nsz ? "keep_aspect_ratio_policy" : "a scale", sh_bind_hint(c));
		else
			d[i] = dim_c(g.out[i]);
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}
