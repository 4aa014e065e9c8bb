/* serve/workload.c: the requests a simulation serves.
 *
 * Generated workloads: arrivals are a Poisson process at `rate` (exponential gaps), or a gamma
 * renewal process with coefficient of variation cv (shape 1/cv^2, scale cv^2/rate: the bursty
 * arrivals of DistServe's and AlpaServe's evaluations); prompt and output lengths are fixed,
 * uniform integers in [a, b], or lognormal with arithmetic mean `mean` and log-space sigma
 * (mu = ln(mean) - sigma^2/2), rounded to the nearest integer and at least 1.  Uniform draws come
 * from the runtime's counter-based generator (runtime/random.h): draw j of stream k depends only
 * on (seed, k, j), so the same seed gives the same requests whatever else changes.
 *
 * Traces: CSV with the header `arrival_s,input_tokens,output_tokens` (blank lines and `#`
 * comments allowed); errors are located (file:line:col with the line and a caret): a
 * non-number, a NaN or negative arrival, arrivals out of order, lengths below 1 or not integers.
 * JSON: the ShareGPT layout vLLM's benchmarks read (benchmarks/benchmark_serving.py,
 * sample_sharegpt_requests): a list of {"conversations": [{"from", "value"}, ...]}; the first
 * turn is the prompt, the second the completion; entries with fewer than two turns are skipped
 * and, as there, pairs whose prompt or completion is under 4 tokens or whose sum exceeds 2048
 * are pruned.  Without the model's tokenizer a turn's tokens are its UTF-8 bytes / 4 (rounded
 * up; OpenAI's rule of thumb for English), unless the entry carries input_tokens and
 * output_tokens, which win.  Parsed with jansson.
 */
#include "serve/internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/random.h"

/* U(j) of stream k in [0, 1). */
static double unif(uint64_t seed, uint64_t k, uint64_t j)
{
	return (double)(rt_rand_u64(seed, k, j) >> 11) * 0x1p-53;
}

/* A standard normal from stream k, draws 2j and 2j+1 (Box-Muller). */
static double normal(uint64_t seed, uint64_t k, uint64_t j)
{
	double u1 = 1 - unif(seed, k, 2 * j), u2 = unif(seed, k, 2 * j + 1);
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Gamma(shape, 1) by Marsaglia and Tsang (ACM TOMS 26(3), 2000); for shape < 1 the boost
 * X * U^(1/shape).  *ctr counts the stream's draws. */
static double gamma1(double shape, uint64_t seed, uint64_t k, uint64_t *ctr)
{
	double boost = 1;
	if (shape < 1) {
		boost = pow(unif(seed, k, (*ctr)++), 1 / shape);
		shape += 1;
	}
	double d = shape - 1.0 / 3, c = 1 / sqrt(9 * d);
	for (;;) {
		double x = normal(seed, k, (*ctr)++), v = 1 + c * x;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = unif(seed, k, (*ctr)++);
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return boost * d * v;
	}
}

int sv_lengths_parse(const char *s, const char *what, SvLengths *l, SvError *e)
{
	char *end;
	errno = 0;
	if (strncmp(s, "uniform:", 8) == 0) {
		l->kind = SV_UNIFORM;
		l->a = strtod(s + 8, &end);
		if (*end != ':')
			goto bad;
		l->b = strtod(end + 1, &end);
		if (*end || !(l->a >= 1) || !(l->b >= l->a) || l->b > 1e9)
			goto bad;
		return 0;
	}
	if (strncmp(s, "lognormal:", 10) == 0) {
		l->kind = SV_LOGNORMAL;
		l->a = strtod(s + 10, &end);
		if (*end != ':')
			goto bad;
		l->b = strtod(end + 1, &end);
		if (*end || !(l->a >= 1) || !(l->b >= 0) || l->a > 1e9 || l->b > 10)
			goto bad;
		return 0;
	}
	l->kind = SV_FIXED;
	l->a = strtod(s, &end);
	if (end == s || *end || errno || !(l->a >= 1) || l->a > 1e9 || l->a != floor(l->a))
		goto bad;
	l->b = l->a;
	return 0;
bad:
	return sv_err(e, "aicc: error: %s expects N (a positive integer), uniform:MIN:MAX or lognormal:MEAN:SIGMA "
		      "with lengths >= 1, got '%s'", what, s);
}

static int64_t draw_len(const SvLengths *l, uint64_t seed, uint64_t k, uint64_t j)
{
	double v;
	switch (l->kind) {
	case SV_UNIFORM:
		v = l->a + floor(unif(seed, k, j) * (l->b - l->a + 1));
		return (int64_t)fmin(v, l->b);
	case SV_LOGNORMAL:
		v = exp(log(l->a) - 0.5 * l->b * l->b + l->b * normal(seed, k, j));
		v = floor(v + 0.5);
		return v < 1 ? 1 : v > 1e9 ? (int64_t)1e9 : (int64_t)v;
	default:
		return (int64_t)l->a;
	}
}

/* Gap i between arrivals: exponential (cv 1) or gamma with that cv, mean 1 / rate. */
static double draw_gap(const SvGenSpec *g, uint64_t *ctr)
{
	if (g->cv == 1 || g->cv <= 0)
		return -log(1 - unif(g->seed, 1, (*ctr)++)) / g->rate;
	double shape = 1 / (g->cv * g->cv);
	return gamma1(shape, g->seed, 1, ctr) / (shape * g->rate);
}

static int check_gen(const SvGenSpec *g, int need_n, SvError *e)
{
	if (!(g->rate > 0) || !isfinite(g->rate))
		return sv_err(e, "aicc: error: --rate must be a positive number of requests per second, got %g", g->rate);
	if (g->cv < 0 || !isfinite(g->cv))
		return sv_err(e, "aicc: error: --cv must be a non-negative coefficient of variation, got %g", g->cv);
	if (need_n && (g->n < 1 || g->n > 10000000))
		return sv_err(e, "aicc: error: --requests must be from 1 to 10000000, got %d", g->n);
	return 0;
}

int sv_workload_generate(const SvGenSpec *g, SvWorkload *w, SvError *e)
{
	memset(w, 0, sizeof *w);
	if (check_gen(g, 1, e) < 0)
		return -1;
	w->r = calloc((size_t)g->n, sizeof *w->r);
	if (!w->r)
		return sv_err(e, "aicc: error: out of memory for %d requests", g->n);
	w->n = g->n;
	double t = 0;
	uint64_t ctr = 0;
	for (int i = 0; i < g->n; i++) {
		w->r[i].arrival = t;
		w->r[i].in = draw_len(&g->in, g->seed, 2, (uint64_t)i);
		w->r[i].out = draw_len(&g->out, g->seed, 3, (uint64_t)i);
		t += draw_gap(g, &ctr);
	}
	char buf[256];
	snprintf(buf, sizeof buf, "%s rate=%g/s cv=%g seed=%llu", g->cv == 1 || g->cv <= 0 ? "poisson" : "gamma",
		 g->rate, g->cv > 0 ? g->cv : 1, (unsigned long long)g->seed);
	w->source = strdup(buf);
	return 0;
}

void sv_workload_free(SvWorkload *w)
{
	free(w->r);
	free(w->source);
	memset(w, 0, sizeof *w);
}

void sv_workload_rescale(SvWorkload *w, double old_rate, double new_rate)
{
	for (int i = 0; i < w->n; i++)
		w->r[i].arrival *= old_rate / new_rate;
}

/* ---- CSV ---- */

/* "path:line:col: error: msg" with the line's text and a caret under col, into e. */
static int located(SvError *e, const char *path, int line, const char *text, const char *end, int col,
		   const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int located(SvError *e, const char *path, int line, const char *text, const char *end, int col,
		   const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	int len = (int)(end - text);
	if (len > 200)
		len = 200;
	char caret[256];
	int k = 0;
	for (int i = 1; i < col && i <= len && k < 250; i++)
		caret[k++] = text[i - 1] == '\t' ? '\t' : ' ';
	caret[k] = 0;
	return sv_err(e, "%s:%d:%d: error: %s\n  %.*s\n  %s^", path, line, col, msg, len, text, caret);
}

/* Field f of a CSV line: a number, else an error located at the field. */
static int csv_field(const char *path, int ln, const char *line, const char *lend, const char **p, int f,
		     double *v, SvError *e)
{
	static const char *names[3] = { "arrival_s", "input_tokens", "output_tokens" };
	while (*p < lend && (**p == ' ' || **p == '\t'))
		(*p)++;
	const char *start = *p;
	char buf[64];
	size_t n = 0;
	while (*p < lend && **p != ',' && n < sizeof buf - 1)
		buf[n++] = *(*p)++;
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
		n--;
	buf[n] = 0;
	char *end;
	errno = 0;
	*v = n ? strtod(buf, &end) : 0;
	if (!n || *end || errno == ERANGE)
		return located(e, path, ln, line, lend, (int)(start - line) + 1, "%s: expected a number, got '%s'",
			       names[f], buf);
	if (f < 2 && (*p >= lend || **p != ','))
		return located(e, path, ln, line, lend, (int)(*p - line) + 1, "expected 3 fields (arrival_s,input_tokens,"
			       "output_tokens), this line has %d", f + 1);
	if (f < 2)
		(*p)++;
	if (f == 0 && (isnan(*v) || isinf(*v)))
		return located(e, path, ln, line, lend, (int)(start - line) + 1, "arrival_s is %s", buf);
	if (f == 0 && *v < 0)
		return located(e, path, ln, line, lend, (int)(start - line) + 1, "arrival_s is negative (%s)", buf);
	if (f > 0 && (!(*v >= 1) || *v != floor(*v) || *v > 1e9))
		return located(e, path, ln, line, lend, (int)(start - line) + 1, "%s must be a whole number of tokens "
			       ">= 1, got %s", names[f], buf);
	return 0;
}

static int read_csv(const char *path, const char *text, size_t len, SvWorkload *w, SvError *e)
{
	int cap = 1024, ln = 0, header = 0;
	double last = 0;
	w->r = malloc((size_t)cap * sizeof *w->r);
	if (!w->r)
		return sv_err(e, "aicc: error: out of memory");
	for (const char *p = text, *end = text + len; p < end;) {
		const char *line = p, *lend = memchr(p, '\n', (size_t)(end - p));
		if (!lend)
			lend = end;
		p = lend < end ? lend + 1 : end;
		ln++;
		const char *q = line;
		while (q < lend && (*q == ' ' || *q == '\t' || *q == '\r'))
			q++;
		if (q == lend || *q == '#')
			continue;
		if (!header) {
			size_t n = (size_t)(lend - q);
			while (n && (q[n - 1] == '\r' || q[n - 1] == ' '))
				n--;
			static const char hdr[] = "arrival_s,input_tokens,output_tokens";
			if (n != sizeof hdr - 1 || strncmp(q, hdr, n))
				return located(e, path, ln, line, lend, (int)(q - line) + 1,
					       "expected the header 'arrival_s,input_tokens,output_tokens'");
			header = 1;
			continue;
		}
		double v[3];
		const char *c = line;
		for (int f = 0; f < 3; f++)
			if (csv_field(path, ln, line, lend, &c, f, &v[f], e) < 0)
				return -1;
		while (c < lend && (*c == ' ' || *c == '\t' || *c == '\r'))
			c++;
		if (c < lend)
			return located(e, path, ln, line, lend, (int)(c - line) + 1, "unexpected text after output_tokens");
		if (w->n && v[0] < last)
			return located(e, path, ln, line, lend, 1, "arrival_s %g is before the previous request's %g "
				       "(a trace must be sorted by arrival)", v[0], last);
		if (w->n == cap) {
			cap *= 2;
			SvRequest *nr = realloc(w->r, (size_t)cap * sizeof *nr);
			if (!nr)
				return sv_err(e, "aicc: error: out of memory");
			w->r = nr;
		}
		w->r[w->n++] = (SvRequest){ v[0], (int64_t)v[1], (int64_t)v[2], ln };
		last = v[0];
	}
	if (!header)
		return sv_err(e, "%s:1:1: error: empty trace (expected the header 'arrival_s,input_tokens,output_tokens')", path);
	if (!w->n)
		return sv_err(e, "%s:%d:1: error: the trace has no requests", path, ln > 0 ? ln : 1);
	return 0;
}

/* ---- ShareGPT JSON ---- */

static int64_t est_tokens(const char *s)
{
	size_t n = strlen(s);
	return (int64_t)((n + 3) / 4);
}

static int read_sharegpt(const char *path, const SvGenSpec *g, SvWorkload *w, SvError *e)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root)
		return sv_err(e, "%s:%d:%d: error: %s", path, je.line, je.column, je.text);
	int rc = 0;
	if (!json_is_array(root)) {
		rc = sv_err(e, "%s: error: expected a JSON list of conversations (the ShareGPT layout)", path);
		goto out;
	}
	size_t n = json_array_size(root);
	w->r = calloc(n + 1, sizeof *w->r);
	if (!w->r) {
		rc = sv_err(e, "aicc: error: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && (g->n <= 0 || w->n < g->n); i++) {
		json_t *it = json_array_get(root, i), *conv = json_object_get(it, "conversations");
		json_t *ti = json_object_get(it, "input_tokens"), *to = json_object_get(it, "output_tokens");
		int64_t in, out;
		if (!json_is_object(it)) {
			rc = sv_err(e, "%s: error: entry %zu is not an object", path, i);
			goto out;
		}
		if (ti || to) {
			if (!json_is_integer(ti) || !json_is_integer(to) || json_integer_value(ti) < 1 ||
			    json_integer_value(to) < 1) {
				rc = sv_err(e, "%s: error: entry %zu: input_tokens and output_tokens must both be integers >= 1",
					    path, i);
				goto out;
			}
			in = json_integer_value(ti), out = json_integer_value(to);
		} else {
			if (conv && !json_is_array(conv)) {
				rc = sv_err(e, "%s: error: entry %zu: \"conversations\" is not a list", path, i);
				goto out;
			}
			if (!conv || json_array_size(conv) < 2)
				continue;    /* vLLM: "Filter out the conversations with less than 2 turns" */
			const char *a = json_string_value(json_object_get(json_array_get(conv, 0), "value"));
			const char *b = json_string_value(json_object_get(json_array_get(conv, 1), "value"));
			if (!a || !b) {
				rc = sv_err(e, "%s: error: entry %zu: a turn has no string \"value\"", path, i);
				goto out;
			}
			in = est_tokens(a), out = est_tokens(b);
			if (in < 4 || out < 4 || in + out > 2048)
				continue;    /* vLLM's pruning of too short and too long pairs */
		}
		w->r[w->n++] = (SvRequest){ 0, in, out, 0 };
	}
	if (!w->n)
		rc = sv_err(e, "%s: error: no usable conversations (each needs two turns)", path);
out:
	json_decref(root);
	return rc;
}

int sv_workload_read(const char *path, const SvGenSpec *g, SvWorkload *w, SvError *e)
{
	memset(w, 0, sizeof *w);
	size_t n = strlen(path);
	int json = n > 5 && strcmp(path + n - 5, ".json") == 0;
	int rc;
	if (json) {
		if (check_gen(g, 0, e) < 0)
			return -1;
		rc = read_sharegpt(path, g, w, e);
		double t = 0;
		uint64_t ctr = 0;
		for (int i = 0; rc == 0 && i < w->n; i++) {
			w->r[i].arrival = t;
			t += draw_gap(g, &ctr);
		}
	} else {
		FILE *f = fopen(path, "rb");
		if (!f)
			return sv_err(e, "aicc: error: cannot open trace '%s': %s", path, strerror(errno));
		char *text = NULL;
		size_t len = 0, cap = 0;
		for (;;) {
			if (len + 65536 > cap) {
				cap = cap ? 2 * cap : 1 << 20;
				char *nt = realloc(text, cap);
				if (!nt) {
					free(text);
					fclose(f);
					return sv_err(e, "aicc: error: out of memory reading '%s'", path);
				}
				text = nt;
			}
			size_t k = fread(text + len, 1, cap - len, f);
			len += k;
			if (k == 0)
				break;
		}
		fclose(f);
		rc = memchr(text, 0, len) ? sv_err(e, "%s: error: the trace contains a NUL byte", path)
					  : read_csv(path, text, len, w, e);
		free(text);
	}
	if (rc < 0) {
		sv_workload_free(w);
		return -1;
	}
	w->source = strdup(path);
	return 0;
}

int sv_workload_check(const SvWorkload *w, int64_t max_context, SvError *e)
{
	if (max_context <= 0)
		return 0;
	for (int i = 0; i < w->n; i++)
		if (w->r[i].in + w->r[i].out > max_context) {
			if (w->r[i].line)
				return sv_err(e, "%s:%d:1: error: request %d needs %lld tokens (%lld in + %lld out), more than "
					      "the model's context of %lld", w->source, w->r[i].line, i, (long long)(w->r[i].in + w->r[i].out),
					      (long long)w->r[i].in, (long long)w->r[i].out, (long long)max_context);
			return sv_err(e, "aicc: error: request %d needs %lld tokens (%lld in + %lld out), more than the "
				      "model's context of %lld (%s)", i, (long long)(w->r[i].in + w->r[i].out),
				      (long long)w->r[i].in, (long long)w->r[i].out, (long long)max_context, w->source);
		}
	return 0;
}
