/* ir/shape_nn.c: shape rules for contractions (MatMul, MatMulInteger, QLinearMatMul, Gemm,
 * Einsum), convolution and pooling, normalisation (BatchNormalization, LayerNormalization,
 * RMSNormalization, GroupNormalization) and quantization (QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, Quantize).  Specs: https://onnx.ai/onnx/operators/onnx__<Op>.html;
 * Quantize follows docs/language.md and ../shared/reference/numerics.md.  Also provides the
 * Einsum equation parser that ir/cost.c shares.
 */
#include <ctype.h>
#include <string.h>

#include "ir/shape_int.h"

/* ---- dtypes of contractions ---- */
/* Low-precision storage formats that a contraction widens (block, <= 8-bit float, i4). */
static int lowp(DType d)
{
	int k = rt_dtypes[d].kind;
	return k == K_BLOCK || (k == K_FLOAT && rt_dtypes[d].bits <= 8) || d == DT_I4;
}

/* Result dtype of A @ B: equal dtypes give that dtype (f32 when both are low-precision
 * formats); one low-precision operand takes the other's dtype (weight-only quantization). */
static int mm_dtype(ShapeCtx *c, Node *n, Type a, Type b, DType *out)
{
	if (lowp(a.dt) && lowp(b.dt))
		*out = a.dt == b.dt && !lowp(a.dt) ? a.dt : DT_F32;
	else if (lowp(a.dt) || lowp(b.dt))
		*out = lowp(a.dt) ? b.dt : a.dt;
	else if (a.dt != b.dt)
		return sh_err(c, n, "A and B must have the same dtype: A is %s, B is %s", sh_ty(c, a), sh_ty(c, b));
	else
		*out = a.dt;
	return 0;
}

/* numpy matmul shapes (https://onnx.ai/onnx/operators/onnx__MatMul.html): 1-D operands are
 * promoted and the promoted axis removed; batch axes broadcast. */
static int matmul_shape(ShapeCtx *c, Node *n, Type a, Type b, int *rank, Dim *d)
{
	if (a.rank == 0 || b.rank == 0)
		return sh_err(c, n, "operands must have rank >= 1: A is %s, B is %s", sh_ty(c, a), sh_ty(c, b));
	Dim ka = a.dims[a.rank - 1], kb = b.dims[b.rank >= 2 ? b.rank - 2 : 0];
	if (!dim_eq(ka, kb))
		return sh_err(c, n, "inner dimensions differ: A is %s, B is %s", sh_ty(c, a), sh_ty(c, b));
	Type ba = ir_type(c->m, a.dt, a.rank > 2 ? a.rank - 2 : 0, a.dims);
	Type bb = ir_type(c->m, b.dt, b.rank > 2 ? b.rank - 2 : 0, b.dims);
	int r;
	if (sh_broadcast(c, n, "the batch axes of A", ba, "those of B", bb, &r, d) < 0)
		return -1;
	if (a.rank >= 2)
		d[r++] = a.dims[a.rank - 2];
	if (b.rank >= 2)
		d[r++] = b.dims[b.rank - 1];
	*rank = r;
	return 0;
}

int shape_matmul(ShapeCtx *c, Node *n)
{
	Type a = n->in[0]->type, b = n->in[1]->type;
	Dim d[IR_MAX_RANK];
	int r;
	DType dt;
	if (n->op == OP_MatMulInteger) {
		for (int i = 0; i < 2; i++)
			if (n->in[i]->type.dt != DT_I8 && n->in[i]->type.dt != DT_U8)
				return sh_err(c, n, "%s must be i8 or u8, got %s", i ? "B" : "A", sh_ty(c, n->in[i]->type));
		dt = DT_I32;
	} else if (mm_dtype(c, n, a, b, &dt) < 0)
		return -1;
	if (matmul_shape(c, n, a, b, &r, d) < 0)
		return -1;
	return sh_set(c, n, 0, dt, r, d);
}

/* QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): Y has y_zp's dtype. */
int shape_qlinearmm(ShapeCtx *c, Node *n)
{
	Type a = n->in[0]->type, b = n->in[3]->type;
	Dim d[IR_MAX_RANK];
	int r;
	if (sh_same_dtype(c, n, 0, 2, "a", "a_zero_point") < 0 || sh_same_dtype(c, n, 3, 5, "b", "b_zero_point") < 0)
		return -1;
	if (matmul_shape(c, n, a, b, &r, d) < 0)
		return -1;
	return sh_set(c, n, 0, n->in[7]->type.dt, r, d);
}

/* Gemm {transA, transB}: A, B 2-D; C unidirectionally broadcast to [M, N]. */
int shape_gemm(ShapeCtx *c, Node *n)
{
	Type a = n->in[0]->type, b = n->in[1]->type;
	DType dt;
	if (sh_want_rank(c, n, 0, "A", 2) < 0 || sh_want_rank(c, n, 1, "B", 2) < 0 || mm_dtype(c, n, a, b, &dt) < 0)
		return -1;
	int ta = rt_attr_int(&n->attrs, "transA", 0) != 0, tb = rt_attr_int(&n->attrs, "transB", 0) != 0;
	Dim d[2] = { a.dims[ta ? 1 : 0], b.dims[tb ? 0 : 1] };
	if (!dim_eq(a.dims[ta ? 0 : 1], b.dims[tb ? 1 : 0]))
		return sh_err(c, n, "inner dimensions differ: A is %s (transA=%d), B is %s (transB=%d)",
			      sh_ty(c, a), ta, sh_ty(c, b), tb);
	const Type *ct = sh_in(n, 2);
	if (ct && !sh_unibroadcast_ok(*ct, 2, d))
		return sh_err(c, n, "C %s cannot be broadcast to the result [%s, %s]", sh_ty(c, *ct),
			      sh_dim(c, d[0]), sh_dim(c, d[1]));
	return sh_set(c, n, 0, dt, 2, d);
}

/* ---- Einsum (https://onnx.ai/onnx/operators/onnx__Einsum.html) ---- */
/* Parses one term ("ij", "...ij") into s->lab[i]/ell[i]; returns chars consumed or -1. */
static int parse_term(const char *p, char *lab, int *rank, int *ell, char *err, size_t errn)
{
	const char *start = p;
	*rank = 0;
	*ell = -1;
	for (;; p++) {
		while (*p == ' ')
			p++;
		if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
			if (*ell >= 0)
				return snprintf(err, errn, "\"...\" appears twice in one term"), -1;
			*ell = *rank;
			p += 2;
		} else if (isalpha((unsigned char)*p)) {
			if (*rank == IR_MAX_RANK)
				return snprintf(err, errn, "a term has more than %d axes", IR_MAX_RANK), -1;
			lab[(*rank)++] = *p;
		} else
			break;
	}
	lab[*rank] = 0;
	return (int)(p - start);
}

/* Implicit output: letters used once, alphabetically, after the broadcast axes. */
static void implicit_output(EinsumSpec *s)
{
	int cnt[128] = { 0 }, any_ell = 0;
	for (int i = 0; i < s->nin; i++) {
		for (int j = 0; j < s->rank[i]; j++)
			cnt[(int)s->lab[i][j]]++;
		any_ell |= s->ell[i] >= 0;
	}
	s->outrank = 0;
	s->outell = any_ell ? 0 : -1;
	for (int ch = 'A'; ch <= 'z'; ch++)
		if (cnt[ch] == 1 && s->outrank < IR_MAX_RANK)
			s->out[s->outrank++] = (char)ch;
	s->out[s->outrank] = 0;
}

int einsum_parse(const char *eq, int nin, EinsumSpec *s, char *err, size_t errn)
{
	memset(s, 0, sizeof *s);
	if (nin > 16)
		return snprintf(err, errn, "more than 16 inputs"), -1;
	const char *p = eq;
	for (;;) {
		if (s->nin == nin)
			return snprintf(err, errn, "equation \"%s\" has more terms than the %d inputs", eq, nin), -1;
		int k = parse_term(p, s->lab[s->nin], &s->rank[s->nin], &s->ell[s->nin], err, errn);
		if (k < 0)
			return -1;
		p += k;
		s->nin++;
		if (*p != ',')
			break;
		p++;
	}
	if (s->nin != nin)
		return snprintf(err, errn, "equation \"%s\" has %d terms but there are %d inputs", eq, s->nin, nin), -1;
	if (*p == 0) {
		implicit_output(s);
		return 0;
	}
	if (p[0] != '-' || p[1] != '>')
		return snprintf(err, errn, "unexpected '%c' in equation \"%s\"", *p, eq), -1;
	int k = parse_term(p + 2, s->out, &s->outrank, &s->outell, err, errn);
	if (k < 0)
		return -1;
	while (p[2 + k] == ' ')
		k++;
	if (p[2 + k])
		return snprintf(err, errn, "unexpected '%c' in equation \"%s\"", p[2 + k], eq), -1;
	for (int i = 0; i < s->outrank; i++) {
		int found = 0;
		for (int j = 0; j < s->nin; j++)
			found |= strchr(s->lab[j], s->out[i]) != NULL;
		if (!found || strchr(s->out + i + 1, s->out[i]))
			return snprintf(err, errn, "output letter '%c' is %s", s->out[i],
					found ? "repeated" : "not in any input"), -1;
	}
	return 0;
}

/* Records the size of letter ch; sizes of 1 broadcast. */
static int einsum_letter(ShapeCtx *c, Node *n, Dim *size, char *set, char ch, Dim d, int in)
{
	int i = (int)ch;
	if (!set[i] || dim_eq(size[i], dim_c(1))) {
		size[i] = d;
		set[i] = 1;
	} else if (!dim_eq(size[i], d) && !dim_eq(d, dim_c(1)))
		return sh_err(c, n, "letter '%c' has size %s in input %d but %s before", ch, sh_dim(c, d), in,
			      sh_dim(c, size[i]));
	return 0;
}

int shape_einsum(ShapeCtx *c, Node *n)
{
	EinsumSpec s;
	char err[256];
	const char *eq = rt_attr_str(&n->attrs, "equation", NULL);
	if (!eq)
		return sh_err(c, n, "attribute equation is required");
	if (einsum_parse(eq, n->nin, &s, err, sizeof err) < 0)
		return sh_err(c, n, "%s", err);
	Dim size[128], ell[IR_MAX_RANK];
	char set[128] = { 0 };
	int ellr = 0;
	for (int i = 0; i < n->nin; i++) {
		Type t = n->in[i]->type;
		int ne = t.rank - s.rank[i];
		if (ne < 0 || (s.ell[i] < 0 && ne != 0))
			return sh_err(c, n, "input %d is %s but its term \"%s\" has %d axes", i, sh_ty(c, t),
				      s.lab[i], s.rank[i]);
		for (int j = 0; j < s.rank[i]; j++) {
			int ax = s.ell[i] >= 0 && j >= s.ell[i] ? j + ne : j;
			if (einsum_letter(c, n, size, set, s.lab[i][j], t.dims[ax], i) < 0)
				return -1;
		}
		if (ne > 0) {
			Type acc = ir_type(c->m, t.dt, ellr, ell), et = ir_type(c->m, t.dt, ne, t.dims + s.ell[i]);
			if (sh_broadcast(c, n, "the \"...\" axes", acc, "input", et, &ellr, ell) < 0)
				return -1;
		}
	}
	Dim d[IR_MAX_RANK];
	int r = 0;
	for (int i = 0; i <= s.outrank; i++) {
		if (i == s.outell)
			for (int j = 0; j < ellr && r < IR_MAX_RANK; j++)
				d[r++] = ell[j];
		if (i < s.outrank && r < IR_MAX_RANK)
			d[r++] = size[(int)s.out[i]];
	}
	return sh_set(c, n, 0, n->in[0]->type.dt, r, d);
}

/* ---- convolution and pooling ---- */
typedef struct Window {
	int k;                                   /* spatial axes */
	int64_t kernel[IR_MAX_RANK], stride[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
	const char *auto_pad;
	int ceil_mode;
} Window;

/* Reads an ints attribute of exactly `want` entries into out (default def). */
static int ints_attr(ShapeCtx *c, Node *n, const char *name, int want, int64_t def, int64_t *out)
{
	int k;
	const int64_t *v = rt_attr_ints(&n->attrs, name, &k);
	for (int i = 0; i < want; i++)
		out[i] = v ? v[i < k ? i : 0] : def;
	if (v && k != want)
		return sh_err(c, n, "attribute %s has %d entries, expected %d", name, k, want);
	return 0;
}

static int read_window(ShapeCtx *c, Node *n, int k, Window *w)
{
	w->k = k;
	w->auto_pad = rt_attr_str(&n->attrs, "auto_pad", "NOTSET");
	w->ceil_mode = rt_attr_int(&n->attrs, "ceil_mode", 0) != 0;
	if (strcmp(w->auto_pad, "NOTSET") && strcmp(w->auto_pad, "SAME_UPPER") &&
	    strcmp(w->auto_pad, "SAME_LOWER") && strcmp(w->auto_pad, "VALID"))
		return sh_err(c, n, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got \"%s\"",
			      w->auto_pad);
	if (ints_attr(c, n, "strides", k, 1, w->stride) < 0 || ints_attr(c, n, "dilations", k, 1, w->dil) < 0 ||
	    ints_attr(c, n, "pads", 2 * k, 0, w->pads) < 0)
		return -1;
	for (int i = 0; i < k; i++) {
		if (w->stride[i] < 1 || w->dil[i] < 1)
			return sh_err(c, n, "strides and dilations must be >= 1 (axis %d: stride %lld, dilation %lld)",
				      i, (long long)w->stride[i], (long long)w->dil[i]);
		if (w->pads[i] < 0 || w->pads[i + k] < 0)
			return sh_err(c, n, "pads must be >= 0 (axis %d: %lld, %lld)", i, (long long)w->pads[i],
				      (long long)w->pads[i + k]);
	}
	return 0;
}

/* Output length of spatial axis i (ONNX Conv/MaxPool output shape formulas). */
static int window_out(ShapeCtx *c, Node *n, const Window *w, int i, Dim in, Dim *out)
{
	int64_t eff = w->dil[i] * (w->kernel[i] - 1) + 1, s = w->stride[i];
	int same = !strncmp(w->auto_pad, "SAME", 4), valid = !strcmp(w->auto_pad, "VALID");
	int64_t pad = valid || same ? 0 : w->pads[i] + w->pads[i + w->k];
	if (!dim_isconst(in)) {
		if (s != 1)
			return sh_err(c, n, "cannot compute the output size of symbolic axis %s with stride %lld "
				      "%s", sh_dim(c, in), (long long)s, sh_bind_hint(c));
		return dim_add(c->m, in, dim_c(same ? 0 : pad - eff + 1), out) < 0 ? sh_err(c, n, "overflow") : 0;
	}
	int64_t num = in.k + pad - eff;
	if (same) {
		*out = dim_c((in.k + s - 1) / s);
		return 0;
	}
	if (num < 0)
		return sh_err(c, n, "the window (%lld with dilation %lld) is larger than the padded input "
			      "(%lld) on spatial axis %d", (long long)w->kernel[i], (long long)w->dil[i],
			      (long long)(in.k + pad), i);
	int64_t o = (w->ceil_mode ? (num + s - 1) / s : num / s) + 1;
	if (w->ceil_mode && (o - 1) * s >= in.k + w->pads[i])
		o--;   /* the last window would start in the end padding */
	*out = dim_c(o);
	return 0;
}

/* Conv(X[N, C, D...], W[M, C/group, k...], B[M]) (https://onnx.ai/onnx/operators/onnx__Conv.html). */
int shape_conv(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, w = n->in[1]->type;
	int64_t g = rt_attr_int(&n->attrs, "group", 1);
	Window win;
	if (x.rank < 3 || w.rank != x.rank)
		return sh_err(c, n, "X must be [N, C, D1, ...] and W [M, C/group, k1, ...] of the same rank: "
			      "X is %s, W is %s", sh_ty(c, x), sh_ty(c, w));
	if (g < 1)
		return sh_err(c, n, "group must be >= 1, got %lld", (long long)g);
	Dim cin;
	if (dim_mul(c->m, w.dims[1], dim_c(g), &cin) < 0 || !dim_eq(cin, x.dims[1]))
		return sh_err(c, n, "channels differ: X is %s, W is %s with group=%lld (expected X channels = "
			      "W.shape[1] * group)", sh_ty(c, x), sh_ty(c, w), (long long)g);
	if (dim_isconst(w.dims[0]) && w.dims[0].k % g)
		return sh_err(c, n, "output channels %lld are not divisible by group %lld", (long long)w.dims[0].k,
			      (long long)g);
	if (read_window(c, n, x.rank - 2, &win) < 0)
		return -1;
	for (int i = 0; i < win.k; i++) {
		if (!dim_isconst(w.dims[i + 2]))
			return sh_err(c, n, "kernel dimensions must be constants, W is %s", sh_ty(c, w));
		win.kernel[i] = w.dims[i + 2].k;
	}
	int64_t ks[IR_MAX_RANK];
	if (ints_attr(c, n, "kernel_shape", win.k, 0, ks) < 0)
		return -1;
	for (int i = 0; i < win.k && rt_attr_find(&n->attrs, "kernel_shape"); i++)
		if (ks[i] != win.kernel[i])
			return sh_err(c, n, "kernel_shape does not match W %s", sh_ty(c, w));
	const Type *b = sh_in(n, 2);
	if (b && (b->rank != 1 || !dim_eq(b->dims[0], w.dims[0])))
		return sh_err(c, n, "B must be [%s], got %s", sh_dim(c, w.dims[0]), sh_ty(c, *b));
	Dim d[IR_MAX_RANK] = { x.dims[0], w.dims[0] };
	DType dt;
	if (mm_dtype(c, n, x, w, &dt) < 0)
		return -1;
	for (int i = 0; i < win.k; i++)
		if (window_out(c, n, &win, i, x.dims[i + 2], &d[i + 2]) < 0)
			return -1;
	return sh_set(c, n, 0, dt, x.rank, d);
}

/* AveragePool/MaxPool {kernel_shape, strides, pads, dilations, ceil_mode}; MaxPool's optional
 * second output holds i64 indices. */
int shape_pool(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	Window win;
	int k;
	if (x.rank < 3)
		return sh_err(c, n, "X must be [N, C, D1, ...], got %s", sh_ty(c, x));
	const int64_t *ks = rt_attr_ints(&n->attrs, "kernel_shape", &k);
	if (!ks)
		return sh_err(c, n, "attribute kernel_shape is required");
	if (k != x.rank - 2)
		return sh_err(c, n, "kernel_shape has %d entries but X %s has %d spatial axes", k, sh_ty(c, x),
			      x.rank - 2);
	if (read_window(c, n, k, &win) < 0)
		return -1;
	Dim d[IR_MAX_RANK] = { x.dims[0], x.dims[1] };
	for (int i = 0; i < k; i++) {
		if (ks[i] < 1)
			return sh_err(c, n, "kernel_shape entries must be >= 1, got %lld", (long long)ks[i]);
		win.kernel[i] = ks[i];
		if (window_out(c, n, &win, i, x.dims[i + 2], &d[i + 2]) < 0)
			return -1;
	}
	if (sh_set(c, n, 0, x.dt, x.rank, d) < 0)
		return -1;
	return sh_set(c, n, 1, DT_I64, x.rank, d);
}

int shape_globalpool(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (x.rank < 2)
		return sh_err(c, n, "X must be [N, C, ...], got %s", sh_ty(c, x));
	Dim d[IR_MAX_RANK];
	for (int i = 0; i < x.rank; i++)
		d[i] = i < 2 ? x.dims[i] : dim_c(1);
	return sh_set(c, n, 0, x.dt, x.rank, d);
}

/* ---- normalisation ---- */
/* Input i must be 1-D [C]. */
static int want_channels(ShapeCtx *c, Node *n, int i, const char *what, Dim ch)
{
	const Type *t = sh_in(n, i);
	if (t && (t->rank != 1 || !dim_eq(t->dims[0], ch)))
		return sh_err(c, n, "%s must be [%s] (one per channel of X), got %s", what, sh_dim(c, ch),
			      sh_ty(c, *t));
	return 0;
}

int shape_batchnorm(ShapeCtx *c, Node *n)
{
	static const char *names[] = { "X", "scale", "B", "input_mean", "input_var" };
	Type x = n->in[0]->type;
	if (x.rank < 2)
		return sh_err(c, n, "X must be [N, C, ...], got %s", sh_ty(c, x));
	for (int i = 1; i < 5; i++)
		if (want_channels(c, n, i, names[i], x.dims[1]) < 0)
			return -1;
	return sh_set_type(c, n, 0, x);
}

/* LayerNormalization/RMSNormalization {axis=-1}: Scale (and B) broadcast to X.shape[axis:]. */
static int norm_common(ShapeCtx *c, Node *n, int *axis)
{
	Type x = n->in[0]->type;
	static const char *names[] = { "X", "Scale", "B" };
	if (sh_want_float(c, n, 0, "X") < 0)
		return -1;
	if (x.rank == 0)
		return sh_err(c, n, "X must have rank >= 1, got %s", sh_ty(c, x));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", -1), x.rank, axis) < 0)
		return -1;
	for (int i = 1; i < n->nin && i < 3; i++)
		if (n->in[i] && !sh_unibroadcast_ok(n->in[i]->type, x.rank - *axis, x.dims + *axis))
			return sh_err(c, n, "%s %s cannot be broadcast to the normalized axes of X %s (from axis %d)",
				      names[i], sh_ty(c, n->in[i]->type), sh_ty(c, x), *axis);
	return 0;
}

int shape_layernorm(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int axis;
	if (norm_common(c, n, &axis) < 0 || sh_set_type(c, n, 0, x) < 0)
		return -1;
	Dim d[IR_MAX_RANK];
	for (int i = 0; i < x.rank; i++)
		d[i] = i < axis ? x.dims[i] : dim_c(1);
	/* Mean and InvStdDev are held in the stash type (f32 by default). */
	if (sh_set(c, n, 1, DT_F32, x.rank, d) < 0)
		return -1;
	return sh_set(c, n, 2, DT_F32, x.rank, d);
}

int shape_rmsnorm(ShapeCtx *c, Node *n)
{
	int axis;
	if (norm_common(c, n, &axis) < 0)
		return -1;
	return sh_set_type(c, n, 0, n->in[0]->type);
}

/* GroupNormalization {num_groups} (opset 21: scale and bias per channel). */
int shape_groupnorm(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	const Attr *g = rt_attr_find(&n->attrs, "num_groups");
	if (x.rank < 2)
		return sh_err(c, n, "X must be [N, C, ...], got %s", sh_ty(c, x));
	if (!g || g->kind != ATTR_INT || g->i < 1)
		return sh_err(c, n, "attribute num_groups (an integer >= 1) is required");
	Dim q;
	if (dim_div(c->m, x.dims[1], dim_c(g->i), &q) < 0)
		return sh_err(c, n, "channels %s of X %s are not divisible by num_groups=%lld",
			      sh_dim(c, x.dims[1]), sh_ty(c, x), (long long)g->i);
	if (want_channels(c, n, 1, "scale", x.dims[1]) < 0 || want_channels(c, n, 2, "bias", x.dims[1]) < 0)
		return -1;
	return sh_set_type(c, n, 0, x);
}

/* ---- quantization ---- */
/* Scale (and zero point) layout of Quantize/DequantizeLinear {axis=1, block_size=0}:
 * per tensor (one element), per axis ([x.shape[axis]]) or blocked (x's rank, the axis
 * divided by block_size rounded up). */
static int check_qscale(ShapeCtx *c, Node *n, Type x, Type s, const char *what)
{
	int64_t bs = rt_attr_int(&n->attrs, "block_size", 0);
	int a;
	if (bs < 0)
		return sh_err(c, n, "block_size must be >= 0, got %lld", (long long)bs);
	if (bs == 0 && s.rank <= 1 && ir_type_numel(s) == 1)
		return 0;
	if (x.rank == 0)
		return sh_err(c, n, "a scalar input needs a one-element %s, got %s", what, sh_ty(c, s));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 1), x.rank, &a) < 0)
		return -1;
	if (bs == 0) {
		if (s.rank != 1 || !dim_eq(s.dims[0], x.dims[a]))
			return sh_err(c, n, "%s %s must hold one element or [%s] (axis %d of %s)", what, sh_ty(c, s),
				      sh_dim(c, x.dims[a]), a, sh_ty(c, x));
		return 0;
	}
	Dim nb, up;
	if (dim_add(c->m, x.dims[a], dim_c(bs - 1), &up) < 0)
		return sh_err(c, n, "overflow");
	if (dim_isconst(up))
		nb = dim_c(up.k / bs);
	else if (dim_div(c->m, x.dims[a], dim_c(bs), &nb) < 0)
		return sh_err(c, n, "symbolic axis %s is not a multiple of block_size %lld", sh_dim(c, x.dims[a]),
			      (long long)bs);
	int ok = s.rank == x.rank;
	for (int i = 0; ok && i < x.rank; i++)
		ok = dim_eq(s.dims[i], i == a ? nb : x.dims[i]);
	if (!ok)
		return sh_err(c, n, "blocked %s %s must have the shape of %s with axis %d divided into blocks of "
			      "%lld (%s)", what, sh_ty(c, s), sh_ty(c, x), a, (long long)bs, sh_dim(c, nb));
	return 0;
}

/* The zero point (input 2), when present, has the scale's shape. */
static int check_zero_point(ShapeCtx *c, Node *n)
{
	const Type *z = sh_in(n, 2);
	Type s = n->in[1]->type;
	if (z && (z->rank != s.rank || !ir_type_eq(ir_type(c->m, s.dt, z->rank, z->dims), s)))
		return sh_err(c, n, "zero_point %s must have the shape of the scale %s", sh_ty(c, *z), sh_ty(c, s));
	return 0;
}

static int qtype_ok(DType d)
{
	return d == DT_I8 || d == DT_U8 || d == DT_I16 || d == DT_I32 || d == DT_I4 || d == DT_F8E4M3 ||
	       d == DT_F8E5M2 || d == DT_F4E2M1;
}

/* QuantizeLinear(x, y_scale, y_zero_point?) {axis, block_size, output_dtype}
 * (https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html). */
int shape_quantize(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	DType dt = DT_U8, od;
	const Type *z = sh_in(n, 2);
	int r = sh_attr_dtype(c, n, "output_dtype", &od);
	if (r < 0 || sh_want_float(c, n, 1, "y_scale") < 0 || check_qscale(c, n, x, n->in[1]->type, "y_scale") < 0 ||
	    check_zero_point(c, n) < 0)
		return -1;
	if (z)
		dt = z->dt;
	if (r == 1 && z && od != z->dt)
		return sh_err(c, n, "output_dtype %s differs from the zero point's dtype %s", rt_dtype_name(od),
			      rt_dtype_name(z->dt));
	if (r == 1)
		dt = od;
	if (!qtype_ok(dt))
		return sh_err(c, n, "cannot quantize to %s (expected an integer, f8 or f4 type)", rt_dtype_name(dt));
	return sh_set(c, n, 0, dt, x.rank, x.dims);
}

/* DequantizeLinear(x, x_scale, x_zero_point?) {axis, block_size}: Y has the scale's dtype
 * (or output_dtype). */
int shape_dequantize(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	DType dt = n->in[1]->type.dt;
	int r = sh_attr_dtype(c, n, "output_dtype", &dt);
	if (r < 0 || sh_want_float(c, n, 1, "x_scale") < 0 || check_qscale(c, n, x, n->in[1]->type, "x_scale") < 0 ||
	    check_zero_point(c, n) < 0)
		return -1;
	if (sh_in(n, 2) && sh_same_dtype(c, n, 0, 2, "x", "x_zero_point") < 0)
		return -1;
	return sh_set(c, n, 0, dt, x.rank, x.dims);
}

/* DynamicQuantizeLinear(x) -> y u8, y_scale f32 scalar, y_zero_point u8 scalar. */
int shape_dynquant(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (sh_want_float(c, n, 0, "x") < 0 || sh_set(c, n, 0, DT_U8, x.rank, x.dims) < 0 ||
	    sh_set(c, n, 1, DT_F32, 0, NULL) < 0)
		return -1;
	return sh_set(c, n, 2, DT_U8, 0, NULL);
}

/* Quantize(x) {to, scale_rule=floor|rceil}: same shape, dtype `to` (docs/language.md). */
int shape_quant(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	DType to;
	int r = sh_attr_dtype(c, n, "to", &to);
	const char *rule = rt_attr_str(&n->attrs, "scale_rule", "floor");
	if (r < 0 || sh_want_float(c, n, 0, "x") < 0)
		return -1;
	if (r == 0)
		return sh_err(c, n, "attribute to (the target format) is required");
	if (to == DT_BOOL || rt_dtypes[to].kind == K_NONE)
		return sh_err(c, n, "cannot quantize to %s", rt_dtype_name(to));
	if (strcmp(rule, "floor") && strcmp(rule, "rceil"))
		return sh_err(c, n, "scale_rule must be \"floor\" or \"rceil\", got \"%s\"", rule);
	if (rt_dtypes[to].kind == K_BLOCK && x.rank == 0)
		return sh_err(c, n, "block format %s needs a tensor of rank >= 1 (blocks run along the last "
			      "axis), got %s", rt_dtype_name(to), sh_ty(c, x));
	if (rt_attr_find(&n->attrs, "group")) {    /* scaled per group, values kept in X's dtype */
		if (rt_dtypes[to].kind == K_BLOCK || rt_dtypes[to].kind == K_SCALE)
			return sh_err(c, n, "group scaling is for scalar formats (i8, i4, f8e4m3, ...), not %s",
				      rt_dtype_name(to));
		if (rt_dtypes[x.dt].storage != S_F32)
			return sh_err(c, n, "group scaling needs an input held in f32 (f32, bf16, f16), got %s",
				      sh_ty(c, x));
		const Attr *ga = rt_attr_find(&n->attrs, "group");
		if (ga->kind != ATTR_INT || (ga->i < 1 && ga->i != -1))
			return sh_err(c, n, "group must be an integer >= 1, or -1 for the whole tensor");
		return sh_set(c, n, 0, x.dt, x.rank, x.dims);
	}
	return sh_set(c, n, 0, to, x.rank, x.dims);
}
