/* passes/pass.h: the pass manager's contract with every pass.
 *
 * A pass is a plain function `int pass_<verb>(Module *m, PassCtx *c)` over every graph of the
 * module, listed once in passes/passes.def with what it requires and invalidates.  It returns
 * 0, or the number of user errors it reported (a capacity overflow, say); internal problems
 * are asserts.  Through the PassCtx a pass counts statistics (--stats), records remarks that
 * say what it did and what it did not do and why (--remarks=), and asks the bisection counter
 * before each rewrite (--opt-bisect-limit=).  The remarks stay in the context after the run
 * (pass_remarks) so later stages, such as `aicc explain`, can use them.
 *
 * Provides the pipeline (passes/pipeline.c), remarks (passes/remarks.c) and the passes.
 * Requires ir/ (builder, verifier, shape inference) and, for folding, runtime/kernels.
 */
#ifndef AICC_PASS_H
#define AICC_PASS_H

#include <stdint.h>
#include <stdio.h>

#include "ir/ir.h"

/* Analyses the pass manager tracks. */
enum {
	A_SHAPES  = 1u << 0,   /* every value has its dtype and shape inferred */
	A_TOPO    = 1u << 1,   /* every node list is in topological order */
	A_MEMPLAN = 1u << 2,   /* a memory plan matches the graph */
};

typedef enum RemarkKind {
	REMARK_APPLIED,        /* the pass changed the graph */
	REMARK_MISSED,         /* the pass looked at the node and left it, saying why */
	REMARK_ANALYSIS,       /* a fact the pass found (peak memory, say) */
} RemarkKind;

typedef struct Remark {
	const char *category;  /* "canon", "fusion", "memory" */
	const char *pass;      /* the pass that made it */
	RemarkKind kind;
	Loc loc;               /* the node's source location */
	const char *node;      /* the name of the node's first output (NULL: graph-level) */
	const char *graph;
	char *msg;             /* owned (malloc) */
	struct Remark *next;
} Remark;

typedef struct PassStat {
	const char *pass;      /* the pass (static string) */
	const char *name;      /* the counter (static string), e.g. "nodes removed" */
	int64_t value;
} PassStat;

/* The memory capacity a plan is checked against (--capacity, or a machine description). */
typedef struct MemCapacity {
	const char *device;    /* "gpu0" */
	const char *space;     /* "HBM" */
	int64_t bytes;         /* 0: unchecked */
} MemCapacity;

/* The result of plan-memory for one graph. */
typedef struct MemPlan {
	const Graph *graph;
	int64_t peak;          /* bytes of the arena */
	int64_t live_peak;     /* bytes live at the worst node (<= peak: fragmentation) */
	const Node *peak_node; /* where live_peak is reached */
	int nbufs;
	int64_t *offset;       /* per value id: the arena offset (in its device's arena when the
				  graph is partitioned), or -1 when not planned */
	int64_t *size;         /* per value id: bytes (0 when not planned) */
	struct MemPlan *next;
} MemPlan;

struct Machine;
struct Precision;
struct Target;
struct Device;
struct TgtWork;

typedef struct PassCtx {
	/* the machine, loaded once per compile by the driver (NULL: none) */
	const struct Machine *machine;
	/* --precision, parsed once by the driver (targets/precision.h); NULL: not given, the
	 * place-precision pass keeps the dtypes */
	const struct Precision *precision;
	/* the compile's --target (NULL: none given, work is priced by the device kind's target):
	 * passes price nodes through its node_time hook, never with numbers of their own */
	const struct Target *target;
	double error_budget;        /* --error-budget: relative output error allowed per node */
	/* phases: the serving phase kv-cache builds ("prefill", "decode"; NULL: none) and, for
	 * decode, the number of past tokens in the KV cache (--context) */
	const char *phase;
	int64_t context;
	/* phases: the mixed phase's composition ("32x1+2048,1x512+0", pass_mix_parse): one serving
	 * iteration of chunked prefills and decodes over one flattened token batch */
	const char *mix;
	DType kv_format;            /* --kv-format: the caches' element format (0, DT_INVALID: K's) */
	double lr;                  /* phase train: --lr, AdamW's learning rate (0: 1e-3) */
	double model_flops;         /* phase train, set by autodiff: 3 x the forward pass's FLOP */
	int grad_accum;             /* phase train: --grad-accum K, micro-batches per step (0, 1: one) */
	/* phase train, parallel step (passes/train_step.c): --dp, --cp, --zero, --pp-virtual; with
	 * --tp/--pp they make the step a parallel one, priced per replica (train_step below) */
	int dp, cp, vstages;        /* 0: not given */
	int zero;                   /* --zero Z stored as Z + 1 (0: not given, ZeRO 1) */
	int recompute;              /* --recompute: RECOMPUTE_* (parallel step) */
	int train_search;           /* --train-search: the fastest configuration that fits */
	int no_seq_parallel;        /* --no-sequence-parallel: TP without sequence parallelism (the
				     * layers' other operators replicated on the TP ranks) */
	int unfused_attention;      /* --unfused-attention: the scores materialised in HBM */
	int grad_after_backward;    /* --grad-after-backward: the data-parallel gradient collective
				     * starts after the step's backward passes (exposed) */
	int pp_blocking_sends;      /* --pp-blocking-sends: every pipeline send waits on its transfer */
	int hidden_dropout;         /* --hidden-dropout: a dropout on each residual branch */
	int dp_plan;                /* --dp with --emit plan (no --cp/--pp-virtual/--train-search/
				     * --recompute, --tp/--pp 1): a data-parallel step plan that runs,
				     * ZeRO's sharding lowered (autodiff zero_adamw), not a priced step */
	/* phase train: --pack L1,L2,...: packed sequences' offsets 0, L1, L1+L2, ..., S (owned;
	 * NULL: none), set on every Attention as seq_offsets by autodiff */
	int64_t *seq_offsets;
	int nseq_offsets;
	struct TrainStep *train_step;   /* set by autodiff for a parallel step (owned; NULL: none) */
	/* partition (passes/partition.c) */
	int tp;                     /* --tp N: tensor-parallel group size (0 or 1: none) */
	int pp;                     /* --pp N: pipeline stages (0: the fewest that fit memory) */
	int ep;                     /* --ep N: expert-parallel group size (0 or 1: none) */
	/* --devices N: only the machine's first N accelerators (0: all of them); --exclude-devices
	 * "gpu3,gpu17": those (named as the machine and the plan name them) are left out, and the
	 * partition pass places the model on the survivors only (docs/resilience.md) */
	int devices;
	const char *exclude;
	/* --compress-collectives[=CODEC]: the codec (runtime/codec.h) every AllReduce the
	 * partition pass places gets as {compress}; NULL: none */
	const char *compress;
	int partition_auto;         /* -O1: without --tp/--pp/--ep, choose them when the model does not
				       fit one device (passes/partition.c auto_choose) */
	/* disaggregate (passes/disaggregate.c) */
	int microbatches;           /* --micro-batches N: decode micro-batches (0: the cost model's) */
	const char *pools;          /* --pools hybrid|gpu|lpu: both pools (default), or one alone */
	/* options */
	unsigned remark_mask;  /* bit per category (pass_remark_category) */
	int verify_each;
	int time_passes;
	int stats;
	int print_after_all;
	const char *print_after;    /* a pass name, or NULL */
	int64_t print_elide;        /* IR dumps leave out constants over this many values (-1: none;
	                               default IR_ELIDE_OVER; --print-weights) */
	long bisect_limit;          /* -1: no bisection */
	int64_t fold_limit;         /* constant folding: at most this many elements per result */
	MemCapacity capacity;
	FILE *out;                  /* remarks, --stats, --time-passes, IR dumps: stderr */
	/* state */
	const char *cur_pass;
	long bisect_count;
	long changes;               /* rewrites applied so far (canonicalize's fixpoint) */
	Remark *remarks, *last_remark;
	int nremarks;
	PassStat *statv;
	int nstats, capstats;
	MemPlan *plans;
	double *seconds;            /* per registry row */
} PassCtx;

typedef int (*PassFn)(Module *m, PassCtx *c);

typedef struct PassInfo {
	const char *name;
	PassFn fn;
	const char *category;
	unsigned requires, invalidates;
	const char *description;
} PassInfo;

#define PASS(name, fn, cat, req, inv, desc) int pass_##fn(Module *m, PassCtx *c);
#include "passes/passes.def"
#undef PASS

extern const PassInfo pass_table[];
extern const int pass_count;

/* The default pipeline (-O1 of one device, and of the reference target). */
#define PASS_DEFAULT_PIPELINE "canonicalize,place-precision,fuse,schedule,plan-memory"
/* --compress-collectives without a codec: int4 codes with 2 spikes per block of 128 (spike
 * reserving keeps each group's extremes, FlashCommunication V2, arXiv:2508.03760; the block of
 * 128 is this project's choice, docs/resilience.md) */
#define PASS_DEFAULT_CODEC "int4:b128:k2"
/* -O1 of the targets that place a model on a machine's several GPUs or TPU chips: partition,
 * which under -O1 leaves a model that fits one device alone and otherwise chooses --tp/--pp by
 * the cost model (PassCtx.partition_auto). */
#define PASS_DEVICES_PIPELINE "canonicalize,place-precision,fuse,schedule,partition,plan-memory"

/* ---- pipeline (passes/pipeline.c) ---- */
void pass_ctx_init(PassCtx *c);
void pass_ctx_free(PassCtx *c);      /* remarks, statistics, memory plans */
const PassInfo *pass_find(const char *name);
/* Checks a comma-separated pass list; -1 with "aicc: error: unknown pass" otherwise. */
int pass_check_list(const char *list);
/* Runs the comma-separated list over m.  Returns 0, or the number of errors reported (by a
 * pass, or by --verify-each after the pass that broke the graph). */
int pass_run_pipeline(Module *m, PassCtx *c, const char *list);
void pass_list(FILE *f);             /* --list-passes */
void pass_print_stats(const PassCtx *c, FILE *f);
void pass_print_times(const PassCtx *c, FILE *f);
/* Adds delta to counter `name` of the current pass. */
void pass_stat(PassCtx *c, const char *name, int64_t delta);
int64_t pass_stat_get(const PassCtx *c, const char *pass, const char *name);
/* Bisection: whether the next rewrite (described by what, at node n) may run.  Counts every
 * call; with --opt-bisect-limit=N the first N run and the rest are skipped, each line printed
 * as "BISECT: running|NOT running rewrite (k) pass: what 'node'". */
int pass_bisect(PassCtx *c, const Node *n, const char *what);
/* Counts one applied rewrite: bumps c->changes and the statistic `stat` of the current pass. */
void pass_changed(PassCtx *c, const char *stat);

/* ---- phases (passes/kv_cache.c) ---- */
/* A mixed serving iteration (phase "mixed"): groups of n sequences, each with s new tokens after
 * p cached ones (a decode is s = 1; a chunk of a prompt s > 1 with p tokens already prefilled),
 * flattened into one batch of sum(n * s) tokens, as vLLM and Sarathi-Serve run them. */
enum { PASS_MIX_MAX = 8 };
typedef struct PassMixGroup {
	int64_t n, s, p;
} PassMixGroup;
/* Parses "NxS+P,..." (P may be left out: 0), e.g. "32x1+2048,1x512+1024", into g (room for
 * PASS_MIX_MAX).  Returns the group count, or -1 with a message in err (errn bytes). */
int pass_mix_parse(const char *spec, PassMixGroup *g, char *err, size_t errn);
/* The tokens of a composition: sum(n * s). */
int64_t pass_mix_tokens(const PassMixGroup *g, int ng);
/* phases: an error (located at the table's declaration, returns 1) when the phase's positions
 * (decode: --context past tokens and the new one; prefill/train: S; mixed: p+s) run past a
 * RotaryEmbedding's cos/sin table, the model's maximum context (passes/kv_cache.c). */
int pass_check_positions(Module *m, PassCtx *c);

/* ---- memory planning (passes/plan_memory.c) ---- */
/* Sets c->capacity from the machine's first accelerator: its HBM, else DRAM, SRAM or VMEM. */
void pass_capacity_from_machine(PassCtx *c, const struct Machine *mach);

/* ---- remarks (passes/remarks.c) ---- */
/* The bit of a category name ("fusion"), 0 when unknown; "all" is every bit. */
unsigned pass_remark_category(const char *name);
/* Parses "fusion,canon"; -1 with a message on an unknown name. */
int pass_parse_remarks(const char *list, unsigned *mask);
/* Records a remark at node n (NULL: at the graph g) and prints it when its category is on:
 * "file:line:col: remark: fusion: did not fuse ...". */
void pass_remark(PassCtx *c, RemarkKind kind, const Graph *g, const Node *n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
const Remark *pass_remarks(const PassCtx *c);

/* ---- layers (passes/layers.c) ---- */
/* The entry graph's first and last layers, for rules that treat them apart (place-precision,
 * partition).  A layer stack is a Call in the entry graph whose callee holds an F_QUANT node;
 * the first repetition of the first stack and the last repetition of the last are peeled into
 * graphs of their own, "<callee>.first" and "<callee>.last" (same weights: parameter inits are
 * shared and call instances keep their numbers).  Marks (Node.aux = LAYER_FIRST / LAYER_LAST)
 * every node of those graphs and every entry-graph node before the first stack or after the
 * last; without stacks, the entry graph's first and last F_QUANT nodes.  Returns the number of
 * calls peeled; shapes must be re-inferred after a peel. */
extern const char LAYER_FIRST[], LAYER_LAST[];
int pass_mark_layers(Module *m, PassCtx *c);

/* ---- the parallel training step (passes/train_step.c) ----
 * A step of --dp D data-parallel replicas of a --tp T x --cp C x --pp P model-parallel replica
 * (ZeRO stage --zero Z, --pp-virtual V chunks per pipeline rank), --grad-accum M micro-batches
 * of --batch B sequences per replica.  Times in seconds, bytes per device. */
/* --recompute none|selective|full|selective-ffn|layers|dots (docs/passes.md), named in that order */
enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_SELECTIVE_FFN, RECOMPUTE_LAYERS, RECOMPUTE_DOTS };
extern const char *const train_recompute_names[];
typedef struct TrainStep {
	int dp, tp, pp, cp, zero, vstages, micro;
	int recompute;                /* RECOMPUTE_* */
	double recompute_frac;        /* of the layers, recomputed in full (RECOMPUTE_LAYERS: the
					 fewest that fit; full: 1; else 0) */
	int64_t devices;              /* dp x tp x pp x cp */
	int layers;                   /* repeated layers in all */
	int *stage_layers;            /* per pipeline rank: layers it holds (pp entries) */
	double *stage_time;           /* per pipeline rank: forward + backward of one micro-batch */
	double fwd_layer, bwd_layer;  /* one layer (the first stack's), one micro-batch, per device */
	double tp_comm_layer;         /* its tensor-parallel collectives (forward and backward) */
	double cp_comm_layer;         /* its context-parallel K/V all-gather and dK/dV reduce-scatter */
	double p2p;                   /* one activation send between pipeline ranks */
	double p2p_steady;            /* --pp-blocking-sends: the sends' time on the critical path of
					 the micro-batches (0: they overlap compute) */
	double pipeline;              /* the 1F1B (interleaved) schedule of the micro-batches */
	double bubble;                /* its idle part on the slowest rank */
	double dp_rs, dp_ag;          /* the data-parallel gradient reduce-scatter, weight all-gather */
	double dp_exposed, dp_hidden; /* of those, on the critical path / under compute */
	double dp_units;              /* the compute units' own time on those collectives (their
					 reductions and copies through HBM), less a collective engine's
					 offload share; serial with compute */
	double offload;               /* that share (dev_collective_offload), 0..1; as an input of
					 the pricing, < 0: the machine's */
	double alt_step[2], alt_mfu[2], alt_units[2];   /* the step with share 0 and share 1 */
	double optimizer;             /* AdamW on the slowest rank's shard */
	double step;                  /* the step */
	double tokens;                /* per step */
	double model_flops, hw_flops; /* per step, all devices: 3 x forward; as executed */
	double peak;                  /* one device's peak FLOP/s at the step's format */
	double mfu, hfu;
	double weights, grads, optim, acts, capacity;   /* memory of pipeline rank 0's device */
	const char *fabric;           /* the link the DP/CP/PP traffic crosses (NULL: the device's) */
	int fits;                     /* rank 0's memory fits its device */
	int candidates, fitting;      /* --train-search: configurations priced, of them fitting */
} TrainStep;
/* Prices the parallel step of graph g (autodiff's one-instance step: Node.aux tags, see
 * autodiff.c) into a new TrainStep on c; 0, or the number of errors reported. */
int train_step_price(Graph *g, PassCtx *c, const int64_t *repeats, int nrepeats, double tokens_mb);
/* Whether c asks for a parallel training step: --phase train with --dp, --cp, --zero,
 * --pp-virtual or --train-search (--tp/--pp alone partition the one-instance-per-layer-unrolled
 * step's plan over the machine, as for inference). */
int pass_train_parallel(const PassCtx *c);
void train_step_free(TrainStep *t);

/* ---- helpers shared by the passes (passes/util.c) ---- */
/* Seconds work w takes on device d of c's machine, as c's target prices it (Target.node_time;
 * targets/target.h TgtWork), under c's precision; without a target, as the first target for
 * d's kind does (tgt_for_kind). */
double pass_work_time(const PassCtx *c, const struct Device *d, const struct TgtWork *w);
/* Bytes weight input i of node n takes on its device: the stored format's when the target keeps
 * it encoded (a GPU stores the B operand of an FP8 or MX/NVFP4 matrix product at that format:
 * targets/precision.h prec_weight_format), else the declared size (0 when not known). */
int64_t pass_weight_bytes(const PassCtx *c, const Node *n, int i);
/* The weight bytes graph g reads as stored (pass_weight_bytes), each parameter once, times mult,
 * with the graphs it calls (times their repeat counts; depth: the call depth so far, at most 16)
 * and the parameters it passes to them (RoPE tables). */
int64_t pass_graph_weight_bytes(const PassCtx *c, const Graph *g, int64_t mult, int depth);
/* The name of n's first output, for messages. */
const char *pass_node_name(const Node *n);
/* Whether every element of v is the constant x (inline literal, fill, or folded data). */
int pass_const_all(Value *v, double x);
/* If v is a constant with a single distinct value (any shape), sets *x and returns 1. */
int pass_const_scalar(Value *v, double *x);
/* Whether v is a graph output of its graph. */
int pass_is_output(const Value *v);
/* The single node reading v, or NULL when v has no or several users or is a graph output. */
Node *pass_single_user(Value *v);
/* Replaces every use of the output of `old` by `to` and removes `old`; keeps graph-output names
 * by renaming `to` when it is a node value.  Returns -1 (nothing changed) when `to` cannot take
 * the name: the caller keeps `old`. */
int pass_replace_node(Graph *g, Node *old, Value *to);
/* Moves graph g of module m just before graph `before` (so the entry graph can stay last). */
void pass_move_graph_before(Module *m, Graph *g, Graph *before);
/* A copy of graph src named `name`, placed before `before`: the same inputs, parameters (their
 * initialisers shared, so every call instance keeps its weights), nodes with their attributes,
 * callees and annotations, and outputs. */
Graph *pass_clone_graph(Module *m, Graph *src, const char *name, Graph *before);

#endif
