/* tools/cmd_goodput.c: `aicc goodput PLAN.aip`: the expected fraction of time a job built from a
 * plan does useful work under failures, with checkpoints every tau seconds (runtime/goodput.h,
 * docs/resilience.md).  The checkpoint is the plan's constants (its weights, and a training
 * plan's optimizer state where it holds it as constants), written and read by the machines the
 * plan spans at the machine file's <storage> bandwidth each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/goodput.h"
#include "runtime/plan.h"
#include "targets/machine.h"
#include "tools/driver.h"

static void help(void)
{
	printf("usage: aicc goodput PLAN.aip [--devices N] [--failure-rate R] [--restart S]\n"
	       "                   [--storage-bandwidth B] [--interval S] [--seed N]\n"
	       "  --devices N            devices of the whole job (default: the plan's); data-parallel\n"
	       "                         replicas of the plan fill the rest\n"
	       "  --failure-rate R       failures per device-hour (default: the Llama 3 report's 466\n"
	       "                         interruptions in 54 days on 16384 GPUs, 2.195e-05)\n"
	       "  --restart S            seconds to relaunch after a failure, before reading the\n"
	       "                         checkpoint back (default 0: not known)\n"
	       "  --storage-bandwidth B  bytes/s per machine (default: the machine file's <storage>)\n"
	       "  --interval S           also evaluate this checkpoint interval\n"
	       "  --seed N               the simulation's seed (default 1)\n");
}

static int num_opt(int argc, char **argv, int *i, const char *name, double *v)
{
	const char *s;
	int r = opt_value(argc, argv, i, name, &s);
	if (r <= 0)
		return r;
	char *end;
	*v = strtod(s, &end);
	if (end == s || *end || !(*v >= 0) || !isfinite(*v)) {
		drv_error("%s expects a non-negative number, got '%s'", name, s);
		return -1;
	}
	return 1;
}

int cmd_goodput(int argc, char **argv)
{
	const char *path = NULL;
	double devices = 0, rate = rt_goodput_default_rate(), restart = 0, bw = 0, interval = 0, seed = 1;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			return EXIT_OK;
		}
		if ((r = num_opt(argc, argv, &i, "--devices", &devices)) || (r = num_opt(argc, argv, &i, "--failure-rate", &rate)) ||
		    (r = num_opt(argc, argv, &i, "--restart", &restart)) ||
		    (r = num_opt(argc, argv, &i, "--storage-bandwidth", &bw)) ||
		    (r = num_opt(argc, argv, &i, "--interval", &interval)) || (r = num_opt(argc, argv, &i, "--seed", &seed))) {
			if (r < 0)
				return EXIT_USER;
			continue;
		}
		if (drv_operand(argv[i], &path, "plan", "goodput") < 0)
			return EXIT_USER;
	}
	if (!path) {
		drv_error("no plan given (see aicc goodput --help)");
		return EXIT_USER;
	}
	RtError e;
	Plan *p = plan_read(path, &e);
	if (!p) {
		fprintf(stderr, "%s\n", e.msg);
		return EXIT_USER;
	}
	double bytes = 0;
	for (int i = 0; i < p->nconsts; i++)
		bytes += (double)p->buffers[p->consts[i].buffer].size;
	int per_machine = 1;
	const char *bw_src = "--storage-bandwidth", *storage = "storage";
	Machine *m = machine_load(p->machine, stderr);
	if (m) {
		for (int i = 0; i < m->ndevs; i++)
			if (!m->devs[i].is_host && num_has(&m->devs[i].count)) {
				per_machine = (int)m->devs[i].count.v;
				break;
			}
		if (bw <= 0 && num_has(&m->storage_bw)) {
			bw = m->storage_bw.v;
			bw_src = m->storage_bw.source;
			storage = m->storage_id;
		}
	}
	int rc = EXIT_OK;
	if (!(bw > 0)) {
		drv_error("machine '%s' gives no <storage> bandwidth: give --storage-bandwidth", p->machine);
		rc = EXIT_USER;
		goto out;
	}
	int ndev = p->ndevices, machines = (ndev + per_machine - 1) / per_machine;
	if (devices < ndev)
		devices = ndev;
	double mtbf = 3600 / (rate * devices), delta = bytes / (bw * machines), back = restart + delta;
	double young = rt_young_interval(delta, mtbf), daly = rt_daly_interval(delta, mtbf);
	double best = rt_goodput_best_interval(delta, back, mtbf);
	printf("plan           %s: %d device(s) on %d machine(s) of %s; job of %.0f devices (%.0f replica(s))\n", path,
	       ndev, machines, p->machine, devices, floor(devices / ndev));
	printf("failures       %.4g per device-hour x %.0f devices: MTBF %.4g h%s\n", rate, devices, mtbf / 3600,
	       rate == rt_goodput_default_rate() ? " (Llama 3 report, arXiv:2407.21783 §3.3.4: 466 interruptions in 54 days on 16384 GPUs)" : "");
	printf("checkpoint     %.4g GB (the plan's constants) at %.4g GB/s x %d machine(s) (%s, source %s): write %.4g s\n",
	       bytes / 1e9, bw / 1e9, machines, storage, bw_src, delta);
	printf("restart        %.4g s relaunch + %.4g s reading the checkpoint = %.4g s\n", restart, delta, back);
	double taus[4] = { young, daly, best, interval };
	const char *names[4] = { "Young", "Daly", "best", "given" };
	for (int k = 0; k < 4; k++) {
		if (k == 3 && !(interval > 0))
			break;
		double se, f = rt_goodput_fraction(taus[k], delta, back, mtbf);
		double s = rt_goodput_simulate(taus[k], delta, back, mtbf, 100000, (uint64_t)seed, &se);
		printf("interval %-5s %.4g s (%.4g min): useful work %.4f (model), %.4f +- %.4f (simulated)\n", names[k],
		       taus[k], taus[k] / 60, f, s, se);
	}
out:
	if (m)
		machine_free(m);
	plan_free(p);
	return rc;
}
