/* testsuite/fuzz/fuzz_machine.c: libFuzzer harness for the machine description loader and
 * `--set`.  An input is an XML machine description, optionally followed by a line "--set" and
 * then one KEY=VALUE override per line.  The description is validated and loaded
 * (machine_load_memory: RelaxNG, then the loader's own checks), each override applied
 * (machine_set), then every field and the derived quantities are read as the targets use them
 * (peaks per dtype, memory capacities, link bandwidths) and the machine is copied into a plan
 * (tgt_machine_copy).  Errors are expected; crashes, UB, leaks and hangs are bugs.  Needs
 * AICC_MACHINES to point at targets/machines (for machine.rng): tools/fuzz.sh sets it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "targets/machine.h"
#include "targets/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null)
		null = fopen("/dev/null", "w");
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	char *sets = strstr(buf, "\n--set\n");
	size_t xml = sets ? (size_t)(sets - buf) : size;
	Machine *m = machine_load_memory("fuzz.xml", buf, xml, null);
	if (m && sets) {
		char err[512];
		for (char *sv = NULL, *l = strtok_r(sets + 7, "\n", &sv); l; l = strtok_r(NULL, "\n", &sv)) {
			char *eq = strchr(l, '=');
			if (!eq)
				continue;
			*eq = 0;
			machine_set(m, l, eq + 1, err, sizeof err);
		}
	}
	if (m) {
		double v;
		for (int i = 0; i < machine_nfields(m); i++) {
			const Num *num;
			const char *path = machine_field_path(m, i, &num);
			machine_get(m, path, &v);
		}
		for (int d = 0; d < m->ndevs; d++) {
			const Device *dev = &m->devs[d];
			for (int t = 1; t < DT_COUNT; t++)
				v += dev_peak(dev, (DType)t) + dev_supports(dev, (DType)t);
			for (int k = 0; k < dev->nmems; k++)
				v += mem_total_capacity(dev, &dev->mems[k]);
			v += dev_units(dev);
		}
		for (int l = 0; l < m->nlinks; l++)
			v += link_oneway_bw(&m->links[l]);
		(void)v;
		machine_free(m);
	}
	free(buf);
	return 0;
}
