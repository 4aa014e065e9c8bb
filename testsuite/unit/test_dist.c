/* testsuite/unit/test_dist.c: distributed execution (runtime/dist.h) without MPI, so that the
 * non-MPI build (and the ASan build) tests it: ranks are forked processes joined by socket
 * pairs, through a small transport that matches messages by peer and tag as MPI does.  A two-device plan with a copy each way, cross-rank events, a sharded seeded constant
 * and all three collectives runs on two ranks; rank 0's assembled outputs must equal the
 * one-process run's bit for bit.  Also: shards of seeded fills, the device maps, and a rank that
 * dies mid-run (its peer fails cleanly instead of hanging). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/dist.h"
#include "runtime/random.h"

static const char plan_text[] =
	"aicc-plan 1\n"
	"target reference\n"
	"machine test-4gpu hash=c72ab7d84aad843c\n"
	"device gpu0 kind=gpu peak=9.89e+14 peak_f64=6.7e+13 overhead=0 clock=1.83e+09\n"
	"device gpu1 kind=gpu peak=9.89e+14 peak_f64=6.7e+13 overhead=0 clock=1.83e+09\n"
	"space gpu0.hbm device=gpu0 capacity=80000000000 bandwidth=3.015e+12\n"
	"space gpu1.hbm device=gpu1 capacity=80000000000 bandwidth=3.015e+12\n"
	"unit gpu0.core device=gpu0 kind=compute\n"
	"unit gpu1.core device=gpu1 kind=compute\n"
	"link nvlink.gpu0-gpu1 src=gpu0 dst=gpu1 bandwidth=4.5e+11 latency=0\n"
	"link nvlink.gpu1-gpu0 src=gpu1 dst=gpu0 bandwidth=4.5e+11 latency=0\n"
	"buffer x space=gpu0.hbm offset=0 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer w space=gpu0.hbm offset=64 size=80 dtype=f32 shape=[5,4] format=row\n"
	"buffer b space=gpu1.hbm offset=0 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer a0 space=gpu0.hbm offset=192 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer x1 space=gpu1.hbm offset=64 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer a1 space=gpu1.hbm offset=128 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer s space=gpu0.hbm offset=256 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer s@gpu1 space=gpu1.hbm offset=192 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer g space=gpu0.hbm offset=320 size=120 dtype=f32 shape=[3,10] format=row\n"
	"buffer g@gpu1 space=gpu1.hbm offset=256 size=120 dtype=f32 shape=[3,10] format=row\n"
	"buffer m0 space=gpu0.hbm offset=448 size=48 dtype=f32 shape=[3,4] format=row\n"
	"buffer w1 space=gpu1.hbm offset=384 size=80 dtype=f32 shape=[5,4] format=row\n"
	"buffer m1 space=gpu1.hbm offset=512 size=48 dtype=f32 shape=[3,4] format=row\n"
	"buffer p0 space=gpu0.hbm offset=512 size=96 dtype=f32 shape=[6,4] format=row\n"
	"buffer p1 space=gpu1.hbm offset=384 size=96 dtype=f32 shape=[6,4] format=row\n"
	"buffer z0 space=gpu0.hbm offset=640 size=96 dtype=f32 shape=[6,4] format=row\n"
	"buffer z1 space=gpu1.hbm offset=512 size=96 dtype=f32 shape=[6,4] format=row\n"
	"buffer t1 space=gpu1.hbm offset=640 size=60 dtype=f32 shape=[3,5] format=row\n"
	"buffer t space=gpu0.hbm offset=192 size=60 dtype=f32 shape=[3,5] format=row\n"
	"const b init=normal mean=0 std=1 seed=5 instance=0 shard=0:3:7\n"
	"input x buffer=x\n"
	"input w buffer=w\n"
	"output s buffer=s\n"
	"output g buffer=g\n"
	"output z0 buffer=z0\n"
	"output z1 buffer=z1\n"
	"output t buffer=t\n"
	"event a1.ready\n"
	"event p1.ready\n"
	"event t1.ready\n"
	"stream gpu0 device=gpu0 count=10\n"
	"  kernel Tanh in=[x] out=[a0] flops=15\n"
	"  wait a1.ready\n"
	"  collective allreduce in=[a0,a1] out=[s,s@gpu1] link=nvlink.gpu0-gpu1\n"
	"  collective allgather in=[a0,a1] out=[g,g@gpu1] link=nvlink.gpu0-gpu1 a.axis=1\n"
	"  kernel MatMul in=[a0,w] out=[m0] flops=1.2e+02\n"
	"  kernel Concat in=[m0,m0] out=[p0] a.axis=0\n"
	"  wait p1.ready\n"
	"  collective alltoall in=[p0,p1] out=[z0,z1] link=nvlink.gpu0-gpu1 a.axis=1\n"
	"  wait t1.ready\n"
	"  copy in=[t1] out=[t] link=nvlink.gpu1-gpu0\n"
	"stream gpu1 device=gpu1 count=9\n"
	"  copy in=[x] out=[x1] link=nvlink.gpu0-gpu1\n"
	"  kernel Add in=[x1,b] out=[a1] flops=15\n"
	"  record a1.ready\n"
	"  copy in=[w] out=[w1] link=nvlink.gpu0-gpu1\n"
	"  kernel MatMul in=[a1,w1] out=[m1] flops=1.2e+02\n"
	"  kernel Concat in=[m1,m1] out=[p1] a.axis=0\n"
	"  record p1.ready\n"
	"  kernel Mul in=[a1,x1] out=[t1] flops=15\n"
	"  record t1.ready\n"
	"end\n";

/* ---- a transport over socket pairs, with MPI's matching ---- */
/* A message is a 16-byte header (tag, bytes) and its bytes.  Sends go out in order per peer; a
 * message that arrives is given to the first receive posted for its peer and tag, or kept until
 * one is posted (as MPI matches by source and tag). */
enum { MAXR = 4, MAXQ = 256 };

typedef struct Req {
	int used, recv, peer, tag, done;
	long seq;                 /* posting order */
	char *buf;
	size_t n, off;            /* sends: bytes written, the 16 header bytes first */
	int64_t hdr[2];
} Req;

typedef struct Early {        /* an arrived message no receive was posted for yet */
	int peer, tag;
	char *buf;
	size_t n;
} Early;

typedef struct Sock {
	int rank, n, fd[MAXR];
	Req req[MAXQ];
	int sendq[MAXR][MAXQ], sh[MAXR], st[MAXR];   /* FIFO of send ids per peer */
	int64_t in_hdr[MAXR][2];                     /* the message being read from each peer */
	char *in_buf[MAXR];
	size_t in_off[MAXR];
	Early early[MAXQ];
	int nearly;
	long seq;
} Sock;

static int new_req(Sock *s, RtError *e)
{
	for (int i = 0; i < MAXQ; i++)
		if (!s->req[i].used)
			return i;
	return rt_errorf(e, RT_ENOMEM, "too many requests");
}

static int s_isend(void *ctx, int to, int tag, const void *buf, size_t n, RtError *e)
{
	Sock *s = ctx;
	int id = new_req(s, e);
	if (id < 0)
		return -1;
	s->req[id] = (Req){ 1, 0, to, tag, 0, s->seq++, (char *)buf, n, 0, { tag, (int64_t)n } };
	s->sendq[to][s->st[to]++ % MAXQ] = id;
	return id;
}

/* Gives a complete message to receive q; sizes must agree. */
static int deliver(Sock *s, Req *q, const char *buf, size_t n, RtError *e)
{
	if (n != q->n)
		return rt_errorf(e, RT_EINTERNAL, "rank %d: from rank %d came %zu bytes under tag %d, %zu expected", s->rank,
				 q->peer, n, q->tag, q->n);
	memcpy(q->buf, buf, n);
	q->done = 1;
	return 0;
}

static int s_irecv(void *ctx, int from, int tag, void *buf, size_t n, RtError *e)
{
	Sock *s = ctx;
	int id = new_req(s, e);
	if (id < 0)
		return -1;
	s->req[id] = (Req){ 1, 1, from, tag, 0, s->seq++, buf, n, 0, { 0, 0 } };
	for (int k = 0; k < s->nearly; k++)
		if (s->early[k].peer == from && s->early[k].tag == tag) {
			int rc = deliver(s, &s->req[id], s->early[k].buf, s->early[k].n, e);
			free(s->early[k].buf);
			memmove(&s->early[k], &s->early[k + 1], sizeof s->early[0] * (size_t)(s->nearly - k - 1));
			s->nearly--;
			return rc < 0 ? -1 : id;
		}
	return id;
}

/* A message from peer p is complete: to the first receive posted for it, else kept. */
static int arrived(Sock *s, int p, RtError *e)
{
	int tag = (int)s->in_hdr[p][0];
	size_t n = (size_t)s->in_hdr[p][1];
	Req *first = NULL;
	for (int i = 0; i < MAXQ; i++) {
		Req *q = &s->req[i];
		if (q->used && q->recv && !q->done && q->peer == p && q->tag == tag && (!first || q->seq < first->seq))
			first = q;
	}
	if (first) {
		int rc = deliver(s, first, s->in_buf[p], n, e);
		free(s->in_buf[p]);
		s->in_buf[p] = NULL;
		return rc;
	}
	if (s->nearly == MAXQ)
		return rt_errorf(e, RT_ENOMEM, "too many early messages");
	s->early[s->nearly++] = (Early){ p, tag, s->in_buf[p], n };
	s->in_buf[p] = NULL;
	return 0;
}

/* Moves bytes to and from every peer; waits up to ms for readiness. */
static int progress(Sock *s, int ms, RtError *e)
{
	struct pollfd pf[MAXR];
	for (int p = 0; p < s->n; p++) {
		pf[p].fd = p == s->rank ? -1 : s->fd[p];
		pf[p].events = (short)(POLLIN | (s->sh[p] != s->st[p] ? POLLOUT : 0));
		pf[p].revents = 0;
	}
	if (poll(pf, (nfds_t)s->n, ms) < 0 && errno != EINTR)
		return rt_errorf(e, RT_EUSER, "poll: %s", strerror(errno));
	for (int p = 0; p < s->n; p++) {
		if (p == s->rank)
			continue;
		if (s->sh[p] != s->st[p] && (pf[p].revents & POLLOUT)) {
			Req *q = &s->req[s->sendq[p][s->sh[p] % MAXQ]];
			const char *src = q->off < 16 ? (const char *)q->hdr + q->off : q->buf + (q->off - 16);
			size_t left = q->off < 16 ? 16 - q->off : q->n - (q->off - 16);
			ssize_t k = left ? send(s->fd[p], src, left, MSG_NOSIGNAL) : 0;
			if (k < 0 && errno != EAGAIN)
				return rt_errorf(e, RT_EUSER, "rank %d: send to rank %d: %s", s->rank, p, strerror(errno));
			q->off += k > 0 ? (size_t)k : 0;
			if (q->off == 16 + q->n)
				q->done = 1, s->sh[p]++;
		}
		if (pf[p].revents & (POLLIN | POLLHUP | POLLERR)) {
			size_t off = s->in_off[p], n = (size_t)s->in_hdr[p][1];
			char *dst = off < 16 ? (char *)s->in_hdr[p] + off : s->in_buf[p] + (off - 16);
			size_t left = off < 16 ? 16 - off : n - (off - 16);
			ssize_t k = left ? read(s->fd[p], dst, left) : 0;
			if (k == 0 && left)
				return rt_errorf(e, RT_EUSER, "rank %d closed the connection", p);
			if (k < 0 && errno != EAGAIN)
				return rt_errorf(e, RT_EUSER, "rank %d: receive from rank %d: %s", s->rank, p, strerror(errno));
			s->in_off[p] = off += k > 0 ? (size_t)k : 0;
			if (off == 16 && !s->in_buf[p] && !(s->in_buf[p] = malloc((size_t)s->in_hdr[p][1] + 1)))
				return rt_errorf(e, RT_ENOMEM, "out of memory");
			if (off >= 16 && off == 16 + (size_t)s->in_hdr[p][1]) {
				s->in_off[p] = 0;
				if (arrived(s, p, e) < 0)
					return -1;
			}
		}
	}
	return 0;
}

static int s_wait(void *ctx, const int *ids, int n, RtError *e)
{
	Sock *s = ctx;
	for (int tries = 0; tries < 3000; tries++) {       /* 30 s */
		int all = 1;
		for (int i = 0; i < n; i++)
			all &= s->req[ids[i]].done;
		if (all) {
			for (int i = 0; i < n; i++)
				s->req[ids[i]].used = 0;
			return 0;
		}
		if (progress(s, 10, e) < 0)
			return -1;
	}
	return rt_errorf(e, RT_EUSER, "rank %d: timed out", s->rank);
}

static int s_test(void *ctx, int id, RtError *e)
{
	Sock *s = ctx;
	if (!s->req[id].done && progress(s, 0, e) < 0)
		return -1;
	if (s->req[id].done)
		s->req[id].used = 0;
	return s->req[id].used == 0;
}

static void sock_free(Sock *s)
{
	for (int p = 0; p < MAXR; p++)
		free(s->in_buf[p]);
	for (int k = 0; k < s->nearly; k++)
		free(s->early[k].buf);
}

/* ---- helpers ---- */
static Plan *parse(void)
{
	RtError e = { 0 };
	Plan *p = plan_parse("dist.aip", plan_text, strlen(plan_text), &e);
	if (!p)
		fprintf(stderr, "%s\n", e.msg);
	assert_non_null(p);
	rt_cost_register("reference", rt_cost_roofline);
	return p;
}

/* One rank's run over socket fds; returns 0 or -1 (e set); rank 0 fills r. */
static int run_rank(const Plan *p, int rank, int n, const int *fd, RtRun *r, RtError *e)
{
	static Sock s;
	memset(&s, 0, sizeof s);
	s.rank = rank, s.n = n;
	for (int i = 0; i < n; i++)
		s.fd[i] = fd[i];
	RtTransport tr = { &s, rank, n, 1 << 30, s_isend, s_irecv, s_wait, s_test };
	int map[2] = { 0, 1 };
	RtDist *d = rt_dist_new(p, map, &tr, e);
	if (!d)
		return -1;
	RtRunOpts o = { .seed = 11, .dist = rt_dist_hooks(d) };
	int rc = rt_run(p, &o, r, e);
	rt_dist_free(d);
	sock_free(&s);
	return rc;
}

/* Forks rank 1 (which runs and _exits with 0 or 1, or dies after `die_after` allocations),
 * runs rank 0 here; returns rank 0's status and sets *child to rank 1's exit status. */
static int two_ranks(const Plan *p, RtRun *r, RtError *e, long die_after, int *child)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		int fd[2] = { sv[1], -1 };
		RtRun r1;
		RtError e1 = { 0 };
		if (die_after)
			rt_alloc_fail_after(die_after);
		int rc = run_rank(p, 1, 2, fd, &r1, &e1);
		_exit(rc == 0 ? 0 : 1);
	}
	close(sv[1]);
	int fd[2] = { -1, sv[0] };
	int rc = run_rank(p, 0, 2, fd, r, e);
	close(sv[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	*child = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return rc;
}

/* ---- tests ---- */
static void test_fill_at(void **state)
{
	(void)state;
	float whole[101], part[101];
	rt_fill_normal(whole, 101, 0.5f, 2.0f, 9, 3);
	for (int first = 0; first < 101; first += 7)
		for (int n = 0; first + n <= 101; n += 13) {
			rt_fill_normal_at(part, first, n, 0.5f, 2.0f, 9, 3);
			assert_memory_equal(part, whole + first, sizeof(float) * (size_t)n);
		}
	rt_fill_uniform(whole, 101, -1.0f, 1.0f, 9, 3);
	rt_fill_uniform_at(part, 33, 50, -1.0f, 1.0f, 9, 3);
	assert_memory_equal(part, whole + 33, sizeof(float) * 50);
}

static void test_maps(void **state)
{
	(void)state;
	Plan *p = parse();
	RtError e = { 0 };
	int map[2] = { -1, -1 };
	assert_int_equal(rt_dist_map_default(p, 2, map, &e), 0);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 1);
	assert_int_equal(rt_dist_map_default(p, 1, map, &e), 0);
	assert_int_equal(map[1], 0);
	assert_int_equal(rt_dist_map_default(p, 3, map, &e), -1);
	assert_non_null(strstr(e.msg, "the plan has 2 devices (gpu0, gpu1); 3 ranks cannot hold them"));
	assert_non_null(strstr(e.msg, "one of 1, 2"));
	plan_free(p);
}

static void test_two_ranks_match_one_process(void **state)
{
	(void)state;
	Plan *p = parse();
	RtError e = { 0 };
	RtRun one, two;
	RtRunOpts o = { .seed = 11 };
	assert_int_equal(rt_run(p, &o, &one, &e), 0);
	int child = -1, rc = two_ranks(p, &two, &e, 0, &child);
	if (rc)
		fprintf(stderr, "%s\n", e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(child, 0);
	for (int i = 0; i < p->noutputs; i++) {
		assert_int_equal(one.outputs[i].n, two.outputs[i].n);
		assert_memory_equal(one.outputs[i].data, two.outputs[i].data, (size_t)one.outputs[i].n * sizeof(float));
	}
	rt_run_free(p, &one);
	rt_run_free(p, &two);
	plan_free(p);
}

static void test_dead_peer(void **state)
{
	(void)state;
	Plan *p = parse();
	RtError e = { 0 };
	RtRun r;
	int child = -1;
	/* rank 1 runs out of memory early in its run and exits: rank 0 gets an error, not a hang */
	assert_int_equal(two_ranks(p, &r, &e, 20, &child), -1);
	assert_int_equal(child, 1);
	/* "dist.aip:LINE: error: rank 1 closed the connection" or "... Connection reset by peer" */
	assert_non_null(strstr(e.msg, "dist.aip:"));
	assert_non_null(strstr(e.msg, "rank 1"));
	plan_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_at),
		cmocka_unit_test(test_maps),
		cmocka_unit_test(test_two_ranks_match_one_process),
		cmocka_unit_test(test_dead_peer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
