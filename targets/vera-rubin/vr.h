/* targets/vera-rubin/vr.h: what the vera-rubin target's lowering (lower.c) and cost hook (cost.c)
 * share: the pricing of a kernel on the LPU pool.
 *
 * Until the lpu backend exports its per-node cycle function, an LPU kernel is priced by a
 * roofline over the LPU device of the plan (backends.md §4b T_e): the bytes it streams from SRAM
 * (operands and results; a routed-expert GroupedMatMul only the experts its tokens touch) at
 * `chips` x the SRAM bandwidth, its FLOP at `chips` x the FP8 matrix peak, plus the MXM
 * pipeline latency and, on more than one chip, a chip-to-chip all-reduce of the result
 * (log2 chips x (alpha + bytes / bandwidth)).  vr_lpu_time is the one place to swap. */
#ifndef AICC_TARGETS_VR_H
#define AICC_TARGETS_VR_H

#include "targets/gpu/gpu.h"
#include "targets/lpu/lpu.h"

typedef struct VrLpuTime {
	double stream;     /* seconds streaming operands from SRAM */
	double compute;    /* seconds on the MXM at the FP8 peak */
	double fixed;      /* pipeline latency + chip-to-chip all-reduce */
	double link;       /* of fixed: the C2C time (the hop to the layer's chips, the all-reduce) */
} VrLpuTime;

/* The time of kernel `in` of plan p on `chips` LPUs of device class lpu.  With cyc (the LPU
 * backend's lpu_node_cycles for the node, at clock Hz): its streaming and compute cycles divided
 * among the chips plus its fixed pipeline latency; without: a roofline over the machine's SRAM
 * bandwidth and FP8 peak.  Both add the pool's C2C all-reduce for row-split projections. */
VrLpuTime vr_lpu_time(const Plan *p, const Device *lpu, const Link *c2c, const PlanInstr *in, int chips,
		      const LpuCost *cyc, double clock);
double vr_lpu_total(const VrLpuTime *t);
/* The target's hooks: setup (lower.c: the GPU family's, then the pools), the GPU family's tiling
 * with the LPU pool's kernels (lower.c), pricing for the passes and the cost hook (cost.c). */
extern const GpuHooks vr_gpu_hooks;
int vr_setup(TgtLower *l);
double vr_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w);
double vr_cost(const Plan *p, int stream, const PlanInstr *in);
/* Target.formats_note: what the LPU pool computes in (MXFP8 operands, lpu_node in lower.c). */
const char *vr_formats_note(const Machine *m, char *buf, size_t n);
/* The narrowest float format the LPU has a matrix peak for: how its SRAM stores weights. */
DType vr_lpu_format(const Device *lpu);

#endif
