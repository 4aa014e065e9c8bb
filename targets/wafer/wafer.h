/* targets/wafer/wafer.h: the spatial targets: `wafer` (Cerebras WSE: a model's layers on regions
 * of one wafer, or of several wafers one after another) and `hardwired` (a chip whose weights
 * are fixed in silicon, Taalas HC1).  Both place each layer (a call instance of the flattened
 * graph; the entry graph's own nodes are one more) on its own region of the chip, a share of
 * the cores or MACs proportional to the bytes it keeps resident (its weights, and on the wafer
 * its KV cache), and run a token through the regions in order: a spatial pipeline.  A kernel
 * on a region of share f takes max(FLOP / (peak x f), bytes / (SRAM bandwidth x f)) (no weight
 * bytes on the hardwired chip); a value crossing to the next region crosses the fabric cut
 * between them (sqrt(cores) links of the fabric's per-link bandwidth) and, between wafers, the
 * machine's wafer-to-wafer link.  When the weights fit no wafer set's SRAM and the machine has
 * external weight memory (MemoryX), the wafer target streams them layer by layer: every kernel
 * gets the whole wafer and its weights cross the streaming bandwidth, overlapped with compute.
 * The times are recorded as t.* attributes (t.compute_us, t.sram_us, t.stream_us,
 * t.fabric_us, t.link_us, t.time_us, t.bound) that wafer_cost recombines.  docs/targets-wafer.md. */
#ifndef AICC_TARGETS_WAFER_H
#define AICC_TARGETS_WAFER_H

#include "targets/target.h"

typedef enum WaferMode { WAFER_RESIDENT, WAFER_STREAM, WAFER_HARDWIRED } WaferMode;

typedef struct WaferLw {
	WaferMode mode;
	const Device *dev;
	double cores, peak, sram_cap, sram_bw;   /* per wafer; peak at the policy's matrix format */
	double cut_bw;                           /* bytes/s across one region boundary */
	double cycle, hop;                       /* seconds per core clock, per fabric hop (0: none) */
	double stream_bw, stream_cap;            /* MemoryX (0: none) */
	double link_bw, link_lat;                /* wafer-to-wafer, one way (0: none) */
	int wafers;                              /* wafers holding the model */
	int ngroups;                             /* regions: call instances, entry graph first */
	int *group;                              /* flat node -> region */
	int *wafer;                              /* region -> wafer */
	double *share;                           /* region -> fraction of its wafer */
	double *state;                           /* region -> resident bytes */
	double weights, kv;                      /* bytes of parameters, of graph inputs */
} WaferLw;

int wafer_arrange(TgtLower *l);
int wafer_setup(TgtLower *l);
DType wafer_dtype(const TgtLower *l, const FlatVal *v);
int wafer_kernel(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t);
double wafer_cost(const Plan *p, int stream, const PlanInstr *in);
/* The hardwired target's tape-out check (targets/wafer/hardwired.c): the model's dims and the
 * precision against the machine's <hardwired>; 0, or -1 with e set naming every mismatch. */
int hw_check_tapeout(const TgtLower *l, const Device *d, RtError *e);

#endif
