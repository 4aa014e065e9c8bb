/* targets/lpu/lpu.h: the LPU target's shared state (Groq TSP v1 and the Groq 3 LPU).
 *
 * The LPU is statically scheduled (hardware.md §3.6, backends.md §3): every instruction has a
 * fixed latency, there is no arbitration, so the compiler's schedule is the timing model.  The
 * target builds a program of operations on chips (chips.c: one chip, the chips the graph's
 * @device annotations name, or as many as the weights need, splitting a matrix too large for
 * one chip by columns; a chip-to-chip copy wherever a value is read on another chip), prices
 * each in cycles from the machine file (schedule.c, formulas in docs/targets-lpu.md §Cost),
 * list-schedules all of them to exact issue cycles on one global clock (each chip's functional
 * slice groups MXM/VXM/SXM, one per hemisphere, and every C2C link direction), allocates each
 * chip's SRAM by cycle-exact live ranges and emits one stream per chip in issue-cycle order
 * whose instructions carry unit or link, cycle and dur (lower.c).  The cost hook (cost.c)
 * returns dur / clock, so the predicted latency is the schedule length exactly. */
#ifndef AICC_LPU_H
#define AICC_LPU_H

#include "targets/target.h"

/* Functional unit kinds, each instantiated once per hemisphere of every chip. */
typedef enum LpuKind { LK_MXM, LK_VXM, LK_SXM, LK_COUNT } LpuKind;
#define LPU_HEMIS 2
#define LPU_UNITS (LK_COUNT * LPU_HEMIS)   /* units per chip: kind * LPU_HEMIS + hemisphere */

/* Machine numbers in cycles, from the device's machine description. */
typedef struct LpuArch {
	const Device *d;
	double clock;            /* Hz */
	int lat[LK_COUNT];       /* fixed pipeline latency per slice kind, cycles */
	int mem_lat;             /* SRAM read-to-stream latency, cycles */
	double vec_bytes;        /* bytes per vector (lanes) */
	double mem_vec;          /* vectors per cycle one hemisphere streams from/to SRAM */
	double macs;             /* MACs per cycle per hemisphere at the matmul format */
	double valu;             /* vector ALU ops per cycle per hemisphere */
	DType mma;               /* matmul operand format: f16 (v1) or f8e4m3 (Groq 3) */
	int elem_bytes;          /* SRAM bytes per stored float element at that format */
	double f64_slow;         /* f64 work in software (no f64 format; <vpeak dtype="f64">): the
	                          * f32 vector rate over the f64 one; 0 when the machine gives none
	                          * (f64 values are then held in f32) */
	int64_t sram;            /* SRAM bytes per chip */
	int chips;               /* chips of the machine (the device class's count) */
	const char *machine;     /* the machine's name, for errors */
	const Link *c2c;         /* the chip-to-chip link class, or NULL */
	int64_t c2c_lat;         /* C2C latency per hop, cycles */
	int c2c_domain;          /* chips per group joined directly (a Dragonfly node); 0: all */
	double c2c_bpc;          /* C2C bytes per cycle, one direction */
} LpuArch;

/* The close of a "needs N chips" error: "; machines with enough: groq-rack-v1 (8), ... (--machine
 * NAME)", or "; --set lpu.count=N" when no built-in machine of a's chip has N (into buf). */
const char *lpu_more_chips(const LpuArch *a, int64_t need, char *buf, size_t len);

/* Reads device d of machine m (m may be NULL: one chip, no links).  0, or -1 with e set. */
int lpu_arch(const Machine *m, const Device *d, LpuArch *a, RtError *e);
/* What the LPU holds and computes in (the one description every message uses): "weights, KV
 * cache and MatMul operands at f16, activations at f32" (the MXM's format: f16 on TSP v1,
 * f8e4m3 on a part with an fp8 peak; lpu_arch). */
const char *lpu_formats(const LpuArch *a, char *buf, size_t n);
/* SRAM is addressed in 320-byte words (hardware.md §2.15): every buffer starts on one. */
#define LPU_WORD 320
/* Target.formats_note: lpu_formats of machine m's first LPU, or NULL. */
const char *lpu_formats_note(const Machine *m, char *buf, size_t n);

/* The cost of one flat node on one LPU chip (used by this target and by composite targets
 * that put nodes on an LPU pool): its slice kind and cycles,
 *     dur = mem_lat + lat(kind) + max(compute, stream)   (docs/targets-lpu.md §Cost)
 * seconds = dur / a->clock.  The node runs whole on one hemisphere of one chip. */
typedef struct LpuCost {
	LpuKind kind;
	int64_t dur, compute, stream, vectors;
	/* Attention only (0 otherwise): the cycles of its parts, each on its own units (lpu_attn in
	 * schedule.c, docs/targets-lpu.md §Attention): Q K^T on the MXM with the keys installed as
	 * its weights, the softmax's passes on the VXM, P V on the MXM with the values installed */
	int64_t qk, softmax, pv;
} LpuCost;
void lpu_node_cycles(const LpuArch *a, const Flat *f, int node, LpuCost *c);
/* The same for IR node n before lowering (its values' inferred types; how passes price a node
 * as the lowering will): 0, or -1 when a shape is not known. */
int lpu_ir_node_cycles(const LpuArch *a, const Node *n, LpuCost *c);

/* Hops a copy from chip `from` to chip `to` takes: 1 within a scale-up domain (the link's
 * <domain>, a Dragonfly node), 3 between domains (local, global, local; ISCA 2022). */
int lpu_hops(const LpuArch *a, int from, int to);

/* ---- the program: values and operations on chips ---- */
/* A value on one chip: a flat value whole, or a column shard of it (a matrix split over chips). */
typedef struct LpuVal {
	int flat;                /* the flat value it holds */
	int chip;
	int def;                 /* producing op, or -1: a graph input or parameter (there at cycle 0) */
	int next;                /* next LpuVal of the same flat value, or -1 */
	int rank;
	int64_t dims[RT_MAX_RANK];
	int shard_axis;          /* -1: the whole value; else the slice [shard_off, + dims[axis]) */
	int64_t shard_off, shard_full;   /* of a value shard_full long along shard_axis */
} LpuVal;

typedef enum LpuWhat {
	LW_KERNEL,               /* flat node `node` */
	LW_SHARD,                /* flat node `node` on a column shard of its weight */
	LW_CONCAT,               /* the shards of `node` joined along the last axis */
	LW_COPY                  /* a value sent over a C2C link */
} LpuWhat;

/* One scheduled instruction. */
typedef struct LpuOp {
	LpuWhat what;
	int node;                /* flat node (LW_COPY: -1) */
	int chip;                /* chip it runs on (LW_COPY: the receiving chip) */
	int arg, nin, nout;      /* LpuVals: prog->args[arg ..] nin inputs, then nout outputs */
	int link;                /* LW_COPY: prog->links index; -1 otherwise */
	double flops;
	LpuKind kind;
	int unit;                /* chip * LPU_UNITS + kind * LPU_HEMIS + hemisphere; -1 for copies */
	int64_t cycle, dur;      /* issue cycle, occupancy */
	int64_t compute, stream; /* cycles of the compute term and the SRAM streaming term */
	int64_t vectors;         /* 320-byte vectors read and written */
	int64_t qk, softmax, pv; /* Attention: its parts' cycles (LpuCost) */
	int critical;            /* on the critical path */
} LpuOp;

typedef struct LpuLink { int a, b; } LpuLink;   /* chips a < b; direction 0 is a -> b */

typedef struct LpuProg {
	LpuVal *vals; int nvals, capvals;
	LpuOp *ops; int nops, capops;
	int *args; int nargs, capargs;
	LpuLink *links; int nlinks, caplinks;
	int *first;              /* per flat value: its first LpuVal, or -1 */
	int *home;               /* per flat value: the LpuVal its producer wrote (or its first), or -1 */
	unsigned char *wide;     /* per flat value: 1 when weight-like but held in f32 (lpu_wide_values) */
	int nchips;              /* chips used */
	int spread;              /* 1: this target spread the graph over chips (no @device) */
	/* the schedule */
	int *order;              /* ops by (cycle, chip, resource) */
	int64_t length;          /* schedule length, cycles */
	int64_t *busy;           /* cycles busy per unit (nchips * LPU_UNITS), then per link direction */
	int ncritical;
} LpuProg;

/* Places every flat node of f on a chip and builds the program (chips.c).  0, or -1 with e set
 * (an @device naming no chip, a model larger than the machine, with required and available
 * bytes). */
int lpu_build(const LpuArch *a, const Flat *f, LpuProg *pg, RtError *e);
/* Prices and list-schedules every op of pg (schedule.c); 0, or -1 with e set. */
int lpu_schedule(const LpuArch *a, const Flat *f, LpuProg *pg, RtError *e);
void lpu_prog_free(LpuProg *pg);
/* The program's operands of op o. */
static inline int *lpu_ins(const LpuProg *pg, const LpuOp *o) { return pg->args + o->arg; }
static inline int *lpu_outs(const LpuProg *pg, const LpuOp *o) { return pg->args + o->arg + o->nin; }
/* 1 when flat value v is stored like a weight, at the matmul format: a parameter, a graph input
 * (KV cache), or a layout op's result (Transpose, Reshape, ...) of such values only (a
 * transposed tied embedding): moving f16 data keeps it f16, so the plan holds it at f16. */
int lpu_weight_like(const Flat *f, int v);
/* Per flat value (nvals + 1 bytes, malloc'd; NULL when out of memory): 1 when the value is
 * weight-like but a value of its constant data (an initialiser, literal or fill, or one that a
 * layout op of it moves) is finite and beyond the largest finite value of a->mma, so that the
 * matmul format would hold it as an infinity: such a value stays f32 in the plan and in the chip
 * placement's byte counts (the machine's formats include f32: hardware.md §2.15).  PP-OCRv4's detector has BatchNormalization
 * variances of about 1e7, beyond f16's 65504.  Each datum is read once (rt_round, exact). */
unsigned char *lpu_wide_values(const LpuArch *a, const Flat *f);
/* 1 when flat value v is stored at the matmul format: lpu_weight_like and not pg->wide[v]. */
int lpu_at_mma(const LpuProg *pg, const Flat *f, int v);
/* SRAM bytes of value v (floats at the matmul format's width). */
int64_t lpu_val_bytes(const LpuArch *a, const Flat *f, const LpuVal *v);
extern const char *const lpu_kind_names[LK_COUNT];
/* The target's walk (lower.c) and cost hook (cost.c). */
Plan *lpu_lower(const TgtInput *in, RtError *e);
double lpu_cost(const Plan *p, int stream, const PlanInstr *in);
double lpu_node_time(const Target *t, const Machine *m, const Device *d, const Precision *p, const TgtWork *w);

#endif
