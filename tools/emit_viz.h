/* tools/emit_viz.h: `aicc compile --emit dot|svg|png` and `aicc explain --emit` (tools/emit_viz.c). */
#ifndef AICC_EMIT_VIZ_H
#define AICC_EMIT_VIZ_H

#include <stdio.h>

#include "ir/ir.h"
#include "runtime/plan.h"

/* The picture options of compile and explain. */
typedef struct PictureOpts {
	int expand;              /* --expand: no collapsing of repeated layers and shards */
	const char *focus;       /* --focus NAME[,NAME]: only these instances, graphs or devices */
	double layout_s;         /* --layout-time S: the layout budget (0: the default) */
} PictureOpts;

/* 1 if `emit` names a picture format (dot, svg, png). */
int drv_is_picture(const char *emit);
/* If argv[*i] is a picture option, stores it in o (advancing *i past a value) and returns 1;
 * -1 after an error message; 0 when it is not one. */
int drv_picture_opt(int argc, char **argv, int *i, PictureOpts *o);
/* Prints the picture options for a command's --help. */
void drv_picture_help(void);
/* Draws plan (its placement; predicted times from the timing engine) or, when plan is NULL, the
 * module's entry graph, in format `emit`, to f, as o asks: focused, collapsed unless expand,
 * within the size caps and the layout budget, with a progress line while dot lays it out.
 * Returns 0, or -1 with a message on stderr (that says how to draw less when too big or slow). */
int drv_emit_picture(const Module *m, const Plan *plan, const char *emit, const PictureOpts *o, FILE *f);

#endif
