/* testsuite/unit/test_machine.c: cmocka tests of the machine loader (targets/machine.c): every
 * built-in machine loads and is internally consistent (dense BF16 peaks reproduce units x
 * FLOP/clk x clock, hardware.md §1.1), queries return SI units, overrides change values,
 * provenance and the hash, per-clock fields follow the clock, and hostile buffers fail without
 * crashing or leaking.  Run from the repository root (AICC_MACHINES points at targets/machines). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "targets/machine.h"
#include "targets/target.h"

/* cmocka 1.1 has no floating-point assertion. */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

static FILE *quiet;

static Machine *load(const char *name)
{
	Machine *m = machine_load(name, stderr);
	assert_non_null(m);
	return m;
}

static void test_all_builtins_load(void **state)
{
	char *names[64];
	int n = machine_list(names, 64);
	assert_true(n >= 8);
	for (int i = 0; i < n; i++) {
		Machine *m = machine_load(names[i], stderr);
		assert_non_null(m);
		assert_string_equal(m->name, names[i]);
		assert_true(machine_ndevices(m) >= 1);
		/* every number has a kind and a source */
		for (int f = 0; f < machine_nfields(m); f++) {
			const Num *num;
			machine_field_path(m, f, &num);
			assert_true(num->prov >= PROV_VENDOR && num->prov <= PROV_PRELIMINARY);
			assert_non_null(num->source);
			assert_true(num->v > 0 || num->prov == PROV_NONE);
		}
		machine_free(m);
		free(names[i]);
	}
}

static void test_h100_queries(void **state)
{
	Machine *m = load("h100-sxm");
	Device *g = machine_first(m, DEV_GPU);
	assert_non_null(g);
	assert_ptr_equal(machine_device(m, "gpu"), g);
	assert_near(dev_peak(g, DT_BF16), 989e12, 1);
	assert_near(dev_peak(g, DT_F8E4M3), 1979e12, 1);
	assert_near(dev_peak(g, DT_NVFP4), 0, 0);
	assert_true(dev_supports(g, DT_F8E5M2));
	assert_false(dev_supports(g, DT_NVFP4));
	MemSpace *smem = dev_mem(g, "smem");
	assert_non_null(smem);
	assert_int_equal(smem->scope, SCOPE_UNIT);
	assert_near(smem->capacity.v, 228 * 1024.0, 0);
	assert_near(mem_total_capacity(g, smem), 132 * 228 * 1024.0, 0);
	assert_near(smem->bandwidth.v, 128 * 1.83e9, 1);
	MemSpace *hbm = dev_mem_kind(g, MEM_HBM);
	assert_near(hbm->bandwidth.v, 3.35e12, 1);
	assert_near(hbm->efficiency.v, 0.9, 1e-12);
	const MmaFamily *w = dev_mma(g, "wgmma");
	assert_non_null(w);
	assert_int_equal(w->nshapes, 3);
	assert_int_equal(w->shapes[0].m[0], 64);
	assert_int_equal(w->shapes[2].k, 32);
	assert_true((w->shapes[2].dtypes >> DT_F8E4M3) & 1);
	assert_near(dev_efficiency(g, "gemm", 1), 0.72, 1e-12);
	assert_near(dev_efficiency(g, "nonesuch", 0.5), 0.5, 0);
	/* the GEMM efficiency of an MMA format: its gemm-FORMAT row, else the `gemm` fallback */
	assert_near(dev_gemm_efficiency(g, DT_BF16), 0.803, 1e-12);
	assert_near(dev_gemm_efficiency(g, DT_F8E4M3), 0.709, 1e-12);
	assert_near(dev_gemm_efficiency(g, DT_I8), 0.72, 1e-12);
	assert_near(dev_gemm_efficiency(g, DT_INVALID), 0.72, 1e-12);
	/* the roofline (partition's estimates, every target without a kernel model) prices FLOP at
	 * the format's efficiency, not the fallback's */
	TgtWork bw = { .flops = 1e15, .fmt = DT_BF16 }, fw = { .flops = 1e15, .fmt = DT_F8E4M3 };
	assert_near(tgt_roofline_time(NULL, m, g, NULL, &bw), 1e15 / (989e12 * 0.803), 1e-12);
	assert_near(tgt_roofline_time(NULL, m, g, NULL, &fw), 1e15 / (1979e12 * 0.709), 1e-12);
	assert_non_null(m->host);
	const Link *pcie = machine_link(m, m->host, g);
	assert_non_null(pcie);
	assert_near(link_oneway_bw(pcie), 63e9, 1);
	assert_string_equal(machine_source_url(m, "gk-h100"),
			    "https://glennklockwood.com/garden/processors/h100");
	assert_int_equal(strlen(m->hash), 16);
	assert_string_equal(m->hash, m->file_hash);
	machine_free(m);
}

/* Vendor peaks agree with units x per-unit rate x clock (hardware.md §1.1) within 1%. */
static void test_peak_consistency(void **state)
{
	static const struct { const char *name; double flop_per_clk; } cases[] = {
		{"h100-sxm", 4096}, {"dgx-h100", 4096}, {"b200", 8192}, {"gb200-nvl72", 8192},
		{"b300", 8192},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		Machine *m = load(cases[i].name);
		Device *g = machine_first(m, DEV_GPU);
		double model = dev_units(g) * cases[i].flop_per_clk * g->clock.v;
		assert_true(fabs(model / dev_peak(g, DT_BF16) - 1) < 0.01);
		machine_free(m);
	}
}

static void test_topologies(void **state)
{
	Machine *m = load("dgx-h100");
	assert_int_equal(machine_ndevices(m), 8);
	Device *g = machine_device(m, "gpu");
	const Link *nv = machine_link(m, g, g);
	assert_non_null(nv);
	assert_int_equal(nv->topo, TOPO_SWITCH);
	assert_true(nv->bidi);
	assert_near(link_oneway_bw(nv), 450e9, 1);
	machine_free(m);
	m = load("gb200-nvl72");
	assert_int_equal(machine_ndevices(m), 72);
	assert_near(m->host->count.v, 36, 0);
	g = machine_device(m, "gpu");
	assert_non_null(machine_link(m, m->host, g));
	assert_true(dev_supports(g, DT_NVFP4));
	assert_near(dev_peak(g, DT_NVFP4), 10e15, 1);
	assert_near(dev_mem(g, "tmem")->capacity.v, 256 * 1024.0, 0);
	assert_non_null(dev_mma(g, "tcgen05.2cta"));
	machine_free(m);
	m = load("reference");
	Device *c = machine_first(m, DEV_CPU);
	assert_near(dev_peak(c, DT_F32), 16 * 32 * 3e9, 1);
	assert_near(dev_peak(c, DT_F64), 16 * 16 * 3e9, 1);
	assert_near(dev_mem(c, "dram")->bandwidth.v, 100e9, 1);
	machine_free(m);
}

static void test_overrides(void **state)
{
	Machine *m = load("h100-sxm");
	char err[512], hash0[17];
	memcpy(hash0, m->hash, sizeof hash0);
	assert_int_equal(machine_set(m, "gpu.smem.capacity", "262144", err, sizeof err), 0);
	Device *g = machine_device(m, "gpu");
	assert_near(dev_mem(g, "smem")->capacity.v, 262144, 0);
	assert_int_equal(dev_mem(g, "smem")->capacity.prov, PROV_OVERRIDE);
	assert_string_not_equal(m->hash, hash0);
	assert_string_equal(m->file_hash, hash0);
	/* the device prefix may be left out when only one device has the field */
	assert_int_equal(machine_set(m, "hbm.bandwidth", "4.8 TB/s", err, sizeof err), 0);
	double v;
	assert_int_equal(machine_get(m, "gpu.hbm.bandwidth", &v), 0);
	assert_near(v, 4.8e12, 1);
	/* per-clock fields follow the clock */
	assert_int_equal(machine_set(m, "gpu.clock", "2GHz", err, sizeof err), 0);
	assert_near(dev_mem(g, "smem")->bandwidth.v, 256e9, 1);
	assert_near(g->sfu.rate.v, 32e9, 1);
	/* and a per-clock value may be set */
	assert_int_equal(machine_set(m, "gpu.sfu.rate", "32 op/clk", err, sizeof err), 0);
	assert_near(g->sfu.rate.v, 64e9, 1);
	assert_int_equal(machine_set(m, "gpu.peak.bf16", "1.5 PFLOP/s", err, sizeof err), 0);
	assert_near(dev_peak(g, DT_BF16), 1.5e15, 1);
	assert_int_equal(m->noverrides, 5);
	/* errors change nothing */
	assert_int_equal(machine_set(m, "gpu.smem.capcity", "1", err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown machine field 'gpu.smem.capcity'"));
	assert_int_equal(machine_set(m, "gpu.hbm.bandwidth", "-1 TB/s", err, sizeof err), -1);
	assert_non_null(strstr(err, "must be positive"));
	/* a bandwidth without its unit is not read as B/s */
	assert_int_equal(machine_set(m, "gpu.hbm.bandwidth", "3", err, sizeof err), -1);
	assert_non_null(strstr(err, "'3' has no unit"));
	assert_int_equal(machine_set(m, "gpu.count", "1.5", err, sizeof err), -1);
	assert_int_equal(machine_set(m, "gpu.hbm.efficiency", "2", err, sizeof err), -1);
	assert_int_equal(machine_set(m, "gpu.hbm.bandwidth", "5 GHz", err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown unit 'GHz'"));
	assert_int_equal(machine_set(m, "gpu.clock", "nan", err, sizeof err), -1);
	assert_int_equal(machine_set(m, "gpu.clock", "1e999", err, sizeof err), -1);
	assert_int_equal(m->noverrides, 5);
	assert_near(dev_mem(g, "hbm")->bandwidth.v, 4.8e12, 1);
	assert_int_equal(machine_get(m, "gpu.nonesuch", &v), -1);
	machine_free(m);
}

static const char tiny[] =
	"<machine name='t'><description>d</description>"
	"<device id='d' kind='tpu'><name>n</name>"
	"<count value='4' source='https://x.org' kind='preliminary'/>"
	"<mem kind='vmem' scope='device'><capacity value='128' unit='MiB' source='hardware.md §2.10' "
	"kind='vendor'/></mem></device>"
	"<link id='ici' type='ici' topology='torus' shape='2x2' wrap='yes' from='d' to='d' "
	"direction='both' source='hardware.md §2.10' kind='vendor'>"
	"<bandwidth value='400' unit='GB/s' source='hardware.md §2.10' kind='vendor'/>"
	"<latency value='0.5' unit='us' source='hardware.md §2.10' kind='vendor'/></link></machine>";

static void test_memory_and_torus(void **state)
{
	Machine *m = machine_load_memory("tiny.xml", tiny, sizeof tiny - 1, stderr);
	assert_non_null(m);
	Device *d = machine_first(m, DEV_TPU);
	assert_near(dev_mem(d, "vmem")->capacity.v, 128 * 1048576.0, 0);
	const Link *l = &m->links[0];
	assert_int_equal(l->topo, TOPO_TORUS);
	assert_int_equal(l->ndims, 2);
	assert_int_equal(l->dims[1], 2);
	assert_true(l->wrap);
	assert_near(l->latency.v, 0.5e-6, 1e-18);
	machine_free(m);
}

/* Hostile buffers: truncations of a valid file, binary junk and entity tricks fail cleanly. */
static void test_hostile_buffers(void **state)
{
	for (size_t n = 0; n < sizeof tiny - 1; n += 7)
		assert_null(machine_load_memory("cut.xml", tiny, n, quiet));
	static const char junk[] = "\x00\x01\x02garbage\xff\xfe";
	assert_null(machine_load_memory("junk.xml", junk, sizeof junk, quiet));
	static const char *const bad[] = {
		"<machine/>",
		"<?xml version='1.0'?><!DOCTYPE m [<!ENTITY a 'aaaa'><!ENTITY b '&a;&a;&a;&a;'>]>"
		"<machine name='x'>&b;</machine>",
		"<!DOCTYPE m SYSTEM 'file:///etc/passwd'><machine name='x'/>",
		"<machine name='x'><description>d</description><device id='d' kind='gpu'><name>n</name>"
		"<count value='1e400' source='hardware.md' kind='vendor'/></device></machine>",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_null(machine_load_memory("bad.xml", bad[i], strlen(bad[i]), quiet));
	assert_null(machine_load("no-such-machine", quiet));
	assert_null(machine_load("../etc/passwd", quiet));
	assert_null(machine_load("BAD NAME", quiet));
}

int main(void)
{
	setenv("AICC_MACHINES", "targets/machines", 0);
	quiet = fopen("/dev/null", "w");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_builtins_load),
		cmocka_unit_test(test_h100_queries),
		cmocka_unit_test(test_peak_consistency),
		cmocka_unit_test(test_topologies),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_memory_and_torus),
		cmocka_unit_test(test_hostile_buffers),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	fclose(quiet);
	return rc;
}
