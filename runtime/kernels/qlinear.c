/* runtime/kernels/qlinear.c: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear and the
 * aicc Quantize operator.
 *
 * Scales and zero points are per tensor, per axis (1-D of the axis' length) or blocked
 * (block_size > 0: same rank as X, axis dimension ceil(D / block_size)).  QuantizeLinear
 * computes round_half_even(x / scale) + zero_point in the input's precision and saturates to
 * the output integer type; f8/f4 outputs round x / scale to the format (saturating unless
 * saturate=0).  DequantizeLinear computes (x - zero_point) * scale.  Quantize rounds to any
 * aicc dtype's grid through runtime/numerics (block formats along the last axis).
 * Specs: https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html (opset 21),
 * onnx__DequantizeLinear.html, onnx__DynamicQuantizeLinear.html; numerics.md §3-§6.
 */
#include <float.h>

#include "runtime/kernels/kernels_impl.h"

/* The output_dtype of a (de)quantization (an ONNX TensorProto code, runtime/dtype.def): integers up
 * to 32 bits and the scalar floats up to f32; i64, bool, f64 and the E8M0 scale are not
 * quantization types (ONNX QuantizeLinear/DequantizeLinear opset 21-23). */
static DType qdtype(int64_t code)
{
	DType d = rt_dtype_from_onnx(code);
	const DTypeInfo *t = &rt_dtypes[d];
	return t->kind == K_BOOL || t->kind == K_SCALE || t->bits > 32 ? DT_INVALID : d;
}

/* Index into the scale / zero-point tensor s for element i of x. */
typedef struct QIdx { int axis, mode; int64_t block; } QIdx;   /* mode 0 tensor, 1 axis, 2 block */

static int qidx_setup(const RtKernelArgs *a, const char *op, const RtTensor *x, const RtTensor *s,
		      QIdx *q, RtError *e)
{
	q->block = rt_attr_int(a->attrs, "block_size", 0);
	q->mode = s->n == 1 && q->block == 0 ? 0 : q->block > 0 ? 2 : 1;
	if (q->mode == 0)
		return 0;
	if (kn_axis(op, rt_attr_int(a->attrs, "axis", 1), x->rank, &q->axis, e) < 0)
		return -1;
	if (q->mode == 1 && (s->rank != 1 || s->n != x->dims[q->axis]))
		return rt_errorf(e, RT_EUSER, "%s: per-axis scale needs %lld values", op, (long long)x->dims[q->axis]);
	if (q->mode == 2) {
		if (s->rank != x->rank)
			return rt_errorf(e, RT_EUSER, "%s: blocked scale must have the rank of x", op);
		for (int k = 0; k < x->rank; k++) {
			int64_t want = k == q->axis ? (x->dims[k] + q->block - 1) / q->block : x->dims[k];
			if (s->dims[k] != want)
				return rt_errorf(e, RT_EUSER, "%s: blocked scale has dim %lld on axis %d, want %lld",
						 op, (long long)s->dims[k], k, (long long)want);
		}
	}
	return 0;
}

static int64_t qidx(const QIdx *q, const RtTensor *x, const RtTensor *s, int64_t i)
{
	if (q->mode == 0)
		return 0;
	int64_t inner = kn_numel(x->rank - q->axis - 1, x->dims + q->axis + 1);
	int64_t c = (i / inner) % x->dims[q->axis];
	if (q->mode == 1)
		return c;
	int64_t outer = i / (inner * x->dims[q->axis]), sa = s->dims[q->axis];
	return (outer * sa + c / q->block) * inner + i % inner;
}

int rk_QuantizeLinear(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *s = a->in[1], *zp = kn_in(a, 2);
	QIdx q;
	DType d = zp ? zp->dtype : DT_U8;
	if (rt_attr_find(a->attrs, "output_dtype") && rt_attr_int(a->attrs, "output_dtype", 0))
		d = qdtype(rt_attr_int(a->attrs, "output_dtype", 0));
	if (d == DT_INVALID)
		return rt_errorf(e, RT_EUSER, "QuantizeLinear: unsupported output_dtype");
	if (qidx_setup(a, "QuantizeLinear", x, s, &q, e) < 0 || kn_out_like(a, 0, d, x, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int f64 = x->dtype == DT_F64, sat = (int)rt_attr_int(a->attrs, "saturate", 1);
	for (int64_t i = 0; i < x->n; i++) {
		int64_t j = qidx(&q, x, s, i);
		double v = kn_acc(f64, rt_get(x, i) / rt_get(s, j));
		if (kn_isint(y->dtype))
			rt_i64(y)[i] = kn_sat_int(y->dtype, kn_rne(v) + (double)(zp ? rt_geti(zp, j) : 0));
		else
			rt_f32(y)[i] = rt_round(y->dtype, (float)(v + (zp ? rt_get(zp, j) : 0)), sat);
	}
	return 0;
}

int rk_DequantizeLinear(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *s = a->in[1], *zp = kn_in(a, 2);
	QIdx q;
	DType d = s->dtype;
	if (rt_attr_int(a->attrs, "output_dtype", 0))
		d = qdtype(rt_attr_int(a->attrs, "output_dtype", 0));
	if (d == DT_INVALID)
		return rt_errorf(e, RT_EUSER, "DequantizeLinear: unsupported output_dtype");
	if (qidx_setup(a, "DequantizeLinear", x, s, &q, e) < 0 || kn_out_like(a, 0, d, x, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	int f64 = d == DT_F64;
	for (int64_t i = 0; i < x->n; i++) {
		int64_t j = qidx(&q, x, s, i);
		double v = kn_acc(f64, rt_get(x, i) - (zp ? rt_get(zp, j) : 0));
		rt_set(y, i, kn_acc(f64, v * rt_get(s, j)));
	}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}

/* u8 quantization from the data's range (always including 0).  An all-zero input has no
 * range: it gets scale 0, zero point 0 and codes 0 instead of the spec's division by 0. */
int rk_DynamicQuantizeLinear(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	double lo = 0, hi = 0;
	for (int64_t i = 0; i < x->n; i++) {
		double v = rt_get(x, i);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	float scale = (float)((float)(hi - lo) / 255.0f);
	double zp = scale > 0 ? kn_rne(fmin(255.0, fmax(0.0, kn_rne(0 - (double)(float)(lo / scale))))) : 0;
	if (kn_out_like(a, 0, DT_U8, x, e) < 0 || kn_out(a, 1, DT_F32, 0, NULL, e) < 0 ||
	    kn_out(a, 2, DT_U8, 0, NULL, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	for (int64_t i = 0; i < x->n; i++) {
		double v = scale > 0 ? kn_rne((double)(float)(rt_get(x, i) / scale)) + zp : 0;
		rt_i64(&a->out[0])[i] = kn_sat_int(DT_U8, v);
	}
	if (a->nout > 1)
		rt_set(&a->out[1], 0, scale);
	if (a->nout > 2)
		rt_seti(&a->out[2], 0, (int64_t)zp);
	return 0;
}

/* Scaled (fake) quantization, Quantize {to=i8|i4|f8e4m3|f8e5m2, group=G}: one symmetric scale
 * per G consecutive elements (row-major; G = -1: the whole tensor), values returned dequantized
 * in X's dtype.  Integers: scale = amax/(2^(b-1)-1), q = clamp(rne(x/scale)) (numerics.md §6).
 * FP8: Transformer Engine current scaling, s = fp32(max/amax) (FLT_MAX on overflow, 1 for
 * amax 0), q = sat_cast(x*s), out = q*fp32(1/s) (numerics.md §5). */
static void scaled_group(DType d, DType out, const float *x, float *y, int64_t n)
{
	if (kn_isint(d)) {
		rt_quantize_int(rt_dtypes[d].bits, 0, x, n, n, y, NULL, NULL, NULL);
	} else {
		float amax = 0, mx = rt_round(d, FLT_MAX, 1);
		for (int64_t i = 0; i < n; i++)
			amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
		float s = amax > 0 ? mx / amax : 1.0f;
		s = isinf(s) ? FLT_MAX : s;
		float inv = 1.0f / s;
		for (int64_t i = 0; i < n; i++)
			y[i] = rt_round(d, x[i] * s, 1) * inv;
	}
	for (int64_t i = 0; i < n; i++)
		y[i] = rt_round(out, y[i], 0);
}

static int quantize_scaled(const RtKernelArgs *a, DType d, int64_t group, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (rt_dtypes[x->dtype].storage != S_F32 || d == DT_INVALID || d == DT_BOOL ||
	    rt_dtypes[d].kind == K_BLOCK || rt_dtypes[d].kind == K_SCALE)
		return rt_errorf(e, RT_EUSER, "Quantize: group scaling needs an f32-held input and a scalar `to`");
	if (rt_tensor_alloc(&a->out[0], x->dtype, x->rank, x->dims, e) < 0)
		return -1;
	if (group <= 0 || group > x->n)
		group = x->n;
	for (int64_t i = 0; i < x->n; i += group)
		scaled_group(d, x->dtype, rt_f32(x) + i, rt_f32(&a->out[0]) + i,
			     x->n - i < group ? x->n - i : group);
	return 0;
}

/* Quantize {to=<dtype>, scale_rule=floor|rceil}: x rounded to the grid of `to`; with {group}
 * scaled per group and returned dequantized (quantize_scaled). */
int rk_Quantize(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (rt_attr_find(a->attrs, "group"))
		return quantize_scaled(a, rt_dtype_lookup(rt_attr_str(a->attrs, "to", "")),
				       rt_attr_int(a->attrs, "group", -1), e);
	DType d = a->out[0].dtype;
	if (d == DT_INVALID)
		d = rt_dtype_lookup(rt_attr_str(a->attrs, "to", ""));
	if (d == DT_INVALID)
		return rt_errorf(e, RT_EUSER, "Quantize: missing or unknown target dtype `to`");
	if (rt_tensor_alloc(&a->out[0], d, x->rank, x->dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	const char *rule = rt_attr_str(a->attrs, "scale_rule", NULL);
	RtExecOpts o = a->opts ? *a->opts : (RtExecOpts){ 0 };
	if (rule)
		o.scale_rule = strcmp(rule, "rceil") == 0 ? SCALE_RCEIL : SCALE_FLOOR;
	for (int64_t i = 0; i < x->n; i++) {
		if (kn_isint(d))
			rt_i64(y)[i] = kn_sat_int(d, kn_rne(rt_get(x, i)));
		else
			rt_set(y, i, rt_get(x, i));
	}
	if (d == DT_NVFP4 && x->n) {
		QuantOpts q = { SCALE_FLOOR, 1, 0 };
		float *tmp = rt_malloc((size_t)x->n * sizeof *tmp);
		if (!tmp) {
			kn_free_outs(a);
			return rt_errorf(e, RT_ENOMEM, "Quantize: out of memory");
		}
		rt_quantize_blocks(d, rt_f32(y), x->n, &q, tmp, NULL, NULL, &y->tensor_scale);
		rt_free(tmp);
	}
	if (!kn_isint(d) && d != DT_F32 && d != DT_F64) {   /* quantization saturates */
		QuantOpts q = { o.scale_rule ? SCALE_RCEIL : SCALE_FLOOR, 1, 0 };
		int64_t row = x->rank && x->dims[x->rank - 1] ? x->dims[x->rank - 1] : 1;
		rt_round_tensor(d, rt_f32(y), x->n, row, &q);
	}
	return 0;
}
