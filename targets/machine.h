/* targets/machine.h: machine descriptions: what the hardware is, as data.
 *
 * A machine (targets/machines/NAME.xml, validated against targets/machines/machine.rng) lists
 * devices (chips: GPU, TPU, LPU, CPU), how many of each, the links between them and a host.  A
 * device has compute units, a clock, dense peak rates per dtype, matrix-instruction shapes,
 * special-function rates, memory spaces, data-movement engines, supported formats and efficiency
 * factors.  Every number is a Num: a value in a fixed SI unit (documented per field below) plus
 * where it came from (source, kind).  docs/machines.md describes the file format, the units and
 * the `--set` path syntax.
 *
 * Units of Num.v, whatever unit the file wrote: bytes, bytes/s, seconds, Hz, FLOP/s (or OP/s for
 * integer dtypes), watts, plain counts and fractions.  Quantities written per clock ("B/clk",
 * "op/clk", "FLOP/clk/unit", "clk") are recomputed from the device's clock (and primary unit
 * count) whenever those change, so `--set gpu.clock=...` rescales them.
 *
 * Lifetime: machine_load returns one heap object; machine_free releases it and everything it
 * points to.  Pointers into a Machine stay valid until machine_free (overrides never move them).
 * Requires libxml2 and runtime/rt.h (DType); provides the loader, overrides and queries.
 */
#ifndef AICC_MACHINE_H
#define AICC_MACHINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/rt.h"

/* Where a number came from (hardware.md §0 tags); PROV_NONE marks an absent optional field. */
typedef enum Prov {
	PROV_NONE, PROV_VENDOR, PROV_MEASURED, PROV_ESTIMATE, PROV_PRELIMINARY, PROV_OVERRIDE
} Prov;

/* How a quantity written per clock becomes SI (internal to the loader, visible for printing). */
typedef enum Per { PER_ONE, PER_CLK, PER_CLK_UNIT, PER_CYCLE } Per;

typedef struct Num {
	double v;            /* the value in the field's SI unit; 0 when absent */
	double raw;          /* as written, scaled to base units, before per-clock scaling */
	Per per;             /* how v derives from raw */
	Prov prov;           /* PROV_NONE: the file does not give this field */
	const char *source;  /* source key, URL or "hardware.md §2.2"; "--set" for overrides */
	const char *note;    /* why, for estimates; may be NULL */
	const char *text;    /* the value as written, with its unit ("3.35 TB/s") */
	int line;            /* line in the machine file; 0 for overrides */
} Num;

static inline int num_has(const Num *n) { return n->prov != PROV_NONE; }

/* DEV_WAFER: a wafer-scale engine (Cerebras WSE: one device of ~900k cores in a 2-D fabric);
 * DEV_ASIC: a fixed-function inference chip (the model's weights hardwired at tape-out). */
typedef enum DevKind { DEV_GPU, DEV_TPU, DEV_LPU, DEV_CPU, DEV_WAFER, DEV_ASIC } DevKind;

typedef enum MemKind {
	MEM_REG, MEM_SMEM, MEM_TMEM, MEM_L1, MEM_L2, MEM_HBM, MEM_DRAM, MEM_VMEM, MEM_SRAM,
	MEM_ROM              /* mask ROM: a hardwired chip's weights (DEV_ASIC) */
} MemKind;

/* A memory space.  scope UNIT: capacity and bandwidth are per compute unit (SMEM per SM);
 * scope DEVICE: for the whole device (L2, HBM). */
typedef enum MemScope { SCOPE_DEVICE, SCOPE_UNIT } MemScope;
typedef struct MemSpace {
	const char *name;    /* path component: "smem", "hbm", ... (defaults to the kind) */
	MemKind kind;
	MemScope scope;
	Num capacity;        /* bytes */
	Num usable;          /* bytes one kernel / thread block may allocate (optional) */
	Num bandwidth;       /* bytes/s (optional) */
	Num efficiency;      /* achievable fraction of bandwidth, (0, 1] (optional) */
	Num latency;         /* seconds (optional) */
	int line;
} MemSpace;

/* A group of identical compute or functional units (SMs, TensorCores, MXUs, MXM planes). */
typedef struct Unit {
	const char *name;
	Num count;           /* units per device */
	Num size;            /* array or vector width, e.g. 128 for a 128x128 MXU (optional) */
	Num latency;         /* seconds of fixed pipeline latency (optional) */
	int line;
} Unit;

/* One legal matrix-instruction shape: for each dtype in `dtypes`, M in m[], N from nmin to nmax
 * step nstep, K elements per instruction. */
typedef struct MmaShape {
	uint64_t dtypes;     /* bit (1 << DType) */
	int m[4], nm;
	int nmin, nmax, nstep, k;
	int line;
} MmaShape;

/* A matrix-instruction family (wgmma, tcgen05.1cta, tcgen05.2cta, mxu, mxm). */
typedef struct MmaFamily {
	const char *name;
	const char *issue;   /* issue granularity: thread, warp, warpgroup, cta-pair, core */
	const char *a, *b, *acc;   /* operand locations (memory-space kinds, space separated) */
	const char *source;
	Prov prov;
	MmaShape *shapes;
	int nshapes;
	int line;
} MmaFamily;

/* Special-function unit (MUFU on NVIDIA): exp2 and friends. */
typedef struct Sfu {
	int present;
	const char *functions;  /* "exp2 log2 rcp rsqrt sin cos" */
	int emulation;          /* exp2 may be emulated on the FMA pipes (FA4's trick) */
	Num rate;               /* operations/s per compute unit */
} Sfu;

/* A data-movement engine (TMA, DMA, collective offload). */
typedef struct Engine {
	const char *name;
	const char *kind;       /* tma, dma, collective */
	int multicast, reduce;
	Num offload;            /* <offload>: the share (0..1) of a collective's work on the device's compute
				 * units (its reductions and copies through HBM) the engine takes instead */
	Num dims;               /* tensor dimensions an engine descriptor addresses (optional) */
	Num bandwidth;          /* bytes/s (optional) */
	Num latency;            /* seconds (optional) */
	int line;
} Engine;

typedef struct Efficiency {
	const char *name;       /* gemm, attention, decode, ... */
	Num value;              /* achievable fraction of peak, (0, 1] */
} Efficiency;

typedef struct Device {
	const char *id;         /* path component and link endpoint: "gpu", "host", "lpu" */
	DevKind kind;
	const char *name, *vendor, *arch, *role;
	int is_host;
	int static_schedule;    /* compiler-scheduled, cycle-exact (Groq) */
	Num count;              /* devices of this kind in the machine */
	Num clock;              /* Hz */
	Num tdp;                /* watts */
	Unit *units;            /* units[0] is the primary compute unit (per-unit scaling) */
	int nunits;
	Num peak[DT_COUNT];     /* dense matrix-pipe rate, FLOP/s (OP/s for integers) */
	Num vpeak[DT_COUNT];    /* vector/scalar-pipe rate, FLOP/s */
	Num sparsity;           /* speed-up of structured sparsity over dense (optional) */
	MmaFamily *mma;
	int nmma;
	Sfu sfu;
	MemSpace *mems;
	int nmems;
	Engine *engines;
	int nengines;
	Num cluster_portable;   /* CTAs per cluster, portable and opt-in maximum (optional) */
	Num cluster_max;
	int dsmem;
	uint64_t formats;       /* element dtypes the device computes on natively */
	uint64_t block_formats; /* block-scaled dtypes (mxfp8, nvfp4, ...) its MMA applies */
	const char *scale_space;/* where block scales live ("tmem") */
	/* <fp8-scaling>: FP8 GEMMs scale their operands per block, activations per fp8_act[0] x
	 * fp8_act[1] (rows x K) and weights per fp8_wt[0] x fp8_wt[1] (K x N) elements, in the
	 * kernel; fp8_promote: K elements between promotions of the tensor-core accumulator, where
	 * the block scales are applied (0: the MMA accumulates in f32).  All 0 when absent. */
	int fp8_act[2], fp8_wt[2], fp8_promote;
	Efficiency *effs;
	int neffs;
	/* <hardwired>: the model whose weights are fixed in the silicon (a DEV_ASIC taped out for
	 * one model): its name, the --precision word its weights were fixed in, and its `dim`
	 * values ("L=32 H=32 ..."); all NULL when absent.  targets/hardwired/ checks a compile
	 * against them. */
	const char *hw_model, *hw_precision, *hw_dims, *hw_source;
	int line;
} Device;

typedef enum Topo { TOPO_SWITCH, TOPO_TORUS, TOPO_MESH, TOPO_RING, TOPO_P2P } Topo;

/* A link class between devices `from` and `to` (equal for a fabric among one kind). */
typedef struct Link {
	const char *id;
	const char *kind;       /* type attribute: nvlink, ici, c2c, pcie, nvlink-c2c, ethernet, infiniband */
	Device *from, *to;
	Topo topo;
	int dims[4], ndims;     /* torus/mesh shape, e.g. 16x16x16 */
	int wrap;               /* torus wraparound */
	int twist;              /* twisted torus (TPU v4 OCS): the wraparound links of the first
				   shortest axis (length k) shift by k along the first axis of length 2k
				   (Camara et al. 2010; Jouppi et al., ISCA 2023) */
	int bidi;               /* bandwidth is both directions summed (NVIDIA's convention) */
	Num bandwidth;          /* bytes/s per device, as stated (see bidi) */
	Num latency;            /* seconds per hop (alpha) (optional) */
	Num ports;              /* links per device (optional) */
	Num domain;             /* devices in one scale-up domain (optional) */
	Num pod;                /* a scale-out fabric: devices under one non-blocking tier (optional) */
	Num oversub;            /* its taper above the pods: uplink demand / capacity (optional, >= 1) */
	Num tiers;              /* its switch tiers (a 3-tier Clos: 3) (optional) */
	Num efficiency;         /* the share of the bandwidth a collective library's ring gets (the
				   protocol's overhead; optional: 1): link_coll_bw, which the
				   training step's collectives (passes/train_step.c) and the plan's
				   collectives (t.link_eff, runtime/timing.c) use; copies do not */
	const char *source;
	Prov prov;
	int line;
} Link;

typedef struct SourceRef {
	const char *key, *url;
} SourceRef;

typedef struct MachField MachField;   /* the --set registry, private to machine.c */
typedef struct MachArena MachArena;

typedef struct Machine {
	const char *name, *description, *status, *path;
	Device *devs;           /* the host, if any, is one of these, with is_host set */
	int ndevs;
	Device *host;
	Link *links;
	int nlinks;
	SourceRef *refs;
	int nrefs;
	/* <storage>: where checkpoints are written and read (docs/resilience.md); bytes/s per
	 * machine, sustained (optional: num_has) */
	const char *storage_id;
	Num storage_bw;
	char file_hash[17];     /* FNV-1a 64 of the file's bytes, hex */
	char hash[17];          /* file hash folded with every override applied since */
	int noverrides;
	MachField *fields;
	int nfields, capfields;
	MachArena *arena;
} Machine;

/* Loads a machine by built-in name ("h100-sxm") or by path (anything with '/' or ending in
 * ".xml").  Built-in names resolve in: $AICC_MACHINES, <exe dir>/../share/aicc/machines,
 * <exe dir>/../targets/machines.  Diagnostics "file.xml:LINE: error: ..." go to `diag` (stderr
 * if NULL); returns NULL after reporting.  Never crashes on a hostile file. */
Machine *machine_load(const char *name_or_path, FILE *diag);
/* The same from a buffer; `file` names it in diagnostics. */
Machine *machine_load_memory(const char *file, const char *buf, size_t len, FILE *diag);
void machine_free(Machine *m);

/* The directory holding built-in machines and machine.rng, or NULL; `buf` receives it. */
const char *machine_dir(char *buf, size_t len);
/* Built-in machine names, sorted; returns the count (at most `max`), names malloc'ed. */
int machine_list(char **names, int max);

/* Overrides field `path` ("gpu.smem.capacity", "hbm.bandwidth": docs/machines.md) with `value`
 * ("262144", "256KiB", "4.8 TB/s").  Returns 0, or -1 with a message in err. */
int machine_set(Machine *m, const char *path, const char *value, char *err, size_t errlen);
/* `--set LINK.topology=[twisted-]torus:AxBxC` (or mesh:AxB..., ring:N): re-shapes link class
 * LINK as an optical circuit switch does per job (TPU v4: the slice topology); a twisted torus
 * needs a k x k x 2k or k x 2k x 2k shape (Google's TPU v4 documentation).  machine_set calls
 * this for a path ending in ".topology"; 0, or -1 with a message in err. */
int machine_set_topology(Machine *m, const char *link, const char *value, char *err, size_t errlen);
/* Reads field `path` (SI units); 0, or -1 if there is no such field or it is absent. */
int machine_get(const Machine *m, const char *path, double *out);
/* Every settable field's canonical path, in file order, for listings (i < count). */
int machine_nfields(const Machine *m);
const char *machine_field_path(const Machine *m, int i, const Num **num);

/* The built-in machines with at least `need` devices of model `devname` (Device.name), as
 * "NAME (N)" joined by ", " into buf ("" when none): what a "needs N chips" error suggests. */
const char *machine_with_count(const char *devname, int need, char *buf, size_t len);

/* ---- queries ---- */
Device *machine_device(const Machine *m, const char *id);
Device *machine_first(const Machine *m, DevKind kind);   /* first non-host device of a kind */
int machine_ndevices(const Machine *m);                  /* sum of non-host counts */
const Link *machine_link(const Machine *m, const Device *a, const Device *b);
/* The scale-out link between devices of d's class: an ethernet or infiniband link from d to d
 * (the first one), or NULL. */
const Link *machine_scaleout_link(const Machine *m, const Device *d);
const char *machine_source_url(const Machine *m, const char *key);
double dev_peak(const Device *d, DType dt);              /* max of matrix and vector, FLOP/s */
int dev_supports(const Device *d, DType dt);              /* element or block-scaled format */
/* The share (0..1) of a collective's work on the compute units (its reductions and copies
 * through HBM) that a collective engine of d takes instead (<offload>); 0 without one. */
double dev_collective_offload(const Device *d);
/* The narrowest scalar float format d lists a matrix peak for (how an LPU stores its weights),
 * or DT_INVALID when it lists none. */
DType dev_matmul_format(const Device *d);
MemSpace *dev_mem(const Device *d, const char *name);
MemSpace *dev_mem_kind(const Device *d, MemKind kind);
double mem_total_capacity(const Device *d, const MemSpace *s);   /* × units for SCOPE_UNIT */
const MmaFamily *dev_mma(const Device *d, const char *family);
double dev_efficiency(const Device *d, const char *name, double dflt);
/* The measured GEMM efficiency for MMA operand format dt: the `gemm-FORMAT` row (gemm-bf16,
 * gemm-f8e4m3, ...), else the `gemm` fallback, else 1. */
double dev_gemm_efficiency(const Device *d, DType dt);
double dev_units(const Device *d);                       /* primary compute units, or 1 */
double link_oneway_bw(const Link *l);                     /* bytes/s each way per device */
/* What a collective library's ring gets of l: its `<efficiency>` (1 without one). */
double link_coll_eff(const Link *l);
/* A collective's bytes/s each way per device: link_oneway_bw x link_coll_eff. */
double link_coll_bw(const Link *l);

const char *prov_name(Prov p);
const char *devkind_name(DevKind k);
const char *memkind_name(MemKind k);
const char *topo_name(Topo t);

#endif
