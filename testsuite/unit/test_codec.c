/* testsuite/unit/test_codec.c: cmocka tests of the compressed-collective codecs
 * (runtime/codec.h) against hand-worked vectors, spikes included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "runtime/codec.h"
#include "runtime/interp.h"

static void parse_specs(void **state)
{
	(void)state;
	RtCodec c;
	char why[128];
	assert_int_equal(rt_codec_parse("int5:b64:k2", &c, why, sizeof why), 0);
	assert_int_equal(c.bits, 5), assert_int_equal(c.block, 64), assert_int_equal(c.spikes, 2);
	assert_int_equal(rt_codec_parse("int4", &c, why, sizeof why), 0);
	assert_int_equal(c.block, 128), assert_int_equal(c.spikes, 0);
	assert_int_equal(rt_codec_parse("int9", &c, why, sizeof why), -1);
	assert_int_equal(rt_codec_parse("int4:b8:k5", &c, why, sizeof why), -1);
	assert_int_equal(rt_codec_parse("fp4", &c, why, sizeof why), -1);
	assert_int_equal(rt_codec_parse("int4:b", &c, why, sizeof why), -1);
}

/* int2, block 8, no spikes: x = 0 1 2 3 4 5 6 6: lo 0, hi 6, scale 2; codes rint(x/2) half to
 * even: 0 0 1 2 2 2 3 3 -> values 0 0 2 4 4 4 6 6.  Bytes: 8 + 2 (8 x 2 bits). */
static void int2_by_hand(void **state)
{
	(void)state;
	RtCodec c = { 2, 8, 0 };
	float x[8] = { 0, 1, 2, 3, 4, 5, 6, 6 }, y[8], want[8] = { 0, 0, 2, 4, 4, 4, 6, 6 };
	uint8_t buf[64];
	assert_int_equal(rt_codec_bytes(&c, 8), 10);
	assert_int_equal(rt_codec_encode(&c, x, 8, buf), 10);
	assert_int_equal(buf[8], 0x0 | 0x0 << 2 | 0x1 << 4 | 0x2 << 6);   /* codes 0 0 1 2 */
	assert_int_equal(buf[9], 0x2 | 0x2 << 2 | 0x3 << 4 | 0x3 << 6);   /* codes 2 2 3 3 */
	rt_codec_decode(&c, buf, 8, y);
	assert_memory_equal(y, want, sizeof want);
}

/* int5 (bit-split 4 + 1), block 8, 2 spikes: x = 100 0 1 2 3 4 -62 31.  Spikes: 100 (index 0)
 * and -62 (index 6), kept in bf16 exactly.  Others 0 1 2 3 4 31: lo 0, hi 31, scale 1, codes
 * = values.  Bytes: 8 + 2x4 + 4-bit plane 3 bytes + 1-bit plane 1 byte = 20. */
static void int5_spikes_by_hand(void **state)
{
	(void)state;
	RtCodec c = { 5, 8, 2 };
	float x[8] = { 100, 0, 1, 2, 3, 4, -62, 31 }, y[8];
	uint8_t buf[64];
	assert_int_equal(rt_codec_bytes(&c, 8), 20);
	assert_int_equal(rt_codec_encode(&c, x, 8, buf), 20);
	assert_int_equal(buf[8], 0), assert_int_equal(buf[9], 0);          /* spike index 0 */
	assert_int_equal(buf[10] | buf[11] << 8, 0x42c8);                  /* bf16 100 */
	assert_int_equal(buf[12], 6);                                       /* spike index 6 */
	assert_int_equal(buf[14] | buf[15] << 8, 0xc278);                  /* bf16 -62 */
	/* codes 0 1 2 3 4 31 -> high 4 bits 0 0 1 1 2 15, low bits 0 1 0 1 0 1 */
	assert_int_equal(buf[16], 0x00), assert_int_equal(buf[17], 0x11), assert_int_equal(buf[18], 0xf2);
	assert_int_equal(buf[19], 0x2a);                                    /* 0b101010 */
	rt_codec_decode(&c, buf, 8, y);
	assert_memory_equal(y, x, sizeof x);
}

/* A short last block, a constant block (scale 0) and the error bound scale/2 elsewhere. */
static void blocks_and_bound(void **state)
{
	(void)state;
	RtCodec c = { 3, 16, 1 };
	float x[40], y[40];
	for (int i = 0; i < 40; i++)
		x[i] = i < 16 ? 0.25f : (float)sin(i * 0.7) * (i == 30 ? 50 : 1);
	uint8_t buf[256];
	int64_t nb = rt_codec_bytes(&c, 40);
	assert_int_equal(rt_codec_encode(&c, x, 40, buf), nb);
	assert_true(nb < 40 * 4 / 2);
	rt_codec_decode(&c, buf, 40, y);
	assert_true(y[30] == x[30] || fabsf(y[30] - x[30]) <= fabsf(x[30]) / 256);   /* the spike, bf16 */
	for (int i = 0; i < 16; i++)
		assert_true(y[i] == 0.25f);
	for (int i = 16; i < 40; i++)
		if (i != 30)
			assert_true(fabsf(y[i] - x[i]) <= 2.0f / 7 / 2 * 1.001f);   /* scale <= 2/7 */
	x[20] = NAN;
	rt_codec_encode(&c, x, 40, buf);
	rt_codec_decode(&c, buf, 40, y);
	assert_true(isnan(y[20]));
}

/* rt_codec_error by hand: int4, p = 8: worst 9 / (2 x 15) = 0.3, rms sqrt(9/12)/15 = 0.057735.
 * rt_codec_work: n = 256, p = 8, f32: enc 256 x 9/8 = 288, dec 2 x 256 x 7/8 = 448 elements;
 * int4:b128:k2 puts 79 bytes per block on the wire (0.6171875 B/element), so bytes =
 * 736 x 4.6171875 = 3398.25; ops = 288 x (7 + 2 + 1) + 448 x (3 + 3) = 5568. */
static void error_and_work(void **state)
{
	(void)state;
	RtCodec c = { 4, 128, 2 };
	double worst, rms;
	rt_codec_error(&c, 8, &worst, &rms);
	assert_true(fabs(worst - 0.3) < 1e-15);
	assert_true(fabs(rms - sqrt(0.75) / 15) < 1e-15);
	assert_int_equal(rt_codec_bytes(&c, 256), 158);
	RtCodecWork w;
	rt_codec_work(&c, 256, 8, 4, &w);
	assert_true(w.enc_elems == 288 && w.dec_elems == 448);
	assert_true(fabs(w.bytes - 3398.25) < 1e-9);
	assert_true(w.ops == 5568);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_specs),
		cmocka_unit_test(int2_by_hand),
		cmocka_unit_test(int5_spikes_by_hand),
		cmocka_unit_test(blocks_and_bound),
		cmocka_unit_test(error_and_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
