/* tools/cmd_quantize.c: `aicc quantize`, a calculator for number formats.
 *
 * Reads whitespace-separated numbers (decimal, C99 hex floats, inf, nan, with signs; each
 * converted to float32 once, correctly rounded, by strtof) from stdin as one 1-D tensor and
 * quantizes it with the runtime codecs of runtime/numerics.h: blocks run along the input, and
 * NVFP4's tensor scale comes from the amax of the whole input.  By default (--print table) it
 * prints a labelled table for people: the format, each block's scale, then one row per element
 * with its input, code, value (shortest decimal and exact C99 hex) and a note when it saturated
 * or rounded to zero.  --print values|codes|scales print one bare line per element (the
 * dequantized float32 value in C99 hex, or the element code in hex) or per block (its scale),
 * for scripts and golden tests.  Output is exact and stable.  Semantics of every format:
 * ../shared/reference/numerics.md.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/suggest.h"
#include "runtime/numerics.h"
#include "targets/precision.h"
#include "tools/driver.h"

enum { F_SCALAR, F_BLOCK, F_INT };

/* The CLI's format names (design.md §7) and what they stand for. */
typedef struct QFormat {
	const char *name;
	int kind;          /* F_* */
	DType dt;          /* scalar or block dtype */
	int bits;          /* F_INT: bits; else code bits */
	int asym;          /* F_INT: asymmetric (GPTQ) */
	int sat_default;   /* F_SCALAR: default of --saturate; -1: the format always saturates */
} QFormat;

static const QFormat formats[] = {
	{ "fp16",       F_SCALAR, DT_F16,       16, 0, 0 },
	{ "bf16",       F_SCALAR, DT_BF16,      16, 0, 0 },
	{ "tf32",       F_SCALAR, DT_TF32,      19, 0, 0 },
	{ "fp8_e4m3",   F_SCALAR, DT_F8E4M3,     8, 0, 1 },
	{ "fp8_e5m2",   F_SCALAR, DT_F8E5M2,     8, 0, 1 },
	{ "fp6_e3m2",   F_SCALAR, DT_F6E3M2,     6, 0, -1 },
	{ "fp6_e2m3",   F_SCALAR, DT_F6E2M3,     6, 0, -1 },
	{ "fp4_e2m1",   F_SCALAR, DT_F4E2M1,     4, 0, -1 },
	{ "e8m0",       F_SCALAR, DT_E8M0,       8, 0, 1 },
	{ "mxfp8_e4m3", F_BLOCK,  DT_MXFP8,      8, 0, 0 },
	{ "mxfp8_e5m2", F_BLOCK,  DT_MXFP8E5M2,  8, 0, 0 },
	{ "mxfp6_e3m2", F_BLOCK,  DT_MXFP6,      6, 0, 0 },
	{ "mxfp6_e2m3", F_BLOCK,  DT_MXFP6E2M3,  6, 0, 0 },
	{ "mxfp4",      F_BLOCK,  DT_MXFP4,      4, 0, 0 },
	{ "mxint8",     F_BLOCK,  DT_MXINT8,     8, 0, 0 },
	{ "nvfp4",      F_BLOCK,  DT_NVFP4,      4, 0, 0 },
	{ "int8",       F_INT,    DT_INVALID,    8, 0, 0 },
	{ "int4",       F_INT,    DT_INVALID,    4, 0, 0 },
	{ "int4_asym",  F_INT,    DT_INVALID,    4, 1, 0 },
};

static void usage(FILE *f)
{
	fputs("usage: aicc quantize --format F [--block N] [--scale-rule floor|rceil]\n"
	      "                     [--saturate yes|no] [--print table|values|codes|scales]\n"
	      "\n"
	      "Reads whitespace-separated numbers from stdin (decimal, C99 hex floats such as\n"
	      "0x1.8p+3, inf, nan, with signs; each rounded once to float32) as one 1-D tensor,\n"
	      "quantizes it, and prints a labelled table (default) or one bare line per element or\n"
	      "per block (--print values|codes|scales, for scripts).\n"
	      "\n"
	      "formats:\n"
	      "  fp16 bf16 tf32               IEEE-style; --saturate default no (overflow to inf)\n"
	      "  fp8_e4m3 fp8_e5m2            OCP FP8; --saturate default yes (clamp to +-max);\n"
	      "                               no: E4M3 overflows to nan, E5M2 to inf\n"
	      "  fp6_e3m2 fp6_e2m3 fp4_e2m1   OCP MX element types; always saturate; no nan\n"
	      "  e8m0                         MX scale: 2^(c-127), 0xff is nan\n"
	      "  mxfp8_e4m3 mxfp8_e5m2 mxfp6_e3m2 mxfp6_e2m3 mxfp4 mxint8\n"
	      "                               OCP MX: blocks of 32 (--block), one E8M0 scale each;\n"
	      "                               a block holding nan or inf gets scale 0xff\n"
	      "  nvfp4                        NVIDIA NVFP4: E2M1 in blocks of 16 with E4M3 scales\n"
	      "                               and an f32 tensor scale from the amax of all input\n"
	      "                               (Transformer Engine recipe); nan/inf are refused\n"
	      "  int8 int4 int4_asym          per-group f32 scales, groups of --block (default:\n"
	      "                               the whole input); int4_asym: GPTQ zero points\n"
	      "  f16 fp8 mxfp8 mxfp6 fp4      compile's --precision words: fp16, fp8_e4m3,\n"
	      "                               mxfp8_e4m3, mxfp6_e3m2, fp4_e2m1\n"
	      "\n"
	      "options:\n"
	      "  --block N             elements per block or group\n"
	      "  --scale-rule R        MX scale rule: floor (OCP MX §6.3, default) or rceil\n"
	      "                        (smallest power of two >= amax/max_elem)\n"
	      "  --saturate yes|no     fp16/bf16/tf32/fp8/e8m0 overflow behaviour\n"
	      "  --print table         (default) the format and each block's scale, then a row per\n"
	      "                        element: input, code, value (decimal and exact %a), and\n"
	      "                        whether it saturated or rounded to 0\n"
	      "  --print values        the dequantized float32 value of each element, %a\n"
	      "  --print codes         the element code of each element in hex (int formats:\n"
	      "                        two's complement low bits; int4_asym: unsigned)\n"
	      "  --print scales        one line per block: E8M0 (MX) or E4M3 (nvfp4) code in hex;\n"
	      "                        nvfp4 adds a last line 'tensor S' with the f32 decode scale;\n"
	      "                        int formats: the f32 scale (%a), int4_asym also the zero point\n"
	      "\n"
	      "Rounding is to nearest, ties to even.  Rules and sources: reference/numerics.md (design notes).\n", f);
}

/* One number read from stdin, with where it was. */
typedef struct Input {
	float *x;
	int *line, *col;
	int64_t n, cap;
} Input;

static int push(Input *in, float v, int line, int col)
{
	if (in->n == in->cap) {
		int64_t cap = in->cap ? in->cap * 2 : 256;
		float *x = realloc(in->x, (size_t)cap * sizeof *x);
		if (x)
			in->x = x;
		int *l = realloc(in->line, (size_t)cap * sizeof *l);
		if (l)
			in->line = l;
		int *c = realloc(in->col, (size_t)cap * sizeof *c);
		if (c)
			in->col = c;
		if (!x || !l || !c)
			return -1;
		in->cap = cap;
	}
	in->x[in->n] = v;
	in->line[in->n] = line;
	in->col[in->n] = col;
	in->n++;
	return 0;
}

static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		char *b = realloc(buf, cap * 2);
		if (!b) {
			free(buf);
			return NULL;
		}
		buf = b;
		cap *= 2;
	}
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

/* Tokenizes buf; every token must be a whole number as strtof reads it.  Errors report
 * <stdin>:LINE:COL.  Returns 0 or -1. */
static int parse_input(char *buf, size_t len, Input *in)
{
	int line = 1;
	size_t bol = 0;
	for (size_t i = 0; i < len;) {
		char ch = buf[i];
		if (ch == '\n') {
			line++;
			bol = ++i;
			continue;
		}
		if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f') {
			i++;
			continue;
		}
		size_t j = i;
		while (j < len && !strchr(" \t\r\v\f\n", buf[j]) && buf[j])
			j++;
		if (j < len && buf[j] == 0) {
			fprintf(stderr, "<stdin>:%d:%zu: error: NUL byte in input\n", line, j - bol + 1);
			return -1;
		}
		char save = buf[j];
		buf[j] = 0;
		char *end;
		errno = 0;
		float v = strtof(buf + i, &end);
		if (end != buf + j || end == buf + i) {
			fprintf(stderr, "<stdin>:%d:%zu: error: '%s' is not a number\n", line,
				i - bol + 1, buf + i);
			return -1;
		}
		/* strtof's overflow: a decimal beyond f32's range (1e400) is no infinity; a hex float
		 * past it (0x1p+128, the generated tests' way to write one) and the words inf and nan
		 * are what they say */
		const char *digits = buf + i + (buf[i] == '-' || buf[i] == '+');
		int hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
		if (errno == ERANGE && isinf(v) && !hex) {
			fprintf(stderr, "<stdin>:%d:%zu: error: '%s' is beyond f32's range (largest finite "
				"3.4028235e38); write inf for an infinity\n", line, i - bol + 1, buf + i);
			return -1;
		}
		buf[j] = save;
		if (push(in, v, line, (int)(i - bol + 1)) < 0) {
			drv_error("out of memory");
			return -1;
		}
		i = j;
	}
	return 0;
}

/* A float as C99 hex; NaN prints as "nan" whatever its sign and payload. */
static void print_value(float v)
{
	if (v != v)
		puts("nan");
	else
		printf("%a\n", (double)v);
}

static void print_code(uint32_t c, int bits)
{
	printf("0x%0*x\n", (bits + 3) / 4, c);
}

/* ---- --print table: the same numbers, labelled for a person ---- */

/* The shortest %.Ng (N = 1..9) that strtof reads back as v, so 0.1 prints as 0.1 although the
 * float nearest 0.1 is 0.100000001, written without an exponent from 1e-4 to 1e16 (100, not
 * 1e+02); nan and inf keep their names. */
static const char *short_float(float v, char *buf, size_t n)
{
	if (v != v)
		snprintf(buf, n, "nan");
	else if (isinf(v))
		snprintf(buf, n, v < 0 ? "-inf" : "inf");
	else
		for (int p = 1; p <= 9; p++) {
			snprintf(buf, n, "%.*g", p, (double)v);
			if (strtof(buf, NULL) != v)
				continue;
			int e = v == 0 ? 0 : (int)floor(log10(fabs((double)v)));
			if (strchr(buf, 'e') && e >= -4 && e < 16)   /* 100, not 1e+02 */
				snprintf(buf, n, "%.*f", p - 1 - e > 0 ? p - 1 - e : 0, (double)v);
			break;
		}
	return buf;
}

static void table_head(void)
{
	printf("  %-14s %-6s %-14s %s\n", "input", "code", "value", "exact value (%a)");
}

/* One element's row; `max` is the largest magnitude its block (or format) can hold, 0 when the
 * note is not known (integer elements).  The note says what happened when the value is not the
 * input: saturated to the largest magnitude, overflowed, or rounded to zero. */
static void table_row(float x, uint32_t code, int bits, float v, float max)
{
	char a[32], b[32], h[48], c[16], line[192];
	snprintf(c, sizeof c, "0x%0*x", (bits + 3) / 4, code);
	if (v != v)
		snprintf(h, sizeof h, "nan");
	else
		snprintf(h, sizeof h, "%a", (double)v);
	const char *note = "";
	if (isfinite(x) && !isfinite(v))
		note = "overflow";
	else if (isfinite(x) && max > 0 && fabsf(x) > max && fabsf(v) == max)
		note = "saturated to the largest magnitude";
	else if (isfinite(x) && x != 0 && v == 0)
		note = "rounds to 0";
	int k = snprintf(line, sizeof line, "  %-14s %-6s %-14s %-16s  %s", short_float(x, a, sizeof a), c,
			 short_float(v, b, sizeof b), h, note);
	while (k > 0 && line[k - 1] == ' ')
		line[--k] = 0;
	puts(line);
}

/* The largest finite magnitude of float format dt (0 for integer formats). */
static float format_max(DType dt)
{
	if (rt_dtypes[dt].kind != K_FLOAT)
		return 0;
	return rt_decode(dt, rt_encode(dt, FLT_MAX, 1));
}

static int run_scalar(const QFormat *f, const Input *in, int sat, const char *print)
{
	for (int64_t i = 0; i < in->n; i++) {
		float x = in->x[i];
		if (x != x && f->sat_default < 0) {   /* numerics.md §2: no encoding, undefined */
			fprintf(stderr, "<stdin>:%d:%d: error: %s has no encoding for nan\n",
				in->line[i], in->col[i], f->name);
			return EXIT_USER;
		}
	}
	if (print[0] == 't') {
		printf("%s: %d-bit codes, one per element, round to nearest even; %s\n", f->name, f->bits,
		       f->sat_default < 0 ? "always saturates" : sat ? "saturates (--saturate yes)" :
		       "overflows (--saturate no)");
		table_head();
	}
	for (int64_t i = 0; i < in->n; i++) {
		uint32_t c = rt_encode(f->dt, in->x[i], sat);
		if (print[0] == 't')
			table_row(in->x[i], c, f->bits, rt_decode(f->dt, c), format_max(f->dt));
		else if (print[0] == 'c')
			print_code(c, f->bits);
		else
			print_value(rt_decode(f->dt, c));
	}
	return EXIT_OK;
}

/* The table of a block format: its description, then per block its scale and its rows. */
static void block_table(const QFormat *f, const Input *in, int64_t block, const float *deq, const uint8_t *codes,
			const uint8_t *scales, float ts)
{
	const DTypeInfo *t = &rt_dtypes[f->dt];
	int nv = f->dt == DT_NVFP4;
	printf("%s: %s elements in blocks of %lld, one %s scale per block%s; value = element%s x scale%s\n", f->name,
	       rt_dtypes[t->elem].name, (long long)block, nv ? "E4M3" : "E8M0", nv ? " and one f32 tensor scale" : "",
	       f->dt == DT_MXINT8 ? " / 64 (MXINT8's fixed point)" : "", nv ? " x tensor scale" : "");
	if (nv) {
		char a[32];
		printf("tensor scale %s (%a), from the amax of all input\n", short_float(ts, a, sizeof a), (double)ts);
	}
	float emax = format_max(t->elem);
	for (int64_t b = 0, n = in->n; b * block < n; b++) {
		float s = rt_decode(t->scale, scales[b]);
		char a[32];
		printf("block %lld (elements %lld-%lld): scale 0x%02x = ", (long long)b, (long long)(b * block + 1),
		       (long long)(b * block + block < n ? b * block + block : n), scales[b]);
		if (s != s)
			printf("nan (the block holds nan or inf)\n");
		else if (!nv)
			printf("2^%d\n", (int)scales[b] - 127);
		else
			printf("%s\n", short_float(s, a, sizeof a));
		table_head();
		float max = emax > 0 && s == s ? emax * s * (nv ? ts : 1) : 0;
		for (int64_t i = b * block; i < n && i < b * block + block; i++)
			table_row(in->x[i], codes[i], t->bits, deq[i], max);
	}
}

static int run_block(const QFormat *f, const Input *in, const QuantOpts *o, const char *print)
{
	int64_t n = in->n, block = o->block ? o->block : rt_dtypes[f->dt].block;
	int64_t nb = (n + block - 1) / block;
	float *deq = malloc((size_t)(n ? n : 1) * sizeof *deq);
	uint8_t *codes = malloc((size_t)(n ? n : 1));
	uint8_t *scales = malloc((size_t)(nb ? nb : 1));
	int rc = EXIT_OK;
	if (!deq || !codes || !scales) {
		drv_error("out of memory");
		rc = EXIT_INTERNAL;
		goto out;
	}
	float ts = 1.0f;
	if (rt_quantize_blocks(f->dt, in->x, n, o, deq, codes, scales, &ts) < 0) {
		for (int64_t i = 0; i < n; i++)
			if (!isfinite(in->x[i])) {
				fprintf(stderr, "<stdin>:%d:%d: error: %s refuses nan and inf input "
					"(numerics.md §4)\n", in->line[i], in->col[i], f->name);
				break;
			}
		rc = EXIT_USER;
		goto out;
	}
	int ebits = rt_dtypes[f->dt].bits;
	if (print[0] == 't')
		block_table(f, in, block, deq, codes, scales, ts);
	else if (print[0] == 'v')
		for (int64_t i = 0; i < n; i++)
			print_value(deq[i]);
	else if (print[0] == 'c')
		for (int64_t i = 0; i < n; i++)
			print_code(codes[i], ebits);
	else {
		for (int64_t b = 0; b < nb; b++)
			print_code(scales[b], 8);
		if (f->dt == DT_NVFP4)
			printf("tensor %a\n", (double)ts);
	}
out:
	free(deq);
	free(codes);
	free(scales);
	return rc;
}

static int run_int(const QFormat *f, const Input *in, int64_t group, const char *print)
{
	int64_t n = in->n, g = group > 0 && group < n ? group : (n ? n : 1);
	int64_t ng = (n + g - 1) / g;
	float *deq = malloc((size_t)(n ? n : 1) * sizeof *deq);
	int32_t *codes = malloc((size_t)(n ? n : 1) * sizeof *codes);
	float *scales = malloc((size_t)(ng ? ng : 1) * sizeof *scales);
	int32_t *zp = malloc((size_t)(ng ? ng : 1) * sizeof *zp);
	int rc = EXIT_OK;
	if (!deq || !codes || !scales || !zp) {
		drv_error("out of memory");
		rc = EXIT_INTERNAL;
		goto out;
	}
	rt_quantize_int(f->bits, f->asym, in->x, n, g, deq, codes, scales, zp);
	if (print[0] == 't') {
		printf("%s: %d-bit integers in groups of %lld, one f32 scale per group%s; value = %s\n", f->name,
		       f->bits, (long long)g, f->asym ? " and a zero point" : "",
		       f->asym ? "(code - zero point) x scale" : "code x scale");
		for (int64_t b = 0; b < ng && n; b++) {
			char a[32];
			printf("group %lld (elements %lld-%lld): scale %s", (long long)b, (long long)(b * g + 1),
			       (long long)(b * g + g < n ? b * g + g : n), short_float(scales[b], a, sizeof a));
			if (f->asym)
				printf(", zero point %d", (int)zp[b]);
			putchar('\n');
			table_head();
			for (int64_t i = b * g; i < n && i < b * g + g; i++)
				table_row(in->x[i], (uint32_t)codes[i] & ((1u << f->bits) - 1), f->bits, deq[i], 0);
		}
	} else if (print[0] == 'v')
		for (int64_t i = 0; i < n; i++)
			print_value(deq[i]);
	else if (print[0] == 'c')
		for (int64_t i = 0; i < n; i++)
			print_code((uint32_t)codes[i], f->bits);
	else
		for (int64_t b = 0; b < ng && n; b++) {
			if (scales[b] != scales[b])
				fputs("nan", stdout);
			else
				printf("%a", (double)scales[b]);
			if (f->asym)
				printf(" %d", (int)zp[b]);
			putchar('\n');
		}
out:
	free(deq);
	free(codes);
	free(scales);
	free(zp);
	return rc;
}

int cmd_quantize(int argc, char **argv)
{
	const char *fmt = NULL, *block = NULL, *rule = NULL, *satv = NULL, *print = "table";
	for (int i = 1; i < argc; i++) {
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return EXIT_OK;
		}
		if ((r = opt_value(argc, argv, &i, "--format", &fmt)) ||
		    (r = opt_value(argc, argv, &i, "--block", &block)) ||
		    (r = opt_value(argc, argv, &i, "--scale-rule", &rule)) ||
		    (r = opt_value(argc, argv, &i, "--saturate", &satv)) ||
		    (r = opt_value(argc, argv, &i, "--print", &print))) {
			if (r < 0)
				return EXIT_USER;
			continue;
		}
		drv_error("quantize: unknown argument '%s' (see aicc quantize --help)", argv[i]);
		return EXIT_USER;
	}
	if (!fmt) {
		drv_error("quantize: --format is required (see aicc quantize --help)");
		return EXIT_USER;
	}
	const QFormat *f = NULL;
	enum { NF = (int)(sizeof formats / sizeof formats[0]) };
	for (int k = 0; k < prec_naliases; k++)   /* compile's --precision word for the format */
		if (strcmp(prec_aliases[k].word, fmt) == 0)
			fmt = prec_aliases[k].quantize;
	for (int k = 0; k < NF; k++)
		if (strcmp(formats[k].name, fmt) == 0)
			f = &formats[k];
	if (!f) {
		const char *names[NF + 16];
		int nn = 0;
		for (int k = 0; k < NF; k++)
			names[nn++] = formats[k].name;
		for (int k = 0; k < prec_naliases && nn < NF + 16; k++)
			names[nn++] = prec_aliases[k].word;
		char dym[768];   /* --precision's words too (prec_aliases) */
		diag_suggest(dym, sizeof dym, fmt, names, nn);
		drv_error("quantize: unknown format '%s'%s", fmt, dym);
		return EXIT_USER;
	}
	if (strcmp(print, "table") && strcmp(print, "values") && strcmp(print, "codes") && strcmp(print, "scales")) {
		drv_error("quantize: --print must be table, values, codes or scales, not '%s'", print);
		return EXIT_USER;
	}
	if (f->kind == F_SCALAR && print[0] == 's') {
		drv_error("quantize: %s has no scales (--print scales is for block and int formats)", f->name);
		return EXIT_USER;
	}
	long long nblock = 0;
	if (block) {
		char *end;
		errno = 0;
		nblock = strtoll(block, &end, 10);
		if (*block == 0 || *end || errno || nblock < 1 || nblock > (1LL << 30)) {
			drv_error("quantize: --block must be an integer from 1 to 2^30, not '%s'", block);
			return EXIT_USER;
		}
		if (f->kind == F_SCALAR) {
			drv_error("quantize: --block applies to block and int formats, not %s", f->name);
			return EXIT_USER;
		}
	}
	QuantOpts o = { SCALE_FLOOR, 1, (int)nblock };
	if (rule) {
		if (f->kind != F_BLOCK || f->dt == DT_NVFP4) {
			drv_error("quantize: --scale-rule applies to the MX formats, not %s", f->name);
			return EXIT_USER;
		}
		if (strcmp(rule, "floor") == 0)
			o.rule = SCALE_FLOOR;
		else if (strcmp(rule, "rceil") == 0)
			o.rule = SCALE_RCEIL;
		else {
			drv_error("quantize: --scale-rule must be floor or rceil, not '%s'", rule);
			return EXIT_USER;
		}
	}
	int sat = f->sat_default;
	if (satv) {
		if (f->kind != F_SCALAR || f->sat_default < 0) {
			drv_error("quantize: --saturate does not apply to %s (it always saturates)", f->name);
			return EXIT_USER;
		}
		if (strcmp(satv, "yes") == 0)
			sat = 1;
		else if (strcmp(satv, "no") == 0)
			sat = 0;
		else {
			drv_error("quantize: --saturate must be yes or no, not '%s'", satv);
			return EXIT_USER;
		}
	}
	size_t len;
	char *buf = slurp(stdin, &len);
	if (!buf) {
		drv_error("out of memory");
		return EXIT_INTERNAL;
	}
	Input in = { 0 };
	int rc = parse_input(buf, len, &in) < 0 ? EXIT_USER : EXIT_OK;
	free(buf);
	if (rc == EXIT_OK && !(in.n == 0 && print[0] == 't')) {   /* no input, no table */
		if (f->kind == F_SCALAR)
			rc = run_scalar(f, &in, sat < 0 ? 1 : sat, print);
		else if (f->kind == F_BLOCK)
			rc = run_block(f, &in, &o, print);
		else
			rc = run_int(f, &in, nblock, print);
	}
	free(in.x);
	free(in.line);
	free(in.col);
	if (rc == EXIT_OK && (fflush(stdout) != 0 || ferror(stdout))) {
		drv_error("cannot write the output");
		rc = EXIT_INTERNAL;
	}
	return rc;
}
