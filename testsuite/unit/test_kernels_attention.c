/* testsuite/unit/test_kernels_attention.c: Attention (GQA, causal, past KV, masks, a fully
 * masked row, softcap, 3-D inputs, qk output modes, packed sequences), RotaryEmbedding and the normalisations,
 * against values computed by hand (e = exp(1)). */
#include "testsuite/unit/kernel_test.h"

/* Q (1,2,2,1): head 0 = [1, 0], head 1 = [0, 2]; K (1,1,2,1) = [1, -1]; V = [10, 20]. */
typedef struct Qkv { RtTensor q, k, v; } Qkv;

static Qkv mk_qkv(void)
{
	Qkv t = { KT_T(DT_F32, 4, KT_DIMS(1, 2, 2, 1), KT_VALS(1, 0, 0, 2)),
		  KT_T(DT_F32, 4, KT_DIMS(1, 1, 2, 1), KT_VALS(1, -1)),
		  KT_T(DT_F32, 4, KT_DIMS(1, 1, 2, 1), KT_VALS(10, 20)) };
	return t;
}
static void free_qkv(Qkv *t) { rt_tensor_free(&t->q), rt_tensor_free(&t->k), rt_tensor_free(&t->v); }

#define Y_11 11.1920292   /* 10*s(2) + 20*(1-s(2)), s = sigmoid: scores [1,-1] */
#define Y_10 10.1798621   /* scores [2,-2] */

static void test_attention_gqa(void **state)
{
	Qkv t = mk_qkv();
	RtTensor *in[] = { &t.q, &t.k, &t.v };
	Kt k = kt_run("Attention", in, 3, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 2, 1), KT_VALS(Y_11, 15, 15, Y_10), 1e-6);
	kt_free(&k);
	Attr at[] = { kt_ai("is_causal", 1) };
	Attrs as = { 1, at };
	k = kt_run("Attention", in, 3, 1, &as, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 2, 1), KT_VALS(10, 15, 10, Y_10), 1e-6);
	kt_free(&k);
	free_qkv(&t);
}

static void test_attention_past(void **state)
{
	RtTensor q = KT_T(DT_F32, 4, KT_DIMS(1, 1, 1, 1), KT_VALS(1));
	RtTensor kc = KT_T(DT_F32, 4, KT_DIMS(1, 1, 1, 1), KT_VALS(-1)), vc = KT_T(DT_F32, 4, KT_DIMS(1, 1, 1, 1), KT_VALS(20));
	RtTensor pk = KT_T(DT_F32, 4, KT_DIMS(1, 1, 1, 1), KT_VALS(1)), pv = KT_T(DT_F32, 4, KT_DIMS(1, 1, 1, 1), KT_VALS(10));
	RtTensor *in[] = { &q, &kc, &vc, NULL, &pk, &pv };
	Attr at[] = { kt_ai("is_causal", 1) };   /* the diagonal is offset by the past length */
	Attrs as = { 1, at };
	Kt k = kt_run("Attention", in, 6, 4, &as, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 1), KT_VALS(Y_11), 1e-6);
	kt_expect(&k.out[1], 4, KT_DIMS(1, 1, 2, 1), KT_VALS(1, -1), 0);
	kt_expect(&k.out[2], 4, KT_DIMS(1, 1, 2, 1), KT_VALS(10, 20), 0);
	kt_expect(&k.out[3], 4, KT_DIMS(1, 1, 1, 2), KT_VALS(1, -1), 0);   /* mode 0: scaled QK */
	kt_free(&k);
	rt_tensor_free(&q), rt_tensor_free(&kc), rt_tensor_free(&vc), rt_tensor_free(&pk), rt_tensor_free(&pv);
}

static void test_attention_masks(void **state)
{
	Qkv t = mk_qkv();
	/* additive mask (S_q, T): row 0 cannot see key 1 */
	RtTensor m = KT_T(DT_F32, 2, KT_DIMS(2, 2), KT_VALS(0, -INFINITY, 0, 0));
	RtTensor *in[] = { &t.q, &t.k, &t.v, &m };
	Kt k = kt_run("Attention", in, 4, 1, NULL, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 2, 1), KT_VALS(10, 15, 10, Y_10), 1e-6);
	kt_free(&k);
	/* boolean mask per head (1,2,2,2): head 1 row 1 fully masked -> 0, never NaN */
	RtTensor bm = KT_T(DT_BOOL, 4, KT_DIMS(1, 2, 2, 2), KT_VALS(1, 1, 1, 1, 1, 1, 0, 0));
	in[3] = &bm;
	k = kt_run("Attention", in, 4, 1, NULL, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 2, 1), KT_VALS(Y_11, 15, 15, 0), 1e-6);
	kt_free(&k);
	/* a mask shorter than T is padded with false */
	RtTensor sm = KT_T(DT_BOOL, 2, KT_DIMS(2, 1), KT_VALS(1, 1));
	in[3] = &sm;
	Attr at[] = { kt_ai("qk_matmul_output_mode", 3) };
	Attrs as = { 1, at };
	k = kt_run("Attention", in, 4, 4, &as, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 2, 1), KT_VALS(10, 10, 10, 10), 1e-6);
	kt_expect(&k.out[3], 4, KT_DIMS(1, 2, 2, 2), KT_VALS(1, 0, 1, 0, 1, 0, 1, 0), 1e-7);
	kt_free(&k);
	rt_tensor_free(&m), rt_tensor_free(&bm), rt_tensor_free(&sm);
	free_qkv(&t);
}

static void test_attention_3d_softcap_scale(void **state)
{
	/* 3-D: Q (1, 2, 2) = [s][h]: s0 = (1, 0), s1 = (0, 2) */
	RtTensor q = KT_T(DT_F32, 3, KT_DIMS(1, 2, 2), KT_VALS(1, 0, 0, 2));
	RtTensor kk = KT_T(DT_F32, 3, KT_DIMS(1, 2, 1), KT_VALS(1, -1)), v = KT_T(DT_F32, 3, KT_DIMS(1, 2, 1), KT_VALS(10, 20));
	RtTensor *in[] = { &q, &kk, &v };
	Attr at[] = { kt_ai("q_num_heads", 2), kt_ai("kv_num_heads", 1), kt_af("softcap", 1.0) };
	Attrs as = { 2, at };
	Kt k = kt_run("Attention", in, 3, 3, &as, NULL);
	assert_int_equal(k.rc, 0);
	/* Y (1, S, heads*vhs): s0 = (head0 row0, head1 row0) = (Y_11, 15); s1 = (15, Y_10) */
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 2), KT_VALS(Y_11, 15, 15, Y_10), 1e-6);
	kt_expect(&k.out[1], 4, KT_DIMS(1, 1, 2, 1), KT_VALS(1, -1), 0);
	kt_free(&k);
	as.n = 3;   /* softcap 1: scores tanh(+-1) */
	k = kt_run("Attention", in, 3, 1, &as, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 2), KT_VALS(11.7899250, 15, 15, 11.2696600), 1e-6);
	kt_free(&k);
	Attr sc[] = { kt_ai("q_num_heads", 2), kt_ai("kv_num_heads", 1), kt_af("scale", 0.5) };
	Attrs ss = { 3, sc };
	k = kt_run("Attention", in, 3, 1, &ss, NULL);   /* scores halved: [0.5,-0.5] and [1,-1] */
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 2), KT_VALS(12.6894142, 15, 15, Y_11), 1e-6);
	kt_free(&k);
	rt_tensor_free(&q), rt_tensor_free(&kk), rt_tensor_free(&v);
}

static void test_attention_exp2_poly(void **state)
{
	Qkv t = mk_qkv();
	RtTensor *in[] = { &t.q, &t.k, &t.v };
	RtExecOpts o = { 0 };
	o.mma_in = DT_INVALID;
	o.exp2_poly = 1;   /* degree 1: relative error ~ 6e-2 on 2^f, visible in the output */
	Kt k = kt_run("Attention", in, 3, 1, NULL, &o);
	double d = fabs(rt_f32(&k.out[0])[0] - Y_11);
	assert_true(d > 1e-4 && d < 0.5);
	kt_free(&k);
	o.exp2_poly = 5;
	k = kt_run("Attention", in, 3, 1, NULL, &o);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 2, 1), KT_VALS(Y_11, 15, 15, Y_10), 1e-5);
	kt_free(&k);
	free_qkv(&t);
}

/* Rows a..b of the sequence axis (2) of x (1, h, S, d). */
static RtTensor rows(const RtTensor *x, int64_t a, int64_t b)
{
	int64_t h = x->dims[1], S = x->dims[2], d = x->dims[3];
	RtTensor y = KT_T(x->dtype, 4, KT_DIMS(1, h, b - a, d), NULL);
	for (int64_t k = 0; k < h; k++)
		for (int64_t i = a; i < b; i++)
			for (int64_t j = 0; j < d; j++)
				rt_set(&y, (k * (b - a) + i - a) * d + j, rt_get(x, (k * S + i) * d + j));
	return y;
}

/* Packed variable-length sequences (seq_offsets [0, 2, 5]: two sequences of 2 and 3 tokens in one
 * row of 5), causal, grouped-query (2 query heads over 1 KV head): the packed Attention and
 * AttentionGrad give, row for row, what each sequence gives alone (FlashAttention's varlen
 * kernels against one call per sequence).  In f64: the packed call's softmax and P V sums add
 * exact zeros for the other sequence's keys, so at most the 5-term sums' reassociation differs,
 * 5 u |y| with u = 2^-53 (< 1e-15); the tolerance 1e-13 is that with room. */
static void test_attention_packed(void **state)
{
	double qv[20], kv[10], vv[10], gv[20];
	for (int i = 0; i < 20; i++)
		qv[i] = sin(1.0 + i), gv[i] = cos(0.5 * i);
	for (int i = 0; i < 10; i++)
		kv[i] = cos(2.0 + 0.7 * i), vv[i] = 1 + 0.1 * i * i;
	RtTensor q = KT_T(DT_F64, 4, KT_DIMS(1, 2, 5, 2), qv), k = KT_T(DT_F64, 4, KT_DIMS(1, 1, 5, 2), kv);
	RtTensor v = KT_T(DT_F64, 4, KT_DIMS(1, 1, 5, 2), vv), dy = KT_T(DT_F64, 4, KT_DIMS(1, 2, 5, 2), gv);
	int64_t off[3] = { 0, 2, 5 };
	Attr at[] = { kt_ai("is_causal", 1), kt_ais("seq_offsets", 3, off) };
	Attrs packed = { 2, at }, causal = { 1, at };
	RtTensor *in[] = { &q, &k, &v }, *gin[] = { &dy, &q, &k, &v };
	Kt y = kt_run("Attention", in, 3, 1, &packed, NULL), g = kt_run("AttentionGrad", gin, 4, 3, &packed, NULL);
	assert_int_equal(y.rc, 0);
	assert_int_equal(g.rc, 0);
	for (int s = 0; s < 2; s++) {
		int64_t a = off[s], b = off[s + 1], n = b - a;
		RtTensor qs = rows(&q, a, b), ks = rows(&k, a, b), vs = rows(&v, a, b), ds = rows(&dy, a, b);
		RtTensor *si[] = { &qs, &ks, &vs }, *sg[] = { &ds, &qs, &ks, &vs };
		Kt y1 = kt_run("Attention", si, 3, 1, &causal, NULL), g1 = kt_run("AttentionGrad", sg, 4, 3, &causal, NULL);
		RtTensor yp = rows(&y.out[0], a, b), gq = rows(&g.out[0], a, b), gk = rows(&g.out[1], a, b);
		RtTensor gw = rows(&g.out[2], a, b);
		double want[4][12];
		const RtTensor *ws[4] = { &y1.out[0], &g1.out[0], &g1.out[1], &g1.out[2] }, *got[4] = { &yp, &gq, &gk, &gw };
		for (int o = 0; o < 4; o++) {
			for (int64_t i = 0; i < ws[o]->n; i++)
				want[o][i] = rt_get(ws[o], i);
			kt_expect(got[o], 4, KT_DIMS(1, o == 0 || o == 1 ? 2 : 1, n, 2), want[o], 1e-13);
		}
		kt_free(&y1), kt_free(&g1);
		rt_tensor_free(&qs), rt_tensor_free(&ks), rt_tensor_free(&vs), rt_tensor_free(&ds);
		rt_tensor_free(&yp), rt_tensor_free(&gq), rt_tensor_free(&gk), rt_tensor_free(&gw);
	}
	kt_free(&y), kt_free(&g);
	/* offsets that do not end at the sequence length: a user error, no outputs */
	int64_t bad[3] = { 0, 2, 4 };
	Attr bt[] = { kt_ais("seq_offsets", 3, bad) };
	Attrs bs = { 1, bt };
	y = kt_run("Attention", in, 3, 1, &bs, NULL);
	assert_int_equal(y.rc, -1);
	assert_int_equal(y.err.code, RT_EUSER);
	assert_non_null(strstr(y.err.msg, "seq_offsets"));
	rt_tensor_free(&q), rt_tensor_free(&k), rt_tensor_free(&v), rt_tensor_free(&dy);
}

static void test_rotary(void **state)
{
	RtTensor x = KT_T(DT_F32, 4, KT_DIMS(1, 1, 1, 4), KT_VALS(1, 2, 3, 4));
	RtTensor c = KT_T(DT_F32, 3, KT_DIMS(1, 1, 2), KT_VALS(1, 0)), s = KT_T(DT_F32, 3, KT_DIMS(1, 1, 2), KT_VALS(0, 1));
	RtTensor *in[] = { &x, &c, &s };
	Kt k = kt_run("RotaryEmbedding", in, 3, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 4), KT_VALS(1, -4, 3, 2), 0);
	kt_free(&k);
	Attr at[] = { kt_ai("interleaved", 1) };
	Attrs as = { 1, at };
	k = kt_run("RotaryEmbedding", in, 3, 1, &as, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 4), KT_VALS(1, 2, -4, 3), 0);
	kt_free(&k);
	/* position_ids into a (2, 2) cache; 3-D input with num_heads=1; partial rotation dim 2 */
	RtTensor x3 = KT_T(DT_F32, 3, KT_DIMS(1, 1, 4), KT_VALS(1, 2, 3, 4));
	RtTensor cc = KT_T(DT_F32, 2, KT_DIMS(2, 1), KT_VALS(1, 0)), sc = KT_T(DT_F32, 2, KT_DIMS(2, 1), KT_VALS(0, 1));
	RtTensor pos = KT_T(DT_I64, 2, KT_DIMS(1, 1), KT_VALS(1));
	RtTensor *in3[] = { &x3, &cc, &sc, &pos };
	Attr a3[] = { kt_ai("num_heads", 1), kt_ai("rotary_embedding_dim", 2) };
	Attrs s3 = { 2, a3 };
	k = kt_run("RotaryEmbedding", in3, 4, 1, &s3, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 1, 4), KT_VALS(-2, 1, 3, 4), 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&c), rt_tensor_free(&s), rt_tensor_free(&x3);
	rt_tensor_free(&cc), rt_tensor_free(&sc), rt_tensor_free(&pos);
}

/* The f32 path of RotaryEmbedding against the generic rule written out (each product and
 * difference in double, rounded to f32), bit for bit: 3-D with position_ids and a partial
 * rotation, 4-D with per-row caches, interleaved and not.  Values span 2^-12..2^12 with both
 * signs, so a fused multiply-add or another order would change bits. */
static float rope_val(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	uint32_t r = (uint32_t)(*s >> 33);
	return ldexpf((float)(r & 0xffff) / 65536.0f - 0.5f, (int)((r >> 16) % 24) - 12);
}

static void rope_case(int rank, int inter, int64_t rd)
{
	enum { B = 2, H = 3, S = 5, HD = 8, P = 7 };
	int64_t half = (rd ? rd : HD) / 2;
	uint64_t seed = (uint64_t)(rank * 10 + inter * 100 + rd);
	RtTensor x = rank == 4 ? KT_T(DT_F32, 4, KT_DIMS(B, H, S, HD), NULL) : KT_T(DT_F32, 3, KT_DIMS(B, S, H * HD), NULL);
	RtTensor c = rank == 4 ? KT_T(DT_F32, 3, KT_DIMS(B, S, half), NULL) : KT_T(DT_F32, 2, KT_DIMS(P, half), NULL);
	RtTensor sn = rank == 4 ? KT_T(DT_F32, 3, KT_DIMS(B, S, half), NULL) : KT_T(DT_F32, 2, KT_DIMS(P, half), NULL);
	RtTensor pos = KT_T(DT_I64, 2, KT_DIMS(B, S), NULL);
	for (int64_t i = 0; i < x.n; i++)
		rt_f32(&x)[i] = rope_val(&seed);
	for (int64_t i = 0; i < c.n; i++)
		rt_f32(&c)[i] = rope_val(&seed), rt_f32(&sn)[i] = rope_val(&seed);
	for (int64_t i = 0; i < pos.n; i++)
		rt_i64(&pos)[i] = (i * 3 + 1) % P;
	RtTensor *in[] = { &x, &c, &sn, &pos };
	Attr at[] = { kt_ai("interleaved", inter), kt_ai("num_heads", H), kt_ai("rotary_embedding_dim", rd) };
	Attrs as = { rank == 4 ? 1 : 3, at };
	Kt k = kt_run("RotaryEmbedding", in, rank == 4 ? 3 : 4, 1, &as, NULL);
	assert_int_equal(k.rc, 0);
	const float *xv = rt_f32(&x), *y = rt_f32(&k.out[0]);
	int64_t diff = 0;
	for (int64_t b = 0; b < B; b++)
		for (int64_t s = 0; s < S; s++)
			for (int64_t h = 0; h < H; h++) {
				int64_t row = rank == 4 ? b * S + s : rt_i64(&pos)[b * S + s];
				int64_t base = rank == 4 ? ((b * H + h) * S + s) * HD : ((b * S + s) * H + h) * HD;
				float want[HD];
				memcpy(want, xv + base, sizeof want);
				for (int64_t j = 0; j < half; j++) {
					int64_t i1 = inter ? 2 * j : j, i2 = inter ? 2 * j + 1 : j + half;
					double cj = rt_f32(&c)[row * half + j], sj = rt_f32(&sn)[row * half + j];
					double x1 = xv[base + i1], x2 = xv[base + i2];
					want[i1] = (float)((double)(float)(cj * x1) - (double)(float)(sj * x2));
					want[i2] = (float)((double)(float)(sj * x1) + (double)(float)(cj * x2));
				}
				diff += memcmp(want, y + base, sizeof want) != 0;
			}
	assert_int_equal(diff, 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&c), rt_tensor_free(&sn), rt_tensor_free(&pos);
}

static void test_rotary_f32_bits(void **state)
{
	for (int inter = 0; inter < 2; inter++) {
		rope_case(3, inter, 0);
		rope_case(3, inter, 6);
		rope_case(4, inter, 0);
	}
	/* a position beyond the cache: a user error on the f32 path (and no outputs) */
	RtTensor x = KT_T(DT_F32, 3, KT_DIMS(1, 1, 4), KT_VALS(1, 2, 3, 4));
	RtTensor c = KT_T(DT_F32, 2, KT_DIMS(2, 2), NULL), sn = KT_T(DT_F32, 2, KT_DIMS(2, 2), NULL);
	RtTensor pos = KT_T(DT_I64, 2, KT_DIMS(1, 1), KT_VALS(2));
	RtTensor *in[] = { &x, &c, &sn, &pos };
	Attr at[] = { kt_ai("num_heads", 1) };
	Attrs as = { 1, at };
	Kt k = kt_run("RotaryEmbedding", in, 4, 1, &as, NULL);
	assert_int_equal(k.rc, -1);
	assert_non_null(strstr(k.err.msg, "position 2 beyond the cache"));
	assert_null(k.out[0].data);
	rt_tensor_free(&x), rt_tensor_free(&c), rt_tensor_free(&sn), rt_tensor_free(&pos);
}

static void test_norms(void **state)
{
	RtTensor x = KT_T(DT_F32, 2, KT_DIMS(1, 4), KT_VALS(1, 2, 3, 4));
	RtTensor s = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(2, 2, 2, 2)), b = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(1, 1, 1, 1));
	RtTensor *in[] = { &x, &s, &b };
	Kt k = kt_run("LayerNormalization", in, 3, 3, NULL, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 2, KT_DIMS(1, 4), KT_VALS(-1.6832738, 0.1055754, 1.8944246, 3.6832738), 1e-5);
	kt_expect(&k.out[1], 2, KT_DIMS(1, 1), KT_VALS(2.5), 0);
	kt_expect(&k.out[2], 2, KT_DIMS(1, 1), KT_VALS(0.8944236), 1e-6);
	kt_free(&k);
	k = kt_run("RMSNormalization", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(1, 4), KT_VALS(0.7302963, 1.4605926, 2.1908889, 2.9211852), 1e-5);
	kt_free(&k);
	/* GroupNorm: X (1, 2, 2), one group over everything = LayerNorm of [1,2,3,4] */
	RtTensor xg = KT_T(DT_F32, 3, KT_DIMS(1, 2, 2), KT_VALS(1, 2, 3, 4));
	RtTensor sg = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1, 2)), bg = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(0, 1));
	RtTensor *gin[] = { &xg, &sg, &bg };
	Attr ga[] = { kt_ai("num_groups", 1) };
	Attrs gs = { 1, ga };
	k = kt_run("GroupNormalization", gin, 3, 1, &gs, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 2), KT_VALS(-1.3416355, -0.4472118, 1.8944236, 3.6832710), 1e-5);
	kt_free(&k);
	RtTensor m = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1, 3)), v = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(4, 0.25));
	RtTensor *bn[] = { &xg, &sg, &bg, &m, &v };
	Attr ba[] = { kt_af("epsilon", 0) };
	Attrs bs = { 1, ba };
	k = kt_run("BatchNormalization", bn, 5, 1, &bs, NULL);
	/* c0: (x-1)/2*1+0; c1: (x-3)/0.5*2+1 */
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 2), KT_VALS(0, 0.5, 1, 5), 1e-6);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&s), rt_tensor_free(&b), rt_tensor_free(&xg);
	rt_tensor_free(&sg), rt_tensor_free(&bg), rt_tensor_free(&m), rt_tensor_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attention_gqa), cmocka_unit_test(test_attention_past),
		cmocka_unit_test(test_attention_masks), cmocka_unit_test(test_attention_3d_softcap_scale),
		cmocka_unit_test(test_attention_exp2_poly), cmocka_unit_test(test_attention_packed),
		cmocka_unit_test(test_rotary), cmocka_unit_test(test_rotary_f32_bits),
		cmocka_unit_test(test_norms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
