/* runtime/kernels/rnn.c: the ONNX recurrent operators RNN, GRU and LSTM (opsets 7-14,
 * https://onnx.ai/onnx/operators/onnx__RNN.html, onnx__GRU.html, onnx__LSTM.html).
 *
 * X [seq, batch, input] (layout=0) or [batch, seq, input] (layout=1); W [dirs, G*hidden, input],
 * R [dirs, G*hidden, hidden], B [dirs, 2*G*hidden] (Wb then Rb), sequence_lens [batch],
 * initial_h [dirs, batch, hidden], LSTM initial_c and P [dirs, 3*hidden] (peepholes i, o, f).
 * Gates in ONNX order: GRU z, r, h; LSTM i, o, f, c.  Activations {activations,
 * activation_alpha, activation_beta} per direction (defaults: RNN Tanh; GRU Sigmoid, Tanh; LSTM
 * Sigmoid, Tanh, Tanh); {clip} bounds the gate pre-activations; GRU {linear_before_reset};
 * LSTM {input_forget} couples f = 1 - i.  Steps at or past a batch row's sequence length are not
 * computed: their Y rows are 0 and the state is carried.  Y [seq, dirs, batch, hidden] (layout 1:
 * [batch, seq, dirs, hidden]), Y_h and Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
 * Products are summed in double in index order, each gate rounded to f32 unless f64.
 */
#include "runtime/kernels/kernels_impl.h"

typedef enum { RNN_T, GRU_T, LSTM_T } Cell;

typedef struct Act { char name[24]; double alpha, beta; } Act;

static double act(const Act *a, double x)
{
	const char *n = a->name;
	if (!strcmp(n, "Sigmoid"))
		return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
	if (!strcmp(n, "Tanh"))
		return tanh(x);
	if (!strcmp(n, "Relu"))
		return x > 0 ? x : 0;
	if (!strcmp(n, "Affine"))
		return a->alpha * x + a->beta;
	if (!strcmp(n, "LeakyRelu"))
		return x >= 0 ? x : a->alpha * x;
	if (!strcmp(n, "ThresholdedRelu"))
		return x > a->alpha ? x : 0;
	if (!strcmp(n, "ScaledTanh"))
		return a->alpha * tanh(a->beta * x);
	if (!strcmp(n, "HardSigmoid"))
		return fmax(0.0, fmin(1.0, a->alpha * x + a->beta));
	if (!strcmp(n, "Elu"))
		return x >= 0 ? x : a->alpha * expm1(x);
	if (!strcmp(n, "Softsign"))
		return x / (1.0 + fabs(x));
	return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));   /* Softplus */
}

static int known_act(const char *n)
{
	static const char *names[] = { "Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
				       "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(names[i], n))
			return 1;
	return 0;
}

/* Defaults of the activations' alpha and beta (the ONNX activation function table). */
static double def_alpha(const char *n)
{
	return !strcmp(n, "LeakyRelu") ? 0.01 : !strcmp(n, "HardSigmoid") ? 0.2 : 1.0;
}
static double def_beta(const char *n) { return !strcmp(n, "HardSigmoid") ? 0.5 : !strcmp(n, "Affine") ? 0.0 : 1.0; }

typedef struct Rnn {
	Cell cell;
	int G, nact, dirs, layout, lbr, input_forget;
	int64_t S, B, I, H;
	double clip;
	Act acts[6];
	int f64;
} Rnn;

static int setup_acts(const RtKernelArgs *a, Rnn *r, const char *op, RtError *e)
{
	static const char *defs[3][3] = { { "Tanh" }, { "Sigmoid", "Tanh" }, { "Sigmoid", "Tanh", "Tanh" } };
	const Attr *as = rt_attr_find(a->attrs, "activations");
	int nf, nb;
	const double *al = NULL, *be = NULL;
	const Attr *aa = rt_attr_find(a->attrs, "activation_alpha"), *ab = rt_attr_find(a->attrs, "activation_beta");
	if (aa && aa->kind == ATTR_FLOATS)
		al = aa->floats, nf = aa->n;
	else
		nf = 0;
	if (ab && ab->kind == ATTR_FLOATS)
		be = ab->floats, nb = ab->n;
	else
		nb = 0;
	int per = r->cell == RNN_T ? 1 : r->cell == GRU_T ? 2 : 3;
	r->nact = per;
	for (int d = 0; d < r->dirs; d++)
		for (int k = 0; k < per; k++) {
			int j = d * per + k;
			char n[24];
			snprintf(n, sizeof n, "%s", defs[r->cell][k]);
			if (as && as->kind == ATTR_STRING) {   /* the importer joins string lists with ',' */
				const char *p = as->s;
				for (int q = 0; q < j && p; q++)
					if ((p = strchr(p, ',')))
						p++;
				if (p && *p)
					snprintf(n, sizeof n, "%.*s", (int)strcspn(p, ","), p);
			}
			if (!known_act(n))
				return rt_errorf(e, RT_EUSER, "%s: unknown activation '%s'", op, n);
			memcpy(r->acts[j].name, n, sizeof n);
			r->acts[j].alpha = j < nf ? al[j] : def_alpha(n);
			r->acts[j].beta = j < nb ? be[j] : def_beta(n);
		}
	return 0;
}

/* pre[g*H + h] := W_g x + R_g h_prev + biases, for one batch row. */
static double dot(const RtTensor *m, int64_t row, int64_t len, const double *v)
{
	double s = 0;
	for (int64_t k = 0; k < len; k++)
		s += rt_get(m, row * len + k) * v[k];
	return s;
}

static double clipv(const Rnn *r, double x) { return r->clip > 0 ? fmax(-r->clip, fmin(r->clip, x)) : x; }

static int rnn(const RtKernelArgs *a, RtError *e, Cell cell, const char *op)
{
	const RtTensor *X = a->in[0], *W = a->in[1], *R = a->in[2];
	const RtTensor *Bv = kn_in(a, 3), *lens = kn_in(a, 4), *h0 = kn_in(a, 5);
	const RtTensor *c0 = cell == LSTM_T ? kn_in(a, 6) : NULL, *P = cell == LSTM_T ? kn_in(a, 7) : NULL;
	Rnn r = { .cell = cell, .G = cell == RNN_T ? 1 : cell == GRU_T ? 3 : 4 };
	const char *dir = rt_attr_str(a->attrs, "direction", "forward");
	r.dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	int reverse = !strcmp(dir, "reverse");
	if (!reverse && r.dirs == 1 && strcmp(dir, "forward"))
		return rt_errorf(e, RT_EUSER, "%s: direction must be forward, reverse or bidirectional", op);
	r.layout = (int)rt_attr_int(a->attrs, "layout", 0);
	r.lbr = (int)rt_attr_int(a->attrs, "linear_before_reset", 0);
	r.input_forget = (int)rt_attr_int(a->attrs, "input_forget", 0);
	r.clip = rt_attr_float(a->attrs, "clip", 0);
	r.f64 = kn_acc64(a) || X->dtype == DT_F64;
	if (X->rank != 3 || W->rank != 3 || R->rank != 3)
		return rt_errorf(e, RT_EUSER, "%s: X, W and R must be 3-D", op);
	r.S = X->dims[r.layout ? 1 : 0], r.B = X->dims[r.layout ? 0 : 1], r.I = X->dims[2];
	r.H = W->dims[1] / r.G;
	int64_t S = r.S, Bn = r.B, I = r.I, H = r.H, G = r.G;
	if (W->dims[0] != r.dirs || W->dims[1] != G * H || W->dims[2] != I || R->dims[2] != H)
		return rt_errorf(e, RT_EUSER, "%s: W must be [%d, %lld, %lld] and R [%d, %lld, %lld]", op, r.dirs,
				 (long long)(G * H), (long long)I, r.dirs, (long long)(G * H), (long long)H);
	if (setup_acts(a, &r, op, e) < 0)
		return -1;
	int64_t yd[4], hd[3];
	if (r.layout)
		yd[0] = Bn, yd[1] = S, yd[2] = r.dirs, yd[3] = H, hd[0] = Bn, hd[1] = r.dirs, hd[2] = H;
	else
		yd[0] = S, yd[1] = r.dirs, yd[2] = Bn, yd[3] = H, hd[0] = r.dirs, hd[1] = Bn, hd[2] = H;
	if (kn_out(a, 0, X->dtype, 4, yd, e) < 0 || kn_out(a, 1, X->dtype, 3, hd, e) < 0 ||
	    kn_out(a, 2, X->dtype, 3, hd, e) < 0)
		goto fail;
	double *h = kn_alloc(H, e), *c = kn_alloc(H, e), *x = kn_alloc(I, e), *pre = kn_alloc(G * H, e);
	double *rec = kn_alloc(G * H, e), *hn = kn_alloc(H, e);
	if (!h || !c || !x || !pre || !rec || !hn) {
		rt_free(h), rt_free(c), rt_free(x), rt_free(pre), rt_free(rec), rt_free(hn);
		goto fail;
	}
	for (int d = 0; d < r.dirs; d++) {
		const Act *A = r.acts + d * r.nact;
		int back = reverse || d == 1;
		for (int64_t b = 0; b < Bn; b++) {
			int64_t len = lens ? rt_geti(lens, b) : S;
			if (len > S)
				len = S;
			for (int64_t k = 0; k < H; k++) {
				h[k] = h0 ? rt_get(h0, (d * Bn + b) * H + k) : 0;
				c[k] = c0 ? rt_get(c0, (d * Bn + b) * H + k) : 0;
			}
			for (int64_t step = 0; step < len; step++) {
				int64_t t = back ? len - 1 - step : step;
				for (int64_t k = 0; k < I; k++)
					x[k] = rt_get(X, (r.layout ? b * S + t : t * Bn + b) * I + k);
				for (int64_t g = 0; g < G * H; g++) {
					double wb = Bv ? rt_get(Bv, d * 2 * G * H + g) : 0;
					double rb = Bv ? rt_get(Bv, d * 2 * G * H + G * H + g) : 0;
					pre[g] = kn_acc(r.f64, dot(W, d * G * H + g, I, x) + wb);
					rec[g] = kn_acc(r.f64, dot(R, d * G * H + g, H, h) + rb);
				}
				for (int64_t k = 0; k < H; k++) {
					if (cell == RNN_T) {
						hn[k] = act(&A[0], clipv(&r, pre[k] + rec[k]));
					} else if (cell == GRU_T) {
						double z = act(&A[0], clipv(&r, pre[k] + rec[k]));
						double rr = act(&A[0], clipv(&r, pre[H + k] + rec[H + k]));
						double hh;
						if (r.lbr) {
							hh = act(&A[1], clipv(&r, pre[2 * H + k] + rr * rec[2 * H + k]));
						} else {
							double s = 0, rb = Bv ? rt_get(Bv, d * 2 * G * H + G * H + 2 * H + k) : 0;
							for (int64_t q = 0; q < H; q++)
								s += rt_get(R, (d * G * H + 2 * H + k) * H + q) * rr * h[q];
							hh = act(&A[1], clipv(&r, pre[2 * H + k] + kn_acc(r.f64, s + rb)));
						}
						hn[k] = (1 - z) * hh + z * h[k];
					} else {
						double pi = P ? rt_get(P, d * 3 * H + k) : 0, po = P ? rt_get(P, d * 3 * H + H + k) : 0;
						double pf = P ? rt_get(P, d * 3 * H + 2 * H + k) : 0;
						double ig = act(&A[0], clipv(&r, pre[k] + rec[k] + pi * c[k]));
						double fg = r.input_forget ? 1 - ig : act(&A[0], clipv(&r, pre[2 * H + k] + rec[2 * H + k] + pf * c[k]));
						double cg = act(&A[1], clipv(&r, pre[3 * H + k] + rec[3 * H + k]));
						double cn = kn_acc(r.f64, fg * c[k] + ig * cg);
						double og = act(&A[0], clipv(&r, pre[H + k] + rec[H + k] + po * cn));
						c[k] = cn;
						hn[k] = og * act(&A[2], cn);
					}
				}
				for (int64_t k = 0; k < H; k++) {
					h[k] = kn_acc(r.f64, hn[k]);
					int64_t yi = r.layout ? ((b * S + t) * r.dirs + d) * H + k : ((t * r.dirs + d) * Bn + b) * H + k;
					rt_set(&a->out[0], yi, h[k]);
				}
			}
			for (int64_t k = 0; k < H; k++) {
				int64_t hi = r.layout ? (b * r.dirs + d) * H + k : (d * Bn + b) * H + k;
				if (a->nout > 1)
					rt_set(&a->out[1], hi, h[k]);
				if (a->nout > 2)
					rt_set(&a->out[2], hi, c[k]);
			}
		}
	}
	rt_free(h), rt_free(c), rt_free(x), rt_free(pre), rt_free(rec), rt_free(hn);
	for (int i = 0; i < a->nout; i++)
		if (kn_finish(&a->out[i], a->opts, e) < 0)
			goto fail;
	return 0;
fail:
	kn_free_outs(a);
	return -1;
}

int rk_RNN(const RtKernelArgs *a, RtError *e) { return rnn(a, e, RNN_T, "RNN"); }
int rk_GRU(const RtKernelArgs *a, RtError *e) { return rnn(a, e, GRU_T, "GRU"); }
int rk_LSTM(const RtKernelArgs *a, RtError *e) { return rnn(a, e, LSTM_T, "LSTM"); }
