/* tools/explain_train.c: `aicc explain STEP.json --compare`: a parallel training step's summary
 * (compile --phase train ... --emit summary, passes/train_step.c) with and without collective
 * offload, side by side.  The compile prices the step three times: as the machine is (its
 * collective engine's <offload> share, or a --set of it), with none of the collectives'
 * compute-unit work offloaded and with all of it (train_step.offload_compare); this prints them:
 * the offload share, step time, tokens/s, MFU and the compute units' own time on the
 * data-parallel collectives, then what the offload buys. */
#include <jansson.h>
#include <string.h>

#include "tools/driver.h"
#include "tools/plan_build.h"

static double num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) ? json_number_value(v) : 0;
}

int drv_explain_train(const char *path, int as_json, FILE *f)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	if (!root) {
		if (je.line > 0)
			fprintf(stderr, "%s:%d:%d: error: %s\n", path, je.line, je.column, je.text);
		else
			fprintf(stderr, "%s: error: %s\n", path, je.text);
		return -1;
	}
	const json_t *t = json_object_get(root, "train_step");
	const json_t *alt = t ? json_object_get(t, "offload_compare") : NULL;
	if (!json_is_object(t) || !json_is_array(alt) || json_array_size(alt) != 2) {
		fprintf(stderr, "%s: error: not the summary of a parallel training step (aicc compile --phase train with "
			"--dp/--zero/--cp/--pp-virtual ... --emit summary)\n", path);
		json_decref(root);
		return -1;
	}
	enum { NC = 3 };
	const char *names[NC] = { "as compiled", "offload none", "offload all" };
	const json_t *col[NC] = { t, json_array_get(alt, 0), json_array_get(alt, 1) };
	double share[NC], step[NC], tps[NC], mfu[NC], units[NC];
	for (int i = 0; i < NC; i++) {
		share[i] = num(col[i], "collective_offload"), step[i] = num(col[i], "step_s");
		tps[i] = num(col[i], "tokens_per_s"), mfu[i] = num(col[i], "mfu"), units[i] = num(col[i], "dp_units_s");
	}
	double gain = step[2] > 0 ? step[1] / step[2] : 0;
	if (as_json) {
		fprintf(f, "{\"comparison\": [");
		for (int i = 0; i < NC; i++)
			fprintf(f, "%s{\"offload\": \"%s\", \"collective_offload\": %.17g, \"step_s\": %.17g, \"tokens_per_s\": %.17g, "
				"\"mfu\": %.17g, \"dp_units_s\": %.17g}", i ? ", " : "", i ? names[i] + 8 : "as_compiled", share[i],
				step[i], tps[i], mfu[i], units[i]);
		fprintf(f, "], \"offload_speedup\": %.17g}\n", gain);
	} else {
		fprintf(f, "%-30s", "");
		for (int i = 0; i < NC; i++)
			fprintf(f, " %14s", names[i]);
		fprintf(f, "\n");
		const char *rows[] = { "collective offload", "step s", "tokens/s", "MFU %", "collective unit time s" };
		for (int r = 0; r < 5; r++) {
			fprintf(f, "  %-28s", rows[r]);
			for (int i = 0; i < NC; i++) {
				double v = r == 0 ? share[i] : r == 1 ? step[i] : r == 2 ? tps[i] : r == 3 ? 100 * mfu[i] : units[i];
				fprintf(f, " %14.4g", v);
			}
			fprintf(f, "\n");
		}
		fprintf(f, "  offload all against none: the step %.4gx as fast, MFU %+.2f points (the compute units' %.4g s "
			"on the data-parallel collectives per step)\n", gain, 100 * (mfu[2] - mfu[1]), units[1]);
	}
	json_decref(root);
	return 0;
}
