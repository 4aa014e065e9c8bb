/* tools/plan_build.h: building plans in the driver: the pipeline from a shape-inferred module to
 * a target's plan, shared by `aicc compile --emit plan` and the reference rebuild behind
 * `aicc run --check` (registered with the runtime by drv_register_runtime_hooks). */
#ifndef AICC_PLAN_BUILD_H
#define AICC_PLAN_BUILD_H

#include "frontend/frontend.h"
#include "ir/ir.h"
#include "runtime/plan.h"
#include "targets/target.h"
#include "tools/driver.h"

/* Binds "S=2048,B=1"; -1 with a message on stderr for malformed text. */
int drv_apply_binds(Module *m, const char *spec);

/* Gives input x of the entry graph the shape "x=1,3,48,262", binding its symbolic dims; -1 with
 * a message on stderr when malformed or inconsistent. */
int drv_apply_shape(Module *m, const char *spec);
/* Gives input x the constant shape dims[rank], binding its symbolic dims; `what` names the
 * option in errors.  -1 with a message on stderr when inconsistent. */
int drv_shape_input(Module *m, Value *x, int rank, const int64_t *dims, const char *what);
/* Reads a tensor from an .npy file or (FILE.pb) a serialized ONNX TensorProto; -1 with a message
 * on stderr. */
int drv_read_tensor(const char *path, RtTensor *t);
/* Turns input x of the entry graph into a constant parameter holding a copy of t (dtype must
 * match; the shape binds x's symbolic dims).  -1 with a message on stderr. */
int drv_make_const(Module *m, Value *x, const RtTensor *t, const char *what);
/* --const NAME=FILE(.npy|.pb): drv_read_tensor then drv_make_const. */
int drv_apply_const(Module *m, const char *spec);
/* After ir_infer_shapes failed: the entry graph's inputs whose values shape inference needed
 * (ir_unknown_values, followed back through the nodes computing them; Shape and Size end the
 * walk since they read only types), in input order, into out (room for every input).  Returns
 * the count. */
int drv_value_inputs(Module *m, Value **out);
/* Moves the plan's in-memory constants into OUT.weights.safetensors beside the plan file OUT(.aip)
 * (plan_externalize, checksummed) through the temporary wf, to be committed with the plan, the
 * plan last (out_commit_group).  1 when wf is open, 0 when there is nothing to write, -1 on
 * errors (printed). */
int drv_write_weights(Plan *p, const char *out, OutFile *wf);
/* Reads a model: .onnx through the ONNX importer, anything else as .aig.  NULL after errors. */
Module *drv_load_model(const char *path);
/* The hash a plan records of its source (PlanSource.model_hash): the model file's bytes and, for
 * an ONNX model, those of every external data file it reads (fe_onnx_external_files), so an
 * edited weight file is a changed source.  0, or -1 (errno set) when a file is unreadable. */
int drv_model_hash(const char *path, char out[17]);

/* --bind values collected before the model is read: a name the .aig defines with `dim` replaces
 * that constant, any other name is bound as a dimension symbol. */
typedef struct DrvBinds {
	FeBind *a;               /* names strdup'd */
	int n, cap;
	int nuser;               /* a[0..nuser) came from --bind: their names must exist in the model */
} DrvBinds;
/* Appends the bindings of "S=2048,B=1"; -1 with a message on stderr for malformed text. */
int drv_binds_parse(DrvBinds *b, const char *spec);
void drv_binds_free(DrvBinds *b);
/* drv_load_model with b's `dim` overrides (.aig only); the other names are then bound.  A
 * --bind name (b->a[0..nuser)) that is neither a `dim` constant nor a dimension symbol of the
 * model is an error naming it and the model's names, with a did-you-mean; NULL then (a model
 * with no symbols at all gets a note: the binds change nothing). */
Module *drv_load_model_binds(const char *path, DrvBinds *b);
/* What a plan records for --check: every bound symbol of m and every override of b that
 * replaced a `dim` constant, as "A=1,B=2", in buf (n bytes); returns buf. */
const char *drv_recorded_binds(const Module *m, const DrvBinds *b, char *buf, size_t n);
/* Gives every unbound parameter of m a seeded initialiser chosen by its use (ones for
 * normalisation scales, zeros for biases, KIND for weights); spec is KIND[:SCALE[:SEED]],
 * KIND normal or uniform (tools/init_unbound.c).  -1 with a message when spec is malformed. */
int drv_init_unbound(Module *m, const char *spec);
/* Writes every bound symbol of m as "A=1,B=2" into buf (n bytes) and returns buf. */
const char *drv_bound_symbols(const Module *m, char *buf, size_t n);

typedef struct BuildOpts {
	const char *model;            /* recorded in the plan for --check */
	const char *binds;            /* all --bind options joined with ',' (or NULL) */
	const char *target, *machine; /* machine NULL: the target's default */
	const char *const *sets; int nsets;
	const char *precision;        /* NULL: the target's default */
	const char *init;             /* --init-unbound spec, recorded in the plan for --check */
	/* the compile's machine and precision when the caller already has them (loaded and parsed
	 * once per compile: drv_open_machine); NULL: drv_lower loads machine and parses precision */
	const TgtMachine *loaded;
	const Precision *prec;
} BuildOpts;

/* Loads machine `machine` (NULL: target t's default) with --set overrides, and parses `spec`
 * against t (NULL: no plan is built, only the machine is checked) into prec.  The one place a
 * compile opens its machine description.  0, or -1 with e set (tm freed). */
int drv_open_machine(const Target *t, const char *machine, const char *const *sets, int nsets, const char *spec,
		     TgtMachine *tm, Precision *prec, RtError *e);

/* Lowers the entry graph of m (verified, shapes inferred) for o->target.  Returns the plan, or
 * NULL with the error in e. */
Plan *drv_lower(Module *m, const BuildOpts *o, RtError *e);
/* As drv_lower, printing the error on stderr. */
Plan *drv_build_plan(Module *m, const BuildOpts *o);
/* `aicc explain PLAN --compare` (tools/explain_compare.c): the plan's model on both pools, the GPU
 * pool alone and the LPU pool alone, side by side (text, or JSON).  0, or -1 after a message. */
int drv_explain_compare(const Plan *p, int json, FILE *f);
/* explain STEP.json --compare: a parallel training step's summary with none and all of its
 * collectives' compute-unit work offloaded (tools/explain_train.c); 0, or -1 after an error. */
int drv_explain_train(const char *path, int json, FILE *f);
/* `aicc explain NEW.aip --compare OLD.aip` (tools/explain_diff.c): the device set, shape,
 * placement moves and predicted step of two plans of one model and target (a re-partition on
 * the devices that survive, say), text or JSON.  0, or -1 after a message. */
int drv_explain_diff(const Plan *np, const Plan *op, const char *new_file, const char *old_file, int json, FILE *f);
/* Registers the targets' cost hooks and the --check rebuild hook with the runtime. */
void drv_register_runtime_hooks(void);

#endif
