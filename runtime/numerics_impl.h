/* runtime/numerics_impl.h: internals shared by runtime/numerics.c and runtime/quant.c.
 *
 * FmtDesc describes a sign / exponent / trailing-mantissa float format with subnormals
 * (numerics.md §1).  enc_core is the one float32 -> format conversion, written as a static
 * inline so that the block quantizers, which call it with constant descriptors, get a
 * specialised, branch-light copy per format.  Not part of the public API.
 */
#ifndef AICC_NUMERICS_IMPL_H
#define AICC_NUMERICS_IMPL_H

#include <stdint.h>
#include <string.h>
#include "runtime/numerics.h"

typedef struct FmtDesc {
	int M;            /* trailing mantissa bits */
	int emin;         /* exponent of the smallest normal (1 - bias) */
	uint32_t maxmag;  /* magnitude code of the largest finite value */
	uint32_t infmag;  /* magnitude code of Inf, 0 when the format has none */
	uint32_t nanmag;  /* magnitude code emitted for NaN, 0 when the format has none */
	int bits;         /* code width, sign included */
} FmtDesc;

extern const FmtDesc rt_fmt_f16, rt_fmt_bf16, rt_fmt_tf32, rt_fmt_e4m3, rt_fmt_e5m2,
	rt_fmt_e3m2, rt_fmt_e2m3, rt_fmt_e2m1;

/* The bits of a float and back (inline: the codecs call them per element). */
static inline uint32_t rt_f32_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static inline float rt_bits_f32(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* The code of f32(u) * 2^-eoff in the format, rounded to nearest, ties to even (numerics.md
 * §2).  Overflow (judged after rounding) clamps to +-max when sat or when the format has no
 * Inf/NaN (FP6/FP4 "always saturate"), else gives Inf (E5M2, FP16, BF16) or NaN (E4M3).
 * ±Inf saturates to ±max in SAT mode.  NaN gives nanmag (positive: only the class matters,
 * §2 "NaN payloads"); [choice] for formats without NaN it gives +0. */
static inline uint32_t enc_core(uint32_t u, int eoff, int M, int emin, uint32_t maxmag,
				uint32_t infmag, uint32_t nanmag, int bits, int sat)
{
	uint32_t sign = (u >> 31) << (bits - 1);
	uint32_t a = u & 0x7FFFFFFFu;
	if (a >= 0x7F800000u) {
		if (a > 0x7F800000u)
			return nanmag;
		if (sat || (!infmag && !nanmag))
			return sign | maxmag;
		return infmag ? (sign | infmag) : nanmag;
	}
	int E = (int)(a >> 23);
	uint32_t sig = a & 0x7FFFFFu;
	if (E) {
		sig |= 0x800000u;
	} else {                         /* float32 subnormal or zero: normalise */
		if (!sig)
			return sign;
		int lz = __builtin_clz(sig) - 8;
		sig <<= lz;
		E = 1 - lz;
	}
	E -= 127 + eoff;                 /* value = sig * 2^(E - 23), sig in [2^23, 2^24) */
	int et = E > emin ? E : emin;    /* exponent of the target binade */
	int shift = et - M - E + 23;     /* >= 23 - M >= 1: the target ulp is 2^(et - M) */
	uint32_t q;
	if (shift > 25) {
		q = 0;                   /* below half the smallest step: sig < 2^24 */
	} else {
		q = sig >> shift;
		uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
		q += (rem > half) | ((rem == half) & q);
	}
	uint32_t mag;
	if (et - emin > 255)             /* far beyond any format's range */
		mag = 0xFFFFFFFFu;
	else
		mag = ((uint32_t)(et - emin) << M) + q;
	if (mag > maxmag) {
		if (sat || (!infmag && !nanmag))
			return sign | maxmag;
		return infmag ? (sign | infmag) : nanmag;
	}
	return sign | mag;
}

uint32_t rt_fmt_encode(const FmtDesc *f, float x, int sat);
float rt_fmt_decode(const FmtDesc *f, uint32_t code);
const FmtDesc *rt_fmt_desc(DType d);   /* NULL for f32, f64, e8m0, integers, block types */

/* Block formats along rows of length row (quant.c). */
void rt_round_blocks_rows(DType dt, float *x, int64_t n, int64_t row, const QuantOpts *o);

#endif
