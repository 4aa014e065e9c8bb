/* testsuite/unit/test_plan.c: cmocka tests of runtime/plan.h and the timing engine.
 *
 * A plan built through the builder API with every entity and field kind (devices, spaces,
 * units, links, every initialiser, attributes of every kind, target attributes, numerics
 * options, static cycles, events, copies and collectives) is written, parsed back and written
 * again: the two texts must be identical.  Then: every verifier rule that needs a built plan,
 * allocation-failure injection over the reader (no crash, no leak under ASan), the execution
 * order and liveness, and the discrete-event simulation: roofline durations, overlap between
 * streams only after an event, link time alpha + n*beta, and peak live bytes.  In-memory `data`
 * constants: verified, refused by the writer, moved to a checksummed safetensors file by
 * plan_externalize, and
 * `init=data` is rejected by the reader.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/ewchain.h"
#include "runtime/interp.h"
#include "runtime/npy.h"
#include "runtime/plan.h"
#include "runtime/safetensors.h"

/* Serialises p into a malloc'd string. */
static char *to_text(const Plan *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(plan_write(p, f), 0);
	fclose(f);
	return buf;
}

/* Two devices, one link, every kind of entity and field. */
static Plan *build_rich(void)
{
	RtError e = { 0 };
	Plan *p = plan_new("reference", "unit-machine", 0x0123456789abcdefull, &e);
	assert_non_null(p);
	assert_int_equal(plan_set_source(p, "m.aig", "S=4,B=1", "f32", &e), 0);
	PlanDevice d0 = { .name = "d0", .kind = "cpu", .peak_flops = 1e9, .peak_flops_f64 = 5e8, .overhead_s = 1e-6 };
	PlanDevice d1 = { .name = "d1", .kind = "lpu", .peak_flops = 2e9, .overhead_s = 0, .clock_hz = 1e9 };
	assert_int_equal(plan_add_device(p, &d0, &e), 0);
	assert_int_equal(plan_add_device(p, &d1, &e), 1);
	PlanSpace s0 = { .name = "d0.mem", .device = 0, .capacity = 1 << 20, .bandwidth = 1e10 };
	PlanSpace s1 = { .name = "d1.sram", .device = 1, .capacity = 1 << 20, .bandwidth = 1e11 };
	plan_add_space(p, &s0, &e);
	plan_add_space(p, &s1, &e);
	PlanUnit u0 = { .name = "d0.core", .kind = "compute", .device = 0 };
	PlanUnit u1 = { .name = "d1.mxm", .kind = "compute", .device = 1 };
	plan_add_unit(p, &u0, &e);
	plan_add_unit(p, &u1, &e);
	PlanLink l = { .name = "c2c", .src = 0, .dst = 1, .bandwidth = 1e9, .latency_s = 1e-7 };
	plan_add_link(p, &l, &e);
	int64_t d4[] = { 4 }, d22[] = { 2, 2 };
	int x = plan_add_buffer(p, "x", 0, 0, DT_F32, 1, d4, &e);
	int w = plan_add_buffer(p, "w", 0, 64, DT_BF16, 1, d4, &e);
	int c = plan_add_buffer(p, "c", 0, 128, DT_F32, 2, d22, &e);
	int f = plan_add_buffer(p, "f", 0, 192, DT_F32, 1, d4, &e);
	int n = plan_add_buffer(p, "n", 0, 256, DT_F32, 1, d4, &e);
	int st = plan_add_buffer(p, "st", 0, 320, DT_F32, 1, d4, &e);
	int ub = plan_add_buffer(p, "u", 0, 384, DT_F32, 1, d4, &e);
	int y = plan_add_buffer(p, "y", 0, 448, DT_F32, 1, d4, &e);
	int yb = plan_add_buffer(p, "yb", 1, 0, DT_F32, 1, d4, &e);
	int z = plan_add_buffer(p, "z", 1, 64, DT_F32, 1, d4, &e);
	double vals[] = { 1.5, -2, 0.1, 3e-9 };
	PlanConst k1 = { .buffer = w, .kind = PINIT_NORMAL, .a = 0, .b = 0.02, .seed = 7, .instance = 3 };
	PlanConst k2 = { .buffer = c, .kind = PINIT_INLINE, .vals = vals, .nvals = 4 };
	PlanConst k3 = { .buffer = f, .kind = PINIT_FILL, .a = 0.5 };
	PlanConst k4 = { .buffer = n, .kind = PINIT_NPY, .path = "w \"q\".npy" };
	PlanConst k5 = { .buffer = st, .kind = PINIT_SAFETENSORS, .path = "m.safetensors", .key = "layer.0.w" };
	PlanConst k6 = { .buffer = ub, .kind = PINIT_UNBOUND };
	PlanConst *ks[] = { &k1, &k2, &k3, &k4, &k5, &k6 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(plan_add_const(p, ks[i], &e), i);
	plan_add_input(p, "x", x, &e);
	plan_add_output(p, "z", z, &e);
	plan_add_event(p, "sent", &e);
	int sa = plan_add_stream(p, "sa", 0, &e), sb = plan_add_stream(p, "sb", 1, &e);

	Attr attrs[5] = {
		{ .name = "axis", .kind = ATTR_INT, .i = -1 },
		{ .name = "eps", .kind = ATTR_FLOAT, .f = 1e-5 },
		{ .name = "mode", .kind = ATTR_STRING, .s = "tanh \"x\"" },
		{ .name = "perm", .kind = ATTR_INTS, .n = 2, .ints = (int64_t[]){ 1, 0 } },
		{ .name = "scales", .kind = ATTR_FLOATS, .n = 2, .floats = (double[]){ 0.5, 2 } },
	};
	PlanKV tile[] = { { "BM", "128" }, { "stages", "4" } };
	PlanInstr in;
	plan_instr_init(&in, PI_KERNEL);
	in.op = RT_OP_Add;
	in.in = (int[]){ x, w };
	in.nin = 2;
	in.out = (int[]){ y };
	in.nout = 1;
	in.attrs = (Attrs){ 5, attrs };
	in.tile = tile;
	in.ntile = 2;
	in.flops = 4;
	in.node = "add0";
	in.opts = (RtExecOpts){ .accum_f64 = 1, .mma_in = DT_BF16, .fp8_promote_k = 128, .exp2_poly = 3, .scale_rule = 1 };
	assert_int_equal(plan_add_instr(p, sa, &in, &e), 0);
	plan_instr_init(&in, PI_COPY);
	in.in = (int[]){ y }, in.nin = 1, in.out = (int[]){ yb }, in.nout = 1, in.link = 0;
	plan_add_instr(p, sa, &in, &e);
	plan_instr_init(&in, PI_RECORD);
	in.event = 0;
	plan_add_instr(p, sa, &in, &e);
	plan_instr_init(&in, PI_WAIT);
	in.event = 0;
	plan_add_instr(p, sb, &in, &e);
	plan_instr_init(&in, PI_KERNEL);
	in.op = RT_OP_Relu, in.in = (int[]){ yb }, in.nin = 1, in.out = (int[]){ z }, in.nout = 1;
	in.unit = 1, in.cycle = 100, in.dur = 4, in.flops = 4;
	plan_add_instr(p, sb, &in, &e);
	return p;
}

static void round_trip(void **s)
{
	(void)s;
	Plan *p = build_rich();
	RtError e = { 0 };
	assert_int_equal(plan_verify(p, &e), 0);
	char *t1 = to_text(p);
	Plan *q = plan_parse("rich.aip", t1, strlen(t1), &e);
	if (!q)
		fail_msg("%s\n%s", e.msg, t1);
	char *t2 = to_text(q);
	assert_string_equal(t1, t2);
	assert_non_null(strstr(t1, "a.mode=\"tanh \\\"x\\\"\""));
	assert_non_null(strstr(t1, "a.scales=f[0.5,2.0] t.BM=\"128\""));
	assert_non_null(strstr(t1, "accum=f64 mma_in=bf16 fp8_promote=128 exp2_poly=3 scale_rule=rceil"));
	assert_non_null(strstr(t1, "unit=d1.mxm cycle=100 dur=4"));
	assert_int_equal(q->consts[1].nvals, 4);
	assert_true(q->consts[1].vals[3] == 3e-9);
	assert_string_equal(q->consts[3].path, "w \"q\".npy");
	free(t1);
	free(t2);
	plan_free(p);
	plan_free(q);
}

/* A `data` constant has no text form until plan_externalize writes it beside the plan. */
static void data_constants(void **s)
{
	(void)s;
	RtError e = { 0 };
	Plan *p = plan_new("reference", "unit-machine", 1, &e);
	PlanDevice d0 = { .name = "d0", .kind = "cpu", .peak_flops = 1e9, .overhead_s = 1e-6 };
	PlanSpace s0 = { .name = "d0.mem", .device = 0, .capacity = 1 << 20, .bandwidth = 1e10 };
	assert_int_equal(plan_add_device(p, &d0, &e), 0);
	assert_int_equal(plan_add_space(p, &s0, &e), 0);
	int64_t d3[] = { 3 };
	int b = plan_add_buffer(p, "w/x", 0, 0, DT_F32, 1, d3, &e);
	RtTensor t;
	assert_int_equal(rt_tensor_alloc(&t, DT_F32, 1, d3, &e), 0);
	for (int i = 0; i < 3; i++)
		rt_f32(&t)[i] = (float)i + 0.5f;
	PlanConst c = { .buffer = b, .kind = PINIT_DATA, .data = &t };
	assert_int_equal(plan_add_const(p, &c, &e), 0);
	rt_tensor_free(&t);
	assert_int_equal(plan_verify(p, &e), 0);
	FILE *devnull = fopen("/dev/null", "w");
	assert_int_equal(plan_write(p, devnull), -1);
	fclose(devnull);
	char dir[] = "/tmp/aicc-test-plan-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof path, "%s/m.weights.safetensors", dir);
	FILE *wf = fopen(path, "wb");
	assert_int_equal(plan_externalize(p, wf, "m.weights.safetensors", &e), 1);
	fclose(wf);
	assert_int_equal(p->consts[0].kind, PINIT_SAFETENSORS);
	assert_string_equal(p->consts[0].path, "m.weights.safetensors");
	assert_string_equal(p->consts[0].key, "w/x");
	assert_true(p->consts[0].has_xxh3);
	char *text = to_text(p);
	char want[128];
	snprintf(want, sizeof want, "const w/x init=safetensors path=\"m.weights.safetensors\" key=\"w/x\" xxh3=%016llx",
		 (unsigned long long)p->consts[0].xxh3);
	assert_non_null(strstr(text, want));
	RtTensor back;
	assert_int_equal(rt_safetensors_read(path, "w/x", &back, &e), 0);
	assert_true(back.n == 3 && rt_f32(&back)[2] == 2.5f);
	rt_tensor_free(&back);
	/* the file's data starts 64-byte aligned, so f32 tensors map in place */
	RtMapped m;
	assert_int_equal(rt_file_map(path, &m, &e), 0);
	uint64_t hl = 0;
	for (int i = 7; i >= 0; i--)
		hl = hl << 8 | ((const uint8_t *)m.addr)[i];
	assert_int_equal((8 + hl) % 64, 0);
	assert_true(rt_checksum((const char *)m.addr + 8 + hl, 12) == p->consts[0].xxh3);
	rt_file_unmap(&m);
	remove(path);
	rmdir(dir);
	const char *old = "init=safetensors path=\"m.weights.safetensors\" key=\"w/x\"";
	char *at = strstr(text, old);
	memset(at, ' ', strlen(old) + 24);
	memcpy(at, "init=data", 9);
	Plan *q = plan_parse("data.aip", text, strlen(text), &e);
	assert_null(q);
	assert_non_null(strstr(e.msg, "unknown initialiser 'data'"));
	free(text);
	plan_free(p);
}
/* Every allocation of the reader may fail: it reports ENOMEM (or succeeds), never crashes or leaks. */
static void reader_alloc_failures(void **s)
{
	(void)s;
	Plan *p = build_rich();
	char *text = to_text(p);
	plan_free(p);
	int failures = 0;
	for (long n = 1; n < 4000; n++) {
		RtError e = { 0 };
		rt_alloc_fail_after(n);
		Plan *q = plan_parse("rich.aip", text, strlen(text), &e);
		rt_alloc_fail_after(0);
		if (q) {
			plan_free(q);
			break;
		}
		assert_int_equal(e.code, RT_ENOMEM);
		failures++;
	}
	assert_true(failures > 50);
	free(text);
}

static void verifier_on_built_plans(void **s)
{
	(void)s;
	RtError e = { 0 };
	Plan *p = build_rich();
	p->buffers[2].size = 7;
	assert_int_equal(plan_verify(p, &e), -1);
	assert_non_null(strstr(e.msg, "<plan>: error: buffer 'c': size 7 does not match f32 x 4 elements = 16 bytes"));
	p->buffers[2].size = 16;
	p->streams[0].ins[0].in[0] = 99;   /* an out-of-range index is reported, not followed */
	assert_int_equal(plan_verify(p, &e), -1);
	assert_non_null(strstr(e.msg, "undefined buffer"));
	p->streams[0].ins[0].in[0] = 0;
	p->streams[1].ins[1].cycle = 1;    /* unit d1.mxm: fine alone */
	assert_int_equal(plan_verify(p, &e), 0);
	plan_free(p);
}

/* fp8_scale: only on MatMul/Gemm with an FP8 mma_in, block scales only with a promotion interval
 * that ends every 128-element group; the field round-trips through the text form. */
static void verifier_fp8_scale(void **s)
{
	(void)s;
	RtError e = { 0 };
	Plan *p = build_rich();
	PlanInstr *k = &p->streams[0].ins[0];
	k->opts.fp8_scale = RT_FP8_128X128;
	assert_int_equal(plan_verify(p, &e), -1);
	assert_non_null(strstr(e.msg, "fp8_scale on Add: only MatMul, Gemm and GroupedMatMul"));
	k->op = RT_OP_MatMul;
	assert_int_equal(plan_verify(p, &e), -1);
	assert_non_null(strstr(e.msg, "fp8_scale=128x128 needs mma_in f8e4m3 or f8e5m2, not bf16"));
	k->opts.mma_in = DT_F8E4M3;
	k->opts.fp8_promote_k = 256;
	assert_int_equal(plan_verify(p, &e), -1);
	assert_non_null(strstr(e.msg, "fp8_promote=256 with fp8_scale=128x128"));
	k->opts.fp8_scale = RT_FP8_TENSOR;   /* one scale: any interval */
	assert_int_equal(plan_verify(p, &e), 0);
	k->opts.fp8_scale = RT_FP8_1X128, k->opts.fp8_promote_k = 64;
	assert_int_equal(plan_verify(p, &e), 0);
	char *t1 = to_text(p);
	assert_non_null(strstr(t1, "mma_in=f8e4m3 fp8_promote=64 exp2_poly=3 scale_rule=rceil fp8_scale=1x128"));
	Plan *q = plan_parse("fp8.aip", t1, strlen(t1), &e);
	if (!q)
		fail_msg("%s\n%s", e.msg, t1);
	assert_int_equal(q->streams[0].ins[0].opts.fp8_scale, RT_FP8_1X128);
	char *bad = strdup(t1);
	char *f = strstr(bad, "fp8_scale=1x128");
	memcpy(f, "fp8_scale=2x128", 15);
	Plan *r = plan_parse("bad.aip", bad, strlen(bad), &e);
	assert_null(r);
	assert_non_null(strstr(e.msg, "fp8_scale must be none, tensor, 1x128 or 128x128, not '2x128'"));
	free(bad);
	free(t1);
	plan_free(q);
	plan_free(p);
}

static void order_and_liveness(void **s)
{
	(void)s;
	RtError e = { 0 };
	Plan *p = build_rich();
	PlanStep *o;
	int n, *first, *last;
	assert_int_equal(plan_linearize(p, &o, &n, &e), 0);
	assert_int_equal(n, 5);
	int want[5][2] = { { 0, 0 }, { 0, 1 }, { 0, 2 }, { 1, 0 }, { 1, 1 } };
	for (int i = 0; i < 5; i++) {
		assert_int_equal(o[i].stream, want[i][0]);
		assert_int_equal(o[i].index, want[i][1]);
	}
	assert_int_equal(plan_liveness(p, o, n, &first, &last, &e), 0);
	assert_int_equal(first[0], -1);          /* input x */
	assert_int_equal(last[0], 0);
	assert_int_equal(first[7], 0);           /* y: written at 0, copied at 1 */
	assert_int_equal(last[7], 1);
	assert_int_equal(last[9], n);            /* output z lives to the end */
	free(o), free(first), free(last);
	plan_free(p);
}

/* ---- timing ---- */
static double unit_cost(const Plan *p, int stream, const PlanInstr *in) { return rt_cost_roofline(p, stream, in); }

static void timing_roofline_and_overlap(void **s)
{
	(void)s;
	RtError e = { 0 };
	Plan *p = build_rich();
	p->streams[1].ins[1].cycle = -1;
	rt_cost_register("reference", unit_cost);
	RtTiming t;
	assert_int_equal(rt_simulate(p, &t, &e), 0);
	/* Add on d0 (accum f64): overhead 1 us + max(4 FLOP / 0.5 GFLOP/s, (16+8+16) B / 10 GB/s) */
	assert_true(fabs((t.spans[0].end - t.spans[0].start) - (1e-6 + 8e-9)) < 1e-15);
	/* copy over c2c: 100 ns + 16 B / 1 GB/s */
	assert_true(fabs((t.spans[1].end - t.spans[1].start) - (1e-7 + 16e-9)) < 1e-15);
	assert_int_equal(t.spans[1].link, 0);
	/* Relu on d1 waits for the event recorded after the copy */
	const RtSpan *relu = &t.spans[4];
	assert_true(relu->start >= t.spans[1].end);
	assert_true(fabs(t.latency_s - relu->end) < 1e-18);
	assert_true(t.flops == 8);
	assert_int_equal(t.peak_bytes[1], 32);   /* yb and z */
	rt_timing_free(&t);
	plan_free(p);
}

static void timing_independent_streams_overlap(void **s)
{
	(void)s;
	RtError e = { 0 };
	Plan *p = build_rich();
	/* drop the wait: the Relu stream no longer depends on the copy, so it starts at 0 */
	PlanStream *sb = &p->streams[1];
	sb->ins[0].kind = PI_RECORD;
	p->nevents = 1;
	sb->ins[1].cycle = -1;
	p->streams[0].ins[2].kind = PI_WAIT;   /* the other stream now waits instead */
	rt_cost_register("reference", unit_cost);
	RtTiming t;
	assert_int_equal(rt_simulate(p, &t, &e), 0);
	int seen = 0;
	for (int i = 0; i < t.nspans; i++)
		if (t.spans[i].stream == 1 && p->streams[1].ins[t.spans[i].index].kind == PI_KERNEL)
			seen = 1, assert_true(t.spans[i].start == 0);
	assert_true(seen);
	rt_timing_free(&t);
	plan_free(p);
}

/* ---- execution order: the heap-based plan_linearize against the original quadratic scan ---- */
static int oracle_runnable(const Plan *p, const int *pc, const unsigned char *done, int s)
{
	const PlanStream *st = &p->streams[s];
	return pc[s] < st->nins && !(st->ins[pc[s]].kind == PI_WAIT && !done[st->ins[pc[s]].event]);
}

/* The order as the first implementation computed it, scanning every stream at every step. */
static int oracle_order(const Plan *p, PlanStep *order)
{
	int total = 0, stat = 0, n = 0, pc[64] = { 0 };
	int64_t key[64] = { 0 };
	unsigned char done[256] = { 0 };
	for (int i = 0; i < p->nstreams; i++) {
		total += p->streams[i].nins;
		for (int j = 0; j < p->streams[i].nins; j++)
			stat |= p->streams[i].ins[j].cycle >= 0;
	}
	for (int progress = 1; stat && progress && n < total;) {
		int best = -1;
		int64_t bk = 0;
		for (int s = 0; s < p->nstreams; s++) {
			if (!oracle_runnable(p, pc, done, s))
				continue;
			int64_t c = p->streams[s].ins[pc[s]].cycle, k = c >= 0 ? c : key[s];
			if (best < 0 || k < bk)
				best = s, bk = k;
		}
		progress = best >= 0;
		if (progress) {
			const PlanInstr *in = &p->streams[best].ins[pc[best]];
			if (in->cycle >= 0)
				key[best] = in->cycle;
			if (in->kind == PI_RECORD)
				done[in->event] = 1;
			order[n++] = (PlanStep){ best, pc[best]++ };
		}
	}
	for (int progress = 1; !stat && progress && n < total;) {
		progress = 0;
		for (int s = 0; s < p->nstreams; s++)
			while (pc[s] < p->streams[s].nins) {
				const PlanInstr *in = &p->streams[s].ins[pc[s]];
				if (in->kind == PI_WAIT && !done[in->event])
					break;
				if (in->kind == PI_RECORD)
					done[in->event] = 1;
				order[n++] = (PlanStep){ s, pc[s]++ };
				progress = 1;
			}
	}
	return n;
}

static void linearize_matches_oracle(void **st)
{
	(void)st;
	uint64_t r = 88172645463325252ull;
#define RND(k) (r ^= r << 13, r ^= r >> 7, r ^= r << 17, (int)(r % (uint64_t)(k)))
	for (int trial = 0; trial < 400; trial++) {
		RtError e = { 0 };
		Plan *p = plan_new("reference", "m", 1, &e);
		PlanDevice d0 = { .name = "d0", .kind = "cpu", .peak_flops = 1e9, .overhead_s = 1e-6 };
		plan_add_device(p, &d0, &e);
		int ns = 1 + RND(12), nev = RND(20), stat = trial % 2;
		char name[32];
		for (int k = 0; k < nev; k++)
			snprintf(name, sizeof name, "e%d", k), plan_add_event(p, name, &e);
		for (int k = 0; k < ns; k++)
			snprintf(name, sizeof name, "s%d", k), plan_add_stream(p, name, 0, &e);
		/* each event recorded once on a random stream; waits anywhere (some deadlock) */
		for (int k = 0; k < 6 * ns; k++) {
			PlanInstr in;
			plan_instr_init(&in, PI_KERNEL);
			int kind = RND(4);
			if (kind == 1 && nev) {
				in.kind = PI_WAIT, in.event = RND(nev);
			} else if (kind == 2 && nev) {
				in.kind = PI_RECORD, in.event = RND(nev);
				int dup = 0;
				for (int s2 = 0; s2 < p->nstreams; s2++)
					for (int j = 0; j < p->streams[s2].nins; j++)
						dup |= p->streams[s2].ins[j].kind == PI_RECORD && p->streams[s2].ins[j].event == in.event;
				if (dup)
					in.kind = PI_KERNEL, in.event = -1;
			}
			if (stat && in.kind == PI_KERNEL)
				in.cycle = RND(50);
			plan_add_instr(p, RND(ns), &in, &e);
		}
		PlanStep want[512], *got;
		int nw = oracle_order(p, want), ng;
		int rc = plan_linearize(p, &got, &ng, &e);
		int total = 0;
		for (int k = 0; k < ns; k++)
			total += p->streams[k].nins;
		assert_int_equal(rc, nw == total ? 0 : -1);
		if (rc == 0) {
			assert_int_equal(ng, nw);
			for (int k = 0; k < nw; k++)
				assert_true(got[k].stream == want[k].stream && got[k].index == want[k].index);
			free(got);
		}
		plan_free(p);
	}
#undef RND
}

/* ---- elementwise chains ---- */
/* PP-LCNet's activation (scale and shift, hard-swish as Add Clip Mul Div, scale and shift) and
 * more unary operators over 5000 values (two blocks and a part): run as one chain (the
 * interpreter's default) its outputs, one of them an intermediate the chain also reads, are bit
 * for bit those of the steps one by one (keep_all runs no chain), on data with NaN, infinities,
 * signed zeros and subnormals; an instruction that broadcasts a row ends the chain. */
static const char chain_plan[] =
	"aicc-plan 1\ntarget reference\nmachine unit hash=0000000000000000\n"
	"device cpu kind=cpu peak=1e9 overhead=1e-6\nspace cpu.dram device=cpu capacity=1048576 bandwidth=1e10\n"
	"unit cpu.core device=cpu kind=compute\n"
	"buffer x space=cpu.dram offset=0 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer s space=cpu.dram offset=20480 size=4 dtype=f32 shape=[1] format=row\n"
	"buffer t space=cpu.dram offset=20544 size=4 dtype=f32 shape=[1] format=row\n"
	"buffer three space=cpu.dram offset=20608 size=4 dtype=f32 shape=[] format=row\n"
	"buffer zero space=cpu.dram offset=20672 size=4 dtype=f32 shape=[] format=row\n"
	"buffer six space=cpu.dram offset=20736 size=4 dtype=f32 shape=[] format=row\n"
	"buffer row space=cpu.dram offset=20800 size=4000 dtype=f32 shape=[1000] format=row\n"
	"buffer a space=cpu.dram offset=32768 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer b space=cpu.dram offset=65536 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer c space=cpu.dram offset=98304 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer d space=cpu.dram offset=131072 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer f space=cpu.dram offset=163840 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer g space=cpu.dram offset=196608 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer h space=cpu.dram offset=229376 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer k space=cpu.dram offset=262144 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer l space=cpu.dram offset=294912 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"buffer y space=cpu.dram offset=327680 size=20000 dtype=f32 shape=[5,1000] format=row\n"
	"const s init=inline values=[1.25]\nconst t init=inline values=[-0.375]\nconst three init=inline values=[3]\n"
	"const zero init=inline values=[0]\nconst six init=inline values=[6]\n"
	"const row init=normal mean=0 std=1 seed=3 instance=0\n"
	"input x buffer=x\noutput f buffer=f\noutput y buffer=y\n"
	"stream main device=cpu count=10\n"
	"  kernel Mul in=[s,x] out=[a]\n"
	"  kernel Add in=[a,t] out=[b]\n"
	"  kernel Add in=[b,three] out=[c]\n"
	"  kernel Clip in=[c,zero,six] out=[d]\n"
	"  kernel Mul in=[b,d] out=[f]\n"
	"  kernel Div in=[f,six] out=[g]\n"
	"  kernel HardSigmoid in=[g] out=[h] a.alpha=0.3 a.beta=0.4\n"
	"  kernel Sub in=[h,x] out=[k]\n"
	"  kernel Sigmoid in=[k] out=[l]\n"
	"  kernel Add in=[l,row] out=[y]\n"
	"end\n";

static void elementwise_chain_same_bits(void **st)
{
	(void)st;
	RtError e = { 0 };
	rt_cost_register("reference", unit_cost);
	Plan *p = plan_parse("chain.aip", chain_plan, strlen(chain_plan), &e);
	if (!p)
		fail_msg("%s", e.msg);
	PlanStep *order;
	int n, *len;
	assert_int_equal(plan_linearize(p, &order, &n, &e), 0);
	assert_int_equal(rt_ew_chains(p, order, n, &len, &e), 0);
	assert_non_null(len);
	assert_int_equal(len[0], 9);   /* the broadcast row Add is not in it */
	free(order), free(len);
	int64_t dx[] = { 5, 1000 };
	RtTensor x;
	assert_int_equal(rt_tensor_alloc(&x, DT_F32, 2, dx, &e), 0);
	static const float special[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -3.0f, 3.0f, 6.0f };
	for (int64_t i = 0; i < x.n; i++)
		rt_f32(&x)[i] = i % 17 < 9 ? special[i % 17] : ldexpf((float)(i * 7919 % 1000) / 500.0f - 1.0f, (int)(i % 9) - 3);
	RtBinding b = { "x", &x };
	RtRun r[2];
	for (int keep = 0; keep < 2; keep++) {
		RtRunOpts o = { .bind = &b, .nbind = 1, .keep_all = keep };
		assert_int_equal(rt_run(p, &o, &r[keep], &e), 0);
	}
	for (int i = 0; i < p->noutputs; i++)
		assert_memory_equal(r[0].outputs[i].data, r[1].outputs[i].data, (size_t)x.n * sizeof(float));
	for (int keep = 0; keep < 2; keep++)
		rt_run_free(p, &r[keep]);
	rt_tensor_free(&x);
	plan_free(p);
}

/* ---- elementwise chains fused after a Conv ----
 * Convs of every kernel path (implicit 3x3, pointwise with bias, im2col with stride 2 and no
 * bias, depthwise), each followed by an elementwise chain reading its output (hard-swish as
 * Add Clip Mul Div, a residual Add of a whole tensor, the Conv's output read again late in the
 * chain, a kept intermediate that is also an output): with the chains fused on the Conv's
 * finished tiles (the default) every output is bit for bit that of the steps one by one
 * (keep_all runs no chain and fuses nothing), for each instruction set this CPU runs. */
static const char fused_plan[] =
	"aicc-plan 1\ntarget reference\nmachine unit hash=0000000000000000\n"
	"device cpu kind=cpu peak=1e9 overhead=1e-6\nspace cpu.dram device=cpu capacity=323840 bandwidth=1e10\n"
	"unit cpu.core device=cpu kind=compute\n"
	"buffer x space=cpu.dram offset=0 size=6720 dtype=f32 shape=[1,8,10,21] format=row\n"
	"buffer res space=cpu.dram offset=6720 size=33600 dtype=f32 shape=[1,40,10,21] format=row\n"
	"buffer s space=cpu.dram offset=40320 size=4 dtype=f32 shape=[1] format=row\n"
	"buffer t space=cpu.dram offset=40384 size=4 dtype=f32 shape=[1] format=row\n"
	"buffer three space=cpu.dram offset=40448 size=4 dtype=f32 shape=[] format=row\n"
	"buffer zero space=cpu.dram offset=40512 size=4 dtype=f32 shape=[] format=row\n"
	"buffer six space=cpu.dram offset=40576 size=4 dtype=f32 shape=[] format=row\n"
	"buffer w1 space=cpu.dram offset=40640 size=4608 dtype=f32 shape=[16,8,3,3] format=row\n"
	"buffer b1 space=cpu.dram offset=45248 size=64 dtype=f32 shape=[16] format=row\n"
	"buffer w2 space=cpu.dram offset=45312 size=2560 dtype=f32 shape=[40,16,1,1] format=row\n"
	"buffer b2 space=cpu.dram offset=47872 size=160 dtype=f32 shape=[40] format=row\n"
	"buffer w3 space=cpu.dram offset=48064 size=34560 dtype=f32 shape=[24,40,3,3] format=row\n"
	"buffer w4 space=cpu.dram offset=82624 size=864 dtype=f32 shape=[24,1,3,3] format=row\n"
	"buffer b4 space=cpu.dram offset=83520 size=96 dtype=f32 shape=[24] format=row\n"
	"buffer y1 space=cpu.dram offset=83648 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer a1 space=cpu.dram offset=97088 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer c1 space=cpu.dram offset=110528 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer d1 space=cpu.dram offset=123968 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer e1 space=cpu.dram offset=137408 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer f1 space=cpu.dram offset=150848 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer g1 space=cpu.dram offset=164288 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer h1 space=cpu.dram offset=177728 size=13440 dtype=f32 shape=[1,16,10,21] format=row\n"
	"buffer y2 space=cpu.dram offset=191168 size=33600 dtype=f32 shape=[1,40,10,21] format=row\n"
	"buffer a2 space=cpu.dram offset=224768 size=33600 dtype=f32 shape=[1,40,10,21] format=row\n"
	"buffer r2 space=cpu.dram offset=258368 size=33600 dtype=f32 shape=[1,40,10,21] format=row\n"
	"buffer y3 space=cpu.dram offset=291968 size=5280 dtype=f32 shape=[1,24,5,11] format=row\n"
	"buffer a3 space=cpu.dram offset=297280 size=5280 dtype=f32 shape=[1,24,5,11] format=row\n"
	"buffer b3 space=cpu.dram offset=302592 size=5280 dtype=f32 shape=[1,24,5,11] format=row\n"
	"buffer y4 space=cpu.dram offset=307904 size=5280 dtype=f32 shape=[1,24,5,11] format=row\n"
	"buffer a4 space=cpu.dram offset=313216 size=5280 dtype=f32 shape=[1,24,5,11] format=row\n"
	"buffer o4 space=cpu.dram offset=318528 size=5280 dtype=f32 shape=[1,24,5,11] format=row\n"
	"const s init=inline values=[1.25]\nconst t init=inline values=[-0.375]\nconst three init=inline values=[3]\n"
	"const zero init=inline values=[0]\nconst six init=inline values=[6]\n"
	"const w1 init=normal mean=0 std=0.5 seed=3 instance=0\nconst b1 init=normal mean=0 std=1 seed=4 instance=0\n"
	"const w2 init=normal mean=0 std=0.5 seed=5 instance=0\nconst b2 init=normal mean=0 std=1 seed=6 instance=0\n"
	"const w3 init=normal mean=0 std=0.5 seed=7 instance=0\nconst w4 init=normal mean=0 std=0.5 seed=8 instance=0\n"
	"const b4 init=normal mean=0 std=1 seed=9 instance=0\n"
	"input x buffer=x\ninput res buffer=res\noutput f1 buffer=f1\noutput h1 buffer=h1\noutput r2 buffer=r2\n"
	"output o4 buffer=o4\n"
	"stream main device=cpu count=17\n"
	"  kernel Conv in=[x,w1,b1] out=[y1] a.dilations=[1,1] a.kernel_shape=[3,3] a.strides=[1,1] a.group=1 a.pads=[1,1,1,1]\n"
	"  kernel Mul in=[s,y1] out=[a1]\n"
	"  kernel Add in=[a1,three] out=[c1]\n"
	"  kernel Clip in=[c1,zero,six] out=[d1]\n"
	"  kernel Mul in=[a1,d1] out=[e1]\n"
	"  kernel Div in=[e1,six] out=[f1]\n"
	"  kernel Add in=[f1,y1] out=[g1]\n"
	"  kernel Sub in=[g1,t] out=[h1]\n"
	"  kernel Conv in=[h1,w2,b2] out=[y2] a.dilations=[1,1] a.kernel_shape=[1,1] a.strides=[1,1] a.group=1 a.pads=[0,0,0,0]\n"
	"  kernel Mul in=[y2,s] out=[a2]\n"
	"  kernel Add in=[a2,res] out=[r2]\n"
	"  kernel Conv in=[r2,w3] out=[y3] a.dilations=[1,1] a.kernel_shape=[3,3] a.strides=[2,2] a.group=1 a.pads=[1,1,1,1]\n"
	"  kernel Clip in=[y3,zero,six] out=[a3]\n"
	"  kernel Mul in=[a3,t] out=[b3]\n"
	"  kernel Conv in=[b3,w4,b4] out=[y4] a.dilations=[1,1] a.kernel_shape=[3,3] a.strides=[1,1] a.group=24 a.pads=[1,1,1,1]\n"
	"  kernel Sub in=[y4,t] out=[a4]\n"
	"  kernel Sigmoid in=[a4] out=[o4]\n"
	"end\n";

static void fill(RtTensor *x, int64_t k0)
{
	static const float special[] = { NAN, INFINITY, -INFINITY, -0.0f, 1e-40f };
	for (int64_t i = 0; i < x->n; i++)
		rt_f32(x)[i] = (i + k0) % 211 < 5 ? special[(i + k0) % 211]
			       : ldexpf((float)((i + k0) * 7919 % 1000) / 500.0f - 1.0f, (int)(i % 7) - 3);
}

static void chain_fused_after_conv(void **st)
{
	(void)st;
	RtError e = { 0 };
	rt_cost_register("reference", unit_cost);
	Plan *p = plan_parse("fused.aip", fused_plan, strlen(fused_plan), &e);
	if (!p)
		fail_msg("%s", e.msg);
	RtTensor x, res;
	int64_t dx[] = { 1, 8, 10, 21 }, dr[] = { 1, 40, 10, 21 };
	assert_int_equal(rt_tensor_alloc(&x, DT_F32, 4, dx, &e), 0);
	assert_int_equal(rt_tensor_alloc(&res, DT_F32, 4, dr, &e), 0);
	fill(&x, 0), fill(&res, 3);
	RtBinding b[] = { { "x", &x }, { "res", &res } };
	for (int isa = 0; isa <= (int)rt_isa_best(); isa++) {
		rt_isa_set((RtIsa)isa);
		RtRun r[2];
		for (int keep = 0; keep < 2; keep++) {
			RtRunOpts o = { .bind = b, .nbind = 2, .keep_all = keep };
			assert_int_equal(rt_run(p, &o, &r[keep], &e), 0);
		}
		assert_int_equal(r[0].fused, 4);
		assert_int_equal(r[1].fused, 0);
		for (int i = 0; i < p->noutputs; i++) {
			assert_int_equal(r[0].outputs[i].n, r[1].outputs[i].n);
			assert_memory_equal(r[0].outputs[i].data, r[1].outputs[i].data, (size_t)r[0].outputs[i].n * sizeof(float));
		}
		for (int keep = 0; keep < 2; keep++)
			rt_run_free(p, &r[keep]);
	}
	rt_isa_set((RtIsa)-1);
	rt_tensor_free(&x), rt_tensor_free(&res);
	plan_free(p);
}

/* ---- sessions: weights bound once ---- */
/* x + w with w from an .npy file: the session maps w in place (no copy), reuses it across runs,
 * and refuses the file when its recorded checksum no longer matches. */
static Plan *npy_plan(const char *wpath)
{
	RtError e = { 0 };
	Plan *p = plan_new("reference", "unit-machine", 1, &e);
	PlanDevice d0 = { .name = "d0", .kind = "cpu", .peak_flops = 1e9, .overhead_s = 1e-6 };
	PlanSpace s0 = { .name = "d0.mem", .device = 0, .capacity = 1 << 20, .bandwidth = 1e10 };
	PlanUnit u0 = { .name = "d0.core", .kind = "compute", .device = 0 };
	assert_int_equal(plan_add_device(p, &d0, &e), 0);
	assert_int_equal(plan_add_space(p, &s0, &e), 0);
	assert_int_equal(plan_add_unit(p, &u0, &e), 0);
	int64_t d3[] = { 3 };
	int x = plan_add_buffer(p, "x", 0, 0, DT_F32, 1, d3, &e), w = plan_add_buffer(p, "w", 0, 64, DT_F32, 1, d3, &e);
	int y = plan_add_buffer(p, "y", 0, 128, DT_F32, 1, d3, &e);
	PlanConst c = { .buffer = w, .kind = PINIT_NPY, .path = (char *)wpath };
	assert_int_equal(plan_add_const(p, &c, &e), 0);
	assert_true(plan_add_input(p, "x", x, &e) >= 0 && plan_add_output(p, "y", y, &e) >= 0);
	int st = plan_add_stream(p, "main", 0, &e);
	PlanInstr in;
	plan_instr_init(&in, PI_KERNEL);
	int ins[2] = { x, w }, outs[1] = { y };
	in.op = RT_OP_Add, in.in = ins, in.nin = 2, in.out = outs, in.nout = 1;
	assert_int_equal(plan_add_instr(p, st, &in, &e), 0);
	assert_int_equal(plan_verify(p, &e), 0);
	return p;
}

static void session_binds_weights_once(void **s)
{
	(void)s;
	RtError e = { 0 };
	char dir[] = "/tmp/aicc-test-sess-XXXXXX", wpath[96];
	assert_non_null(mkdtemp(dir));
	snprintf(wpath, sizeof wpath, "%s/w.npy", dir);
	int64_t d3[] = { 3 };
	RtTensor w, x;
	assert_int_equal(rt_tensor_alloc(&w, DT_F32, 1, d3, &e), 0);
	assert_int_equal(rt_tensor_alloc(&x, DT_F32, 1, d3, &e), 0);
	for (int i = 0; i < 3; i++)
		rt_f32(&w)[i] = 10.0f * (float)(i + 1), rt_f32(&x)[i] = (float)i;
	assert_int_equal(rt_npy_write(wpath, &w, &e), 0);
	rt_cost_register("reference", unit_cost);
	Plan *p = npy_plan(wpath);
	RtBinding b = { "x", &x };
	RtRunOpts o = { .bind = &b, .nbind = 1 };
	RtSession *ss = rt_session_new(p, &o, &e);
	assert_non_null(ss);
	assert_int_equal(rt_session_stats(ss)->nconsts, 1);
	assert_int_equal(rt_session_stats(ss)->nmapped, 1);      /* f32 .npy of the buffer's shape: in place */
	for (int run = 0; run < 3; run++) {
		RtRun r;
		rt_f32(&x)[0] = (float)run;
		assert_int_equal(rt_session_run(ss, &o, &r, &e), 0);
		assert_true(rt_f32(&r.outputs[0])[0] == 10.0f + (float)run && rt_f32(&r.outputs[0])[2] == 32.0f);
		rt_run_free(p, &r);
	}
	assert_int_equal(rt_session_stats(ss)->nconsts, 1);      /* loaded once, not per run */
	rt_session_free(ss);
	/* a recorded checksum that no longer matches the file: an error before the data is used */
	p->consts[0].has_xxh3 = 1;
	p->consts[0].xxh3 = 12345;
	RtRun r;
	assert_int_equal(rt_run(p, &o, &r, &e), -1);
	assert_non_null(strstr(e.msg, "has changed since the plan was written"));
	RtMapped m;
	assert_int_equal(rt_file_map(wpath, &m, &e), 0);
	p->consts[0].xxh3 = rt_checksum((const char *)m.addr + m.len - 12, 12);   /* the data bytes */
	rt_file_unmap(&m);
	assert_int_equal(rt_run(p, &o, &r, &e), 0);
	rt_run_free(p, &r);
	plan_free(p);
	/* devices and FIFOs are refused, never read until EOF or blocked on */
	assert_int_equal(rt_file_map("/dev/zero", &m, &e), -1);
	assert_non_null(strstr(e.msg, "not a regular file"));
	char fifo[128];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(rt_npy_read(fifo, &w, &e), -1);
	assert_non_null(strstr(e.msg, "not a regular file"));
	assert_int_equal(rt_file_map(dir, &m, &e), -1);
	assert_non_null(strstr(e.msg, "directory"));
	remove(fifo);
	remove(wpath);
	rmdir(dir);
	rt_tensor_free(&w);
	rt_tensor_free(&x);
}

/* rt_shortest_double (integers in one conversion, others through strfromd) spells every value
 * as the reference loop does: the fewest %.Ng digits that read back to the same double. */
static void shortest_double_matches_printf_loop(void **state)
{
	(void)state;
	uint64_t x = 0x9E3779B97F4A7C15u;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		double v;
		switch (i % 4) {
		case 0: { uint64_t b = x; memcpy(&v, &b, sizeof v); break; }      /* any bit pattern */
		case 1: v = (double)(int64_t)(x >> (x % 64)) * (x & 1 ? -1 : 1); break;   /* integers */
		case 2: v = (double)(x % 100000) / 1000; break;                   /* short decimals */
		default: v = ldexp((double)(x >> 11), (int)(x % 120) - 60); break;
		}
		if (isnan(v) || isinf(v))
			continue;
		char got[40], want[40];
		rt_shortest_double(got, sizeof got, v);
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(want, sizeof want, "%.*g", prec, v);
			if (strtod(want, NULL) == v)
				break;
		}
		if (strcmp(got, want) != 0)
			fail_msg("%a: got %s, want %s", v, got, want);
	}
	char buf[40];
	rt_shortest_double(buf, sizeof buf, -0.0);
	assert_string_equal(buf, "-0");
	rt_shortest_double(buf, sizeof buf, 1000);
	assert_string_equal(buf, "1e+03");
}

/* plan_intern: one copy per distinct text (equal texts, equal pointers; distinct texts, distinct
 * pointers) across the table's growth and long strings; instructions' target attributes and node
 * names are interned, so replicas share them. */
static void intern_one_copy_per_text(void **state)
{
	(void)state;
	RtError e = { 0 };
	Plan *p = plan_new("reference", "m", 0, &e);
	assert_non_null(p);
	assert_null(plan_intern(p, NULL));
	enum { N = 20000 };
	static char *first[N];
	char buf[40000];
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof buf, "s%d", i * 7919);
		first[i] = plan_intern(p, buf);
		assert_non_null(first[i]);
		assert_string_equal(first[i], buf);
	}
	for (int i = 0; i < N; i++) {
		snprintf(buf, sizeof buf, "s%d", i * 7919);
		assert_ptr_equal(plan_intern(p, buf), first[i]);
		if (i)
			assert_ptr_not_equal(first[i], first[i - 1]);
	}
	memset(buf, 'z', sizeof buf - 1);   /* longer than a block */
	buf[sizeof buf - 1] = 0;
	char *big = plan_intern(p, buf);
	assert_non_null(big);
	assert_ptr_equal(plan_intern(p, buf), big);
	assert_int_equal(strlen(big), sizeof buf - 1);
	int d = plan_add_device(p, &(PlanDevice){ .name = "d0", .kind = "cpu" }, &e);
	int st = plan_add_stream(p, "s", d, &e);
	assert_true(d >= 0 && st >= 0);
	char key[8] = "kind", val[8] = "gemm", node[8] = "x";
	PlanKV kv = { key, val };
	PlanInstr in;
	plan_instr_init(&in, PI_RECORD);
	in.tile = &kv, in.ntile = 1, in.node = node;
	assert_true(plan_add_instr(p, st, &in, &e) >= 0 && plan_add_instr(p, st, &in, &e) >= 0);
	const PlanInstr *a = &p->streams[st].ins[0], *b = &p->streams[st].ins[1];
	assert_ptr_equal(a->tile[0].val, b->tile[0].val);
	assert_ptr_equal(a->node, b->node);
	assert_ptr_not_equal(a->tile[0].val, val);
	assert_string_equal(a->tile[0].key, "kind");
	plan_free(p);
}

/* rt_fput_quoted writes runs at once; the escapes are those of docs/plan-format.md. */
static void fput_quoted_escapes(void **state)
{
	(void)state;
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	assert_non_null(f);
	rt_fput_quoted(f, "a\"b\\c\n\td\x01\x7f ok", '"');
	rt_fput_quoted(f, "", '\'');
	fclose(f);
	assert_string_equal(text, "\"a\\\"b\\\\c\\n\\td\\x01\\x7f ok\"''");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(data_constants),
		cmocka_unit_test(reader_alloc_failures),
		cmocka_unit_test(verifier_on_built_plans), cmocka_unit_test(verifier_fp8_scale),
		cmocka_unit_test(order_and_liveness),
		cmocka_unit_test(timing_roofline_and_overlap),
		cmocka_unit_test(timing_independent_streams_overlap),
		cmocka_unit_test(session_binds_weights_once),
		cmocka_unit_test(elementwise_chain_same_bits),
		cmocka_unit_test(chain_fused_after_conv),
		cmocka_unit_test(linearize_matches_oracle),
		cmocka_unit_test(shortest_double_matches_printf_loop),
		cmocka_unit_test(fput_quoted_escapes),
		cmocka_unit_test(intern_one_copy_per_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
