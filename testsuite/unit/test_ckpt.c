/* testsuite/unit/test_ckpt.c: cmocka tests of partition-agnostic checkpoints (runtime/ckpt.h):
 * box intersection and copies worked by hand, logical names of decorated constants, and a
 * checkpoint written in one tiling (column halves) read back in another (row thirds, a corner
 * box that straddles every slice) element for element, with the manifest's checks (a damaged
 * byte, a missing file, a tensor of another shape, overlapping slices). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/ckpt.h"

static RtBox box2(int64_t o0, int64_t e0, int64_t o1, int64_t e1)
{
	RtBox b = { .rank = 2, .off = { o0, o1 }, .ext = { e0, e1 } };
	return b;
}

static void boxes(void **state)
{
	(void)state;
	RtBox a = box2(0, 4, 2, 4), b = box2(2, 4, 0, 3), r;
	assert_int_equal(rt_box_intersect(&a, &b, &r), 1);          /* rows 2..3, cols 2..2 */
	assert_true(r.off[0] == 2 && r.ext[0] == 2 && r.off[1] == 2 && r.ext[1] == 1);
	assert_int_equal(rt_box_volume(&r), 2);
	RtBox c = box2(4, 1, 0, 6);
	assert_int_equal(rt_box_intersect(&a, &c, &r), 0);          /* touching, not overlapping */
	/* copy rows 1..2, cols 1..3 of a 3x4 source (values 10 i + j) into a 2x3 destination */
	RtTensor s, d;
	int64_t sd[2] = { 3, 4 }, dd[2] = { 2, 3 };
	assert_int_equal(rt_tensor_alloc(&s, DT_F32, 2, sd, NULL), 0);
	assert_int_equal(rt_tensor_alloc(&d, DT_F32, 2, dd, NULL), 0);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			rt_f32(&s)[i * 4 + j] = (float)(10 * i + j);
	RtBox sa = box2(0, 3, 0, 4), da = box2(1, 2, 1, 3);
	rt_box_copy(&d, &da, &s, &sa, &da);
	float want[6] = { 11, 12, 13, 21, 22, 23 };
	for (int k = 0; k < 6; k++)
		assert_true(rt_f32(&d)[k] == want[k]);
	rt_tensor_free(&s);
	rt_tensor_free(&d);
}

static void names(void **state)
{
	(void)state;
	const char *in[][2] = {
		{ "w1", "w1" },
		{ "w1.shard0.1", "w1" },
		{ "rope_cos@gpu2", "rope_cos" },
		{ "layer.stage1#3/wq.shard0.43", "layer#3/wq" },
		{ "layer.stage0#1/attn_norm", "layer#1/attn_norm" },
		{ "blk.stage2#7/moe.stage9#2/w.shard3.10@gpu5", "blk#7/moe#2/w" },
		{ "w.stage1", "w.stage1" },            /* no '#': a name, not a stage */
		{ "a.shardx.1", "a.shardx.1" },
		{ "emb.exp_avg", "emb.exp_avg" },
	};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		char *n = rt_ckpt_logical_name(in[i][0]);
		assert_string_equal(n, in[i][1]);
		rt_free(n);
	}
}

/* A 6x4 f32 tensor of values 100 r + c (and a bf16 scalar-free i64 vector) written as two
 * column halves, read as row thirds and a straddling box. */
static void write_read(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_ckpt.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char ck[128];
	snprintf(ck, sizeof ck, "%s/ck", dir);
	RtTensor half[2], iv;
	int64_t hd[2] = { 6, 2 }, vd[1] = { 3 }, full[2] = { 6, 4 };
	for (int h = 0; h < 2; h++) {
		assert_int_equal(rt_tensor_alloc(&half[h], DT_F32, 2, hd, NULL), 0);
		for (int r = 0; r < 6; r++)
			for (int c = 0; c < 2; c++)
				rt_f32(&half[h])[r * 2 + c] = (float)(100 * r + 2 * h + c);
	}
	assert_int_equal(rt_tensor_alloc(&iv, DT_I64, 1, vd, NULL), 0);
	for (int i = 0; i < 3; i++)
		rt_i64(&iv)[i] = (INT64_C(1) << 60) + i;    /* beyond a double's 2^53 */
	RtCkptPut put[3] = {
		{ .name = "w", .file = "gpu0.safetensors", .rank = 2, .full = { 6, 4 }, .box = box2(0, 6, 0, 2), .t = &half[0] },
		{ .name = "w", .file = "gpu1.safetensors", .rank = 2, .full = { 6, 4 }, .box = box2(0, 6, 2, 2), .t = &half[1] },
		{ .name = "step", .file = "gpu0.safetensors", .rank = 1, .full = { 3 }, .box = { .rank = 1, .ext = { 3 } }, .t = &iv },
	};
	RtError e = { 0 };
	int64_t bytes = 0;
	assert_int_equal(rt_ckpt_write(ck, put, 3, &bytes, &e), 0);
	assert_int_equal(bytes, 6 * 4 * 4 + 3 * 8);
	/* writing again replaces the checkpoint */
	assert_int_equal(rt_ckpt_write(ck, put, 3, NULL, &e), 0);
	RtCkpt c;
	assert_int_equal(rt_ckpt_read(ck, &c, &e), 0);
	assert_int_equal(c.ntensors, 2);
	assert_int_equal(c.tensors[0].nslices, 2);
	assert_string_equal(c.tensors[0].slices[1].key, "w[0:6,2:4]");
	for (int third = 0; third < 3; third++) {
		RtBox b = box2(2 * third, 2, 0, 4);
		RtTensor t;
		assert_int_equal(rt_ckpt_region(&c, "w", DT_F32, 2, full, &b, &t, &e), 0);
		for (int r = 0; r < 2; r++)
			for (int k = 0; k < 4; k++)
				assert_true(rt_f32(&t)[r * 4 + k] == (float)(100 * (2 * third + r) + k));
		rt_tensor_free(&t);
	}
	RtBox mid = box2(1, 3, 1, 2);
	RtTensor t;
	assert_int_equal(rt_ckpt_region(&c, "w", DT_F32, 2, full, &mid, &t, &e), 0);
	assert_true(rt_f32(&t)[0] == 101 && rt_f32(&t)[1] == 102 && rt_f32(&t)[5] == 302);
	rt_tensor_free(&t);
	RtBox all = { .rank = 1, .ext = { 3 } };
	assert_int_equal(rt_ckpt_region(&c, "step", DT_I64, 1, vd, &all, &t, &e), 0);
	assert_true(rt_i64(&t)[2] == (INT64_C(1) << 60) + 2);
	rt_tensor_free(&t);
	/* another model: the shape is named */
	int64_t other[2] = { 6, 5 };
	assert_int_equal(rt_ckpt_region(&c, "w", DT_F32, 2, other, &mid, &t, &e), -1);
	assert_non_null(strstr(e.msg, "tensor 'w' is f32[6, 4] in the checkpoint but f32[6, 5] in the plan"));
	assert_int_equal(rt_ckpt_region(&c, "v", DT_F32, 2, full, &mid, &t, &e), -1);
	assert_non_null(strstr(e.msg, "no tensor 'v'"));
	rt_ckpt_free(&c);
	/* a damaged byte in gpu1's slice: found when a region reads it, not before */
	char f[160];
	snprintf(f, sizeof f, "%s/gpu1.safetensors", ck);
	FILE *fp = fopen(f, "r+b");
	assert_non_null(fp);
	fseek(fp, -1, SEEK_END);
	fputc(0x7f, fp);
	fclose(fp);
	assert_int_equal(rt_ckpt_read(ck, &c, &e), 0);
	RtBox left = box2(0, 6, 0, 2), right = box2(0, 6, 2, 2);
	assert_int_equal(rt_ckpt_region(&c, "w", DT_F32, 2, full, &left, &t, &e), 0);
	rt_tensor_free(&t);
	assert_int_equal(rt_ckpt_region(&c, "w", DT_F32, 2, full, &right, &t, &e), -1);
	assert_non_null(strstr(e.msg, "checksum mismatch"));
	rt_ckpt_free(&c);
	unlink(f);
	assert_int_equal(rt_ckpt_read(ck, &c, &e), 0);
	assert_int_equal(rt_ckpt_region(&c, "w", DT_F32, 2, full, &right, &t, &e), -1);
	assert_non_null(strstr(e.msg, "checkpoint file missing"));
	rt_ckpt_free(&c);
	/* slices that overlap (both halves claiming column 1) are refused when read */
	RtCkptPut bad[2] = { put[0], put[1] };
	bad[1].box = box2(0, 6, 1, 2);
	assert_int_equal(rt_ckpt_write(ck, bad, 2, NULL, &e), 0);
	assert_int_equal(rt_ckpt_read(ck, &c, &e), -1);
	assert_non_null(strstr(e.msg, "overlaps another"));
	/* a file that is not a checkpoint directory is not replaced */
	snprintf(f, sizeof f, "%s/plain", dir);
	fp = fopen(f, "w");
	fclose(fp);
	assert_int_equal(rt_ckpt_write(f, put, 3, NULL, &e), -1);
	assert_non_null(strstr(e.msg, "exists and is not a checkpoint"));
	unlink(f);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	rt_tensor_free(&half[0]);
	rt_tensor_free(&half[1]);
	rt_tensor_free(&iv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(boxes),
		cmocka_unit_test(names),
		cmocka_unit_test(write_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
