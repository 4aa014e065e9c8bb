/* viz/model.c: the picture model's storage (viz/model.h) and repeat collapsing (viz_collapse).
 *
 * Collapsing: the nodes of one call instance ("layer#7") are its members, in order.  Instances
 * of one callee are visited in the order they first appear; a run is a maximal sequence of them
 * whose members agree one for one in operator, device and precision, so a pipeline that puts
 * layers 1-63 on one GPU and 64-126 on another keeps two clusters.  Member k of every later
 * instance of a run is drawn as member k of the first (rep), which carries the run's length.
 * Edges are remapped through rep; an edge between two instances of one run (the value carried
 * from iteration i to i+1) disappears, and duplicates are merged. */
#include "viz/model.h"

#include <stdlib.h>
#include <string.h>

void *vz_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		fprintf(stderr, "aicc: error: out of memory drawing the graph\n");
		abort();
	}
	return p;
}

void *vz_grow(void *v, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return v;
	int nc = *cap ? *cap * 2 : 64;
	void *nv = realloc(v, (size_t)nc * sz);
	if (!nv) {
		fprintf(stderr, "aicc: error: out of memory drawing the graph\n");
		abort();
	}
	memset((char *)nv + (size_t)*cap * sz, 0, (size_t)(nc - *cap) * sz);
	*cap = nc;
	return nv;
}

char *vz_strdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	return memcpy(vz_alloc(n), s, n);
}

int vz_device(VizGraph *g, const char *name, const char *kind)
{
	for (int i = 0; i < g->ndevs; i++)
		if (strcmp(g->devs[i].name, name) == 0)
			return i;
	g->devs = vz_grow(g->devs, &g->cap_devs, g->ndevs, sizeof *g->devs);
	g->devs[g->ndevs].name = vz_strdup(name);
	g->devs[g->ndevs].kind = vz_strdup(kind);
	return g->ndevs++;
}

int vz_node(VizGraph *g, VizKind kind, const char *id, const char *op, int device)
{
	g->nodes = vz_grow(g->nodes, &g->cap_nodes, g->nnodes, sizeof *g->nodes);
	VizNode *n = &g->nodes[g->nnodes];
	char inst[256], callee[256];
	viz_instance_of(id, inst, callee, sizeof inst);
	n->id = vz_strdup(id);
	n->kind = kind;
	n->op = vz_strdup(op);
	n->device = device;
	n->instance = vz_strdup(kind == VN_OP || kind == VN_COLLECTIVE ? inst : "");
	n->callee = vz_strdup(kind == VN_OP || kind == VN_COLLECTIVE ? callee : "");
	n->group = -1;
	n->count = 1;
	n->rep = g->nnodes;
	return g->nnodes++;
}

int vz_edge(VizGraph *g, int src, int dst, int64_t bytes, const char *type)
{
	g->edges = vz_grow(g->edges, &g->cap_edges, g->nedges, sizeof *g->edges);
	VizEdge *e = &g->edges[g->nedges];
	e->src = src, e->dst = dst, e->bytes = bytes;
	e->type = bytes < 0 ? vz_strdup(type) : NULL;
	e->time_s = -1;
	return g->nedges++;
}

void viz_free(VizGraph *g)
{
	for (int i = 0; i < g->ndevs; i++)
		free(g->devs[i].name), free(g->devs[i].kind);
	for (int i = 0; i < g->nnodes; i++) {
		VizNode *n = &g->nodes[i];
		free(n->id), free(n->op), free(n->shape), free(n->precision), free(n->note);
		free(n->instance), free(n->callee), free(n->fusion);
	}
	for (int i = 0; i < g->nedges; i++)
		free(g->edges[i].type), free(g->edges[i].link);
	free(g->devs), free(g->nodes), free(g->edges), free(g->title);
	memset(g, 0, sizeof *g);
}

/* ---- collapsing ---- */
typedef struct Inst {
	const char *name, *callee;
	int *members; int n, cap;
	int run;             /* index of the run's first instance */
} Inst;

static int same_members(const VizGraph *g, const Inst *a, const Inst *b)
{
	if (a->n != b->n || strcmp(a->callee, b->callee) != 0)
		return 0;
	for (int k = 0; k < a->n; k++) {
		const VizNode *x = &g->nodes[a->members[k]], *y = &g->nodes[b->members[k]];
		if (x->kind != y->kind || x->device != y->device || strcmp(x->op, y->op) ||
		    strcmp(x->precision ? x->precision : "", y->precision ? y->precision : ""))
			return 0;
	}
	return 1;
}

/* The instances of g in order of first appearance; each node's `rep` temporarily holds its
 * instance index (-1 at the top level). */
static Inst *gather(VizGraph *g, int *ninst)
{
	Inst *in = NULL;
	int n = 0, cap = 0;
	for (int i = 0; i < g->nnodes; i++) {
		VizNode *v = &g->nodes[i];
		v->rep = -1;
		if (!*v->instance)
			continue;
		int k = n - 1;
		while (k >= 0 && strcmp(in[k].name, v->instance) != 0)
			k--;
		if (k < 0) {
			in = vz_grow(in, &cap, n, sizeof *in);
			in[n].name = v->instance, in[n].callee = v->callee, in[n].run = n;
			k = n++;
		}
		in[k].members = vz_grow(in[k].members, &in[k].cap, in[k].n, sizeof(int));
		in[k].members[in[k].n++] = i;
		v->rep = k;
	}
	*ninst = n;
	return in;
}

typedef struct EdgeKey { int src, dst; } EdgeKey;

/* Remaps edges through rep, dropping edges inside a run and duplicates (open hashing). */
static void remap_edges(VizGraph *g, const int *node_inst, const Inst *in)
{
	int cap = 1;
	while (cap < 2 * g->nedges + 2)
		cap *= 2;
	int *slot = vz_alloc(sizeof(int) * (size_t)cap);
	for (int i = 0; i < cap; i++)
		slot[i] = -1;
	int k = 0;
	for (int i = 0; i < g->nedges; i++) {
		VizEdge e = g->edges[i];
		int a = node_inst[e.src], b = node_inst[e.dst];
		int cross = a >= 0 && b >= 0 && a != b && in[a].run == in[b].run;
		e.src = g->nodes[e.src].rep, e.dst = g->nodes[e.dst].rep;
		unsigned h = ((unsigned)e.src * 2654435761u) ^ ((unsigned)e.dst * 40503u);
		int dup = 0, s = (int)(h & (unsigned)(cap - 1));
		for (; slot[s] >= 0; s = (s + 1) & (cap - 1))
			if (g->edges[slot[s]].src == e.src && g->edges[slot[s]].dst == e.dst) {
				dup = 1;
				break;
			}
		if (cross || dup || e.src == e.dst) {
			free(e.type), free(e.link);
			continue;
		}
		g->edges[k] = e;
		slot[s] = k++;
	}
	g->nedges = k;
	free(slot);
}

void viz_collapse(VizGraph *g)
{
	int ninst;
	Inst *in = gather(g, &ninst);
	int *node_inst = vz_alloc(sizeof(int) * (size_t)(g->nnodes + 1));
	for (int i = 0; i < g->nnodes; i++)
		node_inst[i] = g->nodes[i].rep;
	/* runs: each instance joins the run of the previous instance of its callee when equal */
	for (int i = 0; i < ninst; i++) {
		int prev = i - 1;
		while (prev >= 0 && strcmp(in[prev].callee, in[i].callee) != 0)
			prev--;
		if (prev >= 0 && same_members(g, &in[prev], &in[i]))
			in[i].run = in[prev].run;
	}
	for (int i = 0; i < g->nnodes; i++)
		g->nodes[i].rep = i;
	for (int i = 0; i < ninst; i++) {
		const Inst *r = &in[in[i].run];
		for (int k = 0; k < in[i].n; k++) {
			VizNode *v = &g->nodes[in[i].members[k]];
			v->rep = r->members[k];
			if (r != &in[i]) {
				v->hidden = 1;
				g->nodes[r->members[k]].count++;
			}
		}
	}
	remap_edges(g, node_inst, in);
	for (int i = 0; i < ninst; i++)
		free(in[i].members);
	free(in);
	free(node_inst);
}

void vz_fusion_kinds(VizGraph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		VizNode *v = &g->nodes[i];
		if (v->group < 0 || v->fusion)
			continue;
		for (int dir = -1; dir <= 1 && !v->fusion; dir += 2)
			for (int j = i + dir; j >= 0 && j < g->nnodes; j += dir) {
				const VizNode *w = &g->nodes[j];
				if (strcmp(w->instance, v->instance) != 0)
					break;
				if (w->group == v->group && w->fusion) {
					v->fusion = vz_strdup(w->fusion);
					break;
				}
			}
	}
}
