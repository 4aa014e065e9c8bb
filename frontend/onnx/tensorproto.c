/* frontend/onnx/tensorproto.c: ONNX TensorProto → RtTensor.
 *
 * Decodes every storage form onnx.proto allows for the dtypes aicc has: the typed fields
 * (float_data, int32_data holding narrow ints, bools and 16/8/4-bit float codes, int64_data,
 * double_data, uint64_data), little-endian raw_data, and external data (a file beside the model
 * with offset and length).  Narrow floats (f16, bf16, f8, f4, e8m0) are decoded exactly into f32
 * storage; subnormals are kept bit for bit.  Sizes are checked before anything is read, so a
 * malformed or hostile tensor gets a message, never an out-of-bounds access.  Also provides
 * fe_read_tensor_pb, the reader for `.pb` tensor files (ONNX test data, `aicc run --input`).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_int.h"

DType onnx_dtype(int t) { return rt_dtype_from_onnx(t); }   /* runtime/dtype.def's onnx column */

const char *onnx_dtype_name(int t)
{
	static const char *names[] = {
		"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
		"BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
		"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4",
		"FLOAT4E2M1", "FLOAT8E8M0",
	};
	if (t >= 0 && t < (int)(sizeof names / sizeof names[0]))
		return names[t];
	return "unknown";
}

/* ---- narrow float codes → value (exact) ---- */

/* A binary float with `eb` exponent bits, `mb` mantissa bits and bias 2^(eb-1)-1; `inf` says
 * whether the all-ones exponent means Inf/NaN (IEEE) or only S.1111.111 is NaN (E4M3 "fn"). */
static float decode_minifloat(unsigned code, int eb, int mb, int ieee_special)
{
	int sign = (code >> (eb + mb)) & 1;
	unsigned e = (code >> mb) & ((1u << eb) - 1);
	unsigned f = code & ((1u << mb) - 1);
	int bias = (1 << (eb - 1)) - 1;
	double v;
	if (ieee_special && e == (1u << eb) - 1)
		v = f ? NAN : INFINITY;
	else if (!ieee_special && eb == 4 && mb == 3 && e == 15 && f == 7)
		v = NAN;
	else if (e == 0)
		v = ldexp((double)f, 1 - bias - mb);
	else
		v = ldexp((double)(f | (1u << mb)), (int)e - bias - mb);
	return (float)(sign ? -v : v);
}

static float decode_bf16(unsigned code)
{
	uint32_t u = (uint32_t)code << 16;
	float x;
	memcpy(&x, &u, 4);
	return x;
}

/* The value of one element code of narrow float dtype d. */
static float decode_code(DType d, unsigned code)
{
	switch (d) {
	case DT_F16: return decode_minifloat(code & 0xffff, 5, 10, 1);
	case DT_BF16: return decode_bf16(code & 0xffff);
	case DT_F8E4M3: return decode_minifloat(code & 0xff, 4, 3, 0);
	case DT_F8E5M2: return decode_minifloat(code & 0xff, 5, 2, 1);
	case DT_F4E2M1: return decode_minifloat(code & 0xf, 2, 1, 0);
	case DT_E8M0: return (code & 0xff) == 0xff ? NAN : (float)ldexp(1.0, (int)(code & 0xff) - 127);
	default: return 0;
	}
}

/* Bits of one element in raw_data for ONNX type t (0: not decodable from raw bytes). */
static int raw_bits(int t)
{
	switch (t) {
	case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 32;
	case ONNX_DOUBLE: case ONNX_INT64: case ONNX_UINT64: return 64;
	case ONNX_FLOAT16: case ONNX_BFLOAT16: case ONNX_INT16: case ONNX_UINT16: return 16;
	case ONNX_INT8: case ONNX_UINT8: case ONNX_BOOL: case ONNX_FLOAT8E4M3FN:
	case ONNX_FLOAT8E5M2: case ONNX_FLOAT8E8M0: return 8;
	case ONNX_INT4: case ONNX_FLOAT4E2M1: return 4;
	default: return 0;
	}
}

static uint64_t load_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Stores element i of out from its little-endian raw encoding at `raw`. */
static void store_raw(RtTensor *out, int t, const uint8_t *raw, int64_t i)
{
	int bits = raw_bits(t);
	uint64_t u;
	if (bits == 4) {
		u = (raw[i / 2] >> (4 * (i % 2))) & 0xf;
	} else {
		u = load_le(raw + i * (bits / 8), bits / 8);
	}
	switch (t) {
	case ONNX_FLOAT: { uint32_t w = (uint32_t)u; float x; memcpy(&x, &w, 4); rt_f32(out)[i] = x; break; }
	case ONNX_DOUBLE: { double x; memcpy(&x, &u, 8); rt_f64(out)[i] = x; break; }
	case ONNX_INT64: rt_i64(out)[i] = (int64_t)u; break;
	case ONNX_INT32: rt_i64(out)[i] = (int32_t)(uint32_t)u; break;
	case ONNX_INT16: rt_i64(out)[i] = (int16_t)(uint16_t)u; break;
	case ONNX_INT8: rt_i64(out)[i] = (int8_t)(uint8_t)u; break;
	case ONNX_INT4: rt_i64(out)[i] = (int64_t)((u & 7) - (u & 8)); break;
	case ONNX_UINT8: case ONNX_UINT16: case ONNX_UINT32: case ONNX_UINT64: rt_i64(out)[i] = (int64_t)u; break;
	case ONNX_BOOL: rt_i64(out)[i] = u != 0; break;
	default: rt_f32(out)[i] = decode_code(out->dtype, (unsigned)u); break;
	}
}

/* Stores element i from the typed field that onnx.proto assigns to type t. */
static void store_typed(RtTensor *out, int t, const Onnx__TensorProto *tp, int64_t i)
{
	switch (t) {
	case ONNX_FLOAT: rt_f32(out)[i] = tp->float_data[i]; break;
	case ONNX_DOUBLE: rt_f64(out)[i] = tp->double_data[i]; break;
	case ONNX_INT64: rt_i64(out)[i] = tp->int64_data[i]; break;
	case ONNX_INT32: case ONNX_INT16: case ONNX_INT8: case ONNX_UINT8:
		rt_i64(out)[i] = tp->int32_data[i];
		break;
	case ONNX_UINT16: rt_i64(out)[i] = (uint16_t)tp->int32_data[i]; break;
	case ONNX_UINT32: case ONNX_UINT64: rt_i64(out)[i] = (int64_t)tp->uint64_data[i]; break;
	case ONNX_BOOL: rt_i64(out)[i] = tp->int32_data[i] != 0; break;
	case ONNX_INT4: {
		unsigned u = ((unsigned)tp->int32_data[i / 2] >> (4 * (i % 2))) & 0xf;
		rt_i64(out)[i] = (int64_t)(u & 7) - (int64_t)(u & 8);
		break;
	}
	case ONNX_FLOAT4E2M1:
		rt_f32(out)[i] = decode_code(out->dtype, ((unsigned)tp->int32_data[i / 2] >> (4 * (i % 2))) & 0xf);
		break;
	default: rt_f32(out)[i] = decode_code(out->dtype, (unsigned)tp->int32_data[i]); break;
	}
}

/* The number of entries type t needs in its typed field for n elements, and that field's
 * actual count. */
static void typed_counts(const Onnx__TensorProto *tp, int t, int64_t n, int64_t *need, int64_t *have)
{
	*need = n;
	switch (t) {
	case ONNX_FLOAT: *have = (int64_t)tp->n_float_data; break;
	case ONNX_DOUBLE: *have = (int64_t)tp->n_double_data; break;
	case ONNX_INT64: *have = (int64_t)tp->n_int64_data; break;
	case ONNX_UINT32: case ONNX_UINT64: *have = (int64_t)tp->n_uint64_data; break;
	case ONNX_INT4: case ONNX_FLOAT4E2M1:
		*need = (n + 1) / 2;
		*have = (int64_t)tp->n_int32_data;
		break;
	default: *have = (int64_t)tp->n_int32_data; break;
	}
}

/* Reads `len` bytes at `off` of external file `loc` (relative to dir) into a new buffer. */
static uint8_t *read_external(const char *dir, const char *loc, int64_t off, int64_t len, RtError *e)
{
	if (!dir)
		return rt_errorf(e, RT_EUSER, "external data is not allowed here"), NULL;
	if (!loc || !*loc || loc[0] == '/' || strstr(loc, ".."))
		return rt_errorf(e, RT_EUSER, "external data location '%s' must be a relative path "
				 "inside the model's directory", loc ? loc : ""), NULL;
	size_t pl = strlen(dir) + strlen(loc) + 2;
	char *path = malloc(pl);
	if (!path)
		return rt_errorf(e, RT_ENOMEM, "out of memory"), NULL;
	snprintf(path, pl, "%s/%s", dir, loc);
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	if (!f) {
		rt_errorf(e, RT_EUSER, "cannot open external data file '%s': %s", path, strerror(errno));
		goto out;
	}
	if (fseeko(f, 0, SEEK_END) != 0) {
		rt_errorf(e, RT_EUSER, "cannot seek in '%s'", path);
		goto out;
	}
	int64_t size = (int64_t)ftello(f);
	if (off < 0 || len < 0 || off > size || len > size - off) {
		rt_errorf(e, RT_EUSER, "external data '%s' holds %lld bytes; offset %lld + length %lld "
			  "runs past its end", path, (long long)size, (long long)off, (long long)len);
		goto out;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf) {
		rt_errorf(e, RT_ENOMEM, "out of memory reading '%s'", path);
		goto out;
	}
	if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		rt_errorf(e, RT_EUSER, "cannot read %lld bytes from '%s'", (long long)len, path);
		free(buf);
		buf = NULL;
	}
out:
	if (f)
		fclose(f);
	free(path);
	return buf;
}

/* Fetches external data for tp: location, offset and length keys (length defaults to `need`). */
static uint8_t *external_bytes(const Onnx__TensorProto *tp, const char *dir, int64_t need, RtError *e)
{
	const char *loc = NULL;
	int64_t off = 0, len = need;
	for (size_t i = 0; i < tp->n_external_data; i++) {
		const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
		if (!k || !v)
			continue;
		if (strcmp(k, "location") == 0)
			loc = v;
		else if (strcmp(k, "offset") == 0)
			off = strtoll(v, NULL, 10);
		else if (strcmp(k, "length") == 0)
			len = strtoll(v, NULL, 10);
	}
	if (len != need)
		return rt_errorf(e, RT_EUSER, "external data length %lld does not match the %lld bytes "
				 "the tensor's shape needs", (long long)len, (long long)need), NULL;
	return read_external(dir, loc, off, len, e);
}

int onnx_tensor_decode(const Onnx__TensorProto *tp, const char *dir, RtTensor *out, RtError *e)
{
	memset(out, 0, sizeof *out);
	int t = tp->has_data_type ? tp->data_type : 0;
	DType dt = onnx_dtype(t);
	if (dt == DT_INVALID)
		return rt_errorf(e, RT_EUSER, "tensor data type %s (%d) is not supported",
				 onnx_dtype_name(t), t);
	if (tp->n_dims > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "tensor rank %zu exceeds the maximum %d", tp->n_dims, RT_MAX_RANK);
	if (tp->segment)
		return rt_errorf(e, RT_EUSER, "segmented tensors are not supported");
	/* Count the elements and check the data is all there before allocating anything, so a
	 * tensor that claims huge dims without the bytes to back them is refused cheaply. */
	int64_t dims[RT_MAX_RANK], n = 1;
	for (size_t i = 0; i < tp->n_dims; i++) {
		dims[i] = tp->dims[i];
		if (dims[i] < 0 || (dims[i] && n > INT64_MAX / 8 / dims[i]))
			return rt_errorf(e, RT_EUSER, "tensor dim %zu is negative or the element count "
					 "overflows", i);
		n *= dims[i];
	}
	int bits = raw_bits(t);
	int64_t rawbytes = bits == 4 ? (n + 1) / 2 : n * (bits / 8);
	const uint8_t *raw = NULL;
	uint8_t *ext = NULL;
	if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		if (!(raw = ext = external_bytes(tp, dir, rawbytes, e)))
			return -1;
	} else if (tp->has_raw_data) {
		if ((int64_t)tp->raw_data.len != rawbytes)
			return rt_errorf(e, RT_EUSER, "raw_data holds %zu bytes, the tensor needs %lld",
					 tp->raw_data.len, (long long)rawbytes);
		raw = tp->raw_data.data;
	} else {
		int64_t need, have;
		typed_counts(tp, t, n, &need, &have);
		if (need != have)
			return rt_errorf(e, RT_EUSER, "tensor of %lld elements has %lld values",
					 (long long)n, (long long)have);
	}
	if (rt_tensor_alloc(out, dt, (int)tp->n_dims, dims, e) < 0) {
		free(ext);
		return -1;
	}
	if (raw) {
		for (int64_t i = 0; i < n; i++)
			store_raw(out, t, raw, i);
	} else {
		for (int64_t i = 0; i < n; i++)
			store_typed(out, t, tp, i);
	}
	free(ext);
	return 0;
}

/* Reads the whole file at path into a malloc'd buffer. */
static uint8_t *slurp(const char *path, size_t *len, RtError *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return rt_errorf(e, RT_EUSER, "%s: cannot open: %s", path, strerror(errno)), NULL;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *nb = realloc(buf, cap *= 2);
		if (!nb)
			free(buf);
		buf = nb;
	}
	int err = ferror(f);
	fclose(f);
	if (!buf)
		return rt_errorf(e, RT_ENOMEM, "%s: out of memory", path), NULL;
	if (err) {
		free(buf);
		return rt_errorf(e, RT_EUSER, "%s: read error", path), NULL;
	}
	*len = n;
	return buf;
}

uint8_t *onnx_slurp(const char *path, size_t *len, RtError *e) { return slurp(path, len, e); }

/* Whether buf reads as an onnx SequenceProto or OptionalProto (onnx-data.proto): field 1 a
 * printable name, field 2 elem_type 1..5 (tensor, sparse tensor, sequence, map, optional), then
 * length-delimited values.  A TensorProto has the same field numbers, so this is only asked
 * after the bytes failed to decode as a tensor. */
static int looks_like_container(const uint8_t *b, size_t n)
{
	size_t i = 0;
	int name = 0, elem = 0;
	while (i < n) {
		uint64_t key = 0, v = 0;
		for (int sh = 0; i < n && sh < 64; sh += 7) {
			key |= (uint64_t)(b[i] & 0x7f) << sh;
			if (!(b[i++] & 0x80))
				break;
		}
		int field = (int)(key >> 3), wire = (int)(key & 7);
		if (wire == 0) {
			for (int sh = 0; i < n && sh < 64; sh += 7) {
				v |= (uint64_t)(b[i] & 0x7f) << sh;
				if (!(b[i++] & 0x80))
					break;
			}
			if (field == 2)
				elem = v >= 1 && v <= 5;
		} else if (wire == 2) {
			for (int sh = 0; i < n && sh < 64; sh += 7) {
				v |= (uint64_t)(b[i] & 0x7f) << sh;
				if (!(b[i++] & 0x80))
					break;
			}
			if (v > n - i)
				return 0;
			if (field == 1) {
				name = 1;
				for (size_t k = i; k < i + v; k++)
					name &= b[k] >= 0x20 && b[k] < 0x7f;
			}
			i += v;
		} else {
			return 0;
		}
		if (field == 2)
			break;
	}
	return name && elem;
}

int fe_read_tensor_pb(const char *path, RtTensor *t, char **name, RtError *e)
{
	size_t len = 0;
	uint8_t *buf = slurp(path, &len, e);
	if (name)
		*name = NULL;
	if (!buf)
		return -1;
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
	int container = looks_like_container(buf, len);
	free(buf);
	if (!tp && container)
		goto container;
	if (!tp)
		return rt_errorf(e, RT_EUSER, "%s: not a serialized onnx.TensorProto", path);
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		*slash = 0;
	int rc = onnx_tensor_decode(tp, slash ? dir : ".", t, e);
	if (rc < 0 && container) {
		free(dir);
		onnx__tensor_proto__free_unpacked(tp, NULL);
		goto container;
	}
	if (rc < 0) {
		char msg[sizeof e->msg];
		memcpy(msg, e->msg, sizeof msg);
		rt_errorf(e, e->code, "%s: %.900s", path, msg);
	} else if (name && tp->name && *tp->name) {
		*name = strdup(tp->name);
	}
	free(dir);
	onnx__tensor_proto__free_unpacked(tp, NULL);
	return rc;
container:
	return rt_errorf(e, RT_EUSER, "%s: holds an ONNX sequence, map or optional value "
			 "(SequenceProto/OptionalProto), not a tensor: aicc supports tensors only", path);
}
