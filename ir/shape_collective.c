/* ir/shape_collective.c: the shape rule of AllToAll, the one collective whose rule is not an
 * existing one (Transfer is unary, AllReduce broadcasts like Sum, AllGather joins like Concat).
 * AllToAll takes n inputs of one type and gives n outputs of that type: each input is cut into
 * n equal chunks along {axis} and output j joins chunk j of every input (docs/language.md).
 */
#include "ir/shape_int.h"

int shape_alltoall(ShapeCtx *c, Node *n)
{
	Type x = n->in[0]->type;
	if (n->nout != n->nin)
		return sh_err(c, n, "has %d inputs but %d outputs; an all-to-all exchanges one per device", n->nin, n->nout);
	if (x.rank < 1)
		return sh_err(c, n, "inputs must have rank >= 1, input 0 is %s", sh_ty(c, x));
	int a;
	if (sh_axis(c, n, "axis", rt_attr_int(&n->attrs, "axis", 0), x.rank, &a) < 0)
		return -1;
	for (int i = 1; i < n->nin; i++)
		if (!ir_type_eq(n->in[i]->type, x))
			return sh_err(c, n, "input %d is %s but input 0 is %s", i, sh_ty(c, n->in[i]->type), sh_ty(c, x));
	Dim q;
	if (dim_div(c->m, x.dims[a], dim_c(n->nin), &q) < 0)
		return sh_err(c, n, "dimension %d of %s does not split into %d equal chunks", a, sh_ty(c, x), n->nin);
	for (int j = 0; j < n->nout; j++)
		if (sh_set_type(c, n, j, x) < 0)
			return -1;
	return 0;
}
