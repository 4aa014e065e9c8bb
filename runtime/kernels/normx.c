/* runtime/kernels/normx.c: InstanceNormalization, LRN, MeanVarianceNormalization and
 * GlobalMaxPool (https://onnx.ai/onnx/operators/onnx__<Op>.html).
 *
 * Statistics are sums in double in element order (mean first, then the mean of squared
 * deviations, as the ONNX reference computes them), rounded to f32 at each result unless the
 * computation is in f64; outputs are rounded to their dtype.
 */
#include "runtime/kernels/kernels_impl.h"

/* Normalises each group of `len` elements at stride 1 of v in place: (x - mean) / sqrt(var + eps). */
static void normalise(double *v, int64_t len, double eps, int f64)
{
	double s = 0, q = 0;
	for (int64_t i = 0; i < len; i++)
		s += v[i];
	double mean = kn_acc(f64, s / (double)len);
	for (int64_t i = 0; i < len; i++)
		q += (v[i] - mean) * (v[i] - mean);
	double den = kn_acc(f64, sqrt(kn_acc(f64, q / (double)len) + eps));
	for (int64_t i = 0; i < len; i++)
		v[i] = kn_acc(f64, (v[i] - mean) / den);
}

/* InstanceNormalization {epsilon=1e-5}(X [N, C, ...], scale [C], B [C]). */
int rk_InstanceNormalization(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *sc = a->in[1], *b = a->in[2];
	if (x->rank < 2 || sc->n != x->dims[1] || b->n != x->dims[1])
		return rt_errorf(e, RT_EUSER, "InstanceNormalization: X must be [N, C, ...], scale and B [C]");
	int64_t N = x->dims[0], C = x->dims[1], S = x->n / (N * C != 0 ? N * C : 1);
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	double eps = rt_attr_float(a->attrs, "epsilon", 1e-5);
	double *v = kn_load(x, e);
	if (!v)
		return -1;
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++) {
			double *g = v + (n * C + c) * S;
			normalise(g, S, kn_acc(f64, eps), f64);
			for (int64_t i = 0; i < S; i++)
				g[i] = kn_acc(f64, kn_acc(f64, g[i] * rt_get(sc, c)) + rt_get(b, c));
		}
	int rc = kn_out_like(a, 0, x->dtype, x, e) < 0 ? -1 : kn_store(&a->out[0], v, a->opts, e);
	rt_free(v);
	return rc;
}

/* MeanVarianceNormalization {axes=[0, 2, 3]}: (X - mean) / sqrt(var) over axes (epsilon 1e-9,
 * the function body's value). */
int rk_MeanVarianceNormalization(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int na, red[RT_MAX_RANK] = { 0 };
	const int64_t *ax = rt_attr_ints(a->attrs, "axes", &na);
	static const int64_t def[3] = { 0, 2, 3 };
	if (!ax)
		ax = def, na = 3;
	for (int i = 0; i < na; i++) {
		int k;
		if (kn_axis("MeanVarianceNormalization", ax[i], x->rank, &k, e) < 0)
			return -1;
		red[k] = 1;
	}
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	int64_t nrows, len;
	double *v = kn_load(x, e), *rows = v ? kn_gather_rows(v, x->rank, x->dims, red, &nrows, &len, e) : NULL;
	int rc = -1;
	if (rows) {
		for (int64_t r = 0; r < nrows; r++) {
			double *g = rows + r * len, s = 0, q = 0;
			for (int64_t i = 0; i < len; i++)
				s += g[i], q += g[i] * g[i];
			double mean = kn_acc(f64, s / (double)len), msq = kn_acc(f64, q / (double)len);
			double den = kn_acc(f64, sqrt(kn_acc(f64, msq - mean * mean)) + 1e-9);
			for (int64_t i = 0; i < len; i++)
				g[i] = kn_acc(f64, (g[i] - mean) / den);
		}
		kn_scatter_rows(rows, x->rank, x->dims, red, v);
		rc = kn_out_like(a, 0, x->dtype, x, e) < 0 ? -1 : kn_store(&a->out[0], v, a->opts, e);
	}
	rt_free(v);
	rt_free(rows);
	return rc;
}

/* LRN {alpha=1e-4, beta=0.75, bias=1, size}: X / (bias + alpha/size * sum of squares over the
 * channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta. */
int rk_LRN(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t size = rt_attr_int(a->attrs, "size", 0);
	if (x->rank < 2 || size < 1)
		return rt_errorf(e, RT_EUSER, "LRN: X must be [N, C, ...] and size positive");
	double alpha = rt_attr_float(a->attrs, "alpha", 1e-4), beta = rt_attr_float(a->attrs, "beta", 0.75);
	double bias = rt_attr_float(a->attrs, "bias", 1.0);
	int64_t N = x->dims[0], C = x->dims[1], S = x->n / (N * C != 0 ? N * C : 1);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	double *y = kn_alloc(x->n, e);
	if (!y) {
		kn_free_outs(a);
		return -1;
	}
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t s = 0; s < S; s++) {
				double q = 0;
				for (int64_t k = c - lo; k <= c + hi; k++)
					if (k >= 0 && k < C) {
						double v = rt_get(x, (n * C + k) * S + s);
						q += v * v;
					}
				double d = pow(bias + alpha / (double)size * q, beta);
				y[(n * C + c) * S + s] = kn_acc(f64, rt_get(x, (n * C + c) * S + s) / d);
			}
	int rc = kn_store(&a->out[0], y, a->opts, e);
	rt_free(y);
	return rc;
}

/* GlobalMaxPool: the maximum over every spatial position of each (n, c). */
int rk_GlobalMaxPool(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (x->rank < 2)
		return rt_errorf(e, RT_EUSER, "GlobalMaxPool: X must be [N, C, ...]");
	int64_t dims[RT_MAX_RANK], NC = x->dims[0] * x->dims[1], S = x->n / (NC != 0 ? NC : 1);
	for (int i = 0; i < x->rank; i++)
		dims[i] = i < 2 ? x->dims[i] : 1;
	if (kn_out(a, 0, x->dtype, x->rank, dims, e) < 0)
		return -1;
	for (int64_t g = 0; g < NC; g++) {
		double m = -INFINITY;
		for (int64_t s = 0; s < S; s++) {
			double v = rt_get(x, g * S + s);
			m = isnan(v) || v > m ? v : m;
		}
		rt_set(&a->out[0], g, m);
	}
	return 0;
}
