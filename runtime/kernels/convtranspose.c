/* runtime/kernels/convtranspose.c: ConvTranspose over N-D inputs X[N, C, D1..Dn] with weights
 * W[C, M/group, k1..kn] and optional bias B[M].
 *
 * Geometry (rt_convtranspose_geometry, shared with the shape rule), from the ONNX spec
 * (https://onnx.ai/onnx/operators/onnx__ConvTranspose.html) and its reference implementation
 * (onnx/reference/ops/op_conv_transpose.py), per spatial axis i with ext = (k-1)*dilation + 1:
 *   full[i]  = stride*(in-1) + output_padding + ext
 *   output_shape given: out = output_shape, total = full - out, split as below;
 *   auto_pad SAME_UPPER/SAME_LOWER: out = in*stride, total = full - out, split as below;
 *   otherwise: out = full - pads_begin - pads_end (pads default 0; VALID: 0).
 *   The split: SAME_UPPER puts floor(total/2) at the beginning and the rest at the end; every
 *   other mode (SAME_LOWER, NOTSET with output_shape) the rest at the beginning.  A negative
 *   total (an output_shape larger than the full output) gives negative pads: zeros appended.
 * Values: the adjoint of Conv.  Per image and group, cols[Mg*K, HW] = W_g^T @ X_g (one matrix
 * product through kn_gemm: the operand format and accumulation of the plan's numerics), then
 * col2im adds each column into Y at out = in*stride + k*dilation - pads_begin, in f32 (f64
 * with accum_f64 or f64 data), positions outside [0, out) dropped; then the bias.
 */
#include "runtime/kernels/kernels_impl.h"

static int64_t floordiv2(int64_t x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

int rt_convtranspose_geometry(const Attrs *at, int ns, const int64_t *in, const int64_t *kernel, RtConvTGeom *g,
			      RtError *e)
{
	int n;
	if (ns < 1 || ns > RT_MAX_RANK - 2)
		return rt_errorf(e, RT_EUSER, "ConvTranspose: X must be [N, C, D1, ...] with 1 to %d spatial axes", RT_MAX_RANK - 2);
	g->ns = ns;
	const char *ap = rt_attr_str(at, "auto_pad", "NOTSET");
	int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"), upper = !strcmp(ap, "SAME_UPPER");
	if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
		return rt_errorf(e, RT_EUSER, "ConvTranspose: auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \"%s\"", ap);
	const struct { const char *name; int want; int64_t *dst; int64_t def; } lists[] = {
		{ "strides", ns, g->s, 1 }, { "dilations", ns, g->d, 1 }, { "output_padding", ns, g->op, 0 },
	};
	for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
		const int64_t *v = rt_attr_ints(at, lists[l].name, &n);
		if (v && n != lists[l].want)
			return rt_errorf(e, RT_EUSER, "ConvTranspose: %s has %d values, expected %d", lists[l].name, n, lists[l].want);
		for (int i = 0; i < ns; i++)
			lists[l].dst[i] = v ? v[i] : lists[l].def;
	}
	const int64_t *ks = rt_attr_ints(at, "kernel_shape", &n);
	if (ks && n != ns)
		return rt_errorf(e, RT_EUSER, "ConvTranspose: kernel_shape has %d values, expected %d", n, ns);
	const int64_t *pd = rt_attr_ints(at, "pads", &n);
	if (pd && n != 2 * ns)
		return rt_errorf(e, RT_EUSER, "ConvTranspose: pads has %d values, expected %d", n, 2 * ns);
	const int64_t *os = rt_attr_ints(at, "output_shape", &n);
	if (os && n != ns && n != ns + 2)
		return rt_errorf(e, RT_EUSER, "ConvTranspose: output_shape has %d values, expected %d", n, ns);
	if (os && n == ns + 2)
		os += 2;      /* the full [N, M, D...] form some exporters write */
	for (int i = 0; i < ns; i++) {
		g->in[i] = in[i], g->k[i] = kernel[i];
		if (ks && ks[i] != kernel[i])
			return rt_errorf(e, RT_EUSER, "ConvTranspose: kernel_shape %lld on axis %d does not match W's %lld",
					 (long long)ks[i], i, (long long)kernel[i]);
		if (g->s[i] < 1 || g->d[i] < 1 || g->k[i] < 1 || g->op[i] < 0 || in[i] < 0)
			return rt_errorf(e, RT_EUSER, "ConvTranspose: kernel, strides and dilations must be positive, "
					 "output_padding non-negative");
		int64_t ext = (g->k[i] - 1) * g->d[i] + 1;
		if (g->s[i] > (INT64_C(1) << 40) || in[i] > (INT64_C(1) << 40) || ext > (INT64_C(1) << 40))
			return rt_errorf(e, RT_EUSER, "ConvTranspose: axis %d is too large", i);
		int64_t full = g->s[i] * (in[i] - 1) + g->op[i] + ext;
		if (in[i] == 0)
			full = 0;
		if (os || same) {
			g->out[i] = os ? os[i] : in[i] * g->s[i];
			if (g->out[i] < 0)
				return rt_errorf(e, RT_EUSER, "ConvTranspose: output_shape must be non-negative");
			int64_t tot = full - g->out[i];
			g->pb[i] = upper ? floordiv2(tot) : tot - floordiv2(tot);
			g->pe[i] = tot - g->pb[i];
			continue;
		}
		int valid = !strcmp(ap, "VALID");
		g->pb[i] = pd && !valid ? pd[i] : 0;
		g->pe[i] = pd && !valid ? pd[i + ns] : 0;
		if (g->pb[i] < 0 || g->pe[i] < 0)
			return rt_errorf(e, RT_EUSER, "ConvTranspose: pads must be non-negative");
		g->out[i] = full - g->pb[i] - g->pe[i];
		if (g->out[i] < 0)
			return rt_errorf(e, RT_EUSER, "ConvTranspose: pads (%lld, %lld) exceed the output length %lld of axis %d",
					 (long long)g->pb[i], (long long)g->pe[i], (long long)full, i);
	}
	return 0;
}

/* Adds cols[(m*K + kk), p] into y[m, out position] for every input position p and kernel
 * offset kk of one group (col2im). */
static void col2im(const double *cols, int64_t Mg, const RtConvTGeom *g, int f64, double *y)
{
	int ns = g->ns;
	int64_t kn = kn_numel(ns, g->k), isz = kn_numel(ns, g->in), osz = kn_numel(ns, g->out);
	for (int64_t m = 0; m < Mg; m++) {
		int64_t kk[RT_MAX_RANK] = { 0 };
		for (int64_t kq = 0; kq < kn; kq++) {
			int64_t ii[RT_MAX_RANK] = { 0 };
			const double *c = cols + (m * kn + kq) * isz;
			for (int64_t p = 0; p < isz; p++) {
				int64_t off = 0;
				for (int i = 0; i < ns && off >= 0; i++) {
					int64_t q = ii[i] * g->s[i] + kk[i] * g->d[i] - g->pb[i];
					off = q < 0 || q >= g->out[i] ? -1 : off * g->out[i] + q;
				}
				if (off >= 0)
					y[m * osz + off] = kn_acc(f64, y[m * osz + off] + c[p]);
				for (int i = ns - 1; i >= 0 && ++ii[i] == g->in[i]; i--)
					ii[i] = 0;
			}
			for (int i = ns - 1; i >= 0 && ++kk[i] == g->k[i]; i--)
				kk[i] = 0;
		}
	}
}

/* col2im of a 2-D window on f32: the same additions in the same order (kernel offset, then input
 * position), each an f32 add, which is what the double path's add rounded to f32 gives (a double
 * sum of two floats rounds to their correctly rounded float sum). */
static void col2im_f32(const float *cols, int64_t Mg, const RtConvTGeom *g, float *y)
{
	int64_t H = g->in[0], W = g->in[1], OH = g->out[0], OW = g->out[1];
	for (int64_t m = 0; m < Mg; m++)
		for (int64_t kh = 0; kh < g->k[0]; kh++)
			for (int64_t kw = 0; kw < g->k[1]; kw++, cols += H * W) {
				float *ym = y + m * OH * OW;
				for (int64_t ih = 0; ih < H; ih++) {
					int64_t oh = ih * g->s[0] + kh * g->d[0] - g->pb[0];
					if (oh < 0 || oh >= OH)
						continue;
					for (int64_t iw = 0; iw < W; iw++) {
						int64_t ow = iw * g->s[1] + kw * g->d[1] - g->pb[1];
						if (ow >= 0 && ow < OW)
							ym[oh * OW + ow] += cols[ih * W + iw];
					}
				}
			}
}

/* 2-D ConvTranspose on f32 storage: cols in f32 from kn_mm_f32 (what kn_gemm computes for f32
 * operands), col2im and bias in f32, into the output directly. */
static int convt_f32(const RtKernelArgs *a, const RtConvTGeom *g, int64_t G, RtError *e)
{
	const RtTensor *x = a->in[0], *W = a->in[1], *B = kn_in(a, 2);
	int64_t N = x->dims[0], C = x->dims[1], Cg = C / G, Mg = W->dims[1], M = Mg * G;
	int64_t kn = kn_numel(g->ns, g->k), isz = kn_numel(g->ns, g->in), osz = kn_numel(g->ns, g->out);
	int64_t dims[RT_MAX_RANK] = { N, M };
	memcpy(dims + 2, g->out, (size_t)g->ns * sizeof *dims);
	float *cols = rt_malloc((size_t)(Mg * kn * isz + 1) * sizeof *cols);
	if (!cols)
		return rt_errorf(e, RT_ENOMEM, "ConvTranspose: out of memory");
	int rc = kn_out(a, 0, x->dtype, x->rank, dims, e);   /* zero-filled: col2im adds into it */
	for (int64_t n = 0; rc == 0 && n < N; n++)
		for (int64_t gr = 0; rc == 0 && gr < G; gr++) {
			float *yo = rt_f32(&a->out[0]) + (n * M + gr * Mg) * osz;
			rc = kn_mm_f32(a->opts, Mg * kn, isz, Cg, rt_f32(W) + gr * Cg * Mg * kn, Mg * kn, 1,
				       rt_f32(x) + (n * C + gr * Cg) * isz, isz, 0, cols, e);
			if (rc == 0) {
				col2im_f32(cols, Mg, g, yo);
				kn_bias_f32(yo, B, gr * Mg, Mg, osz);
			}
		}
	rt_free(cols);
	if (rc == 0 && kn_finish(&a->out[0], a->opts, e) == 0)
		return 0;
	kn_free_outs(a);
	return -1;
}

int rk_ConvTranspose(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *W = a->in[1], *B = kn_in(a, 2);
	int64_t G = rt_attr_int(a->attrs, "group", 1);
	RtConvTGeom g;
	if (x->rank < 3 || W->rank != x->rank || G < 1 || x->dims[1] != W->dims[0] || W->dims[0] % G)
		return rt_errorf(e, RT_EUSER, "ConvTranspose: X [N, C, D...], W [C, M/group, k...] and group do not match");
	if (rt_convtranspose_geometry(a->attrs, x->rank - 2, x->dims + 2, W->dims + 2, &g, e) < 0)
		return -1;
	int64_t N = x->dims[0], C = x->dims[1], Cg = C / G, Mg = W->dims[1], M = Mg * G;
	int64_t kn = kn_numel(g.ns, g.k), isz = kn_numel(g.ns, g.in), osz = kn_numel(g.ns, g.out);
	int64_t dims[RT_MAX_RANK] = { N, M };
	memcpy(dims + 2, g.out, (size_t)g.ns * sizeof *dims);
	if (B && B->n != M)
		return rt_errorf(e, RT_EUSER, "ConvTranspose: B needs %lld values", (long long)M);
	int f64 = kn_acc64(a);
	DType od = a->out[0].dtype != DT_INVALID ? a->out[0].dtype : x->dtype;
	if (!f64 && !kn_generic_only && g.ns == 2 && rt_dtypes[x->dtype].storage == S_F32 &&
	    rt_dtypes[W->dtype].storage == S_F32 && rt_dtypes[od].storage == S_F32 && (!B || rt_dtypes[B->dtype].storage == S_F32))
		return convt_f32(a, &g, G, e);
	double *xv = kn_load(x, e), *wv = xv ? kn_load(W, e) : NULL, *y = NULL, *cols = NULL;
	if (!wv)
		goto fail;
	y = kn_alloc(N * M * osz, e);
	cols = y ? kn_alloc(Mg * kn * isz, e) : NULL;
	if (!cols)
		goto fail;
	KN_TRY(kn_out(a, 0, x->dtype, x->rank, dims, e));
	memset(y, 0, (size_t)(N * M * osz) * sizeof *y);
	for (int64_t n = 0; n < N; n++)
		for (int64_t gr = 0; gr < G; gr++) {
			KN_TRY(kn_gemm(a->opts, f64, Mg * kn, isz, Cg, wv + gr * Cg * Mg * kn, Mg * kn, 1,
				       xv + (n * C + gr * Cg) * isz, isz, 0, cols, e));
			double *yo = y + (n * M + gr * Mg) * osz;
			col2im(cols, Mg, &g, f64, yo);
			for (int64_t m = 0; B && m < Mg; m++)
				for (int64_t o = 0; o < osz; o++)
					yo[m * osz + o] = kn_acc(f64, yo[m * osz + o] + rt_get(B, gr * Mg + m));
		}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(xv), rt_free(wv), rt_free(y), rt_free(cols);
	return 0;
fail:
	rt_free(xv), rt_free(wv), rt_free(y), rt_free(cols);
	kn_free_outs(a);
	return -1;
}
