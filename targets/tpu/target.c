/* targets/tpu/target.c: the tpu target's data and hooks (targets/target.h). */
#include "passes/pass.h"
#include "targets/tpu/tpu.h"

const Target tgt_tpu = {
	.name = "tpu",
	.help = "Google TPU: weight-stationary MXU folds with exact (8,128) padding, double-buffered VMEM blocks, VPU vector ops, SparseCore gathers",
	.default_machine = "tpu-v5e",
	.kind = DEV_TPU,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "bf16 int8 fp8 fp4",
	.default_precision = "bf16",
	.matrix_peak = 1,
	.lower = tpu_lower,
	.cost = tpu_cost,
};
