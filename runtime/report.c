/* runtime/report.c: the JSON report of a run (docs/plan-format.md §Report), written with
 * jansson: target, machine, latency, the one-time load time (t.phase="load" kernels), FLOP, bytes per memory space, per-device busy time and peak
 * memory per space, outputs (name, shape, dtype, file) and, after --check, the comparison per
 * output and the first node out of tolerance; for a plan of a serving phase (--phase) its TTFT
 * or TPOT and tokens/s.  Deterministic: keys in a fixed order. */
#include "runtime/interp.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		if (p->devices[d].peak_work > 0) {   /* the peak of the formats its FLOP ran in */
			json_object_set_new(o, "peak_work_flops", num(p->devices[d].peak_work));
			json_object_set_new(o, "peak_format", json_string(p->devices[d].peak_fmt));
		}
		json_object_set_new(o, "busy_s", num(t->busy_s ? t->busy_s[d] : 0));
		json_object_set_new(o, "load_s", num(t->dev_load_s ? t->dev_load_s[d] : 0));
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
		if (c->outs[i].tol_why[0])
			json_object_set_new(x, "tolerance_from", json_string(c->outs[i].tol_why));
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

/* The value of symbol `name` in a bind list "B=2,S=1,L=2" (0 when absent). */
static int64_t bound(const char *binds, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = binds; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
		if (strncmp(s, name, n) == 0 && s[n] == '=')
			return strtoll(s + n + 1, NULL, 10);
	return 0;
}

int rt_phase_metrics(const Plan *p, double latency_s, RtPhase *out)
{
	memset(out, 0, sizeof *out);
	if (!p->source.phase)
		return -1;
	out->phase = p->source.phase;
	out->batch = bound(p->source.binds, "B");
	out->batch = out->batch > 0 ? out->batch : 1;
	out->context = p->source.context;
	double l = latency_s > 0 ? latency_s : 0;
	if (strcmp(out->phase, "train") == 0) {
		out->step_s = l;
		out->micro_batches = p->source.micro_batches > 1 ? p->source.micro_batches : 1;
		out->tokens_per_s = l > 0 ? (double)out->micro_batches * (double)out->batch * (double)out->context / l : 0;
	} else if (strcmp(out->phase, "decode") == 0) {
		out->tpot_s = l;
		out->tokens_per_s_user = l > 0 ? 1 / l : 0;
		out->tokens_per_s = l > 0 ? (double)out->batch / l : 0;
	} else {
		out->ttft_s = l;
		out->tokens_per_s = l > 0 ? (double)out->batch * (double)out->context / l : 0;
	}
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The optimizer state among the constants: AdamW's master weights, moments and step counter
 * (passes/autodiff.c names them), also as a ZeRO shard ("P.exp_avg.zero1.57") or another
 * device's copy ("adamw.step@gpu1"). */
static int optimizer_state(const char *name)
{
	char base[512];
	snprintf(base, sizeof base, "%s", name);
	char *cut = strchr(base, '@');
	if (cut)
		*cut = 0;
	if ((cut = strstr(base, ".zero")) && cut[5] >= '0' && cut[5] <= '9')
		*cut = 0;
	return ends_with(base, ".master") || ends_with(base, ".exp_avg") || ends_with(base, ".exp_avg_sq") ||
	       strcmp(base, "adamw.step") == 0;
}

int rt_packing(const int64_t *off, int n, int causal, RtPacking *out)
{
	memset(out, 0, sizeof *out);
	if (!off || n < 2 || off[0] != 0)
		return -1;
	for (int k = 0; k + 1 < n; k++) {
		double l = (double)(off[k + 1] - off[k]);
		if (l <= 0)
			return -1;
		out->pairs += causal ? l * (l + 1) / 2 : l * l;
		if (off[k + 1] - off[k] > out->longest)
			out->longest = off[k + 1] - off[k];
	}
	double m = (double)out->longest;
	out->seqs = n - 1;
	out->tokens = off[n - 1];
	out->padded_tokens = (int64_t)out->seqs * out->longest;
	out->padded_pairs = out->seqs * (causal ? m * (m + 1) / 2 : m * m);
	return 0;
}

const int64_t *rt_plan_seq_offsets(const Plan *p, int *n, int *causal)
{
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			const int64_t *off = in->kind == PI_KERNEL && in->op == RT_OP_Attention ?
					     rt_attr_ints(&in->attrs, "seq_offsets", n) : NULL;
			if (off) {
				*causal = rt_attr_int(&in->attrs, "is_causal", 0) != 0;
				return off;
			}
		}
	*n = 0;
	return NULL;
}

json_t *rt_packing_json(const RtPacking *k)
{
	json_t *o = json_object();
	json_object_set_new(o, "sequences", json_integer(k->seqs));
	json_object_set_new(o, "tokens", json_integer(k->tokens));
	json_object_set_new(o, "padded_tokens", json_integer(k->padded_tokens));
	json_object_set_new(o, "attention_pairs", json_real(k->pairs));
	json_object_set_new(o, "padded_attention_pairs", json_real(k->padded_pairs));
	return o;
}

double rt_work_peak(const PlanDevice *d) { return d->peak_work > 0 ? d->peak_work : d->peak_flops; }

int rt_train_metrics(const Plan *p, const RtTiming *t, RtTrain *out)
{
	memset(out, 0, sizeof *out);
	RtPhase ph;
	if (rt_phase_metrics(p, t->latency_s, &ph) < 0 || strcmp(ph.phase, "train") != 0)
		return -1;
	unsigned char *cls = rt_calloc((size_t)p->nbuffers + 1, 1);   /* 0 activation, 1 weight, 2 optimizer, 3 grad, 4 updated */
	out->dev = rt_calloc((size_t)p->ndevices + 1, sizeof *out->dev);
	if (!cls || !out->dev) {
		rt_free(cls);
		rt_train_free(out);
		return -1;
	}
	out->ndev = p->ndevices;
	out->step_s = ph.step_s;
	out->tokens = (double)ph.micro_batches * (double)ph.batch * (double)ph.context;
	out->tokens_per_s = ph.tokens_per_s;
	out->model_flops = p->source.model_flops;
	out->hw_flops = t->flops;
	for (int d = 0; d < p->ndevices; d++)
		out->peak_flops_per_s += rt_work_peak(&p->devices[d]);
	double denom = out->step_s * out->peak_flops_per_s;
	out->mfu = denom > 0 ? out->model_flops / denom : 0;
	out->hfu = denom > 0 ? out->hw_flops / denom : 0;
	int noff, causal;
	const int64_t *off = rt_plan_seq_offsets(p, &noff, &causal);
	if (!off || rt_packing(off, noff, causal, &out->pack) < 0)
		memset(&out->pack, 0, sizeof out->pack);
	for (int i = 0; i < p->nconsts; i++)     /* inline literals (shapes, scalars) are not weights */
		if (p->consts[i].kind != PINIT_INLINE)
			cls[p->consts[i].buffer] = optimizer_state(p->buffers[p->consts[i].buffer].name) ? 2 : 1;
	const PlanInstr **prod = rt_calloc((size_t)p->nbuffers + 1, sizeof *prod);   /* each buffer's producer */
	if (!prod) {
		rt_free(cls);
		rt_train_free(out);
		return -1;
	}
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++)
			for (int k = 0; k < p->streams[s].ins[i].nout; k++)
				if (p->streams[s].ins[i].out[k] >= 0)
					prod[p->streams[s].ins[i].out[k]] = &p->streams[s].ins[i];
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			if (in->kind != PI_KERNEL || in->op != RT_OP_AdamW || in->nin < 2)
				continue;
			if (in->in[1] >= 0 && !cls[in->in[1]])
				cls[in->in[1]] = 3;
			/* ZeRO 1: the gradient reduce-scattered once per step (grad.zero) was held whole until
			 * then, each replica's summed over its micro-batches: those count as its gradients */
			int g = in->in[1];
			const PlanInstr *q = g >= 0 ? prod[g] : NULL;
			if (q && q->kind == PI_KERNEL && q->op == RT_OP_Cast && q->nin >= 1 && q->in[0] >= 0)
				g = q->in[0], q = prod[g];
			if (q && q->kind == PI_COLLECTIVE && q->coll == PC_REDUCESCATTER && !strncmp(p->buffers[g].name, "grad.zero", 9))
				for (int k = 0; k < q->nin; k++)
					if (q->in[k] >= 0 && !cls[q->in[k]])
						cls[q->in[k]] = 3;
			for (int k = 0; k < in->nout; k++)
				if (in->out[k] >= 0 && !cls[in->out[k]])
					cls[in->out[k]] = 4;
		}
	for (int b = 0; b < p->nbuffers; b++) {
		RtTrainMem *m = &out->dev[p->spaces[p->buffers[b].space].device];
		double z = (double)p->buffers[b].size;
		*(cls[b] == 1 ? &m->weights : cls[b] == 2 ? &m->optimizer : cls[b] == 3 ? &m->gradients :
		  cls[b] == 4 ? &m->updated : &m->activations) += z;
	}
	for (int s = 0; t->peak_bytes && s < p->nspaces; s++)
		out->dev[p->spaces[s].device].peak += (double)t->peak_bytes[s];
	rt_free(prod);
	rt_free(cls);
	return 0;
}

void rt_train_free(RtTrain *t)
{
	rt_free(t->dev);
	t->dev = NULL;
}

static json_t *train_json(const Plan *p, const RtTrain *tr)
{
	json_t *o = json_object(), *devs = json_object();
	json_object_set_new(o, "model_flops", num(tr->model_flops));
	json_object_set_new(o, "hardware_flops", num(tr->hw_flops));
	json_object_set_new(o, "peak_flops_per_s", num(tr->peak_flops_per_s));
	json_object_set_new(o, "mfu", num(tr->mfu));
	json_object_set_new(o, "hfu", num(tr->hfu));
	for (int d = 0; d < tr->ndev; d++) {
		const RtTrainMem *m = &tr->dev[d];
		json_t *x = json_object();
		json_object_set_new(x, "weights_bytes", num(m->weights));
		json_object_set_new(x, "gradients_bytes", num(m->gradients));
		json_object_set_new(x, "optimizer_state_bytes", num(m->optimizer));
		json_object_set_new(x, "updated_bytes", num(m->updated));
		json_object_set_new(x, "activations_bytes", num(m->activations));
		json_object_set_new(x, "peak_bytes", num(m->peak));
		json_object_set_new(devs, p->devices[d].name, x);
	}
	json_object_set_new(o, "memory", devs);
	if (tr->pack.seqs)
		json_object_set_new(o, "packing", rt_packing_json(&tr->pack));
	return o;
}

static json_t *phase_json(const RtPhase *ph)
{
	json_t *o = json_object();
	int decode = strcmp(ph->phase, "decode") == 0;
	json_object_set_new(o, "name", json_string(ph->phase));
	json_object_set_new(o, "batch", json_integer(ph->batch));
	json_object_set_new(o, "context", json_integer(ph->context));
	if (strcmp(ph->phase, "train") == 0) {
		json_object_set_new(o, "step_s", num(ph->step_s));
		json_object_set_new(o, "micro_batches", json_integer(ph->micro_batches));
		json_object_set_new(o, "tokens_per_s", num(ph->tokens_per_s));
	} else if (decode) {
		json_object_set_new(o, "tpot_s", num(ph->tpot_s));
		json_object_set_new(o, "tokens_per_s_per_user", num(ph->tokens_per_s_user));
		json_object_set_new(o, "tokens_per_s", num(ph->tokens_per_s));
	} else {
		json_object_set_new(o, "ttft_s", num(ph->ttft_s));
		json_object_set_new(o, "prompt_tokens_per_s", num(ph->tokens_per_s));
	}
	return o;
}

static const char *tile_val(const PlanInstr *in, const char *key)
{
	for (int i = 0; i < in->ntile; i++)
		if (!strcmp(in->tile[i].key, key))
			return in->tile[i].val;
	return NULL;
}

int rt_band(const Plan *p, const RtTiming *t, RtBand *b)
{
	enum { MAXC = 8 };
	typedef struct Cls { const char *name; double s, sb, sm, band; int cases, none; } Cls;
	Cls cls[MAXC];
	int nc = 0, any = 0;
	memset(b, 0, sizeof *b);
	for (int i = 0; i < t->nspans; i++) {
		const PlanInstr *in = &p->streams[t->spans[i].stream].ins[t->spans[i].index];
		const char *band = tile_val(in, "band"), *c = tile_val(in, "class");
		double d = t->spans[i].end - t->spans[i].start;
		if (!band || !c || !(d > 0))
			continue;
		any = 1;
		int k = 0;
		while (k < nc && strcmp(cls[k].name, c))
			k++;
		if (k == nc) {
			if (nc == MAXC)
				continue;
			cls[nc++] = (Cls){ c, 0, 0, 0, 0, 0, 0 };
		}
		cls[k].s += d;
		if (!strcmp(band, "none")) {
			cls[k].none = 1;
			b->uncovered_s += d;
			continue;
		}
		double v = strtod(band, NULL);
		const char *n = tile_val(in, "band_cases"), *med = tile_val(in, "band_median");
		cls[k].sb += d * v;
		cls[k].sm += d * (med ? strtod(med, NULL) : v);
		cls[k].band = fmax(cls[k].band, v);
		cls[k].cases = n ? atoi(n) : 0;
		b->covered_s += d;
	}
	if (!any)
		return -1;
	double sb = 0, sm = 0, worst = -1;
	int least = -1;
	for (int k = 0; k < nc; k++) {
		sb += cls[k].sb, sm += cls[k].sm;
		double score = cls[k].none ? cls[k].s * 1.0 + cls[k].sb : cls[k].sb;   /* uncalibrated: as a 100% error */
		if (least < 0 || score > worst || (score == worst && cls[k].s > cls[least].s))
			worst = score, least = k;
	}
	b->rel = b->covered_s > 0 ? sb / b->covered_s : 0;
	b->rel_median = b->covered_s > 0 ? sm / b->covered_s : 0;
	if (least >= 0) {
		snprintf(b->least, sizeof b->least, "%s", cls[least].name);
		b->least_band = cls[least].none ? -1 : cls[least].band;
		b->least_cases = cls[least].cases;
		b->least_s = cls[least].s;
	}
	return 0;
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
	json_object_set_new(o, "load_s", num(t->load_s));
	json_object_set_new(o, "load_kernels", json_integer(t->nload));
	json_object_set_new(o, "flops", num(t->flops));
	json_object_set_new(o, "achieved_flops_per_s", num(t->latency_s > 0 ? t->flops / t->latency_s : 0));
	for (int s = 0; s < p->nspaces; s++)
		json_object_set_new(bytes, p->spaces[s].name, num(t->bytes ? t->bytes[s] : 0));
	json_object_set_new(o, "bytes", bytes);
	json_object_set_new(o, "devices", devices_json(p, t));
	for (int i = 0; i < p->noutputs; i++) {
		if (!plan_io_first(p->outputs, i))
			continue;     /* a sharded output: once, with the assembled tensor's shape */
		PlanBuffer whole = p->buffers[p->outputs[i].buffer], *b = &whole;
		plan_io_dims(p, &p->outputs[i], whole.dims);
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
	RtPhase ph;
	if (rt_phase_metrics(p, t->latency_s, &ph) == 0)
		json_object_set_new(o, "phase", phase_json(&ph));
	RtTrain tr;
	if (rt_train_metrics(p, t, &tr) == 0) {
		json_object_set_new(o, "train", train_json(p, &tr));
		rt_train_free(&tr);
	}
	RtBand band;
	if (rt_band(p, t, &band) == 0) {
		json_t *bj = json_object();
		json_object_set_new(bj, "rel", num(band.rel));
		json_object_set_new(bj, "rel_median", num(band.rel_median));
		json_object_set_new(bj, "least_calibrated", json_string(band.least));
		json_object_set_new(bj, "least_calibrated_band", band.least_band < 0 ? json_null() : num(band.least_band));
		json_object_set_new(bj, "least_calibrated_cases", json_integer(band.least_cases));
		json_object_set_new(bj, "uncalibrated_s", num(band.uncovered_s));
		json_object_set_new(o, "band", bj);
	}
	int rc = json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_INDENT(2) | JSON_REAL_PRECISION(10));
	fputc('\n', f);
	json_decref(o);
	return rc;
}
