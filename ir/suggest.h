/* ir/suggest.h: did-you-mean for unknown names (targets, machines, passes, precision words),
 * shared by every layer; implemented in ir/diag.c.  Needs nothing from the IR, so any file
 * can include it. */
#ifndef AICC_SUGGEST_H
#define AICC_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance of a and b; 99 when either is longer than 38 characters. */
int diag_distance(const char *a, const char *b);
/* The name of names[0..n) nearest to s, or NULL when none is close: a name s begins (or that
 * begins s), else the fewest edits, at most 2 (one more with a shared stem of 3 characters) and
 * fewer than s has characters; the first of equals. */
const char *diag_nearest(const char *s, const char *const *names, int n);
/* " (did you mean 'x'?; valid: a, b, c)" (the did-you-mean part only when one is near) into buf
 * (len bytes, truncated with "..."), for an unknown name s. */
void diag_suggest(char *buf, size_t len, const char *s, const char *const *names, int n);

#endif
