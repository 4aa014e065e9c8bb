/* testsuite/unit/test_fastpaths.c: every f32 fast path of the reference kernels (contiguous and
 * broadcast elementwise rows, Clip, Conv through im2col, pointwise and direct depthwise, pools,
 * GlobalAveragePool, BatchNormalization, Softmax, Resize nearest, ConvTranspose) gives bit for bit what the general double path
 * gives (kn_generic_only), on data with signed zeros, NaN, infinities, subnormals and values of
 * every magnitude, for f32 and bf16 outputs, and for each instruction set this CPU runs. */
#include "testsuite/unit/kernel_test.h"
#include "runtime/kernels/kernels_impl.h"

#include <stdlib.h>

static uint64_t seed = 1;

static float rnd(void)
{
	seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	uint32_t r = (uint32_t)(seed >> 33);
	switch (r % 64) {
	case 0: return 0.0f;
	case 1: return -0.0f;
	case 2: return NAN;
	case 3: return INFINITY;
	case 4: return -INFINITY;
	case 5: return 1e-40f;   /* subnormal */
	case 6: return 3.0f;     /* HardSwish/Clip corners */
	case 7: return -3.0f;
	default: return ldexpf((float)((r >> 8) & 0xffff) / 65536.0f - 0.5f, (int)((r >> 24) % 16) - 6);
	}
}

/* A seeded tensor; `plain` leaves out the specials (for operands whose NaN would hide a path). */
static RtTensor tensor(int rank, const int64_t *dims, int plain)
{
	RtTensor t;
	assert_int_equal(rt_tensor_alloc(&t, DT_F32, rank, dims, NULL), 0);
	for (int64_t i = 0; i < t.n; i++) {
		float v = rnd();
		while (plain && !isfinite(v))
			v = rnd();
		rt_f32(&t)[i] = v;
	}
	return t;
}

/* Runs op both ways (fast and general) with output 0 preset to `od` and compares the bits. */
static void same(const char *op, RtTensor **in, int nin, int nout, const Attr *at, int nat, DType od)
{
	Attrs as = { nat, (Attr *)at };
	RtExecOpts o = { 0 };
	o.mma_in = DT_INVALID;
	RtTensor got[2][4];
	for (int pass = 0; pass < 2; pass++) {
		memset(got[pass], 0, sizeof got[pass]);
		for (int i = 0; i < nout; i++)
			got[pass][i].dtype = i == 0 ? od : DT_INVALID;
		RtError e = { 0 };
		RtKernelArgs a = { in, nin, got[pass], nout, &as, &o };
		kn_generic_only = pass;
		int rc = rt_kernel(rt_op_lookup(op))(&a, &e);
		kn_generic_only = 0;
		if (rc < 0)
			fail_msg("%s: %s", op, e.msg);
	}
	for (int i = 0; i < nout; i++) {
		assert_int_equal(got[0][i].n, got[1][i].n);
		assert_int_equal(got[0][i].dtype, got[1][i].dtype);
		for (int64_t k = 0; k < got[0][i].n; k++) {
			float f = rt_f32(&got[0][i])[k], g = rt_f32(&got[1][i])[k];
			if (memcmp(&f, &g, sizeof f) && !(isnan(f) && isnan(g)))
				fail_msg("%s (out dtype %s) element %lld: fast %a, general %a", op, rt_dtype_name(od),
					 (long long)k, f, g);
		}
		rt_tensor_free(&got[0][i]), rt_tensor_free(&got[1][i]);
	}
}

static void test_binary(void **state)
{
	static const char *ops[] = { "Add", "Sub", "Mul", "Div", "Pow", "SwiGLU" };
	static const int64_t shapes[][2][4] = {
		{ { 2, 3, 4, 5 }, { 2, 3, 4, 5 } }, { { 2, 3, 4, 5 }, { 1, 3, 1, 5 } }, { { 2, 3, 4, 5 }, { 1, 1, 1, 1 } },
		{ { 1, 1, 1, 1 }, { 2, 3, 4, 5 } }, { { 2, 1, 4, 1 }, { 1, 3, 1, 5 } }, { { 2, 3, 4, 5 }, { 2, 3, 1, 1 } },
	};
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int d = 0; d < 2; d++) {
				RtTensor x = tensor(4, shapes[s][0], 0), y = tensor(4, shapes[s][1], 0);
				RtTensor *in[] = { &x, &y };
				same(ops[o], in, 2, 1, NULL, 0, d ? DT_BF16 : DT_INVALID);
				rt_tensor_free(&x), rt_tensor_free(&y);
			}
	static const char *var[] = { "Max", "Min", "Sum", "Mean" };
	for (size_t o = 0; o < 4; o++) {
		RtTensor x = tensor(3, KT_DIMS(4, 5, 6), 0), y = tensor(2, KT_DIMS(5, 6), 0), z = tensor(1, KT_DIMS(6), 0);
		RtTensor *in[] = { &x, &y, &z };
		same(var[o], in, 3, 1, NULL, 0, DT_INVALID);
		rt_tensor_free(&x), rt_tensor_free(&y), rt_tensor_free(&z);
	}
}

static void test_unary(void **state)
{
	static const char *ops[] = { "Identity", "Neg", "Abs", "Sign", "Sqrt", "Reciprocal", "Exp", "Log", "Tanh",
		"Erf", "Floor", "Ceil", "Round", "Sigmoid", "Relu", "Silu", "Mish", "Softplus", "HardSwish" };
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
		for (int d = 0; d < 2; d++) {
			RtTensor x = tensor(2, KT_DIMS(7, 33), 0);
			RtTensor *in[] = { &x };
			same(ops[o], in, 1, 1, NULL, 0, d ? DT_BF16 : DT_INVALID);
			rt_tensor_free(&x);
		}
	RtTensor x = tensor(2, KT_DIMS(7, 33), 0);
	RtTensor *in[] = { &x };
	Attr hs[] = { kt_af("alpha", 0.2f), kt_af("beta", 0.5f) }, lr[] = { kt_af("alpha", 0.01f) };
	Attr ge[] = { kt_as("approximate", "tanh") }, sw[] = { kt_af("alpha", 1.702f) };
	same("HardSigmoid", in, 1, 1, hs, 2, DT_INVALID);
	same("LeakyRelu", in, 1, 1, lr, 1, DT_INVALID);
	same("Gelu", in, 1, 1, ge, 1, DT_INVALID);
	same("Gelu", in, 1, 1, NULL, 0, DT_INVALID);
	same("Swish", in, 1, 1, sw, 1, DT_INVALID);
	/* Clip: f32 bounds from inputs, and attribute bounds that are not f32 values */
	RtTensor lo = KT_T(DT_F32, 0, NULL, KT_VALS(-1.5)), hi = KT_T(DT_F32, 0, NULL, KT_VALS(6));
	RtTensor *cin[] = { &x, &lo, &hi };
	same("Clip", cin, 3, 1, NULL, 0, DT_INVALID);
	Attr cl[] = { kt_af("min", 0.1), kt_af("max", 0.7) };
	same("Clip", in, 1, 1, cl, 2, DT_INVALID);
	rt_tensor_free(&x), rt_tensor_free(&lo), rt_tensor_free(&hi);
}

/* Conv: every path of conv_f32 (im2col 2-D with strides and dilation, the implicit product,
 * pointwise, direct depthwise, N-D im2col) against the double path, with and without bias, on every instruction set. */
static void test_conv(void **state)
{
	struct { int64_t x[5], w[5]; int rank, group, k, s0, s1, d, pad; } cs[] = {
		{ { 2, 6, 9, 11 }, { 4, 6, 3, 3 }, 4, 1, 3, 1, 1, 1, 1 },
		{ { 1, 6, 9, 11 }, { 4, 3, 3, 2 }, 4, 2, 0, 2, 2, 1, 1 },
		{ { 1, 8, 7, 40 }, { 8, 1, 5, 5 }, 4, 8, 5, 1, 1, 1, 2 },   /* depthwise 5x5 */
		{ { 1, 8, 12, 37 }, { 8, 1, 3, 3 }, 4, 8, 3, 2, 1, 1, 1 },  /* depthwise, height stride 2 */
		{ { 1, 8, 12, 37 }, { 8, 1, 3, 3 }, 4, 8, 3, 1, 1, 2, 2 },  /* depthwise, dilation 2 */
		{ { 1, 8, 12, 37 }, { 8, 1, 3, 3 }, 4, 8, 3, 1, 2, 1, 1 },  /* depthwise, width stride 2 (column phases) */
		{ { 1, 4, 11, 90 }, { 4, 1, 3, 3 }, 4, 4, 3, 2, 2, 1, 1 },  /* depthwise 2x2 stride, 45-wide rows */
		{ { 1, 4, 13, 77 }, { 4, 1, 5, 5 }, 4, 4, 5, 3, 3, 2, 2 },  /* depthwise stride 3, dilation 2 */
		{ { 1, 3, 6, 64 }, { 3, 1, 3, 3 }, 4, 3, 3, 1, 1, 1, 1 },   /* depthwise, rows of exactly 64 */
		{ { 2, 16, 5, 7 }, { 24, 16, 1, 1 }, 4, 1, 1, 1, 1, 1, 0 }, /* pointwise */
		{ { 1, 4, 5, 6, 7 }, { 3, 4, 2, 3, 2 }, 5, 1, 0, 1, 1, 1, 1 },
		/* the implicit product (AVX2), partial row panels and column tiles */
		{ { 1, 64, 30, 40 }, { 4, 64, 3, 3 }, 4, 1, 3, 1, 1, 1, 1 },
		{ { 1, 64, 60, 81 }, { 4, 64, 3, 3 }, 4, 1, 3, 2, 2, 1, 1 },  /* width stride 2: column phases */
		{ { 1, 5, 13, 37 }, { 7, 5, 3, 3 }, 4, 1, 3, 2, 1, 2, 2 },  /* height stride 2, dilation 2 */
		{ { 1, 5, 13, 47 }, { 7, 5, 3, 3 }, 4, 1, 3, 1, 2, 2, 2 },  /* width stride 2, dilation 2 */
		{ { 1, 3, 11, 64 }, { 16, 3, 3, 3 }, 4, 1, 3, 2, 3, 1, 1 }, /* width stride 3 */
		/* more than 1,024 taps: im2col by chunks of output positions (K = 1089: 448 a chunk),
		 * a chunk ending mid-row */
		{ { 1, 1, 60, 60 }, { 2, 1, 33, 33 }, 4, 1, 33, 1, 1, 1, 1 },
		{ { 2, 6, 9, 20 }, { 10, 3, 1, 3 }, 4, 2, 3, 1, 1, 1, 0 },  /* groups, a 1x3 window */
	};
	for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
		rt_isa_set((RtIsa)isa);
		for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
			for (int bias = 0; bias < 2; bias++) {
				int r = cs[c].rank, ns = r - 2;
				RtTensor x = tensor(r, cs[c].x, 0), w = tensor(r, cs[c].w, 1), b = tensor(1, cs[c].w, 1);
				RtTensor *in[] = { &x, &w, bias ? &b : NULL };
				int64_t st[3] = { cs[c].s0, cs[c].s1, 1 }, dl[3] = { cs[c].d, cs[c].d, 1 }, pd[6];
				for (int i = 0; i < 2 * ns; i++)
					pd[i] = cs[c].pad + (i == 1);
				Attr at[] = { kt_ai("group", cs[c].group), kt_ais("strides", ns, st), kt_ais("dilations", ns, dl),
					      kt_ais("pads", 2 * ns, pd) };
				same("Conv", in, 3, 1, at, 4, bias ? DT_BF16 : DT_INVALID);
				rt_tensor_free(&x), rt_tensor_free(&w), rt_tensor_free(&b);
			}
	}
	rt_isa_set((RtIsa)-1);
}

/* Conv with a constant's packed-weight slot (RtPack, as a loaded plan gives its constants): the
 * first call packs W, the next ones reuse it; another ISA, or other weights in the same slot
 * (another data pointer), pack again.  Every call is bit for bit the double path's. */
static void test_conv_prepacked(void **state)
{
	struct { int64_t x[4], w[4]; int group, s1; } cs[] = {
		{ { 1, 6, 9, 11 }, { 4, 6, 3, 3 }, 1, 1 },     /* implicit (AVX2: whole-K panels) */
		{ { 1, 64, 9, 20 }, { 30, 64, 3, 3 }, 1, 2 },  /* im2col, K = 576: three K blocks */
		{ { 2, 16, 5, 7 }, { 24, 16, 1, 1 }, 1, 1 },   /* pointwise */
		{ { 1, 8, 5, 7 }, { 40, 2, 1, 1 }, 4, 1 },     /* pointwise, groups */
	};
	for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
		RtTensor x = tensor(4, cs[c].x, 0), w = tensor(4, cs[c].w, 1), w2 = tensor(4, cs[c].w, 1);
		RtTensor b = tensor(1, cs[c].w, 1);
		RtPack slot = { 0 };
		w.pack = w2.pack = &slot;
		int64_t st[2] = { 1, cs[c].s1 }, pd[4] = { 1, 1, 1, 1 };
		if (cs[c].w[2] == 1)
			pd[0] = pd[1] = pd[2] = pd[3] = 0;
		Attr at[] = { kt_ai("group", cs[c].group), kt_ais("strides", 2, st), kt_ais("pads", 4, pd) };
		for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
			rt_isa_set((RtIsa)isa);
			/* w (packed for the previous ISA: packs again), w2 and w (other data: pack
			 * again), w (reuses) */
			for (int k = 0; k < 4; k++) {
				RtTensor *in[] = { &x, k == 1 ? &w2 : &w, &b };
				same("Conv", in, 3, 1, at, 3, DT_INVALID);
				assert_non_null(slot.data);
				assert_ptr_equal(slot.src, k == 1 ? w2.data : w.data);
				assert_int_equal(slot.isa, isa);
			}
		}
		rt_pack_free(&slot);
		rt_tensor_free(&x), rt_tensor_free(&w), rt_tensor_free(&w2), rt_tensor_free(&b);
	}
	rt_isa_set((RtIsa)-1);
}

static void test_pool_norm_softmax(void **state)
{
	RtTensor x = tensor(4, KT_DIMS(2, 3, 9, 10), 0);
	RtTensor *in[] = { &x };
	int64_t ks[2] = { 3, 2 }, st[2] = { 2, 1 }, pd[4] = { 1, 0, 1, 1 }, dl[2] = { 1, 2 };
	for (int ceil = 0; ceil < 2; ceil++) {
		Attr mp[] = { kt_ais("kernel_shape", 2, ks), kt_ais("strides", 2, st), kt_ais("pads", 4, pd),
			      kt_ai("ceil_mode", ceil), kt_ais("dilations", 2, dl) };
		same("MaxPool", in, 1, 1, mp, 5, DT_INVALID);
		for (int incl = 0; incl < 2; incl++) {
			Attr ap[] = { kt_ais("kernel_shape", 2, ks), kt_ais("strides", 2, st), kt_ais("pads", 4, pd),
				      kt_ai("ceil_mode", ceil), kt_ai("count_include_pad", incl) };
			same("AveragePool", in, 1, 1, ap, 5, DT_INVALID);
		}
	}
	same("GlobalAveragePool", in, 1, 1, NULL, 0, DT_INVALID);
	RtTensor g = tensor(4, KT_DIMS(2, 11, 5, 7), 0);   /* 22 rows: eight at a time, then the rest */
	RtTensor *gin[] = { &g };
	same("GlobalAveragePool", gin, 1, 1, NULL, 0, DT_INVALID);
	same("GlobalAveragePool", gin, 1, 1, NULL, 0, DT_BF16);
	rt_tensor_free(&g);
	RtTensor sc = tensor(1, KT_DIMS(3), 1), bb = tensor(1, KT_DIMS(3), 1), mu = tensor(1, KT_DIMS(3), 1);
	RtTensor var = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(0.5, 2, 0));
	RtTensor *bn[] = { &x, &sc, &bb, &mu, &var };
	Attr eps[] = { kt_af("epsilon", 1e-5) };
	same("BatchNormalization", bn, 5, 1, eps, 1, DT_INVALID);
	same("BatchNormalization", bn, 5, 1, eps, 1, DT_BF16);
	Attr ax[] = { kt_ai("axis", -1) }, ax1[] = { kt_ai("axis", 1) };
	same("Softmax", in, 1, 1, ax, 1, DT_INVALID);
	same("LogSoftmax", in, 1, 1, ax, 1, DT_INVALID);
	same("Softmax", in, 1, 1, ax1, 1, DT_INVALID);
	RtTensor wide = tensor(2, KT_DIMS(3, 700), 0);   /* vectorised exponentials: e^(x - max) down past -104 */
	RtTensor *win[] = { &wide };
	same("Softmax", win, 1, 1, ax, 1, DT_INVALID);
	same("Softmax", win, 1, 1, ax, 1, DT_BF16);
	rt_tensor_free(&wide);
	rt_tensor_free(&x), rt_tensor_free(&sc), rt_tensor_free(&bb), rt_tensor_free(&mu), rt_tensor_free(&var);
}

/* ConvTranspose in f32 (2-D and N-D col2im, strides, dilation, pads, groups, bias) against the
 * double path, on every instruction set. */
static void test_convtranspose(void **state)
{
	struct { int64_t x[5], w[5]; int rank, group, s, d, pad; } cs[] = {
		{ { 1, 6, 5, 7 }, { 6, 4, 2, 2 }, 4, 1, 2, 1, 0 },   /* the OCR detector's 2x2, stride 2 */
		{ { 2, 4, 5, 6 }, { 4, 3, 3, 3 }, 4, 2, 2, 1, 1 },
		{ { 1, 4, 5, 6 }, { 4, 2, 3, 2 }, 4, 1, 1, 2, 2 },
		{ { 1, 3, 4, 3, 5 }, { 3, 2, 2, 3, 2 }, 5, 1, 2, 1, 1 },
	};
	for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
		rt_isa_set((RtIsa)isa);
		for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++)
			for (int bias = 0; bias < 2; bias++) {
				int r = cs[c].rank, ns = r - 2;
				int64_t bd[1] = { cs[c].w[1] * cs[c].group }, st[3], dl[3], pd[6];
				RtTensor x = tensor(r, cs[c].x, 0), w = tensor(r, cs[c].w, 1), b = tensor(1, bd, 1);
				RtTensor *in[] = { &x, &w, bias ? &b : NULL };
				for (int i = 0; i < ns; i++)
					st[i] = cs[c].s, dl[i] = cs[c].d, pd[i] = cs[c].pad, pd[i + ns] = cs[c].pad + (i == 0 && cs[c].pad);
				Attr at[] = { kt_ai("group", cs[c].group), kt_ais("strides", ns, st), kt_ais("dilations", ns, dl),
					      kt_ais("pads", 2 * ns, pd) };
				same("ConvTranspose", in, 3, 1, at, 4, bias ? DT_BF16 : DT_INVALID);
				same("ConvTranspose", in, 3, 1, at, 4, DT_INVALID);
				rt_tensor_free(&x), rt_tensor_free(&w), rt_tensor_free(&b);
			}
	}
	rt_isa_set((RtIsa)-1);
}

/* Resize nearest in f32 (one or two resampled axes, up and down, every nearest mode) against the
 * double path. */
static void test_resize(void **state)
{
	static const char *ct[] = { "asymmetric", "half_pixel", "align_corners", "tf_half_pixel_for_nn" };
	static const char *nm[] = { "floor", "round_prefer_floor", "round_prefer_ceil", "ceil" };
	static const double sc[][4] = { { 1, 1, 2, 2 }, { 1, 1, 1, 3 }, { 1, 1, 0.5, 1.5 }, { 1, 2, 1, 1 } };
	RtTensor x = tensor(4, KT_DIMS(2, 3, 4, 5), 0);
	for (size_t s = 0; s < sizeof sc / sizeof sc[0]; s++)
		for (int k = 0; k < 4; k++) {
			RtTensor scales = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(sc[s][0], sc[s][1], sc[s][2], sc[s][3]));
			RtTensor *in[] = { &x, NULL, &scales };
			Attr at[] = { kt_as("mode", "nearest"), kt_as("coordinate_transformation_mode", ct[k]),
				      kt_as("nearest_mode", nm[k]) };
			same("Resize", in, 3, 1, at, 3, k == 1 ? DT_BF16 : DT_INVALID);
			rt_tensor_free(&scales);
		}
	rt_tensor_free(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary), cmocka_unit_test(test_unary), cmocka_unit_test(test_conv), cmocka_unit_test(test_conv_prepacked),
		cmocka_unit_test(test_pool_norm_softmax), cmocka_unit_test(test_resize), cmocka_unit_test(test_convtranspose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
