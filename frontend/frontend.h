/* frontend/frontend.h: model readers.  Each returns a new Module, or NULL after reporting every
 * problem through diag_error (file:line:col: error: ...). */
#ifndef AICC_FRONTEND_H
#define AICC_FRONTEND_H

#include <stddef.h>
#include "ir/ir.h"

/* Parses the .aig file at path.  Reads the whole file; relative npy/safetensors paths in it are
 * resolved against the file's directory. */
Module *fe_parse_aig(const char *path);
/* Parses .aig text held in memory; `name` is used in diagnostics.  text need not be
 * NUL-terminated and may contain NUL bytes (reported as errors). */
Module *fe_parse_aig_text(const char *name, const char *text, size_t len);

#endif
