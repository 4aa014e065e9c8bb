/* targets/precision.c: the --precision vocabulary (contract in targets/precision.h).
 *
 * One row per word.  The formats and groups are those of docs/passes.md "Policies" (OCP MX
 * v1.0 blocks of 32 with E8M0 scales, NVFP4 blocks of 16 with E4M3 scales, fp8 with one f32
 * scale per tensor, int8 per token and per output channel, w4a16 int4 weights in groups of 128
 * along K, as Marlin/GPTQ kernels); fp4 is the TPU's E2M1 MXU mode, whose operands the
 * interpreter rounds with MXFP4's block scales (targets/tpu/lower.c).  The FP8 options follow
 * DeepSeek-V3 §3.3 (1x128 activation tiles, 128x128 weight blocks, promotion every N_C = 128),
 * taken from the machine's <fp8-scaling>.
 */
#include "targets/precision.h"

#include <stdio.h>
#include <string.h>

#include "ir/suggest.h"
#include "targets/target.h"

#define NG PREC_NOGROUP
const PrecWord prec_words[] = {
	{ "f32",   DT_F32,     DT_F32,    NG, NG,  DT_F32,     DT_F32,     9, "f32 everywhere (the reference's default)" },
	{ "f64",   DT_F64,     DT_F64,    NG, NG,  DT_F64,     DT_F64,    10, "f64 values and f64 accumulation (the reference)" },
	{ "bf16",  DT_BF16,    DT_BF16,   NG, NG,  DT_BF16,    DT_BF16,    8, "bf16 operands, f32 accumulation" },
	{ "f16",   DT_F16,     DT_F16,    NG, NG,  DT_F16,     DT_F16,     0, "f16 operands, f32 accumulation" },
	{ "fp8",   DT_F8E4M3,  DT_F8E4M3, -1, -1,  DT_F8E4M3,  DT_F8E4M3,  5, "E4M3 operands, one scale per tensor (GPU kernels: per block)" },
	{ "mxfp8", DT_MXFP8,   DT_MXFP8,  NG, NG,  DT_MXFP8,   DT_MXFP8,   6, "OCP MXFP8: E4M3 in blocks of 32 along K, E8M0 scales" },
	{ "mxfp6", DT_MXFP6,   DT_MXFP6,  NG, NG,  DT_MXFP6,   DT_MXFP6,   4, "OCP MXFP6: E3M2 in blocks of 32, E8M0 scales" },
	{ "mxfp4", DT_MXFP4,   DT_MXFP4,  NG, NG,  DT_MXFP4,   DT_MXFP4,   2, "OCP MXFP4: E2M1 in blocks of 32, E8M0 scales" },
	{ "nvfp4", DT_NVFP4,   DT_NVFP4,  NG, NG,  DT_NVFP4,   DT_NVFP4,   1, "NVFP4: E2M1 in blocks of 16, E4M3 scales and an f32 tensor scale" },
	{ "int8",  DT_I8,      DT_I8,      0,  0,  DT_I8,      DT_I8,      7, "int8 per token (activations) and per output channel (weights)" },
	{ "w4a16", DT_INVALID, DT_I4,     NG, 128, DT_BF16,    DT_BF16,    3, "int4 weights in groups of 128 along K, bf16 activations" },
	{ "fp4",   DT_MXFP4,   DT_MXFP4,  NG, NG,  DT_F4E2M1,  DT_F4E2M1,  0, "E2M1 operands (the TPU's fp4 MXU mode; rounded with MXFP4 block scales)" },
	{ "auto",  DT_INVALID, DT_INVALID, NG, NG, DT_INVALID, DT_BF16,    0, "per node, the cheapest legal format within --error-budget" },
};
#undef NG
const int prec_nwords = (int)(sizeof prec_words / sizeof prec_words[0]);

/* The options, in the order messages list them. */
static const char *const options[] = { "graph", "nopromote", "tensor", "1x128", "128x128", "nosplitk" };
enum { NOPTIONS = (int)(sizeof options / sizeof options[0]) };

/* The same formats under `aicc quantize`'s names (issue 17: `--precision mxfp8_e4m3` was an
 * unknown word and `quantize --format mxfp8` an unknown format): {word, quantize format}.  Both
 * commands take either name; a plan records the word (prec_parse), so the two spellings
 * compile to the same bytes.  A pair is the same element format (int8, bf16, mxfp4, nvfp4 are
 * spelled alike); w4a16 (int4 weights, bf16 activations) and auto have no quantize format. */
const PrecAlias prec_aliases[] = {
	{ "f16", "fp16" },
	{ "fp8", "fp8_e4m3" },
	{ "mxfp8", "mxfp8_e4m3" },
	{ "mxfp6", "mxfp6_e3m2" },
	{ "fp4", "fp4_e2m1" },
};
const int prec_naliases = (int)(sizeof prec_aliases / sizeof prec_aliases[0]);

const PrecWord *prec_word(const char *name)
{
	for (int i = 0; i < prec_naliases; i++)
		if (strcmp(prec_aliases[i].quantize, name) == 0)
			name = prec_aliases[i].word;
	for (int i = 0; i < prec_nwords; i++)
		if (strcmp(prec_words[i].name, name) == 0)
			return &prec_words[i];
	return NULL;
}

/* The other name of word or format `name` (prec_aliases), or NULL. */
static const char *alias_of(const char *name)
{
	for (int i = 0; i < prec_naliases; i++)
		if (strcmp(prec_aliases[i].word, name) == 0)
			return prec_aliases[i].quantize;
	return NULL;
}

DType prec_node_format(const char *attr)
{
	const PrecWord *w = attr ? prec_word(attr) : NULL;
	return w ? w->mma : attr ? rt_dtype_lookup(attr) : DT_INVALID;
}

const char *prec_weight_format(const Precision *p, const Device *dev, const char *attr, int fp8_operands)
{
	DType in = prec_node_format(attr), dflt = p && p->word ? p->word->mma : DT_BF16;
	PrecScale scale = in == DT_INVALID && dflt == DT_F8E4M3 && p ? p->scale : PREC_SCALE_128X128;
	if (in == DT_INVALID)
		in = dflt;
	else if (dev && !(dev_supports(dev, in) && num_has(&dev->peak[in])))
		in = DT_BF16;         /* a format the tensor cores lack runs at bf16 */
	if (!dev || dev->kind != DEV_GPU)
		return NULL;
	switch (in) {
	case DT_MXFP8: return "q.mxfp8";
	case DT_MXFP6: return "q.mxfp6";
	case DT_MXFP4: return "q.mxfp4";
	case DT_NVFP4: return "q.nvfp4";
	case DT_F8E4M3:
		if (fp8_operands)
			return NULL;      /* already an FP8 tensor: stored as it is */
		return scale == PREC_SCALE_TENSOR ? "q.f8e4m3.tensor" : scale == PREC_SCALE_1X128 ? "q.f8e4m3.1x128"
		       : "q.f8e4m3.128x128";
	default: return NULL;
	}
}

const char *prec_reference_spec(const char *spec)
{
	char s[32];
	snprintf(s, sizeof s, "%s", spec ? spec : "");
	s[strcspn(s, "+")] = 0;
	const PrecWord *w = prec_word(s);
	return w && w->mma == DT_F64 ? "f64" : "f32";
}

const Device *prec_device(const Target *t, const Machine *m)
{
	if (!m)
		return NULL;
	if (t && t->kind >= 0)
		return machine_first(m, (DevKind)t->kind);
	for (int i = 0; i < m->ndevs; i++)
		if (!m->devs[i].is_host)
			return &m->devs[i];
	return NULL;
}

/* Whether the space-separated list `list` holds `word` (prefixed by `pre`: "+" for options). */
static int listed(const char *list, const char *pre, const char *word)
{
	size_t np = strlen(pre), nw = strlen(word);
	for (const char *s = list; s && *s;) {
		size_t n = strcspn(s, " ");
		if (n == np + nw && strncmp(s, pre, np) == 0 && strncmp(s + np, word, nw) == 0)
			return 1;
		s += n + (s[n] == ' ');
	}
	return 0;
}

/* Whether word w can be used for target t (NULL: any) on device d. */
static int usable(const PrecWord *w, const Target *t, const Device *d)
{
	if (t && !listed(t->formats, "", w->name))
		return 0;
	if (w->needs == DT_INVALID)
		return 1;
	if (!d || !dev_supports(d, w->needs))
		return 0;
	return !(t && t->matrix_peak) || num_has(&d->peak[w->mma]);
}

void prec_valid_words(const Target *t, const Machine *m, char *buf, size_t n)
{
	const Device *d = prec_device(t, m);
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < prec_nwords && k < n; i++)
		if (usable(&prec_words[i], t, d))
			k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? " " : "", prec_words[i].name);
	for (int i = 0; t && i < NOPTIONS && k < n; i++)
		if (listed(t->formats, "+", options[i]))
			k += (size_t)snprintf(buf + k, n - k, " +%s", options[i]);
	if (!buf[0])
		snprintf(buf, n, "none");
}

/* The usable word (or, with opt, option of t) nearest to s, or NULL when none is close. */
static const char *suggest(const char *s, int opt, const Target *t, const Device *d)
{
	const char *best = NULL;
	int bd = 3;
	for (int i = 0; i < (opt ? NOPTIONS : prec_nwords); i++) {
		const char *name = opt ? options[i] : prec_words[i].name;
		if (opt ? t && !listed(t->formats, "+", name) : !usable(&prec_words[i], t, d))
			continue;
		int k = diag_distance(s, name);
		const char *al = opt ? NULL : alias_of(name);
		int ka = al ? diag_distance(s, al) : 99;
		if (ka < k && ka < bd)
			bd = ka, best = al;
		else if (k < bd)
			bd = k, best = name;
	}
	return best;
}

/* "aicc: error: --precision 'SPEC': WHY (did you mean 'X'?); valid for target T on machine M: ..." */
static int fail(RtError *e, const char *spec, const Target *t, const Machine *m, const char *why, const char *mean)
{
	char valid[512], dym[96] = "", also[256] = "";
	prec_valid_words(t, m, valid, sizeof valid);
	const Device *d = prec_device(t, m);
	for (int i = 0, k = 0; i < prec_naliases && k < (int)sizeof also - 40; i++) {
		const PrecWord *w = prec_word(prec_aliases[i].word);
		if (w && usable(w, t, d))   /* the names quantize takes for the valid words */
			k += snprintf(also + k, sizeof also - (size_t)k, "%s%s=%s", k ? ", " : "; also spelled ",
				      prec_aliases[i].quantize, w->name);
	}
	if (mean)
		snprintf(dym, sizeof dym, " (did you mean '%s'?)", mean);
	char where[96] = "";
	if (t)
		snprintf(where, sizeof where, " for target %s", t->name);
	return rt_errorf(e, RT_EUSER, "aicc: error: --precision '%s': %s%s; valid%s on machine %s: %s%s", spec, why, dym,
			 where, m ? m->name : "?", valid, also);
}

/* What is wrong with word w on target t and device d (w known, not usable). */
static void why_unusable(const PrecWord *w, const Target *t, const Device *d, const Machine *m, char *buf, size_t n)
{
	char note[160];
	const char *fm = t && m && t->formats_note ? t->formats_note(m, note, sizeof note) : NULL;
	if (t && !listed(t->formats, "", w->name))
		snprintf(buf, n, "target %s does not take %s%s%s%s%s%s", t->name, w->name, fm ? " (on " : "",
			 fm ? m->name : "", fm ? ": " : "", fm ? fm : "", fm ? ")" : "");
	else if (!d)
		snprintf(buf, n, "machine %s has no %s device", m ? m->name : "?", t ? t->name : "accelerator");
	else if (!dev_supports(d, w->needs))
		snprintf(buf, n, "device '%s' (%s) of machine %s does not support %s", d->id, d->arch ? d->arch : "?",
			 m ? m->name : "?", rt_dtype_name(w->needs));
	else
		snprintf(buf, n, "device '%s' (%s) of machine %s has no %s matrix instruction", d->id, d->arch ? d->arch : "?",
			 m ? m->name : "?", rt_dtype_name(w->mma));
}

/* Resolves the FP8 options against the device (DeepSeek-V3 §3.3; docs/targets-gpu.md). */
static int resolve_fp8(Precision *p, const char *spec, const Target *t, const Machine *m, RtError *e)
{
	const Device *d = p->dev;
	int hopper = d && d->fp8_promote > 0;   /* the tensor cores' FP8 sums are promoted every N_C */
	int blockscale = p->scale == PREC_SCALE_1X128 || p->scale == PREC_SCALE_128X128;
	if (p->word->mma == DT_F8E4M3 && p->nopromote && hopper && blockscale)
		return fail(e, spec, t, m, "1x128/128x128 scales are applied when the FP8 accumulator is promoted "
			    "(DeepSeek-V3 §3.3.2); +nopromote needs +tensor", NULL);
	if (p->word->mma == DT_F8E4M3 && p->scale == PREC_SCALE_NONE)
		p->scale = p->nopromote && hopper ? PREC_SCALE_TENSOR : PREC_SCALE_128X128;
	p->promote = !hopper ? 0 : p->nopromote ? -1 : d->fp8_promote;
	/* in-kernel FP8 block scaling (place-precision leaves such operands to the kernel) */
	p->fp8_kernel = d && d->fp8_act[0] > 0 && d->fp8_wt[0] > 0;
	if (!p->fp8_kernel)
		return 0;
	memcpy(p->fp8_blk[0], d->fp8_act, sizeof d->fp8_act);
	memcpy(p->fp8_blk[1], d->fp8_wt, sizeof d->fp8_wt);
	if (p->scale == PREC_SCALE_1X128)
		p->fp8_blk[1][0] = d->fp8_act[1], p->fp8_blk[1][1] = d->fp8_act[0];
	if (p->scale == PREC_SCALE_TENSOR || (p->nopromote && hopper))
		memset(p->fp8_blk, 0, sizeof p->fp8_blk);
	return 0;
}

int prec_parse(const char *spec, const Target *t, const Machine *m, Precision *p, RtError *e)
{
	memset(p, 0, sizeof *p);
	p->given = spec != NULL;
	if (!spec)
		spec = t && t->default_precision ? t->default_precision : "f32";
	p->dev = prec_device(t, m);
	if (m && t && t->kind >= 0 && !p->dev) {   /* the machine, not the precision, is wrong */
		const char *has = NULL;
		for (int i = 0; i < m->ndevs && !has; i++)
			if (!m->devs[i].is_host)
				has = devkind_name(m->devs[i].kind);
		return rt_errorf(e, RT_EUSER, "aicc: error: target %s needs a machine with %s devices; machine %s has %s devices "
				 "(`aicc machines` lists each machine's devices and target)", t->name,
				 devkind_name((DevKind)t->kind), m->name, has ? has : "none");
	}
	if (strlen(spec) >= sizeof p->spec)
		return fail(e, "...", t, m, "too long", NULL);
	snprintf(p->spec, sizeof p->spec, "%s", spec);
	char s[sizeof p->spec], why[256];
	snprintf(s, sizeof s, "%s", spec);
	char *plus = strchr(s, '+');
	if (plus)
		*plus = 0;
	if (!(p->word = prec_word(s))) {
		snprintf(why, sizeof why, "unknown format '%s'", s);
		return fail(e, spec, t, m, why, suggest(s, 0, t, p->dev));
	}
	if (!usable(p->word, t, p->dev)) {
		why_unusable(p->word, t, p->dev, m, why, sizeof why);
		return fail(e, spec, t, m, why, suggest(s, 0, t, p->dev));
	}
	if (strcmp(s, p->word->name))   /* an alias: the plan records the word (the same bytes) */
		snprintf(p->spec, sizeof p->spec, "%s%s", p->word->name, spec + strlen(s));
	for (char *o = plus ? plus + 1 : NULL, *next; o; o = next) {
		if ((next = strchr(o, '+')))
			*next++ = 0;
		int k = 0;
		while (k < NOPTIONS && strcmp(o, options[k]))
			k++;
		if (k == NOPTIONS || (t && !listed(t->formats, "+", o))) {
			if (k == NOPTIONS)
				snprintf(why, sizeof why, "unknown option '+%s'", o);
			else
				snprintf(why, sizeof why, "target %s takes no option '+%s'", t->name, o);
			const char *mean = suggest(o, 1, t, p->dev);
			char m2[64];
			snprintf(m2, sizeof m2, "+%s", mean ? mean : "");
			return fail(e, spec, t, m, why, mean ? m2 : NULL);
		}
		if (k == 0)
			p->graph = 1;
		else if (k == 1)
			p->nopromote = 1;
		else if (k == 5)
			p->nosplitk = 1;
		else
			p->scale = k == 2 ? PREC_SCALE_TENSOR : k == 3 ? PREC_SCALE_1X128 : PREC_SCALE_128X128;
	}
	return resolve_fp8(p, spec, t, m, e);
}
