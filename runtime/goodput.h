/* runtime/goodput.h: useful work under failures with periodic checkpoints (docs/resilience.md).
 *
 * A job of N devices fails as a Poisson process of rate N x lambda (lambda: failures per
 * device-hour), so its mean time between failures is M = 1 / (N lambda).  It computes for tau
 * seconds, writes a checkpoint for delta seconds, and repeats; a failure loses the work since
 * the last checkpoint and costs R seconds of restart (relaunch plus reading the checkpoint back),
 * during which it may fail again.  Times in seconds.
 *
 * Default failure rate: the Llama 3 report (Llama Team, "The Llama 3 Herd of Models",
 * arXiv:2407.21783, §3.3.4): 466 job interruptions in a 54-day snapshot of 16,384 H100 GPUs
 * (47 planned, 419 unexpected): 466 / (54 x 24 x 16384) per GPU-hour. */
#ifndef AICC_RUNTIME_GOODPUT_H
#define AICC_RUNTIME_GOODPUT_H
#include <stdint.h>

#define RT_LLAMA3_INTERRUPTIONS 466.0
#define RT_LLAMA3_DAYS 54.0
#define RT_LLAMA3_GPUS 16384.0
/* failures per device-hour from the Llama 3 figures above */
double rt_goodput_default_rate(void);

/* Young's first-order optimum interval (J. W. Young, "A first order approximation to the optimum
 * checkpoint interval", CACM 17(9), 1974): sqrt(2 delta M). */
double rt_young_interval(double delta, double mtbf);
/* Daly's higher-order optimum (J. T. Daly, "A higher order estimate of the optimum checkpoint
 * interval for restart dumps", FGCS 22(3), 2006): for delta < 2M,
 * sqrt(2 delta M) (1 + sqrt(delta/(2M))/3 + delta/(18 M)) - delta, else M. */
double rt_daly_interval(double delta, double mtbf);
/* The expected useful fraction of wall time (Daly 2006, the restart model above):
 * tau / (M e^(R/M) (e^((tau + delta)/M) - 1)).  0 for tau <= 0. */
double rt_goodput_fraction(double tau, double delta, double restart, double mtbf);
/* The tau that maximises rt_goodput_fraction (golden-section search on [delta/1e3 + 1e-9,
 * 20 M + 20 delta]; the fraction is unimodal in tau), to a relative 1e-9. */
double rt_goodput_best_interval(double delta, double restart, double mtbf);
/* The same fraction by simulation: `segments` intervals of tau of work, failures drawn from the
 * Poisson process (exponential gaps -M ln(1 - U), U from rt_rand_u64(seed, 0, j), j counting
 * draws), in the restart model above.  Returns useful work / wall time, and its standard error
 * in *stderr_out (from the per-segment wall times, so a test can bound the difference). */
double rt_goodput_simulate(double tau, double delta, double restart, double mtbf, int64_t segments,
			   uint64_t seed, double *stderr_out);
#endif
