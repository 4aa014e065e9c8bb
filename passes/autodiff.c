/* passes/autodiff.c: the training step (--phase train).
 *
 * Turns the entry graph (a model whose first output is the logits [..., V]) into one training
 * step, in four stages:
 *   1. calls are inlined (`repeat N` unrolled into N copies), so the step is one flat graph:
 *      every repetition gets parameters of its own ("<callee>.<k>.<param>", k the call
 *      instance), with the callee's initialiser (a seeded one re-seeded per instance, so the
 *      layers differ; the weights are not the inference plan's, which mixes instances in
 *      the lowering);
 *   2. the loss: a graph input `labels` (int64, the logits' shape without the last axis) and
 *      loss = SoftmaxCrossEntropyLoss(logits as [N, V], labels as [N]) {reduction=mean};
 *   3. reverse-mode differentiation (Griewank & Walther, "Evaluating Derivatives", 2008, ch. 3):
 *      the nodes between the trainable parameters (float parameters that are not inline
 *      literals) and the loss are visited in reverse order and each adds the gradients of its
 *      inputs from those of its outputs (rules below); a value read several times adds its
 *      gradients in the order the reads are visited;
 *   4. an AdamW step per parameter (Loshchilov & Hutter, ICLR 2019) on f32 master weights and
 *      f32 moments (Micikevicius et al., "Mixed Precision Training", ICLR 2018): a parameter
 *      held narrower than f32 gets a master copy "P.master" (same initialiser); the moments
 *      "P.exp_avg", "P.exp_avg_sq" (PyTorch's names) and the step "adamw.step" are parameters
 *      initialised to 0, 0 and 1, so the step runs as compiled.  Weight decay applies to
 *      parameters of rank >= 2 only (nanoGPT's and Megatron-LM's rule: no decay of norms and
 *      biases).
 * The graph's outputs become: loss, then per parameter P.next (and P.master.next), the new
 * moments P.exp_avg.next and P.exp_avg_sq.next, then adamw.step.next: feeding them back as the
 * parameters gives the next step.
 *
 * Gradient rules (dY: the gradient of output 0; broadcast operands reduce dY over the broadcast
 * axes, ReduceSum then Reshape):
 *   Add/Sub/Neg/Identity/Dropout/Cast/Reshape/Squeeze/Unsqueeze/Flatten/Transpose: linear maps,
 *   their adjoints; Mul: dA = dY B, dB = dY A; MatMul: dA = dY B^T, dB = A^T dY (batch axes
 *   reduced); Split and Concat each other's adjoints; Embedding: EmbeddingGrad (scatter-add);
 *   LayerNormalization, RMSNormalization: their Grad operators; Gelu: GeluGrad; Silu: SiluGrad;
 *   SwiGLU(G, U): dG = SiluGrad(dY U, G), dU = dY Silu(G); Sigmoid: dY y (1 - y); Tanh:
 *   dY (1 - y^2); RotaryEmbedding: the same rotation by -theta (RotaryEmbedding with the sine
 *   cache negated: a rotation's adjoint is its inverse); Attention: AttentionGrad (the
 *   FlashAttention-2 backward, softmax recomputed); the MoE block: TopKRouter's weights
 *   through TopKRouterGrad to the logits (the choice of experts is piecewise constant),
 *   MoEDispatch's adjoint MoECombine with weights 1 (each token's k rows added back),
 *   GroupedMatMul dXs = GroupedMatMul(dY, Offsets, W^T) and dW = GroupedMatMulGrad, MoECombine
 *   MoECombineGrad (the rows weighted, the weights' dot products).  Cosine/sine caches and indices are not
 *   differentiated.  Any other operator between a parameter and the loss is an error.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "passes/pass.h"
#include "targets/machine.h"

typedef struct Ad {
	Module *m;
	Graph *g;
	PassCtx *c;
	unsigned char *need;     /* per primal value id: depends on a trainable parameter */
	Value **grad;            /* per primal value id: its gradient so far, or NULL */
	int nprimal;
	Loc loc;
	int errors;
	intptr_t tag;            /* a parallel step: the Node.aux tag of the nodes node() adds */
	int split;               /* the forward pass is partitioned (--tp): gradients follow its devices */
	const char *dev;         /* split: the device of the nodes node() adds (the forward node's) */
	struct Parts **parts;    /* split: per primal value id, its gradient's partial sums by device */
	/* a data-parallel step plan (zero_step): dp replicas on devices dpdev[0..dp) (their list
	 * dplist), micro-batch mb on replica mb / mbr, ZeRO stage zero */
	int dp, mbr, zero;
	const char **dpdev, *dplist;
	/* ZeRO 2-3 step plan, per primal parameter id: its gradient's shard on each replica
	 * (gsh, summed over the rounds of micro-batches) and the current round's whole gradient on
	 * each replica (mbg, until the round's reduce-scatter); NULL where accumulated whole */
	Value ***gsh, ***mbg;
	int nsh;                 /* entries of gsh and mbg: the values when the step began */
} Ad;

/* A value's gradient as one partial sum per device (a partitioned step, at most MAXPARTS
 * devices): a value read by the shards of a tensor-parallel group, e.g. the input of the
 * column-split Q/K/V or gate/up MatMuls, receives one contribution per shard, which an
 * AllReduce over the group sums (Megatron-LM's f operator: identity forward, all-reduce
 * backward; Shoeybi et al. 2019, section 3). */
enum { MAXPARTS = 64 };
typedef struct Parts {
	Value *g[MAXPARTS];
	int n;
} Parts;

/* A parallel step (--dp/--tp/--pp/--cp, passes/train_step.c) differentiates one instance of
 * every repeated call and tags each node (Node.aux) with its section and phase, which the
 * pricing multiplies by the call's repeat count: tag = 1 + 4 section + phase. */
enum { SEC_PRE, SEC_POST, SEC_CALL0 };
enum { PH_FWD, PH_BWD, PH_OPT };
static intptr_t mktag(int sec, int ph) { return 1 + 4 * (intptr_t)sec + ph; }
static int tag_sec(intptr_t t) { return (int)((t - 1) / 4); }

/* ---- building blocks ---- */
static Value *lit(Graph *g, DType dt, int rank, const int64_t *dims, const double *v, int64_t n)
{
	ParamInit *pi = arena_alloc(g->m->arena, sizeof *pi);
	memset(pi, 0, sizeof *pi);
	pi->kind = INIT_LITERAL;
	pi->lit = arena_alloc(g->m->arena, (size_t)(n ? n : 1) * sizeof *pi->lit);
	memcpy(pi->lit, v, (size_t)n * sizeof *v);
	pi->nlit = n;
	pi->inline_lit = 1;
	Dim d[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		d[i] = dim_c(dims[i]);
	return ir_add_param(g, ir_fresh_name(g, "c"), ir_type(g->m, dt, rank, d), pi, g->loc);
}

/* An i64 list literal (shapes, axes). */
static Value *ints(Graph *g, const int64_t *v, int n)
{
	double d[IR_MAX_RANK];
	int64_t len = n;
	for (int i = 0; i < n; i++)
		d[i] = (double)v[i];
	return lit(g, DT_I64, 1, &len, d, n);
}

static Value *scalar(Graph *g, DType dt, double x) { return lit(g, dt, 0, NULL, &x, 1); }

static Node *node(Ad *a, Op op, Value **in, int nin, int nout, const char *name)
{
	/* one name per output, however many (a Split's backward has one per part) */
	const char **names = arena_alloc(a->g->m->arena, (size_t)(nout > 0 ? nout : 1) * sizeof *names);
	for (int i = 0; i < nout; i++)
		names[i] = ir_fresh_name(a->g, name);
	Node *n = ir_add_node(a->g, op, in, nin, names, nout, a->loc);
	n->aux = (void *)a->tag;
	n->annot.device = a->dev;
	if (a->dev) {   /* what `aicc explain` shows (the partition pass keeps a pinned node's reason) */
		char why[256];
		snprintf(why, sizeof why, "%s: a gradient of a node on %s (autodiff, --tp)", a->dev, a->dev);
		ir_set_attr_str(n, "placement_reason", why);
	}
	return n;
}

static Value *op1(Ad *a, Op op, Value *x, const char *name) { return node(a, op, &x, 1, 1, name)->out[0]; }

static Value *op2(Ad *a, Op op, Value *x, Value *y, const char *name)
{
	Value *in[2] = { x, y };
	return node(a, op, in, 2, 1, name)->out[0];
}

/* Constant dims of t into d; -1 when a dim is symbolic. */
static int const_dims(Type t, int64_t *d)
{
	for (int i = 0; i < t.rank; i++) {
		if (!dim_isconst(t.dims[i]))
			return -1;
		d[i] = t.dims[i].k;
	}
	return 0;
}

static Value *reshape(Ad *a, Value *x, Type to)
{
	int64_t d[IR_MAX_RANK];
	const_dims(to, d);
	return op2(a, OP_Reshape, x, ints(a->g, d, to.rank), "grad");
}

/* g (a gradient of dims gd[gr]) reduced to the shape of t, which broadcasts to gd: the sum over
 * the leading axes t lacks and over the axes where t has 1. */
static Value *unbroadcast(Ad *a, Value *g, int gr, const int64_t *gd, Type t)
{
	int64_t td[IR_MAX_RANK], ax[IR_MAX_RANK];
	int n = 0;
	const_dims(t, td);
	for (int i = 0; i < gr; i++) {
		int k = i - (gr - t.rank);
		if (k < 0 || (td[k] == 1 && gd[i] != 1))
			ax[n++] = i;
	}
	if (n == 0 && gr == t.rank)
		return g;
	if (n) {
		Node *r = node(a, OP_ReduceSum, (Value *[]){ g, ints(a->g, ax, n) }, 2, 1, "grad");
		ir_set_attr_int(r, "keepdims", 1);
		g = r->out[0];
	}
	return reshape(a, g, t);
}

static Value *unbroadcast_to(Ad *a, Value *g, Type gt, Type t)
{
	int64_t gd[IR_MAX_RANK];
	const_dims(gt, gd);
	return unbroadcast(a, g, gt.rank, gd, t);
}

/* Transpose of the last two axes. */
static Value *swap_last(Ad *a, Value *x, int rank)
{
	int64_t perm[IR_MAX_RANK];
	for (int i = 0; i < rank; i++)
		perm[i] = i;
	perm[rank - 2] = rank - 1, perm[rank - 1] = rank - 2;
	Node *t = node(a, OP_Transpose, &x, 1, 1, "grad");
	ir_set_attr_ints(t, "perm", perm, rank);
	return t->out[0];
}

static void copy_attrs(Node *to, const Node *from)
{
	for (int i = 0; i < from->attrs.n; i++)
		if (strcmp(from->attrs.a[i].name, "placement_reason") != 0)
			ir_set_attr(to, &from->attrs.a[i]);
}

static int need(const Ad *a, const Value *v) { return v && v->id < a->nprimal && a->need[v->id]; }

/* The device a value is computed on (NULL: none, or not placed). */
static const char *dev_of(const Value *v) { return v && v->kind == V_NODE ? v->def->annot.device : NULL; }

static int same_dev(const char *x, const char *y) { return x == y || (x && y && strcmp(x, y) == 0); }

/* x + y on device dev. */
static Value *add_on(Ad *a, Value *x, Value *y, const char *dev)
{
	const char *keep = a->dev;
	a->dev = dev;
	Value *s = op2(a, OP_Add, x, y, "grad");
	a->dev = keep;
	return s;
}

/* grad(v) += g.  A partitioned step keeps one partial sum per device (grad_of sums them). */
static void acc(Ad *a, Value *v, Value *g)
{
	if (!need(a, v) || !g)
		return;
	Value **cur = &a->grad[v->id];
	if (!*cur) {
		*cur = g;
		return;
	}
	Parts *p = a->split ? a->parts[v->id] : NULL;
	if (!p && (!a->split || same_dev(dev_of(*cur), dev_of(g)))) {
		*cur = add_on(a, *cur, g, a->split ? dev_of(g) : a->dev);
		return;
	}
	if (!p) {
		if (!(p = a->parts[v->id] = calloc(1, sizeof *p)))
			abort();
		p->g[p->n++] = *cur;
	}
	for (int i = 0; i < p->n; i++)
		if (same_dev(dev_of(p->g[i]), dev_of(g))) {
			p->g[i] = add_on(a, p->g[i], g, dev_of(g));
			return;
		}
	if (p->n < MAXPARTS)
		p->g[p->n++] = g;
	else
		p->g[p->n - 1] = add_on(a, p->g[p->n - 1], g, dev_of(p->g[p->n - 1]));
}

/* The gradient of v so far: with partial sums on several devices, their AllReduce over those
 * devices (v's own device first, so the sum is where v's rule reads it), or their sum where a
 * partial is on no device. */
static Value *grad_of(Ad *a, Value *v)
{
	Parts *p = a->split && v->id < a->nprimal ? a->parts[v->id] : NULL;
	if (!p)
		return a->grad[v->id];
	a->parts[v->id] = NULL;
	int placed = 1, home = 0;
	for (int i = 0; i < p->n; i++) {
		placed &= dev_of(p->g[i]) != NULL;
		if (same_dev(dev_of(p->g[i]), dev_of(v)))
			home = i;
	}
	Value *t = p->g[0];
	p->g[0] = p->g[home], p->g[home] = t;
	Value *s = p->g[0];
	if (placed) {
		char buf[1024];
		size_t o = 0;
		for (int i = 0; i < p->n && o < sizeof buf - 64; i++)
			o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? "," : "", dev_of(p->g[i]));
		const char *keep = a->dev;
		a->dev = dev_of(p->g[0]);
		Node *r = node(a, OP_AllReduce, p->g, p->n, 1, "grad");
		a->dev = keep;
		ir_set_attr_str(r, "devices", arena_strdup(a->g->m->arena, buf));
		s = r->out[0];
		pass_changed(a->c, "gradient all-reduces");
	} else
		for (int i = 1; i < p->n; i++)
			s = add_on(a, s, p->g[i], dev_of(s));
	free(p);
	return a->grad[v->id] = s;
}

/* Zeros of v's type (an output of a multi-output node that no gradient reaches). */
static Value *zeros(Ad *a, Value *v)
{
	int64_t d[IR_MAX_RANK];
	const_dims(v->type, d);
	Node *z = node(a, OP_ConstantOfShape, (Value *[]){ ints(a->g, d, v->type.rank) }, 1, 1, "grad");
	ir_set_attr_float(z, "value", 0.0);   /* f32 zeros */
	if (v->type.dt == DT_F32)
		return z->out[0];
	Node *c = node(a, OP_Cast, &z->out[0], 1, 1, "grad");
	ir_set_attr_str(c, "to", rt_dtype_name(v->type.dt));
	return c->out[0];
}

static int rule_error(Ad *a, const Node *n, const char *why)
{
	diag_error(n->loc, "autodiff: %s: %s (--phase train)", ir_ops[n->op].name, why);
	a->errors++;
	return -1;
}

/* ---- the rules: node n with dY = gradient of its output 0 ---- */
static int rule(Ad *a, Node *n, Value *dy)
{
	Value *x = n->in[0], *b = n->nin > 1 ? n->in[1] : NULL, *y = n->out[0];
	a->loc = n->loc;
	a->dev = a->split ? n->annot.device : NULL;
	switch (n->op) {
	case OP_Identity: case OP_Dropout: case OP_Transfer:
		acc(a, x, dy);
		return 0;
	case OP_AllReduce:   /* a partitioned forward pass: every partial sum's gradient is dY */
		for (int i = 0; i < n->nin; i++)
			acc(a, n->in[i], dy);
		return 0;
	case OP_Cast: {
		Node *c = node(a, OP_Cast, &dy, 1, 1, "grad");
		ir_set_attr_str(c, "to", rt_dtype_name(x->type.dt));
		acc(a, x, c->out[0]);
		return 0;
	}
	case OP_Reshape: case OP_Squeeze: case OP_Unsqueeze: case OP_Flatten:
		acc(a, x, reshape(a, dy, x->type));
		return 0;
	case OP_Transpose: {
		int np;
		const int64_t *p = rt_attr_ints(&n->attrs, "perm", &np);
		int64_t inv[IR_MAX_RANK];
		for (int i = 0; i < x->type.rank; i++)
			inv[p ? p[i] : x->type.rank - 1 - i] = i;
		Node *t = node(a, OP_Transpose, &dy, 1, 1, "grad");
		ir_set_attr_ints(t, "perm", inv, x->type.rank);
		acc(a, x, t->out[0]);
		return 0;
	}
	case OP_Neg:
		acc(a, x, op1(a, OP_Neg, dy, "grad"));
		return 0;
	case OP_Add: case OP_Sub:
		if (need(a, x))
			acc(a, x, unbroadcast_to(a, dy, y->type, x->type));
		if (need(a, b))
			acc(a, b, unbroadcast_to(a, n->op == OP_Sub ? op1(a, OP_Neg, dy, "grad") : dy, y->type, b->type));
		return 0;
	case OP_Mul:
		if (need(a, x))
			acc(a, x, unbroadcast_to(a, op2(a, OP_Mul, dy, b, "grad"), y->type, x->type));
		if (need(a, b))
			acc(a, b, unbroadcast_to(a, op2(a, OP_Mul, dy, x, "grad"), y->type, b->type));
		return 0;
	case OP_MatMul: {
		int r = y->type.rank;
		if (x->type.rank < 2 || b->type.rank < 2)
			return rule_error(a, n, "rank-1 operands are not differentiated");
		int64_t yd[IR_MAX_RANK], gd[IR_MAX_RANK];
		const_dims(y->type, yd);
		memcpy(gd, yd, sizeof gd);
		if (need(a, x)) {   /* dA = dY B^T: [..., M, K] */
			gd[r - 1] = b->type.dims[b->type.rank - 2].k;
			acc(a, x, unbroadcast(a, op2(a, OP_MatMul, dy, swap_last(a, b, b->type.rank), "grad"), r, gd, x->type));
		}
		if (need(a, b)) {   /* dB = A^T dY: [..., K, N] */
			gd[r - 2] = x->type.dims[x->type.rank - 1].k, gd[r - 1] = yd[r - 1];
			acc(a, b, unbroadcast(a, op2(a, OP_MatMul, swap_last(a, x, x->type.rank), dy, "grad"), r, gd, b->type));
		}
		return 0;
	}
	case OP_Embedding: {
		if (!need(a, x))
			return 0;
		Node *e = node(a, OP_EmbeddingGrad, (Value *[]){ dy, b }, 2, 1, "grad");
		ir_set_attr_int(e, "num_rows", x->type.dims[0].k);
		acc(a, x, e->out[0]);
		return 0;
	}
	case OP_LayerNormalization: case OP_RMSNormalization: {
		int ln = n->op == OP_LayerNormalization, ax = (int)rt_attr_int(&n->attrs, "axis", -1);
		if ((ax != -1 && ax != x->type.rank - 1) || b->type.rank != 1 || (ln && n->nin > 2 && n->in[2] &&
										    n->in[2]->type.rank != 1))
			return rule_error(a, n, "only normalisation over the last axis with [H] scale and bias is differentiated");
		Node *g = node(a, ln ? OP_LayerNormalizationGrad : OP_RMSNormalizationGrad, (Value *[]){ dy, x, b }, 3,
			       ln && n->nin > 2 && n->in[2] ? 3 : 2, "grad");
		ir_set_attr_float(g, "epsilon", rt_attr_float(&n->attrs, "epsilon", 1e-5));
		acc(a, x, g->out[0]);
		acc(a, b, g->out[1]);
		if (g->nout > 2)
			acc(a, n->in[2], g->out[2]);
		return 0;
	}
	case OP_Gelu: case OP_Silu: {
		Node *g = node(a, n->op == OP_Gelu ? OP_GeluGrad : OP_SiluGrad, (Value *[]){ dy, x }, 2, 1, "grad");
		copy_attrs(g, n);
		acc(a, x, g->out[0]);
		return 0;
	}
	case OP_SwiGLU:
		if (!ir_type_eq(x->type, b->type))
			return rule_error(a, n, "gate and up must have one type");
		if (need(a, x))
			acc(a, x, op2(a, OP_SiluGrad, op2(a, OP_Mul, dy, b, "grad"), x, "grad"));
		if (need(a, b))
			acc(a, b, op2(a, OP_Mul, dy, op1(a, OP_Silu, x, "grad"), "grad"));
		return 0;
	case OP_Sigmoid: case OP_Tanh: {
		Value *one = scalar(a->g, y->type.dt, 1.0);
		Value *d = n->op == OP_Sigmoid ? op2(a, OP_Mul, y, op2(a, OP_Sub, one, y, "grad"), "grad")
					       : op2(a, OP_Sub, one, op2(a, OP_Mul, y, y, "grad"), "grad");
		acc(a, x, op2(a, OP_Mul, dy, d, "grad"));
		return 0;
	}
	case OP_RotaryEmbedding: {
		Value *in[4] = { dy, n->in[1], op1(a, OP_Neg, n->in[2], "grad"), n->nin > 3 ? n->in[3] : NULL };
		Node *r = node(a, OP_RotaryEmbedding, in, n->nin, 1, "grad");
		copy_attrs(r, n);
		acc(a, x, r->out[0]);
		return 0;
	}
	case OP_Attention: {
		for (int i = 3; i < n->nin; i++)
			if (n->in[i])
				return rule_error(a, n, "masks and past key/values are not differentiated");
		if (n->nout > 1 || rt_attr_float(&n->attrs, "softcap", 0) > 0)
			return rule_error(a, n, "present key/values and softcap are not differentiated");
		Node *g = node(a, OP_AttentionGrad, (Value *[]){ dy, x, b, n->in[2] }, 4, 3, "grad");
		copy_attrs(g, n);
		for (int i = 0; i < 3; i++)
			acc(a, n->in[i], g->out[i]);
		return 0;
	}
	case OP_TopKRouter: {   /* the weights' gradient reaches the logits; the choice is constant */
		if (!a->grad[n->out[0]->id] || !need(a, x))
			return 0;
		Node *g = node(a, OP_TopKRouterGrad, (Value *[]){ dy, x, n->out[1] }, 3, 1, "grad");
		copy_attrs(g, n);
		acc(a, x, g->out[0]);
		return 0;
	}
	case OP_MoEDispatch: {  /* dX[t] = sum over t's k rows of dXs: MoECombine with weights 1 */
		Value *ex = b, *ones = op1(a, OP_ConstantOfShape, ints(a->g, (int64_t[]){ ex->type.dims[0].k, ex->type.dims[1].k }, 2),
					   "grad");
		ir_set_attr_float(ones->def, "value", 1.0);
		if (x->type.dt != DT_F32) {   /* the rows' dtype (dY's type is not inferred yet) */
			Node *c = node(a, OP_Cast, &ones, 1, 1, "grad");
			ir_set_attr_str(c, "to", rt_dtype_name(x->type.dt));
			ones = c->out[0];
		}
		Node *c = node(a, OP_MoECombine, (Value *[]){ dy, ones, ex }, 3, 1, "grad");
		copy_attrs(c, n);
		acc(a, x, c->out[0]);
		return 0;
	}
	case OP_GroupedMatMul: {
		Value *w = n->in[2];
		if (need(a, x)) {   /* dXs = dY W[e]^T per group */
			Node *t = node(a, OP_Transpose, &w, 1, 1, "grad");
			ir_set_attr_ints(t, "perm", (int64_t[]){ 0, 2, 1 }, 3);
			acc(a, x, node(a, OP_GroupedMatMul, (Value *[]){ dy, b, t->out[0] }, 3, 1, "grad")->out[0]);
		}
		if (need(a, w))
			acc(a, w, node(a, OP_GroupedMatMulGrad, (Value *[]){ dy, x, b }, 3, 1, "grad")->out[0]);
		return 0;
	}
	case OP_MoECombine: {
		Node *g = node(a, OP_MoECombineGrad, (Value *[]){ dy, x, b, n->in[2] }, 4, 2, "grad");
		copy_attrs(g, n);
		acc(a, x, g->out[0]);
		acc(a, b, g->out[1]);
		return 0;
	}
	case OP_Split: {
		Value **parts = arena_alloc(a->g->m->arena, (size_t)n->nout * sizeof *parts);
		for (int i = 0; i < n->nout; i++)
			parts[i] = a->grad[n->out[i]->id] ? grad_of(a, n->out[i]) : zeros(a, n->out[i]);
		Node *c = node(a, OP_Concat, parts, n->nout, 1, "grad");
		ir_set_attr_int(c, "axis", rt_attr_int(&n->attrs, "axis", 0));
		acc(a, x, c->out[0]);
		return 0;
	}
	case OP_Concat: {
		int ax = (int)rt_attr_int(&n->attrs, "axis", 0);
		ax = ax < 0 ? ax + y->type.rank : ax;
		int64_t *sz = arena_alloc(a->g->m->arena, (size_t)n->nin * sizeof *sz);
		for (int i = 0; i < n->nin; i++)
			sz[i] = n->in[i]->type.dims[ax].k;
		Node *s = node(a, OP_Split, (Value *[]){ dy, ints(a->g, sz, n->nin) }, 2, n->nin, "grad");
		ir_set_attr_int(s, "axis", ax);
		for (int i = 0; i < n->nin; i++)
			acc(a, n->in[i], s->out[i]);
		return 0;
	}
	default:
		return rule_error(a, n, "no gradient rule for this operator");
	}
}

/* ---- 1. inlining ---- */
static int64_t ninstances;

/* A parallel step's calls: each one's repeat count (the call's section is SEC_CALL0 + index). */
typedef struct Calls {
	int scale;
	int64_t rep[64];
	int n;
} Calls;

/* Replaces call n of g by the unrolled body of its callee (a parallel step: one instance,
 * every node tagged with the call's section). */
static void inline_call(Graph *g, Node *n, Calls *cs)
{
	intptr_t tag = (intptr_t)n->aux;
	if (cs->scale && !tag && cs->n < 64) {
		cs->rep[cs->n] = n->repeat;
		tag = mktag(SEC_CALL0 + cs->n++, PH_FWD);
		n->repeat = n->repeat > 0 ? 1 : 0;
	}
	Graph *cg = n->callee;
	Value *cur[256];
	int nin = n->nin < 256 ? n->nin : 256;
	for (int i = 0; i < nin; i++)
		cur[i] = n->in[i];
	char name[512];
	for (int64_t r = 0; r < n->repeat; r++) {
		int64_t inst = ninstances++;
		for (int i = 0; i < cg->nin && i < nin; i++)
			cg->inputs[i]->aux = cur[i];
		for (int i = 0; i < cg->nparams; i++) {
			Value *p = cg->params[i];
			ParamInit *pi = p->init;
			if (pi && !pi->inline_lit && (pi->kind == INIT_NORMAL || pi->kind == INIT_UNIFORM)) {
				pi = arena_alloc(g->m->arena, sizeof *pi);
				*pi = *p->init;
				pi->seed = (p->init->seed + 1000003ull * (uint64_t)(inst + 1)) & 0x7fffffffull;
			} else if (pi && pi->kind == INIT_LITERAL && pi->lit) {
				/* a literal of its own, rebuilt from its values: dce frees an unread
				 * parameter's data, which must not be the callee's */
				pi = arena_alloc(g->m->arena, sizeof *pi);
				*pi = *p->init;
				pi->data = NULL;
			}
			snprintf(name, sizeof name, "%s.%" PRId64 ".%s", cg->name, inst, p->name);
			p->aux = ir_add_param(g, arena_strdup(g->m->arena, name), p->type, pi, p->loc);
		}
		ir_foreach_node(cg, cn) {
			Value **in = arena_alloc(g->m->arena, (size_t)(cn->nin > 0 ? cn->nin : 1) * sizeof *in);
			const char **names = arena_alloc(g->m->arena, (size_t)(cn->nout > 0 ? cn->nout : 1) * sizeof *names);
			for (int i = 0; i < cn->nin; i++)
				in[i] = cn->in[i] ? cn->in[i]->aux : NULL;
			for (int i = 0; i < cn->nout; i++) {
				snprintf(name, sizeof name, "%s.%" PRId64 ".%s", cg->name, inst, cn->out[i]->name);
				names[i] = arena_strdup(g->m->arena, name);
			}
			Node *c = ir_insert_node(g, n, cn->op, in, cn->nin, names, cn->nout, cn->loc);
			copy_attrs(c, cn);
			c->callee = cn->callee, c->repeat = cn->repeat, c->annot = cn->annot;
			c->aux = (void *)tag;
			for (int i = 0; i < cn->nout; i++)
				cn->out[i]->aux = c->out[i];
		}
		for (int i = 0; i < cg->nout && i < nin; i++)
			cur[i] = cg->outputs[i]->aux;
	}
	for (int i = 0; i < n->nout; i++)
		ir_replace_uses(g, n->out[i], n->repeat > 0 ? cg->outputs[i]->aux : n->in[i]);
	ir_remove_node(g, n);
}

static int inline_calls(Graph *g, Calls *cs)
{
	int any = 1, count = 0;
	while (any) {
		any = 0;
		for (Node *n = g->first, *next; n; n = next) {
			next = n->next;
			if (n->op == OP_Call && n->callee) {
				if (cs->scale && n->aux && n->repeat > 1) {
					diag_error(n->loc, "autodiff: a parallel step (--dp/--tp/--pp/--cp) prices repeated calls of "
						   "the entry graph; this one repeats inside a repeated call");
					return -1;
				}
				if (cs->scale && !n->aux && cs->n >= 64) {
					diag_error(n->loc, "autodiff: a parallel step prices at most 64 calls");
					return -1;
				}
				inline_call(g, n, cs);
				any = 1, count++;
			}
		}
	}
	return count;
}

/* ---- 4. the optimizer ---- */
static ParamInit *fill(Module *m, double v)
{
	ParamInit *pi = arena_alloc(m->arena, sizeof *pi);
	memset(pi, 0, sizeof *pi);
	pi->kind = INIT_FILL;
	pi->a = v;
	return pi;
}

static const char *cat(Graph *g, const char *a, const char *b)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s%s", a, b);
	return arena_strdup(g->m->arena, buf);
}

static void adamw(Ad *a, Value *p, Value *g, Value *step, Value **outs, int *nout)
{
	Graph *G = a->g;
	Type f = p->type;
	int narrow = p->type.dt != DT_F32 && p->type.dt != DT_F64;   /* f64 is its own master */
	f.dt = narrow ? DT_F32 : p->type.dt;
	Value *w = p;
	if (narrow) {
		w = ir_add_param(G, cat(G, p->name, ".master"), f, p->init, p->loc);
		Node *c = node(a, OP_Cast, &g, 1, 1, "grad");
		ir_set_attr_str(c, "to", "f32");
		g = c->out[0];
	}
	Value *m1 = ir_add_param(G, cat(G, p->name, ".exp_avg"), f, fill(G->m, 0), p->loc);
	Value *m2 = ir_add_param(G, cat(G, p->name, ".exp_avg_sq"), f, fill(G->m, 0), p->loc);
	const char *names[3] = { cat(G, w->name, ".next"), cat(G, m1->name, ".next"), cat(G, m2->name, ".next") };
	Node *o = ir_add_node(G, OP_AdamW, (Value *[]){ w, g, m1, m2, step }, 5, names, 3, p->loc);
	o->aux = (void *)a->tag;
	o->annot.device = a->dev;
	ir_set_attr_float(o, "lr", a->c->lr > 0 ? a->c->lr : 1e-3);
	ir_set_attr_float(o, "weight_decay", p->type.rank >= 2 ? 0.1 : 0.0);
	if (narrow) {
		const char *nm = cat(G, p->name, ".next");
		Node *c = ir_add_node(G, OP_Cast, &o->out[0], 1, &nm, 1, p->loc);
		c->aux = (void *)a->tag;
		c->annot.device = a->dev;
		ir_set_attr_str(c, "to", rt_dtype_name(p->type.dt));
		outs[(*nout)++] = c->out[0];
	}
	for (int i = 0; i < 3; i++)
		outs[(*nout)++] = o->out[i];
}

/* ---- a data-parallel step plan (--dp D, --zero Z, --emit plan): ZeRO in the interpreter ----
 * Replica r (device dpdev[r]) runs its micro-batches' forward and backward; a parameter's
 * gradient is one partial sum per replica (Parts).  ZeRO 0 all-reduces it and one AdamW
 * updates the whole parameter (every replica would compute the same).  ZeRO 1 and 2
 * (Rajbhandari et al., SC'20) reduce-scatter it along axis 0, replica r holding shard r; the
 * optimizer state (f32 master weights, both moments) is stored as shards (Split {shard="weight"}:
 * each replica's constants are its own 1/D), AdamW runs per shard on its replica, and the updated
 * weights are all-gathered.  ZeRO 1 reduce-scatters once, the replica's gradient summed over
 * its micro-batches whole (names grad.zero); ZeRO 2 reduce-scatters after every round of
 * micro-batches (the k-th of every replica, built in that order: zero_take, zero_round) and adds
 * the shards (grad.shard), so a replica keeps only its 1/D shard across the micro-batches and
 * each micro-batch's whole gradient is freed at its reduce-scatter; with one micro-batch per
 * replica the two are the same plan but for the names.  ZeRO 3 (FSDP) reduce-scatters as ZeRO 2
 * and also stores the weights as shards and all-gathers them where the forward and
 * backward passes read them.  The new moments and master weights are all-gathered too, only to
 * be the step's outputs under the unpartitioned step's names (the next step would read the
 * shards).  A parameter whose first axis does not divide by D keeps ZeRO 0's path. */
static Node *dp_node(Ad *a, Op op, Value **in, int nin, const char **names, int nout, const char *dev)
{
	Node *n = ir_add_node(a->g, op, in, nin, names, nout, a->loc);
	n->aux = (void *)a->tag;
	n->annot.device = dev;
	return n;
}

/* v cut into dp shards along axis 0, shard r a constant of replica r (names v.zero<r>). */
static Value **zero_shards(Ad *a, Value *v)
{
	Value **s = arena_alloc(a->g->m->arena, (size_t)a->dp * sizeof *s);
	const char **names = arena_alloc(a->g->m->arena, (size_t)a->dp * sizeof *names);
	char suf[32];
	for (int r = 0; r < a->dp; r++) {
		snprintf(suf, sizeof suf, ".zero%d", r);
		names[r] = ir_fresh_name(a->g, cat(a->g, v->name, suf));
	}
	Node *n = dp_node(a, OP_Split, &v, 1, names, a->dp, NULL);
	ir_set_attr_int(n, "axis", 0);
	ir_set_attr_int(n, "num_outputs", a->dp);
	ir_set_attr_str(n, "shard", "weight");
	for (int r = 0; r < a->dp; r++)
		s[r] = n->out[r];
	return s;
}

/* The all-gather of the replicas' shards along axis 0, named name (NULL: a fresh one). */
static Value *zero_gather(Ad *a, Value **s, const char *name)
{
	const char *nm = name ? name : ir_fresh_name(a->g, "zero.gather");
	Node *n = dp_node(a, OP_AllGather, s, a->dp, &nm, 1, a->dpdev[0]);
	ir_set_attr_int(n, "axis", 0);
	ir_set_attr_str(n, "devices", a->dplist);
	pass_changed(a->c, "zero all-gathers");
	return n->out[0];
}

/* The first dp accelerators of the machine (gpu0, gpu1, ...), or -1 with an error. */
static int dp_devices(Ad *a, int dp)
{
	const Machine *mc = a->c->machine;
	const Device *d = NULL;
	for (int i = 0; mc && i < mc->ndevs && !d; i++)
		d = mc->devs[i].is_host ? NULL : &mc->devs[i];
	int have = d && num_has(&d->count) ? (int)d->count.v : d ? 1 : 0;
	if (!d || have < dp) {
		diag_error(a->g->loc, "autodiff: the data-parallel step plan needs %d devices (--dp %d); machine '%s' has %d",
			   dp, dp, mc ? mc->name : "none", have);
		return -1;
	}
	a->dp = dp;
	a->dpdev = arena_alloc(a->g->m->arena, (size_t)dp * sizeof *a->dpdev);
	char buf[64], *list = arena_alloc(a->g->m->arena, (size_t)dp * 24 + 1);
	size_t o = 0;
	for (int r = 0; r < dp; r++) {
		snprintf(buf, sizeof buf, "%s%d", d->id, r);
		a->dpdev[r] = arena_strdup(a->g->m->arena, buf);
		o += (size_t)snprintf(list + o, 24, "%s%s", r ? "," : "", buf);
	}
	a->dplist = list;
	return 0;
}

/* Whether parameter p's gradient is reduce-scattered (ZeRO 1-3: its first axis divides by D). */
static int zero_shardable(const Ad *a, const Value *p)
{
	return a->dp && a->zero >= 1 && p->type.rank >= 1 && dim_isconst(p->type.dims[0]) && p->type.dims[0].k % a->dp == 0;
}

/* The reduce-scatter along axis 0 of the replicas' gradients part[0..dp) (member order), its
 * outputs named name.N: replica r's shard is output r. */
static Value **zero_scatter(Ad *a, Value **part, const char *name)
{
	Graph *G = a->g;
	const char **gn = arena_alloc(G->m->arena, (size_t)a->dp * sizeof *gn);
	for (int r = 0; r < a->dp; r++)
		gn[r] = ir_fresh_name(G, name);
	Node *rs = dp_node(a, OP_ReduceScatter, part, a->dp, gn, a->dp, a->dpdev[0]);
	ir_set_attr_int(rs, "axis", 0);
	ir_set_attr_str(rs, "devices", a->dplist);
	pass_changed(a->c, "zero reduce-scatters");
	return rs->out;
}

/* ZeRO 1-3's optimizer step of parameter p (see above); 0, or -1 for ZeRO 0's path. */
static int zero_adamw(Ad *a, Value *p, Value *step, Value **outs, int *nout)
{
	Graph *G = a->g;
	Parts *pt = a->parts[p->id];
	Value **shard = p->id < a->nsh ? a->gsh[p->id] : NULL;   /* ZeRO 2-3: reduce-scattered already */
	if (!shard && (!zero_shardable(a, p) || !pt || pt->n != a->dp))
		return -1;
	Value **part = arena_alloc(G->m->arena, (size_t)a->dp * sizeof *part);
	for (int r = 0; !shard && r < a->dp; r++) {   /* member order */
		part[r] = NULL;
		for (int i = 0; i < pt->n; i++)
			if (same_dev(dev_of(pt->g[i]), a->dpdev[r]))
				part[r] = pt->g[i];
		if (!part[r])
			return -1;
	}
	if (!shard) {
		a->parts[p->id] = NULL;
		free(pt);
	}
	Value **ws = NULL;
	if (a->zero >= 3) {   /* FSDP: the weight stored as shards, gathered where it is read */
		ws = zero_shards(a, p);
		Node *split = ws[0]->def;
		/* each replica contributes its own shard: an Identity pinned to it reads the shard
		 * there (so the constant is stored there), and orders the all-gather after that
		 * replica's stream (passes/simplify.c keeps it) */
		Value **mine = arena_alloc(G->m->arena, (size_t)a->dp * sizeof *mine);
		for (int r = 0; r < a->dp; r++)
			mine[r] = dp_node(a, OP_Identity, &ws[r], 1, (const char *[]){ ir_fresh_name(G, "zero.own") }, 1,
					  a->dpdev[r])->out[0];
		Value *full = zero_gather(a, mine, NULL);
		ir_foreach_node(G, n)
			for (int i = 0; n != split && i < n->nin; i++)
				if (n->in[i] == p) {
					n->in[i] = full;
					p->nuses--, full->nuses++;
				}
	}
	if (!shard)
		shard = zero_scatter(a, part, "grad.zero");
	Type f = p->type;
	int narrow = p->type.dt != DT_F32 && p->type.dt != DT_F64;
	f.dt = narrow ? DT_F32 : p->type.dt;
	Value *w = narrow ? ir_add_param(G, cat(G, p->name, ".master"), f, p->init, p->loc) : p;
	Value *m1 = ir_add_param(G, cat(G, p->name, ".exp_avg"), f, fill(G->m, 0), p->loc);
	Value *m2 = ir_add_param(G, cat(G, p->name, ".exp_avg_sq"), f, fill(G->m, 0), p->loc);
	Value **wsh = narrow || !ws ? zero_shards(a, w) : ws, **s1 = zero_shards(a, m1), **s2 = zero_shards(a, m2);
	Value **nw = arena_alloc(G->m->arena, 4 * (size_t)a->dp * sizeof *nw), **n1 = nw + a->dp, **n2 = n1 + a->dp;
	Value **nc = n2 + a->dp;
	for (int r = 0; r < a->dp; r++) {
		const char *dev = a->dpdev[r];
		Value *g = shard[r];
		if (narrow) {
			Node *c = dp_node(a, OP_Cast, &g, 1, (const char *[]){ ir_fresh_name(G, "grad") }, 1, dev);
			ir_set_attr_str(c, "to", "f32");
			g = c->out[0];
		}
		const char *names[3] = { ir_fresh_name(G, "zero.w"), ir_fresh_name(G, "zero.m"), ir_fresh_name(G, "zero.v") };
		Node *o = dp_node(a, OP_AdamW, (Value *[]){ wsh[r], g, s1[r], s2[r], step }, 5, names, 3, dev);
		ir_set_attr_float(o, "lr", a->c->lr > 0 ? a->c->lr : 1e-3);
		ir_set_attr_float(o, "weight_decay", p->type.rank >= 2 ? 0.1 : 0.0);
		nw[r] = o->out[0], n1[r] = o->out[1], n2[r] = o->out[2];
		if (narrow) {
			Node *c = dp_node(a, OP_Cast, &nw[r], 1, (const char *[]){ ir_fresh_name(G, "zero.cast") }, 1, dev);
			ir_set_attr_str(c, "to", rt_dtype_name(p->type.dt));
			nc[r] = c->out[0];
		}
	}
	if (narrow)
		outs[(*nout)++] = zero_gather(a, nc, cat(G, p->name, ".next"));
	outs[(*nout)++] = zero_gather(a, nw, cat(G, w->name, ".next"));
	outs[(*nout)++] = zero_gather(a, n1, cat(G, m1->name, ".next"));
	outs[(*nout)++] = zero_gather(a, n2, cat(G, m2->name, ".next"));
	return 0;
}

static int trainable(const Value *v)
{
	return v->kind == V_PARAM && rt_dtype_isfloat(v->type.dt) && !(v->init && v->init->inline_lit);
}

/* ZeRO 2-3, after micro-batch mb's backward: each shardable parameter's gradient of that
 * micro-batch (on its replica alone) taken out of the accumulation, held for the round's
 * reduce-scatter.  Returns 0, or -1 (an internal error) when one came from several devices. */
static int zero_take(Ad *a, int mb)
{
	Graph *G = a->g;
	int r = mb / a->mbr;
	for (int i = 0; i < G->nparams; i++) {
		Value *p = G->params[i];
		if (p->id >= a->nprimal || p->id >= a->nsh || !trainable(p) || !a->grad[p->id] || !zero_shardable(a, p))
			continue;
		if (a->parts[p->id]) {
			diag_error(a->loc, "autodiff: internal: parameter '%s' has gradient parts on several devices in one "
				   "micro-batch of a data-parallel step", p->name);
			return -1;
		}
		if (!a->mbg[p->id]) {
			a->mbg[p->id] = arena_alloc(G->m->arena, (size_t)a->dp * sizeof **a->mbg);
			a->gsh[p->id] = arena_alloc(G->m->arena, (size_t)a->dp * sizeof **a->gsh);
			memset(a->mbg[p->id], 0, (size_t)a->dp * sizeof **a->mbg);
			memset(a->gsh[p->id], 0, (size_t)a->dp * sizeof **a->gsh);
		}
		a->mbg[p->id][r] = a->grad[p->id];
		a->grad[p->id] = NULL;
	}
	return 0;
}

/* ZeRO 2-3, after the last replica's micro-batch of a round: every held gradient
 * reduce-scattered, each replica's shard added to its sum (grad.shard). */
static void zero_round(Ad *a)
{
	Graph *G = a->g;
	for (int i = 0; i < G->nparams; i++) {
		Value *p = G->params[i];
		Value **held = p->id < a->nsh ? a->mbg[p->id] : NULL;
		if (!held || !held[0])
			continue;
		Value **s = zero_scatter(a, held, "grad.shard");
		for (int r = 0; r < a->dp; r++) {
			Value **sum = &a->gsh[p->id][r];
			*sum = *sum ? dp_node(a, OP_Add, (Value *[]){ *sum, s[r] }, 2,
					      (const char *[]){ ir_fresh_name(G, "grad.shard") }, 1, a->dpdev[r])->out[0] : s[r];
			held[r] = NULL;
		}
	}
}

/* The trainable parameters' dependents among the forward nodes fw[0..nf) (a->need grown to
 * the graph's values first). */
static void mark_need(Ad *a, Node **fw, int nf)
{
	if (a->g->nvalues > a->nprimal) {
		int n = a->g->nvalues;
		a->need = realloc(a->need, (size_t)n + 1);
		a->grad = realloc(a->grad, ((size_t)n + 1) * sizeof *a->grad);
		a->parts = realloc(a->parts, ((size_t)n + 1) * sizeof *a->parts);
		if (!a->need || !a->grad || !a->parts)
			abort();
		memset(a->need + a->nprimal, 0, (size_t)(n - a->nprimal) + 1);
		memset(a->grad + a->nprimal, 0, ((size_t)(n - a->nprimal) + 1) * sizeof *a->grad);
		memset(a->parts + a->nprimal, 0, ((size_t)(n - a->nprimal) + 1) * sizeof *a->parts);
		a->nprimal = n;
	}
	for (int i = 0; i < a->g->nparams; i++)
		a->need[a->g->params[i]->id] = trainable(a->g->params[i]);
	for (int k = 0; k < nf; k++) {
		Node *n = fw[k];
		int any = 0;
		for (int i = 0; i < n->nin; i++)
			any |= need(a, n->in[i]) && !(n->op == OP_RotaryEmbedding && i > 0) &&   /* caches: constants */
			       !(n->op == OP_TopKRouter && i > 0);   /* the balancing bias: not trained by gradients */
		for (int i = 0; i < n->nout; i++)
			if (rt_dtype_isfloat(n->out[i]->type.dt))
				a->need[n->out[i]->id] = (unsigned char)any;
	}
}

/* Micro-batch mb >= 1 of gradient accumulation: a copy of the forward nodes fw[0..nf) appended
 * to the graph (after the previous micro-batch's backward, so its activations die first), reading
 * the parameters and its own copy of every graph input ("ids.mb1"); out[k] is fw[k]'s copy,
 * *logits the copy of the logits. */
static void clone_forward(Ad *a, Node **fw, int nf, int nin0, int mb, Node **out, Value **logits)
{
	Graph *g = a->g;
	char name[512];
	for (int i = 0; i < nin0; i++) {
		Value *x = g->inputs[i];
		snprintf(name, sizeof name, "%s.mb%d", x->name, mb);
		x->aux = ir_add_input(g, arena_strdup(g->m->arena, name), x->type, x->loc);
	}
	for (int i = 0; i < g->nparams; i++)
		g->params[i]->aux = g->params[i];
	for (int k = 0; k < nf; k++) {
		Node *n = fw[k];
		Value **in = arena_alloc(g->m->arena, (size_t)(n->nin > 0 ? n->nin : 1) * sizeof *in);
		const char **names = arena_alloc(g->m->arena, (size_t)(n->nout > 0 ? n->nout : 1) * sizeof *names);
		for (int i = 0; i < n->nin; i++)
			in[i] = n->in[i] ? n->in[i]->aux : NULL;
		for (int i = 0; i < n->nout; i++) {
			snprintf(name, sizeof name, "%s.mb%d", n->out[i]->name, mb);
			names[i] = arena_strdup(g->m->arena, name);
		}
		Node *c = ir_add_node(g, n->op, in, n->nin, names, n->nout, n->loc);
		copy_attrs(c, n);
		c->annot = n->annot;
		for (int i = 0; i < n->nout; i++)
			n->out[i]->aux = c->out[i];
		out[k] = c;
	}
	*logits = (*logits)->aux;
}

/* Micro-batch mb of mbs: its loss (input labels, or labels.mbN) and its backward over fw[0..nf),
 * the loss's gradient seeded with 1/mbs (the accumulated gradient is the mean over the
 * micro-batches).  Returns the loss. */
static Value *loss_and_backward(Ad *a, Node **fw, int nf, Value *logits, int mb, int mbs)
{
	Graph *g = a->g;
	Type lt = logits->type;
	int r = lt.rank;
	int64_t ld[IR_MAX_RANK] = { 0 }, N = 1;
	const_dims(lt, ld);
	for (int i = 0; i < r - 1; i++)
		N *= ld[i];
	int64_t d2[2] = { N, ld[r - 1] };
	Dim dl[IR_MAX_RANK];
	for (int i = 0; i < r - 1; i++)
		dl[i] = dim_c(ld[i]);
	char ln[64], lb[64];
	snprintf(lb, sizeof lb, mb ? "labels.mb%d" : "labels", mb);
	snprintf(ln, sizeof ln, mbs > 1 ? "loss.mb%d" : "loss", mb);
	Value *labels = ir_add_input(g, arena_strdup(g->m->arena, lb), ir_type(g->m, DT_I64, r - 1, dl), g->loc);
	if (a->tag)
		a->tag = mktag(SEC_POST, PH_FWD);
	a->dev = a->dp ? a->dpdev[mb / a->mbr] : NULL;   /* the loss: the replica's (dp), else placed by the partition pass */
	Value *s2 = op2(a, OP_Reshape, logits, ints(g, d2, 2), "scores");
	Value *t1 = op2(a, OP_Reshape, labels, ints(g, &N, 1), "targets");
	const char *lname = arena_strdup(g->m->arena, ln);
	Node *loss = ir_add_node(g, OP_SoftmaxCrossEntropyLoss, (Value *[]){ s2, t1 }, 2, &lname, 1, g->loc);
	loss->aux = (void *)a->tag;
	loss->annot.device = a->dev;
	ir_set_attr_str(loss, "reduction", "mean");
	if (a->tag)
		a->tag = mktag(SEC_POST, PH_BWD);
	if (need(a, logits)) {
		Node *sg = node(a, OP_SoftmaxCrossEntropyLossGrad, (Value *[]){ scalar(g, lt.dt, 1.0 / mbs), s2, t1 }, 3, 1,
				"grad");
		ir_set_attr_str(sg, "reduction", "mean");
		a->grad[logits->id] = reshape(a, sg->out[0], lt);
	}
	for (int k = nf - 1; k >= 0 && !a->errors; k--) {
		Node *n = fw[k];
		Value *dy = a->grad[n->out[0]->id] ? grad_of(a, n->out[0]) : NULL;
		int reach = 0, wants = 0;
		for (int i = 0; i < n->nout; i++)
			reach |= a->grad[n->out[i]->id] != NULL;
		for (int i = 0; i < n->nin; i++)
			wants |= need(a, n->in[i]);
		if (!reach || !wants)
			continue;
		if (a->tag)   /* a parallel step: the gradients of n are in n's section */
			a->tag = mktag(tag_sec((intptr_t)n->aux), PH_BWD);
		a->dev = a->split ? n->annot.device : NULL;
		if (!dy && n->op != OP_Split)
			dy = zeros(a, n->out[0]);
		rule(a, n, dy);
	}
	return loss->out[0];
}

int pass_autodiff(Module *m, PassCtx *c)
{
	Graph *g = ir_entry(m);
	if (!g || !c->phase || strcmp(c->phase, "train") != 0)
		return 0;
	if (pass_check_positions(m, c))
		return 1;
	Calls cs = { pass_train_parallel(c), { 0 }, 0 };
	int inl = inline_calls(g, &cs);
	if (inl < 0)
		return 1;
	if (cs.scale) {   /* the entry graph's own nodes: before the first layer, or after */
		int seen = 0;
		ir_foreach_node(g, n) {
			seen |= n->aux != NULL;
			if (!n->aux)
				n->aux = (void *)mktag(seen ? SEC_POST : SEC_PRE, PH_FWD);
		}
	}
	if (c->seq_offsets) {   /* --pack: every attention block-diagonal over the packed sequences */
		int na = 0;
		ir_foreach_node(g, n)
			if (n->op == OP_Attention) {
				ir_set_attr_ints(n, "seq_offsets", c->seq_offsets, c->nseq_offsets);
				na++;
			}
		if (!na) {
			diag_error(g->loc, "autodiff: --pack needs an Attention in '%s' to pack sequences for", g->name);
			return 1;
		}
		pass_stat(c, "packed sequences per row", c->nseq_offsets - 1);
		inl = inl ? inl : -1;   /* shapes again: the offsets are checked against S */
	}
	if (inl) {
		if (inl > 0)
			pass_stat(c, "calls inlined", inl);
		if (ir_topo_sort(g) < 0 || ir_infer_shapes(m) > 0)
			return 1;
	}
	if (g->nout < 1 || !rt_dtype_isfloat(g->outputs[0]->type.dt) || g->outputs[0]->type.rank < 2) {
		diag_error(g->loc, "autodiff: the first output of '%s' must be float logits [..., V] (--phase train)", g->name);
		return 1;
	}
	Value *logits = g->outputs[0];
	int64_t ld[IR_MAX_RANK];
	if (const_dims(logits->type, ld) < 0) {
		diag_error(g->loc, "autodiff: the logits' shape must be bound (--bind or --context)");
		return 1;
	}
	int mbs = c->grad_accum > 1 && !cs.scale ? c->grad_accum : 1;   /* a parallel step: priced M times */
	Ad a = { m, g, c, NULL, NULL, 0, g->loc, 0, cs.scale ? mktag(SEC_PRE, PH_FWD) : 0, 0, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, 0 };
	if (c->dp_plan && c->dp > 1 && dp_devices(&a, c->dp) < 0)
		return 1;
	if (a.dp) {   /* a data-parallel step plan: --grad-accum micro-batches on each replica */
		a.mbr = mbs;
		mbs *= a.dp;
		a.zero = c->zero ? c->zero - 1 : 1;
		a.split = 1;
		if (a.zero >= 2) {
			a.nsh = g->nvalues + 1;
			a.gsh = calloc((size_t)a.nsh, sizeof *a.gsh);
			a.mbg = calloc((size_t)a.nsh, sizeof *a.mbg);
			if (!a.gsh || !a.mbg)
				abort();
		}
	}
	double fwd = 0;
	int nn = 0, nin0 = g->nin;
	ir_foreach_node(g, n)
		fwd += ir_node_flops(n);
	/* forward + backward (2x): PaLM appendix B, Narayanan et al. SC'21; once per micro-batch */
	c->model_flops = 3 * fwd * mbs;
	/* --tp N: the forward pass is partitioned first (Megatron's shards and AllReduces, the
	 * partition pass), and every gradient is computed on its forward node's device: the
	 * backward of a column-split MatMul on its shard, the shards' contributions to a value
	 * read by the group summed by an AllReduce (grad_of); what the backward adds off the
	 * devices (the loss, the weight shards' gradients joined, AdamW) the partition pass of
	 * the pipeline places after. */
	if (!cs.scale && c->tp > 1 && c->machine) {
		if (pass_partition(m, c) > 0 || ir_topo_sort(g) < 0 || ir_infer_shapes(m) > 0)
			return 1;
		a.split = 1;
		logits = g->outputs[0];
	}
	ir_foreach_node(g, n)
		nn++;
	Node **order = calloc((size_t)nn + 1, sizeof *order), **copy = calloc((size_t)nn + 1, sizeof *copy);
	Value **losses = calloc((size_t)mbs + 1, sizeof *losses);
	if (!order || !copy || !losses)
		abort();
	nn = 0;
	ir_foreach_node(g, n) {
		order[nn++] = n;
		if (a.dp)
			n->annot.device = a.dpdev[0];
	}
	/* 2-3. per micro-batch: forward (a copy after the first), loss, backward; ZeRO 2-3 build the
	 * k-th micro-batch of every replica before the k+1-th (a round), each round's gradients
	 * reduce-scattered after it, and the inputs are put back in micro-batch order below */
	int in_mb0 = g->nin, *in_mb = a.nsh ? calloc((size_t)mbs + 1, sizeof *in_mb) : NULL;
	if (a.nsh && !in_mb)
		abort();
	for (int j = 0; j < mbs && !a.errors; j++) {
		int mb = a.nsh ? j % a.dp * a.mbr + j / a.dp : j;
		int nin_before = g->nin;
		Node **fw = order;
		Value *lg = logits;
		if (mb > 0) {
			clone_forward(&a, order, nn, nin0, mb, copy, &lg);
			for (int k = 0; a.dp && k < nn; k++)
				copy[k]->annot.device = a.dpdev[mb / a.mbr];
			if (ir_infer_shapes(m) > 0) {
				a.errors++;
				break;
			}
			fw = copy;
		}
		mark_need(&a, fw, nn);
		losses[mb] = loss_and_backward(&a, fw, nn, lg, mb, mbs);
		if (a.nsh) {
			in_mb[mb] = g->nin - nin_before;
			if (zero_take(&a, mb) < 0)
				a.errors++;
			else if (j % a.dp == a.dp - 1)
				zero_round(&a);
		}
	}
	if (a.nsh && !a.errors) {   /* the inputs in micro-batch order (ids, labels, ids.mb1, ...) */
		int n = g->nin - in_mb0, at = 0, *start = calloc((size_t)mbs + 1, sizeof *start);
		Value **was = calloc((size_t)n + 1, sizeof *was);
		if (!start || !was)
			abort();
		memcpy(was, g->inputs + in_mb0, (size_t)n * sizeof *was);
		for (int j = 0, o = 0; j < mbs; j++) {   /* where each micro-batch's inputs were added */
			int mb = j % a.dp * a.mbr + j / a.dp;
			start[mb] = o, o += in_mb[mb];
		}
		for (int mb = 0; mb < mbs; mb++)
			for (int k = 0; k < in_mb[mb]; k++)
				g->inputs[in_mb0 + at++] = was[start[mb] + k];
		free(start), free(was);
		for (int i = 0; i < g->nparams; i++)   /* the gradient's shards stand for it */
			if (g->params[i]->id < a.nsh && a.gsh[g->params[i]->id])
				a.grad[g->params[i]->id] = a.gsh[g->params[i]->id][0];
	}
	free(in_mb);
	Value *loss = losses[0];
	if (mbs > 1 && !a.errors) {
		const char *lname = "loss";
		for (int k = 0; a.dp && k < mbs; k++)   /* the replicas' losses to the first */
			if (k >= a.mbr) {
				const char *tn = ir_fresh_name(g, "loss.to");
				Node *t = dp_node(&a, OP_Transfer, &losses[k], 1, &tn, 1, a.dpdev[0]);
				ir_set_attr_str(t, "device", a.dpdev[0]);
				losses[k] = t->out[0];
			}
		Node *mean = ir_add_node(g, OP_Mean, losses, mbs, &lname, 1, g->loc);
		mean->annot.device = a.dp ? a.dpdev[0] : NULL;
		loss = mean->out[0];
	}
	/* 4. AdamW on every parameter a gradient reached */
	Value **outs = calloc((size_t)g->nparams * 4 + 4, sizeof *outs);
	int no = 0, trained = 0;
	if (!outs)
		abort();
	outs[no++] = loss;
	Value *step = ir_add_param(g, "adamw.step", ir_type(m, DT_F32, 0, NULL), fill(m, 1), g->loc);
	int np = g->nparams;
	int *psec = cs.scale ? calloc((size_t)g->nvalues + 1, sizeof *psec) : NULL;
	if (cs.scale && !psec)
		abort();
	for (int k = nn - 1; psec && k >= 0; k--)   /* a parameter's section: its first reader's */
		for (int i = 0; i < order[k]->nin; i++)
			if (order[k]->in[i] && order[k]->in[i]->kind == V_PARAM)
				psec[order[k]->in[i]->id] = tag_sec((intptr_t)order[k]->aux);
	a.dev = a.dp ? a.dpdev[0] : NULL;
	for (int i = 0; i < np && !a.errors; i++) {
		Value *p = g->params[i];
		if (a.dp && p->id < a.nprimal && trainable(p) && a.grad[p->id] && zero_adamw(&a, p, step, outs, &no) == 0) {
			trained++;
			continue;
		}
		a.dev = a.dp ? a.dpdev[0] : NULL;
		if (p->id < a.nprimal && trainable(p) && a.grad[p->id] && grad_of(&a, p)) {
			if (psec)
				a.tag = mktag(psec[p->id], PH_OPT);
			adamw(&a, p, a.grad[p->id], step, outs, &no);
			trained++;
		}
	}
	const char *sn = "adamw.step.next";
	Node *inc = ir_add_node(g, OP_Add, (Value *[]){ step, scalar(g, DT_F32, 1.0) }, 2, &sn, 1, g->loc);
	inc->annot.device = a.dp ? a.dpdev[0] : NULL;
	outs[no++] = inc->out[0];
	if (!a.errors) {
		for (int i = 0; i < g->nout; i++)
			g->outputs[i]->nuses--;
		g->nout = 0;
		g->out_decl = NULL;
		for (int i = 0; i < no; i++)
			ir_add_output(g, outs[i]);
		int64_t N = ir_type_numel(logits->type) / ld[logits->type.rank - 1];
		pass_stat(c, "parameters trained", trained);
		if (a.dp && ir_topo_sort(g) < 0)   /* ZeRO 3's gathers come before their readers */
			a.errors++;
		if (cs.scale)   /* priced with the gradients' shapes */
			a.errors += ir_infer_shapes(m) > 0 ? 1 : train_step_price(g, c, cs.rep, cs.n, (double)N);
		pass_remark(c, REMARK_APPLIED, g, NULL, "training step: loss over %d micro-batch%s of %" PRId64 " tokens, %d "
			    "parameters trained with AdamW (f32 master weights and moments)", mbs, mbs > 1 ? "es" : "", N, trained);
	}
	if (cs.scale)
		ir_foreach_node(g, n)
			n->aux = NULL;
	free(psec);
	free(outs);
	free(order);
	free(copy);
	free(losses);
	for (int i = 0; a.parts && i < a.nprimal; i++)
		free(a.parts[i]);
	free(a.parts);
	free(a.need);
	free(a.grad);
	free(a.gsh);
	free(a.mbg);
	return a.errors;
}
