/* ir/verify.c: structural checks on any Module, whoever built it (the .aig parser, an importer,
 * a pass).
 *
 * Checks, per graph: names unique (the printer's output must read back), every value assigned
 * once and defined before its use in node order (inputs and parameters first), operands from
 * the same graph, operator arity against ir/ops.def with `_` only in optional positions,
 * attribute kinds and payloads, annotations in range, calls (callee present, argument and result
 * counts, `repeat` counts and carried types when declared or inferred), graph outputs defined;
 * and, across graphs, no recursion through calls.  Every problem is reported with diag_error at
 * the node's (or graph's) location.  Needs only ir/; allocates scratch with malloc.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "ir/ir.h"

typedef struct Verifier {
	Module *m;
	int errs;
	Graph **graphs;      /* sorted by address, for graph_index */
	int ngraphs;
} Verifier;

#define REPORT(v, loc, ...) (diag_error((loc), __VA_ARGS__), (v)->errs++)

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fputs("aicc: out of memory\n", stderr);
		abort();
	}
	return p;
}

static int cmp_value_name(const void *a, const void *b)
{
	const Value *x = *(Value *const *)a, *y = *(Value *const *)b;
	int c = strcmp(x->name ? x->name : "", y->name ? y->name : "");
	return c ? c : x->id - y->id;
}

/* Every named value of g appears once. */
static void check_unique_names(Verifier *v, Graph *g)
{
	int n = g->nin + g->nparams;
	ir_foreach_node(g, nd)
		n += nd->nout;
	Value **all = xcalloc((size_t)n, sizeof *all);
	int k = 0;
	for (int i = 0; i < g->nin; i++)
		all[k++] = g->inputs[i];
	for (int i = 0; i < g->nparams; i++)
		all[k++] = g->params[i];
	ir_foreach_node(g, nd)
		for (int i = 0; i < nd->nout; i++)
			all[k++] = nd->out[i];
	qsort(all, (size_t)k, sizeof *all, cmp_value_name);
	for (int i = 1; i < k; i++)
		if (all[i] && all[i - 1] && all[i]->name && all[i - 1]->name && strcmp(all[i]->name, all[i - 1]->name) == 0)
			REPORT(v, all[i]->loc, "'%s' is defined more than once in graph '%s'", all[i]->name, g->name);
	free(all);
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

static void check_arity(Verifier *v, const Node *n)
{
	const OpInfo *oi = &ir_ops[n->op];
	char buf[64];
	if (n->nin < oi->in_min || (oi->in_max >= 0 && n->nin > oi->in_max))
		REPORT(v, n->loc, "%s expects %s, found %d", oi->name,
		       arity_str(oi->in_min, oi->in_max, "input", buf, sizeof buf), n->nin);
	if (n->nout < oi->out_min || (oi->out_max >= 0 && n->nout > oi->out_max))
		REPORT(v, n->loc, "%s expects %s, found %d", oi->name,
		       arity_str(oi->out_min, oi->out_max, "output", buf, sizeof buf), n->nout);
}

static void check_attrs(Verifier *v, const Node *n)
{
	for (int i = 0; i < n->attrs.n; i++) {
		const Attr *a = &n->attrs.a[i];
		if (!a->name || !a->name[0]) {
			REPORT(v, n->loc, "attribute %d of %s has no name", i, ir_ops[n->op].name);
			continue;
		}
		for (int j = 0; j < i; j++)
			if (n->attrs.a[j].name && strcmp(n->attrs.a[j].name, a->name) == 0)
				REPORT(v, n->loc, "duplicate attribute '%s'", a->name);
		int bad = (unsigned)a->kind > ATTR_FLOATS || (a->kind == ATTR_STRING && !a->s) ||
			  ((a->kind == ATTR_INTS || a->kind == ATTR_FLOATS) &&
			   (a->n < 0 || (a->n > 0 && !(a->kind == ATTR_INTS ? (void *)a->ints : (void *)a->floats))));
		if (bad)
			REPORT(v, n->loc, "attribute '%s' has a malformed value", a->name);
	}
}

/* The type g's output i is known to have (declared, else inferred); rank -1 if unknown. */
static Type out_type(const Graph *g, int i)
{
	if (g->out_decl && g->out_decl[i].rank >= 0)
		return g->out_decl[i];
	return g->outputs[i]->type;
}

static void check_repeat(Verifier *v, const Node *n, const Graph *c)
{
	if (n->repeat < 1) {
		REPORT(v, n->loc, "repeat count must be at least 1, found %lld", (long long)n->repeat);
		return;
	}
	if (n->repeat == 1)
		return;
	if (c->nout > c->nin) {
		REPORT(v, n->loc, "repeat feeds the outputs of graph '%s' back into its first inputs, but it "
		       "returns %d values and takes %d", c->name, c->nout, c->nin);
		return;
	}
	for (int i = 0; i < c->nout; i++) {
		Type to = out_type(c, i), ti = c->inputs[i]->type;
		if (to.rank < 0 || ti.rank < 0 || ir_type_eq(to, ti))
			continue;
		char a[512], b[512];
		REPORT(v, n->loc, "repeat feeds output %d of graph '%s' (%s) back into input %d (%s); "
		       "the types must match", i, c->name, ir_type_str(v->m, to, a, sizeof a), i,
		       ir_type_str(v->m, ti, b, sizeof b));
	}
}

static void check_call(Verifier *v, const Node *n)
{
	const Graph *c = n->callee;
	if (!c) {
		REPORT(v, n->loc, "call without a callee graph");
		return;
	}
	if (c->m != v->m) {
		REPORT(v, n->loc, "call to graph '%s' of another module", c->name);
		return;
	}
	if (n->nin != c->nin)
		REPORT(v, n->loc, "graph '%s' takes %d input%s, the call passes %d", c->name, c->nin,
		       c->nin == 1 ? "" : "s", n->nin);
	if (n->nout != c->nout)
		REPORT(v, n->loc, "graph '%s' returns %d output%s, the call assigns %d", c->name, c->nout,
		       c->nout == 1 ? "" : "s", n->nout);
	check_repeat(v, n, c);
}

/* Operand i of n: present where required, from this graph, defined earlier. */
static void check_operand(Verifier *v, const Graph *g, const Node *n, int i, const unsigned char *defined)
{
	const Value *x = n->in[i];
	if (!x) {
		if (n->op == OP_Call || i < ir_ops[n->op].in_min)
			REPORT(v, n->loc, "input %d of %s is required but absent", i, ir_ops[n->op].name);
		return;
	}
	if (x->graph != g)
		REPORT(v, n->loc, "'%s' (input %d of %s) belongs to graph '%s'", x->name, i, ir_ops[n->op].name,
		       x->graph ? x->graph->name : "?");
	else if (x->id < 0 || x->id >= g->nvalues || !defined[x->id])
		REPORT(v, n->loc, "'%s' is used before it is defined", x->name);
}

/* Placement attributes that contradict each other (docs/language.md "Devices and collectives"):
 * a collective's {devices} names each member once and input i is contributed by member i (an
 * input computed on a placed node must be on that device); a Transfer's {device} is where the
 * node is placed.  The lowering trusted both and built plans whose ranks and buffers disagreed. */
static void check_devices(Verifier *v, const Node *n)
{
	if (n->op == OP_Transfer) {
		const char *to = rt_attr_str(&n->attrs, "device", NULL);
		if (to && n->annot.device && strcmp(to, n->annot.device) != 0)
			REPORT(v, n->loc, "Transfer to device '%s' is placed on '%s'", to, n->annot.device);
		return;
	}
	if (!ir_op_is_collective(n->op))
		return;
	const char *s = rt_attr_str(&n->attrs, "devices", NULL);
	const char *name[64];
	size_t len[64];
	int k = 0;
	for (; s && *s && k < 64; k++) {
		name[k] = s;
		len[k] = strcspn(s, ",");
		for (int j = 0; j < k; j++)
			if (len[j] == len[k] && strncmp(name[j], s, len[k]) == 0) {
				REPORT(v, n->loc, "%s lists device '%.*s' twice in {devices}", ir_ops[n->op].name,
				       (int)len[k], s);
				return;
			}
		s += len[k] + (s[len[k]] == ',');
	}
	if (s && *s)
		return;     /* more members than this check follows */
	for (int i = 0; i < n->nin && i < k; i++) {
		const Value *x = n->in[i];
		const char *d = x && x->kind == V_NODE && x->def ? x->def->annot.device : NULL;
		if (d && (strlen(d) != len[i] || strncmp(d, name[i], len[i]) != 0))
			REPORT(v, n->loc, "%s input %d '%s' is computed on '%s' but {devices} lists '%.*s' as member %d",
			       ir_ops[n->op].name, i, x->name, d, (int)len[i], name[i], i);
	}
}

static void check_node(Verifier *v, Graph *g, Node *n, unsigned char *defined)
{
	if (n->graph != g)
		REPORT(v, n->loc, "node of graph '%s' is listed in graph '%s'", n->graph ? n->graph->name : "?", g->name);
	if ((unsigned)n->op >= OP_COUNT) {
		REPORT(v, n->loc, "node with invalid operator %d", (int)n->op);
		return;
	}
	for (int i = 0; i < n->nin; i++)
		check_operand(v, g, n, i, defined);
	if (n->op == OP_Call)
		check_call(v, n);
	else
		check_arity(v, n);
	check_attrs(v, n);
	check_devices(v, n);
	if (n->annot.precision < DT_INVALID || n->annot.precision >= DT_COUNT)
		REPORT(v, n->loc, "invalid @precision annotation");
	for (int i = 0; i < n->nout; i++) {
		Value *o = n->out[i];
		if (o->def != n || o->defidx != i || o->kind != V_NODE || o->graph != g || o->id < 0 || o->id >= g->nvalues)
			REPORT(v, n->loc, "result %d of %s is not linked to its node", i, ir_ops[n->op].name);
		else if (defined[o->id]++)
			REPORT(v, o->loc, "'%s' is assigned more than once", o->name);
	}
}

/* Marks inputs and parameters as defined, checking that they are what they claim to be. */
static void check_leaves(Verifier *v, Graph *g, unsigned char *defined)
{
	for (int i = 0; i < g->nin + g->nparams; i++) {
		Value *x = i < g->nin ? g->inputs[i] : g->params[i - g->nin];
		ValueKind want = i < g->nin ? V_INPUT : V_PARAM;
		if (x->kind != want || x->graph != g || x->id < 0 || x->id >= g->nvalues)
			REPORT(v, x->loc, "%s '%s' of graph '%s' is malformed", want == V_INPUT ? "input" : "parameter",
			       x->name, g->name);
		else if (defined[x->id]++)
			REPORT(v, x->loc, "'%s' is defined more than once", x->name);
		if (want == V_PARAM && x->init && x->init->kind == INIT_LITERAL) {
			int64_t n = ir_type_numel(x->type);
			if (n >= 0 && n != x->init->nlit)
				REPORT(v, x->loc, "parameter '%s' has %lld elements but its literal %lld values", x->name,
				       (long long)n, (long long)x->init->nlit);
		}
	}
}

static void check_graph(Verifier *v, Graph *g)
{
	unsigned char *defined = xcalloc((size_t)g->nvalues, 1);
	check_unique_names(v, g);
	check_leaves(v, g, defined);
	ir_foreach_node(g, n)
		check_node(v, g, n, defined);
	for (int i = 0; i < g->nout; i++) {
		Value *o = g->outputs[i];
		if (!o)
			REPORT(v, g->loc, "output %d of graph '%s' is missing", i, g->name);
		else if (o->graph != g || o->id < 0 || o->id >= g->nvalues || !defined[o->id])
			REPORT(v, g->loc, "output '%s' of graph '%s' is not defined in it", o->name, g->name);
	}
	free(defined);
}

/* ---- recursion ---- */

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

static int graph_index(const Verifier *v, const Graph *g)
{
	Graph **hit = bsearch(&g, v->graphs, (size_t)v->ngraphs, sizeof *v->graphs, cmp_ptr);
	return hit ? (int)(hit - v->graphs) : -1;
}

typedef struct Frame { int g; const Node *n; } Frame;

/* The next call node at or after n whose callee is in the module. */
static const Node *next_call(const Verifier *v, const Node *n)
{
	while (n && !(n->op == OP_Call && n->callee && graph_index(v, n->callee) >= 0))
		n = n->next;
	return n;
}

/* Reports the cycle closed by call n: the frames from callee c to the top of the stack. */
static void report_cycle(Verifier *v, const Frame *st, int sp, int c, const Node *n)
{
	char path[512];
	size_t len = 0;
	int from = sp - 1;
	while (from > 0 && st[from].g != c)
		from--;
	for (int i = from; i < sp && len < sizeof path; i++)
		len += (size_t)snprintf(path + len, sizeof path - len, "%s -> ", v->graphs[st[i].g]->name);
	if (len < sizeof path)
		snprintf(path + len, sizeof path - len, "%s", v->graphs[c]->name);
	REPORT(v, n->loc, "graph '%s' is recursive: %s", v->graphs[c]->name, path);
}

/* Depth-first search over the call graph with an explicit stack (no C recursion). */
static void check_recursion(Verifier *v)
{
	int ng = v->ngraphs;
	unsigned char *color = xcalloc((size_t)ng, 1);
	Frame *st = xcalloc((size_t)ng, sizeof *st);
	for (const Graph *g = v->m->graphs; g; g = g->next) {
		int r = graph_index(v, g);
		if (r < 0 || color[r])
			continue;
		int sp = 0;
		st[sp++] = (Frame){ r, next_call(v, v->graphs[r]->first) };
		color[r] = 1;
		while (sp > 0) {
			Frame *f = &st[sp - 1];
			if (!f->n) {
				color[f->g] = 2;
				sp--;
				continue;
			}
			const Node *call = f->n;
			f->n = next_call(v, call->next);
			int c = graph_index(v, call->callee);
			if (color[c] == 1)
				report_cycle(v, st, sp, c, call);
			else if (color[c] == 0) {
				color[c] = 1;
				st[sp++] = (Frame){ c, next_call(v, v->graphs[c]->first) };
			}
		}
	}
	free(color);
	free(st);
}

int ir_verify(Module *m)
{
	Verifier v = { m, 0, NULL, 0 };
	v.graphs = xcalloc((size_t)m->ngraphs, sizeof *v.graphs);
	for (Graph *g = m->graphs; g && v.ngraphs < m->ngraphs; g = g->next)
		v.graphs[v.ngraphs++] = g;
	qsort(v.graphs, (size_t)v.ngraphs, sizeof *v.graphs, cmp_ptr);
	for (Graph *g = m->graphs; g; g = g->next)
		check_graph(&v, g);
	check_recursion(&v);
	free(v.graphs);
	return v.errs;
}
