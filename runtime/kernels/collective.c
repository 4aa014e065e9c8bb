/* runtime/kernels/collective.c: the single-process meaning of AllToAll (Transfer, AllReduce and
 * AllGather reuse Identity, Sum and Concat).  With n inputs of one shape, each cut into n equal
 * chunks along {axis}, output j is the concatenation along {axis} of chunk j of every input:
 * what rank j holds after an all-to-all in which rank i sent its chunk j to rank j.
 */
#include "runtime/kernels/kernels_impl.h"

int rk_AllToAll(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int p = a->nin, ax;
	if (a->nout != p)
		return rt_errorf(e, RT_EUSER, "AllToAll: %d inputs but %d outputs", p, a->nout);
	if (x->rank < 1)
		return rt_errorf(e, RT_EUSER, "AllToAll: inputs must have rank >= 1");
	if (kn_axis("AllToAll", rt_attr_int(a->attrs, "axis", 0), x->rank, &ax, e) < 0)
		return -1;
	for (int i = 1; i < p; i++)
		if (a->in[i]->rank != x->rank || a->in[i]->dtype != x->dtype ||
		    memcmp(a->in[i]->dims, x->dims, (size_t)x->rank * sizeof x->dims[0]))
			return rt_errorf(e, RT_EUSER, "AllToAll: input %d has a different type", i);
	if (x->dims[ax] % p)
		return rt_errorf(e, RT_EUSER, "AllToAll: dimension %d (%lld) does not split into %d chunks",
				 ax, (long long)x->dims[ax], p);
	int64_t outer = kn_numel(ax, x->dims), inner = kn_numel(x->rank - ax - 1, x->dims + ax + 1);
	int64_t len = x->dims[ax], ch = len / p;
	size_t z = rt_dtypes[x->dtype].storage == S_F32 ? 4 : 8;
	for (int j = 0; j < p; j++) {
		if (kn_out_like(a, j, x->dtype, x, e) < 0) {
			kn_free_outs(a);
			return -1;
		}
		RtTensor *y = &a->out[j];
		if (rt_dtypes[y->dtype].storage != rt_dtypes[x->dtype].storage) {
			kn_free_outs(a);
			return rt_errorf(e, RT_EUSER, "AllToAll: output %d must have the inputs' dtype", j);
		}
		for (int i = 0; i < p; i++)
			for (int64_t o = 0; o < outer; o++)
				memcpy((char *)y->data + (size_t)((o * len + i * ch) * inner) * z,
				       (const char *)a->in[i]->data + (size_t)((o * len + j * ch) * inner) * z,
				       (size_t)(ch * inner) * z);
	}
	return 0;
}
