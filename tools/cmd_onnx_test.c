/* tools/cmd_onnx_test.c: `aicc onnx-test [--target T] [--precision P] [--output-dir DIR] TESTDIR...`,
 * the ONNX backend-test conformance runner, through the real pipeline (design.md §8).
 *
 * Each TESTDIR holds model.onnx and test_data_set_K/{input,output}_N.pb (serialized
 * TensorProtos).  For every data set the runner imports the model, gives each graph input the
 * shape of its data (binding symbolic dims, as --shape does; inputs match by tensor name, else by
 * position), verifies, infers shapes, lowers the graph with --target (default reference) and
 * --precision (default: the target's) into a plan and runs that plan in the interpreter (rt_run)
 * with the inputs bound, then compares every output with the expected one: shapes exactly,
 * integers and bools exactly, floats elementwise within
 *     |got - want| <= atol + rtol |want| + 8 u max|want|
 * where atol 1e-5 and rtol 1e-3 are the suite's own tolerance (the expected values come from
 * numpy in float64) and 8 u max|want| is `run --check`'s normwise tolerance (docs/plan-format.md
 * §Tolerances) for the formats this plan introduced: u is the unit roundoff of the coarsest
 * format the plan holds a value in, or feeds a matrix unit with, that is coarser than the format
 * the reference target's plan of the same graph holds it in (bf16 for an f32 model on the GPU
 * and TPU targets; 0 on the reference target, and for formats the model itself names, such as an
 * explicit Cast to f16: those must match as the reference does).  An output that an explicit
 * conversion (Cast, CastLike, QuantizeLinear, DequantizeLinear) computes from the data set's
 * inputs and constants alone has one right answer and must match bit for bit on every target.
 * NaN matches NaN, infinities must be equal.  A FAIL line names the element and the tolerance it was held to.  aicc compiles
 * static shapes, so an input whose *value* determines a shape (a Reshape shape, Slice starts,
 * TopK k, ...) must be known at compile time: when shape inference fails needing such values,
 * the graph inputs they come from (drv_value_inputs) become constants holding the data set's
 * tensors, exactly as `aicc compile --const NAME=FILE` does, and the data set is compiled again.
 * Prints "PASS name" or "FAIL name: reason" per test (after, with -v, one line per output giving
 * its largest difference and the tolerance) and a closing "N passed, N failed"; exits 0
 * only if every test passed.  --output-dir writes each output of the first data set as
 * DIR/<test>.<N>.npy, for checkers such as tools/ctc-decode.py.
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
	const char *target, *precision, *outdir;
	int verbose;
	/* the target's machine and precision, and the reference target's, loaded and parsed once */
	TgtMachine tm, ref_tm;
	Precision prec, ref_prec;
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

/* The tolerance of one comparison: the suite's elementwise part and the plan's formats. */
typedef struct Tol {
	double u;            /* unit roundoff of the coarsest format the plan introduced; 0: none */
	DType fmt;           /* that format */
	int exact;           /* the output is an explicit conversion of exact data: bit for bit */
} Tol;

/* "tolerance 1e-05 + 0.001|want| + 8u max|want| = 0.0313 (u = 2^-8: bf16 for f32 values)" */
static void tol_str(const Tol *t, double bound, char *buf, size_t n)
{
	if (t->u > 0)
		snprintf(buf, n, "tolerance %g + %g|want| + 8u*max|want| = %.3g (u = %.3g: the plan holds values in %s, "
			 "coarser than the reference)", ATOL, RTOL, bound, t->u, rt_dtype_name(t->fmt));
	else
		snprintf(buf, n, "tolerance %g + %g|want| = %.3g (the plan keeps the reference's formats)", ATOL, RTOL, bound);
}

/* Compares got with want; -1 with the first difference and its tolerance described in why. */
static int compare(const char *name, const RtTensor *got, const RtTensor *want, const Tol *tol, char *why,
		   size_t nwhy, const char *verbose)
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
	double amax = 0;
	for (int64_t i = 0; isf && i < want->n; i++)
		if (isfinite(rt_get(want, i)))
			amax = fmax(amax, fabs(rt_get(want, i)));
	double dmax = 0, bmax = 0;
	for (int64_t i = 0; i < want->n; i++) {
		if (isf) {
			double x = rt_get(got, i), y = rt_get(want, i), bound = ATOL + RTOL * fabs(y) + 8 * tol->u * amax;
			if (tol->exact)
				bound = 0;
			if (isfinite(y) && isfinite(x))
				dmax = fmax(dmax, fabs(x - y)), bmax = fmax(bmax, bound);
			if (isnan(y) ? isnan(x) : (isinf(y) ? x == y : fabs(x - y) <= bound))
				continue;
			char t[256];
			if (tol->exact)
				snprintf(t, sizeof t, "tolerance 0 (an explicit conversion of the model's data is exact on every target)");
			else
				tol_str(tol, bound, t, sizeof t);
			snprintf(why, nwhy, "output '%s'[%lld] = %.9g, expected %.9g, |diff| %.3g > %s", name, (long long)i, x, y,
				 fabs(x - y), t);
		} else {
			int64_t x = rt_geti(got, i), y = rt_geti(want, i);
			if (x == y)
				continue;
			snprintf(why, nwhy, "output '%s'[%lld] = %lld, expected %lld (%s: exact)", name, (long long)i,
				 (long long)x, (long long)y, rt_dtype_name(want->dtype));
		}
		return -1;
	}
	if (verbose && isf) {
		char t[256];
		if (tol->exact)
			snprintf(t, sizeof t, "tolerance 0 (an explicit conversion of the model's data)");
		else
			tol_str(tol, bmax, t, sizeof t);
		printf("  %s: output '%s': max |got - want| %.3g, %s\n", verbose, name, dmax, t);
	} else if (verbose) {
		printf("  %s: output '%s': exact (%s)\n", verbose, name, rt_dtype_name(want->dtype));
	}
	return 0;
}

/* Whether plan buffer b is a plan input or a constant: data given exactly. */
static int given_data(const Plan *p, int b)
{
	for (int i = 0; i < p->ninputs; i++)
		if (p->inputs[i].buffer == b)
			return 1;
	for (int i = 0; i < p->nconsts; i++)
		if (p->consts[i].buffer == b)
			return 1;
	return 0;
}

/* Whether output buffer b of p is computed by an explicit conversion (Cast, CastLike,
 * QuantizeLinear, DequantizeLinear) of given data only: then it has one right answer. */
static int exact_output(const Plan *p, int b)
{
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			if (in->kind != PI_KERNEL || in->nout < 1 || in->out[0] != b)
				continue;
			if (in->op != RT_OP_Cast && in->op != RT_OP_CastLike && in->op != RT_OP_QuantizeLinear &&
			    in->op != RT_OP_DequantizeLinear)
				return 0;
			for (int k = 0; k < in->nin; k++)
				if (in->in[k] >= 0 && !given_data(p, in->in[k]))
					return 0;
			return 1;
		}
	return 0;
}

/* The reference plan's buffer holding what buffer b of p holds (same name), or -1. */
static int ref_buffer(const Plan *ref, const Plan *p, int b)
{
	return ref ? plan_find_buffer(ref, p->buffers[b].name) : -1;
}

/* Adds format d (scaled: an integer grid with a scale per group) to t when it is coarser than
 * `base`, the format the reference holds the same value in (DT_INVALID: no such value). */
static void introduce(Tol *t, DType d, int scaled, DType base)
{
	double u = rt_unit_roundoff(d, scaled);
	if ((base == DT_INVALID || u > rt_unit_roundoff(base, 0)) && u > t->u)
		t->u = u, t->fmt = d;
}

/* The formats plan p introduced against ref, the reference target's plan of the same graph: float
 * buffers coarser than the reference's buffer of the same value (or with no such buffer), MMA
 * operand formats coarser than the reference's first operand, and the grids of Quantize kernels
 * (the quantization pass's; a model's own QuantizeLinear writes integer buffers both plans have). */
static Tol plan_tolerance(const Plan *p, const Plan *ref)
{
	Tol t = { 0, DT_INVALID, 0 };
	if (!ref || p == ref)
		return t;
	for (int b = 0; b < p->nbuffers; b++) {
		int r = ref_buffer(ref, p, b);
		if (rt_dtype_isfloat(p->buffers[b].dtype))
			introduce(&t, p->buffers[b].dtype, 0, r >= 0 ? ref->buffers[r].dtype : DT_INVALID);
	}
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			if (in->kind != PI_KERNEL)
				continue;
			if (in->opts.mma_in != DT_INVALID && in->nin > 0 && in->in[0] >= 0) {
				int r = ref_buffer(ref, p, in->in[0]);
				introduce(&t, in->opts.mma_in, 0, r >= 0 ? ref->buffers[r].dtype : DT_INVALID);
			}
			DType to = in->op == RT_OP_Quantize ? rt_dtype_lookup(rt_attr_str(&in->attrs, "to", "")) : DT_INVALID;
			if (to != DT_INVALID)
				introduce(&t, to, rt_attr_find(&in->attrs, "group") != NULL, DT_INVALID);
		}
	return t;
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
	Tol tol;             /* what the plan's formats add to the suite's tolerance */
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
		BuildOpts b = { path, *binds ? binds : NULL, c->o->target, NULL, NULL, 0, c->o->precision, NULL, &c->o->tm,
				&c->o->prec };
		RtError e = { 0 };
		if (!(c->p = drv_lower(c->m, &b, &e))) {
			snprintf(c->why, c->nwhy, "%s", e.msg);
			ok = 0;
		} else if (strcmp(c->o->target, "reference") != 0) {
			/* the formats the target introduced, against the reference target's plan */
			BuildOpts rb = b;
			rb.target = "reference", rb.precision = NULL, rb.loaded = &c->o->ref_tm, rb.prec = &c->o->ref_prec;
			Plan *ref = drv_lower(c->m, &rb, &e);
			if (!ref) {
				snprintf(c->why, c->nwhy, "the reference plan: %s", e.msg);
				ok = 0;
			}
			c->tol = plan_tolerance(c->p, ref);
			plan_free(ref);
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
	for (int i = 0; i < c.nwant && rc == 0; i++) {
		Tol t = c.tol;
		t.exact = exact_output(c.p, c.p->outputs[i].buffer);
		rc = compare(c.p->outputs[i].name, &r.outputs[i], &c.want[i].t, &t, why, nwhy,
			     o->verbose ? ds + strlen(dir) + 1 : NULL);
	}
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
	TestOpts o = { .target = "reference" };
	int passed = 0, failed = 0, ntests = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: aicc onnx-test [--target T] [--precision P] [-v] [--output-dir DIR] TESTDIR...\n"
			       "  runs ONNX backend test folders (model.onnx, test_data_set_*/): each data set\n"
			       "  is compiled for --target (default reference) at --precision (default: the\n"
			       "  target's) and its plan run in the interpreter; inputs whose values determine\n"
			       "  shapes become constants (as compile --const does).  Floats must agree within\n"
			       "  1e-5 + 1e-3|want| + 8u*max|want|, u the unit roundoff of the coarsest format\n"
			       "  the plan introduced over the reference target's plan (0 there); integers\n"
			       "  exactly.  Ends with 'N passed, N failed'; -v prints each output's largest\n"
			       "  difference and tolerance; --output-dir DIR writes DIR/<test>.<N>.npy\n");
			return EXIT_OK;
		}
		if ((r = opt_value(argc, argv, &i, "--target", &o.target)) ||
		    (r = opt_value(argc, argv, &i, "--precision", &o.precision)) ||
		    (r = opt_value(argc, argv, &i, "--output-dir", &o.outdir))) {
			if (r < 0)
				return EXIT_USER;
			continue;
		}
		if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
			o.verbose = 1;
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
	const Target *t = tgt_find(o.target), *rt = tgt_find("reference");
	RtError e = { 0 };
	if (!t) {
		char sug[512];
		tgt_suggest(o.target, sug, sizeof sug);
		drv_error("unknown target '%s'%s", o.target, sug);
		return EXIT_USER;
	}
	if (drv_open_machine(t, NULL, NULL, 0, o.precision, &o.tm, &o.prec, &e) < 0)
		return drv_report(e.msg), EXIT_USER;
	if (drv_open_machine(rt, NULL, NULL, 0, NULL, &o.ref_tm, &o.ref_prec, &e) < 0) {
		tgt_machine_free(&o.tm);
		return drv_report(e.msg), EXIT_USER;
	}
	drv_register_runtime_hooks();
	int total = 0;   /* viz: a progress line over the folders */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "--target") == 0 || strcmp(argv[i], "--precision") == 0 ||
			    strcmp(argv[i], "--output-dir") == 0) {
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
	tgt_machine_free(&o.tm);
	tgt_machine_free(&o.ref_tm);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? EXIT_USER : EXIT_OK;
}
