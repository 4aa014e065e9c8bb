/* testsuite/unit/test_instr.c: tgt_ann_put (targets/instr.c), whose values skip printf for the
 * conversions annotations use (%s %c %d %lld %% and %.Ng / %.Nf, mixed with text, the digits of
 * doubles through a cache keyed by conversion and bits): each must read exactly as snprintf
 * writes it, truncation included; other formats go through vsnprintf. */
#include <inttypes.h>
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

/* Formats with several conversions and text, as the GPU lowering writes them; one value at
 * several precisions in a row (the digit cache must tell them apart); and long outputs cut
 * where snprintf cuts them. */
static void test_compound_formats_match_snprintf(void **state)
{
	(void)state;
	uint64_t x = 0x13198A2E03707344u;
	char want[256], txt[300];
	memset(txt, 'y', sizeof txt - 1);
	txt[sizeof txt - 1] = 0;
	for (int i = 0; i < 20000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double v = ldexp((double)(x >> 11), (int)(x % 90) - 60) * (x & 4 ? -1 : 1), w = (double)(x % 1000) / 8;
		int a = (int)(x % 4096) - 100;
		long long b = (long long)(x >> 3) * (x & 8 ? -1 : 1);
		TgtAnn t = { 0 };
		tgt_ann_put(&t, "a", "operands %.3g MB fit in %.3g MB: read once", v, w);
		snprintf(want, sizeof want, "operands %.3g MB fit in %.3g MB: read once", v, w);
		assert_string_equal(t.val[0], want);
		tgt_ann_put(&t, "b", "raster along %c in groups of %d tile %s (wave %.4g MB): A x%.0f, %lld%%", 'M' + (i & 1), a,
			    i & 1 ? "rows" : "cols", v, w, b);
		snprintf(want, sizeof want, "raster along %c in groups of %d tile %s (wave %.4g MB): A x%.0f, %lld%%", 'M' + (i & 1),
			 a, i & 1 ? "rows" : "cols", v, w, b);
		assert_string_equal(t.val[1], want);
		tgt_ann_put(&t, "c", "%.2g", v);
		snprintf(want, sizeof want, "%.2g", v);
		assert_string_equal(t.val[2], want);
		tgt_ann_put(&t, "d", "%.6f", v);
		snprintf(want, sizeof want, "%.6f", v);
		assert_string_equal(t.val[3], want);
		tgt_ann_put(&t, "e", "%s and %.9f", txt + (x % 200), v * 1e30);   /* past the value's 223 characters */
		snprintf(want, sizeof want, "%s and %.9f", txt + (x % 200), v * 1e30);
		want[sizeof t.val[0] - 1] = 0;
		assert_string_equal(t.val[4], want);
	}
	TgtAnn t = { 0 };
	tgt_ann_put(&t, "w", "%5.2f|%x", 3.14159, 255u);           /* flags, width, %x: vsnprintf */
	assert_string_equal(t.val[0], " 3.14|ff");
	char got[16];
	static const int64_t i64s[] = { 0, -5, INT64_MAX, INT64_MIN, 1234567890123 };
	for (size_t i = 0; i < sizeof i64s / sizeof i64s[0]; i++) {   /* tgt_fmt, PRId64, truncation */
		tgt_fmt(got, sizeof got, "c%" PRId64 "-%s", i64s[i], "end");
		snprintf(want, sizeof got, "c%" PRId64 "-%s", i64s[i], "end");
		assert_string_equal(got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_formats_match_snprintf),
		cmocka_unit_test(test_strings_keys_and_other_formats),
		cmocka_unit_test(test_compound_formats_match_snprintf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
