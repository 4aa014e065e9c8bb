/* targets/reference/lower.c: the reference target's lowering hooks (the walk is targets/lower.c).
 * Any shape-inferred graph becomes a one-device plan: one kernel instruction per node, no
 * fusion, every computed float value in f32 (f64 with --precision f64, which also accumulates in
 * f64; values the graph types f64 stay f64); explicit conversions (Cast, CastLike, quantize/dequantize) keep the dtype the graph asks
 * for, collectives and transfers their operands', integers stay integers.  Buffers live in the device's first memory space (offsets aligned
 * to 64 bytes).  Parameters become constants by reference (seeded initialiser with its call
 * instance, .npy/.safetensors path, small inline data, in-memory `data` for larger ONNX
 * initialisers and integers a double cannot hold, which the driver writes beside the plan) or
 * `unbound`.  The plan this produces is what `aicc run --check` compares against. */
#include "targets/target.h"

/* f64 under --precision f64, else f32. */
static DType ref_float(const TgtLower *l) { return l->in->prec->word->mma == DT_F64 ? DT_F64 : DT_F32; }

DType ref_dtype(const TgtLower *l, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt) || v->dt == DT_F64)
		return v->dt;    /* an f64 graph stays f64 (its kernels then accumulate in f64) */
	if (v->def >= 0) {
		const Node *n = l->f.nodes[v->def].n;
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
		/* a collective or a transfer moves its operands' values: their dtype (ZeRO's all-gather
		 * of the bf16 weights cast from the updated master shards, passes/autodiff.c) */
		const FlatNode *fn = &l->f.nodes[v->def];
		if ((ir_op_is_collective(n->op) || n->op == OP_Transfer) && fn->nin > 0 && fn->in[0] >= 0)
			return ref_dtype(l, &l->f.vals[fn->in[0]]);
	}
	return ref_float(l);
}

int ref_kernel(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t)
{
	(void)node, (void)t;
	pi->opts.accum_f64 = ref_float(l) == DT_F64;
	return 0;
}
