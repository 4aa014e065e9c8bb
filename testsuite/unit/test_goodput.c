/* testsuite/unit/test_goodput.c: cmocka tests of the goodput model (runtime/goodput.h): the
 * Llama 3 default rate, Young's and Daly's intervals by hand, the analytic optimum, and the
 * simulation against the analytic fraction within its own standard error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "runtime/goodput.h"

/* 466 / (54 x 24 x 16384) = 466 / 21233664 = 2.19463e-5 per GPU-hour. */
static void default_rate(void **state)
{
	(void)state;
	assert_true(fabs(rt_goodput_default_rate() - 466.0 / 21233664.0) < 1e-18);
}

/* delta = 200 s, M = 20000 s: Young sqrt(2 x 200 x 20000) = 2828.43 s; Daly: x = delta/2M =
 * 0.005, 2828.4271 (1 + 0.0707107/3 + 0.005/9) = 2828.4271 x 1.0241258 = 2896.6651, - 200 = 2696.6651 s. */
static void intervals_by_hand(void **state)
{
	(void)state;
	assert_true(fabs(rt_young_interval(200, 20000) - 2828.4271247) < 1e-6);
	assert_true(fabs(rt_daly_interval(200, 20000) - 2696.6651) < 1e-3);
	assert_true(rt_daly_interval(5e4, 2e4) == 2e4);           /* delta >= 2M: M */
	/* the analytic optimum lies near Daly's (his is its series), and beats both */
	double best = rt_goodput_best_interval(200, 300, 20000);
	assert_true(fabs(best - rt_daly_interval(200, 20000)) / best < 0.01);
	double fb = rt_goodput_fraction(best, 200, 300, 20000);
	assert_true(fb >= rt_goodput_fraction(rt_daly_interval(200, 20000), 200, 300, 20000));
	assert_true(fb >= rt_goodput_fraction(rt_young_interval(200, 20000), 200, 300, 20000));
	/* without failures the fraction tends to tau / (tau + delta) */
	assert_true(fabs(rt_goodput_fraction(1000, 100, 50, 1e12) - 1000.0 / 1100) < 1e-6);
}

/* The simulation estimates the same expectation: they agree within 6 standard errors (the
 * chance of a larger deviation of a mean of 2e5 segments is below 2e-9), at the optimum and at
 * a poor interval (tau = M) where the model's exponential terms matter. */
static void simulation_agrees(void **state)
{
	(void)state;
	double d = 200, r = 300, m = 20000, se;
	double taus[] = { rt_goodput_best_interval(d, r, m), m, 0.1 * m };
	for (int i = 0; i < 3; i++) {
		double f = rt_goodput_fraction(taus[i], d, r, m), s = rt_goodput_simulate(taus[i], d, r, m, 200000, 7, &se);
		assert_true(se > 0 && se < 0.01);
		assert_true(fabs(s - f) <= 6 * se);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(default_rate),
		cmocka_unit_test(intervals_by_hand),
		cmocka_unit_test(simulation_agrees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
