/* ir/diag.h: user-facing diagnostics, clang style.
 *
 *   file:line:col: error: message
 *     the source line
 *         ^
 *
 * Sources are registered by file name so any layer can point into them.  Errors are counted;
 * after diag_max (20 by default) a final "too many errors" line is printed and diag_stop()
 * becomes true, so callers stop early.  Output goes to stderr unless redirected.
 */
#ifndef AICC_DIAG_H
#define AICC_DIAG_H

#include <stdio.h>
#include "ir/ir.h"

/* Remember the text of `file` (not copied: it must outlive the diagnostics). */
void diag_source(const char *file, const char *text, size_t len);
void diag_error(Loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints a message that later stages formatted as "FILE:LINE:COL: error: ..." (lowering errors
 * come back as text in an RtError) and, when FILE's text is registered, its source line and a
 * caret, as diag_error does; any other message is printed as it is. */
void diag_print_located(const char *msg);
void diag_warning(Loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_note(Loc loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int diag_count(void);          /* errors so far */
int diag_stop(void);           /* too many errors: stop */
void diag_reset(void);         /* forget counts and sources */
void diag_set_output(FILE *f);
void diag_set_max(int max);
#endif
