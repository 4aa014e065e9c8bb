/* runtime/plan.c: the plan builder, lookups and the tables of names shared by the writer, the
 * reader and the report.  Requires runtime/rt.h (allocation hook, dtypes) and runtime/kernels.h
 * (operator names).  Every builder function deep-copies what it is given, so callers may pass
 * stack data; on allocation failure it returns -1 with e set and leaves the plan consistent
 * (plan_free still frees everything).  Instruction strings (target attributes, attribute names
 * and values, node names) and buffer formats are interned (plan_intern). */
#include "runtime/plan.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

const char *const plan_init_names[PINIT_COUNT] = { "normal", "uniform", "fill", "inline", "npy", "safetensors", "unbound", "data" };
const char *const plan_instr_names[PI_COUNT] = { "kernel", "copy", "collective", "record", "wait" };
const char *const plan_coll_names[PC_COUNT] = { "allreduce", "allgather", "alltoall", "reducescatter" };
static const char *const formats[] = { "row" };
static const char *const op_names[RT_OP_COUNT] = {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) #name,
#include "ir/ops.def"
#undef OP
};

const char *plan_op_name(RtOp op) { return op >= 0 && op < RT_OP_COUNT ? op_names[op] : "?"; }

RtOp plan_op_lookup(const char *name)
{
	for (int i = 0; i < RT_OP_COUNT; i++)
		if (strcmp(op_names[i], name) == 0)
			return (RtOp)i;
	return RT_OP_COUNT;
}

int plan_format_known(const char *format)
{
	int64_t one = 128;
	return format && plan_format_bytes(format, DT_BF16, 1, &one) >= 0;
}

int64_t plan_format_bytes(const char *format, DType dt, int rank, const int64_t *dims)
{
	if (rank < 0 || rank > RT_MAX_RANK || dt <= DT_INVALID || dt >= DT_COUNT || !format)
		return -1;
	int64_t n = 1;       /* plan_buffer_numel's product, without a PlanBuffer to fill */
	for (int k = 0; k < rank; k++) {
		if (dims[k] < 0 || (dims[k] && n > INT64_MAX / dims[k]))
			return -1;
		n *= dims[k];
	}
	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (strcmp(formats[i], format) == 0)
			return rt_dtype_bytes(dt, n);
	if (strncmp(format, "q.", 2) || !rt_dtype_isfloat(dt))
		return -1;
	/* q.FMT: the values are stored encoded as FMT (docs/plan-format.md "Buffer formats") */
	const char *f = format + 2;
	DType q = rt_dtype_lookup(f);
	if (q != DT_INVALID && rt_dtypes[q].kind == K_BLOCK)
		return rt_dtype_bytes(q, n);          /* codes and their block scales (NVFP4: + its f32) */
	if (strncmp(f, "f8e4m3.", 7))
		return -1;
	f += 7;
	int64_t last = rank > 0 ? dims[rank - 1] : 1, rows = last > 0 ? n / last : 0;
	if (!strcmp(f, "tensor"))
		return n + 4;                         /* e4m3 codes and one f32 scale */
	if (!strcmp(f, "1x128"))
		return n + 4 * rows * ((last + 127) / 128);
	if (!strcmp(f, "128x128")) {             /* one f32 scale per 128x128 block of the last two axes */
		int64_t r2 = rank > 1 ? dims[rank - 2] : 1, mats = r2 > 0 && last > 0 ? n / (r2 * last) : 0;
		return n + 4 * mats * ((r2 + 127) / 128) * ((last + 127) / 128);
	}
	return -1;
}

int plan_set_buffer_format(Plan *p, int buf, const char *format, RtError *e)
{
	PlanBuffer *b = &p->buffers[buf];
	int64_t size = plan_format_bytes(format, b->dtype, b->rank, b->dims);
	if (size < 0)
		return rt_errorf(e, RT_EINTERNAL, "buffer '%s': unknown format '%s' for %s", b->name, format ? format : "",
				 rt_dtype_name(b->dtype));
	char *f = plan_intern(p, format);
	if (!f)
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	b->format = f;
	b->size = size;
	return 0;
}

static uint64_t fnv_step(uint64_t h, const void *data, size_t n)
{
	const unsigned char *s = data;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ull;
	}
	return h;
}

uint64_t plan_hash(const void *data, size_t n) { return fnv_step(1469598103934665603ull, data, n); }

int plan_hash_files(const char *const *paths, int npaths, char out[17])
{
	uint64_t h = 1469598103934665603ull;
	unsigned char buf[1 << 16];
	for (int i = 0; i < npaths; i++) {
		FILE *f = fopen(paths[i], "rb");
		if (!f)
			return -1;
		if (i > 0)   /* each further file after its name: a renamed file is a change too */
			h = fnv_step(h, paths[i], strlen(paths[i]) + 1);
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, f)) > 0)
			h = fnv_step(h, buf, n);
		int err = ferror(f);
		fclose(f);
		if (err) {
			errno = EIO;
			return -1;
		}
	}
	snprintf(out, 17, "%016" PRIx64, h);
	return 0;
}

int plan_hash_file(const char *path, char out[17]) { return plan_hash_files(&path, 1, out); }

static int nomem(RtError *e)
{
	return rt_errorf(e, RT_ENOMEM, "out of memory building a plan");
}

/* Grows *v (element size sz) so it holds at least n+1 elements; 0 or -1. */
static int grow(void **v, int *cap, int n, size_t sz)
{
	if (n < *cap)
		return 0;
	int nc = *cap ? *cap * 2 : 8;
	void *nv = rt_realloc(*v, (size_t)nc * sz);
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}
#define PUSH(p, vec, e) (grow((void **)&(p)->vec, &(p)->cap_##vec, (p)->n##vec, sizeof *(p)->vec) \
			 ? nomem(e) : (p)->n##vec++)

/* ---- interned strings: an open-addressing set of pointers into 64 KB blocks ---- */
#define STRS_BLOCK 65536
#define STRS_MEMO 16384

struct PlanStrs {
	char **slot;             /* cap entries (a power of two), NULL where free */
	size_t cap, n;
	char *top;               /* free space of the current block */
	size_t left;
	void **blocks;           /* every block and every string too long for one */
	size_t nblocks, capblocks;
	/* the last answers by the caller's address: a hit whose text still matches is the answer
	 * without hashing (callers pass the same IR attribute strings, literals and interned
	 * strings over and over) */
	struct { const char *src; char *dst; } memo[STRS_MEMO];
};

static void strs_free(struct PlanStrs *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nblocks; i++)
		rt_free(t->blocks[i]);
	rt_free(t->blocks);
	rt_free(t->slot);
	rt_free(t);
}

static int strs_grow(struct PlanStrs *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024;
	char **slot = rt_calloc(cap, sizeof *slot);
	if (!slot)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i]) {
			size_t h = (size_t)rt_checksum(t->slot[i], strlen(t->slot[i])) & (cap - 1);
			while (slot[h])
				h = (h + 1) & (cap - 1);
			slot[h] = t->slot[i];
		}
	rt_free(t->slot);
	t->slot = slot, t->cap = cap;
	return 0;
}

/* Room for n bytes (a new block, or a block of its own for a long string); NULL: no memory. */
static char *strs_room(struct PlanStrs *t, size_t n)
{
	if (n <= t->left) {
		char *r = t->top;
		t->top += n, t->left -= n;
		return r;
	}
	if (t->nblocks == t->capblocks) {
		size_t cap = t->capblocks ? 2 * t->capblocks : 16;
		void **b = rt_realloc(t->blocks, cap * sizeof *b);
		if (!b)
			return NULL;
		t->blocks = b, t->capblocks = cap;
	}
	size_t sz = n > STRS_BLOCK / 4 ? n : STRS_BLOCK;
	char *b = rt_malloc(sz);
	if (!b)
		return NULL;
	t->blocks[t->nblocks++] = b;
	if (sz == STRS_BLOCK)
		t->top = b + n, t->left = sz - n;
	return b;
}

char *plan_intern(Plan *p, const char *s)
{
	if (!s)
		return NULL;
	if (!p->strs && !(p->strs = rt_calloc(1, sizeof *p->strs)))
		return NULL;
	struct PlanStrs *t = p->strs;
	size_t m = ((uintptr_t)s >> 3) % STRS_MEMO;
	if (t->memo[m].src == s && (t->memo[m].dst == s || !strcmp(t->memo[m].dst, s)))
		return t->memo[m].dst;
	if (2 * (t->n + 1) > t->cap && strs_grow(t) < 0)
		return NULL;
	size_t len = strlen(s), h = (size_t)rt_checksum(s, len) & (t->cap - 1);
	for (; t->slot[h]; h = (h + 1) & (t->cap - 1))
		if (!strcmp(t->slot[h], s)) {
			t->memo[m].src = s, t->memo[m].dst = t->slot[h];
			return t->slot[h];
		}
	char *d = strs_room(t, len + 1);
	if (!d)
		return NULL;
	memcpy(d, s, len + 1);
	t->n++;
	t->memo[m].src = s, t->memo[m].dst = d;
	t->memo[(((uintptr_t)d >> 3) % STRS_MEMO)].src = d, t->memo[(((uintptr_t)d >> 3) % STRS_MEMO)].dst = d;
	return t->slot[h] = d;
}

/* The plan's interned copy of s (NULL stays NULL); sets *fail on allocation failure. */
static char *intern(Plan *p, const char *s, int *fail)
{
	char *d = plan_intern(p, s);
	if (s && !d)
		*fail = 1;
	return d;
}

/* A copy of s owned by the plan (NULL stays NULL); sets *fail on allocation failure. */
static char *dup(const char *s, int *fail)
{
	if (!s)
		return NULL;
	char *d = rt_strdup(s);
	if (!d)
		*fail = 1;
	return d;
}

Plan *plan_new(const char *target, const char *machine, uint64_t machine_hash, RtError *e)
{
	Plan *p = rt_calloc(1, sizeof *p);
	if (!p) {
		nomem(e);
		return NULL;
	}
	int fail = 0;
	p->target = dup(target, &fail);
	p->machine = dup(machine, &fail);
	p->machine_hash = machine_hash;
	if (fail) {
		plan_free(p);
		nomem(e);
		return NULL;
	}
	return p;
}

static void attrs_free(Attrs *as)
{
	for (int i = 0; i < as->n; i++) {   /* names and strings are interned */
		rt_free(as->a[i].ints);
		rt_free(as->a[i].floats);
	}
	rt_free(as->a);
}

static void instr_free(PlanInstr *in)
{
	rt_free(in->in);
	rt_free(in->out);
	attrs_free(&in->attrs);
	rt_free(in->tile);       /* keys, values and the node name are interned */
}

void plan_free(Plan *p)
{
	if (!p)
		return;
	rt_free(p->target);
	rt_free(p->machine);
	rt_free(p->source.model);
	rt_free(p->source.binds);
	rt_free(p->source.precision);
	rt_free(p->source.init);
	rt_free(p->source.phase);
	rt_free(p->source.passes);
	for (int i = 0; i < p->ndevices; i++) {
		rt_free(p->devices[i].name);
		rt_free(p->devices[i].kind);
	}
	for (int i = 0; i < p->nspaces; i++)
		rt_free(p->spaces[i].name);
	for (int i = 0; i < p->nunits; i++) {
		rt_free(p->units[i].name);
		rt_free(p->units[i].kind);
	}
	for (int i = 0; i < p->nlinks; i++)
		rt_free(p->links[i].name);
	for (int i = 0; i < p->nbuffers; i++)
		rt_free(p->buffers[i].name);   /* the format is interned */
	for (int i = 0; i < p->nconsts; i++) {
		rt_free(p->consts[i].path);
		rt_free(p->consts[i].key);
		rt_free(p->consts[i].vals);
		if (p->consts[i].data) {
			rt_tensor_free(p->consts[i].data);
			rt_free(p->consts[i].data);
		}
	}
	for (int i = 0; i < p->ninputs; i++)
		rt_free(p->inputs[i].name);
	for (int i = 0; i < p->noutputs; i++)
		rt_free(p->outputs[i].name);
	for (int i = 0; i < p->nevents; i++)
		rt_free(p->events[i]);
	for (int i = 0; i < p->nstreams; i++) {
		for (int j = 0; j < p->streams[i].nins; j++)
			instr_free(&p->streams[i].ins[j]);
		rt_free(p->streams[i].ins);
		rt_free(p->streams[i].name);
	}
	rt_free(p->devices); rt_free(p->spaces); rt_free(p->units); rt_free(p->links);
	rt_free(p->buffers); rt_free(p->consts); rt_free(p->inputs); rt_free(p->outputs);
	rt_free(p->events); rt_free(p->streams);
	strs_free(p->strs);
	rt_free(p);
}

int plan_set_source(Plan *p, const char *model, const char *binds, const char *precision, RtError *e)
{
	int fail = 0;
	rt_free(p->source.model);
	rt_free(p->source.binds);
	rt_free(p->source.precision);
	p->source.model = dup(model, &fail);
	p->source.binds = dup(binds, &fail);
	p->source.precision = dup(precision, &fail);
	return fail ? nomem(e) : 0;
}

int plan_set_source_init(Plan *p, const char *init, RtError *e)
{
	int fail = 0;
	rt_free(p->source.init);
	p->source.init = dup(init, &fail);
	return fail ? nomem(e) : 0;
}

int plan_set_source_phase(Plan *p, const char *phase, int64_t context, RtError *e)
{
	int fail = 0;
	rt_free(p->source.phase);
	p->source.phase = dup(phase, &fail);
	p->source.context = phase ? context : 0;
	return fail ? nomem(e) : 0;
}

int plan_set_source_passes(Plan *p, const char *passes, RtError *e)
{
	int fail = 0;
	rt_free(p->source.passes);
	p->source.passes = dup(passes, &fail);
	return fail ? nomem(e) : 0;
}

int plan_add_device(Plan *p, const PlanDevice *d, RtError *e)
{
	int i = PUSH(p, devices, e), fail = 0;
	if (i < 0)
		return -1;
	p->devices[i] = *d;
	p->devices[i].name = dup(d->name, &fail);
	p->devices[i].kind = dup(d->kind ? d->kind : "cpu", &fail);
	return fail ? nomem(e) : i;
}

int plan_add_space(Plan *p, const PlanSpace *s, RtError *e)
{
	int i = PUSH(p, spaces, e), fail = 0;
	if (i < 0)
		return -1;
	p->spaces[i] = *s;
	p->spaces[i].name = dup(s->name, &fail);
	return fail ? nomem(e) : i;
}

int plan_add_unit(Plan *p, const PlanUnit *u, RtError *e)
{
	int i = PUSH(p, units, e), fail = 0;
	if (i < 0)
		return -1;
	p->units[i] = *u;
	p->units[i].name = dup(u->name, &fail);
	p->units[i].kind = dup(u->kind, &fail);
	return fail ? nomem(e) : i;
}

int plan_add_link(Plan *p, const PlanLink *l, RtError *e)
{
	int i = PUSH(p, links, e), fail = 0;
	if (i < 0)
		return -1;
	p->links[i] = *l;
	p->links[i].name = dup(l->name, &fail);
	return fail ? nomem(e) : i;
}

int plan_add_buffer(Plan *p, const char *name, int space, int64_t offset, DType dt, int rank,
		    const int64_t *dims, RtError *e)
{
	if (rank < 0 || rank > RT_MAX_RANK)
		return rt_errorf(e, RT_EINTERNAL, "buffer '%s' has rank %d", name, rank);
	int i = PUSH(p, buffers, e), fail = 0;
	if (i < 0)
		return -1;
	PlanBuffer *b = &p->buffers[i];
	memset(b, 0, sizeof *b);
	b->space = space;
	b->offset = offset;
	b->dtype = dt;
	b->rank = rank;
	for (int k = 0; k < rank; k++)
		b->dims[k] = dims[k];
	int64_t n = plan_buffer_numel(b);
	b->size = n < 0 ? -1 : rt_dtype_bytes(dt, n);
	b->name = dup(name, &fail);
	b->format = intern(p, "row", &fail);
	return fail ? nomem(e) : i;
}

/* A deep copy of t (rt_malloc'd, data included), or NULL when memory runs out. */
static RtTensor *copy_tensor(const RtTensor *t)
{
	RtTensor *d = rt_malloc(sizeof *d);
	if (!d || rt_tensor_alloc(d, t->dtype, t->rank, t->dims, NULL) < 0) {
		rt_free(d);
		return NULL;
	}
	int st = rt_dtypes[t->dtype].storage;
	size_t size = st == S_F32 ? sizeof(float) : st == S_F64 ? sizeof(double) : sizeof(int64_t);
	if (t->n)
		memcpy(d->data, t->data, (size_t)t->n * size);
	d->tensor_scale = t->tensor_scale;
	return d;
}

int plan_add_const(Plan *p, const PlanConst *c, RtError *e)
{
	int i = PUSH(p, consts, e), fail = 0;
	if (i < 0)
		return -1;
	PlanConst *d = &p->consts[i];
	*d = *c;
	if (d->shard_full <= 0)
		d->shard_axis = -1, d->shard_off = d->shard_full = 0;
	d->path = dup(c->path, &fail);
	d->key = dup(c->key, &fail);
	d->vals = NULL;
	if (c->nvals > 0) {
		d->vals = rt_malloc((size_t)c->nvals * sizeof *d->vals);
		if (d->vals)
			memcpy(d->vals, c->vals, (size_t)c->nvals * sizeof *d->vals);
		else
			fail = 1, d->nvals = 0;
	}
	d->data = NULL;
	if (c->data && !fail && !(d->data = copy_tensor(c->data)))
		fail = 1;
	return fail ? nomem(e) : i;
}

static int add_io(Plan *p, int output, const char *name, int buffer, RtError *e)
{
	int i = output ? PUSH(p, outputs, e) : PUSH(p, inputs, e), fail = 0;
	if (i < 0)
		return -1;
	PlanIO *io = output ? &p->outputs[i] : &p->inputs[i];
	io->name = dup(name, &fail);
	io->buffer = buffer;
	io->line = 0;
	io->shard_axis = -1;
	io->shard_off = io->shard_full = 0;
	return fail ? nomem(e) : i;
}

void plan_io_shard(PlanIO *io, int axis, int64_t off, int64_t full)
{
	io->shard_axis = axis;
	io->shard_off = off;
	io->shard_full = full;
}

int plan_io_first(const PlanIO *io, int i)
{
	for (int j = 0; j < i; j++)
		if (strcmp(io[j].name, io[i].name) == 0)
			return 0;
	return 1;
}

int plan_io_dims(const Plan *p, const PlanIO *io, int64_t *dims)
{
	const PlanBuffer *b = &p->buffers[io->buffer];
	memcpy(dims, b->dims, sizeof b->dims);
	if (io->shard_axis >= 0 && io->shard_axis < b->rank)
		dims[io->shard_axis] = io->shard_full;
	return b->rank;
}

int plan_add_input(Plan *p, const char *name, int buffer, RtError *e) { return add_io(p, 0, name, buffer, e); }
int plan_add_output(Plan *p, const char *name, int buffer, RtError *e) { return add_io(p, 1, name, buffer, e); }

int plan_add_event(Plan *p, const char *name, RtError *e)
{
	int i = PUSH(p, events, e), fail = 0;
	if (i < 0)
		return -1;
	p->events[i] = dup(name, &fail);
	return fail ? nomem(e) : i;
}

int plan_add_stream(Plan *p, const char *name, int device, RtError *e)
{
	int i = PUSH(p, streams, e), fail = 0;
	if (i < 0)
		return -1;
	PlanStream *s = &p->streams[i];
	memset(s, 0, sizeof *s);
	s->name = dup(name, &fail);
	s->device = device;
	return fail ? nomem(e) : i;
}

void plan_instr_init(PlanInstr *in, PlanInstrKind kind)
{
	memset(in, 0, sizeof *in);
	in->kind = kind;
	in->op = RT_OP_COUNT;
	in->event = in->link = in->unit = -1;
	in->cycle = in->dur = -1;
}

/* Deep copy of one attribute into d; 0 or -1. */
static int attr_copy(Plan *p, Attr *d, const Attr *s)
{
	int fail = 0;
	*d = *s;
	d->name = intern(p, s->name, &fail);
	d->s = intern(p, s->s, &fail);
	d->ints = NULL;
	d->floats = NULL;
	if (s->kind == ATTR_INTS && s->n > 0) {
		d->ints = rt_malloc((size_t)s->n * sizeof *d->ints);
		if (d->ints)
			memcpy(d->ints, s->ints, (size_t)s->n * sizeof *d->ints);
		else
			fail = 1;
	}
	if (s->kind == ATTR_FLOATS && s->n > 0) {
		d->floats = rt_malloc((size_t)s->n * sizeof *d->floats);
		if (d->floats)
			memcpy(d->floats, s->floats, (size_t)s->n * sizeof *d->floats);
		else
			fail = 1;
	}
	return fail ? -1 : 0;
}

static int *ints_dup(const int *v, int n, int *fail)
{
	if (n <= 0)
		return NULL;
	int *d = rt_malloc((size_t)n * sizeof *d);
	if (!d) {
		*fail = 1;
		return NULL;
	}
	memcpy(d, v, (size_t)n * sizeof *d);
	return d;
}

#define PLAN_TILE_SPARE 4

/* Deep copy of src's owned parts into d (whose scalar fields are already copied). */
static int instr_copy(Plan *p, PlanInstr *d, const PlanInstr *s)
{
	int fail = 0;
	d->in = ints_dup(s->in, s->nin, &fail);
	d->out = ints_dup(s->out, s->nout, &fail);
	d->node = intern(p, s->node, &fail);
	d->attrs.a = NULL;
	d->attrs.n = 0;
	d->tile = NULL;
	d->ntile = 0;
	if (s->attrs.n > 0 && !(d->attrs.a = rt_calloc((size_t)s->attrs.n, sizeof(Attr))))
		return -1;
	for (int i = 0; i < s->attrs.n && !fail; i++, d->attrs.n++)
		fail = attr_copy(p, &d->attrs.a[i], &s->attrs.a[i]) < 0;
	if (fail)
		return -1;
	d->tile_interned = 0;
	/* PLAN_TILE_SPARE pairs of room: the targets' annotation passes append theirs (the error band's
	 * four, an ICI transfer's) with rt_realloc, which then stays in place instead of moving the
	 * array of every instruction */
	if (s->ntile > 0 && !(d->tile = rt_calloc((size_t)s->ntile + PLAN_TILE_SPARE, sizeof(PlanKV))))
		return -1;
	if (s->tile_interned) {
		memcpy(d->tile, s->tile, sizeof *d->tile * (size_t)s->ntile);
		d->ntile = s->ntile;
		return 0;
	}
	for (int i = 0; i < s->ntile && !fail; i++, d->ntile++) {
		d->tile[i].key = intern(p, s->tile[i].key, &fail);
		d->tile[i].val = intern(p, s->tile[i].val, &fail);
	}
	return fail ? -1 : 0;
}

int plan_add_instr(Plan *p, int s, const PlanInstr *in, RtError *e)
{
	PlanStream *st = &p->streams[s];
	if (grow((void **)&st->ins, &st->cap, st->nins, sizeof *st->ins))
		return nomem(e);
	PlanInstr *d = &st->ins[st->nins];
	*d = *in;
	if (instr_copy(p, d, in) < 0) {
		instr_free(d);
		return nomem(e);
	}
	return st->nins++;
}

/* ---- lookups ---- */
#define FIND(vec, field) \
	for (int i = 0; i < p->n##vec; i++) \
		if (p->vec[i].field && strcmp(p->vec[i].field, name) == 0) \
			return i; \
	return -1;

int plan_find_buffer(const Plan *p, const char *name) { FIND(buffers, name) }
int plan_find_device(const Plan *p, const char *name) { FIND(devices, name) }
int plan_find_space(const Plan *p, const char *name) { FIND(spaces, name) }
int plan_find_unit(const Plan *p, const char *name) { FIND(units, name) }

double plan_instr_num(const PlanInstr *in, const char *key, double dflt)
{
	for (int i = 0; i < in->ntile; i++)
		if (strcmp(in->tile[i].key, key) == 0) {
			char *end;
			double v = strtod(in->tile[i].val, &end);
			return end != in->tile[i].val ? v : dflt;
		}
	return dflt;
}
int plan_find_link(const Plan *p, const char *name) { FIND(links, name) }

int plan_find_event(const Plan *p, const char *name)
{
	for (int i = 0; i < p->nevents; i++)
		if (strcmp(p->events[i], name) == 0)
			return i;
	return -1;
}

int64_t plan_buffer_numel(const PlanBuffer *b)
{
	int64_t n = 1;
	for (int i = 0; i < b->rank; i++) {
		if (b->dims[i] < 0 || (b->dims[i] && n > INT64_MAX / b->dims[i]))
			return -1;
		n *= b->dims[i];
	}
	return n;
}

int plan_default_unit(const Plan *p, int device, PlanInstrKind k)
{
	const char *want = k == PI_COPY ? "dma" : "compute";
	for (int i = 0; i < p->nunits; i++)
		if (p->units[i].device == device && strcmp(p->units[i].kind, want) == 0)
			return i;
	for (int i = 0; i < p->nunits; i++)   /* no dma unit: copies share the compute unit */
		if (p->units[i].device == device && strcmp(p->units[i].kind, "compute") == 0)
			return i;
	return -1;
}
