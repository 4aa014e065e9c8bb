/* targets/precision.h: the one --precision vocabulary.
 *
 * `--precision WORD[+OPTION]...` names the numeric formats of a compile.  Each WORD is one row of
 * prec_words (targets/precision.c): the formats the place-precision pass gives activation and
 * weight operands (and their scale groups), the format the device must support, and the
 * matrix-unit operand format the lowering uses for matrix products.  OPTIONs modify the GPU
 * kernels (docs/targets-gpu.md): +graph (CUDA-graph launches), +nopromote (Hopper FP8: one
 * promotion at the end of K), +tensor, +1x128, +128x128 (FP8 weight scaling granularity),
 * +nosplitk (GEMM tiles never split K: DeepGEMM's normal GEMMs).
 *
 * The driver parses the spec once, against the target (the words and options it accepts:
 * Target.formats) and the machine (its device of the target's kind must support the format,
 * with a matrix peak for targets that need one), into a Precision; passes and lowerings read
 * that value and never the string.  A node's own `precision` attribute (set by place-precision
 * or @precision) names a word or a dtype; prec_node_format maps it.  Errors say what is wrong
 * and list the words valid for this target and machine, with a did-you-mean.
 */
#ifndef AICC_PRECISION_H
#define AICC_PRECISION_H

#include "runtime/rt.h"
#include "targets/machine.h"

enum { PREC_NOGROUP = -2 };   /* a plain Quantize, no scale */

/* One word of the vocabulary.  Groups (scaled formats): 0 one scale per row along K (per token,
 * per output channel), -1 one per tensor, G > 0 groups of G, PREC_NOGROUP not scaled. */
typedef struct PrecWord {
	const char *name;
	DType act, wt;           /* place-precision's operand formats; DT_INVALID: left as they are */
	int act_group, wt_group;
	DType needs;             /* what the device must support (DT_INVALID: nothing: auto) */
	DType mma;               /* matrix-unit operand format of matrix products (lowering) */
	int auto_order;          /* > 0: a candidate of `auto`, tried in increasing order (cheapest first) */
	const char *what;        /* one line, for --help and the docs */
} PrecWord;

extern const PrecWord prec_words[];
extern const int prec_nwords;
/* A word's name under `aicc quantize --format` (targets/precision.c prec_aliases): both
 * commands take both names. */
typedef struct PrecAlias {
	const char *word, *quantize;
} PrecAlias;
extern const PrecAlias prec_aliases[];
extern const int prec_naliases;

/* FP8 weight scaling granularity of the GPU kernels (runtime/kernels/matmul.c RtExecOpts.fp8_scale). */
typedef enum PrecScale { PREC_SCALE_NONE, PREC_SCALE_TENSOR, PREC_SCALE_1X128, PREC_SCALE_128X128 } PrecScale;

/* A parsed and checked --precision. */
typedef struct Precision {
	const PrecWord *word;
	char spec[96];           /* as given, or the target's default word: what the plan records */
	int given;               /* --precision was given (place-precision applies it only then) */
	const Device *dev;       /* the device it was checked against (NULL: none) */
	/* options */
	int graph;               /* +graph: kernels launched from a CUDA graph */
	int nopromote;           /* +nopromote */
	int nosplitk;            /* +nosplitk: the GEMM tile search tries no K splits */
	PrecScale scale;         /* FP8 weight scaling: +tensor/+1x128/+128x128, else the recipe's default */
	int promote;             /* FP8 accumulator promoted every `promote` K elements; 0 never (f32
				    accumulation), -1 once at the end of K (+nopromote) */
	/* FP8 GEMMs that scale their operands per block in the kernel (the device's <fp8-scaling>)
	 * under the options: fp8_blk[0] the activation tile (rows x K), fp8_blk[1] the weight block
	 * (K x N), {0, 0} one scale per tensor.  fp8_kernel 0: the device does not. */
	int fp8_kernel, fp8_blk[2][2];
} Precision;

struct Target;

/* Parses spec (NULL: target t's default word, not `given`) for target t on machine m.  t NULL: a
 * compile that builds no plan (--emit ir): only the machine's first accelerator is checked.
 * Returns 0, or -1 with e set ("aicc: error: --precision 'x': ...; valid for target T on machine
 * M: ...").  The same spec, target and machine always give the same value or the same error. */
int prec_parse(const char *spec, const struct Target *t, const Machine *m, Precision *p, RtError *e);
/* The word `name` (exact, or its quantize name: prec_aliases), or NULL. */
const PrecWord *prec_word(const char *name);
/* The matrix-unit format a node's `precision` attribute names: a word's mma, else the dtype of
 * that name (@precision(f8e4m3)), else DT_INVALID. */
DType prec_node_format(const char *attr);
/* The buffer format (runtime/plan.h plan_format_bytes) a GPU stores the weight operand (B) of a
 * matrix product in: the product's MMA format (its `precision` attribute `attr`, else p's word)
 * with its scaling ("q.f8e4m3.128x128", "q.f8e4m3.tensor", "q.mxfp8", "q.nvfp4", ...), or NULL
 * (stored as declared: wide formats, an operand that already is FP8, a format dev's tensor
 * cores lack, and every non-GPU device).  One rule for the GPU lowering and the partition
 * pass's memory check. */
const char *prec_weight_format(const Precision *p, const Device *dev, const char *attr, int fp8_operands);
/* The device of machine m that target t lowers to (t NULL or kind-less: the first accelerator). */
const Device *prec_device(const struct Target *t, const Machine *m);
/* The reference precision a plan compiled with `spec` (NULL: none) is checked against (aicc run
 * --check): "f64" for f64, else "f32". */
const char *prec_reference_spec(const char *spec);
/* Writes the words valid for target t on machine m, space-separated, into buf (n bytes). */
void prec_valid_words(const struct Target *t, const Machine *m, char *buf, size_t n);

#endif
