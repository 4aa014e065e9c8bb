/* targets/reference/lower.c: the reference target.  Any shape-inferred graph becomes a
 * one-device plan: calls flattened (targets/flatten.c), one kernel instruction per node, no
 * fusion, every computed float value in f32 (f64 with --precision f64, which also accumulates in
 * f64); explicit conversions (Cast, CastLike, quantize/dequantize) keep the dtype the graph asks
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
	int space, stream;
	DType fdt;           /* f32 or f64 */
	RtError *e;
	/* first-fit allocator: live [off, off+size) intervals sorted by offset */
	TgtHeap heap;        /* first-fit placement (targets/heap.c) */
} Lw;

/* The plan dtype of flat value v under the reference precision policy. */
static DType ref_dtype(const Lw *w, const FlatVal *v)
{
	if (!rt_dtype_isfloat(v->dt))
		return v->dt;
	if (v->def >= 0) {
		const Node *n = w->f.nodes[v->def].n;
		if (n->op == OP_Cast || n->op == OP_CastLike || (ir_ops[n->op].flags & F_QOP))
			return v->dt;
	}
	return w->fdt;
}

static int add_buffer(Lw *w, int v)
{
	w->buf[v] = tgt_add_buffer(w->p, &w->heap, &w->f, v, ref_dtype(w, &w->f.vals[v]), w->space, NULL, w->e);
	return w->buf[v] < 0 ? -1 : 0;
}


static int add_kernel(Lw *w, int i)
{
	int ins[TGT_MAX_OPERANDS], outs[TGT_MAX_OPERANDS];
	PlanInstr in;
	if (tgt_kernel_instr(&in, w->p, &w->f, i, w->buf, ins, outs, w->e) < 0)
		return -1;
	in.opts.accum_f64 = w->fdt == DT_F64;
	return plan_add_instr(w->p, w->stream, &in, w->e) < 0 ? -1 : 0;
}

/* Buffers for inputs and parameters (live throughout), then node by node with reuse. */
static int lower_body(Lw *w)
{
	for (int i = 0; i < w->f.ninputs; i++)
		if (add_buffer(w, w->f.inputs[i]) < 0)
			return -1;
	for (int i = 0; i < w->f.nparams; i++)
		if (add_buffer(w, w->f.params[i]) < 0 || tgt_add_const(w->p, w->buf[w->f.params[i]], &w->f.vals[w->f.params[i]], w->in->m->dir, w->e) < 0)
			return -1;
	for (int i = 0; i < w->f.nnodes; i++) {
		tgt_heap_release(&w->heap, &w->f, i);
		for (int k = 0; k < w->f.nodes[i].nout; k++)
			if (add_buffer(w, w->f.nodes[i].out[k]) < 0)
				return -1;
	}
	for (int i = 0; i < w->f.nnodes; i++)
		if (add_kernel(w, i) < 0)
			return -1;
	return tgt_add_io(w->p, &w->f, w->in->g, w->buf, w->e);
}

static int lower_setup(Lw *w)
{
	const Plan *d = w->in->machine->desc;
	w->p = plan_new("reference", d->machine, d->machine_hash, w->e);
	if (!w->p || tgt_machine_copy(w->in->machine, w->p, w->e) < 0)
		return -1;
	if (plan_set_source(w->p, w->in->model, w->in->binds, w->fdt == DT_F64 ? "f64" : "f32", w->e) < 0)
		return -1;
	w->space = -1;
	for (int i = 0; i < w->p->nspaces && w->space < 0; i++)
		if (w->p->spaces[i].device == 0)
			w->space = i;
	if (w->space < 0)
		return rt_errorf(w->e, RT_EUSER, "machine '%s' has no memory space on device '%s'", d->machine,
				 w->p->devices[0].name);
	w->stream = plan_add_stream(w->p, "main", 0, w->e);
	int n = w->f.nvals + 1;
	w->buf = malloc(sizeof(int) * (size_t)n);
	int heap_ok = tgt_heap_init(&w->heap, (int)n, ALIGN) == 0;
	if (w->stream < 0 || !w->buf || !heap_ok)
		return rt_errorf(w->e, RT_ENOMEM, "out of memory lowering the graph");
	return 0;
}

Plan *ref_lower(const TgtInput *in, RtError *e)
{
	Lw w = { .in = in, .e = e, .fdt = DT_F32 };
	if (in->precision && strcmp(in->precision, "f32") && strcmp(in->precision, "f64")) {
		rt_errorf(e, RT_EUSER, "aicc: error: the reference target computes in f32 or f64, not '%s'",
			  in->precision);
		return NULL;
	}
	if (in->precision && strcmp(in->precision, "f64") == 0)
		w.fdt = DT_F64;
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
	tgt_heap_free(&w.heap);
	if (rc < 0) {
		plan_free(w.p);
		return NULL;
	}
	return w.p;
}
