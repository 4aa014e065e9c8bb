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

enum { EW_BLOCK = 2048, EW_MAX = 32, EW_IN = 3, EW_GATHER = 64 /* shorter rows: gathered */ };

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

/* Buffer b's value in val replaced by a whole f32 tensor of its shape; its floats, or NULL with e
 * set when out of memory. */
static float *alloc_whole(const Plan *p, int b, RtTensor *val, RtError *e)
{
	RtTensor t;
	const PlanBuffer *pb = &p->buffers[b];
	if (rt_tensor_alloc_raw(&t, DT_F32, pb->rank, pb->dims, e) < 0)
		return NULL;
	rt_tensor_free(&val[b]);
	val[b] = t;
	return rt_f32(&val[b]);
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
		if (!(out[k] = alloc_whole(p, b, val, e))) {
			rt_free(scr);
			return -1;
		}
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

/* ---- a chain fused after the instruction that makes its input (RtEpilogue) ----
 * The chain's operands: the producer's output (read in the producer's finished region), one
 * value, a whole tensor, or an earlier step's result; each region's values pass through every
 * step in a block of scratch, gathered into one run when the region's rows are apart. */
enum { FS_NONE, FS_SCALAR, FS_WHOLE, FS_STEP, FS_PRODUCER };
typedef struct FSrc { int kind, step; const float *p; } FSrc;   /* step: FS_STEP's, FS_WHOLE's gather block */

struct RtEwFused {
	int len;
	RtEwOp op[EW_MAX];
	int nin[EW_MAX];
	FSrc src[EW_MAX][EW_IN];
	float *whole[EW_MAX];   /* a result read after the chain: its whole tensor, else NULL */
	float *scr;             /* len result blocks, the producer's gathered block, one per FS_WHOLE */
};

int rt_ew_fused_begin(const Plan *p, const PlanStep *order, const PlanInstr *prod, int t0, int len, const int *last,
		      RtTensor *val, RtEwFused **out, RtError *e)
{
	*out = NULL;
	int src = prod->nout == 1 ? prod->out[0] : -1;
	if (src < 0 || p->buffers[src].dtype != DT_F32 || len > EW_MAX)
		return 0;
	int64_t N = buf_n(&p->buffers[step_instr(p, &order[t0])->out[0]]);
	if (buf_n(&p->buffers[src]) != N)
		return 0;
	RtEwFused *f = rt_calloc(1, sizeof *f);
	if (!f)
		return rt_errorf(e, RT_ENOMEM, "out of memory fusing an elementwise chain");
	f->len = len;
	const PlanInstr *ins[EW_MAX];
	int reads = 0, nwhole = 0;
	for (int k = 0; k < len; k++) {
		const PlanInstr *in = ins[k] = step_instr(p, &order[t0 + k]);
		rt_ew_op(in->op, &in->attrs, in->nin, &f->op[k]);
		f->nin[k] = in->nin;
		for (int j = 0; j < prod->nin; j++)   /* the chain writes nothing the producer reads */
			if (prod->in[j] == in->out[0])
				goto no;
		if (in->out[0] == src)
			goto no;
		for (int j = 0; j < in->nin; j++) {
			int b = in->in[j], from = -1;
			for (int q = 0; b >= 0 && q < k; q++)
				from = ins[q]->out[0] == b ? q : from;
			FSrc *s = &f->src[k][j];
			*s = (FSrc){ FS_NONE, -1, NULL };
			if (b < 0)
				continue;
			if (from >= 0)
				*s = (FSrc){ FS_STEP, from, NULL };
			else if (b == src)
				*s = (FSrc){ FS_PRODUCER, -1, NULL }, reads = 1;
			else if (!val[b].data || val[b].dtype != DT_F32 || (val[b].n != 1 && val[b].n != N))
				goto no;
			else if (val[b].n == 1)
				*s = (FSrc){ FS_SCALAR, -1, rt_f32(&val[b]) };
			else
				*s = (FSrc){ FS_WHOLE, len + 1 + nwhole++, rt_f32(&val[b]) };
		}
	}
	if (!reads || !(f->scr = rt_malloc((size_t)(len + 1 + nwhole) * EW_BLOCK * sizeof *f->scr))) {
		if (reads)
			rt_errorf(e, RT_ENOMEM, "out of memory fusing an elementwise chain");
		rt_free(f);
		return reads ? -1 : 0;
	}
	for (int k = 0; k < len; k++) {   /* results read after the chain, whole */
		int b = ins[k]->out[0];
		if (last[b] < t0 + len)
			continue;
		if (!(f->whole[k] = alloc_whole(p, b, val, e))) {
			rt_ew_fused_end(f);
			return -1;
		}
	}
	*out = f;
	return 1;
no:
	rt_free(f);
	return 0;
}

void rt_ew_fused_end(RtEwFused *f)
{
	if (f)
		rt_free(f->scr);
	rt_free(f);
}

/* rows runs of n values ldc apart from x, one after another into d. */
static const float *gather(float *d, const float *x, int64_t ldc, int64_t rows, int64_t n)
{
	for (int64_t r = 0; r < rows; r++)
		memcpy(d + r * n, x + r * ldc, (size_t)n * sizeof *d);
	return d;
}

/* One region of at most EW_BLOCK values through every step. */
static void fused_block(RtEwFused *f, const float *y, const float *c, int64_t ldc, int64_t rows, int64_t n)
{
	int64_t off = c - y, bn = rows * n;
	int run = rows == 1 || ldc == n;   /* the region is one run of values */
	const float *cur[EW_MAX], *pv = run ? c : NULL;
	for (int k = 0; k < f->len; k++) {
		const float *x[EW_IN] = { NULL };
		int scalar[EW_IN] = { 0 };
		for (int j = 0; j < f->nin[k]; j++) {
			const FSrc *s = &f->src[k][j];
			if (s->kind == FS_PRODUCER)
				x[j] = pv ? pv : (pv = gather(f->scr + (int64_t)f->len * EW_BLOCK, c, ldc, rows, n));
			else if (s->kind == FS_WHOLE)
				x[j] = run ? s->p + off : gather(f->scr + (int64_t)s->step * EW_BLOCK, s->p + off, ldc, rows, n);
			else if (s->kind == FS_STEP)
				x[j] = cur[s->step];
			else if (s->kind == FS_SCALAR)
				x[j] = s->p, scalar[j] = 1;
		}
		float *d = f->whole[k] && run ? f->whole[k] + off : f->scr + (int64_t)k * EW_BLOCK;
		rt_ew_block(&f->op[k], x, scalar, d, bn);
		for (int64_t r = 0; f->whole[k] && !run && r < rows; r++)
			memcpy(f->whole[k] + off + r * ldc, d + r * n, (size_t)n * sizeof *d);
		cur[k] = d;
	}
}

void rt_ew_fused_region(void *ctx, const float *y, const float *c, int64_t ldc, int64_t rows, int64_t n)
{
	RtEwFused *f = ctx;
	if (ldc == n && rows > 1)   /* one run */
		n *= rows, rows = 1;
	if (n > EW_BLOCK || n >= EW_GATHER) {   /* long rows: each row in pieces, in place */
		for (int64_t r = 0; r < rows; r++)
			for (int64_t j = 0; j < n; j += EW_BLOCK)
				fused_block(f, y, c + r * ldc + j, ldc, 1, n - j < EW_BLOCK ? n - j : EW_BLOCK);
		return;
	}
	int64_t rg = EW_BLOCK / n;
	for (int64_t r = 0; r < rows; r += rg)
		fused_block(f, y, c + r * ldc, ldc, rows - r < rg ? rows - r : rg, n);
}
