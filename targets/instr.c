/* targets/instr.c: what every target's lowering does the same way for each flat node: the plan
 * kernel instruction with its operands, attributes, FLOP and node name, and the fusion groups
 * the fuse pass recorded (attribute fusion_group, per call instance), and the target attributes
 * (TgtAnn) a kernel carries. */
#define __STDC_WANT_IEC_60559_BFP_EXT__ 1   /* strfromd */
#include "targets/target.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tgt_kernel_instr(PlanInstr *pi, const Plan *p, const Flat *f, int node, const int *buf,
		     int ins[TGT_MAX_OPERANDS], int outs[TGT_MAX_OPERANDS], RtError *e)
{
	const FlatNode *fn = &f->nodes[node];
	if (fn->nin > TGT_MAX_OPERANDS || fn->nout > TGT_MAX_OPERANDS)
		return rt_errorf(e, RT_EUSER, "node '%s' has more than %d operands", f->vals[fn->out[0]].name,
				 TGT_MAX_OPERANDS);
	plan_instr_init(pi, PI_KERNEL);
	pi->op = (RtOp)fn->n->op;
	for (int k = 0; k < fn->nin; k++)
		ins[k] = fn->in[k] >= 0 ? buf[fn->in[k]] : -1;
	for (int k = 0; k < fn->nout; k++)
		outs[k] = buf[fn->out[k]];
	pi->in = ins, pi->nin = fn->nin;
	pi->out = outs, pi->nout = fn->nout;
	pi->attrs = fn->n->attrs;
	pi->opts.mma_in = DT_INVALID;
	double fl = ir_node_flops(fn->n);
	pi->flops = fl > 0 ? fl : 0;
	pi->node = fn->nout ? p->buffers[outs[0]].name : NULL;
	return 0;
}

/* The open-addressing table tgt_fusion_groups finds a group's first node through (slot: node + 1,
 * 0: empty), keyed by the node's call instance, fusion group and graph. */
static uint64_t group_key(const FlatNode *fn, int64_t g)
{
	uint64_t k = ((uint64_t)(uint32_t)fn->instance * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)g * 0xc2b2ae3d27d4eb4full) ^
		     ((uint64_t)(uintptr_t)fn->n->graph * 0x165667b19e3779f9ull);
	return k ^ k >> 29;
}

void tgt_fusion_groups(const Flat *f, int *gfirst, int *glast)
{
	size_t cap = 64;
	while (cap < 2 * (size_t)f->nnodes)
		cap *= 2;
	int *slot = calloc(cap, sizeof *slot);   /* NULL (out of memory): the scan back below */
	for (int i = 0; i < f->nnodes; i++) {
		const FlatNode *fn = &f->nodes[i];
		int64_t g = rt_attr_int(&fn->n->attrs, "fusion_group", -1);
		gfirst[i] = glast[i] = -1;
		if (g < 0)
			continue;
		size_t s = slot ? group_key(fn, g) & (cap - 1) : 0;
		for (; slot && slot[s]; s = (s + 1) & (cap - 1)) {
			const FlatNode *o = &f->nodes[slot[s] - 1];
			if (o->instance == fn->instance && o->n->graph == fn->n->graph &&
			    rt_attr_int(&o->n->attrs, "fusion_group", -1) == g) {
				gfirst[i] = slot[s] - 1;
				break;
			}
		}
		for (int j = i - 1; !slot && j >= 0 && gfirst[i] < 0; j--)
			if (f->nodes[j].instance == fn->instance && rt_attr_int(&f->nodes[j].n->attrs, "fusion_group", -1) == g &&
			    f->nodes[j].n->graph == fn->n->graph)
				gfirst[i] = gfirst[j];
		if (gfirst[i] < 0) {
			gfirst[i] = i;
			if (slot)
				slot[s] = i + 1;
		}
		glast[gfirst[i]] = i;
	}
	free(slot);
}

/* ---- weight transforms done once at load ----
 * Weights are quantized (and transposed, cast, reshaped, cut into tensor-parallel shards) once
 * when the model is loaded, not at every step: TensorRT-LLM and vLLM convert checkpoints to their
 * quantized layout offline or at load, JetStream/MaxText quantize int8 weights at checkpoint
 * conversion (backends.md §1).  A value is load-time when it is a parameter or the output of a
 * weight transform (a quantize/dequantize, Cast, Transpose, Split or view) whose inputs are all
 * load-time. */
static int weight_transform(const Node *n)
{
	return (ir_ops[n->op].flags & (F_QOP | F_VIEW)) || n->op == OP_Cast || n->op == OP_CastLike ||
	       n->op == OP_Transpose || n->op == OP_Split;
}

int tgt_load_value(const Flat *f, int v)
{
	if (v < 0)
		return 1;   /* an absent optional input */
	const FlatVal *fv = &f->vals[v];
	if (fv->def < 0)
		return fv->v && fv->v->kind == V_PARAM;
	const FlatNode *fn = &f->nodes[fv->def];
	if (!weight_transform(fn->n))
		return 0;
	for (int k = 0; k < fn->nin; k++)
		if (!tgt_load_value(f, fn->in[k]))
			return 0;
	return 1;
}

int tgt_load_kernel(const Flat *f, const int *gfirst, int i)
{
	const FlatNode *fn = &f->nodes[i];
	if ((gfirst && gfirst[i] >= 0) || !weight_transform(fn->n) || fn->nin < 1)
		return 0;
	for (int k = 0; k < fn->nin; k++)
		if (!tgt_load_value(f, fn->in[k]))
			return 0;
	return 1;
}

/* Annotation values are formatted here, not by printf: libquadmath (loaded with OpenBLAS)
 * registers printf hooks, which send every printf-family call through glibc's slow positional
 * path, and lowering writes a dozen of these per kernel (a 64-device plan: millions).  fmt_to
 * handles the conversions annotations use (%s %c %d %ld %lld %% and %.Ng / %.Nf without flags
 * or width) with printf's exact output; anything else returns 0 and the caller uses vsnprintf. */

/* The digits of %.Ng / %.Nf of v: strfromd (ISO C23, glibc 2.25: printf's digits), through a
 * small cache, since TP replicas and layer instances price the same shapes to the same times.
 * The key is the conversion and the double's bits, so a hit is exactly what strfromd wrote. */
#define DCACHE 4096
static _Thread_local struct {
	uint64_t bits;
	char conv[2];            /* precision digit, 'g' or 'f'; 0: empty slot */
	char s[30];
} dcache[DCACHE];

static const char *fmt_double(char prec, char conv, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	uint64_t h = (bits ^ (bits >> 29) ^ ((uint64_t)(unsigned char)prec << 7) ^ (uint64_t)(unsigned char)conv) * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h >> 52) & (DCACHE - 1);
	if (dcache[i].conv[0] != prec || dcache[i].conv[1] != conv || dcache[i].bits != bits) {
		char f[5] = { '%', '.', prec, conv, 0 };
		char buf[400];   /* %.9f of 1e300 */
		strfromd(buf, sizeof buf, f, v);
		if (strlen(buf) >= sizeof dcache[i].s) {   /* too long to keep: not cached */
			static _Thread_local char big[400];
			memcpy(big, buf, sizeof big);
			return big;
		}
		strcpy(dcache[i].s, buf);
		dcache[i].bits = bits, dcache[i].conv[0] = prec, dcache[i].conv[1] = conv;
	}
	return dcache[i].s;
}

typedef struct Fmt {
	char *out;
	size_t n, k;             /* capacity (> 0), characters written so far (at most n - 1 kept) */
} Fmt;

static void fmt_mem(Fmt *o, const char *s, size_t len)
{
	size_t room = o->n - 1 - o->k;
	if (len > room)
		len = room;
	memcpy(o->out + o->k, s, len);
	o->k += len;
}

static void fmt_ll(Fmt *o, long long v)
{
	char buf[24], *e = buf + sizeof buf, *c = e;
	unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;
	do
		*--c = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--c = '-';
	fmt_mem(o, c, (size_t)(e - c));
}

/* 1 when done (out holds what vsnprintf would have written), 0 for a conversion not handled. */
static int fmt_to(char *out, size_t n, const char *fmt, va_list ap)
{
	Fmt o = { out, n, 0 };
	for (const char *c = fmt; *c;) {
		const char *pct = strchr(c, '%');
		if (!pct) {
			fmt_mem(&o, c, strlen(c));
			break;
		}
		fmt_mem(&o, c, (size_t)(pct - c));
		c = pct + 1;
		if (*c == '%') {
			fmt_mem(&o, "%", 1), c++;
		} else if (*c == 's') {
			const char *v = va_arg(ap, const char *);
			fmt_mem(&o, v, strlen(v)), c++;
		} else if (*c == 'c') {
			char v = (char)va_arg(ap, int);
			fmt_mem(&o, &v, 1), c++;
		} else if (*c == 'd') {
			fmt_ll(&o, va_arg(ap, int)), c++;
		} else if (c[0] == 'l' && c[1] == 'l' && c[2] == 'd') {
			fmt_ll(&o, va_arg(ap, long long)), c += 3;
		} else if (c[0] == 'l' && c[1] == 'd') {      /* PRId64 on LP64 */
			fmt_ll(&o, va_arg(ap, long)), c += 2;
		} else if (c[0] == '.' && c[1] >= '0' && c[1] <= '9' && (c[2] == 'g' || c[2] == 'f')) {
			const char *v = fmt_double(c[1], c[2], va_arg(ap, double));
			fmt_mem(&o, v, strlen(v)), c += 3;
		} else {
			return 0;
		}
	}
	out[o.k] = 0;
	return 1;
}

void tgt_fmt(char *out, size_t n, const char *fmt, ...)
{
	if (!n)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (!fmt_to(out, n, fmt, ap)) {
		va_end(ap);
		va_start(ap, fmt);
		vsnprintf(out, n, fmt, ap);
	}
	va_end(ap);
}

void tgt_ann_put(TgtAnn *t, const char *key, const char *fmt, ...)
{
	if (t->n == TGT_ANN_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	if (!fmt_to(t->val[t->n], sizeof t->val[0], fmt, ap)) {
		va_end(ap);
		va_start(ap, fmt);
		vsnprintf(t->val[t->n], sizeof t->val[0], fmt, ap);
	}
	va_end(ap);
	size_t k = strnlen(key, sizeof t->key[0] - 1);   /* truncated as snprintf would */
	memcpy(t->key[t->n], key, k);
	t->key[t->n][k] = 0;
	t->kv[t->n] = (PlanKV){ t->key[t->n], t->val[t->n] };
	t->n++;
}
