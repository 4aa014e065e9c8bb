/* runtime/quant.c: block quantization (OCP MX, NVIDIA NVFP4) and integer quantization with
 * per-group scales.
 *
 * MX (numerics.md §3, OCP MX v1.0 §6.3): per block of k elements (32 by default) the shared
 * exponent is floor(log2(amax)) - emax_elem (FLOOR) or the smallest power of two >= amax/max_elem
 * (RCEIL), both read from the float32 bits, never from a float log2; it is clamped below at -127
 * (code 0x00); a block holding NaN or Inf gets scale 0xFF and decodes to NaN; an all-zero block
 * gets 0x00; elements are rounded to nearest even and clamped to +-max (MXINT8: [-127, 127]).
 * Elements are converted straight from the input bits with the exponent offset (enc_core), so
 * the division by the scale is exact by construction.  Dequantized values are element * 2^k,
 * exact in float32.
 * NVFP4 (numerics.md §4): the Transformer Engine float32 recipe, step by step, with the decode
 * product q * s_b * S_dec rounded once to float32.
 * INT8/INT4 (numerics.md §6): symmetric and GPTQ-style asymmetric per-group scales in float32.
 * Requires runtime/numerics_impl.h; provides the block half of runtime/numerics.h.
 */
#include "runtime/numerics.h"
#include "runtime/numerics_impl.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

/* One MX element type: its codec row, emax_elem and the significand of its max value as a
 * 24-bit fixed-point number (1.75 -> 0xE00000), for RCEIL (numerics.md §1 and §3). */
typedef struct MxElem {
	const FmtDesc *f;   /* NULL: MXINT8 */
	int emax;
	uint32_t maxsig;
} MxElem;

static int mx_elem(DType fmt, MxElem *m)
{
	switch (fmt) {
	case DT_MXFP8: *m = (MxElem){ &rt_fmt_e4m3, 8, 0xE00000 }; return 0;
	case DT_MXFP8E5M2: *m = (MxElem){ &rt_fmt_e5m2, 15, 0xE00000 }; return 0;
	case DT_MXFP6: *m = (MxElem){ &rt_fmt_e3m2, 4, 0xE00000 }; return 0;
	case DT_MXFP6E2M3: *m = (MxElem){ &rt_fmt_e2m3, 2, 0xF00000 }; return 0;
	case DT_MXFP4: *m = (MxElem){ &rt_fmt_e2m1, 2, 0xC00000 }; return 0;
	case DT_MXINT8: *m = (MxElem){ NULL, 0, 127u << 17 }; return 0;
	default: return -1;
	}
}

/* The largest |x| of a block as float32 bits: for non-NaN floats the order of the magnitude
 * bits is the order of the values, and NaN/Inf compare above every finite value. */
static uint32_t amax_bits(const float *x, int64_t len)
{
	uint32_t m = 0;
	for (int64_t i = 0; i < len; i++) {
		uint32_t a = rt_f32_bits(x[i]) & 0x7FFFFFFFu;
		m = a > m ? a : m;
	}
	return m;
}

/* The E8M0 scale code for a block whose largest magnitude has bits a (numerics.md §3, §10). */
static uint32_t mx_scale_code(uint32_t a, const MxElem *m, ScaleRule rule)
{
	if (a >= 0x7F800000u)
		return 0xFF;             /* NaN or Inf in the block */
	if (a == 0)
		return 0x00;             /* [choice] all-zero block: 0x00, as gfloat and torchao */
	int E = (int)(a >> 23);
	uint32_t sig = a & 0x7FFFFFu;
	int fl;                          /* floor(log2(amax)) */
	if (E) {
		fl = E - 127;
		sig |= 0x800000u;
	} else {                         /* float32 subnormal: normalise */
		int lz = __builtin_clz(sig) - 8;
		sig <<= lz;
		fl = -126 - lz;
	}
	int k = fl - m->emax;
	if (rule == SCALE_RCEIL && sig > m->maxsig)
		k++;                     /* amax/max_elem lies above 2^k: round the scale up */
	if (k < -127)
		k = -127;
	if (k > 127)
		return 0xFF;             /* [choice] NaN, as microxcaling (numerics.md §3) */
	return (uint32_t)(k + 127);
}

/* MXINT8 element: RNE(V / 2^k * 64) clamped to [-127, 127] (numerics.md §3 [choice]), as the
 * two's-complement byte.  -0 gives +0. */
static inline uint32_t int8_elem(uint32_t u, int k)
{
	uint32_t a = u & 0x7FFFFFFFu;
	int E = (int)(a >> 23);
	uint32_t sig = a & 0x7FFFFFu;
	if (E)
		sig |= 0x800000u;
	else
		E = 1;
	int shift = 23 - (E - 127 + 6 - k);   /* value * 64 / 2^k = sig * 2^-shift */
	uint32_t q;
	if (shift <= 0)
		q = 127;
	else if (shift > 25)
		q = 0;
	else {
		q = sig >> shift;
		uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
		q += (rem > half) | ((rem == half) & q);
		q = q > 127 ? 127 : q;
	}
	return (u >> 31) ? (uint32_t)(-(int32_t)q) & 0xFF : q;
}

/* Element values by code, built once per format (the decoder is exact, so the table is). */
static float tab_e4m3[256], tab_e5m2[256], tab_e3m2[64], tab_e2m3[64], tab_e2m1[16],
	tab_int8[256];
static pthread_once_t tabs_once = PTHREAD_ONCE_INIT;

static void fill_tables(void)
{
	for (uint32_t c = 0; c < 256; c++) {
		tab_e4m3[c] = rt_fmt_decode(&rt_fmt_e4m3, c);
		tab_e5m2[c] = rt_fmt_decode(&rt_fmt_e5m2, c);
		tab_int8[c] = (float)(int8_t)(uint8_t)c / 64.0f;
		if (c < 64) {
			tab_e3m2[c] = rt_fmt_decode(&rt_fmt_e3m2, c);
			tab_e2m3[c] = rt_fmt_decode(&rt_fmt_e2m3, c);
		}
		if (c < 16)
			tab_e2m1[c] = rt_fmt_decode(&rt_fmt_e2m1, c);
	}
}

static void init_tables(void)
{
	pthread_once(&tabs_once, fill_tables);
}

/* The value of code c of a small float format (M trailing mantissa bits, smallest normal
 * exponent emin, bits wide, sign included; no Inf/NaN codes reach it: MX elements saturate):
 * sig * 2^ee built from integers, so that the loop over a block vectorises; exact, equal to
 * rt_fmt_decode (the product of a <= 4-bit integer and a normal power of two). */
static inline float mx_dec(uint32_t c, int M, int emin, int bits)
{
	uint32_t mag = c & ((1u << (bits - 1)) - 1);
	uint32_t e = mag >> M, f = mag & ((1u << M) - 1);
	uint32_t sig = e ? f | (1u << M) : f;
	int ee = (e ? (int)e - 1 : 0) + emin - M;
	float v = (float)(int32_t)sig * rt_bits_f32((uint32_t)(ee + 127) << 23);
	return rt_bits_f32(rt_f32_bits(v) | ((c >> (bits - 1)) << 31));
}

/* One MX block: each chunk's codes first (ENC, an expression of the element's float32 bits u,
 * vectorisable: the descriptor fields are constants at each call site, so enc_core specialises),
 * then the codes and the dequantized values (DEC, an expression of the code c) * 2^k. */
#define MX_BLOCK(ENC, DEC)                                                               \
	for (int64_t j0 = 0; j0 < len; j0 += 64) {                                       \
		int64_t m = len - j0 < 64 ? len - j0 : 64;                               \
		uint8_t cb[64];                                                          \
		for (int64_t i = 0; i < m; i++) {                                        \
			uint32_t u = rt_f32_bits(x[j0 + i]);                             \
			cb[i] = (uint8_t)(ENC);                                          \
		}                                                                        \
		if (codes)                                                               \
			memcpy(codes + j0, cb, (size_t)m);                               \
		for (int64_t i = 0; deq && i < m; i++) {                                 \
			uint32_t c = cb[i];                                              \
			deq[j0 + i] = (DEC) * scale;                                     \
		}                                                                        \
	}

/* The block loops are integer and exactly rounded float operations (no contraction, no
 * reassociation), so the AVX2 clone computes the same bits as the baseline one, only wider. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QUANT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QUANT_CLONES
#endif

QUANT_CLONES static void mx_block(DType fmt, const MxElem *m, const float *x, int64_t len, ScaleRule rule,
				  float *deq, uint8_t *codes, uint8_t *scale_code)
{
	uint32_t sc = mx_scale_code(amax_bits(x, len), m, rule);
	*scale_code = (uint8_t)sc;
	if (sc == 0xFF) {                /* [choice] element codes of a NaN block are 0 */
		for (int64_t i = 0; i < len; i++) {
			if (codes)
				codes[i] = 0;
			if (deq)
				deq[i] = NAN;
		}
		return;
	}
	int k = (int)sc - 127;
	float scale = ldexpf(1.0f, k);
	switch (fmt) {
	case DT_MXFP8: MX_BLOCK(enc_core(u, k, 3, -6, 0x7E, 0, 0x7F, 8, 1), mx_dec(c, 3, -6, 8)) break;
	case DT_MXFP8E5M2:
		MX_BLOCK(enc_core(u, k, 2, -14, 0x7B, 0x7C, 0x7F, 8, 1), mx_dec(c, 2, -14, 8)) break;
	case DT_MXFP6: MX_BLOCK(enc_core(u, k, 2, -2, 0x1F, 0, 0, 6, 1), mx_dec(c, 2, -2, 6)) break;
	case DT_MXFP6E2M3: MX_BLOCK(enc_core(u, k, 3, 0, 0x1F, 0, 0, 6, 1), mx_dec(c, 3, 0, 6)) break;
	case DT_MXFP4: MX_BLOCK(enc_core(u, k, 1, 0, 0x7, 0, 0, 4, 1), mx_dec(c, 1, 0, 4)) break;
	default:   /* MXINT8: the code is a two's-complement byte, its value code / 64 (exact) */
		MX_BLOCK(int8_elem(u, k), (float)(int8_t)(uint8_t)c * 0.015625f)
		break;
	}
}

/* ---- NVFP4 (numerics.md §4) ---- */

/* E2M1 code of clamp(t, -6, 6), RNE, as the count of decision thresholds below |t|: ties at
 * 0.25, 1.25, 2.5, 5 go down (to the even codes 0, 2, 4, 6), ties at 0.75, 1.75, 3.5 go up
 * (to 2, 4, 6) -- the table of numerics.md §4/§11 row 5.  The sign comes from the bits, so
 * values rounding to zero keep it (code 0x8 is -0), as enc_core does.  t is never NaN here. */
static inline uint32_t e2m1_clamped(float t)
{
	uint32_t u = rt_f32_bits(t);
	float a = rt_bits_f32(u & 0x7FFFFFFFu);
	uint32_t c = (uint32_t)(a > 0.25f) + (uint32_t)(a >= 0.75f) + (uint32_t)(a > 1.25f) +
		     (uint32_t)(a >= 1.75f) + (uint32_t)(a > 2.5f) + (uint32_t)(a >= 3.5f) +
		     (uint32_t)(a > 5.0f);
	return c | ((u >> 28) & 0x8u);
}
void rt_nvfp4_global_scale(float amax, float *s_enc, float *s_dec)
{
	float enc = 2688.0f / amax;      /* 448 * 6 / amax_tensor, float32 */
	enc = fminf(enc, FLT_MAX);
	if (amax == 0.0f || enc == 0.0f)
		enc = 1.0f;
	*s_enc = enc;
	*s_dec = 1.0f / enc;
}

QUANT_CLONES int rt_quantize_nvfp4(const float *x, int64_t n, int block, float s_enc, float s_dec,
				   float *deq, uint8_t *codes, uint8_t *scales)
{
	init_tables();
	if (block <= 0)
		block = 16;
	const float mult = s_enc * (1.0f / 6.0f);   /* TE folds fp32(1/6) into the multiplier */
	for (int64_t b = 0, i0 = 0; i0 < n; b++, i0 += block) {
		int64_t len = n - i0 < block ? n - i0 : block;
		const float *xb = x + i0;
		float amax = rt_bits_f32(amax_bits(xb, len));
		uint32_t sb = enc_core(rt_f32_bits(amax * mult), 0, 3, -6, 0x7E, 0, 0x7F, 8, 1);
		float sbv = tab_e4m3[sb];
		float enc_b = fminf(1.0f / (sbv * s_dec), FLT_MAX);
		double dscale = (double)sbv * (double)s_dec;   /* exact: <= 28 significant bits */
		float dq[16];   /* q * s_b * S_dec: exact product, one rounding to float32 */
		for (int c = 0; c < 16; c++)
			dq[c] = (float)((double)tab_e2m1[c] * dscale);
		if (scales)
			scales[b] = (uint8_t)sb;
		uint8_t cb[64];   /* the block's codes first (a vectorisable loop), then the outputs */
		for (int64_t j0 = 0; j0 < len; j0 += 64) {
			int64_t m = len - j0 < 64 ? len - j0 : 64;
			for (int64_t i = 0; i < m; i++)
				cb[i] = (uint8_t)e2m1_clamped(xb[j0 + i] * enc_b);
			if (codes)
				memcpy(codes + i0 + j0, cb, (size_t)m);
			for (int64_t i = 0; deq && i < m; i++)
				deq[i0 + j0 + i] = dq[cb[i]];
		}
	}
	return 0;
}

/* Fills the outputs of a refused NVFP4 input (NaN/Inf: numerics.md §4 "The reference refuses
 * such inputs") with NaN values, zero codes and NaN scale codes. */
static void nvfp4_refuse(int64_t n, int block, float *deq, uint8_t *codes, uint8_t *scales,
			 float *tensor_scale)
{
	for (int64_t i = 0; i < n; i++) {
		if (deq)
			deq[i] = NAN;
		if (codes)
			codes[i] = 0;
	}
	if (scales)
		for (int64_t b = 0; b < (n + block - 1) / block; b++)
			scales[b] = 0x7F;
	if (tensor_scale)
		*tensor_scale = NAN;
}

int rt_quantize_blocks(DType fmt, const float *x, int64_t n, const QuantOpts *o,
		       float *deq, uint8_t *codes, uint8_t *scales, float *tensor_scale)
{
	const DTypeInfo *t = &rt_dtypes[fmt];
	if (fmt <= DT_INVALID || fmt >= DT_COUNT || t->kind != K_BLOCK)
		return -1;
	init_tables();
	int block = o && o->block > 0 ? o->block : t->block;
	if (fmt == DT_NVFP4) {
		uint32_t a = amax_bits(x, n);
		if (a >= 0x7F800000u) {
			nvfp4_refuse(n, block, deq, codes, scales, tensor_scale);
			return -1;
		}
		float s_enc, s_dec;
		rt_nvfp4_global_scale(rt_bits_f32(a), &s_enc, &s_dec);
		if (tensor_scale)
			*tensor_scale = s_dec;
		return rt_quantize_nvfp4(x, n, block, s_enc, s_dec, deq, codes, scales);
	}
	MxElem m;
	if (mx_elem(fmt, &m) < 0)
		return -1;
	ScaleRule rule = o ? o->rule : SCALE_FLOOR;
	uint8_t sdummy;
	for (int64_t b = 0, i0 = 0; i0 < n; b++, i0 += block) {
		int64_t len = n - i0 < block ? n - i0 : block;
		mx_block(fmt, &m, x + i0, len, rule, deq ? deq + i0 : NULL,
			 codes ? codes + i0 : NULL, scales ? scales + b : &sdummy);
	}
	if (tensor_scale)
		*tensor_scale = 1.0f;
	return 0;
}

void rt_round_blocks_rows(DType dt, float *x, int64_t n, int64_t row, const QuantOpts *o)
{
	if (row <= 0 || row > n)
		row = n;
	if (n <= 0)
		return;
	if (dt == DT_NVFP4) {
		int block = o && o->block > 0 ? o->block : 16;
		uint32_t a = amax_bits(x, n);
		if (a >= 0x7F800000u) {
			nvfp4_refuse(n, block, x, NULL, NULL, NULL);
			return;
		}
		float s_enc, s_dec;
		rt_nvfp4_global_scale(rt_bits_f32(a), &s_enc, &s_dec);
		for (int64_t r = 0; r < n; r += row)
			rt_quantize_nvfp4(x + r, n - r < row ? n - r : row, block, s_enc, s_dec,
					  x + r, NULL, NULL);
		return;
	}
	for (int64_t r = 0; r < n; r += row)
		rt_quantize_blocks(dt, x + r, n - r < row ? n - r : row, o, x + r, NULL, NULL, NULL);
}

/* ---- integers with per-group scales (numerics.md §6) ---- */

/* [choice] A group holding NaN or Inf gets scale NaN, codes 0 and NaN values; a scale that is
 * zero (amax 0, or an underflowing quotient) is replaced by 1.0 as numerics.md §6 does for
 * amax = 0. */
static int group_finite(const float *x, int64_t len)
{
	return amax_bits(x, len) < 0x7F800000u;
}

static float clampf(float v, float lo, float hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static void int_group(int bits, int asym, const float *x, int64_t len, float *deq,
		      int32_t *codes, float *scale_out, int32_t *zero_out)
{
	int32_t mask = (int32_t)((1u << bits) - 1);
	if (!group_finite(x, len)) {
		for (int64_t i = 0; i < len; i++) {
			if (deq)
				deq[i] = NAN;
			if (codes)
				codes[i] = 0;
		}
		if (scale_out)
			*scale_out = NAN;
		if (zero_out)
			*zero_out = 0;
		return;
	}
	float qlo, qhi, scale, zero = 0.0f;
	if (!asym) {   /* scale = amax / (2^(b-1) - 1), q in [-2^(b-1), 2^(b-1) - 1] */
		qhi = (float)((1 << (bits - 1)) - 1);
		qlo = -qhi - 1.0f;
		scale = rt_bits_f32(amax_bits(x, len)) / qhi;
		if (scale == 0.0f)
			scale = 1.0f;
	} else {       /* GPTQ: range forced to include 0; (-1, 1) when all zero */
		qlo = 0.0f;
		qhi = (float)mask;
		float lo = 0.0f, hi = 0.0f;
		for (int64_t i = 0; i < len; i++) {
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
		if (lo == 0.0f && hi == 0.0f) {
			lo = -1.0f;
			hi = 1.0f;
		}
		scale = (hi - lo) / qhi;
		if (scale == 0.0f)
			scale = 1.0f;
		zero = clampf(nearbyintf(-lo / scale), 0.0f, qhi);
	}
	for (int64_t i = 0; i < len; i++) {
		/* + 0.0f: integers have no -0 */
		float q = clampf(nearbyintf(x[i] / scale) + zero, qlo, qhi) + 0.0f;
		if (codes)
			codes[i] = (int32_t)q & mask;
		if (deq)
			deq[i] = (q - zero) * scale;
	}
	if (scale_out)
		*scale_out = scale;
	if (zero_out)
		*zero_out = (int32_t)zero;
}

int rt_quantize_int(int bits, int asym, const float *x, int64_t n, int64_t group,
		    float *deq, int32_t *codes, float *scales, int32_t *zero_points)
{
	if (bits < 2 || bits > 16 || n < 0)
		return -1;
	if (group <= 0 || group > n)
		group = n > 0 ? n : 1;
	for (int64_t g = 0, i0 = 0; i0 < n; g++, i0 += group) {
		int64_t len = n - i0 < group ? n - i0 : group;
		int_group(bits, asym, x + i0, len, deq ? deq + i0 : NULL, codes ? codes + i0 : NULL,
			  scales ? scales + g : NULL, asym && zero_points ? zero_points + g : NULL);
	}
	return 0;
}
