/* runtime/codec.c: compressed-collective payload codecs; runtime/codec.h gives the format and
 * its source (FlashCommunication, arXiv:2412.04964). */
#include "runtime/codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_codec_parse(const char *spec, RtCodec *c, char *why, size_t n)
{
	c->bits = 0, c->block = 128, c->spikes = 0;
	const char *s = spec;
	char *end;
	if (!s || strncmp(s, "int", 3) != 0)
		goto bad;
	long v = strtol(s + 3, &end, 10);
	if (end == s + 3 || v < 2 || v > 8) {
		snprintf(why, n, "'%s': the code width must be int2 .. int8", spec);
		return -1;
	}
	c->bits = (int)v;
	for (s = end; *s; s = end) {
		if (s[0] != ':' || (s[1] != 'b' && s[1] != 'k'))
			goto bad;
		v = strtol(s + 2, &end, 10);
		if (end == s + 2)
			goto bad;
		if (s[1] == 'b') {
			if (v < 8 || v > 65536) {
				snprintf(why, n, "'%s': the block must be 8 .. 65536 elements", spec);
				return -1;
			}
			c->block = (int)v;
		} else {
			if (v < 0 || v > 65536) {
				snprintf(why, n, "'%s': spikes per block out of range", spec);
				return -1;
			}
			c->spikes = (int)v;
		}
	}
	if (c->spikes > c->block / 2) {
		snprintf(why, n, "'%s': at most block/2 (%d) spikes per block", spec, c->block / 2);
		return -1;
	}
	return 0;
bad:
	snprintf(why, n, "'%s' is not a codec (intB[:bN][:kK], e.g. int5:b128:k2)", spec ? spec : "");
	return -1;
}

/* The plane widths of a b-bit code, widest first (5 -> 4 1). */
static int planes(int bits, int *w)
{
	int np = 0;
	for (int p = 8; p; p >>= 1)
		if (bits & p)
			w[np++] = p;
	return np;
}

static int64_t block_bytes(const RtCodec *c, int64_t nb)
{
	int64_t k = c->spikes < nb ? c->spikes : nb, m = nb - k, b = 8 + 4 * k;
	int w[4], np = planes(c->bits, w);
	for (int i = 0; i < np; i++)
		b += (m * w[i] + 7) / 8;
	return b;
}

int64_t rt_codec_bytes(const RtCodec *c, int64_t n)
{
	if (n <= 0)
		return 0;
	int64_t full = n / c->block, rest = n % c->block;
	return full * block_bytes(c, c->block) + (rest ? block_bytes(c, rest) : 0);
}

static uint16_t bf16_bits(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);             /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);                      /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float x;
	memcpy(&x, &u, 4);
	return x;
}

static void put32(uint8_t *p, float x) { memcpy(p, &x, 4); }   /* x86/ARM little-endian hosts */
static float get32(const uint8_t *p) { float x; memcpy(&x, p, 4); return x; }

/* Marks in sp[nb] the k spikes of x[nb]: largest |x| first, ties to the lower index; a NaN
 * counts as the largest. */
static void pick_spikes(const float *x, int64_t nb, int64_t k, unsigned char *sp)
{
	memset(sp, 0, (size_t)nb);
	for (int64_t s = 0; s < k; s++) {
		int64_t best = -1;
		for (int64_t i = 0; i < nb; i++) {
			if (sp[i])
				continue;
			if (best < 0 || isnan(x[i]) > isnan(x[best]) ||
			    (!isnan(x[best]) && fabsf(x[i]) > fabsf(x[best])))
				best = i;
		}
		if (best >= 0)   /* always: k <= nb */
			sp[best] = 1;
	}
}

static int64_t encode_block(const RtCodec *c, const float *x, int64_t nb, uint8_t *buf, unsigned char *sp)
{
	int64_t k = c->spikes < nb ? c->spikes : nb, m = nb - k;
	pick_spikes(x, nb, k, sp);
	float lo = INFINITY, hi = -INFINITY;
	int bad = 0;
	for (int64_t i = 0; i < nb; i++)
		if (!sp[i]) {
			bad |= !isfinite(x[i]);
			lo = x[i] < lo ? x[i] : lo;
			hi = x[i] > hi ? x[i] : hi;
		}
	int64_t qmax = (1 << c->bits) - 1;
	float scale = m == 0 ? 0 : (hi - lo) / (float)qmax;
	if (m == 0)
		lo = 0;
	if (bad || !isfinite(scale))
		lo = scale = NAN;
	put32(buf, lo), put32(buf + 4, scale);
	uint8_t *p = buf + 8;
	for (int64_t i = 0; i < nb; i++)
		if (sp[i]) {
			uint16_t b = bf16_bits(x[i]);
			p[0] = (uint8_t)(i & 0xff), p[1] = (uint8_t)(i >> 8), p[2] = (uint8_t)(b & 0xff), p[3] = (uint8_t)(b >> 8);
			p += 4;
		}
	int w[4], np = planes(c->bits, w), shift = c->bits;
	for (int pl = 0; pl < np; pl++) {
		shift -= w[pl];
		int64_t bytes = (m * w[pl] + 7) / 8, j = 0;
		memset(p, 0, (size_t)bytes);
		for (int64_t i = 0; i < nb; i++) {
			if (sp[i])
				continue;
			int64_t q = 0;
			if (scale > 0) {
				float t = rintf((x[i] - lo) / scale);
				q = t < 0 ? 0 : t > (float)qmax ? qmax : (int64_t)t;
			}
			uint32_t part = (uint32_t)(q >> shift) & ((1u << w[pl]) - 1);
			int64_t bit = j * w[pl];
			p[bit / 8] |= (uint8_t)(part << (bit % 8));   /* widths divide 8: never straddles */
			j++;
		}
		p += bytes;
	}
	return p - buf;
}

int64_t rt_codec_encode(const RtCodec *c, const float *x, int64_t n, uint8_t *buf)
{
	unsigned char sp[65536];
	int64_t off = 0;
	for (int64_t b = 0; b < n; b += c->block) {
		int64_t nb = n - b < c->block ? n - b : c->block;
		off += encode_block(c, x + b, nb, buf + off, sp);
	}
	return off;
}

void rt_codec_decode(const RtCodec *c, const uint8_t *buf, int64_t n, float *y)
{
	unsigned char sp[65536];
	for (int64_t b = 0; b < n; b += c->block) {
		int64_t nb = n - b < c->block ? n - b : c->block, k = c->spikes < nb ? c->spikes : nb, m = nb - k;
		float lo = get32(buf), scale = get32(buf + 4), *yb = y + b;
		const uint8_t *p = buf + 8;
		memset(sp, 0, (size_t)nb);
		for (int64_t s = 0; s < k; s++, p += 4) {
			int64_t i = p[0] | (int64_t)p[1] << 8;
			if (i < nb) {
				sp[i] = 1;
				yb[i] = bf16_value((uint16_t)(p[2] | p[3] << 8));
			}
		}
		int w[4], np = planes(c->bits, w), shift = c->bits;
		uint16_t code[65536];
		memset(code, 0, sizeof code[0] * (size_t)(m ? m : 1));
		for (int pl = 0; pl < np; pl++) {
			shift -= w[pl];
			for (int64_t j = 0; j < m; j++) {
				int64_t bit = j * w[pl];
				code[j] |= (uint16_t)(((p[bit / 8] >> (bit % 8)) & ((1u << w[pl]) - 1)) << shift);
			}
			p += (m * w[pl] + 7) / 8;
		}
		for (int64_t i = 0, j = 0; i < nb; i++)
			if (!sp[i]) {
				float v = (float)code[j++] * scale;
				yb[i] = lo + v;
			}
		buf = p;
	}
}

void rt_codec_error(const RtCodec *c, int p, double *worst, double *rms)
{
	double q = ldexp(1.0, c->bits) - 1, n = p < 1 ? 2 : p + 1;
	*worst = n / (2 * q);
	*rms = sqrt(n / 12) / q;
}
