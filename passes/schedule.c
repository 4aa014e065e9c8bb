/* passes/schedule.c: a deterministic list schedule of every graph's node list (pass `schedule`,
 * in -O1 before plan-memory, which plans liveness over the order chosen here).
 *
 * Classic list scheduling (Hu's level algorithm with a register-pressure tie-break, as in
 * Sethi-Ullman-aware instruction schedulers): each node's priority is its level, the number of
 * nodes on the longest path from it to a graph output, so the nodes of the critical path are
 * never starved by side branches; among ready nodes of equal level, the one that frees the most
 * bytes net (inputs it reads last minus the results it creates) goes first, which keeps the live
 * set small; the remaining ties keep program order, so the result is deterministic.  A second,
 * memory-first variant (bytes freed first, level second) replaces it when its peak is strictly
 * lower.  Live bytes are simulated for the program order and the schedule (graph inputs and
 * results, weights excluded, rt_dtype_bytes of each value, a result live from its node to its
 * last reader, graph outputs to the end); if the schedule's peak is higher, the program order
 * is kept.  Either way
 * a `schedule` remark gives both peaks and the critical path, and the node list is relinked in
 * the chosen order.  Graphs with symbolic shapes count 0 bytes for the unknown values.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

typedef struct Sched {
	Graph *g;
	int n;              /* nodes */
	Node **node;        /* program order */
	int *level;         /* longest path to an output, in nodes */
	int *upos, *users;  /* CSR: users of node i are users[upos[i]..upos[i+1]) (with multiplicity) */
	int *preds;         /* unscheduled producer edges per node */
	int *left;          /* per value id: unscheduled reads */
	int64_t *bytes;     /* per value id */
} Sched;

static int64_t value_bytes(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 || v->type.dt == DT_INVALID ? 0 : rt_dtype_bytes(v->type.dt, n);
}

static int idx(const Node *n) { return (int)(intptr_t)n->aux - 1; }

/* The peak of live bytes over order[0..n). */
static int64_t simulate(Sched *s, Node **order)
{
	Graph *g = s->g;
	int64_t live = 0, peak = 0;
	for (int i = 0; i < g->nvalues; i++)
		s->left[i] = 0;
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->node[i]->nin; j++)
			if (s->node[i]->in[j])
				s->left[s->node[i]->in[j]->id]++;
	for (int i = 0; i < g->nout; i++)
		s->left[g->outputs[i]->id]++;     /* outputs stay live to the end */
	for (int i = 0; i < g->nin; i++)
		live += s->bytes[g->inputs[i]->id];
	peak = live;
	for (int i = 0; i < s->n; i++) {
		Node *n = order[i];
		for (int j = 0; j < n->nout; j++)
			live += s->bytes[n->out[j]->id];
		if (live > peak)
			peak = live;
		for (int j = 0; j < n->nout; j++)
			if (!s->left[n->out[j]->id])
				live -= s->bytes[n->out[j]->id];     /* dead result */
		for (int j = 0; j < n->nin; j++) {
			Value *v = n->in[j];
			if (v && v->kind != V_PARAM && --s->left[v->id] == 0)
				live -= s->bytes[v->id];
		}
	}
	return peak;
}

/* Net bytes freed by running node i now: inputs it reads last minus its results. */
static int64_t net_freed(Sched *s, int i)
{
	Node *n = s->node[i];
	int64_t d = 0;
	for (int j = 0; j < n->nout; j++)
		d -= s->bytes[n->out[j]->id];
	for (int j = 0; j < n->nin; j++) {
		Value *v = n->in[j];
		int uses = 0;
		if (!v || v->kind == V_PARAM)
			continue;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] == v) {
				if (k < j)
					break;       /* counted at its first position */
				uses++;
			}
		if (uses && s->left[v->id] == uses)
			d += s->bytes[v->id];
	}
	return d;
}

static void build(Sched *s)
{
	Graph *g = s->g;
	int e = 0;
	for (int i = 0; i < g->nvalues; i++)
		s->bytes[i] = 0;
	for (int i = 0; i < g->nin; i++)
		s->bytes[g->inputs[i]->id] = value_bytes(g->inputs[i]);
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->node[i]->nout; j++)
			s->bytes[s->node[i]->out[j]->id] = value_bytes(s->node[i]->out[j]);
	/* users (CSR) and producer edge counts */
	memset(s->upos, 0, (size_t)(s->n + 1) * sizeof *s->upos);
	for (int i = 0; i < s->n; i++) {
		s->preds[i] = 0;
		for (int j = 0; j < s->node[i]->nin; j++) {
			Value *v = s->node[i]->in[j];
			if (v && v->kind == V_NODE && v->def->aux) {
				s->upos[idx(v->def) + 1]++;
				s->preds[i]++;
			}
		}
	}
	for (int i = 0; i < s->n; i++)
		s->upos[i + 1] += s->upos[i];
	int *fill = calloc((size_t)s->n + 1, sizeof *fill);
	if (!fill)
		abort();
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->node[i]->nin; j++) {
			Value *v = s->node[i]->in[j];
			if (v && v->kind == V_NODE && v->def->aux) {
				int d = idx(v->def);
				s->users[s->upos[d] + fill[d]++] = i;
				e++;
			}
		}
	free(fill);
	(void)e;
	/* levels, in reverse program (topological) order */
	for (int i = s->n - 1; i >= 0; i--) {
		int best = 0;
		for (int k = s->upos[i]; k < s->upos[i + 1]; k++)
			if (s->level[s->users[k]] > best)
				best = s->level[s->users[k]];
		s->level[i] = 1 + best;
	}
}

/* The list schedule into order[]; uses s->left for the unscheduled reads.  mem_first: the
 * bytes freed decide first and the level breaks ties (the memory-first variant). */
static void list_schedule(Sched *s, Node **order, int mem_first)
{
	unsigned char *done = calloc((size_t)s->n + 1, 1);
	if (!done)
		abort();
	simulate(s, s->node);    /* resets s->left (ends at 0); recount below */
	for (int i = 0; i < s->g->nvalues; i++)
		s->left[i] = 0;
	for (int i = 0; i < s->n; i++)
		for (int j = 0; j < s->node[i]->nin; j++)
			if (s->node[i]->in[j])
				s->left[s->node[i]->in[j]->id]++;
	for (int i = 0; i < s->g->nout; i++)
		s->left[s->g->outputs[i]->id]++;
	for (int t = 0; t < s->n; t++) {
		int pick = -1;
		int64_t pick_net = 0;
		for (int i = 0; i < s->n; i++) {
			if (done[i] || s->preds[i])
				continue;
			int64_t net = net_freed(s, i);
			int by_level = pick < 0 || s->level[i] > s->level[pick] ||
				       (s->level[i] == s->level[pick] && net > pick_net);
			int by_mem = pick < 0 || net > pick_net || (net == pick_net && s->level[i] > s->level[pick]);
			if (mem_first ? by_mem : by_level) {
				pick = i;
				pick_net = net;
			}
		}
		done[pick] = 1;
		order[t] = s->node[pick];
		Node *n = s->node[pick];
		for (int j = 0; j < n->nin; j++)
			if (n->in[j])
				s->left[n->in[j]->id]--;
		for (int k = s->upos[pick]; k < s->upos[pick + 1]; k++)
			s->preds[s->users[k]]--;
	}
	free(done);
}

static void relink(Graph *g, Node **order, int n)
{
	g->first = n ? order[0] : NULL;
	g->last = n ? order[n - 1] : NULL;
	for (int i = 0; i < n; i++) {
		order[i]->prev = i ? order[i - 1] : NULL;
		order[i]->next = i + 1 < n ? order[i + 1] : NULL;
	}
}

/* The first node of g placed on a device class (the @device name less its instance number) other
 * than that of an earlier placed node, or NULL: a graph split over a GPU and an LPU pool
 * (passes/disaggregate.c) interleaves its micro-batches so that one pool works while the other
 * does, and a reorder for memory on one device's terms would undo that overlap. */
static const Node *other_class(const Graph *g)
{
	const char *first = NULL;
	size_t len = 0;
	ir_foreach_node(g, n) {
		const char *d = n->annot.device;
		if (!d)
			continue;
		size_t k = strlen(d);
		while (k > 0 && d[k - 1] >= '0' && d[k - 1] <= '9')
			k--;
		if (!first)
			first = d, len = k;
		else if (k != len || strncmp(first, d, k))
			return n;
	}
	return NULL;
}

static void schedule_graph(PassCtx *c, Graph *g)
{
	Sched s = { .g = g };
	ir_foreach_node(g, n)
		s.n++;
	if (!s.n)
		return;
	const Node *het = other_class(g);
	if (het) {
		pass_remark(c, REMARK_ANALYSIS, g, het, "graph '%s': kept program order of %d nodes: they run on "
			    "more than one kind of device (here %s), in the order the placement chose to overlap them",
			    g->name, s.n, het->annot.device);
		pass_stat(c, "graphs kept in program order (several device kinds)", 1);
		return;
	}
	int nv = g->nvalues + 1;
	s.node = calloc((size_t)s.n, sizeof *s.node);
	Node **order = calloc((size_t)s.n, sizeof *order);
	void **saved = calloc((size_t)s.n, sizeof *saved);
	s.level = calloc((size_t)s.n, sizeof *s.level);
	s.upos = calloc((size_t)s.n + 1, sizeof *s.upos);
	s.preds = calloc((size_t)s.n, sizeof *s.preds);
	s.left = calloc((size_t)nv, sizeof *s.left);
	s.bytes = calloc((size_t)nv, sizeof *s.bytes);
	int nedges = 0;
	ir_foreach_node(g, n)
		nedges += n->nin;
	s.users = calloc((size_t)nedges + 1, sizeof *s.users);
	if (!s.node || !order || !saved || !s.level || !s.upos || !s.preds || !s.left || !s.bytes || !s.users)
		abort();
	int i = 0;
	ir_foreach_node(g, n) {
		saved[i] = n->aux;
		s.node[i] = n;
		n->aux = (void *)(intptr_t)(i + 1);
		i++;
	}
	build(&s);
	int path = 0;
	for (i = 0; i < s.n; i++)
		path = s.level[i] > path ? s.level[i] : path;
	list_schedule(&s, order, 0);
	int64_t before = simulate(&s, s.node), after = simulate(&s, order);
	Node **alt = calloc((size_t)s.n, sizeof *alt);
	if (!alt)
		abort();
	build(&s);       /* the producer counts again */
	list_schedule(&s, alt, 1);
	int64_t alt_peak = simulate(&s, alt);
	if (alt_peak < after) {        /* the memory-first variant wins only when strictly lower */
		Node **t = order;
		order = alt;
		alt = t;
		after = alt_peak;
	}
	free(alt);
	int moved = 0;
	for (i = 0; i < s.n; i++)
		moved += order[i] != s.node[i];
	for (i = 0; i < s.n; i++)
		s.node[i]->aux = saved[i];
	if (after > before || !moved || !pass_bisect(c, NULL, "reorder graph")) {
		pass_remark(c, REMARK_ANALYSIS, g, NULL,
			    "graph '%s': kept program order of %d nodes (critical path %d nodes, peak %lld bytes; "
			    "list schedule: %s)", g->name, s.n, path, (long long)before,
			    !moved ? "the same order" : after > before ? "higher peak" : "bisected away");
		if (after > before)
			pass_stat(c, "graphs kept in program order (higher peak)", 1);
	} else {
		relink(g, order, s.n);
		pass_stat(c, "nodes moved", moved);
		pass_remark(c, REMARK_APPLIED, g, NULL,
			    "graph '%s': list schedule of %d nodes (critical path %d nodes), %d moved; peak %lld bytes "
			    "(program order %lld)", g->name, s.n, path, moved, (long long)after, (long long)before);
	}
	free(s.node);
	free(order);
	free(saved);
	free(s.level);
	free(s.upos);
	free(s.preds);
	free(s.left);
	free(s.bytes);
	free(s.users);
}

int pass_schedule(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next)
		schedule_graph(c, g);
	return 0;
}
