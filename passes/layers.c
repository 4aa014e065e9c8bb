/* passes/layers.c: the model's first and last layers, which numerically sensitive rules keep
 * apart (quantization keeps them wide; partitioning may pin them).
 *
 * Models repeat one layer body (`h = repeat 32 layer(x, ...)`), so the first and last layer
 * share their nodes with every other repetition.  pass_mark_layers peels them: the first
 * repetition of the first layer stack becomes `call layer.first(...)`, the last repetition of
 * the last stack `call layer.last(...)`, each a copy of the body.  The copies share the
 * parameters' initialisers, and since call instances are numbered in expansion order, every
 * repetition keeps its instance number and thus its weights: the peeled module computes exactly
 * what the original did.  Entry-graph nodes before the first stack (the embedding, a patch
 * convolution) belong to the first layer, those after the last stack (the final norm, the
 * output projection) to the last.  The marks live in Node.aux until the caller clears them.
 * Requires shape-inferred, topologically sorted graphs; provides pass_mark_layers (pass.h).
 */
#include <string.h>

#include "passes/pass.h"

const char LAYER_FIRST[] = "first layer", LAYER_LAST[] = "last layer";

/* Whether g, or a graph it calls, holds a quantizable (F_QUANT) node. */
static int holds_quant(const Graph *g, int depth)
{
	if (depth > 64)
		return 0;
	ir_foreach_node(g, n) {
		if (ir_ops[n->op].flags & F_QUANT)
			return 1;
		if (n->op == OP_Call && n->callee && holds_quant(n->callee, depth + 1))
			return 1;
	}
	return 0;
}

static int is_stack(const Node *n) { return n->op == OP_Call && n->callee && holds_quant(n->callee, 0); }

/* A call of `callee` (repeat 1) inserted before `before`, reading in[0..nin). */
static Node *new_call(Graph *g, Node *before, Graph *callee, Value **in, int nin, Loc loc)
{
	const char *names[64];
	int nout = callee->nout < 64 ? callee->nout : 64;
	for (int i = 0; i < nout; i++)
		names[i] = ir_fresh_name(g, callee->outputs[i]->name);
	Node *c = ir_insert_node(g, before, OP_Call, in, nin, names, nout, loc);
	c->callee = callee;
	return c;
}

/* Peels the first repetition of call n into `first` (its results feed n's carried inputs). */
static void peel_first(Graph *g, Node *n, Graph *first)
{
	Node *c = new_call(g, n, first, n->in, n->nin, n->loc);
	for (int i = 0; i < n->nout && i < c->nout; i++)
		ir_set_input(n, i, c->out[i]);
	n->repeat--;
}

/* Peels the last repetition of call n into `last`; its results take n's names and uses. */
static void peel_last(Graph *g, Node *n, Graph *last)
{
	Value *in[64];
	int nin = n->nin < 64 ? n->nin : 64;
	for (int i = 0; i < nin; i++)
		in[i] = i < n->nout ? n->out[i] : n->in[i];
	Node *c = new_call(g, n->next, last, in, nin, n->loc);
	for (int i = 0; i < n->nout && i < c->nout; i++) {
		const char *name = n->out[i]->name;
		ir_replace_uses(g, n->out[i], c->out[i]);
		ir_set_input(c, i, n->out[i]);
		n->out[i]->name = c->out[i]->name;
		c->out[i]->name = name;
	}
	n->repeat--;
}

static void mark_graph(Graph *g, const char *mark)
{
	ir_foreach_node(g, n)
		n->aux = (void *)mark;
}

/* Peels the stacks first..last of the entry graph; returns the number of peeled calls.  A
 * single call run once is the first layer and the last: it only gets its own copy. */
static int peel(Module *m, Graph *entry, Node *first, Node *last)
{
	char name[256];
	int once = first == last && first->repeat == 1;
	snprintf(name, sizeof name, "%s.first", first->callee->name);
	Graph *f = pass_clone_graph(m, first->callee, name, entry);
	if (first->repeat >= 2)
		peel_first(entry, first, f);
	else
		first->callee = f;
	mark_graph(f, LAYER_FIRST);
	if (once)
		return 1;
	snprintf(name, sizeof name, "%s.last", last->callee->name);
	Graph *l = pass_clone_graph(m, last->callee, name, entry);
	if (last->repeat >= 2)
		peel_last(entry, last, l);
	else
		last->callee = l;
	mark_graph(l, LAYER_LAST);
	return 2;
}

/* Without layer stacks: the first and last quantizable nodes of the entry graph. */
static void mark_ends(Graph *g)
{
	Node *first = NULL, *last = NULL;
	ir_foreach_node(g, n)
		if (ir_ops[n->op].flags & F_QUANT) {
			first = first ? first : n;
			last = n;
		}
	if (last)
		last->aux = (void *)LAYER_LAST;
	if (first)
		first->aux = (void *)LAYER_FIRST;
}

int pass_mark_layers(Module *m, PassCtx *c)
{
	Graph *g = ir_entry(m);
	Node *first = NULL, *last = NULL;
	if (!g)
		return 0;
	ir_foreach_node(g, n)
		if (is_stack(n)) {
			first = first ? first : n;
			last = n;
		}
	if (!first) {
		mark_ends(g);
		return 0;
	}
	const char *mark = LAYER_FIRST;
	ir_foreach_node(g, n) {
		if (n == first)
			mark = NULL;
		n->aux = (void *)mark;
		if (n == last)
			mark = LAYER_LAST;
	}
	int k = peel(m, g, first, last);
	if (k)
		pass_stat(c, "layer repetitions peeled", k);
	return k;
}
