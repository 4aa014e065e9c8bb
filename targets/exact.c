/* targets/exact.c: the values a target's precision policy must leave in the model's dtype.
 *
 * The GPU, TPU and LPU targets hold float values in a narrower format than the model declares
 * (bf16 for f32 activations and weights; the LPU's weight-like values at its matrix format).
 * Two kinds of values are exempt, because narrowing them changes what the model means rather
 * than how precisely it is computed:
 *   - the operands of explicit conversions (Cast, CastLike, QuantizeLinear, DequantizeLinear,
 *     DynamicQuantizeLinear): the conversion is the model's semantics, bit for bit, and no
 *     precision policy may change it (issue 16);
 *   - the float operands of a discrete result: an operator with an integer or bool output
 *     (comparisons, IsInf/IsNaN, ArgMax, TopK indices, NonZero, a Cast to an integer), whose
 *     answer flips when its inputs are rounded (bf16 cannot tell 10000 from 10001);
 *   - the float operands of the operators that PyTorch AMP runs in float32 because their result is
 *     ill-conditioned in their input (the "CUDA Ops that can autocast to float32" list of the
 *     reference below; logsumexp is in that list in aten/src/ATen/autocast_mode.h), those whose relative condition number |x f'(x) / f(x)| grows without
 *     bound: exp, log, pow, tan, acos, asin, cosh, sinh, softplus, softmax, log_softmax,
 *     logsumexp and cross_entropy (ONNX Exp, Log, Pow, Tan, Acos, Asin, Cosh, Sinh, Softplus,
 *     Softmax, LogSoftmax, ReduceLogSumExp, SoftmaxCrossEntropyLoss).  Rounding x to bf16 moves
 *     exp(x) by |x| u and tan(x) by (1 + tan^2 x) |x| u: softmax([10000, 10001, 10002, 10003])
 *     of the bf16 inputs is uniform (all four are 9984), and tan(1.533) moves by 2.7 of 26.3.
 *     A statement annotated `@precision(f32)` (or f64) is treated the same way: its operands are
 *     held in the model's dtype and its result as the annotation asks (tgt_forced_dtype);
 *     AMP's list also has operators that are well-conditioned and listed for f16's range
 *     (reciprocal, rsqrt, sum, the norms); their operands stay in the target's format.  Each
 *     operator's result is held in the target's format again;
 *   - the optimizer's state: AdamW's operands and results (master weights, moments, step, the
 *     gradient as the optimizer reads it) stay in the model's f32, mixed-precision training's
 *     rule (Micikevicius et al., ICLR 2018: f32 master weights and moments; the moments'
 *     second one, a sum of squares, would lose 2^-9 of its relative precision per step in bf16).
 * Another kind is a matter of range, not meaning: a parameter with a finite value that the
 * target's format rounds to an infinity (a BatchNormalization running variance of 9.8e7, a
 * -3.4e38 attention mask, in f16) is held in its model dtype, with the load-time weight
 * transforms of it (tgt_lower_exact); cuDNN likewise takes BatchNormalization's scale, bias, mean
 * and variance in f32 for f16 data (cudnnBatchNormalizationForwardInference), and Apex AMP's O2
 * keeps batch norm in f32 (keep_batchnorm_fp32).
 * Exactness propagates backwards through the vector and data-movement operators that compute such
 * a value, up to the nearest matrix operator (whose f32-accumulated result is then held in its
 * model dtype, as the GPU targets already do for MoE router logits) or to a graph input or
 * parameter.  Shape and Size read only types and are never a reason.  This is PyTorch AMP's rule
 * that autocast narrows only the operands of matrix operators and leaves a float32 tensor
 * float32 where it is consumed as such (https://pytorch.org/docs/stable/amp.html, "Autocast Op
 * Reference"), restricted to the values where it matters.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/numerics.h"
#include "targets/target.h"

int tgt_explicit_conversion(Op op)
{
	return op == OP_Cast || op == OP_CastLike || op == OP_QuantizeLinear || op == OP_DequantizeLinear ||
	       op == OP_DynamicQuantizeLinear;
}

DType tgt_forced_dtype(const Flat *f, const FlatVal *v)
{
	if (v->def < 0 || !rt_dtype_isfloat(v->dt))
		return DT_INVALID;
	DType dt = f->nodes[v->def].n->annot.precision;
	if (dt == DT_INVALID || !rt_dtype_isfloat(dt) || rt_dtypes[dt].kind != K_FLOAT || rt_dtypes[dt].bits < 16)
		return DT_INVALID;
	if (dt == DT_F64)   /* an f64 value: the target's own f64 rule; a narrower one: f32 at most */
		return v->dt == DT_F64 ? DT_INVALID : DT_F32;
	return dt;
}

/* Whether n carries @precision(f32) or @precision(f64). */
static int forced_wide(const Node *n)
{
	DType dt = n->annot.precision;
	return dt != DT_INVALID && rt_dtypes[dt].kind == K_FLOAT && rt_dtypes[dt].bits >= 32;
}

/* Whether op is one of AMP's float32 operators whose result is ill-conditioned in its input
 * (above). */
static int ill_conditioned(Op op)
{
	switch (op) {
	case OP_Exp: case OP_Log: case OP_Pow: case OP_Tan: case OP_Acos: case OP_Asin: case OP_Cosh:
	case OP_Sinh: case OP_Softplus: case OP_Softmax: case OP_LogSoftmax: case OP_ReduceLogSumExp:
	case OP_SoftmaxCrossEntropyLoss:
		return 1;
	default:
		return 0;
	}
}

/* Whether node fn turns float data into an integer or bool result. */
static int discrete(const Flat *f, const FlatNode *fn)
{
	if (fn->n->op == OP_Shape || fn->n->op == OP_Size)
		return 0;
	for (int k = 0; k < fn->nout; k++)
		if (fn->out[k] >= 0 && !rt_dtype_isfloat(f->vals[fn->out[k]].dt))
			return 1;
	return 0;
}

/* Whether node fn copies or combines values between devices (Transfer, the collectives): its
 * float operands and results must share one format (a plan copy keeps the dtype), so when one is
 * held in its model dtype all are. */
static int shares_format(const FlatNode *fn)
{
	Op op = fn->n->op;
	return op == OP_Transfer || op == OP_AllReduce || op == OP_AllGather || op == OP_AllToAll ||
	       op == OP_ReduceScatter;
}

/* Marks v when it is a float value not yet marked; returns 1 when it did. */
static int mark_float(const Flat *f, unsigned char *x, int v)
{
	if (v < 0 || x[v] || !rt_dtype_isfloat(f->vals[v].dt))
		return 0;
	x[v] = 1;
	return 1;
}

unsigned char *tgt_exact_values(const Flat *f)
{
	unsigned char *x = calloc((size_t)f->nvals + 1, 1);
	if (!x)
		return NULL;
	/* backward passes (uses follow definitions) until the format-sharing nodes agree; each round
	 * only adds marks, so it ends */
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = f->nnodes - 1; i >= 0; i--) {
			const FlatNode *fn = &f->nodes[i];
			int mark = tgt_explicit_conversion(fn->n->op) || discrete(f, fn), ill = 0;
			for (int k = 0; !mark && ir_ops[fn->n->op].cls != OC_matrix && k < fn->nout; k++)
				mark = fn->out[k] >= 0 && x[fn->out[k]];
			if (!mark)   /* @precision(f32) asks for the statement in f32: its operands too */
				mark = ill = ill_conditioned(fn->n->op) || forced_wide(fn->n);
			if (fn->n->op == OP_Quantize || (ir_ops[fn->n->op].flags & F_ATTN))
				mark = 0;   /* the quantization pass's own rounding; attention is a matrix operator */
			if (fn->n->op == OP_AdamW) {   /* the optimizer's state: its results too */
				mark = 1;
				for (int k = 0; k < fn->nout; k++)
					mark_float(f, x, fn->out[k]);
			}
			/* an ill-conditioned operator keeps f32 operands f32; f64 ones are held as the
			 * machine can (f32 where it has no f64), as without this rule */
			for (int k = 0; mark && k < fn->nin; k++)
				if (!ill || fn->in[k] < 0 || f->vals[fn->in[k]].dt != DT_F64)
					mark_float(f, x, fn->in[k]);
		}
		for (int i = 0; i < f->nnodes; i++) {
			const FlatNode *fn = &f->nodes[i];
			int any = 0;
			if (!shares_format(fn))
				continue;
			for (int k = 0; k < fn->nin; k++)
				any |= fn->in[k] >= 0 && x[fn->in[k]];
			for (int k = 0; k < fn->nout; k++)
				any |= fn->out[k] >= 0 && x[fn->out[k]];
			for (int k = 0; any && k < fn->nin; k++)
				changed |= mark_float(f, x, fn->in[k]);
			for (int k = 0; any && k < fn->nout; k++)
				changed |= mark_float(f, x, fn->out[k]);
		}
	}
	return x;
}

int tgt_param_beyond(const Value *v, DType fmt)
{
	if (!v || v->kind != V_PARAM || !v->init || !rt_dtype_isfloat(fmt) || rt_dtypes[fmt].kind == K_BLOCK ||
	    rt_dtypes[fmt].bits >= 32)
		return 0;
	const ParamInit *pi = v->init;
	int64_t n = pi->kind == INIT_DATA ? (pi->data ? pi->data->n : 0) : pi->kind == INIT_LITERAL ? pi->nlit :
		    pi->kind == INIT_FILL ? 1 : 0;
	for (int64_t i = 0; i < n; i++) {
		double x = pi->kind == INIT_DATA ? rt_get(pi->data, i) : pi->kind == INIT_LITERAL ? pi->lit[i] : pi->a;
		if (isfinite(x) && isinf(rt_round(fmt, (float)fmin(fmax(x, -FLT_MAX), FLT_MAX), 0)))
			return 1;
	}
	return 0;
}

unsigned char *tgt_lower_exact(TgtLower *l, DType fmt)
{
	const Flat *f = &l->f;
	unsigned char *x = tgt_exact_values(f), *y = x ? tgt_lower_alloc(l, (size_t)f->nvals + 1, 1) : NULL,
		      *wide = y ? tgt_lower_alloc(l, (size_t)f->nvals + 1, 1) : NULL;
	if (!x)
		rt_errorf(l->e, RT_ENOMEM, "out of memory lowering the graph");
	if (y)
		memcpy(y, x, (size_t)f->nvals + 1);
	free(x);
	/* parameters fmt cannot hold, and the load-time transforms of them (flat values are in
	 * definition order) */
	for (int v = 0; wide && v < f->nvals; v++) {
		const FlatVal *fv = &f->vals[v];
		if (!rt_dtype_isfloat(fv->dt))
			continue;
		if (fv->def < 0)
			wide[v] = (unsigned char)tgt_param_beyond(fv->v, fmt);
		else if (tgt_load_value(f, v))
			for (int k = 0; k < f->nodes[fv->def].nin; k++)
				wide[v] |= f->nodes[fv->def].in[k] >= 0 && wide[f->nodes[fv->def].in[k]];
		y[v] |= wide[v];
	}
	return wide ? y : NULL;
}
