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
 *     answer flips when its inputs are rounded (bf16 cannot tell 10000 from 10001).
 * Exactness propagates backwards through the vector and data-movement operators that compute such
 * a value, up to the nearest matrix operator (whose f32-accumulated result is then held in its
 * model dtype, as the GPU targets already do for MoE router logits) or to a graph input or
 * parameter.  Shape and Size read only types and are never a reason.  This is PyTorch AMP's rule
 * that autocast narrows only the operands of matrix operators and leaves a float32 tensor
 * float32 where it is consumed as such (https://pytorch.org/docs/stable/amp.html, "Autocast Op
 * Reference"), restricted to the values where it matters.
 */
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"

int tgt_explicit_conversion(Op op)
{
	return op == OP_Cast || op == OP_CastLike || op == OP_QuantizeLinear || op == OP_DequantizeLinear ||
	       op == OP_DynamicQuantizeLinear;
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

unsigned char *tgt_exact_values(const Flat *f)
{
	unsigned char *x = calloc((size_t)f->nvals + 1, 1);
	if (!x)
		return NULL;
	for (int i = f->nnodes - 1; i >= 0; i--) {   /* uses follow definitions: one backward pass */
		const FlatNode *fn = &f->nodes[i];
		int mark = tgt_explicit_conversion(fn->n->op) || discrete(f, fn);
		for (int k = 0; !mark && ir_ops[fn->n->op].cls != OC_matrix && k < fn->nout; k++)
			mark = fn->out[k] >= 0 && x[fn->out[k]];
		if (fn->n->op == OP_Quantize || (ir_ops[fn->n->op].flags & F_ATTN))
			mark = 0;   /* the quantization pass's own rounding; attention is a matrix operator */
		for (int k = 0; mark && k < fn->nin; k++)
			if (fn->in[k] >= 0 && rt_dtype_isfloat(f->vals[fn->in[k]].dt))
				x[fn->in[k]] = 1;
	}
	return x;
}

unsigned char *tgt_lower_exact(TgtLower *l)
{
	unsigned char *x = tgt_exact_values(&l->f), *y = x ? tgt_lower_alloc(l, (size_t)l->f.nvals + 1, 1) : NULL;
	if (!x)
		rt_errorf(l->e, RT_ENOMEM, "out of memory lowering the graph");
	if (y)
		memcpy(y, x, (size_t)l->f.nvals + 1);
	free(x);
	return y;
}
