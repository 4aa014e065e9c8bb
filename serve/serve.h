/* serve/serve.h: `aicc serve`, a discrete-event simulation of an LLM inference server whose
 * iterations are priced by aicc's own plans (docs/serving.md).
 *
 * The parts:
 *   pools     (serve/pool.c)     one engine type: model, target, machine, parallelism, precision,
 *                                KV format, replicas; its KV capacity from the plan's memory
 *   cost      (serve/cost.c)     serve_iter_cost: the seconds one iteration of a batch
 *                                composition takes, read from plans compiled for that composition
 *                                through the library (kv-cache pass phase "mixed", the target's
 *                                lowering, rt_simulate), exactly or from a lazily compiled
 *                                (tokens, context) grid with interpolation
 *   workload  (serve/workload.c) requests: Poisson or gamma arrivals, fixed / uniform / lognormal
 *                                lengths, CSV traces, ShareGPT JSON; located errors
 *   sim       (serve/sim.c)      the event loop, the schedulers (continuous batching as in
 *                                Orca/vLLM, Sarathi-Serve chunked prefill, DistServe/Splitwise
 *                                disaggregation, speculative decoding), the paged KV cache,
 *                                admission and preemption
 *   report    (serve/report.c)   TTFT/TPOT/E2E percentiles, goodput, time series, JSON report,
 *                                Perfetto trace, gnuplot plots
 *   search    (serve/search.c)   --capacity (bisection over rates) and --search (deployments)
 *
 * Units: seconds, tokens, bytes, requests/s.  Nothing here exits the process; errors come back
 * as -1 (or NULL) with a message in an SvError ("file:line:col: error: ..." for trace files,
 * "aicc: error: ..." otherwise).
 */
#ifndef AICC_SERVE_H
#define AICC_SERVE_H

#include <stdint.h>
#include <stdio.h>

#include "passes/pass.h"
#include "targets/target.h"

typedef struct SvError {
	char msg[1024];
} SvError;
/* Formats msg into e (always returns -1, so `return sv_err(e, ...)` reads naturally). */
int sv_err(SvError *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- one iteration's batch composition ---- */
enum { SV_MAX_CHUNKS = 256 };
typedef struct SvChunk {
	int64_t s, p;        /* new prompt tokens, tokens of the prompt already prefilled */
} SvChunk;
typedef struct SvBatch {
	int64_t decodes;     /* decoding sequences */
	int64_t decode_s;    /* tokens each decode runs: 1, or k + 1 when verifying k drafts */
	int64_t decode_p;    /* their mean past tokens (rounded up; attention reads sum(p)) */
	int nchunks;
	SvChunk chunk[SV_MAX_CHUNKS];
} SvBatch;
/* Tokens of the batch: decodes * decode_s + sum of chunk tokens. */
int64_t sv_batch_tokens(const SvBatch *b);

/* ---- pools ---- */
typedef enum SvCostMode {
	SV_COST_GRID,        /* plans on a (tokens, context) grid, compiled on first use, interpolated */
	SV_COST_EXACT,       /* one plan per distinct composition (memoised) */
	SV_COST_FIXED,       /* test double: base + per-token seconds, no plans (golden tests) */
} SvCostMode;

/* A grid point or exact composition's plan: predicted seconds, of which attention kernels
 * (the most any stream spends in them), and the chips the plan uses. */
typedef struct SvPlanTime {
	double total_s, attn_s;
	int chips;
} SvPlanTime;

typedef struct SvCache SvCache;   /* serve/cost.c */

typedef struct SvPool {
	/* the spec (strings owned) */
	char *role;          /* "colocated", "prefill", "decode", "draft" */
	char *model;         /* .aig (or .onnx) path */
	char *binds;         /* extra --bind NAME=V,... for the model, or NULL */
	char *target, *machine, *precision;
	char *sets[16];      /* --set key=value overrides of the machine */
	int nsets;
	int tp, pp;          /* parallelism inside one replica (1: none) */
	int replicas;        /* engines of this kind */
	int kv_fp8;          /* KV cache stored as FP8 (1 byte per value) instead of the plan's dtype */
	int batch_form;      /* decode plans as --phase decode (B sequences); the vera-rubin target */
	double cpu_s;        /* engine CPU time per iteration (scheduling, sampling, detokenising) */
	int cpu_overlap;     /* CPU work overlaps the accelerators (iteration = max, not sum) */
	double mem_util;     /* fraction of device memory the engine may use (vLLM's 0.9) */
	/* cost */
	SvCostMode mode;
	double fixed_base_s, fixed_token_s;
	/* derived at sv_pool_open */
	TgtMachine mach;
	int mach_loaded;
	Precision prec;      /* `precision` parsed once against the target and the machine */
	int64_t kv_tokens;   /* KV-cache capacity of one replica, tokens (all layers) */
	double kv_token_bytes;   /* bytes per token on the device that bounds the capacity */
	double kv_token_bytes_all;   /* bytes per token of the whole replica (what a transfer moves) */
	double host_bw;      /* bytes/s of the machine's host link (swap preemption), 0: none */
	double weight_bytes; /* per replica, all devices */
	int chips;           /* per replica: accelerator chips its plans use (the most seen; pools
				of two device classes: the most GPUs plus the most LPUs, vr_gpus + vr_lpus) */
	int vr_gpus, vr_lpus;   /* vera-rubin: the most GPUs and LPUs one plan's pools take */
	int64_t max_context; /* the model's positions (rows of its RoPE tables); 0: unknown */
	int64_t max_tokens;  /* the largest iteration, in tokens, the memory profile was taken at */
	int64_t layers;      /* repetitions of the model's layer stack (0: none found) */
	int extrapolate;     /* grid plans from 2- and 3-layer plans (serve/cost.c grid_time) */
	int no_extrapolate;  /* the user's --cost grid-full: every grid plan has all layers */
	/* statistics */
	int compiles;        /* plans compiled */
	double compile_s;    /* wall seconds spent compiling and timing them */
	SvCache *cache;
	char *passes;        /* pass pipeline of its plans: kv-cache, then the target's -O1 pipeline
				(with partition before plan-memory where the target does not place chips itself) */
} SvPool;

/* Parses a pool spec "TARGET:MACHINE[,tp=N][,pp=N][,precision=P][,replicas=N][,kv=fp8|bf16]
 * [,cpu=4ms][,set=key=value]" into a fresh pool of role `role` for model (fields not given
 * keep their defaults: tp 1, replicas 1, cpu 4 ms).  MACHINE may be a built-in name, a file,
 * or an alias NAMExK ("b200x8" = dgx-b200, "h100x8" = dgx-h100).  -1 with e set. */
int sv_pool_parse(SvPool *p, const char *role, const char *model, const char *spec, SvError *e);
/* Defaults every field (tp 1, replicas 1, cpu 4 ms, mem_util 0.9, grid cost). */
void sv_pool_init(SvPool *p, const char *role, const char *model);
/* Loads the machine, checks the model, sizes the KV cache from a profile plan of max_tokens
 * tokens (memory after weights and activations) and records chips.  -1 with e set. */
int sv_pool_open(SvPool *p, int64_t max_tokens, SvError *e);
void sv_pool_free(SvPool *p);
/* "hopper:dgx-h100,tp=8" style description of the pool, in buf (n bytes). */
const char *sv_pool_describe(const SvPool *p, char *buf, size_t n);

/* ---- the cost of one iteration (serve/cost.c) ---- */
/* Seconds the accelerators of one replica of pool p take for one iteration of batch b (the
 * engine CPU time is separate: p->cpu_s).  Grid mode: a single-group batch (all decodes, or one
 * chunk) is interpolated from plans of that kind; a mixed batch is W(T) + sum of its groups'
 * attention times, W being the non-attention time of a T-token plan (docs/serving.md gives the
 * measured accuracy).  Returns the seconds, or -1 with e set (a plan does not compile). */
double serve_iter_cost(SvPool *p, const SvBatch *b, SvError *e);
/* Compiles and times the plan of exactly this composition (groups as for the kv-cache pass's
 * mixed phase: decodes first, then chunks; at most PASS_MIX_MAX groups).  0, or -1 with e set. */
int sv_plan_time(SvPool *p, const PassMixGroup *g, int ng, SvPlanTime *out, SvError *e);

/* ---- workloads (serve/workload.c) ---- */
typedef struct SvRequest {
	double arrival;      /* seconds */
	int64_t in, out;     /* prompt and output tokens (out >= 1) */
	int line;            /* trace line (0: generated) */
} SvRequest;

typedef struct SvWorkload {
	SvRequest *r;
	int n;
	char *source;        /* "poisson rate=4 ...", or the trace path */
} SvWorkload;

typedef enum SvDist { SV_FIXED, SV_UNIFORM, SV_LOGNORMAL } SvDist;
typedef struct SvLengths {
	SvDist kind;
	double a, b;         /* fixed: a; uniform: [a, b]; lognormal: mean a, sigma b (of the log) */
} SvLengths;
typedef struct SvGenSpec {
	int n;               /* requests */
	double rate;         /* requests/s */
	double cv;           /* gamma arrivals: coefficient of variation (1: Poisson) */
	SvLengths in, out;
	uint64_t seed;
} SvGenSpec;
/* Parses a length spec: "512", "uniform:128:1024", "lognormal:MEAN:SIGMA".  -1 with e set. */
int sv_lengths_parse(const char *s, const char *what, SvLengths *l, SvError *e);
/* Generates spec->n requests (deterministic for a seed).  -1 with e set (rate <= 0, ...). */
int sv_workload_generate(const SvGenSpec *spec, SvWorkload *w, SvError *e);
/* Reads a CSV trace (header arrival_s,input_tokens,output_tokens) or, for a .json file, a
 * ShareGPT-style list of conversations (token counts estimated as in docs/serving.md, or read
 * from input_tokens/output_tokens fields).  Arrivals for JSON (which has none) come from
 * `gen` (rate, cv, seed); gen->n > 0 keeps the first n.  -1 with e set, located for CSV. */
int sv_workload_read(const char *path, const SvGenSpec *gen, SvWorkload *w, SvError *e);
/* Checks every request against the model's context (max_context > 0); located error. */
int sv_workload_check(const SvWorkload *w, int64_t max_context, SvError *e);
void sv_workload_free(SvWorkload *w);
/* Rescales arrival times to a new mean rate (same seed, same shape). */
void sv_workload_rescale(SvWorkload *w, double old_rate, double new_rate);

/* ---- deployments and the simulation (serve/sim.c) ---- */
typedef enum SvSched {
	SV_CONTINUOUS,       /* Orca / vLLM: iteration-level batching, prefill iterations first */
	SV_SARATHI,          /* Sarathi-Serve: chunked prefill, stall-free hybrid batches */
	SV_DISAGG,           /* DistServe / Splitwise: prefill pool, KV transfer, decode pool */
} SvSched;

typedef enum SvKvAlloc {
	SV_KV_PAGED,         /* vLLM PagedAttention: blocks on demand */
	SV_KV_MAX,           /* Orca (Max): a contiguous reservation of the model's context */
	SV_KV_POW2,          /* Orca (Pow2): input + output rounded up to a power of two */
	SV_KV_ORACLE,        /* Orca (Oracle): exactly input + output */
} SvKvAlloc;

typedef enum SvPreempt { SV_RECOMPUTE, SV_SWAP } SvPreempt;

typedef struct SvDeploy {
	const char *name;    /* for reports */
	SvSched sched;
	SvPool *main;        /* colocated, or the decode pool (also the verifier) */
	SvPool *prefill;     /* SV_DISAGG */
	SvPool *draft;       /* speculative decoding: the draft model's pool, or NULL */
	int spec_k;          /* draft tokens per step */
	double accept;       /* per-token acceptance rate of the drafts, [0, 1) */
	int max_batch;       /* sequences per iteration (vLLM max_num_seqs, default 256) */
	int64_t token_budget;    /* tokens per iteration (vLLM max_num_batched_tokens / Sarathi tau) */
	int64_t chunk;       /* Sarathi: largest prefill chunk (0: the token budget) */
	int block;           /* KV block, tokens (16) */
	int64_t max_seq;     /* Orca (Max)'s reservation per request (0: the model's context) */
	SvKvAlloc kv_alloc;
	SvPreempt preempt;
	double swap_bw;      /* bytes/s of the host link used by swap preemption */
	double kv_link_bw, kv_link_lat;   /* prefill -> decode KV transfer link (per replica pair) */
	const char *kv_link_name;
	uint64_t seed;       /* draft acceptance draws */
	int log;             /* print every iteration to `logf` */
	FILE *logf;
} SvDeploy;
/* Defaults: continuous batching, max batch 256, budget 2048, block 16, paged, recompute. */
void sv_deploy_init(SvDeploy *d);

/* Per-request results and the time series of one run. */
typedef struct SvReqResult {
	double arrival, first, done;   /* seconds */
	int64_t in, out;
	int preemptions;
} SvReqResult;
typedef struct SvSample {         /* one iteration of one engine */
	double t, dur;                /* start, accelerator + CPU seconds */
	double cpu;
	int pool, engine;             /* pool 0 main/decode, 1 prefill, 2 draft */
	int batch;                    /* sequences */
	int64_t tokens, prefill_tokens;
	double kv_used;               /* fraction of the engine's KV blocks in use */
} SvSample;
typedef struct SvRun {
	SvReqResult *req;
	int nreq;
	SvSample *it;
	int nit, capit;
	int64_t preemptions, swaps;
	float *tbt;                   /* every gap between two streamed outputs of a request (TBT/ITL), s */
	int64_t ntbt, captbt;
	double accel_s, cpu_s;        /* summed over iterations of every engine */
	double transfer_s;            /* summed KV transfer time */
	double sim_wall_s;            /* wall time of the simulation itself */
	int64_t iterations;
} SvRun;
/* Runs workload w through deployment d.  -1 with e set (a plan fails, a request can never be
 * admitted). */
int sv_simulate(const SvDeploy *d, const SvWorkload *w, SvRun *r, SvError *e);
void sv_run_free(SvRun *r);
/* Chips of the deployment (all replicas of all pools). */
int sv_deploy_chips(const SvDeploy *d);

/* ---- metrics and outputs (serve/report.c) ---- */
typedef struct SvSloTerm {
	int metric;          /* 0 ttft, 1 tpot, 2 e2e, 3 tbt (time between tokens, all gaps) */
	double pct;          /* 50, 90, 99 ... */
	double limit;        /* seconds */
} SvSloTerm;
typedef struct SvSlo {
	SvSloTerm t[6];
	int n;
} SvSlo;
/* Parses "ttft_p90=0.5s,tpot_p90=50ms".  -1 with e set. */
int sv_slo_parse(const char *s, SvSlo *slo, SvError *e);

typedef struct SvMetrics {
	int n;
	double duration;     /* first arrival to last completion */
	double ttft[3], tpot[3], e2e[3], tbt[3];   /* p50, p90, p99 */
	double ttft_mean, tpot_mean;
	double throughput_req, throughput_tok;   /* completed requests/s, output tokens/s */
	double goodput;      /* requests/s that met every SLO threshold */
	double attainment;   /* fraction of requests meeting every threshold */
	int slo_ok;          /* every percentile term holds */
	double mean_batch, kv_util_mean, kv_util_max;
	int64_t preemptions;
} SvMetrics;
void sv_metrics(const SvRun *r, const SvSlo *slo, SvMetrics *m);
/* Quantile q in [0, 1] of n values (sorted copy, linear interpolation as numpy's default). */
double sv_quantile(const double *v, int n, double q);
/* The text summary. */
void sv_print_summary(FILE *f, const SvDeploy *d, const SvRun *r, const SvMetrics *m, const SvSlo *slo);
/* --report JSON. 0, or -1 with e set. */
int sv_report_write(FILE *f, const SvDeploy *d, const SvWorkload *w, const SvRun *r, const SvMetrics *m,
		    const SvSlo *slo, SvError *e);
/* Perfetto (Chrome trace-event) JSON: one track per engine, a slice per iteration, KV and batch
 * counters.  0, or -1 with e set. */
int sv_trace_write(FILE *f, const SvDeploy *d, const SvRun *r, SvError *e);
/* Latency CDFs (TTFT, TPOT, E2E) as a PNG drawn by gnuplot.  0, or -1 with e set. */
int sv_plot_cdf(const char *path, const SvRun *r, SvError *e);
/* Goodput vs rate (points of a --capacity sweep) as a PNG drawn by gnuplot. */
int sv_plot_goodput(const char *path, const double *rate, const double *goodput, const int *ok, int n,
		    SvError *e);

/* ---- capacity and search (serve/search.c) ---- */
typedef struct SvCapacity {
	double rate;         /* the highest rate meeting the SLO (0: none found) */
	double rates[64], goodput[64];
	int ok[64], n;       /* every rate tried */
	SvMetrics at;        /* metrics at `rate` */
} SvCapacity;
/* Bisection over rates in [lo, hi] (requests/s) for the highest rate whose run meets slo;
 * `iters` bisection steps.  The workload is regenerated at each rate from gen (trace files:
 * arrivals rescaled).  0, or -1 with e set. */
int sv_capacity(const SvDeploy *d, const SvGenSpec *gen, const SvWorkload *trace, const SvSlo *slo,
		double lo, double hi, int iters, SvCapacity *c, SvError *e);
/* The deployment search over base's machine and model (module comment of serve/search.c):
 * prints every candidate, its capacity per chip and the frontier to f.  0, or -1 with e set. */
int sv_search_print(const SvDeploy *base, SvPool *pools, const SvGenSpec *g, const SvWorkload *trace, const SvSlo *slo,
		    double lo, double hi, int iters, FILE *f, SvError *e);

#endif
