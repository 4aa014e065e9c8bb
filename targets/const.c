/* targets/const.c: lowering a parameter's initialiser to a plan constant, shared by every
 * target: seeded initialisers stay seeded, weight files are referenced by absolute path, literal
 * data is written inline (at most PLAN_INLINE_MAX values), in-memory tensors (ONNX initializers,
 * folded constants) of more than PLAN_TEXT_MAX values and integers beyond 2^53 become `data`
 * constants that the driver writes, in binary, to the weights file beside the plan. */
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"

/* The path of a weight file: resolved against the model's directory, then made absolute when
 * it exists, so the plan runs from any directory. */
static char *weight_path(const char *dir, const char *path)
{
	int rel = path[0] != '/' && dir && *dir;
	size_t n = strlen(path) + (rel ? strlen(dir) : 0) + 2;
	char *s = malloc(n);
	if (!s)
		return NULL;
	snprintf(s, n, "%s%s%s", rel ? dir : "", rel ? "/" : "", path);
	char *abs = realpath(s, NULL);
	if (abs) {
		free(s);
		return abs;
	}
	return s;
}

/* Whether t holds an integer that a double does not represent exactly (beyond 2^53). */
static int wide_ints(const RtTensor *t)
{
	if (rt_dtypes[t->dtype].storage != S_I64)
		return 0;
	for (int64_t i = 0; i < t->n; i++) {
		int64_t v = rt_geti(t, i);
		if (v > (INT64_C(1) << 53) || v < -(INT64_C(1) << 53))
			return 1;
	}
	return 0;
}

/* Constant data given inline (literal or in-memory tensor): inline text up to PLAN_INLINE_MAX
 * values, larger in-memory tensors (and wide integers) as `data` constants. */
static int inline_const(Plan *p, const FlatVal *fv, PlanConst *c, RtError *e)
{
	const ParamInit *pi = fv->v->init;
	int64_t n = plan_buffer_numel(&p->buffers[c->buffer]);
	int64_t have = pi->kind == INIT_DATA ? (pi->data ? pi->data->n : 0) : pi->nlit;
	if (have == 1 && n != 1) {
		c->kind = PINIT_FILL;
		c->a = pi->kind == INIT_DATA ? rt_get(pi->data, 0) : pi->lit[0];
		if (!(pi->kind == INIT_DATA && wide_ints(pi->data)))
			return 0;
	}
	if (pi->kind == INIT_DATA && pi->data && pi->data->n == n && (n > PLAN_TEXT_MAX || wide_ints(pi->data))) {
		c->kind = PINIT_DATA;
		c->data = pi->data;
		return 0;
	}
	if (have != n || n > PLAN_INLINE_MAX)
		return rt_errorf(e, RT_EUSER, "parameter '%s': %lld values for %lld elements (inline data "
				 "holds at most %d values; use an .npy or .safetensors file)", fv->name,
				 (long long)have, (long long)n, PLAN_INLINE_MAX);
	c->kind = PINIT_INLINE;
	c->nvals = n;
	c->vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!c->vals)
		return rt_errorf(e, RT_ENOMEM, "out of memory lowering constants");
	for (int64_t i = 0; i < n; i++)
		c->vals[i] = pi->kind == INIT_DATA ? rt_get(pi->data, i) : pi->lit[i];
	return 0;
}

int tgt_add_const(Plan *p, int buffer, const FlatVal *fv, const char *dir, RtError *e)
{
	const ParamInit *pi = fv->v->init;
	PlanConst c = { .buffer = buffer, .seed = pi->seed, .instance = fv->instance, .a = pi->a, .b = pi->b };
	int rc = 0;
	switch (pi->kind) {
	case INIT_NONE: c.kind = PINIT_UNBOUND; break;
	case INIT_NORMAL: c.kind = PINIT_NORMAL; break;
	case INIT_UNIFORM: c.kind = PINIT_UNIFORM; break;
	case INIT_FILL: c.kind = PINIT_FILL; break;
	case INIT_LITERAL:
	case INIT_DATA: rc = inline_const(p, fv, &c, e); break;
	case INIT_NPY:
	case INIT_SAFETENSORS:
		c.kind = pi->kind == INIT_NPY ? PINIT_NPY : PINIT_SAFETENSORS;
		c.key = (char *)pi->key;
		if (!(c.path = weight_path(dir, pi->path)))
			rc = rt_errorf(e, RT_ENOMEM, "out of memory lowering constants");
		break;
	}
	if (rc == 0 && plan_add_const(p, &c, e) < 0)
		rc = -1;
	free(c.vals);
	free(c.path);
	return rc;
}
