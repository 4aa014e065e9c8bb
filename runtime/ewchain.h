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

#endif
