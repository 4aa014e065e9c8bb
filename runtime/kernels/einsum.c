/* runtime/kernels/einsum.c: Einsum with a general equation.
 *
 * https://onnx.ai/onnx/operators/onnx__Einsum.html: terms of lower/upper-case letters, one
 * "..." per term standing for the leading broadcast axes, an explicit output after "->" or the
 * implicit one (ellipsis axes, then letters used exactly once, alphabetically).  Repeated
 * letters within a term take diagonals; letters absent from the output are summed.  The
 * reference loops over every index combination, output indices outermost, so each output
 * element is a sequential sum (rounded to f32 per step unless f64 accumulation is on).
 */
#include "runtime/kernels/kernels_impl.h"

#include <ctype.h>

enum { EMAX = 52 + RT_MAX_RANK, ETERMS = 16 };

typedef struct Eq {
	int nterm;
	int len[ETERMS + 1];            /* letters per term; the last is the output */
	int lab[ETERMS + 1][RT_MAX_RANK * 2];
	int64_t size[EMAX];             /* dimension of each label (-1 unknown) */
} Eq;

static int label_of(char c) { return isupper((unsigned char)c) ? c - 'A' : c - 'a' + 26; }

/* Parses one term of input t (or the output when t is NULL) into q->lab[idx]. */
static int parse_term(const char **p, Eq *q, int idx, const RtTensor *t, int nell, RtError *e)
{
	int n = 0;
	for (; **p && **p != ',' && **p != '-'; (*p)++) {
		char c = **p;
		if (c == ' ')
			continue;
		if (c == '.') {
			if (strncmp(*p, "...", 3) != 0)
				return rt_errorf(e, RT_EUSER, "Einsum: malformed ellipsis");
			*p += 2;
			int ne = nell;
			if (t) {
				const char *r = *p + 1;
				int after = 0;
				for (; *r && *r != ',' && *r != '-'; r++)
					after += isalpha((unsigned char)*r) != 0;
				ne = t->rank - n - after;
				if (ne < 0)
					return rt_errorf(e, RT_EUSER, "Einsum: term has more letters than axes");
			}
			for (int j = 0; j < ne; j++)
				q->lab[idx][n++] = 52 + (nell - ne) + j;
			continue;
		}
		if (!isalpha((unsigned char)c) || n >= RT_MAX_RANK * 2)
			return rt_errorf(e, RT_EUSER, "Einsum: unexpected '%c' in equation", c);
		q->lab[idx][n++] = label_of(c);
	}
	q->len[idx] = n;
	if (t && n != t->rank)
		return rt_errorf(e, RT_EUSER, "Einsum: term %d has %d labels for rank %d", idx, n, t->rank);
	return 0;
}

/* Number of ellipsis axes: the largest over the inputs (they broadcast). */
static int ellipsis_rank(const char *eq, const RtKernelArgs *a)
{
	int best = 0, term = 0, letters = 0, has = 0;
	for (const char *p = eq;; p++) {
		if (*p == ',' || *p == '-' || !*p) {
			if (has && term < a->nin && a->in[term]->rank - letters > best)
				best = a->in[term]->rank - letters;
			if (*p != ',')
				break;
			term++, letters = 0, has = 0;
		} else if (strncmp(p, "...", 3) == 0) {   /* a lone '.' is parse_term's error, never skipped past the end */
			has = 1;
			p += 2;
		} else if (isalpha((unsigned char)*p)) {
			letters++;
		}
	}
	return best;
}

static int parse_eq(const char *s, const RtKernelArgs *a, Eq *q, RtError *e)
{
	memset(q, 0, sizeof *q);
	if (a->nin > ETERMS)
		return rt_errorf(e, RT_EUSER, "Einsum: at most %d inputs", ETERMS);
	int nell = ellipsis_rank(s, a);
	const char *p = s;
	for (int i = 0; i < a->nin; i++) {
		if (parse_term(&p, q, i, a->in[i], nell, e) < 0)
			return -1;
		if (i + 1 < a->nin && *p++ != ',')
			return rt_errorf(e, RT_EUSER, "Einsum: %d inputs but fewer terms", a->nin);
	}
	q->nterm = a->nin;
	for (int l = 0; l < EMAX; l++)
		q->size[l] = -1;
	for (int i = 0; i < a->nin; i++)
		for (int k = 0; k < q->len[i]; k++) {
			int l = q->lab[i][k];
			int64_t d = a->in[i]->dims[k];
			if (q->size[l] == -1 || q->size[l] == 1)
				q->size[l] = d;
			else if (d != 1 && d != q->size[l])
				return rt_errorf(e, RT_EUSER, "Einsum: label sizes differ (%lld vs %lld)",
						 (long long)q->size[l], (long long)d);
		}
	if (strncmp(p, "->", 2) == 0) {
		p += 2;
		return parse_term(&p, q, ETERMS, NULL, nell, e);
	}
	/* Implicit output: ellipsis axes, then letters used once, in alphabetical order. */
	int cnt[EMAX] = { 0 }, n = 0;
	for (int i = 0; i < a->nin; i++)
		for (int k = 0; k < q->len[i]; k++)
			cnt[q->lab[i][k]]++;
	for (int l = 52; l < 52 + nell; l++)
		q->lab[ETERMS][n++] = l;
	for (int c = 0; c < 26; c++)   /* ASCII order, as numpy: A..Z (labels 0..25) first */
		if (cnt[c] == 1)
			q->lab[ETERMS][n++] = c;
	for (int c = 26; c < 52; c++)
		if (cnt[c] == 1)
			q->lab[ETERMS][n++] = c;
	q->len[ETERMS] = n;
	return 0;
}

int rk_Einsum(const RtKernelArgs *a, RtError *e)
{
	Eq q;
	const char *s = rt_attr_str(a->attrs, "equation", NULL);
	if (!s)
		return rt_errorf(e, RT_EUSER, "Einsum: missing equation");
	if (parse_eq(s, a, &q, e) < 0)
		return -1;
	/* Loop order: output labels, then the summed labels. */
	int order[EMAX], no = q.len[ETERMS], nl = 0, seen[EMAX] = { 0 };
	int64_t odims[RT_MAX_RANK * 2];
	for (int k = 0; k < no; k++) {
		int l = q.lab[ETERMS][k];
		if (q.size[l] < 0)
			return rt_errorf(e, RT_EUSER, "Einsum: output label not in any input");
		odims[k] = q.size[l];
		order[nl++] = l;
		seen[l] = 1;
	}
	if (no > RT_MAX_RANK)
		return rt_errorf(e, RT_EUSER, "Einsum: output rank %d is too large", no);
	for (int l = 0; l < EMAX; l++)
		if (q.size[l] >= 0 && !seen[l])
			order[nl++] = l;
	int64_t str[ETERMS][EMAX] = { { 0 } };   /* element stride of each label in each input */
	for (int i = 0; i < q.nterm; i++) {
		int64_t st[RT_MAX_RANK];
		kn_strides(a->in[i]->rank, a->in[i]->dims, st);
		for (int k = 0; k < q.len[i]; k++)
			if (a->in[i]->dims[k] != 1)
				str[i][q.lab[i][k]] += st[k];
	}
	if (kn_out(a, 0, a->in[0]->dtype, no, odims, e) < 0)
		return -1;
	int f64 = kn_acc64(a) || kn_isint(a->in[0]->dtype);
	int64_t inner = 1, idx[EMAX] = { 0 }, off[ETERMS] = { 0 };
	for (int j = no; j < nl; j++)
		inner *= q.size[order[j]];
	RtTensor *y = &a->out[0];
	for (int64_t o = 0; o < y->n; o++) {
		double acc = 0;
		for (int64_t t = 0; t < inner; t++) {
			double p = 1;
			for (int i = 0; i < q.nterm; i++)
				p = kn_acc(f64, p * rt_get(a->in[i], off[i]));
			acc = kn_acc(f64, acc + p);
			for (int j = nl - 1; j >= 0; j--) {   /* odometer over all labels */
				int l = order[j];
				for (int i = 0; i < q.nterm; i++)
					off[i] += str[i][l];
				if (++idx[l] < q.size[l] || j == 0)
					break;
				for (int i = 0; i < q.nterm; i++)
					off[i] -= str[i][l] * q.size[l];
				idx[l] = 0;
			}
		}
		if (inner == 0)   /* no summed combination: advance the output odometer by hand */
			for (int j = no - 1; j >= 0; j--) {
				int l = order[j];
				for (int i = 0; i < q.nterm; i++)
					off[i] += str[i][l];
				if (++idx[l] < q.size[l] || j == 0)
					break;
				for (int i = 0; i < q.nterm; i++)
					off[i] -= str[i][l] * q.size[l];
				idx[l] = 0;
			}
		rt_set(y, o, acc);
	}
	if (kn_finish(y, a->opts, e) < 0) {
		kn_free_outs(a);
		return -1;
	}
	return 0;
}
