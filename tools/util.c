/* tools/util.c: option parsing helpers, atomic output files (runtime/outfile.h) with their
 * cleanup on SIGINT/SIGTERM/SIGHUP/SIGPIPE, for the driver. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/driver.h"
#include "tools/progress.h"

int drv_internal;

void drv_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	progress_pause();   /* an error is never printed into the progress line */
	fputs("aicc: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int drv_debug_internal(const char *where, RtError *e)
{
	const char *v = getenv("AICC_DEBUG_INTERNAL_ERROR");
	if (!v || strcmp(v, where) != 0)
		return 0;
	return rt_errorf(e, RT_EINTERNAL, "aicc: internal error: injected at '%s' (AICC_DEBUG_INTERNAL_ERROR)", where);
}

int drv_operand(const char *arg, const char **slot, const char *what, const char *cmd)
{
	if (arg[0] == '-' && arg[1] == 'O' && arg[2]) {
		drv_error("unknown option '%s': the levels are -O0 (no passes, for debugging) and -O1 (the "
			  "target's pipeline, the default); --passes=... names passes", arg);
		return -1;
	}
	if (arg[0] == '-' && arg[1]) {
		drv_error("unknown option '%s' (see aicc %s --help)", arg, cmd);
		return -1;
	}
	if (*slot) {
		drv_error("more than one %s given ('%s' and '%s')", what, *slot, arg);
		return -1;
	}
	*slot = arg;
	return 0;
}

void drv_report(const char *msg)
{
	progress_pause();
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

/* SIGINT/SIGTERM/SIGHUP, and SIGPIPE (a plan written to a pipe or FIFO whose reader is gone,
 * after its weights file): remove every temporary (and the files of a group being committed),
 * then die of the signal as if unhandled, so the shell sees the usual status. */
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
	signal(SIGPIPE, on_signal);
	/* a write past the file-size limit (ulimit -f) fails with EFBIG, reported like a full disk,
	 * instead of killing the process with its temporaries still on disk */
	signal(SIGXFSZ, SIG_IGN);
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

/* A number from the first line of file path (cgroup files: bytes, or "max"); -1 if none. */
static int64_t read_num(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = -1;
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

int64_t drv_host_available(void)
{
	int64_t avail = -1;
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	while (f && fgets(line, sizeof line, f)) {
		long long kb;
		if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			avail = kb * 1024;
	}
	if (f)
		fclose(f);
	/* the memory cgroup (v2: this process's cgroup and its ancestors; v1: the memory controller) */
	char cg[1024] = "";
	if ((f = fopen("/proc/self/cgroup", "r"))) {
		while (fgets(line, sizeof line, f))
			if (strncmp(line, "0::", 3) == 0) {
				snprintf(cg, sizeof cg, "%s", line + 3);
				cg[strcspn(cg, "\n")] = 0;
			}
		fclose(f);
	}
	for (char *end = cg + strlen(cg);;) {
		char p[1200];
		snprintf(p, sizeof p, "/sys/fs/cgroup%.*s/memory.max", (int)(end - cg), cg);
		int64_t max = read_num(p);
		snprintf(p, sizeof p, "/sys/fs/cgroup%.*s/memory.current", (int)(end - cg), cg);
		int64_t cur = read_num(p);
		if (max > 0 && cur >= 0 && (avail < 0 || max - cur < avail))
			avail = max - cur;
		if (end == cg)
			break;
		while (end > cg && *--end != '/')
			;
	}
	int64_t v1 = read_num("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
		u1 = read_num("/sys/fs/cgroup/memory/memory.usage_in_bytes");
	if (v1 > 0 && v1 < ((int64_t)1 << 60) && u1 >= 0 && (avail < 0 || v1 - u1 < avail))
		avail = v1 - u1;
	/* the address-space limit (ulimit -v), less what is mapped already */
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		long long pages = 0;
		if ((f = fopen("/proc/self/statm", "r"))) {
			if (fscanf(f, "%lld", &pages) != 1)
				pages = 0;
			fclose(f);
		}
		int64_t left = (int64_t)rl.rlim_cur - pages * sysconf(_SC_PAGESIZE);
		if (avail < 0 || left < avail)
			avail = left;
	}
	return avail > 0 ? avail : avail < 0 ? 0 : 1;
}

const char *drv_output_kind(const char *out)
{
	static const char *const ext[][2] = { { ".aip", "plan" }, { ".aig", "ir" }, { ".json", "summary" },
					      { ".dot", "dot" }, { ".svg", "svg" }, { ".png", "png" } };
	size_t n = out ? strlen(out) : 0;
	for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
		size_t k = strlen(ext[i][0]);
		if (n > k && strcmp(out + n - k, ext[i][0]) == 0)
			return ext[i][1];
	}
	return NULL;
}

void drv_output_mismatch(const char *out, const char *kind, const char *emit)
{
	drv_error("-o %s names %s output but --emit %s writes %s: drop --emit, or give -o a name that ends as the "
		  "kind it holds (.aip plan, .aig ir, .json summary, .dot, .svg, .png)", out, kind, emit, emit);
}
