/* passes/train_step.c: the parallel training step (--phase train with --dp/--cp/--zero/--pp-virtual).
 *
 * A step of D = --dp data-parallel replicas, each T = --tp tensor-parallel x C = --cp
 * context-parallel x P = --pp pipeline-parallel devices (Llama 3's 4D order [TP, CP, PP, DP],
 * innermost first: Dubey et al., "The Llama 3 Herd of Models", 2024, section 3.3.2), M =
 * --grad-accum micro-batches of --batch sequences per replica and step, ZeRO stage --zero
 * (Rajbhandari et al., SC'20), V = --pp-virtual model chunks per pipeline rank (the interleaved
 * 1F1B schedule of Narayanan et al., SC'21, section 2.2.2).
 *
 * What is priced, and how.  The plan for thousands of devices stays small: autodiff builds the
 * step of one instance of every repeated layer (its forward, backward and AdamW nodes tagged
 * with their section: before the layers, layer stack k, after), and this file prices it as one
 * replica's pipeline ranks plus the data-parallel collectives over the group:
 *   - every node on one device through the target's node_time hook (pass_work_time) with the
 *     work shared by the T x C devices of a tensor- and context-parallel group (Megatron-LM
 *     with sequence parallelism shards every operator of a layer over T; context parallelism
 *     splits the tokens over C); a layer's node times are multiplied by nothing, the pipeline
 *     rank holds whole layers;
 *   - tensor parallelism: Megatron's two all-reduces per layer in the forward pass and two in
 *     the backward (Shoeybi et al. 2019, section 3: the f and g operators; with sequence
 *     parallelism a reduce-scatter plus an all-gather of the same volume, Korthikanti et al.
 *     2022), one at every residual Add fed by a MatMul, of that Add's activation, on the
 *     critical path (no overlap of TP communication with compute is assumed); the embedding
 *     adds one all-reduce of its output, the head one all-gather and one reduce-scatter of its
 *     input;
 *   - context parallelism: per Attention node an all-gather of K and V in the forward pass and
 *     again in the backward, and a reduce-scatter of dK and dV (Llama 3's all-gather based
 *     context parallelism), exposed;
 *   - the ring collectives of runtime/timing.c (Thakur, Rabenseifner & Gropp 2005): an
 *     all-reduce moves 2(k-1)/k of the data in 2(k-1) steps, reduce-scatter and all-gather
 *     (k-1)/k in k-1 steps, plus the device's collective engine latency (NCCL's base latency);
 *     a group whose devices (stride s x size k) fit the scale-up domain of the device's first
 *     link (NVLink's `domain`) uses it, any other the scale-out link (machine_scaleout_link),
 *     whose per-flow bandwidth is cut where the group spans several of the fabric's `pod`s and
 *     the `oversubscription` above them is the bottleneck: a ring leaves each pod it visits
 *     once, so each of the G groups with members in a pod sends one flow out of it, and a flow
 *     gets min(1, pod / (oversubscription x G)) of the link (G = pod / members per pod, at most
 *     the number of groups);
 *   - pipeline: whole layers over the P ranks (the embedding on the first, the head and loss
 *     on the last), balanced by predicted time (the smallest maximum rank time; contiguous
 *     layers; Llama 3 section 3.3.2 removes a layer from the first and last stage for the same
 *     reason); the schedule of M micro-batches, rank times t_s (forward + backward of one
 *     micro-batch), t_max the slowest: M t_max + (sum_s t_s - t_max) / V, which for equal
 *     ranks is (M + (P-1)/V) t, the bubble (P-1)/V t of Narayanan et al. (V = 1: GPipe's and
 *     1F1B's (P-1)/(M+P-1) of the step); plus 2(P-1) activation sends (the fill and the
 *     drain; sends in the steady state overlap compute), each of the layer input's bytes / (T
 *     x C) (Megatron's scatter-gather of the activation over the TP group); --pp-blocking-sends
 *     (Megatron-LM 2021): every exchange waits on its transfer and on the TP group's all-gather
 *     of what it received, in the fill and drain and in the steady state (per micro-batch two
 *     exchanges on a middle rank, 2V sends interleaved), see price();
 *   - data parallelism over the D x C devices holding the same weights, of the first pipeline
 *     rank's parameters / T (the last rank to finish): ZeRO 0 an all-reduce of the gradients,
 *     overlapped on a separate stream with the last micro-batch's backward pass (exposed, after
 *     it, with --grad-after-backward: Megatron-LM 2021's local DDP); ZeRO 1 and 2
 *     a reduce-scatter of the gradients (overlapped the same way) and an all-gather of the
 *     updated weights, overlapped with the next step's first forward pass; ZeRO 3 (FSDP) an
 *     all-gather before every micro-batch's forward and backward and a reduce-scatter after
 *     it, each overlapped with that micro-batch's pass on the rank; only what does not fit
 *     under the compute is exposed.  The compute units' own work on these collectives (the
 *     reduce-scatter's additions and the all-gather's copies through HBM: NCCL's kernels on
 *     the SMs, XLA's collective fusions on the TensorCores) is serial with compute, less the
 *     share a collective engine offloads (<offload>: Ironwood's SparseCores), see units();
 *     the TP and CP collectives' own unit work is not priced (it runs beside their wire time,
 *     which they already expose);
 *   - the optimizer: the AdamW nodes on the rank's shard (/ T, and / (D x C) from ZeRO 1).
 * MFU = 3 x the forward pass's FLOP x micro-batches x replicas / (step x devices x the device's
 * peak at the format of the largest forward node; PaLM appendix B); HFU counts the FLOP as
 * executed (AttentionGrad's recomputation, the optimizer).  Memory is that of pipeline rank 0's
 * device: weights, gradients (at the weights' format), optimizer state (f32 master weights for
 * narrower weights, two f32 moments), sharded by ZeRO's stage, and the activations the
 * backward pass reads, of min(M, P) micro-batches in flight on rank 0 (1F1B; interleaved:
 * times 1 + (P-1)/(P V), Narayanan et al.).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/diag.h"
#include "passes/pass.h"
#include "targets/target.h"

const char *const train_recompute_names[] = { "none", "selective", "full", "selective-ffn", "layers", "dots", NULL };

enum { SEC_PRE, SEC_POST, SEC_CALL0 };
enum { PH_FWD, PH_BWD, PH_OPT };
enum { MAXSEC = 66 };

typedef struct Sec {
	double fwd, bwd, opt;         /* seconds per device: one micro-batch; the step's AdamW */
	double fflops, hflops, oflops;   /* FLOP of one instance: forward; forward + backward; AdamW */
	double tp, cp;                /* seconds of its TP and CP collectives per micro-batch */
	double wnumel, narrow;        /* trainable elements; of them, stored narrower than f32 */
	double wbytes;                /* their bytes at the weights' format */
	double saved;                 /* activation bytes the backward pass reads */
	double saved_mx;              /* of them, the matrix operators' results */
	double fwd_vec, fflops_vec;   /* forward seconds and FLOP of the other operators */
	double fwd_ffn, fflops_ffn;   /* forward seconds and FLOP of the FFN's input projections */
	double saved_ffn;             /* their results (the MatMuls a gated activation reads) */
	double fwd_attn, fflops_attn; /* forward seconds and FLOP of the attention operators */
	double saved_attn;            /* their results */
	double input;                 /* bytes of the layer's first input (the pipeline's send) */
	int64_t mult;                 /* instances (the call's repeat count) */
} Sec;

int pass_train_parallel(const PassCtx *c)
{
	return c->phase && !strcmp(c->phase, "train") && !c->dp_plan &&
	       (c->dp > 0 || c->cp > 0 || c->zero > 0 || c->vstages > 0 || c->train_search);
}

void train_step_free(TrainStep *t)
{
	if (!t)
		return;
	free(t->stage_layers);
	free(t->stage_time);
	free(t);
}

static double vbytes(const Value *v)
{
	int64_t n = v ? ir_type_numel(v->type) : -1;
	return n < 0 || v->type.dt == DT_INVALID ? 0 : (double)rt_dtype_bytes(v->type.dt, n);
}

static int tag_sec(const Node *n) { return (int)(((intptr_t)n->aux - 1) / 4); }
static int tag_ph(const Node *n) { return (int)(((intptr_t)n->aux - 1) % 4); }

/* A collective's link and bandwidth for a group of k devices at stride `stride` (devices
 * between consecutive members) out of `total`. */
typedef struct Net {
	const Machine *m;
	const Device *d;
	const Link *up, *out;     /* scale-up (first link from d to d), scale-out */
	double base;              /* the collective engine's latency per call */
	int64_t total;
	double share;             /* of the collectives' compute-unit work, offloaded (units()) */
} Net;

static const Link *group_link(const Net *n, int64_t stride, int64_t k, double *bw)
{
	double dom = n->up && num_has(&n->up->domain) ? n->up->domain.v : (double)n->total;
	const Link *l = (double)(stride * k) <= dom || !n->out ? n->up : n->out;
	*bw = l ? link_coll_bw(l) : 0;
	if (l && l == n->out && num_has(&l->pod) && num_has(&l->oversub) && l->pod.v > 0) {
		double span = fmin((double)(stride * k), (double)n->total);
		if (span > l->pod.v) {   /* members per pod, then the groups sharing a pod's uplinks */
			double per = fmax(1, (double)k * l->pod.v / span);
			double groups = fmin((double)n->total / (double)k, l->pod.v / per);
			*bw *= fmin(1, l->pod.v / (l->oversub.v * groups));
		}
	}
	return l;
}

/* Ring all-reduce (ar = 1) or reduce-scatter / all-gather (ar = 0) of `bytes` (the full
 * tensor) over k devices at stride `stride` (runtime/timing.c's formulas plus the base latency). */
static double ring(const Net *n, double bytes, int64_t k, int64_t stride, int ar)
{
	double bw;
	const Link *l = group_link(n, stride, k, &bw);
	if (k < 2 || !l || bw <= 0 || bytes <= 0)
		return 0;
	double steps = (ar ? 2.0 : 1.0) * (double)(k - 1), alpha = num_has(&l->latency) ? l->latency.v : 0;
	return n->base + steps * alpha + steps / (double)k * bytes / bw;
}

/* The compute units' time on a ring collective of `bytes` over k devices (ar = 1: all-reduce,
 * 0: reduce-scatter, 2: all-gather): each of the k-1 steps of a reduce-scatter reads the local
 * chunk and the received one and writes their sum (3 (k-1)/k of the bytes through HBM), each
 * of an all-gather writes the received chunk into place and reads it to pass it on (2 (k-1)/k),
 * an all-reduce does both.  The units do it (NCCL's kernels on the SMs; XLA's collective
 * fusions on the TensorCores) unless a collective engine takes the share dev_collective_offload
 * (Ironwood's SparseCores).  At the HBM's bandwidth times its efficiency. */
/* The device's HBM bandwidth times its efficiency (0: none described). */
static double hbm_bw(const Device *d)
{
	const MemSpace *hbm = dev_mem_kind(d, MEM_HBM);
	double bw = hbm && num_has(&hbm->bandwidth) ? hbm->bandwidth.v : 0;
	return bw > 0 && num_has(&hbm->efficiency) ? bw * hbm->efficiency.v : bw;
}

static double units(const Net *n, double bytes, int64_t k, int ar)
{
	double bw = hbm_bw(n->d);
	if (k < 2 || bw <= 0 || bytes <= 0)
		return 0;
	double passes = ar == 1 ? 5 : ar == 0 ? 3 : 2;
	return (1 - n->share) * passes * (double)(k - 1) / (double)k * bytes / bw;
}

/* One point-to-point send between pipeline neighbours (stride apart). */
static double send(const Net *n, double bytes, int64_t stride)
{
	double bw;
	const Link *l = group_link(n, stride, 2, &bw);
	if (!l || bw <= 0)
		return 0;
	return (num_has(&l->latency) ? l->latency.v : 0) + bytes / bw;
}

/* --unfused-attention: attention as before FlashAttention (Megatron-LM of 2021: two batched
 * GEMMs around a fused scale-mask-softmax kernel and a dropout of the probabilities, Narayanan
 * et al. SC'21, Shoeybi et al. 2019): the node's kernel time for the GEMMs, over the whole
 * square of scores when causal (the mask is applied to materialised scores), plus the scores'
 * HBM traffic on one of the work's devices: forward, the QK^T GEMM writes them (one element
 * size), softmax reads and writes (two), dropout reads, writes and stores a byte mask (two, and
 * a byte), the PV GEMM reads (one); backward (AttentionGrad), the dP GEMM writes (one), dropout's
 * backward reads dP and the mask and writes (two and a byte), softmax's reads P and dP and
 * writes dS (three), the dQ and dK GEMMs read dS (two), the dV GEMM reads P (one). */
static double unfused_attention(const Device *d, const TgtWork *w, double secs)
{
	TgtAttnDims a;
	double bw = hbm_bw(d);
	if (!tgt_work_attn(w, &a) || bw <= 0)
		return secs;
	double el = (double)a.B * (double)a.qh * (double)a.Sq * (double)a.T / (double)(a.rest > 0 ? a.rest : 1);
	double es = (double)rt_dtype_bytes(a.in, 1), per = w->node->op == OP_AttentionGrad ? 9 * es + 1 : 6 * es + 1;
	return secs * (a.causal ? 2 : 1) + el * per / bw;
}

/* --no-sequence-parallel (Megatron-LM before Korthikanti et al. 2022): the vector operators of a
 * layer on the residual stream (its norms, residual adds, the row-parallel products' bias adds
 * and their backward) run whole on each TP rank; those inside the TP regions (a column-parallel
 * product's bias add, the activation) stay sharded.  Told apart by size: a vector node of layer
 * section s whose every operand but the parameters has resid[s] elements, the layer input's. */
static int replicated(const Node *n, int s, const int64_t *resid)
{
	if (s < SEC_CALL0 || ir_ops[n->op].cls != OC_vector || resid[s] <= 0)
		return 0;
	int any = 0;
	for (int i = 0; i < n->nin; i++) {
		if (!n->in[i] || n->in[i]->kind == V_PARAM)
			continue;
		if (ir_type_numel(n->in[i]->type) != resid[s])
			return 0;
		any = 1;
	}
	return any;
}

/* Whether v is a MatMul's result, directly or through the bias Add of one (GPT-2's linears). */
static int matmul_result(const Value *v)
{
	const Node *d = v ? v->def : NULL;
	if (d && d->op == OP_Add && d->nin == 2 && d->in[0] && d->in[1] && (d->in[0]->kind == V_PARAM || d->in[1]->kind == V_PARAM))
		d = d->in[0]->kind == V_PARAM ? d->in[1]->def : d->in[0]->def;
	return d && d->op == OP_MatMul;
}

/* Whether node n is the residual Add a row-parallel MatMul's result (or its bias sum) adds
 * into: the place of Megatron's all-reduce.  A bias Add (one operand a parameter) is not. */
static int tp_point(const Node *n)
{
	if (n->op != OP_Add || n->nin != 2 || !n->in[0] || !n->in[1] || n->in[0]->kind == V_PARAM || n->in[1]->kind == V_PARAM)
		return 0;
	return matmul_result(n->in[0]) || matmul_result(n->in[1]);
}

/* The smallest time bound T such that the units (in order) fit p contiguous ranks, rank 0
 * starting at `pre` and the last rank ending with `post`: a binary search over T with the
 * greedy packing, which is exact for contiguous partitions.  Fills count[]. */
static void balance(const double *u, int nu, double pre, double post, int p, int *count)
{
	double lo = 0, hi = pre + post;
	for (int i = 0; i < nu; i++) {
		hi += u[i];
		lo = fmax(lo, u[i]);
	}
	lo = fmax(lo, fmax(pre, post));
	for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
		double mid = 0.5 * (lo + hi), load = pre;
		int s = 0, i = 0;
		for (; i < nu && s < p; i++) {
			if (load + u[i] > mid) {
				if (++s >= p)
					break;
				load = 0;
			}
			load += u[i];
		}
		int ok = i == nu && s < p && (s < p - 1 || load + post <= mid);
		if (ok)
			hi = mid;
		else
			lo = mid;
	}
	/* the packing at hi */
	memset(count, 0, (size_t)p * sizeof *count);
	double load = pre;
	int s = 0;
	for (int i = 0; i < nu; i++) {
		if (load + u[i] > hi * (1 + 1e-12) && s < p - 1)
			s++, load = 0;
		load += u[i];
		count[s]++;
	}
}

/* Node times already priced, per node (in graph order) and device count: the search prices
 * the same nodes over a few tp x cp shares, and the GPU tile search is the costly part. */
enum { MEMO_SLOTS = 8 };
typedef struct Memo {
	int chips[MEMO_SLOTS];
	double secs[MEMO_SLOTS];
} Memo;

static double node_secs(const PassCtx *c, const Device *d, const TgtWork *w, Memo *mo)
{
	for (int i = 0; i < MEMO_SLOTS && mo->chips[i]; i++)
		if (mo->chips[i] == w->chips)
			return mo->secs[i];
	double secs = pass_work_time(c, d, w);
	for (int i = 0; i < MEMO_SLOTS; i++)
		if (!mo->chips[i]) {
			mo->chips[i] = w->chips, mo->secs[i] = secs;
			break;
		}
	return secs;
}

/* One configuration's step (cfg: dp, tp, pp, cp, zero, vstages, micro, recompute set), or NULL
 * after reporting why through diag_error unless quiet. */
static TrainStep *price(Graph *g, PassCtx *c, const Device *d, const TrainStep *cfg, const int64_t *repeats, int nrepeats,
			double tokens_mb, const unsigned char *bwd_reads, Memo *memo, int quiet)
{
	const Machine *m = c->machine;
	TrainStep *t = calloc(1, sizeof *t);
	if (!t)
		abort();
	t->dp = cfg->dp, t->tp = cfg->tp, t->pp = cfg->pp, t->cp = cfg->cp, t->zero = cfg->zero;
	t->vstages = cfg->vstages, t->micro = cfg->micro, t->recompute = cfg->recompute;
	t->devices = (int64_t)t->dp * t->tp * t->pp * t->cp;
	if (t->devices > machine_ndevices(m)) {
		if (!quiet)
			diag_error(g->loc, "autodiff: the parallel step needs %lld devices (dp %d x tp %d x pp %d x cp %d); machine "
				   "'%s' has %d", (long long)t->devices, t->dp, t->tp, t->pp, t->cp, m->name, machine_ndevices(m));
		train_step_free(t);
		return NULL;
	}
	int nsec = SEC_CALL0 + nrepeats;
	Sec sec[MAXSEC];
	memset(sec, 0, sizeof sec);
	for (int s = 0; s < nsec; s++)
		sec[s].mult = s >= SEC_CALL0 ? (repeats[s - SEC_CALL0] > 0 ? repeats[s - SEC_CALL0] : 0) : 1;
	Net net = { m, d, machine_link(m, d, d), machine_scaleout_link(m, d), 0, t->devices,
		    cfg->offload >= 0 ? cfg->offload : dev_collective_offload(d) };
	for (int i = 0; i < d->nengines; i++)
		if (d->engines[i].kind && !strcmp(d->engines[i].kind, "collective") && num_has(&d->engines[i].latency))
			net.base = d->engines[i].latency.v;
	int64_t shard = (int64_t)t->tp * t->cp, dpg = (int64_t)t->dp * t->cp;
	int64_t zshard = t->zero >= 1 ? dpg : 1;
	/* the layers' first inputs: their elements (the residual stream's) */
	int64_t resid[MAXSEC];
	memset(resid, 0, sizeof resid);
	ir_foreach_node(g, n)
		if (n->aux && tag_ph(n) == PH_FWD && tag_sec(n) >= SEC_CALL0 && tag_sec(n) < nsec && !resid[tag_sec(n)])
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] && n->in[i]->kind != V_PARAM && (!n->in[i]->def || !n->in[i]->def->aux ||
									     tag_sec(n->in[i]->def) != tag_sec(n))) {
					resid[tag_sec(n)] = ir_type_numel(n->in[i]->type);
					break;
				}
	/* the largest forward node's format: the peak MFU is quoted against */
	DType fmt = DT_BF16;
	double big = -1;
	int ni = 0;
	ir_foreach_node(g, n) {
		Memo *mo = &memo[ni++];
		if (!n->aux)
			continue;
		int s = tag_sec(n), ph = tag_ph(n);
		if (s < 0 || s >= nsec)
			continue;
		Sec *x = &sec[s];
		double fl = ir_node_flops(n);
		int chips = (int)(ph == PH_OPT ? t->tp * zshard : c->no_seq_parallel && replicated(n, s, resid) ? t->cp : shard);
		TgtWork w = { .node = n, .fmt = DT_INVALID, .chips = chips, .tiles = 1 };
		double secs = node_secs(c, d, &w, mo);
		if (c->unfused_attention && ph != PH_OPT)
			secs = unfused_attention(d, &w, secs);
		if (ph == PH_FWD) {
			x->fwd += secs, x->fflops += fl;
			if (fl > big && n->nout)
				big = fl, fmt = n->out[0]->type.dt;
			if (s >= SEC_CALL0 && tp_point(n))
				x->tp += 2 * ring(&net, vbytes(n->out[0]) / t->cp, t->tp, 1, 1);
			if (c->hidden_dropout && s >= SEC_CALL0 && tp_point(n) && hbm_bw(d) > 0) {
				/* --hidden-dropout: the residual branch's dropout (Megatron's fused
				 * bias_dropout_add, --hidden-dropout 0.1 by default): the forward writes
				 * a byte mask per element (kept for the backward), the backward reads the
				 * gradient and the mask and writes the masked gradient; on the whole
				 * residual stream per TP rank without sequence parallelism */
				double el = (double)ir_type_numel(n->out[0]->type) /
					    (double)(c->no_seq_parallel ? t->cp : shard);
				double es = (double)rt_dtype_bytes(n->out[0]->type.dt, 1);
				x->fwd += el / hbm_bw(d), x->bwd += el * (2 * es + 1) / hbm_bw(d);
				x->saved += el * (double)shard;
			}
			if (s == SEC_PRE && n->op == OP_Embedding)
				x->tp += ring(&net, vbytes(n->out[0]) / t->cp, t->tp, 1, 1);
			if (s == SEC_POST && n->op == OP_MatMul && n->in[1] && n->in[1]->kind == V_PARAM)
				x->tp += 2 * ring(&net, vbytes(n->in[0]) / t->cp, t->tp, 1, 0);
			if (n->op == OP_Attention && n->nin > 2) {
				double kv = (vbytes(n->in[1]) + vbytes(n->in[2])) / t->tp;
				x->cp += 3 * ring(&net, kv, t->cp, t->tp, 0);
			}
			/* activations the backward pass reads */
			for (int o = 0; o < n->nout; o++) {
				int read = n->out[o]->id < g->nvalues && bwd_reads[n->out[o]->id];
				if (read)
					x->saved += vbytes(n->out[o]);
				if (read && (ir_ops[n->op].cls == OC_matrix || (ir_ops[n->op].flags & F_ATTN)))
					x->saved_mx += vbytes(n->out[o]);
				if (read && n->op == OP_MatMul && (bwd_reads[n->out[o]->id] & 2))
					x->saved_ffn += vbytes(n->out[o]);
				if (read && (ir_ops[n->op].flags & F_ATTN))
					x->saved_attn += vbytes(n->out[o]);
			}
			if (ir_ops[n->op].flags & F_ATTN)
				x->fwd_attn += secs, x->fflops_attn += fl;
			if (n->op == OP_MatMul && n->nout && n->out[0]->id < g->nvalues && (bwd_reads[n->out[0]->id] & 2))
				x->fwd_ffn += secs, x->fflops_ffn += fl;
			if (ir_ops[n->op].cls != OC_matrix && !(ir_ops[n->op].flags & F_ATTN))
				x->fwd_vec += secs, x->fflops_vec += fl;
		} else if (ph == PH_BWD)
			x->bwd += secs;
		else {
			x->opt += secs;
			if (n->op == OP_AdamW) {
				double el = (double)ir_type_numel(n->in[0]->type), wb = vbytes(n->in[0]);
				for (Node *q = n->next; q; q = q->next)   /* a narrow weight: AdamW's result cast back */
					if (q->op == OP_Cast && q->in[0] == n->out[0]) {
						wb = vbytes(q->out[0]);
						x->narrow += el;
						break;
					}
				x->wnumel += el, x->wbytes += wb;
			}
		}
		if (ph == PH_OPT)
			x->oflops += fl;
		else
			x->hflops += fl;
	}
	/* the layers' first inputs (the activation a pipeline rank sends) */
	ir_foreach_node(g, n)
		if (n->aux && tag_ph(n) == PH_FWD && tag_sec(n) >= SEC_CALL0 && tag_sec(n) < nsec && !sec[tag_sec(n)].input)
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] && n->in[i]->kind != V_PARAM && (!n->in[i]->def || !n->in[i]->def->aux ||
									     tag_sec(n->in[i]->def) != tag_sec(n))) {
					sec[tag_sec(n)].input = vbytes(n->in[i]);
					break;
				}
	/* activation recomputation of the layers (Korthikanti et al., MLSys 2023): full recomputes a
	 * layer's forward pass (and its TP collectives) in the backward and keeps only its input;
	 * selective keeps the matrix operators' results (and the input) and recomputes the others
	 * from them; selective-ffn is MaxText's remat policy save_dot_except_mlpwi, which saves only
	 * the results named query_proj, key_proj, value_proj, out_proj and mlpwo (MaxText's
	 * decoders.py, get_remat_policy; "context", the attention's result, is saved only by
	 * save_dot_with_context_except_mlp): it also recomputes the FFN's input projections (the
	 * MatMuls a gated activation reads) and the attention operators (and, under context
	 * parallelism, their K/V all-gather: the fourth of four CP rings); layers recomputes a
	 * fraction recompute_frac of the layers in full (Megatron's --recompute-method block); dots
	 * is MaxText's remat policy minimal, jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims
	 * (MaxText's decoders.py): only the results of dot_generals without batch dimensions are
	 * saved, the weight products (DenseGeneral contracts the features, no batch dimension),
	 * while attention (the flash kernel's custom call, or the batched score and value einsums
	 * over batch and heads) is recomputed with every other operator, and under context
	 * parallelism its K/V all-gather */
	for (int s = SEC_CALL0; s < nsec; s++) {
		Sec *x = &sec[s];
		double f = cfg->recompute_frac;
		if (t->recompute == RECOMPUTE_FULL) {
			x->bwd += x->fwd, x->tp *= 1.5, x->hflops += x->fflops, x->saved = x->input;
		} else if (t->recompute == RECOMPUTE_SELECTIVE || t->recompute == RECOMPUTE_SELECTIVE_FFN ||
			   t->recompute == RECOMPUTE_DOTS) {
			int ffn = t->recompute == RECOMPUTE_SELECTIVE_FFN, attn = ffn || t->recompute == RECOMPUTE_DOTS;
			x->bwd += x->fwd_vec + (ffn ? x->fwd_ffn : 0) + (attn ? x->fwd_attn : 0);
			x->hflops += x->fflops_vec + (ffn ? x->fflops_ffn : 0) + (attn ? x->fflops_attn : 0);
			x->saved = x->saved_mx - (ffn ? x->saved_ffn : 0) - (attn ? x->saved_attn : 0) + x->input;
			if (attn)
				x->cp *= 4.0 / 3.0;
		} else if (t->recompute == RECOMPUTE_LAYERS) {
			x->bwd += f * x->fwd, x->tp *= 1 + 0.5 * f, x->hflops += f * x->fflops;
			x->saved = (1 - f) * x->saved + f * x->input;
		}
	}
	t->recompute_frac = t->recompute == RECOMPUTE_LAYERS ? cfg->recompute_frac : t->recompute == RECOMPUTE_FULL;
	/* pipeline ranks: whole layers, balanced by time */
	int nu = 0;
	for (int s = SEC_CALL0; s < nsec; s++)
		nu += (int)sec[s].mult;
	double *u = calloc((size_t)nu + 1, sizeof *u);
	int *usec = calloc((size_t)nu + 1, sizeof *usec);
	t->stage_layers = calloc((size_t)t->pp, sizeof *t->stage_layers);
	t->stage_time = calloc((size_t)t->pp, sizeof *t->stage_time);
	if (!u || !usec || !t->stage_layers || !t->stage_time)
		abort();
	nu = 0;
	for (int s = SEC_CALL0; s < nsec; s++)
		for (int64_t k = 0; k < sec[s].mult; k++) {
			usec[nu] = s;
			u[nu++] = sec[s].fwd + sec[s].bwd + sec[s].tp + sec[s].cp;
		}
	t->layers = nu;
	double pre = sec[SEC_PRE].fwd + sec[SEC_PRE].bwd + sec[SEC_PRE].tp;
	double post = sec[SEC_POST].fwd + sec[SEC_POST].bwd + sec[SEC_POST].tp;
	if (nu < t->pp * t->vstages && (t->pp > 1 || t->vstages > 1)) {
		if (!quiet)
			diag_error(g->loc, "autodiff: %d layers cannot fill --pp %d x --pp-virtual %d model chunks", nu, t->pp,
				   t->vstages);
		free(u), free(usec), train_step_free(t);
		return NULL;
	}
	balance(u, nu, pre, post, t->pp, t->stage_layers);
	double tmax = 0, tsum = 0, opt0 = 0, f0 = pre ? sec[SEC_PRE].fwd : 0, b0 = sec[SEC_PRE].bwd;
	double w0 = sec[SEC_PRE].wnumel, wb0 = sec[SEC_PRE].wbytes, nar0 = sec[SEC_PRE].narrow, act0 = sec[SEC_PRE].saved;
	double optmax = 0;
	for (int r = 0, i = 0; r < t->pp; r++) {
		double ts = r == 0 ? pre : 0, opt = r == 0 ? sec[SEC_PRE].opt : 0;
		if (r == t->pp - 1)
			ts += post, opt += sec[SEC_POST].opt;
		if (t->pp == 1)
			f0 += sec[SEC_POST].fwd, b0 += sec[SEC_POST].bwd, w0 += sec[SEC_POST].wnumel,
				wb0 += sec[SEC_POST].wbytes, nar0 += sec[SEC_POST].narrow, act0 += sec[SEC_POST].saved;
		for (int k = 0; k < t->stage_layers[r]; k++, i++) {
			const Sec *x = &sec[usec[i]];
			ts += u[i], opt += x->opt;
			if (r == 0)
				f0 += x->fwd + x->tp / 2 + x->cp / 3, b0 += x->bwd + x->tp / 2 + 2 * x->cp / 3, w0 += x->wnumel,
					wb0 += x->wbytes, nar0 += x->narrow, act0 += x->saved;
		}
		t->stage_time[r] = ts;
		tmax = fmax(tmax, ts), tsum += ts;
		optmax = fmax(optmax, opt);
		if (r == 0)
			opt0 = opt;
	}
	(void)opt0;
	const Sec *l0 = nrepeats ? &sec[SEC_CALL0] : &sec[SEC_POST];
	t->fwd_layer = l0->fwd, t->bwd_layer = l0->bwd, t->tp_comm_layer = l0->tp, t->cp_comm_layer = l0->cp;
	t->p2p = t->pp > 1 ? send(&net, l0->input / (double)shard, shard) : 0;
	double M = t->micro, V = t->vstages, fill = t->p2p;
	if (c->pp_blocking_sends && t->pp > 1) {
		/* Megatron-LM 2021 (megatron/p2p_communication.py, _communicate): each exchange between
		 * neighbours waits on batch_isend_irecv's requests and synchronizes the device, then
		 * all-gathers the received 1/T chunk over the TP group (the scatter/gather of SC'21
		 * section 4.1), so the exchanges sit on every rank's critical path.  Per micro-batch
		 * in the steady state (megatron/schedules.py): 1F1B, a middle rank's two exchanges
		 * (send_forward_recv_backward, send_backward_recv_forward; one with two ranks, whose
		 * exchange is the same pair's), each a send one way and a receive the other, at one
		 * send's time on the full-duplex link; interleaved, one exchange per model chunk
		 * (send_forward_backward_recv_forward_backward) that sends to both neighbours through
		 * the device's one link: 2 V sends (SC'21 section 2.2.2: V times the communication). */
		fill += ring(&net, l0->input / (double)t->cp, t->tp, 1, 0);
		double per = V > 1 ? 2 * V : t->pp > 2 ? 2 : 1;
		t->p2p_steady = M * per * fill;
	}
	t->pipeline = M * tmax + (tsum - tmax) / V + 2.0 * (t->pp - 1) * fill + t->p2p_steady;
	t->bubble = t->pipeline - M * tmax - t->p2p_steady;
	/* data parallelism over the replicas (and the context-parallel ranks) holding rank 0's weights */
	double gbytes = wb0 / t->tp;
	int64_t stride = (int64_t)t->tp * t->cp * t->pp;
	if (dpg > 1) {
		const Link *l;
		double bw;
		l = group_link(&net, t->dp > 1 ? stride : t->tp, dpg, &bw);
		t->fabric = l ? l->id : NULL;
		t->dp_rs = ring(&net, gbytes, dpg, t->dp > 1 ? stride : t->tp, 0);
		t->dp_ag = t->dp_rs;
		double urs = units(&net, gbytes, dpg, 0), uag = units(&net, gbytes, dpg, 2);
		/* --grad-after-backward: the gradients' collective starts once the step's backward
		 * passes are done (Megatron-LM 2021's local DDP: megatron/training.py train_step calls
		 * model.allreduce_gradients() after forward_backward_func, one all-reduce of the
		 * contiguous gradient buffer over the data-parallel group), nothing under it */
		double under = c->grad_after_backward ? 0 : b0;
		if (t->zero == 0) {
			double ar = ring(&net, gbytes, dpg, t->dp > 1 ? stride : t->tp, 1);
			t->dp_rs = ar, t->dp_ag = 0;
			t->dp_hidden = fmin(ar, under);
			t->dp_units = units(&net, gbytes, dpg, 1);
		} else if (t->zero == 1) {
			t->dp_hidden = fmin(t->dp_rs, under) + fmin(t->dp_ag, f0);
			t->dp_units = urs + uag;
		} else if (t->zero == 2) {   /* a reduce-scatter after every micro-batch, under its backward */
			t->dp_hidden = M * fmin(t->dp_rs, b0) + fmin(t->dp_ag, f0);
			t->dp_rs *= M;
			t->dp_units = M * urs + uag;
		} else {
			double hid = fmin(t->dp_ag, f0) + fmin(t->dp_ag + t->dp_rs, b0);
			t->dp_rs *= M, t->dp_ag *= 2 * M;
			t->dp_hidden = hid * M;
			t->dp_units = M * (urs + 2 * uag);
		}
		t->dp_exposed = t->dp_rs + t->dp_ag - t->dp_hidden;
	}
	t->offload = net.share;
	t->optimizer = optmax;
	t->step = t->pipeline + t->dp_exposed + t->dp_units + t->optimizer;
	/* figures */
	double fwd = 0, hw = 0, opt = 0;
	for (int s = 0; s < nsec; s++) {
		fwd += sec[s].fflops * (double)sec[s].mult;
		hw += sec[s].hflops * (double)sec[s].mult;
		opt += sec[s].oflops * (double)sec[s].mult;
	}
	t->tokens = tokens_mb * M * t->dp;
	t->model_flops = 3 * fwd * M * t->dp;
	/* as executed: every micro-batch's passes, and AdamW once per step on each replica's shards */
	t->hw_flops = hw * M * t->dp + opt * (t->zero >= 1 ? 1 : (double)dpg);
	t->peak = dev_peak(d, fmt);
	double all = t->step * (double)t->devices * t->peak;
	t->mfu = all > 0 ? t->model_flops / all : 0;
	t->hfu = all > 0 ? t->hw_flops / all : 0;
	t->weights = wb0 / t->tp / (t->zero >= 3 ? dpg : 1);
	t->grads = wb0 / t->tp / (t->zero >= 2 ? dpg : 1);
	t->optim = (4 * nar0 + 8 * w0) / t->tp / (double)zshard;
	double inflight = fmin(M, t->pp) * (V > 1 ? 1 + (t->pp - 1) / (t->pp * V) : 1);
	t->acts = act0 / (double)shard * inflight;
	const MemSpace *hbm = dev_mem_kind(d, MEM_HBM);
	t->capacity = hbm && num_has(&hbm->capacity) ? hbm->capacity.v : 0;
	t->fits = t->weights + t->grads + t->optim + t->acts <= t->capacity;
	free(u), free(usec);
	return t;
}

/* Whether tp divides every attention's query heads (Megatron splits whole heads). */
static int heads_divide(Graph *g, int tp)
{
	ir_foreach_node(g, n)
		if (n->aux && n->op == OP_Attention && rt_attr_int(&n->attrs, "q_num_heads", tp) % tp)
			return 0;
	return 1;
}

/* Orders candidates: fitting first, then the shorter step, then fewer devices per replica. */
static int better(const TrainStep *a, const TrainStep *b)
{
	if (a->fits != b->fits)
		return a->fits;
	if (a->step != b->step)
		return a->step < b->step;
	return a->tp * a->pp * a->cp < b->tp * b->pp * b->cp;
}

int train_step_price(Graph *g, PassCtx *c, const int64_t *repeats, int nrepeats, double tokens_mb)
{
	const Machine *m = c->machine;
	const Device *d = NULL;
	for (int i = 0; m && i < m->ndevs && !d; i++)
		if (!m->devs[i].is_host)
			d = &m->devs[i];
	if (!d) {
		diag_error(g->loc, "autodiff: a parallel training step (--dp/--tp/--pp/--cp) is priced on a machine: "
			   "give --target (and --machine)");
		return 1;
	}
	if (c->grad_after_backward && c->zero > 2) {
		diag_error(g->loc, "autodiff: --grad-after-backward goes with --zero 0 or 1 (ZeRO %d reduces the gradients "
			   "inside the backward pass)", c->zero - 1);
		return 1;
	}
	TrainStep cfg = { 0 };
	cfg.dp = c->dp > 0 ? c->dp : 1, cfg.tp = c->tp > 0 ? c->tp : 1, cfg.pp = c->pp > 0 ? c->pp : 1;
	cfg.cp = c->cp > 0 ? c->cp : 1, cfg.zero = c->zero > 0 ? c->zero - 1 : 1, cfg.vstages = c->vstages > 0 ? c->vstages : 1;
	cfg.micro = c->grad_accum > 0 ? c->grad_accum : 1, cfg.recompute = c->recompute;
	cfg.offload = -1;   /* the machine's collective offload */
	/* per value id: whether a backward node reads it (the activations kept for the backward) */
	unsigned char *reads = calloc((size_t)g->nvalues + 1, 1);
	int nn = 0;
	ir_foreach_node(g, n)
		nn++;
	Memo *memo = calloc((size_t)nn + 1, sizeof *memo);
	if (!reads || !memo)
		abort();
	ir_foreach_node(g, n)
		for (int i = 0; n->aux && tag_ph(n) == PH_BWD && i < n->nin; i++)
			if (n->in[i] && n->in[i]->id < g->nvalues)
				reads[n->in[i]->id] |= 1;
	/* bit 2: an input of a forward gated activation (the FFN's input projections feed it) */
	ir_foreach_node(g, n)
		for (int i = 0; n->aux && tag_ph(n) == PH_FWD && n->op == OP_SwiGLU && i < n->nin; i++)
			if (n->in[i] && n->in[i]->id < g->nvalues)
				reads[n->in[i]->id] |= 2;
	TrainStep *t = NULL;
	if (!c->train_search && cfg.recompute == RECOMPUTE_LAYERS) {
		/* the fewest layers per pipeline rank recomputed in full that fit rank 0's memory (all
		 * of them when none does) */
		int64_t nl = 0;
		for (int i = 0; i < nrepeats; i++)
			nl += repeats[i] > 0 ? repeats[i] : 0;
		int per = (int)((nl + cfg.pp - 1) / cfg.pp);
		for (int r = 0; r <= per; r++) {
			cfg.recompute_frac = per > 0 ? (double)r / per : 1;
			train_step_free(t);
			t = price(g, c, d, &cfg, repeats, nrepeats, tokens_mb, reads, memo, r < per);
			if (!t && r < per)
				t = price(g, c, d, &cfg, repeats, nrepeats, tokens_mb, reads, memo, 0);
			if (!t || t->fits)
				break;
		}
	} else if (!c->train_search)
		t = price(g, c, d, &cfg, repeats, nrepeats, tokens_mb, reads, memo, 0);
	else {   /* the fastest configuration of the same devices and sequences per step that fits */
		int64_t N = (int64_t)cfg.dp * cfg.tp * cfg.pp * cfg.cp, G = (int64_t)cfg.dp * cfg.micro;
		const Link *up = machine_link(m, d, d);
		int64_t dom = up && num_has(&up->domain) ? (int64_t)up->domain.v : N;
		int ncand = 0, nfit = 0;
		for (int tp = 1; tp <= dom && tp <= N; tp *= 2)
			for (int cp = 1; cp <= 16 && (int64_t)tp * cp <= N; cp *= 2)
				for (int64_t pp = 1; pp <= N / (tp * cp) && pp <= 256; pp++) {
					if (N % ((int64_t)tp * cp * pp) || !heads_divide(g, tp))
						continue;
					int64_t dp = N / ((int64_t)tp * cp * pp);
					if (G % dp)
						continue;
					for (int v = 1; v <= (pp > 1 ? 4 : 1); v *= 2)
						for (int z = 1; z <= 3; z += 2)
							for (int rc = 0; rc <= 2; rc++) {
								TrainStep k = { .dp = (int)dp, .tp = tp, .pp = (int)pp, .cp = cp, .zero = z,
										.vstages = v, .micro = (int)(G / dp), .recompute = rc,
										.offload = -1 };
								TrainStep *x = price(g, c, d, &k, repeats, nrepeats, tokens_mb, reads, memo, 1);
								if (!x)
									continue;
								ncand++, nfit += x->fits;
								if (!t || better(x, t))
									train_step_free(t), t = x;
								else
									train_step_free(x);
							}
				}
		if (t)
			t->candidates = ncand, t->fitting = nfit;
		else
			diag_error(g->loc, "autodiff: --train-search found no configuration of %lld devices and %lld sequences "
				   "per step", (long long)N, (long long)G);
	}
	/* the same step with none and with all of the collectives' compute-unit work offloaded
	 * (explain --compare on the summary) */
	for (int k = 0; t && k < 2; k++) {
		TrainStep v = *t;
		v.offload = k;
		TrainStep *x = price(g, c, d, &v, repeats, nrepeats, tokens_mb, reads, memo, 1);
		t->alt_step[k] = x ? x->step : 0, t->alt_mfu[k] = x ? x->mfu : 0, t->alt_units[k] = x ? x->dp_units : 0;
		train_step_free(x);
	}
	free(reads), free(memo);
	if (!t)
		return 1;
	train_step_free(c->train_step);
	c->train_step = t;
	pass_remark(c, REMARK_ANALYSIS, g, NULL, "parallel training step: %lld devices (dp %d x tp %d x pp %d x cp %d), "
		    "%d micro-batches: step %.4g s, MFU %.1f%%, pipeline bubble %.1f%% of the step", (long long)t->devices,
		    t->dp, t->tp, t->pp, t->cp, t->micro, t->step, 100 * t->mfu, t->step > 0 ? 100 * t->bubble / t->step : 0);
	return 0;
}
