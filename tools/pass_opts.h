/* tools/pass_opts.h: the pass manager's command-line options, shared by the subcommands that
 * run passes (compile; later onnx-test and run --check). */
#ifndef AICC_PASS_OPTS_H
#define AICC_PASS_OPTS_H

#include "passes/pass.h"

typedef struct PassOpts {
	const char *pipeline;   /* --passes=, or NULL: -O level decides */
	int level;              /* -O0: no passes; -O1: PASS_DEFAULT_PIPELINE */
	/* the machine the placement passes read (set by the subcommand before pass_opts_run; it
	 * is loaded for the run only): --machine, else the target's default, with --set overrides */
	const char *machine;
	const char *const *sets;
	int nsets;
	PassCtx ctx;
} PassOpts;

void pass_opts_init(PassOpts *po);
/* If argv[*i] is a pass option, consumes it (and its value) and returns 1; -1 on a bad value
 * (message printed); 0 when it is not one.  --list-passes prints the passes and exits. */
int pass_opts_parse(int argc, char **argv, int *i, PassOpts *po);
/* Runs the selected pipeline over m and prints --stats / --time-passes; 0 or an error count. */
int pass_opts_run(PassOpts *po, Module *m);
void pass_opts_help(void);

#endif
