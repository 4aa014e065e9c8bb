/* targets/wafer/target.c: the spatial targets (targets/wafer/wafer.h): `wafer` (Cerebras
 * wafer-scale engines: a layer pipeline over wafer regions, weights resident in SRAM or streamed
 * from MemoryX) and `hardwired` (a chip taped out for one model: no weight traffic, the model
 * and its precision fixed). */
#include "passes/pass.h"
#include "targets/wafer/wafer.h"

/* the hooks both spatial targets share (targets/wafer/lower.c, cost.c) */
#define SPATIAL_HOOKS .arrange = wafer_arrange, .setup = wafer_setup, .dtype = wafer_dtype, .kernel = wafer_kernel, \
	.node_time = tgt_roofline_time, .cost = wafer_cost

const Target tgt_wafer = {
	.name = "wafer",
	.help = "Cerebras wafer-scale: layers on wafer regions as a spatial pipeline (weights in SRAM), or streamed from MemoryX",
	.default_machine = "cerebras-wse3",
	.kind = DEV_WAFER,
	.space = "sram",
	.align = 64,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "f16 bf16 f32",
	.default_precision = "f16",
	.matrix_peak = 1,
	SPATIAL_HOOKS,
};

const Target tgt_hardwired = {
	.name = "hardwired",
	.help = "a chip with the model's weights fixed in silicon (Taalas HC1): no weight traffic; only the taped-out model compiles",
	.default_machine = "taalas-hc1",
	.kind = DEV_ASIC,
	.space = "rom",             /* the plan's buffers: the weights' mask ROM (the KV cache's SRAM is priced) */
	.align = 64,
	.pipeline = PASS_DEFAULT_PIPELINE,
	.formats = "bf16 w4a16 f32",
	.default_precision = "bf16",
	.matrix_peak = 1,
	SPATIAL_HOOKS,
};
