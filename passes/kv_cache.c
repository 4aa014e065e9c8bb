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
 * Multi-head latent attention (DeepSeek-V3) caches its latent instead: when K and V are computed
 * per token, through up-projections (MatMul by a weight) and layout ops (Reshape and Expand that
 * keep the batch and sequence axes, Split and Concat on the last axis), from a few [B, S, w]
 * values (the normalised compressed KV of 512 and the roped shared key of 64 for DeepSeek-V3)
 * whose width is less than K's and V's together, those values are the cache: they are
 * concatenated into one `present_latent.N` [B, P+S, w] (the past latent in front for decode),
 * split again, and the up-projections re-run on all P+S tokens; the decode Attention (one
 * query) then sees every key without is_causal.  Per token and layer that is 576 values
 * instead of 128 * (192 + 128) = 40960 (docs/passes.md).
 * Requires shape-inferred graphs; the entry graph's signature changes.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "passes/pass.h"

/* The cache tensors a graph carries: its last inputs (decode) and last outputs, in order. */
typedef struct GState {
	Graph *g;
	int state;          /* 1: being processed, 2: done */
	int slots;          /* cache slots (layers) the graph now carries */
	int nt;             /* cache tensors: two per key/value slot, one per latent slot */
	const char **kind;  /* per tensor: "key", "value" or "latent" */
	int *slot;          /* per tensor: its slot */
	int64_t *tokbytes;  /* per tensor: bytes per token (0: unknown) */
	unsigned char *past;   /* per tensor: 1 when it has a past input (decode; mixed groups with p > 0) */
} GState;

typedef struct Kv {
	PassCtx *c;
	Module *m;
	int decode;
	Dim past;           /* decode: past tokens */
	int mixed;          /* phase "mixed": mg[ng] */
	PassMixGroup mg[PASS_MIX_MAX];
	int ng;
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
	k->gs[k->ngs] = (GState){ g, 0, 0, 0, NULL, NULL, NULL, NULL };
	return &k->gs[k->ngs++];
}

/* Records cache tensor `kind` of slot s in g's state (the arrays live in the module's arena);
 * past: whether it has a past input. */
static void add_tensor_past(Kv *k, Graph *g, const char *kind, int s, int64_t tokbytes, int past)
{
	GState *st = gstate(k, g);
	const char **kd = arena_alloc(k->m->arena, (size_t)(st->nt + 1) * sizeof *kd);
	int *sl = arena_alloc(k->m->arena, (size_t)(st->nt + 1) * sizeof *sl);
	int64_t *tb = arena_alloc(k->m->arena, (size_t)(st->nt + 1) * sizeof *tb);
	unsigned char *pa = arena_alloc(k->m->arena, (size_t)(st->nt + 1));
	if (st->nt) {
		memcpy(kd, st->kind, (size_t)st->nt * sizeof *kd);
		memcpy(sl, st->slot, (size_t)st->nt * sizeof *sl);
		memcpy(tb, st->tokbytes, (size_t)st->nt * sizeof *tb);
		memcpy(pa, st->past, (size_t)st->nt);
	}
	kd[st->nt] = kind, sl[st->nt] = s, tb[st->nt] = tokbytes, pa[st->nt] = (unsigned char)past;
	st->kind = kd, st->slot = sl, st->tokbytes = tb, st->past = pa;
	st->nt++;
}

/* add_tensor_past with the phase's rule: decode tensors have a past input, prefill ones not. */
static void add_tensor(Kv *k, Graph *g, const char *kind, int s, int64_t tokbytes)
{
	add_tensor_past(k, g, kind, s, tokbytes, k->decode);
}

/* Bytes per token of one cache entry of type t whose values per token are `per` (-1: unknown). */
static int64_t token_bytes(Type t, int64_t per)
{
	return per > 0 && t.dt != DT_INVALID ? rt_dtype_bytes(t.dt, per) : 0;
}

static const char *slot_name(Graph *g, const char *what, int s)
{
	char buf[96];
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

/* The element format of a cache of keys or values held in dt: --kv-format's (an FP8 cache for a
 * wider float), else dt. */
static DType cache_dtype(const Kv *k, DType dt)
{
	DType f = k->c->kv_format;
	return f > DT_INVALID && f < DT_COUNT && rt_dtype_isfloat(dt) && rt_dtypes[dt].bits > rt_dtypes[f].bits ? f : dt;
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
	*out = ir_type(k->m, cache_dtype(k, t.dt), 4, d);
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
	Value *pres[2] = { r->out[1], r->out[2] };
	for (int j = 0; j < 2; j++) {     /* prefill into an FP8 cache: the outputs are rounded to it */
		Type want = j ? pv : pk;
		if (k->decode || want.dt == r->in[1 + j]->type.dt)
			continue;
		Value *y = r->out[1 + j];
		const char *pname = y->name;
		y->name = ir_fresh_name(g, pname);
		Node *cst = ir_insert_node(g, r->next, OP_Cast, &y, 1, &pname, 1, n->loc);
		ir_set_attr_str(cst, "to", rt_dtype_name(want.dt));
		cst->out[0]->type = ir_type(g->m, want.dt, y->type.rank, y->type.dims);
		cst->annot = r->annot;
		pres[j] = cst->out[0];
	}
	add_output(g, pres[0]);
	add_output(g, pres[1]);
	add_tensor(k, g, "key", s, dim_isconst(pk.dims[1]) && dim_isconst(pk.dims[3]) ? token_bytes(pk, pk.dims[1].k * pk.dims[3].k) : 0);
	add_tensor(k, g, "value", s, dim_isconst(pv.dims[1]) && dim_isconst(pv.dims[3]) ? token_bytes(pv, pv.dims[1].k * pv.dims[3].k) : 0);
	st = gstate(k, g);
	st->slots++;
	pass_changed(k->c, "attentions cached");
	pass_remark(k->c, REMARK_APPLIED, g, r, "%s: Attention '%s' %sreturns present_key.%d/present_value.%d",
		    k->c->phase, name, k->decode ? "reads past_key/past_value and " : "", s, s);
}

/* ---- MLA: the latent as the cache ---- */

enum { MAXLAT = 64, MAXPARTS = 8 };

typedef struct Lat {
	Node *nodes[MAXLAT];   /* per-token nodes from the latent parts to K and V */
	int n;
	Value *parts[MAXPARTS];   /* the cached [B, S, w] values, in definition order */
	int np;
} Lat;

/* Element i of constant v, or def when v is not a known constant of more than i elements. */
static int64_t const_at(Value *v, int64_t i, int64_t def)
{
	const RtTensor *t = v ? ir_const_data(v) : NULL;
	return t && t->n > i ? rt_geti(t, i) : def;
}

/* The axis attribute of n normalised against rank r (default 0). */
static int64_t norm_axis(const Node *n, int r)
{
	int64_t ax = rt_attr_int(&n->attrs, "axis", 0);
	return ax < 0 ? ax + r : ax;
}

/* Whether layout node n treats every (batch, token) position alike and keeps both axes. */
static int per_token(Node *n)
{
	int r = n->in[0] ? n->in[0]->type.rank : -1;
	switch (n->op) {
	case OP_Reshape:
		return r >= 2 && !rt_attr_int(&n->attrs, "allowzero", 0) && const_at(n->in[1], 0, -1) == 0 &&
		       const_at(n->in[1], 1, -1) == 0;
	case OP_Expand:
		return r >= 2 && const_at(n->in[1], 0, -1) == 1 && const_at(n->in[1], 1, -1) == 1;
	case OP_Split:
	case OP_Concat:
		return r >= 3 && norm_axis(n, r) >= 2;
	default:
		return (ir_ops[n->op].flags & (F_ELEM | F_UNARY)) == (F_ELEM | F_UNARY) && n->nin == 1;
	}
}

static int lat_has(const Lat *l, const Node *n)
{
	for (int i = 0; i < l->n; i++)
		if (l->nodes[i] == n)
			return 1;
	return 0;
}

static int lat_part(Lat *l, Value *v)
{
	for (int i = 0; i < l->np; i++)
		if (l->parts[i] == v)
			return 1;
	if (l->np == MAXPARTS || v->type.rank != 3)
		return 0;
	l->parts[l->np++] = v;
	return 1;
}

/* Walks back from v (K or V) to the latent: RotaryEmbedding results and up-projection inputs
 * are cached, per-token layout nodes between them are recomputed. */
static int lat_walk(Lat *l, Value *v, int depth)
{
	if (depth > 32 || !v || v->kind != V_NODE)
		return 0;
	Node *d = v->def;
	if (lat_has(l, d))
		return 1;
	if (d->op == OP_RotaryEmbedding)
		return lat_part(l, v);
	if (l->n == MAXLAT)
		return 0;
	if (d->op == OP_MatMul && d->in[1]->kind == V_PARAM && d->in[1]->type.rank == 2) {
		l->nodes[l->n++] = d;
		return lat_part(l, d->in[0]);
	}
	if (!per_token(d))
		return 0;
	l->nodes[l->n++] = d;
	int nin = d->op == OP_Concat ? d->nin : 1;
	for (int i = 0; i < nin; i++)
		if (!lat_walk(l, d->in[i], depth + 1))
			return 0;
	return 1;
}

/* The position of n in g (for a deterministic order of parts and nodes). */
static int node_pos(const Graph *g, const Node *n)
{
	int i = 0;
	ir_foreach_node(g, q) {
		if (q == n)
			return i;
		i++;
	}
	return -1;
}

/* Sorts the latent parts by their definition order and the nodes by graph order. */
static void lat_sort(const Graph *g, Lat *l)
{
	for (int i = 1; i < l->np; i++)
		for (int j = i; j > 0 && node_pos(g, l->parts[j]->def) < node_pos(g, l->parts[j - 1]->def); j--) {
			Value *t = l->parts[j];
			l->parts[j] = l->parts[j - 1], l->parts[j - 1] = t;
		}
	for (int i = 1; i < l->n; i++)
		for (int j = i; j > 0 && node_pos(g, l->nodes[j]) < node_pos(g, l->nodes[j - 1]); j--) {
			Node *t = l->nodes[j];
			l->nodes[j] = l->nodes[j - 1], l->nodes[j - 1] = t;
		}
}

/* Whether Attention n's K and V come from a latent narrower than them (filled in *l); *w is its
 * width and *kv the values per token of K and V. */
static int find_latent(Kv *k, Graph *g, Node *n, Lat *l, int64_t *w, int64_t *kv)
{
	Value *q = n->in[0];
	if (n->nin > 3 || q->type.rank != 3 || n->in[1]->type.rank != 3 || n->in[2]->type.rank != 3)
		return 0;   /* masks, past inputs and 4-D layouts keep the per-head cache */
	l->n = l->np = 0;
	if (!lat_walk(l, n->in[1], 0) || !lat_walk(l, n->in[2], 0) || l->np == 0)
		return 0;
	*w = 0;
	for (int i = 0; i < l->np; i++) {
		Type t = l->parts[i]->type;
		if (!dim_eq(t.dims[0], q->type.dims[0]) || !dim_eq(t.dims[1], q->type.dims[1]) ||
		    !dim_isconst(t.dims[2]) || t.dt != l->parts[0]->type.dt)
			return 0;
		*w += t.dims[2].k;
	}
	Dim dk = n->in[1]->type.dims[2], dv = n->in[2]->type.dims[2];
	if (!dim_isconst(dk) || !dim_isconst(dv) || *w >= dk.k + dv.k)
		return 0;
	*kv = dk.k + dv.k;
	if (k->decode && !(dim_isconst(q->type.dims[1]) && q->type.dims[1].k == 1) &&
	    rt_attr_int(&n->attrs, "is_causal", 0))
		return 0;   /* causal attention of several new tokens over a past needs an offset mask */
	lat_sort(g, l);
	return 1;
}

/* An inline i64 literal operand. */
static Value *i64_list(Graph *g, const int64_t *v, int n, Loc loc)
{
	ParamInit *pi = arena_alloc(g->m->arena, sizeof *pi);
	pi->kind = INIT_LITERAL;
	pi->lit = arena_alloc(g->m->arena, (size_t)n * sizeof *pi->lit);
	for (int i = 0; i < n; i++)
		pi->lit[i] = (double)v[i];
	pi->nlit = n;
	pi->inline_lit = 1;
	Dim d = dim_c(n);
	return ir_add_param(g, ir_fresh_name(g, "c"), ir_type(g->m, DT_I64, 1, &d), pi, loc);
}

/* Decode: K and V recomputed from the latent of all P+S tokens; the new Attention replaces n. */
static Node *attend_latent(Kv *k, Graph *g, Node *n, Lat *l, Value *all)
{
	Value *full[MAXPARTS], *map[MAXLAT];
	if (l->np == 1)
		full[0] = all;
	else {
		const char *names[MAXPARTS];
		int64_t sizes[MAXPARTS];
		for (int i = 0; i < l->np; i++) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s.all", l->parts[i]->name);
			names[i] = ir_fresh_name(g, buf);
			sizes[i] = l->parts[i]->type.dims[2].k;
		}
		Value *in[2] = { all, i64_list(g, sizes, l->np, n->loc) };
		Node *sp = ir_insert_node(g, n, OP_Split, in, 2, names, l->np, n->loc);
		ir_set_attr_int(sp, "axis", -1);
		for (int i = 0; i < l->np; i++)
			full[i] = sp->out[i];
	}
	for (int i = 0; i < l->n; i++) {
		Node *d = l->nodes[i];
		Value *in[16];
		const char *names[16];
		int nin = d->nin < 16 ? d->nin : 16, nout = d->nout < 16 ? d->nout : 16;
		for (int j = 0; j < nin; j++) {
			in[j] = d->in[j];
			for (int p = 0; p < l->np; p++)
				if (in[j] == l->parts[p])
					in[j] = full[p];
			for (int q = 0; q < i; q++)
				if (in[j] && in[j]->kind == V_NODE && in[j]->def == l->nodes[q])
					in[j] = map[q] ? map[q]->def->out[in[j]->defidx] : in[j];
		}
		for (int j = 0; j < nout; j++) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s.all", d->out[j]->name);
			names[j] = ir_fresh_name(g, buf);
		}
		Node *c = ir_insert_node(g, n, d->op, in, nin, names, nout, d->loc);
		for (int a = 0; a < d->attrs.n; a++)
			ir_set_attr(c, &d->attrs.a[a]);
		c->annot = d->annot;
		map[i] = c->out[0];
	}
	Value *in[3] = { n->in[0], n->in[1], n->in[2] };
	for (int j = 1; j < 3; j++)
		for (int q = 0; q < l->n; q++)
			if (in[j]->kind == V_NODE && in[j]->def == l->nodes[q])
				in[j] = map[q]->def->out[in[j]->defidx];
	const char *name = ir_fresh_name(g, n->out[0]->name);
	Node *r = ir_insert_node(g, n, OP_Attention, in, 3, &name, 1, n->loc);
	for (int a = 0; a < n->attrs.n; a++)   /* one query sees every key: no causal mask */
		if (strcmp(n->attrs.a[a].name, "is_causal"))
			ir_set_attr(r, &n->attrs.a[a]);
	r->annot = n->annot;
	ir_replace_uses(g, n->out[0], r->out[0]);
	const char *old = n->out[0]->name;
	n->out[0]->name = r->out[0]->name;
	r->out[0]->name = old;
	ir_remove_node(g, n);
	for (int i = l->n - 1; i >= 0; i--) {
		int used = 0;
		for (int j = 0; j < l->nodes[i]->nout; j++)
			used |= l->nodes[i]->out[j]->nuses > 0 || pass_is_output(l->nodes[i]->out[j]);
		if (!used)
			ir_remove_node(g, l->nodes[i]);
	}
	return r;
}

/* MLA Attention n gets latent slot s: `present_latent.s` (past latent + new latent for decode)
 * is a graph output, `past_latent.s` a graph input.  Returns 0 when n has no narrower latent. */
static int cache_latent(Kv *k, Graph *g, Node *n, int s)
{
	Lat l;
	int64_t w, kv;
	for (int i = 1; i < n->nout; i++)
		if (n->out[i]->nuses || pass_is_output(n->out[i]))
			return 0;
	if (!find_latent(k, g, n, &l, &w, &kv))
		return 0;
	Loc loc = n->loc;
	Value *lat;
	const char *pname = slot_name(g, "present_latent", s);
	if (l.np == 1 && !k->decode) {
		lat = ir_insert_node(g, n, OP_Identity, l.parts, 1, &pname, 1, loc)->out[0];
	} else {
		const char *name = k->decode ? ir_fresh_name(g, "latent") : pname;
		Node *c = ir_insert_node(g, n, OP_Concat, l.parts, l.np, &name, 1, loc);
		ir_set_attr_int(c, "axis", -1);
		lat = c->out[0];
	}
	Value *present = lat;
	if (k->decode) {
		Dim d[3] = { n->in[0]->type.dims[0], k->past, dim_c(w) };
		Value *in[2] = { ir_add_input(g, slot_name(g, "past_latent", s), ir_type(k->m, l.parts[0]->type.dt, 3, d), loc), lat };
		Node *c = ir_insert_node(g, n, OP_Concat, in, 2, &pname, 1, loc);
		ir_set_attr_int(c, "axis", 1);
		present = c->out[0];
	}
	char parts[256];
	size_t o = 0;
	for (int i = 0; i < l.np && o < sizeof parts - 64; i++)
		o += (size_t)snprintf(parts + o, sizeof parts - o, "%s'%s' %lld", i ? " + " : "", l.parts[i]->name,
				      (long long)l.parts[i]->type.dims[2].k);
	int64_t tb = token_bytes(l.parts[0]->type, w), tkv = token_bytes(n->in[1]->type, kv);
	const char *name = pass_node_name(n);
	Node *at = k->decode ? attend_latent(k, g, n, &l, present) : n;
	add_output(g, present);
	add_tensor(k, g, "latent", s, tb);
	gstate(k, g)->slots++;
	pass_changed(k->c, "attentions cached");
	pass_stat(k->c, "latent caches", 1);
	pass_remark(k->c, REMARK_APPLIED, g, at, "%s: Attention '%s' caches its latent (%s): %lld values, "
		    "%lld bytes per token per layer, instead of %lld values (%lld bytes) of per-head K and V; %s",
		    k->c->phase, name, parts, (long long)w, (long long)tb, (long long)kv, (long long)tkv,
		    k->decode ? "past_latent is concatenated in front and the up-projections re-run on every token"
			      : "returns present_latent");
	return 1;
}


/* ---- mixed: chunked prefills and decodes in one flattened token batch ---- */

int pass_mix_parse(const char *spec, PassMixGroup *g, char *err, size_t errn)
{
	int ng = 0;
	const char *p = spec;
	if (!*p) {
		snprintf(err, errn, "empty composition (expected NxS+P,..., e.g. 32x1+2048,1x512+0)");
		return -1;
	}
	while (*p) {
		char *end;
		long long v[3] = { 0, 0, 0 };
		for (int f = 0; f < 3; f++) {
			if (f == 2 && *p != '+')
				break;
			if (f > 0)
				p++;
			v[f] = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
			if (v[f] < 0 || end == p || (f < 2 && v[f] < 1) || v[f] > (1LL << 40)) {
				snprintf(err, errn, "group %d of '%s': expected NxS+P with N, S >= 1 and P >= 0", ng + 1, spec);
				return -1;
			}
			p = end;
			if (f == 0 && *p != 'x') {
				snprintf(err, errn, "group %d of '%s': expected 'x' after the sequence count", ng + 1, spec);
				return -1;
			}
		}
		if (ng == PASS_MIX_MAX) {
			snprintf(err, errn, "'%s' has more than %d groups", spec, PASS_MIX_MAX);
			return -1;
		}
		g[ng++] = (PassMixGroup){ v[0], v[1], v[2] };
		if (*p == ',' && p[1])
			p++;
		else if (*p) {
			snprintf(err, errn, "unexpected '%c' in '%s'", *p, spec);
			return -1;
		}
	}
	return ng;
}

int64_t pass_mix_tokens(const PassMixGroup *g, int ng)
{
	int64_t t = 0;
	for (int i = 0; i < ng; i++)
		t += g[i].n * g[i].s;
	return t;
}

/* Reshape x to the constant dims d[rank], inserted before n. */
static Value *reshape_to(Graph *g, Node *n, Value *x, const int64_t *d, int rank, const char *what)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s.%s", x->name, what);
	const char *name = ir_fresh_name(g, buf);
	Value *in[2] = { x, i64_list(g, d, rank, n->loc) };
	return ir_insert_node(g, n, OP_Reshape, in, 2, &name, 1, n->loc)->out[0];
}

/* Why Attention n cannot take the mixed composition, or NULL. */
static const char *mixed_blocker(Kv *k, Node *n)
{
	int64_t t = pass_mix_tokens(k->mg, k->ng);
	if (n->nin > 3 && n->in[3])
		return "it has an attention mask";
	if (n->nin > 4 && (n->in[4] || (n->nin > 5 && n->in[5])))
		return "it already has past_key/past_value inputs";
	for (int i = 1; i < n->nout; i++)
		if (n->out[i]->nuses || pass_is_output(n->out[i]))
			return "its present or qk outputs are already read";
	for (int i = 0; i < 3; i++) {
		Type ty = n->in[i]->type;
		if (ty.rank != 3 || !dim_isconst(ty.dims[0]) || !dim_isconst(ty.dims[1]) || !dim_isconst(ty.dims[2]))
			return "Q, K and V must be [B, S, heads * head_dim] with known sizes";
		if (ty.dims[0].k != 1 || ty.dims[1].k != t)
			return "the mixed phase needs B = 1 and S = the composition's tokens";
	}
	return NULL;
}

/* Attention n in mixed mode: group j's rows of Q, K and V (a Split along the token axis) are
 * reshaped to [n_j, s_j, X] and attend over past_key/past_value.<slot> [n_j, kvh, p_j, hd] (when
 * p_j > 0) with n's attributes; the results are reshaped back and concatenated.  Group j takes
 * cache slot s + j. */
static void rewrite_mixed(Kv *k, Graph *g, Node *n, int s)
{
	const char *why = mixed_blocker(k, n);
	Type pk, pv;
	if (!why && (past_type(k, n, 1, &pk) < 0 || past_type(k, n, 2, &pv) < 0))
		why = "the key/value head layout is unknown";
	if (why) {
		pass_remark(k->c, REMARK_MISSED, g, n, "did not cache Attention '%s': %s", pass_node_name(n), why);
		if (strstr(why, "already"))
			return;     /* a cache of its own, as in the other phases: left alone */
		k->errors++;
		fprintf(stderr, "aicc: error: the mixed phase cannot rewrite Attention '%s': %s\n", pass_node_name(n), why);
		return;
	}
	Value *part[3][PASS_MIX_MAX];
	int64_t sizes[PASS_MIX_MAX];
	for (int j = 0; j < k->ng; j++)
		sizes[j] = k->mg[j].n * k->mg[j].s;
	for (int i = 0; i < 3; i++) {
		if (k->ng == 1) {
			part[i][0] = n->in[i];
			continue;
		}
		const char *names[PASS_MIX_MAX];
		for (int j = 0; j < k->ng; j++) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s.g%d", n->in[i]->name, j);
			names[j] = ir_fresh_name(g, buf);
		}
		Value *in[2] = { n->in[i], i64_list(g, sizes, k->ng, n->loc) };
		Node *sp = ir_insert_node(g, n, OP_Split, in, 2, names, k->ng, n->loc);
		ir_set_attr_int(sp, "axis", 1);
		for (int j = 0; j < k->ng; j++)
			part[i][j] = sp->out[j];
	}
	Value *outs[PASS_MIX_MAX];
	for (int j = 0; j < k->ng; j++) {
		const PassMixGroup *mg = &k->mg[j];
		Value *in[6] = { NULL, NULL, NULL, NULL, NULL, NULL };
		for (int i = 0; i < 3; i++) {
			int64_t d[3] = { mg->n, mg->s, n->in[i]->type.dims[2].k };
			in[i] = mg->n > 1 ? reshape_to(g, n, part[i][j], d, 3, "seqs") : part[i][j];
		}
		int nin = 3;
		if (mg->p > 0) {
			Dim dk[4] = { dim_c(mg->n), pk.dims[1], dim_c(mg->p), pk.dims[3] };
			Dim dv[4] = { dim_c(mg->n), pv.dims[1], dim_c(mg->p), pv.dims[3] };
			in[4] = ir_add_input(g, slot_name(g, "past_key", s + j), ir_type(k->m, pk.dt, 4, dk), n->loc);
			in[5] = ir_add_input(g, slot_name(g, "past_value", s + j), ir_type(k->m, pv.dt, 4, dv), n->loc);
			nin = 6;
		}
		char buf[256];
		snprintf(buf, sizeof buf, "%s.g%d", n->out[0]->name, j);
		const char *names[3] = { ir_fresh_name(g, buf), slot_name(g, "present_key", s + j),
					 slot_name(g, "present_value", s + j) };
		Node *r = ir_insert_node(g, n, OP_Attention, in, nin, names, 3, n->loc);
		for (int a = 0; a < n->attrs.n; a++)
			ir_set_attr(r, &n->attrs.a[a]);
		r->annot = n->annot;
		int64_t d[3] = { 1, mg->n * mg->s, n->in[0]->type.dims[2].k };
		outs[j] = mg->n > 1 ? reshape_to(g, n, r->out[0], d, 3, "tokens") : r->out[0];
		for (int t = 1; t <= 2; t++) {   /* a group without a past writes an FP8 cache rounded */
			Type want = t == 1 ? pk : pv;
			Value *y = r->out[t];
			if (mg->p > 0 || want.dt == r->in[t]->type.dt) {
				add_output(g, y);
				continue;
			}
			const char *pname = y->name;
			y->name = ir_fresh_name(g, pname);
			Node *cst = ir_insert_node(g, n, OP_Cast, &y, 1, &pname, 1, n->loc);
			ir_set_attr_str(cst, "to", rt_dtype_name(want.dt));
			cst->annot = r->annot;
			add_output(g, cst->out[0]);
		}
		int64_t kb = dim_isconst(pk.dims[1]) && dim_isconst(pk.dims[3]) ? token_bytes(pk, pk.dims[1].k * pk.dims[3].k) : 0;
		int64_t vb = dim_isconst(pv.dims[1]) && dim_isconst(pv.dims[3]) ? token_bytes(pv, pv.dims[1].k * pv.dims[3].k) : 0;
		add_tensor_past(k, g, "key", s + j, kb, mg->p > 0);
		add_tensor_past(k, g, "value", s + j, vb, mg->p > 0);
		gstate(k, g)->slots++;
	}
	Value *res = outs[0];
	if (k->ng > 1) {
		const char *name = ir_fresh_name(g, n->out[0]->name);
		Node *c = ir_insert_node(g, n, OP_Concat, outs, k->ng, &name, 1, n->loc);
		ir_set_attr_int(c, "axis", 1);
		res = c->out[0];
	}
	ir_replace_uses(g, n->out[0], res);
	const char *name = n->out[0]->name;
	n->out[0]->name = res->name;
	res->name = name;
	ir_remove_node(g, n);
	pass_changed(k->c, "attentions cached");
	pass_remark(k->c, REMARK_APPLIED, g, res->def, "mixed: Attention '%s' split into %d group%s (%s), slots %d..%d",
		    name, k->ng, k->ng == 1 ? "" : "s", k->c->mix, s, s + k->ng - 1);
}

static int process(Kv *k, Graph *g);

/* Call n of a callee that carries cache tensors: unrolled into repeat-1 calls whose extra
 * inputs (decode) and outputs are new slots of g, named by kind and slot. */
static void rewrite_call(Kv *k, Graph *g, Node *n, GState cs)
{
	Graph *callee = n->callee;
	int per = 0;
	for (int j = 0; j < cs.nt; j++)
		per += cs.past[j];
	int nin = n->nin + per, nout = n->nout + cs.nt;
	Value **in = calloc((size_t)nin, sizeof *in);
	const char **names = calloc((size_t)nout, sizeof *names);
	if (!in || !names)
		abort();
	Node *prev = NULL;
	for (int64_t r = 0; r < n->repeat; r++) {
		int base = gstate(k, g)->slots;
		for (int i = 0; i < n->nin; i++)
			in[i] = prev && i < n->nout ? prev->out[i] : n->in[i];
		for (int j = 0, pj = 0; j < cs.nt; j++) {
			char buf[32];
			snprintf(buf, sizeof buf, "past_%s", cs.kind[j]);
			if (cs.past[j]) {
				in[n->nin + pj] = ir_add_input(g, slot_name(g, buf, base + cs.slot[j]),
							       callee->inputs[callee->nin - per + pj]->type, n->loc);
				pj++;
			}
			snprintf(buf, sizeof buf, "present_%s", cs.kind[j]);
			names[n->nout + j] = slot_name(g, buf, base + cs.slot[j]);
		}
		for (int i = 0; i < n->nout; i++)
			names[i] = ir_fresh_name(g, n->out[i]->name);
		Node *c = ir_insert_node(g, n, OP_Call, in, nin, names, nout, n->loc);
		for (int i = 0; i < n->attrs.n; i++)
			ir_set_attr(c, &n->attrs.a[i]);
		c->callee = callee;
		c->repeat = 1;
		c->annot = n->annot;
		for (int j = 0; j < cs.nt; j++) {
			add_output(g, c->out[n->nout + j]);
			add_tensor_past(k, g, cs.kind[j], base + cs.slot[j], cs.tokbytes[j], cs.past[j]);
		}
		gstate(k, g)->slots += cs.slots;
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
			    k->c->phase, (long long)n->repeat, callee->name, (long long)n->repeat, cs.slots,
			    cs.slots == 1 ? "" : "s");
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
		if (n->op == OP_Attention && k->mixed) {
			if (pass_bisect(k->c, n, "cache attention"))
				rewrite_mixed(k, g, n, gstate(k, g)->slots);
		} else if (n->op == OP_Attention) {
			if (pass_bisect(k->c, n, "cache attention") && !cache_latent(k, g, n, gstate(k, g)->slots))
				rewrite_attention(k, g, n, gstate(k, g)->slots);
		} else if (n->op == OP_Call && n->callee) {
			int ks = process(k, n->callee);
			if (ks > 0 && pass_bisect(k->c, n, "thread cache through call"))
				rewrite_call(k, g, n, *gstate(k, n->callee));
		}
	}
	st = gstate(k, g);
	st->state = 2;
	return st->slots;
}

/* The value a graph input v of a callee receives from the first call of it: a param or a node
 * result of the caller (the RoPE table's declaration), else v itself. */
static Value *caller_value(Module *m, Value *v)
{
	for (int depth = 0; v->kind == V_INPUT && depth < 64; depth++) {
		Value *up = NULL;
		for (Graph *g = m->graphs; g && !up; g = g->next)
			for (Node *n = g->first; n && !up; n = n->next)
				for (int i = 0; n->op == OP_Call && n->callee == v->graph && i < v->graph->nin && !up; i++)
					if (v->graph->inputs[i] == v && i < n->nin)
						up = n->in[i];
		if (!up)
			break;
		v = up;
	}
	return v;
}

/* The positions a phase runs at must be rows of every RotaryEmbedding's cos/sin table
 * ([max_position, rotary/2] with position_ids): decode's new token sits at position --context,
 * prefill's and train's tokens at 0..S-1, a mixed group's at p..p+s-1.  A longer context is an
 * error, as vLLM's max_model_len > max_position_embeddings is: the table has no row for it. */
int pass_check_positions(Module *m, PassCtx *c)
{
	int decode = strcmp(c->phase, "decode") == 0, mixed = strcmp(c->phase, "mixed") == 0;
	int64_t mix_end = 0;
	if (mixed) {
		PassMixGroup g[PASS_MIX_MAX];
		char err[256];
		int ng = pass_mix_parse(c->mix ? c->mix : "", g, err, sizeof err);
		for (int i = 0; i < ng; i++)
			if (g[i].p + g[i].s > mix_end)
				mix_end = g[i].p + g[i].s;
	}
	for (Graph *g = m->graphs; g; g = g->next)
		for (Node *n = g->first; n; n = n->next) {
			if (n->op != OP_RotaryEmbedding || n->nin < 4 || !n->in[3] || n->in[1]->type.rank != 2 ||
			    !dim_isconst(n->in[1]->type.dims[0]) || n->in[3]->type.rank != 2)
				continue;
			Dim s = n->in[3]->type.dims[1];
			int64_t rows = n->in[1]->type.dims[0].k;
			int64_t end = decode ? c->context + 1 : mixed ? mix_end : dim_isconst(s) ? s.k : 0;
			if (end <= rows)
				continue;
			Value *t = caller_value(m, n->in[1]);
			char how[96];
			if (decode)
				snprintf(how, sizeof how, "--context %lld puts the new token", (long long)c->context);
			else if (mixed)
				snprintf(how, sizeof how, "--mix runs a sequence");
			else
				snprintf(how, sizeof how, "%lld tokens per sequence run up to", (long long)end);
			diag_error(t->loc, "%s: %s%s position %lld, past the RoPE table '%s' of %lld rows (the model's "
				   "maximum context: vLLM's max_position_embeddings); at most %lld %s", c->phase, how,
				   decode || mixed ? " at" : "", (long long)end - 1, t->name, (long long)rows, (long long)(decode ? rows - 1 : rows),
				   decode ? "past tokens" : "tokens per sequence");
			diag_note(n->loc, "RotaryEmbedding '%s' reads the table at position_ids", n->out[0]->name);
			return 1;
		}
	return 0;
}

int pass_kv_cache(Module *m, PassCtx *c)
{
	if (c->phase && pass_check_positions(m, c))
		return 1;
	if (!c->phase || strcmp(c->phase, "train") == 0)   /* train: passes/autodiff.c */
		return 0;
	Kv k = { .c = c, .m = m, .decode = strcmp(c->phase, "decode") == 0, .past = dim_c(c->context),
		 .mixed = strcmp(c->phase, "mixed") == 0 };
	Graph *entry = ir_entry(m);
	if (strcmp(c->phase, "prefill") && !k.decode && !k.mixed) {
		fprintf(stderr, "aicc: error: unknown phase '%s' (expected prefill, decode or mixed)\n", c->phase);
		return 1;
	}
	char err[256];
	if (k.mixed && (k.ng = pass_mix_parse(c->mix ? c->mix : "", k.mg, err, sizeof err)) < 0) {
		fprintf(stderr, "aicc: error: the mixed phase: %s\n", err);
		return 1;
	}
	if (k.decode && c->context < 1) {
		fprintf(stderr, "aicc: error: the decode phase needs --context N (N >= 1 past tokens)\n");
		return 1;
	}
	int slots = entry ? process(&k, entry) : 0;
	if (entry && !slots) {
		pass_remark(c, REMARK_MISSED, entry, NULL, "%s: no Attention to cache in graph '%s'", c->phase, entry->name);
	} else if (entry) {
		GState *st = gstate(&k, entry);
		int64_t bytes = 0;
		int known = 1;
		for (int i = 0; i < st->nt; i++) {
			bytes += st->tokbytes[i];
			known &= st->tokbytes[i] > 0;
		}
		char per[96] = "";
		if (known) {
			snprintf(per, sizeof per, ": %lld bytes per token of a sequence", (long long)bytes);
			pass_stat(c, "KV-cache bytes per token", bytes);
		}
		pass_remark(c, REMARK_ANALYSIS, entry, NULL, "%s: graph '%s' carries %d KV-cache slot%s%s%s", c->phase,
			    entry->name, slots, slots == 1 ? "" : "s", k.decode ? " in and out" : k.mixed ? " (past in where p > 0) and out" : " out", per);
	}
	free(k.gs);
	return k.errors;
}
