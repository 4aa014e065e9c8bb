/* tools/cmd_compile.c: `aicc compile MODEL [options]`: read a model (.aig, or .onnx through the
 * ONNX importer), bind dimensions (--bind, --shape), verify,
 * infer shapes, and emit the IR or a summary (later: run the passes and a target). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "tools/driver.h"
#include "tools/pass_opts.h"   /* passes */

typedef struct CompileOpts {
	const char *model, *output, *emit, *target;
	const char *binds[64];
	int nbinds;
	const char *shapes[64];      /* --shape x=1,3,48,262 */
	int nshapes;
	const char *print_after;
	int print_after_all;
	PassOpts passes;     /* passes: --passes, -O, --remarks, ... (tools/pass_opts.c) */
} CompileOpts;

static void compile_help(void)
{
	printf("usage: aicc compile MODEL(.aig|.onnx) [options]\n"
	       "  --emit ir|summary     what to write (default: summary)\n"
	       "  -o FILE               output file (default: stdout)\n"
	       "  --bind S=2048,B=1     bind dimension symbols (repeatable)\n"
	       "  --shape x=1,3,48,262  give input x this shape, binding its symbolic dims (repeatable)\n"
	       "  --print-after PASS    print the IR to stderr after PASS (verify, infer-shapes)\n"
	       "  --print-after-all     print the IR after every pass\n");
	pass_opts_help();    /* passes */
}

/* Parses "S=2048,B=1" and binds each symbol; -1 with a message on malformed text. */
static int apply_binds(Module *m, const char *spec)
{
	char *s = strdup(spec), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end = NULL;
		errno = 0;
		long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || eq == tok || !end || *end || errno || v < 0) {
			drv_error("--bind expects NAME=VALUE with a non-negative integer, got '%s'", tok);
			rc = -1;
			break;
		}
		*eq = 0;
		ir_bind(m, tok, v);
	}
	free(s);
	return rc;
}

/* Parses "x=1,3,48,262": input x of the entry graph gets that shape; each symbolic dim of x that
 * is a plain symbol is bound to the given value, a constant dim must agree.  -1 on errors. */
static int apply_shape(Module *m, const char *spec)
{
	const char *eq = strchr(spec, '=');
	Graph *g = ir_entry(m);
	Value *x = NULL;
	for (int i = 0; g && eq && i < g->nin; i++)
		if (strlen(g->inputs[i]->name) == (size_t)(eq - spec) &&
		    strncmp(g->inputs[i]->name, spec, (size_t)(eq - spec)) == 0)
			x = g->inputs[i];
	if (!eq || !x) {
		drv_error("--shape expects INPUT=D0,D1,... naming an input of the model, got '%s'", spec);
		return -1;
	}
	Dim dims[IR_MAX_RANK];
	int rank = 0;
	for (const char *p = eq + 1; *p; rank++) {
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0 || (*end && *end != ',') || rank == IR_MAX_RANK) {
			drv_error("--shape %s: dims must be non-negative integers separated by commas", spec);
			return -1;
		}
		dims[rank] = dim_c(v);
		p = *end ? end + 1 : end;
	}
	if (x->type.rank >= 0 && x->type.rank != rank) {
		drv_error("--shape %s: input '%s' has rank %d, not %d", spec, x->name, x->type.rank, rank);
		return -1;
	}
	for (int i = 0; i < rank && x->type.rank >= 0; i++) {
		Dim d = x->type.dims[i];
		char buf[256];
		if (dim_isconst(d) && d.k != dims[i].k) {
			drv_error("--shape %s: dim %d of input '%s' is %lld, not %lld", spec, i, x->name,
				  (long long)d.k, (long long)dims[i].k);
			return -1;
		}
		if (!dim_isconst(d) && ir_sym_find(m, dim_str(m, d, buf, sizeof buf)) >= 0)
			ir_bind(m, buf, dims[i].k);
	}
	x->type = ir_type(m, x->type.dt, rank, dims);
	return 0;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && strcmp(s + n - k, suf) == 0;
}

static void maybe_print(const CompileOpts *o, const Module *m, const char *pass)
{
	if (o->print_after_all || (o->print_after && strcmp(o->print_after, pass) == 0)) {
		fprintf(stderr, "# IR after %s\n", pass);
		ir_print_module(m, stderr);
	}
}

static int emit_summary(Module *m, FILE *f)
{
	Graph *g = ir_entry(m);
	Summary s = ir_summary(g);
	json_t *o = json_object();
	json_object_set_new(o, "graph", json_string(g->name));
	json_object_set_new(o, "nodes", json_integer(s.nodes));
	json_object_set_new(o, "parameters", json_integer(s.parameters));
	json_object_set_new(o, "parameter_bytes", json_integer(s.parameter_bytes));
	if (s.flops < 9.2e18)
		json_object_set_new(o, "flops", json_integer((json_int_t)s.flops));
	else
		json_object_set_new(o, "flops", json_real(s.flops));
	int rc = json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_INDENT(2));
	fputc('\n', f);
	json_decref(o);
	return rc;
}

static int parse_opts(int argc, char **argv, CompileOpts *o)
{
	memset(o, 0, sizeof *o);
	pass_opts_init(&o->passes);    /* passes */
	o->emit = "summary";
	o->target = "reference";
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			compile_help();
			exit(EXIT_OK);
		}
		if ((r = opt_value(argc, argv, &i, "--emit", &o->emit)) ||
		    (r = opt_value(argc, argv, &i, "-o", &o->output)) ||
		    (r = opt_value(argc, argv, &i, "--target", &o->target)) ||
		    (r = opt_value(argc, argv, &i, "--print-after", &o->print_after))) {
			if (r < 0)
				return -1;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--shape", &v))) {
			if (r < 0)
				return -1;
			if (o->nshapes == 64) {
				drv_error("too many --shape options");
				return -1;
			}
			o->shapes[o->nshapes++] = v;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--bind", &v))) {
			if (r < 0)
				return -1;
			if (o->nbinds == 64) {
				drv_error("too many --bind options");
				return -1;
			}
			o->binds[o->nbinds++] = v;
			continue;
		}
		if (strcmp(argv[i], "--print-after-all") == 0)
			o->print_after_all = 1;    /* and, for the passes: */
		if ((r = pass_opts_parse(argc, argv, &i, &o->passes))) {    /* passes */
			if (r < 0)
				return -1;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			drv_error("unknown option '%s' (see aicc compile --help)", argv[i]);
			return -1;
		}
		if (o->model) {
			drv_error("more than one model given ('%s' and '%s')", o->model, argv[i]);
			return -1;
		}
		o->model = argv[i];
	}
	if (!o->model) {
		drv_error("no model given (see aicc compile --help)");
		return -1;
	}
	if (strcmp(o->emit, "ir") && strcmp(o->emit, "summary")) {
		drv_error("unknown --emit kind '%s' (expected ir or summary)", o->emit);
		return -1;
	}
	return 0;
}

int cmd_compile(int argc, char **argv)
{
	CompileOpts o;
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USER;
	Module *m = has_suffix(o.model, ".onnx") ? fe_import_onnx(o.model) : fe_parse_aig(o.model);
	if (!m)
		return EXIT_USER;
	int rc = EXIT_USER;
	for (int i = 0; i < o.nbinds; i++)
		if (apply_binds(m, o.binds[i]) < 0)
			goto out;
	for (int i = 0; i < o.nshapes; i++)
		if (apply_shape(m, o.shapes[i]) < 0)
			goto out;
	if (ir_verify(m) > 0)
		goto out;
	maybe_print(&o, m, "verify");
	if (ir_infer_shapes(m) > 0)
		goto out;
	maybe_print(&o, m, "infer-shapes");
	/* passes: run the pipeline after shape inference */
	o.passes.ctx.print_after = o.print_after;
	if (pass_opts_run(&o.passes, m) > 0)
		goto out;
	/* end passes */
	OutFile f;
	if (out_open(&f, o.output) < 0)
		goto out;
	if (strcmp(o.emit, "ir") == 0)
		ir_print_module(m, f.f);
	else
		emit_summary(m, f.f);
	rc = out_commit(&f) < 0 ? EXIT_USER : EXIT_OK;
out:
	pass_ctx_free(&o.passes.ctx);    /* passes */
	ir_module_free(m);
	return rc;
}
