/* testsuite/fuzz/fuzz_onnx.c: libFuzzer harness for the ONNX importer and the TensorProto
 * decoder.  Each input is imported as a ModelProto (fe_import_onnx_buf; diagnostics go to
 * /dev/null) and decoded as a TensorProto (external data forbidden).  Any crash, leak or
 * undefined behaviour is a bug: malformed models must get an error.  Build and run (see
 * docs/onnx.md):
 *   sh testsuite/fuzz/build-fuzz.sh && build-fuzz/fuzz_onnx -max_total_time=300 CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "frontend/onnx/onnx_int.h"
#include "ir/diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null)
		null = fopen("/dev/null", "w");
	diag_reset();
	diag_set_output(null);
	Module *m = fe_import_onnx_buf("/nonexistent/fuzz.onnx", data, size);
	ir_module_free(m);
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, size, data);
	if (tp) {
		RtTensor t;
		RtError e = { 0 };
		if (onnx_tensor_decode(tp, NULL, &t, &e) == 0)
			rt_tensor_free(&t);
		onnx__tensor_proto__free_unpacked(tp, NULL);
	}
	return 0;
}
