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
 * and small.  Both the graph and the gvc context (made in the layout's child process) are freed
 * before returning. */
#include "viz/viz.h"

#include <errno.h>
#include <math.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Per instance cluster: the most shards one of its nodes stands for (cgraph record, not drawn). */
typedef struct ClusterRec {
	Agrec_t h;
	int shards;
} ClusterRec;

/* The drawing: the graph, and per device the label of its cluster. */
typedef struct Draw {
	const VizGraph *g;
	Agraph_t *root;
	char **dev_label;
	int stages;          /* pipeline stages: the most ".stageN" + 1 among the layer graphs */
	const int *col;      /* per node: its column (wrap_columns), when ncols > 1 */
	int ncols;
} Draw;

/* "gpu0..gpu7 (8 devices)" for the devices marked in in[] (plan order), in buf (n bytes). */
static void dev_range(const VizGraph *g, const unsigned char *in, char *buf, size_t n)
{
	const char **names = calloc((size_t)g->ndevs + 1, sizeof *names);
	if (!names) {
		snprintf(buf, n, "?");
		return;
	}
	for (int i = 0; i < g->ndevs; i++)
		names[i] = g->devs[i].name;
	viz_range_str(names, g->ndevs, in, buf, n);
	free(names);
}

/* The label of each device's cluster: the devices its shown nodes stand for (folded shards and
 * layers that step over devices), and a pool's chips. */
static char **device_labels(const VizGraph *g)
{
	char **lab = calloc((size_t)g->ndevs + 1, sizeof *lab);
	unsigned char *in = calloc((size_t)g->ndevs + 1, 1);
	if (!lab || !in) {
		free(in);
		return lab;
	}
	char buf[600];
	for (int d = 0; d < g->ndevs; d++) {
		memset(in, 0, (size_t)g->ndevs);
		in[d] = 1;
		for (int i = 0; i < g->nnodes; i++) {
			const VizNode *v = &g->nodes[i], *r = &g->nodes[v->rep];
			if (v->hidden && !r->hidden && r->device == d && v->device >= 0)
				in[v->device] = 1;
		}
		dev_range(g, in, buf, sizeof buf);
		size_t l = strlen(buf);
		if (g->devs[d].chips > 1)
			snprintf(buf + l, sizeof buf - l, ": pool of %d chips", g->devs[d].chips);
		lab[d] = strdup(buf);
	}
	free(in);
	return lab;
}

/* The label of a call instance's cluster: "layer#1..80" for a collapsed run, the pipeline stage
 * of a per-stage layer graph ("layer.stage1"), and the shards its nodes stand for. */
static void instance_label(const VizNode *v, int shards, int stages, char *buf, size_t n)
{
	char base[300];
	const char *st = strstr(v->callee, ".stage");
	int stage = -1;
	if (st && st[6] >= '0' && st[6] <= '9' && !strchr(st + 1, '.'))
		stage = atoi(st + 6);
	snprintf(base, sizeof base, "%.*s", stage >= 0 ? (int)(st - v->callee) : (int)strlen(v->callee), v->callee);
	size_t o;
	if (v->callee[0] == '~')   /* a repeated block of a flat graph (viz_collapse) */
		o = (size_t)snprintf(buf, n, "block of %d operators (x%lld)", atoi(v->callee + 1), (long long)v->count);
	else if (v->count > 1)
		o = (size_t)snprintf(buf, n, "%s#%lld..%lld (x%lld)", base, (long long)v->first, (long long)v->last,
				     (long long)v->count);
	else if (stage >= 0)
		o = (size_t)snprintf(buf, n, "%s#%lld", base, (long long)v->first);
	else
		o = (size_t)snprintf(buf, n, "%s", v->instance);
	if (stage >= 0 && stages > 1 && o < n)
		o += (size_t)snprintf(buf + o, n - o, "\\npipeline stage %d", stage);
	if (shards > 1 && o < n)
		snprintf(buf + o, n - o, "\\nx%d shards", shards);
}

/* The innermost cluster node v belongs to. */
static Agraph_t *cluster_of(Draw *dr, const VizNode *v)
{
	const VizGraph *g = dr->g;
	if (v->device < 0)
		return dr->root;
	char name[600], label[700];
	const VizDevice *d = &g->devs[v->device];
	int first = v->device, ndev = 0;
	for (int i = g->ndevs - 1; i >= 0; i--)
		if (strcmp(g->devs[i].kind, d->kind) == 0)
			first = i, ndev++;
	Agraph_t *c = dr->root;
	if (ndev > 1) {   /* one device of its kind: its own cluster says enough */
		snprintf(name, sizeof name, "cluster_kind_%d", first);
		snprintf(label, sizeof label, "%s: %d devices", d->kind, ndev);
		c = sub(c, name, label, "rounded");
	}
	snprintf(name, sizeof name, "cluster_dev_%d", v->device);
	c = sub(c, name, dr->dev_label && dr->dev_label[v->device] ? dr->dev_label[v->device] : d->name, "rounded,bold");
	if (dr->ncols > 1) {   /* a column of a wrapped picture: a cluster without a border, numbered */
		snprintf(name, sizeof name, "cluster_dev_%d_col_%d", v->device, dr->col[v - g->nodes]);
		snprintf(label, sizeof label, "column %d of %d", dr->col[v - g->nodes] + 1, dr->ncols);
		if (!agsubg(c, name, 0)) {
			c = sub(c, name, label, "solid");
			set(c, "peripheries", "0");
			set(c, "fontcolor", "#555555");
		} else
			c = agsubg(c, name, 0);
	}
	if (*v->instance) {
		snprintf(name, sizeof name, "cluster_dev_%d_%s", v->device, v->instance);
		instance_label(v, v->shards, dr->stages, label, sizeof label);
		c = sub(c, name, label, "rounded,filled");
		set(c, "fillcolor", "#f7f7f7");
		ClusterRec *r = agbindrec(c, "aicc", sizeof *r, 0);
		if (r && v->shards > r->shards) {   /* the label counts the most shards of any member */
			r->shards = v->shards;
			set(c, "label", label);
		}
	}
	if (v->group >= 0 && v->fusion) {
		snprintf(name, sizeof name, "cluster_dev_%d_%s_fuse_%lld", v->device, v->instance, (long long)v->group);
		c = sub(c, name, v->fusion, "dashed");
	}
	return c;
}

/* "past_key.0..79" for an input or output that stands for a run of them, else its name. */
static void io_name(const VizNode *v, char *buf, size_t n)
{
	if (!v->op_last) {
		snprintf(buf, n, "%s", v->op);
		return;
	}
	size_t p = 0;
	while (v->op[p] && v->op[p] == v->op_last[p])
		p++;
	while (p > 0 && v->op[p - 1] >= '0' && v->op[p - 1] <= '9')
		p--;
	if (strspn(v->op + p, "0123456789") == strlen(v->op + p) && strspn(v->op_last + p, "0123456789") == strlen(v->op_last + p))
		snprintf(buf, n, "%s..%s", v->op, v->op_last + p);
	else
		snprintf(buf, n, "%s .. %s", v->op, v->op_last);
}

static Agnode_t *draw_node(Draw *dr, int i)
{
	const VizNode *v = &dr->g->nodes[i];
	char name[32], label[1400], io[600], sh[32] = "";
	snprintf(name, sizeof name, "n%d", i);
	Agnode_t *n = agnode(cluster_of(dr, v), name, 1);
	if (v->shards > 1)
		snprintf(sh, sizeof sh, " x%d", v->shards);
	if (v->kind == VN_INPUT || v->kind == VN_OUTPUT) {
		io_name(v, io, sizeof io);
		snprintf(label, sizeof label, "%s %s%s%s%s", v->kind == VN_INPUT ? "input" : "output", io, sh,
			 v->shape ? "\\n" : "", v->shape ? v->shape : "");
		set(n, "shape", "ellipse");
		set(n, "label", label);
		return n;
	}
	snprintf(label, sizeof label, "%s (%s)%s%s%s%s%s", v->op, v->precision ? v->precision : "-", sh,
		 v->shape ? "\\n" : "", v->shape ? v->shape : "", v->note ? "\\n" : "", v->note ? v->note : "");
	set(n, "label", label);
	set(n, "tooltip", v->id);
	if (v->context) {   /* --focus: a neighbour outside the focus */
		set(n, "style", "dashed");
		set(n, "color", "#999999");
		set(n, "fontcolor", "#777777");
		return n;
	}
	set(n, "style", v->kind == VN_COLLECTIVE ? "filled,bold" : "filled");
	set(n, "fillcolor", dev_fill[v->device % (int)(sizeof dev_fill / sizeof *dev_fill)]);
	set(n, "color", border_of(v->precision));
	set(n, "penwidth", v->kind == VN_COLLECTIVE ? "3" : "2");
	if (v->kind == VN_COLLECTIVE)
		set(n, "shape", "hexagon");
	return n;
}

/* Edge labels.  A `label` is a node of dot's layout: dot gives it room between the ranks, so it
 * never covers a node, a cluster's title or another label (testsuite/viz/label-overlap.py checks
 * the pictures); an `xlabel`, placed after the layout wherever there is room, and with forcelabels
 * where there is none, lands over nodes and cluster titles (seen: 8B decode on hopper, 70B --tp 8),
 * so none is drawn.  Labels cost dot's spline routing steeply: Llama 8B --expand --focus of 4, 8,
 * 10, 12 and 16 layers (64 .. 244 nodes) took 0.04, 1.1, 4.2, 8.0 and 34 s of CPU with labels and
 * 0.2 s without.  Pictures of up to VIZ_LABEL_NODES nodes label every edge; a larger one (an
 * --expand, a --focus of many layers) labels only transfers and collectives (a few per layer) and
 * gives a plain edge's bytes as its tooltip: they are its source's output type, which the source
 * node's label shows. */
enum { VIZ_LABEL_NODES = 120 };

static void draw_edge(Agraph_t *root, Agnode_t **nodes, const VizEdge *e, int big, int between_columns)
{
	char label[700], b[64], t[64];
	Agedge_t *ed = agedge(root, nodes[e->src], nodes[e->dst], NULL, 1);
	if (e->bytes >= 0)
		viz_bytes_str((double)e->bytes, b, sizeof b);
	else
		snprintf(b, sizeof b, "%.60s", e->type ? e->type : "");
	if (e->link && e->nlinks > 1)
		snprintf(label, sizeof label, "%.*s x%d\\n%s\\n%s", (int)strcspn(e->link, ".-"), e->link, e->nlinks, b,
			 viz_time_str(e->time_s, t, sizeof t));
	else if (e->link)
		snprintf(label, sizeof label, "%s\\n%s\\n%s", e->link, b, viz_time_str(e->time_s, t, sizeof t));
	else
		snprintf(label, sizeof label, "%s", b);
	/* an edge between two columns of a wrapped picture: no rank constraint, and no label (dot
	 * 2.42 double-frees a labelled constraint=false edge's label node in gvFreeLayout: PP-OCR det) */
	set(ed, between_columns || (big && !e->link && !e->bold) ? "tooltip" : "label", label);
	if (between_columns)
		set(ed, "constraint", "false");
	if (e->bold || e->link) {
		set(ed, "style", "bold");
		set(ed, "penwidth", "2.5");
		set(ed, "color", "#d62728");
	}
}

/* ---- columns ----
 * A CNN on one device is a long chain: dot stacks its ranks, PP-OCR's detector was 743 x 9885 px
 * and its classifier 832 x 7445.  Such a picture is wrapped into columns, numbered, read from
 * column 1 on: a node's rank is its longest path from the sources (over edges forward in model
 * order); the clusters directly inside the device (call instances, fusion groups: units) go
 * whole, in model order, into a column until one would make it taller than t ranks; an edge
 * between two columns does not constrain the ranking (constraint=false); the columns are
 * clusters without a border, their first operators under invisible nodes on one rank
 * (newrank) that keep them in order where dot can.  A picture wraps when its estimated height
 * passes COL_TALL_PT (3200 px at 96 dpi), and t is the one whose columns make the estimated
 * picture's longer side least: height = the tallest column's ranks x COL_RANK_PT (measured:
 * 65-69 pt a rank with edge labels in 8B decode, 70B --tp 8, PP-OCR cls and det; 45 pt without
 * labels, 8B --expand of 16 layers), width = columns x (COL_WIDTH_FACTOR x the widest rank's
 * operators + COL_PAD_PT), an operator being its longest label line at COL_CHAR_PT a character
 * (Helvetica 10 pt digits and capitals: 5.6-6.7 pt) plus margins; the drawn column is 1.5-2.9
 * times that (cluster margins and titles, edge labels and skip edges beside the chain: the
 * same six pictures).  Only pictures whose operators are on one device wrap into columns (the
 * clusters of several devices would cross them); those of several wrap into rows (below). */
enum { COL_MAX = 8, COL_MIN_RANKS = 8 };
#define COL_RANK_PT 82.0
#define COL_RANK_NOLABEL_PT 45.0
#define COL_TALL_PT 2400.0
#define COL_CHAR_PT 5.6
#define COL_WIDTH_FACTOR 1.5
#define COL_PAD_PT 60.0

/* The estimated width in points of node v's label (its longest line, as draw_node writes it). */
static double label_width(const VizNode *v)
{
	size_t w = strlen(v->op) + (v->precision ? strlen(v->precision) : 1) + 3 + (v->shards > 1 ? 4 : 0);
	if (v->kind == VN_INPUT || v->kind == VN_OUTPUT)
		w = strlen(v->op) + 7 + (v->op_last ? strlen(v->op_last) : 0);
	if (v->shape && strlen(v->shape) > w)
		w = strlen(v->shape);
	if (v->note && strlen(v->note) > w)
		w = strlen(v->note);
	return (double)w * COL_CHAR_PT + 12.0 + 18.0;   /* margins 2 x 0.08 in, nodesep 0.25 in */
}

/* The key of the cluster that node v belongs to directly inside its device ("" for none). */
static void unit_key(const VizNode *v, int i, char *buf, size_t n)
{
	if (*v->instance)
		snprintf(buf, n, "i %s", v->instance);
	else if (v->group >= 0 && v->fusion)
		snprintf(buf, n, "g %lld", (long long)v->group);
	else
		snprintf(buf, n, "n %d", i);
}

/* A picture's operators for wrapping: per node its predecessors earlier in model order (CSR), its
 * unit (the cluster directly inside the device; -1: an input, an output or hidden) and per unit
 * the longest path inside it. */
typedef struct Wrap {
	int n, nunits;
	int *start, *pred, *unit, *depth;
	int *ucol, *r;       /* pack_columns' scratch: per unit its column, per node its rank in its column */
	double *lw;          /* per node: its label's estimated width (label_width) */
	double *cw;          /* pack_columns' scratch: per column and rank the widths, COL_MAX x (n + 1) */
} Wrap;

static int is_op(const VizNode *v) { return !v->hidden && v->kind != VN_INPUT && v->kind != VN_OUTPUT; }

/* Puts the units into columns in model order, a new column when a unit would make the current one
 * taller than t ranks and that one is half full (a unit is never split); col[] per node, head[] per column its first node of
 * rank 0, *tallest the most ranks of a column, *width the estimated width of the columns side
 * by side (each: COL_WIDTH_FACTOR x its widest rank + COL_PAD_PT).  Returns the number of
 * columns. */
static int pack_columns(Wrap *w, int t, int *col, int *head, int *tallest, double *width)
{
	int c = 0, height = 0;
	*tallest = 0;
	for (size_t x = 0; x < (size_t)COL_MAX * (size_t)(w->n + 1); x++)
		w->cw[x] = 0;
	for (int u = 0; u < w->nunits; u++)
		w->ucol[u] = -1;
	for (int k = 0; k < COL_MAX; k++)
		head[k] = -1;
	for (int i = 0; i < w->n; i++) {
		if (w->unit[i] < 0)
			continue;
		int u = w->unit[i];
		if (w->ucol[u] < 0) {
			int ri = 0;
			for (int j = w->start[i]; j < w->start[i + 1]; j++)
				if (w->unit[w->pred[j]] >= 0 && col[w->pred[j]] == c && w->r[w->pred[j]] + 1 > ri)
					ri = w->r[w->pred[j]] + 1;
			if (ri > 0 && 2 * height >= t && ri + w->depth[u] > t && c + 1 < COL_MAX)
				c++, height = 0;
			w->ucol[u] = c;
		}
		col[i] = w->ucol[u];
		w->r[i] = 0;
		for (int j = w->start[i]; j < w->start[i + 1]; j++)
			if (w->unit[w->pred[j]] >= 0 && col[w->pred[j]] == col[i] && w->r[w->pred[j]] + 1 > w->r[i])
				w->r[i] = w->r[w->pred[j]] + 1;
		if (col[i] == c && w->r[i] + 1 > height)
			height = w->r[i] + 1;
		if (w->r[i] + 1 > *tallest)
			*tallest = w->r[i] + 1;
		if (head[col[i]] < 0 || w->r[i] < w->r[head[col[i]]])
			head[col[i]] = i;
		w->cw[(size_t)col[i] * (size_t)(w->n + 1) + (size_t)w->r[i]] += w->lw[i];
	}
	*width = 0;
	for (int k = 0; k <= c; k++) {
		double m = 0;
		for (int r = 0; r <= w->n; r++)
			m = fmax(m, w->cw[(size_t)k * (size_t)(w->n + 1) + (size_t)r]);
		*width += COL_WIDTH_FACTOR * m + COL_PAD_PT;
	}
	return c + 1;
}

/* The column of each shown node in col[] and the first operator of each column in head[];
 * returns K, 1 for none. */
static int wrap_columns(const VizGraph *g, int big, int *col, int *head)
{
	int dev = -2, n = g->nnodes, k = 1;
	for (int i = 0; i < n; i++) {
		const VizNode *v = &g->nodes[i];
		col[i] = 0;
		if (!is_op(v))
			continue;
		if (dev != -2 && v->device != dev)
			return 1;
		dev = v->device;
	}
	if (dev == -2)
		return 1;
	Wrap w = { n, 0, calloc((size_t)n + 2, sizeof(int)), calloc((size_t)g->nedges + 1, sizeof(int)),
		   calloc((size_t)n + 1, sizeof(int)), calloc((size_t)n + 1, sizeof(int)), calloc((size_t)n + 1, sizeof(int)),
		   calloc((size_t)n + 1, sizeof(int)), calloc((size_t)n + 1, sizeof(double)),
		   calloc((size_t)COL_MAX * (size_t)(n + 1), sizeof(double)) };
	int *rank = calloc((size_t)n + 1, sizeof *rank), *fill = calloc((size_t)n + 1, sizeof *fill), *d = calloc((size_t)n + 1, sizeof *d);
	double *width = calloc((size_t)n + 1, sizeof *width);
	int cap = 1;
	while (cap < 2 * n + 2)
		cap *= 2;
	int *slot = calloc((size_t)cap, sizeof *slot);
	char **key = calloc((size_t)n + 1, sizeof *key);
	if (!w.start || !w.pred || !w.unit || !w.depth || !w.ucol || !w.r || !w.lw || !w.cw || !rank || !fill || !d || !width || !slot || !key)
		goto out;
	for (int e = 0; e < g->nedges; e++) {   /* predecessors: the edges forward in model order */
		const VizEdge *ed = &g->edges[e];
		if (!g->nodes[ed->src].hidden && !g->nodes[ed->dst].hidden && ed->src < ed->dst)
			w.start[ed->dst + 1]++;
	}
	for (int i = 0; i < n; i++)
		w.start[i + 1] += w.start[i];
	for (int e = 0; e < g->nedges; e++) {
		const VizEdge *ed = &g->edges[e];
		if (!g->nodes[ed->src].hidden && !g->nodes[ed->dst].hidden && ed->src < ed->dst)
			w.pred[w.start[ed->dst] + fill[ed->dst]++] = ed->src;
	}
	for (int i = 0; i < cap; i++)
		slot[i] = -1;
	int nranks = 0;
	for (int i = 0; i < n; i++) {   /* ranks of the unwrapped picture, units and their depths */
		const VizNode *v = &g->nodes[i];
		w.unit[i] = -1;
		if (v->hidden)
			continue;
		for (int j = w.start[i]; j < w.start[i + 1]; j++)
			rank[i] = rank[w.pred[j]] + 1 > rank[i] ? rank[w.pred[j]] + 1 : rank[i];
		nranks = rank[i] + 1 > nranks ? rank[i] + 1 : nranks;
		if (!is_op(v))
			continue;   /* dot ranks an input just above its reader: no width of rank 0 */
		w.lw[i] = label_width(v);
		width[rank[i]] += w.lw[i];
		char kb[300];
		unit_key(v, i, kb, sizeof kb);
		int s = (int)(viz_hash(kb) & (size_t)(cap - 1));
		while (slot[s] >= 0 && strcmp(key[slot[s]], kb) != 0)
			s = (s + 1) & (cap - 1);
		if (slot[s] < 0) {
			slot[s] = w.nunits;
			key[w.nunits++] = strdup(kb);
		}
		int u = w.unit[i] = slot[s];
		for (int j = w.start[i]; j < w.start[i + 1]; j++)
			if (w.unit[w.pred[j]] == u && d[w.pred[j]] + 1 > d[i])
				d[i] = d[w.pred[j]] + 1;
		w.depth[u] = d[i] + 1 > w.depth[u] ? d[i] + 1 : w.depth[u];
	}
	double wmax = 0;
	for (int r = 0; r < nranks; r++)
		wmax = width[r] > wmax ? width[r] : wmax;
	double rank_pt = big ? COL_RANK_NOLABEL_PT : COL_RANK_PT, wcol = COL_WIDTH_FACTOR * wmax + COL_PAD_PT;
	if (nranks < 2 * COL_MIN_RANKS || (double)nranks * rank_pt <= COL_TALL_PT)
		goto out;
	/* the column height t whose packing makes the picture's longer side least (the unwrapped
	 * picture: t = nranks); the least t of equal ones */
	int best_t = nranks, tallest, cols[COL_MAX + 1] = { 0 };
	double best = fmax((double)nranks * rank_pt, wcol), wide, side[COL_MAX + 1];
	for (int c = 0; c <= COL_MAX; c++)   /* per number of columns: the least longer side */
		side[c] = 0;
	for (int t = COL_MIN_RANKS; t < nranks; t++) {
		int nc = pack_columns(&w, t, col, head, &tallest, &wide);
		double s = fmax((double)tallest * rank_pt, wide);
		if (nc > 1 && (!side[nc] || s < side[nc]))
			side[nc] = s, cols[nc] = t;
		best = nc > 1 && s < best ? s : best;
	}
	/* the fewest columns within 10 % of the best (a unit taller than a column's share sets the
	 * height whatever the number of columns) */
	for (int c = 2; c <= COL_MAX && best_t == nranks; c++)
		if (side[c] && side[c] <= 1.1 * best && side[c] < fmax((double)nranks * rank_pt, wcol))
			best_t = cols[c];
	if (best_t == nranks)
		goto out;
	k = pack_columns(&w, best_t, col, head, &tallest, &wide);
	for (int e = 0; e < g->nedges; e++) {   /* an input or output: the column of its operator */
		const VizEdge *ed = &g->edges[e];
		const VizNode *a = &g->nodes[ed->src], *b = &g->nodes[ed->dst];
		if (a->hidden || b->hidden)
			continue;
		if (a->kind == VN_INPUT && is_op(b))
			col[ed->src] = col[ed->dst] < col[ed->src] || col[ed->src] == 0 ? col[ed->dst] : col[ed->src];
		if (b->kind == VN_OUTPUT && is_op(a))
			col[ed->dst] = col[ed->src];
	}
out:
	if (k <= 1)
		for (int i = 0; i < n; i++)
			col[i] = 0;
	for (int i = 0; key && i < w.nunits; i++)
		free(key[i]);
	free(key), free(slot), free(width), free(d), free(fill), free(rank);
	free(w.start), free(w.pred), free(w.unit), free(w.depth), free(w.ucol), free(w.r), free(w.lw), free(w.cw);
	return k;
}

/* The columns in order, left to right, where dot's crossing minimisation allows: an invisible node
 * per column on one rank above the columns (flat edges between top-level nodes keep their
 * order, those between clusters do not), each with an invisible edge to its column's first
 * operator.  Crossings can still pull a column out of order (8B --expand of 8 layers: columns 1,
 * 3, 2; the PP-OCR recogniser: 1, 2, 4, 3), hence the numbered column titles. */
static void align_columns(Agraph_t *root, Agnode_t **nodes, const int *head, int k)
{
	Agraph_t *s = agsubg(root, "columns", 1);
	set(s, "rank", "same");
	Agnode_t *prev = NULL;
	for (int c = 0; c < k; c++) {
		char name[32];
		snprintf(name, sizeof name, "col%d", c);
		Agnode_t *top = agnode(s, name, 1);
		set(top, "style", "invis");
		set(top, "shape", "point");
		set(top, "width", "0");
		set(top, "height", "0");
		set(top, "label", "");
		if (prev)
			set(agedge(s, prev, top, NULL, 1), "style", "invis");
		if (head[c] >= 0)
			set(agedge(root, top, nodes[head[c]], NULL, 1), "style", "invis");
		prev = top;
	}
}

/* ---- rows ----
 * Several devices' operators side by side (an --expand of a tensor-parallel layer: 70B --tp 8
 * --focus layer#3 --expand was 10,133 x 1,316 pt) are wrapped into rows of devices, numbered in
 * the caption, read from row 1 on: each device cluster keeps its chain whole, and the devices go
 * in plan order K to a row, each row under the one before (stack_rows).  An edge between two rows (a collective's, an input's) does not
 * constrain the ranking and carries its label as tooltip (as between columns).  A picture wraps
 * when its estimated width passes COL_TALL_PT, and K is the one whose rows make the estimated
 * picture's longer side least (the fewest rows within 10 % of it): a device's width is
 * COL_WIDTH_FACTOR x its widest rank + COL_PAD_PT and a row's height the picture's ranks x
 * COL_RANK_PT (or COL_RANK_NOLABEL_PT), the estimates of the columns above. */
typedef struct Rows {
	int k, n;            /* devices per row, rows (1: not wrapped) */
	int *row;            /* per node: its row */
	int *first;          /* per device: its operator of least rank, or -1 (not shown) */
	int *order;          /* the shown devices in plan order, n_used of them */
	int nused;
} Rows;

static void rows_free(Rows *r)
{
	free(r->row), free(r->first), free(r->order);
	memset(r, 0, sizeof *r);
	r->k = r->n = 1;
}

/* Fills r for g (0; r->n 1 when the picture is not wrapped), or -1 out of memory. */
static int wrap_rows(const VizGraph *g, int big, Rows *r)
{
	int n = g->nnodes, nd = g->ndevs;
	memset(r, 0, sizeof *r);
	r->k = r->n = 1;
	r->row = calloc((size_t)n + 1, sizeof *r->row);
	r->first = malloc(((size_t)nd + 1) * sizeof *r->first);
	r->order = calloc((size_t)nd + 1, sizeof *r->order);
	int *rank = calloc((size_t)n + 1, sizeof *rank), nranks = 0;
	double *cw = NULL, *wd = calloc((size_t)nd + 1, sizeof *wd);
	if (!r->row || !r->first || !r->order || !rank || !wd) {
		free(rank), free(wd);
		rows_free(r);
		return -1;
	}
	for (int d = 0; d < nd; d++)
		r->first[d] = -1;
	/* ranks: the longest path over the edges forward in model order, node by node */
	int *start = calloc((size_t)n + 2, sizeof *start), *pred = calloc((size_t)g->nedges + 1, sizeof *pred),
	    *fill = calloc((size_t)n + 1, sizeof *fill);
	if (!start || !pred || !fill) {
		free(start), free(pred), free(fill), free(rank), free(wd);
		rows_free(r);
		return -1;
	}
	for (int e = 0; e < g->nedges; e++) {
		const VizEdge *ed = &g->edges[e];
		if (!g->nodes[ed->src].hidden && !g->nodes[ed->dst].hidden && ed->src < ed->dst)
			start[ed->dst + 1]++;
	}
	for (int i = 0; i < n; i++)
		start[i + 1] += start[i];
	for (int e = 0; e < g->nedges; e++) {
		const VizEdge *ed = &g->edges[e];
		if (!g->nodes[ed->src].hidden && !g->nodes[ed->dst].hidden && ed->src < ed->dst)
			pred[start[ed->dst] + fill[ed->dst]++] = ed->src;
	}
	for (int i = 0; i < n; i++)
		for (int j = start[i]; j < start[i + 1]; j++)
			rank[i] = rank[pred[j]] + 1 > rank[i] ? rank[pred[j]] + 1 : rank[i];
	free(start), free(pred), free(fill);
	for (int i = 0; i < n; i++) {
		const VizNode *v = &g->nodes[i];
		if (!is_op(v) || v->device < 0 || v->device >= nd)
			continue;
		nranks = rank[i] + 1 > nranks ? rank[i] + 1 : nranks;
		int d = v->device;
		if (r->first[d] < 0 || rank[i] < rank[r->first[d]])
			r->first[d] = i;
	}
	for (int d = 0; d < nd; d++)
		if (r->first[d] >= 0)
			r->order[r->nused++] = d;
	cw = r->nused > 1 ? calloc((size_t)nd * (size_t)(nranks + 1) + 1, sizeof *cw) : NULL;
	if (!cw)
		goto out;
	for (int i = 0; i < n; i++) {   /* per device and rank: the operators' widths */
		const VizNode *v = &g->nodes[i];
		if (is_op(v) && v->device >= 0 && v->device < nd)
			cw[(size_t)v->device * (size_t)(nranks + 1) + (size_t)rank[i]] += label_width(v);
	}
	double total = 0;
	for (int j = 0; j < r->nused; j++) {
		int d = r->order[j];
		double m = 0;
		for (int k = 0; k <= nranks; k++)
			m = fmax(m, cw[(size_t)d * (size_t)(nranks + 1) + (size_t)k]);
		wd[d] = COL_WIDTH_FACTOR * m + COL_PAD_PT;
		total += wd[d];
	}
	double h = (double)nranks * (big ? COL_RANK_NOLABEL_PT : COL_RANK_PT), flat = fmax(total, h);
	if (total <= COL_TALL_PT)
		goto out;
	double side[COL_MAX + 2] = { 0 }, best = flat;
	for (int k = r->nused - 1; k >= 1; k--) {   /* k devices a row */
		int rows = (r->nused + k - 1) / k;
		if (rows > COL_MAX)
			break;
		double wide = 0, row = 0;
		for (int j = 0; j < r->nused; j++) {
			row = j % k == 0 ? wd[r->order[j]] : row + wd[r->order[j]];
			wide = fmax(wide, row);
		}
		side[rows] = fmax(wide, (double)rows * h);
		best = fmin(best, side[rows]);
	}
	for (int rows = 2; rows <= COL_MAX && r->n == 1; rows++)
		if (side[rows] > 0 && side[rows] <= 1.1 * best && side[rows] < flat) {
			r->n = rows;
			r->k = (r->nused + rows - 1) / rows;
			r->n = (r->nused + r->k - 1) / r->k;
		}
	if (r->n == 1)
		goto out;
	for (int i = 0; i < n; i++) {
		const VizNode *v = &g->nodes[i];
		if (v->device >= 0 && v->device < nd && r->first[v->device] >= 0) {
			for (int j = 0; j < r->nused; j++)
				if (r->order[j] == v->device)
					r->row[i] = j / r->k;
		}
	}
	for (int i = 0; i < n; i++)
		if (g->nodes[i].kind == VN_INPUT)
			r->row[i] = r->n;
	for (int e = 0; e < g->nedges; e++) {   /* an input: its first reader's row; an output: its writer's */
		const VizEdge *ed = &g->edges[e];
		const VizNode *a = &g->nodes[ed->src], *b = &g->nodes[ed->dst];
		if (a->hidden || b->hidden)
			continue;
		if (a->kind == VN_INPUT && is_op(b) && r->row[ed->dst] < r->row[ed->src])
			r->row[ed->src] = r->row[ed->dst];
		if (b->kind == VN_OUTPUT && is_op(a))
			r->row[ed->dst] = r->row[ed->src];
	}
	for (int i = 0; i < n; i++)
		if (g->nodes[i].kind == VN_INPUT && r->row[i] == r->n)
			r->row[i] = 0;
out:
	free(cw), free(wd), free(rank);
	return 0;
}

/* Each row below the one before: an invisible edge from every last operator of the row above (one
 * whose result no operator of its device reads) to every first operator of the row below (one
 * that reads no operator of its row: its operands come from other rows, by edges that do not
 * constrain).  Not one separator node between the rows: the edges crossing between the rows
 * have a virtual node on each rank they pass, and dot put the separator beside them, widening
 * the picture by half (70B --tp 8 --focus layer#3 --expand: 6190 pt where the rows are 4310). */
static void stack_rows(Agraph_t *root, Agnode_t **nodes, const VizGraph *g, const Rows *r)
{
	int n = g->nnodes;
	unsigned char *last = calloc((size_t)n + 1, 1), *first = calloc((size_t)n + 1, 1);
	if (!last || !first) {
		free(last), free(first);
		return;
	}
	for (int i = 0; i < n; i++)
		last[i] = first[i] = nodes[i] && is_op(&g->nodes[i]);
	for (int e = 0; e < g->nedges; e++) {
		const VizEdge *ed = &g->edges[e];
		const VizNode *a = &g->nodes[ed->src], *b = &g->nodes[ed->dst];
		if (!is_op(a) || !is_op(b))
			continue;
		if (a->device == b->device)
			last[ed->src] = 0;
		if (r->row[ed->src] == r->row[ed->dst])
			first[ed->dst] = 0;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; last[i] && j < n; j++)
			if (first[j] && r->row[j] == r->row[i] + 1)
				set(agedge(root, nodes[i], nodes[j], NULL, 1), "style", "invis");
	free(last), free(first);
}

/* The graph's caption: the title and how to read the colours. */
static void caption(Agraph_t *root, const VizGraph *g, const unsigned char *used, int big, int columns, const Rows *rows)
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
	n += (size_t)snprintf(s + n, sizeof s - n, ")%s%s", g->from_plan ? "; bold red: transfers and collectives" : "",
			      big ? "\\nedges without a label carry their source's output (bytes: the edge's tooltip)" : "");
	if (columns > 1 && n < sizeof s)
		n += (size_t)snprintf(s + n, sizeof s - n, "\\nin %d columns: read each top to bottom, from column 1 on", columns);
	if (rows->n > 1 && n < sizeof s)
		snprintf(s + n, sizeof s - n, "\\nin %d rows of up to %d devices, read from the top row on; an edge "
			 "between rows carries its label as tooltip", rows->n, rows->k);
	set(root, "label", s);
}

/* ---- deterministic object IDs ----
 * cgraph orders subgraphs, nodes and edges by object ID when it writes a graph, and its default
 * ID discipline uses the address of the interned name as the ID of a named object, so the DOT
 * text would depend on the heap layout (seen: a different input path reordered clusters).  This
 * discipline numbers objects in creation order instead: named objects get even IDs (the same
 * name, the same ID, as cgraph requires), anonymous ones odd IDs. */
typedef struct IdState {
	Agraph_t *g;         /* the root graph, whose string pool holds the names */
	char **names;        /* names[k] has ID 2k+2 (agstrdup'd: cgraph inspects their headers) */
	size_t n, cap;
	size_t *slot;        /* open-addressing table of name indices + 1 */
	size_t nslot;
	IDTYPE anon;         /* next odd ID */
} IdState;

static void *id_open(Agraph_t *g, Agdisc_t *d)
{
	(void)d;
	IdState *st = calloc(1, sizeof *st);
	if (st) {
		st->g = g;
		st->anon = 1;
	}
	return st;
}

/* The slot of name in the table (empty if absent). */
static size_t *id_find(IdState *st, const char *name)
{
	size_t i = viz_hash(name) & (st->nslot - 1);
	while (st->slot[i] && strcmp(st->names[st->slot[i] - 1], name) != 0)
		i = (i + 1) & (st->nslot - 1);
	return &st->slot[i];
}

static int id_grow(IdState *st)
{
	size_t nslot = st->nslot ? st->nslot * 2 : 256;
	size_t *slot = calloc(nslot, sizeof *slot);
	char **names = realloc(st->names, nslot / 2 * sizeof *names);
	if (!slot || !names) {
		free(slot);
		if (names)
			st->names = names;
		return -1;
	}
	st->names = names;
	st->cap = nslot / 2;
	free(st->slot);
	st->slot = slot;
	st->nslot = nslot;
	for (size_t k = 0; k < st->n; k++)
		*id_find(st, st->names[k]) = k + 1;
	return 0;
}

static long id_map(void *state, int objtype, char *str, IDTYPE *id, int createflag)
{
	(void)objtype;
	IdState *st = state;
	if (!str) {
		*id = st->anon;
		st->anon += 2;
		return 1;
	}
	if (st->nslot && *id_find(st, str)) {
		*id = (IDTYPE)(*id_find(st, str) * 2);
		return 1;
	}
	if (!createflag)
		return 0;
	if ((st->n + 1) * 2 > st->nslot && id_grow(st) < 0)
		return 0;
	char *copy = agstrdup(st->g, str);
	if (!copy)
		return 0;
	st->names[st->n++] = copy;
	*id_find(st, str) = st->n;
	*id = (IDTYPE)(st->n * 2);
	return 1;
}

static long id_alloc(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id;
	return 1;
}

static void id_free(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id;
}

static char *id_print(void *state, int objtype, IDTYPE id)
{
	(void)objtype;
	IdState *st = state;
	return id % 2 == 0 && id / 2 >= 1 && id / 2 <= st->n ? st->names[id / 2 - 1] : NULL;
}

static void id_close(void *state)
{
	IdState *st = state;
	free(st->names);     /* the strings belong to the graph's pool, freed after this */
	free(st->slot);
	free(st);
}

static void id_register(void *state, int objtype, void *obj)
{
	(void)state;
	(void)objtype;
	(void)obj;
}

static Agiddisc_t id_disc = { id_open, id_map, id_alloc, id_free, id_print, id_close, id_register };
static Agdisc_t graph_disc = { &AgMemDisc, &id_disc, &AgIoDisc };

static Agraph_t *build(const VizGraph *g)
{
	Agraph_t *root = agopen("aicc", Agdirected, &graph_disc);
	set(root, "rankdir", "TB");
	set(root, "labelloc", "t");
	set(root, "fontname", "Helvetica");
	set(root, "ranksep", "0.2");   /* dot halves it where edges have labels; 0.3 drew 8B decode 6 % taller */
	set(root, "nodesep", "0.25");
	/* network simplex (ranking, then x coordinates in rank2) is what takes minutes on big
	 * graphs: bound its iterations to a few per node; small graphs converge before the limit */
	set(root, "nslimit", "2");
	set(root, "nslimit1", "2");
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
	int nn, ne, head[COL_MAX];
	viz_shown(g, &nn, &ne);
	for (int c = 0; c < COL_MAX; c++)
		head[c] = -1;
	int *col = calloc((size_t)g->nnodes + 1, sizeof *col);
	int k = col ? wrap_columns(g, nn > VIZ_LABEL_NODES, col, head) : 1;
	Rows rows = { .k = 1, .n = 1 };   /* a picture wrapped into columns is on one device */
	if (k <= 1 && wrap_rows(g, nn > VIZ_LABEL_NODES, &rows) < 0) {
		free(col), free(nodes);
		agclose(root);
		return NULL;
	}
	Draw dr = { g, root, device_labels(g), 1, col, k };
	for (int i = 0; i < g->nnodes; i++) {
		const char *st = strstr(g->nodes[i].callee, ".stage");
		if (st && atoi(st + 6) + 1 > dr.stages)
			dr.stages = atoi(st + 6) + 1;
	}
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i].hidden)
			continue;
		nodes[i] = draw_node(&dr, i);
		for (size_t k = 0; g->nodes[i].precision && k < sizeof used; k++)
			if (strncmp(g->nodes[i].precision, prec_color[k].prefix, strlen(prec_color[k].prefix)) == 0) {
				used[k] = 1;
				break;
			}
	}
	for (int i = 0; i < g->nedges; i++)
		if (nodes[g->edges[i].src] && nodes[g->edges[i].dst])
			draw_edge(root, nodes, &g->edges[i], nn > VIZ_LABEL_NODES, (col && col[g->edges[i].src] != col[g->edges[i].dst]) ||
				  (rows.row && rows.row[g->edges[i].src] != rows.row[g->edges[i].dst]));
	if (k > 1) {
		set(root, "newrank", "true");
		align_columns(root, nodes, head, k);
	}
	if (rows.n > 1) {
		set(root, "newrank", "true");   /* rank across the clusters: a row's separator between a device's nodes */
		stack_rows(root, nodes, g, &rows);
	}
	caption(root, g, used, nn > VIZ_LABEL_NODES || k > 1 || rows.n > 1, k, &rows);
	rows_free(&rows);
	free(col);
	for (int d = 0; dr.dev_label && d < g->ndevs; d++)
		free(dr.dev_label[d]);
	free(dr.dev_label);
	free(nodes);
	return root;
}

/* Lays out root with dot and renders it into f, in a gvc context of its own; 0, or -1.  The
 * context is made here, in the process that lays out (render_limited's child): gvContext reads
 * Graphviz's plugin list into a buffer that libgvc never frees, not even in gvFreeContext
 * (gvconfig, testsuite/lsan.supp), so the process that exits through LeakSanitizer makes none. */
static int render(Agraph_t *root, VizFormat fmt, FILE *f)
{
	char *data = NULL;
	unsigned int len = 0;
	GVC_t *gvc = gvContext();
	if (!gvc)
		return -1;
	int laid = gvLayout(gvc, root, "dot") == 0, rc = laid ? 0 : -1;
	if (rc == 0 && gvRenderData(gvc, root, fmt == VIZ_SVG ? "svg" : "png", &data, &len) != 0)
		rc = -1;
	if (rc == 0 && fwrite(data, 1, len, f) != len)
		rc = -1;
	if (data)
		gvFreeRenderData(data);
	if (laid)
		gvFreeLayout(gvc, root);
	gvFreeContext(gvc);
	return rc;
}

static double mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* render() in a child process, so that a layout past the budget can be stopped (Graphviz has
 * no way to interrupt gvLayout); the child writes f's file.  0, -1, or -2 past the budget. */
static int render_limited(Agraph_t *root, VizFormat fmt, FILE *f, const VizLayout *lay)
{
	fflush(f);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return render(root, fmt, f);   /* no process to spare: lay out here, unlimited */
	if (pid == 0) {
		int rc = render(root, fmt, f);
		rc |= fflush(f) != 0;
		_exit(rc ? 1 : 0);
	}
	double start = mono();
	int status = 0;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		double t = mono() - start;
		if (lay->budget_s > 0 && t > lay->budget_s) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return -2;
		}
		if (lay->tick)
			lay->tick(lay->ctx, lay->what ? lay->what : "laying out the picture", (int64_t)t, 0);
		struct timespec nap = { 0, 20 * 1000 * 1000 };
		nanosleep(&nap, NULL);
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "aicc: error: the layout process was killed by signal %d%s\n", WTERMSIG(status),
			WTERMSIG(status) == SIGKILL ? " (out of memory?)" : "");
		return -3;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int viz_write(const VizGraph *g, VizFormat fmt, FILE *f, const VizLayout *lay)
{
	Agraph_t *root = build(g);
	int rc = root ? 0 : -1;
	if (rc == 0 && fmt == VIZ_DOT)
		rc = agwrite(root, f) == EOF ? -1 : 0;
	else if (rc == 0)
		rc = lay && (lay->budget_s > 0 || lay->tick) ? render_limited(root, fmt, f, lay) : render(root, fmt, f);
	if (rc == -2) {
		int nn, ne;
		viz_shown(g, &nn, &ne);
		fprintf(stderr, "aicc: error: laying out the picture (%d nodes, %d edges) took longer than %g s\n", nn, ne,
			lay->budget_s);
	} else if (rc == -1)
		fprintf(stderr, "aicc: error: graphviz could not %s the picture\n", fmt == VIZ_DOT ? "write" : "lay out or render");
	if (root)
		agclose(root);
	return rc == -2 ? -2 : rc < 0 ? -1 : 0;
}
