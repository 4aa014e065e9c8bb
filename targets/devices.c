/* targets/devices.c: multi-device lowering shared by every target (contract in targets/target.h,
 * "multi-device lowering").
 *
 * The partition pass (passes/partition.c) writes its decisions into the IR: `@device(gpu3)` on
 * every placed node, `Transfer {device}` where a value crosses devices, AllReduce / AllGather /
 * AllToAll `{devices}` for collectives and `Split` of a parameter (no @device) for weight
 * shards.  This file turns those into plan entities: one plan device, value space, stream and
 * heap per device instance used, per-instance copies of parameters and inputs, sharded
 * constants, link copies and collectives, and the record/wait events that order work across
 * streams (the interpreter's linearisation and the timing engine both follow them, so a missing
 * event is a verifier error, never a silent race).
 *
 * Links: the machine describes link classes between device classes (NVLink among GPUs, ICI among
 * TPUs, C2C among LPUs, NVLink-C2C or Ethernet between pools); a plan link is created per ordered
 * pair of instances that exchange data ("nvlink.gpu0-gpu1"), with the class's one-way bandwidth
 * and per-hop latency (targets/machine.h link_oneway_bw).  A collective uses the link from its
 * first member to its second; the runtime's ring/pairwise formulas (runtime/timing.c) cost it.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"

/* A device instance: machine device class (index into Machine.devs) and instance number. */
typedef struct Inst {
	int cls, k;
} Inst;

static int inst_cmp(const void *a, const void *b)
{
	const Inst *x = a, *y = b;
	return x->cls != y->cls ? (x->cls > y->cls) - (x->cls < y->cls) : (x->k > y->k) - (x->k < y->k);
}

/* "gpu3" -> class of id "gpu", k 3 ("gpu" alone is instance 0); -1 if no class matches. */
static int parse_dev(const Machine *m, const char *name, Inst *out)
{
	for (int i = 0; i < m->ndevs; i++) {
		const Device *d = &m->devs[i];
		size_t n = strlen(d->id);
		if (d->is_host || strncmp(name, d->id, n))
			continue;
		const char *s = name + n;
		if (!*s) {
			*out = (Inst){ i, 0 };
			return 0;
		}
		long k = 0;
		int ok = 1;
		for (const char *c = s; *c && ok; c++)   /* a huge number saturates: no such instance */
			if ((ok = *c >= '0' && *c <= '9'))
				k = k >= 1000000 ? 1000000 : k * 10 + (*c - '0');
		if (ok) {
			*out = (Inst){ i, (int)k };
			return 0;
		}
	}
	return -1;
}


/* Whether collective op gives one output per member (output j on member j: AllToAll,
 * ReduceScatter) rather than one result every member holds (AllReduce, AllGather). */
static int per_member(Op op) { return op == OP_AllToAll || op == OP_ReduceScatter; }

/* Whether flat node i carries the partition pass's `shard` attribute `kind` ("weight", "input",
 * "output"): it is lowered to plan entities, not run. */
static int shard_kind(const Flat *f, int i, const char *kind)
{
	const char *s = rt_attr_str(&f->nodes[i].n->attrs, "shard", NULL);
	return s && strcmp(s, kind) == 0;
}

/* A weight-shard Split (shard="weight", of a parameter): its outputs are constants, slices of
 * the parameter's initialiser, on the instances that read them. */
static int is_shard_split(const Flat *f, int i)
{
	const FlatNode *fn = &f->nodes[i];
	if (fn->n->op != OP_Split || fn->nin < 1 || fn->in[0] < 0 || !shard_kind(f, i, "weight"))
		return 0;
	const FlatVal *v = &f->vals[fn->in[0]];
	return v->def < 0 && v->v && v->v->kind == V_PARAM;
}

/* A KV-cache input's shards (shard="input": a Split of an entry-graph input, or a layer
 * graph's input bound to one).  Each output becomes a sharded plan input on the device reading it. */
static int is_input_split(const Flat *f, int i)
{
	const FlatNode *fn = &f->nodes[i];
	if (fn->n->op != OP_Split || fn->nin < 1 || fn->in[0] < 0 || !shard_kind(f, i, "input"))
		return 0;
	const FlatVal *v = &f->vals[fn->in[0]];
	return v->def < 0 && v->v && v->v->kind == V_INPUT;
}

/* A sharded output's assembly (shard="output": a Concat whose result is only an entry-graph
 * output).  Its inputs become the output's shards, each kept on the device that computed it. */
static int is_output_concat(const Flat *f, int i)
{
	const FlatNode *fn = &f->nodes[i];
	if (fn->n->op != OP_Concat || fn->nout != 1 || fn->nin < 1 || !shard_kind(f, i, "output"))
		return 0;
	const FlatVal *v = &f->vals[fn->out[0]];
	for (int k = 0; k < fn->nin; k++)
		if (fn->in[k] < 0 || f->vals[fn->in[k]].def < 0)
			return 0;
	return v->is_output && v->last < 0;
}

/* A node the lowering turns into plan entities rather than an instruction (partitioned graphs). */
static int is_io_shard(const Flat *f, int i) { return is_shard_split(f, i) || is_input_split(f, i) || is_output_concat(f, i); }

typedef struct Ctx {
	TgtDevs *d;
	Plan *p;
	const Flat *f;
	RtError *e;
	Inst *inst;          /* sorted, d->n of them */
	int ninst, capinst;
} Ctx;

static int inst_add(Ctx *c, Inst x)
{
	if (c->ninst == c->capinst) {
		int cap = c->capinst * 2 + 8;
		Inst *n = realloc(c->inst, sizeof *n * (size_t)cap);
		if (!n)
			return rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
		c->inst = n, c->capinst = cap;
	}
	c->inst[c->ninst++] = x;
	return 0;
}

static int inst_index(const Ctx *c, Inst x)
{
	const Inst *r = bsearch(&x, c->inst, (size_t)c->ninst, sizeof x, inst_cmp);
	return r ? (int)(r - c->inst) : -1;
}

static int node_err(Ctx *c, int i, const char *fmt, const char *a, const char *b)
{
	Loc l = c->f->nodes[i].n->loc;
	char msg[512];
	snprintf(msg, sizeof msg, fmt, a, b);
	if (l.file && l.line <= 0)   /* ONNX nodes: "model.onnx: node 'x' (Op, opset N)" */
		return rt_errorf(c->e, RT_EUSER, "%s: error: %s", l.file, msg);
	return rt_errorf(c->e, RT_EUSER, "%s:%d:%d: error: %s", l.file ? l.file : "<graph>", l.line, l.col, msg);
}

/* Parses node i's device name `name` into x, checking the machine has that instance. */
static int node_inst(Ctx *c, int i, const char *name, Inst *x)
{
	const Machine *m = c->d->m->m;
	if (parse_dev(m, name, x) < 0)
		return node_err(c, i, "node '%s' is placed on '%s', which names no device class of the machine",
				c->f->vals[c->f->nodes[i].out[0]].name, name);
	if (x->k >= (int)m->devs[x->cls].count.v) {
		char have[96];
		snprintf(have, sizeof have, "machine '%s' has %d %s device(s)", m->name, (int)m->devs[x->cls].count.v,
			 m->devs[x->cls].id);
		return node_err(c, i, "'%s' is not a device instance: %s", name, have);
	}
	return 0;
}

/* The members of collective node i ("gpu0,gpu1"), as instance indices (or, when `collect`, added
 * to the instance list); *n receives their count.  The last list parsed is remembered in d
 * (mem_s, mem_x): a repeat of it is neither parsed nor, when collecting, added again. */
static int members(Ctx *c, int i, int collect, int *pl, int max, int *n)
{
	TgtDevs *d = c->d;
	const char *s = rt_attr_str(&c->f->nodes[i].n->attrs, "devices", NULL);
	*n = 0;
	if (!s)
		return node_err(c, i, "collective '%s' has no devices attribute%s",
				c->f->vals[c->f->nodes[i].out[0]].name, "");
	int hit = d->mem_s && strcmp(d->mem_s, s) == 0;
	if (!hit) {
		d->mem_s = NULL, d->mem_n = 0;
		for (const char *t = s; *t;) {
			char name[64];
			size_t len = strcspn(t, ",");
			memcpy(name, t, len < 63 ? len : 63);
			name[len < 63 ? len : 63] = 0;
			if (d->mem_n == d->mem_cap) {
				int cap = d->mem_cap * 2 + 64;
				Inst *x = realloc(d->mem_x, sizeof *x * (size_t)cap);
				if (!x)
					return rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
				d->mem_x = x, d->mem_cap = cap;
			}
			if (node_inst(c, i, name, &((Inst *)d->mem_x)[d->mem_n]) < 0)
				return -1;
			d->mem_n++;
			t += len + (t[len] == ',');
		}
		d->mem_s = s;
	}
	if (d->mem_n > max)
		return node_err(c, i, "collective '%s' has more members than %s supports",
				c->f->vals[c->f->nodes[i].out[0]].name, "one instruction");
	for (int k = 0; k < d->mem_n; k++) {
		Inst x = ((const Inst *)d->mem_x)[k];
		if (!collect)
			pl[k] = inst_index(c, x);
		else if (!hit && inst_add(c, x) < 0)
			return -1;
	}
	*n = d->mem_n;
	if (*n != c->f->nodes[i].nin)
		return node_err(c, i, "collective '%s': its devices attribute does not list one device per %s",
				c->f->vals[c->f->nodes[i].out[0]].name, "input");
	return 0;
}

/* ---- plan entities per instance ---- */

/* Copies machine device class `cls` as instance "<id><k>" into p, with its spaces and units. */
static int add_instance(Ctx *c, int idx, const char *space)
{
	const TgtMachine *tm = c->d->m;
	const Device *md = &tm->m->devs[c->inst[idx].cls];
	const Plan *desc = tm->desc;
	int src = plan_find_device(desc, md->id);
	if (src < 0)
		return rt_errorf(c->e, RT_EINTERNAL, "aicc: internal error: device class '%s' not described", md->id);
	char name[128], sp[192];
	snprintf(name, sizeof name, "%s%d", md->id, c->inst[idx].k);
	PlanDevice pd = desc->devices[src];
	pd.name = name;
	int dev = plan_add_device(c->p, &pd, c->e);
	if (dev < 0)
		return -1;
	size_t pre = strlen(md->id);
	int best = -1, named = -1;
	for (int i = 0; i < desc->nspaces; i++) {
		if (desc->spaces[i].device != src)
			continue;
		PlanSpace s = desc->spaces[i];
		const char *suffix = s.name + pre;     /* ".hbm" */
		snprintf(sp, sizeof sp, "%s%s", name, suffix);
		s.name = sp;
		s.device = dev;
		int at = plan_add_space(c->p, &s, c->e);
		if (at < 0)
			return -1;
		if (space && strcmp(suffix + 1, space) == 0)
			named = at;
		if (best < 0)
			best = at;
	}
	for (int i = 0; i < desc->nunits; i++) {
		if (desc->units[i].device != src)
			continue;
		PlanUnit u = desc->units[i];
		snprintf(sp, sizeof sp, "%s%s", name, u.name + pre);
		u.name = sp;
		u.device = dev;
		if (plan_add_unit(c->p, &u, c->e) < 0)
			return -1;
	}
	if (named < 0 && best < 0)
		return rt_errorf(c->e, RT_EUSER, "aicc: error: machine '%s': device '%s' has no memory space", tm->m->name, md->id);
	c->d->dev[idx] = dev;
	c->d->space[idx] = named >= 0 ? named : best;
	c->d->stream[idx] = plan_add_stream(c->p, name, dev, c->e);
	return c->d->stream[idx] < 0 ? -1 : 0;
}

/* The plan link from instance a to instance b, created on first use (link_of). */
static int link_find(TgtDevs *d, Plan *p, int a, int b, RtError *e)
{
	const PlanDevice *da = &p->devices[d->dev[a]], *db = &p->devices[d->dev[b]];
	const Machine *m = d->m->m;
	Inst xa, xb;
	if (parse_dev(m, da->name, &xa) < 0 || parse_dev(m, db->name, &xb) < 0)
		return rt_errorf(e, RT_EINTERNAL, "aicc: internal error: unparsable device instance");
	const Link *l = machine_link(m, &m->devs[xa.cls], &m->devs[xb.cls]);
	if (!l)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine '%s' has no link between %s and %s devices",
				 m->name, m->devs[xa.cls].id, m->devs[xb.cls].id);
	char name[256];
	snprintf(name, sizeof name, "%s.%s-%s", l->id, da->name, db->name);
	for (int i = p->nlinks - 1; i >= 0; i--)
		if (strcmp(p->links[i].name, name) == 0)
			return i;
	PlanLink pl = { .name = name, .src = d->dev[a], .dst = d->dev[b], .bandwidth = link_oneway_bw(l),
			.latency_s = num_has(&l->latency) ? l->latency.v : 0 };
	return plan_add_link(p, &pl, e);
}

/* link_find through a direct-mapped memo: a tensor-parallel plan asks for the same few hundred
 * links tens of thousands of times, and each answer formatted the link's name and scanned the
 * plan's links for it. */
#define LINK_MEMO 4096
static int link_of(TgtDevs *d, Plan *p, int a, int b, RtError *e)
{
	if (a == b)
		return -1;
	if (!d->lmemo && (d->lmemo = malloc(sizeof *d->lmemo * LINK_MEMO)))
		for (int i = 0; i < LINK_MEMO; i++)
			d->lmemo[i] = (struct TgtLinkMemo){ -1, -1, -1 };
	size_t h = ((size_t)a * 40503u + (size_t)b * 2654435761u) % LINK_MEMO;
	if (d->lmemo && d->lmemo[h].a == a && d->lmemo[h].b == b)
		return d->lmemo[h].link;
	int r = link_find(d, p, a, b, e);
	if (r >= 0 && d->lmemo)
		d->lmemo[h] = (struct TgtLinkMemo){ a, b, r };
	return r;
}

/* ---- replicas: extra buffers of one value on other instances ---- */
static int rep_find(const TgtDevs *d, int v, int pl)
{
	for (int r = d->rep_head[v]; r >= 0; r = d->rep[r].next)
		if (d->rep[r].pl == pl)
			return r;
	return -1;
}

/* Whether value v must also exist on instance pl (recorded once). */
static int need_add(TgtDevs *d, int v, int pl, RtError *e)
{
	if (d->val_pl[v] == pl || rep_find(d, v, pl) >= 0)
		return 0;
	if (d->nrep == d->caprep) {
		int cap = d->caprep * 2 + 16;
		TgtRep *n = realloc(d->rep, sizeof *n * (size_t)cap);
		if (!n)
			return rt_errorf(e, RT_ENOMEM, "out of memory placing values");
		d->rep = n, d->caprep = cap;
	}
	int r = d->nrep++;
	d->rep[r] = (TgtRep){ .next = -1, .pl = pl, .buf = -1 };
	/* keep each value's list in instance order, so buffers are added deterministically */
	int *at = &d->rep_head[v];
	while (*at >= 0 && d->rep[*at].pl < pl)
		at = &d->rep[*at].next;
	d->rep[r].next = *at;
	*at = r;
	return 0;
}

/* ---- init ---- */
static int init_single(TgtDevs *d, Plan *p, const Flat *f, DevKind kind, const char *space, RtError *e)
{
	const TgtMachine *m = d->m;
	if (tgt_machine_copy(m, p, e) < 0)
		return -1;
	const Device *md = machine_first(m->m, kind);
	int dev = md ? plan_find_device(p, md->id) : (p->ndevices ? 0 : -1);
	if (dev < 0)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine '%s' has no %s device", m->m->name, devkind_name(kind));
	int named = -1, best = -1;
	char want[192];
	snprintf(want, sizeof want, "%s.%s", p->devices[dev].name, space ? space : "");
	for (int i = 0; i < p->nspaces; i++) {
		if (p->spaces[i].device != dev)
			continue;
		if (space && strcmp(p->spaces[i].name, want) == 0)
			named = i;
		if (best < 0)
			best = i;
	}
	if (best < 0)
		return rt_errorf(e, RT_EUSER, "machine '%s' has no memory space on device '%s'", p->machine,
				 p->devices[dev].name);
	d->dev[0] = dev;
	d->space[0] = named >= 0 ? named : best;
	d->stream[0] = plan_add_stream(p, "main", dev, e);
	if (d->stream[0] < 0)
		return -1;
	for (int i = 0; i < f->nnodes; i++)
		d->node_pl[i] = 0;
	for (int v = 0; v < f->nvals; v++)
		d->val_pl[v] = 0;
	return 0;
}

static int alloc_arrays(TgtDevs *d, const Flat *f, int n)
{
	d->dev = calloc((size_t)n + 1, sizeof *d->dev);
	d->space = calloc((size_t)n + 1, sizeof *d->space);
	d->stream = calloc((size_t)n + 1, sizeof *d->stream);
	d->heap = calloc((size_t)n + 1, sizeof *d->heap);
	if (!d->dev || !d->space || !d->stream || !d->heap)
		return -1;
	d->n = n;
	for (int i = 0; i < n; i++)
		if (tgt_heap_init(&d->heap[i], n == 1 ? f->nvals + 1 : 16, d->align) < 0)
			return -1;
	return 0;
}

/* First reader (flat node) of every value, -1 for none. */
static int *first_readers(const Flat *f)
{
	int *r = malloc(sizeof *r * ((size_t)f->nvals + 1));
	if (!r)
		return NULL;
	for (int v = 0; v < f->nvals; v++)
		r[v] = -1;
	for (int i = 0; i < f->nnodes; i++)
		for (int k = 0; k < f->nodes[i].nin; k++)
			if (f->nodes[i].in[k] >= 0 && r[f->nodes[i].in[k]] < 0)
				r[f->nodes[i].in[k]] = i;
	return r;
}

/* Instances of the partitioned nodes, sorted; then every node's and value's instance. */
static int place(Ctx *c)
{
	TgtDevs *d = c->d;
	const Flat *f = c->f;
	Inst *ni = malloc(sizeof *ni * ((size_t)f->nnodes + 1));
	int *fr = first_readers(f), rc = ni && fr ? 0 : rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
	for (int i = 0; rc == 0 && i < f->nnodes; i++) {
		const Node *n = f->nodes[i].n;
		const char *name = n->op == OP_Transfer ? rt_attr_str(&n->attrs, "device", f->nodes[i].device) : f->nodes[i].device;
		ni[i] = (Inst){ -1, -1 };
		if (name && (rc = node_inst(c, i, name, &ni[i])) == 0)
			rc = c->ninst && !inst_cmp(&c->inst[c->ninst - 1], &ni[i]) ? 0 : inst_add(c, ni[i]);   /* runs of one device */
		int nm;
		if (rc == 0 && ir_op_is_collective(n->op))
			rc = members(c, i, 1, NULL, 1 << 20, &nm);
	}
	if (rc == 0 && c->ninst == 0)
		rc = inst_add(c, (Inst){ 0, 0 });
	if (rc == 0) {
		qsort(c->inst, (size_t)c->ninst, sizeof *c->inst, inst_cmp);
		int k = 0;
		for (int i = 0; i < c->ninst; i++)
			if (k == 0 || inst_cmp(&c->inst[k - 1], &c->inst[i]))
				c->inst[k++] = c->inst[i];
		c->ninst = k;
	}
	/* unannotated nodes follow their first reader (weight-shard Splits: -1) */
	for (int i = f->nnodes - 1; rc == 0 && i >= 0; i--) {
		if (is_io_shard(f, i)) {
			d->node_pl[i] = -1;
			continue;
		}
		if (ni[i].cls >= 0) {
			d->node_pl[i] = inst_index(c, ni[i]);
			continue;
		}
		int r = f->nodes[i].nout ? fr[f->nodes[i].out[0]] : -1;
		d->node_pl[i] = r >= 0 && d->node_pl[r] >= 0 ? d->node_pl[r] : 0;
	}
	/* plain[v]: some node other than a shard Split reads v */
	unsigned char *plain = rc == 0 ? calloc((size_t)f->nvals + 1, 1) : NULL;
	if (rc == 0 && !plain)
		rc = rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
	for (int i = 0; rc == 0 && i < f->nnodes; i++)
		if (!is_shard_split(f, i) && !is_input_split(f, i))
			for (int k = 0; k < f->nodes[i].nin; k++)
				if (f->nodes[i].in[k] >= 0)
					plain[f->nodes[i].in[k]] = 1;
	/* values: where their producer runs; parameters, inputs and shards where first read */
	for (int v = 0; rc == 0 && v < f->nvals; v++) {
		int def = f->vals[v].def, r = fr[v];
		if (def >= 0 && d->node_pl[def] >= 0)
			d->val_pl[v] = d->node_pl[def];
		else
			d->val_pl[v] = r >= 0 && d->node_pl[r] >= 0 ? d->node_pl[r] : 0;
		if (def < 0 && r >= 0 && f->vals[v].v && (f->vals[v].v->kind == V_PARAM || f->vals[v].v->kind == V_INPUT)) {
			if (!plain[v])      /* a parameter or input read only by shard Splits is not stored */
				d->val_pl[v] = -1;
		}
		if (def >= 0 && is_output_concat(f, def))
			d->val_pl[v] = -1;      /* assembled by the interpreter from its shards */
	}
	for (int i = 0; rc == 0 && i < f->nnodes; i++)
		if (per_member(f->nodes[i].n->op)) {
			int pl[TGT_MAX_OPERANDS], nm;
			if ((rc = members(c, i, 0, pl, TGT_MAX_OPERANDS, &nm)) == 0)
				for (int j = 0; j < f->nodes[i].nout && j < nm; j++)
					d->val_pl[f->nodes[i].out[j]] = pl[j];
		}
	free(ni), free(plain);
	d->first_reader = fr;
	return rc;
}

/* The copies each instance needs: operands read there, collective results on every member. */
static int needs(Ctx *c)
{
	TgtDevs *d = c->d;
	const Flat *f = c->f;
	for (int i = 0; i < f->nnodes; i++) {
		const FlatNode *fn = &f->nodes[i];
		int pl = d->node_pl[i];
		if (pl < 0 || fn->n->op == OP_Transfer)
			continue;
		if (ir_op_is_collective(fn->n->op)) {
			if (per_member(fn->n->op))
				continue;
			int m[TGT_MAX_OPERANDS], nm;
			if (members(c, i, 0, m, TGT_MAX_OPERANDS, &nm) < 0)
				return -1;
			for (int r = 0; r < nm; r++)
				if (need_add(d, fn->out[0], m[r], c->e) < 0)
					return -1;
			continue;
		}
		for (int k = 0; k < fn->nin; k++)
			if (fn->in[k] >= 0 && d->val_pl[fn->in[k]] >= 0 && need_add(d, fn->in[k], pl, c->e) < 0)
				return -1;
	}
	/* weight shards are read where their Split's outputs go: nothing else to add */
	return 0;
}

/* The streams' synchronisation front over the flat order (events): front[i][t], the least over
 * every stream of the last node of stream t it is ordered after once node i has run, never
 * falls as i grows, so each column is kept as the nodes where it rose (at[]) and its values
 * from there (val[]), not as a node x stream table (64 streams x 110,000 nodes: 28 MB written). */
typedef struct FrontCol {
	int *at, *val, n, cap;
} FrontCol;
typedef struct Front {
	FrontCol *col;
	int ns;
} Front;

static int front_push(FrontCol *c, int at, int val)
{
	if (c->n && c->val[c->n - 1] == val)
		return 0;
	if (c->n == c->cap) {
		int cap = c->cap * 2 + 8;
		int *a = realloc(c->at, sizeof *a * (size_t)cap), *v = a ? realloc(c->val, sizeof *v * (size_t)cap) : NULL;
		if (a)
			c->at = a;
		if (!a || !v)
			return -1;
		c->val = v, c->cap = cap;
	}
	c->at[c->n] = at, c->val[c->n++] = val;
	return 0;
}

static void front_free(Front *fr)
{
	for (int t = 0; fr->col && t < fr->ns; t++)
		free(fr->col[t].at), free(fr->col[t].val);
	free(fr->col);
}

/* When value v, read or written on several streams, may give its memory up: the first node from
 * which every stream is ordered after every access to it (its producer and each reader, at their
 * streams' positions), by the waits the lowering emits (a node waits for the producer of each
 * operand computed on another stream).  The streams' vector clocks are simulated over the flat
 * order: vc[s*ns + t] is the last node of stream t that stream s is ordered after, and front[i*ns
 * + t] the least of those over every stream s once node i has run.  INT_MAX when the streams
 * never all synchronise after the accesses (the value is then kept, as before). */
static int sync_death(const Ctx *c, const Front *front, const int *rd, int v)
{
	const TgtDevs *d = c->d;
	const Flat *f = c->f;
	int need = f->vals[v].def, from = need;   /* the earliest node that may be past every access */
	/* its producer, then its readers in node order (rd: CSR lists, events) */
	for (int j = need >= 0 ? -1 : 0, prev = -1; rd[v] + j < rd[v + 1]; j++) {
		int i = j < 0 ? need : rd[f->nvals + 1 + rd[v] + j];
		if (i == prev || i < need || d->node_pl[i] < 0)
			continue;
		prev = i;
		int t = d->node_pl[i], lo = i > from ? i : from;   /* least k >= lo with front[k][t] >= i */
		const FrontCol *col = &front->col[t];
		int a = 0, b = col->n;   /* the first change of column t to a value >= i */
		while (a < b) {
			int mid = a + (b - a) / 2;
			if (col->val[mid] >= i)
				b = mid;
			else
				a = mid + 1;
		}
		if (a == col->n)
			return INT_MAX;
		from = col->at[a] > lo ? col->at[a] : lo;
		if (from >= f->nnodes)
			return INT_MAX;
	}
	return from + 1;
}

/* Every value's readers in node order, as CSR lists: r[v] .. r[v + 1] index r[nvals + 1 + k]. */
static int *reader_lists(const Flat *f)
{
	size_t nv = (size_t)f->nvals, ne = 0;
	for (int i = 0; i < f->nnodes; i++)
		ne += (size_t)f->nodes[i].nin;
	int *r = calloc(nv + 2 + ne, sizeof *r);
	if (!r)
		return NULL;
	for (int i = 0; i < f->nnodes; i++)
		for (int k = 0; k < f->nodes[i].nin; k++)
			if (f->nodes[i].in[k] >= 0)
				r[f->nodes[i].in[k] + 1]++;
	for (size_t v = 0; v < nv; v++)
		r[v + 1] += r[v];
	int *fill = malloc(sizeof *fill * (nv + 1));
	if (!fill) {
		free(r);
		return NULL;
	}
	memcpy(fill, r, sizeof *fill * (nv + 1));
	for (int i = 0; i < f->nnodes; i++)
		for (int k = 0; k < f->nodes[i].nin; k++)
			if (f->nodes[i].in[k] >= 0)
				r[nv + 1 + (size_t)fill[f->nodes[i].in[k]]++] = i;
	free(fill);
	return r;
}

/* A collective's result on member m (not the collective's stream), read there by m's stream,
 * which so waits for the write: its memory in m's heap is free once m's last read of it is done,
 * when every collective of another stream that writes into m's memory before the value's shared
 * release (TgtDevs.until) is ordered after that read (snap: the stream clocks of the nodes read
 * across streams; a copy into m runs on m's stream).  A tensor-parallel layer's norms, replicated
 * on every device (the partition pass), read the all-reduced sum on each member: held until the
 * next all-reduce ordered gpu0 after them, each member kept [S, D] more through the FFN
 * (llama-70B FP8 prefill 96 x 2048 at TP2 did not fit gpu1). */
static int member_deaths(Ctx *c, const int *rd, const int *xrow, const int *snap, size_t ns)
{
	TgtDevs *d = c->d;
	const Flat *f = c->f;
	/* the placed collectives in node order: the scan below visits only them */
	int *coll = malloc(sizeof *coll * ((size_t)f->nnodes + 1)), ncoll = 0, rc = 0;
	if (!coll)
		return rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
	for (int k = 0; k < f->nnodes; k++)
		if (d->node_pl[k] >= 0 && ir_op_is_collective(f->nodes[k].n->op))
			coll[ncoll++] = k;
	for (int j = 0; rc == 0 && j < f->nnodes; j++) {
		const FlatNode *fn = &f->nodes[j];
		int v = fn->nout > 0 ? fn->out[0] : -1;
		if (d->node_pl[j] < 0 || !ir_op_is_collective(fn->n->op) || per_member(fn->n->op) || v < 0 ||
		    d->until[v] < 0 || d->until[v] == INT_MAX || f->vals[v].is_output)
			continue;
		for (int r = d->rep_head[v]; r >= 0; r = d->rep[r].next) {
			int m = d->rep[r].pl, q = j, ok = 1;
			if (m == d->node_pl[j])
				continue;
			for (int k = rd[v]; k < rd[v + 1]; k++) {
				int i = rd[f->nvals + 1 + k];
				if (d->node_pl[i] == m && i > q)
					q = i;
			}
			int a = 0, b = ncoll;   /* the first collective after q */
			while (a < b) {
				int mid = a + (b - a) / 2;
				if (coll[mid] <= q)
					a = mid + 1;
				else
					b = mid;
			}
			for (int x = a; ok && x < ncoll && coll[x] < d->until[v]; x++) {
				int k = coll[x], mm[TGT_MAX_OPERANDS], nm = 0;
				if (d->node_pl[k] == m)
					continue;
				if (members(c, k, 0, mm, TGT_MAX_OPERANDS, &nm) < 0) {
					rc = -1;
					break;
				}
				for (int y = 0; y < nm && ok; y++)
					if (mm[y] == m)
						ok = xrow[k] >= 0 && snap[(size_t)xrow[k] * ns + (size_t)m] >= q;
			}
			if (rc < 0)
				break;
			if (!ok || q == j || q + 1 >= d->until[v])
				continue;   /* unread on m: m never waits for the write, a later node there may run first */
			if (!d->huntil[m]) {
				if (!(d->huntil[m] = malloc(sizeof *d->huntil[m] * ((size_t)f->nvals + 1)))) {
					rc = rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
					break;
				}
				memcpy(d->huntil[m], d->until, sizeof *d->until * ((size_t)f->nvals + 1));
				d->heap[m].until = d->huntil[m];
			}
			d->huntil[m][v] = q + 1;
		}
	}
	free(coll);
	return rc;
}

/* Which nodes' results are read on another stream (they record an event), and when values
 * shared between streams are released (TgtDevs.until): a value read by another stream (that
 * stream may read it after this one has moved on) and a collective's results (written into
 * members' memory by the collective's stream) give their memory up only once every stream is
 * ordered after every access (sync_death), so a later buffer there is never written while a
 * stream may still read the old one; without that, each layer instance's shared activations
 * were kept for the whole plan and a TP plan's activations grew with the depth.  Output shards
 * live to the end; an input copied to other instances is kept (its copies run at the start). */
static int events(Ctx *c)
{
	TgtDevs *d = c->d;
	const Flat *f = c->f;
	size_t ns = (size_t)(d->n > 0 ? d->n : 1), nn = (size_t)f->nnodes + 1;
	unsigned char *shared = calloc((size_t)f->nvals + 1, 1);
	/* xrow[i]: node i's row of snap (its stream's clock once it has run) when a node of another
	 * stream reads its result, else -1: only those rows are ever read back */
	int *xrow = malloc(sizeof *xrow * nn), nx = 0;
	for (int i = 0; xrow && i < f->nnodes; i++)
		xrow[i] = -1;
	for (int i = 0; xrow && i < f->nnodes; i++) {
		const FlatNode *fn = &f->nodes[i];
		int s = d->node_pl[i];
		for (int k = 0; s >= 0 && k < fn->nin; k++) {
			int v = fn->in[k], def = v >= 0 ? f->vals[v].def : -1;
			if (def >= 0 && d->node_pl[def] >= 0 && d->node_pl[def] != s && xrow[def] < 0)
				xrow[def] = -2;
		}
	}
	for (int i = 0; xrow && i < f->nnodes; i++)
		if (xrow[i] == -2)
			xrow[i] = nx++;
	int *vc = malloc(sizeof *vc * ns * ns), *snap = malloc(sizeof *snap * ((size_t)nx + 1) * ns);
	Front front = { calloc(ns, sizeof(FrontCol)), (int)ns };
	/* colmin[t]: the least vc[r*ns + t] over the streams r, and colcnt[t] how many streams hold
	 * it; a node changes only its own row, in the columns its waits raise (old: each one's value
	 * before), and a column's least is scanned again only when its last holder moved up */
	int *colmin = malloc(sizeof *colmin * ns), *colcnt = malloc(sizeof *colcnt * ns);
	int *changed = malloc(sizeof *changed * ns), *old = malloc(sizeof *old * ns);
	unsigned char *mark = calloc(ns, 1);
	int rc = shared && xrow && vc && snap && front.col && colmin && colcnt && changed && old && mark ? 0 :
		 rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
	for (int v = 0; rc == 0 && v < f->nvals; v++)
		d->until[v] = -1;
	for (size_t i = 0; rc == 0 && i < ns * ns; i++)
		vc[i] = -1;
	for (size_t t = 0; rc == 0 && t < ns; t++) {
		colmin[t] = -1, colcnt[t] = (int)ns;
		if (front_push(&front.col[t], 0, -1) < 0)
			rc = rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
	}
	for (int i = 0; rc == 0 && i < f->nnodes; i++) {
		const FlatNode *fn = &f->nodes[i];
		int s = d->node_pl[i];
		d->rec_event[i] = -1;
		if (is_output_concat(f, i))     /* output shards: live to the end */
			for (int k = 0; k < fn->nin; k++)
				d->until[fn->in[k]] = INT_MAX;
		if (s >= 0 && ir_op_is_collective(fn->n->op))
			for (int k = 0; k < fn->nout; k++)
				shared[fn->out[k]] = 1;
		int *mine = &vc[(size_t)(s >= 0 ? s : 0) * ns], nch = 0;
		for (int k = 0; s >= 0 && k < fn->nin; k++) {
			int v = fn->in[k], def = v >= 0 ? f->vals[v].def : -1;
			if (def >= 0 && d->node_pl[def] >= 0 && d->node_pl[def] != s) {
				d->rec_event[def] = -2, shared[v] = 1;    /* the event is named when emitted */
				const int *ds = &snap[(size_t)xrow[def] * ns];
				for (size_t t = 0; t < ns; t++)          /* its wait: s is ordered after def */
					if (ds[t] > mine[t]) {
						if (!mark[t])
							mark[t] = 1, old[nch] = mine[t], changed[nch++] = (int)t;
						mine[t] = ds[t];
					}
			}
		}
		if (s >= 0 && mine[s] != i) {
			if (!mark[s])
				mark[s] = 1, old[nch] = mine[s], changed[nch++] = s;
			mine[s] = i;
		}
		for (int q = 0; q < nch; q++) {
			size_t t = (size_t)changed[q];
			mark[t] = 0;
			if (old[q] != colmin[t] || --colcnt[t] > 0)
				continue;    /* values only grow: the least moves only when its last holder does */
			int lo = INT_MAX, cnt = 0;
			for (size_t r = 0; r < ns; r++) {
				int x = vc[r * ns + t];
				if (x < lo)
					lo = x, cnt = 1;
				else if (x == lo)
					cnt++;
			}
			colmin[t] = lo, colcnt[t] = cnt;
			if (front_push(&front.col[t], i, lo) < 0)
				rc = rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
		}
		if (xrow[i] >= 0)
			for (size_t t = 0; t < ns; t++)
				snap[(size_t)xrow[i] * ns + t] = s >= 0 ? mine[t] : -1;
	}
	int *rd = rc == 0 ? reader_lists(f) : NULL;
	if (rc == 0 && !rd)
		rc = rt_errorf(c->e, RT_ENOMEM, "out of memory placing devices");
	for (int v = 0; rc == 0 && v < f->nvals; v++) {
		const FlatVal *fv = &f->vals[v];
		if (fv->def < 0 && d->rep_head[v] >= 0)
			d->until[v] = INT_MAX;  /* an input copied to other instances at the start */
		else if (shared[v] && d->until[v] < 0)
			d->until[v] = sync_death(c, &front, rd, v);
	}
	if (rc == 0)
		rc = member_deaths(c, rd, xrow, snap, ns);
	free(rd);
	front_free(&front);
	free(shared), free(xrow), free(vc), free(snap), free(colmin), free(colcnt), free(changed), free(old), free(mark);
	return rc;
}

int tgt_devs_init(TgtDevs *d, Plan *p, const TgtMachine *m, const Flat *f, DevKind kind,
		  const char *space, int64_t align, RtError *e)
{
	memset(d, 0, sizeof *d);
	d->m = m;
	d->align = align;
	size_t nn = (size_t)f->nnodes + 1, nv = (size_t)f->nvals + 1;
	d->node_pl = malloc(sizeof *d->node_pl * nn);
	d->val_pl = malloc(sizeof *d->val_pl * nv);
	d->prim = malloc(sizeof *d->prim * nv);
	d->rep_head = malloc(sizeof *d->rep_head * nv);
	d->rec_event = malloc(sizeof *d->rec_event * nn);
	d->wait_seen = malloc(sizeof *d->wait_seen * nn);
	if (!d->node_pl || !d->val_pl || !d->prim || !d->rep_head || !d->rec_event || !d->wait_seen)
		return rt_errorf(e, RT_ENOMEM, "out of memory placing devices");
	for (int v = 0; v < f->nvals; v++)
		d->rep_head[v] = -1, d->prim[v] = -1;
	for (int i = 0; i < f->nnodes; i++)
		d->rec_event[i] = -1, d->wait_seen[i] = -1;
	for (int i = 0; i < f->nnodes && !d->partitioned; i++)
		d->partitioned = f->nodes[i].device != NULL;
	if (!d->partitioned) {
		if (alloc_arrays(d, f, 1) < 0)
			return rt_errorf(e, RT_ENOMEM, "out of memory placing devices");
		return init_single(d, p, f, kind, space, e);
	}
	Ctx c = { d, p, f, e, NULL, 0, 0 };
	int rc = place(&c);
	if (rc == 0 && (alloc_arrays(d, f, c.ninst) < 0 || !(d->until = malloc(sizeof *d->until * nv)) ||
			!(d->huntil = calloc((size_t)(d->n > 0 ? d->n : 1), sizeof *d->huntil))))
		rc = rt_errorf(e, RT_ENOMEM, "out of memory placing devices");
	for (int i = 0; rc == 0 && i < d->n; i++)
		d->heap[i].until = d->until;
	for (int i = 0; rc == 0 && i < c.ninst; i++)
		rc = add_instance(&c, i, space);
	if (rc == 0)
		rc = needs(&c);
	if (rc == 0)
		rc = events(&c);
	d->inst = c.inst;
	return rc;
}

void tgt_devs_free(TgtDevs *d)
{
	for (int i = 0; d->heap && i < d->n; i++)
		tgt_heap_free(&d->heap[i]);
	for (int i = 0; d->huntil && i < d->n; i++)
		free(d->huntil[i]);
	free(d->huntil);
	free(d->dev), free(d->space), free(d->stream), free(d->heap);
	free(d->node_pl), free(d->val_pl), free(d->prim), free(d->rec_event), free(d->wait_seen);
	free(d->rep_head), free(d->rep);
	free(d->inst), free(d->first_reader), free(d->until), free(d->lmemo), free(d->mem_x);
	memset(d, 0, sizeof *d);
}

/* ---- values ---- */

/* The shard of parameter `pv` that weight-shard Split output v is: axis, offset and full size. */
static void shard_of(const Flat *f, int v, int *axis, int64_t *off, int64_t *full)
{
	const FlatNode *sp = &f->nodes[f->vals[v].def];
	const FlatVal *pv = &f->vals[sp->in[0]];
	int64_t a = rt_attr_int(&sp->n->attrs, "axis", 0);
	*axis = (int)(a < 0 ? a + pv->rank : a);
	*off = 0;
	for (int k = 0; k < sp->nout && sp->out[k] != v; k++)
		*off += f->vals[sp->out[k]].dims[*axis];
	*full = pv->dims[*axis];
}

static const char *fv_name(const Flat *f, int v) { return f->vals[v].name; }

/* The advice of an unpartitioned plan that does not fit its device: a machine with one device
 * of the class needs more of them; one with several needs the plan spread over them (newcomer
 * 32 item 1: "compile for a machine with several devices" on dgx-h100's 8 GPUs). */
static const char *nofit_advice(const TgtDevs *d, const Plan *p, int pl, char *buf, size_t n)
{
	const char *id = p->devices[d->dev[pl]].name;
	const Machine *m = d->m->m;
	const Device *md = tgt_plan_device(m, id);
	if (!md || !num_has(&md->count) || md->count.v < 2)
		return TGT_NOFIT_ADVICE;
	const Target *t = tgt_for_machine(m, NULL, 0);
	char to[96] = "for a target of its devices, whose -O1 spreads the model over them";
	if (t && p->target && !strcmp(t->name, p->target))   /* -O0, or passes without partition */
		tgt_fmt(to, sizeof to, "with -O1 (the partition pass spreads the model over them)");
	else if (t && strcmp(t->name, "reference"))
		tgt_fmt(to, sizeof to, "with --target %s (its -O1 spreads the model over them)", t->name);
	tgt_fmt(buf, n, "%s%s has %.0f %s devices and this plan uses one: compile %s, or give --tp N / --pp N",
		TGT_NOFIT_MANY, m->name, md->count.v, md->id, to);
	return buf;
}

/* One buffer of v on instance pl (and its constant when v is a parameter or a shard). */
static int value_on(TgtDevs *d, Plan *p, const Flat *f, int v, DType dt, int pl, const char *dir, RtError *e)
{
	int64_t end;
	const char *fmt = d->format ? d->format(d->format_ctx, &f->vals[v]) : NULL;
	int b = tgt_add_buffer(p, &d->heap[pl], f, v, dt, fmt, d->space[pl], &end, e);
	if (b < 0)
		return -1;
	if (d->is_dirty && !d->is_dirty[pl])
		d->is_dirty[pl] = 1, d->dirty[d->ndirty++] = pl;
	const PlanSpace *sp = &p->spaces[d->space[pl]];
	if (end > sp->capacity) {       /* sizes a person reads, not byte offsets (newcomer finding 10) */
		char cap[32], need[32], size[32], many[320];
		return rt_errorf(e, RT_EUSER, "aicc: error: the plan does not fit in %s (%s): its buffers need at "
				 "least %s (the first past the end is '%s', %s)%s", sp->name,
				 rt_si_str((double)sp->capacity, "B", cap, sizeof cap), rt_si_str((double)end, "B", need, sizeof need),
				 fv_name(f, v), rt_si_str((double)p->buffers[b].size, "B", size, sizeof size),
				 d->partitioned ? TGT_NOFIT_ADVICE_SPLIT : nofit_advice(d, p, pl, many, sizeof many));
	}
	if (pl != d->val_pl[v]) {       /* another instance's copy: "x@gpu1" */
		PlanBuffer *pb = &p->buffers[b];
		size_t n = strlen(pb->name) + strlen(p->devices[d->dev[pl]].name) + 2;
		char *name = rt_malloc(n);
		if (!name)
			return rt_errorf(e, RT_ENOMEM, "out of memory naming buffers");
		tgt_fmt(name, n, "%s@%s", pb->name, p->devices[d->dev[pl]].name);
		rt_free(pb->name);
		pb->name = name;
	}
	const FlatVal *fv = &f->vals[v];
	int shard = fv->def >= 0 && d->node_pl[fv->def] < 0 && is_shard_split(f, fv->def);
	if (shard) {
		int pid = f->nodes[fv->def].in[0];
		const FlatVal *pv = &f->vals[pid];
		TgtHeap *h = &d->heap[pl];      /* a constant: live throughout, as its parameter */
		tgt_heap_rename(h, p->buffers[b].offset, v, pid);
		InitKind k = pv->v->init ? pv->v->init->kind : INIT_NONE;
		if (k == INIT_LITERAL || k == INIT_DATA)
			return rt_errorf(e, RT_EUSER, "aicc: error: parameter '%s' has inline data and cannot be stored "
					 "sharded across devices; give it as an .npy or .safetensors file", pv->name);
		if (tgt_add_const(p, b, pv, dir, e) < 0)
			return -1;
		PlanConst *c = &p->consts[p->nconsts - 1];   /* unbound too: the part it is (checkpoints) */
		shard_of(f, v, &c->shard_axis, &c->shard_off, &c->shard_full);
	} else if (fv->def < 0 && fv->v && fv->v->kind == V_PARAM && tgt_add_const(p, b, fv, dir, e) < 0)
		return -1;
	return b;
}

static int value_all(TgtDevs *d, Plan *p, const Flat *f, int v, DType dt, const char *dir, RtError *e)
{
	if ((d->prim[v] = value_on(d, p, f, v, dt, d->val_pl[v], dir, e)) < 0)
		return -1;
	for (int r = d->rep_head[v]; r >= 0; r = d->rep[r].next)
		if ((d->rep[r].buf = value_on(d, p, f, v, dt, d->rep[r].pl, dir, e)) < 0)
			return -1;
	return 0;
}

int *tgt_first_operand_lists(const Flat *f)
{
	int *r = malloc(sizeof *r * ((size_t)f->nvals + (size_t)f->nnodes + 1)), *next = r ? r + f->nvals : NULL;
	if (!r)
		return NULL;
	for (int v = 0; v < f->nvals; v++)
		r[v] = -1;
	for (int i = f->nnodes - 1; i >= 0; i--) {   /* backwards: each list comes out in node order */
		int v = f->nodes[i].nin > 0 ? f->nodes[i].in[0] : -1;
		next[i] = v >= 0 ? r[v] : -1;
		if (v >= 0)
			r[v] = i;
	}
	return r;
}

static int devs_value(TgtDevs *d, Plan *p, const Flat *f, const int *in0, int v, DType dt, int *buf, const char *dir,
		      RtError *e)
{
	const FlatVal *fv = &f->vals[v];
	if (d->prim[v] >= 0) {          /* a weight shard, placed with its parameter */
		buf[v] = d->prim[v];
		return 0;
	}
	if (d->val_pl[v] >= 0 && value_all(d, p, f, v, dt, dir, e) < 0)
		return -1;
	buf[v] = d->prim[v];
	/* weight shards are constants and input shards inputs, live from the start: placed now,
	 * before any node's result */
	if (fv->def < 0 && fv->v && (fv->v->kind == V_PARAM || fv->v->kind == V_INPUT) && d->partitioned)
		for (int i = in0[v]; i >= 0; i = in0[f->nvals + i]) {   /* the nodes whose first operand is v */
			const FlatNode *fn = &f->nodes[i];
			if (!is_shard_split(f, i) && !is_input_split(f, i))
				continue;
			for (int k = 0; k < fn->nout; k++)
				if (d->val_pl[fn->out[k]] >= 0 && d->prim[fn->out[k]] < 0 &&
				    value_all(d, p, f, fn->out[k], dt, dir, e) < 0)
					return -1;
		}
	return 0;
}

int tgt_devs_values(TgtDevs *d, Plan *p, const Flat *f, TgtDtypeFn dtype, const void *ctx, int *buf,
		    const char *dir, RtError *e)
{
	int *in0 = tgt_first_operand_lists(f), rc = in0 ? 0 : rt_errorf(e, RT_ENOMEM, "out of memory placing devices");
	d->dirty = malloc(sizeof *d->dirty * ((size_t)d->n + 1));
	d->is_dirty = calloc((size_t)d->n + 1, 1);
	d->ndirty = 0;
	if (rc == 0 && (!d->dirty || !d->is_dirty))
		rc = rt_errorf(e, RT_ENOMEM, "out of memory placing devices");
	for (int i = 0; rc == 0 && i < f->ninputs; i++)
		rc = devs_value(d, p, f, in0, f->inputs[i], dtype(ctx, &f->vals[f->inputs[i]]), buf, dir, e);
	for (int i = 0; rc == 0 && i < f->nparams; i++)
		rc = devs_value(d, p, f, in0, f->params[i], dtype(ctx, &f->vals[f->params[i]]), buf, dir, e);
	/* Releases before node i on the heaps where something is due (tgt_heap_due): those that took
	 * a buffer since (dirty), and once i reaches next_due, the least queued death over every
	 * heap (deaths are queued only by a release, so next_due follows each one), all of them:
	 * not a scan of every instance's heap at every node. */
	int next_due = INT_MAX;
	for (int i = 0; rc == 0 && i < f->nnodes; i++) {
		for (int q = 0; q < d->ndirty; q++) {
			TgtHeap *h = &d->heap[d->dirty[q]];
			d->is_dirty[d->dirty[q]] = 0;
			if (tgt_heap_due(h, i))
				tgt_heap_release(h, f, i);
			if (h->scan)
				next_due = i;
			else if (h->dq.n > 0 && h->dq.a[0].key < next_due)
				next_due = (int)h->dq.a[0].key;
		}
		d->ndirty = 0;
		if (i >= next_due) {
			next_due = INT_MAX;
			for (int h = 0; h < d->n; h++) {
				if (tgt_heap_due(&d->heap[h], i))
					tgt_heap_release(&d->heap[h], f, i);
				if (d->heap[h].scan)
					next_due = i + 1;
				else if (d->heap[h].dq.n > 0 && d->heap[h].dq.a[0].key < next_due)
					next_due = (int)d->heap[h].dq.a[0].key;
			}
		}
		for (int k = 0; rc == 0 && k < f->nodes[i].nout; k++) {
			int v = f->nodes[i].out[k];
			rc = devs_value(d, p, f, in0, v, dtype(ctx, &f->vals[v]), buf, dir, e);
		}
	}
	free(in0), free(d->dirty), free(d->is_dirty);
	d->dirty = NULL, d->is_dirty = NULL, d->ndirty = 0;
	return rc < 0 ? -1 : 0;
}

int tgt_devs_handles(const TgtDevs *d, const Flat *f, int node)
{
	Op op = f->nodes[node].n->op;
	return d->partitioned && (d->node_pl[node] < 0 || op == OP_Transfer || ir_op_is_collective(op));
}

void tgt_devs_bufs(TgtDevs *d, const Flat *f, int node, int *buf)
{
	const FlatNode *fn = &f->nodes[node];
	int pl = d->node_pl[node];
	d->nswap = 0;
	if (pl < 0 || tgt_devs_handles(d, f, node))
		return;
	for (int k = 0; k < fn->nin; k++) {
		int v = fn->in[k];
		if (v < 0 || d->val_pl[v] == pl)
			continue;
		int r = rep_find(d, v, pl);
		if (r < 0 || d->nswap >= TGT_MAX_OPERANDS)
			continue;
		d->swapv[d->nswap] = v, d->swapb[d->nswap++] = buf[v];
		buf[v] = d->rep[r].buf;
	}
}

static void unswap(TgtDevs *d, int *buf)
{
	while (d->nswap > 0) {
		d->nswap--;
		buf[d->swapv[d->nswap]] = d->swapb[d->nswap];
	}
}

/* ---- instructions ---- */
/* Appends a copy, record or wait to stream s; `why` (or NULL) becomes the instruction's
 * placement_reason attribute, which `aicc explain` shows. */
static int emit(Plan *p, int s, PlanInstrKind k, int in, int out, int link, int event, const char *node,
		const char *why, RtError *e)
{
	PlanInstr pi;
	plan_instr_init(&pi, k);
	int ins[1] = { in }, outs[1] = { out };
	if (k == PI_COPY)
		pi.in = ins, pi.nin = 1, pi.out = outs, pi.nout = 1;
	pi.link = link;
	pi.event = event;
	pi.node = (char *)node;
	Attr a = { .name = "placement_reason", .kind = ATTR_STRING, .s = why };
	if (why)
		pi.attrs = (Attrs){ 1, &a };
	return plan_add_instr(p, s, &pi, e) < 0 ? -1 : 0;
}

/* "input 'x' copied from gpu0 to gpu1, where it is read (lowering)" into buf. */
static const char *copy_why(char *buf, size_t n, const char *what, const char *v, const Plan *p, const TgtDevs *d,
			    int from, int to)
{
	tgt_fmt(buf, n, "%s '%s' copied from %s to %s, where it is read (lowering)", what, v,
		 p->devices[d->dev[from]].name, p->devices[d->dev[to]].name);
	return buf;
}

/* Inputs bound on one instance are copied to every other instance that reads them. */
static int copy_inputs(TgtDevs *d, Plan *p, const Flat *f, RtError *e)
{
	for (int i = 0; i < f->ninputs; i++) {
		int v = f->inputs[i];
		for (int r = d->rep_head[v]; r >= 0; r = d->rep[r].next) {
			char why[300];
			int link = link_of(d, p, d->val_pl[v], d->rep[r].pl, e);
			if ((link < 0 && d->val_pl[v] != d->rep[r].pl) ||
			    emit(p, d->stream[d->rep[r].pl], PI_COPY, d->prim[v], d->rep[r].buf, link, -1, f->vals[v].name,
				 copy_why(why, sizeof why, "input", f->vals[v].name, p, d, d->val_pl[v], d->rep[r].pl), e) < 0)
				return -1;
			d->rep[r].done = 1;
		}
	}
	return 0;
}

/* Waits on stream s for the producer of value v when it ran on another stream. */
static int wait_for(TgtDevs *d, Plan *p, const Flat *f, int v, int s, RtError *e)
{
	int def = v >= 0 ? f->vals[v].def : -1;
	if (def < 0 || d->node_pl[def] < 0 || d->stream[d->node_pl[def]] == s)
		return 0;
	int ev = d->rec_event[def];
	if (ev < 0)
		return rt_errorf(e, RT_EINTERNAL, "aicc: internal error: '%s' is read on another device but records no event",
				 f->vals[v].name);
	if (d->wait_seen[def] == s)
		return 0;
	d->wait_seen[def] = s;
	return emit(p, s, PI_WAIT, -1, -1, -1, ev, NULL, NULL, e);
}

/* Implicit copies: a node result read on another instance without a Transfer (user @device). */
static int copy_operands(TgtDevs *d, Plan *p, const Flat *f, int node, RtError *e)
{
	const FlatNode *fn = &f->nodes[node];
	int pl = d->node_pl[node];
	for (int k = 0; k < fn->nin; k++) {
		int v = fn->in[k], r = v >= 0 ? rep_find(d, v, pl) : -1;
		if (r < 0 || d->rep[r].done || f->vals[v].def < 0)
			continue;
		int link = link_of(d, p, d->val_pl[v], pl, e);
		char why[300];
		if (link < 0 || emit(p, d->stream[pl], PI_COPY, d->prim[v], d->rep[r].buf, link, -1, f->vals[v].name,
				     copy_why(why, sizeof why, "value", f->vals[v].name, p, d, d->val_pl[v], pl), e) < 0)
			return -1;
		d->rep[r].done = 1;
	}
	return 0;
}

static int emit_collective(TgtDevs *d, Plan *p, const Flat *f, int node, const int *buf, const PlanInstr *ann,
			   RtError *e)
{
	const FlatNode *fn = &f->nodes[node];
	int m[TGT_MAX_OPERANDS], nm, ins[TGT_MAX_OPERANDS], outs[TGT_MAX_OPERANDS];
	Ctx c = { d, p, f, e, d->inst, d->n, d->n };
	if (members(&c, node, 0, m, TGT_MAX_OPERANDS, &nm) < 0)
		return -1;
	for (int r = 0; r < nm; r++) {
		if (m[r] < 0)
			return node_err(&c, node, "collective '%s' names a device %s", f->vals[fn->out[0]].name, "no node runs on");
		ins[r] = d->prim[fn->in[r]];
		if (per_member(fn->n->op))
			outs[r] = buf[fn->out[r]];
		else {
			int rr = rep_find(d, fn->out[0], m[r]);
			outs[r] = d->val_pl[fn->out[0]] == m[r] ? d->prim[fn->out[0]] : rr >= 0 ? d->rep[rr].buf : -1;
			if (rr >= 0)   /* written there by the collective: a reader there copies nothing */
				d->rep[rr].done = 1;
		}
	}
	PlanInstr pi;
	plan_instr_init(&pi, PI_COLLECTIVE);
	Op op = fn->n->op;
	pi.coll = op == OP_AllReduce ? PC_ALLREDUCE : op == OP_AllGather ? PC_ALLGATHER :
		  op == OP_ReduceScatter ? PC_REDUCESCATTER : PC_ALLTOALL;
	pi.in = ins, pi.nin = nm, pi.out = outs, pi.nout = nm;
	pi.attrs = fn->n->attrs;
	pi.node = p->buffers[buf[fn->out[0]]].name;
	if (ann)       /* the target's cost attributes (t.*) for the collective */
		pi.tile = ann->tile, pi.ntile = ann->ntile;
	pi.link = nm > 1 ? link_of(d, p, m[0], m[1], e) : -1;
	if (nm > 1 && pi.link < 0)
		return -1;
	return plan_add_instr(p, d->stream[d->node_pl[node]], &pi, e) < 0 ? -1 : 0;
}

int tgt_devs_emit(TgtDevs *d, Plan *p, const Flat *f, int node, int *buf, PlanInstr *pi, RtError *e)
{
	const FlatNode *fn = &f->nodes[node];
	int pl = d->node_pl[node], rc = 0;
	if (!d->inputs_copied) {
		d->inputs_copied = 1;
		if (d->partitioned && copy_inputs(d, p, f, e) < 0)
			return -1;
	}
	if (pl < 0) {
		unswap(d, buf);
		return 0;
	}
	int s = d->stream[pl];
	for (int k = 0; rc == 0 && k < fn->nin; k++)
		rc = wait_for(d, p, f, fn->in[k], s, e);
	if (rc == 0 && !tgt_devs_handles(d, f, node))
		rc = copy_operands(d, p, f, node, e);
	if (rc == 0) {
		Op op = fn->n->op;
		if (!tgt_devs_handles(d, f, node))
			rc = plan_add_instr(p, s, pi, e) < 0 ? -1 : 0;
		else if (op == OP_Transfer) {
			int src = d->val_pl[fn->in[0]];
			int link = link_of(d, p, src, pl, e);
			if (link < 0 && src != pl)
				rc = -1;
			else
				rc = emit(p, s, PI_COPY, d->prim[fn->in[0]], buf[fn->out[0]], link, -1,
					  p->buffers[buf[fn->out[0]]].name,
					  rt_attr_str(&fn->n->attrs, "placement_reason", NULL), e);
		} else
			rc = emit_collective(d, p, f, node, buf, pi, e);
	}
	unswap(d, buf);
	if (rc == 0 && d->rec_event[node] == -2 && fn->nout > 0) {
		char name[300];
		tgt_fmt(name, sizeof name, "%s.ready", p->buffers[d->prim[fn->out[0]] >= 0 ? d->prim[fn->out[0]] : buf[fn->out[0]]].name);
		int ev = plan_add_event(p, name, e);
		if (ev < 0)
			return -1;
		d->rec_event[node] = ev;
		rc = emit(p, s, PI_RECORD, -1, -1, -1, ev, NULL, NULL, e);
	}
	return rc;
}

/* ---- sharded inputs and outputs ---- */

/* Adds the plan inputs (output 0) or outputs (1) of entry-graph value v when it is sharded: an
 * input read only by input-shard Splits (one `input NAME ... shard=` per Split output), an
 * output assembled by an output Concat (one per Concat input, on the device that computed it). */
int tgt_devs_io_shards(Plan *p, const Flat *f, const int *in0, int v, int output, const char *name, const int *buf,
		       RtError *e)
{
	int any = 0;
	/* an input's Splits read it first; an output's Concat is its producer */
	int first = output ? f->vals[v].def : in0[v];
	for (int i = first; i >= 0 && i < f->nnodes; i = output ? -1 : in0[f->nvals + i]) {
		const FlatNode *fn = &f->nodes[i];
		int split = !output && is_input_split(f, i) && fn->in[0] == v;
		int cat = output && fn->nout == 1 && fn->out[0] == v && is_output_concat(f, i);
		if (!split && !cat)
			continue;
		const FlatVal *whole = &f->vals[v];
		int64_t a = rt_attr_int(&fn->n->attrs, "axis", 0), off = 0;
		int axis = (int)(a < 0 ? a + whole->rank : a), n = split ? fn->nout : fn->nin;
		for (int k = 0; k < n; k++) {
			int sv = split ? fn->out[k] : fn->in[k];
			if (buf[sv] < 0)
				return rt_errorf(e, RT_EINTERNAL, "aicc: internal error: shard '%s' of '%s' has no buffer",
						 f->vals[sv].name, whole->name);
			int io = output ? plan_add_output(p, name, buf[sv], e) : plan_add_input(p, name, buf[sv], e);
			if (io < 0)
				return -1;
			plan_io_shard(output ? &p->outputs[io] : &p->inputs[io], axis, off, whole->dims[axis]);
			off += f->vals[sv].dims[axis];
		}
		any = 1;
	}
	return any;
}
