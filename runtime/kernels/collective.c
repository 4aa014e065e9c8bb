/* runtime/kernels/collective.c: the single-process meaning of AllToAll and ReduceScatter
 * (Transfer, AllReduce and AllGather reuse Identity, Sum and Concat).  With n inputs of one
 * shape, each cut into n equal chunks along {axis}, AllToAll's output j is the concatenation
 * along {axis} of chunk j of every input: what rank j holds after an all-to-all in which rank i
 * sent its chunk j to rank j; ReduceScatter's output j is the sum of chunk j of every input,
 * added in input order from zero (as the interpreter's all-reduce, runtime/interp.c), then
 * rounded to its dtype: what rank j holds after a reduce-scatter.
 */
#include "runtime/kernels/kernels_impl.h"

/* The checks both kernels share: one output per input, inputs of one type whose axis splits
 * into nin equal chunks; *ax receives the axis.  0, or -1 with e set. */
static int chunked(const char *op, const RtKernelArgs *a, int *ax, RtError *e)
{
	const RtTensor *x = a->in[0];
	int p = a->nin;
	if (a->nout != p)
		return rt_errorf(e, RT_EUSER, "%s: %d inputs but %d outputs", op, p, a->nout);
	if (x->rank < 1)
		return rt_errorf(e, RT_EUSER, "%s: inputs must have rank >= 1", op);
	if (kn_axis(op, rt_attr_int(a->attrs, "axis", 0), x->rank, ax, e) < 0)
		return -1;
	for (int i = 1; i < p; i++)
		if (a->in[i]->rank != x->rank || a->in[i]->dtype != x->dtype ||
		    memcmp(a->in[i]->dims, x->dims, (size_t)x->rank * sizeof x->dims[0]))
			return rt_errorf(e, RT_EUSER, "%s: input %d has a different type", op, i);
	if (x->dims[*ax] % p)
		return rt_errorf(e, RT_EUSER, "%s: dimension %d (%lld) does not split into %d chunks",
				 op, *ax, (long long)x->dims[*ax], p);
	return 0;
}

int rk_AllToAll(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int p = a->nin, ax;
	if (chunked("AllToAll", a, &ax, e) < 0)
		return -1;
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

int rk_ReduceScatter(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int p = a->nin, ax;
	if (chunked("ReduceScatter", a, &ax, e) < 0)
		return -1;
	int64_t outer = kn_numel(ax, x->dims), inner = kn_numel(x->rank - ax - 1, x->dims + ax + 1);
	int64_t len = x->dims[ax], ch = len / p, dims[RT_MAX_RANK];
	memcpy(dims, x->dims, (size_t)x->rank * sizeof dims[0]);
	dims[ax] = ch;
	for (int j = 0; j < p; j++) {
		if (kn_out(a, j, x->dtype, x->rank, dims, e) < 0) {
			kn_free_outs(a);
			return -1;
		}
		RtTensor *y = &a->out[j];
		for (int r = 0; r < p; r++)
			for (int64_t o = 0, i = 0; o < outer; o++)
				for (int64_t q = 0; q < ch * inner; q++, i++)
					rt_set(y, i, rt_get(y, i) + rt_get(a->in[r], (o * len + j * ch) * inner + q));
		if (kn_finish(y, a->opts, e) < 0) {
			kn_free_outs(a);
			return -1;
		}
	}
	return 0;
}
