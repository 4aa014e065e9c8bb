/* tools/driver.h: the aicc command-line driver's shared pieces.  Each subcommand lives in
 * tools/cmd_<name>.c and is listed once in tools/commands.def. */
#ifndef AICC_DRIVER_H
#define AICC_DRIVER_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/outfile.h"

/* Exit statuses (design.md §7). */
enum { EXIT_OK = 0, EXIT_USER = 1, EXIT_INTERNAL = 2 };
/* Set when a failure was an internal error (a bug: RT_EINTERNAL, "aicc: internal error: ..."), so
 * the command exits EXIT_INTERNAL instead of EXIT_USER. */
extern int drv_internal;

#define CMD(name, fn, help) int fn(int argc, char **argv);
#include "tools/commands.def"
#undef CMD

/* Output files are written to a temporary beside the target and renamed on success, so a failed
 * run never leaves a partial file (runtime/outfile.h); out_open("-") is stdout.  A plan and its
 * weights file are committed together, the plan last (out_commit_group): a failure leaves
 * neither.  Errors are printed ("aicc: error: cannot write ..."). */
typedef RtOutFile OutFile;
int out_open(OutFile *o, const char *path);    /* 0, or -1 with a message on stderr */
int out_commit(OutFile *o);                     /* flush, close, rename; 0 or -1 */
int out_commit_group(OutFile *o, int n);        /* the n files in order, all or none; 0 or -1 */
void out_abort(OutFile *o);                     /* close and remove the temporary */
/* Bytes of host memory a run may still take: /proc/meminfo's MemAvailable, lowered by the memory
 * cgroup's limit less its usage (v2 with its ancestors, or v1) and by the address-space limit
 * (ulimit -v) less what is mapped; 0 when nothing is known (unchecked). */
int64_t drv_host_available(void);
/* "80GiB", "512MiB", "1.5e9", "4096" (KiB MiB GiB TiB, KB MB GB TB, B): bytes; -1 when malformed
 * (tools/pass_opts.c). */
int64_t drv_parse_size(const char *s);
/* SIGINT, SIGTERM and SIGHUP remove the temporaries of open outputs, then end the process. */
void drv_install_signals(void);

/* "--name=value" or "--name value": if argv[*i] is option `name`, sets *val, advances *i and
 * returns 1; returns -1 (with a message) when the value is missing; 0 when not this option. */
int opt_value(int argc, char **argv, int *i, const char *name, const char **val);
/* A command's non-option argument: `arg` starting with '-' (not "-" alone) is an unknown option
 * ("see aicc CMD --help"; -O2, -O3, ... name the two levels there are); otherwise it fills *slot, and a second one is an error naming both
 * ("more than one WHAT given").  Returns 0, or -1 after printing the error. */
int drv_operand(const char *arg, const char **slot, const char *what, const char *cmd);
/* Prints "aicc: error: ..." to stderr. */
void drv_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a library error message: as is when it already says "error: " (file:line: error: ...),
 * else as "aicc: error: MSG", so every failure has one of the two documented forms. */
void drv_report(const char *msg);
/* Fault injection for the exit-status test (testsuite/driver/internal-error.test), as clang's
 * `#pragma clang __debug crash`: when the environment variable AICC_DEBUG_INTERNAL_ERROR names
 * `where` ("lower": after a plan is built; "run": after a plan is read), fills e with an
 * RT_EINTERNAL error as a bug there would and returns -1; otherwise returns 0. */
int drv_debug_internal(const char *where, RtError *e);

/* The output kind -o's extension names: .aip plan, .aig ir, .json summary, .dot, .svg, .png;
 * NULL for any other name (stdout, /dev/null, out.txt). */
const char *drv_output_kind(const char *out);
/* "aicc: error: -o OUT names KIND output but --emit EMIT writes EMIT: ..." */
void drv_output_mismatch(const char *out, const char *kind, const char *emit);

#endif
