/* passes/remarks.c: optimisation remarks, what a pass did and did not do, and why.
 *
 * Every remark is kept in the PassCtx's list in the order it was made, whatever --remarks
 * selects, so later stages (the plan writer, `aicc explain`) can report them; the ones whose
 * category is selected are also printed as they are made, clang -Rpass style:
 *   model.aig:7:3: remark: fusion: did not fuse Add 'y' into MatMul 'h': 'h' has 2 users
 * Categories are the remark names of passes/passes.def (canon, fusion, quant, schedule, memory,
 * placement, phase) and "all"; an unknown one is an error that lists them.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass.h"
#include "ir/suggest.h"

/* The distinct categories of the pass table, in its order, into cats (at most 64); their count. */
static int categories(const char *cats[64])
{
	int n = 0;
	for (int i = 0; i < pass_count; i++) {
		int k = 0;
		while (k < n && strcmp(cats[k], pass_table[i].category))
			k++;
		if (k == n && n < 64)
			cats[n++] = pass_table[i].category;
	}
	return n;
}

/* The index of category `name` among the distinct categories of the pass table, or -1. */
static int category_index(const char *name)
{
	const char *cats[64];
	int n = categories(cats);
	for (int k = 0; k < n; k++)
		if (strcmp(cats[k], name) == 0)
			return k;
	return -1;
}

unsigned pass_remark_category(const char *name)
{
	if (strcmp(name, "all") == 0)
		return ~0u;
	int k = category_index(name);
	return k < 0 ? 0 : 1u << k;
}

int pass_parse_remarks(const char *list, unsigned *mask)
{
	char *s = strdup(list), *save = NULL;
	int rc = 0;
	if (!s)
		return -1;
	for (char *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned b = pass_remark_category(t);
		if (!b) {
			/* a pass's name gets its category; else the nearest category */
			const char *cats[64], *near = NULL;
			int nc = categories(cats);
			for (int i = 0; i < pass_count && !near; i++)
				if (strcmp(pass_table[i].name, t) == 0)
					near = pass_table[i].category;
			if (!near)
				near = diag_nearest(t, cats, nc);
			fprintf(stderr, "aicc: error: unknown remark category '%s' (", t);
			if (near)
				fprintf(stderr, "did you mean '%s'?; ", near);
			fprintf(stderr, "expected ");
			for (int k = 0; k < nc; k++)
				fprintf(stderr, "%s, ", cats[k]);
			fprintf(stderr, "or all)\n");
			rc = -1;
			break;
		}
		*mask |= b;
	}
	free(s);
	return rc;
}

static void print_remark(const PassCtx *c, const Remark *r)
{
	if (r->loc.file && r->loc.line > 0)
		fprintf(c->out, "%s:%d:%d: ", r->loc.file, r->loc.line, r->loc.col);
	else if (r->loc.file)
		fprintf(c->out, "%s: ", r->loc.file);   /* ONNX nodes: "model.onnx: node 'x' (Op, opset N)" */
	else
		fprintf(c->out, "aicc: ");
	fprintf(c->out, "remark: %s: %s\n", r->category, r->msg);
}

/* Whether the same remark was made already (canonicalize's rounds repeat what they miss). */
static int seen(const PassCtx *c, Loc loc, const char *msg)
{
	for (const Remark *r = c->remarks; r; r = r->next)
		if (r->loc.line == loc.line && r->loc.col == loc.col && strcmp(r->msg, msg) == 0)
			return 1;
	return 0;
}

void pass_remark(PassCtx *c, RemarkKind kind, const Graph *g, const Node *n, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	Loc loc = n ? n->loc : g ? g->loc : (Loc){ 0 };
	if (seen(c, loc, buf))
		return;
	Remark *r = calloc(1, sizeof *r);
	const PassInfo *p = c->cur_pass ? pass_find(c->cur_pass) : NULL;
	if (!r || !(r->msg = strdup(buf)))
		abort();
	r->category = p ? p->category : "canon";
	r->pass = p ? p->name : "?";
	r->kind = kind;
	r->loc = loc;
	r->node = n ? pass_node_name(n) : NULL;
	r->graph = g ? g->name : n ? n->graph->name : NULL;
	if (c->last_remark)
		c->last_remark->next = r;
	else
		c->remarks = r;
	c->last_remark = r;
	c->nremarks++;
	pass_stat(c, kind == REMARK_MISSED ? "remarks (missed)" : "remarks", 1);
	if (c->remark_mask & pass_remark_category(r->category))
		print_remark(c, r);
}

const Remark *pass_remarks(const PassCtx *c) { return c->remarks; }
