/* tools/aicc.c: the aicc driver's entry point: dispatches to the subcommands of
 * tools/commands.def.  `aicc MODEL ...` alone means `aicc compile MODEL ...`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/blas.h"
#include "tools/driver.h"
#include "tools/progress.h"

typedef struct Command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} Command;

static const Command commands[] = {
#define CMD(name, fn, help) { name, fn, help },
#include "tools/commands.def"
#undef CMD
};

static void usage(FILE *f)
{
	fprintf(f, "usage: aicc COMMAND [options]   (aicc MODEL ... means aicc compile MODEL ...)\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'aicc COMMAND --help' describes each command's options.  Every command takes --quiet:\n"
		   "no progress line on stderr (there is none either when stderr is not a terminal).\n");
}

/* OpenBLAS chooses its kernels when the library loads; if it chose a core too weak for this CPU
 * (runtime/blas.h), run this program again with OPENBLAS_CORETYPE naming the right one. */
static void fix_blas_coretype(char **argv)
{
	const char *core = rt_blas_fix_coretype();
	if (!core)
		return;
	setenv("OPENBLAS_CORETYPE", core, 1);
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with the slow kernels, results are the same */
}

int main(int argc, char **argv)
{
	fix_blas_coretype(argv);
	drv_install_signals();
	int n = 1;   /* --quiet, anywhere: no progress line (tools/progress.h) */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quiet") == 0)
			progress_set_quiet(1);
		else
			argv[n++] = argv[i];
	}
	argv[n] = NULL;
	argc = n;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USER;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("aicc %s\n", AICC_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	if (argv[1][0] == '-') {
		drv_error("unknown option '%s' (see aicc --help)", argv[1]);
		return EXIT_USER;
	}
	return cmd_compile(argc, argv);  /* argv[0] stands in for "compile" */
}
