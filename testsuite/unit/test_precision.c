/* testsuite/unit/test_precision.c: cmocka tests of the --precision vocabulary
 * (targets/precision.c): every word has its formats, the target's default applies without a
 * spec, the FP8 options resolve against the machine (Hopper promotes every 128, Blackwell
 * never; +nopromote turns block scales into per-tensor ones), node attributes map to matrix
 * formats, and every refusal names the spec and lists the valid words.  Run from the repository
 * root (AICC_MACHINES points at targets/machines). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ir/suggest.h"
#include "targets/target.h"

static Machine *load(const char *name)
{
	Machine *m = machine_load(name, stderr);
	assert_non_null(m);
	return m;
}

static void test_table(void **state)
{
	for (int i = 0; i < prec_nwords; i++) {
		const PrecWord *w = &prec_words[i];
		assert_ptr_equal(prec_word(w->name), w);
		assert_int_not_equal(w->mma, DT_INVALID);
		assert_non_null(w->what);
	}
	assert_null(prec_word("fp5"));
	assert_int_equal(prec_node_format("fp8"), DT_F8E4M3);
	assert_int_equal(prec_node_format("w4a16"), DT_BF16);
	assert_int_equal(prec_node_format("f8e4m3"), DT_F8E4M3);   /* @precision(f8e4m3): a dtype */
	assert_int_equal(prec_node_format("nonsense"), DT_INVALID);
	assert_int_equal(prec_node_format(NULL), DT_INVALID);
	assert_string_equal(prec_reference_spec("f64"), "f64");
	assert_string_equal(prec_reference_spec("fp8+graph"), "f32");
	assert_string_equal(prec_reference_spec(NULL), "f32");
}

static void test_fp8_options(void **state)
{
	Machine *h = load("h100-sxm"), *b = load("b200");
	Precision p;
	RtError e = { 0 };
	assert_int_equal(prec_parse(NULL, tgt_find("hopper"), h, &p, &e), 0);
	assert_false(p.given);
	assert_string_equal(p.spec, "bf16");
	assert_int_equal(prec_parse("fp8", tgt_find("hopper"), h, &p, &e), 0);
	assert_true(p.given);
	assert_int_equal(p.promote, 128);
	assert_int_equal(p.scale, PREC_SCALE_128X128);
	assert_true(p.fp8_kernel);
	assert_int_equal(p.fp8_blk[0][0], 1);
	assert_int_equal(p.fp8_blk[0][1], 128);
	assert_int_equal(prec_parse("fp8+nopromote", tgt_find("hopper"), h, &p, &e), 0);
	assert_int_equal(p.promote, -1);
	assert_int_equal(p.scale, PREC_SCALE_TENSOR);
	assert_int_equal(p.fp8_blk[1][0], 0);
	assert_int_equal(prec_parse("fp8+1x128+graph", tgt_find("hopper"), h, &p, &e), 0);
	assert_true(p.graph);
	assert_int_equal(p.fp8_blk[1][0], 128);   /* weights per 128x1 column tile */
	assert_int_equal(p.fp8_blk[1][1], 1);
	assert_int_equal(prec_parse("fp8+nopromote", tgt_find("blackwell"), b, &p, &e), 0);
	assert_int_equal(p.promote, 0);            /* f32 accumulation: nothing to promote */
	assert_int_equal(p.scale, PREC_SCALE_128X128);
	assert_int_equal(prec_parse("fp8+nopromote+128x128", tgt_find("hopper"), h, &p, &e), -1);
	assert_non_null(strstr(e.msg, "+nopromote needs +tensor"));
	machine_free(h);
	machine_free(b);
}

static void test_refusals(void **state)
{
	Machine *r = load("reference"), *t = load("tpu-8i");
	Precision p;
	RtError e = { 0 };
	assert_int_equal(prec_parse("bf16", tgt_find("reference"), r, &p, &e), -1);
	assert_string_equal(e.msg, "aicc: error: --precision 'bf16': target reference does not take bf16; "
			    "valid for target reference on machine reference: f32 f64");
	assert_int_equal(prec_parse("fp44", tgt_find("tpu"), t, &p, &e), -1);
	assert_non_null(strstr(e.msg, "unknown format 'fp44' (did you mean 'fp4'?)"));
	assert_non_null(strstr(e.msg, "valid for target tpu on machine tpu-8i: bf16 fp8 fp4"));
	assert_int_equal(prec_parse("int8", tgt_find("tpu"), t, &p, &e), -1);
	assert_non_null(strstr(e.msg, "does not support i8"));
	assert_int_equal(prec_parse("fp4", tgt_find("tpu"), t, &p, &e), 0);
	assert_int_equal(p.word->mma, DT_F4E2M1);
	/* no target (a compile that builds no plan): only the machine's device is checked */
	assert_int_equal(prec_parse("bf16+graph", NULL, t, &p, &e), 0);
	assert_int_equal(prec_parse("bf16+fast", NULL, t, &p, &e), -1);
	assert_non_null(strstr(e.msg, "unknown option '+fast'"));
	char buf[64];
	memset(buf, 'x', sizeof buf);
	buf[sizeof buf - 1] = 0;
	char spec[200];
	snprintf(spec, sizeof spec, "%s%s", buf, buf);
	assert_int_equal(prec_parse(spec, NULL, t, &p, &e), -1);
	machine_free(r);
	machine_free(t);
}

/* diag_nearest / diag_suggest (ir/suggest.h): prefixes and shared stems are near, unrelated
 * names are not, ties go to the first; the valid list is always given and truncated with "...". */
static void test_suggest(void **state)
{
	(void)state;
	static const char *const machines[] = { "a100-sxm", "b200", "h100-sxm", "h200-sxm" };
	static const char *const passes[] = { "dce", "fuse", "fold", "partition" };
	static const char *const targets[] = { "reference", "hopper", "tpu", "lpu" };
	assert_string_equal(diag_nearest("h100", machines, 4), "h100-sxm");      /* a prefix */
	assert_string_equal(diag_nearest("h100-sx", machines, 4), "h100-sxm");
	assert_string_equal(diag_nearest("fusion", passes, 4), "fuse");          /* stem "fus" */
	assert_string_equal(diag_nearest("fusee", passes, 4), "fuse");
	assert_string_equal(diag_nearest("hoper", targets, 4), "hopper");
	assert_null(diag_nearest("nope", targets, 4));
	assert_null(diag_nearest("x", targets, 4));                              /* 1 edit, 1 char */
	assert_int_equal(diag_distance("kitten", "sitting"), 3);
	char buf[64];
	diag_suggest(buf, sizeof buf, "hoper", targets, 4);
	assert_string_equal(buf, " (did you mean 'hopper'?; valid: reference, hopper, tpu, lpu)");
	diag_suggest(buf, sizeof buf, "nope", targets, 4);
	assert_string_equal(buf, " (valid: reference, hopper, tpu, lpu)");
	diag_suggest(buf, 20, "nope", targets, 4);
	assert_string_equal(buf, " (valid: refere...)");     /* 19 characters and the NUL */
}

int main(void)
{
	setenv("AICC_MACHINES", "targets/machines", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_fp8_options),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_suggest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
