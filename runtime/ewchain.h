/* runtime/ewchain.h: elementwise chains, the interpreter's blocked execution of consecutive f32
 * elementwise instructions (runtime/ewchain.c).  Internal to runtime/interp.c. */
#ifndef AICC_EWCHAIN_H
#define AICC_EWCHAIN_H

#include "runtime/plan.h"

/* len[t] := the number of steps of the chain that starts at step t of order (n steps), 0 where
 * none starts: at least two consecutive instructions with rt_ew_op kernels, f32 operands and the
 * same output element count N > 1, each operand one value or N of them, none writing a buffer
 * an earlier one of the chain (or itself) reads or writes.  *len NULL: no chain.  -1 with e set when out of memory. */
int rt_ew_chains(const Plan *p, const PlanStep *order, int n, int **len, RtError *e);

/* Runs the chain of len steps from step t0 block by block over val (one value per buffer):
 * each block of every output goes through every instruction while it is in cache.  An output
 * read after the chain (last[b] beyond it) is allocated whole into val; the others live only
 * in a block of scratch.  1 when done, 0 when val does not match the plan (the caller runs the
 * steps one by one), -1 with e set when out of memory. */
int rt_ew_chain_run(const Plan *p, const PlanStep *order, int t0, int len, const int *last, RtTensor *val,
		    RtError *e);

/* The chain of len steps from step t0 fused after instruction prod (a Conv, whose kernel takes an
 * RtEpilogue: runtime/kernels.h): its results read after the chain are allocated whole into val
 * as rt_ew_chain_run does; then rt_ew_fused_region (the epilogue's fn, *out its ctx) runs every
 * step on each finished region of prod's output, with the kernels' own row functions: the
 * steps' bits.  1 and *out set when fused; 0 when it cannot be (prod's output is not f32 of the
 * chain's element count or not read by it, the chain writes what prod reads, val does not match
 * the plan: run them apart); -1 with e set when out of memory.  rt_ew_fused_end frees *out. */
typedef struct RtEwFused RtEwFused;
int rt_ew_fused_begin(const Plan *p, const PlanStep *order, const PlanInstr *prod, int t0, int len, const int *last,
		      RtTensor *val, RtEwFused **out, RtError *e);
void rt_ew_fused_region(void *ctx, const float *y, const float *c, int64_t ldc, int64_t rows, int64_t n);
void rt_ew_fused_end(RtEwFused *f);

#endif
