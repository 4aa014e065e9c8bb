/* runtime/blas.h: OpenBLAS core-type workaround.
 *
 * OpenBLAS 0.3.21 (Debian 12) picks its kernels at load time from cpuid and mis-detects some
 * recent Intel Xeons (family 6 model 207, Emerald Rapids, AVX-512 + AMX) as "Prescott", which
 * runs about 6x slower.  The driver asks rt_blas_fix_coretype() and, when it returns a name,
 * re-executes itself with OPENBLAS_CORETYPE set to it.
 */
#ifndef AICC_BLAS_H
#define AICC_BLAS_H

typedef struct RtCpuInfo {
	int intel;                  /* vendor GenuineIntel */
	unsigned family, model;     /* display family and model (extended fields folded in) */
	int avx2, fma, avx512f, avx512bw, avx512vl, avx512dq;
	int os_avx, os_avx512;      /* XCR0 enables the YMM / ZMM and opmask state */
} RtCpuInfo;

/* The OPENBLAS_CORETYPE to force for a CPU with features c when OpenBLAS reports `corename`,
 * or NULL when the detected core is fine.  Pure: unit-tested with injected values. */
const char *rt_blas_coretype_for(const char *corename, const RtCpuInfo *c);
/* This machine's features from cpuid/xgetbv (all zero off x86). */
void rt_cpu_info(RtCpuInfo *c);
/* rt_blas_coretype_for(openblas_get_corename(), this CPU); NULL when OPENBLAS_CORETYPE is
 * already set (the re-executed process must not loop). */
const char *rt_blas_fix_coretype(void);

#endif
