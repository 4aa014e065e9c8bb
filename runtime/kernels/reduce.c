/* runtime/kernels/reduce.c: reductions, arg-reductions, softmax, TopK and CumSum.
 *
 * The input is regrouped so each reduction group is one contiguous row (kn_gather_rows); each
 * operator is then a short function over a row.  Accumulations are sequential in row-major
 * order, rounded to f32 at each step unless f64 accumulation is on.  Softmax, LogSoftmax and
 * ReduceLogSumExp subtract the row maximum first.  Empty reductions give the identity
 * (Sum 0, Prod 1, Max -inf, Min +inf, LogSumExp -inf; Mean 0/0 = NaN) as ONNX specifies.
 * Specs: https://onnx.ai/onnx/operators/onnx__ReduceSum.html (opset 18: axes as input),
 * onnx__Softmax.html (opset 13; pre-13 coerces to 2-D: attribute onnx_opset < 13 selects it),
 * onnx__TopK.html, onnx__CumSum.html, onnx__ArgMax.html.
 */
#include "runtime/kernels/kernels_impl.h"

#include <stdlib.h>

typedef double (*RowFn)(const double *x, int64_t n, int f64);

static double r_sum(const double *x, int64_t n, int f64)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s = kn_acc(f64, s + x[i]);
	return s;
}
static double r_mean(const double *x, int64_t n, int f64) { return kn_acc(f64, r_sum(x, n, f64) / (double)n); }
static double r_max(const double *x, int64_t n, int f64)
{
	double m = -INFINITY;
	for (int64_t i = 0; i < n; i++)
		if (x[i] > m || isnan(x[i]))
			m = x[i];
	return m;
}
static double r_min(const double *x, int64_t n, int f64)
{
	double m = INFINITY;
	for (int64_t i = 0; i < n; i++)
		if (x[i] < m || isnan(x[i]))
			m = x[i];
	return m;
}
static double r_prod(const double *x, int64_t n, int f64)
{
	double p = 1;
	for (int64_t i = 0; i < n; i++)
		p = kn_acc(f64, p * x[i]);
	return p;
}
static double r_sumsq(const double *x, int64_t n, int f64)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s = kn_acc(f64, s + kn_acc(f64, x[i] * x[i]));
	return s;
}
static double r_l2(const double *x, int64_t n, int f64) { return kn_acc(f64, sqrt(r_sumsq(x, n, f64))); }
/* log(sum(exp(x - m))) + m with m the row maximum (stable for large inputs). */
static double r_lse(const double *x, int64_t n, int f64)
{
	double m = r_max(x, n, f64), s = 0;
	if (isinf(m))
		return m;
	for (int64_t i = 0; i < n; i++)
		s = kn_acc(f64, s + kn_acc(f64, exp(x[i] - m)));
	return kn_acc(f64, log(s) + m);
}

/* The reduced-axes mask of a Reduce* node: axes from input 1 (opset >= 18) or the `axes`
 * attribute; none given means all axes unless noop_with_empty_axes. Sets *noop. */
static int reduce_axes(const RtKernelArgs *a, const char *op, int *red, int *noop, RtError *e)
{
	const RtTensor *x = a->in[0], *ax = kn_in(a, 1);
	int64_t v[RT_MAX_RANK * 2];
	int n = 0;
	if (ax) {
		if (kn_ints(op, ax, v, RT_MAX_RANK * 2, &n, e) < 0)
			return -1;
	} else {
		const int64_t *av = rt_attr_ints(a->attrs, "axes", &n);
		if (n > RT_MAX_RANK * 2)
			return rt_errorf(e, RT_EUSER, "%s: too many axes", op);
		for (int i = 0; i < n; i++)
			v[i] = av[i];
	}
	*noop = n == 0 && rt_attr_int(a->attrs, "noop_with_empty_axes", 0);
	for (int k = 0; k < x->rank; k++)
		red[k] = n == 0 && !*noop;
	for (int i = 0; i < n; i++) {
		int k;
		if (kn_axis(op, v[i], x->rank, &k, e) < 0)
			return -1;
		red[k] = 1;
	}
	return 0;
}

/* Output dims of a reduction: reduced axes become 1 (keepdims) or disappear. */
static int reduced_dims(const RtTensor *x, const int *red, int keep, int64_t *dims)
{
	int r = 0;
	for (int k = 0; k < x->rank; k++)
		if (!red[k])
			dims[r++] = x->dims[k];
		else if (keep)
			dims[r++] = 1;
	return r;
}

static int reduce(const RtKernelArgs *a, RtError *e, const char *op, RowFn f)
{
	const RtTensor *x = a->in[0];
	int red[RT_MAX_RANK], noop, f64 = kn_acc64(a);
	if (reduce_axes(a, op, red, &noop, e) < 0)
		return -1;
	int64_t dims[RT_MAX_RANK], rows, len;
	int r = reduced_dims(x, red, (int)rt_attr_int(a->attrs, "keepdims", 1), dims);
	double *xv = kn_load(x, e), *g = NULL, *y = NULL;
	if (!xv)
		return -1;
	KN_TRY(kn_out(a, 0, x->dtype, r, dims, e));
	g = kn_gather_rows(xv, x->rank, x->dims, red, &rows, &len, e);
	y = g ? kn_alloc(rows, e) : NULL;
	if (!y)
		goto fail;
	for (int64_t i = 0; i < rows; i++)
		y[i] = f(g + i * len, len, f64);
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(xv), rt_free(g), rt_free(y);
	return 0;
fail:
	rt_free(xv), rt_free(g), rt_free(y);
	kn_free_outs(a);
	return -1;
}

int rk_ReduceSum(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceSum", r_sum); }
int rk_ReduceMean(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceMean", r_mean); }
int rk_ReduceMax(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceMax", r_max); }
int rk_ReduceMin(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceMin", r_min); }
int rk_ReduceProd(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceProd", r_prod); }
int rk_ReduceSumSquare(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceSumSquare", r_sumsq); }
int rk_ReduceL2(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceL2", r_l2); }
int rk_ReduceLogSumExp(const RtKernelArgs *a, RtError *e) { return reduce(a, e, "ReduceLogSumExp", r_lse); }

/* ---- ArgMax / ArgMin ---- */
static int argreduce(const RtKernelArgs *a, RtError *e, const char *op, int sign)
{
	const RtTensor *x = a->in[0];
	int ax, red[RT_MAX_RANK] = { 0 };
	if (kn_axis(op, rt_attr_int(a->attrs, "axis", 0), x->rank, &ax, e) < 0)
		return -1;
	if (x->rank && x->dims[ax] == 0)
		return rt_errorf(e, RT_EUSER, "%s: the reduced axis is empty", op);
	red[ax] = x->rank > 0;
	int last = (int)rt_attr_int(a->attrs, "select_last_index", 0);
	int64_t dims[RT_MAX_RANK], rows, len;
	int r = reduced_dims(x, red, (int)rt_attr_int(a->attrs, "keepdims", 1), dims);
	double *xv = kn_load(x, e), *g = NULL;
	if (!xv)
		return -1;
	KN_TRY(kn_out(a, 0, DT_I64, r, dims, e));
	g = kn_gather_rows(xv, x->rank, x->dims, red, &rows, &len, e);
	if (!g)
		goto fail;
	for (int64_t i = 0; i < rows; i++) {
		const double *row = g + i * len;
		int64_t best = 0;
		for (int64_t j = 1; j < len; j++) {
			double d = sign * (row[j] - row[best]);
			if (d > 0 || (last && row[j] == row[best]))
				best = j;
		}
		rt_seti(&a->out[0], i, best);
	}
	rt_free(xv), rt_free(g);
	return 0;
fail:
	rt_free(xv), rt_free(g);
	kn_free_outs(a);
	return -1;
}

int rk_ArgMax(const RtKernelArgs *a, RtError *e) { return argreduce(a, e, "ArgMax", 1); }
int rk_ArgMin(const RtKernelArgs *a, RtError *e) { return argreduce(a, e, "ArgMin", -1); }

/* ---- Softmax / LogSoftmax ---- */
/* One row of softmax: exponentials of x - max (kn_exp: libm or FA4 exp2), then normalised. */
void kn_softmax_row(const RtExecOpts *o, int f64, double *x, int64_t n, int logsm)
{
	double m = r_max(x, n, f64), s = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = kn_acc(f64, x[i] - m);
		double ex = kn_acc(f64, kn_exp(o, d));
		s = kn_acc(f64, s + ex);
		x[i] = logsm ? d : ex;
	}
	double ls = kn_acc(f64, log(s));
	for (int64_t i = 0; i < n; i++)
		x[i] = logsm ? kn_acc(f64, x[i] - ls) : kn_acc(f64, x[i] / s);
}

/* e^x rounded to f32, for f32 x, in rows that vectorise: x = k ln2 + r with k = round(x/ln2)
 * (Cody and Waite's two-part ln2, exact for |k| < 2^21), e^r by its Taylor polynomial to degree
 * 13 (|r| <= ln2/2: truncation below 2e-17 relative), times 2^k from the exponent bits, all in
 * double without fused operations (-ffp-contract=off), so the same bits on every CPU and vector
 * width.  The double carries about 2 ulp of error, so its f32 rounding is libm's (float)exp(x)
 * except where e^x lies within ~4e-16 relative of an f32 rounding midpoint (about 1 value in
 * 10^8).  Below -104 the f32 result is 0 (e^x < 2^-150), above 89 it is +Inf; NaN passes. */
KN_VEC __attribute__((optimize("no-trapping-math"))) static void exp_row_f32(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {   /* the coefficients 1/j! rounded to double */
		float v = x[i];
		double d = v < -104.0f ? -104.0 : v > 89.0f ? 89.0 : (double)v;
		double t = d * 0x1.71547652b82fep+0 + 0x1.8p52, k = t - 0x1.8p52;   /* k = round(d/ln2) */
		double r = (d - k * 0x1.62e42p-1) - k * 0x1.fdf473de6af28p-22, p = 0x1.6124613a86d09p-33;
		p = p * r + 0x1.1eed8eff8d898p-29, p = p * r + 0x1.ae64567f544e4p-26, p = p * r + 0x1.27e4fb7789f5cp-22;
		p = p * r + 0x1.71de3a556c734p-19, p = p * r + 0x1.a01a01a01a01ap-16, p = p * r + 0x1.a01a01a01a01ap-13;
		p = p * r + 0x1.6c16c16c16c17p-10, p = p * r + 0x1.1111111111111p-7, p = p * r + 0x1.5555555555555p-5;
		p = p * r + 0x1.5555555555555p-3, p = p * r + 0x1p-1, p = p * r + 1.0, p = p * r + 1.0;
		uint64_t b;
		memcpy(&b, &t, sizeof b);   /* t's low bits are k: 2^k's exponent field is k + 1023 */
		b = (b + 1023) << 52;
		double s;
		memcpy(&s, &b, sizeof s);
		float ex = (float)(p * s);
		y[i] = v < -104.0f ? 0.0f : v != v ? v : ex;
	}
}

/* The largest of x[0..n) (-Inf when empty), or the last NaN when there is one: the value the
 * sequential scan "x > m || isnan(x)" keeps, up to the sign of a zero maximum (which softmax's
 * exponentials do not see: e^(+0) = e^(-0)). */
KN_VEC static float row_max_f32(const float *x, int64_t n)
{
	float mm[8] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	int nan = 0;
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int j = 0; j < 8; j++) {
			float v = x[i + j];
			mm[j] = v > mm[j] ? v : mm[j];
			nan |= v != v;
		}
	float m = -INFINITY;
	for (; i < n; i++) {
		m = x[i] > m ? x[i] : m;
		nan |= x[i] != x[i];
	}
	for (int j = 0; j < 8; j++)
		m = mm[j] > m ? mm[j] : m;
	for (i = n - 1; nan && i >= 0; i--)
		if (x[i] != x[i])
			return x[i];
	return m;
}

KN_VEC static void sub_row_f32(const float *x, float m, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] - m;
}

KN_VEC static void div_row_f32(float *y, float s, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = y[i] / s;
}

/* kn_softmax_row in f32 storage: each step is the f32 rounding of the same double step.  With
 * libm exponentials (no FA4 exp2) softmax runs in passes that vectorise (exp_row_f32); the sum
 * stays one f32 chain in index order. */
static void softmax_row_f32(const RtExecOpts *o, const float *x, float *y, int64_t n, int logsm)
{
	float m = -INFINITY, s = 0;
	if (!logsm && (!o || o->exp2_poly <= 0)) {
		sub_row_f32(x, row_max_f32(x, n), y, n);
		exp_row_f32(y, y, n);
		for (int64_t i = 0; i < n; i++)
			s += y[i];
		div_row_f32(y, s, n);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		if (x[i] > m || isnan(x[i]))
			m = x[i];
	for (int64_t i = 0; i < n; i++) {
		float d = x[i] - m, ex = (float)kn_exp(o, d);
		s += ex;
		y[i] = logsm ? d : ex;
	}
	float ls = (float)log((double)s);
	for (int64_t i = 0; i < n; i++)
		y[i] = logsm ? y[i] - ls : y[i] / s;
}

static int softmax(const RtKernelArgs *a, RtError *e, const char *op, int logsm)
{
	const RtTensor *x = a->in[0];
	int old = rt_attr_int(a->attrs, "onnx_opset", 13) < 13, ax, red[RT_MAX_RANK] = { 0 };
	if (kn_axis(op, rt_attr_int(a->attrs, "axis", old ? 1 : -1), x->rank, &ax, e) < 0)
		return -1;
	for (int k = 0; k < x->rank; k++)
		red[k] = old ? k >= ax : k == ax;
	int64_t rows, len;
	int trailing = 1;   /* the reduced axes are the last ones: each group is a contiguous row */
	for (int k = 0; k + 1 < x->rank; k++)
		trailing &= !red[k] || red[k + 1];
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (trailing && !kn_acc64(a) && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[od].storage == S_F32) {
		if (kn_out_raw(a, 0, x->dtype, x->rank, x->dims, e) < 0)
			return -1;
		len = 1;
		for (int k = 0; k < x->rank; k++)
			len *= red[k] ? x->dims[k] : 1;
		rows = len ? x->n / len : 0;
		for (int64_t i = 0; i < rows; i++)
			softmax_row_f32(a->opts, rt_f32(x) + i * len, rt_f32(&a->out[0]) + i * len, len, logsm);
		return kn_finish(&a->out[0], a->opts, e);
	}
	double *xv = kn_load(x, e), *g = NULL;
	if (!xv)
		return -1;
	KN_TRY(kn_out_like(a, 0, x->dtype, x, e));
	g = kn_gather_rows(xv, x->rank, x->dims, red, &rows, &len, e);
	if (!g)
		goto fail;
	for (int64_t i = 0; i < rows; i++)
		kn_softmax_row(a->opts, kn_acc64(a), g + i * len, len, logsm);
	kn_scatter_rows(g, x->rank, x->dims, red, xv);
	KN_TRY(kn_store(&a->out[0], xv, a->opts, e));
	rt_free(xv), rt_free(g);
	return 0;
fail:
	rt_free(xv), rt_free(g);
	kn_free_outs(a);
	return -1;
}

int rk_Softmax(const RtKernelArgs *a, RtError *e) { return softmax(a, e, "Softmax", 0); }
int rk_LogSoftmax(const RtKernelArgs *a, RtError *e) { return softmax(a, e, "LogSoftmax", 1); }

/* ---- exponentials ---- */
/* FA4 polynomial coefficients of 2^f on [0,1), degrees 1..5 (Sollya fpminimax; source:
 * Dao-AILab/flash-attention flash_attn/cute/utils.py POLY_EX2; numerics.md §9). */
static const float poly_ex2[6][6] = {
	{ 1.0f },
	{ 1.0f, 0.922497093677520751953125f },
	{ 1.0f, 0.6657850742340087890625f, 0.330107033252716064453125f },
	{ 1.0f, 0.695146143436431884765625f, 0.227564394474029541015625f, 0.077119089663028717041015625f },
	{ 1.0f, 0.693042695522308349609375f, 0.2412912547588348388671875f,
	  5.2225358784198760986328125e-2f, 1.3434938155114650726318359375e-2f },
	{ 1.0f, 0.693151414394378662109375f, 0.24016360938549041748046875f,
	  5.5802188813686370849609375e-2f, 9.01452265679836273193359375e-3f,
	  1.86810153536498546600341796875e-3f },
};

/* 2^x per numerics.md §9: clamp at -127, split x = j + f with j = floor(x) (the add.rm trick
 * is exact floor for |x| < 2^22), Horner with f32 FMAs, then add j to the exponent field. */
float kn_exp2_fa4(float x, int deg)
{
	if (isnan(x))
		return x;
	if (x >= 128.0f)
		return INFINITY;   /* the hardware sequence assumes x <= 127; beyond it overflows */
	if (deg < 1)
		deg = 1;
	if (deg > 5)
		deg = 5;
	float xc = x > -127.0f ? x : -127.0f;
	float j = floorf(xc), f = xc - j, p = poly_ex2[deg][deg];
	for (int k = deg - 1; k >= 0; k--)
		p = fmaf(p, f, poly_ex2[deg][k]);
	uint32_t u;
	memcpy(&u, &p, sizeof u);
	u += (uint32_t)(int32_t)j * (UINT32_C(1) << 23);
	memcpy(&p, &u, sizeof p);
	return p;
}

double kn_exp(const RtExecOpts *o, double x)
{
	if (!o || o->exp2_poly <= 0)
		return exp(x);
	float t = (float)x * (float)M_LOG2E;   /* log2(e) folded into the scale, in f32 */
	return kn_exp2_fa4(t, o->exp2_poly);
}

/* ---- TopK ---- */
typedef struct TopKey { double v; int64_t i; int largest; } TopKey;

/* Order: larger (or smaller) value first, NaN counted as the largest, ties by lower index. */
static int topk_cmp(const void *pa, const void *pb)
{
	const TopKey *x = pa, *y = pb;
	int xn = isnan(x->v), yn = isnan(y->v);
	int c = xn != yn ? (xn ? 1 : -1) : xn ? 0 : (x->v > y->v) - (x->v < y->v);
	if (!x->largest)
		c = -c;
	if (c)
		return -c;
	return (x->i > y->i) - (x->i < y->i);
}

int rk_TopK(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int ax, red[RT_MAX_RANK] = { 0 };
	if (kn_axis("TopK", rt_attr_int(a->attrs, "axis", -1), x->rank, &ax, e) < 0)
		return -1;
	int64_t k = rt_geti(a->in[1], 0), dims[RT_MAX_RANK], rows, len;
	if (x->rank == 0 || k < 0 || k > x->dims[ax])
		return rt_errorf(e, RT_EUSER, "TopK: k=%lld is outside [0, %lld]", (long long)k,
				 (long long)(x->rank ? x->dims[ax] : 0));
	red[ax] = 1;
	int largest = (int)rt_attr_int(a->attrs, "largest", 1);
	memcpy(dims, x->dims, sizeof dims);
	dims[ax] = k;
	double *xv = kn_load(x, e), *g = NULL, *vo = NULL, *io = NULL;
	TopKey *keys = NULL;
	if (!xv)
		return -1;
	KN_TRY(kn_out(a, 0, x->dtype, x->rank, dims, e));
	KN_TRY(kn_out(a, 1, DT_I64, x->rank, dims, e));
	g = kn_gather_rows(xv, x->rank, x->dims, red, &rows, &len, e);
	vo = kn_alloc(rows * k, e);
	io = kn_alloc(rows * k, e);
	keys = rt_malloc((size_t)(len ? len : 1) * sizeof *keys);
	if (!g || !vo || !io || !keys) {
		rt_errorf(e, RT_ENOMEM, "TopK: out of memory");
		goto fail;
	}
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < len; j++)
			keys[j] = (TopKey){ g[r * len + j], j, largest };
		qsort(keys, (size_t)len, sizeof *keys, topk_cmp);
		for (int64_t j = 0; j < k; j++) {
			vo[r * k + j] = keys[j].v;
			io[r * k + j] = (double)keys[j].i;
		}
	}
	kn_scatter_rows(vo, x->rank, dims, red, g);
	KN_TRY(kn_store(&a->out[0], g, a->opts, e));
	kn_scatter_rows(io, x->rank, dims, red, g);
	KN_TRY(kn_store(&a->out[1], g, a->opts, e));
	rt_free(xv), rt_free(g), rt_free(vo), rt_free(io), rt_free(keys);
	return 0;
fail:
	rt_free(xv), rt_free(g), rt_free(vo), rt_free(io), rt_free(keys);
	kn_free_outs(a);
	return -1;
}

/* ---- CumSum ---- */
int rk_CumSum(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int ax, red[RT_MAX_RANK] = { 0 }, f64 = kn_acc64(a);
	if (kn_axis("CumSum", rt_geti(a->in[1], 0), x->rank, &ax, e) < 0)
		return -1;
	red[ax] = x->rank > 0;
	int excl = (int)rt_attr_int(a->attrs, "exclusive", 0), rev = (int)rt_attr_int(a->attrs, "reverse", 0);
	int64_t rows, len;
	double *xv = kn_load(x, e), *g = NULL;
	if (!xv)
		return -1;
	KN_TRY(kn_out_like(a, 0, x->dtype, x, e));
	g = kn_gather_rows(xv, x->rank, x->dims, red, &rows, &len, e);
	if (!g)
		goto fail;
	for (int64_t r = 0; r < rows; r++) {
		double s = 0, *row = g + r * len;
		for (int64_t t = 0; t < len; t++) {
			int64_t j = rev ? len - 1 - t : t;
			double v = row[j];
			if (!excl)
				s = kn_isint(x->dtype) ? s + v : kn_acc(f64, s + v);
			row[j] = s;
			if (excl)
				s = kn_isint(x->dtype) ? s + v : kn_acc(f64, s + v);
		}
	}
	kn_scatter_rows(g, x->rank, x->dims, red, xv);
	KN_TRY(kn_store(&a->out[0], xv, a->opts, e));
	rt_free(xv), rt_free(g);
	return 0;
fail:
	rt_free(xv), rt_free(g);
	kn_free_outs(a);
	return -1;
}
