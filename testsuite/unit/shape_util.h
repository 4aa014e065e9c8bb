/* testsuite/unit/shape_util.h: helpers for the IR unit tests: build graphs tersely through the
 * builder API, run shape inference with diagnostics captured, and compare inferred types by
 * their .aig spelling ("f32[B, S, 4096]").  Included by test_shape*.c and test_graph.c. */
#ifndef AICC_TEST_SHAPE_UTIL_H
#define AICC_TEST_SHAPE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ir/diag.h"
#include "ir/ir.h"

static const Loc L0 = { "t.aig", 1, 1 };
static char diag_text[16384];

/* A dim from "4096", "S" or a product "2*S". */
static inline Dim dim_of(Module *m, char *tok)
{
	char *star = strchr(tok, '*');
	if (star) {
		Dim a, b = dim_of(m, star + 1), r;
		*star = 0;
		a = dim_of(m, tok);
		assert_int_equal(dim_mul(m, a, b, &r), 0);
		return r;
	}
	if (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9'))
		return dim_c(strtoll(tok, NULL, 10));
	return dim_sym(m, tok);
}

/* A type from "dt[d0, d1, ...]" where each dim is an integer or a symbol name. */
static inline Type ty(Module *m, const char *spec)
{
	char dt[32];
	const char *lb = strchr(spec, '[');
	size_t k = (size_t)(lb - spec);
	memcpy(dt, spec, k);
	dt[k] = 0;
	Dim d[IR_MAX_RANK];
	int r = 0;
	const char *p = lb + 1;
	while (*p && *p != ']') {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ']')
			break;
		char tok[64];
		size_t n = strcspn(p, ", ]");
		memcpy(tok, p, n);
		tok[n] = 0;
		d[r++] = dim_of(m, tok);
		p += n;
	}
	return ir_type(m, rt_dtype_lookup(dt), r, d);
}

static inline Value *in(Graph *g, const char *name, const char *spec) { return ir_add_input(g, name, ty(g->m, spec), L0); }

/* A constant parameter holding the given numbers (an inline literal) with type spec. */
static inline Value *lit(Graph *g, const char *spec, int n, const double *v)
{
	ParamInit *pi = arena_alloc(g->m->arena, sizeof *pi);
	pi->kind = INIT_LITERAL;
	pi->nlit = n;
	pi->lit = arena_alloc(g->m->arena, (size_t)(n ? n : 1) * sizeof(double));
	memcpy(pi->lit, v, (size_t)n * sizeof(double));
	pi->inline_lit = 1;
	return ir_add_param(g, NULL, ty(g->m, spec), pi, L0);
}

/* A 1-D i64 constant of n elements. */
static inline Value *ints(Graph *g, int n, ...)
{
	double v[64];
	char spec[32];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		v[i] = (double)va_arg(ap, long long);
	va_end(ap);
	snprintf(spec, sizeof spec, "i64[%d]", n);
	return lit(g, spec, n, v);
}

/* A node with nin inputs (Value *, NULL for absent) and nout outputs. */
static inline Node *node(Graph *g, Op op, int nout, int nin, ...)
{
	Value *v[16];
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		v[i] = va_arg(ap, Value *);
	va_end(ap);
	return ir_add_node(g, op, v, nin, NULL, nout, L0);
}

/* Runs shape inference with diagnostics captured in diag_text; returns the error count. */
static inline int infer(Module *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	diag_reset();
	diag_set_max(1000);
	diag_set_output(f);
	int r = ir_infer_shapes(m);
	fclose(f);
	diag_set_output(NULL);
	snprintf(diag_text, sizeof diag_text, "%s", buf ? buf : "");
	free(buf);
	return r;
}

static inline const char *tstr(const Value *v)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	return ir_type_str(v->graph->m, v->type, buf[k], sizeof buf[k]);
}

#define assert_type(v, s) assert_string_equal(tstr(v), s)
/* The diagnostics of the last infer() contain s. */
#define assert_diag(s) do { if (!strstr(diag_text, s)) { print_error("diagnostics lack \"%s\":\n%s", s, diag_text); fail(); } } while (0)

/* One-node graphs: infer and expect success with output 0 of type s. */
#define expect_ok(m, n, s) do { int e_ = infer(m); if (e_) print_error("%s", diag_text); assert_int_equal(e_, 0); assert_type((n)->out[0], s); } while (0)
#define expect_err(m, msg) do { assert_true(infer(m) > 0); assert_diag(msg); } while (0)

#endif
