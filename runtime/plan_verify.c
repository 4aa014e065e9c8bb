/* runtime/plan_verify.c: the plan verifier, the execution order and liveness.
 *
 * plan_verify checks every semantic rule of docs/plan-format.md §Verification on a Plan, whether
 * parsed or built by a target: entity references and numeric ranges, buffer sizes against
 * dtype x shape, bounds within memory-space capacities, operator arities (from ir/ops.def),
 * instruction operands on the right device, events recorded once and waits that can be
 * satisfied, every buffer written before it is read, no two buffers overlapping in the same
 * space while both are live, and for static schedules (issue cycles) no unit conflicts and no
 * read before its producer's data is ready (units and link directions per cycle, a transferred
 * operand only after it arrives).  The first problem is returned as
 * "file:LINE: error: message"; the verifier never indexes anything it has not checked. */
#include "runtime/plan.h"
#include "runtime/heap.h"
#include "runtime/codec.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const struct { int imin, imax, omin, omax; } arity[RT_OP_COUNT] = {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) { imin, imax, omin, omax },
#include "ir/ops.def"
#undef OP
};

static int verr(const Plan *p, RtError *e, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int verr(const Plan *p, RtError *e, int line, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const char *file = p->file ? p->file : "<plan>";
	if (line > 0)
		return rt_errorf(e, RT_EUSER, "%s:%d: error: %s", file, line, msg);
	return rt_errorf(e, RT_EUSER, "%s: error: %s", file, msg);
}

static int finite_pos(double v) { return v > 0 && v < INFINITY; }
static int finite_nonneg(double v) { return v >= 0 && v < INFINITY; }

/* ---- machine ---- */
static int check_machine(const Plan *p, RtError *e)
{
	if (p->ndevices == 0)
		return verr(p, e, 0, "the plan declares no device");
	for (int i = 0; i < p->ndevices; i++) {
		const PlanDevice *d = &p->devices[i];
		if (!finite_pos(d->peak_flops) || !finite_nonneg(d->peak_flops_f64) ||
		    !finite_nonneg(d->overhead_s) || !finite_nonneg(d->clock_hz))
			return verr(p, e, d->line, "device '%s': peak must be positive, peak_f64, overhead and "
				    "clock non-negative and finite", d->name);
	}
	for (int i = 0; i < p->nspaces; i++) {
		const PlanSpace *s = &p->spaces[i];
		if (s->device < 0 || s->device >= p->ndevices)
			return verr(p, e, s->line, "space '%s' is on an undefined device", s->name);
		if (s->capacity < 0 || !finite_pos(s->bandwidth))
			return verr(p, e, s->line, "space '%s': capacity must be >= 0 and bandwidth positive", s->name);
	}
	for (int i = 0; i < p->nunits; i++)
		if (p->units[i].device < 0 || p->units[i].device >= p->ndevices)
			return verr(p, e, p->units[i].line, "unit '%s' is on an undefined device", p->units[i].name);
	for (int i = 0; i < p->nlinks; i++) {
		const PlanLink *l = &p->links[i];
		if (l->src < 0 || l->src >= p->ndevices || l->dst < 0 || l->dst >= p->ndevices)
			return verr(p, e, l->line, "link '%s' joins undefined devices", l->name);
		if (!finite_pos(l->bandwidth) || !finite_nonneg(l->latency_s))
			return verr(p, e, l->line, "link '%s': bandwidth must be positive, latency non-negative", l->name);
	}
	return 0;
}

/* ---- buffers, constants, inputs, outputs ---- */
static int check_buffer(const Plan *p, const PlanBuffer *b, RtError *e)
{
	if (b->space < 0 || b->space >= p->nspaces)
		return verr(p, e, b->line, "buffer '%s' is in an undefined space", b->name);
	if (b->dtype <= DT_INVALID || b->dtype >= DT_COUNT)
		return verr(p, e, b->line, "buffer '%s' has an invalid dtype", b->name);
	if (b->rank < 0 || b->rank > RT_MAX_RANK)
		return verr(p, e, b->line, "buffer '%s' has rank %d (at most %d)", b->name, b->rank, RT_MAX_RANK);
	for (int i = 0; i < b->rank; i++)
		if (b->dims[i] < 0)
			return verr(p, e, b->line, "buffer '%s' has a negative dimension", b->name);
	int64_t n = plan_buffer_numel(b);
	if (n < 0 || n > INT64_MAX / 64)
		return verr(p, e, b->line, "buffer '%s': element count overflows", b->name);
	int64_t want = b->format ? plan_format_bytes(b->format, b->dtype, b->rank, b->dims) : -1;
	if (want < 0)        /* a size for a dtype implies a known format (plan_format_known's bf16 test) */
		return verr(p, e, b->line, "buffer '%s': unknown format '%s'%s", b->name, b->format ? b->format : "",
			    b->format && plan_format_known(b->format) ? " for its dtype" : "");
	if (b->size != want) {
		char in_fmt[80] = "";
		if (strcmp(b->format, "row"))
			snprintf(in_fmt, sizeof in_fmt, " in format %s", b->format);
		return verr(p, e, b->line, "buffer '%s': size %" PRId64 " does not match %s x %" PRId64
			    " elements%s = %" PRId64 " bytes", b->name, b->size, rt_dtype_name(b->dtype), n, in_fmt, want);
	}
	const PlanSpace *s = &p->spaces[b->space];
	if (b->offset < 0 || b->offset > s->capacity || b->size > s->capacity - b->offset) {
		if (b->offset > INT64_MAX - b->size)     /* the end does not fit an int64 */
			return verr(p, e, b->line, "buffer '%s': bytes [%" PRId64 ", %" PRId64 " + %" PRId64 ") exceed "
				    "space '%s' (capacity %" PRId64 ")", b->name, b->offset, b->offset, b->size, s->name,
				    s->capacity);
		return verr(p, e, b->line, "buffer '%s': bytes [%" PRId64 ", %" PRId64 ") exceed space '%s' "
			    "(capacity %" PRId64 ")", b->name, b->offset, b->offset + b->size, s->name, s->capacity);
	}
	return 0;
}

static int check_const(const Plan *p, const PlanConst *c, RtError *e)
{
	if (c->buffer < 0 || c->buffer >= p->nbuffers || c->kind >= PINIT_COUNT)
		return verr(p, e, c->line, "constant of an undefined buffer or initialiser");
	const PlanBuffer *b = &p->buffers[c->buffer];
	int64_t n = plan_buffer_numel(b);
	if (c->shard_axis >= 0) {
		if (c->shard_axis >= b->rank || c->shard_off < 0 || c->shard_full <= 0 ||
		    c->shard_off > c->shard_full - b->dims[c->shard_axis])
			return verr(p, e, c->line, "const '%s': shard %d:%" PRId64 ":%" PRId64 " does not fit "
				    "the buffer's rank %d and dims", b->name, c->shard_axis, c->shard_off,
				    c->shard_full, b->rank);
		if (c->kind == PINIT_DATA)      /* unbound: the slice that --input or a checkpoint binds */
			return verr(p, e, c->line, "const '%s': a shard needs a seeded, inline, file or no "
				    "initialiser", b->name);
		n = b->dims[c->shard_axis] ? n / b->dims[c->shard_axis] : 0;
		if (n && c->shard_full > INT64_MAX / n)
			return verr(p, e, c->line, "const '%s': shard %d:%" PRId64 ":%" PRId64 ": the full tensor's "
				    "element count overflows 2^63", b->name, c->shard_axis, c->shard_off, c->shard_full);
		n *= c->shard_full;
	}
	switch (c->kind) {
	case PINIT_NORMAL:
		if (!finite_nonneg(c->b) || !isfinite(c->a))
			return verr(p, e, c->line, "const '%s': normal needs a finite mean and std >= 0", b->name);
		break;
	case PINIT_UNIFORM:
		if (!isfinite(c->a) || !isfinite(c->b) || c->a > c->b)
			return verr(p, e, c->line, "const '%s': uniform needs finite low <= high", b->name);
		break;
	case PINIT_INLINE:
		if (c->nvals != n || c->nvals > PLAN_INLINE_MAX)
			return verr(p, e, c->line, "const '%s': %" PRId64 " inline values for %" PRId64 " elements "
				    "(inline data holds at most %d)", b->name, c->nvals, n, PLAN_INLINE_MAX);
		break;
	case PINIT_NPY:
	case PINIT_SAFETENSORS:
		if (!c->path || !*c->path || (c->kind == PINIT_SAFETENSORS && (!c->key || !*c->key)))
			return verr(p, e, c->line, "const '%s': empty path or key", b->name);
		break;
	case PINIT_DATA:
		if (!c->data || c->data->n != n || c->data->rank != b->rank)
			return verr(p, e, c->line, "const '%s': its in-memory data does not match the buffer", b->name);
		break;
	default:
		break;
	}
	return 0;
}

/* Sharded entries of one name (docs/plan-format.md): the same axis, FULL, dtype and other dims,
 * and slices that tile [0, FULL) exactly, without overlap or gap. */
/* The inputs (outputs) ordered by name, then by index, so that each name's declarations are one
 * run of `ord` (io[i] is ord[pos[i]], its run starts at ord[start[i]]) and every check below
 * visits a name's declarations in file order, as a scan of all of them would. */
typedef struct IoOrder { const PlanIO *io; int *ord, *pos, *start; } IoOrder;

typedef struct IoKey { const char *name; int i; } IoKey;
static int cmp_io(const void *a, const void *b)
{
	const IoKey *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

static int io_order(IoOrder *o, const PlanIO *io, int nio)
{
	o->io = io;
	o->ord = rt_malloc(((size_t)nio + 1) * sizeof *o->ord);
	o->pos = rt_malloc(((size_t)nio + 1) * sizeof *o->pos);
	o->start = rt_malloc(((size_t)nio + 1) * sizeof *o->start);
	IoKey *k = rt_malloc(((size_t)nio + 1) * sizeof *k);
	if (!o->ord || !o->pos || !o->start || !k) {
		rt_free(k);
		return -1;
	}
	for (int i = 0; i < nio; i++)
		k[i] = (IoKey){ io[i].name, i };
	qsort(k, (size_t)nio, sizeof *k, cmp_io);
	for (int q = 0; q < nio; q++) {
		int i = k[q].i;
		o->ord[q] = i;
		o->pos[i] = q;
		o->start[i] = q > 0 && strcmp(k[q - 1].name, k[q].name) == 0 ? o->start[k[q - 1].i] : q;
	}
	rt_free(k);
	return 0;
}

static void io_order_free(IoOrder *o)
{
	rt_free(o->ord), rt_free(o->pos), rt_free(o->start);
}

/* The device of buffer b's space, or -1. */
static int buffer_device(const Plan *p, int b)
{
	int s = b >= 0 && b < p->nbuffers ? p->buffers[b].space : -1;
	return s >= 0 && s < p->nspaces ? p->spaces[s].device : -1;
}

/* Whether input shards a and o (of one name, shape checked) are copies of one range on two
 * devices: a tensor-parallel plan with fewer KV heads than devices replicates each KV head's
 * cache on the devices whose query heads read it (passes/partition.c kv_parts), and each copy
 * is an input of its own, filled from the same slice.  Outputs are never replicated. */
static int replica(const Plan *p, const PlanIO *a, const PlanIO *o, const char *what)
{
	int da = buffer_device(p, a->buffer), dob = buffer_device(p, o->buffer);
	return a != o && !strcmp(what, "input") && a->shard_off == o->shard_off &&
	       p->buffers[a->buffer].dims[a->shard_axis] == p->buffers[o->buffer].dims[a->shard_axis] &&
	       da >= 0 && dob >= 0 && da != dob;
}

static int check_shards(const Plan *p, const IoOrder *ord, int nio, int i, const char *what, RtError *e)
{
	const PlanIO *io = ord->io, *a = &io[i];
	const PlanBuffer *b = &p->buffers[a->buffer];
	if (a->shard_axis >= b->rank || a->shard_off > a->shard_full - b->dims[a->shard_axis])
		return verr(p, e, a->line, "%s '%s': shard %d:%" PRId64 ":%" PRId64 " does not fit the buffer's "
			    "rank %d and dims", what, a->name, a->shard_axis, a->shard_off, a->shard_full, b->rank);
	int64_t covered = 0;
	for (int q = ord->start[i]; q < nio && ord->start[ord->ord[q]] == ord->start[i]; q++) {
		int j = ord->ord[q];
		const PlanIO *o = &io[j];
		const PlanBuffer *ob = &p->buffers[o->buffer];
		int same = o->shard_axis == a->shard_axis && o->shard_full == a->shard_full && ob->rank == b->rank &&
			   ob->dtype == b->dtype;
		for (int k = 0; same && k < b->rank; k++)
			same = k == a->shard_axis || ob->dims[k] == b->dims[k];
		if (!same)
			return verr(p, e, a->line, "%s '%s': its shards differ in axis, full size, dtype or shape "
				    "(line %d)", what, a->name, o->line);
		if (j != i && o->shard_off < a->shard_off + b->dims[a->shard_axis] &&
		    a->shard_off < o->shard_off + ob->dims[a->shard_axis] && !replica(p, a, o, what))
			return verr(p, e, a->line, "%s '%s': shard [%" PRId64 ", %" PRId64 ") overlaps shard [%" PRId64
				    ", %" PRId64 ") of line %d along axis %d", what, a->name, a->shard_off,
				    a->shard_off + b->dims[a->shard_axis], o->shard_off,
				    o->shard_off + ob->dims[a->shard_axis], o->line, a->shard_axis);
		int again = 0;       /* a replica's range is covered once */
		for (int q2 = ord->start[i]; q2 < q && !again; q2++)
			again = replica(p, o, &io[ord->ord[q2]], what);
		covered += again ? 0 : ob->dims[a->shard_axis];
	}
	if (covered != a->shard_full)
		return verr(p, e, a->line, "%s '%s': its shards cover %" PRId64 " of %" PRId64 " along axis %d",
			    what, a->name, covered, a->shard_full, a->shard_axis);
	return 0;
}

static int check_io_ordered(const Plan *p, const IoOrder *o, int nio, const char *what, RtError *e)
{
	const PlanIO *io = o->io;
	for (int i = 0; i < nio; i++) {
		if (io[i].buffer < 0 || io[i].buffer >= p->nbuffers)
			return verr(p, e, io[i].line, "%s '%s' names an undefined buffer", what, io[i].name);
		for (int q = o->start[i]; q < o->pos[i]; q++) {   /* the same name declared before */
			int j = o->ord[q];
			if (io[i].shard_axis < 0 || io[j].shard_axis < 0)
				return verr(p, e, io[i].line, "%s '%s' is declared twice", what, io[i].name);
			else if (io[i].buffer == io[j].buffer)
				return verr(p, e, io[i].line, "%s '%s': two shards in buffer '%s'", what, io[i].name,
					    p->buffers[io[i].buffer].name);
		}
	}
	for (int i = 0; i < nio; i++)
		if (io[i].shard_axis >= 0 && check_shards(p, o, nio, i, what, e) < 0)
			return -1;
	return 0;
}

static int check_io(const Plan *p, const PlanIO *io, int nio, const char *what, RtError *e)
{
	IoOrder o;
	int r = io_order(&o, io, nio) < 0 ? rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan")
					  : check_io_ordered(p, &o, nio, what, e);
	io_order_free(&o);
	return r;
}

/* Marks in `role` (1 input, 2 constant) each buffer bound from outside; errors on a buffer
 * that is both, or initialised twice. */
static int check_data(const Plan *p, unsigned char *role, RtError *e)
{
	for (int i = 0; i < p->nbuffers; i++)
		if (check_buffer(p, &p->buffers[i], e) < 0)
			return -1;
	for (int i = 0; i < p->nconsts; i++) {
		const PlanConst *c = &p->consts[i];
		if (check_const(p, c, e) < 0)
			return -1;
		if (role[c->buffer])
			return verr(p, e, c->line, "buffer '%s' is initialised twice", p->buffers[c->buffer].name);
		role[c->buffer] = 2;
	}
	if (check_io(p, p->inputs, p->ninputs, "input", e) || check_io(p, p->outputs, p->noutputs, "output", e))
		return -1;
	for (int i = 0; i < p->ninputs; i++) {
		int b = p->inputs[i].buffer;
		if (role[b])
			return verr(p, e, p->inputs[i].line, "input '%s': buffer '%s' is already %s", p->inputs[i].name,
				    p->buffers[b].name, role[b] == 2 ? "a constant" : "an input");
		role[b] = 1;
	}
	return 0;
}

/* ---- instructions ---- */
static int buf_device(const Plan *p, int b) { return p->spaces[p->buffers[b].space].device; }

static int check_operands(const Plan *p, const PlanInstr *in, RtError *e)
{
	for (int k = 0; k < in->nin + in->nout; k++) {
		int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
		if (b < -1 || b >= p->nbuffers || (b == -1 && (k >= in->nin || in->kind != PI_KERNEL)))
			return verr(p, e, in->line, "operand %d names an undefined buffer", k);
	}
	for (int i = 0; i < in->nout; i++)
		for (int j = 0; j < i; j++)
			if (in->out[i] == in->out[j])
				return verr(p, e, in->line, "buffer '%s' is written twice by one instruction",
					    p->buffers[in->out[i]].name);
	return 0;
}

/* fp8_scale (runtime/kernels/matmul.c): only on MatMul/Gemm with an FP8 mma_in; block scales are
 * applied when the accumulator is promoted (DeepSeek-V3 §3.3.2), so a Hopper promotion interval
 * must end every 128-element scale group: fp8_promote 0 (f32 accumulation), 32, 64 or 128. */
static int check_fp8_scale(const Plan *p, const PlanInstr *in, RtError *e)
{
	const RtExecOpts *o = &in->opts;
	if (o->fp8_scale == RT_FP8_NONE)
		return 0;
	if (o->fp8_scale < 0 || o->fp8_scale >= RT_FP8_COUNT)
		return verr(p, e, in->line, "invalid fp8_scale");
	if (in->op != RT_OP_MatMul && in->op != RT_OP_Gemm && in->op != RT_OP_GroupedMatMul)
		return verr(p, e, in->line, "fp8_scale on %s: only MatMul, Gemm and GroupedMatMul scale their operands",
			    plan_op_name(in->op));
	if (o->mma_in != DT_F8E4M3 && o->mma_in != DT_F8E5M2)
		return verr(p, e, in->line, "fp8_scale=%s needs mma_in f8e4m3 or f8e5m2, not %s",
			    rt_fp8_scale_name((RtFp8Scale)o->fp8_scale), o->mma_in == DT_INVALID ? "none" : rt_dtype_name(o->mma_in));
	if (o->fp8_scale != RT_FP8_TENSOR && o->fp8_promote_k && (o->fp8_promote_k > 128 || 128 % o->fp8_promote_k ||
								o->fp8_promote_k % 32))
		return verr(p, e, in->line, "fp8_promote=%d with fp8_scale=%s: block scales are applied at promotion, "
			    "so the interval must be 32, 64 or 128", o->fp8_promote_k, rt_fp8_scale_name((RtFp8Scale)o->fp8_scale));
	return 0;
}

/* ---- operand dtypes: ir/optypes.def, one row per ir/ops.def row ---- */
static const struct { const char *operands, *vars; } optypes[] = {
#define TYPES(name, operands, vars) { operands, vars },
#include "ir/optypes.def"
#undef TYPES
};
enum {
#define TYPES(name, operands, vars) TY_##name,
#include "ir/optypes.def"
#undef TYPES
	TY_COUNT
};
_Static_assert((int)TY_COUNT == (int)RT_OP_COUNT, "ir/optypes.def needs one row per ir/ops.def row");
#define TYPES(name, operands, vars) \
	_Static_assert((int)TY_##name == (int)RT_OP_##name, "ir/optypes.def: row " #name " is not in ir/ops.def's order");
#include "ir/optypes.def"
#undef TYPES
_Static_assert(DT_COUNT <= 64, "a dtype set is a 64-bit mask");

static uint64_t kinds_mask(int k0, int k1, int k2)
{
	uint64_t m = 0;
	for (int d = DT_INVALID + 1; d < DT_COUNT; d++)
		if (rt_dtypes[d].kind == k0 || rt_dtypes[d].kind == k1 || rt_dtypes[d].kind == k2)
			m |= UINT64_C(1) << d;
	return m;
}

/* The dtypes of one set name (optypes.def's header); 0 when it names none. */
static uint64_t set_name_mask(const char *s, size_t n)
{
	static const struct { const char *name; int k0, k1, k2; } classes[] = {
		{ "float", K_FLOAT, K_BLOCK, K_SCALE }, { "int", K_INT, K_UINT, -1 }, { "sint", K_INT, -1, -1 },
		{ "uint", K_UINT, -1, -1 }, { "bool", K_BOOL, -1, -1 }, { "num", K_FLOAT, K_BLOCK, K_SCALE },
		{ "any", K_FLOAT, K_BLOCK, K_SCALE }, { "elem", K_FLOAT, K_SCALE, -1 },
	};
	for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
		if (strlen(classes[i].name) == n && strncmp(classes[i].name, s, n) == 0) {
			uint64_t m = kinds_mask(classes[i].k0, classes[i].k1, classes[i].k2);
			if (i >= 5)    /* num, any, elem: with the integers (and bool) */
				m |= kinds_mask(K_INT, K_UINT, i >= 6 ? K_BOOL : -1);
			return m;
		}
	char name[32];
	if (n >= sizeof name)
		return 0;
	memcpy(name, s, n);
	name[n] = 0;
	DType d = rt_dtype_lookup(name);
	return d == DT_INVALID ? 0 : UINT64_C(1) << d;
}

/* The `|`-separated set s[0..n); 0 when a name is unknown. */
static uint64_t set_mask(const char *s, size_t n)
{
	uint64_t m = 0;
	while (n) {
		size_t k = 0;
		while (k < n && s[k] != '|')
			k++;
		uint64_t one = set_name_mask(s, k);
		if (!one)
			return 0;
		m |= one;
		s += k < n ? k + 1 : k;
		n -= k < n ? k + 1 : k;
	}
	return m;
}

static int operand_type(RtOp op, int nin, int k, PlanOperandType *t)
{
	memset(t, 0, sizeof *t);
	if ((unsigned)op >= RT_OP_COUNT || k < 0 || nin < 0)
		return -1;
	const char *s = optypes[op].operands, *tok = NULL;
	size_t toklen = 0;
	int side = k < nin ? 0 : 1, want = side ? k - nin : k, idx = 0, cur = 0;
	/* the token of operand k: the want-th of its side, else that side's last */
	for (const char *c = s; *c;) {
		while (*c == ' ')
			c++;
		if (!*c)
			break;
		if (*c == '>') {
			if (side == 0)
				break;
			cur = 1, idx = 0, c++;
			continue;
		}
		size_t n = strcspn(c, " >");
		if (cur == side && idx <= want)
			tok = c, toklen = n;
		idx += cur == side;
		c += n;
	}
	if (!tok)
		return -1;
	t->set = tok, t->setlen = (int)toklen;
	if (toklen == 2 && strncmp(tok, "to", 2) == 0) {
		t->to = 1;
		t->allowed = set_name_mask("any", 3);
		return 0;
	}
	if (toklen == 1 && tok[0] >= 'A' && tok[0] <= 'Z') {   /* a type variable: its set */
		t->var = tok[0];
		for (const char *v = optypes[op].vars; (v = strchr(v, tok[0])); v++)
			if (v[1] == ':' && (v == optypes[op].vars || v[-1] == ' ')) {
				t->set = v + 2, t->setlen = (int)strcspn(v + 2, " ");
				break;
			}
		if (t->set == tok)
			return -1;
	}
	t->allowed = set_mask(t->set, (size_t)t->setlen);
	return t->allowed ? 0 : -1;
}

/* The verifier asks for every operand of every instruction: the answers for the last (op, nin,
 * k) triples are kept (a direct-mapped table; a row's answer never changes). */
#define OPTYPE_CACHE 512
static _Thread_local struct {
	int op, nin, k, rc;      /* op -1: empty */
	PlanOperandType t;
} optype_cache[OPTYPE_CACHE];
static _Thread_local int optype_cache_init;

int plan_operand_type(RtOp op, int nin, int k, PlanOperandType *t)
{
	if (!optype_cache_init) {
		for (int i = 0; i < OPTYPE_CACHE; i++)
			optype_cache[i].op = -1;
		optype_cache_init = 1;
	}
	unsigned h = ((unsigned)op * 2654435761u ^ (unsigned)nin * 40503u ^ (unsigned)k * 9176u) % OPTYPE_CACHE;
	if (optype_cache[h].op == (int)op && optype_cache[h].nin == nin && optype_cache[h].k == k) {
		*t = optype_cache[h].t;
		return optype_cache[h].rc;
	}
	int rc = operand_type(op, nin, k, t);
	optype_cache[h].op = (int)op, optype_cache[h].nin = nin, optype_cache[h].k = k;
	optype_cache[h].rc = rc, optype_cache[h].t = *t;
	return rc;
}

/* Whether dtypes a and b are one type for a type variable: equal, or floats of one storage. */
static int same_type(DType a, DType b)
{
	return a == b || (rt_dtype_isfloat(a) && rt_dtype_isfloat(b) && rt_dtypes[a].storage == rt_dtypes[b].storage);
}

/* "i32 or i64", "f64, f32, tf32, ... or nvfp4": the dtypes of mask m into buf. */
static const char *mask_names(uint64_t m, char *buf, size_t n)
{
	size_t o = 0;
	int total = 0, i = 0;
	for (int d = 0; d < DT_COUNT; d++)
		total += (int)(m >> d & 1);
	buf[0] = 0;
	for (int d = 0; d < DT_COUNT && o + 16 < n; d++)
		if (m >> d & 1) {
			i++;
			o += (size_t)snprintf(buf + o, n - o, "%s%s", i == 1 ? "" : i == total ? " or " : ", ",
					      rt_dtype_name((DType)d));
		}
	return buf;
}

/* The dtype attribute `to` of a Cast names (a dtype name or an ONNX code); DT_INVALID if none. */
static DType attr_to(const PlanInstr *in)
{
	const Attr *a = rt_attr_find(&in->attrs, "to");
	if (!a)
		return DT_INVALID;
	return a->kind == ATTR_STRING ? rt_dtype_lookup(a->s) : a->kind == ATTR_INT ? rt_dtype_from_onnx(a->i) : DT_INVALID;
}

/* Every operand's dtype against its operator's row of ir/optypes.def. */
static int check_types(const Plan *p, const PlanInstr *in, RtError *e)
{
	const char *name = plan_op_name(in->op);
	int bound[26];      /* per type variable: the operand that fixed its type, or -1 */
	for (int v = 0; v < 26; v++)
		bound[v] = -1;
	for (int k = 0; k < in->nin + in->nout; k++) {
		int isout = k >= in->nin, j = isout ? k - in->nin : k, b = isout ? in->out[j] : in->in[j];
		if (b < 0)
			continue;
		PlanOperandType t;
		if (plan_operand_type(in->op, in->nin, k, &t) < 0)
			return rt_errorf(e, RT_EINTERNAL, "ir/optypes.def: the row of %s is malformed (operand %d)", name, k);
		const PlanBuffer *pb = &p->buffers[b];
		DType d = pb->dtype, to = t.to ? attr_to(in) : DT_INVALID;
		uint64_t allowed = t.allowed;
		char why[300], list[400];
		why[0] = 0;
		int by = t.var ? bound[t.var - 'A'] : -1, bo = 0, bj = 0;
		const PlanBuffer *bb = NULL;
		if (to != DT_INVALID) {
			allowed = UINT64_C(1) << to;
		} else if (by >= 0) {
			bo = by >= in->nin, bj = bo ? by - in->nin : by;
			bb = &p->buffers[bo ? in->out[bj] : in->in[bj]];
			uint64_t like = 0;
			for (uint64_t m = allowed; m; m &= m - 1) {    /* the allowed types only */
				int x = __builtin_ctzll(m);
				if (same_type((DType)x, bb->dtype))
					like |= UINT64_C(1) << x;
			}
			allowed = like;
		}
		if (!(allowed >> d & 1) && to != DT_INVALID)   /* the reason, written only for the error */
			snprintf(why, sizeof why, " (attribute to=%s)", rt_dtype_name(to));
		else if (!(allowed >> d & 1) && bb)
			snprintf(why, sizeof why, " (type %c, as %s %d '%s' is %s)", t.var, bo ? "output" : "input", bj,
				 bb->name, rt_dtype_name(bb->dtype));
		if (!(allowed >> d & 1))
			return verr(p, e, in->line, "%s %s %d ('%s') is %s, not %s %s%s", name, isout ? "output" : "input", j,
				    pb->name, rt_dtype_name(d), allowed & (allowed - 1) ? "one of its allowed types" :
				    "its allowed type", mask_names(allowed, list, sizeof list), why);
		if (t.var && by < 0)
			bound[t.var - 'A'] = k;
	}
	return 0;
}

/* The contract of op: an input below in_min is required (`_` only marks an absent optional
 * input), and every operand's dtype (check_types). */
static int check_roles(const Plan *p, const PlanInstr *in, RtError *e)
{
	const char *name = plan_op_name(in->op);
	for (int k = 0; k < in->nin && k < arity[in->op].imin; k++)
		if (in->in[k] < 0)
			return verr(p, e, in->line, "%s input %d is required: '_' marks only an absent optional input "
				    "(inputs %d and up of %s)", name, k, arity[in->op].imin, name);
	return check_types(p, in, e);
}

static int check_kernel(const Plan *p, const PlanStream *s, const PlanInstr *in, RtError *e)
{
	if (in->op < 0 || in->op >= RT_OP_COUNT)
		return verr(p, e, in->line, "kernel with an invalid operator");
	const char *name = plan_op_name(in->op);
	if (in->nin < arity[in->op].imin || (arity[in->op].imax >= 0 && in->nin > arity[in->op].imax))
		return verr(p, e, in->line, "%s takes %d to %d inputs, not %d", name, arity[in->op].imin,
			    arity[in->op].imax, in->nin);
	if (in->nout < arity[in->op].omin || (arity[in->op].omax >= 0 && in->nout > arity[in->op].omax) || in->nout < 1)
		return verr(p, e, in->line, "%s produces %d to %d outputs, not %d", name, arity[in->op].omin,
			    arity[in->op].omax, in->nout);
	if (in->op == RT_OP_Call)
		return verr(p, e, in->line, "Call cannot be a kernel: targets flatten calls");
	for (int k = 0; k < in->nin + in->nout; k++) {
		int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
		if (b >= 0 && buf_device(p, b) != s->device)
			return verr(p, e, in->line, "%s operand '%s' is on device '%s', not on the stream's device '%s'",
				    name, p->buffers[b].name, p->devices[buf_device(p, b)].name, p->devices[s->device].name);
	}
	if (in->opts.mma_in < DT_INVALID || in->opts.mma_in >= DT_COUNT)
		return verr(p, e, in->line, "invalid mma_in format");
	if (check_roles(p, in, e) < 0)
		return -1;
	return check_fp8_scale(p, in, e);
}

static int same_data(const PlanBuffer *a, const PlanBuffer *b)
{
	return a->dtype == b->dtype && plan_buffer_numel(a) == plan_buffer_numel(b);
}

static int check_copy(const Plan *p, const PlanStream *s, const PlanInstr *in, RtError *e)
{
	if (in->nin != 1 || in->nout != 1)
		return verr(p, e, in->line, "copy takes one input and one output");
	const PlanBuffer *a = &p->buffers[in->in[0]], *b = &p->buffers[in->out[0]];
	if (!same_data(a, b))
		return verr(p, e, in->line, "copy from '%s' to '%s': dtypes or element counts differ", a->name, b->name);
	int da = buf_device(p, in->in[0]), db = buf_device(p, in->out[0]);
	if (da != s->device && db != s->device)
		return verr(p, e, in->line, "copy on stream '%s' touches neither end on its device", s->name);
	if (da != db && in->link < 0)
		return verr(p, e, in->line, "copy from device '%s' to '%s' needs a link", p->devices[da].name,
			    p->devices[db].name);
	if (in->link >= 0) {
		const PlanLink *l = &p->links[in->link];
		if (!((l->src == da && l->dst == db) || (l->src == db && l->dst == da)))
			return verr(p, e, in->line, "link '%s' does not join devices '%s' and '%s'", l->name,
				    p->devices[da].name, p->devices[db].name);
	}
	return 0;
}

static int check_collective(const Plan *p, const PlanStream *s, const PlanInstr *in, RtError *e)
{
	if (in->coll < 0 || in->coll >= PC_COUNT || in->nin < 1 || in->nin != in->nout)
		return verr(p, e, in->line, "collective needs as many outputs as inputs (one per rank)");
	const PlanBuffer *a = &p->buffers[in->in[0]];
	int on_stream = 0;
	for (int i = 0; i < in->nin; i++) {
		const PlanBuffer *x = &p->buffers[in->in[i]], *y = &p->buffers[in->out[i]];
		/* Rank i contributes in[i] and holds out[i] on one device; ranks are distinct devices. */
		int d = buf_device(p, in->in[i]);
		if (buf_device(p, in->out[i]) != d)
			return verr(p, e, in->line, "%s rank %d: input '%s' is on device '%s' but output '%s' on '%s'",
				    plan_coll_names[in->coll], i, x->name, p->devices[d].name, y->name,
				    p->devices[buf_device(p, in->out[i])].name);
		for (int j = 0; j < i; j++)
			if (buf_device(p, in->in[j]) == d)
				return verr(p, e, in->line, "%s ranks %d and %d are both on device '%s'",
					    plan_coll_names[in->coll], j, i, p->devices[d].name);
		on_stream |= d == s->device;
		int64_t ny = plan_buffer_numel(y), nx = plan_buffer_numel(x);
		int rs = in->coll == PC_REDUCESCATTER;
		int ok = same_data(x, a) && x->dtype == y->dtype &&
			 ny == (in->coll == PC_ALLGATHER ? nx * in->nin : rs ? nx / in->nin : nx);
		if (ok && (in->coll == PC_ALLTOALL || rs)) {
			int64_t ax = rt_attr_int(&in->attrs, "axis", 0);
			ax = ax < 0 ? ax + x->rank : ax;
			ok = x->rank >= 1 && ax >= 0 && ax < x->rank && x->dims[ax] % in->nin == 0;
			/* reducescatter: output j is chunk j of the sum, its dims the inputs' but axis / n */
			for (int k = 0; ok && rs && k < x->rank; k++)
				ok = y->rank == x->rank && y->dims[k] == (k == ax ? x->dims[k] / in->nin : x->dims[k]);
		}
		if (!ok)
			return verr(p, e, in->line, "%s rank %d: '%s' -> '%s' has mismatched dtype or size",
				    plan_coll_names[in->coll], i, x->name, y->name);
	}
	if (!on_stream)
		return verr(p, e, in->line, "%s on stream '%s': no rank is on the stream's device '%s'",
			    plan_coll_names[in->coll], s->name, p->devices[s->device].name);
	if (in->nin > 1 && in->link < 0)
		return verr(p, e, in->line, "%s across %d ranks needs a link", plan_coll_names[in->coll], in->nin);
	const char *spec = rt_attr_str(&in->attrs, "compress", NULL);
	if (spec) {        /* compressed collectives (runtime/codec.h) */
		RtCodec c;
		char why[160];
		if (in->coll != PC_ALLREDUCE)
			return verr(p, e, in->line, "%s has no compressed form: a.compress applies to allreduce",
				    plan_coll_names[in->coll]);
		if (rt_codec_parse(spec, &c, why, sizeof why) < 0)
			return verr(p, e, in->line, "a.compress: %s", why);
		if (!rt_dtype_isfloat(a->dtype))
			return verr(p, e, in->line, "a.compress: allreduce of %s values: codecs code floats",
				    rt_dtypes[a->dtype].name);
	}
	if (in->nin > 1) {     /* the link that prices it joins two of the ranks' devices */
		const PlanLink *l = &p->links[in->link];
		int src = 0, dst = 0;
		for (int i = 0; i < in->nin; i++) {
			src |= buf_device(p, in->in[i]) == l->src;
			dst |= buf_device(p, in->in[i]) == l->dst;
		}
		if (!src || !dst)
			return verr(p, e, in->line, "link '%s' does not join two devices of the %s's ranks", l->name,
				    plan_coll_names[in->coll]);
	}
	return 0;
}

static int check_instr(const Plan *p, const PlanStream *s, const PlanInstr *in, RtError *e)
{
	if (in->kind < 0 || in->kind >= PI_COUNT)
		return verr(p, e, in->line, "invalid instruction kind");
	if (in->link < -1 || in->link >= p->nlinks || in->unit < -1 || in->unit >= p->nunits)
		return verr(p, e, in->line, "undefined link or unit");
	if (in->unit >= 0 && p->units[in->unit].device != s->device)
		return verr(p, e, in->line, "unit '%s' is not on the stream's device", p->units[in->unit].name);
	if (in->cycle >= 0 && in->cycle > INT64_MAX - (in->dur > 0 ? in->dur : 1))
		return verr(p, e, in->line, "cycle %" PRId64 " + dur %" PRId64 " overflows the cycle counter (2^63)",
			    in->cycle, in->dur > 0 ? in->dur : 1);
	if (in->kind == PI_RECORD || in->kind == PI_WAIT)
		return in->event < 0 || in->event >= p->nevents ? verr(p, e, in->line, "undefined event") : 0;
	if (check_operands(p, in, e) < 0)
		return -1;
	if (in->kind == PI_KERNEL)
		return check_kernel(p, s, in, e);
	if (in->kind == PI_COPY)
		return check_copy(p, s, in, e);
	return check_collective(p, s, in, e);
}

static int check_streams(const Plan *p, RtError *e)
{
	int *recorded = rt_calloc((size_t)p->nevents + 1, sizeof *recorded);
	if (!recorded)
		return rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan");
	int rc = 0;
	for (int i = 0; i < p->nstreams && rc == 0; i++) {
		const PlanStream *s = &p->streams[i];
		if (s->device < 0 || s->device >= p->ndevices)
			rc = verr(p, e, s->line, "stream '%s' is on an undefined device", s->name);
		for (int j = 0; j < s->nins && rc == 0; j++) {
			const PlanInstr *in = &s->ins[j];
			rc = check_instr(p, s, in, e);
			if (rc == 0 && in->kind == PI_RECORD && recorded[in->event]++)
				rc = verr(p, e, in->line, "event '%s' is recorded twice", p->events[in->event]);
		}
	}
	for (int i = 0; i < p->nstreams && rc == 0; i++)
		for (int j = 0; j < p->streams[i].nins && rc == 0; j++) {
			const PlanInstr *in = &p->streams[i].ins[j];
			if (in->kind == PI_WAIT && !recorded[in->event])
				rc = verr(p, e, in->line, "wait on event '%s', which no stream records",
					  p->events[in->event]);
		}
	rt_free(recorded);
	return rc;
}

/* ---- execution order ---- */
/* Streams that wait: per event a list of the streams whose head waits on it (next[] links). */
typedef struct Waits {
	int *head, *next;
} Waits;

static void park(Waits *w, int ev, int s)
{
	w->next[s] = w->head[ev];
	w->head[ev] = s;
}

/* The head of stream s waits on an event not yet recorded. */
static int blocked(const Plan *p, const int *pc, const unsigned char *done, int s)
{
	const PlanInstr *in = &p->streams[s].ins[pc[s]];
	return in->kind == PI_WAIT && !done[in->event];
}

/* The order key of stream s's head in a static plan: its issue cycle, or (a record or wait) the
 * cycle of the instruction before it in its stream. */
static int64_t head_key(const Plan *p, const int *pc, const int64_t *key, int s)
{
	int64_t c = p->streams[s].ins[pc[s]].cycle;
	return c >= 0 ? c : key[s];
}

/* A static schedule runs in issue-cycle order across its streams: each step takes the runnable
 * stream head with the lowest key (ties: the lower stream), so a value's readers on every chip
 * run before the producer of a later tenant of its bytes.  Runnable heads wait in a heap, the
 * others on their event's list: O(n log streams). */
static int order_static(const Plan *p, int *pc, unsigned char *done, Waits *w, PlanStep *order, int *n)
{
	int64_t *key = rt_calloc((size_t)p->nstreams + 1, sizeof *key);
	RtHeap h = { 0 };
	int rc = key ? 0 : -1;
	for (int s = 0; s < p->nstreams && rc == 0; s++)
		if (p->streams[s].nins && blocked(p, pc, done, s))
			park(w, p->streams[s].ins[0].event, s);
		else if (p->streams[s].nins)
			rc = rt_heap_push(&h, head_key(p, pc, key, s), s);
	while (rc == 0 && h.n) {
		int s = rt_heap_pop(&h).id;
		const PlanInstr *in = &p->streams[s].ins[pc[s]];
		if (in->cycle >= 0)
			key[s] = in->cycle;
		order[(*n)++] = (PlanStep){ s, pc[s]++ };
		if (in->kind == PI_RECORD && !done[in->event]) {
			done[in->event] = 1;
			for (int t = w->head[in->event]; t >= 0 && rc == 0; t = w->next[t])
				rc = rt_heap_push(&h, head_key(p, pc, key, t), t);
			w->head[in->event] = -1;
		}
		if (rc == 0 && pc[s] < p->streams[s].nins) {
			if (blocked(p, pc, done, s))
				park(w, p->streams[s].ins[pc[s]].event, s);
			else
				rc = rt_heap_push(&h, head_key(p, pc, key, s), s);
		}
	}
	rt_heap_free(&h);
	rt_free(key);
	return rc;
}

/* Otherwise: rounds over the streams in file order, each run until it waits on an event not yet
 * recorded.  A stream released by a record is visited later in the same round when it comes
 * after the recording stream, else in the next round: the two heaps hold the streams left to
 * visit in this round and the next. */
static int order_rounds(const Plan *p, int *pc, unsigned char *done, Waits *w, PlanStep *order, int *n)
{
	RtHeap cur = { 0 }, nxt = { 0 };
	int rc = 0;
	for (int s = 0; s < p->nstreams && rc == 0; s++)
		if (p->streams[s].nins)
			rc = rt_heap_push(&cur, s, s);
	while (rc == 0 && (cur.n || nxt.n)) {
		if (!cur.n) {
			RtHeap t = cur;
			cur = nxt, nxt = t;
		}
		int s = rt_heap_pop(&cur).id;
		const PlanStream *st = &p->streams[s];
		while (pc[s] < st->nins && rc == 0) {
			const PlanInstr *in = &st->ins[pc[s]];
			if (blocked(p, pc, done, s)) {
				park(w, in->event, s);
				break;
			}
			order[(*n)++] = (PlanStep){ s, pc[s]++ };
			if (in->kind == PI_RECORD && !done[in->event]) {
				done[in->event] = 1;
				for (int t = w->head[in->event]; t >= 0 && rc == 0; t = w->next[t])
					rc = rt_heap_push(t > s ? &cur : &nxt, t, t);
				w->head[in->event] = -1;
			}
		}
	}
	rt_heap_free(&cur);
	rt_heap_free(&nxt);
	return rc;
}

int plan_linearize(const Plan *p, PlanStep **order, int *n, RtError *e)
{
	int64_t total = 0;
	int stat = 0;
	for (int i = 0; i < p->nstreams; i++) {
		total += p->streams[i].nins;
		for (int j = 0; j < p->streams[i].nins && !stat; j++)
			stat = p->streams[i].ins[j].cycle >= 0;
	}
	*n = 0;
	*order = NULL;
	if (total > INT32_MAX - 1)
		return verr(p, e, 0, "the plan has %" PRId64 " instructions (at most %d)", total, INT32_MAX - 1);
	int *pc = rt_calloc((size_t)p->nstreams + 1, sizeof *pc);
	unsigned char *done = rt_calloc((size_t)p->nevents + 1, 1);
	Waits w = { rt_malloc(((size_t)p->nevents + 1) * sizeof *w.head), rt_malloc(((size_t)p->nstreams + 1) * sizeof *w.next) };
	*order = rt_malloc(((size_t)total + 1) * sizeof **order);
	int rc = pc && done && w.head && w.next && *order ? 0 : -1;
	for (int i = 0; rc == 0 && i < p->nevents; i++)
		w.head[i] = -1;
	if (rc == 0)
		rc = stat ? order_static(p, pc, done, &w, *order, n) : order_rounds(p, pc, done, &w, *order, n);
	if (rc < 0)
		rt_errorf(e, RT_ENOMEM, "out of memory ordering the plan");
	for (int s = 0; s < p->nstreams && *n < total && rc == 0; s++)
		if (pc[s] < p->streams[s].nins && p->streams[s].ins[pc[s]].kind == PI_WAIT) {
			const PlanInstr *in = &p->streams[s].ins[pc[s]];
			rc = verr(p, e, in->line, "deadlock: stream '%s' waits on event '%s', which can never be "
				  "recorded", p->streams[s].name, p->events[in->event]);
		}
	rt_free(pc);
	rt_free(done);
	rt_free(w.head);
	rt_free(w.next);
	if (rc < 0) {
		rt_free(*order);
		*order = NULL;
	}
	return rc;
}

int plan_liveness(const Plan *p, const PlanStep *order, int n, int **first, int **last, RtError *e)
{
	*first = rt_malloc(((size_t)p->nbuffers + 1) * sizeof **first);
	*last = rt_malloc(((size_t)p->nbuffers + 1) * sizeof **last);
	if (!*first || !*last) {
		rt_free(*first), rt_free(*last), *first = *last = NULL;
		return rt_errorf(e, RT_ENOMEM, "out of memory computing liveness");
	}
	for (int b = 0; b < p->nbuffers; b++)
		(*first)[b] = INT32_MAX, (*last)[b] = -2;
	for (int i = 0; i < p->nconsts; i++)
		(*first)[p->consts[i].buffer] = -1, (*last)[p->consts[i].buffer] = n;
	for (int i = 0; i < p->ninputs; i++)
		(*first)[p->inputs[i].buffer] = -1;
	for (int i = 0; i < p->noutputs; i++)
		(*last)[p->outputs[i].buffer] = n;
	for (int t = 0; t < n; t++) {
		const PlanInstr *in = &p->streams[order[t].stream].ins[order[t].index];
		for (int k = 0; k < in->nin + in->nout; k++) {
			int b = k < in->nin ? in->in[k] : in->out[k - in->nin];
			if (b < 0)
				continue;
			if ((*first)[b] > t)
				(*first)[b] = t;
			if ((*last)[b] < t)
				(*last)[b] = t;
		}
	}
	return 0;
}

/* Every buffer an instruction reads was bound (input, constant) or written by an earlier step;
 * every plan output is produced. */
static int check_dataflow(const Plan *p, const PlanStep *order, int n, const unsigned char *role, RtError *e)
{
	unsigned char *ready = rt_malloc((size_t)p->nbuffers + 1);
	if (!ready)
		return rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan");
	for (int b = 0; b < p->nbuffers; b++)
		ready[b] = role[b] != 0;
	int rc = 0;
	for (int t = 0; t < n && rc == 0; t++) {
		const PlanInstr *in = &p->streams[order[t].stream].ins[order[t].index];
		for (int k = 0; k < in->nin && rc == 0; k++)
			if (in->in[k] >= 0 && !ready[in->in[k]])
				rc = verr(p, e, in->line, "buffer '%s' is read before it is written",
					  p->buffers[in->in[k]].name);
		for (int k = 0; k < in->nout && rc == 0; k++) {
			if (role[in->out[k]] == 2)
				rc = verr(p, e, in->line, "constant buffer '%s' is overwritten", p->buffers[in->out[k]].name);
			ready[in->out[k]] = 1;
		}
	}
	for (int i = 0; i < p->noutputs && rc == 0; i++)
		if (!ready[p->outputs[i].buffer])
			rc = verr(p, e, p->outputs[i].line, "output '%s' is never written", p->outputs[i].name);
	rt_free(ready);
	return rc;
}

/* ---- no two live buffers share bytes ---- */
/* A sweep in order of first use over one space's buffers: a segment tree over the space's
 * compressed byte addresses keeps, per range, the buffer with the latest last use among those
 * already placed; buffer x conflicts when one placed over its bytes is still live at x's first
 * use.  O(n log n) per space (memory reuse puts thousands of buffers at one offset).  The tree
 * is walked bottom up (leaves at n + i): a range [a, b) is the usual O(log n) nodes between its
 * two end leaves, and every node above one of them lies on the path from an end leaf to the
 * root. */
typedef struct Seg {
	int64_t *tag, *sub;      /* last use, packed with the buffer: (last + 2) << 32 | buffer */
	int n;                   /* leaves, a power of two */
} Seg;

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The latest value written over any byte of [a, b): the covering nodes' subtrees, and the
 * values written whole over the nodes above the two end leaves. */
static int64_t seg_query(const Seg *t, int a, int b)
{
	int64_t r = -1;
	for (int lo = a + t->n, hi = b + t->n; lo < hi; lo >>= 1, hi >>= 1) {
		if (lo & 1)
			r = max64(r, t->sub[lo++]);
		if (hi & 1)
			r = max64(r, t->sub[--hi]);
	}
	for (int x = (a + t->n) >> 1; x; x >>= 1)
		r = max64(r, t->tag[x]);
	for (int x = (b - 1 + t->n) >> 1; x; x >>= 1)
		r = max64(r, t->tag[x]);
	return r;
}

/* v written over [a, b): on the covering nodes whole, and into every subtree above them. */
static void seg_update(Seg *t, int a, int b, int64_t v)
{
	for (int lo = a + t->n, hi = b + t->n; lo < hi; lo >>= 1, hi >>= 1) {
		if (lo & 1)
			t->tag[lo] = max64(t->tag[lo], v), t->sub[lo] = max64(t->sub[lo], v), lo++;
		if (hi & 1)
			--hi, t->tag[hi] = max64(t->tag[hi], v), t->sub[hi] = max64(t->sub[hi], v);
	}
	for (int x = (a + t->n) >> 1; x; x >>= 1)
		t->sub[x] = max64(t->sub[x], v);
	for (int x = (b - 1 + t->n) >> 1; x; x >>= 1)
		t->sub[x] = max64(t->sub[x], v);
}

/* Sorting without qsort's comparator calls (a 64-device plan has 180,000 buffers): idx[0..n),
 * ascending, by (space, first step, index) as two stable counting passes; tmp holds n ints and
 * cnt max(nspaces, nsteps + 2) + 1. */
static void sort_space_first(const Plan *p, int *idx, int n, const int *first, int nsteps, int *tmp, int *cnt)
{
	for (int pass = 0; pass < 2; pass++) {   /* first step (-1 .. nsteps), then space: stable */
		int range = pass ? p->nspaces : nsteps + 2;
		memset(cnt, 0, sizeof *cnt * ((size_t)range + 1));
		for (int i = 0; i < n; i++)
			cnt[1 + (pass ? p->buffers[idx[i]].space : first[idx[i]] + 1)]++;
		for (int k = 0; k < range; k++)
			cnt[k + 1] += cnt[k];
		for (int i = 0; i < n; i++)
			tmp[cnt[pass ? p->buffers[idx[i]].space : first[idx[i]] + 1]++] = idx[i];
		memcpy(idx, tmp, sizeof *idx * (size_t)n);
	}
}

/* a[0..n) ascending: insertion sort for a few, else least significant digit radix sort on bytes
 * (sign bit flipped), a pass skipped when every key has the same byte there; tmp holds n values.
 * Called once per memory space (a 4,000-chip plan has 4,000), so its cost follows n alone. */
static void sort_i64(int64_t *a, int n, int64_t *tmp)
{
	if (n <= 32) {
		for (int i = 1; i < n; i++) {
			int64_t x = a[i];
			int j = i;
			for (; j > 0 && a[j - 1] > x; j--)
				a[j] = a[j - 1];
			a[j] = x;
		}
		return;
	}
	for (int shift = 0; shift < 64; shift += 8) {
		int cnt[257] = { 0 };
		for (int i = 0; i < n; i++)
			cnt[1 + (int)(((uint64_t)a[i] ^ 0x8000000000000000ull) >> shift & 0xff)]++;
		int same = 0;
		for (int k = 0; k < 256 && !same; k++)
			same = cnt[k + 1] == n;
		if (same)
			continue;
		for (int k = 0; k < 256; k++)
			cnt[k + 1] += cnt[k];
		for (int i = 0; i < n; i++)
			tmp[cnt[((uint64_t)a[i] ^ 0x8000000000000000ull) >> shift & 0xff]++] = a[i];
		memcpy(a, tmp, sizeof *a * (size_t)n);
	}
}

/* Index of v in the sorted unique coordinates c[0..n). */
static int coord(const int64_t *c, int n, int64_t v)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (c[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Checks the buffers idx[0..n) of one space. */
static int overlap_space(const Plan *p, const int *idx, int n, const int *first, const int *last, int64_t *c,
			 int64_t *ctmp, Seg *t, RtError *e)
{
	int nc = 0;
	for (int i = 0; i < n; i++)
		c[nc++] = p->buffers[idx[i]].offset, c[nc++] = p->buffers[idx[i]].offset + p->buffers[idx[i]].size;
	sort_i64(c, nc, ctmp);
	int m = 0;
	for (int i = 0; i < nc; i++)
		if (!m || c[i] != c[m - 1])
			c[m++] = c[i];
	int segs = m > 1 ? m - 1 : 1;
	for (t->n = 1; t->n < segs; t->n *= 2)
		;
	for (int i = 0; i < 2 * t->n; i++)
		t->tag[i] = t->sub[i] = -1;
	for (int i = 0; i < n; i++) {
		int x = idx[i];
		const PlanBuffer *bx = &p->buffers[x];
		int a = coord(c, m, bx->offset), b = coord(c, m, bx->offset + bx->size);
		int64_t hit = a < b ? seg_query(t, a, b) : -1;
		if (hit >= 0 && (hit >> 32) - 2 >= first[x]) {
			int y = (int)(hit & 0xffffffff);
			const PlanBuffer *late = x > y ? bx : &p->buffers[y], *early = x > y ? &p->buffers[y] : bx;
			return verr(p, e, late->line, "buffer '%s' overlaps buffer '%s' (line %d) in space '%s' while both "
				    "are live", late->name, early->name, early->line, p->spaces[bx->space].name);
		}
		if (a < b)
			seg_update(t, a, b, ((int64_t)last[x] + 2) << 32 | x);
	}
	return 0;
}

static int check_overlap(const Plan *p, const int *first, const int *last, int nsteps, RtError *e)
{
	int *idx = rt_malloc(((size_t)p->nbuffers + 1) * sizeof *idx), n = 0;
	int *tmp = rt_malloc(((size_t)p->nbuffers + 1) * sizeof *tmp);
	int *cnt = rt_malloc(((size_t)(p->nspaces > nsteps + 2 ? p->nspaces : nsteps + 2) + 1) * sizeof *cnt);
	int64_t *c = rt_malloc(((size_t)p->nbuffers * 2 + 2) * sizeof *c), *ctmp = rt_malloc(((size_t)p->nbuffers * 2 + 2) * sizeof *ctmp);
	Seg t = { rt_malloc(((size_t)p->nbuffers * 8 + 8) * sizeof *t.tag), rt_malloc(((size_t)p->nbuffers * 8 + 8) * sizeof *t.sub), 0 };
	int rc = idx && tmp && cnt && c && ctmp && t.tag && t.sub ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan");
	for (int b = 0; rc == 0 && b < p->nbuffers; b++)
		if (p->buffers[b].size > 0 && first[b] <= last[b])
			idx[n++] = b;
	if (rc == 0)
		sort_space_first(p, idx, n, first, nsteps, tmp, cnt);
	for (int i = 0, j; rc == 0 && i < n; i = j) {
		for (j = i; j < n && p->buffers[idx[j]].space == p->buffers[idx[i]].space; j++)
			;
		rc = overlap_space(p, idx + i, j - i, first, last, c, ctmp, &t, e);
	}
	rt_free(idx), rt_free(tmp), rt_free(cnt), rt_free(c), rt_free(ctmp), rt_free(t.tag), rt_free(t.sub);
	return rc;
}

/* ---- static schedules: issue cycles ---- */
/* The resource a static instruction occupies: its unit (kernels, on-device copies) as
 * 0..nunits-1, or one direction of its link (copies between devices) as nunits + 2*link + dir
 * (dir 0: the link's src -> dst).  -1 when it names none. */
static int static_resource(const Plan *p, const PlanStream *s, const PlanInstr *in)
{
	if (in->kind == PI_COPY && in->link >= 0) {
		const PlanLink *l = &p->links[in->link];
		return p->nunits + 2 * in->link + (buf_device(p, in->in[0]) == l->src ? 0 : 1);
	}
	if (in->kind == PI_COLLECTIVE && in->link >= 0)
		return p->nunits + 2 * in->link;
	return in->unit >= 0 ? in->unit : plan_default_unit(p, s->device, in->kind);
}

/* "unit 'lpu.mxm.e'" or "link 'c2c.lpu0-lpu1' (lpu0 -> lpu1)" into buf. */
static const char *resource_name(const Plan *p, int r, char *buf, size_t n)
{
	if (r < p->nunits) {
		snprintf(buf, n, "unit '%s'", p->units[r].name);
		return buf;
	}
	const PlanLink *l = &p->links[(r - p->nunits) / 2];
	int dir = (r - p->nunits) % 2;
	snprintf(buf, n, "link '%s' (%s -> %s)", l->name, p->devices[dir ? l->dst : l->src].name,
		 p->devices[dir ? l->src : l->dst].name);
	return buf;
}

static const Plan *sort_sp;
static const PlanStep *sort_steps;
static int by_issue(const void *x, const void *y)
{
	const PlanStep *a = &sort_steps[*(const int *)x], *b = &sort_steps[*(const int *)y];
	int64_t ca = sort_sp->streams[a->stream].ins[a->index].cycle, cb = sort_sp->streams[b->stream].ins[b->index].cycle;
	if (ca != cb)
		return ca < cb ? -1 : 1;
	return *(const int *)x - *(const int *)y;
}

/* No two instructions occupy one unit, or one direction of one link, in overlapping cycles
 * (checked in issue-cycle order over every stream: the cycle counter is global, the chips'
 * counters aligned as in ISCA 2022's multi-chip TSP). */
static int check_occupancy(const Plan *p, const PlanStep *order, int n, RtError *e)
{
	int nres = p->nunits + 2 * p->nlinks;
	int64_t *busy = rt_malloc(((size_t)nres + 1) * sizeof *busy);
	int *idx = rt_malloc(((size_t)n + 1) * sizeof *idx);
	if (!busy || !idx) {
		rt_free(busy), rt_free(idx);
		return rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan");
	}
	for (int r = 0; r < nres; r++)
		busy[r] = 0;
	int m = 0;
	for (int t = 0; t < n; t++)
		if (p->streams[order[t].stream].ins[order[t].index].cycle >= 0)
			idx[m++] = t;
	sort_sp = p, sort_steps = order;
	qsort(idx, (size_t)m, sizeof *idx, by_issue);
	int rc = 0;
	for (int i = 0; i < m && rc == 0; i++) {
		const PlanStream *s = &p->streams[order[idx[i]].stream];
		const PlanInstr *in = &s->ins[order[idx[i]].index];
		if (in->kind == PI_RECORD || in->kind == PI_WAIT)
			continue;
		int r = static_resource(p, s, in);
		char name[256];
		if (r < 0)
			rc = verr(p, e, in->line, "an instruction with an issue cycle needs a unit");
		else if (in->cycle < busy[r])
			rc = verr(p, e, in->line, "%s is busy until cycle %" PRId64 ", %s at %" PRId64 " conflicts",
				  resource_name(p, r, name, sizeof name), busy[r], r < p->nunits ? "issue" : "transfer",
				  in->cycle);
		else
			busy[r] = in->cycle + (in->dur > 0 ? in->dur : 1);
	}
	rt_free(busy);
	rt_free(idx);
	return rc;
}

/* No instruction reads a buffer before its producer's cycle + dur; for a buffer that came over
 * a link, that is its arrival.  Checked over the execution order, so the producer is the last
 * writer before the read. */
static int check_static(const Plan *p, const PlanStep *order, int n, RtError *e)
{
	int64_t *ready = rt_malloc(((size_t)p->nbuffers + 1) * sizeof *ready);
	int *via = rt_malloc(((size_t)p->nbuffers + 1) * sizeof *via);
	if (!ready || !via) {
		rt_free(ready), rt_free(via);
		return rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan");
	}
	for (int b = 0; b < p->nbuffers; b++)
		ready[b] = 0, via[b] = -1;
	int rc = check_occupancy(p, order, n, e);
	for (int t = 0; t < n && rc == 0; t++) {
		const PlanStream *s = &p->streams[order[t].stream];
		const PlanInstr *in = &s->ins[order[t].index];
		if (in->cycle < 0 || in->kind == PI_RECORD || in->kind == PI_WAIT)
			continue;
		int r = static_resource(p, s, in);
		char name[256], from[300];
		for (int k = 0; k < in->nin && rc == 0; k++) {
			int b = in->in[k];
			if (b < 0 || in->cycle >= ready[b])
				continue;
			from[0] = 0;
			if (via[b] >= 0)
				snprintf(from, sizeof from, " (it arrives over %s)", resource_name(p, via[b], name, sizeof name));
			rc = verr(p, e, in->line, "'%s' is read at cycle %" PRId64 " on %s but ready only at cycle %" PRId64 "%s",
				  p->buffers[b].name, in->cycle, resource_name(p, r, name, sizeof name), ready[b], from);
		}
		for (int k = 0; k < in->nout && rc == 0; k++) {
			ready[in->out[k]] = in->cycle + (in->dur > 0 ? in->dur : 1);
			via[in->out[k]] = r >= p->nunits ? r : -1;
		}
	}
	rt_free(ready);
	rt_free(via);
	return rc;
}

int plan_verify(const Plan *p, RtError *e)
{
	if (!p->target || !p->machine)
		return verr(p, e, 0, "the plan lacks a target or machine");
	unsigned char *role = rt_calloc((size_t)p->nbuffers + 1, 1);
	if (!role)
		return rt_errorf(e, RT_ENOMEM, "out of memory verifying the plan");
	PlanStep *order = NULL;
	int *first = NULL, *last = NULL, n = 0;
	int rc = check_machine(p, e);
	if (rc == 0)
		rc = check_data(p, role, e);
	if (rc == 0)
		rc = check_streams(p, e);
	if (rc == 0)
		rc = plan_linearize(p, &order, &n, e);
	if (rc == 0)
		rc = check_dataflow(p, order, n, role, e);
	if (rc == 0)
		rc = plan_liveness(p, order, n, &first, &last, e);
	if (rc == 0)
		rc = check_overlap(p, first, last, n, e);
	if (rc == 0)
		rc = check_static(p, order, n, e);
	rt_free(role);
	rt_free(order);
	rt_free(first);
	rt_free(last);
	return rc;
}
