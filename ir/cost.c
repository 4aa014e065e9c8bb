/* ir/cost.c: FLOP counts per node and the module summary (`aicc compile --emit summary`).
 *
 * Conventions (one execution of a node, shapes as inferred; 0 when a dim is still symbolic):
 *   - a multiply-add is 2 FLOP; comparisons, selects, exp, divides each count 1;
 *   - elementwise ops (and quantize/dequantize, RotaryEmbedding, MoECombine): 1 per output element;
 *   - reductions, ArgMax, TopK, TopKRouter, GlobalAveragePool: 1 per input element;
 *   - Softmax/LogSoftmax: 5 per element (max, subtract, exp, sum, divide);
 *   - normalisations: 5 per element (mean, variance, subtract, scale, affine);
 *   - MatMul: 2*M*N*K per batch element = 2 * (output elements) * K;
 *   - Gemm: 2*M*N*K, plus M*N for the C term when C is given;
 *   - Conv: 2 * N * Cout * (output spatial) * (Cin/group) * (kernel elements), plus the bias add;
 *   - ConvTranspose: 2 * N * Cin * (input spatial) * (Cout/group) * (kernel elements), plus the
 *     bias add (each input element is scattered through its group's kernels);
 *   - pooling: (output elements) * (kernel elements);
 *   - Resize: nearest 0 (a gather); linear 2 taps, cubic 4 taps, a multiply-add each, per output
 *     element and resampled axis (antialias: counted as without);
 *   - Einsum: (output elements) * (product of the summed letters) * 2*(inputs - 1) (1 for one input);
 *   - GroupedMatMul: 2 * R * K * N (every dispatched row meets one expert), as its weight
 *     gradient GroupedMatMulGrad;
 *   - Attention: QK^T (2*dh) and PV (2*dv) per (query, key) pair and head, plus 5 per score for
 *     the softmax.  With is_causal=1 only the unmasked pairs count: query i of Sq (aligned to the
 *     end of the total sequence T = past + Sq) sees T - Sq + i + 1 keys, i.e. Sq*(T-Sq) +
 *     Sq*(Sq+1)/2 pairs instead of Sq*T (about half for prefill), as fused kernels skip masked tiles;
 *     packed sequences (seq_offsets) count each sequence's own pairs, the block diagonal, as the
 *     varlen kernels tile each sequence alone;
 *   - data movement (Reshape, Transpose, Gather, Concat, ...): 0;
 *   - Call: the callee's FLOP times the repeat count;
 *   - training operators: gradients of elementwise ops, EmbeddingGrad and AdamW 1 per output
 *     element (of output 0); norm gradients 5 per element; SoftmaxCrossEntropyLossGrad 5 per
 *     score; AttentionGrad the FlashAttention-2 backward's count (flops_attention_grad).
 * Summary (ir_summary) expands every call: `repeat N` counts N times, and each call site and
 * each repetition holds its own parameters (docs/language.md).
 */
#include <string.h>

#include "ir/shape_int.h"

/* Element count of a type as a double; -1 when unknown or symbolic. */
static double numel(Type t)
{
	if (t.rank < 0)
		return -1;
	double p = 1;
	for (int i = 0; i < t.rank; i++) {
		if (!dim_isconst(t.dims[i]))
			return -1;
		p *= (double)t.dims[i].k;
	}
	return p;
}

static double out_numel(const Node *n) { return n->nout ? numel(n->out[0]->type) : -1; }
static double in_numel(const Node *n, int i) { return i < n->nin && n->in[i] ? numel(n->in[i]->type) : -1; }
static double pos(double x) { return x > 0 ? x : 0; }

/* Constant dim d of input i as a double; -1 if absent or symbolic. */
static double in_dim(const Node *n, int i, int d)
{
	if (i >= n->nin || !n->in[i])
		return -1;
	Type t = n->in[i]->type;
	if (d < 0)
		d += t.rank;
	if (d < 0 || d >= t.rank || !dim_isconst(t.dims[d]))
		return -1;
	return (double)t.dims[d].k;
}

double flops_zero(const Node *n) { (void)n; return 0; }
double flops_elem(const Node *n) { return pos(out_numel(n)); }
double flops_reduce(const Node *n) { return pos(in_numel(n, 0)); }
double flops_softmax(const Node *n) { return 5 * pos(out_numel(n)); }
double flops_norm(const Node *n) { return 5 * pos(out_numel(n)); }

double flops_matmul(const Node *n)
{
	double k = in_dim(n, 0, -1), out = out_numel(n);
	return k < 0 || out < 0 ? 0 : 2 * out * k;
}

double flops_gemm(const Node *n)
{
	int ta = rt_attr_int(&n->attrs, "transA", 0) != 0;
	double k = in_dim(n, 0, ta ? 0 : 1), out = out_numel(n);
	if (k < 0 || out < 0)
		return 0;
	return 2 * out * k + (n->nin > 2 && n->in[2] ? out : 0);
}

double flops_conv(const Node *n)
{
	double out = out_numel(n), w = in_numel(n, 1), m = in_dim(n, 1, 0);
	if (out < 0 || w < 0 || m <= 0)
		return 0;
	/* W holds Cout * (Cin/group) * kernel elements: each output element uses W/Cout of them. */
	return 2 * out * (w / m) + (n->nin > 2 && n->in[2] ? out : 0);
}

double flops_convtranspose(const Node *n)
{
	double in = in_numel(n, 0), w = in_numel(n, 1), c = in_dim(n, 1, 0), out = out_numel(n);
	if (in < 0 || w < 0 || c <= 0 || out < 0)
		return 0;
	/* W holds Cin * (Cout/group) * kernel elements: each input element meets W/Cin of them. */
	return 2 * in * (w / c) + (n->nin > 2 && n->in[2] ? out : 0);
}

double flops_resize(const Node *n)
{
	const char *mode = rt_attr_str(&n->attrs, "mode", "nearest");
	double out = out_numel(n), taps = !strcmp(mode, "linear") ? 2 : !strcmp(mode, "cubic") ? 4 : 0;
	int axes = 0;
	if (out < 0 || !n->nin || !n->in[0] || n->in[0]->type.rank != n->out[0]->type.rank)
		return 0;
	for (int i = 0; i < n->in[0]->type.rank; i++)
		axes += !dim_eq(n->in[0]->type.dims[i], n->out[0]->type.dims[i]);
	return 2 * taps * out * axes;
}

double flops_pool(const Node *n)
{
	int k;
	const int64_t *ks = rt_attr_ints(&n->attrs, "kernel_shape", &k);
	double win = 1, out = out_numel(n);
	for (int i = 0; ks && i < k; i++)
		win *= (double)ks[i];
	return pos(out) * win;
}

double flops_einsum(const Node *n)
{
	EinsumSpec s;
	char err[128];
	const char *eq = rt_attr_str(&n->attrs, "equation", "");
	double out = out_numel(n), summed = 1;
	if (out < 0 || einsum_parse(eq, n->nin, &s, err, sizeof err) < 0)
		return 0;
	char seen[128] = { 0 };
	for (int i = 0; i < s.nin; i++) {
		int ne = n->in[i]->type.rank - s.rank[i];
		for (int j = 0; j < s.rank[i]; j++) {
			int ch = s.lab[i][j], ax = s.ell[i] >= 0 && j >= s.ell[i] ? j + ne : j;
			if (seen[ch] || strchr(s.out, ch))
				continue;
			seen[ch] = 1;
			summed *= pos(in_dim(n, i, ax));
		}
	}
	return out * summed * (n->nin > 1 ? 2.0 * (n->nin - 1) : 1.0);
}

double flops_groupedmm(const Node *n)
{
	double r = in_dim(n, 0, 0), k = in_dim(n, 0, 1), nn = in_dim(n, 2, 2);
	return r < 0 || k < 0 || nn < 0 ? 0 : 2 * r * k * nn;
}

/* GroupedMatMulGrad(dY[R, N], Xs[R, K], Offsets): 2 * R * K * N (each row's outer product). */
double flops_groupedmm_grad(const Node *n)
{
	double r = in_dim(n, 0, 0), nn = in_dim(n, 0, 1), k = in_dim(n, 1, 1);
	return r < 0 || k < 0 || nn < 0 ? 0 : 2 * r * k * nn;
}

/* (query, key) pairs per head: Sq*T, or the unmasked ones when causal (see the top). */
static double attn_pairs(double sq, double total, int causal)
{
	if (!causal)
		return sq * total;
	double past = pos(total - sq);
	return sq * past + sq * (sq + 1) / 2;
}

/* Attention's FLOP with Q, K, V at inputs o, o+1, o+2 (0: Attention, 1: AttentionGrad) and
 * per (query, key) pair and head fh * dh + fv * dv + fs. */
static double attn_flops(const Node *n, int o, double fh, double fv, double fs)
{
	if (n->nout < 1 || n->out[0]->type.rank < 0 || n->nin < o + 3)
		return 0;
	Type q = n->in[o]->type;
	double b = in_dim(n, o, 0), sq, heads, dh, dv;
	double skv = in_dim(n, o + 1, q.rank == 4 ? 2 : 1), past = !o && n->nin > 4 && n->in[4] ? in_dim(n, 4, 2) : 0;
	if (q.rank == 4) {
		heads = in_dim(n, o, 1);
		sq = in_dim(n, o, 2);
		dh = in_dim(n, o, 3);
		dv = in_dim(n, o + 2, 3);
	} else {
		heads = (double)rt_attr_int(&n->attrs, "q_num_heads", 1);
		double kvh = (double)rt_attr_int(&n->attrs, "kv_num_heads", 1);
		sq = in_dim(n, o, 1);
		dh = in_dim(n, o, 2) / heads;
		dv = in_dim(n, o + 2, 2) / kvh;
	}
	if (b < 0 || sq < 0 || heads < 0 || dh < 0 || dv < 0 || skv < 0 || past < 0)
		return 0;
	int causal = rt_attr_int(&n->attrs, "is_causal", 0) != 0, k;
	const int64_t *off = rt_attr_ints(&n->attrs, "seq_offsets", &k);
	double pairs = 0;
	if (off && k >= 2 && !past)   /* packed sequences: only the block diagonal */
		for (int i = 0; i + 1 < k; i++)
			pairs += attn_pairs((double)(off[i + 1] - off[i]), (double)(off[i + 1] - off[i]), causal);
	else
		pairs = attn_pairs(sq, past + skv, causal);
	return b * heads * pairs * (fh * dh + fv * dv + fs);
}

double flops_attention(const Node *n) { return attn_flops(n, 0, 2, 2, 5); }
/* The FlashAttention-2 backward recomputes Q K^T (2 dh) and the softmax (5), and computes dP =
 * dY V^T (2 dv), dV = P^T dY (2 dv), dQ and dK (2 dh each) and dS (3) per pair: 2.5x the
 * forward's matrix FLOP (Dao, ICLR 2024, section 3.1). */
double flops_attention_grad(const Node *n) { return attn_flops(n, 1, 6, 4, 8); }

/* FLOP of one execution of graph g, nodes in order. */
static double graph_flops(const Graph *g, int depth)
{
	double f = 0;
	if (depth > 64)
		return 0;
	ir_foreach_node(g, n)
		f += n->op == OP_Call ? (n->callee ? graph_flops(n->callee, depth + 1) * (double)n->repeat : 0)
				      : ir_node_flops(n);
	return f;
}

double flops_call(const Node *n) { return n->callee ? graph_flops(n->callee, 1) * (double)n->repeat : 0; }

double ir_node_flops(const Node *n) { return ir_ops[n->op].flops(n); }

/* ---- summary ---- */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static Summary summarize(Graph *g, int depth)
{
	Summary s = { 0 };
	if (!g || depth > 64)
		return s;
	for (int i = 0; i < g->nparams; i++) {
		Type t = g->params[i]->type;
		int64_t k = ir_type_numel(t);
		int konst = t.rank >= 0;
		for (int d = 0; d < t.rank; d++)
			konst &= dim_isconst(t.dims[d]);
		if (k < 0 && konst && !s.overflow)
			s.overflow = g->params[i];   /* constant dims whose product overflows */
		if (k < 0)
			continue;   /* symbolic or untyped: not counted */
		int64_t b = rt_dtype_bytes(t.dt, k);
		if (!s.overflow && (b == INT64_MAX || b < 0 || sat_add(s.parameter_bytes, b) == INT64_MAX))
			s.overflow = g->params[i];
		if (g->params[i]->init && g->params[i]->init->inline_lit) {  /* a constant, not a weight */
			s.constant_bytes = sat_add(s.constant_bytes, rt_dtype_bytes(g->params[i]->type.dt, k));
			continue;
		}
		s.parameters = sat_add(s.parameters, k);
		s.parameter_bytes = sat_add(s.parameter_bytes, rt_dtype_bytes(g->params[i]->type.dt, k));
	}
	ir_foreach_node(g, n) {
		if (n->op != OP_Call) {
			s.nodes = sat_add(s.nodes, 1);
			s.flops += ir_node_flops(n);
			continue;
		}
		Summary cs = summarize(n->callee, depth + 1);
		if (!s.overflow)
			s.overflow = cs.overflow;
		if (!s.overflow && n->callee && n->callee->nparams &&
		    sat_add(s.parameter_bytes, sat_mul(cs.parameter_bytes, n->repeat)) == INT64_MAX)
			s.overflow = n->callee->params[0];   /* repeat N of the callee's parameters */
		s.nodes = sat_add(s.nodes, sat_mul(cs.nodes, n->repeat));
		s.parameters = sat_add(s.parameters, sat_mul(cs.parameters, n->repeat));
		s.parameter_bytes = sat_add(s.parameter_bytes, sat_mul(cs.parameter_bytes, n->repeat));
		s.constant_bytes = sat_add(s.constant_bytes, sat_mul(cs.constant_bytes, n->repeat));
		s.flops += cs.flops * (double)n->repeat;
	}
	return s;
}

Summary ir_summary(Graph *g) { return summarize(g, 0); }

static void mark_type(Type t, unsigned char *used)
{
	for (int i = 0; i < t.rank; i++)
		dim_mark_syms(t.dims[i], used);
}

static void mark_graph(const Graph *g, unsigned char *used, int depth)
{
	if (!g || depth > 64)
		return;
	for (int i = 0; i < g->nin; i++)
		mark_type(g->inputs[i]->type, used);
	for (int i = 0; i < g->nparams; i++)
		mark_type(g->params[i]->type, used);
	ir_foreach_node(g, n) {
		for (int k = 0; k < n->nout; k++)
			if (n->out[k])
				mark_type(n->out[k]->type, used);
		if (n->op == OP_Call)
			mark_graph(n->callee, used, depth + 1);
	}
}

int ir_unbound_syms(const Module *m, const Graph *g, unsigned char *used)
{
	memset(used, 0, (size_t)m->nsyms);
	mark_graph(g, used, 0);
	int n = 0;
	for (int s = 0; s < m->nsyms; s++)
		n += used[s];
	return n;
}
