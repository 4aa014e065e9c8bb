/* targets/flatten.c: expands Calls (and `repeat N`) of a shape-inferred graph into one
 * straight-line list of nodes over uniquely named values with concrete shapes, the form every
 * target lowers from.  Each expansion of a callee is a new call instance (numbered from 1 in
 * expansion order; the entry graph is instance 0); values inside it are named
 * "<callee>#<instance>/<name>" and its parameters carry the instance, which the runtime mixes
 * into their seeds so repeated layers get distinct weights.  `repeat N` feeds the outputs of
 * iteration i into the first inputs of iteration i+1 (ir/ops.def).  Requires ir/ir.h. */
#include "targets/target.h"

#include <stdlib.h>
#include <string.h>

typedef struct Fx {
	Module *m;
	Flat *f;
	RtError *e;
	int64_t next_instance;
	int depth;
	const char *device;  /* @device of the innermost annotated Call being expanded, or NULL */
} Fx;

/* At most this many flat nodes and call instances (a bound for `repeat N` with a huge N). */
#define FLAT_MAX (1 << 22)
#define FLAT_MAX_S "4194304"

static int fx_err(Fx *x, Loc loc, const char *msg, const char *what)
{
	if (loc.file && loc.line <= 0)   /* ONNX nodes: "model.onnx: node 'x' (Op, opset N)" */
		return rt_errorf(x->e, RT_EUSER, "%s: error: %s%s", loc.file, msg, what ? what : "");
	return rt_errorf(x->e, RT_EUSER, "%s:%d:%d: error: %s%s", loc.file ? loc.file : "<graph>",
			 loc.line, loc.col, msg, what ? what : "");
}

static int grow(void **v, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int nc = *cap ? *cap * 2 : 64;
	void *nv = realloc(*v, (size_t)nc * sz);
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}

/* Concrete dims of v's type into fv; errors on an unbound symbol or an uninferred type. */
static int concrete(Fx *x, Value *v, FlatVal *fv)
{
	Type t = v->type;
	if (t.dt == DT_INVALID || t.rank < 0)
		return fx_err(x, v->loc, "no inferred type for value ", v->name);
	if (t.rank > RT_MAX_RANK)
		return fx_err(x, v->loc, "rank above 8 for value ", v->name);
	fv->dt = t.dt;
	fv->rank = t.rank;
	for (int i = 0; i < t.rank; i++) {
		Dim d = t.dims[i];
		if (!dim_isconst(d) && (dim_subst(x->m, d, &d) < 0 || !dim_isconst(d))) {
			char buf[64];
			dim_str(x->m, t.dims[i], buf, sizeof buf);
			char what[300];
			snprintf(what, sizeof what, "dimension '%s' of '%s' is not bound (use --bind)", buf, v->name);
			return fx_err(x, v->loc, what, NULL);
		}
		fv->dims[i] = d.k;
	}
	return 0;
}

/* A new flat value instantiating v in the given call instance; its index, or -1. */
static int new_val(Fx *x, Value *v, const char *prefix, int64_t instance, int def)
{
	Flat *f = x->f;
	if (grow((void **)&f->vals, &f->cap_vals, f->nvals, sizeof *f->vals))
		return rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
	FlatVal *fv = &f->vals[f->nvals];
	memset(fv, 0, sizeof *fv);
	size_t np = strlen(prefix), nv = strlen(v->name);
	if (!(fv->name = malloc(np + nv + 1)))
		return rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
	memcpy(fv->name, prefix, np);
	memcpy(fv->name + np, v->name, nv + 1);
	fv->v = v;
	fv->instance = instance;
	fv->def = def;
	fv->last = -1;
	f->nvals++;
	if (concrete(x, v, fv) < 0)
		return -1;
	if (v->kind == V_PARAM) {
		if (grow((void **)&f->params, &f->cap_params, f->nparams, sizeof *f->params))
			return rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
		f->params[f->nparams++] = f->nvals - 1;
	}
	return f->nvals - 1;
}

static int expand(Fx *x, Graph *g, const int *args, int64_t instance, int *results);

/* Expands call node n (map: g's value ids -> flat values). */
static int expand_call(Fx *x, Node *n, int *map)
{
	Graph *c = n->callee;
	if (!c || n->nin != c->nin || n->nout != c->nout)
		return fx_err(x, n->loc, "call does not match the signature of its callee", NULL);
	if (x->depth > 64)
		return fx_err(x, n->loc, "calls nest deeper than 64 (recursive graph?)", NULL);
	int *args = malloc(sizeof(int) * (size_t)(c->nin + 1));
	int *res = malloc(sizeof(int) * (size_t)(c->nout + 1));
	int rc = args && res ? 0 : rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
	for (int i = 0; rc == 0 && i < n->nin; i++)
		args[i] = n->in[i] ? map[n->in[i]->id] : -1;
	int64_t reps = n->repeat > 0 ? n->repeat : 1;
	for (int64_t r = 0; rc == 0 && r < reps; r++) {
		if (x->f->nnodes >= FLAT_MAX || x->next_instance >= FLAT_MAX) {
			rc = fx_err(x, n->loc, "the flattened graph exceeds " FLAT_MAX_S " instructions or call "
				    "instances (repeat count too large?)", NULL);
			break;
		}
		const char *outer = x->device;
		x->depth++;
		x->device = n->annot.device ? n->annot.device : outer;   /* the body runs where its Call is placed */
		rc = expand(x, c, args, ++x->next_instance, res);
		x->depth--;
		x->device = outer;
		for (int i = 0; rc == 0 && i < c->nout && i < c->nin; i++)
			args[i] = res[i];
	}
	for (int i = 0; rc == 0 && i < n->nout; i++)
		map[n->out[i]->id] = res[i];
	free(args);
	free(res);
	return rc;
}

/* Appends flat node for IR node n. */
static int expand_node(Fx *x, Node *n, int *map, const char *prefix, int64_t instance)
{
	Flat *f = x->f;
	if (grow((void **)&f->nodes, &f->cap_nodes, f->nnodes, sizeof *f->nodes))
		return rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
	FlatNode *fn = &f->nodes[f->nnodes];
	memset(fn, 0, sizeof *fn);
	fn->n = n;
	fn->instance = instance;
	fn->device = n->annot.device ? n->annot.device : x->device;
	fn->in = malloc(sizeof(int) * (size_t)(n->nin + 1));
	fn->out = malloc(sizeof(int) * (size_t)(n->nout + 1));
	if (!fn->in || !fn->out) {
		free(fn->in), free(fn->out);
		return rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
	}
	int id = f->nnodes++;
	fn->nin = n->nin;
	for (int i = 0; i < n->nin; i++) {
		fn->in[i] = n->in[i] ? map[n->in[i]->id] : -1;
		if (fn->in[i] >= 0)
			f->vals[fn->in[i]].last = id;
	}
	for (int i = 0; i < n->nout; i++) {
		int v = new_val(x, n->out[i], prefix, instance, id);
		if (v < 0)
			return -1;
		fn = &f->nodes[id];
		fn->out[fn->nout++] = v;
		map[n->out[i]->id] = v;
	}
	return 0;
}

/* Expands graph g called with flat values args (its inputs); writes its outputs to results. */
static int expand(Fx *x, Graph *g, const int *args, int64_t instance, int *results)
{
	int *map = malloc(sizeof(int) * (size_t)(g->nvalues + 1));
	char prefix[256] = "";
	if (!map)
		return rt_errorf(x->e, RT_ENOMEM, "out of memory flattening the graph");
	if (instance > 0)
		snprintf(prefix, sizeof prefix, "%s#%lld/", g->name, (long long)instance);
	int rc = 0;
	for (int i = 0; i < g->nvalues; i++)
		map[i] = -1;
	for (int i = 0; i < g->nin; i++)
		map[g->inputs[i]->id] = args[i];
	for (int i = 0; rc == 0 && i < g->nparams; i++)
		rc = (map[g->params[i]->id] = new_val(x, g->params[i], prefix, instance, -1)) < 0 ? -1 : 0;
	for (Node *n = g->first; n && rc == 0; n = n->next)
		rc = n->op == OP_Call ? expand_call(x, n, map) : expand_node(x, n, map, prefix, instance);
	for (int i = 0; rc == 0 && i < g->nout; i++)
		if ((results[i] = map[g->outputs[i]->id]) < 0)
			rc = fx_err(x, g->outputs[i]->loc, "graph output is not defined: ", g->outputs[i]->name);
	free(map);
	return rc;
}

int tgt_flatten(Graph *g, Flat *f, RtError *e)
{
	memset(f, 0, sizeof *f);
	Fx x = { g->m, f, e, 0, 0, NULL };
	f->inputs = malloc(sizeof(int) * (size_t)(g->nin + 1));
	f->outputs = malloc(sizeof(int) * (size_t)(g->nout + 1));
	if (!f->inputs || !f->outputs)
		return rt_errorf(e, RT_ENOMEM, "out of memory flattening the graph");
	f->ninputs = g->nin;
	f->noutputs = g->nout;
	for (int i = 0; i < g->nin; i++)
		if ((f->inputs[i] = new_val(&x, g->inputs[i], "", 0, -1)) < 0)
			return -1;
	if (expand(&x, g, f->inputs, 0, f->outputs) < 0)
		return -1;
	for (int i = 0; i < f->noutputs; i++)
		f->vals[f->outputs[i]].is_output = 1;
	return 0;
}

void tgt_flat_free(Flat *f)
{
	for (int i = 0; i < f->nvals; i++)
		free(f->vals[i].name);
	for (int i = 0; i < f->nnodes; i++) {
		free(f->nodes[i].in);
		free(f->nodes[i].out);
	}
	free(f->vals);
	free(f->nodes);
	free(f->inputs);
	free(f->params);
	free(f->outputs);
	memset(f, 0, sizeof *f);
}
