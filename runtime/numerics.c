/* runtime/numerics.c: bit-exact scalar number formats (encode, decode, round) and rt_round_tensor.
 *
 * Every float format here is sign / exponent / trailing mantissa with subnormals, described by a
 * FmtDesc row (numerics.md §1).  Conversion from float32 is one integer routine, enc_core: it
 * reads the float32 bits, computes the quotient by the target ulp and rounds it to nearest, ties
 * to even (numerics.md §2), all in integer arithmetic, so no float operation can double-round.
 * The magnitude code is ((e - emin) << M) + q, which lets a carry out of the mantissa roll into
 * the exponent field exactly as the encoding does.  Overflow is judged after rounding (§2:
 * E4M3 464 -> 448, 465 -> NaN non-saturating).  Block formats live in runtime/quant.c.
 * Requires runtime/rt.h; provides the scalar half of runtime/numerics.h and numerics_impl.h.
 */
#include "runtime/numerics.h"
#include "runtime/numerics_impl.h"

#include <math.h>
#include <string.h>

/* Rows: mantissa bits, emin, largest finite magnitude code, Inf code (0: none), NaN code
 * (0: none), code width.  Values from numerics.md §1 table; tf32 is 1.8.10 (19 bits). */
const FmtDesc rt_fmt_f16    = { 10, -14,  0x7BFF,  0x7C00,  0x7FFF, 16 };
const FmtDesc rt_fmt_bf16   = {  7, -126, 0x7F7F,  0x7F80,  0x7FFF, 16 };
const FmtDesc rt_fmt_tf32   = { 10, -126, 0x3FBFF, 0x3FC00, 0x3FFFF, 19 };
const FmtDesc rt_fmt_e4m3   = {  3, -6,   0x7E,    0,       0x7F,   8 };
const FmtDesc rt_fmt_e5m2   = {  2, -14,  0x7B,    0x7C,    0x7F,   8 };
const FmtDesc rt_fmt_e3m2   = {  2, -2,   0x1F,    0,       0,      6 };
const FmtDesc rt_fmt_e2m3   = {  3, 0,    0x1F,    0,       0,      6 };
const FmtDesc rt_fmt_e2m1   = {  1, 0,    0x7,     0,       0,      4 };

const FmtDesc *rt_fmt_desc(DType d)
{
	switch (d) {
	case DT_F16: return &rt_fmt_f16;
	case DT_BF16: return &rt_fmt_bf16;
	case DT_TF32: return &rt_fmt_tf32;
	case DT_F8E4M3: return &rt_fmt_e4m3;
	case DT_F8E5M2: return &rt_fmt_e5m2;
	case DT_F6E3M2: return &rt_fmt_e3m2;
	case DT_F6E2M3: return &rt_fmt_e2m3;
	case DT_F4E2M1: return &rt_fmt_e2m1;
	default: return NULL;
	}
}

/* 2^k as a float for k in [-149, 127] (subnormal powers of two included); the products with
 * small integers above are exact. */
static float pow2f(int k)
{
	return rt_bits_f32(k >= -126 ? (uint32_t)(k + 127) << 23 : 1u << (k + 149));
}

uint32_t rt_fmt_encode(const FmtDesc *f, float x, int sat)
{
	return enc_core(rt_f32_bits(x), 0, f->M, f->emin, f->maxmag, f->infmag, f->nanmag,
			f->bits, sat);
}

/* Decoding: biased exponent field e = mag >> M stands for 2^(emin + e - 1) with a hidden 1,
 * e = 0 for subnormals m * 2^(emin - M) (numerics.md §1). */
float rt_fmt_decode(const FmtDesc *f, uint32_t code)
{
	uint32_t signbit = 1u << (f->bits - 1);
	uint32_t mag = code & (signbit - 1);
	int neg = (code & signbit) != 0;
	float v;
	if (f->infmag && mag == f->infmag)
		v = INFINITY;
	else if ((f->infmag && mag > f->infmag) || (f->nanmag && mag > f->maxmag))
		return NAN;
	else {
		uint32_t e = mag >> f->M, m = mag & ((1u << f->M) - 1);
		if (e == 0)
			v = (float)m * pow2f(f->emin - f->M);
		else
			v = (float)(m | (1u << f->M)) * pow2f(f->emin + (int)e - 1 - f->M);
	}
	return neg ? -v : v;
}

/* E8M0: code c is 2^(c-127), 0xFF NaN, no zero, no sign (numerics.md §1, OCP MX v1.0 §5.4.1).
 * [choice] Rounding to nearest with ties (1.5 * 2^k) to the even code, the IEEE rule for a
 * format with no mantissa bits.  Values below 2^-127, zero included, give 0x00 (there is no
 * zero); negative values and NaN give 0xFF; +Inf gives 0xFE when saturating, else 0xFF. */
static uint32_t e8m0_encode(float x, int sat)
{
	uint32_t u = rt_f32_bits(x);
	if (u == 0x80000000u)
		return 0x00;
	if (x != x || (u >> 31))
		return 0xFF;
	if (u >= 0x7F800000u)
		return sat ? 0xFE : 0xFF;
	if (u < 0x00400000u)  /* below 2^-127: nearest representable is 2^-127 */
		return 0x00;
	int E = (int)(u >> 23);
	uint32_t m = u & 0x7FFFFF;
	int c;
	if (E == 0) {  /* subnormal f32 in [2^-127, 2^-126): m in [2^22, 2^23) */
		c = 0;
		m = (m - 0x400000u) << 1;  /* fraction above 2^-127 */
	} else
		c = E;
	/* value = 2^(c-127) * (1 + m/2^23): round the fraction to 0 or 1 */
	if (m > 0x400000u || (m == 0x400000u && (c & 1)))
		c++;
	if (c > 0xFE)
		return sat ? 0xFE : 0xFF;
	return (uint32_t)c;
}

static float e8m0_decode(uint32_t c)
{
	c &= 0xFF;
	return c == 0xFF ? NAN : ldexpf(1.0f, (int)c - 127);
}

uint32_t rt_encode(DType fmt, float x, int saturate)
{
	const FmtDesc *f = rt_fmt_desc(fmt);
	if (f)
		return rt_fmt_encode(f, x, saturate);
	if (fmt == DT_F32)
		return rt_f32_bits(x);
	if (fmt == DT_E8M0)
		return e8m0_encode(x, saturate);
	return 0;
}

float rt_decode(DType fmt, uint32_t code)
{
	const FmtDesc *f = rt_fmt_desc(fmt);
	if (f)
		return rt_fmt_decode(f, code);
	if (fmt == DT_F32)
		return rt_bits_f32(code);
	if (fmt == DT_E8M0)
		return e8m0_decode(code);
	return NAN;
}

/* Float to integer as ONNX Cast / QuantizeLinear with a saturating target: round half to even,
 * clamp to the type's range, NaN -> 0 (numerics.md §6 "Rounding is half-to-even").  [choice]
 * ONNX leaves out-of-range float->int undefined; saturation is the deterministic choice and is
 * what ONNX specifies for int4.  bool: any non-zero value (NaN included) is 1. */
static float round_int(DType fmt, float x)
{
	double lo, hi;
	switch (fmt) {
	case DT_BOOL: return x != 0.0f ? 1.0f : 0.0f;
	case DT_I4: lo = -8; hi = 7; break;
	case DT_I8: lo = -128; hi = 127; break;
	case DT_U8: lo = 0; hi = 255; break;
	case DT_U16: lo = 0; hi = 65535; break;
	case DT_U32: lo = 0; hi = 4294967295.0; break;
	case DT_U64: lo = 0; hi = 18446744073709551615.0; break;
	case DT_I16: lo = -32768; hi = 32767; break;
	case DT_I32: lo = -2147483648.0; hi = 2147483647.0; break;
	default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
	}
	if (x != x)
		return 0.0f;
	double r = nearbyint((double)x);   /* default rounding mode: to nearest, ties to even */
	if (r < lo)
		r = lo;
	if (r > hi)
		r = hi;
	return (float)r;
}

float rt_round(DType fmt, float x, int saturate)
{
	const FmtDesc *f = rt_fmt_desc(fmt);
	if (f) {
		/* [choice] FP6/FP4 have no NaN code (numerics.md §2: undefined); rounding keeps the
		 * NaN so it propagates through kernels. */
		if (x != x)
			return x;
		return rt_fmt_decode(f, rt_fmt_encode(f, x, saturate));
	}
	switch (rt_dtypes[fmt].kind) {
	case K_SCALE: return e8m0_decode(e8m0_encode(x, saturate));
	case K_INT: case K_UINT: case K_BOOL: return round_int(fmt, x);
	default: return x;   /* f32, f64: already on the grid; block types: see rt_round_tensor */
	}
}

/* bf16 is float32's sign, exponent and top 7 mantissa bits, subnormals included, so rounding to
 * it is an integer add on the bits: + 0x7FFF plus the kept lsb (ties to even), low half cleared;
 * a carry rolls into the exponent as enc_core's does (the largest finite values round to Inf;
 * saturating, Inf from either becomes +-max).  NaN is left as it is, as the element loop leaves
 * it.  One branch-free loop over the block, which the compiler vectorises; the same bits as
 * rt_fmt_encode/decode. */
static void round_bf16_block(float *x, int64_t n, int sat)
{
	uint32_t inf_to = sat ? 0x7F7F0000u : 0x7F800000u;
	for (int64_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &x[i], sizeof u);
		uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
		r = (r & 0x7FFFFFFFu) == 0x7F800000u ? (u & 0x80000000u) | inf_to : r;
		r = (u & 0x7FFFFFFFu) > 0x7F800000u ? u : r;   /* NaN */
		memcpy(&x[i], &r, sizeof r);
	}
}

/* f16 in one branch-free loop: at and above its smallest normal 2^-14 it is float32 with 10
 * mantissa bits, so the bf16 bit rounding at bit 13 (overflow past 65504, judged after
 * rounding, to Inf or, saturating, +-65504; Inf alike); below, its grid is the multiples of
 * 2^-24: |x| * 2^24 (exact) rounded to an integer by adding and subtracting 1.5 * 2^23 (ties to
 * even in the default rounding mode; exact for |x| * 2^24 < 2^22), scaled back, sign restored.
 * NaN is left as it is.  The same bits as rt_fmt_encode/decode. */
static void round_f16_block(float *x, int64_t n, int sat)
{
	uint32_t over = sat ? 0x477FE000u : 0x7F800000u;
	for (int64_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &x[i], sizeof u);
		uint32_t a = u & 0x7FFFFFFFu, sign = u & 0x80000000u;
		uint32_t r = (a + 0xFFFu + ((a >> 13) & 1u)) & ~0x1FFFu;
		r = r > 0x477FE000u ? over : r;
		float t = fabsf(x[i]) * 0x1p24f;
		float q = ((t + 0x1.8p23f) - 0x1.8p23f) * 0x1p-24f;
		uint32_t qs;
		memcpy(&qs, &q, sizeof qs);
		r = a < 0x38800000u ? qs : r;
		r = a > 0x7F800000u ? a : r;   /* NaN */
		r |= sign;
		memcpy(&x[i], &r, sizeof r);
	}
}

void rt_round_tensor(DType dt, float *x, int64_t n, int64_t row, const QuantOpts *o)
{
	const DTypeInfo *t = &rt_dtypes[dt];
	if (t->kind == K_BLOCK) {
		rt_round_blocks_rows(dt, x, n, row, o);
		return;
	}
	if (t->kind != K_FLOAT && t->kind != K_SCALE)
		return;   /* integers are held exactly in S_I64 storage; nothing to do */
	const FmtDesc *f = rt_fmt_desc(dt);
	int sat = o ? o->saturate : 0;
	if (!f) {
		if (dt == DT_E8M0)
			for (int64_t i = 0; i < n; i++)
				x[i] = e8m0_decode(e8m0_encode(x[i], sat));
		return;   /* f32, f64 */
	}
	if (f == &rt_fmt_bf16) {
		round_bf16_block(x, n, sat);
		return;
	}
	if (f == &rt_fmt_f16) {
		round_f16_block(x, n, sat);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		if (x[i] == x[i])
			x[i] = rt_fmt_decode(f, rt_fmt_encode(f, x[i], sat));
}
