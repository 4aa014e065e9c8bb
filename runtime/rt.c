/* runtime/rt.c: dtype table, errors, the allocation hook, attributes and dense tensors.
 * Requires nothing above runtime/.  See runtime/rt.h for the contracts. */
#define __STDC_WANT_IEC_60559_BFP_EXT__ 1   /* strfromd */
#include "runtime/rt.h"

#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

const DTypeInfo rt_dtypes[DT_COUNT] = {
#define DTYPE(id, name, bits, kind, block, elem, scale, st, onnx, sig) \
	{ name, bits, kind, block, DT_##elem, DT_##scale, st, onnx, sig },
#include "runtime/dtype.def"
#undef DTYPE
};

DType rt_dtype_lookup(const char *name)
{
	for (int d = 1; d < DT_COUNT; d++)
		if (strcmp(rt_dtypes[d].name, name) == 0)
			return (DType)d;
	return DT_INVALID;
}

DType rt_dtype_from_onnx(int64_t code)
{
	for (int d = 1; code > 0 && d < DT_COUNT; d++)
		if (rt_dtypes[d].onnx == code)
			return (DType)d;
	return DT_INVALID;
}

int64_t rt_dtype_bytes(DType d, int64_t nelem)
{
	const DTypeInfo *t = &rt_dtypes[d];
	int64_t bits, bytes;
	if (nelem < 0 || __builtin_mul_overflow(nelem, (int64_t)t->bits, &bits) || bits > INT64_MAX - 7)
		return INT64_MAX;     /* saturates: no buffer is that large, callers reject it */
	bytes = (bits + 7) / 8;
	if (t->kind == K_BLOCK) {
		int64_t blocks = (nelem + t->block - 1) / t->block;
		if (__builtin_add_overflow(bytes, blocks * rt_dtypes[t->scale].bits / 8 + (d == DT_NVFP4 ? 4 : 0), &bytes))
			return INT64_MAX;
	}
	return bytes;
}

int rt_errorf(RtError *e, int code, const char *fmt, ...)
{
	if (!e)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	e->code = code;
	return -1;
}

const char *rt_si_str(double v, const char *unit, char *buf, size_t n)
{
	static const char *const pre[] = { "", "k", "M", "G", "T", "P", "E" };
	int k = 0;
	while (fabs(v) >= 1000 && k < 6)
		v /= 1000, k++;
	snprintf(buf, n, "%.4g %s%s", v, pre[k], unit);
	return buf;
}

static void shortest_double(char *buf, size_t n, double v)
{
	/* An integer below 1e15 (< 2^53: every integer there is a distinct double) reads back only
	 * from its own digits, so the loop's answer is the precision of its significant digits:
	 * one conversion instead of up to 17 conversions and reads. */
	if (v == trunc(v) && fabs(v) < 1e15) {
		uint64_t u = (uint64_t)fabs(v);
		int digits = 1;
		while (u >= 10 && u % 10 == 0)
			u /= 10;
		for (; u >= 10; u /= 10)
			digits++;
		char fmt[8] = { '%', '.', (char)(digits < 10 ? '0' + digits : '1'), (char)(digits < 10 ? 'g' : '0' + digits - 10), 'g' };
		if (digits < 10)
			fmt[4] = 0;
		strfromd(buf, n, fmt, v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		char fmt[8] = { '%', '.', (char)(prec < 10 ? '0' + prec : '1'), (char)(prec < 10 ? 'g' : '0' + prec - 10), 'g' };
		if (prec < 10)
			fmt[4] = 0;
		strfromd(buf, n, fmt, v);   /* printf's %.*g digits without its format parsing */
		if (strtod(buf, NULL) == v)
			break;
	}
}

/* A plan repeats a few numbers very often (the FLOP of each tensor-parallel replica and layer
 * instance, the devices' rates): the last answers are kept, keyed by the double's bits, so a hit
 * is byte for byte what the conversion wrote. */
#define SHORTEST_CACHE 1024
static _Thread_local struct {
	uint64_t bits;
	int used;
	char s[32];
} shortest_cache[SHORTEST_CACHE];

void rt_shortest_double(char *buf, size_t n, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	size_t i = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 54) & (SHORTEST_CACHE - 1);
	if (!shortest_cache[i].used || shortest_cache[i].bits != bits) {
		shortest_double(shortest_cache[i].s, sizeof shortest_cache[i].s, v);
		shortest_cache[i].bits = bits, shortest_cache[i].used = 1;
	}
	size_t k = strlen(shortest_cache[i].s);
	if (k >= n)
		k = n ? n - 1 : 0;
	if (n) {
		memcpy(buf, shortest_cache[i].s, k);
		buf[k] = 0;
	}
}

uint64_t rt_checksum(const void *data, size_t n) { return XXH3_64bits(data, n); }

void rt_fput_quoted(FILE *f, const char *s, char q)
{
	fputc(q, f);
	for (const unsigned char *c = (const unsigned char *)s; *c;) {
		const unsigned char *run = c;   /* the longest run that needs no escape, written at once */
		while (*c && *c != q && *c != '\\' && *c >= 0x20 && *c != 0x7f)
			c++;
		if (c > run)
			fwrite(run, 1, (size_t)(c - run), f);
		if (!*c)
			break;
		if (*c == q || *c == '\\')
			fputc('\\', f), fputc(*c, f);
		else if (*c == '\n')
			fputs("\\n", f);
		else if (*c == '\t')
			fputs("\\t", f);
		else
			fprintf(f, "\\x%02x", *c);
		c++;
	}
	fputc(q, f);
}

/* ---- allocation hook ---- */
static long fail_after;  /* 0: never fail; else the countdown to the first failing call */

static int should_fail(void)
{
	if (fail_after == 0)
		return 0;
	if (fail_after == 1)
		return 1;   /* stays failing until reset */
	fail_after--;
	return 0;
}

void rt_alloc_fail_after(long n) { fail_after = n; }

/* The allocation budget of this thread (rt_alloc_budget_begin): bytes held by allocations made
 * since it began, as the allocator sizes them (malloc_usable_size), less those freed. */
static _Thread_local struct { int on; int64_t limit, held, refused; } budget;

void rt_alloc_budget_begin(int64_t bytes)
{
	budget.on = 1;
	budget.limit = bytes;
	budget.held = budget.refused = 0;
}

int64_t rt_alloc_budget_end(int64_t *held)
{
	int64_t refused = budget.on ? budget.refused : 0;
	if (held)
		*held = budget.on ? budget.held : 0;
	budget.on = 0;
	budget.held = budget.refused = 0;
	return refused;
}

/* Whether a request of n more bytes stays within the budget (remembering the largest refused). */
static int budget_allows(uint64_t n)
{
	if (!budget.on || n <= (uint64_t)(budget.limit - budget.held > 0 ? budget.limit - budget.held : 0))
		return 1;
	if ((int64_t)n > budget.refused || n > INT64_MAX)
		budget.refused = n > INT64_MAX ? INT64_MAX : (int64_t)n;
	return 0;
}

static void *counted(void *p)
{
	if (budget.on && p)
		budget.held += (int64_t)malloc_usable_size(p);
	return p;
}

void *rt_malloc(size_t n)
{
	return should_fail() || !budget_allows(n) ? NULL : counted(malloc(n ? n : 1));
}

void *rt_calloc(size_t n, size_t size)
{
	if (should_fail() || (size && n > SIZE_MAX / size) || !budget_allows((uint64_t)n * size))
		return NULL;
	return counted(calloc(n ? n : 1, size ? size : 1));
}

void *rt_realloc(void *p, size_t n)
{
	int64_t old = budget.on && p ? (int64_t)malloc_usable_size(p) : 0;
	if (should_fail() || !budget_allows(n > (size_t)old ? n - (size_t)old : 0))
		return NULL;
	void *q = realloc(p, n ? n : 1);
	if (q && budget.on)
		budget.held += (int64_t)malloc_usable_size(q) - old;
	return q;
}

void rt_free(void *p)
{
	if (budget.on && p)
		budget.held -= (int64_t)malloc_usable_size(p);
	free(p);
}

char *rt_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = rt_malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* ---- attributes ---- */
const Attr *rt_attr_find(const Attrs *as, const char *name)
{
	if (!as)
		return NULL;
	for (int i = 0; i < as->n; i++)
		if (strcmp(as->a[i].name, name) == 0)
			return &as->a[i];
	return NULL;
}

int64_t rt_attr_int(const Attrs *as, const char *name, int64_t def)
{
	const Attr *a = rt_attr_find(as, name);
	if (!a)
		return def;
	if (a->kind == ATTR_INT)
		return a->i;
	if (a->kind == ATTR_FLOAT)
		return (int64_t)a->f;
	return def;
}

double rt_attr_float(const Attrs *as, const char *name, double def)
{
	const Attr *a = rt_attr_find(as, name);
	if (!a)
		return def;
	if (a->kind == ATTR_FLOAT)
		return a->f;
	if (a->kind == ATTR_INT)
		return (double)a->i;
	return def;
}

const char *rt_attr_str(const Attrs *as, const char *name, const char *def)
{
	const Attr *a = rt_attr_find(as, name);
	return a && a->kind == ATTR_STRING ? a->s : def;
}

const int64_t *rt_attr_ints(const Attrs *as, const char *name, int *n)
{
	const Attr *a = rt_attr_find(as, name);
	if (!a || a->kind != ATTR_INTS) {
		*n = 0;
		return NULL;
	}
	*n = a->n;
	return a->ints;
}

/* ---- tensors ---- */
static size_t storage_size(DType d)
{
	switch (rt_dtypes[d].storage) {
	case S_F32: return sizeof(float);
	case S_F64: return sizeof(double);
	case S_I64: return sizeof(int64_t);
	default: return 0;
	}
}

static int tensor_alloc(RtTensor *t, DType d, int rank, const int64_t *dims, int zero, RtError *e);

int rt_tensor_alloc(RtTensor *t, DType d, int rank, const int64_t *dims, RtError *e)
{
	return tensor_alloc(t, d, rank, dims, 1, e);
}

int rt_tensor_alloc_raw(RtTensor *t, DType d, int rank, const int64_t *dims, RtError *e)
{
	return tensor_alloc(t, d, rank, dims, 0, e);
}

static int tensor_alloc(RtTensor *t, DType d, int rank, const int64_t *dims, int zero, RtError *e)
{
	if (d <= DT_INVALID || d >= DT_COUNT)
		return rt_errorf(e, RT_EINTERNAL, "tensor of invalid dtype %d", (int)d);
	if (rank < 0 || rank > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "tensor rank %d is outside 0..%d", rank, RT_MAX_RANK);
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0)
			return rt_errorf(e, RT_EUSER, "tensor dimension %d is negative (%lld)", i, (long long)dims[i]);
		if (dims[i] && n > INT64_MAX / dims[i])
			return rt_errorf(e, RT_EUSER, "tensor element count overflows 2^63");
		n *= dims[i];
	}
	size_t es = storage_size(d);
	if ((uint64_t)n > SIZE_MAX / es)
		return rt_errorf(e, RT_ENOMEM, "tensor of %lld elements is too large", (long long)n);
	if (!budget_allows((uint64_t)n * es))
		return rt_errorf(e, RT_ENOMEM, "out of memory allocating %lld-element %s tensor (%.3g bytes: past "
				 "the allocation budget)", (long long)n, rt_dtype_name(d), (double)n * (double)es);
	/* one tensor of 1 TiB or more is refused before asking the allocator (which, under
	 * AddressSanitizer, aborts on such requests instead of returning NULL) */
	if ((uint64_t)n * es >= (uint64_t)1 << 40)
		return rt_errorf(e, RT_ENOMEM, "out of memory allocating %lld-element %s tensor (%.3g bytes: one "
				 "tensor is limited to 1 TiB)", (long long)n, rt_dtype_name(d), (double)n * (double)es);
	void *data = zero ? rt_calloc((size_t)(n ? n : 1), es) : rt_malloc((size_t)(n ? n : 1) * es);
	if (!data)
		return rt_errorf(e, RT_ENOMEM, "out of memory allocating %lld-element %s tensor",
				 (long long)n, rt_dtype_name(d));
	memset(t, 0, sizeof *t);
	t->dtype = d;
	t->rank = rank;
	for (int i = 0; i < rank; i++)
		t->dims[i] = dims[i];
	t->n = n;
	t->data = data;
	t->owns = 1;
	t->tensor_scale = 1.0f;
	return 0;
}

void rt_tensor_free(RtTensor *t)
{
	if (t && t->owns)
		rt_free(t->data);
	if (t) {
		t->data = NULL;
		t->owns = 0;
	}
}

double rt_get(const RtTensor *t, int64_t i)
{
	switch (rt_dtypes[t->dtype].storage) {
	case S_F32: return ((const float *)t->data)[i];
	case S_F64: return ((const double *)t->data)[i];
	default: return (double)((const int64_t *)t->data)[i];
	}
}

void rt_set(RtTensor *t, int64_t i, double v)
{
	switch (rt_dtypes[t->dtype].storage) {
	case S_F32: ((float *)t->data)[i] = (float)v; break;
	case S_F64: ((double *)t->data)[i] = v; break;
	default: ((int64_t *)t->data)[i] = isnan(v) ? 0 : (int64_t)v; break;
	}
}

int64_t rt_geti(const RtTensor *t, int64_t i)
{
	switch (rt_dtypes[t->dtype].storage) {
	case S_I64: return ((const int64_t *)t->data)[i];
	default: return (int64_t)rt_get(t, i);
	}
}

void rt_seti(RtTensor *t, int64_t i, int64_t v)
{
	switch (rt_dtypes[t->dtype].storage) {
	case S_I64: ((int64_t *)t->data)[i] = v; break;
	default: rt_set(t, i, (double)v); break;
	}
}
