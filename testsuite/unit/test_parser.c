/* testsuite/unit/test_parser.c: the .aig reader, printer and verifier through their C API:
 * parsing from memory (NUL bytes included), printing round trips, and the verifier on modules
 * built directly with the builder, as an importer or a pass would build them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "frontend/frontend.h"
#include "ir/diag.h"

static FILE *sink;

static int setup(void **state)
{
	(void)state;
	sink = tmpfile();
	diag_set_output(sink);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	diag_set_output(NULL);
	fclose(sink);
	return 0;
}

/* Prints m into a malloc'd string. */
static char *print_str(const Module *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ir_print_module(m, f);
	fclose(f);
	return buf;
}

static void test_parse_and_roundtrip(void **state)
{
	(void)state;
	const char *src = "dim D = 2*4\ngraph g(x: f32[S, D]) -> (y: f32[S, D]) {\n"
			  "  y = Reshape(x, [0, -1.5e-3])\n}\n";
	diag_reset();
	Module *m = fe_parse_aig_text("t.aig", src, strlen(src));
	assert_non_null(m);
	assert_int_equal(ir_verify(m), 0);
	char *p1 = print_str(m);
	assert_string_equal(p1, "graph g(x: f32[S, 8]) -> (y: f32[S, 8]) {\n"
				"  y = Reshape(x, [0.0, -0.0015])\n}\n");
	Module *m2 = fe_parse_aig_text("t2.aig", p1, strlen(p1));
	assert_non_null(m2);
	char *p2 = print_str(m2);
	assert_string_equal(p1, p2);
	free(p1);
	free(p2);
	ir_module_free(m);
	ir_module_free(m2);
	diag_reset();
}

/* `dim` overrides: a constant's value is replaced before substitution (dependent dims, attribute
 * values and list entries follow), the last override of a name wins, and overrides of names the
 * module does not define with `dim` are left unused for the caller to bind as symbols. */
static void test_dim_overrides(void **state)
{
	(void)state;
	const char *src = "dim H = 4\ndim D = 2 * H\ngraph g(x: f32[S, D]) -> (y: f32[S, H, 2]) {\n"
			  "  y = Reshape(x, [0, H, (D/H)]) {k=H}\n}\n";
	FeBind over[] = { { "H", 8, 0 }, { "S", 3, 0 }, { "H", 3, 0 } };
	diag_reset();
	Module *m = fe_parse_aig_text_opts("o.aig", src, strlen(src), over, 3);
	assert_non_null(m);
	assert_true(over[0].used && over[2].used);
	assert_false(over[1].used);
	char *p = print_str(m);
	assert_string_equal(p, "graph g(x: f32[S, 6]) -> (y: f32[S, 3, 2]) {\n"
			       "  y = Reshape(x, [0, 3, 2]) {k=3}\n}\n");
	free(p);
	ir_module_free(m);
	diag_reset();
}

static void test_nul_bytes_and_errors(void **state)
{
	(void)state;
	const char src[] = "graph g(x: f32[4]) -> (x) {\n  y = Relu(\0x)\n}\n";
	diag_reset();
	assert_null(fe_parse_aig_text("nul.aig", src, sizeof src - 1));
	assert_int_equal(diag_count(), 1);
	assert_null(fe_parse_aig_text("empty.aig", "", 0));
	assert_int_equal(diag_count(), 2);
	diag_reset();
}

/* A graph name(x) -> y with one node `op` taking x nin times, built with the builder. */
static Graph *one_node(Module *m, const char *name, Op op, int nin, Node **out)
{
	Loc loc = { "built", 1, 1 };
	Dim d = dim_c(4);
	Graph *g = ir_graph_new(m, name, loc);
	Value *x = ir_add_input(g, "x", ir_type(m, DT_F32, 1, &d), loc);
	Value *in[3] = { x, x, x };
	const char *outn[] = { "y" };
	Node *n = ir_add_node(g, op, in, nin, outn, 1, loc);
	ir_add_output(g, n->out[0]);
	if (out)
		*out = n;
	return g;
}

static void test_verify_arity(void **state)
{
	(void)state;
	diag_reset();
	Module *m = ir_module_new("built");
	one_node(m, "ok", OP_Add, 2, NULL);
	assert_int_equal(ir_verify(m), 0);
	one_node(m, "bad_arity", OP_Add, 3, NULL);
	assert_int_equal(ir_verify(m), 1);
	ir_module_free(m);
	diag_reset();
}

static void test_verify_calls(void **state)
{
	(void)state;
	diag_reset();
	Module *m = ir_module_new("built");
	Node *a, *b;
	Graph *ga = one_node(m, "a", OP_Call, 1, &a);
	Graph *gb = one_node(m, "b", OP_Call, 1, &b);
	a->callee = gb;
	b->callee = ga;
	assert_int_equal(ir_verify(m), 1);   /* a -> b -> a */
	b->callee = NULL;
	assert_int_equal(ir_verify(m), 1);   /* a call without a callee */
	ir_module_free(m);
	diag_reset();
}

static void test_verify_order(void **state)
{
	(void)state;
	diag_reset();
	Module *m = ir_module_new("built");
	Node *n;
	Graph *g = one_node(m, "g", OP_Relu, 1, &n);
	Loc loc = { "built", 2, 1 };
	const char *outn[] = { "y" };
	Value *in[1] = { n->out[0] };
	/* uses y before its definition, and a second value named y */
	ir_insert_node(g, n, OP_Neg, in, 1, outn, 1, loc);
	assert_int_equal(ir_verify(m), 2);
	ir_module_free(m);
	diag_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_roundtrip),
		cmocka_unit_test(test_dim_overrides),
		cmocka_unit_test(test_nul_bytes_and_errors),
		cmocka_unit_test(test_verify_arity),
		cmocka_unit_test(test_verify_calls),
		cmocka_unit_test(test_verify_order),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
