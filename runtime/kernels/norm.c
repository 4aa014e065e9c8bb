/* runtime/kernels/norm.c: LayerNormalization, RMSNormalization, GroupNormalization and
 * BatchNormalization (inference).
 *
 * The statistics follow the ONNX reference implementations: mean, then the mean of squared
 * deviations, inv_std = 1/sqrt(var + epsilon), Y = (X - mean) * inv_std * Scale + B, with
 * Scale and B broadcast against X.  Sums are sequential and rounded to f32 per step (the
 * stash type) unless f64 accumulation is on.
 * Specs: https://onnx.ai/onnx/operators/onnx__LayerNormalization.html (opset 17),
 * onnx__RMSNormalization.html (opset 23), onnx__GroupNormalization.html (opset 21),
 * onnx__BatchNormalization.html (opset 15).
 */
#include "runtime/kernels/kernels_impl.h"

/* Mean and inverse standard deviation of x[0..n) (RMS when rms: no mean subtraction). */
static void moments(const double *x, int64_t n, double eps, int rms, int f64, double *mean, double *inv)
{
	double s = 0, q = 0;
	if (!rms)
		for (int64_t i = 0; i < n; i++)
			s = kn_acc(f64, s + x[i]);
	double m = rms ? 0 : kn_acc(f64, s / (double)n);
	for (int64_t i = 0; i < n; i++) {
		double d = kn_acc(f64, x[i] - m);
		q = kn_acc(f64, q + kn_acc(f64, d * d));
	}
	double var = kn_acc(f64, q / (double)n);
	*mean = m;
	*inv = kn_acc(f64, 1.0 / kn_acc(f64, sqrt(kn_acc(f64, var + eps))));
}

/* y := y * Scale (+ B), both broadcast to y's shape. */
static void affine(double *y, const RtTensor *x, const RtTensor *sc, const RtTensor *b, int f64)
{
	const RtTensor *ts[3] = { x, sc, b };
	KnIter it;
	kn_iter_init(&it, x->rank, x->dims, ts, 3);
	for (int64_t i = 0; i < x->n; i++, kn_iter_next(&it)) {
		double v = kn_acc(f64, y[i] * rt_get(sc, it.off[1]));
		y[i] = b ? kn_acc(f64, v + rt_get(b, it.off[2])) : v;
	}
}

/* Layer and RMS normalisation over the axes >= axis (contiguous rows). */
static int lastaxes_norm(const RtKernelArgs *a, RtError *e, const char *op, int rms)
{
	const RtTensor *x = a->in[0], *sc = a->in[1], *b = rms ? NULL : kn_in(a, 2);
	int ax, f64 = kn_acc64(a);
	if (kn_axis(op, rt_attr_int(a->attrs, "axis", -1), x->rank, &ax, e) < 0)
		return -1;
	const RtTensor *ts[3] = { x, sc, b };
	int r;
	int64_t bd[RT_MAX_RANK], sdims[RT_MAX_RANK];
	if (kn_bcast(op, ts, 3, &r, bd, e) < 0)
		return -1;
	if (r != x->rank || kn_numel(r, bd) != x->n)
		return rt_errorf(e, RT_EUSER, "%s: Scale/B do not broadcast to X", op);
	double eps = rt_attr_float(a->attrs, "epsilon", 1e-5);
	int64_t len = kn_numel(x->rank - ax, x->dims + ax), rows = len ? x->n / len : kn_numel(ax, x->dims);
	for (int k = 0; k < x->rank; k++)
		sdims[k] = k < ax ? x->dims[k] : 1;
	double *y = kn_load(x, e), *mv = NULL, *iv = NULL;
	if (!y)
		return -1;
	mv = kn_alloc(rows, e);
	iv = mv ? kn_alloc(rows, e) : NULL;
	if (!iv)
		goto fail;
	KN_TRY(kn_out_like(a, 0, x->dtype, x, e));
	KN_TRY(kn_out(a, 1, DT_F32, x->rank, sdims, e));
	KN_TRY(kn_out(a, 2, DT_F32, x->rank, sdims, e));
	for (int64_t r0 = 0; r0 < rows; r0++) {
		double *row = y + r0 * len;
		moments(row, len, eps, rms, f64, &mv[r0], &iv[r0]);
		for (int64_t i = 0; i < len; i++)
			row[i] = kn_acc(f64, kn_acc(f64, row[i] - mv[r0]) * iv[r0]);
	}
	affine(y, x, sc, b, f64);
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	if (a->nout > 1)
		KN_TRY(kn_store(&a->out[1], mv, a->opts, e));
	if (a->nout > 2)
		KN_TRY(kn_store(&a->out[2], iv, a->opts, e));
	rt_free(y), rt_free(mv), rt_free(iv);
	return 0;
fail:
	rt_free(y), rt_free(mv), rt_free(iv);
	kn_free_outs(a);
	return -1;
}

int rk_LayerNormalization(const RtKernelArgs *a, RtError *e) { return lastaxes_norm(a, e, "LayerNormalization", 0); }
int rk_RMSNormalization(const RtKernelArgs *a, RtError *e) { return lastaxes_norm(a, e, "RMSNormalization", 1); }

/* GroupNormalization (opset 21): X (N, C, ...) in num_groups groups of C/num_groups channels;
 * scale and bias are per channel. */
int rk_GroupNormalization(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *sc = a->in[1], *b = a->in[2];
	int64_t G = rt_attr_int(a->attrs, "num_groups", 0);
	if (x->rank < 2 || G <= 0 || x->dims[1] % G)
		return rt_errorf(e, RT_EUSER, "GroupNormalization: channels must divide into num_groups");
	int64_t C = x->dims[1], sp = kn_numel(x->rank - 2, x->dims + 2), len = C / G * sp;
	if (sc->n != C || b->n != C)
		return rt_errorf(e, RT_EUSER, "GroupNormalization: scale and bias need %lld values", (long long)C);
	int f64 = kn_acc64(a);
	double eps = rt_attr_float(a->attrs, "epsilon", 1e-5), m, inv;
	double *y = kn_load(x, e);
	if (!y)
		return -1;
	KN_TRY(kn_out_like(a, 0, x->dtype, x, e));
	for (int64_t g = 0; len && g < x->n / len; g++) {
		double *row = y + g * len;
		moments(row, len, eps, 0, f64, &m, &inv);
		for (int64_t i = 0; i < len; i++) {
			int64_t c = (g % G) * (C / G) + i / sp;
			double v = kn_acc(f64, kn_acc(f64, row[i] - m) * inv);
			row[i] = kn_acc(f64, kn_acc(f64, v * rt_get(sc, c)) + rt_get(b, c));
		}
	}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(y);
	return 0;
fail:
	rt_free(y);
	kn_free_outs(a);
	return -1;
}

KN_VEC static void bn_row(const float *x, float *y, int64_t n, float m, float inv, float s, float b)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = (x[i] - m) / inv * s + b;
}

/* BatchNormalization on f32 storage: the per-channel terms once, then per element the same
 * f32-rounded steps as the double path ((x - mean) / inv * scale + B, each rounded). */
static int batchnorm_f32(const RtKernelArgs *a, double eps, int64_t C, int64_t sp, RtError *e)
{
	const RtTensor *x = a->in[0], *sc = a->in[1], *b = a->in[2], *mean = a->in[3], *var = a->in[4];
	if (kn_out_raw(a, 0, x->dtype, x->rank, x->dims, e) < 0)
		return -1;
	const float *xv = rt_f32(x);
	float *y = rt_f32(&a->out[0]);
	for (int64_t i0 = 0; i0 < x->n; i0 += sp) {
		int64_t c = (i0 / sp) % C;
		float inv = (float)sqrt((double)(float)(rt_get(var, c) + eps));
		bn_row(xv + i0, y + i0, sp, (float)rt_get(mean, c), inv, (float)rt_get(sc, c), (float)rt_get(b, c));
	}
	return kn_finish(&a->out[0], a->opts, e);
}

/* BatchNormalization in inference mode with running statistics per channel (axis 1). */
int rk_BatchNormalization(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *sc = a->in[1], *b = a->in[2], *mean = a->in[3], *var = a->in[4];
	if (rt_attr_int(a->attrs, "training_mode", 0))
		return rt_errorf(e, RT_EUSER, "BatchNormalization: training_mode is not supported");
	int64_t C = x->rank > 1 ? x->dims[1] : 1, sp = x->rank > 2 ? kn_numel(x->rank - 2, x->dims + 2) : 1;
	if (sc->n != C || b->n != C || mean->n != C || var->n != C)
		return rt_errorf(e, RT_EUSER, "BatchNormalization: per-channel inputs need %lld values", (long long)C);
	int f64 = kn_acc64(a);
	double eps = rt_attr_float(a->attrs, "epsilon", 1e-5);
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (!f64 && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[od].storage == S_F32)
		return batchnorm_f32(a, eps, C, sp, e);
	double *y = kn_load(x, e);
	if (!y)
		return -1;
	KN_TRY(kn_out_like(a, 0, x->dtype, x, e));
	for (int64_t i = 0; i < x->n; i++) {
		int64_t c = (i / sp) % C;
		double inv = kn_acc(f64, sqrt(kn_acc(f64, rt_get(var, c) + eps)));
		double v = kn_acc(f64, kn_acc(f64, y[i] - rt_get(mean, c)) / inv);
		y[i] = kn_acc(f64, kn_acc(f64, v * rt_get(sc, c)) + rt_get(b, c));
	}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(y);
	return 0;
fail:
	rt_free(y);
	kn_free_outs(a);
	return -1;
}
