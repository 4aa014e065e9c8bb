/* targets/reference/lower.c: the reference target.  Any shape-inferred graph becomes a
 * one-device plan: calls flattened (targets/flatten.c), one kernel instruction per node, no
 * fusion, every computed float value in f32 (f64 with --precision f64, which also accumulates in
 * f64; values the graph types f64 stay f64); explicit conversions (Cast, CastLike, quantize/dequantize) keep the dtype the graph asks
 * for, integers stay integers.  Buffers live in the device's first memory space, placed first-fit
 * with reuse after their last use (offsets aligned to 64 bytes).  Parameters become constants by
 * reference (seeded initialiser with its call instance, .npy/.safetensors path, small inline
 * data, in-memory `data` for larger ONNX initialisers and integers a double cannot hold, which
 * the driver writes beside the plan) or `unbound`.  The plan this produces is what `aicc run --check` compares against. */
#include "targets/target.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64

typedef struct Lw {
	const TgtInput *in;
	Plan *p;
	Flat f;
	int *buf;            /* flat value -> plan buffer */
	DType fdt;           /* f32 or f64 */
	RtError *e;
	TgtDevs devs;        /* devices, spaces, streams, first-fit heaps (targets/devices.c) */
} Lw;

/* The plan dtype of flat value v under the reference precision policy. */
static DType ref_dtype(const Lw *w, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt) || v->dt == DT_F64)
		return v->dt;    /* an f64 graph stays f64 (its kernels then accumulate in f64) */
	if (v->def >= 0) {
		const Node *n = w->f.nodes[v->def].n;
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
	}
	return w->fdt;
}

static DType ref_dtype_of(const void *w, const FlatVal *v) { return ref_dtype(w, v); }

static int add_kernel(Lw *w, int i)
{
	int ins[TGT_MAX_OPERANDS], outs[TGT_MAX_OPERANDS];
	PlanInstr in;
	if (tgt_devs_handles(&w->devs, &w->f, i))
		return tgt_devs_emit(&w->devs, w->p, &w->f, i, w->buf, NULL, w->e);
	tgt_devs_bufs(&w->devs, &w->f, i, w->buf);
	if (tgt_kernel_instr(&in, w->p, &w->f, i, w->buf, ins, outs, w->e) < 0)
		return -1;
	in.opts.accum_f64 = w->fdt == DT_F64;
	return tgt_devs_emit(&w->devs, w->p, &w->f, i, w->buf, &in, w->e);
}

/* Buffers for inputs and parameters (live throughout), then node by node with reuse. */
static int lower_body(Lw *w)
{
	if (tgt_devs_values(&w->devs, w->p, &w->f, ref_dtype_of, w, w->buf, w->in->m->dir, w->e) < 0)
		return -1;
	for (int i = 0; i < w->f.nnodes; i++)
		if (add_kernel(w, i) < 0)
			return -1;
	return tgt_add_io(w->p, &w->f, w->in->g, w->buf, w->e);
}

static int lower_setup(Lw *w)
{
	const Plan *d = w->in->machine->desc;
	w->p = plan_new("reference", d->machine, d->machine_hash, w->e);
	if (!w->p)
		return -1;
	if (plan_set_source(w->p, w->in->model, w->in->binds, w->in->prec->spec, w->e) < 0)
		return -1;
	const Device *first = NULL;
	for (int i = 0; i < w->in->machine->m->ndevs && !first; i++)
		if (!w->in->machine->m->devs[i].is_host)
			first = &w->in->machine->m->devs[i];
	if (tgt_devs_init(&w->devs, w->p, w->in->machine, &w->f, first ? first->kind : DEV_CPU, NULL, ALIGN, w->e) < 0)
		return -1;
	if (!(w->buf = malloc(sizeof(int) * ((size_t)w->f.nvals + 1))))
		return rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	return 0;
}

Plan *ref_lower(const TgtInput *in, RtError *e)
{
	Lw w = { .in = in, .e = e, .fdt = in->prec->word->mma == DT_F64 ? DT_F64 : DT_F32 };
	int rc = tgt_flatten(in->g, &w.f, e);
	if (rc == 0)
		rc = lower_setup(&w);
	if (rc == 0)
		rc = lower_body(&w);
	if (rc == 0 && plan_verify(w.p, e) < 0) {
		char msg[sizeof e->msg];
		snprintf(msg, sizeof msg, "%s", e->msg);
		rc = rt_errorf(e, RT_EINTERNAL, "aicc: internal error: the reference plan fails verification: %s", msg);
	}
	tgt_flat_free(&w.f);
	free(w.buf);
	tgt_devs_free(&w.devs);
	if (rc < 0) {
		plan_free(w.p);
		return NULL;
	}
	return w.p;
}
