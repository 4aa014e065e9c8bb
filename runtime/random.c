/* runtime/random.c: the counter-based generator and initialisers of runtime/random.h.
 *
 * Only IEEE-754 double additions, multiplications, divisions and sqrt are used (built with
 * -ffp-contract=off, so nothing is fused): every step is correctly rounded, hence the same
 * bits on every conforming machine.  ln uses the atanh series after an exact frexp reduction;
 * cos/sin use Taylor polynomials on [0, pi/4] after an exact quadrant reduction of the turn.
 */
#include "runtime/random.h"

#include <math.h>

static uint64_t mix(uint64_t z)
{
	z ^= z >> 30;
	z *= 0xBF58476D1CE4E5B9ull;
	z ^= z >> 27;
	z *= 0x94D049BB133111EBull;
	z ^= z >> 31;
	return z;
}

static uint64_t key_of(uint64_t seed, uint64_t instance)
{
	return mix(seed ^ mix(instance + 0x632BE59BD9B4E019ull));
}

static uint64_t draw(uint64_t key, uint64_t j)
{
	return mix(key + j * 0x9E3779B97F4A7C15ull);
}

uint64_t rt_rand_u64(uint64_t seed, uint64_t instance, uint64_t j)
{
	return draw(key_of(seed, instance), j);
}

static double unit(uint64_t r)
{
	return (double)(r >> 11) * 0x1p-53;
}

/* The constants of det_log and det_cossin, computed once per fill by the same operations (so
 * with the same bits) instead of once per value. */
typedef struct Coefs {
	double inv[24];          /* inv[k] = 1/k for odd k */
	double sc[9], cc[9];     /* (-1)^n / (2n+1)! and (-1)^n / (2n)!, n = 0..8 */
} Coefs;

static void coefs_init(Coefs *q)
{
	double fs = 1.0, fc = 1.0;
	for (int k = 1; k < 24; k += 2)
		q->inv[k] = 1.0 / k;
	for (int n = 0; n < 9; n++) {
		q->sc[n] = (n & 1 ? -1.0 : 1.0) / fs;
		q->cc[n] = (n & 1 ? -1.0 : 1.0) / fc;
		fc = fs * (2.0 * n + 2.0);
		fs = fc * (2.0 * n + 3.0);
	}
}

/* ln(u) for u in (0, 1]: u = m * 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1)/(m + 1), |s| <= 0.1716; 12 odd terms leave an error below 1e-18. */
static double det_log(double u, const Coefs *q)
{
	int e;
	double m = frexp(u, &e);   /* exact */
	if (m < 0.70710678118654752) {
		m *= 2.0;
		e--;
	}
	double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = 0.0;
	for (int k = 23; k >= 1; k -= 2)
		sum = sum * s2 + q->inv[k];
	return (double)e * 0x1.62e42fefa39efp-1 + 2.0 * s * sum;
}

/* cos and sin of 2 pi t for t in [0, 1). */
static void det_cossin(double t, double *c, double *s, const Coefs *q)
{
	double t4 = t * 4.0;                /* exact */
	int k = (int)t4;
	double f = t4 - (double)k;          /* exact, in [0, 1) */
	int swap = f > 0.5;
	double x = (swap ? 1.0 - f : f) * 1.5707963267948966;   /* in [0, pi/4] */
	double x2 = x * x, sn = 0.0, cs = 0.0;
	for (int n = 8; n >= 0; n--) {   /* Horner over the Taylor coefficients */
		sn = sn * x2 + q->sc[n];
		cs = cs * x2 + q->cc[n];
	}
	sn *= x;
	double cq = swap ? sn : cs, sq = swap ? cs : sn;
	switch (k & 3) {
	case 0: *c = cq; *s = sq; break;
	case 1: *c = -sq; *s = cq; break;
	case 2: *c = -cq; *s = -sq; break;
	default: *c = sq; *s = -cq; break;
	}
}

void rt_fill_uniform_at(float *x, int64_t first, int64_t n, float lo, float hi, uint64_t seed, uint64_t instance)
{
	uint64_t key = key_of(seed, instance);
	double a = lo, w = (double)hi - (double)lo;
	for (int64_t i = 0; i < n; i++)
		x[i] = (float)(a + w * unit(draw(key, (uint64_t)(first + i))));
}

void rt_fill_normal_at(float *x, int64_t first, int64_t n, float mean, float std, uint64_t seed, uint64_t instance)
{
	uint64_t key = key_of(seed, instance);
	Coefs q;
	coefs_init(&q);
	int64_t end = first + n;
	for (int64_t i = first & ~(int64_t)1; i < end; i += 2) {   /* one Box-Muller pair: i from cos, i+1 from sin */
		uint64_t p = (uint64_t)i >> 1;
		double u1 = 1.0 - unit(draw(key, 2 * p)), u2 = unit(draw(key, 2 * p + 1));
		double r = sqrt(-2.0 * det_log(u1, &q)), c, s;
		det_cossin(u2, &c, &s, &q);
		if (i >= first)
			x[i - first] = (float)((double)mean + (double)std * r * c);
		if (i + 1 < end)
			x[i + 1 - first] = (float)((double)mean + (double)std * r * s);
	}
}

void rt_fill_uniform(float *x, int64_t n, float lo, float hi, uint64_t seed, uint64_t instance)
{
	rt_fill_uniform_at(x, 0, n, lo, hi, seed, instance);
}

void rt_fill_normal(float *x, int64_t n, float mean, float std, uint64_t seed, uint64_t instance)
{
	rt_fill_normal_at(x, 0, n, mean, std, seed, instance);
}
