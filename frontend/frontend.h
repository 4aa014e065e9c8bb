/* frontend/frontend.h: model readers.  Each returns a new Module, or NULL after reporting every
 * problem through diag_error (file:line:col: error: ...). */
#ifndef AICC_FRONTEND_H
#define AICC_FRONTEND_H

#include <stddef.h>
#include <stdint.h>
#include "ir/ir.h"

/* A `--bind NAME=VALUE` known before parsing.  When the module defines `dim NAME`, the value
 * replaces that constant's before it is substituted anywhere (dependent `dim` expressions see
 * it) and `used` is set; otherwise the caller binds NAME as a dimension symbol (ir_bind). */
typedef struct FeBind {
	const char *name;
	int64_t value;
	int used;
} FeBind;

/* Parses the .aig file at path.  Reads the whole file; relative npy/safetensors paths in it are
 * resolved against the file's directory. */
Module *fe_parse_aig(const char *path);
/* Parses .aig text held in memory; `name` is used in diagnostics.  text need not be
 * NUL-terminated and may contain NUL bytes (reported as errors). */
Module *fe_parse_aig_text(const char *name, const char *text, size_t len);
/* The same with `dim` overrides (over[nover]; the last of several with one name wins). */
Module *fe_parse_aig_opts(const char *path, FeBind *over, int nover);
Module *fe_parse_aig_text_opts(const char *name, const char *text, size_t len, FeBind *over, int nover);

/* Imports the ONNX model (a serialized onnx.ModelProto) at path: initializers and Constant nodes
 * become parameters with in-memory data, symbolic dims become dimension symbols, and every
 * operator is normalised to aicc's IR form (docs/onnx.md).  Errors name the file, node and
 * operator ("model.onnx: node 'Conv_12' (Conv, opset 11): error: ...").  NULL after errors. */
Module *fe_import_onnx(const char *path);
/* The same for a model held in memory; `path` names it in diagnostics and its directory
 * resolves external data. */
Module *fe_import_onnx_buf(const char *path, const void *buf, size_t len);
/* The external data files (TensorProto data_location EXTERNAL, `location`, relative to the
 * model's directory) the ONNX model at path reads, in the graph and its subgraphs, each once,
 * sorted, as strings the caller frees with the array.  0, or -1 when the model does not read. */
int fe_onnx_external_files(const char *path, char ***files, int *nfiles);
/* Reads a serialized onnx.TensorProto (.pb) file into *t (the caller frees it with
 * rt_tensor_free); *name, if name is not NULL, receives the tensor's name (malloc'd) or NULL.
 * Returns 0, or -1 with a message in e. */
int fe_read_tensor_pb(const char *path, RtTensor *t, char **name, RtError *e);

#endif
