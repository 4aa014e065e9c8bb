/* runtime/rt.h: the core types of libaicrt, the bottom layer of aicc.
 *
 * Provides dtypes (expanded from runtime/dtype.def), errors, the allocation hook, attributes
 * and dense tensors.  Everything above runtime/ (ir, passes, targets, the driver) may use these
 * types; runtime/ itself includes no compiler header (the exceptions are the data tables
 * ir/ops.def and its companion ir/optypes.def, which hold no code).  The runtime is a library: it returns errors and never exits.
 */
#ifndef AICC_RT_H
#define AICC_RT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- dtypes ---- */
enum { K_NONE, K_FLOAT, K_INT, K_UINT, K_BOOL, K_SCALE, K_BLOCK };
enum { S_NONE, S_F32, S_F64, S_I64 };

typedef enum DType {
#define DTYPE(id, name, bits, kind, block, elem, scale, st, onnx, sig) DT_##id,
#include "runtime/dtype.def"
#undef DTYPE
	DT_COUNT
} DType;

typedef struct DTypeInfo {
	const char *name;
	int bits;       /* storage bits per element on a device (block types: without scales) */
	int kind;       /* K_* */
	int block;      /* elements per scale block, 0 for scalar types */
	DType elem;     /* element format of a block type */
	DType scale;    /* scale format of a block type */
	int storage;    /* S_*: how the interpreter holds the values */
	int onnx;       /* ONNX TensorProto.DataType code, 0 when ONNX has none */
	int sig;        /* significand bits p of a float element, implicit bit included; 0 otherwise */
} DTypeInfo;

extern const DTypeInfo rt_dtypes[DT_COUNT];

/* The DType spelled `name` (".aig" spelling, e.g. "bf16", "mxfp4"); DT_INVALID if none. */
DType rt_dtype_lookup(const char *name);
static inline const char *rt_dtype_name(DType d) { return rt_dtypes[d].name; }
/* The DType of ONNX TensorProto.DataType `code` (dtype.def's onnx column); DT_INVALID when aicc
 * has none (STRING, UINT16, COMPLEX64, the FNUZ f8 variants, ...). */
DType rt_dtype_from_onnx(int64_t code);
static inline int rt_dtype_isfloat(DType d)
{ return rt_dtypes[d].kind == K_FLOAT || rt_dtypes[d].kind == K_BLOCK || rt_dtypes[d].kind == K_SCALE; }

/* Bytes that nelem elements of d occupy on a device, scales included: ceil(nelem*bits/8) plus,
 * for block types, one scale per started block (and 4 bytes of f32 tensor scale for nvfp4).
 * Units: bytes.  Source: OCP MX v1.0 §5 (32-element blocks, 8-bit E8M0 scale); NVFP4:
 * numerics.md §4 (16-element blocks, E4M3 scale, f32 tensor scale).  Saturates at INT64_MAX
 * beyond 2^57 elements (no buffer is that large; callers reject it). */
int64_t rt_dtype_bytes(DType d, int64_t nelem);

/* ---- errors ---- */
typedef struct RtError {
	int code;        /* 0: none; RT_EUSER: bad input (plan, data); RT_EINTERNAL: a bug; RT_ENOMEM */
	char msg[1024];
} RtError;
enum { RT_OK = 0, RT_EUSER = 1, RT_EINTERNAL = 2, RT_ENOMEM = 3 };

/* Record a formatted message in e (if e is not NULL) and return -1.  Never exits. */
int rt_errorf(RtError *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes s between quote characters q with C escapes for q, backslash, \n, \t and \xHH for the
 * other control bytes: the string syntax of both .aig files and plans. */
void rt_fput_quoted(FILE *f, const char *s, char q);
/* The shortest "%.Ng" form of finite v that strtod reads back to the same double, into buf (n
 * bytes, at least 32): how .aig files and plans write numbers exactly. */
void rt_shortest_double(char *buf, size_t n, double v);

/* v in decimal SI prefixes with 4 significant digits and unit ("69.34 GB", "3.35 TB/s"), into
 * buf: how messages write sizes and rates for a person to read. */
const char *rt_si_str(double v, const char *unit, char *buf, size_t n);

/* XXH3-64 (xxHash 0.8, seed 0) of n bytes: the checksum plans record for the tensors in their
 * weight files (docs/plan-format.md). */
uint64_t rt_checksum(const void *data, size_t n);

/* ---- allocation: every runtime allocation goes through here so tests can fail the Nth ---- */
void *rt_malloc(size_t n);
void *rt_calloc(size_t n, size_t size);
void *rt_realloc(void *p, size_t n);
void rt_free(void *p);
char *rt_strdup(const char *s);
/* Make the nth allocation from now (1-based) and every later one fail; 0 turns failures off. */
void rt_alloc_fail_after(long n);
/* An allocation budget on the calling thread (the interpreter sets one around each kernel: what
 * the run's host-memory check leaves to the instruction).  From rt_alloc_budget_begin(bytes) on,
 * the bytes held by allocations made through the calls above (as the allocator sizes them:
 * malloc_usable_size) less those rt_free releases are counted, and a request that would take
 * them past `bytes` fails (NULL; rt_tensor_alloc returns RT_ENOMEM) before the allocator is
 * asked.  rt_alloc_budget_end stops counting; it returns the largest refused request in bytes
 * (0: none) and stores in *held (may be NULL) the bytes held at the end.  Not nested. */
void rt_alloc_budget_begin(int64_t bytes);
int64_t rt_alloc_budget_end(int64_t *held);

/* ---- attributes (shared by IR nodes and plan instructions) ---- */
typedef enum AttrKind { ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS } AttrKind;

typedef struct Attr {
	const char *name;
	AttrKind kind;
	int64_t i;          /* ATTR_INT */
	double f;           /* ATTR_FLOAT */
	const char *s;      /* ATTR_STRING (identifiers such as `bf16` are strings too) */
	int n;              /* ATTR_INTS / ATTR_FLOATS: element count */
	int64_t *ints;
	double *floats;
} Attr;

typedef struct Attrs {
	int n;
	Attr *a;
} Attrs;

const Attr *rt_attr_find(const Attrs *as, const char *name);
/* Typed getters: the attribute's value, or def when absent.  An ATTR_INT read as float converts. */
int64_t rt_attr_int(const Attrs *as, const char *name, int64_t def);
double rt_attr_float(const Attrs *as, const char *name, double def);
const char *rt_attr_str(const Attrs *as, const char *name, const char *def);
/* ATTR_INTS value: sets *n and returns the array, or returns NULL with *n = 0 when absent. */
const int64_t *rt_attr_ints(const Attrs *as, const char *name, int *n);

/* ---- dense tensors as the interpreter holds them ---- */
#define RT_MAX_RANK 8

typedef struct RtTensor {
	DType dtype;
	int rank;
	int64_t dims[RT_MAX_RANK];
	int64_t n;          /* element count: product of dims (1 for rank 0) */
	void *data;         /* float (S_F32), double (S_F64) or int64_t (S_I64) by dtype's storage */
	int owns;           /* data was allocated by rt_tensor_alloc and is freed by rt_tensor_free */
	float tensor_scale; /* nvfp4: the f32 global decode scale; 1 otherwise */
	struct RtPack *pack; /* a loaded plan's constant: its slot for the matrix-product kernels' packed
				copy, made on first use and kept with the session (runtime/kernels.h); NULL
				for every other value */
} RtTensor;

/* Allocate t's data for dtype d and the given dims (zero-filled).  Returns 0, or -1 with e set
 * when rank > RT_MAX_RANK, a dim is negative, the element count overflows int64, or memory
 * runs out. */
int rt_tensor_alloc(RtTensor *t, DType d, int rank, const int64_t *dims, RtError *e);
/* The same without zero-filling, for a caller that writes every element before any read. */
int rt_tensor_alloc_raw(RtTensor *t, DType d, int rank, const int64_t *dims, RtError *e);
void rt_tensor_free(RtTensor *t);
/* Element-wise access through double, whatever the storage (convenience for simple kernels). */
double rt_get(const RtTensor *t, int64_t i);
void rt_set(RtTensor *t, int64_t i, double v);   /* stores without rounding to a narrow grid */
int64_t rt_geti(const RtTensor *t, int64_t i);
void rt_seti(RtTensor *t, int64_t i, int64_t v);
static inline float *rt_f32(const RtTensor *t) { return (float *)t->data; }
static inline double *rt_f64(const RtTensor *t) { return (double *)t->data; }
static inline int64_t *rt_i64(const RtTensor *t) { return (int64_t *)t->data; }

#endif
