/* tools/plan_build.c: from a shape-inferred module to a plan (tools/plan_build.h), and the
 * reference rebuild for --check: re-read the model a plan records, bind the same symbols, verify,
 * infer shapes and lower it with the `reference` target at the plan's precision. */
#include "tools/plan_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "targets/target.h"
#include "tools/driver.h"

int drv_apply_binds(Module *m, const char *spec)
{
	char *s = strdup(spec), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end = NULL;
		errno = 0;
		long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || eq == tok || !end || *end || errno || v < 0) {
			drv_error("--bind expects NAME=VALUE with a non-negative integer, got '%s'", tok);
			rc = -1;
			break;
		}
		*eq = 0;
		ir_bind(m, tok, v);
	}
	free(s);
	return rc;
}

/* Lowers with the target named in o; the error (if any) in e. */
static Plan *lower(Module *m, const BuildOpts *o, RtError *e)
{
	const Target *t = tgt_find(o->target);
	if (!t) {
		rt_errorf(e, RT_EUSER, "aicc: error: unknown target '%s' (see aicc targets)", o->target);
		return NULL;
	}
	TgtMachine mach;
	if (tgt_machine_load(o->machine ? o->machine : t->default_machine, o->sets, o->nsets, &mach, e) < 0)
		return NULL;
	Graph *g = ir_entry(m);
	if (!g) {
		tgt_machine_free(&mach);
		rt_errorf(e, RT_EUSER, "aicc: error: the model defines no graph");
		return NULL;
	}
	TgtInput in = { m, g, &mach, o->precision, o->model, o->binds };
	Plan *p = t->lower(&in, e);
	tgt_machine_free(&mach);
	return p;
}

Plan *drv_build_plan(Module *m, const BuildOpts *o)
{
	RtError e = { 0 };
	Plan *p = lower(m, o, &e);
	if (!p)
		fprintf(stderr, "%s\n", e.msg);
	return p;
}

/* The --check hook: the reference plan of the graph p was compiled from. */
static Plan *rebuild_reference(const Plan *p, const char *precision, RtError *e)
{
	Module *m = fe_parse_aig(p->source.model);
	if (!m) {
		rt_errorf(e, RT_EUSER, "--check: cannot rebuild the reference: '%s' does not parse", p->source.model);
		return NULL;
	}
	Plan *ref = NULL;
	if (p->source.binds && *p->source.binds && drv_apply_binds(m, p->source.binds) < 0)
		rt_errorf(e, RT_EUSER, "--check: the plan's binds '%s' are malformed", p->source.binds);
	else if (ir_verify(m) > 0 || ir_infer_shapes(m) > 0)
		rt_errorf(e, RT_EUSER, "--check: '%s' no longer verifies", p->source.model);
	else {
		BuildOpts o = { p->source.model, p->source.binds, "reference", NULL, NULL, 0, precision };
		ref = lower(m, &o, e);
	}
	ir_module_free(m);
	return ref;
}

void drv_register_runtime_hooks(void)
{
	tgt_register_costs();
	rt_set_rebuild(rebuild_reference);
}
