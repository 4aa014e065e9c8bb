/* runtime/kernels/common.c: the private helpers of kernels_impl.h.
 *
 * Output allocation, scratch loads and stores, rounding a result to its dtype (narrow floats
 * through runtime/numerics.h, integers wrapping to their width), axis normalisation and ONNX
 * multidirectional broadcasting (https://onnx.ai/onnx/repo-docs/Broadcasting.html).
 */
#include "runtime/kernels/kernels_impl.h"

int kn_generic_only;

double *kn_alloc(int64_t n, RtError *e)
{
	if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double)) {
		rt_errorf(e, RT_ENOMEM, "scratch of %lld elements is too large", (long long)n);
		return NULL;
	}
	double *p = rt_malloc((size_t)(n ? n : 1) * sizeof(double));
	if (!p)
		rt_errorf(e, RT_ENOMEM, "out of memory for %lld-element scratch", (long long)n);
	return p;
}

int kn_out(const RtKernelArgs *a, int i, DType def, int rank, const int64_t *dims, RtError *e)
{
	if (i >= a->nout)
		return 0;   /* optional output not requested */
	DType d = a->out[i].dtype != DT_INVALID ? a->out[i].dtype : def;
	return rt_tensor_alloc(&a->out[i], d, rank, dims, e);
}

int kn_out_raw(const RtKernelArgs *a, int i, DType def, int rank, const int64_t *dims, RtError *e)
{
	if (i >= a->nout)
		return 0;
	DType d = a->out[i].dtype != DT_INVALID ? a->out[i].dtype : def;
	return rt_tensor_alloc_raw(&a->out[i], d, rank, dims, e);
}

int kn_out_like(const RtKernelArgs *a, int i, DType def, const RtTensor *t, RtError *e)
{
	return kn_out(a, i, def, t->rank, t->dims, e);
}

void kn_free_outs(const RtKernelArgs *a)
{
	for (int i = 0; i < a->nout; i++)
		rt_tensor_free(&a->out[i]);
}

double *kn_load(const RtTensor *t, RtError *e)
{
	double *v = kn_alloc(t->n, e);
	if (!v)
		return NULL;
	switch (rt_dtypes[t->dtype].storage) {
	case S_F32: for (int64_t i = 0; i < t->n; i++) v[i] = rt_f32(t)[i]; break;
	case S_F64: memcpy(v, t->data, (size_t)t->n * sizeof(double)); break;
	default: for (int64_t i = 0; i < t->n; i++) v[i] = (double)rt_i64(t)[i]; break;
	}
	return v;
}

int kn_store(RtTensor *t, const double *v, const RtExecOpts *o, RtError *e)
{
	if (kn_isint(t->dtype))
		for (int64_t i = 0; i < t->n; i++)
			rt_i64(t)[i] = isfinite(v[i]) ? (int64_t)v[i] : 0;
	else
		for (int64_t i = 0; i < t->n; i++)
			rt_set(t, i, v[i]);
	return kn_finish(t, o, e);
}

int64_t kn_wrap_int(DType d, int64_t x)
{
	int bits = rt_dtypes[d].bits;
	switch (rt_dtypes[d].kind) {
	case K_BOOL: return x != 0;
	case K_UINT: return bits >= 64 ? x : (int64_t)((uint64_t)x & ((UINT64_C(1) << bits) - 1));
	case K_INT:
		if (bits >= 64)
			return x;
		{
			uint64_t m = (UINT64_C(1) << bits) - 1, u = (uint64_t)x & m;
			return (u >> (bits - 1)) ? (int64_t)(u | ~m) : (int64_t)u;
		}
	default: return x;
	}
}

int64_t kn_sat_int(DType d, double x)
{
	int bits = rt_dtypes[d].bits;
	double lo, hi;
	if (rt_dtypes[d].kind == K_UINT) {
		lo = 0;
		hi = ldexp(1.0, bits) - 1;
	} else {
		lo = -ldexp(1.0, bits - 1);
		hi = ldexp(1.0, bits - 1) - 1;
	}
	if (isnan(x))
		return 0;
	if (bits >= 64) {
		if (x >= 9223372036854775807.0)
			return INT64_MAX;
		if (x <= -9223372036854775808.0)
			return INT64_MIN;
		return (int64_t)x;
	}
	return (int64_t)(x < lo ? lo : x > hi ? hi : x);
}

double kn_rne(double x)
{
	double r = nearbyint(x);   /* the default rounding mode is to nearest, ties to even */
	return r;
}

int kn_finish(RtTensor *t, const RtExecOpts *o, RtError *e)
{
	DType d = t->dtype;
	if (kn_isint(d)) {
		for (int64_t i = 0; i < t->n; i++)
			rt_i64(t)[i] = kn_wrap_int(d, rt_i64(t)[i]);
		return 0;
	}
	if (d == DT_F32 || d == DT_F64 || rt_dtypes[d].storage != S_F32)
		return 0;
	/* IEEE-like formats overflow to Inf/NaN as arithmetic does; block formats always saturate. */
	QuantOpts q = { o && o->scale_rule ? SCALE_RCEIL : SCALE_FLOOR, rt_dtypes[d].kind == K_BLOCK, 0 };
	int64_t row = t->rank ? t->dims[t->rank - 1] : 1;
	rt_round_tensor(d, rt_f32(t), t->n, row ? row : 1, &q);
	return 0;
}

int kn_acc64(const RtKernelArgs *a)
{
	if (a->opts && a->opts->accum_f64)
		return 1;
	for (int i = 0; i < a->nin; i++)
		if (a->in[i] && a->in[i]->dtype == DT_F64)
			return 1;
	return 0;
}

int kn_axis(const char *op, int64_t axis, int rank, int *out, RtError *e)
{
	int64_t r = rank ? rank : 1;   /* scalars accept axis 0 and -1 */
	if (axis < -r || axis >= r)
		return rt_errorf(e, RT_EUSER, "%s: axis %lld is out of range for rank %d", op, (long long)axis, rank);
	*out = (int)(axis < 0 ? axis + r : axis);
	return 0;
}

int kn_ints(const char *op, const RtTensor *t, int64_t *v, int max, int *n, RtError *e)
{
	if (t->n > max)
		return rt_errorf(e, RT_EUSER, "%s: %lld values where at most %d are allowed", op, (long long)t->n, max);
	for (int64_t i = 0; i < t->n; i++)
		v[i] = rt_geti(t, i);
	*n = (int)t->n;
	return 0;
}

int64_t kn_numel(int rank, const int64_t *dims)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	return n;
}

int kn_bcast(const char *op, const RtTensor *const *ts, int n, int *rank, int64_t *dims, RtError *e)
{
	int r = 0;
	for (int i = 0; i < n; i++)
		if (ts[i] && ts[i]->rank > r)
			r = ts[i]->rank;
	for (int k = 0; k < r; k++)
		dims[k] = 1;
	for (int i = 0; i < n; i++) {
		const RtTensor *t = ts[i];
		if (!t)
			continue;
		for (int k = 0; k < t->rank; k++) {
			int64_t d = t->dims[k], *o = &dims[r - t->rank + k];
			if (d == *o || d == 1)
				continue;
			if (*o != 1)
				return rt_errorf(e, RT_EUSER, "%s: shapes do not broadcast (%lld vs %lld on axis %d)",
						 op, (long long)*o, (long long)d, r - t->rank + k);
			*o = d;
		}
	}
	*rank = r;
	return 0;
}

void kn_strides(int rank, const int64_t *dims, int64_t *str)
{
	int64_t s = 1;
	for (int k = rank - 1; k >= 0; k--) {
		str[k] = s;
		s *= dims[k];
	}
}

void kn_bstrides(const RtTensor *t, int rank, const int64_t *dims, int64_t *str)
{
	int64_t s = 1;
	for (int k = rank - 1; k >= 0; k--) {
		int tk = k - (rank - t->rank);
		if (tk < 0 || t->dims[tk] == 1) {
			str[k] = 0;
		} else {
			str[k] = s;
		}
		if (tk >= 0)
			s *= t->dims[tk];
	}
	(void)dims;
}

void kn_iter_init(KnIter *it, int rank, const int64_t *dims, const RtTensor *const *ts, int nt)
{
	memset(it, 0, sizeof *it);
	it->rank = rank;
	it->nt = nt;
	memcpy(it->dims, dims, (size_t)rank * sizeof *dims);
	for (int j = 0; j < nt; j++)
		if (ts[j])
			kn_bstrides(ts[j], rank, dims, it->str[j]);
}

void kn_iter_next(KnIter *it)
{
	for (int k = it->rank - 1; k >= 0; k--) {
		for (int j = 0; j < it->nt; j++)
			it->off[j] += it->str[j][k];
		if (++it->idx[k] < it->dims[k])
			return;
		for (int j = 0; j < it->nt; j++)
			it->off[j] -= it->str[j][k] * it->dims[k];
		it->idx[k] = 0;
	}
}

void kn_rows_init(KnRows *r, int rank, const int64_t *dims, const RtTensor *const *ts, int nt)
{
	int64_t str[4][RT_MAX_RANK], md[RT_MAX_RANK], ms[4][RT_MAX_RANK];
	int n = 0;
	for (int j = 0; j < nt; j++)
		if (ts[j])
			kn_bstrides(ts[j], rank, dims, str[j]);
		else
			memset(str[j], 0, sizeof str[j]);
	for (int k = 0; k < rank; k++) {
		if (dims[k] == 1)
			continue;   /* a unit axis moves nothing */
		int merge = n > 0;
		for (int j = 0; merge && j < nt; j++)
			merge = ms[j][n - 1] == str[j][k] * dims[k];
		if (merge) {
			md[n - 1] *= dims[k];
			for (int j = 0; j < nt; j++)
				ms[j][n - 1] = str[j][k];
			continue;
		}
		md[n] = dims[k];
		for (int j = 0; j < nt; j++)
			ms[j][n] = str[j][k];
		n++;
	}
	memset(r, 0, sizeof *r);
	r->inner = n ? md[n - 1] : 1;
	for (int j = 0; j < nt; j++)
		r->istr[j] = n ? ms[j][n - 1] : 0;
	r->nrows = kn_numel(rank, dims) / (r->inner ? r->inner : 1);
	if (kn_numel(rank, dims) == 0)
		r->nrows = 0;
	r->it.rank = n ? n - 1 : 0;
	r->it.nt = nt;
	for (int k = 0; k + 1 < n; k++) {
		r->it.dims[k] = md[k];
		for (int j = 0; j < nt; j++)
			r->it.str[j][k] = ms[j][k];
	}
}

void kn_transpose(const double *x, int rank, const int64_t *dims, const int *perm, double *y)
{
	int64_t str[RT_MAX_RANK], pdims[RT_MAX_RANK], pstr[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	kn_strides(rank, dims, str);
	for (int k = 0; k < rank; k++) {
		pdims[k] = dims[perm[k]];
		pstr[k] = str[perm[k]];
	}
	int64_t n = kn_numel(rank, dims), off = 0;
	for (int64_t i = 0; i < n; i++) {
		y[i] = x[off];
		for (int k = rank - 1; k >= 0; k--) {
			off += pstr[k];
			if (++idx[k] < pdims[k])
				break;
			off -= pstr[k] * pdims[k];
			idx[k] = 0;
		}
	}
}

double *kn_gather_rows(const double *x, int rank, const int64_t *dims, const int *red,
		       int64_t *nrows, int64_t *rowlen, RtError *e)
{
	int perm[RT_MAX_RANK], np = 0;
	int64_t rows = 1, len = 1;
	for (int k = 0; k < rank; k++)
		if (!red[k]) {
			perm[np++] = k;
			rows *= dims[k];
		}
	for (int k = 0; k < rank; k++)
		if (red[k]) {
			perm[np++] = k;
			len *= dims[k];
		}
	double *y = kn_alloc(rows * len, e);
	if (!y)
		return NULL;
	kn_transpose(x, rank, dims, perm, y);
	*nrows = rows;
	*rowlen = len;
	return y;
}

void kn_scatter_rows(const double *rows, int rank, const int64_t *dims, const int *red, double *y)
{
	int perm[RT_MAX_RANK], inv[RT_MAX_RANK], np = 0;
	int64_t pdims[RT_MAX_RANK];
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < rank; k++)
			if (!red[k] == !pass)
				perm[np++] = k;
	for (int k = 0; k < rank; k++) {
		pdims[k] = dims[perm[k]];
		inv[perm[k]] = k;
	}
	kn_transpose(rows, rank, pdims, inv, y);
}
