/* targets/reference/target.c: the reference target's data and hooks (targets/target.h). */
#include "passes/pass.h"
#include "targets/target.h"

Plan *ref_lower(const TgtInput *in, RtError *e);
double ref_cost(const Plan *p, int stream, const PlanInstr *in);

const Target tgt_reference = {
	.name = "reference",
	.help = "one device, one kernel per node, f32 (or f64) everywhere, no fusion",
	.default_machine = "reference",
	.kind = -1,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "f32 f64",
	.default_precision = "f32",
	.lower = ref_lower,
	.cost = ref_cost,
};
