/* runtime/codec.h: the payload codecs of compressed collectives (issue 23), after
 * FlashCommunication (Li et al., "Flash Communication: Reducing Tensor Parallelization Bottleneck
 * for Fast Large Language Model Inference", arXiv:2412.04964): per block of `block` elements,
 * asymmetric integer codes of `bits` bits, the code sent as bit planes of power-of-two widths
 * (bit-splitting: 5 bits go as a 4-bit and a 1-bit plane, so every plane packs into whole
 * bytes), and `spikes` outliers per block (largest |x|, ties to the lower index) kept apart as
 * bf16 values with a 16-bit index (spike-reserving).
 *
 * Block layout on the wire (little-endian): lo (f32), scale (f32), spikes x (u16 index, u16 bf16
 * bits), then the planes of the m = n_b - spikes other elements, widest plane first (the code's
 * high bits), element i of a w-bit plane at bit i*w, LSB first.  scale = (hi - lo) / (2^bits - 1)
 * over the non-spike elements (0 when hi == lo); code q = clamp(rint((x - lo) / scale), 0,
 * 2^bits - 1), round half to even; value = lo + q * scale, in f32, no fma.  A block whose
 * non-spike elements hold a NaN or an infinity gets lo = scale = NaN and decodes them as NaN.
 */
#ifndef AICC_RUNTIME_CODEC_H
#define AICC_RUNTIME_CODEC_H
#include <stddef.h>
#include <stdint.h>

typedef struct RtCodec {
	int bits;     /* code width, 2..8 */
	int block;    /* elements per block, 8..65536 (the last block may be shorter) */
	int spikes;   /* outliers per block kept in bf16, 0..block/2 */
} RtCodec;

/* Parses "intB[:bN][:kK]" (e.g. "int4", "int5:b128:k2"; defaults block 128, spikes 0).  0, or -1
 * with a one-line reason in why[n]. */
int rt_codec_parse(const char *spec, RtCodec *c, char *why, size_t n);
/* Bytes on the wire for n elements (the layout above); 0 for n <= 0. */
int64_t rt_codec_bytes(const RtCodec *c, int64_t n);
/* Encodes n values of x into buf (rt_codec_bytes(c, n) bytes).  Returns the bytes written. */
int64_t rt_codec_encode(const RtCodec *c, const float *x, int64_t n, uint8_t *buf);
/* Decodes n values from buf into y. */
void rt_codec_decode(const RtCodec *c, const uint8_t *buf, int64_t n, float *y);
/* The error of a compressed all-reduce over p members (runtime/interp.h rt_codec_apply: each
 * input and the sum are each coded once), relative to a block's range (hi - lo of its non-spike
 * elements): one code is off by at most half a step, step = range / (2^bits - 1), so the sum of
 * the p + 1 codings is off by at most worst = (p + 1) / (2 (2^bits - 1)); modelled as independent
 * and uniform on [-step/2, step/2] (Widrow & Kollar, Quantization Noise, 2008, ch. 4), their
 * sum's rms is rms = sqrt((p + 1) / 12) / (2^bits - 1).  Spikes (bf16) add at most 2^-9 of
 * their own magnitude, counted in neither. */
void rt_codec_error(const RtCodec *c, int p, double *worst, double *rms);
#endif
