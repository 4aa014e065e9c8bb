/* ir/ir.c: the operator table, modules, graphs and the builder API (see ir/ir.h). */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* Shape and FLOP rules named in ir/ops.def (defined in ir/shape.c and ir/cost.c). */
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) \
	int shape_##shape(ShapeCtx *c, Node *n); double flops_##flops(const Node *n);
#include "ir/ops.def"
#undef OP

const OpInfo ir_ops[OP_COUNT] = {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) \
	{ #name, imin, imax, omin, omax, shape_##shape, flops_##flops, flags, OC_##cls, lookup, sem },
#include "ir/ops.def"
#undef OP
};

/* Operator indices sorted by name, for binary search (built on first use). */
static int op_sorted[OP_COUNT];
static int op_sorted_ready;

static int op_name_cmp(const void *a, const void *b)
{
	return strcmp(ir_ops[*(const int *)a].name, ir_ops[*(const int *)b].name);
}

Op ir_op_lookup(const char *name)
{
	if (!op_sorted_ready) {
		for (int i = 0; i < OP_COUNT; i++)
			op_sorted[i] = i;
		qsort(op_sorted, OP_COUNT, sizeof op_sorted[0], op_name_cmp);
		op_sorted_ready = 1;
	}
	int lo = 0, hi = OP_COUNT - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(name, ir_ops[op_sorted[mid]].name);
		if (c == 0)
			return (Op)op_sorted[mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return OP_COUNT;
}

/* Case-insensitive Levenshtein distance, capped for long strings. */
static int edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la > 64 || lb > 64)
		return 1000;
	int d[65][65];
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int ca = a[i - 1] | 0x20, cb = b[j - 1] | 0x20;
			int best = d[i - 1][j - 1] + (ca != cb);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *ir_op_suggest(const char *name)
{
	const char *best = NULL;
	int bestd = 1000;
	for (int i = 0; i < OP_COUNT; i++) {
		int dist = edit_distance(name, ir_ops[i].name);
		if (dist < bestd) {
			bestd = dist;
			best = ir_ops[i].name;
		}
	}
	int len = (int)strlen(name);
	return bestd <= (len < 6 ? 2 : len / 3) ? best : NULL;
}

/* ---- types ---- */
Type ir_type(Module *m, DType dt, int rank, const Dim *dims)
{
	Type t = { dt, rank, NULL };
	if (rank > 0) {
		t.dims = arena_alloc(m->arena, (size_t)rank * sizeof *dims);
		memcpy(t.dims, dims, (size_t)rank * sizeof *dims);
	}
	return t;
}

int ir_type_eq(Type a, Type b)
{
	if (a.dt != b.dt || a.rank != b.rank)
		return 0;
	for (int i = 0; i < a.rank; i++)
		if (!dim_eq(a.dims[i], b.dims[i]))
			return 0;
	return 1;
}

int64_t ir_type_numel(Type t)
{
	if (t.rank < 0)
		return -1;
	int64_t n = 1;
	for (int i = 0; i < t.rank; i++)
		if (t.dims[i].p || __builtin_mul_overflow(n, t.dims[i].k, &n))
			return -1;
	return n;
}

char *ir_type_str(const Module *m, Type t, char *buf, size_t n)
{
	if (t.rank < 0) {
		snprintf(buf, n, "?");
		return buf;
	}
	size_t len = (size_t)snprintf(buf, n, "%s[", rt_dtype_name(t.dt));
	char d[256];
	for (int i = 0; i < t.rank && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", dim_str(m, t.dims[i], d, sizeof d));
	if (len < n)
		snprintf(buf + len, n - len, "]");
	return buf;
}

/* ---- modules ---- */
Module *ir_module_new(const char *file)
{
	Arena *a = arena_new();
	Module *m = arena_alloc(a, sizeof *m);
	m->arena = a;
	m->file = file ? arena_strdup(a, file) : NULL;
	return m;
}

void ir_module_free(Module *m)
{
	if (!m)
		return;
	for (Graph *g = m->graphs; g; g = g->next)
		for (int i = 0; i < g->nparams; i++) {
			ParamInit *pi = g->params[i]->init;
			if (pi && pi->data) {
				rt_tensor_free(pi->data);
				pi->data = NULL;
			}
		}
	arena_free(m->arena);
}

Graph *ir_graph_find(const Module *m, const char *name)
{
	for (Graph *g = m->graphs; g; g = g->next)
		if (strcmp(g->name, name) == 0)
			return g;
	return NULL;
}

Graph *ir_entry(const Module *m)
{
	Graph *g = ir_graph_find(m, "main");
	return g ? g : m->last_graph;
}

int ir_sym_find(const Module *m, const char *name)
{
	for (int i = 0; i < m->nsyms; i++)
		if (strcmp(m->symnames[i], name) == 0)
			return i;
	return -1;
}

/* Grows an arena array to hold at least need elements. */
static void *grow_array(Arena *a, void *old, int n, int *cap, size_t elem, int need)
{
	if (need <= *cap)
		return old;
	int nc = *cap ? *cap * 2 : 8;
	while (nc < need)
		nc *= 2;
	void *p = arena_alloc(a, (size_t)nc * elem);
	if (old)
		memcpy(p, old, (size_t)n * elem);
	*cap = nc;
	return p;
}

int ir_sym_intern(Module *m, const char *name)
{
	int s = ir_sym_find(m, name);
	if (s >= 0)
		return s;
	int c = m->capsyms;
	m->symnames = grow_array(m->arena, m->symnames, m->nsyms, &c, sizeof *m->symnames, m->nsyms + 1);
	c = m->capsyms;
	m->symval = grow_array(m->arena, m->symval, m->nsyms, &c, sizeof *m->symval, m->nsyms + 1);
	m->symbound = grow_array(m->arena, m->symbound, m->nsyms, &m->capsyms, 1, m->nsyms + 1);
	m->symnames[m->nsyms] = arena_strdup(m->arena, name);
	return m->nsyms++;
}

void ir_dim_const_add(Module *m, const char *name, int64_t v)
{
	struct DimConst *c = arena_alloc(m->arena, sizeof *c);
	*c = (struct DimConst){ arena_strdup(m->arena, name), v, m->dimconsts };
	m->dimconsts = c;
}

int ir_dim_const(const Module *m, const char *name, int64_t *v)
{
	for (const struct DimConst *c = m->dimconsts; c; c = c->next)
		if (strcmp(c->name, name) == 0) {
			*v = c->v;
			return 1;
		}
	return 0;
}

int ir_bind(Module *m, const char *name, int64_t v)
{
	if (v < 0)
		return -1;
	int s = ir_sym_intern(m, name);
	m->symval[s] = v;
	m->symbound[s] = 1;
	return 0;
}

/* ---- builder ---- */
Graph *ir_graph_new(Module *m, const char *name, Loc loc)
{
	Graph *g = arena_alloc(m->arena, sizeof *g);
	g->name = arena_strdup(m->arena, name);
	g->m = m;
	g->loc = loc;
	if (m->last_graph)
		m->last_graph->next = g;
	else
		m->graphs = g;
	m->last_graph = g;
	m->ngraphs++;
	return g;
}

static Value *new_value(Graph *g, const char *name, ValueKind kind, Loc loc)
{
	Value *v = arena_alloc(g->m->arena, sizeof *v);
	v->name = name ? arena_strdup(g->m->arena, name) : ir_fresh_name(g, "t");
	v->kind = kind;
	v->graph = g;
	v->loc = loc;
	v->id = g->nvalues++;
	v->type.rank = -1;
	return v;
}

Value *ir_add_input(Graph *g, const char *name, Type t, Loc loc)
{
	Value *v = new_value(g, name, V_INPUT, loc);
	v->type = t;
	g->inputs = grow_array(g->m->arena, g->inputs, g->nin, &g->cap_in, sizeof(Value *), g->nin + 1);
	g->inputs[g->nin++] = v;
	return v;
}

Value *ir_add_param(Graph *g, const char *name, Type t, ParamInit *init, Loc loc)
{
	Value *v = new_value(g, name, V_PARAM, loc);
	v->type = t;
	if (!init)
		init = arena_alloc(g->m->arena, sizeof *init);
	v->init = init;
	g->params = grow_array(g->m->arena, g->params, g->nparams, &g->cap_params, sizeof(Value *),
			       g->nparams + 1);
	g->params[g->nparams++] = v;
	return v;
}

void ir_input_to_param(Graph *g, Value *v, ParamInit *init)
{
	int k = 0;
	for (int i = 0; i < g->nin; i++)
		if (g->inputs[i] != v)
			g->inputs[k++] = g->inputs[i];
	g->nin = k;
	v->kind = V_PARAM;
	v->init = init;
	g->params = grow_array(g->m->arena, g->params, g->nparams, &g->cap_params, sizeof(Value *),
			       g->nparams + 1);
	g->params[g->nparams++] = v;
}

void ir_add_output(Graph *g, Value *v)
{
	g->outputs = grow_array(g->m->arena, g->outputs, g->nout, &g->cap_out, sizeof(Value *), g->nout + 1);
	g->outputs[g->nout++] = v;
	v->nuses++;
}

static int name_counter;

const char *ir_fresh_name(Graph *g, const char *prefix)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s.%d", prefix, ++name_counter);
	return arena_strdup(g->m->arena, buf);
}

Node *ir_insert_node(Graph *g, Node *before, Op op, Value **in, int nin,
		     const char **outnames, int nout, Loc loc)
{
	Arena *a = g->m->arena;
	Node *n = arena_alloc(a, sizeof *n);
	n->op = op;
	n->graph = g;
	n->loc = loc;
	n->repeat = 1;
	n->annot.precision = DT_INVALID;
	n->nin = nin;
	n->in = arena_alloc(a, (size_t)(nin ? nin : 1) * sizeof *n->in);
	for (int i = 0; i < nin; i++) {
		n->in[i] = in[i];
		if (in[i])
			in[i]->nuses++;
	}
	n->nout = nout;
	n->out = arena_alloc(a, (size_t)(nout ? nout : 1) * sizeof *n->out);
	for (int i = 0; i < nout; i++) {
		Value *v = new_value(g, outnames ? outnames[i] : NULL, V_NODE, loc);
		v->def = n;
		v->defidx = i;
		n->out[i] = v;
	}
	n->id = g->nvalues++;
	if (before) {
		n->next = before;
		n->prev = before->prev;
		if (before->prev)
			before->prev->next = n;
		else
			g->first = n;
		before->prev = n;
	} else {
		n->prev = g->last;
		if (g->last)
			g->last->next = n;
		else
			g->first = n;
		g->last = n;
	}
	g->nnodes++;
	return n;
}

Node *ir_add_node(Graph *g, Op op, Value **in, int nin, const char **outnames, int nout, Loc loc)
{
	return ir_insert_node(g, NULL, op, in, nin, outnames, nout, loc);
}

void ir_remove_node(Graph *g, Node *n)
{
	if (n->dead)
		return;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i])
			n->in[i]->nuses--;
	if (n->prev)
		n->prev->next = n->next;
	else
		g->first = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		g->last = n->prev;
	n->dead = 1;
	n->prev = n->next = NULL;
	g->nnodes--;
}

void ir_set_input(Node *n, int i, Value *v)
{
	if (n->in[i])
		n->in[i]->nuses--;
	n->in[i] = v;
	if (v)
		v->nuses++;
}

void ir_replace_uses(Graph *g, Value *from, Value *to)
{
	ir_foreach_node(g, n)
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] == from)
				ir_set_input(n, i, to);
	for (int i = 0; i < g->nout; i++)
		if (g->outputs[i] == from) {
			g->outputs[i] = to;
			from->nuses--;
			to->nuses++;
		}
}

/* ---- attributes ---- */
static Attr *attr_slot(Node *n, const char *name)
{
	for (int i = 0; i < n->attrs.n; i++)
		if (strcmp(n->attrs.a[i].name, name) == 0) {
			memset(&n->attrs.a[i], 0, sizeof n->attrs.a[i]);
			n->attrs.a[i].name = name;
			return &n->attrs.a[i];
		}
	return NULL;
}

static Arena *node_arena(Node *n) { return n->graph->m->arena; }

void ir_set_attr(Node *n, const Attr *src)
{
	Arena *ar = node_arena(n);
	const char *name = arena_strdup(ar, src->name);
	Attr *a = attr_slot(n, src->name);
	if (!a) {
		Attr *na = arena_alloc(ar, (size_t)(n->attrs.n + 1) * sizeof *na);
		if (n->attrs.n)
			memcpy(na, n->attrs.a, (size_t)n->attrs.n * sizeof *na);
		n->attrs.a = na;
		a = &na[n->attrs.n++];
	}
	*a = *src;
	a->name = name;
	if (src->kind == ATTR_STRING && src->s)
		a->s = arena_strdup(ar, src->s);
	if (src->kind == ATTR_INTS) {
		a->ints = arena_alloc(ar, (size_t)(src->n ? src->n : 1) * sizeof *a->ints);
		if (src->n)
			memcpy(a->ints, src->ints, (size_t)src->n * sizeof *a->ints);
	}
	if (src->kind == ATTR_FLOATS) {
		a->floats = arena_alloc(ar, (size_t)(src->n ? src->n : 1) * sizeof *a->floats);
		if (src->n)
			memcpy(a->floats, src->floats, (size_t)src->n * sizeof *a->floats);
	}
}

void ir_set_attr_int(Node *n, const char *name, int64_t v)
{
	Attr a = { .name = name, .kind = ATTR_INT, .i = v };
	ir_set_attr(n, &a);
}

void ir_set_attr_float(Node *n, const char *name, double v)
{
	Attr a = { .name = name, .kind = ATTR_FLOAT, .f = v };
	ir_set_attr(n, &a);
}

void ir_set_attr_str(Node *n, const char *name, const char *s)
{
	Attr a = { .name = name, .kind = ATTR_STRING, .s = s };
	ir_set_attr(n, &a);
}

void ir_set_attr_ints(Node *n, const char *name, const int64_t *v, int count)
{
	Attr a = { .name = name, .kind = ATTR_INTS, .n = count, .ints = (int64_t *)v };
	ir_set_attr(n, &a);
}

void ir_set_attr_floats(Node *n, const char *name, const double *v, int count)
{
	Attr a = { .name = name, .kind = ATTR_FLOATS, .n = count, .floats = (double *)v };
	ir_set_attr(n, &a);
}
