/* targets/heap.c: the first-fit buffer placement and plan-name sanitising every target shares.
 *
 * Buffers are placed in program order: a value takes the lowest aligned offset where it fits
 * between the values still live, and a value is released once the node that reads it last has
 * run (graph outputs never are), so memory is reused as in TFLite's arena planner.  The live
 * intervals are kept sorted by offset. */
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"

int tgt_heap_init(TgtHeap *h, int capacity, int64_t align)
{
	memset(h, 0, sizeof *h);
	size_t n = (size_t)(capacity > 0 ? capacity : 1);
	h->lo = malloc(sizeof *h->lo * n);
	h->hi = malloc(sizeof *h->hi * n);
	h->owner = malloc(sizeof *h->owner * n);
	h->align = align;
	h->cap = (int)n;
	return h->lo && h->hi && h->owner ? 0 : -1;
}

void tgt_heap_free(TgtHeap *h)
{
	free(h->lo);
	free(h->hi);
	free(h->owner);
	memset(h, 0, sizeof *h);
}

static int heap_grow(TgtHeap *h)
{
	int cap = h->cap * 2 + 16;
	int64_t *lo = realloc(h->lo, sizeof *lo * (size_t)cap);
	if (lo)
		h->lo = lo;
	int64_t *hi = lo ? realloc(h->hi, sizeof *hi * (size_t)cap) : NULL;
	if (hi)
		h->hi = hi;
	int *ow = hi ? realloc(h->owner, sizeof *ow * (size_t)cap) : NULL;
	if (!ow)
		return -1;
	h->owner = ow;
	h->cap = cap;
	return 0;
}

int64_t tgt_heap_place(TgtHeap *h, int64_t size, int owner)
{
	if (h->n >= h->cap && heap_grow(h) < 0)
		return -1;
	int64_t off = 0;
	int at = 0;
	for (; at < h->n; at++) {
		if (h->lo[at] - off >= size)
			break;
		int64_t end = (h->hi[at] + h->align - 1) / h->align * h->align;
		if (end > off)
			off = end;
	}
	memmove(h->lo + at + 1, h->lo + at, sizeof *h->lo * (size_t)(h->n - at));
	memmove(h->hi + at + 1, h->hi + at, sizeof *h->hi * (size_t)(h->n - at));
	memmove(h->owner + at + 1, h->owner + at, sizeof *h->owner * (size_t)(h->n - at));
	h->lo[at] = off;
	h->hi[at] = off + size;
	h->owner[at] = owner;
	h->n++;
	if (off + size > h->top)
		h->top = off + size;
	return off;
}

void tgt_heap_release(TgtHeap *h, const Flat *f, int node)
{
	int k = 0;
	for (int j = 0; j < h->n; j++) {
		const FlatVal *v = &f->vals[h->owner[j]];
		int dead = v->def >= 0 && !v->is_output && (v->last < 0 ? v->def : v->last) < node &&
			   !(h->keep && h->keep[h->owner[j]]);
		if (!dead) {
			h->lo[k] = h->lo[j], h->hi[k] = h->hi[j], h->owner[k] = h->owner[j];
			k++;
		}
	}
	h->n = k;
}

void tgt_plan_name(char *d, size_t n, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		d[i] = ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || strchr("=,[]\"", s[i])) ? '_' : s[i];
	d[i] = 0;
	if (strcmp(d, "_") == 0 || !*d)
		snprintf(d, n, "v_");
}

int tgt_add_buffer(Plan *p, TgtHeap *h, const Flat *f, int v, DType dt, const char *format, int space, int64_t *end,
		   RtError *e)
{
	const FlatVal *fv = &f->vals[v];
	char name[256];
	tgt_plan_name(name, sizeof name, fv->name);
	if (strcmp(name, fv->name) && plan_find_buffer(p, name) >= 0) {
		size_t n = strlen(name);
		snprintf(name + (n > 200 ? 200 : n), 56, ".%d", v);
	}
	PlanBuffer tmp = { .dtype = dt, .rank = fv->rank };
	memcpy(tmp.dims, fv->dims, sizeof tmp.dims);
	int64_t n = plan_buffer_numel(&tmp);
	if (n < 0 || n > INT64_MAX / 64)
		return rt_errorf(e, RT_EUSER, "value '%s' has too many elements", fv->name);
	int64_t size = format ? plan_format_bytes(format, dt, fv->rank, fv->dims) : rt_dtype_bytes(dt, n);
	if (size < 0)
		return rt_errorf(e, RT_EINTERNAL, "value '%s': unknown buffer format '%s'", fv->name, format);
	int64_t off = tgt_heap_place(h, size, v);
	if (off < 0)
		return rt_errorf(e, RT_ENOMEM, "out of memory placing buffers");
	if (end)
		*end = off + size;
	int b = plan_add_buffer(p, name, space, off, dt, fv->rank, fv->dims, e);
	if (b >= 0 && format && plan_set_buffer_format(p, b, format, e) < 0)
		return -1;
	return b;
}

int tgt_add_io(Plan *p, const Flat *f, const Graph *g, const int *buf, RtError *e)
{
	char name[256];
	for (int i = 0; i < f->ninputs; i++) {
		int v = f->inputs[i], sh = 0;
		tgt_plan_name(name, sizeof name, f->vals[v].name);
		if (buf[v] < 0 && (sh = tgt_devs_io_shards(p, f, v, 0, name, buf, e)) < 0)
			return -1;
		if (!sh && plan_add_input(p, p->buffers[buf[v]].name, buf[v], e) < 0)
			return -1;
	}
	for (int i = 0; i < f->noutputs; i++) {
		int v = f->outputs[i], sh = 0;
		tgt_plan_name(name, sizeof name, g->outputs[i]->name);
		if (buf[v] < 0 && (sh = tgt_devs_io_shards(p, f, v, 1, name, buf, e)) < 0)
			return -1;
		if (!sh && plan_add_output(p, name, buf[v], e) < 0)
			return -1;
	}
	return 0;
}
