/* runtime/kernels/matmul.c: MatMul, Gemm, MatMulInteger, QLinearMatMul and the shared
 * matrix-product engine.
 *
 * f32 products go through kn_sgemm (one call per broadcast batch, directly on the tensors'
 * storage), f64 (inputs f64 or opts->accum_f64) through kn_dgemm: one fma per k in ascending k
 * order for every element, so results do not depend on the host (runtime/kernels/gemm.c).  When
 * opts->mma_in names a narrow operand format, A is rounded to it along its rows and B along its
 * columns (block scales run along K, as tensor cores consume them), then the products are
 * accumulated in f32; with opts->fp8_promote_k > 0 the accumulation follows the Hopper FP8
 * model of numerics.md §7 instead.  With opts->fp8_scale the FP8 operands are first scaled
 * (per tensor, per 1x128 tile, per 128x128 block, f32 scales) and the scales are multiplied in
 * when the accumulator is promoted, as DeepSeek-V3 does (fp8_* below).  Integer products are
 * exact in i64.
 * Specs: https://onnx.ai/onnx/operators/onnx__MatMul.html, onnx__Gemm.html,
 * onnx__MatMulInteger.html, onnx__QLinearMatMul.html.
 */
#include "runtime/kernels/kernels_impl.h"

#include <float.h>

/* ---- the Hopper FP8 accumulation model (numerics.md §7, DeepSeek-V3 §3.3.2) ---- */
enum { HOP_FRAC = 13, HOP_MMA_K = 32 };

/* x truncated toward zero to a multiple of 2^q. */
static double trunc_to(double x, int q) { return ldexp(trunc(ldexp(x, -q)), q); }

/* floor(log2 |x|) for x != 0. */
static int ilog2(double x)
{
	int ex;
	frexp(x, &ex);
	return ex - 1;
}

/* One 32-product MMA step: align every term (products and the running sum) to the largest
 * exponent, keep HOP_FRAC fraction bits (truncating), add exactly, truncate the sum again. */
static double hopper_step(double acc, const double *p, int n)
{
	int emax = INT32_MIN;
	if (acc != 0)
		emax = ilog2(acc);
	for (int i = 0; i < n; i++)
		if (p[i] != 0 && ilog2(p[i]) > emax)
			emax = ilog2(p[i]);
	if (emax == INT32_MIN)
		return 0;
	double s = trunc_to(acc, emax - HOP_FRAC);
	for (int i = 0; i < n; i++)
		s += trunc_to(p[i], emax - HOP_FRAC);   /* exact: all terms share one fine grid */
	return s == 0 ? 0 : trunc_to(s, ilog2(s) - HOP_FRAC);
}

/* acc plus the K products a[k]*b[k*ldb] through the limited-precision tensor-core sum, promoted
 * every promote_k products (0: only at the end): the partial sum times `scale` (the group's
 * dequantization scales, numerics.md §7) rounded to f32 and added with RNE. */
static float hopper_acc(float acc, const float *a, const float *b, int64_t ldb, int64_t K, int promote_k, double scale)
{
	double tc = 0, p[HOP_MMA_K];
	int64_t since = 0;
	for (int64_t k0 = 0; k0 < K; k0 += HOP_MMA_K) {
		int n = (int)(K - k0 < HOP_MMA_K ? K - k0 : HOP_MMA_K);
		for (int i = 0; i < n; i++)
			p[i] = (double)a[k0 + i] * (double)b[(k0 + i) * ldb];   /* exact */
		tc = hopper_step(tc, p, n);
		since += n;
		if (promote_k > 0 && since >= promote_k) {
			acc = acc + (float)(tc * scale);   /* promotion: round to f32, add with RNE */
			tc = 0;
			since = 0;
		}
	}
	return since ? acc + (float)(tc * scale) : acc;
}

float kn_hopper_dot(const float *a, const float *b, int64_t ldb, int64_t K, int promote_k)
{
	return hopper_acc(0, a, b, ldb, K, promote_k, 1);
}

/* ---- scaled FP8 operands ----
 * Per tensor (Transformer Engine current scaling, numerics.md §5): scale = fp32(max/amax)
 * (FLT_MAX when that overflows, 1 when amax = 0), q = sat(x * scale), decode scale fp32(1/scale).
 * Per 1x128 tile or 128x128 block (DeepSeek-V3, arXiv 2412.19437 §3.3.1; inference/kernel.py
 * act_quant; numerics.md §5): s = fp32(max(amax, 1e-4) / max), q = sat(x / s), s kept in f32
 * (not E8M0); a short edge block takes the amax of what it holds (zero padding changes no amax).
 * `max` is the element format's largest finite value (448 for E4M3).  The product sums q_a*q_b per
 * 128-element K group and multiplies the group's s_a*s_b in at promotion (§3.3.2): every
 * fp8_promote_k products on the Hopper model, or once per group with f32 accumulation. */
#define FP8_GROUP 128          /* K elements per scale group (DeepSeek-V3 §3.3.1) */
#define FP8_AMAX_FLOOR 1e-4f   /* DeepSeek-V3 inference/kernel.py act_quant: max(amax, 1e-4) */

/* Quantizes the rb x kb block at x (row stride K) in place to fmt codes; returns its decode scale. */
static float fp8_block(DType fmt, int tensor, float *x, int64_t K, int64_t rb, int64_t kb)
{
	float amax = 0, fmax_ = rt_round(fmt, FLT_MAX, 1), enc, dec;   /* saturation: the largest finite */
	for (int64_t r = 0; r < rb; r++)
		for (int64_t k = 0; k < kb; k++)
			amax = fmaxf(amax, fabsf(x[r * K + k]));   /* NaN ignored: it stays NaN below */
	if (tensor) {
		enc = amax > 0 ? fmax_ / amax : 1.0f;
		if (isinf(enc))
			enc = FLT_MAX;
		dec = 1.0f / enc;
	} else {
		dec = fmaxf(amax, FP8_AMAX_FLOOR) / fmax_;
		enc = 0;   /* DeepSeek divides by s */
	}
	for (int64_t r = 0; r < rb; r++)
		for (int64_t k = 0; k < kb; k++) {
			float *v = &x[r * K + k];
			*v = rt_round(fmt, tensor ? *v * enc : *v / dec, 1);
		}
	return dec;
}

/* Quantizes rows x K at x in blocks of rb rows by gk K elements; sc[r * ng + g] is the decode
 * scale of row r's K group g (ng groups of FP8_GROUP; one group spanning K when gk = K). */
static void fp8_operand(DType fmt, int tensor, float *x, int64_t rows, int64_t K, int64_t rb, int64_t gk, float *sc,
			int64_t ng)
{
	for (int64_t r0 = 0; r0 < rows; r0 += rb)
		for (int64_t k0 = 0; k0 < K; k0 += gk) {
			int64_t nr = rows - r0 < rb ? rows - r0 : rb, nk = K - k0 < gk ? K - k0 : gk;
			float d = fp8_block(fmt, tensor, x + r0 * K + k0, K, nr, nk);
			for (int64_t r = r0; r < r0 + nr; r++)
				for (int64_t g = k0 / FP8_GROUP; g < ng && g * FP8_GROUP < k0 + nk; g++)
					sc[r * ng + g] = d;
		}
}

/* One output of the scaled product: per scale group (all of K for a tensor scale), the sum of
 * code products on the Hopper model (promote_k > 0) or in f32, times the group's scales. */
static float fp8_dot(const float *a, const float *sa, const float *b, const float *sb, int64_t K, int64_t gk,
		     int promote_k)
{
	float acc = 0;
	for (int64_t k0 = 0, g = 0; k0 < K; k0 += gk, g++) {
		int64_t n = K - k0 < gk ? K - k0 : gk;
		double scale = (double)sa[g] * (double)sb[g];
		if (promote_k > 0) {
			acc = hopper_acc(acc, a + k0, b + k0, 1, n, promote_k, scale);
			continue;
		}
		float part = 0;
		for (int64_t k = k0; k < k0 + n; k++)
			part = part + a[k] * b[k];   /* products of FP8 codes are exact in f32 */
		acc = acc + (float)(part * scale);
	}
	return acc;
}

/* C := A B with aq (M x K) and bq (N x K, B transposed) rounded to o->mma_in under o->fp8_scale. */
static int mm_fp8_scaled(const RtExecOpts *o, int64_t M, int64_t N, int64_t K, float *aq, float *bq, float *C, RtError *e)
{
	int tensor = o->fp8_scale == RT_FP8_TENSOR;
	int64_t gk = tensor ? (K ? K : 1) : FP8_GROUP, ng = tensor ? 1 : (K + FP8_GROUP - 1) / FP8_GROUP;
	int64_t ra = tensor ? M : 1, rb = tensor ? N : o->fp8_scale == RT_FP8_128X128 ? FP8_GROUP : 1;
	float *sa = rt_malloc((size_t)(M * ng + 1) * sizeof *sa), *sb = rt_malloc((size_t)(N * ng + 1) * sizeof *sb);
	if (!sa || !sb) {
		rt_free(sa), rt_free(sb);
		return rt_errorf(e, RT_ENOMEM, "out of memory for FP8 scales");
	}
	fp8_operand(o->mma_in, tensor, aq, M, K, ra ? ra : 1, gk, sa, ng);
	fp8_operand(o->mma_in, tensor, bq, N, K, rb ? rb : 1, gk, sb, ng);
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			C[i * N + j] = fp8_dot(aq + i * K, sa + i * ng, bq + j * K, sb + j * ng, K, gk, o->fp8_promote_k);
	rt_free(sa), rt_free(sb);
	return 0;
}

/* ---- low-precision operands ---- */
static int is_narrow(DType d)
{
	return d != DT_INVALID && d != DT_F32 && d != DT_F64 &&
	       (rt_dtypes[d].storage == S_F32 || d == DT_I8);
}

/* Rounds `rows` rows of length K in place to fmt (block scales along each row; int8 with one
 * symmetric scale per row). */
static int quant_rows(const RtExecOpts *o, DType fmt, float *x, int64_t rows, int64_t K, RtError *e)
{
	if (rows == 0 || K == 0)
		return 0;
	if (fmt == DT_I8) {
		int32_t *codes = rt_malloc((size_t)K * sizeof *codes);
		if (!codes)
			return rt_errorf(e, RT_ENOMEM, "out of memory quantizing to int8");
		for (int64_t r = 0; r < rows; r++) {
			float sc;
			rt_quantize_int(8, 0, x + r * K, K, 0, x + r * K, codes, &sc, NULL);
		}
		rt_free(codes);
		return 0;
	}
	QuantOpts q = { o->scale_rule ? SCALE_RCEIL : SCALE_FLOOR, 1, 0 };
	rt_round_tensor(fmt, x, rows * K, K, &q);
	return 0;
}

/* Copies op(X) (rows x K, row-major result) from X with leading dimension ld. */
static void copy_rows(const float *X, int64_t ld, int trans, int64_t rows, int64_t K, float *out)
{
	for (int64_t r = 0; r < rows; r++)
		for (int64_t k = 0; k < K; k++)
			out[r * K + k] = trans ? X[k * ld + r] : X[r * ld + k];
}

/* The low-precision product: A rows and B columns rounded to mma_in, f32 accumulation. */
static int mm_lowp(const RtExecOpts *o, int64_t M, int64_t N, int64_t K, const float *A,
		   int64_t lda, int ta, const float *B, int64_t ldb, int tb, float *C, RtError *e)
{
	float *aq = rt_malloc((size_t)(M * K + 1) * sizeof *aq);
	float *bq = rt_malloc((size_t)(N * K + 1) * sizeof *bq);   /* B^T: one row per column */
	int rc = -1;
	if (!aq || !bq) {
		rt_errorf(e, RT_ENOMEM, "out of memory for quantized operands");
		goto out;
	}
	copy_rows(A, lda, ta, M, K, aq);
	copy_rows(B, ldb, !tb, N, K, bq);
	if (o->fp8_scale != RT_FP8_NONE) {
		rc = mm_fp8_scaled(o, M, N, K, aq, bq, C, e);
		goto out;
	}
	if (quant_rows(o, o->mma_in, aq, M, K, e) < 0 || quant_rows(o, o->mma_in, bq, N, K, e) < 0)
		goto out;
	if (o->fp8_promote_k > 0) {
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++)
				C[i * N + j] = kn_hopper_dot(aq + i * K, bq + j * K, 1, K, o->fp8_promote_k);
	} else if (kn_sgemm(M, N, K, aq, K, 0, bq, K, 1, C, N, e) < 0) {
		goto out;
	}
	rc = 0;
out:
	rt_free(aq);
	rt_free(bq);
	return rc;
}

int kn_plain_f32(const RtExecOpts *o)
{
	return !o || (!is_narrow(o->mma_in) && o->fp8_promote_k <= 0);
}

int kn_mm_f32(const RtExecOpts *o, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
	      int ta, const float *B, int64_t ldb, int tb, float *C, RtError *e)
{
	if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
		return rt_errorf(e, RT_EUSER, "matrix dimension beyond 2^31");
	if (o && (is_narrow(o->mma_in) || o->fp8_promote_k > 0))
		return mm_lowp(o, M, N, K, A, lda, ta, B, ldb, tb, C, e);
	return kn_sgemm(M, N, K, A, lda, ta, B, ldb, tb, C, N, e);
}

int kn_gemm(const RtExecOpts *o, int f64, int64_t M, int64_t N, int64_t K,
	    const double *A, int64_t lda, int ta, const double *B, int64_t ldb, int tb,
	    double *C, RtError *e)
{
	if (f64 && !(o && (is_narrow(o->mma_in) || o->fp8_promote_k > 0))) {
		if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
			return rt_errorf(e, RT_EUSER, "matrix dimension beyond 2^31");
		return kn_dgemm(M, N, K, A, lda, ta, B, ldb, tb, C, N, e);
	}
	int64_t na = ta ? K * lda : M * lda, nb = tb ? N * ldb : K * ldb;
	float *af = rt_malloc((size_t)(na + 1) * sizeof *af), *bf = rt_malloc((size_t)(nb + 1) * sizeof *bf);
	float *cf = rt_malloc((size_t)(M * N + 1) * sizeof *cf);
	int rc = -1;
	if (!af || !bf || !cf) {
		rt_errorf(e, RT_ENOMEM, "out of memory in matrix product");
		goto out;
	}
	for (int64_t i = 0; i < na; i++)
		af[i] = (float)A[i];
	for (int64_t i = 0; i < nb; i++)
		bf[i] = (float)B[i];
	if (kn_mm_f32(o, M, N, K, af, lda ? lda : 1, ta, bf, ldb ? ldb : 1, tb, cf, e) < 0)
		goto out;
	for (int64_t i = 0; i < M * N; i++)
		C[i] = cf[i];
	rc = 0;
out:
	rt_free(af), rt_free(bf), rt_free(cf);
	return rc;
}

/* ---- batched shapes ---- */
typedef struct MmShape {
	int rank, brank;                 /* output rank; batch rank */
	int64_t dims[RT_MAX_RANK];       /* output dims (1-D operands' axes removed) */
	int64_t bdims[RT_MAX_RANK];      /* broadcast batch dims */
	int64_t M, N, K, nbatch;
	RtTensor abatch, bbatch;         /* batch-only views of A and B (shapes for strides) */
} MmShape;

/* numpy matmul shapes: 1-D A gets a leading 1, 1-D B a trailing 1, both removed afterwards. */
static int mm_shape(const char *op, const RtTensor *A, const RtTensor *B, MmShape *s, RtError *e)
{
	if (A->rank < 1 || B->rank < 1)
		return rt_errorf(e, RT_EUSER, "%s: operands must have rank >= 1", op);
	memset(s, 0, sizeof *s);
	s->M = A->rank == 1 ? 1 : A->dims[A->rank - 2];
	s->K = A->dims[A->rank - 1];
	int64_t kb = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
	s->N = B->rank == 1 ? 1 : B->dims[B->rank - 1];
	if (kb != s->K)
		return rt_errorf(e, RT_EUSER, "%s: inner dimensions differ (%lld vs %lld)", op,
				 (long long)s->K, (long long)kb);
	s->abatch.rank = A->rank > 2 ? A->rank - 2 : 0;
	s->bbatch.rank = B->rank > 2 ? B->rank - 2 : 0;
	memcpy(s->abatch.dims, A->dims, sizeof(int64_t) * (size_t)s->abatch.rank);
	memcpy(s->bbatch.dims, B->dims, sizeof(int64_t) * (size_t)s->bbatch.rank);
	const RtTensor *ts[2] = { &s->abatch, &s->bbatch };
	if (kn_bcast(op, ts, 2, &s->brank, s->bdims, e) < 0)
		return -1;
	s->nbatch = kn_numel(s->brank, s->bdims);
	memcpy(s->dims, s->bdims, sizeof(int64_t) * (size_t)s->brank);
	s->rank = s->brank;
	if (A->rank > 1)
		s->dims[s->rank++] = s->M;
	if (B->rank > 1)
		s->dims[s->rank++] = s->N;
	return 0;
}

/* f32 storage fast path: sgemm per batch straight from the tensors' floats.  A 2-D B is shared
 * by every batch, so A's batches are one (batch * M)-row product (each element's chain is its
 * own: the same bits).  A constant B (a loaded plan's weight) is packed once (kn_prepacked_b). */
static int matmul_f32(const RtKernelArgs *a, const MmShape *s, RtError *e)
{
	const RtTensor *A = a->in[0], *B = a->in[1];
	const RtTensor *ts[2] = { &s->abatch, &s->bbatch };
	KnIter it;
	kn_iter_init(&it, s->brank, s->bdims, ts, 2);
	float *C = rt_f32(&a->out[0]);
	int64_t ldb = B->rank == 1 ? 1 : s->N, M = s->M, nbatch = s->nbatch, gs = 0;
	if (B->rank <= 2)
		M *= nbatch, nbatch = 1;
	int64_t kn = s->K * s->N;
	int plain = kn_plain_f32(a->opts) && kn > 0 && M <= INT32_MAX && s->N <= INT32_MAX && s->K <= INT32_MAX;
	const float *preb = plain && B->rank >= 2 ? kn_prepacked_b(B, B->n / kn, s->K, s->N, M, &gs) : NULL;
	for (int64_t b = 0; b < nbatch; b++, kn_iter_next(&it)) {
		const float *ab = rt_f32(A) + it.off[0] * s->M * s->K, *bb = rt_f32(B) + it.off[1] * s->K * s->N;
		float *cb = C + b * M * s->N;
		if (preb ? kn_sgemm_preb(M, s->N, s->K, ab, s->K, bb, ldb, cb, s->N, preb + it.off[1] * gs, e) < 0
			 : kn_mm_f32(a->opts, M, s->N, s->K, ab, s->K, 0, bb, ldb, 0, cb, e) < 0)
			return -1;
	}
	return 0;
}

/* General path: doubles (f64 accumulation, integers through double). */
static int matmul_f64(const RtKernelArgs *a, const MmShape *s, int f64, RtError *e)
{
	const RtTensor *ts[2] = { &s->abatch, &s->bbatch };
	double *av = kn_load(a->in[0], e), *bv = av ? kn_load(a->in[1], e) : NULL;
	double *cv = bv ? kn_alloc(a->out[0].n, e) : NULL;
	int rc = -1;
	if (!cv)
		goto out;
	KnIter it;
	kn_iter_init(&it, s->brank, s->bdims, ts, 2);
	int64_t ldb = a->in[1]->rank == 1 ? 1 : s->N;
	for (int64_t b = 0; b < s->nbatch; b++, kn_iter_next(&it))
		if (kn_gemm(a->opts, f64, s->M, s->N, s->K, av + it.off[0] * s->M * s->K, s->K, 0,
			    bv + it.off[1] * s->K * s->N, ldb, 0, cv + b * s->M * s->N, e) < 0)
			goto out;
	rc = kn_store(&a->out[0], cv, a->opts, e);
out:
	rt_free(av), rt_free(bv), rt_free(cv);
	return rc;
}

int rk_MatMul(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *A = a->in[0], *B = a->in[1];
	MmShape s;
	if (mm_shape("MatMul", A, B, &s, e) < 0 || kn_out(a, 0, A->dtype, s.rank, s.dims, e) < 0)
		return -1;
	int f64 = kn_acc64(a) || a->out[0].dtype == DT_F64;
	int f32s = rt_dtypes[A->dtype].storage == S_F32 && rt_dtypes[B->dtype].storage == S_F32 &&
		   rt_dtypes[a->out[0].dtype].storage == S_F32;
	int rc = (!f64 && f32s) ? matmul_f32(a, &s, e) : matmul_f64(a, &s, f64, e);
	if (rc == 0 && f32s && !f64)
		rc = kn_finish(&a->out[0], a->opts, e);
	if (rc < 0)
		kn_free_outs(a);
	return rc;
}

/* Gemm: Y := alpha*op(A)@op(B) + beta*C with C broadcast to (M, N). */
int rk_Gemm(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *A = a->in[0], *B = a->in[1], *C = kn_in(a, 2);
	int ta = (int)rt_attr_int(a->attrs, "transA", 0), tb = (int)rt_attr_int(a->attrs, "transB", 0);
	double alpha = rt_attr_float(a->attrs, "alpha", 1.0), beta = rt_attr_float(a->attrs, "beta", 1.0);
	if (A->rank != 2 || B->rank != 2)
		return rt_errorf(e, RT_EUSER, "Gemm: A and B must be 2-D");
	int64_t M = A->dims[ta], K = A->dims[!ta], N = B->dims[!tb], dims[2] = { M, N };
	if (B->dims[tb] != K)
		return rt_errorf(e, RT_EUSER, "Gemm: inner dimensions differ (%lld vs %lld)",
				 (long long)K, (long long)B->dims[tb]);
	int f64 = kn_acc64(a);
	double *av = kn_load(A, e), *bv = av ? kn_load(B, e) : NULL, *y = bv ? kn_alloc(M * N, e) : NULL;
	if (!y)
		goto fail;
	KN_TRY(kn_out(a, 0, A->dtype, 2, dims, e));
	KN_TRY(kn_gemm(a->opts, f64, M, N, K, av, A->dims[1], ta, bv, B->dims[1], tb, y, e));
	if (C) {
		RtTensor yt = { .rank = 2, .dims = { M, N } };
		const RtTensor *ts[2] = { &yt, C };
		int r;
		int64_t bd[RT_MAX_RANK];
		KN_TRY(kn_bcast("Gemm", ts, 2, &r, bd, e));
		if (r != 2 || bd[0] != M || bd[1] != N) {
			rt_errorf(e, RT_EUSER, "Gemm: C does not broadcast to (%lld, %lld)", (long long)M, (long long)N);
			goto fail;
		}
		KnIter it;
		kn_iter_init(&it, 2, dims, ts, 2);
		for (int64_t i = 0; i < M * N; i++, kn_iter_next(&it))
			y[i] = kn_acc(f64, kn_acc(f64, alpha * y[i]) + kn_acc(f64, beta * rt_get(C, it.off[1])));
	} else {
		for (int64_t i = 0; i < M * N; i++)
			y[i] = kn_acc(f64, alpha * y[i]);
	}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(av), rt_free(bv), rt_free(y);
	return 0;
fail:
	rt_free(av), rt_free(bv), rt_free(y);
	kn_free_outs(a);
	return -1;
}

/* ---- integer matmuls ---- */
/* Zero point of row i (A) or column j (B): scalar or one per row/column. */
static int64_t zp_at(const RtTensor *zp, int64_t i)
{
	return !zp ? 0 : zp->n == 1 ? rt_geti(zp, 0) : rt_geti(zp, i % zp->n);
}
static double sc_at(const RtTensor *sc, int64_t i)
{
	return sc->n == 1 ? rt_get(sc, 0) : rt_get(sc, i % sc->n);
}

/* acc[b, i, j] := sum_k (A[b,i,k] - za_i) * (B[b,k,j] - zb_j), exact in i64. */
static int int_matmul(const RtKernelArgs *a, const RtTensor *A, const RtTensor *za,
		      const RtTensor *B, const RtTensor *zb, MmShape *s, int64_t **out, RtError *e)
{
	const RtTensor *ts[2] = { &s->abatch, &s->bbatch };
	int64_t *acc = rt_calloc((size_t)(s->nbatch * s->M * s->N + 1), sizeof *acc);
	if (!acc)
		return rt_errorf(e, RT_ENOMEM, "out of memory in integer matmul");
	KnIter it;
	kn_iter_init(&it, s->brank, s->bdims, ts, 2);
	int64_t ldb = B->rank == 1 ? 1 : s->N;
	for (int64_t b = 0; b < s->nbatch; b++, kn_iter_next(&it)) {
		const int64_t *ab = rt_i64(A) + it.off[0] * s->M * s->K, *bb = rt_i64(B) + it.off[1] * s->K * s->N;
		for (int64_t i = 0; i < s->M; i++)
			for (int64_t j = 0; j < s->N; j++) {
				int64_t t = 0;
				for (int64_t k = 0; k < s->K; k++)
					t += (ab[i * s->K + k] - zp_at(za, i)) * (bb[k * ldb + j] - zp_at(zb, j));
				acc[(b * s->M + i) * s->N + j] = t;
			}
	}
	*out = acc;
	return 0;
}

int rk_MatMulInteger(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *A = a->in[0], *B = a->in[1];
	MmShape s;
	int64_t *acc;
	if (!kn_isint(A->dtype) || !kn_isint(B->dtype))
		return rt_errorf(e, RT_EUSER, "MatMulInteger: operands must be integers");
	if (mm_shape("MatMulInteger", A, B, &s, e) < 0 || kn_out(a, 0, DT_I32, s.rank, s.dims, e) < 0)
		return -1;
	if (int_matmul(a, A, kn_in(a, 2), B, kn_in(a, 3), &s, &acc, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	for (int64_t i = 0; i < a->out[0].n; i++)
		rt_i64(&a->out[0])[i] = kn_wrap_int(a->out[0].dtype, acc[i]);
	rt_free(acc);
	return 0;
}

/* QLinearMatMul: the exact integer product rescaled by a_scale*b_scale/y_scale, RNE, plus
 * y_zero_point, saturated to y's dtype (that of y_zero_point). */
int rk_QLinearMatMul(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *A = a->in[0], *as = a->in[1], *B = a->in[3], *bs = a->in[4];
	const RtTensor *ys = a->in[6], *yz = a->in[7];
	MmShape s;
	int64_t *acc;
	if (mm_shape("QLinearMatMul", A, B, &s, e) < 0 || kn_out(a, 0, yz->dtype, s.rank, s.dims, e) < 0)
		return -1;
	if (int_matmul(a, A, a->in[2], B, a->in[5], &s, &acc, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	RtTensor *y = &a->out[0];
	for (int64_t i = 0; i < y->n; i++) {
		int64_t r = (i / s.N) % s.M, c = i % s.N;
		double scale = (double)(float)(sc_at(as, r) * sc_at(bs, c)) / rt_get(ys, 0);
		double q = kn_rne((double)(float)((double)acc[i] * scale)) + (double)rt_geti(yz, 0);
		rt_i64(y)[i] = kn_sat_int(y->dtype, q);
	}
	rt_free(acc);
	return 0;
}
