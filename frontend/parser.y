/* frontend/parser.y: the .aig grammar (pure bison parser; docs/language.md has the EBNF).
 *
 * Every action hands its pieces to frontend/build.c, which checks them and builds the IR as the
 * parse goes: a statement's names, operands and attributes are collected in the Parser's scratch
 * lists and become one Node when the statement ends.  Syntax errors are reported with what was
 * expected; recovery happens at statement level (`stmts error`) and at module level, so one run
 * reports several errors.
 */
%define api.pure full
%define api.prefix {aig}
%define api.location.type {FeLoc}
%define parse.error custom
%locations
%param {Parser *p}

%code requires {
#include "frontend/parse.h"
}

%code {
#include <string.h>
#include "ir/diag.h"

int fe_scan(AIGSTYPE *lval, FeLoc *lloc, void *scanner);

/* The scanner, stopped for good once the parse must end. */
static int aiglex(AIGSTYPE *lval, FeLoc *lloc, Parser *p)
{
	if (p->fatal || diag_stop())
		return 0;
	return fe_scan(lval, lloc, p->scanner);
}

static void aigerror(FeLoc *l, Parser *p, const char *msg)
{
	if (p->fatal || diag_stop())
		return;
	if (strcmp(msg, "memory exhausted") == 0) {
		diag_error(fe_loc(p, *l), "expression nested too deeply");
		p->fatal = 1;
		return;
	}
	diag_error(fe_loc(p, *l), "%s", msg);
}
}

%union {
	uint64_t u;
	double f;
	const char *s;
	Dim d;
	Type t;
	Num num;
	ParamInit *init;
}

%token GRAPH "'graph'" DIM "'dim'" PARAM "'param'" CALL "'call'" REPEAT "'repeat'"
%token ARROW "'->'" UNDERSCORE "'_'" RESYNC "start of the next line"
%token <s> IDENT "name" QNAME "quoted name" STRING "string" ANNOT "annotation"
%token <u> INT "integer"
%token <f> FLOAT "number"
%nterm <s> name
%nterm <d> dimexpr dimterm dimfactor
%nterm <t> type
%nterm <num> snum
%nterm <init> init init_opt

%%

module:	  %empty
	| module dimdef
	| module graph
	| module error			{ fe_recover(p); }
	;

dimdef:	  DIM name '=' dimexpr		{ fe_def_dim(p, $2, @2, $4); }
	;

name:	  IDENT | QNAME ;

graph:	  GRAPH name '('		{ fe_graph_begin(p, $2, @2); }
	  inputs_opt ')' ARROW '(' outputs_opt ')' '{' stmts '}'
					{ fe_graph_end(p); }
	;

inputs_opt: %empty | inputs ;
inputs:	  input | inputs ',' input ;
input:	  name ':' type			{ fe_input(p, $1, @1, $3); }
	;
outputs_opt: %empty | outputs ;
outputs:  output | outputs ',' output ;
output:	  name ':' type			{ fe_output(p, $1, @1, $3); }
	| name				{ Type t = { DT_INVALID, -1, NULL }; fe_output(p, $1, @1, t); }
	;

type:	  IDENT '[' dims_opt ']'	{ $$ = fe_type(p, $1, @1); }
	;
dims_opt: %empty | dims ;
dims:	  dimexpr			{ fe_dim_push(p, $1, @1); }
	| dims ',' dimexpr		{ fe_dim_push(p, $3, @3); }
	;
dimexpr:  dimterm
	| dimexpr '+' dimterm		{ $$ = fe_dim_op(p, '+', $1, $3, @2); }
	| dimexpr '-' dimterm		{ $$ = fe_dim_op(p, '-', $1, $3, @2); }
	;
dimterm:  dimfactor
	| dimterm '*' dimfactor		{ $$ = fe_dim_op(p, '*', $1, $3, @2); }
	| dimterm '/' dimfactor		{ $$ = fe_dim_op(p, '/', $1, $3, @2); }
	;
dimfactor: INT				{ $$ = fe_dim_int(p, $1, @1); }
	| IDENT				{ $$ = fe_dim_name(p, $1, @1); }
	| '(' dimexpr ')'		{ $$ = $2; }
	| '-' dimfactor			{ $$ = fe_dim_op(p, '-', dim_c(0), $2, @1); }
	;

snum:	  INT				{ $$ = fe_num_int(p, $1, 0, @1); }
	| '-' INT			{ $$ = fe_num_int(p, $2, 1, @2); }
	| FLOAT				{ $$ = fe_num_float($1, 0); }
	| '-' FLOAT			{ $$ = fe_num_float($2, 1); }
	;

stmts:	  %empty
	| stmts stmt
	| stmts error			{ int bol = fe_stmt_error(p);
					  if (bol && (yychar == IDENT || yychar == QNAME || yychar == ANNOT
					      || yychar == PARAM || yychar == '}'))
						yyerrok;	/* at a statement boundary: report the next error */
					  else if (!bol && yychar != AIGEMPTY && yychar != AIGEOF)
						yyclearin;	/* the bad token, mid-line: never the start of a
								   statement (the lexer drops the rest of its line) */
					}
	| stmts error RESYNC		{ fe_stmt_abandon(p); yyerrok; }	/* the rest of the bad line was dropped */
	;
stmt:	  param | assign ;

param:	  PARAM name ':' type init_opt	{ fe_param(p, $2, @2, $4, $5, @5); }
	;
init_opt: %empty			{ $$ = NULL; }
	| '=' init			{ $$ = $2; }
	;
init:	  IDENT				{ $$ = fe_init_word(p, $1, @1); }
	| IDENT '(' iargs_opt ')'	{ $$ = fe_init_call(p, $1, @1); }
	| '[' lits_opt ']'		{ $$ = fe_init_literal(p, @$); }
	;
iargs_opt: %empty | iargs ;
iargs:	  iarg | iargs ',' iarg ;
iarg:	  IDENT '=' snum		{ fe_init_arg(p, $1, $3, NULL, @1); }
	| snum				{ fe_init_arg(p, NULL, $1, NULL, @1); }
	| STRING			{ Num z = { 0, 0, 0 }; fe_init_arg(p, NULL, z, $1, @1); }
	;
lits_opt: %empty | lits ;
lits:	  lit | lits ',' lit ;
lit:	  snum				{ vec_push(&p->lits, $1); }
	| STRING			{ p->nlitstr++; }
	| IDENT				{ fe_lit_ident(p, $1, @1); }
	| '(' dimexpr ')'		{ fe_lit_dim(p, $2, @2); }
	;

assign:	  annots lhs '=' rhs ;
annots:	  %empty | annots annot ;
annot:	  ANNOT				{ fe_annot(p, $1, @1, NULL, @1); }
	| ANNOT '(' name ')'		{ fe_annot(p, $1, @1, $3, @3); }
	;
lhs:	  name				{ fe_lhs(p, $1, @1); }
	| lhs ',' name			{ fe_lhs(p, $3, @3); }
	;
rhs:	  IDENT '(' operands_opt ')' attrs_opt
					{ fe_stmt_op(p, $1, @1); }
	| CALL name '(' operands_opt ')'
					{ fe_stmt_call(p, $2, @2, dim_c(1), @1, 0); }
	| REPEAT dimexpr name '(' operands_opt ')'
					{ fe_stmt_call(p, $3, @3, $2, @2, 1); }
	;
operands_opt: %empty | operands ;
operands: operand | operands ',' operand ;
operand:  name				{ fe_operand_name(p, $1, @1); }
	| name '('			{ diag_error(fe_loc(p, @1), "operator calls cannot be nested: assign "
					      "'%s(...)' to a name in a statement of its own and pass that name", $1);
					  p->skip_line = p->tok_line;	/* resynchronise at the next line */
					  YYERROR; }
	| UNDERSCORE			{ fe_operand_absent(p, @1); }
	| '[' lits_opt ']'		{ fe_operand_literal(p, @$); }
	;

attrs_opt: %empty | '{' attrs_list_opt '}' ;
attrs_list_opt: %empty | attrs_list ;
attrs_list: attr | attrs_list ',' attr ;
attr:	  name '=' snum		{ fe_attr_num(p, $1, @1, $3); }
	| name '=' STRING		{ fe_attr_str(p, $1, @1, $3); }
	| name '=' IDENT		{ fe_attr_ident(p, $1, @1, $3); }
	| name '=' QNAME		{ fe_attr_str(p, $1, @1, $3); }
	| name '=' '(' dimexpr ')'	{ fe_attr_dim(p, $1, @1, $4, @4); }
	| name '=' '[' lits_opt ']'	{ fe_attr_list(p, $1, @1); }
	;

%%

/* Syntax errors: "unexpected X; expected A, B or C" (the expected list only when short). */
static int yyreport_syntax_error(const yypcontext_t *ctx, Parser *p)
{
	if (p->fatal || diag_stop())
		return 0;
	FeLoc l = *yypcontext_location(ctx);
	yysymbol_kind_t la = yypcontext_token(ctx), exp[5];
	int n = yypcontext_expected_tokens(ctx, exp, 5);
	char msg[512], got[64];
	if (la == YYSYMBOL_YYEOF)
		snprintf(got, sizeof got, "end of file");
	else
		snprintf(got, sizeof got, "'%s'", p->tok);
	int len = 0;
	/* a closing bracket missing before a token that begins a line: it belongs at the end of the
	 * line before (a call's ')'), so say so there, as clang does */
	int eol = la != YYSYMBOL_YYEOF && p->tok_bol && n > 0 && n <= 4 && p->prev_end_line > 0 &&
		  p->prev_end_line < l.first_line, closer = 0;
	for (int i = 0; i < n && n <= 4; i++)
		closer |= !strcmp(yysymbol_name(exp[i]), "')'") || !strcmp(yysymbol_name(exp[i]), "']'");
	eol &= closer;
	if (eol) {
		len = snprintf(msg, sizeof msg, "expected ");
		for (int i = 0; i < n; i++)
			len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
					yysymbol_name(exp[i]));
		snprintf(msg + len, sizeof msg - (size_t)len, " at the end of the line (the next line begins with %s)", got);
		l.first_line = l.last_line = p->prev_end_line;
		l.first_column = l.last_column = p->prev_end_col;
	} else {
		len = snprintf(msg, sizeof msg, "unexpected %s", got);
		for (int i = 0; n > 0 && n <= 4 && i < n; i++)
			len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", i == 0 ? "; expected " : i == n - 1 ? " or " : ", ",
					yysymbol_name(exp[i]));
	}
	diag_error(fe_loc(p, l), "%s", msg);
	/* resynchronise at the next line unless the bad token starts one */
	if (la != YYSYMBOL_YYEOF && !p->tok_bol)
		p->skip_line = p->tok_line;
	return 0;
}
