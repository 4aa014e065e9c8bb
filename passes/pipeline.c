/* passes/pipeline.c: the pass manager.
 *
 * Runs a comma-separated list of passes from passes/passes.def over a module, like QBE's main:
 * before each pass it re-establishes the analyses the pass requires (ir_topo_sort on every
 * graph, ir_infer_shapes), runs it, drops what it invalidates, and then serves the debugging
 * flags: --verify-each (ir_verify and shape inference after every pass, naming the pass that
 * broke the graph), --print-after=P / --print-after-all (the module in .aig on the context's
 * stream), --time-passes and --stats.  Also keeps the statistics counters and the bisection
 * counter the passes consult.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/diag.h"
#include "ir/suggest.h"
#include "passes/pass.h"

const PassInfo pass_table[] = {
#define PASS(name, fn, cat, req, inv, desc) { name, pass_##fn, cat, req, inv, desc },
#include "passes/passes.def"
#undef PASS
};
const int pass_count = (int)(sizeof pass_table / sizeof pass_table[0]);

void pass_ctx_init(PassCtx *c)
{
	memset(c, 0, sizeof *c);
	c->bisect_limit = -1;
	c->fold_limit = 1 << 16;
	c->print_elide = IR_ELIDE_OVER;
	c->error_budget = 1e-2;
	c->out = stderr;
}

void pass_ctx_free(PassCtx *c)
{
	for (Remark *r = c->remarks, *next; r; r = next) {
		next = r->next;
		free(r->msg);
		free(r);
	}
	for (MemPlan *p = c->plans, *next; p; p = next) {
		next = p->next;
		free(p->offset);
		free(p->size);
		free(p);
	}
	free(c->statv);
	free(c->seconds);
	train_step_free(c->train_step);
	c->train_step = NULL;
	free(c->seq_offsets);
	c->seq_offsets = NULL;
	c->remarks = c->last_remark = NULL;
	c->plans = NULL;
	c->statv = NULL;
	c->seconds = NULL;
}

const PassInfo *pass_find(const char *name)
{
	for (int i = 0; i < pass_count; i++)
		if (strcmp(pass_table[i].name, name) == 0)
			return &pass_table[i];
	return NULL;
}

void pass_list(FILE *f)
{
	for (int i = 0; i < pass_count; i++)
		fprintf(f, "  %-13s %s\n", pass_table[i].name, pass_table[i].description);
	fprintf(f, "default pipeline: %s\n", PASS_DEFAULT_PIPELINE);
}

/* Calls fn on each name of the comma-separated list; stops at the first nonzero result. */
static int each_name(const char *list, int (*fn)(const char *name, void *arg), void *arg)
{
	char *s = strdup(list), *save = NULL;
	int rc = 0;
	if (!s)
		return -1;
	for (char *t = strtok_r(s, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save))
		rc = fn(t, arg);
	free(s);
	return rc;
}

static int check_one(const char *name, void *arg)
{
	(void)arg;
	if (pass_find(name))
		return 0;
	const char *names[64];
	char sug[2048];
	int n = 0;
	for (int i = 0; i < pass_count && n < 64; i++)
		names[n++] = pass_table[i].name;
	diag_suggest(sug, sizeof sug, name, names, n);
	fprintf(stderr, "aicc: error: unknown pass '%s'%s\n", name, sug);
	return -1;
}

int pass_check_list(const char *list) { return each_name(list, check_one, NULL); }

/* ---- statistics ---- */
void pass_stat(PassCtx *c, const char *name, int64_t delta)
{
	const char *p = c->cur_pass ? c->cur_pass : "?";
	for (int i = 0; i < c->nstats; i++)
		if (c->statv[i].pass == p && strcmp(c->statv[i].name, name) == 0) {
			c->statv[i].value += delta;
			return;
		}
	if (c->nstats == c->capstats) {
		int cap = c->capstats ? 2 * c->capstats : 16;
		PassStat *v = realloc(c->statv, (size_t)cap * sizeof *v);
		if (!v)
			abort();
		c->statv = v;
		c->capstats = cap;
	}
	c->statv[c->nstats++] = (PassStat){ p, name, delta };
}

int64_t pass_stat_get(const PassCtx *c, const char *pass, const char *name)
{
	int64_t v = 0;
	for (int i = 0; i < c->nstats; i++)
		if (strcmp(c->statv[i].pass, pass) == 0 && strcmp(c->statv[i].name, name) == 0)
			v += c->statv[i].value;
	return v;
}

static int stat_cmp(const void *a, const void *b)
{
	const PassStat *x = a, *y = b;
	int r = strcmp(x->pass, y->pass);
	return r ? r : strcmp(x->name, y->name);
}

/* LLVM's -stats layout: "    12 canonicalize - nodes removed". */
void pass_print_stats(const PassCtx *c, FILE *f)
{
	PassStat *v = malloc((size_t)(c->nstats ? c->nstats : 1) * sizeof *v);
	if (!v)
		return;
	memcpy(v, c->statv, (size_t)c->nstats * sizeof *v);
	qsort(v, (size_t)c->nstats, sizeof *v, stat_cmp);
	fprintf(f, "===-------------------------------------------------------------------------===\n"
		   "                          ... Statistics Collected ...\n"
		   "===-------------------------------------------------------------------------===\n");
	for (int i = 0; i < c->nstats; i++)
		if (v[i].value)
			fprintf(f, "%8lld %s - %s\n", (long long)v[i].value, v[i].pass, v[i].name);
	free(v);
}

void pass_print_times(const PassCtx *c, FILE *f)
{
	double total = 0;
	for (int i = 0; c->seconds && i < pass_count; i++)
		total += c->seconds[i];
	fprintf(f, "===-------------------------------------------------------------------------===\n"
		   "                      ... Pass execution timing report ...\n"
		   "===-------------------------------------------------------------------------===\n"
		   "  Total Execution Time: %.4f seconds\n   Wall Time   Name\n", total);
	for (int i = 0; c->seconds && i < pass_count; i++)
		if (c->seconds[i] > 0)
			fprintf(f, "  %.4f (%5.1f%%)  %s\n", c->seconds[i],
				total > 0 ? 100 * c->seconds[i] / total : 0.0, pass_table[i].name);
}

/* ---- bisection ---- */
int pass_bisect(PassCtx *c, const Node *n, const char *what)
{
	long k = ++c->bisect_count;
	if (c->bisect_limit < 0)
		return 1;
	int run = k <= c->bisect_limit;
	fprintf(c->out, "BISECT: %s rewrite (%ld) %s: %s '%s'\n", run ? "running" : "NOT running", k,
		c->cur_pass ? c->cur_pass : "?", what, n ? pass_node_name(n) : "");
	return run;
}

void pass_changed(PassCtx *c, const char *stat)
{
	c->changes++;
	pass_stat(c, stat, 1);
}

/* ---- running ---- */
typedef struct Run {
	Module *m;
	PassCtx *c;
	unsigned valid;       /* A_* that hold now */
	int errors;
} Run;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Re-establishes the analyses in `need` that do not hold; the count of errors. */
static int establish(Run *r, unsigned need)
{
	if ((need & A_TOPO) && !(r->valid & A_TOPO)) {
		for (Graph *g = r->m->graphs; g; g = g->next)
			if (ir_topo_sort(g) < 0) {
				diag_error(g->loc, "graph '%s' has a cycle", g->name);
				return 1;
			}
		r->valid |= A_TOPO;
	}
	if ((need & A_SHAPES) && !(r->valid & A_SHAPES)) {
		int e = ir_infer_shapes(r->m);
		if (e)
			return e;
		r->valid |= A_SHAPES;
	}
	return 0;
}

/* --verify-each: the structure and the types must still hold after pass p. */
static int verify_after(Run *r, const PassInfo *p)
{
	int e = ir_verify(r->m);
	if (!e)
		e = establish(r, A_TOPO);
	if (!e) {
		r->valid &= ~(unsigned)A_SHAPES;
		e = establish(r, A_SHAPES);
	}
	if (e)
		fprintf(stderr, "aicc: error: the IR is invalid after pass '%s' (%d error%s above)\n",
			p->name, e, e == 1 ? "" : "s");
	return e;
}

static void print_after(Run *r, const PassInfo *p)
{
	PassCtx *c = r->c;
	if (!c->print_after_all && !(c->print_after && strcmp(c->print_after, p->name) == 0))
		return;
	fprintf(c->out, "# IR after %s\n", p->name);
	ir_print_module_elided(r->m, c->out, c->print_elide);
}

static int run_one(const char *name, void *arg)
{
	Run *r = arg;
	const PassInfo *p = pass_find(name);
	if (!p)
		return check_one(name, NULL);
	if ((r->errors = establish(r, p->requires)))
		return -1;
	r->c->cur_pass = p->name;
	double t0 = now();
	r->errors = p->fn(r->m, r->c);
	r->c->seconds[p - pass_table] += now() - t0;
	r->c->cur_pass = NULL;
	r->valid &= ~p->invalidates;
	if (r->errors)
		return -1;
	if (r->c->verify_each && (r->errors = verify_after(r, p)))
		return -1;
	print_after(r, p);
	return 0;
}

int pass_run_pipeline(Module *m, PassCtx *c, const char *list)
{
	Run r = { m, c, 0, 0 };
	if (!c->seconds && !(c->seconds = calloc((size_t)pass_count, sizeof *c->seconds)))
		abort();
	int rc = each_name(list, run_one, &r);
	if (rc && !r.errors)
		r.errors = 1;
	if (!r.errors)
		r.errors = establish(&r, A_TOPO | A_SHAPES);
	return r.errors;
}
