/* testsuite/unit/test_npy.c: cmocka tests of runtime/npy.h and runtime/safetensors.h.
 *
 * Round trips through real files, hand-built .npy images (v1, v2, every accepted dtype, and
 * each rejection: bad magic, Fortran order, big-endian, truncated, unknown dtype), hand-built
 * .safetensors files (dtypes, missing tensor, offsets out of bounds or inconsistent, bad
 * header length), and allocation-failure injection with no leaks (ASan build).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "runtime/npy.h"
#include "runtime/safetensors.h"

static char tmpdir[64];

static int setup(void **s)
{
	(void)s;
	strcpy(tmpdir, "/tmp/aicc_npyXXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **s)
{
	(void)s;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A v1 .npy image with the given header dict and data. */
static size_t make_npy(uint8_t *buf, int version, const char *dict, const void *data, size_t n)
{
	size_t hl = strlen(dict) + 1, off = version == 1 ? 10 : 12;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)version;
	buf[7] = 0;
	buf[8] = (uint8_t)hl;
	buf[9] = (uint8_t)(hl >> 8);
	if (version != 1)
		buf[10] = buf[11] = 0;
	memcpy(buf + off, dict, hl - 1);
	buf[off + hl - 1] = '\n';
	memcpy(buf + off + hl, data, n);
	return off + hl + n;
}

static void test_npy_parse(void **s)
{
	(void)s;
	uint8_t buf[512];
	RtTensor t;
	RtError e = { 0 };
	float f[6] = { 1, -2, 0.5f, 3, 4, 5 };
	size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f, sizeof f);
	assert_int_equal(rt_npy_parse(buf, n, "a.npy", &t, &e), 0);
	assert_int_equal(t.dtype, DT_F32);
	assert_int_equal(t.rank, 2);
	assert_true(t.dims[0] == 2 && t.dims[1] == 3 && rt_f32(&t)[1] == -2);
	rt_tensor_free(&t);
	n = make_npy(buf, 2, "{'shape': (6,), 'fortran_order': False, 'descr': '<f4'}", f, sizeof f);
	assert_int_equal(rt_npy_parse(buf, n, "a.npy", &t, &e), 0);
	assert_int_equal(t.rank, 1);
	rt_tensor_free(&t);
	int16_t i16[2] = { -5, 7 };
	n = make_npy(buf, 1, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", i16, 4);
	assert_int_equal(rt_npy_parse(buf, n, "a.npy", &t, &e), 0);
	assert_true(t.dtype == DT_I16 && rt_i64(&t)[0] == -5 && rt_i64(&t)[1] == 7);
	rt_tensor_free(&t);
	uint16_t h[2] = { 0x3C00, 0xC000 };   /* f16 1, -2 */
	n = make_npy(buf, 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", h, 4);
	assert_int_equal(rt_npy_parse(buf, n, "a.npy", &t, &e), 0);
	assert_true(t.dtype == DT_F16 && rt_f32(&t)[0] == 1 && rt_f32(&t)[1] == -2);
	rt_tensor_free(&t);
	uint16_t bf[1] = { 0x3FC0 };          /* bf16 1.5 */
	n = make_npy(buf, 1, "{'descr': '<V2', 'fortran_order': False, 'shape': (), }", bf, 2);
	if (rt_npy_parse(buf, n, "a.npy", &t, &e) < 0)
		fail_msg("%s", e.msg);
	assert_true(t.dtype == DT_BF16 && t.rank == 0 && rt_f32(&t)[0] == 1.5f);
	rt_tensor_free(&t);
	uint8_t b[3] = { 0, 1, 2 };
	n = make_npy(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b, 3);
	assert_int_equal(rt_npy_parse(buf, n, "a.npy", &t, &e), 0);
	assert_true(t.dtype == DT_BOOL && rt_i64(&t)[2] == 1);
	rt_tensor_free(&t);

	static const struct { const char *dict; size_t data; const char *msg; } bad[] = {
		{ "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, "Fortran-order" },
		{ "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24, "big-endian" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20, "truncated data" },
		{ "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, "unsupported dtype" },
		{ "{'descr': '<f4', 'shape': (2,), }", 8, "malformed" },
		{ "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, "rank" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		n = make_npy(buf, 1, bad[i].dict, f, bad[i].data);
		assert_int_equal(rt_npy_parse(buf, n, "x.npy", &t, &e), -1);
		assert_int_equal(e.code, RT_EUSER);
		assert_non_null(strstr(e.msg, bad[i].msg));
		assert_non_null(strstr(e.msg, "x.npy"));
	}
	assert_int_equal(rt_npy_parse("NOTNPY....", 10, "x.npy", &t, &e), -1);
	assert_non_null(strstr(e.msg, "bad magic"));
}

static void test_npy_roundtrip(void **s)
{
	(void)s;
	char path[128];
	snprintf(path, sizeof path, "%s/t.npy", tmpdir);
	static const DType dts[] = { DT_F32, DT_F64, DT_F16, DT_BF16, DT_I64, DT_I32, DT_I16,
				     DT_I8, DT_U8, DT_BOOL };
	for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
		RtTensor a, b;
		RtError e = { 0 };
		int64_t dims[3] = { 2, 3, 4 };
		assert_int_equal(rt_tensor_alloc(&a, dts[k], 3, dims, &e), 0);
		for (int64_t i = 0; i < a.n; i++)
			rt_set(&a, i, dts[k] == DT_BOOL ? (double)(i & 1) : dts[k] == DT_U8 ? (double)i : (double)i - 12.0);
		assert_int_equal(rt_npy_write(path, &a, &e), 0);
		if (rt_npy_read(path, &b, &e) < 0)
			fail_msg("%s", e.msg);
		assert_int_equal(b.dtype, dts[k]);
		assert_int_equal(b.rank, 3);
		for (int64_t i = 0; i < a.n; i++)
			assert_true(rt_get(&a, i) == rt_get(&b, i));
		rt_tensor_free(&a);
		rt_tensor_free(&b);
	}
	RtTensor t;
	RtError e = { 0 };
	snprintf(path, sizeof path, "%s/missing.npy", tmpdir);
	assert_int_equal(rt_npy_read(path, &t, &e), -1);
	assert_non_null(strstr(e.msg, "missing.npy"));
}

/* Writes a .safetensors file with the given JSON header and data. */
static void make_st(const char *path, const char *json, const void *data, size_t n, int64_t hl_override)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	uint64_t hl = hl_override >= 0 ? (uint64_t)hl_override : strlen(json);
	for (int i = 0; i < 8; i++)
		fputc((int)((hl >> (8 * i)) & 0xFF), f);
	fwrite(json, 1, strlen(json), f);
	fwrite(data, 1, n, f);
	fclose(f);
}

static void test_safetensors(void **s)
{
	(void)s;
	char path[128];
	snprintf(path, sizeof path, "%s/w.safetensors", tmpdir);
	uint8_t data[32];
	float w[4] = { 1, 2, 3, -4 };
	uint16_t bf[2] = { 0x3F80, 0xC000 };
	int32_t ix[2] = { -7, 9 };
	memcpy(data, w, 16);
	memcpy(data + 16, bf, 4);
	memcpy(data + 20, ix, 8);
	make_st(path, "{\"__metadata__\":{\"format\":\"pt\"},"
		"\"w\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[16,20]},"
		"\"i\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[20,28]},"
		"\"big\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]},"
		"\"odd\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]},"
		"\"c\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}", data, 28, -1);
	RtTensor t;
	RtError e = { 0 };
	assert_int_equal(rt_safetensors_read(path, "w", &t, &e), 0);
	assert_true(t.dtype == DT_F32 && t.rank == 2 && rt_f32(&t)[3] == -4);
	rt_tensor_free(&t);
	assert_int_equal(rt_safetensors_read(path, "b", &t, &e), 0);
	assert_true(t.dtype == DT_BF16 && rt_f32(&t)[0] == 1 && rt_f32(&t)[1] == -2);
	rt_tensor_free(&t);
	assert_int_equal(rt_safetensors_read(path, "i", &t, &e), 0);
	assert_true(t.dtype == DT_I32 && rt_i64(&t)[0] == -7);
	rt_tensor_free(&t);
	static const struct { const char *name, *msg; } bad[] = {
		{ "nope", "no tensor 'nope'" }, { "big", "beyond the end" },
		{ "odd", "need 12" }, { "c", "unsupported dtype C64" }, { "__metadata__", "no tensor" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(rt_safetensors_read(path, bad[i].name, &t, &e), -1);
		assert_non_null(strstr(e.msg, bad[i].msg));
		assert_non_null(strstr(e.msg, "w.safetensors"));
	}
	make_st(path, "{}", "", 0, 1000);
	assert_int_equal(rt_safetensors_read(path, "w", &t, &e), -1);
	assert_non_null(strstr(e.msg, "header length"));
	make_st(path, "{\"w\": [", "", 0, -1);
	assert_int_equal(rt_safetensors_read(path, "w", &t, &e), -1);
	assert_non_null(strstr(e.msg, "bad JSON"));
}

/* Every allocation failure is reported, leaks nothing, and the call succeeds once they stop. */
static void test_alloc_failures(void **s)
{
	(void)s;
	char path[128], npath[128];
	snprintf(path, sizeof path, "%s/f.safetensors", tmpdir);
	snprintf(npath, sizeof npath, "%s/f.npy", tmpdir);
	float w[4] = { 1, 2, 3, 4 };
	make_st(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", w, 16, -1);
	RtTensor t;
	RtError e = { 0 };
	int64_t dims[1] = { 4 };
	assert_int_equal(rt_tensor_alloc(&t, DT_F32, 1, dims, &e), 0);
	assert_int_equal(rt_npy_write(npath, &t, &e), 0);
	rt_tensor_free(&t);
	for (int which = 0; which < 2; which++) {
		int ok = 0;
		for (long k = 1; k < 100 && !ok; k++) {
			rt_alloc_fail_after(k);
			int r = which ? rt_safetensors_read(path, "w", &t, &e) : rt_npy_read(npath, &t, &e);
			rt_alloc_fail_after(0);
			if (r == 0) {
				ok = 1;
				rt_tensor_free(&t);
			} else if (e.code != RT_ENOMEM)
				fail_msg("which %d k %ld: %s", which, k, e.msg);
		}
		assert_true(ok);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_npy_parse),
		cmocka_unit_test(test_npy_roundtrip),
		cmocka_unit_test(test_safetensors),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
