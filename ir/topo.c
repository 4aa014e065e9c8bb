/* ir/topo.c: topological ordering of a graph's node list.
 *
 * ir_topo_sort() is Kahn's algorithm made stable: among the ready nodes it always takes the one
 * that comes first in the current list (a binary min-heap of list positions), so an ordered
 * graph is left as it is and a node appended out of place moves just far enough.  Dependencies
 * are node inputs defined by live nodes of the same graph; graph inputs and parameters are
 * always ready.  O((nodes + edges) log nodes).  Returns -1 on a cycle and leaves the list
 * unchanged.  Scratch memory comes from the module arena.
 */
#include "ir/ir.h"

typedef struct Topo {
	Node **nodes;            /* list order */
	int *pos;                /* Node.id -> list position */
	int *pending;            /* producers not yet placed, per position */
	int *ustart, *users;     /* consumers of each position (CSR) */
	int *heap, nheap;
} Topo;

/* The list position of the live same-graph node defining v, or -1. */
static int producer(const Topo *t, const Graph *g, const Value *v)
{
	if (!v || v->kind != V_NODE || !v->def || v->def->dead || v->def->graph != g)
		return -1;
	return t->pos[v->def->id];
}

/* Builds the consumer lists (one entry per input edge). */
static void build_users(Topo *t, Graph *g, int k, Arena *a)
{
	int *cnt = arena_alloc(a, (size_t)(k + 1) * sizeof *cnt);
	for (int i = 0; i < k; i++)
		for (int j = 0; j < t->nodes[i]->nin; j++) {
			int p = producer(t, g, t->nodes[i]->in[j]);
			if (p >= 0) {
				cnt[p + 1]++;
				t->pending[i]++;
			}
		}
	for (int i = 0; i < k; i++)
		cnt[i + 1] += cnt[i];
	t->ustart = cnt;
	t->users = arena_alloc(a, (size_t)(cnt[k] + 1) * sizeof *t->users);
	int *fill = arena_alloc(a, (size_t)(k + 1) * sizeof *fill);
	for (int i = 0; i < k; i++)
		for (int j = 0; j < t->nodes[i]->nin; j++) {
			int p = producer(t, g, t->nodes[i]->in[j]);
			if (p >= 0)
				t->users[cnt[p] + fill[p]++] = i;
		}
}

static void heap_push(Topo *t, int v)
{
	int i = t->nheap++;
	while (i > 0 && t->heap[(i - 1) / 2] > v) {
		t->heap[i] = t->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	t->heap[i] = v;
}

static int heap_pop(Topo *t)
{
	int top = t->heap[0], v = t->heap[--t->nheap], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= t->nheap)
			break;
		if (c + 1 < t->nheap && t->heap[c + 1] < t->heap[c])
			c++;
		if (t->heap[c] >= v)
			break;
		t->heap[i] = t->heap[c];
		i = c;
	}
	if (t->nheap)
		t->heap[i] = v;
	return top;
}

int ir_topo_sort(Graph *g)
{
	Arena *a = g->m->arena;
	int cap = g->nvalues + 1, k = 0;
	Topo t = { 0 };
	t.nodes = arena_alloc(a, (size_t)cap * sizeof *t.nodes);
	t.pos = arena_alloc(a, (size_t)cap * sizeof *t.pos);
	ir_foreach_node(g, n) {
		t.pos[n->id] = k;
		t.nodes[k++] = n;
	}
	t.pending = arena_alloc(a, (size_t)(k + 1) * sizeof *t.pending);
	t.heap = arena_alloc(a, (size_t)(k + 1) * sizeof *t.heap);
	Node **order = arena_alloc(a, (size_t)(k + 1) * sizeof *order);
	build_users(&t, g, k, a);
	for (int i = 0; i < k; i++)
		if (t.pending[i] == 0)
			heap_push(&t, i);
	int done = 0;
	while (t.nheap) {
		int i = heap_pop(&t);
		order[done++] = t.nodes[i];
		for (int u = t.ustart[i]; u < t.ustart[i + 1]; u++)
			if (--t.pending[t.users[u]] == 0)
				heap_push(&t, t.users[u]);
	}
	if (done < k)
		return -1;
	for (int i = 0; i < k; i++) {
		order[i]->prev = i ? order[i - 1] : NULL;
		order[i]->next = i + 1 < k ? order[i + 1] : NULL;
	}
	g->first = k ? order[0] : NULL;
	g->last = k ? order[k - 1] : NULL;
	return 0;
}
