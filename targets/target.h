/* targets/target.h: the target interface, the machine numbers a target needs, and the call
 * flattener shared by every target.
 *
 * A target turns a shape-inferred graph into a Plan through runtime/plan.h's builder; its cost
 * hook prices instructions for the runtime's timing engine.  Targets are listed once in
 * targets/targets.def.  TgtMachine pairs a machine description (targets/machine.h) with its
 * devices, memory spaces, units and links as plan entities, which copy straight into plans.
 */
#ifndef AICC_TARGET_H
#define AICC_TARGET_H

#include "ir/ir.h"
#include "runtime/interp.h"
#include "runtime/heap.h"
#include "runtime/plan.h"
#include "targets/machine.h"
#include "targets/precision.h"

/* ---- machines ---- */
/* A machine description (targets/machine.h) and the plan entities that describe it: one device
 * per non-host device class of the machine ("<id>"), one memory space per device-scope memory
 * with a bandwidth ("<id>.<mem>"), one compute unit ("<id>.core"), and one link per machine
 * link between two instantiated devices.  The plan records the machine's name and hash. */
typedef struct TgtMachine {
	Machine *m;
	Plan *desc;          /* devices, spaces, units, links; desc->machine, desc->machine_hash */
} TgtMachine;

/* Loads machine `name_or_path` (machine_load) and applies `--set key=value` overrides.
 * Diagnostics from the XML loader go to stderr; returns 0, or -1 with e set. */
int tgt_machine_load(const char *name_or_path, const char *const *sets, int nsets, TgtMachine *m,
		     RtError *e);
void tgt_machine_free(TgtMachine *m);
/* Copies the machine's devices, spaces, units and links into plan p. */
int tgt_machine_copy(const TgtMachine *m, Plan *p, RtError *e);

/* ---- flattening: calls and repeats expanded into one straight-line node list ---- */
typedef struct FlatVal {
	char *name;          /* unique: "x" in the entry graph, "block#3/h" inside call instance 3 */
	Value *v;            /* the IR value it instantiates (kind, init, source type) */
	int64_t instance;    /* call instance (0: entry graph); mixed into parameter seeds */
	DType dt;
	int rank;
	int64_t dims[RT_MAX_RANK];
	int def;             /* defining flat node, or -1 for inputs and parameters */
	int last;            /* last flat node that reads it, or -1 */
	int is_output;
} FlatVal;

typedef struct FlatNode {
	Node *n;             /* the IR node (op, attrs, annotations) */
	int *in, nin;        /* flat values; -1 for an absent optional input */
	int *out, nout;
	int64_t instance;
	/* the node's @device, else that of its innermost annotated enclosing Call (the partition
	 * pass places a cut layer stack by annotating its Call), or NULL */
	const char *device;
} FlatNode;

typedef struct Flat {
	FlatVal *vals; int nvals, cap_vals;
	FlatNode *nodes; int nnodes, cap_nodes;
	int *inputs, ninputs;       /* the entry graph's inputs */
	int *params; int nparams, cap_params;
	int *outputs, noutputs;     /* the entry graph's outputs */
} Flat;

/* Expands every Call of g (repeat N included) into f, with concrete shapes (every symbol must be
 * bound).  Returns 0, or -1 with e set ("graph.aig:LINE:COL: error: ..."). */
int tgt_flatten(Graph *g, Flat *f, RtError *e);
void tgt_flat_free(Flat *f);

#define TGT_MAX_OPERANDS 64   /* operands of one instruction */

/* A kernel's target attributes (`t.KEY="VALUE"` in the plan) built up before plan_add_instr
 * copies them: point PlanInstr.tile at kv and ntile at n.  tgt_ann_put appends one pair,
 * printf-formatted; pairs beyond TGT_ANN_MAX are dropped, values cut at 223 characters. */
#define TGT_ANN_MAX 40
typedef struct TgtAnn {
	PlanKV kv[TGT_ANN_MAX];
	char key[TGT_ANN_MAX][24], val[TGT_ANN_MAX][224];
	int n;
} TgtAnn;
void tgt_ann_put(TgtAnn *t, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* snprintf(out, n, fmt, ...) without its return value, through tgt_ann_put's printf-free
 * conversions (the same output byte for byte): for the per-instruction texts of lowerings. */
void tgt_fmt(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- targets ---- */
typedef struct TgtInput {
	Module *m;
	Graph *g;            /* entry graph, shapes inferred */
	const TgtMachine *machine;   /* loaded once per compile (tgt_machine_load) */
	const Precision *prec;       /* parsed once per compile against this target and machine */
	const char *model;       /* source path and binds, recorded in the plan for --check */
	const char *binds;
} TgtInput;

/* Adds the plan constant for flat parameter fv held in plan buffer `buffer` (targets/const.c):
 * its initialiser, weight file (resolved against the model directory `dir`) or data.  Returns 0,
 * or -1 with e set (e.g. literal data whose count does not match the buffer). */
int tgt_add_const(Plan *p, int buffer, const FlatVal *fv, const char *dir, RtError *e);

/* First-fit placement of buffers in one memory space (targets/heap.c): live intervals ordered by
 * offset, offsets aligned to `align` bytes, values released after their last reader.  The live
 * intervals are a treap keyed by offset whose nodes also hold the free gap before each interval
 * and the largest gap in their subtree, so that a placement finds the first gap that fits, and a
 * release drops an interval, in O(log n); releases pop a min-heap of death nodes instead of
 * scanning the live set.  Empty values take offset 0 and hold no interval. */
typedef struct TgtHeapRec {
	int owner;
	int64_t lo;
} TgtHeapRec;
typedef struct TgtHeapNode {
	int64_t lo, hi;      /* the interval [lo, hi) */
	int64_t gap;         /* lo minus the aligned end of the interval before it (0 for the first: lo) */
	int64_t maxgap;      /* the largest gap in this subtree */
	int owner;           /* the flat value holding it; -1: a free node */
	int l, r;            /* children (-1: none); l links the free nodes */
	uint32_t pri;        /* treap priority (a fixed hash of the node's index: deterministic) */
} TgtHeapNode;
typedef struct TgtHeap {
	TgtHeapNode *t;      /* node pool */
	int root, free;      /* tree root, first free node (-1: none) */
	int n, cap;          /* live intervals (non-empty values), pool size (grows as needed) */
	/* per flat value, or NULL: when >= 0, the node from which the value is dead instead of the one
	 * after its last reader (INT_MAX: never released; a value read on another stream is released
	 * once every stream is ordered after its reads, targets/devices.c) */
	const int *until;
	int64_t align;       /* bytes */
	int64_t top;         /* high-water mark, bytes */
	TgtHeapRec *rec;     /* every placement, in order */
	int nrec, crec;
	int nqueued;         /* rec[0, nqueued) are in dq when they die at all */
	RtHeap dq;           /* (first node at which the value is dead, rec index), least first */
	int scan;            /* the queue could not grow: releases check every live interval */
} TgtHeap;
/* Room for `capacity` live values to start with; 0, or -1 when out of memory (free with
 * tgt_heap_free). */
/* Whether tgt_heap_release(h, f, node) may release anything (a 64-device lowering asks every
 * heap at every node: the answer is almost always no). */
static inline int tgt_heap_due(const TgtHeap *h, int node)
{
	return h->scan || h->nqueued < h->nrec || (h->dq.n > 0 && h->dq.a[0].key <= node);
}
int tgt_heap_init(TgtHeap *h, int capacity, int64_t align);
void tgt_heap_free(TgtHeap *h);
/* The offset where `size` bytes of value `owner` go, or -1 when out of memory. */
int64_t tgt_heap_place(TgtHeap *h, int64_t size, int owner);
/* The interval at offset `lo` held by `from` is held by `to` from now on (and released as to's). */
void tgt_heap_rename(TgtHeap *h, int64_t lo, int from, int to);
/* Drops the intervals of values of f that no node from `node` on reads (outputs stay).  Amortised
 * O(log n) per released value; out of memory for its queue it checks every live interval instead. */
void tgt_heap_release(TgtHeap *h, const Flat *f, int node);
/* The live intervals in offset order: up to `max` of their offsets and owners into lo and owner;
 * returns how many there are (for tests). */
int tgt_heap_intervals(const TgtHeap *h, int64_t *lo, int *owner, int max);
/* s made a valid plan name (no blanks, '=', ',', brackets or quotes) into d (n bytes). */
void tgt_plan_name(char *d, size_t n, const char *s);
/* Adds the plan buffer of flat value v, in dtype dt and buffer format `format` (NULL: "row";
 * "q.FMT": stored encoded, sized by plan_format_bytes), to memory space `space`, placed
 * first-fit in h; its name is v's made valid (and unique with ".v" when that collided).  Returns
 * the buffer index, or -1 with e set; *end (when not NULL) receives its offset + size in bytes. */
int tgt_add_buffer(Plan *p, TgtHeap *h, const Flat *f, int v, DType dt, const char *format, int space, int64_t *end,
		   RtError *e);
/* Registers f's inputs and outputs (named as g's outputs) with the plan; buf maps flat values
 * to plan buffers.  0, or -1 with e set. */
int tgt_add_io(Plan *p, const Flat *f, const Graph *g, const int *buf, RtError *e);

/* The kernel instruction of flat node `node` (targets/instr.c): operands through buf (flat value
 * -> plan buffer) into the caller's ins/outs arrays, the node's attributes, its FLOP and its name
 * (its first output's buffer).  0, or -1 with e set when the node has too many operands. */
int tgt_kernel_instr(PlanInstr *pi, const Plan *p, const Flat *f, int node, const int *buf,
		     int ins[TGT_MAX_OPERANDS], int outs[TGT_MAX_OPERANDS], RtError *e);
/* Per flat value of f, 1 when a precision policy must hold it in the model's own dtype: operands
 * of explicit conversions, the float inputs of discrete (integer or bool) results and of the
 * ill-conditioned operators AMP runs in float32 (Exp, Softmax, Tan, ...), with the vector chains
 * computing them (targets/exact.c).  A calloc'd array of f->nvals, or NULL when out
 * of memory. */
unsigned char *tgt_exact_values(const Flat *f);
/* Whether op is an explicit conversion of the model (Cast, CastLike, QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear): its operands and results keep their dtypes. */
int tgt_explicit_conversion(Op op);
/* The storage format a `@precision(X)` annotation on the node defining flat value v asks for
 * (docs/language.md: annotations override the passes for one statement): X when it is a float
 * format of 16 bits or more and the value is a float, else DT_INVALID (no annotation, or a
 * narrow MMA format such as f8e4m3, which names the node's matrix format, not its result's).
 * @precision(f64) gives f32 on a narrower value and DT_INVALID on an f64 one (the target's own
 * f64 rule then decides). */
DType tgt_forced_dtype(const Flat *f, const FlatVal *v);
/* First and last flat node of every fusion group (attribute fusion_group, per call instance);
 * -1 for nodes outside a group.  gfirst and glast hold f->nnodes entries. */
void tgt_fusion_groups(const Flat *f, int *gfirst, int *glast);
/* Whether flat value v is computed once when the model is loaded (targets/instr.c): a parameter,
 * an absent input (v < 0), or a weight transform (Quantize/Dequantize, Cast, Transpose, Split, a
 * view) of load-time values only.  Recursive over the value's producers. */
int tgt_load_value(const Flat *f, int v);
/* Whether flat node i is such a weight transform and outside any fusion group (gfirst from
 * tgt_fusion_groups, or NULL): its kernel runs in the interpreter (numerics unchanged) but costs
 * nothing per step; targets record t.phase="load" and its time as t.load_us. */
int tgt_load_kernel(const Flat *f, const int *gfirst, int i);

/* ---- multi-device lowering (targets/devices.c) ----
 * A partitioned graph (passes/partition.c, or the user's @device annotations) names on each
 * node the device instance it runs on: "<id><k>" is instance k of the machine's device class
 * <id> ("gpu3", "lpu12").  TgtDevs gives each instance used one plan device (named "<id><k>",
 * copied from class <id>), one memory space for values ("<id><k>.<space>"), one stream
 * ("<id><k>") and one first-fit heap, and creates links between instances on first use (named
 * "<link>.<a>-<b>", bandwidth and latency from the machine's link class joining the two
 * classes).  A graph without any @device (its Transfers and collectives, if any, then run as
 * their one-process kernels: Identity, Sum, Concat, AllToAll) keeps the single-device plan: tgt_machine_copy's
 * entities, the value space "<id>.<space>" of the first device of class `kind` and one stream
 * "main" -- so unpartitioned plans are unchanged.
 *
 * Values: a node's outputs live on its instance.  A parameter or graph input read on several
 * instances gets one buffer per instance (parameters: one constant each; inputs: one bound
 * buffer, copied to the others over a link at the start).  The partition pass marks what it
 * cuts with an attribute that lowering reads: a weight-shard Split (`shard="weight"`, its input
 * a parameter) emits no instruction: shard k becomes a constant on the instance that reads it,
 * a slice of the parameter's initialiser (PlanConst.shard_*: weights are stored pre-sharded, as
 * Megatron checkpoints are); `shard="input"` (a KV-cache input's Split) and `shard="output"`
 * (the Concat assembling a sharded output) become sharded plan inputs and outputs.  Other unannotated nodes run on their first
 * reader's instance (instance 0 when none).  A collective's outputs (AllReduce, AllGather: one
 * IR output that every member holds; AllToAll: output j on member j) get one buffer per member.
 *
 * Instructions: tgt_devs_emit appends node i's instruction to its instance's stream, preceded
 * by a wait for every operand produced on another stream and followed by a record when another
 * stream reads a result; Transfer becomes a copy over the link, AllReduce / AllGather /
 * AllToAll a collective over the members' link, and every other node the kernel `pi` the
 * target built (operands already on the node's instance: use tgt_devs_bufs).
 */
/* The advice closing tgt_devs' "the plan does not fit in SPACE" error; --check's reference
 * builder (tools/plan_build.c) replaces it with its own, since a --tp plan's one-device
 * reference cannot be fixed by --tp. */
#define TGT_NOFIT_ADVICE "; compile for a machine with several devices (-O1 spreads the model over them, or give --tp N / --pp N) or use a larger machine"
/* ... an unpartitioned plan on a machine with several devices of the class: "; machine M has N
 * gpu devices and this plan uses one: compile with --target T (-O1 spreads ...)" */
#define TGT_NOFIT_MANY "; machine "
#define TGT_NOFIT_ADVICE_SPLIT "; give a larger --tp N / --pp N, or a machine with more devices or memory"

typedef struct TgtDevs {
	int n;               /* instances used (1 for an unpartitioned graph) */
	int *dev, *space, *stream;   /* per instance: plan device, value space, stream */
	TgtHeap *heap;       /* per instance */
	int *node_pl;        /* per flat node: instance, or -1 for a weight-shard Split */
	int *val_pl;         /* per flat value: instance holding its primary buffer */
	/* private to targets/devices.c */
	const TgtMachine *m;
	int64_t align;
	int partitioned, inputs_copied;
	void *inst;          /* the instances, sorted by (device class, number) */
	int *prim;           /* per flat value: its primary buffer */
	int *rep_head;       /* per flat value: its first copy on another instance, or -1 */
	struct TgtRep { int next, pl, buf, done; } *rep;   /* copies: list link, instance, buffer, filled */
	int nrep, caprep;
	int *rec_event;      /* per flat node: event recorded after it; -1 none, -2 to be named */
	int *wait_seen;      /* per flat node: last stream that waited on its event */
	int *first_reader;   /* per flat value: first flat node reading it, or -1 */
	int *until;          /* per flat value: TgtHeap.until (-1: the last-reader rule) */
	int **huntil;        /* per instance: its heap's own until where a collective's copy there is
				released sooner (events), else NULL (until) */
	int swapv[TGT_MAX_OPERANDS], swapb[TGT_MAX_OPERANDS], nswap;   /* tgt_devs_bufs */
	struct TgtLinkMemo { int a, b, link; } *lmemo;   /* link_of's answers, direct-mapped (NULL: none yet) */
	/* the last collective devices list parsed (a partitioned graph's collectives repeat a few
	 * lists thousands of times): its text, and its members as Insts (mem_n of them) */
	const char *mem_s;
	void *mem_x;
	int mem_n, mem_cap;
	int *dirty, ndirty;  /* tgt_devs_values: the instances whose heap took a buffer since its last release */
	unsigned char *is_dirty;
	/* set by the target before tgt_devs_values, optional: the buffer format of value v (NULL:
	 * "row"), e.g. a weight every reader of which encodes it to FP8 ("q.f8e4m3.128x128") */
	const char *(*format)(const void *ctx, const FlatVal *v);
	const void *format_ctx;
} TgtDevs;
typedef struct TgtRep TgtRep;

/* Places f's nodes and values on device instances of machine m and adds the plan's devices,
 * spaces, streams (and, unpartitioned, links) to p.  `kind` is the device class the target
 * lowers to (DEV_GPU, ...), `space` the memory-space name values live in ("hbm", "sram",
 * "vmem"; NULL, or a name the instance lacks: its first device-wide space), `align` the heap alignment in
 * bytes.  Errors (an @device naming a class or instance the machine does not have, out of
 * memory): -1 with e set ("aicc: error: ...").  Free with tgt_devs_free. */
int tgt_devs_init(TgtDevs *d, Plan *p, const TgtMachine *m, const Flat *f, DevKind kind,
		  const char *space, int64_t align, RtError *e);
void tgt_devs_free(TgtDevs *d);
/* The plan dtype a target holds flat value v in (ctx: the target's lowering state). */
typedef DType (*TgtDtypeFn)(const void *ctx, const FlatVal *v);
/* Adds the buffers of every flat value -- inputs, then parameters (live throughout, with their
 * constants; dir: the model directory for weight files), then node results in node order, each
 * placed after the values no later node reads are released -- one per instance that holds
 * the value, in dtype(ctx, value).  buf[v] receives the primary buffer.  0, or -1 with e set. */
int tgt_devs_values(TgtDevs *d, Plan *p, const Flat *f, TgtDtypeFn dtype, const void *ctx, int *buf,
		    const char *dir, RtError *e);
/* Points buf at the copies of node i's operands held on node i's instance (call before
 * tgt_kernel_instr for node i; tgt_devs_emit restores buf). */
void tgt_devs_bufs(TgtDevs *d, const Flat *f, int node, int *buf);
/* Emits node i (see above).  `pi` is the kernel instruction for ordinary nodes; for a
 * collective, when not NULL, its target attributes (tile: the target's cost of the collective)
 * go on the collective instruction; ignored for Transfer and weight-shard Splits (may be NULL).  Inputs are copied to
 * the instances that read them before the first node is emitted.  0, or -1 with e set. */
int tgt_devs_emit(TgtDevs *d, Plan *p, const Flat *f, int node, int *buf, PlanInstr *pi, RtError *e);
/* 1 when flat node i is Transfer, a collective, a weight-shard Split or a sharded input or
 * output (tgt_devs_emit lowers it; the target builds no kernel). */
int tgt_devs_handles(const TgtDevs *d, const Flat *f, int node);
/* Sharded graph inputs and outputs (a KV cache cut by heads, docs/plan-format.md "Multi-device
 * plans"): for entry-graph value v, which has no buffer of its own (buf[v] < 0), adds one plan
 * input (output = 0) or output (1) named `name` per shard, with PlanIO.shard_*.  1 when v is
 * sharded, 0 when not, -1 with e set.  tgt_add_io calls it. */
int tgt_devs_io_shards(Plan *p, const Flat *f, const int *in0, int v, int output, const char *name, const int *buf,
		       RtError *e);
/* The nodes by first operand, for walks over a value's readers without a scan of the graph:
 * in0[v] is the first node whose first operand is value v (-1: none) and in0[f->nvals + i] the
 * next node after node i with the same first operand (-1: none), in node order.  malloc'd (the
 * caller frees it); NULL when out of memory.  in0 of tgt_devs_io_shards is one of these. */
int *tgt_first_operand_lists(const Flat *f);

/* ---- the lowering walk (targets/lower.c) ----
 * One walk lowers every target but the LPU (which keeps its cycle-scheduled walk, lpu/lower.c):
 *     flatten -> arrange -> devices -> setup -> values -> prepare -> per node: devices or kernel
 *     -> finish -> inputs/outputs -> verify
 * flatten expands calls (tgt_flatten); setup is the target's (read the machine, check it, make
 * its state); devices places nodes on device instances and adds the plan's devices, spaces,
 * streams (tgt_devs_init: kind, space, align from the Target); values adds every buffer in the
 * dtype the target's `dtype` hook gives (tgt_devs_values) and finds fusion groups; prepare (if
 * any) runs once the buffers exist; then each node is either lowered by targets/devices.c
 * (transfers, collectives, weight shards; a collective gets the target's `collective` hook's
 * t.* attributes, if any) or becomes the kernel instruction tgt_kernel_instr builds, which the
 * target's `kernel` hook completes (numerics, tiling, cost as t.* attributes);
 * finish (if any) may annotate the plan's copies and collectives; inputs and outputs are
 * registered and the plan verified.  An error at any step frees everything and returns NULL. */
typedef struct Target Target;
typedef struct TgtLower {
	const Target *t;
	const TgtInput *in;
	Plan *p;
	Flat f;
	TgtDevs devs;        /* device instances, their spaces, streams and heaps */
	int *buf;            /* flat value -> its plan buffer (the primary one) */
	int *gfirst, *glast; /* flat node -> first / last node of its fusion group, -1 outside one */
	void *ctx;           /* the target's state (setup makes it, tgt_lower_alloc memory) */
	const char *space;   /* set by `arrange`: the memory space values live in instead of the
				Target's (the wafer target's weights streamed from MemoryX); NULL: its */
	RtError *e;
	/* private to targets/lower.c */
	void **allocs;
	int nallocs, capallocs;
} TgtLower;

/* Zeroed memory for n elements of `size` bytes that lives as long as the lowering (freed by the
 * walk); NULL with l->e set when out of memory. */
void *tgt_lower_alloc(TgtLower *l, size_t n, size_t size);
/* tgt_exact_values of l's flat graph in memory of the walk (tgt_lower_alloc), with the float
 * parameters that the target's format fmt cannot hold (tgt_param_beyond) and the load-time weight
 * transforms of them (tgt_load_value) also marked: held in the model dtype, not as infinities.
 * fmt DT_F32 (or wider) marks none.  NULL with l->e set when out of memory. */
unsigned char *tgt_lower_exact(TgtLower *l, DType fmt);
/* 1 when v is a parameter whose initialiser has a finite value that is an infinity in fmt
 * (rounded as the plan rounds: rt_round, nearest even); 0 for seeded and file-backed
 * initialisers (their values are not in memory), block formats and formats of 32 bits or more. */
int tgt_param_beyond(const Value *v, DType fmt);
/* The target's state: `size` zeroed bytes (tgt_lower_alloc) that become l->ctx; NULL when out
 * of memory. */
void *tgt_lower_state(TgtLower *l, size_t size);

/* ---- kernels already lowered (targets/lower.c) ----
 * A layer repeated N times lowers the same IR nodes N times to the same t.* attributes and
 * numerics.  What a target's kernel hook reads of a flat node is its IR node (op, attributes),
 * its device, its operands' buffers (dtype, format, size, shape), its FLOP, its fusion-group
 * position and whether it runs at load; the one instance-specific text is the name a fused node
 * is fused into ("fused"="into NAME").  tgt_kernel_sig writes those into sig (at most max
 * words) and returns their count, -1 when they do not fit; a target appends what else its hook
 * reads.  A node whose signature was lowered before reuses that result (tgt_memo_lower), its
 * strings already interned in the plan, with only the fused-into name formatted again. */
#define TGT_SIG_MAX 768
typedef struct TgtKernEntry {
	int64_t *sig;
	int nsig, n, fused, unit;
	PlanKV *kv;
	RtExecOpts opts;
} TgtKernEntry;
typedef struct TgtKernMemo {
	TgtKernEntry *km;
	size_t nkm, capkm;
} TgtKernMemo;
int tgt_kernel_sig(const TgtLower *l, int i, int64_t *sig, int max);
/* The memo entry for sig: the one remembered (its sig set), or the free entry it goes in (sig
 * NULL); NULL when the table cannot grow. */
TgtKernEntry *tgt_memo_slot(TgtLower *l, TgtKernMemo *m, const int64_t *sig, int n);
/* Remembers in entry k (tgt_memo_slot's free one) the kernel just lowered: t, pi's numerics and
 * unit, its strings interned.  0, or -1 with l->e set. */
int tgt_memo_put(TgtLower *l, TgtKernMemo *m, TgtKernEntry *k, const int64_t *sig, int n, const PlanInstr *pi,
		 const TgtAnn *t);
/* A kernel hook's lowering of node i through memo m: the entry of sig (nsig words; none when
 * nsig <= 0) when one is remembered (its pairs into t with the fused-into name of i's group,
 * pi's numerics and unit), else lower(l, i, pi, t), remembered under sig.  0, or -1 with l->e
 * set. */
int tgt_memo_lower(TgtLower *l, TgtKernMemo *m, const int64_t *sig, int nsig,
		   int (*lower)(TgtLower *l, int i, PlanInstr *pi, TgtAnn *t), int i, PlanInstr *pi, TgtAnn *t);

/* What a pass asks a target to price (Target.node_time): an IR node, or an aggregate of nodes
 * (disaggregate's attention and FFN sides), or a transfer between two devices.
 *   node    one IR node: its FLOP and the bytes of its operands and results (a Call: its
 *           callee's weights x repeat); NULL: the aggregate below
 *   flops, bytes, kernels   an aggregate: FLOP, bytes moved in the device's main memory,
 *           kernel launches
 *   chips   devices of the class sharing the work (tensor parallel); < 2: one
 *   fmt     the matrix format the FLOP run at (DT_INVALID: the node's result dtype)
 *   reduce  bytes all-reduced over the chips' link after the work (0: none)
 *   to      not NULL: a transfer of `bytes` from the device to `to` (nothing else counts)
 *   tiles   1: a MatMul or Attention node as the target's own kernel model prices it (the GPU
 *           tile search, the TPU's MXU folds: the training step's layer times), every other
 *           node by the roofline; 2: also every other node as the lowering prices its kernel
 *           (the GPU's memory-bound kernel with its launch) and an all-reduce (node NULL,
 *           reduce > 0) as the timing engine's ring plus the library's cost per call, where the
 *           target has such models (the partition pass's estimate of a layout's step time);
 *           0: the roofline, as every node (the pipeline stages balance like against like) */
typedef struct TgtWork {
	const Node *node;
	double flops, bytes;
	int kernels, chips, tiles;
	DType fmt;
	double reduce;
	const Device *to;
} TgtWork;

/* A target: data, and the hooks that differ.  Each target defines its value, tgt_<name>, in
 * targets/<name>/target.c; targets/targets.def lists them. */
struct Target {
	const char *name, *help;
	const char *default_machine;     /* machine description used without --machine */
	int kind;                        /* DevKind it lowers to; -1: the machine's first accelerator */
	const char *space;               /* memory space values live in ("hbm"); NULL: the device's first */
	int64_t align;                   /* buffer alignment, bytes */
	const char *pipeline;            /* its -O1 pass pipeline */
	/* --precision: the words and +options it takes (targets/precision.h), the word used
	 * without --precision, and whether a format also needs a matrix peak on the device */
	const char *formats, *default_precision;
	int matrix_peak;
	const void *family;              /* family-private data (the GPU targets' tiling hooks) */
	/* hooks of the walk (targets/lower.c); `lower` instead replaces the whole walk (lpu) */
	int (*arrange)(TgtLower *l);                                   /* optional: after flattening,
	    before devices are placed: may set FlatNode.device and TgtLower.space (wafer's layers) */
	int (*setup)(TgtLower *l);
	DType (*dtype)(const TgtLower *l, const FlatVal *v);
	int (*prepare)(TgtLower *l);                                   /* optional */
	int (*kernel)(TgtLower *l, int node, PlanInstr *pi, TgtAnn *t);
	int (*collective)(TgtLower *l, int node, TgtAnn *t);           /* optional: its t.* cost */
	int (*finish)(TgtLower *l);                                    /* optional */
	Plan *(*lower)(const TgtInput *in, RtError *e);
	/* seconds work w takes on device d of machine m under precision p, as this target prices
	 * it: how passes (partition, disaggregate) price nodes, so they hold no hardware numbers */
	double (*node_time)(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w);
	RtCostFn cost;                   /* the timing engine's per-instruction hook */
	/* optional: the formats it stores and computes in on machine m besides the --precision
	 * word, written to buf ("weights, graph inputs (the KV cache) and MatMul operands at f16, activations at
	 * f32"); aicc targets and --precision errors print it.  NULL when m does not say. */
	const char *(*formats_note)(const Machine *m, char *buf, size_t n);
};

/* Lowers in->g for target t: its own `lower`, else the walk above.  The plan, or NULL with e set. */
Plan *tgt_lower(const Target *t, const TgtInput *in, RtError *e);
/* The roofline most targets price work with: max(FLOP / (chips x peak at the format x the
 * machine's gemm efficiency), bytes / (chips x main-memory bandwidth x its efficiency)) plus
 * `kernels` launches of the device's launch engine (graph launches under +graph), plus the
 * all-reduce of w->reduce over the device class's link (recursive doubling: ceil(log2 chips)
 * x (alpha + bytes / one-way bandwidth), backends.md §7); a transfer: the link's alpha + bytes
 * / one-way bandwidth (backends.md §0).  Main memory is HBM, else DRAM, else SRAM; a device
 * without one (or a peak) prices only what it has; a missing link costs nothing. */
double tgt_roofline_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w);

/* The matrix product of work w's node (MatMul, Gemm) on one of w->chips devices: batch x
 * ([M, K] @ [K, N]) of operand format `in` and result format `out`, the devices split one prime
 * factor at a time to the largest extent each divides (Megatron's column- and row-parallel
 * GEMMs split the weight's larger dimension, sequence and context parallelism the tokens); a
 * weight without batch dimensions folds the batch into M.  1, or 0 when w has no such node,
 * a symbolic dimension, or devices no extent divides. */
typedef struct TgtGemmDims {
	int64_t batch, M, N, K;
	DType in, out;
} TgtGemmDims;
int tgt_work_gemm(const TgtWork *w, TgtGemmDims *g);
/* The extents of a MatMul/Gemm Y[ry] = A[ra] x B (B of rank rb; ta: Gemm's transA):
 * N = Y[-1], M = Y[-2] (1 for a vector), K = A's contracted dimension, batch = the product of
 * Y's leading dimensions; a B of rank <= 2 (a weight without batch dimensions) folds the batch
 * into M: one [batch*M, K] product, the weight read once.  Sets g's batch, M, N, K only; the
 * caller checks them (an unknown or zero dimension gives a non-positive extent). */
void tgt_gemm_extents(const int64_t *y, int ry, const int64_t *a, int ra, int rb, int ta, TgtGemmDims *g);
/* The fused attention of work w's node (Attention without a KV cache; AttentionGrad: Q, K, V
 * from its inputs 1-3) on one of w->chips devices: whole KV groups split over as many devices as
 * divide them (Megatron splits heads), `rest` the devices left to share the tokens (context
 * parallelism: a device's time is the whole sequence's / rest); `grad` the backward's FLOP per
 * forward FLOP (ir/cost.c flops_attention_grad over flops_attention), 1 for Attention; `off`
 * the packed sequences' offsets (seq_offsets, noff entries from 0 to Sq = T; NULL: one sequence
 * per batch row), whose attention is block-diagonal.  1, or 0. */
typedef struct TgtAttnDims {
	int64_t B, qh, kvh, Sq, T, d, dv, rest;
	const int64_t *off;
	int noff;
	int causal;
	double grad;
	DType in;
} TgtAttnDims;
int tgt_work_attn(const TgtWork *w, TgtAttnDims *a);
/* Attention's packed-sequence offsets (seq_offsets) when they span Sq = T from 0 (the shape pass
 * checked the rest), with *n their count; else NULL, *n = 0. */
const int64_t *tgt_seq_offsets(const Attrs *at, int64_t Sq, int64_t T, int *n);

extern const Target *const tgt_targets[];
extern const int tgt_ntargets;
const Target *tgt_find(const char *name);      /* NULL if unknown */
/* For an unknown target name: " (did you mean 'hopper'?; valid: reference, hopper, ...)" in buf. */
void tgt_suggest(const char *name, char *buf, size_t n);
/* The first target that lowers to devices of kind k (reference when none): how work on a device
 * is priced when the compile names no target. */
const Target *tgt_for_kind(DevKind k);
/* The target a compile that names --machine m but no --target builds for: the target whose
 * default machine m is, else the one target lowering to m's first accelerator's kind, else the
 * one of several of that kind whose default machine has m's accelerators (kinds and
 * architectures: dgx-h100's sm_90a GPUs are h100-sxm's, hopper).  NULL when none or several
 * fit.  why (n > 0) receives the reason ("its gpu devices are sm_90a"), "" for a machine a
 * target is written for. */
const Target *tgt_for_machine(const Machine *m, char *why, size_t n);
/* The machine device a plan device instantiates ("gpu3": class "gpu"), or NULL. */
const Device *tgt_plan_device(const Machine *m, const char *name);
/* Sets each device's peak_work and peak_fmt (runtime/plan.h) from the formats its kernels run
 * in (PlanInstr.opts.mma_in at the machine's peak for it, x the chips of a pool whose peak is
 * that many chips' bf16 peak), where that peak is not the device's bf16 peak: what `aicc run`
 * and the report's MFU compare an fp8 plan's achieved FLOP/s with. */
void tgt_record_peaks(Plan *p, const Machine *m);
/* Registers every target's cost hook with the runtime (the driver calls this once). */
void tgt_register_costs(void);

/* ---- error bands (targets/bands.c, data targets/bands.def from `make validate-bands`) ---- */
typedef struct TgtBand {
	const char *target, *cls;     /* cost model (hopper, blackwell, tpu, lpu) and kernel class */
	double median, worst;         /* |relative error| of the validation cases of that class */
	int cases;
} TgtBand;
/* The band of `cls` (gemm, attention, memory, collective, end-to-end) on `target`, or NULL when
 * no published case covers it. */
const TgtBand *tgt_band(const char *target, const char *cls);
/* An instruction's kernel class from its t.kind: gemm, attention, memory; copies and
 * collectives: collective. */
const char *tgt_kernel_class(const PlanInstr *in);
/* Annotates every kernel, copy and collective of p with t.class and t.band (worst residual of
 * its class, "none" when uncalibrated), t.band_median and t.band_cases.  0, or -1 with e set. */
int tgt_annotate_bands(Plan *p, RtError *e);
/* Prints one remark per instruction of p the target prices without a model of its own (its
 * t.coverage, e.g. a matrix op priced as memory-bound) to f (NULL: only counts); returns the
 * count. */
int tgt_coverage_remarks(const Plan *p, FILE *f);

#endif
