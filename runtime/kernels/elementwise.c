/* runtime/kernels/elementwise.c: unary, binary and variadic elementwise kernels.
 *
 * ONNX semantics (https://onnx.ai/onnx/operators/): multidirectional broadcasting for the
 * binary and variadic operators, integer arithmetic exact in i64 and wrapped to the dtype's
 * width (Div truncates toward zero, as C and the ONNX reference do), float arithmetic computed
 * per element in double and rounded to f32 (exactly the f32 operation for + - * /) or kept in
 * f64, then rounded to the output dtype's grid.  Also Cast/CastLike (ONNX TensorProto dtype
 * codes or aicc dtype names in `to`), Clip, Where, Dropout (inference) and SwiGLU.
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

/* Y := f(X) elementwise; integer inputs use fi when given, else f through double. */
static int unary(const RtKernelArgs *a, RtError *e, UFn f, UIFn fi, const UCtx *c)
{
	const RtTensor *x = a->in[0];
	UCtx c0 = { 0 };
	if (!c)
		c = &c0;
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int f64 = kn_acc64(a) || y->dtype == DT_F64;
	if (kn_isint(x->dtype) && kn_isint(y->dtype) && fi) {
		for (int64_t i = 0; i < x->n; i++)
			rt_i64(y)[i] = fi(rt_i64(x)[i]);
	} else if (kn_isint(y->dtype)) {
		for (int64_t i = 0; i < x->n; i++)
			rt_i64(y)[i] = (int64_t)f(rt_get(x, i), c);
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

#define UNARY(Name, f, fi) \
	int rk_##Name(const RtKernelArgs *a, RtError *e) { return unary(a, e, f, fi, NULL); }
UNARY(Identity, u_id, i_id)
UNARY(Neg, u_neg, i_neg)
UNARY(Abs, u_abs, i_abs)
UNARY(Sign, u_sign, i_sign)
UNARY(Sqrt, u_sqrt, NULL)
UNARY(Reciprocal, u_recip, NULL)
UNARY(Exp, u_exp, NULL)
UNARY(Log, u_log, NULL)
UNARY(Sin, u_sin, NULL)
UNARY(Cos, u_cos, NULL)
UNARY(Tanh, u_tanh, NULL)
UNARY(Erf, u_erf, NULL)
UNARY(Floor, u_floor, i_id)
UNARY(Ceil, u_ceil, i_id)
UNARY(Round, u_round, i_id)
UNARY(Sigmoid, u_sigmoid, NULL)
UNARY(Relu, u_relu, i_relu)
UNARY(Silu, u_silu, NULL)
UNARY(Mish, u_mish, NULL)
UNARY(Softplus, u_softplus, NULL)
UNARY(HardSwish, u_hswish, NULL)
UNARY(Not, u_not, i_not)

int rk_LeakyRelu(const RtKernelArgs *a, RtError *e)
{
	UCtx c = { rt_attr_float(a->attrs, "alpha", 0.01), 0, 0 };
	return unary(a, e, u_leaky, NULL, &c);
}

int rk_Swish(const RtKernelArgs *a, RtError *e)
{
	UCtx c = { rt_attr_float(a->attrs, "alpha", 1.0), 0, 0 };
	return unary(a, e, u_swish, NULL, &c);
}

int rk_HardSigmoid(const RtKernelArgs *a, RtError *e)
{
	UCtx c = { rt_attr_float(a->attrs, "alpha", 0.2), rt_attr_float(a->attrs, "beta", 0.5), 0 };
	return unary(a, e, u_hsig, NULL, &c);
}

int rk_Gelu(const RtKernelArgs *a, RtError *e)
{
	const char *ap = rt_attr_str(a->attrs, "approximate", "none");
	if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
		return rt_errorf(e, RT_EUSER, "Gelu: approximate must be none or tanh, not '%s'", ap);
	UCtx c = { 0, 0, strcmp(ap, "tanh") == 0 };
	return unary(a, e, u_gelu, NULL, &c);
}

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

/* C := f(A, B) with broadcasting into out[0] of dtype `od` (integers exact when fi is given). */
static int binary(const RtKernelArgs *a, RtError *e, const char *op, BFn f, BIFn fi, DType od)
{
	const RtTensor *ts[2] = { a->in[0], a->in[1] };
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (kn_bcast(op, ts, 2, &rank, dims, e) < 0 || kn_out(a, 0, od, rank, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int ints = fi && kn_isint(ts[0]->dtype) && kn_isint(ts[1]->dtype);
	int f64 = kn_acc64(a) || y->dtype == DT_F64;
	KnIter it;
	kn_iter_init(&it, rank, dims, ts, 2);
	for (int64_t i = 0; i < y->n; i++, kn_iter_next(&it)) {
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

#define BINARY(Name, f, fi, od) \
	int rk_##Name(const RtKernelArgs *a, RtError *e) { return binary(a, e, #Name, f, fi, od); }
BINARY(Add, b_add, bi_add, a->in[0]->dtype)
BINARY(Sub, b_sub, bi_sub, a->in[0]->dtype)
BINARY(Mul, b_mul, bi_mul, a->in[0]->dtype)
BINARY(Div, b_div, bi_div, a->in[0]->dtype)
BINARY(Pow, pow, bi_pow, a->in[0]->dtype)
BINARY(Equal, b_eq, bi_eq, DT_BOOL)
BINARY(Less, b_lt, bi_lt, DT_BOOL)
BINARY(Greater, b_gt, bi_gt, DT_BOOL)
BINARY(And, b_and, bi_and, DT_BOOL)
BINARY(Or, b_or, bi_or, DT_BOOL)
BINARY(SwiGLU, b_swiglu, NULL, a->in[0]->dtype)

/* ---- variadic: Max, Min, Sum, Mean ---- */
/* Folds f over all inputs left to right in the broadcast shape; Mean divides at the end. */
static int variadic(const RtKernelArgs *a, RtError *e, const char *op, BFn f, BIFn fi, int mean)
{
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (kn_bcast(op, (const RtTensor *const *)a->in, a->nin, &rank, dims, e) < 0 ||
	    kn_out(a, 0, a->in[0]->dtype, rank, dims, e) < 0)
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

/* Clip: bounds from inputs 1 and 2 (opset >= 11) or attributes min/max (older opsets). */
int rk_Clip(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *lo = kn_in(a, 1), *hi = kn_in(a, 2);
	if ((lo && lo->n != 1) || (hi && hi->n != 1))
		return rt_errorf(e, RT_EUSER, "Clip: min and max must be scalars");
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
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
	double l = lo ? rt_get(lo, 0) : rt_attr_float(a->attrs, "min", -INFINITY);
	double h = hi ? rt_get(hi, 0) : rt_attr_float(a->attrs, "max", INFINITY);
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
