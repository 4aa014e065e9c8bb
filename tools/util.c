/* tools/util.c: option parsing helpers, atomic output files (runtime/outfile.h) with their
 * cleanup on SIGINT/SIGTERM, for the driver. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/driver.h"

int drv_internal;

void drv_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("aicc: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void drv_report(const char *msg)
{
	if (msg && strstr(msg, "internal error"))
		drv_internal = 1;
	if (msg && strstr(msg, "error: "))     /* already "file:line: error: ..." */
		fprintf(stderr, "%s\n", msg);
	else
		drv_error("%s", msg && *msg ? msg : "unknown error");
}

int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		drv_error("option '%s' needs a value", name);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

/* SIGINT/SIGTERM: remove every temporary (and the files of a group being committed), then die of
 * the signal as if unhandled, so the shell sees the usual status. */
static void on_signal(int sig)
{
	rt_out_remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

void drv_install_signals(void)
{
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
}

int out_open(OutFile *o, const char *path)
{
	RtError e = { 0 };
	if (rt_out_open(o, path, &e) < 0) {
		drv_error("%s", e.msg);
		return -1;
	}
	return 0;
}

int out_commit(OutFile *o)
{
	return out_commit_group(o, 1);
}

int out_commit_group(OutFile *o, int n)
{
	RtError e = { 0 };
	if (rt_out_commit_group(o, n, &e) < 0) {
		drv_error("%s", e.msg);
		return -1;
	}
	return 0;
}

void out_abort(OutFile *o)
{
	rt_out_abort(o);
}
