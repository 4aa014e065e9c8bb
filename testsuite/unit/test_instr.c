/* testsuite/unit/test_instr.c: tgt_ann_put (targets/instr.c), whose one-conversion values
 * ("%.4g", "%d", "%lld", "%s", "%.Nf") skip printf: each must read exactly as snprintf writes
 * it, truncation included; other formats go through vsnprintf. */
#include <limits.h>
#include <math.h>

#include "shape_util.h"
#include "targets/target.h"

static void check_double(const char *fmt, double v)
{
	TgtAnn t = { 0 };
	char want[256];
	tgt_ann_put(&t, "k", fmt, v);
	snprintf(want, sizeof want, fmt, v);
	assert_string_equal(t.val[0], want);
}

static void test_simple_formats_match_snprintf(void **state)
{
	(void)state;
	uint64_t x = 0x243F6A8885A308D3u;
	static const char *const fmts[] = { "%.4g", "%.3g", "%.0f", "%.4f", "%.1g" };
	for (int i = 0; i < 50000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double v = ldexp((double)(x >> 11), (int)(x % 100) - 80) * (x & 2 ? -1 : 1);
		check_double(fmts[i % 5], v);
	}
	check_double("%.4g", NAN), check_double("%.4g", -INFINITY), check_double("%.0f", 2.5), check_double("%.4g", -0.0);
	static const int ints[] = { 0, -1, 7, INT_MAX, INT_MIN, 1000000 };
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		TgtAnn t = { 0 };
		char want[32];
		tgt_ann_put(&t, "k", "%d", ints[i]);
		snprintf(want, sizeof want, "%d", ints[i]);
		assert_string_equal(t.val[0], want);
	}
	static const long long lls[] = { 0, -42, LLONG_MAX, LLONG_MIN };
	for (size_t i = 0; i < sizeof lls / sizeof lls[0]; i++) {
		TgtAnn t = { 0 };
		char want[32];
		tgt_ann_put(&t, "k", "%lld", lls[i]);
		snprintf(want, sizeof want, "%lld", lls[i]);
		assert_string_equal(t.val[0], want);
	}
}

static void test_strings_keys_and_other_formats(void **state)
{
	(void)state;
	TgtAnn t = { 0 };
	char big[600];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	tgt_ann_put(&t, "s", "%s", big);                       /* truncated as snprintf truncates */
	assert_int_equal(strlen(t.val[0]), sizeof t.val[0] - 1);
	tgt_ann_put(&t, "a_key_longer_than_the_key_field_holds", "%dx%d", 3, 4);
	assert_int_equal(strlen(t.key[1]), sizeof t.key[0] - 1);
	assert_string_equal(t.val[1], "3x4");
	assert_string_equal(t.kv[1].val, "3x4");
	tgt_ann_put(&t, "pct", "%d%%", 5);
	assert_string_equal(t.val[2], "5%");
	assert_int_equal(t.n, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_formats_match_snprintf),
		cmocka_unit_test(test_strings_keys_and_other_formats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
