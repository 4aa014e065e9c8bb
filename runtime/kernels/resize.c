/* runtime/kernels/resize.c: Resize (ONNX opsets 11-19; Upsample and Resize-10 arrive here
 * rewritten by the importer) over N-D inputs.
 *
 * Geometry (rt_resize_geometry, shared with the shape rule): per axis a scale and an output
 * length, from `sizes` (scale = out/in, or one common scale under keep_aspect_ratio_policy
 * not_larger/not_smaller with out = round_half_up(scale*in)) or from `scales` (out =
 * floor(in*scale), times the roi length for tf_crop_and_resize); `axes` (opset 18) names the
 * axes the scales, sizes and roi entries are for, the others keep scale 1.
 *
 * Values follow the ONNX reference implementation (onnx/reference/ops/op_resize.py; the
 * generator of the node tests, onnx/backend/test/case/node/resize.py) step for step: output
 * coordinate x maps to x_ori in the input by coordinate_transformation_mode (half_pixel,
 * half_pixel_symmetric, pytorch_half_pixel, align_corners with the unrounded output length
 * scale*in, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize with roi and
 * extrapolation_value outside [0, in-1]); ratio = x_ori - floor(x_ori), or 1 when x_ori is an
 * integer (then the taps start one lower); the n taps are the n input points nearest to x_ori
 * (edge-clamped) with coefficients from the mode: nearest (2 taps; round_prefer_floor,
 * round_prefer_ceil, floor, ceil), linear (2 taps), cubic (4 taps, Keys' kernel with
 * cubic_coeff_a, Keys 1981), or with antialias=1 (opset 18) the linear/cubic kernel stretched by
 * 1/scale when downsampling and normalised to sum 1.  exclude_outside drops the taps outside
 * the input and renormalises.  The interpolation is separable: one 1-D pass per resampled axis,
 * innermost first as the reference's recursion does; each pass accumulates in f32 (f64 with
 * accum_f64 or f64 data) and nearest copies the chosen element.
 * Spec: https://onnx.ai/onnx/operators/onnx__Resize.html.
 */
#include "runtime/kernels/kernels_impl.h"

#include <stdlib.h>

enum { RZ_NEAREST, RZ_LINEAR, RZ_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_NN, CT_TF_CROP };
enum { NM_ROUND_FLOOR, NM_ROUND_CEIL, NM_FLOOR, NM_CEIL };

static int lookup(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* The string attribute `name` as an index into names; -1 with e set when it is none of them. */
static int enum_attr(const Attrs *at, const char *name, const char *def, const char *const *names, int n,
		     RtError *e)
{
	const char *s = rt_attr_str(at, name, def);
	int k = lookup(s, names, n);
	if (k < 0) {
		char list[256] = "";
		for (int i = 0; i < n; i++)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
		rt_errorf(e, RT_EUSER, "Resize: %s must be one of %s, got \"%s\"", name, list, s);
	}
	return k;
}

static const char *const mode_names[] = { "nearest", "linear", "cubic" };
static const char *const ct_names[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
					"asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize" };
static const char *const nm_names[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };

int rt_resize_geometry(const Attrs *at, int rank, const int64_t *in, const double *roi, int nroi,
		       const double *scales, int nscales, const int64_t *sizes, int nsizes, RtResizeGeom *g,
		       RtError *e)
{
	int na, ax[RT_MAX_RANK], seen[RT_MAX_RANK] = { 0 };
	const int64_t *axes = rt_attr_ints(at, "axes", &na);
	if (rank < 0 || rank > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "Resize: X has rank %d", rank);
	if (!axes)
		na = rank;
	if (na > rank)
		return rt_errorf(e, RT_EUSER, "Resize: axes has %d entries, X only %d axes", na, rank);
	for (int i = 0; i < na; i++) {
		int64_t a = axes ? axes[i] : i;
		if (a < -rank || a >= rank)
			return rt_errorf(e, RT_EUSER, "Resize: axis %lld is out of range for rank %d", (long long)a, rank);
		ax[i] = (int)(a < 0 ? a + rank : a);
		if (seen[ax[i]]++)
			return rt_errorf(e, RT_EUSER, "Resize: axis %d is given twice", ax[i]);
	}
	int ct = enum_attr(at, "coordinate_transformation_mode", "half_pixel", ct_names, 7, e);
	const char *const kar_names[] = { "stretch", "not_larger", "not_smaller" };
	int kar = enum_attr(at, "keep_aspect_ratio_policy", "stretch", kar_names, 3, e);
	if (ct < 0 || kar < 0)
		return -1;
	if (nroi && nroi != 2 * na)
		return rt_errorf(e, RT_EUSER, "Resize: roi has %d values, expected %d (starts and ends of %d axes)", nroi, 2 * na, na);
	if ((nscales > 0) == (nsizes > 0))
		return rt_errorf(e, RT_EUSER, "Resize: exactly one of scales and sizes must be given (non-empty)");
	if (nscales && nscales != na)
		return rt_errorf(e, RT_EUSER, "Resize: scales has %d values, expected %d", nscales, na);
	if (nsizes && nsizes != na)
		return rt_errorf(e, RT_EUSER, "Resize: sizes has %d values, expected %d", nsizes, na);
	g->rank = rank;
	for (int i = 0; i < rank; i++) {
		g->scale[i] = 1, g->out[i] = in[i], g->roi0[i] = 0, g->roi1[i] = 1;
		if (in[i] < 0)
			return rt_errorf(e, RT_EUSER, "Resize: X has a negative dimension");
	}
	for (int i = 0; i < na && nroi; i++)
		g->roi0[ax[i]] = roi[i], g->roi1[ax[i]] = roi[i + na];
	if (nscales) {
		for (int i = 0; i < na; i++) {
			int d = ax[i];
			double s = scales[i], len = ct == CT_TF_CROP ? g->roi1[d] - g->roi0[d] : 1;
			if (!(s > 0) || !isfinite(s))
				return rt_errorf(e, RT_EUSER, "Resize: scales must be positive and finite, got %g", s);
			double o = floor((double)in[d] * len * s);
			if (!(o >= 0 && o < 9.0e15))
				return rt_errorf(e, RT_EUSER, "Resize: output length %g of axis %d is out of range", o, d);
			g->scale[d] = s, g->out[d] = (int64_t)o;
		}
		return 0;
	}
	for (int i = 0; i < na; i++)
		if (sizes[i] < 0 || (sizes[i] > 0 && in[ax[i]] == 0))
			return rt_errorf(e, RT_EUSER, "Resize: sizes[%d] = %lld does not fit axis %d of length %lld", i,
					 (long long)sizes[i], ax[i], (long long)in[ax[i]]);
	if (kar == 0) {
		for (int i = 0; i < na; i++) {
			int d = ax[i];
			g->out[d] = sizes[i];
			g->scale[d] = in[d] ? (double)sizes[i] / (double)in[d] : 1;
		}
		return 0;
	}
	double s = kar == 1 ? INFINITY : 0;
	for (int i = 0; i < na; i++) {
		double r = in[ax[i]] ? (double)sizes[i] / (double)in[ax[i]] : 1;
		s = kar == 1 ? fmin(s, r) : fmax(s, r);
	}
	for (int i = 0; i < na; i++) {
		int d = ax[i];
		g->scale[d] = s;
		g->out[d] = (int64_t)(s * (double)in[d] + 0.5);   /* round_half_up, as the reference */
	}
	return 0;
}

/* ---- taps ---- */
typedef struct Taps {
	int n;                 /* taps per output coordinate */
	int64_t *idx;          /* [out][n] input indices (clamped); -1: extrapolation_value */
	double *w;             /* [out][n] */
	int single;            /* 1: each output reads exactly one input element (idx[o*n]) */
} Taps;

typedef struct RzCfg {
	int mode, ct, nm, exclude, antialias;
	double A, extrap;
} RzCfg;

/* Keys' cubic convolution kernel with parameter A at distance x (Keys 1981, eq. 15). */
static double keys(double A, double x)
{
	x = fabs(x);
	double x2 = x * x, x3 = x2 * x;
	if (x <= 1)
		return (A + 2) * x3 - (A + 3) * x2 + 1;
	if (x < 2)
		return A * x3 - 5 * A * x2 + 8 * A * x - 4 * A;
	return 0;
}

/* Number of taps of one output coordinate on an axis of scale s. */
static int tap_count(const RzCfg *c, double s)
{
	double sc = s > 1 ? 1 : s;
	if (c->mode == RZ_NEAREST || (c->mode == RZ_LINEAR && !c->antialias))
		return 2;
	if (c->mode == RZ_CUBIC && !c->antialias)
		return 4;
	if (c->mode == RZ_LINEAR)
		return 2 - 2 * (int)(floor(-1 / sc) + 1);
	return 2 - 2 * (int)(floor(-2 / sc) + 1);
}

/* Coefficients of the n taps for ratio r in (0, 1] (the reference's _*_coeffs). */
static void coeffs(const RzCfg *c, double r, double s, int n, double *w)
{
	if (c->mode == RZ_NEAREST) {
		int right = r == 1 ? 1 : c->nm == NM_ROUND_FLOOR ? r > 0.5 : c->nm == NM_ROUND_CEIL ? r >= 0.5 : c->nm == NM_CEIL;
		w[0] = !right, w[1] = right;
		return;
	}
	if (!c->antialias && c->mode == RZ_LINEAR) {
		w[0] = 1 - r, w[1] = r;
		return;
	}
	if (!c->antialias) {
		double A = c->A;
		w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
		w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
		w[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
		w[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
		return;
	}
	double sc = s > 1 ? 1 : s, sum = 0;
	int start = 1 - n / 2;
	for (int k = 0; k < n; k++) {
		double arg = ((double)(start + k) - r) * sc;
		w[k] = c->mode == RZ_LINEAR ? fmin(fmax(1 - fabs(arg), 0), 1) : keys(c->A, arg);
		sum += w[k];
	}
	for (int k = 0; k < n; k++)
		w[k] /= sum;
}

/* x_ori of output coordinate x on an axis (the reference's _interpolate_1d_with_x); *out set
 * when tf_crop_and_resize lands outside [0, in-1]. */
static double source_coord(const RzCfg *c, int64_t xo, int64_t in, int64_t outn, double s, double r0, double r1,
			   int *out)
{
	double x = (double)xo, iw = (double)in, ow = s * iw, xr;
	*out = 0;
	switch (c->ct) {
	case CT_ALIGN: return ow == 1 ? 0 : x * (iw - 1) / (ow - 1);
	case CT_ASYM: return x / s;
	case CT_TF_CROP:
		xr = ow == 1 ? (r1 - r0) * (iw - 1) / 2 : x * (r1 - r0) * (iw - 1) / (ow - 1);
		xr += r0 * (iw - 1);
		*out = xr < 0 || xr > iw - 1;
		return xr;
	case CT_PYTORCH: return ow == 1 ? -0.5 : (x + 0.5) / s - 0.5;
	case CT_HALF_PIXEL_SYM: {
		double adj = (double)outn / ow, center = iw / 2, off = center * (1 - adj);
		return off + (x + 0.5) / s - 0.5;
	}
	case CT_TF_NN: return (x + 0.5) / s;
	default: return (x + 0.5) / s - 0.5;
	}
}

static int axis_taps(const RzCfg *c, int64_t in, int64_t outn, double s, double r0, double r1, Taps *t, RtError *e)
{
	int n = tap_count(c, s);
	double w[64];
	if (n < 1 || n > 64)
		return rt_errorf(e, RT_EUSER, "Resize: scale %g needs %d antialias taps, more than 64", s, n);
	t->n = n;
	t->single = c->mode == RZ_NEAREST;
	t->idx = rt_malloc(sizeof(int64_t) * (size_t)(outn * n + 1));
	t->w = rt_malloc(sizeof(double) * (size_t)(outn * n + 1));
	if (!t->idx || !t->w)
		return rt_errorf(e, RT_ENOMEM, "out of memory for Resize taps");
	for (int64_t o = 0; o < outn; o++) {
		int64_t *ix = t->idx + o * n;
		double *wo = t->w + o * n;
		int outside;
		double xs = source_coord(c, o, in, outn, s, r0, r1, &outside), fl = floor(xs);
		if (outside || in == 0) {
			for (int k = 0; k < n; k++)
				ix[k] = -1, wo[k] = 0;
			continue;
		}
		double r = xs == fl ? 1 : xs - fl;
		int64_t left = (int64_t)fl - (xs == fl);
		coeffs(c, r, s, n, w);
		double tot = 0;
		for (int k = 0; k < n; k++) {
			int64_t p = left + k + 1 - n / 2;
			wo[k] = c->exclude && (p < 0 || p >= in) ? 0 : w[k];
			ix[k] = p < 0 ? 0 : p >= in ? in - 1 : p;
			tot += wo[k];
		}
		if (c->exclude && tot != 0)
			for (int k = 0; k < n; k++)
				wo[k] /= tot;
		for (int k = 0; t->single && k < n; k++)   /* nearest: the tap with coefficient 1 goes first */
			if (wo[k] != 0) {
				ix[0] = ix[k];
				break;
			}
	}
	return 0;
}

/* One 1-D pass along axis d: y[outer, o, inner] from x[outer, i, inner]. */
static void axis_pass(const Taps *t, const RzCfg *c, int f64, const double *x, int64_t outer, int64_t in, int64_t inner,
		      int64_t outn, double *y)
{
	for (int64_t a = 0; a < outer; a++)
		for (int64_t o = 0; o < outn; o++) {
			const int64_t *ix = t->idx + o * t->n;
			const double *w = t->w + o * t->n;
			const double *xa = x + a * in * inner;
			double *ya = y + (a * outn + o) * inner;
			if (ix[0] < 0) {
				for (int64_t b = 0; b < inner; b++)
					ya[b] = c->extrap;
				continue;
			}
			if (t->single) {
				memcpy(ya, xa + ix[0] * inner, (size_t)inner * sizeof *ya);
				continue;
			}
			for (int64_t b = 0; b < inner; b++) {
				double s = 0;
				for (int k = 0; k < t->n; k++)
					s = kn_acc(f64, s + kn_acc(f64, w[k] * xa[ix[k] * inner + b]));
				ya[b] = s;
			}
		}
}

/* axis_pass for nearest on f32 storage: the chosen element copied (what the double path stores
 * after rounding back to f32 is that element), the extrapolation value rounded once. */
static void axis_pass_nearest_f32(const Taps *t, const RzCfg *c, const float *x, int64_t outer, int64_t in,
				  int64_t inner, int64_t outn, float *y)
{
	if (inner == 1) {   /* the innermost axis: one element per output, gathered (no memcpy calls) */
		for (int64_t a = 0; a < outer; a++, x += in, y += outn)
			for (int64_t o = 0; o < outn; o++) {
				int64_t i = t->idx[o * t->n];
				y[o] = i < 0 ? (float)c->extrap : x[i];
			}
		return;
	}
	for (int64_t a = 0; a < outer; a++)
		for (int64_t o = 0; o < outn; o++) {
			const int64_t *ix = t->idx + o * t->n;
			float *ya = y + (a * outn + o) * inner;
			if (ix[0] < 0)
				for (int64_t b = 0; b < inner; b++)
					ya[b] = (float)c->extrap;
			else
				memcpy(ya, x + (a * in + ix[0]) * inner, (size_t)inner * sizeof *ya);
		}
}

/* Resize nearest on f32 storage, one pass per resampled axis in f32 (no double copies). */
static int resize_nearest_f32(const RtKernelArgs *a, const RzCfg *c, const RtResizeGeom *g, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t cur[RT_MAX_RANK];
	memcpy(cur, x->dims, sizeof(int64_t) * (size_t)x->rank);
	if (kn_out_raw(a, 0, x->dtype, x->rank, g->out, e) < 0)
		return -1;
	const float *v = rt_f32(x);
	float *w = NULL, *own = NULL;
	Taps t = { 0 };
	int last = -1;
	for (int d = x->rank - 1; d >= 0; d--)
		if (!(g->out[d] == x->dims[d] && g->scale[d] == 1 && c->ct != CT_TF_CROP && c->ct != CT_TF_NN))
			last = d;    /* the outermost resampled axis writes the output */
	for (int d = x->rank - 1; d >= 0; d--) {
		if (g->out[d] == x->dims[d] && g->scale[d] == 1 && c->ct != CT_TF_CROP && c->ct != CT_TF_NN)
			continue;
		KN_TRY(axis_taps(c, x->dims[d], g->out[d], g->scale[d], g->roi0[d], g->roi1[d], &t, e));
		int64_t outer = kn_numel(d, cur), inner = kn_numel(x->rank - d - 1, cur + d + 1);
		w = d == last ? rt_f32(&a->out[0]) : rt_malloc(sizeof *w * (size_t)(outer * g->out[d] * inner + 1));
		if (!w) {
			rt_errorf(e, RT_ENOMEM, "out of memory for Resize");
			goto fail;
		}
		axis_pass_nearest_f32(&t, c, v, outer, cur[d], inner, g->out[d], w);
		rt_free(own), rt_free(t.idx), rt_free(t.w);
		t = (Taps){ 0 };
		own = d == last ? NULL : w;
		v = w, w = NULL;
		cur[d] = g->out[d];
	}
	if (last < 0)   /* nothing resampled: the input itself */
		memcpy(rt_f32(&a->out[0]), v, sizeof *v * (size_t)x->n);
	return kn_finish(&a->out[0], a->opts, e);
fail:
	rt_free(own), rt_free(t.idx), rt_free(t.w);
	kn_free_outs(a);
	return -1;
}

/* Reads the optional float input i (roi, scales) into v; its count (0 when absent or empty). */
static int float_input(const RtKernelArgs *a, int i, const char *what, double *v, int max, RtError *e)
{
	const RtTensor *t = kn_in(a, i);
	if (!t || t->n == 0)
		return 0;
	if (!rt_dtype_isfloat(t->dtype) || t->n > max)
		return rt_errorf(e, RT_EUSER, "Resize: %s must be a float tensor of at most %d values", what, max);
	for (int64_t k = 0; k < t->n; k++)
		v[k] = rt_get(t, k);
	return (int)t->n;
}

static int config(const Attrs *at, RzCfg *c, RtError *e)
{
	c->mode = enum_attr(at, "mode", "nearest", mode_names, 3, e);
	c->ct = c->mode < 0 ? -1 : enum_attr(at, "coordinate_transformation_mode", "half_pixel", ct_names, 7, e);
	c->nm = c->ct < 0 ? -1 : enum_attr(at, "nearest_mode", "round_prefer_floor", nm_names, 4, e);
	if (c->nm < 0)
		return -1;
	c->A = rt_attr_float(at, "cubic_coeff_a", -0.75);
	c->exclude = rt_attr_int(at, "exclude_outside", 0) != 0;
	c->extrap = rt_attr_float(at, "extrapolation_value", 0.0);
	c->antialias = rt_attr_int(at, "antialias", 0) != 0;
	if (c->antialias && c->mode == RZ_NEAREST)
		return rt_errorf(e, RT_EUSER, "Resize: antialias applies to linear and cubic modes only");
	return 0;
}

int rk_Resize(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *sz = kn_in(a, 3);
	double roi[2 * RT_MAX_RANK], sc[RT_MAX_RANK];
	int64_t sizes[RT_MAX_RANK];
	int nsizes = 0;
	RzCfg c;
	RtResizeGeom g;
	if (config(a->attrs, &c, e) < 0)
		return -1;
	int nroi = float_input(a, 1, "roi", roi, 2 * RT_MAX_RANK, e), nsc = nroi < 0 ? -1 : float_input(a, 2, "scales", sc, RT_MAX_RANK, e);
	if (nsc < 0)
		return -1;
	if (sz && sz->n > 0 && kn_ints("Resize", sz, sizes, RT_MAX_RANK, &nsizes, e) < 0)
		return -1;
	if (rt_resize_geometry(a->attrs, x->rank, x->dims, roi, nroi, sc, nsc, sizes, nsizes, &g, e) < 0)
		return -1;
	int f64 = kn_acc64(a);
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (c.mode == RZ_NEAREST && !c.antialias && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 &&
	    rt_dtypes[od].storage == S_F32 && x->n > 0)
		return resize_nearest_f32(a, &c, &g, e);
	int64_t cur[RT_MAX_RANK];
	memcpy(cur, x->dims, sizeof(int64_t) * (size_t)x->rank);
	double *v = kn_load(x, e), *w = NULL;
	Taps t = { 0 };
	if (!v)
		return -1;
	KN_TRY(kn_out(a, 0, x->dtype, x->rank, g.out, e));
	for (int d = x->rank - 1; d >= 0; d--) {
		if (g.out[d] == x->dims[d] && g.scale[d] == 1 && c.ct != CT_TF_CROP && c.ct != CT_TF_NN && !c.antialias)
			continue;   /* x_ori = x exactly on every mode: the identity */
		KN_TRY(axis_taps(&c, x->dims[d], g.out[d], g.scale[d], g.roi0[d], g.roi1[d], &t, e));
		int64_t outer = kn_numel(d, cur), inner = kn_numel(x->rank - d - 1, cur + d + 1);
		if (!(w = kn_alloc(outer * g.out[d] * inner, e)))
			goto fail;
		axis_pass(&t, &c, f64, v, outer, cur[d], inner, g.out[d], w);
		rt_free(v), rt_free(t.idx), rt_free(t.w);
		t = (Taps){ 0 };
		v = w, w = NULL;
		cur[d] = g.out[d];
	}
	KN_TRY(kn_store(&a->out[0], v, a->opts, e));
	rt_free(v);
	return 0;
fail:
	rt_free(v), rt_free(w), rt_free(t.idx), rt_free(t.w);
	kn_free_outs(a);
	return -1;
}
