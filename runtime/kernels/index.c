/* runtime/kernels/index.c: ONNX indexing and rearrangement operators: DepthToSpace,
 * SpaceToDepth, Compress, OneHot, ScatterElements, ScatterND, GatherND, EyeLike, NonZero and
 * ReverseSequence (https://onnx.ai/onnx/operators/onnx__<Op>.html).
 *
 * Elements are copied in their storage (float, double or i64 bit patterns), so every dtype is
 * moved exactly.  Indices are checked against their axis (negative ones count from the end
 * where ONNX allows it); an index out of range is an error, never an out-of-bounds access.
 * Scatter reductions (add, mul, max, min) apply in index order, as the ONNX reference does.
 */
#include "runtime/kernels/kernels_impl.h"

/* y[i] := x[j], whatever the storage. */
static void cp(RtTensor *y, int64_t i, const RtTensor *x, int64_t j)
{
	switch (rt_dtypes[y->dtype].storage) {
	case S_F32: rt_f32(y)[i] = rt_f32(x)[j]; break;
	case S_F64: rt_f64(y)[i] = rt_f64(x)[j]; break;
	default: rt_i64(y)[i] = rt_i64(x)[j]; break;
	}
}

/* Copies x into a fresh out[0] of the same shape and dtype. */
static int clone_out(const RtKernelArgs *a, const RtTensor *x, RtError *e)
{
	a->out[0].dtype = x->dtype;
	if (rt_tensor_alloc(&a->out[0], x->dtype, x->rank, x->dims, e) < 0)
		return -1;
	if (x->n)
		memcpy(a->out[0].data, x->data, (size_t)x->n * (rt_dtypes[x->dtype].storage == S_F32 ? 4 : 8));
	return 0;
}

/* ---- DepthToSpace / SpaceToDepth ---- */
/* y[n, c, h, w] over the 6-D view of the rearrangement; d2s: from depth to space. */
static int depth_space(const RtKernelArgs *a, RtError *e, int d2s)
{
	const char *op = d2s ? "DepthToSpace" : "SpaceToDepth";
	const RtTensor *x = a->in[0];
	int64_t b = rt_attr_int(a->attrs, "blocksize", 0);
	int crd = d2s && strcmp(rt_attr_str(a->attrs, "mode", "DCR"), "CRD") == 0;
	if (x->rank != 4 || b <= 0)
		return rt_errorf(e, RT_EUSER, "%s: X must be [N, C, H, W] and blocksize positive", op);
	int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
	int64_t dims[4];
	if (d2s) {
		if (C % (b * b))
			return rt_errorf(e, RT_EUSER, "%s: C=%lld is not a multiple of blocksize^2", op, (long long)C);
		dims[0] = N, dims[1] = C / (b * b), dims[2] = H * b, dims[3] = W * b;
	} else {
		if (H % b || W % b)
			return rt_errorf(e, RT_EUSER, "%s: H and W must be multiples of blocksize", op);
		dims[0] = N, dims[1] = C * b * b, dims[2] = H / b, dims[3] = W / b;
	}
	if (kn_out(a, 0, x->dtype, 4, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	/* Index the large (space) tensor [N, c, H', W'] and the depth tensor [N, c*b*b, h, w]. */
	int64_t c2 = d2s ? dims[1] : C, hs = d2s ? H : dims[2], ws = d2s ? W : dims[3];
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < c2; c++)
			for (int64_t h = 0; h < hs; h++)
				for (int64_t i = 0; i < b; i++)
					for (int64_t w = 0; w < ws; w++)
						for (int64_t j = 0; j < b; j++) {
							int64_t dc = crd ? c * b * b + i * b + j : (i * b + j) * c2 + c;
							int64_t di = ((n * c2 * b * b + dc) * hs + h) * ws + w;
							int64_t si = ((n * c2 + c) * hs * b + h * b + i) * ws * b + w * b + j;
							if (d2s)
								cp(y, si, x, di);
							else
								cp(y, di, x, si);
						}
	return 0;
}

int rk_DepthToSpace(const RtKernelArgs *a, RtError *e) { return depth_space(a, e, 1); }
int rk_SpaceToDepth(const RtKernelArgs *a, RtError *e) { return depth_space(a, e, 0); }

/* ---- Compress {axis}: the slices where condition is true (flattened X without axis) ---- */
int rk_Compress(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *cond = a->in[1];
	const Attr *ax = rt_attr_find(a->attrs, "axis");
	int axis = 0, rank = 1;
	int64_t dims[RT_MAX_RANK], len = x->n, inner = 1, outer = 1, cnt = 0;
	if (ax) {
		if (kn_axis("Compress", ax->i, x->rank, &axis, e) < 0)
			return -1;
		rank = x->rank;
		memcpy(dims, x->dims, sizeof dims);
		len = x->dims[axis];
		for (int i = axis + 1; i < x->rank; i++)
			inner *= x->dims[i];
		for (int i = 0; i < axis; i++)
			outer *= x->dims[i];
	}
	if (cond->rank != 1 || cond->dims[0] > len)
		return rt_errorf(e, RT_EUSER, "Compress: condition must be 1-D with at most %lld entries",
				 (long long)len);
	for (int64_t i = 0; i < cond->dims[0]; i++)
		cnt += rt_geti(cond, i) != 0;
	dims[ax ? axis : 0] = cnt;
	if (kn_out(a, 0, x->dtype, rank, dims, e) < 0)
		return -1;
	int64_t k = 0;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < cond->dims[0]; i++)
			if (rt_geti(cond, i))
				for (int64_t j = 0; j < inner; j++)
					cp(&a->out[0], k++, x, (o * len + i) * inner + j);
	return 0;
}

/* ---- OneHot {axis=-1}(indices, depth, values[off, on]) ---- */
int rk_OneHot(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *idx = a->in[0], *dep = a->in[1], *val = a->in[2];
	if (dep->n != 1 || val->n != 2)
		return rt_errorf(e, RT_EUSER, "OneHot: depth must be one value and values two");
	int64_t depth = (int64_t)rt_get(dep, 0), dims[RT_MAX_RANK];
	int axis;
	if (depth < 1 || idx->rank + 1 > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "OneHot: depth must be positive");
	if (kn_axis("OneHot", rt_attr_int(a->attrs, "axis", -1), idx->rank + 1, &axis, e) < 0)
		return -1;
	int64_t outer = 1, inner = 1;
	for (int i = 0, j = 0; i <= idx->rank; i++)
		dims[i] = i == axis ? depth : idx->dims[j++];
	for (int i = 0; i < axis; i++)
		outer *= idx->dims[i];
	for (int i = axis; i < idx->rank; i++)
		inner *= idx->dims[i];
	if (kn_out(a, 0, val->dtype, idx->rank + 1, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t d = 0; d < depth; d++)
			for (int64_t i = 0; i < inner; i++) {
				int64_t k = (int64_t)rt_get(idx, o * inner + i);
				if (k < 0)
					k += depth;
				cp(y, (o * depth + d) * inner + i, val, k == d);
			}
	return 0;
}

/* ---- scatter reductions ---- */
typedef enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN } Red;

static int reduction(const RtKernelArgs *a, const char *op, Red *r, RtError *e)
{
	static const char *names[] = { "none", "add", "mul", "max", "min" };
	const char *s = rt_attr_str(a->attrs, "reduction", "none");
	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0) {
			*r = (Red)i;
			return 0;
		}
	return rt_errorf(e, RT_EUSER, "%s: reduction must be none, add, mul, max or min, not '%s'", op, s);
}

/* y[i] := red(y[i], u[j]). */
static void combine(RtTensor *y, int64_t i, const RtTensor *u, int64_t j, Red r, int f64)
{
	if (r == RED_NONE) {
		cp(y, i, u, j);
		return;
	}
	if (kn_isint(y->dtype)) {
		int64_t p = rt_i64(y)[i], q = rt_i64(u)[j];
		rt_i64(y)[i] = kn_wrap_int(y->dtype, r == RED_ADD ? (int64_t)((uint64_t)p + (uint64_t)q) :
					   r == RED_MUL ? (int64_t)((uint64_t)p * (uint64_t)q) :
					   r == RED_MAX ? (p > q ? p : q) : (p < q ? p : q));
		return;
	}
	double p = rt_get(y, i), q = rt_get(u, j);
	double v = r == RED_ADD ? p + q : r == RED_MUL ? p * q : r == RED_MAX ? fmax(p, q) : fmin(p, q);
	rt_set(y, i, kn_acc(f64, v));
}

/* ScatterElements {axis=0, reduction}: y[.. idx[i] ..] := updates[i] on axis. */
int rk_ScatterElements(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *idx = a->in[1], *u = a->in[2];
	int axis;
	Red r;
	if (reduction(a, "ScatterElements", &r, e) < 0 ||
	    kn_axis("ScatterElements", rt_attr_int(a->attrs, "axis", 0), x->rank, &axis, e) < 0)
		return -1;
	if (idx->rank != x->rank || u->rank != x->rank)
		return rt_errorf(e, RT_EUSER, "ScatterElements: data, indices and updates must have one rank");
	for (int i = 0; i < idx->rank; i++)
		if (idx->dims[i] != u->dims[i] || idx->dims[i] > x->dims[i])
			return rt_errorf(e, RT_EUSER, "ScatterElements: indices and updates must have one shape, "
					 "within data's");
	if (clone_out(a, x, e) < 0)
		return -1;
	int64_t xs[RT_MAX_RANK], c[RT_MAX_RANK] = { 0 };
	kn_strides(x->rank, x->dims, xs);
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	for (int64_t i = 0; i < idx->n; i++) {
		int64_t k = rt_geti(idx, i), off = 0;
		if (k < 0)
			k += x->dims[axis];
		if (k < 0 || k >= x->dims[axis]) {
			kn_free_outs(a);
			return rt_errorf(e, RT_EUSER, "ScatterElements: index %lld is out of range", (long long)rt_geti(idx, i));
		}
		for (int d = 0; d < x->rank; d++)
			off += (d == axis ? k : c[d]) * xs[d];
		combine(&a->out[0], off, u, i, r, f64);
		for (int d = idx->rank - 1; d >= 0 && ++c[d] == idx->dims[d]; d--)
			c[d] = 0;
	}
	return 0;
}

/* ScatterND {reduction}: indices [..., q] address slices of data; updates [..., data[q:]]. */
int rk_ScatterND(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *idx = a->in[1], *u = a->in[2];
	Red r;
	if (reduction(a, "ScatterND", &r, e) < 0)
		return -1;
	if (idx->rank < 1)
		return rt_errorf(e, RT_EUSER, "ScatterND: indices must have rank >= 1");
	int q = (int)idx->dims[idx->rank - 1];
	if (q > x->rank)
		return rt_errorf(e, RT_EUSER, "ScatterND: the index depth %d exceeds data's rank %d", q, x->rank);
	int64_t slice = 1, xs[RT_MAX_RANK], nidx = idx->n / (q ? q : 1);
	for (int i = q; i < x->rank; i++)
		slice *= x->dims[i];
	if (u->n != nidx * slice)
		return rt_errorf(e, RT_EUSER, "ScatterND: updates have %lld elements, expected %lld",
				 (long long)u->n, (long long)(nidx * slice));
	if (clone_out(a, x, e) < 0)
		return -1;
	kn_strides(x->rank, x->dims, xs);
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	for (int64_t i = 0; i < nidx; i++) {
		int64_t off = 0;
		for (int d = 0; d < q; d++) {
			int64_t k = rt_geti(idx, i * q + d);
			if (k < 0)
				k += x->dims[d];
			if (k < 0 || k >= x->dims[d]) {
				kn_free_outs(a);
				return rt_errorf(e, RT_EUSER, "ScatterND: index %lld is out of range for dimension %d",
						 (long long)rt_geti(idx, i * q + d), d);
			}
			off += k * xs[d];
		}
		for (int64_t j = 0; j < slice; j++)
			combine(&a->out[0], off + j, u, i * slice + j, r, f64);
	}
	return 0;
}

/* GatherND {batch_dims=b}: Y[B..., I...] := X[B..., Indices[B..., I..., :]]. */
int rk_GatherND(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *idx = a->in[1];
	int b = (int)rt_attr_int(a->attrs, "batch_dims", 0);
	if (idx->rank < 1 || b < 0 || b >= idx->rank || b > x->rank)
		return rt_errorf(e, RT_EUSER, "GatherND: bad indices rank or batch_dims");
	int q = (int)idx->dims[idx->rank - 1];
	if (b + q > x->rank)
		return rt_errorf(e, RT_EUSER, "GatherND: the index depth %d exceeds data's rank", q);
	int64_t dims[RT_MAX_RANK], nb = 1, slice = 1, xs[RT_MAX_RANK];
	int rank = 0;
	for (int i = 0; i < idx->rank - 1; i++)
		dims[rank++] = idx->dims[i];
	for (int i = b + q; i < x->rank; i++)
		dims[rank++] = x->dims[i], slice *= x->dims[i];
	for (int i = 0; i < b; i++)
		nb *= x->dims[i];
	if (rank > RT_MAX_RANK || kn_out(a, 0, x->dtype, rank, dims, e) < 0)
		return -1;
	kn_strides(x->rank, x->dims, xs);
	int64_t per = (idx->n / (q ? q : 1)) / (nb ? nb : 1), batch_stride = b ? xs[b - 1] : 0, k = 0;
	for (int64_t bi = 0; bi < nb; bi++)
		for (int64_t i = 0; i < per; i++) {
			int64_t off = bi * batch_stride, row = (bi * per + i) * q;
			for (int d = 0; d < q; d++) {
				int64_t v = rt_geti(idx, row + d), dim = x->dims[b + d];
				if (v < 0)
					v += dim;
				if (v < 0 || v >= dim) {
					kn_free_outs(a);
					return rt_errorf(e, RT_EUSER, "GatherND: index %lld is out of range", (long long)v);
				}
				off += v * xs[b + d];
			}
			for (int64_t j = 0; j < slice; j++)
				cp(&a->out[0], k++, x, off + j);
		}
	return 0;
}

/* EyeLike {k=0, dtype}: ones on diagonal k of a 2-D tensor shaped like X. */
int rk_EyeLike(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (x->rank != 2)
		return rt_errorf(e, RT_EUSER, "EyeLike: X must be 2-D");
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	int64_t k = rt_attr_int(a->attrs, "k", 0);
	for (int64_t i = 0; i < x->dims[0]; i++)
		if (i + k >= 0 && i + k < x->dims[1]) {
			if (kn_isint(a->out[0].dtype))
				rt_i64(&a->out[0])[i * x->dims[1] + i + k] = 1;
			else
				rt_set(&a->out[0], i * x->dims[1] + i + k, 1.0);
		}
	return 0;
}

/* NonZero: i64[rank, count] coordinates of the non-zero elements in row-major order. */
int rk_NonZero(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t cnt = 0, r = x->rank ? x->rank : 1;
	for (int64_t i = 0; i < x->n; i++)
		cnt += rt_get(x, i) != 0;
	int64_t dims[2] = { x->rank, cnt };
	if (kn_out(a, 0, DT_I64, 2, dims, e) < 0)
		return -1;
	int64_t k = 0;
	for (int64_t i = 0; i < x->n; i++) {
		if (rt_get(x, i) == 0)
			continue;
		int64_t rem = i;
		for (int d = x->rank - 1; d >= 0; d--) {
			rt_i64(&a->out[0])[d * cnt + k] = rem % x->dims[d];
			rem /= x->dims[d];
		}
		k++;
	}
	(void)r;
	return 0;
}

/* ReverseSequence {batch_axis=1, time_axis=0}: per batch b, steps [0, lens[b]) reversed. */
int rk_ReverseSequence(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *lens = a->in[1];
	int ba, ta;
	if (kn_axis("ReverseSequence", rt_attr_int(a->attrs, "batch_axis", 1), x->rank, &ba, e) < 0 ||
	    kn_axis("ReverseSequence", rt_attr_int(a->attrs, "time_axis", 0), x->rank, &ta, e) < 0)
		return -1;
	if (ba == ta || lens->n != x->dims[ba])
		return rt_errorf(e, RT_EUSER, "ReverseSequence: sequence_lens must have one entry per batch");
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	int64_t xs[RT_MAX_RANK], c[RT_MAX_RANK] = { 0 };
	kn_strides(x->rank, x->dims, xs);
	for (int64_t i = 0; i < x->n; i++) {
		int64_t len = rt_geti(lens, c[ba]), t = c[ta], src = i;
		if (len > x->dims[ta])
			len = x->dims[ta];
		if (t < len)
			src = i + (len - 1 - 2 * t) * xs[ta];
		cp(&a->out[0], i, x, src);
		for (int d = x->rank - 1; d >= 0 && ++c[d] == x->dims[d]; d--)
			c[d] = 0;
	}
	return 0;
}

/* If(cond, then_1..k, else_1..k): out_i := the chosen branch's value i (a run-time select; the
 * compiler folds an If whose condition it knows). */
int rk_If(const RtKernelArgs *a, RtError *e)
{
	int k = a->nout;
	if (a->nin != 1 + 2 * k || !a->in[0] || a->in[0]->n != 1)
		return rt_errorf(e, RT_EUSER, "If: expected a one-element condition and 2*%d branch values", k);
	int lo = rt_geti(a->in[0], 0) ? 1 : 1 + k;
	for (int i = 0; i < k; i++) {
		const RtTensor *x = a->in[lo + i];
		if (!x || rt_tensor_alloc(&a->out[i], a->out[i].dtype != DT_INVALID ? a->out[i].dtype : x->dtype,
					  x->rank, x->dims, e) < 0) {
			kn_free_outs(a);
			return x ? -1 : rt_errorf(e, RT_EUSER, "If: branch value %d is absent", i);
		}
		for (int64_t j = 0; j < x->n; j++) {
			if (kn_isint(a->out[i].dtype))
				rt_i64(&a->out[i])[j] = rt_geti(x, j);
			else
				rt_set(&a->out[i], j, rt_get(x, j));
		}
	}
	return 0;
}

/* MaxUnpool {kernel_shape, strides, pads}(X, I, output_shape): zeros with Y.flat[I[i]] := X[i];
 * the output shape is output_shape, else (in - 1)*stride + kernel - pad_begin - pad_end. */
int rk_MaxUnpool(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *ix = a->in[1], *os = kn_in(a, 2);
	int nk, ns, np, sp = x->rank - 2;
	const int64_t *k = rt_attr_ints(a->attrs, "kernel_shape", &nk), *s = rt_attr_ints(a->attrs, "strides", &ns);
	const int64_t *p = rt_attr_ints(a->attrs, "pads", &np);
	int64_t dims[RT_MAX_RANK], inf[RT_MAX_RANK];
	if (x->rank < 3 || !k || nk != sp || ix->n != x->n)
		return rt_errorf(e, RT_EUSER, "MaxUnpool: X [N, C, ...], kernel_shape per spatial axis, I shaped like X");
	inf[0] = x->dims[0], inf[1] = x->dims[1];
	for (int i = 0; i < sp; i++)
		inf[2 + i] = (x->dims[2 + i] - 1) * (s && i < ns ? s[i] : 1) + k[i] -
			     (p && i < np ? p[i] : 0) - (p && sp + i < np ? p[sp + i] : 0);
	memcpy(dims, inf, sizeof dims);
	if (os) {   /* indices address the inferred shape; output_shape pads around it */
		int n;
		if (kn_ints("MaxUnpool", os, dims, RT_MAX_RANK, &n, e) < 0)
			return -1;
		if (n != x->rank)
			return rt_errorf(e, RT_EUSER, "MaxUnpool: output_shape must have X's rank");
		for (int i = 0; i < x->rank; i++)
			if (dims[i] < inf[i])
				return rt_errorf(e, RT_EUSER, "MaxUnpool: output_shape is smaller than the unpooled shape");
	}
	if (kn_out(a, 0, x->dtype, x->rank, dims, e) < 0)
		return -1;
	int64_t ntot = kn_numel(x->rank, inf);
	for (int64_t i = 0; i < x->n; i++) {
		int64_t j = rt_geti(ix, i), r = j, o = 0, st = 1;
		for (int d = x->rank - 1; d >= 0 && j >= 0 && j < ntot; d--) {
			o += (r % inf[d]) * st;
			r /= inf[d];
			st *= dims[d];
		}
		j = j >= 0 && j < ntot ? o : -1;
		if (j < 0 || j >= a->out[0].n) {
			kn_free_outs(a);
			return rt_errorf(e, RT_EUSER, "MaxUnpool: index %lld is out of range", (long long)j);
		}
		cp(&a->out[0], j, x, i);
	}
	return 0;
}
