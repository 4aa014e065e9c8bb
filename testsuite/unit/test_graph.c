/* testsuite/unit/test_graph.c: graph mutation through the builder (insert, remove, replace
 * uses, nuses bookkeeping, attributes), the operator table, and ir_topo_sort (stability and
 * cycle detection). */
#include "shape_util.h"

static void test_build_and_uses(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *g = ir_graph_new(m, "main", L0);
	Value *x = in(g, "x", "f32[4]");
	Node *a = node(g, OP_Relu, 1, 1, x);
	Node *b = node(g, OP_Add, 1, 2, a->out[0], x);
	ir_add_output(g, b->out[0]);
	assert_int_equal(x->nuses, 2);
	assert_int_equal(a->out[0]->nuses, 1);
	assert_int_equal(b->out[0]->nuses, 1);
	assert_int_equal(g->nnodes, 2);
	assert_ptr_equal(g->first, a);
	assert_ptr_equal(g->last, b);
	assert_ptr_equal(a->out[0]->def, a);
	assert_int_equal(b->out[0]->defidx, 0);
	ir_replace_uses(g, a->out[0], x);
	assert_int_equal(a->out[0]->nuses, 0);
	assert_int_equal(x->nuses, 3);
	ir_remove_node(g, a);
	assert_true(a->dead);
	assert_int_equal(g->nnodes, 1);
	assert_ptr_equal(g->first, b);
	assert_int_equal(x->nuses, 2);
	ir_remove_node(g, a);                       /* removing twice is harmless */
	assert_int_equal(g->nnodes, 1);
	ir_replace_uses(g, b->out[0], x);         /* graph outputs too */
	assert_ptr_equal(g->outputs[0], x);
	assert_int_equal(b->out[0]->nuses, 0);
	assert_int_equal(x->nuses, 3);
	ir_module_free(m);
}

static void test_insert_and_set_input(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *g = ir_graph_new(m, "main", L0);
	Value *x = in(g, "x", "f32[4]"), *y = in(g, "y", "f32[4]");
	Node *b = node(g, OP_Neg, 1, 1, x);
	Node *a = ir_insert_node(g, b, OP_Abs, &y, 1, NULL, 1, L0);
	assert_ptr_equal(g->first, a);
	assert_ptr_equal(a->next, b);
	assert_ptr_equal(b->prev, a);
	ir_set_input(b, 0, a->out[0]);
	assert_int_equal(x->nuses, 0);
	assert_int_equal(a->out[0]->nuses, 1);
	ir_set_input(b, 0, NULL);
	assert_int_equal(a->out[0]->nuses, 0);
	assert_string_not_equal(ir_fresh_name(g, "t"), ir_fresh_name(g, "t"));
	ir_module_free(m);
}

static void test_attrs(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *g = ir_graph_new(m, "main", L0);
	Node *n = node(g, OP_Softmax, 1, 1, in(g, "x", "f32[4]"));
	ir_set_attr_int(n, "axis", 0);
	ir_set_attr_int(n, "axis", -1);            /* replaces */
	ir_set_attr_str(n, "mode", "x");
	int64_t v[] = { 1, 2, 3 };
	ir_set_attr_ints(n, "perm", v, 3);
	v[0] = 9;                                 /* copied, not aliased */
	int k;
	assert_int_equal(n->attrs.n, 3);
	assert_int_equal(rt_attr_int(&n->attrs, "axis", 5), -1);
	assert_int_equal(rt_attr_ints(&n->attrs, "perm", &k)[0], 1);
	assert_int_equal(k, 3);
	assert_string_equal(rt_attr_str(&n->attrs, "mode", ""), "x");
	assert_int_equal(rt_attr_int(&n->attrs, "missing", 7), 7);
	ir_module_free(m);
}

static void test_ops_table(void **st)
{
	for (int i = 0; i < OP_COUNT; i++) {
		assert_non_null(ir_ops[i].name);
		assert_non_null(ir_ops[i].shape);
		assert_non_null(ir_ops[i].flops);
		assert_true(ir_ops[i].in_min >= 0);
		assert_true(ir_ops[i].in_max < 0 || ir_ops[i].in_max >= ir_ops[i].in_min);
		assert_int_equal(ir_op_lookup(ir_ops[i].name), i);
		/* the class and lookup columns: tensor-core work is matrix class, a lookup names an
		 * input that exists */
		if (ir_ops[i].flags & F_MATMUL)
			assert_int_equal(ir_ops[i].cls, OC_matrix);
		if (ir_ops[i].lookup && ir_ops[i].in_max >= 0)
			assert_true(ir_ops[i].lookup < 1u << ir_ops[i].in_max);
		if (ir_ops[i].lookup)
			assert_int_not_equal(ir_ops[i].cls, OC_matrix);
	}
	assert_true(ir_op_is_lookup(OP_Gather, 0) && !ir_op_is_lookup(OP_Gather, 1));
	assert_true(ir_op_is_lookup(OP_GatherElements, 0) && ir_op_is_lookup(OP_Embedding, 0));
	assert_true(ir_op_is_lookup(OP_RotaryEmbedding, 1) && ir_op_is_lookup(OP_RotaryEmbedding, 2));
	assert_int_equal(ir_ops[OP_Attention].cls, OC_matrix);
	assert_int_equal(ir_ops[OP_Transpose].cls, OC_move);
	assert_int_equal(ir_ops[OP_Softmax].cls, OC_vector);
	assert_int_equal(ir_op_lookup("Nope"), OP_COUNT);
	assert_string_equal(ir_op_suggest("Matmul"), "MatMul");
}

/* Names of the node list in order, "a b c". */
static const char *order(Graph *g)
{
	static char buf[256];
	buf[0] = 0;
	ir_foreach_node(g, n)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", buf[0] ? " " : "", n->out[0]->name);
	return buf;
}

static Node *named(Graph *g, Node *before, Op op, const char *name, int nin, Value **in)
{
	return ir_insert_node(g, before, op, in, nin, &name, 1, L0);
}

static void test_topo(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *g = ir_graph_new(m, "main", L0);
	Value *x = in(g, "x", "f32[4]");
	Node *a = named(g, NULL, OP_Relu, "a", 1, &x);
	Node *c = named(g, NULL, OP_Relu, "c", 1, &x);
	Node *d = named(g, NULL, OP_Neg, "d", 1, a->out);
	assert_int_equal(ir_topo_sort(g), 0);
	assert_string_equal(order(g), "a c d");       /* already ordered: unchanged */
	Value *ab[2] = { a->out[0], d->out[0] };
	named(g, a, OP_Add, "b", 2, ab);           /* inserted too early */
	assert_string_equal(order(g), "b a c d");
	assert_int_equal(ir_topo_sort(g), 0);
	assert_string_equal(order(g), "a c d b");
	assert_ptr_equal(g->first, a);
	assert_null(g->first->prev);
	assert_null(g->last->next);
	(void)c;
	ir_module_free(m);
}

static void test_topo_cycle(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *g = ir_graph_new(m, "main", L0);
	Value *x = in(g, "x", "f32[4]");
	Node *a = named(g, NULL, OP_Relu, "a", 1, &x);
	Node *b = named(g, NULL, OP_Neg, "b", 1, a->out);
	named(g, NULL, OP_Abs, "c", 1, &x);
	ir_set_input(a, 0, b->out[0]);              /* a <- b <- a */
	assert_int_equal(ir_topo_sort(g), -1);
	assert_string_equal(order(g), "a b c");       /* left unchanged */
	ir_module_free(m);
}

static void test_topo_dead_and_empty(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *g = ir_graph_new(m, "main", L0);
	assert_int_equal(ir_topo_sort(g), 0);
	Value *x = in(g, "x", "f32[4]");
	Node *a = named(g, NULL, OP_Relu, "a", 1, &x);
	Node *b = named(g, NULL, OP_Neg, "b", 1, a->out);
	ir_set_input(b, 0, x);
	ir_remove_node(g, a);
	assert_int_equal(ir_topo_sort(g), 0);
	assert_string_equal(order(g), "b");
	ir_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_and_uses), cmocka_unit_test(test_insert_and_set_input),
		cmocka_unit_test(test_attrs), cmocka_unit_test(test_ops_table), cmocka_unit_test(test_topo),
		cmocka_unit_test(test_topo_cycle), cmocka_unit_test(test_topo_dead_and_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
