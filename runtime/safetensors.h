/* runtime/safetensors.h: read one named tensor from a .safetensors file.
 *
 * Format (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
 * then the data; offsets are relative to the end of the header.  The header is parsed with
 * jansson (allocating through rt_malloc).  Accepted dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8
 * BOOL.  Every offset is bounds-checked against the file size and the shape; errors name the
 * file and the tensor and are returned through RtError (RT_EUSER), never by exiting.  Only the
 * header and the tensor's own bytes are read.
 */
#ifndef AICC_SAFETENSORS_H
#define AICC_SAFETENSORS_H

#include "runtime/rt.h"

int rt_safetensors_read(const char *path, const char *name, RtTensor *t, RtError *e);

#endif
