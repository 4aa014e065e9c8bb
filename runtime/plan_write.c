/* runtime/plan_write.c: the one plan writer.  Serialises a Plan in the canonical text form of
 * docs/plan-format.md: one entity per line, fields in a fixed order, defaults omitted, floats in
 * their shortest round-trip spelling, so plan_parse followed by plan_write reproduces a written
 * file byte for byte.  Requires runtime/plan.h; pure (writes only to the given FILE).  Also
 * plan_externalize, which moves in-memory (`data`) constants into one safetensors file beside
 * the plan, each with its checksum. */
#include "runtime/plan.h"
#include "runtime/npy.h"
#include "runtime/safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The writer's own output buffer: a large plan is millions of short pieces, and stdio's
 * per-call locking and generic xsputn path dominated writing them; pieces are copied here and
 * handed to fwrite 64 KiB at a time. */
#define STR_CACHE 512
#define PAIR_CACHE 8192
#define PAIR_BYTES (16u << 20)   /* the pieces' text at most */
typedef struct {
	FILE *f;
	size_t n;
	int err;
	char b[1 << 16];
	/* put_str's last answers by address (the plan's strings are interned and none is freed
	 * while it is written, so an address names one text): its length, or -1 when it needs
	 * escapes */
	struct {
		const char *s;
		int64_t len;
	} str[STR_CACHE];
	/* put_pair's pieces by the addresses of their two strings (` t.KEY="VAL"`, ` a.NAME="S"`):
	 * a 64-device plan writes a few thousand distinct pairs millions of times; the text of each
	 * lies in pbuf at off, len bytes (len 0: an empty slot) */
	struct {
		const char *a, *b;
		uint32_t off, len;
	} pair[PAIR_CACHE];
	char *pbuf;
	size_t np, cp;
	/* every buffer's name length (NULL: not allocated, strlen each time): a buffer's name is
	 * written on its line and in every instruction that reads or writes it */
	uint32_t *blen;
} Out;

static void out_flush(Out *o)
{
	if (o->n && fwrite(o->b, 1, o->n, o->f) != o->n)
		o->err = 1;
	o->n = 0;
}

/* out_mem when the buffer cannot take k more bytes. */
static void out_mem_slow(Out *o, const char *s, size_t k)
{
	out_flush(o);
	if (k > sizeof o->b) {
		if (fwrite(s, 1, k, o->f) != k)
			o->err = 1;
		return;
	}
	memcpy(o->b, s, k);
	o->n = k;
}

/* Inlined: a plan is tens of millions of short pieces. */
static inline void out_mem(Out *o, const char *s, size_t k)
{
	if (k > sizeof o->b - o->n) {
		out_mem_slow(o, s, k);
		return;
	}
	memcpy(o->b + o->n, s, k);
	o->n += k;
}

static inline void out_c(Out *o, char c)
{
	if (o->n == sizeof o->b)
		out_flush(o);
	o->b[o->n++] = c;
}

/* Inlined, so that a literal's length is known at compile time. */
static inline void out_s(Out *o, const char *s) { out_mem(o, s, strlen(s)); }

/* Writes v as the shortest decimal that reads back to the same double; float-looking (keeps a
 * '.' or exponent) when as_float is set so the reader can tell floats from integers. */
static void put_num(Out *f, double v, int as_float)
{
	if (isnan(v)) {
		out_s(f, "nan");
		return;
	}
	if (isinf(v)) {
		out_s(f, v < 0 ? "-inf" : "inf");
		return;
	}
	char buf[40];
	rt_shortest_double(buf, sizeof buf, v);
	out_s(f, buf);
	if (as_float && !strpbrk(buf, ".en"))
		out_s(f, ".0");
}

/* A quoted string (runtime/rt.h's escapes): a string that needs none is copied between its
 * quotes; one that does goes through rt_fput_quoted after the buffer is flushed. */
static void put_str(Out *f, const char *s)
{
	size_t h = ((uintptr_t)s >> 3) % STR_CACHE;
	if (f->str[h].s != s) {
		const unsigned char *c = (const unsigned char *)s;
		while (*c && *c != '"' && *c != '\\' && *c >= 0x20 && *c != 0x7f)
			c++;
		f->str[h].s = s, f->str[h].len = *c ? -1 : (int64_t)((const char *)c - s);
	}
	if (f->str[h].len >= 0) {
		out_c(f, '"');
		out_mem(f, s, (size_t)f->str[h].len);
		out_c(f, '"');
		return;
	}
	out_flush(f);
	rt_fput_quoted(f->f, s, '"');
}

/* pre (" t." or " a."), key, '=' and the quoted val, from the pair cache when val needs no
 * escapes. */
static void put_pair(Out *f, const char *pre, const char *key, const char *val)
{
	size_t h = (((uintptr_t)key >> 3) * 31u + ((uintptr_t)val >> 3)) % PAIR_CACHE;
	if (f->pair[h].len && f->pair[h].a == key && f->pair[h].b == val) {
		out_mem(f, f->pbuf + f->pair[h].off, f->pair[h].len);
		return;
	}
	size_t k = strlen(key), n = f->n;
	out_s(f, pre);
	out_s(f, key);
	out_c(f, '=');
	put_str(f, val);
	size_t hs = ((uintptr_t)val >> 3) % STR_CACHE, len = 3 + k + 1 + 2 + (size_t)f->str[hs].len;
	if (f->str[hs].s != val || f->str[hs].len < 0 || f->n < n || f->n - n != len || f->np + len > PAIR_BYTES)
		return;      /* escaped, or the buffer was flushed meanwhile: not kept */
	if (f->np + len > f->cp) {
		size_t cp = f->cp ? 2 * f->cp : 1 << 16;
		while (cp < f->np + len)
			cp *= 2;
		char *b = rt_realloc(f->pbuf, cp);
		if (!b)
			return;
		f->pbuf = b, f->cp = cp;
	}
	memcpy(f->pbuf + f->np, f->b + n, len);
	f->pair[h].a = key, f->pair[h].b = val, f->pair[h].off = (uint32_t)f->np, f->pair[h].len = (uint32_t)len;
	f->np += len;
}

/* An integer in decimal, without printf (whose format parsing dominated writing large plans),
 * two digits a step. */
static void put_i64(Out *f, int64_t v)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	char buf[24], *e = buf + sizeof buf, *c = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;
		u /= 100;
		*--c = pairs[d + 1], *--c = pairs[d];
	}
	if (u >= 10)
		*--c = pairs[u * 2 + 1], *--c = pairs[u * 2];
	else
		*--c = (char)('0' + u);
	if (v < 0)
		*--c = '-';
	out_mem(f, c, (size_t)(e - c));
}

/* " key=" then s (inlined: the keys are literals) */
static inline void put_field(Out *f, const char *key, const char *s)
{
	out_c(f, ' ');
	out_s(f, key);
	out_c(f, '=');
	out_s(f, s);
}

/* " key=" then v */
static inline void put_field_i64(Out *f, const char *key, int64_t v)
{
	out_c(f, ' ');
	out_s(f, key);
	out_c(f, '=');
	put_i64(f, v);
}

static void put_dims(Out *f, const int64_t *d, int n)
{
	out_c(f, '[');
	for (int i = 0; i < n; i++) {
		if (i)
			out_c(f, ',');
		put_i64(f, d[i]);
	}
	out_c(f, ']');
}

/* Buffer b's name. */
static inline void put_buf(Out *f, const Plan *p, int b)
{
	if (f->blen)
		out_mem(f, p->buffers[b].name, f->blen[b]);
	else
		out_s(f, p->buffers[b].name);
}

static void put_bufs(Out *f, const Plan *p, const char *key, const int *b, int n)
{
	put_field(f, key, "[");
	for (int i = 0; i < n; i++) {
		if (i)
			out_c(f, ',');
		if (b[i] < 0)
			out_c(f, '_');
		else
			put_buf(f, p, b[i]);
	}
	out_c(f, ']');
}

static void put_attr(Out *f, const Attr *a)
{
	if (a->kind == ATTR_STRING) {
		put_pair(f, " a.", a->name, a->s);
		return;
	}
	out_s(f, " a.");
	out_s(f, a->name);
	out_c(f, '=');
	switch (a->kind) {
	case ATTR_INT: put_i64(f, a->i); break;
	case ATTR_FLOAT: put_num(f, a->f, 1); break;
	case ATTR_STRING: put_str(f, a->s); break;
	case ATTR_INTS: put_dims(f, a->ints, a->n); break;
	case ATTR_FLOATS:
		out_s(f, "f[");
		for (int i = 0; i < a->n; i++) {
			if (i)
				out_c(f, ',');
			put_num(f, a->floats[i], 1);
		}
		out_c(f, ']');
		break;
	}
}

/* Numerics fields: only those that differ from the defaults. */
static void put_opts(Out *f, const RtExecOpts *o)
{
	if (o->accum_f64)
		out_s(f, " accum=f64");
	if (o->mma_in != DT_INVALID)
		put_field(f, "mma_in", rt_dtype_name(o->mma_in));
	if (o->fp8_promote_k)
		put_field_i64(f, "fp8_promote", o->fp8_promote_k);
	if (o->exp2_poly)
		put_field_i64(f, "exp2_poly", o->exp2_poly);
	if (o->scale_rule)
		out_s(f, " scale_rule=rceil");
	if (o->fp8_scale)
		put_field(f, "fp8_scale", rt_fp8_scale_name((RtFp8Scale)o->fp8_scale));
}

static void put_instr(Out *f, const Plan *p, const PlanInstr *in)
{
	out_s(f, "  ");
	out_s(f, plan_instr_names[in->kind]);
	const char *what = in->kind == PI_KERNEL ? plan_op_name(in->op) : in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll]
			   : in->kind == PI_RECORD || in->kind == PI_WAIT ? p->events[in->event] : NULL;
	if (what) {
		out_c(f, ' ');
		out_s(f, what);
	}
	if (in->kind != PI_RECORD && in->kind != PI_WAIT) {
		put_bufs(f, p, "in", in->in, in->nin);
		put_bufs(f, p, "out", in->out, in->nout);
	}
	if (in->link >= 0)
		put_field(f, "link", p->links[in->link].name);
	if (in->unit >= 0)
		put_field(f, "unit", p->units[in->unit].name);
	if (in->cycle >= 0)
		put_field_i64(f, "cycle", in->cycle);
	if (in->dur >= 0)
		put_field_i64(f, "dur", in->dur);
	if (in->flops > 0) {
		out_s(f, " flops=");
		put_num(f, in->flops, 0);
	}
	put_opts(f, &in->opts);
	for (int i = 0; i < in->attrs.n; i++)
		put_attr(f, &in->attrs.a[i]);
	for (int i = 0; i < in->ntile; i++)
		put_pair(f, " t.", in->tile[i].key, in->tile[i].val);
	if (in->node) {
		out_s(f, " node=");
		put_str(f, in->node);
	}
	out_c(f, '\n');
}

/* " shard=AXIS:OFF:FULL" */
static void put_shard(Out *f, int axis, int64_t off, int64_t full)
{
	put_field_i64(f, "shard", axis);
	out_c(f, ':');
	put_i64(f, off);
	out_c(f, ':');
	put_i64(f, full);
}

static void put_const(Out *f, const Plan *p, const PlanConst *c)
{
	out_s(f, "const ");
	put_buf(f, p, c->buffer);
	put_field(f, "init", plan_init_names[c->kind]);
	switch (c->kind) {
	case PINIT_NORMAL:
	case PINIT_UNIFORM:
		out_s(f, c->kind == PINIT_NORMAL ? " mean=" : " low=");
		put_num(f, c->a, 0);
		out_s(f, c->kind == PINIT_NORMAL ? " std=" : " high=");
		put_num(f, c->b, 0);
		{
			char buf[24];
			snprintf(buf, sizeof buf, "%" PRIu64, c->seed);
			put_field(f, "seed", buf);
		}
		put_field_i64(f, "instance", c->instance);
		break;
	case PINIT_FILL:
		out_s(f, " value=");
		put_num(f, c->a, 0);
		break;
	case PINIT_INLINE:
		out_s(f, " values=[");
		for (int64_t i = 0; i < c->nvals; i++) {
			if (i)
				out_c(f, ',');
			put_num(f, c->vals[i], 0);
		}
		out_c(f, ']');
		break;
	case PINIT_NPY:
	case PINIT_SAFETENSORS:
		out_s(f, " path=");
		put_str(f, c->path);
		if (c->kind == PINIT_SAFETENSORS) {
			out_s(f, " key=");
			put_str(f, c->key);
		}
		if (c->has_xxh3) {
			char buf[24];
			snprintf(buf, sizeof buf, "%016" PRIx64, c->xxh3);
			put_field(f, "xxh3", buf);
		}
		break;
	case PINIT_UNBOUND:
	case PINIT_DATA:        /* refused by plan_write */
	case PINIT_COUNT:
		break;
	}
	if (c->shard_axis >= 0)
		put_shard(f, c->shard_axis, c->shard_off, c->shard_full);
	out_c(f, '\n');
}

static void put_machine(Out *f, const Plan *p)
{
	for (int i = 0; i < p->ndevices; i++) {
		const PlanDevice *d = &p->devices[i];
		out_s(f, "device ");
		out_s(f, d->name);
		put_field(f, "kind", d->kind);
		out_s(f, " peak=");
		put_num(f, d->peak_flops, 0);
		if (d->peak_flops_f64 > 0) {
			out_s(f, " peak_f64=");
			put_num(f, d->peak_flops_f64, 0);
		}
		out_s(f, " overhead=");
		put_num(f, d->overhead_s, 0);
		if (d->clock_hz > 0) {
			out_s(f, " clock=");
			put_num(f, d->clock_hz, 0);
		}
		if (d->peak_work > 0) {
			out_s(f, " peak_work=");
			put_num(f, d->peak_work, 0);
			out_s(f, " peak_fmt=");
			put_str(f, d->peak_fmt);
		}
		out_c(f, '\n');
	}
	for (int i = 0; i < p->nspaces; i++) {
		const PlanSpace *s = &p->spaces[i];
		out_s(f, "space ");
		out_s(f, s->name);
		put_field(f, "device", p->devices[s->device].name);
		put_field_i64(f, "capacity", s->capacity);
		out_s(f, " bandwidth=");
		put_num(f, s->bandwidth, 0);
		out_c(f, '\n');
	}
	for (int i = 0; i < p->nunits; i++) {
		out_s(f, "unit ");
		out_s(f, p->units[i].name);
		put_field(f, "device", p->devices[p->units[i].device].name);
		put_field(f, "kind", p->units[i].kind);
		out_c(f, '\n');
	}
	for (int i = 0; i < p->nlinks; i++) {
		const PlanLink *l = &p->links[i];
		out_s(f, "link ");
		out_s(f, l->name);
		put_field(f, "src", p->devices[l->src].name);
		put_field(f, "dst", p->devices[l->dst].name);
		out_s(f, " bandwidth=");
		put_num(f, l->bandwidth, 0);
		out_s(f, " latency=");
		put_num(f, l->latency_s, 0);
		out_c(f, '\n');
	}
}

static void put_header(Out *f, const Plan *p)
{
	char buf[64];
	out_s(f, "aicc-plan ");
	put_i64(f, PLAN_VERSION);
	out_s(f, "\ntarget ");
	out_s(f, p->target);
	out_s(f, "\nmachine ");
	out_s(f, p->machine);
	snprintf(buf, sizeof buf, "%016" PRIx64, p->machine_hash);
	put_field(f, "hash", buf);
	out_c(f, '\n');
	if (p->source.model || p->source.binds || p->source.precision || p->source.init || p->source.phase || p->source.passes) {
		out_s(f, "source");
		if (p->source.model)
			out_s(f, " model="), put_str(f, p->source.model);
		if (p->source.model_hash[0])
			put_field(f, "model_hash", p->source.model_hash);
		if (p->source.binds)
			out_s(f, " bind="), put_str(f, p->source.binds);
		if (p->source.init)
			out_s(f, " init="), put_str(f, p->source.init);
		if (p->source.precision)
			put_field(f, "precision", p->source.precision);
		if (p->source.phase) {
			put_field(f, "phase", p->source.phase);
			put_field_i64(f, "context", p->source.context);
		}
		if (p->source.phase && p->source.model_flops > 0) {
			snprintf(buf, sizeof buf, "%.17g", p->source.model_flops);
			put_field(f, "model_flops", buf);
		}
		if (p->source.phase && p->source.micro_batches > 1)
			put_field_i64(f, "micro_batches", p->source.micro_batches);
		if (p->source.passes)
			out_s(f, " passes="), put_str(f, p->source.passes);
		out_c(f, '\n');
	}
}

static void write_io(Out *f, const Plan *p, const char *kw, const PlanIO *io)
{
	out_s(f, kw);
	out_c(f, ' ');
	out_s(f, io->name);
	put_field(f, "buffer", p->buffers[io->buffer].name);
	if (io->shard_axis >= 0)
		put_shard(f, io->shard_axis, io->shard_off, io->shard_full);
	out_c(f, '\n');
}

int plan_write(const Plan *p, FILE *fp)
{
	for (int i = 0; i < p->nconsts; i++)
		if (p->consts[i].kind == PINIT_DATA)
			return -1;
	Out *f = rt_malloc(sizeof *f);
	if (!f)
		return -1;
	f->f = fp, f->n = 0, f->err = 0;
	memset(f->str, 0, sizeof f->str);
	memset(f->pair, 0, sizeof f->pair);
	f->pbuf = NULL, f->np = f->cp = 0;
	if ((f->blen = p->nbuffers > 0 ? rt_malloc(sizeof *f->blen * (size_t)p->nbuffers) : NULL))
		for (int i = 0; i < p->nbuffers; i++)
			f->blen[i] = (uint32_t)strlen(p->buffers[i].name);
	put_header(f, p);
	put_machine(f, p);
	for (int i = 0; i < p->nbuffers; i++) {
		const PlanBuffer *b = &p->buffers[i];
		out_s(f, "buffer ");
		put_buf(f, p, i);
		put_field(f, "space", p->spaces[b->space].name);
		put_field_i64(f, "offset", b->offset);
		put_field_i64(f, "size", b->size);
		put_field(f, "dtype", rt_dtype_name(b->dtype));
		out_s(f, " shape=");
		put_dims(f, b->dims, b->rank);
		put_field(f, "format", b->format);
		out_c(f, '\n');
	}
	for (int i = 0; i < p->nconsts; i++)
		put_const(f, p, &p->consts[i]);
	for (int i = 0; i < p->ninputs; i++)
		write_io(f, p, "input", &p->inputs[i]);
	for (int i = 0; i < p->noutputs; i++)
		write_io(f, p, "output", &p->outputs[i]);
	for (int i = 0; i < p->nevents; i++) {
		out_s(f, "event ");
		out_s(f, p->events[i]);
		out_c(f, '\n');
	}
	for (int i = 0; i < p->nstreams; i++) {
		const PlanStream *s = &p->streams[i];
		out_s(f, "stream ");
		out_s(f, s->name);
		put_field(f, "device", p->devices[s->device].name);
		put_field_i64(f, "count", s->nins);
		out_c(f, '\n');
		for (int j = 0; j < s->nins; j++)
			put_instr(f, p, &s->ins[j]);
	}
	out_s(f, "end\n");
	out_flush(f);
	int err = f->err;
	rt_free(f->pbuf);
	rt_free(f->blen);
	rt_free(f);
	return err || ferror(fp) ? -1 : 0;
}

int plan_externalize(Plan *p, FILE *f, const char *ref, RtError *e)
{
	int n = 0;
	for (int i = 0; i < p->nconsts; i++)
		n += p->consts[i].kind == PINIT_DATA;
	if (!n)
		return 0;
	const char **names = rt_calloc((size_t)n, sizeof *names);
	const RtTensor **ts = rt_calloc((size_t)n, sizeof *ts);
	uint64_t *sums = rt_calloc((size_t)n, sizeof *sums);
	char **keys = rt_calloc((size_t)n, sizeof *keys);
	int *which = rt_calloc((size_t)n, sizeof *which);
	int rc = names && ts && sums && keys && which ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory externalising constants");
	for (int i = 0, k = 0; rc == 0 && i < p->nconsts; i++) {
		const PlanConst *c = &p->consts[i];
		if (c->kind != PINIT_DATA)
			continue;
		/* the key is the buffer's name (unique in the plan); the header's reserved name gets its index */
		const char *b = p->buffers[c->buffer].name;
		char alt[64];
		snprintf(alt, sizeof alt, "__metadata__.%d", i);
		if (!(keys[k] = rt_strdup(strcmp(b, "__metadata__") ? b : alt)))
			rc = rt_errorf(e, RT_ENOMEM, "out of memory externalising constants");
		names[k] = keys[k], ts[k] = c->data, which[k++] = i;
	}
	if (rc == 0)
		rc = rt_safetensors_fwrite(f, n, names, ts, NULL, sums, e);
	for (int k = 0; rc == 0 && k < n; k++) {
		PlanConst *c = &p->consts[which[k]];
		char *path = rt_strdup(ref);
		if (!path) {
			rc = rt_errorf(e, RT_ENOMEM, "out of memory externalising constants");
			break;
		}
		rt_tensor_free(c->data);
		rt_free(c->data);
		c->data = NULL;
		rt_free(c->path);
		rt_free(c->key);
		c->path = path;
		c->key = keys[k];
		keys[k] = NULL;
		c->kind = PINIT_SAFETENSORS;
		c->xxh3 = sums[k];
		c->has_xxh3 = 1;
	}
	for (int k = 0; keys && k < n; k++)
		rt_free(keys[k]);
	rt_free(names), rt_free(ts), rt_free(sums), rt_free(keys), rt_free(which);
	return rc < 0 ? -1 : n;
}
