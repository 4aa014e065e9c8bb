/* tools/emit_viz.h: `aicc compile --emit dot|svg|png` (tools/emit_viz.c). */
#ifndef AICC_EMIT_VIZ_H
#define AICC_EMIT_VIZ_H

#include <stdio.h>

#include "ir/ir.h"
#include "runtime/plan.h"

/* 1 if `emit` names a picture format (dot, svg, png). */
int drv_is_picture(const char *emit);
/* Draws plan (its placement; predicted times from the timing engine) or, when plan is NULL, the
 * module's entry graph, in format `emit`, to f.  Repeated layers are collapsed unless expand.
 * Returns 0, or -1 with a message on stderr. */
int drv_emit_picture(const Module *m, const Plan *plan, const char *emit, int expand, FILE *f);

#endif
