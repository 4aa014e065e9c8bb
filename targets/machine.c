/* targets/machine.c: the one loader of machine descriptions, their --set overrides and queries.
 *
 * Loading reads the file into memory (hashing it with FNV-1a 64 for plans), parses it with
 * libxml2 (no network, no DTDs, no entity expansion), validates it against
 * targets/machines/machine.rng with xmlRelaxNGValidateDoc, and then walks the tree into the
 * structs of targets/machine.h, checking what the schema cannot: each number's unit against its
 * field, ranges, that sources resolve, unique names, that links name devices.  Every problem is
 * reported as "file.xml:LINE: error: message" with the line of the offending element, and
 * loading continues to report several; a hostile file gets errors, never a crash.
 *
 * Every number is registered under its path ("gpu.smem.capacity") in a field table: that table
 * is what machine_set / machine_get use, what `aicc machines NAME` prints, and what lets
 * per-clock quantities be recomputed after the clock is overridden.  All memory of a Machine lives
 * in one arena freed by machine_free.
 */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/relaxng.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "ir/suggest.h"
#include "targets/machine.h"

_Static_assert(DT_COUNT <= 64, "dtype sets are 64-bit masks");

enum { MAX_FILE = 8 << 20, MAX_ERRORS = 20 };

/* ---- arena: every string and array of a Machine ---- */

struct MachArena {
	MachArena *next;
	size_t used, cap;
	max_align_t data[];
};

static void *ar_alloc(Machine *m, size_t n)
{
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	MachArena *a = m->arena;
	if (!a || a->cap - a->used < n) {
		size_t cap = n > 16384 ? n : 16384;
		MachArena *b = calloc(1, sizeof *b + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->next = a;
		m->arena = a = b;
	}
	void *p = (char *)a->data + a->used;
	a->used += n;
	return p;
}

static char *ar_strdup(Machine *m, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = ar_alloc(m, n);
	if (p)
		memcpy(p, s, n);
	return p;
}

/* ---- units: how each field's numbers may be written ---- */

typedef enum Dim { D_COUNT, D_RATIO, D_BYTES, D_BW, D_TIME, D_FREQ, D_FLOPS, D_OPS, D_POWER } Dim;

static const struct UnitDef {
	const char *name;
	Dim dim;
	double scale;
	Per per;
} unit_table[] = {
	{"B", D_BYTES, 1, PER_ONE}, {"KB", D_BYTES, 1e3, PER_ONE}, {"MB", D_BYTES, 1e6, PER_ONE},
	{"GB", D_BYTES, 1e9, PER_ONE}, {"TB", D_BYTES, 1e12, PER_ONE},
	{"KiB", D_BYTES, 1024.0, PER_ONE}, {"MiB", D_BYTES, 1048576.0, PER_ONE},
	{"GiB", D_BYTES, 1073741824.0, PER_ONE}, {"TiB", D_BYTES, 1099511627776.0, PER_ONE},
	{"B/s", D_BW, 1, PER_ONE}, {"MB/s", D_BW, 1e6, PER_ONE}, {"GB/s", D_BW, 1e9, PER_ONE},
	{"TB/s", D_BW, 1e12, PER_ONE}, {"PB/s", D_BW, 1e15, PER_ONE},
	{"GiB/s", D_BW, 1073741824.0, PER_ONE}, {"TiB/s", D_BW, 1099511627776.0, PER_ONE},
	{"Gb/s", D_BW, 1e9 / 8, PER_ONE}, {"Tb/s", D_BW, 1e12 / 8, PER_ONE},
	{"Pb/s", D_BW, 1e15 / 8, PER_ONE}, {"B/clk", D_BW, 1, PER_CLK},
	{"s", D_TIME, 1, PER_ONE}, {"ms", D_TIME, 1e-3, PER_ONE}, {"us", D_TIME, 1e-6, PER_ONE},
	{"ns", D_TIME, 1e-9, PER_ONE}, {"clk", D_TIME, 1, PER_CYCLE},
	{"Hz", D_FREQ, 1, PER_ONE}, {"kHz", D_FREQ, 1e3, PER_ONE}, {"MHz", D_FREQ, 1e6, PER_ONE},
	{"GHz", D_FREQ, 1e9, PER_ONE},
	{"FLOP/s", D_FLOPS, 1, PER_ONE}, {"GFLOP/s", D_FLOPS, 1e9, PER_ONE},
	{"TFLOP/s", D_FLOPS, 1e12, PER_ONE}, {"PFLOP/s", D_FLOPS, 1e15, PER_ONE},
	{"OP/s", D_FLOPS, 1, PER_ONE}, {"GOP/s", D_FLOPS, 1e9, PER_ONE},
	{"TOP/s", D_FLOPS, 1e12, PER_ONE}, {"POP/s", D_FLOPS, 1e15, PER_ONE},
	{"FLOP/clk/unit", D_FLOPS, 1, PER_CLK_UNIT}, {"OP/clk/unit", D_FLOPS, 1, PER_CLK_UNIT},
	{"op/s", D_OPS, 1, PER_ONE}, {"op/clk", D_OPS, 1, PER_CLK},
	{"W", D_POWER, 1, PER_ONE}, {"kW", D_POWER, 1e3, PER_ONE},
	{"%", D_RATIO, 0.01, PER_ONE},
};

static const char *const dim_names[] = {
	[D_COUNT] = "a count (no unit)", [D_RATIO] = "a fraction (no unit, or %)",
	[D_BYTES] = "bytes", [D_BW] = "bytes/s", [D_TIME] = "seconds", [D_FREQ] = "Hz",
	[D_FLOPS] = "FLOP/s", [D_OPS] = "operations/s per unit", [D_POWER] = "watts",
};

/* Units of dimension d, comma separated, for error messages. */
static void dim_units(Dim d, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++)
		if (unit_table[i].dim == d && n < len)
			n += snprintf(buf + n, len - n, "%s%s", n ? ", " : "", unit_table[i].name);
}

static const struct UnitDef *unit_find(const char *name)
{
	for (size_t i = 0; i < sizeof unit_table / sizeof unit_table[0]; i++)
		if (strcmp(unit_table[i].name, name) == 0)
			return &unit_table[i];
	return NULL;
}

/* Range rules per field. */
typedef enum Rule { R_POS, R_NONNEG, R_COUNT, R_FRAC, R_GE1, R_DEVCOUNT, R_SHARE } Rule;

/* The range of a quantity as the targets and the timing engine use it, in SI units: wide enough
 * for any real machine, narrow enough that what is derived from it (bytes / bandwidth, flops /
 * peak, capacity x units, int64 byte counts) stays finite, positive and in range.  A per-clock
 * value is checked after it is multiplied out (issue 18: `vpeak 1e308 FLOP/clk/unit` became inf,
 * `--set hbm.bandwidth=1e-300` a latency of 0). */
static const struct { double lo, hi; const char *unit; } si_range[] = {
	[D_COUNT] = { 0, 1e9, "" }, [D_RATIO] = { 0, 1e9, "" }, [D_BYTES] = { 1, 1152921504606846976.0, " B" },
	[D_BW] = { 1, 1e18, " B/s" }, [D_TIME] = { 0, 1e4, " s" }, [D_FREQ] = { 1e3, 1e12, " Hz" },
	[D_FLOPS] = { 1e3, 1e21, " FLOP/s" }, [D_OPS] = { 1, 1e21, " op/s" }, [D_POWER] = { 0, 1e9, " W" },
};

/* Checks the value as used (SI, per-clock quantities multiplied out); message in err. */
static int si_check(Dim dim, Rule rule, double v, char *err, size_t errlen)
{
	if (dim == D_COUNT || dim == D_RATIO)
		return 0;     /* the rule itself bounds these */
	double lo = rule == R_NONNEG ? 0 : si_range[dim].lo, hi = si_range[dim].hi;
	if (!isfinite(v) || v < lo || v > hi || (rule != R_NONNEG && v <= 0))
		return snprintf(err, errlen, "is %g%s as used, outside the accepted range [%g, %g]%s", v, si_range[dim].unit,
				lo, hi, si_range[dim].unit), -1;
	return 0;
}

/* The --set registry: every number with its canonical path. */
struct MachField {
	const char *path;
	Num *num;
	Dim dim;
	Rule rule;
	Device *dev;       /* for per-clock derivation; NULL for links */
};

/* ---- load context and diagnostics ---- */

typedef struct Ld {
	Machine *m;
	const char *file;
	FILE *diag;
	int nerr;
	int schema_errs;      /* RelaxNG errors seen; only the first is reported */
	int oom;
} Ld;

static void lerr(Ld *ld, long line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void lerr(Ld *ld, long line, const char *fmt, ...)
{
	if (++ld->nerr > MAX_ERRORS)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (line > 0)
		fprintf(ld->diag, "%s:%ld: error: ", ld->file, line);
	else
		fprintf(ld->diag, "%s: error: ", ld->file);
	vfprintf(ld->diag, fmt, ap);
	fputc('\n', ld->diag);
	va_end(ap);
	if (ld->nerr == MAX_ERRORS)
		fprintf(ld->diag, "%s: error: too many errors, stopping\n", ld->file);
}

static long node_line(xmlNode *n) { return n ? xmlGetLineNo(n) : 0; }

/* Attribute `name` of n copied into the arena, or NULL. */
static const char *attr(Ld *ld, xmlNode *n, const char *name)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
	if (!v)
		return NULL;
	const char *s = ar_strdup(ld->m, (const char *)v);
	xmlFree(v);
	if (!s)
		ld->oom = 1;
	return s;
}

static int attr_yes(Ld *ld, xmlNode *n, const char *name)
{
	const char *v = attr(ld, n, name);
	return v && strcmp(v, "yes") == 0;
}

static const char *content(Ld *ld, xmlNode *n)
{
	xmlChar *v = xmlNodeGetContent(n);
	const char *s = ar_strdup(ld->m, v ? (const char *)v : "");
	xmlFree(v);
	if (!s)
		ld->oom = 1;
	return s;
}

static int is_elem(xmlNode *n, const char *name)
{
	return n && n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* Next element sibling starting at n (n itself if it is one). */
static xmlNode *elem(xmlNode *n)
{
	while (n && n->type != XML_ELEMENT_NODE)
		n = n->next;
	return n;
}

/* ---- provenance ---- */

static const char *const prov_names[] = {
	"none", "vendor", "measured", "estimate", "preliminary", "override",
};
const char *prov_name(Prov p) { return p <= PROV_OVERRIDE ? prov_names[p] : "?"; }

static Prov prov_parse(const char *s)
{
	for (int p = PROV_VENDOR; p <= PROV_PRELIMINARY; p++)
		if (s && strcmp(s, prov_names[p]) == 0)
			return p;
	return PROV_NONE;
}

/* A source is a URL, a section of the reference notes, or a key declared by <source>. */
static int source_ok(const Machine *m, const char *s)
{
	if (strstr(s, "://") || strncmp(s, "hardware.md", 11) == 0 || strncmp(s, "backends.md", 11) == 0
	    || strncmp(s, "reference/", 10) == 0)
		return 1;
	return machine_source_url(m, s) != NULL;
}

/* Reads source, kind and note of n into the out parameters; reports what is wrong. */
static void read_prov(Ld *ld, xmlNode *n, const char **source, Prov *prov, const char **note)
{
	*source = attr(ld, n, "source");
	*prov = prov_parse(attr(ld, n, "kind"));
	*note = attr(ld, n, "note");
	if (*source && !source_ok(ld->m, *source))
		lerr(ld, node_line(n), "<%s>: source '%s' is not declared (add <source key=\"%s\" "
		     "url=\"...\"/>, or give a URL or a hardware.md section)", n->name, *source, *source);
	if (*prov == PROV_ESTIMATE && (!*note || !**note))
		lerr(ld, node_line(n), "<%s>: an estimate needs a note saying how it was derived",
		     n->name);
}

/* ---- the field registry ---- */

static MachField *field_find(const Machine *m, const char *path)
{
	for (int i = 0; i < m->nfields; i++)
		if (strcmp(m->fields[i].path, path) == 0)
			return &m->fields[i];
	return NULL;
}

static void reg(Ld *ld, Num *num, Dim dim, Rule rule, Device *dev, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void reg(Ld *ld, Num *num, Dim dim, Rule rule, Device *dev, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	Machine *m = ld->m;
	MachField *old = field_find(m, path);
	if (old) {
		lerr(ld, num->line, "duplicate field '%s' (first given at line %d)", path, old->num->line);
		return;
	}
	if (m->nfields == m->capfields) {
		int cap = m->capfields ? 2 * m->capfields : 64;
		MachField *f = ar_alloc(m, (size_t)cap * sizeof *f);
		if (!f) {
			ld->oom = 1;
			return;
		}
		if (m->nfields)
			memcpy(f, m->fields, (size_t)m->nfields * sizeof *f);
		m->fields = f;
		m->capfields = cap;
	}
	m->fields[m->nfields++] = (MachField){ar_strdup(m, path), num, dim, rule, dev};
}

/* Checks value x (as written, in the written unit's dimension) against rule; message in err. */
static int rule_check(Rule rule, double x, char *err, size_t errlen)
{
	if (!isfinite(x))
		return snprintf(err, errlen, "must be a finite number"), -1;
	switch (rule) {
	case R_POS:
		if (x <= 0)
			return snprintf(err, errlen, "must be positive"), -1;
		break;
	case R_NONNEG:
		if (x < 0)
			return snprintf(err, errlen, "must not be negative"), -1;
		break;
	case R_COUNT:
		if (x < 1 || x != floor(x) || x > 1e9)
			return snprintf(err, errlen, "must be a whole number >= 1"), -1;
		break;
	case R_FRAC:
		if (x <= 0 || x > 1)
			return snprintf(err, errlen, "must be a fraction in (0, 1]"), -1;
		break;
	case R_SHARE:         /* a share that may be none: an engine's offload turned off */
		if (!(x >= 0 && x <= 1))
			return snprintf(err, errlen, "must be a fraction in [0, 1]"), -1;
		break;
	case R_GE1:
		if (x < 1)
			return snprintf(err, errlen, "must be at least 1"), -1;
		break;
	case R_DEVCOUNT:      /* the lowerings walk every device of the machine */
		if (x < 1 || x != floor(x) || x > 65536)
			return snprintf(err, errlen, "must be a whole number in [1, 65536]"), -1;
		break;
	}
	return 0;
}

/* A --set value of these dimensions must carry its unit: `--set hbm.bandwidth=3` read as 3 B/s
 * gave a 19-year latency with no warning (newcomer finding 6).  Counts and fractions take none,
 * bytes default to B, and 0 is 0 in any unit. */
static int unit_required(Dim dim)
{
	return dim == D_BW || dim == D_TIME || dim == D_FREQ || dim == D_FLOPS || dim == D_OPS || dim == D_POWER;
}

/* Parses "value unit" for a field of dimension dim into num (raw, per, text).  unit is the XML's
 * unit attribute ("" when absent: the SI base unit); NULL for a --set value, whose unit follows
 * the number ("4.8TB/s") and is required where unit_required says so.  text is written
 * "4.8 TB/s" either way.  Returns 0, or -1 with a message. */
static int value_parse(Machine *m, const char *value, const char *unit, Dim dim, Rule rule,
		       Num *num, char *err, size_t errlen)
{
	char *end;
	double x = strtod(value, &end);   /* a subnormal or 0 from underflow: refused by the range checks */
	if (end == value)
		return snprintf(err, errlen, "'%s' is not a number", value), -1;
	int numlen = (int)(end - value);
	if (isinf(x) && !strpbrk(value, "iI"))
		return snprintf(err, errlen, "%.*s is beyond a double's range (magnitude at most %g)", numlen,
				value, DBL_MAX), -1;
	int set = unit == NULL;
	while (*end == ' ')
		end++;
	if (*end && !set)
		return snprintf(err, errlen, "'%s' is not a number", value), -1;
	if (set)
		unit = end;
	if (set && !*unit && x != 0 && unit_required(dim)) {
		char list[512];
		dim_units(dim, list, sizeof list);
		return snprintf(err, errlen, "'%s' has no unit; give %s as one of %s (accepted range [%g, %g]%s%s%s)",
				value, dim_names[dim], list, si_range[dim].lo, si_range[dim].hi, si_range[dim].unit,
				num->text ? "; the machine's value is " : "", num->text ? num->text : ""), -1;
	}
	if (set && !*unit && dim == D_BYTES)
		unit = "B";
	double scale = 1;
	Per per = PER_ONE;
	if (*unit) {
		const struct UnitDef *u = unit_find(unit);
		if (!u || u->dim != dim) {
			char list[512];
			dim_units(dim, list, sizeof list);
			if (dim == D_COUNT)
				return snprintf(err, errlen, "unit '%s' given for a count, which takes none",
						unit), -1;
			return snprintf(err, errlen, "unknown unit '%s' for %s (expected %s)", unit,
					dim_names[dim], list), -1;
		}
		scale = u->scale;
		per = u->per;
	}
	char text[96], why[160];
	snprintf(text, sizeof text, "%.*s%s%s", numlen, value, *unit ? " " : "", unit);
	if (rule_check(rule, x * (dim == D_RATIO ? scale : 1), why, sizeof why) < 0)
		return snprintf(err, errlen, "%s, got %s", why, text), -1;
	if (per == PER_ONE && si_check(dim, rule, x * scale, why, sizeof why) < 0)
		return snprintf(err, errlen, "%s %s", text, why), -1;
	num->raw = x * scale;
	num->per = per;
	num->v = x * scale;
	num->text = ar_strdup(m, text);
	return 0;
}

/* Reads the quantity element n into num and registers it under the formatted path. */
static void qty(Ld *ld, xmlNode *n, Num *num, Dim dim, Rule rule, Device *dev, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
static void qty(Ld *ld, xmlNode *n, Num *num, Dim dim, Rule rule, Device *dev, const char *fmt, ...)
{
	char path[256], err[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	num->line = (int)node_line(n);
	read_prov(ld, n, &num->source, &num->prov, &num->note);
	const char *value = attr(ld, n, "value"), *unit = attr(ld, n, "unit");
	if (!value)
		return;
	if (value_parse(ld->m, value, unit ? unit : "", dim, rule, num, err, sizeof err) < 0) {
		lerr(ld, num->line, "%s: %s", path, err);
		num->prov = PROV_NONE;
		return;
	}
	if (num->per != PER_ONE && !dev)
		lerr(ld, num->line, "%s: a per-clock unit needs a device clock", path);
	reg(ld, num, dim, rule, dev, "%s", path);
}

/* ---- names ---- */

/* Claims `name` in the namespace of one device (or the machine when dev is NULL). */
typedef struct Names {
	const char *name[256];
	int line[256];
	int n;
} Names;

/* Returns 0, or -1 (reported) if the name is taken. */
static int claim(Ld *ld, Names *ns, const char *name, int line, const char *what)
{
	if (!name)
		return -1;
	for (int i = 0; i < ns->n; i++)
		if (strcmp(ns->name[i], name) == 0) {
			lerr(ld, line, "%s name '%s' is already used (line %d)", what, name, ns->line[i]);
			return -1;
		}
	if (ns->n < 256) {
		ns->name[ns->n] = name;
		ns->line[ns->n++] = line;
	}
	return 0;
}

/* Parses a list of dtype names into a mask; kind_block selects block-scaled or element types. */
static uint64_t dtype_list(Ld *ld, xmlNode *n, const char *list, int block)
{
	uint64_t mask = 0;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", list ? list : "");
	for (char *save = NULL, *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		DType dt = rt_dtype_lookup(t);
		if (dt == DT_INVALID)
			lerr(ld, node_line(n), "<%s>: unknown dtype '%s'", n->name, t);
		else if ((rt_dtypes[dt].kind == K_BLOCK) != block)
			lerr(ld, node_line(n), "<%s>: '%s' %s", n->name, t, block
			     ? "is not a block-scaled format" : "is block-scaled (list it in <block-scaled>)");
		else
			mask |= UINT64_C(1) << dt;
	}
	return mask;
}

/* ---- devices ---- */

static const char *const devkind_names[] = {"gpu", "tpu", "lpu", "cpu", "wafer", "asic"};
static const char *const memkind_names[] = {
	"reg", "smem", "tmem", "l1", "l2", "hbm", "dram", "vmem", "sram", "rom",
};
static const char *const topo_names[] = {"switch", "torus", "mesh", "ring", "p2p"};

const char *devkind_name(DevKind k) { return k <= DEV_ASIC ? devkind_names[k] : "?"; }
const char *memkind_name(MemKind k) { return k <= MEM_ROM ? memkind_names[k] : "?"; }
const char *topo_name(Topo t) { return t <= TOPO_P2P ? topo_names[t] : "?"; }

static int lookup(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return 0;
}

/* Counts element children of n named `name`. */
static int count_children(xmlNode *n, const char *name)
{
	int c = 0;
	for (xmlNode *k = n->children; k; k = k->next)
		c += is_elem(k, name);
	return c;
}

static void *ar_array(Ld *ld, int n, size_t size)
{
	if (n == 0)
		return NULL;
	void *p = ar_alloc(ld->m, (size_t)n * size);
	if (!p)
		ld->oom = 1;
	else
		memset(p, 0, (size_t)n * size);
	return p;
}

static void parse_units(Ld *ld, Device *d, xmlNode *n, Names *ns)
{
	Unit *u = &d->units[d->nunits++];
	u->name = attr(ld, n, "name");
	u->line = (int)node_line(n);
	if (claim(ld, ns, u->name, u->line, "units") < 0)
		return;
	for (xmlNode *k = elem(n->children); k; k = elem(k->next)) {
		if (is_elem(k, "count"))
			qty(ld, k, &u->count, D_COUNT, R_COUNT, d, "%s.%s.count", d->id, u->name);
		else if (is_elem(k, "size"))
			qty(ld, k, &u->size, D_COUNT, R_COUNT, d, "%s.%s.size", d->id, u->name);
		else if (is_elem(k, "latency"))
			qty(ld, k, &u->latency, D_TIME, R_NONNEG, d, "%s.%s.latency", d->id, u->name);
	}
}

/* "64 128" into m[]; returns the count. */
static int int_list(const char *s, int *out, int max)
{
	int n = 0;
	while (s && *s && n < max) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s)
			break;
		out[n++] = v > INT_MAX ? INT_MAX : (int)v;
		s = end;
	}
	return n;
}

static int int_attr(Ld *ld, xmlNode *n, const char *name, int dflt)
{
	const char *s = attr(ld, n, name);
	if (!s)
		return dflt;
	long v = strtol(s, NULL, 10);
	return v > 1000000 ? 1000000 : (int)v;
}

/* <fp8-scaling activations="RxK" weights="KxN" [promote="N_C"]>: both shapes positive. */
static void parse_fp8_scaling(Ld *ld, Device *d, xmlNode *n)
{
	const char *src, *note;
	Prov p;
	read_prov(ld, n, &src, &p, &note);
	static const char *const names[2] = { "activations", "weights" };
	for (int i = 0; i < 2; i++) {
		int *b = i ? d->fp8_wt : d->fp8_act;
		const char *s = attr(ld, n, names[i]);
		char end = 0;
		if (!s || sscanf(s, "%dx%d%c", &b[0], &b[1], &end) != 2 || b[0] <= 0 || b[1] <= 0) {
			lerr(ld, node_line(n), "<fp8-scaling>: %s='%s' is not a block shape ROWSxCOLS", names[i], s ? s : "");
			b[0] = b[1] = 0;
		}
	}
	d->fp8_promote = int_attr(ld, n, "promote", 0);
}

static void parse_mma(Ld *ld, Device *d, xmlNode *n)
{
	MmaFamily *f = &d->mma[d->nmma++];
	f->name = attr(ld, n, "family");
	f->issue = attr(ld, n, "issue");
	f->a = attr(ld, n, "a");
	f->b = attr(ld, n, "b");
	f->acc = attr(ld, n, "acc");
	f->line = (int)node_line(n);
	const char *note;
	read_prov(ld, n, &f->source, &f->prov, &note);
	for (int i = 0; i < d->nmma - 1; i++)
		if (strcmp(d->mma[i].name, f->name) == 0)
			lerr(ld, f->line, "mma family '%s' is already described (line %d)", f->name,
			     d->mma[i].line);
	f->shapes = ar_array(ld, count_children(n, "shape"), sizeof *f->shapes);
	for (xmlNode *k = elem(n->children); k && f->shapes; k = elem(k->next)) {
		MmaShape *s = &f->shapes[f->nshapes++];
		s->line = (int)node_line(k);
		const char *dts = attr(ld, k, "dtypes");
		/* element and block-scaled kinds are both legal MMA operand types */
		char buf[512];
		snprintf(buf, sizeof buf, "%s", dts ? dts : "");
		for (char *sv = NULL, *t = strtok_r(buf, " ", &sv); t; t = strtok_r(NULL, " ", &sv)) {
			DType dt = rt_dtype_lookup(t);
			if (dt == DT_INVALID)
				lerr(ld, s->line, "<shape>: unknown dtype '%s'", t);
			else
				s->dtypes |= UINT64_C(1) << dt;
		}
		s->nm = int_list(attr(ld, k, "m"), s->m, 4);
		s->nmin = int_attr(ld, k, "n", 0);
		s->nmax = int_attr(ld, k, "nmax", s->nmin);
		s->nstep = int_attr(ld, k, "nstep", 8);
		s->k = int_attr(ld, k, "k", 0);
		if (s->nmax < s->nmin)
			lerr(ld, s->line, "<shape>: nmax %d is below n %d", s->nmax, s->nmin);
		/* the tile search multiplies these (targets/gpu/tile.c: M x 4, N x stages): keep them
		 * to instruction sizes (the largest today: 256) */
		int bad = s->nm == 0 || s->nmin < 1 || s->nmax > 4096 || s->nstep < 1 || s->nstep > 4096 || s->k < 1 ||
			  s->k > 4096;
		for (int i = 0; i < s->nm; i++)
			bad |= s->m[i] < 1 || s->m[i] > 4096;
		if (bad)
			lerr(ld, s->line, "<shape>: m, n, nmax, nstep and k must be whole numbers in [1, 4096]");
	}
}

static void parse_mem(Ld *ld, Device *d, xmlNode *n, Names *ns)
{
	MemSpace *s = &d->mems[d->nmems++];
	s->kind = lookup(memkind_names, MEM_ROM + 1, attr(ld, n, "kind"));
	s->name = attr(ld, n, "name");
	if (!s->name)
		s->name = memkind_names[s->kind];
	s->scope = strcmp(attr(ld, n, "scope") ? attr(ld, n, "scope") : "", "unit") == 0
		 ? SCOPE_UNIT : SCOPE_DEVICE;
	s->line = (int)node_line(n);
	if (claim(ld, ns, s->name, s->line, "memory space") < 0)
		return;
	const char *id = d->id, *nm = s->name;
	for (xmlNode *k = elem(n->children); k; k = elem(k->next)) {
		if (is_elem(k, "capacity"))
			qty(ld, k, &s->capacity, D_BYTES, R_POS, d, "%s.%s.capacity", id, nm);
		else if (is_elem(k, "usable"))
			qty(ld, k, &s->usable, D_BYTES, R_POS, d, "%s.%s.usable", id, nm);
		else if (is_elem(k, "bandwidth"))
			qty(ld, k, &s->bandwidth, D_BW, R_POS, d, "%s.%s.bandwidth", id, nm);
		else if (is_elem(k, "efficiency"))
			qty(ld, k, &s->efficiency, D_RATIO, R_FRAC, d, "%s.%s.efficiency", id, nm);
		else if (is_elem(k, "latency"))
			qty(ld, k, &s->latency, D_TIME, R_NONNEG, d, "%s.%s.latency", id, nm);
	}
	if (num_has(&s->usable) && num_has(&s->capacity) && s->usable.raw > s->capacity.raw)
		lerr(ld, s->usable.line, "%s.%s.usable (%s) exceeds its capacity (%s)", id, nm,
		     s->usable.text, s->capacity.text);
}

static void parse_engine(Ld *ld, Device *d, xmlNode *n, Names *ns)
{
	Engine *e = &d->engines[d->nengines++];
	e->name = attr(ld, n, "name");
	e->kind = attr(ld, n, "kind");
	e->multicast = attr_yes(ld, n, "multicast");
	e->reduce = attr_yes(ld, n, "reduce");
	e->line = (int)node_line(n);
	if (claim(ld, ns, e->name, e->line, "engine") < 0)
		return;
	for (xmlNode *k = elem(n->children); k; k = elem(k->next)) {
		if (is_elem(k, "dims"))
			qty(ld, k, &e->dims, D_COUNT, R_COUNT, d, "%s.%s.dims", d->id, e->name);
		else if (is_elem(k, "bandwidth"))
			qty(ld, k, &e->bandwidth, D_BW, R_POS, d, "%s.%s.bandwidth", d->id, e->name);
		else if (is_elem(k, "latency"))
			qty(ld, k, &e->latency, D_TIME, R_NONNEG, d, "%s.%s.latency", d->id, e->name);
		else if (is_elem(k, "offload"))   /* the share of a collective's compute-unit work it takes */
			qty(ld, k, &e->offload, D_RATIO, R_SHARE, d, "%s.%s.offload", d->id, e->name);
	}
}

/* A <peak> or <vpeak>: dtype attribute, FLOP/s. */
static void parse_peak(Ld *ld, Device *d, xmlNode *n, Num *table, const char *what)
{
	const char *s = attr(ld, n, "dtype");
	DType dt = rt_dtype_lookup(s ? s : "");
	if (dt == DT_INVALID) {
		lerr(ld, node_line(n), "<%s>: unknown dtype '%s'", what, s ? s : "");
		return;
	}
	qty(ld, n, &table[dt], D_FLOPS, R_POS, d, "%s.%s.%s", d->id, what, s);
}

static void parse_device(Ld *ld, Device *d, xmlNode *n)
{
	static const char *const reserved[] = {
		"count", "clock", "tdp", "peak", "vpeak", "sparsity", "sfu", "cluster", "efficiency",
	};
	Names *ns = calloc(1, sizeof *ns);
	if (!ns) {
		ld->oom = 1;
		return;
	}
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		claim(ld, ns, reserved[i], 0, "reserved");
	d->id = attr(ld, n, "id");
	d->kind = lookup(devkind_names, DEV_ASIC + 1, attr(ld, n, "kind"));
	d->vendor = attr(ld, n, "vendor");
	d->arch = attr(ld, n, "arch");
	d->role = attr(ld, n, "role");
	d->static_schedule = strcmp(attr(ld, n, "schedule") ? attr(ld, n, "schedule") : "", "static") == 0;
	d->line = (int)node_line(n);
	d->units = ar_array(ld, count_children(n, "units"), sizeof *d->units);
	d->mma = ar_array(ld, count_children(n, "mma"), sizeof *d->mma);
	d->mems = ar_array(ld, count_children(n, "mem"), sizeof *d->mems);
	d->engines = ar_array(ld, count_children(n, "engine"), sizeof *d->engines);
	d->effs = ar_array(ld, count_children(n, "efficiency"), sizeof *d->effs);
	if (ld->oom) {
		free(ns);
		return;
	}
	const char *id = d->id;
	for (xmlNode *k = elem(n->children); k; k = elem(k->next)) {
		const char *tag = (const char *)k->name;
		if (!strcmp(tag, "name"))
			d->name = content(ld, k);
		else if (!strcmp(tag, "count"))
			qty(ld, k, &d->count, D_COUNT, R_DEVCOUNT, d, "%s.count", id);
		else if (!strcmp(tag, "clock"))
			qty(ld, k, &d->clock, D_FREQ, R_POS, d, "%s.clock", id);
		else if (!strcmp(tag, "tdp"))
			qty(ld, k, &d->tdp, D_POWER, R_POS, d, "%s.tdp", id);
		else if (!strcmp(tag, "units"))
			parse_units(ld, d, k, ns);
		else if (!strcmp(tag, "peak"))
			parse_peak(ld, d, k, d->peak, "peak");
		else if (!strcmp(tag, "vpeak"))
			parse_peak(ld, d, k, d->vpeak, "vpeak");
		else if (!strcmp(tag, "sparsity"))
			qty(ld, k, &d->sparsity, D_RATIO, R_GE1, d, "%s.sparsity", id);
		else if (!strcmp(tag, "mma"))
			parse_mma(ld, d, k);
		else if (!strcmp(tag, "sfu")) {
			d->sfu.present = 1;
			d->sfu.functions = attr(ld, k, "functions");
			d->sfu.emulation = attr_yes(ld, k, "emulation");
			xmlNode *r = elem(k->children);
			if (r)
				qty(ld, r, &d->sfu.rate, D_OPS, R_POS, d, "%s.sfu.rate", id);
		} else if (!strcmp(tag, "mem"))
			parse_mem(ld, d, k, ns);
		else if (!strcmp(tag, "engine"))
			parse_engine(ld, d, k, ns);
		else if (!strcmp(tag, "cluster")) {
			d->dsmem = attr_yes(ld, k, "dsmem");
			for (xmlNode *c = elem(k->children); c; c = elem(c->next))
				qty(ld, c, is_elem(c, "max") ? &d->cluster_max : &d->cluster_portable, D_COUNT,
				    R_COUNT, d, "%s.cluster.%s", id, (const char *)c->name);
		} else if (!strcmp(tag, "formats")) {
			const char *src, *note;
			Prov p;
			read_prov(ld, k, &src, &p, &note);
			d->formats = dtype_list(ld, k, content(ld, k), 0);
		} else if (!strcmp(tag, "block-scaled")) {
			const char *src, *note;
			Prov p;
			read_prov(ld, k, &src, &p, &note);
			d->block_formats = dtype_list(ld, k, content(ld, k), 1);
			d->scale_space = attr(ld, k, "scales");
		} else if (!strcmp(tag, "fp8-scaling")) {
			parse_fp8_scaling(ld, d, k);
		} else if (!strcmp(tag, "hardwired")) {
			const char *note;
			Prov p;
			read_prov(ld, k, &d->hw_source, &p, &note);
			d->hw_model = attr(ld, k, "model");
			d->hw_precision = attr(ld, k, "precision");
			d->hw_dims = attr(ld, k, "dims");
		} else if (!strcmp(tag, "efficiency")) {
			Efficiency *e = &d->effs[d->neffs++];
			e->name = attr(ld, k, "name");
			/* a named fraction; one given in a time unit is a fixed cost (attention-tile-DTYPE) */
			const char *u = attr(ld, k, "unit");
			int time = u && (!strcmp(u, "s") || !strcmp(u, "ms") || !strcmp(u, "us") || !strcmp(u, "ns"));
			qty(ld, k, &e->value, time ? D_TIME : D_RATIO, time ? R_NONNEG : R_FRAC, d, "%s.efficiency.%s", id, e->name);
		}
	}
	free(ns);
}

/* ---- links ---- */

static void parse_link(Ld *ld, Link *l, xmlNode *n)
{
	l->id = attr(ld, n, "id");
	l->kind = attr(ld, n, "type");
	l->topo = lookup(topo_names, TOPO_P2P + 1, attr(ld, n, "topology"));
	l->line = (int)node_line(n);
	l->wrap = attr_yes(ld, n, "wrap");
	l->twist = attr_yes(ld, n, "twist");
	const char *dir = attr(ld, n, "direction");
	l->bidi = dir && strcmp(dir, "both") == 0;
	const char *note;
	read_prov(ld, n, &l->source, &l->prov, &note);
	const char *from = attr(ld, n, "from"), *to = attr(ld, n, "to");
	l->from = machine_device(ld->m, from ? from : "");
	l->to = machine_device(ld->m, to ? to : "");
	if (!l->from)
		lerr(ld, l->line, "link '%s': no device '%s'", l->id, from ? from : "");
	if (!l->to)
		lerr(ld, l->line, "link '%s': no device '%s'", l->id, to ? to : "");
	const char *shape = attr(ld, n, "shape");
	for (const char *s = shape; s && *s && l->ndims < 4;) {
		char *end;
		l->dims[l->ndims++] = (int)strtol(s, &end, 10);
		s = *end == 'x' ? end + 1 : end;
		if (end == s)
			break;
	}
	if ((l->topo == TOPO_TORUS || l->topo == TOPO_MESH) && l->ndims == 0)
		lerr(ld, l->line, "link '%s': a %s needs a shape (e.g. shape=\"16x16\")", l->id,
		     topo_names[l->topo]);
	for (xmlNode *k = elem(n->children); k; k = elem(k->next)) {
		if (is_elem(k, "bandwidth"))
			qty(ld, k, &l->bandwidth, D_BW, R_POS, NULL, "%s.bandwidth", l->id);
		else if (is_elem(k, "latency"))
			qty(ld, k, &l->latency, D_TIME, R_NONNEG, NULL, "%s.latency", l->id);
		else if (is_elem(k, "ports"))
			qty(ld, k, &l->ports, D_COUNT, R_COUNT, NULL, "%s.ports", l->id);
		else if (is_elem(k, "domain"))
			qty(ld, k, &l->domain, D_COUNT, R_COUNT, NULL, "%s.domain", l->id);
		else if (is_elem(k, "pod"))
			qty(ld, k, &l->pod, D_COUNT, R_COUNT, NULL, "%s.pod", l->id);
		else if (is_elem(k, "oversubscription"))
			qty(ld, k, &l->oversub, D_RATIO, R_GE1, NULL, "%s.oversubscription", l->id);
		else if (is_elem(k, "tiers"))
			qty(ld, k, &l->tiers, D_COUNT, R_COUNT, NULL, "%s.tiers", l->id);
		else if (is_elem(k, "efficiency"))
			qty(ld, k, &l->efficiency, D_RATIO, R_FRAC, NULL, "%s.efficiency", l->id);
	}
}

/* ---- derived values ---- */

/* Recomputes every per-clock quantity from its device's clock and unit count; reports missing
 * clocks through ld when loading (ld may be NULL after overrides). */
static void derive(Machine *m, Ld *ld)
{
	for (int i = 0; i < m->nfields; i++) {
		MachField *f = &m->fields[i];
		Num *n = f->num;
		if (n->per == PER_ONE || !f->dev)
			continue;
		double clk = f->dev->clock.v, units = dev_units(f->dev);
		if (clk <= 0) {
			if (ld)
				lerr(ld, n->line, "%s: '%s' is per clock but device '%s' has no <clock>",
				     f->path, n->text, f->dev->id);
			continue;
		}
		n->v = n->per == PER_CLK ? n->raw * clk
		     : n->per == PER_CLK_UNIT ? n->raw * clk * units : n->raw / clk;
	}
}

/* Every number as the targets use it: per-clock quantities multiplied out within their range,
 * and each memory's capacity over all units of a device within the byte range.  The first
 * violation into err (naming the field); 0 or -1. */
static int check_used(const Machine *m, char *err, size_t errlen, int *line)
{
	char why[200];
	for (int i = 0; i < m->nfields; i++) {
		const MachField *f = &m->fields[i];
		if (!num_has(f->num) || f->num->per == PER_ONE)
			continue;
		if (si_check(f->dim, f->rule, f->num->v, why, sizeof why) < 0) {
			*line = f->num->line;
			return snprintf(err, errlen, "%s: %s per clock at %s %s", f->path, f->num->text,
					f->dev && num_has(&f->dev->clock) ? f->dev->clock.text : "its clock", why), -1;
		}
	}
	for (int d = 0; d < m->ndevs; d++)
		for (int k = 0; k < m->devs[d].nmems; k++) {
			const MemSpace *ms = &m->devs[d].mems[k];
			double tot = mem_total_capacity(&m->devs[d], ms);
			if (num_has(&ms->capacity) && !(tot <= si_range[D_BYTES].hi)) {
				*line = ms->capacity.line;
				return snprintf(err, errlen, "%s.%s.capacity: %s per unit x %g units is %g B, above the accepted "
						"%g B", m->devs[d].id, ms->name, ms->capacity.text, dev_units(&m->devs[d]), tot,
						si_range[D_BYTES].hi), -1;
			}
		}
	return 0;
}

/* ---- schema validation ---- */

/* libxml2's structured error callback: parser and RelaxNG errors as file:LINE: error: ... */
static void xml_error(void *ctx, xmlErrorPtr e)
{
	Ld *ld = ctx;
	if (!e || e->level < XML_ERR_ERROR)
		return;
	char msg[512];
	snprintf(msg, sizeof msg, "%s", e->message ? e->message : "invalid XML");
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = 0;
	xmlNode *node = e->node && e->domain == XML_FROM_RELAXNGV ? (xmlNode *)e->node : NULL;
	if (node) {
		/* After the first mismatch libxml2 backtracks and blames other elements: the
		 * first message is the one that points at the problem. */
		if (ld->schema_errs++ == 0)
			lerr(ld, node_line(node), "<%s>: %s", node->name, msg);
		return;
	}
	lerr(ld, e->line, "%s", msg);
}

/* Collects the element names machine.rng defines (its <element name="..."> patterns). */
static void schema_names(xmlNode *n, Names *ns)
{
	for (; n; n = n->next) {
		if (is_elem(n, "element")) {
			xmlChar *name = xmlGetProp(n, (const xmlChar *)"name");
			if (name && ns->n < 256)
				ns->name[ns->n++] = (const char *)name;
			else
				xmlFree(name);
		}
		schema_names(n->children, ns);
	}
}

/* Checks before RelaxNG what its messages explain badly: element names the schema does not
 * know, and numbers (elements with value=) without a numeric value, a source or a valid kind. */
static void precheck(Ld *ld, xmlNode *n, const Names *known, int depth)
{
	static const char *const prov_elems[] = {"mma", "formats", "block-scaled", "fp8-scaling", "link"};
	for (; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		long line = node_line(n);
		const char *tag = (const char *)n->name;
		int ok = 0;
		for (int i = 0; i < known->n && !ok; i++)
			ok = strcmp(known->name[i], tag) == 0;
		if (!ok) {
			lerr(ld, line, "unknown element <%s> (machine.rng lists the elements)", tag);
			continue;
		}
		int is_num = xmlHasProp(n, (const xmlChar *)"value") != NULL, is_prov = is_num;
		for (size_t i = 0; i < sizeof prov_elems / sizeof prov_elems[0]; i++)
			is_prov |= strcmp(tag, prov_elems[i]) == 0;
		if (is_num) {
			xmlChar *v = xmlGetProp(n, (const xmlChar *)"value");
			char *end;
			strtod((const char *)v, &end);
			if (end == (char *)v || *end)
				lerr(ld, line, "<%s>: value '%s' is not a number", tag, (const char *)v);
			xmlFree(v);
		}
		if (is_prov) {
			xmlChar *k = xmlGetProp(n, (const xmlChar *)"kind");
			if (!xmlHasProp(n, (const xmlChar *)"source"))
				lerr(ld, line, "<%s>: missing attribute 'source' (every number needs a source "
				     "and a kind)", tag);
			else if (!k)
				lerr(ld, line, "<%s>: missing attribute 'kind' (vendor, measured, estimate "
				     "or preliminary)", tag);
			else if (prov_parse((const char *)k) == PROV_NONE)
				lerr(ld, line, "<%s>: kind '%s' is not one of vendor, measured, estimate, "
				     "preliminary", tag, (const char *)k);
			xmlFree(k);
		}
		if (depth < 16)
			precheck(ld, n->children, known, depth + 1);
		else
			lerr(ld, line, "<%s>: nested too deeply", tag);
	}
}

/* Loads machine.rng from the machines directory: the compiled schema, and the element names
 * it defines into `known` (strings to free with names_free). */
static xmlRelaxNGPtr schema_load(Ld *ld, Names *known)
{
	char dir[4096], path[4200];
	if (!machine_dir(dir, sizeof dir)) {
		lerr(ld, 0, "cannot find the machine schema machine.rng (set AICC_MACHINES to the "
		     "directory holding it, e.g. targets/machines)");
		return NULL;
	}
	snprintf(path, sizeof path, "%s/machine.rng", dir);
	xmlDocPtr doc = xmlReadFile(path, NULL, XML_PARSE_NONET);
	xmlRelaxNGParserCtxtPtr pc = doc ? xmlRelaxNGNewDocParserCtxt(doc) : NULL;
	xmlRelaxNGPtr s = pc ? xmlRelaxNGParse(pc) : NULL;
	if (doc)
		schema_names(xmlDocGetRootElement(doc), known);
	xmlRelaxNGFreeParserCtxt(pc);
	xmlFreeDoc(doc);
	if (!s)
		lerr(ld, 0, "cannot load the machine schema '%s'", path);
	return s;
}

static void names_free(Names *ns)
{
	for (int i = 0; i < ns->n; i++)
		xmlFree((void *)ns->name[i]);
	ns->n = 0;
}

/* The pre-checks, then RelaxNG validation. */
static int validate(Ld *ld, xmlDocPtr doc)
{
	Names *known = calloc(1, sizeof *known);
	if (!known) {
		ld->oom = 1;
		return -1;
	}
	xmlRelaxNGPtr schema = schema_load(ld, known);
	int rc = -1;
	if (schema)
		precheck(ld, xmlDocGetRootElement(doc), known, 0);
	names_free(known);
	free(known);
	xmlRelaxNGValidCtxtPtr vc = schema && ld->nerr == 0 ? xmlRelaxNGNewValidCtxt(schema) : NULL;
	if (vc) {
		xmlRelaxNGSetValidStructuredErrors(vc, xml_error, ld);
		rc = xmlRelaxNGValidateDoc(vc, doc);
		if (rc != 0 && ld->nerr == 0)
			lerr(ld, 0, "does not follow the machine schema");
		xmlRelaxNGFreeValidCtxt(vc);
	}
	xmlRelaxNGFree(schema);
	return rc == 0 ? 0 : -1;
}

/* ---- hashing ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* ---- loading ---- */

/* Walks the validated document into m. */
static void build(Ld *ld, xmlNode *root)
{
	Machine *m = ld->m;
	m->name = attr(ld, root, "name");
	m->status = attr(ld, root, "status");
	if (!m->status)
		m->status = "shipping";
	int ndev = count_children(root, "device") + count_children(root, "host");
	m->refs = ar_array(ld, count_children(root, "source"), sizeof *m->refs);
	m->devs = ar_array(ld, ndev, sizeof *m->devs);
	m->links = ar_array(ld, count_children(root, "link"), sizeof *m->links);
	if (ld->oom)
		return;
	Names *top = calloc(1, sizeof *top);
	if (!top) {
		ld->oom = 1;
		return;
	}
	for (xmlNode *k = elem(root->children); k; k = elem(k->next))
		if (is_elem(k, "source")) {
			SourceRef *r = &m->refs[m->nrefs++];
			r->key = attr(ld, k, "key");
			r->url = attr(ld, k, "url");
			for (int i = 0; i < m->nrefs - 1; i++)
				if (strcmp(m->refs[i].key, r->key) == 0)
					lerr(ld, node_line(k), "source key '%s' is declared twice", r->key);
		}
	for (xmlNode *k = elem(root->children); k && !ld->oom; k = elem(k->next)) {
		if (is_elem(k, "description"))
			m->description = content(ld, k);
		else if (is_elem(k, "device") || is_elem(k, "host")) {
			Device *d = &m->devs[m->ndevs++];
			d->is_host = is_elem(k, "host");
			parse_device(ld, d, k);
			claim(ld, top, d->id, d->line, "device");
			if (d->is_host)
				m->host = d;
		} else if (is_elem(k, "link")) {
			Link *l = &m->links[m->nlinks++];
			parse_link(ld, l, k);
			claim(ld, top, l->id, l->line, "link");
		} else if (is_elem(k, "storage")) {
			m->storage_id = attr(ld, k, "id");
			for (xmlNode *b = elem(k->children); b; b = elem(b->next))
				if (is_elem(b, "bandwidth"))
					qty(ld, b, &m->storage_bw, D_BW, R_POS, NULL, "%s.bandwidth", m->storage_id);
		}
	}
	free(top);
	derive(m, ld);
	char err[600];
	int line = 0;
	if (ld->nerr == 0 && check_used(m, err, sizeof err, &line) < 0)
		lerr(ld, line, "%s", err);
}

Machine *machine_load_memory(const char *file, const char *buf, size_t len, FILE *diag)
{
	Machine *m = calloc(1, sizeof *m);
	Ld ld = {m, file, diag ? diag : stderr, 0, 0, 0};
	if (!m) {
		fprintf(ld.diag, "%s: error: out of memory\n", file);
		return NULL;
	}
	m->path = ar_strdup(m, file);
	snprintf(m->file_hash, sizeof m->file_hash, "%016llx",
		 (unsigned long long)fnv1a(UINT64_C(0xcbf29ce484222325), buf, len));
	memcpy(m->hash, m->file_hash, sizeof m->hash);
	if (len > MAX_FILE || len > INT_MAX) {
		lerr(&ld, 0, "file is too large for a machine description (%zu bytes)", len);
		machine_free(m);
		return NULL;
	}
	xmlSetStructuredErrorFunc(&ld, xml_error);
	xmlDocPtr doc = xmlReadMemory(buf, (int)len, file, NULL,
				      XML_PARSE_NONET | XML_PARSE_BIG_LINES | XML_PARSE_NOWARNING);
	xmlSetStructuredErrorFunc(NULL, NULL);
	if (doc && doc->intSubset) {
		long line = 1;
		for (size_t i = 0; i + 9 <= len && memcmp(buf + i, "<!DOCTYPE", 9) != 0; i++)
			line += buf[i] == '\n';
		lerr(&ld, line, "DOCTYPE declarations are not allowed in machine descriptions");
	}
	if (!doc && ld.nerr == 0)
		lerr(&ld, 0, "cannot parse the file as XML");
	if (doc && ld.nerr == 0 && validate(&ld, doc) == 0)
		build(&ld, xmlDocGetRootElement(doc));
	xmlFreeDoc(doc);
	if (ld.oom)
		lerr(&ld, 0, "out of memory");
	if (ld.nerr) {
		machine_free(m);
		return NULL;
	}
	return m;
}

/* Reads a whole file (at most MAX_FILE + 1 bytes, so oversize is detected). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(MAX_FILE + 1);
	size_t n = buf ? fread(buf, 1, MAX_FILE + 1, f) : 0;
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int is_path(const char *s)
{
	size_t n = strlen(s);
	return strchr(s, '/') || (n > 4 && strcmp(s + n - 4, ".xml") == 0);
}

Machine *machine_load(const char *name_or_path, FILE *diag)
{
	FILE *out = diag ? diag : stderr;
	char dir[4096], path[4400];
	if (is_path(name_or_path)) {
		snprintf(path, sizeof path, "%s", name_or_path);
	} else {
		for (const char *p = name_or_path; *p; p++)
			if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && !strchr("-_.", *p)) {
				fprintf(out, "aicc: error: '%s' is not a machine name\n", name_or_path);
				return NULL;
			}
		if (!machine_dir(dir, sizeof dir)) {
			fprintf(out, "aicc: error: cannot find the built-in machines (set AICC_MACHINES)\n");
			return NULL;
		}
		snprintf(path, sizeof path, "%s/%s.xml", dir, name_or_path);
		if (access(path, R_OK) != 0) {
			char *names[256], sug[2048];
			int nn = machine_list(names, 256);
			diag_suggest(sug, sizeof sug, name_or_path, (const char *const *)names, nn);
			fprintf(out, "aicc: error: unknown machine '%s'%s\n", name_or_path, sug);
			for (int i = 0; i < nn; i++)
				free(names[i]);
			return NULL;
		}
	}
	size_t len = 0;
	char *buf = slurp(path, &len);
	if (!buf) {
		fprintf(out, "%s: error: cannot read: %s\n", path, strerror(errno ? errno : EIO));
		return NULL;
	}
	Machine *m = machine_load_memory(path, buf, len, diag);
	free(buf);
	return m;
}

void machine_free(Machine *m)
{
	if (!m)
		return;
	for (MachArena *a = m->arena, *next; a; a = next) {
		next = a->next;
		free(a);
	}
	free(m);
}

/* ---- the machines directory ---- */

static int has_schema(const char *dir)
{
	char p[4400];
	snprintf(p, sizeof p, "%s/machine.rng", dir);
	return access(p, R_OK) == 0;
}

const char *machine_dir(char *buf, size_t len)
{
	const char *env = getenv("AICC_MACHINES");
	char real[PATH_MAX];
	if (env && *env && has_schema(env)) {
		snprintf(buf, len, "%s", realpath(env, real) ? real : env);
		return buf;
	}
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	static const char *const rel[] = {"/../share/aicc/machines", "/../targets/machines"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(buf, len, "%s%s", exe, rel[i]);
		if (has_schema(buf)) {
			if (realpath(buf, real))
				snprintf(buf, len, "%s", real);
			return buf;
		}
	}
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int machine_list(char **names, int max)
{
	char dir[4096];
	if (!machine_dir(dir, sizeof dir))
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; n < max && (e = readdir(d));) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".xml") == 0 && e->d_name[0] != '.') {
			names[n] = strndup(e->d_name, l - 4);
			n += names[n] != NULL;
		}
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	return n;
}

const char *machine_with_count(const char *devname, int need, char *buf, size_t len)
{
	char *names[256];
	int n = machine_list(names, 256);
	size_t used = 0;
	buf[0] = 0;
	FILE *quiet = fopen("/dev/null", "w");    /* a broken file is its own error, not this one's */
	for (int i = 0; i < n; i++) {
		Machine *m = quiet ? machine_load(names[i], quiet) : NULL;
		for (int k = 0; m && k < m->ndevs; k++) {
			const Device *d = &m->devs[k];
			if (!d->is_host && d->name && strcmp(d->name, devname) == 0 && d->count.v >= need && used < len) {
				used += (size_t)snprintf(buf + used, len - used, "%s%s (%.0f)", used ? ", " : "", m->name, d->count.v);
				break;
			}
		}
		if (m)
			machine_free(m);
		free(names[i]);
	}
	if (quiet)
		fclose(quiet);
	return buf;
}

/* ---- overrides ---- */

int machine_set_topology(Machine *m, const char *link, const char *value, char *err, size_t errlen)
{
	Link *l = NULL;
	for (int i = 0; i < m->nlinks; i++)
		if (strcmp(m->links[i].id, link) == 0)
			l = &m->links[i];
	if (!l) {
		snprintf(err, errlen, "--set %s.topology: machine '%s' has no link '%s'", link, m->name, link);
		return -1;
	}
	const char *colon = strchr(value, ':');
	size_t kl = colon ? (size_t)(colon - value) : strlen(value);
	static const struct { const char *name; Topo topo; int twist, wrap; } kinds[] = {
		{ "torus", TOPO_TORUS, 0, 1 }, { "twisted-torus", TOPO_TORUS, 1, 1 }, { "mesh", TOPO_MESH, 0, 0 },
		{ "ring", TOPO_RING, 0, 1 },
	};
	int k = -1;
	for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
		if (strlen(kinds[i].name) == kl && strncmp(kinds[i].name, value, kl) == 0)
			k = i;
	int dims[4] = { 0 }, nd = 0;
	const char *s = colon ? colon + 1 : "";
	while (*s && nd < 4) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 1 || v > 100000)
			break;
		dims[nd++] = (int)v;
		s = *end == 'x' && end[1] ? end + 1 : end;
		if (*end != 'x')
			break;
	}
	if (k < 0 || nd == 0 || *s) {
		snprintf(err, errlen, "--set %s.topology=%s: expected torus:AxBxC, twisted-torus:AxBxC, mesh:AxBxC or ring:N", link,
			 value);
		return -1;
	}
	int64_t chips = 1;
	for (int i = 0; i < nd; i++)
		chips *= dims[i];
	if (l->from && num_has(&l->from->count) && (double)chips > l->from->count.v) {
		snprintf(err, errlen, "--set %s.topology=%s: %lld chips, but the machine has %.0f", link, value, (long long)chips,
			 l->from->count.v);
		return -1;
	}
	if (kinds[k].twist) {
		/* Google's TPU v4 documentation: AxBxC with 2A = B = C or 2A = 2B = C (sorted), each a
		 * multiple of 4 (4x4x8, 4x8x8, 12x12x24) */
		int d[3] = { 0 };
		for (int i = 0; i < nd && i < 3; i++)
			d[i] = dims[i];
		for (int i = 0; i < 3; i++)
			for (int j = i + 1; j < 3; j++)
				if (d[j] < d[i]) {
					int t = d[i];
					d[i] = d[j], d[j] = t;
				}
		int ok = nd == 3 && d[0] % 4 == 0 && ((d[1] == d[0] && d[2] == 2 * d[0]) || (d[1] == 2 * d[0] && d[2] == 2 * d[0]));
		if (!ok) {
			snprintf(err, errlen, "--set %s.topology=%s: a twisted torus needs a k x k x 2k or k x 2k x 2k slice, k a "
				 "multiple of 4 (4x4x8, 4x8x8, 8x8x16, ...)", link, value);
			return -1;
		}
	}
	l->topo = kinds[k].topo;
	l->twist = kinds[k].twist;
	l->wrap = kinds[k].wrap;
	l->ndims = nd;
	for (int i = 0; i < 4; i++)
		l->dims[i] = i < nd ? dims[i] : 0;
	char path[300];
	snprintf(path, sizeof path, "%s.topology", link);
	uint64_t h = strtoull(m->hash, NULL, 16);
	h = fnv1a(h, path, strlen(path));
	h = fnv1a(h, "=", 1);
	h = fnv1a(h, value, strlen(value));
	h = fnv1a(h, "\n", 1);
	snprintf(m->hash, sizeof m->hash, "%016llx", (unsigned long long)h);
	m->noverrides++;
	return 0;
}

int machine_set(Machine *m, const char *path, const char *value, char *err, size_t errlen)
{
	size_t pl = strlen(path);
	if (pl > 9 && strcmp(path + pl - 9, ".topology") == 0) {
		char link[256];
		snprintf(link, sizeof link, "%.*s", (int)(pl - 9), path);
		return machine_set_topology(m, link, value, err, errlen);
	}
	MachField *f = field_find(m, path);
	if (!f) {
		/* "hbm.bandwidth": a path without its device, if only one device has it */
		char full[300];
		MachField *hit = NULL;
		int nhit = 0;
		for (int i = 0; i < m->ndevs; i++) {
			snprintf(full, sizeof full, "%s.%s", m->devs[i].id, path);
			MachField *g = field_find(m, full);
			if (g && !nhit++)
				hit = g;
			else if (g) {
				snprintf(err, errlen, "ambiguous machine field '%s' (%s or %s)", path,
					 hit->path, g->path);
				return -1;
			}
		}
		f = hit;
	}
	if (!f) {
		/* did-you-mean over every field's path, and each device field's path without its device */
		const char **names = malloc(2 * (size_t)(m->nfields + 1) * sizeof *names);
		const char *near = NULL;
		int nn = 0;
		for (int i = 0; names && i < m->nfields; i++) {
			names[nn++] = m->fields[i].path;
			for (int d = 0; d < m->ndevs; d++) {
				size_t il = strlen(m->devs[d].id);
				if (!strncmp(m->fields[i].path, m->devs[d].id, il) && m->fields[i].path[il] == '.') {
					names[nn++] = m->fields[i].path + il + 1;
					break;
				}
			}
		}
		if (names)
			near = diag_nearest(path, names, nn);
		snprintf(err, errlen, "unknown machine field '%s' in machine '%s' (%s%s%s'aicc machines %s "
			 "--fields' lists them)", path, m->name, near ? "did you mean '" : "", near ? near : "",
			 near ? "'?; " : "", m->name);
		free(names);
		return -1;
	}
	Num n = *f->num;
	char why[512];
	if (value_parse(m, value, NULL, f->dim, f->rule, &n, why, sizeof why) < 0) {
		snprintf(err, errlen, "--set %s: %s", path, why);
		return -1;
	}
	if (n.per != PER_ONE && !f->dev) {
		snprintf(err, errlen, "--set %s: a per-clock unit needs a device clock", path);
		return -1;
	}
	n.prov = PROV_OVERRIDE;
	n.source = "--set";
	n.note = NULL;
	n.line = 0;
	Num old = *f->num;
	*f->num = n;
	derive(m, NULL);
	int line;
	if (check_used(m, why, sizeof why, &line) < 0) {      /* as used: undo, and say why */
		*f->num = old;
		derive(m, NULL);
		snprintf(err, errlen, "--set %s: %s", path, why);
		return -1;
	}
	uint64_t h = strtoull(m->hash, NULL, 16);
	h = fnv1a(h, f->path, strlen(f->path));
	h = fnv1a(h, "=", 1);
	h = fnv1a(h, n.text, strlen(n.text));
	h = fnv1a(h, "\n", 1);
	snprintf(m->hash, sizeof m->hash, "%016llx", (unsigned long long)h);
	m->noverrides++;
	return 0;
}

int machine_get(const Machine *m, const char *path, double *out)
{
	MachField *f = field_find(m, path);
	if (!f || !num_has(f->num))
		return -1;
	*out = f->num->v;
	return 0;
}

int machine_nfields(const Machine *m) { return m->nfields; }

const char *machine_field_path(const Machine *m, int i, const Num **num)
{
	if (i < 0 || i >= m->nfields)
		return NULL;
	if (num)
		*num = m->fields[i].num;
	return m->fields[i].path;
}

/* ---- queries ---- */

Device *machine_device(const Machine *m, const char *id)
{
	for (int i = 0; i < m->ndevs; i++)
		if (m->devs[i].id && strcmp(m->devs[i].id, id) == 0)
			return &m->devs[i];
	return NULL;
}

Device *machine_first(const Machine *m, DevKind kind)
{
	for (int i = 0; i < m->ndevs; i++)
		if (!m->devs[i].is_host && m->devs[i].kind == kind)
			return &m->devs[i];
	return NULL;
}

int machine_ndevices(const Machine *m)
{
	int n = 0;
	for (int i = 0; i < m->ndevs; i++)
		if (!m->devs[i].is_host)
			n += (int)m->devs[i].count.v;
	return n;
}

const Link *machine_link(const Machine *m, const Device *a, const Device *b)
{
	for (int i = 0; i < m->nlinks; i++) {
		const Link *l = &m->links[i];
		if ((l->from == a && l->to == b) || (l->from == b && l->to == a))
			return l;
	}
	return NULL;
}

const Link *machine_scaleout_link(const Machine *m, const Device *d)
{
	for (int i = 0; i < m->nlinks; i++) {
		const Link *l = &m->links[i];
		if (l->from == d && l->to == d && l->kind && (!strcmp(l->kind, "ethernet") || !strcmp(l->kind, "infiniband")))
			return l;
	}
	return NULL;
}

const char *machine_source_url(const Machine *m, const char *key)
{
	for (int i = 0; i < m->nrefs; i++)
		if (m->refs[i].key && strcmp(m->refs[i].key, key) == 0)
			return m->refs[i].url;
	return NULL;
}

double dev_peak(const Device *d, DType dt)
{
	if ((unsigned)dt >= DT_COUNT)
		return 0;
	return fmax(d->peak[dt].v, d->vpeak[dt].v);
}

double dev_collective_offload(const Device *d)
{
	double share = 0;
	for (int i = 0; i < d->nengines; i++)
		if (d->engines[i].kind && !strcmp(d->engines[i].kind, "collective") && num_has(&d->engines[i].offload))
			share = fmax(share, d->engines[i].offload.v);
	return share;
}

int dev_supports(const Device *d, DType dt)
{
	if ((unsigned)dt >= DT_COUNT)
		return 0;
	return ((d->formats | d->block_formats) >> dt) & 1;
}

DType dev_matmul_format(const Device *d)
{
	DType best = DT_INVALID;
	for (int dt = 1; dt < DT_COUNT; dt++)
		if (num_has(&d->peak[dt]) && rt_dtypes[dt].kind == K_FLOAT &&
		    (best == DT_INVALID || rt_dtypes[dt].bits < rt_dtypes[best].bits))
			best = (DType)dt;
	return best;
}

MemSpace *dev_mem(const Device *d, const char *name)
{
	for (int i = 0; i < d->nmems; i++)
		if (strcmp(d->mems[i].name, name) == 0)
			return &d->mems[i];
	return NULL;
}

MemSpace *dev_mem_kind(const Device *d, MemKind kind)
{
	for (int i = 0; i < d->nmems; i++)
		if (d->mems[i].kind == kind)
			return &d->mems[i];
	return NULL;
}

double mem_total_capacity(const Device *d, const MemSpace *s)
{
	return s->capacity.v * (s->scope == SCOPE_UNIT ? dev_units(d) : 1);
}

const MmaFamily *dev_mma(const Device *d, const char *family)
{
	for (int i = 0; i < d->nmma; i++)
		if (strcmp(d->mma[i].name, family) == 0)
			return &d->mma[i];
	return NULL;
}

double dev_efficiency(const Device *d, const char *name, double dflt)
{
	for (int i = 0; i < d->neffs; i++)
		if (strcmp(d->effs[i].name, name) == 0 && num_has(&d->effs[i].value))
			return d->effs[i].value.v;
	return dflt;
}

double dev_gemm_efficiency(const Device *d, DType dt)
{
	double any = dev_efficiency(d, "gemm", 1);
	if (dt <= DT_INVALID || dt >= DT_COUNT)
		return any;
	char name[48];
	snprintf(name, sizeof name, "gemm-%s", rt_dtype_name(dt));
	return dev_efficiency(d, name, any);
}

double dev_units(const Device *d)
{
	return d->nunits > 0 && d->units[0].count.v > 0 ? d->units[0].count.v : 1;
}

double link_oneway_bw(const Link *l)
{
	return l->bidi ? l->bandwidth.v / 2 : l->bandwidth.v;
}

double link_coll_eff(const Link *l)
{
	return l && num_has(&l->efficiency) && l->efficiency.v > 0 && l->efficiency.v <= 1 ? l->efficiency.v : 1;
}

double link_coll_bw(const Link *l)
{
	return link_oneway_bw(l) * link_coll_eff(l);
}
