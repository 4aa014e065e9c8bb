/* runtime/kernels/kernels_impl.h: private helpers shared by the reference kernels.
 *
 * Provides output allocation with the caller's planned dtype, axis normalisation, ONNX
 * multidirectional broadcasting (shape and a strided multi-tensor iterator), whole-tensor
 * loads into double scratch arrays, the accumulation-precision rule and the final rounding of
 * a result to its dtype's grid.  Kernels compute in double scratch and round every accumulation
 * step to f32 unless f64 accumulation is on: since double has more than 2*24+2 significand bits,
 * (float)(a op b) computed in double equals the f32 operation exactly (no double rounding), so
 * one code path serves both precisions.  Requires runtime/rt.h and runtime/kernels.h only.
 */
#ifndef AICC_KERNELS_IMPL_H
#define AICC_KERNELS_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "runtime/kernels.h"
#include "runtime/numerics.h"


/* Tests set this to run every kernel's general (double) path instead of its f32 fast path, to
 * check that both give the same bits (testsuite/unit/test_fastpaths.c). */
extern int kn_generic_only;

/* Scratch and output allocation. */
double *kn_alloc(int64_t n, RtError *e);
/* Allocates out[i] with the planned dtype, or def when the caller left it DT_INVALID. */
int kn_out(const RtKernelArgs *a, int i, DType def, int rank, const int64_t *dims, RtError *e);
/* kn_out without zero-filling: the kernel writes every element. */
int kn_out_raw(const RtKernelArgs *a, int i, DType def, int rank, const int64_t *dims, RtError *e);
/* Allocates out[i] with the shape of t. */
int kn_out_like(const RtKernelArgs *a, int i, DType def, const RtTensor *t, RtError *e);
/* Frees every output allocated so far (on an error path). */
void kn_free_outs(const RtKernelArgs *a);

/* The whole tensor as doubles (a fresh array, rt_free it). */
double *kn_load(const RtTensor *t, RtError *e);
/* Stores n doubles into t (already allocated) and rounds t to its dtype (kn_finish). */
int kn_store(RtTensor *t, const double *v, const RtExecOpts *o, RtError *e);
/* Rounds t in place to its dtype: narrow floats to their grid (numerics API), integers wrap to
 * their width as two's complement (u8 modulo 256), bool to 0/1. */
int kn_finish(RtTensor *t, const RtExecOpts *o, RtError *e);
/* x rounded to the integer dtype d (wrapping) or unchanged for other dtypes. */
int64_t kn_wrap_int(DType d, int64_t x);
/* Saturating conversion of an already-rounded value to integer dtype d. */
int64_t kn_sat_int(DType d, double x);
/* Round-to-nearest-even of x (ONNX Round, QuantizeLinear). */
double kn_rne(double x);

/* Accumulate in f64 when opts asks for it or any float input is f64. */
int kn_acc64(const RtKernelArgs *a);
static inline double kn_acc(int f64, double v) { return f64 ? v : (double)(float)v; }

/* Input i (NULL when absent or beyond nin). */
static inline const RtTensor *kn_in(const RtKernelArgs *a, int i)
{ return i < a->nin ? a->in[i] : NULL; }
static inline int kn_isint(DType d)
{ int k = rt_dtypes[d].kind; return k == K_INT || k == K_UINT || k == K_BOOL; }

/* Normalises axis into [0, rank) or fails naming op. */
int kn_axis(const char *op, int64_t axis, int rank, int *out, RtError *e);
/* Reads an i64 tensor (shape, axes, pads...) of at most RT_MAX_RANK*2 elements into v. */
int kn_ints(const char *op, const RtTensor *t, int64_t *v, int max, int *n, RtError *e);
int64_t kn_numel(int rank, const int64_t *dims);

/* ONNX multidirectional broadcasting of n shapes into (rank, dims). */
int kn_bcast(const char *op, const RtTensor *const *ts, int n, int *rank, int64_t *dims, RtError *e);
/* Element strides of t viewed with the broadcast shape (0 on broadcast axes). */
void kn_bstrides(const RtTensor *t, int rank, const int64_t *dims, int64_t *str);
/* Row-major strides of a contiguous shape. */
void kn_strides(int rank, const int64_t *dims, int64_t *str);

/* Walks a broadcast shape in row-major order keeping the offset of up to 4 operands. */
typedef struct KnIter {
	int rank, nt;
	int64_t dims[RT_MAX_RANK], idx[RT_MAX_RANK];
	int64_t str[4][RT_MAX_RANK];
	int64_t off[4];
} KnIter;
void kn_iter_init(KnIter *it, int rank, const int64_t *dims, const RtTensor *const *ts, int nt);
void kn_iter_next(KnIter *it);

/* A broadcast shape walked by contiguous rows: adjacent axes that every operand steps through
 * contiguously (or not at all) are merged, the last merged axis is the row (`inner` elements,
 * operand j advancing by istr[j], 0 or 1 for broadcast or dense operands), and `it` walks the
 * rows: it.off[j] is operand j's offset at the start of row r, the output's is r * inner. */
typedef struct KnRows {
	int64_t inner, nrows, istr[4];
	KnIter it;
} KnRows;
void kn_rows_init(KnRows *r, int rank, const int64_t *dims, const RtTensor *const *ts, int nt);

/* y := x with axes permuted: y's axis k is x's axis perm[k]. */
void kn_transpose(const double *x, int rank, const int64_t *dims, const int *perm, double *y);
/* x regrouped as [nrows, rowlen]: the axes with red[k] == 0 outer (in order), the axes with
 * red[k] != 0 inner, so each row holds one reduction group.  A fresh array. */
double *kn_gather_rows(const double *x, int rank, const int64_t *dims, const int *red,
		       int64_t *nrows, int64_t *rowlen, RtError *e);
/* Inverse of kn_gather_rows for the same shape and mask: scatters rows back into y. */
void kn_scatter_rows(const double *rows, int rank, const int64_t *dims, const int *red, double *y);

/* Softmax-style exponential: exp(x), or the FA4 software exp2 polynomial on x*log2(e) when
 * opts->exp2_poly > 0 (numerics.md §9). */
double kn_exp(const RtExecOpts *o, double x);
/* Softmax of one contiguous row in place (log-softmax when logsm), max-subtracted. */
void kn_softmax_row(const RtExecOpts *o, int f64, double *x, int64_t n, int logsm);
/* FlashAttention-4 software 2^x in f32 with a degree-deg polynomial (numerics.md §9). */
float kn_exp2_fa4(float x, int deg);

/* Dense row-major matrix product C[M,N] = A[M,K] @ B[K,N] on doubles with the numerics of o
 * (f32/f64 accumulation, operand format, FP8 promotion).  Used by MatMul's non-f32 paths,
 * Attention, Conv, Einsum and GroupedMatMul. */
int kn_gemm(const RtExecOpts *o, int f64, int64_t M, int64_t N, int64_t K,
	    const double *A, int64_t lda, int transa, const double *B, int64_t ldb, int transb,
	    double *C, RtError *e);

/* Every kernel, declared from ir/ops.def. */
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) \
	int rk_##kernel(const RtKernelArgs *a, RtError *e);
#include "ir/ops.def"
#undef OP

/* C[M,N] (row stride ldc) := op(A)[M,K] @ op(B)[K,N], op transposing when ta/tb, with every
 * element accumulated as c = +0; c = fma(a[i,k], b[k,j], c) for k = 0..K-1 ascending in f32
 * (sgemm) or f64 (dgemm): the same bits on every CPU, shape and blocking (runtime/kernels/gemm.c,
 * docs/numerics.md).  0, or -1 with e set when scratch memory runs out. */
int kn_sgemm(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int ta, const float *B, int64_t ldb,
	     int tb, float *C, int64_t ldc, RtError *e);
int kn_dgemm(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, int ta, const double *B, int64_t ldb,
	     int tb, double *C, int64_t ldc, RtError *e);
/* kn_sgemm, then C[i, j] += bias[i] (f32) on each finished tile while it is in cache: the same
 * bits as the product followed by kn_bias_f32.  bias NULL: kn_sgemm.  pre (or NULL): A (row-major,
 * lda = K, not transposed) as kn_prepacked_a packed it. */
int kn_sgemm_bias(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, int ta, const float *B, int64_t ldb,
		  int tb, float *C, int64_t ldc, const float *bias, const float *pre, RtError *e);
/* A constant f32 weight W of G groups of M x K row-major matrices, packed once for kn_sgemm_bias
 * (whole = 0: B not transposed) or kn_conv_implicit (whole = 1) into W's session slot (RtPack)
 * and reused while its data, the ISA and the shape stay the same; group g's panels at
 * result + g * *gstride.  NULL (pack per call) when W has no slot, is not f32 of G*M*K values,
 * or memory runs out.  The packed values are A's own: the same bits as packing per call. */
const float *kn_prepacked_a(const RtTensor *W, int64_t G, int64_t M, int64_t K, int whole, int64_t *gstride);

/* Implicit-GEMM 2-D convolution of one group (runtime/kernels/gemm.c; a width stride is folded
 * into P's column phases by the caller, conv.c):
 * Y[m, oh*OW + ow] := +0, then for c < C, t < nt in order fma(W[m, c*nt + t],
 * P[c*cs + oh*rs + off[t] + ow], .), then + bias[m] (bias NULL: none): kn_sgemm's chain over the
 * im2col, in place on P (the zero-padded input; 16 floats past its end are read, never used);
 * pre (or NULL): W as kn_prepacked_a(.., whole = 1) packed it.
 * kn_conv_implicit_ok: 1 when rt_isa() has its kernel (AVX2). */
int kn_conv_implicit_ok(void);
int kn_conv_implicit(int64_t M, int64_t C, int nt, const int64_t *off, const float *W, const float *pre,
		     const float *P, int64_t cs, int64_t rs, int64_t OH, int64_t OW, float *Y, const float *bias, RtError *e);

/* A depthwise-convolution row: out[i] := +0, then for each tap t < nt in order
 * out[i] := fma(w[t], taps[t][i], out[i]): the same chain as kn_sgemm over an im2col (the same
 * bits on every ISA).  kn_dw_row returns the one for rt_isa(). */
typedef void (*KnDwRow)(int64_t n, const float *w, int nt, const float *const *taps, float *out);
KnDwRow kn_dw_row(void);
/* Whether o leaves f32 products plain (no operand format, no FP8 accumulation model). */
int kn_plain_f32(const RtExecOpts *o);

/* f32 matrix product through kn_sgemm (C[M,N] = op(A) @ op(B), ldc = N), applying
 * opts->mma_in operand rounding and the FP8 promotion model when set. */
int kn_mm_f32(const RtExecOpts *o, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
	      int transa, const float *B, int64_t ldb, int transb, float *C, RtError *e);
/* Hopper FP8 tensor-core dot product model (numerics.md §7) of a[0..K) and b[0..K) (b with
 * stride ldb): 13 fraction bits, 32-product MMA steps, promotion to f32 every promote_k. */
float kn_hopper_dot(const float *a, const float *b, int64_t ldb, int64_t K, int promote_k);

/* y[m, o] += B[b0 + m] (rounded to f32) for m < rows, o < n: a Conv's or ConvTranspose's bias on
 * f32 storage (B NULL: nothing). */
static inline void kn_bias_f32(float *y, const RtTensor *B, int64_t b0, int64_t rows, int64_t n)
{
	for (int64_t m = 0; B && m < rows; m++) {
		float b = (float)rt_get(B, b0 + m);
		for (int64_t o = 0; o < n; o++)
			y[m * n + o] += b;
	}
}

/* A loop function compiled also for AVX-512 and AVX2 and picked for the CPU at load (GCC's
 * function multiversioning): for elementwise rows whose operations (+ - * /, comparisons,
 * conversions) round the same at any vector width, so only speed changes; -ffp-contract=off
 * still forbids fused multiply-adds. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define KN_VEC __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define KN_VEC
#endif

#define KN_TRY(x) do { if ((x) < 0) goto fail; } while (0)

#endif
