/* ir/print.c: writes a Module back in the .aig language (docs/language.md).
 *
 * The output is what frontend/parser.y reads, and printing is deterministic, so parse -> print
 * -> parse -> print is byte-identical.  To make that hold: floats are written with the fewest
 * digits that strtod reads back to the same double (inf and nan keep their spellings), and
 * float literals that look integral get a ".0" so they stay floats; names that are not
 * identifiers (or are keywords) are written in backquotes; inline literal operands are written
 * inline; `dim` constants are already substituted, so types print their values.  Parameters
 * come first in a graph, then the nodes in list order; each node's inferred output types, when
 * known, follow as a comment.  Requires nothing but the IR; allocates nothing.
 *
 * ir_print_module_elided leaves out the values of large constants (an ONNX model's weights), as
 * MLIR's --mlir-elide-elementsattrs-if-larger does: such a parameter prints as an unbound
 * `param` with a comment giving its value count, so the output stays readable and still parses
 * (the parameter is then unbound: `aicc run` asks for its data).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

enum { TYPE_BUF = 16384 };

static const char *const keywords[] = { "graph", "dim", "param", "call", "repeat", "inf", "nan", "_" };

/* Whether s can be written bare: [A-Za-z_][A-Za-z0-9_.]* and not a keyword. */
static int is_ident(const char *s)
{
	if (!s || !(s[0] == '_' || ((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z')))
		return 0;
	for (const char *c = s + 1; *c; c++)
		if (!(*c == '_' || *c == '.' || (*c >= '0' && *c <= '9') || ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z')))
			return 0;
	for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
		if (strcmp(s, keywords[i]) == 0)
			return 0;
	return 1;
}

static void put_name(FILE *f, const char *s)
{
	if (is_ident(s))
		fputs(s, f);
	else
		rt_fput_quoted(f, s ? s : "", '`');
}

/* The shortest decimal form of v that reads back exactly; with `mark`, integral values get
 * ".0" so that the parser sees a float. */
static void put_float(FILE *f, double v, int mark)
{
	if (isnan(v)) {
		fputs("nan", f);
		return;
	}
	if (isinf(v)) {
		fputs(v < 0 ? "-inf" : "inf", f);
		return;
	}
	if (v == 0 && signbit(v)) {
		fputs("-0.0", f);   /* "-0" would read back as the integer 0 */
		return;
	}
	char buf[64];
	rt_shortest_double(buf, sizeof buf, v);
	if (strchr(buf, 'e') && v == floor(v) && fabs(v) < 1e16)
		snprintf(buf, sizeof buf, "%.0f", v);   /* 100, not 1e+02 */
	fputs(buf, f);
	if (mark && !strpbrk(buf, ".e"))
		fputs(".0", f);
}

/* An integer-typed literal value (held as a double in the IR), saturated to int64. */
static void put_int(FILE *f, double v)
{
	if (v != floor(v))
		put_float(f, v, 0);
	else if (v >= 9223372036854775807.0)
		fputs("9223372036854775807", f);
	else if (v <= -9223372036854775807.0)
		fputs("-9223372036854775808", f);
	else
		fprintf(f, "%lld", (long long)v);
}

static void put_type(FILE *f, const Module *m, Type t)
{
	char *buf = malloc(TYPE_BUF);
	if (!buf)
		return;
	fputs(ir_type_str(m, t, buf, TYPE_BUF), f);
	free(buf);
}

static int is_int_dtype(DType d) { return rt_dtypes[d].storage == S_I64; }

/* Whether param v is written inline as an operand: an i64 or f32 vector literal so marked. */
static int prints_inline(const Value *v)
{
	const ParamInit *pi = v->init;
	return v->kind == V_PARAM && pi && pi->kind == INIT_LITERAL && pi->inline_lit && v->type.rank == 1 &&
	       (v->type.dt == DT_I64 || v->type.dt == DT_F32) && dim_isconst(v->type.dims[0]) &&
	       v->type.dims[0].k == pi->nlit;
}

static void put_literal(FILE *f, const double *lit, int64_t n, int ints, int mark)
{
	fputc('[', f);
	for (int64_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		if (ints)
			put_int(f, lit[i]);
		else
			put_float(f, lit[i], mark);
	}
	fputc(']', f);
}

/* An in-memory tensor written as a literal list. */
static void put_data(FILE *f, const RtTensor *t)
{
	fputc('[', f);
	for (int64_t i = 0; i < t->n; i++) {
		if (i)
			fputs(", ", f);
		if (rt_dtypes[t->dtype].storage == S_I64)
			fprintf(f, "%lld", (long long)rt_geti(t, i));
		else
			put_float(f, rt_get(t, i), 0);
	}
	fputc(']', f);
}

/* `normal(std=0.02, seed=1)`: only the arguments that differ from the defaults. */
static void put_random(FILE *f, const char *fn, const char *ka, const char *kb, const ParamInit *pi)
{
	const char *sep = "";
	fprintf(f, "%s(", fn);
	if (pi->a != 0) {
		fprintf(f, "%s=", ka);
		put_float(f, pi->a, 0);
		sep = ", ";
	}
	if (pi->b != 1) {
		fprintf(f, "%s%s=", sep, kb);
		put_float(f, pi->b, 0);
		sep = ", ";
	}
	if (pi->seed)
		fprintf(f, "%sseed=%llu", sep, (unsigned long long)pi->seed);
	fputc(')', f);
}

static void put_init(FILE *f, const Value *v)
{
	const ParamInit *pi = v->init;
	if (!pi || pi->kind == INIT_NONE || (pi->kind == INIT_DATA && !pi->data))
		return;
	fputs(" = ", f);
	switch (pi->kind) {
	case INIT_NORMAL: put_random(f, "normal", "mean", "std", pi); break;
	case INIT_UNIFORM: put_random(f, "uniform", "low", "high", pi); break;
	case INIT_FILL:
		if (pi->a == 0 && !signbit(pi->a))
			fputs("zeros", f);
		else if (pi->a == 1)
			fputs("ones", f);
		else {
			fputs("fill(", f);
			put_float(f, pi->a, 0);
			fputc(')', f);
		}
		break;
	case INIT_LITERAL: put_literal(f, pi->lit, pi->nlit, is_int_dtype(v->type.dt), 0); break;
	case INIT_NPY:
		fputs("npy(", f);
		rt_fput_quoted(f, pi->path ? pi->path : "", '"');
		fputc(')', f);
		break;
	case INIT_SAFETENSORS:
		fputs("safetensors(", f);
		rt_fput_quoted(f, pi->path ? pi->path : "", '"');
		fputs(", ", f);
		rt_fput_quoted(f, pi->key ? pi->key : "", '"');
		fputc(')', f);
		break;
	case INIT_DATA: put_data(f, pi->data); break;
	case INIT_NONE: break;
	}
}

/* The number of values param v's initializer spells out (a literal or in-memory data), else 0. */
static int64_t init_values(const Value *v)
{
	const ParamInit *pi = v->init;
	if (!pi)
		return 0;
	return pi->kind == INIT_LITERAL ? pi->nlit : pi->kind == INIT_DATA && pi->data ? pi->data->n : 0;
}

static int elided(const Value *v, int64_t elide_over)
{
	return elide_over >= 0 && init_values(v) > elide_over;
}

static void put_param(FILE *f, const Module *m, const Value *v, int64_t elide_over)
{
	fputs("  param ", f);
	put_name(f, v->name);
	fputs(": ", f);
	put_type(f, m, v->type);
	if (elided(v, elide_over))
		fprintf(f, "  # %lld values elided", (long long)init_values(v));
	else
		put_init(f, v);
	fputc('\n', f);
}

static void put_operand(FILE *f, const Value *v)
{
	if (!v)
		fputc('_', f);
	else if (prints_inline(v))
		put_literal(f, v->init->lit, v->init->nlit, v->type.dt == DT_I64, 1);
	else
		put_name(f, v->name);
}

static void put_attr(FILE *f, const Attr *a)
{
	put_name(f, a->name);
	fputc('=', f);
	switch (a->kind) {
	case ATTR_INT: fprintf(f, "%lld", (long long)a->i); break;
	case ATTR_FLOAT: put_float(f, a->f, 1); break;
	case ATTR_STRING: rt_fput_quoted(f, a->s ? a->s : "", '"'); break;
	case ATTR_INTS:
		fputc('[', f);
		for (int i = 0; i < a->n; i++)
			fprintf(f, "%s%lld", i ? ", " : "", (long long)a->ints[i]);
		fputc(']', f);
		break;
	case ATTR_FLOATS: put_literal(f, a->floats, a->n, 0, 1); break;
	}
}

static void put_annot(FILE *f, const Annot *an)
{
	if (an->device) {
		fputs("@device(", f);
		put_name(f, an->device);
		fputs(") ", f);
	}
	if (an->precision != DT_INVALID && an->precision < DT_COUNT)
		fprintf(f, "@precision(%s) ", rt_dtype_name(an->precision));
	if (an->nofuse)
		fputs("@nofuse ", f);
}

/* The right-hand side: `Op(a, b) {k=v}`, `call g(a)` or `repeat N g(a)`. */
static void put_rhs(FILE *f, const Node *n)
{
	if (n->op == OP_Call) {
		if (n->repeat != 1)
			fprintf(f, "repeat %lld ", (long long)n->repeat);
		else
			fputs("call ", f);
		put_name(f, n->callee ? n->callee->name : "?");
	} else
		fputs(n->op < OP_COUNT ? ir_ops[n->op].name : "?", f);
	fputc('(', f);
	for (int i = 0; i < n->nin; i++) {
		if (i)
			fputs(", ", f);
		put_operand(f, n->in[i]);
	}
	fputc(')', f);
	for (int i = 0; i < n->attrs.n; i++) {
		fputs(i ? ", " : " {", f);
		put_attr(f, &n->attrs.a[i]);
	}
	if (n->attrs.n)
		fputc('}', f);
}

/* "  # f32[B, 8], ?" when shape inference typed at least one output. */
static void put_types_comment(FILE *f, const Module *m, const Node *n)
{
	int known = 0;
	for (int i = 0; i < n->nout; i++)
		known |= n->out[i]->type.rank >= 0;
	if (!known)
		return;
	fputs("  #", f);
	for (int i = 0; i < n->nout; i++) {
		fputs(i ? ", " : " ", f);
		put_type(f, m, n->out[i]->type);
	}
}

static void put_node(FILE *f, const Module *m, const Node *n)
{
	fputs("  ", f);
	put_annot(f, &n->annot);
	for (int i = 0; i < n->nout; i++) {
		if (i)
			fputs(", ", f);
		put_name(f, n->out[i]->name);
	}
	fputs(" = ", f);
	put_rhs(f, n);
	put_types_comment(f, m, n);
	fputc('\n', f);
}

/* The header: `graph g(x: f32[B, 8]) -> (y: f32[B, 8]) {`. */
static void put_header(FILE *f, const Graph *g)
{
	fputs("graph ", f);
	put_name(f, g->name);
	fputc('(', f);
	for (int i = 0; i < g->nin; i++) {
		fputs(i ? ", " : "", f);
		put_name(f, g->inputs[i]->name);
		fputs(": ", f);
		put_type(f, g->m, g->inputs[i]->type);
	}
	fputs(") -> (", f);
	for (int i = 0; i < g->nout; i++) {
		Type t = g->out_decl && g->out_decl[i].rank >= 0 ? g->out_decl[i] : g->outputs[i]->type;
		fputs(i ? ", " : "", f);
		put_name(f, g->outputs[i]->name);
		if (t.rank >= 0) {
			fputs(": ", f);
			put_type(f, g->m, t);
		}
	}
	fputs(") {\n", f);
}

static void print_graph(const Graph *g, FILE *out, int64_t elide_over)
{
	put_header(out, g);
	for (int i = 0; i < g->nparams; i++)
		if (!prints_inline(g->params[i]))
			put_param(out, g->m, g->params[i], elide_over);
	ir_foreach_node(g, n)
		put_node(out, g->m, n);
	fputs("}\n", out);
}

void ir_print_graph(const Graph *g, FILE *out)
{
	print_graph(g, out, -1);
}

void ir_print_module_elided(const Module *m, FILE *out, int64_t elide_over)
{
	int64_t n = 0, values = 0;
	for (const Graph *g = m->graphs; g; g = g->next)
		for (int i = 0; i < g->nparams; i++)
			if (!prints_inline(g->params[i]) && elided(g->params[i], elide_over)) {
				n++;
				values += init_values(g->params[i]);
			}
	if (n)
		fprintf(out, "# the values of %lld constant%s with more than %lld values each (%lld values) are elided: "
			"--print-weights prints them\n", (long long)n, n == 1 ? "" : "s", (long long)elide_over,
			(long long)values);
	for (const Graph *g = m->graphs; g; g = g->next) {
		if (g != m->graphs)
			fputc('\n', out);
		print_graph(g, out, elide_over);
	}
}

void ir_print_module(const Module *m, FILE *out)
{
	ir_print_module_elided(m, out, -1);
}
