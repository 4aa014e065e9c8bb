/* runtime/kernels/shape.c: data movement and shape operators.
 *
 * These kernels move values without arithmetic, so elements are copied in their storage
 * (f32, f64 or i64) and stay bit-exact.  ONNX semantics (https://onnx.ai/onnx/operators/):
 * Reshape (0 copies a dim unless allowzero, -1 infers), Transpose, Concat, Split (input,
 * attribute, or num_outputs/equal chunks with a shorter last one), Slice (negative steps and
 * the spec's clamping), Gather/GatherElements (negative indices), Expand, Tile, Squeeze,
 * Unsqueeze, Flatten, Pad (constant, reflect, edge, wrap; negative pads crop), Trilu, Shape
 * (start/end), Size, Range, ConstantOfShape and Constant (scalar and list attribute values).
 * Inputs that moved to attributes in older opsets (Slice < 10, Pad < 11, Squeeze < 13, ...)
 * are read from attributes when the input is absent.
 */
#include "runtime/kernels/kernels_impl.h"

static size_t esz(DType d) { return rt_dtypes[d].storage == S_F32 ? 4 : 8; }

/* dst[di] := src[si], bit-exact when the storages agree. */
static void cpy(RtTensor *d, int64_t di, const RtTensor *s, int64_t si)
{
	size_t z = esz(d->dtype);
	if (rt_dtypes[d->dtype].storage == rt_dtypes[s->dtype].storage)
		memcpy((char *)d->data + (size_t)di * z, (const char *)s->data + (size_t)si * z, z);
	else if (kn_isint(d->dtype))
		rt_seti(d, di, rt_geti(s, si));
	else
		rt_set(d, di, rt_get(s, si));
}

/* Reads axes/ints from input i, else from attribute name; *have says whether any was given. */
static int ints_in_or_attr(const RtKernelArgs *a, int i, const char *name, const char *op,
			   int64_t *v, int *n, int *have, RtError *e)
{
	const RtTensor *t = kn_in(a, i);
	*have = 1;
	if (t)
		return kn_ints(op, t, v, RT_MAX_RANK * 2, n, e);
	const int64_t *av = rt_attr_ints(a->attrs, name, n);
	if (!av) {
		*have = 0;
		*n = 0;
		return 0;
	}
	if (*n > RT_MAX_RANK * 2)
		return rt_errorf(e, RT_EUSER, "%s: too many values in %s", op, name);
	memcpy(v, av, (size_t)*n * sizeof *v);
	return 0;
}

/* Output 0 as a copy of x with new dims (same element order). */
static int reshaped(const RtKernelArgs *a, int rank, const int64_t *dims, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (kn_numel(rank, dims) != x->n)
		return rt_errorf(e, RT_EUSER, "cannot reshape %lld elements to %lld", (long long)x->n,
				 (long long)kn_numel(rank, dims));
	if (kn_out_raw(a, 0, x->dtype, rank, dims, e) < 0)
		return -1;
	if (rt_dtypes[a->out[0].dtype].storage == rt_dtypes[x->dtype].storage)
		memcpy(a->out[0].data, x->data, (size_t)x->n * esz(x->dtype));   /* the same storage: bit-exact */
	else
		for (int64_t i = 0; i < x->n; i++)
			cpy(&a->out[0], i, x, i);
	return 0;
}

int rk_Reshape(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t s[RT_MAX_RANK * 2];
	int n, infer = -1, allowzero = (int)rt_attr_int(a->attrs, "allowzero", 0);
	if (kn_ints("Reshape", a->in[1], s, RT_MAX_RANK, &n, e) < 0)
		return -1;
	int64_t known = 1;
	for (int k = 0; k < n; k++) {
		if (s[k] == 0 && !allowzero) {
			if (k >= x->rank)
				return rt_errorf(e, RT_EUSER, "Reshape: 0 at axis %d beyond the input rank", k);
			s[k] = x->dims[k];
		}
		if (s[k] == -1) {
			if (infer >= 0)
				return rt_errorf(e, RT_EUSER, "Reshape: more than one -1");
			infer = k;
		} else if (s[k] < 0) {
			return rt_errorf(e, RT_EUSER, "Reshape: negative dimension %lld", (long long)s[k]);
		} else {
			known *= s[k];
		}
	}
	if (infer >= 0) {
		if (known == 0 || x->n % known)
			return rt_errorf(e, RT_EUSER, "Reshape: cannot infer the -1 dimension");
		s[infer] = x->n / known;
	}
	return reshaped(a, n, s, e);
}

int rk_Flatten(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t ax = rt_attr_int(a->attrs, "axis", 1);
	if (ax < 0)
		ax += x->rank;
	if (ax < 0 || ax > x->rank)
		return rt_errorf(e, RT_EUSER, "Flatten: axis out of range");
	int64_t d[2] = { kn_numel((int)ax, x->dims), kn_numel(x->rank - (int)ax, x->dims + ax) };
	return reshaped(a, 2, d, e);
}

int rk_Squeeze(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t v[RT_MAX_RANK * 2], dims[RT_MAX_RANK];
	int n, have, drop[RT_MAX_RANK] = { 0 }, r = 0;
	if (ints_in_or_attr(a, 1, "axes", "Squeeze", v, &n, &have, e) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		int k;
		if (kn_axis("Squeeze", v[i], x->rank, &k, e) < 0)
			return -1;
		if (x->dims[k] != 1)
			return rt_errorf(e, RT_EUSER, "Squeeze: axis %d has size %lld, not 1", k, (long long)x->dims[k]);
		drop[k] = 1;
	}
	for (int k = 0; k < x->rank; k++)
		if (!(n ? drop[k] : x->dims[k] == 1))
			dims[r++] = x->dims[k];
	return reshaped(a, r, dims, e);
}

int rk_Unsqueeze(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t v[RT_MAX_RANK * 2], dims[RT_MAX_RANK];
	int n, have, ins[RT_MAX_RANK * 2] = { 0 };
	if (ints_in_or_attr(a, 1, "axes", "Unsqueeze", v, &n, &have, e) < 0)
		return -1;
	int r = x->rank + n;
	if (r > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "Unsqueeze: rank %d is too large", r);
	for (int i = 0; i < n; i++) {
		int k;
		if (kn_axis("Unsqueeze", v[i], r, &k, e) < 0)
			return -1;
		if (ins[k]++)
			return rt_errorf(e, RT_EUSER, "Unsqueeze: axis %d repeated", k);
	}
	for (int k = 0, j = 0; k < r; k++)
		dims[k] = ins[k] ? 1 : x->dims[j++];
	return reshaped(a, r, dims, e);
}

int rk_Transpose(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int n, perm[RT_MAX_RANK], used[RT_MAX_RANK] = { 0 };
	const int64_t *p = rt_attr_ints(a->attrs, "perm", &n);
	if (p && n != x->rank)
		return rt_errorf(e, RT_EUSER, "Transpose: perm has %d entries for rank %d", n, x->rank);
	int64_t dims[RT_MAX_RANK], str[RT_MAX_RANK], ps[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	for (int k = 0; k < x->rank; k++) {
		int q;
		if (kn_axis("Transpose", p ? p[k] : x->rank - 1 - k, x->rank, &q, e) < 0)
			return -1;
		if (used[q]++)
			return rt_errorf(e, RT_EUSER, "Transpose: perm repeats axis %d", q);
		perm[k] = q;
	}
	kn_strides(x->rank, x->dims, str);
	for (int k = 0; k < x->rank; k++) {
		dims[k] = x->dims[perm[k]];
		ps[k] = str[perm[k]];
	}
	if (kn_out(a, 0, x->dtype, x->rank, dims, e) < 0)
		return -1;
	int64_t off = 0;
	for (int64_t i = 0; i < x->n; i++) {
		cpy(&a->out[0], i, x, off);
		for (int k = x->rank - 1; k >= 0; k--) {
			off += ps[k];
			if (++idx[k] < dims[k])
				break;
			off -= ps[k] * dims[k];
			idx[k] = 0;
		}
	}
	return 0;
}

/* Copies the block x into y at offset `at` along axis (y's other dims equal x's). */
static void place(RtTensor *y, const RtTensor *x, int axis, int64_t at)
{
	int64_t outer = kn_numel(axis, x->dims), inner = kn_numel(x->rank - axis - 1, x->dims + axis + 1);
	int64_t xa = x->dims[axis], ya = y->dims[axis];
	if (rt_dtypes[y->dtype].storage == rt_dtypes[x->dtype].storage) {   /* one run of xa*inner per o */
		size_t z = esz(x->dtype), run = (size_t)(xa * inner) * z;
		for (int64_t o = 0; run && o < outer; o++)
			memcpy((char *)y->data + (size_t)((o * ya + at) * inner) * z,
			       (const char *)x->data + (size_t)(o * xa * inner) * z, run);
		return;
	}
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < xa; j++)
			for (int64_t i = 0; i < inner; i++)
				cpy(y, (o * ya + at + j) * inner + i, x, (o * xa + j) * inner + i);
}

int rk_Concat(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int ax;
	if (x->rank == 0)
		return rt_errorf(e, RT_EUSER, "Concat: inputs must have rank >= 1");
	if (kn_axis("Concat", rt_attr_int(a->attrs, "axis", 0), x->rank, &ax, e) < 0)
		return -1;
	int64_t dims[RT_MAX_RANK];
	memcpy(dims, x->dims, sizeof dims);
	dims[ax] = 0;
	for (int i = 0; i < a->nin; i++) {
		const RtTensor *t = a->in[i];
		for (int k = 0; k < x->rank; k++)
			if (t->rank != x->rank || (k != ax && t->dims[k] != x->dims[k]))
				return rt_errorf(e, RT_EUSER, "Concat: input %d has a different shape", i);
		dims[ax] += t->dims[ax];
	}
	if (kn_out_raw(a, 0, x->dtype, x->rank, dims, e) < 0)   /* every element is written */
		return -1;
	int64_t at = 0;
	for (int i = 0; i < a->nin; i++) {
		place(&a->out[0], a->in[i], ax, at);
		at += a->in[i]->dims[ax];
	}
	return 0;
}

/* Copies the slab [at, at + y.dims[axis]) of x along axis into y. */
static void take(RtTensor *y, const RtTensor *x, int axis, int64_t at)
{
	int64_t outer = kn_numel(axis, x->dims), inner = kn_numel(x->rank - axis - 1, x->dims + axis + 1);
	int64_t xa = x->dims[axis], ya = y->dims[axis];
	if (rt_dtypes[y->dtype].storage == rt_dtypes[x->dtype].storage) {   /* one run of ya*inner per o */
		size_t z = esz(x->dtype), run = (size_t)(ya * inner) * z;
		for (int64_t o = 0; run && o < outer; o++)
			memcpy((char *)y->data + (size_t)(o * ya * inner) * z,
			       (const char *)x->data + (size_t)((o * xa + at) * inner) * z, run);
		return;
	}
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < ya; j++)
			for (int64_t i = 0; i < inner; i++)
				cpy(y, (o * ya + j) * inner + i, x, (o * xa + at + j) * inner + i);
}

int rk_Split(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int ax, n, have;
	int64_t sz[RT_MAX_RANK * 2];
	if (x->rank == 0 || kn_axis("Split", rt_attr_int(a->attrs, "axis", 0), x->rank, &ax, e) < 0)
		return x->rank ? -1 : rt_errorf(e, RT_EUSER, "Split: input must have rank >= 1");
	if (a->nout > RT_MAX_RANK * 2)
		return rt_errorf(e, RT_EUSER, "Split: at most %d outputs", RT_MAX_RANK * 2);
	if (ints_in_or_attr(a, 1, "split", "Split", sz, &n, &have, e) < 0)
		return -1;
	int64_t d = x->dims[ax], tot = 0;
	if (!have) {   /* equal chunks of ceil(d / nout); the last may be smaller (opset 18) */
		n = a->nout;
		int64_t c = (d + n - 1) / n;
		for (int i = 0; i < n; i++)
			sz[i] = d - i * c < c ? (d - i * c > 0 ? d - i * c : 0) : c;
	}
	for (int i = 0; i < n; i++)
		tot += sz[i];
	if (n != a->nout || tot != d)
		return rt_errorf(e, RT_EUSER, "Split: sizes do not add up to %lld over %d outputs", (long long)d, a->nout);
	int64_t at = 0, dims[RT_MAX_RANK];
	memcpy(dims, x->dims, sizeof dims);
	for (int i = 0; i < n; i++) {
		dims[ax] = sz[i];
		if (kn_out_raw(a, i, x->dtype, x->rank, dims, e) < 0) {   /* every element is written */
			kn_free_outs(a);
			return -1;
		}
		take(&a->out[i], x, ax, at);
		at += sz[i];
	}
	return 0;
}

/* Clamps one Slice axis per the ONNX spec; sets *start, *step and returns the length. */
static int64_t slice_axis(int64_t d, int64_t s, int64_t en, int64_t st)
{
	if (s < 0)
		s += d;
	if (en < 0)
		en += d;
	if (st > 0) {
		s = s < 0 ? 0 : s > d ? d : s;
		en = en < 0 ? 0 : en > d ? d : en;
		return en > s ? (en - s + st - 1) / st : 0;
	}
	s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
	en = en < -1 ? -1 : en > d - 1 ? d - 1 : en;
	return s > en ? (s - en + (-st) - 1) / (-st) : 0;
}

int rk_Slice(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t st[RT_MAX_RANK * 2], en[RT_MAX_RANK * 2], ax[RT_MAX_RANK * 2], sp[RT_MAX_RANK * 2];
	int ns, ne, na, np, h;
	if (ints_in_or_attr(a, 1, "starts", "Slice", st, &ns, &h, e) < 0 ||
	    ints_in_or_attr(a, 2, "ends", "Slice", en, &ne, &h, e) < 0 ||
	    ints_in_or_attr(a, 3, "axes", "Slice", ax, &na, &h, e) < 0 ||
	    ints_in_or_attr(a, 4, "steps", "Slice", sp, &np, &h, e) < 0)
		return -1;
	if (ne != ns || (na && na != ns) || (np && np != ns))
		return rt_errorf(e, RT_EUSER, "Slice: starts, ends, axes and steps differ in length");
	int64_t start[RT_MAX_RANK], step[RT_MAX_RANK], dims[RT_MAX_RANK];
	for (int k = 0; k < x->rank; k++)
		start[k] = 0, step[k] = 1, dims[k] = x->dims[k];
	for (int i = 0; i < ns; i++) {
		int k;
		if (kn_axis("Slice", na ? ax[i] : i, x->rank, &k, e) < 0)
			return -1;
		int64_t s = np ? sp[i] : 1, d = x->dims[k];
		if (s == 0)
			return rt_errorf(e, RT_EUSER, "Slice: step 0");
		dims[k] = slice_axis(d, st[i], en[i], s);
		int64_t s0 = st[i] < 0 ? st[i] + d : st[i];
		start[k] = s > 0 ? (s0 < 0 ? 0 : s0 > d ? d : s0) : (s0 < 0 ? 0 : s0 > d - 1 ? d - 1 : s0);
		step[k] = s;
	}
	if (kn_out(a, 0, x->dtype, x->rank, dims, e) < 0)
		return -1;
	int64_t str[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	kn_strides(x->rank, x->dims, str);
	for (int64_t i = 0; i < a->out[0].n; i++) {
		int64_t off = 0;
		for (int k = 0; k < x->rank; k++)
			off += (start[k] + idx[k] * step[k]) * str[k];
		cpy(&a->out[0], i, x, off);
		for (int k = x->rank - 1; k >= 0 && ++idx[k] >= dims[k]; k--)
			idx[k] = 0;
	}
	return 0;
}

/* An index along an axis of size d, negative counting from the end; -1 if out of range. */
static int64_t norm_index(int64_t i, int64_t d) { if (i < 0) i += d; return i < 0 || i >= d ? -1 : i; }

int rk_Gather(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *ix = a->in[1];
	int ax;
	if (x->rank == 0 || kn_axis("Gather", rt_attr_int(a->attrs, "axis", 0), x->rank, &ax, e) < 0)
		return x->rank ? -1 : rt_errorf(e, RT_EUSER, "Gather: data must have rank >= 1");
	int r = x->rank - 1 + ix->rank;
	if (r > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "Gather: output rank %d is too large", r);
	int64_t dims[RT_MAX_RANK];
	memcpy(dims, x->dims, (size_t)ax * sizeof *dims);
	memcpy(dims + ax, ix->dims, (size_t)ix->rank * sizeof *dims);
	memcpy(dims + ax + ix->rank, x->dims + ax + 1, (size_t)(x->rank - ax - 1) * sizeof *dims);
	if (kn_out(a, 0, x->dtype, r, dims, e) < 0)
		return -1;
	int64_t outer = kn_numel(ax, x->dims), inner = kn_numel(x->rank - ax - 1, x->dims + ax + 1);
	int64_t d = x->dims[ax];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < ix->n; j++) {
			int64_t k = norm_index(rt_geti(ix, j), d);
			if (k < 0) {
				kn_free_outs(a);
				return rt_errorf(e, RT_EUSER, "Gather: index %lld out of range [-%lld, %lld)",
						 (long long)rt_geti(ix, j), (long long)d, (long long)d);
			}
			for (int64_t i = 0; i < inner; i++)
				cpy(&a->out[0], (o * ix->n + j) * inner + i, x, (o * d + k) * inner + i);
		}
	return 0;
}

int rk_GatherElements(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *ix = a->in[1];
	int ax;
	if (ix->rank != x->rank || x->rank == 0)
		return rt_errorf(e, RT_EUSER, "GatherElements: data and indices must have the same rank >= 1");
	if (kn_axis("GatherElements", rt_attr_int(a->attrs, "axis", 0), x->rank, &ax, e) < 0 ||
	    kn_out(a, 0, x->dtype, ix->rank, ix->dims, e) < 0)
		return -1;
	int64_t xs[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	kn_strides(x->rank, x->dims, xs);
	for (int64_t i = 0; i < ix->n; i++) {
		int64_t k = norm_index(rt_geti(ix, i), x->dims[ax]), off = 0;
		if (k < 0) {
			kn_free_outs(a);
			return rt_errorf(e, RT_EUSER, "GatherElements: index %lld out of range", (long long)rt_geti(ix, i));
		}
		for (int q = 0; q < x->rank; q++)
			off += (q == ax ? k : idx[q]) * xs[q];
		cpy(&a->out[0], i, x, off);
		for (int q = x->rank - 1; q >= 0 && ++idx[q] >= ix->dims[q]; q--)
			idx[q] = 0;
	}
	return 0;
}

/* Copies x broadcast to (rank, dims) into out[0]. */
static int broadcast_to(const RtKernelArgs *a, int rank, const int64_t *dims, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (kn_out(a, 0, x->dtype, rank, dims, e) < 0)
		return -1;
	KnIter it;
	kn_iter_init(&it, rank, dims, &x, 1);
	for (int64_t i = 0; i < a->out[0].n; i++, kn_iter_next(&it))
		cpy(&a->out[0], i, x, it.off[0]);
	return 0;
}

int rk_Expand(const RtKernelArgs *a, RtError *e)
{
	int64_t s[RT_MAX_RANK * 2], dims[RT_MAX_RANK];
	int n, rank;
	if (kn_ints("Expand", a->in[1], s, RT_MAX_RANK, &n, e) < 0)
		return -1;
	RtTensor shp = { .rank = n };
	memcpy(shp.dims, s, (size_t)n * sizeof *s);
	const RtTensor *ts[2] = { a->in[0], &shp };
	if (kn_bcast("Expand", ts, 2, &rank, dims, e) < 0)
		return -1;
	return broadcast_to(a, rank, dims, e);
}

int rk_Tile(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t rep[RT_MAX_RANK * 2], dims[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 }, xs[RT_MAX_RANK];
	int n;
	if (kn_ints("Tile", a->in[1], rep, RT_MAX_RANK, &n, e) < 0)
		return -1;
	if (n != x->rank)
		return rt_errorf(e, RT_EUSER, "Tile: %d repeats for rank %d", n, x->rank);
	for (int k = 0; k < n; k++) {
		if (rep[k] < 0)
			return rt_errorf(e, RT_EUSER, "Tile: negative repeat");
		dims[k] = x->dims[k] * rep[k];
	}
	if (kn_out(a, 0, x->dtype, n, dims, e) < 0)
		return -1;
	kn_strides(n, x->dims, xs);
	for (int64_t i = 0; i < a->out[0].n; i++) {
		int64_t off = 0;
		for (int k = 0; k < n; k++)
			off += (idx[k] % x->dims[k]) * xs[k];
		cpy(&a->out[0], i, x, off);
		for (int k = n - 1; k >= 0 && ++idx[k] >= dims[k]; k--)
			idx[k] = 0;
	}
	return 0;
}

/* Source coordinate of padded coordinate j on an axis of size d with `before` padding, or -1
 * for the constant value. */
static int64_t pad_src(int64_t j, int64_t before, int64_t d, int mode)
{
	int64_t i = j - before;
	if (i >= 0 && i < d)
		return i;
	if (mode == 0 || d == 0)
		return -1;
	if (mode == 2)   /* edge */
		return i < 0 ? 0 : d - 1;
	if (mode == 3)   /* wrap */
		return ((i % d) + d) % d;
	if (d == 1)      /* reflect */
		return 0;
	int64_t p = 2 * (d - 1);
	i = ((i % p) + p) % p;
	return i < d ? i : p - i;
}

int rk_Pad(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *cv = kn_in(a, 2);
	int64_t pv[RT_MAX_RANK * 2], axv[RT_MAX_RANK * 2], pads[RT_MAX_RANK * 2] = { 0 };
	int np, na, h;
	const char *ms = rt_attr_str(a->attrs, "mode", "constant");
	int mode = !strcmp(ms, "constant") ? 0 : !strcmp(ms, "reflect") ? 1 : !strcmp(ms, "edge") ? 2 :
		   !strcmp(ms, "wrap") ? 3 : -1;
	if (mode < 0)
		return rt_errorf(e, RT_EUSER, "Pad: unknown mode '%s'", ms);
	if (ints_in_or_attr(a, 1, "pads", "Pad", pv, &np, &h, e) < 0 ||
	    ints_in_or_attr(a, 3, "axes", "Pad", axv, &na, &h, e) < 0)
		return -1;
	int nax = na ? na : x->rank;
	if (np != 2 * nax)
		return rt_errorf(e, RT_EUSER, "Pad: %d pads for %d axes", np, nax);
	for (int i = 0; i < nax; i++) {
		int k = i;
		if (na && kn_axis("Pad", axv[i], x->rank, &k, e) < 0)
			return -1;
		pads[k] = pv[i];
		pads[k + x->rank] = pv[i + nax];
	}
	int64_t dims[RT_MAX_RANK], xs[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	for (int k = 0; k < x->rank; k++)
		if ((dims[k] = x->dims[k] + pads[k] + pads[k + x->rank]) < 0)
			return rt_errorf(e, RT_EUSER, "Pad: negative output size on axis %d", k);
	if (kn_out(a, 0, x->dtype, x->rank, dims, e) < 0)
		return -1;
	double c = cv && cv->n ? rt_get(cv, 0) : rt_attr_float(a->attrs, "value", 0.0);
	kn_strides(x->rank, x->dims, xs);
	for (int64_t i = 0; i < a->out[0].n; i++) {
		int64_t off = 0;
		for (int k = 0; k < x->rank && off >= 0; k++) {
			int64_t s = pad_src(idx[k], pads[k], x->dims[k], mode);
			off = s < 0 ? -1 : off + s * xs[k];
		}
		if (off >= 0)
			cpy(&a->out[0], i, x, off);
		else if (kn_isint(x->dtype))
			rt_seti(&a->out[0], i, cv && cv->n ? rt_geti(cv, 0) : (int64_t)c);
		else
			rt_set(&a->out[0], i, c);
		for (int k = x->rank - 1; k >= 0 && ++idx[k] >= dims[k]; k--)
			idx[k] = 0;
	}
	return 0;
}

int rk_Trilu(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *kt = kn_in(a, 1);
	if (x->rank < 2)
		return rt_errorf(e, RT_EUSER, "Trilu: input must have rank >= 2");
	int64_t k = kt ? rt_geti(kt, 0) : 0, R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
	int upper = (int)rt_attr_int(a->attrs, "upper", 1);
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	for (int64_t i = 0; i < x->n; i++) {
		int64_t c = i % C, r = (i / C) % (R ? R : 1);
		if (upper ? c - r >= k : c - r <= k)
			cpy(&a->out[0], i, x, i);
	}
	return 0;
}

int rk_Shape(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int64_t r = x->rank, s = rt_attr_int(a->attrs, "start", 0), en = rt_attr_int(a->attrs, "end", r);
	s = s < 0 ? s + r : s;
	en = en < 0 ? en + r : en;
	s = s < 0 ? 0 : s > r ? r : s;
	en = en < 0 ? 0 : en > r ? r : en;
	int64_t n = en > s ? en - s : 0;
	if (kn_out(a, 0, DT_I64, 1, &n, e) < 0)
		return -1;
	for (int64_t i = 0; i < n; i++)
		rt_seti(&a->out[0], i, x->dims[s + i]);
	return 0;
}

int rk_Size(const RtKernelArgs *a, RtError *e)
{
	if (kn_out(a, 0, DT_I64, 0, NULL, e) < 0)
		return -1;
	rt_seti(&a->out[0], 0, a->in[0]->n);
	return 0;
}

/* Range: n = max(ceil((limit - start) / delta), 0), Y[i] = start + i*delta. */
int rk_Range(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *s = a->in[0], *l = a->in[1], *d = a->in[2];
	DType dt = s->dtype;
	int64_t n;
	if (kn_isint(dt)) {
		int64_t s0 = rt_geti(s, 0), l0 = rt_geti(l, 0), d0 = rt_geti(d, 0);
		if (d0 == 0)
			return rt_errorf(e, RT_EUSER, "Range: delta is 0");
		n = (l0 - s0) / d0 + (((l0 - s0) % d0) != 0 && ((l0 - s0) < 0) == (d0 < 0));
		n = n > 0 ? n : 0;
		if (kn_out(a, 0, dt, 1, &n, e) < 0)
			return -1;
		for (int64_t i = 0; i < n; i++)
			rt_seti(&a->out[0], i, s0 + i * d0);
		return kn_finish(&a->out[0], a->opts, e);
	}
	double s0 = rt_get(s, 0), l0 = rt_get(l, 0), d0 = rt_get(d, 0);
	if (d0 == 0 || !isfinite(s0) || !isfinite(l0) || !isfinite(d0))
		return rt_errorf(e, RT_EUSER, "Range: delta must be non-zero and all values finite");
	double c = ceil((l0 - s0) / d0);
	n = c > 0 ? (int64_t)c : 0;
	if (kn_out(a, 0, dt, 1, &n, e) < 0)
		return -1;
	int f64 = dt == DT_F64;
	for (int64_t i = 0; i < n; i++)
		rt_set(&a->out[0], i, kn_acc(f64, s0 + kn_acc(f64, (double)i * d0)));
	return kn_finish(&a->out[0], a->opts, e);
}

/* Fills out[0] (already allocated) with the scalar attribute value. */
static void fill(RtTensor *y, const Attr *v)
{
	for (int64_t i = 0; i < y->n; i++) {
		if (!v)
			rt_set(y, i, 0);
		else if (v->kind == ATTR_INT || v->kind == ATTR_INTS)
			rt_seti(y, i, v->kind == ATTR_INT ? v->i : v->n ? v->ints[0] : 0);
		else
			rt_set(y, i, v->kind == ATTR_FLOAT ? v->f : v->n ? v->floats[0] : 0);
	}
}

int rk_ConstantOfShape(const RtKernelArgs *a, RtError *e)
{
	int64_t s[RT_MAX_RANK * 2];
	int n;
	if (kn_ints("ConstantOfShape", a->in[0], s, RT_MAX_RANK, &n, e) < 0)
		return -1;
	const Attr *v = rt_attr_find(a->attrs, "value");
	DType d = v && (v->kind == ATTR_INT || v->kind == ATTR_INTS) ? DT_I64 : DT_F32;
	if (kn_out(a, 0, d, n, s, e) < 0)
		return -1;
	fill(&a->out[0], v);
	return kn_finish(&a->out[0], a->opts, e);
}

/* Constant: value / value_float / value_int (scalars) or value_floats / value_ints (1-D). */
int rk_Constant(const RtKernelArgs *a, RtError *e)
{
	static const char *const names[] = { "value", "value_float", "value_int", "value_floats", "value_ints" };
	const Attr *v = NULL;
	for (int i = 0; i < 5 && !v; i++)
		v = rt_attr_find(a->attrs, names[i]);
	if (!v || v->kind == ATTR_STRING)
		return rt_errorf(e, RT_EUSER, "Constant: needs a numeric value attribute");
	int list = v->kind == ATTR_INTS || v->kind == ATTR_FLOATS;
	int ints = v->kind == ATTR_INT || v->kind == ATTR_INTS;
	int64_t n = list ? v->n : 1;
	if (kn_out(a, 0, ints ? DT_I64 : DT_F32, list, &n, e) < 0)
		return -1;
	for (int64_t i = 0; i < n; i++) {
		if (ints)
			rt_seti(&a->out[0], i, list ? v->ints[i] : v->i);
		else
			rt_set(&a->out[0], i, list ? v->floats[i] : v->f);
	}
	return kn_finish(&a->out[0], a->opts, e);
}
