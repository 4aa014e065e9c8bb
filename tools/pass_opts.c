/* tools/pass_opts.c: parsing of the pass options (--passes, -O0/-O1, --list-passes,
 * --print-after-all, --verify-each, --time-passes, --stats, --remarks, --opt-bisect-limit,
 * --fold-limit, --mem-capacity, --tp, --pp, --ep, --devices, --exclude-devices,
 * --compress-collectives) into a PassCtx, and running the selected pipeline.
 * `--print-after P` is read by the subcommand itself, since it also names its own stages. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "targets/target.h"
#include "tools/driver.h"
#include "tools/pass_opts.h"
#include "runtime/codec.h"

void pass_opts_init(PassOpts *po)
{
	memset(po, 0, sizeof *po);
	po->level = -1;
	pass_ctx_init(&po->ctx);
}

/* The targets whose -O1 pipeline (Target.pipeline, as `aicc targets` prints it) has pass
 * `pass`, as "a, b and c" in buf; the help and the targets list read one table. */
static const char *targets_with(const char *pass, char *buf, size_t n)
{
	int k = 0, cnt = 0;
	for (int i = 0; i < tgt_ntargets; i++)
		cnt += tgt_targets[i]->pipeline && strstr(tgt_targets[i]->pipeline, pass) != NULL;
	buf[0] = '\0';
	for (int i = 0, j = 0; i < tgt_ntargets && (size_t)k < n; i++)
		if (tgt_targets[i]->pipeline && strstr(tgt_targets[i]->pipeline, pass)) {
			j++;
			k += snprintf(buf + k, n - (size_t)k, "%s%s", j == 1 ? "" : j == cnt ? " and " : ", ", tgt_targets[i]->name);
		}
	return buf;
}

void pass_opts_help(void)
{
	char part[256], dis[256];
	targets_with("partition", part, sizeof part);
	targets_with("disaggregate", dis, sizeof dis);
	printf("  --passes=a,b,c        run these passes (see --list-passes)\n"
	       "  -O0 | -O1             no passes (for debugging) | the target's pipeline, the default\n"
	       "                        with --target (except reference, the unfused numerical\n"
	       "                        reference): %s; %s add\n"
	       "                        partition (a model too big for one device is spread over\n"
	       "                        the machine, --tp/--pp chosen by the cost model), %s\n"
	       "                        adds disaggregate; aicc targets lists each\n"
	       "  --list-passes         list the passes and exit\n"
	       "  --verify-each         verify the IR and re-infer shapes after every pass\n"
	       "  --remarks=LIST|all    say what each pass did and did not do, and why; LIST of canon,\n"
	       "                        fusion, quant, schedule, memory, placement, phase\n"
	       "  --stats               print the passes' statistics counters\n"
	       "  --time-passes         print the time spent in each pass\n"
	       "  --opt-bisect-limit=N  apply only the first N rewrites (bisection)\n"
	       "  --fold-limit=N        fold constants of at most N elements (default 65536)\n"
	       "  --mem-capacity=SIZE   check activations + weights against SIZE (80GiB, 1.5e9)\n"
	       "  --tp N, --pp N, --ep N  partition: tensor-parallel group size, pipeline stages,\n"
	       "                        expert-parallel group size\n"
	       "  --devices N           partition: only the machine's first N accelerators\n"
	       "  --exclude-devices gpu3,gpu17  partition: leave these devices out and plan on the\n"
	       "                        survivors (--tp/--pp chosen for their count; docs/resilience.md)\n"
	       "  --dp N, --cp N        phase train: data-parallel replicas, context-parallel group size;\n"
	       "                        with them (and --tp/--pp) the step is a parallel one: priced per replica\n"
	       "                        (--emit summary), not lowered (docs/passes.md)\n"
	       "  --zero Z              phase train, parallel: ZeRO stage 0-3 (default 1)\n"
	       "  --pack L1,L2,...      phase train: each batch row packs sequences of these lengths back to\n"
	       "                        back (--context defaults to their sum); attention is block-diagonal\n"
	       "                        over them (varlen, seq_offsets), and run reports the padding it saves\n"
	       "  --pp-virtual V        phase train, parallel: model chunks per pipeline rank (interleaved 1F1B)\n"
	       "  --recompute none|selective|full|selective-ffn|layers|dots  phase train, parallel: activation\n"
	       "                        recomputation of the layers (selective keeps the matrix products'\n"
	       "                        results; selective-ffn recomputes the FFN's input projections too;\n"
	       "                        layers: the fewest layers recomputed in full that fit memory; dots:\n"
	       "                        the weight products' results kept, attention and the rest recomputed)\n"
	       "  --no-sequence-parallel  phase train, parallel: tensor parallelism without sequence\n"
	       "                        parallelism (Megatron-LM before 2022): norms, dropouts and residual\n"
	       "                        adds run whole on every TP rank\n"
	       "  --unfused-attention   phase train, parallel: attention without FlashAttention: two\n"
	       "                        batched GEMMs and the softmax and dropout of the scores through HBM\n"
	       "  --grad-after-backward  phase train, parallel, --zero 0 or 1: the gradients' all-reduce\n"
	       "                        (reduce-scatter) starts after the last backward pass, exposed\n"
	       "                        (Megatron-LM's local DDP of 2021)\n"
	       "  --pp-blocking-sends   phase train, parallel: every pipeline send and receive waits on\n"
	       "                        its transfer and the TP group's gather of it (Megatron-LM 2021)\n"
	       "  --hidden-dropout      phase train, parallel: a dropout on each residual branch (a mask\n"
	       "                        byte per element forward, the gradient masked backward; Megatron)\n"
	       "  --train-search        phase train, parallel: the fastest tp, cp, pp, dp, --pp-virtual,\n"
	       "                        ZeRO (1, 3) and recomputation that fit memory, for the devices\n"
	       "                        (dp x tp x pp x cp) and sequences per step (dp x --grad-accum) given\n"
	       "  --compress-collectives[=CODEC]  partition: send every AllReduce's payload coded\n"
	       "                        (intB[:bN][:kK], default " PASS_DEFAULT_CODEC "; docs/resilience.md)\n"
	       "  --micro-batches N     disaggregate: decode micro-batches (default: the cost model's)\n"
	       "  --pools hybrid|gpu|lpu  disaggregate: both pools, or the model on one alone (default: both\n"
	       "                        when the cost model predicts a shorter step than the GPUs alone)\n"
	       "  --error-budget=E      auto: relative error allowed per node (default 1e-2)\n",
	       PASS_DEFAULT_PIPELINE, part, dis);
}

/* "80GiB", "512MiB", "1.5e9", "4096": bytes; -1 when malformed. */
int64_t drv_parse_size(const char *s)
{
	static const struct { const char *sfx; double mul; } u[] = {
		{ "", 1 }, { "B", 1 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
		{ "TiB", 1099511627776.0 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
	};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	for (size_t i = 0; !errno && end != s && v > 0 && i < sizeof u / sizeof u[0]; i++)
		if (strcmp(end, u[i].sfx) == 0 && v * u[i].mul < 9.2e18)
			return (int64_t)(v * u[i].mul);
	return -1;
}

static int parse_long(const char *opt, const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0) {
		drv_error("%s expects a non-negative integer, got '%s'", opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* Flags without a value. */
static int parse_flag(const char *a, PassOpts *po)
{
	PassCtx *c = &po->ctx;
	if (!strcmp(a, "-O0") || !strcmp(a, "-O1"))
		po->level = a[2] - '0';
	else if (!strcmp(a, "--verify-each"))
		c->verify_each = 1;
	else if (!strcmp(a, "--time-passes"))
		c->time_passes = 1;
	else if (!strcmp(a, "--stats"))
		c->stats = 1;
	else if (!strcmp(a, "--train-search"))
		c->train_search = 1;
	else if (!strcmp(a, "--print-after-all"))
		c->print_after_all = 1;
	else if (!strcmp(a, "--list-passes")) {
		pass_list(stdout);
		exit(EXIT_OK);
	} else
		return 0;
	return 1;
}

int pass_opts_parse(int argc, char **argv, int *i, PassOpts *po)
{
	PassCtx *c = &po->ctx;
	const char *v;
	long n;
	int r;
	if (parse_flag(argv[*i], po))
		return 1;
	if ((r = opt_value(argc, argv, i, "--passes", &po->pipeline)))
		return r < 0 || pass_check_list(po->pipeline) < 0 ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--remarks", &v)))
		return r < 0 || pass_parse_remarks(v, &c->remark_mask) < 0 ? -1 : 1;
	if ((r = opt_value(argc, argv, i, "--opt-bisect-limit", &v))) {
		if (r < 0 || parse_long("--opt-bisect-limit", v, &n) < 0)
			return -1;
		c->bisect_limit = n;
		return 1;
	}
	/* partition: --tp N, --pp N, --ep N, --devices N (the --exclude-devices names are checked by
	 * the pass, which knows the machine) */
	static const struct { const char *opt; long hi; size_t at; } counts[] = {
		{ "--tp", 4096, offsetof(PassCtx, tp) }, { "--pp", 4096, offsetof(PassCtx, pp) },
		{ "--ep", 4096, offsetof(PassCtx, ep) }, { "--devices", 1000000, offsetof(PassCtx, devices) },
	};
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
		if ((r = opt_value(argc, argv, i, counts[k].opt, &v))) {
			if (r < 0 || parse_long(counts[k].opt, v, &n) < 0)
				return -1;
			if (n < 1 || n > counts[k].hi) {
				drv_error("%s expects a device count from 1 to %ld, got '%s'", counts[k].opt, counts[k].hi, v);
				return -1;
			}
			*(int *)((char *)c + counts[k].at) = (int)n;
			return 1;
		}
	if ((r = opt_value(argc, argv, i, "--exclude-devices", &v))) {
		if (r < 0)
			return -1;
		if (!*v) {
			drv_error("--exclude-devices expects device names such as gpu3,gpu17");
			return -1;
		}
		c->exclude = v;
		return 1;
	}
	/* phase train, a parallel step: --dp N, --cp N, --zero 0..3, --pp-virtual V */
	static const struct { const char *opt; long lo, hi; size_t off; } par[] = {
		{ "--dp", 1, 1 << 20, offsetof(PassCtx, dp) }, { "--cp", 1, 4096, offsetof(PassCtx, cp) },
		{ "--zero", 0, 3, offsetof(PassCtx, zero) }, { "--pp-virtual", 1, 64, offsetof(PassCtx, vstages) },
	};
	for (size_t k = 0; k < sizeof par / sizeof par[0]; k++)
		if ((r = opt_value(argc, argv, i, par[k].opt, &v))) {
			if (r < 0 || parse_long(par[k].opt, v, &n) < 0)
				return -1;
			if (n < par[k].lo || n > par[k].hi) {
				drv_error("%s expects %ld to %ld, got '%s'", par[k].opt, par[k].lo, par[k].hi, v);
				return -1;
			}
			*(int *)((char *)c + par[k].off) = (int)n + (par[k].lo == 0);   /* --zero: stored + 1 */
			return 1;
		}
	static const struct { const char *opt; size_t off; } flag[] = {
		{ "--no-sequence-parallel", offsetof(PassCtx, no_seq_parallel) },
		{ "--unfused-attention", offsetof(PassCtx, unfused_attention) },
		{ "--grad-after-backward", offsetof(PassCtx, grad_after_backward) },
		{ "--pp-blocking-sends", offsetof(PassCtx, pp_blocking_sends) },
		{ "--hidden-dropout", offsetof(PassCtx, hidden_dropout) },
	};
	for (size_t k = 0; k < sizeof flag / sizeof flag[0]; k++)
		if (!strcmp(argv[*i], flag[k].opt)) {
			*(int *)((char *)c + flag[k].off) = 1;
			return 1;
		}
	if ((r = opt_value(argc, argv, i, "--pack", &v))) {   /* phase train: packed sequences */
		if (r < 0)
			return -1;
		int cnt = 1;
		for (const char *s = v; *s; s++)
			cnt += *s == ',';
		int64_t *off = calloc((size_t)cnt + 1, sizeof *off);
		if (!off)
			abort();
		const char *s = v;
		for (int k = 0; k < cnt; k++) {
			char *end;
			errno = 0;
			long long l = strtoll(s, &end, 10);
			if (end == s || (*end && *end != ',') || errno || l < 1 || l > (1LL << 40) || off[k] > (1LL << 50)) {
				drv_error("--pack expects sequence lengths >= 1 separated by commas, got '%s'", v);
				free(off);
				return -1;
			}
			off[k + 1] = off[k] + l;
			s = end + 1;
		}
		free(c->seq_offsets);
		c->seq_offsets = off;
		c->nseq_offsets = cnt + 1;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--recompute", &v))) {   /* phase train, a parallel step */
		if (r < 0)
			return -1;
		int k = 0;
		while (train_recompute_names[k] && strcmp(v, train_recompute_names[k]))
			k++;
		if (!train_recompute_names[k]) {
			drv_error("--recompute expects none, selective, full, selective-ffn, layers or dots, got '%s'", v);
			return -1;
		}
		c->recompute = k;
		return 1;
	}
	/* partition: --compress-collectives[=CODEC] */
	if (!strcmp(argv[*i], "--compress-collectives") || !strncmp(argv[*i], "--compress-collectives=", 23)) {
		RtCodec codec;
		char why[160];
		c->compress = argv[*i][22] == '=' ? argv[*i] + 23 : PASS_DEFAULT_CODEC;
		if (rt_codec_parse(c->compress, &codec, why, sizeof why) < 0) {
			drv_error("--compress-collectives: %s", why);
			return -1;
		}
		return 1;
	}
	/* disaggregate: --pools hybrid|gpu|lpu */
	if ((r = opt_value(argc, argv, i, "--pools", &v))) {
		if (r < 0)
			return -1;
		if (strcmp(v, "hybrid") && strcmp(v, "gpu") && strcmp(v, "lpu")) {
			drv_error("--pools expects hybrid, gpu or lpu, got '%s'", v);
			return -1;
		}
		c->pools = v;
		return 1;
	}
	/* disaggregate: --micro-batches N */
	if ((r = opt_value(argc, argv, i, "--micro-batches", &v))) {
		if (r < 0 || parse_long("--micro-batches", v, &n) < 0)
			return -1;
		if (n < 1 || n > 8) {
			drv_error("--micro-batches expects 1 to 8, got %ld", n);
			return -1;
		}
		c->microbatches = (int)n;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--fold-limit", &v))) {
		if (r < 0 || parse_long("--fold-limit", v, &n) < 0)
			return -1;
		c->fold_limit = n;
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--error-budget", &v))) {
		char *end;
		if (r < 0)
			return -1;
		c->error_budget = strtod(v, &end);
		if (end == v || *end || !(c->error_budget > 0)) {
			drv_error("--error-budget expects a positive relative error such as 1e-2, got '%s'", v);
			return -1;
		}
		return 1;
	}
	if ((r = opt_value(argc, argv, i, "--mem-capacity", &v))) {
		if (r < 0)
			return -1;
		if ((c->capacity.bytes = drv_parse_size(v)) < 0) {
			drv_error("--mem-capacity expects a size such as 80GiB or 1.5e9, got '%s'", v);
			return -1;
		}
		return 1;
	}
	return 0;
}

/* Whether the comma-separated pipeline list names pass `name`. */
static int has_pass(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *q = list; q && *q; q = strchr(q, ',') ? strchr(q, ',') + 1 : NULL)
		if (strncmp(q, name, n) == 0 && (q[n] == ',' || q[n] == '\0'))
			return 1;
	return 0;
}

int pass_opts_level(const PassOpts *po)
{
	if (po->level >= 0)
		return po->level;
	const Target *t = po->ctx.target;
	if (po->ctx.tp || po->ctx.pp || po->ctx.ep || po->ctx.compress || po->ctx.devices || po->ctx.exclude)
		return 1;
	return t && strcmp(t->name, "reference") != 0 ? 1 : 0;
}

const char *pass_opts_pipeline(PassOpts *po, char *buf, size_t n)
{
	if (pass_train_parallel(&po->ctx)) {   /* a parallel training step is priced by autodiff */
		if (po->pipeline) {
			drv_error("--passes does not go with a parallel training step (--phase train with --dp/--cp/--zero/--pp-virtual): "
				  "the step is autodiff's and is priced, not lowered");
			return "";
		}
		snprintf(buf, n, "autodiff");
		return buf;
	}
	int level = pass_opts_level(po);
	const char *list = po->pipeline ? po->pipeline : level >= 1 ? (po->o1 ? po->o1 : PASS_DEFAULT_PIPELINE) : NULL;
	int devices = po->ctx.tp || po->ctx.pp || po->ctx.ep || po->ctx.devices || po->ctx.exclude;
	char *b = buf;
	size_t k = 0;
	if (po->ctx.phase)      /* phases: --phase runs kv-cache first (train: autodiff) */
		k += (size_t)snprintf(b + k, n - k, "%s%s", strcmp(po->ctx.phase, "train") ? "kv-cache" : "autodiff",
				      list ? "," : "");
	if ((devices || po->ctx.compress) && !has_pass(list, "partition")) {
		if (po->pipeline || !list) {
			drv_error("%s of the partition pass, which does not run: "
				  "add it, e.g. --passes=canonicalize,place-precision,fuse,partition,plan-memory, "
				  "or use -O1 (the default with --target), which adds it",
				  po->ctx.tp || po->ctx.pp || po->ctx.ep ? "--tp, --pp and --ep are options"
				  : devices ? "--devices and --exclude-devices are options"
					    : "--compress-collectives is an option");
			return "";
		}
		/* -O1 --tp N: the target's pipeline with partition before plan-memory */
		const char *mem = strstr(list, "plan-memory");
		if (mem)
			k += (size_t)snprintf(b + k, n - k, "%.*spartition,%s", (int)(mem - list), list, mem);
		else
			k += (size_t)snprintf(b + k, n - k, "%s,partition", list);
	} else if (list)
		k += (size_t)snprintf(b + k, n - k, "%s", list);
	po->ctx.partition_auto = !po->pipeline && !po->ctx.tp && !po->ctx.pp && !po->ctx.ep;
	return k ? buf : NULL;
}

int pass_opts_run(PassOpts *po, Module *m)
{
	char buf[1024];
	const char *list = pass_opts_pipeline(po, buf, sizeof buf);
	if (list && !*list)
		return 1;
	int e = list ? pass_run_pipeline(m, &po->ctx, list) : 0;
	if (po->ctx.stats)
		pass_print_stats(&po->ctx, stderr);
	if (po->ctx.time_passes)
		pass_print_times(&po->ctx, stderr);
	return e;
}
