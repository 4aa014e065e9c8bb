/* viz/from_ir.c: the picture of a module before any target (viz_from_ir).  Walks the entry graph
 * and expands every call, `repeat N` included, into call instances numbered and named exactly as
 * targets/flatten.c numbers them ("layer#3/h"), so IR and plan pictures of one model agree and
 * viz_collapse can fold the repeats again.  Unlike the flattener it needs no bound dimensions:
 * shapes print symbolically ("f32[B, S, 4096]") and an edge whose size is unknown is labelled
 * with its type.  Every node sits on one device, "(unplaced)", unless `@device(...)` names one.
 * Parameters (weights) are not drawn: only activations flow along edges. */
#include "viz/model.h"

#include <stdlib.h>
#include <string.h>

typedef struct Wx {
	const Module *m;
	VizGraph *g;
	int64_t next_instance;
	int depth, max_nodes, err;
	int unplaced;        /* device index of nodes without @device */
} Wx;

static int walk(Wx *x, const Graph *g, const int *args, int64_t instance, int *results);

/* The node drawn for IR node n of call instance `prefix`; its index. */
static int add_op(Wx *x, const Node *n, const char *prefix)
{
	char id[512], buf[1024];
	snprintf(id, sizeof id, "%s%s", prefix, n->nout ? n->out[0]->name : "?");
	int dev = n->annot.device ? vz_device(x->g, n->annot.device, "annotated") : x->unplaced;
	int k = vz_node(x->g, VN_OP, id, ir_ops[n->op].name, dev);
	VizNode *v = &x->g->nodes[k];
	if (n->nout && n->out[0]->type.rank >= 0)
		v->shape = vz_strdup(ir_type_str(x->m, n->out[0]->type, buf, sizeof buf));
	const char *prec = rt_attr_str(&n->attrs, "precision", NULL);
	if (n->annot.precision != DT_INVALID)
		prec = rt_dtype_name(n->annot.precision);
	else if (!prec && n->nout && n->out[0]->type.dt != DT_INVALID)
		prec = rt_dtype_name(n->out[0]->type.dt);
	v->precision = vz_strdup(prec);
	v->group = rt_attr_int(&n->attrs, "fusion_group", -1);
	v->fusion = vz_strdup(rt_attr_str(&n->attrs, "fusion", NULL));
	return k;
}

/* An edge carrying value val from node src to node dst. */
static void add_flow(Wx *x, int src, int dst, const Value *val)
{
	char buf[1024];
	int64_t numel = ir_type_numel(val->type);
	int64_t bytes = numel >= 0 && val->type.dt != DT_INVALID ? rt_dtype_bytes(val->type.dt, numel) : -1;
	vz_edge(x->g, src, dst, bytes, val->type.rank >= 0 ? ir_type_str(x->m, val->type, buf, sizeof buf) : NULL);
}

static int expand_call(Wx *x, const Node *n, int *map)
{
	const Graph *c = n->callee;
	if (!c || x->depth >= 64) {
		fprintf(stderr, "aicc: error: calls nest deeper than 64 (recursive graph?)\n");
		return -1;
	}
	int *args = vz_alloc(sizeof(int) * (size_t)(c->nin + 1));
	int *res = vz_alloc(sizeof(int) * (size_t)(c->nout + 1));
	for (int i = 0; i < n->nin && i < c->nin; i++)
		args[i] = n->in[i] ? map[n->in[i]->id] : -1;
	int rc = 0;
	for (int64_t r = 0; rc == 0 && r < (n->repeat > 0 ? n->repeat : 1); r++) {
		x->depth++;
		rc = walk(x, c, args, ++x->next_instance, res);
		x->depth--;
		for (int i = 0; rc == 0 && i < c->nout && i < c->nin; i++)
			args[i] = res[i];
	}
	for (int i = 0; rc == 0 && i < n->nout && i < c->nout; i++)
		map[n->out[i]->id] = res[i];
	free(args);
	free(res);
	return rc;
}

/* Draws graph g called with args (viz node of each input, -1 for none); results get the node
 * producing each output. */
static int walk(Wx *x, const Graph *g, const int *args, int64_t instance, int *results)
{
	int *map = vz_alloc(sizeof(int) * (size_t)(g->nvalues + 1));
	char prefix[256] = "";
	if (instance > 0)
		snprintf(prefix, sizeof prefix, "%s#%lld/", g->name, (long long)instance);
	for (int i = 0; i < g->nvalues; i++)
		map[i] = -1;
	for (int i = 0; i < g->nin; i++)
		map[g->inputs[i]->id] = args[i];
	int rc = 0;
	for (const Node *n = g->first; n && rc == 0; n = n->next) {
		if (n->op == OP_Call) {
			rc = expand_call(x, n, map);
			continue;
		}
		int k = add_op(x, n, prefix);
		for (int i = 0; i < n->nin; i++) {
			const Value *v = n->in[i];
			int dup = 0;
			for (int j = 0; v && j < i; j++)
				dup |= n->in[j] == v;
			if (v && !dup && map[v->id] >= 0)
				add_flow(x, map[v->id], k, v);
		}
		for (int i = 0; i < n->nout; i++)
			map[n->out[i]->id] = k;
		if (x->g->nnodes > x->max_nodes) {
			fprintf(stderr, "aicc: error: the picture would have more than %d nodes\n", x->max_nodes);
			rc = -1;
		}
	}
	for (int i = 0; rc == 0 && i < g->nout; i++)
		results[i] = map[g->outputs[i]->id];
	free(map);
	return rc;
}

int viz_from_ir(const Module *m, VizGraph *g, int max_nodes)
{
	memset(g, 0, sizeof *g);
	const Graph *e = ir_entry(m);
	if (!e) {
		fprintf(stderr, "aicc: error: the model defines no graph\n");
		return -1;
	}
	char buf[1024], id[512];
	Wx x = { m, g, 0, 0, max_nodes, 0, 0 };
	const char *file = m->file ? m->file : "model", *slash = strrchr(file, '/');
	snprintf(id, sizeof id, "%s: graph %s, no target", slash ? slash + 1 : file, e->name);
	g->title = vz_strdup(id);
	x.unplaced = vz_device(g, "(unplaced)", "no target");
	int *args = vz_alloc(sizeof(int) * (size_t)(e->nin + 1));
	int *res = vz_alloc(sizeof(int) * (size_t)(e->nout + 1));
	for (int i = 0; i < e->nin; i++) {
		snprintf(id, sizeof id, "input:%s", e->inputs[i]->name);
		args[i] = vz_node(g, VN_INPUT, id, e->inputs[i]->name, -1);
		if (e->inputs[i]->type.rank >= 0)
			g->nodes[args[i]].shape = vz_strdup(ir_type_str(m, e->inputs[i]->type, buf, sizeof buf));
	}
	int rc = walk(&x, e, args, 0, res);
	for (int i = 0; rc == 0 && i < e->nout; i++) {
		snprintf(id, sizeof id, "output:%s", e->outputs[i]->name);
		int k = vz_node(g, VN_OUTPUT, id, e->outputs[i]->name, -1);
		if (res[i] >= 0)
			add_flow(&x, res[i], k, e->outputs[i]);
	}
	free(args);
	free(res);
	vz_fusion_kinds(g);
	if (rc < 0)
		viz_free(g);
	return rc;
}
