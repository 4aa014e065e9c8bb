/* testsuite/bench/bench_quantize.c: quantization throughput per format on one core.
 *
 * Quantizes 4 Mi Gaussian float32 values (seeded, runtime/random.h) with rt_quantize_blocks
 * (MX, NVFP4: values, codes and scales), rt_quantize_int and rt_round_tensor (scalar formats),
 * repeating until at least 0.3 s of this process's CPU time have passed, and prints one line
 * per format: "quantize FORMAT N elements/s (cpu)  M elements/s (wall)".  The machine may be
 * shared, so the figure that counts is elements per CPU-second of this (single-threaded)
 * process; wall-clock shows what the load left of it.  Goal (issue 19): >= 1.5e8 elements/s
 * for every MX format and NVFP4; the last line says whether each met it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/numerics.h"
#include "runtime/random.h"

#define N (1 << 22)

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void)
{
	float *x = malloc(N * sizeof *x), *deq = malloc(N * sizeof *deq), *tmp = malloc(N * sizeof *tmp);
	uint8_t *codes = malloc(N), *scales = malloc(N / 16 + 1);
	int32_t *icodes = malloc(N * sizeof *icodes);
	float *iscales = malloc((N / 32 + 1) * sizeof *iscales);
	int32_t *zp = malloc((N / 32 + 1) * sizeof *zp);
	if (!x || !deq || !tmp || !codes || !scales || !icodes || !iscales || !zp)
		return 1;
	rt_fill_normal(x, N, 0.0f, 1.0f, 42, 0);
	static const struct { const char *name; DType dt; int kind; } fmts[] = {
		{ "mxfp8_e4m3", DT_MXFP8, 0 }, { "mxfp8_e5m2", DT_MXFP8E5M2, 0 },
		{ "mxfp6_e3m2", DT_MXFP6, 0 }, { "mxfp6_e2m3", DT_MXFP6E2M3, 0 },
		{ "mxfp4", DT_MXFP4, 0 }, { "mxint8", DT_MXINT8, 0 }, { "nvfp4", DT_NVFP4, 0 },
		{ "int8", DT_I8, 1 }, { "int4", DT_I4, 1 }, { "int4_asym", DT_I4, 2 },
		{ "fp16", DT_F16, 3 }, { "bf16", DT_BF16, 3 }, { "fp8_e4m3", DT_F8E4M3, 3 },
		{ "fp4_e2m1", DT_F4E2M1, 3 },
	};
	QuantOpts o = { SCALE_FLOOR, 1, 0 };
	int missed = 0;
	for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
		long reps = 0;
		double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC), t;
		do {
			switch (fmts[f].kind) {
			case 0: rt_quantize_blocks(fmts[f].dt, x, N, &o, deq, codes, scales, NULL); break;
			case 1: rt_quantize_int(fmts[f].dt == DT_I8 ? 8 : 4, 0, x, N, 32, deq, icodes, iscales, NULL); break;
			case 2: rt_quantize_int(4, 1, x, N, 32, deq, icodes, iscales, zp); break;
			default:
				memcpy(tmp, x, N * sizeof *x);
				rt_round_tensor(fmts[f].dt, tmp, N, N, &o);
				break;
			}
			reps++;
			t = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
		} while (t < 0.3);
		double w = now(CLOCK_MONOTONIC) - w0, rate = (double)N * reps / t;
		printf("quantize %-11s %.3g elements/s (cpu)  %.3g elements/s (wall)\n", fmts[f].name,
		       rate, (double)N * reps / w);
		if (fmts[f].kind == 0 && rate < 1.5e8)
			missed++;
	}
	printf("quantize goal >= 1.5e8 elements/s (cpu) for MX and NVFP4: %s\n",
	       missed ? "MISSED" : "met");
	free(x); free(deq); free(tmp); free(codes); free(scales); free(icodes); free(iscales); free(zp);
	return 0;
}
