/* dist/mpi.h: the MPI transport of distributed runs (runtime/dist.h), for `aicc run --mpi`.
 * Built only when Open MPI is found (pkg-config ompi-c; the Makefile defines AICC_MPI).
 *
 * Messages are MPI point-to-point (MPI_Isend / MPI_Irecv on MPI_COMM_WORLD, errors returned, not
 * fatal).  Every wait polls: besides its own requests it watches for a failure notice from any
 * rank (dmpi_fail) and for its deadline, so a rank never hangs on a peer that failed; it yields
 * the CPU while it waits (sched_yield, then sleeps of up to 1 ms), which matters when ranks
 * oversubscribe the cores.  Collective reductions of values are never left to MPI: the only
 * MPI collective used is the integer agreement of dmpi_agree.  Nothing here exits except
 * dmpi_finalize's last resort (MPI_Abort) when a peer never reaches the end.
 */
#ifndef AICC_DIST_MPI_H
#define AICC_DIST_MPI_H

#include "runtime/dist.h"

typedef struct DistMpi DistMpi;

/* MPI_Init.  timeout_s: the longest a wait may see no progress before it fails (0: forever).
 * NULL with e set. */
DistMpi *dmpi_init(int *argc, char ***argv, double timeout_s, RtError *e);
const RtTransport *dmpi_transport(DistMpi *m);
int dmpi_rank(const DistMpi *m);
int dmpi_size(const DistMpi *m);
const char *dmpi_host(const DistMpi *m);          /* MPI_Get_processor_name */
/* The ranks sharing this rank's node (MPI_COMM_TYPE_SHARED), this rank's index among them, and
 * the node's index (nodes numbered by their lowest rank). */
void dmpi_node(const DistMpi *m, int *node, int *local_rank, int *local_size);
/* A barrier that polls like every wait.  0 or -1. */
int dmpi_barrier(DistMpi *m, RtError *e);
/* Tells every other rank that this one failed; msg (one line) is what they report. */
void dmpi_fail(DistMpi *m, const char *msg);
/* The notice of a failed peer received so far (its rank in *rank), or NULL. */
const char *dmpi_peer_failure(DistMpi *m, int *rank);
/* 1 when a wait of this rank failed because another rank had failed (not on its own). */
int dmpi_stopped(const DistMpi *m);
/* Every rank calls this once with ok 1 or 0: returns 1 when all ranks passed 1, 0 when some
 * did not, -1 with e set when the agreement itself failed (a peer vanished, the deadline). */
int dmpi_agree(DistMpi *m, int ok, RtError *e);
/* Rank 0 receives every rank's n-byte blob: *out (rank 0 only) gets size() rt_malloc'd buffers
 * and *lens their sizes (free each, then the arrays).  0 or -1. */
int dmpi_gather(DistMpi *m, const void *buf, size_t n, void ***out, size_t **lens, RtError *e);
/* MPI_Finalize after cancelling what is still pending.  After a failure the finalize runs under
 * an alarm of the timeout (at least 10 s), so a peer that never finalizes cannot hold it. */
void dmpi_finalize(DistMpi *m, int failed);

#endif
