/* tools/progress.h: one progress line on stderr for the driver's long operations (compiling a
 * full-size model, running a big plan, onnx-test over many folders, laying out a picture).
 *
 * Nothing is printed for an operation that ends within PROGRESS_DELAY_S (2 s); after that one
 * line, "aicc: WHAT: DONE/TOTAL (P%), T s", is rewritten in place (carriage return, at most
 * every 0.2 s) and erased when the operation ends, so the output that follows is unchanged.
 * The line is off when stderr is not a terminal and with `--quiet` (progress_set_quiet, read
 * by tools/aicc.c before any command), so logs, pipes and tests never see it.
 *
 * Calls are cheap (one clock read) and may come from hot loops; a callback form
 * (progress_callback) suits libraries such as the runtime that must not print.  There is one
 * line per process: a progress_begin while another is open replaces it. */
#ifndef AICC_PROGRESS_H
#define AICC_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#define PROGRESS_DELAY_S 2.0

/* 1: never print (--quiet). */
void progress_set_quiet(int quiet);
/* Starts an operation named what (copied, e.g. "laying out 2,660 nodes"); total 0 when the
 * amount of work is unknown (the line then shows the elapsed time only). */
void progress_begin(const char *what, int64_t total);
/* done units of the current operation's total are finished; prints when due. */
void progress_update(int64_t done);
/* Erases the line if one is shown, before the caller prints something; the next update draws it
 * again (when due). */
void progress_pause(void);
/* Ends the current operation, erasing its line if one was printed. */
void progress_end(void);
/* For callbacks (RtRunOpts.progress, VizLayout.tick): done of total units of what; a what other
 * than the current operation's (compared by content) begins a new one.  ctx is unused. */
void progress_step(void *ctx, const char *what, int64_t done, int64_t total);

/* Testing: print to f whether or not it is a terminal, with now() as the clock (seconds);
 * f NULL restores stderr and the monotonic clock. */
void progress_force(FILE *f, double (*now)(void));

#endif
