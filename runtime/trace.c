/* runtime/trace.c: Chrome trace-event JSON of a simulated run (the format Perfetto and
 * chrome://tracing open: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
 * One process per device, one thread (track) per unit, plus one process "links" with a track per
 * link; every instruction is a complete event ("ph":"X") with microsecond timestamps and its
 * kind, operator, node and FLOP as arguments. */
#include "runtime/interp.h"

#include <jansson.h>

static json_t *meta(const char *what, int pid, int tid, const char *name)
{
	json_t *e = json_object(), *args = json_object();
	json_object_set_new(e, "ph", json_string("M"));
	json_object_set_new(e, "name", json_string(what));
	json_object_set_new(e, "pid", json_integer(pid));
	json_object_set_new(e, "tid", json_integer(tid));
	json_object_set_new(args, "name", json_string(name));
	json_object_set_new(e, "args", args);
	return e;
}

static json_t *span_event(const Plan *p, const RtSpan *s)
{
	const PlanInstr *in = &p->streams[s->stream].ins[s->index];
	json_t *e = json_object(), *args = json_object();
	const char *name = in->kind == PI_KERNEL ? plan_op_name(in->op) :
			   in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll] : plan_instr_names[in->kind];
	json_object_set_new(e, "name", json_string(name));
	json_object_set_new(e, "cat", json_string(plan_instr_names[in->kind]));
	json_object_set_new(e, "ph", json_string("X"));
	json_object_set_new(e, "ts", json_real(s->start * 1e6));
	json_object_set_new(e, "dur", json_real((s->end - s->start) * 1e6));
	if (s->link >= 0) {
		json_object_set_new(e, "pid", json_integer(p->ndevices));
		json_object_set_new(e, "tid", json_integer(s->link));
	} else {
		json_object_set_new(e, "pid", json_integer(s->unit >= 0 ? p->units[s->unit].device : p->streams[s->stream].device));
		json_object_set_new(e, "tid", json_integer(s->unit >= 0 ? s->unit : p->nunits + s->stream));
	}
	json_object_set_new(args, "stream", json_string(p->streams[s->stream].name));
	if (in->node)
		json_object_set_new(args, "node", json_string(in->node));
	json_object_set_new(args, "flops", json_real(in->flops));
	json_object_set_new(e, "args", args);
	return e;
}

int rt_trace_write(const Plan *p, const RtTiming *t, FILE *f)
{
	json_t *root = json_object(), *ev = json_array();
	for (int d = 0; d < p->ndevices; d++)
		json_array_append_new(ev, meta("process_name", d, 0, p->devices[d].name));
	for (int u = 0; u < p->nunits; u++)
		json_array_append_new(ev, meta("thread_name", p->units[u].device, u, p->units[u].name));
	for (int s = 0; s < p->nstreams; s++)
		json_array_append_new(ev, meta("thread_name", p->streams[s].device, p->nunits + s, p->streams[s].name));
	if (p->nlinks)
		json_array_append_new(ev, meta("process_name", p->ndevices, 0, "links"));
	for (int l = 0; l < p->nlinks; l++)
		json_array_append_new(ev, meta("thread_name", p->ndevices, l, p->links[l].name));
	for (int i = 0; i < t->nspans; i++)
		json_array_append_new(ev, span_event(p, &t->spans[i]));
	json_object_set_new(root, "traceEvents", ev);
	json_object_set_new(root, "displayTimeUnit", json_string("ns"));
	int rc = json_dumpf(root, f, JSON_PRESERVE_ORDER | JSON_COMPACT);
	fputc('\n', f);
	json_decref(root);
	return rc;
}
