/* targets/lpu/lpu.h: the LPU target's shared state (Groq TSP v1 and the Groq 3 LPU).
 *
 * The LPU is statically scheduled (hardware.md §3.6, backends.md §3): every instruction has a
 * fixed latency, there is no arbitration, so the compiler's schedule is the timing model.  The
 * target lowers each flat node to one instruction on a functional slice group (MXM, VXM, SXM;
 * one group per hemisphere, east and west), prices it in cycles from the machine file
 * (schedule.c, formulas in docs/targets-lpu.md §Cost), list-schedules all of them to exact issue
 * cycles, allocates SRAM by cycle-exact live ranges and emits one stream in issue-cycle order
 * whose instructions carry unit, cycle and dur (lower.c).  The cost hook (cost.c) returns
 * dur / clock, so the predicted latency is the schedule length exactly. */
#ifndef AICC_LPU_H
#define AICC_LPU_H

#include "targets/target.h"

/* Functional unit kinds, each instantiated once per hemisphere. */
typedef enum LpuKind { LK_MXM, LK_VXM, LK_SXM, LK_COUNT } LpuKind;
#define LPU_HEMIS 2

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
	int64_t sram;            /* SRAM bytes per chip */
} LpuArch;

/* One scheduled instruction (one flat node). */
typedef struct LpuOp {
	int node;                /* flat node */
	LpuKind kind;
	int unit;                /* 0 .. LK_COUNT*LPU_HEMIS-1: kind * LPU_HEMIS + hemisphere */
	int64_t cycle, dur;      /* issue cycle, occupancy */
	int64_t compute, stream; /* cycles of the compute term and the SRAM streaming term */
	int64_t vectors;         /* 320-byte vectors read and written */
	int critical;            /* on the critical path */
} LpuOp;

typedef struct LpuSched {
	LpuOp *ops; int nops;    /* in flat-node order */
	int *order;              /* ops by (cycle, unit) */
	int64_t length;          /* schedule length, cycles */
	int64_t busy[LK_COUNT * LPU_HEMIS];
	int64_t critical_len;    /* cycles on the critical path (= length) */
	int ncritical;
} LpuSched;

int lpu_arch(const Device *d, LpuArch *a, RtError *e);
/* Prices and list-schedules every node of f; returns 0 or -1 with e set. */
int lpu_schedule(const LpuArch *a, const Flat *f, LpuSched *s, RtError *e);
void lpu_sched_free(LpuSched *s);
extern const char *const lpu_kind_names[LK_COUNT];

#endif
