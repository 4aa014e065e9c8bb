/* runtime/check.c: `aicc run --check`: run a plan and the reference plan of the same graph on
 * the same inputs and compare outputs (and, per node, every value both plans name) against
 * tolerances derived from the formats the plan computes in (docs/plan-format.md §Tolerances).
 * The reference plan is rebuilt through the hook the driver registers (rt_set_rebuild), so the
 * runtime needs no compiler header. */
#include "runtime/interp.h"
#include "runtime/codec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/numerics.h"
#include "runtime/random.h"

static RtRebuildFn rebuild;
void rt_set_rebuild(RtRebuildFn fn) { rebuild = fn; }

/* Explicit significand bits (without the hidden bit) of the float formats (dtype.def's sig: IEEE
 * 754; OCP FP8 and MX v1.0; numerics.md); block types use their element format, whose MXINT8
 * elements carry 7 bits; -1 for integers (exact). */
static int mantissa_bits(DType d)
{
	if (rt_dtypes[d].kind == K_BLOCK)
		d = rt_dtypes[d].elem;
	if (d == DT_I8)
		return 7;       /* mxint8 elements */
	return rt_dtypes[d].sig > 0 ? rt_dtypes[d].sig - 1 : -1;
}

double rt_tolerance(DType dt)
{
	int m = mantissa_bits(dt);
	return m < 0 ? 0 : 8 * ldexp(1.0, -(m + 1));
}

/* Unit roundoff u of format d as a plan uses it (docs/plan-format.md §Tolerances): floats
 * 2^-(m+1); an integer with a symmetric scale per group (Quantize {to=iN, group}: scale =
 * amax/qmax, q = rne(x/scale), numerics.md §6) is off by at most half a step, scale/2, so
 * u = 1/(2 qmax) relative to its group's amax (int4: 1/14, int8: 1/254); integers without a
 * scale are exact (0). */
double rt_unit_roundoff(DType d, int scaled)
{
	if (scaled && rt_dtypes[d].kind == K_INT && rt_dtypes[d].bits >= 2)
		return 1 / (2 * (ldexp(1.0, rt_dtypes[d].bits - 1) - 1));
	int m = mantissa_bits(d);
	return m < 0 ? 0 : ldexp(1.0, -(m + 1));
}

/* The largest unit roundoff among the formats plan p computes in: buffer dtypes, MMA operand
 * formats, and the formats its Quantize kernels round to (their values are held dequantized in
 * a wider buffer, so only the kernel says that w4a16 weights sit on an int4 grid). */
static double coarsest(const Plan *p)
{
	double u = rt_unit_roundoff(DT_F64, 0);
	for (int b = 0; b < p->nbuffers; b++)
		if (rt_dtype_isfloat(p->buffers[b].dtype))
			u = fmax(u, rt_unit_roundoff(p->buffers[b].dtype, 0));
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			if (in->opts.mma_in != DT_INVALID)
				u = fmax(u, rt_unit_roundoff(in->opts.mma_in, 0));
			if (in->kind != PI_KERNEL || in->op != RT_OP_Quantize)
				continue;
			DType to = rt_dtype_lookup(rt_attr_str(&in->attrs, "to", ""));
			if (to != DT_INVALID)
				u = fmax(u, rt_unit_roundoff(to, rt_attr_find(&in->attrs, "group") != NULL));
		}
	return u;
}

/* The formats behind one value (docs/plan-format.md §Tolerances): u, the largest unit roundoff
 * among the formats the value passes through from the plan's inputs and constants (buffer
 * dtypes, MMA operand formats, Quantize grids on its way), fmt that format, and what brings it
 * in: the instruction `by` (its mma_in or Quantize `to`), else buffer `buf`'s dtype. */
typedef struct Cone {
	double u;
	DType fmt;
	int scaled;              /* fmt is an integer grid with a scale per group */
	const PlanInstr *by;
	int buf;
} Cone;

/* The cone of every buffer of p, by one walk in execution order (each instruction's outputs get
 * the coarsest of its inputs' cones and its own formats), so that an output the coarse path does
 * not reach keeps its own formats' tolerance (a decode step's first-layer KV cache on
 * vera-rubin, ahead of the LPU's MXFP8 FFN).  NULL when p has no linear order or memory runs
 * out (then every value gets coarsest(p)). */
static Cone *format_cones(const Plan *p)
{
	PlanStep *order;
	int n;
	RtError e;
	Cone *c = rt_calloc((size_t)p->nbuffers + 1, sizeof *c);
	if (!c || plan_linearize(p, &order, &n, &e) < 0) {
		rt_free(c);
		return NULL;
	}
	for (int b = 0; b < p->nbuffers; b++) {
		DType d = p->buffers[b].dtype;
		int f = rt_dtype_isfloat(d);
		c[b] = (Cone){ rt_unit_roundoff(f ? d : DT_F64, 0), f ? d : DT_F64, 0, NULL, b };
	}
	for (int t = 0; t < n; t++) {
		const PlanInstr *in = &p->streams[order[t].stream].ins[order[t].index];
		Cone m = { -1, DT_INVALID, 0, NULL, -1 };
		for (int k = 0; k < in->nin; k++)
			if (in->in[k] >= 0 && c[in->in[k]].u > m.u)
				m = c[in->in[k]];
		double um = in->opts.mma_in != DT_INVALID ? rt_unit_roundoff(in->opts.mma_in, 0) : -1;
		if (um > m.u || (um == m.u && !m.by))   /* on a tie, name the product */
			m = (Cone){ um, in->opts.mma_in, 0, in, -1 };
		if (in->kind == PI_KERNEL && in->op == RT_OP_Quantize) {
			DType to = rt_dtype_lookup(rt_attr_str(&in->attrs, "to", ""));
			int g = rt_attr_find(&in->attrs, "group") != NULL;
			if (to != DT_INVALID && rt_unit_roundoff(to, g) > m.u)
				m = (Cone){ rt_unit_roundoff(to, g), to, g, in, -1 };
		}
		for (int k = 0; k < in->nout; k++)
			if (in->out[k] >= 0 && m.u > c[in->out[k]].u)
				c[in->out[k]] = m;
	}
	rt_free(order);
	return c;
}

/* What drives buffer b's tolerance, when it is coarser than b's own dtype: "8u of mxfp8, the
 * operands of MatMul 'layer#1/g'"; "" otherwise. */
static void cone_why(const Plan *p, const Cone *c, int b, char *buf, size_t n)
{
	buf[0] = 0;
	DType own = p->buffers[b].dtype;
	if (!c || !rt_dtype_isfloat(own) || c[b].u <= rt_unit_roundoff(own, 0) || c[b].fmt == DT_INVALID)
		return;
	const Cone *k = &c[b];
	const char *fmt = rt_dtype_name(k->fmt);
	if (k->by && k->by->op == RT_OP_Quantize)
		snprintf(buf, n, "8u of %s%s, the grid of Quantize '%s'", fmt, k->scaled ? " groups" : "",
			 k->by->node ? k->by->node : "?");
	else if (k->by)
		snprintf(buf, n, "8u of %s, the operand format of %s '%s'", fmt, rt_op_name(k->by->op),
			 k->by->node ? k->by->node : "?");
	else if (k->buf >= 0)
		snprintf(buf, n, "8u of %s, buffer '%s'", fmt, p->buffers[k->buf].name);
}

/* The kernel instruction of p that writes buffer b, or NULL. */
static const PlanInstr *producer(const Plan *p, int b)
{
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			for (int o = 0; in->kind == PI_KERNEL && o < in->nout; o++)
				if (in->out[o] == b)
					return in;
		}
	return NULL;
}

/* The allowance for row-split reductions (docs/plan-format.md §Tolerances): the reference sums
 * a length-K product as one fma chain; a plan that splits K over p devices and AllReduces sums
 * p chains of K/p and then the p partials.  The first chunk is the same chain in both, so the
 * two results differ by the n = 2(K - K/p) + (p - 1) roundings that are not shared, each at
 * most u_s of a partial sum, u_s the format the interpreter accumulates in (f32 for a bf16 or f16
 * buffer: products sum in f32, the AllReduce adds in f32), plus, for a buffer narrower than that,
 * the p + 2 roundings to the buffer's format u_r (each partial, the sum, the reference's result).  With rounding errors modelled as
 * independent and zero-mean (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019, Thm 2.4) their
 * sum exceeds lambda*sqrt(n)*u times the largest partial only with probability at most
 * 2 exp(-lambda^2/2); lambda = 6 makes that 3e-8 per element (Hoeffding over roundings of
 * differing bounds: lambda sqrt(sum u_i^2)).  Partial sums are taken as no larger than the
 * output's largest magnitude (the normwise measure), so the allowance is
 * 6 sqrt(n u_s^2 + n_r u_r^2), the largest over the plan's AllReduces.  An AllReduce not fed by a matrix
 * product (K unknown) reorders only its p terms: n = 2(p - 1).  An AllReduce of Add trees over
 * products (a training step's gradient contributions, inner_length) takes K as their summed
 * lengths and adds the trees' own (leaves - 1) additions per member.  A ReduceScatter sums its
 * chunks in the same order as an AllReduce (runtime/interp.c) and counts alike. */
/* The reduction length behind buffer b of p: a matrix product's inner dimension, or the summed
 * lengths of the products an Add tree joins (a training step's gradient: the shards'
 * contributions to a value the tensor-parallel group reads, e.g. dX of the Q, K and V MatMuls,
 * added on each device before their AllReduce), *leaves counting the products; 0 when b is no
 * such value. */
static double inner_length(const Plan *p, int b, int depth, int *leaves)
{
	const PlanInstr *mm = b >= 0 && depth < 16 ? producer(p, b) : NULL;
	if (!mm || mm->nin < 1 || mm->in[0] < 0)
		return 0;
	if (mm->op == RT_OP_MatMul || mm->op == RT_OP_Gemm) {
		const PlanBuffer *a = &p->buffers[mm->in[0]];
		int ta = mm->op == RT_OP_Gemm && rt_attr_int(&mm->attrs, "transA", 0);
		++*leaves;
		return a->rank < 1 ? 1 : (double)a->dims[ta && a->rank >= 2 ? a->rank - 2 : a->rank - 1];
	}
	if (mm->op != RT_OP_Add || mm->nin != 2)
		return 0;
	return inner_length(p, mm->in[0], depth + 1, leaves) + inner_length(p, mm->in[1], depth + 1, leaves);
}

static double reassociation(const Plan *p)
{
	double tol = 0;
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			if (in->kind != PI_COLLECTIVE || (in->coll != PC_ALLREDUCE && in->coll != PC_REDUCESCATTER) ||
			    in->nin < 2 || in->nout < 1 ||
			    in->in[0] < 0 || in->out[0] < 0)
				continue;
			int leaves = 0;
			double np = in->nin, n = 2 * (np - 1), kl = inner_length(p, in->in[0], 0, &leaves);
			if (kl > 0)     /* the Add tree's own additions, on partial values: (leaves - 1) per member */
				n = 2 * (kl * np - kl) + (np - 1) + (leaves - 1) * np;
			/* the chains and the AllReduce's additions round at the format the interpreter
			 * holds values in (f32 for bf16/f16 buffers); a narrower buffer adds the roundings
			 * of the p partials and of the sum to it, where the reference rounds once */
			DType bd = p->buffers[in->out[0]].dtype;
			DType sd = rt_dtypes[bd].storage == S_F64 ? DT_F64 : rt_dtypes[bd].storage == S_F32 ? DT_F32 : bd;
			double us = fmin(rt_unit_roundoff(sd, 0), rt_unit_roundoff(bd, 0)), ur = rt_unit_roundoff(bd, 0);
			double nr = ur > us ? np + 2 : 0;
			tol = fmax(tol, 6 * sqrt(n * us * us + nr * ur * ur));
		}
	return tol;
}

/* The allowance for compressed all-reduces (docs/plan-format.md §Tolerances): each one's error
 * is at most (p + 1) half-steps of its blocks (rt_codec_error's worst, relative to a block's
 * range); a range is at most twice the largest |x| of the block, and partial sums are taken as
 * no larger than the output's largest magnitude (reassociation's normwise measure), so one
 * all-reduce is off by at most 2 worst = (p + 1) / (2^bits - 1) of it.  Each one's error is
 * taken to reach an output once and unamplified (the residual stream carries it; normalisation
 * rescales error and value alike), so the allowance is their sum. */
static double codec_allowance(const Plan *p)
{
	double tol = 0;
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			RtCodec c;
			RtError e;
			double worst, rms;
			if (in->kind != PI_COLLECTIVE || in->coll != PC_ALLREDUCE || rt_instr_codec(in, &c, &e) <= 0)
				continue;
			rt_codec_error(&c, in->nin, &worst, &rms);
			tol += 2 * worst;
		}
	return tol;
}

/* The bound B(t) on AdamW's normalised step |m^_t / (sqrt(v^_t) + eps)| after t steps with
 * betas b1, b2: by Cauchy-Schwarz over m_t = (1-b1) sum_k b1^k g_{t-k} against v_t = (1-b2)
 * sum_k b2^k g_{t-k}^2, |m_t| <= (1-b1) sqrt(sum_{k<t} (b1^2/b2)^k) sqrt(v_t / (1-b2)), so with the
 * bias corrections B(t) = (1-b1)/(1-b1^t) sqrt((1-b2^t)/(1-b2)) sqrt((1-c^t)/(1-c)), c = b1^2/b2
 * < 1 (Kingma & Ba, ICLR 2015, section 2.1 bounds the same step).  B(1) = 1: the first step is
 * lr sign(g) where |g| >> eps.  t <= 0 (unknown): the largest B over t = 1, 2, 4, ..., 2^40 and
 * the limit t -> infinity. */
static double adam_bound(double b1, double b2, double t)
{
	double c = b1 * b1 / b2;
	if (!(c < 1) || !(b1 < 1) || !(b2 < 1))
		return INFINITY;
	if (t >= 1)
		return (1 - b1) / (1 - pow(b1, t)) * sqrt((1 - pow(b2, t)) / (1 - b2)) * sqrt((1 - pow(c, t)) / (1 - c));
	double b = (1 - b1) / sqrt((1 - b2) * (1 - c));
	for (double k = 1; k <= 1099511627776.0; k *= 2)
		b = fmax(b, adam_bound(b1, b2, k));
	return b;
}

/* The absolute allowance for buffer b when it is an AdamW update (its W' output, or that
 * cast to the weight's format): W' = W - lr (wd W + s) with |s| <= B(t) (adam_bound) on either
 * side, so a gradient that differs between the two plans, above all one near zero whose sign
 * differs, moves W' by up to 2 lr B(t) whatever its relative error (the first step is nearly a
 * sign function); W and wd W are the same f32 values in both.  t from the step's constant
 * (a fill), else unknown.  0 for any other buffer. */
static double adamw_allowance(const Plan *p, int b)
{
	const PlanInstr *in = producer(p, b);
	int w = b;
	if (in && in->op == RT_OP_Cast && in->nin >= 1 && in->in[0] >= 0)
		in = producer(p, w = in->in[0]);
	if (!in || in->op != RT_OP_AdamW || in->nin < 5 || in->nout < 1 || in->out[0] != w)
		return 0;
	double t = 0;
	for (int i = 0; i < p->nconsts; i++)
		if (p->consts[i].buffer == in->in[4] && p->consts[i].kind == PINIT_FILL)
			t = p->consts[i].a;
	double lr = rt_attr_float(&in->attrs, "lr", 1e-3);
	return 2 * lr * adam_bound(rt_attr_float(&in->attrs, "beta1", 0.9), rt_attr_float(&in->attrs, "beta2", 0.999), t);
}

/* tol for buffer b of p against ref: an AdamW update's absolute allowance relative to the
 * reference's largest magnitude is added (adamw_allowance). */
static double buffer_tol(const Plan *p, int b, const RtTensor *ref, double tol)
{
	double a = adamw_allowance(p, b), amax = 0;
	if (a <= 0)
		return tol;
	for (int64_t i = 0; i < ref->n; i++)
		if (isfinite(rt_get(ref, i)))
			amax = fmax(amax, fabs(rt_get(ref, i)));
	return tol + a / (amax > 0 ? amax : 1);
}

/* The saturating function f (Sigmoid, Tanh) whose value buffer b of p is, or 0.  In its tails f
 * is flat and its value tiny next to its range (sigmoid(-19) = 5.6e-9), so the relative error of
 * y = f(z) is the absolute error of z and not bounded by y's own format. */
static int saturating(const Plan *p, int b)
{
	const PlanInstr *in = b >= 0 ? producer(p, b) : NULL;
	return in && in->nin >= 1 && (in->op == RT_OP_Sigmoid || in->op == RT_OP_Tanh) ? in->op : 0;
}

static double sat_f(int op, double z) { return op == RT_OP_Tanh ? tanh(z) : 1 / (1 + exp(-z)); }
static double sat_inv(int op, double y) { return op == RT_OP_Tanh ? atanh(y) : log(y / (1 - y)); }

/* The absolute allowance of element r of y = f(z) when z is off by at most dz: the most f moves
 * over [z - dz, z + dz], z = f^-1(r); 0 where r is saturated (z not finite). */
static double sat_allow(int op, double r, double dz)
{
	double z = sat_inv(op, r);
	if (!isfinite(z))
		return 0;
	return fmax(fabs(sat_f(op, z + dz) - r), fabs(sat_f(op, z - dz) - r));
}

/* rt_compare with y = f(z) for a saturating f (op; 0: none): besides tol x max|r| each element
 * may be off by what z's own allowance moves f (docs/plan-format.md §Tolerances): z is held to
 * the same normwise tolerance, |dz| <= tol x max|z|, and max|z| >= max |f^-1(r)| over the
 * elements, so dz = tol x max |f^-1(r)| is a lower bound of z's allowance derived from r. */
static void compare_fn(const RtTensor *got, const RtTensor *ref, double tol, int op, RtCheckOut *o)
{
	double amax = 0, emax = 0, zmax = 0;
	int nan_mismatch = got->n != ref->n;
	for (int64_t i = 0; !nan_mismatch && i < ref->n; i++) {
		double g = rt_get(got, i), r = rt_get(ref, i);
		if (isnan(g) || isnan(r)) {
			nan_mismatch |= isnan(g) != isnan(r);
			continue;
		}
		if (isinf(g) || isinf(r)) {
			nan_mismatch |= g != r;
			continue;
		}
		amax = fmax(amax, fabs(r));
		emax = fmax(emax, fabs(g - r));
		double z = op ? sat_inv(op, r) : 0;
		if (isfinite(z))
			zmax = fmax(zmax, fabs(z));
	}
	o->max_abs = nan_mismatch ? INFINITY : emax;
	o->max_rel = nan_mismatch ? INFINITY : emax / (amax > 0 ? amax : 1);
	o->tolerance = tol;
	o->abs_allowance = 0;
	o->abs_through = NULL;
	o->ok = !nan_mismatch && o->max_rel <= tol;
	if (nan_mismatch || o->ok || !op)
		return;
	/* element by element: |g - r| <= tol max|r| + the input error's reach through f */
	double dz = tol * zmax, base = tol * (amax > 0 ? amax : 1), worst = 0;
	int ok = 1;
	for (int64_t i = 0; i < ref->n; i++) {
		double g = rt_get(got, i), r = rt_get(ref, i);
		if (!isfinite(g) || !isfinite(r))
			continue;
		double a = sat_allow(op, r, dz);
		worst = fmax(worst, a);
		ok &= fabs(g - r) <= base + a;
	}
	o->abs_allowance = worst;
	o->abs_through = op == RT_OP_Tanh ? "Tanh" : "Sigmoid";
	o->ok = ok;
}

void rt_compare(const RtTensor *got, const RtTensor *ref, double tol, RtCheckOut *o)
{
	compare_fn(got, ref, tol, 0, o);
}

/* Seeded inputs shared by both runs, rounded to p's input dtypes so both see the same values. */
static int shared_inputs(const Plan *p, const RtRunOpts *o, RtBinding **bind, RtTensor **store, RtError *e)
{
	*bind = rt_calloc((size_t)(o->nbind + p->ninputs) + 1, sizeof **bind);
	*store = rt_calloc((size_t)p->ninputs + 1, sizeof **store);
	if (!*bind || !*store)
		return rt_errorf(e, RT_ENOMEM, "out of memory preparing --check inputs");
	int nb = 0;
	for (int i = 0; i < o->nbind; i++)
		(*bind)[nb++] = o->bind[i];
	for (int i = 0, ordinal = -1; i < p->ninputs; i++) {
		int given = 0;
		if (!plan_io_first(p->inputs, i))
			continue;
		ordinal++;
		for (int j = 0; j < o->nbind; j++)
			given |= strcmp(o->bind[j].name, p->inputs[i].name) == 0;
		if (given)
			continue;
		/* the same data the interpreter would generate for p, made once for both runs (the
		 * whole tensor of a sharded input, keyed by its ordinal among distinct names) */
		const PlanBuffer *pb = &p->buffers[p->inputs[i].buffer];
		RtTensor *t = &(*store)[i];
		int64_t dims[RT_MAX_RANK];
		int rank = plan_io_dims(p, &p->inputs[i], dims);
		if (rt_tensor_alloc(t, pb->dtype, rank, dims, e) < 0)
			return -1;
		float *tmp = rt_malloc(sizeof(float) * (size_t)(t->n ? t->n : 1));
		if (!tmp)
			return rt_errorf(e, RT_ENOMEM, "out of memory preparing --check inputs");
		if (rt_dtype_isfloat(t->dtype))
			rt_fill_normal(tmp, t->n, 0.0f, 1.0f, o->seed, (uint64_t)ordinal);
		else
			rt_fill_uniform(tmp, t->n, 0.0f, 2.0f, o->seed, (uint64_t)ordinal);
		for (int64_t k = 0; k < t->n; k++)
			rt_set(t, k, rt_dtype_isfloat(t->dtype) ? tmp[k] : floor(tmp[k]));
		rt_free(tmp);
		if (rt_dtypes[t->dtype].storage == S_F32 && t->dtype != DT_F32) {
			QuantOpts q = { SCALE_FLOOR, 1, 0 };
			rt_round_tensor(t->dtype, rt_f32(t), t->n, t->rank ? t->dims[t->rank - 1] : 1, &q);
		}
		(*bind)[nb++] = (RtBinding){ p->inputs[i].name, t };
	}
	return nb;
}

/* Index of the kernel in plan q that computes node `name` (its first output), or -1. */
static int node_buffer(const Plan *q, const char *name)
{
	for (int s = 0; s < q->nstreams; s++)
		for (int i = 0; i < q->streams[s].nins; i++) {
			const PlanInstr *in = &q->streams[s].ins[i];
			if (in->kind == PI_KERNEL && in->node && in->nout && strcmp(in->node, name) == 0)
				return in->out[0];
		}
	return -1;
}

/* The tolerance of --check before per-buffer allowances: 8u of each value's cone (whole, the
 * plan's coarsest format, without cones), plus the row-split and codec allowances. */
typedef struct Tol {
	Cone *cones;
	double whole, extra;
} Tol;

static double tol_of(const Tol *t, int b) { return (t->cones ? 8 * t->cones[b].u : t->whole) + t->extra; }

/* The first node, in p's execution order, whose value is out of tolerance against the reference;
 * counts the kernels compared until then and keeps the one nearest its tolerance. */
static void first_bad_node(const Plan *p, const RtRun *r, const Plan *ref, const RtRun *rr, const Tol *tl, RtCheck *c)
{
	PlanStep *order;
	int n;
	RtError e;
	if (plan_linearize(p, &order, &n, &e) < 0)
		return;
	for (int t = 0; t < n && !c->first_bad_node; t++) {
		const PlanInstr *in = &p->streams[order[t].stream].ins[order[t].index];
		if (in->kind != PI_KERNEL || !in->node || !in->nout)
			continue;
		int rb = node_buffer(ref, in->node);
		const RtTensor *g = &r->values[in->out[0]];
		if (rb < 0 || !g->data || !rr->values[rb].data || g->n != rr->values[rb].n)
			continue;
		RtCheckOut o;
		compare_fn(g, &rr->values[rb], rt_dtype_isfloat(g->dtype) ? buffer_tol(p, in->out[0], &rr->values[rb], tol_of(tl, in->out[0])) : 0,
			   rt_dtype_isfloat(g->dtype) ? saturating(p, in->out[0]) : 0, &o);
		c->nodes_compared++;
		if (o.tolerance > 0 && (!c->closest_node || o.max_rel / o.tolerance > c->closest_err / c->closest_tol)) {
			c->closest_node = in->node;
			c->closest_err = o.max_rel, c->closest_tol = o.tolerance;
		}
		if (!o.ok) {
			c->first_bad_node = in->node;
			c->first_bad_buffer = p->buffers[in->out[0]].name;
			c->first_bad_err = o.max_rel;
			c->first_bad_tol = o.tolerance;
		}
	}
	rt_free(order);
}

static int compare_outputs(const Plan *p, const RtRun *r, const Plan *ref, const RtRun *rr, const Tol *tl,
			   RtCheck *c, RtError *e)
{
	c->outs = rt_calloc((size_t)p->noutputs + 1, sizeof *c->outs);
	if (!c->outs)
		return rt_errorf(e, RT_ENOMEM, "out of memory comparing outputs");
	c->nouts = 0;
	c->ok = 1;
	for (int i = 0; i < p->noutputs; i++) {
		int j = 0, k = c->nouts;
		if (!plan_io_first(p->outputs, i))
			continue;      /* a sharded output is compared once, assembled */
		while (j < ref->noutputs && strcmp(ref->outputs[j].name, p->outputs[i].name))
			j++;
		if (j == ref->noutputs)
			return rt_errorf(e, RT_EUSER, "--check: the reference plan has no output '%s'", p->outputs[i].name);
		const RtTensor *g = &r->outputs[i];
		int ob = p->outputs[i].buffer;
		compare_fn(g, &rr->outputs[j], rt_dtype_isfloat(g->dtype) ? buffer_tol(p, ob, &rr->outputs[j], tol_of(tl, ob)) : 0,
			   rt_dtype_isfloat(g->dtype) ? saturating(p, ob) : 0, &c->outs[k]);
		if (rt_dtype_isfloat(g->dtype))
			cone_why(p, tl->cones, ob, c->outs[k].tol_why, sizeof c->outs[k].tol_why);
		c->outs[k].name = p->outputs[i].name;
		c->ok &= c->outs[k].ok;
		c->nouts++;
	}
	return 0;
}

int rt_check(const Plan *p, const RtRunOpts *o, int per_node, RtRun *r, RtCheck *c, RtError *e)
{
	memset(c, 0, sizeof *c);
	memset(r, 0, sizeof *r);
	if (!rebuild)
		return rt_errorf(e, RT_EINTERNAL, "--check: no reference builder registered");
	if (!p->source.model)
		return rt_errorf(e, RT_EUSER, "--check: the plan does not record the graph it came from");
	/* distributed (RtRunOpts.dist): every process runs p, the root alone runs the reference */
	int root = !o->dist || o->dist->root;
	Plan *ref = root ? rebuild(p, p->source.precision, e) : NULL;
	if (root && !ref)
		return -1;
	RtBinding *bind = NULL;
	RtTensor *store = NULL;
	RtRun rr = { 0 };
	int nb = shared_inputs(p, o, &bind, &store, e), rc = nb < 0 ? -1 : 0;
	RtRunOpts a = *o, b = *o;
	a.bind = b.bind = bind;
	a.nbind = b.nbind = nb;
	a.keep_all = b.keep_all = per_node;
	b.dist = NULL;
	int ran = 0;
	if (rc == 0)
		ran = (rc = rt_run(p, &a, r, e)) == 0;
	c->ok = 1;
	if (!root) {           /* another process compares */
		for (int i = 0; store && i < p->ninputs; i++)
			rt_tensor_free(&store[i]);
		rt_free(store);
		rt_free(bind);
		return rc;
	}
	if (rc == 0 && (rc = rt_run(ref, &b, &rr, e)) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rt_errorf(e, e->code, "--check: the reference run failed: %s", msg);
	}
	/* rt_tolerance's rule over each value's formats, row splits, codecs */
	Tol tl = { rc == 0 ? format_cones(p) : NULL, 8 * coarsest(p), reassociation(p) + codec_allowance(p) };
	if (rc == 0)
		rc = compare_outputs(p, r, ref, &rr, &tl, c, e);
	if (rc == 0 && per_node)
		first_bad_node(p, r, ref, &rr, &tl, c);
	rt_free(tl.cones);
	for (int i = 0; store && i < p->ninputs; i++)
		rt_tensor_free(&store[i]);
	rt_free(store);
	rt_free(bind);
	rt_run_free(ref, &rr);
	plan_free(ref);
	if (rc < 0 && ran)          /* the caller frees r only on success */
		rt_run_free(p, r);
	return rc;
}

void rt_check_free(RtCheck *c)
{
	rt_free(c->outs);
	memset(c, 0, sizeof *c);
}
