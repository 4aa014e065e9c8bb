/* runtime/plan_read.c: the one plan reader.  Parses the text form of docs/plan-format.md into a
 * Plan, then runs plan_verify on it.  The reader owns syntax: line structure, keywords, fields
 * (unknown, duplicate or missing), number syntax and ranges, names and references to entities
 * defined earlier, stream instruction counts and the closing `end` line.  It never trusts the
 * input: every error is returned as "file:LINE: error: message" and nothing is indexed before it
 * is checked (testsuite/fuzz/fuzz_plan.c exercises this).  Requires runtime/plan.h. */
#include "runtime/plan.h"
#include "runtime/npy.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- name tables: open addressing over plan-owned strings ---- */
typedef struct NameMap {
	const char **keys;
	int *vals;
	size_t cap, n;
} NameMap;

static uint64_t hash_str(const char *s) { return plan_hash(s, strlen(s)); }

static int map_get(const NameMap *m, const char *k)
{
	if (!m->cap)
		return -1;
	for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return -1;
		if (strcmp(m->keys[i], k) == 0)
			return m->vals[i];
	}
}

static int map_put(NameMap *m, const char *k, int v);

static int map_grow(NameMap *m)
{
	NameMap g = { 0 };
	g.cap = m->cap ? m->cap * 2 : 64;
	g.keys = rt_calloc(g.cap, sizeof *g.keys);
	g.vals = rt_calloc(g.cap, sizeof *g.vals);
	if (!g.keys || !g.vals) {
		rt_free(g.keys);
		rt_free(g.vals);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			map_put(&g, m->keys[i], m->vals[i]);
	rt_free(m->keys);
	rt_free(m->vals);
	*m = g;
	return 0;
}

static int map_put(NameMap *m, const char *k, int v)
{
	if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
		return -1;
	size_t i = hash_str(k) & (m->cap - 1);
	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = k;
	m->vals[i] = v;
	m->n++;
	return 0;
}

/* ---- reader state ---- */
enum { NS_DEVICE, NS_SPACE, NS_UNIT, NS_LINK, NS_BUFFER, NS_EVENT, NS_INPUT, NS_OUTPUT, NS_STREAM, NS_COUNT };
static const char *const ns_names[NS_COUNT] = { "device", "space", "unit", "link", "buffer", "event",
						"input", "output", "stream" };

typedef struct Tok {
	char *key, *val;     /* val NULL for a bare word */
	int used;
} Tok;

typedef struct Rd {
	const char *file;
	int line;
	RtError *e;
	Plan *p;
	NameMap maps[NS_COUNT];
	Tok *toks; int ntoks, cap_toks;
	int stream;          /* open stream, or -1 */
	int expect;          /* instructions still expected in it */
	int seen_target, seen_machine, seen_end;
	unsigned char *is_const;   /* per buffer: has a const line */
	int cap_const;
} Rd;

static int fail(Rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Rd *r, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (r->e->code == RT_ENOMEM)
		return -1;
	return rt_errorf(r->e, RT_EUSER, "%s:%d: error: %s", r->file, r->line, msg);
}

static int oom(Rd *r)
{
	return rt_errorf(r->e, RT_ENOMEM, "%s:%d: error: out of memory reading the plan", r->file, r->line);
}

/* ---- tokens ---- */
/* Unescapes the quoted string at s (starting with '"') in place; returns the end of the token
 * after the closing quote, or NULL if it is unterminated or has a bad escape. */
static char *unquote(char *s, char **end)
{
	char *w = s + 1;   /* keeps the opening quote as a marker */
	for (char *c = s + 1; *c; c++) {
		if (*c == '"') {
			*w = 0;
			*end = c + 1;
			return s;
		}
		if (*c != '\\') {
			*w++ = *c;
			continue;
		}
		c++;
		if (*c == 'n') *w++ = '\n';
		else if (*c == 't') *w++ = '\t';
		else if (*c == '"' || *c == '\\') *w++ = *c;
		else if (*c == 'x' && strspn(c + 1, "0123456789abcdefABCDEF") >= 2) {
			char hex[3] = { c[1], c[2], 0 };
			long v = strtol(hex, NULL, 16);
			if (v == 0)
				return NULL;
			*w++ = (char)v;
			c += 2;
		} else
			return NULL;
	}
	return NULL;
}

/* Splits the NUL-terminated line into tokens (key=value or bare words) in place. */
static int tokenize(Rd *r, char *s)
{
	r->ntoks = 0;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return 0;
		if (r->ntoks == r->cap_toks) {
			int nc = r->cap_toks ? r->cap_toks * 2 : 16;
			Tok *nt = rt_realloc(r->toks, (size_t)nc * sizeof *nt);
			if (!nt)
				return oom(r);
			r->toks = nt;
			r->cap_toks = nc;
		}
		Tok *t = &r->toks[r->ntoks++];
		t->key = s;
		t->val = NULL;
		t->used = 0;
		while (*s && *s != ' ' && *s != '\t' && *s != '=' && *s != '"')
			s++;
		if (*s == '"')
			return fail(r, "unexpected '\"' in '%.40s'", t->key);
		if (*s == '=') {
			*s++ = 0;
			t->val = s;
			if (*s == '"') {
				char *end;
				if (!unquote(s, &end))
					return fail(r, "unterminated string or bad escape in field '%s'", t->key);
				t->val = s;   /* keeps the leading '"' as a marker, text follows */
				s = end;
				if (*s && *s != ' ' && *s != '\t')
					return fail(r, "expected a space after the string of field '%s'", t->key);
			} else {
				while (*s && *s != ' ' && *s != '\t' && *s != '"')
					s++;
				if (*s == '"')
					return fail(r, "unexpected '\"' in field '%s'", t->key);
			}
		}
		if (*s)
			*s++ = 0;
		if (!*t->key)
			return fail(r, "field without a name");
	}
}

static int is_quoted(const char *v) { return v && v[0] == '"'; }

/* A valid entity name: printable, no space, '=', ',', '[', ']' or '"', not "_". */
static int name_ok(const char *s)
{
	if (!s || !*s || strcmp(s, "_") == 0)
		return 0;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c <= ' ' || *c >= 0x7f || strchr("=,[]\"", *c))
			return 0;
	return 1;
}

/* The token with key k (marking it used), or NULL. */
static Tok *field(Rd *r, const char *k)
{
	for (int i = 1; i < r->ntoks; i++)
		if (r->toks[i].val && strcmp(r->toks[i].key, k) == 0) {
			r->toks[i].used = 1;
			return &r->toks[i];
		}
	return NULL;
}

static const char *req(Rd *r, const char *k)
{
	Tok *t = field(r, k);
	if (!t) {
		fail(r, "%s line lacks the field '%s'", r->toks[0].key, k);
		return NULL;
	}
	return t->val;
}

/* Every token must have been consumed, and none may repeat. */
static int check_fields(Rd *r)
{
	for (int i = 1; i < r->ntoks; i++) {
		if (!r->toks[i].used)
			return fail(r, "unknown %s '%s' on a %s line", r->toks[i].val ? "field" : "word",
				    r->toks[i].key, r->toks[0].key);
		for (int j = 1; j < i; j++)
			if (r->toks[j].val && r->toks[i].val && strcmp(r->toks[i].key, r->toks[j].key) == 0)
				return fail(r, "field '%s' given twice", r->toks[i].key);
	}
	return 0;
}

/* ---- values ---- */
static int parse_i64(Rd *r, const char *what, const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || is_quoted(s))
		return fail(r, "%s: expected an integer", what);
	long long v = strtoll(s, &end, 10);
	if (*end || errno)
		return fail(r, "%s: '%.40s' is not an integer in the int64 range", what, s);
	*out = v;
	return 0;
}

static int parse_f64(Rd *r, const char *what, const char *s, double *out)
{
	char *end;
	if (!s || !*s || is_quoted(s) || strchr(s, 'x') || strchr(s, 'X'))
		return fail(r, "%s: expected a number", what);
	*out = strtod(s, &end);
	if (*end)
		return fail(r, "%s: '%.40s' is not a number", what, s);
	return 0;
}

static int req_i64(Rd *r, const char *k, int64_t *out)
{
	const char *v = req(r, k);
	return v ? parse_i64(r, k, v, out) : -1;
}

static int req_f64(Rd *r, const char *k, double *out)
{
	const char *v = req(r, k);
	return v ? parse_f64(r, k, v, out) : -1;
}

static int opt_f64(Rd *r, const char *k, double *out)
{
	Tok *t = field(r, k);
	return t ? parse_f64(r, k, t->val, out) : 0;
}

/* A quoted string field's text (after the marker quote), or NULL with an error. */
static const char *req_str(Rd *r, const char *k)
{
	const char *v = req(r, k);
	if (v && !is_quoted(v)) {
		fail(r, "field '%s' expects a quoted string", k);
		return NULL;
	}
	return v ? v + 1 : NULL;
}

/* Splits "[a,b,c]" in place into items; *n items (at most max).  prefix "f" for "f[...]". */
static int split_list(Rd *r, const char *what, char *s, char **items, int max, int *n)
{
	size_t len = s ? strlen(s) : 0;
	if (len < 2 || s[0] != '[' || s[len - 1] != ']')
		return fail(r, "%s: expected a list [a,b,...]", what);
	s[len - 1] = 0;
	s++;
	*n = 0;
	if (!*s)
		return 0;
	for (;;) {
		if (*n == max)
			return fail(r, "%s: more than %d items", what, max);
		items[(*n)++] = s;
		char *c = strchr(s, ',');
		if (!c)
			break;
		*c = 0;
		s = c + 1;
	}
	for (int i = 0; i < *n; i++)
		if (!*items[i])
			return fail(r, "%s: empty list item", what);
	return 0;
}

/* A reference to an already defined entity of namespace ns. */
static int ref(Rd *r, int ns, const char *name, int *out)
{
	if (!name)
		return -1;
	int i = map_get(&r->maps[ns], name);
	if (i < 0)
		return fail(r, "undefined %s '%.80s'", ns_names[ns], name);
	*out = i;
	return 0;
}

static int req_ref(Rd *r, const char *k, int ns, int *out)
{
	const char *v = req(r, k);
	return v ? ref(r, ns, v, out) : -1;
}

/* Registers the name of a new entity (the line's second word) in namespace ns. */
static const char *new_name(Rd *r, int ns)
{
	if (r->ntoks < 2 || r->toks[1].val) {
		fail(r, "%s line lacks a name", r->toks[0].key);
		return NULL;
	}
	r->toks[1].used = 1;
	const char *n = r->toks[1].key;
	if (!name_ok(n)) {
		fail(r, "'%.80s' is not a valid %s name", n, ns_names[ns]);
		return NULL;
	}
	if (map_get(&r->maps[ns], n) >= 0) {
		fail(r, "%s '%.80s' is defined twice", ns_names[ns], n);
		return NULL;
	}
	return n;
}

/* Records the entity's name (as stored in the plan) under index i. */
static int named(Rd *r, int ns, const char *stored, int i)
{
	if (i < 0)
		return oom(r);
	return map_put(&r->maps[ns], stored, i) < 0 ? oom(r) : 0;
}

/* ---- machine lines ---- */
static int rd_device(Rd *r)
{
	PlanDevice d = { 0 };
	const char *name = new_name(r, NS_DEVICE), *kind;
	Tok *pf = field(r, "peak_fmt");
	if (!name || !(kind = req(r, "kind")) || req_f64(r, "peak", &d.peak_flops) ||
	    opt_f64(r, "peak_f64", &d.peak_flops_f64) || req_f64(r, "overhead", &d.overhead_s) ||
	    opt_f64(r, "clock", &d.clock_hz) || opt_f64(r, "peak_work", &d.peak_work) || check_fields(r))
		return -1;
	if (!name_ok(kind))
		return fail(r, "'%.40s' is not a valid device kind", kind);
	if (d.peak_work < 0 || !isfinite(d.peak_work))
		return fail(r, "peak_work must be a positive rate");
	const char *pfs = pf ? (is_quoted(pf->val) ? pf->val + 1 : pf->val) : NULL;
	if (pfs && strlen(pfs) >= sizeof d.peak_fmt)
		return fail(r, "peak_fmt '%.40s' is longer than %zu characters", pfs, sizeof d.peak_fmt - 1);
	if (pfs)
		memcpy(d.peak_fmt, pfs, strlen(pfs) + 1);
	d.name = (char *)name;
	d.kind = (char *)kind;
	d.line = r->line;
	int i = plan_add_device(r->p, &d, r->e);
	return named(r, NS_DEVICE, i < 0 ? NULL : r->p->devices[i].name, i);
}

static int rd_space(Rd *r)
{
	PlanSpace s = { 0 };
	const char *name = new_name(r, NS_SPACE);
	if (!name || req_ref(r, "device", NS_DEVICE, &s.device) || req_i64(r, "capacity", &s.capacity) ||
	    req_f64(r, "bandwidth", &s.bandwidth) || check_fields(r))
		return -1;
	s.name = (char *)name;
	s.line = r->line;
	int i = plan_add_space(r->p, &s, r->e);
	return named(r, NS_SPACE, i < 0 ? NULL : r->p->spaces[i].name, i);
}

static int rd_unit(Rd *r)
{
	PlanUnit u = { 0 };
	const char *name = new_name(r, NS_UNIT), *kind;
	if (!name || req_ref(r, "device", NS_DEVICE, &u.device) || !(kind = req(r, "kind")) || check_fields(r))
		return -1;
	if (!name_ok(kind))
		return fail(r, "'%.40s' is not a valid unit kind", kind);
	u.name = (char *)name;
	u.kind = (char *)kind;
	u.line = r->line;
	int i = plan_add_unit(r->p, &u, r->e);
	return named(r, NS_UNIT, i < 0 ? NULL : r->p->units[i].name, i);
}

static int rd_link(Rd *r)
{
	PlanLink l = { 0 };
	const char *name = new_name(r, NS_LINK);
	if (!name || req_ref(r, "src", NS_DEVICE, &l.src) || req_ref(r, "dst", NS_DEVICE, &l.dst) ||
	    req_f64(r, "bandwidth", &l.bandwidth) || req_f64(r, "latency", &l.latency_s) || check_fields(r))
		return -1;
	l.name = (char *)name;
	l.line = r->line;
	int i = plan_add_link(r->p, &l, r->e);
	return named(r, NS_LINK, i < 0 ? NULL : r->p->links[i].name, i);
}

/* ---- data lines ---- */
static int rd_dims(Rd *r, char *v, int *rank, int64_t *dims)
{
	char *items[RT_MAX_RANK];
	if (split_list(r, "shape", v, items, RT_MAX_RANK, rank) < 0)
		return -1;
	for (int i = 0; i < *rank; i++)
		if (parse_i64(r, "shape", items[i], &dims[i]) < 0)
			return -1;
	return 0;
}

static int rd_buffer(Rd *r)
{
	int space, rank;
	int64_t offset, size, dims[RT_MAX_RANK];
	const char *name = new_name(r, NS_BUFFER), *dt, *format;
	char *shape;
	if (!name || req_ref(r, "space", NS_SPACE, &space) || req_i64(r, "offset", &offset) ||
	    req_i64(r, "size", &size) || !(dt = req(r, "dtype")) || !(shape = (char *)req(r, "shape")) ||
	    !(format = req(r, "format")) || check_fields(r) || rd_dims(r, shape, &rank, dims))
		return -1;
	DType d = rt_dtype_lookup(dt);
	if (d == DT_INVALID)
		return fail(r, "unknown dtype '%.40s'", dt);
	int i = plan_add_buffer(r->p, name, space, offset, d, rank, dims, r->e);
	if (named(r, NS_BUFFER, i < 0 ? NULL : r->p->buffers[i].name, i) < 0)
		return -1;
	PlanBuffer *b = &r->p->buffers[i];
	b->size = size;
	b->line = r->line;
	if (!(b->format = plan_intern(r->p, format)))
		return oom(r);
	return 0;
}

/* xxh3=HEX16 (optional): the checksum of a weight file's tensor bytes. */
static int rd_xxh3(Rd *r, PlanConst *c)
{
	Tok *t = field(r, "xxh3");
	if (!t)
		return 0;
	if (!t->val || strlen(t->val) != 16 || strspn(t->val, "0123456789abcdef") != 16)
		return fail(r, "xxh3 must be 16 lowercase hex digits");
	c->xxh3 = strtoull(t->val, NULL, 16);
	c->has_xxh3 = 1;
	return 0;
}

static int rd_init_fields(Rd *r, PlanConst *c)
{
	int64_t seed;
	switch (c->kind) {
	case PINIT_NORMAL:
	case PINIT_UNIFORM:
		if (req_f64(r, c->kind == PINIT_NORMAL ? "mean" : "low", &c->a) ||
		    req_f64(r, c->kind == PINIT_NORMAL ? "std" : "high", &c->b) ||
		    req_i64(r, "seed", &seed) || req_i64(r, "instance", &c->instance))
			return -1;
		if (seed < 0)
			return fail(r, "seed must be non-negative");
		c->seed = (uint64_t)seed;
		return 0;
	case PINIT_FILL:
		return req_f64(r, "value", &c->a);
	case PINIT_NPY:
		return (c->path = (char *)req_str(r, "path")) ? rd_xxh3(r, c) : -1;
	case PINIT_SAFETENSORS:
		return (c->path = (char *)req_str(r, "path")) && (c->key = (char *)req_str(r, "key")) ? rd_xxh3(r, c) : -1;
	default:
		return 0;
	}
}

static int rd_inline(Rd *r, PlanConst *c)
{
	char *v = (char *)req(r, "values");
	if (!v)
		return -1;
	char **items = rt_malloc(PLAN_INLINE_MAX * sizeof *items);
	int n = 0, rc = -1;
	if (!items)
		return oom(r);
	if (split_list(r, "values", v, items, PLAN_INLINE_MAX, &n) < 0)
		goto out;
	c->vals = rt_malloc((size_t)(n ? n : 1) * sizeof *c->vals);
	if (!c->vals) {
		oom(r);
		goto out;
	}
	c->nvals = n;
	for (int i = 0; i < n; i++)
		if (parse_f64(r, "values", items[i], &c->vals[i]) < 0)
			goto out;
	rc = 0;
out:
	rt_free(items);
	return rc;
}

/* shard=AXIS:OFFSET:FULL (optional): a constant, input or output is a slice of a larger tensor. */
static int rd_shard_field(Rd *r, int *axis, int64_t *off, int64_t *full)
{
	Tok *t = field(r, "shard");
	if (!t)
		return 0;
	long long v[3] = { -1, -1, -1 };
	const char *q = t->val;
	int ok = q != NULL;
	for (int i = 0; ok && i < 3; i++) {     /* strtoll, not sscanf: out-of-range numbers are errors */
		char *end;
		errno = 0;
		ok = *q >= '0' && *q <= '9';
		if (ok)
			v[i] = strtoll(q, &end, 10);
		ok = ok && !errno && *end == (i < 2 ? ':' : '\0');
		if (ok)
			q = end + 1;
	}
	long long a = v[0], o = v[1], n = v[2];
	if (!ok || a < 0 || a >= RT_MAX_RANK || o < 0 || n <= 0)
		return fail(r, "shard: expected AXIS:OFFSET:FULL with 0 <= AXIS < %d, OFFSET >= 0, FULL > 0",
			    RT_MAX_RANK);
	*axis = (int)a, *off = o, *full = n;
	return 0;
}

static int rd_shard(Rd *r, PlanConst *c) { return rd_shard_field(r, &c->shard_axis, &c->shard_off, &c->shard_full); }

static int rd_const(Rd *r)
{
	PlanConst c = { 0 };
	if (r->ntoks < 2 || r->toks[1].val)
		return fail(r, "const line lacks a buffer name");
	r->toks[1].used = 1;
	if (ref(r, NS_BUFFER, r->toks[1].key, &c.buffer) < 0)
		return -1;
	if (c.buffer < r->cap_const && r->is_const[c.buffer])
		return fail(r, "buffer '%s' has two const lines", r->toks[1].key);
	const char *kind = req(r, "init");
	if (!kind)
		return -1;
	for (c.kind = 0; c.kind < PINIT_COUNT && strcmp(plan_init_names[c.kind], kind); c.kind++)
		;
	if (c.kind == PINIT_COUNT || c.kind == PINIT_DATA)
		return fail(r, "unknown initialiser '%.40s' (normal, uniform, fill, inline, npy, safetensors, unbound)", kind);
	int rc = rd_init_fields(r, &c);
	if (rc == 0 && c.kind == PINIT_INLINE)
		rc = rd_inline(r, &c);
	if (rc == 0)
		rc = rd_shard(r, &c);
	if (rc == 0)
		rc = check_fields(r);
	c.line = r->line;
	int i = rc < 0 ? -1 : plan_add_const(r->p, &c, r->e);
	rt_free(c.vals);
	if (rc < 0)
		return -1;
	if (i < 0)
		return oom(r);
	if (c.buffer >= r->cap_const) {
		int nc = r->p->nbuffers + 64;
		unsigned char *m = rt_realloc(r->is_const, (size_t)nc);
		if (!m)
			return oom(r);
		memset(m + r->cap_const, 0, (size_t)(nc - r->cap_const));
		r->is_const = m;
		r->cap_const = nc;
	}
	r->is_const[c.buffer] = 1;
	return 0;
}

/* Whether the line has a `shard=` field (a sharded input or output repeats its name). */
static int has_shard(const Rd *r)
{
	for (int k = 2; k < r->ntoks; k++)
		if (r->toks[k].val && strcmp(r->toks[k].key, "shard") == 0)
			return 1;
	return 0;
}

static int rd_io(Rd *r, int output)
{
	int ns = output ? NS_OUTPUT : NS_INPUT, buf, axis = -1;
	int64_t off = 0, full = 0;
	const char *name;
	int again = r->ntoks >= 2 && !r->toks[1].val && has_shard(r) && map_get(&r->maps[ns], r->toks[1].key) >= 0;
	if (again) {           /* another shard of a sharded name: the verifier checks they tile it */
		r->toks[1].used = 1;
		name = r->toks[1].key;
	} else
		name = new_name(r, ns);
	if (!name || req_ref(r, "buffer", NS_BUFFER, &buf) || rd_shard_field(r, &axis, &off, &full) || check_fields(r))
		return -1;
	int i = output ? plan_add_output(r->p, name, buf, r->e) : plan_add_input(r->p, name, buf, r->e);
	if (i < 0)
		return oom(r);
	PlanIO *io = output ? &r->p->outputs[i] : &r->p->inputs[i];
	io->line = r->line;
	if (axis >= 0)
		plan_io_shard(io, axis, off, full);
	return again ? 0 : named(r, ns, io->name, i);
}

static int rd_event(Rd *r)
{
	const char *name = new_name(r, NS_EVENT);
	if (!name || check_fields(r))
		return -1;
	int i = plan_add_event(r->p, name, r->e);
	return named(r, NS_EVENT, i < 0 ? NULL : r->p->events[i], i);
}

static int rd_stream(Rd *r)
{
	int dev;
	int64_t count;
	const char *name = new_name(r, NS_STREAM);
	if (!name || req_ref(r, "device", NS_DEVICE, &dev) || req_i64(r, "count", &count) || check_fields(r))
		return -1;
	if (count < 0 || count > 100000000)
		return fail(r, "stream count %" PRId64 " is out of range", count);
	int i = plan_add_stream(r->p, name, dev, r->e);
	if (named(r, NS_STREAM, i < 0 ? NULL : r->p->streams[i].name, i) < 0)
		return -1;
	r->p->streams[i].line = r->line;
	r->stream = i;
	r->expect = (int)count;
	return 0;
}

/* ---- instructions ---- */
static int rd_buflist(Rd *r, const char *k, int allow_absent, int **out, int *n)
{
	char *v = (char *)req(r, k);
	if (!v)
		return -1;
	size_t len = strlen(v);
	int max = (int)(len / 2 + 1);
	char **items = rt_malloc((size_t)max * sizeof *items);
	*out = rt_malloc((size_t)max * sizeof **out);
	if (!items || !*out) {
		rt_free(items);
		return oom(r);
	}
	int rc = split_list(r, k, v, items, max, n);
	for (int i = 0; rc == 0 && i < *n; i++) {
		if (allow_absent && strcmp(items[i], "_") == 0)
			(*out)[i] = -1;
		else
			rc = ref(r, NS_BUFFER, items[i], &(*out)[i]);
	}
	rt_free(items);
	return rc;
}

/* Parses one "a.NAME=VALUE" token into attribute a (strings borrowed from the line). */
static int rd_attr(Rd *r, Tok *t, Attr *a)
{
	memset(a, 0, sizeof *a);
	a->name = t->key + 2;
	if (!name_ok(a->name))
		return fail(r, "bad attribute name '%.40s'", t->key);
	char *v = t->val;
	if (is_quoted(v)) {
		a->kind = ATTR_STRING;
		a->s = v + 1;
		return 0;
	}
	if (v[0] == '[' || (v[0] == 'f' && v[1] == '[')) {
		int isf = v[0] == 'f', max = (int)(strlen(v) / 2 + 1);
		char **items = rt_malloc((size_t)max * sizeof *items);
		void *vals = rt_malloc((size_t)max * 8);
		if (!items || !vals) {
			rt_free(items);
			rt_free(vals);
			return oom(r);
		}
		int rc = split_list(r, t->key, v + isf, items, max, &a->n);
		for (int i = 0; rc == 0 && i < a->n; i++)
			rc = isf ? parse_f64(r, t->key, items[i], (double *)vals + i)
				 : parse_i64(r, t->key, items[i], (int64_t *)vals + i);
		rt_free(items);
		a->kind = isf ? ATTR_FLOATS : ATTR_INTS;
		if (isf)
			a->floats = vals;
		else
			a->ints = vals;
		return rc;
	}
	if (strpbrk(v, ".eEni")) {
		a->kind = ATTR_FLOAT;
		return parse_f64(r, t->key, v, &a->f);
	}
	a->kind = ATTR_INT;
	return parse_i64(r, t->key, v, &a->i);
}

static int rd_opts(Rd *r, RtExecOpts *o)
{
	Tok *t;
	int64_t v;
	o->mma_in = DT_INVALID;
	if ((t = field(r, "accum"))) {
		if (strcmp(t->val, "f64") && strcmp(t->val, "f32"))
			return fail(r, "accum must be f32 or f64, not '%.40s'", t->val);
		o->accum_f64 = strcmp(t->val, "f64") == 0;
	}
	if ((t = field(r, "mma_in")) && (o->mma_in = rt_dtype_lookup(t->val)) == DT_INVALID)
		return fail(r, "unknown dtype '%.40s' in mma_in", t->val);
	if ((t = field(r, "fp8_promote"))) {
		if (parse_i64(r, "fp8_promote", t->val, &v) < 0 || v < 0 || v > 1 << 20)
			return fail(r, "fp8_promote must be an integer in 0..1048576");
		o->fp8_promote_k = (int)v;
	}
	if ((t = field(r, "exp2_poly"))) {
		if (parse_i64(r, "exp2_poly", t->val, &v) < 0 || v < 0 || v > 16)
			return fail(r, "exp2_poly must be an integer in 0..16");
		o->exp2_poly = (int)v;
	}
	if ((t = field(r, "scale_rule"))) {
		if (strcmp(t->val, "floor") && strcmp(t->val, "rceil"))
			return fail(r, "scale_rule must be floor or rceil, not '%.40s'", t->val);
		o->scale_rule = strcmp(t->val, "rceil") == 0;
	}
	if ((t = field(r, "fp8_scale"))) {
		RtFp8Scale s = rt_fp8_scale_lookup(t->val);
		if (s == RT_FP8_COUNT)
			return fail(r, "fp8_scale must be none, tensor, 1x128 or 128x128, not '%.40s'", t->val);
		o->fp8_scale = (int)s;
	}
	return 0;
}

/* Attributes (a.*) and target attributes (t.*), borrowed from the line into in. */
static int rd_extras(Rd *r, PlanInstr *in)
{
	int na = 0, nt = 0;
	for (int i = 1; i < r->ntoks; i++) {
		Tok *t = &r->toks[i];
		na += t->val && strncmp(t->key, "a.", 2) == 0;
		nt += t->val && strncmp(t->key, "t.", 2) == 0;
	}
	in->attrs.a = na ? rt_calloc((size_t)na, sizeof(Attr)) : NULL;
	in->tile = nt ? rt_calloc((size_t)nt, sizeof(PlanKV)) : NULL;
	if ((na && !in->attrs.a) || (nt && !in->tile))
		return oom(r);
	for (int i = 1; i < r->ntoks; i++) {
		Tok *t = &r->toks[i];
		if (t->val && strncmp(t->key, "a.", 2) == 0) {
			t->used = 1;
			if (rd_attr(r, t, &in->attrs.a[in->attrs.n++]) < 0)
				return -1;
		} else if (t->val && strncmp(t->key, "t.", 2) == 0) {
			t->used = 1;
			if (!name_ok(t->key + 2) || !is_quoted(t->val))
				return fail(r, "target attribute '%.40s' needs a name and a quoted value", t->key);
			in->tile[in->ntile].key = t->key + 2;
			in->tile[in->ntile++].val = t->val + 1;
		}
	}
	return 0;
}

/* Fields common to every instruction kind with data: in/out, link, unit, cycle, dur, flops. */
static int rd_common(Rd *r, PlanInstr *in)
{
	Tok *t;
	int k = in->kind;
	if (k != PI_RECORD && k != PI_WAIT &&
	    (rd_buflist(r, "in", k == PI_KERNEL, &in->in, &in->nin) ||
	     rd_buflist(r, "out", 0, &in->out, &in->nout)))
		return -1;
	if ((t = field(r, "link")) && ref(r, NS_LINK, t->val, &in->link))
		return -1;
	if ((t = field(r, "unit")) && ref(r, NS_UNIT, t->val, &in->unit))
		return -1;
	if ((t = field(r, "cycle")) && (parse_i64(r, "cycle", t->val, &in->cycle) || in->cycle < 0))
		return fail(r, "cycle must be a non-negative integer");
	if ((t = field(r, "dur")) && (parse_i64(r, "dur", t->val, &in->dur) || in->dur < 0))
		return fail(r, "dur must be a non-negative integer");
	if ((t = field(r, "flops")) && (parse_f64(r, "flops", t->val, &in->flops) ||
					!(in->flops >= 0 && in->flops < INFINITY)))
		return fail(r, "flops must be a non-negative finite number");
	if ((t = field(r, "node"))) {
		if (!is_quoted(t->val))
			return fail(r, "field 'node' expects a quoted string");
		in->node = t->val + 1;
	}
	return 0;
}

/* The word after the instruction keyword: operator, collective kind or event. */
static int rd_head(Rd *r, PlanInstr *in)
{
	if (in->kind == PI_COPY)
		return 0;
	if (r->ntoks < 2 || r->toks[1].val)
		return fail(r, "%s lacks its %s", r->toks[0].key, in->kind == PI_KERNEL ? "operator" :
			    in->kind == PI_COLLECTIVE ? "collective kind" : "event");
	const char *w = r->toks[1].key;
	r->toks[1].used = 1;
	if (in->kind == PI_KERNEL) {
		if ((in->op = plan_op_lookup(w)) == RT_OP_COUNT)
			return fail(r, "unknown operator '%.40s'", w);
		return 0;
	}
	if (in->kind == PI_COLLECTIVE) {
		for (in->coll = 0; in->coll < PC_COUNT && strcmp(plan_coll_names[in->coll], w); in->coll++)
			;
		return in->coll == PC_COUNT ? fail(r, "unknown collective '%.40s' (allreduce, allgather, alltoall, reducescatter)", w) : 0;
	}
	return ref(r, NS_EVENT, w, &in->event);
}

static void instr_release(PlanInstr *in)
{
	for (int i = 0; i < in->attrs.n; i++) {
		rt_free(in->attrs.a[i].ints);
		rt_free(in->attrs.a[i].floats);
	}
	rt_free(in->attrs.a);
	rt_free(in->tile);
	rt_free(in->in);
	rt_free(in->out);
}

static int rd_instr(Rd *r, PlanInstrKind kind)
{
	if (r->stream < 0)
		return fail(r, "instruction outside a stream");
	if (r->expect == 0)
		return fail(r, "stream '%s' has more instructions than its count", r->p->streams[r->stream].name);
	PlanInstr in;
	plan_instr_init(&in, kind);
	int rc = rd_head(r, &in);
	if (rc == 0)
		rc = rd_common(r, &in);
	if (rc == 0 && kind == PI_KERNEL)
		rc = rd_opts(r, &in.opts);
	if (rc == 0)
		rc = rd_extras(r, &in);
	if (rc == 0)
		rc = check_fields(r);
	in.line = r->line;
	if (rc == 0 && plan_add_instr(r->p, r->stream, &in, r->e) < 0)
		rc = oom(r);
	instr_release(&in);
	r->expect--;
	return rc;
}

/* ---- lines ---- */
static int close_stream(Rd *r)
{
	if (r->stream >= 0 && r->expect > 0) {
		const PlanStream *s = &r->p->streams[r->stream];
		return fail(r, "stream '%s' (line %d) declares count=%d but has %d instructions",
			    s->name, s->line, s->nins + r->expect, s->nins);
	}
	r->stream = -1;
	return 0;
}

static int rd_header_line(Rd *r, const char *kw)
{
	if (strcmp(kw, "target") == 0) {
		if (r->seen_target++ || r->ntoks != 2 || r->toks[1].val || !name_ok(r->toks[1].key))
			return fail(r, "expected one 'target NAME' line");
		return (r->p->target = rt_strdup(r->toks[1].key)) ? 0 : oom(r);
	}
	if (strcmp(kw, "machine") == 0) {
		const char *h;
		if (r->seen_machine++ || r->ntoks < 2 || r->toks[1].val || !name_ok(r->toks[1].key))
			return fail(r, "expected one 'machine NAME hash=HEX' line");
		r->toks[1].used = 1;
		if (!(h = req(r, "hash")) || check_fields(r))
			return -1;
		char *end;
		errno = 0;
		if (strlen(h) != 16 || strspn(h, "0123456789abcdef") != 16)
			return fail(r, "machine hash must be 16 lowercase hex digits");
		r->p->machine_hash = strtoull(h, &end, 16);
		return (r->p->machine = rt_strdup(r->toks[1].key)) ? 0 : oom(r);
	}
	const char *model = NULL, *binds = NULL, *prec = NULL, *init = NULL;
	Tok *t;
	if ((t = field(r, "model")) && !(model = is_quoted(t->val) ? t->val + 1 : NULL))
		return fail(r, "field 'model' expects a quoted string");
	if ((t = field(r, "bind")) && !(binds = is_quoted(t->val) ? t->val + 1 : NULL))
		return fail(r, "field 'bind' expects a quoted string");
	if ((t = field(r, "init")) && !(init = is_quoted(t->val) ? t->val + 1 : NULL))
		return fail(r, "field 'init' expects a quoted string");
	const char *passes = NULL;
	if ((t = field(r, "passes")) && !(passes = is_quoted(t->val) ? t->val + 1 : NULL))
		return fail(r, "field 'passes' expects a quoted string");
	if ((t = field(r, "precision")) && !name_ok(prec = t->val))
		return fail(r, "bad precision '%.40s'", t->val);
	const char *phase = NULL;
	int64_t context = 0;
	if ((t = field(r, "phase")) && strcmp(phase = t->val, "prefill") && strcmp(phase, "decode") && strcmp(phase, "train"))
		return fail(r, "bad phase '%.40s' (expected prefill, decode or train)", t->val);
	if (phase && req_i64(r, "context", &context) < 0)
		return -1;
	if (phase && context < 1)
		return fail(r, "phase needs context=N (N >= 1)");
	double mf = 0;
	int64_t mbs = 1;
	if (opt_f64(r, "model_flops", &mf) < 0 || (field(r, "micro_batches") && req_i64(r, "micro_batches", &mbs) < 0))
		return -1;
	if (mbs < 1 || mbs > 1 << 20)
		return fail(r, "micro_batches must be at least 1");
	if (!(mf >= 0 && mf < 1e30))
		return fail(r, "model_flops must be a number >= 0");
	const char *mh = NULL;
	if ((t = field(r, "model_hash")) && (strlen(mh = t->val) != 16 || strspn(mh, "0123456789abcdef") != 16))
		return fail(r, "model_hash must be 16 lowercase hex digits");
	if (check_fields(r) < 0)
		return -1;
	if (mh)
		memcpy(r->p->source.model_hash, mh, 17);
	if (plan_set_source(r->p, model, binds, prec, r->e) < 0 || plan_set_source_init(r->p, init, r->e) < 0 ||
	    plan_set_source_phase(r->p, phase, context, r->e) < 0 || plan_set_source_passes(r->p, passes, r->e) < 0)
		return oom(r);
	r->p->source.model_flops = phase ? mf : 0;
	r->p->source.micro_batches = phase ? mbs : 1;
	return 0;
}

static int rd_line(Rd *r)
{
	const char *kw = r->toks[0].key;
	static const char *const instrs[PI_COUNT] = { "kernel", "copy", "collective", "record", "wait" };
	for (int k = 0; k < PI_COUNT; k++)
		if (strcmp(kw, instrs[k]) == 0)
			return rd_instr(r, (PlanInstrKind)k);
	if (close_stream(r) < 0)
		return -1;
	if (r->toks[0].val)
		return fail(r, "expected a keyword, found field '%.40s'", kw);
	if (!strcmp(kw, "target") || !strcmp(kw, "machine") || !strcmp(kw, "source"))
		return rd_header_line(r, kw);
	if (!strcmp(kw, "device")) return rd_device(r);
	if (!strcmp(kw, "space")) return rd_space(r);
	if (!strcmp(kw, "unit")) return rd_unit(r);
	if (!strcmp(kw, "link")) return rd_link(r);
	if (!strcmp(kw, "buffer")) return rd_buffer(r);
	if (!strcmp(kw, "const")) return rd_const(r);
	if (!strcmp(kw, "input")) return rd_io(r, 0);
	if (!strcmp(kw, "output")) return rd_io(r, 1);
	if (!strcmp(kw, "event")) return rd_event(r);
	if (!strcmp(kw, "stream")) return rd_stream(r);
	if (!strcmp(kw, "end")) {
		r->seen_end = 1;
		return r->ntoks == 1 ? 0 : fail(r, "'end' takes no fields");
	}
	return fail(r, "unknown keyword '%.40s'", kw);
}

/* The first line must be "aicc-plan 1". */
static int rd_version(Rd *r, char *line)
{
	if (tokenize(r, line) < 0)
		return -1;
	int64_t v;
	if (r->ntoks != 2 || strcmp(r->toks[0].key, "aicc-plan") || r->toks[1].val)
		return fail(r, "not an aicc plan: the first line must be 'aicc-plan %d'", PLAN_VERSION);
	if (parse_i64(r, "version", r->toks[1].key, &v) < 0)
		return -1;
	if (v != PLAN_VERSION)
		return fail(r, "plan format version %" PRId64 " is not supported (this aicc reads version %d)",
			    v, PLAN_VERSION);
	return 0;
}

/* Feeds every line to the parser; returns 0 or -1. */
static int rd_lines(Rd *r, const char *text, size_t len)
{
	char *buf = NULL;
	size_t cap = 0, pos = 0;
	int rc = 0;
	for (r->line = 1; rc == 0 && pos < len; r->line++) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		if (n + 1 > cap) {
			char *nb = rt_realloc(buf, cap = n + 1);
			if (!nb) {
				rc = oom(r);
				break;
			}
			buf = nb;
		}
		memcpy(buf, text + pos, n);
		buf[n] = 0;
		pos += n + 1;
		if (n && buf[n - 1] == '\r')
			buf[--n] = 0;
		if (strlen(buf) != n)
			rc = fail(r, "NUL byte in the plan");
		else if (!nl && !r->seen_end && strcmp(buf + strspn(buf, " \t"), "end") != 0)
			/* plans end with "end\n": a last line without its newline is where a copy stopped
			 * (before: "unknown word 'a.' on a kernel line", newcomer finding 15) */
			rc = fail(r, "truncated plan: the file ends inside line %d, before the closing 'end' line", r->line);
		else if (r->line == 1)
			rc = rd_version(r, buf);
		else if (r->seen_end)
			rc = strspn(buf, " \t") == n ? 0 : fail(r, "text after 'end'");
		else if (buf[strspn(buf, " \t")] == '#')
			continue;   /* a comment line */
		else if ((rc = tokenize(r, buf)) == 0 && r->ntoks)
			rc = rd_line(r);
	}
	rt_free(buf);
	return rc;
}

static int rd_finish(Rd *r)
{
	if (!r->seen_end) {
		if (close_stream(r) < 0)
			return -1;
		return fail(r, "truncated plan: the file ends without the closing 'end' line");
	}
	if (!r->seen_target || !r->seen_machine)
		return fail(r, "the plan lacks a '%s' line", r->seen_target ? "machine" : "target");
	return 0;
}

Plan *plan_parse(const char *file, const char *text, size_t len, RtError *e)
{
	Rd r = { .file = file ? file : "<plan>", .e = e, .stream = -1 };
	e->code = 0;
	r.p = rt_calloc(1, sizeof *r.p);
	if (!r.p) {
		oom(&r);
		return NULL;
	}
	r.p->file = r.file;
	int rc = len == 0 ? (r.line = 1, fail(&r, "empty file: not an aicc plan")) : rd_lines(&r, text, len);
	if (rc == 0) {
		r.line--;
		rc = rd_finish(&r);
	}
	for (int i = 0; i < NS_COUNT; i++) {
		rt_free(r.maps[i].keys);
		rt_free(r.maps[i].vals);
	}
	rt_free(r.toks);
	rt_free(r.is_const);
	if (rc == 0)
		rc = plan_verify(r.p, e);
	if (rc < 0) {
		plan_free(r.p);
		return NULL;
	}
	return r.p;
}

Plan *plan_read(const char *path, RtError *e)
{
	RtMapped m;     /* the file's own size: a device or FIFO is refused, never read to EOF */
	if (rt_file_map(path, &m, e) < 0) {
		const char *why = strstr(e->msg, ": cannot "), *colon = why ? strchr(why + 2, ':') : NULL;
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", colon ? colon + 2 : e->msg);
		rt_errorf(e, e->code, "%s: error: cannot %s plan: %s", path, why && !strncmp(why, ": cannot open", 13) ? "open" : "read", msg);
		return NULL;
	}
	Plan *p = plan_parse(path, m.addr ? m.addr : "", m.len, e);
	rt_file_unmap(&m);
	return p;
}
