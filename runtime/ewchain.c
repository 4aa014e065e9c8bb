/* runtime/ewchain.c: elementwise chains (runtime/ewchain.h).  A model's activation after a
 * convolution is often several elementwise instructions (PP-LCNet's scale-and-shift, then
 * hard-swish as Add, Clip, Mul, Div, then another scale-and-shift: eight), each of which would
 * read and write the whole tensor.  Run as a chain, each block of EW_BLOCK elements passes
 * through all of them while it sits in L1, and the values only the chain reads are never
 * stored whole.  Every instruction computes with its kernel's own row function (rt_ew_block)
 * on the same operands, so the values are the kernels' bits.
 * Requires runtime/kernels.h (rt_ew_op, rt_ew_block). */
#include "runtime/ewchain.h"

#include <string.h>

#include "runtime/kernels.h"

enum { EW_BLOCK = 2048, EW_MAX = 32, EW_IN = 3 };

static int64_t buf_n(const PlanBuffer *b) { int64_t n = 1; for (int i = 0; i < b->rank; i++) n *= b->dims[i]; return n; }

static const PlanInstr *step_instr(const Plan *p, const PlanStep *s) { return &p->streams[s->stream].ins[s->index]; }

/* The element count of in's output when it can join a chain (rt_ew_op on f32 operands of one or
 * N values, Clip's bounds one value), else 0. */
static int64_t member(const Plan *p, const PlanInstr *in)
{
	RtEwOp op;
	if (in->kind != PI_KERNEL || in->nout != 1 || in->out[0] < 0 || in->nin > EW_IN || in->opts.accum_f64 ||
	    p->buffers[in->out[0]].dtype != DT_F32 || !rt_ew_op(in->op, &in->attrs, in->nin, &op))
		return 0;
	int64_t n = buf_n(&p->buffers[in->out[0]]);
	for (int k = 0; k < in->nin; k++) {
		if (in->in[k] < 0 && !(op.kind == 3 && k > 0))
			return 0;
		const PlanBuffer *b = in->in[k] >= 0 ? &p->buffers[in->in[k]] : NULL;
		if (b && (b->dtype != DT_F32 || (buf_n(b) != 1 && (buf_n(b) != n || (op.kind == 3 && k > 0)))))
			return 0;
	}
	return n > 1 ? n : 0;
}

/* Whether instruction u may follow steps [t0, u) of a chain: it writes no buffer they touch
 * (nor one it reads itself). */
static int no_hazard(const Plan *p, const PlanStep *order, int t0, int u)
{
	const PlanInstr *in = step_instr(p, &order[u]);
	int b = in->out[0];
	for (int k = 0; k < in->nin; k++)
		if (in->in[k] == b)
			return 0;
	for (int t = t0; t < u; t++) {
		const PlanInstr *q = step_instr(p, &order[t]);
		for (int k = 0; k < q->nin; k++)
			if (q->in[k] == b)
				return 0;
		if (q->out[0] == b)
			return 0;
	}
	return 1;
}

int rt_ew_chains(const Plan *p, const PlanStep *order, int n, int **len, RtError *e)
{
	*len = NULL;
	int *l = rt_calloc((size_t)n + 1, sizeof *l), any = 0;
	if (!l)
		return rt_errorf(e, RT_ENOMEM, "out of memory planning elementwise chains");
	for (int t = 0; t < n;) {
		int64_t N = member(p, step_instr(p, &order[t]));
		int u = t + 1;
		while (N && u < n && u - t < EW_MAX && member(p, step_instr(p, &order[u])) == N && no_hazard(p, order, t, u))
			u++;
		if (u - t >= 2)
			l[t] = u - t, any = 1;
		t = u;
	}
	if (!any)
		rt_free(l), l = NULL;
	*len = l;
	return 0;
}

/* Where each operand of the chain's instructions comes from: a block of scratch (the output of
 * an earlier instruction of the chain that is not kept), one value, or a whole tensor. */
typedef struct Src { const float *p; int scratch, scalar; } Src;

int rt_ew_chain_run(const Plan *p, const PlanStep *order, int t0, int len, const int *last, RtTensor *val,
		    RtError *e)
{
	const PlanInstr *ins[EW_MAX];
	RtEwOp op[EW_MAX];
	Src src[EW_MAX][EW_IN];
	float *out[EW_MAX];
	int keep[EW_MAX];
	int64_t N = buf_n(&p->buffers[step_instr(p, &order[t0])->out[0]]);
	for (int k = 0; k < len; k++) {   /* operands: bound values or outputs of earlier steps here */
		const PlanInstr *in = ins[k] = step_instr(p, &order[t0 + k]);
		rt_ew_op(in->op, &in->attrs, in->nin, &op[k]);
		keep[k] = last[in->out[0]] >= t0 + len;
		for (int j = 0; j < in->nin; j++) {
			int b = in->in[j], from = -1;
			for (int q = 0; b >= 0 && q < k; q++)
				from = ins[q]->out[0] == b ? q : from;
			Src *s = &src[k][j];
			*s = (Src){ NULL, -1, 0 };
			if (b < 0)
				continue;
			if (from >= 0 && !keep[from]) {
				s->scratch = from;
				continue;
			}
			if (from < 0 && (!val[b].data || val[b].dtype != DT_F32 || (val[b].n != 1 && val[b].n != N)))
				return 0;
			s->p = from >= 0 ? NULL : rt_f32(&val[b]);
			s->scalar = from < 0 && val[b].n == 1;
			s->scratch = from >= 0 ? -2 - from : -1;   /* -2 - q: kept output of step q, bound below */
		}
	}
	float *scr = rt_malloc((size_t)len * EW_BLOCK * sizeof *scr);
	if (!scr)
		return rt_errorf(e, RT_ENOMEM, "out of memory running an elementwise chain");
	for (int k = 0; k < len; k++) {   /* kept outputs, whole */
		int b = ins[k]->out[0];
		out[k] = scr + (int64_t)k * EW_BLOCK;
		if (!keep[k])
			continue;
		RtTensor t;
		const PlanBuffer *pb = &p->buffers[b];
		if (rt_tensor_alloc_raw(&t, DT_F32, pb->rank, pb->dims, e) < 0) {
			rt_free(scr);
			return -1;
		}
		rt_tensor_free(&val[b]);
		val[b] = t;
		out[k] = rt_f32(&val[b]);
	}
	for (int64_t o = 0; o < N; o += EW_BLOCK) {
		int64_t bn = N - o < EW_BLOCK ? N - o : EW_BLOCK;
		for (int k = 0; k < len; k++) {
			const float *x[EW_IN] = { NULL };
			int scalar[EW_IN] = { 0 };
			for (int j = 0; j < ins[k]->nin; j++) {
				const Src *s = &src[k][j];
				scalar[j] = s->scalar;
				x[j] = s->scratch >= 0 ? out[s->scratch] : s->scratch <= -2 ? out[-2 - s->scratch] + o
				       : !s->p ? NULL : s->scalar ? s->p : s->p + o;
			}
			rt_ew_block(&op[k], x, scalar, keep[k] ? out[k] + o : out[k], bn);
		}
	}
	rt_free(scr);
	return 1;
}
