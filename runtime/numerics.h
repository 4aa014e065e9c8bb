/* runtime/numerics.h: bit-exact number formats (codecs) and block quantization.
 *
 * Semantics, with sources, are ../shared/reference/numerics.md (section 10 where sources
 * disagree): round to nearest, ties to even; OCP MX v1.0 block formats with 32-element blocks
 * and E8M0 scales (FLOOR scale rule by default, RCEIL on request); NVFP4 with 16-element blocks,
 * E4M3 block scales and an f32 tensor scale (Transformer Engine recipe); int8/int4 with scales.
 * All functions are pure and never allocate unless stated.
 */
#ifndef AICC_NUMERICS_H
#define AICC_NUMERICS_H

#include <stdint.h>
#include "runtime/rt.h"

typedef enum ScaleRule { SCALE_FLOOR, SCALE_RCEIL } ScaleRule;

typedef struct QuantOpts {
	ScaleRule rule;      /* MX scale rule */
	int saturate;        /* element formats: clamp to +-max (1) or overflow to NaN/Inf (0) */
	int block;           /* elements per block; 0: the format's own (32 MX, 16 NVFP4) */
} QuantOpts;

/* ---- scalar element formats: f32 tf32 bf16 f16 f8e4m3 f8e5m2 f6e3m2 f6e2m3 f4e2m1 e8m0 ---- */
/* The code (low bits) of x in format fmt, RNE; saturate as in QuantOpts. */
uint32_t rt_encode(DType fmt, float x, int saturate);
/* The value of code in format fmt (NaN for NaN codes). */
float rt_decode(DType fmt, uint32_t code);
/* x rounded to fmt's grid: rt_decode(fmt, rt_encode(fmt, x, saturate)); integer dtypes round
 * half to even and wrap or saturate as the ONNX Cast does. */
float rt_round(DType fmt, float x, int saturate);

/* ---- block formats (mxfp8 mxfp8e5m2 mxfp6 mxfp6e2m3 mxfp4 mxint8 nvfp4) ---- */
/* Quantizes n values of x (blocks run along x; a short last block is allowed).
 * Writes, when the pointers are not NULL: deq[n] the dequantized values (f32), codes[n] element
 * codes, scales[ceil(n/block)] scale codes (E8M0 or E4M3), *tensor_scale (nvfp4: the f32 global
 * decode scale from the amax of all n values; else 1).  Returns 0, or -1 for a non-block fmt.
 * NaN/Inf: an MX block holding one gets scale 0xFF, element codes 0 and NaN values; nvfp4
 * refuses such input (numerics.md §4): it returns -1 with NaN values, codes 0, scales 0x7F. */
int rt_quantize_blocks(DType fmt, const float *x, int64_t n, const QuantOpts *o,
		       float *deq, uint8_t *codes, uint8_t *scales, float *tensor_scale);

/* NVFP4 with an explicit global scale (numerics.md §4, §10: carry S_dec from the checkpoint or
 * graph).  rt_nvfp4_global_scale gives TE's S_enc = fp32(2688/amax) (FLT_MAX on overflow, 1 for
 * amax 0) and S_dec = fp32(1/S_enc).  rt_quantize_nvfp4 quantizes n finite values in blocks of
 * `block` (0: 16) with those scales; deq[i] = q*s_b*S_dec rounded once to f32.  Returns 0. */
void rt_nvfp4_global_scale(float amax, float *s_enc, float *s_dec);
int rt_quantize_nvfp4(const float *x, int64_t n, int block, float s_enc, float s_dec,
		      float *deq, uint8_t *codes, uint8_t *scales);

/* ---- integer formats with per-group scales (int8, int4 symmetric, int4 asymmetric) ---- */
/* Quantizes n values in groups of `group` (0: one group).  Writes deq, codes (two's complement
 * low bits, or unsigned for asym), scales[ngroups] (f32), zero_points[ngroups] (asym only).
 * A group holding NaN/Inf gets scale NaN, codes 0, NaN values.  Returns 0, or -1 for bits
 * outside 2..16. */
int rt_quantize_int(int bits, int asym, const float *x, int64_t n, int64_t group,
		    float *deq, int32_t *codes, float *scales, int32_t *zero_points);

/* ---- tensors ---- */
/* Rounds a row-major f32 tensor in place to dtype dt: scalar formats element by element; block
 * formats in blocks along rows of length `row` (the last axis).  f32/f64/integers: no change. */
void rt_round_tensor(DType dt, float *x, int64_t n, int64_t row, const QuantOpts *o);

#endif
