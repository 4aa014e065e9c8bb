/* runtime/kernels/text.c: TfIdfVectorizer over integer tokens (ONNX opset 9,
 * https://onnx.ai/onnx/operators/onnx__TfIdfVectorizer.html; pool_strings are not supported:
 * aicc has no string dtype).
 *
 * X [C] or [N, C]; the pool holds the n-grams of each length n = 1.. in order, ngram_counts[n-1]
 * is the offset of the n-grams, ngram_indexes the output slot of each pool n-gram.  Per row, every
 * n-gram with min_gram_length <= n <= max_gram_length whose items are skip+1 apart (skip <=
 * max_skip_count; unigrams once) is counted into its slot; mode TF gives the counts, IDF the
 * weight (default 1) of every slot seen, TFIDF count*weight.
 */
#include "runtime/kernels/kernels_impl.h"

int rk_TfIdfVectorizer(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	int nc, ni, np, nw;
	const int64_t *counts = rt_attr_ints(a->attrs, "ngram_counts", &nc);
	const int64_t *idx = rt_attr_ints(a->attrs, "ngram_indexes", &ni);
	const int64_t *pool = rt_attr_ints(a->attrs, "pool_int64s", &np);
	const Attr *wa = rt_attr_find(a->attrs, "weights");
	const double *w = wa && wa->kind == ATTR_FLOATS ? wa->floats : NULL;
	nw = w ? wa->n : 0;
	const char *mode = rt_attr_str(a->attrs, "mode", "TF");
	int64_t mn = rt_attr_int(a->attrs, "min_gram_length", 1), mx = rt_attr_int(a->attrs, "max_gram_length", 1);
	int64_t skips = rt_attr_int(a->attrs, "max_skip_count", 0);
	if (!counts || !idx || !pool || x->rank < 1 || x->rank > 2 || mn < 1 || mx < mn || mx > nc)
		return rt_errorf(e, RT_EUSER, "TfIdfVectorizer: needs ngram_counts, ngram_indexes, pool_int64s, "
				 "1 <= min_gram_length <= max_gram_length <= len(ngram_counts), X [C] or [N, C]");
	/* the attributes index the pool and the output: check them before any use (a plan is hostile input) */
	for (int i = 0; i < nc; i++)
		if (counts[i] < 0 || counts[i] > np || (i > 0 && counts[i] < counts[i - 1]))
			return rt_errorf(e, RT_EUSER, "TfIdfVectorizer: ngram_counts[%d] = %lld must be non-decreasing "
					 "and within [0, %d] (the pool's length)", i, (long long)counts[i], np);
	for (int i = 0; i < ni; i++)
		if (idx[i] < 0 || idx[i] >= (int64_t)1 << 31)
			return rt_errorf(e, RT_EUSER, "TfIdfVectorizer: ngram_indexes[%d] = %lld is out of range [0, 2^31)",
					 i, (long long)idx[i]);
	int tf = !strcmp(mode, "TF"), idf = !strcmp(mode, "IDF");
	if (!tf && !idf && strcmp(mode, "TFIDF"))
		return rt_errorf(e, RT_EUSER, "TfIdfVectorizer: mode must be TF, IDF or TFIDF");
	int64_t width = 0, N = x->rank == 2 ? x->dims[0] : 1, C = x->dims[x->rank - 1];
	for (int i = 0; i < ni; i++)
		width = idx[i] + 1 > width ? idx[i] + 1 : width;
	int64_t dims[2] = { N, width };
	if (x->rank == 1)
		dims[0] = width;
	if (kn_out(a, 0, DT_F32, x->rank, dims, e) < 0)
		return -1;
	RtTensor *y = &a->out[0];
	for (int64_t r = 0; r < N; r++) {
		const int64_t *row = rt_i64(x) + r * C;
		for (int64_t n = mn; n <= mx; n++) {
			int64_t lo = counts[n - 1], hi = n < nc ? counts[n] : np;
			for (int64_t s = 0; s <= skips; s++) {
				if (n == 1 && s > 0)
					break;
				for (int64_t st = 0; st + (n - 1) * (s + 1) < C; st++)
					for (int64_t p = lo; p + n <= hi; p += n) {
						int64_t k = 0;
						while (k < n && pool[p + k] == row[st + k * (s + 1)])
							k++;
						if (k < n)
							continue;
						/* the pool n-gram's ordinal among all pool n-grams */
						int64_t gi = (p - lo) / n;
						for (int64_t q = 1; q < n; q++)
							gi += ((q < nc ? counts[q] : np) - counts[q - 1]) / q;
						if (gi < ni)
							rt_f32(y)[r * width + idx[gi]] += 1;
					}
			}
		}
	}
	for (int64_t i = 0; i < y->n; i++) {
		int64_t slot = i % width, gi = -1;
		for (int k = 0; k < ni && gi < 0; k++)
			if (idx[k] == slot)
				gi = k;
		double wt = w && gi >= 0 && gi < nw ? w[gi] : 1;
		float cnt = rt_f32(y)[i];
		rt_f32(y)[i] = tf ? cnt : idf ? (cnt > 0 ? (float)wt : 0) : (float)(cnt * wt);
	}
	return 0;
}
