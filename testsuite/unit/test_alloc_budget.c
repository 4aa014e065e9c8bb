/* testsuite/unit/test_alloc_budget.c: cmocka tests of the allocation budget (runtime/rt.h
 * rt_alloc_budget_begin/end), the mechanism that keeps a kernel within the host memory the
 * run's check leaves to it: requests past the budget fail before the allocator is asked, frees
 * and reallocations give bytes back, the largest refused request is reported, and nothing is
 * counted outside a budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/rt.h"

static void budget_counts_held_bytes(void **state)
{
	(void)state;
	rt_alloc_budget_begin(4096);
	void *a = rt_malloc(3000);
	assert_non_null(a);
	assert_null(rt_malloc(3000));              /* 6000 > 4096 */
	assert_null(rt_calloc(1000, 8));
	rt_free(a);                                /* given back */
	void *b = rt_calloc(300, 10);
	assert_non_null(b);
	void *c = rt_realloc(b, 3500);             /* grows by the difference only */
	assert_non_null(c);
	assert_null(rt_realloc(c, 9000));          /* refused: c stays valid */
	assert_null(rt_calloc(SIZE_MAX / 2, 4));   /* n*size overflows: refused, not wrapped */
	int64_t held, refused = rt_alloc_budget_end(&held);
	assert_true(refused >= 9000 - 3500 && refused <= INT64_MAX);
	assert_true(held >= 3500 && held < 4096);
	rt_free(c);
	void *big = rt_malloc(1 << 20);            /* no budget: not counted, not refused */
	assert_non_null(big);
	rt_free(big);
	assert_int_equal(rt_alloc_budget_end(NULL), 0);
}

static void tensor_past_budget_is_an_error(void **state)
{
	(void)state;
	RtTensor t;
	RtError e = { 0 };
	int64_t dims[2] = { 1024, 1024 };
	rt_alloc_budget_begin(1 << 20);
	assert_int_equal(rt_tensor_alloc(&t, DT_F32, 2, dims, &e), -1);
	assert_int_equal(e.code, RT_ENOMEM);
	assert_non_null(strstr(e.msg, "past the allocation budget"));
	int64_t refused = rt_alloc_budget_end(NULL);
	assert_int_equal(refused, (int64_t)4 << 20);
	assert_int_equal(rt_tensor_alloc(&t, DT_F32, 2, dims, &e), 0);
	rt_tensor_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(budget_counts_held_bytes),
		cmocka_unit_test(tensor_past_budget_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
