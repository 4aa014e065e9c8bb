/* viz/from_plan.c: the picture of a plan's placement (viz_from_plan).  Walks the instructions in
 * the plan's one execution order (plan_linearize), tracking which node last produced each buffer:
 * a kernel becomes a node on its stream's device, reading edges from the producers of its
 * operands; a copy forwards its source's producer, so the consumer's edge is drawn bold with the
 * copy's link, bytes and predicted time when it crossed a link; a collective becomes a bold node
 * with its link and time.  Plan inputs and outputs are drawn outside the devices; constants
 * (weights) are not drawn.  Times are the timing engine's spans (rt_simulate), i.e. the target's
 * cost hook, when the caller has them. */
#include "viz/model.h"

#include <stdlib.h>
#include <string.h>

typedef struct Prod {
	int node;            /* viz node that produced the buffer's value, or -1 */
	int stream, index;   /* the last copy that moved it here, or stream -1 */
} Prod;

typedef struct Px {
	const Plan *p;
	VizGraph *g;
	Prod *prod;
	int *base;           /* first flat instruction index of each stream */
	double *dur;         /* per flat instruction: predicted seconds, or -1 */
} Px;

static char *buffer_type(const PlanBuffer *b)
{
	char s[512];
	size_t n = (size_t)snprintf(s, sizeof s, "%s[", rt_dtype_name(b->dtype));
	for (int i = 0; i < b->rank && n < sizeof s - 32; i++)
		n += (size_t)snprintf(s + n, sizeof s - n, "%s%lld", i ? ", " : "", (long long)b->dims[i]);
	snprintf(s + n, sizeof s - n, "]");
	return vz_strdup(s);
}

static int device_of(Px *x, int stream)
{
	const PlanDevice *d = &x->p->devices[x->p->streams[stream].device];
	return vz_device(x->g, d->name, d->kind);
}

/* An edge from the producer of buffer b to node dst, bold when a copy moved it over a link. */
static void flow(Px *x, int b, int dst, int bold)
{
	const Prod *pr = &x->prod[b];
	if (pr->node < 0)
		return;
	int e = vz_edge(x->g, pr->node, dst, x->p->buffers[b].size, NULL);
	VizEdge *ed = &x->g->edges[e];
	ed->bold = bold;
	if (pr->stream >= 0) {
		const PlanInstr *c = &x->p->streams[pr->stream].ins[pr->index];
		if (c->link >= 0) {
			ed->link = vz_strdup(x->p->links[c->link].name);
			ed->bold = 1;
		}
		ed->time_s = x->dur[x->base[pr->stream] + pr->index];
	}
}

static void add_kernel(Px *x, int s, int i)
{
	const PlanInstr *in = &x->p->streams[s].ins[i];
	char name[512], buf[128];
	int k = vz_node(x->g, VN_OP, viz_instr_name(x->p, s, i, name, sizeof name), plan_op_name(in->op),
			device_of(x, s));
	VizNode *v = &x->g->nodes[k];
	if (in->nout > 0 && in->out[0] >= 0)
		v->shape = buffer_type(&x->p->buffers[in->out[0]]);
	v->precision = vz_strdup(viz_precision(x->p, in, buf, sizeof buf));
	const char *grp = viz_attr(in, "fusion_group", buf, sizeof buf);
	v->group = grp ? strtoll(grp, NULL, 10) : -1;
	v->fusion = vz_strdup(viz_attr(in, "fusion", buf, sizeof buf));
	for (int j = 0; j < in->nin; j++) {
		int dup = 0;
		for (int l = 0; l < j; l++)
			dup |= in->in[l] == in->in[j];
		if (in->in[j] >= 0 && !dup)
			flow(x, in->in[j], k, 0);
	}
	for (int j = 0; j < in->nout; j++)
		x->prod[in->out[j]] = (Prod){ k, -1, -1 };
}

static void add_collective(Px *x, int s, int i)
{
	const PlanInstr *in = &x->p->streams[s].ins[i];
	char name[512], note[256], t[64];
	int k = vz_node(x->g, VN_COLLECTIVE, viz_instr_name(x->p, s, i, name, sizeof name), plan_coll_names[in->coll],
			device_of(x, s));
	/* the group, not the one link the plan records it on ("nvlink.gpu0-gpu1" for an 8-way
	 * all-reduce): the link's kind and the members, "nvlink x8" */
	const char *ln = in->link >= 0 ? x->p->links[in->link].name : NULL, *dot = ln ? strchr(ln, '.') : NULL;
	if (ln)
		snprintf(note, sizeof note, "%.*s x%d, %s", dot ? (int)(dot - ln) : (int)strlen(ln), ln, in->nin,
			 viz_time_str(x->dur[x->base[s] + i], t, sizeof t));
	else
		snprintf(note, sizeof note, "no link, %s", viz_time_str(x->dur[x->base[s] + i], t, sizeof t));
	x->g->nodes[k].note = vz_strdup(note);
	x->g->nodes[k].precision = vz_strdup(in->nin ? rt_dtype_name(x->p->buffers[in->in[0]].dtype) : "-");
	for (int j = 0; j < in->nin; j++)
		if (in->in[j] >= 0)
			flow(x, in->in[j], k, 1);
	for (int j = 0; j < in->nout; j++)
		x->prod[in->out[j]] = (Prod){ k, -1, -1 };
}

static void step(Px *x, int s, int i)
{
	const PlanInstr *in = &x->p->streams[s].ins[i];
	switch (in->kind) {
	case PI_KERNEL: add_kernel(x, s, i); break;
	case PI_COLLECTIVE: add_collective(x, s, i); break;
	case PI_COPY:
		if (in->nin > 0 && in->nout > 0 && in->in[0] >= 0)
			x->prod[in->out[0]] = (Prod){ x->prod[in->in[0]].node, s, i };
		break;
	default: break;
	}
}

int viz_from_plan(const Plan *p, const RtTiming *t, VizGraph *g)
{
	memset(g, 0, sizeof *g);
	PlanStep *order;
	int n;
	RtError e = { 0 };
	if (plan_linearize(p, &order, &n, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	Px x = { p, g, vz_alloc(sizeof(Prod) * (size_t)(p->nbuffers + 1)),
		 vz_alloc(sizeof(int) * (size_t)(p->nstreams + 1)), NULL };
	int total = 0;
	for (int s = 0; s < p->nstreams; s++)
		x.base[s] = total, total += p->streams[s].nins;
	x.dur = vz_alloc(sizeof(double) * (size_t)(total + 1));
	for (int i = 0; i < total; i++)
		x.dur[i] = -1;
	for (int i = 0; t && i < t->nspans; i++)
		x.dur[x.base[t->spans[i].stream] + t->spans[i].index] = t->spans[i].end - t->spans[i].start;
	for (int b = 0; b < p->nbuffers; b++)
		x.prod[b] = (Prod){ -1, -1, -1 };
	char id[512];
	const char *model = p->source.model ? p->source.model : "plan", *slash = strrchr(model, '/');
	snprintf(id, sizeof id, "%s: target %s, machine %s", slash ? slash + 1 : model, p->target, p->machine);
	g->title = vz_strdup(id);
	g->from_plan = 1;
	for (int i = 0; i < p->ndevices; i++)   /* devices in plan order, used or not */
		vz_device(g, p->devices[i].name, p->devices[i].kind);
	for (int i = 0; i < p->ndevices; i++)   /* a pool (vera-rubin): its kernels' pool_size */
		g->devs[i].chips = viz_pool_chips(p, i);
	for (int i = 0; i < p->ninputs; i++) {
		snprintf(id, sizeof id, "input:%s", p->inputs[i].name);
		int k = vz_node(g, VN_INPUT, id, p->inputs[i].name, -1);
		g->nodes[k].shape = buffer_type(&p->buffers[p->inputs[i].buffer]);
		x.prod[p->inputs[i].buffer].node = k;
	}
	for (int i = 0; i < n; i++)
		step(&x, order[i].stream, order[i].index);
	for (int i = 0; i < p->noutputs; i++) {
		snprintf(id, sizeof id, "output:%s", p->outputs[i].name);
		flow(&x, p->outputs[i].buffer, vz_node(g, VN_OUTPUT, id, p->outputs[i].name, -1), 0);
	}
	vz_fusion_kinds(g);
	rt_free(order);
	free(x.prod), free(x.base), free(x.dur);
	return 0;
}
