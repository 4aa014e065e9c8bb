/* targets/vera-rubin/target.c: the vera-rubin target: its data and hooks (targets/target.h).
 * The GPU family's walk hooks with Blackwell's tiling on Rubin's numbers, the LPU pool's kernels
 * (lower.c) and its pricing (cost.c).  Its -O1 pipeline disaggregates attention and FFN over
 * the GPU and LPU pools. */
#include "passes/pass.h"
#include "targets/vera-rubin/vr.h"

const Target tgt_vera_rubin = {
	.name = "vera-rubin",
	.help = "NVIDIA Vera Rubin + Groq 3 LPX: attention and KV cache on a Rubin GPU pool (tcgen05, FA4), FFN/MoE on an LPU pool, per-layer transfers, micro-batch ping-pong (the disaggregate pass of -O1)",
	.default_machine = "vera-rubin",
	.pipeline = "canonicalize,place-precision,fuse,disaggregate,schedule,plan-memory",
	.family = &vr_gpu_hooks,
	GPU_TARGET_FIELDS,
	.setup = vr_setup,
	.node_time = vr_node_time,
	.cost = vr_cost,
	.formats_note = vr_formats_note,
};
