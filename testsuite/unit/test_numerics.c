/* testsuite/unit/test_numerics.c: cmocka tests of runtime/numerics.h and runtime/random.h.
 *
 * Exhaustive decode -> encode round trips for every code of every 4/6/8/16/19-bit format,
 * monotonicity of each grid, the numerics.md §11 cross-check examples, rt_round of integer
 * dtypes (ONNX-style), rt_round_tensor on rows of block formats, and the determinism of the
 * seeded initialisers (fixed expected bits).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/numerics.h"
#include "runtime/numerics_impl.h"
#include "runtime/random.h"

static uint32_t fbits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }

/* Every code decodes and re-encodes to itself, except NaN codes (which map to the canonical
 * NaN) and, without saturation, nothing else; decoded grids are strictly increasing. */
static void roundtrip(DType dt, int bits)
{
	uint32_t n = 1u << bits, sign = n >> 1;
	float prev = -INFINITY;
	for (uint32_t c = 0; c < n; c++) {
		float v = rt_decode(dt, c);
		uint32_t back = rt_encode(dt, v, 0);
		if (isnan(v)) {
			assert_true(isnan(rt_decode(dt, back)));
			continue;
		}
		assert_int_equal(back, c);
		if (!isinf(v))    /* finite values encode alike in both modes */
			assert_int_equal(rt_encode(dt, v, 1), c);
		if (c < sign) {   /* positive half ascending */
			assert_true(v > prev || (c == 0 && v == 0));
			prev = v;
		}
		if (c >= sign && !isinf(v))
			assert_true(fbits(v) == (fbits(rt_decode(dt, c - sign)) ^ 0x80000000u));
	}
}

static void test_roundtrip_all(void **s)
{
	(void)s;
	roundtrip(DT_F4E2M1, 4);
	roundtrip(DT_F6E3M2, 6);
	roundtrip(DT_F6E2M3, 6);
	roundtrip(DT_F8E4M3, 8);
	roundtrip(DT_F8E5M2, 8);
	roundtrip(DT_F16, 16);
	roundtrip(DT_BF16, 16);
	roundtrip(DT_TF32, 19);
	for (uint32_t c = 0; c < 255; c++)   /* E8M0: 2^(c-127) */
		assert_int_equal(rt_encode(DT_E8M0, rt_decode(DT_E8M0, c), 0), c);
	assert_true(isnan(rt_decode(DT_E8M0, 0xFF)));
}

/* numerics.md §1 table and §11 rows 1-6. */
static void test_cross_checks(void **s)
{
	(void)s;
	assert_int_equal(rt_encode(DT_F8E4M3, 30, 1), 0x5F);          /* 0 1011 111 */
	assert_int_equal(rt_encode(DT_F8E4M3, -24, 1), 0xDC);         /* 1 1011 100 */
	assert_int_equal(rt_encode(DT_F8E5M2, 32, 1), 0x50);          /* 0 10100 00 */
	assert_int_equal(rt_encode(DT_F8E5M2, -24, 1), 0xCE);         /* 1 10011 10 */
	assert_int_equal(rt_encode(DT_F8E4M3, 448, 0), 0x7E);
	assert_true(rt_round(DT_F8E4M3, 464, 0) == 448);
	assert_true(isnan(rt_round(DT_F8E4M3, 465, 0)));
	assert_true(rt_round(DT_F8E4M3, 465, 1) == 448);
	assert_true(rt_round(DT_F8E5M2, 61439, 0) == 57344);
	assert_true(isinf(rt_round(DT_F8E5M2, 61440, 0)));
	assert_true(rt_decode(DT_F8E4M3, 0x7E) == 448 && rt_decode(DT_F8E4M3, 0x08) == 0x1p-6f);
	assert_true(rt_decode(DT_F8E4M3, 0x01) == 0x1p-9f && isnan(rt_decode(DT_F8E4M3, 0xFF)));
	assert_true(rt_decode(DT_F8E5M2, 0x7B) == 57344 && rt_decode(DT_F8E5M2, 0x01) == 0x1p-16f);
	assert_true(isinf(rt_decode(DT_F8E5M2, 0xFC)) && rt_decode(DT_F8E5M2, 0xFC) < 0);
	assert_true(rt_decode(DT_F6E3M2, 0x1F) == 28 && rt_decode(DT_F6E3M2, 0x01) == 0.0625f);
	assert_true(rt_decode(DT_F6E2M3, 0x1F) == 7.5f && rt_decode(DT_F6E2M3, 0x01) == 0.125f);
	static const float fp4[8] = { 0, 0.5f, 1, 1.5f, 2, 3, 4, 6 };
	for (int c = 0; c < 8; c++) {
		assert_true(rt_decode(DT_F4E2M1, c) == fp4[c]);
		assert_true(rt_decode(DT_F4E2M1, c | 8) == -fp4[c]);
	}
	assert_int_equal(fbits(rt_decode(DT_F4E2M1, 8)), 0x80000000u);   /* 0x8 is -0 */
	static const float ties[][2] = { { 0.25f, 0 }, { 0.75f, 1 }, { 1.25f, 1 }, { 1.75f, 2 },
					 { 2.5f, 2 }, { 3.5f, 4 }, { 5, 4 } };
	for (int i = 0; i < 7; i++)
		assert_true(rt_round(DT_F4E2M1, ties[i][0], 1) == ties[i][1]);
	assert_true(rt_decode(DT_E8M0, 0x82) == 8 && rt_decode(DT_E8M0, 135) == 256);
	assert_true(rt_decode(DT_E8M0, 142) == 32768 && rt_decode(DT_E8M0, 0) == 0x1p-127f);
	assert_true(rt_decode(DT_E8M0, 0xFE) == 0x1p127f);
	assert_true(rt_decode(DT_F16, 0x7BFF) == 65504 && rt_decode(DT_F16, 1) == 0x1p-24f);
	assert_true(rt_decode(DT_BF16, 0x7F7F) == 0x1.fep127f && rt_decode(DT_BF16, 1) == 0x1p-133f);
}

/* BF16 against the integer trick of numerics.md §2 on pseudo-random bit patterns. */
static void test_bf16_trick(void **s)
{
	(void)s;
	for (uint64_t j = 0; j < 200000; j++) {
		uint32_t u = (uint32_t)rt_rand_u64(1, 2, j);
		float x;
		memcpy(&x, &u, 4);
		if (isnan(x))
			continue;
		uint32_t want = (u + 0x7FFF + ((u >> 16) & 1)) >> 16;
		assert_int_equal(rt_encode(DT_BF16, x, 0), want);
	}
}

/* rt_round_tensor's bf16 block loop gives rt_round's bits element by element (NaN kept as is,
 * the largest finite values to Inf, or to +-max when saturating). */
static void test_bf16_block_round(void **s)
{
	(void)s;
	enum { N = 4099 };
	static float x[N], y[N];
	for (int j = 0; j < N; j++) {
		uint32_t u = (uint32_t)rt_rand_u64(3, 4, (uint64_t)j);
		if (j % 7 == 0)
			u = (u & 0x80000000u) | 0x7F7F8000u | (u & 0x7FFFu);   /* near bf16's largest finite */
		memcpy(&x[j], &u, 4);
	}
	x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = -0.0f, x[4] = 0x1p-149f;
	for (int sat = 0; sat < 2; sat++) {
		QuantOpts o = { SCALE_FLOOR, sat, 0 };
		memcpy(y, x, sizeof y);
		rt_round_tensor(DT_BF16, y, N, N, &o);
		for (int j = 0; j < N; j++) {
			float want = isnan(x[j]) ? x[j] : rt_round(DT_BF16, x[j], sat);
			uint32_t a, b;
			memcpy(&a, &y[j], 4), memcpy(&b, &want, 4);
			if (a != b)
				fail_msg("%d: %a -> %08x, want %08x (sat %d)", j, x[j], a, b, sat);
		}
	}
}

static void test_int_round(void **s)
{
	(void)s;
	assert_true(rt_round(DT_I8, 2.5f, 0) == 2 && rt_round(DT_I8, -3.5f, 0) == -4);
	assert_true(rt_round(DT_I8, 300, 0) == 127 && rt_round(DT_I8, -300, 0) == -128);
	assert_true(rt_round(DT_I4, 9, 0) == 7 && rt_round(DT_I4, -9, 0) == -8);
	assert_true(rt_round(DT_U8, -1, 0) == 0 && rt_round(DT_U8, 255.5f, 0) == 255);
	assert_true(rt_round(DT_I32, NAN, 0) == 0);
	assert_true(rt_round(DT_BOOL, NAN, 0) == 1 && rt_round(DT_BOOL, -0.0f, 0) == 0);
	assert_true(rt_round(DT_F32, 0.1f, 0) == 0.1f);
	assert_true(isnan(rt_round(DT_F4E2M1, NAN, 1)));
}

static void test_blocks(void **s)
{
	(void)s;
	float x[40], d[40], ts = 0;
	uint8_t c[40], sc[3];
	for (int i = 0; i < 40; i++)
		x[i] = (float)(i - 20) * 0.25f;
	QuantOpts o = { SCALE_FLOOR, 1, 0 };
	assert_int_equal(rt_quantize_blocks(DT_MXFP4, x, 40, &o, d, c, sc, &ts), 0);
	assert_int_equal(sc[0], 127 + 2 - 2);   /* amax 5: floor(log2 5) = 2, emax 2 */
	assert_int_equal(sc[1], 127 + 2 - 2);   /* block 1 [3, 4.75]: amax 4.75 */
	assert_true(ts == 1.0f);
	assert_int_equal(rt_quantize_blocks(DT_F16, x, 40, &o, d, c, sc, &ts), -1);
	/* rt_round_tensor: two rows of 20, blocks restart per row */
	float y[40];
	memcpy(y, x, sizeof y);
	rt_round_tensor(DT_MXFP8, y, 40, 20, &o);
	for (int r = 0; r < 2; r++) {
		rt_quantize_blocks(DT_MXFP8, x + 20 * r, 20, &o, d, NULL, NULL, NULL);
		assert_memory_equal(y + 20 * r, d, 20 * sizeof(float));
	}
	/* nvfp4 in place equals out of place; NaN is refused */
	memcpy(y, x, sizeof y);
	rt_round_tensor(DT_NVFP4, y, 40, 40, &o);
	rt_quantize_blocks(DT_NVFP4, x, 40, &o, d, c, sc, &ts);
	assert_memory_equal(y, d, sizeof y);
	x[3] = NAN;
	assert_int_equal(rt_quantize_blocks(DT_NVFP4, x, 40, &o, d, c, sc, &ts), -1);
	assert_true(isnan(d[0]) && isnan(ts));
	/* integers */
	float g[4] = { 7, 1, 3.5f, -1.75f }, gd[4], gs[2];
	int32_t gc[4];
	assert_int_equal(rt_quantize_int(4, 0, g, 4, 2, gd, gc, gs, NULL), 0);
	assert_int_equal(gc[3], 0xC);
	assert_true(gs[1] == 0.5f && gd[3] == -2.0f);
}

/* Every MX format's dequantized values are its element codes decoded (rt_decode, the one
 * decoder) times the block's scale 2^(code - 127), bit for bit, over inputs spanning 2^-120 to
 * 2^120 (so scales reach float32's subnormal range and elements their own), both scale rules. */
static void test_mx_values(void **s)
{
	(void)s;
	enum { N = 4096 };
	static float x[N], d[N];
	static uint8_t c[N], sc[N / 32];
	static const DType mx[][2] = {
		{ DT_MXFP8, DT_F8E4M3 }, { DT_MXFP8E5M2, DT_F8E5M2 }, { DT_MXFP6, DT_F6E3M2 },
		{ DT_MXFP6E2M3, DT_F6E2M3 }, { DT_MXFP4, DT_F4E2M1 }, { DT_MXINT8, DT_I8 },
	};
	rt_fill_normal(x, N, 0.0f, 1.0f, 3, 0);
	for (int i = 0; i < N; i++)   /* each block its own binade; every 7th element tiny */
		x[i] = ldexpf(x[i], (i / 32) % 241 - 120 - (i % 7 == 0 ? 20 : 0));
	for (int r = 0; r < 2; r++) {
		QuantOpts o = { r ? SCALE_RCEIL : SCALE_FLOOR, 1, 0 };
		for (size_t f = 0; f < sizeof mx / sizeof mx[0]; f++) {
			assert_int_equal(rt_quantize_blocks(mx[f][0], x, N, &o, d, c, sc, NULL), 0);
			for (int i = 0; i < N; i++) {
				assert_true(sc[i / 32] != 0xFF);
				float e = mx[f][1] == DT_I8 ? (float)(int8_t)c[i] / 64.0f
							    : rt_decode(mx[f][1], c[i]);
				assert_int_equal(fbits(d[i]), fbits(e * ldexpf(1.0f, sc[i / 32] - 127)));
			}
		}
	}
}

/* The initialisers are pinned: these bits must never change (they seed users' models). */
/* dtype.def's columns agree with the codecs and with ONNX: every scalar float with a codec has
 * sig = trailing mantissa bits + 1, f32/f64 have IEEE's 24/53, and ONNX codes map back to the
 * same dtype (E8M0 included: it was missing from one hand-kept copy). */
static void test_dtype_columns(void **s)
{
	(void)s;
	for (int d = 1; d < DT_COUNT; d++) {
		const DTypeInfo *t = &rt_dtypes[d];
		const FmtDesc *f = rt_fmt_desc((DType)d);
		if (f)
			assert_int_equal(t->sig, f->M + 1);
		if (t->kind != K_FLOAT)
			assert_int_equal(t->sig, 0);
		if (t->onnx)
			assert_int_equal(rt_dtype_from_onnx(t->onnx), d);
	}
	assert_int_equal(rt_dtypes[DT_F32].sig, 24);
	assert_int_equal(rt_dtypes[DT_F64].sig, 53);
	assert_int_equal(rt_dtype_from_onnx(24), DT_E8M0);
	assert_int_equal(rt_dtype_from_onnx(17), DT_F8E4M3);
	assert_int_equal(rt_dtype_from_onnx(8), DT_INVALID);     /* STRING */
	assert_int_equal(rt_dtype_from_onnx(0), DT_INVALID);
	assert_int_equal(rt_dtype_from_onnx(-1), DT_INVALID);
}

static void test_random(void **s)
{
	(void)s;
	float a[64], b[64];
	rt_fill_normal(a, 64, 0, 1, 42, 0);
	rt_fill_normal(b, 64, 0, 1, 42, 0);
	assert_memory_equal(a, b, sizeof a);
	rt_fill_normal(b, 64, 0, 1, 42, 1);
	assert_memory_not_equal(a, b, sizeof a);
	float big[1000], mean = 0, var = 0;
	rt_fill_normal(big, 1000, 0, 1, 7, 3);
	for (int i = 0; i < 1000; i++)
		mean += big[i];
	mean /= 1000;
	for (int i = 0; i < 1000; i++)
		var += (big[i] - mean) * (big[i] - mean);
	var /= 1000;
	assert_true(fabsf(mean) < 0.1f && fabsf(var - 1) < 0.1f);
	rt_fill_uniform(b, 64, -1, 1, 42, 0);
	for (int i = 0; i < 64; i++)
		assert_true(b[i] >= -1 && b[i] < 1);
	/* pinned; cross-checked with an independent Python splitmix64 and libm Box-Muller */
	assert_int_equal(rt_rand_u64(0, 0, 0), 0xB496C2B5E3E06D5Bull);
	assert_true(a[0] == 0x1.27f6d2p-1f && a[1] == 0x1.85a65cp-1f);
}

/* MX element codes against enc_core, the one float32 -> format conversion, element by element
 * at each block's own scale (k = scale code - 127), and the values against decode * 2^k: blocks
 * of every magnitude (float32 subnormals in some, zeros, signed zeros), mantissas at and next to
 * every rounding tie, both scale rules.  The block quantizer takes a branch-free copy of the
 * conversion for blocks without float32 subnormals; this is what holds it to the same bits. */
static void test_mx_codes_match_enc_core(void **state)
{
	enum { NB = 4096, BL = 32, N = NB * BL };
	static float x[N], d[N];
	static uint8_t c[N], sc[NB];
	uint64_t r = 0x9E3779B97F4A7C15ull;
#define NEXT() (r ^= r << 13, r ^= r >> 7, r ^= r << 17, r)
	for (int b = 0; b < NB; b++) {
		int base = (int)(NEXT() % 255), spread = b % 3 ? 12 : 40;   /* exponent field of the block's top */
		for (int i = 0; i < BL; i++) {
			uint64_t v = NEXT();
			int e = base - (int)(v % (uint64_t)spread);
			uint32_t man = (uint32_t)(v >> 8) & 0x7FFFFFu;
			if (v % 4 == 0) {   /* a tie or a neighbour of one at bit j */
				int j = (int)((v >> 40) % 23);
				man = (man & ~((2u << j) - 1)) | (1u << j);
				man += (uint32_t)((v >> 50) % 3) - 1;
				man &= 0x7FFFFFu;
			}
			uint32_t u = ((uint32_t)(v >> 63) << 31) | ((uint32_t)(e < 0 ? 0 : e) << 23) | man;
			if (v % 29 == 0)
				u &= 0x80000000u;   /* a signed zero */
			memcpy(&x[b * BL + i], &u, 4);
		}
	}
	static const struct { DType dt; const FmtDesc *f; } fs[] = {
		{ DT_MXFP8, &rt_fmt_e4m3 }, { DT_MXFP8E5M2, &rt_fmt_e5m2 }, { DT_MXFP6, &rt_fmt_e3m2 },
		{ DT_MXFP6E2M3, &rt_fmt_e2m3 }, { DT_MXFP4, &rt_fmt_e2m1 },
	};
	for (size_t f = 0; f < sizeof fs / sizeof fs[0]; f++)
		for (int rule = 0; rule < 2; rule++) {
			QuantOpts o = { rule ? SCALE_RCEIL : SCALE_FLOOR, 1, BL };
			assert_int_equal(rt_quantize_blocks(fs[f].dt, x, N, &o, d, c, sc, NULL), 0);
			const FmtDesc *g = fs[f].f;
			for (int i = 0; i < N; i++) {
				if (sc[i / BL] == 0xFF)
					continue;
				int k = (int)sc[i / BL] - 127;
				uint32_t want = enc_core(fbits(x[i]), k, g->M, g->emin, g->maxmag, g->infmag, g->nanmag, g->bits, 1);
				float wd = rt_fmt_decode(g, want) * ldexpf(1.0f, k);
				if (c[i] != want || fbits(d[i]) != fbits(wd))
					fail_msg("format %zu rule %d element %d (%a, k %d): code 0x%x value %a, enc_core 0x%x %a", f,
						 rule, i, x[i], k, c[i], d[i], want, wd);
			}
		}
#undef NEXT
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all),
		cmocka_unit_test(test_cross_checks),
		cmocka_unit_test(test_bf16_trick),
		cmocka_unit_test(test_bf16_block_round),
		cmocka_unit_test(test_int_round),
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_mx_values),
		cmocka_unit_test(test_mx_codes_match_enc_core),
		cmocka_unit_test(test_dtype_columns),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
