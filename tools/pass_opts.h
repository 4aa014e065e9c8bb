/* tools/pass_opts.h: the pass manager's command-line options, shared by the subcommands that
 * run passes (compile; later onnx-test and run --check). */
#ifndef AICC_PASS_OPTS_H
#define AICC_PASS_OPTS_H

#include "passes/pass.h"

typedef struct PassOpts {
	const char *pipeline;   /* --passes=, or NULL: -O level decides */
	int level;              /* -O0: no passes; -O1: the target's pipeline (o1); -1: not given
				   (pass_opts_level) */
	const char *o1;         /* the target's -O1 pipeline (Target.pipeline); NULL: PASS_DEFAULT_PIPELINE */
	/* ctx.machine and ctx.precision: set by the subcommand, which loads the machine and parses
	 * --precision once per compile (tools/plan_build.h drv_open_machine) */
	PassCtx ctx;
} PassOpts;

void pass_opts_init(PassOpts *po);
/* If argv[*i] is a pass option, consumes it (and its value) and returns 1; -1 on a bad value
 * (message printed); 0 when it is not one.  --list-passes prints the passes and exits. */
int pass_opts_parse(int argc, char **argv, int *i, PassOpts *po);
/* The pipeline the options select (--passes, -O1, with --phase's kv-cache first; -O1 with
 * --tp/--pp/--ep adds partition) in buf, or NULL for none; prints an error and returns "" when
 * --tp/--pp/--ep go with a --passes list without partition.  Sets ctx.partition_auto (-O1
 * without --tp/--pp/--ep). */
const char *pass_opts_pipeline(PassOpts *po, char *buf, size_t n);
/* The -O level: the one given, else 1 with a --target other than reference (or with --tp, --pp,
 * --ep), else 0.  Reads ctx.target, which the subcommand sets first. */
int pass_opts_level(const PassOpts *po);
/* Runs the selected pipeline over m and prints --stats / --time-passes; 0 or an error count. */
int pass_opts_run(PassOpts *po, Module *m);
void pass_opts_help(void);

#endif
