/* runtime/kernels/math.c: the ONNX elementwise operators outside the core set of elementwise.c:
 * inverse trigonometric and hyperbolic functions, the ELU family, Shrink, ThresholdedRelu,
 * Softsign, IsNaN/IsInf, Mod, Xor, BitShift, PRelu, Hardmax, ReduceL1 and ReduceLogSum.
 *
 * Semantics from the ONNX operator pages (https://onnx.ai/onnx/operators/onnx__<Op>.html):
 * floats computed per element in double and rounded to f32 (or kept in f64) and then to the
 * output dtype's grid; integers exact in i64 and wrapped to their width; unsigned 64-bit values
 * are held as their two's-complement bit pattern, so Mod and BitShift work on uint64_t.
 * ReduceL1 and ReduceLogSum are ReduceSum of |X| and log of ReduceSum, through rk_ReduceSum.
 */
#include "runtime/kernels/kernels_impl.h"

typedef double (*MFn)(double x, const double *p);

/* Y := f(X) elementwise on floats; p carries the attribute values. */
static int map_float(const RtKernelArgs *a, RtError *e, MFn f, const double *p, DType od)
{
	const RtTensor *x = a->in[0];
	if (kn_out_like(a, 0, od == DT_INVALID ? x->dtype : od, x, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int f64 = kn_acc64(a) || y->dtype == DT_F64;
	for (int64_t i = 0; i < x->n; i++) {
		double r = f(rt_get(x, i), p);
		if (kn_isint(y->dtype))
			rt_i64(y)[i] = isfinite(r) ? kn_sat_int(DT_I64, r) : 0;
		else
			rt_set(y, i, kn_acc(f64, r));
	}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

static double m_acos(double x, const double *p) { return acos(x); }
static double m_acosh(double x, const double *p) { return acosh(x); }
static double m_asin(double x, const double *p) { return asin(x); }
static double m_asinh(double x, const double *p) { return asinh(x); }
static double m_atan(double x, const double *p) { return atan(x); }
static double m_atanh(double x, const double *p) { return atanh(x); }
static double m_cosh(double x, const double *p) { return cosh(x); }
static double m_sinh(double x, const double *p) { return sinh(x); }
static double m_tan(double x, const double *p) { return tan(x); }
static double m_softsign(double x, const double *p) { return x / (1.0 + fabs(x)); }
static double m_elu(double x, const double *p) { return x > 0 ? x : p[0] * expm1(x); }
static double m_selu(double x, const double *p) { return p[1] * (x > 0 ? x : p[0] * expm1(x)); }
static double m_celu(double x, const double *p) { return fmax(0.0, x) + fmin(0.0, p[0] * expm1(x / p[0])); }
static double m_thrrelu(double x, const double *p) { return x > p[0] ? x : 0.0; }
static double m_shrink(double x, const double *p)
{ return x < -p[1] ? x + p[0] : x > p[1] ? x - p[0] : 0.0; }
static double m_isnan(double x, const double *p) { return isnan(x); }
static double m_isinf(double x, const double *p)
{ return isinf(x) && ((x > 0 && p[0] != 0) || (x < 0 && p[1] != 0)); }

#define MAP(Name, f) \
	int rk_##Name(const RtKernelArgs *a, RtError *e) { return map_float(a, e, f, NULL, DT_INVALID); }
MAP(Acos, m_acos)
MAP(Acosh, m_acosh)
MAP(Asin, m_asin)
MAP(Asinh, m_asinh)
MAP(Atan, m_atan)
MAP(Atanh, m_atanh)
MAP(Cosh, m_cosh)
MAP(Sinh, m_sinh)
MAP(Tan, m_tan)
MAP(Softsign, m_softsign)

int rk_IsNaN(const RtKernelArgs *a, RtError *e) { return map_float(a, e, m_isnan, NULL, DT_BOOL); }

int rk_IsInf(const RtKernelArgs *a, RtError *e)
{
	double p[2] = { (double)rt_attr_int(a->attrs, "detect_positive", 1),
			(double)rt_attr_int(a->attrs, "detect_negative", 1) };
	return map_float(a, e, m_isinf, p, DT_BOOL);
}

int rk_Elu(const RtKernelArgs *a, RtError *e)
{
	double p[1] = { rt_attr_float(a->attrs, "alpha", 1.0) };
	return map_float(a, e, m_elu, p, DT_INVALID);
}

/* Selu defaults: alpha and gamma as float32 constants (the ONNX schema's defaults). */
int rk_Selu(const RtKernelArgs *a, RtError *e)
{
	double p[2] = { rt_attr_float(a->attrs, "alpha", 1.67326319217681884765625),
			rt_attr_float(a->attrs, "gamma", 1.05070102214813232421875) };
	return map_float(a, e, m_selu, p, DT_INVALID);
}

int rk_Celu(const RtKernelArgs *a, RtError *e)
{
	double p[1] = { rt_attr_float(a->attrs, "alpha", 1.0) };
	if (p[0] == 0)
		return rt_errorf(e, RT_EUSER, "Celu: alpha must not be 0");
	return map_float(a, e, m_celu, p, DT_INVALID);
}

int rk_ThresholdedRelu(const RtKernelArgs *a, RtError *e)
{
	double p[1] = { rt_attr_float(a->attrs, "alpha", 1.0) };
	return map_float(a, e, m_thrrelu, p, DT_INVALID);
}

int rk_Shrink(const RtKernelArgs *a, RtError *e)
{
	double p[2] = { rt_attr_float(a->attrs, "bias", 0.0), rt_attr_float(a->attrs, "lambd", 0.5) };
	return map_float(a, e, m_shrink, p, DT_INVALID);
}

/* ---- binary with broadcasting ---- */
typedef int64_t (*IFn)(int64_t x, int64_t y, DType d, int flag, int *err);
typedef double (*FFn)(double x, double y, int flag);

static int is_u64(DType d) { return rt_dtypes[d].kind == K_UINT && rt_dtypes[d].bits == 64; }

/* Integer Mod: fmod=1 takes the dividend's sign (C %), fmod=0 the divisor's (Python %). */
static int64_t i_mod(int64_t x, int64_t y, DType d, int fmod_, int *err)
{
	if (y == 0) {
		*err = 1;
		return 0;
	}
	if (is_u64(d))
		return (int64_t)((uint64_t)x % (uint64_t)y);
	if (y == -1)
		return 0;
	int64_t r = x % y;
	if (!fmod_ && r != 0 && ((r < 0) != (y < 0)))
		r += y;
	return r;
}

static double f_mod(double x, double y, int fmod_)
{
	double r = fmod(x, y);
	if (!fmod_ && r != 0 && ((r < 0) != (y < 0)))
		r += y;
	return r;
}

static int64_t i_xor(int64_t x, int64_t y, DType d, int flag, int *err) { return (x != 0) != (y != 0); }
static double f_xor(double x, double y, int flag) { return (x != 0) != (y != 0); }

/* BitShift on the unsigned bit pattern; a shift of the width or more gives 0. */
static int64_t i_shift(int64_t x, int64_t y, DType d, int left, int *err)
{
	uint64_t u = (uint64_t)x, s = (uint64_t)y;
	if (s >= 64)
		return 0;
	return (int64_t)(left ? u << s : u >> s);
}

static double f_prelu(double x, double s, int flag) { return x < 0 ? s * x : x; }
static int64_t i_prelu(int64_t x, int64_t s, DType d, int flag, int *err)
{ return x < 0 ? (int64_t)((uint64_t)s * (uint64_t)x) : x; }

static int binary2(const RtKernelArgs *a, RtError *e, const char *op, FFn f, IFn fi, int flag, DType od)
{
	const RtTensor *ts[2] = { a->in[0], a->in[1] };
	int rank;
	int64_t dims[RT_MAX_RANK];
	if (kn_bcast(op, ts, 2, &rank, dims, e) < 0 || kn_out(a, 0, od, rank, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int ints = kn_isint(ts[0]->dtype) && kn_isint(ts[1]->dtype);
	int f64 = kn_acc64(a) || y->dtype == DT_F64, err = 0;
	KnIter it;
	kn_iter_init(&it, rank, dims, ts, 2);
	for (int64_t i = 0; i < y->n; i++, kn_iter_next(&it)) {
		if (ints)
			rt_i64(y)[i] = fi(rt_i64(ts[0])[it.off[0]], rt_i64(ts[1])[it.off[1]], ts[0]->dtype, flag, &err);
		else
			rt_set(y, i, kn_acc(f64, f(rt_get(ts[0], it.off[0]), rt_get(ts[1], it.off[1]), flag)));
	}
	if (err) {
		kn_free_outs(a);
		return rt_errorf(e, RT_EUSER, "%s: integer division by zero", op);
	}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

int rk_Mod(const RtKernelArgs *a, RtError *e)
{
	return binary2(a, e, "Mod", f_mod, i_mod, (int)rt_attr_int(a->attrs, "fmod", 0), a->in[0]->dtype);
}

int rk_Xor(const RtKernelArgs *a, RtError *e) { return binary2(a, e, "Xor", f_xor, i_xor, 0, DT_BOOL); }

int rk_PRelu(const RtKernelArgs *a, RtError *e)
{
	return binary2(a, e, "PRelu", f_prelu, i_prelu, 0, a->in[0]->dtype);
}

int rk_BitShift(const RtKernelArgs *a, RtError *e)
{
	const char *dir = rt_attr_str(a->attrs, "direction", "");
	if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
		return rt_errorf(e, RT_EUSER, "BitShift: direction must be LEFT or RIGHT, not '%s'", dir);
	if (!kn_isint(a->in[0]->dtype) || !kn_isint(a->in[1]->dtype))
		return rt_errorf(e, RT_EUSER, "BitShift: X and Y must be unsigned integers");
	return binary2(a, e, "BitShift", NULL, i_shift, dir[0] == 'L', a->in[0]->dtype);
}

/* ---- Hardmax {axis=-1}: one-hot of the first maximum along axis ---- */
int rk_Hardmax(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int ax;
	if (kn_axis("Hardmax", rt_attr_int(a->attrs, "axis", -1), x->rank, &ax, e) < 0 ||
	    kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	int64_t len = x->rank ? x->dims[ax] : 1, inner = 1, outer = 1;
	for (int i = ax + 1; i < x->rank; i++)
		inner *= x->dims[i];
	for (int i = 0; i < ax; i++)
		outer *= x->dims[i];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t in = 0; in < inner; in++) {
			int64_t base = o * len * inner + in, best = 0;
			for (int64_t k = 1; k < len; k++)
				if (rt_get(x, base + k * inner) > rt_get(x, base + best * inner))
					best = k;
			if (len)
				rt_set(&a->out[0], base + best * inner, 1.0);
		}
	return 0;
}

/* ---- ReduceL1, ReduceLogSum through ReduceSum ---- */
/* out := post(ReduceSum(pre(X))) with X's attributes and axes. */
static int reduce_via_sum(const RtKernelArgs *a, RtError *e, int absval, int logpost)
{
	const RtTensor *x = a->in[0];
	RtTensor t;
	if (rt_tensor_alloc(&t, x->dtype, x->rank, x->dims, e) < 0)
		return -1;
	for (int64_t i = 0; i < x->n; i++) {
		if (kn_isint(x->dtype))
			rt_i64(&t)[i] = absval && rt_i64(x)[i] < 0 ? -rt_i64(x)[i] : rt_i64(x)[i];
		else
			rt_set(&t, i, absval ? fabs(rt_get(x, i)) : rt_get(x, i));
	}
	RtTensor *in[2] = { &t, a->nin > 1 ? a->in[1] : NULL };
	RtKernelArgs b = *a;
	b.in = in;
	int rc = rk_ReduceSum(&b, e);
	rt_tensor_free(&t);
	if (rc < 0 || !logpost)
		return rc;
	RtTensor *y = &a->out[0];
	int f64 = kn_acc64(a) || y->dtype == DT_F64;
	for (int64_t i = 0; i < y->n; i++)
		rt_set(y, i, kn_acc(f64, log(rt_get(y, i))));
	return kn_finish(y, a->opts, e);
}

int rk_ReduceL1(const RtKernelArgs *a, RtError *e) { return reduce_via_sum(a, e, 1, 0); }
int rk_ReduceLogSum(const RtKernelArgs *a, RtError *e) { return reduce_via_sum(a, e, 0, 1); }

/* ---- Det: determinants of the trailing [M, M] matrices (LU, partial pivoting, in double) ---- */
int rk_Det(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
		return rt_errorf(e, RT_EUSER, "Det: input must be [..., M, M]");
	int64_t M = x->dims[x->rank - 1], nm = x->n / (M * M != 0 ? M * M : 1);
	if (kn_out(a, 0, x->dtype, x->rank - 2, x->dims, e) < 0)
		return -1;
	double *m = kn_alloc(M * M, e);
	if (!m) {
		kn_free_outs(a);
		return -1;
	}
	for (int64_t b = 0; b < nm; b++) {
		for (int64_t i = 0; i < M * M; i++)
			m[i] = rt_get(x, b * M * M + i);
		double det = 1;
		for (int64_t k = 0; k < M && det != 0; k++) {
			int64_t p = k;
			for (int64_t i = k + 1; i < M; i++)
				if (fabs(m[i * M + k]) > fabs(m[p * M + k]))
					p = i;
			if (m[p * M + k] == 0) {
				det = 0;
				break;
			}
			if (p != k) {
				for (int64_t j = 0; j < M; j++) {
					double t = m[k * M + j];
					m[k * M + j] = m[p * M + j], m[p * M + j] = t;
				}
				det = -det;
			}
			det *= m[k * M + k];
			for (int64_t i = k + 1; i < M; i++) {
				double f = m[i * M + k] / m[k * M + k];
				for (int64_t j = k; j < M; j++)
					m[i * M + j] -= f * m[k * M + j];
			}
		}
		rt_set(&a->out[0], b, det);
	}
	rt_free(m);
	return kn_finish(&a->out[0], a->opts, e);
}
