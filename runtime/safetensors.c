/* runtime/safetensors.c: the .safetensors reader of runtime/safetensors.h. */
#include "runtime/safetensors.h"
#include "runtime/npy.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

/* Limit on the JSON header (the reference implementation allows 100 MB). */
#define MAX_HEADER (100u << 20)

static const struct { const char *name; char kind; int size; } st_dtypes[] = {
	{ "F64", 'f', 8 }, { "F32", 'f', 4 }, { "F16", 'f', 2 }, { "BF16", 'b', 2 },
	{ "I64", 'i', 8 }, { "I32", 'i', 4 }, { "I16", 'i', 2 }, { "I8", 'i', 1 },
	{ "U8", 'u', 1 }, { "BOOL", '?', 1 },
};

/* jansson reports a failed allocation mid-parse as a syntax error; this flag tells them apart. */
static _Thread_local int st_oom;

static void *st_malloc(size_t n)
{
	void *p = rt_malloc(n);
	if (!p)
		st_oom = 1;
	return p;
}
static void st_free(void *p) { rt_free(p); }

struct RtSafetensors {
	const uint8_t *buf;
	size_t len;
	uint64_t data0;          /* where the data starts: 8 + header length */
	json_t *root;
	char *path;
};

RtSafetensors *rt_st_open(const void *buf, size_t len, const char *path, RtError *e)
{
	const uint8_t *b = buf;
	uint64_t hl = 0;
	if (len < 8) {
		rt_errorf(e, RT_EUSER, "%s: not a safetensors file (shorter than 8 bytes)", path);
		return NULL;
	}
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | b[i];
	if (hl > len - 8 || hl > MAX_HEADER) {
		rt_errorf(e, RT_EUSER, "%s: header length %llu exceeds the file (%llu bytes)", path,
			  (unsigned long long)hl, (unsigned long long)len);
		return NULL;
	}
	RtSafetensors *h = rt_calloc(1, sizeof *h);
	if (!h || !(h->path = rt_strdup(path))) {
		rt_free(h);
		rt_errorf(e, RT_ENOMEM, "%s: out of memory reading the header", path);
		return NULL;
	}
	json_set_alloc_funcs(st_malloc, st_free);
	json_error_t je;
	st_oom = 0;
	h->root = json_loadb((const char *)b + 8, (size_t)hl, 0, &je);
	if (!h->root && st_oom)
		rt_errorf(e, RT_ENOMEM, "%s: out of memory parsing the header", path);
	else if (!h->root || !json_is_object(h->root))
		rt_errorf(e, RT_EUSER, "%s: bad JSON header: %s", path, h->root ? "not an object" : je.text);
	else {
		h->buf = b;
		h->len = len;
		h->data0 = 8 + hl;
		return h;
	}
	rt_st_close(h);
	return NULL;
}

void rt_st_close(RtSafetensors *h)
{
	if (!h)
		return;
	json_decref(h->root);
	rt_free(h->path);
	rt_free(h);
}

int rt_st_tensor(const RtSafetensors *h, const char *name, int copy, RtTensor *t, const void **raw, size_t *nraw,
		 RtError *e)
{
	const char *path = h->path;
	json_t *ent = json_object_get(h->root, name);
	if (!ent || !json_is_object(ent) || strcmp(name, "__metadata__") == 0)
		return rt_errorf(e, RT_EUSER, "%s: no tensor '%s' (the file holds %zu entries)", path, name,
				 json_object_size(h->root));
	json_t *jd = json_object_get(ent, "dtype"), *js = json_object_get(ent, "shape"),
	       *jo = json_object_get(ent, "data_offsets");
	if (!json_is_string(jd) || !json_is_array(js) || !json_is_array(jo) || json_array_size(jo) != 2)
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': entry needs dtype, shape and "
				 "data_offsets [begin, end]", path, name);
	const char *ds = json_string_value(jd);
	int k = -1;
	for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
		if (strcmp(st_dtypes[i].name, ds) == 0)
			k = (int)i;
	if (k < 0)
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': unsupported dtype %s", path, name, ds);
	size_t rank = json_array_size(js);
	if (rank > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': rank %zu is above %d", path, name,
				 rank, RT_MAX_RANK);
	int64_t dims[RT_MAX_RANK];
	uint64_t n = 1;
	for (size_t i = 0; i < rank; i++) {
		json_t *v = json_array_get(js, i);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return rt_errorf(e, RT_EUSER, "%s: tensor '%s': bad shape", path, name);
		dims[i] = json_integer_value(v);
		if (dims[i] && n > (UINT64_MAX / 16) / (uint64_t)dims[i])
			return rt_errorf(e, RT_EUSER, "%s: tensor '%s': shape too large", path, name);
		n *= (uint64_t)dims[i];
	}
	json_t *b0 = json_array_get(jo, 0), *b1 = json_array_get(jo, 1);
	if (!json_is_integer(b0) || !json_is_integer(b1) || json_integer_value(b0) < 0 ||
	    json_integer_value(b1) < json_integer_value(b0))
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': bad data_offsets", path, name);
	uint64_t begin = (uint64_t)json_integer_value(b0), end = (uint64_t)json_integer_value(b1);
	uint64_t bytes = n * (uint64_t)st_dtypes[k].size;
	if (end - begin != bytes)
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': data_offsets span %llu bytes, shape "
				 "and dtype need %llu", path, name, (unsigned long long)(end - begin),
				 (unsigned long long)bytes);
	if (end > h->len - h->data0)
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': data [%llu, %llu) lies beyond the end "
				 "of the file", path, name, (unsigned long long)begin,
				 (unsigned long long)end);
	const uint8_t *src = h->buf + h->data0 + begin;
	if (raw)
		*raw = src, *nraw = (size_t)bytes;
	int r = copy ? rt_tensor_from_raw(t, st_dtypes[k].kind, st_dtypes[k].size, (int)rank, dims, src, e)
		     : rt_raw_view(t, st_dtypes[k].kind, st_dtypes[k].size, (int)rank, dims, src, e);
	if (r < 0 && e && e->code == RT_ENOMEM)
		rt_errorf(e, RT_ENOMEM, "%s: tensor '%s': out of memory", path, name);
	return r;
}

int rt_safetensors_read(const char *path, const char *name, RtTensor *t, RtError *e)
{
	RtMapped m;
	if (rt_file_map(path, &m, e) < 0)
		return -1;
	RtSafetensors *h = rt_st_open(m.addr ? m.addr : "", m.len, path, e);
	int r = h ? rt_st_tensor(h, name, 1, t, NULL, NULL, e) : -1;
	rt_st_close(h);
	rt_file_unmap(&m);
	return r;
}

/* The safetensors dtype name files hold d in (the .npy writer's element choice). */
static const char *st_name_of(DType d)
{
	int size;
	char kind = rt_raw_kind(d, &size);
	for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
		if (st_dtypes[i].kind == kind && st_dtypes[i].size == size)
			return st_dtypes[i].name;
	return "F32";
}

int rt_safetensors_fwrite(FILE *f, int n, const char *const *names, const RtTensor *const *ts, int64_t *offsets,
			  uint64_t *sums, RtError *e)
{
	json_set_alloc_funcs(st_malloc, st_free);
	json_t *root = json_object();
	int *order = rt_malloc(((size_t)n + 1) * sizeof *order);
	int rc = root && order ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory writing safetensors");
	int m = 0;
	for (int size = 8; rc == 0 && size >= 1; size /= 2)     /* widest elements first: aligned */
		for (int i = 0; i < n; i++) {
			int z;
			rt_raw_kind(ts[i]->dtype, &z);
			if (z == size)
				order[m++] = i;
		}
	uint64_t off = 0;
	for (int j = 0; rc == 0 && j < m; j++) {
		const RtTensor *t = ts[order[j]];
		int z;
		rt_raw_kind(t->dtype, &z);
		json_t *ent = json_object(), *shape = json_array(), *offs = json_array();
		for (int d = 0; shape && d < t->rank; d++)
			json_array_append_new(shape, json_integer(t->dims[d]));
		uint64_t bytes = (uint64_t)t->n * (uint64_t)z;
		if (offs) {
			json_array_append_new(offs, json_integer((json_int_t)off));
			json_array_append_new(offs, json_integer((json_int_t)(off + bytes)));
		}
		if (offsets)
			offsets[order[j]] = (int64_t)off;
		off += bytes;
		if (!ent || !shape || !offs || json_object_set_new(ent, "dtype", json_string(st_name_of(t->dtype))) ||
		    json_object_set_new(ent, "shape", shape) || json_object_set_new(ent, "data_offsets", offs) ||
		    json_object_set_new(root, names[order[j]], ent))
			rc = rt_errorf(e, RT_ENOMEM, "out of memory writing safetensors");
	}
	char *hdr = rc == 0 ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	if (rc == 0 && !hdr)
		rc = rt_errorf(e, RT_ENOMEM, "out of memory writing safetensors");
	if (rc == 0) {
		size_t hl = strlen(hdr), pad = (64 - (8 + hl) % 64) % 64;    /* data 64-byte aligned */
		uint8_t lenb[8];
		for (int i = 0; i < 8; i++)
			lenb[i] = (uint8_t)((hl + pad) >> (8 * i));
		fwrite(lenb, 1, 8, f);
		fwrite(hdr, 1, hl, f);
		for (size_t i = 0; i < pad; i++)
			fputc(' ', f);
		for (int j = 0; j < m && !ferror(f) && rc == 0; j++) {
			const RtTensor *t = ts[order[j]];
			int z;
			rt_raw_kind(t->dtype, &z);
			size_t bytes = (size_t)t->n * (size_t)z;
			uint8_t *raw = sums ? rt_malloc(bytes ? bytes : 1) : NULL;
			if (sums && !raw) {
				rc = rt_errorf(e, RT_ENOMEM, "out of memory writing safetensors");
				break;
			}
			if (raw) {      /* encoded once: the bytes written are the bytes hashed */
				rt_raw_encode(t, 0, t->n, raw);
				sums[order[j]] = rt_checksum(raw, bytes);
				fwrite(raw, 1, bytes, f);
				rt_free(raw);
			} else if (rt_raw_fwrite(f, t) < 0)
				break;
		}
		if (rc == 0 && ferror(f))
			rc = rt_errorf(e, RT_EUSER, "write error: %s", strerror(errno));
	}
	rt_free(hdr);
	json_decref(root);
	rt_free(order);
	return rc;
}
