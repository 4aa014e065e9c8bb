/* runtime/kernels/gemm.c: the reference target's matrix product, with one summation order on
 * every machine.
 *
 * The rule (docs/numerics.md §Summation order): every output element is
 *     c = +0;  for k = 0, 1, ..., K-1:  c = fma(a[i,k], b[k,j], c)
 * in the element type (f32 or f64), one correctly rounded fused multiply-add per k, k ascending,
 * nothing else.  The result is therefore a function of the operands alone: it does not depend on
 * the CPU, the instruction set, the matrix shape, the blocking or the thread count.  The explicit
 * fma is a rounding rule of its own (IEEE 754-2019 §5.4.1 fusedMultiplyAdd), not compiler
 * contraction, so the rest of the runtime keeps -ffp-contract=off.
 *
 * Speed comes from vectorising across j and blocking for cache, never from splitting k: a
 * Goto/BLIS-style blocked product (Goto & van de Geijn, "Anatomy of high-performance matrix
 * multiplication", ACM TOMS 34(3), 2008; Van Zee & van de Geijn, BLIS, ACM TOMS 41(3), 2015)
 * whose register tile holds MR x NR accumulators and walks k in order.  When K is cut into
 * blocks of KC, a tile's f32 (f64) accumulators are stored to C and reloaded for the next block,
 * which is exact, so blocking changes no bit.  Kernels: AVX-512F (NR = 32 f32 / 16 f64), AVX2 +
 * FMA (16 / 8) and portable C with fmaf/fma (any CPU; the same bits, slowly), chosen at run time
 * from cpuid and XCR0 (runtime/blas.c rt_cpu_info), or forced with AICC_ISA=scalar|avx2|avx512
 * (the cross-core check, tools/cross-core.sh, runs all of them).
 */
#include "runtime/kernels/kernels_impl.h"

#include <stdlib.h>

#include "runtime/blas.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define GEMM_X86 1
#include <immintrin.h>
#endif

enum { MRMAX = 14, NRMAX = 32 };

/* A register-tile kernel: C[0..m)[0..NR) (:= 0 unless load) += sum over k < kc of
 * ap[k*MR + r] * bp[k*ldbp + c], one fma per k in k order; m is fixed per function. */
typedef void (*UkFn)(int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load);

typedef struct Gk {
	const char *isa;
	int es, mr, nr;             /* element bytes; register tile rows and columns */
	int64_t kc, mc, nc;         /* cache blocks along K, M, N */
	UkFn uk[MRMAX + 1];         /* uk[m]: an m x nr tile, 1 <= m <= mr */
} Gk;

/* ---- portable kernels: fmaf / fma, correctly rounded on every C11 implementation ---- */
#define SC_MR 4
#define SC_NR 8
#define SCALAR_BODY(T, FMA)                                                                      \
	const T *a = ap, *b = bp;                                                                \
	T *cc = c, acc[SC_MR][SC_NR];                                                            \
	for (int r = 0; r < m; r++)                                                              \
		for (int j = 0; j < SC_NR; j++)                                                  \
			acc[r][j] = load ? cc[r * ldc + j] : 0;                                  \
	for (int64_t k = 0; k < kc; k++)                                                         \
		for (int r = 0; r < m; r++)                                                      \
			for (int j = 0; j < SC_NR; j++)                                          \
				acc[r][j] = FMA(a[k * SC_MR + r], b[k * ldbp + j], acc[r][j]);   \
	for (int r = 0; r < m; r++)                                                              \
		for (int j = 0; j < SC_NR; j++)                                                  \
			cc[r * ldc + j] = acc[r][j];

static inline void sc_s(int m, int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load)
{ SCALAR_BODY(float, fmaf) }
static inline void sc_d(int m, int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load)
{ SCALAR_BODY(double, fma) }

#define UK_ARGS int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load
#define UK_PASS kc, ap, bp, ldbp, c, ldc, load
#define UK_DEF(pfx, body, m) static void pfx##m(UK_ARGS) { body(m, UK_PASS); }
#define UK_DEF4(pfx, body) UK_DEF(pfx, body, 1) UK_DEF(pfx, body, 2) UK_DEF(pfx, body, 3) UK_DEF(pfx, body, 4)
#define UK_LIST4(pfx) pfx##1, pfx##2, pfx##3, pfx##4
UK_DEF4(uk_sc_s, sc_s)
UK_DEF4(uk_sc_d, sc_d)

#ifdef GEMM_X86
/* ---- AVX-512F and AVX2 + FMA: one body, two vectors of W lanes per tile row ----
 * T element, V vector type, W lanes, MR the packed-A stride; LD/ST unaligned load and store,
 * Z zero, BC broadcast from memory, FMA fused multiply-add (a*b + c, one rounding). */
#define VBODY(T, V, W, MR, LD, ST, Z, BC, FMA)                                                  \
	const T *a = ap, *b = bp;                                                                \
	T *cc = c;                                                                               \
	V x[MR][2];                                                                              \
	_Pragma("GCC unroll 16")                                                                 \
	for (int r = 0; r < m; r++) {                                                            \
		x[r][0] = load ? LD(cc + r * ldc) : Z();                                         \
		x[r][1] = load ? LD(cc + r * ldc + W) : Z();                                     \
	}                                                                                        \
	_Pragma("GCC unroll 4")                                                                  \
	for (int64_t k = 0; k < kc; k++) {                                                       \
		V b0 = LD(b + k * ldbp), b1 = LD(b + k * ldbp + W);                              \
		_Pragma("GCC unroll 16")                                                         \
		for (int r = 0; r < m; r++) {                                                    \
			V av = BC(a + k * MR + r);                                               \
			x[r][0] = FMA(av, b0, x[r][0]);                                          \
			x[r][1] = FMA(av, b1, x[r][1]);                                          \
		}                                                                                \
	}                                                                                        \
	_Pragma("GCC unroll 16")                                                                 \
	for (int r = 0; r < m; r++) {                                                            \
		ST(cc + r * ldc, x[r][0]);                                                       \
		ST(cc + r * ldc + W, x[r][1]);                                                   \
	}

#define X512 __attribute__((always_inline, target("avx512f"))) static inline
#define X256 __attribute__((always_inline, target("avx2,fma"))) static inline
#define BC512S(p) _mm512_set1_ps(*(p))
#define BC512D(p) _mm512_set1_pd(*(p))
X512 void v512_s(int m, int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load)
{ VBODY(float, __m512, 16, 14, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_setzero_ps, BC512S, _mm512_fmadd_ps) }
X512 void v512_d(int m, int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load)
{ VBODY(double, __m512d, 8, 12, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_setzero_pd, BC512D, _mm512_fmadd_pd) }
X256 void v256_s(int m, int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load)
{ VBODY(float, __m256, 8, 6, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_setzero_ps, _mm256_broadcast_ss, _mm256_fmadd_ps) }
X256 void v256_d(int m, int64_t kc, const void *ap, const void *bp, int64_t ldbp, void *c, int64_t ldc, int load)
{ VBODY(double, __m256d, 4, 6, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_setzero_pd, _mm256_broadcast_sd, _mm256_fmadd_pd) }

#define UK_DEFX(attr, pfx, body, m) attr void pfx##m(UK_ARGS) { body(m, UK_PASS); }
#define A512 __attribute__((target("avx512f"))) static
#define A256 __attribute__((target("avx2,fma"))) static
#define UK_DEF6X(attr, pfx, body) UK_DEFX(attr, pfx, body, 1) UK_DEFX(attr, pfx, body, 2) \
	UK_DEFX(attr, pfx, body, 3) UK_DEFX(attr, pfx, body, 4) UK_DEFX(attr, pfx, body, 5) UK_DEFX(attr, pfx, body, 6)
#define UK_DEF12X(attr, pfx, body) UK_DEF6X(attr, pfx, body) UK_DEFX(attr, pfx, body, 7) \
	UK_DEFX(attr, pfx, body, 8) UK_DEFX(attr, pfx, body, 9) UK_DEFX(attr, pfx, body, 10) \
	UK_DEFX(attr, pfx, body, 11) UK_DEFX(attr, pfx, body, 12)
#define UK_LIST6(pfx) pfx##1, pfx##2, pfx##3, pfx##4, pfx##5, pfx##6
#define UK_LIST12(pfx) UK_LIST6(pfx), pfx##7, pfx##8, pfx##9, pfx##10, pfx##11, pfx##12
UK_DEF12X(A512, uk_512s, v512_s)
UK_DEFX(A512, uk_512s, v512_s, 13)
UK_DEFX(A512, uk_512s, v512_s, 14)
UK_DEF12X(A512, uk_512d, v512_d)
UK_DEF6X(A256, uk_256s, v256_s)
UK_DEF6X(A256, uk_256d, v256_d)
#endif

/* Cache blocks: KC x NR of B and MR x KC of A share L1, MC x KC of A sits in L2, KC x NC of B in
 * L2/L3 (BLIS's analytical model, Low et al., ACM TOMS 43(2), 2016); sizes measured on the bench
 * shapes (docs/numerics.md).  They only set speed: the result is the same for any values.  AVX2
 * f32: KC 384 and MC 132 (A's block 198 KiB of a 512 KiB L2; 128 rows make one M block, so each
 * packed B panel streams from memory once), chosen on the Llama-3.1-8B layer's 128-row products
 * (128x4096x14336, 128x14336x4096, 128x4096x4096), one thread, in alternating triples with
 * cblas_sgemm on a 2-core AMD EPYC at load 15-18: KC 256 -> 384 raised the median ratio to
 * OpenBLAS by 0.01-0.06, MC 72 -> 132 by a further 0.04-0.10. */
static const Gk kinds[RT_ISA_COUNT][2] = {
	[RT_ISA_SCALAR] = {
		{ "scalar", 4, SC_MR, SC_NR, 256, 64, 1024, { 0, UK_LIST4(uk_sc_s) } },
		{ "scalar", 8, SC_MR, SC_NR, 256, 64, 1024, { 0, UK_LIST4(uk_sc_d) } },
	},
#ifdef GEMM_X86
	[RT_ISA_AVX2] = {
		{ "avx2", 4, 6, 16, 384, 132, 2048, { 0, UK_LIST6(uk_256s) } },
		{ "avx2", 8, 6, 8, 256, 72, 1024, { 0, UK_LIST6(uk_256d) } },
	},
	[RT_ISA_AVX512] = {
		{ "avx512", 4, 14, 32, 384, 126, 2048, { 0, UK_LIST12(uk_512s), uk_512s13, uk_512s14 } },
		{ "avx512", 8, 12, 16, 256, 120, 1024, { 0, UK_LIST12(uk_512d) } },
	},
#endif
};

/* ---- instruction set ---- */
static const char *const isa_names[RT_ISA_COUNT] = { "scalar", "avx2", "avx512" };
static int isa_forced = -1;

const char *rt_isa_name(RtIsa i) { return (unsigned)i < RT_ISA_COUNT ? isa_names[i] : "?"; }

/* cpuid traps to the hypervisor in a virtual machine (microseconds), so it is asked once. */
RtIsa rt_isa_best(void)
{
	static int best = -1;
	if (best >= 0)
		return (RtIsa)best;
	best = RT_ISA_SCALAR;
#ifdef GEMM_X86
	RtCpuInfo c;
	rt_cpu_info(&c);
	if (c.os_avx512 && c.avx512f)
		best = RT_ISA_AVX512;
	else if (c.os_avx && c.avx2 && c.fma)
		best = RT_ISA_AVX2;
#endif
	return (RtIsa)best;
}

int rt_isa_set(RtIsa i)
{
	if ((int)i < 0) {
		isa_forced = -1;
		return 0;
	}
	if ((unsigned)i >= RT_ISA_COUNT || i > rt_isa_best())
		return -1;
	isa_forced = (int)i;
	return 0;
}

RtIsa rt_isa(void)
{
	static int from_env = -2;
	if (isa_forced >= 0)
		return (RtIsa)isa_forced;
	if (from_env == -2) {   /* AICC_ISA, once; a name this CPU cannot run is ignored */
		const char *s = getenv("AICC_ISA");
		from_env = -1;
		for (int i = 0; s && i < RT_ISA_COUNT; i++)
			if (strcmp(s, isa_names[i]) == 0 && (RtIsa)i <= rt_isa_best())
				from_env = i;
	}
	return from_env >= 0 ? (RtIsa)from_env : rt_isa_best();
}

/* ---- packing ---- */
/* ap[k*mr + r] := op(A)[i0 + r, k0 + k] for r < mn (0 for mn <= r < mr), k < kn, panel by panel
 * (each panel mr rows, kn*mr elements). */
#define PACK_A(T)                                                                                \
	static void pack_a_##T(T *ap, const T *A, int64_t lda, int ta, int64_t i0, int64_t mn,   \
			       int64_t k0, int64_t kn, int mr)                                   \
	{                                                                                        \
		for (int64_t p = 0; p < mn; p += mr, ap += kn * mr) {                            \
			int64_t rows = mn - p < mr ? mn - p : mr;                                \
			for (int64_t k = 0; k < kn; k++) {                                       \
				T *d = ap + k * mr;                                              \
				for (int64_t r = 0; r < rows; r++)                               \
					d[r] = ta ? A[(k0 + k) * lda + i0 + p + r]               \
						  : A[(i0 + p + r) * lda + k0 + k];              \
				for (int64_t r = rows; r < mr; r++)                              \
					d[r] = 0;                                                \
			}                                                                        \
		}                                                                                \
	}
/* bp[k*nr + c] := op(B)[k0 + k, j0 + c] per panel of nr columns (0 beyond nn). */
#define PACK_B(T)                                                                                \
	static void pack_b_##T(T *bp, const T *B, int64_t ldb, int tb, int64_t k0, int64_t kn,   \
			       int64_t j0, int64_t nn, int nr)                                   \
	{                                                                                        \
		for (int64_t p = 0; p < nn; p += nr, bp += kn * nr) {                            \
			int64_t cols = nn - p < nr ? nn - p : nr;                                \
			for (int64_t k = 0; k < kn; k++) {                                       \
				T *d = bp + k * nr;                                              \
				const T *s = B + (k0 + k) * ldb + j0 + p;                        \
				if (!tb && cols == 32) /* constant sizes: inlined moves */       \
					memcpy(d, s, 32 * sizeof *d);                            \
				else if (!tb && cols == 16)                                      \
					memcpy(d, s, 16 * sizeof *d);                            \
				else if (!tb && cols == 8)                                       \
					memcpy(d, s, 8 * sizeof *d);                             \
				else if (!tb)                                                    \
					memcpy(d, s, (size_t)cols * sizeof *d);                  \
				else                                                             \
					for (int64_t c = 0; c < cols; c++)                       \
						d[c] = B[(j0 + p + c) * ldb + k0 + k];           \
				for (int64_t c = cols; c < nr; c++)                              \
					d[c] = 0;                                                \
			}                                                                        \
		}                                                                                \
	}
PACK_A(float)
PACK_A(double)
PACK_B(float)
PACK_B(double)

static void pack_a(const Gk *g, void *ap, const void *A, int64_t lda, int ta, int64_t i0, int64_t mn, int64_t k0, int64_t kn)
{
	if (g->es == 4)
		pack_a_float(ap, A, lda, ta, i0, mn, k0, kn, g->mr);
	else
		pack_a_double(ap, A, lda, ta, i0, mn, k0, kn, g->mr);
}

static void pack_b(const Gk *g, void *bp, const void *B, int64_t ldb, int tb, int64_t k0, int64_t kn, int64_t j0, int64_t nn)
{
	if (g->es == 4)
		pack_b_float(bp, B, ldb, tb, k0, kn, j0, nn, g->nr);
	else
		pack_b_double(bp, B, ldb, tb, k0, kn, j0, nn, g->nr);
}

/* ---- the blocked product ---- */
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t roundup(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* One mr' x nr' tile at c (row stride ldc) from packed panels; a partial tile goes through a
 * full-width scratch tile so the kernel never touches memory outside C. */
static void tile(const Gk *g, int64_t mrr, int64_t nrr, int64_t kn, const char *ap, const char *bp, int64_t ldbp,
		 char *c, int64_t ldc, int load)
{
	if (nrr == g->nr) {
		g->uk[mrr](kn, ap, bp, ldbp, c, ldc, load);
		return;
	}
	_Alignas(64) char t[MRMAX * NRMAX * 8];
	size_t row = (size_t)nrr * (size_t)g->es;
	for (int64_t r = 0; load && r < mrr; r++)
		memcpy(t + r * g->nr * g->es, c + r * ldc * g->es, row);
	g->uk[mrr](kn, ap, bp, ldbp, t, g->nr, load);
	for (int64_t r = 0; r < mrr; r++)
		memcpy(c + r * ldc * g->es, t + r * g->nr * g->es, row);
}

/* ---- one column: C[i] := chain over k of fma(A[i,k], B[k]) for row-major A ----
 * (a squeeze-and-excitation block's 1x1 Conv on a pooled vector, a matrix-vector product with
 * N = 1).  Packing A for the register tiles would copy every element of A to use it once, so
 * eight rows' chains run side by side instead, each k ascending from +0: the same bits. */
#define GEMV1(name, T, FMA, attr)                                                                 \
	attr static void name(int64_t M, int64_t K, const T *A, int64_t lda, const T *B, int64_t ldb, \
			      T *C, int64_t ldc)                                                 \
	{                                                                                        \
		int64_t i = 0;                                                                   \
		for (; i + 8 <= M; i += 8) {                                                     \
			const T *a = A + i * lda;                                                \
			T s[8] = { 0 };                                                          \
			for (int64_t k = 0; k < K; k++) {                                        \
				T b = B[k * ldb];                                                \
				for (int r = 0; r < 8; r++)                                      \
					s[r] = FMA(a[r * lda + k], b, s[r]);                     \
			}                                                                        \
			for (int r = 0; r < 8; r++)                                              \
				C[(i + r) * ldc] = s[r];                                         \
		}                                                                                \
		for (; i < M; i++) {                                                             \
			T s = 0;                                                                 \
			for (int64_t k = 0; k < K; k++)                                          \
				s = FMA(A[i * lda + k], B[k * ldb], s);                          \
			C[i * ldc] = s;                                                          \
		}                                                                                \
	}
GEMV1(gemv1_s, float, fmaf, )
GEMV1(gemv1_d, double, fma, )
#ifdef GEMM_X86
/* the same C with the FMA instructions enabled, so that fmaf/fma compile to vfmadd (not a call) */
GEMV1(gemv1_fma_s, float, fmaf, __attribute__((target("avx2,fma"))))
GEMV1(gemv1_fma_d, double, fma, __attribute__((target("avx2,fma"))))
#endif

static void gemv1(const Gk *g, int64_t M, int64_t K, const char *A, int64_t lda, const char *B, int64_t ldb, char *C,
		  int64_t ldc)
{
#ifdef GEMM_X86
	if (strcmp(g->isa, "scalar") != 0) {   /* AVX2 and AVX-512 CPUs have FMA */
		if (g->es == 4)
			gemv1_fma_s(M, K, (const float *)A, lda, (const float *)B, ldb, (float *)C, ldc);
		else
			gemv1_fma_d(M, K, (const double *)A, lda, (const double *)B, ldb, (double *)C, ldc);
		return;
	}
#endif
	if (g->es == 4)
		gemv1_s(M, K, (const float *)A, lda, (const float *)B, ldb, (float *)C, ldc);
	else
		gemv1_d(M, K, (const double *)A, lda, (const double *)B, ldb, (double *)C, ldc);
}

/* C[i, 0..n) += bias[i] for i < m (f32; nothing when bias is NULL): a Conv's bias, added to
 * each finished tile while it is in cache, as the same f32 addition after the product. */
static void add_bias(char *c, int64_t ldc, int64_t m, int64_t n, const float *bias)
{
	for (int64_t i = 0; bias && i < m; i++) {
		float *r = (float *)c + i * ldc, b = bias[i];
		for (int64_t j = 0; j < n; j++)
			r[j] += b;
	}
}

/* The K block of gemm's product of M rows with B transposed or not (see gemm). */
static int64_t k_block(const Gk *g, int64_t M, int64_t K, int tb)
{
	int64_t kcmax = tb || M > 8 ? g->kc : 8;
	int64_t nkb = (K + kcmax - 1) / kcmax;
	return (K + nkb - 1) / nkb;
}

/* C[M,N] (row stride ldc) := op(A)[M,K] @ op(B)[K,N] by the rule of the file comment, then
 * + bias[i] per row when bias is given (f32 only).  pre (or NULL): A already packed, K block by
 * K block of k_block's size, each block all of A's rows in panels of mr (kn_prepacked_a); the
 * block of rows ic.. in the K block at pc starts at pre + (pc * roundup(M, mr) + ic * kn) elements.
 * preb (or NULL; only where B is packed, M > 24, B not transposed): B packed the same way by
 * kn_prepacked_b, its columns jc.. in the K block at pc at preb + (pc * roundup(N, nr) + jc * kn).
 * ep (or NULL; f32): its epilogue on each finished block of mc rows by nc columns (in L2), after
 * the bias. */
static int gemm(const Gk *g, int64_t M, int64_t N, int64_t K, const char *A, int64_t lda, int ta,
		const char *B, int64_t ldb, int tb, char *C, int64_t ldc, const float *bias, const char *pre,
		const char *preb, const KnEpi *ep, RtError *e)
{
	int64_t es = g->es;
	if (M <= 0 || N <= 0)
		return 0;
	if (K <= 0) {
		for (int64_t i = 0; i < M; i++)
			memset(C + i * ldc * es, 0, (size_t)(N * es));
		add_bias(C, ldc, M, N, bias);
		kn_epi(ep, (float *)C, ldc, M, N);
		return 0;
	}
	if (N == 1 && !ta) {   /* B's one column: k apart by ldb, or by 1 when B is transposed */
		gemv1(g, M, K, A, lda, B, tb ? 1 : ldb, C, ldc);
		add_bias(C, ldc, M, 1, bias);
		kn_epi(ep, (float *)C, ldc, M, 1);
		return 0;
	}
	/* B is read in place (no packing) when it is row-major and at most 24 rows use it: packing
	 * copies each element of B once, which costs about as much as a few tiles' uses of it
	 * (measured on the OCR models' Conv shapes, e.g. 24x864x576: 1.2x faster in place).  With
	 * at most 8 rows (one row panel) K is cut into blocks of 8 so that each tile streams 8 rows
	 * of B at a time (a matrix-vector product is bound by reading B: measured 2-3x faster than
	 * 256-row blocks).  M and K are cut into equal blocks (a thin last block would stream B for
	 * a few rows). */
	int packb = tb || M > 24;
	if (preb && (tb || !packb))
		preb = NULL;
	int64_t nmb = (M + g->mc - 1) / g->mc, Mr = roundup(M, g->mr), Nr = roundup(N, g->nr);
	int64_t kc = k_block(g, M, K, tb), mc = roundup((M + nmb - 1) / nmb, g->mr);
	int64_t nc = packb ? roundup(min64(N, g->nc), g->nr) : g->nr;
	char *buf = rt_malloc((size_t)((mc * kc + kc * nc) * es + 128));
	if (!buf)
		return rt_errorf(e, RT_ENOMEM, "out of memory for matrix-product panels");
	char *ap = (char *)(((uintptr_t)buf + 63) & ~(uintptr_t)63);
	char *bp = ap + roundup(mc * kc * es, 64);
	int64_t jstep = packb ? nc : N;
	for (int64_t jc = 0; jc < N; jc += jstep) {
		int64_t jn = min64(jstep, N - jc);
		for (int64_t pc = 0; pc < K; pc += kc) {
			int64_t kn = min64(kc, K - pc);
			for (int64_t ic = 0; ic < M; ic += mc) {
				int64_t mn = min64(mc, M - ic);
				const char *apb = pre ? pre + (pc * Mr + ic * kn) * es : ap;
				if (!pre)
					pack_a(g, ap, A, lda, ta, ic, mn, pc, kn);
				for (int64_t jr = 0; jr < jn; jr += g->nr) {
					int64_t nrr = min64(g->nr, jn - jr), ldbp = g->nr;
					const char *bpan = bp + jr * kn * es;
					if (preb)
						bpan = preb + (pc * Nr + (jc + jr) * kn) * es;
					else if (packb && ic == 0)   /* packed as first used: the copy overlaps the products */
						pack_b(g, bp + jr * kn * es, B, ldb, tb, pc, kn, jc + jr, nrr);
					else if (!packb && nrr == g->nr) {
						bpan = B + (pc * ldb + jc + jr) * es;
						ldbp = ldb;
					} else if (!packb) {
						pack_b(g, bp, B, ldb, 0, pc, kn, jc + jr, nrr);
						bpan = bp;
					}
					for (int64_t ir = 0; ir < mn; ir += g->mr) {
						char *ct = C + ((ic + ir) * ldc + jc + jr) * es;
						tile(g, min64(g->mr, mn - ir), nrr, kn, apb + ir * kn * es, bpan, ldbp, ct, ldc, pc > 0);
						if (bias && pc + kn == K)
							add_bias(ct, ldc, min64(g->mr, mn - ir), nrr, bias + ic + ir);
					}
				}
				if (pc + kn == K)
					kn_epi(ep, (float *)(C + (ic * ldc + jc) * es), ldc, mn, jn);
			}
		}
	}
	rt_free(buf);
	return 0;
}

/* ---- direct depthwise rows: out[i] := chain over taps t of fma(w[t], taps[t][i]) ----
 * Each output element runs the taps in order from +0, exactly the im2col product's chain.  The
 * vector kernels keep four (AVX2) or two (AVX-512) vectors of outputs in flight, so that the
 * chains of neighbouring outputs overlap (one chain alone waits out the fma latency per tap). */
#ifdef GEMM_X86
__attribute__((target("avx512f"))) static void dw512(int64_t n, const float *w, int nt, const float *const *taps,
						      float *out)
{
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
		for (int t = 0; t < nt; t++) {
			__m512 wv = _mm512_set1_ps(w[t]);
			const float *p = taps[t] + i;
			a0 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(p), a0);
			a1 = _mm512_fmadd_ps(wv, _mm512_loadu_ps(p + 16), a1);
		}
		_mm512_storeu_ps(out + i, a0);
		_mm512_storeu_ps(out + i + 16, a1);
	}
	for (; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 acc = _mm512_setzero_ps();
		for (int t = 0; t < nt; t++)
			acc = _mm512_fmadd_ps(_mm512_set1_ps(w[t]), _mm512_maskz_loadu_ps(m, taps[t] + i), acc);
		_mm512_mask_storeu_ps(out + i, m, acc);
	}
}

__attribute__((target("avx2,fma"))) static void dw256(int64_t n, const float *w, int nt, const float *const *taps,
						      float *out)
{
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
		for (int t = 0; t < nt; t++) {
			__m256 wv = _mm256_broadcast_ss(w + t);
			const float *p = taps[t] + i;
			a0 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p), a0);
			a1 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 8), a1);
			a2 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 16), a2);
			a3 = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p + 24), a3);
		}
		_mm256_storeu_ps(out + i, a0);
		_mm256_storeu_ps(out + i + 8, a1);
		_mm256_storeu_ps(out + i + 16, a2);
		_mm256_storeu_ps(out + i + 24, a3);
	}
	for (; i + 8 <= n; i += 8) {
		__m256 acc = _mm256_setzero_ps();
		for (int t = 0; t < nt; t++)
			acc = _mm256_fmadd_ps(_mm256_broadcast_ss(w + t), _mm256_loadu_ps(taps[t] + i), acc);
		_mm256_storeu_ps(out + i, acc);
	}
	for (; i < n; i++) {
		float acc = 0;
		for (int t = 0; t < nt; t++)
			acc = fmaf(w[t], taps[t][i], acc);
		out[i] = acc;
	}
}
#endif

static void dw_scalar(int64_t n, const float *w, int nt, const float *const *taps, float *out)
{
	for (int64_t i = 0; i < n; i++) {
		float acc = 0;
		for (int t = 0; t < nt; t++)
			acc = fmaf(w[t], taps[t][i], acc);
		out[i] = acc;
	}
}

/* ---- implicit-GEMM convolution: the product over an im2col that is never built ----
 * A 2-D Conv (a width stride split into column phases of P, conv.c) reads, for output row oh and reduction index k = (c, t) (channel
 * c, tap t of the window), the padded input row segment P + c*cs + oh*rs + off[t] + ow: the im2col
 * matrix's row k restricted to output row oh, in place.  The register tile is the AVX2 one above
 * (6 rows of W by 16 output columns, one fma per k in k order from +0), so every output is the
 * same chain as kn_sgemm over the im2col: the same bits. */
#ifdef GEMM_X86
/* koff[k]: where row k of the im2col starts, relative to b (k < K); the accumulators are twelve
 * named vectors so that they stay in registers. */
__attribute__((target("avx2,fma"))) static void ukc256(int64_t K, const int64_t *koff, const float *ap, const float *b,
							float *c, int64_t ldc)
{
	__m256 x00 = _mm256_setzero_ps(), x01 = x00, x10 = x00, x11 = x00, x20 = x00, x21 = x00;
	__m256 x30 = x00, x31 = x00, x40 = x00, x41 = x00, x50 = x00, x51 = x00;
	for (int64_t k = 0; k < K; k++, ap += 6) {
		const float *bt = b + koff[k];
		__m256 b0 = _mm256_loadu_ps(bt), b1 = _mm256_loadu_ps(bt + 8), av;
#define ROW(r) av = _mm256_broadcast_ss(ap + r), x##r##0 = _mm256_fmadd_ps(av, b0, x##r##0), \
	       x##r##1 = _mm256_fmadd_ps(av, b1, x##r##1)
		ROW(0), ROW(1), ROW(2), ROW(3), ROW(4), ROW(5);
#undef ROW
	}
#define ST(r) _mm256_storeu_ps(c + r * ldc, x##r##0), _mm256_storeu_ps(c + r * ldc + 8, x##r##1)
	ST(0), ST(1), ST(2), ST(3), ST(4), ST(5);
#undef ST
}
#endif

int kn_conv_implicit_ok(void)
{
#ifdef GEMM_X86
	return rt_isa() == RT_ISA_AVX2;
#else
	return 0;
#endif
}

int kn_conv_implicit(int64_t M, int64_t C, int nt, const int64_t *off, const float *W, const float *pre,
		     const float *P, int64_t cs, int64_t rs, int64_t OH, int64_t OW, float *Y, const float *bias,
		     const KnEpi *ep, RtError *e)
{
#ifdef GEMM_X86
	const Gk *g = &kinds[RT_ISA_AVX2][0];
	int64_t K = C * nt, np = (M + 5) / 6, on = OH * OW;
	/* row panels a block at a time whose packed W stays in L2 (about 192 KiB) */
	int64_t pb = (int64_t)(192 << 10) / (6 * K * (int64_t)sizeof(float));
	pb = pb < 1 ? 1 : pb;
	float *pk = pre ? NULL : rt_malloc((size_t)(np * 6 * K + 16) * sizeof *pk);
	int64_t *koff = rt_malloc((size_t)(K + 1) * sizeof *koff);
	if ((!pre && !pk) || !koff) {
		rt_free(pk), rt_free(koff);
		return rt_errorf(e, RT_ENOMEM, "Conv: out of memory for packed weights");
	}
	if (!pre)
		pack_a(g, pk, W, K, 0, 0, M, 0, K);   /* panels of 6 rows (zeros past M), k-major */
	const float *ap = pre ? pre : pk;
	for (int64_t ch = 0; ch < C; ch++)
		for (int t = 0; t < nt; t++)
			koff[ch * nt + t] = ch * cs + off[t];
	_Alignas(32) float t[6 * 16];
	for (int64_t p0 = 0; p0 < np; p0 += pb)
		for (int64_t oh = 0; oh < OH; oh++) {
			for (int64_t ow = 0; ow < OW; ow += 16) {
				for (int64_t p = p0; p < np && p < p0 + pb; p++) {
					int64_t m0 = p * 6, mr = M - m0 < 6 ? M - m0 : 6, nr = OW - ow < 16 ? OW - ow : 16;
					float *c = Y + m0 * on + oh * OW + ow;
					if (mr == 6 && nr == 16) {
						ukc256(K, koff, ap + p * 6 * K, P + oh * rs + ow, c, on);
					} else {
						ukc256(K, koff, ap + p * 6 * K, P + oh * rs + ow, t, 16);
						for (int64_t r = 0; r < mr; r++)
							memcpy(c + r * on, t + r * 16, (size_t)nr * sizeof *t);
					}
					add_bias((char *)c, on, mr, nr, bias ? bias + m0 : NULL);
				}
			}
			if (ep) {   /* the block's rows of output row oh, finished */
				int64_t m0 = p0 * 6, m1 = min64(M, min64(np, p0 + pb) * 6);
				kn_epi(ep, Y + m0 * on + oh * OW, on, m1 - m0, OW);
			}
		}
	rt_free(pk), rt_free(koff);
	return 0;
#else
	return rt_errorf(e, RT_EINTERNAL, "Conv: implicit GEMM without x86 kernels");
#endif
}

KnDwRow kn_dw_row(void)
{
#ifdef GEMM_X86
	RtIsa isa = rt_isa();
	if (isa == RT_ISA_AVX512)
		return dw512;
	if (isa == RT_ISA_AVX2)
		return dw256;
#endif
	return dw_scalar;
}

int kn_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int ta, const float *B, int64_t ldb,
	     int tb, float *C, int64_t ldc, RtError *e)
{
	return kn_sgemm_bias(M, N, K, A, lda, ta, B, ldb, tb, C, ldc, NULL, NULL, NULL, e);
}

int kn_sgemm_bias(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int ta, const float *B, int64_t ldb,
		  int tb, float *C, int64_t ldc, const float *bias, const float *pre, const KnEpi *ep, RtError *e)
{
	return gemm(&kinds[rt_isa()][0], M, N, K, (const char *)A, lda, ta, (const char *)B, ldb, tb, (char *)C, ldc,
		    bias, (const char *)pre, NULL, ep, e);
}

void rt_pack_free(RtPack *p)
{
	if (p) {
		rt_free(p->data);
		*p = (RtPack){ 0 };
	}
}

/* The packed data in slot p when it was packed as `want` says (*fresh = 0), else a fresh block of
 * count floats recorded as want in p (*fresh = 1: the caller packs into it); NULL when memory
 * runs out (the caller packs per call). */
static float *slot(RtPack *p, RtPack want, int64_t count, int *fresh)
{
	*fresh = 0;
	if (p->data && p->src == want.src && p->isa == want.isa && p->groups == want.groups && p->m == want.m &&
	    p->k == want.k && p->n == want.n && p->kc == want.kc)
		return p->data;
	rt_pack_free(p);
	if (!(want.data = rt_malloc((size_t)count * sizeof(float))))
		return NULL;
	*p = want;
	*fresh = 1;
	return p->data;
}

const float *kn_prepacked_a(const RtTensor *W, int64_t G, int64_t M, int64_t K, int whole, int64_t *gstride)
{
	RtPack *p = W->pack;
	RtIsa isa = rt_isa();
	const Gk *g = &kinds[isa][0];
	if (!p || W->dtype != DT_F32 || G < 1 || M < 1 || K < 1 || W->n != G * M * K || (whole && isa != RT_ISA_AVX2))
		return NULL;
	int64_t kc = whole ? K : k_block(g, M, K, 0), Mr = roundup(M, g->mr);
	*gstride = Mr * K;
	int fresh;
	float *d = slot(p, (RtPack){ W->data, (int)isa, G, M, K, 0, kc, NULL }, G * Mr * K, &fresh);
	for (int64_t gi = 0; d && fresh && gi < G; gi++)
		for (int64_t pc = 0; pc < K; pc += kc)
			pack_a(g, d + gi * Mr * K + pc * Mr, rt_f32(W) + gi * M * K, K, 0, 0, M, pc, min64(kc, K - pc));
	return d;
}

int kn_sgemm_preb(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb, float *C,
		  int64_t ldc, const float *preb, RtError *e)
{
	return gemm(&kinds[rt_isa()][0], M, N, K, (const char *)A, lda, 0, (const char *)B, ldb, 0, (char *)C, ldc, NULL,
		    NULL, (const char *)preb, NULL, e);
}

const float *kn_prepacked_b(const RtTensor *W, int64_t G, int64_t K, int64_t N, int64_t M, int64_t *gstride)
{
	RtPack *p = W->pack;
	RtIsa isa = rt_isa();
	const Gk *g = &kinds[isa][0];
	if (!p || M <= 24 || W->dtype != DT_F32 || G < 1 || K < 1 || N < 2 || W->n != G * K * N)
		return NULL;   /* M <= 24 or N = 1: gemm reads B in place */
	int64_t kc = k_block(g, M, K, 0), Nr = roundup(N, g->nr);
	*gstride = Nr * K;
	int fresh;   /* m = 0: a B layout (kn_prepacked_a's has m >= 1) */
	float *d = slot(p, (RtPack){ W->data, (int)isa, G, 0, K, N, kc, NULL }, G * Nr * K, &fresh);
	for (int64_t gi = 0; d && fresh && gi < G; gi++)
		for (int64_t pc = 0; pc < K; pc += kc)
			pack_b(g, d + gi * Nr * K + pc * Nr, rt_f32(W) + gi * K * N, N, 0, pc, min64(kc, K - pc), 0, N);
	return d;
}

int kn_dgemm(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, int ta, const double *B, int64_t ldb,
	     int tb, double *C, int64_t ldc, RtError *e)
{
	return gemm(&kinds[rt_isa()][1], M, N, K, (const char *)A, lda, ta, (const char *)B, ldb, tb, (char *)C, ldc,
		    NULL, NULL, NULL, NULL, e);
}
