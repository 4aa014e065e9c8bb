/* tools/cmd_run.c: `aicc run PLAN [options]`: load and verify a plan, bind inputs, execute it in
 * the reference interpreter (runtime/interp.h), simulate its time, write outputs (.npy), a JSON
 * report and a Chrome trace, and with --check compare against the reference plan of the same
 * graph.  Prints a human summary on stdout; exit 1 on user errors or a failed check. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/interp.h"
#include "runtime/npy.h"
#include "targets/target.h"
#include "tools/ckpt_run.h"
#include "tools/driver.h"
#include "tools/plan_build.h"
#include "tools/progress.h"
#include "viz/viz.h"
#include "ir/suggest.h"

#define MAX_INPUTS 256
#define DEVICE_LINES 8   /* past this many devices the summary is per device kind (viz) */

typedef struct RunOpts {
	const char *plan, *outdir, *report, *trace;
	const char *inputs[MAX_INPUTS];
	int ninputs;
	uint64_t seed;
	int check, per_node, timing_only, raw;
	int per_device;          /* --per-device: a compute and a memory line per device (viz) */
	long repeat;             /* --repeat N: runs of the loaded plan, timed (0: one, untimed) */
	int mpi;                 /* --mpi: this process is one rank of an MPI job */
	long ranks_per_node;     /* --ranks-per-node R (0: as the job runs) */
	const char *rank_map;    /* --rank-map FILE */
	double mpi_timeout;      /* --mpi-timeout SECONDS (0: none) */
	int64_t max_host;        /* --max-host-memory: bytes (0: what the host has) */
	const char *load_ckpt;   /* --load-checkpoint DIR */
	const char *save_ckpt;   /* --save-checkpoint DIR */
	int ckpt_whole;          /* --checkpoint-layout whole */
} RunOpts;

static void run_help(void)
{
	printf("usage: aicc run PLAN.aip [options]\n"
	       "  --input NAME=FILE      bind an input (or an unbound parameter) to FILE.npy or FILE.pb\n"
	       "                         (an ONNX TensorProto); repeatable\n"
	       "  --seed N               seed for inputs given no data (default 0)\n"
	       "  --output-dir DIR       write every output as DIR/<name>.npy (bf16 as float32,\n"
	       "                         which numpy reads; --raw keeps bf16's 2-byte '<V2' data)\n"
	       "  --report FILE.json     write the JSON report\n"
	       "  --trace FILE.json      write a Chrome trace-event timeline (Perfetto)\n"
	       "  --check                compare against the reference plan of the same graph\n"
	       "  --per-node             with --check: report the first node out of tolerance\n"
	       "  --timing-only          simulate time and memory without computing values\n"
	       "  --per-device           a compute and a memory line for every device (default: per\n"
	       "                         device kind with the busiest named, past %d devices)\n"
	       "  --repeat N             load the plan once (weights bound once) and run it N times;\n"
	       "                         prints the load, first-run and steady-state host times\n"
	       "                         (wall and cpu)\n"
	       "  --mpi                  run as one rank of an MPI job: mpirun -np N aicc run PLAN --mpi;\n"
	       "                         each rank loads and runs its own devices (docs/distributed.md)\n"
	       "  --rank-map FILE        with --mpi: lines 'DEVICE RANK' place devices on ranks\n"
	       "                         (default: contiguous equal groups in device order)\n"
	       "  --ranks-per-node R     with --mpi: the job runs R ranks per node, node-major (checked)\n"
	       "  --mpi-timeout S        with --mpi: fail a rank that sees no progress from its peers\n"
	       "                         for S seconds (default 600; 0: wait forever)\n"
	       "  --max-host-memory SIZE host memory the run may take (e.g. 2GiB; default: what is\n"
	       "                         available: MemAvailable, the memory cgroup, ulimit -v)\n"
	       "  --load-checkpoint DIR  bind every weight (and optimizer state) from checkpoint DIR,\n"
	       "                         whatever partitioning wrote it (docs/resilience.md)\n"
	       "  --save-checkpoint DIR  write the state the run ends with (weights; a training step's\n"
	       "                         updated weights, moments and step) as a partition-agnostic\n"
	       "                         checkpoint: manifest.json and safetensors files\n"
	       "  --checkpoint-layout L  slices (default: each device's shards, one file per device)\n"
	       "                         or whole (every tensor whole, in model.safetensors)\n", DEVICE_LINES);
}

static int parse_flag(RunOpts *o, const char *a)
{
	if (strcmp(a, "--check") == 0)
		return o->check = 1;
	if (strcmp(a, "--raw") == 0)
		return o->raw = 1;
	if (strcmp(a, "--per-node") == 0)
		return o->per_node = 1;
	if (strcmp(a, "--timing-only") == 0)
		return o->timing_only = 1;
	if (strcmp(a, "--per-device") == 0)
		return o->per_device = 1;
	if (strcmp(a, "--mpi") == 0)
		return o->mpi = 1;
	return 0;
}

static int parse_opts(int argc, char **argv, RunOpts *o)
{
	memset(o, 0, sizeof *o);
	o->mpi_timeout = 600;
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
		    (r = opt_value(argc, argv, &i, "--trace", &o->trace)) ||
		    (r = opt_value(argc, argv, &i, "--rank-map", &o->rank_map)) ||
		    (r = opt_value(argc, argv, &i, "--load-checkpoint", &o->load_ckpt)) ||
		    (r = opt_value(argc, argv, &i, "--save-checkpoint", &o->save_ckpt))) {
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
		if ((r = opt_value(argc, argv, &i, "--checkpoint-layout", &v))) {
			if (r < 0 || (strcmp(v, "slices") != 0 && strcmp(v, "whole") != 0)) {
				drv_error("--checkpoint-layout expects slices or whole, got '%s'", r < 0 ? "" : v);
				return -1;
			}
			o->ckpt_whole = strcmp(v, "whole") == 0;
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
		if ((r = opt_value(argc, argv, &i, "--ranks-per-node", &v))) {
			char *end;
			errno = 0;
			if (r < 0 || (o->ranks_per_node = strtol(v, &end, 10), *end || errno || o->ranks_per_node < 1 ||
								  o->ranks_per_node > 1000000)) {
				drv_error("--ranks-per-node expects a count in 1..1000000, got '%s'", r < 0 ? "" : v);
				return -1;
			}
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--mpi-timeout", &v))) {
			char *end;
			errno = 0;
			if (r < 0 || (o->mpi_timeout = strtod(v, &end), *end || errno || !(o->mpi_timeout >= 0) ||
								o->mpi_timeout > 1e7)) {
				drv_error("--mpi-timeout expects seconds in 0..1e7, got '%s'", r < 0 ? "" : v);
				return -1;
			}
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--max-host-memory", &v))) {
			/* the unit is required: a bare "10" read as 10 bytes (newcomer31 finding 11) */
			size_t len = r < 0 ? 0 : strlen(v);
			if (r < 0 || !len || !strchr("BKMGTi", v[len - 1]) || (o->max_host = drv_parse_size(v)) <= 0) {
				drv_error("--max-host-memory expects a size with its unit, such as 512MiB or 2GiB, got '%s'", r < 0 ? "" : v);
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
	else if ((o->load_ckpt || o->save_ckpt) && (o->check || o->timing_only || o->mpi))
		drv_error("%s cannot be combined with %s", o->load_ckpt ? "--load-checkpoint" : "--save-checkpoint",
			  o->check ? "--check (the reference is rebuilt with the graph's own initialisers)" :
			  o->timing_only ? "--timing-only" : "--mpi");
	else if (o->ckpt_whole && !o->save_ckpt)
		drv_error("--checkpoint-layout goes with --save-checkpoint");
	else if (!o->mpi && (o->rank_map || o->ranks_per_node))
		drv_error("%s needs --mpi", o->rank_map ? "--rank-map" : "--ranks-per-node");
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

/* Parameters without data (compiled without --init-unbound, not given by --input or a
 * checkpoint) are an error before any input is generated or the reference is built: the run
 * found the first only when it reached it, 12 s into a full-size plan (newcomer finding 12). */
static int check_unbound(const Plan *p, const RtBinding *b, int nb)
{
	char list[512];
	size_t k = 0;
	int n = 0;
	const char *first = NULL;
	list[0] = 0;
	for (int i = 0; i < p->nconsts; i++) {
		if (p->consts[i].kind != PINIT_UNBOUND)
			continue;
		const char *name = p->buffers[p->consts[i].buffer].name;
		int given = 0;
		for (int j = 0; j < nb && !given; j++)
			given = b[j].name && strcmp(b[j].name, name) == 0;
		if (given)
			continue;
		first = first ? first : name;
		if (n < 8 && k + strlen(name) + 8 < sizeof list)
			k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", n ? ", " : "", name);
		else if (k + 5 < sizeof list && !strstr(list, "..."))
			k += (size_t)snprintf(list + k, sizeof list - k, ", ...");
		n++;
	}
	if (!n)
		return 0;
	drv_error("%d parameter%s of the plan %s no data (%s): give --input %s=FILE.npy (or a checkpoint), compile with "
		  "--init-unbound normal:0.02:1 for random weights, or run with --timing-only", n, n == 1 ? "" : "s",
		  n == 1 ? "has" : "have", list, first);
	return -1;
}

/* " (did you mean 'x'?; valid: ids, pos, ...)": the plan's inputs (each name once) nearest to
 * the len bytes of name, into buf. */
static void input_names(const Plan *p, const char *name, size_t len, char *buf, size_t n)
{
	const char **names = calloc((size_t)p->ninputs + 1, sizeof *names);
	char want[256];
	int k = 0;
	snprintf(want, sizeof want, "%.*s", (int)len, name);
	for (int i = 0; names && i < p->ninputs; i++)
		if (plan_io_first(p->inputs, i))
			names[k++] = p->inputs[i].name;
	buf[0] = 0;
	if (names)
		diag_suggest(buf, n, want, names, k);
	free(names);
}

/* Reads every --input file into tensors; bindings point into ts. */
static int read_inputs(const RunOpts *o, const Plan *p, RtTensor *ts, RtBinding *b)
{
	for (int i = 0; i < o->ninputs; i++) {
		const char *eq = strchr(o->inputs[i], '=');
		if (!plan_bindable(p, o->inputs[i], (size_t)(eq - o->inputs[i]))) {
			char sug[512];
			input_names(p, o->inputs[i], (size_t)(eq - o->inputs[i]), sug, sizeof sug);
			drv_error("--input %s: the plan has no input or parameter '%.*s'%s", o->inputs[i],
				  (int)(eq - o->inputs[i]), o->inputs[i], sug);
			return -1;
		}
		if (drv_read_tensor(eq + 1, &ts[i]) < 0)
			return -1;
		DType want = plan_bindable_dtype(p, o->inputs[i], (size_t)(eq - o->inputs[i]));
		/* the data's dtype must be the plan's; f32 data may feed a narrower float (rounded to
		 * its grid, as the reference does), nothing is converted silently otherwise */
		if (ts[i].dtype != want && !(ts[i].dtype == DT_F32 && rt_dtypes[want].storage == S_F32 &&
					     rt_dtype_isfloat(want))) {
			int narrow = rt_dtypes[want].storage == S_F32 && rt_dtype_isfloat(want) && want != DT_F32;
			drv_error("--input %s: the data is %s, but the plan's '%.*s' is %s%s%s%s", o->inputs[i],
				  rt_dtype_name(ts[i].dtype), (int)(eq - o->inputs[i]), o->inputs[i], rt_dtype_name(want),
				  narrow ? ": give it as " : "", narrow ? rt_dtype_name(want) : "",
				  narrow ? " or f32 (rounded to its grid, as the reference does)" : "");
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
/* Writes output t to f: a bf16 tensor as float32 (numpy has no bfloat16: its '<V2' data reads
 * as opaque bytes), the same values, unless raw; every other dtype as it is (runtime/npy.c). */
static int write_npy(FILE *f, const RtTensor *t, int raw, RtError *e)
{
	if (raw || t->dtype != DT_BF16)
		return rt_npy_fwrite(f, t, e);
	RtTensor w;
	if (rt_tensor_alloc(&w, DT_F32, t->rank, t->dims, e) < 0)
		return -1;
	memcpy(rt_f32(&w), rt_f32(t), sizeof(float) * (size_t)t->n);   /* bf16 is held in f32 storage */
	int rc = rt_npy_fwrite(f, &w, e);
	rt_tensor_free(&w);
	return rc;
}

static int write_outputs(const Plan *p, const RtRun *r, const char *dir, int raw, char **files, OutFile *g, int *n,
			 int *made)
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
		int rc = write_npy(g[*n - 1].f, &r->outputs[i], raw, &e);
		if (rc < 0)
			drv_error("cannot write '%s': %s", files[i], e.msg);
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
	else if (s >= 1e-9)
		snprintf(buf, n, "%.4g ns", s * 1e9);
	else
		snprintf(buf, n, "%.4g ps", s * 1e12);
	return buf;
}


/* 1 when a buffer of the plan lives in space s (0: a cache, such as a GPU's L2, which the
 * timing charges traffic to but nothing is allocated in). */
static int holds_buffers(const Plan *p, int s)
{
	for (int b = 0; b < p->nbuffers; b++)
		if (p->buffers[b].space == s)
			return 1;
	return 0;
}

/* viz: compute and memory per device, or past DEVICE_LINES devices per device kind (a pool's
 * space per space kind) with the busiest device and the fullest space named. */
static void devices(const Plan *p, const RtTiming *t, int per_device)
{
	/* achieved FLOP/s is over the latency (the MFU convention), not over the busy time */
	char a[64], b[64], d[64], f[64], lat[64];
	seconds(t->latency_s, lat, sizeof lat);
	for (int i = 0; (per_device || p->ndevices <= DEVICE_LINES) && i < p->ndevices; i++) {
		double ach = t->latency_s > 0 ? t->dev_flops[i] / t->latency_s : 0, pk = rt_work_peak(&p->devices[i]);
		char pool[64] = "", fmt[80] = "";
		int chips = viz_pool_chips(p, i);
		if (chips > 1)
			snprintf(pool, sizeof pool, " (a pool of %d %s)", chips, p->devices[i].kind);
		if (p->devices[i].peak_work > 0)   /* an fp8 plan: the peak of the formats its FLOP ran in */
			snprintf(fmt, sizeof fmt, " (%s%s)", strchr(p->devices[i].peak_fmt, '%') ? "FLOP-weighted: " : "",
				 p->devices[i].peak_fmt);
		printf("compute        %s in %s busy on %s%s: %s/s achieved over the %s latency, %.2f%% of peak %s/s%s\n",
		       si(t->dev_flops[i], "FLOP", a, sizeof a), seconds(t->busy_s[i], d, sizeof d), p->devices[i].name, pool,
		       si(ach, "FLOP", b, sizeof b), lat, 100 * ach / pk, si(pk, "FLOP", f, sizeof f), fmt);
	}
	for (int s = 0; (per_device || p->ndevices <= DEVICE_LINES) && s < p->nspaces; s++) {
		/* a pool's space (vera-rubin) holds its chips' memories and each chip streams its own
		 * shard: the pool's bytes move at chips x one chip's bandwidth (the space's) */
		char at[128] = "", g[64], h[64];
		int chips = viz_pool_chips(p, p->spaces[s].device);
		if (t->bytes[s] > 0 && p->spaces[s].bandwidth > 0 && chips > 1)
			snprintf(at, sizeof at, " (%s at %d x %s/s)", seconds(t->bytes[s] / (chips * p->spaces[s].bandwidth), g, sizeof g),
				 chips, si(p->spaces[s].bandwidth, "B", h, sizeof h));
		else if (t->bytes[s] > 0 && p->spaces[s].bandwidth > 0) {   /* what the timing charges for it */
			/* and the part of the kernels' fixed time that is this memory's traffic outside
			 * the overlapped main loop (t.fill_us: a pipeline's first load, its last stores),
			 * which the bytes above already count once: the two add up to the memory time */
			double fill = 0;
			size_t nl = strlen(p->spaces[s].name);
			for (int k = 0; nl > 4 && !strcmp(p->spaces[s].name + nl - 4, ".hbm") && k < p->nstreams; k++)
				for (int j = 0; p->streams[k].device == p->spaces[s].device && j < p->streams[k].nins; j++)
					fill += fmax(0, plan_instr_num(&p->streams[k].ins[j], "fill_us", 0)) * 1e-6;
			char e[96] = "", x[64];
			if (fill > 0)
				snprintf(e, sizeof e, ", + %s exposed (pipeline fills and epilogue stores)", seconds(fill, x, sizeof x));
			snprintf(at, sizeof at, " (%s at %s/s%s)", seconds(t->bytes[s] / p->spaces[s].bandwidth, g, sizeof g),
				 si(p->spaces[s].bandwidth, "B", h, sizeof h), e);
		}
		if (!holds_buffers(p, s))   /* a cache (a GPU's L2): traffic, no allocation to have a peak */
			printf("memory         %s: %s moved%s, a cache of %s (holds no buffers)\n", p->spaces[s].name,
			       si(t->bytes[s], "B", a, sizeof a), at, si((double)p->spaces[s].capacity, "B", d, sizeof d));
		else
			printf("memory         %s: %s moved%s, peak %s of %s\n", p->spaces[s].name, si(t->bytes[s], "B", a, sizeof a), at,
			       si((double)t->peak_bytes[s], "B", b, sizeof b), si((double)p->spaces[s].capacity, "B", d, sizeof d));
	}
	if (per_device || p->ndevices <= DEVICE_LINES)
		return;
	for (int k = 0; k < p->ndevices; k++) {   /* one compute line per device kind */
		int first = 1, n = 0, top = k;
		for (int j = 0; j < k; j++)
			first &= strcmp(p->devices[j].kind, p->devices[k].kind) != 0;
		double flops = 0, busy = 0, peak = 0;
		for (int j = k; first && j < p->ndevices; j++)
			if (!strcmp(p->devices[j].kind, p->devices[k].kind)) {
				n++, flops += t->dev_flops[j], busy += t->busy_s[j], peak += rt_work_peak(&p->devices[j]);
				top = t->busy_s[j] > t->busy_s[top] ? j : top;
			}
		if (!first)
			continue;
		double ach = t->latency_s > 0 ? flops / t->latency_s : 0, tach = t->latency_s > 0 ? t->dev_flops[top] / t->latency_s : 0;
		printf("compute        %s on %d %s devices: %s/s achieved over the %s latency, %.2f%% of their peak %s/s; %s busy in all\n",
		       si(flops, "FLOP", a, sizeof a), n, p->devices[k].kind, si(ach, "FLOP", b, sizeof b), lat, peak > 0 ? 100 * ach / peak : 0,
		       si(peak, "FLOP", f, sizeof f), seconds(busy, d, sizeof d));
		printf("busiest        %s: %s in %s busy, %.2f%% of peak over the latency\n", p->devices[top].name,
		       si(t->dev_flops[top], "FLOP", a, sizeof a), seconds(t->busy_s[top], d, sizeof d),
		       100 * tach / rt_work_peak(&p->devices[top]));
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
		int held = 0;
		for (int j = s; first && j < p->nspaces; j++) {
			const char *sj = strchr(p->spaces[j].name, '.');
			if (strcmp(p->devices[p->spaces[j].device].kind, kind) || strcmp(sj ? sj + 1 : p->spaces[j].name, suf))
				continue;
			n++, moved += t->bytes[j], held |= holds_buffers(p, j);
			top = (double)t->peak_bytes[j] / (double)p->spaces[j].capacity >
			      (double)t->peak_bytes[top] / (double)p->spaces[top].capacity ? j : top;
		}
		if (first && !held)
			printf("memory         %s %s (%d spaces): %s moved in all; caches of %s each (they hold no buffers)\n", kind,
			       suf, n, si(moved, "B", a, sizeof a), si((double)p->spaces[s].capacity, "B", d, sizeof d));
		else if (first)
			printf("memory         %s %s (%d spaces): %s moved in all; fullest %s: peak %s of %s\n", kind, suf, n,
			       si(moved, "B", a, sizeof a), p->spaces[top].name, si((double)t->peak_bytes[top], "B", b, sizeof b),
			       si((double)p->spaces[top].capacity, "B", d, sizeof d));
	}
	printf("devices        %d: one line per kind above; --per-device lists each\n", p->ndevices);
}

/* What bounds the time: the shares of the instructions' busy time per bound family (the
 * targets' t.bound, else the roofline's largest term; viz_bound_shares), the largest first with
 * the term that bounds most of it ("hbm", "launch"), as `aicc explain` sums them. */
static void bound_line(const Plan *p, const RtTiming *t)
{
	double fam[VIZ_NFAM], busy = 0;
	const char *top[VIZ_NFAM];
	viz_bound_shares(p, t, fam, top);
	int big = 0;
	for (int k = 0; k < VIZ_NFAM; k++)
		busy += fam[k], big = fam[k] > fam[big] ? k : big;
	if (busy <= 0)
		return;
	printf("bound          %s: %.1f%% of the busy time", viz_bound_families[big], 100 * fam[big] / busy);
	if (top[big] && strcmp(top[big], viz_bound_families[big]))
		printf(" (mostly %s)", top[big]);
	for (int k = 0, first = 1; k < VIZ_NFAM; k++)
		if (k != big && (k < 4 || fam[k] > 0)) {
			printf("%s %s %.1f%%", first ? ";" : ",", viz_bound_families[k], 100 * fam[k] / busy);
			first = 0;
		}
	printf("\n");
}

/* phase train: MFU and HFU, and each device's memory by kind (runtime/interp.h RtTrain). */
static void train_summary(const Plan *p, const RtTiming *t)
{
	RtTrain tr;
	if (rt_train_metrics(p, t, &tr) < 0)
		return;
	char mf[32], hf[32], pk[32];
	printf("MFU            %.2f%% (model %s = 3 x forward), HFU %.2f%% (executed %s: recomputation and the "
	       "optimizer), of peak %s\n", 100 * tr.mfu, si(tr.model_flops, "FLOP", mf, sizeof mf), 100 * tr.hfu,
	       si(tr.hw_flops, "FLOP", hf, sizeof hf), si(tr.peak_flops_per_s, "FLOP/s", pk, sizeof pk));
	for (int d = 0; d < tr.ndev; d++) {
		const RtTrainMem *m = &tr.dev[d];
		char w[32], g[32], o[32], u[32], x[32], k[32];
		printf("train memory   %s: weights %s, gradients %s, optimizer state %s (master weights, moments), "
		       "updated copies %s, activations %s (before reuse); planned peak %s\n", p->devices[d].name,
		       si(m->weights, "B", w, sizeof w), si(m->gradients, "B", g, sizeof g), si(m->optimizer, "B", o, sizeof o),
		       si(m->updated, "B", u, sizeof u), si(m->activations, "B", x, sizeof x), si(m->peak, "B", k, sizeof k));
	}
	const RtPacking *q = &tr.pack;
	if (q->seqs)
		printf("packing        %d sequences in %lld tokens per row (varlen attention); padded to the longest (%lld): "
		       "%lld tokens, %.1f%% of them padding saved, attention pairs %.4g instead of %.4g (%.1f%% saved)\n",
		       q->seqs, (long long)q->tokens, (long long)q->longest, (long long)q->padded_tokens,
		       100.0 * (double)(q->padded_tokens - q->tokens) / (double)q->padded_tokens, q->pairs, q->padded_pairs,
		       100.0 * (q->padded_pairs - q->pairs) / q->padded_pairs);
	rt_train_free(&tr);
}

static void summary(const Plan *p, const RtRun *r, const RtCheck *c, char **files, int per_device, int raw)
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
	else if (ph.phase && ph.step_s > 0) {
		char mb[48] = "";
		if (ph.micro_batches > 1)
			snprintf(mb, sizeof mb, " x %lld micro-batches", (long long)ph.micro_batches);
		printf("step           %s (train, batch %lld%s, %lld tokens per sequence): %.4g tokens/s\n",
		       seconds(ph.step_s, a, sizeof a), (long long)ph.batch, mb, (long long)ph.context, ph.tokens_per_s);
		train_summary(p, t);
	}
	else if (ph.phase && ph.ttft_s > 0)
		printf("TTFT           %s (prefill, batch %lld, %lld prompt tokens): %.4g prompt tokens/s\n",
		       seconds(ph.ttft_s, a, sizeof a), (long long)ph.batch, (long long)ph.context, ph.tokens_per_s);
	RtBand band;     /* the error band of the prediction (targets/bands.def, from make validate) */
	if (rt_band(p, t, &band) == 0) {
		/* the kernel class (what make validate calibrates), not the bound below: gpt2's
		 * elementwise kernels are the "memory" class while their launches bound them */
		const char *what = !strcmp(band.least, "gemm") ? "matrix products" : !strcmp(band.least, "attention") ?
				   "fused attention" : !strcmp(band.least, "memory") ? "elementwise, normalization and "
				   "other memory-model kernels, whatever bounds them" : !strcmp(band.least, "collective") ?
				   "copies and collectives" : NULL;
		char least[448], cls[256];
		snprintf(cls, sizeof cls, "kernel class %s%s%s%s", band.least, what ? " (" : "", what ? what : "",
			 what ? "; the class make validate calibrates, not the bound below)" : "");
		if (band.least_band < 0)
			snprintf(least, sizeof least, "%s: no published case covers it (%.0f%% of the busy time)", cls,
				 100 * band.least_s / fmax(band.covered_s + band.uncovered_s, 1e-30));
		else
			snprintf(least, sizeof least, "%s, +-%.0f%% worst over %d cases", cls, 100 * band.least_band,
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
		printf("not modelled   %d instruction%s priced by the target's generic fallback, not by a model of %s own "
		       "(aicc compile --remarks=all lists them)\n", gaps, gaps == 1 ? "" : "s", gaps == 1 ? "its" : "their");
	if (t->nload > 0)   /* weight transforms run once at load, outside the latency above */
		printf("load           %s once, before the first step (%d kernel%s with phase=load)\n",
		       seconds(t->load_s, a, sizeof a), t->nload, t->nload == 1 ? "" : "s");
	devices(p, t, per_device);
	bound_line(p, t);
	for (int i = 0; r->outputs && i < p->noutputs; i++)
		if (plan_io_first(p->outputs, i))
			printf("output         %s %s%s%s%s\n", p->outputs[i].name, rt_dtype_name(r->outputs[i].dtype),
			       files[i] ? " -> " : "", files[i] ? files[i] : "",
			       files[i] && !raw && r->outputs[i].dtype == DT_BF16 ? " (as f32)" : "");
	for (int i = 0; c && i < c->nouts; i++) {
		char extra[96] = "";
		if (c->outs[i].abs_allowance > 0)
			snprintf(extra, sizeof extra, " + %.3g abs (its input's allowance through %s)", c->outs[i].abs_allowance,
				 c->outs[i].abs_through ? c->outs[i].abs_through : "f");
		printf("check          %s: max_abs_err %.3g, max_rel_err %.3g, tolerance %.3g%s%s%s%s: %s\n", c->outs[i].name,
		       c->outs[i].max_abs, c->outs[i].max_rel, c->outs[i].tolerance, c->outs[i].tol_why[0] ? " (" : "",
		       c->outs[i].tol_why, c->outs[i].tol_why[0] ? ")" : "", extra, c->outs[i].ok ? "ok" : "FAIL");
	}
	if (c && c->first_bad_node)
		printf("first bad node %s (buffer %s): max_rel_err %.3g > tolerance %.3g\n", c->first_bad_node,
		       c->first_bad_buffer, c->first_bad_err, c->first_bad_tol);
	else if (c && c->nodes_compared && c->closest_node)
		printf("per-node       %d kernel%s compared with the reference, all within tolerance; nearest to it: %s "
		       "(max_rel_err %.3g, tolerance %.3g)\n", c->nodes_compared, c->nodes_compared == 1 ? "" : "s",
		       c->closest_node, c->closest_err, c->closest_tol);
	else if (c && c->nodes_compared)
		printf("per-node       %d kernel%s compared with the reference, all within tolerance\n", c->nodes_compared,
		       c->nodes_compared == 1 ? "" : "s");
}

/* Writes the report (trace 0) or the trace (trace 1) of a run to f: 0, or -1 with a message. */
typedef int (*JsonWriter)(void *ctx, const Plan *p, const RtRun *r, const RtCheck *c, char **files, int trace,
			  FILE *f);

/* The JSON report (trace 0) or the Chrome trace (trace 1) into the group g, written by w (NULL:
 * the one-process documents). */
static int write_json(const char *path, const Plan *p, const RtRun *r, const RtCheck *c, char **files, int trace,
		      OutFile *g, int *n, JsonWriter w, void *ctx)
{
	if (group_open(g, n, path) < 0)
		return -1;
	FILE *f = g[*n - 1].f;
	int rc = w ? w(ctx, p, r, c, files, trace, f) :
		 trace ? rt_trace_write(p, &r->timing, f) : rt_report_write(p, r, c, (const char *const *)files, f);
	return group_close(g, *n, rc);
}

/* Writes everything the run was asked for as one output group: every .npy of --output-dir, then
 * the report, then the trace, each written to a temporary and closed, then all renamed into
 * place together, so a failure (or SIGINT/SIGTERM) leaves none of them. */
static int write_files(const RunOpts *o, const Plan *p, const RtRun *r, const RtCheck *c, char **files,
		       JsonWriter w, void *ctx)
{
	int max = p->noutputs + 2, n = 0, made = 0;
	OutFile *g = calloc((size_t)max, sizeof *g);
	if (!g) {
		drv_error("out of memory");
		return -1;
	}
	int rc = 0;
	if (o->outdir && !o->timing_only)
		rc = write_outputs(p, r, o->outdir, o->raw, files, g, &n, &made);
	if (rc == 0 && o->report)
		rc = write_json(o->report, p, r, c, files, 0, g, &n, w, ctx);
	if (rc == 0 && o->trace)
		rc = write_json(o->trace, p, r, NULL, files, 1, g, &n, w, ctx);
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

/* The process's cpu seconds (every thread's user + system time, BLAS threads included). */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* The median of v[0..n) (sorts v); n >= 1. */
static double median_sorted(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, by_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* --repeat: host times of the loaded plan, as onnxruntime users read them (session creation,
 * the first run, the median of the others), wall and, when cpus is given, the process's cpu
 * time per run (on a loaded machine wall time waits for the cpu, cpu time does not). */
static void host_times(const RtLoadStats *ls, double load, double *runs, double *cpus, long n)
{
	char a[64], b[64], c[64];
	printf("host load      %s: %d constant%s bound once, %d mapped in place (%.4g MB of %.4g MB)\n",
	       seconds(load, a, sizeof a), ls->nconsts, ls->nconsts == 1 ? "" : "s", ls->nmapped,
	       (double)ls->mapped_bytes / 1e6, (double)ls->bytes / 1e6);
	if (n == 1) {
		printf("host run       first %s (one run)\n", seconds(runs[0], a, sizeof a));
		if (cpus)
			printf("host cpu       first %s (one run)\n", seconds(cpus[0], a, sizeof a));
		return;
	}
	double med = median_sorted(runs + 1, n - 1);
	printf("host run       first %s, steady state %s (median of %ld runs, min %s)\n", seconds(runs[0], a, sizeof a),
	       seconds(med, b, sizeof b), n - 1, seconds(runs[1], c, sizeof c));
	if (cpus) {
		med = median_sorted(cpus + 1, n - 1);
		printf("host cpu       first %s, steady state %s (median of %ld runs, min %s)\n", seconds(cpus[0], a, sizeof a),
		       seconds(med, b, sizeof b), n - 1, seconds(cpus[1], c, sizeof c));
	}
}

/* Runs (or checks) the loaded plan and writes everything asked for. */
static int execute(const RunOpts *o, const Plan *p, RtBinding *bind, int nbind)
{
	RtRun r;
	RtCheck c = { 0 };
	RtError e = { 0 };
	char *dir = strdup(o->plan);
	RtRunOpts ro = { bind, nbind, o->seed, o->timing_only, o->save_ckpt != NULL, dirname(dir), drv_host_available(),
			 progress_step, NULL, NULL };
	if (o->max_host > 0 && (ro.host_limit <= 0 || o->max_host < ro.host_limit))
		ro.host_limit = o->max_host;
	int rc, save_rc = 0, nt = 0, nsl = 0;
	int64_t ckb = 0;
	double *runs = NULL, *cpus = NULL, load = 0;
	RtLoadStats ls = { 0 };
	if (o->check)
		rc = rt_check(p, &ro, o->per_node, &r, &c, &e);
	else {
		double t0 = now_s();
		RtSession *s = rt_session_new(p, &ro, &e);
		load = now_s() - t0;
		long n = o->repeat ? o->repeat : 1;
		runs = calloc((size_t)n, sizeof *runs), cpus = calloc((size_t)n, sizeof *cpus);
		rc = s && runs && cpus ? 0 : -1;
		if (s && (!runs || !cpus))
			rt_errorf(&e, RT_ENOMEM, "out of memory");
		for (long i = 0; rc == 0 && i < n; i++) {
			if (i)
				rt_run_free(p, &r);
			t0 = now_s();
			double c0 = cpu_s();
			rc = rt_session_run(s, &ro, &r, &e);
			runs[i] = now_s() - t0;
			cpus[i] = cpu_s() - c0;
		}
		if (s)
			ls = *rt_session_stats(s);
		if (rc == 0 && o->save_ckpt) {   /* r.values borrows the session's constants */
			progress_end();
			save_rc = ckpt_save(o->save_ckpt, p, &r, o->ckpt_whole, &ckb, &nt, &nsl);
		}
		if (rc == 0 && !o->timing_only)    /* outputs are owned copies: they outlive the session */
			for (int i = 0; i < p->noutputs; i++)
				assert(!r.outputs[i].data || r.outputs[i].owns);
		rt_session_free(s);
	}
	progress_end();   /* viz: the progress line is gone before anything else is printed */
	if (rc < 0) {
		drv_report(e.msg);
		free(dir);
		free(runs), free(cpus);
		return e.code == RT_EINTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}
	char **files = calloc((size_t)p->noutputs + 1, sizeof *files);
	int st = save_rc < 0 ? EXIT_USER : EXIT_OK;
	if (st == EXIT_OK && (!files || write_files(o, p, &r, o->check ? &c : NULL, files, NULL, NULL) < 0))
		st = EXIT_USER;
	if (st == EXIT_OK)
		summary(p, &r, o->check ? &c : NULL, files, o->per_device, o->raw);
	if (st == EXIT_OK && o->repeat)
		host_times(&ls, load, runs, cpus, o->repeat);
	if (st == EXIT_OK && o->save_ckpt) {
		char b[64];
		printf("checkpoint     %s: %d tensors in %d slices, %s (%s)\n", o->save_ckpt, nt, nsl,
		       si((double)ckb, "B", b, sizeof b), o->ckpt_whole ? "whole tensors" : "the devices' slices");
	}
	if (st == EXIT_OK && o->check && !c.ok)
		st = EXIT_USER;
	for (int i = 0; files && i < p->noutputs; i++)
		free(files[i]);
	free(files);
	free(dir);
	free(runs), free(cpus);
	rt_check_free(&c);
	rt_run_free(p, &r);
	return st;
}

/* ---- --mpi: one rank of an MPI job (docs/distributed.md) ---- */
#ifndef AICC_MPI
static int run_mpi(const RunOpts *o)
{
	(void)o;
	drv_error("--mpi: this aicc was built without MPI.  Install Open MPI (Debian/Ubuntu: apt-get install "
		  "libopenmpi-dev openmpi-bin, or sh tools/install-deps.sh), rebuild (make finds it with pkg-config "
		  "ompi-c), then run: mpirun -np N aicc run PLAN.aip --mpi");
	return EXIT_USER;
}
#else
#include <jansson.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dist/mpi.h"
#include "frontend/frontend.h"
#include "runtime/dist.h"

/* What every rank sends rank 0 after a run (then 2 * nsteps doubles: its steps' wall times). */
typedef struct RankInfo {
	int rank, node, steps, nsteps, sent_msgs, recv_msgs;
	char host[64], devs[192];
	double load_s, first_s, run_s, comm_s;     /* run and comm: median of the steady-state runs; load_s < 0:
						    * not measured apart (--check loads inside the checked run) */
	int64_t sent_bytes, recv_bytes, peak_rss;   /* bytes */
} RankInfo;

static RtDist *g_dist;
static char g_term[320];     /* "aicc: error: rank R (DEVS): terminated at " */
static char g_where[320] = "setup";   /* where the rank was when g_dist went */

/* SIGTERM/SIGINT/SIGHUP (mpirun stops the job when a rank dies): say where this rank was,
 * remove temporaries, die of the signal.  Only async-signal-safe calls. */
static void on_term(int sig)
{
	static const char tail[] = ": the job was stopped (by mpirun when another rank failed or was killed: "
				   "it names that rank), so this rank ends too\n";
	const char *w = g_dist ? rt_dist_where(g_dist) : g_where;
	if (g_term[0] && write(2, g_term, strlen(g_term)) >= 0 && write(2, w, strlen(w)) >= 0 &&
	    write(2, tail, sizeof tail - 1) >= 0) {
	}
	rt_out_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The first --input naming nothing in the plan, or -1. */
static int unknown_input(const RunOpts *o, const Plan *p)
{
	for (int i = 0; i < o->ninputs; i++)
		if (!plan_bindable(p, o->inputs[i], (size_t)(strchr(o->inputs[i], '=') - o->inputs[i])))
			return i;
	return -1;
}

/* The --input files of names held by this rank (an input or a constant of a local buffer); the
 * others are never read here.  0, or -1 with e set. */
static int read_local_inputs(const RunOpts *o, const Plan *p, const RtDist *d, RtTensor *ts, RtBinding *b, int *nb,
			     RtError *e)
{
	*nb = 0;
	for (int i = 0; i < o->ninputs; i++) {
		const char *eq = strchr(o->inputs[i], '='), *path = eq + 1;
		size_t n = (size_t)(eq - o->inputs[i]), len = strlen(path);
		int local = 0;
		for (int k = 0; k < p->ninputs + p->nconsts; k++) {
			int buf = k < p->ninputs ? p->inputs[k].buffer : p->consts[k - p->ninputs].buffer;
			const char *name = k < p->ninputs ? p->inputs[k].name : p->buffers[buf].name;
			local |= strlen(name) == n && strncmp(name, o->inputs[i], n) == 0 &&
				 rt_dist_local(d, p->spaces[p->buffers[buf].space].device);
		}
		if (!local)
			continue;
		char *name = NULL;
		int rc = len > 3 && strcmp(path + len - 3, ".pb") == 0 ? fe_read_tensor_pb(path, &ts[*nb], &name, e)
								   : rt_npy_read(path, &ts[*nb], e);
		free(name);
		if (rc < 0)
			return -1;
		b[*nb].name = strndup(o->inputs[i], n);
		b[*nb].t = &ts[*nb];
		++*nb;
	}
	return 0;
}

static double median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, by_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int64_t peak_rss(void)
{
	struct rusage u;
	return getrusage(RUSAGE_SELF, &u) == 0 ? (int64_t)u.ru_maxrss * 1024 : 0;
}

static json_t *ranks_json(RankInfo **ri, int nr)
{
	json_t *a = json_array();
	for (int r = 0; r < nr; r++) {
		json_t *o = json_object(), *devs = json_array();
		char tmp[256];
		snprintf(tmp, sizeof tmp, "%s", ri[r]->devs);
		for (char *t = strtok(tmp, ","); t; t = strtok(NULL, ","))
			json_array_append_new(devs, json_string(t));
		json_object_set_new(o, "rank", json_integer(r));
		json_object_set_new(o, "host", json_string(ri[r]->host));
		json_object_set_new(o, "node", json_integer(ri[r]->node));
		json_object_set_new(o, "devices", devs);
		json_object_set_new(o, "load_s", ri[r]->load_s < 0 ? json_null() : json_real(ri[r]->load_s));
		json_object_set_new(o, "run_s", json_real(ri[r]->run_s));
		json_object_set_new(o, "comm_s", json_real(ri[r]->comm_s));
		json_object_set_new(o, "sent_bytes", json_integer(ri[r]->sent_bytes));
		json_object_set_new(o, "recv_bytes", json_integer(ri[r]->recv_bytes));
		json_object_set_new(o, "sent_messages", json_integer(ri[r]->sent_msgs));
		json_object_set_new(o, "recv_messages", json_integer(ri[r]->recv_msgs));
		json_object_set_new(o, "instructions", json_integer(ri[r]->steps));
		json_object_set_new(o, "peak_rss_bytes", json_integer(ri[r]->peak_rss));
		json_array_append_new(a, o);
	}
	return a;
}

/* Writes the report or trace of a distributed run: the one-process document, plus `ranks` in the
 * report and, in the trace, one process "ranks (wall clock)" with a track per rank whose events
 * are the measured spans of its instructions (predicted start and duration as arguments). */
typedef struct Ranks {
	RankInfo **ri;
	int nr;
} Ranks;

static int write_json_mpi(void *ctx, const Plan *p, const RtRun *r, const RtCheck *c, char **files, int trace, FILE *f)
{
	RankInfo **ri = ((Ranks *)ctx)->ri;
	int nr = ((Ranks *)ctx)->nr;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc = mem ? 0 : -1;
	if (rc == 0)
		rc = trace ? rt_trace_write(p, &r->timing, mem) : rt_report_write(p, r, c, (const char *const *)files, mem);
	if (mem)
		fclose(mem);
	json_t *root = rc == 0 ? json_loadb(text, len, 0, NULL) : NULL;
	free(text);
	if (!root) {
		drv_error("cannot write the %s: out of memory", trace ? "trace" : "report");
		return -1;
	}
	if (!trace)
		json_object_set_new(root, "ranks", ranks_json(ri, nr));
	else {
		json_t *ev = json_object_get(root, "traceEvents");
		int pid = p->ndevices + 1;
		char name[320];
		json_t *m = json_object(), *args = json_object();
		json_object_set_new(m, "ph", json_string("M"));
		json_object_set_new(m, "name", json_string("process_name"));
		json_object_set_new(m, "pid", json_integer(pid));
		json_object_set_new(m, "tid", json_integer(0));
		json_object_set_new(args, "name", json_string("ranks (wall clock)"));
		json_object_set_new(m, "args", args);
		json_array_append_new(ev, m);
		for (int k = 0; k < nr; k++) {
			const double *tm = (const double *)(ri[k] + 1);
			snprintf(name, sizeof name, "rank %d (%s) on %s", k, ri[k]->devs, ri[k]->host);
			m = json_object(), args = json_object();
			json_object_set_new(m, "ph", json_string("M"));
			json_object_set_new(m, "name", json_string("thread_name"));
			json_object_set_new(m, "pid", json_integer(pid));
			json_object_set_new(m, "tid", json_integer(k));
			json_object_set_new(args, "name", json_string(name));
			json_object_set_new(m, "args", args);
			json_array_append_new(ev, m);
			for (int t = 0; t < ri[k]->nsteps && t < r->timing.nspans; t++) {
				if (tm[2 * t] < 0 || tm[2 * t + 1] < 0)
					continue;
				const RtSpan *sp = &r->timing.spans[t];
				const PlanInstr *in = &p->streams[sp->stream].ins[sp->index];
				json_t *x = json_object(), *a = json_object();
				json_object_set_new(x, "name", json_string(in->kind == PI_KERNEL ? plan_op_name(in->op) :
									   in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll] :
									   plan_instr_names[in->kind]));
				json_object_set_new(x, "cat", json_string("measured"));
				json_object_set_new(x, "ph", json_string("X"));
				json_object_set_new(x, "ts", json_real(tm[2 * t] * 1e6));
				json_object_set_new(x, "dur", json_real((tm[2 * t + 1] - tm[2 * t]) * 1e6));
				json_object_set_new(x, "pid", json_integer(pid));
				json_object_set_new(x, "tid", json_integer(k));
				json_object_set_new(a, "stream", json_string(p->streams[sp->stream].name));
				if (in->node)
					json_object_set_new(a, "node", json_string(in->node));
				json_object_set_new(a, "line", json_integer(in->line));
				json_object_set_new(a, "predicted_start_us", json_real(sp->start * 1e6));
				json_object_set_new(a, "predicted_dur_us", json_real((sp->end - sp->start) * 1e6));
				json_object_set_new(x, "args", a);
				json_array_append_new(ev, x);
			}
		}
	}
	rc = json_dumpf(root, f, JSON_PRESERVE_ORDER | (trace ? JSON_COMPACT : JSON_INDENT(2)) | JSON_REAL_PRECISION(10));
	if (rc == 0 && fputc('\n', f) == EOF)
		rc = -1;
	json_decref(root);
	return rc < 0 ? -1 : 0;
}

/* A library error of this rank as one line naming it: "FILE:LINE: error: rank R (DEVS): ..." when
 * the message has a location, else "aicc: error: rank R (DEVS): ...". */
static void rank_line(char *out, size_t n, const char *msg, int rank, const char *devs)
{
	const char *k = strstr(msg, ": error: ");
	if (k)
		snprintf(out, n, "%.*s: error: rank %d (%s): %s", (int)(k - msg), msg, rank, devs, k + 9);
	else
		snprintf(out, n, "aicc: error: rank %d (%s): %s", rank, devs, strncmp(msg, "aicc: error: ", 13) ? msg : msg + 13);
}

/* The per-rank lines of the summary. */
static void rank_summary(RankInfo **ri, int nr)
{
	char a[64], b[64], c[64], d[64], f[64], g[64];
	for (int r = 0; r < nr; r++)
		printf("rank %-9d %s on %s (node %d): load %s, run %s, waiting for messages %s, sent %s in %d messages, "
		       "received %s, peak RSS %s\n", r, ri[r]->devs, ri[r]->host, ri[r]->node,
		       ri[r]->load_s < 0 ? "inside the run (--check)" : seconds(ri[r]->load_s, a, sizeof a),
		       seconds(ri[r]->run_s, b, sizeof b), seconds(ri[r]->comm_s, c, sizeof c),
		       si((double)ri[r]->sent_bytes, "B", d, sizeof d), ri[r]->sent_msgs,
		       si((double)ri[r]->recv_bytes, "B", f, sizeof f), si((double)ri[r]->peak_rss, "B", g, sizeof g));
}

/* Setup failures (the plan, the map, the inputs): rank 0 prints each distinct message once, naming
 * the ranks when not all of them failed alike. */
static void report_setup(DistMpi *m, const char *err)
{
	void **msgs = NULL;
	size_t *lens = NULL;
	RtError e = { 0 };
	int nr = dmpi_size(m);
	if (dmpi_gather(m, err, strlen(err) + 1, &msgs, &lens, &e) < 0) {
		if (err[0])
			fprintf(stderr, "%s%s\n", strstr(err, "error: ") ? "" : "aicc: error: ", err);
		return;
	}
	if (dmpi_rank(m) != 0)
		return;
	int all = 1;
	for (int r = 0; r < nr; r++)
		all &= strcmp(msgs[r], msgs[0]) == 0;
	for (int r = 0; r < nr; r++) {
		const char *s = msgs[r];
		int dup = 0;
		for (int q = 0; q < r && !dup; q++)
			dup = strcmp(msgs[q], s) == 0;
		if (s[0] && !dup) {
			char line[1400];
			if (all)
				snprintf(line, sizeof line, "%s", s);
			else
				rank_line(line, sizeof line, s, r, "setup");
			drv_report(line);
		}
	}
	for (int r = 0; r < nr; r++)
		free(msgs[r]);
	free(msgs), free(lens);
}

/* Host memory: rank 0 adds up what the ranks of each host need (rt_host_bytes_on: their own
 * buffers; rank 0 also every output) against what that host has, and writes the error into
 * msg when some host has too little. */
static void host_check(DistMpi *m, const RunOpts *o, const Plan *p, const RtDist *d, char *msg, size_t n)
{
	int node, lr, ls;
	dmpi_node(m, &node, &lr, &ls);
	int64_t mine[3] = { node, 0, drv_host_available() };
	if (o->max_host > 0 && (mine[2] <= 0 || o->max_host < mine[2]))
		mine[2] = o->max_host;   /* --max-host-memory: per rank */
	if (d && !o->timing_only)
		mine[1] = rt_host_bytes_on(p, rt_dist_hooks(d)->local, dmpi_rank(m) == 0, NULL);
	void **got = NULL;
	size_t *lens = NULL;
	RtError e = { 0 };
	if (dmpi_gather(m, mine, sizeof mine, &got, &lens, &e) < 0) {
		snprintf(msg, n, "%s", e.msg);
		return;
	}
	int nr = dmpi_size(m);
	for (int r = 0; got && r < nr && !msg[0]; r++) {    /* each rank within its own limit */
		const int64_t *a = got[r];
		if (a[2] > 0 && a[1] > a[2])
			snprintf(msg, n, "rank %d needs about %.3g GB of host memory for its devices (as the interpreter holds "
				 "values: f32, f64 or i64 per element), but %.3g GB is available to it (memory, cgroup, ulimit "
				 "-v); give it more, spread the devices over more ranks, or run --timing-only", r,
				 (double)a[1] / 1e9, (double)a[2] / 1e9);
	}
	for (int r = 0; got && r < nr && !msg[0]; r++) {    /* the ranks of a host together */
		const int64_t *a = got[r];
		int64_t need = 0, avail = a[2];
		if (a[0] != r)
			continue;       /* r is not the lowest rank of its host */
		for (int q = 0; q < nr; q++) {
			const int64_t *b = got[q];
			if (b[0] == a[0]) {
				need += b[1];
				avail = b[2] > 0 && (avail <= 0 || b[2] < avail) ? b[2] : avail;
			}
		}
		if (avail > 0 && need > avail)
			snprintf(msg, n, "the ranks on the host of rank %d need about %.3g GB of host memory together (as the "
				 "interpreter holds values: f32, f64 or i64 per element), but %.3g GB is available; run fewer "
				 "ranks per host, or --timing-only to price the plan without its values", r, (double)need / 1e9,
				 (double)avail / 1e9);
	}
	for (int r = 0; got && r < nr; r++)
		free(got[r]);
	free(got), free(lens);
}

static int run_mpi(const RunOpts *o)
{
	RtError e = { 0 };
	DistMpi *m = dmpi_init(NULL, NULL, o->mpi_timeout, &e);
	if (!m) {
		drv_report(e.msg);
		return EXIT_USER;
	}
	int me = dmpi_rank(m), nr = dmpi_size(m), node, lrank, lsize;
	dmpi_node(m, &node, &lrank, &lsize);
	drv_register_runtime_hooks();
	char err[1024] = "";
	Plan *p = plan_read(o->plan, &e);
	int *dev_rank = NULL, nb = 0, internal = 0;
	RtDist *d = NULL;
	RtTensor ts[MAX_INPUTS];
	RtBinding bind[MAX_INPUTS];
	memset(bind, 0, sizeof bind);
	if (!p)
		snprintf(err, sizeof err, "%s", e.msg);
	else if (!(dev_rank = calloc((size_t)p->ndevices + 1, sizeof *dev_rank)))
		snprintf(err, sizeof err, "out of memory");
	else if ((o->rank_map ? rt_dist_map_file(p, nr, o->rank_map, dev_rank, &e)
			      : rt_dist_map_default(p, nr, dev_rank, &e)) < 0)
		snprintf(err, sizeof err, "%s", e.msg);
	else if (o->ranks_per_node && (nr % o->ranks_per_node || lsize != o->ranks_per_node ||
				       node != me / o->ranks_per_node * o->ranks_per_node))
		snprintf(err, sizeof err, "--ranks-per-node %ld: %s, but rank %d shares host %s with %d rank%s starting at "
			 "rank %d; start the job node-major with that many ranks per node (mpirun --map-by ppr:%ld:node)",
			 o->ranks_per_node, nr % o->ranks_per_node ? "the job's rank count is not a multiple of it" :
			 "ranks are expected in node-major blocks", me, dmpi_host(m), lsize, lsize == 1 ? "" : "s", node,
			 o->ranks_per_node);
	else if (!(d = rt_dist_new(p, dev_rank, dmpi_transport(m), &e)))
		snprintf(err, sizeof err, "%s", e.msg);
	else if ((nb = unknown_input(o, p)) >= 0) {
		const char *v = o->inputs[nb];
		char sug[512];
		input_names(p, v, (size_t)(strchr(v, '=') - v), sug, sizeof sug);
		snprintf(err, sizeof err, "--input %s: the plan has no input or parameter '%.*s'%s", v,
			 (int)(strchr(v, '=') - v), v, sug);
	}
	nb = 0;
	internal = e.code == RT_EINTERNAL;
	char job_err[1400] = "";
	host_check(m, o, p, d, job_err, sizeof job_err);
	RtError ae = { 0 };
	int all = dmpi_agree(m, !err[0] && !job_err[0], &ae);
	int st = EXIT_OK;
	char devs[192] = "";
	for (int i = 0; d && i < p->ndevices; i++)
		if (dev_rank[i] == me)
			snprintf(devs + strlen(devs), sizeof devs - strlen(devs), "%s%s", devs[0] ? "," : "", p->devices[i].name);
	RtRun r;
	RtCheck c = { 0 };
	int ran = 0;
	double load = 0, *runs = NULL, *comms = NULL;
	long n = o->repeat ? o->repeat : 1;
	if (all != 1) {
		if (all < 0)
			drv_report(ae.msg);
		else
			report_setup(m, err);
		if (job_err[0])
			drv_error("%s", job_err);
		st = internal ? EXIT_INTERNAL : EXIT_USER;
		goto out;
	}
	snprintf(g_term, sizeof g_term, "aicc: error: rank %d (%s): terminated at ", me, devs);
	g_dist = d;
	signal(SIGTERM, on_term), signal(SIGINT, on_term), signal(SIGHUP, on_term);
	char *dir = strdup(o->plan);
	RtRunOpts ro = { bind, nb, o->seed, o->timing_only, 0, dirname(dir), 0, NULL, NULL, rt_dist_hooks(d) };
	runs = calloc((size_t)n, sizeof *runs), comms = calloc((size_t)n, sizeof *comms);
	int rc = runs && comms ? 0 : rt_errorf(&e, RT_ENOMEM, "out of memory");
	if (rc == 0)
		rc = read_local_inputs(o, p, d, ts, bind, &nb, &e);
	ro.nbind = nb;
	RtSession *s = NULL;
	double t0 = rt_dist_now();
	if (rc == 0 && !o->check && !(s = rt_session_new(p, &ro, &e)))
		rc = -1;
	load = rt_dist_now() - t0;
	if (rc == 0)
		rc = dmpi_barrier(m, &e);     /* the ranks start together: one clock origin */
	rt_dist_set_epoch(d, rt_dist_now());
	if (rc == 0 && o->check)
		ran = (rc = rt_check(p, &ro, o->per_node, &r, &c, &e)) == 0;
	for (long i = 0; rc == 0 && !o->check && i < n; i++) {
		if (i)
			rt_run_free(p, &r);
		t0 = rt_dist_now();
		ran = (rc = rt_session_run(s, &ro, &r, &e)) == 0;
		runs[i] = rt_dist_now() - t0;
		comms[i] = rt_dist_stats(d)->comm_s;
	}
	if (rc == 0 && o->check)
		runs[0] = rt_dist_stats(d)->run_s, comms[0] = rt_dist_stats(d)->comm_s;
	rt_session_free(s);
	free(dir);
	char line[1400];
	if (rc < 0) {
		int fr = -1;
		const char *fm = dmpi_stopped(m) ? dmpi_peer_failure(m, &fr) : NULL;
		if (fm)
			snprintf(line, sizeof line, "aicc: error: rank %d (%s) stopped at %s after rank %d failed: %s", me, devs,
				 rt_dist_where(d), fr, strncmp(fm, "aicc: error: ", 13) ? fm : fm + 13);
		else {
			rank_line(line, sizeof line, e.msg, me, devs);
			dmpi_fail(m, line);
		}
		fprintf(stderr, "%s\n", line);
		st = e.code == RT_EINTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}
	all = dmpi_agree(m, rc == 0, &ae);
	if (all != 1) {
		if (all < 0 && rc == 0)
			fprintf(stderr, "aicc: error: rank %d (%s): %s\n", me, devs, ae.msg);
		else if (rc == 0) {      /* this rank finished; another did not */
			int fr = -1;
			const char *fm = NULL;
			for (int k = 0; k < 100 && !(fm = dmpi_peer_failure(m, &fr)); k++)
				usleep(10000);
			fprintf(stderr, "aicc: error: rank %d (%s) finished, but %s%.0d failed%s%s\n", me, devs, fm ? "rank " : "another rank",
				fm ? fr : 0, fm ? ": " : "", fm ? fm : "");
		}
		if (st == EXIT_OK)
			st = EXIT_USER;
		goto out;
	}
	/* every rank succeeded: rank 0 gathers what each measured */
	{
		int nsteps;
		const double *tm = rt_dist_times(d, &nsteps);
		size_t blen = sizeof(RankInfo) + 2 * (size_t)nsteps * sizeof(double);
		RankInfo *mine = calloc(1, blen);
		void **got = NULL;
		size_t *lens = NULL;
		const RtDistStats *ds = rt_dist_stats(d);
		if (!mine) {
			drv_error("out of memory");
			st = EXIT_USER;
			goto out;
		}
		mine->rank = me, mine->node = node, mine->steps = ds->steps, mine->nsteps = nsteps;
		snprintf(mine->host, sizeof mine->host, "%s", dmpi_host(m));
		snprintf(mine->devs, sizeof mine->devs, "%s", devs);
		mine->load_s = o->check ? -1 : load;     /* --check loads inside rt_check: not measured apart */
		mine->first_s = runs[0];
		mine->run_s = n > 1 ? median(runs + 1, (int)n - 1) : runs[0];
		mine->comm_s = n > 1 ? median(comms + 1, (int)n - 1) : comms[0];
		mine->sent_bytes = ds->sent_bytes, mine->recv_bytes = ds->recv_bytes;
		mine->sent_msgs = ds->sent_msgs, mine->recv_msgs = ds->recv_msgs;
		mine->peak_rss = peak_rss();
		memcpy(mine + 1, tm, 2 * (size_t)nsteps * sizeof(double));
		if (dmpi_gather(m, mine, blen, &got, &lens, &e) < 0) {
			fprintf(stderr, "aicc: error: rank %d (%s): %s\n", me, devs, e.msg);
			st = EXIT_USER;
		}
		free(mine);
		if (me == 0 && st == EXIT_OK) {
			RankInfo **ri = (RankInfo **)got;
			char **files = calloc((size_t)p->noutputs + 1, sizeof *files);
			Ranks rk = { ri, nr };
			if (!files || write_files(o, p, &r, o->check ? &c : NULL, files, write_json_mpi, &rk) < 0)
				st = EXIT_USER;
			if (st == EXIT_OK) {
				summary(p, &r, o->check ? &c : NULL, files, o->per_device, o->raw);
				rank_summary(ri, nr);
			}
			if (st == EXIT_OK && o->repeat) {
				RtLoadStats ls = { 0 };
				host_times(&ls, load, runs, NULL, n);
			}
			if (st == EXIT_OK && o->check && !c.ok)
				st = EXIT_USER;
			for (int i = 0; i < p->noutputs; i++)
				free(files[i]);
			free(files);
		}
		for (int k = 0; got && k < nr; k++)
			free(got[k]);
		free(got), free(lens);
	}
out:
	if (ran) {
		rt_check_free(&c);
		rt_run_free(p, &r);
	}
	for (int i = 0; i < nb; i++) {
		free((char *)bind[i].name);
		rt_tensor_free(&ts[i]);
	}
	free(runs), free(comms);
	if (d)
		snprintf(g_where, sizeof g_where, "%s", rt_dist_where(d));
	g_dist = NULL;
	rt_dist_free(d);
	free(dev_rank);
	plan_free(p);
	dmpi_finalize(m, st != EXIT_OK);
	return st;
}
#endif

int cmd_run(int argc, char **argv)
{
	RunOpts o;
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USER;
	/* The interpreter frees and allocates every activation at every step and run; glibc would
	 * hand blocks of 128 KiB and more back to the kernel (mmap, heap trim) and every run would
	 * fault in fresh zeroed pages again.  Keep them in the process: blocks up to the largest
	 * mmap threshold glibc accepts (32 MiB on 64-bit) come from the heap, which is not trimmed. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
	if (o.mpi)
		return run_mpi(&o);
	drv_register_runtime_hooks();
	RtError e = { 0 };
	Plan *p = plan_read(o.plan, &e);
	if (p && drv_debug_internal("run", &e) < 0) {
		plan_free(p);
		p = NULL;
	}
	if (!p) {
		drv_report(e.msg);
		return e.code == RT_EINTERNAL ? EXIT_INTERNAL : EXIT_USER;
	}
	RtTensor ts[MAX_INPUTS];
	RtBinding bind[MAX_INPUTS];
	memset(bind, 0, sizeof bind);
	int rc = read_inputs(&o, p, ts, bind) < 0 ? EXIT_USER : EXIT_OK;
	RtBinding *all = bind;
	RtTensor *store = NULL;
	int nall = o.ninputs, nstore = 0;
	if (rc == EXIT_OK && o.load_ckpt && ckpt_bind(o.load_ckpt, p, bind, o.ninputs, &all, &nall, &store, &nstore) < 0)
		rc = EXIT_USER;
	if (rc == EXIT_OK && !o.timing_only && check_unbound(p, all, nall) < 0)
		rc = EXIT_USER;
	if (rc == EXIT_OK && !o.timing_only)
		note_seeded(&o, p);
	if (rc == EXIT_OK)
		rc = execute(&o, p, all, nall);
	if (all != bind)
		ckpt_bind_free(all, o.ninputs, nall, store, nstore);
	for (int i = 0; i < o.ninputs; i++)
		if (bind[i].name) {
			free((char *)bind[i].name);
			rt_tensor_free(&ts[i]);
		}
	plan_free(p);
	return rc;
}
