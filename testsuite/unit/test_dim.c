/* testsuite/unit/test_dim.c: symbolic dimensions (ir/dim.c): interning, arithmetic, division,
 * substitution of bound symbols, printing and overflow. */
#include "shape_util.h"

static char *s(Module *m, Dim d)
{
	static char buf[4][128];
	static int k;
	k = (k + 1) % 4;
	return dim_str(m, d, buf[k], sizeof buf[k]);
}

static void test_interning(void **st)
{
	Module *m = ir_module_new(NULL);
	Dim a = dim_sym(m, "S"), b = dim_sym(m, "S"), c = dim_sym(m, "B"), x, y;
	assert_true(dim_eq(a, b));
	assert_false(dim_eq(a, c));
	assert_int_equal(dim_add(m, a, c, &x), 0);
	assert_int_equal(dim_add(m, c, a, &y), 0);
	assert_true(dim_eq(x, y));              /* B+S == S+B: same pointer */
	assert_ptr_equal(x.p, y.p);
	assert_true(dim_eq(dim_c(3), dim_c(3)));
	assert_false(dim_eq(dim_c(3), dim_c(4)));
	assert_true(dim_isconst(dim_c(0)));
	assert_false(dim_isconst(a));
	ir_module_free(m);
}

static void test_arith(void **st)
{
	Module *m = ir_module_new(NULL);
	Dim S = dim_sym(m, "S"), B = dim_sym(m, "B"), r, t;
	assert_int_equal(dim_add(m, S, dim_c(1), &r), 0);
	assert_string_equal(s(m, r), "S+1");
	assert_int_equal(dim_sub(m, r, dim_c(1), &t), 0);
	assert_true(dim_eq(t, S));
	assert_int_equal(dim_sub(m, S, S, &t), 0);
	assert_true(dim_isconst(t) && t.k == 0);  /* cancels to a constant */
	assert_int_equal(dim_mul(m, S, B, &r), 0);
	assert_int_equal(dim_mul(m, r, dim_c(2), &r), 0);
	assert_string_equal(s(m, r), "2*S*B");
	assert_int_equal(dim_mul(m, S, dim_c(0), &t), 0);
	assert_true(dim_eq(t, dim_c(0)));
	assert_int_equal(dim_sub(m, dim_c(0), S, &t), 0);
	assert_string_equal(s(m, t), "-S");
	assert_int_equal(dim_add(m, dim_c(2), dim_c(5), &t), 0);
	assert_int_equal(t.k, 7);
	ir_module_free(m);
}

static void test_div(void **st)
{
	Module *m = ir_module_new(NULL);
	Dim S = dim_sym(m, "S"), B = dim_sym(m, "B"), bs, q;
	assert_int_equal(dim_mul(m, B, S, &bs), 0);
	assert_int_equal(dim_mul(m, bs, dim_c(4096), &bs), 0);
	assert_int_equal(dim_div(m, bs, dim_c(64), &q), 0);
	assert_string_equal(s(m, q), "64*S*B");
	assert_int_equal(dim_div(m, bs, B, &q), 0);
	assert_string_equal(s(m, q), "4096*S");
	assert_int_equal(dim_div(m, S, S, &q), 0);
	assert_true(dim_eq(q, dim_c(1)));
	assert_int_equal(dim_div(m, bs, dim_c(3), &q), -1);     /* 4096 not divisible by 3 */
	assert_int_equal(dim_div(m, S, B, &q), -1);
	assert_int_equal(dim_div(m, S, dim_c(0), &q), -1);
	assert_int_equal(dim_div(m, dim_c(12), dim_c(4), &q), 0);
	assert_int_equal(q.k, 3);
	assert_int_equal(dim_div(m, dim_c(12), dim_c(5), &q), -1);
	Dim s1, s2;   /* (2S+2) / (S+1) = 2 */
	assert_int_equal(dim_add(m, S, dim_c(1), &s1), 0);
	assert_int_equal(dim_mul(m, s1, dim_c(2), &s2), 0);
	assert_int_equal(dim_div(m, s2, s1, &q), 0);
	assert_true(dim_eq(q, dim_c(2)));
	ir_module_free(m);
}

static void test_subst(void **st)
{
	Module *m = ir_module_new(NULL);
	Dim S = dim_sym(m, "S"), B = dim_sym(m, "B"), e, r;
	assert_int_equal(dim_mul(m, S, B, &e), 0);
	assert_int_equal(dim_add(m, e, dim_c(3), &e), 0);
	assert_int_equal(ir_bind(m, "S", 10), 0);
	assert_int_equal(dim_subst(m, e, &r), 0);
	assert_string_equal(s(m, r), "10*B+3");
	assert_int_equal(ir_bind(m, "B", 2), 0);
	assert_int_equal(dim_subst(m, e, &r), 0);
	assert_true(dim_isconst(r) && r.k == 23);
	assert_int_equal(ir_bind(m, "B", -1), -1);
	assert_int_equal(dim_subst(m, dim_c(5), &r), 0);
	assert_int_equal(r.k, 5);
	ir_module_free(m);
}

static void test_overflow(void **st)
{
	Module *m = ir_module_new(NULL);
	Dim r = dim_c(7), S = dim_sym(m, "S");
	assert_int_equal(dim_mul(m, dim_c(INT64_MAX / 2 + 1), dim_c(2), &r), -1);
	assert_int_equal(r.k, 7);                      /* unchanged on failure */
	assert_int_equal(dim_add(m, dim_c(INT64_MAX), dim_c(1), &r), -1);
	assert_int_equal(dim_sub(m, dim_c(INT64_MIN), dim_c(1), &r), -1);
	Dim big;
	assert_int_equal(dim_mul(m, S, dim_c(INT64_MAX), &big), 0);
	assert_int_equal(dim_mul(m, big, dim_c(2), &r), -1);
	assert_int_equal(ir_bind(m, "S", 3), 0);
	assert_int_equal(dim_subst(m, big, &r), -1);
	ir_module_free(m);
}

static void test_degree_limit(void **st)
{
	Module *m = ir_module_new(NULL);
	Dim a = dim_sym(m, "A"), r = a;
	for (int i = 0; i < 3; i++)
		assert_int_equal(dim_mul(m, r, a, &r), 0);
	assert_int_equal(dim_mul(m, r, a, &r), -1);     /* degree 5 > DIM_MAXDEG */
	ir_module_free(m);
}

static void test_types(void **st)
{
	Module *m = ir_module_new(NULL);
	char buf[64];
	Type t = ty(m, "bf16[B, 2*S, 4096]"), u = ty(m, "bf16[B, 2*S, 4096]"), v = ty(m, "f32[B, 2*S, 4096]");
	assert_string_equal(ir_type_str(m, t, buf, sizeof buf), "bf16[B, 2*S, 4096]");
	assert_true(ir_type_eq(t, u));
	assert_false(ir_type_eq(t, v));
	assert_int_equal(ir_type_numel(t), -1);
	assert_int_equal(ir_type_numel(ty(m, "f32[3, 0, 5]")), 0);
	assert_int_equal(ir_type_numel(ty(m, "f32[]")), 1);
	assert_int_equal(ir_type_numel(ty(m, "f32[4294967296, 4294967296]")), -1);
	assert_string_equal(ir_type_str(m, ty(m, "i64[]"), buf, sizeof buf), "i64[]");
	ir_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interning), cmocka_unit_test(test_arith), cmocka_unit_test(test_div),
		cmocka_unit_test(test_subst), cmocka_unit_test(test_overflow), cmocka_unit_test(test_degree_limit),
		cmocka_unit_test(test_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
