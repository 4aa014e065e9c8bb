/* targets/vera-rubin/target.c: the vera-rubin target's data and hooks (targets/target.h).  Its
 * -O1 pipeline disaggregates attention and FFN over the GPU and LPU pools. */
#include "passes/pass.h"
#include "targets/vera-rubin/vr.h"

Plan *vr_lower(const TgtInput *in, RtError *e);
double vr_cost(const Plan *p, int stream, const PlanInstr *in);

const Target tgt_vera_rubin = {
	.name = "vera-rubin",
	.help = "NVIDIA Vera Rubin + Groq 3 LPX: attention and KV cache on a Rubin GPU pool (tcgen05, FA4), FFN/MoE on an LPU pool, per-layer transfers, micro-batch ping-pong (run the disaggregate pass)",
	.default_machine = "vera-rubin",
	.kind = DEV_GPU,
	.pipeline = "canonicalize,place-precision,fuse,disaggregate,schedule,plan-memory",
	.formats = "bf16 f16 fp8 mxfp8 mxfp6 mxfp4 nvfp4 int8 w4a16 auto +graph +nopromote +tensor +1x128 +128x128 +nosplitk",
	.default_precision = "bf16",
	.matrix_peak = 1,
	.lower = vr_lower,
	.cost = vr_cost,
};
