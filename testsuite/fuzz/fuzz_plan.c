/* testsuite/fuzz/fuzz_plan.c: libFuzzer harness for the plan reader and verifier.  Any input
 * must yield a plan or an error message, never a crash, an out-of-bounds access or a leak; a
 * plan that parses must write back to text that parses to the same text (canonical form).
 * Build: clang -fsanitize=fuzzer,address,undefined -I. testsuite/fuzz/fuzz_plan.c runtime/plan*.c
 * runtime/rt.c -lm  (docs/plan-format.md §Testing). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan.h"

static char *text_of(const Plan *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		abort();
	plan_write(p, f);
	fclose(f);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	RtError e = { 0 };
	Plan *p = plan_parse("fuzz.aip", (const char *)data, size, &e);
	if (!p) {
		if (strncmp(e.msg, "fuzz.aip:", 9) != 0)
			abort();
		return 0;
	}
	size_t n1, n2;
	char *t1 = text_of(p, &n1);
	Plan *q = plan_parse("fuzz.aip", t1, n1, &e);
	if (!q)
		abort();
	char *t2 = text_of(q, &n2);
	if (n1 != n2 || memcmp(t1, t2, n1) != 0)
		abort();
	free(t1);
	free(t2);
	plan_free(p);
	plan_free(q);
	return 0;
}
