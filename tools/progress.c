/* tools/progress.c: the progress line (tools/progress.h).
 *
 * State is one record under a mutex: the driver runs one long operation at a time.  On a
 * terminal a helper thread, started by the first progress_begin, redraws the line every
 * REDRAW_MS once the operation is older than PROGRESS_DELAY_S, so that a single blocking call
 * (a pass, a lowering) shows its elapsed time too; the line is formatted into a local buffer and
 * written with write(2), so the thread never holds a stdio lock (a child forked for a picture's
 * layout may write to stderr).  With progress_force (tests) there is no thread: updates draw the
 * line themselves, against the given clock. */
#include "tools/progress.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { REDRAW_MS = 200 };

static struct {
	pthread_mutex_t mu;
	int quiet, shown, active, thread;
	FILE *forced;                /* progress_force: print here, even if not a terminal */
	double (*now)(void);
	char what[160];
	char drawn[256];             /* the line last written, not written again */
	int64_t total, done;
	double start, last;
} st = { .mu = PTHREAD_MUTEX_INITIALIZER };

static double mono_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void) { return st.now ? st.now() : mono_now(); }

/* Whether the line may be printed: not --quiet, and forced or stderr a terminal (asked once:
 * isatty is a system call, and the interpreter reports every step). */
static int enabled(void)
{
	static _Atomic int tty = -1;   /* the helper thread may ask too */
	if (st.quiet)
		return 0;
	if (tty < 0 && !st.forced)
		tty = isatty(STDERR_FILENO);
	return st.forced || tty > 0;
}

static void emit(const char *s, size_t n)
{
	if (st.forced) {
		fwrite(s, 1, n, st.forced);
		fflush(st.forced);
		return;
	}
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, s, n);
		if (w <= 0)
			return;
		s += w, n -= (size_t)w;
	}
}

/* Draws the line if due; st.mu held. */
static void draw_locked(double t)
{
	if (!st.active || t - st.start < PROGRESS_DELAY_S || (st.shown && (t - st.last) * 1000 < REDRAW_MS))
		return;
	char line[256];
	int n;
	if (st.total > 0)
		n = snprintf(line, sizeof line, "\raicc: %s: %lld/%lld (%.0f%%), %.0f s\033[K", st.what, (long long)st.done,
			     (long long)st.total, 100.0 * (double)st.done / (double)st.total, t - st.start);
	else
		n = snprintf(line, sizeof line, "\raicc: %s, %.0f s\033[K", st.what, t - st.start);
	if (st.shown && strcmp(line, st.drawn) == 0)
		return;
	emit(line, n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
	memcpy(st.drawn, line, sizeof line);
	st.shown = 1;
	st.last = t;
}

static void erase_locked(void)
{
	if (st.shown)
		emit("\r\033[K", 4);
	st.shown = 0;
}

static void *redraw(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec nap = { 0, REDRAW_MS / 2 * 1000 * 1000 };
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&st.mu);
		draw_locked(mono_now());
		pthread_mutex_unlock(&st.mu);
	}
	return NULL;
}

void progress_set_quiet(int quiet) { st.quiet = quiet; }

void progress_force(FILE *f, double (*clock)(void))
{
	pthread_mutex_lock(&st.mu);
	st.forced = f;
	st.now = f ? clock : NULL;
	pthread_mutex_unlock(&st.mu);
}

static void begin_locked(const char *what, int64_t total)
{
	erase_locked();
	snprintf(st.what, sizeof st.what, "%s", what);
	st.total = total > 0 ? total : 0;
	st.done = 0;
	st.active = 1;
	st.start = st.last = now();
	if (!st.thread && !st.forced && enabled()) {
		pthread_t th;
		if (pthread_create(&th, NULL, redraw, NULL) == 0) {
			pthread_detach(th);
			st.thread = 1;
		}
	}
}

void progress_begin(const char *what, int64_t total)
{
	if (!enabled())
		return;
	pthread_mutex_lock(&st.mu);
	begin_locked(what, total);
	pthread_mutex_unlock(&st.mu);
}

void progress_update(int64_t done)
{
	if (!st.active)
		return;
	pthread_mutex_lock(&st.mu);
	st.done = done;
	if (st.forced)
		draw_locked(now());
	pthread_mutex_unlock(&st.mu);
}

void progress_step(void *ctx, const char *what, int64_t done, int64_t total)
{
	(void)ctx;
	if (!enabled())
		return;
	pthread_mutex_lock(&st.mu);
	if (!st.active || strncmp(st.what, what, sizeof st.what - 1) != 0)
		begin_locked(what, total);
	st.total = total > 0 ? total : 0;
	st.done = done;
	if (st.forced)
		draw_locked(now());
	pthread_mutex_unlock(&st.mu);
}

void progress_pause(void)
{
	if (!st.shown)
		return;
	pthread_mutex_lock(&st.mu);
	erase_locked();
	st.last = now();   /* the next draw waits a redraw interval */
	pthread_mutex_unlock(&st.mu);
}

void progress_end(void)
{
	if (!st.active)
		return;
	pthread_mutex_lock(&st.mu);
	erase_locked();
	st.active = 0;
	pthread_mutex_unlock(&st.mu);
}
