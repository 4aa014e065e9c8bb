/* runtime/kernels/moe.c: the LLM operators ONNX lacks: Embedding, TopKRouter, MoEDispatch,
 * GroupedMatMul and MoECombine (semantics in docs/language.md).
 *
 * Routing follows DeepSeek-V3 (arXiv 2412.19437 §2.1.2): scores are softmax or sigmoid of the
 * logits; selection uses scores + bias (auxiliary-loss-free balancing) restricted to the
 * topk_group best of n_group expert groups, a group scoring the sum of its two best biased
 * scores (its best one when a group has a single expert); ties go to the lower expert index;
 * the weights are the unbiased scores of the chosen experts, renormalised to sum 1 when
 * normalize=1, times scale.  Dispatch orders the T*k (token, slot) pairs by expert, stably by
 * token then slot; MoECombine recomputes the same order, so dispatch -> GroupedMatMul ->
 * combine equals the dense per-token mixture.
 */
#include "runtime/kernels/kernels_impl.h"

int rk_Embedding(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *tab = a->in[0], *ids = a->in[1];
	if (tab->rank != 2 || ids->rank + 1 > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "Embedding: table must be (V, D)");
	int64_t V = tab->dims[0], D = tab->dims[1], dims[RT_MAX_RANK];
	memcpy(dims, ids->dims, (size_t)ids->rank * sizeof *dims);
	dims[ids->rank] = D;
	if (kn_out(a, 0, tab->dtype, ids->rank + 1, dims, e) < 0)
		return -1;
	size_t z = rt_dtypes[tab->dtype].storage == S_F32 ? 4 : 8;
	for (int64_t i = 0; i < ids->n; i++) {
		int64_t r = rt_geti(ids, i);
		if (r < 0 || r >= V) {
			kn_free_outs(a);
			return rt_errorf(e, RT_EUSER, "Embedding: id %lld outside [0, %lld)", (long long)r, (long long)V);
		}
		memcpy((char *)a->out[0].data + (size_t)(i * D) * z, (char *)tab->data + (size_t)(r * D) * z, (size_t)D * z);
	}
	return 0;
}

/* ---- TopKRouter ---- */
typedef struct Router { int64_t k, G, TG; int sigmoid, normalize; double scale; int exact; } Router;

/* Index of the best not-yet-taken expert among allowed ones (ties: lowest index). */
static int64_t best_of(const double *sel, const char *ok, int64_t E)
{
	int64_t b = -1;
	for (int64_t j = 0; j < E; j++)
		if (ok[j] && (b < 0 || sel[j] > sel[b]))
			b = j;
	return b;
}

/* Marks in ok[] the experts of the TG best groups by the sum of their top-2 selection scores. */
static void pick_groups(const Router *r, const double *sel, int64_t E, char *ok, char *gok)
{
	int64_t per = E / r->G;
	double gs[256];
	for (int64_t g = 0; g < r->G; g++) {
		double m1 = -INFINITY, m2 = -INFINITY;
		for (int64_t j = g * per; j < (g + 1) * per; j++) {
			if (sel[j] > m1)
				m2 = m1, m1 = sel[j];
			else if (sel[j] > m2)
				m2 = sel[j];
		}
		gs[g] = per > 1 ? m1 + m2 : m1;
		gok[g] = 1;
	}
	memset(ok, 0, (size_t)E);
	for (int64_t t = 0; t < r->TG; t++) {
		int64_t b = best_of(gs, gok, r->G);
		gok[b] = 0;
		memset(ok + b * per, 1, (size_t)per);
	}
}

/* Routes one token: writes k weights and expert ids. */
static void route(const Router *r, const double *logit, const RtTensor *bias, int64_t E,
		  double *score, double *sel, char *ok, char *gok, double *w, int64_t *ex)
{
	double m = -INFINITY, s = 0;
	for (int64_t j = 0; j < E; j++)
		m = logit[j] > m ? logit[j] : m;
	for (int64_t j = 0; j < E; j++) {
		score[j] = r->sigmoid ? 1.0 / (1.0 + exp(-logit[j])) : exp(logit[j] - m);
		s += score[j];
	}
	for (int64_t j = 0; j < E; j++) {
		if (!r->sigmoid)
			score[j] = r->exact ? score[j] / s : (double)(float)(score[j] / s);
		if (!r->exact)   /* f32 scores (f64 logits keep theirs: a gradient check's evaluation) */
			score[j] = (double)(float)score[j];
		sel[j] = score[j] + (bias ? rt_get(bias, j) : 0);
	}
	pick_groups(r, sel, E, ok, gok);
	double tot = 0;
	for (int64_t t = 0; t < r->k; t++) {
		ex[t] = best_of(sel, ok, E);
		ok[ex[t]] = 0;
		w[t] = score[ex[t]];
		tot += w[t];
	}
	for (int64_t t = 0; t < r->k; t++)
		w[t] = (r->normalize && tot > 0 ? w[t] / tot : w[t]) * r->scale;
}

int rk_TopKRouter(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *lg = a->in[0], *bias = kn_in(a, 1);
	const char *sc = rt_attr_str(a->attrs, "scoring", "softmax");
	Router r = { rt_attr_int(a->attrs, "k", 1), rt_attr_int(a->attrs, "n_group", 1),
		     rt_attr_int(a->attrs, "topk_group", 1), strcmp(sc, "sigmoid") == 0,
		     (int)rt_attr_int(a->attrs, "normalize", 1), rt_attr_float(a->attrs, "scale", 1.0),
		     lg->dtype == DT_F64 };
	if (lg->rank != 2 || (strcmp(sc, "softmax") && !r.sigmoid))
		return rt_errorf(e, RT_EUSER, "TopKRouter: logits must be (T, E), scoring softmax or sigmoid");
	int64_t T = lg->dims[0], E = lg->dims[1], dims[2] = { T, r.k };
	if (r.G < 1 || r.G > 256 || E % r.G || r.TG < 1 || r.TG > r.G || r.k < 1 || r.k > r.TG * (E / r.G))
		return rt_errorf(e, RT_EUSER, "TopKRouter: need E divisible by n_group <= 256, topk_group <= n_group, k <= experts in the chosen groups");
	if (bias && bias->n != E)
		return rt_errorf(e, RT_EUSER, "TopKRouter: bias needs %lld values", (long long)E);
	double *lv = kn_load(lg, e), *buf = lv ? kn_alloc(2 * E + r.k, e) : NULL;
	char *ok = buf ? rt_malloc((size_t)(E + r.G)) : NULL;
	int64_t *ex = ok ? rt_malloc((size_t)r.k * sizeof *ex) : NULL;
	if (!ex) {
		rt_errorf(e, RT_ENOMEM, "TopKRouter: out of memory");
		goto fail;
	}
	KN_TRY(kn_out(a, 0, r.exact ? DT_F64 : DT_F32, 2, dims, e));
	KN_TRY(kn_out(a, 1, DT_I64, 2, dims, e));
	for (int64_t t = 0; t < T; t++) {
		route(&r, lv + t * E, bias, E, buf, buf + E, ok, ok + E, buf + 2 * E, ex);
		for (int64_t j = 0; j < r.k; j++) {
			rt_set(&a->out[0], t * r.k + j, buf[2 * E + j]);
			if (a->nout > 1)
				rt_seti(&a->out[1], t * r.k + j, ex[j]);
		}
	}
	KN_TRY(kn_finish(&a->out[0], a->opts, e));
	rt_free(lv), rt_free(buf), rt_free(ok), rt_free(ex);
	return 0;
fail:
	rt_free(lv), rt_free(buf), rt_free(ok), rt_free(ex);
	kn_free_outs(a);
	return -1;
}

/* ---- dispatch order ---- */
/* row[p] := the dispatched row of pair p = t*k + j, offsets[E+1] by counting sort (stable). */
static int dispatch_rows(const char *op, const RtTensor *ex, int64_t E, int64_t *row, int64_t *off, RtError *e)
{
	memset(off, 0, (size_t)(E + 1) * sizeof *off);
	for (int64_t p = 0; p < ex->n; p++) {
		int64_t x = rt_geti(ex, p);
		if (x < 0 || x >= E)
			return rt_errorf(e, RT_EUSER, "%s: expert %lld outside [0, %lld)", op, (long long)x, (long long)E);
		off[x + 1]++;
	}
	for (int64_t x = 0; x < E; x++)
		off[x + 1] += off[x];
	int64_t *next = rt_malloc((size_t)(E + 1) * sizeof *next);
	if (!next)
		return rt_errorf(e, RT_ENOMEM, "%s: out of memory", op);
	memcpy(next, off, (size_t)(E + 1) * sizeof *next);
	for (int64_t p = 0; p < ex->n; p++)
		row[p] = next[rt_geti(ex, p)]++;
	rt_free(next);
	return 0;
}

/* Number of experts: the num_experts attribute, else one more than the largest id. */
static int64_t n_experts(const RtKernelArgs *a, const RtTensor *ex)
{
	int64_t E = rt_attr_int(a->attrs, "num_experts", 0);
	if (E > 0)
		return E;
	for (int64_t p = 0; p < ex->n; p++)
		if (rt_geti(ex, p) + 1 > E)
			E = rt_geti(ex, p) + 1;
	return E > 0 ? E : 1;
}

int rk_MoEDispatch(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *ex = a->in[1];
	if (x->rank != 2 || ex->rank != 2 || ex->dims[0] != x->dims[0])
		return rt_errorf(e, RT_EUSER, "MoEDispatch: x must be (T, D) and experts (T, k)");
	int64_t T = x->dims[0], D = x->dims[1], k = ex->dims[1], E = n_experts(a, ex);
	int64_t xd[2] = { T * k, D }, od = E + 1;
	int64_t *row = rt_malloc((size_t)(T * k + 1) * sizeof *row), *off = rt_malloc((size_t)(E + 1) * sizeof *off);
	if (!row || !off) {
		rt_errorf(e, RT_ENOMEM, "MoEDispatch: out of memory");
		goto fail;
	}
	KN_TRY(dispatch_rows("MoEDispatch", ex, E, row, off, e));
	KN_TRY(kn_out(a, 0, x->dtype, 2, xd, e));
	KN_TRY(kn_out(a, 1, DT_I64, 1, &od, e));
	size_t z = rt_dtypes[x->dtype].storage == S_F32 ? 4 : 8;
	for (int64_t p = 0; p < T * k; p++)
		memcpy((char *)a->out[0].data + (size_t)(row[p] * D) * z, (char *)x->data + (size_t)(p / k * D) * z,
		       (size_t)D * z);
	for (int64_t i = 0; a->nout > 1 && i <= E; i++)
		rt_seti(&a->out[1], i, off[i]);
	rt_free(row), rt_free(off);
	return 0;
fail:
	rt_free(row), rt_free(off);
	kn_free_outs(a);
	return -1;
}

int rk_GroupedMatMul(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *xs = a->in[0], *off = a->in[1], *w = a->in[2];
	if (xs->rank != 2 || w->rank != 3 || off->n != w->dims[0] + 1 || w->dims[1] != xs->dims[1])
		return rt_errorf(e, RT_EUSER, "GroupedMatMul: need xs (R, K), offsets (E+1), w (E, K, N)");
	int64_t R = xs->dims[0], K = xs->dims[1], E = w->dims[0], N = w->dims[2], dims[2] = { R, N };
	for (int64_t x = 0; x < E; x++)
		if (rt_geti(off, x) < 0 || rt_geti(off, x) > rt_geti(off, x + 1) || rt_geti(off, x + 1) > R)
			return rt_errorf(e, RT_EUSER, "GroupedMatMul: offsets must be non-decreasing within [0, %lld]", (long long)R);
	int f64 = kn_acc64(a);
	double *xv = kn_load(xs, e), *wv = xv ? kn_load(w, e) : NULL, *y = wv ? kn_alloc(R * N, e) : NULL;
	if (!y)
		goto fail;
	memset(y, 0, (size_t)(R * N) * sizeof *y);
	KN_TRY(kn_out(a, 0, xs->dtype, 2, dims, e));
	for (int64_t x = 0; x < E; x++) {
		int64_t r0 = rt_geti(off, x), n = rt_geti(off, x + 1) - r0;
		if (n > 0)
			KN_TRY(kn_gemm(a->opts, f64, n, N, K, xv + r0 * K, K, 0, wv + x * K * N, N, 0, y + r0 * N, e));
	}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(xv), rt_free(wv), rt_free(y);
	return 0;
fail:
	rt_free(xv), rt_free(wv), rt_free(y);
	kn_free_outs(a);
	return -1;
}

int rk_MoECombine(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *ys = a->in[0], *wt = a->in[1], *ex = a->in[2];
	if (ys->rank != 2 || wt->rank != 2 || ex->rank != 2 || wt->n != ex->n || ys->dims[0] != ex->n)
		return rt_errorf(e, RT_EUSER, "MoECombine: need ys (T*k, D), weights and experts (T, k)");
	int64_t T = ex->dims[0], k = ex->dims[1], D = ys->dims[1], E = n_experts(a, ex), dims[2] = { T, D };
	int f64 = kn_acc64(a);
	int64_t *row = rt_malloc((size_t)(T * k + 1) * sizeof *row), *off = rt_malloc((size_t)(E + 1) * sizeof *off);
	double *y = kn_alloc(T * D, e);
	if (!row || !off || !y) {
		rt_errorf(e, RT_ENOMEM, "MoECombine: out of memory");
		goto fail;
	}
	KN_TRY(dispatch_rows("MoECombine", ex, E, row, off, e));
	KN_TRY(kn_out(a, 0, ys->dtype, 2, dims, e));
	for (int64_t t = 0; t < T; t++)
		for (int64_t d = 0; d < D; d++) {
			double s = 0;
			for (int64_t j = 0; j < k; j++)
				s = kn_acc(f64, s + kn_acc(f64, rt_get(wt, t * k + j) * rt_get(ys, row[t * k + j] * D + d)));
			y[t * D + d] = s;
		}
	KN_TRY(kn_store(&a->out[0], y, a->opts, e));
	rt_free(row), rt_free(off), rt_free(y);
	return 0;
fail:
	rt_free(row), rt_free(off), rt_free(y);
	kn_free_outs(a);
	return -1;
}

/* ---- gradients (passes/autodiff.c) ----
 * TopKRouterGrad(dW[T,k], Logits[T,E], Experts[T,k]) {TopKRouter's attributes} -> dLogits: the
 * scores s recomputed from the logits (softmax or sigmoid, in double); a chosen expert's weight
 * is w_j = scale u_j / U (normalize=1, u_j = s[e_j], U = sum_l u_l) or scale u_j, so
 * dL/du_j = scale (dw_j - sum_l dw_l w_l / scale) / U, or scale dw_j; ds_i gathers the du of the
 * slots choosing expert i, and dz_i = s_i (ds_i - sum_m s_m ds_m) (softmax) or ds_i s_i (1 - s_i)
 * (sigmoid).  The selection is piecewise constant (no gradient), as the bias's role in it. */
int rk_TopKRouterGrad(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *dw = a->in[0], *lg = a->in[1], *ex = a->in[2];
	const char *sc = rt_attr_str(a->attrs, "scoring", "softmax");
	int sig = strcmp(sc, "sigmoid") == 0, norm = (int)rt_attr_int(a->attrs, "normalize", 1);
	double scale = rt_attr_float(a->attrs, "scale", 1.0);
	if (lg->rank != 2 || ex->rank != 2 || ex->dims[0] != lg->dims[0] || dw->n != ex->n || (strcmp(sc, "softmax") && !sig))
		return rt_errorf(e, RT_EUSER, "TopKRouterGrad: need dW and experts (T, k), logits (T, E), scoring softmax or sigmoid");
	int64_t T = lg->dims[0], E = lg->dims[1], k = ex->dims[1];
	double *z = kn_load(lg, e), *s = z ? kn_alloc(2 * E + k, e) : NULL;
	if (!s) {
		rt_free(z);
		return -1;
	}
	double *ds = s + E, *du = s + 2 * E;
	for (int64_t t = 0; t < T; t++) {
		double *zt = z + t * E, m = -INFINITY, tot = 0, U = 0, dwu = 0, sds = 0;
		for (int64_t i = 0; i < E; i++)
			m = zt[i] > m ? zt[i] : m;
		for (int64_t i = 0; i < E; i++) {
			s[i] = sig ? 1.0 / (1.0 + exp(-zt[i])) : exp(zt[i] - m);
			tot += s[i];
			ds[i] = 0;
		}
		for (int64_t i = 0; !sig && i < E; i++)
			s[i] /= tot;
		for (int64_t j = 0; j < k; j++) {
			int64_t x = rt_geti(ex, t * k + j);
			if (x < 0 || x >= E) {
				rt_free(z), rt_free(s);
				return rt_errorf(e, RT_EUSER, "TopKRouterGrad: expert %lld outside [0, %lld)", (long long)x, (long long)E);
			}
			U += s[x];
			dwu += rt_get(dw, t * k + j) * s[x];
		}
		for (int64_t j = 0; j < k; j++) {
			double g = rt_get(dw, t * k + j);
			du[j] = norm && U > 0 ? scale * (g - dwu / U) / U : scale * g;
			ds[rt_geti(ex, t * k + j)] += du[j];
		}
		for (int64_t i = 0; i < E; i++)
			sds += s[i] * ds[i];
		for (int64_t i = 0; i < E; i++)
			zt[i] = sig ? ds[i] * s[i] * (1 - s[i]) : s[i] * (ds[i] - sds);
	}
	int rc = kn_out_like(a, 0, lg->dtype, lg, e);
	if (rc == 0)
		rc = kn_store(&a->out[0], z, a->opts, e);
	rt_free(z), rt_free(s);
	return rc;
}

/* GroupedMatMulGrad(dY[R,N], Xs[R,K], Offsets[E+1]) -> dW[E,K,N]: dW[x] = Xs[rows of x]^T
 * dY[rows of x], the weight gradient of GroupedMatMul (zero for an expert without rows). */
int rk_GroupedMatMulGrad(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *dy = a->in[0], *xs = a->in[1], *off = a->in[2];
	if (dy->rank != 2 || xs->rank != 2 || off->rank != 1 || dy->dims[0] != xs->dims[0] || off->n < 2)
		return rt_errorf(e, RT_EUSER, "GroupedMatMulGrad: need dY (R, N), xs (R, K), offsets (E+1)");
	int64_t R = xs->dims[0], K = xs->dims[1], N = dy->dims[1], E = off->n - 1, dims[3] = { E, K, N };
	for (int64_t x = 0; x < E; x++)
		if (rt_geti(off, x) < 0 || rt_geti(off, x) > rt_geti(off, x + 1) || rt_geti(off, x + 1) > R)
			return rt_errorf(e, RT_EUSER, "GroupedMatMulGrad: offsets must be non-decreasing within [0, %lld]", (long long)R);
	int f64 = kn_acc64(a);
	double *xv = kn_load(xs, e), *gv = xv ? kn_load(dy, e) : NULL, *w = gv ? kn_alloc(E * K * N, e) : NULL;
	if (!w)
		goto fail;
	memset(w, 0, (size_t)(E * K * N) * sizeof *w);
	KN_TRY(kn_out(a, 0, dy->dtype, 3, dims, e));
	for (int64_t x = 0; x < E; x++) {
		int64_t r0 = rt_geti(off, x), n = rt_geti(off, x + 1) - r0;
		if (n > 0)
			KN_TRY(kn_gemm(a->opts, f64, K, N, n, xv + r0 * K, K, 1, gv + r0 * N, N, 0, w + x * K * N, e));
	}
	KN_TRY(kn_store(&a->out[0], w, a->opts, e));
	rt_free(xv), rt_free(gv), rt_free(w);
	return 0;
fail:
	rt_free(xv), rt_free(gv), rt_free(w);
	kn_free_outs(a);
	return -1;
}

/* MoECombineGrad(dY[T,D], Ys[T*k,D], Weights[T,k], Experts[T,k]) {num_experts} -> dYs, dWeights:
 * dYs[row of (t,j)] = Weights[t,j] dY[t], dWeights[t,j] = dY[t] . Ys[row of (t,j)] (MoECombine's
 * adjoints, the rows in MoEDispatch's order). */
int rk_MoECombineGrad(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *dy = a->in[0], *ys = a->in[1], *wt = a->in[2], *ex = a->in[3];
	if (dy->rank != 2 || ys->rank != 2 || wt->rank != 2 || ex->rank != 2 || wt->n != ex->n || ys->dims[0] != ex->n ||
	    dy->dims[0] != ex->dims[0] || dy->dims[1] != ys->dims[1])
		return rt_errorf(e, RT_EUSER, "MoECombineGrad: need dY (T, D), ys (T*k, D), weights and experts (T, k)");
	int64_t T = ex->dims[0], k = ex->dims[1], D = ys->dims[1], E = n_experts(a, ex);
	int f64 = kn_acc64(a);
	int64_t *row = rt_malloc((size_t)(T * k + 1) * sizeof *row), *off = rt_malloc((size_t)(E + 1) * sizeof *off);
	double *g = kn_alloc(T * k * D + T * k, e);
	if (!row || !off || !g) {
		rt_errorf(e, RT_ENOMEM, "MoECombineGrad: out of memory");
		goto fail;
	}
	KN_TRY(dispatch_rows("MoECombineGrad", ex, E, row, off, e));
	double *gw = g + T * k * D;
	for (int64_t p = 0; p < T * k; p++) {
		int64_t t = p / k;
		double w = rt_get(wt, p), s = 0;
		for (int64_t d = 0; d < D; d++) {
			double y = rt_get(dy, t * D + d);
			g[row[p] * D + d] = w * y;
			s = kn_acc(f64, s + kn_acc(f64, y * rt_get(ys, row[p] * D + d)));
		}
		gw[p] = s;
	}
	KN_TRY(kn_out_like(a, 0, ys->dtype, ys, e));
	KN_TRY(kn_store(&a->out[0], g, a->opts, e));
	if (a->nout > 1) {
		KN_TRY(kn_out_like(a, 1, wt->dtype, wt, e));
		KN_TRY(kn_store(&a->out[1], gw, a->opts, e));
	}
	rt_free(row), rt_free(off), rt_free(g);
	return 0;
fail:
	rt_free(row), rt_free(off), rt_free(g);
	kn_free_outs(a);
	return -1;
}
