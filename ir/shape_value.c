/* ir/shape_value.c: compile-time contents of small integer tensors ("known values").
 *
 * ONNX exporters compute shapes at run time: Reshape(x, Concat(Gather(Shape(x), 0), [-1])).
 * To infer such graphs, shape inference tracks the elements of integer tensors of rank <= 1
 * with at most SH_MAXKNOWN elements as Dims (constants or symbolic polynomials): constant
 * parameters (ir_const_data), Shape, Size, Constant, and what Identity, Cast, Concat, Gather,
 * Slice, Squeeze, Unsqueeze, Reshape and Add/Sub/Mul/Div compute from known values, and every
 * value the compile-time evaluator (ir/eval.c) computed.  Rules read them through
 * sh_dims_input(); a tensor that is not known stays unknown (never an error here).
 */
#include <string.h>

#include "ir/shape_int.h"

void sh_known_set(ShapeCtx *c, const Value *v, int rank, int count, const Dim *d)
{
	if (!c->known || v->id >= c->nval || count > SH_MAXKNOWN || count < 0)
		return;
	Known *k = &c->known[v->id];
	k->d = arena_alloc(c->m->arena, (size_t)(count ? count : 1) * sizeof *d);
	memcpy(k->d, d, (size_t)count * sizeof *d);
	k->n = count;
	k->rank = rank;
	k->ok = 1;
}

/* Known values of a small integer tensor whose contents are known (ir/eval.c). */
static void known_from_value(ShapeCtx *c, Value *v)
{
	const RtTensor *t = sh_value_raw(c, v);
	if (!t || t->rank > 1 || t->n > SH_MAXKNOWN || rt_dtypes[t->dtype].kind != K_INT)
		return;
	Dim d[SH_MAXKNOWN];
	for (int64_t i = 0; i < t->n; i++)
		d[i] = dim_c(rt_geti(t, i));
	sh_known_set(c, v, t->rank, (int)t->n, d);
}

const Known *sh_known(ShapeCtx *c, Value *v)
{
	if (!v || !c->known || v->graph != c->g || v->id >= c->nval)
		return NULL;
	if (!c->known[v->id].ok)
		known_from_value(c, v);
	return c->known[v->id].ok ? &c->known[v->id] : NULL;
}

static int is_small_int(const Value *v)
{
	return v->type.rank >= 0 && v->type.rank <= 1 && rt_dtypes[v->type.dt].kind == K_INT;
}

/* Shape {start, end}: the dims of X (clamped as in https://onnx.ai/onnx/operators/onnx__Shape.html). */
static void known_shape(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	Type y = n->out[0]->type;
	int64_t start = rt_attr_int(&n->attrs, "start", 0);
	if (start < 0)
		start += x.rank;
	if (start < 0)
		start = 0;
	if (y.rank == 1 && dim_isconst(y.dims[0]))
		sh_known_set(c, n->out[0], 1, (int)y.dims[0].k, x.dims + (start < x.rank ? start : 0));
}

/* Elementwise arithmetic on known values with scalar broadcasting. */
static void known_arith(ShapeCtx *c, Node *n, const Known *a, const Known *b)
{
	int cnt = a->n > b->n ? a->n : b->n;
	if ((a->n != cnt && a->n != 1) || (b->n != cnt && b->n != 1))
		return;
	Dim d[SH_MAXKNOWN];
	for (int i = 0; i < cnt; i++) {
		Dim x = a->d[a->n == 1 ? 0 : i], y = b->d[b->n == 1 ? 0 : i];
		int r = n->op == OP_Add ? dim_add(c->m, x, y, &d[i]) :
			n->op == OP_Sub ? dim_sub(c->m, x, y, &d[i]) :
			n->op == OP_Mul ? dim_mul(c->m, x, y, &d[i]) : dim_div(c->m, x, y, &d[i]);
		if (r < 0)
			return;
	}
	sh_known_set(c, n->out[0], a->rank > b->rank ? a->rank : b->rank, cnt, d);
}

static void known_concat(ShapeCtx *c, Node *n)
{
	Dim d[SH_MAXKNOWN];
	int cnt = 0;
	for (int i = 0; i < n->nin; i++) {
		const Known *k = sh_known(c, n->in[i]);
		if (!k || cnt + k->n > SH_MAXKNOWN)
			return;
		memcpy(d + cnt, k->d, (size_t)k->n * sizeof *d);
		cnt += k->n;
	}
	sh_known_set(c, n->out[0], 1, cnt, d);
}

static void known_gather(ShapeCtx *c, Node *n, const Known *x)
{
	const Known *idx = sh_known(c, n->in[1]);
	if (!idx || x->rank != 1)
		return;
	Dim d[SH_MAXKNOWN];
	for (int i = 0; i < idx->n; i++) {
		if (!dim_isconst(idx->d[i]))
			return;
		int64_t j = idx->d[i].k < 0 ? idx->d[i].k + x->n : idx->d[i].k;
		if (j < 0 || j >= x->n)
			return;
		d[i] = x->d[j];
	}
	sh_known_set(c, n->out[0], idx->rank, idx->n, d);
}

/* Slice of a known 1-D value with constant starts/ends/steps on axis 0. */
static void known_slice(ShapeCtx *c, Node *n, const Known *x)
{
	Type y = n->out[0]->type;
	const Known *st = sh_known(c, n->in[1]);
	const Known *sp = n->nin > 4 ? sh_known(c, n->in[4]) : NULL;
	if (!st || st->n != 1 || !dim_isconst(st->d[0]) || y.rank != 1 || !dim_isconst(y.dims[0]))
		return;
	int64_t step = sp && sp->n == 1 && dim_isconst(sp->d[0]) ? sp->d[0].k : 1;
	int64_t s = st->d[0].k < 0 ? st->d[0].k + x->n : st->d[0].k;
	s = s < 0 ? 0 : s > x->n ? x->n : s;
	if (step < 0 && s > x->n - 1)
		s = x->n - 1;
	Dim d[SH_MAXKNOWN];
	for (int64_t i = 0; i < y.dims[0].k; i++) {
		int64_t j = s + i * step;
		if (j < 0 || j >= x->n)
			return;
		d[i] = x->d[j];
	}
	sh_known_set(c, n->out[0], 1, (int)y.dims[0].k, d);
}

void sh_known_propagate(ShapeCtx *c, Node *n)
{
	if (n->nout < 1 || !is_small_int(n->out[0]))
		return;
	const Known *x = n->nin > 0 ? sh_known(c, n->in[0]) : NULL;
	Type y = n->out[0]->type;
	switch (n->op) {
	case OP_Shape:
		known_shape(c, n);
		return;
	case OP_Size: {
		Dim p;
		Type t = n->in[0]->type;
		if (sh_prod(c, t.dims, 0, t.rank, &p) == 0)
			sh_known_set(c, n->out[0], 0, 1, &p);
		return;
	}
	case OP_Constant: {
		int cnt;
		const int64_t *v = rt_attr_ints(&n->attrs, "value_ints", &cnt);
		const Attr *a = rt_attr_find(&n->attrs, "value_int");
		if (!v)
			v = rt_attr_ints(&n->attrs, "value", &cnt);
		if (!a)
			a = rt_attr_find(&n->attrs, "value");
		Dim d[SH_MAXKNOWN];
		if (v && cnt <= SH_MAXKNOWN) {
			for (int i = 0; i < cnt; i++)
				d[i] = dim_c(v[i]);
			sh_known_set(c, n->out[0], 1, cnt, d);
		} else if (a && a->kind == ATTR_INT) {
			d[0] = dim_c(a->i);
			sh_known_set(c, n->out[0], 0, 1, d);
		}
		return;
	}
	case OP_Concat:
		known_concat(c, n);
		return;
	default:
		break;
	}
	if (!x)
		return;
	switch (n->op) {
	case OP_Identity: case OP_Cast: case OP_Squeeze: case OP_Unsqueeze: case OP_Reshape:
		if (y.rank <= 1)
			sh_known_set(c, n->out[0], y.rank, x->n, x->d);
		return;
	case OP_Add: case OP_Sub: case OP_Mul: case OP_Div: {
		const Known *b = sh_known(c, n->in[1]);
		if (b)
			known_arith(c, n, x, b);
		return;
	}
	case OP_Gather:
		known_gather(c, n, x);
		return;
	case OP_Slice:
		known_slice(c, n, x);
		return;
	default:
		return;
	}
}
