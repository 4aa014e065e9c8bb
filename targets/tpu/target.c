/* targets/tpu/target.c: the tpu target: its data and hooks (targets/target.h): lowering hooks in
 * lower.c (MXU folds from tile.c, ICI from ici.c), the cost hook in cost.c. */
#include "passes/pass.h"
#include "targets/tpu/tpu.h"

const Target tgt_tpu = {
	.name = "tpu",
	.help = "Google TPU: weight-stationary MXU folds with exact (8,128) padding, double-buffered VMEM blocks, VPU vector ops, SparseCore gathers",
	.default_machine = "tpu-v5e",
	.kind = DEV_TPU,
	.space = "hbm",
	.align = 512,            /* HBM allocation granule [E]: one 128-lane row of f32 (TPU_LANES x 4 bytes) */
	.pipeline = PASS_DEVICES_PIPELINE,
	.formats = "bf16 int8 fp8 fp4",
	.default_precision = "bf16",
	.matrix_peak = 1,
	.setup = tpu_setup,
	.dtype = tpu_value_dtype,
	.prepare = tpu_prepare,
	.kernel = tpu_kernel,
	.finish = tpu_finish,
	.node_time = tpu_node_time,
	.cost = tpu_cost,
};
