/* testsuite/unit/test_kernels_elementwise.c: elementwise and reduction kernels against
 * hand-computed values: broadcasting, integer semantics, zero-size, negative axes, stable
 * softmax, TopK ties, CumSum, Cast, and the dispatch table itself. */
#include "testsuite/unit/kernel_test.h"
#include "runtime/kernels/kernels_impl.h"

static void test_dispatch_table(void **state)
{
	for (int i = 0; i < RT_OP_COUNT; i++) {
		assert_non_null(rt_kernel((RtOp)i));
		assert_int_equal(rt_op_lookup(rt_op_name((RtOp)i)), i);
	}
	assert_int_equal(rt_op_lookup("NoSuchOp"), RT_OP_COUNT);
	Kt k = kt_run("Call", NULL, 0, 0, NULL, NULL);
	assert_int_equal(k.rc, -1);
	assert_non_null(strstr(k.err.msg, "expanded"));
}

static void test_add_broadcast(void **state)
{
	RtTensor a = KT_T(DT_F32, 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 4, 5, 6));
	RtTensor b = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(10, 20, 30));
	RtTensor *in[] = { &a, &b };
	Kt k = kt_run("Add", in, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(11, 22, 33, 14, 25, 36), 0);
	kt_free(&k);
	/* (2,1) with (1,3) -> (2,3) */
	RtTensor c = KT_T(DT_F32, 2, KT_DIMS(2, 1), KT_VALS(1, 2));
	RtTensor d = KT_T(DT_F32, 2, KT_DIMS(1, 3), KT_VALS(10, 20, 30));
	RtTensor *in2[] = { &c, &d };
	k = kt_run("Sub", in2, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(-9, -19, -29, -8, -18, -28), 0);
	kt_free(&k);
	/* incompatible */
	RtTensor *in3[] = { &a, &d };
	RtTensor f = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1, 2));
	in3[1] = &f;
	k = kt_run("Mul", in3, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, -1);
	assert_non_null(strstr(k.err.msg, "broadcast"));
	rt_tensor_free(&a), rt_tensor_free(&b), rt_tensor_free(&c), rt_tensor_free(&d), rt_tensor_free(&f);
}

static void test_int_arith(void **state)
{
	RtTensor a = KT_T(DT_I64, 1, KT_DIMS(4), KT_VALS(7, -7, 7, -7));
	RtTensor b = KT_T(DT_I64, 1, KT_DIMS(4), KT_VALS(2, 2, -2, -2));
	RtTensor *in[] = { &a, &b };
	Kt k = kt_run("Div", in, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	assert_int_equal(k.out[0].dtype, DT_I64);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(3, -3, -3, 3), 0);   /* truncating */
	kt_free(&k);
	k = kt_run("Pow", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(49, 49, 0, 0), 0);
	kt_free(&k);
	/* exact beyond 2^53 */
	RtTensor big = KT_T(DT_I64, 0, NULL, NULL), one = KT_T(DT_I64, 0, NULL, NULL);
	rt_i64(&big)[0] = (INT64_C(1) << 60) + 1;
	rt_i64(&one)[0] = 2;
	RtTensor *in2[] = { &big, &one };
	k = kt_run("Add", in2, 2, 1, NULL, NULL);
	assert_int_equal(rt_i64(&k.out[0])[0], (INT64_C(1) << 60) + 3);
	kt_free(&k);
	/* i8 wraps */
	RtTensor c = KT_T(DT_I8, 1, KT_DIMS(1), KT_VALS(100)), d = KT_T(DT_I8, 1, KT_DIMS(1), KT_VALS(100));
	RtTensor *in3[] = { &c, &d };
	k = kt_run("Add", in3, 2, 1, NULL, NULL);
	assert_int_equal(rt_i64(&k.out[0])[0], -56);
	kt_free(&k);
	/* division by zero is an error, not a crash */
	rt_i64(&b)[1] = 0;
	k = kt_run("Div", in, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, -1);
	rt_tensor_free(&a), rt_tensor_free(&b), rt_tensor_free(&big), rt_tensor_free(&one);
	rt_tensor_free(&c), rt_tensor_free(&d);
}

static void test_unary(void **state)
{
	RtTensor x = KT_T(DT_F32, 1, KT_DIMS(5), KT_VALS(-2.5, -0.5, 0, 0.5, 2.5));
	RtTensor *in[] = { &x };
	Kt k = kt_run("Round", in, 1, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(-2, -0, 0, 0, 2), 0);   /* half to even */
	kt_free(&k);
	k = kt_run("Relu", in, 1, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(0, 0, 0, 0.5, 2.5), 0);
	kt_free(&k);
	Attr at[] = { kt_af("alpha", 0.1) };
	Attrs as = { 1, at };
	k = kt_run("LeakyRelu", in, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(-0.25, -0.05, 0, 0.5, 2.5), 1e-7);
	kt_free(&k);
	k = kt_run("Gelu", in, 1, 1, NULL, NULL);
	/* 0.5*x*(1+erf(x/sqrt2)) */
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(-0.0155251, -0.1542687, 0, 0.3457313, 2.4844749), 1e-6);
	kt_free(&k);
	k = kt_run("Sigmoid", in, 1, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(0.0758582, 0.3775407, 0.5, 0.6224593, 0.9241418), 1e-6);
	kt_free(&k);
	rt_tensor_free(&x);
	RtTensor z = KT_T(DT_F32, 2, KT_DIMS(0, 3), NULL);   /* zero-size */
	RtTensor *zin[] = { &z };
	k = kt_run("Exp", zin, 1, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	assert_int_equal(k.out[0].n, 0);
	assert_int_equal(k.out[0].dims[1], 3);
	kt_free(&k);
	rt_tensor_free(&z);
}

static void test_variadic_where_clip(void **state)
{
	RtTensor a = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(1, 5, NAN));
	RtTensor b = KT_T(DT_F32, 2, KT_DIMS(2, 1), KT_VALS(2, 4));
	RtTensor *in[] = { &a, &b };
	Kt k = kt_run("Max", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(2, 5, NAN, 4, 5, NAN), 0);
	kt_free(&k);
	k = kt_run("Mean", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(1.5, 3.5, NAN, 2.5, 4.5, NAN), 0);
	kt_free(&k);
	RtTensor c = KT_T(DT_BOOL, 1, KT_DIMS(3), KT_VALS(1, 0, 1));
	RtTensor *w[] = { &c, &a, &b };
	k = kt_run("Where", w, 3, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(1, 2, NAN, 1, 4, NAN), 0);
	kt_free(&k);
	RtTensor lo = KT_T(DT_F32, 0, NULL, KT_VALS(2)), x = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(1, 3, 9));
	RtTensor *cl[] = { &x, &lo, NULL };
	k = kt_run("Clip", cl, 3, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(3), KT_VALS(2, 3, 9), 0);
	kt_free(&k);
	RtTensor *cmp[] = { &x, &lo };
	k = kt_run("Greater", cmp, 2, 1, NULL, NULL);
	assert_int_equal(k.out[0].dtype, DT_BOOL);
	kt_expect(&k.out[0], 1, KT_DIMS(3), KT_VALS(0, 1, 1), 0);
	kt_free(&k);
	rt_tensor_free(&a), rt_tensor_free(&b), rt_tensor_free(&c), rt_tensor_free(&lo), rt_tensor_free(&x);
}

static void test_cast(void **state)
{
	RtTensor x = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(-2.7, 2.7, 0, 300.5));
	RtTensor *in[] = { &x };
	Attr at[] = { kt_ai("to", 7) };   /* ONNX INT64 */
	Attrs as = { 1, at };
	Kt k = kt_run("Cast", in, 1, 1, &as, NULL);
	assert_int_equal(k.out[0].dtype, DT_I64);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(-2, 2, 0, 300), 0);   /* toward zero */
	kt_free(&k);
	Attr at2[] = { kt_as("to", "bool") };
	Attrs as2 = { 1, at2 };
	k = kt_run("Cast", in, 1, 1, &as2, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(1, 1, 0, 1), 0);
	kt_free(&k);
	Attr at3[] = { kt_as("to", "u8") };
	Attrs as3 = { 1, at3 };
	k = kt_run("Cast", in, 1, 1, &as3, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(254, 2, 0, 44), 0);   /* wraps mod 256 */
	kt_free(&k);
	rt_tensor_free(&x);
}

static void test_reduce(void **state)
{
	RtTensor x = KT_T(DT_F32, 3, KT_DIMS(2, 2, 2), KT_VALS(1, 2, 3, 4, 5, 6, 7, 8));
	RtTensor ax = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(-1));
	RtTensor *in[] = { &x, &ax };
	Kt k = kt_run("ReduceSum", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(2, 2, 1), KT_VALS(3, 7, 11, 15), 0);
	kt_free(&k);
	Attr at[] = { kt_ai("keepdims", 0) };
	Attrs as = { 1, at };
	rt_i64(&ax)[0] = 1;
	k = kt_run("ReduceMax", in, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 2), KT_VALS(3, 4, 7, 8), 0);
	kt_free(&k);
	RtTensor *all[] = { &x };
	k = kt_run("ReduceMean", all, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 0, NULL, KT_VALS(4.5), 0);
	kt_free(&k);
	/* log-sum-exp is stable for large inputs */
	RtTensor big = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1000, 1000));
	RtTensor *bi[] = { &big };
	k = kt_run("ReduceLogSumExp", bi, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 0, NULL, KT_VALS(1000 + 0.69314718), 1e-6);
	kt_free(&k);
	/* empty reduction: identity values */
	RtTensor z = KT_T(DT_F32, 2, KT_DIMS(2, 0), NULL);
	RtTensor a1 = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(1));
	RtTensor *zi[] = { &z, &a1 };
	k = kt_run("ReduceSum", zi, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(0, 0), 0);
	kt_free(&k);
	k = kt_run("ReduceMax", zi, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(-INFINITY, -INFINITY), 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&ax), rt_tensor_free(&big), rt_tensor_free(&z), rt_tensor_free(&a1);
}

static void test_softmax(void **state)
{
	RtTensor x = KT_T(DT_F32, 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 1000, 1000, 1000));
	RtTensor *in[] = { &x };
	Kt k = kt_run("Softmax", in, 1, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(0.09003057, 0.24472847, 0.66524096, 1 / 3.0, 1 / 3.0, 1 / 3.0), 1e-6);
	kt_free(&k);
	Attr at[] = { kt_ai("axis", 0) };
	Attrs as = { 1, at };
	k = kt_run("LogSoftmax", in, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(-999, -998, -997, 0, 0, 0), 1e-6);
	kt_free(&k);
	rt_tensor_free(&x);
}

static void test_argmax_topk(void **state)
{
	RtTensor x = KT_T(DT_F32, 2, KT_DIMS(2, 4), KT_VALS(3, 1, 3, 2, 0, 5, 5, -1));
	RtTensor *in[] = { &x };
	Attr at[] = { kt_ai("axis", -1), kt_ai("select_last_index", 1) };
	Attrs as = { 2, at };
	Kt k = kt_run("ArgMax", in, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 1), KT_VALS(2, 2), 0);
	kt_free(&k);
	as.n = 1;
	k = kt_run("ArgMin", in, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 1), KT_VALS(1, 3), 0);
	kt_free(&k);
	RtTensor kk = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(3));
	RtTensor *tin[] = { &x, &kk };
	k = kt_run("TopK", tin, 2, 2, NULL, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(3, 3, 2, 5, 5, 0), 0);
	kt_expect(&k.out[1], 2, KT_DIMS(2, 3), KT_VALS(0, 2, 3, 1, 2, 0), 0);   /* ties by index */
	kt_free(&k);
	Attr sm[] = { kt_ai("largest", 0), kt_ai("axis", 0) };
	Attrs ss = { 2, sm };
	rt_i64(&kk)[0] = 1;
	k = kt_run("TopK", tin, 2, 2, &ss, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(1, 4), KT_VALS(0, 1, 3, -1), 0);
	kt_expect(&k.out[1], 2, KT_DIMS(1, 4), KT_VALS(1, 0, 0, 1), 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&kk);
}

static void test_cumsum(void **state)
{
	RtTensor x = KT_T(DT_I64, 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 4, 5, 6));
	RtTensor ax = KT_T(DT_I64, 0, NULL, KT_VALS(-1));
	RtTensor *in[] = { &x, &ax };
	Kt k = kt_run("CumSum", in, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(1, 3, 6, 4, 9, 15), 0);
	kt_free(&k);
	Attr at[] = { kt_ai("exclusive", 1), kt_ai("reverse", 1) };
	Attrs as = { 2, at };
	k = kt_run("CumSum", in, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(5, 3, 0, 11, 6, 0), 0);
	kt_free(&k);
	rt_tensor_free(&x), rt_tensor_free(&ax);
}

static void test_exp2_fa4(void **state)
{
	/* exact at integers; degree 3 within 8.8e-5 relative (numerics.md §9) */
	RtExecOpts o = { 0 };
	o.mma_in = DT_INVALID;
	double worst[6] = { 0 };
	for (int deg = 1; deg <= 5; deg++)
		for (double x = -30; x < 0; x += 0.0137) {
			float p = kn_exp2_fa4((float)x, deg);
			double r = fabs(p / exp2((float)x) - 1);
			worst[deg] = r > worst[deg] ? r : worst[deg];
		}
	assert_true(worst[3] < 1.0e-4 && worst[3] > 1e-6);   /* degree 3: ~8.8e-5 */
	assert_true(worst[2] > 1e-3 && worst[2] < 3e-3);     /* degree 2: ~2.1e-3 */
	assert_true(worst[5] < 3e-7);
	assert_true(worst[4] < worst[3] && worst[5] < worst[4]);
	assert_true(kn_exp2_fa4(-200.0f, 3) == 0.0f);
	assert_true(kn_exp2_fa4(3.0f, 3) == 8.0f);
	/* Softmax with exp2_poly=2 moves away from the exact result, by ~1e-3 relative */
	RtTensor x = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(0.3, -1.7, 2.2, 0.9));
	RtTensor *in[] = { &x };
	Kt k0 = kt_run("Softmax", in, 1, 1, NULL, &o);
	o.exp2_poly = 2;
	Kt k2 = kt_run("Softmax", in, 1, 1, NULL, &o);
	double d = 0;
	for (int i = 0; i < 4; i++)
		d = fmax(d, fabs(rt_f32(&k2.out[0])[i] / rt_f32(&k0.out[0])[i] - 1));
	assert_true(d > 1e-5 && d < 5e-3);
	kt_free(&k0), kt_free(&k2);
	rt_tensor_free(&x);
}

/* Narrow formats through runtime/numerics: Cast saturation, Quantize grids, narrow outputs. */
static void test_narrow_formats(void **state)
{
	RtTensor x = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(500, -1000, 1.0 + 1.0 / 16, 0.3));
	RtTensor *in[] = { &x };
	Attr at[] = { kt_as("to", "f8e4m3"), kt_ai("saturate", 1) };
	Attrs as = { 2, at };
	Kt k = kt_run("Cast", in, 1, 1, &as, NULL);
	/* clamp to +-448; 1+1/16 is a tie between 1 and 1.125: even mantissa -> 1; 0.3 -> 0.3125 */
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(448, -448, 1, 0.3125), 0);
	kt_free(&k);
	at[1] = kt_ai("saturate", 0);
	k = kt_run("Cast", in, 1, 1, &as, NULL);
	assert_true(isnan(rt_f32(&k.out[0])[0]));   /* E4M3 has no Inf: overflow is NaN */
	kt_free(&k);
	Attr bt[] = { kt_as("to", "bf16") };
	Attrs bs = { 1, bt };
	RtTensor y = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1.0 + 1.0 / 256, 1.0 + 3.0 / 256));
	RtTensor *yin[] = { &y };
	k = kt_run("Quantize", yin, 1, 1, &bs, NULL);
	assert_int_equal(k.out[0].dtype, DT_BF16);
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(1, 1.0 + 4.0 / 256), 0);   /* RNE ties to even */
	kt_free(&k);
	/* mxfp4 block (FLOOR rule): amax 6 -> scale 1; elements on the E2M1 grid */
	RtTensor z = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(6, 2.4, -0.7, 0.2));
	RtTensor *zin[] = { &z };
	Attr mt[] = { kt_as("to", "mxfp4") };
	Attrs ms = { 1, mt };
	k = kt_run("Quantize", zin, 1, 1, &ms, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(4), KT_VALS(6, 2, -0.5, 0), 0);
	kt_free(&k);
	/* an f16 output of Add is rounded to f16: 1 + 2^-11 ties to 1 */
	RtTensor a = KT_T(DT_F32, 1, KT_DIMS(1), KT_VALS(1)), b = KT_T(DT_F32, 1, KT_DIMS(1), KT_VALS(1.0 / 2048));
	RtTensor *ab[] = { &a, &b };
	RtExecOpts o = { 0 };
	o.mma_in = DT_INVALID;
	RtKernelArgs args;
	RtTensor out = { .dtype = DT_F16 };
	RtError e = { 0 };
	args = (RtKernelArgs){ ab, 2, &out, 1, NULL, &o, NULL };
	assert_int_equal(rt_kernel(rt_op_lookup("Add"))(&args, &e), 0);
	assert_true(rt_f32(&out)[0] == 1.0f);
	rt_tensor_free(&out);
	rt_tensor_free(&x), rt_tensor_free(&y), rt_tensor_free(&z), rt_tensor_free(&a), rt_tensor_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dispatch_table), cmocka_unit_test(test_add_broadcast),
		cmocka_unit_test(test_int_arith), cmocka_unit_test(test_unary),
		cmocka_unit_test(test_variadic_where_clip), cmocka_unit_test(test_cast),
		cmocka_unit_test(test_reduce), cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_argmax_topk), cmocka_unit_test(test_cumsum),
		cmocka_unit_test(test_exp2_fa4), cmocka_unit_test(test_narrow_formats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
