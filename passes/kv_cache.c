/* passes/kv_cache.c: the serving phases of an LLM, prefill and decode, with the KV cache as
 * explicit graph state (pass `kv-cache`, run first when `aicc compile --phase` is given).
 *
 * Prefill runs the prompt (B sequences of S tokens) and must hand every layer's keys and values
 * to the decode steps; decode runs one new token per sequence against a cache of P past tokens.
 * Attention (ONNX opset 23) already has both halves: optional inputs past_key/past_value
 * [B, kv_heads, P, head] and outputs present_key/present_value [B, kv_heads, P+S, head].  The
 * pass rewrites each Attention so that its present_key/present_value become outputs of its graph
 * (`present_key.N`, `present_value.N`) and, for decode, its past_key/past_value new inputs of its
 * graph (`past_key.N`, `past_value.N`, [B, kv_heads, --context, head], the dtype of K), and
 * threads them up through every `call` to the entry graph, numbering the slots of each graph in
 * node order.
 *
 * `repeat N g(...)` cannot carry a per-layer cache: a repetition's outputs feed the next
 * repetition's first inputs and the other inputs are the same for every repetition, and there is
 * no iteration index to slice a stacked [L, B, KVH, P, HD] cache with.  So a repeat whose body
 * holds an Attention is unrolled into N calls of the same callee (the body is not copied), in
 * order; call instances are numbered in expansion order, so every layer keeps its weights.  The
 * entry graph then has one named cache tensor per layer, which is also what a serving runtime
 * pages (vLLM's per-layer KV blocks).  Attentions that already have past inputs or whose other
 * outputs are read are left alone, with a remark.
 *
 * Multi-head latent attention (DeepSeek-V3) is cached like any Attention: per-head K (rope +
 * nope) and V after the up-projection, not the 576-value latent (documented in docs/passes.md).
 * Requires shape-inferred graphs; the entry graph's signature changes.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

typedef struct GState {
	Graph *g;
	int state;          /* 1: being processed, 2: done */
	int slots;          /* cache slots (key + value pairs) the graph now carries */
} GState;

typedef struct Kv {
	PassCtx *c;
	Module *m;
	int decode;
	Dim past;           /* decode: past tokens */
	GState *gs;
	int ngs, capgs;
	int errors;
} Kv;

static GState *gstate(Kv *k, Graph *g)
{
	for (int i = 0; i < k->ngs; i++)
		if (k->gs[i].g == g)
			return &k->gs[i];
	if (k->ngs == k->capgs) {
		int cap = k->capgs ? 2 * k->capgs : 8;
		GState *v = realloc(k->gs, (size_t)cap * sizeof *v);
		if (!v)
			abort();
		k->gs = v;
		k->capgs = cap;
	}
	k->gs[k->ngs] = (GState){ g, 0, 0 };
	return &k->gs[k->ngs++];
}

static const char *slot_name(Graph *g, const char *what, int s)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s.%d", what, s);
	return arena_strdup(g->m->arena, buf);
}

/* Adds output v to g, keeping the declared output types (the new one is undeclared). */
static void add_output(Graph *g, Value *v)
{
	int old = g->nout;
	ir_add_output(g, v);
	if (!g->out_decl)
		return;
	Type *d = arena_alloc(g->m->arena, (size_t)g->nout * sizeof *d);
	memcpy(d, g->out_decl, (size_t)old * sizeof *d);
	for (int i = old; i < g->nout; i++)
		d[i] = (Type){ DT_INVALID, -1, NULL };
	g->out_decl = d;
}

/* The past_key (which = 1) or past_value (which = 2) type of Attention n: [B, kvh, P, head]. */
static int past_type(Kv *k, Node *n, int which, Type *out)
{
	Type q = n->in[0]->type, t = n->in[which]->type;
	Dim d[4];
	if (t.rank == 4) {
		d[1] = t.dims[1];
		d[3] = t.dims[3];
	} else if (t.rank == 3) {
		int64_t kvh = rt_attr_int(&n->attrs, "kv_num_heads", 0);
		if (kvh < 1 || dim_div(k->m, t.dims[2], dim_c(kvh), &d[3]) < 0)
			return -1;
		d[1] = dim_c(kvh);
	} else
		return -1;
	d[0] = q.dims[0];
	d[2] = k->past;
	*out = ir_type(k->m, t.dt, 4, d);
	return 0;
}

/* Why Attention n cannot be rewritten, or NULL. */
static const char *attn_blocker(Kv *k, Node *n, Type *pk, Type *pv)
{
	if (n->nin > 4 && (n->in[4] || (n->nin > 5 && n->in[5])))
		return "it already has past_key/past_value inputs";
	for (int i = 1; i < n->nout; i++)
		if (n->out[i]->nuses || pass_is_output(n->out[i]))
			return "its present or qk outputs are already read";
	if (n->in[0]->type.rank < 0 || past_type(k, n, 1, pk) < 0 || past_type(k, n, 2, pv) < 0)
		return "the key/value head layout is unknown";
	return NULL;
}

/* Attention n gets slot s: present outputs become graph outputs, past inputs graph inputs. */
static void rewrite_attention(Kv *k, Graph *g, Node *n, int s)
{
	Type pk, pv;
	const char *why = attn_blocker(k, n, &pk, &pv);
	if (why) {
		pass_remark(k->c, REMARK_MISSED, g, n, "did not cache Attention '%s': %s", pass_node_name(n), why);
		return;
	}
	GState *st = gstate(k, g);
	Value *in[6] = { n->in[0], n->in[1], n->in[2], n->nin > 3 ? n->in[3] : NULL, NULL, NULL };
	int nin = in[3] ? 4 : 3;
	if (k->decode) {
		in[4] = ir_add_input(g, slot_name(g, "past_key", s), pk, n->loc);
		in[5] = ir_add_input(g, slot_name(g, "past_value", s), pv, n->loc);
		nin = 6;
	}
	const char *names[3] = { ir_fresh_name(g, n->out[0]->name), slot_name(g, "present_key", s),
				 slot_name(g, "present_value", s) };
	Node *r = ir_insert_node(g, n, OP_Attention, in, nin, names, 3, n->loc);
	for (int i = 0; i < n->attrs.n; i++)
		ir_set_attr(r, &n->attrs.a[i]);
	r->annot = n->annot;
	ir_replace_uses(g, n->out[0], r->out[0]);
	const char *name = n->out[0]->name;
	n->out[0]->name = r->out[0]->name;
	r->out[0]->name = name;
	ir_remove_node(g, n);
	add_output(g, r->out[1]);
	add_output(g, r->out[2]);
	st->slots++;
	pass_changed(k->c, "attentions cached");
	pass_remark(k->c, REMARK_APPLIED, g, r, "%s: Attention '%s' %sreturns present_key.%d/present_value.%d",
		    k->c->phase, name, k->decode ? "reads past_key/past_value and " : "", s, s);
}

static int process(Kv *k, Graph *g);

/* Call n of a callee that carries ks cache slots: unrolled into repeat-1 calls whose extra
 * inputs (decode) and outputs are new slots of g. */
static void rewrite_call(Kv *k, Graph *g, Node *n, int ks)
{
	Graph *callee = n->callee;
	int per = k->decode ? 2 * ks : 0, nin = n->nin + per, nout = n->nout + 2 * ks;
	Value **in = calloc((size_t)nin, sizeof *in);
	const char **names = calloc((size_t)nout, sizeof *names);
	if (!in || !names)
		abort();
	Node *prev = NULL;
	for (int64_t r = 0; r < n->repeat; r++) {
		int base = gstate(k, g)->slots;
		for (int i = 0; i < n->nin; i++)
			in[i] = prev && i < n->nout ? prev->out[i] : n->in[i];
		for (int j = 0; j < ks && k->decode; j++) {
			Value *pk = callee->inputs[callee->nin - per + 2 * j];
			Value *pv = callee->inputs[callee->nin - per + 2 * j + 1];
			in[n->nin + 2 * j] = ir_add_input(g, slot_name(g, "past_key", base + j), pk->type, n->loc);
			in[n->nin + 2 * j + 1] = ir_add_input(g, slot_name(g, "past_value", base + j), pv->type, n->loc);
		}
		for (int i = 0; i < n->nout; i++)
			names[i] = ir_fresh_name(g, n->out[i]->name);
		for (int j = 0; j < ks; j++) {
			names[n->nout + 2 * j] = slot_name(g, "present_key", base + j);
			names[n->nout + 2 * j + 1] = slot_name(g, "present_value", base + j);
		}
		Node *c = ir_insert_node(g, n, OP_Call, in, nin, names, nout, n->loc);
		for (int i = 0; i < n->attrs.n; i++)
			ir_set_attr(c, &n->attrs.a[i]);
		c->callee = callee;
		c->repeat = 1;
		c->annot = n->annot;
		for (int j = 0; j < 2 * ks; j++)
			add_output(g, c->out[n->nout + j]);
		gstate(k, g)->slots += ks;
		prev = c;
	}
	for (int i = 0; i < n->nout; i++) {
		const char *name = n->out[i]->name;
		ir_replace_uses(g, n->out[i], prev->out[i]);
		n->out[i]->name = prev->out[i]->name;
		prev->out[i]->name = name;
	}
	pass_changed(k->c, "calls threaded");
	if (n->repeat > 1) {
		pass_stat(k->c, "repeats unrolled", 1);
		pass_remark(k->c, REMARK_APPLIED, g, prev, "%s: unrolled repeat %lld %s into %lld calls, %d cache slot%s each",
			    k->c->phase, (long long)n->repeat, callee->name, (long long)n->repeat, ks, ks == 1 ? "" : "s");
	}
	ir_remove_node(g, n);
	free(in);
	free(names);
}

/* Rewrites g (callees first); returns the cache slots it carries. */
static int process(Kv *k, Graph *g)
{
	GState *st = gstate(k, g);
	if (st->state)
		return st->slots;       /* done (or a cycle, which the verifier reports) */
	st->state = 1;
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		if (n->op == OP_Attention) {
			if (pass_bisect(k->c, n, "cache attention"))
				rewrite_attention(k, g, n, gstate(k, g)->slots);
		} else if (n->op == OP_Call && n->callee) {
			int ks = process(k, n->callee);
			if (ks > 0 && pass_bisect(k->c, n, "thread cache through call"))
				rewrite_call(k, g, n, ks);
		}
	}
	st = gstate(k, g);
	st->state = 2;
	return st->slots;
}

int pass_kv_cache(Module *m, PassCtx *c)
{
	if (!c->phase)
		return 0;
	Kv k = { c, m, strcmp(c->phase, "decode") == 0, dim_c(c->context), NULL, 0, 0, 0 };
	Graph *entry = ir_entry(m);
	if (strcmp(c->phase, "prefill") && !k.decode) {
		fprintf(stderr, "aicc: error: unknown phase '%s' (expected prefill or decode)\n", c->phase);
		return 1;
	}
	if (k.decode && c->context < 1) {
		fprintf(stderr, "aicc: error: the decode phase needs --context N (N >= 1 past tokens)\n");
		return 1;
	}
	int slots = entry ? process(&k, entry) : 0;
	if (entry && !slots) {
		pass_remark(c, REMARK_MISSED, entry, NULL, "%s: no Attention to cache in graph '%s'", c->phase, entry->name);
	} else if (entry)
		pass_remark(c, REMARK_ANALYSIS, entry, NULL, "%s: graph '%s' carries %d KV-cache slot%s%s", c->phase,
			    entry->name, slots, slots == 1 ? "" : "s", k.decode ? " in and out" : " out");
	free(k.gs);
	return k.errors;
}
