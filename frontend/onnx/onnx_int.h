/* frontend/onnx/onnx_int.h: the ONNX importer's private interface, shared by its files.
 *
 * tensorproto.c decodes TensorProto messages (typed fields, raw_data, external data) into
 * RtTensors; import.c walks a ModelProto and builds the IR; ops.c normalises each operator's
 * opset-specific form into aicc's one IR form.  Errors are collected as text in an OnnxErr and
 * reported by the caller with the file, node and operator they concern.
 */
#ifndef AICC_ONNX_INT_H
#define AICC_ONNX_INT_H

#include "frontend/frontend.h"
#include "ir/ir.h"
#include "onnx/onnx.pb-c.h"

/* ONNX TensorProto.DataType values (onnx.proto; the newer ones are absent from older headers). */
enum {
	ONNX_FLOAT = 1, ONNX_UINT8 = 2, ONNX_INT8 = 3, ONNX_UINT16 = 4, ONNX_INT16 = 5,
	ONNX_INT32 = 6, ONNX_INT64 = 7, ONNX_STRING = 8, ONNX_BOOL = 9, ONNX_FLOAT16 = 10,
	ONNX_DOUBLE = 11, ONNX_UINT32 = 12, ONNX_UINT64 = 13, ONNX_COMPLEX64 = 14,
	ONNX_COMPLEX128 = 15, ONNX_BFLOAT16 = 16, ONNX_FLOAT8E4M3FN = 17, ONNX_FLOAT8E4M3FNUZ = 18,
	ONNX_FLOAT8E5M2 = 19, ONNX_FLOAT8E5M2FNUZ = 20, ONNX_UINT4 = 21, ONNX_INT4 = 22,
	ONNX_FLOAT4E2M1 = 23, ONNX_FLOAT8E8M0 = 24,
};

/* The aicc dtype of ONNX data type `t`, or DT_INVALID when aicc has none. */
DType onnx_dtype(int t);
/* The ONNX name of data type t ("FLOAT16"), for messages. */
const char *onnx_dtype_name(int t);

/* Decodes tp into *out (allocated with rt_tensor_alloc; the caller frees it).  `dir` resolves
 * external data; NULL forbids it.  Returns 0, or -1 with a message in e. */
int onnx_tensor_decode(const Onnx__TensorProto *tp, const char *dir, RtTensor *out, RtError *e);
/* Reads the whole file at path into a malloc'd buffer; NULL with e set on failure. */
uint8_t *onnx_slurp(const char *path, size_t *len, RtError *e);

/* ---- import.c / ops.c ---- */
typedef struct OnnxImp OnnxImp;

/* The importer's view of one ONNX node while it is converted. */
typedef struct OnnxNode {
	const Onnx__NodeProto *np;
	int opset;               /* the model's ai.onnx opset */
	Value *in[16];           /* resolved inputs; NULL for "" */
	int nin;
	const char *outnames[16];
	int nout;
	Loc loc;                 /* "file: node 'n' (Op, opset N)" */
	const char *drop[8];     /* attributes consumed by the normalisation (moved to inputs) */
	int ndrop;
} OnnxNode;

/* Converts node `on` into IR nodes of graph g.  Returns 0, or -1 after reporting an error at
 * on->loc.  Defined in ops.c. */
int onnx_convert_node(OnnxImp *imp, Graph *g, OnnxNode *on);

/* Helpers ops.c uses, defined in import.c. */
Module *onnx_module(OnnxImp *imp);
/* A constant i64 vector parameter (an inline operand in .aig). */
Value *onnx_const_i64(OnnxImp *imp, Graph *g, const int64_t *v, int n, int rank);
/* A constant scalar parameter of dtype dt holding x. */
Value *onnx_const_scalar(OnnxImp *imp, Graph *g, DType dt, double x);
/* A constant f32 vector of n values (rounded to f32). */
Value *onnx_const_f32(OnnxImp *imp, Graph *g, const double *v, int n);
/* The rank recorded for value `v` by the model's value_info, inputs or initializers; -1 unknown. */
int onnx_known_rank(OnnxImp *imp, Value *v);
/* Imports the initializers and nodes of subgraph gp (an If branch) into the graph being built,
 * resolving outer-scope names; fills outs with its outputs (at most max).  Returns the output
 * count, or -1 after reporting an error. */
int onnx_import_subgraph(OnnxImp *imp, const Onnx__GraphProto *gp, Value **outs, int max);
/* Scan (opset 9+) with a scan length known at import (the scan inputs' static shapes): the body
 * is imported once per iteration into g, its formal inputs bound to the state values and to the
 * iteration's slices of the scan inputs (Gather along scan_input_axes, backwards for direction
 * 1), the values of iteration t renamed NAME@t; the final states become outputs 0..N-1 and each
 * scan output the iterations' values stacked (Unsqueeze, Concat) along scan_output_axes (in
 * reverse for direction 1): onnx.ai/onnx/operators/onnx__Scan.html.  0, or -1 after an error at
 * on->loc (opset 8's batched Scan, an unknown or zero length, an unrolled size beyond 2^20 nodes,
 * a body whose arity does not match). */
int onnx_unroll_scan(OnnxImp *imp, Graph *g, OnnxNode *on);
/* Binds the IR value `v` to the ONNX name `name` for later nodes. */
void onnx_define(OnnxImp *imp, const char *name, Value *v);

#endif
