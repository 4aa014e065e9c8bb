/* testsuite/unit/test_tpu_ici.c: cmocka tests of the TPU's ICI cost functions
 * (targets/tpu/ici.c) against hand-computed values: rings per torus axis with and without
 * wraparound, several axes at once, a fully connected group with the 8i's collective latency
 * factor, all-to-all, point-to-point copies, group extents, and the numbers read from the
 * tpu-v5e-256 and tpu-8i machine files.  Run from the repository root. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "targets/tpu/tpu.h"

/* relative tolerance: the formulas are a few double operations */
#define assert_close(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-12 * fabs((double)(b)) + 1e-18)

/* v5e: 16x16 with wraparound, 50 GB/s one way per link, 1 us per hop (backends.md §2b table). */
static TpuIci v5e(void)
{
	return (TpuIci){ .present = 1, .ndims = 2, .dims = { 16, 16, 1, 1 }, .wrap = 1, .ports = 4,
			 .link_bw = 50e9, .hop_latency = 1e-6, .coll_latency = 1 };
}

static void test_allreduce_full_axis(void **state)
{
	(void)state;
	TpuIci ici = v5e();
	TpuIciCost c;
	int ext[4] = { 16, 1, 1, 1 };
	/* wrapped ring of 16: 8 hops, 2 x 50 GB/s; RS + AG of 16 MB:
	 * 2 x (8 x 1 us + 15/16 x 16e6 / 100e9) = 2 x (8 + 150) us = 316 us */
	double t = tpu_ici_collective(&ici, PC_ALLREDUCE, 16e6, ext, &c);
	assert_close(t, 316e-6);
	assert_int_equal(c.hops, 8);
	assert_int_equal(c.wrapped[0], 1);
	assert_close(c.lat, 16e-6);
	assert_close(c.bw, 300e-6);
	/* reduce-scatter: the first half, 8 us + 150 us */
	assert_close(tpu_ici_collective(&ici, PC_REDUCESCATTER, 16e6, ext, &c), 158e-6);
	assert_int_equal(c.hops, 8);
}

static void test_allreduce_partial_axis(void **state)
{
	(void)state;
	TpuIci ici = v5e();
	TpuIciCost c;
	int ext[4] = { 4, 1, 1, 1 };
	/* 4 chips of a 16-chip axis: no wraparound, 3 hops at one-way 50 GB/s;
	 * 2 x (3 us + 3/4 x 4e6 / 50e9) = 2 x (3 + 60) us = 126 us */
	assert_close(tpu_ici_collective(&ici, PC_ALLREDUCE, 4e6, ext, &c), 126e-6);
	assert_int_equal(c.wrapped[0], 0);
	assert_int_equal(c.hops, 3);
	/* the same without the wraparound on a full axis costs twice the bandwidth term */
	TpuIci nowrap = ici;
	nowrap.wrap = 0;
	int full[4] = { 16, 1, 1, 1 };
	TpuIciCost w, n;
	tpu_ici_collective(&ici, PC_ALLGATHER, 16e6, full, &w);
	tpu_ici_collective(&nowrap, PC_ALLGATHER, 16e6, full, &n);
	assert_close(n.bw, 2 * w.bw);
	assert_int_equal(n.hops, 15);
}

static void test_allgather_two_axes(void **state)
{
	(void)state;
	TpuIci ici = v5e();
	TpuIciCost c;
	int ext[4] = { 16, 16, 1, 1 };
	/* 256 chips, both axes wrapped: 8 + 8 hops; the axes share the data, 2 x 100 GB/s:
	 * 16 us + 255/256 x 25.6e6 / 200e9 = 16 + 127.5 us */
	assert_close(tpu_ici_collective(&ici, PC_ALLGATHER, 25.6e6, ext, &c), 143.5e-6);
	assert_int_equal(c.hops, 16);
	/* all-to-all over both axes: the busiest link carries V x mean ring distance / (2P); a
	 * wrapped ring of 16 has mean distance (0+1+..+8+7+..+1)/16 = 4, so 25.6e6 x 4 / 512 =
	 * 200 kB per link at 50 GB/s = 4 us, plus the same 16 latency steps */
	assert_close(tpu_ici_collective(&ici, PC_ALLTOALL, 25.6e6, ext, &c), 16e-6 + 4e-6);
	/* on one axis: a quarter of the ring's all-gather bandwidth term */
	int one[4] = { 16, 1, 1, 1 };
	assert_close(tpu_ici_collective(&ici, PC_ALLTOALL, 1.6e6, one, &c), 8e-6 + 15.0 / 16 * 1.6e6 / 100e9 / 4);
}

/* A 3-D slice: a wrapped torus of the given shape, 45 GB/s one way per link, 1 us per hop. */
static TpuIci slice3(int a, int b, int c, int twist)
{
	TpuIci ici = { .present = 1, .ndims = 3, .dims = { a, b, c, 1 }, .wrap = 1, .ports = 6, .link_bw = 45e9,
		       .hop_latency = 1e-6, .coll_latency = 1, .twist = twist };
	RtError e = { 0 };
	if (twist)
		assert_int_equal(tpu_ici_twist(&ici, &e), 0);
	return ici;
}

/* Twisted tori (TPU v4 OCS slices): the all-to-all bandwidth gain over the regular torus of the
 * same shape.  Jouppi et al. (ISCA 2023) measured 1.63x on 4x4x8 and 1.31x on 4x8x8; the link
 * load model gives 1.655x and 1.297x (within 2% of each).  Hand-computed: 4x4x8 regular is bound
 * by its long axis, V x 2 / (2 x 128) per link (mean ring distance of 8 is 2); the twisted
 * wiring's mean distance is 3.625 hops (breadth-first search: 464 / 128), balanced over the 6
 * links of each of 128 chips: V x 3.625 / 768; 4x8x8: V x 2 / 512 against V x 4.625 / 1536. */
static void test_twisted_torus(void **state)
{
	(void)state;
	struct { int a, b, c; double mean, gain, paper; } cases[] = {
		{ 4, 4, 8, 3.625, (2.0 / 256) / (3.625 / 768), 1.63 },
		{ 4, 8, 8, 4.625, (2.0 / 512) / (4.625 / 1536), 1.31 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		TpuIci reg = slice3(cases[i].a, cases[i].b, cases[i].c, 0), tw = slice3(cases[i].a, cases[i].b, cases[i].c, 1);
		assert_close(tw.twist_mean, cases[i].mean);
		int ext[4] = { cases[i].a, cases[i].b, cases[i].c, 1 };
		TpuIciCost r, t;
		double V = 64e6;
		tpu_ici_collective(&reg, PC_ALLTOALL, V, ext, &r);
		tpu_ici_collective(&tw, PC_ALLTOALL, V, ext, &t);
		assert_int_equal(t.twisted, 1);
		assert_int_equal(r.twisted, 0);
		assert_close(r.bw / t.bw, cases[i].gain);
		assert_true(fabs(r.bw / t.bw / cases[i].paper - 1) < 0.02);
		/* the twist shortens the longest path: fewer latency steps than the regular
		 * dimension-ordered phases (2 + 2 + 4 = 8 on 4x4x8) */
		assert_true(t.hops < r.hops);
		/* all-reduce is unchanged: its rings run on the same links either way */
		tpu_ici_collective(&reg, PC_ALLREDUCE, V, ext, &r);
		tpu_ici_collective(&tw, PC_ALLREDUCE, V, ext, &t);
		assert_close(r.t, t.t);
	}
	/* a partial group of a twisted slice is priced as the regular torus' */
	TpuIci tw = slice3(4, 4, 8, 1);
	int part[4] = { 4, 4, 1, 1 };
	TpuIciCost c;
	tpu_ici_collective(&tw, PC_ALLTOALL, 1e6, part, &c);
	assert_int_equal(c.twisted, 0);
}

/* The pod file and its OCS option: --set ici.topology=twisted-torus:4x4x8 reaches tpu_ici. */
static void test_ocs_topology(void **state)
{
	(void)state;
	RtError e = { 0 };
	TpuIci ici;
	char err[256];
	Machine *m = machine_load("tpu-v4-4096", stderr);
	assert_non_null(m);
	assert_int_equal(tpu_ici(m, machine_first(m, DEV_TPU), &ici, &e), 0);
	assert_int_equal(ici.twist, 0);
	assert_int_equal(ici.dims[2], 16);
	assert_close(ici.link_bw, 45e9);          /* 540 GB/s both ways over 6 ports */
	assert_int_equal(machine_set(m, "ici.topology", "twisted-torus:4x4x8", err, sizeof err), 0);
	assert_int_equal(tpu_ici(m, machine_first(m, DEV_TPU), &ici, &e), 0);
	assert_int_equal(ici.twist, 1);
	assert_int_equal(ici.dims[2], 8);
	assert_close(ici.twist_mean, 3.625);
	assert_int_equal(machine_set(m, "ici.topology", "twisted-torus:4x4x12", err, sizeof err), -1);
	machine_free(m);
}


/* Google's pod figures (hardware.md §2.10, §2.12: "all-reduce 51.2 TB/s" for v5e-256, 102.4 TB/s
 * for v6e-256): 256 chips x the nccl-tests bus bandwidth 2(P-1)/P x V / T of a large all-reduce
 * over the whole 16x16 torus (backends.md §7 conventions), latency excluded. */
static void test_pod_allreduce_bandwidth(void **state)
{
	(void)state;
	TpuIci ici = v5e();
	TpuIciCost c;
	int ext[4] = { 16, 16, 1, 1 };
	double V = 1e9, P = 256;
	tpu_ici_collective(&ici, PC_ALLREDUCE, V, ext, &c);
	assert_close(P * 2 * (P - 1) / P * V / c.bw, 51.2e12);
	ici.link_bw = 100e9;     /* v6e: 800 GB/s per chip over 4 ports */
	tpu_ici_collective(&ici, PC_ALLREDUCE, V, ext, &c);
	assert_close(P * 2 * (P - 1) / P * V / c.bw, 102.4e12);
}

static void test_full_mesh_cae(void **state)
{
	(void)state;
	/* 8i board: 4 chips fully connected, 6 ports of 200 GB/s one way, CAE factor 0.2:
	 * 3 peers over 3 links in one step; 2 x (0.2 x 1 us + 3/4 x 6e6 / (3 x 200e9))
	 * = 2 x (0.2 + 7.5) us = 15.4 us */
	TpuIci ici = { .present = 1, .ndims = 1, .dims = { 4, 1, 1, 1 }, .full_mesh = 1, .ports = 6,
		       .link_bw = 200e9, .hop_latency = 1e-6, .coll_latency = 0.2 };
	TpuIciCost c;
	int ext[4] = { 4, 1, 1, 1 };
	assert_close(tpu_ici_collective(&ici, PC_ALLREDUCE, 6e6, ext, &c), 15.4e-6);
	assert_int_equal(c.hops, 1);
	/* without the engine the latency term is 5x */
	ici.coll_latency = 1;
	assert_close(tpu_ici_collective(&ici, PC_ALLREDUCE, 6e6, ext, &c), 17e-6);
	/* more peers than ports: ceil(7/2) steps over 2 links */
	ici.ports = 2;
	int eight[4] = { 8, 1, 1, 1 };
	assert_close(tpu_ici_collective(&ici, PC_ALLGATHER, 8e6, eight, &c), 4e-6 + 7.0 / 8 * 8e6 / 400e9);
}

static void test_copy_and_groups(void **state)
{
	(void)state;
	TpuIci ici = v5e();
	TpuIciCost c;
	/* chip 0 (0,0) to chip 17 (1,1): 2 hops; 1e6 bytes over one 50 GB/s link: 2 + 20 us */
	assert_close(tpu_ici_copy(&ici, 1e6, 0, 17, &c), 22e-6);
	assert_int_equal(c.hops, 2);
	/* chip 0 to chip 15 (15,0): one hop the short way round the wraparound */
	assert_int_equal(tpu_ici_hops(&ici, 0, 15), 1);
	ici.wrap = 0;
	assert_int_equal(tpu_ici_hops(&ici, 0, 15), 15);
	assert_close(tpu_ici_copy(&ici, 1e6, 3, 3, &c), 0);
	/* groups: consecutive chips lie along the first axis, then spill to the second */
	int g4[] = { 4, 5, 6, 7 }, g32[32], ext[4];
	tpu_ici_group(&ici, g4, 4, ext);
	assert_int_equal(ext[0], 4);
	assert_int_equal(ext[1], 1);
	for (int i = 0; i < 32; i++)
		g32[i] = 32 + i;
	tpu_ici_group(&ici, g32, 32, ext);
	assert_int_equal(ext[0], 16);
	assert_int_equal(ext[1], 2);
	/* one chip: no collective */
	int one[4] = { 1, 1, 1, 1 };
	assert_close(tpu_ici_collective(&ici, PC_ALLREDUCE, 1e6, one, &c), 0);
}

static void test_machine_files(void **state)
{
	(void)state;
	RtError e = { 0 };
	TpuIci ici;
	Machine *m = machine_load("tpu-v5e-256", stderr);
	assert_non_null(m);
	const Device *d = machine_first(m, DEV_TPU);
	assert_non_null(d);
	assert_int_equal(tpu_ici(m, d, &ici, &e), 0);
	/* 400 GB/s per chip both ways over 4 ports: 50 GB/s one way per link (hardware.md §2.10) */
	assert_int_equal(ici.present, 1);
	assert_int_equal(ici.ndims, 2);
	assert_int_equal(ici.dims[0], 16);
	assert_int_equal(ici.dims[1], 16);
	assert_int_equal(ici.wrap, 1);
	assert_close(ici.link_bw, 50e9);
	assert_close(ici.hop_latency, 1e-6);
	assert_close(ici.coll_latency, 1);
	machine_free(m);
	m = machine_load("tpu-v5e", stderr);
	assert_non_null(m);
	assert_int_equal(tpu_ici(m, machine_first(m, DEV_TPU), &ici, &e), 0);
	assert_int_equal(ici.present, 0);
	machine_free(m);
	/* the 8i board: fully connected, 2400 / 2 / 6 = 200 GB/s per link one way, CAE 0.2 */
	m = machine_load("tpu-8i-4", stderr);
	assert_non_null(m);
	assert_int_equal(tpu_ici(m, machine_first(m, DEV_TPU), &ici, &e), 0);
	assert_int_equal(ici.full_mesh, 1);
	assert_int_equal(ici.dims[0], 4);
	assert_close(ici.link_bw, 200e9);
	assert_close(ici.coll_latency, 0.2);
	machine_free(m);
	/* v5p and v7 cubes: 4x4x4 with wraparound, 1200 / 2 / 6 = 100 GB/s per link one way */
	m = machine_load("tpu-v7-64", stderr);
	assert_non_null(m);
	assert_int_equal(tpu_ici(m, machine_first(m, DEV_TPU), &ici, &e), 0);
	assert_int_equal(ici.ndims, 3);
	assert_int_equal(ici.wrap, 1);
	assert_close(ici.link_bw, 100e9);
	machine_free(m);
}

int main(void)
{
	setenv("AICC_MACHINES", "targets/machines", 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allreduce_full_axis),
		cmocka_unit_test(test_allreduce_partial_axis),
		cmocka_unit_test(test_allgather_two_axes),
		cmocka_unit_test(test_pod_allreduce_bandwidth),
		cmocka_unit_test(test_full_mesh_cae),
		cmocka_unit_test(test_copy_and_groups),
		cmocka_unit_test(test_machine_files),
		cmocka_unit_test(test_twisted_torus),
		cmocka_unit_test(test_ocs_topology),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
