/* testsuite/unit/test_arena.c: the bump allocator (ir/arena.c): zeroing, alignment, large
 * blocks, string copies, byte accounting. */
#include "shape_util.h"

static void test_alloc(void **st)
{
	Arena *a = arena_new();
	unsigned char *p = arena_alloc(a, 13);
	for (int i = 0; i < 13; i++)
		assert_int_equal(p[i], 0);
	void *q = arena_alloc(a, 1);
	assert_int_equal((uintptr_t)p % 16, 0);
	assert_int_equal((uintptr_t)q % 16, 0);
	assert_true((unsigned char *)q >= p + 16);
	assert_int_equal(arena_bytes(a), 32);
	arena_free(a);
}

static void test_large_and_many(void **st)
{
	Arena *a = arena_new();
	char *big = arena_alloc(a, 3u << 20);           /* larger than a chunk */
	big[(3u << 20) - 1] = 1;
	for (int i = 0; i < 10000; i++) {
		int *x = arena_alloc(a, 200);
		assert_int_equal(x[49], 0);
		x[49] = i;
	}
	assert_true(arena_bytes(a) >= (3u << 20) + 10000 * 208u);
	arena_free(a);
	arena_free(NULL);
}

static void test_strings(void **st)
{
	Arena *a = arena_new();
	const char *s = arena_strdup(a, "hello");
	assert_string_equal(s, "hello");
	assert_string_equal(arena_strndup(a, "abcdef", 3), "abc");
	assert_string_equal(arena_strdup(a, ""), "");
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc), cmocka_unit_test(test_large_and_many), cmocka_unit_test(test_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
