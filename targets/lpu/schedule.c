/* targets/lpu/schedule.c: LPU instruction costs in cycles and the list scheduler.
 *
 * Cost of one instruction (docs/targets-lpu.md §Cost; backends.md §3b's per-layer estimate
 * applied per instruction): operands stream from SRAM, through one functional slice group, and
 * back to SRAM, so
 *     dur = mem_lat + lat(kind) + max(compute, ceil(vectors / mem_vec))
 * with vectors the 320-byte vectors read and written, mem_vec the vectors one hemisphere moves
 * per cycle (the smaller of its share of the SRAM bandwidth and its 2 x 32 stream registers,
 * hardware.md §3.6 / backends.md §3a), compute = ceil(MACs / MACs-per-cycle) on MXM (the
 * device's peak at the matmul format, split over two hemispheres) and ceil(ops / ALUs) on VXM;
 * SXM only moves data.  A chip-to-chip copy occupies one direction of its C2C link for
 *     dur = hops x C2C latency + ceil(bytes / (bandwidth / clock))
 * cycles (no arbitration: the compiler owns every link slot, ISCA 2022); hops is 1 between chips
 * of one scale-up domain (a Dragonfly node of 8, fully connected) and 3 between domains (local,
 * global, local: the Dragonfly's minimal route).  The latencies are the
 * machine file's estimates.
 * Scheduling: the program's ops in order (chips.c builds them in dependence order) on one global
 * clock; a kernel goes to the hemisphere of its kind on its chip where it can issue first
 * (operands ready, unit free; east on a tie), a copy to its link direction, so no unit or link
 * direction holds two instructions in one cycle and every operand is in SRAM (arrived, for a
 * copy) before its reader issues.  The critical path is traced back from the instruction that
 * ends last through whichever constraint (operand, unit or link) set each start. */
#include "targets/lpu/lpu.h"

#include "runtime/numerics.h"

#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const lpu_kind_names[LK_COUNT] = { "mxm", "vxm", "sxm" };

static const Unit *unit_group(const Device *d, const char *name)
{
	for (int i = 0; i < d->nunits; i++)
		if (strcmp(d->units[i].name, name) == 0)
			return &d->units[i];
	return NULL;
}

static int cycles_of(const Unit *u, double clock)
{
	return u && num_has(&u->latency) ? (int)lround(u->latency.v * clock) : 0;
}

const char *lpu_more_chips(const LpuArch *a, int64_t need, char *buf, size_t len)
{
	char names[400];
	if (need > 65536 || !*machine_with_count(a->d->name, (int)need, names, sizeof names))
		snprintf(buf, len, "; no built-in machine has %" PRId64 " %s chips (--set %s.count=%" PRId64 " models one)",
			 need, a->d->name, a->d->id, need);
	else
		snprintf(buf, len, "; machines with enough %s chips: %s (--machine NAME)", a->d->name, names);
	return buf;
}

const char *lpu_formats(const LpuArch *a, char *buf, size_t n)
{
	snprintf(buf, n, "weights, graph inputs (the KV cache) and MatMul operands at %s, activations at f32", rt_dtype_name(a->mma));
	return buf;
}

const char *lpu_formats_note(const Machine *m, char *buf, size_t n)
{
	const Device *d = m ? machine_first(m, DEV_LPU) : NULL;
	LpuArch a;
	RtError e;
	return d && lpu_arch(m, d, &a, &e) == 0 ? lpu_formats(&a, buf, n) : NULL;
}

int lpu_arch(const Machine *m, const Device *d, LpuArch *a, RtError *e)
{
	memset(a, 0, sizeof *a);
	a->d = d;
	a->clock = d->clock.v;
	const Unit *mxm = unit_group(d, "mxm"), *vxm = unit_group(d, "vxm"), *sxm = unit_group(d, "sxm");
	const Unit *mem = unit_group(d, "mem"), *str = unit_group(d, "streams");
	const MemSpace *sram = dev_mem_kind(d, MEM_SRAM);
	if (!(a->clock > 0) || !mxm || !vxm || !sxm || !mem || !sram || !num_has(&sram->bandwidth))
		return rt_errorf(e, RT_EUSER, "aicc: error: device '%s' is not an LPU description: it needs a clock, "
				 "unit groups mxm, vxm, sxm and mem, and an sram memory with a bandwidth", d->id);
	a->lat[LK_MXM] = cycles_of(mxm, a->clock);
	a->lat[LK_VXM] = cycles_of(vxm, a->clock);
	a->lat[LK_SXM] = cycles_of(sxm, a->clock);
	a->mem_lat = cycles_of(mem, a->clock);
	a->vec_bytes = num_has(&vxm->size) ? vxm->size.v : 320;
	double share = sram->bandwidth.v / a->clock / a->vec_bytes / LPU_HEMIS;
	double streams = str && num_has(&str->count) ? 2 * str->count.v : share;
	a->mem_vec = fmax(1, fmin(share, streams));
	a->mma = num_has(&d->peak[DT_F8E4M3]) ? DT_F8E4M3 : DT_F16;
	a->elem_bytes = a->mma == DT_F8E4M3 ? 1 : 2;
	if (!num_has(&d->peak[a->mma]))
		return rt_errorf(e, RT_EUSER, "aicc: error: device '%s' gives no matrix peak for %s", d->id,
				 rt_dtype_name(a->mma));
	a->macs = d->peak[a->mma].v / 2 / a->clock / LPU_HEMIS;
	a->valu = vxm->count.v / LPU_HEMIS;
	if (!dev_supports(d, DT_F64) && num_has(&d->vpeak[DT_F64]) && num_has(&d->vpeak[DT_F32]) && d->vpeak[DT_F64].v > 0)
		a->f64_slow = d->vpeak[DT_F32].v / d->vpeak[DT_F64].v;
	a->sram = (int64_t)mem_total_capacity(d, sram);
	a->machine = m ? m->name : d->name;
	a->chips = num_has(&d->count) && d->count.v >= 1 ? (int)d->count.v : 1;
	for (int i = 0; m && i < m->nlinks && !a->c2c; i++)
		if (m->links[i].from == d && m->links[i].to == d && num_has(&m->links[i].bandwidth))
			a->c2c = &m->links[i];
	if (a->c2c) {
		a->c2c_lat = num_has(&a->c2c->latency) ? (int64_t)llround(a->c2c->latency.v * a->clock) : 0;
		a->c2c_bpc = link_oneway_bw(a->c2c) / a->clock;
		a->c2c_domain = num_has(&a->c2c->domain) ? (int)a->c2c->domain.v : 0;
	}
	return 0;
}

/* The slice group an operator runs on: its ops.def class (matrix: MXM, move: SXM, else VXM). */
static LpuKind kind_of(Op op)
{
	return ir_ops[op].cls == OC_matrix ? LK_MXM : ir_ops[op].cls == OC_move ? LK_SXM : LK_VXM;
}

static int weight_like(const Flat *f, int v, int depth)
{
	const FlatVal *fv = &f->vals[v];
	if (fv->def < 0)
		return 1;
	const FlatNode *fn = &f->nodes[fv->def];
	if (depth > 8 || kind_of(fn->n->op) != LK_SXM || ir_ops[fn->n->op].lookup || fn->n->op == OP_Transfer)
		return 0;
	for (int k = 0; k < fn->nin; k++)
		if (fn->in[k] >= 0 && (!rt_dtype_isfloat(f->vals[fn->in[k]].dt) || !weight_like(f, fn->in[k], depth + 1)))
			return 0;
	return fn->nin > 0;
}

int lpu_weight_like(const Flat *f, int v) { return weight_like(f, v, 0); }

unsigned char *lpu_wide_values(const LpuArch *a, const Flat *f)
{
	unsigned char *w = calloc((size_t)f->nvals + 1, 1);
	if (!w || rt_dtypes[a->mma].kind == K_BLOCK)
		return w;
	for (int v = 0; v < f->nvals; v++) {          /* flat values are in definition order */
		const FlatVal *fv = &f->vals[v];
		if (!rt_dtype_isfloat(fv->dt) || !lpu_weight_like(f, v))
			continue;
		if (fv->def < 0) {
			w[v] = (unsigned char)tgt_param_beyond(fv->v, a->mma);
			continue;
		}
		const FlatNode *fn = &f->nodes[fv->def];
		for (int k = 0; !w[v] && k < fn->nin; k++)
			w[v] = fn->in[k] >= 0 && w[fn->in[k]];
	}
	return w;
}

int lpu_at_mma(const LpuProg *pg, const Flat *f, int v) { return lpu_weight_like(f, v) && !(pg->wide && pg->wide[v]); }

static int64_t numel_of(int rank, const int64_t *dims)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= dims[i];
	return n;
}

static int64_t bytes_of(const LpuArch *a, DType dt, int64_t n)
{
	if (dt == DT_F64 && a->f64_slow > 0)
		return 8 * n;      /* held as binary64 (lpu_f64) */
	return rt_dtype_isfloat(dt) ? n * a->elem_bytes : rt_dtype_bytes(dt, n);
}

/* The factor node fn's vector work takes: f64_slow when it computes on f64 values (held as
 * binary64 and computed in software), else 1. */
static double f64_factor(const LpuArch *a, const Flat *f, const FlatNode *fn)
{
	for (int k = 0; a->f64_slow > 0 && k < fn->nin + fn->nout; k++) {
		int v = k < fn->nin ? fn->in[k] : fn->out[k - fn->nin];
		if (v >= 0 && f->vals[v].dt == DT_F64)
			return a->f64_slow;
	}
	return 1;
}

int64_t lpu_val_bytes(const LpuArch *a, const Flat *f, const LpuVal *v)
{
	return bytes_of(a, f->vals[v->flat].dt, numel_of(v->rank, v->dims));
}

/* 320-byte vectors of `bytes` bytes. */
static int64_t vecs(const LpuArch *a, int64_t bytes) { return (int64_t)ceil((double)bytes / a->vec_bytes); }

/* dur = mem_lat + lat(kind) + max(compute, ceil(vectors / mem_vec)). */
static void cost_core(const LpuArch *a, LpuKind kind, int64_t vectors, double fl, int64_t outn, LpuCost *c)
{
	c->kind = kind;
	c->vectors = vectors;
	c->stream = (int64_t)ceil((double)vectors / a->mem_vec);
	if (kind == LK_MXM)
		c->compute = (int64_t)ceil(fl / 2 / a->macs);
	else if (kind == LK_VXM)
		c->compute = (int64_t)ceil(fmax(fl, (double)outn) / a->valu);
	else
		c->compute = 0;
	c->dur = a->mem_lat + a->lat[kind] + (c->compute > c->stream ? c->compute : c->stream);
	if (c->dur < 1)
		c->dur = 1;
}

/* One operand (out 0) or result (out 1) of n, dtype dt, n elements, into the vectors it streams
 * and the elements it writes; a lookup table (ops.def `lookup`) is read only at the rows
 * selected: as many vectors as the node writes. */
static void cycles_val(const LpuArch *a, const Node *n, int k, int out, DType dt, int64_t ne, int64_t *v, int64_t *outn)
{
	if (!out && ir_op_is_lookup(n->op, k))
		return;
	*v += vecs(a, bytes_of(a, dt, ne));
	if (out)
		*outn += ne;
}

/* A dim of IR value x as a double; -1 when absent or not constant. */
static double xdim(const Value *x, int d)
{
	return x && d < x->type.rank && dim_isconst(x->type.dims[d]) ? (double)x->type.dims[d].k : -1;
}

/* Attention in its parts (docs/targets-lpu.md §Attention), vin[k] / vout[k] the 320-byte
 * vectors of its operands (0: absent):
 *   Q K^T  on the MXM: the keys (past and new) are installed as the array's weights, streamed
 *          from SRAM with the queries (and the mask): max(MACs / rate, vectors / mem_vec);
 *   softmax on the VXM: 5 passes over the scores (scale and mask, max, subtract and exp, sum,
 *          divide: ir/cost.c's 5 FLOP per pair), ceil(5 scores / ALUs), each pass a VXM latency;
 *   P V    on the MXM: the values installed, the output and the new K/V rows written back
 *          (the KV cache is resident in SRAM and appended in place, as on the GPU target:
 *          present = past + the new rows costs the new rows' writes, not a copy of the cache).
 * The heads (B x query heads of them) pipeline through the MXM and the VXM, so the unit with
 * more work bounds it and the other adds one head's share:
 *   dur = mem_lat + 2 lat(MXM) + 5 lat(VXM) + max(M, V) + ceil(min(M, V) / heads)
 * with M the MXM's two parts and V the softmax's ALU cycles.  0, or -1 when n's shape is not
 * known (the caller prices it whole). */
static int lpu_attn(const LpuArch *a, const Node *n, const int64_t *vin, const int64_t *vout, LpuCost *c)
{
	if (n->op != OP_Attention || n->nin < 3 || !n->in[0] || !n->in[2] || n->nout < 1)
		return -1;
	const Value *q = n->in[0], *v = n->in[2];
	double b = xdim(q, 0), qh, d, dv;
	if (q->type.rank == 4)
		qh = xdim(q, 1), d = xdim(q, 3), dv = xdim(v, 3);
	else if (q->type.rank == 3) {
		qh = (double)rt_attr_int(&n->attrs, "q_num_heads", 1);
		double kvh = (double)rt_attr_int(&n->attrs, "kv_num_heads", 1);
		d = qh > 0 ? xdim(q, 2) / qh : -1, dv = kvh > 0 ? xdim(v, 2) / kvh : -1;
	} else
		return -1;
	double fl = ir_node_flops(n);
	if (!(b > 0 && qh > 0 && d > 0 && dv > 0 && fl > 0))
		return -1;
	double scores = fl / (2 * d + 2 * dv + 5), heads = b * qh;
	int cache = n->nin > 4 && n->in[4];
	int64_t rd1 = vin[0] + vin[1] + vin[3] + vin[4], rd3 = vin[2] + vin[5];
	int64_t wr = vout[0] + (cache ? vin[1] + vin[2] : vout[1] + vout[2]);
	int64_t mq = (int64_t)ceil(scores * d / a->macs), sq = (int64_t)ceil((double)rd1 / a->mem_vec);
	int64_t mp = (int64_t)ceil(scores * dv / a->macs), sp = (int64_t)ceil((double)(rd3 + wr) / a->mem_vec);
	int64_t vx = (int64_t)ceil(5 * scores / a->valu);
	int64_t M = (mq > sq ? mq : sq) + (mp > sp ? mp : sp), hi = M > vx ? M : vx, lo = M > vx ? vx : M;
	c->kind = LK_MXM;
	c->vectors = rd1 + rd3 + wr;
	c->stream = sq + sp;
	c->compute = vx > M ? vx : mq + mp;
	c->qk = a->lat[LK_MXM] + (mq > sq ? mq : sq);
	c->softmax = 5 * a->lat[LK_VXM] + vx;
	c->pv = a->lat[LK_MXM] + (mp > sp ? mp : sp);
	c->dur = a->mem_lat + 2 * a->lat[LK_MXM] + 5 * a->lat[LK_VXM] + hi + (int64_t)ceil((double)lo / heads);
	return 0;
}

void lpu_node_cycles(const LpuArch *a, const Flat *f, int node, LpuCost *c)
{
	const FlatNode *fn = &f->nodes[node];
	int64_t v = 0, outn = 0;
	memset(c, 0, sizeof *c);
	if (fn->n->op == OP_Attention) {
		int64_t vin[6] = { 0 }, vout[3] = { 0 };
		for (int k = 0; k < fn->nin && k < 6; k++)
			if (fn->in[k] >= 0)
				vin[k] = vecs(a, bytes_of(a, f->vals[fn->in[k]].dt, numel_of(f->vals[fn->in[k]].rank, f->vals[fn->in[k]].dims)));
		for (int k = 0; k < fn->nout && k < 3; k++)
			vout[k] = vecs(a, bytes_of(a, f->vals[fn->out[k]].dt, numel_of(f->vals[fn->out[k]].rank, f->vals[fn->out[k]].dims)));
		if (lpu_attn(a, fn->n, vin, vout, c) == 0)
			return;
	}
	for (int k = 0; k < fn->nin; k++)
		if (fn->in[k] >= 0)
			cycles_val(a, fn->n, k, 0, f->vals[fn->in[k]].dt, numel_of(f->vals[fn->in[k]].rank, f->vals[fn->in[k]].dims), &v, &outn);
	for (int k = 0; k < fn->nout; k++)
		cycles_val(a, fn->n, k, 1, f->vals[fn->out[k]].dt, numel_of(f->vals[fn->out[k]].rank, f->vals[fn->out[k]].dims), &v, &outn);
	double fl = ir_node_flops(fn->n), slow = f64_factor(a, f, fn);
	cost_core(a, kind_of(fn->n->op), v, fl > 0 ? fl * slow : 0, (int64_t)(outn * slow), c);
}

int lpu_ir_node_cycles(const LpuArch *a, const Node *n, LpuCost *c)
{
	int64_t v = 0, outn = 0;
	double slow = 1;
	memset(c, 0, sizeof *c);
	if (n->op == OP_Attention) {
		int64_t vin[6] = { 0 }, vout[3] = { 0 };
		for (int k = 0; k < n->nin && k < 6; k++)
			if (n->in[k] && ir_type_numel(n->in[k]->type) >= 0)
				vin[k] = vecs(a, bytes_of(a, n->in[k]->type.dt, ir_type_numel(n->in[k]->type)));
		for (int k = 0; k < n->nout && k < 3; k++)
			if (n->out[k] && ir_type_numel(n->out[k]->type) >= 0)
				vout[k] = vecs(a, bytes_of(a, n->out[k]->type.dt, ir_type_numel(n->out[k]->type)));
		if (lpu_attn(a, n, vin, vout, c) == 0)
			return 0;
	}
	for (int k = 0; k < n->nin + n->nout; k++) {
		const Value *x = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int64_t ne = x ? ir_type_numel(x->type) : 0;
		if (!x)
			continue;
		if (ne < 0 || x->type.dt == DT_INVALID)
			return -1;
		if (x->type.dt == DT_F64 && a->f64_slow > 0)
			slow = a->f64_slow;
		cycles_val(a, n, k < n->nin ? k : k - n->nin, k >= n->nin, x->type.dt, ne, &v, &outn);
	}
	double fl = ir_node_flops(n);
	cost_core(a, kind_of(n->op), v, fl > 0 ? fl * slow : 0, (int64_t)(outn * slow), c);
	return 0;
}

int lpu_hops(const LpuArch *a, int from, int to)
{
	if (a->c2c_domain <= 0 || from / a->c2c_domain == to / a->c2c_domain)
		return 1;
	return 3;
}

/* Prices op o of the program: a kernel on its operands (a shard does its share of the node's
 * FLOP; a concat only moves data), or a copy: C2C latency + bytes / bandwidth. */
static void price(const LpuArch *a, const Flat *f, const LpuProg *pg, LpuOp *o)
{
	const int *in = lpu_ins(pg, o), *out = lpu_outs(pg, o);
	LpuCost c;
	if (o->what == LW_COPY) {
		int64_t b = lpu_val_bytes(a, f, &pg->vals[in[0]]);
		o->kind = LK_SXM;
		o->vectors = vecs(a, b);
		o->compute = 0;
		o->stream = (int64_t)ceil((double)b / (a->c2c_bpc > 0 ? a->c2c_bpc : 1));
		o->dur = a->c2c_lat * lpu_hops(a, pg->vals[in[0]].chip, o->chip) + o->stream;
		o->flops = 0;
		return;
	}
	if (o->what == LW_KERNEL) {   /* the whole node on its chip: its operands are whole values */
		double fl = ir_node_flops(f->nodes[o->node].n);
		lpu_node_cycles(a, f, o->node, &c);
		o->flops = fl > 0 ? fl : 0;
		o->kind = c.kind, o->vectors = c.vectors, o->stream = c.stream, o->compute = c.compute, o->dur = c.dur;
		o->qk = c.qk, o->softmax = c.softmax, o->pv = c.pv;
		return;
	}
	Op op = o->what == LW_CONCAT ? OP_Concat : f->nodes[o->node].n->op;
	int64_t v = 0, outn = 0;
	for (int k = 0; k < o->nin; k++)
		if (in[k] >= 0 && !ir_op_is_lookup(op, k))
			v += vecs(a, lpu_val_bytes(a, f, &pg->vals[in[k]]));
	for (int k = 0; k < o->nout; k++) {
		v += vecs(a, lpu_val_bytes(a, f, &pg->vals[out[k]]));
		outn += numel_of(pg->vals[out[k]].rank, pg->vals[out[k]].dims);
	}
	double fl = o->what == LW_CONCAT ? 0 : ir_node_flops(f->nodes[o->node].n), slow = o->what == LW_CONCAT ? 1 :
		    f64_factor(a, f, &f->nodes[o->node]);
	fl = fl > 0 ? fl : 0;
	if (o->what == LW_SHARD) {
		const LpuVal *y = &pg->vals[out[0]];
		fl *= (double)y->dims[y->shard_axis] / (double)y->shard_full;
	}
	o->flops = fl;
	cost_core(a, o->what == LW_CONCAT ? LK_SXM : kind_of(op), v, fl * slow, (int64_t)(outn * slow), &c);
	o->kind = c.kind, o->vectors = c.vectors, o->stream = c.stream, o->compute = c.compute, o->dur = c.dur;
}

/* The resource an op occupies: a unit, or one direction of a link (after all units). */
static int resource(const LpuProg *pg, const LpuOp *o)
{
	if (o->what != LW_COPY)
		return o->unit;
	const LpuLink *l = &pg->links[o->link];
	int src = pg->vals[lpu_ins(pg, o)[0]].chip;
	return pg->nchips * LPU_UNITS + 2 * o->link + (src == l->a ? 0 : 1);
}

static const LpuProg *sort_pg;
static int by_cycle(const void *x, const void *y)
{
	const LpuOp *a = &sort_pg->ops[*(const int *)x], *b = &sort_pg->ops[*(const int *)y];
	if (a->cycle != b->cycle)
		return a->cycle < b->cycle ? -1 : 1;
	if (a->chip != b->chip)
		return a->chip < b->chip ? -1 : 1;
	int ra = resource(sort_pg, a), rb = resource(sort_pg, b);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	return *(const int *)x - *(const int *)y;
}

/* The busy intervals of one link direction, sorted by start.  A copy takes the earliest gap
 * that holds it from the cycle its source is ready (links are not in-order queues: the
 * compiler owns every slot). */
typedef struct Slots {
	int64_t *lo, *hi;
	int *op, n, cap;
} Slots;

/* The earliest t >= r with [t, t + dur) free; *prev: the op whose end set t, or -1. */
static int64_t slot_find(const Slots *sl, int64_t r, int64_t dur, int *prev)
{
	int64_t t = r;
	*prev = -1;
	for (int i = 0; i < sl->n; i++) {
		if (sl->hi[i] <= t)
			continue;
		if (sl->lo[i] >= t + dur)
			break;
		t = sl->hi[i], *prev = sl->op[i];
	}
	return t;
}

static int slot_insert(Slots *sl, int64_t lo, int64_t hi, int op)
{
	if (sl->n == sl->cap) {
		int cap = sl->cap ? 2 * sl->cap : 8;
		int64_t *l = realloc(sl->lo, sizeof *l * (size_t)cap);
		if (l)
			sl->lo = l;
		int64_t *h = realloc(sl->hi, sizeof *h * (size_t)cap);
		if (h)
			sl->hi = h;
		int *o = realloc(sl->op, sizeof *o * (size_t)cap);
		if (o)
			sl->op = o;
		if (!l || !h || !o)
			return -1;
		sl->cap = cap;
	}
	int i = sl->n++;
	for (; i > 0 && sl->lo[i - 1] > lo; i--)
		sl->lo[i] = sl->lo[i - 1], sl->hi[i] = sl->hi[i - 1], sl->op[i] = sl->op[i - 1];
	sl->lo[i] = lo, sl->hi[i] = hi, sl->op[i] = op;
	return 0;
}

int lpu_schedule(const LpuArch *a, const Flat *f, LpuProg *pg, RtError *e)
{
	int nu = pg->nchips * LPU_UNITS, nr = nu + 2 * pg->nlinks;
	pg->busy = calloc((size_t)nr + 1, sizeof *pg->busy);
	pg->order = calloc((size_t)pg->nops + 1, sizeof *pg->order);
	int64_t *free_at = calloc((size_t)nr + 1, sizeof *free_at);
	int *last_on = malloc(((size_t)nr + 1) * sizeof *last_on);
	int64_t *ready = calloc((size_t)pg->nvals + 1, sizeof *ready);
	int *pred = malloc(((size_t)pg->nops + 1) * sizeof *pred);
	Slots *slots = calloc(2 * (size_t)pg->nlinks + 1, sizeof *slots);
	int rc = 0;
	if (!pg->busy || !pg->order || !free_at || !last_on || !ready || !pred || !slots) {
		free(free_at), free(last_on), free(ready), free(pred), free(slots);
		return rt_errorf(e, RT_ENOMEM, "out of memory scheduling the LPU plan");
	}
	for (int r = 0; r < nr; r++)
		last_on[r] = -1;
	int last = -1;
	for (int i = 0; i < pg->nops && rc == 0; i++) {
		LpuOp *o = &pg->ops[i];
		price(a, f, pg, o);
		const int *in = lpu_ins(pg, o), *out = lpu_outs(pg, o);
		int64_t r = 0;
		int rp = -1;
		for (int k = 0; k < o->nin; k++)
			if (in[k] >= 0 && ready[in[k]] > r)
				r = ready[in[k]], rp = pg->vals[in[k]].def;
		int best = -1, lp = -1;
		int64_t bt = 0;
		if (o->what == LW_COPY) {
			best = resource(pg, o);
			Slots *sl = &slots[best - nu];
			bt = slot_find(sl, r, o->dur, &lp);
			if (slot_insert(sl, bt, bt + o->dur, i) < 0)
				rc = rt_errorf(e, RT_ENOMEM, "out of memory scheduling the LPU plan");
		} else
			for (int h = 0; h < LPU_HEMIS; h++) {   /* the hemisphere where it issues first; east on a tie */
				int u = o->chip * LPU_UNITS + (int)o->kind * LPU_HEMIS + h;
				int64_t t = r > free_at[u] ? r : free_at[u];
				if (best < 0 || t < bt)
					best = u, bt = t;
			}
		o->unit = o->what == LW_COPY ? -1 : best;
		o->cycle = bt;
		pred[i] = bt == r ? rp : o->what == LW_COPY ? lp : last_on[best];
		free_at[best] = bt + o->dur;
		last_on[best] = i;
		pg->busy[best] += o->dur;
		for (int k = 0; k < o->nout; k++)
			ready[out[k]] = bt + o->dur;
		if (bt + o->dur > pg->length || last < 0)
			pg->length = bt + o->dur, last = i;
	}
	for (int l = 0; l < 2 * pg->nlinks; l++)
		free(slots[l].lo), free(slots[l].hi), free(slots[l].op);
	free(slots);
	if (rc < 0) {
		free(free_at), free(last_on), free(ready), free(pred);
		return rc;
	}
	for (int i = last; i >= 0; i = pred[i]) {
		pg->ops[i].critical = 1;
		pg->ncritical++;
	}
	for (int i = 0; i < pg->nops; i++)
		pg->order[i] = i;
	sort_pg = pg;
	qsort(pg->order, (size_t)pg->nops, sizeof *pg->order, by_cycle);
	free(free_at), free(last_on), free(ready), free(pred);
	return 0;
}
