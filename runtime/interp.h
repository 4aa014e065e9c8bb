/* runtime/interp.h: the plan interpreter, the timing engine, reports and traces.
 *
 * rt_run executes a verified Plan: binds inputs (given tensors, or seeded random data),
 * materialises constants, runs every instruction in plan_linearize order through one dispatch
 * loop (kernels via rt_kernel with the instruction's RtExecOpts, copies, collectives, events),
 * checks each result against its planned buffer, and simulates time (runtime/timing.c): a
 * discrete-event simulation over the plan's units and links where each instruction's duration
 * comes from the cost hook its target registered (rt_cost_register) or the generic roofline.
 * With --check, rt_check runs the reference plan of the same graph (rebuilt through a hook the
 * driver registers, since the runtime includes no compiler header) and compares the outputs.
 * Nothing here prints or exits; results come back in RtRun, errors in RtError.
 */
#ifndef AICC_INTERP_H
#define AICC_INTERP_H

#include "runtime/plan.h"

/* ---- cost hooks ---- */
/* Seconds instruction `in` of stream `stream` occupies its unit (or link). */
typedef double (*RtCostFn)(const Plan *p, int stream, const PlanInstr *in);
/* Registers the cost model of target `name` (a static string); later registrations replace. */
void rt_cost_register(const char *name, RtCostFn fn);
RtCostFn rt_cost_lookup(const char *name);     /* NULL if none */
/* The generic model of backends.md §0: overhead + max(flops/peak, bytes/bandwidth) for kernels,
 * latency + bytes/bandwidth for copies and collectives (ring all-reduce: 2(p-1)/p of the data). */
double rt_cost_roofline(const Plan *p, int stream, const PlanInstr *in);
/* Seconds of a ring all-reduce of `bytes` over `ranks` devices on a link of per-hop latency and
 * one-way bandwidth: 2(p-1) hops and 2(p-1)/p of the data (0 for fewer than 2 ranks); the
 * timing engine's collective time, and what passes price a TP all-reduce with (gpu_node_time). */
double rt_allreduce_ring_s(double ranks, double bytes, double latency_s, double bandwidth);
/* The bytes/s each way a collective gets of its link: the link's bandwidth x t.link_eff (the
 * machine link's `<efficiency>`, the collective library's protocol overhead; 1 when absent);
 * 0 without a link. */
double rt_collective_bw(const Plan *p, const PlanInstr *in);
/* Bytes instruction `in` moves through each space (reads + writes), added into bytes[nspaces]:
 * the sizes of its operands in the space, each once, but no more than the target's recorded time
 * in the space (t.hbm_us for a space "gpu.hbm") at the space's bandwidth (an Embedding reads
 * rows of its table, an Attention updates its KV cache in place); a kernel's t.l2_us at the
 * bandwidth of its device's "*.l2" space (the L2 traffic the GPU model charged). */
void rt_instr_bytes(const Plan *p, const PlanInstr *in, double *bytes);

/* ---- rebuilding the reference plan for --check ---- */
/* Builds the reference plan (target `reference`) of the graph p was compiled from (p->source);
 * `precision` is the spec p records (p->source.precision, or NULL), from which the builder
 * takes the reference's f64 or f32.  Returns the plan or NULL with e set. */
typedef Plan *(*RtRebuildFn)(const Plan *p, const char *precision, RtError *e);
void rt_set_rebuild(RtRebuildFn fn);

/* ---- timing ---- */
typedef struct RtSpan {             /* one instruction on the timeline */
	int stream, index, unit, link;   /* unit or link: the resource it occupied (-1 for none) */
	double start, end;               /* seconds */
} RtSpan;

typedef struct RtTiming {
	double latency_s;                /* end of the last instruction */
	double flops;                    /* total */
	double *bytes;                   /* per space */
	double *busy_s;                  /* per device: sum of its units' busy time */
	double *dev_flops;               /* per device */
	double *unit_busy_s;             /* per unit */
	double *link_busy_s;             /* per link */
	int64_t *peak_bytes;             /* per space: most bytes live at once */
	/* one-time work done when the model is loaded (kernels with t.phase="load": weight
	 * transforms): not in latency_s; the sum of their t.load_us, in total and per device */
	double load_s, *dev_load_s;
	int nload;                       /* such kernels */
	RtSpan *spans;                   /* one per instruction, in plan_linearize order */
	int nspans;
} RtTiming;

/* Simulates p's execution time.  Returns 0, or -1 with e set (no cost model, no memory). */
int rt_simulate(const Plan *p, RtTiming *t, RtError *e);
void rt_timing_free(RtTiming *t);
/* d := a deep copy of t, a timing of p.  Returns 0, or -1 with e set (no memory; d is then empty). */
int rt_timing_copy(const Plan *p, RtTiming *d, const RtTiming *t, RtError *e);

/* ---- execution ---- */
struct RtDistHooks;                 /* below */
typedef struct RtBinding {          /* a tensor given for an input (or unbound parameter) */
	const char *name;
	RtTensor *t;                     /* borrowed */
} RtBinding;

typedef struct RtRunOpts {
	const RtBinding *bind; int nbind;
	uint64_t seed;                   /* for inputs given no data */
	int timing_only;                 /* no values: timing and memory only */
	int keep_all;                    /* keep every buffer's final value (per-node --check) */
	const char *base_dir;            /* resolves relative npy/safetensors paths; NULL: cwd */
	int64_t host_limit;              /* bytes of host memory available (0: unchecked): a run
	                                  * that needs more (rt_host_bytes) is refused before it
	                                  * allocates */
	/* NULL, or called often with what is being done ("binding weights", "running the plan"),
	 * the units done and their total, for a caller's progress line (the runtime never prints) */
	void (*progress)(void *ctx, const char *what, int64_t done, int64_t total);
	void *progress_ctx;
	const struct RtDistHooks *dist;  /* NULL: this process runs every device (below) */
} RtRunOpts;

/* Host bytes a run of p holds at its peak, as the interpreter stores values (f32, f64 or i64 per
 * element, whatever the dtype): every constant, the most non-constant values live at once over
 * the execution order, and the outputs' copies.  *consts receives the constants' part.  -1 when
 * the plan cannot be ordered. */
int64_t rt_host_bytes(const Plan *p, int64_t *consts);
/* The same for one process of a distributed run: only the buffers on devices with local[d] set
 * (NULL: all), and every output's copy when all_outputs (the process that collects them). */
int64_t rt_host_bytes_on(const Plan *p, const unsigned char *local, int all_outputs, int64_t *consts);

typedef struct RtRun {
	RtTensor *outputs;               /* p->noutputs tensors (not with timing_only); a sharded
	                                  * output's first entry holds the assembled whole, the
	                                  * other entries of its name are empty (data NULL) */
	RtTensor *values;                /* keep_all: p->nbuffers tensors, data NULL if never set */
	RtTiming timing;
	int fused;                       /* Convs run with the elementwise chain after them fused
	                                  * on their output (runtime/ewchain.h) */
} RtRun;

/* One run: rt_session_new, rt_session_run, rt_session_free (values of constants in r->values
 * are copies).  Returns 0, or -1 with e set ("file:LINE: error: ..." for a failed instruction). */
int rt_run(const Plan *p, const RtRunOpts *o, RtRun *r, RtError *e);
void rt_run_free(const Plan *p, RtRun *r);

/* ---- a plan loaded once, run many times (weights bound once) ---- */
/* A session holds the bound value of every constant of a verified plan: .npy and .safetensors
 * files are mapped read-only (runtime/npy.h) and a tensor whose file layout is the interpreter's
 * (f32, f64, i64 of the buffer's dtype and shape, aligned) is used in place, without a copy;
 * other files, seeded, fill and inline constants are materialised once.  Recorded checksums
 * (PlanConst.xxh3) are verified before first use.  Each rt_session_run binds its inputs (given or
 * seeded), borrows the constants and executes; a constant bound by o->bind (a parameter given
 * --input) is taken from the binding in that run instead.  rt_session_new loads every constant
 * not bound in o (none when o->timing_only); others load on first use.  The plan must outlive
 * the session, and tensors in RtRun.values that are constants (keep_all) are valid until
 * rt_session_free.  Returns NULL / -1 with e set. */
typedef struct RtSession RtSession;
typedef struct RtLoadStats {
	int nconsts;             /* constants bound so far */
	int nmapped;             /* of which used in place from a mapped file (no copy) */
	int64_t bytes;           /* host bytes of the constants' values, mapped ones included */
	int64_t mapped_bytes;
} RtLoadStats;
RtSession *rt_session_new(const Plan *p, const RtRunOpts *o, RtError *e);
int rt_session_run(RtSession *s, const RtRunOpts *o, RtRun *r, RtError *e);
const RtLoadStats *rt_session_stats(const RtSession *s);
void rt_session_free(RtSession *s);

/* ---- distributed execution: a process that holds some of the plan's devices ---- */
/* RtRunOpts.dist (runtime/dist.h builds these hooks over a transport; docs/distributed.md).
 * With hooks, this process holds the devices d with local[d] != 0: sessions bind only the
 * constants, and runs only the inputs, whose buffers live there.  Every process walks the same
 * execution order (plan_linearize); before step t the interpreter calls step(): 0 means execute
 * the instruction here as in one process (a kernel of a local stream; a copy, collective or
 * event whose buffers and streams are all local), 1 that the hook did this process's part
 * (sent, received, reduced; nothing for another process's kernel), -1 an error (e set).  done()
 * follows each step.  After the last step finish() brings every output's value into val of the
 * process that collects outputs and returns 1 there, 0 elsewhere (whose RtRun.outputs stay
 * empty), or -1.  val: this process's values, one per buffer (data NULL where not held). */
typedef struct RtDistHooks {
	void *ctx;
	const unsigned char *local;      /* per device */
	int root;                        /* 1 in the process that collects outputs (and runs
					  * --check's reference: rt_check) */
	int (*step)(void *ctx, int t, const PlanStep *s, RtTensor *val, RtError *e);
	void (*done)(void *ctx, int t);
	int (*finish)(void *ctx, RtTensor *val, RtError *e);
} RtDistHooks;

/* The value semantics of copies and all-reduces, shared by the interpreter and distributed
 * execution so that both give the same bits.
 * rt_value_round: t's values rounded to its dtype's grid (narrow floats; block formats in
 * blocks along the last axis; others unchanged).
 * rt_value_copy: *dst := a new tensor of buffer b's dtype and shape holding src's elements
 * converted one by one through double (the `copy` instruction); src must have b's element
 * count.  0, or -1 with e set (no memory).
 * rt_allreduce_add: acc[i] := acc[i] + x[i] for i < acc->n, through double and stored in acc's
 * dtype; an all-reduce is acc = 0, then x_0, x_1, ... added in rank order, then rounded.
 * rt_reducescatter_add: acc := acc + chunk j of x, x cut into n equal chunks along axis (acc has
 * x's dims but dims[axis] / n): the same additions as rt_allreduce_add on those elements, so a
 * reduce-scatter (acc = 0, x_0, x_1, ... in rank order, then rounded) gives the bits of an
 * all-reduce followed by a slice (for block formats when chunks hold whole blocks). */
void rt_value_round(RtTensor *t);
int rt_value_copy(const Plan *p, int b, const RtTensor *src, RtTensor *dst, RtError *e);
void rt_allreduce_add(RtTensor *acc, const RtTensor *x);
/* Compressed all-reduce (attribute `compress`, runtime/codec.h; docs/resilience.md): what a
 * FlashCommunication all-reduce computes, rank order kept: every input x_r is sent encoded, so
 * the reducers add Q(x_r) = decode(encode(x_r)) (rt_codec_apply on a copy), the sum is rounded
 * to the output dtype, and the reduced value is sent encoded again, so every member holds
 * Q(sum), rounded to its dtype.  Blocks run over the flattened tensor from element 0.
 * rt_instr_codec: the codec of instruction in (a collective's `compress`): 1 with *c set, 0 when
 * it has none, -1 with e set when the spec is malformed (plan_verify rejects that first).
 * rt_codec_apply: *y := a new tensor of x's type holding Q(x) (through f32), rounded to its
 * dtype; 0 or -1 with e set (no memory). */
struct RtCodec;
/* The work of a compressed all-reduce of n elements of elem_bytes each over `ranks` members, as
 * FlashCommunication's two-shot all-reduce does it (arXiv:2412.04964 §3: every rank encodes its
 * input, sends (p-1)/p of it, decodes and adds the p-1 chunks it receives, encodes its reduced
 * chunk, all-gathers, decodes p-1 chunks): enc_elems = n (1 + 1/p), dec_elems = 2 n (p-1)/p;
 * bytes = (enc + dec) x (elem_bytes + wire bytes per element), each element read once and
 * written once in one of the two forms; ops = vector instructions, enc (7 + spikes + planes)
 * and dec (3 + 3 planes) per element, counted from runtime/codec.c's inner loops (min, max,
 * one |x| compare per spike pass, subtract, multiply, rint, two clamps, one shift-or per plane;
 * decode: shift, mask, or per plane, convert, multiply, add). */
typedef struct RtCodecWork { double enc_elems, dec_elems, bytes, ops; } RtCodecWork;
void rt_codec_work(const struct RtCodec *c, int64_t n, int ranks, double elem_bytes, RtCodecWork *w);
/* What collective `in` puts on its link: raw = its input buffer's bytes, wire = what goes on
 * the link per full payload (rt_codec_bytes when compressed, else raw), codec_s = encode +
 * decode seconds (the target's t.codec_us when recorded, else RtCodecWork.bytes at the input
 * space's bandwidth), compressed = 1 for an all-reduce with a valid `compress`. */
typedef struct RtCollWire { double raw, wire, codec_s; int compressed; } RtCollWire;
void rt_collective_wire(const Plan *p, const PlanInstr *in, RtCollWire *w);
int rt_instr_codec(const PlanInstr *in, struct RtCodec *c, RtError *e);
int rt_codec_apply(const struct RtCodec *c, const RtTensor *x, RtTensor *y, RtError *e);
void rt_reducescatter_add(RtTensor *acc, const RtTensor *x, int axis, int j, int n);

/* ---- comparison against the reference (--check) ---- */
typedef struct RtCheckOut {
	const char *name;                /* the plan's output name */
	double max_abs, max_rel, tolerance;
	double abs_allowance;            /* > 0: a Sigmoid/Tanh output's elements may be off by up to
					    this much more (its input's allowance through f) */
	const char *abs_through;         /* then "Sigmoid" or "Tanh" */
	char tol_why[160];               /* what drives the tolerance when it is coarser than the
					    output's own dtype ("8u of mxfp8, the operand format of
					    MatMul 'layer#1/g'"), else "" */
	int ok;
} RtCheckOut;

typedef struct RtCheck {
	RtCheckOut *outs; int nouts;
	const char *first_bad_node;      /* per-node: first node out of tolerance, or NULL */
	const char *first_bad_buffer;
	double first_bad_err, first_bad_tol;
	int nodes_compared;              /* per-node: kernels compared with the reference */
	const char *closest_node;        /* per-node: the compared kernel nearest its tolerance */
	double closest_err, closest_tol;  /* its max_rel_err and tolerance */
	int ok;
} RtCheck;

/* The relative tolerance for a computation whose narrowest float format is dt (docs/plan-format.md
 * §Tolerances). */
double rt_tolerance(DType dt);
/* Unit roundoff u of format d (docs/plan-format.md §Tolerances): 2^-(m+1) for a float format with
 * m explicit significand bits (block types by their element format), 1/(2 qmax) for an integer
 * format scaled per group when `scaled`, 0 for exact integers.  `run --check` and `onnx-test`
 * tolerate 8 u of the coarsest format a plan computes in. */
double rt_unit_roundoff(DType d, int scaled);
/* Compares `got` against `ref` (same element count): max abs/rel error and whether every element
 * satisfies |g - r| <= tol * (|r| + max|ref|)... see docs. */
void rt_compare(const RtTensor *got, const RtTensor *ref, double tol, RtCheckOut *o);
/* Runs p and its reference plan on the same inputs and compares.  Returns 0 (see c->ok), or -1. */
int rt_check(const Plan *p, const RtRunOpts *o, int per_node, RtRun *r, RtCheck *c, RtError *e);
void rt_check_free(RtCheck *c);

/* ---- outputs ---- */
/* One JSON object (docs/plan-format.md §Report); c may be NULL.  outfiles: per output, the file
 * it was written to, or NULL.  Returns 0 or -1. */
int rt_report_write(const Plan *p, const RtRun *r, const RtCheck *c, const char *const *outfiles, FILE *f);
/* phases: the serving metrics of a plan compiled with --phase (PlanSource.phase), from its
 * latency.  Prefill: TTFT = the latency, prompt tokens/s = batch * context / TTFT.  Decode:
 * TPOT = the latency of one step, tokens/s per user = 1 / TPOT, tokens/s = batch / TPOT.
 * train: step = the latency, tokens/s = micro_batches x batch x context / step.
 * batch is the plan's bound B (1 when not bound).  Returns 0, or -1 for a plan without a phase. */
typedef struct RtPhase {
	const char *phase;          /* "prefill" | "decode" | "train" */
	int64_t batch, context;
	double ttft_s, tpot_s;      /* the one of the phase; the other is 0 */
	double step_s;              /* train: one training step (micro_batches x batch x context tokens); else 0 */
	int64_t micro_batches;      /* train: gradient accumulation's micro-batches per step (>= 1) */
	double tokens_per_s;        /* prefill: prompt tokens/s; decode: generated tokens/s, all users */
	double tokens_per_s_user;   /* decode: per user; prefill: 0 */
} RtPhase;
int rt_phase_metrics(const Plan *p, double latency_s, RtPhase *out);
/* The peak a device's achieved FLOP/s is a share of: that of the formats its kernels ran in
 * (PlanDevice.peak_work: an fp8 plan's fp8 peak, FLOP-weighted), else its peak_flops. */
double rt_work_peak(const PlanDevice *d);
/* A training step's figures (plan of --phase train; docs/passes.md "Training step"):
 * MFU = model FLOP (the plan's source.model_flops: 3 x forward) / (step x peak), HFU = the FLOP
 * the plan executes (recomputation, e.g. AttentionGrad's softmax, and the optimizer included) /
 * (step x peak), peak = the sum of the devices' rt_work_peak (an fp8 plan's fp8 peak, as `aicc
 * run`'s compute lines); and per device the bytes of its
 * weights (constants that are parameters), gradients (buffers AdamW reads as G, and under ZeRO 1
 * the whole gradients its once-per-step reduce-scatter, outputs grad.zero.N, reads), optimizer state
 * (master weights P.master, moments P.exp_avg/P.exp_avg_sq, adamw.step), their updated copies
 * (AdamW's outputs), and activations (every other buffer: activations, gradients before their
 * cast to f32, inline literals; summed before the memory plan's reuse), with the planned peak of
 * its spaces.  Returns 0, or -1 for a plan that is not a
 * training step; out->dev has p->ndevices entries (rt_train_free). */
typedef struct RtTrainMem {
	double weights, gradients, optimizer, updated, activations, peak;
} RtTrainMem;
/* Packed variable-length sequences (Attention's seq_offsets, n entries from 0 to the tokens of a
 * row): against padding every sequence to the longest (a padded batch of `seqs` rows), the
 * tokens each layer's linear operators process and the (query, key) pairs attention scores
 * (causal: each sequence's triangle; padded, the longest's triangle per row), per batch row.
 * rt_packing returns 0, or -1 when the offsets do not increase from 0. */
typedef struct RtPacking {
	int seqs;
	int64_t tokens, longest, padded_tokens;
	double pairs, padded_pairs;
} RtPacking;
int rt_packing(const int64_t *off, int n, int causal, RtPacking *out);
/* The packing as a JSON object (sequences, tokens, padded_tokens, attention_pairs,
 * padded_attention_pairs), a new reference. */
struct json_t;
struct json_t *rt_packing_json(const RtPacking *k);
/* The seq_offsets of the plan's first Attention kernel that has them (*n entries, *causal its
 * is_causal), or NULL. */
const int64_t *rt_plan_seq_offsets(const Plan *p, int *n, int *causal);
typedef struct RtTrain {
	double step_s, tokens, tokens_per_s;
	double model_flops, hw_flops, peak_flops_per_s, mfu, hfu;
	RtTrainMem *dev;
	int ndev;
	RtPacking pack;      /* the plan's first Attention with seq_offsets (pack.seqs 0: none) */
} RtTrain;
int rt_train_metrics(const Plan *p, const RtTiming *t, RtTrain *out);
void rt_train_free(RtTrain *t);
/* The error band of a simulated plan (targets/bands.c annotates every instruction with its
 * kernel class, t.class, and that class's worst residual over make validate's published cases,
 * t.band, "none" when no case covers it): rel = the instructions' bands weighted by their
 * simulated time, over the time that has a band; the least-calibrated class is the one whose
 * time x band is largest, time without a band counting as a 100% error (least_band < 0: that
 * class has no published case).  Returns 0, or -1 when the plan carries no bands (the reference target). */
typedef struct RtBand {
	double rel;                 /* +-rel of the latency (worst residuals) */
	double rel_median;          /* the same with the classes' median residuals: the typical error */
	double covered_s, uncovered_s;
	char least[32];             /* least-calibrated class */
	double least_band;          /* its worst residual; -1: uncalibrated */
	int least_cases;
	double least_s;             /* its time */
} RtBand;
int rt_band(const Plan *p, const RtTiming *t, RtBand *b);
/* Chrome trace-event JSON: one track per unit and per link.  Returns 0 or -1. */
int rt_trace_write(const Plan *p, const RtTiming *t, FILE *f);

#endif
