/* runtime/kernels/detect.c: NonMaxSuppression, GridSample, RoiAlign and Unique
 * (https://onnx.ai/onnx/operators/onnx__NonMaxSuppression.html, onnx__GridSample.html,
 * onnx__RoiAlign.html, onnx__Unique.html), following the ONNX reference implementations.
 *
 * NonMaxSuppression: per (batch, class), boxes with score > score_threshold in descending
 * score order (ties: lower box index first) are kept greedily unless their IoU with a kept box
 * exceeds iou_threshold, at most max_output_boxes_per_class; corners in any diagonal order
 * (center_point_box=0) or [x_c, y_c, w, h] (1).  GridSample (2-D): bilinear / nearest (round half
 * to even) / bicubic (A = -0.75) sampling of X at grid positions in [-1, 1], with zeros, border
 * or reflection padding and align_corners.  RoiAlign: onnxruntime's algorithm, which the ONNX
 * reference (onnx/reference/ops/op_roi_align.py) copies: each box (x1, y1, x2, y2) times
 * spatial_scale, less 0.5 in half_pixel mode (output_half_pixel: not shifted, the box at least
 * 1 x 1), is cut into output_height x output_width bins of sampling_ratio^2 bilinear samples
 * (sampling_ratio 0: ceil(box side / bins) per side); a sample beyond [-1, H] x [-1, W] is 0, one
 * in [-1, 0] is clamped to 0; a bin is the mean of its samples (avg) or the largest weighted
 * corner term over them (max, as onnxruntime computes it).  Unique: the distinct values (or slices along
 * {axis}), sorted ascending {sorted=1} or in order of first occurrence, with first indices,
 * inverse indices and counts.  The output shapes depend on the values, so shape inference
 * evaluates these at compile time (ir/eval.c) when the inputs are known.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels_impl.h"

/* ---- NonMaxSuppression ---- */
typedef struct Box { double y1, x1, y2, x2; } Box;

static Box box_at(const RtTensor *b, int64_t i, int center)
{
	double v[4];
	for (int k = 0; k < 4; k++)
		v[k] = rt_get(b, i * 4 + k);
	Box r;
	if (center) {
		r.x1 = v[0] - v[2] / 2, r.x2 = v[0] + v[2] / 2, r.y1 = v[1] - v[3] / 2, r.y2 = v[1] + v[3] / 2;
	} else {
		r.y1 = fmin(v[0], v[2]), r.y2 = fmax(v[0], v[2]), r.x1 = fmin(v[1], v[3]), r.x2 = fmax(v[1], v[3]);
	}
	return r;
}

static double iou(Box a, Box b)
{
	double w = fmin(a.x2, b.x2) - fmax(a.x1, b.x1), h = fmin(a.y2, b.y2) - fmax(a.y1, b.y1);
	if (w <= 0 || h <= 0)
		return 0;
	double inter = w * h, u = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
	return u > 0 ? inter / u : 0;
}

typedef struct Cand { double s; int64_t i; } Cand;

static int by_score(const void *pa, const void *pb)
{
	const Cand *a = pa, *b = pb;
	if (a->s != b->s)
		return a->s > b->s ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

int rk_NonMaxSuppression(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *boxes = a->in[0], *scores = a->in[1];
	const RtTensor *mo = kn_in(a, 2), *it = kn_in(a, 3), *st = kn_in(a, 4);
	if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 || scores->dims[0] != boxes->dims[0] ||
	    scores->dims[2] != boxes->dims[1])
		return rt_errorf(e, RT_EUSER, "NonMaxSuppression: boxes must be [B, N, 4] and scores [B, C, N]");
	int64_t B = boxes->dims[0], N = boxes->dims[1], C = scores->dims[1];
	int64_t maxo = mo && mo->n ? rt_geti(mo, 0) : 0;
	double thr = it && it->n ? rt_get(it, 0) : 0, sthr = st && st->n ? rt_get(st, 0) : -INFINITY;
	int center = (int)rt_attr_int(a->attrs, "center_point_box", 0);
	Cand *cand = rt_malloc(sizeof *cand * (size_t)(N ? N : 1));
	int64_t *sel = rt_malloc(sizeof *sel * (size_t)(B * C * N * 3 + 3)), nsel = 0;
	int64_t *kept = rt_malloc(sizeof *kept * (size_t)(N ? N : 1));
	int rc = -1;
	if (!cand || !sel || !kept) {
		rt_errorf(e, RT_ENOMEM, "NonMaxSuppression: out of memory");
		goto out;
	}
	for (int64_t b = 0; b < B; b++)
		for (int64_t c = 0; c < C; c++) {
			int64_t nc = 0, nk = 0;
			for (int64_t i = 0; i < N; i++) {
				double s = rt_get(scores, (b * C + c) * N + i);
				if (s > sthr)
					cand[nc++] = (Cand){ s, i };
			}
			qsort(cand, (size_t)nc, sizeof *cand, by_score);
			for (int64_t k = 0; k < nc && nk < maxo; k++) {
				Box x = box_at(boxes, b * N + cand[k].i, center);
				int keep = 1;
				for (int64_t j = 0; j < nk && keep; j++)
					keep = iou(x, box_at(boxes, b * N + kept[j], center)) <= thr;
				if (!keep)
					continue;
				kept[nk++] = cand[k].i;
				sel[nsel * 3] = b, sel[nsel * 3 + 1] = c, sel[nsel * 3 + 2] = cand[k].i;
				nsel++;
			}
		}
	int64_t dims[2] = { nsel, 3 };
	if (kn_out(a, 0, DT_I64, 2, dims, e) == 0) {
		memcpy(a->out[0].data, sel, (size_t)nsel * 3 * sizeof *sel);
		rc = 0;
	}
out:
	rt_free(cand), rt_free(sel), rt_free(kept);
	return rc;
}

/* ---- GridSample (2-D) ---- */
typedef struct Gs { const RtTensor *x; int64_t base, H, W; int pad; double bx0, by0, bx1, by1; } Gs;
enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECT };

static double reflect(double x, double lo, double hi)
{
	double rng = hi - lo;
	if (rng <= 0)
		return lo;
	if (x < lo) {
		double dx = lo - x;
		int64_t k = (int64_t)(dx / rng);
		double r = dx - (double)k * rng;
		return k % 2 == 0 ? lo + r : hi - r;
	}
	if (x > hi) {
		double dx = x - hi;
		int64_t k = (int64_t)(dx / rng);
		double r = dx - (double)k * rng;
		return k % 2 == 0 ? hi - r : lo + r;
	}
	return x;
}

static double pixel(const Gs *g, int64_t yy, int64_t xx)
{
	if (g->pad == PAD_ZEROS) {
		if (yy < 0 || yy >= g->H || xx < 0 || xx >= g->W)
			return 0;
	} else if (g->pad == PAD_BORDER) {
		yy = yy < 0 ? 0 : yy >= g->H ? g->H - 1 : yy;
		xx = xx < 0 ? 0 : xx >= g->W ? g->W - 1 : xx;
	} else {
		yy = (int64_t)reflect((double)yy, g->by0, g->by1);
		xx = (int64_t)reflect((double)xx, g->bx0, g->bx1);
		yy = yy < 0 ? 0 : yy >= g->H ? g->H - 1 : yy;
		xx = xx < 0 ? 0 : xx >= g->W ? g->W - 1 : xx;
	}
	return rt_get(g->x, g->base + yy * g->W + xx);
}

static void cubic_coeffs(double t, double *w)
{
	const double A = -0.75;
	w[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
	w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
	w[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
	w[3] = 1 - w[0] - w[1] - w[2];
}

/* One sample of channel plane g at unnormalised coordinates (x, y). */
static double sample(const Gs *g, int mode, double x, double y)
{
	if (g->pad == PAD_BORDER) {
		x = fmin(fmax(x, 0), (double)(g->W - 1));
		y = fmin(fmax(y, 0), (double)(g->H - 1));
	} else if (g->pad == PAD_REFLECT) {
		x = reflect(x, g->bx0, g->bx1);
		y = reflect(y, g->by0, g->by1);
	}
	if (mode == 1)
		return pixel(g, (int64_t)kn_rne(y), (int64_t)kn_rne(x));
	double x0 = floor(x), y0 = floor(y);
	if (mode == 0) {
		double fx = x - x0, fy = y - y0;
		int64_t ix = (int64_t)x0, iy = (int64_t)y0;
		return (1 - fy) * ((1 - fx) * pixel(g, iy, ix) + fx * pixel(g, iy, ix + 1)) +
		       fy * ((1 - fx) * pixel(g, iy + 1, ix) + fx * pixel(g, iy + 1, ix + 1));
	}
	double wx[4], wy[4], acc = 0;
	cubic_coeffs(x - x0, wx);
	cubic_coeffs(y - y0, wy);
	for (int i = 0; i < 4; i++) {
		double row = 0;
		for (int j = 0; j < 4; j++)
			row += wx[j] * pixel(g, (int64_t)y0 - 1 + i, (int64_t)x0 - 1 + j);
		acc += wy[i] * row;
	}
	return acc;
}

int rk_GridSample(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *grid = a->in[1];
	if (x->rank != 4 || grid->rank != 4 || grid->dims[0] != x->dims[0] || grid->dims[3] != 2)
		return rt_errorf(e, RT_EUSER, "GridSample: X must be [N, C, H, W] and grid [N, H_out, W_out, 2]");
	const char *m = rt_attr_str(a->attrs, "mode", "bilinear"), *p = rt_attr_str(a->attrs, "padding_mode", "zeros");
	int mode = !strcmp(m, "bilinear") || !strcmp(m, "linear") ? 0 : !strcmp(m, "nearest") ? 1 :
		   !strcmp(m, "bicubic") || !strcmp(m, "cubic") ? 2 : -1;
	int pad = !strcmp(p, "zeros") ? PAD_ZEROS : !strcmp(p, "border") ? PAD_BORDER : !strcmp(p, "reflection") ? PAD_REFLECT : -1;
	if (mode < 0 || pad < 0)
		return rt_errorf(e, RT_EUSER, "GridSample: unknown mode '%s' or padding_mode '%s'", m, p);
	int ac = (int)rt_attr_int(a->attrs, "align_corners", 0), f64 = kn_acc64(a) || x->dtype == DT_F64;
	int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], Ho = grid->dims[1], Wo = grid->dims[2];
	int64_t dims[4] = { N, C, Ho, Wo };
	if (kn_out(a, 0, x->dtype, 4, dims, e) < 0)
		return -1;
	Gs g = { x, 0, H, W, pad, ac ? 0 : -0.5, ac ? 0 : -0.5, ac ? (double)W - 1 : (double)W - 0.5,
		 ac ? (double)H - 1 : (double)H - 0.5 };
	for (int64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++) {
			g.base = (n * C + c) * H * W;
			for (int64_t i = 0; i < Ho * Wo; i++) {
				double gx = rt_get(grid, (n * Ho * Wo + i) * 2), gy = rt_get(grid, (n * Ho * Wo + i) * 2 + 1);
				double px = ac ? (gx + 1) / 2 * (double)(W - 1) : ((gx + 1) * (double)W - 1) / 2;
				double py = ac ? (gy + 1) / 2 * (double)(H - 1) : ((gy + 1) * (double)H - 1) / 2;
				rt_set(&a->out[0], (n * C + c) * Ho * Wo + i, kn_acc(f64, sample(&g, mode, px, py)));
			}
		}
	return kn_finish(&a->out[0], a->opts, e);
}

/* ---- RoiAlign ---- */
int rk_RoiAlign(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0], *rois = a->in[1], *bi = a->in[2];
	if (x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 || bi->rank != 1 || bi->dims[0] != rois->dims[0])
		return rt_errorf(e, RT_EUSER, "RoiAlign: X must be [N, C, H, W], rois [R, 4] and batch_indices [R]");
	const char *md = rt_attr_str(a->attrs, "mode", "avg"), *ct = rt_attr_str(a->attrs, "coordinate_transformation_mode",
										   "half_pixel");
	int mx = !strcmp(md, "max"), half = !strcmp(ct, "half_pixel");
	if ((!mx && strcmp(md, "avg")) || (!half && strcmp(ct, "output_half_pixel")))
		return rt_errorf(e, RT_EUSER, "RoiAlign: unknown mode '%s' or coordinate_transformation_mode '%s'", md, ct);
	int64_t ph = rt_attr_int(a->attrs, "output_height", 1), pw = rt_attr_int(a->attrs, "output_width", 1);
	int64_t sr = rt_attr_int(a->attrs, "sampling_ratio", 0);
	double ss = rt_attr_float(a->attrs, "spatial_scale", 1.0), off = half ? 0.5 : 0;
	int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], R = rois->dims[0];
	int64_t dims[4] = { R, C, ph, pw };
	if (ph < 1 || pw < 1 || sr < 0)
		return rt_errorf(e, RT_EUSER, "RoiAlign: output_height, output_width must be positive, sampling_ratio >= 0");
	for (int64_t r = 0; r < R; r++)      /* checked before the output exists */
		if (rt_geti(bi, r) < 0 || rt_geti(bi, r) >= N)
			return rt_errorf(e, RT_EUSER, "RoiAlign: batch index %lld of box %lld is outside [0, %lld)",
					 (long long)rt_geti(bi, r), (long long)r, (long long)N);
	if (kn_out(a, 0, x->dtype, 4, dims, e) < 0)
		return -1;
	int f64 = kn_acc64(a) || x->dtype == DT_F64;
	for (int64_t r = 0; r < R; r++) {
		int64_t b = rt_geti(bi, r);
		double x1 = rt_get(rois, r * 4) * ss - off, y1 = rt_get(rois, r * 4 + 1) * ss - off;
		double rw = rt_get(rois, r * 4 + 2) * ss - off - x1, rh = rt_get(rois, r * 4 + 3) * ss - off - y1;
		if (!half)
			rw = fmax(rw, 1.0), rh = fmax(rh, 1.0);
		double bh = rh / (double)ph, bw = rw / (double)pw;
		int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)ph), gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)pw);
		double count = (double)(gh * gw > 1 ? gh * gw : 1);
		for (int64_t c = 0; c < C; c++) {
			int64_t base = (b * C + c) * H * W;
			for (int64_t i = 0; i < ph; i++)
				for (int64_t j = 0; j < pw; j++) {
					double acc = 0;
					int any = 0;
					for (int64_t iy = 0; iy < gh; iy++)
						for (int64_t ix = 0; ix < gw; ix++) {
							double yy = y1 + (double)i * bh + ((double)iy + 0.5) * bh / (double)gh;
							double xx = x1 + (double)j * bw + ((double)ix + 0.5) * bw / (double)gw, v = 0;
							if (!(yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)) {
								yy = yy <= 0 ? 0 : yy, xx = xx <= 0 ? 0 : xx;
								int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh = yl + 1, xh = xl + 1;
								if (yl >= H - 1)
									yl = yh = H - 1, yy = (double)yl;
								if (xl >= W - 1)
									xl = xh = W - 1, xx = (double)xl;
								double ly = yy - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx;
								double t1 = hy * hx * rt_get(x, base + yl * W + xl), t2 = hy * lx * rt_get(x, base + yl * W + xh);
								double t3 = ly * hx * rt_get(x, base + yh * W + xl), t4 = ly * lx * rt_get(x, base + yh * W + xh);
								v = mx ? fmax(fmax(t1, t2), fmax(t3, t4)) : t1 + t2 + t3 + t4;
							}
							acc = !mx ? acc + v : any ? fmax(acc, v) : v;
							any = 1;
						}
					rt_set(&a->out[0], ((r * C + c) * ph + i) * pw + j, kn_acc(f64, mx ? acc : acc / count));
				}
		}
	}
	return kn_finish(&a->out[0], a->opts, e);
}

/* ---- Unique {sorted=1, axis} ---- */
typedef struct Uq { const RtTensor *x; int64_t outer, len, inner; } Uq;

/* Lexicographic comparison of slices i and j along the axis. */
static int slice_cmp(const Uq *u, int64_t i, int64_t j)
{
	for (int64_t o = 0; o < u->outer; o++)
		for (int64_t k = 0; k < u->inner; k++) {
			int64_t a = (o * u->len + i) * u->inner + k, b = (o * u->len + j) * u->inner + k;
			if (kn_isint(u->x->dtype)) {
				int64_t p = rt_i64(u->x)[a], q = rt_i64(u->x)[b];
				if (p != q)
					return p < q ? -1 : 1;
			} else {
				double p = rt_get(u->x, a), q = rt_get(u->x, b);
				if (p != q)
					return p < q ? -1 : 1;
			}
		}
	return 0;
}

int rk_Unique(const RtKernelArgs *a, RtError *e)
{
	const RtTensor *x = a->in[0];
	const Attr *ax = rt_attr_find(a->attrs, "axis");
	int sorted = (int)rt_attr_int(a->attrs, "sorted", 1), axis = 0;
	Uq u = { x, 1, x->n, 1 };
	if (ax) {
		if (kn_axis("Unique", ax->i, x->rank, &axis, e) < 0)
			return -1;
		u.len = x->dims[axis];
		for (int i = 0; i < axis; i++)
			u.outer *= x->dims[i];
		for (int i = axis + 1; i < x->rank; i++)
			u.inner *= x->dims[i];
	}
	int64_t L = u.len, nu = 0;
	int64_t *first = rt_malloc(sizeof(int64_t) * (size_t)(3 * L + 1)), *inv = first + L, *cnt = inv + L;
	if (!first)
		return rt_errorf(e, RT_ENOMEM, "Unique: out of memory");
	for (int64_t i = 0; i < L; i++) {      /* distinct slices in order of first occurrence */
		int64_t k = 0;
		while (k < nu && slice_cmp(&u, first[k], i) != 0)
			k++;
		if (k == nu)
			first[nu] = i, cnt[nu++] = 0;
		inv[i] = k;
		cnt[k]++;
	}
	int64_t *order = rt_malloc(sizeof(int64_t) * (size_t)(2 * nu + 1)), *rank = order + nu;
	if (!order) {
		rt_free(first);
		return rt_errorf(e, RT_ENOMEM, "Unique: out of memory");
	}
	for (int64_t k = 0; k < nu; k++)
		order[k] = k;
	if (sorted)   /* insertion sort by slice value: stable, small inputs */
		for (int64_t k = 1; k < nu; k++)
			for (int64_t j = k; j > 0 && slice_cmp(&u, first[order[j - 1]], first[order[j]]) > 0; j--) {
				int64_t t = order[j];
				order[j] = order[j - 1], order[j - 1] = t;
			}
	for (int64_t k = 0; k < nu; k++)
		rank[order[k]] = k;
	int64_t dims[RT_MAX_RANK], d1[1] = { nu }, dl[1] = { L };
	int rank_y = ax ? x->rank : 1;
	if (ax)
		memcpy(dims, x->dims, sizeof dims);
	dims[ax ? axis : 0] = nu;
	int rc = -1;
	if (kn_out(a, 0, x->dtype, rank_y, dims, e) < 0 || kn_out(a, 1, DT_I64, 1, d1, e) < 0 ||
	    kn_out(a, 2, DT_I64, 1, dl, e) < 0 || kn_out(a, 3, DT_I64, 1, d1, e) < 0) {
		kn_free_outs(a);
		goto out;
	}
	for (int64_t k = 0; k < nu; k++) {
		int64_t src = first[order[k]];
		for (int64_t o = 0; o < u.outer; o++)
			for (int64_t q = 0; q < u.inner; q++) {
				int64_t di = (o * nu + k) * u.inner + q, si = (o * L + src) * u.inner + q;
				if (kn_isint(x->dtype))
					rt_i64(&a->out[0])[di] = rt_i64(x)[si];
				else
					rt_set(&a->out[0], di, rt_get(x, si));
			}
		if (a->nout > 1)
			rt_i64(&a->out[1])[k] = src;
		if (a->nout > 3)
			rt_i64(&a->out[3])[k] = cnt[order[k]];
	}
	if (a->nout > 2)
		for (int64_t i = 0; i < L; i++)
			rt_i64(&a->out[2])[i] = rank[inv[i]];
	rc = 0;
out:
	rt_free(first);
	rt_free(order);
	return rc;
}
