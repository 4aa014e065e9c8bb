/* testsuite/unit/test_kernels_matmul.c: MatMul/Gemm/Einsum/Conv/integer matmuls against
 * hand-computed products, the Hopper FP8 accumulation model, and the OpenBLAS core-type
 * decision with injected corename/cpuid values. */
#include "testsuite/unit/kernel_test.h"
#include "runtime/blas.h"
#include "runtime/kernels/kernels_impl.h"

#include <stdlib.h>
#include <cblas.h>

static void test_matmul_batched(void **state)
{
	/* A (2,1,2,2) @ B (3,2,2) -> (2,3,2,2) */
	double av[8] = { 1, 2, 3, 4, 0, 1, 1, 0 }, bv[12] = { 1, 0, 0, 1, 2, 0, 0, 2, 1, 1, 1, 1 };
	RtTensor A = KT_T(DT_F32, 4, KT_DIMS(2, 1, 2, 2), av), B = KT_T(DT_F32, 3, KT_DIMS(3, 2, 2), bv);
	RtTensor *in[] = { &A, &B };
	Kt k = kt_run("MatMul", in, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 4, KT_DIMS(2, 3, 2, 2),
		  KT_VALS(1, 2, 3, 4, 2, 4, 6, 8, 3, 3, 7, 7, 0, 1, 1, 0, 0, 2, 2, 0, 1, 1, 1, 1), 0);
	kt_free(&k);
	/* 1-D @ 2-D and 2-D @ 1-D drop the added axis */
	RtTensor v = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(1, 1));
	RtTensor M = KT_T(DT_F32, 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 4, 5, 6));
	RtTensor *vm[] = { &v, &M };
	k = kt_run("MatMul", vm, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(3), KT_VALS(5, 7, 9), 0);
	kt_free(&k);
	RtTensor w = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(1, 0, -1));
	RtTensor *mv[] = { &M, &w };
	k = kt_run("MatMul", mv, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(-2, -2), 0);
	kt_free(&k);
	/* f64 and integer paths */
	RtTensor Md = KT_T(DT_F64, 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 4, 5, 6));
	RtTensor wd = KT_T(DT_F64, 1, KT_DIMS(3), KT_VALS(1e-17, 1, 0));
	RtTensor *dd[] = { &Md, &wd };
	k = kt_run("MatMul", dd, 2, 1, NULL, NULL);
	assert_int_equal(k.out[0].dtype, DT_F64);
	assert_true(rt_f64(&k.out[0])[0] == 2 + 1e-17);
	kt_free(&k);
	/* zero-size K gives zeros */
	RtTensor z1 = KT_T(DT_F32, 2, KT_DIMS(2, 0), NULL), z2 = KT_T(DT_F32, 2, KT_DIMS(0, 3), NULL);
	RtTensor *zz[] = { &z1, &z2 };
	k = kt_run("MatMul", zz, 2, 1, NULL, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(0, 0, 0, 0, 0, 0), 0);
	kt_free(&k);
	RtTensor *bad[] = { &M, &M };
	k = kt_run("MatMul", bad, 2, 1, NULL, NULL);
	assert_int_equal(k.rc, -1);
	rt_tensor_free(&A), rt_tensor_free(&B), rt_tensor_free(&v), rt_tensor_free(&M), rt_tensor_free(&w);
	rt_tensor_free(&Md), rt_tensor_free(&wd), rt_tensor_free(&z1), rt_tensor_free(&z2);
}

static void test_gemm(void **state)
{
	RtTensor A = KT_T(DT_F32, 2, KT_DIMS(3, 2), KT_VALS(1, 4, 2, 5, 3, 6));   /* A^T = [[1,2,3],[4,5,6]] */
	RtTensor B = KT_T(DT_F32, 2, KT_DIMS(2, 3), KT_VALS(1, 0, 1, 0, 1, 1));   /* B^T (3,2) */
	RtTensor C = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(10, 20));
	RtTensor *in[] = { &A, &B, &C };
	Attr at[] = { kt_ai("transA", 1), kt_ai("transB", 1), kt_af("alpha", 2), kt_af("beta", 0.5) };
	Attrs as = { 4, at };
	Kt k = kt_run("Gemm", in, 3, 1, &as, NULL);
	assert_int_equal(k.rc, 0);
	/* A^T@B^T = [[1+3, 2+3],[4+6, 5+6]] = [[4,5],[10,11]] */
	kt_expect(&k.out[0], 2, KT_DIMS(2, 2), KT_VALS(13, 20, 25, 32), 0);
	kt_free(&k);
	rt_tensor_free(&A), rt_tensor_free(&B), rt_tensor_free(&C);
}

static void test_integer_matmuls(void **state)
{
	RtTensor A = KT_T(DT_U8, 2, KT_DIMS(2, 2), KT_VALS(11, 12, 13, 14));
	RtTensor B = KT_T(DT_I8, 2, KT_DIMS(2, 2), KT_VALS(1, -1, 2, 0));
	RtTensor az = KT_T(DT_U8, 0, NULL, KT_VALS(10));
	RtTensor *in[] = { &A, &B, &az, NULL };
	Kt k = kt_run("MatMulInteger", in, 4, 1, NULL, NULL);
	assert_int_equal(k.out[0].dtype, DT_I32);
	/* (A-10) = [[1,2],[3,4]] @ B = [[5,-1],[11,-3]] */
	kt_expect(&k.out[0], 2, KT_DIMS(2, 2), KT_VALS(5, -1, 11, -3), 0);
	kt_free(&k);
	/* QLinearMatMul: a_scale 0.5, b_scale 0.25, y_scale 0.125, y_zp 100 (u8) */
	RtTensor as = KT_T(DT_F32, 0, NULL, KT_VALS(0.5)), bs = KT_T(DT_F32, 0, NULL, KT_VALS(0.25));
	RtTensor bz = KT_T(DT_I8, 0, NULL, KT_VALS(0));
	RtTensor ys = KT_T(DT_F32, 0, NULL, KT_VALS(0.125)), yz = KT_T(DT_U8, 0, NULL, KT_VALS(100));
	RtTensor *q[] = { &A, &as, &az, &B, &bs, &bz, &ys, &yz };
	k = kt_run("QLinearMatMul", q, 8, 1, NULL, NULL);
	/* acc*0.5*0.25/0.125 = acc: [[105, 99],[111, 97]] */
	assert_int_equal(k.out[0].dtype, DT_U8);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 2), KT_VALS(105, 99, 111, 97), 0);
	kt_free(&k);
	rt_tensor_free(&A), rt_tensor_free(&B), rt_tensor_free(&az), rt_tensor_free(&as);
	rt_tensor_free(&bs), rt_tensor_free(&bz), rt_tensor_free(&ys), rt_tensor_free(&yz);
}

static void test_einsum(void **state)
{
	RtTensor A = KT_T(DT_F32, 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 4, 5, 6));
	RtTensor B = KT_T(DT_F32, 2, KT_DIMS(3, 2), KT_VALS(1, 0, 0, 1, 1, 1));
	RtTensor *in[] = { &A, &B };
	Attr at[] = { kt_as("equation", "ij,jk->ik") };
	Attrs as = { 1, at };
	Kt k = kt_run("Einsum", in, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 2), KT_VALS(4, 5, 10, 11), 0);
	kt_free(&k);
	at[0] = kt_as("equation", "ij->ji");
	k = kt_run("Einsum", in, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(3, 2), KT_VALS(1, 4, 2, 5, 3, 6), 0);
	kt_free(&k);
	at[0] = kt_as("equation", "ij");   /* implicit: ij */
	k = kt_run("Einsum", in, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 2, KT_DIMS(2, 3), KT_VALS(1, 2, 3, 4, 5, 6), 0);
	kt_free(&k);
	RtTensor S = KT_T(DT_F32, 2, KT_DIMS(2, 2), KT_VALS(1, 2, 3, 4));
	RtTensor *sq[] = { &S };
	at[0] = kt_as("equation", "ii->");   /* trace */
	k = kt_run("Einsum", sq, 1, 1, &as, NULL);
	kt_expect(&k.out[0], 0, NULL, KT_VALS(5), 0);
	kt_free(&k);
	at[0] = kt_as("equation", "...j,j->...");
	RtTensor v = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(1, 1, 1));
	RtTensor *ev[] = { &A, &v };
	k = kt_run("Einsum", ev, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(6, 15), 0);
	kt_free(&k);
	rt_tensor_free(&A), rt_tensor_free(&B), rt_tensor_free(&S), rt_tensor_free(&v);
}

static void test_conv_pool(void **state)
{
	/* X (1,1,3,3) = 1..9, W (1,1,2,2) ones, pads 1 top-left only via explicit pads */
	RtTensor X = KT_T(DT_F32, 4, KT_DIMS(1, 1, 3, 3), KT_VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
	RtTensor W = KT_T(DT_F32, 4, KT_DIMS(1, 1, 2, 2), KT_VALS(1, 1, 1, 1));
	RtTensor B = KT_T(DT_F32, 1, KT_DIMS(1), KT_VALS(100));
	RtTensor *in[] = { &X, &W, &B };
	Kt k = kt_run("Conv", in, 3, 1, NULL, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(112, 116, 124, 128), 0);
	kt_free(&k);
	int64_t st[] = { 2, 2 }, pd[] = { 1, 1, 1, 1 };
	Attr at[] = { kt_ais("strides", 2, st), kt_ais("pads", 4, pd) };
	Attrs as = { 2, at };
	k = kt_run("Conv", in, 2, 1, &as, NULL);
	/* padded 5x5, windows at (0,0),(0,2),(2,0),(2,2): 1, 2+3, 4+7, 5+6+8+9 */
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(1, 5, 11, 28), 0);
	kt_free(&k);
	/* depthwise: 2 channels, group 2 */
	RtTensor X2 = KT_T(DT_F32, 4, KT_DIMS(1, 2, 1, 2), KT_VALS(1, 2, 3, 4));
	RtTensor W2 = KT_T(DT_F32, 4, KT_DIMS(2, 1, 1, 1), KT_VALS(10, -1));
	RtTensor *dw[] = { &X2, &W2 };
	Attr ga[] = { kt_ai("group", 2) };
	Attrs gs = { 1, ga };
	k = kt_run("Conv", dw, 2, 1, &gs, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 2, 1, 2), KT_VALS(10, 20, -3, -4), 0);
	kt_free(&k);
	/* pools: kernel 2, stride 2, ceil_mode over 3x3 */
	int64_t ks[] = { 2, 2 };
	Attr pa[] = { kt_ais("kernel_shape", 2, ks), kt_ais("strides", 2, st), kt_ai("ceil_mode", 1) };
	Attrs ps = { 3, pa };
	RtTensor *px[] = { &X };
	k = kt_run("MaxPool", px, 1, 2, &ps, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(5, 6, 8, 9), 0);
	kt_expect(&k.out[1], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(4, 5, 7, 8), 0);
	kt_free(&k);
	k = kt_run("AveragePool", px, 1, 1, &ps, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(3, 4.5, 7.5, 9), 0);
	kt_free(&k);
	Attr pb[] = { kt_ais("kernel_shape", 2, ks), kt_ais("pads", 4, pd), kt_ais("strides", 2, st),
		      kt_ai("count_include_pad", 1) };
	Attrs pbs = { 4, pb };
	k = kt_run("AveragePool", px, 1, 1, &pbs, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(0.25, 1.25, 2.75, 7), 0);
	kt_free(&k);
	k = kt_run("GlobalAveragePool", px, 1, 1, NULL, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 1), KT_VALS(5), 0);
	kt_free(&k);
	rt_tensor_free(&X), rt_tensor_free(&W), rt_tensor_free(&B), rt_tensor_free(&X2), rt_tensor_free(&W2);
}

/* Hopper model: a long dot product of values whose exact sum needs more than 14 bits. */
static void test_hopper_fp8_accumulation(void **state)
{
	enum { K = 4096 };
	float *a = malloc(K * sizeof *a), *b = malloc(K * sizeof *b);
	srand(7);
	double rel_np = 0, rel_p = 0;
	for (int trial = 0; trial < 8; trial++) {
		double exact = 0;
		for (int i = 0; i < K; i++) {   /* E4M3-representable values: m/8 * 2^e */
			a[i] = (float)ldexp(8 + rand() % 8, rand() % 4 - 4);
			b[i] = (float)ldexp(8 + rand() % 8, rand() % 4 - 4) * (rand() % 2 ? 1 : -1) ;
			exact += (double)a[i] * b[i];
		}
		if (fabs(exact) < 1)
			continue;
		double np = kn_hopper_dot(a, b, 1, K, 0), p = kn_hopper_dot(a, b, 1, K, 128);
		rel_np = fmax(rel_np, fabs(np - exact) / fabs(exact));
		rel_p = fmax(rel_p, fabs(p - exact) / fabs(exact));
	}
	/* without promotion ~1e-3 relative error; promotion every 128 reduces it ~10x */
	assert_true(rel_np > 1e-4);
	assert_true(rel_p < rel_np / 3);
	/* exact for a short sum that fits in 14 bits */
	float x[4] = { 1, 2, 3, 4 }, y[4] = { 1, 1, 1, 1 };
	assert_true(kn_hopper_dot(x, y, 1, 4, 0) == 10.0f);
	/* truncation toward zero: 2^14 + 1 loses the 1 (14 bits kept relative to 2^14) */
	float u[2] = { 16384, 1 }, w[2] = { 1, 1 };
	assert_true(kn_hopper_dot(u, w, 1, 2, 0) == 16384.0f);
	float u2[2] = { 8192, 1 };
	assert_true(kn_hopper_dot(u2, w, 1, 2, 0) == 8193.0f);
	free(a), free(b);
}

/* The MatMul kernel with fp8_promote_k uses the model: results change, magnitudes match. */
static void test_matmul_lowp_opts(void **state)
{
	enum { M = 4, K = 512, N = 4 };
	double *av = malloc(M * K * sizeof *av), *bv = malloc(K * N * sizeof *bv);
	srand(3);
	for (int i = 0; i < M * K; i++)
		av[i] = (rand() / (double)RAND_MAX - 0.5) * 2;
	for (int i = 0; i < K * N; i++)
		bv[i] = (rand() / (double)RAND_MAX - 0.5) * 2;
	RtTensor A = KT_T(DT_F32, 2, KT_DIMS(M, K), av), B = KT_T(DT_F32, 2, KT_DIMS(K, N), bv);
	RtTensor *in[] = { &A, &B };
	RtExecOpts o = { 0 };
	o.mma_in = DT_INVALID;
	o.accum_f64 = 1;
	Kt ref = kt_run("MatMul", in, 2, 1, NULL, &o);
	o.accum_f64 = 0;
	double err[3];
	DType fmts[3] = { DT_BF16, DT_F8E4M3, DT_MXFP4 };
	for (int f = 0; f < 3; f++) {
		o.mma_in = fmts[f];
		Kt k = kt_run("MatMul", in, 2, 1, NULL, &o);
		assert_int_equal(k.rc, 0);
		err[f] = 0;
		for (int i = 0; i < M * N; i++)
			err[f] = fmax(err[f], fabs(rt_f32(&k.out[0])[i] - rt_get(&ref.out[0], i)));
		kt_free(&k);
	}
	/* coarser operand formats give larger errors; bf16 error ~ sqrt(K)*2^-9 */
	assert_true(err[0] > 0 && err[0] < 0.5);
	assert_true(err[1] > err[0] && err[2] > err[1]);
	kt_free(&ref);
	rt_tensor_free(&A), rt_tensor_free(&B);
	free(av), free(bv);
}

/* Scaled FP8 operands (fp8_scale): with one token 10^5 times larger than the others, one scale
 * per tensor pushes the other tokens into E4M3's subnormals, 1x128 tiles do not; operands whose
 * every group has amax 448 (scale 1) and E4M3 values multiply exactly. */
static double row_err(const Kt *k, const Kt *ref, int r0, int M, int N)
{
	double e = 0, m = 0;
	for (int i = r0 * N; i < M * N; i++) {
		e = fmax(e, fabs(rt_f32(&k->out[0])[i] - rt_get(&ref->out[0], i)));
		m = fmax(m, fabs(rt_get(&ref->out[0], i)));
	}
	return e / m;
}

static void test_matmul_fp8_scales(void **state)
{
	enum { M = 4, K = 256, N = 4 };
	double *av = malloc(M * K * sizeof *av), *bv = malloc(K * N * sizeof *bv);
	srand(5);
	for (int i = 0; i < M * K; i++)
		av[i] = (rand() / (double)RAND_MAX - 0.5) * (i < K ? 2e5 : 2);
	for (int i = 0; i < K * N; i++)
		bv[i] = (rand() / (double)RAND_MAX - 0.5) * 2;
	RtTensor A = KT_T(DT_F32, 2, KT_DIMS(M, K), av), B = KT_T(DT_F32, 2, KT_DIMS(K, N), bv);
	RtTensor *in[] = { &A, &B };
	RtExecOpts o = { .mma_in = DT_INVALID, .accum_f64 = 1 };
	Kt ref = kt_run("MatMul", in, 2, 1, NULL, &o);
	o = (RtExecOpts){ .mma_in = DT_F8E4M3 };
	double err[RT_FP8_COUNT];
	for (int sc = RT_FP8_TENSOR; sc < RT_FP8_COUNT; sc++) {
		o.fp8_scale = sc;
		o.fp8_promote_k = sc == RT_FP8_128X128 ? 128 : 0;
		Kt k = kt_run("MatMul", in, 2, 1, NULL, &o);
		assert_int_equal(k.rc, 0);
		err[sc] = row_err(&k, &ref, 1, M, N);   /* the ordinary tokens */
		kt_free(&k);
	}
	/* E4M3 rounding: u = 2^-4 per operand, a normwise error of a few percent at most */
	assert_true(err[RT_FP8_1X128] < 0.05 && err[RT_FP8_128X128] < 0.05);
	assert_true(err[RT_FP8_TENSOR] > 4 * err[RT_FP8_1X128]);
	kt_free(&ref);
	/* exactness: every 1x128 tile and 128x128 block holds 448 (scale 1), the rest small E4M3
	 * values whose products and sums f32 holds exactly */
	for (int i = 0; i < M * K; i++)
		av[i] = i % 128 == 0 ? 448 : (float)((i % 7) - 3) * 0.5f;
	for (int i = 0; i < K * N; i++)
		bv[i] = (i / N) % 128 == 0 ? 448 : (float)((i % 5) - 2);
	RtTensor A2 = KT_T(DT_F32, 2, KT_DIMS(M, K), av), B2 = KT_T(DT_F32, 2, KT_DIMS(K, N), bv);
	RtTensor *in2[] = { &A2, &B2 };
	o = (RtExecOpts){ .mma_in = DT_INVALID, .accum_f64 = 1 };
	ref = kt_run("MatMul", in2, 2, 1, NULL, &o);
	o = (RtExecOpts){ .mma_in = DT_F8E4M3, .fp8_scale = RT_FP8_128X128 };
	Kt k = kt_run("MatMul", in2, 2, 1, NULL, &o);
	assert_int_equal(k.rc, 0);
	for (int i = 0; i < M * N; i++)
		assert_true(rt_f32(&k.out[0])[i] == rt_get(&ref.out[0], i));
	kt_free(&k), kt_free(&ref);
	rt_tensor_free(&A), rt_tensor_free(&B), rt_tensor_free(&A2), rt_tensor_free(&B2);
	free(av), free(bv);
}

static void test_blas_coretype(void **state)
{
	RtCpuInfo emr = { .intel = 1, .family = 6, .model = 207, .avx2 = 1, .fma = 1, .avx512f = 1,
			  .avx512bw = 1, .avx512vl = 1, .avx512dq = 1, .os_avx = 1, .os_avx512 = 1 };
	assert_string_equal(rt_blas_coretype_for("Prescott", &emr), "SkylakeX");
	assert_null(rt_blas_coretype_for("SkylakeX", &emr));
	assert_null(rt_blas_coretype_for("Cooperlake", &emr));
	RtCpuInfo noos = emr;
	noos.os_avx512 = 0;   /* AVX-512 present but not enabled by the OS */
	assert_string_equal(rt_blas_coretype_for("Prescott", &noos), "Haswell");
	RtCpuInfo zen = { .intel = 0, .family = 25, .model = 1, .avx2 = 1, .fma = 1, .os_avx = 1 };
	assert_null(rt_blas_coretype_for("Zen", &zen));
	assert_string_equal(rt_blas_coretype_for("Prescott", &zen), "Zen");
	RtCpuInfo old = { .intel = 1, .family = 6, .model = 15 };
	assert_null(rt_blas_coretype_for("Core2", &old));   /* really an old CPU: nothing better */
	/* this machine: OpenBLAS's own name is trusted unless it is a generic fallback */
	RtCpuInfo me;
	rt_cpu_info(&me);
	assert_true(me.family > 0);
	const char *want = getenv("OPENBLAS_CORETYPE") ? NULL : rt_blas_coretype_for(openblas_get_corename(), &me);
	const char *got = rt_blas_fix_coretype();
	assert_true(got == want || (got && want && strcmp(got, want) == 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul_batched), cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_integer_matmuls), cmocka_unit_test(test_einsum),
		cmocka_unit_test(test_conv_pool), cmocka_unit_test(test_hopper_fp8_accumulation),
		cmocka_unit_test(test_matmul_lowp_opts), cmocka_unit_test(test_matmul_fp8_scales), cmocka_unit_test(test_blas_coretype),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
