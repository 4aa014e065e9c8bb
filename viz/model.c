/* viz/model.c: the picture model's storage (viz/model.h), collapsing (viz_collapse) and focus.
 *
 * Collapsing, in order: (1) inputs and outputs that only one call instance reads or writes join
 * it, on the device of their reader or writer (decode's past_key.N / present_value.N); (2)
 * shards: nodes of one instance on different devices whose names differ only in a shard marker
 * (viz_shard_key), and inputs or outputs of one name, fold into the first; (3) a flat graph's
 * tandem-repeated blocks (a chain of equal-shape copies) become synthetic instances; (4) runs:
 * the members of an instance ("layer#7") are its shown nodes in order; instances of one callee
 * are visited in the order they first appear, and a run is a maximal sequence of them whose
 * members agree one for one in operator, precision, shards and output shape, with either the same devices throughout (a pipeline that puts
 * layers 1-63 on one GPU and 64-126 on another keeps two runs) or every instance on other
 * devices of the same kind (an LPU plan that gives every layer its own chips: one run).  Member
 * k of every later instance of a run is drawn as member k of the first (rep), which counts the
 * run; attached inputs and outputs fold alike when every instance has the same ones, else they
 * go back to the top level.  Edges are remapped through rep; an edge between two instances of one
 * run (the value carried from iteration i to i+1) disappears, duplicates merge (bold if any was
 * a transfer, counting the distinct links). */
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
	g->devs[g->ndevs].chips = 1;
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
	n->shards = 1;
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
		free(n->instance), free(n->callee), free(n->fusion), free(n->op_last);
	}
	for (int i = 0; i < g->nedges; i++)
		free(g->edges[i].type), free(g->edges[i].link);
	free(g->devs), free(g->nodes), free(g->edges), free(g->title);
	memset(g, 0, sizeof *g);
}

/* ---- collapsing ---- */
typedef struct Inst {
	char *name, *callee;         /* copies: fold_repeats may move a node out of its instance */
	int *members; int n, cap;    /* operators and collectives, in model order */
	int *io; int nio, capio;     /* inputs and outputs attached to the instance */
	int run;             /* index of the run's first instance */
	int mode;            /* in a run's first instance: 0 one instance so far, 1 same devices, 2 a device step */
} Inst;

static int is_io(const VizNode *v) { return v->kind == VN_INPUT || v->kind == VN_OUTPUT; }

static int64_t inst_number(const char *instance)
{
	const char *h = strrchr(instance, '#');
	return h ? strtoll(h + 1, NULL, 10) : 0;
}

static const char *kind_of(const VizGraph *g, int dev) { return dev >= 0 ? g->devs[dev].kind : ""; }

/* How instance b's members relate to those of a, the instance before it in its run: 0 unlike,
 * 1 alike on the same devices, 2 alike with every member on another device of the same kind
 * (a pipeline that gives each layer its own chips). */
static int same_members(const VizGraph *g, const Inst *a, const Inst *b)
{
	if (a->n != b->n || strcmp(a->callee, b->callee) != 0)
		return 0;
	int same = 1, step = 1;
	for (int k = 0; k < a->n; k++) {
		const VizNode *x = &g->nodes[a->members[k]], *y = &g->nodes[b->members[k]];
		if (x->kind != y->kind || x->shards != y->shards || strcmp(x->op, y->op) ||
		    strcmp(x->precision ? x->precision : "", y->precision ? y->precision : "") ||
		    strcmp(x->shape ? x->shape : "", y->shape ? y->shape : ""))
			return 0;
		same &= x->device == y->device;
		step &= x->device != y->device && strcmp(kind_of(g, x->device), kind_of(g, y->device)) == 0;
	}
	return same ? 1 : step ? 2 : 0;
}

/* What an attached input or output must match in the other instances of its run: kind, shards,
 * type and name with its numbers as '#' ("past_key.#"), in buf. */
static void io_sig(const VizNode *v, char *buf, size_t n)
{
	size_t o = (size_t)snprintf(buf, n, "%d %d %s ", v->kind, v->shards, v->shape ? v->shape : "");
	for (const char *c = v->op; *c && o + 2 < n; c++) {
		if (*c >= '0' && *c <= '9') {
			while (c[1] >= '0' && c[1] <= '9')
				c++;
			buf[o++] = '#';
		} else
			buf[o++] = *c;
	}
	buf[o < n ? o : n - 1] = 0;
}

/* The instances of g's shown nodes in order of first appearance; inst[i] gets each node's
 * instance index (-1 at the top level or hidden). */
static Inst *gather(VizGraph *g, int *ninst, int *inst)
{
	Inst *in = NULL;
	int n = 0, cap = 0;
	for (int i = 0; i < g->nnodes; i++) {
		VizNode *v = &g->nodes[i];
		inst[i] = -1;
		if (!*v->instance || v->hidden)
			continue;
		int k = n - 1;
		while (k >= 0 && strcmp(in[k].name, v->instance) != 0)
			k--;
		if (k < 0) {
			in = vz_grow(in, &cap, n, sizeof *in);
			in[n].name = vz_strdup(v->instance), in[n].callee = vz_strdup(v->callee), in[n].run = n;
			k = n++;
		}
		if (is_io(v)) {
			in[k].io = vz_grow(in[k].io, &in[k].capio, in[k].nio, sizeof(int));
			in[k].io[in[k].nio++] = i;
		} else {
			in[k].members = vz_grow(in[k].members, &in[k].cap, in[k].n, sizeof(int));
			in[k].members[in[k].n++] = i;
		}
		inst[i] = k;
	}
	*ninst = n;
	return in;
}

/* Inputs and outputs that only one call instance reads or writes join it (on the device of its
 * first reader or its writer), so decode's per-layer KV-cache inputs and outputs collapse with
 * their layer. */
void viz_attach_io(VizGraph *g)
{
	int *peer = vz_alloc(sizeof(int) * (size_t)(g->nnodes + 1));
	for (int i = 0; i < g->nnodes; i++)
		peer[i] = -1;
	for (int e = 0; e < g->nedges; e++) {
		const VizEdge *ed = &g->edges[e];
		int io = is_io(&g->nodes[ed->src]) ? ed->src : is_io(&g->nodes[ed->dst]) ? ed->dst : -1;
		int other = io == ed->src ? ed->dst : ed->src;
		if (io < 0 || is_io(&g->nodes[other]) || g->nodes[other].hidden || peer[io] == -2)
			continue;
		if (peer[io] >= 0 && strcmp(g->nodes[peer[io]].instance, g->nodes[other].instance) != 0)
			peer[io] = -2;
		else if (peer[io] < 0)
			peer[io] = other;
	}
	for (int i = 0; i < g->nnodes; i++) {
		VizNode *v = &g->nodes[i];
		if (!is_io(v) || peer[i] < 0 || !*g->nodes[peer[i]].instance)
			continue;
		const VizNode *p = &g->nodes[peer[i]];
		free(v->instance), free(v->callee);
		v->instance = vz_strdup(p->instance);
		v->callee = vz_strdup(p->callee);
		v->device = p->device;
	}
	free(peer);
}

/* Shards: operators of one instance on different devices whose names differ only in a shard
 * marker (viz_shard_key), and inputs or outputs of one name in one instance (a sharded plan
 * input), fold into the first, which counts them. */
static void fold_shards(VizGraph *g)
{
	int cap = 1;
	while (cap < 2 * g->nnodes + 2)
		cap *= 2;
	int *slot = vz_alloc(sizeof(int) * (size_t)cap);
	char **key = vz_alloc(sizeof(char *) * (size_t)(g->nnodes + 1));
	for (int i = 0; i < cap; i++)
		slot[i] = -1;
	for (int i = 0; i < g->nnodes; i++) {
		VizNode *v = &g->nodes[i];
		char k[600], b[512];
		int marked = !v->hidden && (is_io(v) || viz_shard_key(v->id, b, sizeof b));
		snprintf(k, sizeof k, "%d %s %s|%s", v->kind, v->instance, v->op, is_io(v) ? v->op : b);
		key[i] = vz_strdup(k);
		if ((v->device < 0 && !is_io(v)) || !marked)
			continue;   /* no shard marker: nothing to fold */
		int s = (int)(viz_hash(k) & (size_t)(cap - 1));
		while (slot[s] >= 0 && strcmp(key[slot[s]], k) != 0)
			s = (s + 1) & (cap - 1);
		if (slot[s] < 0) {
			slot[s] = i;
			continue;
		}
		VizNode *r = &g->nodes[slot[s]];
		if (r->device == v->device && !is_io(v))
			continue;
		v->hidden = 1;
		v->rep = slot[s];
		r->shards++;
	}
	for (int i = 0; i < g->nnodes; i++)
		free(key[i]);
	free(key), free(slot);
}

/* ---- repeated blocks of a flat graph ----
 * A graph without call instances (an ONNX CNN) repeats blocks of operators too: PP-OCR's
 * recogniser is 22 times "Conv Mul Add Add Clip Mul Div Mul Add".  A tandem repeat of period p
 * (2..MAX_PERIOD operators in model order) whose copies agree operator for operator (operator,
 * precision, device, shards and output shape), with the same edges inside the block, and each
 * copy reading a value of the copy before it (a chain), becomes call instances "~p.i#1",
 * "~p.i#2", ... of a callee "~p.i" of its own (i: where it starts), which fold_repeats then folds
 * like any repeated layer; two repeats of one period elsewhere in the graph stay two.  A repeat covers MIN_COVER operators at least, or is a repeated
 * fused kernel (Conv+Silu twice: the Conv+BatchNormalization+Silu blocks once BN is folded). */
enum { MAX_PERIOD = 128, MIN_COVER = 6 };

typedef struct Seq {
	const VizGraph *g;
	int *node;           /* the top-level operators in model order */
	int *pos;            /* per node: its index in node[], or -1 */
	int *pstart, *pred;  /* predecessors of each node (CSR by node) */
	int n;
} Seq;

/* Whether operator q2 of the block starting at b2 matches operator q1 of the block at b1. */
static int alike_at(const Seq *sq, int b1, int q1, int b2, int q2)
{
	const VizNode *x = &sq->g->nodes[sq->node[q1]], *y = &sq->g->nodes[sq->node[q2]];
	if (x->kind != y->kind || x->device != y->device || x->shards != y->shards || strcmp(x->op, y->op) ||
	    strcmp(x->precision ? x->precision : "", y->precision ? y->precision : "") ||
	    strcmp(x->shape ? x->shape : "", y->shape ? y->shape : ""))
		return 0;
	int a = sq->node[q1], c = sq->node[q2];
	int na = sq->pstart[a + 1] - sq->pstart[a], nc = sq->pstart[c + 1] - sq->pstart[c];
	if (na != nc)
		return 0;
	/* inside the block, the same predecessors at the same distances (edges are few per node) */
	for (int i = sq->pstart[a]; i < sq->pstart[a + 1]; i++) {
		int pa = sq->pos[sq->pred[i]], da = pa >= b1 && pa < q1 ? q1 - pa : -1, found = 0;
		for (int j = sq->pstart[c]; j < sq->pstart[c + 1] && !found; j++) {
			int pc = sq->pos[sq->pred[j]], dc = pc >= b2 && pc < q2 ? q2 - pc : -1;
			found = dc == da;
		}
		if (!found)
			return 0;
	}
	return 1;
}

static int block_eq(const Seq *sq, int b1, int b2, int p)
{
	for (int t = 0; t < p; t++)
		if (!alike_at(sq, b1, b1 + t, b2, b2 + t))
			return 0;
	return 1;
}

/* Whether the block of p operators at b reads a value of the block just before it (b - p): the
 * copies of a repeat are a chain, not parallel branches that happen to list alike (two MLP heads
 * off one Flatten would else be drawn as one four-deep chain). */
static int reads_previous(const Seq *sq, int b, int p)
{
	for (int q = b; q < b + p; q++) {
		int a = sq->node[q];
		for (int j = sq->pstart[a]; j < sq->pstart[a + 1]; j++) {
			int pq = sq->pos[sq->pred[j]];
			if (pq >= b - p && pq < b)
				return 1;
		}
	}
	return 0;
}

/* Reorders sq->node (and sq->pos) into the depth-first post-order from the sinks, predecessors in
 * operand order: the order an exporter writes a model in.  A plan's schedule may move an operator
 * that a later block needs into an earlier copy (PP-OCR's recogniser computes the final reshape's
 * shape inside its second SVTR block), which breaks a tandem repeat in schedule order; in this
 * order two copies of one block list their operators alike, whatever the schedule did.  Iterative
 * (graphs of 10^5 operators); deterministic. */
static void canonical_order(Seq *sq)
{
	int n = sq->n;
	unsigned char *has_succ = vz_alloc((size_t)n + 1), *seen = vz_alloc((size_t)n + 1);
	for (int q = 0; q < n; q++) {
		int a = sq->node[q];
		for (int j = sq->pstart[a]; j < sq->pstart[a + 1]; j++)
			if (sq->pos[sq->pred[j]] >= 0)
				has_succ[sq->pos[sq->pred[j]]] = 1;
	}
	int *order = vz_alloc(sizeof(int) * (size_t)(n + 1)), norder = 0;
	int *stack = vz_alloc(sizeof(int) * (size_t)(n + 1)), *next = vz_alloc(sizeof(int) * (size_t)(n + 1));
	for (int root = 0; root < n; root++) {
		if (has_succ[root] || seen[root])
			continue;
		int top = 0;
		stack[top++] = root, seen[root] = 1, next[root] = sq->pstart[sq->node[root]];
		while (top) {
			int q = stack[top - 1], a = sq->node[q];
			if (next[q] < sq->pstart[a + 1]) {
				int pq = sq->pos[sq->pred[next[q]++]];
				if (pq >= 0 && !seen[pq])
					seen[pq] = 1, next[pq] = sq->pstart[sq->node[pq]], stack[top++] = pq;
				continue;
			}
			order[norder++] = q;
			top--;
		}
	}
	for (int q = 0; q < n; q++)   /* a cycle cannot happen in a DAG; keep every operator anyway */
		if (!seen[q])
			order[norder++] = q;
	int *node = vz_alloc(sizeof(int) * (size_t)(n + 1));
	for (int k = 0; k < n; k++)
		node[k] = sq->node[order[k]];
	for (int k = 0; k < n; k++)
		sq->node[k] = node[k], sq->pos[node[k]] = k;
	free(node), free(order), free(stack), free(next), free(has_succ), free(seen);
}

/* Whether the p operators from b are one fusion group (one kernel: a Conv with its epilogue). */
static int one_group(const Seq *sq, int b, int p)
{
	int64_t grp = sq->g->nodes[sq->node[b]].group;
	for (int t = 1; t < p && grp >= 0; t++)
		if (sq->g->nodes[sq->node[b + t]].group != grp)
			return 0;
	return grp >= 0;
}

static void find_blocks(VizGraph *g)
{
	Seq sq = { g, vz_alloc(sizeof(int) * (size_t)(g->nnodes + 1)), vz_alloc(sizeof(int) * (size_t)(g->nnodes + 1)),
		   vz_alloc(sizeof(int) * (size_t)(g->nnodes + 2)), vz_alloc(sizeof(int) * (size_t)(g->nedges + 1)), 0 };
	for (int i = 0; i < g->nnodes; i++) {
		const VizNode *v = &g->nodes[i];
		sq.pos[i] = -1;
		if (!*v->instance && !v->hidden && !is_io(v) && v->device >= 0)
			sq.pos[i] = sq.n, sq.node[sq.n++] = i;
	}
	for (int e = 0; e < g->nedges; e++)
		sq.pstart[g->edges[e].dst + 1]++;
	for (int i = 0; i < g->nnodes; i++)
		sq.pstart[i + 1] += sq.pstart[i];
	int *fill = vz_alloc(sizeof(int) * (size_t)(g->nnodes + 1));
	for (int e = 0; e < g->nedges; e++) {
		int d = g->edges[e].dst;
		sq.pred[sq.pstart[d] + fill[d]++] = g->edges[e].src;
	}
	free(fill);
	canonical_order(&sq);
	for (int i = 0; i < sq.n;) {
		int best_p = 0, best_r = 0;
		for (int p = 2; p <= MAX_PERIOD && i + 2 * p <= sq.n; p++) {
			int r = 1;
			while (i + (r + 1) * p <= sq.n && block_eq(&sq, i, i + r * p, p) && reads_previous(&sq, i + r * p, p))
				r++;
			if (r >= 2 && (r * p >= MIN_COVER || one_group(&sq, i, p)) && r * p > best_r * best_p)
				best_p = p, best_r = r;
		}
		if (!best_p) {
			i++;
			continue;
		}
		char callee[48], inst[64];
		snprintf(callee, sizeof callee, "~%d.%d", best_p, i);
		for (int r = 0; r < best_r; r++)
			for (int t = 0; t < best_p; t++) {
				VizNode *v = &g->nodes[sq.node[i + r * best_p + t]];
				snprintf(inst, sizeof inst, "~%d.%d#%d", best_p, i, r + 1);
				free(v->instance), free(v->callee);
				v->instance = vz_strdup(inst);
				v->callee = vz_strdup(callee);
			}
		i += best_p * best_r;
	}
	free(sq.node), free(sq.pos), free(sq.pstart), free(sq.pred);
}

/* The distinct links merged into one edge. */
typedef struct LinkSet {
	char **names;
	int n, cap;
} LinkSet;

static void link_add(LinkSet *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->names[i], name) == 0)
			return;
	l->names = vz_grow(l->names, &l->cap, l->n, sizeof *l->names);
	l->names[l->n++] = vz_strdup(name);
}

/* Remaps edges through rep, dropping edges between two instances of one run, self loops and
 * duplicates (open hashing); a merged edge stays bold when any of its edges crossed a link, and
 * counts the distinct links they crossed. */
static void remap_edges(VizGraph *g, const int *node_inst, const Inst *in)
{
	int cap = 1;
	while (cap < 2 * g->nedges + 2)
		cap *= 2;
	int *slot = vz_alloc(sizeof(int) * (size_t)cap);
	LinkSet *ls = vz_alloc(sizeof *ls * (size_t)(g->nedges + 1));
	for (int i = 0; i < cap; i++)
		slot[i] = -1;
	int k = 0;
	for (int i = 0; i < g->nedges; i++) {
		VizEdge e = g->edges[i];
		int a = node_inst[e.src], b = node_inst[e.dst];
		int cross = a >= 0 && b >= 0 && a != b && in[a].run == in[b].run;
		e.src = g->nodes[e.src].rep, e.dst = g->nodes[e.dst].rep;
		unsigned h = ((unsigned)e.src * 2654435761u) ^ ((unsigned)e.dst * 40503u);
		int s = (int)(h & (unsigned)(cap - 1));
		while (slot[s] >= 0 && (g->edges[slot[s]].src != e.src || g->edges[slot[s]].dst != e.dst))
			s = (s + 1) & (cap - 1);
		if (cross || e.src == e.dst) {
			free(e.type), free(e.link);
			continue;
		}
		if (slot[s] >= 0) {
			VizEdge *d = &g->edges[slot[s]];
			if (e.link) {
				link_add(&ls[slot[s]], e.link);
				if (!d->link)
					d->link = e.link, e.link = NULL;
				d->time_s = e.time_s > d->time_s ? e.time_s : d->time_s;
			}
			d->bold |= e.bold;
			free(e.type), free(e.link);
			continue;
		}
		g->edges[k] = e;
		if (e.link)
			link_add(&ls[k], e.link);
		slot[s] = k++;
	}
	for (int i = 0; i < k; i++) {
		g->edges[i].nlinks = ls[i].n;
		for (int j = 0; j < ls[i].n; j++)
			free(ls[i].names[j]);
		free(ls[i].names);
	}
	g->nedges = k;
	free(slot), free(ls);
}

/* Folds runs of alike instances into their first; in[] as gather made them. */
static void fold_repeats(VizGraph *g, Inst *in, int ninst)
{
	/* runs: each instance joins the run of the previous instance of its callee when alike */
	for (int i = 0; i < ninst; i++) {
		int prev = i - 1;
		while (prev >= 0 && strcmp(in[prev].callee, in[i].callee) != 0)
			prev--;
		if (prev < 0)
			continue;
		Inst *run = &in[in[prev].run];
		int how = same_members(g, &in[prev], &in[i]);
		if (how && (run->mode == 0 || run->mode == how)) {
			run->mode = how;
			in[i].run = in[prev].run;
		}
	}
	/* a run keeps an input or output inside when every instance has one like it, in the same
	 * order (the KV cache of each layer); the others go back to the top level (the model's input
	 * that only the first layer reads) */
	char a[600], b[600];
	for (int h = 0; h < ninst; h++)
		for (int k = 0; k < in[h].nio; k++) {
			int f = in[h].run;
			if (!*g->nodes[in[h].io[k]].instance)
				continue;   /* detached already */
			io_sig(&g->nodes[in[h].io[k]], a, sizeof a);
			int keep = 1, ca = -1;
			for (int i = f; keep && i < ninst; i++) {
				if (in[i].run != f)
					continue;
				int cb = 0;
				for (int j = 0; j < in[i].nio; j++)
					io_sig(&g->nodes[in[i].io[j]], b, sizeof b), cb += !strcmp(a, b);
				keep = ca < 0 || ca == cb;
				ca = cb;
			}
			for (int i = f; !keep && i < ninst; i++)   /* detach every one like it */
				for (int j = 0; in[i].run == f && j < in[i].nio; j++) {
					VizNode *v = &g->nodes[in[i].io[j]];
					io_sig(v, b, sizeof b);
					if (strcmp(a, b) || !*v->instance)
						continue;
					free(v->instance), free(v->callee);
					v->instance = vz_strdup(""), v->callee = vz_strdup("");
					v->device = -1;
				}
		}
	for (int i = 0; i < ninst; i++) {   /* drop the detached from the lists; then one for one, in order */
		int u = 0;
		for (int j = 0; j < in[i].nio; j++)
			if (*g->nodes[in[i].io[j]].instance)
				in[i].io[u++] = in[i].io[j];
		in[i].nio = u;
	}
	for (int i = 0; i < ninst; i++) {
		Inst *r = &in[in[i].run];
		int same = r->nio == in[i].nio;
		for (int j = 0; same && j < r->nio; j++) {
			io_sig(&g->nodes[r->io[j]], a, sizeof a);
			io_sig(&g->nodes[in[i].io[j]], b, sizeof b);
			same = !strcmp(a, b);
		}
		if (!same)
			r->mode = -1;
	}
	for (int i = 0; i < ninst; i++) {
		if (in[in[i].run].mode >= 0)
			continue;
		for (int k = 0; k < in[i].nio; k++) {   /* back to the top level, outside the devices */
			VizNode *v = &g->nodes[in[i].io[k]];
			free(v->instance), free(v->callee);
			v->instance = vz_strdup(""), v->callee = vz_strdup("");
			v->device = -1;
		}
		in[i].nio = 0;
	}
	for (int i = 0; i < ninst; i++) {
		const Inst *r = &in[in[i].run];
		int64_t num = inst_number(in[i].name);
		for (int part = 0; part < 2; part++)
			for (int k = 0; k < (part ? in[i].nio : in[i].n); k++) {
				int m = part ? in[i].io[k] : in[i].members[k], rm = part ? r->io[k] : r->members[k];
				VizNode *v = &g->nodes[m], *rv = &g->nodes[rm];
				if (r == &in[i]) {
					v->first = v->last = num;
					continue;
				}
				v->hidden = 1;
				v->rep = rm;
				rv->count++;
				rv->last = num;
				if (part) {
					free(rv->op_last);
					rv->op_last = vz_strdup(v->op);
				}
			}
	}
}

void viz_collapse(VizGraph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		g->nodes[i].rep = i, g->nodes[i].shards = 1, g->nodes[i].count = 1;
	viz_attach_io(g);
	fold_shards(g);
	find_blocks(g);
	int ninst, *node_inst = vz_alloc(sizeof(int) * (size_t)(g->nnodes + 1));
	Inst *in = gather(g, &ninst, node_inst);
	for (int i = 0; i < g->nnodes; i++)   /* a folded shard belongs to its first shard's instance */
		if (g->nodes[i].hidden)
			node_inst[i] = node_inst[g->nodes[i].rep];
	fold_repeats(g, in, ninst);
	for (int i = 0; i < g->nnodes; i++) {   /* reps point backwards: resolve chains in order */
		g->nodes[i].rep = g->nodes[g->nodes[i].rep].rep;
	}
	remap_edges(g, node_inst, in);
	for (int i = 0; i < ninst; i++)
		free(in[i].members), free(in[i].io), free(in[i].name), free(in[i].callee);
	free(in);
	free(node_inst);
}

/* ---- focus ---- */
/* Whether spec (one name of --focus, length n) names node v's instance, callee or device. */
static int focus_hit(const VizGraph *g, const VizNode *v, const char *spec, size_t n)
{
	const char *dev = v->device >= 0 ? g->devs[v->device].name : "";
	if ((strlen(dev) == n && strncmp(dev, spec, n) == 0))
		return 1;
	if (n == 3 && strncmp(spec, "top", 3) == 0)
		return !*v->instance;
	if (!*v->instance)
		return 0;
	if ((strlen(v->instance) == n && !strncmp(v->instance, spec, n)) || (strlen(v->callee) == n && !strncmp(v->callee, spec, n)))
		return 1;
	/* "layer#3" and "layer" also name the per-stage copies "layer.stage0#3", "layer.stage0" */
	const char *st = strstr(v->callee, ".stage");
	if (!st)
		return 0;
	size_t base = (size_t)(st - v->callee);
	const char *hash = strrchr(v->instance, '#');
	if (base == n && !strncmp(v->callee, spec, n))
		return 1;
	return base < n && !strncmp(v->callee, spec, base) && hash && strlen(hash) == n - base && !strncmp(hash, spec + base, n - base);
}

int viz_focus(VizGraph *g, const char *spec)
{
	unsigned char *in = vz_alloc((size_t)g->nnodes + 1);
	int rc = 0;
	for (const char *s = spec; *s && rc == 0;) {
		size_t n = strcspn(s, ",");
		int hits = 0;
		for (int i = 0; i < g->nnodes; i++)
			if (!is_io(&g->nodes[i]) && focus_hit(g, &g->nodes[i], s, n))
				in[i] = 1, hits++;
		if (!hits) {
			fprintf(stderr, "aicc: error: --focus '%.*s' names no call instance, graph or device of the picture "
				"(instances look like 'layer#3', graphs like 'layer', devices like '%s'; 'top' is the top level)\n",
				(int)n, s, g->ndevs ? g->devs[g->ndevs - 1].name : "gpu0");
			rc = -1;
		}
		s += n + (s[n] == ',');
	}
	for (int e = 0; rc == 0 && e < g->nedges; e++) {   /* neighbours: inputs and outputs join, the rest is context */
		int a = g->edges[e].src, b = g->edges[e].dst;
		if (in[a] == 1 && !in[b])
			in[b] = is_io(&g->nodes[b]) ? 3 : 2;
		if (in[b] == 1 && !in[a])
			in[a] = is_io(&g->nodes[a]) ? 3 : 2;
	}
	for (int i = 0; rc == 0 && i < g->nnodes; i++) {
		g->nodes[i].hidden = !in[i];
		g->nodes[i].context = in[i] == 2;
	}
	free(in);
	return rc;
}

void viz_shown(const VizGraph *g, int *nodes, int *edges)
{
	*nodes = *edges = 0;
	for (int i = 0; i < g->nnodes; i++)
		*nodes += !g->nodes[i].hidden;
	for (int e = 0; e < g->nedges; e++)
		*edges += !g->nodes[g->edges[e].src].hidden && !g->nodes[g->edges[e].dst].hidden;
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
