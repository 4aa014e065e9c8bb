/* runtime/kernels/train.c: the gradient and optimizer operators of a training step (the
 * autodiff pass, passes/autodiff.c, emits them).  Names follow ONNX Runtime's training
 * operators (orttraining/core/graph/gradient_builder.cc: SoftmaxCrossEntropyLossGrad,
 * LayerNormalizationGrad, GeluGrad, GatherGrad as EmbeddingGrad) and PyTorch's AdamW.
 *
 * Every kernel computes in double from its operands' values and rounds once to its outputs'
 * dtype (kn_store), so its error against the exact derivative is the forward operands'
 * rounding plus one rounding of the result; the sums run in index order (deterministic).
 *   SoftmaxCrossEntropyLossGrad(dL, S[N,C], T[N]) -> dS: dL * (softmax(S) - onehot(T)) / count
 *     (reduction mean, ignore_index rows 0) or without the division (sum);
 *   EmbeddingGrad(dY[..., D], Ids[...]) {num_rows=V} -> dTable[V, D]: dY's rows added at
 *     their ids (scatter-add, in id order);
 *   LayerNormalizationGrad(dY, X, Scale) {epsilon} -> dX, dScale, dB over the last axis:
 *     xh = (x - mean) r, g = dY Scale, dX = r (g - mean(g) - xh mean(g xh)), dScale = sum dY xh,
 *     dB = sum dY (Ba, Kiros & Hinton 2016; the derivation of Xu et al., NeurIPS 2019);
 *   RMSNormalizationGrad(dY, X, Scale) {epsilon} -> dX, dScale: r = 1/sqrt(mean(x^2) + eps),
 *     dX = r g - x r^3 mean(g x), dScale = sum dY x r (Zhang & Sennrich 2019);
 *   GeluGrad(dY, X) {approximate} -> dX = dY (Phi(x) + x phi(x)), or the tanh form's derivative;
 *   SiluGrad(dY, X) -> dX = dY s (1 + x (1 - s)), s = sigmoid(x);
 *   AdamW(W, G, M, V, Step) {lr, beta1, beta2, epsilon, weight_decay} -> W', M', V' (Loshchilov
 *     & Hutter, ICLR 2019, Algorithm 2, as torch.optim.AdamW): M' = b1 M + (1-b1) G,
 *     V' = b2 V + (1-b2) G^2, W' = W - lr (wd W + (M'/(1-b1^t)) / (sqrt(V'/(1-b2^t)) + eps)).
 * AttentionGrad lives beside Attention (runtime/kernels/attention.c).
 */
#include "runtime/kernels/kernels_impl.h"

int rk_SoftmaxCrossEntropyLossGrad(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *dl = a->in[0], *s = a->in[1], *t = a->in[2];
	if (dl->n != 1 || s->rank != 2 || t->rank != 1 || t->dims[0] != s->dims[0])
		return rt_errorf(e, RT_EUSER, "SoftmaxCrossEntropyLossGrad: needs a scalar dL, scores [N, C] and targets [N]");
	const char *red = rt_attr_str(a->attrs, "reduction", "mean");
	const Attr *ig = rt_attr_find(a->attrs, "ignore_index");
	if (strcmp(red, "mean") && strcmp(red, "sum"))
		return rt_errorf(e, RT_EUSER, "SoftmaxCrossEntropyLossGrad: reduction must be mean or sum, not '%s'", red);
	int64_t N = s->dims[0], C = s->dims[1], count = 0;
	for (int64_t n = 0; n < N; n++) {
		int64_t k = rt_geti(t, n);
		if (ig && k == ig->i)
			continue;
		if (k < 0 || k >= C)
			return rt_errorf(e, RT_EUSER, "SoftmaxCrossEntropyLossGrad: target %lld is out of range [0, %lld)",
					 (long long)k, (long long)C);
		count++;
	}
	double *v = kn_load(s, e);
	if (!v)
		return -1;
	double f = rt_get(dl, 0) / (strcmp(red, "mean") == 0 && count ? (double)count : 1.0);
	for (int64_t n = 0; n < N; n++) {
		double *row = v + n * C;
		int64_t k = rt_geti(t, n);
		if (ig && k == ig->i) {
			memset(row, 0, (size_t)C * sizeof *row);
			continue;
		}
		kn_softmax_row(a->opts, 1, row, C, 0);
		row[k] -= 1;
		for (int64_t c = 0; c < C; c++)
			row[c] *= f;
	}
	int rc = kn_out_like(a, 0, s->dtype, s, e);
	if (rc == 0)
		rc = kn_store(&a->out[0], v, a->opts, e);
	rt_free(v);
	return rc;
}

int rk_EmbeddingGrad(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *dy = a->in[0], *ids = a->in[1];
	int64_t V = rt_attr_int(a->attrs, "num_rows", 0);
	if (dy->rank != ids->rank + 1 || V < 1)
		return rt_errorf(e, RT_EUSER, "EmbeddingGrad: dY must be Ids' shape + [D], num_rows >= 1");
	int64_t D = dy->dims[dy->rank - 1], dims[2] = { V, D };
	double *g = kn_alloc(V * D, e);
	if (!g)
		return -1;
	memset(g, 0, (size_t)(V * D) * sizeof *g);
	for (int64_t i = 0; i < ids->n; i++) {
		int64_t r = rt_geti(ids, i);
		if (r < 0 || r >= V) {
			rt_free(g);
			return rt_errorf(e, RT_EUSER, "EmbeddingGrad: id %lld outside [0, %lld)", (long long)r, (long long)V);
		}
		for (int64_t d = 0; d < D; d++)
			g[r * D + d] += rt_get(dy, i * D + d);
	}
	int rc = kn_out(a, 0, dy->dtype, 2, dims, e);
	if (rc == 0)
		rc = kn_store(&a->out[0], g, a->opts, e);
	rt_free(g);
	return rc;
}

/* Layer (rms = 0) and RMS (rms = 1) normalisation gradients over the last axis. */
static int norm_grad(const RtKernelArgs *a, RtError *e, const char *op, int rms)
{
	const RtTensor *dy = a->in[0], *x = a->in[1], *sc = a->in[2];
	int64_t H = x->rank ? x->dims[x->rank - 1] : 0;
	if (rt_attr_int(a->attrs, "axis", -1) != -1 && rt_attr_int(a->attrs, "axis", -1) != x->rank - 1)
		return rt_errorf(e, RT_EUSER, "%s: only the last axis is supported", op);
	if (dy->n != x->n || sc->n != H || H < 1)
		return rt_errorf(e, RT_EUSER, "%s: dY and X must agree, Scale must be [%lld]", op, (long long)H);
	double eps = rt_attr_float(a->attrs, "epsilon", 1e-5), *dx = kn_alloc(x->n, e), *ds = kn_alloc(2 * H, e);
	if (!dx || !ds) {
		rt_free(dx), rt_free(ds);
		return -1;
	}
	double *db = ds + H;
	memset(ds, 0, (size_t)(2 * H) * sizeof *ds);
	for (int64_t r = 0; r < x->n / H; r++) {
		const int64_t o = r * H;
		double m = 0, q = 0, mg = 0, mgx = 0;
		for (int64_t i = 0; !rms && i < H; i++)
			m += rt_get(x, o + i);
		m /= (double)H;
		for (int64_t i = 0; i < H; i++)
			q += (rt_get(x, o + i) - m) * (rt_get(x, o + i) - m);
		double inv = 1 / sqrt(q / (double)H + eps);
		for (int64_t i = 0; i < H; i++) {
			double xh = (rt_get(x, o + i) - m) * inv, g = rt_get(dy, o + i) * rt_get(sc, i);
			mg += g, mgx += g * xh;
			ds[i] += rt_get(dy, o + i) * xh;
			db[i] += rt_get(dy, o + i);
		}
		mg /= (double)H, mgx /= (double)H;
		for (int64_t i = 0; i < H; i++) {
			double xh = (rt_get(x, o + i) - m) * inv, g = rt_get(dy, o + i) * rt_get(sc, i);
			dx[o + i] = inv * (g - (rms ? 0 : mg) - xh * mgx);
		}
	}
	int rc = kn_out_like(a, 0, x->dtype, x, e);
	rc = rc ? rc : kn_store(&a->out[0], dx, a->opts, e);
	for (int k = 1; rc == 0 && k < a->nout && k < (rms ? 2 : 3); k++)
		if ((rc = kn_out_like(a, k, sc->dtype, sc, e)) == 0)
			rc = kn_store(&a->out[k], k == 1 ? ds : db, a->opts, e);
	if (rc < 0)
		kn_free_outs(a);
	rt_free(dx), rt_free(ds);
	return rc;
}

int rk_LayerNormalizationGrad(const RtKernelArgs *a, RtError *e) { return norm_grad(a, e, "LayerNormalizationGrad", 0); }
int rk_RMSNormalizationGrad(const RtKernelArgs *a, RtError *e) { return norm_grad(a, e, "RMSNormalizationGrad", 1); }

/* dY * f'(X) elementwise, dY and X of one shape. */
static int act_grad(const RtKernelArgs *a, RtError *e, const char *op, double (*df)(double x, int tanh_form))
{
	const RtTensor *dy = a->in[0], *x = a->in[1];
	const char *ap = rt_attr_str(a->attrs, "approximate", "none");
	if (dy->n != x->n)
		return rt_errorf(e, RT_EUSER, "%s: dY and X must have one shape", op);
	if (strcmp(ap, "none") && strcmp(ap, "tanh"))
		return rt_errorf(e, RT_EUSER, "%s: approximate must be none or tanh, not '%s'", op, ap);
	double *g = kn_alloc(x->n, e);
	if (!g)
		return -1;
	for (int64_t i = 0; i < x->n; i++)
		g[i] = rt_get(dy, i) * df(rt_get(x, i), strcmp(ap, "tanh") == 0);
	int rc = kn_out_like(a, 0, x->dtype, x, e);
	if (rc == 0)
		rc = kn_store(&a->out[0], g, a->opts, e);
	rt_free(g);
	return rc;
}

static double d_gelu(double x, int tanh_form)
{
	if (tanh_form) {   /* 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3) */
		double c = sqrt(2 / M_PI), u = c * (x + 0.044715 * x * x * x), t = tanh(u);
		return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
	}
	return 0.5 * (1 + erf(x / sqrt(2))) + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
}

static double d_silu(double x, int tanh_form)
{
	(void)tanh_form;
	double s = 1 / (1 + exp(-x));
	return s * (1 + x * (1 - s));
}

int rk_GeluGrad(const RtKernelArgs *a, RtError *e) { return act_grad(a, e, "GeluGrad", d_gelu); }
int rk_SiluGrad(const RtKernelArgs *a, RtError *e) { return act_grad(a, e, "SiluGrad", d_silu); }

int rk_AdamW(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *w = a->in[0], *g = a->in[1], *m = a->in[2], *v = a->in[3], *st = a->in[4];
	if (g->n != w->n || m->n != w->n || v->n != w->n || st->n != 1)
		return rt_errorf(e, RT_EUSER, "AdamW: W, G, M and V must have one shape, Step one element");
	double lr = rt_attr_float(a->attrs, "lr", 1e-3), b1 = rt_attr_float(a->attrs, "beta1", 0.9);
	double b2 = rt_attr_float(a->attrs, "beta2", 0.999), eps = rt_attr_float(a->attrs, "epsilon", 1e-8);
	double wd = rt_attr_float(a->attrs, "weight_decay", 0.01), t = rt_get(st, 0);
	if (!(t >= 1))
		return rt_errorf(e, RT_EUSER, "AdamW: step must be >= 1, got %g", t);
	double *o = kn_alloc(3 * w->n, e);
	if (!o)
		return -1;
	double c1 = 1 - pow(b1, t), c2 = 1 - pow(b2, t);
	for (int64_t i = 0; i < w->n; i++) {
		double gi = rt_get(g, i), mi = b1 * rt_get(m, i) + (1 - b1) * gi, vi = b2 * rt_get(v, i) + (1 - b2) * gi * gi;
		double wi = rt_get(w, i);
		o[i] = wi - lr * (wd * wi + (mi / c1) / (sqrt(vi / c2) + eps));
		o[w->n + i] = mi, o[2 * w->n + i] = vi;
	}
	int rc = 0;
	for (int k = 0; rc == 0 && k < 3 && k < a->nout; k++)
		if ((rc = kn_out_like(a, k, k ? m->dtype : w->dtype, w, e)) == 0)
			rc = kn_store(&a->out[k], o + k * w->n, a->opts, e);
	if (rc < 0)
		kn_free_outs(a);
	rt_free(o);
	return rc;
}
