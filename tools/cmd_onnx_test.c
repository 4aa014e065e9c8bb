/* tools/cmd_onnx_test.c: `aicc onnx-test [--target T] [--output-dir DIR] [-v] TESTDIR...`, the
 * ONNX backend-test conformance runner.
 *
 * Each TESTDIR holds model.onnx and test_data_set_K/{input,output}_N.pb (serialized
 * TensorProtos).  The runner imports the model, verifies it and infers shapes, binds each data
 * set's inputs (by tensor name, else by position among the graph inputs), evaluates the graph in
 * node order with the reference kernels (rt_kernel, the same kernels the interpreter dispatches
 * to), and compares every output with the expected one: shapes exactly, floats within
 * rtol 1e-3 + atol 1e-5 (NaN matches NaN, infinities must be equal), integers and bools exactly.
 * Prints "PASS name" or "FAIL name: reason" per test and a closing "N passed, N failed"; exits 0
 * only if every test passed.  --output-dir writes each output of the first data set as
 * DIR/<test>.<N>.npy (f32), for checkers such as tools/ctc-decode.py.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "runtime/kernels.h"
#include "tools/driver.h"

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

/* The graph's runtime values: one tensor slot per value id. */
typedef struct Env {
	RtTensor **val;     /* by Value id; borrowed for params and inputs, owned for node outputs */
	unsigned char *owned;
	int n;
} Env;

static void env_free(Env *env)
{
	for (int i = 0; i < env->n; i++)
		if (env->owned[i]) {
			rt_tensor_free(env->val[i]);
			free(env->val[i]);
		}
	free(env->val);
	free(env->owned);
}

/* Binds the data set's inputs to g's inputs: by name when the tensor has a matching name, else
 * by position. */
static int bind_inputs(Graph *g, Env *env, Named *in, int nin, char *why, size_t nwhy)
{
	if (nin != g->nin) {
		snprintf(why, nwhy, "the data set has %d inputs, the graph %d", nin, g->nin);
		return -1;
	}
	for (int i = 0; i < nin; i++) {
		Value *v = g->inputs[i];
		for (int k = 0; k < g->nin && in[i].name; k++)
			if (strcmp(g->inputs[k]->name, in[i].name) == 0)
				v = g->inputs[k];
		env->val[v->id] = &in[i].t;
	}
	return 0;
}

/* Evaluates g's nodes in order with the reference kernels. */
static int eval_graph(Graph *g, Env *env, char *why, size_t nwhy)
{
	for (int i = 0; i < g->nparams; i++) {
		Value *p = g->params[i];
		const RtTensor *t = ir_const_data(p);
		if (!t && p->init && p->init->kind == INIT_DATA)
			t = p->init->data;
		env->val[p->id] = (RtTensor *)t;
	}
	RtExecOpts opts = { 0 };
	ir_foreach_node(g, n) {
		RtTensor *in[64] = { 0 };
		if (n->nin > 64 || n->op == OP_Call) {
			snprintf(why, nwhy, "node '%s' (%s) cannot be evaluated", n->out[0]->name,
				 ir_ops[n->op].name);
			return -1;
		}
		for (int i = 0; i < n->nin; i++) {
			if (!n->in[i])
				continue;
			if (!(in[i] = env->val[n->in[i]->id])) {
				snprintf(why, nwhy, "value '%s' has no data (unbound parameter?)", n->in[i]->name);
				return -1;
			}
		}
		RtTensor *out = calloc((size_t)n->nout, sizeof *out);
		if (!out) {
			snprintf(why, nwhy, "out of memory");
			return -1;
		}
		for (int i = 0; i < n->nout; i++)
			out[i].dtype = n->out[i]->type.dt;
		RtKernelArgs a = { in, n->nin, out, n->nout, &n->attrs, &opts };
		RtError e = { 0 };
		int rc = rt_kernel((RtOp)n->op)(&a, &e);
		for (int i = 0; i < n->nout; i++) {
			RtTensor *t = malloc(sizeof *t);
			if (t)
				*t = out[i];
			else
				rt_tensor_free(&out[i]);
			env->val[n->out[i]->id] = t;
			env->owned[n->out[i]->id] = t != NULL;
		}
		free(out);
		if (rc < 0) {
			snprintf(why, nwhy, "node '%s' (%s): %s", n->out[0]->name, ir_ops[n->op].name, e.msg);
			return -1;
		}
	}
	return 0;
}

/* Compares got with want; -1 with the first difference described in why. */
static int compare(const char *name, const RtTensor *got, const RtTensor *want, char *why, size_t nwhy)
{
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

/* Writes t as a little-endian f32 .npy file (outputs for external checkers). */
static int write_npy_f32(const char *path, const RtTensor *t)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	char hdr[256], shape[160] = "";
	for (int i = 0; i < t->rank; i++)
		snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld, ", (long long)t->dims[i]);
	int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", shape);
	int pad = 64 - (10 + n + 1) % 64;
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	unsigned short hl = (unsigned short)(n + pad + 1);
	fputc(hl & 0xff, f);
	fputc(hl >> 8, f);
	fprintf(f, "%s%*s\n", hdr, pad, "");
	for (int64_t i = 0; i < t->n; i++) {
		float x = (float)rt_get(t, i);
		fwrite(&x, 4, 1, f);
	}
	return fclose(f);
}

static void save_outputs(const TestOpts *o, const char *test, Graph *g, Env *env)
{
	for (int i = 0; i < g->nout; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s.%d.npy", o->outdir, test, i);
		RtTensor *t = env->val[g->outputs[i]->id];
		if (t && write_npy_f32(path, t) < 0)
			fprintf(stderr, "aicc: warning: cannot write '%s'\n", path);
	}
}

/* Runs one data set folder against g; -1 with the reason in why. */
static int run_dataset(const TestOpts *o, const char *test, Graph *g, const char *ds, int first,
		       char *why, size_t nwhy)
{
	Named *in = NULL, *want = NULL;
	int nin = read_pbs(ds, "input", &in, why, nwhy), nwant = -1, rc = -1;
	Env env = { 0 };
	if (nin < 0)
		return -1;
	if ((nwant = read_pbs(ds, "output", &want, why, nwhy)) < 0)
		goto out;
	env.n = g->nvalues;
	env.val = calloc((size_t)env.n + 1, sizeof *env.val);
	env.owned = calloc((size_t)env.n + 1, 1);
	if (!env.val || !env.owned) {
		snprintf(why, nwhy, "out of memory");
		goto out;
	}
	if (nwant != g->nout) {
		snprintf(why, nwhy, "the data set has %d outputs, the graph %d", nwant, g->nout);
		goto out;
	}
	if (bind_inputs(g, &env, in, nin, why, nwhy) < 0 || eval_graph(g, &env, why, nwhy) < 0)
		goto out;
	if (first && o->outdir)
		save_outputs(o, test, g, &env);
	rc = 0;
	for (int i = 0; i < g->nout && rc == 0; i++)
		rc = compare(g->outputs[i]->name, env.val[g->outputs[i]->id], &want[i].t, why, nwhy);
out:
	env_free(&env);
	named_free(in, nin);
	if (nwant > 0)
		named_free(want, nwant);
	return rc;
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

/* Imports and checks dir/model.onnx, capturing its diagnostics into why. */
static Module *load_model(const char *dir, char *why, size_t nwhy)
{
	char path[4096], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof path, "%s/model.onnx", dir);
	FILE *mem = open_memstream(&buf, &len);
	diag_reset();
	diag_set_output(mem);
	Module *m = fe_import_onnx(path);
	if (m && (ir_verify(m) > 0 || ir_infer_shapes(m) > 0)) {
		ir_module_free(m);
		m = NULL;
	}
	diag_set_output(NULL);
	fclose(mem);
	if (!m)
		first_line(buf ? buf : "", why, nwhy, "import failed");
	free(buf);
	return m;
}

static int run_test(const TestOpts *o, const char *dir)
{
	const char *base = strrchr(dir, '/');
	char name[512], why[1200] = "";
	snprintf(name, sizeof name, "%s", base && base[1] ? base + 1 : dir);
	size_t nl = strlen(name);
	while (nl > 1 && name[nl - 1] == '/')
		name[--nl] = 0;
	Module *m = load_model(dir, why, sizeof why);
	int ok = m != NULL;
	char **ds = NULL;
	int nds = ok ? list_datasets(dir, &ds) : 0;
	if (ok && nds == 0) {
		snprintf(why, sizeof why, "no test_data_set_* folder");
		ok = 0;
	}
	for (int i = 0; ok && i < nds; i++) {
		char path[4096], sub[1200];
		snprintf(path, sizeof path, "%s/%s", dir, ds[i]);
		if (run_dataset(o, name, ir_entry(m), path, i == 0, sub, sizeof sub) < 0) {
			snprintf(why, sizeof why, "%.100s: %.1000s", ds[i], sub);
			ok = 0;
		}
	}
	for (int i = 0; i < nds; i++)
		free(ds[i]);
	free(ds);
	ir_module_free(m);
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
			       "  runs ONNX backend test folders (model.onnx, test_data_set_*/) and ends\n"
			       "  with 'N passed, N failed'; floats: rtol 1e-3, atol 1e-5\n");
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
	if (strcmp(o.target, "reference") != 0) {
		drv_error("onnx-test runs the reference target only (got '%s')", o.target);
		return EXIT_USER;
	}
	if (!ntests) {
		drv_error("no test folders given (see aicc onnx-test --help)");
		return EXIT_USER;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--target") == 0 || strcmp(argv[i], "--output-dir") == 0) {
			i++;
			continue;
		}
		if (argv[i][0] == '-')
			continue;
		if (run_test(&o, argv[i]))
			passed++;
		else
			failed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? EXIT_USER : EXIT_OK;
}
