/* runtime/kernels/loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX opsets
 * 12/13, https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html and
 * onnx__SoftmaxCrossEntropyLoss.html).
 *
 * Input [N, C, d1..dk], Target [N, d1..dk] (integers), optional Weight [C].  Per element
 * loss = -Input[n, t, d] * w[t] with t = Target[n, d]; an element whose target equals
 * ignore_index contributes 0 and weight 0.  reduction "none" keeps [N, d1..dk]; "sum" adds;
 * "mean" divides the sum by the sum of the weights used (by the count of elements not ignored
 * when there is no Weight), as the ONNX reference implementation does.  Sums run in double in
 * element order and are rounded once to the output dtype.  SoftmaxCrossEntropyLoss is the same
 * on LogSoftmax(scores) along axis 1, which it may also return as its second output.
 */
#include "runtime/kernels/kernels_impl.h"

/* The NLL of log-probabilities lp (a tensor shaped like Input, as doubles) into out[0]. */
static int nll(const RtKernelArgs *a, const char *op, const double *lp, const RtTensor *x, RtError *e)
{
	const RtTensor *t = a->in[1], *w = kn_in(a, 2);
	const char *red = rt_attr_str(a->attrs, "reduction", "mean");
	const Attr *ig = rt_attr_find(a->attrs, "ignore_index");
	int none = strcmp(red, "none") == 0, sum = strcmp(red, "sum") == 0;
	if (!none && !sum && strcmp(red, "mean") != 0)
		return rt_errorf(e, RT_EUSER, "%s: reduction must be none, sum or mean, not '%s'", op, red);
	if (x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0])
		return rt_errorf(e, RT_EUSER, "%s: target must be [N, d1..dk] for input [N, C, d1..dk]", op);
	int64_t N = x->dims[0], C = x->dims[1], D = 1;
	for (int i = 2; i < x->rank; i++) {
		if (t->dims[i - 1] != x->dims[i])
			return rt_errorf(e, RT_EUSER, "%s: target dimension %d is %lld, input has %lld", op,
					 i - 1, (long long)t->dims[i - 1], (long long)x->dims[i]);
		D *= x->dims[i];
	}
	if (w && (w->rank != 1 || w->dims[0] != C))
		return rt_errorf(e, RT_EUSER, "%s: weight must be [C] = [%lld]", op, (long long)C);
	double *l = kn_alloc(N * D, e);
	if (!l)
		return -1;
	double total = 0, wsum = 0;
	for (int64_t n = 0; n < N; n++)
		for (int64_t d = 0; d < D; d++) {
			int64_t k = rt_geti(t, n * D + d);
			double wt = 1, v = 0;
			if (ig && k == ig->i) {
				wt = 0;
			} else if (k < 0 || k >= C) {
				rt_free(l);
				return rt_errorf(e, RT_EUSER, "%s: target %lld is out of range [0, %lld)", op,
						 (long long)k, (long long)C);
			} else {
				wt = w ? rt_get(w, k) : 1.0;
				v = -lp[(n * C + k) * D + d] * wt;
			}
			l[n * D + d] = v;
			total += v;
			wsum += wt;
		}
	int rc;
	if (none) {
		rc = kn_out(a, 0, x->dtype, t->rank, t->dims, e);
		if (rc == 0)
			rc = kn_store(&a->out[0], l, a->opts, e);
	} else {
		double r = sum ? total : total / wsum;
		rc = kn_out(a, 0, x->dtype, 0, NULL, e);
		if (rc == 0)
			rc = kn_store(&a->out[0], &r, a->opts, e);
	}
	rt_free(l);
	return rc;
}

int rk_NegativeLogLikelihoodLoss(const RtKernelArgs *a, RtError *e)
{
	double *x = kn_load(a->in[0], e);
	if (!x)
		return -1;
	int rc = nll(a, "NegativeLogLikelihoodLoss", x, a->in[0], e);
	rt_free(x);
	return rc;
}

int rk_SoftmaxCrossEntropyLoss(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	if (x->rank < 2)
		return rt_errorf(e, RT_EUSER, "SoftmaxCrossEntropyLoss: scores must be [N, C, ...]");
	int64_t N = x->dims[0], C = x->dims[1], D = x->n / (N * C != 0 ? N * C : 1);
	double *v = kn_load(x, e), *row = kn_alloc(C, e);
	int f64 = kn_acc64(a) || x->dtype == DT_F64, rc = -1;
	if (!v || !row)
		goto out;
	for (int64_t n = 0; n < N; n++)   /* log-softmax along axis 1, one (n, d) column at a time */
		for (int64_t d = 0; d < D; d++) {
			for (int64_t c = 0; c < C; c++)
				row[c] = v[(n * C + c) * D + d];
			kn_softmax_row(a->opts, f64, row, C, 1);
			for (int64_t c = 0; c < C; c++)
				v[(n * C + c) * D + d] = row[c];
		}
	if (a->nout > 1) {
		if (kn_out_like(a, 1, x->dtype, x, e) < 0 || kn_store(&a->out[1], v, a->opts, e) < 0)
			goto out;
		if (!f64)   /* the loss reads the log-probabilities as the second output holds them */
			for (int64_t i = 0; i < x->n; i++)
				v[i] = rt_get(&a->out[1], i);
	}
	rc = nll(a, "SoftmaxCrossEntropyLoss", v, x, e);
out:
	if (rc < 0)
		kn_free_outs(a);
	rt_free(v);
	rt_free(row);
	return rc;
}
