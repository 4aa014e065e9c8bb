/* targets/vera-rubin/lower.c: the vera-rubin target: attention on a pool of Rubin GPUs, FFN/MoE on a
 * pool of Groq 3 LPUs, activations crossing every layer (hardware.md §3.7, backends.md §4).
 *
 * Input: a graph the disaggregate pass (passes/disaggregate.c) placed: `@device(gpu0)` nodes on
 * the GPU pool, `@device(lpu0)` nodes on the LPU pool, a Transfer at every crossing, micro-batches
 * already cut into the layer graphs, and on each node `pool_chips`, the chips of its pool that
 * work on it.  Output: a plan with one device per pool (the machine's `gpu` and `lpu` classes;
 * a pool's chips work tensor-parallel on each node, so a pool is priced as pool_chips chips and
 * its memory space holds the whole pool: HBM of the GPU pool, SRAM of every LPU of the
 * machine), one stream per pool and the GPU-LPU link.
 *
 * The GPU side is the Blackwell-style walk (targets/gpu/lower.c with targets/blackwell's tcgen05
 * and FA4 hooks) on Rubin's numbers: it lowers every node to one kernel on one stream, in graph
 * order.  This file then moves the LPU pool's kernels onto the LPU stream (their outputs and the
 * weights only they read into LPU SRAM), turns each Transfer into a copy over the GPU-LPU link on
 * its destination's stream, and adds an event wherever a stream reads what the other produced, so
 * both pools run concurrently and the micro-batches ping-pong.  LPU kernels are priced by
 * vr_lpu_time (targets/vera-rubin/cost.c), their MMA operands rounded to the LPU's FP8 format.
 * A graph without placements stays a GPU-pool plan (everything on `gpu`).
 * (When the multi-device GPU walker of targets/target.h's TgtDevs contract lands, the move
 * becomes its hook for nodes placed on non-GPU instances.) */
#include "targets/vera-rubin/vr.h"

#include <stdlib.h>
#include <string.h>

int bw_gemm(const GpuArch *a, const GemmShape *s, GemmTile *t, char *why, size_t n);
void bw_attn(const GpuArch *a, const AttnShape *s, AttnTile *t);

static const GpuHooks rubin = { "vera-rubin", bw_gemm, bw_attn, 0 };

#define LPU_ALIGN 320     /* one LPU vector (hardware.md §2.15) */

typedef struct Vr {
	Plan *p;
	Flat f;
	RtError *e;
	const Device *lpu;
	const Link *c2c;     /* LPU-LPU link (the pool's all-reduce) */
	int gdev, ldev, gspace, lspace, link, gstream, lstream;
	char *on_lpu;        /* per flat node: runs on the LPU pool */
	int *prod;           /* per buffer: producing flat node, or -1 */
	int *event;          /* per flat node: event recorded after it, or -1 */
	char *waited;        /* per flat node: the other pool already waits for it */
	int nlpu;            /* LPUs in the pool (the nodes' pool_size) */
} Vr;

static int node_on_lpu(const Vr *v, int i)
{
	const char *d = v->f.nodes[i].n->annot.device;
	return d && v->lpu && strncmp(d, v->lpu->id, strlen(v->lpu->id)) == 0;
}

static void set_tile(PlanInstr *in, const char *const *kv, int n)
{
	for (int i = 0; i < in->ntile; i++) {
		rt_free(in->tile[i].key);
		rt_free(in->tile[i].val);
	}
	rt_free(in->tile);
	in->tile = rt_malloc((size_t)(n ? n : 1) * sizeof *in->tile);
	in->ntile = n;
	for (int i = 0; i < n; i++)
		in->tile[i] = (PlanKV){ rt_strdup(kv[2 * i]), rt_strdup(kv[2 * i + 1]) };
}

static int is_const(const Plan *p, int b)
{
	for (int i = 0; i < p->nconsts; i++)
		if (p->consts[i].buffer == b)
			return 1;
	return 0;
}

/* Moves buffer b into the LPU pool's SRAM (a first placement; place_buffers redoes it by live
 * range); a weight is stored at the LPU's matmul format, as the lpu target stores it. */
static void to_lpu(Vr *v, int b, int64_t *top, int weight)
{
	PlanBuffer *pb = &v->p->buffers[b];
	if (pb->space == v->lspace)
		return;
	pb->space = v->lspace;
	if (weight && rt_dtype_isfloat(pb->dtype)) {
		pb->dtype = vr_lpu_format(v->lpu);
		pb->size = rt_dtype_bytes(pb->dtype, plan_buffer_numel(pb));
	}
	pb->offset = (*top + LPU_ALIGN - 1) / LPU_ALIGN * LPU_ALIGN;
	*top = pb->offset + pb->size;
}

/* The LPU kernel's pricing, as tile attributes (kind, chips, the roofline terms). */
static void lpu_kernel(Vr *v, PlanInstr *in)
{
	int chips = (int)rt_attr_int(&in->attrs, "pool_chips", 1);
	VrLpuTime t = vr_lpu_time(v->p, v->lpu, v->c2c, in, chips);
	char c[32], s[32], k[32], f[32], all[32];
	snprintf(c, sizeof c, "%d", chips);
	snprintf(s, sizeof s, "%.4g", t.stream * 1e6);
	snprintf(k, sizeof k, "%.4g", t.compute * 1e6);
	snprintf(f, sizeof f, "%.4g", t.fixed * 1e6);
	snprintf(all, sizeof all, "%.4g", vr_lpu_total(&t) * 1e6);
	const char *kv[] = { "kind", "lpu", "chips", c, "sram_us", s, "mxm_us", k, "fixed_us", f, "time_us", all,
			     "bound", t.stream >= t.compute ? "sram" : "mxm" };
	set_tile(in, kv, 7);
	if (in->op == RT_OP_MatMul || in->op == RT_OP_Gemm || in->op == RT_OP_GroupedMatMul)
		in->opts.mma_in = DT_MXFP8;   /* the interpreter's FP8 with scales (see docs/targets-vera-rubin.md) */
}

static void copy_instr(Vr *v, PlanInstr *in)
{
	for (int i = 0; i < in->attrs.n; i++) {
		rt_free((char *)in->attrs.a[i].name);
		rt_free((char *)in->attrs.a[i].s);
		rt_free(in->attrs.a[i].ints);
		rt_free(in->attrs.a[i].floats);
	}
	rt_free(in->attrs.a);
	in->attrs.a = NULL;
	in->attrs.n = 0;
	in->kind = PI_COPY;
	in->op = RT_OP_COUNT;
	in->link = v->link;
	in->unit = -1;
	in->flops = 0;
	const char *kv[] = { "kind", "transfer" };
	set_tile(in, kv, 1);
}

static int push(PlanStream *s, const PlanInstr *in, RtError *e)
{
	if (s->nins == s->cap) {
		int cap = s->cap ? 2 * s->cap : 64;
		PlanInstr *n = rt_realloc(s->ins, (size_t)cap * sizeof *n);
		if (!n)
			return rt_errorf(e, RT_ENOMEM, "out of memory splitting the streams");
		s->ins = n;
		s->cap = cap;
	}
	s->ins[s->nins++] = *in;
	return 0;
}

/* A wait on stream s for node j's event (recorded after it on the other stream). */
static int wait_for(Vr *v, PlanStream *s, int j)
{
	if (v->event[j] < 0) {
		char name[64];
		snprintf(name, sizeof name, "ev%d", j);
		if ((v->event[j] = plan_add_event(v->p, name, v->e)) < 0)
			return -1;
	}
	PlanInstr w;
	plan_instr_init(&w, PI_WAIT);
	w.event = v->event[j];
	return push(s, &w, v->e);
}

/* Splits the one stream of the GPU walk into the GPU and LPU pools' streams. */
static int split_streams(Vr *v)
{
	Plan *p = v->p;
	PlanStream *one = &p->streams[v->gstream];
	int n = one->nins;
	if (n != v->f.nnodes)
		return rt_errorf(v->e, RT_EINTERNAL, "aicc: internal error: vera-rubin: %d kernels for %d nodes", n, v->f.nnodes);
	int64_t top = 0;
	/* buffers: LPU results, LPU-bound transfers' results, weights only the LPU reads */
	char *gpu_reads = calloc((size_t)p->nbuffers + 1, 1), *lpu_reads = calloc((size_t)p->nbuffers + 1, 1);
	if (!gpu_reads || !lpu_reads)
		return free(gpu_reads), free(lpu_reads), rt_errorf(v->e, RT_ENOMEM, "out of memory splitting the streams");
	for (int i = 0; i < n; i++) {
		int copy = v->f.nodes[i].n->op == OP_Transfer;
		for (int k = 0; k < one->ins[i].nin; k++)
			if (one->ins[i].in[k] >= 0)
				(v->on_lpu[i] && !copy ? lpu_reads : gpu_reads)[one->ins[i].in[k]] = 1;
	}
	for (int i = 0; i < n; i++)
		if (v->on_lpu[i]) {
			for (int k = 0; k < one->ins[i].nout; k++)
				to_lpu(v, one->ins[i].out[k], &top, 0);
			if (v->f.nodes[i].n->op != OP_Transfer)
				for (int k = 0; k < one->ins[i].nin; k++) {
					int b = one->ins[i].in[k];
					if (b >= 0 && v->prod[b] < 0 && lpu_reads[b] && !gpu_reads[b])
						to_lpu(v, b, &top, is_const(p, b));
				}
		}
	free(gpu_reads);
	free(lpu_reads);
	if (v->nlpu > v->lpu->count.v)
		return rt_errorf(v->e, RT_EUSER, "aicc: error: vera-rubin: the graph asks for a pool of %d LPUs but machine %s has "
				 "%.0f", v->nlpu, p->machine, v->lpu->count.v);
	p->spaces[v->lspace].capacity = (int64_t)(v->nlpu * (double)p->spaces[v->lspace].capacity);
	if (top > p->spaces[v->lspace].capacity)
		return rt_errorf(v->e, RT_EUSER, "aicc: error: vera-rubin: the LPU pool needs %lld bytes of SRAM but the %.0f "
				 "LPUs of machine %s have %lld", (long long)top, v->lpu->count.v, p->machine,
				 (long long)p->spaces[v->lspace].capacity);
	PlanInstr *all = one->ins;
	one->ins = NULL, one->nins = one->cap = 0;
	/* streams: each instruction on its pool's, waits where the other pool produced an operand */
	for (int i = 0; i < n; i++) {
		PlanStream *s = &p->streams[v->on_lpu[i] ? v->lstream : v->gstream];
		for (int k = 0; k < all[i].nin; k++) {
			int b = all[i].in[k], j = b >= 0 ? v->prod[b] : -1;
			if (j >= 0 && v->on_lpu[j] != v->on_lpu[i] && !v->waited[j]) {
				v->waited[j] = 1;       /* one wait per producer: the other pool reads it later too */
				if (wait_for(v, s, j) < 0)
					return -1;
			}
		}
		if (v->f.nodes[i].n->op == OP_Transfer)
			copy_instr(v, &all[i]);
		else if (v->on_lpu[i])
			lpu_kernel(v, &all[i]);
		if (push(s, &all[i], v->e) < 0)
			return -1;
		/* a record after every node another pool reads: decided up front in v->event */
		if (v->event[i] == -2) {
			char name[64];
			snprintf(name, sizeof name, "ev%d", i);
			PlanInstr r;
			plan_instr_init(&r, PI_RECORD);
			if ((r.event = v->event[i] = plan_add_event(p, name, v->e)) < 0 || push(s, &r, v->e) < 0)
				return -1;
		}
	}
	free(all);
	return 0;
}

/* ---- buffer placement over the two streams' execution order ---- */
static const int *sort_first;
static int by_first(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return sort_first[x] != sort_first[y] ? (sort_first[x] < sort_first[y] ? -1 : 1) : x - y;
}

/* First-fit offsets for the buffers of `space` by their live ranges in the plan's execution
 * order (plan_linearize: what the interpreter and the verifier use).  Returns the top. */
static int64_t place_space(Plan *p, int space, const int *first, const int *last, int64_t align)
{
	int n = 0, na = 0;
	int *idx = malloc(sizeof(int) * ((size_t)p->nbuffers + 1)), *act = malloc(sizeof(int) * ((size_t)p->nbuffers + 1));
	int64_t top = 0;
	if (!idx || !act)
		return free(idx), free(act), -1;
	for (int b = 0; b < p->nbuffers; b++)
		if (p->buffers[b].space == space)
			idx[n++] = b;
	sort_first = first;
	qsort(idx, (size_t)n, sizeof *idx, by_first);
	for (int i = 0; i < n; i++) {
		int b = idx[i], k = 0;
		for (int j = 0; j < na; j++)      /* drop the buffers dead before b starts */
			if (last[act[j]] >= first[b])
				act[k++] = act[j];
		na = k;
		int64_t off = 0, size = p->buffers[b].size;
		for (int moved = 1; moved; ) {       /* lowest offset clear of every live buffer */
			moved = 0;
			for (int j = 0; j < na; j++) {
				const PlanBuffer *a = &p->buffers[act[j]];
				if (off < a->offset + a->size && a->offset < off + size) {
					off = (a->offset + a->size + align - 1) / align * align;
					moved = 1;
				}
			}
		}
		p->buffers[b].offset = off;
		if (off + size > top)
			top = off + size;
		act[na++] = b;
	}
	free(idx);
	free(act);
	return top;
}

/* Re-places the GPU and LPU spaces after the split; errors name the pool that does not fit. */
static int place_buffers(Vr *v)
{
	Plan *p = v->p;
	PlanStep *order = NULL;
	int n = 0, *first = NULL, *last = NULL, rc = 0;
	if (plan_linearize(p, &order, &n, v->e) < 0 || plan_liveness(p, order, n, &first, &last, v->e) < 0) {
		rt_free(order);
		return -1;
	}
	int spaces[2] = { v->gspace, v->lspace };
	for (int i = 0; i < 2 && rc == 0; i++) {
		int64_t top = place_space(p, spaces[i], first, last, i ? LPU_ALIGN : 256);
		if (top < 0)
			rc = rt_errorf(v->e, RT_ENOMEM, "out of memory placing buffers");
		else if (top > p->spaces[spaces[i]].capacity)
			rc = rt_errorf(v->e, RT_EUSER, "aicc: error: vera-rubin: space '%s' needs %lld bytes but the pool has %lld",
				       p->spaces[spaces[i]].name, (long long)top, (long long)p->spaces[spaces[i]].capacity);
	}
	rt_free(order);
	rt_free(first);
	rt_free(last);
	return rc;
}

/* Marks (event = -2) every node whose result the other pool reads. */
static void mark_records(Vr *v)
{
	const Plan *p = v->p;
	const PlanStream *s = &p->streams[v->gstream];
	for (int i = 0; i < v->f.nnodes; i++) {
		v->event[i] = -1;
		for (int k = 0; k < s->ins[i].nout; k++)
			v->prod[s->ins[i].out[k]] = i;
	}
	for (int i = 0; i < v->f.nnodes; i++)
		for (int k = 0; k < s->ins[i].nin; k++) {
			int b = s->ins[i].in[k], j = b >= 0 ? v->prod[b] : -1;
			if (j >= 0 && v->on_lpu[j] != v->on_lpu[i])
				v->event[j] = -2;
		}
}

static int setup(Vr *v, const TgtInput *in)
{
	Plan *p = v->p;
	v->lpu = machine_first(in->machine->m, DEV_LPU);
	const Device *gpu = machine_first(in->machine->m, DEV_GPU);
	v->gstream = 0;
	v->gdev = p->streams[0].device;
	v->gspace = -1;
	for (int i = 0; i < p->nspaces; i++)
		if (p->spaces[i].device == v->gdev && strstr(p->spaces[i].name, ".hbm"))
			v->gspace = i;
	int any = 0, ngpu = 1;
	v->on_lpu = calloc((size_t)v->f.nnodes + 1, 1);
	v->waited = calloc((size_t)v->f.nnodes + 1, 1);
	v->prod = malloc(sizeof(int) * ((size_t)p->nbuffers + 1));
	v->event = malloc(sizeof(int) * ((size_t)v->f.nnodes + 1));
	if (!v->on_lpu || !v->waited || !v->prod || !v->event)
		return rt_errorf(v->e, RT_ENOMEM, "out of memory lowering for vera-rubin");
	for (int i = 0; i < p->nbuffers; i++)
		v->prod[i] = -1;
	for (int i = 0; i < v->f.nnodes; i++) {
		v->on_lpu[i] = (char)node_on_lpu(v, i);
		any |= v->on_lpu[i];
		const Attrs *at = &v->f.nodes[i].n->attrs;
		int c = (int)rt_attr_int(at, "pool_size", rt_attr_int(at, "pool_chips", 1));
		if (!v->on_lpu[i])
			ngpu = c > ngpu ? c : ngpu;
		else
			v->nlpu = c > v->nlpu ? c : v->nlpu;
	}
	(void)ngpu;   /* the GPU pool's HBM was sized by walk() */
	if (!any)
		return 0;
	char name[128];
	if (!v->lpu || !gpu)
		return rt_errorf(v->e, RT_EUSER, "aicc: error: machine '%s' has no LPU for the nodes placed on one", p->machine);
	v->ldev = plan_find_device(p, v->lpu->id);
	snprintf(name, sizeof name, "%s.sram", v->lpu->id);
	v->lspace = plan_find_space(p, name);
	const Link *l = machine_link(in->machine->m, gpu, v->lpu);
	v->c2c = machine_link(in->machine->m, v->lpu, v->lpu);
	v->link = l ? plan_find_link(p, l->id) : -1;
	if (v->ldev < 0 || v->lspace < 0 || v->link < 0)
		return rt_errorf(v->e, RT_EUSER, "aicc: error: machine '%s' lacks the LPU device, its SRAM or the GPU-LPU link",
				 p->machine);
	rt_free(p->streams[0].name);
	if (!(p->streams[0].name = rt_strdup(gpu->id)))
		return rt_errorf(v->e, RT_ENOMEM, "out of memory lowering for vera-rubin");
	return (v->lstream = plan_add_stream(p, v->lpu->id, v->ldev, v->e)) < 0 ? -1 : 1;
}

/* The GPU pool's chips: the largest pool_size on a node not placed on the LPU pool. */
static int gpu_pool(const TgtInput *in)
{
	const Device *lpu = machine_first(in->machine->m, DEV_LPU);
	int n = 1;
	for (Graph *g = in->m->graphs; g; g = g->next)
		ir_foreach_node(g, nd) {
			const char *d = nd->annot.device;
			int c = (int)rt_attr_int(&nd->attrs, "pool_size", 1);
			if (!(d && lpu && !strncmp(d, lpu->id, strlen(lpu->id))) && c > n)
				n = c;
		}
	return n;
}

/* The GPU walk with the GPU pool's HBM (pool chips x one Rubin's) as its memory: the machine
 * description's plan entities are widened for the walk and restored. */
static Plan *walk(const TgtInput *in, RtError *e)
{
	const Device *gpu = machine_first(in->machine->m, DEV_GPU);
	char name[128];
	snprintf(name, sizeof name, "%s.hbm", gpu ? gpu->id : "gpu");
	Plan *desc = in->machine->desc;
	int s = plan_find_space(desc, name);
	int64_t cap = s >= 0 ? desc->spaces[s].capacity : 0;
	if (s >= 0)
		desc->spaces[s].capacity = cap * gpu_pool(in);
	Plan *p = gpu_lower(in, &rubin, e);
	if (s >= 0)
		desc->spaces[s].capacity = cap;
	return p;
}

Plan *vr_lower(const TgtInput *in, RtError *e)
{
	Vr v = { .e = e };
	v.p = walk(in, e);
	if (!v.p)
		return NULL;
	int rc = tgt_flatten(in->g, &v.f, e);
	if (rc == 0)
		rc = setup(&v, in);
	if (rc > 0) {
		mark_records(&v);
		rc = split_streams(&v);
		if (rc == 0)
			rc = place_buffers(&v);
	}
	if (rc >= 0 && plan_verify(v.p, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rc = rt_errorf(e, RT_EINTERNAL, "aicc: internal error: the vera-rubin plan fails verification: %s", msg);
	}
	tgt_flat_free(&v.f);
	free(v.on_lpu), free(v.waited), free(v.prod), free(v.event);
	if (rc < 0) {
		plan_free(v.p);
		return NULL;
	}
	return v.p;
}
