/* testsuite/fuzz/fuzz_aig.c: libFuzzer harness for the .aig reader and everything that runs on
 * what it accepts: parse, verify, infer shapes, print, free.  Any crash, hang, leak or sanitizer
 * report is a bug; diagnostics are expected and discarded.
 *
 *   clang -fsanitize=fuzzer,address,undefined ... testsuite/fuzz/fuzz_aig.c (see `make fuzz`)
 */
#include <stdint.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "ir/diag.h"

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	diag_set_output(devnull);
	Module *m = fe_parse_aig_text("fuzz.aig", (const char *)data, size);
	if (m) {
		if (ir_verify(m) == 0 && ir_infer_shapes(m) == 0)
			ir_print_module(m, devnull);
		ir_module_free(m);
	}
	diag_reset();
	return 0;
}
