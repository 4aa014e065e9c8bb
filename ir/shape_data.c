/* ir/shape_data.c: shape rules for data movement and shape operators: Reshape, Transpose,
 * Concat, Split, Slice, Gather, GatherElements, Expand, Tile, Squeeze, Unsqueeze, Flatten, Pad,
 * Shape, Size, Range, ConstantOfShape, Constant and Embedding.  Shape-like inputs (shape, axes,
 * starts, pads, repeats, ...) are read as known values (ir/shape_value.c), so they may be
 * constants or computed from other shapes.  Specs: https://onnx.ai/onnx/operators/onnx__<Op>.html.
 */
#include <string.h>

#include "ir/shape_int.h"

/* ---- Reshape (https://onnx.ai/onnx/operators/onnx__Reshape.html) ---- */
/* Resolves 0 (copy, unless allowzero) and checks the entries; *infer = index of -1 or -1. */
static int reshape_entries(ShapeCtx *c, Node *n, Type x, Dim *s, int k, int allowzero, int *infer)
{
	int zero = 0;
	*infer = -1;
	for (int i = 0; i < k; i++) {
		if (!dim_isconst(s[i]))
			continue;
		if (s[i].k == -1) {
			if (*infer >= 0)
				return sh_err(c, n, "shape has more than one -1 (entries %d and %d)", *infer, i);
			*infer = i;
		} else if (s[i].k < -1)
			return sh_err(c, n, "shape entry %d is %lld; entries must be >= -1", i, (long long)s[i].k);
		else if (s[i].k == 0 && allowzero)
			zero = 1;
		else if (s[i].k == 0) {
			if (i >= x.rank)
				return sh_err(c, n, "shape entry %d is 0 (copy) but the input %s has rank %d", i,
					      sh_ty(c, x), x.rank);
			s[i] = x.dims[i];
		}
	}
	if (zero && *infer >= 0)
		return sh_err(c, n, "shape has both 0 and -1 while allowzero=1");
	return 0;
}

int shape_reshape(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	Dim s[IR_MAX_RANK], total, known;
	int k, infer;
	if (sh_dims_input(c, n, 1, "shape", s, IR_MAX_RANK, &k) < 0)
		return -1;
	int allowzero = rt_attr_int(&n->attrs, "allowzero", 0) != 0;
	if (reshape_entries(c, n, x, s, k, allowzero, &infer) < 0)
		return -1;
	if (sh_prod(c, x.dims, 0, x.rank, &total) < 0)
		return sh_err(c, n, "the element count of %s overflows", sh_ty(c, x));
	Dim other[IR_MAX_RANK];
	int no = 0;
	for (int i = 0; i < k; i++)
		if (i != infer)
			other[no++] = s[i];
	if (sh_prod(c, other, 0, no, &known) < 0)
		return sh_err(c, n, "the shape's element count overflows");
	if (infer >= 0) {
		if (dim_eq(known, dim_c(0)))
			return sh_err(c, n, "cannot infer the -1 entry: the other entries multiply to 0");
		if (dim_div(c->m, total, known, &s[infer]) < 0)
			return sh_err(c, n, "cannot infer the -1 entry: %s elements of %s are not divisible by %s",
				      sh_dim(c, total), sh_ty(c, x), sh_dim(c, known));
	} else if (!dim_eq(total, known)) {
		Type want = ir_type(c->m, x.dt, k, s);
		return sh_err(c, n, "cannot reshape %s (%s elements) to %s (%s elements)", sh_ty(c, x),
			      sh_dim(c, total), sh_ty(c, want), sh_dim(c, known));
	}
	return sh_set(c, n, 0, x.dt, k, s);
}

/* ---- Transpose {perm} ---- */
int shape_transpose(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int k;
	const int64_t *perm = rt_attr_ints(&n->attrs, "perm", &k);
	Dim d[IR_MAX_RANK];
	char seen[IR_MAX_RANK] = { 0 };
	if (perm && k != x.rank)
		return sh_err(c, n, "perm has %d entries but the input %s has rank %d", k, sh_ty(c, x), x.rank);
	for (int i = 0; i < x.rank; i++) {
		int64_t p = perm ? perm[i] : x.rank - 1 - i;
		int a;
		if (sh_axis(c, n, "perm entry", p, x.rank, &a) < 0)
			return -1;
		if (seen[a]++)
			return sh_err(c, n, "perm is not a permutation: axis %d appears twice", a);
		d[i] = x.dims[a];
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* ---- Concat {axis} ---- */
int shape_concat(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	const Attr *at = rt_attr_find(&n->attrs, "axis");
	int a;
	if (!at || at->kind != ATTR_INT)
		return sh_err(c, n, "attribute axis (an integer) is required");
	if (x.rank == 0)
		return sh_err(c, n, "inputs must have rank >= 1, input 0 is %s", sh_ty(c, x));
	if (sh_axis(c, n, "axis", at->i, x.rank, &a) < 0)
		return -1;
	Dim d[IR_MAX_RANK];
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	for (int i = 1; i < n->nin; i++) {
		Type t = n->in[i]->type;
		if (t.dt != x.dt || t.rank != x.rank)
			return sh_err(c, n, "input %d is %s but input 0 is %s", i, sh_ty(c, t), sh_ty(c, x));
		for (int j = 0; j < x.rank; j++)
			if (j != a && !dim_eq(t.dims[j], x.dims[j]))
				return sh_err(c, n, "input %d is %s but input 0 is %s: dimension %d differs", i,
					      sh_ty(c, t), sh_ty(c, x), j);
		if (dim_add(c->m, d[a], t.dims[a], &d[a]) < 0)
			return sh_err(c, n, "the concatenated dimension overflows");
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* ---- Split {axis=0, num_outputs} (https://onnx.ai/onnx/operators/onnx__Split.html) ---- */
/* Equal parts: ceil-sized with a smaller last part (opset 18 num_outputs), else exact. */
static int split_equal(ShapeCtx *c, Node *n, Dim dim, Dim *sz)
{
	int parts = n->nout;
	int64_t num = rt_attr_int(&n->attrs, "num_outputs", 0);
	if (num && num != parts)
		return sh_err(c, n, "num_outputs is %lld but the node has %d outputs", (long long)num, parts);
	if (!dim_isconst(dim)) {
		Dim q;
		if (dim_div(c->m, dim, dim_c(parts), &q) < 0)
			return sh_err(c, n, "cannot split dimension %s into %d equal parts", sh_dim(c, dim), parts);
		for (int i = 0; i < parts; i++)
			sz[i] = q;
		return 0;
	}
	int64_t chunk = (dim.k + parts - 1) / parts;
	if (!num && dim.k % parts)
		return sh_err(c, n, "cannot split dimension %lld into %d equal parts", (long long)dim.k, parts);
	if (dim.k - chunk * (parts - 1) < 0)
		return sh_err(c, n, "cannot split dimension %lld into %d parts", (long long)dim.k, parts);
	for (int i = 0; i < parts; i++)
		sz[i] = dim_c(i < parts - 1 ? chunk : dim.k - chunk * (parts - 1));
	return 0;
}

/* Explicit sizes from input 1 (opset 13+) or attribute split; 1 when neither is given. */
static int split_sizes(ShapeCtx *c, Node *n, Dim *sz, int *k)
{
	if (sh_in(n, 1))
		return sh_dims_input(c, n, 1, "split", sz, SH_MAXKNOWN, k);
	const int64_t *s = rt_attr_ints(&n->attrs, "split", k);
	if (!s)
		return 1;
	if (*k > SH_MAXKNOWN)
		return sh_err(c, n, "attribute split has too many entries (%d)", *k);
	for (int i = 0; i < *k; i++)
		sz[i] = dim_c(s[i]);
	return 0;
}

int shape_split(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int a, k;
	Dim sz[SH_MAXKNOWN], sum = dim_c(0);
	if (n->nout > SH_MAXKNOWN)
		return sh_err(c, n, "too many outputs (%d)", n->nout);
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 0), x.rank, &a) < 0)
		return -1;
	int r = split_sizes(c, n, sz, &k);
	if (r < 0)
		return -1;
	if (r == 1 && split_equal(c, n, x.dims[a], sz) < 0)
		return -1;
	if (r == 0) {
		if (k != n->nout)
			return sh_err(c, n, "split has %d entries but the node has %d outputs", k, n->nout);
		for (int i = 0; i < k; i++) {
			if (dim_isconst(sz[i]) && sz[i].k < 0)
				return sh_err(c, n, "split entry %d is negative (%lld)", i, (long long)sz[i].k);
			if (dim_add(c->m, sum, sz[i], &sum) < 0)
				return sh_err(c, n, "split sizes overflow");
		}
		if (!dim_eq(sum, x.dims[a]))
			return sh_err(c, n, "split sizes add up to %s but dimension %d of %s is %s",
				      sh_dim(c, sum), a, sh_ty(c, x), sh_dim(c, x.dims[a]));
	}
	Dim d[IR_MAX_RANK];
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	for (int i = 0; i < n->nout; i++) {
		d[a] = sz[i];
		if (sh_set(c, n, i, x.dt, x.rank, d) < 0)
			return -1;
	}
	return 0;
}

/* ---- Slice (https://onnx.ai/onnx/operators/onnx__Slice.html) ---- */
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Length of [start:end:step] over a constant dim, with ONNX's clamping. */
static int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step)
{
	if (start < 0)
		start = start < -dim ? 0 : start + dim;
	if (end < 0)
		end = end < -dim ? -1 : end + dim;
	if (step > 0) {
		start = clamp64(start, 0, dim);
		end = clamp64(end, 0, dim);
		return end > start ? (end - start + step - 1) / step : 0;
	}
	start = clamp64(start, 0, dim - 1);
	end = clamp64(end, -1, dim - 1);
	return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

/* Symbolic slice with step 1: a bound >= 2^31 means "to the end", a negative one counts from
 * the end; other bounds are taken as they are (symbols are assumed at least that large). */
static int slice_sym(ShapeCtx *c, Node *n, Dim dim, Dim start, Dim end, Dim *out)
{
	if (dim_isconst(start) && start.k < 0 && dim_add(c->m, dim, start, &start) < 0)
		return -1;
	if (dim_isconst(end) && end.k >= INT32_MAX)
		end = dim;
	else if (dim_isconst(end) && end.k < 0 && dim_add(c->m, dim, end, &end) < 0)
		return -1;
	if (dim_sub(c->m, end, start, out) < 0)
		return -1;
	if (dim_isconst(*out) && out->k < 0)
		*out = dim_c(0);
	return 0;
}

/* Reads axes (default 0..k-1) and steps (default 1) of a Slice with k starts. */
static int slice_axes_steps(ShapeCtx *c, Node *n, int rank, int k, int *axes, int64_t *steps)
{
	int64_t ax[IR_MAX_RANK];
	int cnt = k;
	char seen[IR_MAX_RANK] = { 0 };
	if (sh_in(n, 3) && sh_ints_input(c, n, 3, "axes", ax, IR_MAX_RANK, &cnt) < 0)
		return -1;
	if (cnt != k)
		return sh_err(c, n, "axes has %d entries but starts has %d", cnt, k);
	for (int i = 0; i < k; i++) {
		if (sh_axis(c, n, "axis", sh_in(n, 3) ? ax[i] : i, rank, &axes[i]) < 0)
			return -1;
		if (seen[axes[i]]++)
			return sh_err(c, n, "axis %d is repeated in axes", axes[i]);
		steps[i] = 1;
	}
	if (sh_in(n, 4) && sh_ints_input(c, n, 4, "steps", steps, IR_MAX_RANK, &cnt) < 0)
		return -1;
	if (sh_in(n, 4) && cnt != k)
		return sh_err(c, n, "steps has %d entries but starts has %d", cnt, k);
	for (int i = 0; i < k; i++)
		if (steps[i] == 0)
			return sh_err(c, n, "step %d is 0", i);
	return 0;
}

int shape_slice(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	Dim st[IR_MAX_RANK], en[IR_MAX_RANK], d[IR_MAX_RANK];
	int k, ke, axes[IR_MAX_RANK];
	int64_t steps[IR_MAX_RANK];
	if (sh_dims_input(c, n, 1, "starts", st, IR_MAX_RANK, &k) < 0 ||
	    sh_dims_input(c, n, 2, "ends", en, IR_MAX_RANK, &ke) < 0)
		return -1;
	if (k != ke)
		return sh_err(c, n, "starts has %d entries but ends has %d", k, ke);
	if (slice_axes_steps(c, n, x.rank, k, axes, steps) < 0)
		return -1;
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	for (int i = 0; i < k; i++) {
		Dim dim = x.dims[axes[i]];
		if (dim_isconst(dim) && dim_isconst(st[i]) && dim_isconst(en[i]))
			d[axes[i]] = dim_c(slice_len(dim.k, st[i].k, en[i].k, steps[i]));
		else if (steps[i] != 1 || slice_sym(c, n, dim, st[i], en[i], &d[axes[i]]) < 0)
			return sh_err(c, n, "cannot slice symbolic dimension %s from %s to %s with step %lld "
				      "%s", sh_dim(c, dim), sh_dim(c, st[i]), sh_dim(c, en[i]),
				      (long long)steps[i], sh_bind_hint(c));
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* ---- Gather {axis=0} and GatherElements ---- */
/* Checks known constant indices against a constant dimension. */
static int check_indices(ShapeCtx *c, Node *n, int i, Dim dim, const char *what, int neg_ok)
{
	const Known *k = sh_known(c, n->in[i]);
	if (!k || !dim_isconst(dim))
		return 0;
	for (int j = 0; j < k->n; j++)
		if (dim_isconst(k->d[j]) && (k->d[j].k < (neg_ok ? -dim.k : 0) || k->d[j].k >= dim.k))
			return sh_err(c, n, "%s %lld is out of range for dimension %lld", what,
				      (long long)k->d[j].k, (long long)dim.k);
	return 0;
}

int shape_gather(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, idx = n->in[1]->type;
	int a;
	if (x.rank == 0)
		return sh_err(c, n, "data must have rank >= 1, got %s", sh_ty(c, x));
	if (sh_want_int(c, n, 1, "indices") < 0 ||
	    sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 0), x.rank, &a) < 0 ||
	    check_indices(c, n, 1, x.dims[a], "index", 1) < 0)
		return -1;
	Dim d[2 * IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i < a; i++)
		d[r++] = x.dims[i];
	for (int i = 0; i < idx.rank; i++)
		d[r++] = idx.dims[i];
	for (int i = a + 1; i < x.rank; i++)
		d[r++] = x.dims[i];
	return sh_set(c, n, 0, x.dt, r, d);
}

int shape_gatherel(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, idx = n->in[1]->type;
	int a;
	if (sh_want_int(c, n, 1, "indices") < 0)
		return -1;
	if (idx.rank != x.rank || x.rank == 0)
		return sh_err(c, n, "indices %s must have the rank of data %s (>= 1)", sh_ty(c, idx), sh_ty(c, x));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 0), x.rank, &a) < 0)
		return -1;
	return sh_set(c, n, 0, x.dt, idx.rank, idx.dims);
}

/* ---- Expand, Tile ---- */
int shape_expand(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	Dim s[IR_MAX_RANK], d[IR_MAX_RANK];
	int k, r;
	if (sh_dims_input(c, n, 1, "shape", s, IR_MAX_RANK, &k) < 0)
		return -1;
	if (sh_broadcast(c, n, "input", x, "shape", ir_type(c->m, x.dt, k, s), &r, d) < 0)
		return -1;
	return sh_set(c, n, 0, x.dt, r, d);
}

int shape_tile(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t rep[IR_MAX_RANK];
	int k;
	Dim d[IR_MAX_RANK];
	if (sh_ints_input(c, n, 1, "repeats", rep, IR_MAX_RANK, &k) < 0)
		return -1;
	if (k != x.rank)
		return sh_err(c, n, "repeats has %d entries but the input %s has rank %d", k, sh_ty(c, x), x.rank);
	for (int i = 0; i < k; i++) {
		if (rep[i] < 0)
			return sh_err(c, n, "repeats entry %d is negative (%lld)", i, (long long)rep[i]);
		if (dim_mul(c->m, x.dims[i], dim_c(rep[i]), &d[i]) < 0)
			return sh_err(c, n, "tiled dimension %d overflows", i);
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* ---- Squeeze, Unsqueeze, Flatten ---- */
int shape_squeeze(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t axes[IR_MAX_RANK];
	int k, r = sh_axes(c, n, 1, axes, IR_MAX_RANK, &k);
	char mark[IR_MAX_RANK] = { 0 };
	if (r < 0)
		return -1;
	for (int i = 0; r == 1 && i < x.rank; i++)
		mark[i] = dim_eq(x.dims[i], dim_c(1));
	for (int i = 0; r == 0 && i < k; i++) {
		int a;
		if (sh_axis(c, n, "axis", axes[i], x.rank, &a) < 0)
			return -1;
		if (!dim_eq(x.dims[a], dim_c(1)))
			return sh_err(c, n, "cannot squeeze axis %d of %s: its size is %s, not 1", a, sh_ty(c, x),
				      sh_dim(c, x.dims[a]));
		mark[a] = 1;
	}
	Dim d[IR_MAX_RANK];
	int nr = 0;
	for (int i = 0; i < x.rank; i++)
		if (!mark[i])
			d[nr++] = x.dims[i];
	return sh_set(c, n, 0, x.dt, nr, d);
}

int shape_unsqueeze(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t axes[IR_MAX_RANK];
	int k, r = sh_axes(c, n, 1, axes, IR_MAX_RANK, &k);
	if (r < 0)
		return -1;
	if (r == 1)
		return sh_err(c, n, "axes are required (input 1 or attribute axes)");
	int out = x.rank + k;
	if (out > IR_MAX_RANK)
		return sh_err(c, n, "output rank %d exceeds %d", out, IR_MAX_RANK);
	char mark[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < k; i++) {
		int a;
		if (sh_axis(c, n, "axis", axes[i], out, &a) < 0)
			return -1;
		if (mark[a]++)
			return sh_err(c, n, "axis %lld is repeated in axes", (long long)axes[i]);
	}
	Dim d[IR_MAX_RANK];
	for (int i = 0, j = 0; i < out; i++)
		d[i] = mark[i] ? dim_c(1) : x.dims[j++];
	return sh_set(c, n, 0, x.dt, out, d);
}

int shape_flatten(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t axis = rt_attr_int(&n->attrs, "axis", 1);
	if (axis < -(int64_t)x.rank || axis > x.rank)
		return sh_err(c, n, "axis %lld is out of range for rank %d (expected %d..%d)",
			      (long long)axis, x.rank, -x.rank, x.rank);
	int a = (int)(axis < 0 ? axis + x.rank : axis);
	Dim d[2];
	if (sh_prod(c, x.dims, 0, a, &d[0]) < 0 || sh_prod(c, x.dims, a, x.rank, &d[1]) < 0)
		return sh_err(c, n, "the flattened size of %s overflows", sh_ty(c, x));
	return sh_set(c, n, 0, x.dt, 2, d);
}

/* ---- Pad (https://onnx.ai/onnx/operators/onnx__Pad.html) ---- */
int shape_pad(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int64_t pads[2 * IR_MAX_RANK], ax[IR_MAX_RANK];
	int k, na = x.rank;
	const char *mode = rt_attr_str(&n->attrs, "mode", "constant");
	if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") && strcmp(mode, "wrap"))
		return sh_err(c, n, "mode must be constant, reflect, edge or wrap, got \"%s\"", mode);
	if (sh_ints_input(c, n, 1, "pads", pads, 2 * IR_MAX_RANK, &k) < 0)
		return -1;
	if (sh_in(n, 3) && sh_ints_input(c, n, 3, "axes", ax, IR_MAX_RANK, &na) < 0)
		return -1;
	const Type *cv = sh_in(n, 2);
	if (cv && (ir_type_numel(*cv) != 1 || cv->dt != x.dt))
		return sh_err(c, n, "constant_value must be a one-element %s tensor, got %s",
			      rt_dtype_name(x.dt), sh_ty(c, *cv));
	if (k != 2 * na)
		return sh_err(c, n, "pads has %d entries; expected %d (2 per padded axis)", k, 2 * na);
	Dim d[IR_MAX_RANK];
	memcpy(d, x.dims, (size_t)x.rank * sizeof *d);
	for (int i = 0; i < na; i++) {
		int a;
		if (sh_axis(c, n, "axis", sh_in(n, 3) ? ax[i] : i, x.rank, &a) < 0)
			return -1;
		if (dim_add(c->m, x.dims[a], dim_c(pads[i]), &d[a]) < 0 ||
		    dim_add(c->m, d[a], dim_c(pads[i + na]), &d[a]) < 0)
			return sh_err(c, n, "padded dimension %d overflows", a);
		if (dim_isconst(d[a]) && d[a].k < 0)
			return sh_err(c, n, "pads %lld and %lld make dimension %d of %s negative",
				      (long long)pads[i], (long long)pads[i + na], a, sh_ty(c, x));
	}
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* ---- Shape {start, end}, Size ---- */
int shape_shape(ShapeCtx *c, Node *n)
{
	int r = n->in[0]->type.rank;
	int64_t start = rt_attr_int(&n->attrs, "start", 0), end = rt_attr_int(&n->attrs, "end", r);
	start = clamp64(start < 0 ? start + r : start, 0, r);
	end = clamp64(end < 0 ? end + r : end, 0, r);
	Dim d = dim_c(end > start ? end - start : 0);
	return sh_set(c, n, 0, DT_I64, 1, &d);
}

int shape_size(ShapeCtx *c, Node *n) { return sh_set(c, n, 0, DT_I64, 0, NULL); }

/* ---- Range (https://onnx.ai/onnx/operators/onnx__Range.html) ---- */
/* The scalar value of input i as a double when it is constant data. */
static int const_scalar(ShapeCtx *c, Node *n, int i, double *v)
{
	const RtTensor *t = sh_value(c, n->in[i]);
	const Known *k = sh_known(c, n->in[i]);
	if (t && t->n == 1) {
		*v = rt_get(t, 0);
		return 1;
	}
	if (k && k->n == 1 && dim_isconst(k->d[0])) {
		*v = (double)k->d[0].k;
		return 1;
	}
	return 0;
}

int shape_range(ShapeCtx *c, Node *n)
{
	static const char *names[] = { "start", "limit", "delta" };
	for (int i = 0; i < 3; i++) {
		if (n->in[i]->type.rank != 0 && ir_type_numel(n->in[i]->type) != 1)
			return sh_err(c, n, "%s must be a scalar, got %s", names[i], sh_ty(c, n->in[i]->type));
		if (sh_same_dtype(c, n, 0, i, "start", names[i]) < 0)
			return -1;
	}
	double v[3];
	Dim len;
	if (const_scalar(c, n, 0, &v[0]) && const_scalar(c, n, 1, &v[1]) && const_scalar(c, n, 2, &v[2])) {
		if (v[2] == 0)
			return sh_err(c, n, "delta is 0");
		double cnt = __builtin_ceil((v[1] - v[0]) / v[2]);
		len = dim_c(cnt > 0 ? (int64_t)cnt : 0);
	} else {
		const Known *s = sh_known(c, n->in[0]), *l = sh_known(c, n->in[1]);
		if (!s || !l || !const_scalar(c, n, 2, &v[2]) || v[2] != 1 ||
		    dim_sub(c->m, l->d[0], s->d[0], &len) < 0) {
			for (int i = 0; i < 3; i++)
				if (!const_scalar(c, n, i, &v[i]))
					return sh_unknown(c, n, i, names[i]);
		}
	}
	return sh_set(c, n, 0, n->in[0]->type.dt, 1, &len);
}

/* ---- ConstantOfShape {value}, Constant {value*} ---- */
/* dtype of a value attribute: ints are i64, floats f32 (ONNX's default is float 0). */
static DType value_dtype(const Attr *a)
{
	return a && (a->kind == ATTR_INT || a->kind == ATTR_INTS) ? DT_I64 : DT_F32;
}

int shape_constofshape(ShapeCtx *c, Node *n)
{
	Dim s[IR_MAX_RANK];
	int k;
	const Attr *v = rt_attr_find(&n->attrs, "value");
	if (sh_dims_input(c, n, 0, "shape", s, IR_MAX_RANK, &k) < 0)
		return -1;
	if (v && (v->kind == ATTR_STRING || ((v->kind == ATTR_INTS || v->kind == ATTR_FLOATS) && v->n != 1)))
		return sh_err(c, n, "attribute value must be one number");
	for (int i = 0; i < k; i++)
		if (dim_isconst(s[i]) && s[i].k < 0)
			return sh_err(c, n, "shape entry %d is negative (%lld)", i, (long long)s[i].k);
	return sh_set(c, n, 0, value_dtype(v), k, s);
}

int shape_constant(ShapeCtx *c, Node *n)
{
	static const char *names[] = { "value", "value_float", "value_floats", "value_int", "value_ints" };
	const Attr *a = NULL;
	for (int i = 0; i < 5; i++)
		if (rt_attr_find(&n->attrs, names[i])) {
			if (a)
				return sh_err(c, n, "exactly one value attribute is allowed");
			a = rt_attr_find(&n->attrs, names[i]);
		}
	if (!a || a->kind == ATTR_STRING)
		return sh_err(c, n, "a value attribute (value, value_float(s), value_int(s)) is required");
	Dim d = dim_c(a->n);
	int list = a->kind == ATTR_INTS || a->kind == ATTR_FLOATS;
	return sh_set(c, n, 0, value_dtype(a), list, &d);
}

/* ---- Embedding(table[V, D], ids[...]) -> [..., D] (docs/language.md) ---- */
int shape_embedding(ShapeCtx *c, Node *n)
{
	Type tab = n->in[0]->type, ids = n->in[1]->type;
	if (sh_want_rank(c, n, 0, "table", 2) < 0 || sh_want_int(c, n, 1, "ids") < 0 ||
	    check_indices(c, n, 1, tab.dims[0], "id", 0) < 0)
		return -1;
	Dim d[IR_MAX_RANK + 1];
	memcpy(d, ids.dims, (size_t)ids.rank * sizeof *d);
	d[ids.rank] = tab.dims[1];
	return sh_set(c, n, 0, tab.dt, ids.rank + 1, d);
}
