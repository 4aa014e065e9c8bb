/* runtime/report.c: the JSON report of a run (docs/plan-format.md §Report), written with
 * jansson: target, machine, latency, FLOP, bytes per memory space, per-device busy time and peak
 * memory per space, outputs (name, shape, dtype, file) and, after --check, the comparison per
 * output and the first node out of tolerance.  Deterministic: keys in a fixed order. */
#include "runtime/interp.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *shape_json(const PlanBuffer *b)
{
	json_t *a = json_array();
	for (int i = 0; i < b->rank; i++)
		json_array_append_new(a, json_integer(b->dims[i]));
	return a;
}

static json_t *devices_json(const Plan *p, const RtTiming *t)
{
	json_t *devs = json_array();
	for (int d = 0; d < p->ndevices; d++) {
		json_t *o = json_object(), *peak = json_object();
		json_object_set_new(o, "id", json_string(p->devices[d].name));
		json_object_set_new(o, "kind", json_string(p->devices[d].kind));
		json_object_set_new(o, "peak_flops", num(p->devices[d].peak_flops));
		json_object_set_new(o, "busy_s", num(t->busy_s ? t->busy_s[d] : 0));
		json_object_set_new(o, "flops", num(t->dev_flops ? t->dev_flops[d] : 0));
		for (int s = 0; s < p->nspaces; s++)
			if (p->spaces[s].device == d)
				json_object_set_new(peak, p->spaces[s].name, json_integer(t->peak_bytes ? t->peak_bytes[s] : 0));
		json_object_set_new(o, "peak_bytes", peak);
		json_array_append_new(devs, o);
	}
	return devs;
}

static json_t *check_json(const RtCheck *c)
{
	json_t *o = json_object(), *outs = json_array();
	json_object_set_new(o, "ok", json_boolean(c->ok));
	for (int i = 0; i < c->nouts; i++) {
		json_t *x = json_object();
		json_object_set_new(x, "name", json_string(c->outs[i].name));
		json_object_set_new(x, "max_abs_err", num(c->outs[i].max_abs));
		json_object_set_new(x, "max_rel_err", num(c->outs[i].max_rel));
		json_object_set_new(x, "tolerance", num(c->outs[i].tolerance));
		json_object_set_new(x, "ok", json_boolean(c->outs[i].ok));
		json_array_append_new(outs, x);
	}
	json_object_set_new(o, "outputs", outs);
	if (c->first_bad_node) {
		json_t *n = json_object();
		json_object_set_new(n, "node", json_string(c->first_bad_node));
		json_object_set_new(n, "buffer", json_string(c->first_bad_buffer));
		json_object_set_new(n, "max_rel_err", num(c->first_bad_err));
		json_object_set_new(n, "tolerance", num(c->first_bad_tol));
		json_object_set_new(o, "first_bad_node", n);
	} else
		json_object_set_new(o, "first_bad_node", json_null());
	return o;
}

int rt_report_write(const Plan *p, const RtRun *r, const RtCheck *c, const char *const *outfiles, FILE *f)
{
	const RtTiming *t = &r->timing;
	char hash[17];
	snprintf(hash, sizeof hash, "%016" PRIx64, p->machine_hash);
	json_t *o = json_object(), *bytes = json_object(), *outs = json_array();
	json_object_set_new(o, "target", json_string(p->target));
	json_object_set_new(o, "machine", json_string(p->machine));
	json_object_set_new(o, "machine_hash", json_string(hash));
	json_object_set_new(o, "latency_s", num(t->latency_s));
	json_object_set_new(o, "flops", num(t->flops));
	json_object_set_new(o, "achieved_flops_per_s", num(t->latency_s > 0 ? t->flops / t->latency_s : 0));
	for (int s = 0; s < p->nspaces; s++)
		json_object_set_new(bytes, p->spaces[s].name, num(t->bytes ? t->bytes[s] : 0));
	json_object_set_new(o, "bytes", bytes);
	json_object_set_new(o, "devices", devices_json(p, t));
	for (int i = 0; i < p->noutputs; i++) {
		const PlanBuffer *b = &p->buffers[p->outputs[i].buffer];
		json_t *x = json_object();
		json_object_set_new(x, "name", json_string(p->outputs[i].name));
		json_object_set_new(x, "shape", shape_json(b));
		json_object_set_new(x, "dtype", json_string(rt_dtype_name(b->dtype)));
		json_object_set_new(x, "file", outfiles && outfiles[i] ? json_string(outfiles[i]) : json_null());
		json_array_append_new(outs, x);
	}
	json_object_set_new(o, "outputs", outs);
	if (c)
		json_object_set_new(o, "check", check_json(c));
	int rc = json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	fputc('\n', f);
	json_decref(o);
	return rc;
}
