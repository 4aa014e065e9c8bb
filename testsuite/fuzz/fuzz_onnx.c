/* testsuite/fuzz/fuzz_onnx.c: libFuzzer harness for the ONNX importer, shape inference and
 * lowering, and the TensorProto decoder.  Each input is imported as a ModelProto
 * (fe_import_onnx_buf; diagnostics go to /dev/null); a model that imports is verified, its
 * shapes inferred, and when that succeeds it is lowered with the reference target and the plan
 * verified (what `aicc compile MODEL --emit plan` does).  The input is also decoded as a
 * TensorProto (external data forbidden).  Any crash, leak or undefined behaviour is a bug:
 * malformed models must get an error.  Build and run: `make fuzz` (tools/fuzz.sh, which sets
 * AICC_MACHINES for the reference machine).
 */
#include <stdint.h>
#include <stdio.h>

#include "frontend/frontend.h"
#include "frontend/onnx/onnx_int.h"
#include "ir/diag.h"
#include "targets/precision.h"
#include "targets/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null)
		null = fopen("/dev/null", "w");
	diag_reset();
	diag_set_output(null);
	Module *m = fe_import_onnx_buf("/nonexistent/fuzz.onnx", data, size);
	static TgtMachine mach;
	static Precision prec;
	static int have_mach = -1;
	const Target *ref = tgt_find("reference");
	if (have_mach < 0) {
		RtError me = { 0 };
		have_mach = ref && tgt_machine_load("reference", NULL, 0, &mach, &me) == 0 &&
			    prec_parse(NULL, ref, mach.m, &prec, &me) == 0;
	}
	if (m && have_mach && ref && ir_verify(m) == 0 && ir_infer_shapes(m) == 0 && ir_entry(m)) {
		RtError le = { 0 };
		TgtInput in = { m, ir_entry(m), &mach, &prec, NULL, NULL };
		Plan *p = tgt_lower(ref, &in, &le);
		if (p)
			plan_verify(p, &le);
		plan_free(p);
	}
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
