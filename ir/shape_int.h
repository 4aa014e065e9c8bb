/* ir/shape_int.h: internals shared by the shape-inference files (ir/shape*.c) and ir/cost.c.
 *
 * ShapeCtx carries the module and graph being inferred, the error count, and the "known
 * values" side table: for small integer tensors whose contents are known at compile time
 * (constant parameters, Shape outputs and arithmetic on them) it holds the elements as Dims,
 * so `Reshape(x, Concat(Shape(x)[0:2], [-1]))` infers symbolically.  Helpers report errors
 * through diag_error at the node's location with the operator name as prefix and return -1.
 */
#ifndef AICC_IR_SHAPE_INT_H
#define AICC_IR_SHAPE_INT_H

#include "ir/ir.h"

enum { SH_MAXKNOWN = 64 };   /* longest integer tensor tracked as known values */

typedef struct Known {
	int n;                   /* element count */
	int rank;                /* 0 (scalar) or 1 */
	Dim *d;                  /* n elements in the arena */
	int ok;                  /* 1: known */
} Known;

struct ShapeCtx {
	Module *m;
	Graph *g;
	Known *known;            /* indexed by Value.id, g->nvalues entries */
	RtTensor **val;          /* compile-time contents by Value.id (ir/eval.c), owned */
	int nval;                /* entries of known and val (values made later have larger ids) */
	int errors;
};

/* Reports "Op: message" at n's location; counts the error; returns -1. */
int sh_err(ShapeCtx *c, const Node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* t in .aig syntax, in one of a few rotating static buffers (valid for a few calls). */
const char *sh_ty(ShapeCtx *c, Type t);
const char *sh_dim(ShapeCtx *c, Dim d);
/* "(bind the dimension: --bind A=N,B=N)": every symbol the graph's inputs leave unbound, so one
 * error names them all (a rotating buffer, as sh_ty). */
const char *sh_bind_hint(ShapeCtx *c);
/* The type of input i, or NULL when the input is absent (optional) or out of range. */
const Type *sh_in(const Node *n, int i);
/* Sets output i to dt[dims]; checks rank and the element count (< 2^63). */
int sh_set(ShapeCtx *c, Node *n, int i, DType dt, int rank, const Dim *dims);
int sh_set_type(ShapeCtx *c, Node *n, int i, Type t);
/* Normalizes axis (negative counts from the end) into [0, rank); error naming `what`. */
int sh_axis(ShapeCtx *c, const Node *n, const char *what, int64_t axis, int rank, int *out);
/* Multidirectional (numpy) broadcast of a and b into out (IR_MAX_RANK dims); names for errors. */
int sh_broadcast(ShapeCtx *c, const Node *n, const char *an, Type a, const char *bn, Type b,
		 int *rank, Dim *out);
/* Unidirectional broadcast: may `from` be broadcast to `to`? */
int sh_unibroadcast_ok(Type from, int rank, const Dim *to);
/* Requires the input's dtype to be d (or, with want_float, any float type). */
int sh_want_dtype(ShapeCtx *c, const Node *n, int i, const char *what, DType d);
int sh_want_float(ShapeCtx *c, const Node *n, int i, const char *what);
int sh_want_int(ShapeCtx *c, const Node *n, int i, const char *what);
int sh_want_rank(ShapeCtx *c, const Node *n, int i, const char *what, int rank);
int sh_same_dtype(ShapeCtx *c, const Node *n, int i, int j, const char *wi, const char *wj);
/* Dims of the integer tensor input i when known at compile time (constant data or propagated
 * shape values): 0 with *count set, or -1 after reporting why not.  `what` names the input. */
int sh_dims_input(ShapeCtx *c, const Node *n, int i, const char *what, Dim *out, int max, int *count);
/* Reports that input i (`what`) of n must be known at compile time, with where the chain of
 * known values stops (sh_why_unknown), and records it (sh_need); returns -1. */
int sh_unknown(ShapeCtx *c, const Node *n, int i, const char *what);
/* As sh_dims_input, requiring every element to be a constant. */
int sh_ints_input(ShapeCtx *c, const Node *n, int i, const char *what, int64_t *out, int max,
		  int *count);
/* Axes from input i (opset 13+/18+) or else attribute `axes` (older opsets): 0, 1 when neither
 * is given, -1 on error. */
int sh_axes(ShapeCtx *c, const Node *n, int i, int64_t *out, int max, int *count);
/* The dtype named by attribute `name` (a dtype name string or an ONNX TensorProto enum):
 * 1 and *out when present, 0 when absent, -1 on error. */
int sh_attr_dtype(ShapeCtx *c, const Node *n, const char *name, DType *out);
/* Product of dims as a Dim; -1 on overflow. */
int sh_prod(ShapeCtx *c, const Dim *d, int lo, int hi, Dim *out);
/* Records that shape inference needed the contents of v and could not know them
 * (ir_unknown_values). */
void sh_need(ShapeCtx *c, Value *v);
/* Known-value propagation (ir/shape_value.c): records what n's outputs hold when computable. */
void sh_known_propagate(ShapeCtx *c, Node *n);
void sh_known_set(ShapeCtx *c, const Value *v, int rank, int count, const Dim *d);
const Known *sh_known(ShapeCtx *c, Value *v);

/* The compile-time evaluator (ir/eval.c). */
/* The contents of v when known at compile time: constant parameter data, a result the evaluator
 * computed, or an all-constant known shape value; NULL otherwise.  Owned by the context. */
const RtTensor *sh_value(ShapeCtx *c, Value *v);
/* As sh_value without the known-dims fallback. */
const RtTensor *sh_value_raw(ShapeCtx *c, Value *v);
/* Evaluates n with its reference kernel when every present input is known and small: 1 done
 * (outputs' values recorded), 0 not evaluable, -1 the kernel failed (nothing recorded). */
int sh_eval(ShapeCtx *c, Node *n);
void sh_eval_free(ShapeCtx *c);
/* Whether n sits in the branch of an If whose condition is known and does not take it. */
int sh_guard_skipped(ShapeCtx *c, const Node *n);
/* Replaces every If of g with a known condition by its chosen branch and removes the other
 * branch's nodes (ir/eval.c). */
void sh_fold_ifs(ShapeCtx *c, Graph *g);
/* Why v is not known at compile time, following the first unknown input back to where the
 * chain stops ("'t' is computed by Neg from input 0, 'x' is a graph input"); returns buf. */
const char *sh_why_unknown(ShapeCtx *c, Value *v, char *buf, size_t nb);

/* Einsum equations (ir/shape_nn.c, also used by ir/cost.c). */
typedef struct EinsumSpec {
	int nin;
	int rank[16];            /* explicit letters per input (ellipsis excluded) */
	char lab[16][IR_MAX_RANK + 1];
	int ell[16];             /* position of "..." in input i, or -1 */
	int outrank;
	char out[IR_MAX_RANK + 1];
	int outell;              /* position of "..." in the output, or -1 */
} EinsumSpec;
/* Parses `eq` for nin inputs; 0, or -1 with a message in err. */
int einsum_parse(const char *eq, int nin, EinsumSpec *s, char *err, size_t errn);

#endif
