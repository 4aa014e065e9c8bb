/* dist/mpi.c: the MPI transport (dist/mpi.h).  Requests live in a table indexed by the ids the
 * transport hands out; each remembers whether it receives and how many bytes it expects, so a
 * message of the wrong size is an error naming both ranks.  Messages above 2^31 bytes travel as
 * a count of a contiguous type of up to 1 MiB (the largest power of two dividing the size).
 * The top four tags are the transport's own: failure notices, gathers, the barrier and the
 * agreement.  No MPI collective is used: a rank that fails skips the barrier, and a collective
 * it skipped would pair with its next one; point-to-point rounds through rank 0 under their own
 * tags cannot mismatch (an unmatched receive is cancelled at the end). */
#include "dist/mpi.h"

#include <mpi.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { NOTICE_MAX = 1024 };

typedef struct Req {
	MPI_Request r;
	int used, recv, peer;
	MPI_Datatype type;       /* the element type of the message (MPI_BYTE or a block) */
	int count;               /* expected, for receives */
} Req;

struct DistMpi {
	RtTransport tr;
	int rank, size, tag_notice, tag_gather, tag_barrier, tag_agree;
	double timeout_s;
	Req *req;
	int nreq;
	MPI_Request notice_req;
	char notice[NOTICE_MAX];
	int notice_from;         /* rank of a received notice, -1 none */
	int stopped;             /* the last failed wait ended on a notice */
	int ignore_notices;      /* waits go on after a notice (the agreement) */
	char host[MPI_MAX_PROCESSOR_NAME + 1];
	int node, local_rank, local_size;
	MPI_Datatype blocks[21]; /* blocks[k]: 2^k contiguous bytes (0: not made yet) */
};

static int mpi_err(RtError *e, int code, const char *what, int peer)
{
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(code, s, &n);
	s[n] = 0;
	return rt_errorf(e, RT_EUSER, "MPI %s %s rank %d failed: %s", what, peer >= 0 ? "with" : "", peer, s);
}

/* The element type and count a message of n bytes travels as. */
static int msg_type(DistMpi *m, size_t n, MPI_Datatype *t, int *count, RtError *e)
{
	if (n <= INT_MAX) {
		*t = MPI_BYTE;
		*count = (int)n;
		return 0;
	}
	int k = 20;
	while (k > 0 && n % ((size_t)1 << k))
		k--;
	if (n >> k > INT_MAX)
		return rt_errorf(e, RT_EUSER, "a %zu-byte message is too large for MPI", n);
	if (!m->blocks[k]) {
		MPI_Type_contiguous(1 << k, MPI_BYTE, &m->blocks[k]);
		MPI_Type_commit(&m->blocks[k]);
	}
	*t = m->blocks[k];
	*count = (int)(n >> k);
	return 0;
}

static int new_req(DistMpi *m, RtError *e)
{
	for (int i = 0; i < m->nreq; i++)
		if (!m->req[i].used)
			return i;
	int n = m->nreq ? 2 * m->nreq : 64;
	Req *r = realloc(m->req, sizeof *r * (size_t)n);
	if (!r)
		return rt_errorf(e, RT_ENOMEM, "out of memory for MPI requests");
	memset(r + m->nreq, 0, sizeof *r * (size_t)(n - m->nreq));
	int id = m->nreq;
	m->req = r, m->nreq = n;
	return id;
}

/* Starts a send (recv 0) or receive of n bytes with peer under tag; returns the request. */
static int post(DistMpi *m, int recv, int peer, int tag, void *buf, size_t n, RtError *e)
{
	int id = new_req(m, e), count = 0;
	MPI_Datatype t = MPI_BYTE;
	if (id < 0 || msg_type(m, n, &t, &count, e) < 0)
		return -1;
	Req *q = &m->req[id];
	int rc = recv ? MPI_Irecv(buf, count, t, peer, tag, MPI_COMM_WORLD, &q->r)
		      : MPI_Isend(buf, count, t, peer, tag, MPI_COMM_WORLD, &q->r);
	if (rc != MPI_SUCCESS)
		return mpi_err(e, rc, recv ? "receive from" : "send to", peer);
	q->used = 1, q->recv = recv, q->peer = peer, q->type = t, q->count = count;
	return id;
}

static int t_isend(void *ctx, int to, int tag, const void *buf, size_t n, RtError *e)
{
	return post(ctx, 0, to, tag, (void *)buf, n, e);
}

static int t_irecv(void *ctx, int from, int tag, void *buf, size_t n, RtError *e)
{
	return post(ctx, 1, from, tag, buf, n, e);
}

/* A failure notice from another rank, if one has come. */
static int noticed(DistMpi *m)
{
	if (m->notice_from >= 0)
		return 1;
	if (m->notice_req == MPI_REQUEST_NULL)
		return 0;
	int flag = 0;
	MPI_Status st;
	if (MPI_Test(&m->notice_req, &flag, &st) == MPI_SUCCESS && flag) {
		m->notice_from = st.MPI_SOURCE;
		m->notice[NOTICE_MAX - 1] = 0;
		return 1;
	}
	return 0;
}

static double now(void) { return rt_dist_now(); }

/* Polls the n MPI requests until all complete, a notice arrives, or the deadline passes.
 * peers: the rank each request talks to (for messages). */
static int poll_all(DistMpi *m, MPI_Request *rs, MPI_Status *sts, int n, const int *peers, RtError *e)
{
	double t0 = now();
	long spins = 0;
	for (;;) {
		int flag = 0, rc = MPI_Testall(n, rs, &flag, sts);
		if (rc != MPI_SUCCESS) {
			for (int i = 0; i < n; i++)
				if (rc == MPI_ERR_IN_STATUS && sts[i].MPI_ERROR != MPI_SUCCESS && sts[i].MPI_ERROR != MPI_ERR_PENDING)
					return mpi_err(e, sts[i].MPI_ERROR, "message", peers[i]);
			return mpi_err(e, rc, "message", n ? peers[0] : -1);
		}
		if (flag)
			return 0;
		if (!m->ignore_notices && noticed(m)) {
			m->stopped = 1;
			return rt_errorf(e, RT_EUSER, "rank %d failed: %s", m->notice_from, m->notice);
		}
		double waited = now() - t0;
		if (m->timeout_s > 0 && waited > m->timeout_s) {
			char who[128] = "";
			for (int i = 0, o = 0; i < n && o < (int)sizeof who - 12; i++) {
				int seen = peers[i] < 0;
				for (int j = 0; j < i; j++)
					seen |= peers[j] == peers[i];
				if (!seen)
					o += snprintf(who + o, sizeof who - (size_t)o, "%s%d", o ? "," : "", peers[i]);
			}
			return rt_errorf(e, RT_EUSER, "no progress with rank %s for %.0f s (--mpi-timeout)", who[0] ? who : "?",
					 m->timeout_s);
		}
		if (++spins < 100)
			sched_yield();
		else {
			double s = waited < 1e-3 ? 2e-5 : waited < 0.05 ? 2e-4 : 1e-3;
			struct timespec ts = { 0, (long)(s * 1e9) };
			nanosleep(&ts, NULL);
		}
	}
}

static int t_wait(void *ctx, const int *ids, int n, RtError *e)
{
	DistMpi *m = ctx;
	MPI_Request *rs = malloc(sizeof *rs * (size_t)(n + 1));
	MPI_Status *sts = malloc(sizeof *sts * (size_t)(n + 1));
	int *peers = calloc((size_t)n + 1, sizeof *peers);
	if (!rs || !sts || !peers) {
		free(rs), free(sts), free(peers);
		return rt_errorf(e, RT_ENOMEM, "out of memory waiting for messages");
	}
	for (int i = 0; i < n; i++) {
		rs[i] = m->req[ids[i]].r;
		peers[i] = m->req[ids[i]].peer;
	}
	int rc = poll_all(m, rs, sts, n, peers, e);
	for (int i = 0; i < n; i++) {
		Req *q = &m->req[ids[i]];
		q->r = rs[i];
		if (rc == 0 && q->recv) {
			int got = 0;
			MPI_Get_count(&sts[i], q->type, &got);
			if (got != q->count && rc == 0)
				rc = rt_errorf(e, RT_EINTERNAL, "rank %d: a message from rank %d has %d units, %d were expected",
					       m->rank, q->peer, got, q->count);
		}
		if (rs[i] == MPI_REQUEST_NULL)
			q->used = 0;
	}
	free(rs), free(sts), free(peers);
	return rc;
}

static int t_test(void *ctx, int id, RtError *e)
{
	DistMpi *m = ctx;
	Req *q = &m->req[id];
	int flag = 0, rc = MPI_Test(&q->r, &flag, MPI_STATUS_IGNORE);
	if (rc != MPI_SUCCESS)
		return mpi_err(e, rc, "send to", q->peer);
	if (flag)
		q->used = 0;
	return flag;
}

DistMpi *dmpi_init(int *argc, char ***argv, double timeout_s, RtError *e)
{
	int inited = 0;
	MPI_Initialized(&inited);
	if (!inited && MPI_Init(argc, argv) != MPI_SUCCESS)
		return rt_errorf(e, RT_EUSER, "MPI_Init failed (start the ranks with mpirun -np N)"), NULL;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	DistMpi *m = calloc(1, sizeof *m);
	if (!m)
		return rt_errorf(e, RT_ENOMEM, "out of memory"), NULL;
	MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m->size);
	int *ub = NULL, flag = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
	int tag_ub = flag && ub ? *ub : 32767;
	m->tag_notice = tag_ub;
	m->tag_gather = tag_ub - 1;
	m->tag_barrier = tag_ub - 2;
	m->tag_agree = tag_ub - 3;
	m->timeout_s = timeout_s;
	m->notice_from = -1;
	int len = 0;
	MPI_Get_processor_name(m->host, &len);
	m->host[len] = 0;
	MPI_Comm node;
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, m->rank, MPI_INFO_NULL, &node);
	MPI_Comm_rank(node, &m->local_rank);
	MPI_Comm_size(node, &m->local_size);
	int lowest = m->rank;
	MPI_Allreduce(&m->rank, &lowest, 1, MPI_INT, MPI_MIN, node);   /* integers: order-free */
	MPI_Comm_free(&node);
	m->node = lowest;
	MPI_Irecv(m->notice, NOTICE_MAX, MPI_CHAR, MPI_ANY_SOURCE, m->tag_notice, MPI_COMM_WORLD, &m->notice_req);
	m->tr = (RtTransport){ m, m->rank, m->size, tag_ub - 4, t_isend, t_irecv, t_wait, t_test };
	return m;
}

const RtTransport *dmpi_transport(DistMpi *m) { return &m->tr; }
int dmpi_rank(const DistMpi *m) { return m->rank; }
int dmpi_size(const DistMpi *m) { return m->size; }
const char *dmpi_host(const DistMpi *m) { return m->host; }

void dmpi_node(const DistMpi *m, int *node, int *local_rank, int *local_size)
{
	*node = m->node, *local_rank = m->local_rank, *local_size = m->local_size;
}

/* One round through rank 0 under tag: every rank sends *v, rank 0 sends back the maximum.
 * notice_ends: a failure notice ends the wait (the barrier); the agreement waits regardless. */
static int round0(DistMpi *m, int tag, int *v, int notice_ends, RtError *e)
{
	int n = m->size, rc = 0, *vals = calloc((size_t)n + 1, sizeof *vals), *ids = calloc((size_t)n + 1, sizeof *ids), k = 0;
	if (!vals || !ids) {
		free(vals), free(ids);
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	}
	m->ignore_notices = !notice_ends;
	if (m->rank == 0) {
		for (int r = 1; rc == 0 && r < n; r++)
			if ((ids[k++] = t_irecv(m, r, tag, &vals[r], sizeof vals[r], e)) < 0)
				rc = -1;
		if (rc == 0)
			rc = t_wait(m, ids, k, e);
		for (int r = 1; rc == 0 && r < n; r++)
			*v = vals[r] > *v ? vals[r] : *v;
		k = 0;
		for (int r = 1; rc == 0 && r < n; r++)
			if ((ids[k++] = t_isend(m, r, tag, v, sizeof *v, e)) < 0)
				rc = -1;
		if (rc == 0)
			rc = t_wait(m, ids, k, e);
	} else {
		if ((ids[0] = t_isend(m, 0, tag, v, sizeof *v, e)) < 0 || (ids[1] = t_irecv(m, 0, tag, &vals[0], sizeof vals[0], e)) < 0)
			rc = -1;
		if (rc == 0 && (rc = t_wait(m, ids, 2, e)) == 0)
			*v = vals[0];
	}
	m->ignore_notices = 0;
	free(vals), free(ids);
	return rc;
}

int dmpi_barrier(DistMpi *m, RtError *e)
{
	int v = 0;
	return round0(m, m->tag_barrier, &v, 1, e);
}

void dmpi_fail(DistMpi *m, const char *msg)
{
	char buf[NOTICE_MAX];
	snprintf(buf, sizeof buf, "%s", msg);
	MPI_Request *rs = calloc((size_t)m->size + 1, sizeof *rs);
	if (!rs)
		return;
	for (int r = 0; r < m->size; r++)
		if (r != m->rank)
			MPI_Isend(buf, (int)strlen(buf) + 1, MPI_CHAR, r, m->tag_notice, MPI_COMM_WORLD, &rs[r]);
		else
			rs[r] = MPI_REQUEST_NULL;
	/* notices are small (sent eagerly); give them a moment, never longer */
	double t0 = now();
	int flag = 0;
	while (!flag && now() - t0 < 2.0) {
		MPI_Testall(m->size, rs, &flag, MPI_STATUSES_IGNORE);
		if (!flag) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	for (int r = 0; r < m->size; r++)
		if (rs[r] != MPI_REQUEST_NULL)
			MPI_Request_free(&rs[r]);
	free(rs);
}

int dmpi_stopped(const DistMpi *m) { return m->stopped; }

const char *dmpi_peer_failure(DistMpi *m, int *rank)
{
	if (!noticed(m))
		return NULL;
	*rank = m->notice_from;
	return m->notice;
}

int dmpi_agree(DistMpi *m, int ok, RtError *e)
{
	int bad = !ok;
	RtError pe = { 0 };
	if (round0(m, m->tag_agree, &bad, 0, &pe) < 0)
		return rt_errorf(e, RT_EUSER, "not every rank reached the end: %s", pe.msg);
	return !bad;
}

int dmpi_gather(DistMpi *m, const void *buf, size_t n, void ***out, size_t **lens, RtError *e)
{
	uint64_t len = n;
	if (m->rank != 0) {
		int ids[2];
		if ((ids[0] = t_isend(m, 0, m->tag_gather, &len, sizeof len, e)) < 0 ||
		    (ids[1] = t_isend(m, 0, m->tag_gather, buf, n, e)) < 0)
			return -1;
		return t_wait(m, ids, 2, e);
	}
	void **bufs = calloc((size_t)m->size, sizeof *bufs);
	size_t *ls = calloc((size_t)m->size, sizeof *ls);
	uint64_t *sz = calloc((size_t)m->size, sizeof *sz);
	int *ids = calloc((size_t)m->size, sizeof *ids), rc = bufs && ls && sz && ids ? 0 : -1, k = 0;
	if (rc < 0)
		rt_errorf(e, RT_ENOMEM, "out of memory gathering from the ranks");
	for (int r = 1; rc == 0 && r < m->size; r++)
		if ((ids[k++] = t_irecv(m, r, m->tag_gather, &sz[r], sizeof sz[r], e)) < 0)
			rc = -1;
	if (rc == 0)
		rc = t_wait(m, ids, k, e);
	k = 0;
	for (int r = 0; rc == 0 && r < m->size; r++) {
		ls[r] = r ? (size_t)sz[r] : n;
		if (!(bufs[r] = malloc(ls[r] ? ls[r] : 1)))
			rc = rt_errorf(e, RT_ENOMEM, "out of memory gathering from the ranks");
		else if (r == 0)
			memcpy(bufs[0], buf, n);
		else if ((ids[k++] = t_irecv(m, r, m->tag_gather, bufs[r], ls[r], e)) < 0)
			rc = -1;
	}
	if (rc == 0)
		rc = t_wait(m, ids, k, e);
	free(sz), free(ids);
	if (rc < 0) {
		for (int r = 0; bufs && r < m->size; r++)
			free(bufs[r]);
		free(bufs), free(ls);
		return -1;
	}
	*out = bufs, *lens = ls;
	return 0;
}

void dmpi_finalize(DistMpi *m, int failed)
{
	if (m->notice_req != MPI_REQUEST_NULL) {
		MPI_Cancel(&m->notice_req);
		MPI_Wait(&m->notice_req, MPI_STATUS_IGNORE);
	}
	for (int i = 0; i < m->nreq; i++)
		if (m->req[i].used && m->req[i].r != MPI_REQUEST_NULL) {
			if (m->req[i].recv)
				MPI_Cancel(&m->req[i].r);
			MPI_Request_free(&m->req[i].r);
		}
	for (int k = 0; k < 21; k++)
		if (m->blocks[k])
			MPI_Type_free(&m->blocks[k]);
	if (failed)     /* a peer that never finalizes must not hold this rank */
		alarm((unsigned)(m->timeout_s > 10 ? m->timeout_s : 10));
	MPI_Finalize();
	alarm(0);
	free(m->req);
	free(m);
}
