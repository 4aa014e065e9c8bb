/* targets/tpu/tpu.h: what the TPU target's files share: the machine numbers of one TPU chip
 * (TpuArch, read only from the machine description), the MXU fold plan of one matrix product
 * (targets/tpu/tile.c: weight-stationary folds, (8,128) padding, VMEM blocks) and the resource
 * times every kernel records (targets/tpu/cost.c: the systolic closed form of backends.md §2b,
 * the vector unit, HBM and VMEM rooflines, and the cost hook that recombines them).
 *
 * A kernel's time is recorded in the plan as its components (t.mxu_us, t.vpu_us, t.vmem_us,
 * t.hbm_us, t.fixed_us); tpu_cost() returns fixed + max(mxu, vpu, vmem, hbm) (backends.md §0:
 * the units run in parallel VLIW slots and DMA is double-buffered against compute), so the
 * timing engine prices plans without the machine file. */
#ifndef AICC_TARGETS_TPU_H
#define AICC_TARGETS_TPU_H

#include "targets/target.h"

/* The (8,128) tiling of the last two dimensions of every TPU array (backends.md §2a,
 * hardware.md §3.5): 8 sublanes of 32 bits by 128 lanes; narrower types pack along sublanes,
 * (16,128) for 16 bits, (32,128) for 8 bits, (64,128) for 4 bits. */
#define TPU_LANES 128
#define TPU_SUBLANES 8
/* Vector-unit operations per attention score besides the products: scale, running max,
 * subtract, exp, row sum, and the rescale of the running output (the online softmax). */
#define TPU_SOFTMAX_VPU_OPS 6.0

typedef struct TpuArch {
	const Device *dev;
	double clock;              /* Hz */
	int R, C;                  /* MXU rows (K) and columns (N): 128 or 256 */
	int nmxu, ncores;          /* MXUs per chip (all TensorCores), TensorCores */
	double t0;                 /* MXU fixed latency, seconds (fill and drain, backends.md §2b) */
	double hbm_bw, vmem_bw;    /* achievable bytes/s */
	double vmem_cap;           /* bytes of VMEM per TensorCore */
	double vpu;                /* f32 FLOP/s of the vector units, whole chip */
	double vpu64;              /* f64 FLOP/s of the vector units in software (IEEE binary64 on
	                            * the 32-bit lanes: <vpeak dtype="f64">), whole chip; 0 when the
	                            * machine gives none (f64 values are then held in f32) */
	double fixed;              /* seconds per program step (the TensorCore unit latency) */
	double dma_latency;        /* seconds: the first HBM->VMEM block's issue */
	double step;               /* seconds per grid step of a blocked kernel (the scalar unit's
	                            * latency: DMA issue and semaphore waits of one block
	                            * iteration, serial with the MXUs); 0 when not given */
	int sparsecores;           /* SparseCore units (0: none) */
	double gemm_eff;           /* sustained fraction of the MXU peak on a large product (the
	                            * device efficiency `gemm`, from a kernel measurement; 1 when
	                            * absent) */
} TpuArch;

/* Reads a from TPU device d; -1 with e set when a number the model needs is missing. */
int tpu_arch(const Device *d, TpuArch *a, RtError *e);

/* One matrix product: batch x ([M, K] @ [K, N]); the right-hand operand is stationary. */
typedef struct MxuShape {
	int64_t batch, M, N, K;
	DType in;                  /* MXU operand format (bf16, i8, f8e4m3, f4e2m1) */
	double in_bytes, w_bytes, out_bytes;   /* bytes per element of A, B (in HBM) and Y */
} MxuShape;

typedef struct MxuPlan {
	int sub;                   /* sublane tile of the streamed operand: 8 x 32/bits */
	int64_t Mp, Np, Kp;        /* padded: M to sub, N to C, K to R */
	int64_t kfold, nfold, folds;   /* row folds ceil(Kp/R), column folds ceil(Np/C), x batch */
	int64_t mchunks, items, per_mxu;   /* M split across MXUs when folds < MXUs */
	int64_t T;                 /* rows streamed per fold */
	double rate;               /* rows per cycle per MXU relative to bf16 (2 for int8/fp8...) */
	int64_t bm, bn, bk;        /* VMEM blocks */
	int64_t steps;             /* grid steps: batch x blocks of M x of N x of K */
	double vmem_bytes;         /* footprint: double-buffered A, B and Y blocks + f32 accumulator */
	double pad_waste;          /* 1 - useful MACs / padded MACs */
	double cycles;             /* MXU cycles (TPU-level model) */
	double scalesim_cycles;    /* SCALE-Sim v2 conservative cross-check */
	double util;               /* useful FLOP / (MXU time x peak) */
	double mxu, vmem, hbm, fixed, t;   /* seconds */
	double core;               /* seconds the TensorCore issues: mxu + steps x the per-step cost */
} MxuPlan;

/* Plans s on a: padding, folds, VMEM blocks (searched), times.  Returns 0 if no block fits. */
int tpu_mxu_plan(const TpuArch *a, const MxuShape *s, MxuPlan *p);

/* Sublane tile rows for a format of `bits` bits: 8 x 32/bits (at least 8). */
int tpu_sublanes(int bits);
/* Elements of an array of `rank` dims in its tiled (8,128) layout at `bits` bits per element. */
double tpu_padded_numel(int rank, const int64_t *dims, int bits);

/* ---- recorded resource times, and the cost hook ---- */
typedef struct TpuCost {
	double mxu, vpu, vmem, hbm, fixed;   /* seconds */
} TpuCost;
double tpu_cost_total(const TpuCost *c);
double tpu_cost(const Plan *p, int stream, const PlanInstr *in);
/* The tpu target's node_time hook: with w->tiles, a MatMul (Gemm) as its MXU fold plan prices it (tile.c), its
 * shape split over w->chips chips (tgt_work_gemm); an Attention as the lowering's attention
 * kernel (Q K^T and P V on the MXUs, the softmax on the vector unit), AttentionGrad at its rate
 * per FLOP; anything else tgt_roofline_time. */
double tpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w);
/* The lowering hooks (lower.c; the walk is targets/lower.c). */
int tpu_setup(TgtLower *l);
DType tpu_value_dtype(const TgtLower *l, const FlatVal *v);
int tpu_prepare(TgtLower *l);
int tpu_kernel(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t);
int tpu_finish(TgtLower *l);

/* ---- the inter-chip interconnect (targets/tpu/ici.c) ---- */
typedef struct TpuIci {
	int present;               /* the machine has an ICI link between its TPUs */
	int ndims, dims[4];        /* torus shape (p2p: one axis of every chip) */
	int wrap;                  /* wraparound on full axes */
	int full_mesh;             /* topology p2p: every chip of a group one hop from the others */
	int ports;                 /* links per chip */
	double link_bw;            /* bytes/s one link, one direction */
	double hop_latency;        /* seconds per hop (alpha) */
	double coll_latency;       /* factor on collectives' latency terms (8i CAE 0.2; else 1) */
	/* a twisted torus (TPU v4 OCS slices, k x k x 2k or k x 2k x 2k): the wraparound links of
	 * the first shortest axis (length k) shift by k along the first axis of length 2k.  Its
	 * mean distance (over all ordered pairs, self included) and diameter, in hops, from a
	 * breadth-first search of the wiring (tpu_ici_twist; the graph is vertex-transitive) */
	int twist;
	double twist_mean;
	int twist_diam;
} TpuIci;

typedef struct TpuIciCost {
	int ext[4], wrapped[4];    /* the group's extent per torus axis, and whether it wraps */
	int hops;                  /* latency steps (collective) or hops (copy) */
	int twisted;               /* an all-to-all priced on a twisted slice's balanced links */
	double lat, bw, t;         /* seconds: latency term, bandwidth term, total */
} TpuIciCost;

/* Reads the ICI link class joining device class d to itself in machine m (present = 0 when
 * there is none) and d's `collective_latency` efficiency; -1 with e set on a malformed link. */
int tpu_ici(const Machine *m, const Device *d, TpuIci *ici, RtError *e);
/* The extent on every torus axis of the group of chips `chips[0..n)` (distinct coordinates). */
void tpu_ici_group(const TpuIci *ici, const int *chips, int n, int ext[4]);
/* Seconds for collective `kind` over a group of torus extents ext, V the bytes of the whole
 * array: the all-reduced or reduce-scattered array (one rank's input), the gathered result, or
 * the sum of all-to-all inputs. */
double tpu_ici_collective(const TpuIci *ici, PlanCollKind kind, double V, const int ext[4], TpuIciCost *c);
/* Fills ici->twist_mean and twist_diam for ici's twisted shape by a breadth-first search from
 * chip 0 (each chip's six neighbours, the short axis' wraparound shifted).  0, or -1 with e set
 * when out of memory. */
int tpu_ici_twist(TpuIci *ici, RtError *e);
/* Torus hops between chips a and b (shortest way round where the axis wraps). */
int tpu_ici_hops(const TpuIci *ici, int a, int b);
/* Seconds to copy `bytes` from chip a to chip b: hops x latency + bytes / one link. */
double tpu_ici_copy(const TpuIci *ici, double bytes, int a, int b, TpuIciCost *c);

#endif
