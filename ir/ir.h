/* ir/ir.h: aicc's graph IR.
 *
 * A Module owns an arena (every IR allocation lives there and is freed at once with the module;
 * nodes are unlinked and tombstoned, never freed one by one), a symbol table of dimension names,
 * and graphs.  A Graph has typed inputs, parameters (weights), outputs and a doubly linked list of
 * single-assignment Nodes in a topological order.  Operators come from ir/ops.def, dtypes and
 * attributes from runtime/rt.h.  Shapes are lists of Dims: a constant or an interned polynomial
 * over dimension symbols (B, S, S+1, 2*S, B*S), so symbolic shapes compare with ==.
 */
#ifndef AICC_IR_H
#define AICC_IR_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/rt.h"

typedef struct Arena Arena;
typedef struct Module Module;
typedef struct Graph Graph;
typedef struct Node Node;
typedef struct Value Value;
typedef struct Poly Poly;

/* ---- arena (ir/arena.c) ---- */
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);             /* zeroed, 16-byte aligned; aborts on OOM */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
size_t arena_bytes(const Arena *a);               /* bytes handed out so far */

/* ---- source locations ---- */
typedef struct Loc {
	const char *file;    /* NULL: no location */
	int line, col;       /* 1-based */
} Loc;

/* ---- operators (ir/ops.def) ---- */
typedef enum Op {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) OP_##name,
#include "ir/ops.def"
#undef OP
	OP_COUNT
} Op;

enum {
	F_ELEM      = 1u << 0,   /* elementwise (with broadcasting) */
	F_UNARY     = 1u << 1,
	F_BINARY    = 1u << 2,
	F_EPI       = 1u << 3,   /* may be fused into a matmul epilogue */
	F_COMMUTE   = 1u << 4,
	F_TRANS     = 1u << 5,   /* uses transcendental (SFU) functions */
	F_VIEW      = 1u << 6,   /* output may alias the input (no data movement) */
	F_REDUCE    = 1u << 7,
	F_SENSITIVE = 1u << 8,   /* numerically sensitive: keep at bf16 or wider */
	F_MATMUL    = 1u << 9,   /* tensor-core / MXU work */
	F_QUANT     = 1u << 10,  /* operands may be quantized to low-precision formats */
	F_NORM      = 1u << 11,
	F_SHAPEOP   = 1u << 12,  /* moves or reshapes data, no arithmetic */
	F_QOP       = 1u << 13,  /* quantize / dequantize */
	F_ATTN      = 1u << 14,
	F_MOE       = 1u << 15,
	F_CALL      = 1u << 16,
};

/* The unit family that does an operator's work (ops.def column `class`): tensor core / MXU /
 * MXM for matrix products, the vector pipe (CUDA cores, VPU, VXM) for arithmetic, and data
 * movement only (DMA, TMA, the LPU's SXM) for layout ops, lookups and link copies. */
typedef enum OpClass { OC_vector, OC_matrix, OC_move } OpClass;

typedef struct ShapeCtx ShapeCtx;
typedef int (*ShapeFn)(ShapeCtx *c, Node *n);
typedef double (*FlopsFn)(const Node *n);

typedef struct OpInfo {
	const char *name;
	int in_min, in_max;      /* in_max -1: variadic */
	int out_min, out_max;
	ShapeFn shape;
	FlopsFn flops;
	unsigned flags;
	OpClass cls;             /* ops.def `class` */
	unsigned lookup;         /* bit k: input k is a table read only at the rows indices select */
	const char *semantics;
} OpInfo;

extern const OpInfo ir_ops[OP_COUNT];
/* Whether input k of op is a lookup table (ops.def `lookup`): the bytes it moves are bounded by
 * the rows the node returns, not the table's size. */
static inline int ir_op_is_lookup(Op op, int k) { return k >= 0 && k < 32 && (ir_ops[op].lookup >> k & 1u); }
/* Whether op is a collective over the devices of its {devices} attribute (input i contributed by
 * member i): AllReduce, AllGather, AllToAll, ReduceScatter. */
static inline int ir_op_is_collective(Op op)
{
	return op == OP_AllReduce || op == OP_AllGather || op == OP_AllToAll || op == OP_ReduceScatter;
}
/* The operator named `name` (exact, case-sensitive); OP_COUNT if none. */
Op ir_op_lookup(const char *name);
/* The operator name closest to `name` by edit distance (for "did you mean"), or NULL. */
const char *ir_op_suggest(const char *name);

/* ---- dimensions: constants or interned polynomials over symbols (ir/dim.c) ---- */
typedef struct Dim {
	int64_t k;          /* the value when p == NULL */
	const Poly *p;      /* symbolic: interned in the module, so equal dims have equal p */
} Dim;

static inline Dim dim_c(int64_t k) { Dim d = { k, 0 }; return d; }
static inline int dim_isconst(Dim d) { return d.p == 0; }
static inline int dim_eq(Dim a, Dim b) { return a.p == b.p && (a.p || a.k == b.k); }
Dim dim_sym(Module *m, const char *name);          /* the symbol `name` (interned) */
/* Arithmetic; each returns 0, or -1 on int64 overflow (or, for dim_div, when b does not divide
 * a exactly or b is 0) and leaves *out unchanged. */
int dim_add(Module *m, Dim a, Dim b, Dim *out);
int dim_sub(Module *m, Dim a, Dim b, Dim *out);
int dim_mul(Module *m, Dim a, Dim b, Dim *out);
int dim_div(Module *m, Dim a, Dim b, Dim *out);
/* a with every bound symbol replaced by its value (ir_bind); -1 on overflow. */
int dim_subst(Module *m, Dim a, Dim *out);
/* Marks in used[] (Module.nsyms entries) every symbol that a mentions. */
void dim_mark_syms(Dim a, unsigned char *used);
/* Writes a in .aig syntax ("4096", "S", "S+1", "2*B*S") into buf; returns buf. */
char *dim_str(const Module *m, Dim a, char *buf, size_t n);

/* ---- types ---- */
#define IR_MAX_RANK RT_MAX_RANK

typedef struct Type {
	DType dt;           /* DT_INVALID: not yet inferred */
	int rank;           /* -1: not yet inferred */
	Dim *dims;          /* rank entries, in the module's arena */
} Type;

Type ir_type(Module *m, DType dt, int rank, const Dim *dims);   /* copies dims into the arena */
int ir_type_eq(Type a, Type b);
/* Element count of t, or -1 if t is symbolic or the product overflows 2^63. */
int64_t ir_type_numel(Type t);
/* Writes t in .aig syntax ("bf16[B, S, 4096]"). */
char *ir_type_str(const Module *m, Type t, char *buf, size_t n);

/* ---- values ---- */
typedef enum ValueKind { V_INPUT, V_PARAM, V_NODE } ValueKind;

typedef enum InitKind {
	INIT_NONE,          /* unbound: compile-only (cost) runs */
	INIT_NORMAL,        /* normal(mean=a, std=b, seed) */
	INIT_UNIFORM,       /* uniform(low=a, high=b, seed) */
	INIT_FILL,          /* every element = a (zeros, ones, fill(x)) */
	INIT_LITERAL,       /* inline values lit[nlit] */
	INIT_NPY,           /* tensor in the .npy file `path` */
	INIT_SAFETENSORS,   /* tensor `key` in the .safetensors file `path` */
	INIT_DATA,          /* data held in memory (ONNX initializers, folded constants) */
} InitKind;

typedef struct ParamInit {
	InitKind kind;
	double a, b;
	uint64_t seed;
	double *lit;
	int64_t nlit;
	const char *path, *key;
	RtTensor *data;     /* INIT_DATA; owned by the module */
	int inline_lit;     /* written inline as an operand in .aig: `Reshape(x, [0, -1])` */
} ParamInit;

struct Value {
	const char *name;
	Type type;
	ValueKind kind;
	Node *def;          /* V_NODE: the defining node, out[defidx] */
	int defidx;
	ParamInit *init;    /* V_PARAM */
	Graph *graph;
	Loc loc;
	int id;             /* dense per graph, for side tables */
	int nuses;          /* maintained by the builder and ir_replace_uses */
	void *aux;          /* scratch for passes */
};

/* ---- nodes ---- */
typedef struct Annot {
	const char *device;  /* @device(name) or NULL */
	DType precision;     /* @precision(dtype) or DT_INVALID */
	int nofuse;          /* @nofuse */
} Annot;

struct Node {
	Op op;
	int nin, nout;
	Value **in;          /* an absent optional input is NULL */
	Value **out;
	Attrs attrs;
	Loc loc;
	Graph *graph;        /* the graph holding this node */
	Graph *callee;       /* OP_Call */
	int64_t repeat;      /* OP_Call: 1, or N for `repeat N` */
	Annot annot;
	int id;
	int dead;            /* unlinked (tombstone) */
	Node *guard;         /* a node of an If branch: the If node (ONNX subgraphs imported inline) */
	int guard_then;      /* 1: of the then branch, 0: of the else branch */
	Node *prev, *next;
	void *aux;           /* scratch for passes */
};

/* ---- graphs and modules ---- */
struct Graph {
	const char *name;
	Module *m;
	Loc loc;
	Value **inputs;  int nin, cap_in;
	Value **outputs; int nout, cap_out;
	Type *out_decl;      /* declared output types (nout entries) or NULL; checked by inference */
	Value **params;  int nparams, cap_params;
	Node *first, *last;
	int nnodes;          /* live nodes */
	int nvalues;         /* ids handed out */
	Graph *next;         /* next graph of the module, in definition order */
};

struct Module {
	Arena *arena;
	const char *file;
	const char *dir;     /* directory of the source file: relative weight paths resolve here */
	Graph *graphs, *last_graph;
	int ngraphs;
	/* dimension symbols: names, and values once bound (--bind S=2048) */
	const char **symnames;
	int64_t *symval;
	unsigned char *symbound;
	int nsyms, capsyms;
	void *polys;         /* ir/dim.c's intern table */
	int64_t eval_limit;  /* compile-time evaluation: at most this many elements (0: 65536) */
	/* values whose contents the last ir_infer_shapes needed but could not know */
	Value **unknown; int nunknown, cap_unknown;
	/* the source's `dim NAME = VALUE` constants as defined (after --bind), in the arena: what a
	 * chip hardwired for one model checks a compile against (targets/wafer/hardwired.c) */
	struct DimConst { const char *name; int64_t v; struct DimConst *next; } *dimconsts;
};

Module *ir_module_new(const char *file);
void ir_module_free(Module *m);
/* The entry graph: the one named "main", else the last one defined; NULL if none. */
Graph *ir_entry(const Module *m);
Graph *ir_graph_find(const Module *m, const char *name);
int ir_sym_intern(Module *m, const char *name);      /* symbol id */
int ir_sym_find(const Module *m, const char *name);  /* -1 if unknown */
/* Records the `dim` constant name = v (the frontend, once per definition). */
void ir_dim_const_add(Module *m, const char *name, int64_t v);
/* The value of `dim` constant name in *v: 1, or 0 when the module defines no such constant. */
int ir_dim_const(const Module *m, const char *name, int64_t *v);
/* Bind symbol `name` to v (creating it if new).  Returns 0, or -1 if v < 0. */
int ir_bind(Module *m, const char *name, int64_t v);

/* ---- builder ---- */
Graph *ir_graph_new(Module *m, const char *name, Loc loc);
Value *ir_add_input(Graph *g, const char *name, Type t, Loc loc);
Value *ir_add_param(Graph *g, const char *name, Type t, ParamInit *init, Loc loc);
/* Appends a node with nout fresh output values named outnames[i] (type not yet inferred). */
Node *ir_add_node(Graph *g, Op op, Value **in, int nin, const char **outnames, int nout, Loc loc);
/* Inserts a node before `before` (or at the end when NULL); otherwise as ir_add_node. */
Node *ir_insert_node(Graph *g, Node *before, Op op, Value **in, int nin,
		     const char **outnames, int nout, Loc loc);
void ir_add_output(Graph *g, Value *v);
/* Turns input v of g into a parameter with the given initialiser (--const NAME=FILE): v keeps its
 * identity, so every use stays; it leaves g->inputs and joins g->params. */
void ir_input_to_param(Graph *g, Value *v, ParamInit *init);
/* Attribute setters (copy name and data into the arena; replace an existing one). */
void ir_set_attr_int(Node *n, const char *name, int64_t v);
void ir_set_attr_float(Node *n, const char *name, double v);
void ir_set_attr_str(Node *n, const char *name, const char *s);
void ir_set_attr_ints(Node *n, const char *name, const int64_t *v, int count);
void ir_set_attr_floats(Node *n, const char *name, const double *v, int count);
void ir_set_attr(Node *n, const Attr *a);
/* Unlinks n (tombstone); its outputs must have no uses left. */
void ir_remove_node(Graph *g, Node *n);
/* Every use of `from` (node inputs, graph outputs) becomes a use of `to`. */
void ir_replace_uses(Graph *g, Value *from, Value *to);
void ir_set_input(Node *n, int i, Value *v);     /* keeps nuses right */
/* A fresh unique value name with the given prefix ("t" -> "t.17"). */
const char *ir_fresh_name(Graph *g, const char *prefix);

#define ir_foreach_node(g, n) for (Node *n = (g)->first; n; n = n->next)

/* ---- analyses and checks (ir/verify.c, ir/shape.c, ir/cost.c) ---- */
/* Structural checks (single assignment, arity, use before definition, attribute kinds, call
 * signatures); reports every problem through diag_error and returns the count. */
int ir_verify(Module *m);
/* Infers dtype and shape of every value, callees first, substituting bound symbols.  Reports
 * problems through diag_error at the node's location; returns the error count. */
int ir_infer_shapes(Module *m);
/* The values whose contents the last ir_infer_shapes(m) needed at compile time and could not
 * know (a Reshape shape, Slice starts, TopK k, Range start... fed by a graph input): the operands
 * behind its "must be known at compile time" errors.  Returns the count; *out points into m. */
int ir_unknown_values(const Module *m, Value *const **out);
/* The constant data of v when known at compile time (a parameter with inline or in-memory data,
 * or a folded constant); NULL otherwise. */
const RtTensor *ir_const_data(Value *v);
/* As ir_const_data, also materialising a fill parameter (zeros, ones, fill(x)) of at most `limit`
 * elements (held by the module from then on). */
const RtTensor *ir_const_tensor(Value *v, int64_t limit);
/* The element limit of the compile-time evaluator (Module.eval_limit, default 65536). */
int64_t ir_eval_limit(const Module *m);
/* Reorders g's node list topologically (stable: keeps the current order where legal).
 * Returns 0, or -1 when the graph has a cycle (the list is left unchanged). */
int ir_topo_sort(Graph *g);
/* FLOP of one execution of n (calls: callee FLOP times repeat); 0 when shapes are symbolic. */
double ir_node_flops(const Node *n);

typedef struct Summary {
	int64_t nodes;            /* executed nodes, calls expanded */
	int64_t parameters;       /* weight elements, calls expanded (inline literal operands
	                             such as Reshape(x, [0, -1]) are constants, not counted) */
	int64_t parameter_bytes;  /* bytes of those in their dtypes (block scales included) */
	int64_t constant_bytes;   /* bytes of the inline literal operands, calls expanded */
	double flops;             /* one forward pass with the bound dims */
	/* the first parameter whose element count or bytes, alone or added to the total, pass
	 * 2^63 (the counts above then saturate at INT64_MAX), or NULL */
	const Value *overflow;
} Summary;
/* Totals for graph g with every call expanded (repeat N counts N times). */
Summary ir_summary(Graph *g);
/* Marks in used[] (Module.nsyms entries) the dimension symbols left in the types of g's values
 * and its callees': where ir_node_flops counts 0.  Returns how many symbols are marked. */
int ir_unbound_syms(const Module *m, const Graph *g, unsigned char *used);

/* ---- printer (ir/print.c): writes .aig that the parser reads back ---- */
void ir_print_module(const Module *m, FILE *out);
void ir_print_graph(const Graph *g, FILE *out);
/* ir_print_module without the values of constants holding more than elide_over values (< 0:
 * none elided): each prints as an unbound `param` with a comment `# N values elided`, after a
 * first comment line saying how many were elided and that --print-weights prints them. */
void ir_print_module_elided(const Module *m, FILE *out, int64_t elide_over);
/* The default of `aicc compile --emit ir` and --print-after: MLIR's customary
 * --mlir-elide-elementsattrs-if-larger=16 (small literals such as shapes stay readable). */
enum { IR_ELIDE_OVER = 16 };

#endif
