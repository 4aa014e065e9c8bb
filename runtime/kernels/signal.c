/* runtime/kernels/signal.c: the ONNX signal operators (opset 17): HannWindow, HammingWindow,
 * BlackmanWindow, DFT, STFT and MelWeightMatrix (https://onnx.ai/onnx/operators/, one page each;
 * formulas as in the ONNX reference implementations).
 *
 * Windows: w[n] for n < size over a period of size (periodic=1) or size-1; Hamming uses
 * alpha = 25/46.  DFT along {axis} of a real [.., 1] or complex [.., 2] signal, padded or cut to
 * dft_length, {inverse} scaled by 1/n, {onesided} keeping n/2+1 bins; the sums run in double in
 * index order (a direct O(n^2) transform: the reference, not a fast one).  STFT frames the signal
 * with frame_step, multiplies by the window and transforms each frame.
 */
#include "runtime/kernels/kernels_impl.h"

static int window(const RtKernelArgs *a, RtError *e, int kind)
{
	const RtTensor *sz = a->in[0];
	if (sz->n != 1 || rt_geti(sz, 0) < 0)
		return rt_errorf(e, RT_EUSER, "window: size must be one non-negative integer");
	int64_t N = rt_geti(sz, 0), dims[1] = { N };
	int periodic = (int)rt_attr_int(a->attrs, "periodic", 1);
	DType od = rt_dtype_from_onnx((int)rt_attr_int(a->attrs, "output_datatype", 1));
	if (kn_out(a, 0, od == DT_INVALID ? DT_F32 : od, 1, dims, e) < 0)
		return -1;
	double den = (double)(periodic ? N : N - 1), alpha = 25.0 / 46.0;
	for (int64_t n = 0; n < N; n++) {
		double t = den > 0 ? 2 * M_PI * (double)n / den : 0, v;
		if (kind == 0)
			v = 0.5 - 0.5 * cos(t);
		else if (kind == 1)
			v = alpha - (1 - alpha) * cos(t);
		else
			v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t);
		rt_set(&a->out[0], n, v);
	}
	return kn_finish(&a->out[0], a->opts, e);
}

int rk_HannWindow(const RtKernelArgs *a, RtError *e) { return window(a, e, 0); }
int rk_HammingWindow(const RtKernelArgs *a, RtError *e) { return window(a, e, 1); }
int rk_BlackmanWindow(const RtKernelArgs *a, RtError *e) { return window(a, e, 2); }

/* out[k] (re, im) for k < nout of the length-n transform of (re, im) in[0..len) (zeros past len). */
static void dft1(const double *re, const double *im, int64_t len, int64_t n, int64_t nout, int inverse,
		 double *ore, double *oim)
{
	double sgn = inverse ? 1 : -1;
	for (int64_t k = 0; k < nout; k++) {
		double sr = 0, si = 0;
		for (int64_t t = 0; t < len && t < n; t++) {
			double ang = sgn * 2 * M_PI * (double)((k * t) % n) / (double)n, c = cos(ang), s = sin(ang);
			sr += re[t] * c - im[t] * s;
			si += re[t] * s + im[t] * c;
		}
		ore[k] = inverse ? sr / (double)n : sr;
		oim[k] = inverse ? si / (double)n : si;
	}
}

int rk_DFT(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *dl = kn_in(a, 1);
	if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2))
		return rt_errorf(e, RT_EUSER, "DFT: input must end in a dimension of 1 (real) or 2 (complex)");
	int ax;
	if (kn_axis("DFT", rt_attr_int(a->attrs, "axis", 1), x->rank - 1, &ax, e) < 0)
		return -1;
	int inverse = (int)rt_attr_int(a->attrs, "inverse", 0), onesided = (int)rt_attr_int(a->attrs, "onesided", 0);
	int64_t len = x->dims[ax], n = dl && dl->n ? rt_geti(dl, 0) : len, cplx = x->dims[x->rank - 1];
	if (n < 1)
		return rt_errorf(e, RT_EUSER, "DFT: dft_length must be positive");
	int64_t nout = onesided ? n / 2 + 1 : n, dims[RT_MAX_RANK], outer = 1, inner = 1;
	memcpy(dims, x->dims, sizeof dims);
	dims[ax] = nout;
	dims[x->rank - 1] = 2;
	for (int i = 0; i < ax; i++)
		outer *= x->dims[i];
	for (int i = ax + 1; i < x->rank - 1; i++)
		inner *= x->dims[i];
	if (kn_out(a, 0, x->dtype, x->rank, dims, e) < 0)
		return -1;
	double *buf = kn_alloc(2 * (len + nout) + 2, e);
	if (!buf) {
		kn_free_outs(a);
		return -1;
	}
	double *re = buf, *im = buf + len, *ore = im + len, *oim = ore + nout;
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			for (int64_t t = 0; t < len; t++) {
				int64_t base = ((o * len + t) * inner + i) * cplx;
				re[t] = rt_get(x, base);
				im[t] = cplx == 2 ? rt_get(x, base + 1) : 0;
			}
			dft1(re, im, len, n, nout, inverse, ore, oim);
			for (int64_t k = 0; k < nout; k++) {
				int64_t base = ((o * nout + k) * inner + i) * 2;
				rt_set(&a->out[0], base, kn_acc(f64, ore[k]));
				rt_set(&a->out[0], base + 1, kn_acc(f64, oim[k]));
			}
		}
	rt_free(buf);
	return kn_finish(&a->out[0], a->opts, e);
}

/* STFT {onesided=1}(signal [B, L, 1|2], frame_step, window [W], frame_length). */
int rk_STFT(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *st = a->in[1], *w = kn_in(a, 2), *fl = kn_in(a, 3);
	if (x->rank != 3 || st->n != 1)
		return rt_errorf(e, RT_EUSER, "STFT: signal must be [batch, length, 1 or 2] and frame_step a scalar");
	int64_t B = x->dims[0], L = x->dims[1], cplx = x->dims[2], step = rt_geti(st, 0);
	int64_t F = fl && fl->n ? rt_geti(fl, 0) : w ? w->n : 0;
	if (F < 1 || step < 1 || F > L || (w && w->n != F))
		return rt_errorf(e, RT_EUSER, "STFT: frame_length and window length must agree and fit the signal");
	int onesided = (int)rt_attr_int(a->attrs, "onesided", 1);
	int64_t frames = (L - F) / step + 1, bins = onesided ? F / 2 + 1 : F, dims[4] = { B, frames, bins, 2 };
	if (kn_out(a, 0, x->dtype, 4, dims, e) < 0)
		return -1;
	double *buf = kn_alloc(2 * (F + bins) + 2, e);
	if (!buf) {
		kn_free_outs(a);
		return -1;
	}
	double *re = buf, *im = buf + F, *ore = im + F, *oim = ore + bins;
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	for (int64_t b = 0; b < B; b++)
		for (int64_t f = 0; f < frames; f++) {
			for (int64_t t = 0; t < F; t++) {
				double wt = w ? rt_get(w, t) : 1;
				int64_t base = (b * L + f * step + t) * cplx;
				re[t] = rt_get(x, base) * wt;
				im[t] = cplx == 2 ? rt_get(x, base + 1) * wt : 0;
			}
			dft1(re, im, F, F, bins, 0, ore, oim);
			for (int64_t k = 0; k < bins; k++) {
				int64_t base = ((b * frames + f) * bins + k) * 2;
				rt_set(&a->out[0], base, kn_acc(f64, ore[k]));
				rt_set(&a->out[0], base + 1, kn_acc(f64, oim[k]));
			}
		}
	rt_free(buf);
	return kn_finish(&a->out[0], a->opts, e);
}

/* MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
 * {output_datatype=1}: [dft_length/2+1, num_mel_bins] triangular filters on the mel scale
 * m = 2595 log10(1 + f/700). */
int rk_MelWeightMatrix(const RtKernelArgs *a, RtError *e)
{
	for (int i = 0; i < 5; i++)
		if (!a->in[i] || a->in[i]->n != 1)
			return rt_errorf(e, RT_EUSER, "MelWeightMatrix: every input must be one number");
	int64_t M = rt_geti(a->in[0], 0), D = rt_geti(a->in[1], 0), sr = rt_geti(a->in[2], 0);
	double lo = rt_get(a->in[3], 0), hi = rt_get(a->in[4], 0);
	if (M < 1 || D < 1 || sr < 1 || M > 1 << 16)
		return rt_errorf(e, RT_EUSER, "MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be positive");
	int64_t S = D / 2 + 1, dims[2] = { S, M };
	DType od = rt_dtype_from_onnx((int)rt_attr_int(a->attrs, "output_datatype", 1));
	if (kn_out(a, 0, od == DT_INVALID ? DT_F32 : od, 2, dims, e) < 0)
		return -1;
	int64_t *fb = rt_malloc(sizeof *fb * (size_t)(M + 2));
	if (!fb) {
		kn_free_outs(a);
		return rt_errorf(e, RT_ENOMEM, "MelWeightMatrix: out of memory");
	}
	double mlo = 2595 * log10(1 + lo / 700), mhi = 2595 * log10(1 + hi / 700), step = (mhi - mlo) / (double)(M + 2);
	for (int64_t i = 0; i < M + 2; i++) {
		double f = 700 * (pow(10, ((double)i * step + mlo) / 2595) - 1);
		fb[i] = (int64_t)floor((double)(D + 1) * f / (double)sr);
	}
	RtTensor *y = &a->out[0];
	for (int64_t i = 0; i < M; i++) {
		int64_t l = fb[i], c = fb[i + 1], h = fb[i + 2];
		if (c - l == 0) {
			if (c >= 0 && c < S)
				rt_set(y, c * M + i, 1);
		} else {
			for (int64_t j = l; j <= c; j++)
				if (j >= 0 && j < S)
					rt_set(y, j * M + i, (double)(j - l) / (double)(c - l));
		}
		if (h - c > 0)
			for (int64_t j = c; j < h; j++)
				if (j >= 0 && j < S)
					rt_set(y, j * M + i, (double)(h - j) / (double)(h - c));
	}
	rt_free(fb);
	return kn_finish(y, a->opts, e);
}
