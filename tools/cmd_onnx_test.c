/* tools/cmd_onnx_test.c: `aicc onnx-test [--target T] [--output-dir DIR] TESTDIR...`, the ONNX
 * backend-test conformance runner, through the real pipeline (design.md §8).
 *
 * Each TESTDIR holds model.onnx and test_data_set_K/{input,output}_N.pb (serialized
 * TensorProtos).  For every data set the runner imports the model, gives each graph input the
 * shape of its data (binding symbolic dims, as --shape does; inputs match by tensor name, else by
 * position), verifies, infers shapes, lowers the graph with --target (default reference) into a
 * plan and runs that plan in the interpreter (rt_run) with the inputs bound, then compares every
 * output with the expected one: shapes exactly, floats within rtol 1e-3 + atol 1e-5 (NaN matches
 * NaN, infinities must be equal), integers and bools exactly.  aicc compiles static shapes, so
 * an input whose *value* determines a shape (a Reshape shape, Slice starts, TopK k, ...) must be
 * known at compile time: when shape inference fails needing such values, the graph inputs they
 * come from (drv_value_inputs) become constants holding the data set's tensors, exactly as
 * `aicc compile --const NAME=FILE` does, and the data set is compiled again.  Prints
 * "PASS name" or "FAIL name: reason" per test and a closing "N passed, N failed"; exits 0 only if
 * every test passed.  --output-dir writes each output of the first data set as DIR/<test>.<N>.npy,
 * for checkers such as tools/ctc-decode.py.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "runtime/interp.h"
#include "runtime/npy.h"
#include "tools/driver.h"
#include "tools/progress.h"
#include "tools/plan_build.h"

#define RTOL 1e-3
#define ATOL 1e-5

typedef struct TestOpts {
	const char *target, *outdir;
	int verbose;
} TestOpts;

/* A named tensor read from a .pb file. */
typedef struct Named {
	char *name;
	RtTensor t;
} Named;

static void named_free(Named *v, int n)
{
	for (int i = 0; i < n; i++) {
		free(v[i].name);
		rt_tensor_free(&v[i].t);
	}
	free(v);
}

/* Reads DIR/PREFIX_0.pb, DIR/PREFIX_1.pb, ... until one is missing. */
static int read_pbs(const char *dir, const char *prefix, Named **out, char *why, size_t nwhy)
{
	Named *v = NULL;
	int n = 0;
	for (;; n++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, n);
		FILE *f = fopen(path, "rb");
		if (!f)
			break;
		fclose(f);
		Named *nv = realloc(v, (size_t)(n + 1) * sizeof *v);
		if (!nv)
			break;
		v = nv;
		RtError e = { 0 };
		if (fe_read_tensor_pb(path, &v[n].t, &v[n].name, &e) < 0) {
			snprintf(why, nwhy, "%s", e.msg);
			named_free(v, n);
			return -1;
		}
	}
	*out = v;
	return n;
}

/* ONNX 1.12's test data holds bfloat16 tensors as UINT16 bit patterns: reinterprets such a
 * tensor as the bf16 values it encodes when the model types it bf16.  0, or -1 on no memory. */
static int bf16_from_bits(RtTensor *t)
{
	RtTensor b;
	if (t->dtype != DT_U16 || rt_tensor_alloc(&b, DT_BF16, t->rank, t->dims, NULL) < 0)
		return t->dtype == DT_U16 ? -1 : 0;
	for (int64_t i = 0; i < t->n; i++) {
		uint32_t u = (uint32_t)(rt_i64(t)[i] & 0xffff) << 16;
		float f;
		memcpy(&f, &u, sizeof f);
		rt_f32(&b)[i] = f;
	}
	rt_tensor_free(t);
	*t = b;
	return 0;
}

/* Compares got with want; -1 with the first difference described in why. */
static int compare(const char *name, const RtTensor *got, const RtTensor *want, char *why, size_t nwhy)
{
	if (got->dtype == DT_BF16 && want->dtype == DT_U16 && bf16_from_bits((RtTensor *)want) < 0) {
		snprintf(why, nwhy, "out of memory");
		return -1;
	}
	int same = got->rank == want->rank;
	for (int i = 0; same && i < got->rank; i++)
		same = got->dims[i] == want->dims[i];
	if (!same) {
		char a[128] = "", b[128] = "";
		for (int i = 0; i < got->rank; i++)
			snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", i ? "," : "", (long long)got->dims[i]);
		for (int i = 0; i < want->rank; i++)
			snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", i ? "," : "", (long long)want->dims[i]);
		snprintf(why, nwhy, "output '%s' has shape [%s], expected [%s]", name, a, b);
		return -1;
	}
	int isf = rt_dtype_isfloat(want->dtype);
	if (isf != rt_dtype_isfloat(got->dtype)) {
		snprintf(why, nwhy, "output '%s' has dtype %s, expected %s", name,
			 rt_dtype_name(got->dtype), rt_dtype_name(want->dtype));
		return -1;
	}
	for (int64_t i = 0; i < want->n; i++) {
		if (isf) {
			double x = rt_get(got, i), y = rt_get(want, i);
			if (isnan(y) ? isnan(x) : (isinf(y) ? x == y : fabs(x - y) <= ATOL + RTOL * fabs(y)))
				continue;
			snprintf(why, nwhy, "output '%s'[%lld] = %.9g, expected %.9g", name, (long long)i, x, y);
		} else {
			int64_t x = rt_geti(got, i), y = rt_geti(want, i);
			if (x == y)
				continue;
			snprintf(why, nwhy, "output '%s'[%lld] = %lld, expected %lld", name, (long long)i,
				 (long long)x, (long long)y);
		}
		return -1;
	}
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The test_data_set_* folders of dir, sorted; returns the count (names malloc'd). */
static int list_datasets(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	char **v = NULL;
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strncmp(de->d_name, "test_data_set_", 14) == 0) {
			char **nv = realloc(v, (size_t)(n + 1) * sizeof *v);
			if (!nv)
				break;
			v = nv;
			v[n++] = strdup(de->d_name);
		}
	if (d)
		closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof *v, by_name);
	*out = v;
	return n;
}

/* The first line of the diagnostics printed while importing or checking. */
static void first_line(const char *text, char *why, size_t nwhy, const char *def)
{
	size_t len = strcspn(text, "\n");
	if (!len) {
		snprintf(why, nwhy, "%s", def);
		return;
	}
	snprintf(why, nwhy, "%.*s", (int)(len < nwhy - 1 ? len : nwhy - 1), text);
}

/* One data set compiled: the module and plan, the data, and the diagnostics captured. */
typedef struct Case {
	const TestOpts *o;
	const char *dir;
	Named *in, *want;
	int nin, nwant;
	Module *m;
	Plan *p;
	Value **bound;       /* bound[i]: the graph input data set input i feeds */
	char *why; size_t nwhy;
} Case;

/* The graph input data set input i feeds: by tensor name, else by position. */
static Value *input_for(Graph *g, const Named *in, int i)
{
	for (int k = 0; k < g->nin && in[i].name; k++)
		if (strcmp(g->inputs[k]->name, in[i].name) == 0)
			return g->inputs[k];
	return i < g->nin ? g->inputs[i] : NULL;
}

/* Imports the model, shapes its inputs from the data, makes the inputs marked in isconst
 * constants, verifies and infers shapes.  1 when done, 0 on failure with the reason in why;
 * *retry is set when shape inference needs more inputs' values (marked in isconst). */
static int compile_case(Case *c, unsigned char *isconst, int *retry)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/model.onnx", c->dir);
	*retry = 0;
	if (!(c->m = fe_import_onnx(path)))
		return 0;
	Graph *g = ir_entry(c->m);
	if (!g || g->nin != c->nin) {
		snprintf(c->why, c->nwhy, "the data set has %d inputs, the graph %d", c->nin, g ? g->nin : 0);
		return 0;
	}
	for (int i = 0; i < c->nin; i++)
		c->bound[i] = input_for(g, c->in, i);
	for (int i = 0; i < c->nin; i++) {
		if (c->bound[i] && c->bound[i]->type.dt == DT_BF16)
			bf16_from_bits(&c->in[i].t);
		const RtTensor *t = &c->in[i].t;
		if (!c->bound[i] || drv_shape_input(c->m, c->bound[i], t->rank, t->dims, "input data") < 0 ||
		    (isconst[i] && drv_make_const(c->m, c->bound[i], t, "input data") < 0)) {
			snprintf(c->why, c->nwhy, "input %d does not fit the model's input '%s'", i,
				 c->bound[i] ? c->bound[i]->name : "?");
			return 0;
		}
	}
	if (ir_verify(c->m) > 0)
		return 0;
	if (ir_infer_shapes(c->m) == 0)
		return 1;
	Value **need = calloc((size_t)g->nin + 1, sizeof *need);
	int nneed = need ? drv_value_inputs(c->m, need) : 0;
	for (int k = 0; k < nneed; k++)
		for (int i = 0; i < c->nin; i++)
			if (c->bound[i] == need[k] && !isconst[i])
				isconst[i] = 1, *retry = 1;
	free(need);
	return 0;
}

/* Compiles the data set into c->p, retrying with more constant inputs while shape inference
 * asks for them; diagnostics are captured and the first line becomes the reason. */
static int build_case(Case *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	unsigned char *isconst = calloc((size_t)c->nin + 1, 1);
	int ok = 0, retry = isconst != NULL;
	diag_reset();
	diag_set_output(mem);
	while (!ok && retry) {
		ir_module_free(c->m);
		ok = compile_case(c, isconst, &retry);
	}
	if (ok) {
		char binds[4096], path[4096];
		snprintf(path, sizeof path, "%s/model.onnx", c->dir);
		drv_bound_symbols(c->m, binds, sizeof binds);
		BuildOpts b = { path, *binds ? binds : NULL, c->o->target, NULL, NULL, 0, NULL, NULL, NULL, NULL };
		RtError e = { 0 };
		if (!(c->p = drv_lower(c->m, &b, &e))) {
			snprintf(c->why, c->nwhy, "%s", e.msg);
			ok = 0;
		}
	}
	diag_set_output(NULL);
	fclose(mem);
	free(isconst);
	if (!ok && !*c->why)
		first_line(buf ? buf : "", c->why, c->nwhy, "compilation failed");
	free(buf);
	return ok;
}

/* Runs the compiled plan with the data set's (non-constant) inputs bound. */
static int run_case(Case *c, RtRun *r)
{
	Graph *g = ir_entry(c->m);
	if (g->nin != c->p->ninputs) {
		snprintf(c->why, c->nwhy, "the plan has %d inputs, the graph %d", c->p->ninputs, g->nin);
		return -1;
	}
	RtBinding *bind = calloc((size_t)g->nin + 1, sizeof *bind);
	int nb = 0;
	if (!bind) {
		snprintf(c->why, c->nwhy, "out of memory");
		return -1;
	}
	for (int k = 0; k < g->nin; k++)      /* plan inputs follow the graph's input order */
		for (int i = 0; i < c->nin; i++)
			if (c->bound[i] == g->inputs[k])
				bind[nb++] = (RtBinding){ c->p->inputs[k].name, &c->in[i].t };
	RtRunOpts ro = { bind, nb, 0, 0, 0, c->dir, 0, NULL, NULL, NULL };
	RtError e = { 0 };
	int rc = rt_run(c->p, &ro, r, &e);
	if (rc < 0)
		snprintf(c->why, c->nwhy, "%s", e.msg);
	free(bind);
	return rc;
}

static void save_outputs(const TestOpts *o, const char *test, const Plan *p, const RtRun *r)
{
	for (int i = 0; i < p->noutputs; i++) {
		char path[4096];
		RtError e = { 0 };
		snprintf(path, sizeof path, "%s/%s.%d.npy", o->outdir, test, i);
		if (rt_npy_write(path, &r->outputs[i], &e) < 0)
			fprintf(stderr, "aicc: warning: %s\n", e.msg);
	}
}

/* Runs one data set folder of test dir; -1 with the reason in why. */
static int run_dataset(const TestOpts *o, const char *test, const char *dir, const char *ds, int first,
		       char *why, size_t nwhy)
{
	Case c = { .o = o, .dir = dir, .why = why, .nwhy = nwhy, .nwant = -1 };
	RtRun r;
	int rc = -1, ran = 0;
	*why = 0;
	if ((c.nin = read_pbs(ds, "input", &c.in, why, nwhy)) < 0)
		return -1;
	if ((c.nwant = read_pbs(ds, "output", &c.want, why, nwhy)) < 0)
		goto out;
	if (!(c.bound = calloc((size_t)c.nin + 1, sizeof *c.bound))) {
		snprintf(why, nwhy, "out of memory");
		goto out;
	}
	if (!build_case(&c))
		goto out;
	if (c.nwant != c.p->noutputs) {
		snprintf(why, nwhy, "the data set has %d outputs, the plan %d", c.nwant, c.p->noutputs);
		goto out;
	}
	if (run_case(&c, &r) < 0)
		goto out;
	ran = 1;
	if (first && o->outdir)
		save_outputs(o, test, c.p, &r);
	rc = 0;
	for (int i = 0; i < c.nwant && rc == 0; i++)
		rc = compare(c.p->outputs[i].name, &r.outputs[i], &c.want[i].t, why, nwhy);
out:
	if (ran)
		rt_run_free(c.p, &r);
	plan_free(c.p);
	ir_module_free(c.m);
	free(c.bound);
	named_free(c.in, c.nin);
	if (c.nwant > 0)
		named_free(c.want, c.nwant);
	return rc;
}

static int run_test(const TestOpts *o, const char *dir)
{
	const char *base = strrchr(dir, '/');
	char name[512], why[1200] = "";
	snprintf(name, sizeof name, "%s", base && base[1] ? base + 1 : dir);
	size_t nl = strlen(name);
	while (nl > 1 && name[nl - 1] == '/')
		name[--nl] = 0;
	char **ds = NULL;
	int ok = 1, nds = list_datasets(dir, &ds);
	if (nds == 0) {
		snprintf(why, sizeof why, "no test_data_set_* folder");
		ok = 0;
	}
	for (int i = 0; ok && i < nds; i++) {
		char path[4096], sub[1200];
		snprintf(path, sizeof path, "%s/%s", dir, ds[i]);
		if (run_dataset(o, name, dir, path, i == 0, sub, sizeof sub) < 0) {
			snprintf(why, sizeof why, "%.100s: %.1000s", ds[i], sub);
			ok = 0;
		}
	}
	for (int i = 0; i < nds; i++)
		free(ds[i]);
	free(ds);
	if (ok)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why);
	fflush(stdout);
	return ok;
}

int cmd_onnx_test(int argc, char **argv)
{
	TestOpts o = { "reference", NULL, 0 };
	int passed = 0, failed = 0, ntests = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: aicc onnx-test [--target T] [--output-dir DIR] TESTDIR...\n"
			       "  runs ONNX backend test folders (model.onnx, test_data_set_*/): each data set\n"
			       "  is compiled for --target (default reference) and its plan run in the\n"
			       "  interpreter; inputs whose values determine shapes become constants (as\n"
			       "  compile --const does).  Ends with 'N passed, N failed'; floats: rtol 1e-3,\n"
			       "  atol 1e-5; --output-dir DIR writes DIR/<test>.<N>.npy\n");
			return EXIT_OK;
		}
		if ((r = opt_value(argc, argv, &i, "--target", &o.target)) ||
		    (r = opt_value(argc, argv, &i, "--output-dir", &o.outdir))) {
			if (r < 0)
				return EXIT_USER;
			continue;
		}
		if (argv[i][0] == '-') {
			drv_error("unknown option '%s' (see aicc onnx-test --help)", argv[i]);
			return EXIT_USER;
		}
		ntests++;
	}
	if (!ntests) {
		drv_error("no test folders given (see aicc onnx-test --help)");
		return EXIT_USER;
	}
	drv_register_runtime_hooks();
	int total = 0;   /* viz: a progress line over the folders */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--target") == 0 || strcmp(argv[i], "--output-dir") == 0) {
				i++;
				continue;
			}
			if (argv[i][0] == '-')
				continue;
			if (!pass) {
				total++;
				continue;
			}
			progress_step(NULL, "onnx-test", passed + failed, total);
			progress_pause();   /* run_test prints its result on stdout */
			if (run_test(&o, argv[i]))
				passed++;
			else
				failed++;
		}
	progress_end();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? EXIT_USER : EXIT_OK;
}
