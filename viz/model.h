/* viz/model.h: building VizGraphs (viz/model.c), shared by the IR and plan front ends of the
 * pictures.  Private to viz/. */
#ifndef AICC_VIZ_MODEL_H
#define AICC_VIZ_MODEL_H

#include "viz/viz.h"

void *vz_alloc(size_t n);                /* zeroed; aborts when memory runs out */
void *vz_grow(void *v, int *cap, int n, size_t sz);   /* room for element n */
char *vz_strdup(const char *s);          /* NULL stays NULL */
/* The index of device `name`, added with `kind` when new. */
int vz_device(VizGraph *g, const char *name, const char *kind);
/* A new node with copies of the strings (instance, callee from its id); its index. */
int vz_node(VizGraph *g, VizKind kind, const char *id, const char *op, int device);
/* A new edge; its index.  Strings are copied. */
int vz_edge(VizGraph *g, int src, int dst, int64_t bytes, const char *type);



/* Gives every member of a fusion group the kind its anchor records (`fusion`); members of one
 * group are contiguous within their instance in both front ends. */
void vz_fusion_kinds(VizGraph *g);
#endif
