/* tools/cmd_compile.c: `aicc compile MODEL [options]`: read a model, bind dimensions, verify,
 * infer shapes, and emit the IR or a summary (later: run the passes and a target). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "tools/driver.h"

typedef struct CompileOpts {
	const char *model, *output, *emit, *target;
	const char *binds[64];
	int nbinds;
	const char *print_after;
	int print_after_all;
} CompileOpts;

static void compile_help(void)
{
	printf("usage: aicc compile MODEL(.aig) [options]\n"
	       "  --emit ir|summary     what to write (default: summary)\n"
	       "  -o FILE               output file (default: stdout)\n"
	       "  --bind S=2048,B=1     bind dimension symbols (repeatable)\n"
	       "  --print-after PASS    print the IR to stderr after PASS (verify, infer-shapes)\n"
	       "  --print-after-all     print the IR after every pass\n");
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
		if (strcmp(argv[i], "--print-after-all") == 0) {
			o->print_after_all = 1;
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
	Module *m = fe_parse_aig(o.model);
	if (!m)
		return EXIT_USER;
	int rc = EXIT_USER;
	for (int i = 0; i < o.nbinds; i++)
		if (apply_binds(m, o.binds[i]) < 0)
			goto out;
	if (ir_verify(m) > 0)
		goto out;
	maybe_print(&o, m, "verify");
	if (ir_infer_shapes(m) > 0)
		goto out;
	maybe_print(&o, m, "infer-shapes");
	OutFile f;
	if (out_open(&f, o.output) < 0)
		goto out;
	if (strcmp(o.emit, "ir") == 0)
		ir_print_module(m, f.f);
	else
		emit_summary(m, f.f);
	rc = out_commit(&f) < 0 ? EXIT_USER : EXIT_OK;
out:
	ir_module_free(m);
	return rc;
}
