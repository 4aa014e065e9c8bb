/* tools/progress.c: the progress line (tools/progress.h).  State is one static record: the
 * driver runs one long operation at a time, on one thread. */
#include "tools/progress.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

enum { REDRAW_MS = 200 };

static struct {
	int quiet, shown, active;
	FILE *forced;                /* progress_force: print here, even if not a terminal */
	double (*now)(void);
	char what[160];
	int64_t total, done;
	double start, last;
} st;

static double mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void) { return st.now ? st.now() : mono_now(); }

static FILE *out(void)
{
	if (st.quiet)
		return NULL;
	if (st.forced)
		return st.forced;
	return isatty(STDERR_FILENO) ? stderr : NULL;
}

void progress_set_quiet(int quiet) { st.quiet = quiet; }

void progress_force(FILE *f, double (*clock)(void))
{
	st.forced = f;
	st.now = f ? clock : NULL;
}

void progress_begin(const char *what, int64_t total)
{
	if (st.active)
		progress_end();
	snprintf(st.what, sizeof st.what, "%s", what);
	st.total = total > 0 ? total : 0;
	st.done = 0;
	st.active = 1;
	st.shown = 0;
	st.start = st.last = now();
}

static void draw(FILE *f, double t)
{
	if (st.total > 0)
		fprintf(f, "\raicc: %s: %lld/%lld (%.0f%%), %.0f s\033[K", st.what, (long long)st.done,
			(long long)st.total, 100.0 * (double)st.done / (double)st.total, t - st.start);
	else
		fprintf(f, "\raicc: %s, %.0f s\033[K", st.what, t - st.start);
	fflush(f);
	st.shown = 1;
	st.last = t;
}

void progress_update(int64_t done)
{
	if (!st.active)
		return;
	st.done = done;
	double t = now();
	if (t - st.start < PROGRESS_DELAY_S || (st.shown && (t - st.last) * 1000 < REDRAW_MS))
		return;
	FILE *f = out();
	if (f)
		draw(f, t);
}

void progress_callback(void *ctx, int64_t done, int64_t total)
{
	(void)ctx;
	if (st.active && total > 0)
		st.total = total;
	progress_update(done);
}

void progress_end(void)
{
	FILE *f = out();
	if (st.shown && f) {
		fputs("\r\033[K", f);
		fflush(f);
	}
	st.active = st.shown = 0;
}
