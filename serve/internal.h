/* serve/internal.h: what the serve/ files share and nobody else needs. */
#ifndef AICC_SERVE_INTERNAL_H
#define AICC_SERVE_INTERNAL_H

#include "runtime/interp.h"
#include "serve/serve.h"

/* Engine CPU time per iteration when none is given: vLLM's single-step engine leaves the GPU
 * idle about 4 ms per decode step while the CPU schedules, samples and detokenises (vLLM RFC
 * #6854, "Multi-Step Scheduling": Nsight traces, "each highlighted redbox is about 4ms of GPU
 * bubble"; 5-13 ms across setups).  docs/serving.md "Engine CPU overhead". */
#define SV_CPU_DEFAULT_S 4e-3

/* A compiled and timed plan. */
typedef struct SvCompiled {
	Plan *plan;
	RtTiming timing;
	int chips;           /* accelerator chips it uses */
} SvCompiled;

/* Reads the pool's model with its binds and the phase binds B and S, verified and with shapes
 * inferred.  NULL with e set (the frontend's diagnostics go to stderr as well). */
Module *sv_load_model(SvPool *p, int64_t B, int64_t S, SvError *e);
/* The pass pipeline the pool's plans are built with. */
const char *sv_pipeline(const SvPool *p);
/* Compiles the composition g[ng] for pool p (mixed phase; or decode/prefill phase for a
 * batch-form pool) and times it.  0, or -1 with e set. */
int sv_plan_compile(SvPool *p, const PassMixGroup *g, int ng, SvCompiled *c, SvError *e);
void sv_compiled_free(SvCompiled *c);

SvCache *sv_cache_new(void);
void sv_cache_free(SvCache *c);

/* "4ms", "0.5s", "250us", "3": seconds; -1 when malformed. */
double sv_parse_seconds(const char *s);

#endif
