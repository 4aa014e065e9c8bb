/* runtime/dist.h: one plan run by several processes (ranks), each holding some of its devices.
 *
 * The rank model (docs/distributed.md): every rank reads the whole plan, computes the same
 * execution order (plan_linearize) and walks it.  A rank binds only the inputs and constants of
 * its own devices (a rank never reads another device's weights), executes the kernels of its
 * own devices' streams, and turns each copy, collective and event that crosses ranks into
 * messages: a copy is a send from the rank of its source buffer to the rank of its destination;
 * a record of an event that a stream on another rank waits for sends that rank a notice, and
 * the wait receives it; an all-reduce is reduced in element chunks by the ranks that hold its
 * inputs, each chunk summed in rank order exactly as the one-process interpreter sums (so the
 * bits are the same: no reduction order is left to the transport), then rounded by the ranks
 * that hold outputs; an all-gather sends every input to the ranks that hold outputs, which run
 * the one-process Concat; an all-to-all sends chunk j of every input to the rank of output j.
 * Since every rank posts its messages in the one execution order, and every receive is
 * preceded in that order by its send, the exchange cannot deadlock.  After the last step every
 * output's value is sent to rank 0, which assembles and writes outputs.
 *
 * The transport (RtTransport) only moves bytes between ranks; dist/mpi.c implements it over MPI
 * point-to-point messages, testsuite/unit/test_dist.c over socket pairs between forked
 * processes.  Nothing here prints or exits.
 */
#ifndef AICC_DIST_H
#define AICC_DIST_H

#include "runtime/interp.h"

/* ---- the transport ---- */
/* Requests are small integers (>= 0) the transport hands out.  Every function returns -1 with e
 * set on failure: a peer that failed or vanished, a message of the wrong size, a timeout. */
typedef struct RtTransport {
	void *ctx;
	int rank, nranks;
	int max_tag;     /* tags are 0..max_tag */
	/* Starts sending n bytes at buf to rank `to` under tag; buf must stay valid and unchanged
	 * until the request completes.  Returns the request. */
	int (*isend)(void *ctx, int to, int tag, const void *buf, size_t n, RtError *e);
	/* Starts receiving exactly n bytes from rank `from` under tag into buf. */
	int (*irecv)(void *ctx, int from, int tag, void *buf, size_t n, RtError *e);
	/* Completes the n requests (whose ids are then free).  0 or -1. */
	int (*wait)(void *ctx, const int *ids, int n, RtError *e);
	/* 1 when request id has completed (its id is then free), 0 when not yet, or -1. */
	int (*test)(void *ctx, int id, RtError *e);
} RtTransport;

/* ---- devices to ranks ---- */
/* The default map: the plan's D devices, in plan order, in contiguous blocks of D / nranks per
 * rank; nranks must divide D (the error says which counts fit).  dev_rank[D] receives the map.
 * Returns 0, or -1 with e set. */
int rt_dist_map_default(const Plan *p, int nranks, int *dev_rank, RtError *e);
/* A map file: one `DEVICE RANK` pair per line (blank lines and `#` comments allowed), every
 * device of the plan exactly once, ranks in 0..nranks-1, each rank at least one device.  Errors
 * name the file and line ("map.txt:3: error: unknown device 'gpu9' ..."). */
int rt_dist_map_file(const Plan *p, int nranks, const char *path, int *dev_rank, RtError *e);

/* ---- one rank of a distributed run ---- */
typedef struct RtDist RtDist;
/* A rank's state for plan p (which must outlive it): dev_rank is copied; tr is borrowed.
 * NULL with e set (no memory, or a plan too large for the transport's tags). */
RtDist *rt_dist_new(const Plan *p, const int *dev_rank, const RtTransport *tr, RtError *e);
/* Still-pending sends' staging memory is not freed (the transport may still read it). */
void rt_dist_free(RtDist *d);
/* The hooks for RtRunOpts.dist (valid while d is). */
const RtDistHooks *rt_dist_hooks(const RtDist *d);
/* 1 when device dev is held by this rank. */
int rt_dist_local(const RtDist *d, int dev);

typedef struct RtDistStats {
	double comm_s;                 /* wall seconds spent waiting for messages, last run */
	double run_s;                  /* wall seconds from the first step to finish, last run */
	int64_t sent_bytes, recv_bytes;   /* last run */
	int sent_msgs, recv_msgs;
	int steps;                     /* instructions this rank took part in, last run */
} RtDistStats;
const RtDistStats *rt_dist_stats(const RtDist *d);
/* Wall-clock start and end (seconds since the epoch below) of step t of the last run: times[2t],
 * times[2t+1]; both -1 for a step this rank took no part in.  *n receives the step count. */
const double *rt_dist_times(const RtDist *d, int *n);
/* The clock origin of rt_dist_times (CLOCK_MONOTONIC seconds; the driver aligns ranks with a
 * barrier before setting it). */
void rt_dist_set_epoch(RtDist *d, double t0);
double rt_dist_now(void);      /* CLOCK_MONOTONIC seconds */
/* What this rank is doing: "t.aip:57 (copy from rank 1)", "before the first instruction", or
 * "after the last instruction".  A NUL-terminated buffer that stays valid and is rewritten as
 * the run advances, so a signal handler may write(2) it. */
const char *rt_dist_where(const RtDist *d);

#endif
