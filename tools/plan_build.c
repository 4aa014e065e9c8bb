/* tools/plan_build.c: from a shape-inferred module to a plan (tools/plan_build.h): dimension
 * binds (`dim` overrides included), input shapes, inputs turned into constants (--const), the
 * graph inputs whose values shape inference needs, lowering, the weight files written beside a
 * plan, and the reference rebuild for --check: re-read the model a plan records with the same
 * binds and --init-unbound spec, verify, infer shapes and lower it with the `reference` target
 * at the plan's precision. */
#include "tools/plan_build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/frontend.h"
#include "ir/diag.h"
#include "ir/suggest.h"
#include "passes/pass.h"
#include "runtime/npy.h"
#include "targets/target.h"
#include "tools/driver.h"

int drv_binds_parse(DrvBinds *b, const char *spec)
{
	char *s = strdup(spec), *save = NULL;
	int rc = 0;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end = NULL;
		errno = 0;
		long long v = eq ? strtoll(eq + 1, &end, 10) : -1;
		if (!eq || eq == tok || !end || *end || errno || v < 0 || eq[1] < '0' || eq[1] > '9') {
			drv_error("--bind expects NAME=VALUE with a positive integer, got '%s'", tok);
			rc = -1;
			break;
		}
		if (v == 0) {   /* every tensor with that dimension would be empty: 0 FLOP, nothing to run */
			drv_error("--bind %s: a dimension must be at least 1 (%.*s=0 leaves every tensor of that dimension "
				  "empty)", tok, (int)(eq - tok), tok);
			rc = -1;
			break;
		}
		*eq = 0;
		if (b->n == b->cap) {
			b->cap = b->cap ? 2 * b->cap : 16;
			FeBind *na = realloc(b->a, (size_t)b->cap * sizeof *na);
			if (!na) {
				fputs("aicc: out of memory\n", stderr);
				abort();
			}
			b->a = na;
		}
		b->a[b->n++] = (FeBind){ strdup(tok), v, 0 };
	}
	free(s);
	return rc;
}

void drv_binds_free(DrvBinds *b)
{
	for (int i = 0; i < b->n; i++)
		free((char *)b->a[i].name);
	free(b->a);
	memset(b, 0, sizeof *b);
}

int drv_apply_binds(Module *m, const char *spec)
{
	DrvBinds b = { 0 };
	int rc = drv_binds_parse(&b, spec);
	for (int i = 0; rc == 0 && i < b.n; i++)
		ir_bind(m, b.a[i].name, b.a[i].value);
	drv_binds_free(&b);
	return rc;
}

/* " (did you mean 'x'?; valid: a, b)": the entry graph's inputs nearest to the len bytes of
 * name, into buf. */
static void model_inputs(Module *m, const char *name, size_t len, char *buf, size_t n)
{
	Graph *g = ir_entry(m);
	const char **names = calloc((size_t)(g ? g->nin : 0) + 1, sizeof *names);
	char want[256];
	snprintf(want, sizeof want, "%.*s", (int)len, name);
	for (int i = 0; names && g && i < g->nin; i++)
		names[i] = g->inputs[i]->name;
	buf[0] = 0;
	if (names)
		diag_suggest(buf, n, want, names, g ? g->nin : 0);
	free(names);
}

/* The entry graph's input called name (len bytes of it), or NULL. */
static Value *find_input(Module *m, const char *name, size_t len)
{
	Graph *g = ir_entry(m);
	for (int i = 0; g && i < g->nin; i++)
		if (strlen(g->inputs[i]->name) == len && strncmp(g->inputs[i]->name, name, len) == 0)
			return g->inputs[i];
	return NULL;
}

int drv_shape_input(Module *m, Value *x, int rank, const int64_t *dims, const char *what)
{
	Dim d[IR_MAX_RANK];
	if (x->type.rank >= 0 && x->type.rank != rank) {
		drv_error("%s: input '%s' has rank %d, not %d", what, x->name, x->type.rank, rank);
		return -1;
	}
	for (int i = 0; i < rank; i++) {
		Dim have = x->type.rank >= 0 ? x->type.dims[i] : dim_c(dims[i]);
		char buf[256];
		if (dim_isconst(have) && have.k != dims[i]) {
			drv_error("%s: dim %d of input '%s' is %lld, not %lld", what, i, x->name,
				  (long long)have.k, (long long)dims[i]);
			return -1;
		}
		if (!dim_isconst(have) && ir_sym_find(m, dim_str(m, have, buf, sizeof buf)) >= 0)
			ir_bind(m, buf, dims[i]);
		d[i] = dim_c(dims[i]);
	}
	x->type = ir_type(m, x->type.dt, rank, d);
	return 0;
}

/* Parses "x=1,3,48,262": input x of the entry graph gets that shape; each symbolic dim of x that
 * is a plain symbol is bound to the given value, a constant dim must agree.  -1 on errors. */
int drv_apply_shape(Module *m, const char *spec)
{
	const char *eq = strchr(spec, '=');
	Value *x = eq ? find_input(m, spec, (size_t)(eq - spec)) : NULL;
	if (!x) {
		char sug[512] = "";
		if (eq)
			model_inputs(m, spec, (size_t)(eq - spec), sug, sizeof sug);
		drv_error("--shape expects INPUT=D0,D1,... naming an input of the model, got '%s'%s", spec, sug);
		return -1;
	}
	int64_t dims[IR_MAX_RANK];
	int rank = 0;
	for (const char *p = eq + 1; *p; rank++) {
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0 || (*end && *end != ',') || (*end == ',' && !end[1]) ||
		    rank == IR_MAX_RANK || *p == ' ' || *p == '+') {
			drv_error("--shape %s: dims must be non-negative integers separated by commas", spec);
			return -1;
		}
		dims[rank] = v;
		p = *end ? end + 1 : end;
	}
	char what[300];
	snprintf(what, sizeof what, "--shape %.280s", spec);
	return drv_shape_input(m, x, rank, dims, what);
}

int drv_read_tensor(const char *path, RtTensor *t)
{
	RtError e = { 0 };
	size_t n = strlen(path);
	int rc;
	if (n > 3 && strcmp(path + n - 3, ".pb") == 0) {
		char *name = NULL;
		rc = fe_read_tensor_pb(path, t, &name, &e);
		free(name);
	} else
		rc = rt_npy_read(path, t, &e);
	if (rc < 0)
		drv_report(e.msg);
	return rc;
}

int drv_make_const(Module *m, Value *x, const RtTensor *t, const char *what)
{
	if (x->type.dt != t->dtype) {
		drv_error("%s: input '%s' is %s, the data %s", what, x->name, rt_dtype_name(x->type.dt),
			  rt_dtype_name(t->dtype));
		return -1;
	}
	if (drv_shape_input(m, x, t->rank, t->dims, what) < 0)
		return -1;
	RtTensor *held = arena_alloc(m->arena, sizeof *held);
	RtError e = { 0 };
	if (rt_tensor_alloc(held, t->dtype, t->rank, t->dims, &e) < 0) {
		fprintf(stderr, "aicc: error: %s\n", e.msg);
		return -1;
	}
	for (int64_t i = 0; i < t->n; i++)
		if (rt_dtypes[t->dtype].storage == S_I64)
			rt_seti(held, i, rt_geti(t, i));
		else
			rt_set(held, i, rt_get(t, i));
	held->tensor_scale = t->tensor_scale;
	ParamInit *pi = arena_alloc(m->arena, sizeof *pi);
	pi->kind = INIT_DATA;
	pi->data = held;
	ir_input_to_param(ir_entry(m), x, pi);
	return 0;
}

int drv_apply_const(Module *m, const char *spec)
{
	const char *eq = strchr(spec, '=');
	Value *x = eq ? find_input(m, spec, (size_t)(eq - spec)) : NULL;
	if (!x || !eq[1]) {
		char sug[512] = "";
		if (eq && !x)
			model_inputs(m, spec, (size_t)(eq - spec), sug, sizeof sug);
		drv_error("--const expects INPUT=FILE(.npy|.pb) naming an input of the model, got '%s'%s", spec, sug);
		return -1;
	}
	RtTensor t;
	if (drv_read_tensor(eq + 1, &t) < 0)
		return -1;
	char what[300];
	snprintf(what, sizeof what, "--const %.280s", spec);
	int rc = drv_make_const(m, x, &t, what);
	rt_tensor_free(&t);
	return rc;
}

/* Marks the graph inputs v's value depends on; Shape and Size read only their input's type. */
static void mark_inputs(Value *v, unsigned char *seen, unsigned char *need)
{
	if (!v || seen[v->id])
		return;
	seen[v->id] = 1;
	if (v->kind == V_INPUT)
		need[v->id] = 1;
	if (v->kind != V_NODE || v->def->op == OP_Shape || v->def->op == OP_Size)
		return;
	for (int i = 0; i < v->def->nin; i++)
		mark_inputs(v->def->in[i], seen, need);
}

int drv_value_inputs(Module *m, Value **out)
{
	Graph *g = ir_entry(m);
	Value *const *unk;
	int nunk = ir_unknown_values(m, &unk), n = 0;
	if (!g)
		return 0;
	unsigned char *seen = calloc((size_t)g->nvalues + 1, 2), *need = seen + g->nvalues + 1;
	if (!seen)
		return 0;
	for (int i = 0; i < nunk; i++)
		if (unk[i]->graph == g)
			mark_inputs(unk[i], seen, need);
	for (int i = 0; i < g->nin; i++)
		if (need[g->inputs[i]->id])
			out[n++] = g->inputs[i];
	free(seen);
	return n;
}

int drv_write_weights(Plan *p, const char *out, OutFile *wf)
{
	int ndata = 0;
	for (int i = 0; i < p->nconsts; i++)
		ndata += p->consts[i].kind == PINIT_DATA;
	if (!ndata)
		return 0;
	if (!out || strcmp(out, "-") == 0) {
		drv_error("the plan has %d constants too large to write as text; give -o FILE.aip, and "
			  "they go to FILE.weights.safetensors beside it", ndata);
		return -1;
	}
	RtError e = { 0 };
	if (rt_out_check_name(out, &e) < 0) {
		drv_report(e.msg);
		return -1;
	}
	size_t n = strlen(out);
	if (n > 4 && strcmp(out + n - 4, ".aip") == 0)
		n -= 4;
	char path[4096];
	if ((size_t)snprintf(path, sizeof path, "%.*s.weights.safetensors", (int)n, out) >= sizeof path) {
		drv_error("output path too long: '%s'", out);
		return -1;
	}
	const char *slash = strrchr(path, '/');
	if (out_open(wf, path) < 0)
		return -1;
	if (plan_externalize(p, wf->f, slash ? slash + 1 : path, &e) < 0) {
		drv_error("%s: %s", path, e.msg);
		out_abort(wf);
		return -1;
	}
	return 1;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && strcmp(s + n - k, suf) == 0;
}

Module *drv_load_model(const char *path)
{
	return has_suffix(path, ".onnx") ? fe_import_onnx(path) : fe_parse_aig(path);
}

int drv_model_hash(const char *path, char out[17])
{
	char **ext = NULL;
	int next = 0, rc = -1;
	if (has_suffix(path, ".onnx") && fe_onnx_external_files(path, &ext, &next) < 0)
		next = 0;   /* not readable as a model: the file's own bytes (the load says what is wrong) */
	const char **paths = malloc(sizeof *paths * (size_t)(next + 1));
	char **owned = calloc((size_t)next + 1, sizeof *owned);
	if (paths && owned) {
		const char *slash = strrchr(path, '/');
		int dl = slash ? (int)(slash - path) + 1 : 0;
		paths[0] = path;
		rc = 0;
		for (int i = 0; i < next && rc == 0; i++) {
			size_t n = (size_t)dl + strlen(ext[i]) + 1;
			if (!(owned[i] = malloc(n)))
				rc = -1;
			else
				snprintf(owned[i], n, "%.*s%s", dl, path, ext[i]), paths[i + 1] = owned[i];
		}
		if (rc == 0)
			rc = plan_hash_files(paths, next + 1, out);
	}
	for (int i = 0; i < next; i++)
		free(ext[i]), free(owned ? owned[i] : NULL);
	free(ext), free(owned), free(paths);
	return rc;
}

/* The --bind names b->a[0..nuser) that m has neither as a `dim` constant nor as a symbol: an
 * error each, with the names it has; -1 when any.  A module without any (a printed, fully bound
 * one) gets a note instead: its shapes are fixed, so the binds change nothing. */
static int unknown_binds(const Module *m, const DrvBinds *b, const char *path)
{
	int rc = 0, n = 0;
	for (const struct DimConst *c = m->dimconsts; c; c = c->next)
		n++;
	const char **names = malloc(sizeof *names * (size_t)(n + m->nsyms + 1));
	if (!names)
		return -1;
	n = 0;
	for (int i = 0; i < m->nsyms; i++)
		names[n++] = m->symnames[i];
	for (const struct DimConst *c = m->dimconsts; c; c = c->next)
		if (ir_sym_find(m, c->name) < 0)
			names[n++] = c->name;
	for (int i = 0; i < b->nuser && i < b->n; i++) {
		if (b->a[i].used || ir_sym_find(m, b->a[i].name) >= 0)
			continue;
		char sug[512];
		diag_suggest(sug, sizeof sug, b->a[i].name, names, n);
		if (n) {
			drv_error("--bind %s=%lld: %s has no dimension symbol or `dim` constant '%s'%s", b->a[i].name,
				  (long long)b->a[i].value, path, b->a[i].name, sug);
			rc = -1;
		} else   /* a printed, fully bound module read again with its binds: nothing to bind */
			fprintf(stderr, "aicc: note: --bind %s=%lld ignored: %s has no dimension symbols or `dim` "
				"constants (every shape is fixed)\n", b->a[i].name, (long long)b->a[i].value, path);
	}
	free(names);
	return rc;
}

Module *drv_load_model_binds(const char *path, DrvBinds *b)
{
	Module *m = has_suffix(path, ".onnx") ? fe_import_onnx(path) : fe_parse_aig_opts(path, b->a, b->n);
	if (m && unknown_binds(m, b, path) < 0) {
		ir_module_free(m);
		return NULL;
	}
	for (int i = 0; m && i < b->n; i++)
		if (!b->a[i].used)
			ir_bind(m, b->a[i].name, b->a[i].value);
	return m;
}

/* Every bound symbol of m as "A=1,B=2" (what --check must bind again), in buf. */
const char *drv_bound_symbols(const Module *m, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < m->nsyms && len < n; i++)
		if (m->symbound[i])
			len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", len ? "," : "", m->symnames[i],
						(long long)m->symval[i]);
	return buf;
}

const char *drv_recorded_binds(const Module *m, const DrvBinds *b, char *buf, size_t n)
{
	drv_bound_symbols(m, buf, n);
	size_t len = strlen(buf);
	for (int i = 0; i < b->n && len < n; i++) {
		int last = 1;      /* record each overridden name once, with the value that won */
		for (int j = i + 1; j < b->n; j++)
			last &= strcmp(b->a[j].name, b->a[i].name) != 0;
		if (b->a[i].used && last)
			len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", len ? "," : "", b->a[i].name,
						(long long)b->a[i].value);
	}
	return buf;
}

int drv_open_machine(const Target *t, const char *machine, const char *const *sets, int nsets, const char *spec,
		     TgtMachine *tm, Precision *prec, RtError *e)
{
	const char *name = machine ? machine : t ? t->default_machine : "reference";
	if (tgt_machine_load(name, sets, nsets, tm, e) < 0)
		return -1;
	if (prec_parse(spec, t, tm->m, prec, e) < 0) {
		tgt_machine_free(tm);
		return -1;
	}
	return 0;
}

/* Lowers with the target named in o; the error (if any) in e. */
Plan *drv_lower(Module *m, const BuildOpts *o, RtError *e)
{
	const Target *t = tgt_find(o->target);
	if (!t) {
		char sug[512];
		tgt_suggest(o->target, sug, sizeof sug);
		rt_errorf(e, RT_EUSER, "aicc: error: unknown target '%s'%s", o->target, sug);
		return NULL;
	}
	Graph *g = ir_entry(m);
	if (!g) {
		rt_errorf(e, RT_EUSER, "aicc: error: the model defines no graph");
		return NULL;
	}
	TgtMachine mach = { 0 };
	Precision prec;
	if (!o->loaded && drv_open_machine(t, o->machine, o->sets, o->nsets, o->precision, &mach, &prec, e) < 0)
		return NULL;
	if (o->loaded && !o->prec && prec_parse(o->precision, t, o->loaded->m, &prec, e) < 0)
		return NULL;
	TgtInput in = { m, g, o->loaded ? o->loaded : &mach, o->prec ? o->prec : &prec, o->model, o->binds };
	Plan *p = tgt_lower(t, &in, e);
	if (p && tgt_annotate_bands(p, e) < 0) {   /* the error band of every prediction */
		plan_free(p);
		p = NULL;
	}
	if (!o->loaded)
		tgt_machine_free(&mach);
	return p;
}

Plan *drv_build_plan(Module *m, const BuildOpts *o)
{
	RtError e = { 0 };
	Plan *p = drv_lower(m, o, &e);
	if (p && ((o->init && plan_set_source_init(p, o->init, &e) < 0) || drv_debug_internal("lower", &e) < 0)) {
		plan_free(p);
		p = NULL;
	}
	if (!p)
		diag_print_located(e.msg);
	if (!p && e.code == RT_EINTERNAL)
		drv_internal = 1;       /* the command exits 2 */
	return p;
}

/* phases: a plan of a serving phase is checked against the same phase of the model: the
 * kv-cache pass (only) runs again with the recorded phase and context; a training step's
 * autodiff pass with the learning rate its AdamW instructions carry and the packed sequences
 * (--pack) its Attention instructions carry. */
static int rebuild_phase(const Plan *p, Module *m)
{
	if (!p->source.phase)
		return 0;
	PassCtx c;
	pass_ctx_init(&c);
	c.phase = p->source.phase;
	int train = strcmp(c.phase, "train") == 0;
	c.context = train ? 0 : p->source.context;
	for (int s = 0; train && s < p->nstreams && c.lr == 0; s++)
		for (int i = 0; i < p->streams[s].nins && c.lr == 0; i++)
			if (p->streams[s].ins[i].kind == PI_KERNEL && p->streams[s].ins[i].op == RT_OP_AdamW)
				c.lr = rt_attr_float(&p->streams[s].ins[i].attrs, "lr", 0);
	int noff, causal;
	const int64_t *off = train ? rt_plan_seq_offsets(p, &noff, &causal) : NULL;
	if (off && (c.seq_offsets = malloc((size_t)noff * sizeof *off))) {
		memcpy(c.seq_offsets, off, (size_t)noff * sizeof *off);
		c.nseq_offsets = noff;
	}
	c.grad_accum = train ? (int)p->source.micro_batches : 0;
	int e = pass_run_pipeline(m, &c, train ? "autodiff" : "kv-cache");
	pass_ctx_free(&c);
	return e;
}

/* When the reference does not fit its one device, the lowering's advice (more devices, --tp)
 * does not apply: --check builds the whole model on one device whatever p's layout is. */
static void reference_nofit(const Plan *p, RtError *e)
{
	static const char pre[] = "aicc: error: the plan does not fit in ";
	char *cut = strstr(e->msg, TGT_NOFIT_ADVICE);
	if (!cut)
		cut = strstr(e->msg, TGT_NOFIT_MANY);
	if (e->code != RT_EUSER || !cut || strncmp(e->msg, pre, sizeof pre - 1) != 0)
		return;
	char fact[sizeof e->msg];
	snprintf(fact, sizeof fact, "%.*s", (int)(cut - e->msg - (sizeof pre - 1)), e->msg + sizeof pre - 1);
	char layout[64] = "";
	if (p->nstreams > 1)
		snprintf(layout, sizeof layout, "; this plan's %d devices do not shrink it", p->nstreams);
	rt_errorf(e, RT_EUSER, "aicc: error: --check: the reference plan it compares with runs the whole model on "
		  "one device and does not fit in %s%s; check the same layout at a smaller size (compile again with "
		  "smaller --bind sizes, e.g. --bind L=2 for the examples' layers, and --init-unbound), or time this "
		  "plan without --check (--timing-only)", fact, layout);
}

/* The --check hook: the reference plan of the graph p was compiled from. */
static Plan *rebuild_reference(const Plan *p, const char *precision, RtError *e)
{
	DrvBinds b = { 0 };
	if (p->source.binds && *p->source.binds && drv_binds_parse(&b, p->source.binds) < 0) {
		drv_binds_free(&b);
		rt_errorf(e, RT_EUSER, "--check: the plan's binds '%s' are malformed", p->source.binds);
		return NULL;
	}
	char now[17];
	if (p->source.model && drv_model_hash(p->source.model, now) < 0) {
		drv_binds_free(&b);
		rt_errorf(e, RT_EUSER, "--check: cannot rebuild the reference: cannot open '%s'%s, the source the plan was "
			  "compiled from: %s", p->source.model, has_suffix(p->source.model, ".onnx") ? " or its external data" : "",
			  strerror(errno));
		return NULL;
	}
	if (p->source.model && p->source.model_hash[0] && strcmp(now, p->source.model_hash) != 0) {
		drv_binds_free(&b);
		rt_errorf(e, RT_EUSER, "--check: '%s'%s changed since the plan was compiled; recompile", p->source.model,
			  has_suffix(p->source.model, ".onnx") ? " or its external data" : "");
		return NULL;
	}
	Module *m = drv_load_model_binds(p->source.model, &b);
	drv_binds_free(&b);
	if (!m) {
		rt_errorf(e, RT_EUSER, "--check: cannot rebuild the reference: '%s' does not parse", p->source.model);
		return NULL;
	}
	Plan *ref = NULL;
	if (p->source.init && drv_init_unbound(m, p->source.init) < 0)
		rt_errorf(e, RT_EUSER, "--check: the plan's init spec '%s' is malformed", p->source.init);
	else if (ir_verify(m) > 0 || ir_infer_shapes(m) > 0 || rebuild_phase(p, m) > 0)
		rt_errorf(e, RT_EUSER, "--check: '%s' no longer verifies", p->source.model);
	else {
		/* the reference is the unpartitioned program: one device, whatever the source pins */
		for (Graph *g = m->graphs; g; g = g->next)
			ir_foreach_node(g, n)
				n->annot.device = NULL;
		BuildOpts o = { p->source.model, p->source.binds, "reference", NULL, NULL, 0, prec_reference_spec(precision),
				p->source.init, NULL, NULL };
		ref = drv_lower(m, &o, e);
		if (!ref)
			reference_nofit(p, e);
		if (ref && o.init && plan_set_source_init(ref, o.init, e) < 0) {
			plan_free(ref);
			ref = NULL;
		}
	}
	ir_module_free(m);
	return ref;
}

void drv_register_runtime_hooks(void)
{
	tgt_register_costs();
	rt_set_rebuild(rebuild_reference);
}
