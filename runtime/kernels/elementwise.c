/* runtime/kernels/elementwise.c: unary, binary and variadic elementwise kernels.
 *
 * ONNX semantics (https://onnx.ai/onnx/operators/): multidirectional broadcasting for the
 * binary and variadic operators, integer arithmetic exact in i64 and wrapped to the dtype's
 * width (Div truncates toward zero, as C and the ONNX reference do), float arithmetic computed
 * per element in double and rounded to f32 (exactly the f32 operation for + - * /) or kept in
 * f64, then rounded to the output dtype's grid.  On f32 storage the same values come from f32
 * rows (contiguous, or broadcast rows from kn_rows_init) without per-element calls.  Also
 * Cast/CastLike (ONNX TensorProto dtype codes or aicc dtype names in `to`), Clip, Where, Dropout
 * (inference) and SwiGLU.
 */
#include "runtime/kernels/kernels_impl.h"

/* ---- unary ---- */
typedef struct UCtx { double alpha, beta; int tanh_approx; } UCtx;
typedef double (*UFn)(double x, const UCtx *c);
typedef int64_t (*UIFn)(int64_t x);

static double u_id(double x, const UCtx *c) { return x; }
static double u_neg(double x, const UCtx *c) { return -x; }
static double u_abs(double x, const UCtx *c) { return fabs(x); }
static double u_sign(double x, const UCtx *c) { return isnan(x) ? x : (x > 0) - (x < 0); }
static double u_sqrt(double x, const UCtx *c) { return sqrt(x); }
static double u_recip(double x, const UCtx *c) { return 1.0 / x; }
static double u_exp(double x, const UCtx *c) { return exp(x); }
static double u_log(double x, const UCtx *c) { return log(x); }
static double u_sin(double x, const UCtx *c) { return sin(x); }
static double u_cos(double x, const UCtx *c) { return cos(x); }
static double u_tanh(double x, const UCtx *c) { return tanh(x); }
static double u_erf(double x, const UCtx *c) { return erf(x); }
static double u_floor(double x, const UCtx *c) { return floor(x); }
static double u_ceil(double x, const UCtx *c) { return ceil(x); }
static double u_round(double x, const UCtx *c) { return kn_rne(x); }
static double u_sigmoid(double x, const UCtx *c)
{ return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }
static double u_relu(double x, const UCtx *c) { return x > 0 ? x : isnan(x) ? x : 0.0; }
static double u_leaky(double x, const UCtx *c) { return x >= 0 ? x : c->alpha * x; }
static double u_silu(double x, const UCtx *c) { return x * u_sigmoid(x, c); }
static double u_swish(double x, const UCtx *c) { return x * u_sigmoid(c->alpha * x, c); }
static double u_softplus(double x, const UCtx *c) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double u_mish(double x, const UCtx *c) { return x * tanh(u_softplus(x, c)); }
static double u_hsig(double x, const UCtx *c) { return fmax(0.0, fmin(1.0, c->alpha * x + c->beta)); }
static double u_hswish(double x, const UCtx *c) { return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5)); }
static double u_not(double x, const UCtx *c) { return x == 0; }
/* Gelu, ONNX opset 20: exact with erf, or the tanh approximation. */
static double u_gelu(double x, const UCtx *c)
{
	if (c->tanh_approx)
		return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
	return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static int64_t i_id(int64_t x) { return x; }
static int64_t i_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static int64_t i_sign(int64_t x) { return (x > 0) - (x < 0); }
static int64_t i_relu(int64_t x) { return x > 0 ? x : 0; }
static int64_t i_not(int64_t x) { return x == 0; }

/* ---- f32 rows: the same values as the double path, without per-element calls ----
 * A row function computes o[0..n) from x[0..n) in f32 storage.  Where f's result is exactly the
 * f32 operation (negation, absolute value, ReLU, floor/ceil/round, sqrt and reciprocal, which are
 * correctly rounded in double and round innocuously to f32 since 53 >= 2*24 + 2) it is written in
 * f32; otherwise f's double expression is inlined and rounded once, as the general path does. */
typedef void (*URow)(const float *x, float *o, int64_t n, const UCtx *c);
#define UROW_F(name, EXPR) \
	static void name(const float *x, float *o, int64_t n, const UCtx *c) \
	{ for (int64_t i = 0; i < n; i++) { float v = x[i]; o[i] = (EXPR); } }
#define UROW_D(name, fn) \
	static void name(const float *x, float *o, int64_t n, const UCtx *c) \
	{ for (int64_t i = 0; i < n; i++) o[i] = (float)fn((double)x[i], c); }
UROW_F(ur_id, v)
UROW_F(ur_neg, -v)
UROW_F(ur_abs, fabsf(v))
UROW_F(ur_relu, v > 0 ? v : isnan(v) ? v : 0.0f)
UROW_F(ur_sqrt, sqrtf(v))
UROW_F(ur_recip, 1.0f / v)
UROW_F(ur_floor, floorf(v))
UROW_F(ur_ceil, ceilf(v))
UROW_F(ur_round, nearbyintf(v))
UROW_F(ur_sign, isnan(v) ? v : (float)((v > 0) - (v < 0)))
UROW_D(ur_exp, u_exp)
UROW_D(ur_log, u_log)
UROW_D(ur_tanh, u_tanh)
UROW_D(ur_erf, u_erf)
UROW_D(ur_sigmoid, u_sigmoid)
UROW_D(ur_silu, u_silu)
UROW_D(ur_swish, u_swish)
UROW_D(ur_leaky, u_leaky)
UROW_D(ur_hsig, u_hsig)
UROW_D(ur_hswish, u_hswish)
UROW_D(ur_gelu, u_gelu)
UROW_D(ur_softplus, u_softplus)
UROW_D(ur_mish, u_mish)

static const struct { UFn f; URow row; } urows[] = {
	{ u_id, ur_id }, { u_neg, ur_neg }, { u_abs, ur_abs }, { u_relu, ur_relu }, { u_sqrt, ur_sqrt },
	{ u_recip, ur_recip }, { u_floor, ur_floor }, { u_ceil, ur_ceil }, { u_round, ur_round },
	{ u_sign, ur_sign }, { u_exp, ur_exp }, { u_log, ur_log }, { u_tanh, ur_tanh }, { u_erf, ur_erf },
	{ u_sigmoid, ur_sigmoid }, { u_silu, ur_silu }, { u_swish, ur_swish }, { u_leaky, ur_leaky },
	{ u_hsig, ur_hsig }, { u_hswish, ur_hswish }, { u_gelu, ur_gelu }, { u_softplus, ur_softplus },
	{ u_mish, ur_mish },
};

static URow urow_of(UFn f)
{
	for (size_t i = 0; i < sizeof urows / sizeof urows[0]; i++)
		if (urows[i].f == f)
			return urows[i].row;
	return NULL;
}

/* Y := f(X) elementwise; integer inputs use fi when given, else f through double. */
static int unary(const RtKernelArgs *a, RtError *e, UFn f, UIFn fi, const UCtx *c)
{
	const RtTensor *x = a->in[0];
	UCtx c0 = { 0 };
	if (!c)
		c = &c0;
	if (kn_out_raw(a, 0, x->dtype, x->rank, x->dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int f64 = kn_acc64(a) || y->dtype == DT_F64;
	if (kn_isint(x->dtype) && kn_isint(y->dtype) && fi) {
		for (int64_t i = 0; i < x->n; i++)
			rt_i64(y)[i] = fi(rt_i64(x)[i]);
	} else if (kn_isint(y->dtype)) {
		for (int64_t i = 0; i < x->n; i++)
			rt_i64(y)[i] = (int64_t)f(rt_get(x, i), c);
	} else if (!f64 && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[y->dtype].storage == S_F32 &&
		   urow_of(f)) {
		urow_of(f)(rt_f32(x), rt_f32(y), x->n, c);
	} else {
		for (int64_t i = 0; i < x->n; i++)
			rt_set(y, i, kn_acc(f64, f(rt_get(x, i), c)));
	}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

#define UNARY_OPS(X) X(Identity, u_id, i_id) X(Neg, u_neg, i_neg) X(Abs, u_abs, i_abs) X(Sign, u_sign, i_sign) \
	X(Sqrt, u_sqrt, NULL) X(Reciprocal, u_recip, NULL) X(Exp, u_exp, NULL) X(Log, u_log, NULL)            \
	X(Sin, u_sin, NULL) X(Cos, u_cos, NULL) X(Tanh, u_tanh, NULL) X(Erf, u_erf, NULL)                     \
	X(Floor, u_floor, i_id) X(Ceil, u_ceil, i_id) X(Round, u_round, i_id) X(Sigmoid, u_sigmoid, NULL)     \
	X(Relu, u_relu, i_relu) X(Silu, u_silu, NULL) X(Mish, u_mish, NULL) X(Softplus, u_softplus, NULL)     \
	X(HardSwish, u_hswish, NULL) X(Not, u_not, i_not)
#define UNARY(Name, f, fi) \
	int rk_##Name(const RtKernelArgs *a, RtError *e) { return unary(a, e, f, fi, NULL); }
UNARY_OPS(UNARY)

/* The function and constants of a unary operator with attributes; 0 when op is none of them,
 * -1 with e set on a bad attribute. */
static int unary_attrs(RtKernelFn op, const Attrs *at, UFn *f, UCtx *c, RtError *e)
{
	*c = (UCtx){ 0 };
	if (op == rk_LeakyRelu)
		*f = u_leaky, c->alpha = rt_attr_float(at, "alpha", 0.01);
	else if (op == rk_Swish)
		*f = u_swish, c->alpha = rt_attr_float(at, "alpha", 1.0);
	else if (op == rk_HardSigmoid)
		*f = u_hsig, c->alpha = rt_attr_float(at, "alpha", 0.2), c->beta = rt_attr_float(at, "beta", 0.5);
	else if (op == rk_Gelu) {
		const char *ap = rt_attr_str(at, "approximate", "none");
		if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
			return rt_errorf(e, RT_EUSER, "Gelu: approximate must be none or tanh, not '%s'", ap);
		*f = u_gelu, c->tanh_approx = strcmp(ap, "tanh") == 0;
	} else
		return 0;
	return 1;
}

static int unary_with_attrs(const RtKernelArgs *a, RtError *e, RtKernelFn op)
{
	UFn f;
	UCtx c;
	return unary_attrs(op, a->attrs, &f, &c, e) < 0 ? -1 : unary(a, e, f, NULL, &c);
}

int rk_LeakyRelu(const RtKernelArgs *a, RtError *e) { return unary_with_attrs(a, e, rk_LeakyRelu); }
int rk_Swish(const RtKernelArgs *a, RtError *e) { return unary_with_attrs(a, e, rk_Swish); }
int rk_HardSigmoid(const RtKernelArgs *a, RtError *e) { return unary_with_attrs(a, e, rk_HardSigmoid); }
int rk_Gelu(const RtKernelArgs *a, RtError *e) { return unary_with_attrs(a, e, rk_Gelu); }

/* ---- Cast ---- */
/* The target dtype of Cast: the planned output dtype, else attribute `to` (name or code). */
static DType cast_target(const RtKernelArgs *a)
{
	if (a->out[0].dtype != DT_INVALID)
		return a->out[0].dtype;
	const Attr *to = rt_attr_find(a->attrs, "to");
	if (!to)
		return DT_INVALID;
	if (to->kind == ATTR_STRING)
		return rt_dtype_lookup(to->s);
	return rt_dtype_from_onnx(to->kind == ATTR_INT ? to->i : -1);
}

/* One value converted per ONNX Cast: float to integer truncates toward zero (numpy astype) and
 * wraps; to bool is x != 0; to narrow floats rounds RNE, saturating f8 when `saturate`. */
static void cast_one(const RtTensor *x, int64_t i, RtTensor *y, int saturate)
{
	DType d = y->dtype;
	if (kn_isint(d)) {
		int64_t v;
		if (kn_isint(x->dtype)) {
			v = rt_i64(x)[i];
		} else {
			double f = rt_get(x, i);
			if (d == DT_BOOL)
				v = f != 0;
			else
				v = isfinite(f) ? kn_sat_int(DT_I64, trunc(f)) : 0;
		}
		rt_i64(y)[i] = kn_wrap_int(d, v);
		return;
	}
	double v = rt_get(x, i);
	if (rt_dtypes[d].storage == S_F32 && d != DT_F32 && rt_dtypes[d].kind == K_FLOAT) {
		int sat = (d == DT_F8E4M3 || d == DT_F8E5M2) ? saturate : 0;
		rt_f32(y)[i] = rt_round(d, (float)v, sat);
	} else {
		rt_set(y, i, v);
	}
}

static int cast_to(const RtKernelArgs *a, DType d, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (d == DT_INVALID)
		return rt_errorf(e, RT_EUSER, "Cast: missing or unsupported target dtype `to`");
	if (rt_tensor_alloc(&a->out[0], d, x->rank, x->dims, e) < 0)
		return -1;
	int saturate = (int)rt_attr_int(a->attrs, "saturate", 1);
	for (int64_t i = 0; i < x->n; i++)
		cast_one(x, i, &a->out[0], saturate);
	if (rt_dtypes[d].kind == K_BLOCK && kn_finish(&a->out[0], a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

int rk_Cast(const RtKernelArgs *a, RtError *e) { return cast_to(a, cast_target(a), e); }

int rk_CastLike(const RtKernelArgs *a, RtError *e)
{
	DType d = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : a->in[1]->dtype;
	return cast_to(a, d, e);
}

/* ---- binary with broadcasting ---- */
typedef double (*BFn)(double x, double y);
typedef int (*BIFn)(int64_t x, int64_t y, int64_t *r);

static double b_add(double x, double y) { return x + y; }
static double b_sub(double x, double y) { return x - y; }
static double b_mul(double x, double y) { return x * y; }
static double b_div(double x, double y) { return x / y; }
static double b_max(double x, double y) { return isnan(x) || isnan(y) ? NAN : x > y ? x : y; }
static double b_min(double x, double y) { return isnan(x) || isnan(y) ? NAN : x < y ? x : y; }
static double b_eq(double x, double y) { return x == y; }
static double b_lt(double x, double y) { return x < y; }
static double b_gt(double x, double y) { return x > y; }
static double b_and(double x, double y) { return x != 0 && y != 0; }
static double b_or(double x, double y) { return x != 0 || y != 0; }
static double b_swiglu(double g, double u) { return g / (1.0 + exp(-g)) * u; }

static int bi_add(int64_t x, int64_t y, int64_t *r) { *r = (int64_t)((uint64_t)x + (uint64_t)y); return 0; }
static int bi_sub(int64_t x, int64_t y, int64_t *r) { *r = (int64_t)((uint64_t)x - (uint64_t)y); return 0; }
static int bi_mul(int64_t x, int64_t y, int64_t *r) { *r = (int64_t)((uint64_t)x * (uint64_t)y); return 0; }
static int bi_div(int64_t x, int64_t y, int64_t *r)
{
	if (y == 0)
		return -1;
	*r = (x == INT64_MIN && y == -1) ? INT64_MIN : x / y;
	return 0;
}
static int bi_max(int64_t x, int64_t y, int64_t *r) { *r = x > y ? x : y; return 0; }
static int bi_min(int64_t x, int64_t y, int64_t *r) { *r = x < y ? x : y; return 0; }
static int bi_eq(int64_t x, int64_t y, int64_t *r) { *r = x == y; return 0; }
static int bi_lt(int64_t x, int64_t y, int64_t *r) { *r = x < y; return 0; }
static int bi_gt(int64_t x, int64_t y, int64_t *r) { *r = x > y; return 0; }
static int bi_and(int64_t x, int64_t y, int64_t *r) { *r = x && y; return 0; }
static int bi_or(int64_t x, int64_t y, int64_t *r) { *r = x || y; return 0; }
/* Integer power by squaring; a negative exponent truncates 1/x^n toward zero. */
static int bi_pow(int64_t x, int64_t y, int64_t *r)
{
	if (y < 0) {
		*r = x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
		return x == 0 ? -1 : 0;
	}
	uint64_t acc = 1, b = (uint64_t)x;
	for (; y; y >>= 1, b *= b)
		if (y & 1)
			acc *= b;
	*r = (int64_t)acc;
	return 0;
}

/* f32 rows of a broadcast binary operation: o[i] := x[i*sx] op y[i*sy], sx and sy 0 or 1.
 * + - * / min max are the f32 operations (exactly the double path's values rounded to f32);
 * Pow and SwiGLU inline the double expression and round once. */
typedef void (*BRow)(const float *x, int64_t sx, const float *y, int64_t sy, float *o, int64_t n);
#define BROW(name, EXPR)                                                                         \
	KN_VEC static void name(const float *x, int64_t sx, const float *y, int64_t sy, float *o, int64_t n) \
	{                                                                                        \
		if (sx && sy) {                                                                  \
			for (int64_t i = 0; i < n; i++) { float a = x[i], b = y[i]; o[i] = (EXPR); } \
		} else if (sx) {                                                                 \
			float b = y[0];                                                          \
			for (int64_t i = 0; i < n; i++) { float a = x[i]; o[i] = (EXPR); }      \
		} else if (sy) {                                                                 \
			float a = x[0];                                                          \
			for (int64_t i = 0; i < n; i++) { float b = y[i]; o[i] = (EXPR); }      \
		} else {                                                                         \
			float a = x[0], b = y[0], v = (EXPR);                                    \
			for (int64_t i = 0; i < n; i++) o[i] = v;                                \
		}                                                                                \
	}
BROW(br_add, a + b)
BROW(br_sub, a - b)
BROW(br_mul, a * b)
BROW(br_div, a / b)
BROW(br_max, isnan(a) || isnan(b) ? NAN : a > b ? a : b)
BROW(br_min, isnan(a) || isnan(b) ? NAN : a < b ? a : b)
BROW(br_pow, (float)pow(a, b))
BROW(br_swiglu, (float)b_swiglu(a, b))

static const struct { BFn f; BRow row; } brows[] = {
	{ b_add, br_add }, { b_sub, br_sub }, { b_mul, br_mul }, { b_div, br_div }, { b_max, br_max },
	{ b_min, br_min }, { pow, br_pow }, { b_swiglu, br_swiglu },
};

static BRow brow_of(BFn f)
{
	for (size_t i = 0; i < sizeof brows / sizeof brows[0]; i++)
		if (brows[i].f == f)
			return brows[i].row;
	return NULL;
}

/* The f32 path of a binary operation into y (allocated): row by row of the broadcast shape. */
static void binary_f32(BRow row, const RtTensor *const *ts, int rank, const int64_t *dims, RtTensor *y)
{
	KnRows r;
	kn_rows_init(&r, rank, dims, ts, 2);
	const float *x0 = rt_f32(ts[0]), *x1 = rt_f32(ts[1]);
	float *o = rt_f32(y);
	for (int64_t i = 0; i < r.nrows; i++, kn_iter_next(&r.it))
		row(x0 + r.it.off[0], r.istr[0], x1 + r.it.off[1], r.istr[1], o + i * r.inner, r.inner);
}

/* C := f(A, B) with broadcasting into out[0] of dtype `od` (integers exact when fi is given). */
static int binary(const RtKernelArgs *a, RtError *e, const char *op, BFn f, BIFn fi, DType od)
{
	const RtTensor *ts[2] = { a->in[0], a->in[1] };
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (kn_bcast(op, ts, 2, &rank, dims, e) < 0 || kn_out_raw(a, 0, od, rank, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int ints = fi && kn_isint(ts[0]->dtype) && kn_isint(ts[1]->dtype);
	int f64 = kn_acc64(a) || y->dtype == DT_F64;
	BRow row = brow_of(f);
	int f32s = !kn_generic_only && rt_dtypes[ts[0]->dtype].storage == S_F32 && rt_dtypes[ts[1]->dtype].storage == S_F32 &&
		   rt_dtypes[y->dtype].storage == S_F32;
	KnIter it;
	kn_iter_init(&it, rank, dims, ts, 2);
	if (!ints && !f64 && f32s && row)
		binary_f32(row, ts, rank, dims, y);
	for (int64_t i = 0; (ints || f64 || !f32s || !row) && i < y->n; i++, kn_iter_next(&it)) {
		if (ints) {
			int64_t r;
			if (fi(rt_i64(ts[0])[it.off[0]], rt_i64(ts[1])[it.off[1]], &r) < 0) {
				kn_free_outs(a);
				return rt_errorf(e, RT_EUSER, "%s: integer division by zero", op);
			}
			rt_seti(y, i, r);
		} else {
			double r = f(rt_get(ts[0], it.off[0]), rt_get(ts[1], it.off[1]));
			if (kn_isint(y->dtype))
				rt_i64(y)[i] = isfinite(r) ? kn_sat_int(DT_I64, trunc(r)) : 0;
			else
				rt_set(y, i, kn_acc(f64, r));
		}
	}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

#define BINARY_OPS(X) X(Add, b_add, bi_add, a->in[0]->dtype) X(Sub, b_sub, bi_sub, a->in[0]->dtype) \
	X(Mul, b_mul, bi_mul, a->in[0]->dtype) X(Div, b_div, bi_div, a->in[0]->dtype)                       \
	X(Pow, pow, bi_pow, a->in[0]->dtype) X(Equal, b_eq, bi_eq, DT_BOOL) X(Less, b_lt, bi_lt, DT_BOOL)     \
	X(Greater, b_gt, bi_gt, DT_BOOL) X(And, b_and, bi_and, DT_BOOL) X(Or, b_or, bi_or, DT_BOOL)           \
	X(SwiGLU, b_swiglu, NULL, a->in[0]->dtype)
#define BINARY(Name, f, fi, od) \
	int rk_##Name(const RtKernelArgs *a, RtError *e) { return binary(a, e, #Name, f, fi, od); }
BINARY_OPS(BINARY)

/* ---- variadic: Max, Min, Sum, Mean ---- */
/* Folds f over all inputs left to right in the broadcast shape; Mean divides at the end. */
static int variadic(const RtKernelArgs *a, RtError *e, const char *op, BFn f, BIFn fi, int mean)
{
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (kn_bcast(op, (const RtTensor *const *)a->in, a->nin, &rank, dims, e) < 0 ||
	    kn_out_raw(a, 0, a->in[0]->dtype, rank, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int ints = kn_isint(y->dtype), f64 = kn_acc64(a) || y->dtype == DT_F64;
	for (int j = 0; j < a->nin; j++) {
		const RtTensor *ts[2] = { y, a->in[j] };
		KnIter it;
		kn_iter_init(&it, rank, dims, ts, 2);
		for (int64_t i = 0; i < y->n; i++, kn_iter_next(&it)) {
			if (ints) {
				int64_t v = rt_geti(a->in[j], it.off[1]), r = v;
				if (j)
					fi(rt_i64(y)[i], v, &r);
				rt_i64(y)[i] = r;
			} else {
				double v = rt_get(a->in[j], it.off[1]);
				rt_set(y, i, kn_acc(f64, j ? f(rt_get(y, i), v) : v));
			}
		}
	}
	if (mean)
		for (int64_t i = 0; i < y->n; i++) {
			if (ints)
				rt_i64(y)[i] /= a->nin;
			else
				rt_set(y, i, kn_acc(f64, rt_get(y, i) / a->nin));
		}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

int rk_Max(const RtKernelArgs *a, RtError *e) { return variadic(a, e, "Max", b_max, bi_max, 0); }
int rk_Min(const RtKernelArgs *a, RtError *e) { return variadic(a, e, "Min", b_min, bi_min, 0); }
int rk_Sum(const RtKernelArgs *a, RtError *e) { return variadic(a, e, "Sum", b_add, bi_add, 0); }
int rk_Mean(const RtKernelArgs *a, RtError *e) { return variadic(a, e, "Mean", b_add, bi_add, 1); }

/* ---- Where, Clip, Dropout ---- */
int rk_Where(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *ts[3] = { a->in[0], a->in[1], a->in[2] };
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (kn_bcast("Where", ts, 3, &rank, dims, e) < 0 || kn_out(a, 0, ts[1]->dtype, rank, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	KnIter it;
	kn_iter_init(&it, rank, dims, ts, 3);
	for (int64_t i = 0; i < y->n; i++, kn_iter_next(&it)) {
		int c = rt_get(ts[0], it.off[0]) != 0;
		if (kn_isint(y->dtype))
			rt_i64(y)[i] = rt_geti(ts[c ? 1 : 2], it.off[c ? 1 : 2]);
		else
			rt_set(y, i, rt_get(ts[c ? 1 : 2], it.off[c ? 1 : 2]));
	}
	return 0;
}

KN_VEC static void clip_f32(const float *x, float *y, int64_t n, float lo, float hi)
{
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		y[i] = v < lo ? lo : v > hi ? hi : v;
	}
}

/* Clip of f32 rows to the bounds [l, h]: compared in f32 when both are f32 values (NaN passes),
 * else in double and rounded once. */
static void clip_row(const float *x, float *y, int64_t n, double l, double h)
{
	float lf = (float)l, hf = (float)h;
	if ((double)lf == l && (double)hf == h) {
		clip_f32(x, y, n, lf, hf);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double v = x[i];
		y[i] = (float)(isnan(v) ? v : v < l ? l : v > h ? h : v);
	}
}

/* Clip's bounds: inputs 1 and 2 (opset >= 11, scalars) or attributes min/max (older opsets). */
static double clip_bound(const RtTensor *t, const Attrs *at, int hi)
{
	return t ? rt_get(t, 0) : rt_attr_float(at, hi ? "max" : "min", hi ? INFINITY : -INFINITY);
}

int rk_Clip(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *lo = kn_in(a, 1), *hi = kn_in(a, 2);
	if ((lo && lo->n != 1) || (hi && hi->n != 1))
		return rt_errorf(e, RT_EUSER, "Clip: min and max must be scalars");
	if (kn_out_raw(a, 0, x->dtype, x->rank, x->dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	if (kn_isint(x->dtype)) {
		int64_t l = lo ? rt_geti(lo, 0) : INT64_MIN, h = hi ? rt_geti(hi, 0) : INT64_MAX;
		for (int64_t i = 0; i < x->n; i++) {
			int64_t v = rt_i64(x)[i];
			rt_i64(y)[i] = v < l ? l : v > h ? h : v;
		}
		return 0;
	}
	double l = clip_bound(lo, a->attrs, 0), h = clip_bound(hi, a->attrs, 1);
	if (!kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[y->dtype].storage == S_F32) {
		clip_row(rt_f32(x), rt_f32(y), x->n, l, h);
		return 0;
	}
	for (int64_t i = 0; i < x->n; i++) {
		double v = rt_get(x, i);
		rt_set(y, i, isnan(v) ? v : v < l ? l : v > h ? h : v);
	}
	return 0;
}

/* Dropout in inference: Y := X, Mask := true.  Training mode with a non-zero ratio would need
 * a random stream the plan does not define, so it is refused. */
int rk_Dropout(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *ratio = kn_in(a, 1), *train = kn_in(a, 2);
	if (train && rt_geti(train, 0) && (!ratio || rt_get(ratio, 0) != 0))
		return rt_errorf(e, RT_EUSER, "Dropout: training_mode with a non-zero ratio is not supported");
	if (rk_Identity(a, e) < 0)
		return -1;
	if (a->nout > 1) {
		if (kn_out(a, 1, DT_BOOL, x->rank, x->dims, e) < 0) {
			kn_free_outs(a);
			return -1;
		}
		for (int64_t i = 0; i < x->n; i++)
			rt_i64(&a->out[1])[i] = 1;
	}
	return 0;
}

/* ---- elementwise chains (runtime/kernels.h rt_ew_op) ---- */
#define EW_UNARY(Name, f, fi) { rk_##Name, f },
#define EW_BINARY(Name, f, fi, od) { rk_##Name, f },
static const struct { RtKernelFn k; UFn f; } ew_unary[] = { UNARY_OPS(EW_UNARY) };
static const struct { RtKernelFn k; BFn f; } ew_binary[] = { BINARY_OPS(EW_BINARY) };

int rt_ew_op(RtOp op, const Attrs *attrs, int nin, RtEwOp *o)
{
	RtKernelFn k = rt_kernel(op);
	UFn uf = NULL;
	UCtx c = { 0 };
	RtError e = { 0 };
	memset(o, 0, sizeof *o);
	if (kn_generic_only)
		return 0;
	if (k == rk_Clip && nin >= 1 && nin <= 3) {
		o->kind = 3;
		o->c[0] = clip_bound(NULL, attrs, 0), o->c[1] = clip_bound(NULL, attrs, 1);
		return 1;
	}
	for (size_t i = 0; i < sizeof ew_binary / sizeof ew_binary[0]; i++)
		if (ew_binary[i].k == k && brow_of(ew_binary[i].f) && nin == 2) {
			o->kind = 2, o->row = (void (*)(void))brow_of(ew_binary[i].f);
			return 1;
		}
	for (size_t i = 0; i < sizeof ew_unary / sizeof ew_unary[0]; i++)
		if (ew_unary[i].k == k)
			uf = ew_unary[i].f;
	if ((uf || unary_attrs(k, attrs, &uf, &c, &e) > 0) && urow_of(uf) && nin == 1) {
		o->kind = 1, o->row = (void (*)(void))urow_of(uf);
		o->c[0] = c.alpha, o->c[1] = c.beta, o->c[2] = c.tanh_approx;
		return 1;
	}
	return 0;
}

void rt_ew_block(const RtEwOp *o, const float *const *x, const int *scalar, float *y, int64_t n)
{
	if (o->kind == 1) {
		UCtx c = { o->c[0], o->c[1], (int)o->c[2] };
		((URow)o->row)(x[0], y, n, &c);
	} else if (o->kind == 2)
		((BRow)o->row)(x[0], !scalar[0], x[1], !scalar[1], y, n);
	else
		clip_row(x[0], y, n, x[1] ? (double)x[1][0] : o->c[0], x[2] ? (double)x[2][0] : o->c[1]);
}
