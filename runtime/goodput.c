/* runtime/goodput.c: checkpoint/restart goodput, analytic and simulated (runtime/goodput.h). */
#include "runtime/goodput.h"

#include <math.h>

#include "runtime/random.h"

double rt_goodput_default_rate(void)
{
	return RT_LLAMA3_INTERRUPTIONS / (RT_LLAMA3_DAYS * 24 * RT_LLAMA3_GPUS);
}

double rt_young_interval(double delta, double mtbf)
{
	return sqrt(2 * delta * mtbf);
}

double rt_daly_interval(double delta, double mtbf)
{
	if (delta >= 2 * mtbf)
		return mtbf;
	double x = delta / (2 * mtbf);
	return sqrt(2 * delta * mtbf) * (1 + sqrt(x) / 3 + x / 9) - delta;
}

double rt_goodput_fraction(double tau, double delta, double restart, double mtbf)
{
	if (!(tau > 0) || !(mtbf > 0))
		return 0;
	return tau / (mtbf * exp(restart / mtbf) * expm1((tau + delta) / mtbf));
}

double rt_goodput_best_interval(double delta, double restart, double mtbf)
{
	const double g = (sqrt(5.0) - 1) / 2;
	double a = delta / 1e3 + 1e-9, b = 20 * mtbf + 20 * delta;
	double c = b - g * (b - a), d = a + g * (b - a);
	double fc = rt_goodput_fraction(c, delta, restart, mtbf), fd = rt_goodput_fraction(d, delta, restart, mtbf);
	for (int i = 0; i < 200 && b - a > 1e-9 * b; i++) {
		if (fc > fd) {
			b = d, d = c, fd = fc;
			c = b - g * (b - a);
			fc = rt_goodput_fraction(c, delta, restart, mtbf);
		} else {
			a = c, c = d, fc = fd;
			d = a + g * (b - a);
			fd = rt_goodput_fraction(d, delta, restart, mtbf);
		}
	}
	return (a + b) / 2;
}

/* The next exponential gap of mean m from the counter-based generator. */
static double gap(double m, uint64_t seed, uint64_t *j)
{
	double u = (double)(rt_rand_u64(seed, 0, (*j)++) >> 11) * 0x1p-53;
	return -m * log1p(-u);
}

double rt_goodput_simulate(double tau, double delta, double restart, double mtbf, int64_t segments,
			   uint64_t seed, double *stderr_out)
{
	uint64_t j = 0;
	double next = gap(mtbf, seed, &j), now = 0, sum = 0, sum2 = 0;
	for (int64_t s = 0; s < segments; s++) {
		double start = now;
		for (;;) {
			if (now + tau + delta <= next) {        /* the interval and its checkpoint survive */
				now += tau + delta;
				break;
			}
			now = next;                             /* lost: restart, failing again meanwhile */
			next = now + gap(mtbf, seed, &j);
			while (now + restart > next) {
				now = next;
				next = now + gap(mtbf, seed, &j);
			}
			now += restart;
		}
		double w = now - start;
		sum += w, sum2 += w * w;
	}
	double n = (double)segments, mean = sum / n, var = n > 1 ? (sum2 - n * mean * mean) / (n - 1) : 0;
	/* fraction = tau / mean wall per segment; delta method for its standard error */
	if (stderr_out)
		*stderr_out = tau * sqrt(var > 0 ? var / n : 0) / (mean * mean);
	return tau / mean;
}
