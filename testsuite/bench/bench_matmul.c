/* testsuite/bench/bench_matmul.c: f32 MatMul kernel throughput against calling cblas_sgemm
 * directly on the same shapes, single-threaded (OpenBLAS pinned to one thread).  The machine
 * may be shared, so the two are timed in alternating pairs (kernel first in even pairs, cblas
 * first in odd ones, so neither always runs on a warm cache) and the figure is the median of
 * the pairs' ratios cblas time / kernel time (goal >= 0.8), with the median GFLOP/s of each and
 * the load average; the kernel's time includes allocating and zeroing its output, as the
 * interpreter pays it. */
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_PAIRS 32

/* `pairs` alternating timings of one shape; returns 0 or -1 on a kernel error. */
static int bench(int64_t M, int64_t K, int64_t N, int pairs)
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
	double tk[MAX_PAIRS], tb[MAX_PAIRS], ratio[MAX_PAIRS];
	for (int r = 0; r < pairs; r++) {
		for (int k = 0; k < 2; k++) {
			double t0 = now();
			if ((r + k) % 2 == 0) {
				C = (RtTensor){ .dtype = DT_INVALID };
				RtKernelArgs a = { in, 2, &C, 1, NULL, &o, NULL };
				if (rt_kernel(rt_op_lookup("MatMul"))(&a, &e) < 0)
					return fprintf(stderr, "%s\n", e.msg), -1;
				tk[r] = now() - t0;
				rt_tensor_free(&C);
			} else {
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f,
					    rt_f32(&A), (int)K, rt_f32(&B), (int)N, 0.0f, ref, (int)N);
				tb[r] = now() - t0;
			}
		}
		ratio[r] = tb[r] / tk[r];
	}
	double fl = 2.0 * M * N * K * 1e-9;
	double mk = median(tk, pairs), mb = median(tb, pairs), mr = median(ratio, pairs);
	printf("matmul %5lldx%5lldx%5lld  kernel %7.1f GFLOP/s  cblas %7.1f GFLOP/s  ratio %.2f (median of %d pairs, %.2f-%.2f)\n",
	       (long long)M, (long long)K, (long long)N, fl / mk, fl / mb, mr, pairs, ratio[0], ratio[pairs - 1]);
	free(ref);
	rt_tensor_free(&A), rt_tensor_free(&B);
	return 0;
}

int main(void)
{
	openblas_set_num_threads(1);
	double load[3];
	if (getloadavg(load, 3) == 3)
		printf("load average %.2f %.2f %.2f (before)\n", load[0], load[1], load[2]);
	static const int64_t shapes[][3] = {
		{ 2048, 2048, 2048 }, { 1, 4096, 14336 }, { 512, 4096, 4096 }, { 128, 4096, 11008 }, { 64, 64, 64 },
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		if (bench(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][0] >= 2048 ? 5 : 9) < 0)
			return 1;
	if (getloadavg(load, 3) == 3)
		printf("load average %.2f %.2f %.2f (after)\n", load[0], load[1], load[2]);
	return 0;
}
