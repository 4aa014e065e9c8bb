/* runtime/kernels/conv.c: Conv, AveragePool, MaxPool and GlobalAveragePool over N-D inputs
 * (N, C, D1, ..., Dn).
 *
 * Window geometry is shared: kernel_shape, strides, dilations, explicit pads (begins then
 * ends) or auto_pad SAME_UPPER/SAME_LOWER/VALID, and ceil_mode for pools (a last window that
 * would start in the end padding is dropped, as the ONNX reference and PyTorch do).  Conv is
 * im2col followed by one matrix product per image and group (one fma chain per output in k =
 * (channel, tap) order, runtime/kernels/gemm.c; f32 or f64 accumulation, mma_in operand rounding).
 * On f32 storage it stays in f32: a 2-D im2col (row copies), none for a pointwise window, and a
 * direct depthwise kernel running each output's taps in the same order (so the same bits);
 * pools and GlobalAveragePool have f32 paths too.  AveragePool divides by the valid elements, or with
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
/* cols[(c*K + kk), o] := x[c at window kk of output position o] (0 in the padding), for T
 * double (the general path) and float (the f32 path). */
#define IM2COL(name, T)                                                                          \
	static void name(const T *x, int64_t C, const Win *w, T *cols)                           \
	{                                                                                        \
		int64_t kn = prod(w->k, w->ns), on = prod(w->out, w->ns), isz = prod(w->in, w->ns); \
		for (int64_t c = 0; c < C; c++) {                                                \
			int64_t kk[SPMAX] = { 0 };                                               \
			for (int64_t kq = 0; kq < kn; kq++, odo(kk, w->k, w->ns)) {              \
				int64_t oo[SPMAX] = { 0 };                                       \
				for (int64_t o = 0; o < on; o++, odo(oo, w->out, w->ns)) {       \
					int64_t off = 0;                                         \
					for (int i = 0; i < w->ns && off >= 0; i++) {            \
						int64_t p = oo[i] * w->s[i] - w->pb[i] + kk[i] * w->d[i]; \
						off = p < 0 || p >= w->in[i] ? -1 : off * w->in[i] + p; \
					}                                                        \
					cols[(c * kn + kq) * on + o] = off < 0 ? 0 : x[c * isz + off]; \
				}                                                                \
			}                                                                        \
		}                                                                                \
	}
IM2COL(im2col, double)
IM2COL(im2col_nd_f32, float)

/* ---- the f32 path: im2col in f32 straight into kn_mm_f32, the same products as above ---- */
/* im2col of 2-D windows for output positions [o0, o1) (row stride o1 - o0): a stride-1 run
 * within an output row is one copy between zero-filled edges. */
static void im2col2_f32(const float *x, int64_t C, const Win *w, int64_t o0, int64_t o1, float *cols)
{
	int64_t H = w->in[0], W = w->in[1], OW = w->out[1], cn = o1 - o0;
	for (int64_t c = 0; c < C; c++)
		for (int64_t kh = 0; kh < w->k[0]; kh++)
			for (int64_t kw = 0; kw < w->k[1]; kw++) {
				float *row = cols + ((c * w->k[0] + kh) * w->k[1] + kw) * cn;
				int64_t dw = kw * w->d[1] - w->pb[1];
				/* ow range whose iw = ow*s + dw lies inside [0, W) */
				int64_t lo = dw >= 0 ? 0 : (-dw + w->s[1] - 1) / w->s[1];
				int64_t hi = W - dw <= 0 ? 0 : (W - dw + w->s[1] - 1) / w->s[1];
				hi = hi < OW ? hi : OW;
				lo = lo < hi ? lo : hi;
				for (int64_t o = o0; o < o1;) {
					int64_t oh = o / OW, a = o - oh * OW, b = OW < a + (o1 - o) ? OW : a + (o1 - o);
					int64_t ih = oh * w->s[0] - w->pb[0] + kh * w->d[0];
					int64_t l = lo > a ? lo : a, h = hi < b ? hi : b;
					float *r = row - a;    /* r[ow] for ow in [a, b) */
					o += b - a, row += b - a;
					if (ih < 0 || ih >= H || l >= h) {
						memset(r + a, 0, (size_t)(b - a) * sizeof *r);
						continue;
					}
					const float *src = x + (c * H + ih) * W + dw;
					memset(r + a, 0, (size_t)(l - a) * sizeof *r);
					if (w->s[1] == 1)
						memcpy(r + l, src + l, (size_t)(h - l) * sizeof *r);
					else
						for (int64_t ow = l; ow < h; ow++)
							r[ow] = src[ow * w->s[1]];
					memset(r + h, 0, (size_t)(b - h) * sizeof *r);
				}
			}
}

/* A window that is the input itself: 1x1...1, stride 1, no padding (no im2col needed). */
static int pointwise(const Win *w)
{
	for (int i = 0; i < w->ns; i++)
		if (w->k[i] != 1 || w->s[i] != 1 || w->pb[i] || w->pe[i] || w->out[i] != w->in[i])
			return 0;
	return 1;
}

/* Depthwise 2-D Conv (one input and one output channel per group), directly: per output row,
 * acc := 0, then for each tap (kh, kw) in order acc := fma(w[kh,kw], x_padded[...], acc) across
 * the row, which is exactly the im2col product's chain (padding taps included, as zeros),
 * without the nine- or 25-fold im2col copy.  P is scratch for one zero-padded input plane split
 * into s column phases (s the width stride; phase q holds the padded columns q, q + s, ...), so
 * that each tap of an output row reads consecutive elements: dw_scratch(w) floats. */
enum { DW_TAPS = 256 };

static int64_t dw_scratch(const Win *w)
{
	int64_t Hp = w->in[0] + w->pb[0] + w->pe[0], Wp = w->in[1] + w->pb[1] + w->pe[1], s = w->s[1];
	return Hp * ((Wp + s - 1) / s) * s;
}

static void conv_dw2(KnDwRow row, const float *x, const float *wt, const Win *w, float *P, float *y)
{
	int64_t H = w->in[0], W = w->in[1], s = w->s[1], Wp = W + w->pb[1] + w->pe[1], Hp = H + w->pb[0] + w->pe[0];
	int64_t Wq = (Wp + s - 1) / s, plane = Hp * Wq;
	int kh = (int)w->k[0], kw = (int)w->k[1];
	const float *taps[DW_TAPS];
	memset(P, 0, (size_t)(plane * s) * sizeof *P);
	for (int64_t h = 0; h < H; h++) {
		const float *src = x + h * W;
		if (s == 1) {
			memcpy(P + (h + w->pb[0]) * Wq + w->pb[1], src, (size_t)W * sizeof *P);
			continue;
		}
		for (int64_t q = 0; q < s; q++) {   /* phase q: padded columns q + j*s, input column q + j*s - pb */
			float *dst = P + q * plane + (h + w->pb[0]) * Wq;
			for (int64_t j = 0, c = q - w->pb[1]; j < Wq; j++, c += s)
				if (c >= 0 && c < W)
					dst[j] = src[c];
		}
	}
	for (int i = 0; i < kh; i++)   /* the taps of output row 0; each next row is s0 rows down */
		for (int k = 0; k < kw; k++) {
			int64_t c = k * w->d[1];
			taps[i * kw + k] = P + c % s * plane + i * w->d[0] * Wq + c / s;
		}
	for (int64_t oh = 0; oh < w->out[0]; oh++) {
		row(w->out[1], wt, kh * kw, taps, y + oh * w->out[1]);
		for (int t = 0; oh + 1 < w->out[0] && t < kh * kw; t++)
			taps[t] += w->s[0] * Wq;
	}
}

/* The zero-padded plane of each of C channels of x into P (imp_scratch(w, C) floats, the last
 * 16 zeros), for kn_conv_implicit, split into s column phases for the width stride s (phase q
 * holds the padded columns q, q + s, ..., as in conv_dw2) so that every tap of an output row
 * reads consecutive elements: channel c's phase q at P + (c*s + q) * Hp*Wq, Wq = ceil(Wp / s). */
enum { IMP_TAPS = 1024 };

static int64_t imp_wq(const Win *w) { return (w->in[1] + w->pb[1] + w->pe[1] + w->s[1] - 1) / w->s[1]; }

static int64_t imp_scratch(const Win *w, int64_t C)
{
	return C * w->s[1] * (w->in[0] + w->pb[0] + w->pe[0]) * imp_wq(w) + 16;
}

static void pad_planes(const float *x, int64_t C, const Win *w, float *P)
{
	int64_t H = w->in[0], W = w->in[1], Hp = H + w->pb[0] + w->pe[0], Wp = W + w->pb[1] + w->pe[1], s = w->s[1];
	if (s > 1) {
		int64_t Wq = imp_wq(w), ph = Hp * Wq;
		memset(P, 0, (size_t)imp_scratch(w, C) * sizeof *P);
		for (int64_t c = 0; c < C; c++)
			for (int64_t h = 0; h < H; h++) {
				const float *src = x + (c * H + h) * W;
				float *row = P + c * s * ph + (h + w->pb[0]) * Wq;
				for (int64_t i = 0; i < W; i++) {   /* padded column j = i + pb: phase j % s */
					int64_t j = i + w->pb[1];
					row[j % s * ph + j / s] = src[i];
				}
			}
		return;
	}
	for (int64_t c = 0; c < C; c++) {   /* each plane: the top pad rows, rows with their side pads, the bottom */
		float *q = P + c * Hp * Wp;
		memset(q, 0, (size_t)(w->pb[0] * Wp) * sizeof *q);
		for (int64_t h = 0; h < H; h++) {
			float *r = q + (h + w->pb[0]) * Wp;
			memset(r, 0, (size_t)w->pb[1] * sizeof *r);
			memcpy(r + w->pb[1], x + (c * H + h) * W, (size_t)W * sizeof *r);
			memset(r + w->pb[1] + W, 0, (size_t)w->pe[1] * sizeof *r);
		}
		memset(q + (H + w->pb[0]) * Wp, 0, (size_t)(w->pe[0] * Wp) * sizeof *q);
	}
	memset(P + C * Hp * Wp, 0, 16 * sizeof *P);
}

/* Conv of one image and group by kn_conv_implicit: the im2col product without the im2col.  Tap
 * (kh, kw) of output (oh, ow) is the padded element (oh*s0 + kh*d0, ow*s1 + kw*d1): phase
 * (kw*d1) % s1, phase column ow + (kw*d1) / s1. */
static int conv_implicit(const float *x, int64_t Cg, const Win *w, const float *Wt, const float *pre, int64_t Mg,
			 float *P, float *y, const float *bias, RtError *e)
{
	int64_t Hp = w->in[0] + w->pb[0] + w->pe[0], Wq = imp_wq(w), s = w->s[1], off[IMP_TAPS];
	int nt = (int)(w->k[0] * w->k[1]);
	for (int64_t kh = 0; kh < w->k[0]; kh++)
		for (int64_t kw = 0; kw < w->k[1]; kw++) {
			int64_t col = kw * w->d[1];
			off[kh * w->k[1] + kw] = col % s * Hp * Wq + kh * w->d[0] * Wq + col / s;
		}
	pad_planes(x, Cg, w, P);
	return kn_conv_implicit(Mg, Cg, nt, off, Wt, pre, P, s * Hp * Wq, w->s[0] * Wq, w->out[0], w->out[1], y, bias, e);
}

/* Conv on f32 storage (f32 accumulation): per image and group Y = W_g @ cols + B, then the
 * output's rounding.  Bit-identical to the double path: its operands are these floats. */
static int conv_f32(const RtKernelArgs *a, const Win *w, int64_t G, RtError *e)
{
	const RtTensor *x = a->in[0], *W = a->in[1], *B = kn_in(a, 2);
	int64_t N = x->dims[0], M = W->dims[0], Cg = W->dims[1], Mg = M / G, kn = prod(w->k, w->ns);
	int64_t on = prod(w->out, w->ns), isz = prod(w->in, w->ns), dims[RT_MAX_RANK] = { N, M };
	memcpy(dims + 2, w->out, (size_t)w->ns * sizeof *dims);
	int pw = pointwise(w), dw = !pw && w->ns == 2 && Cg == 1 && Mg == 1 && w->k[0] * w->k[1] <= DW_TAPS &&
				      kn_plain_f32(a->opts);
	KnDwRow row = kn_dw_row();
	/* 2-D im2col goes a chunk of output positions at a time, its rows (Cg*kn of them) about 2 MB
	 * together, so that they stay in cache for the product and a large layer does not fault in a
	 * fresh 100 MB buffer per call; the product of each column does not depend on the chunking */
	int64_t K = Cg * kn, ch = w->ns == 2 && kn_plain_f32(a->opts) ? ((int64_t)(2 << 20) / 4 / (K ? K : 1)) / 64 * 64 : on;
	ch = ch < 256 ? 256 : ch > on ? on : ch;
	/* 2-D, not pointwise, not depthwise: the implicit product, on padded planes */
	int imp = !pw && !dw && w->ns == 2 && kn <= IMP_TAPS && kn_plain_f32(a->opts) && kn_conv_implicit_ok();
	int64_t ncols = dw ? dw_scratch(w) : imp ? imp_scratch(w, Cg) : K * ch;
	float *cols = NULL;
	if (!pw && !(cols = rt_malloc((size_t)(ncols + 1) * sizeof *cols)))
		return rt_errorf(e, RT_ENOMEM, "Conv: out of memory for im2col");
	if (kn_out_raw(a, 0, x->dtype, x->rank, dims, e) < 0) {
		rt_free(cols);
		return -1;
	}
	float *y = rt_f32(&a->out[0]);
	/* plain f32 products add an f32 bias on each finished tile (kn_sgemm_bias), not in a pass of
	 * its own over the output */
	int tb = !dw && kn_plain_f32(a->opts) && B && B->dtype == DT_F32 && (pw || w->ns == 2);
	/* a constant W's packed panels, made on the plan's first run and kept with it (RtPack) */
	int64_t gs = 0;
	const float *pre = dw || !kn_plain_f32(a->opts) ? NULL : kn_prepacked_a(W, G, Mg, K, imp, &gs);
	for (int64_t n = 0; n < N; n++)
		for (int64_t g = 0; g < G; g++) {
			const float *xg = rt_f32(x) + (n * x->dims[1] + g * Cg) * isz, *bg = tb ? rt_f32(B) + g * Mg : NULL;
			const float *pg = pre ? pre + g * gs : NULL;
			float *yo = y + (n * M + g * Mg) * on;
			if (dw)
				conv_dw2(row, xg, rt_f32(W) + g * kn, w, cols, yo);
			else if (imp)
				KN_TRY(conv_implicit(xg, Cg, w, rt_f32(W) + g * Mg * K, pg, Mg, cols, yo, bg, e));
			else if (pw && (tb || pg))
				KN_TRY(kn_sgemm_bias(Mg, on, K, rt_f32(W) + g * Mg * K, K, 0, xg, on, 0, yo, on, bg, pg, e));
			else if (pw)
				KN_TRY(kn_mm_f32(a->opts, Mg, on, K, rt_f32(W) + g * Mg * K, K, 0, xg, on, 0, yo, e));
			else if (w->ns != 2) {
				im2col_nd_f32(xg, Cg, w, cols);
				KN_TRY(kn_mm_f32(a->opts, Mg, on, K, rt_f32(W) + g * Mg * K, K, 0, cols, on, 0, yo, e));
			} else
				for (int64_t o0 = 0; o0 < on; o0 += ch) {
					int64_t cn = on - o0 < ch ? on - o0 : ch;
					im2col2_f32(xg, Cg, w, o0, o0 + cn, cols);
					if (cn == on && !tb && !pg)
						KN_TRY(kn_mm_f32(a->opts, Mg, on, K, rt_f32(W) + g * Mg * K, K, 0, cols, on, 0, yo, e));
					else   /* plain f32 (ch < on only then): C's rows on apart */
						KN_TRY(kn_sgemm_bias(Mg, cn, K, rt_f32(W) + g * Mg * K, K, 0, cols, cn, 0, yo + o0, on,
								     bg, pg, e));
				}
			if (!tb)
				kn_bias_f32(yo, B, g * Mg, Mg, on);
		}
	rt_free(cols);
	return kn_finish(&a->out[0], a->opts, e);
fail:
	rt_free(cols);
	kn_free_outs(a);
	return -1;
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
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (!f64 && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[W->dtype].storage == S_F32 &&
	    rt_dtypes[od].storage == S_F32)
		return conv_f32(a, &w, G, e);
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

/* The taps k < kn of one window axis whose position o*s - pb + k*d lies inside [0, n) form one
 * run [*k0, *k1) (the position grows with k); returns how many lie before n + pe (the taps
 * count_include_pad counts: the begin padding always counts). */
static int64_t tap_run(int64_t o, int64_t s, int64_t pb, int64_t pe, int64_t d, int64_t kn, int64_t n, int64_t *k0,
		       int64_t *k1)
{
	int64_t lo = 0, hi = 0, pad = 0;
	for (int64_t k = 0; k < kn; k++) {
		int64_t p = o * s - pb + k * d;
		lo += p < 0;
		hi += p < n;
		pad += p < n + pe;
	}
	*k0 = lo, *k1 = hi > lo ? hi : lo;
	return pad;
}

/* A 2-D pool on f32 storage without Indices: the same taps, comparisons and sequential f32
 * sums as the general path below, the mean rounded once from double.  Each window's taps
 * inside the input are one rectangle [h0, h1) x [w0, w1) walked row by row, as the general
 * path walks them (skipping the padding); a max takes the first tap, then v > acc ? v : acc. */
static int pool2_f32(const float *x, const Win *w, int is_max, int incl, int64_t NC, float *y, RtError *e)
{
	int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
	int64_t *cw = rt_malloc((size_t)(3 * OW + 1) * sizeof *cw);
	if (!cw)
		return rt_errorf(e, RT_ENOMEM, "pool: out of memory");
	for (int64_t ow = 0; ow < OW; ow++)   /* per output column: its tap run and padded count */
		cw[3 * ow + 2] = tap_run(ow, w->s[1], w->pb[1], w->pe[1], w->d[1], w->k[1], W, &cw[3 * ow], &cw[3 * ow + 1]);
	for (int64_t nc = 0; nc < NC; nc++, x += H * W)
		for (int64_t oh = 0; oh < OH; oh++) {
			int64_t h0, h1, ph = tap_run(oh, w->s[0], w->pb[0], w->pe[0], w->d[0], w->k[0], H, &h0, &h1);
			int64_t ih0 = oh * w->s[0] - w->pb[0];
			for (int64_t ow = 0; ow < OW; ow++) {
				int64_t w0 = cw[3 * ow], w1 = cw[3 * ow + 1], iw0 = ow * w->s[1] - w->pb[1];
				int64_t cnt = (h1 - h0) * (w1 - w0);
				float acc = is_max ? -INFINITY : 0;
				if (is_max && cnt) {
					acc = x[(ih0 + h0 * w->d[0]) * W + iw0 + w0 * w->d[1]];
					for (int64_t kh = h0; kh < h1; kh++) {
						const float *r = x + (ih0 + kh * w->d[0]) * W + iw0;
						for (int64_t kw = kh == h0 ? w0 + 1 : w0; kw < w1; kw++) {
							float v = r[kw * w->d[1]];
							acc = v > acc ? v : acc;
						}
					}
				} else if (!is_max)
					for (int64_t kh = h0; kh < h1; kh++) {
						const float *r = x + (ih0 + kh * w->d[0]) * W + iw0;
						for (int64_t kw = w0; kw < w1; kw++)
							acc += r[kw * w->d[1]];
					}
				*y++ = is_max ? acc : (float)(acc / (double)(incl ? ph * cw[3 * ow + 2] : cnt));
			}
		}
	rt_free(cw);
	return 0;
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
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (w.ns == 2 && a->nout < 2 && !f64 && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[od].storage == S_F32) {
		if (kn_out_raw(a, 0, x->dtype, x->rank, dims, e) < 0)
			return -1;
		if (pool2_f32(rt_f32(x), &w, is_max, incl, NC, rt_f32(&a->out[0]), e) < 0) {
			kn_free_outs(a);
			return -1;
		}
		return kn_finish(&a->out[0], a->opts, e);
	}
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

/* GlobalAveragePool rows in f32: each row's sequential f32 sum (j ascending), eight rows at a
 * time so that their independent chains overlap, the mean rounded once from double. */
static void gap_f32(const float *x, int64_t NC, int64_t sp, float *y)
{
	int64_t i = 0;
	for (; i + 8 <= NC; i += 8) {
		const float *r = x + i * sp;
		float s[8] = { 0 };
		for (int64_t j = 0; j < sp; j++)
			for (int k = 0; k < 8; k++)
				s[k] += r[k * sp + j];
		for (int k = 0; k < 8; k++)
			y[i + k] = (float)(s[k] / (double)sp);
	}
	for (; i < NC; i++) {
		float s = 0;
		for (int64_t j = 0; j < sp; j++)
			s += x[i * sp + j];
		y[i] = (float)(s / (double)sp);
	}
}

int rk_GlobalAveragePool(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (x->rank < 2)
		return rt_errorf(e, RT_EUSER, "GlobalAveragePool: input must be (N, C, ...)");
	int64_t dims[RT_MAX_RANK], sp = kn_numel(x->rank - 2, x->dims + 2), NC = x->dims[0] * x->dims[1];
	int f64 = kn_acc64(a);
	for (int k = 0; k < x->rank; k++)
		dims[k] = k < 2 ? x->dims[k] : 1;
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (!f64 && !kn_generic_only && rt_dtypes[x->dtype].storage == S_F32 && rt_dtypes[od].storage == S_F32) {
		/* f32: the same sequential f32 sums, the mean rounded once from double */
		if (kn_out_raw(a, 0, x->dtype, x->rank, dims, e) < 0)
			return -1;
		gap_f32(rt_f32(x), NC, sp, rt_f32(&a->out[0]));
		return kn_finish(&a->out[0], a->opts, e);
	}
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
