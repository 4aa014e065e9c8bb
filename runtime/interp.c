/* runtime/interp.c: the plan interpreter.  One dispatch loop over the plan's uniform
 * instructions in plan_linearize order: kernels call rt_kernel(op) with the instruction's
 * attributes and RtExecOpts and their outputs are checked against the planned buffers (dtype
 * and shape); copies move values; collectives combine the values of their ranks; events order
 * streams (the order already honours them).  Values live per buffer (the verifier guarantees no
 * two live buffers share bytes, so this is faithful to the memory plan) and are released after
 * their last use.  Inputs are bound from RtBinding tensors (converted and rounded to the
 * buffer's dtype) or seeded random data; constants are bound once per session (RtSession) from
 * seeded initialisers (runtime/random.h, their call instance mixed in), inline data, or
 * .npy/.safetensors files mapped read-only and used in place when their layout allows, and every
 * run borrows them.
 * Requires runtime/kernels.h, numerics.h, random.h, npy.h, safetensors.h. */
#include "runtime/interp.h"
#include "runtime/codec.h"
#include "runtime/ewchain.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/npy.h"
#include "runtime/numerics.h"
#include "runtime/random.h"
#include "runtime/safetensors.h"

/* A plan loaded for repeated runs (interp.h): the bound value of every constant, kept across
 * runs; files mapped once. */
typedef struct SessFile {
	char *path;
	RtMapped map;
	RtSafetensors *st;       /* parsed header of a safetensors file, or NULL */
} SessFile;

struct RtSession {
	const Plan *p;
	RtTensor *consts;        /* per buffer: a constant's bound value; data NULL until loaded */
	RtPack *packs;           /* per buffer: a constant's packed copy for the matrix-product kernels */
	SessFile *files; int nfiles;
	RtLoadStats stats;
	/* what every run of the plan computes alike, from the first run on: the simulated timing,
	 * the execution order and each buffer's first and last step */
	RtTiming timing; int timed;
	PlanStep *order; int norder, *first, *last;
	int *chain;              /* per step: the length of the elementwise chain it starts, or NULL */
};

typedef struct Vm {
	const Plan *p;
	const RtRunOpts *o;
	RtTensor *val;           /* per buffer; data NULL when not set */
	RtError *e;
	RtSession *s;
	int64_t *room;           /* per step: host bytes its kernel may take (NULL: no budget) */
	int step;
	const RtEpilogue *epi;   /* the next kernel's epilogue (a fused elementwise chain), or NULL */
	int nfused;              /* kernels run with their chain fused (RtRun.fused) */
} Vm;

static int at_line(const Vm *m, int line, RtError *e)
{
	char msg[sizeof e->msg];
	snprintf(msg, sizeof msg, "%s", e->msg);
	return rt_errorf(e, e->code ? e->code : RT_EUSER, "%s:%d: error: %s", m->p->file ? m->p->file : "<plan>",
			 line, msg);
}

static int alloc_buffer(const Plan *p, int b, RtTensor *t, RtError *e)
{
	const PlanBuffer *pb = &p->buffers[b];
	return rt_tensor_alloc(t, pb->dtype, pb->rank, pb->dims, e);
}

/* Whether buffer b lives on a device this process holds (every buffer without RtRunOpts.dist). */
static int local_buf(const Plan *p, const RtRunOpts *o, int b)
{
	return !o->dist || o->dist->local[p->spaces[p->buffers[b].space].device];
}

/* Rounds t's values to its dtype's grid (narrow floats and block formats; others unchanged).
 * Formats with infinities (bf16, f16, e5m2) keep them and overflow to them, as the kernels do
 * (kn_finish); formats without (e4m3, FP6, FP4, block formats) saturate, as ONNX Cast's default
 * saturate=1 and OCP MX v1.0 define the conversion into them. */
static void round_to_dtype(RtTensor *t)
{
	if (rt_dtypes[t->dtype].storage != S_F32 || t->dtype == DT_F32)
		return;
	int sat = rt_dtypes[t->dtype].kind == K_BLOCK || !isinf(rt_round(t->dtype, INFINITY, 0));
	QuantOpts q = { SCALE_FLOOR, sat, 0 };
	rt_round_tensor(t->dtype, rt_f32(t), t->n, t->rank ? t->dims[t->rank - 1] : 1, &q);
}

void rt_value_round(RtTensor *t) { round_to_dtype(t); }

/* Seeded data for an input without a binding: floats normal(0, 1), integers and bools 0 or 1
 * (valid indices for any non-empty axis), keyed by (seed, input index). */
static int random_fill(RtTensor *t, uint64_t seed, uint64_t instance, RtError *e)
{
	float *tmp = rt_malloc(sizeof(float) * (size_t)(t->n ? t->n : 1));
	if (!tmp)
		return rt_errorf(e, RT_ENOMEM, "out of memory generating input data");
	if (rt_dtype_isfloat(t->dtype))
		rt_fill_normal(tmp, t->n, 0.0f, 1.0f, seed, instance);
	else
		rt_fill_uniform(tmp, t->n, 0.0f, 2.0f, seed, instance);
	for (int64_t i = 0; i < t->n; i++)
		rt_set(t, i, rt_dtype_isfloat(t->dtype) ? tmp[i] : floor(tmp[i]));
	rt_free(tmp);
	round_to_dtype(t);
	return 0;
}

static const RtTensor *binding(const RtRunOpts *o, const char *name)
{
	for (int i = 0; i < o->nbind; i++)
		if (strcmp(o->bind[i].name, name) == 0)
			return o->bind[i].t;
	return NULL;
}

/* "[1,2,3]" into buf. */
static const char *dims_str(const int64_t *d, int rank, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = 0; i < rank && i < RT_MAX_RANK && o + 24 < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)d[i]);
	return buf;
}

/* dst := src converted to buffer b's dtype (exactly for integers, rounded to a narrow float's
 * grid); src must have the buffer's shape.  `what` names src in errors ("input 'x'"). */
static int convert_into(const Plan *p, int b, const char *what, const RtTensor *src, RtTensor *dst, RtError *e)
{
	const PlanBuffer *pb = &p->buffers[b];
	int same = src->rank == pb->rank;
	for (int i = 0; same && i < pb->rank; i++)
		same = src->dims[i] == pb->dims[i];
	if (!same) {
		char got[200], want[200];
		return rt_errorf(e, RT_EUSER, "%s: the data's shape [%s] does not match the plan's buffer '%s' [%s]",
				 what, dims_str(src->dims, src->rank, got, sizeof got), pb->name,
				 dims_str(pb->dims, pb->rank, want, sizeof want));
	}
	if (alloc_buffer(p, b, dst, e) < 0)
		return -1;
	int sa = rt_dtypes[dst->dtype].storage, sb = rt_dtypes[src->dtype].storage;
	if (sa == sb)
		memcpy(dst->data, src->data, (size_t)dst->n * (sa == S_F32 ? 4 : 8));
	else
		for (int64_t i = 0; i < dst->n; i++)
			if (sa == S_I64 && sb == S_I64)
				rt_seti(dst, i, rt_geti(src, i));
			else
				rt_set(dst, i, rt_get(src, i));
	dst->tensor_scale = src->tensor_scale;
	round_to_dtype(dst);
	return 0;
}

/* Buffer b := the given tensor, which must have the buffer's shape; converted to its dtype. */
static int bind_tensor(Vm *m, int b, const char *name, const RtTensor *src)
{
	char what[300];
	snprintf(what, sizeof what, "input '%.250s'", name);
	return convert_into(m->p, b, what, src, &m->val[b], m->e);
}

/* Copies between a part and a whole along axis: to_whole 0: part := whole[.., off : off + len, ..]
 * (len = part's dims[axis]); 1: whole[.., off : off + len, ..] := part.  Other dims are equal. */
static void slice_copy(RtTensor *part, RtTensor *whole, int axis, int64_t off, int to_whole)
{
	int64_t outer = 1, inner = 1, len = part->dims[axis], full = whole->dims[axis];
	for (int i = 0; i < axis; i++)
		outer *= part->dims[i];
	for (int i = axis + 1; i < part->rank; i++)
		inner *= part->dims[i];
	int ints = rt_dtypes[part->dtype].storage == S_I64 && rt_dtypes[whole->dtype].storage == S_I64;
	RtTensor *dst = to_whole ? whole : part, *src = to_whole ? part : whole;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < len; j++)
			for (int64_t i = 0; i < inner; i++) {
				int64_t a = (o * len + j) * inner + i, b = (o * full + off + j) * inner + i;
				int64_t d = to_whole ? b : a, s = to_whole ? a : b;
				if (ints)
					rt_seti(dst, d, rt_geti(src, s));
				else
					rt_set(dst, d, rt_get(src, s));
			}
}

/* A sharded input (PlanIO.shard_*): the whole tensor, bound or seeded, then each shard's slice. */
static int bind_sharded(Vm *m, int first, int ordinal)
{
	const PlanIO *io = &m->p->inputs[first];
	const RtTensor *src = binding(m->o, io->name);
	int any = 0;
	for (int i = first; i < m->p->ninputs; i++)
		any |= strcmp(m->p->inputs[i].name, io->name) == 0 && local_buf(m->p, m->o, m->p->inputs[i].buffer);
	if (!any)
		return 0;       /* every shard lives in another process */
	int64_t dims[RT_MAX_RANK];
	int rank = plan_io_dims(m->p, io, dims);
	RtTensor whole;
	if (rt_tensor_alloc(&whole, m->p->buffers[io->buffer].dtype, rank, dims, m->e) < 0)
		return -1;
	int rc = 0;
	if (src) {
		int same = src->rank == rank;
		for (int i = 0; same && i < rank; i++)
			same = src->dims[i] == dims[i];
		char want[160];
		size_t o = 0;
		for (int i = 0; i < rank && o < sizeof want - 24; i++)
			o += (size_t)snprintf(want + o, sizeof want - o, "%s%lld", i ? "," : "", (long long)dims[i]);
		want[o] = 0;
		if (!same)
			rc = rt_errorf(m->e, RT_EUSER, "input '%s': the data's shape does not match the plan's "
				       "sharded input, whose whole tensor is [%s]", io->name, want);
		for (int64_t i = 0; rc == 0 && i < whole.n; i++)
			rt_set(&whole, i, rt_get(src, i));
		whole.tensor_scale = src->tensor_scale;
		if (rc == 0)
			round_to_dtype(&whole);
	} else
		rc = random_fill(&whole, m->o->seed, (uint64_t)ordinal, m->e);
	for (int i = first; rc == 0 && i < m->p->ninputs; i++) {
		const PlanIO *s = &m->p->inputs[i];
		if (strcmp(s->name, io->name) || !local_buf(m->p, m->o, s->buffer) ||
		    (rc = alloc_buffer(m->p, s->buffer, &m->val[s->buffer], m->e)) < 0)
			continue;
		slice_copy(&m->val[s->buffer], &whole, s->shard_axis, s->shard_off, 0);
		m->val[s->buffer].tensor_scale = whole.tensor_scale;
	}
	rt_tensor_free(&whole);
	return rc;
}

/* Binds every input; seeded data is keyed by the input's ordinal among distinct names, so a
 * sharded plan draws the same values as the unpartitioned one. */
static int bind_inputs(Vm *m)
{
	for (int i = 0, ordinal = 0; i < m->p->ninputs; i++) {
		const PlanIO *io = &m->p->inputs[i];
		if (!plan_io_first(m->p->inputs, i))
			continue;
		const RtTensor *src = binding(m->o, io->name);
		if (io->shard_axis < 0 && !local_buf(m->p, m->o, io->buffer))
			;       /* held by another process */
		else if (io->shard_axis >= 0) {
			if (bind_sharded(m, i, ordinal) < 0)
				return -1;
		} else if (src) {
			if (bind_tensor(m, io->buffer, io->name, src) < 0)
				return -1;
		} else if (alloc_buffer(m->p, io->buffer, &m->val[io->buffer], m->e) < 0 ||
			   random_fill(&m->val[io->buffer], m->o->seed, (uint64_t)ordinal, m->e) < 0)
			return -1;
		ordinal++;
	}
	return 0;
}

/* ---- constants: bound once per session ---- */
/* The file at path, mapped once per session (and its safetensors header parsed once). */
static SessFile *sess_file(RtSession *s, const char *path, int safetensors, RtError *e)
{
	SessFile *f = NULL;
	for (int i = 0; i < s->nfiles && !f; i++)
		if (strcmp(s->files[i].path, path) == 0)
			f = &s->files[i];
	if (!f) {
		SessFile *nf = rt_realloc(s->files, ((size_t)s->nfiles + 1) * sizeof *nf);
		if (!nf)
			return rt_errorf(e, RT_ENOMEM, "out of memory loading the plan"), NULL;
		s->files = nf;
		f = &s->files[s->nfiles];
		memset(f, 0, sizeof *f);
		if (!(f->path = rt_strdup(path)))
			return rt_errorf(e, RT_ENOMEM, "out of memory loading the plan"), NULL;
		if (rt_file_map(path, &f->map, e) < 0) {
			rt_free(f->path);
			return NULL;
		}
		s->nfiles++;
	}
	if (safetensors && !f->st && !(f->st = rt_st_open(f->map.addr ? f->map.addr : "", f->map.len, path, e)))
		return NULL;
	return f;
}

/* Constant c's tensor in its file (relative paths against o->base_dir): a view into the mapping
 * where the layout allows (rt_raw_view), else a copy; the recorded xxh3 checksum of its bytes is
 * checked before the data is used. */
static int file_tensor(Vm *m, const PlanConst *c, const char *name, RtTensor *t)
{
	char path[4096];
	const char *dir = m->o->base_dir;
	int rel = c->path[0] != '/' && dir;
	if ((size_t)snprintf(path, sizeof path, "%s%s%s", rel ? dir : "", rel ? "/" : "", c->path) >= sizeof path)
		return rt_errorf(m->e, RT_EUSER, "'%s': the path of its file is too long", name);
	SessFile *f = sess_file(m->s, path, c->kind == PINIT_SAFETENSORS, m->e);
	if (!f)
		return -1;
	const void *raw = NULL;
	size_t nraw = 0;
	int rc = c->kind == PINIT_NPY ? rt_npy_view(f->map.addr ? f->map.addr : "", f->map.len, path, t, &raw, &nraw, m->e)
				      : rt_st_tensor(f->st, c->key, 0, t, &raw, &nraw, m->e);
	if (rc == 0 && c->has_xxh3) {
		uint64_t h = rt_checksum(raw, nraw);
		if (h != c->xxh3) {
			rt_tensor_free(t);
			rc = rt_errorf(m->e, RT_EUSER, "parameter '%s': %s%s%s has changed since the plan was written "
				       "(xxh3 %016llx, the plan records %016llx)", name, path, c->key ? ": tensor " : "",
				       c->key ? c->key : "", (unsigned long long)h, (unsigned long long)c->xxh3);
		}
	}
	return rc;
}

/* Elements [first, first + n) of constant c's seeded, fill or inline initialiser (numbered over
 * the whole tensor) into t's elements [at, at + n), FILL_CHUNK at a time through tmp; seeded f32
 * values are generated in place. */
enum { FILL_CHUNK = 65536 };
static void fill_run(const PlanConst *c, RtTensor *t, int64_t at, int64_t first, int64_t n, float *tmp)
{
	int seeded = c->kind == PINIT_NORMAL || c->kind == PINIT_UNIFORM;
	for (int64_t k = 0; k < n; k += FILL_CHUNK) {
		int64_t len = n - k < FILL_CHUNK ? n - k : FILL_CHUNK;
		float *x = seeded && rt_dtypes[t->dtype].storage == S_F32 ? rt_f32(t) + at + k : tmp;
		if (c->kind == PINIT_NORMAL)
			rt_fill_normal_at(x, first + k, len, (float)c->a, (float)c->b, c->seed, (uint64_t)c->instance);
		else if (c->kind == PINIT_UNIFORM)
			rt_fill_uniform_at(x, first + k, len, (float)c->a, (float)c->b, c->seed, (uint64_t)c->instance);
		if (x == tmp)
			for (int64_t j = 0; j < len; j++)
				rt_set(t, at + k + j, seeded ? tmp[j] : c->kind == PINIT_FILL ? c->a : c->vals[first + k + j]);
	}
}

/* Seeded, fill or inline values of constant c into t (allocated). */
static int fill_values(Vm *m, const PlanConst *c, const char *name, RtTensor *t)
{
	float *tmp = rt_malloc(sizeof(float) * FILL_CHUNK);
	if (!tmp)
		return rt_errorf(m->e, RT_ENOMEM, "out of memory materialising '%s'", name);
	fill_run(c, t, 0, 0, t->n, tmp);
	rt_free(tmp);
	return 0;
}

/* A sharded constant (PlanConst.shard_*): the slice [shard_off, shard_off + dims[axis]) along
 * axis of the full initialiser into dst, without materialising the rest: seeded values are
 * generated for the slice's elements only (runtime/random.h), and of a file only the slice's
 * elements are read (the mapping's other pages are never touched), except that a recorded
 * checksum covers the whole tensor. */
static int load_shard(Vm *m, const PlanConst *c, const char *name, RtTensor *dst)
{
	const PlanBuffer *pb = &m->p->buffers[c->buffer];
	int ax = c->shard_axis;
	int64_t outer = 1, inner = 1, len = pb->dims[ax], full = c->shard_full;
	for (int i = 0; i < ax; i++)
		outer *= pb->dims[i];
	for (int i = ax + 1; i < pb->rank; i++)
		inner *= pb->dims[i];
	if (alloc_buffer(m->p, c->buffer, dst, m->e) < 0)
		return -1;
	int rc = 0;
	if (c->kind == PINIT_NPY || c->kind == PINIT_SAFETENSORS) {
		RtTensor file = { 0 };
		rc = file_tensor(m, c, name, &file);
		int same = rc == 0 && file.rank == pb->rank;
		for (int i = 0; same && i < pb->rank; i++)
			same = file.dims[i] == (i == ax ? full : pb->dims[i]);
		if (rc == 0 && !same)
			rc = rt_errorf(m->e, RT_EUSER, "'%s': the file's shape does not match the sharded "
				       "parameter's full shape", name);
		int ints = rt_dtypes[dst->dtype].storage == S_I64 && rt_dtypes[file.dtype].storage == S_I64;
		for (int64_t o = 0; rc == 0 && o < outer; o++)
			for (int64_t j = 0, d = o * len * inner, f = (o * full + c->shard_off) * inner; j < len * inner; j++)
				if (ints)
					rt_seti(dst, d + j, rt_geti(&file, f + j));
				else
					rt_set(dst, d + j, rt_get(&file, f + j));
		rt_tensor_free(&file);
	} else {
		float *tmp = rt_malloc(sizeof(float) * FILL_CHUNK);
		if (!tmp)
			rc = rt_errorf(m->e, RT_ENOMEM, "out of memory materialising '%s'", name);
		for (int64_t o = 0; rc == 0 && o < outer; o++)
			fill_run(c, dst, o * len * inner, (o * full + c->shard_off) * inner, len * inner, tmp);
		rt_free(tmp);
	}
	if (rc == 0)
		round_to_dtype(dst);
	else
		rt_tensor_free(dst);
	return rc;
}

/* Constant c's value into dst (the session's copy): mapped without a copy when its file holds the
 * buffer's dtype and shape in the interpreter's layout, else converted once. */
static int load_const(Vm *m, const PlanConst *c, RtTensor *dst)
{
	const PlanBuffer *pb = &m->p->buffers[c->buffer];
	const char *name = pb->name;
	char what[300];
	snprintf(what, sizeof what, "parameter '%.250s'", name);
	int rc;
	if (c->shard_axis >= 0)
		rc = load_shard(m, c, name, dst);
	else if (c->kind == PINIT_NPY || c->kind == PINIT_SAFETENSORS) {
		RtTensor t;
		if (file_tensor(m, c, name, &t) < 0)
			return -1;
		int same = !t.owns && t.dtype == pb->dtype && t.rank == pb->rank;
		for (int i = 0; same && i < pb->rank; i++)
			same = t.dims[i] == pb->dims[i];
		if (same) {
			*dst = t;
			m->s->stats.nmapped++;
			m->s->stats.mapped_bytes += (int64_t)t.n * (rt_dtypes[t.dtype].storage == S_F32 ? 4 : 8);
			rc = 0;
		} else {
			rc = convert_into(m->p, c->buffer, what, &t, dst, m->e);
			rt_tensor_free(&t);
		}
	} else if (c->kind == PINIT_DATA)
		rc = convert_into(m->p, c->buffer, what, c->data, dst, m->e);
	else if ((rc = alloc_buffer(m->p, c->buffer, dst, m->e)) == 0 && (rc = fill_values(m, c, name, dst)) == 0)
		round_to_dtype(dst);
	if (rc == 0) {
		dst->pack = &m->s->packs[c->buffer];
		m->s->stats.nconsts++;
		m->s->stats.bytes += (int64_t)dst->n * (rt_dtypes[dst->dtype].storage == S_F32 ? 4 : 8);
	}
	return rc;
}

/* Constant c for this run: a bound tensor (--input NAME=FILE for a parameter), else the session's
 * value (loaded on first use), borrowed. */
static int materialise(Vm *m, const PlanConst *c)
{
	const char *name = m->p->buffers[c->buffer].name;
	const RtTensor *src = binding(m->o, name);
	if (!local_buf(m->p, m->o, c->buffer))
		return 0;       /* another process's constant: never read here */
	if (src)
		return bind_tensor(m, c->buffer, name, src);
	if (c->kind == PINIT_UNBOUND)
		return rt_errorf(m->e, RT_EUSER, "parameter '%s' is unbound: give --input %s=FILE.npy or run "
				 "with --timing-only", name, name);
	RtTensor *held = &m->s->consts[c->buffer];
	if (!held->data && load_const(m, c, held) < 0)
		return -1;
	m->val[c->buffer] = *held;
	m->val[c->buffer].owns = 0;     /* borrowed: never written (the verifier), never freed here */
	return 0;
}

/* Checks a kernel's output against its planned buffer. */
static int check_output(Vm *m, const PlanInstr *in, int k, const RtTensor *t)
{
	const PlanBuffer *pb = &m->p->buffers[in->out[k]];
	int ok = t->dtype == pb->dtype && t->rank == pb->rank && t->data;
	for (int i = 0; ok && i < pb->rank; i++)
		ok = t->dims[i] == pb->dims[i];
	if (ok)
		return 0;
	char got[160] = "", want[160] = "";
	for (int i = 0; i < t->rank && i < RT_MAX_RANK; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "", (long long)t->dims[i]);
	for (int i = 0; i < pb->rank; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "", (long long)pb->dims[i]);
	return rt_errorf(m->e, RT_EUSER, "%s output %d is %s[%s] but the plan's buffer '%s' is %s[%s]",
			 plan_op_name(in->op), k, t->dtype > 0 && t->dtype < DT_COUNT ? rt_dtype_name(t->dtype) : "?",
			 got, pb->name, rt_dtype_name(pb->dtype), want);
}

static int exec_kernel(Vm *m, const PlanInstr *in)
{
	RtTensor *ins[64], outs[64];
	if (in->nin > 64 || in->nout > 64)
		return rt_errorf(m->e, RT_EUSER, "more than 64 operands");
	for (int k = 0; k < in->nin; k++)
		ins[k] = in->in[k] >= 0 ? &m->val[in->in[k]] : NULL;
	memset(outs, 0, sizeof outs[0] * (size_t)in->nout);
	for (int k = 0; k < in->nout; k++)
		outs[k].dtype = m->p->buffers[in->out[k]].dtype;
	RtKernelArgs a = { ins, in->nin, outs, in->nout, &in->attrs, &in->opts, m->epi };
	if (m->room)
		rt_alloc_budget_begin(m->room[m->step]);
	int rc = rt_kernel(in->op)(&a, m->e);
	int64_t held, refused = m->room ? rt_alloc_budget_end(&held) : 0;
	if (rc < 0 && refused)
		rc = rt_errorf(m->e, RT_EUSER, "%s needs more host memory than the run has: it asked for %lld bytes "
			       "(holding %lld), but the run's memory check leaves %lld bytes to this instruction "
			       "(%lld available to the run, less the constants and the values held at this step)",
			       plan_op_name(in->op), (long long)refused, (long long)held, (long long)m->room[m->step],
			       (long long)m->o->host_limit);
	for (int k = 0; rc == 0 && k < in->nout; k++)
		rc = check_output(m, in, k, &outs[k]);
	for (int k = 0; k < in->nout; k++) {
		if (rc == 0) {
			rt_tensor_free(&m->val[in->out[k]]);
			m->val[in->out[k]] = outs[k];
		} else
			rt_tensor_free(&outs[k]);
	}
	return rc;
}

int rt_value_copy(const Plan *p, int b, const RtTensor *s, RtTensor *dst, RtError *e)
{
	RtTensor t;
	if (alloc_buffer(p, b, &t, e) < 0)
		return -1;
	for (int64_t i = 0; i < t.n; i++)
		rt_set(&t, i, rt_get(s, i));
	t.tensor_scale = s->tensor_scale;
	*dst = t;
	return 0;
}

static int copy_value(Vm *m, int from, int to)
{
	RtTensor t;
	if (rt_value_copy(m->p, to, &m->val[from], &t, m->e) < 0)
		return -1;
	rt_tensor_free(&m->val[to]);
	m->val[to] = t;
	return 0;
}

/* All-to-all: output j := the chunks j of every input, in rank order, along the axis attribute:
 * exactly the AllToAll operator's kernel (runtime/kernels/collective.c). */
static int exec_alltoall(Vm *m, const PlanInstr *in)
{
	PlanInstr k = *in;
	k.kind = PI_KERNEL;
	k.op = RT_OP_AllToAll;
	return exec_kernel(m, &k);
}

/* All-gather: output 0 := the inputs concatenated in rank order along the axis attribute (the
 * Concat kernel), every other rank's output a copy of it. */
static int exec_allgather(Vm *m, const PlanInstr *in)
{
	PlanInstr k = *in;
	k.kind = PI_KERNEL;
	k.op = RT_OP_Concat;
	k.nout = 1;
	int rc = exec_kernel(m, &k);
	for (int r = 1; rc == 0 && r < in->nout; r++)
		rc = copy_value(m, in->out[0], in->out[r]);
	return rc;
}

void rt_allreduce_add(RtTensor *acc, const RtTensor *x)
{
	for (int64_t i = 0; i < acc->n; i++)
		rt_set(acc, i, rt_get(acc, i) + rt_get(x, i));
}

int rt_instr_codec(const PlanInstr *in, RtCodec *c, RtError *e)
{
	const char *spec = rt_attr_str(&in->attrs, "compress", NULL);
	char why[160];
	if (!spec)
		return 0;
	if (rt_codec_parse(spec, c, why, sizeof why) < 0)
		return rt_errorf(e, RT_EUSER, "compress: %s", why);
	return 1;
}

int rt_codec_apply(const RtCodec *c, const RtTensor *x, RtTensor *y, RtError *e)
{
	int64_t n = x->n;
	float *f = rt_malloc(sizeof(float) * (size_t)(n ? n : 1));
	uint8_t *buf = rt_malloc((size_t)rt_codec_bytes(c, n) + 1);
	int rc = f && buf ? rt_tensor_alloc(y, x->dtype, x->rank, x->dims, e) :
		rt_errorf(e, RT_ENOMEM, "out of memory compressing a collective's payload");
	if (rc == 0) {
		for (int64_t i = 0; i < n; i++)
			f[i] = (float)rt_get(x, i);
		rt_codec_encode(c, f, n, buf);
		rt_codec_decode(c, buf, n, f);
		for (int64_t i = 0; i < n; i++)
			rt_set(y, i, f[i]);
		round_to_dtype(y);
	}
	rt_free(f), rt_free(buf);
	return rc;
}

void rt_reducescatter_add(RtTensor *acc, const RtTensor *x, int axis, int j, int n)
{
	int64_t outer = 1, inner = 1, len = x->dims[axis], ch = len / n;
	for (int k = 0; k < axis; k++)
		outer *= x->dims[k];
	for (int k = axis + 1; k < x->rank; k++)
		inner *= x->dims[k];
	for (int64_t o = 0, i = 0; o < outer; o++)
		for (int64_t q = 0; q < ch * inner; q++, i++)
			rt_set(acc, i, rt_get(acc, i) + rt_get(x, (o * len + j * ch) * inner + q));
}

/* Reduce-scatter: output j := chunk j along the axis attribute of the inputs' sum, added in rank
 * order from zero and rounded to output j's dtype (the all-reduce's additions on those elements).
 * The plan verifier checked the ranks, the axis and the chunk shapes. */
static int exec_reducescatter(Vm *m, const PlanInstr *in)
{
	const RtTensor *x = &m->val[in->in[0]];
	int64_t a = rt_attr_int(&in->attrs, "axis", 0);
	int ax = (int)(a < 0 ? a + x->rank : a), rc = 0;
	for (int j = 0; j < in->nout && rc == 0; j++) {
		RtTensor acc;
		if ((rc = alloc_buffer(m->p, in->out[j], &acc, m->e)) < 0)
			break;
		for (int r = 0; r < in->nin; r++)
			rt_reducescatter_add(&acc, &m->val[in->in[r]], ax, j, in->nin);
		round_to_dtype(&acc);
		rt_tensor_free(&m->val[in->out[j]]);
		m->val[in->out[j]] = acc;
	}
	return rc;
}

/* All-reduce: every output := the sum of the inputs (in rank order, so every rank rounds the same
 * way), rounded to the dtype of output 0; compressed (rt_codec_apply): the sum of the decoded
 * inputs, itself sent encoded. */
static int exec_collective(Vm *m, const PlanInstr *in)
{
	if (in->coll == PC_ALLTOALL)
		return exec_alltoall(m, in);
	if (in->coll == PC_ALLGATHER)
		return exec_allgather(m, in);
	if (in->coll == PC_REDUCESCATTER)
		return exec_reducescatter(m, in);
	RtCodec codec;
	int cz = rt_instr_codec(in, &codec, m->e);
	if (cz < 0)
		return -1;
	RtTensor acc;
	if (alloc_buffer(m->p, in->out[0], &acc, m->e) < 0)
		return -1;
	int rc = 0;
	for (int r = 0; r < in->nin && rc == 0; r++) {
		if (!cz) {
			rt_allreduce_add(&acc, &m->val[in->in[r]]);
			continue;
		}
		RtTensor q = { 0 };
		if ((rc = rt_codec_apply(&codec, &m->val[in->in[r]], &q, m->e)) == 0)
			rt_allreduce_add(&acc, &q);
		rt_tensor_free(&q);
	}
	round_to_dtype(&acc);
	if (rc == 0 && cz) {
		RtTensor q = { 0 };
		if ((rc = rt_codec_apply(&codec, &acc, &q, m->e)) == 0) {
			rt_tensor_free(&acc);
			acc = q;
		}
	}
	for (int r = 0; r < in->nout && rc == 0; r++) {
		RtTensor t;
		rc = alloc_buffer(m->p, in->out[r], &t, m->e);
		if (rc == 0) {
			memcpy(t.data, acc.data, (size_t)t.n * (rt_dtypes[t.dtype].storage == S_F32 ? 4 : 8));
			rt_tensor_free(&m->val[in->out[r]]);
			m->val[in->out[r]] = t;
		}
	}
	rt_tensor_free(&acc);
	return rc;
}

/* Runs the elementwise chain of len steps from step t (runtime/ewchain.c) under the first
 * step's memory budget; 0 when run, 1 when the values do not fit it (run the steps one by one). */
static int exec_chain(Vm *m, const PlanStep *order, int t, int len, const int *last)
{
	if (m->room)
		rt_alloc_budget_begin(m->room[t]);
	int rc = rt_ew_chain_run(m->p, order, t, len, last, m->val, m->e);
	int64_t held, refused = m->room ? rt_alloc_budget_end(&held) : 0;
	if (rc < 0 && refused)
		rc = rt_errorf(m->e, RT_EUSER, "an elementwise chain needs more host memory than the run has: it asked "
			       "for %lld bytes (holding %lld), but the run's memory check leaves %lld bytes to it",
			       (long long)refused, (long long)held, (long long)m->room[t]);
	return rc < 0 ? -1 : rc == 0;
}

/* Runs the Conv at step t with the elementwise chain of len steps after it fused on its output
 * (rt_ew_fused_begin, under the chain's memory budget): 0 when run, 1 when not fused (run the
 * steps one by one), -1 on error. */
static int exec_fused(Vm *m, const PlanStep *order, int t, int len, const int *last)
{
	const PlanInstr *in = &m->p->streams[order[t].stream].ins[order[t].index];
	if (in->kind != PI_KERNEL || in->op != RT_OP_Conv)
		return 1;
	RtEwFused *f;
	if (m->room)
		rt_alloc_budget_begin(m->room[t + 1]);
	int rc = rt_ew_fused_begin(m->p, order, in, t + 1, len, last, m->val, &f, m->e);
	int64_t held, refused = m->room ? rt_alloc_budget_end(&held) : 0;
	if (rc < 0 && refused)
		return 1;   /* beyond the chain's budget: the steps one by one */
	if (rc <= 0)
		return rc < 0 ? -1 : 1;
	RtEpilogue ep = { rt_ew_fused_region, f };
	m->epi = &ep;
	rc = exec_kernel(m, in);
	m->epi = NULL;
	rt_ew_fused_end(f);
	m->nfused += rc == 0;
	return rc;
}

/* The dispatch loop; chain (or NULL): the elementwise chains' lengths by first step; a Conv just
 * before a chain runs with the chain fused on its output (exec_fused). */
static int execute(Vm *m, const PlanStep *order, int n, const int *last, const int *chain)
{
	const RtDistHooks *d = m->o->dist;
	for (int t = 0; t < n; t++) {
		const PlanInstr *in = &m->p->streams[order[t].stream].ins[order[t].index];
		int rc = d ? d->step(d->ctx, t, &order[t], m->val, m->e) : 0, len = chain ? chain[t] : 0;
		m->step = t;
		if (m->o->progress)
			m->o->progress(m->o->progress_ctx, "running the plan", t, n);
		int fused = 0, fl = chain && !len && t + 1 < n ? chain[t + 1] : 0;
		if (rc == 0 && fl) {
			if ((rc = exec_fused(m, order, t, fl, last)) < 0)
				return at_line(m, in->line, m->e);
			fused = rc == 0, rc = 0;
			len = fused ? fl + 1 : 0;   /* the Conv and its chain ran: release as after a chain */
		}
		if (rc == 0 && len && (fused || (rc = exec_chain(m, order, t, len, last)) == 0)) {
			for (int u = t; u < t + len; u++) {   /* release what the chain read last */
				const PlanInstr *q = &m->p->streams[order[u].stream].ins[order[u].index];
				for (int k = 0; k < q->nin; k++)
					if (q->in[k] >= 0 && last[q->in[k]] >= t && last[q->in[k]] < t + len)
						rt_tensor_free(&m->val[q->in[k]]);
			}
			t += len - 1;
			continue;
		}
		if (len && rc > 0)   /* values unlike the plan: step by step */
			rc = 0;
		if (rc == 0)
			switch (in->kind) {
			case PI_KERNEL: rc = exec_kernel(m, in); break;
			case PI_COPY: rc = copy_value(m, in->in[0], in->out[0]); break;
			case PI_COLLECTIVE: rc = exec_collective(m, in); break;
			case PI_RECORD: case PI_WAIT: case PI_COUNT: break;
			}
		if (rc < 0)
			return at_line(m, in->line, m->e);
		if (d)
			d->done(d->ctx, t);
		for (int k = 0; k < in->nin && !m->o->keep_all; k++)
			if (in->in[k] >= 0 && last[in->in[k]] == t)
				rt_tensor_free(&m->val[in->in[k]]);
	}
	return 0;
}

/* Output i (the first entry of its name) into o; a sharded output is assembled from its shards. */
static int collect_output(Vm *m, int i, RtTensor *o)
{
	const PlanIO *io = &m->p->outputs[i];
	int b = io->buffer;
	if (io->shard_axis < 0) {
		if (alloc_buffer(m->p, b, o, m->e) < 0)
			return -1;
		memcpy(o->data, m->val[b].data, (size_t)o->n * (rt_dtypes[o->dtype].storage == S_F32 ? 4 : 8));
		o->tensor_scale = m->val[b].tensor_scale;
		return 0;
	}
	int64_t dims[RT_MAX_RANK];
	int rank = plan_io_dims(m->p, io, dims);
	if (rt_tensor_alloc(o, m->p->buffers[b].dtype, rank, dims, m->e) < 0)
		return -1;
	for (int j = i; j < m->p->noutputs; j++)
		if (strcmp(m->p->outputs[j].name, io->name) == 0)
			slice_copy(&m->val[m->p->outputs[j].buffer], o, io->shard_axis, m->p->outputs[j].shard_off, 1);
	o->tensor_scale = m->val[b].tensor_scale;
	return 0;
}

static int64_t host_size(const PlanBuffer *b);

/* The allocation budget of each step (Vm.room): the run's host limit less the constants and the
 * values held while step t runs (inputs and results written before t and read at t or later;
 * with keep_all every earlier result), as the interpreter stores them; 0 when none is left.
 * NULL without a limit; -1 with e set when out of memory. */
static int step_room(Vm *m, int n, const int *first, const int *last)
{
	const Plan *p = m->p;
	if (m->o->host_limit <= 0 || m->o->timing_only)
		return 0;
	int64_t *d = rt_calloc((size_t)n + 2, sizeof *d), fixed = 0;
	unsigned char *isconst = rt_calloc((size_t)p->nbuffers + 1, 1);
	if (!d || !isconst) {
		rt_free(d), rt_free(isconst);
		return rt_errorf(m->e, RT_ENOMEM, "out of memory starting the interpreter");
	}
	for (int i = 0; i < p->nconsts; i++)
		if (!isconst[p->consts[i].buffer]) {
			isconst[p->consts[i].buffer] = 1;
			fixed += host_size(&p->buffers[p->consts[i].buffer]);
		}
	for (int b = 0; b < p->nbuffers; b++) {
		/* int64: first[b] is INT_MAX for a buffer no instruction writes (fuzz_exec finding) */
		int64_t lo = (int64_t)first[b] + 1, hi = m->o->keep_all ? n - 1 : last[b] < n - 1 ? last[b] : n - 1;
		if (isconst[b] || lo < 0 || lo > hi)
			continue;
		d[lo] += host_size(&p->buffers[b]);
		d[hi + 1] -= host_size(&p->buffers[b]);
	}
	for (int64_t t = 0, live = 0; t < n; t++) {
		live += d[t];
		int64_t left = m->o->host_limit - fixed - live;
		d[t] = left > 0 ? left : 0;
	}
	rt_free(isconst);
	m->room = d;
	return 0;
}

static int run_values(Vm *m, RtRun *r)
{
	RtSession *s = m->s;
	int rc = 0;
	if (!s->order) {
		PlanStep *order = NULL;
		int n = 0, *first = NULL, *last = NULL;
		rc = plan_linearize(m->p, &order, &n, m->e);
		if (rc == 0)
			rc = plan_liveness(m->p, order, n, &first, &last, m->e);
		if (rc < 0) {
			rt_free(order), rt_free(first), rt_free(last);
			return rc;
		}
		s->order = order, s->norder = n, s->first = first, s->last = last;
		rc = rt_ew_chains(m->p, order, n, &s->chain, m->e);
	}
	const PlanStep *order = s->order;
	const int n = s->norder, *first = s->first, *last = s->last;
	if (rc == 0)
		rc = step_room(m, n, first, last);
	if (rc == 0)
		rc = bind_inputs(m);
	for (int i = 0; rc == 0 && i < m->p->nconsts; i++)
		rc = materialise(m, &m->p->consts[i]);
	if (rc == 0)
		rc = execute(m, order, n, last, m->o->keep_all || m->o->dist ? NULL : s->chain);
	r->fused = m->nfused;
	int collect = 1;      /* distributed: the outputs come together in one process */
	if (rc == 0 && m->o->dist && (collect = m->o->dist->finish(m->o->dist->ctx, m->val, m->e)) < 0)
		rc = -1;
	if (rc == 0 && !(r->outputs = rt_calloc((size_t)m->p->noutputs + 1, sizeof *r->outputs)))
		rc = rt_errorf(m->e, RT_ENOMEM, "out of memory collecting outputs");
	for (int i = 0; rc == 0 && collect && i < m->p->noutputs; i++)
		if (plan_io_first(m->p->outputs, i))
			rc = collect_output(m, i, &r->outputs[i]);
	rt_free(m->room);
	m->room = NULL;
	return rc;
}

static int64_t host_size(const PlanBuffer *b)
{
	int64_t n = plan_buffer_numel(b);
	return n < 0 ? INT64_MAX / 4 : n * (rt_dtypes[b->dtype].storage == S_F32 ? 4 : 8);
}

typedef struct HostEv { int step; int64_t delta; } HostEv;
static int by_host_step(const void *x, const void *y)
{
	const HostEv *a = x, *b = y;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return (a->delta > b->delta) - (a->delta < b->delta);   /* releases first */
}

int64_t rt_host_bytes(const Plan *p, int64_t *consts) { return rt_host_bytes_on(p, NULL, 1, consts); }

int64_t rt_host_bytes_on(const Plan *p, const unsigned char *local, int all_outputs, int64_t *consts)
{
	PlanStep *order;
	int n, *first, *last, nev = 0;
	RtError e = { 0 };
	if (plan_linearize(p, &order, &n, &e) < 0)
		return -1;
	int rc = plan_liveness(p, order, n, &first, &last, &e);
	rt_free(order);
	if (rc < 0)
		return -1;
	unsigned char *isconst = rt_calloc((size_t)p->nbuffers + 1, 1);
	HostEv *ev = rt_malloc(sizeof *ev * (size_t)(2 * p->nbuffers + 1));
	int64_t c = 0, live = 0, peak = 0, outs = 0;
#define HERE(b) (!local || local[p->spaces[p->buffers[b].space].device])
	for (int i = 0; isconst && i < p->nconsts; i++)
		if ((isconst[p->consts[i].buffer] = 1, HERE(p->consts[i].buffer)))
			c += host_size(&p->buffers[p->consts[i].buffer]);
	for (int i = 0; i < p->noutputs; i++)
		if (all_outputs || HERE(p->outputs[i].buffer))
			outs += host_size(&p->buffers[p->outputs[i].buffer]);
	for (int b = 0; ev && isconst && b < p->nbuffers; b++)
		if (!isconst[b] && first[b] <= last[b] && HERE(b)) {
			ev[nev++] = (HostEv){ first[b], host_size(&p->buffers[b]) };
			ev[nev++] = (HostEv){ last[b] + 1, -host_size(&p->buffers[b]) };
		}
	if (ev)
		qsort(ev, (size_t)nev, sizeof *ev, by_host_step);
	for (int i = 0; i < nev; i++)
		if ((live += ev[i].delta) > peak)
			peak = live;
#undef HERE
	int ok = ev && isconst;
	rt_free(ev), rt_free(isconst), rt_free(first), rt_free(last);
	if (consts)
		*consts = c;
	return ok ? c + peak + outs : -1;
}

RtSession *rt_session_new(const Plan *p, const RtRunOpts *o, RtError *e)
{
	int64_t cb = 0, need = o->host_limit > 0 && !o->timing_only ? rt_host_bytes(p, &cb) : 0;
	if (need > o->host_limit && o->host_limit > 0) {
		rt_errorf(e, RT_EUSER, "%s: error: the run needs about %.3g GB of host memory (constants %.3g GB, "
			  "values live at once and outputs %.3g GB, as the interpreter holds them: f32, f64 or i64 per "
			  "element), but %.3g GB is available (the memory cgroup's limit included); --timing-only "
			  "prices the plan without its values", p->file ? p->file : "<plan>", (double)need / 1e9,
			  (double)cb / 1e9, (double)(need - cb) / 1e9, (double)o->host_limit / 1e9);
		return NULL;
	}
	RtSession *s = rt_calloc(1, sizeof *s);
	if (!s || !(s->consts = rt_calloc((size_t)p->nbuffers + 1, sizeof *s->consts)) ||
	    !(s->packs = rt_calloc((size_t)p->nbuffers + 1, sizeof *s->packs))) {
		if (s)
			rt_free(s->consts);
		rt_free(s);
		rt_errorf(e, RT_ENOMEM, "out of memory loading the plan");
		return NULL;
	}
	s->p = p;
	if (o->timing_only)
		return s;
	Vm m = { p, o, NULL, e, s, NULL, 0, NULL, 0 };
	for (int i = 0; i < p->nconsts; i++) {
		const PlanConst *c = &p->consts[i];
		if (o->progress)
			o->progress(o->progress_ctx, "binding weights", i, p->nconsts);
		if (c->kind == PINIT_UNBOUND || binding(o, p->buffers[c->buffer].name) || !local_buf(p, o, c->buffer))
			continue;     /* bound by every run that gives it, an error when one does not, or
				       * another process's */
		if (load_const(&m, c, &s->consts[c->buffer]) < 0) {
			at_line(&m, c->line, e);
			rt_session_free(s);
			return NULL;
		}
	}
	return s;
}

const RtLoadStats *rt_session_stats(const RtSession *s) { return &s->stats; }

void rt_session_free(RtSession *s)
{
	if (!s)
		return;
	for (int b = 0; b < s->p->nbuffers; b++) {
		rt_tensor_free(&s->consts[b]);
		rt_pack_free(&s->packs[b]);
	}
	for (int i = 0; i < s->nfiles; i++) {
		rt_st_close(s->files[i].st);
		rt_file_unmap(&s->files[i].map);
		rt_free(s->files[i].path);
	}
	rt_free(s->files);
	rt_free(s->consts);
	rt_free(s->packs);
	rt_timing_free(&s->timing);
	rt_free(s->order), rt_free(s->first), rt_free(s->last), rt_free(s->chain);
	rt_free(s);
}

int rt_session_run(RtSession *s, const RtRunOpts *o, RtRun *r, RtError *e)
{
	const Plan *p = s->p;
	memset(r, 0, sizeof *r);
	if (!s->timed && rt_simulate(p, &s->timing, e) < 0)   /* frees what it made on failure */
		return -1;
	s->timed = 1;
	if (rt_timing_copy(p, &r->timing, &s->timing, e) < 0)
		return -1;
	if (o->timing_only)
		return 0;
	Vm m = { p, o, rt_calloc((size_t)p->nbuffers + 1, sizeof(RtTensor)), e, s, NULL, 0, NULL, 0 };
	if (!m.val)
		return rt_errorf(e, RT_ENOMEM, "out of memory starting the interpreter");
	int rc = run_values(&m, r);
	if (rc == 0 && o->keep_all)
		r->values = m.val;
	else {
		for (int b = 0; b < p->nbuffers; b++)
			rt_tensor_free(&m.val[b]);
		rt_free(m.val);
	}
	if (rc < 0)
		rt_run_free(p, r);
	return rc;
}

int rt_run(const Plan *p, const RtRunOpts *o, RtRun *r, RtError *e)
{
	memset(r, 0, sizeof *r);
	RtSession *s = rt_session_new(p, o, e);
	if (!s)
		return -1;
	int rc = rt_session_run(s, o, r, e);
	/* values borrowed from the session (constants) outlive it: copy them */
	for (int b = 0; rc == 0 && r->values && b < p->nbuffers; b++) {
		RtTensor *v = &r->values[b], own;
		if (!v->data || v->owns)
			continue;
		if (rt_tensor_alloc(&own, v->dtype, v->rank, v->dims, e) < 0) {
			rt_run_free(p, r);
			rc = -1;
			break;
		}
		memcpy(own.data, v->data, (size_t)v->n * (rt_dtypes[v->dtype].storage == S_F32 ? 4 : 8));
		own.tensor_scale = v->tensor_scale;
		*v = own;
	}
	rt_session_free(s);
	return rc;
}

void rt_run_free(const Plan *p, RtRun *r)
{
	if (r->outputs)
		for (int i = 0; i < p->noutputs; i++)
			rt_tensor_free(&r->outputs[i]);
	if (r->values)
		for (int b = 0; b < p->nbuffers; b++)
			rt_tensor_free(&r->values[b]);
	rt_free(r->outputs);
	rt_free(r->values);
	rt_timing_free(&r->timing);
	r->outputs = r->values = NULL;
}
