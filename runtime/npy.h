/* runtime/npy.h: NumPy .npy files in and out of RtTensor, and the little-endian element
 * conversion shared with runtime/safetensors.c.
 *
 * Accepted (format spec: numpy.lib.format, versions 1.0, 2.0 and 3.0 headers): C order only;
 * little-endian ('<' or '=') or byte-order-free ('|') descriptors
 *   <f4 -> f32, <f8 -> f64, <f2 -> f16, <i8 -> i64, <i4 -> i32, <i2 -> i16, |i1 -> i8,
 *   |u1 -> u8, |b1 -> bool, and <V2 or |V2 -> bf16 (how ml_dtypes' bfloat16 arrays are saved:
 *   a 2-byte void; taken to be bf16 bits).
 * Errors (RtError, RT_EUSER, the path in the message): bad magic or version, a header that is
 * not the dict NumPy writes, Fortran order, big-endian data, other dtypes, rank above
 * RT_MAX_RANK, truncated data, a file that is not a regular file (a device such as /dev/zero, a
 * FIFO, a socket: files are mapped with their fstat size, never read to EOF).  Writing: f32 f64
 * f16 bf16 i64 i32 i16 i8 u8 bool as above; the other narrow float dtypes (fp8, fp6, fp4, e8m0,
 * tf32, block types) as <f4 values; rt_npy_write goes through a temporary renamed into place
 * (runtime/outfile.h).  All allocation goes through rt_malloc; nothing exits.
 */
#ifndef AICC_NPY_H
#define AICC_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "runtime/rt.h"

int rt_npy_read(const char *path, RtTensor *t, RtError *e);
/* Parses an in-memory .npy image; `name` labels error messages. */
int rt_npy_parse(const void *buf, size_t len, const char *name, RtTensor *t, RtError *e);
int rt_npy_write(const char *path, const RtTensor *t, RtError *e);
int rt_npy_fwrite(FILE *f, const RtTensor *t, RtError *e);
/* Like rt_npy_parse, but a tensor whose file layout is the interpreter's storage (<f4 as f32,
 * <f8 as f64, <i8 as i64, the data aligned to its element size) points into buf (owns 0: valid
 * while buf is) instead of being copied.  raw/nraw (may be NULL) receive the data bytes. */
int rt_npy_view(const void *buf, size_t len, const char *name, RtTensor *t, const void **raw, size_t *nraw,
		RtError *e);

/* A read-only private mapping of a whole regular file.  A device, FIFO, socket or directory is
 * refused ("not a regular file"); an empty file maps to addr NULL, len 0.  Returns 0 or -1. */
typedef struct RtMapped {
	void *addr;
	size_t len;
} RtMapped;
int rt_file_map(const char *path, RtMapped *m, RtError *e);
void rt_file_unmap(RtMapped *m);

/* Element kinds of little-endian raw data: 'f' (2 = f16, 4, 8 bytes), 'b' (bf16, 2 bytes),
 * 'i' (1, 2, 4, 8), 'u' (1), '?' (bool, 1). */
DType rt_raw_dtype(char kind, int size);   /* DT_INVALID when unsupported */
/* Allocates t (dtype from kind/size, the given dims) and fills it from n = prod(dims) raw
 * little-endian elements at src. */
int rt_tensor_from_raw(RtTensor *t, char kind, int size, int rank, const int64_t *dims,
		       const void *src, RtError *e);
/* rt_tensor_from_raw, except that f32, f64 and i64 data aligned to its element size is not
 * copied: t points at src (owns 0). */
int rt_raw_view(RtTensor *t, char kind, int size, int rank, const int64_t *dims, const void *src, RtError *e);
/* The element kind and size (*size bytes) files hold dtype d in (the .npy writer's choice). */
char rt_raw_kind(DType d, int *size);
/* Elements [start, start + count) of t in that file layout into out. */
void rt_raw_encode(const RtTensor *t, int64_t start, int64_t count, uint8_t *out);
/* Every element of t in that layout to f; 0 or -1 (write error). */
int rt_raw_fwrite(FILE *f, const RtTensor *t);

#endif
