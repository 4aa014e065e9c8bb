/* tools/ckpt_run.c: checkpoints written and read by `aicc run` (tools/ckpt_run.h). */
#include <stdlib.h>
#include <string.h>

#include "runtime/ckpt.h"
#include "tools/ckpt_run.h"
#include "tools/driver.h"

void ckpt_bind_free(RtBinding *b, int ngiven, int n, RtTensor *store, int nstore)
{
	for (int i = ngiven; b && i < n; i++)
		free((char *)b[i].name);
	for (int i = 0; store && i < nstore; i++)
		rt_tensor_free(&store[i]);
	free(b);
	free(store);
}

static int given_has(const RtBinding *g, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(g[i].name, name) == 0)
			return 1;
	return 0;
}

int ckpt_bind(const char *dir, const Plan *p, const RtBinding *given, int ngiven, RtBinding **out, int *nout,
	      RtTensor **store, int *nstore)
{
	RtError e = { 0 };
	RtCkpt c;
	RtPlanSlice *s = NULL;
	int ns = 0;
	*out = NULL;
	*store = NULL;
	*nout = *nstore = 0;
	if (rt_ckpt_read(dir, &c, &e) < 0) {
		drv_report(e.msg);
		return -1;
	}
	if (rt_plan_slices(p, &s, &ns, &e) < 0) {
		rt_ckpt_free(&c);
		drv_report(e.msg);
		return -1;
	}
	RtBinding *b = calloc((size_t)(ngiven + ns) + 1, sizeof *b);
	RtTensor *ts = calloc((size_t)ns + 1, sizeof *ts);
	int rc = b && ts ? 0 : rt_errorf(&e, RT_ENOMEM, "out of memory");
	if (b && ngiven)
		memcpy(b, given, sizeof *b * (size_t)ngiven);
	int n = ngiven, m = 0;
	for (int i = 0; rc == 0 && i < ns; i++) {
		const char *bn = p->buffers[s[i].buffer].name;
		if (!s[i].state || given_has(given, ngiven, bn))
			continue;
		if ((rc = rt_ckpt_region(&c, s[i].name, s[i].dtype, s[i].rank, s[i].full, &s[i].box, &ts[m], &e)) < 0)
			break;
		m++;
		if (!(b[n].name = strdup(bn)))
			rc = rt_errorf(&e, RT_ENOMEM, "out of memory");
		else
			b[n++].t = &ts[m - 1];
	}
	rt_plan_slices_free(s, ns);
	rt_ckpt_free(&c);
	if (rc < 0) {
		drv_report(e.msg);
		ckpt_bind_free(b, ngiven, n, ts, m);
		return -1;
	}
	*out = b;
	*nout = n;
	*store = ts;
	*nstore = m;
	return 0;
}

/* The output of r named `X.next` for logical tensor X (a training step's update), or NULL. */
static const RtTensor *next_output(const Plan *p, const RtRun *r, const char *x)
{
	size_t n = strlen(x);
	for (int i = 0; i < p->noutputs; i++) {
		const char *o = p->outputs[i].name;
		if (plan_io_first(p->outputs, i) && strncmp(o, x, n) == 0 && strcmp(o + n, ".next") == 0 &&
		    r->outputs[i].data)
			return &r->outputs[i];
	}
	return NULL;
}

static int same_box(const RtBox *a, const RtBox *b)
{
	for (int i = 0; i < a->rank; i++)
		if (a->off[i] != b->off[i] || a->ext[i] != b->ext[i])
			return 0;
	return 1;
}

int ckpt_save(const char *dir, const Plan *p, const RtRun *r, int whole, int64_t *bytes, int *ntensors, int *nslices)
{
	RtError e = { 0 };
	RtPlanSlice *s = NULL;
	int ns = 0;
	if (rt_plan_slices(p, &s, &ns, &e) < 0) {
		drv_report(e.msg);
		return -1;
	}
	RtCkptPut *put = calloc((size_t)ns + 1, sizeof *put);
	RtTensor *own = calloc((size_t)ns + 1, sizeof *own);
	char (*files)[300] = calloc((size_t)ns + 1, sizeof *files);
	int rc = put && own && files ? 0 : rt_errorf(&e, RT_ENOMEM, "out of memory"), np = 0, nt = 0;
	for (int i = 0; rc == 0 && i < ns; i++) {
		const RtPlanSlice *x = &s[i];
		if (!x->state)
			continue;
		RtBox region = x->box;
		if (whole)
			for (int k = 0; k < x->rank; k++)
				region.off[k] = 0, region.ext[k] = x->full[k];
		int dup = 0, first = 1;
		for (int j = 0; j < np && !dup; j++)
			if (strcmp(put[j].name, x->name) == 0) {
				first = 0;
				dup = same_box(&put[j].box, &region);
			}
		if (dup)
			continue;      /* a replica, or (whole) a part of a tensor already put */
		nt += first;
		RtCkptPut *q = &put[np];
		q->name = x->name;
		q->rank = x->rank;
		memcpy(q->full, x->full, sizeof q->full);
		q->box = region;
		if (whole)
			snprintf(files[np], sizeof files[np], "model.safetensors");
		else
			snprintf(files[np], sizeof files[np], "%s.safetensors", p->devices[x->device].name);
		q->file = files[np];
		const RtTensor *next = next_output(p, r, x->name);
		RtBox all = { .rank = x->rank };
		for (int k = 0; k < x->rank; k++)
			all.ext[k] = x->full[k];
		if ((rc = rt_tensor_alloc(&own[np], x->dtype, x->rank, region.ext, &e)) < 0)
			break;
		if (next)
			rt_box_copy(&own[np], &region, next, &all, &region);
		else         /* every constant of this name that overlaps the region */
			for (int j = 0; j < ns; j++) {
				RtBox ov;
				const RtTensor *v = r->values ? &r->values[s[j].buffer] : NULL;
				if (strcmp(s[j].name, x->name) != 0 || !rt_box_intersect(&s[j].box, &region, &ov))
					continue;
				if (!v || !v->data) {
					rc = rt_errorf(&e, RT_EINTERNAL, "aicc: internal error: no value for constant '%s'",
						       p->buffers[s[j].buffer].name);
					break;
				}
				rt_box_copy(&own[np], &region, v, &s[j].box, &ov);
			}
		if (rc < 0) {
			rt_tensor_free(&own[np]);
			break;
		}
		q->t = &own[np];
		np++;
	}
	if (rc == 0)
		rc = rt_ckpt_write(dir, put, np, bytes, &e);
	if (rc < 0)
		drv_report(e.msg);
	for (int i = 0; own && i < np; i++)
		rt_tensor_free(&own[i]);
	free(own);
	free(put);
	free(files);
	rt_plan_slices_free(s, ns);
	if (ntensors)
		*ntensors = nt;
	if (nslices)
		*nslices = np;
	return rc;
}
