/* testsuite/bench/bench_matmul.c: f32 MatMul kernel throughput against calling cblas_sgemm
 * directly on the same shapes, single-threaded (OpenBLAS pinned to one thread).  Prints
 * GFLOP/s of both and their ratio (goal >= 0.8); the kernel's time includes allocating and
 * zeroing its output, as the interpreter pays it. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

#include "runtime/kernels.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Best of `reps` timings of one shape; returns 0 or -1 on a kernel error. */
static int bench(int64_t M, int64_t K, int64_t N, int reps)
{
	RtTensor A, B, C;
	RtError e = { 0 };
	int64_t da[2] = { M, K }, db[2] = { K, N };
	if (rt_tensor_alloc(&A, DT_F32, 2, da, &e) < 0 || rt_tensor_alloc(&B, DT_F32, 2, db, &e) < 0)
		return fprintf(stderr, "%s\n", e.msg), -1;
	for (int64_t i = 0; i < A.n; i++)
		rt_f32(&A)[i] = (float)((i * 7 % 13) - 6) / 8;
	for (int64_t i = 0; i < B.n; i++)
		rt_f32(&B)[i] = (float)((i * 5 % 11) - 5) / 8;
	float *ref = malloc((size_t)(M * N) * sizeof *ref);
	RtTensor *in[2] = { &A, &B };
	RtExecOpts o = { 0 };
	o.mma_in = DT_INVALID;
	double tk = 1e30, tb = 1e30;
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f,
			    rt_f32(&A), (int)K, rt_f32(&B), (int)N, 0.0f, ref, (int)N);
		double t1 = now();
		C = (RtTensor){ .dtype = DT_INVALID };
		RtKernelArgs a = { in, 2, &C, 1, NULL, &o };
		if (rt_kernel(rt_op_lookup("MatMul"))(&a, &e) < 0)
			return fprintf(stderr, "%s\n", e.msg), -1;
		double t2 = now();
		rt_tensor_free(&C);
		tb = t1 - t0 < tb ? t1 - t0 : tb;
		tk = t2 - t1 < tk ? t2 - t1 : tk;
	}
	double fl = 2.0 * M * N * K * 1e-9;
	printf("matmul %5lldx%5lldx%5lld  kernel %7.1f GFLOP/s  cblas %7.1f GFLOP/s  ratio %.2f\n",
	       (long long)M, (long long)K, (long long)N, fl / tk, fl / tb, tb / tk);
	free(ref);
	rt_tensor_free(&A), rt_tensor_free(&B);
	return 0;
}

int main(void)
{
	openblas_set_num_threads(1);
	static const int64_t shapes[][3] = {
		{ 2048, 2048, 2048 }, { 1, 4096, 14336 }, { 512, 4096, 4096 }, { 128, 4096, 11008 }, { 64, 64, 64 },
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		if (bench(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][0] >= 2048 ? 3 : 7) < 0)
			return 1;
	return 0;
}
