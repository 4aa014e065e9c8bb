/* ir/shape_llm.c: shape rules for the transformer and LLM operators and for subgraph calls:
 * Attention and RotaryEmbedding (ONNX opset 23, https://onnx.ai/onnx/operators/onnx__Attention.html,
 * https://onnx.ai/onnx/operators/onnx__RotaryEmbedding.html), TopKRouter, MoEDispatch,
 * GroupedMatMul and MoECombine (docs/language.md), and Call (`call g(...)`, `repeat N g(...)`).
 */
#include <string.h>

#include "ir/shape_int.h"

/* ---- Attention ---- */
/* Whether input j (past_key/past_value) is an FP8 cache of input i (K/V) held wider. */
static int kv_cache_fmt(const Node *n, int i, int j)
{
	const Type *a = sh_in(n, i), *b = sh_in(n, j);
	return a && b && (b->dt == DT_F8E4M3 || b->dt == DT_F8E5M2) && rt_dtype_isfloat(a->dt) && rt_dtypes[a->dt].bits > 8;
}

typedef struct Attn {
	Dim b, qh, kvh, sq, skv, past, total, dh, dv;
	int rank;                /* 3 or 4 */
} Attn;

/* d[i] must equal want; names the tensor and axis otherwise. */
static int want_dim(ShapeCtx *c, Node *n, const char *what, Type t, int i, Dim want, const char *role)
{
	if (!dim_eq(t.dims[i], want))
		return sh_err(c, n, "%s %s: dimension %d (%s) is %s, expected %s", what, sh_ty(c, t), i, role,
			      sh_dim(c, t.dims[i]), sh_dim(c, want));
	return 0;
}

/* A head count attribute, required (>= 1) for 3-D inputs. */
static int heads_attr(ShapeCtx *c, Node *n, const char *name, int64_t *v)
{
	const Attr *a = rt_attr_find(&n->attrs, name);
	if (!a || a->kind != ATTR_INT || a->i < 1)
		return sh_err(c, n, "3-D inputs need attribute %s (an integer >= 1)", name);
	*v = a->i;
	return 0;
}

/* hidden / heads, exactly. */
static int head_size(ShapeCtx *c, Node *n, const char *what, Type t, int64_t heads, Dim *out)
{
	if (dim_div(c->m, t.dims[2], dim_c(heads), out) < 0)
		return sh_err(c, n, "%s %s: hidden size %s is not divisible by %lld heads", what, sh_ty(c, t),
			      sh_dim(c, t.dims[2]), (long long)heads);
	return 0;
}

static int attn_3d(ShapeCtx *c, Node *n, Type q, Type k, Type v, Attn *a)
{
	int64_t qh = 1, kvh = 1;
	Dim dk;
	if (heads_attr(c, n, "q_num_heads", &qh) < 0 || heads_attr(c, n, "kv_num_heads", &kvh) < 0 ||
	    head_size(c, n, "Q", q, qh, &a->dh) < 0 || head_size(c, n, "K", k, kvh, &dk) < 0 ||
	    head_size(c, n, "V", v, kvh, &a->dv) < 0)
		return -1;
	if (!dim_eq(dk, a->dh))
		return sh_err(c, n, "head sizes differ: Q %s has %s per head (q_num_heads=%lld), K %s has %s "
			      "(kv_num_heads=%lld)", sh_ty(c, q), sh_dim(c, a->dh), (long long)qh, sh_ty(c, k),
			      sh_dim(c, dk), (long long)kvh);
	a->qh = dim_c(qh);
	a->kvh = dim_c(kvh);
	a->sq = q.dims[1];
	a->skv = k.dims[1];
	return want_dim(c, n, "V", v, 1, a->skv, "kv sequence");
}

static int attn_4d(ShapeCtx *c, Node *n, Type q, Type k, Type v, Attn *a)
{
	a->qh = q.dims[1];
	a->sq = q.dims[2];
	a->dh = q.dims[3];
	a->kvh = k.dims[1];
	a->skv = k.dims[2];
	a->dv = v.dims[3];
	const Attr *h = rt_attr_find(&n->attrs, "q_num_heads");
	if (h && h->kind == ATTR_INT && !dim_eq(dim_c(h->i), a->qh))
		return sh_err(c, n, "q_num_heads=%lld but Q %s has %s heads", (long long)h->i, sh_ty(c, q),
			      sh_dim(c, a->qh));
	h = rt_attr_find(&n->attrs, "kv_num_heads");
	if (h && h->kind == ATTR_INT && !dim_eq(dim_c(h->i), a->kvh))
		return sh_err(c, n, "kv_num_heads=%lld but K %s has %s heads", (long long)h->i, sh_ty(c, k),
			      sh_dim(c, a->kvh));
	if (!dim_eq(k.dims[3], a->dh))
		return sh_err(c, n, "head sizes differ: Q is %s, K is %s", sh_ty(c, q), sh_ty(c, k));
	if (want_dim(c, n, "V", v, 1, a->kvh, "kv heads") < 0 || want_dim(c, n, "V", v, 2, a->skv, "kv sequence") < 0)
		return -1;
	return 0;
}

/* past_key [B, kvh, P, dh] and past_value [B, kvh, P, dv]: both or neither; total = P + skv. */
static int attn_past(ShapeCtx *c, Node *n, Attn *a)
{
	const Type *pk = sh_in(n, 4), *pv = sh_in(n, 5);
	a->past = dim_c(0);
	if (!pk && !pv)
		return dim_add(c->m, a->past, a->skv, &a->total) < 0 ? sh_err(c, n, "overflow") : 0;
	if (!pk || !pv)
		return sh_err(c, n, "past_key and past_value must be given together");
	if (pk->rank != 4 || pv->rank != 4)
		return sh_err(c, n, "past_key and past_value must be 4-D [B, kv_heads, past, head], got %s and %s",
			      sh_ty(c, *pk), sh_ty(c, *pv));
	a->past = pk->dims[2];
	Dim want_k[4] = { a->b, a->kvh, a->past, a->dh }, want_v[4] = { a->b, a->kvh, a->past, a->dv };
	static const char *roles[] = { "batch", "kv heads", "past sequence", "head size" };
	for (int i = 0; i < 4; i++)
		if (want_dim(c, n, "past_key", *pk, i, want_k[i], roles[i]) < 0 ||
		    want_dim(c, n, "past_value", *pv, i, want_v[i], roles[i]) < 0)
			return -1;
	/* the cache is K's and V's dtype, or an FP8 cache (--kv-format fp8): the new rows are rounded
	 * to it and present_key/present_value keep it (runtime/kernels/attention.c) */
	if ((!kv_cache_fmt(n, 1, 4) && sh_same_dtype(c, n, 1, 4, "K", "past_key") < 0) ||
	    (!kv_cache_fmt(n, 2, 5) && sh_same_dtype(c, n, 2, 5, "V", "past_value") < 0))
		return -1;
	return dim_add(c->m, a->past, a->skv, &a->total) < 0 ? sh_err(c, n, "overflow") : 0;
}

static int attn_attrs(ShapeCtx *c, Node *n)
{
	int64_t causal = rt_attr_int(&n->attrs, "is_causal", 0);
	int64_t mode = rt_attr_int(&n->attrs, "qk_matmul_output_mode", 0);
	if (causal != 0 && causal != 1)
		return sh_err(c, n, "is_causal must be 0 or 1, got %lld", (long long)causal);
	if (mode < 0 || mode > 3)
		return sh_err(c, n, "qk_matmul_output_mode must be 0..3, got %lld", (long long)mode);
	if (rt_attr_float(&n->attrs, "softcap", 0) < 0)
		return sh_err(c, n, "softcap must be >= 0, got %g", rt_attr_float(&n->attrs, "softcap", 0));
	return 0;
}

/* seq_offsets = [0, l1, l1+l2, ..., S]: packed variable-length sequences (FlashAttention's
 * cu_seqlens), each batch row's S positions holding sequences back to back, attention
 * block-diagonal over them (runtime/kernels/attention.c); needs Q and K/V of one length, no past. */
static int attn_packed(ShapeCtx *c, Node *n, const Attn *a)
{
	int k;
	const int64_t *off = rt_attr_ints(&n->attrs, "seq_offsets", &k);
	if (!off)
		return 0;
	if (n->nin > 4 && n->in[4])
		return sh_err(c, n, "seq_offsets (packed sequences) does not go with past_key/past_value");
	if (!dim_eq(a->sq, a->skv))
		return sh_err(c, n, "seq_offsets needs Q and K/V of one sequence length, got %s and %s", sh_dim(c, a->sq),
			      sh_dim(c, a->skv));
	if (k < 2 || off[0] != 0)
		return sh_err(c, n, "seq_offsets must start at 0 and hold at least one sequence");
	for (int i = 1; i < k; i++)
		if (off[i] <= off[i - 1])
			return sh_err(c, n, "seq_offsets must increase: %lld after %lld", (long long)off[i], (long long)off[i - 1]);
	if (dim_isconst(a->sq) && off[k - 1] != a->sq.k)
		return sh_err(c, n, "seq_offsets ends at %lld, but the sequence length is %s", (long long)off[k - 1],
			      sh_dim(c, a->sq));
	return 0;
}

/* attn_mask: bool or Q's dtype, broadcastable to [B, q_heads, q_seq, total]. */
static int attn_mask(ShapeCtx *c, Node *n, const Attn *a)
{
	const Type *m = sh_in(n, 3);
	if (!m)
		return 0;
	Dim full[4] = { a->b, a->qh, a->sq, a->total };
	if (m->dt != DT_BOOL && m->dt != n->in[0]->type.dt)
		return sh_err(c, n, "attn_mask must be bool or %s, got %s", rt_dtype_name(n->in[0]->type.dt),
			      sh_ty(c, *m));
	if (m->rank < 2 || !sh_unibroadcast_ok(*m, 4, full))
		return sh_err(c, n, "attn_mask %s cannot be broadcast to [%s, %s, %s, %s] (batch, q_heads, q_seq, "
			      "past + kv_seq)", sh_ty(c, *m), sh_dim(c, full[0]), sh_dim(c, full[1]),
			      sh_dim(c, full[2]), sh_dim(c, full[3]));
	return 0;
}

static int attn_outputs(ShapeCtx *c, Node *n, const Attn *a)
{
	DType dt = n->in[0]->type.dt;
	Dim y[4] = { a->b, a->qh, a->sq, a->dv };
	if (a->rank == 3) {
		y[1] = a->sq;
		if (dim_mul(c->m, a->qh, a->dv, &y[2]) < 0)
			return sh_err(c, n, "overflow");
	}
	Dim pk[4] = { a->b, a->kvh, a->total, a->dh }, pv[4] = { a->b, a->kvh, a->total, a->dv };
	Dim qk[4] = { a->b, a->qh, a->sq, a->total };
	const Type *pkt = sh_in(n, 4), *pvt = sh_in(n, 5);
	if (sh_set(c, n, 0, dt, a->rank, y) < 0 || sh_set(c, n, 1, pkt ? pkt->dt : n->in[1]->type.dt, 4, pk) < 0 ||
	    sh_set(c, n, 2, pvt ? pvt->dt : n->in[2]->type.dt, 4, pv) < 0)
		return -1;
	return sh_set(c, n, 3, dt, 4, qk);
}

int shape_attention(ShapeCtx *c, Node *n)
{
	Type q = n->in[0]->type, k = n->in[1]->type, v = n->in[2]->type;
	Attn a;
	memset(&a, 0, sizeof a);
	if (q.rank != k.rank || q.rank != v.rank || (q.rank != 3 && q.rank != 4))
		return sh_err(c, n, "Q, K and V must all be 3-D or all 4-D: Q is %s, K is %s, V is %s",
			      sh_ty(c, q), sh_ty(c, k), sh_ty(c, v));
	if (sh_want_float(c, n, 0, "Q") < 0 || sh_same_dtype(c, n, 0, 1, "Q", "K") < 0 ||
	    sh_want_float(c, n, 2, "V") < 0 || attn_attrs(c, n) < 0)
		return -1;
	a.rank = q.rank;
	a.b = q.dims[0];
	if (want_dim(c, n, "K", k, 0, a.b, "batch") < 0 || want_dim(c, n, "V", v, 0, a.b, "batch") < 0)
		return -1;
	if ((q.rank == 3 ? attn_3d(c, n, q, k, v, &a) : attn_4d(c, n, q, k, v, &a)) < 0)
		return -1;
	Dim g;
	if (dim_div(c->m, a.qh, a.kvh, &g) < 0)
		return sh_err(c, n, "grouped-query attention needs q_heads (%s) divisible by kv_heads (%s)",
			      sh_dim(c, a.qh), sh_dim(c, a.kvh));
	if (attn_past(c, n, &a) < 0 || attn_mask(c, n, &a) < 0 || attn_packed(c, n, &a) < 0)
		return -1;
	return attn_outputs(c, n, &a);
}

/* ---- RotaryEmbedding(X, cos_cache, sin_cache, position_ids?) {interleaved, num_heads,
 * rotary_embedding_dim}: X is [B, H, S, D] or [B, S, H*D] (num_heads given). */
int shape_rotary(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, cs = n->in[1]->type;
	Dim b = x.rank > 0 ? x.dims[0] : dim_c(0), s, d, half;
	if (x.rank != 3 && x.rank != 4)
		return sh_err(c, n, "X must be [B, heads, S, head] or [B, S, hidden], got %s", sh_ty(c, x));
	if (sh_want_float(c, n, 0, "X") < 0 || sh_same_dtype(c, n, 1, 2, "cos_cache", "sin_cache") < 0 ||
	    !ir_type_eq(cs, n->in[2]->type))
		return sh_err(c, n, "cos_cache %s and sin_cache %s must have the same type", sh_ty(c, cs),
			      sh_ty(c, n->in[2]->type));
	s = x.dims[x.rank == 4 ? 2 : 1];
	d = x.dims[x.rank - 1];
	if (x.rank == 3) {
		int64_t h = rt_attr_int(&n->attrs, "num_heads", 0);
		if (h < 1)
			return sh_err(c, n, "3-D X needs attribute num_heads (>= 1)");
		if (dim_div(c->m, x.dims[2], dim_c(h), &d) < 0)
			return sh_err(c, n, "hidden size %s is not divisible by num_heads=%lld", sh_dim(c, x.dims[2]),
				      (long long)h);
	}
	int64_t rot = rt_attr_int(&n->attrs, "rotary_embedding_dim", 0);
	Dim rd = rot ? dim_c(rot) : d;
	if (rot < 0 || (rot && dim_isconst(d) && rot > d.k))
		return sh_err(c, n, "rotary_embedding_dim=%lld must be in 0..%s (the head size)", (long long)rot,
			      sh_dim(c, d));
	if (dim_div(c->m, rd, dim_c(2), &half) < 0)
		return sh_err(c, n, "the rotated size %s must be even", sh_dim(c, rd));
	const Type *pos = sh_in(n, 3);
	if (pos) {
		if (sh_want_int(c, n, 3, "position_ids") < 0)
			return -1;
		if (pos->rank != 2 || !dim_eq(pos->dims[0], b) || !dim_eq(pos->dims[1], s))
			return sh_err(c, n, "position_ids must be [%s, %s], got %s", sh_dim(c, b), sh_dim(c, s),
				      sh_ty(c, *pos));
		if (cs.rank == 2 && x.rank == 3 && !rot && dim_isconst(cs.dims[1]) && dim_isconst(x.dims[2]) &&
		    dim_isconst(d) && !dim_eq(cs.dims[1], half)) {
			/* say what disagrees (newcomer31: a Q from the wrong weight read as "must be [.., 4]") */
			int64_t h = rt_attr_int(&n->attrs, "num_heads", 0), want = 2 * cs.dims[1].k;
			return sh_err(c, n, "cos_cache must be [max_position, %s] with position_ids, got %s: X's "
				      "%lld columns are num_heads=%lld x a head size of %lld, but the table's %lld "
				      "columns are half of a head size of %lld (X %lld = %lld x %lld wide); check "
				      "what computes X (its weight) and num_heads", sh_dim(c, half), sh_ty(c, cs),
				      (long long)x.dims[2].k, (long long)h, (long long)d.k, (long long)cs.dims[1].k,
				      (long long)want, (long long)(h * want), (long long)h, (long long)want);
		}
		if (cs.rank != 2 || !dim_eq(cs.dims[1], half))
			return sh_err(c, n, "cos_cache must be [max_position, %s] with position_ids, got %s",
				      sh_dim(c, half), sh_ty(c, cs));
	} else if (cs.rank != 3 || !dim_eq(cs.dims[0], b) || !dim_eq(cs.dims[1], s) || !dim_eq(cs.dims[2], half))
		return sh_err(c, n, "cos_cache must be [%s, %s, %s] without position_ids, got %s", sh_dim(c, b),
			      sh_dim(c, s), sh_dim(c, half), sh_ty(c, cs));
	return sh_set_type(c, n, 0, x);
}

/* ---- mixture of experts (docs/language.md) ---- */
/* TopKRouter(logits[T, E], bias[E]?) -> weights f32[T, k], experts i64[T, k]. */
int shape_router(ShapeCtx *c, Node *n)
{
	Type l = n->in[0]->type;
	const Type *bias = sh_in(n, 1);
	if (sh_want_rank(c, n, 0, "logits", 2) < 0 || sh_want_float(c, n, 0, "logits") < 0)
		return -1;
	Dim e = l.dims[1];
	if (bias && (bias->rank != 1 || !dim_eq(bias->dims[0], e)))
		return sh_err(c, n, "bias must be [%s] (one per expert), got %s", sh_dim(c, e), sh_ty(c, *bias));
	const char *sc = rt_attr_str(&n->attrs, "scoring", "softmax");
	if (strcmp(sc, "softmax") && strcmp(sc, "sigmoid"))
		return sh_err(c, n, "scoring must be \"softmax\" or \"sigmoid\", got \"%s\"", sc);
	int64_t k = rt_attr_int(&n->attrs, "k", 0), ng = rt_attr_int(&n->attrs, "n_group", 1);
	int64_t tg = rt_attr_int(&n->attrs, "topk_group", 1);
	if (k < 1 || (dim_isconst(e) && k > e.k))
		return sh_err(c, n, "attribute k=%lld must be in 1..%s (the number of experts)", (long long)k,
			      sh_dim(c, e));
	Dim per;
	if (ng < 1 || dim_div(c->m, e, dim_c(ng), &per) < 0)
		return sh_err(c, n, "n_group=%lld must be >= 1 and divide the %s experts", (long long)ng, sh_dim(c, e));
	if (tg < 1 || tg > ng)
		return sh_err(c, n, "topk_group=%lld must be in 1..n_group=%lld", (long long)tg, (long long)ng);
	if (dim_isconst(per) && k > tg * per.k)
		return sh_err(c, n, "k=%lld exceeds the %lld experts of the best %lld groups", (long long)k,
			      (long long)(tg * per.k), (long long)tg);
	Dim d[2] = { l.dims[0], dim_c(k) };
	if (sh_set(c, n, 0, l.dt == DT_F64 ? DT_F64 : DT_F32, 2, d) < 0)   /* f64 logits: f64 weights */
		return -1;
	return sh_set(c, n, 1, DT_I64, 2, d);
}

/* MoEDispatch(x[T, D], experts[T, k]) {num_experts} -> xs[T*k, D], offsets i64[E+1]. */
int shape_dispatch(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, ex = n->in[1]->type;
	int64_t e = rt_attr_int(&n->attrs, "num_experts", 0);
	if (sh_want_rank(c, n, 0, "x", 2) < 0 || sh_want_rank(c, n, 1, "experts", 2) < 0 ||
	    sh_want_int(c, n, 1, "experts") < 0)
		return -1;
	if (!dim_eq(x.dims[0], ex.dims[0]))
		return sh_err(c, n, "x %s and experts %s must have the same number of tokens", sh_ty(c, x),
			      sh_ty(c, ex));
	if (e < 1 || e == INT64_MAX)
		return sh_err(c, n, "attribute num_experts (>= 1) is required");
	Dim d[2] = { dim_c(0), x.dims[1] }, off = dim_c(e + 1);
	if (dim_mul(c->m, ex.dims[0], ex.dims[1], &d[0]) < 0)
		return sh_err(c, n, "overflow");
	if (sh_set(c, n, 0, x.dt, 2, d) < 0)
		return -1;
	return sh_set(c, n, 1, DT_I64, 1, &off);
}

/* GroupedMatMul(xs[R, K], offsets[E+1], w[E, K, N]) -> [R, N]. */
int shape_groupedmm(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type, off = n->in[1]->type, w = n->in[2]->type;
	Dim e1;
	if (sh_want_rank(c, n, 0, "xs", 2) < 0 || sh_want_rank(c, n, 2, "w", 3) < 0 ||
	    sh_want_rank(c, n, 1, "offsets", 1) < 0 || sh_want_int(c, n, 1, "offsets") < 0)
		return -1;
	if (dim_add(c->m, w.dims[0], dim_c(1), &e1) < 0 || !dim_eq(off.dims[0], e1))
		return sh_err(c, n, "offsets %s must have experts + 1 = %s entries (w is %s)", sh_ty(c, off),
			      sh_dim(c, e1), sh_ty(c, w));
	if (!dim_eq(x.dims[1], w.dims[1]))
		return sh_err(c, n, "inner dimensions differ: xs is %s, w is %s", sh_ty(c, x), sh_ty(c, w));
	DType dt = x.dt;
	if (rt_dtypes[w.dt].kind == K_BLOCK || rt_dtypes[x.dt].kind == K_BLOCK || x.dt == w.dt)
		dt = rt_dtypes[x.dt].kind == K_BLOCK ? (rt_dtypes[w.dt].kind == K_BLOCK ? DT_F32 : w.dt) : x.dt;
	else if (rt_dtypes[w.dt].bits > 8 && rt_dtypes[x.dt].bits > 8)
		return sh_err(c, n, "xs and w must have the same dtype: xs is %s, w is %s", sh_ty(c, x), sh_ty(c, w));
	Dim d[2] = { x.dims[0], w.dims[2] };
	return sh_set(c, n, 0, dt, 2, d);
}

/* MoECombine(ys[T*k, D], weights[T, k], experts[T, k]) -> [T, D]. */
int shape_combine(ShapeCtx *c, Node *n)
{
	Type y = n->in[0]->type, w = n->in[1]->type, ex = n->in[2]->type;
	Dim tk;
	if (sh_want_rank(c, n, 0, "ys", 2) < 0 || sh_want_rank(c, n, 1, "weights", 2) < 0 ||
	    sh_want_int(c, n, 2, "experts") < 0 || sh_want_float(c, n, 1, "weights") < 0)
		return -1;
	if (ex.rank != 2 || !dim_eq(ex.dims[0], w.dims[0]) || !dim_eq(ex.dims[1], w.dims[1]))
		return sh_err(c, n, "experts %s must have the shape of weights %s", sh_ty(c, ex), sh_ty(c, w));
	if (dim_mul(c->m, w.dims[0], w.dims[1], &tk) < 0 || !dim_eq(tk, y.dims[0]))
		return sh_err(c, n, "ys %s must have tokens * k = %s rows (weights is %s)", sh_ty(c, y),
			      sh_dim(c, tk), sh_ty(c, w));
	Dim d[2] = { w.dims[0], y.dims[1] };
	return sh_set(c, n, 0, y.dt, 2, d);
}

/* ---- Call: outputs are the callee's; `repeat N` feeds outputs back into the first inputs ---- */
static int call_args(ShapeCtx *c, Node *n, const Graph *g)
{
	if (n->nin != g->nin)
		return sh_err(c, n, "graph %s takes %d inputs, %d given", g->name, g->nin, n->nin);
	if (n->nout != g->nout)
		return sh_err(c, n, "graph %s returns %d outputs, %d bound", g->name, g->nout, n->nout);
	for (int i = 0; i < n->nin; i++)
		if (!n->in[i] || !ir_type_eq(n->in[i]->type, g->inputs[i]->type))
			return sh_err(c, n, "argument %d of graph %s (%s) must be %s, got %s", i, g->name,
				      g->inputs[i]->name, sh_ty(c, g->inputs[i]->type),
				      n->in[i] ? sh_ty(c, n->in[i]->type) : "nothing");
	return 0;
}

int shape_call(ShapeCtx *c, Node *n)
{
	const Graph *g = n->callee;
	if (!g)
		return sh_err(c, n, "call of an unknown graph");
	if (call_args(c, n, g) < 0)
		return -1;
	for (int i = 0; i < g->nout; i++)
		if (g->outputs[i]->type.rank < 0)
			return -1;   /* the callee failed; already reported */
	if (n->repeat < 1)
		return sh_err(c, n, "repeat count must be >= 1, got %lld", (long long)n->repeat);
	for (int i = 0; n->repeat > 1 && i < g->nout; i++)
		if (i >= g->nin || !ir_type_eq(g->outputs[i]->type, g->inputs[i]->type))
			return sh_err(c, n, "repeat %lld needs output %d (%s %s) to have the type of input %d (%s)",
				      (long long)n->repeat, i, g->outputs[i]->name, sh_ty(c, g->outputs[i]->type), i,
				      i < g->nin ? sh_ty(c, g->inputs[i]->type) : "none");
	for (int i = 0; i < g->nout; i++)
		if (sh_set_type(c, n, i, g->outputs[i]->type) < 0)
			return -1;
	return 0;
}
