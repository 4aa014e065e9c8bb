/* testsuite/unit/kernel_test.h: helpers for the kernel unit tests: build tensors from
 * literals, run one operator through the dispatch table, compare results. */
#ifndef AICC_KERNEL_TEST_H
#define AICC_KERNEL_TEST_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/kernels.h"

#define KT_MAXIO 8

/* A tensor of dtype d and shape dims filled from vals (NULL: zeros). */
static inline RtTensor kt_t(DType d, int rank, const int64_t *dims, const double *vals)
{
	RtTensor t;
	RtError e = { 0 };
	assert_int_equal(rt_tensor_alloc(&t, d, rank, dims, &e), 0);
	for (int64_t i = 0; vals && i < t.n; i++)
		rt_set(&t, i, vals[i]);
	return t;
}
#define KT_DIMS(...) ((const int64_t[]){ __VA_ARGS__ })
#define KT_VALS(...) ((const double[]){ __VA_ARGS__ })
#define KT_T(d, rank, dims, vals) kt_t(d, rank, dims, vals)

typedef struct Kt {
	RtTensor out[KT_MAXIO];
	int nout;
	RtError err;
	int rc;
} Kt;

/* Runs op on inputs (NULL for absent) with attrs and opts; outputs get dtype DT_INVALID. */
static inline Kt kt_run(const char *op, RtTensor **in, int nin, int nout, const Attrs *attrs, const RtExecOpts *opts)
{
	Kt k;
	memset(&k, 0, sizeof k);
	RtExecOpts o0 = { 0 };
	o0.mma_in = DT_INVALID;
	RtKernelArgs a = { in, nin, k.out, nout, attrs, opts ? opts : &o0, NULL };
	RtOp id = rt_op_lookup(op);
	assert_int_not_equal(id, RT_OP_COUNT);
	k.nout = nout;
	k.rc = rt_kernel(id)(&a, &k.err);
	return k;
}

static inline void kt_free(Kt *k)
{
	for (int i = 0; i < k->nout; i++)
		rt_tensor_free(&k->out[i]);
}

/* Asserts output i has the given shape and values within tol (relative + absolute). */
static inline void kt_expect(const RtTensor *t, int rank, const int64_t *dims, const double *want, double tol)
{
	assert_int_equal(t->rank, rank);
	for (int k = 0; k < rank; k++)
		assert_int_equal(t->dims[k], dims[k]);
	for (int64_t i = 0; i < t->n; i++) {
		double g = rt_get(t, i), w = want[i];
		if (isnan(w)) {
			assert_true(isnan(g));
			continue;
		}
		if (isinf(w)) {
			assert_true(g == w);
			continue;
		}
		if (fabs(g - w) > tol * (1 + fabs(w)))
			fail_msg("element %lld: got %.9g, want %.9g", (long long)i, g, w);
	}
}

/* Attribute list builders. */
static inline Attr kt_ai(const char *n, int64_t v) { Attr a = { 0 }; a.name = n; a.kind = ATTR_INT; a.i = v; return a; }
static inline Attr kt_af(const char *n, double v) { Attr a = { 0 }; a.name = n; a.kind = ATTR_FLOAT; a.f = v; return a; }
static inline Attr kt_as(const char *n, const char *v) { Attr a = { 0 }; a.name = n; a.kind = ATTR_STRING; a.s = v; return a; }
static inline Attr kt_ais(const char *n, int cnt, int64_t *v) { Attr a = { 0 }; a.name = n; a.kind = ATTR_INTS; a.n = cnt; a.ints = v; return a; }

#endif
