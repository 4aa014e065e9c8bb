/* testsuite/unit/test_shape_nn.c: shape inference of contractions, convolution and pooling,
 * normalisation, quantization, attention, the LLM/MoE operators and calls, plus FLOP counts
 * (ir_node_flops) and the module summary (ir_summary). */
#include "shape_util.h"

#define BEGIN Module *m = ir_module_new("t.aig"); Graph *g = ir_graph_new(m, "main", L0); (void)g
#define END ir_module_free(m)

static void test_matmul(void **st)
{
	BEGIN;
	Node *a = node(g, OP_MatMul, 1, 2, in(g, "x", "bf16[B, S, 4096]"), in(g, "w", "bf16[4096, 1024]"));
	Node *b = node(g, OP_MatMul, 1, 2, in(g, "v", "f32[4]"), in(g, "u", "f32[4]"));
	Node *c = node(g, OP_MatMul, 1, 2, in(g, "p", "f32[2, 1, 3, 4]"), in(g, "q", "f32[5, 4, 6]"));
	Node *d = node(g, OP_MatMul, 1, 2, in(g, "r", "f32[3, 4]"), in(g, "s", "f32[4]"));
	Node *e = node(g, OP_MatMul, 1, 2, in(g, "t", "bf16[8, 64]"), in(g, "wq", "mxfp4[64, 32]"));
	expect_ok(m, a, "bf16[B, S, 1024]");
	assert_type(b->out[0], "f32[]");
	assert_type(c->out[0], "f32[2, 5, 3, 6]");
	assert_type(d->out[0], "f32[3]");
	assert_type(e->out[0], "bf16[8, 32]");
	END;
}

static void test_matmul_errors(void **st)
{
	BEGIN;
	node(g, OP_MatMul, 1, 2, in(g, "a", "f32[B, S, 4096]"), in(g, "b", "f32[4095, 1024]"));
	node(g, OP_MatMul, 1, 2, in(g, "c", "f32[2, 3, 4]"), in(g, "d", "f32[5, 4, 6]"));
	node(g, OP_MatMul, 1, 2, in(g, "e", "f32[2, 2]"), in(g, "f", "f16[2, 2]"));
	node(g, OP_MatMul, 1, 2, in(g, "h", "f32[]"), in(g, "i", "f32[2]"));
	assert_int_equal(infer(m), 4);
	assert_diag("MatMul: inner dimensions differ: A is f32[B, S, 4096], B is f32[4095, 1024]");
	assert_diag("MatMul: cannot broadcast the batch axes of A f32[2] with those of B f32[5]: dimension 2 vs 5");
	assert_diag("MatMul: A and B must have the same dtype: A is f32[2, 2], B is f16[2, 2]");
	assert_diag("MatMul: operands must have rank >= 1");
	END;
}

static void test_matmul_integer_qlinear(void **st)
{
	BEGIN;
	Node *a = node(g, OP_MatMulInteger, 1, 2, in(g, "a", "u8[3, 4]"), in(g, "b", "i8[4, 5]"));
	Node *q = node(g, OP_QLinearMatMul, 1, 8, in(g, "qa", "u8[3, 4]"), in(g, "sa", "f32[]"), in(g, "za", "u8[]"),
		       in(g, "qb", "u8[4, 5]"), in(g, "sb", "f32[]"), in(g, "zb", "u8[]"), in(g, "sy", "f32[]"),
		       in(g, "zy", "i8[]"));
	expect_ok(m, a, "i32[3, 5]");
	assert_type(q->out[0], "i8[3, 5]");
	node(g, OP_MatMulInteger, 1, 2, in(g, "c", "f32[3, 4]"), in(g, "d", "i8[4, 5]"));
	expect_err(m, "MatMulInteger: A must be i8 or u8, got f32[3, 4]");
	END;
}

static void test_gemm(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Gemm, 1, 3, in(g, "a", "f32[4, 3]"), in(g, "b", "f32[5, 3]"), in(g, "c", "f32[5]"));
	ir_set_attr_int(a, "transB", 1);
	expect_ok(m, a, "f32[4, 5]");
	Node *b = node(g, OP_Gemm, 1, 3, in(g, "d", "f32[3, 4]"), in(g, "e", "f32[3, 5]"), in(g, "f", "f32[4, 2]"));
	ir_set_attr_int(b, "transA", 1);
	expect_err(m, "Gemm: C f32[4, 2] cannot be broadcast to the result [4, 5]");
	node(g, OP_Gemm, 1, 2, in(g, "h", "f32[3, 4]"), in(g, "i", "f32[3, 5]"));
	expect_err(m, "Gemm: inner dimensions differ: A is f32[3, 4] (transA=0), B is f32[3, 5] (transB=0)");
	END;
}

static void test_einsum(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Einsum, 1, 2, in(g, "a", "f32[B, 3, 4]"), in(g, "b", "f32[B, 4, 5]"));
	Node *b = node(g, OP_Einsum, 1, 1, in(g, "c", "f32[5, 5]"));
	Node *c = node(g, OP_Einsum, 1, 2, in(g, "d", "f32[2, 7, 3]"), in(g, "e", "f32[3, 4]"));
	Node *d = node(g, OP_Einsum, 1, 2, in(g, "f", "f32[3, 4]"), in(g, "h", "f32[4, 2]"));
	ir_set_attr_str(a, "equation", "bij,bjk->bik");
	ir_set_attr_str(b, "equation", "ii->");
	ir_set_attr_str(c, "equation", "...ij,jk->...ik");
	ir_set_attr_str(d, "equation", "ij,jk");
	expect_ok(m, a, "f32[B, 3, 5]");
	assert_type(b->out[0], "f32[]");
	assert_type(c->out[0], "f32[2, 7, 4]");
	assert_type(d->out[0], "f32[3, 2]");
	assert_true(ir_node_flops(a->out[0]->def) == 0);    /* symbolic B */
	assert_true(ir_node_flops(c) == 2.0 * 2 * 7 * 4 * 3);
	END;
}

static void test_einsum_errors(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[3, 4]"), *y = in(g, "y", "f32[5, 2]");
	Node *a = node(g, OP_Einsum, 1, 2, x, y);
	Node *b = node(g, OP_Einsum, 1, 2, x, y);
	Node *c = node(g, OP_Einsum, 1, 1, x);
	Node *d = node(g, OP_Einsum, 1, 1, x);
	node(g, OP_Einsum, 1, 1, x);
	ir_set_attr_str(a, "equation", "ij,jk->ik");
	ir_set_attr_str(b, "equation", "ij->ij");
	ir_set_attr_str(c, "equation", "ij->iz");
	ir_set_attr_str(d, "equation", "ijk->i");
	assert_int_equal(infer(m), 5);
	assert_diag("Einsum: letter 'j' has size 5 in input 1 but 4 before");
	assert_diag("Einsum: equation \"ij->ij\" has 1 terms but there are 2 inputs");
	assert_diag("Einsum: output letter 'z' is not in any input");
	assert_diag("Einsum: input 0 is f32[3, 4] but its term \"ijk\" has 3 axes");
	assert_diag("Einsum: attribute equation is required");
	END;
}

static void test_conv(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[N, 3, 224, 224]");
	Node *a = node(g, OP_Conv, 1, 3, x, in(g, "w", "f32[64, 3, 7, 7]"), in(g, "b", "f32[64]"));
	int64_t s2[] = { 2, 2 }, p3[] = { 3, 3, 3, 3 };
	ir_set_attr_ints(a, "strides", s2, 2);
	ir_set_attr_ints(a, "pads", p3, 4);
	Node *b = node(g, OP_Conv, 1, 2, in(g, "y", "f32[1, 32, S, 10]"), in(g, "dw", "f32[32, 1, 3, 3]"));
	ir_set_attr_int(b, "group", 32);
	ir_set_attr_str(b, "auto_pad", "SAME_UPPER");
	Node *c = node(g, OP_Conv, 1, 2, in(g, "z", "f32[1, 4, 10]"), in(g, "cw", "f32[8, 4, 3]"));
	int64_t d2[] = { 2 };
	ir_set_attr_ints(c, "dilations", d2, 1);
	expect_ok(m, a, "f32[N, 64, 112, 112]");
	assert_type(b->out[0], "f32[1, 32, S, 10]");
	assert_type(c->out[0], "f32[1, 8, 6]");
	assert_true(ir_node_flops(c) == 2.0 * 8 * 6 * 4 * 3);
	END;
}

static void test_conv_errors(void **st)
{
	BEGIN;
	node(g, OP_Conv, 1, 2, in(g, "a", "f32[1, 3, 8, 8]"), in(g, "w", "f32[4, 2, 3, 3]"));
	node(g, OP_Conv, 1, 2, in(g, "b", "f32[1, 3, 2, 2]"), in(g, "v", "f32[4, 3, 3, 3]"));
	Node *c = node(g, OP_Conv, 1, 2, in(g, "c", "f32[1, 4, 8, 8]"), in(g, "u", "f32[6, 1, 3, 3]"));
	ir_set_attr_int(c, "group", 4);
	Node *d = node(g, OP_Conv, 1, 2, in(g, "d", "f32[1, 3, 8]"), in(g, "t", "f32[4, 3, 3]"));
	int64_t s0[] = { 0 };
	ir_set_attr_ints(d, "strides", s0, 1);
	Node *e = node(g, OP_Conv, 1, 2, in(g, "e", "f32[1, 3, S]"), in(g, "r", "f32[4, 3, 3]"));
	int64_t s2[] = { 2 };
	ir_set_attr_ints(e, "strides", s2, 1);
	assert_int_equal(infer(m), 5);
	assert_diag("Conv: channels differ: X is f32[1, 3, 8, 8], W is f32[4, 2, 3, 3] with group=1");
	assert_diag("Conv: the window (3 with dilation 1) is larger than the padded input (2) on spatial axis 0");
	assert_diag("Conv: output channels 6 are not divisible by group 4");
	assert_diag("Conv: strides and dilations must be >= 1 (axis 0: stride 0, dilation 1)");
	assert_diag("Conv: cannot compute the output size of symbolic axis S with stride 2 (bind the dimension: --bind S=N)");
	END;
}

static void test_pool(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[1, 8, 7, 7]");
	Node *a = node(g, OP_MaxPool, 2, 1, x);
	Node *b = node(g, OP_AveragePool, 1, 1, x);
	Node *c = node(g, OP_GlobalAveragePool, 1, 1, x);
	int64_t k3[] = { 3, 3 }, s2[] = { 2, 2 }, k2[] = { 2, 2 };
	ir_set_attr_ints(a, "kernel_shape", k3, 2);
	ir_set_attr_ints(a, "strides", s2, 2);
	ir_set_attr_ints(b, "kernel_shape", k2, 2);
	ir_set_attr_ints(b, "strides", s2, 2);
	ir_set_attr_int(b, "ceil_mode", 1);
	expect_ok(m, a, "f32[1, 8, 3, 3]");
	assert_type(a->out[1], "i64[1, 8, 3, 3]");
	assert_type(b->out[0], "f32[1, 8, 4, 4]");
	assert_type(c->out[0], "f32[1, 8, 1, 1]");
	assert_true(ir_node_flops(a) == 8.0 * 9 * 9);
	node(g, OP_MaxPool, 1, 1, x);
	expect_err(m, "MaxPool: attribute kernel_shape is required");
	END;
}

static void test_norms(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "bf16[B, S, 4096]");
	Node *a = node(g, OP_LayerNormalization, 3, 3, x, in(g, "s", "bf16[4096]"), in(g, "b", "bf16[4096]"));
	Node *r = node(g, OP_RMSNormalization, 1, 2, x, in(g, "s2", "bf16[4096]"));
	Node *l2 = node(g, OP_LayerNormalization, 1, 2, x, in(g, "s3", "bf16[S, 4096]"));
	ir_set_attr_int(l2, "axis", 1);
	Node *bn = node(g, OP_BatchNormalization, 1, 5, in(g, "y", "f32[N, 3, 4, 4]"), in(g, "g", "f32[3]"),
			in(g, "be", "f32[3]"), in(g, "mu", "f32[3]"), in(g, "va", "f32[3]"));
	Node *gn = node(g, OP_GroupNormalization, 1, 3, in(g, "z", "f32[N, 32, 8]"), in(g, "gs", "f32[32]"),
			in(g, "gb", "f32[32]"));
	ir_set_attr_int(gn, "num_groups", 8);
	expect_ok(m, a, "bf16[B, S, 4096]");
	assert_type(a->out[1], "f32[B, S, 1]");
	assert_type(a->out[2], "f32[B, S, 1]");
	assert_type(r->out[0], "bf16[B, S, 4096]");
	assert_type(l2->out[0], "bf16[B, S, 4096]");
	assert_type(bn->out[0], "f32[N, 3, 4, 4]");
	assert_type(gn->out[0], "f32[N, 32, 8]");
	END;
}

static void test_norm_errors(void **st)
{
	BEGIN;
	node(g, OP_RMSNormalization, 1, 2, in(g, "x", "f32[2, 8]"), in(g, "s", "f32[4]"));
	Node *gn = node(g, OP_GroupNormalization, 1, 3, in(g, "z", "f32[1, 6, 8]"), in(g, "gs", "f32[6]"),
			in(g, "gb", "f32[6]"));
	ir_set_attr_int(gn, "num_groups", 4);
	node(g, OP_BatchNormalization, 1, 5, in(g, "y", "f32[1, 3]"), in(g, "g", "f32[4]"), in(g, "b", "f32[3]"),
	     in(g, "mu", "f32[3]"), in(g, "va", "f32[3]"));
	node(g, OP_LayerNormalization, 1, 2, in(g, "i", "i32[2, 8]"), in(g, "is", "i32[8]"));
	assert_int_equal(infer(m), 4);
	assert_diag("RMSNormalization: Scale f32[4] cannot be broadcast to the normalized axes of X f32[2, 8] (from axis 1)");
	assert_diag("GroupNormalization: channels 6 of X f32[1, 6, 8] are not divisible by num_groups=4");
	assert_diag("BatchNormalization: scale must be [3] (one per channel of X), got f32[4]");
	assert_diag("LayerNormalization: X must have a floating-point type, got i32[2, 8]");
	END;
}

static void test_quantize_linear(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[4, 64]");
	Node *a = node(g, OP_QuantizeLinear, 1, 3, x, in(g, "s", "f32[]"), in(g, "z", "i8[]"));
	Node *b = node(g, OP_QuantizeLinear, 1, 2, x, in(g, "s2", "f32[64]"));
	ir_set_attr_int(b, "axis", -1);
	ir_set_attr_str(b, "output_dtype", "f8e4m3");
	Node *c = node(g, OP_DequantizeLinear, 1, 2, in(g, "q", "i4[4, 64]"), in(g, "s3", "bf16[4, 2]"));
	ir_set_attr_int(c, "axis", 1);
	ir_set_attr_int(c, "block_size", 32);
	Node *d = node(g, OP_QuantizeLinear, 1, 2, x, in(g, "s4", "f32[4, 3]"));
	ir_set_attr_int(d, "block_size", 30);
	Node *e = node(g, OP_DynamicQuantizeLinear, 3, 1, x);
	Node *f = node(g, OP_Quantize, 1, 1, x);
	ir_set_attr_str(f, "to", "nvfp4");
	expect_ok(m, a, "i8[4, 64]");
	assert_type(b->out[0], "f8e4m3[4, 64]");
	assert_type(c->out[0], "bf16[4, 64]");
	assert_type(d->out[0], "u8[4, 64]");
	assert_type(e->out[0], "u8[4, 64]");
	assert_type(e->out[1], "f32[]");
	assert_type(f->out[0], "nvfp4[4, 64]");
	END;
}

static void test_quantize_errors(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "f32[4, 64]");
	node(g, OP_QuantizeLinear, 1, 2, x, in(g, "s", "f32[63]"));
	Node *b = node(g, OP_QuantizeLinear, 1, 2, x, in(g, "s2", "f32[4, 3]"));
	ir_set_attr_int(b, "block_size", 32);
	node(g, OP_QuantizeLinear, 1, 3, x, in(g, "s3", "f32[]"), in(g, "z", "i8[1, 1]"));
	Node *d = node(g, OP_Quantize, 1, 1, x);
	ir_set_attr_str(d, "to", "mxfp4");
	ir_set_attr_str(d, "scale_rule", "round");
	node(g, OP_Quantize, 1, 1, x);
	Node *f = node(g, OP_Quantize, 1, 1, in(g, "sc", "f32[]"));
	ir_set_attr_str(f, "to", "mxfp8");
	assert_int_equal(infer(m), 6);
	assert_diag("QuantizeLinear: y_scale f32[63] must hold one element or [64] (axis 1 of f32[4, 64])");
	assert_diag("QuantizeLinear: blocked y_scale f32[4, 3] must have the shape of f32[4, 64] with axis 1 divided into blocks of 32 (2)");
	assert_diag("QuantizeLinear: zero_point i8[1, 1] must have the shape of the scale f32[]");
	assert_diag("Quantize: scale_rule must be \"floor\" or \"rceil\", got \"round\"");
	assert_diag("Quantize: attribute to (the target format) is required");
	assert_diag("Quantize: block format mxfp8 needs a tensor of rank >= 1");
	END;
}

/* ---- attention ---- */
static void test_attention_4d_gqa(void **st)
{
	BEGIN;
	Value *q = in(g, "q", "bf16[B, 32, S, 128]");   /* interns S before P: "S+P" */
	Node *a = node(g, OP_Attention, 3, 6, q, in(g, "k", "bf16[B, 8, S, 128]"),
		       in(g, "v", "bf16[B, 8, S, 96]"), NULL, in(g, "pk", "bf16[B, 8, P, 128]"),
		       in(g, "pv", "bf16[B, 8, P, 96]"));
	ir_set_attr_int(a, "is_causal", 1);
	expect_ok(m, a, "bf16[B, 32, S, 96]");
	assert_type(a->out[1], "bf16[B, 8, S+P, 128]");
	assert_type(a->out[2], "bf16[B, 8, S+P, 96]");
	END;
}

static void test_attention_3d(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Attention, 4, 4, in(g, "q", "f32[2, 5, 64]"), in(g, "k", "f32[2, 7, 32]"),
		       in(g, "v", "f32[2, 7, 48]"), in(g, "mask", "bool[5, 7]"));
	ir_set_attr_int(a, "q_num_heads", 4);
	ir_set_attr_int(a, "kv_num_heads", 2);
	expect_ok(m, a, "f32[2, 5, 96]");
	assert_type(a->out[3], "f32[2, 4, 5, 7]");
	/* QK^T and PV per pair and head: 2*16 + 2*24, plus 5 for the softmax. */
	assert_true(ir_node_flops(a) == 2.0 * 4 * 5 * 7 * (32 + 48 + 5));
	ir_set_attr_int(a, "is_causal", 1);
	/* causal with 5 queries at the end of 7 keys: 5*2 + 15 = 25 unmasked pairs. */
	assert_true(ir_node_flops(a) == 2.0 * 4 * 25 * (32 + 48 + 5));
	END;
}

static void test_attention_errors(void **st)
{
	BEGIN;
	Node *a = node(g, OP_Attention, 1, 3, in(g, "q", "f32[2, 5, 64]"), in(g, "k", "f32[2, 7, 32]"),
		       in(g, "v", "f32[2, 7, 32]"));
	ir_set_attr_int(a, "q_num_heads", 3);
	ir_set_attr_int(a, "kv_num_heads", 2);
	Node *b = node(g, OP_Attention, 1, 3, in(g, "q2", "f32[1, 6, 4, 8]"), in(g, "k2", "f32[1, 4, 4, 8]"),
		       in(g, "v2", "f32[1, 4, 4, 8]"));
	node(g, OP_Attention, 1, 3, in(g, "q3", "f32[1, 4, 4, 8]"), in(g, "k3", "f32[1, 4, 4, 16]"),
	     in(g, "v3", "f32[1, 4, 4, 8]"));
	node(g, OP_Attention, 1, 4, in(g, "q4", "f32[1, 4, 4, 8]"), in(g, "k4", "f32[1, 4, 4, 8]"),
	     in(g, "v4", "f32[1, 4, 4, 8]"), in(g, "m4", "f32[4, 5]"));
	node(g, OP_Attention, 1, 5, in(g, "q5", "f32[1, 4, 4, 8]"), in(g, "k5", "f32[1, 4, 4, 8]"),
	     in(g, "v5", "f32[1, 4, 4, 8]"), NULL, in(g, "pk5", "f32[1, 4, 2, 8]"));
	node(g, OP_Attention, 1, 3, in(g, "q6", "f32[4, 8]"), in(g, "k6", "f32[4, 8]"), in(g, "v6", "f32[4, 8]"));
	Node *h = node(g, OP_Attention, 1, 3, in(g, "q7", "f32[1, 4, 8]"), in(g, "k7", "f32[1, 4, 8]"),
		       in(g, "v7", "f32[1, 4, 8]"));
	ir_set_attr_int(h, "q_num_heads", 2);
	(void)b;
	assert_int_equal(infer(m), 7);
	assert_diag("Attention: Q f32[2, 5, 64]: hidden size 64 is not divisible by 3 heads");
	assert_diag("Attention: grouped-query attention needs q_heads (6) divisible by kv_heads (4)");
	assert_diag("Attention: head sizes differ: Q is f32[1, 4, 4, 8], K is f32[1, 4, 4, 16]");
	assert_diag("Attention: attn_mask f32[4, 5] cannot be broadcast to [1, 4, 4, 4]");
	assert_diag("Attention: past_key and past_value must be given together");
	assert_diag("Attention: Q, K and V must all be 3-D or all 4-D");
	assert_diag("Attention: 3-D inputs need attribute kv_num_heads");
	END;
}

static void test_rotary(void **st)
{
	BEGIN;
	Node *a = node(g, OP_RotaryEmbedding, 1, 4, in(g, "x", "bf16[B, 32, S, 128]"), in(g, "c", "bf16[4096, 32]"),
		       in(g, "s", "bf16[4096, 32]"), in(g, "pos", "i64[B, S]"));
	ir_set_attr_int(a, "rotary_embedding_dim", 64);
	Node *b = node(g, OP_RotaryEmbedding, 1, 3, in(g, "y", "f32[2, 5, 64]"), in(g, "c2", "f32[2, 5, 8]"),
		       in(g, "s2", "f32[2, 5, 8]"));
	ir_set_attr_int(b, "num_heads", 4);
	expect_ok(m, a, "bf16[B, 32, S, 128]");
	assert_type(b->out[0], "f32[2, 5, 64]");
	ir_set_attr_int(a, "rotary_embedding_dim", 256);
	expect_err(m, "RotaryEmbedding: rotary_embedding_dim=256 must be in 0..128 (the head size)");
	ir_set_attr_int(a, "rotary_embedding_dim", 0);
	expect_err(m, "RotaryEmbedding: cos_cache must be [max_position, 64] with position_ids, got bf16[4096, 32]");
	/* a 3-D X the wrong width for the table (a Q computed with K's weight): the error says which
	 * head size each side implies */
	ir_set_attr_int(a, "rotary_embedding_dim", 64);
	Node *r = node(g, OP_RotaryEmbedding, 1, 4, in(g, "q", "bf16[1, 8, 32]"), in(g, "c3", "bf16[32, 8]"),
		       in(g, "s3", "bf16[32, 8]"), in(g, "p3", "i64[1, 8]"));
	ir_set_attr_int(r, "num_heads", 4);
	expect_err(m, "RotaryEmbedding: cos_cache must be [max_position, 4] with position_ids, got bf16[32, 8]: X's 32 "
		   "columns are num_heads=4 x a head size of 8, but the table's 8 columns are half of a head size of 16 "
		   "(X 64 = 4 x 16 wide); check what computes X (its weight) and num_heads");
	END;
}

/* ---- mixture of experts ---- */
static void test_moe(void **st)
{
	BEGIN;
	Value *x = in(g, "x", "bf16[T, 7168]");
	Node *r = node(g, OP_TopKRouter, 2, 2, in(g, "logits", "f32[T, 256]"), in(g, "bias", "f32[256]"));
	ir_set_attr_int(r, "k", 8);
	ir_set_attr_int(r, "n_group", 8);
	ir_set_attr_int(r, "topk_group", 4);
	ir_set_attr_str(r, "scoring", "sigmoid");
	Node *d = node(g, OP_MoEDispatch, 2, 2, x, r->out[1]);
	ir_set_attr_int(d, "num_experts", 256);
	Node *mm = node(g, OP_GroupedMatMul, 1, 3, d->out[0], d->out[1], in(g, "w", "bf16[256, 7168, 2048]"));
	Node *mm2 = node(g, OP_GroupedMatMul, 1, 3, mm->out[0], d->out[1], in(g, "w2", "bf16[256, 2048, 7168]"));
	Node *c = node(g, OP_MoECombine, 1, 3, mm2->out[0], r->out[0], r->out[1]);
	expect_ok(m, r, "f32[T, 8]");
	assert_type(r->out[1], "i64[T, 8]");
	assert_type(d->out[0], "bf16[8*T, 7168]");
	assert_type(d->out[1], "i64[257]");
	assert_type(mm->out[0], "bf16[8*T, 2048]");
	assert_type(c->out[0], "bf16[T, 7168]");
	ir_bind(m, "T", 4);
	assert_int_equal(infer(m), 0);
	assert_true(ir_node_flops(mm) == 2.0 * 32 * 7168 * 2048);
	END;
}

static void test_moe_errors(void **st)
{
	BEGIN;
	Node *r = node(g, OP_TopKRouter, 2, 1, in(g, "l", "f32[4, 16]"));
	ir_set_attr_int(r, "k", 17);
	Node *r2 = node(g, OP_TopKRouter, 2, 1, in(g, "l2", "f32[4, 16]"));
	ir_set_attr_int(r2, "k", 2);
	ir_set_attr_int(r2, "n_group", 3);
	node(g, OP_MoEDispatch, 2, 2, in(g, "x", "f32[4, 8]"), in(g, "e", "i64[4, 2]"));
	node(g, OP_GroupedMatMul, 1, 3, in(g, "xs", "f32[8, 8]"), in(g, "o", "i64[5]"), in(g, "w", "f32[3, 8, 2]"));
	node(g, OP_MoECombine, 1, 3, in(g, "ys", "f32[7, 8]"), in(g, "wt", "f32[4, 2]"), in(g, "ex", "i64[4, 2]"));
	assert_int_equal(infer(m), 5);
	assert_diag("TopKRouter: attribute k=17 must be in 1..16 (the number of experts)");
	assert_diag("TopKRouter: n_group=3 must be >= 1 and divide the 16 experts");
	assert_diag("MoEDispatch: attribute num_experts (>= 1) is required");
	assert_diag("GroupedMatMul: offsets i64[5] must have experts + 1 = 4 entries (w is f32[3, 8, 2])");
	assert_diag("MoECombine: ys f32[7, 8] must have tokens * k = 8 rows (weights is f32[4, 2])");
	END;
}

/* ---- calls, cost and summary ---- */
/* layer(x: f32[B, D]) -> f32[B, D] with one D x D weight. */
static Graph *layer(Module *m, int64_t d)
{
	Graph *g = ir_graph_new(m, "layer", L0);
	char spec[64];
	snprintf(spec, sizeof spec, "f32[B, %lld]", (long long)d);
	Value *x = in(g, "x", spec);
	snprintf(spec, sizeof spec, "f32[%lld, %lld]", (long long)d, (long long)d);
	Value *w = ir_add_param(g, "w", ty(m, spec), NULL, L0);
	Node *mm = node(g, OP_MatMul, 1, 2, x, w);
	Node *r = node(g, OP_Relu, 1, 1, mm->out[0]);
	ir_add_output(g, r->out[0]);
	return g;
}

static void test_call_repeat_summary(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *l = layer(m, 64);
	Graph *g = ir_graph_new(m, "main", L0);
	Value *x = in(g, "x", "f32[B, 64]");
	Node *c = ir_add_node(g, OP_Call, &x, 1, NULL, 1, L0);
	c->callee = l;
	c->repeat = 12;
	Node *c2 = ir_add_node(g, OP_Call, c->out, 1, NULL, 1, L0);
	c2->callee = l;
	ir_add_output(g, c2->out[0]);
	ir_add_param(g, "head", ty(m, "bf16[64, 10]"), NULL, L0);
	expect_ok(m, c, "f32[B, 64]");
	Summary s = ir_summary(g);
	assert_int_equal(s.nodes, 26);
	assert_int_equal(s.parameters, 13 * 64 * 64 + 640);
	assert_int_equal(s.parameter_bytes, 13 * 64 * 64 * 4 + 1280);
	assert_true(s.flops == 0);   /* B unbound */
	ir_bind(m, "B", 2);
	assert_int_equal(infer(m), 0);
	s = ir_summary(g);
	assert_true(s.flops == 13.0 * (2.0 * 2 * 64 * 64 + 2 * 64));
	assert_true(ir_node_flops(c) == 12.0 * (2.0 * 2 * 64 * 64 + 2 * 64));
	ir_module_free(m);
}

static void test_call_errors(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *l = layer(m, 64);
	Graph *sq = ir_graph_new(m, "proj", L0);
	Node *mm = node(sq, OP_MatMul, 1, 2, in(sq, "x", "f32[B, 64]"), ir_add_param(sq, "w", ty(m, "f32[64, 32]"), NULL, L0));
	ir_add_output(sq, mm->out[0]);
	Graph *g = ir_graph_new(m, "main", L0);
	Value *x = in(g, "x", "f32[B, 32]"), *y = in(g, "y", "f32[B, 64]");
	Node *a = ir_add_node(g, OP_Call, &x, 1, NULL, 1, L0);
	a->callee = l;
	Node *b = ir_add_node(g, OP_Call, &y, 1, NULL, 1, L0);
	b->callee = sq;
	b->repeat = 2;
	Value *two[2] = { y, y };
	Node *c = ir_add_node(g, OP_Call, two, 2, NULL, 1, L0);
	c->callee = l;
	assert_int_equal(infer(m), 3);
	assert_diag("layer: argument 0 of graph layer (x) must be f32[B, 64], got f32[B, 32]");
	assert_diag("proj: repeat 2 needs output 0 (");
	assert_diag("layer: graph layer takes 1 inputs, 2 given");
	ir_module_free(m);
}

static void test_call_cycle(void **st)
{
	Module *m = ir_module_new("t.aig");
	Graph *a = ir_graph_new(m, "a", L0), *b = ir_graph_new(m, "b", L0);
	Value *x = in(a, "x", "f32[2]"), *y = in(b, "y", "f32[2]");
	Node *ca = ir_add_node(a, OP_Call, &x, 1, NULL, 1, L0);
	Node *cb = ir_add_node(b, OP_Call, &y, 1, NULL, 1, L0);
	ca->callee = b;
	cb->callee = a;
	ir_add_output(a, ca->out[0]);
	ir_add_output(b, cb->out[0]);
	assert_true(infer(m) >= 1);
	assert_diag("call cycle: graph b calls a");
	Summary s = ir_summary(a);    /* must terminate */
	assert_true(s.nodes >= 0);
	ir_module_free(m);
}

static void test_flops_rules(void **st)
{
	BEGIN;
	Node *mm = node(g, OP_MatMul, 1, 2, in(g, "a", "f32[2, 3, 4]"), in(g, "b", "f32[4, 5]"));
	Node *ge = node(g, OP_Gemm, 1, 3, in(g, "c", "f32[3, 4]"), in(g, "d", "f32[4, 5]"), in(g, "e", "f32[5]"));
	Node *ad = node(g, OP_Add, 1, 2, in(g, "f", "f32[3, 4]"), in(g, "h", "f32[4]"));
	Node *sm = node(g, OP_Softmax, 1, 1, in(g, "i", "f32[3, 4]"));
	Node *rs = node(g, OP_ReduceSum, 1, 1, in(g, "j", "f32[3, 4]"));
	Node *rh = node(g, OP_Reshape, 1, 2, in(g, "k", "f32[3, 4]"), ints(g, 1, -1LL));
	Node *ln = node(g, OP_LayerNormalization, 1, 2, in(g, "l", "f32[3, 4]"), in(g, "ls", "f32[4]"));
	assert_int_equal(infer(m), 0);
	assert_true(ir_node_flops(mm) == 2.0 * 2 * 3 * 5 * 4);
	assert_true(ir_node_flops(ge) == 2.0 * 3 * 5 * 4 + 15);
	assert_true(ir_node_flops(ad) == 12);
	assert_true(ir_node_flops(sm) == 60);
	assert_true(ir_node_flops(rs) == 12);
	assert_true(ir_node_flops(rh) == 0);
	assert_true(ir_node_flops(ln) == 60);
	END;
}

static void test_summary_bytes_block(void **st)
{
	BEGIN;
	ir_add_param(g, "w", ty(m, "mxfp4[64, 64]"), NULL, L0);
	ir_add_param(g, "v", ty(m, "f32[S]"), NULL, L0);
	Summary s = ir_summary(g);
	assert_int_equal(s.parameters, 4096);
	/* 4096 * 4 bits = 2048 bytes + 128 E8M0 scales. */
	assert_int_equal(s.parameter_bytes, 2048 + 128);
	END;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matmul), cmocka_unit_test(test_matmul_errors),
		cmocka_unit_test(test_matmul_integer_qlinear), cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_einsum), cmocka_unit_test(test_einsum_errors), cmocka_unit_test(test_conv),
		cmocka_unit_test(test_conv_errors), cmocka_unit_test(test_pool), cmocka_unit_test(test_norms),
		cmocka_unit_test(test_norm_errors), cmocka_unit_test(test_quantize_linear),
		cmocka_unit_test(test_quantize_errors), cmocka_unit_test(test_attention_4d_gqa),
		cmocka_unit_test(test_attention_3d), cmocka_unit_test(test_attention_errors),
		cmocka_unit_test(test_rotary), cmocka_unit_test(test_moe), cmocka_unit_test(test_moe_errors),
		cmocka_unit_test(test_call_repeat_summary), cmocka_unit_test(test_call_errors),
		cmocka_unit_test(test_call_cycle), cmocka_unit_test(test_flops_rules),
		cmocka_unit_test(test_summary_bytes_block),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
