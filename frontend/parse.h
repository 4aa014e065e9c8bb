/* frontend/parse.h: the .aig reader's private interface, shared by the flex scanner
 * (frontend/lexer.l), the bison grammar (frontend/parser.y) and the semantic actions that build
 * the IR (frontend/build.c).
 *
 * One Parser holds everything a parse needs: the module being built, the scanner's position,
 * error-recovery state, per-graph and per-module name tables (O(1) lookups) and the scratch
 * lists a statement is collected in before it becomes a Node.  Nothing here outlives the parse
 * except what is placed in the module's arena.
 */
#ifndef AICC_FE_PARSE_H
#define AICC_FE_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "frontend/frontend.h"
#include "ir/ir.h"

enum {
	FE_MAX_DEPTH = 200,      /* brackets nested deeper than this are an error */
};

/* Bison's location type (api.location.type): 1-based line and column of a token's first and
 * last byte. */
typedef struct FeLoc {
	int first_line, first_column, last_line, last_column;
} FeLoc;

/* A signed number as written: isint when it was an integer literal (i holds it exactly). */
typedef struct Num {
	double f;
	int64_t i;
	int isint;
} Num;

/* String-keyed open-addressing hash table (frontend/names.c). */
typedef struct NameEnt {
	const char *key;
	uint64_t hash;
	void *val;
} NameEnt;
typedef struct NameTab {
	NameEnt *e;
	size_t cap, n;
} NameTab;

void *names_get(const NameTab *t, const char *key);
void names_put(NameTab *t, const char *key, void *val);   /* key must outlive the table */
void names_clear(NameTab *t);                              /* frees the storage */
/* The key of t closest to `name` by edit distance, or NULL if none is close. */
const char *names_suggest(const NameTab *t, const char *name);
int fe_edit_distance(const char *a, const char *b);

/* A dimension name: a `dim` constant (its value) or a symbol. */
typedef struct DimName {
	Dim d;
	int is_const;
	Loc loc;
} DimName;

typedef struct Operand { Value *v; Loc loc; int absent; } Operand;
typedef struct LhsName { const char *name; Loc loc; } LhsName;
typedef struct OutDecl { const char *name; Loc loc; Type t; } OutDecl;
/* An argument of an initialiser call: `std=0.02`, `0.5` or `"w.npy"`. */
typedef struct InitArg { const char *key; Num num; const char *str; Loc loc; } InitArg;
typedef struct Pending { Node *n; const char *name; Loc loc; } Pending;

/* Growable malloc'd array: VEC(T) v; vec_push(&v, x). */
#define VEC(T) struct { T *a; int n, cap; }
#define vec_push(v, x) do { \
	if ((v)->n == (v)->cap) \
		(v)->a = fe_grow((v)->a, &(v)->cap, sizeof *(v)->a); \
	(v)->a[(v)->n++] = (x); \
} while (0)
void *fe_grow(void *a, int *cap, size_t elem);

typedef struct Parser {
	Module *m;
	const char *file;          /* m->file: the name diagnostics use */
	void *scanner;
	int line, col;             /* scanner position of the next byte */
	int depth;                 /* open brackets */
	int fatal;                 /* stop now: input nested too deep or too many errors */
	int tok_line, tok_bol;     /* the last token's line; whether it began its line */
	int skip_line;             /* error recovery: drop the rest of this line's tokens */
	char tok[40];              /* the last token's text, for syntax error messages */
	int ntok_eof;              /* the last token was the end of input */
	int end_line, end_col;     /* just after the last token */
	int prev_end_line, prev_end_col;   /* just after the token before it */
	Graph *g;                  /* the graph being parsed */
	NameTab names;             /* g's values by name */
	NameTab graphs;            /* graphs by name */
	NameTab dimnames;          /* DimName by name */
	VEC(Operand) ops;
	VEC(LhsName) lhs;
	VEC(Dim) dims;
	VEC(Loc) dimlocs;
	VEC(Num) lits;
	VEC(Attr) attrs;
	VEC(Loc) attrlocs;
	VEC(InitArg) iargs;
	VEC(OutDecl) outs;
	VEC(Pending) pending;
	Annot annot;
	int nlitstr;               /* names or strings seen in a list of numbers (an error) */
	int diag0;                 /* diag_count() when the parse began */
	FeBind *over;              /* values replacing `dim` constants (--bind) */
	int nover;
} Parser;

static inline Loc fe_loc(const Parser *p, FeLoc l) { Loc r = { p->file, l.first_line, l.first_column }; return r; }

/* ---- semantic actions (frontend/build.c) ---- */
void fe_recover(Parser *p);
int fe_stmt_error(Parser *p);
/* A statement given up on: its assigned names become placeholders (as fe_stmt_error), the
 * scratch lists are cleared; the line is left alone. */
void fe_stmt_abandon(Parser *p);
void fe_def_dim(Parser *p, const char *name, FeLoc nl, Dim d);
Dim fe_dim_int(Parser *p, uint64_t u, FeLoc l);
Dim fe_dim_name(Parser *p, const char *name, FeLoc l);
Dim fe_dim_op(Parser *p, int op, Dim a, Dim b, FeLoc l);
void fe_dim_push(Parser *p, Dim d, FeLoc l);
Type fe_type(Parser *p, const char *dtype, FeLoc l);
Num fe_num_int(Parser *p, uint64_t u, int neg, FeLoc l);
Num fe_num_float(double f, int neg);
void fe_graph_begin(Parser *p, const char *name, FeLoc l);
void fe_input(Parser *p, const char *name, FeLoc l, Type t);
void fe_output(Parser *p, const char *name, FeLoc l, Type t);
void fe_graph_end(Parser *p);
void fe_param(Parser *p, const char *name, FeLoc l, Type t, ParamInit *init, FeLoc il);
ParamInit *fe_init_word(Parser *p, const char *word, FeLoc l);
ParamInit *fe_init_call(Parser *p, const char *word, FeLoc l);
ParamInit *fe_init_literal(Parser *p, FeLoc l);
void fe_init_arg(Parser *p, const char *key, Num num, const char *str, FeLoc l);
void fe_annot(Parser *p, const char *name, FeLoc nl, const char *arg, FeLoc al);
void fe_lhs(Parser *p, const char *name, FeLoc l);
void fe_operand_name(Parser *p, const char *name, FeLoc l);
void fe_operand_absent(Parser *p, FeLoc l);
void fe_operand_literal(Parser *p, FeLoc l);
void fe_attr_num(Parser *p, const char *name, FeLoc l, Num v);
void fe_attr_str(Parser *p, const char *name, FeLoc l, const char *s);
void fe_attr_list(Parser *p, const char *name, FeLoc l);
void fe_attr_ident(Parser *p, const char *name, FeLoc l, const char *ident);
void fe_attr_dim(Parser *p, const char *name, FeLoc l, Dim d, FeLoc dl);
void fe_lit_ident(Parser *p, const char *ident, FeLoc l);
void fe_lit_dim(Parser *p, Dim d, FeLoc l);
void fe_stmt_op(Parser *p, const char *opname, FeLoc l);
void fe_stmt_call(Parser *p, const char *callee, FeLoc l, Dim repeat, FeLoc rl, int is_repeat);
void fe_module_end(Parser *p);

/* ---- scanner (frontend/lexer.l) ---- */
/* Reports a lexical error at the scanner's current token. */
void fe_lex_error(Parser *p, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
