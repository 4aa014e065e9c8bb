/* testsuite/unit/test_kernels_moe.c: the MoE pipeline (router -> dispatch -> grouped matmul ->
 * combine equals the dense per-token mixture), Embedding, shape/data-movement kernels and
 * quantization kernels, against hand-computed values. */
#include "testsuite/unit/kernel_test.h"

static void test_router(void **state)
{
	RtTensor lg = KT_T(DT_F32, 2, KT_DIMS(1, 3), KT_VALS(1, 2, 3));
	RtTensor *in[] = { &lg };
	Attr at[] = { kt_ai("k", 2) };
	Attrs as = { 1, at };
	Kt k = kt_run("TopKRouter", in, 1, 2, &as, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 2, KT_DIMS(1, 2), KT_VALS(0.7310586, 0.2689414), 1e-6);
	kt_expect(&k.out[1], 2, KT_DIMS(1, 2), KT_VALS(2, 1), 0);
	kt_free(&k);
	/* sigmoid scoring, bias steers selection only, grouped selection, scale */
	RtTensor z = KT_T(DT_F32, 2, KT_DIMS(1, 4), KT_VALS(0, 0, 0, 1));
	RtTensor bias = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(0, 0.5, 0, 0.1));
	RtTensor *zin[] = { &z, &bias };
	Attr sa[] = { kt_ai("k", 2), kt_as("scoring", "sigmoid"), kt_ai("n_group", 2), kt_ai("topk_group", 1),
		      kt_af("scale", 2.5) };
	Attrs ss = { 5, sa };
	k = kt_run("TopKRouter", zin, 2, 2, &ss, NULL);
	/* sel = [.5, 1, .5, .831]: group 0 scores 1.5, group 1 1.331 -> experts 1 then 0 */
	kt_expect(&k.out[1], 2, KT_DIMS(1, 2), KT_VALS(1, 0), 0);
	kt_expect(&k.out[0], 2, KT_DIMS(1, 2), KT_VALS(1.25, 1.25), 1e-6);
	kt_free(&k);
	rt_tensor_free(&lg), rt_tensor_free(&z), rt_tensor_free(&bias);
}

static void test_moe_pipeline(void **state)
{
	enum { T = 5, D = 3, E = 4, K = 2, N = 2 };
	double xv[T * D], lv[T * E], wv[E * D * N];
	for (int i = 0; i < T * D; i++)
		xv[i] = (i * 7 % 11) - 5;
	for (int i = 0; i < T * E; i++)
		lv[i] = (i * 5 % 13) * 0.25;
	for (int i = 0; i < E * D * N; i++)
		wv[i] = (i * 3 % 7) - 3;
	RtTensor x = KT_T(DT_F32, 2, KT_DIMS(T, D), xv), lg = KT_T(DT_F32, 2, KT_DIMS(T, E), lv);
	RtTensor w = KT_T(DT_F32, 3, KT_DIMS(E, D, N), wv);
	RtTensor *rin[] = { &lg };
	Attr ra[] = { kt_ai("k", K), kt_ai("num_experts", E) };
	Attrs rs = { 2, ra };
	Kt r = kt_run("TopKRouter", rin, 1, 2, &rs, NULL);
	RtTensor *din[] = { &x, &r.out[1] };
	Kt d = kt_run("MoEDispatch", din, 2, 2, &rs, NULL);
	assert_int_equal(d.rc, 0);
	assert_int_equal(rt_i64(&d.out[1])[E], T * K);
	for (int e = 0; e < E; e++)   /* rows of expert e are exactly its (t, j) pairs */
		for (int64_t row = rt_i64(&d.out[1])[e]; row < rt_i64(&d.out[1])[e + 1]; row++) {
			int found = 0;
			for (int p = 0; p < T * K; p++)
				found |= rt_i64(&r.out[1])[p] == e && memcmp(rt_f32(&d.out[0]) + row * D,
									    rt_f32(&x) + (p / K) * D, D * sizeof(float)) == 0;
			assert_true(found);
		}
	RtTensor *gin[] = { &d.out[0], &d.out[1], &w };
	Kt g = kt_run("GroupedMatMul", gin, 3, 1, NULL, NULL);
	assert_int_equal(g.rc, 0);
	RtTensor *cin[] = { &g.out[0], &r.out[0], &r.out[1] };
	Kt c = kt_run("MoECombine", cin, 3, 1, &rs, NULL);
	assert_int_equal(c.rc, 0);
	double want[T * N] = { 0 };
	for (int t = 0; t < T; t++)
		for (int j = 0; j < K; j++) {
			int64_t e = rt_i64(&r.out[1])[t * K + j];
			double wt = rt_f32(&r.out[0])[t * K + j];
			for (int n = 0; n < N; n++) {
				double s = 0;
				for (int q = 0; q < D; q++)
					s += xv[t * D + q] * wv[(e * D + q) * N + n];
				want[t * N + n] += wt * s;
			}
		}
	kt_expect(&c.out[0], 2, KT_DIMS(T, N), want, 1e-6);
	kt_free(&r), kt_free(&d), kt_free(&g), kt_free(&c);
	rt_tensor_free(&x), rt_tensor_free(&lg), rt_tensor_free(&w);
}

/* Without num_experts, MoECombine counts one more expert than the largest id, wherever the
 * largest id appears (it used to stop at the first id: "expert 2 outside [0, 1)"). */
static void test_combine_infers_experts(void **state)
{
	RtTensor ys = KT_T(DT_F32, 2, KT_DIMS(4, 1), KT_VALS(10, 20, 30, 40));
	RtTensor wt = KT_T(DT_F32, 2, KT_DIMS(2, 2), KT_VALS(1, 0.5, 2, 0.25));
	RtTensor ex = KT_T(DT_I64, 2, KT_DIMS(2, 2), KT_VALS(0, 2, 1, 0));
	RtTensor *in[] = { &ys, &wt, &ex };
	Kt k = kt_run("MoECombine", in, 3, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	/* rows in expert order: (t0,e0)=10, (t1,e0)=20, (t1,e1)=30, (t0,e2)=40 */
	kt_expect(&k.out[0], 2, KT_DIMS(2, 1), KT_VALS(1 * 10 + 0.5 * 40, 2 * 30 + 0.25 * 20), 0);
	kt_free(&k);
	rt_tensor_free(&ys), rt_tensor_free(&wt), rt_tensor_free(&ex);
}

static void test_embedding_swiglu(void **state)
{
	RtTensor tab = KT_T(DT_F32, 2, KT_DIMS(3, 2), KT_VALS(0, 1, 10, 11, 20, 21));
	RtTensor ids = KT_T(DT_I64, 2, KT_DIMS(1, 2), KT_VALS(2, 0));
	RtTensor *in[] = { &tab, &ids };
	Kt k = kt_run("Embedding", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 2), KT_VALS(20, 21, 0, 1), 0);
	kt_free(&k);
	rt_i64(&ids)[0] = 3;
	k = kt_run("Embedding", in, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, -1);
	RtTensor g = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(0, 1)), u = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(5, 2));
	RtTensor *sw[] = { &g, &u };
	k = kt_run("SwiGLU", sw, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(0, 2 * 0.7310586), 1e-6);
	kt_free(&k);
	rt_tensor_free(&tab), rt_tensor_free(&ids), rt_tensor_free(&g), rt_tensor_free(&u);
}

static void test_shape_ops(void **state)
{
	RtTensor x = KT_T(DT_I64, 1, KT_DIMS(10), KT_VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
	RtTensor st = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(-1)), en = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(-100));
	RtTensor ax = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(0)), sp = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(-2));
	RtTensor *sl[] = { &x, &st, &en, &ax, &sp };
	Kt k = kt_run("Slice", sl, 5, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(9, 7, 5, 3, 1), 0);
	kt_free(&k);
	RtTensor gi = KT_T(DT_I64, 2, KT_DIMS(2, 1), KT_VALS(-1, 0));
	RtTensor *ga[] = { &x, &gi };
	k = kt_run("Gather", ga, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 1), KT_VALS(9, 0), 0);
	kt_free(&k);
	RtTensor s3 = KT_T(DT_I64, 1, KT_DIMS(3), KT_VALS(0, -1, 5));
	RtTensor x2 = KT_T(DT_F32, 2, KT_DIMS(2, 5), KT_VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
	RtTensor *rs[] = { &x2, &s3 };
	k = kt_run("Reshape", rs, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(2, 1, 5), KT_VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), 0);
	kt_free(&k);
	RtTensor *tr[] = { &x2 };
	k = kt_run("Transpose", tr, 1, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(5, 2), KT_VALS(0, 5, 1, 6, 2, 7, 3, 8, 4, 9), 0);
	kt_free(&k);
	Attr sa[] = { kt_ai("axis", -1) };
	Attrs ss = { 1, sa };
	k = kt_run("Split", tr, 1, 2, &ss, NULL);   /* 5 into 2: 3 + 2 */
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(0, 1, 2, 5, 6, 7), 0);
	kt_expect(&k.out[1], 2, KT_DIMS(2, 2), KT_VALS(3, 4, 8, 9), 0);
	kt_free(&k);
	RtTensor *cc[] = { &x2, &x2 };
	Attr ca[] = { kt_ai("axis", 0) };
	Attrs cs = { 1, ca };
	k = kt_run("Concat", cc, 2, 1, &cs, NULL);
	assert_int_equal(k.out[0].dims[0], 4);
	assert_true(rt_f32(&k.out[0])[19] == 9);
	kt_free(&k);
	RtTensor p = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(1, 2, 3)), pads = KT_T(DT_I64, 1, KT_DIMS(2), KT_VALS(2, 2));
	RtTensor *pd[] = { &p, &pads };
	Attr pm[] = { kt_as("mode", "reflect") };
	Attrs ps = { 1, pm };
	k = kt_run("Pad", pd, 2, 1, &ps, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(7), KT_VALS(3, 2, 1, 2, 3, 2, 1), 0);
	kt_free(&k);
	pm[0] = kt_as("mode", "edge");
	k = kt_run("Pad", pd, 2, 1, &ps, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(7), KT_VALS(1, 1, 1, 2, 3, 3, 3), 0);
	kt_free(&k);
	RtTensor sq = KT_T(DT_F32, 2, KT_DIMS(3, 3), KT_VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
	RtTensor kk = KT_T(DT_I64, 0, NULL, KT_VALS(-1));
	RtTensor *tl[] = { &sq, &kk };
	Attr ta[] = { kt_ai("upper", 0) };
	Attrs ts = { 1, ta };
	k = kt_run("Trilu", tl, 2, 1, &ts, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(3, 3), KT_VALS(0, 0, 0, 4, 0, 0, 7, 8, 0), 0);
	kt_free(&k);
	RtTensor r0 = KT_T(DT_F32, 0, NULL, KT_VALS(1)), r1 = KT_T(DT_F32, 0, NULL, KT_VALS(2)), r2 = KT_T(DT_F32, 0, NULL, KT_VALS(0.3));
	RtTensor *rg[] = { &r0, &r1, &r2 };
	k = kt_run("Range", rg, 3, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(1, 1.3, 1.6, 1.9), 1e-6);
	kt_free(&k);
	RtTensor rep = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(2));
	RtTensor *ti[] = { &p, &rep };
	k = kt_run("Tile", ti, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(6), KT_VALS(1, 2, 3, 1, 2, 3), 0);
	kt_free(&k);
	RtTensor es = KT_T(DT_I64, 1, KT_DIMS(2), KT_VALS(2, 1));
	RtTensor *ex[] = { &p, &es };
	k = kt_run("Expand", ex, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 1, 2, 3), 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&st), rt_tensor_free(&en), rt_tensor_free(&ax), rt_tensor_free(&sp);
	rt_tensor_free(&gi), rt_tensor_free(&s3), rt_tensor_free(&x2), rt_tensor_free(&p), rt_tensor_free(&pads);
	rt_tensor_free(&sq), rt_tensor_free(&kk), rt_tensor_free(&r0), rt_tensor_free(&r1), rt_tensor_free(&r2);
	rt_tensor_free(&rep), rt_tensor_free(&es);
}

static void test_quant_ops(void **state)
{
	RtTensor x = KT_T(DT_F32, 1, KT_DIMS(5), KT_VALS(0, 1.5, 2.5, -1, 300));
	RtTensor s = KT_T(DT_F32, 0, NULL, KT_VALS(1)), zp = KT_T(DT_U8, 0, NULL, KT_VALS(128));
	RtTensor *in[] = { &x, &s, &zp };
	Kt k = kt_run("QuantizeLinear", in, 3, 1, NULL, NULL);
	assert_int_equal(k.out[0].dtype, DT_U8);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(128, 130, 130, 127, 255), 0);   /* RNE, saturate */
	RtTensor *dq[] = { &k.out[0], &s, &zp };
	Kt d = kt_run("DequantizeLinear", dq, 3, 1, NULL, NULL);
	kt_expect(&d.out[0], 1, KT_DIMS(5), KT_VALS(0, 2, 2, -1, 127), 0);
	kt_free(&k), kt_free(&d);
	/* blocked: x (1, 4), block 2 along axis 1, i8 output */
	RtTensor xb = KT_T(DT_F32, 2, KT_DIMS(1, 4), KT_VALS(1, 2, 30, 40));
	RtTensor sb = KT_T(DT_F32, 2, KT_DIMS(1, 2), KT_VALS(0.5, 10)), zb = KT_T(DT_I8, 2, KT_DIMS(1, 2), KT_VALS(0, -1));
	RtTensor *bin[] = { &xb, &sb, &zb };
	Attr ba[] = { kt_ai("axis", 1), kt_ai("block_size", 2) };
	Attrs bs = { 2, ba };
	k = kt_run("QuantizeLinear", bin, 3, 1, &bs, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(1, 4), KT_VALS(2, 4, 2, 3), 0);
	kt_free(&k);
	/* per-axis dequantization */
	RtTensor q = KT_T(DT_I8, 2, KT_DIMS(2, 2), KT_VALS(1, 2, 3, 4)), sa = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1, 0.5));
	RtTensor *pin[] = { &q, &sa };
	Attr pa[] = { kt_ai("axis", 0) };
	Attrs ps = { 1, pa };
	k = kt_run("DequantizeLinear", pin, 2, 1, &ps, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 2), KT_VALS(1, 2, 1.5, 2), 0);
	kt_free(&k);
	/* ONNX's own example for DynamicQuantizeLinear */
	RtTensor dx = KT_T(DT_F32, 1, KT_DIMS(6), KT_VALS(0, 2, -3, -2.5, 1.34, 0.5));
	RtTensor *din[] = { &dx };
	k = kt_run("DynamicQuantizeLinear", din, 1, 3, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(6), KT_VALS(153, 255, 0, 26, 221, 179), 0);
	kt_expect(&k.out[1], 0, NULL, KT_VALS(0.019607844), 1e-7);
	kt_expect(&k.out[2], 0, NULL, KT_VALS(153), 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&s), rt_tensor_free(&zp), rt_tensor_free(&xb), rt_tensor_free(&sb);
	rt_tensor_free(&zb), rt_tensor_free(&q), rt_tensor_free(&sa), rt_tensor_free(&dx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_router), cmocka_unit_test(test_moe_pipeline),
		cmocka_unit_test(test_combine_infers_experts),
		cmocka_unit_test(test_embedding_swiglu), cmocka_unit_test(test_shape_ops),
		cmocka_unit_test(test_quant_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
