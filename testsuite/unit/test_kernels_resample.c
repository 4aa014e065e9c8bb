/* testsuite/unit/test_kernels_resample.c: Resize, ConvTranspose and RoiAlign kernels on the cases ONNX's
 * node suite of Debian's libonnx-testdata (opsets <= 17) does not reach: antialias,
 * keep_aspect_ratio_policy and half_pixel_symmetric (opsets 18-19), grouped and negative-pad
 * ConvTranspose, and the errors.  Expected values are worked by hand from the formulas of the
 * ONNX reference (onnx/reference/ops/op_resize.py, op_conv_transpose.py); the antialias case is
 * the one in ONNX's resize.py generator (test_resize_downsample_scales_linear_antialias). */
#include "kernel_test.h"

static void test_resize_antialias(void **state)
{
	RtTensor X = KT_T(DT_F32, 4, KT_DIMS(1, 1, 4, 4), KT_VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
	RtTensor S = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(1, 1, 0.6, 0.6));
	RtTensor *in[] = { &X, NULL, &S };
	Attr at[] = { kt_as("mode", "linear"), kt_ai("antialias", 1) };
	Attrs as = { 2, at };
	Kt k = kt_run("Resize", in, 3, 1, &as, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(2.875, 4.5, 9.375, 11), 1e-6);
	kt_free(&k);
	/* without antialias: half_pixel taps at x_ori = 1/3 and 2 (ONNX's ..._scales_linear) */
	Attrs lin = { 1, at };
	k = kt_run("Resize", in, 3, 1, &lin, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 2, 2), KT_VALS(2.6666667, 4.3333333, 9.3333333, 11), 1e-6);
	kt_free(&k);
	rt_tensor_free(&X), rt_tensor_free(&S);
}

/* half_pixel_symmetric (opset 19) shifts by center*(1 - out/(scale*in)); on values 0..3 linear
 * interpolation returns x_ori itself: 2*(1-2/2.4) + (x+0.5)/0.6 - 0.5. */
static void test_resize_half_pixel_symmetric(void **state)
{
	RtTensor X = KT_T(DT_F32, 1, KT_DIMS(4), KT_VALS(0, 1, 2, 3));
	RtTensor S = KT_T(DT_F32, 1, KT_DIMS(1), KT_VALS(0.6));
	RtTensor *in[] = { &X, NULL, &S };
	Attr at[] = { kt_as("mode", "linear"), kt_as("coordinate_transformation_mode", "half_pixel_symmetric") };
	Attrs as = { 2, at };
	Kt k = kt_run("Resize", in, 3, 1, &as, NULL);
	double s = (double)0.6f, off = 2 * (1 - 2 / (s * 4));
	kt_expect(&k.out[0], 1, KT_DIMS(2), KT_VALS(off + 0.5 / s - 0.5, off + 1.5 / s - 0.5), 1e-6);
	kt_free(&k);
	rt_tensor_free(&X), rt_tensor_free(&S);
}

/* keep_aspect_ratio_policy with axes: one common scale, out = round_half_up(scale * in). */
static void test_resize_geometry(void **state)
{
	int64_t in[] = { 1, 1, 4, 4 }, axes[] = { 2, 3 }, sizes[] = { 7, 8 };
	Attr at[] = { kt_ais("axes", 2, axes), kt_as("keep_aspect_ratio_policy", "not_larger") };
	Attrs as = { 2, at };
	RtResizeGeom g;
	RtError e = { 0 };
	assert_int_equal(rt_resize_geometry(&as, 4, in, NULL, 0, NULL, 0, sizes, 2, &g, &e), 0);
	assert_int_equal(g.out[2], 7), assert_int_equal(g.out[3], 7), assert_int_equal(g.out[1], 1);
	assert_true(g.scale[3] == 1.75 && g.scale[0] == 1);
	at[1] = kt_as("keep_aspect_ratio_policy", "not_smaller");
	assert_int_equal(rt_resize_geometry(&as, 4, in, NULL, 0, NULL, 0, sizes, 2, &g, &e), 0);
	assert_int_equal(g.out[2], 8), assert_int_equal(g.out[3], 8);
	double sc[] = { 2, 2 };
	assert_int_equal(rt_resize_geometry(&as, 4, in, NULL, 0, sc, 2, sizes, 2, &g, &e), -1);
	assert_non_null(strstr(e.msg, "exactly one of scales and sizes"));
	int64_t bad[] = { 2, 2 };
	Attr dup[] = { kt_ais("axes", 2, bad) };
	Attrs ds = { 1, dup };
	assert_int_equal(rt_resize_geometry(&ds, 4, in, NULL, 0, sc, 2, NULL, 0, &g, &e), -1);
	assert_non_null(strstr(e.msg, "axis 2 is given twice"));
	/* tf_crop_and_resize with scales: out = floor(in * (roi_end - roi_start) * scale) */
	double roi[] = { 0, 0, 0.5, 0.25, 1, 1, 1, 0.75 }, s4[] = { 1, 1, 2, 3 };
	Attr cr[] = { kt_as("coordinate_transformation_mode", "tf_crop_and_resize") };
	Attrs cs = { 1, cr };
	assert_int_equal(rt_resize_geometry(&cs, 4, in, roi, 8, s4, 4, NULL, 0, &g, &e), 0);
	assert_int_equal(g.out[2], 4), assert_int_equal(g.out[3], 6);
}

/* tf_crop_and_resize outside [0, in-1] gives extrapolation_value; nearest copies exactly. */
static void test_resize_extrapolate_nearest(void **state)
{
	RtTensor X = KT_T(DT_F32, 1, KT_DIMS(3), KT_VALS(10, 20, 30));
	RtTensor R = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(-0.5, 1.5));
	RtTensor Z = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(5));
	RtTensor *in[] = { &X, &R, NULL, &Z };
	Attr at[] = { kt_as("coordinate_transformation_mode", "tf_crop_and_resize"), kt_af("extrapolation_value", -1),
		      kt_as("mode", "nearest") };
	Attrs as = { 3, at };
	/* x_ori = x*2*2/4 - 1 = x - 1: -1 (outside), 0, 1, 2, 3 (outside) */
	Kt k = kt_run("Resize", in, 4, 1, &as, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 1, KT_DIMS(5), KT_VALS(-1, 10, 20, 30, -1), 0);
	kt_free(&k);
	rt_tensor_free(&X), rt_tensor_free(&R), rt_tensor_free(&Z);
}

static void test_convtranspose_group_bias(void **state)
{
	/* 1-D, 2 channels, group 2, stride 2: channel 0 [1,2] through [1,1], channel 1 [3,4]
	 * through [1,-1], then biases 10 and 20 */
	RtTensor X = KT_T(DT_F32, 3, KT_DIMS(1, 2, 2), KT_VALS(1, 2, 3, 4));
	RtTensor W = KT_T(DT_F32, 3, KT_DIMS(2, 1, 2), KT_VALS(1, 1, 1, -1));
	RtTensor B = KT_T(DT_F32, 1, KT_DIMS(2), KT_VALS(10, 20));
	RtTensor *in[] = { &X, &W, &B };
	int64_t st[] = { 2 };
	Attr at[] = { kt_ai("group", 2), kt_ais("strides", 1, st) };
	Attrs as = { 2, at };
	Kt k = kt_run("ConvTranspose", in, 3, 1, &as, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 2, 4), KT_VALS(11, 11, 12, 12, 23, 17, 24, 16), 0);
	kt_free(&k);
	rt_tensor_free(&X), rt_tensor_free(&W), rt_tensor_free(&B);
}

/* output_shape past the full output: negative end pad, zeros appended; SAME_UPPER puts the odd
 * padding at the end, SAME_LOWER at the beginning. */
static void test_convtranspose_pads(void **state)
{
	RtTensor X = KT_T(DT_F32, 3, KT_DIMS(1, 1, 3), KT_VALS(1, 2, 3));
	RtTensor W = KT_T(DT_F32, 3, KT_DIMS(1, 1, 3), KT_VALS(1, 1, 1));
	RtTensor *in[] = { &X, &W };
	int64_t st[] = { 2 }, os[] = { 8 };
	Attr at[] = { kt_ais("strides", 1, st), kt_ais("output_shape", 1, os) };
	Attrs as = { 2, at };
	Kt k = kt_run("ConvTranspose", in, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 1, 8), KT_VALS(1, 1, 3, 2, 5, 3, 3, 0), 0);
	kt_free(&k);
	at[1] = kt_as("auto_pad", "SAME_UPPER");
	k = kt_run("ConvTranspose", in, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 1, 6), KT_VALS(1, 1, 3, 2, 5, 3), 0);
	kt_free(&k);
	at[1] = kt_as("auto_pad", "SAME_LOWER");
	k = kt_run("ConvTranspose", in, 2, 1, &as, NULL);
	kt_expect(&k.out[0], 3, KT_DIMS(1, 1, 6), KT_VALS(1, 3, 2, 5, 3, 3), 0);
	kt_free(&k);
	int64_t pd[] = { 4, 4 };
	at[1] = kt_ais("pads", 2, pd);
	k = kt_run("ConvTranspose", in, 2, 1, &as, NULL);
	assert_int_equal(k.rc, -1);
	assert_non_null(strstr(k.err.msg, "exceed the output length 7"));
	rt_tensor_free(&X), rt_tensor_free(&W);
}

/* RoiAlign's max mode and output_half_pixel, which the node suite (avg only) does not reach: on
 * X = [[1, 2], [3, 4]] the box (0, 0, 1, 1), one sample per bin at (0.5, 0.5) without the half-pixel
 * shift: corner terms 0.25 * {1, 2, 3, 4}, max 1, avg 2.5; with half_pixel the sample is at (0, 0):
 * X[0, 0] = 1.  A batch index beyond N is an error. */
static void test_roialign_modes(void **state)
{
	RtTensor X = KT_T(DT_F32, 4, KT_DIMS(1, 1, 2, 2), KT_VALS(1, 2, 3, 4));
	RtTensor R = KT_T(DT_F32, 2, KT_DIMS(1, 4), KT_VALS(0, 0, 1, 1));
	RtTensor B = KT_T(DT_I64, 1, KT_DIMS(1), KT_VALS(0));
	RtTensor *in[] = { &X, &R, &B };
	Attr at[] = { kt_as("coordinate_transformation_mode", "output_half_pixel"), kt_ai("sampling_ratio", 1), kt_as("mode", "max") };
	Attrs as = { 3, at };
	Kt k = kt_run("RoiAlign", in, 3, 1, &as, NULL);
	assert_int_equal(k.rc, 0);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 1), KT_VALS(1), 1e-6);
	kt_free(&k);
	Attrs avg = { 2, at };
	k = kt_run("RoiAlign", in, 3, 1, &avg, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 1), KT_VALS(2.5), 1e-6);
	kt_free(&k);
	at[0] = kt_as("coordinate_transformation_mode", "half_pixel");
	k = kt_run("RoiAlign", in, 3, 1, &avg, NULL);
	kt_expect(&k.out[0], 4, KT_DIMS(1, 1, 1, 1), KT_VALS(1), 1e-6);
	kt_free(&k);
	rt_set(&B, 0, 1);
	k = kt_run("RoiAlign", in, 3, 1, &avg, NULL);
	assert_int_equal(k.rc, -1);
	assert_non_null(strstr(k.err.msg, "batch index 1 of box 0 is outside [0, 1)"));
	rt_tensor_free(&X), rt_tensor_free(&R), rt_tensor_free(&B);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resize_antialias), cmocka_unit_test(test_resize_half_pixel_symmetric),
		cmocka_unit_test(test_resize_geometry), cmocka_unit_test(test_resize_extrapolate_nearest),
		cmocka_unit_test(test_convtranspose_group_bias), cmocka_unit_test(test_convtranspose_pads),
		cmocka_unit_test(test_roialign_modes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
