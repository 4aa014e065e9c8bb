/* testsuite/unit/test_gemm.c: the reference matrix product's summation rule
 * (runtime/kernels/gemm.c): every instruction set this CPU runs gives, bit for bit, the result of
 * the plain loop c = fma(a[i,k], b[k,j], c) over ascending k, for every shape class (register-
 * tile edges, K beyond one cache block, the unpacked small-M path), both transpositions, f32 and
 * f64; a column or row block of the product equals the product of the block; NaN and infinities
 * propagate; running out of memory is an error, not a crash. */
#include "testsuite/unit/kernel_test.h"
#include "runtime/kernels/kernels_impl.h"

#include <stdlib.h>

/* Values of widely varying magnitude and sign, so that any other order of the sums differs. */
static float val(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	uint32_t r = (uint32_t)(*s >> 33);
	float m = (float)(r & 0xffff) / 65536.0f - 0.5f;
	return ldexpf(m, (int)((r >> 16) % 24) - 12);
}

static void fill(float *x, int64_t n, uint64_t seed)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = val(&seed);
}

/* The rule, written as plainly as possible. */
#define REF(name, T, FMA)                                                                        \
	static void name(int64_t M, int64_t N, int64_t K, const T *A, int ta, const T *B, int tb, T *C) \
	{                                                                                        \
		for (int64_t i = 0; i < M; i++)                                                  \
			for (int64_t j = 0; j < N; j++) {                                        \
				T c = 0;                                                         \
				for (int64_t k = 0; k < K; k++)                                  \
					c = FMA(ta ? A[k * M + i] : A[i * K + k], tb ? B[j * K + k] : B[k * N + j], c); \
				C[i * N + j] = c;                                                \
			}                                                                        \
	}
REF(ref_s, float, fmaf)
REF(ref_d, double, fma)

static const int64_t shapes[][3] = {
	{ 1, 1, 1 }, { 1, 33, 5 }, { 1, 100, 40 }, { 3, 17, 9 }, { 8, 64, 20 }, { 9, 31, 7 },
	{ 13, 47, 300 }, { 14, 32, 16 }, { 15, 33, 391 }, { 29, 65, 129 }, { 64, 64, 64 },
	{ 130, 70, 800 }, { 2, 2100, 3 }, { 140, 2100, 10 },
	{ 50, 1, 200 }, { 17, 1, 33 }, { 24, 40, 300 }, { 21, 17, 600 },   /* one column; in-place B up to 24 rows */
};

/* Every supported instruction set, every shape, both transpositions: memcmp-equal to the rule. */
static void test_rule_f32(void **state)
{
	int checked = 0;
	for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
		assert_int_equal(rt_isa_set((RtIsa)isa), 0);
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int t = 0; t < 4; t++) {
				int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
				int ta = t & 1, tb = t >> 1;
				float *A = malloc((size_t)(M * K) * 4), *B = malloc((size_t)(K * N) * 4);
				float *C = malloc((size_t)(M * N) * 4), *R = malloc((size_t)(M * N) * 4);
				fill(A, M * K, 1 + s), fill(B, K * N, 100 + s);
				RtError e = { 0 };
				assert_int_equal(kn_sgemm(M, N, K, A, ta ? M : K, ta, B, tb ? K : N, tb, C, N, &e), 0);
				ref_s(M, N, K, A, ta, B, tb, R);
				assert_memory_equal(C, R, (size_t)(M * N) * 4);
				free(A), free(B), free(C), free(R);
				checked++;
			}
	}
	rt_isa_set((RtIsa)-1);
	assert_true(checked >= 56);
}

static void test_rule_f64(void **state)
{
	for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
		assert_int_equal(rt_isa_set((RtIsa)isa), 0);
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int t = 0; t < 4; t++) {
				int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
				int ta = t & 1, tb = t >> 1;
				double *A = malloc((size_t)(M * K) * 8), *B = malloc((size_t)(K * N) * 8);
				double *C = malloc((size_t)(M * N) * 8), *R = malloc((size_t)(M * N) * 8);
				uint64_t sa = 7 + s, sb = 70 + s;
				for (int64_t i = 0; i < M * K; i++)
					A[i] = (double)val(&sa) * (1 + ldexp((double)val(&sa), -20));
				for (int64_t i = 0; i < K * N; i++)
					B[i] = (double)val(&sb) * (1 + ldexp((double)val(&sb), -20));
				RtError e = { 0 };
				assert_int_equal(kn_dgemm(M, N, K, A, ta ? M : K, ta, B, tb ? K : N, tb, C, N, &e), 0);
				ref_d(M, N, K, A, ta, B, tb, R);
				assert_memory_equal(C, R, (size_t)(M * N) * 8);
				free(A), free(B), free(C), free(R);
			}
	}
	rt_isa_set((RtIsa)-1);
}

/* The data are order-sensitive (so the tests above can fail): summing k in descending order
 * changes some results. */
static void test_order_matters(void **state)
{
	enum { M = 16, N = 16, K = 300 };
	static float A[M * K], B[K * N];
	fill(A, M * K, 5), fill(B, K * N, 6);
	int differ = 0;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			float up = 0, down = 0;
			for (int k = 0; k < K; k++)
				up = fmaf(A[i * K + k], B[k * N + j], up);
			for (int k = K - 1; k >= 0; k--)
				down = fmaf(A[i * K + k], B[k * N + j], down);
			differ += up != down;
		}
	assert_true(differ > M * N / 4);
}

/* Tensor parallelism's column split (B by columns) and a batch split (A by rows) give exactly
 * the columns and rows of the whole product: the shape never changes an element's order. */
static void test_blocks_exact(void **state)
{
	enum { M = 37, N = 96, K = 520 };
	static float A[M * K], B[K * N], C[M * N], Bh[K * N / 2], Ch[M * N / 2], Cr[5 * N];
	fill(A, M * K, 11), fill(B, K * N, 12);
	RtError e = { 0 };
	assert_int_equal(kn_sgemm(M, N, K, A, K, 0, B, N, 0, C, N, &e), 0);
	for (int half = 0; half < 2; half++) {
		for (int k = 0; k < K; k++)
			memcpy(Bh + k * (N / 2), B + k * N + half * (N / 2), (N / 2) * sizeof(float));
		assert_int_equal(kn_sgemm(M, N / 2, K, A, K, 0, Bh, N / 2, 0, Ch, N / 2, &e), 0);
		for (int i = 0; i < M; i++)
			assert_memory_equal(Ch + i * (N / 2), C + i * N + half * (N / 2), (N / 2) * sizeof(float));
	}
	/* rows 3..7 alone: the small-M path (B unpacked, K blocks of 8) */
	assert_int_equal(kn_sgemm(5, N, K, A + 3 * K, K, 0, B, N, 0, Cr, N, &e), 0);
	assert_memory_equal(Cr, C + 3 * N, 5 * N * sizeof(float));
	/* a strided view of B (ldb > N) */
	assert_int_equal(kn_sgemm(M, N / 2, K, A, K, 0, B + N / 2, N, 0, Ch, N / 2, &e), 0);
	for (int i = 0; i < M; i++)
		assert_memory_equal(Ch + i * (N / 2), C + i * N + N / 2, (N / 2) * sizeof(float));
}

/* IEEE specials propagate as the fma chain says; K = 0 gives zeros; M or N = 0 writes nothing. */
static void test_specials(void **state)
{
	float A[2 * 3] = { 1, INFINITY, 2, 1, 0, NAN }, B[3 * 2] = { 1, 2, 0, 1, 1, 1 }, C[4];
	RtError e = { 0 };
	for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
		rt_isa_set((RtIsa)isa);
		assert_int_equal(kn_sgemm(2, 2, 3, A, 3, 0, B, 2, 0, C, 2, &e), 0);
		assert_true(isnan(C[0]));          /* inf * 0 */
		assert_true(C[1] == INFINITY);
		assert_true(isnan(C[2]) && isnan(C[3]));
	}
	rt_isa_set((RtIsa)-1);
	float Z[4] = { 5, 5, 5, 5 };
	assert_int_equal(kn_sgemm(2, 2, 0, A, 1, 0, B, 2, 0, Z, 2, &e), 0);
	for (int i = 0; i < 4; i++)
		assert_true(Z[i] == 0 && !signbit(Z[i]));
	Z[0] = 5;
	assert_int_equal(kn_sgemm(0, 2, 3, A, 3, 0, B, 2, 0, Z, 2, &e), 0);
	assert_true(Z[0] == 5);
}

static void test_isa_control(void **state)
{
	assert_int_equal(rt_isa_set(RT_ISA_SCALAR), 0);
	assert_int_equal(rt_isa(), RT_ISA_SCALAR);
	assert_int_equal(rt_isa_set((RtIsa)RT_ISA_COUNT), -1);
	rt_isa_set((RtIsa)-1);
	assert_true(rt_isa() <= rt_isa_best());
	assert_string_equal(rt_isa_name(RT_ISA_AVX512), "avx512");
}

static void test_out_of_memory(void **state)
{
	static float A[64 * 64], B[64 * 64], C[64 * 64];
	RtError e = { 0 };
	rt_alloc_fail_after(1);
	assert_int_equal(kn_sgemm(64, 64, 64, A, 64, 0, B, 64, 0, C, 64, &e), -1);
	rt_alloc_fail_after(0);
	assert_int_equal(e.code, RT_ENOMEM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_f32),   cmocka_unit_test(test_rule_f64),
		cmocka_unit_test(test_order_matters), cmocka_unit_test(test_blocks_exact),
		cmocka_unit_test(test_specials),   cmocka_unit_test(test_isa_control),
		cmocka_unit_test(test_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
