/* runtime/kernels.h: the reference kernels, one per operator of ir/ops.def.
 *
 * A kernel computes ONNX semantics eagerly: it reads its input tensors, allocates its outputs
 * with rt_tensor_alloc (shape computed from the inputs and attributes, dtype as preset by the
 * caller or as the operator defines) and fills them.  Narrow float dtypes are held in f32
 * storage with values exactly on the dtype's grid: a kernel computes in f32 (f64 when an input
 * is f64 or opts->accum_f64) and rounds its results to the output dtype (rt_round_tensor).
 * Kernels never exit and never print; they return 0 or -1 with e set.
 */
#ifndef AICC_KERNELS_H
#define AICC_KERNELS_H

#include "runtime/rt.h"

typedef enum RtOp {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) RT_OP_##name,
#include "ir/ops.def"
#undef OP
	RT_OP_COUNT
} RtOp;

const char *rt_op_name(RtOp op);
RtOp rt_op_lookup(const char *name);          /* RT_OP_COUNT if unknown */

/* Scaling of FP8 matrix-product operands (RtExecOpts.fp8_scale); sources in runtime/kernels/matmul.c:
 * NONE: operands cast to mma_in as they are (scale 1: tensors that already are FP8);
 * TENSOR: one f32 scale per operand (Transformer Engine current scaling, numerics.md §5);
 * 1X128: f32 scale per 1x128 tile of both operands (per row of A, per column of B, per 128 K);
 * 128X128: DeepSeek-V3 (arXiv 2412.19437 §3.3.1): A per 1x128 tile, B per 128x128 block. */
typedef enum RtFp8Scale { RT_FP8_NONE, RT_FP8_TENSOR, RT_FP8_1X128, RT_FP8_128X128, RT_FP8_COUNT } RtFp8Scale;
/* Plan spelling of s ("none", "tensor", "1x128", "128x128"); RT_FP8_COUNT for an unknown name. */
const char *rt_fp8_scale_name(RtFp8Scale s);
RtFp8Scale rt_fp8_scale_lookup(const char *name);

/* Per-instruction numerics, as the plan records them. */
typedef struct RtExecOpts {
	int accum_f64;          /* accumulate in f64 (reference plans with --precision f64) */
	DType mma_in;           /* MatMul/Gemm/Conv operand format the tensor core consumes
				   (inputs are quantized to it first; DT_INVALID: as given) */
	int fp8_promote_k;      /* Hopper FP8 MMA accumulation model (numerics.md §7): the limited-
				   precision accumulator is promoted to f32 every this many K elements;
				   0 = exact f32 accumulation */
	int exp2_poly;          /* softmax exponentials via the FlashAttention-4 software exp2
				   (numerics.md §9) with this polynomial degree; 0 = libm exp */
	int scale_rule;         /* ScaleRule for block formats */
	int fp8_scale;          /* RtFp8Scale of MatMul/Gemm operands when mma_in is an FP8 format */
} RtExecOpts;

/* Work applied to a kernel's f32 output while it is in cache (the interpreter's elementwise chain
 * after a Conv, runtime/ewchain.c): fn(ctx, y, c, ldc, rows, n) once for every finished region
 * of rows runs of n values ldc apart from c, y being output 0's first value (c - y: the region's
 * flat index), every output value in exactly one region, each region final when passed. */
typedef struct RtEpilogue {
	void (*fn)(void *ctx, const float *y, const float *c, int64_t ldc, int64_t rows, int64_t n);
	void *ctx;
} RtEpilogue;

typedef struct RtKernelArgs {
	RtTensor **in;          /* nin inputs; an absent optional input is NULL */
	int nin;
	RtTensor *out;          /* nout outputs: zeroed by the caller except .dtype (the planned
				   dtype, or DT_INVALID to let the kernel choose) */
	int nout;
	const Attrs *attrs;
	const RtExecOpts *opts;
	const RtEpilogue *epi;  /* or NULL; only Conv takes one (f32 output 0) */
} RtKernelArgs;

typedef int (*RtKernelFn)(const RtKernelArgs *a, RtError *e);

/* A constant weight in the matrix-product kernels' packed layout (runtime/kernels/gemm.c), kept
 * with the loaded plan (RtSession) so that every run after the first reads the packed panels
 * instead of packing them again: what it was packed from (data pointer, ISA, shape, blocking) is
 * recorded and checked at each use; a mismatch packs again.  A Conv's W is an A operand
 * (kn_prepacked_a), a MatMul's constant B a B operand (kn_prepacked_b).  Constants are never written, so
 * the same data pointer means the same values.  rt_pack_free releases data. */
typedef struct RtPack {
	const void *src;
	int isa;
	int64_t groups, m, k, n, kc;   /* an A operand's M x K (n = 0) or a B operand's K x N (m = 0) */
	void *data;
} RtPack;
void rt_pack_free(RtPack *p);

/* Instruction sets of the matrix-product kernels (runtime/kernels/gemm.c).  Every one gives the
 * same bits (one fma per k, k ascending); they differ only in speed. */
typedef enum RtIsa { RT_ISA_SCALAR, RT_ISA_AVX2, RT_ISA_AVX512, RT_ISA_COUNT } RtIsa;
const char *rt_isa_name(RtIsa i);
/* The widest set this CPU and its OS support (cpuid, XCR0). */
RtIsa rt_isa_best(void);
/* The set in use: the one forced by rt_isa_set, else AICC_ISA=scalar|avx2|avx512 when this CPU
 * supports it, else rt_isa_best(). */
RtIsa rt_isa(void);
/* Forces i (a negative value clears the forcing); -1 when this CPU cannot run i. */
int rt_isa_set(RtIsa i);

/* Elementwise f32 operators the interpreter may run block by block, a chain of them at a time
 * (runtime/interp.c): unary operators with an f32 row, + - * / Pow SwiGLU, Clip.  rt_ew_block
 * calls the kernel's own row function on n elements of each operand (scalar[k]: operand k is
 * one value, used for every element; Clip's absent bounds are NULL), so a chain gives the
 * kernels' bits. */
typedef struct RtEwOp {
	int kind;                /* 1 unary, 2 binary, 3 Clip */
	void (*row)(void);       /* the kernel's row function */
	double c[3];             /* unary constants (alpha, beta, tanh); Clip's attribute bounds */
} RtEwOp;
/* 1 and o set when op with these attributes and nin operands is such an operator on f32, else 0. */
int rt_ew_op(RtOp op, const Attrs *attrs, int nin, RtEwOp *o);
void rt_ew_block(const RtEwOp *o, const float *const *x, const int *scalar, float *y, int64_t n);

/* The kernel of op (never NULL: operators without a standalone kernel, such as Call, get one
 * that returns an error). */
RtKernelFn rt_kernel(RtOp op);

/* Resize's output geometry (runtime/kernels/resize.c), shared by the kernel and the shape rule:
 * per axis of X (rank dims `in`) the scale and the output length, from sizes (nsizes values)
 * or scales (nscales values; exactly one of the two non-empty), the roi (nroi = 0 or 2 per
 * resized axis: starts then ends) and the attributes axes, keep_aspect_ratio_policy and
 * coordinate_transformation_mode (https://onnx.ai/onnx/operators/onnx__Resize.html).
 * Returns 0, or -1 with e set ("Resize: ...") on inconsistent operands. */
typedef struct RtResizeGeom {
	int rank;
	int64_t out[RT_MAX_RANK];
	double scale[RT_MAX_RANK], roi0[RT_MAX_RANK], roi1[RT_MAX_RANK];
} RtResizeGeom;
int rt_resize_geometry(const Attrs *attrs, int rank, const int64_t *in, const double *roi, int nroi,
		       const double *scales, int nscales, const int64_t *sizes, int nsizes, RtResizeGeom *g,
		       RtError *e);

/* ConvTranspose's geometry (runtime/kernels/convtranspose.c), shared by the kernel and the shape
 * rule: for ns spatial axes of input lengths `in` and kernel lengths `kernel`, the strides,
 * dilations, output_padding, the begin/end pads (negative when output_shape exceeds the full
 * output) and the output lengths, from the attributes strides, dilations, pads, auto_pad,
 * output_padding, output_shape and kernel_shape
 * (https://onnx.ai/onnx/operators/onnx__ConvTranspose.html).  0, or -1 with e set. */
typedef struct RtConvTGeom {
	int ns;
	int64_t in[RT_MAX_RANK], k[RT_MAX_RANK], s[RT_MAX_RANK], d[RT_MAX_RANK], op[RT_MAX_RANK];
	int64_t pb[RT_MAX_RANK], pe[RT_MAX_RANK], out[RT_MAX_RANK];
} RtConvTGeom;
int rt_convtranspose_geometry(const Attrs *attrs, int ns, const int64_t *in, const int64_t *kernel,
			      RtConvTGeom *g, RtError *e);

#endif
