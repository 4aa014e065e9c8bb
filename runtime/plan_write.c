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

/* Writes v as the shortest decimal that reads back to the same double; float-looking (keeps a
 * '.' or exponent) when as_float is set so the reader can tell floats from integers. */
static void put_num(FILE *f, double v, int as_float)
{
	if (isnan(v)) {
		fputs("nan", f);
		return;
	}
	if (isinf(v)) {
		fputs(v < 0 ? "-inf" : "inf", f);
		return;
	}
	char buf[40];
	rt_shortest_double(buf, sizeof buf, v);
	fputs(buf, f);
	if (as_float && !strpbrk(buf, ".en"))
		fputs(".0", f);
}

/* A quoted string (runtime/rt.h). */
static void put_str(FILE *f, const char *s) { rt_fput_quoted(f, s, '"'); }

/* An integer in decimal, without printf (whose format parsing dominated writing large plans). */
static void put_i64(FILE *f, int64_t v)
{
	char buf[24], *e = buf + sizeof buf, *c = e;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		*--c = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--c = '-';
	fwrite(c, 1, (size_t)(e - c), f);
}

/* " key=" then s */
static void put_field(FILE *f, const char *key, const char *s)
{
	fputc(' ', f);
	fputs(key, f);
	fputc('=', f);
	fputs(s, f);
}

static void put_dims(FILE *f, const int64_t *d, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		put_i64(f, d[i]);
	}
	fputc(']', f);
}

static void put_bufs(FILE *f, const Plan *p, const char *key, const int *b, int n)
{
	put_field(f, key, "[");
	for (int i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		fputs(b[i] < 0 ? "_" : p->buffers[b[i]].name, f);
	}
	fputc(']', f);
}

static void put_attr(FILE *f, const Attr *a)
{
	fputs(" a.", f);
	fputs(a->name, f);
	fputc('=', f);
	switch (a->kind) {
	case ATTR_INT: put_i64(f, a->i); break;
	case ATTR_FLOAT: put_num(f, a->f, 1); break;
	case ATTR_STRING: put_str(f, a->s); break;
	case ATTR_INTS: put_dims(f, a->ints, a->n); break;
	case ATTR_FLOATS:
		fputs("f[", f);
		for (int i = 0; i < a->n; i++) {
			if (i)
				fputc(',', f);
			put_num(f, a->floats[i], 1);
		}
		fputc(']', f);
		break;
	}
}

/* Numerics fields: only those that differ from the defaults. */
static void put_opts(FILE *f, const RtExecOpts *o)
{
	if (o->accum_f64)
		fputs(" accum=f64", f);
	if (o->mma_in != DT_INVALID)
		fprintf(f, " mma_in=%s", rt_dtype_name(o->mma_in));
	if (o->fp8_promote_k)
		fprintf(f, " fp8_promote=%d", o->fp8_promote_k);
	if (o->exp2_poly)
		fprintf(f, " exp2_poly=%d", o->exp2_poly);
	if (o->scale_rule)
		fputs(" scale_rule=rceil", f);
	if (o->fp8_scale)
		fprintf(f, " fp8_scale=%s", rt_fp8_scale_name((RtFp8Scale)o->fp8_scale));
}

static void put_instr(FILE *f, const Plan *p, const PlanInstr *in)
{
	fputs("  ", f);
	fputs(plan_instr_names[in->kind], f);
	const char *what = in->kind == PI_KERNEL ? plan_op_name(in->op) : in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll]
			   : in->kind == PI_RECORD || in->kind == PI_WAIT ? p->events[in->event] : NULL;
	if (what) {
		fputc(' ', f);
		fputs(what, f);
	}
	if (in->kind != PI_RECORD && in->kind != PI_WAIT) {
		put_bufs(f, p, "in", in->in, in->nin);
		put_bufs(f, p, "out", in->out, in->nout);
	}
	if (in->link >= 0)
		put_field(f, "link", p->links[in->link].name);
	if (in->unit >= 0)
		put_field(f, "unit", p->units[in->unit].name);
	if (in->cycle >= 0) {
		fputs(" cycle=", f);
		put_i64(f, in->cycle);
	}
	if (in->dur >= 0) {
		fputs(" dur=", f);
		put_i64(f, in->dur);
	}
	if (in->flops > 0) {
		fputs(" flops=", f);
		put_num(f, in->flops, 0);
	}
	put_opts(f, &in->opts);
	for (int i = 0; i < in->attrs.n; i++)
		put_attr(f, &in->attrs.a[i]);
	for (int i = 0; i < in->ntile; i++) {
		fputs(" t.", f);
		fputs(in->tile[i].key, f);
		fputc('=', f);
		put_str(f, in->tile[i].val);
	}
	if (in->node) {
		fputs(" node=", f);
		put_str(f, in->node);
	}
	fputc('\n', f);
}

static void put_const(FILE *f, const Plan *p, const PlanConst *c)
{
	fprintf(f, "const %s init=%s", p->buffers[c->buffer].name, plan_init_names[c->kind]);
	switch (c->kind) {
	case PINIT_NORMAL:
	case PINIT_UNIFORM:
		fputs(c->kind == PINIT_NORMAL ? " mean=" : " low=", f);
		put_num(f, c->a, 0);
		fputs(c->kind == PINIT_NORMAL ? " std=" : " high=", f);
		put_num(f, c->b, 0);
		fprintf(f, " seed=%" PRIu64 " instance=%" PRId64, c->seed, c->instance);
		break;
	case PINIT_FILL:
		fputs(" value=", f);
		put_num(f, c->a, 0);
		break;
	case PINIT_INLINE:
		fputs(" values=[", f);
		for (int64_t i = 0; i < c->nvals; i++) {
			if (i)
				fputc(',', f);
			put_num(f, c->vals[i], 0);
		}
		fputc(']', f);
		break;
	case PINIT_NPY:
	case PINIT_SAFETENSORS:
		fputs(" path=", f);
		put_str(f, c->path);
		if (c->kind == PINIT_SAFETENSORS) {
			fputs(" key=", f);
			put_str(f, c->key);
		}
		if (c->has_xxh3)
			fprintf(f, " xxh3=%016" PRIx64, c->xxh3);
		break;
	case PINIT_UNBOUND:
	case PINIT_DATA:        /* refused by plan_write */
	case PINIT_COUNT:
		break;
	}
	if (c->shard_axis >= 0)
		fprintf(f, " shard=%d:%" PRId64 ":%" PRId64, c->shard_axis, c->shard_off, c->shard_full);
	fputc('\n', f);
}

static void put_machine(FILE *f, const Plan *p)
{
	for (int i = 0; i < p->ndevices; i++) {
		const PlanDevice *d = &p->devices[i];
		fprintf(f, "device %s kind=%s peak=", d->name, d->kind);
		put_num(f, d->peak_flops, 0);
		if (d->peak_flops_f64 > 0) {
			fputs(" peak_f64=", f);
			put_num(f, d->peak_flops_f64, 0);
		}
		fputs(" overhead=", f);
		put_num(f, d->overhead_s, 0);
		if (d->clock_hz > 0) {
			fputs(" clock=", f);
			put_num(f, d->clock_hz, 0);
		}
		fputc('\n', f);
	}
	for (int i = 0; i < p->nspaces; i++) {
		const PlanSpace *s = &p->spaces[i];
		fprintf(f, "space %s device=%s capacity=%" PRId64 " bandwidth=", s->name,
			p->devices[s->device].name, s->capacity);
		put_num(f, s->bandwidth, 0);
		fputc('\n', f);
	}
	for (int i = 0; i < p->nunits; i++)
		fprintf(f, "unit %s device=%s kind=%s\n", p->units[i].name,
			p->devices[p->units[i].device].name, p->units[i].kind);
	for (int i = 0; i < p->nlinks; i++) {
		const PlanLink *l = &p->links[i];
		fprintf(f, "link %s src=%s dst=%s bandwidth=", l->name, p->devices[l->src].name,
			p->devices[l->dst].name);
		put_num(f, l->bandwidth, 0);
		fputs(" latency=", f);
		put_num(f, l->latency_s, 0);
		fputc('\n', f);
	}
}

static void put_header(FILE *f, const Plan *p)
{
	fprintf(f, "aicc-plan %d\ntarget %s\nmachine %s hash=%016" PRIx64 "\n", PLAN_VERSION,
		p->target, p->machine, p->machine_hash);
	if (p->source.model || p->source.binds || p->source.precision || p->source.init || p->source.phase) {
		fputs("source", f);
		if (p->source.model)
			fputs(" model=", f), put_str(f, p->source.model);
		if (p->source.binds)
			fputs(" bind=", f), put_str(f, p->source.binds);
		if (p->source.init)
			fputs(" init=", f), put_str(f, p->source.init);
		if (p->source.precision)
			fprintf(f, " precision=%s", p->source.precision);
		if (p->source.phase)
			fprintf(f, " phase=%s context=%lld", p->source.phase, (long long)p->source.context);
		if (p->source.phase && p->source.model_flops > 0)
			fprintf(f, " model_flops=%.17g", p->source.model_flops);
		if (p->source.phase && p->source.micro_batches > 1)
			fprintf(f, " micro_batches=%lld", (long long)p->source.micro_batches);
		fputc('\n', f);
	}
}

static void write_io(FILE *f, const Plan *p, const char *kw, const PlanIO *io)
{
	fprintf(f, "%s %s buffer=%s", kw, io->name, p->buffers[io->buffer].name);
	if (io->shard_axis >= 0)
		fprintf(f, " shard=%d:%" PRId64 ":%" PRId64, io->shard_axis, io->shard_off, io->shard_full);
	fputc('\n', f);
}

int plan_write(const Plan *p, FILE *f)
{
	for (int i = 0; i < p->nconsts; i++)
		if (p->consts[i].kind == PINIT_DATA)
			return -1;
	put_header(f, p);
	put_machine(f, p);
	for (int i = 0; i < p->nbuffers; i++) {
		const PlanBuffer *b = &p->buffers[i];
		fputs("buffer ", f);
		fputs(b->name, f);
		put_field(f, "space", p->spaces[b->space].name);
		fputs(" offset=", f);
		put_i64(f, b->offset);
		fputs(" size=", f);
		put_i64(f, b->size);
		put_field(f, "dtype", rt_dtype_name(b->dtype));
		fputs(" shape=", f);
		put_dims(f, b->dims, b->rank);
		put_field(f, "format", b->format);
		fputc('\n', f);
	}
	for (int i = 0; i < p->nconsts; i++)
		put_const(f, p, &p->consts[i]);
	for (int i = 0; i < p->ninputs; i++)
		write_io(f, p, "input", &p->inputs[i]);
	for (int i = 0; i < p->noutputs; i++)
		write_io(f, p, "output", &p->outputs[i]);
	for (int i = 0; i < p->nevents; i++)
		fprintf(f, "event %s\n", p->events[i]);
	for (int i = 0; i < p->nstreams; i++) {
		const PlanStream *s = &p->streams[i];
		fprintf(f, "stream %s device=%s count=%d\n", s->name, p->devices[s->device].name, s->nins);
		for (int j = 0; j < s->nins; j++)
			put_instr(f, p, &s->ins[j]);
	}
	fputs("end\n", f);
	return ferror(f) ? -1 : 0;
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
