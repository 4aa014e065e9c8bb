/* viz/viz.h: pictures of graphs and plans, and the per-instruction facts `aicc explain` prints.
 *
 * A VizGraph is the picture's model before any drawing: nodes (operators, graph inputs and
 * outputs, collectives) with the device they run on, their output shape and precision, the call
 * instance they belong to ("layer#3/", as targets/flatten.c names values) and their fusion group;
 * edges with the bytes they carry, transfers and collectives marked with their link and predicted
 * time.  It is built from the IR (viz_from_ir: before a target, every node on one device unless
 * annotated) or from a plan's placement (viz_from_plan).  viz_collapse folds runs of equal call
 * instances (a `repeat N` call) into one cluster marked "x N".  viz/graph.c turns the model into
 * a cgraph graph (one cluster per device inside a cluster per device kind, then per call
 * instance and fusion group) and writes DOT, or lays it out and renders SVG/PNG with gvc.
 *
 * The facts (viz/facts.c) read what passes and targets record generically: instruction
 * attributes `a.NAME` first, then target attributes `t.NAME`, so attributes added by later
 * passes (precision, est_rel_err, precision_reason, placement_reason, bound) show up without a
 * change here.  Requires ir/ir.h and runtime/interp.h; allocation failures abort (like the
 * IR's arena), since pictures are a compiler-side tool.
 */
#ifndef AICC_VIZ_H
#define AICC_VIZ_H

#include <stdint.h>
#include <stdio.h>

#include "ir/ir.h"
#include "runtime/interp.h"

/* ---- the picture model ---- */
typedef enum VizKind { VN_OP, VN_INPUT, VN_OUTPUT, VN_COLLECTIVE } VizKind;

typedef struct VizNode {
	char *id;            /* unique: the flat name of its first output ("layer#3/h") */
	VizKind kind;
	char *op;            /* "MatMul", "allreduce", the input's name ... */
	char *shape;         /* "f32[1, 8, 768]" or NULL */
	char *precision;     /* what it computes in: the `precision` attribute, else the dtype */
	char *note;          /* an extra label line (collective: link and time) or NULL */
	int device;          /* index into VizGraph.devices, or -1 (inputs, outputs) */
	char *instance;      /* call instance "layer#3" ("" at the top level) */
	char *callee;        /* the called graph's name ("layer"; "" at the top level) */
	int64_t group;       /* fusion group within its instance, or -1 */
	char *fusion;        /* the group's kind (from its anchor), or NULL */
	int64_t count;       /* after viz_collapse: instances this node stands for (1: itself) */
	int shards;          /* after viz_collapse: devices of one instance it stands for (1: itself) */
	int64_t first, last; /* after viz_collapse: the instance numbers it stands for ("layer#1..80") */
	char *op_last;       /* after viz_collapse, inputs and outputs: the last name folded in, or NULL */
	int hidden;          /* folded into another node by viz_collapse, or outside --focus */
	int rep;             /* after viz_collapse: the node drawn in its place (itself if shown) */
	int context;         /* --focus: drawn only as the neighbour of a node in focus */
} VizNode;

typedef struct VizEdge {
	int src, dst;        /* nodes */
	int64_t bytes;       /* tensor bytes, or -1 when symbolic */
	char *type;          /* the tensor's type when bytes is unknown, else NULL */
	char *link;          /* transfer: the link's name, else NULL */
	double time_s;       /* transfer: predicted seconds, or -1 */
	int bold;            /* transfer or collective edge */
	int nlinks;          /* after viz_collapse: transfers folded into this edge (link: the first) */
} VizEdge;

typedef struct VizDevice {
	char *name, *kind;
	int chips;           /* a pool: the chips it stands for (the kernels' `pool_size`), else 1 */
} VizDevice;

typedef struct VizGraph {
	char *title;
	VizDevice *devs; int ndevs, cap_devs;
	VizNode *nodes; int nnodes, cap_nodes;
	VizEdge *edges; int nedges, cap_edges;
	int from_plan;       /* 1: devices are the plan's placement */
} VizGraph;

void viz_free(VizGraph *g);
/* The picture of module m's entry graph: every call expanded into instances named as
 * targets/flatten.c names them; symbolic shapes allowed.  Returns 0, or -1 with a message on
 * stderr (no entry graph, more than max_nodes nodes). */
int viz_from_ir(const Module *m, VizGraph *g, int max_nodes);
/* The picture of plan p: a node per kernel and collective on its stream's device, bold edges for
 * transfers.  t (may be NULL) gives predicted times (rt_simulate). */
int viz_from_plan(const Plan *p, const RtTiming *t, VizGraph *g);
/* Draws repetition once (viz/model.c): inputs and outputs only one call instance reads or
 * writes join it (viz_attach_io); the copies of a node on several devices whose names differ
 * only in a shard marker (viz_shard_key) fold into the first, counting `shards`; a flat graph's
 * tandem-repeated blocks of operators (each copy alike in operators and shapes and reading the
 * copy before it) become instances "~P#k"; each run of consecutive instances of one callee with
 * alike members (operator, precision, shards, output shape; the same devices, or
 * each instance on devices of its own) and alike inputs and outputs folds into its first
 * instance, counting `count` with the instance numbers `first`..`last`. */
void viz_collapse(VizGraph *g);
/* Inputs and outputs that only one call instance reads or writes are drawn inside it, on the
 * device of their first reader or their writer (part of viz_collapse; alone for --expand). */
void viz_attach_io(VizGraph *g);

/* Keeps the nodes that spec names (comma-separated: a call instance "layer#3", also matching
 * "layer.stage0#3"; a callee "layer" or "layer.stage1"; a device "gpu3"; "top" for the top
 * level) and their inputs and outputs; their other neighbours stay as dashed context nodes;
 * everything else is hidden.  Returns 0, or -1 with a message on stderr when a name matches
 * nothing.  Call before viz_collapse. */
int viz_focus(VizGraph *g, const char *spec);
/* The nodes and edges that will be drawn. */
void viz_shown(const VizGraph *g, int *nodes, int *edges);

/* ---- drawing (viz/graph.c) ---- */
typedef enum VizFormat { VIZ_DOT, VIZ_SVG, VIZ_PNG } VizFormat;
/* Limits of a layout: budget_s wall seconds (0: none) for dot's layout and the rendering, which
 * then run in a child process that is killed past the budget; tick(ctx, what, seconds, 0) is
 * called about every 20 ms while it runs (NULL: none), what naming the work. */
typedef struct VizLayout {
	double budget_s;
	void (*tick)(void *ctx, const char *what, int64_t done, int64_t total);
	void *ctx;
	const char *what;
} VizLayout;
/* Writes g to f as DOT text (no layout, deterministic), or laid out by dot and rendered as SVG or
 * PNG within lay's limits (lay may be NULL).  Returns 0; -1 with a message on stderr; -2 with a
 * message when the layout ran past the budget (nothing useful was written to f). */
int viz_write(const VizGraph *g, VizFormat fmt, FILE *f, const VizLayout *lay);

/* ---- facts about plan instructions (viz/facts.c) ---- */
/* Attribute `name` of instruction in as text: a.NAME (operator attributes, where passes record
 * theirs), then t.NAME (target attributes); NULL when not recorded.  Numbers are formatted into
 * buf (n bytes). */
const char *viz_attr(const PlanInstr *in, const char *name, char *buf, size_t n);
/* The precision instruction in computes in: its `precision` attribute, else the MMA operand
 * format, else its first output's dtype. */
const char *viz_precision(const Plan *p, const PlanInstr *in, char *buf, size_t n);
/* What bounds the instruction's time: the target's `bound` attribute when recorded; otherwise
 * the largest term of the roofline (compute, memory, overhead); "link" for transfers and
 * collectives.  *from_target tells which. */
const char *viz_bound(const Plan *p, int stream, const PlanInstr *in, int *from_target);
/* The family of a bound word (viz_bound, a target's t.bound): "compute" (mma, fma, sfu, mxu, vpu,
 * mxm ...), "memory" (hbm, dram, sram, vmem, smem, l2, tma, dma), "link" (ici, nvlink, c2c),
 * "overhead" (launch, fixed, latency) or "other"; viz_bound_families lists them in that order. */
enum { VIZ_NFAM = 5 };
extern const char *const viz_bound_families[VIZ_NFAM];
const char *viz_bound_family(const char *bound);
/* Seconds of t's instructions (every span: plan p timed) per bound family, fam[VIZ_NFAM], and the
 * bound word with the most time in each family, top[VIZ_NFAM] (NULL where none; words point
 * into p or are static). */
void viz_bound_shares(const Plan *p, const RtTiming *t, double *fam, const char **top);
/* The class of what an instruction does: ops.def's `class` of a kernel's operator ("matrix":
 * tensor cores, MXU, MXM; "vector": CUDA cores, VPU, VXM; "move": data movement only), "link"
 * for copies and collectives, "-" for the rest. */
const char *viz_op_class(const PlanInstr *in);
/* The fixed part of an instruction's time_s seconds (launch, pipeline latency, link latency): the
 * target's `fixed_us` less its `fill_us` (the HBM traffic a pipeline does not overlap: memory
 * time, which grows as bandwidth falls) when recorded, else the device's overhead_s for a kernel
 * and the link's latency for a copy or collective; at most time_s when that is known (>= 0). */
double viz_fixed_s(const Plan *p, int stream, const PlanInstr *in, double time_s);
/* "gpu0..gpu7 (8 devices)", "gpu0, gpu3", "lpu19 ... lpu721 (79 devices)" (with gaps) for the
 * items i < n marked in in[], named names[i], in buf (len bytes). */
void viz_range_str(const char *const *names, int n, const unsigned char *in, char *buf, size_t len);
/* The display name of an instruction: its node, else "<kind>#<stream>.<index>". */
const char *viz_instr_name(const Plan *p, int stream, int index, char *buf, size_t n);
/* The logical name of a shard: name without the shard markers the partition pass and the
 * targets add to each device's copy of a node (".tp3.157", ".ep2.40", ".cols1", ".rows0",
 * ".shard5.88" with their fresh-name counters, a Transfer's ".to.gpu3.264", and an "@lpu3"
 * suffix), in buf (n bytes).
 * Returns 1 when a marker was removed, 0 when name is not a shard (buf = name). */
int viz_shard_key(const char *name, char *buf, size_t n);
/* The call instance of a flat name ("layer#3/h" -> "layer#3", n bytes) and the callee ("layer"). */
void viz_instance_of(const char *name, char *inst, char *callee, size_t n);
/* FNV-1a of a string (the pictures' and explain's hash tables). */
size_t viz_hash(const char *s);
/* Bytes as "1.50 MiB"; seconds as "12.3 us". */
/* A pool's chips (vera-rubin: one plan device stands for a pool of GPUs or LPUs): the largest
 * `pool_size` the device's kernels record, else 1. */
int viz_pool_chips(const Plan *p, int dev);
const char *viz_bytes_str(double bytes, char *buf, size_t n);
const char *viz_time_str(double s, char *buf, size_t n);

#endif
