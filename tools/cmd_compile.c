/* tools/cmd_compile.c: `aicc compile MODEL [options]`: read a model (.aig, or .onnx through the
 * ONNX importer), bind dimensions (--bind, --shape), turn inputs into constants (--const), verify,
 * infer shapes, and emit the IR, a summary, or a target's plan (tools/plan_build.c) with its
 * large constants written to OUT.weights/ beside it. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "targets/target.h"
#include "tools/driver.h"
#include "tools/pass_opts.h"
#include "tools/plan_build.h"
#include "tools/progress.h"
#include "tools/emit_viz.h"   /* viz: --emit dot|svg|png */

typedef struct CompileOpts {
	const char *model, *output, *emit, *target, *machine, *precision;
	const char *binds[64];
	int nbinds;
	const char *sets[64];
	int nsets;
	const char *shapes[64];      /* --shape x=1,3,48,262 */
	int nshapes;
	const char *consts[64];      /* --const x=FILE(.npy|.pb) */
	int nconsts;
	const char *print_after;
	int print_after_all;
	int parse_only;              /* --parse-only: structure checks, no shape inference */
	PassOpts passes;             /* --passes, -O, --remarks, ... (tools/pass_opts.c) */
	const char *init_unbound;    /* --init-unbound KIND[:SCALE[:SEED]] */
	PictureOpts pic;             /* viz: --expand, --focus, --layout-time */
	/* phases: --phase prefill|decode, --batch B, --context S (bound as B and S; decode binds
	 * S=1 and caches S past tokens) */
	const char *phase;
	const char *mix;             /* --mix NxS+P,... (--phase mixed) */
	long long batch, context;
	char phase_binds[2][48];
	const char *kv_format;       /* --kv-format bf16|fp8: the KV cache's element format */
} CompileOpts;

static void compile_help(void)
{
	char words[256];
	size_t k = 0;
	for (int i = 0; i < prec_nwords && k < sizeof words; i++)
		k += (size_t)snprintf(words + k, sizeof words - k, " %s", prec_words[i].name);
	printf("usage: aicc compile MODEL(.aig|.onnx) [options]\n"
	       "  --emit ir|summary|plan|dot|svg|png  what to write (default: the kind -o's extension\n"
	       "                        names, .aip .aig .json .dot .svg .png, else summary); pictures\n"
	       "                        show the plan's placement when --target is given, else the IR\n"
	       "  --target T            target of --emit plan (default: the target of --machine's\n"
	       "                        devices, e.g. hopper for dgx-h100, else reference; aicc targets)\n"
	       "  --machine NAME|FILE   machine description (default: the target's)\n"
	       "  --set key=value       override a machine field (repeatable)\n"
	       "  --precision W[+OPT]   numeric formats, one word of:%s\n"
	       "                        options +graph +nopromote +tensor +1x128 +128x128 (GPU targets);\n"
	       "                        checked against --target and --machine (aicc targets lists them)\n"
	       "  -o FILE               output file (default: stdout)\n"
	       "  --bind S=2048,B=1     bind dimension symbols, or replace the value of the model's\n"
	       "                        `dim` constants of those names (repeatable)\n"
	       "  --init-unbound normal|uniform[:SCALE[:SEED]]\n"
	       "                        give unbound parameters seeded data so the plan runs: ones\n"
	       "                        for norm scales, zeros for biases, normal(0, SCALE) or\n"
	       "                        uniform(-SCALE, SCALE) for the rest (default SCALE 0.02)\n"
	       "  --shape x=1,3,48,262  give input x this shape, binding its symbolic dims (repeatable)\n"
	       "  --const x=FILE        make input x a constant holding FILE's tensor (.npy, or .pb:\n"
	       "                        an ONNX TensorProto), for inputs that determine shapes\n"
	       "                        (a Reshape shape, Slice starts, TopK k...); repeatable\n"
	       "  --phase prefill|decode  an LLM serving phase with its KV cache as graph inputs and\n"
	       "                        outputs (pass kv-cache): prefill of --context tokens, or one\n"
	       "                        decode step with --context past tokens; binds B and S\n"
	       "  --phase mixed --mix NxS+P,...  one serving iteration: groups of N sequences of S\n"
	       "                        new tokens after P cached ones (decodes: S = 1), flattened\n"
	       "                        into one batch (B=1, S=sum N*S) as vLLM and Sarathi-Serve run\n"
	       "                        it; e.g. --mix 32x1+2048,1x512+1024 (not for run --check)\n"
	       "  --phase train         one training step (pass autodiff): calls inlined, the loss\n"
	       "                        SoftmaxCrossEntropyLoss(first output, input `labels`), its\n"
	       "                        gradients and an AdamW step; --batch B sequences of --context S\n"
	       "  --lr X                phase train: AdamW's learning rate (default 1e-3)\n"
	       "  --grad-accum K        phase train: K micro-batches of --batch B per step, gradients\n"
	       "                        averaged before the one AdamW step (default 1)\n"
	       "  --batch B             phases: sequences (default 1)\n"
	       "  --context S           phases: prompt length (prefill) or past tokens (decode)\n"
	       "  --kv-format F         phases: the KV cache's format: as the keys (default) or fp8\n"
	       "                        (e4m3: new rows rounded to it, read back as stored)\n"
	       "  --print-after PASS    print the IR to stderr after PASS (verify, infer-shapes)\n"
	       "  --print-after-all     print the IR after every pass\n"
	       "  --print-weights       --emit ir and --print-after: print every constant's values\n"
	       "                        (default: constants over %d values print as unbound params\n"
	       "                        with a comment, as MLIR elides large elements attributes)\n"
	       "  --parse-only          parse and verify the structure only (no shape inference),\n"
	       "                        e.g. to reformat a file with --emit ir\n", words, IR_ELIDE_OVER);
	drv_picture_help();   /* viz */
	pass_opts_help();
}

static void maybe_print(const CompileOpts *o, const Module *m, const char *pass)
{
	if (o->print_after_all || (o->print_after && strcmp(o->print_after, pass) == 0)) {
		fprintf(stderr, "# IR after %s\n", pass);
		ir_print_module_elided(m, stderr, o->passes.ctx.print_elide);
	}
}

/* The parallel training step's figures (passes/train_step.c), seconds, bytes per device. */
static json_t *train_step_json(const TrainStep *t)
{
	json_t *o = json_object(), *par = json_object(), *st = json_array(), *mem = json_object();
	json_object_set_new(o, "model", json_string("one replica's pipeline ranks, each layer priced on one device of "
						      "its tp x cp group, plus the data-parallel collectives over the group"));
	json_object_set_new(par, "devices", json_integer(t->devices));
	json_object_set_new(par, "dp", json_integer(t->dp));
	json_object_set_new(par, "tp", json_integer(t->tp));
	json_object_set_new(par, "pp", json_integer(t->pp));
	json_object_set_new(par, "cp", json_integer(t->cp));
	json_object_set_new(par, "zero", json_integer(t->zero));
	json_object_set_new(par, "pp_virtual", json_integer(t->vstages));
	json_object_set_new(par, "micro_batches", json_integer(t->micro));
	json_object_set_new(par, "recompute", json_string(train_recompute_names[t->recompute]));
	json_object_set_new(par, "recomputed_layers", json_real(t->recompute_frac));
	json_object_set_new(o, "parallel", par);
	json_object_set_new(o, "layers", json_integer(t->layers));
	for (int r = 0; r < t->pp; r++) {
		json_t *e = json_object();
		json_object_set_new(e, "layers", json_integer(t->stage_layers[r]));
		json_object_set_new(e, "micro_batch_s", json_real(t->stage_time[r]));
		json_array_append_new(st, e);
	}
	json_object_set_new(o, "pipeline_ranks", st);
	json_object_set_new(o, "layer_forward_s", json_real(t->fwd_layer));
	json_object_set_new(o, "layer_backward_s", json_real(t->bwd_layer));
	json_object_set_new(o, "layer_tp_comm_s", json_real(t->tp_comm_layer));
	json_object_set_new(o, "layer_cp_comm_s", json_real(t->cp_comm_layer));
	json_object_set_new(o, "pp_send_s", json_real(t->p2p));
	json_object_set_new(o, "pp_blocking_s", json_real(t->p2p_steady));
	json_object_set_new(o, "pipeline_s", json_real(t->pipeline));
	json_object_set_new(o, "bubble_s", json_real(t->bubble));
	json_object_set_new(o, "bubble_fraction", json_real(t->step > 0 ? t->bubble / t->step : 0));
	json_object_set_new(o, "dp_reduce_scatter_s", json_real(t->dp_rs));
	json_object_set_new(o, "dp_all_gather_s", json_real(t->dp_ag));
	json_object_set_new(o, "dp_hidden_s", json_real(t->dp_hidden));
	json_object_set_new(o, "dp_exposed_s", json_real(t->dp_exposed));
	json_object_set_new(o, "dp_units_s", json_real(t->dp_units));
	json_object_set_new(o, "collective_offload", json_real(t->offload));
	json_t *cmp = json_array();
	for (int k = 0; k < 2; k++) {
		json_t *e = json_object();
		json_object_set_new(e, "collective_offload", json_real(k));
		json_object_set_new(e, "step_s", json_real(t->alt_step[k]));
		json_object_set_new(e, "tokens_per_s", json_real(t->alt_step[k] > 0 ? t->tokens / t->alt_step[k] : 0));
		json_object_set_new(e, "mfu", json_real(t->alt_mfu[k]));
		json_object_set_new(e, "dp_units_s", json_real(t->alt_units[k]));
		json_array_append_new(cmp, e);
	}
	json_object_set_new(o, "offload_compare", cmp);
	if (t->fabric)
		json_object_set_new(o, "dp_link", json_string(t->fabric));
	json_object_set_new(o, "optimizer_s", json_real(t->optimizer));
	json_object_set_new(o, "step_s", json_real(t->step));
	json_object_set_new(o, "tokens", json_real(t->tokens));
	json_object_set_new(o, "tokens_per_s", json_real(t->step > 0 ? t->tokens / t->step : 0));
	json_object_set_new(o, "model_flops", json_real(t->model_flops));
	json_object_set_new(o, "peak_flops", json_real(t->peak));
	json_object_set_new(o, "tflops_per_device", json_real(t->step > 0 ? t->model_flops / t->step / (double)t->devices / 1e12 : 0));
	json_object_set_new(o, "mfu", json_real(t->mfu));
	json_object_set_new(o, "hfu", json_real(t->hfu));
	json_object_set_new(mem, "weights", json_real(t->weights));
	json_object_set_new(mem, "gradients", json_real(t->grads));
	json_object_set_new(mem, "optimizer_state", json_real(t->optim));
	json_object_set_new(mem, "activations", json_real(t->acts));
	json_object_set_new(mem, "capacity", json_real(t->capacity));
	json_object_set_new(mem, "fits", json_boolean(t->fits));
	json_object_set_new(o, "memory_rank0", mem);
	if (t->candidates) {
		json_t *se = json_object();
		json_object_set_new(se, "candidates", json_integer(t->candidates));
		json_object_set_new(se, "fitting", json_integer(t->fitting));
		json_object_set_new(o, "search", se);
	}
	return o;
}

/* A summary whose parameter counts pass 2^63: a located user error naming the parameter and
 * its largest dimension (by the `dim` constant of that value, when there is one); 0 if none. */
static int summary_overflow(Module *m)
{
	Summary s = ir_summary(ir_entry(m));
	const Value *v = s.overflow;
	if (!v)
		return 0;
	int64_t big = 0;
	for (int d = 0; d < v->type.rank; d++)
		if (dim_isconst(v->type.dims[d]) && v->type.dims[d].k > big)
			big = v->type.dims[d].k;
	const char *dim = NULL;
	for (const struct DimConst *c = m->dimconsts; c && !dim; c = c->next)
		dim = c->v == big ? c->name : NULL;
	char ty[256], why[160];
	ir_type_str(m, v->type, ty, sizeof ty);
	if (dim)
		snprintf(why, sizeof why, "dimension %s = %" PRId64 " is too large", dim, big);
	else
		snprintf(why, sizeof why, "its dimension %" PRId64 " is too large", big);
	diag_error(v->loc, "parameter '%s' (%s): the model's parameter bytes pass 2^63 and cannot be counted; %s",
		   v->name, ty, why);
	return -1;
}

/* The JSON summary; with a target's precision (c->precision), also the weights as that target
 * stores them ("stored_weight_bytes": an NVFP4 matrix product's weight at 4.5 bits, where
 * "parameter_bytes" counts every parameter at its declared dtype). */
static int emit_summary(Module *m, const PassCtx *c, FILE *f)
{
	Graph *g = ir_entry(m);
	Summary s = ir_summary(g);
	json_t *o = json_object();
	json_object_set_new(o, "graph", json_string(g->name));
	json_object_set_new(o, "nodes", json_integer(s.nodes));
	json_object_set_new(o, "parameters", json_integer(s.parameters));
	json_object_set_new(o, "parameter_bytes", json_integer(s.parameter_bytes));
	if (c->precision)
		json_object_set_new(o, "stored_weight_bytes", json_integer(pass_graph_weight_bytes(c, g, 1, 0)));
	/* a dimension left symbolic counts 0 FLOP: "flops" is null and the dims are named rather
	 * than print a 0 that reads as an answer (newcomer finding 13) */
	unsigned char *used = calloc((size_t)m->nsyms + 1, 1);
	int nfree = used ? ir_unbound_syms(m, g, used) : 0;
	if (nfree) {
		json_t *dims = json_array();
		char list[512];
		size_t len = 0;
		list[0] = 0;
		for (int k = 0; k < m->nsyms; k++)
			if (used[k]) {
				json_array_append_new(dims, json_string(m->symnames[k]));
				if (len < sizeof list)
					len += (size_t)snprintf(list + len, sizeof list - len, "%s%s=N", len ? "," : "", m->symnames[k]);
			}
		json_object_set_new(o, "flops", json_null());
		json_object_set_new(o, "unbound_dims", dims);
		fprintf(stderr, "aicc: note: \"flops\" is null: the shapes depend on %d unbound dimension(s); give --bind %s\n",
			nfree, list);
	} else if (s.flops < 9.2e18)
		json_object_set_new(o, "flops", json_integer((json_int_t)s.flops));
	else
		json_object_set_new(o, "flops", json_real(s.flops));
	free(used);
	if (c->train_step)
		json_object_set_new(o, "train_step", train_step_json(c->train_step));
	RtPacking pk;   /* --pack: the padding it saves */
	int causal = 0;
	ir_foreach_node(g, n)
		causal |= n->op == OP_Attention && rt_attr_int(&n->attrs, "is_causal", 0);
	if (c->seq_offsets && rt_packing(c->seq_offsets, c->nseq_offsets, causal, &pk) == 0)
		json_object_set_new(o, "packing", rt_packing_json(&pk));
	int rc = json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_INDENT(2));
	fputc('\n', f);
	json_decref(o);
	return rc;
}

/* phases: --kv-format fp8|bf16|auto: the caches' element format. */
static int kv_format_opt(CompileOpts *o)
{
	if (o->kv_format) {
		DType kf = !strcmp(o->kv_format, "fp8") || !strcmp(o->kv_format, "f8e4m3") ? DT_F8E4M3 : DT_INVALID;
		if (kf == DT_INVALID && strcmp(o->kv_format, "bf16") && strcmp(o->kv_format, "auto")) {
			drv_error("--kv-format '%s': expected fp8 (e4m3), bf16 or auto (the keys' dtype)", o->kv_format);
			return -1;
		}
		o->passes.ctx.kv_format = kf;
	}
	return 0;
}

/* phases: --phase mixed --mix NxS+P,...: one serving iteration of chunked prefills and decodes
 * flattened into B=1 sequence of S = sum(N*S) tokens (passes/kv_cache.c). */
static int mixed_opts(CompileOpts *o)
{
	PassMixGroup g[PASS_MIX_MAX];
	char err[256];
	int ng;
	if (o->batch || o->context) {
		drv_error("--phase mixed takes its batch and contexts from --mix, not --batch/--context");
		return -1;
	}
	if (!o->mix) {
		drv_error("--phase mixed needs --mix NxS+P,... (e.g. --mix 32x1+2048,1x512+0)");
		return -1;
	}
	if ((ng = pass_mix_parse(o->mix, g, err, sizeof err)) < 0) {
		drv_error("--mix: %s", err);
		return -1;
	}
	snprintf(o->phase_binds[0], sizeof o->phase_binds[0], "B=1");
	snprintf(o->phase_binds[1], sizeof o->phase_binds[1], "S=%lld", (long long)pass_mix_tokens(g, ng));
	o->binds[o->nbinds++] = o->phase_binds[0];
	o->binds[o->nbinds++] = o->phase_binds[1];
	o->passes.ctx.phase = o->phase;
	o->passes.ctx.mix = o->mix;
	return 0;
}

/* phases: --phase binds B=--batch and S (prefill: --context; decode: 1 new token), after the
 * --bind options so that they win, and tells the kv-cache pass the phase and the past length. */
static int phase_opts(CompileOpts *o)
{
	if (o->passes.ctx.seq_offsets && (!o->phase || strcmp(o->phase, "train"))) {
		drv_error("--pack goes with --phase train");
		return -1;
	}
	if (!o->phase) {
		if (o->batch || o->context || o->mix)
			drv_error("--batch, --context and --mix go with --phase prefill|decode|mixed|train");
		else if (o->kv_format)
			drv_error("--kv-format goes with --phase prefill|decode|mixed");
		else if (o->passes.ctx.lr > 0 || o->passes.ctx.grad_accum)
			drv_error("--lr and --grad-accum go with --phase train");
		return o->batch || o->context || o->mix || o->kv_format || o->passes.ctx.lr > 0 || o->passes.ctx.grad_accum ? -1 : 0;
	}
	if (o->nbinds > 62) {
		drv_error("too many --bind options");
		return -1;
	}
	if (kv_format_opt(o) < 0)
		return -1;
	if (strcmp(o->phase, "mixed") == 0)
		return mixed_opts(o);
	if (o->mix) {
		drv_error("--mix goes with --phase mixed");
		return -1;
	}
	int decode = strcmp(o->phase, "decode") == 0, train = strcmp(o->phase, "train") == 0;
	if (!decode && !train && strcmp(o->phase, "prefill")) {
		drv_error("unknown --phase '%s' (expected prefill, decode, mixed or train)", o->phase);
		return -1;
	}
	const PassCtx *pc = &o->passes.ctx;
	if (pc->seq_offsets) {   /* the packed row's tokens are the sequence length */
		long long sum = (long long)pc->seq_offsets[pc->nseq_offsets - 1];
		if (!o->context)
			o->context = sum;
		if (o->context != sum) {
			drv_error("--pack's lengths add up to %lld tokens, but --context is %lld", sum, (long long)o->context);
			return -1;
		}
	}
	if (!o->context) {
		drv_error("--phase %s needs --context S (%s)", o->phase,
			  decode ? "past tokens" : train ? "tokens per sequence" : "prompt tokens");
		return -1;
	}
	if (train && o->kv_format) {
		drv_error("--kv-format goes with --phase prefill|decode|mixed");
		return -1;
	}
	snprintf(o->phase_binds[0], sizeof o->phase_binds[0], "B=%lld", o->batch ? o->batch : 1);
	snprintf(o->phase_binds[1], sizeof o->phase_binds[1], "S=%lld", decode ? 1 : o->context);
	o->binds[o->nbinds++] = o->phase_binds[0];
	o->binds[o->nbinds++] = o->phase_binds[1];
	o->passes.ctx.phase = o->phase;
	o->passes.ctx.context = decode ? o->context : 0;
	if (!train && (o->passes.ctx.lr > 0 || o->passes.ctx.grad_accum)) {
		drv_error("--lr and --grad-accum go with --phase train");
		return -1;
	}
	return 0;
}

/* Without --emit, the kind -o's extension names (else summary); with both, they must agree. */
static int emit_from_output(CompileOpts *o)
{
	const char *k = drv_output_kind(o->output);
	if (!o->emit) {
		o->emit = k ? k : "summary";
		return 0;
	}
	if (k && strcmp(k, o->emit) != 0) {
		drv_output_mismatch(o->output, k, o->emit);
		return -1;
	}
	return 0;
}

static int parse_opts(int argc, char **argv, CompileOpts *o)
{
	memset(o, 0, sizeof *o);
	pass_opts_init(&o->passes);
	o->emit = NULL;              /* --emit, else -o's extension, else summary */
	o->target = NULL;            /* viz: NULL means reference, and pictures show the IR */
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			compile_help();
			exit(EXIT_OK);
		}
		if ((r = opt_value(argc, argv, &i, "--emit", &o->emit)) ||
		    (r = opt_value(argc, argv, &i, "-o", &o->output)) ||
		    (r = opt_value(argc, argv, &i, "--target", &o->target)) ||
		    (r = opt_value(argc, argv, &i, "--machine", &o->machine)) ||
		    (r = opt_value(argc, argv, &i, "--precision", &o->precision)) ||
		    (r = opt_value(argc, argv, &i, "--print-after", &o->print_after)) ||
		    (r = opt_value(argc, argv, &i, "--init-unbound", &o->init_unbound))) {
			if (r < 0)
				return -1;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--bind", &v))) {
			if (r < 0)
				return -1;
			if (o->nbinds == 64) {
				drv_error("too many --bind options");
				return -1;
			}
			o->binds[o->nbinds++] = v;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--shape", &v))) {
			if (r < 0)
				return -1;
			if (o->nshapes == 64) {
				drv_error("too many --shape options");
				return -1;
			}
			o->shapes[o->nshapes++] = v;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--const", &v))) {
			if (r < 0)
				return -1;
			if (o->nconsts == 64) {
				drv_error("too many --const options");
				return -1;
			}
			o->consts[o->nconsts++] = v;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--set", &v))) {
			if (r < 0)
				return -1;
			if (o->nsets == 64) {
				drv_error("too many --set options");
				return -1;
			}
			o->sets[o->nsets++] = v;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--grad-accum", &v))) {   /* phase train */
			char *end;
			long k = r > 0 ? strtol(v, &end, 10) : 0;
			if (r < 0 || end == v || *end || k < 1 || k > 4096) {
				if (r > 0)
					drv_error("--grad-accum expects an integer in 1..4096, got '%s'", v);
				return -1;
			}
			o->passes.ctx.grad_accum = (int)k;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--lr", &v))) {   /* phase train */
			char *end;
			double lr = r > 0 ? strtod(v, &end) : 0;
			if (r < 0 || end == v || *end || !(lr > 0 && lr < 1e6)) {
				if (r > 0)
					drv_error("--lr expects a positive number, got '%s'", v);
				return -1;
			}
			o->passes.ctx.lr = lr;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--kv-format", &o->kv_format))) {
			if (r < 0)
				return -1;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--phase", &o->phase)) ||   /* phases */
		    (r = opt_value(argc, argv, &i, "--mix", &o->mix))) {
			if (r < 0)
				return -1;
			continue;
		}
		if ((r = opt_value(argc, argv, &i, "--batch", &v)) || (r = opt_value(argc, argv, &i, "--context", &v))) {
			char *end;
			long long n = r > 0 ? strtoll(v, &end, 10) : 0;
			if (r < 0 || end == v || *end || n < 1) {
				if (r > 0)
					drv_error("%s expects a positive integer, got '%s'", argv[i - 1], v);
				return -1;
			}
			*(strcmp(argv[i - 1], "--batch") == 0 ? &o->batch : &o->context) = n;
			continue;
		}
		if ((r = drv_picture_opt(argc, argv, &i, &o->pic))) {   /* viz */
			if (r < 0)
				return -1;
			continue;
		}
		if (strcmp(argv[i], "--parse-only") == 0) {
			o->parse_only = 1;
			continue;
		}
		if (strcmp(argv[i], "--print-weights") == 0) {
			o->passes.ctx.print_elide = -1;
			continue;
		}
		if (strcmp(argv[i], "--print-after-all") == 0)
			o->print_after_all = 1;    /* and, for the passes: */
		if ((r = pass_opts_parse(argc, argv, &i, &o->passes))) {
			if (r < 0)
				return -1;
			continue;
		}
		if (drv_operand(argv[i], &o->model, "model", "compile") < 0)
			return -1;
	}
	if (!o->model) {
		drv_error("no model given (see aicc compile --help)");
		return -1;
	}
	if (emit_from_output(o) < 0)
		return -1;
	if (strcmp(o->emit, "ir") && strcmp(o->emit, "summary") && strcmp(o->emit, "plan") && !drv_is_picture(o->emit)) {
		drv_error("unknown --emit kind '%s' (expected ir, summary, plan, dot, svg or png)", o->emit);
		return -1;
	}
	if (phase_opts(o) < 0)
		return -1;
	PassCtx *wc = &o->passes.ctx;
	int train = o->phase && !strcmp(o->phase, "train");
	/* --dp alone (with --zero) and a plan: the data-parallel step plan that runs (autodiff) */
	wc->dp_plan = train && wc->dp > 1 && !strcmp(o->emit, "plan") && !wc->cp && !wc->vstages && !wc->train_search &&
		      !wc->recompute && wc->tp <= 1 && wc->pp <= 1 && wc->ep <= 1;
	const PassCtx *pc = wc;
	if (!train && (pc->dp || pc->cp || pc->zero || pc->vstages)) {
		drv_error("--dp, --cp, --zero and --pp-virtual go with --phase train");
		return -1;
	}
	if (pc->recompute && !pass_train_parallel(pc)) {
		drv_error("--recompute goes with a parallel training step (--phase train with --dp/--cp/--zero/--pp-virtual)");
		return -1;
	}
	/* a step plan unrolls its micro-batches; a priced parallel step multiplies one (Megatron's
	 * 1T row of SC'21 Table 1: 512 per replica) */
	if (train && !pass_train_parallel(pc) && pc->grad_accum > 64) {
		drv_error("--grad-accum above 64 goes with a parallel training step (--dp/--cp/--zero/--pp-virtual): "
			  "a step plan unrolls its %d micro-batches", pc->grad_accum);
		return -1;
	}
	if (pass_train_parallel(pc) && strcmp(o->emit, "summary") && strcmp(o->emit, "ir")) {
		drv_error("a parallel training step (--phase train with --dp/--cp/--zero/--pp-virtual) is priced, not lowered: "
			  "use --emit summary (its train_step); --dp alone (with --zero) plans a data-parallel step that runs");
		return -1;
	}
	return 0;
}

/* After failed shape inference: names the inputs whose values it needed and how to give them. */
static void note_value_inputs(Module *m)
{
	Graph *g = ir_entry(m);
	Value **need = g ? calloc((size_t)g->nin + 1, sizeof *need) : NULL;
	int n = need ? drv_value_inputs(m, need) : 0;
	for (int i = 0; i < n; i++)
		fprintf(stderr, "aicc: note: input '%s' determines a shape; give its value at compile time "
			"with --const %s=FILE(.npy|.pb)\n", need[i]->name, need[i]->name);
	free(need);
}

/* What one compile shares between its passes and its lowering: the target, the machine (loaded
 * once) and --precision (parsed once, against the target when a plan is built or --target given). */
typedef struct Compile {
	const Target *t;
	TgtMachine tm;
	Precision prec;
	int plan;            /* a plan is built (--emit plan, or a picture of one) */
	char pipeline[1024]; /* the passes that ran ("" for none): the plan's source records them */
} Compile;

/* A plan for --machine without --target: the target the machine's devices are
 * (tgt_for_machine), said in a remark; the reference target when several or none fit (and for
 * the reference machine).  0, or -1 after the loader's message. */
static int infer_target(CompileOpts *o)
{
	Machine *m = machine_load(o->machine, NULL);
	if (!m)
		return -1;
	char why[160];
	const Target *t = tgt_for_machine(m, why, sizeof why);
	if (t && strcmp(t->name, "reference")) {
		o->target = t->name;
		fprintf(stderr, "aicc: remark: --machine %s without --target: compiling for target %s (%s); --target "
			"reference gives the unfused numerical reference\n", o->machine, t->name,
			*why ? why : "the machine it is written for");
	} else if (!t)
		fprintf(stderr, "aicc: remark: --machine %s without --target: no one target fits its devices; "
			"compiling for the reference target (aicc targets lists the others)\n", o->machine);
	machine_free(m);     /* t is the target table's; the machine is loaded again with the target */
	return 0;
}

/* Resolves the target, loads the machine and parses --precision when the passes, the lowering
 * or --precision need them, and hands both to the passes.  0, or -1 after a message. */
static int prepare(CompileOpts *o, Compile *c)
{
	if (!o->target && o->machine && strcmp(o->emit, "plan") == 0 && infer_target(o) < 0)
		return -1;
	c->t = tgt_find(o->target ? o->target : "reference");
	if (!c->t) {
		char sug[512];
		tgt_suggest(o->target, sug, sizeof sug);
		drv_error("unknown target '%s'%s", o->target, sug);
		return -1;
	}
	c->plan = strcmp(o->emit, "plan") == 0 || (drv_is_picture(o->emit) && o->target);
	o->passes.o1 = c->t->pipeline;
	o->passes.ctx.target = o->target ? c->t : NULL;
	const char *list = pass_opts_pipeline(&o->passes, c->pipeline, sizeof c->pipeline);
	if (list && !*list)
		return -1;
	if (!list)
		c->pipeline[0] = 0;
	/* a --machine or --set the output does not use is still loaded: a bad one is an error */
	if (!list && !c->plan && !o->precision && !o->machine && !o->nsets)
		return 0;
	RtError e = { 0 };
	if (drv_open_machine(c->plan || o->target ? c->t : NULL, o->machine, o->sets, o->nsets, o->precision, &c->tm,
			     &c->prec, &e) < 0) {
		diag_print_located(e.msg);
		return -1;
	}
	o->passes.ctx.machine = c->tm.m;
	o->passes.ctx.precision = o->precision ? &c->prec : NULL;
	return 0;
}

/* The plan of --emit plan; every bound symbol, `dim` override and the --init-unbound spec are
 * recorded so --check can rebuild the graph. */
static Plan *build(const CompileOpts *o, const Compile *c, Module *m, const DrvBinds *db)
{
	char binds[4096];
	drv_recorded_binds(m, db, binds, sizeof binds);
	BuildOpts b = { o->model, *binds ? binds : NULL, c->t->name, o->machine, o->sets, o->nsets, o->precision,
			o->init_unbound, &c->tm, &c->prec };
	Plan *p = drv_build_plan(m, &b);
	if (p && o->passes.ctx.remark_mask == ~0u)   /* --remarks=all: where the cost model has no coverage */
		tgt_coverage_remarks(p, stderr);
	RtError e = { 0 };
	if (p && ((o->phase && !o->mix && plan_set_source_phase(p, o->phase, o->context, &e) < 0) ||   /* phases */
		  plan_set_source_passes(p, c->pipeline, &e) < 0)) {
		drv_report(e.msg);
		plan_free(p);
		return NULL;
	}
	if (p && o->phase && !strcmp(o->phase, "train")) {
		p->source.model_flops = o->passes.ctx.model_flops;
		p->source.micro_batches = (o->passes.ctx.grad_accum > 1 ? o->passes.ctx.grad_accum : 1) *
					  (o->passes.ctx.dp_plan ? o->passes.ctx.dp : 1);   /* the replicas' too */
	}
	return p;
}

int cmd_compile(int argc, char **argv)
{
	CompileOpts o;
	if (parse_opts(argc, argv, &o) < 0)
		return EXIT_USER;
	/* --bind values go to the parser first: they may replace `dim` constants */
	DrvBinds db = { 0 };
	for (int i = 0; i < o.nbinds; i++) {
		if (drv_binds_parse(&db, o.binds[i]) < 0) {
			drv_binds_free(&db);
			return EXIT_USER;
		}
		if (o.binds[i] != o.phase_binds[0] && o.binds[i] != o.phase_binds[1])
			db.nuser = db.n;   /* --phase's B and S come last and are not checked */
	}
	char what[600];   /* viz: a progress line when a step takes more than 2 s */
	snprintf(what, sizeof what, "reading %s", o.model);
	progress_begin(what, 0);
	Module *m = drv_load_model_binds(o.model, &db);
	if (!m) {
		drv_binds_free(&db);
		return EXIT_USER;
	}
	int rc = EXIT_USER;
	Compile c = { 0 };
	if (o.init_unbound && drv_init_unbound(m, o.init_unbound) < 0)
		goto out;
	for (int i = 0; i < o.nshapes; i++)
		if (drv_apply_shape(m, o.shapes[i]) < 0)
			goto out;
	for (int i = 0; i < o.nconsts; i++)
		if (drv_apply_const(m, o.consts[i]) < 0)
			goto out;
	m->eval_limit = o.passes.ctx.fold_limit;   /* --fold-limit bounds the compile-time evaluator too */
	if (ir_verify(m) > 0)
		goto out;
	maybe_print(&o, m, "verify");
	if (o.parse_only && strcmp(o.emit, "ir") != 0) {
		drv_error("--parse-only goes with --emit ir");
		goto out;
	}
	if (!o.parse_only && ir_infer_shapes(m) > 0) {
		note_value_inputs(m);
		goto out;
	}
	maybe_print(&o, m, "infer-shapes");
	o.passes.ctx.print_after = o.print_after;
	if (!o.parse_only && prepare(&o, &c) < 0)
		goto out;
	progress_begin("running the passes", 0);
	if (!o.parse_only && pass_opts_run(&o.passes, m) > 0)
		goto out;
	snprintf(what, sizeof what, "lowering for %s", o.target ? o.target : "reference");
	progress_begin(what, 0);
	Plan *plan = NULL;
	int picture = drv_is_picture(o.emit);   /* viz */
	if (c.plan && !(plan = build(&o, &c, m, &db)))
		goto out;
	/* a plan and its weights file are committed together, the plan last; a picture needs none */
	OutFile files[2], *wf = &files[0], *f0 = &files[1];
	int nw = plan && !picture ? drv_write_weights(plan, o.output, wf) : 0;
	if (nw < 0) {
		plan_free(plan);
		goto out;
	}
	if (!plan && !picture && strcmp(o.emit, "ir") != 0 && summary_overflow(m) < 0)
		goto out;
	progress_begin("writing the output", 0);
	OutFile *fp = nw ? f0 : wf;
	if (out_open(fp, o.output) < 0) {
		if (nw)
			out_abort(wf);
		plan_free(plan);
		goto out;
	}
	if (picture) {   /* viz */
		if (drv_emit_picture(m, plan, o.emit, &o.pic, fp->f) < 0) {
			plan_free(plan);
			out_abort(fp);
			goto out;
		}
	} else if (plan) {
		/* record the model by absolute path: `aicc run --check` rebuilds it from any directory */
		char *abs = plan->source.model && plan->source.model[0] != '/' ? realpath(plan->source.model, NULL) : NULL;
		if (abs) {
			char *bi = plan->source.binds ? strdup(plan->source.binds) : NULL;
			char *pr = plan->source.precision ? strdup(plan->source.precision) : NULL;
			RtError e = { 0 };
			if (plan_set_source(plan, abs, bi, pr, &e) < 0)
				drv_report(e.msg);
			free(bi), free(pr), free(abs);
		}
		/* and its bytes' hash: --check refuses to rebuild the reference from an edited source */
		if (plan->source.model && drv_model_hash(plan->source.model, plan->source.model_hash) < 0)
			plan->source.model_hash[0] = 0;
		if (plan_write(plan, fp->f) < 0) {
			drv_error("cannot write the plan to '%s'", o.output ? o.output : "-");
			if (nw)
				out_abort(wf);
			out_abort(fp);
			plan_free(plan);
			goto out;
		}
	}
	else if (strcmp(o.emit, "ir") == 0)
		ir_print_module_elided(m, fp->f, o.passes.ctx.print_elide);
	else
		emit_summary(m, &o.passes.ctx, fp->f);
	plan_free(plan);
	rc = out_commit_group(wf, nw ? 2 : 1) < 0 ? EXIT_USER : EXIT_OK;
out:
	progress_end();
	if (rc != EXIT_OK && drv_internal)
		rc = EXIT_INTERNAL;
	if (c.tm.m)
		tgt_machine_free(&c.tm);
	pass_ctx_free(&o.passes.ctx);
	drv_binds_free(&db);
	ir_module_free(m);
	return rc;
}
