/* targets/gpu/gpu.h: what the NVIDIA GPU targets (targets/hopper, targets/blackwell) share: the
 * machine numbers a GPU kernel model needs (GpuArch, read only from the machine description), the
 * per-kernel timing model of backends.md §0-§1b (GEMM tiles with wave and tile quantization,
 * fused attention, memory-bound kernels), the precision policy, and one lowering walk that
 * places buffers and emits one kernel per node, asking the target's hooks for the tiling of
 * matrix products and attention.
 *
 * A kernel's time is recorded in the plan as its resource components (t.mma_us, t.smem_us,
 * t.hbm_us, t.sfu_us, t.fma_us, t.overlap, t.fixed_us); gpu_cost() recombines them, so the
 * timing engine prices plans without the machine file and `aicc explain` can show the terms. */
#ifndef AICC_TARGETS_GPU_H
#define AICC_TARGETS_GPU_H

#include "targets/target.h"

/* Bytes of K one pipeline stage spans: a TMA box row with the 128-byte swizzle (backends.md §1a),
 * so BK = 64 at 16 bits, 128 at 8 bits, 256 at 4 bits, as CUTLASS's shipped tiles. */
#define GPU_SWIZZLE_BYTES 128

/* Machine numbers of one GPU (per-SM rates in units per second). */
typedef struct GpuArch {
	const Device *dev;
	double sms, clock;
	double smem_usable, smem_bw;      /* bytes per CTA; bytes/s per SM */
	double tmem;                      /* bytes per SM (0: no tensor memory) */
	double hbm_bw;                    /* achievable bytes/s: bandwidth x efficiency */
	double sfu;                       /* exp2/s per SM */
	double fma;                       /* f32 FMA/s per SM (vector pipe) */
	double l2, l2_bw;                 /* L2 bytes (0: not in the machine file); bytes/s (0: unknown) */
	double launch, graph_launch;      /* seconds per kernel launch, on a stream / in a graph */
	double coll_base;                 /* seconds of fixed cost per collective call (engine
					     `collective` latency; 0 when the file has none) */
	double eff_gemm, overlap_attn;    /* efficiency factors from the machine file: `gemm` (the
					     fallback of gpu_eff_gemm), `attention-overlap` */
	double eff_gemm_dt[DT_COUNT];     /* gpu_eff_gemm per MMA operand type, read once (the tile
					     search evaluates thousands of tiles per GEMM) */
	int cluster_max;
} GpuArch;

/* Reads a from device d; -1 with e set when a number the model needs is missing. */
int gpu_arch(const Device *d, GpuArch *a, RtError *e);
/* The achievable fraction of the dense peak of a GEMM whose MMA operands are dt: the machine's
 * `<efficiency name="gemm-DTYPE">` (a kernel-level measurement, e.g. MAMF's best-shape cuBLAS
 * rate; docs/machines.md names the row), else `gemm`. */
double gpu_eff_gemm(const GpuArch *a, DType dt);

/* ---- one kernel's cost, as recorded ---- */
typedef struct GpuCost {
	double mma, smem, hbm, sfu, fma;  /* seconds each resource is busy (already x waves) */
	double l2;                        /* L2-to-SM operand traffic (0 without an L2 bandwidth) */
	double overlap;                   /* fraction of min(mma, max(sfu, fma)) hidden (1 for GEMM) */
	double fixed;                     /* launch gap + pipeline fill + exposed epilogue */
	double fill;                      /* of fixed, the HBM traffic at its bandwidth (the first
					     stage's load, the exposed epilogue stores, a K split's
					     partials, attention's first tile loads): memory time
					     outside the overlapped main loop, not a fixed cost */
	double floor;                     /* the host's issue interval of a stream launch: the kernel
					     takes at least this long (0: launched from a CUDA graph) */
} GpuCost;
double gpu_cost_total(const GpuCost *c);
/* The term that bounds c, with its seconds in *term: mma (tensor cores), smem (shared memory
 * bandwidth), hbm, l2, sfu or fma (softmax exp2 / FP8 promotion on the vector pipes), fixed
 * (pipeline fill, per-tile prologue/epilogue, launch gap), launch (the host's issue interval:
 * the kernel is shorter than its launch). */
const char *gpu_cost_bound(const GpuCost *c, double *term);
/* Adds one kernel launch to c (backends.md §8): launches from a stream are issued by the host
 * while the previous kernel runs, so the host's per-launch cost (`launch` engine latency) only
 * shows when the kernel is shorter (c->floor); every kernel pays the GPU-side gap between
 * dependent kernels (`graph` engine latency, the whole cost inside a CUDA graph). */
void gpu_launch(const GpuArch *a, int graph, GpuCost *c);

/* A memory-bound kernel (backends.md §0): `bytes` at HBM bandwidth, `flops` on the FMA pipe
 * (an FMA is two), `trans` transcendental results on the SFU; no launch (gpu_launch adds it).
 * The lowering's kernels without a model of their own and the passes' price of such a node. */
void gpu_mem_cost(const GpuArch *a, double bytes, double flops, double trans, GpuCost *c);

/* ---- GEMM ---- */
typedef struct GemmShape {
	int nosplit;                      /* search no K splits (policy +nosplitk) */
	int64_t batch, M, N, K;           /* batch: independent matrices (both operands batched);
					     a 2-D weight times [B, S, K] rows is one GEMM, M = B*S */
	DType in;                         /* operand format (mma_in) */
	double out_bytes;                 /* bytes per output element */
	PrecScale scale;
	int promote;
	double b_bytes;                   /* HBM bytes per element of B when stored narrower than
					     `in` (weights quantized at load, w4a16); 0: as `in` */
	double a_bytes;                   /* HBM bytes of one batch matrix's A when it is gathered
					     rather than stored (an implicit-GEMM Conv: the image,
					     whose im2col view is M x K); 0: M x K elements */
} GemmShape;

typedef struct GemmTile {
	const char *family;               /* wgmma, tcgen05.1cta, tcgen05.2cta */
	int im, in, ik;                   /* instruction shape */
	int bm, bn, bk;                   /* CTA tile (2-CTA: the pair's tile) */
	int stages, acc_stages, cm, cn;   /* SMEM pipeline, accumulator buffers, cluster */
	int cta2;
	int split;                        /* K split (split-K / stream-K): tiles of K/split each whose
					     f32 partials are reduced by the last one (0, 1: none) */
	int64_t tiles, units, waves;
	double smem_bytes, tmem_cols;
	char raster;                      /* L2 rasterisation: 'N' (groups of tile rows walk N),
					     'M', or 0 when both operands fit in L2 */
	int group;                        /* tile rows (columns) per raster group */
	double reload_a, reload_b;        /* HBM reads of each operand (backends.md §1b) */
	double l2_foot;                   /* bytes one wave keeps in L2 */
	GpuCost c;
	double t;
} GemmTile;

/* The time and resources of tile candidate t for shape s on a, filling t's derived fields;
 * returns 0 if the candidate does not fit (SMEM stages < 2, TMEM columns). */
int gpu_gemm_eval(const GpuArch *a, const GemmShape *s, GemmTile *t);
/* A grouped GEMM (MoE experts, GroupedMatMul: R routed rows of K over E experts' [K, N] weights)
 * as the batch of GEMMs one grouped kernel runs: with uniform routing the expected experts that
 * receive rows are E (1 - (1 - 1/E)^R) (each row picks one of E independently), rounded up,
 * each one GEMM of ceil(R / active) rows against its own weight (read once); the CUTLASS /
 * vLLM fused_moe grouped GEMM, one tile scheduler over all experts' tiles.  Sets s->batch, M,
 * K, N; returns the active experts (>= 1, <= E).  R, E, K, N >= 1. */
int64_t gpu_grouped_shape(int64_t R, int64_t E, int64_t K, int64_t N, GemmShape *s);

/* ---- attention ---- */
typedef struct AttnShape {
	int64_t B, qh, kvh, Sq, T, P, d, dv;
	const int64_t *off;               /* packed sequences' offsets (seq_offsets; NULL: none): the
					     varlen kernel tiles each sequence alone */
	int noff;
	int causal;
	DType in;
	double io_bytes;                  /* bytes per element of Q and O in memory */
	double kv_bytes;                  /* bytes per element of K and V in memory (an FP8 KV
					     cache: 1; 0: as io_bytes) */
} AttnShape;

typedef struct AttnTile {
	int bm, bn;                       /* Q rows and K/V rows per block */
	int decode, split;                /* memory-bound split-KV kernel, splits per head */
	double emu;                       /* fraction of exponentials on the FMA pipe */
	int poly;                         /* exp2 polynomial degree (0: all on the SFU) */
	int64_t tiles, waves;
	double kv_reload;                 /* HBM reads of K/V (1: the heads in flight fit in L2) */
	GpuCost c;
	double t;
} AttnTile;

/* Seconds per Q tile that a fused attention kernel of operand format dt spends outside its
 * modelled pipeline (prologue and epilogue work the model does not itemise: FA3 FP8's in-kernel V
 * transpose and descaling among them), from `<efficiency name="attention-tile-DTYPE" unit="us">`,
 * a kernel-level derivation that docs/machines.md names; 0 without one. */
double gpu_attn_tile_fixed(const GpuArch *a, DType dt);
/* Fills t (bm, bn, emu, poly given by the caller; split chosen here) for s on a. */
void gpu_attn_eval(const GpuArch *a, const AttnShape *s, AttnTile *t);
/* The fraction of exponentials to compute with the degree-`poly` polynomial on the FMA pipe so
 * that the SFU stops being the bottleneck (hardware.md §3.4, numerics.md §9). */
double gpu_exp2_split(const GpuArch *a, const AttnShape *s, int poly);

/* ---- the lowering hooks (targets/gpu/lower.c; the walk is targets/lower.c) ---- */
/* The --precision words and options every GPU target takes (Target.formats). */
#define GPU_PRECISIONS "bf16 f16 fp8 mxfp8 mxfp6 mxfp4 nvfp4 int8 w4a16 auto +graph +nopromote +tensor +1x128 +128x128 +nosplitk"
typedef struct GpuLw GpuLw;
/* What a GPU target adds to the family (its Target.family). */
typedef struct GpuHooks {
	const char *mma_family;           /* the MMA the machine must have: "wgmma", "tcgen05.1cta" */
	/* Tiling of a matrix product: fills t (and records the reason in why). */
	int (*gemm)(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t nwhy);
	/* Tiling of a prefill attention: fills t. */
	void (*attn)(const GpuArch *a, const AttnShape *s, AttnTile *t);
	/* Composite machines: a node placed on a device that is not a GPU (vera-rubin's LPU pool)
	 * gets its numerics, unit, tiling and cost from this hook (ctx: gpu_set_foreign_ctx's);
	 * NULL: such a placement is an error. */
	int (*foreign)(TgtLower *l, void *ctx, int device, int node, PlanInstr *pi, TgtAnn *t);
} GpuHooks;

int gpu_setup(TgtLower *l);
DType gpu_value_dtype(const TgtLower *l, const FlatVal *v);
int gpu_kernel(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t);
int gpu_collective(TgtLower *l, int node, TgtAnn *t);
void gpu_set_foreign_ctx(TgtLower *l, void *ctx);
/* The cost hook of the GPU targets (targets/gpu/cost.c): gpu_cost_total of the recorded
 * components, the generic roofline for instructions without them; a collective adds its
 * t.base_us to the runtime's ring time. */
double gpu_cost(const Plan *p, int stream, const PlanInstr *in);
/* The Target fields every GPU-family target shares (ampere, hopper, blackwell, vera-rubin): HBM
 * buffers at cudaMalloc's 256-byte alignment, the family's precisions (bf16 by default), the
 * family's value dtypes, kernels and collectives.  GPU_TARGET_COST adds the family's setup,
 * roofline node time and cost; vera-rubin has its own three. */
#define GPU_TARGET_FIELDS .kind = DEV_GPU, .space = "hbm", .align = 256, .formats = GPU_PRECISIONS, \
	.default_precision = "bf16", .matrix_peak = 1, .dtype = gpu_value_dtype, .kernel = gpu_kernel, \
	.collective = gpu_collective
#define GPU_TARGET_COST .setup = gpu_setup, .node_time = gpu_node_time, .cost = gpu_cost
/* The GPU targets' node_time hook: with w->tiles, a MatMul (Gemm) as the target's best tile prices it, its
 * shape split over w->chips devices one prime factor at a time on its largest extent (the
 * column- and row-parallel GEMMs of Megatron); an Attention as the target's fused kernel with
 * the KV groups split over the devices and the rest of them sharing the tokens; AttentionGrad
 * at the forward kernel's rate per FLOP; with w->tiles 2 also any other node as the lowering's
 * memory-bound kernel (gpu_mem_cost and its launch, shared by w->chips) and an all-reduce of
 * w->reduce bytes as the timing engine's ring (rt_allreduce_ring_s) plus the collective
 * engine's cost per call; anything else tgt_roofline_time. */
double gpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w);
/* gpu_node_time's kernel of w->node (w->tiles set): its cost's terms in *c and 1, or 0 where
 * gpu_node_time prices it by the roofline (no node, a collective, a transfer, no model). */
int gpu_node_cost(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w, GpuCost *c);
/* Seconds of kernel cost c run by a pool of `pool` GPUs as one plan device (vera-rubin): its
 * parallel resources (mma, smem, hbm, l2, sfu, fma) divided by pool, its fixed costs and
 * launch floor not; what gpu_instr_cost gives the plan's kernel and vr_node_time the passes. */
double gpu_cost_pooled(const GpuCost *c, double pool);
/* Seconds of a GPU kernel from its t.* components with the parallel resources divided over
 * `pool` GPUs (vera-rubin's pooled kernels; fixed costs are not divided), -1 when `in` has
 * none; for a collective its t.base_us only. */
double gpu_instr_cost(const PlanInstr *in, double pool);

/* ---- the tile search (targets/gpu/tile.c) ---- */
const MmaShape *gpu_mma_row(const MmaFamily *f, DType dt);
int gpu_bk(DType dt);
int gpu_search(const GpuArch *a, const GemmShape *s, const char *family, int cta2, GemmTile *best);
/* The CUDA-core GEMV of a GEMM with at most GPU_GEMV_ROWS rows per matrix (tile.c); 0 when M is
 * larger.  Both GPU targets take it when it is faster than the best MMA tile. */
#define GPU_GEMV_ROWS 8
int gpu_gemv(const GpuArch *a, const GemmShape *s, GemmTile *t);
void gpu_cluster(const GpuArch *a, const GemmShape *s, GemmTile *t);
const char *gpu_bound(const GemmTile *t);

/* Bytes per element of operand format dt in memory, block scales included. */
double gpu_elem_bytes(DType dt);

#endif
