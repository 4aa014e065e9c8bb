/* tools/cmd_run.c: `aicc run PLAN [options]`: load and verify a plan, bind inputs, execute it in
 * the reference interpreter (runtime/interp.h), simulate its time, write outputs (.npy), a JSON
 * report and a Chrome trace, and with --check compare against the reference plan of the same
 * graph.  Prints a human summary on stdout; exit 1 on user errors or a failed check. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/interp.h"
#include "runtime/npy.h"
#include "targets/target.h"
#include "tools/driver.h"
#include "tools/plan_build.h"
#include "tools/progress.h"

#define MAX_INPUTS 256
#define DEVICE_LINES 8   /* past this many devices the summary is per device kind (viz) */

typedef struct RunOpts {
	const char *plan, *outdir, *report, *trace;
	const char *inputs[MAX_INPUTS];
	int ninputs;
	uint64_t seed;
	int check, per_node, timing_only;
	int per_device;          /* --per-device: a compute and a memory line per device (viz) */
	long repeat;             /* --repeat N: runs of the loaded plan, timed (0: one, untimed) */
	int64_t max_host;        /* --max-host-memory: bytes (0: what the host has) */
} RunOpts;

static void run_help(void)
{
	printf("usage: aicc run PLAN.aip [options]\n"
	       "  --input NAME=FILE      bind an input (or an unbound parameter) to FILE.npy or FILE.pb\n"
	       "                         (an ONNX TensorProto); repeatable\n"
	       "  --seed N               seed for inputs given no data (default 0)\n"
	       "  --output-dir DIR       write every output as DIR/<name>.npy\n"
	       "  --report FILE.json     write the JSON report\n"
	       "  --trace FILE.json      write a Chrome trace-event timeline (Perfetto)\n"
	       "  --check                compare against the reference plan of the same graph\n"
	       "  --per-node             with --check: report the first node out of tolerance\n"
	       "  --timing-only          simulate time and memory without computing values\n"
	       "  --per-device           a compute and a memory line for every device (default: per\n"
	       "                         device kind with the busiest named, past %d devices)\n"
	       "  --repeat N             load the plan once (weights bound once) and run it N times;\n"
	       "                         prints the load, first-run and steady-state host times\n"
	       "  --max-host-memory SIZE host memory the run may take (e.g. 2GiB; default: what is\n"
	       "                         available: MemAvailable, the memory cgroup, ulimit -v)\n", DEVICE_LINES);
}

static int parse_flag(RunOpts *o, const char *a)
{
	if (strcmp(a, "--check") == 0)
		return o->check = 1;
	if (strcmp(a, "--per-node") == 0)
		return o->per_node = 1;
	if (strcmp(a, "--timing-only") == 0)
		return o->timing_only = 1;
	if (strcmp(a, "--per-device") == 0)
		return o->per_device = 1;
	return 0;
}

static int parse_opts(int argc, char **argv, RunOpts *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			run_help();
			exit(EXIT_OK);
		}
		if (parse_flag(o, argv[i]))
			continue;
		if ((r = opt_value(argc, argv, &i, "--output-dir", &o->outdir)) ||
		    (r = opt_value(argc, argv, &i, "--report", &o->report)) ||
		    (r = opt_value(argc, argv, &i, "--trace", &o->trace))) {
			if (r < 0)
				return -1;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--input", &v))) {
			if (r < 0)
				return -1;
			if (o->ninputs == MAX_INPUTS || !strchr(v, '=') || v[0] == '=') {
				drv_error("--input expects NAME=FILE(.npy|.pb) (at most %d), got '%s'", MAX_INPUTS, v);
				return -1;
			}
			o->inputs[o->ninputs++] = v;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--repeat", &v))) {
			char *end;
			errno = 0;
			if (r < 0 || (o->repeat = strtol(v, &end, 10), *end || errno || o->repeat < 1 || o->repeat > 1000000)) {
				drv_error("--repeat expects a count in 1..1000000, got '%s'", r < 0 ? "" : v);
				return -1;
			}
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--max-host-memory", &v))) {
			if (r < 0 || (o->max_host = drv_parse_size(v)) <= 0) {
				drv_error("--max-host-memory expects a size such as 512MiB or 2GiB, got '%s'", r < 0 ? "" : v);
				return -1;
			}
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--seed", &v))) {
			char *end;
			errno = 0;
			if (r < 0 || (o->seed = strtoull(v, &end, 10), *end || errno || v[0] == '-')) {
				drv_error("--seed expects a non-negative integer");
				return -1;
			}
			continue;
		}
		if (strncmp(argv[i], "--set", 5) == 0 && (!argv[i][5] || argv[i][5] == '=')) {
			drv_error("aicc run takes no --set: a plan's costs are computed from the machine's numbers "
				  "when it is compiled; give --set to aicc compile and run the new plan");
			return -1;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			drv_error("unknown option '%s' (see aicc run --help)", argv[i]);
			return -1;
		}
		if (o->plan) {
			drv_error("more than one plan given ('%s' and '%s')", o->plan, argv[i]);
			return -1;
		}
		o->plan = argv[i];
	}
	if (!o->plan)
		drv_error("no plan given (see aicc run --help)");
	else if (o->per_node && !o->check)
		drv_error("--per-node needs --check");
	else if (o->check && o->timing_only)
		drv_error("--check compares values; it cannot be combined with --timing-only");
	else if (o->check && o->repeat)
		drv_error("--repeat times the plan alone; it cannot be combined with --check");
	else
		return 0;
	return -1;
}

/* Whether the plan has an input or a constant (a parameter) named name (len n). */
static int plan_bindable(const Plan *p, const char *name, size_t n)
{
	for (int i = 0; i < p->ninputs; i++)
		if (strlen(p->inputs[i].name) == n && strncmp(p->inputs[i].name, name, n) == 0)
			return 1;
	for (int i = 0; i < p->nconsts; i++) {
		const char *b = p->buffers[p->consts[i].buffer].name;
		if (strlen(b) == n && strncmp(b, name, n) == 0)
			return 1;
	}
	return 0;
}

/* The dtype of the input or parameter named name (len n) (plan_bindable said it exists). */
static DType plan_bindable_dtype(const Plan *p, const char *name, size_t n)
{
	for (int i = 0; i < p->ninputs; i++)
		if (strlen(p->inputs[i].name) == n && strncmp(p->inputs[i].name, name, n) == 0)
			return p->buffers[p->inputs[i].buffer].dtype;
	for (int i = 0; i < p->nconsts; i++) {
		const PlanBuffer *b = &p->buffers[p->consts[i].buffer];
		if (strlen(b->name) == n && strncmp(b->name, name, n) == 0)
			return b->dtype;
	}
	return DT_INVALID;
}

/* --seed: says on stderr which inputs get seeded random data (no --input for them). */
static void note_seeded(const RunOpts *o, const Plan *p)
{
	char list[1024];
	size_t k = 0;
	int n = 0;
	list[0] = 0;
	for (int i = 0; i < p->ninputs; i++) {
		const char *name = p->inputs[i].name;
		int given = 0;
		for (int j = 0; j < o->ninputs && !given; j++)
			given = strncmp(o->inputs[j], name, strlen(name)) == 0 && o->inputs[j][strlen(name)] == '=';
		if (given || !plan_io_first(p->inputs, i))
			continue;
		if (k + strlen(name) + 8 < sizeof list)
			k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", n ? ", " : "", name);
		else if (k + 5 < sizeof list && !strstr(list, "..."))
			k += (size_t)snprintf(list + k, sizeof list - k, ", ...");
		n++;
	}
	if (n)
		fprintf(stderr, "aicc: note: %d input%s given no data get%s seeded random values (--seed %llu): %s\n", n,
			n == 1 ? "" : "s", n == 1 ? "s" : "", (unsigned long long)o->seed, list);
}

/* Reads every --input file into tensors; bindings point into ts. */
static int read_inputs(const RunOpts *o, const Plan *p, RtTensor *ts, RtBinding *b)
{
	for (int i = 0; i < o->ninputs; i++) {
		const char *eq = strchr(o->inputs[i], '=');
		if (!plan_bindable(p, o->inputs[i], (size_t)(eq - o->inputs[i]))) {
			drv_error("--input %s: the plan has no input or parameter '%.*s'", o->inputs[i],
				  (int)(eq - o->inputs[i]), o->inputs[i]);
			return -1;
		}
		if (drv_read_tensor(eq + 1, &ts[i]) < 0)
			return -1;
		DType want = plan_bindable_dtype(p, o->inputs[i], (size_t)(eq - o->inputs[i]));
		/* the data's dtype must be the plan's; f32 data may feed a narrower float (rounded to
		 * its grid, as the reference does), nothing is converted silently otherwise */
		if (ts[i].dtype != want && !(ts[i].dtype == DT_F32 && rt_dtypes[want].storage == S_F32 &&
					     rt_dtype_isfloat(want))) {
			drv_error("--input %s: the data is %s, but the plan's '%.*s' is %s", o->inputs[i],
				  rt_dtype_name(ts[i].dtype), (int)(eq - o->inputs[i]), o->inputs[i], rt_dtype_name(want));
			rt_tensor_free(&ts[i]);
			return -1;
		}
		b[i].name = strndup(o->inputs[i], (size_t)(eq - o->inputs[i]));
		b[i].t = &ts[i];
	}
	return 0;
}

/* The file of output i in dir: DIR/<name>.npy, a '/' in the name written '_' (malloc'd). */
static char *output_path(const Plan *p, int i, const char *dir)
{
	size_t n = strlen(dir) + strlen(p->outputs[i].name) + 6;
	char *f = malloc(n);
	if (!f)
		return NULL;
	snprintf(f, n, "%s/%s.npy", dir, p->outputs[i].name);
	for (char *c = f + strlen(dir) + 1; *c; c++)
		if (*c == '/')
			*c = '_';
	return f;
}

/* Opens the next member of the run's output group (files[*n]) on path. */
static int group_open(OutFile *g, int *n, const char *path)
{
	if (out_open(&g[*n], path) < 0)
		return -1;
	(*n)++;
	return 0;
}

/* Finishes the member just written: its stream closed, its temporary kept for the commit. */
static int group_close(OutFile *g, int n, int rc)
{
	RtError e = { 0 };
	if (rc == 0 && rt_out_close(&g[n - 1], &e) < 0) {
		drv_report(e.msg);
		return -1;
	}
	return rc;
}

/* Writes outputs as DIR/<name>.npy into the group g (*n members so far); files[i] receives each
 * path (malloc'd).  *made: the directory did not exist and was created here. */
static int write_outputs(const Plan *p, const RtRun *r, const char *dir, char **files, OutFile *g, int *n, int *made)
{
	if (mkdir(dir, 0777) == 0)
		*made = 1;
	else if (errno != EEXIST) {
		drv_error("cannot create output directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < p->noutputs; i++) {
		if (!plan_io_first(p->outputs, i))
			continue;     /* a sharded output is written once, assembled */
		if (!(files[i] = output_path(p, i, dir))) {
			drv_error("out of memory");
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (files[j] && strcmp(files[i], files[j]) == 0) {
				drv_error("outputs '%s' and '%s' would both be written to '%s'", p->outputs[j].name,
					  p->outputs[i].name, files[i]);
				return -1;
			}
		RtError e = { 0 };
		if (group_open(g, n, files[i]) < 0)
			return -1;
		int rc = rt_npy_fwrite(g[*n - 1].f, &r->outputs[i], &e);
		if (rc < 0)
			drv_report(e.msg);
		if (group_close(g, *n, rc) < 0)
			return -1;
	}
	return 0;
}

/* Scales v into a short human number with SI prefix. */
static const char *si(double v, const char *unit, char *buf, size_t n)
{
	const char *pre[] = { "", "k", "M", "G", "T", "P", "E" };
	int k = 0;
	while (v >= 1000 && k < 6)
		v /= 1000, k++;
	snprintf(buf, n, "%.4g %s%s", v, pre[k], unit);
	return buf;
}

static const char *seconds(double s, char *buf, size_t n)
{
	if (s >= 1 || s == 0)
		snprintf(buf, n, "%.4g s", s);
	else if (s >= 1e-3)
		snprintf(buf, n, "%.4g ms", s * 1e3);
	else if (s >= 1e-6)
		snprintf(buf, n, "%.4g us", s * 1e6);
	else
		snprintf(buf, n, "%.4g ns", s * 1e9);
	return buf;
}

/* viz: compute and memory per device, or past DEVICE_LINES devices per device kind (a pool's
 * space per space kind) with the busiest device and the fullest space named. */
static void devices(const Plan *p, const RtTiming *t, int per_device)
{
	char a[64], b[64], d[64], f[64];
	for (int i = 0; (per_device || p->ndevices <= DEVICE_LINES) && i < p->ndevices; i++) {
		double ach = t->latency_s > 0 ? t->dev_flops[i] / t->latency_s : 0;
		printf("compute        %s in %s busy on %s: %s/s achieved, %.2f%% of peak %s/s\n",
		       si(t->dev_flops[i], "FLOP", a, sizeof a), seconds(t->busy_s[i], d, sizeof d), p->devices[i].name,
		       si(ach, "FLOP", b, sizeof b), 100 * ach / p->devices[i].peak_flops,
		       si(p->devices[i].peak_flops, "FLOP", f, sizeof f));
	}
	for (int s = 0; (per_device || p->ndevices <= DEVICE_LINES) && s < p->nspaces; s++)
		printf("memory         %s: %s moved, peak %s of %s\n", p->spaces[s].name, si(t->bytes[s], "B", a, sizeof a),
		       si((double)t->peak_bytes[s], "B", b, sizeof b), si((double)p->spaces[s].capacity, "B", d, sizeof d));
	if (per_device || p->ndevices <= DEVICE_LINES)
		return;
	for (int k = 0; k < p->ndevices; k++) {   /* one compute line per device kind */
		int first = 1, n = 0, top = k;
		for (int j = 0; j < k; j++)
			first &= strcmp(p->devices[j].kind, p->devices[k].kind) != 0;
		double flops = 0, busy = 0, peak = 0;
		for (int j = k; first && j < p->ndevices; j++)
			if (!strcmp(p->devices[j].kind, p->devices[k].kind)) {
				n++, flops += t->dev_flops[j], busy += t->busy_s[j], peak += p->devices[j].peak_flops;
				top = t->busy_s[j] > t->busy_s[top] ? j : top;
			}
		if (!first)
			continue;
		double ach = t->latency_s > 0 ? flops / t->latency_s : 0, tach = t->latency_s > 0 ? t->dev_flops[top] / t->latency_s : 0;
		printf("compute        %s on %d %s devices: %s/s achieved, %.2f%% of their peak %s/s; %s busy in all\n",
		       si(flops, "FLOP", a, sizeof a), n, p->devices[k].kind, si(ach, "FLOP", b, sizeof b), peak > 0 ? 100 * ach / peak : 0,
		       si(peak, "FLOP", f, sizeof f), seconds(busy, d, sizeof d));
		printf("busiest        %s: %s in %s busy, %.2f%% of peak\n", p->devices[top].name,
		       si(t->dev_flops[top], "FLOP", a, sizeof a), seconds(t->busy_s[top], d, sizeof d),
		       100 * tach / p->devices[top].peak_flops);
	}
	for (int s = 0; s < p->nspaces; s++) {   /* one memory line per kind of space ("lpu" "sram") */
		const char *kind = p->devices[p->spaces[s].device].kind, *suf = strchr(p->spaces[s].name, '.');
		suf = suf ? suf + 1 : p->spaces[s].name;
		int first = 1, n = 0, top = s;
		for (int j = 0; j < s && first; j++) {
			const char *sj = strchr(p->spaces[j].name, '.');
			first = strcmp(p->devices[p->spaces[j].device].kind, kind) || strcmp(sj ? sj + 1 : p->spaces[j].name, suf);
		}
		double moved = 0;
		for (int j = s; first && j < p->nspaces; j++) {
			const char *sj = strchr(p->spaces[j].name, '.');
			if (strcmp(p->devices[p->spaces[j].device].kind, kind) || strcmp(sj ? sj + 1 : p->spaces[j].name, suf))
				continue;
			n++, moved += t->bytes[j];
			top = (double)t->peak_bytes[j] / (double)p->spaces[j].capacity >
			      (double)t->peak_bytes[top] / (double)p->spaces[top].capacity ? j : top;
		}
		if (first)
			printf("memory         %s %s (%d spaces): %s moved in all; fullest %s: peak %s of %s\n", kind, suf, n,
			       si(moved, "B", a, sizeof a), p->spaces[top].name, si((double)t->peak_bytes[top], "B", b, sizeof b),
			       si((double)p->spaces[top].capacity, "B", d, sizeof d));
	}
	printf("devices        %d: one line per kind above; --per-device lists each\n", p->ndevices);
}

static void summary(const Plan *p, const RtRun *r, const RtCheck *c, char **files, int per_device)
{
	const RtTiming *t = &r->timing;
	char a[64];
	printf("plan %s: target %s, machine %s\n", p->file, p->target, p->machine);
	printf("latency        %s\n", seconds(t->latency_s, a, sizeof a));
	RtPhase ph;     /* phases: TTFT of a prefill plan, TPOT of a decode step */
	if (rt_phase_metrics(p, t->latency_s, &ph) == 0 && ph.tpot_s > 0)
		printf("TPOT           %s (decode, batch %lld, %lld past tokens): %.4g tokens/s per user, %.4g tokens/s\n",
		       seconds(ph.tpot_s, a, sizeof a), (long long)ph.batch, (long long)ph.context, ph.tokens_per_s_user,
		       ph.tokens_per_s);
	else if (ph.phase && ph.ttft_s > 0)
		printf("TTFT           %s (prefill, batch %lld, %lld prompt tokens): %.4g prompt tokens/s\n",
		       seconds(ph.ttft_s, a, sizeof a), (long long)ph.batch, (long long)ph.context, ph.tokens_per_s);
	RtBand band;     /* the error band of the prediction (targets/bands.def, from make validate) */
	if (rt_band(p, t, &band) == 0) {
		char least[160];
		if (band.least_band < 0)
			snprintf(least, sizeof least, "%s: no published case covers it (%.0f%% of the busy time)", band.least,
				 100 * band.least_s / fmax(band.covered_s + band.uncovered_s, 1e-30));
		else
			snprintf(least, sizeof least, "%s, +-%.0f%% worst over %d cases", band.least, 100 * band.least_band,
				 band.least_cases);
		const TgtBand *e2e = tgt_band(p->target, "end-to-end");
		char e2es[96] = "";
		if (e2e)
			snprintf(e2es, sizeof e2es, "; end-to-end cases on %s: median %.0f%%, worst %.0f%% (%d)", p->target,
				 100 * e2e->median, 100 * e2e->worst, e2e->cases);
		if (band.covered_s <= 0)
			printf("error band     unknown: no published case covers any of its kernel classes (%s)%s\n", least, e2es);
		else
			printf("error band     +-%.0f%% typical, +-%.0f%% worst (its kernel classes' residuals in make validate, "
			       "time-weighted); least calibrated: %s%s\n", 100 * band.rel_median, 100 * band.rel, least, e2es);
	}
	int gaps = tgt_coverage_remarks(p, NULL);
	if (gaps)
		printf("not modelled   %d instruction%s priced by a generic fallback, not a model of their own (t.coverage; "
		       "aicc compile --remarks=all lists them)\n", gaps, gaps == 1 ? "" : "s");
	if (t->nload > 0)   /* weight transforms run once at load, outside the latency above */
		printf("load           %s once, before the first step (%d kernel%s with phase=load)\n",
		       seconds(t->load_s, a, sizeof a), t->nload, t->nload == 1 ? "" : "s");
	devices(p, t, per_device);
	for (int i = 0; r->outputs && i < p->noutputs; i++)
		if (plan_io_first(p->outputs, i))
			printf("output         %s %s%s%s\n", p->outputs[i].name, rt_dtype_name(r->outputs[i].dtype),
			       files[i] ? " -> " : "", files[i] ? files[i] : "");
	for (int i = 0; c && i < c->nouts; i++)
		printf("check          %s: max_abs_err %.3g, max_rel_err %.3g, tolerance %.3g: %s\n", c->outs[i].name,
		       c->outs[i].max_abs, c->outs[i].max_rel, c->outs[i].tolerance, c->outs[i].ok ? "ok" : "FAIL");
	if (c && c->first_bad_node)
		printf("first bad node %s (buffer %s): max_rel_err %.3g > tolerance %.3g\n", c->first_bad_node,
		       c->first_bad_buffer, c->first_bad_err, c->first_bad_tol);
}

/* The JSON report (trace 0) or the Chrome trace (trace 1) into the group g. */
static int write_json(const char *path, const Plan *p, const RtRun *r, const RtCheck *c, char **files, int trace,
		      OutFile *g, int *n)
{
	if (group_open(g, n, path) < 0)
		return -1;
	FILE *f = g[*n - 1].f;
	int rc = trace ? rt_trace_write(p, &r->timing, f) : rt_report_write(p, r, c, (const char *const *)files, f);
	return group_close(g, *n, rc);
}

/* Writes everything the run was asked for as one output group: every .npy of --output-dir, then
 * the report, then the trace, each written to a temporary and closed, then all renamed into
 * place together, so a failure (or SIGINT/SIGTERM) leaves none of them. */
static int write_files(const RunOpts *o, const Plan *p, const RtRun *r, const RtCheck *c, char **files)
{
	int max = p->noutputs + 2, n = 0, made = 0;
	OutFile *g = calloc((size_t)max, sizeof *g);
	if (!g) {
		drv_error("out of memory");
		return -1;
	}
	int rc = 0;
	if (o->outdir && !o->timing_only)
		rc = write_outputs(p, r, o->outdir, files, g, &n, &made);
	if (rc == 0 && o->report)
		rc = write_json(o->report, p, r, c, files, 0, g, &n);
	if (rc == 0 && o->trace)
		rc = write_json(o->trace, p, r, NULL, files, 1, g, &n);
	if (rc == 0)
		rc = out_commit_group(g, n);
	else
		for (int i = 0; i < n; i++)
			out_abort(&g[i]);
	if (rc < 0 && made)
		rmdir(o->outdir);     /* created for this run, left empty */
	free(g);
	return rc;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* --repeat: host times of the loaded plan, as onnxruntime users read them (session creation,
 * the first run, the median of the others). */
static void host_times(const RtLoadStats *ls, double load, double *runs, long n)
{
	char a[64], b[64], c[64];
	printf("host load      %s: %d constant%s bound once, %d mapped in place (%.4g MB of %.4g MB)\n",
	       seconds(load, a, sizeof a), ls->nconsts, ls->nconsts == 1 ? "" : "s", ls->nmapped,
	       (double)ls->mapped_bytes / 1e6, (double)ls->bytes / 1e6);
	if (n == 1) {
		printf("host run       first %s (one run)\n", seconds(runs[0], a, sizeof a));
		return;
	}
	double first = runs[0];
	qsort(runs + 1, (size_t)(n - 1), sizeof *runs, by_double);
	double med = (n - 1) % 2 ? runs[1 + (n - 1) / 2] : 0.5 * (runs[(n - 1) / 2] + runs[(n - 1) / 2 + 1]);
	printf("host run       first %s, steady state %s (median of %ld runs, min %s)\n", seconds(first, a, sizeof a),
	       seconds(med, b, sizeof b), n - 1, seconds(runs[1], c, sizeof c));
}

/* Runs (or checks) the loaded plan and writes everything asked for. */
static int execute(const RunOpts *o, const Plan *p, RtBinding *bind)
{
	RtRun r;
	RtCheck c = { 0 };
	RtError e = { 0 };
	char *dir = strdup(o->plan);
	RtRunOpts ro = { bind, o->ninputs, o->seed, o->timing_only, 0, dirname(dir), drv_host_available(), progress_step, NULL };
	if (o->max_host > 0 && (ro.host_limit <= 0 || o->max_host < ro.host_limit))
		ro.host_limit = o->max_host;
	int rc;
	double *runs = NULL, load = 0;
	RtLoadStats ls = { 0 };
	if (o->check)
		rc = rt_check(p, &ro, o->per_node, &r, &c, &e);
	else {
		double t0 = now_s();
		RtSession *s = rt_session_new(p, &ro, &e);
		load = now_s() - t0;
		long n = o->repeat ? o->repeat : 1;
		runs = calloc((size_t)n, sizeof *runs);
		rc = s && runs ? 0 : -1;
		if (s && !runs)
			rt_errorf(&e, RT_ENOMEM, "out of memory");
		for (long i = 0; rc == 0 && i < n; i++) {
			if (i)
				rt_run_free(p, &r);
			t0 = now_s();
			rc = rt_session_run(s, &ro, &r, &e);
			runs[i] = now_s() - t0;
		}
		if (s)
			ls = *rt_session_stats(s);
		if (rc == 0 && !o->timing_only)    /* outputs are owned copies: they outlive the session */
			for (int i = 0; i < p->noutputs; i++)
				assert(!r.outputs[i].data || r.outputs[i].owns);
		rt_session_free(s);
	}
	progress_end();   /* viz: the progress line is gone before anything else is printed */
	if (rc < 0) {
		drv_report(e.msg);
		free(dir);
		free(runs);
		return e.code == RT_EINTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}
	char **files = calloc((size_t)p->noutputs + 1, sizeof *files);
	int st = EXIT_OK;
	if (!files || write_files(o, p, &r, o->check ? &c : NULL, files) < 0)
		st = EXIT_USER;
	if (st == EXIT_OK)
		summary(p, &r, o->check ? &c : NULL, files, o->per_device);
	if (st == EXIT_OK && o->repeat)
		host_times(&ls, load, runs, o->repeat);
	if (st == EXIT_OK && o->check && !c.ok)
		st = EXIT_USER;
	for (int i = 0; files && i < p->noutputs; i++)
		free(files[i]);
	free(files);
	free(dir);
	free(runs);
	rt_check_free(&c);
	rt_run_free(p, &r);
	return st;
}

int cmd_run(int argc, char **argv)
{
	RunOpts o;
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USER;
	drv_register_runtime_hooks();
	RtError e = { 0 };
	Plan *p = plan_read(o.plan, &e);
	if (!p) {
		drv_report(e.msg);
		return e.code == RT_EINTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}
	RtTensor ts[MAX_INPUTS];
	RtBinding bind[MAX_INPUTS];
	memset(bind, 0, sizeof bind);
	int rc = read_inputs(&o, p, ts, bind) < 0 ? EXIT_USER : EXIT_OK;
	if (rc == EXIT_OK && !o.timing_only)
		note_seeded(&o, p);
	if (rc == EXIT_OK)
		rc = execute(&o, p, bind);
	for (int i = 0; i < o.ninputs; i++)
		if (bind[i].name) {
			free((char *)bind[i].name);
			rt_tensor_free(&ts[i]);
		}
	plan_free(p);
	return rc;
}
