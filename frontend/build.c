/* frontend/build.c: the .aig parser's semantic actions: check what the grammar recognised and
 * build the IR with the builder API of ir/ir.h.
 *
 * Requires a Parser set up by frontend/aig.c.  Provides one function per grammar action
 * (frontend/parse.h).  Names resolve through O(1) hash tables: values per graph, graphs per
 * module (calls may name a graph defined later; they are resolved when the module ends) and
 * dimension names (a `dim` constant is substituted where it is used, any other name is a
 * symbol; a `--bind` of a constant's name replaces its value when it is defined).  `dim`
 * constants also stand for integers in attribute values and lists (`{num_heads=H}`,
 * `[0, 0, H, (D/H)]`).  Every problem is reported at its token with diag_error and the parse goes on,
 * defining the names a bad statement would have defined so one mistake is reported once.
 * Structural checks that need the whole module (call signatures, recursion) are ir_verify's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parse.h"
#include "ir/diag.h"

/* Forgets the scratch lists of a statement that ended (or failed). */
void fe_recover(Parser *p)
{
	p->ops.n = p->lhs.n = p->dims.n = p->dimlocs.n = p->lits.n = 0;
	p->attrs.n = p->attrlocs.n = p->iargs.n = 0;
	p->nlitstr = 0;
	memset(&p->annot, 0, sizeof p->annot);
	p->annot.precision = DT_INVALID;
}

/* "; did you mean 'x'?" text for a suggestion (or ""), in buf. */
static const char *did_you_mean(const char *s, char *buf, size_t n)
{
	if (!s)
		return "";
	snprintf(buf, n, "; did you mean '%s'?", s);
	return buf;
}

/* ---- dimensions ---- */

void fe_def_dim(Parser *p, const char *name, FeLoc nl, Dim d)
{
	Loc loc = fe_loc(p, nl);
	DimName *old = names_get(&p->dimnames, name);
	if (old && old->is_const) {
		diag_error(loc, "redefinition of dim '%s'", name);
		diag_note(old->loc, "previous definition of '%s' is here", name);
		return;
	}
	if (old) {
		diag_error(loc, "dim '%s' is defined after its use as a dimension symbol", name);
		diag_note(old->loc, "first used here");
		return;
	}
	int found = 0;
	for (int i = p->nover - 1; i >= 0; i--)
		if (strcmp(p->over[i].name, name) == 0) {
			if (!found++)
				d = dim_c(p->over[i].value);   /* the last --bind of the name wins */
			p->over[i].used = 1;
		}
	DimName *dn = arena_alloc(p->m->arena, sizeof *dn);
	*dn = (DimName){ d, 1, loc };
	names_put(&p->dimnames, name, dn);
	if (dim_isconst(d))
		ir_dim_const_add(p->m, name, d.k);
}

/* The value of the `dim` constant `name` in *v; 0 when name is not one. */
static int dim_const(Parser *p, const char *name, int64_t *v)
{
	DimName *dn = names_get(&p->dimnames, name);
	if (!dn || !dn->is_const || !dim_isconst(dn->d))
		return 0;
	*v = dn->d.k;
	return 1;
}

Dim fe_dim_int(Parser *p, uint64_t u, FeLoc l)
{
	if (u > INT64_MAX) {
		diag_error(fe_loc(p, l), "dimension %llu is too large", (unsigned long long)u);
		return dim_c(0);
	}
	return dim_c((int64_t)u);
}

Dim fe_dim_name(Parser *p, const char *name, FeLoc l)
{
	DimName *dn = names_get(&p->dimnames, name);
	if (dn)
		return dn->d;
	dn = arena_alloc(p->m->arena, sizeof *dn);
	*dn = (DimName){ dim_sym(p->m, name), 0, fe_loc(p, l) };
	names_put(&p->dimnames, name, dn);
	return dn->d;
}

Dim fe_dim_op(Parser *p, int op, Dim a, Dim b, FeLoc l)
{
	Dim r = dim_c(0);
	Module *m = p->m;
	int rc = op == '+' ? dim_add(m, a, b, &r) : op == '-' ? dim_sub(m, a, b, &r)
		: op == '*' ? dim_mul(m, a, b, &r) : dim_div(m, a, b, &r);
	if (rc == 0)
		return r;
	char sa[128], sb[128];
	if (op == '/' && dim_isconst(b) && b.k == 0)
		diag_error(fe_loc(p, l), "division by zero in a dimension");
	else if (op == '/')
		diag_error(fe_loc(p, l), "dimension %s is not divisible by %s", dim_str(m, a, sa, sizeof sa),
			   dim_str(m, b, sb, sizeof sb));
	else
		diag_error(fe_loc(p, l), "dimension arithmetic overflows or is too complex");
	return dim_c(0);
}

void fe_dim_push(Parser *p, Dim d, FeLoc l)
{
	vec_push(&p->dims, d);
	vec_push(&p->dimlocs, fe_loc(p, l));
}

/* The dtype spelled `name`, or DT_INVALID after reporting it with a suggestion. */
static DType lookup_dtype(Parser *p, const char *name, Loc loc)
{
	DType dt = rt_dtype_lookup(name);
	if (dt != DT_INVALID)
		return dt;
	const char *best = NULL;
	int bestd = 3;
	for (int i = 1; i < DT_COUNT; i++) {
		int d = fe_edit_distance(name, rt_dtypes[i].name);
		if (d < bestd) {
			bestd = d;
			best = rt_dtypes[i].name;
		}
	}
	char buf[96];
	diag_error(loc, "unknown dtype '%s'%s", name, did_you_mean(best, buf, sizeof buf));
	return DT_INVALID;
}

/* Checks the dims collected for one type: non-negative, and at most 2^63-1 elements. */
static void check_dims(Parser *p, Loc loc, int rank)
{
	int64_t numel = 1;
	int overflow = 0;
	for (int i = 0; i < rank; i++) {
		Dim d = p->dims.a[i];
		if (!dim_isconst(d))
			continue;
		if (d.k < 0)
			diag_error(p->dimlocs.a[i], "negative dimension %lld", (long long)d.k);
		else if (__builtin_mul_overflow(numel, d.k, &numel))
			overflow = 1;
	}
	if (overflow)
		diag_error(loc, "tensor type has more than 2^63 elements");
}

Type fe_type(Parser *p, const char *dtype, FeLoc l)
{
	Loc loc = fe_loc(p, l);
	DType dt = lookup_dtype(p, dtype, loc);
	int rank = p->dims.n;
	if (rank > IR_MAX_RANK) {
		diag_error(loc, "rank %d exceeds the maximum of %d", rank, IR_MAX_RANK);
		rank = IR_MAX_RANK;
	}
	check_dims(p, loc, rank);
	Type t = ir_type(p->m, dt, rank, p->dims.a);
	p->dims.n = p->dimlocs.n = 0;
	return t;
}

/* ---- numbers ---- */

Num fe_num_int(Parser *p, uint64_t u, int neg, FeLoc l)
{
	Num n = { 0, 0, 1 };
	if (u > (uint64_t)INT64_MAX + (uint64_t)neg) {
		diag_error(fe_loc(p, l), "integer literal is out of range");
		return n;
	}
	n.i = neg ? (int64_t)(0 - u) : (int64_t)u;
	n.f = (double)n.i;
	return n;
}

Num fe_num_float(double f, int neg)
{
	Num n = { neg ? -f : f, 0, 0 };
	return n;
}

/* ---- graphs ---- */

/* Whether `name` is still free in the current graph; reports a redefinition otherwise. */
static int name_free(Parser *p, const char *name, Loc loc)
{
	Value *old = names_get(&p->names, name);
	if (!old)
		return 1;
	diag_error(loc, "redefinition of '%s'", name);
	diag_note(old->loc, "previous definition of '%s' is here", name);
	return 0;
}

static void define(Parser *p, Value *v, int fresh)
{
	if (fresh)
		names_put(&p->names, v->name, v);
}

void fe_graph_begin(Parser *p, const char *name, FeLoc l)
{
	Loc loc = fe_loc(p, l);
	names_clear(&p->names);
	p->outs.n = 0;
	fe_recover(p);
	Graph *old = names_get(&p->graphs, name);
	if (old) {
		diag_error(loc, "redefinition of graph '%s'", name);
		diag_note(old->loc, "previous definition of '%s' is here", name);
	}
	p->g = ir_graph_new(p->m, name, loc);
	if (!old)
		names_put(&p->graphs, p->g->name, p->g);
}

void fe_input(Parser *p, const char *name, FeLoc l, Type t)
{
	Loc loc = fe_loc(p, l);
	int fresh = name_free(p, name, loc);
	define(p, ir_add_input(p->g, name, t, loc), fresh);
}

void fe_output(Parser *p, const char *name, FeLoc l, Type t)
{
	OutDecl o = { name, fe_loc(p, l), t };
	vec_push(&p->outs, o);
}

void fe_graph_end(Parser *p)
{
	Graph *g = p->g;
	Type *decl = arena_alloc(p->m->arena, (size_t)(p->outs.n ? p->outs.n : 1) * sizeof *decl);
	for (int i = 0; i < p->outs.n; i++) {
		OutDecl *o = &p->outs.a[i];
		Value *v = names_get(&p->names, o->name);
		if (!v) {
			char buf[96];
			diag_error(o->loc, "output '%s' is never defined in graph '%s'%s", o->name, g->name,
				   did_you_mean(names_suggest(&p->names, o->name), buf, sizeof buf));
			continue;
		}
		decl[g->nout] = o->t;
		ir_add_output(g, v);
	}
	g->out_decl = decl;
	names_clear(&p->names);
	p->outs.n = 0;
	p->g = NULL;
}

/* ---- parameters and initialisers ---- */

void fe_param(Parser *p, const char *name, FeLoc l, Type t, ParamInit *init, FeLoc il)
{
	Loc loc = fe_loc(p, l);
	int fresh = name_free(p, name, loc);
	if (init && init->kind == INIT_LITERAL) {
		int64_t n = ir_type_numel(t);
		char buf[256];
		if (n >= 0 && n != init->nlit)
			diag_error(fe_loc(p, il), "literal has %lld values but %s has %lld elements",
				   (long long)init->nlit, ir_type_str(p->m, t, buf, sizeof buf), (long long)n);
	}
	define(p, ir_add_param(p->g, name, t, init, loc), fresh);
	fe_recover(p);
}

static const char *const init_names[] = { "normal", "uniform", "zeros", "ones", "fill", "npy", "safetensors" };

static void unknown_init(Parser *p, const char *word, Loc loc)
{
	const char *best = NULL;
	int bestd = 3;
	for (size_t i = 0; i < sizeof init_names / sizeof *init_names; i++) {
		int d = fe_edit_distance(word, init_names[i]);
		if (d < bestd) {
			bestd = d;
			best = init_names[i];
		}
	}
	char buf[96];
	diag_error(loc, "unknown initialiser '%s'%s", word, did_you_mean(best, buf, sizeof buf));
}

ParamInit *fe_init_word(Parser *p, const char *word, FeLoc l)
{
	ParamInit *pi = arena_alloc(p->m->arena, sizeof *pi);
	if (strcmp(word, "zeros") == 0 || strcmp(word, "ones") == 0) {
		pi->kind = INIT_FILL;
		pi->a = word[0] == 'o';
	} else if (strcmp(word, "normal") == 0 || strcmp(word, "uniform") == 0 || strcmp(word, "fill") == 0 ||
		   strcmp(word, "npy") == 0 || strcmp(word, "safetensors") == 0)
		diag_error(fe_loc(p, l), "'%s' needs its arguments in parentheses", word);
	else
		unknown_init(p, word, fe_loc(p, l));
	return pi;
}

/* normal(mean, std, seed) / uniform(low, high, seed): keyword arguments into a, b, seed. */
static void init_random(Parser *p, ParamInit *pi, const char *fn, const char *ka, const char *kb)
{
	int seen[3] = { 0, 0, 0 };
	pi->b = 1;
	for (int i = 0; i < p->iargs.n; i++) {
		InitArg *a = &p->iargs.a[i];
		const char *key = a->key ? a->key : "";
		int k = strcmp(key, ka) == 0 ? 0 : strcmp(key, kb) == 0 ? 1 : strcmp(key, "seed") == 0 ? 2 : -1;
		if (!a->key || a->str)
			diag_error(a->loc, "%s() takes keyword arguments: %s=, %s=, seed=", fn, ka, kb);
		else if (k < 0)
			diag_error(a->loc, "unknown argument '%s' for %s(); expected %s, %s or seed", key, fn, ka, kb);
		else if (seen[k]++)
			diag_error(a->loc, "duplicate argument '%s'", key);
		else if (k == 2 && (!a->num.isint || a->num.i < 0))
			diag_error(a->loc, "seed must be a non-negative integer");
		else if (k == 2)
			pi->seed = (uint64_t)a->num.i;
		else if (isnan(a->num.f) || isinf(a->num.f))
			diag_error(a->loc, "%s must be finite", key);
		else
			*(k == 0 ? &pi->a : &pi->b) = a->num.f;
	}
}

/* npy("file") / safetensors("file", "tensor"): nstr string arguments. */
static void init_file(Parser *p, ParamInit *pi, const char *fn, int nstr, Loc loc)
{
	int ok = p->iargs.n == nstr;
	for (int i = 0; ok && i < nstr; i++)
		ok = p->iargs.a[i].str != NULL;
	if (!ok) {
		diag_error(loc, nstr == 1 ? "%s() takes one string: the file name"
				: "%s() takes two strings: the file name and the tensor name", fn);
		return;
	}
	pi->path = p->iargs.a[0].str;
	pi->key = nstr > 1 ? p->iargs.a[1].str : NULL;
}

ParamInit *fe_init_call(Parser *p, const char *word, FeLoc l)
{
	ParamInit *pi = arena_alloc(p->m->arena, sizeof *pi);
	Loc loc = fe_loc(p, l);
	if (strcmp(word, "normal") == 0) {
		pi->kind = INIT_NORMAL;
		init_random(p, pi, word, "mean", "std");
		if (pi->b < 0)
			diag_error(loc, "std must be non-negative");
	} else if (strcmp(word, "uniform") == 0) {
		pi->kind = INIT_UNIFORM;
		init_random(p, pi, word, "low", "high");
		if (pi->a > pi->b)
			diag_error(loc, "uniform() needs low <= high");
	} else if (strcmp(word, "fill") == 0) {
		pi->kind = INIT_FILL;
		if (p->iargs.n != 1 || p->iargs.a[0].key || p->iargs.a[0].str)
			diag_error(loc, "fill() takes one number");
		else
			pi->a = p->iargs.a[0].num.f;
	} else if (strcmp(word, "npy") == 0) {
		pi->kind = INIT_NPY;
		init_file(p, pi, word, 1, loc);
	} else if (strcmp(word, "safetensors") == 0) {
		pi->kind = INIT_SAFETENSORS;
		init_file(p, pi, word, 2, loc);
	} else if (strcmp(word, "zeros") == 0 || strcmp(word, "ones") == 0)
		diag_error(loc, "'%s' takes no arguments", word);
	else
		unknown_init(p, word, loc);
	p->iargs.n = 0;
	return pi;
}

void fe_init_arg(Parser *p, const char *key, Num num, const char *str, FeLoc l)
{
	InitArg a = { key, num, str, fe_loc(p, l) };
	vec_push(&p->iargs, a);
}

/* Moves the collected literal numbers into the arena; *allint tells whether all were integers. */
static double *take_lits(Parser *p, int *allint)
{
	int n = p->lits.n;
	double *v = arena_alloc(p->m->arena, (size_t)(n ? n : 1) * sizeof *v);
	*allint = 1;
	for (int i = 0; i < n; i++) {
		v[i] = p->lits.a[i].f;
		*allint &= p->lits.a[i].isint;
	}
	p->lits.n = 0;
	return v;
}

/* Reports names or strings inside a list of numbers; returns whether there were any. */
static int lits_have_strings(Parser *p, Loc loc)
{
	if (!p->nlitstr)
		return 0;
	diag_error(loc, "a list holds numbers only");
	p->nlitstr = 0;
	return 1;
}

ParamInit *fe_init_literal(Parser *p, FeLoc l)
{
	ParamInit *pi = arena_alloc(p->m->arena, sizeof *pi);
	int allint;
	lits_have_strings(p, fe_loc(p, l));
	pi->kind = INIT_LITERAL;
	pi->nlit = p->lits.n;
	pi->lit = take_lits(p, &allint);
	return pi;
}

/* ---- statements ---- */

void fe_annot(Parser *p, const char *name, FeLoc nl, const char *arg, FeLoc al)
{
	Loc loc = fe_loc(p, nl);
	if (strcmp(name, "device") == 0) {
		if (!arg)
			diag_error(loc, "@device needs a device name: @device(gpu0)");
		else if (p->annot.device)
			diag_error(loc, "@device given twice on one statement ('%s', then '%s')", p->annot.device, arg);
		p->annot.device = arg;
	} else if (strcmp(name, "precision") == 0) {
		if (!arg)
			diag_error(loc, "@precision needs a dtype: @precision(bf16)");
		else if (p->annot.precision != DT_INVALID)
			diag_error(loc, "@precision given twice on one statement");
		else
			p->annot.precision = lookup_dtype(p, arg, fe_loc(p, al));
	} else if (strcmp(name, "nofuse") == 0) {
		if (arg)
			diag_error(fe_loc(p, al), "@nofuse takes no argument");
		else if (p->annot.nofuse)
			diag_error(loc, "@nofuse given twice on one statement");
		p->annot.nofuse = 1;
	} else
		diag_error(loc, "unknown annotation '@%s'; expected @device, @precision or @nofuse", name);
}

void fe_lhs(Parser *p, const char *name, FeLoc l)
{
	LhsName n = { name, fe_loc(p, l) };
	vec_push(&p->lhs, n);
}

void fe_operand_name(Parser *p, const char *name, FeLoc l)
{
	Operand o = { names_get(&p->names, name), fe_loc(p, l), 0 };
	if (!o.v) {
		char buf[96];
		diag_error(o.loc, "undefined name '%s'%s", name,
			   did_you_mean(names_suggest(&p->names, name), buf, sizeof buf));
	}
	vec_push(&p->ops, o);
}

void fe_operand_absent(Parser *p, FeLoc l)
{
	Operand o = { NULL, fe_loc(p, l), 1 };
	vec_push(&p->ops, o);
}

/* An inline list operand `[0, -1]` becomes an anonymous parameter: i64 if all its numbers are
 * integers, else f32. */
void fe_operand_literal(Parser *p, FeLoc l)
{
	Operand o = { NULL, fe_loc(p, l), 0 };
	int allint;
	lits_have_strings(p, o.loc);
	ParamInit *pi = arena_alloc(p->m->arena, sizeof *pi);
	pi->kind = INIT_LITERAL;
	pi->inline_lit = 1;
	pi->nlit = p->lits.n;
	pi->lit = take_lits(p, &allint);
	Dim n = dim_c(pi->nlit);
	Type t = ir_type(p->m, allint ? DT_I64 : DT_F32, 1, &n);
	o.v = ir_add_param(p->g, ir_fresh_name(p->g, "lit"), t, pi, o.loc);
	vec_push(&p->ops, o);
}

static void push_attr(Parser *p, Attr a, FeLoc l)
{
	Loc loc = fe_loc(p, l);
	for (int i = 0; i < p->attrs.n; i++)
		if (strcmp(p->attrs.a[i].name, a.name) == 0) {
			diag_error(loc, "duplicate attribute '%s'", a.name);
			return;
		}
	vec_push(&p->attrs, a);
	vec_push(&p->attrlocs, loc);
}

void fe_attr_num(Parser *p, const char *name, FeLoc l, Num v)
{
	Attr a = { .name = name, .kind = v.isint ? ATTR_INT : ATTR_FLOAT, .i = v.i, .f = v.f };
	push_attr(p, a, l);
}

void fe_attr_str(Parser *p, const char *name, FeLoc l, const char *s)
{
	Attr a = { .name = name, .kind = ATTR_STRING, .s = s };
	push_attr(p, a, l);
}

void fe_attr_list(Parser *p, const char *name, FeLoc l)
{
	Attr a = { .name = name, .n = p->lits.n };
	int allint = 1;
	lits_have_strings(p, fe_loc(p, l));
	for (int i = 0; i < p->lits.n; i++)
		allint &= p->lits.a[i].isint;
	a.kind = allint ? ATTR_INTS : ATTR_FLOATS;
	if (allint) {
		a.ints = arena_alloc(p->m->arena, (size_t)(a.n ? a.n : 1) * sizeof *a.ints);
		for (int i = 0; i < a.n; i++)
			a.ints[i] = p->lits.a[i].i;
		p->lits.n = 0;
	} else
		a.floats = take_lits(p, &allint);
	push_attr(p, a, l);
}

/* `{to=bf16}` is a name (kept as a string); `{num_heads=H}` with `dim H` is H's value. */
void fe_attr_ident(Parser *p, const char *name, FeLoc l, const char *ident)
{
	Num v = { 0, 0, 1 };
	if (!dim_const(p, ident, &v.i)) {
		fe_attr_str(p, name, l, ident);
		return;
	}
	v.f = (double)v.i;
	fe_attr_num(p, name, l, v);
}

/* `{kv_num_heads=(H/4)}`: an integer attribute from a constant dimension expression. */
void fe_attr_dim(Parser *p, const char *name, FeLoc l, Dim d, FeLoc dl)
{
	Num v = { 0, 0, 1 };
	char buf[128];
	if (!dim_isconst(d)) {
		diag_error(fe_loc(p, dl), "attribute value '%s' is not a constant; only dim constants and integers "
			   "can appear in it", dim_str(p->m, d, buf, sizeof buf));
		return;
	}
	v.i = d.k;
	v.f = (double)d.k;
	fe_attr_num(p, name, l, v);
}

/* A name in a list of numbers: the value of a `dim` constant, else an error at the list's end. */
void fe_lit_ident(Parser *p, const char *ident, FeLoc l)
{
	Num v = { 0, 0, 1 };
	DimName *dn = names_get(&p->dimnames, ident);
	if (dim_const(p, ident, &v.i)) {
		v.f = (double)v.i;
		vec_push(&p->lits, v);
	} else if (dn) {
		diag_error(fe_loc(p, l), "'%s' is a dimension symbol, not a constant: a list holds numbers and "
			   "dim constants", ident);
		vec_push(&p->lits, v);
	} else
		p->nlitstr++;
}

/* `(D/H)` in a list of numbers: a constant dimension expression. */
void fe_lit_dim(Parser *p, Dim d, FeLoc l)
{
	Num v = { 0, 0, 1 };
	char buf[128];
	if (!dim_isconst(d))
		diag_error(fe_loc(p, l), "list value '%s' is not a constant; only dim constants and integers can "
			   "appear in it", dim_str(p->m, d, buf, sizeof buf));
	else
		v.i = d.k;
	v.f = (double)v.i;
	vec_push(&p->lits, v);
}

/* "2 inputs", "1 to 3 inputs", "at least 1 input" */
static const char *arity_str(int lo, int hi, const char *what, char *buf, size_t n)
{
	if (hi < 0)
		snprintf(buf, n, "at least %d %s%s", lo, what, lo == 1 ? "" : "s");
	else if (lo == hi)
		snprintf(buf, n, "%d %s%s", lo, what, lo == 1 ? "" : "s");
	else
		snprintf(buf, n, "%d to %d %ss", lo, hi, what);
	return buf;
}

/* Operand and result counts against ir/ops.def; `_` only in optional input positions. */
static void check_arity(Parser *p, Op op, Loc loc)
{
	const OpInfo *oi = &ir_ops[op];
	int nin = p->ops.n, nout = p->lhs.n;
	char buf[64];
	if (nin < oi->in_min || (oi->in_max >= 0 && nin > oi->in_max))
		diag_error(loc, "%s expects %s, found %d", oi->name, arity_str(oi->in_min, oi->in_max, "input", buf, sizeof buf), nin);
	if (nout < oi->out_min || (oi->out_max >= 0 && nout > oi->out_max))
		diag_error(loc, "%s expects %s, found %d", oi->name, arity_str(oi->out_min, oi->out_max, "output", buf, sizeof buf), nout);
	for (int i = 0; i < nin && i < oi->in_min; i++)
		if (p->ops.a[i].absent)
			diag_error(p->ops.a[i].loc, "input %d of %s is required; '_' marks an absent optional input",
				   i, oi->name);
}

/* Appends the statement's node and defines its results; clears the scratch lists. */
static Node *make_node(Parser *p, Op op, Loc loc, int quiet)
{
	int nin = p->ops.n, nout = p->lhs.n;
	Value **in = malloc((size_t)(nin + 1) * sizeof *in);
	const char **outn = malloc((size_t)(nout + 1) * sizeof *outn);
	if (!in || !outn) {
		fputs("aicc: out of memory\n", stderr);
		abort();
	}
	for (int i = 0; i < nin; i++)
		in[i] = p->ops.a[i].v;
	for (int i = 0; i < nout; i++)
		outn[i] = p->lhs.a[i].name;
	Node *n = ir_add_node(p->g, op, in, nin, outn, nout, loc);
	for (int i = 0; i < nout; i++) {
		n->out[i]->loc = p->lhs.a[i].loc;
		int fresh = quiet ? !names_get(&p->names, outn[i]) : name_free(p, outn[i], n->out[i]->loc);
		define(p, n->out[i], fresh);
	}
	n->annot = p->annot;
	free(in);
	free(outn);
	return n;
}

void fe_stmt_op(Parser *p, const char *opname, FeLoc l)
{
	Loc loc = fe_loc(p, l);
	Op op = ir_op_lookup(opname);
	char buf[96];
	if (op == OP_COUNT) {
		diag_error(loc, "unknown operator '%s'%s", opname, did_you_mean(ir_op_suggest(opname), buf, sizeof buf));
		op = OP_Identity;
	} else if (op == OP_Call) {
		diag_error(loc, "'Call' is not written by name; use 'call g(...)' or 'repeat N g(...)'");
		op = OP_Identity;
	} else
		check_arity(p, op, loc);
	Node *n = make_node(p, op, loc, 0);
	if (p->attrs.n) {
		n->attrs.n = p->attrs.n;
		n->attrs.a = arena_alloc(p->m->arena, (size_t)p->attrs.n * sizeof *n->attrs.a);
		memcpy(n->attrs.a, p->attrs.a, (size_t)p->attrs.n * sizeof *n->attrs.a);
	}
	fe_recover(p);
}

/* After a syntax error in a statement: define the names it assigned (as placeholders) so their
 * uses do not add "undefined name" errors, and drop the rest of the line unless the offending
 * token (the last one scanned) begins its line.  Returns whether it does: then the parse is back
 * at a statement boundary. */
void fe_stmt_abandon(Parser *p)
{
	if (p->g && p->lhs.n) {
		p->ops.n = 0;
		make_node(p, OP_Identity, p->lhs.a[0].loc, 1);
	}
	fe_recover(p);
}

int fe_stmt_error(Parser *p)
{
	fe_stmt_abandon(p);
	if (p->tok_bol || p->ntok_eof)
		return 1;
	p->skip_line = p->tok_line;
	return 0;
}

void fe_stmt_call(Parser *p, const char *callee, FeLoc l, Dim repeat, FeLoc rl, int is_repeat)
{
	Loc loc = fe_loc(p, l);
	int64_t count = 1;
	if (is_repeat && (!dim_isconst(repeat) || repeat.k < 1)) {
		char buf[128];
		diag_error(fe_loc(p, rl), "repeat count must be a positive constant, found '%s'",
			   dim_str(p->m, repeat, buf, sizeof buf));
	} else if (is_repeat)
		count = repeat.k;
	for (int i = 0; i < p->ops.n; i++)
		if (p->ops.a[i].absent)
			diag_error(p->ops.a[i].loc, "'_' cannot be passed to a graph: its inputs are required");
	Node *n = make_node(p, OP_Call, loc, 0);
	n->repeat = count;
	n->callee = names_get(&p->graphs, callee);
	if (!n->callee) {
		Pending pd = { n, callee, loc };
		vec_push(&p->pending, pd);
	}
	fe_recover(p);
}

/* Resolves calls to graphs defined after their caller; a module needs at least one graph. */
void fe_module_end(Parser *p)
{
	for (int i = 0; i < p->pending.n; i++) {
		Pending *pd = &p->pending.a[i];
		pd->n->callee = names_get(&p->graphs, pd->name);
		if (!pd->n->callee) {
			char buf[96];
			diag_error(pd->loc, "unknown graph '%s'%s", pd->name,
				   did_you_mean(names_suggest(&p->graphs, pd->name), buf, sizeof buf));
		}
	}
	if (p->m->ngraphs == 0 && diag_count() == p->diag0) {
		Loc loc = { p->file, 0, 0 };
		diag_error(loc, "no graph defined");
	}
}
