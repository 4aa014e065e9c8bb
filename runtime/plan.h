/* runtime/plan.h: the plan (.aip), the one data structure between targets and the interpreter.
 *
 * A Plan says what runs where: the target and machine it was built for, the graph it came from
 * (so `aicc run --check` can rebuild the reference plan), devices with their memory spaces,
 * compute units and links, buffers placed in those spaces, constants (by reference: seeded
 * initialisers, .npy or .safetensors tensors, or small inline data), the plan's inputs and
 * outputs, events, and per device one or more ordered instruction streams.  Targets build plans
 * with the plan_add_* builder below; plan_write serialises them (runtime/plan_write.c),
 * plan_read parses and fully verifies them (runtime/plan_read.c, runtime/plan_verify.c).  The
 * text format is specified in docs/plan-format.md.  Entities refer to each other by index; every
 * string is owned by the plan (rt_malloc'd) and freed by plan_free.
 */
#ifndef AICC_PLAN_H
#define AICC_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/kernels.h"
#include "runtime/rt.h"

#define PLAN_VERSION 1
#define PLAN_INLINE_MAX 4096   /* inline constants hold at most this many values */
#define PLAN_TEXT_MAX 16       /* in-memory data above this many values goes to the weights file */

typedef struct PlanDevice {
	char *name, *kind;       /* kind: cpu, gpu, tpu, lpu (free text, from the machine) */
	double peak_flops;       /* FLOP/s at the device's widest float format */
	double peak_flops_f64;   /* FLOP/s in f64 (0: same as peak_flops) */
	double overhead_s;       /* fixed cost per instruction (launch, pipeline fill) */
	double clock_hz;         /* static targets: cycle length; 0 if unused */
	/* the peak of the formats its kernels' FLOP run in (FLOP-weighted: total FLOP over the
	 * time each format's FLOP take at its peak), where that is not peak_flops (an fp8 plan),
	 * and what they are ("f8e4m3", "f8e4m3 97%, bf16 3%"); 0 and "": peak_flops */
	double peak_work;
	char peak_fmt[48];
	int line;
} PlanDevice;

typedef struct PlanSpace {
	char *name;
	int device;
	int64_t capacity;        /* bytes */
	double bandwidth;        /* bytes/s */
	int line;
} PlanSpace;

typedef struct PlanUnit {
	char *name, *kind;       /* kind: compute, dma, or a target's functional unit */
	int device;
	int line;
} PlanUnit;

typedef struct PlanLink {
	char *name;
	int src, dst;            /* devices */
	double bandwidth;        /* bytes/s per direction */
	double latency_s;        /* alpha of the alpha + n*beta model */
	int line;
} PlanLink;

typedef struct PlanBuffer {
	char *name;
	int space;
	int64_t offset, size;    /* bytes within the space */
	DType dtype;
	int rank;
	int64_t dims[RT_MAX_RANK];
	char *format;            /* layout: "row" (row-major dense) */
	int line;
} PlanBuffer;

typedef enum PlanInitKind {
	PINIT_NORMAL, PINIT_UNIFORM, PINIT_FILL, PINIT_INLINE, PINIT_NPY, PINIT_SAFETENSORS,
	PINIT_UNBOUND,           /* a parameter without data: bound by --input, or --timing-only */
	PINIT_DATA,              /* data held in memory (plans built in-process; never in the text) */
	PINIT_COUNT
} PlanInitKind;

typedef struct PlanConst {
	int buffer;
	PlanInitKind kind;
	double a, b;             /* normal: mean, std; uniform: low, high; fill: value */
	uint64_t seed;
	int64_t instance;        /* flattened call instance, mixed into the seed */
	char *path, *key;        /* npy: path; safetensors: path and key */
	uint64_t xxh3;           /* npy/safetensors with has_xxh3: rt_checksum of the tensor's data bytes */
	int has_xxh3;
	double *vals;            /* inline: nvals values */
	int64_t nvals;
	int line;
	RtTensor *data;          /* data: the values (owned; plan_externalize writes them to files) */
	/* shard: the constant is the slice [shard_off, shard_off + dims[shard_axis]) along
	 * shard_axis of the initialiser of a tensor whose dims equal the buffer's except
	 * shard_full along that axis (weights stored pre-sharded); shard_axis -1 (set by
	 * plan_add_const when shard_full is 0): the whole tensor */
	int shard_axis;
	int64_t shard_off, shard_full;
} PlanConst;

/* An input or output.  Sharded (shard_axis >= 0, set by plan_io_shard): the buffer holds the
 * slice [shard_off, shard_off + dims[shard_axis]) along shard_axis of the graph's tensor NAME,
 * whose dims are the buffer's with shard_full along that axis; the shards of one name tile it
 * (per-device KV-cache heads of a tensor-parallel plan).  shard_axis -1: the whole tensor. */
typedef struct PlanIO {
	char *name;
	int buffer;
	int line;
	int shard_axis;
	int64_t shard_off, shard_full;
} PlanIO;

typedef enum PlanInstrKind { PI_KERNEL, PI_COPY, PI_COLLECTIVE, PI_RECORD, PI_WAIT, PI_COUNT } PlanInstrKind;
/* Collective kinds (docs/plan-format.md): reducescatter is the first half of a ring all-reduce,
 * output j holding chunk j along the `axis` attribute of the inputs' sum. */
typedef enum PlanCollKind { PC_ALLREDUCE, PC_ALLGATHER, PC_ALLTOALL, PC_REDUCESCATTER, PC_COUNT } PlanCollKind;

typedef struct PlanKV {          /* opaque target attributes (tiling), kept as text */
	char *key, *val;
} PlanKV;

typedef struct PlanInstr {
	PlanInstrKind kind;
	RtOp op;                 /* PI_KERNEL */
	PlanCollKind coll;       /* PI_COLLECTIVE */
	int *in, nin;            /* buffers; -1 for an absent optional input */
	int *out, nout;
	Attrs attrs;             /* operator attributes (ONNX semantics) */
	RtExecOpts opts;         /* numerics: accumulation, MMA format, FP8 promotion, exp2 */
	PlanKV *tile; int ntile; /* target attributes */
	int tile_interned;       /* to plan_add_instr: every tile key and value is already one of the plan's
				    interned strings (plan_intern), so they are copied as they are; 0 in a plan */
	double flops;            /* work of this instruction, from the target */
	char *node;              /* the source node it came from, or NULL */
	int event;               /* PI_RECORD / PI_WAIT */
	int link;                /* PI_COPY / PI_COLLECTIVE: link used, or -1 (on-device copy) */
	int unit;                /* unit that executes it, or -1: the stream device's default */
	int64_t cycle, dur;      /* static targets: issue cycle and occupancy, -1 when absent */
	int line;
} PlanInstr;

typedef struct PlanStream {
	char *name;
	int device;
	PlanInstr *ins; int nins, cap;
	int line;
} PlanStream;

typedef struct PlanSource {
	char *model;             /* path of the graph the plan was compiled from, or NULL */
	char model_hash[17];     /* FNV-1a 64 of that file's bytes (16 hex digits), "": not recorded */
	char *binds;             /* "S=4,B=1" as given to --bind, or NULL */
	char *precision;         /* the compile's precision policy, or NULL */
	char *init;              /* --init-unbound spec ("normal:0.02:1"), or NULL */
	/* phases: the serving phase compiled (--phase: "prefill" | "decode"), or NULL, and the
	 * tokens of its context (prefill: the prompt; decode: the past tokens in the KV cache) */
	char *phase;
	int64_t context;
	/* phase train: the step's model FLOP, 3 x the forward pass's (forward + backward without
	 * recomputation, the MFU convention of Chowdhery et al. 2022, PaLM, appendix B); 0: none */
	double model_flops;
	int64_t micro_batches;   /* phase train: micro-batches per step (gradient accumulation); 0, 1: one */
	/* the pass pipeline aicc compile ran ("kv-cache,canonicalize,...", "" for -O0), or NULL when
	 * not recorded: explain --compare rebuilds its variants with it */
	char *passes;
} PlanSource;

#define PLAN_VEC(T, name) T *name; int n##name, cap_##name
typedef struct Plan {
	char *target;
	char *machine;
	uint64_t machine_hash;   /* FNV-1a 64 of the machine description's bytes */
	PlanSource source;
	PLAN_VEC(PlanDevice, devices);
	PLAN_VEC(PlanSpace, spaces);
	PLAN_VEC(PlanUnit, units);
	PLAN_VEC(PlanLink, links);
	PLAN_VEC(PlanBuffer, buffers);
	PLAN_VEC(PlanConst, consts);
	PLAN_VEC(PlanIO, inputs);
	PLAN_VEC(PlanIO, outputs);
	PLAN_VEC(char *, events);
	PLAN_VEC(PlanStream, streams);
	struct PlanStrs *strs;   /* interned strings (plan_intern) */
	const char *file;        /* for diagnostics, not owned; NULL when built in memory */
} Plan;
#undef PLAN_VEC

/* ---- builder: every function returns the new entity's index, or -1 with e set (no memory) ---- */
Plan *plan_new(const char *target, const char *machine, uint64_t machine_hash, RtError *e);
void plan_free(Plan *p);
int plan_set_source(Plan *p, const char *model, const char *binds, const char *precision, RtError *e);
int plan_set_source_init(Plan *p, const char *init, RtError *e);      /* NULL clears it */
int plan_set_source_phase(Plan *p, const char *phase, int64_t context, RtError *e);  /* NULL clears */
int plan_set_source_passes(Plan *p, const char *passes, RtError *e);  /* NULL clears; "": no passes ran */
int plan_add_device(Plan *p, const PlanDevice *d, RtError *e);        /* strings copied */
int plan_add_space(Plan *p, const PlanSpace *s, RtError *e);
int plan_add_unit(Plan *p, const PlanUnit *u, RtError *e);
int plan_add_link(Plan *p, const PlanLink *l, RtError *e);
int plan_add_buffer(Plan *p, const char *name, int space, int64_t offset, DType dt, int rank,
		    const int64_t *dims, RtError *e);   /* size from rt_dtype_bytes, format "row" */
int plan_add_const(Plan *p, const PlanConst *c, RtError *e);          /* strings/values/data copied */
int plan_add_input(Plan *p, const char *name, int buffer, RtError *e);
int plan_add_output(Plan *p, const char *name, int buffer, RtError *e);
/* Marks input or output io as a shard (see PlanIO). */
void plan_io_shard(PlanIO *io, int axis, int64_t off, int64_t full);
int plan_add_event(Plan *p, const char *name, RtError *e);
int plan_add_stream(Plan *p, const char *name, int device, RtError *e);
/* Appends an instruction to stream s.  The PlanInstr's arrays, attributes, tiling pairs and node
 * name are deep-copied; unset fields should be zero except event/link/unit/cycle/dur (-1 = none):
 * use plan_instr_init. */
int plan_add_instr(Plan *p, int s, const PlanInstr *in, RtError *e);
void plan_instr_init(PlanInstr *in, PlanInstrKind kind);
/* The plan's one copy of string s (NULL for NULL, and NULL when memory runs out): instructions'
 * target attributes (keys and values), attribute names and string values, node names and
 * buffer formats are interned, never freed one by one (plan_free frees them all).  Tensor-
 * parallel replicas and layer instances repeat the same few thousand strings: a 64-device plan
 * holds millions of references to them. */
char *plan_intern(Plan *p, const char *s);

/* ---- lookups ---- */
int plan_find_buffer(const Plan *p, const char *name);   /* -1 if none */
/* The number target attribute `key` of instruction in (`t.KEY="VALUE"`: a kernel's recorded
 * resource times, in the unit its key names), or dflt when absent or not a number.  The one
 * reader of target numbers: cost hooks recombine what their lowering recorded. */
double plan_instr_num(const PlanInstr *in, const char *key, double dflt);
int plan_find_device(const Plan *p, const char *name);
int plan_find_space(const Plan *p, const char *name);
int plan_find_unit(const Plan *p, const char *name);
int plan_find_link(const Plan *p, const char *name);
int plan_find_event(const Plan *p, const char *name);
/* 1 when io[i] is the first entry of its name (sharded inputs and outputs repeat their name). */
int plan_io_first(const PlanIO *io, int i);
/* The shape of the whole tensor io names: its buffer's dims, FULL along a shard's axis; the rank. */
int plan_io_dims(const Plan *p, const PlanIO *io, int64_t *dims);
/* The element count of buffer b (product of dims; 1 for rank 0), or -1 on overflow. */
int64_t plan_buffer_numel(const PlanBuffer *b);
/* The default unit of device d for instruction kind k (first unit of kind "compute" for kernels,
 * "dma" for copies), or -1 if the device declares none. */
int plan_default_unit(const Plan *p, int device, PlanInstrKind k);

/* ---- names shared by the writer, the reader and the report ---- */
extern const char *const plan_init_names[PINIT_COUNT];   /* normal ... safetensors unbound */
extern const char *const plan_instr_names[PI_COUNT];     /* kernel copy collective record wait */
extern const char *const plan_coll_names[PC_COUNT];      /* allreduce allgather alltoall reducescatter */
int plan_format_known(const char *format);               /* 1 for a known buffer layout name */
/* Bytes a buffer of dtype dt and shape dims occupies on its device in `format`: "row" (dense,
 * rt_dtype_bytes), or "q.FMT", values stored encoded (the interpreter holds them in dt; every
 * kernel that reads the buffer encodes them the same way, so the numerics are the stored
 * codes'): FMT a block dtype (mxfp8, mxfp6, mxfp4, mxint8, nvfp4: codes and scales), or
 * f8e4m3.tensor (+ one f32 scale), f8e4m3.1x128 (+ one f32 per 128 along the last axis),
 * f8e4m3.128x128 (+ one f32 per 128x128 block of the last two axes).  -1 when format is
 * unknown or does not apply to dt (q.* needs a float dtype). */
int64_t plan_format_bytes(const char *format, DType dt, int rank, const int64_t *dims);
/* Sets buffer buf's format and recomputes its size; -1 with e set when the format is unknown. */
int plan_set_buffer_format(Plan *p, int buf, const char *format, RtError *e);
/* The dtype contract of one operand (ir/optypes.def): operand k of op in an instruction with nin
 * inputs (k < nin: input k, else output k - nin).  allowed: bit d set when DType d may be its
 * dtype; var: its type variable ('T', ...; 0: none), whose operands must all have one type
 * (equal dtypes, or floats of one storage); to: 1 when it must be exactly the dtype the
 * attribute `to` names (when present); set/setlen: the set as optypes.def spells it.  Returns 0,
 * or -1 when op or k is out of range or the row is malformed (the unit tests parse every row). */
typedef struct PlanOperandType {
	uint64_t allowed;
	char var;
	int to;
	const char *set;
	int setlen;
} PlanOperandType;
int plan_operand_type(RtOp op, int nin, int k, PlanOperandType *t);
/* Operator names from ir/ops.def (the plan layer does not depend on the kernels). */
const char *plan_op_name(RtOp op);
RtOp plan_op_lookup(const char *name);                   /* RT_OP_COUNT if unknown */

/* 64-bit FNV-1a hash of n bytes (machine descriptions, plan identity). */
uint64_t plan_hash(const void *data, size_t n);
/* The same hash of a file's bytes as 16 hex digits in out; -1 (errno set) when unreadable. */
int plan_hash_file(const char *path, char out[17]);
/* The same over several files in order, each after the first preceded by its path (the source's
 * external data: one hash for the model); n = 1 is plan_hash_file. */
int plan_hash_files(const char *const *paths, int npaths, char out[17]);

/* ---- execution order ---- */
typedef struct PlanStep {
	int stream, index;       /* p->streams[stream].ins[index] */
} PlanStep;
/* The one sequential order in which the interpreter executes the plan and the verifier computes
 * liveness: streams in file order, each run until it waits on an event not yet recorded, round
 * after round; for a static plan (issue cycles), the runnable stream head with the lowest cycle
 * first (docs/plan-format.md §Verification).  Returns 0 with *order (rt_malloc'd, *n entries), or -1 with e set when waits can
 * never be satisfied (deadlock) or memory runs out. */
int plan_linearize(const Plan *p, PlanStep **order, int *n, RtError *e);

/* Live range of every buffer over a linear order: first and last step that touches it; inputs
 * and constants are live from step -1, outputs and constants until step n.  first > last for a
 * buffer no step touches.  Returns rt_malloc'd arrays, or -1 (no memory). */
int plan_liveness(const Plan *p, const PlanStep *order, int n, int **first, int **last, RtError *e);

/* ---- text form (docs/plan-format.md) ---- */
/* Large weights are referenced, never inlined: writes every `data` constant of p into one
 * safetensors stream f (runtime/safetensors.h; keys: the buffers' names) and turns each into
 * `init=safetensors path=REF key=NAME xxh3=HEX` (REF: the file as the plan will name it,
 * relative to the plan's directory; xxh3: rt_checksum of the tensor's bytes).  Returns how many
 * constants it wrote (0: f untouched), or -1 with e set. */
int plan_externalize(Plan *p, FILE *f, const char *ref, RtError *e);
/* Writes p in the canonical text form.  Returns 0, or -1 if writing failed or p holds a `data`
 * constant (plan_externalize first). */
int plan_write(const Plan *p, FILE *f);
/* Parses and verifies the plan text (len bytes; need not be NUL-terminated).  `file` names it in
 * errors.  Returns the plan, or NULL with e->msg = "file:LINE: error: ..." (first error). */
Plan *plan_parse(const char *file, const char *text, size_t len, RtError *e);
/* Reads the file at path and calls plan_parse. */
Plan *plan_read(const char *path, RtError *e);
/* Checks every rule of docs/plan-format.md §Verification on a parsed or built plan.  Returns 0,
 * or -1 with e->msg = "file:LINE: error: ..." naming the offending line (or "<plan>" when built
 * in memory). */
int plan_verify(const Plan *p, RtError *e);

#endif
