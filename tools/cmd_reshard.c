/* tools/cmd_reshard.c: `aicc reshard OLD.aip NEW.aip [-o moves.json]`: the transfer plan that
 * takes every weight (and a training plan's optimizer state) from the devices of one
 * partitioning of a model to those of another (docs/resilience.md, "Checkpoints and
 * resharding").
 *
 * Both plans' constants are cut into the logical tensors they are parts of (runtime/ckpt.h).
 * Every region a constant of NEW holds is taken from the constants of OLD that overlap it: from
 * the same device when it holds it, else from a device of the same NVLink domain, else across
 * the network, least-loaded sender first; a region whose every OLD owner is gone (a device of
 * OLD that NEW does not name: a failed GPU) is read from the checkpoint storage.  Devices are
 * matched by name, and device gpuK is in NVLink domain K / D (D: the machine's NVLink <domain>).
 *
 * Pricing (the alpha-beta model of the plan's copies, runtime/timing.c rt_cost_roofline:
 * latency + bytes / bandwidth): NVLink and the network at the machine file's one-way link
 * bandwidth and latency; a copy on one device reads and writes its HBM (2 x bytes / the space's
 * bandwidth); storage at the machine's <storage> bandwidth per server.  Each device has one
 * send and one receive port per link class, each server one storage channel; moves are
 * scheduled longest first onto the earliest moment both of their ports are free (so no port
 * carries two moves at once), and the predicted time is the last move's end; the busiest port's
 * total is the lower bound any schedule meets.
 *
 * --apply OLDCKPT --save-checkpoint DIR executes the moves on a checkpoint of OLD's state: each
 * NEW constant's buffer is built only from the moves' byte descriptors (offset, strides, runs)
 * over OLD's buffers, which are read from OLDCKPT, and written as a checkpoint of NEW's slices.
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ckpt.h"
#include "runtime/outfile.h"
#include "targets/machine.h"
#include "tools/driver.h"

enum { L_LOCAL, L_NVLINK, L_NET, L_STORAGE, L_COUNT };
static const char *link_names[L_COUNT] = { "local", "nvlink", "network", "storage" };

typedef struct Move {
	int tensor;              /* index into the NEW slices (the destination constant) */
	int src;                 /* index into the OLD slices, or -1: from storage */
	RtBox r;                 /* the region, logical coordinates */
	int link;
	int64_t bytes, run_bytes, src_off, dst_off;
	int nouter;
	int64_t outer[RT_MAX_RANK], src_str[RT_MAX_RANK], dst_str[RT_MAX_RANK];
	int tx, rx;              /* ports */
	double dur, start, end;
} Move;

typedef struct Fabric {
	int domain;
	double nvl_bw, nvl_lat, net_bw, net_lat, sto_bw;
	const char *nvl_id, *net_id, *sto_id;
} Fabric;

typedef struct Side {
	const char *path;
	Plan *p;
	RtPlanSlice *s;
	int n;
} Side;

static void help(void)
{
	printf("usage: aicc reshard OLD.aip NEW.aip [-o moves.json] [--machine NAME|FILE]\n"
	       "                   [--apply OLDCKPT --save-checkpoint DIR]\n"
	       "  OLD, NEW               two plans of one model (e.g. --tp 8 --pp 4 on 32 GPUs and the\n"
	       "                         re-partition for 28 survivors); devices are matched by name,\n"
	       "                         and a device of OLD that NEW lacks is taken as failed\n"
	       "  -o FILE                write the transfer plan as JSON (every move: tensor, region,\n"
	       "                         source and destination device, buffer and byte descriptor,\n"
	       "                         link, start and end time)\n"
	       "  --machine NAME|FILE    the machine whose links price the moves (default: NEW's)\n"
	       "  --apply OLDCKPT        execute the moves on checkpoint OLDCKPT of OLD's state and\n"
	       "  --save-checkpoint DIR  write NEW's state as checkpoint DIR (docs/resilience.md)\n");
}

/* The index K of a device named like gpu12 (its trailing digits), or -1. */
static int dev_index(const char *name)
{
	size_t n = strlen(name), k = n;
	while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
		k--;
	return k < n ? atoi(name + k) : -1;
}

/* Whether device names a and b are one device: equal, or one is the other without its index 0
 * (a one-device plan names its GPU `gpu`, a partitioned one `gpu0`). */
static int same_device(const char *a, const char *b)
{
	if (strcmp(a, b) == 0)
		return 1;
	size_t na = strlen(a), nb = strlen(b);
	if (na + 1 == nb && strncmp(a, b, na) == 0 && b[na] == '0')
		return dev_index(a) < 0;
	if (nb + 1 == na && strncmp(a, b, nb) == 0 && a[nb] == '0')
		return dev_index(b) < 0;
	return 0;
}

static int find_device(const Plan *p, const char *name)
{
	for (int i = 0; i < p->ndevices; i++)
		if (same_device(p->devices[i].name, name))
			return i;
	return -1;
}

/* The link classes from machine m (see the header). */
static int topology(const Machine *m, Fabric *t)
{
	memset(t, 0, sizeof *t);
	t->domain = 1 << 30;
	for (int i = 0; i < m->nlinks; i++) {
		const Link *l = &m->links[i];
		if (l->from != l->to || l->from->is_host)
			continue;
		int net = strcmp(l->kind, "infiniband") == 0 || strcmp(l->kind, "ethernet") == 0;
		if (!net && !t->nvl_id) {
			t->nvl_id = l->id;
			t->nvl_bw = link_oneway_bw(l);
			t->nvl_lat = num_has(&l->latency) ? l->latency.v : 0;
			if (num_has(&l->domain))
				t->domain = (int)l->domain.v;
		} else if (net && !t->net_id) {
			t->net_id = l->id;
			t->net_bw = link_oneway_bw(l);
			t->net_lat = num_has(&l->latency) ? l->latency.v : 0;
		}
	}
	if (num_has(&m->storage_bw)) {
		t->sto_bw = m->storage_bw.v;
		t->sto_id = m->storage_id ? m->storage_id : "storage";
	}
	if (!t->nvl_id) {
		drv_error("machine '%s' has no link between its accelerators", m->name);
		return -1;
	}
	return 0;
}

static int node_of(const Fabric *t, const char *dev)
{
	int k = dev_index(dev);
	return k < 0 ? 0 : k / t->domain;
}

/* Bytes per element of buffer b on its device; 0 when not whole bytes (block formats). */
static int64_t elem_bytes(const PlanBuffer *b)
{
	int64_t n = plan_buffer_numel(b);
	return n > 0 && b->size % n == 0 && rt_dtypes[b->dtype].block == 0 ? b->size / n : 0;
}

static int load_side(const char *path, Side *s)
{
	RtError e = { 0 };
	s->path = path;
	if (!(s->p = plan_read(path, &e))) {
		drv_report(e.msg);
		return -1;
	}
	if (rt_plan_slices(s->p, &s->s, &s->n, &e) < 0) {
		drv_report(e.msg);
		return -1;
	}
	return 0;
}

static void free_side(Side *s)
{
	rt_plan_slices_free(s->s, s->n);
	plan_free(s->p);
}

/* The first OLD slice of logical tensor name, or -1. */
static int old_first(const Side *o, const char *name)
{
	for (int i = 0; i < o->n; i++)
		if (o->s[i].state && strcmp(o->s[i].name, name) == 0)
			return i;
	return -1;
}

/* Every state tensor of NEW exists in OLD with its dtype and shape, and every buffer is
 * byte-addressable. */
static int same_model(const Side *o, const Side *n)
{
	for (int i = 0; i < n->n; i++) {
		const RtPlanSlice *x = &n->s[i];
		if (!x->state)
			continue;
		int j = old_first(o, x->name);
		if (j < 0) {
			drv_error("%s has tensor '%s', which %s lacks: the plans are not of one model", n->path, x->name, o->path);
			return -1;
		}
		const RtPlanSlice *y = &o->s[j];
		char a[256], b[256];
		if (!rt_plan_slice_same_type(y, x, a, b, sizeof a)) {
			drv_error("tensor '%s' is %s in %s but %s in %s: the plans are not of one model", x->name, a, o->path, b,
				  n->path);
			return -1;
		}
		if (!elem_bytes(&n->p->buffers[x->buffer])) {
			drv_error("tensor '%s' is %s, whose elements are not whole bytes: reshard moves byte ranges", x->name,
				  rt_dtype_name(x->dtype));
			return -1;
		}
	}
	return 0;
}

/* The byte descriptor of region r moved from a buffer holding box sa (at byte sbase) to one
 * holding da (at dbase): runs of run_bytes, over the outer axes with their strides. */
static void describe(Move *m, const RtBox *sa, int64_t sbase, const RtBox *da, int64_t dbase, int64_t z)
{
	const RtBox *r = &m->r;
	int rank = r->rank, j = rank > 0 ? rank - 1 : 0;
	while (j > 0 && r->ext[j] == sa->ext[j] && r->ext[j] == da->ext[j])
		j--;
	int64_t run = z;
	for (int i = j; i < rank; i++)
		run *= r->ext[i];
	m->run_bytes = run;
	m->nouter = j;
	for (int i = 0; i < j; i++) {
		int64_t ss = z, ds = z;
		for (int k = i + 1; k < rank; k++)
			ss *= sa->ext[k], ds *= da->ext[k];
		m->outer[i] = r->ext[i];
		m->src_str[i] = ss;
		m->dst_str[i] = ds;
	}
	m->src_off = sa ? sbase + z * rt_box_index(sa, r->off) : 0;
	m->dst_off = dbase + z * rt_box_index(da, r->off);
	m->bytes = z * rt_box_volume(r);
}

typedef struct Ctx {
	Side *o, *n;
	Fabric t;
	Move *mv;
	int nmv, capmv;
	double *port_bytes;      /* per port: bytes given so far (source balancing) */
	int nports;
	int *alive;              /* per OLD device: NEW has it (its index there), or -1 */
} Ctx;

/* Ports, by device index k (< PORTK): its HBM (local copies), NVLink send and receive, network
 * send and receive; then one storage channel per server. */
#define PORTK (1 << 15)
static int port_of(const Ctx *c, const char *dev, int link, int rx)
{
	int k = dev_index(dev);
	if (k < 0)
		k = 0;
	switch (link) {
	case L_LOCAL: return k;
	case L_NVLINK: return (1 + rx) * PORTK + k;
	case L_NET: return (3 + rx) * PORTK + k;
	default: return 5 * PORTK + node_of(&c->t, dev);
	}
}

static int add_move(Ctx *c, const Move *m)
{
	if (c->nmv == c->capmv) {
		int cap = c->capmv * 2 + 64;
		Move *x = realloc(c->mv, sizeof *x * (size_t)cap);
		if (!x) {
			drv_error("out of memory");
			return -1;
		}
		c->mv = x, c->capmv = cap;
	}
	c->mv[c->nmv++] = *m;
	return 0;
}

static double port_load(Ctx *c, int port) { return port >= 0 && port < c->nports ? c->port_bytes[port] : 0; }

/* The moves that fill NEW slice i. */
static int plan_slice(Ctx *c, int i)
{
	const RtPlanSlice *x = &c->n->s[i];
	const Plan *np = c->n->p, *op = c->o->p;
	const char *dst = np->devices[x->device].name;
	const PlanBuffer *db = &np->buffers[x->buffer];
	int64_t z = elem_bytes(db), covered = 0;
	for (int j = 0; j < c->o->n; j++) {
		const RtPlanSlice *y = &c->o->s[j];
		RtBox r;
		if (!y->state || strcmp(y->name, x->name) != 0 || !rt_box_intersect(&y->box, &x->box, &r))
			continue;
		int first = 1;      /* the first OLD constant with this box: decides for all its replicas */
		for (int k = 0; k < j && first; k++) {
			const RtPlanSlice *w = &c->o->s[k];
			int same = w->state && strcmp(w->name, y->name) == 0;
			for (int a = 0; same && a < y->rank; a++)
				same = w->box.off[a] == y->box.off[a] && w->box.ext[a] == y->box.ext[a];
			first = !same;
		}
		if (!first)
			continue;
		int best = -1, best_cls = 99;
		double best_load = 0;
		for (int k = j; k < c->o->n; k++) {
			const RtPlanSlice *w = &c->o->s[k];
			int same = w->state && strcmp(w->name, y->name) == 0;
			for (int a = 0; same && a < y->rank; a++)
				same = w->box.off[a] == y->box.off[a] && w->box.ext[a] == y->box.ext[a];
			if (!same || c->alive[w->device] < 0)
				continue;
			const char *src = op->devices[w->device].name;
			int cls = same_device(src, dst) ? L_LOCAL :
				  node_of(&c->t, src) == node_of(&c->t, dst) ? L_NVLINK : L_NET;
			double load = port_load(c, port_of(c, src, cls, 0));
			if (cls < best_cls || (cls == best_cls && load < best_load))
				best = k, best_cls = cls, best_load = load;
		}
		Move m = { .tensor = i, .src = best, .r = r };
		if (best >= 0) {
			const RtPlanSlice *w = &c->o->s[best];
			const PlanBuffer *sb = &op->buffers[w->buffer];
			m.link = best_cls;
			describe(&m, &w->box, sb->offset, &x->box, db->offset, z);
			m.tx = port_of(c, op->devices[w->device].name, best_cls, 0);
			m.rx = port_of(c, dst, best_cls, 1);
		} else {
			if (!c->t.sto_id) {
				drv_error("tensor '%s': region held only by lost devices, and machine gives no <storage> to read "
					  "it from", x->name);
				return -1;
			}
			m.link = L_STORAGE;
			describe(&m, &r, 0, &x->box, db->offset, z);
			m.src_off = 0;
			m.tx = m.rx = port_of(c, dst, L_STORAGE, 1);
		}
		if (m.tx < c->nports)
			c->port_bytes[m.tx] += (double)m.bytes;
		covered += rt_box_volume(&r);
		if (add_move(c, &m) < 0)
			return -1;
	}
	if (covered != rt_box_volume(&x->box)) {
		drv_error("%s: '%s' needs %" PRId64 " elements of tensor '%s', and %s holds %" PRId64 " of them", c->n->path,
			  db->name, rt_box_volume(&x->box), x->name, c->o->path, covered);
		return -1;
	}
	return 0;
}

static double move_time(const Ctx *c, const Move *m)
{
	const Plan *np = c->n->p;
	const RtPlanSlice *x = &c->n->s[m->tensor];
	switch (m->link) {
	case L_LOCAL: {
		double bw = np->spaces[np->buffers[x->buffer].space].bandwidth;
		return bw > 0 ? 2 * (double)m->bytes / bw : 0;
	}
	case L_NVLINK: return c->t.nvl_lat + (double)m->bytes / c->t.nvl_bw;
	case L_NET: return c->t.net_lat + (double)m->bytes / c->t.net_bw;
	default: return (double)m->bytes / c->t.sto_bw;
	}
}

static const Ctx *g_sort;
static int by_duration(const void *a, const void *b)
{
	const Move *x = &g_sort->mv[*(const int *)a], *y = &g_sort->mv[*(const int *)b];
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

static int by_start(const void *a, const void *b)
{
	const Move *x = &g_sort->mv[*(const int *)a], *y = &g_sort->mv[*(const int *)b];
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return *(const int *)a - *(const int *)b;
}

/* Longest first, each at the earliest time both its ports are free; order[] receives the
 * moves by start time.  Returns the makespan; *bound the busiest port's total, *busiest it. */
static double schedule(Ctx *c, int *order, double *bound, int *busiest)
{
	double *free_at = calloc((size_t)c->nports, sizeof *free_at), *busy = calloc((size_t)c->nports, sizeof *busy);
	double span = 0;
	*bound = 0;
	*busiest = -1;
	if (!free_at || !busy) {
		free(free_at);
		free(busy);
		return -1;
	}
	for (int i = 0; i < c->nmv; i++) {
		c->mv[i].dur = move_time(c, &c->mv[i]);
		order[i] = i;
	}
	g_sort = c;
	qsort(order, (size_t)c->nmv, sizeof *order, by_duration);
	for (int k = 0; k < c->nmv; k++) {
		Move *m = &c->mv[order[k]];
		double s = free_at[m->tx] > free_at[m->rx] ? free_at[m->tx] : free_at[m->rx];
		m->start = s;
		m->end = s + m->dur;
		free_at[m->tx] = free_at[m->rx] = m->end;
		busy[m->tx] += m->dur;
		if (m->rx != m->tx)
			busy[m->rx] += m->dur;
		if (m->end > span)
			span = m->end;
	}
	for (int p = 0; p < c->nports; p++)
		if (busy[p] > *bound)
			*bound = busy[p], *busiest = p;
	qsort(order, (size_t)c->nmv, sizeof *order, by_start);
	free(free_at);
	free(busy);
	return span;
}

/* optimizer: AdamW's moments, the f32 master weights of a mixed-precision step, its counter
 * (passes/autodiff.c's names); weight otherwise. */
static const char *kind_of(const char *name)
{
	size_t n = strlen(name);
	if ((n > 8 && strcmp(name + n - 8, ".exp_avg") == 0) || (n > 11 && strcmp(name + n - 11, ".exp_avg_sq") == 0) ||
	    (n > 7 && strcmp(name + n - 7, ".master") == 0) || strcmp(name, "adamw.step") == 0)
		return "optimizer";
	return "weight";
}

static json_t *ints_json(int n, const int64_t *v)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)v[i]));
	return a;
}

/* A port's name for the summary. */
static void port_name(const Ctx *c, int port, char *out, size_t n)
{
	for (int i = 0; i < c->nmv; i++) {
		const Move *m = &c->mv[i];
		if (m->tx != port && m->rx != port)
			continue;
		const RtPlanSlice *x = &c->n->s[m->tensor];
		const char *dst = c->n->p->devices[x->device].name;
		if (m->link == L_STORAGE) {
			snprintf(out, n, "%s read by the server of %s", c->t.sto_id, dst);
			return;
		}
		const char *src = c->o->p->devices[c->o->s[m->src].device].name;
		snprintf(out, n, "%s %s%s", m->tx == port ? src : dst, link_names[m->link],
			 m->link == L_LOCAL ? " copy" : m->tx == port ? " send" : " receive");
		return;
	}
	snprintf(out, n, "none");
}

static json_t *moves_json(const Ctx *c, const int *order, double span, double bound, const double *bytes,
			  const char *lost)
{
	json_t *root = json_object(), *mv = json_array(), *links = json_object(), *by = json_object();
	json_object_set_new(root, "old", json_string(c->o->path));
	json_object_set_new(root, "new", json_string(c->n->path));
	json_object_set_new(root, "machine", json_string(c->n->p->machine));
	json_object_set_new(root, "old_devices", json_integer(c->o->p->ndevices));
	json_object_set_new(root, "new_devices", json_integer(c->n->p->ndevices));
	json_object_set_new(root, "lost", json_string(lost));
	json_t *l = json_object();
	json_object_set_new(l, "id", json_string(c->t.nvl_id));
	json_object_set_new(l, "bandwidth", json_real(c->t.nvl_bw));
	json_object_set_new(l, "latency_s", json_real(c->t.nvl_lat));
	json_object_set_new(l, "domain", json_integer(c->t.domain));
	json_object_set_new(links, "nvlink", l);
	if (c->t.net_id) {
		l = json_object();
		json_object_set_new(l, "id", json_string(c->t.net_id));
		json_object_set_new(l, "bandwidth", json_real(c->t.net_bw));
		json_object_set_new(l, "latency_s", json_real(c->t.net_lat));
		json_object_set_new(links, "network", l);
	}
	if (c->t.sto_id) {
		l = json_object();
		json_object_set_new(l, "id", json_string(c->t.sto_id));
		json_object_set_new(l, "bandwidth", json_real(c->t.sto_bw));
		json_object_set_new(links, "storage", l);
	}
	json_object_set_new(root, "links", links);
	for (int k = 0; k < L_COUNT; k++)
		json_object_set_new(by, link_names[k], json_integer((json_int_t)bytes[k]));
	json_object_set_new(root, "bytes", by);
	json_object_set_new(root, "predicted_s", json_real(span));
	json_object_set_new(root, "lower_bound_s", json_real(bound));
	for (int k = 0; k < c->nmv; k++) {
		const Move *m = &c->mv[order[k]];
		const RtPlanSlice *x = &c->n->s[m->tensor];
		json_t *j = json_object(), *s = json_object(), *d = json_object();
		json_object_set_new(j, "tensor", json_string(x->name));
		json_object_set_new(j, "kind", json_string(kind_of(x->name)));
		json_object_set_new(j, "offsets", ints_json(m->r.rank, m->r.off));
		json_object_set_new(j, "extents", ints_json(m->r.rank, m->r.ext));
		json_object_set_new(j, "bytes", json_integer((json_int_t)m->bytes));
		json_object_set_new(j, "link", json_string(link_names[m->link]));
		if (m->src >= 0) {
			const RtPlanSlice *y = &c->o->s[m->src];
			const PlanBuffer *b = &c->o->p->buffers[y->buffer];
			json_object_set_new(s, "device", json_string(c->o->p->devices[y->device].name));
			json_object_set_new(s, "buffer", json_string(b->name));
			json_object_set_new(s, "space", json_string(c->o->p->spaces[b->space].name));
			json_object_set_new(s, "offset", json_integer((json_int_t)m->src_off));
			json_object_set_new(s, "strides", ints_json(m->nouter, m->src_str));
		} else
			json_object_set_new(s, "storage", json_string(c->t.sto_id));
		const PlanBuffer *b = &c->n->p->buffers[x->buffer];
		json_object_set_new(d, "device", json_string(c->n->p->devices[x->device].name));
		json_object_set_new(d, "buffer", json_string(b->name));
		json_object_set_new(d, "space", json_string(c->n->p->spaces[b->space].name));
		json_object_set_new(d, "offset", json_integer((json_int_t)m->dst_off));
		json_object_set_new(d, "strides", ints_json(m->nouter, m->dst_str));
		json_object_set_new(j, "src", s);
		json_object_set_new(j, "dst", d);
		json_object_set_new(j, "runs", ints_json(m->nouter, m->outer));
		json_object_set_new(j, "run_bytes", json_integer((json_int_t)m->run_bytes));
		json_object_set_new(j, "start_s", json_real(m->start));
		json_object_set_new(j, "end_s", json_real(m->end));
		json_array_append_new(mv, j);
	}
	json_object_set_new(root, "moves", mv);
	return root;
}

/* Copies move m's runs from src (a buffer's values, element i at byte base + z i) into dst. */
static void run_copy(const Move *m, RtTensor *dst, int64_t dbase, const RtTensor *src, int64_t sbase, int64_t z,
		     int64_t src_off, int64_t *written)
{
	size_t w = rt_dtypes[dst->dtype].storage == S_F32 ? 4 : 8;
	int64_t idx[RT_MAX_RANK] = { 0 }, runs = 1;
	for (int i = 0; i < m->nouter; i++)
		runs *= m->outer[i];
	for (int64_t r = 0; r < runs; r++) {
		int64_t so = src_off - sbase, dof = m->dst_off - dbase;
		for (int i = 0; i < m->nouter; i++)
			so += idx[i] * m->src_str[i], dof += idx[i] * m->dst_str[i];
		memcpy((char *)dst->data + (size_t)(dof / z) * w, (const char *)src->data + (size_t)(so / z) * w,
		       (size_t)(m->run_bytes / z) * w);
		*written += m->run_bytes / z;
		for (int i = m->nouter - 1; i >= 0; i--) {
			if (++idx[i] < m->outer[i])
				break;
			idx[i] = 0;
		}
	}
}

/* --apply: NEW's state built from the moves over OLD's buffers (read from checkpoint ck). */
static int apply(Ctx *c, const char *ck, const char *out)
{
	RtError e = { 0 };
	RtCkpt in;
	if (rt_ckpt_read(ck, &in, &e) < 0) {
		drv_report(e.msg);
		return -1;
	}
	Side *o = c->o, *n = c->n;
	RtTensor *ov = calloc((size_t)o->n + 1, sizeof *ov), *nv = calloc((size_t)n->n + 1, sizeof *nv);
	int64_t *got = calloc((size_t)n->n + 1, sizeof *got);
	RtCkptPut *put = calloc((size_t)n->n + 1, sizeof *put);
	char (*files)[300] = calloc((size_t)n->n + 1, sizeof *files);
	int rc = ov && nv && got && put && files ? 0 : rt_errorf(&e, RT_ENOMEM, "out of memory"), np = 0;
	for (int i = 0; rc == 0 && i < n->n; i++)
		if (n->s[i].state)
			rc = rt_tensor_alloc(&nv[i], n->s[i].dtype, n->s[i].rank, n->s[i].box.ext, &e);
	for (int k = 0; rc == 0 && k < c->nmv; k++) {
		const Move *m = &c->mv[k];
		const RtPlanSlice *x = &n->s[m->tensor];
		int64_t z = elem_bytes(&n->p->buffers[x->buffer]), dbase = n->p->buffers[x->buffer].offset;
		if (m->src >= 0) {
			const RtPlanSlice *y = &o->s[m->src];
			if (!ov[m->src].data &&
			    (rc = rt_ckpt_region(&in, y->name, y->dtype, y->rank, y->full, &y->box, &ov[m->src], &e)) < 0)
				break;
			run_copy(m, &nv[m->tensor], dbase, &ov[m->src], o->p->buffers[y->buffer].offset, z, m->src_off,
				 &got[m->tensor]);
		} else {      /* from storage: the region itself, laid out as a box of its own */
			RtTensor t;
			if ((rc = rt_ckpt_region(&in, x->name, x->dtype, x->rank, x->full, &m->r, &t, &e)) < 0)
				break;
			Move local = *m;
			RtBox sa = m->r;
			describe(&local, &sa, 0, &x->box, dbase, z);
			run_copy(&local, &nv[m->tensor], dbase, &t, 0, z, local.src_off, &got[m->tensor]);
			rt_tensor_free(&t);
		}
	}
	for (int i = 0; rc == 0 && i < n->n; i++) {
		const RtPlanSlice *x = &n->s[i];
		if (!x->state)
			continue;
		if (got[i] != rt_box_volume(&x->box)) {
			rc = rt_errorf(&e, RT_EINTERNAL, "aicc: internal error: the moves write %" PRId64 " of the %" PRId64
				       " elements of '%s'", got[i], rt_box_volume(&x->box), n->p->buffers[x->buffer].name);
			break;
		}
		int dup = 0;
		for (int j = 0; j < np && !dup; j++) {
			dup = strcmp(put[j].name, x->name) == 0;
			for (int a = 0; dup && a < x->rank; a++)
				dup = put[j].box.off[a] == x->box.off[a] && put[j].box.ext[a] == x->box.ext[a];
		}
		if (dup)
			continue;
		snprintf(files[np], sizeof files[np], "%s.safetensors", n->p->devices[x->device].name);
		put[np] = (RtCkptPut){ .name = x->name, .file = files[np], .rank = x->rank, .box = x->box, .t = &nv[i] };
		memcpy(put[np].full, x->full, sizeof put[np].full);
		np++;
	}
	int64_t bytes = 0;
	if (rc == 0)
		rc = rt_ckpt_write(out, put, np, &bytes, &e);
	if (rc < 0)
		drv_report(e.msg);
	else
		printf("applied        %d moves to %s: %s written, %d slices\n", c->nmv, ck, out, np);
	for (int i = 0; ov && i < o->n; i++)
		rt_tensor_free(&ov[i]);
	for (int i = 0; nv && i < n->n; i++)
		rt_tensor_free(&nv[i]);
	free(ov);
	free(nv);
	free(got);
	free(put);
	free(files);
	rt_ckpt_free(&in);
	return rc;
}


static int reshard(Side *o, Side *n, const char *machine, const char *out, const char *ck, const char *save)
{
	Machine *m = machine_load(machine ? machine : n->p->machine, stderr);
	if (!m) {
		drv_error("cannot load machine '%s' (give --machine NAME|FILE)", machine ? machine : n->p->machine);
		return -1;
	}
	Ctx c = { .o = o, .n = n };
	int rc = topology(m, &c.t);
	c.nports = 6 * PORTK;
	c.port_bytes = calloc((size_t)c.nports, sizeof *c.port_bytes);
	c.alive = calloc((size_t)o->p->ndevices + 1, sizeof *c.alive);
	char lost[4096] = "";
	size_t kl = 0;
	int nlost = 0;
	if (rc == 0 && (!c.port_bytes || !c.alive)) {
		drv_error("out of memory");
		rc = -1;
	}
	for (int d = 0; rc == 0 && d < o->p->ndevices; d++) {
		const char *nm = o->p->devices[d].name;
		if (dev_index(nm) >= PORTK) {
			drv_error("device '%s': index beyond %d", nm, PORTK);
			rc = -1;
		}
		if ((c.alive[d] = find_device(n->p, nm)) < 0) {
			nlost++;
			if (kl + strlen(nm) + 3 < sizeof lost)
				kl += (size_t)snprintf(lost + kl, sizeof lost - kl, "%s%s", kl ? ", " : "", nm);
		}
	}
	for (int d = 0; rc == 0 && d < n->p->ndevices; d++)
		if (dev_index(n->p->devices[d].name) >= PORTK) {
			drv_error("device '%s': index beyond %d", n->p->devices[d].name, PORTK);
			rc = -1;
		}
	if (rc == 0)
		rc = same_model(o, n);
	for (int i = 0; rc == 0 && i < n->n; i++)
		if (n->s[i].state)
			rc = plan_slice(&c, i);
	int *order = rc == 0 ? calloc((size_t)c.nmv + 1, sizeof *order) : NULL;
	double bound = 0, span = 0, bytes[L_COUNT] = { 0 }, state = 0, opt = 0;
	int busiest = -1;
	if (rc == 0 && !order) {
		drv_error("out of memory");
		rc = -1;
	}
	if (rc == 0 && (span = schedule(&c, order, &bound, &busiest)) < 0) {
		drv_error("out of memory");
		rc = -1;
	}
	for (int i = 0; rc == 0 && i < c.nmv; i++)
		bytes[c.mv[i].link] += (double)c.mv[i].bytes;
	int ntensors = 0;
	for (int i = 0; rc == 0 && i < n->n; i++) {
		const RtPlanSlice *x = &n->s[i];
		if (!x->state || old_first(n, x->name) != i)
			continue;
		ntensors++;
		int64_t v = elem_bytes(&n->p->buffers[x->buffer]);
		for (int a = 0; a < x->rank; a++)
			v *= x->full[a];
		state += (double)v;
		if (strcmp(kind_of(x->name), "optimizer") == 0)
			opt += (double)v;
	}
	if (rc == 0) {
		char a[64], b[64], d[64], f[64];
		printf("reshard        %s (%d devices) -> %s (%d devices): %d lost%s%s%s\n", o->path, o->p->ndevices, n->path,
		       n->p->ndevices, nlost, nlost ? " (" : "", lost, nlost ? ")" : "");
		printf("state          %d tensors, %s (weights %s, optimizer state %s)\n", ntensors, rt_si_str(state, "B", a, sizeof a),
		       rt_si_str(state - opt, "B", b, sizeof b), rt_si_str(opt, "B", d, sizeof d));
		printf("moves          %d: kept on the device %s, NVLink %s, network %s, from %s %s\n", c.nmv,
		       rt_si_str(bytes[L_LOCAL], "B", a, sizeof a), rt_si_str(bytes[L_NVLINK], "B", b, sizeof b),
		       rt_si_str(bytes[L_NET], "B", d, sizeof d), c.t.sto_id ? c.t.sto_id : "storage",
		       rt_si_str(bytes[L_STORAGE], "B", f, sizeof f));
		printf("links          %s %s/s + %.3g us one way (domains of %d); ", c.t.nvl_id, rt_si_str(c.t.nvl_bw, "B", a, sizeof a),
		       c.t.nvl_lat * 1e6, c.t.domain);
		if (c.t.net_id)
			printf("%s %s/s + %.3g us; ", c.t.net_id, rt_si_str(c.t.net_bw, "B", b, sizeof b), c.t.net_lat * 1e6);
		else
			printf("no network; ");
		if (c.t.sto_id)
			printf("%s %s/s per server\n", c.t.sto_id, rt_si_str(c.t.sto_bw, "B", d, sizeof d));
		else
			printf("no storage\n");
		char pn[256];
		port_name(&c, busiest, pn, sizeof pn);
		printf("predicted      %.4g s (ports serialised, longest move first); lower bound %.4g s, the busiest port: %s\n",
		       span, bound, pn);
	}
	if (rc == 0 && ck)
		rc = apply(&c, ck, save);
	if (rc == 0 && out) {
		RtOutFile f;
		RtError e = { 0 };
		json_t *j = moves_json(&c, order, span, bound, bytes, lost);
		if (!j || rt_out_open(&f, out, &e) < 0)
			rc = -1;
		else if (json_dumpf(j, f.f, JSON_INDENT(1) | JSON_PRESERVE_ORDER) < 0 || fputc('\n', f.f) == EOF) {
			rt_out_abort(&f);
			rt_errorf(&e, RT_EUSER, "aicc: error: writing '%s'", out);
			rc = -1;
		} else
			rc = rt_out_commit(&f, &e);
		json_decref(j);
		if (rc < 0)
			drv_report(e.msg[0] ? e.msg : "out of memory");
	}
	free(order);
	free(c.mv);
	free(c.port_bytes);
	free(c.alive);
	machine_free(m);
	return rc;
}

int cmd_reshard(int argc, char **argv)
{
	const char *paths[2] = { 0 }, *out = NULL, *machine = NULL, *ck = NULL, *save = NULL;
	int np = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			return EXIT_OK;
		}
		if ((r = opt_value(argc, argv, &i, "-o", &out)) || (r = opt_value(argc, argv, &i, "--machine", &machine)) ||
		    (r = opt_value(argc, argv, &i, "--apply", &ck)) ||
		    (r = opt_value(argc, argv, &i, "--save-checkpoint", &save))) {
			if (r < 0)
				return EXIT_USER;
			continue;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			drv_error("unknown option '%s' (see aicc reshard --help)", argv[i]);
			return EXIT_USER;
		}
		if (np == 2) {
			drv_error("more than two plans given ('%s')", argv[i]);
			return EXIT_USER;
		}
		paths[np++] = argv[i];
	}
	if (np < 2) {
		drv_error("reshard needs two plans: aicc reshard OLD.aip NEW.aip (see aicc reshard --help)");
		return EXIT_USER;
	}
	if (!ck != !save) {
		drv_error("--apply and --save-checkpoint go together");
		return EXIT_USER;
	}
	Side o = { 0 }, n = { 0 };
	int rc = load_side(paths[0], &o) < 0 || load_side(paths[1], &n) < 0 ? -1 : 0;
	if (rc == 0)
		rc = reshard(&o, &n, machine, out, ck, save);
	free_side(&o);
	free_side(&n);
	return rc < 0 ? EXIT_USER : EXIT_OK;
}
