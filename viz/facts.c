/* viz/facts.c: what a plan records about each instruction, read the same way by the pictures and
 * by `aicc explain`: attributes by name (operator attributes, where passes record theirs, then
 * target attributes), the precision an instruction computes in, what bounds its time, and the
 * call instance a flat name belongs to; plus the byte and time formats both print.  Nothing here
 * invents a fact: a missing attribute is NULL, and the caller says "not recorded". */
#include "viz/viz.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *viz_attr(const PlanInstr *in, const char *name, char *buf, size_t n)
{
	const Attr *a = rt_attr_find(&in->attrs, name);
	if (a) {
		switch (a->kind) {
		case ATTR_STRING: return a->s;
		case ATTR_INT: snprintf(buf, n, "%lld", (long long)a->i); return buf;
		case ATTR_FLOAT: snprintf(buf, n, "%.17g", a->f); return buf;
		default: break;   /* lists are not facts we print */
		}
	}
	for (int i = 0; i < in->ntile; i++)
		if (strcmp(in->tile[i].key, name) == 0)
			return in->tile[i].val;
	return NULL;
}

const char *viz_precision(const Plan *p, const PlanInstr *in, char *buf, size_t n)
{
	const char *s = viz_attr(in, "precision", buf, n);
	if (s)
		return s;
	if (in->kind == PI_KERNEL && in->opts.mma_in != DT_INVALID && in->opts.mma_in > 0)
		return rt_dtype_name(in->opts.mma_in);
	int b = in->nout > 0 ? in->out[0] : -1;
	return b >= 0 ? rt_dtype_name(p->buffers[b].dtype) : "-";
}

const char *viz_bound(const Plan *p, int stream, const PlanInstr *in, int *from_target)
{
	static const char *const known[] = { "compute", "memory", "overhead", "sfu", "link", "latency",
					     "tensor", "vector", "scalar", "dma" };
	char buf[64];
	const char *s = viz_attr(in, "bound", buf, sizeof buf);
	*from_target = 0;
	if (s) {
		*from_target = 1;
		for (size_t i = 0; i < sizeof known / sizeof *known; i++)
			if (strcmp(s, known[i]) == 0)
				return known[i];
		return s != buf ? s : "other";   /* a word the target chose (plan-owned) */
	}
	if (in->kind == PI_COPY || in->kind == PI_COLLECTIVE)
		return in->link >= 0 ? "link" : "memory";
	if (in->kind != PI_KERNEL)
		return "-";
	const PlanDevice *d = &p->devices[p->streams[stream].device];
	double peak = in->opts.accum_f64 && d->peak_flops_f64 > 0 ? d->peak_flops_f64 : d->peak_flops;
	double *bytes = calloc((size_t)p->nspaces + 1, sizeof *bytes), mem = 0;
	if (bytes) {
		rt_instr_bytes(p, in, bytes);
		for (int i = 0; i < p->nspaces; i++)
			mem = fmax(mem, bytes[i] / p->spaces[i].bandwidth);
		free(bytes);
	}
	double comp = in->flops / peak;
	if (d->overhead_s >= comp && d->overhead_s >= mem)
		return "overhead";
	return comp >= mem ? "compute" : "memory";
}

const char *viz_bound_family(const char *b)
{
	static const struct { const char *family, *names[14]; } fam[] = {
		{ "compute", { "compute", "tensor", "vector", "scalar", "sfu", "mma", "fma", "mxu", "vpu", "mxm", "vxm", "sxm", "alu" } },
		{ "memory", { "memory", "dma", "hbm", "dram", "sram", "vmem", "smem", "l2", "tma", "mem" } },
		{ "link", { "link", "ici", "nvlink", "c2c" } },
		{ "overhead", { "overhead", "latency", "launch", "fixed" } },
	};
	for (size_t f = 0; f < sizeof fam / sizeof *fam; f++)
		for (int k = 0; k < 14 && fam[f].names[k]; k++)
			if (!strcmp(b, fam[f].names[k]))
				return fam[f].family;
	return "other";
}

const char *const viz_bound_families[VIZ_NFAM] = { "compute", "memory", "link", "overhead", "other" };

void viz_bound_shares(const Plan *p, const RtTiming *t, double *fam, const char **top)
{
	enum { MAXW = 32 };
	const char *word[MAXW];
	double tw[MAXW] = { 0 };
	int nw = 0;
	for (int k = 0; k < VIZ_NFAM; k++)
		fam[k] = 0, top[k] = NULL;
	for (int i = 0; i < t->nspans; i++) {
		const RtSpan *sp = &t->spans[i];
		const PlanInstr *in = &p->streams[sp->stream].ins[sp->index];
		int ft, w = 0;
		const char *b = viz_bound(p, sp->stream, in, &ft);
		if (!strcmp(b, "-"))
			continue;
		while (w < nw && strcmp(word[w], b))
			w++;
		if (w == nw && nw < MAXW)
			word[nw++] = b;
		if (w < nw)
			tw[w] += sp->end - sp->start;
	}
	for (int w = 0; w < nw; w++)
		for (int k = 0; k < VIZ_NFAM; k++)
			if (!strcmp(viz_bound_family(word[w]), viz_bound_families[k])) {
				fam[k] += tw[w];
				int best = -1;
				for (int j = 0; j < nw && top[k]; j++)
					if (!strcmp(word[j], top[k]))
						best = j;
				if (!top[k] || tw[w] > tw[best])
					top[k] = word[w];
			}
}

const char *viz_instr_name(const Plan *p, int stream, int index, char *buf, size_t n)
{
	const PlanInstr *in = &p->streams[stream].ins[index];
	if (in->node)
		return in->node;
	snprintf(buf, n, "%s#%s.%d", in->kind == PI_COLLECTIVE ? plan_coll_names[in->coll] : plan_instr_names[in->kind],
		 p->streams[stream].name, index);
	return buf;
}

void viz_instance_of(const char *name, char *inst, char *callee, size_t n)
{
	const char *slash = strrchr(name, '/'), *hash = strchr(name, '#');
	inst[0] = callee[0] = 0;
	if (!slash || !hash || hash > slash)
		return;
	size_t li = (size_t)(slash - name), lc = (size_t)(hash - name);
	snprintf(inst, n, "%.*s", (int)(li < n ? li : n - 1), name);
	snprintf(callee, n, "%.*s", (int)(lc < n ? lc : n - 1), name);
}

const char *viz_op_class(const PlanInstr *in)
{
	static const char *const cls[] = { [OC_vector] = "vector", [OC_matrix] = "matrix", [OC_move] = "move" };
	if (in->kind == PI_COPY || in->kind == PI_COLLECTIVE)
		return "link";
	if (in->kind != PI_KERNEL || (int)in->op < 0 || (int)in->op >= (int)OP_COUNT)
		return "-";
	_Static_assert((int)RT_OP_COUNT == (int)OP_COUNT, "plan ops and IR ops are both ops.def");
	return cls[ir_ops[in->op].cls];
}

double viz_fixed_s(const Plan *p, int stream, const PlanInstr *in, double time_s)
{
	char buf[64];
	const char *f = viz_attr(in, "fixed_us", buf, sizeof buf);
	double fixed = 0;
	if (f) {   /* less its HBM traffic (t.fill_us: a pipeline's first load, its last stores) */
		fixed = strtod(f, NULL) * 1e-6;
		if ((f = viz_attr(in, "fill_us", buf, sizeof buf)) != NULL)
			fixed -= strtod(f, NULL) * 1e-6;
	} else if (in->kind == PI_KERNEL)
		fixed = p->devices[p->streams[stream].device].overhead_s;
	else if ((in->kind == PI_COPY || in->kind == PI_COLLECTIVE) && in->link >= 0 && in->link < p->nlinks)
		fixed = p->links[in->link].latency_s;
	if (!(fixed > 0))
		return 0;
	return time_s >= 0 && fixed > time_s ? time_s : fixed;
}

void viz_range_str(const char *const *names, int n, const unsigned char *in, char *buf, size_t len)
{
	int cnt = 0, first = -1, last = -1, gaps = 0;
	for (int i = 0; i < n; i++)
		if (in[i]) {
			gaps += last >= 0 && i != last + 1;
			if (first < 0)
				first = i;
			last = i, cnt++;
		}
	if (cnt <= 1)
		snprintf(buf, len, "%s", first >= 0 ? names[first] : "");
	else if (cnt == 2)
		snprintf(buf, len, "%s, %s", names[first], names[last]);
	else
		snprintf(buf, len, "%s%s%s (%d devices)", names[first], gaps ? " ... " : "..", names[last], cnt);
}

/* Whether s starts a shard marker component: tp/ep/cols/rows/shard and digits, ending at '.',
 * '@', '/' or the end; its length, else 0. */
static size_t shard_marker(const char *s)
{
	static const char *const words[] = { "tp", "ep", "cols", "rows", "shard" };
	for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
		size_t l = strlen(words[w]), d = 0;
		if (strncmp(s, words[w], l) != 0)
			continue;
		while (s[l + d] >= '0' && s[l + d] <= '9')
			d++;
		if (d && (!s[l + d] || strchr(".@/", s[l + d])))
			return l + d;
	}
	return 0;
}

int viz_shard_key(const char *name, char *buf, size_t n)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	size_t o = 0;
	int marked = 0;
	for (const char *c = name; *c && o + 1 < n;) {
		size_t m;
		if (c >= base && *c == '@') {   /* a value's copy on another chip: name@lpu3 */
			marked = 1;
			break;
		}
		if (c > base && strncmp(c, ".to.", 4) == 0 && c[4] && c[4] != '.') {   /* a Transfer: h.to.gpu3.264 */
			c += 4 + strcspn(c + 4, ".@/");
			while (c[0] == '.' && c[1] >= '0' && c[1] <= '9' && strspn(c + 1, "0123456789") == strcspn(c + 1, ".@/"))
				c += 1 + strspn(c + 1, "0123456789");
			marked = 1;
			continue;
		}
		if (c > base && *c == '.' && (m = shard_marker(c + 1))) {
			c += 1 + m;
			while (c[0] == '.' && c[1] >= '0' && c[1] <= '9') {   /* its fresh-name counter */
				const char *d = c + 1;
				while (*d >= '0' && *d <= '9')
					d++;
				if (*d && *d != '.' && *d != '@')
					break;
				c = d;
			}
			marked = 1;
			continue;
		}
		buf[o++] = *c++;
	}
	buf[o] = 0;
	return marked;
}

size_t viz_hash(const char *s)
{
	size_t h = 1469598103934665603ull;   /* FNV-1a, 64-bit offset basis and prime */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

const char *viz_bytes_str(double b, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	while (b >= 1024 && u < 4)
		b /= 1024, u++;
	if (u == 0)
		snprintf(buf, n, "%.0f B", b);
	else
		snprintf(buf, n, "%.*f %s", b < 10 ? 2 : b < 100 ? 1 : 0, b, unit[u]);
	return buf;
}

int viz_pool_chips(const Plan *p, int dev)
{
	int64_t c = 1;
	for (int s = 0; s < p->nstreams; s++)
		if (p->streams[s].device == dev)
			for (int i = 0; i < p->streams[s].nins; i++) {
				int64_t k = rt_attr_int(&p->streams[s].ins[i].attrs, "pool_size", 1);
				if (k > c && k < 1 << 30)
					c = k;
			}
	return (int)c;
}

const char *viz_time_str(double s, char *buf, size_t n)
{
	if (s < 0)
		snprintf(buf, n, "-");
	else if (s >= 1)
		snprintf(buf, n, "%.3g s", s);
	else if (s >= 1e-3)
		snprintf(buf, n, "%.3g ms", s * 1e3);
	else if (s >= 1e-6)
		snprintf(buf, n, "%.3g us", s * 1e6);
	else if (s >= 1e-9 || s == 0)
		snprintf(buf, n, "%.3g ns", s * 1e9);
	else
		snprintf(buf, n, "%.3g ps", s * 1e12);
	return buf;
}
