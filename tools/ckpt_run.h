/* tools/ckpt_run.h: `aicc run --load-checkpoint DIR / --save-checkpoint DIR` (runtime/ckpt.h;
 * docs/resilience.md). */
#ifndef AICC_CKPT_RUN_H
#define AICC_CKPT_RUN_H

#include "runtime/interp.h"

/* Bindings for every constant of p read from checkpoint dir: the region each constant holds,
 * assembled from the checkpoint's slices, whatever partitioning wrote them.  Constants named in
 * given[0..ngiven) (--input) keep those.  *out (malloc'd) receives given followed by the new
 * bindings, *nout their count; *store (malloc'd, *nstore tensors) owns the new tensors and their
 * names.  Returns 0, or -1 after printing the error (nothing to free). */
int ckpt_bind(const char *dir, const Plan *p, const RtBinding *given, int ngiven, RtBinding **out, int *nout,
	      RtTensor **store, int *nstore);
void ckpt_bind_free(RtBinding *b, int ngiven, int n, RtTensor *store, int nstore);

/* Writes the state p ends run r with into checkpoint dir: every constant (r->values, kept with
 * RtRunOpts.keep_all), except that a constant X of a training plan with an output `X.next` (the
 * step's updated weight, moment or step counter) is saved as that output.  whole: one slice per
 * tensor, all in model.safetensors; else the slices the devices hold (replicas once), one file
 * per device (DEVICE.safetensors).  *bytes: data bytes written.  0, or -1 after printing. */
int ckpt_save(const char *dir, const Plan *p, const RtRun *r, int whole, int64_t *bytes, int *ntensors, int *nslices);

#endif
