/* runtime/ckpt.c: partition-agnostic checkpoints (runtime/ckpt.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/ckpt.h"
#include "runtime/npy.h"
#include "runtime/safetensors.h"

#define MANIFEST "manifest.json"
#define FORMAT "aicc-checkpoint"
#define VERSION 1

/* ---- boxes ---- */
int64_t rt_box_volume(const RtBox *b)
{
	int64_t v = 1;
	for (int i = 0; i < b->rank; i++)
		v *= b->ext[i];
	return v;
}

int rt_box_intersect(const RtBox *a, const RtBox *b, RtBox *out)
{
	RtBox r = { .rank = a->rank };
	int any = 1;
	for (int i = 0; i < a->rank; i++) {
		int64_t lo = a->off[i] > b->off[i] ? a->off[i] : b->off[i];
		int64_t ha = a->off[i] + a->ext[i], hb = b->off[i] + b->ext[i], hi = ha < hb ? ha : hb;
		r.off[i] = lo;
		r.ext[i] = hi > lo ? hi - lo : 0;
		any = any && hi > lo;
	}
	*out = r;
	return any;
}

/* Row-major element offset of logical point pt (axis values) inside a tensor holding box h. */
int64_t rt_box_index(const RtBox *h, const int64_t *pt)
{
	int64_t k = 0;
	for (int i = 0; i < h->rank; i++)
		k = k * h->ext[i] + (pt[i] - h->off[i]);
	return k;
}

void rt_box_copy(RtTensor *dst, const RtBox *da, const RtTensor *src, const RtBox *sa, const RtBox *r)
{
	int rank = r->rank;
	if (rt_box_volume(r) == 0)
		return;
	size_t z = rt_dtypes[dst->dtype].storage == S_F32 ? 4 : 8;
	/* the innermost axes that r, sa and da all cover whole merge into one run with the last
	 * partial one */
	int j = rank > 0 ? rank - 1 : 0;
	while (j > 0 && r->ext[j] == sa->ext[j] && r->ext[j] == da->ext[j])
		j--;
	int64_t run = 1;
	for (int i = j; i < rank; i++)
		run *= r->ext[i];
	int64_t pt[RT_MAX_RANK];
	for (int i = 0; i < rank; i++)
		pt[i] = r->off[i];
	for (;;) {
		memcpy((char *)dst->data + (size_t)rt_box_index(da, pt) * z,
		       (const char *)src->data + (size_t)rt_box_index(sa, pt) * z, (size_t)run * z);
		int i = j - 1;
		for (; i >= 0; i--) {
			if (++pt[i] < r->off[i] + r->ext[i])
				break;
			pt[i] = r->off[i];
		}
		if (i < 0)
			return;
	}
}

/* ---- logical names ---- */
static int all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

char *rt_ckpt_logical_name(const char *buf)
{
	char *s = rt_strdup(buf);
	if (!s)
		return NULL;
	char *last = strrchr(s, '/');
	char *at = strrchr(last ? last : s, '@');
	if (at)
		*at = 0;
	/* .shardK.N at the end */
	char *p2 = strrchr(last ? last : s, '.');
	if (p2 && all_digits(p2 + 1, strlen(p2 + 1))) {
		char *p1 = p2 - 1;
		while (p1 > s && *p1 != '.')
			p1--;
		if (*p1 == '.' && strncmp(p1, ".shard", 6) == 0 && all_digits(p1 + 6, (size_t)(p2 - p1 - 6)))
			*p1 = 0;
	}
	/* .stageK before '#' in every component but the last */
	char *w = s;
	for (const char *r = s; *r;) {
		const char *st = strstr(r, ".stage");
		const char *slash = strchr(r, '/');
		if (st && slash && st < slash) {
			const char *d = st + 6, *q = d;
			while (*q >= '0' && *q <= '9')
				q++;
			if (q > d && *q == '#') {
				memmove(w, r, (size_t)(st - r));
				w += st - r;
				r = q;
				continue;
			}
		}
		size_t n = slash ? (size_t)(slash - r) + 1 : strlen(r);
		memmove(w, r, n);
		w += n;
		r += n;
	}
	*w = 0;
	return s;
}

static void box_str(const RtBox *b, char *out, size_t n)
{
	size_t k = 0;
	out[0] = 0;
	for (int i = 0; i < b->rank && k < n; i++)
		k += (size_t)snprintf(out + k, n - k, "%s%" PRId64 ":%" PRId64, i ? "," : "", b->off[i],
				      b->off[i] + b->ext[i]);
}

void rt_shape_str(DType dt, int rank, const int64_t *d, char *out, size_t n)
{
	size_t k = (size_t)snprintf(out, n, "%s[", rt_dtype_name(dt));
	for (int i = 0; i < rank && k < n; i++)
		k += (size_t)snprintf(out + k, n - k, "%s%" PRId64, i ? ", " : "", d[i]);
	if (k < n)
		snprintf(out + k, n - k, "]");
}

/* ---- the state of a plan ---- */
int rt_plan_slice_same_type(const RtPlanSlice *a, const RtPlanSlice *b, char *as, char *bs, size_t n)
{
	int same = a->dtype == b->dtype && a->rank == b->rank;
	for (int k = 0; same && k < a->rank; k++)
		same = a->full[k] == b->full[k];
	if (!same && as && bs) {
		rt_shape_str(a->dtype, a->rank, a->full, as, n);
		rt_shape_str(b->dtype, b->rank, b->full, bs, n);
	}
	return same;
}

void rt_plan_slices_free(RtPlanSlice *s, int n)
{
	for (int i = 0; s && i < n; i++)
		rt_free(s[i].name);
	rt_free(s);
}

int rt_plan_slices(const Plan *p, RtPlanSlice **out, int *n, RtError *e)
{
	RtPlanSlice *s = rt_calloc((size_t)p->nconsts + 1, sizeof *s);
	*out = NULL;
	*n = 0;
	if (!s)
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	for (int i = 0; i < p->nconsts; i++) {
		const PlanConst *c = &p->consts[i];
		const PlanBuffer *b = &p->buffers[c->buffer];
		RtPlanSlice *x = &s[i];
		if (!(x->name = rt_ckpt_logical_name(b->name))) {
			rt_plan_slices_free(s, i);
			return rt_errorf(e, RT_ENOMEM, "out of memory");
		}
		const char *leaf = strrchr(x->name, '/');
		leaf = leaf ? leaf + 1 : x->name;
		x->state = !((c->kind == PINIT_INLINE || c->kind == PINIT_FILL || c->kind == PINIT_DATA) &&
			     leaf[0] == 'c' && leaf[1] == '.' && all_digits(leaf + 2, strlen(leaf + 2)));
		x->cons = i;
		x->buffer = c->buffer;
		x->device = p->spaces[b->space].device;
		x->dtype = b->dtype;
		x->rank = x->box.rank = b->rank;
		for (int k = 0; k < b->rank; k++) {
			x->full[k] = k == c->shard_axis ? c->shard_full : b->dims[k];
			x->box.off[k] = k == c->shard_axis ? c->shard_off : 0;
			x->box.ext[k] = b->dims[k];
		}
		for (int j = 0; j < i; j++) {
			const RtPlanSlice *y = &s[j];
			if (strcmp(y->name, x->name) != 0)
				continue;
			char a[256], bb[256];
			if (!rt_plan_slice_same_type(y, x, a, bb, sizeof a)) {
				rt_errorf(e, RT_EUSER, "%s: constants '%s' and '%s' are both parts of tensor '%s' but give "
					  "it different types (%s and %s)", p->file ? p->file : "<plan>",
					  p->buffers[y->buffer].name, b->name, x->name, a, bb);
				rt_plan_slices_free(s, i + 1);
				return -1;
			}
			break;
		}
	}
	*out = s;
	*n = p->nconsts;
	return 0;
}

/* ---- jansson through the runtime's allocator ---- */
static void *ck_malloc(size_t n) { return rt_malloc(n); }
static void ck_free(void *p) { rt_free(p); }

/* ---- reading ---- */
struct RtCkptFile {
	char *name;
	RtMapped map;
	RtSafetensors *st;
};

void rt_ckpt_free(RtCkpt *c)
{
	for (int i = 0; i < c->ntensors; i++) {
		RtCkptTensor *t = &c->tensors[i];
		for (int k = 0; k < t->nslices; k++) {
			rt_free(t->slices[k].file);
			rt_free(t->slices[k].key);
		}
		rt_free(t->slices);
		rt_free(t->name);
	}
	for (int i = 0; i < c->nfiles; i++) {
		rt_st_close(c->files[i].st);
		rt_file_unmap(&c->files[i].map);
		rt_free(c->files[i].name);
	}
	rt_free(c->files);
	rt_free(c->tensors);
	rt_free(c->dir);
	memset(c, 0, sizeof *c);
}

const RtCkptTensor *rt_ckpt_find(const RtCkpt *c, const char *name)
{
	for (int i = 0; i < c->ntensors; i++)
		if (strcmp(c->tensors[i].name, name) == 0)
			return &c->tensors[i];
	return NULL;
}

/* Reads a JSON array of rank non-negative integers into v. */
static int ints_of(json_t *a, int rank, int64_t *v)
{
	if (!json_is_array(a) || (int)json_array_size(a) != rank)
		return -1;
	for (int i = 0; i < rank; i++) {
		json_t *x = json_array_get(a, (size_t)i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > (INT64_C(1) << 56))
			return -1;
		v[i] = json_integer_value(x);
	}
	return 0;
}

static int bad(RtError *e, const char *path, const char *what, const char *name)
{
	return rt_errorf(e, RT_EUSER, "%s: error: %s%s%s%s", path, what, name ? " (tensor '" : "", name ? name : "",
			 name ? "')" : "");
}

/* One manifest entry into t; path names the manifest for errors. */
static int read_tensor(json_t *j, RtCkptTensor *t, const char *path, RtError *e)
{
	json_t *jn = json_object_get(j, "name"), *jd = json_object_get(j, "dtype"), *js = json_object_get(j, "shape"),
	       *jl = json_object_get(j, "slices");
	if (!json_is_string(jn) || !json_is_string(jd) || !json_is_array(js) || !json_is_array(jl))
		return bad(e, path, "every tensor needs a name, a dtype, a shape and slices", NULL);
	const char *name = json_string_value(jn);
	if (!(t->name = rt_strdup(name)))
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	if ((t->dtype = rt_dtype_lookup(json_string_value(jd))) == DT_INVALID)
		return bad(e, path, "unknown dtype", name);
	t->rank = (int)json_array_size(js);
	if (t->rank > RT_MAX_RANK || ints_of(js, t->rank, t->dims) < 0)
		return bad(e, path, "bad shape", name);
	size_t ns = json_array_size(jl);
	if (!(t->slices = rt_calloc(ns + 1, sizeof *t->slices)))
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	int64_t vol = 0, full = 1;
	for (int i = 0; i < t->rank; i++)
		full *= t->dims[i];
	for (size_t k = 0; k < ns; k++) {
		json_t *s = json_array_get(jl, k);
		RtCkptSlice *x = &t->slices[t->nslices++];
		json_t *jf = json_object_get(s, "file"), *jk = json_object_get(s, "key"),
		       *jb = json_object_get(s, "byte_offset"), *jy = json_object_get(s, "bytes"),
		       *jx = json_object_get(s, "xxh3");
		x->box.rank = t->rank;
		if (ints_of(json_object_get(s, "offsets"), t->rank, x->box.off) < 0 ||
		    ints_of(json_object_get(s, "extents"), t->rank, x->box.ext) < 0 || !json_is_string(jf) ||
		    !json_is_string(jk) || !json_is_integer(jb) || !json_is_integer(jy) || !json_is_string(jx) ||
		    strlen(json_string_value(jx)) != 16)
			return bad(e, path, "a slice needs offsets and extents (one per axis), file, key, byte_offset, "
				   "bytes and xxh3 (16 hex digits)", name);
		const char *f = json_string_value(jf);
		if (!*f || strchr(f, '/') || strcmp(f, ".") == 0 || strcmp(f, "..") == 0)
			return bad(e, path, "a slice's file must be a plain name inside the checkpoint directory", name);
		char *end;
		x->xxh3 = strtoull(json_string_value(jx), &end, 16);
		if (*end)
			return bad(e, path, "xxh3 must be 16 hex digits", name);
		x->byte_offset = json_integer_value(jb);
		x->bytes = json_integer_value(jy);
		if (!(x->file = rt_strdup(f)) || !(x->key = rt_strdup(json_string_value(jk))))
			return rt_errorf(e, RT_ENOMEM, "out of memory");
		for (int i = 0; i < t->rank; i++)
			if (x->box.off[i] + x->box.ext[i] > t->dims[i]) {
				char b[256];
				box_str(&x->box, b, sizeof b);
				return rt_errorf(e, RT_EUSER, "%s: error: tensor '%s': slice [%s] lies outside its shape", path,
						 name, b);
			}
		for (int o = 0; o + 1 < t->nslices; o++) {
			RtBox r;
			if (rt_box_intersect(&t->slices[o].box, &x->box, &r)) {
				char b[256];
				box_str(&x->box, b, sizeof b);
				return rt_errorf(e, RT_EUSER, "%s: error: tensor '%s': slice [%s] overlaps another", path,
						 name, b);
			}
		}
		vol += rt_box_volume(&x->box);
	}
	if (vol != full)
		return rt_errorf(e, RT_EUSER, "%s: error: tensor '%s': the slices cover %" PRId64 " of its %" PRId64
				 " elements", path, name, vol, full);
	return 0;
}

int rt_ckpt_read(const char *dir, RtCkpt *c, RtError *e)
{
	memset(c, 0, sizeof *c);
	size_t n = strlen(dir) + sizeof MANIFEST + 2;
	char *path = rt_malloc(n);
	if (!path || !(c->dir = rt_strdup(dir))) {
		rt_free(path);
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	}
	snprintf(path, n, "%s/%s", dir, MANIFEST);
	json_set_alloc_funcs(ck_malloc, ck_free);
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je), *jt = NULL;
	int rc = 0;
	struct stat st;
	if (!root && stat(dir, &st) < 0)
		rc = rt_errorf(e, RT_EUSER, "aicc: error: checkpoint '%s': %s", dir, strerror(errno));
	else if (!root && stat(path, &st) < 0)
		rc = rt_errorf(e, RT_EUSER, "aicc: error: '%s' is not a checkpoint: it has no %s", dir, MANIFEST);
	else if (!root)
		rc = rt_errorf(e, RT_EUSER, "%s:%d:%d: error: %s", path, je.line, je.column, je.text);
	else if (!json_is_string(json_object_get(root, "format")) ||
		 strcmp(json_string_value(json_object_get(root, "format")), FORMAT) != 0 ||
		 json_integer_value(json_object_get(root, "version")) != VERSION ||
		 !json_is_array(jt = json_object_get(root, "tensors")))
		rc = rt_errorf(e, RT_EUSER, "%s: error: not an %s manifest of version %d (format, version, tensors)",
			       path, FORMAT, VERSION);
	size_t nt = rc == 0 ? json_array_size(jt) : 0;
	if (rc == 0 && !(c->tensors = rt_calloc(nt + 1, sizeof *c->tensors)))
		rc = rt_errorf(e, RT_ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < nt; i++) {
		rc = read_tensor(json_array_get(jt, i), &c->tensors[c->ntensors++], path, e);
		for (int k = 0; rc == 0 && k + 1 < c->ntensors; k++)
			if (strcmp(c->tensors[k].name, c->tensors[c->ntensors - 1].name) == 0)
				rc = bad(e, path, "tensor listed twice", c->tensors[k].name);
	}
	json_decref(root);
	rt_free(path);
	if (rc < 0)
		rt_ckpt_free(c);
	return rc;
}

/* The opened data file `name` of c. */
static RtCkptFile *ckpt_file(RtCkpt *c, const char *name, RtError *e)
{
	for (int i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].name, name) == 0)
			return &c->files[i];
	RtCkptFile *f = rt_realloc(c->files, sizeof *f * (size_t)(c->nfiles + 1));
	if (!f) {
		rt_errorf(e, RT_ENOMEM, "out of memory");
		return NULL;
	}
	c->files = f;
	f = &f[c->nfiles];
	memset(f, 0, sizeof *f);
	size_t n = strlen(c->dir) + strlen(name) + 2;
	char *path = rt_malloc(n);
	if (!path || !(f->name = rt_strdup(name))) {
		rt_free(path);
		rt_errorf(e, RT_ENOMEM, "out of memory");
		return NULL;
	}
	snprintf(path, n, "%s/%s", c->dir, name);
	struct stat st;
	if (stat(path, &st) < 0) {
		rt_errorf(e, RT_EUSER, "%s: error: checkpoint file missing (listed in %s/%s): %s", path, c->dir, MANIFEST,
			  strerror(errno));
		rt_free(f->name);
		rt_free(path);
		return NULL;
	}
	if (rt_file_map(path, &f->map, e) < 0 ||
	    !(f->st = rt_st_open(f->map.addr ? f->map.addr : "", f->map.len, path, e))) {
		rt_file_unmap(&f->map);
		rt_free(f->name);
		rt_free(path);
		return NULL;
	}
	rt_free(path);
	c->nfiles++;
	return f;
}

/* Slice x of tensor t read from its file and checked, as a tensor of dtype t->dtype. */
static int read_slice(RtCkpt *c, const RtCkptTensor *t, const RtCkptSlice *x, RtTensor *v, RtError *e)
{
	RtCkptFile *f = ckpt_file(c, x->file, e);
	if (!f)
		return -1;
	RtTensor raw;
	const void *bytes;
	size_t nb;
	char b[256];
	box_str(&x->box, b, sizeof b);
	if (rt_st_tensor(f->st, x->key, 1, &raw, &bytes, &nb, e) < 0)
		return -1;
	int same = raw.rank == t->rank;
	for (int i = 0; same && i < t->rank; i++)
		same = raw.dims[i] == x->box.ext[i];
	int rc = 0;
	int64_t at = (int64_t)((const uint8_t *)bytes - (const uint8_t *)f->map.addr);
	if (!same)
		rc = rt_errorf(e, RT_EUSER, "%s/%s: error: tensor '%s' slice [%s]: entry '%s' has another shape", c->dir,
			       x->file, t->name, b, x->key);
	else if ((int64_t)nb != x->bytes || at != x->byte_offset)
		rc = rt_errorf(e, RT_EUSER, "%s/%s: error: tensor '%s' slice [%s]: entry '%s' is bytes [%" PRId64
			       ", %" PRId64 "), the manifest says [%" PRId64 ", %" PRId64 ")", c->dir, x->file, t->name, b,
			       x->key, at, at + (int64_t)nb, x->byte_offset, x->byte_offset + x->bytes);
	else if (rt_checksum(bytes, nb) != x->xxh3)
		rc = rt_errorf(e, RT_EUSER, "%s/%s: error: tensor '%s' slice [%s]: checksum mismatch (xxh3 %016" PRIx64
			       ", the manifest says %016" PRIx64 "): the file is damaged", c->dir, x->file, t->name, b,
			       rt_checksum(bytes, nb), x->xxh3);
	if (rc == 0 && rt_dtypes[raw.dtype].storage == rt_dtypes[t->dtype].storage) {
		raw.dtype = t->dtype;
		*v = raw;
		return 0;
	}
	if (rc == 0 && (rc = rt_tensor_alloc(v, t->dtype, raw.rank, raw.dims, e)) == 0) {
		for (int64_t i = 0; i < raw.n; i++) {
			if (rt_dtypes[t->dtype].storage == S_I64)
				rt_seti(v, i, rt_geti(&raw, i));
			else
				rt_set(v, i, rt_get(&raw, i));
		}
	}
	rt_tensor_free(&raw);
	return rc;
}

int rt_ckpt_region(RtCkpt *c, const char *name, DType dt, int rank, const int64_t *dims, const RtBox *box,
		   RtTensor *t, RtError *e)
{
	const RtCkptTensor *ct = rt_ckpt_find(c, name);
	if (!ct)
		return rt_errorf(e, RT_EUSER, "%s/%s: error: the checkpoint has no tensor '%s' (it holds %d tensors): it "
				 "is not of this model", c->dir, MANIFEST, name, c->ntensors);
	int same = ct->dtype == dt && ct->rank == rank;
	for (int i = 0; same && i < rank; i++)
		same = ct->dims[i] == dims[i];
	if (!same) {
		char a[256], b[256];
		rt_shape_str(ct->dtype, ct->rank, ct->dims, a, sizeof a);
		rt_shape_str(dt, rank, dims, b, sizeof b);
		return rt_errorf(e, RT_EUSER, "%s/%s: error: tensor '%s' is %s in the checkpoint but %s in the plan: "
				 "the checkpoint is of another model", c->dir, MANIFEST, name, a, b);
	}
	if (rt_tensor_alloc(t, dt, rank, box->ext, e) < 0)
		return -1;
	for (int k = 0; k < ct->nslices; k++) {
		RtBox r;
		if (!rt_box_intersect(&ct->slices[k].box, box, &r))
			continue;
		RtTensor v;
		if (read_slice(c, ct, &ct->slices[k], &v, e) < 0) {
			rt_tensor_free(t);
			return -1;
		}
		rt_box_copy(t, box, &v, &ct->slices[k].box, &r);
		rt_tensor_free(&v);
	}
	return 0;
}

/* ---- writing ---- */
/* Removes the plain files of directory d, then d. */
static void remove_dir(const char *d)
{
	DIR *dp = opendir(d);
	if (dp) {
		struct dirent *de;
		while ((de = readdir(dp))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			char p[4400];
			snprintf(p, sizeof p, "%.4100s/%.256s", d, de->d_name);
			unlink(p);
		}
		closedir(dp);
	}
	rmdir(d);
}

/* Whether directory d is empty or holds a manifest (a checkpoint that may be replaced). */
static int replaceable(const char *d)
{
	char p[4400];
	snprintf(p, sizeof p, "%.4100s/%s", d, MANIFEST);
	struct stat st;
	if (stat(p, &st) == 0)
		return 1;
	DIR *dp = opendir(d);
	if (!dp)
		return 0;
	struct dirent *de;
	int n = 0;
	while ((de = readdir(dp)))
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(dp);
	return n == 0;
}

static char *hex16(uint64_t v, char *buf)
{
	snprintf(buf, 17, "%016" PRIx64, v);
	return buf;
}

static json_t *ints_json(int rank, const int64_t *v)
{
	json_t *a = json_array();
	for (int i = 0; a && i < rank; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

/* The safetensors key of a slice: NAME, or NAME[a:b,c:d] for a part. */
static void slice_key(const RtCkptPut *s, char *out, size_t n)
{
	int whole = 1;
	for (int i = 0; i < s->rank; i++)
		whole = whole && s->box.off[i] == 0 && s->box.ext[i] == s->full[i];
	if (whole) {
		snprintf(out, n, "%s", s->name);
		return;
	}
	char b[256];
	box_str(&s->box, b, sizeof b);
	snprintf(out, n, "%s[%s]", s->name, b);
}

/* Writes the data files into tmp (one per distinct file name, slices in order) and records
 * each slice's key, byte offset and checksum. */
static int write_files(const char *tmp, const RtCkptPut *s, int n, char (*keys)[512], int64_t *offs, uint64_t *sums,
		       int64_t *total, RtError *e)
{
	int *done = rt_calloc((size_t)n + 1, sizeof *done);
	const char **names = rt_calloc((size_t)n + 1, sizeof *names);
	const RtTensor **ts = rt_calloc((size_t)n + 1, sizeof *ts);
	int *idx = rt_calloc((size_t)n + 1, sizeof *idx);
	int64_t *rel = rt_calloc((size_t)n + 1, sizeof *rel);
	uint64_t *sm = rt_calloc((size_t)n + 1, sizeof *sm);
	int rc = done && names && ts && idx && rel && sm ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		slice_key(&s[i], keys[i], sizeof keys[i]);
	for (int i = 0; rc == 0 && i < n; i++) {
		if (done[i])
			continue;
		int m = 0;
		int64_t data = 0;
		for (int j = i; j < n; j++)
			if (!done[j] && strcmp(s[j].file, s[i].file) == 0) {
				done[j] = 1;
				idx[m] = j;
				names[m] = keys[j];
				ts[m] = s[j].t;
				int z;
				rt_raw_kind(s[j].t->dtype, &z);
				data += s[j].t->n * z;
				m++;
			}
		char path[4500];
		snprintf(path, sizeof path, "%.4100s/%.300s", tmp, s[i].file);
		FILE *f = fopen(path, "wb");
		if (!f) {
			rc = rt_errorf(e, RT_EUSER, "aicc: error: cannot write '%s': %s", path, strerror(errno));
			break;
		}
		rc = rt_safetensors_fwrite(f, m, names, ts, rel, sm, e);
		long end = rc == 0 ? ftell(f) : -1;
		if (fclose(f) != 0 && rc == 0)
			rc = rt_errorf(e, RT_EUSER, "aicc: error: writing '%s': %s", path, strerror(errno));
		for (int k = 0; rc == 0 && k < m; k++) {
			offs[idx[k]] = (int64_t)end - data + rel[k];
			sums[idx[k]] = sm[k];
		}
		*total += data;
	}
	rt_free(done);
	rt_free(names);
	rt_free(ts);
	rt_free(idx);
	rt_free(rel);
	rt_free(sm);
	return rc;
}

static json_t *manifest(const RtCkptPut *s, int n, char (*keys)[512], const int64_t *offs, const uint64_t *sums)
{
	json_t *root = json_object(), *tensors = json_array();
	json_object_set_new(root, "format", json_string(FORMAT));
	json_object_set_new(root, "version", json_integer(VERSION));
	json_object_set(root, "tensors", tensors);
	json_decref(tensors);
	for (int i = 0; i < n; i++) {
		int first = 1;
		for (int j = 0; j < i && first; j++)
			first = strcmp(s[j].name, s[i].name) != 0;
		if (!first)
			continue;
		json_t *t = json_object(), *sl = json_array();
		json_object_set_new(t, "name", json_string(s[i].name));
		json_object_set_new(t, "dtype", json_string(rt_dtype_name(s[i].t->dtype)));
		json_object_set_new(t, "shape", ints_json(s[i].rank, s[i].full));
		for (int j = i; j < n; j++) {
			if (strcmp(s[j].name, s[i].name) != 0)
				continue;
			json_t *x = json_object();
			char h[17];
			int z;
			rt_raw_kind(s[j].t->dtype, &z);
			json_object_set_new(x, "offsets", ints_json(s[j].rank, s[j].box.off));
			json_object_set_new(x, "extents", ints_json(s[j].rank, s[j].box.ext));
			json_object_set_new(x, "file", json_string(s[j].file));
			json_object_set_new(x, "key", json_string(keys[j]));
			json_object_set_new(x, "byte_offset", json_integer((json_int_t)offs[j]));
			json_object_set_new(x, "bytes", json_integer((json_int_t)(s[j].t->n * z)));
			json_object_set_new(x, "xxh3", json_string(hex16(sums[j], h)));
			json_array_append_new(sl, x);
		}
		json_object_set_new(t, "slices", sl);
		json_array_append_new(tensors, t);
	}
	return root;
}

int rt_ckpt_write(const char *dir, const RtCkptPut *s, int n, int64_t *bytes, RtError *e)
{
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	char target[4000], tmp[4100], old[4100];
	if (dl + 1 >= sizeof target)
		return rt_errorf(e, RT_EUSER, "aicc: error: checkpoint path too long");
	snprintf(target, sizeof target, "%.*s", (int)dl, dir);
	struct stat st;
	int exists = stat(target, &st) == 0;
	if (exists && (!S_ISDIR(st.st_mode) || !replaceable(target)))
		return rt_errorf(e, RT_EUSER, "aicc: error: --save-checkpoint '%s': exists and is not a checkpoint "
				 "directory (one with %s, or empty)", target, MANIFEST);
	snprintf(tmp, sizeof tmp, "%.3990s.tmpXXXXXX", target);
	if (!mkdtemp(tmp))
		return rt_errorf(e, RT_EUSER, "aicc: error: cannot create a directory beside '%s': %s", target,
				 strerror(errno));
	char (*keys)[512] = rt_calloc((size_t)n + 1, sizeof *keys);
	int64_t *offs = rt_calloc((size_t)n + 1, sizeof *offs), total = 0;
	uint64_t *sums = rt_calloc((size_t)n + 1, sizeof *sums);
	int rc = keys && offs && sums ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory");
	for (int i = 0; rc == 0 && i < n; i++)
		if (strchr(s[i].file, '/') || strcmp(s[i].file, MANIFEST) == 0)
			rc = rt_errorf(e, RT_EINTERNAL, "aicc: internal error: checkpoint file name '%s'", s[i].file);
	if (rc == 0)
		rc = write_files(tmp, s, n, keys, offs, sums, &total, e);
	if (rc == 0) {
		json_set_alloc_funcs(ck_malloc, ck_free);
		json_t *root = manifest(s, n, keys, offs, sums);
		char mp[4200];
		snprintf(mp, sizeof mp, "%.4100s/%s", tmp, MANIFEST);
		if (!root || json_dump_file(root, mp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) < 0)
			rc = rt_errorf(e, RT_EUSER, "aicc: error: cannot write '%s'", mp);
		json_decref(root);
	}
	if (rc == 0 && exists) {     /* move the old checkpoint aside, then replace it */
		snprintf(old, sizeof old, "%.3990s.oldXXXXXX", target);
		if (!mkdtemp(old) || rmdir(old) < 0 || rename(target, old) < 0)
			rc = rt_errorf(e, RT_EUSER, "aicc: error: cannot replace '%s': %s", target, strerror(errno));
	}
	if (rc == 0 && rename(tmp, target) < 0) {
		rc = rt_errorf(e, RT_EUSER, "aicc: error: cannot rename '%s' to '%s': %s", tmp, target, strerror(errno));
		if (exists)
			rename(old, target);
	}
	if (rc == 0 && exists)
		remove_dir(old);
	if (rc < 0)
		remove_dir(tmp);
	else if (bytes)
		*bytes = total;
	rt_free(keys);
	rt_free(offs);
	rt_free(sums);
	return rc;
}
