/* testsuite/fuzz/fuzz_exec.c: libFuzzer harness for the plan executor.  Each input is parsed and
 * verified as a plan (runtime/plan_read.c); a plan that passes and is small (at most 2^16
 * elements in every buffer together, 512 instructions) is loaded and run in the interpreter with
 * seeded inputs and its target's cost model (rt_run: bind, materialise, every kernel, copy and
 * collective, the timing simulation).  A hostile plan must give an error, never a crash, an
 * out-of-bounds access, undefined behaviour, a leak or a hang: run under ASan and UBSan with
 * halt_on_error=1 (`make fuzz`, tools/fuzz.sh).  Relative weight paths resolve in a directory
 * that does not exist.  The run's host memory is 256 MiB, so a kernel whose output size comes
 * from data (ConstantOfShape, Expand, Range, Tile, OneHot, Resize sizes, ...) meets the
 * allocation budget (runtime/rt.h) far below libFuzzer's malloc limit. */
#include <stdint.h>
#include <stdio.h>

#include "runtime/interp.h"
#include "targets/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int small(const Plan *p)
{
	int64_t elems = 0, ins = 0;
	for (int b = 0; b < p->nbuffers; b++) {
		int64_t n = plan_buffer_numel(&p->buffers[b]);
		if (n < 0 || (elems += n) > 1 << 16)
			return 0;
	}
	for (int s = 0; s < p->nstreams; s++)
		ins += p->streams[s].nins;
	return ins <= 512;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		tgt_register_costs();
		init = 1;
	}
	RtError e = { 0 };
	Plan *p = plan_parse("fuzz.aip", (const char *)data, size, &e);
	if (!p)
		return 0;
	if (small(p)) {
		RtRunOpts o = { .seed = 7, .base_dir = "/nonexistent-fuzz-dir", .host_limit = (int64_t)256 << 20 };
		RtRun r;
		if (rt_run(p, &o, &r, &e) == 0)
			rt_run_free(p, &r);
	}
	plan_free(p);
	return 0;
}
