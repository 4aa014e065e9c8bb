/* testsuite/unit/test_viz.c: cmocka tests of the pictures' model (viz/viz.h) and of the
 * progress line (tools/progress.h, compiled in here: it is part of the driver, not a library).
 *
 * viz_shard_key on the names the partition pass and the targets give shards; viz_range_str;
 * viz_collapse on hand-built graphs: tensor-parallel shards fold into one node counting them, a
 * decode layer's KV-cache input collapses with its layer, a run of layers folds with its range,
 * a pipeline keeps one run per device, a flat graph's repeated block folds, and --focus keeps
 * one instance with its neighbours as context.  The progress line: nothing before 2 s, then
 * "aicc: WHAT: DONE/TOTAL (P%), T s", erased at the end, nothing with --quiet.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/progress.c"
#include "viz/model.h"

static void shard_keys(void **s)
{
	(void)s;
	char b[256];
	assert_int_equal(viz_shard_key("layer.stage0#1/q.tp3.157", b, sizeof b), 1);
	assert_string_equal(b, "layer.stage0#1/q");
	assert_int_equal(viz_shard_key("moe#2/g.ep5.40.local", b, sizeof b), 1);
	assert_string_equal(b, "moe#2/g.local");
	assert_int_equal(viz_shard_key("layer#7/u.cols2@lpu31", b, sizeof b), 1);
	assert_string_equal(b, "layer#7/u");
	assert_int_equal(viz_shard_key("layer#1/h.to.gpu3.264", b, sizeof b), 1);
	assert_string_equal(b, "layer#1/h");
	/* not shards: an ONNX name with a counter, a name that merely starts like a marker */
	assert_int_equal(viz_shard_key("p2o.Conv.12", b, sizeof b), 0);
	assert_string_equal(b, "p2o.Conv.12");
	assert_int_equal(viz_shard_key("layer#1/x.tpx", b, sizeof b), 0);
	assert_int_equal(viz_shard_key("layer#1/top.1", b, sizeof b), 0);
}

static void ranges(void **s)
{
	(void)s;
	const char *names[] = { "gpu0", "gpu1", "gpu2", "gpu3" };
	unsigned char all[] = { 1, 1, 1, 1 }, two[] = { 1, 0, 0, 1 }, gap[] = { 1, 1, 0, 1 }, one[] = { 0, 0, 1, 0 };
	char b[64];
	viz_range_str(names, 4, all, b, sizeof b);
	assert_string_equal(b, "gpu0..gpu3 (4 devices)");
	viz_range_str(names, 4, two, b, sizeof b);
	assert_string_equal(b, "gpu0, gpu3");
	viz_range_str(names, 4, gap, b, sizeof b);
	assert_string_equal(b, "gpu0 ... gpu3 (3 devices)");
	viz_range_str(names, 4, one, b, sizeof b);
	assert_string_equal(b, "gpu2");
}

/* Shown nodes of g whose op is op. */
static int shown(const VizGraph *g, const char *op)
{
	int n = 0;
	for (int i = 0; i < g->nnodes; i++)
		n += !g->nodes[i].hidden && strcmp(g->nodes[i].op, op) == 0;
	return n;
}

static const VizNode *find(const VizGraph *g, const char *op)
{
	for (int i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].hidden && strcmp(g->nodes[i].op, op) == 0)
			return &g->nodes[i];
	return NULL;
}

/* A decode step over L layers on tp devices each (pp stages of L/pp layers): per layer an
 * input past_key.N read by its Attention shards, Norm -> Attention x tp -> allreduce. */
static void decode_graph(VizGraph *g, int L, int tp, int pp)
{
	memset(g, 0, sizeof *g);
	char id[128];
	for (int d = 0; d < tp * pp; d++) {
		snprintf(id, sizeof id, "gpu%d", d);
		vz_device(g, id, "gpu");
	}
	int prev = vz_node(g, VN_INPUT, "input:x", "x", -1);
	for (int l = 1; l <= L; l++) {
		int stage = (l - 1) / (L / pp), base = stage * tp;
		char callee[32];
		snprintf(callee, sizeof callee, pp > 1 ? "layer.stage%d" : "layer", stage);
		snprintf(id, sizeof id, "%s#%d/h", callee, l);
		int norm = vz_node(g, VN_OP, id, "RMSNormalization", base);
		vz_edge(g, prev, norm, 64, NULL);
		snprintf(id, sizeof id, "%s#%d/o.allreduce.9", callee, l);
		int ar = vz_node(g, VN_COLLECTIVE, id, "allreduce", base);
		for (int k = 0; k < tp; k++) {
			char in[64];
			snprintf(in, sizeof in, "past_key.%d", l - 1);
			snprintf(id, sizeof id, "input:%s", in);
			int kv = vz_node(g, VN_INPUT, id, in, -1);
			snprintf(id, sizeof id, "%s#%d/a.tp%d.%d", callee, l, k, 100 + k);
			int a = vz_node(g, VN_OP, id, "Attention", base + k);
			vz_edge(g, norm, a, 64, NULL);
			vz_edge(g, kv, a, 1024, NULL);
			vz_edge(g, a, ar, 64, NULL);
		}
		prev = ar;
	}
	int out = vz_node(g, VN_OUTPUT, "output:y", "y", -1);
	vz_edge(g, prev, out, 64, NULL);
}

static void collapse_tp(void **s)
{
	(void)s;
	VizGraph g;
	decode_graph(&g, 80, 8, 1);
	viz_collapse(&g);
	assert_int_equal(shown(&g, "Attention"), 1);
	assert_int_equal(shown(&g, "allreduce"), 1);
	const VizNode *a = find(&g, "Attention");
	assert_int_equal(a->shards, 8);
	assert_int_equal(a->count, 80);
	assert_int_equal(a->first, 1);
	assert_int_equal(a->last, 80);
	const VizNode *kv = find(&g, "past_key.0");
	assert_non_null(kv);   /* the 640 KV inputs: one, inside the layer, standing for 0..79 */
	assert_string_equal(kv->instance, "layer#1");
	assert_string_equal(kv->op_last, "past_key.79");
	int nn, ne;
	viz_shown(&g, &nn, &ne);
	assert_int_equal(nn, 6);   /* x, y, norm, attention, allreduce, past_key */
	viz_free(&g);
}

static void collapse_pipeline(void **s)
{
	(void)s;
	VizGraph g;
	decode_graph(&g, 8, 2, 2);   /* layers 1-4 on gpu0-1, 5-8 on gpu2-3 */
	viz_collapse(&g);
	assert_int_equal(shown(&g, "Attention"), 2);
	assert_int_equal(shown(&g, "RMSNormalization"), 2);
	for (int i = 0; i < g.nnodes; i++)
		if (!g.nodes[i].hidden && !strcmp(g.nodes[i].op, "Attention"))
			assert_int_equal(g.nodes[i].count, 4);
	viz_free(&g);
}

static void collapse_expand_focus(void **s)
{
	(void)s;
	VizGraph g;
	decode_graph(&g, 4, 2, 1);
	assert_int_equal(viz_focus(&g, "layer#3"), 0);
	viz_collapse(&g);
	assert_int_equal(shown(&g, "Attention"), 1);
	int context = 0, nn, ne;
	for (int i = 0; i < g.nnodes; i++)
		context += !g.nodes[i].hidden && g.nodes[i].context;
	assert_int_equal(context, 2);   /* layer#2's allreduce feeds layer#3's norm, layer#4's norm reads it */
	viz_shown(&g, &nn, &ne);
	assert_int_equal(nn, 6);        /* norm, attention x2 folded, allreduce, past_key.2, 2 context */
	viz_free(&g);
	decode_graph(&g, 4, 2, 1);
	assert_int_equal(viz_focus(&g, "nosuch"), -1);
	viz_free(&g);
}

/* A flat graph: 5 blocks of Conv -> Mul -> Add (Add also reads the block's input). */
static void collapse_blocks(void **s)
{
	(void)s;
	VizGraph g;
	memset(&g, 0, sizeof g);
	int dev = vz_device(&g, "gpu", "gpu"), prev = vz_node(&g, VN_INPUT, "input:x", "x", -1);
	char id[64];
	for (int b = 0; b < 5; b++) {
		snprintf(id, sizeof id, "conv%d", b);
		int c = vz_node(&g, VN_OP, id, "Conv", dev);
		snprintf(id, sizeof id, "mul%d", b);
		int m = vz_node(&g, VN_OP, id, "Mul", dev);
		snprintf(id, sizeof id, "add%d", b);
		int a = vz_node(&g, VN_OP, id, "Add", dev);
		vz_edge(&g, prev, c, 4, NULL);
		vz_edge(&g, c, m, 4, NULL);
		vz_edge(&g, m, a, 4, NULL);
		vz_edge(&g, prev, a, 4, NULL);
		prev = a;
	}
	int r = vz_node(&g, VN_OP, "relu", "Relu", dev);
	vz_edge(&g, prev, r, 4, NULL);
	viz_collapse(&g);
	assert_int_equal(shown(&g, "Conv"), 1);
	assert_int_equal(find(&g, "Conv")->count, 5);
	assert_string_equal(find(&g, "Conv")->callee, "~3.0");   /* a callee per repeat: "~period.start" */
	assert_int_equal(shown(&g, "Relu"), 1);
	viz_free(&g);
}

static double fake_t;
static double fake_clock(void) { return fake_t; }

static void progress_line(void **s)
{
	(void)s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	progress_force(f, fake_clock);
	fake_t = 100;
	progress_begin("running the plan", 10);
	fake_t = 101;
	progress_update(3);
	fflush(f);
	assert_int_equal(len, 0);      /* nothing before 2 s */
	fake_t = 103;
	progress_update(4);
	fflush(f);
	assert_string_equal(buf, "\raicc: running the plan: 4/10 (40%), 3 s\033[K");
	fake_t = 103.1;
	progress_update(5);            /* redrawn at most every 0.2 s */
	fflush(f);
	assert_string_equal(buf, "\raicc: running the plan: 4/10 (40%), 3 s\033[K");
	progress_end();
	fflush(f);
	assert_string_equal(buf + strlen(buf) - 4, "\r\033[K");
	size_t before = len;
	progress_set_quiet(1);         /* --quiet: nothing at all */
	progress_begin("x", 0);
	fake_t = 200;
	progress_update(1);
	progress_end();
	fflush(f);
	assert_int_equal(len, before);
	progress_set_quiet(0);
	progress_force(NULL, NULL);
	fclose(f);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shard_keys),
		cmocka_unit_test(ranges),
		cmocka_unit_test(collapse_tp),
		cmocka_unit_test(collapse_pipeline),
		cmocka_unit_test(collapse_expand_focus),
		cmocka_unit_test(collapse_blocks),
		cmocka_unit_test(progress_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
