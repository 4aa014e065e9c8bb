/* viz/graph.c: draws a VizGraph (viz_write) with Graphviz's libraries: the graph is built with
 * cgraph (agopen, agsubg, agnode, agedge, attributes through agsafeset; never by printing DOT
 * text), written as DOT by agwrite, or laid out by gvLayout "dot" and rendered to SVG or PNG by
 * gvRenderData.
 *
 * Nesting, outermost first: a cluster per device kind (gpu, lpu, cpu; "no target" for the IR),
 * a cluster per device, a cluster per call instance (a collapsed run is labelled "layer x 126"),
 * and a dashed cluster per fusion group labelled with its kind.  A node reads "op (precision)"
 * over its output type; its fill says the device, its border the precision.  Edges carry the
 * tensor's bytes; transfers over a link and collectives are bold and red with the link and the
 * predicted time.  Graph inputs and outputs are ellipses outside the devices.  Nodes are named
 * n0, n1, ... in model order with their full name as tooltip, so the DOT text is deterministic
 * and small.  Both the graph and the gvc context are freed before returning. */
#include "viz/viz.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <stdlib.h>
#include <string.h>

/* ColorBrewer Set3 and Pastel1 (colorbrewer2.org): fills light enough for black text. */
static const char *const dev_fill[] = {
	"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
	"#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
};

/* Border colour by precision family: wider formats cool, narrower warm. */
static const struct { const char *prefix, *color, *name; } prec_color[] = {
	{ "f64", "#000000", "black" },      { "f32", "#1f78b4", "blue" },
	{ "tf32", "#6a3d9a", "purple" },   { "bf16", "#33a02c", "green" },
	{ "f16", "#17becf", "cyan" },      { "f8", "#ff7f00", "orange" },
	{ "mxfp8", "#ff7f00", "orange" },  { "f6", "#e31a1c", "red" },
	{ "mxfp6", "#e31a1c", "red" },     { "f4", "#b15928", "brown" },
	{ "mxfp4", "#b15928", "brown" },   { "nvfp4", "#b15928", "brown" },
	{ "mxint8", "#7f7f7f", "grey" },   { "i", "#7f7f7f", "grey" },
	{ "u8", "#7f7f7f", "grey" },       { "bool", "#7f7f7f", "grey" },
};

static const char *border_of(const char *prec)
{
	for (size_t i = 0; prec && i < sizeof prec_color / sizeof *prec_color; i++)
		if (strncmp(prec, prec_color[i].prefix, strlen(prec_color[i].prefix)) == 0)
			return prec_color[i].color;
	return "#444444";
}

static void set(void *obj, const char *k, const char *v)
{
	agsafeset(obj, (char *)k, (char *)v, "");
}

static Agraph_t *sub(Agraph_t *parent, const char *name, const char *label, const char *style)
{
	Agraph_t *s = agsubg(parent, (char *)name, 0);
	if (s)
		return s;
	s = agsubg(parent, (char *)name, 1);
	set(s, "label", label);
	set(s, "style", style);
	return s;
}

/* The innermost cluster node v belongs to. */
static Agraph_t *cluster_of(Agraph_t *root, const VizGraph *g, const VizNode *v)
{
	if (v->device < 0)
		return root;
	char name[600], label[600];
	const VizDevice *d = &g->devs[v->device];
	int first = v->device, ndev = 0;
	for (int i = g->ndevs - 1; i >= 0; i--)
		if (strcmp(g->devs[i].kind, d->kind) == 0)
			first = i, ndev++;
	snprintf(name, sizeof name, "cluster_kind_%d", first);
	snprintf(label, sizeof label, "%s: %d device%s", d->kind, ndev, ndev == 1 ? "" : "s");
	Agraph_t *c = sub(root, name, label, "rounded");
	snprintf(name, sizeof name, "cluster_dev_%d", v->device);
	c = sub(c, name, d->name, "rounded,bold");
	if (*v->instance) {
		snprintf(name, sizeof name, "cluster_dev_%d_%s", v->device, v->instance);
		if (v->count > 1)
			snprintf(label, sizeof label, "%s x %lld", v->callee, (long long)v->count);
		else
			snprintf(label, sizeof label, "%s", v->instance);
		c = sub(c, name, label, "rounded,filled");
		set(c, "fillcolor", "#f7f7f7");
	}
	if (v->group >= 0 && v->fusion) {
		snprintf(name, sizeof name, "cluster_dev_%d_%s_fuse_%lld", v->device, v->instance, (long long)v->group);
		c = sub(c, name, v->fusion, "dashed");
	}
	return c;
}

static Agnode_t *draw_node(Agraph_t *root, const VizGraph *g, int i)
{
	const VizNode *v = &g->nodes[i];
	char name[32], label[1200];
	snprintf(name, sizeof name, "n%d", i);
	Agnode_t *n = agnode(cluster_of(root, g, v), name, 1);
	if (v->kind == VN_INPUT || v->kind == VN_OUTPUT) {
		snprintf(label, sizeof label, "%s %s%s%s", v->kind == VN_INPUT ? "input" : "output", v->op,
			 v->shape ? "\\n" : "", v->shape ? v->shape : "");
		set(n, "shape", "ellipse");
		set(n, "label", label);
		return n;
	}
	snprintf(label, sizeof label, "%s (%s)%s%s%s%s", v->op, v->precision ? v->precision : "-",
		 v->shape ? "\\n" : "", v->shape ? v->shape : "", v->note ? "\\n" : "", v->note ? v->note : "");
	set(n, "label", label);
	set(n, "tooltip", v->id);
	set(n, "style", v->kind == VN_COLLECTIVE ? "filled,bold" : "filled");
	set(n, "fillcolor", dev_fill[v->device % (int)(sizeof dev_fill / sizeof *dev_fill)]);
	set(n, "color", border_of(v->precision));
	set(n, "penwidth", v->kind == VN_COLLECTIVE ? "3" : "2");
	if (v->kind == VN_COLLECTIVE)
		set(n, "shape", "hexagon");
	return n;
}

static void draw_edge(Agraph_t *root, Agnode_t **nodes, const VizEdge *e)
{
	char label[700], b[64], t[64];
	Agedge_t *ed = agedge(root, nodes[e->src], nodes[e->dst], NULL, 1);
	if (e->bytes >= 0)
		viz_bytes_str((double)e->bytes, b, sizeof b);
	else
		snprintf(b, sizeof b, "%.60s", e->type ? e->type : "");
	if (e->link)
		snprintf(label, sizeof label, "%s\\n%s\\n%s", e->link, b, viz_time_str(e->time_s, t, sizeof t));
	else
		snprintf(label, sizeof label, "%s", b);
	set(ed, "xlabel", label);   /* xlabel: labels do not add ranks, so pictures stay short */
	if (e->bold || e->link) {
		set(ed, "style", "bold");
		set(ed, "penwidth", "2.5");
		set(ed, "color", "#d62728");
	}
}

/* The graph's caption: the title and how to read the colours. */
static void caption(Agraph_t *root, const VizGraph *g, const unsigned char *used)
{
	char s[2048];
	size_t n = (size_t)snprintf(s, sizeof s, "%s\\nfill: device; border: precision (", g->title ? g->title : "graph");
	int first = 1;
	for (size_t i = 0; i < sizeof prec_color / sizeof *prec_color && n < sizeof s - 64; i++)
		if (used[i]) {
			n += (size_t)snprintf(s + n, sizeof s - n, "%s%s %s", first ? "" : ", ", prec_color[i].prefix,
					      prec_color[i].name);
			first = 0;
		}
	snprintf(s + n, sizeof s - n, ")%s", g->from_plan ? "; bold red: transfers and collectives" : "");
	set(root, "label", s);
}

/* ---- object IDs in creation order (partition branch) ----
 * cgraph's default ID of a named object is the address of its interned name, and the DOT
 * writer lists subgraphs by ID: the order of clusters then depended on the heap layout (it
 * differed under ASan).  These IDs count up in creation order instead: named objects get even
 * IDs (2 * index into the name table), anonymous ones odd IDs, as in cgraph's own scheme. */
typedef struct IdState { Agraph_t *g; char **names; long n, cap, anon; } IdState;

static void *id_open(Agraph_t *g, Agdisc_t *d)
{
	(void)d;
	IdState *s = calloc(1, sizeof *s);
	if (s)
		s->g = g, s->anon = 1;
	return s;
}

static long id_map(void *state, int objtype, char *str, IDTYPE *id, int create)
{
	IdState *s = state;
	(void)objtype;
	if (!str) {
		if (!create)
			return 0;
		*id = (IDTYPE)s->anon;
		s->anon += 2;
		return 1;
	}
	for (long i = 0; i < s->n; i++)
		if (strcmp(s->names[i], str) == 0) {
			*id = (IDTYPE)(2 * i);
			return 1;
		}
	if (!create)
		return 0;
	if (s->n == s->cap) {
		long cap = s->cap ? 2 * s->cap : 64;
		char **nn = realloc(s->names, (size_t)cap * sizeof *nn);
		if (!nn)
			return 0;
		s->names = nn, s->cap = cap;
	}
	if (!(s->names[s->n] = agstrdup(s->g, str)))   /* interned: the writer reads its header */
		return 0;
	*id = (IDTYPE)(2 * s->n++);
	return 1;
}

static long id_alloc(void *state, int objtype, IDTYPE id) { (void)state, (void)objtype; return id % 2 == 1; }
static void id_free(void *state, int objtype, IDTYPE id) { (void)state, (void)objtype, (void)id; }

static char *id_print(void *state, int objtype, IDTYPE id)
{
	IdState *s = state;
	(void)objtype;
	return id % 2 == 0 && (long)(id / 2) < s->n ? s->names[id / 2] : NULL;
}

static void id_close(void *state)
{
	IdState *s = state;
	for (long i = 0; i < s->n; i++)
		agstrfree(s->g, s->names[i]);
	free(s->names);
	free(s);
}

static void id_register(void *state, int objtype, void *obj) { (void)state, (void)objtype, (void)obj; }

static Agiddisc_t id_disc = { id_open, id_map, id_alloc, id_free, id_print, id_close, id_register };
static Agdisc_t creation_order = { NULL, &id_disc, NULL };

static Agraph_t *build(const VizGraph *g)
{
	creation_order.mem = AgDefaultDisc.mem;
	creation_order.io = AgDefaultDisc.io;
	Agraph_t *root = agopen("aicc", Agdirected, &creation_order);
	set(root, "rankdir", "TB");
	set(root, "labelloc", "t");
	set(root, "fontname", "Helvetica");
	set(root, "ranksep", "0.3");
	set(root, "nodesep", "0.25");
	set(root, "forcelabels", "true");
	set(root, "size", "20,11");       /* shrink to a 1920x1080 screen (96 dpi) when larger */
	agattr(root, AGNODE, "shape", "box");
	agattr(root, AGNODE, "fontname", "Helvetica");
	agattr(root, AGNODE, "fontsize", "10");
	agattr(root, AGNODE, "height", "0.3");
	agattr(root, AGNODE, "margin", "0.08,0.03");
	agattr(root, AGEDGE, "fontname", "Helvetica");
	agattr(root, AGEDGE, "fontsize", "8");
	Agnode_t **nodes = calloc((size_t)g->nnodes + 1, sizeof *nodes);
	unsigned char used[sizeof prec_color / sizeof *prec_color] = { 0 };
	if (!nodes) {
		agclose(root);
		return NULL;
	}
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i].hidden)
			continue;
		nodes[i] = draw_node(root, g, i);
		for (size_t k = 0; g->nodes[i].precision && k < sizeof used; k++)
			if (strncmp(g->nodes[i].precision, prec_color[k].prefix, strlen(prec_color[k].prefix)) == 0) {
				used[k] = 1;
				break;
			}
	}
	for (int i = 0; i < g->nedges; i++)
		if (nodes[g->edges[i].src] && nodes[g->edges[i].dst])
			draw_edge(root, nodes, &g->edges[i]);
	caption(root, g, used);
	free(nodes);
	return root;
}

int viz_write(const VizGraph *g, VizFormat fmt, FILE *f)
{
	GVC_t *gvc = fmt == VIZ_DOT ? NULL : gvContext();
	Agraph_t *root = build(g);
	int rc = root ? 0 : -1;
	if (rc == 0 && fmt == VIZ_DOT)
		rc = agwrite(root, f) == EOF ? -1 : 0;
	else if (rc == 0) {
		char *data = NULL;
		unsigned int len = 0;
		rc = gvc && gvLayout(gvc, root, "dot") == 0 ? 0 : -1;
		if (rc == 0 && gvRenderData(gvc, root, fmt == VIZ_SVG ? "svg" : "png", &data, &len) != 0)
			rc = -1;
		if (rc == 0 && fwrite(data, 1, len, f) != len)
			rc = -1;
		if (data)
			gvFreeRenderData(data);
		if (gvc)
			gvFreeLayout(gvc, root);
	}
	if (rc < 0)
		fprintf(stderr, "aicc: error: graphviz could not %s the picture\n", fmt == VIZ_DOT ? "write" : "lay out or render");
	if (root)
		agclose(root);
	if (gvc)
		gvFreeContext(gvc);
	return rc;
}
