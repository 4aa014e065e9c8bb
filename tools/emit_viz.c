/* tools/emit_viz.c: the driver's side of the pictures: picks the picture's source (the plan when
 * a target was given, else the IR), runs the timing engine for the plan's predicted times
 * (through the target's cost hook), collapses repeated layers unless --expand, and hands the
 * model to viz/graph.c.  Requires viz/viz.h and tools/plan_build.h. */
#include "tools/emit_viz.h"

#include <string.h>

#include "tools/plan_build.h"
#include "viz/viz.h"

/* Expanded pictures past this many nodes are refused: dot would take minutes. */
#define VIZ_MAX_NODES 200000

int drv_is_picture(const char *emit)
{
	return strcmp(emit, "dot") == 0 || strcmp(emit, "svg") == 0 || strcmp(emit, "png") == 0;
}

int drv_emit_picture(const Module *m, const Plan *plan, const char *emit, int expand, FILE *f)
{
	VizGraph g;
	RtTiming t;
	int timed = 0;
	if (plan) {
		RtError e = { 0 };
		drv_register_runtime_hooks();
		timed = rt_simulate(plan, &t, &e) == 0;
		if (viz_from_plan(plan, timed ? &t : NULL, &g) < 0) {
			if (timed)
				rt_timing_free(&t);
			return -1;
		}
	} else if (viz_from_ir(m, &g, VIZ_MAX_NODES) < 0)
		return -1;
	if (!expand)
		viz_collapse(&g);
	VizFormat fmt = strcmp(emit, "dot") == 0 ? VIZ_DOT : strcmp(emit, "svg") == 0 ? VIZ_SVG : VIZ_PNG;
	int rc = viz_write(&g, fmt, f);
	viz_free(&g);
	if (timed)
		rt_timing_free(&t);
	return rc;
}
