/* ir/diag.c: clang-style diagnostics with the source line and a caret (see ir/diag.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "ir/suggest.h"

typedef struct Source {
	const char *file, *text;
	size_t len;
} Source;

static Source sources[64];
static int nsources;
static int nerrors, maxerrors = 20, stopped;
static FILE *out;

void diag_source(const char *file, const char *text, size_t len)
{
	for (int i = 0; i < nsources; i++)
		if (strcmp(sources[i].file, file) == 0) {
			sources[i].text = text;
			sources[i].len = len;
			return;
		}
	if (nsources < (int)(sizeof sources / sizeof sources[0]))
		sources[nsources++] = (Source){ file, text, len };
}

void diag_set_output(FILE *f) { out = f; }
void diag_set_max(int max) { maxerrors = max; }
int diag_count(void) { return nerrors; }
int diag_stop(void) { return stopped; }

void diag_reset(void)
{
	nsources = 0;
	nerrors = 0;
	stopped = 0;
}

/* Length of the valid UTF-8 sequence at p (before end) of 2 to 4 bytes, or 0. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
	int n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
	if (n == 0 || p + n > end)
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Prints line `line` of file's registered text and a caret under column col (tabs kept).
 * Control bytes and bytes that are not UTF-8 print as \xHH, so a binary file does not reach
 * the terminal raw (newcomer finding 14); a long line shows 160 bytes around the column. */
static void show_line(FILE *f, Loc loc)
{
	const Source *s = NULL;
	for (int i = 0; i < nsources; i++)
		if (strcmp(sources[i].file, loc.file) == 0)
			s = &sources[i];
	if (!s || loc.line < 1)
		return;
	const char *p = s->text, *end = s->text + s->len;
	for (int l = 1; l < loc.line && p < end; p++)
		if (*p == '\n')
			l++;
	if (p >= end && loc.line > 1)
		return;
	const char *e = p;
	while (e < end && *e != '\n')
		e++;
	const unsigned char *a = (const unsigned char *)p, *z = (const unsigned char *)e;
	int col = loc.col;
	if (col > 120 && z - a > 160) {      /* very long lines: the part around the column */
		a += col - 80 < z - a ? col - 80 : z - a;
		col = 81;
	}
	if (z - a > 160)
		z = a + 160;
	fputs("  ", f);
	for (const unsigned char *q = a; q < z;) {
		int n = *q >= 0x80 ? utf8_len(q, z) : 1;
		if (n == 0 || (*q < 32 && *q != '\t') || *q == 127)
			fprintf(f, "\\x%02x", *q), n = 1;
		else
			fwrite(q, 1, (size_t)n, f);
		q += n;
	}
	fputs("\n  ", f);
	for (const unsigned char *q = a; q < z && q - a < col - 1;) {
		int n = *q >= 0x80 ? utf8_len(q, z) : 1;
		if (n == 0 || (*q < 32 && *q != '\t') || *q == 127)
			fputs("    ", f), n = 1;
		else
			fputc(*q == '\t' ? '\t' : ' ', f);
		q += n;
	}
	fputs("^\n", f);
}

static void vreport(const char *kind, Loc loc, const char *fmt, va_list ap)
{
	FILE *f = out ? out : stderr;
	if (loc.file && loc.line > 0)
		fprintf(f, "%s:%d:%d: %s: ", loc.file, loc.line, loc.col, kind);
	else if (loc.file)
		fprintf(f, "%s: %s: ", loc.file, kind);
	else
		fprintf(f, "aicc: %s: ", kind);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
	if (loc.file && loc.line > 0)
		show_line(f, loc);
}

void diag_print_located(const char *msg)
{
	FILE *f = out ? out : stderr;
	fprintf(f, "%s\n", msg);
	const char *e = strstr(msg, ": error: ");
	if (!e)
		return;
	/* FILE:LINE:COL before e: the last two colons delimit LINE and COL */
	const char *c2 = e - 1;
	while (c2 > msg && *c2 != ':')
		c2--;
	const char *c1 = c2 > msg ? c2 - 1 : msg;
	while (c1 > msg && *c1 != ':')
		c1--;
	if (c1 <= msg || c2 <= c1)
		return;
	char file[1024];
	int line = atoi(c1 + 1), col = atoi(c2 + 1);
	if ((size_t)(c1 - msg) >= sizeof file || line < 1)
		return;
	memcpy(file, msg, (size_t)(c1 - msg));
	file[c1 - msg] = 0;
	show_line(f, (Loc){ .file = file, .line = line, .col = col });
}

void diag_error(Loc loc, const char *fmt, ...)
{
	if (stopped)
		return;
	va_list ap;
	va_start(ap, fmt);
	vreport("error", loc, fmt, ap);
	va_end(ap);
	if (++nerrors >= maxerrors) {
		fprintf(out ? out : stderr, "aicc: fatal error: too many errors emitted, stopping now\n");
		stopped = 1;
	}
}

void diag_warning(Loc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("warning", loc, fmt, ap);
	va_end(ap);
}

void diag_note(Loc loc, const char *fmt, ...)
{
	if (stopped)
		return;
	va_list ap;
	va_start(ap, fmt);
	vreport("note", loc, fmt, ap);
	va_end(ap);
}

int diag_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), row[40];
	if (la > 38 || lb > 38)
		return 99;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

const char *diag_nearest(const char *s, const char *const *names, int n)
{
	const char *best = NULL;
	int bd = 3, ls = (int)strlen(s);
	for (int i = 0; i < n; i++) {
		int k = diag_distance(s, names[i]), pre = 0;
		while (s[pre] && s[pre] == names[i][pre])
			pre++;
		if (pre == ls || !names[i][pre])
			k = 0;           /* one is a prefix of the other: h100 -> h100-sxm */
		else if (pre >= 3)
			k--;             /* a shared stem: fusion -> fuse */
		if (k < bd && k < ls)
			bd = k, best = names[i];
	}
	return best;
}

void diag_suggest(char *buf, size_t len, const char *s, const char *const *names, int n)
{
	const char *near = diag_nearest(s, names, n);
	size_t k = 0;
	if (len == 0)
		return;
	buf[0] = '\0';
	if (near)
		k += (size_t)snprintf(buf, len, " (did you mean '%s'?; valid: ", near);
	else
		k += (size_t)snprintf(buf, len, " (valid: ");
	for (int i = 0; i < n && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", names[i]);
	if (k < len)
		snprintf(buf + k, len - k, ")");
	else if (len > 5)
		snprintf(buf + len - 5, 5, "...)");
}
