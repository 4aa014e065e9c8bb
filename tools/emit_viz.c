/* tools/emit_viz.c: the driver's side of the pictures: the picture options shared by `aicc
 * compile` and `aicc explain` (--expand, --focus, --layout-time), the picture's source (the plan
 * when a target was given, else the IR), the timing engine's predicted times (through the
 * target's cost hook), focus and collapsing, the size caps, and the hand-off to viz/graph.c with
 * a layout-time budget and a progress line.  Requires viz/viz.h and tools/plan_build.h. */
#include "tools/emit_viz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/driver.h"
#include "tools/plan_build.h"
#include "tools/progress.h"
#include "viz/viz.h"

/* Caps.  DOT text needs no layout: up to VIZ_MAX_NODES nodes.  Laid out (svg, png), dot's
 * crossing minimisation and network simplex grow faster than linearly; measured on the build
 * machine with nslimit=2, 486 nodes / 708 edges (llama3.1-8b --expand) take 1 s and 2,660 / 3,900
 * (70B --tp 8 before collapsing) 1 s, while the 10,000 nodes of 70B --tp 8 --expand ran past
 * 5 minutes: past VIZ_MAX_LAYOUT_NODES or _EDGES the picture is refused with a suggestion, and
 * any layout that still runs longer than the budget (default VIZ_LAYOUT_BUDGET_S) is stopped. */
#define VIZ_MAX_NODES 200000
#define VIZ_MAX_LAYOUT_NODES 3000
#define VIZ_MAX_LAYOUT_EDGES 6000
#define VIZ_LAYOUT_BUDGET_S 60.0

int drv_is_picture(const char *emit)
{
	return strcmp(emit, "dot") == 0 || strcmp(emit, "svg") == 0 || strcmp(emit, "png") == 0;
}

void drv_picture_help(void)
{
	printf("  --expand              pictures: draw every instance of a repeated layer and every shard\n"
	       "  --focus NAME[,NAME]   pictures: only these call instances (layer#3), graphs (layer,\n"
	       "                        layer.stage1), devices (gpu3) or the top level (top), with their\n"
	       "                        neighbours dashed\n"
	       "  --layout-time S       pictures: stop a layout that takes longer than S seconds\n"
	       "                        (default %g)\n", VIZ_LAYOUT_BUDGET_S);
}

int drv_picture_opt(int argc, char **argv, int *i, PictureOpts *o)
{
	const char *v;
	int r;
	if (strcmp(argv[*i], "--expand") == 0)
		return o->expand = 1;
	if ((r = opt_value(argc, argv, i, "--focus", &v))) {
		if (r > 0 && !*v) {
			drv_error("--focus expects a call instance, graph or device name (e.g. layer#3, gpu0)");
			return -1;
		}
		o->focus = v;
		return r;
	}
	if ((r = opt_value(argc, argv, i, "--layout-time", &v))) {
		char *end;
		errno = 0;
		double t = r > 0 ? strtod(v, &end) : 0;
		if (r > 0 && (end == v || *end || errno || !(t > 0) || t > 86400)) {
			drv_error("--layout-time expects seconds in (0, 86400], got '%s'", v);
			return -1;
		}
		o->layout_s = t;
		return r;
	}
	return 0;
}

/* An --expand picture without --focus is laid out (svg, png) only up to this many nodes: dot
 * puts ranks about 0.5 in + a node's height apart, so a chain of 200 nodes is some 10,000 px tall
 * at 96 dpi, ten screens (a 24-layer decoder's --expand was 2785 x 23092 px, Llama 8B's 486
 * nodes 3651 x 23983 px, issue 17).  Past it the picture is refused with the --focus that draws
 * the part wanted; --emit dot still writes it all (no layout). */
enum { VIZ_EXPAND_MAX_NODES = 200 };

/* The size caps; -1 after an error that says how to draw less. */
static int check_size(const VizGraph *g, int layout, const PictureOpts *o)
{
	int nn, ne;
	viz_shown(g, &nn, &ne);
	int max_n = layout ? VIZ_MAX_LAYOUT_NODES : VIZ_MAX_NODES, max_e = layout ? VIZ_MAX_LAYOUT_EDGES : 2 * VIZ_MAX_NODES;
	if (nn <= max_n && ne <= max_e)
		return 0;
	drv_error("the picture would have %d nodes and %d edges; %s at most %d nodes and %d edges", nn, ne,
		  layout ? "dot lays out" : "a picture has", max_n, max_e);
	fprintf(stderr, "aicc: note: draw part of it: --focus layer#3 (one layer), --focus gpu0 (one device)%s%s\n",
		o->expand ? ", or without --expand (repeated layers and shards collapse)" : "",
		layout ? "; --emit dot writes it without a layout" : "");
	return -1;
}

int drv_emit_picture(const Module *m, const Plan *plan, const char *emit, const PictureOpts *o, FILE *f)
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
	VizFormat fmt = strcmp(emit, "dot") == 0 ? VIZ_DOT : strcmp(emit, "svg") == 0 ? VIZ_SVG : VIZ_PNG;
	int rc = o->focus ? viz_focus(&g, o->focus) : 0;
	if (rc == 0 && !o->expand)
		viz_collapse(&g);
	else if (rc == 0)
		viz_attach_io(&g);
	if (rc == 0)
		rc = check_size(&g, fmt != VIZ_DOT, o);
	if (rc == 0 && o->expand && !o->focus && fmt != VIZ_DOT) {
		int nn, ne;
		viz_shown(&g, &nn, &ne);
		if (nn > VIZ_EXPAND_MAX_NODES) {
			drv_error("--expand would draw all %d nodes (every instance of a repeated layer and every shard); "
				  "an --expand picture without --focus is drawn up to %d", nn, VIZ_EXPAND_MAX_NODES);
			fprintf(stderr, "aicc: note: draw part of it: --expand --focus layer#3 (one layer), --expand --focus gpu0 "
				"(one device), or without --expand (repeated layers and shards collapse); --emit dot writes "
				"it all without a layout\n");
			rc = -1;
		}
	}
	if (rc == 0) {
		int nn, ne;
		char what[128];
		viz_shown(&g, &nn, &ne);
		snprintf(what, sizeof what, "laying out %d nodes and %d edges (Graphviz dot)", nn, ne);
		VizLayout lay = { o->layout_s > 0 ? o->layout_s : VIZ_LAYOUT_BUDGET_S, progress_step, NULL, what };
		rc = viz_write(&g, fmt, f, &lay);
		progress_end();
		if (rc == -2)
			fprintf(stderr, "aicc: note: draw part of it: --focus layer#3 (one layer), --focus gpu0 (one device)%s, "
				"or allow more time with --layout-time S\n", o->expand ? ", or without --expand" : "");
	}
	viz_free(&g);
	if (timed)
		rt_timing_free(&t);
	return rc < 0 ? -1 : 0;
}
