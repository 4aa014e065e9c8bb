/* targets/bands.c: the error band of every prediction.
 *
 * `make validate` compares the cost models with published measurements (tools/validate.py,
 * tools/validate/cases.json) and `make validate-bands` writes the residuals per target and
 * kernel class into targets/bands.def: the median and the worst |relative error| of that
 * class's cases.  After lowering, every kernel, copy and collective of a plan is annotated with
 * its class (t.class: gemm, attention, memory, collective) and that class's band (t.band: the
 * worst residual; t.band_median, t.band_cases), or t.band="none" where no published case
 * covers the class on the target: a prediction the validation set does not calibrate.  The
 * runtime composes a plan's band from these (runtime/report.c rt_band). */
#define __STDC_WANT_IEC_60559_BFP_EXT__ 1   /* strfromd */
#include "targets/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const TgtBand bands[] = {
#define BAND(t, c, m, w, n) { t, c, m, w, n },
#include "targets/bands.def"
#undef BAND
};

const TgtBand *tgt_band(const char *target, const char *cls)
{
	for (size_t i = 0; i < sizeof bands / sizeof bands[0]; i++)
		if (!strcmp(bands[i].target, target) && !strcmp(bands[i].cls, cls))
			return &bands[i];
	return NULL;
}

static const char *tile(const PlanInstr *in, const char *key)
{
	for (int i = 0; i < in->ntile; i++)
		if (in->tile[i].key[0] == key[0] && !strcmp(in->tile[i].key, key))
			return in->tile[i].val;
	return NULL;
}

const char *tgt_kernel_class(const PlanInstr *in)
{
	if (in->kind == PI_COLLECTIVE || in->kind == PI_COPY)
		return "collective";
	const char *k = tile(in, "kind"), *sl = tile(in, "slice");
	if (k && (strstr(k, "gemm") || strstr(k, "matmul") || strstr(k, "conv") || strstr(k, "mxm")))
		return "gemm";
	if (!k && sl && strstr(sl, "mxm"))   /* the LPU records its functional slice, not a kind */
		return "gemm";
	if (k && strstr(k, "attention"))
		return "attention";
	return "memory";
}

/* The cost model a plan device is priced by: its target's, and on composite machines the
 * model of that device class (vera-rubin's GPUs run the blackwell model, its LPUs the lpu's). */
static const char *model_of(const Plan *p, int stream)
{
	const char *kind = p->devices[p->streams[stream].device].kind;
	if (p->target && !strcmp(p->target, "vera-rubin"))
		return kind && !strcmp(kind, "lpu") ? "lpu" : "blackwell";
	return p->target ? p->target : "";
}

/* Appends the n pairs kv (p's interned strings) to in's target attributes. */
static int add_tiles(PlanInstr *in, const PlanKV *kv, int n, RtError *e)
{
	PlanKV *t = rt_realloc(in->tile, (size_t)(in->ntile + n) * sizeof *t);
	if (!t)
		return rt_errorf(e, RT_ENOMEM, "out of memory annotating the plan");
	in->tile = t;
	memcpy(t + in->ntile, kv, sizeof *kv * (size_t)n);
	in->ntile += n;
	return 0;
}

int tgt_annotate_bands(Plan *p, RtError *e)
{
	if (!p->target || !strcmp(p->target, "reference"))
		return 0;     /* the reference target's times are illustrative, not predictions */
	/* the last few (model, class) answers and their numbers' text: kernels alternate among a
	 * handful of classes, and each answer is a scan of the table */
	struct { const char *model, *cls; const TgtBand *b; PlanKV kv[4]; } seen[8];
	int nseen = 0, next = 0;
	const char *key[4] = { plan_intern(p, "class"), plan_intern(p, "band"), plan_intern(p, "band_median"),
			       plan_intern(p, "band_cases") };
	if (!key[0] || !key[1] || !key[2] || !key[3])
		return rt_errorf(e, RT_ENOMEM, "out of memory annotating the plan");
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			PlanInstr *in = &p->streams[s].ins[i];
			if (in->kind != PI_KERNEL && in->kind != PI_COLLECTIVE && in->kind != PI_COPY)
				continue;
			if (tile(in, "band"))
				continue;
			const char *cls = tgt_kernel_class(in), *model = model_of(p, s);
			int k = 0;
			while (k < nseen && (seen[k].model != model || seen[k].cls != cls))
				k++;
			if (k == nseen) {
				k = nseen < 8 ? nseen++ : next++ % 8;
				const TgtBand *b = tgt_band(model, cls);
				char worst[32] = "none", median[32] = "", cases[32] = "";
				seen[k].model = model, seen[k].cls = cls, seen[k].b = b;
				if (b) {
					strfromd(worst, sizeof worst, "%.4g", b->worst);   /* printf's digits */
					strfromd(median, sizeof median, "%.4g", b->median);
					snprintf(cases, sizeof cases, "%d", b->cases);
				}
				/* the pairs' text interned once per answer, not once per instruction */
				const char *val[4] = { cls, worst, median, cases };
				for (int j = 0; j < 4; j++)
					if (!(seen[k].kv[j] = (PlanKV){ (char *)key[j], plan_intern(p, val[j]) }).val)
						return rt_errorf(e, RT_ENOMEM, "out of memory annotating the plan");
			}
			if (add_tiles(in, seen[k].kv, seen[k].b ? 4 : 2, e) < 0)
				return -1;
		}
	return 0;
}

int tgt_coverage_remarks(const Plan *p, FILE *f)
{
	int n = 0;
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			const char *c = tile(in, "coverage");
			if (!c)
				continue;
			if (f && n < 20)
				fprintf(f, "aicc: remark: cost: '%s': %s\n", in->node ? in->node : "?", c);
			n++;
		}
	if (f && n > 20)
		fprintf(f, "aicc: remark: cost: ... and %d more instructions without a cost model of their own\n", n - 20);
	return n;
}
