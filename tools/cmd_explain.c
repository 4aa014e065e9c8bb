/* tools/cmd_explain.c: `aicc explain PLAN [--all] [--json]`: what runs where, in which format, how
 * long it takes and why.
 *
 * It opens with a summary of where the predicted time goes: by op class (ops.def's matrix,
 * vector, move; link for copies and collectives), by device (devices with equal load grouped,
 * a pool with its chips, the busiest named), compute vs memory vs link bound, the launch and
 * fixed costs' share, and the ten largest rows.  Then the table, one row per instruction in
 * execution order with --all, else one row per group: the instructions of one node in every
 * instance of a repeated layer and on every shard (`layer#1..80/q`, 80 x8 shards; names as
 * viz_shard_key and viz_instance_of read them).  A row gives the device(s), the precision and its
 * estimated error, the fusion group and its anchor, the predicted time (the target's cost hook
 * through the timing engine, rt_simulate), what bounds it (the target's `bound` attribute, else
 * the largest roofline term, marked *) and the reasons the passes recorded (`placement_reason`,
 * `precision_reason`); a column nobody recorded anything for is left out and a missing fact is
 * left blank, never guessed.  Columns are as wide as their longest entry.  Then totals by
 * device, by operator, by bound and by layer (equal consecutive layers grouped unless --all).
 * --json writes the same as one JSON object (jansson), every instruction included, with null for
 * what was not recorded.  --emit dot|svg|png draws the plan instead (viz/).  Facts are read by
 * viz/facts.c. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/codec.h"
#include "tools/driver.h"
#include "tools/emit_viz.h"
#include "tools/plan_build.h"
#include "viz/viz.h"

typedef struct Row {
	char *name;
	const char *op, *device, *bound, *cls;
	char *precision;
	char *fusion;             /* "kind (anchor)" or "kind @ anchor", or NULL */
	char *gfusion;            /* the same for a group: the anchor without instance and shard */
	char *placement, *format; /* the recorded reasons, or NULL */
	int has_err, bound_from_target, dev;
	double est_err, time_s, start_s, flops, fixed_s;
	double band, band_median; /* its kernel class's worst and median residual (t.band); < 0: none */
	char *layer;              /* the call instance ("layer#3"), or "(top level)" */
	char *key;                /* its group: callee, name without shard markers, operator */
	char *gname;              /* the group's name before the instance range: callee base, or "" */
	char *local;              /* the name inside its instance, without shard markers */
	int64_t inst;             /* instance number (0: top level) */
	int has_util, has_waste, is_link, has_kv;
	int *members, nmembers;   /* a collective: the devices of its ranks (its inputs'), in order; else NULL */
	double util, waste;       /* the target's mxu_util and pad_waste facts, when recorded */
	double kv_sram, kv_hbm;   /* past KV-cache bytes read from on-chip SRAM and from HBM */
} Row;

/* Rows of one node over the instances of a repeated layer and its shards. */
typedef struct Group {
	int row;                  /* its first row */
	int n;                    /* instructions */
	int64_t *insts; int ninst, capinst;   /* instance numbers, sorted and unique after grouping */
	unsigned char *devs;      /* per plan device: 1 if a row runs there */
	int ndevs;
	int mixed_prec;
	double time_s, flops, fixed_s;
	char *label;              /* "layer#1..80/q" */
} Group;

/* Per layer instance: time, the target's MXU utilisation (time-weighted over the kernels that
 * record one), padding waste (FLOP-weighted) and chip-to-chip link time (copies, collectives). */
typedef struct LayerTot {
	const char *key;
	int count;
	double time_s, util_t, util_time, waste_f, waste_flops, link_s;
	int has_kv;
	double kv_sram, kv_hbm;
} LayerTot;

typedef struct Total {
	const char *key;
	int count;
	double time_s, flops;
} Total;

typedef struct ExplainOpts {
	const char *plan, *output, *emit;
	int json, all;
	PictureOpts pic;          /* --emit: --expand, --focus, --layout-time */
	int compare;              /* --compare: hybrid vs GPU-only vs LPU-only (tools/explain_compare.c) */
	const char *against;      /* --compare OLD.aip: what changed from OLD (tools/explain_diff.c) */
} ExplainOpts;

static void explain_help(void)
{
	printf("usage: aicc explain PLAN.aip [options]\n"
	       "  --all                  one row per instruction (default: the instructions of one node\n"
	       "                         over the instances of a repeated layer and its shards in one row)\n"
	       "  --json                 the same facts as one JSON object (every instruction)\n"
	       "  -o FILE                output file (default: stdout)\n"
	       "  --emit dot|svg|png     draw the plan's placement instead (see docs/explain.md)\n"
	       "  --compare              on a GPU + LPU machine: the model on both pools, the GPUs alone and\n"
	       "                         the LPUs alone, side by side (TPOT, tokens/s per user and per chip)\n"
	       "  --compare OLD.aip      what changed from OLD.aip, a plan of the same model (a re-partition\n"
	       "                         with compile --exclude-devices, say): devices left out and added,\n"
	       "                         tp x pp, the layers that moved and from where to where, and the\n"
	       "                         predicted step time before and after\n"
	       "  STEP.json --compare    a parallel training step's summary (compile --phase train --dp ...\n"
	       "                         --emit summary) as compiled, with none and with all of its\n"
	       "                         collectives' compute-unit work offloaded (step, MFU)\n");
	drv_picture_help();
}

static int parse_opts(int argc, char **argv, ExplainOpts *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 1; i < argc; i++) {
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			explain_help();
			exit(EXIT_OK);
		}
		if ((r = opt_value(argc, argv, &i, "-o", &o->output)) || (r = opt_value(argc, argv, &i, "--emit", &o->emit))) {
			if (r < 0)
				return -1;
			continue;
		}
		if (strcmp(argv[i], "--compare") == 0 && i + 1 < argc && argv[i + 1][0] != '-') {
			o->compare = 1;     /* --compare OLD.aip, unless OLD.aip turns out to be the only plan */
			o->against = argv[++i];
			continue;
		}
		if (strncmp(argv[i], "--compare=", 10) == 0) {
			o->compare = 1;
			o->against = argv[i] + 10;
			continue;
		}
		if (strcmp(argv[i], "--compare") == 0 || strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--all") == 0) {
			*(argv[i][2] == 'c' ? &o->compare : argv[i][2] == 'j' ? &o->json : &o->all) = 1;
			continue;
		}
		if ((r = drv_picture_opt(argc, argv, &i, &o->pic))) {
			if (r < 0)
				return -1;
			continue;
		}
		if (drv_operand(argv[i], &o->plan, "plan", "explain") < 0)
			return -1;
	}
	if (!o->plan && o->against && strncmp(o->against - 10, "--compare=", 10) != 0) {
		o->plan = o->against;   /* `explain --compare PLAN`: the pools comparison of PLAN */
		o->against = NULL;
	}
	if (!o->plan) {
		drv_error("no plan given (see aicc explain --help)");
		return -1;
	}
	const char *k = drv_output_kind(o->output);
	if (!o->emit && k && drv_is_picture(k))
		o->emit = k;        /* -o plan.svg: the picture */
	else if (o->emit && k && strcmp(k, o->emit)) {
		drv_output_mismatch(o->output, k, o->emit);
		return -1;
	}
	if (o->emit && !drv_is_picture(o->emit)) {
		drv_error("explain --emit draws dot, svg or png, not '%s'", o->emit);
		return -1;
	}
	return 0;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p) {
		fprintf(stderr, "aicc: error: out of memory\n");
		exit(EXIT_INTERNAL);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d) {
		fprintf(stderr, "aicc: error: out of memory\n");
		exit(EXIT_INTERNAL);
	}
	return d;
}

/* ---- a string-keyed index (open addressing; keys borrowed) ---- */
typedef struct Index {
	const char **keys;
	int *vals;
	size_t cap;
} Index;

static void index_init(Index *x, int n)
{
	x->cap = 16;
	while (x->cap < (size_t)n * 2 + 2)
		x->cap *= 2;
	x->keys = xcalloc(x->cap, sizeof *x->keys);
	x->vals = xcalloc(x->cap, sizeof *x->vals);
}

/* The slot of key: x->keys[slot] is NULL when absent. */
static size_t index_slot(const Index *x, const char *key)
{
	size_t i = viz_hash(key) & (x->cap - 1);
	while (x->keys[i] && strcmp(x->keys[i], key) != 0)
		i = (i + 1) & (x->cap - 1);
	return i;
}

static void index_free(Index *x) { free(x->keys), free(x->vals); }

/* ---- rows ---- */
/* The anchors of the plan's fusion groups, by "instance|group": the kernel recording the kind. */
typedef struct Anchors {
	Index ix;
	char **keys;
	int n;
} Anchors;

static void anchor_key(const char *name, const char *grp, char *buf, size_t n)
{
	char inst[256], callee[256];
	viz_instance_of(name, inst, callee, sizeof inst);
	snprintf(buf, n, "%s|%s", inst, grp);
}

static void anchors_build(const Plan *p, Anchors *a)
{
	int total = 0;
	for (int s = 0; s < p->nstreams; s++)
		total += p->streams[s].nins;
	index_init(&a->ix, total);
	a->keys = xcalloc((size_t)total + 1, sizeof *a->keys);
	a->n = 0;
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			char b1[64], b2[64], nb[512], key[800];
			const char *g = viz_attr(in, "fusion_group", b1, sizeof b1);
			if (!g || !viz_attr(in, "fusion", b2, sizeof b2))
				continue;
			anchor_key(viz_instr_name(p, s, i, nb, sizeof nb), g, key, sizeof key);
			size_t slot = index_slot(&a->ix, key);
			if (a->ix.keys[slot])
				continue;
			a->keys[a->n] = xstrdup(key);
			a->ix.keys[slot] = a->keys[a->n];
			a->ix.vals[slot] = s * 0x100000 + i;   /* streams and instructions < 2^20 each below */
			a->n++;
		}
}

static void anchors_free(Anchors *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->keys[i]);
	free(a->keys);
	index_free(&a->ix);
}

/* The name inside its instance without shard markers: "layer#3/q.tp3.157" -> "q". */
static void local_name(const char *name, char *buf, size_t n)
{
	char key[512];
	viz_shard_key(name, key, sizeof key);
	/* the name inside its call instance ("layer#3/q" -> "q"); a name whose slashes are its own
	 * (an ONNX path "/layer1/Gemm_output_0", no instance number before them) stays whole */
	const char *slash = strrchr(key, '/'), *hash = strchr(key, '#');
	snprintf(buf, n, "%s", slash && hash && hash < slash ? slash + 1 : key);
}

/* The fusion facts of instruction in (named name): r->fusion and the group's r->gfusion. */
static void fusion_of(const Plan *p, const Anchors *a, const PlanInstr *in, const char *name, Row *r)
{
	char b1[64], key[800], nb[512], kb[512], text[1200], loc[512];
	const char *grp = viz_attr(in, "fusion_group", b1, sizeof b1);
	if (!grp)
		return;
	anchor_key(name, grp, key, sizeof key);
	size_t slot = index_slot(&a->ix, key);
	if (!a->ix.keys[slot]) {
		r->fusion = xstrdup("group without an anchor");
		r->gfusion = xstrdup(r->fusion);
		return;
	}
	int s = a->ix.vals[slot] / 0x100000, i = a->ix.vals[slot] % 0x100000;
	const PlanInstr *o = &p->streams[s].ins[i];
	const char *kind = viz_attr(o, "fusion", kb, sizeof kb);
	const char *oname = viz_instr_name(p, s, i, nb, sizeof nb);
	if (o == in) {
		snprintf(text, sizeof text, "%s (anchor)", kind);
		r->fusion = xstrdup(text);
		r->gfusion = xstrdup(text);
		return;
	}
	snprintf(text, sizeof text, "%s @ %s", kind, oname);
	r->fusion = xstrdup(text);
	local_name(oname, loc, sizeof loc);
	snprintf(text, sizeof text, "%s @ %s", kind, loc);
	r->gfusion = xstrdup(text);
}

static char *dup_attr(const PlanInstr *in, const char *name)
{
	char buf[64];
	const char *s = viz_attr(in, name, buf, sizeof buf);
	return s ? xstrdup(s) : NULL;
}

static int has_fact(const PlanInstr *in, const char *name, double *v)
{
	char buf[64];
	const char *s = viz_attr(in, name, buf, sizeof buf);
	if (s)
		*v = strtod(s, NULL);
	return s != NULL;
}

/* One row for instruction (s, i) that ran from start for dur seconds (dur < 0: unknown). */
static void fill_row(const Plan *p, const Anchors *a, int s, int i, double start, double dur, Row *r)
{
	const PlanInstr *in = &p->streams[s].ins[i];
	char buf[512], inst[256], callee[256], loc[512], key[1200];
	memset(r, 0, sizeof *r);
	r->name = xstrdup(viz_instr_name(p, s, i, buf, sizeof buf));
	r->op = in->kind == PI_KERNEL ? plan_op_name(in->op) : in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll]
										   : plan_instr_names[in->kind];
	r->cls = viz_op_class(in);
	r->dev = p->streams[s].device;
	r->device = p->devices[r->dev].name;
	r->precision = xstrdup(viz_precision(p, in, buf, sizeof buf));
	const char *e = viz_attr(in, "est_rel_err", buf, sizeof buf);
	if (e) {
		char *end;
		r->est_err = strtod(e, &end);
		r->has_err = end != e;
	}
	fusion_of(p, a, in, r->name, r);
	r->placement = dup_attr(in, "placement_reason");
	r->format = dup_attr(in, "precision_reason");
	r->bound = viz_bound(p, s, in, &r->bound_from_target);
	r->time_s = dur;
	r->start_s = start;
	r->flops = in->flops;
	r->fixed_s = viz_fixed_s(p, s, in, dur);
	const char *bw = viz_attr(in, "band", buf, sizeof buf);
	r->band = bw && strcmp(bw, "none") ? strtod(bw, NULL) : -1;
	const char *bm = r->band >= 0 ? viz_attr(in, "band_median", buf, sizeof buf) : NULL;
	r->band_median = bm ? strtod(bm, NULL) : r->band;
	viz_instance_of(r->name, inst, callee, sizeof inst);
	r->layer = xstrdup(inst[0] ? inst : "(top level)");
	const char *hash = strrchr(inst, '#');
	r->inst = hash ? strtoll(hash + 1, NULL, 10) : 0;
	const char *st = strstr(callee, ".stage");   /* per-stage copies "layer.stage1" show as "layer" */
	snprintf(buf, sizeof buf, "%.*s", st ? (int)(st - callee) : (int)strlen(callee), callee);
	r->gname = xstrdup(buf);
	local_name(r->name, loc, sizeof loc);
	r->local = xstrdup(loc);
	snprintf(key, sizeof key, "%s|%s|%s|%s", callee, loc, r->op, in->kind == PI_COPY ? "copy" : "");
	r->key = xstrdup(key);
	r->has_util = has_fact(in, "mxu_util", &r->util);
	r->has_waste = has_fact(in, "pad_waste", &r->waste);
	r->is_link = in->kind == PI_COPY || in->kind == PI_COLLECTIVE;
	if (in->kind == PI_COLLECTIVE) {   /* it occupies every rank of its group, not only the stream it is on */
		r->members = xcalloc((size_t)in->nin + 1, sizeof *r->members);
		for (int k = 0; k < in->nin; k++) {
			if (in->in[k] < 0)
				continue;
			int d = p->spaces[p->buffers[in->in[k]].space].device, seen = 0;
			for (int j = 0; j < r->nmembers; j++)
				seen |= r->members[j] == d;
			if (!seen)
				r->members[r->nmembers++] = d;
		}
	}
	r->has_kv = has_fact(in, "kv_sram_bytes", &r->kv_sram);
	r->has_kv |= has_fact(in, "kv_hbm_bytes", &r->kv_hbm);
}

static void free_row(Row *r)
{
	free(r->name), free(r->precision), free(r->fusion), free(r->gfusion), free(r->placement), free(r->format);
	free(r->members);
	free(r->layer), free(r->key), free(r->gname), free(r->local);
}

/* Rows in execution order (the timing engine's when it ran), events left out. */
static int collect(const Plan *p, const RtTiming *t, Row **rows, int *nrows)
{
	PlanStep *order = NULL;
	int n = 0;
	RtError e = { 0 };
	if (!t && plan_linearize(p, &order, &n, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return -1;
	}
	if (t)
		n = t->nspans;
	Anchors a;
	anchors_build(p, &a);
	*rows = xcalloc((size_t)n + 1, sizeof **rows);
	*nrows = 0;
	for (int k = 0; k < n; k++) {
		int s = t ? t->spans[k].stream : order[k].stream, i = t ? t->spans[k].index : order[k].index;
		PlanInstrKind kind = p->streams[s].ins[i].kind;
		if (kind == PI_RECORD || kind == PI_WAIT)
			continue;
		fill_row(p, &a, s, i, t ? t->spans[k].start : -1, t ? t->spans[k].end - t->spans[k].start : -1,
			 &(*rows)[(*nrows)++]);
	}
	anchors_free(&a);
	rt_free(order);
	return 0;
}

/* ---- groups ---- */
static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* "layer#1..80/q", "layer#3/q", "layer#1..80 (40 of them)/q", "pos" */
static char *group_label(const Group *g, const Row *r)
{
	char buf[1200];
	if (!r->inst)
		snprintf(buf, sizeof buf, "%s", r->local);
	else if (g->ninst == 1)
		snprintf(buf, sizeof buf, "%s#%lld/%s", r->gname, (long long)g->insts[0], r->local);
	else {
		int64_t lo = g->insts[0], hi = g->insts[g->ninst - 1];
		char some[48] = "";
		if (hi - lo + 1 != g->ninst)
			snprintf(some, sizeof some, " (%d of them)", g->ninst);
		snprintf(buf, sizeof buf, "%s#%lld..%lld%s/%s", r->gname, (long long)lo, (long long)hi, some, r->local);
	}
	return xstrdup(buf);
}

/* Groups rows by key in order of first appearance; *ngroups groups. */
static Group *group_rows(const Plan *p, const Row *rows, int n, int *ngroups)
{
	Group *g = xcalloc((size_t)n + 1, sizeof *g);
	int ng = 0;
	Index ix;
	index_init(&ix, n);
	for (int i = 0; i < n; i++) {
		const Row *r = &rows[i];
		size_t slot = index_slot(&ix, r->key);
		if (!ix.keys[slot]) {
			ix.keys[slot] = r->key;
			ix.vals[slot] = ng;
			g[ng].row = i;
			g[ng].devs = xcalloc((size_t)p->ndevices + 1, 1);
			ng++;
		}
		Group *x = &g[ix.vals[slot]];
		x->n++;
		x->time_s += r->time_s > 0 ? r->time_s : 0;
		x->flops += r->flops;
		x->fixed_s += r->fixed_s;
		x->ndevs += !x->devs[r->dev];
		x->devs[r->dev] = 1;
		for (int j = 0; j < r->nmembers; j++) {   /* a collective: on each of its ranks */
			x->ndevs += !x->devs[r->members[j]];
			x->devs[r->members[j]] = 1;
		}
		x->mixed_prec |= strcmp(r->precision, rows[x->row].precision) != 0;
		if (x->ninst == x->capinst) {
			x->capinst = x->capinst ? 2 * x->capinst : 4;
			int64_t *ni = realloc(x->insts, sizeof *ni * (size_t)x->capinst);
			if (!ni) {
				fprintf(stderr, "aicc: error: out of memory\n");
				exit(EXIT_INTERNAL);
			}
			x->insts = ni;
		}
		x->insts[x->ninst++] = r->inst;
	}
	for (int k = 0; k < ng; k++) {
		Group *x = &g[k];
		qsort(x->insts, (size_t)x->ninst, sizeof *x->insts, cmp_i64);
		int u = 0;
		for (int j = 0; j < x->ninst; j++)
			if (!u || x->insts[u - 1] != x->insts[j])
				x->insts[u++] = x->insts[j];
		x->ninst = u;
		x->label = group_label(x, &rows[x->row]);
	}
	index_free(&ix);
	*ngroups = ng;
	return g;
}

static void free_groups(Group *g, int n)
{
	for (int i = 0; i < n; i++)
		free(g[i].insts), free(g[i].devs), free(g[i].label);
	free(g);
}

/* "80 x8 shards", "80", "x7 copies" */
static void group_count(const Group *g, const Row *r, char *buf, size_t n)
{
	int per = g->ninst > 0 && g->n % g->ninst == 0 ? g->n / g->ninst : 0;
	const char *what = strcmp(r->op, "copy") == 0 ? "copies" : "shards";
	if (per > 1 && g->ninst == 1 && g->insts[0] == 0)   /* the top level */
		snprintf(buf, n, "x%d %s", per, what);
	else if (per > 1)
		snprintf(buf, n, "%d x%d %s", g->ninst, per, what);
	else if (per == 1)
		snprintf(buf, n, "%d", g->ninst);
	else
		snprintf(buf, n, "%d in %d", g->n, g->ninst);
}

/* ---- totals ---- */
static void add_total(Total **v, int *n, const char *key, const Row *r)
{
	int k = 0;
	while (k < *n && strcmp((*v)[k].key, key))
		k++;
	if (k == *n) {
		Total *nv = realloc(*v, sizeof **v * (size_t)(*n + 1));
		if (!nv)
			return;
		*v = nv;
		(*v)[(*n)++] = (Total){ key, 0, 0, 0 };
	}
	(*v)[k].count++;
	(*v)[k].time_s += r->time_s > 0 ? r->time_s : 0;
	(*v)[k].flops += r->flops;
}

static int by_time(const void *a, const void *b)
{
	const Total *x = a, *y = b;
	if (x->time_s != y->time_s)
		return x->time_s < y->time_s ? 1 : -1;
	return strcmp(x->key, y->key);
}

typedef struct Totals {
	Total *dev, *op, *bound, *cls;
	int ndev, nop, nbound, ncls;
	double busy, fixed;
	LayerTot *layer;
	int nlayer;
} Totals;

static void add_layer(Totals *t, const Row *r)
{
	int k = t->nlayer - 1;   /* rows of one instance mostly follow each other */
	while (k >= 0 && strcmp(t->layer[k].key, r->layer))
		k--;
	if (k < 0) {
		LayerTot *nv = realloc(t->layer, sizeof *nv * (size_t)(t->nlayer + 1));
		if (!nv)
			return;
		t->layer = nv;
		t->layer[t->nlayer] = (LayerTot){ .key = r->layer };
		k = t->nlayer++;
	}
	LayerTot *l = &t->layer[k];
	double dt = r->time_s > 0 ? r->time_s : 0;
	l->count++;
	l->time_s += dt;
	if (r->has_util)
		l->util_t += r->util * dt, l->util_time += dt;
	if (r->has_waste && r->flops > 0)
		l->waste_f += r->waste * r->flops, l->waste_flops += r->flops;
	if (r->is_link)
		l->link_s += dt;
	if (r->has_kv)
		l->has_kv = 1, l->kv_sram += r->kv_sram, l->kv_hbm += r->kv_hbm;
}

static void totals(const Plan *p, const Row *rows, int n, Totals *t)
{
	memset(t, 0, sizeof *t);
	for (int d = 0; d < p->ndevices; d++) {   /* devices in plan order, idle ones included */
		Total *nv = realloc(t->dev, sizeof *nv * (size_t)(t->ndev + 1));
		if (!nv)
			break;
		t->dev = nv;
		t->dev[t->ndev++] = (Total){ p->devices[d].name, 0, 0, 0 };
	}
	for (int i = 0; i < n; i++) {
		if (rows[i].nmembers)   /* a collective occupies each rank of its group for its time */
			for (int j = 0; j < rows[i].nmembers; j++)
				add_total(&t->dev, &t->ndev, p->devices[rows[i].members[j]].name, &rows[i]);
		else
			add_total(&t->dev, &t->ndev, rows[i].device, &rows[i]);
		add_total(&t->op, &t->nop, rows[i].op, &rows[i]);
		add_total(&t->bound, &t->nbound, rows[i].bound, &rows[i]);
		add_total(&t->cls, &t->ncls, rows[i].cls, &rows[i]);
		add_layer(t, &rows[i]);
		t->busy += rows[i].time_s > 0 ? rows[i].time_s : 0;
		t->fixed += rows[i].fixed_s;
	}
	qsort(t->op, (size_t)t->nop, sizeof *t->op, by_time);
	qsort(t->bound, (size_t)t->nbound, sizeof *t->bound, by_time);
	qsort(t->cls, (size_t)t->ncls, sizeof *t->cls, by_time);
}

static const char *const *const families = viz_bound_families;
enum { NFAM = VIZ_NFAM };

static void family_shares(const Totals *t, double *fam)
{
	for (int k = 0; k < NFAM; k++)
		fam[k] = 0;
	for (int i = 0; i < t->nbound; i++)
		for (int k = 0; k < NFAM; k++)
			if (!strcmp(viz_bound_family(t->bound[i].key), families[k]))
				fam[k] += t->bound[i].time_s;
}

/* Runs of consecutive devices (plan order) of one kind with equal load (busy time and count to
 * 3 significant digits): [start[k], start[k+1]). */
static int device_runs(const Plan *p, const Totals *t, const double *busy, int *start)
{
	int nr = 0;
	char a[64], b[64];
	for (int d = 0; d < p->ndevices; d++) {
		if (d > 0) {
			snprintf(a, sizeof a, "%.3g %d", busy[d], t->dev[d].count);
			snprintf(b, sizeof b, "%.3g %d", busy[d - 1], t->dev[d - 1].count);
			if (!strcmp(a, b) && !strcmp(p->devices[d].kind, p->devices[d - 1].kind))
				continue;
		}
		start[nr++] = d;
	}
	start[nr] = p->ndevices;
	return nr;
}

static void run_name(const Plan *p, int lo, int hi, char *buf, size_t n)
{
	if (hi - lo == 1)
		snprintf(buf, n, "%s", p->devices[lo].name);
	else if (hi - lo == 2)
		snprintf(buf, n, "%s, %s", p->devices[lo].name, p->devices[hi - 1].name);
	else
		snprintf(buf, n, "%s..%s (%d devices)", p->devices[lo].name, p->devices[hi - 1].name, hi - lo);
}

/* The indices of the (up to) k largest of v[0..n) in decreasing order, ties by index; returns
 * how many (malloc'd into *out). */
typedef struct Ranked { double v; int i; } Ranked;

static int by_rank(const void *a, const void *b)
{
	const Ranked *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	return x->i - y->i;
}

static int top_k(const double *v, int n, int k, int **out)
{
	Ranked *r = xcalloc((size_t)n + 1, sizeof *r);
	for (int i = 0; i < n; i++)
		r[i] = (Ranked){ v[i], i };
	qsort(r, (size_t)n, sizeof *r, by_rank);
	int m = n < k ? n : k;
	*out = xcalloc((size_t)m + 1, sizeof **out);
	for (int i = 0; i < m; i++)
		(*out)[i] = r[i].i;
	free(r);
	return m;
}

/* Time of each row (all) or group. */
static double *times_of(const Row *rows, int n, const Group *g, int ng, int all)
{
	int m = all ? n : ng;
	double *v = xcalloc((size_t)m + 1, sizeof *v);
	for (int i = 0; i < m; i++)
		v[i] = all ? rows[i].time_s : g[i].time_s;
	return v;
}

static double pct(double x, double of);

/* One line per device kind (a pool: its chips): devices, instructions, busy time in all and per
 * device, the busiest and the least busy. */
static void kind_lines(FILE *f, const Plan *p, const double *busy, const Totals *t, const char *indent)
{
	char a[32], b[32], c[32], d[32];
	for (int k = 0; k < p->ndevices; k++) {
		int first = 1;
		for (int j = 0; j < k; j++)
			first &= strcmp(p->devices[j].kind, p->devices[k].kind) != 0;
		if (!first)
			continue;
		int nd = 0, cnt = 0, hi = k, lo = k;
		double sum = 0;
		for (int j = k; j < p->ndevices; j++)
			if (!strcmp(p->devices[j].kind, p->devices[k].kind)) {
				nd++, cnt += t->dev[j].count, sum += busy[j];
				hi = busy[j] > busy[hi] ? j : hi;
				lo = busy[j] < busy[lo] ? j : lo;
			}
		fprintf(f, "%s%s: %d devices, %d instructions, %s busy in all, %s per device; busiest %s %s, least %s %s\n", indent,
			p->devices[k].kind, nd, cnt, viz_time_str(sum, a, sizeof a), viz_time_str(sum / nd, b, sizeof b),
			p->devices[hi].name, viz_time_str(busy[hi], c, sizeof c), p->devices[lo].name, viz_time_str(busy[lo], d, sizeof d));
	}
}

/* ---- text ---- */
static double pct(double x, double of) { return of > 0 ? 100 * x / of : 0; }

static void print_totals(FILE *f, const char *title, const Total *v, int n, double busy)
{
	char t[32];
	int w = 24;
	for (int i = 0; i < n; i++)
		w = (int)strlen(v[i].key) > w ? (int)strlen(v[i].key) : w;
	fprintf(f, "\nby %s:\n", title);
	for (int i = 0; i < n; i++)
		fprintf(f, "  %-*s %6d  %10s  %5.1f%%  %.4g FLOP\n", w, v[i].key, v[i].count,
			viz_time_str(v[i].time_s, t, sizeof t), pct(v[i].time_s, busy), v[i].flops);
}

/* The busy time of each device: the timing engine's, else the sum of its instructions. */
static double *device_busy(const Plan *p, const RtTiming *tm, const Totals *t)
{
	double *busy = xcalloc((size_t)p->ndevices + 1, sizeof *busy);
	for (int d = 0; d < p->ndevices; d++)
		busy[d] = tm && tm->busy_s ? tm->busy_s[d] : t->dev[d].time_s;
	return busy;
}

/* Device d's instruction time outside its units (copies and collectives on the links): the
 * instructions' time less the timing engine's busy time (0 below a millionth of it: the two sums'
 * rounding); 0 without the timing engine's. */
static double device_link(const Plan *p, const RtTiming *tm, const Totals *t, int d)
{
	double link = tm && tm->busy_s && d < p->ndevices ? t->dev[d].time_s - tm->busy_s[d] : 0;
	return link > 1e-6 * t->dev[d].time_s ? link : 0;
}

/* " + 7.89 ms on links" for device d, or "" when it has no link time. */
static const char *link_str(const Plan *p, const RtTiming *tm, const Totals *t, int d, char *buf, size_t n)
{
	char a[32];
	double link = device_link(p, tm, t, d);
	buf[0] = '\0';
	if (link > 0)
		snprintf(buf, n, " + %s on links", viz_time_str(link, a, sizeof a));
	return buf;
}

/* The device with the most instruction time (its units' busy time plus its time in copies and
 * collectives, each collective on every rank of its group): the one the latency follows. */
static int busiest_device(const Plan *p, const RtTiming *tm, const Totals *t, const double *busy)
{
	int top = 0;
	for (int d = 1; d < p->ndevices; d++)
		top = busy[d] + device_link(p, tm, t, d) > busy[top] + device_link(p, tm, t, top) ? d : top;
	return top;
}

static void print_summary(FILE *f, const Plan *p, const RtTiming *tm, const Totals *t, const Group *g, int ng,
			  const Row *rows, int n, int all)
{
	char a[32], b[32], name[256];
	double lat = tm ? tm->latency_s : 0;
	int colls = 0;
	for (int i = 0; i < n && !colls; i++)
		colls = rows[i].nmembers > 1;
	fprintf(f, "\nsummary (shares of the %s of instruction time summed over %d device%s%s):\n",
		viz_time_str(t->busy, a, sizeof a), p->ndevices, p->ndevices == 1 ? "" : "s",
		colls ? ", a collective once; the devices below carry it on each of its ranks" : "");
	fprintf(f, "  op class     ");
	for (int i = 0; i < t->ncls; i++)
		fprintf(f, "%s%s %.1f%% (%s)", i ? ", " : "", t->cls[i].key, pct(t->cls[i].time_s, t->busy),
			viz_time_str(t->cls[i].time_s, a, sizeof a));
	fputc('\n', f);
	double fam[NFAM];
	family_shares(t, fam);
	fprintf(f, "  bound        ");
	for (int k = 0, first = 1; k < NFAM; k++)
		if (k < 3 || fam[k] > 0) {
			fprintf(f, "%s%s %.1f%%", first ? "" : ", ", families[k], pct(fam[k], t->busy));
			first = 0;
		}
	fputc('\n', f);
	fprintf(f, "  fixed costs  %s, %.1f%% (launch and per-instruction fixed time: the target's fixed_us less its fill_us (HBM traffic: memory time), else the "
		"device's overhead and the links' latency)\n", viz_time_str(t->fixed, a, sizeof a), pct(t->fixed, t->busy));
	/* devices: runs of equal load, busiest first named */
	double *busy = device_busy(p, tm, t);
	int *start = xcalloc((size_t)p->ndevices + 2, sizeof *start), nr = device_runs(p, t, busy, start),
	    top = busiest_device(p, tm, t, busy);
	char ln[64];
	fprintf(f, "  devices      busiest %s: %s busy%s%s", p->devices[top].name, viz_time_str(busy[top], a, sizeof a),
		link_str(p, tm, t, top, ln, sizeof ln), lat > 0 ? "" : "\n");
	if (lat > 0)
		fprintf(f, ", %.0f%% of the latency\n", pct(busy[top] + device_link(p, tm, t, top), lat));
	if (nr > 6)   /* many unequal devices (an LPU pod): per kind */
		kind_lines(f, p, busy, t, "               ");
	for (int k = 0; k < nr && nr <= 6 && p->ndevices > 1; k++) {
		int lo = start[k], hi = start[k + 1], chips = hi - lo == 1 ? viz_pool_chips(p, lo) : 1;
		run_name(p, lo, hi, name, sizeof name);
		char pool[48] = "";
		if (chips > 1)
			snprintf(pool, sizeof pool, " (pool of %d chips)", chips);
		fprintf(f, "               %s%s: %s busy%s%s, %d instruction%s%s\n", name, pool, viz_time_str(busy[lo], a, sizeof a),
			link_str(p, tm, t, lo, ln, sizeof ln), hi - lo > 1 ? " each" : "", t->dev[lo].count,
			t->dev[lo].count == 1 ? "" : "s", hi - lo > 1 ? " each" : "");
	}
	free(start), free(busy);
	/* the ten largest rows (groups unless --all) */
	double *tv = times_of(rows, n, g, ng, all);
	int *ord, m = top_k(tv, all ? n : ng, 10, &ord);
	free(tv);
	int w = 4, wc = 5;
	for (int i = 0; i < m; i++) {
		const char *nm = all ? rows[ord[i]].name : g[ord[i]].label;
		char c[64] = "1";
		if (!all)
			group_count(&g[ord[i]], &rows[g[ord[i]].row], c, sizeof c);
		w = (int)strlen(nm) > w ? (int)strlen(nm) : w;
		wc = (int)strlen(c) > wc ? (int)strlen(c) : wc;
	}
	fprintf(f, "  top %d %s:\n", m, all ? "instructions" : "rows (a row: one node over its layer's instances and shards)");
	for (int i = 0; i < m; i++) {
		const Row *r = all ? &rows[ord[i]] : &rows[g[ord[i]].row];
		double ts = all ? r->time_s : g[ord[i]].time_s;
		char c[64] = "1";
		if (!all)
			group_count(&g[ord[i]], r, c, sizeof c);
		if (all)
			fprintf(f, "    %5.1f%%  %10s  %-*s  %s on %s\n", pct(ts, t->busy), viz_time_str(ts, b, sizeof b), w, r->name, r->op,
				r->device);
		else
			fprintf(f, "    %5.1f%%  %10s  %-*s  %-*s  %s\n", pct(ts, t->busy), viz_time_str(ts, b, sizeof b), w,
				g[ord[i]].label, wc, c, r->op);
	}
	free(ord);
}

/* The table's cells of one row (group g, or the row itself when g is NULL). */
typedef struct Cells {
	char node[1200], count[64], device[256], prec[64], err[32], fused[1200], each[32], total[32], share[16], bound[40];
	char band[32];
	char why[4096];
} Cells;

static void cells(const Plan *p, const Row *r, const Group *g, double busy, Cells *c)
{
	snprintf(c->node, sizeof c->node, "%s", g ? g->label : r->name);
	if (g) {
		group_count(g, r, c->count, sizeof c->count);
		const char **names = xcalloc((size_t)p->ndevices + 1, sizeof *names);
		for (int d = 0; d < p->ndevices; d++)
			names[d] = p->devices[d].name;
		viz_range_str(names, p->ndevices, g->devs, c->device, sizeof c->device);
		free(names);
	} else
		snprintf(c->device, sizeof c->device, "%s", r->device);
	snprintf(c->prec, sizeof c->prec, "%s", g && g->mixed_prec ? "mixed" : r->precision);
	if (r->has_err)
		snprintf(c->err, sizeof c->err, "%.3g", r->est_err);
	else
		c->err[0] = 0;
	snprintf(c->fused, sizeof c->fused, "%s", (g ? r->gfusion : r->fusion) ? (g ? r->gfusion : r->fusion) : "-");
	double ts = g ? g->time_s : r->time_s;
	viz_time_str(g ? (g->n ? ts / g->n : 0) : ts, c->each, sizeof c->each);
	viz_time_str(ts, c->total, sizeof c->total);
	snprintf(c->share, sizeof c->share, "%.1f%%", pct(ts > 0 ? ts : 0, busy));
	snprintf(c->bound, sizeof c->bound, "%s%s", r->bound, r->bound_from_target || !strcmp(r->bound, "link") ? "" : "*");
	if (r->band >= 0)
		snprintf(c->band, sizeof c->band, "+-%.0f%%/%.0f%%", 100 * r->band_median, 100 * r->band);
	else
		c->band[0] = 0;
	size_t o = 0;
	c->why[0] = 0;
	if (r->placement)
		o += (size_t)snprintf(c->why, sizeof c->why, "placement %s", r->placement);
	if (r->format && o < sizeof c->why)
		snprintf(c->why + o, sizeof c->why - o, "%sformat %s", o ? "; " : "", r->format);
}

static void print_table(FILE *f, const Plan *p, const Row *rows, int n, const Group *g, int ng, const Totals *t)
{
	int m = g ? ng : n;
	Cells *c = xcalloc(1, sizeof *c);
	int any_err = 0, any_fused = 0, any_why = 0, any_band = 0, derived = 0;
	int wn = 4, wo = 2, wc = 5, wd = g ? 7 : 6, wp = 9, we = 10, wf = 5, wt = g ? 5 : 4, wb = 5, wband = 4;
	for (int i = 0; i < m; i++) {   /* pass 1: which columns, how wide */
		const Row *r = g ? &rows[g[i].row] : &rows[i];
		cells(p, r, g ? &g[i] : NULL, t->busy, c);
		any_err |= r->has_err;
		any_fused |= r->fusion != NULL;
		any_why |= c->why[0] != 0;
		any_band |= c->band[0] != 0;
		derived |= !r->bound_from_target && strcmp(r->bound, "link");
#define W(w, s) w = (int)strlen(s) > w ? (int)strlen(s) : w
		W(wn, c->node);
		W(wo, r->op);
		W(wc, c->count);
		W(wd, c->device);
		W(wp, c->prec);
		W(we, c->err);
		W(wf, c->fused);
		W(wt, c->each);
		W(wt, c->total);
		W(wb, c->bound);
		W(wband, c->band);
#undef W
	}
	if (g)
		fprintf(f, "\n%d row%s for %d instruction%s (one node over the instances of its layer and its shards; "
			"--all lists every instruction):\n", ng, ng == 1 ? "" : "s", n, n == 1 ? "" : "s");
	else
		fprintf(f, "\n%d instruction%s in execution order:\n", n, n == 1 ? "" : "s");
	fprintf(f, "%-*s  %-*s  ", wn, "node", wo, "op");
	if (g)
		fprintf(f, "%-*s  ", wc, "count");
	fprintf(f, "%-*s  %-*s  ", wd, g ? "devices" : "device", wp, "precision");
	if (any_err)
		fprintf(f, "%-*s  ", we, "est. error");
	if (any_fused)
		fprintf(f, "%-*s  ", wf, "fused");
	if (g)
		fprintf(f, "%*s  %*s  %6s  ", wt, "each", wt, "total", "share");
	else
		fprintf(f, "%*s  ", wt, "time");
	if (any_band)
		fprintf(f, "%-*s  ", wb, "bound");
	fprintf(f, "%-*s%s\n", any_why ? (any_band ? wband : wb) : 0, any_band ? "band" : "bound",
		any_why ? "  why (placement; format)" : "");
	for (int i = 0; i < m; i++) {   /* pass 2: the rows */
		const Row *r = g ? &rows[g[i].row] : &rows[i];
		cells(p, r, g ? &g[i] : NULL, t->busy, c);
		fprintf(f, "%-*s  %-*s  ", wn, c->node, wo, r->op);
		if (g)
			fprintf(f, "%-*s  ", wc, c->count);
		fprintf(f, "%-*s  %-*s  ", wd, c->device, wp, c->prec);
		if (any_err)
			fprintf(f, "%-*s  ", we, c->err);
		if (any_fused)
			fprintf(f, "%-*s  ", wf, c->fused);
		if (g)
			fprintf(f, "%*s  %*s  %6s  ", wt, c->each, wt, c->total, c->share);
		else
			fprintf(f, "%*s  ", wt, c->total);
		const char *last = any_band ? c->band : c->bound;
		if (any_band)
			fprintf(f, "%-*s  ", wb, c->bound);
		if (c->why[0])
			fprintf(f, "%-*s  %s\n", any_band ? wband : wb, last, c->why);
		else
			fprintf(f, "%s\n", last);
	}
	if (any_band)
		fprintf(f, "band: +-typical/worst error of the row's kernel class (median and worst residual of make validate's "
			"published cases); blank: no case covers it\n");
	if (derived)
		fprintf(f, "* bound: the largest roofline term of the plan's numbers (the target records none)\n");
	free(c);
}

/* The by-layer line of l (without its key), in buf. */
static void layer_facts(const LayerTot *l, char *buf, size_t n, int count_each)
{
	char a[32], b[32], u[32] = "-", w[32] = "-", kv[96] = "";
	if (l->util_time > 0)
		snprintf(u, sizeof u, "%.4f", l->util_t / l->util_time);
	if (l->waste_flops > 0)
		snprintf(w, sizeof w, "%.4f", l->waste_f / l->waste_flops);
	if (l->has_kv) {
		char c1[32], c2[32];
		snprintf(kv, sizeof kv, "  kv_cache sram %s hbm %s", viz_bytes_str(l->kv_sram, c1, sizeof c1),
			 viz_bytes_str(l->kv_hbm, c2, sizeof c2));
	}
	snprintf(buf, n, "%6d  %10s%s  mxu_util %-7s pad_waste %-7s link %s%s", l->count, viz_time_str(l->time_s, a, sizeof a),
		 count_each ? " each" : "", u, w, viz_time_str(l->link_s, b, sizeof b), kv);
}

/* The callee part of a layer key ("layer" of "layer#3"), its length; 0 for the top level. */
static size_t callee_len(const char *key)
{
	const char *h = strrchr(key, '#');
	return h ? (size_t)(h - key) : 0;
}

/* "a" or "a-b" for the range lo..hi formatted by fmt. */
static void range_str(double lo, double hi, int time, char *buf, size_t n)
{
	char a[32], b[32];
	if (time) {
		viz_time_str(lo, a, sizeof a);
		viz_time_str(hi, b, sizeof b);
	} else {
		snprintf(a, sizeof a, "%.4g", lo);
		snprintf(b, sizeof b, "%.4g", hi);
	}
	if (!strcmp(a, b))
		snprintf(buf, n, "%s", a);
	else
		snprintf(buf, n, "%s-%s", a, b);
}

/* Many unequal layers: one line per run of instances of one callee, with the ranges. */
static void print_layer_ranges(FILE *f, const Totals *t)
{
	for (int i = 0; i < t->nlayer;) {
		size_t cl = callee_len(t->layer[i].key);
		int j = i + 1;
		while (cl && j < t->nlayer && callee_len(t->layer[j].key) == cl && !strncmp(t->layer[i].key, t->layer[j].key, cl))
			j++;
		double v[5][2];   /* count, time, util, waste, link: min, max */
		for (int k = 0; k < 5; k++)
			v[k][0] = 1e300, v[k][1] = -1e300;
		int has_u = 0, has_w = 0;
		for (int k = i; k < j; k++) {
			const LayerTot *l = &t->layer[k];
			double x[5] = { l->count, l->time_s, l->util_time > 0 ? l->util_t / l->util_time : 0,
					l->waste_flops > 0 ? l->waste_f / l->waste_flops : 0, l->link_s };
			has_u |= l->util_time > 0, has_w |= l->waste_flops > 0;
			for (int q = 0; q < 5; q++)
				v[q][0] = x[q] < v[q][0] ? x[q] : v[q][0], v[q][1] = x[q] > v[q][1] ? x[q] : v[q][1];
		}
		char key[600], c[64], tm[64], u[64] = "-", w[64] = "-", lk[64];
		if (j - i > 1)
			snprintf(key, sizeof key, "%s..%lld", t->layer[i].key, atoll(strrchr(t->layer[j - 1].key, '#') + 1));
		else
			snprintf(key, sizeof key, "%s", t->layer[i].key);
		range_str(v[0][0], v[0][1], 0, c, sizeof c);
		range_str(v[1][0], v[1][1], 1, tm, sizeof tm);
		if (has_u)
			range_str(v[2][0], v[2][1], 0, u, sizeof u);
		if (has_w)
			range_str(v[3][0], v[3][1], 0, w, sizeof w);
		range_str(v[4][0], v[4][1], 1, lk, sizeof lk);
		fprintf(f, "  %-24s %6s  %10s%s  mxu_util %-7s pad_waste %-7s link %s\n", key, c, tm, j - i > 1 ? " each" : "", u, w, lk);
		i = j;
	}
}

static void print_layers(FILE *f, const Totals *t, int all)
{
	int facts = 0;
	for (int i = 0; i < t->nlayer; i++)
		facts |= t->layer[i].util_time > 0 || t->layer[i].waste_flops > 0 || t->layer[i].link_s > 0;
	if (t->nlayer < 2 && !facts)
		return;
	/* equal consecutive layers in one line; when that still leaves many, ranges per layer graph */
	int nlines = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			int ranges = !all && nlines > 16;
			fprintf(f, "\nby layer (mxu_util: time-weighted over matrix kernels; pad_waste: FLOP-weighted; link: chip-to-chip copies and collectives;"
				" kv_cache: past KV bytes read from on-chip SRAM and from HBM%s):\n",
				all ? "" : ranges ? "; the range over each layer graph's instances, --all lists each" : "; equal consecutive layers in one line");
			if (ranges) {
				print_layer_ranges(f, t);
				return;
			}
		}
		for (int i = 0; i < t->nlayer;) {
			char line[512], next[512], key[600];
			layer_facts(&t->layer[i], line, sizeof line, 0);
			int j = i + 1;
			const char *h1 = strrchr(t->layer[i].key, '#');
			while (!all && h1 && j < t->nlayer) {   /* layer#1..5: same callee, consecutive numbers, same facts */
				const char *h2 = strrchr(t->layer[j].key, '#');
				layer_facts(&t->layer[j], next, sizeof next, 0);
				if (!h2 || h2 - t->layer[j].key != h1 - t->layer[i].key ||
				    strncmp(t->layer[i].key, t->layer[j].key, (size_t)(h1 - t->layer[i].key)) ||
				    atoll(h2 + 1) != atoll(h1 + 1) + (j - i) || strcmp(line, next))
					break;
				j++;
			}
			nlines++;
			if (pass == 1) {
				if (j - i > 1) {
					snprintf(key, sizeof key, "%s..%lld", t->layer[i].key, atoll(strrchr(t->layer[j - 1].key, '#') + 1));
					layer_facts(&t->layer[i], line, sizeof line, 1);
				} else
					snprintf(key, sizeof key, "%s", t->layer[i].key);
				fprintf(f, "  %-24s %s\n", key, line);
			}
			i = j;
		}
	}
}

/* "by device" with every device on a line: its instructions' time, split into the time its
 * units compute (the summary's "busy", the timing engine's) and the rest, its copies and
 * collectives on the links; the two sections gave 43 and 35.1 ms for one gpu0 without saying
 * why (newcomer finding 4). */
static void print_each_device(FILE *f, const Plan *p, const RtTiming *tm, const Totals *t)
{
	char a[32], b[32], c[32];
	int w = 24;
	for (int i = 0; i < t->ndev; i++)
		w = (int)strlen(t->dev[i].key) > w ? (int)strlen(t->dev[i].key) : w;
	fprintf(f, "\nby device%s:\n", tm && tm->busy_s ? " (instruction time = busy computing, as in the summary, + "
		"on links: copies and collectives)" : "");
	for (int i = 0; i < t->ndev; i++) {     /* t->dev[i] is plan device i (totals) */
		fprintf(f, "  %-*s %6d  %10s  %5.1f%%", w, t->dev[i].key, t->dev[i].count,
			viz_time_str(t->dev[i].time_s, a, sizeof a), pct(t->dev[i].time_s, t->busy));
		if (tm && tm->busy_s && i < p->ndevices)
			fprintf(f, "  = %s busy + %s on links", viz_time_str(tm->busy_s[i], b, sizeof b),
				viz_time_str(device_link(p, tm, t, i), c, sizeof c));
		fprintf(f, "  %.4g FLOP\n", t->dev[i].flops);
	}
}

static void print_devices(FILE *f, const Plan *p, const RtTiming *tm, const Totals *t, int all)
{
	if (all || p->ndevices <= 16) {
		print_each_device(f, p, tm, t);
		return;
	}
	double *busy = device_busy(p, tm, t);
	int *start = xcalloc((size_t)p->ndevices + 2, sizeof *start), nr = device_runs(p, t, busy, start);
	char name[256], a[32];
	if (nr > 16) {   /* unequal: per kind and the ten busiest */
		fprintf(f, "\nby device (per kind, then the ten busiest; --all lists each):\n");
		kind_lines(f, p, busy, t, "  ");
		int *ord, m = top_k(busy, p->ndevices, 10, &ord);
		for (int i = 0; i < m; i++)
			fprintf(f, "  %-24s %6d  %10s busy  %.4g FLOP\n", p->devices[ord[i]].name, t->dev[ord[i]].count,
				viz_time_str(busy[ord[i]], a, sizeof a), t->dev[ord[i]].flops);
		free(ord), free(start), free(busy);
		return;
	}
	fprintf(f, "\nby device (devices of equal load in one line; --all lists each):\n");
	for (int k = 0; k < nr; k++) {
		int lo = start[k], hi = start[k + 1];
		run_name(p, lo, hi, name, sizeof name);
		fprintf(f, "  %-24s %6d  %10s%s  %5.1f%%  %.4g FLOP%s\n", name, t->dev[lo].count, viz_time_str(t->dev[lo].time_s, a, sizeof a),
			hi - lo > 1 ? " each" : "", pct(t->dev[lo].time_s, t->busy), t->dev[lo].flops, hi - lo > 1 ? " each" : "");
	}
	free(start), free(busy);
}

/* ---- compressed all-reduces (compress=, compile --compress-collectives; docs/resilience.md) ---- */
typedef struct CompRow {
	char codec[64];
	int ranks, count;
	double raw, wire, codec_s, link_saved_s;   /* link bytes per rank: the ring's 2(p-1)/p of the payload */
	double worst, rms, allowance;
} CompRow;

/* The plan's compressed all-reduces, one row per (codec, members); *n rows (free the result). */
static CompRow *compressed_rows(const Plan *p, int *n)
{
	CompRow *r = NULL;
	*n = 0;
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			RtCodec c;
			RtError e = { 0 };
			char buf[64];
			const char *spec = viz_attr(in, "compress", buf, sizeof buf);
			if (in->kind != PI_COLLECTIVE || !spec || rt_instr_codec(in, &c, &e) <= 0)
				continue;
			RtCollWire w;
			rt_collective_wire(p, in, &w);
			int k = 0;
			while (k < *n && !(r[k].ranks == in->nin && !strcmp(r[k].codec, spec)))
				k++;
			if (k == *n) {
				r = realloc(r, (size_t)(*n + 1) * sizeof *r);
				if (!r) {
					fprintf(stderr, "aicc: error: out of memory\n");
					exit(EXIT_INTERNAL);
				}
				memset(&r[k], 0, sizeof r[k]);
				snprintf(r[k].codec, sizeof r[k].codec, "%s", spec);
				r[k].ranks = in->nin;
				rt_codec_error(&c, in->nin, &r[k].worst, &r[k].rms);
				r[k].allowance = (in->nin + 1.0) / ((1 << c.bits) - 1.0);   /* runtime/check.c */
				(*n)++;
			}
			double share = in->nin > 1 ? 2.0 * (in->nin - 1) / in->nin : 0;
			r[k].count++;
			r[k].raw += share * w.raw;
			r[k].wire += share * w.wire;
			r[k].codec_s += w.codec_s;
			if (rt_collective_bw(p, in) > 0)
				r[k].link_saved_s += share * (w.raw - w.wire) / rt_collective_bw(p, in);
		}
	return r;
}

static void print_compressed(FILE *f, const Plan *p)
{
	int n;
	CompRow *r = compressed_rows(p, &n);
	for (int k = 0; k < n; k++) {
		char a[32], b[32], c[32], d[32], e[32];
		fprintf(f, "  compressed   %d all-reduce%s over %d devices as %s: %s on each member's links instead of %s "
			"(%.2fx fewer, %s saved: %s of link time); encode/decode %s; error per element at most %.3g, rms %.3g "
			"of its block's range (p + 1 = %d codings); run --check allows (p+1)/(2^B-1) = %.3g per all-reduce\n",
			r[k].count, r[k].count == 1 ? "" : "s", r[k].ranks, r[k].codec, viz_bytes_str(r[k].wire, a, sizeof a),
			viz_bytes_str(r[k].raw, b, sizeof b), r[k].wire > 0 ? r[k].raw / r[k].wire : 0,
			viz_bytes_str(r[k].raw - r[k].wire, c, sizeof c), viz_time_str(r[k].link_saved_s, d, sizeof d),
			viz_time_str(r[k].codec_s, e, sizeof e), r[k].worst, r[k].rms, r[k].ranks + 1, r[k].allowance);
	}
	free(r);
}

static json_t *json_compressed(const Plan *p)
{
	int n;
	CompRow *r = compressed_rows(p, &n);
	json_t *a = json_array();
	for (int k = 0; k < n; k++)
		json_array_append_new(a, json_pack("{s:s, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "codec", r[k].codec,
						   "ranks", r[k].ranks, "count", r[k].count, "link_bytes_raw", r[k].raw,
						   "link_bytes_wire", r[k].wire, "link_s_saved", r[k].link_saved_s, "codec_s",
						   r[k].codec_s, "error_worst", r[k].worst, "error_rms", r[k].rms,
						   "check_allowance", r[k].allowance));
	free(r);
	return a;
}

static void print_text(FILE *f, const Plan *p, const RtTiming *tm, const Row *rows, int n, const Group *g, int ng,
		       const Totals *t, int all)
{
	char a[32];
	fprintf(f, "plan %s: target %s, machine %s, %d instruction%s, predicted latency %s\n",
		p->source.model ? p->source.model : "(no source)", p->target, p->machine, n, n == 1 ? "" : "s",
		tm ? viz_time_str(tm->latency_s, a, sizeof a) : "not predicted (no cost model)");
	RtBand band;
	if (tm && rt_band(p, tm, &band) == 0) {
		if (band.covered_s > 0)
			fprintf(f, "error band +-%.0f%% typical, +-%.0f%% worst (the kernel classes' residuals in make validate, "
				"time-weighted; %.0f%% of the time has no published case)\n", 100 * band.rel_median, 100 * band.rel,
				pct(band.uncovered_s, band.covered_s + band.uncovered_s));
		else
			fprintf(f, "error band unknown: no published case covers any of its kernel classes\n");
	}
	print_summary(f, p, tm, t, g, ng, rows, n, all);
	print_compressed(f, p);
	print_table(f, p, rows, n, all ? NULL : g, ng, t);
	print_devices(f, p, tm, t, all);
	print_totals(f, "operator", t->op, t->nop, t->busy);
	print_totals(f, "bound", t->bound, t->nbound, t->busy);
	print_layers(f, t, all);
}

/* ---- JSON ---- */
static json_t *jstr_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *json_totals(const Total *v, int n, double busy)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "key", json_string(v[i].key));
		json_object_set_new(o, "count", json_integer(v[i].count));
		json_object_set_new(o, "time_s", json_real(v[i].time_s));
		json_object_set_new(o, "share", json_real(busy > 0 ? v[i].time_s / busy : 0));
		json_object_set_new(o, "flops", json_real(v[i].flops));
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *json_row(const Row *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "node", json_string(r->name));
	json_object_set_new(o, "op", json_string(r->op));
	json_object_set_new(o, "device", json_string(r->device));
	json_object_set_new(o, "precision", json_string(r->precision));
	json_object_set_new(o, "est_rel_err", r->has_err ? json_real(r->est_err) : json_null());
	json_object_set_new(o, "fused", jstr_or_null(r->fusion));
	json_object_set_new(o, "start_s", r->start_s >= 0 ? json_real(r->start_s) : json_null());
	json_object_set_new(o, "time_s", r->time_s >= 0 ? json_real(r->time_s) : json_null());
	json_object_set_new(o, "flops", json_real(r->flops));
	json_object_set_new(o, "bound", json_string(r->bound));
	json_object_set_new(o, "bound_source", json_string(r->bound_from_target ? "target" : "roofline"));
	json_object_set_new(o, "placement_reason", jstr_or_null(r->placement));
	json_object_set_new(o, "precision_reason", jstr_or_null(r->format));
	json_object_set_new(o, "op_class", json_string(r->cls));
	json_object_set_new(o, "fixed_s", json_real(r->fixed_s));
	return o;
}

static json_t *json_summary(const Plan *p, const RtTiming *tm, const Totals *t, const Group *g, int ng, const Row *rows)
{
	json_t *s = json_object(), *fam = json_object(), *devs = json_array(), *top = json_array();
	json_object_set_new(s, "busy_s", json_real(t->busy));
	json_object_set_new(s, "by_op_class", json_totals(t->cls, t->ncls, t->busy));
	double sh[NFAM];
	family_shares(t, sh);
	for (int k = 0; k < NFAM; k++)
		json_object_set_new(fam, families[k], json_real(t->busy > 0 ? sh[k] / t->busy : 0));
	json_object_set_new(s, "bound_share", fam);
	json_object_set_new(s, "fixed_s", json_real(t->fixed));
	json_object_set_new(s, "fixed_share", json_real(t->busy > 0 ? t->fixed / t->busy : 0));
	double *busy = device_busy(p, tm, t);
	int *start = xcalloc((size_t)p->ndevices + 2, sizeof *start), nr = device_runs(p, t, busy, start),
	    busiest = busiest_device(p, tm, t, busy);
	json_object_set_new(s, "busiest_device", p->ndevices ? json_string(p->devices[busiest].name) : json_null());
	for (int k = 0; k < nr; k++) {
		json_t *o = json_object(), *names = json_array();
		for (int d = start[k]; d < start[k + 1]; d++)
			json_array_append_new(names, json_string(p->devices[d].name));
		json_object_set_new(o, "devices", names);
		json_object_set_new(o, "chips", json_integer(start[k + 1] - start[k] == 1 ? viz_pool_chips(p, start[k]) : 1));
		json_object_set_new(o, "busy_s_each", json_real(busy[start[k]]));
		json_object_set_new(o, "count_each", json_integer(t->dev[start[k]].count));
		json_array_append_new(devs, o);
	}
	json_object_set_new(s, "device_groups", devs);
	free(start), free(busy);
	double *tv = times_of(rows, 0, g, ng, 0);
	int *ord, m = top_k(tv, ng, 10, &ord);
	free(tv);
	for (int i = 0; i < m; i++)
		json_array_append_new(top, json_string(g[ord[i]].label));
	free(ord);
	json_object_set_new(s, "top_rows", top);
	return s;
}

static json_t *json_groups(const Plan *p, const Row *rows, const Group *g, int ng, double busy)
{
	json_t *a = json_array();
	for (int i = 0; i < ng; i++) {
		const Row *r = &rows[g[i].row];
		Cells c;
		cells(p, r, &g[i], busy, &c);
		json_t *o = json_object();
		json_object_set_new(o, "node", json_string(g[i].label));
		json_object_set_new(o, "op", json_string(r->op));
		json_object_set_new(o, "instructions", json_integer(g[i].n));
		json_object_set_new(o, "instances", json_integer(g[i].ninst));
		json_object_set_new(o, "devices", json_string(c.device));
		json_object_set_new(o, "precision", json_string(c.prec));
		json_object_set_new(o, "fused", jstr_or_null(r->gfusion));
		json_object_set_new(o, "time_s", json_real(g[i].time_s));
		json_object_set_new(o, "share", json_real(busy > 0 ? g[i].time_s / busy : 0));
		json_object_set_new(o, "bound", json_string(r->bound));
		json_array_append_new(a, o);
	}
	return a;
}

static int print_json(FILE *f, const Plan *p, const RtTiming *tm, const Row *rows, int n, const Group *g, int ng,
		      const Totals *t)
{
	json_t *o = json_object(), *ins = json_array(), *tot = json_object();
	json_object_set_new(o, "model", jstr_or_null(p->source.model));
	json_object_set_new(o, "target", json_string(p->target));
	json_object_set_new(o, "machine", json_string(p->machine));
	json_object_set_new(o, "latency_s", tm ? json_real(tm->latency_s) : json_null());
	json_object_set_new(o, "summary", json_summary(p, tm, t, g, ng, rows));
	json_object_set_new(o, "compressed_collectives", json_compressed(p));
	for (int i = 0; i < n; i++)
		json_array_append_new(ins, json_row(&rows[i]));
	json_object_set_new(o, "instructions", ins);
	json_object_set_new(o, "groups", json_groups(p, rows, g, ng, t->busy));
	json_object_set_new(tot, "by_device", json_totals(t->dev, t->ndev, t->busy));
	json_object_set_new(tot, "by_op", json_totals(t->op, t->nop, t->busy));
	json_object_set_new(tot, "by_bound", json_totals(t->bound, t->nbound, t->busy));
	json_t *layers = json_array();
	for (int i = 0; i < t->nlayer; i++) {
		const LayerTot *l = &t->layer[i];
		json_t *lo = json_object();
		json_object_set_new(lo, "key", json_string(l->key));
		json_object_set_new(lo, "count", json_integer(l->count));
		json_object_set_new(lo, "time_s", json_real(l->time_s));
		json_object_set_new(lo, "mxu_util", l->util_time > 0 ? json_real(l->util_t / l->util_time) : json_null());
		json_object_set_new(lo, "pad_waste", l->waste_flops > 0 ? json_real(l->waste_f / l->waste_flops) : json_null());
		json_object_set_new(lo, "link_s", json_real(l->link_s));
		json_object_set_new(lo, "kv_sram_bytes", l->has_kv ? json_real(l->kv_sram) : json_null());
		json_object_set_new(lo, "kv_hbm_bytes", l->has_kv ? json_real(l->kv_hbm) : json_null());
		json_array_append_new(layers, lo);
	}
	json_object_set_new(tot, "by_layer", layers);
	json_object_set_new(o, "totals", tot);
	int rc = json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	fputc('\n', f);
	json_decref(o);
	return rc;
}

static int explain(const ExplainOpts *o, const Plan *p, FILE *f)
{
	RtTiming tm;
	RtError e = { 0 };
	int timed = rt_simulate(p, &tm, &e) == 0;
	if (!timed)
		fprintf(stderr, "aicc: warning: no predicted times: %s\n", e.msg);
	Row *rows;
	int n, rc = collect(p, timed ? &tm : NULL, &rows, &n);
	if (rc == 0) {
		Totals t;
		int ng;
		totals(p, rows, n, &t);
		Group *g = group_rows(p, rows, n, &ng);
		if (o->json)
			rc = print_json(f, p, timed ? &tm : NULL, rows, n, g, ng, &t);
		else
			print_text(f, p, timed ? &tm : NULL, rows, n, g, ng, &t, o->all);
		free_groups(g, ng);
		free(t.dev), free(t.op), free(t.bound), free(t.cls), free(t.layer);
		for (int i = 0; i < n; i++)
			free_row(&rows[i]);
		free(rows);
	}
	if (timed)
		rt_timing_free(&tm);
	return rc;
}

int cmd_explain(int argc, char **argv)
{
	ExplainOpts o;
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USER;
	RtError e = { 0 };
	size_t pl = strlen(o.plan);
	if (pl > 5 && !strcmp(o.plan + pl - 5, ".json")) {   /* a training step's summary */
		if (!o.compare || o.against || o.emit) {
			drv_error("%s: a training step's summary is explained with --compare alone (with or without its "
				  "collective offload)", o.plan);
			return EXIT_USER;
		}
		OutFile f;
		if (out_open(&f, o.output) < 0)
			return EXIT_USER;
		if (drv_explain_train(o.plan, o.json, f.f) < 0) {
			out_abort(&f);
			return EXIT_USER;
		}
		return out_commit(&f) < 0 ? EXIT_USER : EXIT_OK;
	}
	Plan *p = plan_read(o.plan, &e);
	if (!p) {
		fprintf(stderr, "%s\n", e.msg);
		return EXIT_USER;
	}
	Plan *old = NULL;
	if (o.against && !(old = plan_read(o.against, &e))) {
		fprintf(stderr, "%s\n", e.msg);
		plan_free(p);
		return EXIT_USER;
	}
	drv_register_runtime_hooks();
	OutFile f;
	int rc = EXIT_USER;
	if (out_open(&f, o.output) == 0) {
		int r = o.emit ? drv_emit_picture(NULL, p, o.emit, &o.pic, f.f)
			: old ? drv_explain_diff(p, old, o.plan, o.against, o.json, f.f)
			: o.compare ? drv_explain_compare(p, o.json, f.f) : explain(&o, p, f.f);
		if (r < 0)
			out_abort(&f);
		else
			rc = out_commit(&f) < 0 ? EXIT_USER : EXIT_OK;
	}
	plan_free(p);
	plan_free(old);
	return rc;
}
