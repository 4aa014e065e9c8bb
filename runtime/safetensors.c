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

/* Checks the entry of tensor `name` and reads its bytes into t. */
static int read_entry(FILE *f, const char *path, const char *name, json_t *ent, uint64_t data0,
		      uint64_t fsize, RtTensor *t, RtError *e)
{
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
	if (end > fsize - data0)
		return rt_errorf(e, RT_EUSER, "%s: tensor '%s': data [%llu, %llu) lies beyond the end "
				 "of the file", path, name, (unsigned long long)begin,
				 (unsigned long long)end);
	void *buf = rt_malloc(bytes ? (size_t)bytes : 1);
	if (!buf)
		return rt_errorf(e, RT_ENOMEM, "%s: tensor '%s': out of memory", path, name);
	int r = -1;
	if (fseeko(f, (off_t)(data0 + begin), SEEK_SET) != 0 || fread(buf, 1, (size_t)bytes, f) != bytes)
		rt_errorf(e, RT_EUSER, "%s: tensor '%s': read error", path, name);
	else if ((r = rt_tensor_from_raw(t, st_dtypes[k].kind, st_dtypes[k].size, (int)rank, dims,
					 buf, e)) < 0 && e && e->code == RT_ENOMEM)
		rt_errorf(e, RT_ENOMEM, "%s: tensor '%s': out of memory", path, name);
	rt_free(buf);
	return r;
}

int rt_safetensors_read(const char *path, const char *name, RtTensor *t, RtError *e)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return rt_errorf(e, RT_EUSER, "%s: cannot open: %s", path, strerror(errno));
	int r = -1;
	char *hdr = NULL;
	json_t *root = NULL;
	uint8_t lenb[8];
	uint64_t fsize = 0, hl = 0;
	if (fseeko(f, 0, SEEK_END) == 0) {
		off_t sz = ftello(f);
		fsize = sz > 0 ? (uint64_t)sz : 0;
	}
	rewind(f);
	if (fsize < 8 || fread(lenb, 1, 8, f) != 8) {
		rt_errorf(e, RT_EUSER, "%s: not a safetensors file (shorter than 8 bytes)", path);
		goto out;
	}
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | lenb[i];
	if (hl > fsize - 8 || hl > MAX_HEADER) {
		rt_errorf(e, RT_EUSER, "%s: header length %llu exceeds the file (%llu bytes)", path,
			  (unsigned long long)hl, (unsigned long long)fsize);
		goto out;
	}
	if (!(hdr = rt_malloc((size_t)hl + 1))) {
		rt_errorf(e, RT_ENOMEM, "%s: out of memory reading the header", path);
		goto out;
	}
	if (fread(hdr, 1, (size_t)hl, f) != hl) {
		rt_errorf(e, RT_EUSER, "%s: read error", path);
		goto out;
	}
	json_set_alloc_funcs(st_malloc, st_free);
	json_error_t je;
	st_oom = 0;
	root = json_loadb(hdr, (size_t)hl, 0, &je);
	if (!root && st_oom) {
		rt_errorf(e, RT_ENOMEM, "%s: out of memory parsing the header", path);
		goto out;
	}
	if (!root || !json_is_object(root)) {
		rt_errorf(e, RT_EUSER, "%s: bad JSON header: %s", path, root ? "not an object" : je.text);
		goto out;
	}
	json_t *ent = json_object_get(root, name);
	if (!ent || !json_is_object(ent) || strcmp(name, "__metadata__") == 0) {
		rt_errorf(e, RT_EUSER, "%s: no tensor '%s' (the file holds %zu entries)", path, name,
			  json_object_size(root));
		goto out;
	}
	r = read_entry(f, path, name, ent, 8 + hl, fsize, t, e);
out:
	json_decref(root);
	rt_free(hdr);
	fclose(f);
	return r;
}
