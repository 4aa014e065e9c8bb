/* tools/aicc.c: the aicc driver's entry point: dispatches to the subcommands of
 * tools/commands.def.  `aicc MODEL ...` alone means `aicc compile MODEL ...`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/suggest.h"
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
		   "no progress line on stderr (there is none either when stderr is not a terminal).\n"
		   "Every command takes --threads N: OpenBLAS threads (default 1, or OPENBLAS_NUM_THREADS\n"
		   "when set); only the reference interpreter's GEMMs use them.\n");
}

/* OpenBLAS reads its thread count and chooses its kernels when the library loads, before main:
 * its pool's idle threads then spin for about 2^28 cycles (OpenBLAS driver/others/blas_server.c,
 * THREAD_TIMEOUT) on every run, even a compile that never calls BLAS.  So OPENBLAS_NUM_THREADS is
 * set to `threads` (--threads N; 0: the user's OPENBLAS_NUM_THREADS if set, else 1) and, if it
 * chose a core too weak for this CPU (runtime/blas.h), OPENBLAS_CORETYPE to the right one; when
 * either changes, this program runs again with them. */
static void fix_blas(char **argv, long threads)
{
	int again = 0;
	const char *cur = getenv("OPENBLAS_NUM_THREADS");
	char want[24];
	snprintf(want, sizeof want, "%ld", threads > 0 ? threads : 1);
	if (threads > 0 ? !cur || strcmp(cur, want) != 0 : !cur || !*cur) {
		setenv("OPENBLAS_NUM_THREADS", want, 1);
		again = 1;
	}
	const char *core = rt_blas_fix_coretype();
	if (core) {
		setenv("OPENBLAS_CORETYPE", core, 1);
		again = 1;
	}
	if (again)
		execv("/proc/self/exe", argv);
	/* exec failed: carry on with the default threads or slow kernels, results are the same */
}

int main(int argc, char **argv)
{
	drv_install_signals();
	int n = 1;   /* --quiet, anywhere: no progress line (tools/progress.h); --threads N: BLAS threads */
	long threads = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quiet") == 0) {
			progress_set_quiet(1);
			argv[n++] = argv[i];
		} else if (strcmp(argv[i], "--threads") == 0 || strncmp(argv[i], "--threads=", 10) == 0) {
			const char *v = argv[i][9] == '=' ? argv[i] + 10 : i + 1 < argc ? argv[++i] : "";
			char *end;
			errno = 0;
			threads = strtol(v, &end, 10);
			if (!*v || *end || errno || threads < 1 || threads > 1024) {
				drv_error("--threads expects a count in 1..1024, got '%s'", v);
				return EXIT_USER;
			}
		} else {
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	fix_blas(argv, threads);
	/* --quiet was kept for a re-executed run; drop it now */
	n = 1;
	for (int i = 1; argv[i]; i++)
		if (strcmp(argv[i], "--quiet") != 0)
			argv[n++] = argv[i];
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
	/* an internal error (drv_internal) exits 2 from every command, whatever it returned */
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0) {
			int rc = commands[i].fn(argc - 1, argv + 1);
			return rc == EXIT_USER && drv_internal ? EXIT_INTERNAL : rc;
		}
	if (argv[1][0] == '-') {
		drv_error("unknown option '%s' (see aicc --help)", argv[1]);
		return EXIT_USER;
	}
	/* a word that is no file and has no extension is a mistyped command, not a model */
	if (!strchr(argv[1], '.') && !strchr(argv[1], '/') && access(argv[1], F_OK) != 0) {
		const char *names[sizeof commands / sizeof commands[0]];
		char sug[512];
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			names[i] = commands[i].name;
		diag_suggest(sug, sizeof sug, argv[1], names, (int)(sizeof commands / sizeof commands[0]));
		drv_error("'%s' is neither a command nor a model file%s", argv[1], sug);
		return EXIT_USER;
	}
	int rc = cmd_compile(argc, argv);  /* argv[0] stands in for "compile" */
	return rc == EXIT_USER && drv_internal ? EXIT_INTERNAL : rc;
}
