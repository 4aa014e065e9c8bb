/* runtime/safetensors.h: read one named tensor from a .safetensors file.
 *
 * Format (huggingface/safetensors): an 8-byte little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
 * then the data; offsets are relative to the end of the header.  The header is parsed with
 * jansson (allocating through rt_malloc).  Accepted dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8
 * BOOL.  Every offset is bounds-checked against the file size and the shape; errors name the
 * file and the tensor and are returned through RtError (RT_EUSER), never by exiting.  Files are
 * mapped (runtime/npy.h: regular files only), so only the header and the tensor's own bytes are
 * touched.
 */
#ifndef AICC_SAFETENSORS_H
#define AICC_SAFETENSORS_H

#include <stdio.h>

#include "runtime/rt.h"

int rt_safetensors_read(const char *path, const char *name, RtTensor *t, RtError *e);

/* A parsed header over an image of the whole file (buf, len: a mapping, runtime/npy.h), so that
 * many tensors of one file (a plan's weights) cost one parse.  rt_st_open returns NULL with e
 * set on a bad header; rt_st_tensor checks entry `name` against the image and gives its tensor:
 * copied (copy 1), or pointing into buf when the layout is the interpreter's (rt_raw_view);
 * raw/nraw (may be NULL) receive its bytes.  The handle borrows buf. */
typedef struct RtSafetensors RtSafetensors;
RtSafetensors *rt_st_open(const void *buf, size_t len, const char *path, RtError *e);
int rt_st_tensor(const RtSafetensors *h, const char *name, int copy, RtTensor *t, const void **raw, size_t *nraw,
		 RtError *e);
void rt_st_close(RtSafetensors *h);

/* Writes n tensors named names[i] (distinct) as one safetensors file to f: a compact JSON header
 * padded with spaces so the data starts 64-byte aligned, then the data, widest elements first
 * (so every tensor is aligned to its element size), each in the .npy writer's element format
 * (runtime/npy.h).  offsets[i] and sums[i] (each may be NULL) receive tensor i's data offset
 * and the rt_checksum of its bytes.  0 or -1. */
int rt_safetensors_fwrite(FILE *f, int n, const char *const *names, const RtTensor *const *ts, int64_t *offsets,
			  uint64_t *sums, RtError *e);

#endif
