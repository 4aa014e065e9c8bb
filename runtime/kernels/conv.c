/* runtime/kernels/conv.c: Conv, AveragePool, MaxPool and GlobalAveragePool over N-D inputs
 * (N, C, D1, ..., Dn).
 *
 * Window geometry is shared: kernel_shape, strides, dilations, explicit pads (begins then
 * ends) or auto_pad SAME_UPPER/SAME_LOWER/VALID, and ceil_mode for pools (a last window that
 * would start in the end padding is dropped, as the ONNX reference and PyTorch do).  Conv is
 * im2col followed by one matrix product per image and group (kn_gemm: one fma chain per output, f32 or f64
 * accumulation, mma_in operand rounding).  AveragePool divides by the valid elements, or with
 * count_include_pad by those inside the padded extent.  MaxPool's optional Indices are flat
 * row-major offsets into X.
 * Specs: https://onnx.ai/onnx/operators/onnx__Conv.html, onnx__AveragePool.html,
 * onnx__MaxPool.html, onnx__GlobalAveragePool.html.
 */
#include "runtime/kernels/kernels_impl.h"

enum { SPMAX = RT_MAX_RANK - 2 };

typedef struct Win {
	int ns;                          /* spatial rank */
	int64_t in[SPMAX], k[SPMAX], s[SPMAX], d[SPMAX], pb[SPMAX], pe[SPMAX], out[SPMAX];
} Win;

/* Reads the window attributes; kshape (from W for Conv) overrides kernel_shape when given. */
static int win_setup(const RtKernelArgs *a, const char *op, const RtTensor *x, const int64_t *kshape,
		     int ceil_mode, Win *w, RtError *e)
{
	int n;
	if (x->rank < 3)
		return rt_errorf(e, RT_EUSER, "%s: input must be (N, C, D1, ...)", op);
	w->ns = x->rank - 2;
	const int64_t *ks = kshape ? kshape : rt_attr_ints(a->attrs, "kernel_shape", &n);
	if (!kshape && (!ks || n != w->ns))
		return rt_errorf(e, RT_EUSER, "%s: kernel_shape needs %d values", op, w->ns);
	const int64_t *st = rt_attr_ints(a->attrs, "strides", &n);
	if (st && n != w->ns)
		return rt_errorf(e, RT_EUSER, "%s: strides needs %d values", op, w->ns);
	const int64_t *dl = rt_attr_ints(a->attrs, "dilations", &n);
	if (dl && n != w->ns)
		return rt_errorf(e, RT_EUSER, "%s: dilations needs %d values", op, w->ns);
	const int64_t *pd = rt_attr_ints(a->attrs, "pads", &n);
	if (pd && n != 2 * w->ns)
		return rt_errorf(e, RT_EUSER, "%s: pads needs %d values", op, 2 * w->ns);
	const char *ap = rt_attr_str(a->attrs, "auto_pad", "NOTSET");
	for (int i = 0; i < w->ns; i++) {
		w->in[i] = x->dims[i + 2];
		w->k[i] = ks[i];
		w->s[i] = st ? st[i] : 1;
		w->d[i] = dl ? dl[i] : 1;
		if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1)
			return rt_errorf(e, RT_EUSER, "%s: kernel, strides and dilations must be positive", op);
		int64_t ext = (w->k[i] - 1) * w->d[i] + 1;
		if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			w->out[i] = (w->in[i] + w->s[i] - 1) / w->s[i];
			int64_t tot = (w->out[i] - 1) * w->s[i] + ext - w->in[i];
			tot = tot > 0 ? tot : 0;
			w->pb[i] = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
			w->pe[i] = tot - w->pb[i];
			continue;
		}
		int valid = !strcmp(ap, "VALID");
		w->pb[i] = pd && !valid ? pd[i] : 0;
		w->pe[i] = pd && !valid ? pd[i + w->ns] : 0;
		int64_t span = w->in[i] + w->pb[i] + w->pe[i] - ext;
		if (span < 0)
			return rt_errorf(e, RT_EUSER, "%s: window larger than the padded input", op);
		w->out[i] = (ceil_mode ? (span + w->s[i] - 1) / w->s[i] : span / w->s[i]) + 1;
		if (ceil_mode && (w->out[i] - 1) * w->s[i] >= w->in[i] + w->pb[i])
			w->out[i]--;
	}
	return 0;
}

static int64_t prod(const int64_t *v, int n) { return kn_numel(n, v); }

/* Advances an odometer idx over dims; returns 0 when it wraps to all zeros. */
static int odo(int64_t *idx, const int64_t *dims, int n)
{
	for (int k = n - 1; k >= 0; k--) {
		if (++idx[k] < dims[k])
			return 1;
		idx[k] = 0;
	}
	return 0;
}

/* ---- Conv ---- */
/* cols[(c*K + kk), o] := x[c at window kk of output position o] (0 in the padding). */
static void im2col(const double *x, int64_t C, const Win *w, double *cols)
{
	int64_t kn = prod(w->k, w->ns), on = prod(w->out, w->ns), isz = prod(w->in, w->ns);
	for (int64_t c = 0; c < C; c++) {
		int64_t kk[SPMAX] = { 0 };
		for (int64_t kq = 0; kq < kn; kq++, odo(kk, w->k, w->ns)) {
			int64_t oo[SPMAX] = { 0 };
			for (int64_t o = 0; o < on; o++, odo(oo, w->out, w->ns)) {
				int64_t off = 0;
				for (int i = 0; i < w->ns && off >= 0; i++) {
					int64_t p = oo[i] * w->s[i] - w->pb[i] + kk[i] * w->d[i];
					off = p < 0 || p >= w->in[i] ? -1 : off * w->in[i] + p;
				}
				cols[(c * kn + kq) * on + o] = off < 0 ? 0 : x[c * isz + off];
			}
		}
	}
}

int rk_Conv(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *W = a->in[1], *B = kn_in(a, 2);
	int64_t G = rt_attr_int(a->attrs, "group", 1);
	Win w;
	if (W->rank != x->rank || G < 1 || x->rank < 3 || x->dims[1] != W->dims[1] * G || W->dims[0] % G)
		return rt_errorf(e, RT_EUSER, "Conv: X, W and group do not match");
	if (win_setup(a, "Conv", x, W->dims + 2, 0, &w, e) < 0)
		return -1;
	int64_t N = x->dims[0], M = W->dims[0], Cg = W->dims[1], Mg = M / G, kn = prod(w.k, w.ns);
	int64_t on = prod(w.out, w.ns), isz = prod(w.in, w.ns), dims[RT_MAX_RANK] = { N, M };
	memcpy(dims + 2, w.out, (size_t)w.ns * sizeof *dims);
	if (B && B->n != M)
		return rt_errorf(e, RT_EUSER, "Conv: B needs %lld values", (long long)M);
	int f64 = kn_acc64(a);
	double *xv = kn_load(x, e), *wv = xv ? kn_load(W, e) : NULL, *y = NULL, *cols = NULL;
	if (!wv)
		goto fail;
	y = kn_alloc(N * M * on, e);
	cols = y ? kn_alloc(Cg * kn * on, e) : NULL;
	if (!cols)
		goto fail;
	KN_TRY(kn_out(a, 0, x->dtype, x->rank, dims, e));
	for (int64_t n = 0; n < N; n++)
		for (int64_t g = 0; g < G; g++) {
			im2col(xv + (n * x->dims[1] + g * Cg) * isz, Cg, &w, cols);
			double *yo = y + (n * M + g * Mg) * on;
			KN_TRY(kn_gemm(a->opts, f64, Mg, on, Cg * kn, wv + g * Mg * Cg * kn, Cg * kn, 0,
				       cols, on, 0, yo, e));
			for (int64_t m = 0; B && m < Mg; m++)
				for (int64_t o = 0; o < on; o++)
					yo[m * on + o] = kn_acc(f64, yo[m * on + o] + rt_get(B, g * Mg + m));
		}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(xv), rt_free(wv), rt_free(y), rt_free(cols);
	return 0;
fail:
	rt_free(xv), rt_free(wv), rt_free(y), rt_free(cols);
	kn_free_outs(a);
	return -1;
}

/* ---- pools ---- */
/* The column-major offset of the element at row-major offset r of a spatial extent `in`
 * (MaxPool storage_order=1 Indices). */
static int64_t col_major(int64_t r, const int64_t *in, int ns)
{
	int64_t c = 0, stride = 1, coord[SPMAX];
	for (int i = ns - 1; i >= 0; i--) {
		coord[i] = r % in[i];
		r /= in[i];
	}
	for (int i = 0; i < ns; i++) {
		c += coord[i] * stride;
		stride *= in[i];
	}
	return c;
}

static int pool(const RtKernelArgs *a, RtError *e, const char *op, int is_max)
{
	const RtTensor *x = a->in[0];
	Win w;
	if (win_setup(a, op, x, NULL, (int)rt_attr_int(a->attrs, "ceil_mode", 0), &w, e) < 0)
		return -1;
	if (!is_max)
		for (int i = 0; i < w.ns; i++)
			w.d[i] = 1;
	int incl = (int)rt_attr_int(a->attrs, "count_include_pad", 0), f64 = kn_acc64(a);
	int colmajor = is_max && rt_attr_int(a->attrs, "storage_order", 0) == 1;
	int64_t NC = x->dims[0] * x->dims[1], on = prod(w.out, w.ns), isz = prod(w.in, w.ns);
	int64_t kn = prod(w.k, w.ns), dims[RT_MAX_RANK] = { x->dims[0], x->dims[1] };
	memcpy(dims + 2, w.out, (size_t)w.ns * sizeof *dims);
	double *xv = kn_load(x, e), *y = xv ? kn_alloc(NC * on, e) : NULL, *ix = y ? kn_alloc(NC * on, e) : NULL;
	if (!ix)
		goto fail;
	KN_TRY(kn_out(a, 0, x->dtype, x->rank, dims, e));
	KN_TRY(kn_out(a, 1, DT_I64, x->rank, dims, e));
	for (int64_t nc = 0; nc < NC; nc++) {
		int64_t oo[SPMAX] = { 0 };
		for (int64_t o = 0; o < on; o++, odo(oo, w.out, w.ns)) {
			double acc = is_max ? -INFINITY : 0;
			int64_t cnt = 0, padcnt = 0, best = -1, kk[SPMAX] = { 0 };
			for (int64_t q = 0; q < kn; q++, odo(kk, w.k, w.ns)) {
				int64_t off = 0, inpad = 1;
				for (int i = 0; i < w.ns; i++) {
					int64_t p = oo[i] * w.s[i] - w.pb[i] + kk[i] * w.d[i];
					inpad &= p < w.in[i] + w.pe[i];
					off = off < 0 || p < 0 || p >= w.in[i] ? -1 : off * w.in[i] + p;
				}
				padcnt += inpad;
				if (off < 0)
					continue;
				double v = xv[nc * isz + off];
				cnt++;
				if (is_max && (v > acc || best < 0)) {
					acc = v;
					best = nc * isz + off;
				} else if (!is_max) {
					acc = kn_acc(f64, acc + v);
				}
			}
			y[nc * on + o] = is_max ? acc : kn_acc(f64, acc / (double)(incl ? padcnt : cnt));
			ix[nc * on + o] = (double)(colmajor && best >= 0 ? nc * isz + col_major(best - nc * isz, w.in, w.ns) : best);
		}
	}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	if (a->nout > 1)
		KN_TRY(kn_store(&a->out[1], ix, a->opts, e));
	rt_free(xv), rt_free(y), rt_free(ix);
	return 0;
fail:
	rt_free(xv), rt_free(y), rt_free(ix);
	kn_free_outs(a);
	return -1;
}

int rk_AveragePool(const RtKernelArgs *a, RtError *e) { return pool(a, e, "AveragePool", 0); }
int rk_MaxPool(const RtKernelArgs *a, RtError *e) { return pool(a, e, "MaxPool", 1); }

int rk_GlobalAveragePool(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (x->rank < 2)
		return rt_errorf(e, RT_EUSER, "GlobalAveragePool: input must be (N, C, ...)");
	int64_t dims[RT_MAX_RANK], sp = kn_numel(x->rank - 2, x->dims + 2), NC = x->dims[0] * x->dims[1];
	int f64 = kn_acc64(a);
	for (int k = 0; k < x->rank; k++)
		dims[k] = k < 2 ? x->dims[k] : 1;
	double *xv = kn_load(x, e), *y = xv ? kn_alloc(NC, e) : NULL;
	if (!y)
		goto fail;
	KN_TRY(kn_out(a, 0, x->dtype, x->rank, dims, e));
	for (int64_t i = 0; i < NC; i++) {
		double s = 0;
		for (int64_t j = 0; j < sp; j++)
			s = kn_acc(f64, s + xv[i * sp + j]);
		y[i] = kn_acc(f64, s / (double)sp);
	}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(xv), rt_free(y);
	return 0;
fail:
	rt_free(xv), rt_free(y);
	kn_free_outs(a);
	return -1;
}
