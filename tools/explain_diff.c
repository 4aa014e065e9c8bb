/* tools/explain_diff.c: `aicc explain NEW.aip --compare OLD.aip`: what changed between two plans
 * of one model, e.g. the plan of a full machine and the re-partition on the devices that survive
 * (`compile --exclude-devices`, docs/resilience.md):
 *   - the device set: the devices of each plan (named as the machine names them: a survivor keeps
 *     its name), those no longer used and those newly used;
 *   - the shape: tensor-parallel width (the most devices one layer instance's kernels run on) and
 *     pipeline stages (the distinct device sets of the layer instances);
 *   - the placement: every layer instance ("layer#3") and top-level node whose kernels run on
 *     other devices, consecutive instances with the same move in one row, with the weight bytes
 *     each plan stores for them (constants named inside the unit, every device's copy counted);
 *   - the step: predicted latency (TTFT / TPOT / step), tokens/s, busy time of the devices and the
 *     links and the busiest device, each plan timed by its target's cost hook (rt_simulate), with
 *     the change.
 * The byte ranges, links and order of the weight moves are `aicc reshard`'s. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/driver.h"
#include "tools/plan_build.h"
#include "viz/viz.h"

/* A unit of placement: a layer instance ("layer#3", per-stage copies "layer.stage1#3" named as
 * their layer) or a top-level node ("logits"). */
typedef struct DUnit {
	char key[256];
	char callee[192];        /* "layer"; "" for a top-level node */
	long inst;               /* the instance number; 0 for a top-level node */
	unsigned char *on[2];    /* per device name (Names): whether the unit runs there, old / new */
	double wbytes[2];        /* weight bytes stored for it, old / new */
	int seen[2];
} DUnit;

typedef struct Names {
	const char **v;
	int n, cap;
} Names;

typedef struct Diff {
	Names names;             /* the devices of both plans, the old plan's first */
	DUnit *u;
	int nu, cap;
} Diff;

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "aicc: error: out of memory\n");
		exit(EXIT_INTERNAL);
	}
	return q;
}

static int name_index(Diff *d, const char *name)
{
	for (int i = 0; i < d->names.n; i++)
		if (!strcmp(d->names.v[i], name))
			return i;
	if (d->names.n == d->names.cap) {
		d->names.cap = d->names.cap ? 2 * d->names.cap : 64;
		d->names.v = xrealloc(d->names.v, (size_t)d->names.cap * sizeof *d->names.v);
	}
	d->names.v[d->names.n] = name;
	return d->names.n++;
}

/* The unit key of a kernel's or constant's name: its layer instance ("layer#3", the callee
 * without ".stageN"), else its local name without shard markers; *inst the instance (0: none). */
static void unit_key(const char *name, char *key, size_t n, char *base, size_t bn, long *inst)
{
	char in[256], callee[256];
	viz_instance_of(name, in, callee, sizeof in);
	*inst = 0;
	if (in[0]) {
		const char *st = strstr(callee, ".stage"), *hash = strrchr(in, '#');
		snprintf(base, bn, "%.*s", st ? (int)(st - callee) : (int)strlen(callee), callee);
		*inst = hash ? strtol(hash + 1, NULL, 10) : 0;
		snprintf(key, n, "%s#%ld", base, *inst);
	} else {
		viz_shard_key(name, key, n);
		base[0] = '\0';
	}
}

static DUnit *unit_find(Diff *d, const char *key)
{
	for (int i = d->nu - 1; i >= 0; i--)
		if (!strcmp(d->u[i].key, key))
			return &d->u[i];
	return NULL;
}

/* The unit of a kernel's name, made on first use with room for every device name. */
static DUnit *unit_of(Diff *d, const char *name)
{
	char key[256], base[192];
	long k;
	unit_key(name, key, sizeof key, base, sizeof base, &k);
	DUnit *u = unit_find(d, key);
	if (u)
		return u;
	if (d->nu == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 64;
		d->u = xrealloc(d->u, (size_t)d->cap * sizeof *d->u);
	}
	u = &d->u[d->nu++];
	memset(u, 0, sizeof *u);
	snprintf(u->key, sizeof u->key, "%s", key);
	snprintf(u->callee, sizeof u->callee, "%s", base);
	u->inst = k;
	for (int w = 0; w < 2; w++)
		u->on[w] = xrealloc(NULL, (size_t)d->names.n + 1), memset(u->on[w], 0, (size_t)d->names.n + 1);
	return u;
}

/* Marks where plan p (w: 0 old, 1 new) runs each unit's kernels and what weights it stores for
 * it: the constants its kernels read, each counted once, with the first unit that reads it (a
 * table every layer reads goes with the first); *all: every constant's bytes. */
static void scan(Diff *d, const Plan *p, int w, double *all)
{
	unsigned char *cst = calloc((size_t)p->nbuffers + 1, 1);
	if (!cst) {
		fprintf(stderr, "aicc: error: out of memory\n");
		exit(EXIT_INTERNAL);
	}
	*all = 0;
	for (int c = 0; c < p->nconsts; c++)
		if (!cst[p->consts[c].buffer]) {
			cst[p->consts[c].buffer] = 1;
			*all += (double)p->buffers[p->consts[c].buffer].size;
		}
	for (int s = 0; s < p->nstreams; s++)
		for (int i = 0; i < p->streams[s].nins; i++) {
			const PlanInstr *in = &p->streams[s].ins[i];
			if (in->kind != PI_KERNEL)
				continue;
			char nb[512];
			DUnit *u = unit_of(d, viz_instr_name(p, s, i, nb, sizeof nb));
			u->on[w][name_index(d, p->devices[p->streams[s].device].name)] = 1;
			u->seen[w] = 1;
			for (int k = 0; k < in->nin; k++)
				if (in->in[k] >= 0 && cst[in->in[k]] == 1) {
					cst[in->in[k]] = 2;
					u->wbytes[w] += (double)p->buffers[in->in[k]].size;
				}
		}
	free(cst);
}

static int same(const Diff *d, const unsigned char *a, const unsigned char *b)
{
	for (int i = 0; i < d->names.n; i++)
		if (!a[i] != !b[i])
			return 0;
	return 1;
}

/* The shape of plan w: the widest unit (tensor parallel) and the distinct device sets of the
 * layer instances (pipeline stages). */
static void shape(const Diff *d, int w, int *tp, int *pp)
{
	*tp = *pp = 0;
	for (int i = 0; i < d->nu; i++) {
		const DUnit *u = &d->u[i];
		if (!u->seen[w])
			continue;
		int k = 0;
		for (int j = 0; j < d->names.n; j++)
			k += u->on[w][j] != 0;
		if (k > *tp)
			*tp = k;
		if (!u->inst)
			continue;
		int dup = 0;
		for (int j = 0; j < i && !dup; j++)
			dup = d->u[j].inst && d->u[j].seen[w] && same(d, d->u[j].on[w], u->on[w]);
		*pp += !dup;
	}
	if (*pp == 0)
		*pp = 1;
}

typedef struct Step {
	int ok;
	double latency, busy, link, busiest;
	const char *busiest_dev;
	RtPhase ph;
	char err[1100];
} Step;

static void step_of(const Plan *p, Step *st)
{
	RtTiming tm;
	RtError e = { 0 };
	memset(st, 0, sizeof *st);
	if (rt_simulate(p, &tm, &e) < 0) {
		snprintf(st->err, sizeof st->err, "%s", e.msg);
		return;
	}
	st->ok = 1;
	st->latency = tm.latency_s;
	for (int i = 0; i < p->ndevices; i++) {
		st->busy += tm.busy_s[i];
		if (!st->busiest_dev || tm.busy_s[i] > st->busiest) {
			st->busiest = tm.busy_s[i];
			st->busiest_dev = p->devices[i].name;
		}
	}
	for (int l = 0; l < p->nlinks; l++)
		st->link += tm.link_busy_s[l];
	rt_phase_metrics(p, tm.latency_s, &st->ph);
	rt_timing_free(&tm);
}

static const char *step_label(const Step *s)
{
	return !s->ph.phase ? "latency ms" : !strcmp(s->ph.phase, "decode") ? "TPOT ms" : !strcmp(s->ph.phase, "train")
		? "step ms" : "TTFT ms";
}

static double step_ms(const Step *s)
{
	double v = s->ph.tpot_s > 0 ? s->ph.tpot_s : s->ph.ttft_s > 0 ? s->ph.ttft_s : s->ph.step_s > 0 ? s->ph.step_s : s->latency;
	return v * 1e3;
}

/* The number ending name ("gpu17" -> 17, prefix length in *pl), or -1. */
static long suffix(const char *name, size_t *pl)
{
	size_t n = strlen(name), k = n;
	while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
		k--;
	*pl = k;
	return k < n && n - k < 9 ? strtol(name + k, NULL, 10) : -1;
}

/* The marked devices as runs, "gpu0..gpu2, gpu4 (4 devices)", in buf (n bytes). */
static void range_of(const Diff *d, const unsigned char *on, char *buf, size_t n)
{
	size_t k = 0;
	int cnt = 0, runs = 0;
	buf[0] = '\0';
	for (int i = 0; i < d->names.n; i++) {
		if (!on[i])
			continue;
		int j = i;
		size_t pl, ql;
		long v = suffix(d->names.v[i], &pl);
		while (j + 1 < d->names.n && on[j + 1] && v >= 0 && suffix(d->names.v[j + 1], &ql) == v + (j + 1 - i) &&
		       ql == pl && !strncmp(d->names.v[j + 1], d->names.v[i], pl))
			j++;
		cnt += j - i + 1;
		if (runs++ < 8 && k < n)
			k += (size_t)snprintf(buf + k, n - k, "%s%s%s%s", k ? ", " : "", d->names.v[i], j > i ? ".." : "",
					      j > i ? d->names.v[j] : "");
		else if (runs == 9 && k < n)
			k += (size_t)snprintf(buf + k, n - k, ", ...");
		i = j;
	}
	if (!cnt)
		snprintf(buf, n, "(not in the plan)");
	else if (cnt > 2 && k < n)
		snprintf(buf + k, n - k, " (%d devices)", cnt);
}

/* A row of moves: units [a, b] (consecutive instances of one layer with one move). */
typedef struct Move {
	int a, b;
} Move;

static int moves(const Diff *d, Move *mv)
{
	int n = 0;
	for (int i = 0; i < d->nu; i++) {
		const DUnit *u = &d->u[i];
		if (u->seen[0] && u->seen[1] && same(d, u->on[0], u->on[1]))
			continue;
		if (n > 0) {
			const DUnit *l = &d->u[mv[n - 1].b];
			if (mv[n - 1].b == i - 1 && l->inst && u->inst == l->inst + 1 && !strcmp(l->callee, u->callee) &&
			    same(d, l->on[0], u->on[0]) && same(d, l->on[1], u->on[1]) && l->seen[0] == u->seen[0] &&
			    l->seen[1] == u->seen[1]) {
				mv[n - 1].b = i;
				continue;
			}
		}
		mv[n++] = (Move){ i, i };
	}
	return n;
}

static void move_label(const Diff *d, const Move *m, char *buf, size_t n)
{
	const DUnit *a = &d->u[m->a], *b = &d->u[m->b];
	if (m->a == m->b)
		snprintf(buf, n, "%s", a->key);
	else
		snprintf(buf, n, "%s#%ld..%ld", a->callee, a->inst, b->inst);
}

static json_t *names_json(const Diff *d, const unsigned char *on, const unsigned char *not)
{
	json_t *a = json_array();
	for (int i = 0; i < d->names.n; i++)
		if (on[i] && !(not && not[i]))
			json_array_append_new(a, json_string(d->names.v[i]));
	return a;
}

static json_t *step_json(const Step *s)
{
	json_t *o = json_object();
	if (!s->ok) {
		json_object_set_new(o, "error", json_string(s->err));
		return o;
	}
	json_object_set_new(o, "latency_s", json_real(s->latency));
	json_object_set_new(o, "step_s", json_real(step_ms(s) / 1e3));
	json_object_set_new(o, "tokens_per_s", json_real(s->ph.tokens_per_s));
	json_object_set_new(o, "device_busy_s", json_real(s->busy));
	json_object_set_new(o, "link_busy_s", json_real(s->link));
	json_object_set_new(o, "busiest_device", json_string(s->busiest_dev ? s->busiest_dev : ""));
	json_object_set_new(o, "busiest_busy_s", json_real(s->busiest));
	return o;
}

static void row(FILE *f, const char *label, const Step *s, double (*get)(const Step *))
{
	fprintf(f, "    %-22s", label);
	for (int w = 0; w < 2; w++)
		if (s[w].ok)
			fprintf(f, " %12.4g", get(&s[w]));
		else
			fprintf(f, " %12s", "-");
	if (s[0].ok && s[1].ok && get(&s[0]) != 0)
		fprintf(f, " %+11.1f%%", (get(&s[1]) / get(&s[0]) - 1) * 100);
	fputc('\n', f);
}

static double g_step(const Step *s) { return step_ms(s); }
static double g_tok(const Step *s) { return s->ph.tokens_per_s; }
static double g_busy(const Step *s) { return s->busy * 1e3; }
static double g_link(const Step *s) { return s->link * 1e3; }
static double g_hot(const Step *s) { return s->busiest * 1e3; }

int drv_explain_diff(const Plan *np, const Plan *op, const char *new_file, const char *old_file, int json, FILE *f)
{
	if ((np->source.model && op->source.model && strcmp(np->source.model, op->source.model)) ||
	    strcmp(np->target, op->target)) {
		drv_error("explain --compare: %s (%s, target %s) and %s (%s, target %s) are not plans of one model and "
			  "target", old_file, op->source.model ? op->source.model : "no model file", op->target, new_file,
			  np->source.model ? np->source.model : "no model file", np->target);
		return -1;
	}
	/* the same file, other contents or sizes: say so, the comparison then measures the edit too */
	const char *oh = op->source.model_hash, *nh = np->source.model_hash;
	const char *ob = op->source.binds ? op->source.binds : "", *nb = np->source.binds ? np->source.binds : "";
	int hash_changed = oh[0] && nh[0] && strcmp(oh, nh) != 0, binds_changed = strcmp(ob, nb) != 0;
	if (hash_changed)
		fprintf(stderr, "aicc: warning: explain --compare: %s and %s were compiled from different contents of '%s' "
			"(model_hash %s and %s): the model changed between the compiles, so the comparison measures that "
			"change too\n", old_file, new_file, np->source.model ? np->source.model : "?", oh, nh);
	if (binds_changed)
		fprintf(stderr, "aicc: warning: explain --compare: %s and %s bind the model's sizes differently ('%s' and "
			"'%s'): plans of two model sizes\n", old_file, new_file, ob, nb);
	Diff d = { 0 };
	double wall[2];
	for (int i = 0; i < op->ndevices; i++)
		name_index(&d, op->devices[i].name);
	for (int i = 0; i < np->ndevices; i++)
		name_index(&d, np->devices[i].name);
	scan(&d, op, 0, &wall[0]);
	scan(&d, np, 1, &wall[1]);
	unsigned char *in[2], *left = calloc((size_t)d.names.n + 1, 1), *added = calloc((size_t)d.names.n + 1, 1);
	in[0] = calloc((size_t)d.names.n + 1, 1);
	in[1] = calloc((size_t)d.names.n + 1, 1);
	if (!left || !added || !in[0] || !in[1]) {
		fprintf(stderr, "aicc: error: out of memory\n");
		exit(EXIT_INTERNAL);
	}
	for (int i = 0; i < op->ndevices; i++)
		in[0][name_index(&d, op->devices[i].name)] = 1;
	for (int i = 0; i < np->ndevices; i++)
		in[1][name_index(&d, np->devices[i].name)] = 1;
	int nleft = 0, nadded = 0;
	for (int i = 0; i < d.names.n; i++) {
		nleft += (left[i] = in[0][i] && !in[1][i]);
		nadded += (added[i] = in[1][i] && !in[0][i]);
	}
	int tp[2], pp[2], nlayers[2] = { 0, 0 }, ntop[2] = { 0, 0 };
	shape(&d, 0, &tp[0], &pp[0]);
	shape(&d, 1, &tp[1], &pp[1]);
	for (int i = 0; i < d.nu; i++)
		for (int w = 0; w < 2; w++)
			*(d.u[i].inst ? &nlayers[w] : &ntop[w]) += d.u[i].seen[w];
	Move *mv = calloc((size_t)d.nu + 1, sizeof *mv);
	int nm = moves(&d, mv), mlayers = 0, mtop = 0;
	double mbytes = 0, wtotal = wall[0];
	for (int k = 0; k < nm; k++)
		for (int i = mv[k].a; i <= mv[k].b; i++) {
			*(d.u[i].inst ? &mlayers : &mtop) += 1;
			mbytes += d.u[i].wbytes[0];
		}
	Step st[2];
	step_of(op, &st[0]);
	step_of(np, &st[1]);
	char b0[512], b1[512];
	if (json) {
		json_t *o = json_object(), *dv = json_object(), *sh = json_object(), *ma = json_array();
		json_object_set_new(o, "old", json_string(old_file));
		json_object_set_new(o, "new", json_string(new_file));
		json_object_set_new(o, "model_changed", json_boolean(hash_changed));
		json_object_set_new(o, "binds_changed", json_boolean(binds_changed));
		json_object_set_new(dv, "old", names_json(&d, in[0], NULL));
		json_object_set_new(dv, "new", names_json(&d, in[1], NULL));
		json_object_set_new(dv, "no_longer_used", names_json(&d, left, NULL));
		json_object_set_new(dv, "newly_used", names_json(&d, added, NULL));
		json_object_set_new(o, "devices", dv);
		json_object_set_new(sh, "old", json_pack("{s:i, s:i}", "tp", tp[0], "pp", pp[0]));
		json_object_set_new(sh, "new", json_pack("{s:i, s:i}", "tp", tp[1], "pp", pp[1]));
		json_object_set_new(o, "shape", sh);
		for (int k = 0; k < nm; k++) {
			const DUnit *u = &d.u[mv[k].a];
			double wb[2] = { 0, 0 };
			for (int i = mv[k].a; i <= mv[k].b; i++)
				wb[0] += d.u[i].wbytes[0], wb[1] += d.u[i].wbytes[1];
			move_label(&d, &mv[k], b0, sizeof b0);
			json_array_append_new(ma, json_pack("{s:s, s:i, s:o, s:o, s:f, s:f}", "units", b0, "count",
							    mv[k].b - mv[k].a + 1, "from", names_json(&d, u->on[0], NULL), "to",
							    names_json(&d, u->on[1], NULL), "old_weight_bytes", wb[0],
							    "new_weight_bytes", wb[1]));
		}
		json_object_set_new(o, "moves", ma);
		json_object_set_new(o, "moved_weight_bytes", json_real(mbytes));
		json_object_set_new(o, "weight_bytes", json_real(wtotal));
		json_object_set_new(o, "step", json_pack("{s:o, s:o}", "old", step_json(&st[0]), "new", step_json(&st[1])));
		json_t *top = json_pack("{s:o}", "plan_comparison", o);
		json_dumpf(top, f, JSON_PRESERVE_ORDER | JSON_INDENT(2) | JSON_REAL_PRECISION(6));
		fputc('\n', f);
		json_decref(top);
	} else {
		fprintf(f, "comparison: %s -> %s (%s, target %s, machine %s%s%s)\n", old_file, new_file,
			np->source.model ? np->source.model : "no model file", np->target, np->machine,
			strcmp(np->machine, op->machine) ? ", was " : "", strcmp(np->machine, op->machine) ? op->machine : "");
		if (hash_changed)
			fprintf(f, "  model      changed between the compiles (model_hash %s -> %s)\n", oh, nh);
		if (binds_changed)
			fprintf(f, "  binds      old '%s'; new '%s'\n", ob, nb);
		range_of(&d, in[0], b0, sizeof b0);
		range_of(&d, in[1], b1, sizeof b1);
		fprintf(f, "  devices    old %d: %s\n             new %d: %s\n", op->ndevices, b0, np->ndevices, b1);
		if (nleft)
			range_of(&d, left, b0, sizeof b0);
		if (nadded)
			range_of(&d, added, b1, sizeof b1);
		fprintf(f, "             no longer used: %s; newly used: %s\n", nleft ? b0 : "none", nadded ? b1 : "none");
		fprintf(f, "  shape      old tp %d x pp %d; new tp %d x pp %d (the widest layer's devices x the distinct "
			"device sets of the layers)\n", tp[0], pp[0], tp[1], pp[1]);
		fprintf(f, "  placement  %d of %d layer instance(s) and %d of %d top-level node(s) on other devices; their "
			"weights %s of %s (every device's copy; aicc reshard gives the byte ranges, links and order)\n",
			mlayers, nlayers[0] > nlayers[1] ? nlayers[0] : nlayers[1], mtop, ntop[0] > ntop[1] ? ntop[0] : ntop[1],
			viz_bytes_str(mbytes, b0, sizeof b0), viz_bytes_str(wtotal, b1, sizeof b1));
		for (int k = 0; k < nm; k++) {
			char lab[300], from[512], to[512], wb[64];
			const DUnit *u = &d.u[mv[k].a];
			double w = 0;
			for (int i = mv[k].a; i <= mv[k].b; i++)
				w += d.u[i].wbytes[0];
			move_label(&d, &mv[k], lab, sizeof lab);
			range_of(&d, u->on[0], from, sizeof from);
			range_of(&d, u->on[1], to, sizeof to);
			fprintf(f, "    %-22s %s -> %s%s%s\n", lab, from, to, w > 0 ? ", weights " : "",
				w > 0 ? viz_bytes_str(w, wb, sizeof wb) : "");
		}
		fprintf(f, "  %-24s %12s %12s %12s\n", "step", "old", "new", "change");
		row(f, step_label(&st[1]), st, g_step);
		if (st[0].ph.tokens_per_s > 0 || st[1].ph.tokens_per_s > 0)
			row(f, "tokens/s", st, g_tok);
		row(f, "devices busy ms (sum)", st, g_busy);
		row(f, "links busy ms (sum)", st, g_link);
		row(f, "busiest device ms", st, g_hot);
		if (st[0].ok && st[1].ok)
			fprintf(f, "    %-22s %12s %12s\n", "busiest device", st[0].busiest_dev, st[1].busiest_dev);
		for (int w = 0; w < 2; w++)
			if (!st[w].ok)
				fprintf(f, "  %s: not timed: %s\n", w ? new_file : old_file, st[w].err);
	}
	for (int i = 0; i < d.nu; i++)
		free(d.u[i].on[0]), free(d.u[i].on[1]);
	free(d.u), free(d.names.v), free(mv), free(left), free(added), free(in[0]), free(in[1]);
	return 0;
}
