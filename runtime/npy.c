/* runtime/npy.c: .npy reading and writing (see runtime/npy.h for what is accepted).
 *
 * The header is the Python dict literal NumPy writes, e.g.
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * parsed by a small scanner that accepts the keys in any order and nothing else.  Sizes are
 * checked before any data is touched, with overflow-safe arithmetic.
 */
#include "runtime/npy.h"
#include "runtime/numerics.h"

#include "runtime/outfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

DType rt_raw_dtype(char kind, int size)
{
	switch (kind) {
	case 'f': return size == 2 ? DT_F16 : size == 4 ? DT_F32 : size == 8 ? DT_F64 : DT_INVALID;
	case 'b': return size == 2 ? DT_BF16 : DT_INVALID;
	case 'i': return size == 1 ? DT_I8 : size == 2 ? DT_I16 : size == 4 ? DT_I32 :
			 size == 8 ? DT_I64 : DT_INVALID;
	case 'u': return size == 1 ? DT_U8 : size == 2 ? DT_U16 : size == 4 ? DT_U32 :
			 size == 8 ? DT_U64 : DT_INVALID;
	case '?': return size == 1 ? DT_BOOL : DT_INVALID;
	default: return DT_INVALID;
	}
}

static uint64_t le(const uint8_t *p, int size)
{
	uint64_t v = 0;
	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int rt_tensor_from_raw(RtTensor *t, char kind, int size, int rank, const int64_t *dims,
		       const void *src, RtError *e)
{
	DType d = rt_raw_dtype(kind, size);
	if (d == DT_INVALID)
		return rt_errorf(e, RT_EINTERNAL, "unsupported raw element %c%d", kind, size);
	if (rt_tensor_alloc(t, d, rank, dims, e) < 0)
		return -1;
	const uint8_t *p = src;
	for (int64_t i = 0; i < t->n; i++, p += size) {
		uint64_t v = le(p, size);
		switch (kind) {
		case 'f':
			if (size == 2)
				rt_f32(t)[i] = rt_decode(DT_F16, (uint32_t)v);
			else if (size == 4) {
				uint32_t u = (uint32_t)v;
				memcpy(&rt_f32(t)[i], &u, 4);
			} else
				memcpy(&rt_f64(t)[i], &v, 8);
			break;
		case 'b': rt_f32(t)[i] = rt_decode(DT_BF16, (uint32_t)v); break;
		case 'i':   /* sign-extend */
			rt_i64(t)[i] = size == 8 ? (int64_t)v :
				(int64_t)(v ^ (1ull << (8 * size - 1))) - (int64_t)(1ull << (8 * size - 1));
			break;
		case 'u': rt_i64(t)[i] = (int64_t)v; break;
		default: rt_i64(t)[i] = v != 0; break;
		}
	}
	return 0;
}

/* ---- header scanner ---- */
typedef struct Scan {
	const char *p, *end;
} Scan;

static void skipws(Scan *s)
{
	while (s->p < s->end && isspace((unsigned char)*s->p))
		s->p++;
}

static int eat(Scan *s, char c)
{
	skipws(s);
	if (s->p < s->end && *s->p == c) {
		s->p++;
		return 1;
	}
	return 0;
}

/* A quoted string into buf (at most n-1 chars). */
static int str(Scan *s, char *buf, size_t n)
{
	skipws(s);
	if (s->p >= s->end || (*s->p != '\'' && *s->p != '"'))
		return -1;
	char q = *s->p++;
	size_t k = 0;
	while (s->p < s->end && *s->p != q) {
		if (k + 1 >= n)
			return -1;
		buf[k++] = *s->p++;
	}
	if (s->p >= s->end)
		return -1;
	s->p++;
	buf[k] = 0;
	return 0;
}

static int parse_header(Scan *s, char *descr, int *fortran, int *rank, int64_t *dims)
{
	int have = 0;
	*rank = 0;
	if (!eat(s, '{'))
		return -1;
	while (!eat(s, '}')) {
		char key[32];
		if (str(s, key, sizeof key) < 0 || !eat(s, ':'))
			return -1;
		skipws(s);
		if (strcmp(key, "descr") == 0) {
			if (str(s, descr, 16) < 0)
				return -1;
			have |= 1;
		} else if (strcmp(key, "fortran_order") == 0) {
			if (s->end - s->p >= 4 && memcmp(s->p, "True", 4) == 0) {
				*fortran = 1;
				s->p += 4;
			} else if (s->end - s->p >= 5 && memcmp(s->p, "False", 5) == 0) {
				*fortran = 0;
				s->p += 5;
			} else
				return -1;
			have |= 2;
		} else if (strcmp(key, "shape") == 0) {
			if (!eat(s, '('))
				return -1;
			while (!eat(s, ')')) {
				skipws(s);
				int64_t v = 0;
				if (s->p >= s->end || !isdigit((unsigned char)*s->p))
					return -1;
				while (s->p < s->end && isdigit((unsigned char)*s->p)) {
					if (v > (INT64_MAX - 9) / 10)
						return -2;
					v = v * 10 + (*s->p++ - '0');
				}
				if (s->p < s->end && *s->p == 'L')
					s->p++;
				if (*rank >= RT_MAX_RANK)
					return -3;
				dims[(*rank)++] = v;
				if (!eat(s, ',') && (skipws(s), s->p < s->end && *s->p != ')'))
					return -1;
			}
			have |= 4;
		} else
			return -1;
		if (!eat(s, ',') && (skipws(s), s->p < s->end && *s->p != '}'))
			return -1;
	}
	return have == 7 ? 0 : -1;
}

/* Checks the .npy image's header: element kind and size, rank, dims and where the data starts;
 * the data's size against what is present.  Returns 0, or -1 with e set. */
static int npy_header(const uint8_t *b, size_t len, const char *name, char *kindp, int *sizep, int *rankp,
		      int64_t *dims, size_t *data, RtError *e)
{
	if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
		return rt_errorf(e, RT_EUSER, "%s: not a .npy file (bad magic)", name);
	size_t hl, off;
	if (b[6] == 1) {
		hl = (size_t)le(b + 8, 2);
		off = 10;
	} else if (b[6] == 2 || b[6] == 3) {
		if (len < 12)
			return rt_errorf(e, RT_EUSER, "%s: truncated .npy header", name);
		hl = (size_t)le(b + 8, 4);
		off = 12;
	} else
		return rt_errorf(e, RT_EUSER, "%s: unsupported .npy version %d.%d", name, b[6], b[7]);
	if (hl > len - off)
		return rt_errorf(e, RT_EUSER, "%s: truncated .npy header", name);
	char descr[16] = "";
	int fortran = 0, rank = 0;
	Scan s = { (const char *)b + off, (const char *)b + off + hl };
	int r = parse_header(&s, descr, &fortran, &rank, dims);
	if (r == -3)
		return rt_errorf(e, RT_EUSER, "%s: rank above %d is not supported", name, RT_MAX_RANK);
	if (r < 0)
		return rt_errorf(e, RT_EUSER, "%s: malformed .npy header", name);
	if (fortran)
		return rt_errorf(e, RT_EUSER, "%s: Fortran-order arrays are not supported (save with "
				 "numpy.ascontiguousarray)", name);
	char order = descr[0], kind = descr[1];
	int size = atoi(descr + 2);
	if (kind == 'b')
		kind = '?';                  /* NumPy's bool kind; 'b' is bf16 in rt_raw_dtype */
	else if (kind == 'V' && size == 2)
		kind = 'b';
	if (strlen(descr) < 3 || !(order == '<' || order == '=' || order == '|' ||
				   (order == '>' && size == 1)))
		return rt_errorf(e, RT_EUSER, "%s: %s data is not supported (little-endian only)", name,
				 order == '>' ? "big-endian" : "this");
	if (rt_raw_dtype(kind, size) == DT_INVALID)
		return rt_errorf(e, RT_EUSER, "%s: unsupported dtype '%s'", name, descr);
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (dims[i] && n > INT64_MAX / size / dims[i])
			return rt_errorf(e, RT_EUSER, "%s: shape too large", name);
		n *= dims[i];
	}
	size_t avail = len - off - hl;
	if ((uint64_t)n * (uint64_t)size > avail)
		return rt_errorf(e, RT_EUSER, "%s: truncated data: %lld bytes expected, %zu present",
				 name, (long long)(n * size), avail);
	*kindp = kind, *sizep = size, *rankp = rank, *data = off + hl;
	return 0;
}

int rt_raw_view(RtTensor *t, char kind, int size, int rank, const int64_t *dims, const void *src, RtError *e)
{
	DType d = rt_raw_dtype(kind, size);
	int native = (d == DT_F32 || d == DT_F64 || d == DT_I64) && (uintptr_t)src % (uintptr_t)size == 0;
	if (!native)
		return rt_tensor_from_raw(t, kind, size, rank, dims, src, e);
	memset(t, 0, sizeof *t);
	t->dtype = d;
	t->rank = rank;
	t->n = 1;
	for (int i = 0; i < rank; i++)
		t->dims[i] = dims[i], t->n *= dims[i];
	t->data = (void *)src;   /* read-only: the interpreter never writes a constant */
	t->tensor_scale = 1.0f;
	return 0;
}

/* The tensor of a .npy image: copied, or (copy 0) a view where rt_raw_view allows. */
static int npy_load(const void *buf, size_t len, const char *name, int copy, RtTensor *t, const void **raw,
		    size_t *nraw, RtError *e)
{
	char kind = 0;
	int size = 1, rank = 0;
	int64_t dims[RT_MAX_RANK];
	size_t off = 0;
	if (npy_header(buf, len, name, &kind, &size, &rank, dims, &off, e) < 0)
		return -1;
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	const uint8_t *src = (const uint8_t *)buf + off;
	if (raw)
		*raw = src, *nraw = (size_t)n * (size_t)size;
	return copy ? rt_tensor_from_raw(t, kind, size, rank, dims, src, e) : rt_raw_view(t, kind, size, rank, dims, src, e);
}

int rt_npy_parse(const void *buf, size_t len, const char *name, RtTensor *t, RtError *e)
{
	return npy_load(buf, len, name, 1, t, NULL, NULL, e);
}

int rt_npy_view(const void *buf, size_t len, const char *name, RtTensor *t, const void **raw, size_t *nraw,
		RtError *e)
{
	return npy_load(buf, len, name, 0, t, raw, nraw, e);
}

int rt_file_map(const char *path, RtMapped *m, RtError *e)
{
	m->addr = NULL;
	m->len = 0;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below */
	int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return rt_errorf(e, RT_EUSER, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int err = errno;
		close(fd);
		if (S_ISDIR(st.st_mode))
			return rt_errorf(e, RT_EUSER, "%s: cannot read: %s", path, strerror(EISDIR));
		return rt_errorf(e, RT_EUSER, "%s: cannot read: %s", path,
				 err && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode) && !S_ISBLK(st.st_mode)
				 ? strerror(err) : "not a regular file (a device, FIFO or socket)");
	}
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return rt_errorf(e, RT_EUSER, "%s: too large to map", path);
	}
	void *a = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int err = errno;
	close(fd);
	if (a == MAP_FAILED)
		return rt_errorf(e, err == ENOMEM ? RT_ENOMEM : RT_EUSER, "%s: cannot map: %s", path, strerror(err));
	m->addr = a;
	m->len = (size_t)st.st_size;
	return 0;
}

void rt_file_unmap(RtMapped *m)
{
	if (m->addr)
		munmap(m->addr, m->len);
	m->addr = NULL;
	m->len = 0;
}

int rt_npy_read(const char *path, RtTensor *t, RtError *e)
{
	RtMapped m;
	if (rt_file_map(path, &m, e) < 0)
		return -1;
	int r = rt_npy_parse(m.addr ? m.addr : "", m.len, path, t, e);
	rt_file_unmap(&m);
	return r;
}

/* descr and element size written for a dtype. */
static const char *descr_of(DType d, int *size)
{
	switch (d) {
	case DT_F64: *size = 8; return "<f8";
	case DT_F16: *size = 2; return "<f2";
	case DT_BF16: *size = 2; return "<V2";
	case DT_I64: *size = 8; return "<i8";
	case DT_I32: *size = 4; return "<i4";
	case DT_I16: *size = 2; return "<i2";
	case DT_I8: case DT_I4: *size = 1; return "|i1";
	case DT_U8: *size = 1; return "|u1";
	case DT_U16: *size = 2; return "<u2";
	case DT_U32: *size = 4; return "<u4";
	case DT_U64: *size = 8; return "<u8";
	case DT_BOOL: *size = 1; return "|b1";
	default: *size = 4; return "<f4";
	}
}

char rt_raw_kind(DType d, int *size)
{
	const char *descr = descr_of(d, size);
	return descr[1] == 'V' ? 'b' : descr[1] == 'b' ? '?' : descr[1];
}

void rt_raw_encode(const RtTensor *t, int64_t start, int64_t count, uint8_t *out)
{
	int size;
	descr_of(t->dtype, &size);
	int st = rt_dtypes[t->dtype].storage;
	if ((size == 4 && t->dtype == DT_F32) || (size == 8 && (st == S_F64 || st == S_I64))) {
		memcpy(out, (const char *)t->data + (size_t)start * (size_t)size, (size_t)count * (size_t)size);
		return;     /* the storage is the file's layout (little-endian hosts) */
	}
	for (int64_t i = start; i < start + count; i++, out += size) {
		uint64_t v;
		if (t->dtype == DT_F16 || t->dtype == DT_BF16)
			v = rt_encode(t->dtype, rt_f32(t)[i], 0);
		else if (st == S_I64)
			v = (uint64_t)rt_i64(t)[i];
		else {
			float x = st == S_F64 ? (float)rt_f64(t)[i] : rt_f32(t)[i];
			uint32_t u;
			memcpy(&u, &x, 4);
			v = u;
		}
		for (int j = 0; j < size; j++)
			out[j] = (uint8_t)(v >> (8 * j));
	}
}

/* Writes t's elements in the file layout, a block at a time. */
int rt_raw_fwrite(FILE *f, const RtTensor *t)
{
	int size;
	descr_of(t->dtype, &size);
	uint8_t buf[1 << 16];
	int64_t per = (int64_t)sizeof buf / size;
	for (int64_t i = 0; i < t->n; i += per) {
		int64_t k = t->n - i < per ? t->n - i : per;
		rt_raw_encode(t, i, k, buf);
		if (fwrite(buf, (size_t)size, (size_t)k, f) != (size_t)k)
			return -1;
	}
	return 0;
}

int rt_npy_fwrite(FILE *f, const RtTensor *t, RtError *e)
{
	int size;
	const char *descr = descr_of(t->dtype, &size);
	char hdr[512];
	int k = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int i = 0; i < t->rank; i++)
		k += snprintf(hdr + k, sizeof hdr - (size_t)k, "%lld,%s", (long long)t->dims[i],
			      i + 1 < t->rank ? " " : "");
	if (t->rank > 1)   /* NumPy writes (3,) for rank 1 and (3, 4) otherwise */
		k--;
	k += snprintf(hdr + k, sizeof hdr - (size_t)k, "), }");
	int total = 10 + k + 1, pad = (64 - total % 64) % 64;
	uint16_t hl = (uint16_t)(k + pad + 1);
	fwrite("\x93NUMPY\x01\x00", 1, 8, f);
	fputc(hl & 0xFF, f);
	fputc(hl >> 8, f);
	fwrite(hdr, 1, (size_t)k, f);
	for (int i = 0; i < pad; i++)
		fputc(' ', f);
	fputc('\n', f);
	if (rt_raw_fwrite(f, t) < 0 || ferror(f))
		return rt_errorf(e, RT_EUSER, "write error: %s", strerror(errno));
	return 0;
}

int rt_npy_write(const char *path, const RtTensor *t, RtError *e)
{
	RtOutFile o;
	if (rt_out_open(&o, path, e) < 0)
		return -1;
	if (rt_npy_fwrite(o.f, t, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rt_out_abort(&o);
		return rt_errorf(e, RT_EUSER, "%s: %s", path, msg);
	}
	return rt_out_commit(&o, e);
}
