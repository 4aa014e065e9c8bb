/* targets/target.c: the target table (expanded from targets/targets.def), cost-hook
 * registration, and machine descriptions (targets/machine.h) turned into plan entities: the
 * plan records, per device, the peak FLOP/s (the dense bf16 matrix peak where the device has
 * one, else f32: the figure reports compare achieved FLOP/s against) and at f64, a fixed
 * per-instruction overhead,
 * and its device-wide memory spaces with capacity and bandwidth (times the machine's achievable
 * efficiency when it states one), so the runtime times plans without the XML. */
#include "ir/suggest.h"
#include "targets/target.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TARGET(id) extern const Target tgt_##id;
#include "targets/targets.def"
#undef TARGET
const Target *const tgt_targets[] = {
#define TARGET(id) &tgt_##id,
#include "targets/targets.def"
#undef TARGET
};
const int tgt_ntargets = (int)(sizeof tgt_targets / sizeof tgt_targets[0]);

void tgt_suggest(const char *name, char *buf, size_t n)
{
	const char *names[64];
	int k = 0;
	for (int i = 0; i < tgt_ntargets && k < 64; i++)
		names[k++] = tgt_targets[i]->name;
	diag_suggest(buf, n, name, names, k);
}

const Target *tgt_find(const char *name)
{
	for (int i = 0; i < tgt_ntargets; i++)
		if (strcmp(tgt_targets[i]->name, name) == 0)
			return tgt_targets[i];
	return NULL;
}

const Target *tgt_for_kind(DevKind k)
{
	for (int i = 0; i < tgt_ntargets; i++)
		if (tgt_targets[i]->kind == (int)k)
			return tgt_targets[i];
	return tgt_find("reference");
}

void tgt_register_costs(void)
{
	for (int i = 0; i < tgt_ntargets; i++)
		rt_cost_register(tgt_targets[i]->name, tgt_targets[i]->cost);
}

/* The fixed cost of one instruction on d: its primary unit's pipeline latency if the machine
 * gives one, else the latency of its main memory (a kernel's first access), else 0. */
static double device_overhead(const Device *d, const MemSpace *main)
{
	if (d->nunits > 0 && num_has(&d->units[0].latency))
		return d->units[0].latency.v;
	return main && num_has(&main->latency) ? main->latency.v : 0;
}

/* One plan device (with its spaces and compute unit) for machine device d. */
static int describe_device(Plan *p, const Device *d, RtError *e)
{
	const MemSpace *main = NULL;
	for (int i = 0; i < d->nmems; i++)
		if (d->mems[i].scope == SCOPE_DEVICE && num_has(&d->mems[i].bandwidth) &&
		    (!main || d->mems[i].capacity.v > main->capacity.v))
			main = &d->mems[i];
	/* the matrix unit's 16-bit peak (bf16, else f16: Groq's TSP), else its narrowest format's
	 * (an FP8-only LPU), never only the vector pipe's when a matrix unit exists */
	double peak = fmax(num_has(&d->peak[DT_BF16]) ? d->peak[DT_BF16].v : 0, num_has(&d->peak[DT_F16]) ? d->peak[DT_F16].v : 0);
	for (int k = 0; peak <= 0 && k < DT_COUNT; k++)
		if (num_has(&d->peak[k]) && d->peak[k].v > peak)
			peak = d->peak[k].v;
	PlanDevice pd = { .name = (char *)d->id, .kind = (char *)devkind_name(d->kind),
			  .peak_flops = fmax(peak, dev_peak(d, DT_F32)), .peak_flops_f64 = dev_peak(d, DT_F64),
			  .overhead_s = device_overhead(d, main), .clock_hz = d->clock.v };
	int dev = plan_add_device(p, &pd, e);
	if (dev < 0)
		return -1;
	for (int i = 0; i < d->nmems; i++) {
		const MemSpace *ms = &d->mems[i];
		if (ms->scope != SCOPE_DEVICE || !num_has(&ms->bandwidth))
			continue;
		char name[128];
		snprintf(name, sizeof name, "%s.%s", d->id, ms->name);
		PlanSpace sp = { .name = name, .device = dev, .capacity = (int64_t)mem_total_capacity(d, ms),
				 .bandwidth = ms->bandwidth.v * (num_has(&ms->efficiency) ? ms->efficiency.v : 1) };
		if (plan_add_space(p, &sp, e) < 0)
			return -1;
	}
	char uname[128];
	snprintf(uname, sizeof uname, "%s.core", d->id);
	PlanUnit u = { .name = uname, .kind = "compute", .device = dev };
	return plan_add_unit(p, &u, e) < 0 ? -1 : 0;
}

/* Links between instantiated devices (one per device class), bandwidth one way. */
static int describe_links(Plan *p, const Machine *m, RtError *e)
{
	for (int i = 0; i < m->nlinks; i++) {
		const Link *l = &m->links[i];
		int a = plan_find_device(p, l->from->id), b = plan_find_device(p, l->to->id);
		if (a < 0 || b < 0 || a == b)
			continue;
		PlanLink pl = { .name = (char *)l->id, .src = a, .dst = b, .bandwidth = link_oneway_bw(l),
				.latency_s = l->latency.v };
		if (plan_add_link(p, &pl, e) < 0)
			return -1;
	}
	return 0;
}

int tgt_machine_load(const char *name, const char *const *sets, int nsets, TgtMachine *tm, RtError *e)
{
	memset(tm, 0, sizeof *tm);
	if (!(tm->m = machine_load(name, stderr)))
		return rt_errorf(e, RT_EUSER, "aicc: error: cannot load machine '%s'", name);
	for (int i = 0; i < nsets; i++) {
		char err[512], *eq = strchr(sets[i], '='), path[256];
		if (!eq || (size_t)(eq - sets[i]) >= sizeof path) {
			tgt_machine_free(tm);
			return rt_errorf(e, RT_EUSER, "aicc: error: --set expects key=value, got '%s'", sets[i]);
		}
		snprintf(path, sizeof path, "%.*s", (int)(eq - sets[i]), sets[i]);
		if (machine_set(tm->m, path, eq + 1, err, sizeof err) < 0) {
			tgt_machine_free(tm);
			return rt_errorf(e, RT_EUSER, "aicc: error: %s", err);     /* err names the key */
		}
	}
	uint64_t hash = strtoull(tm->m->hash, NULL, 16);
	int rc = (tm->desc = plan_new("machine", tm->m->name, hash, e)) ? 0 : -1;
	for (int i = 0; rc == 0 && i < tm->m->ndevs; i++)
		if (!tm->m->devs[i].is_host)
			rc = describe_device(tm->desc, &tm->m->devs[i], e);
	if (rc == 0)
		rc = describe_links(tm->desc, tm->m, e);
	if (rc < 0)
		tgt_machine_free(tm);
	return rc;
}

void tgt_machine_free(TgtMachine *m)
{
	plan_free(m->desc);
	if (m->m)
		machine_free(m->m);
	m->desc = NULL;
	m->m = NULL;
}

int tgt_machine_copy(const TgtMachine *m, Plan *p, RtError *e)
{
	const Plan *d = m->desc;
	for (int i = 0; i < d->ndevices; i++)
		if (plan_add_device(p, &d->devices[i], e) < 0)
			return -1;
	for (int i = 0; i < d->nspaces; i++)
		if (plan_add_space(p, &d->spaces[i], e) < 0)
			return -1;
	for (int i = 0; i < d->nunits; i++)
		if (plan_add_unit(p, &d->units[i], e) < 0)
			return -1;
	for (int i = 0; i < d->nlinks; i++)
		if (plan_add_link(p, &d->links[i], e) < 0)
			return -1;
	return 0;
}

/* 1 when machines a and b have the same accelerators: their non-host devices' kinds and
 * architectures, in file order. */
static int same_accelerators(const Machine *a, const Machine *b)
{
	int i = 0, j = 0;
	for (;;) {
		while (i < a->ndevs && a->devs[i].is_host)
			i++;
		while (j < b->ndevs && b->devs[j].is_host)
			j++;
		if (i == a->ndevs || j == b->ndevs)
			return i == a->ndevs && j == b->ndevs;
		const Device *x = &a->devs[i++], *y = &b->devs[j++];
		if (x->kind != y->kind || !x->arch || !y->arch || strcmp(x->arch, y->arch))
			return 0;
	}
}

const Target *tgt_for_machine(const Machine *m, char *why, size_t n)
{
	if (why && n)
		why[0] = '\0';
	for (int i = 0; i < tgt_ntargets; i++)   /* the machine a target is written for */
		if (!strcmp(tgt_targets[i]->default_machine, m->name))
			return tgt_targets[i];
	const Device *d = NULL;
	for (int i = 0; i < m->ndevs && !d; i++)
		if (!m->devs[i].is_host)
			d = &m->devs[i];
	if (!d)
		return NULL;
	const Target *kind[16];
	int nk = 0;
	for (int i = 0; i < tgt_ntargets && nk < 16; i++)
		if (tgt_targets[i]->kind == (int)d->kind)
			kind[nk++] = tgt_targets[i];
	const Target *pick = nk == 1 ? kind[0] : NULL;
	for (int i = 0; i < nk && nk > 1; i++) {   /* several of the kind: the one whose machine it is */
		Machine *dm = machine_load(kind[i]->default_machine, NULL);
		int same = dm && same_accelerators(m, dm);
		machine_free(dm);
		if (same && pick) {
			pick = NULL;
			break;
		}
		if (same)
			pick = kind[i];
	}
	if (pick && why)
		snprintf(why, n, "its %s devices are %s", d->id, d->arch ? d->arch : devkind_name(d->kind));
	return pick;
}

const Device *tgt_plan_device(const Machine *m, const char *name)
{
	const Device *md = machine_device(m, name);
	for (int i = 0; i < m->ndevs && !md; i++) {   /* "gpu0": instance 0 of class "gpu" */
		size_t n = m->devs[i].id ? strlen(m->devs[i].id) : 0;
		if (!m->devs[i].is_host && n && !strncmp(name, m->devs[i].id, n) &&
		    strspn(name + n, "0123456789") == strlen(name + n))
			md = &m->devs[i];
	}
	return md;
}

void tgt_record_peaks(Plan *p, const Machine *m)
{
	for (int i = 0; i < p->ndevices; i++) {
		PlanDevice *pd = &p->devices[i];
		const Device *d = tgt_plan_device(m, pd->name);
		double own = d ? fmax(dev_peak(d, DT_BF16), dev_peak(d, DT_F32)) : 0;
		/* a pool (vera-rubin's GPU pool: one plan device for n chips) has n x the chip's
		 * peak, and n x each format's; a peak already at another format (the LPU pool's,
		 * at its FP8) is left as it is */
		double chips = own > 0 ? round(pd->peak_flops / own) : 0;
		if (!d || !(chips >= 1) || fabs(pd->peak_flops - chips * own) > 1e-9 * pd->peak_flops)
			continue;
		double fl[DT_COUNT + 1] = { 0 }, total = 0, time = 0;   /* [DT_COUNT]: no MMA format */
		for (int k = 0; k < p->nstreams; k++)
			for (int j = 0; p->streams[k].device == i && j < p->streams[k].nins; j++) {
				const PlanInstr *in = &p->streams[k].ins[j];
				if (in->kind != PI_KERNEL || !(in->flops > 0))
					continue;
				DType dt = in->opts.mma_in;
				double pk = dt > DT_INVALID && dt < DT_COUNT && num_has(&d->peak[dt]) ? chips * d->peak[dt].v : 0;
				fl[pk > 0 ? dt : DT_COUNT] += in->flops;
				total += in->flops;
				time += in->flops / (pk > 0 ? pk : pd->peak_flops);
			}
		if (!(total > 0) || fabs(total / time - pd->peak_flops) <= 1e-6 * pd->peak_flops)
			continue;
		pd->peak_work = total / time;
		int top[3] = { -1, -1, -1 };
		for (int k = 0; k <= DT_COUNT; k++)
			for (int r = 0; r < 3; r++)
				if (fl[k] > 0 && (top[r] < 0 || fl[k] > fl[top[r]])) {
					for (int q = 2; q > r; q--)
						top[q] = top[q - 1];
					top[r] = k;
					break;
				}
		size_t n = 0;
		for (int r = 0; r < 3 && top[r] >= 0 && n < sizeof pd->peak_fmt; r++) {
			const char *nm = top[r] == DT_COUNT ? "other" : rt_dtype_name((DType)top[r]);
			double share = 100 * fl[top[r]] / total;
			if (r == 0 && share >= 99.5) {
				snprintf(pd->peak_fmt, sizeof pd->peak_fmt, "%s", nm);
				break;
			}
			if (share < 0.5)
				break;
			n += (size_t)snprintf(pd->peak_fmt + n, sizeof pd->peak_fmt - n, "%s%s %.0f%%", r ? ", " : "", nm, share);
		}
	}
}
