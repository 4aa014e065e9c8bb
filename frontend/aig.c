/* frontend/aig.c: the .aig reader's entry points (frontend/frontend.h).
 *
 * Reads the file, keeps a copy of its text in the module's arena and registers it with
 * ir/diag so every later error (shape inference, passes) can show the source line, runs the
 * flex scanner and bison parser (frontend/lexer.l, frontend/parser.y) over it, and returns the
 * module, or NULL after the errors were reported.  The scanner and the parser's tables are
 * freed here; the IR lives in the module's arena.  The *_opts entry points take `--bind` values
 * that replace `dim` constants (frontend/build.c, fe_def_dim).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "frontend/parse.h"
#include "ir/diag.h"
#include "parser.h"
#include "lexer.h"

static void parser_free(Parser *p)
{
	names_clear(&p->names);
	names_clear(&p->graphs);
	names_clear(&p->dimnames);
	free(p->ops.a);
	free(p->lhs.a);
	free(p->dims.a);
	free(p->dimlocs.a);
	free(p->lits.a);
	free(p->attrs.a);
	free(p->attrlocs.a);
	free(p->iargs.a);
	free(p->outs.a);
	free(p->pending.a);
}

/* Runs the scanner and parser over text; returns whether the parse succeeded. */
static int run(Parser *p, const char *text, size_t len)
{
	if (len > INT_MAX - 2) {
		Loc loc = { p->file, 0, 0 };
		diag_error(loc, "file is too large (%zu bytes)", len);
		return 0;
	}
	if (aiglex_init_extra(p, (yyscan_t *)&p->scanner) != 0) {
		fputs("aicc: out of memory\n", stderr);
		abort();
	}
	aig_scan_bytes(text, (int)len, p->scanner);
	int rc = aigparse(p);
	if (!p->fatal && !diag_stop())
		fe_module_end(p);
	aiglex_destroy(p->scanner);
	return rc == 0 && !p->fatal && diag_count() == p->diag0;
}

Module *fe_parse_aig_text(const char *name, const char *text, size_t len)
{
	return fe_parse_aig_text_opts(name, text, len, NULL, 0);
}

/* When the first 8 KiB of text hold 4 or more control bytes other than tab, newline, carriage
 * return and form feed (NULs included), the first of them; else NULL.  Such a file is not .aig
 * text, and lexing it would give a screenful of errors (newcomer finding 14); a stray byte or
 * two in a text file is left to the lexer, which reports each and goes on. */
static const char *binary_byte(const char *text, size_t len)
{
	const char *first = NULL;
	int n = 0;
	for (size_t i = 0; i < len && i < 8192; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c < 32 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 127) {
			first = first ? first : text + i;
			if (++n == 4)
				return first;
		}
	}
	return NULL;
}

Module *fe_parse_aig_text_opts(const char *name, const char *text, size_t len, FeBind *over, int nover)
{
	const char *bin = binary_byte(text, len);
	if (bin) {
		Loc l = { name, 1, 1 };
		for (const char *q = text; q < bin; q++)
			l.col = *q == '\n' ? (l.line++, 1) : l.col + 1;
		diag_source(name, text, len);
		diag_error(l, "byte \\x%02x: this is not a text file (an .aig file is UTF-8 text)", (unsigned char)*bin);
		diag_source(name, "", 0);
		return NULL;
	}
	Module *m = ir_module_new(name);
	m->dir = ".";
	char *copy = arena_alloc(m->arena, len + 1);
	memcpy(copy, text, len);
	diag_source(name, copy, len);
	Parser p;
	memset(&p, 0, sizeof p);
	p.m = m;
	p.file = m->file;
	p.line = p.col = 1;
	p.diag0 = diag_count();
	p.over = over;
	p.nover = nover;
	fe_recover(&p);
	int ok = run(&p, copy, len);
	parser_free(&p);
	if (ok)
		return m;
	diag_source(name, "", 0);   /* the text goes with the module */
	ir_module_free(m);
	return NULL;
}

/* The directory part of path ("." when it has none), in m's arena. */
static const char *dir_of(Module *m, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return arena_strndup(m->arena, path, (size_t)(slash - path));
}

Module *fe_parse_aig(const char *path)
{
	return fe_parse_aig_opts(path, NULL, 0);
}

Module *fe_parse_aig_opts(const char *path, FeBind *over, int nover)
{
	FILE *f = fopen(path, "rb");
	Loc none = { NULL, 0, 0 };
	if (!f) {
		diag_error(none, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			char *nb = realloc(buf, cap);
			if (!nb) {
				fputs("aicc: out of memory\n", stderr);
				abort();
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		diag_error(none, "cannot read '%s'", path);
		free(buf);
		return NULL;
	}
	Module *m = fe_parse_aig_text_opts(path, buf ? buf : "", len, over, nover);
	free(buf);
	if (m)
		m->dir = dir_of(m, path);
	return m;
}
