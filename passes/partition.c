/* passes/partition.c: assigns every node of the entry graph to a device of the machine.
 *
 * The pass reads the machine (PassCtx.machine): its accelerators (the first non-host device kind
 * and its count), each one's memory capacity (HBM, else DRAM, SRAM or VMEM), peak rates and
 * memory bandwidth.  With one device it only checks that weights + activations + KV cache fit,
 * and reports required against available bytes when they do not.  With several it
 *   1. splits Megatron-style MatMul pairs over the --tp N devices of a pipeline stage: the first
 *      weight by columns, elementwise ops in between per shard, the second weight by rows, and
 *      an AllReduce of the partial products (docs/language.md "Devices and collectives");
 *   2. cuts the graph into --pp N pipeline stages (by default the fewest whose weights fit),
 *      balanced by predicted time: max(FLOP / device peak, bytes / memory bandwidth) per node;
 *      a stage index never decreases along an edge, so partitions form no cycle.  `@device`
 *      annotations take precedence: a pinned node stays on its device and the nodes before it
 *      are held at or below its stage;
 *   3. annotates every node `@device(gpuN)`, records the reason as a "placement" remark (operator
 *      support, pin, tensor-parallel shard, pipeline stage by time) and inserts a Transfer
 *      wherever a value crosses devices (one per value and destination);
 *   4. checks memory per device and reports each device that does not fit, with numbers.
 * Calls (layer stacks) are placed as units; tensor parallelism applies to the entry graph.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "targets/machine.h"

/* MAXREG: nodes of one region; MAXREGIONS: regions per graph; SHARDS: the base of the
 * (region, shard) code kept in Node.aux while the pass runs (--tp is at most 4096). */
enum { MAXREG = 64, MAXREGIONS = 4096, SHARDS = 8192 };

typedef struct Part {
	Module *m;
	Graph *g;
	PassCtx *c;
	const Device *dev;
	int ndev, tp, pp;
	double cap;              /* bytes per device */
	const char *capname;     /* "HBM" */
	int *stage;              /* per node id */
	int *devof;              /* per node id: device index, -1 for none (weight sharding) */
	int *region;             /* per node id: tensor-parallel region + 1, shard in shard[] */
	int *shard;
	int nids;
} Part;

static const char SHARD_SPLIT[] = "weight shard";

static const char *dev_name(Part *p, int i)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s%d", p->dev->id, i);
	return arena_strdup(p->m->arena, buf);
}

static int64_t value_bytes(const Value *v)
{
	int64_t n = ir_type_numel(v->type);
	return n < 0 || v->type.dt == DT_INVALID ? 0 : rt_dtype_bytes(v->type.dt, n);
}

static int64_t node_weights(const Node *n);

/* Predicted seconds of one node on the device: the larger of compute and memory time. */
static double node_time(Part *p, const Node *n)
{
	double fl = ir_node_flops(n), by = 0;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i])
			by += (double)value_bytes(n->in[i]);
	for (int i = 0; i < n->nout; i++)
		by += (double)value_bytes(n->out[i]);
	if (n->op == OP_Call && n->callee)
		by += (double)ir_summary(n->callee).parameter_bytes * (double)(n->repeat > 0 ? n->repeat : 1);
	DType dt = n->nout ? n->out[0]->type.dt : DT_F32;
	double peak = dt != DT_INVALID ? dev_peak(p->dev, dt) : 0;
	if (peak <= 0)
		peak = dev_peak(p->dev, DT_F32);
	const MemSpace *hbm = dev_mem_kind(p->dev, MEM_HBM);
	if (!hbm)
		hbm = dev_mem_kind(p->dev, MEM_DRAM);
	double bw = hbm && num_has(&hbm->bandwidth) ? hbm->bandwidth.v : 1e12;
	return fmax(peak > 0 ? fl / peak : 0, by / bw);
}

/* Weight bytes a node reads (a Call: its callee's, times repeat). */
static int64_t node_weights(const Node *n)
{
	if (n->op == OP_Call && n->callee)
		return ir_summary(n->callee).parameter_bytes * (n->repeat > 0 ? n->repeat : 1);
	int64_t b = 0;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] && n->in[i]->kind == V_PARAM && !(n->in[i]->init && n->in[i]->init->inline_lit))
			b += value_bytes(n->in[i]);
	return b;
}

/* ---- tensor parallelism: Megatron MatMul pairs ---- */

typedef struct Region {
	Node *nodes[MAXREG];     /* column part, in graph order, then the row MatMul last */
	int n;
	int64_t cols;            /* N, the split dimension */
} Region;

static int is_weight(const Value *v, int rank)
{
	return v && v->kind == V_PARAM && v->type.rank == rank && !(v->init && v->init->inline_lit);
}

static int in_region(const Region *r, const Node *n)
{
	for (int i = 0; i < r->n; i++)
		if (r->nodes[i] == n)
			return 1;
	return 0;
}

/* Whether v can be computed column-split (last dimension N over the shards); adds its nodes. */
static int colsplit(Part *p, Region *r, Value *v, int depth)
{
	if (depth > 16 || v->kind != V_NODE || r->n >= MAXREG - 1)
		return 0;
	Node *n = v->def;
	if (in_region(r, n))
		return 1;
	if (n->annot.device || n->nout != 1 || v->nuses != 1 || pass_is_output(v) || n->aux)
		return 0;
	if (v->type.rank < 1 || !dim_isconst(v->type.dims[v->type.rank - 1]) ||
	    v->type.dims[v->type.rank - 1].k != r->cols)
		return 0;
	int ok = 0;
	if (n->op == OP_MatMul && is_weight(n->in[1], 2) && n->in[0]->type.rank >= 1)
		ok = 1;
	else if ((ir_ops[n->op].flags & (F_ELEM | F_UNARY)) == (F_ELEM | F_UNARY) && n->op != OP_Cast)
		ok = colsplit(p, r, n->in[0], depth + 1);
	else if (n->op == OP_Add || n->op == OP_Sub || n->op == OP_Mul || n->op == OP_SwiGLU) {
		int any = 0;
		ok = 1;
		for (int i = 0; i < 2 && ok; i++) {
			Value *x = n->in[i];
			if (is_weight(x, 1) && x->type.dims[0].k == r->cols && dim_isconst(x->type.dims[0]))
				continue;
			ok = colsplit(p, r, x, depth + 1);
			any |= ok;
		}
		ok = ok && any;
	}
	if (!ok)
		return 0;
	r->nodes[r->n++] = n;
	return 1;
}

/* Shard i of weight w cut into tp parts along axis (one Split per weight, shared by the shards). */
static Value *weight_shard(Part *p, Node *before, Value *w, int axis, int i)
{
	if (!w->aux) {
		const char **names = arena_alloc(p->m->arena, (size_t)p->tp * sizeof *names);
		for (int k = 0; k < p->tp; k++) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s.shard%d", w->name, k);
			names[k] = ir_fresh_name(p->g, buf);
		}
		Node *s = ir_insert_node(p->g, before, OP_Split, &w, 1, names, p->tp, before->loc);
		ir_set_attr_int(s, "axis", axis);
		ir_set_attr_int(s, "num_outputs", p->tp);
		s->aux = (void *)SHARD_SPLIT;
		w->aux = s;
	}
	return ((Node *)w->aux)->out[i];
}

static Value *map_val(Region *r, Value **map, Value *v)
{
	if (v && v->kind == V_NODE)
		for (int k = 0; k < r->n; k++)
			if (r->nodes[k] == v->def)
				return map[k];
	return v;
}

/* Rewrites one region into tp shards and an AllReduce; marks the new nodes (aux = region). */
static void split_region(Part *p, Region *r, int rid)
{
	Node *row = r->nodes[r->n - 1];
	Value *parts[SHARDS];
	Value *map[MAXREG];
	for (int i = 0; i < p->tp; i++) {
		for (int k = 0; k < r->n; k++) {
			Node *n = r->nodes[k];
			Value *in[8];
			int nin = n->nin < 8 ? n->nin : 8;
			for (int j = 0; j < nin; j++)
				in[j] = map_val(r, map, n->in[j]);
			if (n->op == OP_MatMul && k == r->n - 1)
				in[1] = weight_shard(p, row, n->in[1], 0, i);
			else if (n->op == OP_MatMul)
				in[1] = weight_shard(p, row, n->in[1], 1, i);
			else
				for (int j = 0; j < nin; j++)
					if (is_weight(n->in[j], 1))
						in[j] = weight_shard(p, row, n->in[j], 0, i);
			char buf[256];
			snprintf(buf, sizeof buf, "%s.tp%d", pass_node_name(n), i);
			const char *name = ir_fresh_name(p->g, buf);
			Node *c = ir_insert_node(p->g, row, n->op, in, nin, &name, 1, n->loc);
			for (int a = 0; a < n->attrs.n; a++)
				ir_set_attr(c, &n->attrs.a[a]);
			c->aux = (void *)(intptr_t)(rid * SHARDS + i + 1);
			map[k] = c->out[0];
		}
		parts[i] = map[r->n - 1];
	}
	char buf[256];
	snprintf(buf, sizeof buf, "%s.allreduce", pass_node_name(row));
	const char *name = ir_fresh_name(p->g, buf);
	Node *ar = ir_insert_node(p->g, row, OP_AllReduce, parts, p->tp, &name, 1, row->loc);
	ar->aux = (void *)(intptr_t)(rid * SHARDS + 1);
	if (pass_replace_node(p->g, row, ar->out[0]) < 0) {
		ir_replace_uses(p->g, row->out[0], ar->out[0]);
		ir_remove_node(p->g, row);
	}
	for (int k = r->n - 2; k >= 0; k--)
		if (r->nodes[k]->out[0]->nuses == 0)
			ir_remove_node(p->g, r->nodes[k]);
}

static int tensor_parallel(Part *p)
{
	int nreg = 0;
	if (p->tp < 2)
		return 0;
	for (int i = 0; i < p->g->nparams; i++)
		p->g->params[i]->aux = NULL;
	for (Node *n = p->g->first, *next; n; n = next) {
		next = n->next;
		if (nreg >= MAXREGIONS - 2)
			break;   /* region ids and their stages live in fixed tables */
		if (n->op != OP_MatMul || n->aux || !is_weight(n->in[1], 2) || n->annot.device ||
		    !dim_isconst(n->in[1]->type.dims[0]))
			continue;
		Region r = { .n = 0, .cols = n->in[1]->type.dims[0].k };
		if (r.cols % p->tp || !colsplit(p, &r, n->in[0], 0))
			continue;
		int bad = 0;
		for (int k = 0; k < r.n; k++)
			bad |= r.nodes[k]->op == OP_MatMul && (r.nodes[k]->in[1]->type.dims[1].k % p->tp) != 0;
		if (bad || !pass_bisect(p->c, n, "tensor-parallel split"))
			continue;
		r.nodes[r.n++] = n;
		/* the row MatMul may have been picked as a column leaf of nothing; keep graph order */
		nreg++;
		pass_remark(p->c, REMARK_APPLIED, p->g, n, "tensor parallel over %d devices: %d column-split "
			    "node(s) before this row-split MatMul, AllReduce of the partial products", p->tp, r.n - 1);
		split_region(p, &r, nreg);
		pass_changed(p->c, "tensor-parallel regions");
	}
	ir_foreach_node(p->g, n)
		if (n->op == OP_MatMul && !n->aux && is_weight(n->in[1], 2))
			pass_remark(p->c, REMARK_MISSED, p->g, n, "MatMul not split over %d devices: not part of a "
				    "MatMul -> elementwise -> MatMul pair (single users, weights divisible by %d)", p->tp, p->tp);
	return nreg;
}

/* ---- pipeline cuts inside layer stacks ---- */

/* Splits every `Call repeat N` that a balanced stage boundary falls inside into calls of fewer
 * repetitions, cut at the boundary.  Call instances are numbered in expansion order, so every
 * repetition keeps its weights; the first `carried` outputs feed the next call's first inputs. */
static int split_calls(Part *p)
{
	double total = 0, acc = 0;
	int cuts = 0;
	ir_foreach_node(p->g, n)
		total += node_time(p, n);
	if (p->pp < 2 || total <= 0)
		return 0;
	for (Node *n = p->g->first; n; n = n->next) {
		double t = node_time(p, n);
		if (n->op == OP_Call && n->callee && n->repeat > 1 && !n->annot.device) {
			double t1 = t / (double)n->repeat, start = acc;
			for (int k = 1; k < p->pp; k++) {
				double b = total * k / p->pp;
				int64_t reps = (int64_t)floor((b - start) / t1 + 0.5);
				if (b <= start || reps <= 0 || reps >= n->repeat)
					continue;
				const char *names[64];
				int nout = n->nout < 64 ? n->nout : 64;
				for (int i = 0; i < nout; i++)
					names[i] = ir_fresh_name(p->g, n->out[i]->name);
				Node *c = ir_insert_node(p->g, n, OP_Call, n->in, n->nin, names, nout, n->loc);
				c->callee = n->callee;
				c->repeat = reps;
				for (int i = 0; i < nout && i < n->nin; i++)
					ir_set_input(n, i, c->out[i]);
				n->repeat -= reps;
				start += t1 * (double)reps;
				cuts++;
				pass_remark(p->c, REMARK_APPLIED, p->g, n, "cut layer stack '%s' after %lld of %lld "
					    "repetitions at the boundary of pipeline stage %d", n->callee->name,
					    (long long)reps, (long long)(reps + n->repeat), k);
			}
		}
		acc += t;
	}
	return cuts;
}

/* ---- placement ---- */

static int pin_index(Part *p, const Node *n, int *out)
{
	const char *d = n->annot.device;
	size_t l = strlen(p->dev->id);
	char *end;
	if (strncmp(d, p->dev->id, l) == 0 && d[l] >= '0' && d[l] <= '9') {
		long k = strtol(d + l, &end, 10);
		if (!*end && k < p->ndev) {
			*out = (int)k;
			return 0;
		}
	}
	pass_remark(p->c, REMARK_MISSED, p->g, n, "@device(%s) names no device of machine %s (%s0..%s%d): ignored",
		    d, p->c->machine->name, p->dev->id, p->dev->id, p->ndev - 1);
	return -1;
}

static int grow(Part *p)
{
	int nid = p->g->nvalues + 1;
	ir_foreach_node(p->g, n)
		if (n->id + 1 > nid)
			nid = n->id + 1;
	p->nids = nid;
	p->stage = calloc((size_t)nid, sizeof *p->stage);
	p->devof = calloc((size_t)nid, sizeof *p->devof);
	p->region = calloc((size_t)nid, sizeof *p->region);
	p->shard = calloc((size_t)nid, sizeof *p->shard);
	return p->stage && p->devof && p->region && p->shard ? 0 : -1;
}

static void place(Part *p)
{
	double total = 0;
	ir_foreach_node(p->g, n) {
		total += node_time(p, n);
		intptr_t a = (intptr_t)n->aux;
		if (n->aux == SHARD_SPLIT || a <= 0)
			continue;
		p->region[n->id] = (int)(a / SHARDS) + 1;
		p->shard[n->id] = (int)(a % SHARDS) - 1;
	}
	/* cap: the smallest pinned stage among a node and its descendants */
	int *cap = malloc((size_t)p->nids * sizeof *cap);
	int *pin = malloc((size_t)p->nids * sizeof *pin);
	for (int i = 0; i < p->nids; i++)
		cap[i] = p->pp - 1, pin[i] = -1;
	ir_foreach_node(p->g, n)
		if (n->annot.device && !p->region[n->id] && n->aux != SHARD_SPLIT && pin_index(p, n, &pin[n->id]) == 0)
			cap[n->id] = pin[n->id] / p->tp < p->pp ? pin[n->id] / p->tp : p->pp - 1;
	for (Node *n = p->g->last; n; n = n->prev)
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] && n->in[i]->kind == V_NODE && cap[n->in[i]->def->id] > cap[n->id])
				cap[n->in[i]->def->id] = cap[n->id];
	int regstage[MAXREGIONS] = { 0 };
	double acc = 0;
	ir_foreach_node(p->g, n) {
		double t = node_time(p, n);
		int bal = total > 0 ? (int)((acc + t / 2) / total * p->pp) : 0;
		acc += t;
		if (bal >= p->pp)
			bal = p->pp - 1;
		int maxin = 0;
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] && n->in[i]->kind == V_NODE && p->stage[n->in[i]->def->id] > maxin)
				maxin = p->stage[n->in[i]->def->id];
		int s = bal > maxin ? bal : maxin;
		if (s > cap[n->id])
			s = cap[n->id];
		int rg = p->region[n->id];
		const char *why;
		char buf[256];
		if (n->aux == SHARD_SPLIT) {
			p->stage[n->id] = s;
			p->devof[n->id] = -1;
			continue;
		}
		if (rg && rg < MAXREGIONS) {
			if (!regstage[rg])
				regstage[rg] = s + 1;
			s = regstage[rg] - 1;
			p->stage[n->id] = s;
			p->devof[n->id] = s * p->tp + p->shard[n->id];
			snprintf(buf, sizeof buf, n->op == OP_AllReduce ? "tensor-parallel AllReduce over %d devices, stage %d" :
				 "tensor-parallel shard %d of %d, stage %d", n->op == OP_AllReduce ? p->tp : p->shard[n->id],
				 n->op == OP_AllReduce ? s : p->tp, s);
			why = buf;
		} else if (pin[n->id] >= 0) {
			p->stage[n->id] = pin[n->id] / p->tp < p->pp ? pin[n->id] / p->tp : p->pp - 1;
			p->devof[n->id] = pin[n->id];
			why = "@device annotation";
		} else {
			p->stage[n->id] = s;
			p->devof[n->id] = s * p->tp;
			snprintf(buf, sizeof buf, "pipeline stage %d of %d by predicted time (%.3g s of %.3g s)%s",
				 s, p->pp, t, total, s < bal ? ", held back for a later @device pin" :
				 s > bal ? ", after its inputs' stage" : "");
			why = buf;
		}
		n->annot.device = dev_name(p, p->devof[n->id]);
		pass_remark(p->c, REMARK_ANALYSIS, p->g, n, "placed %s on %s: supported there; %s",
			    ir_ops[n->op].name, n->annot.device, why);
	}
	free(cap);
	free(pin);
}

/* A Transfer before every read of a value on another device (one per value and destination). */
static void transfers(Part *p)
{
	for (Node *n = p->g->first; n; n = n->next) {
		if (n->op == OP_Transfer || n->aux == SHARD_SPLIT || !n->annot.device ||
		    n->op == OP_AllReduce || n->op == OP_AllGather || n->op == OP_AllToAll)
			continue;   /* a collective reads input i on member i */
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			if (!v || v->kind != V_NODE || v->def->aux == SHARD_SPLIT || !v->def->annot.device)
				continue;
			if (!strcmp(v->def->annot.device, n->annot.device))
				continue;
			if (v->def->op == OP_AllReduce && p->region[v->def->id] && p->region[n->id] == 0 &&
			    p->stage[v->def->id] == p->stage[n->id])
				continue;   /* every member of the group holds the sum */
			Node *t = NULL;
			for (Node *q = v->def->next; q && q != n; q = q->next)
				if (q->op == OP_Transfer && q->in[0] == v && !strcmp(q->annot.device, n->annot.device))
					t = q;
			if (!t) {
				char buf[256];
				snprintf(buf, sizeof buf, "%s.to.%s", v->name, n->annot.device);
				const char *name = ir_fresh_name(p->g, buf);
				t = ir_insert_node(p->g, n, OP_Transfer, &v, 1, &name, 1, n->loc);
				ir_set_attr_str(t, "device", n->annot.device);
				t->annot.device = n->annot.device;
				pass_changed(p->c, "transfers inserted");
				char size[64];
				if (ir_type_numel(v->type) < 0)
					snprintf(size, sizeof size, "symbolic size");
				else
					snprintf(size, sizeof size, "%lld bytes", (long long)value_bytes(v));
				pass_remark(p->c, REMARK_APPLIED, p->g, n, "Transfer of '%s' (%s) from %s to %s",
					    v->name, size, v->def->annot.device, n->annot.device);
			}
			ir_set_input(n, i, t->out[0]);
		}
	}
	ir_foreach_node(p->g, n)
		if (n->op == OP_AllReduce && p->region[n->id]) {
			char buf[1024];
			size_t o = 0;
			for (int k = 0; k < p->tp && o < sizeof buf - 32; k++)
				o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", k ? "," : "",
						      dev_name(p, p->stage[n->id] * p->tp + k));
			ir_set_attr_str(n, "devices", buf);
		}
}

/* ---- memory ---- */

/* The device index of n: from the placement, or for a node made after it (a Transfer) from
 * its annotation. */
static int devof_node(Part *p, const Node *n)
{
	if (n->id < p->nids)
		return p->devof[n->id];
	const char *d = n->annot.device;
	size_t l = strlen(p->dev->id);
	return d && strncmp(d, p->dev->id, l) == 0 ? atoi(d + l) : 0;
}

static int check_memory(Part *p, int ndev)
{
	int64_t *w = calloc((size_t)ndev, sizeof *w), *act = calloc((size_t)ndev, sizeof *act),
		*kv = calloc((size_t)ndev, sizeof *kv);
	int errors = 0, symbolic = 0;
	ir_foreach_node(p->g, n) {
		int d = ndev == 1 ? 0 : devof_node(p, n);
		if (n->aux == SHARD_SPLIT) {
			for (int i = 0; i < n->nout; i++)
				w[(p->stage[n->id] * p->tp + i) % ndev] += value_bytes(n->out[i]);
			continue;
		}
		if (d < 0 || d >= ndev)
			continue;
		int64_t wb = 0;
		for (int i = 0; i < n->nin; i++) {
			Value *v = n->in[i];
			if (!v || (v->kind == V_NODE && v->def->aux == SHARD_SPLIT))
				continue;
			if (v->kind == V_PARAM && !(v->init && v->init->inline_lit)) {
				int seen = 0;   /* a weight read twice on one device is stored once */
				for (Node *q = p->g->first; q != n && !seen; q = q->next)
					for (int j = 0; j < q->nin && !seen; j++)
						seen = q->in[j] == v && (ndev == 1 || devof_node(p, q) == d);
				if (!seen)
					wb += value_bytes(v);
			}
		}
		if (n->op == OP_Call)
			wb += node_weights(n);
		w[d] += wb;
		int64_t a = 0;
		for (int i = 0; i < n->nout; i++) {
			if (ir_type_numel(n->out[i]->type) < 0)
				symbolic = 1;
			a += value_bytes(n->out[i]);
		}
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] && n->in[i]->kind != V_PARAM)
				a += value_bytes(n->in[i]);
		if (n->op == OP_Attention)
			for (int i = 4; i < n->nin && i < 6; i++)
				if (n->in[i])
					kv[d] += value_bytes(n->in[i]);
		if (a > act[d])
			act[d] = a;
	}
	for (int d = 0; d < ndev; d++) {
		int64_t need = w[d] + act[d] + kv[d];
		if ((double)need <= p->cap)
			continue;
		fprintf(stderr, "aicc: error: partition: the model does not fit on %s of machine %s: it needs %lld bytes "
			"(weights %lld + activations %lld%s + KV cache %lld) but %s has %.0f bytes%s\n",
			dev_name(p, d), p->c->machine->name, (long long)need, (long long)w[d], (long long)act[d],
			symbolic ? " (symbolic shapes not counted; --bind them)" : "", (long long)kv[d],
			p->capname, p->cap, ndev == 1 ? "; a machine with more devices and --tp/--pp would spread it" : "");
		errors++;
	}
	free(w);
	free(act);
	free(kv);
	return errors;
}

int pass_partition(Module *m, PassCtx *c)
{
	const Machine *mach = c->machine;
	Graph *g = ir_entry(m);
	if (!mach || !g)
		return 0;
	const Device *dev = NULL;
	for (int i = 0; i < mach->ndevs && !dev; i++)
		if (!mach->devs[i].is_host)
			dev = &mach->devs[i];
	if (!dev)
		return 0;
	Part p = { .m = m, .g = g, .c = c, .dev = dev };
	p.ndev = num_has(&dev->count) && dev->count.v >= 1 ? (int)dev->count.v : 1;
	const MemSpace *ms = NULL;
	static const MemKind kinds[] = { MEM_HBM, MEM_DRAM, MEM_SRAM, MEM_VMEM };
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !ms; i++)
		ms = dev_mem_kind(dev, kinds[i]);
	p.cap = ms ? mem_total_capacity(dev, ms) : 0;
	p.capname = ms ? memkind_name(ms->kind) : "memory";
	if (p.cap <= 0)
		p.cap = 9e18;
	p.tp = c->tp > 1 ? c->tp : 1;
	if (p.tp > p.ndev) {
		fprintf(stderr, "aicc: error: partition: --tp %d needs %d devices but machine %s has %d\n",
			p.tp, p.tp, mach->name, p.ndev);
		return 1;
	}
	int64_t weights = ir_summary(g).parameter_bytes;
	if (c->pp > 0)
		p.pp = c->pp;
	else {
		double per = p.cap * 0.9 * p.tp;
		p.pp = per > 0 ? (int)ceil((double)weights / per) : 1;
		if (p.pp < 1)
			p.pp = 1;
		if (p.pp * p.tp > p.ndev)
			p.pp = p.ndev / p.tp;
	}
	if (p.pp * p.tp > p.ndev) {
		fprintf(stderr, "aicc: error: partition: --tp %d x --pp %d needs %d devices but machine %s has %d\n",
			p.tp, p.pp, p.tp * p.pp, mach->name, p.ndev);
		return 1;
	}
	if (p.ndev == 1) {
		ir_foreach_node(g, n)
			n->aux = NULL;
		if (grow(&p) < 0)
			return 1;
		int e = check_memory(&p, 1);
		free(p.stage), free(p.devof), free(p.region), free(p.shard);
		return e;
	}
	ir_foreach_node(g, n)
		n->aux = NULL;
	int nreg = tensor_parallel(&p);
	split_calls(&p);
	if (ir_topo_sort(g) < 0)
		return 1;
	if (ir_infer_shapes(m))
		return 1;
	if (grow(&p) < 0)
		return 1;
	place(&p);
	transfers(&p);
	ir_foreach_node(g, n)
		n->aux = NULL;
	for (int i = 0; i < g->nparams; i++)
		g->params[i]->aux = NULL;
	pass_stat(c, "devices used", p.pp * p.tp);
	pass_remark(c, REMARK_ANALYSIS, g, NULL, "partitioned over %d %s device(s): %d pipeline stage(s) x "
		    "tensor parallel %d; %d tensor-parallel region(s); %lld weight bytes",
		    p.pp * p.tp, dev->id, p.pp, p.tp, nreg, (long long)weights);
	int e = check_memory(&p, p.ndev);
	free(p.stage), free(p.devof), free(p.region), free(p.shard);
	return e;
}
