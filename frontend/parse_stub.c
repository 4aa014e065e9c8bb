/* frontend/parse_stub.c: PLACEHOLDER until the .aig parser lands. */
#include "frontend/frontend.h"
Module *fe_parse_aig(const char *path) { (void)path; return 0; }
Module *fe_parse_aig_text(const char *name, const char *text, size_t len) { (void)name; (void)text; (void)len; return 0; }
