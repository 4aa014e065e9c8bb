/* testsuite/unit/test_heap.c: targets/heap.c's first-fit placement against a plain first-fit
 * scan (the placement every plan had before issue 19: each release scanned every live interval,
 * each placement scanned from offset 0).  Random programs: values of random sizes (empty ones
 * included) defined by one node and read last by a later one, some kept (TgtHeap.until INT_MAX),
 * some released at a later node (until: devices.c's stream-synchronised release), some graph
 * outputs, parameters and graph inputs (which die after their last reader) placed first, and
 * renamed as devices.c renames shard constants.  Every offset and the high-water mark must be
 * the scan's. */
#include <limits.h>

#include "shape_util.h"
#include "targets/target.h"

typedef struct Ref {
	int64_t lo[4096], hi[4096];
	int owner[4096], n;
	int64_t align, top;
} Ref;

static int64_t ref_place(Ref *r, int64_t size, int owner)
{
	int64_t off = 0;
	int at = 0;
	for (; at < r->n; at++) {
		if (r->lo[at] - off >= size)
			break;
		int64_t end = (r->hi[at] + r->align - 1) / r->align * r->align;
		if (end > off)
			off = end;
	}
	memmove(r->lo + at + 1, r->lo + at, sizeof *r->lo * (size_t)(r->n - at));
	memmove(r->hi + at + 1, r->hi + at, sizeof *r->hi * (size_t)(r->n - at));
	memmove(r->owner + at + 1, r->owner + at, sizeof *r->owner * (size_t)(r->n - at));
	r->lo[at] = off, r->hi[at] = off + size, r->owner[at] = owner, r->n++;
	if (off + size > r->top)
		r->top = off + size;
	return off;
}

static void ref_release(Ref *r, const Flat *f, const int *until, int node)
{
	int k = 0;
	for (int j = 0; j < r->n; j++) {
		const FlatVal *v = &f->vals[r->owner[j]];
		int u = until[r->owner[j]], input = v->def < 0 && v->v && v->v->kind == V_INPUT;
		int dead = !v->is_output && (u >= 0 ? u <= node : input ? v->last < node :
					     v->def >= 0 && (v->last < 0 ? v->def : v->last) < node);
		if (!dead)
			r->lo[k] = r->lo[j], r->hi[k] = r->hi[j], r->owner[k] = r->owner[j], k++;
	}
	r->n = k;
}

static uint64_t rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void run_program(uint64_t seed, int nnodes, int nparams, int64_t align)
{
	uint64_t s = seed;
	int nv = nparams + nnodes + 1;
	Flat f = { 0 };
	f.vals = calloc((size_t)nv, sizeof *f.vals);
	int *until = calloc((size_t)nv, sizeof *until);
	int64_t *size = calloc((size_t)nv, sizeof *size);
	Value input = { .kind = V_INPUT };
	assert_non_null(f.vals), assert_non_null(until), assert_non_null(size);
	f.nvals = nv;
	for (int v = 0; v < nv; v++)
		until[v] = -1;
	for (int v = 0; v < nparams; v++) {   /* parameters, and every third a graph input */
		f.vals[v].def = -1, f.vals[v].last = (int)(rnd(&s) % (unsigned)nnodes);
		if (rnd(&s) % 3 == 0)
			f.vals[v].v = &input;
	}
	for (int i = 0; i < nnodes; i++) {      /* value nparams+i: defined by node i */
		FlatVal *fv = &f.vals[nparams + i];
		fv->def = i;
		unsigned k = (unsigned)(rnd(&s) % 8);
		fv->last = k == 0 ? -1 : i + 1 + (int)(rnd(&s) % (k < 6 ? 3u : 40u));
		if (fv->last >= nnodes)
			fv->last = nnodes - 1;
		fv->is_output = rnd(&s) % 23 == 0;
		unsigned u = (unsigned)(rnd(&s) % 17);
		until[nparams + i] = u == 0 ? INT_MAX : u == 1 ? (fv->last < 0 ? i : fv->last) + 1 + (int)(rnd(&s) % 30) : -1;
	}
	f.vals[nv - 1].def = -1, f.vals[nv - 1].last = -1;      /* the renamed shards' parameter */
	for (int v = 0; v < nv; v++) {
		unsigned k = (unsigned)(rnd(&s) % 10);
		size[v] = k == 0 ? 0 : k < 4 ? (int64_t)(rnd(&s) % 64) : (int64_t)(rnd(&s) % 100000);
	}
	TgtHeap h;
	assert_int_equal(tgt_heap_init(&h, 16, align), 0);
	h.until = until;
	Ref *r = calloc(1, sizeof *r);
	assert_non_null(r);
	r->align = align;
	for (int v = 0; v < nparams; v++)
		assert_int_equal(tgt_heap_place(&h, size[v], v), ref_place(r, size[v], v));
	for (int i = 0; i < nnodes; i++) {
		tgt_heap_release(&h, &f, i);
		ref_release(r, &f, until, i);
		int v = nparams + i;
		int64_t off = tgt_heap_place(&h, size[v], v);
		assert_int_equal(off, ref_place(r, size[v], v));
		if (rnd(&s) % 29 == 0) {                /* a shard constant: live throughout */
			tgt_heap_rename(&h, off, v, nv - 1);
			for (int j = 0; j < r->n; j++)
				if (r->owner[j] == v && r->lo[j] == off)
					r->owner[j] = nv - 1;
		}
		int nonempty = 0;
		for (int j = 0; j < r->n; j++)
			nonempty += r->hi[j] > r->lo[j];
		assert_int_equal(h.n, nonempty);
		assert_int_equal(h.top, r->top);
	}
	int64_t lo[4096];
	int owner[4096], k = 0;
	assert_int_equal(tgt_heap_intervals(&h, lo, owner, 4096), h.n);
	for (int j = 0; j < r->n; j++)     /* the same intervals in the same order (empty ones hold none) */
		if (r->hi[j] > r->lo[j]) {
			assert_int_equal(lo[k], r->lo[j]), assert_int_equal(owner[k], r->owner[j]);
			k++;
		}
	tgt_heap_free(&h);
	free(r), free(size), free(until), free(f.vals);
}

static void test_matches_scan(void **st)
{
	for (uint64_t seed = 1; seed <= 40; seed++)
		run_program(seed, 300 + (int)(seed * 37 % 500), (int)(seed % 7) * 20, seed % 3 ? 256 : 1);
}

/* Releases called again at a node already passed, and past the end, change nothing further. */
static void test_release_idempotent(void **st)
{
	run_program(99, 50, 0, 64);
	Flat f = { 0 };
	FlatVal vals[2] = { { .def = 0, .last = 1 }, { .def = 1, .last = -1 } };
	f.vals = vals, f.nvals = 2;
	TgtHeap h;
	assert_int_equal(tgt_heap_init(&h, 1, 16), 0);
	assert_int_equal(tgt_heap_place(&h, 10, 0), 0);
	assert_int_equal(tgt_heap_place(&h, 10, 1), 16);
	tgt_heap_release(&h, &f, 1);
	tgt_heap_release(&h, &f, 1);
	assert_int_equal(h.n, 2);
	tgt_heap_release(&h, &f, 2);    /* value 0 read last by node 1, value 1 by none after node 1 */
	assert_int_equal(h.n, 0);
	tgt_heap_release(&h, &f, 5);
	assert_int_equal(h.n, 0);
	assert_int_equal(tgt_heap_place(&h, 20, 0), 0);
	assert_int_equal(h.top, 26);
	tgt_heap_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_scan), cmocka_unit_test(test_release_idempotent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
