/* targets/reference/target.c: the reference target: its data and hooks (targets/target.h). */
#include "passes/pass.h"
#include "targets/target.h"

DType ref_dtype(const TgtLower *l, const FlatVal *v);
int ref_kernel(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t);
double ref_cost(const Plan *p, int stream, const PlanInstr *in);

const Target tgt_reference = {
	.name = "reference",
	.help = "one device, one kernel per node, f32 (or f64) everywhere, no fusion",
	.default_machine = "reference",
	.kind = -1,
	.align = 64,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "f32 f64",
	.default_precision = "f32",
	.dtype = ref_dtype,
	.kernel = ref_kernel,
	.node_time = tgt_roofline_time,
	.cost = ref_cost,
};
