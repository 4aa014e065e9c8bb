/* targets/lpu/target.c: the lpu target's data and hooks (targets/target.h).  The LPU keeps its
 * own cycle-scheduled walk (lower.c); weights, KV cache and matrix-product operands are at the
 * machine's matmul format (f16 on v1, f8e4m3 on the Groq 3 part), activations at f32, so the only
 * word is f32 (lpu_formats says the rest wherever the precision is printed). */
#include "passes/pass.h"
#include "targets/lpu/lpu.h"

const Target tgt_lpu = {
	.name = "lpu",
	.help = "Groq LPU (TSP v1, Groq 3): every instruction on a functional slice at an exact cycle, all-SRAM capacity check",
	.default_machine = "groq-lpu-v1",
	.kind = DEV_LPU,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "f32",
	.node_time = lpu_node_time,
	.default_precision = "f32",
	.lower = lpu_lower,
	.cost = lpu_cost,
	.formats_note = lpu_formats_note,
};
