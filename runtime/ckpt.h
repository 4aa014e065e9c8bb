/* runtime/ckpt.h: partition-agnostic checkpoints and the slices of a plan's state.
 *
 * After Elastor ("Elastor: Elastic and Efficient Model Partitioning and Checkpointing for
 * Fault-tolerant Distributed Training", PPoPP 2026: partition-agnostic checkpoints in
 * fine-grained tensor splits) and PyTorch DCP: a checkpoint
 * stores every logical tensor of a model (weights and, for training plans, the optimizer
 * state: masters and AdamW moments, which are plan constants too) as rectangular slices, and a
 * manifest says for each slice which logical tensor it belongs to, where it lies in it
 * (offsets, extents per axis), and where its bytes are (file, key, byte offset, length, XXH3
 * checksum).  Any partitioning of the same model reads back the region each of its devices
 * holds by copying the parts of the slices that overlap it, whatever partitioning wrote them.
 *
 * Layout of a checkpoint directory DIR (docs/resilience.md):
 *   DIR/manifest.json     {"format": "aicc-checkpoint", "version": 1, "tensors": [
 *                           {"name": N, "dtype": "bf16", "shape": [..], "slices": [
 *                             {"offsets": [..], "extents": [..], "file": F, "key": K,
 *                              "byte_offset": B, "bytes": L, "xxh3": "16 hex digits"}]}]}
 *   DIR/F                 safetensors files (runtime/safetensors.h); key K is the tensor entry
 *                         of the slice, whose data is bytes [B, B + L) of F, L = volume x the
 *                         element size of the .npy writer's format (bf16: 2 bytes)
 * Slices of one tensor tile it exactly (rt_ckpt_read checks: inside the shape, pairwise
 * disjoint, volumes summing to the tensor's).
 *
 * Logical names: a plan names a constant after the graph's parameter, decorated by the passes:
 * `layer.stage1#3/wq.shard0.43` (pipeline stage, tensor-parallel shard) or `rope_cos@gpu2` (a
 * replica); rt_ckpt_logical_name undoes exactly those decorations (`layer#3/wq`, `rope_cos`).
 * A constant is the slice [shard_off, shard_off + dims[axis]) along shard_axis of its logical
 * tensor (PlanConst.shard_*), or all of it.
 *
 * Errors come back in RtError (RT_EUSER for a bad or mismatched checkpoint, naming the file or
 * the tensor and both shapes), never by exiting.
 */
#ifndef AICC_CKPT_H
#define AICC_CKPT_H

#include <stdint.h>

#include "runtime/plan.h"

/* A box: offsets and extents along each of rank axes. */
typedef struct RtBox {
	int rank;
	int64_t off[RT_MAX_RANK], ext[RT_MAX_RANK];
} RtBox;

int64_t rt_box_volume(const RtBox *b);
/* *out := a ∩ b (same rank); 1 when not empty, else 0. */
int rt_box_intersect(const RtBox *a, const RtBox *b, RtBox *out);
/* Copies region r (inside both sa and sb, logical coordinates) from src, which holds box sa of
 * the logical tensor row-major, into dst, which holds box da; both of one storage class (f32,
 * f64 or i64: rt_dtypes[].storage).  Contiguous runs are copied whole. */
void rt_box_copy(RtTensor *dst, const RtBox *da, const RtTensor *src, const RtBox *sa, const RtBox *r);

/* Row-major element offset of logical point pt inside a tensor holding box h. */
int64_t rt_box_index(const RtBox *h, const int64_t *pt);
/* "bf16[8192, 1024]" into out (n bytes). */
void rt_shape_str(DType dt, int rank, const int64_t *d, char *out, size_t n);

/* The logical tensor name of plan buffer name `buf` (malloc'd via rt_malloc; NULL: no memory):
 * a trailing `@DEVICE` and `.shardK.N` are removed, and `.stageK` before a `#` in every path
 * component but the last. */
char *rt_ckpt_logical_name(const char *buf);

/* The state of a plan: one entry per constant, in plan order. */
typedef struct RtPlanSlice {
	char *name;              /* logical name (owned) */
	int cons;                /* index in p->consts */
	int buffer, device;
	DType dtype;
	int rank;
	int64_t full[RT_MAX_RANK];   /* the logical tensor's shape */
	RtBox box;               /* the region this constant holds */
	int state;               /* 0: a literal the passes made (`c.N`: shapes, axes, scalars),
				  * which is the plan's and not saved; 1: model state */
} RtPlanSlice;
/* Fills *out (rt_malloc'd, *n entries).  Constants of one logical name must agree on dtype and
 * full shape (RT_EUSER otherwise, naming both).  0 or -1 with e set. */
int rt_plan_slices(const Plan *p, RtPlanSlice **out, int *n, RtError *e);
void rt_plan_slices_free(RtPlanSlice *s, int n);
/* Whether a and b describe one logical tensor type: equal dtype and full shape.  If not, and
 * as/bs are given, writes each one's type ("f32[64, 128]") into them (n bytes each). */
int rt_plan_slice_same_type(const RtPlanSlice *a, const RtPlanSlice *b, char *as, char *bs, size_t n);

/* ---- reading ---- */
typedef struct RtCkptSlice {
	RtBox box;
	char *file, *key;
	int64_t byte_offset, bytes;
	uint64_t xxh3;
} RtCkptSlice;

typedef struct RtCkptTensor {
	char *name;
	DType dtype;
	int rank;
	int64_t dims[RT_MAX_RANK];
	RtCkptSlice *slices;
	int nslices;
} RtCkptTensor;

typedef struct RtCkptFile RtCkptFile;   /* a mapped safetensors file (private) */
typedef struct RtCkpt {
	char *dir;
	RtCkptTensor *tensors;
	int ntensors;
	RtCkptFile *files;       /* opened on first use */
	int nfiles;
} RtCkpt;

/* Reads and checks DIR/manifest.json (not yet the data files).  0 or -1 with e set. */
int rt_ckpt_read(const char *dir, RtCkpt *c, RtError *e);
void rt_ckpt_free(RtCkpt *c);
const RtCkptTensor *rt_ckpt_find(const RtCkpt *c, const char *name);
/* *t := region box (of rank dims' rank) of tensor `name`, which must be dtype dt with shape
 * dims (else RT_EUSER naming the tensor and both shapes), as a tensor of box's extents,
 * assembled from every slice that overlaps it; each slice used is checked against its file
 * (present, its key's dtype and shape, the byte range, the XXH3 of its bytes).  0 or -1. */
int rt_ckpt_region(RtCkpt *c, const char *name, DType dt, int rank, const int64_t *dims, const RtBox *box,
		   RtTensor *t, RtError *e);

/* ---- writing ---- */
/* One slice to write: its tensor's name, dtype and shape, the region and its values (borrowed;
 * holds box's extents), and the file (name inside DIR) it goes to. */
typedef struct RtCkptPut {
	const char *name, *file;
	int rank;
	int64_t full[RT_MAX_RANK];
	RtBox box;
	const RtTensor *t;
} RtCkptPut;
/* Writes a checkpoint of n slices into DIR: every file and the manifest are written into a
 * temporary directory beside DIR (DIR.tmpXXXXXX), which is renamed to DIR when complete; an
 * existing DIR is replaced only when it is a checkpoint (holds manifest.json) or empty.  Tensors
 * appear in the manifest in order of first slice; slices of one file in order.  On any error
 * nothing is left.  *bytes (may be NULL) receives the data bytes written.  0 or -1. */
int rt_ckpt_write(const char *dir, const RtCkptPut *s, int n, int64_t *bytes, RtError *e);

#endif
