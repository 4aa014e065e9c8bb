/* testsuite/unit/test_shape.c: shape inference of elementwise, reduction and data-movement
 * operators built through the builder API: broadcasting edge cases, symbolic and zero-size
 * dims, negative axes, Reshape 0/-1/allowzero, known shape values, and the errors. */
#include "shape_util.h"

#define BEGIN Module *m = ir_module_new("t.aig"); Graph *g = ir_graph_new(m, "main", L0); (void)g
#define END ir_module_free(m)

static void test_unary(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Relu, 1, 1, in(g, "x", "bf16[B, 0, 7]"));
	expect_ok(m, n, "bf16[B, 0, 7]");
	END;
}

static void test_unary_float_only(void **st)
{
	BEGIN;
	node(g, OP_Exp, 1, 1, in(g, "x", "i32[4]"));
	expect_err(m, "Exp: X must have a floating-point type, got i32[4]");
	END;
}

static void test_gelu_attr(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Gelu, 1, 1, in(g, "x", "f32[2]"));
	ir_set_attr_str(n, "approximate", "tanh");
	expect_ok(m, n, "f32[2]");
	ir_set_attr_str(n, "approximate", "fast");
	expect_err(m, "Gelu: attribute approximate must be \"none\" or \"tanh\", got \"fast\"");
	END;
}

static void test_not_bool(void **st)
{
	BEGIN;
	node(g, OP_Not, 1, 1, in(g, "x", "f32[2]"));
	expect_err(m, "Not: X must be bool");
	END;
}

static void test_broadcast(void **st)
{
	BEGIN;
	Value *a = in(g, "a", "f32[B, 1, 4096]"), *b = in(g, "b", "f32[S, 1]");
	Node *n = node(g, OP_Add, 1, 2, a, b);
	Node *n2 = node(g, OP_Mul, 1, 2, in(g, "s", "f32[]"), a);
	Node *n3 = node(g, OP_Sub, 1, 2, in(g, "z", "f32[0, 1]"), in(g, "w", "f32[1, 5]"));
	Node *n4 = node(g, OP_Div, 1, 2, in(g, "z2", "f32[0]"), in(g, "w2", "f32[1]"));
	expect_ok(m, n, "f32[B, S, 4096]");
	assert_type(n2->out[0], "f32[B, 1, 4096]");
	assert_type(n3->out[0], "f32[0, 5]");
	assert_type(n4->out[0], "f32[0]");
	END;
}

static void test_broadcast_errors(void **st)
{
	BEGIN;
	node(g, OP_Add, 1, 2, in(g, "a", "f32[3, 4]"), in(g, "b", "f32[5]"));
	expect_err(m, "Add: cannot broadcast A f32[3, 4] with B f32[5]: dimension 4 vs 5");
	END;
}

static void test_broadcast_symbolic_mismatch(void **st)
{
	BEGIN;
	node(g, OP_Add, 1, 2, in(g, "a", "f32[S]"), in(g, "b", "f32[B]"));
	expect_err(m, "dimension S vs B");
	END;
}

static void test_broadcast_zero_mismatch(void **st)
{
	BEGIN;
	node(g, OP_Add, 1, 2, in(g, "a", "f32[0]"), in(g, "b", "f32[3]"));
	expect_err(m, "dimension 0 vs 3");
	END;
}

static void test_binary_dtype(void **st)
{
	BEGIN;
	node(g, OP_Add, 1, 2, in(g, "a", "f32[2]"), in(g, "b", "bf16[2]"));
	expect_err(m, "Add: A and B must have the same dtype: A is f32[2], B is bf16[2]");
	END;
}

static void test_pow_mixed(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Pow, 1, 2, in(g, "a", "f32[2, 3]"), in(g, "b", "i64[]"));
	expect_ok(m, n, "f32[2, 3]");
	END;
}

static void test_compare_logical_where(void **st)
{
	BEGIN;
	Node *c = node(g, OP_Less, 1, 2, in(g, "a", "f32[4, 1]"), in(g, "b", "f32[3]"));
	Node *l = node(g, OP_And, 1, 2, c->out[0], in(g, "k", "bool[1, 3]"));
	Node *w = node(g, OP_Where, 1, 3, l->out[0], in(g, "x", "f16[2, 1, 1]"), in(g, "y", "f16[3]"));
	expect_ok(m, w, "f16[2, 4, 3]");
	assert_type(c->out[0], "bool[4, 3]");
	assert_type(l->out[0], "bool[4, 3]");
	END;
}

static void test_where_errors(void **st)
{
	BEGIN;
	node(g, OP_Where, 1, 3, in(g, "c", "f32[2]"), in(g, "x", "f32[2]"), in(g, "y", "f32[2]"));
	expect_err(m, "Where: condition must be bool");
	END;
}

static void test_variadic(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Max, 1, 3, in(g, "a", "f32[3, 1]"), in(g, "b", "f32[1, 4]"), in(g, "c", "f32[4]"));
	Node *s = node(g, OP_Sum, 1, 1, in(g, "d", "f32[7]"));
	expect_ok(m, n, "f32[3, 4]");
	assert_type(s->out[0], "f32[7]");
	node(g, OP_Mean, 1, 2, in(g, "e", "f32[2]"), in(g, "f", "i32[2]"));
	expect_err(m, "Mean: all inputs must have the same dtype");
	END;
}

static void test_clip(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Clip, 1, 3, in(g, "x", "f32[2, 2]"), NULL, in(g, "hi", "f32[]"));
	expect_ok(m, n, "f32[2, 2]");
	node(g, OP_Clip, 1, 2, in(g, "y", "f32[2]"), in(g, "lo", "f32[2]"));
	expect_err(m, "Clip: min must be a scalar, got f32[2]");
	END;
}

static void test_cast(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, 8]");
	Node *a = node(g, OP_Cast, 1, 1, x);
	Node *b = node(g, OP_Cast, 1, 1, x);
	Node *c = node(g, OP_CastLike, 1, 2, x, in(g, "t", "i8[]"));
	ir_set_attr_str(a, "to", "bf16");
	ir_set_attr_int(b, "to", 7);    /* ONNX INT64 */
	expect_ok(m, a, "bf16[B, 8]");
	assert_type(b->out[0], "i64[B, 8]");
	assert_type(c->out[0], "i8[B, 8]");
	ir_set_attr_str(b, "to", "f7");
	expect_err(m, "Cast: attribute to: unknown dtype 'f7'");
	ir_set_attr_int(b, "to", 8);    /* ONNX STRING */
	expect_err(m, "unsupported ONNX data type 8");
	END;
}

static void test_cast_missing_to(void **st)
{
	BEGIN;
	node(g, OP_Cast, 1, 1, in(g, "x", "f32[1]"));
	expect_err(m, "Cast: attribute to (the target dtype) is required");
	END;
}

static void test_dropout(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Dropout, 2, 1, in(g, "x", "f32[3, S]"));
	expect_ok(m, n, "f32[3, S]");
	assert_type(n->out[1], "bool[3, S]");
	END;
}

static void test_arity(void **st)
{
	BEGIN;
	node(g, OP_Add, 1, 1, in(g, "a", "f32[1]"));
	node(g, OP_Relu, 2, 1, in(g, "b", "f32[1]"));
	node(g, OP_Clip, 1, 4, in(g, "c", "f32[1]"), NULL, NULL, NULL);
	node(g, OP_Sum, 1, 0);
	assert_int_equal(infer(m), 4);
	assert_diag("Add: expected 2 inputs, got 1");
	assert_diag("Relu: expected 1 outputs, got 2");
	assert_diag("Clip: expected 1 to 3 inputs, got 4");
	assert_diag("Sum: expected at least 1 inputs, got 0");
	END;
}

static void test_required_input_absent(void **st)
{
	BEGIN;
	node(g, OP_MatMul, 1, 2, in(g, "a", "f32[2, 2]"), NULL);
	expect_err(m, "MatMul: input 1 is required but absent");
	END;
}

static void test_error_no_cascade(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Add, 1, 2, in(g, "a", "f32[3]"), in(g, "b", "f32[4]"));
	node(g, OP_Relu, 1, 1, a->out[0]);
	assert_int_equal(infer(m), 1);
	END;
}

static void test_reduce(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, S, 64]");
	Node *a = node(g, OP_ReduceSum, 1, 2, x, ints(g, 1, -1LL));
	Node *b = node(g, OP_ReduceMean, 1, 2, x, ints(g, 2, 0LL, 2LL));
	Node *c = node(g, OP_ReduceMax, 1, 1, x);
	Node *d = node(g, OP_ReduceL2, 1, 1, x);
	Node *e = node(g, OP_ReduceProd, 1, 2, x, ints(g, 0));
	ir_set_attr_int(b, "keepdims", 0);
	ir_set_attr_int(c, "keepdims", 0);
	int64_t ax[] = { 1 };
	ir_set_attr_ints(d, "axes", ax, 1);
	ir_set_attr_int(e, "noop_with_empty_axes", 1);
	expect_ok(m, a, "f32[B, S, 1]");
	assert_type(b->out[0], "f32[S]");
	assert_type(c->out[0], "f32[]");
	assert_type(d->out[0], "f32[B, 1, 64]");
	assert_type(e->out[0], "f32[B, S, 64]");
	END;
}

static void test_reduce_errors(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[2, 3]");
	node(g, OP_ReduceSum, 1, 2, x, ints(g, 1, 2LL));
	node(g, OP_ReduceSum, 1, 2, x, ints(g, 2, 1LL, -1LL));
	node(g, OP_ReduceSum, 1, 2, x, in(g, "dyn", "i64[1]"));
	assert_int_equal(infer(m), 3);
	assert_diag("ReduceSum: axis 2 is out of range for rank 2 (expected -2..1)");
	assert_diag("ReduceSum: axis -1 is repeated in axes");
	assert_diag("axes ('dyn') must be known at compile time");
	END;
}

static void test_argmax_softmax(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[4, V]");
	Node *a = node(g, OP_ArgMax, 1, 1, x);
	Node *s = node(g, OP_Softmax, 1, 1, x);
	Node *l = node(g, OP_LogSoftmax, 1, 1, x);
	ir_set_attr_int(a, "axis", -1);
	ir_set_attr_int(a, "keepdims", 0);
	ir_set_attr_int(l, "axis", -2);
	expect_ok(m, a, "i64[4]");
	assert_type(s->out[0], "f32[4, V]");
	assert_type(l->out[0], "f32[4, V]");
	ir_set_attr_int(s, "axis", 2);
	expect_err(m, "Softmax: axis 2 is out of range for rank 2 (expected -2..1)");
	END;
}

static void test_topk(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[T, 64]");
	Node *t = node(g, OP_TopK, 2, 2, x, ints(g, 1, 8LL));
	expect_ok(m, t, "f32[T, 8]");
	assert_type(t->out[1], "i64[T, 8]");
	node(g, OP_TopK, 2, 2, x, ints(g, 1, 65LL));
	expect_err(m, "TopK: K = 65 is outside 0..64");
	END;
}

static void test_cumsum(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[3, 4]");
	Node *c = node(g, OP_CumSum, 1, 2, x, lit(g, "i64[]", 1, (double[]){ -1 }));
	expect_ok(m, c, "f32[3, 4]");
	node(g, OP_CumSum, 1, 2, x, lit(g, "i32[]", 1, (double[]){ 2 }));
	expect_err(m, "CumSum: axis 2 is out of range");
	END;
}

/* ---- Reshape ---- */
static void test_reshape(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[2, 3, 4]");
	Node *a = node(g, OP_Reshape, 1, 2, x, ints(g, 2, 0LL, -1LL));
	Node *b = node(g, OP_Reshape, 1, 2, x, ints(g, 3, 4LL, 3LL, 2LL));
	Node *c = node(g, OP_Reshape, 1, 2, x, ints(g, 1, -1LL));
	Node *d = node(g, OP_Reshape, 1, 2, in(g, "s", "f32[1, 1]"), ints(g, 0));
	expect_ok(m, a, "f32[2, 12]");
	assert_type(b->out[0], "f32[4, 3, 2]");
	assert_type(c->out[0], "f32[24]");
	assert_type(d->out[0], "f32[]");
	END;
}

static void test_reshape_symbolic(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "bf16[B, S, 4096]");
	Node *a = node(g, OP_Reshape, 1, 2, x, ints(g, 4, 0LL, 0LL, 32LL, -1LL));
	Node *b = node(g, OP_Reshape, 1, 2, x, ints(g, 2, -1LL, 4096LL));
	Node *c = node(g, OP_Reshape, 1, 2, b->out[0], ints(g, 3, 0LL, 64LL, -1LL));
	expect_ok(m, a, "bf16[B, S, 32, 128]");
	assert_type(b->out[0], "bf16[B*S, 4096]");
	assert_type(c->out[0], "bf16[B*S, 64, 64]");
	END;
}

static void test_reshape_allowzero(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[0, 3]");
	Node *a = node(g, OP_Reshape, 1, 2, x, ints(g, 2, 3LL, 0LL));
	Node *b = node(g, OP_Reshape, 1, 2, x, ints(g, 2, 0LL, 3LL));
	ir_set_attr_int(a, "allowzero", 1);
	expect_ok(m, a, "f32[3, 0]");
	assert_type(b->out[0], "f32[0, 3]");
	Node *c = node(g, OP_Reshape, 1, 2, x, ints(g, 2, 0LL, -1LL));
	ir_set_attr_int(c, "allowzero", 1);
	expect_err(m, "Reshape: shape has both 0 and -1 while allowzero=1");
	END;
}

static void test_reshape_errors(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[2, 3, 4]");
	node(g, OP_Reshape, 1, 2, x, ints(g, 2, 5LL, -1LL));
	node(g, OP_Reshape, 1, 2, x, ints(g, 2, -1LL, -1LL));
	node(g, OP_Reshape, 1, 2, x, ints(g, 2, 5LL, 5LL));
	node(g, OP_Reshape, 1, 2, x, ints(g, 2, -2LL, 12LL));
	node(g, OP_Reshape, 1, 2, x, ints(g, 4, 0LL, 0LL, 0LL, 0LL));
	node(g, OP_Reshape, 1, 2, in(g, "z", "f32[0, 3]"), ints(g, 2, 0LL, -1LL));
	node(g, OP_Reshape, 1, 2, in(g, "y", "f32[B, 6]"), ints(g, 2, 4LL, -1LL));
	assert_int_equal(infer(m), 7);
	assert_diag("Reshape: cannot infer the -1 entry: 24 elements of f32[2, 3, 4] are not divisible by 5");
	assert_diag("shape has more than one -1 (entries 0 and 1)");
	assert_diag("cannot reshape f32[2, 3, 4] (24 elements) to f32[5, 5] (25 elements)");
	assert_diag("shape entry 0 is -2; entries must be >= -1");
	assert_diag("shape entry 3 is 0 (copy) but the input f32[2, 3, 4] has rank 3");
	assert_diag("cannot infer the -1 entry: the other entries multiply to 0");
	assert_diag("6*B elements of f32[B, 6] are not divisible by 4");
	END;
}

static void test_reshape_from_shape(void **st)
{
	BEGIN;
	/* Reshape(x, Concat(Slice(Shape(x), [0], [2]), [-1])): the ONNX export pattern. */
	Value *x = in(g, "x", "f32[B, S, 8, 64]");
	Node *sh = node(g, OP_Shape, 1, 1, x);
	Node *sl = node(g, OP_Slice, 1, 3, sh->out[0], ints(g, 1, 0LL), ints(g, 1, 2LL));
	Node *cc = node(g, OP_Concat, 1, 2, sl->out[0], ints(g, 1, -1LL));
	ir_set_attr_int(cc, "axis", 0);
	Node *r = node(g, OP_Reshape, 1, 2, x, cc->out[0]);
	Node *ga = node(g, OP_Gather, 1, 2, sh->out[0], lit(g, "i64[]", 1, (double[]){ 1 }));
	Node *mu = node(g, OP_Mul, 1, 2, ga->out[0], lit(g, "i64[]", 1, (double[]){ 2 }));
	Node *un = node(g, OP_Unsqueeze, 1, 2, mu->out[0], ints(g, 1, 0LL));
	Node *co = node(g, OP_ConstantOfShape, 1, 1, un->out[0]);
	expect_ok(m, r, "f32[B, S, 512]");
	assert_type(sh->out[0], "i64[4]");
	assert_type(sl->out[0], "i64[2]");
	assert_type(ga->out[0], "i64[]");
	assert_type(co->out[0], "f32[2*S]");
	END;
}

static void test_reshape_shape_not_known(void **st)
{
	BEGIN;
	node(g, OP_Reshape, 1, 2, in(g, "x", "f32[4]"), in(g, "s", "i64[2]"));
	node(g, OP_Reshape, 1, 2, in(g, "y", "f32[4]"), in(g, "t", "f32[2]"));
	assert_int_equal(infer(m), 2);
	assert_diag("Reshape: shape ('s') must be known at compile time");
	assert_diag("Reshape: shape must be an integer scalar or 1-D tensor, got f32[2]");
	END;
}

/* ---- other data movement ---- */
static void test_transpose(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, S, H, D]");
	Node *a = node(g, OP_Transpose, 1, 1, x);
	Node *b = node(g, OP_Transpose, 1, 1, x);
	int64_t p[] = { 0, 2, 1, 3 }, bad[] = { 0, 1, 1, 3 };
	ir_set_attr_ints(b, "perm", p, 4);
	expect_ok(m, a, "f32[D, H, S, B]");
	assert_type(b->out[0], "f32[B, H, S, D]");
	ir_set_attr_ints(b, "perm", bad, 4);
	expect_err(m, "Transpose: perm is not a permutation: axis 1 appears twice");
	ir_set_attr_ints(b, "perm", p, 3);
	expect_err(m, "perm has 3 entries but the input f32[B, S, H, D] has rank 4");
	END;
}

static void test_concat(void **st)
{
	BEGIN;
	Node *c = node(g, OP_Concat, 1, 3, in(g, "a", "f32[B, S, 8]"), in(g, "b", "f32[B, 1, 8]"),
		       in(g, "e", "f32[B, 0, 8]"));
	ir_set_attr_int(c, "axis", -2);
	expect_ok(m, c, "f32[B, S+1, 8]");
	Node *d = node(g, OP_Concat, 1, 2, in(g, "x", "f32[2, 3]"), in(g, "y", "f32[3, 3]"));
	ir_set_attr_int(d, "axis", 1);
	expect_err(m, "Concat: input 1 is f32[3, 3] but input 0 is f32[2, 3]: dimension 0 differs");
	END;
}

static void test_concat_no_axis(void **st)
{
	BEGIN;
	node(g, OP_Concat, 1, 1, in(g, "x", "f32[2]"));
	expect_err(m, "Concat: attribute axis (an integer) is required");
	END;
}

static void test_split(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[10, 2*S]");
	Node *a = node(g, OP_Split, 3, 2, x, ints(g, 3, 2LL, 3LL, 5LL));
	Node *b = node(g, OP_Split, 2, 1, x);
	Node *c = node(g, OP_Split, 4, 1, x);
	ir_set_attr_int(b, "axis", -1);
	ir_set_attr_int(c, "num_outputs", 4);
	expect_ok(m, a, "f32[2, 2*S]");
	assert_type(a->out[2], "f32[5, 2*S]");
	assert_type(b->out[1], "f32[10, S]");
	assert_type(c->out[0], "f32[3, 2*S]");
	assert_type(c->out[3], "f32[1, 2*S]");
	END;
}

static void test_split_errors(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[10]");
	node(g, OP_Split, 2, 2, x, ints(g, 2, 3LL, 4LL));
	node(g, OP_Split, 3, 1, x);
	node(g, OP_Split, 2, 2, x, ints(g, 3, 3LL, 4LL, 3LL));
	assert_int_equal(infer(m), 3);
	assert_diag("Split: split sizes add up to 7 but dimension 0 of f32[10] is 10");
	assert_diag("cannot split dimension 10 into 3 equal parts");
	assert_diag("split has 3 entries but the node has 2 outputs");
	END;
}

static void test_slice(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[20, 10, 5]");
	Node *a = node(g, OP_Slice, 1, 5, x, ints(g, 2, 0LL, 1LL), ints(g, 2, 10LL, 1000LL), ints(g, 2, 0LL, 1LL),
		       ints(g, 2, 3LL, 2LL));
	Node *b = node(g, OP_Slice, 1, 5, x, ints(g, 1, -1LL), ints(g, 1, -1000LL), ints(g, 1, -1LL),
		       ints(g, 1, -1LL));
	Node *c = node(g, OP_Slice, 1, 3, x, ints(g, 1, 5LL), ints(g, 1, 2LL));
	Node *d = node(g, OP_Slice, 1, 4, x, ints(g, 1, -3LL), ints(g, 1, INT64_MAX), ints(g, 1, 1LL));
	expect_ok(m, a, "f32[4, 5, 5]");
	assert_type(b->out[0], "f32[20, 10, 5]");
	assert_type(c->out[0], "f32[0, 10, 5]");
	assert_type(d->out[0], "f32[20, 3, 5]");
	END;
}

static void test_slice_symbolic(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, S, 64]");
	Node *a = node(g, OP_Slice, 1, 4, x, ints(g, 1, 1LL), ints(g, 1, INT64_MAX), ints(g, 1, 1LL));
	Node *b = node(g, OP_Slice, 1, 4, x, ints(g, 1, 0LL), ints(g, 1, -1LL), ints(g, 1, -2LL));
	expect_ok(m, a, "f32[B, S-1, 64]");
	assert_type(b->out[0], "f32[B, S-1, 64]");
	node(g, OP_Slice, 1, 5, x, ints(g, 1, 0LL), ints(g, 1, -1LL), ints(g, 1, 1LL), ints(g, 1, 2LL));
	expect_err(m, "Slice: cannot slice symbolic dimension S from 0 to -1 with step 2 (bind the dimension: --bind B=N,S=N)");
	END;
}

static void test_slice_errors(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[4, 4]");
	node(g, OP_Slice, 1, 5, x, ints(g, 1, 0LL), ints(g, 1, 2LL), ints(g, 1, 0LL), ints(g, 1, 0LL));
	node(g, OP_Slice, 1, 3, x, ints(g, 1, 0LL), ints(g, 2, 2LL, 2LL));
	node(g, OP_Slice, 1, 4, x, ints(g, 2, 0LL, 0LL), ints(g, 2, 2LL, 2LL), ints(g, 2, 1LL, -1LL));
	assert_int_equal(infer(m), 3);
	assert_diag("Slice: step 0 is 0");
	assert_diag("Slice: starts has 1 entries but ends has 2");
	assert_diag("Slice: axis 1 is repeated in axes");
	END;
}

static void test_gather(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[V, D]");
	Node *a = node(g, OP_Gather, 1, 2, x, in(g, "ids", "i64[B, S]"));
	Node *b = node(g, OP_Gather, 1, 2, in(g, "y", "f32[3, 4, 5]"), lit(g, "i64[]", 1, (double[]){ -1 }));
	ir_set_attr_int(b, "axis", 1);
	Node *c = node(g, OP_GatherElements, 1, 2, in(g, "z", "f32[3, 4]"), in(g, "zi", "i32[3, 2]"));
	ir_set_attr_int(c, "axis", 1);
	expect_ok(m, a, "f32[B, S, D]");
	assert_type(b->out[0], "f32[3, 5]");
	assert_type(c->out[0], "f32[3, 2]");
	node(g, OP_Gather, 1, 2, in(g, "w", "f32[3]"), ints(g, 2, 0LL, 3LL));
	expect_err(m, "Gather: index 3 is out of range for dimension 3");
	END;
}

static void test_gather_float_indices(void **st)
{
	BEGIN;
	node(g, OP_Gather, 1, 2, in(g, "x", "f32[3]"), in(g, "i", "f32[1]"));
	expect_err(m, "Gather: indices must have an integer type, got f32[1]");
	END;
}

static void test_expand_tile(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[3, 1]");
	Node *a = node(g, OP_Expand, 1, 2, x, ints(g, 3, 2LL, 1LL, 6LL));
	Node *b = node(g, OP_Expand, 1, 2, x, ints(g, 1, 1LL));
	Node *c = node(g, OP_Tile, 1, 2, x, ints(g, 2, 2LL, 0LL));
	expect_ok(m, a, "f32[2, 3, 6]");
	assert_type(b->out[0], "f32[3, 1]");
	assert_type(c->out[0], "f32[6, 0]");
	node(g, OP_Expand, 1, 2, x, ints(g, 2, 4LL, 1LL));
	node(g, OP_Tile, 1, 2, x, ints(g, 1, 2LL));
	assert_int_equal(infer(m), 2);
	assert_diag("Expand: cannot broadcast input f32[3, 1] with shape f32[4, 1]: dimension 3 vs 4");
	assert_diag("Tile: repeats has 1 entries but the input f32[3, 1] has rank 2");
	END;
}

static void test_squeeze_unsqueeze(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[1, S, 1, 4]");
	Node *a = node(g, OP_Squeeze, 1, 1, x);
	Node *b = node(g, OP_Squeeze, 1, 2, x, ints(g, 1, -2LL));
	Node *c = node(g, OP_Unsqueeze, 1, 2, in(g, "y", "f32[3, 4]"), ints(g, 2, 0LL, -1LL));
	Node *d = node(g, OP_Unsqueeze, 1, 1, in(g, "s", "f32[]"));
	int64_t ax[] = { 0 };
	ir_set_attr_ints(d, "axes", ax, 1);
	expect_ok(m, a, "f32[S, 4]");
	assert_type(b->out[0], "f32[1, S, 4]");
	assert_type(c->out[0], "f32[1, 3, 4, 1]");
	assert_type(d->out[0], "f32[1]");
	node(g, OP_Squeeze, 1, 2, x, ints(g, 1, 1LL));
	node(g, OP_Unsqueeze, 1, 2, x, ints(g, 2, 1LL, 1LL));
	node(g, OP_Unsqueeze, 1, 1, x);
	assert_int_equal(infer(m), 3);
	assert_diag("Squeeze: cannot squeeze axis 1 of f32[1, S, 1, 4]: its size is S, not 1");
	assert_diag("Unsqueeze: axis 1 is repeated in axes");
	assert_diag("Unsqueeze: axes are required");
	END;
}

static void test_flatten(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, 3, 4, 5]");
	Node *a = node(g, OP_Flatten, 1, 1, x);
	Node *b = node(g, OP_Flatten, 1, 1, x);
	Node *c = node(g, OP_Flatten, 1, 1, x);
	ir_set_attr_int(b, "axis", 0);
	ir_set_attr_int(c, "axis", -2);
	expect_ok(m, a, "f32[B, 60]");
	assert_type(b->out[0], "f32[1, 60*B]");
	assert_type(c->out[0], "f32[3*B, 20]");
	ir_set_attr_int(c, "axis", 5);
	expect_err(m, "Flatten: axis 5 is out of range for rank 4 (expected -4..4)");
	END;
}

static void test_pad(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, 3, 4]");
	Node *a = node(g, OP_Pad, 1, 2, x, ints(g, 6, 0LL, 1LL, 2LL, 0LL, 1LL, -1LL));
	Node *b = node(g, OP_Pad, 1, 4, x, ints(g, 2, 1LL, 1LL), lit(g, "f32[]", 1, (double[]){ 0 }), ints(g, 1, -1LL));
	expect_ok(m, a, "f32[B, 5, 5]");
	assert_type(b->out[0], "f32[B, 3, 6]");
	node(g, OP_Pad, 1, 2, x, ints(g, 6, 0LL, 0LL, -5LL, 0LL, 0LL, 0LL));
	node(g, OP_Pad, 1, 2, x, ints(g, 2, 0LL, 0LL));
	Node *c = node(g, OP_Pad, 1, 2, x, ints(g, 6, 0LL, 0LL, 0LL, 0LL, 0LL, 0LL));
	ir_set_attr_str(c, "mode", "mirror");
	assert_int_equal(infer(m), 3);
	assert_diag("Pad: pads -5 and 0 make dimension 2 of f32[B, 3, 4] negative");
	assert_diag("Pad: pads has 2 entries; expected 6 (2 per padded axis)");
	assert_diag("Pad: mode must be constant, reflect, edge or wrap, got \"mirror\"");
	END;
}

static void test_shape_size(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, S, 4]");
	Node *a = node(g, OP_Shape, 1, 1, x);
	Node *b = node(g, OP_Shape, 1, 1, x);
	Node *c = node(g, OP_Size, 1, 1, x);
	ir_set_attr_int(b, "start", -2);
	Node *r = node(g, OP_Reshape, 1, 2, in(g, "y", "f32[S, 2, 2]"), b->out[0]);
	Node *cs = node(g, OP_ConstantOfShape, 1, 1, c->out[0]);
	ir_set_attr_int(cs, "value", 1);
	expect_ok(m, a, "i64[3]");
	assert_type(b->out[0], "i64[2]");
	assert_type(c->out[0], "i64[]");
	assert_type(r->out[0], "f32[S, 4]");
	assert_type(cs->out[0], "i64[4*B*S]");
	END;
}

static void test_range(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Range, 1, 3, lit(g, "i64[]", 1, (double[]){ 0 }), lit(g, "i64[]", 1, (double[]){ 10 }),
		       lit(g, "i64[]", 1, (double[]){ 3 }));
	Node *b = node(g, OP_Range, 1, 3, lit(g, "f32[]", 1, (double[]){ 1 }), lit(g, "f32[]", 1, (double[]){ 0 }),
		       lit(g, "f32[]", 1, (double[]){ 0.5 }));
	Node *sh = node(g, OP_Shape, 1, 1, in(g, "x", "f32[S]"));
	Node *ga = node(g, OP_Gather, 1, 2, sh->out[0], lit(g, "i64[]", 1, (double[]){ 0 }));
	Node *c = node(g, OP_Range, 1, 3, lit(g, "i64[]", 1, (double[]){ 0 }), ga->out[0],
		       lit(g, "i64[]", 1, (double[]){ 1 }));
	expect_ok(m, a, "i64[4]");
	assert_type(b->out[0], "f32[0]");
	assert_type(c->out[0], "i64[S]");
	node(g, OP_Range, 1, 3, lit(g, "i64[]", 1, (double[]){ 0 }), lit(g, "i64[]", 1, (double[]){ 1 }),
	     lit(g, "i64[]", 1, (double[]){ 0 }));
	expect_err(m, "Range: delta is 0");
	END;
}

static void test_constant(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Constant, 1, 0);
	Node *b = node(g, OP_Constant, 1, 0);
	Node *c = node(g, OP_ConstantOfShape, 1, 1, ints(g, 2, 2LL, 0LL));
	int64_t v[] = { 0, -1 };
	ir_set_attr_ints(a, "value_ints", v, 2);
	ir_set_attr_float(b, "value", 1.5);
	Node *r = node(g, OP_Reshape, 1, 2, in(g, "x", "f32[2, 3]"), a->out[0]);
	expect_ok(m, a, "i64[2]");
	assert_type(b->out[0], "f32[]");
	assert_type(c->out[0], "f32[2, 0]");
	assert_type(r->out[0], "f32[2, 3]");
	node(g, OP_Constant, 1, 0);
	node(g, OP_ConstantOfShape, 1, 1, ints(g, 1, -3LL));
	assert_int_equal(infer(m), 2);
	assert_diag("Constant: a value attribute");
	assert_diag("ConstantOfShape: shape entry 0 is negative (-3)");
	END;
}

static void test_embedding(void **st)
{
	BEGIN;
	Node *e = node(g, OP_Embedding, 1, 2, in(g, "t", "bf16[32000, 4096]"), in(g, "ids", "i32[B, S]"));
	expect_ok(m, e, "bf16[B, S, 4096]");
	node(g, OP_Embedding, 1, 2, in(g, "t2", "bf16[10, 4]"), ints(g, 1, -1LL));
	expect_err(m, "Embedding: id -1 is out of range for dimension 10");
	END;
}

/* ---- element-count overflow, bound symbols, literals ---- */
static void test_overflow(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[4294967296, 4294967296]");
	node(g, OP_Relu, 1, 1, x);
	expect_err(m, "Relu: output 0 has more than 2^63 elements: f32[4294967296, 4294967296]");
	END;
}

static void test_overflow_tile(void **st)
{
	BEGIN;
	node(g, OP_Tile, 1, 2, in(g, "x", "f32[4611686018427387904]"), ints(g, 1, 4LL));
	expect_err(m, "Tile: tiled dimension 0 overflows");
	END;
}

static void test_overflow_bound(void **st)
{
	BEGIN;
	in(g, "x", "f32[S, S, S]");
	ir_bind(m, "S", 3000000);
	expect_err(m, "x: type f32[S, S, S] has more than 2^63 elements with the bound dimensions");
	END;
}

static void test_bind_subst(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[B, S]");
	Node *n = node(g, OP_Reshape, 1, 2, x, ints(g, 1, -1LL));
	ir_bind(m, "S", 128);
	expect_ok(m, n, "f32[128*B]");
	assert_type(x, "f32[B, 128]");
	ir_bind(m, "B", 2);
	expect_ok(m, n, "f32[256]");
	END;
}

static void test_literal_count(void **st)
{
	BEGIN;
	lit(g, "f32[3]", 2, (double[]){ 1, 2 });
	expect_err(m, "f32[3] holds 3 elements but 2 values are given");
	END;
}

static void test_const_data(void **st)
{
	BEGIN;
	Value *p = lit(g, "f32[2, 2]", 4, (double[]){ 1, 2, 3, 4.5 });
	const RtTensor *t = ir_const_data(p);
	assert_non_null(t);
	assert_int_equal(t->rank, 2);
	assert_int_equal(t->n, 4);
	assert_true(rt_get(t, 3) == 4.5);
	assert_ptr_equal(ir_const_data(p), t);      /* cached */
	assert_null(ir_const_data(in(g, "x", "f32[1]")));
	assert_null(ir_const_data(NULL));
	Value *q = ir_add_param(g, "w", ty(m, "f32[2]"), NULL, L0);
	assert_null(ir_const_data(q));               /* unbound */
	END;
}

static void test_declared_outputs(void **st)
{
	BEGIN;
	Node *n = node(g, OP_Relu, 1, 1, in(g, "x", "f32[B, 8]"));
	ir_add_output(g, n->out[0]);
	g->out_decl = arena_alloc(m->arena, sizeof *g->out_decl);
	g->out_decl[0] = ty(m, "f32[B, S]");
	n->out[0]->name = "y";
	expect_err(m, "graph main: output y is declared f32[B, S] but inferred f32[B, 8]");
	ir_bind(m, "S", 8);
	assert_int_equal(infer(m), 0);
	END;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unary), cmocka_unit_test(test_unary_float_only),
		cmocka_unit_test(test_gelu_attr), cmocka_unit_test(test_not_bool),
		cmocka_unit_test(test_broadcast), cmocka_unit_test(test_broadcast_errors),
		cmocka_unit_test(test_broadcast_symbolic_mismatch), cmocka_unit_test(test_broadcast_zero_mismatch),
		cmocka_unit_test(test_binary_dtype), cmocka_unit_test(test_pow_mixed),
		cmocka_unit_test(test_compare_logical_where), cmocka_unit_test(test_where_errors),
		cmocka_unit_test(test_variadic), cmocka_unit_test(test_clip), cmocka_unit_test(test_cast),
		cmocka_unit_test(test_cast_missing_to), cmocka_unit_test(test_dropout), cmocka_unit_test(test_arity),
		cmocka_unit_test(test_required_input_absent), cmocka_unit_test(test_error_no_cascade),
		cmocka_unit_test(test_reduce), cmocka_unit_test(test_reduce_errors),
		cmocka_unit_test(test_argmax_softmax), cmocka_unit_test(test_topk), cmocka_unit_test(test_cumsum),
		cmocka_unit_test(test_reshape), cmocka_unit_test(test_reshape_symbolic),
		cmocka_unit_test(test_reshape_allowzero), cmocka_unit_test(test_reshape_errors),
		cmocka_unit_test(test_reshape_from_shape), cmocka_unit_test(test_reshape_shape_not_known),
		cmocka_unit_test(test_transpose), cmocka_unit_test(test_concat), cmocka_unit_test(test_concat_no_axis),
		cmocka_unit_test(test_split), cmocka_unit_test(test_split_errors), cmocka_unit_test(test_slice),
		cmocka_unit_test(test_slice_symbolic), cmocka_unit_test(test_slice_errors),
		cmocka_unit_test(test_gather), cmocka_unit_test(test_gather_float_indices),
		cmocka_unit_test(test_expand_tile), cmocka_unit_test(test_squeeze_unsqueeze),
		cmocka_unit_test(test_flatten), cmocka_unit_test(test_pad), cmocka_unit_test(test_shape_size),
		cmocka_unit_test(test_range), cmocka_unit_test(test_constant), cmocka_unit_test(test_embedding),
		cmocka_unit_test(test_overflow), cmocka_unit_test(test_overflow_tile),
		cmocka_unit_test(test_overflow_bound), cmocka_unit_test(test_bind_subst),
		cmocka_unit_test(test_literal_count), cmocka_unit_test(test_const_data),
		cmocka_unit_test(test_declared_outputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
