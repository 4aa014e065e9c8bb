/* passes/recognize.c: decomposed normalisations, activations and attention, as real exporters
 * write them (torch.onnx, tf2onnx, HF modelling code), rewritten to the operator they compute.
 *
 *   LayerNorm  ReduceMean(x) -> Sub -> Pow 2 | Mul self -> ReduceMean -> Add eps -> Sqrt
 *              -> Div | Reciprocal+Mul  [-> Mul gamma [-> Add beta]]   => LayerNormalization
 *   RMSNorm    Pow 2 | Mul self -> ReduceMean -> Add eps -> Sqrt -> Div | Reciprocal+Mul
 *              [-> Mul gamma]                                          => RMSNormalization
 *   GELU       x * 0.5 * (1 + Erf(x / sqrt 2 | x * 1/sqrt 2))           => Gelu
 *              x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3)))   => Gelu {approximate=tanh}
 *   SiLU       x * Sigmoid(x)                                          => Silu
 *   SwiGLU     Silu(g) * u                                             => SwiGLU(g, u)
 *   attention  MatMul(Q, Transpose(K, [0,1,3,2])) [-> Mul|Div c] [-> Add mask] -> Softmax
 *              -> MatMul(., V), Q K V 4-D                              => Attention {scale}
 * Operands of commutative operators match in either order.  Constants are checked exactly in
 * f32 (0.5, 1 and 3 equal; sqrt 2, 1/sqrt 2, sqrt(2/pi), 0.044715 within 1 ulp), the epsilon is
 * carried over bit for bit.  Every intermediate must have the pattern as its only reader (a
 * remark says which one does not), and the matched nodes must carry the same annotations.
 * The replacement takes the root's name; the matched nodes are removed.
 * Requires inferred shapes; leaves new nodes untyped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"

#define MAXM 16

/* A match in progress: the nodes it covers, its root, and the reason it failed. */
typedef struct Match {
	Node *nodes[MAXM];
	int n;
	Node *root;
	const char *why;        /* a near miss, for the remark */
	char buf[256];
} Match;

/* v's defining node when it is `op` (and alive), else NULL. */
static Node *def(Value *v, Op op)
{
	return v && v->kind == V_NODE && !v->def->dead && v->def->op == op ? v->def : NULL;
}

static void take(Match *mt, Node *n)
{
	if (n && mt->n < MAXM)
		mt->nodes[mt->n++] = n;
}

/* Whether the intermediate v is read only inside the pattern (`uses` reads); else records why. */
static int only(Match *mt, Value *v, int uses)
{
	if (v->nuses == uses && !pass_is_output(v))
		return 1;
	if (!mt->why) {
		int out = pass_is_output(v), k = v->nuses - uses - out;
		if (k > 0)
			snprintf(mt->buf, sizeof mt->buf, "intermediate '%s' has %d other reader%s%s", v->name, k,
				 k == 1 ? "" : "s", out ? " and is a graph output" : "");
		else
			snprintf(mt->buf, sizeof mt->buf, "intermediate '%s' is a graph output", v->name);
		mt->why = mt->buf;
	}
	return 0;
}

/* Whether constant v is x rounded to f32, within one f32 ulp. */
static int near(Value *v, double x)
{
	double k;
	if (!pass_const_scalar(v, &k))
		return 0;
	float a = (float)k, b = (float)x;
	return a == b || nextafterf(a, b) == b;
}

/* The other operand of binary n, given one of them (NULL when v is not an operand). */
static Value *other(Node *n, Value *v)
{
	return n->in[0] == v ? n->in[1] : n->in[1] == v ? n->in[0] : NULL;
}

/* The constant operand of commutative binary n near x; *rest gets the other one. */
static int const_operand(Node *n, double x, Value **rest)
{
	for (int i = 0; i < 2; i++)
		if (near(n->in[i], x)) {
			*rest = n->in[1 - i];
			return 1;
		}
	return 0;
}

/* The single reader of v, when it is `op`. */
static Node *user(Value *v, Op op)
{
	Node *u = pass_single_user(v);
	return u && u->op == op ? u : NULL;
}

/* ---- shared pieces ---- */
/* The first reduced axis when n reduces exactly the trailing axes [k, rank) with keepdims=1;
 * -1 otherwise.  Axes come from the attribute (before opset 18) or the constant input 1. */
static int trailing_axes(Node *n, int rank)
{
	int k = 0;
	const int64_t *ax = rt_attr_ints(&n->attrs, "axes", &k);
	const RtTensor *t = n->nin > 1 && n->in[1] ? ir_const_data(n->in[1]) : NULL;
	int64_t buf[IR_MAX_RANK];
	if (t && t->n <= IR_MAX_RANK) {
		k = (int)t->n;
		for (int i = 0; i < k; i++)
			buf[i] = rt_geti(t, i);
		ax = buf;
	}
	if (!ax || k < 1 || k > rank || rt_attr_int(&n->attrs, "keepdims", 1) != 1)
		return -1;
	unsigned seen = 0;
	for (int i = 0; i < k; i++) {
		int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
		if (a < rank - k || a >= rank)
			return -1;
		seen |= 1u << a;
	}
	return __builtin_popcount(seen) == k ? rank - k : -1;
}

/* v = x^2 as Pow(x, 2) or Mul(x, x): returns x. */
static Value *square_of(Value *v, Match *mt)
{
	Node *p = def(v, OP_Pow);
	if (p && near(p->in[1], 2)) {
		take(mt, p);
		return p->in[0];
	}
	p = def(v, OP_Mul);
	if (p && p->in[0] == p->in[1]) {
		take(mt, p);
		return p->in[0];
	}
	return NULL;
}

/* The divide-by-s step: Div(num, s) or Mul(num, Reciprocal(s)); returns the node producing
 * num/s (the reader of s's Sqrt) and sets *num. */
static Node *divide_by(Value *s, Match *mt, Value **num)
{
	Node *u = pass_single_user(s);
	if (u && u->op == OP_Div && u->in[1] == s) {
		*num = u->in[0];
		take(mt, u);
		return u;
	}
	Node *r = u && u->op == OP_Reciprocal ? u : NULL;
	Node *m = r ? user(r->out[0], OP_Mul) : NULL;
	if (!m)
		return NULL;
	take(mt, r);
	take(mt, m);
	*num = other(m, r->out[0]);
	return m;
}

/* sqrt(mean + eps): from the ReduceMean `mean`, through Add eps and Sqrt; the Sqrt's value. */
static Value *sqrt_plus_eps(Node *mean, Match *mt, double *eps)
{
	if (!only(mt, mean->out[0], 1))
		return NULL;
	Node *add = user(mean->out[0], OP_Add);
	Value *e;
	if (!add)
		return NULL;
	e = other(add, mean->out[0]);
	if (!pass_const_scalar(e, eps) || !(*eps > 0))
		return NULL;
	Node *sq = user(add->out[0], OP_Sqrt);
	if (!sq)
		return NULL;
	take(mt, add);
	take(mt, sq);
	return sq->out[0];
}

/* Whether w fits the normalised axes [axis, rank) of x exactly or as a broadcast. */
static int fits_axes(const Value *w, const Value *x, int axis)
{
	int k = x->type.rank - axis;
	if (w->type.rank > k || w->type.dt != x->type.dt)
		return 0;
	for (int i = 0; i < w->type.rank; i++) {
		Dim a = w->type.dims[w->type.rank - 1 - i], b = x->type.dims[x->type.rank - 1 - i];
		if (!dim_eq(a, b) && !(dim_isconst(a) && a.k == 1))
			return 0;
	}
	return 1;
}

/* An affine step after a norm: `op`(v, w) with w fitting the axes; sets *w and returns it. */
static Node *affine(Value *v, Op op, const Value *x, int axis, Value **w)
{
	Node *n = user(v, op);
	Value *o = n ? other(n, v) : NULL;
	if (!o || !fits_axes(o, x, axis) || !ir_type_eq(n->out[0]->type, x->type))
		return NULL;
	*w = o;
	return n;
}

/* ---- the patterns ---- */
/* LayerNorm from its first ReduceMean. */
static void match_layernorm(Node *m1, Match *mt, Value **in, int *nin, double *eps, int *axis)
{
	Value *x = m1->in[0], *num = NULL;
	Node *sub = user(m1->out[0], OP_Sub);
	if (!sub || sub->in[0] != x || sub->in[1] != m1->out[0] || (*axis = trailing_axes(m1, x->type.rank)) < 0)
		return;
	take(mt, m1);
	take(mt, sub);
	Value *d = sub->out[0];
	Node *sqn = NULL;
	ir_foreach_node(m1->graph, u)
		if ((u->op == OP_Pow || u->op == OP_Mul) && u->in[0] == d && square_of(u->out[0], mt))
			sqn = u;
	Node *m2 = sqn ? user(sqn->out[0], OP_ReduceMean) : NULL;
	if (!m2 || trailing_axes(m2, x->type.rank) != *axis)
		return;
	take(mt, m2);
	Value *s = sqrt_plus_eps(m2, mt, eps);
	Node *div = s ? divide_by(s, mt, &num) : NULL;
	if (!div || num != d || !only(mt, d, sqn->op == OP_Mul ? 3 : 2))
		return;
	mt->root = div;
	in[0] = x;
	*nin = 1;
	Node *g = affine(div->out[0], OP_Mul, x, *axis, &in[1]);
	if (g && only(mt, div->out[0], 1)) {
		take(mt, g);
		mt->root = g;
		*nin = 2;
		Node *b = affine(g->out[0], OP_Add, x, *axis, &in[2]);
		if (b && only(mt, g->out[0], 1)) {
			take(mt, b);
			mt->root = b;
			*nin = 3;
		}
	}
}

/* RMSNorm from its ReduceMean (of a square). */
static void match_rmsnorm(Node *m1, Match *mt, Value **in, int *nin, double *eps, int *axis)
{
	Value *num = NULL, *x = square_of(m1->in[0], mt);
	if (!x || (*axis = trailing_axes(m1, x->type.rank)) < 0 || !only(mt, m1->in[0], 1))
		return;
	take(mt, m1);
	Value *s = sqrt_plus_eps(m1, mt, eps);
	Node *div = s ? divide_by(s, mt, &num) : NULL;
	if (!div || num != x)
		return;
	mt->root = div;
	in[0] = x;
	*nin = 1;
	Node *g = affine(div->out[0], OP_Mul, x, *axis, &in[1]);
	if (g && only(mt, div->out[0], 1)) {
		take(mt, g);
		mt->root = g;
		*nin = 2;
	}
}

/* The tail x * 0.5 * (1 + f) of both GELU forms, from the node computing f. */
static Node *half_x_times(Node *f, Value *x, Match *mt)
{
	Node *add = user(f->out[0], OP_Add);
	Value *one = add ? other(add, f->out[0]) : NULL;
	if (!one || !near(one, 1) || !only(mt, f->out[0], 1))
		return NULL;
	take(mt, add);
	Node *m1 = user(add->out[0], OP_Mul);
	Value *o = m1 ? other(m1, add->out[0]) : NULL, *r;
	Node *h = def(o, OP_Mul);
	if (!o)
		return NULL;
	take(mt, m1);
	if (h && const_operand(h, 0.5, &r) && r == x && only(mt, o, 1)) {
		take(mt, h);
		return m1;                                  /* (x*0.5) * (1+f) */
	}
	Node *m2 = o == x ? user(m1->out[0], OP_Mul) : near(o, 0.5) ? user(m1->out[0], OP_Mul) : NULL;
	Value *p = m2 ? other(m2, m1->out[0]) : NULL;
	if (!p || !(o == x ? near(p, 0.5) : p == x) || !only(mt, m1->out[0], 1))
		return NULL;
	take(mt, m2);
	return m2;                                          /* ((1+f)*x)*0.5 or ((1+f)*0.5)*x */
}

/* GELU, erf form, from its Erf. */
static Value *match_gelu_erf(Node *erf, Match *mt)
{
	Node *u = def(erf->in[0], OP_Div), *mu = def(erf->in[0], OP_Mul);
	Value *x = NULL;
	if (u && near(u->in[1], sqrt(2.0)))
		x = u->in[0];
	else if (mu && const_operand(mu, 1 / sqrt(2.0), &x))
		u = mu;
	if (!x)
		return NULL;
	take(mt, erf);
	take(mt, u);
	if (!only(mt, erf->in[0], 1) || !(mt->root = half_x_times(erf, x, mt)))
		return NULL;
	return x;
}

/* x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x); returns x. */
static Value *cube_of(Value *v, Match *mt)
{
	Node *p = def(v, OP_Pow), *m = def(v, OP_Mul);
	if (p && near(p->in[1], 3)) {
		take(mt, p);
		return p->in[0];
	}
	for (int i = 0; m && i < 2; i++) {
		Node *sq = def(m->in[i], OP_Mul);
		if (sq && sq->in[0] == sq->in[1] && sq->in[0] == m->in[1 - i] && only(mt, m->in[i], 1)) {
			take(mt, m);
			take(mt, sq);
			return sq->in[0];
		}
	}
	return NULL;
}

/* GELU, tanh form, from its Tanh. */
static Value *match_gelu_tanh(Node *th, Match *mt)
{
	Node *scale = def(th->in[0], OP_Mul);
	Value *w, *x = NULL, *cube;
	if (!scale || !const_operand(scale, sqrt(2.0 / M_PI), &w))
		return NULL;
	Node *add = def(w, OP_Add);
	for (int i = 0; add && i < 2 && !x; i++) {
		Node *k = def(add->in[i], OP_Mul);
		if (k && const_operand(k, 0.044715, &cube) && cube_of(cube, mt) == add->in[1 - i] &&
		    only(mt, cube, 1) && only(mt, add->in[i], 1)) {
			x = add->in[1 - i];
			take(mt, k);
		}
	}
	if (!x)
		return NULL;
	take(mt, th);
	take(mt, scale);
	take(mt, add);
	if (!only(mt, w, 1) || !only(mt, th->in[0], 1) || !(mt->root = half_x_times(th, x, mt)))
		return NULL;
	return x;
}

/* Attention from its Softmax; in[] gets Q, K, V and the mask (or NULL). */
static int match_attention(Node *sm, Match *mt, Value **in, double *scale)
{
	Value *s = sm->in[0], *mask = NULL;
	Node *add = def(s, OP_Add), *mm, *sc, *tr;
	int r = s->type.rank;
	int64_t ax = rt_attr_int(&sm->attrs, "axis", -1);
	if (ax != -1 && ax != r - 1)
		return 0;
	for (int i = 0; add && i < 2 && !mask; i++)
		if (def(add->in[i], OP_Mul) || def(add->in[i], OP_Div) || def(add->in[i], OP_MatMul)) {
			mask = add->in[1 - i];
			s = add->in[i];
		}
	*scale = 1;
	if ((sc = def(s, OP_Div)) && pass_const_scalar(sc->in[1], scale) && *scale != 0) {
		*scale = 1 / *scale;
		s = sc->in[0];
	} else if ((sc = def(s, OP_Mul)) && (pass_const_scalar(sc->in[1], scale) || pass_const_scalar(sc->in[0], scale))) {
		s = pass_const_scalar(sc->in[1], scale) ? sc->in[0] : sc->in[1];
	} else
		sc = NULL;
	if (!(mm = def(s, OP_MatMul)) || !(tr = def(mm->in[1], OP_Transpose)))
		return 0;
	int k;
	const int64_t *p = rt_attr_ints(&tr->attrs, "perm", &k);
	Node *out = user(sm->out[0], OP_MatMul);
	if (r != 4 || !p || k != 4 || p[0] != 0 || p[1] != 1 || p[2] != 3 || p[3] != 2 || !out || out->in[0] != sm->out[0])
		return 0;
	Value *q = mm->in[0], *kk = tr->in[0], *v = out->in[1];
	if (q->type.rank != 4 || kk->type.rank != 4 || v->type.rank != 4)
		return 0;
	Dim *qd = q->type.dims, *kd = kk->type.dims, *vd = v->type.dims;
	if (!dim_eq(qd[0], kd[0]) || !dim_eq(qd[0], vd[0]) || !dim_eq(qd[1], kd[1]) || !dim_eq(kd[1], vd[1]) ||
	    !dim_eq(kd[2], vd[2]) || !dim_eq(qd[3], kd[3]) || q->type.dt != kk->type.dt)
		return 0;
	if (mask && (mask->type.rank < 2 || !ir_type_eq(add->out[0]->type, s->type) || mask->type.dt != q->type.dt))
		return 0;
	Node *all[] = { tr, mm, sc, mask ? add : NULL, sm, out };
	for (int i = 0; i < 6; i++)
		take(mt, all[i]);
	if (!only(mt, tr->out[0], 1) || !only(mt, mm->out[0], 1) || (sc && !only(mt, sc->out[0], 1)) ||
	    (mask && !only(mt, add->out[0], 1)) || !only(mt, sm->out[0], 1))
		return 0;
	in[0] = q, in[1] = kk, in[2] = v, in[3] = mask;
	mt->root = out;
	return 1;
}

/* ---- rewriting ---- */
static int annots_agree(const Match *mt)
{
	const Annot *a = &mt->root->annot;
	for (int i = 0; i < mt->n; i++) {
		const Annot *b = &mt->nodes[i]->annot;
		int dev = a->device == b->device || (a->device && b->device && !strcmp(a->device, b->device));
		if (!dev || a->precision != b->precision || a->nofuse != b->nofuse)
			return 0;
	}
	return 1;
}

/* Removes n and then each producer that no one reads any more. */
static void remove_dead(Graph *g, Node *n)
{
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]->nuses)
			return;
	ir_remove_node(g, n);
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && n->in[i]->kind == V_NODE && !n->in[i]->def->dead)
			remove_dead(g, n->in[i]->def);
}

/* Replaces the match by `op`(in) named like the root; returns the new node or NULL. */
static Node *rewrite(PassCtx *c, Match *mt, Op op, Value **in, int nin, const char *what)
{
	Graph *g = mt->root->graph;
	const char *name = mt->root->out[0]->name;
	if (!annots_agree(mt)) {
		pass_remark(c, REMARK_MISSED, g, mt->root, "did not recognize %s at '%s': its nodes carry "
			    "different annotations", what, name);
		return NULL;
	}
	if (!pass_bisect(c, mt->root, what))
		return NULL;
	mt->root->out[0]->name = ir_fresh_name(g, "dead");
	Node *n = ir_insert_node(g, mt->root, op, in, nin, &name, 1, mt->root->loc);
	n->annot = mt->root->annot;
	ir_replace_uses(g, mt->root->out[0], n->out[0]);
	remove_dead(g, mt->root);
	pass_remark(c, REMARK_APPLIED, g, n, "recognized %s: %d nodes -> %s '%s'", what, mt->n,
		    ir_ops[op].name, name);
	pass_changed(c, "patterns recognized");
	return n;
}

static void missed(PassCtx *c, const Match *mt, Node *at, const char *what)
{
	if (mt->why)
		pass_remark(c, REMARK_MISSED, at->graph, at, "did not recognize %s at '%s': %s", what,
			    pass_node_name(at), mt->why);
}

/* A ones parameter fitting the normalised axes of x (when the pattern has no gamma). */
static Value *ones_like_axes(Graph *g, Value *x, int axis, Loc loc)
{
	ParamInit *pi = arena_alloc(g->m->arena, sizeof *pi);
	pi->kind = INIT_FILL;
	pi->a = 1;
	Type t = ir_type(g->m, x->type.dt, x->type.rank - axis, x->type.dims + axis);
	return ir_add_param(g, ir_fresh_name(g, "ones"), t, pi, loc);
}

static void try_norms(PassCtx *c, Node *n)
{
	Value *in[3] = { 0 };
	int nin = 0, axis = -1;
	double eps = 0;
	Match mt = { .n = 0 };
	int ln = n->in[0]->type.rank > 0 && (match_layernorm(n, &mt, in, &nin, &eps, &axis), mt.root);
	if (!ln) {
		const char *why = mt.why;
		memset(&mt, 0, sizeof mt);
		match_rmsnorm(n, &mt, in, &nin, &eps, &axis);
		if (!mt.root) {
			mt.why = mt.why ? mt.why : why;
			missed(c, &mt, n, "a normalization");
			return;
		}
	}
	if (nin == 1)
		in[nin++] = ones_like_axes(n->graph, in[0], axis, n->loc);
	Node *r = rewrite(c, &mt, ln ? OP_LayerNormalization : OP_RMSNormalization, in, nin,
			  ln ? "LayerNorm" : "RMSNorm");
	if (r) {
		ir_set_attr_int(r, "axis", axis - in[0]->type.rank);
		ir_set_attr_float(r, "epsilon", eps);
	}
}

static void try_gelu(PassCtx *c, Node *n)
{
	Match mt = { .n = 0 };
	Value *x = n->op == OP_Erf ? match_gelu_erf(n, &mt) : match_gelu_tanh(n, &mt);
	if (!x || !mt.root) {
		missed(c, &mt, n, "GELU");
		return;
	}
	Node *r = rewrite(c, &mt, OP_Gelu, &x, 1, n->op == OP_Erf ? "GELU (erf)" : "GELU (tanh)");
	if (r && n->op == OP_Tanh)
		ir_set_attr_str(r, "approximate", "tanh");
}

/* x * Sigmoid(x) -> Silu(x); Silu(g) * u -> SwiGLU(g, u). */
static void try_gates(PassCtx *c, Node *mul)
{
	for (int i = 0; i < 2; i++) {
		Node *s = def(mul->in[i], OP_Sigmoid), *si = def(mul->in[i], OP_Silu);
		Value *o = mul->in[1 - i];
		Match mt = { .n = 0, .root = mul };
		take(&mt, mul);
		take(&mt, s ? s : si);
		if (s && s->in[0] == o && only(&mt, s->out[0], 1)) {
			rewrite(c, &mt, OP_Silu, &o, 1, "SiLU");
			return;
		}
		Value *gu[2] = { si ? si->in[0] : NULL, o };
		if (si && ir_type_eq(si->out[0]->type, o->type) && only(&mt, si->out[0], 1)) {
			rewrite(c, &mt, OP_SwiGLU, gu, 2, "SwiGLU");
			return;
		}
		missed(c, &mt, mul, s ? "SiLU" : "SwiGLU");
	}
}

static void try_attention(PassCtx *c, Node *sm)
{
	Value *in[4];
	double scale;
	Match mt = { .n = 0 };
	if (!match_attention(sm, &mt, in, &scale)) {
		missed(c, &mt, sm, "attention");
		return;
	}
	Node *r = rewrite(c, &mt, OP_Attention, in, in[3] ? 4 : 3, "attention");
	if (r)
		ir_set_attr_float(r, "scale", scale);
}

static void recognize_node(PassCtx *c, Node *n)
{
	switch (n->op) {
	case OP_ReduceMean: try_norms(c, n); break;
	case OP_Erf:
	case OP_Tanh: try_gelu(c, n); break;
	case OP_Mul: try_gates(c, n); break;
	case OP_Softmax: try_attention(c, n); break;
	default: break;
	}
}

/* Visits a snapshot of the node list: a rewrite removes nodes on both sides of the one it
 * starts from, so the list links cannot be followed. */
int pass_recognize(Module *m, PassCtx *c)
{
	for (Graph *g = m->graphs; g; g = g->next) {
		int k = 0;
		Node **v = malloc((size_t)(g->nnodes ? g->nnodes : 1) * sizeof *v);
		if (!v)
			abort();
		ir_foreach_node(g, n)
			v[k++] = n;
		for (int i = 0; i < k; i++)
			if (!v[i]->dead)
				recognize_node(c, v[i]);
		free(v);
	}
	return 0;
}
