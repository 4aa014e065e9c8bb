/* passes/place_precision.c: quantization placement.  Chooses the numeric format of every
 * contraction (MatMul, Gemm, GroupedMatMul, Conv) from a policy (--precision), the target
 * machine's formats and sensitivity rules, makes the choice explicit in the graph, and records
 * why.
 *
 * Policies are the words of targets/precision.c, parsed and checked against the target and the
 * machine once by the driver (PassCtx.precision): f32, f64, bf16, f16 (operands cast), fp8 (E4M3
 * with one scale per tensor), mxfp8, mxfp6, mxfp4, nvfp4 (block formats, blocks along the
 * reduction axis K), fp4 (E2M1 in MXFP4 blocks), int8 (per-token activations, per-channel
 * weights), w4a16 (int4 weights in groups of 128 along K, 16-bit activations) and auto (per
 * node, the cheapest legal format whose estimated error is within --error-budget).  auto's
 * candidates must be supported by the precision's device (dev_supports); no machine means the
 * reference, f32/f64 only.  The pass never asks which target is active.
 *
 * Rules, in order: `@precision(dt)` forces dt on any node; a contraction reading softmax
 * probabilities or feeding a softmax, producing router logits, or in the first or last layer
 * (passes/layers.c) keeps its dtype; normalisation, softmax, attention, routers and the residual
 * stream are never quantized.  Each decision is a remark (--remarks=quant) and attributes of the
 * node: precision, block_layout, est_rel_err, precision_reason.
 *
 * In the graph: operands get Quantize nodes ({to=fmt}, {group=G} for scaled formats) so the
 * interpreter computes with the quantized values; a weight whose K axis is not its last is
 * transposed around the Quantize so blocks run along K; a result whose dtype changed is cast
 * back (`h.acc = MatMul(...)` then `h = Cast(h.acc)`).  Except FP8 operands of MatMul/Gemm on a
 * device whose FP8 GEMMs scale per block themselves (<fp8-scaling>: 1x128 activation tiles,
 * 128x128 weight blocks): those get no Quantize (it would round them twice) and the node records
 * the kernel's layout.  The error estimator is documented in
 * docs/passes.md.  Requires shapes and topological order; invalidates shapes.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "passes/pass.h"
#include "targets/precision.h"

/* A policy is a word of the --precision vocabulary (targets/precision.h): the format given to
 * activation and weight operands and their scale groups; `auto` tries the words with an
 * auto_order, cheapest first. */
typedef PrecWord Policy;
enum { NOGROUP = PREC_NOGROUP };

/* ---- the error estimator (docs/passes.md, "Estimated error") ---- */
/* Significand bits p (implicit bit included) of a scalar float format; u = 2^-p (dtype.def). */
static int sig_bits(DType d) { return rt_dtypes[d].sig; }

/* The largest element value over 2^(emax+1): how far a block's amax may be clamped (§3). */
static double clamp_frac(DType elem)
{
	switch (elem) {
	case DT_F4E2M1: return 1 - 6.0 / 8;
	case DT_F6E2M3: return 1 - 7.5 / 8;
	case DT_I8: return 1 - 127.0 / 128;
	default: return 1 - 1.75 / 2;   /* E4M3, E5M2, E3M2: significand 1.75 */
	}
}

/* Relative error (normwise) of an operand held in format d: the unit roundoff of the element,
 * plus the block scale's share (MX: the clamped amax, one element in k; NVFP4: the E4M3 block
 * scale's rounding), or for scaled integers half a step over a Gaussian group's crest factor
 * sqrt(2 ln g).  `g` is the group length of scaled formats. */
static double fmt_eps(DType d, int scaled, double g)
{
	const DTypeInfo *t = &rt_dtypes[d];
	if (t->kind == K_BLOCK) {
		DType e = (DType)t->elem;
		double u = e == DT_I8 ? ldexp(1, -7) : ldexp(1, -sig_bits(e));
		double s = d == DT_NVFP4 ? ldexp(1, -4) : clamp_frac(e);
		return sqrt(u * u + s * s / t->block);
	}
	if (t->kind == K_INT && scaled) {
		double qmax = ldexp(1, t->bits - 1) - 1;
		return sqrt(2 * log(g > 2 ? g : 2)) / (2 * qmax);
	}
	int p = sig_bits(d);
	return p ? ldexp(1, -p) : 0;
}

/* ---- the nodes ---- */
static int is_contraction(const Node *n)
{
	return n->op == OP_MatMul || n->op == OP_Gemm || n->op == OP_GroupedMatMul || n->op == OP_Conv;
}

/* Whether v is a weight: a parameter, possibly through views, transposes and casts. */
static int is_weight(const Value *v)
{
	for (int k = 0; v && k < 16; k++) {
		if (v->kind == V_PARAM)
			return 1;
		if (v->kind != V_NODE || !(ir_ops[v->def->op].flags & F_VIEW || v->def->op == OP_Transpose ||
					   v->def->op == OP_Cast))
			return 0;
		v = v->def->in[0];
	}
	return 0;
}

/* The inputs of a contraction that are quantized: the two operands (not bias, not offsets). */
static int is_operand(const Node *n, int i) { return i < 2 && n->in[i]; }

/* Whether operand i has its reduction axis K last (else it is transposed around the Quantize);
 * -1 when it cannot be blocked along K at all (convolutions). */
static int k_is_last(const Node *n, int i)
{
	switch (n->op) {
	case OP_MatMul: return i == 0 || n->in[1]->type.rank < 2;
	case OP_Gemm: return i == 0 ? !rt_attr_int(&n->attrs, "transA", 0) : rt_attr_int(&n->attrs, "transB", 0) != 0;
	case OP_GroupedMatMul: return i == 0;
	case OP_Conv: return -1;
	default: return 1;
	}
}

/* The first reader of v (through views) with one of `flags`, or NULL. */
static const Node *read_by(const Value *v, unsigned flags, Op op, int depth)
{
	if (depth > 8)
		return NULL;
	ir_foreach_node(v->graph, u)
		for (int i = 0; i < u->nin; i++) {
			if (u->in[i] != v)
				continue;
			if (u->op == op || (ir_ops[u->op].flags & flags))
				return u;
			if (ir_ops[u->op].flags & F_VIEW || u->op == OP_Transpose || u->op == OP_Cast) {
				const Node *r = read_by(u->out[0], flags, op, depth + 1);
				if (r)
					return r;
			}
		}
	return NULL;
}

/* Why contraction n must keep its dtype (a sensitivity rule), or NULL. */
static const char *sensitive_reason(const Node *n)
{
	if (read_by(n->out[0], 0, OP_TopKRouter, 0))
		return "router logits: expert choice is sensitive to rounding";
	if (read_by(n->out[0], 0, OP_Softmax, 0) || read_by(n->out[0], 0, OP_LogSoftmax, 0))
		return "its result feeds a softmax";
	for (int i = 0; i < 2 && i < n->nin; i++)
		if (n->in[i] && n->in[i]->kind == V_NODE &&
		    (n->in[i]->def->op == OP_Softmax || n->in[i]->def->op == OP_LogSoftmax))
			return "it reads softmax probabilities";
	if (n->aux == LAYER_FIRST || n->aux == LAYER_LAST)
		return n->aux;
	return NULL;
}

/* Why a non-contraction must stay at bf16 or wider, or NULL when it has no rule. */
static const char *kept_reason(const Node *n)
{
	unsigned f = ir_ops[n->op].flags;
	if (f & F_NORM)
		return "normalisation is sensitive";
	if (n->op == OP_Softmax || n->op == OP_LogSoftmax)
		return "softmax is sensitive";
	if (n->op == OP_TopKRouter)
		return "router logits are sensitive";
	if (f & F_ATTN)
		return "attention (softmax inside) is sensitive";
	if (n->op == OP_Add && n->nin == 2 && n->in[0] && n->in[1] &&
	    ir_type_eq(n->in[0]->type, n->in[1]->type) && n->out[0]->type.rank >= 2)
		for (int i = 0; i < 2; i++)
			if (n->in[i]->kind == V_INPUT ||
			    (n->in[i]->kind == V_NODE && n->in[i]->def->op == OP_Add))
				return "residual stream";
	return NULL;
}

/* ---- decisions ---- */
typedef struct Choice {
	const char *name;        /* the precision attribute: a policy or dtype name */
	DType fmt[2];            /* per operand; DT_INVALID: left as it is */
	int group[2];            /* Policy.*_group semantics */
	double est;              /* estimated relative error of the result */
	/* 1: the contraction's kernel scales its FP8 operands per block itself (the machine's
	 * <fp8-scaling>), so no Quantize is inserted; blk[i]: operand i's scale block, rows x cols
	 * of A (M x K) or B (K x N), {0, 0} for one scale per tensor */
	int inkernel, blk[2][2];
	const char *reason;
	const char *detail;      /* the remark's longer form of reason, or NULL */
	char buf[320];           /* room for a composed reason */
} Choice;

typedef struct Ctx {
	PassCtx *c;
	const Precision *prec;   /* --precision: its device's FP8 in-kernel scaling (fp8_kernel, fp8_blk) */
	const Device *dev;       /* NULL: the reference (f32/f64) */
	const char *mname;
	const Policy *policy;    /* NULL: auto */
	int quantized, kept;
	int quantized_run;       /* of quantized: those in a graph that runs (graph_runs) */
	const Graph *running;    /* a graph known to run, for the quick path of graph_runs */
} Ctx;

/* Whether the entry graph runs g: g is the entry, or a graph that runs calls it (repeat >= 1).
 * A layer body whose every repetition is its .first/.last copy is called by no one. */
static int graph_runs(const Module *m, const Graph *g, int depth)
{
	const Graph *entry = ir_entry((Module *)m);
	if (g == entry)
		return 1;
	if (depth > m->ngraphs)
		return 0;     /* calls form a DAG; this bounds a malformed one */
	for (const Graph *h = m->graphs; h; h = h->next)
		ir_foreach_node((Graph *)h, c)
			if (c->op == OP_Call && c->callee == g && c->repeat != 0 && graph_runs(m, h, depth + 1))
				return 1;
	return 0;
}

static int supported(const Ctx *x, DType d)
{
	if (!x->dev)
		return d == DT_F32 || d == DT_F64;
	return dev_supports(x->dev, d);
}

/* Whether dtype `to` changes a value held as `from`: block and scaled formats always do (to a
 * float input that is not already low-precision), a plain float only when it is narrower. */
static int narrows(DType from, DType to, int group)
{
	const DTypeInfo *f = &rt_dtypes[from], *t = &rt_dtypes[to];
	if (to == DT_INVALID || f->kind != K_FLOAT || f->storage != S_F32 || f->bits <= 8)
		return 0;
	if (t->kind == K_BLOCK || group != NOGROUP)
		return 1;
	return t->kind == K_FLOAT && t->bits < f->bits;
}

/* The group length of operand i for group semantics g (0: one row along K; -1: the tensor). */
static int64_t group_len(const Node *n, int i, int g)
{
	Type t = n->in[i]->type;
	if (g != 0 || t.rank < 1)
		return g > 0 ? g : -1;
	if (n->op == OP_Conv) {   /* weights per output channel, activations per tensor */
		int64_t numel = ir_type_numel(t);
		return i == 1 && numel > 0 && dim_isconst(t.dims[0]) && t.dims[0].k ? numel / t.dims[0].k : -1;
	}
	int ax = k_is_last(n, i) ? t.rank - 1 : t.rank - 2;
	return dim_isconst(t.dims[ax]) && t.dims[ax].k > 0 ? t.dims[ax].k : -1;
}

/* Fills ch from policy p for node n: which operands change, and the estimated error. */
static void choose(const Node *n, const Policy *p, Choice *ch)
{
	double e2 = 0;
	ch->name = p->name;
	for (int i = 0; i < 2; i++) {
		ch->fmt[i] = DT_INVALID;
		if (!is_operand(n, i))
			continue;
		int w = is_weight(n->in[i]);
		DType to = w ? p->wt : p->act;
		int g = w ? p->wt_group : p->act_group;
		DType from = n->in[i]->type.dt;
		double eps = fmt_eps(from, 0, 0);
		if (narrows(from, to, g)) {
			ch->fmt[i] = to;
			ch->group[i] = g;
			int64_t len = g == NOGROUP ? 0 : group_len(n, i, g);
			eps = fmt_eps(to, g != NOGROUP, len > 0 ? (double)len : (double)ir_type_numel(n->in[i]->type));
		}
		e2 += eps * eps;
	}
	ch->est = sqrt(e2);
}

/* FP8 GEMMs that scale their own operands (the machine's <fp8-scaling>, DeepSeek-V3 §3.3.1):
 * quantizing an operand here as well would round it twice (per tensor, then per block).  Their
 * layout under the options (Precision.fp8_blk, as the GPU targets read them: docs/targets-gpu.md):
 * default or +128x128 the machine's (A 1x128 tiles, B 128x128 blocks), +1x128 B per 128x1
 * column tile, +tensor one scale per tensor, and +nopromote where the scales are applied at
 * accumulator promotion (the machine's promote) also per tensor.
 * Hands the FP8 operands of a MatMul/Gemm to a kernel that scales them itself:
 * no Quantize nodes; each operand's error is E4M3's unit roundoff 2^-4, as with one scale per
 * tensor, because an f32 scale maps the block's amax to 448 exactly (no clamping, unlike E8M0
 * scales) and E4M3's normal range spans 2^-6/448 of it (numerics.md §1, §5): the finer blocks
 * only keep outlier channels from pushing the rest into subnormals (docs/targets-gpu.md). */
static void fp8_in_kernel(const Ctx *x, const Node *n, Choice *ch)
{
	if (!x->prec->fp8_kernel || (n->op != OP_MatMul && n->op != OP_Gemm))
		return;
	for (int i = 0; i < 2; i++)
		if (ch->fmt[i] != DT_INVALID && ch->fmt[i] != DT_F8E4M3)
			return;
	if (ch->fmt[0] == DT_INVALID && ch->fmt[1] == DT_INVALID)
		return;
	ch->inkernel = 1;
	memcpy(ch->blk, x->prec->fp8_blk, sizeof ch->blk);
}

/* Whether policy p can be applied to n at all: block formats need K along the last axis. */
static int applicable(const Node *n, const Policy *p)
{
	int block = rt_dtypes[p->act].kind == K_BLOCK || rt_dtypes[p->wt].kind == K_BLOCK;
	return !(block && n->op == OP_Conv);
}

/* auto: the cheapest legal policy whose estimate is within the budget; else the widest. */
static void choose_auto(const Ctx *x, const Node *n, Choice *ch)
{
	int len = 0;
	char over[128] = "";
	for (int r = 1; r <= prec_nwords; r++)
	for (int i = 0; i < prec_nwords; i++) {
		const Policy *p = &prec_words[i];
		if (p->auto_order != r || !supported(x, p->needs) || !applicable(n, p))
			continue;
		choose(n, p, ch);
		if (ch->est <= x->c->error_budget) {
			snprintf(ch->buf, sizeof ch->buf, "auto: the cheapest legal format within the "
				 "error budget %g%s%s", x->c->error_budget, *over ? "; over it: " : "", over);
			ch->reason = ch->buf;
			return;
		}
		if (len < (int)sizeof over - 24)
			len += snprintf(over + len, sizeof over - (size_t)len, "%s%s %.2g", len ? ", " : "",
					p->name, ch->est);
	}
	snprintf(ch->buf, sizeof ch->buf, "auto: no legal format is within the error budget %g",
		 x->c->error_budget);
	ch->reason = ch->buf;
	ch->name = rt_dtype_name(n->in[0]->type.dt);
	ch->fmt[0] = ch->fmt[1] = DT_INVALID;
}

/* `@precision(dt)` as a policy for one node: dt for every operand, scaled for f8 and integers. */
static Policy forced_policy(DType dt)
{
	int k = rt_dtypes[dt].kind;
	int g = k == K_INT ? 0 : (dt == DT_F8E4M3 || dt == DT_F8E5M2) ? -1 : NOGROUP;
	return (Policy){ rt_dtype_name(dt), dt, dt, g, g, dt, dt, 0, NULL };
}

/* How many times the entry graph runs the layer body named base (len bytes): its calls of
 * base, base.first and base.last, with their repeat counts. */
static int64_t repetitions(const Module *m, const char *base, size_t len)
{
	Graph *g = ir_entry((Module *)m);
	int64_t r = 0;
	ir_foreach_node(g, c) {
		const char *cn = c->op == OP_Call && c->callee ? c->callee->name : NULL;
		if (cn && !strncmp(cn, base, len) && (!cn[len] || !strcmp(cn + len, ".first") || !strcmp(cn + len, ".last")))
			r += c->repeat > 0 ? c->repeat : 1;
	}
	return r;
}

static void decide(const Ctx *x, const Node *n, Choice *ch)
{
	memset(ch, 0, sizeof *ch);
	const char *why;
	if (n->annot.precision != DT_INVALID) {
		Policy p = forced_policy(n->annot.precision);
		choose(n, &p, ch);
		ch->name = rt_dtype_name(n->annot.precision);
		snprintf(ch->buf, sizeof ch->buf, "forced by @precision(%s)%s", ch->name,
			 supported(x, n->annot.precision) ? "" : ", which the device does not support natively");
		ch->reason = ch->buf;
	} else if (is_contraction(n) && (why = sensitive_reason(n))) {
		choose(n, prec_word("f64"), ch);
		ch->name = rt_dtype_name(n->out[0]->type.dt);
		ch->reason = why;
		if (why == LAYER_FIRST || why == LAYER_LAST) {   /* which copy: the remark's line is the body's */
			const char *gn = n->graph ? n->graph->name : "", *dot = strrchr(gn, '.');
			int copy = dot && (!strcmp(dot, ".first") || !strcmp(dot, ".last"));
			if (copy)
			{
				int64_t reps = repetitions(n->graph->m, gn, (size_t)(dot - gn));
				snprintf(ch->buf, sizeof ch->buf, "%s: in '%s', the copy of '%.*s' for %.*s#%lld of %lld; the "
					 "other repetitions follow the policy", why, gn, (int)(dot - gn), gn, (int)(dot - gn), gn,
					 (long long)(why == LAYER_FIRST ? 1 : reps), (long long)reps);
			}
			else
				snprintf(ch->buf, sizeof ch->buf, "%s: %s the repeated layers, in '%s'", why,
					 why == LAYER_FIRST ? "before" : "after", gn);
			ch->detail = ch->buf;   /* precision_reason stays the rule's name */
		}
	} else if (!x->policy) {
		choose_auto(x, n, ch);
	} else if (!applicable(n, x->policy)) {
		choose(n, prec_word("f64"), ch);
		ch->name = rt_dtype_name(n->out[0]->type.dt);
		ch->reason = "convolution: block formats need the reduction axis last";
	} else {
		choose(n, x->policy, ch);
		snprintf(ch->buf, sizeof ch->buf, "policy %s", x->policy->name);
		ch->reason = ch->buf;
	}
	fp8_in_kernel(x, n, ch);
}

/* ---- making the choice explicit ---- */
/* Transpose(v) swapping its last two axes, inserted before n. */
static Value *swap_last(Graph *g, Node *n, Value *v)
{
	int64_t perm[IR_MAX_RANK];
	int r = v->type.rank;
	for (int k = 0; k < r; k++)
		perm[k] = k;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	const char *name = ir_fresh_name(g, v->name);
	Node *t = ir_insert_node(g, n, OP_Transpose, &v, 1, &name, 1, n->loc);
	ir_set_attr_ints(t, "perm", perm, r);
	Value *out = t->out[0];
	out->type = ir_type(g->m, v->type.dt, r, v->type.dims);   /* dims swapped below */
	Dim d = out->type.dims[r - 2];
	out->type.dims[r - 2] = out->type.dims[r - 1];
	out->type.dims[r - 1] = d;
	return out;
}

/* Input i of n becomes Quantize(input) {to, group}, transposed around when K is not last. */
static void quantize_input(PassCtx *c, Graph *g, Node *n, int i, DType to, int group)
{
	Value *v = n->in[i];
	int64_t len = group == NOGROUP ? 0 : group_len(n, i, group);
	int along_k = rt_dtypes[to].kind == K_BLOCK || group == 0 || group > 0;
	int tr = along_k && is_contraction(n) && k_is_last(n, i) == 0 && v->type.rank >= 2;
	char prefix[128];
	snprintf(prefix, sizeof prefix, "%s.%s", v->name, rt_dtype_name(to));
	if (tr)
		v = swap_last(g, n, v);
	const char *name = ir_fresh_name(g, prefix);
	Node *q = ir_insert_node(g, n, OP_Quantize, &v, 1, &name, 1, n->loc);
	ir_set_attr_str(q, "to", rt_dtype_name(to));
	if (group != NOGROUP)
		ir_set_attr_int(q, "group", len);
	v = q->out[0];
	v->type = ir_type(g->m, group == NOGROUP ? to : q->in[0]->type.dt, q->in[0]->type.rank, q->in[0]->type.dims);
	if (tr)
		v = swap_last(g, n, v);
	ir_set_input(n, i, v);
	pass_stat(c, "Quantize nodes inserted", 1);
}

/* Whether x is a low-precision storage dtype a contraction widens (ir/shape_nn.c's rule). */
static int lowp(DType d)
{
	int k = rt_dtypes[d].kind;
	return k == K_BLOCK || (k == K_FLOAT && rt_dtypes[d].bits <= 8) || d == DT_I4;
}

/* The dtype n computes once its inputs are quantized (the contraction dtype rule). */
static DType result_dtype(const Node *n, const Choice *ch)
{
	DType orig = n->out[0]->type.dt;
	if (!is_contraction(n) || n->nin < 2)   /* elementwise and norms: X's dtype */
		return n->nin && n->in[0] && rt_dtype_isfloat(orig) ? n->in[0]->type.dt : orig;
	DType a = n->in[0]->type.dt, b = n->in[1]->type.dt;
	if (lowp(a) && lowp(b))
		return DT_F32;
	if (lowp(a) || lowp(b))
		return lowp(a) ? b : a;
	return a;
}

/* Casts n's result back to dt: `y.acc = n(...)`, `y = Cast(y.acc) {to=dt}`. */
static void cast_back(PassCtx *c, Graph *g, Node *n, DType dt)
{
	Value *y = n->out[0];
	const char *name = y->name;
	y->name = ir_fresh_name(g, name);
	Node *k = ir_insert_node(g, n->next, OP_Cast, &y, 1, &name, 1, n->loc);
	ir_set_attr_str(k, "to", rt_dtype_name(dt));
	k->out[0]->type = ir_type(g->m, dt, y->type.rank, y->type.dims);   /* read by later choices */
	ir_replace_uses(g, y, k->out[0]);
	ir_set_input(k, 0, y);
	pass_stat(c, "Cast nodes inserted", 1);
}

static void apply(PassCtx *c, Graph *g, Node *n, const Choice *ch)
{
	DType orig = n->out[0]->type.dt;
	if (ch->inkernel) {   /* the kernel scales and rounds its operands (fp8_in_kernel) */
		pass_stat(c, "FP8 operands left to the kernel's block scaling", 1);
		return;
	}
	for (int i = 0; i < n->nin; i++) {
		int op = is_operand(n, i) || !is_contraction(n);
		DType to = op && i < 2 ? ch->fmt[i] : ch->fmt[0];
		int grp = op && i < 2 ? ch->group[i] : ch->group[0];
		if (!n->in[i] || to == DT_INVALID || !narrows(n->in[i]->type.dt, to, grp))
			continue;
		if (!op && grp != NOGROUP)   /* biases join only a plain cast */
			continue;
		if (!is_contraction(n) && rt_dtypes[to].kind == K_BLOCK)
			continue;
		quantize_input(c, g, n, i, to, grp);
	}
	DType now = result_dtype(n, ch);
	if (now != orig) {
		n->out[0]->type.dt = now;
		cast_back(c, g, n, orig);
	}
}

/* ---- recording why ---- */
/* "A: mxfp4 blocks of 32 along K (e8m0 scales); B: ..." for the operands that change. */
static void describe_layout(const Node *n, const Choice *ch, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < 2 && k < len; i++) {
		DType to = ch->fmt[i];
		if (to == DT_INVALID || !n->in[i])
			continue;
		const DTypeInfo *t = &rt_dtypes[to];
		const char *who = is_contraction(n) ? (i ? "B" : "A") : "X";
		int64_t g = ch->group[i] == NOGROUP ? 0 : group_len(n, i, ch->group[i]);
		if (ch->inkernel && ch->blk[i][0] > 0)
			k += (size_t)snprintf(buf + k, len - k, "%s%s: %s, f32 scale per %dx%d %s in the kernel", k ? "; " : "",
				who, t->name, ch->blk[i][0], ch->blk[i][1], i ? "block" : "tile");
		else if (ch->inkernel)
			k += (size_t)snprintf(buf + k, len - k, "%s%s: %s, one scale per tensor in the kernel", k ? "; " : "", who,
				t->name);
		else if (t->kind == K_BLOCK)
			k += (size_t)snprintf(buf + k, len - k, "%s%s: %s blocks of %d along %s (%s scales%s)",
				k ? "; " : "", who, t->name, t->block, is_contraction(n) ? "K" : "the last axis",
				rt_dtype_name(t->scale), to == DT_NVFP4 ? " and an f32 tensor scale" : "");
		else if (ch->group[i] != NOGROUP)
			k += (size_t)snprintf(buf + k, len - k, "%s%s: %s, one scale per %s", k ? "; " : "", who,
				t->name, ch->group[i] == -1 || g <= 0 ? "tensor" :
				ch->group[i] == 0 ? (i ? "output channel" : "row (token)") : "group along K");
		else
			k += (size_t)snprintf(buf + k, len - k, "%s%s: %s elementwise", k ? "; " : "", who, t->name);
		if (ch->group[i] > 0 && !ch->inkernel && k < len)
			k += (size_t)snprintf(buf + k, len - k, " of %lld", (long long)g);
	}
}

static double sig3(double v)
{
	char b[32];
	snprintf(b, sizeof b, "%.3g", v);
	return strtod(b, NULL);
}

static int changes_any(const Node *n, const Choice *ch)
{
	for (int i = 0; i < 2; i++)
		if (ch->fmt[i] != DT_INVALID && n->in[i] && narrows(n->in[i]->type.dt, ch->fmt[i], ch->group[i]))
			return 1;
	return 0;
}

static void record(Ctx *x, Graph *g, Node *n, const Choice *ch)
{
	char layout[256];
	describe_layout(n, ch, layout, sizeof layout);
	int q = changes_any(n, ch);
	ir_set_attr_str(n, "precision", ch->name);
	if (q)
		ir_set_attr_str(n, "block_layout", layout);
	ir_set_attr_float(n, "est_rel_err", sig3(ch->est));
	ir_set_attr_str(n, "precision_reason", ch->reason);
	if (q) {
		pass_remark(x->c, REMARK_APPLIED, g, n, "%s '%s' at %s (%s): %s; estimated relative error %.3g (a normwise "
			    "bound: each operand's unit roundoff and block-scale error in quadrature, docs/passes.md)",
			    ir_ops[n->op].name, pass_node_name(n), ch->name, ch->reason, layout, ch->est);
		x->quantized++;
		if (x->running == g || graph_runs(g->m, g, 0))
			x->quantized_run++, x->running = g;
		pass_changed(x->c, "nodes quantized");
	} else {
		pass_remark(x->c, REMARK_MISSED, g, n, "kept %s '%s' at %s: %s; estimated relative error %.3g",
			    ir_ops[n->op].name, pass_node_name(n), ch->name, ch->detail ? ch->detail : ch->reason, ch->est);
		x->kept++;
		pass_stat(x->c, "nodes kept wide", 1);
	}
}

/* A node that keeps its dtype by a sensitivity rule (normalisation, softmax, residual). */
static void record_kept(Ctx *x, Graph *g, Node *n, const char *why)
{
	DType dt = n->out[0]->type.dt;
	ir_set_attr_str(n, "precision", rt_dtype_name(dt));
	ir_set_attr_str(n, "precision_reason", why);
	pass_remark(x->c, REMARK_MISSED, g, n, "kept %s '%s' at %s: %s", ir_ops[n->op].name,
		    pass_node_name(n), rt_dtype_name(dt), why);
	pass_stat(x->c, "nodes kept wide", 1);
}

static void place_node(Ctx *x, Graph *g, Node *n)
{
	Choice ch;
	const char *why;
	if (!n->nout || !n->out[0] || n->op == OP_Quantize)
		return;
	if (is_contraction(n) || n->annot.precision != DT_INVALID) {
		decide(x, n, &ch);
		if (changes_any(n, &ch) && !pass_bisect(x->c, n, "place precision")) {
			ch.fmt[0] = ch.fmt[1] = DT_INVALID;
			ch.inkernel = 0;
			ch.reason = "skipped by --opt-bisect-limit";
		}
		record(x, g, n, &ch);   /* first: apply renames the result */
		apply(x->c, g, n, &ch);
	} else if ((why = kept_reason(n))) {
		record_kept(x, g, n, why);
	}
}

/* ---- the pass ---- */
static const Device *accelerator(const Machine *m)
{
	for (int i = 0; m && i < m->ndevs; i++)
		if (!m->devs[i].is_host)
			return &m->devs[i];
	return NULL;
}

/* The checked --precision (the driver's prec_parse refused what the device lacks). */
static void setup(Ctx *x, PassCtx *c)
{
	x->c = c;
	x->prec = c->precision;
	x->dev = x->prec->dev ? x->prec->dev : accelerator(c->machine);
	x->mname = c->machine ? c->machine->name : "reference";
	x->policy = x->prec->word->needs != DT_INVALID ? x->prec->word : NULL;   /* auto requires nothing */
}

static void clear_aux(Module *m)
{
	for (Graph *g = m->graphs; g; g = g->next)
		ir_foreach_node(g, n)
			n->aux = NULL;
}

int pass_place_precision(Module *m, PassCtx *c)
{
	Ctx x = { 0 };
	int e;
	if (!c->precision)
		return 0;
	setup(&x, c);
	clear_aux(m);
	if (pass_mark_layers(m, c) > 0 && (e = ir_infer_shapes(m)))
		return e;
	for (Graph *g = m->graphs; g; g = g->next)
		ir_foreach_node(g, n)
			place_node(&x, g, n);
	clear_aux(m);
	pass_remark(c, REMARK_ANALYSIS, ir_entry(m), NULL, "precision %s on %s: %d node%s quantized, %d kept (each node of "
		    "a graph once, however often the graph is called)", c->precision->spec, x.mname, x.quantized,
		    x.quantized == 1 ? "" : "s", x.kept);
	if (x.quantized && !x.quantized_run)    /* e.g. --bind L=2: both layers are the kept .first/.last copies */
		fprintf(stderr, "aicc: warning: --precision %s quantizes no node that runs: the %d node%s it quantized "
			"%s in graphs the model never calls (a layer body whose every repetition is its first or last "
			"copy, kept wide); with more layers the others follow the policy (--remarks=quant lists each)\n",
			c->precision->spec, x.quantized, x.quantized == 1 ? "" : "s", x.quantized == 1 ? "is" : "are");
	return 0;
}
