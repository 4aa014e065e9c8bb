/* tools/cmd_explain.c: `aicc explain PLAN [--json]`: what runs where, in which format, how long it
 * takes and why.  For every instruction of the plan, in its execution order: the device, the
 * precision and its estimated error, the fusion group it belongs to (and the group's anchor),
 * the predicted time (the target's cost hook through the timing engine, rt_simulate), what bounds
 * that time (the target's `bound` attribute, else the largest roofline term, marked *), and the
 * reasons the passes recorded for its placement and its format (`placement_reason`,
 * `precision_reason`); a fact nobody recorded is printed as "not recorded", never guessed.  Then
 * totals by device, by operator and by bound.  --json writes the same as one JSON object
 * (jansson), with null for what was not recorded.  --emit dot|svg|png draws the plan instead
 * (viz/), for plans written by any target.  Facts are read by viz/facts.c. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tools/driver.h"
#include "tools/emit_viz.h"
#include "tools/plan_build.h"
#include "viz/viz.h"

typedef struct Row {
	char *name;
	const char *op, *device, *bound;
	char *precision;
	char *fusion;             /* "kind (anchor)" or "kind @ anchor", or NULL */
	char *placement, *format; /* the recorded reasons, or NULL */
	int has_err, bound_from_target, dev;
	double est_err, time_s, start_s, flops;
	char *layer;              /* the call instance ("layer#3"), or "(top level)" */
	int has_util, has_waste, is_link, has_kv;
	double util, waste;       /* the target's mxu_util and pad_waste facts, when recorded */
	double kv_sram, kv_hbm;   /* past KV-cache bytes read from on-chip SRAM and from HBM */
} Row;

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
	int json;
	PictureOpts pic;          /* --emit: --expand, --focus, --layout-time */
	int compare;              /* --compare: hybrid vs GPU-only vs LPU-only (tools/explain_compare.c) */
} ExplainOpts;

static void explain_help(void)
{
	printf("usage: aicc explain PLAN.aip [options]\n"
	       "  --json                 the same facts as one JSON object\n"
	       "  -o FILE                output file (default: stdout)\n"
	       "  --emit dot|svg|png     draw the plan's placement instead (see docs/explain.md)\n"
	       "  --compare              on a GPU + LPU machine: the model on both pools, the GPUs alone and\n"
	       "                         the LPUs alone, side by side (TPOT, tokens/s per user and per chip)\n");
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
		if (strcmp(argv[i], "--compare") == 0) {
			o->compare = 1;
			continue;
		}
		if (strcmp(argv[i], "--json") == 0) {
			o->json = 1;
			continue;
		}
		if ((r = drv_picture_opt(argc, argv, &i, &o->pic))) {
			if (r < 0)
				return -1;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			drv_error("unknown option '%s' (see aicc explain --help)", argv[i]);
			return -1;
		}
		if (o->plan) {
			drv_error("more than one plan given ('%s' and '%s')", o->plan, argv[i]);
			return -1;
		}
		o->plan = argv[i];
	}
	if (!o->plan) {
		drv_error("no plan given (see aicc explain --help)");
		return -1;
	}
	if (o->emit && !drv_is_picture(o->emit)) {
		drv_error("explain --emit draws dot, svg or png, not '%s'", o->emit);
		return -1;
	}
	return 0;
}

/* The group's anchor for a member of fusion group `grp` in the instance of `name`: the kernel of
 * that instance and group that records the kind (`fusion`); found by scanning the plan. */
static char *fusion_of(const Plan *p, const PlanInstr *in, const char *name)
{
	char buf[64], inst[256], callee[256], oinst[256];
	const char *grp = viz_attr(in, "fusion_group", buf, sizeof buf), *kind;
	if (!grp)
		return NULL;
	char g[64];
	snprintf(g, sizeof g, "%s", grp);
	viz_instance_of(name, inst, callee, sizeof inst);
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *o = &p->streams[s].ins[i];
			char b2[64], nb[512], text[1024];
			const char *og = viz_attr(o, "fusion_group", b2, sizeof b2);
			if (!og || strcmp(og, g) || !(kind = viz_attr(o, "fusion", nb, sizeof nb)))
				continue;
			const char *oname = viz_instr_name(p, s, i, nb, sizeof nb);
			viz_instance_of(oname, oinst, callee, sizeof oinst);
			if (strcmp(inst, oinst))
				continue;
			if (o == in)
				snprintf(text, sizeof text, "%s (anchor)", kind);
			else
				snprintf(text, sizeof text, "%s @ %s", kind, oname);
			return strdup(text);
		}
	return strdup("group without an anchor");
}

static char *dup_attr(const PlanInstr *in, const char *name)
{
	char buf[64];
	const char *s = viz_attr(in, name, buf, sizeof buf);
	return s ? strdup(s) : NULL;
}

/* One row for instruction (s, i) that ran from start for dur seconds (dur < 0: unknown). */
static void fill_row(const Plan *p, int s, int i, double start, double dur, Row *r)
{
	const PlanInstr *in = &p->streams[s].ins[i];
	char buf[512];
	memset(r, 0, sizeof *r);
	r->name = strdup(viz_instr_name(p, s, i, buf, sizeof buf));
	r->op = in->kind == PI_KERNEL ? plan_op_name(in->op) : in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll]
										   : plan_instr_names[in->kind];
	r->dev = p->streams[s].device;
	r->device = p->devices[r->dev].name;
	r->precision = strdup(viz_precision(p, in, buf, sizeof buf));
	const char *e = viz_attr(in, "est_rel_err", buf, sizeof buf);
	if (e) {
		char *end;
		r->est_err = strtod(e, &end);
		r->has_err = end != e;
	}
	r->fusion = fusion_of(p, in, r->name);
	r->placement = dup_attr(in, "placement_reason");
	r->format = dup_attr(in, "precision_reason");
	r->bound = viz_bound(p, s, in, &r->bound_from_target);
	r->time_s = dur;
	r->start_s = start;
	r->flops = in->flops;
	char inst[256], callee[256];
	viz_instance_of(r->name, inst, callee, sizeof inst);
	r->layer = strdup(inst[0] ? inst : "(top level)");
	const char *u = viz_attr(in, "mxu_util", buf, sizeof buf);
	if (u)
		r->util = strtod(u, NULL), r->has_util = 1;
	const char *w = viz_attr(in, "pad_waste", buf, sizeof buf);
	if (w)
		r->waste = strtod(w, NULL), r->has_waste = 1;
	r->is_link = in->kind == PI_COPY || in->kind == PI_COLLECTIVE;
	const char *ks = viz_attr(in, "kv_sram_bytes", buf, sizeof buf);
	if (ks)
		r->kv_sram = strtod(ks, NULL), r->has_kv = 1;
	const char *kh = viz_attr(in, "kv_hbm_bytes", buf, sizeof buf);
	if (kh)
		r->kv_hbm = strtod(kh, NULL), r->has_kv = 1;
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
	*rows = calloc((size_t)n + 1, sizeof **rows);
	*nrows = 0;
	for (int k = 0; *rows && k < n; k++) {
		int s = t ? t->spans[k].stream : order[k].stream, i = t ? t->spans[k].index : order[k].index;
		PlanInstrKind kind = p->streams[s].ins[i].kind;
		if (kind == PI_RECORD || kind == PI_WAIT)
			continue;
		fill_row(p, s, i, t ? t->spans[k].start : -1, t ? t->spans[k].end - t->spans[k].start : -1,
			 &(*rows)[(*nrows)++]);
	}
	rt_free(order);
	return *rows ? 0 : -1;
}

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
	Total *dev, *op, *bound;
	int ndev, nop, nbound;
	double busy;
	LayerTot *layer;
	int nlayer;
} Totals;

static void add_layer(Totals *t, const Row *r)
{
	int k = 0;
	while (k < t->nlayer && strcmp(t->layer[k].key, r->layer))
		k++;
	if (k == t->nlayer) {
		LayerTot *nv = realloc(t->layer, sizeof *nv * (size_t)(t->nlayer + 1));
		if (!nv)
			return;
		t->layer = nv;
		t->layer[t->nlayer++] = (LayerTot){ .key = r->layer };
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
		add_total(&t->dev, &t->ndev, rows[i].device, &rows[i]);
		add_total(&t->op, &t->nop, rows[i].op, &rows[i]);
		add_total(&t->bound, &t->nbound, rows[i].bound, &rows[i]);
		add_layer(t, &rows[i]);
		t->busy += rows[i].time_s > 0 ? rows[i].time_s : 0;
	}
	qsort(t->op, (size_t)t->nop, sizeof *t->op, by_time);
	qsort(t->bound, (size_t)t->nbound, sizeof *t->bound, by_time);
}

/* ---- text ---- */
static void print_totals(FILE *f, const char *title, const Total *v, int n, double busy)
{
	char t[32];
	fprintf(f, "\nby %s:\n", title);
	for (int i = 0; i < n; i++)
		fprintf(f, "  %-24s %6d  %10s  %5.1f%%  %.4g FLOP\n", v[i].key, v[i].count,
			viz_time_str(v[i].time_s, t, sizeof t), busy > 0 ? 100 * v[i].time_s / busy : 0.0, v[i].flops);
}

static void print_text(FILE *f, const Plan *p, const RtTiming *tm, const Row *rows, int n, const Totals *t)
{
	char a[32], b[32];
	int derived = 0;
	fprintf(f, "plan %s: target %s, machine %s, %d instructions, predicted latency %s\n",
		p->source.model ? p->source.model : "(no source)", p->target, p->machine, n,
		tm ? viz_time_str(tm->latency_s, a, sizeof a) : "not predicted (no cost model)");
	fprintf(f, "\n%-28s %-20s %-10s %-9s %-12s %-34s %10s  %-9s %s\n", "node", "op", "device", "precision",
		"est. error", "fused", "time", "bound", "why (placement; format)");
	for (int i = 0; i < n; i++) {
		const Row *r = &rows[i];
		if (r->has_err)
			snprintf(b, sizeof b, "%.3g", r->est_err);
		derived |= !r->bound_from_target && strcmp(r->bound, "link");
		char bound[40];
		snprintf(bound, sizeof bound, "%s%s", r->bound, r->bound_from_target || !strcmp(r->bound, "link") ? "" : "*");
		fprintf(f, "%-28s %-20s %-10s %-9s %-12s %-34s %10s  %-9s placement %s; format %s\n", r->name, r->op,
			r->device, r->precision, r->has_err ? b : "not recorded", r->fusion ? r->fusion : "-",
			viz_time_str(r->time_s, a, sizeof a), bound, r->placement ? r->placement : "not recorded",
			r->format ? r->format : "not recorded");
	}
	if (derived)
		fprintf(f, "* bound: the largest roofline term of the plan's numbers (the target records none)\n");
	print_totals(f, "device", t->dev, t->ndev, t->busy);
	print_totals(f, "operator", t->op, t->nop, t->busy);
	print_totals(f, "bound", t->bound, t->nbound, t->busy);
	int facts = 0;
	for (int i = 0; i < t->nlayer; i++)
		facts |= t->layer[i].util_time > 0 || t->layer[i].waste_flops > 0 || t->layer[i].link_s > 0;
	if (t->nlayer < 2 && !facts)
		return;
	fprintf(f, "\nby layer (mxu_util: time-weighted over matrix kernels; pad_waste: FLOP-weighted; link: chip-to-chip copies and collectives;"
		" kv_cache: past KV bytes read from on-chip SRAM and from HBM):\n");
	for (int i = 0; i < t->nlayer; i++) {
		const LayerTot *l = &t->layer[i];
		char u[32] = "-", w[32] = "-";
		if (l->util_time > 0)
			snprintf(u, sizeof u, "%.4f", l->util_t / l->util_time);
		if (l->waste_flops > 0)
			snprintf(w, sizeof w, "%.4f", l->waste_f / l->waste_flops);
		char kv[96] = "";
		if (l->has_kv) {
			char c1[32], c2[32];
			snprintf(kv, sizeof kv, "  kv_cache sram %s hbm %s", viz_bytes_str(l->kv_sram, c1, sizeof c1),
				 viz_bytes_str(l->kv_hbm, c2, sizeof c2));
		}
		fprintf(f, "  %-24s %6d  %10s  mxu_util %-7s pad_waste %-7s link %s%s\n", l->key, l->count,
			viz_time_str(l->time_s, a, sizeof a), u, w, viz_time_str(l->link_s, b, sizeof b), kv);
	}
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
	return o;
}

static int print_json(FILE *f, const Plan *p, const RtTiming *tm, const Row *rows, int n, const Totals *t)
{
	json_t *o = json_object(), *ins = json_array(), *tot = json_object();
	json_object_set_new(o, "model", jstr_or_null(p->source.model));
	json_object_set_new(o, "target", json_string(p->target));
	json_object_set_new(o, "machine", json_string(p->machine));
	json_object_set_new(o, "latency_s", tm ? json_real(tm->latency_s) : json_null());
	for (int i = 0; i < n; i++)
		json_array_append_new(ins, json_row(&rows[i]));
	json_object_set_new(o, "instructions", ins);
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
	Totals t;
	if (rc == 0) {
		totals(p, rows, n, &t);
		if (o->json)
			rc = print_json(f, p, timed ? &tm : NULL, rows, n, &t);
		else
			print_text(f, p, timed ? &tm : NULL, rows, n, &t);
		free(t.dev), free(t.op), free(t.bound), free(t.layer);
		for (int i = 0; i < n; i++)
			free(rows[i].layer), free(rows[i].name), free(rows[i].precision), free(rows[i].fusion), free(rows[i].placement), free(rows[i].format);
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
	Plan *p = plan_read(o.plan, &e);
	if (!p) {
		fprintf(stderr, "%s\n", e.msg);
		return EXIT_USER;
	}
	drv_register_runtime_hooks();
	OutFile f;
	int rc = EXIT_USER;
	if (out_open(&f, o.output) == 0) {
		int r = o.emit ? drv_emit_picture(NULL, p, o.emit, &o.pic, f.f)
			: o.compare ? drv_explain_compare(p, o.json, f.f) : explain(&o, p, f.f);
		if (r < 0)
			out_abort(&f);
		else
			rc = out_commit(&f) < 0 ? EXIT_USER : EXIT_OK;
	}
	plan_free(p);
	return rc;
}
