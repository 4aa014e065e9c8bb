/* runtime/kernels/attention.c: Attention (ONNX opset 23/24) and RotaryEmbedding (opset 23).
 *
 * Attention follows the ONNX reference (onnx/reference/ops/op_attention.py): 3-D inputs
 * (B, S, heads*head_size) are split with q_num_heads/kv_num_heads, 4-D are (B, heads, S, d);
 * past_key/past_value are concatenated in front of K/V and returned as present_key/value
 * (B, kv_heads, P+S_kv, d); query head h reads KV head h / (q_heads/kv_heads) (grouped-query);
 * scores = (Q*sqrt(scale)) @ (K*sqrt(scale))^T, scale defaulting to 1/sqrt(head_size); softcap
 * c > 0 maps scores to c*tanh(scores/c) before the mask; the mask (bool: true attends; float:
 * added) broadcasts to (B, q_heads, S_q, T) and is padded with -inf/false when its last axis is
 * shorter than T; is_causal lets query i see key j iff j <= i + P; seq_offsets (packed sequences,
 * att_segments) only the keys of its own sequence.  qk_matmul_output modes: 0
 * the scaled Q@K^T, 1 after softcap, 2 after the mask, 3 the softmax.
 * A fully masked row (every score -inf) has no defined softmax; this kernel returns
 * probabilities 0 for it, so its output row is 0 (never NaN).
 * Softmax exponentials use kn_exp (libm, or the FA4 exp2 polynomial with opts->exp2_poly).
 * Specs: https://onnx.ai/onnx/operators/onnx__Attention.html,
 * https://onnx.ai/onnx/operators/onnx__RotaryEmbedding.html.
 */
#include "runtime/kernels/kernels_impl.h"

typedef struct Att {
	int64_t B, qh, kvh, Sq, Skv, P, T, hs, vhs;
	int in3d, causal, mode;
	double scale, softcap;
	const int64_t *off;   /* seq_offsets: packed sequences' cumulative offsets (NULL: none) */
	int noff;
	int64_t *seg;         /* with off: per position its sequence's first and end position */
} Att;

/* Packed variable-length sequences (attribute seq_offsets = [0, l1, l1+l2, ..., S], FlashAttention's
 * cu_seqlens): each batch row holds several sequences back to back and a query sees only the keys
 * of its own sequence (block-diagonal; causal within it with is_causal).  Needs Q and K/V of one
 * length S and no past.  Sets t->seg (2 S entries: first, end) or returns -1. */
static int att_segments(const RtKernelArgs *a, Att *t, RtError *e)
{
	t->off = rt_attr_ints(a->attrs, "seq_offsets", &t->noff);
	if (!t->off)
		return 0;
	if (t->P || t->Sq != t->Skv || t->noff < 2 || t->off[0] != 0 || t->off[t->noff - 1] != t->Sq)
		return rt_errorf(e, RT_EUSER, "Attention: seq_offsets must run from 0 to the sequence length %lld "
				 "(Q and K/V of one length, no past)", (long long)t->Sq);
	if (!(t->seg = rt_malloc((size_t)(2 * t->Sq) * sizeof *t->seg)))
		return rt_errorf(e, RT_ENOMEM, "Attention: out of memory");
	for (int k = 0; k + 1 < t->noff; k++) {
		if (t->off[k + 1] <= t->off[k]) {
			rt_free(t->seg);
			t->seg = NULL;
			return rt_errorf(e, RT_EUSER, "Attention: seq_offsets must increase");
		}
		for (int64_t i = t->off[k]; i < t->off[k + 1]; i++)
			t->seg[2 * i] = t->off[k], t->seg[2 * i + 1] = t->off[k + 1];
	}
	return 0;
}

/* Whether query i may see key j (the causal rule and the packed sequences). */
static int att_sees(const Att *t, int64_t i, int64_t j)
{
	if (t->causal && j > i + t->P)
		return 0;
	return !t->seg || (j >= t->seg[2 * i] && j < t->seg[2 * i + 1]);
}

/* Shapes and attributes; checks that the heads and sizes agree. */
static int att_setup(const RtKernelArgs *a, Att *t, RtError *e)
{
	const RtTensor *Q = a->in[0], *K = a->in[1], *V = a->in[2], *pk = kn_in(a, 4), *pv = kn_in(a, 5);
	memset(t, 0, sizeof *t);
	t->in3d = Q->rank == 3;
	if (Q->rank != K->rank || Q->rank != V->rank || (Q->rank != 3 && Q->rank != 4))
		return rt_errorf(e, RT_EUSER, "Attention: Q, K, V must all be 3-D or all 4-D");
	t->B = Q->dims[0];
	if (t->in3d) {
		t->qh = rt_attr_int(a->attrs, "q_num_heads", 0);
		t->kvh = rt_attr_int(a->attrs, "kv_num_heads", 0);
		if (t->qh <= 0 || t->kvh <= 0 || Q->dims[2] % t->qh || K->dims[2] % t->kvh || V->dims[2] % t->kvh)
			return rt_errorf(e, RT_EUSER, "Attention: 3-D inputs need q_num_heads and kv_num_heads dividing the hidden sizes");
		t->Sq = Q->dims[1], t->Skv = K->dims[1];
		t->hs = Q->dims[2] / t->qh;
		t->vhs = V->dims[2] / t->kvh;
		if (K->dims[2] / t->kvh != t->hs)
			return rt_errorf(e, RT_EUSER, "Attention: Q and K head sizes differ");
	} else {
		t->qh = Q->dims[1], t->kvh = K->dims[1];
		t->Sq = Q->dims[2], t->Skv = K->dims[2];
		t->hs = Q->dims[3], t->vhs = V->dims[3];
		if (K->dims[3] != t->hs || V->dims[1] != t->kvh)
			return rt_errorf(e, RT_EUSER, "Attention: Q, K, V shapes disagree");
	}
	if (t->kvh == 0 || t->qh % t->kvh || (t->in3d ? V->dims[1] : V->dims[2]) != t->Skv)
		return rt_errorf(e, RT_EUSER, "Attention: q heads must be a multiple of kv heads, K and V equally long");
	if (!pk != !pv)
		return rt_errorf(e, RT_EUSER, "Attention: past_key and past_value go together");
	if (pk && (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != t->B || pk->dims[1] != t->kvh ||
		   pk->dims[3] != t->hs || pv->dims[1] != t->kvh || pv->dims[2] != pk->dims[2] || pv->dims[3] != t->vhs))
		return rt_errorf(e, RT_EUSER, "Attention: past_key/past_value must be (B, kv_heads, P, head_size)");
	t->P = pk ? pk->dims[2] : 0;
	t->T = t->P + t->Skv;
	t->causal = (int)rt_attr_int(a->attrs, "is_causal", 0);
	t->mode = (int)rt_attr_int(a->attrs, "qk_matmul_output_mode", 0);
	t->scale = rt_attr_float(a->attrs, "scale", 0);
	if (!rt_attr_find(a->attrs, "scale") || t->scale == 0)
		t->scale = 1.0 / sqrt((double)t->hs);
	t->softcap = rt_attr_float(a->attrs, "softcap", 0);
	return att_segments(a, t, e);
}

/* x as (B, heads, S, d) doubles: 3-D (B, S, heads*d) is split and transposed. */
static double *heads4(const RtTensor *x, int in3d, int64_t heads, RtError *e)
{
	double *v = kn_load(x, e), *y;
	if (!v || !in3d)
		return v;
	int64_t dims[4] = { x->dims[0], x->dims[1], heads, x->dims[2] / heads };
	int perm[4] = { 0, 2, 1, 3 };
	if ((y = kn_alloc(x->n, e)))
		kn_transpose(v, 4, dims, perm, y);
	rt_free(v);
	return y;
}

/* Rounds the n values of cur (the new rows of K or V) to the cache's format when the cache
 * `past` is held narrower than `in` (an FP8 KV cache), as kn_finish stores them. */
static void round_rows(const RtTensor *past, const RtTensor *in, double *cur, int64_t n)
{
	if (!past || !cur || past->dtype == in->dtype || rt_dtypes[past->dtype].bits >= rt_dtypes[in->dtype].bits)
		return;
	for (int64_t i = 0; i < n; i++)
		cur[i] = rt_round(past->dtype, (float)cur[i], 0);
}

/* present := concat(past, cur) along the sequence axis: (B, h, P+S, d). */
static double *concat_kv(const RtTensor *past, const double *cur, const Att *t, int64_t d, RtError *e)
{
	double *pv = past ? kn_load(past, e) : NULL, *y = kn_alloc(t->B * t->kvh * t->T * d, e);
	if ((past && !pv) || !y) {
		rt_free(pv), rt_free(y);
		return NULL;
	}
	for (int64_t bh = 0; bh < t->B * t->kvh; bh++) {
		if (t->P)
			memcpy(y + bh * t->T * d, pv + bh * t->P * d, (size_t)(t->P * d) * sizeof *y);
		memcpy(y + (bh * t->T + t->P) * d, cur + bh * t->Skv * d, (size_t)(t->Skv * d) * sizeof *y);
	}
	rt_free(pv);
	return y;
}

/* The additive bias for query (b, h, i) and key j from the mask and the causal rule. */
static double mask_bias(const RtTensor *m, const int64_t *mstr, const Att *t, int64_t b, int64_t h,
			int64_t i, int64_t j)
{
	if (!att_sees(t, i, j))
		return -INFINITY;
	if (!m)
		return 0;
	int64_t ml = m->dims[m->rank - 1];
	int isbool = m->dtype == DT_BOOL;
	if (j >= ml)
		return -INFINITY;   /* a short mask is padded with false / -inf */
	double v = rt_get(m, b * mstr[0] + h * mstr[1] + i * mstr[2] + j * mstr[3]);
	return isbool ? (v != 0 ? 0 : -INFINITY) : v;
}

/* Softmax of one score row; a row whose scores are all -inf gets probabilities 0. */
static void att_softmax(const RtExecOpts *o, int f64, double *row, int64_t n)
{
	double m = -INFINITY;
	for (int64_t j = 0; j < n; j++)
		m = row[j] > m ? row[j] : m;
	if (m == -INFINITY) {
		for (int64_t j = 0; j < n; j++)
			row[j] = 0;
		return;
	}
	kn_softmax_row(o, f64, row, n, 0);
}

typedef struct AttBuf { double *q, *k, *v, *pk, *pv, *y, *s, *qk; } AttBuf;

static void att_free(AttBuf *w)
{
	rt_free(w->q), rt_free(w->k), rt_free(w->v), rt_free(w->pk), rt_free(w->pv);
	rt_free(w->y), rt_free(w->s), rt_free(w->qk);
}

/* Scores, mask, softmax and P@V for one (batch, query head). */
static int att_head(const RtKernelArgs *a, const Att *t, AttBuf *w, const int64_t *mstr,
		    int64_t b, int64_t h, int f64, RtError *e)
{
	const RtTensor *m = kn_in(a, 3);
	int64_t kv = h / (t->qh / t->kvh), Sq = t->Sq, T = t->T;
	const double *q = w->q + (b * t->qh + h) * Sq * t->hs, *k = w->pk + (b * t->kvh + kv) * T * t->hs;
	const double *v = w->pv + (b * t->kvh + kv) * T * t->vhs;
	double *s = w->s, *qk = w->qk ? w->qk + (b * t->qh + h) * Sq * T : NULL;
	if (kn_gemm(a->opts, f64, Sq, T, t->hs, q, t->hs, 0, k, t->hs, 1, s, e) < 0)
		return -1;
	for (int64_t i = 0; i < Sq; i++)
		for (int64_t j = 0; j < T; j++) {
			double *x = &s[i * T + j];
			if (qk && t->mode == 0)
				qk[i * T + j] = *x;
			if (t->softcap > 0)
				*x = kn_acc(f64, t->softcap * kn_acc(f64, tanh(kn_acc(f64, *x / t->softcap))));
			if (qk && t->mode == 1)
				qk[i * T + j] = *x;
			*x = kn_acc(f64, *x + mask_bias(m, mstr, t, b, h, i, j));
			if (qk && t->mode == 2)
				qk[i * T + j] = *x;
		}
	for (int64_t i = 0; i < Sq; i++) {
		att_softmax(a->opts, f64, s + i * T, T);
		if (qk && t->mode == 3)
			memcpy(qk + i * T, s + i * T, (size_t)T * sizeof *s);
	}
	return kn_gemm(a->opts, f64, Sq, t->vhs, T, s, T, 0, v, t->vhs, 0,
		       w->y + (b * t->qh + h) * Sq * t->vhs, e);
}

/* Broadcast strides of the mask over (B, q_heads, S_q, mask_len). */
static int mask_strides(const RtTensor *m, const Att *t, int64_t *str, RtError *e)
{
	if (!m) {
		memset(str, 0, 4 * sizeof *str);
		return 0;
	}
	if (m->rank < 2 || m->rank > 4)
		return rt_errorf(e, RT_EUSER, "Attention: attn_mask must have rank 2 to 4");
	int64_t full[4] = { t->B, t->qh, t->Sq, m->dims[m->rank - 1] };
	for (int k = 0; k < m->rank; k++) {
		int64_t d = m->dims[k], want = full[4 - m->rank + k];
		if (d != 1 && d != want)
			return rt_errorf(e, RT_EUSER, "Attention: attn_mask does not broadcast to (B, heads, S_q, T)");
	}
	if (m->dims[m->rank - 1] > t->T)
		return rt_errorf(e, RT_EUSER, "Attention: attn_mask is longer than the total sequence");
	kn_bstrides(m, 4, full, str);
	return 0;
}

int rk_Attention(const RtKernelArgs *a, RtError *e)
{
	Att t;
	AttBuf w = { 0 };
	int64_t mstr[4];
	if (att_setup(a, &t, e) < 0)
		return -1;
	if (mask_strides(kn_in(a, 3), &t, mstr, e) < 0) {
		rt_free(t.seg);
		return -1;
	}
	int f64 = kn_acc64(a);
	DType dt = a->in[0]->dtype;
	w.q = heads4(a->in[0], t.in3d, t.qh, e);
	w.k = w.q ? heads4(a->in[1], t.in3d, t.kvh, e) : NULL;
	w.v = w.k ? heads4(a->in[2], t.in3d, t.kvh, e) : NULL;
	/* an FP8 cache (past_key/past_value narrower than K/V, --kv-format fp8): the new rows are
	 * stored rounded to it, and attention reads them from the cache as stored */
	if (w.v) {
		round_rows(kn_in(a, 4), a->in[1], w.k, t.B * t.kvh * t.Skv * t.hs);
		round_rows(kn_in(a, 5), a->in[2], w.v, t.B * t.kvh * t.Skv * t.vhs);
	}
	w.pk = w.v ? concat_kv(kn_in(a, 4), w.k, &t, t.hs, e) : NULL;
	w.pv = w.pk ? concat_kv(kn_in(a, 5), w.v, &t, t.vhs, e) : NULL;
	w.y = w.pv ? kn_alloc(t.B * t.qh * t.Sq * t.vhs, e) : NULL;
	w.s = w.y ? kn_alloc(t.Sq * t.T, e) : NULL;
	if (!w.s || (a->nout > 3 && !(w.qk = kn_alloc(t.B * t.qh * t.Sq * t.T, e))))
		goto fail;
	double rs = sqrt(t.scale);   /* the reference scales Q and K by sqrt(scale) each */
	for (int64_t i = 0; i < t.B * t.qh * t.Sq * t.hs; i++)
		w.q[i] = kn_acc(f64, w.q[i] * rs);
	for (int64_t i = 0; i < t.B * t.kvh * t.T * t.hs; i++)
		w.pk[i] = kn_acc(f64, w.pk[i] * rs);
	for (int64_t b = 0; b < t.B; b++)
		for (int64_t h = 0; h < t.qh; h++)
			KN_TRY(att_head(a, &t, &w, mstr, b, h, f64, e));
	int64_t kd[4] = { t.B, t.kvh, t.T, t.hs }, vd[4] = { t.B, t.kvh, t.T, t.vhs };
	int64_t qd[4] = { t.B, t.qh, t.Sq, t.T }, yd[4] = { t.B, t.qh, t.Sq, t.vhs };
	if (t.in3d) {   /* back to (B, S_q, q_heads*v_head_size) */
		int perm[4] = { 0, 2, 1, 3 };
		double *y3 = kn_alloc(t.B * t.qh * t.Sq * t.vhs, e);
		if (!y3)
			goto fail;
		kn_transpose(w.y, 4, yd, perm, y3);
		rt_free(w.y);
		w.y = y3;
		int64_t d3[3] = { t.B, t.Sq, t.qh * t.vhs };
		KN_TRY(kn_out(a, 0, dt, 3, d3, e));
	} else {
		KN_TRY(kn_out(a, 0, dt, 4, yd, e));
	}
	KN_TRY(kn_store(&a->out[0], w.y, a->opts, e));
	if (a->nout > 1) {   /* present_key: unscaled K */
		double *pk = concat_kv(kn_in(a, 4), w.k, &t, t.hs, e);
		DType kdt = kn_in(a, 4) ? kn_in(a, 4)->dtype : dt;
		if (!pk || kn_out(a, 1, kdt, 4, kd, e) < 0 || kn_store(&a->out[1], pk, a->opts, e) < 0) {
			rt_free(pk);
			goto fail;
		}
		rt_free(pk);
	}
	if (a->nout > 2)
		KN_TRY(kn_out(a, 2, kn_in(a, 5) ? kn_in(a, 5)->dtype : dt, 4, vd, e) < 0 ? -1 : kn_store(&a->out[2], w.pv, a->opts, e));
	if (a->nout > 3)
		KN_TRY(kn_out(a, 3, dt, 4, qd, e) < 0 ? -1 : kn_store(&a->out[3], w.qk, a->opts, e));
	att_free(&w);
	rt_free(t.seg);
	return 0;
fail:
	att_free(&w);
	rt_free(t.seg);
	kn_free_outs(a);
	return -1;
}

/* ---- AttentionGrad: the FlashAttention-2 backward (Dao, ICLR 2024, Algorithm 2) ----
 * AttentionGrad(dY, Q, K, V) {Attention's attributes} -> dQ, dK, dV, without past, mask or
 * softcap.  The probabilities are recomputed from Q and K per (batch, head) instead of being
 * stored (the recomputation that makes the backward O(S) in memory): S = scale Q K^T (+ causal
 * -inf, and -inf across packed sequences), P = softmax(S), dV = P^T dY, dP = dY V^T, D_i = sum_j P_ij dP_ij (= rowsum(dY o Y)),
 * dS = P o (dP - D), dQ = scale dS K, dK = scale dS^T Q; a grouped KV head adds the dK, dV of
 * every query head that reads it, in head order.  In double, rounded once at the end. */
int rk_AttentionGrad(const RtKernelArgs *a, RtError *e)
{
	if (a->nin != 4)
		return rt_errorf(e, RT_EUSER, "AttentionGrad: takes dY, Q, K, V (no mask or past)");
	RtKernelArgs f = *a;
	f.in = a->in + 1, f.nin = 3;
	Att t;
	if (att_setup(&f, &t, e) < 0)
		return -1;
	if (t.softcap > 0) {
		rt_free(t.seg);
		return rt_errorf(e, RT_EUSER, "AttentionGrad: softcap is not supported");
	}
	double *dy = heads4(a->in[0], t.in3d, t.qh, e), *q = dy ? heads4(a->in[1], t.in3d, t.qh, e) : NULL;
	double *k = q ? heads4(a->in[2], t.in3d, t.kvh, e) : NULL, *v = k ? heads4(a->in[3], t.in3d, t.kvh, e) : NULL;
	int64_t nq = t.B * t.qh * t.Sq * t.hs, nk = t.B * t.kvh * t.T * t.hs, nv = t.B * t.kvh * t.T * t.vhs;
	double *g = v ? kn_alloc(nq + nk + nv + 2 * t.T, e) : NULL;
	int rc = -1;
	if (!g)
		goto out;
	memset(g, 0, (size_t)(nq + nk + nv) * sizeof *g);
	double *dq = g, *dk = g + nq, *dv = dk + nk, *p = dv + nv, *dp = p + t.T;
	for (int64_t b = 0; b < t.B; b++)
		for (int64_t h = 0; h < t.qh; h++) {
			int64_t kv = h / (t.qh / t.kvh);
			const double *qh = q + (b * t.qh + h) * t.Sq * t.hs, *kh = k + (b * t.kvh + kv) * t.T * t.hs;
			const double *vh = v + (b * t.kvh + kv) * t.T * t.vhs, *gy = dy + (b * t.qh + h) * t.Sq * t.vhs;
			double *gq = dq + (b * t.qh + h) * t.Sq * t.hs, *gk = dk + (b * t.kvh + kv) * t.T * t.hs;
			double *gv = dv + (b * t.kvh + kv) * t.T * t.vhs;
			for (int64_t i = 0; i < t.Sq; i++) {
				double mx = -INFINITY, sum = 0, dsum = 0;
				for (int64_t j = 0; j < t.T; j++) {
					double s = 0;
					for (int64_t d = 0; d < t.hs; d++)
						s += qh[i * t.hs + d] * kh[j * t.hs + d];
					p[j] = att_sees(&t, i, j) ? t.scale * s : -INFINITY;
					mx = p[j] > mx ? p[j] : mx;
				}
				for (int64_t j = 0; j < t.T; j++)
					sum += p[j] = mx == -INFINITY ? 0 : exp(p[j] - mx);
				for (int64_t j = 0; j < t.T; j++) {
					double x = 0;
					p[j] = sum > 0 ? p[j] / sum : 0;
					for (int64_t d = 0; d < t.vhs; d++)
						x += gy[i * t.vhs + d] * vh[j * t.vhs + d];
					dp[j] = x;
					dsum += p[j] * x;
				}
				for (int64_t j = 0; j < t.T; j++) {
					double ds = p[j] * (dp[j] - dsum) * t.scale;
					for (int64_t d = 0; d < t.vhs; d++)
						gv[j * t.vhs + d] += p[j] * gy[i * t.vhs + d];
					for (int64_t d = 0; d < t.hs; d++) {
						gq[i * t.hs + d] += ds * kh[j * t.hs + d];
						gk[j * t.hs + d] += ds * qh[i * t.hs + d];
					}
				}
			}
		}
	const RtTensor *ins[3] = { a->in[1], a->in[2], a->in[3] };
	double *outs[3] = { dq, dk, dv };
	int64_t heads[3] = { t.qh, t.kvh, t.kvh };
	for (int o = 0; o < 3 && o < a->nout; o++) {
		double *y = outs[o], *y3 = NULL;
		if (t.in3d) {   /* (B, h, S, d) back to (B, S, h*d) */
			int64_t d4[4] = { t.B, heads[o], ins[o]->dims[1], ins[o]->dims[2] / heads[o] };
			int perm[4] = { 0, 2, 1, 3 };
			if (!(y3 = kn_alloc(ins[o]->n, e)))
				goto out;
			kn_transpose(y, 4, d4, perm, y3);
			y = y3;
		}
		int bad = kn_out_like(a, o, ins[o]->dtype, ins[o], e) < 0 || kn_store(&a->out[o], y, a->opts, e) < 0;
		rt_free(y3);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		kn_free_outs(a);
	rt_free(dy), rt_free(q), rt_free(k), rt_free(v), rt_free(g), rt_free(t.seg);
	return rc;
}

/* ---- RotaryEmbedding ---- */
/* The cache row of token i (position_ids[i], or i itself without them); -1 with e set and the
 * outputs freed when the position lies beyond the cache. */
static int64_t rope_row(const RtTensor *pos, const RtTensor *cc, int64_t i, const RtKernelArgs *a, RtError *e)
{
	int64_t row = pos ? rt_geti(pos, i) : i;
	if (pos && (row < 0 || row >= cc->dims[0])) {
		kn_free_outs(a);
		rt_errorf(e, RT_EUSER, "RotaryEmbedding: position %lld beyond the cache", (long long)row);
		return -1;
	}
	return row;
}

/* The f32 path of rk_RotaryEmbedding (x, caches and y all f32, no f64 accumulation): the same
 * operations in float.  Each product and difference of two f32 values computed in double and
 * rounded to f32 equals the f32 operation (double's 53 bits are at least 2 x 24 + 2, so the double
 * rounding is harmless: Figueroa, "When is double rounding innocuous?", SIGNUM 30(3), 1995), and
 * -ffp-contract=off keeps them apart: the same bits as the generic path. */
static int rope_f32(const RtTensor *x, const RtTensor *cc, const RtTensor *sc, const RtTensor *pos, RtTensor *y,
		    int64_t B, int64_t H, int64_t S, int64_t hd, int64_t half, int inter, const RtKernelArgs *a,
		    RtError *e)
{
	const float *xv = rt_f32(x), *cv = rt_f32(cc), *sv = rt_f32(sc);
	float *yv = rt_f32(y);
	memcpy(yv, xv, (size_t)x->n * sizeof *yv);
	int r4 = x->rank == 4;
	for (int64_t b = 0; b < B; b++)
		for (int64_t s = 0; s < S; s++) {
			int64_t row = rope_row(pos, cc, b * S + s, a, e);
			if (row < 0)
				return -1;
			const float *c = cv + row * half, *sn = sv + row * half;
			for (int64_t h = 0; h < H; h++) {
				int64_t base = r4 ? ((b * H + h) * S + s) * hd : ((b * S + s) * H + h) * hd;
				const float *xr = xv + base;
				float *yr = yv + base;
				for (int64_t j = 0; j < half; j++) {
					int64_t i1 = inter ? 2 * j : j, i2 = inter ? 2 * j + 1 : j + half;
					float x1 = xr[i1], x2 = xr[i2];
					yr[i1] = c[j] * x1 - sn[j] * x2;
					yr[i2] = sn[j] * x1 + c[j] * x2;
				}
			}
		}
	return 0;
}

int rk_RotaryEmbedding(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *cc = a->in[1], *sc = a->in[2], *pos = kn_in(a, 3);
	int inter = (int)rt_attr_int(a->attrs, "interleaved", 0);
	int64_t nh = rt_attr_int(a->attrs, "num_heads", 0), rd = rt_attr_int(a->attrs, "rotary_embedding_dim", 0);
	if (x->rank != 3 && x->rank != 4)
		return rt_errorf(e, RT_EUSER, "RotaryEmbedding: input must be 3-D or 4-D");
	if (x->rank == 3 && (nh <= 0 || x->dims[2] % nh))
		return rt_errorf(e, RT_EUSER, "RotaryEmbedding: 3-D input needs num_heads dividing the hidden size");
	int64_t B = x->dims[0], H = x->rank == 4 ? x->dims[1] : nh, S = x->rank == 4 ? x->dims[2] : x->dims[1];
	int64_t hd = x->rank == 4 ? x->dims[3] : x->dims[2] / nh;
	rd = rd ? rd : hd;
	int64_t half = rd / 2;
	if (rd > hd || rd % 2 || cc->dims[cc->rank - 1] != half || sc->dims[sc->rank - 1] != half)
		return rt_errorf(e, RT_EUSER, "RotaryEmbedding: caches must have rotary_embedding_dim/2 columns");
	if (pos ? (cc->rank != 2 || pos->n != B * S) : (cc->rank != 3 || cc->dims[0] != B || cc->dims[1] != S))
		return rt_errorf(e, RT_EUSER, "RotaryEmbedding: caches must be (max_pos, d/2) with position_ids, else (B, S, d/2)");
	int f64 = kn_acc64(a);
	if (kn_out_like(a, 0, x->dtype, x, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	if (!f64 && x->dtype == DT_F32 && cc->dtype == DT_F32 && sc->dtype == DT_F32 && y->dtype == DT_F32)
		return rope_f32(x, cc, sc, pos, y, B, H, S, hd, half, inter, a, e);
	for (int64_t i = 0; i < x->n; i++)
		rt_set(y, i, rt_get(x, i));
	for (int64_t b = 0; b < B; b++)
		for (int64_t s = 0; s < S; s++) {
			int64_t row = rope_row(pos, cc, b * S + s, a, e);
			if (row < 0)
				return -1;
			for (int64_t h = 0; h < H; h++) {
				int64_t base = x->rank == 4 ? ((b * H + h) * S + s) * hd : ((b * S + s) * H + h) * hd;
				for (int64_t j = 0; j < half; j++) {
					int64_t i1 = base + (inter ? 2 * j : j), i2 = base + (inter ? 2 * j + 1 : j + half);
					double c = rt_get(cc, row * half + j), sn = rt_get(sc, row * half + j);
					double x1 = rt_get(x, i1), x2 = rt_get(x, i2);
					rt_set(y, i1, kn_acc(f64, kn_acc(f64, c * x1) - kn_acc(f64, sn * x2)));
					rt_set(y, i2, kn_acc(f64, kn_acc(f64, sn * x1) + kn_acc(f64, c * x2)));
				}
			}
		}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}
