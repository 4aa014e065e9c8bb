/* frontend/onnx/import.c: ONNX ModelProto → aicc IR (fe_import_onnx).
 *
 * Unpacks the model with protobuf-c, finds its ai.onnx opset, and builds one graph `main`:
 * initializers become parameters with in-memory data (INIT_DATA), so do Constant nodes; graph
 * inputs that are also initializers (IR version 3 models) are parameters, not inputs; typed
 * inputs keep their symbolic dims (dim_param names become dimension symbols, bound later with
 * --bind or --shape; an unnamed dim gets a fresh symbol).  Nodes are visited in a topological
 * order (the file's order where legal) and handed to ops.c, which normalises each operator's
 * opset-specific form.  value_info ranks are remembered for the normalisations that need them.
 * Every node's Loc names the file, node and operator, so any later diagnostic about the node
 * reads "model.onnx: node 'Conv_12' (Conv, opset 11): error: ...".  Malformed input is reported,
 * never trusted.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_int.h"
#include "ir/diag.h"

/* ---- a string → pointer map in the module's arena (open addressing) ---- */
typedef struct MapEnt { const char *k; void *v; } MapEnt;
typedef struct Map { MapEnt *e; size_t n, cap; Arena *a; } Map;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static MapEnt *map_slot(MapEnt *e, size_t cap, const char *k)
{
	size_t i = hash_str(k) & (cap - 1);
	while (e[i].k && strcmp(e[i].k, k) != 0)
		i = (i + 1) & (cap - 1);
	return &e[i];
}

static void *map_get(const Map *m, const char *k)
{
	if (!m->cap)
		return NULL;
	MapEnt *s = map_slot(m->e, m->cap, k);
	return s->k ? s->v : NULL;
}

static void map_put(Map *m, const char *k, void *v)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		MapEnt *e = arena_alloc(m->a, cap * sizeof *e);
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].k)
				*map_slot(e, cap, m->e[i].k) = m->e[i];
		m->e = e;
		m->cap = cap;
	}
	MapEnt *s = map_slot(m->e, m->cap, k);
	if (!s->k)
		m->n++;
	s->k = k;
	s->v = v;
}

struct OnnxImp {
	Module *m;
	Graph *g;
	const char *path;
	int opset;
	Map values;     /* ONNX name → Value* */
	Map ranks;      /* ONNX name → rank+1 from value_info */
	int nconst;
	int nsyms;
};

Module *onnx_module(OnnxImp *imp) { return imp->m; }
void onnx_define(OnnxImp *imp, const char *name, Value *v) { map_put(&imp->values, name, v); }

int onnx_known_rank(OnnxImp *imp, Value *v)
{
	if (v->type.rank >= 0)
		return v->type.rank;
	intptr_t r = (intptr_t)map_get(&imp->ranks, v->name);
	return r ? (int)r - 1 : -1;
}

static const char *str_or(const char *s, const char *def) { return s && *s ? s : def; }

/* Reports an error about the whole model (not one node). */
static void model_error(OnnxImp *imp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void model_error(OnnxImp *imp, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error((Loc){ imp->path, 0, 0 }, "%s", msg);
}

/* A parameter named `name` holding t (ownership of t's data passes to the module). */
static Value *add_data_param(OnnxImp *imp, const char *name, RtTensor *t, int inline_lit)
{
	Module *m = imp->m;
	RtTensor *held = arena_alloc(m->arena, sizeof *held);
	*held = *t;
	ParamInit *pi = arena_alloc(m->arena, sizeof *pi);
	pi->kind = INIT_DATA;
	pi->data = held;
	pi->inline_lit = inline_lit;
	Dim dims[RT_MAX_RANK];
	for (int i = 0; i < t->rank; i++)
		dims[i] = dim_c(t->dims[i]);
	Type ty = ir_type(m, t->dtype, t->rank, dims);
	return ir_add_param(imp->g, arena_strdup(m->arena, name), ty, pi, (Loc){ imp->path, 0, 0 });
}

static Value *new_const(OnnxImp *imp, Graph *g, RtTensor *t)
{
	char name[32];
	snprintf(name, sizeof name, "const.%d", imp->nconst++);
	while (map_get(&imp->values, name))
		snprintf(name, sizeof name, "const.%d", imp->nconst++);
	Value *v = add_data_param(imp, name, t, 1);
	map_put(&imp->values, v->name, v);
	return v;
}

Value *onnx_const_i64(OnnxImp *imp, Graph *g, const int64_t *v, int n, int rank)
{
	RtTensor t;
	int64_t dims[1] = { n };
	if (rt_tensor_alloc(&t, DT_I64, rank ? 1 : 0, dims, NULL) < 0)
		return NULL;
	if (n)
		memcpy(t.data, v, (size_t)n * sizeof *v);
	return new_const(imp, g, &t);
}

Value *onnx_const_scalar(OnnxImp *imp, Graph *g, DType dt, double x)
{
	RtTensor t;
	if (rt_tensor_alloc(&t, dt, 0, NULL, NULL) < 0)
		return NULL;
	rt_set(&t, 0, x);
	return new_const(imp, g, &t);
}

Value *onnx_const_f32(OnnxImp *imp, Graph *g, const double *v, int n)
{
	RtTensor t;
	int64_t dims[1] = { n };
	if (rt_tensor_alloc(&t, DT_F32, 1, dims, NULL) < 0)
		return NULL;
	for (int i = 0; i < n; i++)
		rt_set(&t, i, v[i]);
	return new_const(imp, g, &t);
}

/* A fresh dimension symbol for an unnamed dim of input `in`, axis `ax`. */
static Dim fresh_dim(OnnxImp *imp)
{
	char name[32];
	do
		snprintf(name, sizeof name, "unk%d", imp->nsyms++);
	while (ir_sym_find(imp->m, name) >= 0);
	return dim_sym(imp->m, name);
}

/* A dim_param spelled as a .aig identifier: other characters become '_'. */
static Dim named_dim(OnnxImp *imp, const char *p)
{
	char buf[256];
	size_t n = strlen(p);
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' ||
			 (i > 0 && c >= '0' && c <= '9');
		buf[i] = ok ? c : '_';
	}
	buf[n] = 0;
	return dim_sym(imp->m, buf);
}

/* The IR type of a ValueInfoProto: -1 with an error if it is not a tensor of a known dtype. */
static int value_type(OnnxImp *imp, const Onnx__ValueInfoProto *vi, Type *out)
{
	const char *name = str_or(vi->name, "?");
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
		model_error(imp, "input '%s' is not a tensor (sequences, maps and optionals are "
			    "not supported)", name);
		return -1;
	}
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	int et = tt->has_elem_type ? tt->elem_type : 0;
	DType dt = onnx_dtype(et);
	if (dt == DT_INVALID) {
		model_error(imp, "input '%s' has data type %s (%d), which aicc does not support",
			    name, onnx_dtype_name(et), et);
		return -1;
	}
	if (!tt->shape) {
		*out = ir_type(imp->m, dt, -1, NULL);
		return 0;
	}
	if (tt->shape->n_dim > IR_MAX_RANK) {
		model_error(imp, "input '%s' has rank %zu; the maximum is %d", name,
			    tt->shape->n_dim, IR_MAX_RANK);
		return -1;
	}
	Dim dims[IR_MAX_RANK];
	for (size_t i = 0; i < tt->shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
		if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0) {
				model_error(imp, "input '%s' has a negative dim %lld", name,
					    (long long)d->dim_value);
				return -1;
			}
			dims[i] = dim_c(d->dim_value);
		} else if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
			   d->dim_param && *d->dim_param) {
			dims[i] = named_dim(imp, d->dim_param);
		} else {
			dims[i] = fresh_dim(imp);
		}
	}
	*out = ir_type(imp->m, dt, (int)tt->shape->n_dim, dims);
	return 0;
}

/* The ai.onnx opset the model imports, or -1. */
static int find_opset(const Onnx__ModelProto *mp)
{
	for (size_t i = 0; i < mp->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
		const char *d = o && o->domain ? o->domain : "";
		if (o && (!*d || strcmp(d, "ai.onnx") == 0))
			return o->has_version ? (int)o->version : -1;
	}
	return -1;
}

static int import_initializers(OnnxImp *imp, const Onnx__GraphProto *gp)
{
	int errs = 0;
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		const char *name = str_or(tp->name, NULL);
		RtError e = { 0 };
		RtTensor t;
		if (!name) {
			model_error(imp, "initializer #%zu has no name", i);
			errs++;
			continue;
		}
		if (map_get(&imp->values, name)) {
			model_error(imp, "initializer '%s' is defined twice", name);
			errs++;
			continue;
		}
		if (onnx_tensor_decode(tp, imp->m->dir, &t, &e) < 0) {
			model_error(imp, "initializer '%s': %s", name, e.msg);
			errs++;
			continue;
		}
		map_put(&imp->values, arena_strdup(imp->m->arena, name), add_data_param(imp, name, &t, 0));
	}
	return errs;
}

static int import_inputs(OnnxImp *imp, const Onnx__GraphProto *gp)
{
	int errs = 0;
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		const char *name = str_or(vi->name, NULL);
		Type t;
		if (!name) {
			model_error(imp, "graph input #%zu has no name", i);
			errs++;
			continue;
		}
		if (map_get(&imp->values, name))
			continue;       /* IR version 3: an initializer listed as an input */
		if (value_type(imp, vi, &t) < 0) {
			errs++;
			continue;
		}
		const char *n = arena_strdup(imp->m->arena, name);
		map_put(&imp->values, n, ir_add_input(imp->g, n, t, (Loc){ imp->path, 0, 0 }));
	}
	for (size_t i = 0; i < gp->n_value_info; i++) {
		const Onnx__ValueInfoProto *vi = gp->value_info[i];
		const Onnx__TypeProto *tp = vi->type;
		if (vi->name && tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
		    tp->tensor_type && tp->tensor_type->shape)
			map_put(&imp->ranks, arena_strdup(imp->m->arena, vi->name),
				(void *)(intptr_t)(tp->tensor_type->shape->n_dim + 1));
	}
	return errs;
}

/* The diagnostic location of node i: "file: node 'name' (Op, opset N)". */
static Loc node_loc(OnnxImp *imp, const Onnx__NodeProto *np, size_t i)
{
	char buf[600];
	const char *op = str_or(np->op_type, "?");
	if (np->name && *np->name)
		snprintf(buf, sizeof buf, "%s: node '%.200s' (%.100s, opset %d)", imp->path, np->name,
			 op, imp->opset);
	else
		snprintf(buf, sizeof buf, "%s: node #%zu (%.100s, opset %d)", imp->path, i, op, imp->opset);
	return (Loc){ arena_strdup(imp->m->arena, buf), 0, 0 };
}

/* Kahn's algorithm with a min-heap of node indices: a topological order that keeps the file's
 * order where it is legal.  Fills order[]; returns the count placed (< n on a cycle or on an
 * undefined input, which the conversion then reports). */
static size_t topo_order(OnnxImp *imp, const Onnx__GraphProto *gp, size_t *order)
{
	size_t n = gp->n_node, nedges = 0;
	Map producer = { .a = imp->m->arena };
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < gp->node[i]->n_output; j++)
			if (gp->node[i]->output[j] && *gp->node[i]->output[j])
				map_put(&producer, gp->node[i]->output[j], (void *)(i + 1));
	for (size_t i = 0; i < n; i++)
		nedges += gp->node[i]->n_input;
	size_t *indeg = calloc(n + 1, sizeof *indeg), *head = calloc(n + 1, sizeof *head);
	size_t *next = calloc(nedges + 1, sizeof *next), *dst = calloc(nedges + 1, sizeof *dst);
	size_t *heap = calloc(n + 1, sizeof *heap), nh = 0, placed = 0, ne = 0;
	if (!indeg || !head || !next || !dst || !heap)
		goto out;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < gp->node[i]->n_input; j++) {
			const char *in = gp->node[i]->input[j];
			size_t p = in && *in && !map_get(&imp->values, in) ? (size_t)map_get(&producer, in) : 0;
			if (!p || p - 1 == i)
				continue;
			indeg[i]++;
			dst[++ne] = i;
			next[ne] = head[p - 1];
			head[p - 1] = ne;
		}
	for (size_t i = 0; i < n; i++)
		if (!indeg[i])
			heap[nh++] = i;   /* increasing: already a heap */
	while (nh) {
		size_t top = heap[0], x = heap[--nh], k = 0;
		for (;;) {        /* sift x down from the root */
			size_t c = 2 * k + 1;
			if (c >= nh)
				break;
			if (c + 1 < nh && heap[c + 1] < heap[c])
				c++;
			if (x <= heap[c])
				break;
			heap[k] = heap[c];
			k = c;
		}
		if (nh)
			heap[k] = x;
		order[placed++] = top;
		for (size_t e = head[top]; e; e = next[e])
			if (--indeg[dst[e]] == 0) {
				size_t c = nh++;   /* sift up */
				while (c && heap[(c - 1) / 2] > dst[e]) {
					heap[c] = heap[(c - 1) / 2];
					c = (c - 1) / 2;
				}
				heap[c] = dst[e];
			}
	}
out:
	free(indeg); free(head); free(next); free(dst); free(heap);
	return placed;
}

/* A Constant node: its value becomes a parameter named after its output. */
static int import_constant(OnnxImp *imp, OnnxNode *on)
{
	const Onnx__NodeProto *np = on->np;
	RtTensor t;
	RtError e = { 0 };
	int ok = -1;
	if (np->n_attribute != 1) {
		diag_error(on->loc, "a Constant node needs exactly one value attribute, it has %zu",
			   np->n_attribute);
		return -1;
	}
	const Onnx__AttributeProto *a = np->attribute[0];
	const char *an = str_or(a->name, "");
	if (strcmp(an, "value") == 0 && a->t) {
		ok = onnx_tensor_decode(a->t, imp->m->dir, &t, &e);
	} else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_int") == 0) {
		DType dt = an[6] == 'f' ? DT_F32 : DT_I64;
		ok = rt_tensor_alloc(&t, dt, 0, NULL, &e);
		if (ok == 0)
			rt_set(&t, 0, dt == DT_F32 ? (double)a->f : (double)a->i);
	} else if (strcmp(an, "value_floats") == 0 || strcmp(an, "value_ints") == 0) {
		DType dt = an[6] == 'f' ? DT_F32 : DT_I64;
		int64_t n = dt == DT_F32 ? (int64_t)a->n_floats : (int64_t)a->n_ints;
		ok = rt_tensor_alloc(&t, dt, 1, &n, &e);
		for (int64_t i = 0; ok == 0 && i < n; i++)
			rt_set(&t, i, dt == DT_F32 ? (double)a->floats[i] : (double)a->ints[i]);
	} else {
		diag_error(on->loc, "Constant attribute '%s' is not supported (strings and sparse "
			   "tensors have no aicc form)", an);
		return -1;
	}
	if (ok < 0) {
		diag_error(on->loc, "%s", e.msg);
		return -1;
	}
	if (np->n_output != 1 || !np->output[0] || !*np->output[0]) {
		rt_tensor_free(&t);
		diag_error(on->loc, "a Constant node needs exactly one named output");
		return -1;
	}
	Value *v = add_data_param(imp, np->output[0], &t, 0);
	map_put(&imp->values, v->name, v);
	return 0;
}

/* The value of an ONNX name whose producing node failed to import: its users are skipped
 * silently, so one error is reported once, not as a cascade of undefined inputs. */
static char poison_mark;
#define POISON ((void *)&poison_mark)

static void poison_outputs(OnnxImp *imp, const Onnx__NodeProto *np)
{
	for (size_t j = 0; j < np->n_output; j++)
		if (np->output[j] && *np->output[j] && !map_get(&imp->values, np->output[j]))
			map_put(&imp->values, arena_strdup(imp->m->arena, np->output[j]), POISON);
}

/* Resolves node i's inputs and output names into on; -1 after an error, 1 when an input comes
 * from a node that failed (nothing reported). */
static int prepare_node(OnnxImp *imp, const Onnx__NodeProto *np, size_t i, OnnxNode *on)
{
	memset(on, 0, sizeof *on);
	on->np = np;
	on->opset = imp->opset;
	on->loc = node_loc(imp, np, i);
	if (!np->op_type || !*np->op_type) {
		diag_error(on->loc, "node has no operator type");
		return -1;
	}
	if (np->domain && *np->domain && strcmp(np->domain, "ai.onnx") != 0) {
		diag_error(on->loc, "operator domain '%s' is not supported (only ai.onnx)", np->domain);
		return -1;
	}
	if (np->n_input > 16 || np->n_output > 16) {
		diag_error(on->loc, "too many inputs or outputs (%zu, %zu; at most 16)", np->n_input,
			   np->n_output);
		return -1;
	}
	for (size_t j = 0; j < np->n_input; j++) {
		const char *in = np->input[j];
		if (!in || !*in) {
			on->in[on->nin++] = NULL;
			continue;
		}
		Value *v = map_get(&imp->values, in);
		if (v == POISON)
			return 1;      /* computed by a node that already failed: reported once */
		if (!v) {
			diag_error(on->loc, "input '%s' is not defined by any node, initializer or graph "
				   "input (or the graph has a cycle)", in);
			return -1;
		}
		on->in[on->nin++] = v;
	}
	for (size_t j = 0; j < np->n_output; j++) {
		const char *out = np->output[j] ? np->output[j] : "";
		if (*out && map_get(&imp->values, out)) {
			diag_error(on->loc, "output '%s' is already defined", out);
			return -1;
		}
		on->outnames[on->nout++] = *out ? arena_strdup(imp->m->arena, out) : NULL;
	}
	return 0;
}

static int import_nodes(OnnxImp *imp, const Onnx__GraphProto *gp)
{
	size_t n = gp->n_node, *order = calloc(n + 1, sizeof *order);
	if (!order)
		return 1;
	size_t placed = topo_order(imp, gp, order);
	/* Nodes left out by topo_order have an undefined input or sit on a cycle; append them in
	 * file order so prepare_node reports the first one. */
	unsigned char *seen = calloc(n + 1, 1);
	for (size_t k = 0; seen && k < placed; k++)
		seen[order[k]] = 1;
	for (size_t i = 0; seen && i < n; i++)
		if (!seen[i])
			order[placed++] = i;
	free(seen);
	int errs = 0;
	for (size_t k = 0; k < placed && !diag_stop(); k++) {
		const Onnx__NodeProto *np = gp->node[order[k]];
		OnnxNode on;
		int r = prepare_node(imp, np, order[k], &on), bad;
		if (r != 0) {
			errs += r < 0;
			poison_outputs(imp, np);
			continue;
		}
		if (strcmp(np->op_type, "Constant") == 0)
			bad = import_constant(imp, &on) < 0;
		else
			bad = onnx_convert_node(imp, imp->g, &on) < 0;
		if (bad)
			poison_outputs(imp, np);
		errs += bad;
	}
	free(order);
	return errs;
}

int onnx_import_subgraph(OnnxImp *imp, const Onnx__GraphProto *gp, Value **outs, int max)
{
	if (import_initializers(imp, gp) || import_nodes(imp, gp))
		return -1;
	if (gp->n_output > (size_t)max) {
		model_error(imp, "a subgraph has %zu outputs, more than %d", gp->n_output, max);
		return -1;
	}
	for (size_t i = 0; i < gp->n_output; i++) {
		const char *name = str_or(gp->output[i]->name, "");
		Value *v = map_get(&imp->values, name);
		if (v == POISON)
			return -1;
		if (!v) {
			model_error(imp, "subgraph output '%s' is not computed by the subgraph", name);
			return -1;
		}
		outs[i] = v;
	}
	return (int)gp->n_output;
}

static const Onnx__AttributeProto *node_attr(const OnnxNode *on, const char *name)
{
	for (size_t i = 0; i < on->np->n_attribute; i++)
		if (on->np->attribute[i]->name && strcmp(on->np->attribute[i]->name, name) == 0)
			return on->np->attribute[i];
	return NULL;
}

/* Entry k of an ints attribute of n entries, else def. */
static int64_t attr_ints_at(const OnnxNode *on, const char *name, int k, int n, int64_t def)
{
	const Onnx__AttributeProto *a = node_attr(on, name);
	return a && a->n_ints == (size_t)n ? a->ints[k] : def;
}

static Value *scan_node(Graph *g, Op op, Value **in, int nin, const char *name, Loc loc)
{
	const char *nm = name ? name : ir_fresh_name(g, "scan");
	return ir_add_node(g, op, in, nin, &nm, 1, loc)->out[0];
}

/* The names body gp defines (its inputs, initializers and node outputs) forgotten, so the next
 * iteration defines them again. */
static void scan_forget(OnnxImp *imp, const Onnx__GraphProto *gp)
{
	for (size_t i = 0; i < gp->n_input; i++)
		map_put(&imp->values, str_or(gp->input[i]->name, ""), NULL);
	for (size_t i = 0; i < gp->n_initializer; i++)
		map_put(&imp->values, str_or(gp->initializer[i]->name, ""), NULL);
	for (size_t i = 0; i < gp->n_node; i++)
		for (size_t j = 0; j < gp->node[i]->n_output; j++)
			if (gp->node[i]->output[j] && *gp->node[i]->output[j])
				map_put(&imp->values, gp->node[i]->output[j], NULL);
}

/* Value v made by iteration t renamed NAME@t (names are unique in a graph); its rank moves too. */
static void scan_rename(OnnxImp *imp, Value *v, int64_t t)
{
	if (!v || !v->name)
		return;
	char buf[512];
	snprintf(buf, sizeof buf, "%s@%lld", v->name, (long long)t);
	const char *nm = arena_strdup(imp->m->arena, buf);
	void *r = map_get(&imp->ranks, v->name);
	if (r)
		map_put(&imp->ranks, nm, r);
	v->name = nm;
}

/* The most nodes an unrolled Scan may add (a hostile length must not exhaust memory). */
#define SCAN_UNROLL_MAX (1 << 20)

int onnx_unroll_scan(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	enum { MAXV = 16 };
	const Onnx__AttributeProto *ba = node_attr(on, "body"), *ka = node_attr(on, "num_scan_inputs");
	const Onnx__GraphProto *body = ba ? ba->g : NULL;
	if (on->opset < 9) {
		diag_error(on->loc, "Scan of opset 8 (batched, with sequence_lens) is not supported; opset 9's Scan is");
		return -1;
	}
	int K = ka ? (int)ka->i : -1, N = on->nin - K, M = body ? (int)body->n_output - N : -1;
	if (!body || K < 1 || N < 0 || M < 0 || body->n_input != (size_t)(N + K) || on->nout != N + M || N + M > MAXV) {
		diag_error(on->loc, "Scan needs a body graph of %d inputs and %d outputs and num_scan_inputs >= 1", on->nin,
			   on->nout);
		return -1;
	}
	int64_t L = -1, ax[MAXV];
	for (int j = 0; j < K; j++) {
		Value *x = on->in[N + j];
		int r = x ? x->type.rank : -1;
		ax[j] = attr_ints_at(on, "scan_input_axes", j, K, 0);
		if (r > 0 && ax[j] < 0)
			ax[j] += r;
		if (!x || r < 1 || ax[j] < 0 || ax[j] >= r || !dim_isconst(x->type.dims[ax[j]]) ||
		    (L >= 0 && x->type.dims[ax[j]].k != L)) {
			diag_error(on->loc, "Scan needs every scan input's length along its axis at import, all equal "
				   "(scan input %d)", j);
			return -1;
		}
		L = x->type.dims[ax[j]].k;
	}
	if (L < 1 || (double)L * (double)(body->n_node + K) > (double)SCAN_UNROLL_MAX) {
		diag_error(on->loc, "Scan of length %lld over a body of %zu nodes: aicc unrolls Scan at import, at most "
			   "%d nodes in all", (long long)L, body->n_node, SCAN_UNROLL_MAX);
		return -1;
	}
	Value *state[MAXV], **elems = arena_alloc(imp->m->arena, sizeof *elems * (size_t)(L * (M > 0 ? M : 1) + 1));
	for (int i = 0; i < N; i++)
		state[i] = on->in[i];
	for (int64_t t = 0; t < L; t++) {
		for (int j = 0; j < K; j++) {
			int64_t idx = attr_ints_at(on, "scan_input_directions", j, K, 0) ? L - 1 - t : t;
			Value *gin[2] = { on->in[N + j], onnx_const_i64(imp, g, &idx, 1, 0) };
			Node *gn = ir_add_node(g, OP_Gather, gin, 2, (const char *[]){ ir_fresh_name(g, "scan") }, 1, on->loc);
			ir_set_attr_int(gn, "axis", ax[j]);
			onnx_define(imp, str_or(body->input[N + j]->name, ""), gn->out[0]);
		}
		for (int i = 0; i < N; i++)
			onnx_define(imp, str_or(body->input[i]->name, ""), state[i]);
		Node *mark = g->last;
		int np0 = g->nparams;
		if (import_initializers(imp, body) || import_nodes(imp, body))
			return -1;
		Value *outs[MAXV];
		for (int i = 0; i < N + M; i++) {
			Value *v = map_get(&imp->values, str_or(body->output[i]->name, ""));
			if (!v || v == POISON) {
				if (!v)
					diag_error(on->loc, "Scan body output '%s' is not computed by the body", str_or(body->output[i]->name, ""));
				return -1;
			}
			outs[i] = v;
		}
		for (Node *x = mark ? mark->next : g->first; x; x = x->next)
			for (int k = 0; k < x->nout; k++)
				scan_rename(imp, x->out[k], t);
		for (int k = np0; k < g->nparams; k++)
			scan_rename(imp, g->params[k], t);
		scan_forget(imp, body);
		for (int i = 0; i < N; i++)
			state[i] = outs[i];
		for (int k = 0; k < M; k++)
			elems[t * M + k] = outs[N + k];
	}
	for (int i = 0; i < N; i++) {
		Value *v = state[i];
		onnx_define(imp, on->outnames[i] ? on->outnames[i] : "", scan_node(g, OP_Identity, &v, 1, on->outnames[i], on->loc));
	}
	for (int k = 0; k < M; k++) {
		int re = onnx_known_rank(imp, elems[k]);
		int64_t oa = attr_ints_at(on, "scan_output_axes", k, M, 0);
		int rev = attr_ints_at(on, "scan_output_directions", k, M, 0) != 0;
		if (oa < 0 && re < 0) {
			diag_error(on->loc, "Scan output %d: a negative scan_output_axes needs the body output's rank at import", k);
			return -1;
		}
		oa = oa < 0 ? oa + re + 1 : oa;
		Value **cat = arena_alloc(imp->m->arena, sizeof *cat * (size_t)(L + 1)), *axes = onnx_const_i64(imp, g, &oa, 1, 1);
		for (int64_t t = 0; t < L; t++) {
			Value *uin[2] = { elems[(rev ? L - 1 - t : t) * M + k], axes };
			cat[t] = scan_node(g, OP_Unsqueeze, uin, 2, NULL, on->loc);
		}
		const char *nm = on->outnames[N + k] ? on->outnames[N + k] : ir_fresh_name(g, "unused");
		Node *c = ir_add_node(g, OP_Concat, cat, (int)L, &nm, 1, on->loc);
		ir_set_attr_int(c, "axis", oa);
		if (on->outnames[N + k])
			onnx_define(imp, on->outnames[N + k], c->out[0]);
	}
	return 0;
}

/* Graph outputs; their types are declared (checked by shape inference) when every dim is a
 * constant or a symbol of the inputs. */
static int import_outputs(OnnxImp *imp, const Onnx__GraphProto *gp)
{
	int errs = 0;
	for (size_t i = 0; i < gp->n_output; i++) {
		const char *name = str_or(gp->output[i]->name, "");
		Value *v = map_get(&imp->values, name);
		if (v == POISON)
			continue;
		if (!v) {
			model_error(imp, "graph output '%s' is not computed by the graph", name);
			errs++;
			continue;
		}
		ir_add_output(imp->g, v);
	}
	if (gp->n_output == 0) {
		model_error(imp, "the graph has no outputs");
		errs++;
	}
	return errs;
}

static Module *import_model(const char *path, const Onnx__ModelProto *mp)
{
	Module *m = ir_module_new(path);
	OnnxImp imp = { .m = m, .path = m->file };
	imp.values.a = imp.ranks.a = m->arena;
	const char *slash = strrchr(path, '/');
	m->dir = slash ? arena_strndup(m->arena, path, (size_t)(slash - path)) : ".";
	if (slash == path)
		m->dir = "/";
	imp.opset = find_opset(mp);
	int errs = 0;
	if (!mp->graph) {
		model_error(&imp, "the model has no graph");
		errs++;
	} else if (imp.opset < 0) {
		model_error(&imp, "the model does not import the ai.onnx operator set");
		errs++;
	} else if (imp.opset < 1 || imp.opset > 24) {
		model_error(&imp, "ai.onnx opset %d is not supported (aicc reads opsets 1 to 24)", imp.opset);
		errs++;
	}
	if (!errs) {
		imp.g = ir_graph_new(m, "main", (Loc){ m->file, 0, 0 });
		errs += import_initializers(&imp, mp->graph);
		errs += import_inputs(&imp, mp->graph);
		if (!errs)
			errs += import_nodes(&imp, mp->graph);
		if (!errs)
			errs += import_outputs(&imp, mp->graph);
	}
	if (errs) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

Module *fe_import_onnx_buf(const char *path, const void *buf, size_t len)
{
	Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
	if (!mp) {
		diag_error((Loc){ path, 0, 0 }, "not a valid ONNX model (the onnx.ModelProto protobuf "
			   "is malformed or truncated)");
		return NULL;
	}
	Module *m = import_model(path, mp);
	onnx__model_proto__free_unpacked(mp, NULL);
	return m;
}

Module *fe_import_onnx(const char *path)
{
	RtError e = { 0 };
	size_t len = 0;
	uint8_t *buf = onnx_slurp(path, &len, &e);
	if (!buf) {
		diag_error((Loc){ 0, 0, 0 }, "%s", e.msg);
		return NULL;
	}
	Module *m = fe_import_onnx_buf(path, buf, len);
	free(buf);
	return m;
}

/* ---- the external data a model reads (fe_onnx_external_files) ---- */

static int ext_add(char ***v, int *n, const char *loc)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp((*v)[i], loc))
			return 0;
	char **nv = realloc(*v, sizeof *nv * (size_t)(*n + 1));
	if (!nv || !(nv[*n] = strdup(loc))) {
		if (nv)
			*v = nv;
		return -1;
	}
	*v = nv;
	(*n)++;
	return 0;
}

static int ext_tensor(const Onnx__TensorProto *tp, char ***v, int *n)
{
	if (!tp || !tp->has_data_location || tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return 0;
	for (size_t i = 0; i < tp->n_external_data; i++)
		if (tp->external_data[i]->key && !strcmp(tp->external_data[i]->key, "location") && tp->external_data[i]->value)
			return ext_add(v, n, tp->external_data[i]->value);
	return 0;
}

static int ext_graph(const Onnx__GraphProto *gp, char ***v, int *n, int depth)
{
	int rc = 0;
	if (!gp || depth > 32)
		return 0;
	for (size_t i = 0; i < gp->n_initializer && rc == 0; i++)
		rc = ext_tensor(gp->initializer[i], v, n);
	for (size_t i = 0; i < gp->n_node && rc == 0; i++)
		for (size_t a = 0; a < gp->node[i]->n_attribute && rc == 0; a++) {
			const Onnx__AttributeProto *at = gp->node[i]->attribute[a];
			rc = ext_tensor(at->t, v, n);
			for (size_t k = 0; k < at->n_tensors && rc == 0; k++)
				rc = ext_tensor(at->tensors[k], v, n);
			if (rc == 0)
				rc = ext_graph(at->g, v, n, depth + 1);
			for (size_t k = 0; k < at->n_graphs && rc == 0; k++)
				rc = ext_graph(at->graphs[k], v, n, depth + 1);
		}
	return rc;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int fe_onnx_external_files(const char *path, char ***files, int *nfiles)
{
	RtError e = { 0 };
	size_t len = 0;
	*files = NULL;
	*nfiles = 0;
	uint8_t *buf = onnx_slurp(path, &len, &e);
	Onnx__ModelProto *mp = buf ? onnx__model_proto__unpack(NULL, len, buf) : NULL;
	free(buf);
	if (!mp)
		return -1;
	int rc = ext_graph(mp->graph, files, nfiles, 0);
	onnx__model_proto__free_unpacked(mp, NULL);
	if (*nfiles > 1)
		qsort(*files, (size_t)*nfiles, sizeof **files, str_cmp);
	return rc;
}
