/* ir/shape_collective.c: the shape rules of AllToAll and ReduceScatter, the collectives whose
 * rule is not an existing one (Transfer is unary, AllReduce broadcasts like Sum, AllGather joins
 * like Concat).  Both take n inputs of one type, cut into n equal chunks along {axis}, and give
 * n outputs (docs/language.md): AllToAll's output j joins chunk j of every input (the inputs'
 * type), ReduceScatter's output j is chunk j of the inputs' sum (dimension axis divided by n).
 */
#include <string.h>

#include "ir/shape_int.h"

/* The checks both rules share: n outputs, rank >= 1, equal input types, axis splitting into n
 * equal chunks; *a receives the axis and *q the chunk length.  0, or -1 after a diagnostic. */
static int chunked(ShapeCtx *c, Node *n, const char *what, int *a, Dim *q)
{
	Type x = n->in[0]->type;
	if (n->nout != n->nin)
		return sh_err(c, n, "has %d inputs but %d outputs; %s gives one per device", n->nin, n->nout, what);
	if (x.rank < 1)
		return sh_err(c, n, "inputs must have rank >= 1, input 0 is %s", sh_ty(c, x));
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 0), x.rank, a) < 0)
		return -1;
	for (int i = 1; i < n->nin; i++)
		if (!ir_type_eq(n->in[i]->type, x))
			return sh_err(c, n, "input %d is %s but input 0 is %s", i, sh_ty(c, n->in[i]->type), sh_ty(c, x));
	if (dim_div(c->m, x.dims[*a], dim_c(n->nin), q) < 0)
		return sh_err(c, n, "dimension %d of %s does not split into %d equal chunks", *a, sh_ty(c, x), n->nin);
	return 0;
}

int shape_alltoall(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int a;
	Dim q;
	if (chunked(c, n, "an all-to-all", &a, &q) < 0)
		return -1;
	for (int j = 0; j < n->nout; j++)
		if (sh_set_type(c, n, j, x) < 0)
			return -1;
	return 0;
}

int shape_reducescatter(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	int a;
	Dim q, d[IR_MAX_RANK];
	if (chunked(c, n, "a reduce-scatter", &a, &q) < 0)
		return -1;
	memcpy(d, x.dims, (size_t)x.rank * sizeof d[0]);    /* x.dims is the input's, in the arena */
	d[a] = q;
	for (int j = 0; j < n->nout; j++)
		if (sh_set(c, n, j, x.dt, x.rank, d) < 0)
			return -1;
	return 0;
}
