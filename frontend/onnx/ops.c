/* frontend/onnx/ops.c: one ONNX node → aicc IR nodes, normalised to one form per operator.
 *
 * ONNX changed many operators between opsets 1 and 24; the IR keeps only the newest form, so
 * the kernels, shape rules and passes see one contract (docs/onnx.md lists every rewrite):
 *   - attribute-style operands become constant i64/f32 inputs: axes of Squeeze/Unsqueeze (<13)
 *     and ReduceX (<13 for ReduceSum, <18 for the rest), starts/ends/axes of Slice (<10),
 *     split of Split (<13), min/max of Clip (<11), pads/value of Pad (<11), k of TopK (<10);
 *   - Softmax/LogSoftmax before opset 13 (coerce to 2-D at `axis`) become
 *     Reshape(Softmax(Flatten(x, axis), axis=1), Shape(x)) unless axis is the last one;
 *   - dtype-valued attributes (Cast `to`, QuantizeLinear `output_dtype`) become aicc dtype names;
 *     ConstantOfShape's tensor `value` becomes {value=<number>, dtype=<name>};
 *   - LessOrEqual/GreaterOrEqual become Or(Less|Greater, Equal);
 *   - Upsample (7-9) and Resize-10 become Resize(X, "", scales) {asymmetric, nearest floor}.
 * Operators outside ir/ops.def are an error naming the operator (with a "did you mean").
 */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_int.h"
#include "ir/diag.h"

static const Onnx__AttributeProto *find_attr(const OnnxNode *on, const char *name)
{
	for (size_t i = 0; i < on->np->n_attribute; i++) {
		const Onnx__AttributeProto *a = on->np->attribute[i];
		if (a && a->name && strcmp(a->name, name) == 0)
			return a;
	}
	return NULL;
}

static void drop_attr(OnnxNode *on, const char *name)
{
	if (on->ndrop < (int)(sizeof on->drop / sizeof on->drop[0]))
		on->drop[on->ndrop++] = name;
}

static int dropped(const OnnxNode *on, const char *name)
{
	for (int i = 0; i < on->ndrop; i++)
		if (strcmp(on->drop[i], name) == 0)
			return 1;
	return 0;
}

/* Puts v at input slot i, padding the skipped optional slots with absent inputs. */
static void set_input(OnnxNode *on, int i, Value *v)
{
	while (on->nin < i)
		on->in[on->nin++] = NULL;
	on->in[i] = v;
	if (on->nin <= i)
		on->nin = i + 1;
}

/* Moves the ints attribute `name` to input slot `slot` as a constant i64 vector.  Returns 0
 * (also when the attribute is absent), -1 on error. */
static int ints_to_input(OnnxImp *imp, Graph *g, OnnxNode *on, const char *name, int slot)
{
	const Onnx__AttributeProto *a = find_attr(on, name);
	if (!a)
		return 0;
	drop_attr(on, name);
	if (on->nin > slot && on->in[slot]) {
		diag_error(on->loc, "'%s' is given both as an attribute and as input %d", name, slot);
		return -1;
	}
	Value *v = onnx_const_i64(imp, g, a->ints, (int)a->n_ints, 1);
	if (!v)
		return -1;
	set_input(on, slot, v);
	return 0;
}

/* Moves the float attribute `name` to input slot `slot` as an f32 scalar. */
static int float_to_input(OnnxImp *imp, Graph *g, OnnxNode *on, const char *name, int slot)
{
	const Onnx__AttributeProto *a = find_attr(on, name);
	if (!a)
		return 0;
	drop_attr(on, name);
	Value *v = onnx_const_scalar(imp, g, DT_F32, a->f);
	if (!v)
		return -1;
	set_input(on, slot, v);
	return 0;
}

/* Replaces the ONNX dtype number in attribute `name` by the aicc dtype name. */
static int dtype_attr(Node *n, const OnnxNode *on, const char *name)
{
	const Onnx__AttributeProto *a = find_attr(on, name);
	if (!a)
		return 0;
	DType d = onnx_dtype((int)a->i);
	if (d == DT_INVALID) {
		diag_error(on->loc, "attribute %s=%s (%lld): aicc has no such dtype", name,
			   onnx_dtype_name((int)a->i), (long long)a->i);
		return -1;
	}
	ir_set_attr_str(n, name, rt_dtype_name(d));
	return 0;
}

/* Copies every attribute that was not consumed by the normalisation onto n. */
static int copy_attrs(Node *n, const OnnxNode *on)
{
	Arena *ar = n->graph->m->arena;
	for (size_t i = 0; i < on->np->n_attribute; i++) {
		const Onnx__AttributeProto *a = on->np->attribute[i];
		const char *name = a->name ? a->name : "";
		if (dropped(on, name))
			continue;
		if (!*name) {
			diag_error(on->loc, "attribute #%zu has no name", i);
			return -1;
		}
		switch (a->has_type ? (int)a->type : -1) {
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
			ir_set_attr_int(n, name, a->i);
			break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
			ir_set_attr_float(n, name, a->f);
			break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
			ir_set_attr_str(n, name, a->s.len ? arena_strndup(ar, (const char *)a->s.data,
									   a->s.len) : "");
			break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
			if (a->n_ints > 1u << 20)
				goto bad;
			ir_set_attr_ints(n, name, a->ints, (int)a->n_ints);
			break;
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
			if (a->n_floats > 1u << 20)
				goto bad;
			double *f = arena_alloc(ar, (a->n_floats + 1) * sizeof *f);
			for (size_t k = 0; k < a->n_floats; k++)
				f[k] = a->floats[k];
			ir_set_attr_floats(n, name, f, (int)a->n_floats);
			break;
		}
		case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {   /* RNN activations: joined by ',' */
			size_t len = 1;
			for (size_t k = 0; k < a->n_strings; k++)
				len += a->strings[k].len + 1;
			if (len > 1u << 16)
				goto bad;
			char *j = arena_alloc(ar, len), *p = j;
			for (size_t k = 0; k < a->n_strings; k++) {
				if (k)
					*p++ = ',';
				memcpy(p, a->strings[k].data, a->strings[k].len);
				p += a->strings[k].len;
			}
			*p = 0;
			ir_set_attr_str(n, name, j);
			break;
		}
		default:
		bad:
			diag_error(on->loc, "attribute '%s' has a kind aicc does not support "
				   "(tensor, graph, strings or type attributes)", name);
			return -1;
		}
	}
	return 0;
}

/* Checks the arity against ir/ops.def after trailing absent inputs/outputs are trimmed. */
static int check_arity(Op op, OnnxNode *on)
{
	const OpInfo *oi = &ir_ops[op];
	while (on->nin > oi->in_min && on->nin > 0 && !on->in[on->nin - 1])
		on->nin--;
	while (on->nout > oi->out_min && on->nout > 0 && !on->outnames[on->nout - 1])
		on->nout--;
	if (on->nin < oi->in_min || (oi->in_max >= 0 && on->nin > oi->in_max)) {
		diag_error(on->loc, "%d inputs given; %s takes %d to %d", on->nin, oi->name,
			   oi->in_min, oi->in_max);
		return -1;
	}
	for (int i = 0; i < oi->in_min; i++)
		if (!on->in[i]) {
			diag_error(on->loc, "required input %d is missing", i);
			return -1;
		}
	if (on->nout < oi->out_min || (oi->out_max >= 0 && on->nout > oi->out_max)) {
		diag_error(on->loc, "%d outputs requested; aicc's %s produces %d to %d", on->nout,
			   oi->name, oi->out_min, oi->out_max);
		return -1;
	}
	return 0;
}

/* Appends the IR node for on with op, binding its named outputs. */
static Node *emit(OnnxImp *imp, Graph *g, OnnxNode *on, Op op)
{
	const char *names[16];
	for (int i = 0; i < on->nout; i++)
		names[i] = on->outnames[i] ? on->outnames[i] : ir_fresh_name(g, "unused");
	Node *n = ir_add_node(g, op, on->in, on->nin, names, on->nout, on->loc);
	for (int i = 0; i < on->nout; i++)
		if (on->outnames[i])
			onnx_define(imp, on->outnames[i], n->out[i]);
	return n;
}

/* A helper node with fresh output names inside a rewrite. */
static Node *aux_node(Graph *g, Op op, Value **in, int nin, Loc loc)
{
	const char *name = ir_fresh_name(g, "t");
	return ir_add_node(g, op, in, nin, &name, 1, loc);
}

/* LessOrEqual / GreaterOrEqual → Or(Less|Greater(a, b), Equal(a, b)) (NaN-exact). */
static int rewrite_cmp_or_equal(OnnxImp *imp, Graph *g, OnnxNode *on, Op strict)
{
	if (on->nin != 2 || !on->in[0] || !on->in[1] || on->nout != 1 || !on->outnames[0]) {
		diag_error(on->loc, "expects 2 inputs and 1 output");
		return -1;
	}
	Node *a = aux_node(g, strict, on->in, 2, on->loc);
	Node *b = aux_node(g, OP_Equal, on->in, 2, on->loc);
	on->in[0] = a->out[0];
	on->in[1] = b->out[0];
	emit(imp, g, on, OP_Or);
	return 0;
}

/* Softmax/LogSoftmax before opset 13: coerce X to 2-D [prod(d<axis), prod(d>=axis)], normalise
 * each row, restore X's shape.  Equal to the new form when axis is the last axis. */
static int rewrite_old_softmax(OnnxImp *imp, Graph *g, OnnxNode *on, Op op)
{
	const Onnx__AttributeProto *ax = find_attr(on, "axis");
	int64_t axis = ax ? ax->i : 1;
	drop_attr(on, "axis");
	if (check_arity(op, on) < 0)
		return -1;
	int r = onnx_known_rank(imp, on->in[0]);
	if (r >= 0 && (axis == r - 1 || axis == -1)) {
		Node *n = emit(imp, g, on, op);
		ir_set_attr_int(n, "axis", -1);
		return copy_attrs(n, on);
	}
	Value *x = on->in[0];
	Node *shape = aux_node(g, OP_Shape, &x, 1, on->loc);
	Node *flat = aux_node(g, OP_Flatten, &x, 1, on->loc);
	ir_set_attr_int(flat, "axis", axis);
	Node *sm = aux_node(g, op, flat->out, 1, on->loc);
	ir_set_attr_int(sm, "axis", 1);
	if (copy_attrs(sm, on) < 0)
		return -1;
	on->in[0] = sm->out[0];
	on->in[1] = shape->out[0];
	on->nin = 2;
	emit(imp, g, on, OP_Reshape);
	return 0;
}

/* ConstantOfShape's `value` (a one-element tensor) → {value=<number>, dtype=<name>}. */
static int constofshape_attrs(OnnxImp *imp, Node *n, OnnxNode *on)
{
	const Onnx__AttributeProto *a = find_attr(on, "value");
	drop_attr(on, "value");
	if (!a) {
		ir_set_attr_float(n, "value", 0.0);
		ir_set_attr_str(n, "dtype", "f32");
		return 0;
	}
	RtTensor t;
	RtError e = { 0 };
	if (!a->t || onnx_tensor_decode(a->t, NULL, &t, &e) < 0) {
		diag_error(on->loc, "attribute 'value': %s", a->t ? e.msg : "not a tensor");
		return -1;
	}
	int rc = 0;
	if (t.n != 1) {
		diag_error(on->loc, "attribute 'value' must hold one element, it has %lld", (long long)t.n);
		rc = -1;
	} else if (rt_dtype_isfloat(t.dtype)) {
		ir_set_attr_float(n, "value", rt_get(&t, 0));
	} else {
		ir_set_attr_int(n, "value", rt_geti(&t, 0));
	}
	ir_set_attr_str(n, "dtype", rt_dtype_name(t.dtype));
	rt_tensor_free(&t);
	return rc;
}

/* Upsample (opsets 7-9, deprecated) and Resize-10 → Resize(X, "", scales) with the geometry
 * they define: output = floor(in * scale), source coordinate x/scale ("asymmetric"), nearest
 * taking the element at floor(x/scale) (Upsample-7's spec: nearest repeats each element
 * `scale` times; the ONNX reference's op_upsample.py; onnx/version_converter's
 * Upsample_9_10 and Resize_10_11 adapters).  Upsample-7's `scales` attribute becomes the input;
 * mode "bilinear" (an old exporter spelling) is linear. */
static int rewrite_upsample(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	const Onnx__AttributeProto *sc = find_attr(on, "scales"), *md = find_attr(on, "mode");
	char mode[16] = "nearest";
	if (md && md->s.len && md->s.len < sizeof mode)
		snprintf(mode, sizeof mode, "%.*s", (int)md->s.len, (const char *)md->s.data);
	if (!strcmp(mode, "bilinear"))
		snprintf(mode, sizeof mode, "linear");
	if (strcmp(mode, "nearest") && strcmp(mode, "linear")) {
		diag_error(on->loc, "mode must be nearest or linear, got \"%s\"", mode);
		return -1;
	}
	drop_attr(on, "mode");
	if (sc) {
		drop_attr(on, "scales");
		double v[RT_MAX_RANK];
		if (sc->n_floats > RT_MAX_RANK || (on->nin > 1 && on->in[1])) {
			diag_error(on->loc, "scales must be given once, with at most %d values", RT_MAX_RANK);
			return -1;
		}
		for (size_t i = 0; i < sc->n_floats; i++)
			v[i] = sc->floats[i];
		set_input(on, 1, onnx_const_f32(imp, g, v, (int)sc->n_floats));
	}
	if (on->nin != 2 || !on->in[0] || !on->in[1]) {
		diag_error(on->loc, "expects inputs X and scales");
		return -1;
	}
	set_input(on, 2, on->in[1]);
	on->in[1] = NULL;
	if (check_arity(OP_Resize, on) < 0)
		return -1;
	Node *n = emit(imp, g, on, OP_Resize);
	ir_set_attr_str(n, "mode", mode);
	ir_set_attr_str(n, "coordinate_transformation_mode", "asymmetric");
	ir_set_attr_str(n, "nearest_mode", "floor");
	return copy_attrs(n, on);
}

/* B unsqueezed on trailing axes so that it has rank r (numpy broadcasting then aligns it as the
 * legacy forms meant). */
static int unsqueeze_to(OnnxImp *imp, Graph *g, OnnxNode *on, int slot, int rb, int r)
{
	int64_t ax[IR_MAX_RANK];
	int k = 0;
	for (int i = rb; i < r && k < IR_MAX_RANK; i++)
		ax[k++] = i;
	Value *in[2] = { on->in[slot], onnx_const_i64(imp, g, ax, k, 1) };
	if (!in[1])
		return -1;
	on->in[slot] = aux_node(g, OP_Unsqueeze, in, 2, on->loc)->out[0];
	return 0;
}

/* Opsets < 7: binary operators with {broadcast=1, axis} align B with A starting at `axis`
 * (https://github.com/onnx/onnx/blob/main/docs/Changelog.md#Add-6), and PRelu's 1-D slope is
 * per channel (axis 1).  Both become numpy broadcasting by unsqueezing B's trailing axes; A's
 * and B's ranks must be known at import (graph inputs, initializers or value_info). */
static int legacy_broadcast(OnnxImp *imp, Graph *g, OnnxNode *on, Op o)
{
	const Onnx__AttributeProto *bc = find_attr(on, "broadcast"), *ax = find_attr(on, "axis");
	drop_attr(on, "broadcast");
	int prelu = o == OP_PRelu;
	if (!prelu && (!bc || !bc->i || !ax || on->nin != 2))
		return 0;
	if (!prelu)
		drop_attr(on, "axis");
	if (on->nin != 2 || !on->in[0] || !on->in[1])
		return 0;
	int ra = onnx_known_rank(imp, on->in[0]), rb = onnx_known_rank(imp, on->in[1]);
	int64_t axis = prelu ? 1 : ax->i;
	if (prelu && (rb != 1 || ra < 3))
		return 0;
	if (ra < 0 || rb < 0) {
		diag_error(on->loc, "legacy broadcasting with 'axis' needs the ranks of both inputs at "
			   "import (give them value_info types)");
		return -1;
	}
	if (axis < 0)
		axis += ra;
	if (axis < 0 || axis + rb > ra) {
		diag_error(on->loc, "legacy broadcast axis %lld does not fit B of rank %d into A of rank %d",
			   (long long)(prelu ? 1 : ax->i), rb, ra);
		return -1;
	}
	return ra - axis > rb ? unsqueeze_to(imp, g, on, 1, rb, (int)(ra - axis)) : 0;
}

static int is_reduce(const char *op)
{
	return strncmp(op, "Reduce", 6) == 0;
}

/* Moves the attribute forms of older opsets to inputs (see the file comment). */
static int normalise_inputs(OnnxImp *imp, Graph *g, OnnxNode *on, const char *op)
{
	int v = on->opset;
	if ((strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) && v < 13)
		return ints_to_input(imp, g, on, "axes", 1);
	if (is_reduce(op) && (v < 13 || (v < 18 && strcmp(op, "ReduceSum") != 0)))
		return ints_to_input(imp, g, on, "axes", 1);
	if (strcmp(op, "Slice") == 0 && v < 10)
		return ints_to_input(imp, g, on, "starts", 1) | ints_to_input(imp, g, on, "ends", 2) |
		       ints_to_input(imp, g, on, "axes", 3);
	if (strcmp(op, "Split") == 0 && v < 13)
		return ints_to_input(imp, g, on, "split", 1);
	if (strcmp(op, "Clip") == 0 && v < 11) {
		if (!find_attr(on, "min") && find_attr(on, "max")) {
			set_input(on, 1, onnx_const_scalar(imp, g, DT_F32, -INFINITY));
		}
		return float_to_input(imp, g, on, "min", 1) | float_to_input(imp, g, on, "max", 2);
	}
	if (strcmp(op, "Pad") == 0 && v < 11)
		return ints_to_input(imp, g, on, "pads", 1) | float_to_input(imp, g, on, "value", 2);
	if (strcmp(op, "TopK") == 0 && v < 10) {
		const Onnx__AttributeProto *a = find_attr(on, "k");
		if (!a) {
			diag_error(on->loc, "attribute 'k' is required");
			return -1;
		}
		drop_attr(on, "k");
		set_input(on, 1, onnx_const_i64(imp, g, &a->i, 1, 1));
	}
	return 0;
}

/* The standard ai.onnx operators (https://onnx.ai/onnx/operators/), so that an operator aicc
 * lacks is named as such, not answered with a misleading "did you mean". */
static const char *const onnx_ops[] = {
	"Abs", "Acos", "Acosh", "Add", "AffineGrid", "And", "ArgMax", "ArgMin",
	"Asin", "Asinh", "Atan", "Atanh", "Attention", "AveragePool", "BatchNormalization", "Bernoulli",
	"BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "BlackmanWindow", "Cast", "CastLike",
	"Ceil", "Celu", "CenterCropPad", "Clip", "Col2Im", "Compress", "Concat", "ConcatFromSequence",
	"Constant", "ConstantOfShape", "Conv", "ConvInteger", "ConvTranspose", "Cos", "Cosh", "CumSum",
	"DFT", "DeformConv", "DepthToSpace", "DequantizeLinear", "Det", "Div", "Dropout", "DynamicQuantizeLinear",
	"Einsum", "Elu", "Equal", "Erf", "Exp", "Expand", "EyeLike", "Flatten",
	"Floor", "GRU", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool",
	"GlobalLpPool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GridSample", "GroupNormalization", "HammingWindow", "HannWindow",
	"HardSigmoid", "HardSwish", "Hardmax", "Identity", "If", "ImageDecoder", "InstanceNormalization", "IsInf",
	"IsNaN", "LRN", "LSTM", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log",
	"LogSoftmax", "Loop", "LpNormalization", "LpPool", "MatMul", "MatMulInteger", "Max", "MaxPool",
	"MaxRoiPool", "MaxUnpool", "Mean", "MeanVarianceNormalization", "MelWeightMatrix", "Min", "Mish", "Mod",
	"Mul", "Multinomial", "Neg", "NegativeLogLikelihoodLoss", "NonMaxSuppression", "NonZero", "Not", "OneHot",
	"Optional", "OptionalGetElement", "OptionalHasElement", "Or", "PRelu", "Pad", "Pow", "QLinearConv",
	"QLinearMatMul", "QuantizeLinear", "RMSNormalization", "RNN", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
	"Range", "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
	"ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "RegexFullMatch", "Relu", "Reshape", "Resize",
	"ReverseSequence", "RoiAlign", "RotaryEmbedding", "Round", "STFT", "Scan", "Scatter", "ScatterElements",
	"ScatterND", "Selu", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
	"SequenceMap", "Shape", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Size",
	"Slice", "Softmax", "SoftmaxCrossEntropyLoss", "Softplus", "Softsign", "SpaceToDepth", "Split", "SplitToSequence",
	"Sqrt", "Squeeze", "StringConcat", "StringNormalizer", "StringSplit", "Sub", "Sum", "Swish",
	"Tan", "Tanh", "TensorScatter", "TfIdfVectorizer", "ThresholdedRelu", "Tile", "TopK", "Transpose",
	"Trilu", "Unique", "Unsqueeze", "Upsample", "Where", "Xor",
};

static int is_onnx_op(const char *op)
{
	for (size_t i = 0; i < sizeof onnx_ops / sizeof onnx_ops[0]; i++)
		if (strcmp(onnx_ops[i], op) == 0)
			return 1;
	return 0;
}

/* If {then_branch, else_branch}: both branches' nodes are imported into g before the If node,
 * each marked with the If as its guard, and the node becomes If(cond, then_1..k, else_1..k).
 * Shape inference skips the branch a known condition does not take and folds the If; with an
 * unknown condition the plan computes both and selects (ir/shape_ext.c shape_if). */
static int convert_if(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	const Onnx__AttributeProto *tb = find_attr(on, "then_branch"), *eb = find_attr(on, "else_branch");
	enum { MAXK = 32 };
	Value *ins[1 + 2 * MAXK], *outs[2][MAXK];
	if (!tb || !tb->g || !eb || !eb->g || on->nin != 1 || !on->in[0]) {
		diag_error(on->loc, "If needs a condition and graph attributes then_branch and else_branch");
		return -1;
	}
	Node *mark[3] = { g->last, NULL, NULL };
	int kt = onnx_import_subgraph(imp, tb->g, outs[0], MAXK);
	mark[1] = g->last;
	int ke = kt < 0 ? -1 : onnx_import_subgraph(imp, eb->g, outs[1], MAXK);
	mark[2] = g->last;
	if (kt < 0 || ke < 0)
		return -1;
	if (kt != ke || kt != on->nout || kt < 1) {
		diag_error(on->loc, "the then branch has %d outputs, the else branch %d, the node %d", kt, ke, on->nout);
		return -1;
	}
	ins[0] = on->in[0];
	for (int i = 0; i < kt; i++)
		ins[1 + i] = outs[0][i], ins[1 + kt + i] = outs[1][i];
	const char *names[MAXK];
	for (int i = 0; i < kt; i++)
		names[i] = on->outnames[i] ? on->outnames[i] : ir_fresh_name(g, "unused");
	Node *n = ir_add_node(g, OP_If, ins, 1 + 2 * kt, names, kt, on->loc);
	for (int i = 0; i < kt; i++)
		if (on->outnames[i])
			onnx_define(imp, on->outnames[i], n->out[i]);
	for (int b = 0; b < 2; b++) {      /* then: (mark0, mark1], else: (mark1, mark2] */
		if (mark[b] == mark[b + 1])
			continue;
		for (Node *x = mark[b] ? mark[b]->next : g->first; x && x != n; x = x->next) {
			if (!x->guard)
				x->guard = n, x->guard_then = b == 0;
			if (x == mark[b + 1])
				break;
		}
	}
	return 0;
}

/* v - zero point z as i32 (z absent: just the cast); a 1-D z of several entries is per output
 * channel of a weight of rank r (axis 0) and is unsqueezed to broadcast. */
static Value *minus_zero_point(OnnxImp *imp, Graph *g, OnnxNode *on, Value *v, Value *z, int r)
{
	Node *c = aux_node(g, OP_Cast, &v, 1, on->loc);
	ir_set_attr_str(c, "to", "i32");
	if (!z)
		return c->out[0];
	Node *cz = aux_node(g, OP_Cast, &z, 1, on->loc);
	ir_set_attr_str(cz, "to", "i32");
	Value *zz = cz->out[0];
	if (onnx_known_rank(imp, z) == 1 && r > 1) {
		int64_t ax[IR_MAX_RANK];
		for (int i = 1; i < r; i++)
			ax[i - 1] = i;
		Value *in[2] = { zz, onnx_const_i64(imp, g, ax, r - 1, 1) };
		zz = aux_node(g, OP_Unsqueeze, in, 2, on->loc)->out[0];
	}
	Value *in[2] = { c->out[0], zz };
	return aux_node(g, OP_Sub, in, 2, on->loc)->out[0];
}

/* ConvInteger(x, w, x_zero_point, w_zero_point) = Conv(i32(x) - x_zp, i32(w) - w_zp): the
 * products and sums are exact integers (Conv accumulates them in f32, exact below 2^24). */
static int convert_convinteger(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	if (on->nin < 2 || !on->in[0] || !on->in[1] || on->nin > 4) {
		diag_error(on->loc, "ConvInteger needs x, w and at most two zero points");
		return -1;
	}
	Value *xz = on->nin > 2 ? on->in[2] : NULL, *wz = on->nin > 3 ? on->in[3] : NULL;
	on->in[0] = minus_zero_point(imp, g, on, on->in[0], xz, 1);
	on->in[1] = minus_zero_point(imp, g, on, on->in[1], wz, onnx_known_rank(imp, on->in[1]));
	on->nin = 2;
	if (check_arity(OP_Conv, on) < 0)
		return -1;
	return copy_attrs(emit(imp, g, on, OP_Conv), on);
}

static Value *binop(Graph *g, Op op, Value *a, Value *b, Loc loc)
{
	Value *in[2] = { a, b };
	return aux_node(g, op, in, 2, loc)->out[0];
}

/* RoiAlign: opsets 10-15 have no coordinate_transformation_mode and do not shift the boxes by
 * half a pixel (opset 16's output_half_pixel); opset 16's default is half_pixel. */
static int convert_roialign(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	if (check_arity(OP_RoiAlign, on) < 0)
		return -1;
	Node *n = emit(imp, g, on, OP_RoiAlign);
	if (copy_attrs(n, on) < 0)
		return -1;
	if (on->opset < 16 && !find_attr(on, "coordinate_transformation_mode"))
		ir_set_attr_str(n, "coordinate_transformation_mode", "output_half_pixel");
	return 0;
}

static Value *cast_to(Graph *g, Value *v, DType dt, Loc loc)
{
	Node *c = aux_node(g, OP_Cast, &v, 1, loc);
	ir_set_attr_str(c, "to", rt_dtype_name(dt));
	return c->out[0];
}

/* QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B]), as the ONNX reference
 * computes it (onnx/reference/ops/op_qlinear_conv.py): the exact integer convolution
 * acc = Conv(i32(x) - x_zp, i32(w) - w_zp) + B, then
 *     y = saturate(round_half_even(f64(acc) * f64(x_scale * w_scale / y_scale) + y_zp))
 * with the scale ratio in f32 and the rest in f64 (numpy's int32 x float32 promotion); a 1-D
 * w_scale is per output channel (axis 1 of acc). */
static int convert_qlinearconv(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	if (on->nin < 8 || on->nin > 9 || on->nout != 1 || !on->outnames[0]) {
		diag_error(on->loc, "QLinearConv needs x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, "
			   "y_zero_point and an optional B, and one output");
		return -1;
	}
	for (int i = 0; i < 8; i++)
		if (!on->in[i]) {
			diag_error(on->loc, "QLinearConv input %d is missing", i);
			return -1;
		}
	Value *yz = on->in[7];
	DType qt = yz->type.dt;
	int rx = onnx_known_rank(imp, on->in[0]), rw = onnx_known_rank(imp, on->in[3]);
	if ((qt != DT_U8 && qt != DT_I8) || rx < 3 || rw != rx) {
		diag_error(on->loc, "QLinearConv needs y_zero_point's dtype (uint8 or int8) and the ranks of x and w "
			   "(equal, at least 3) at import");
		return -1;
	}
	Loc loc = on->loc;
	Value *cin[3] = { minus_zero_point(imp, g, on, on->in[0], on->in[2], 1),
			  minus_zero_point(imp, g, on, on->in[3], on->in[5], rw), on->nin > 8 ? on->in[8] : NULL };
	Node *cv = aux_node(g, OP_Conv, cin, cin[2] ? 3 : 2, loc);
	if (copy_attrs(cv, on) < 0)
		return -1;
	Value *ws = on->in[4];
	if (onnx_known_rank(imp, ws) == 1) {      /* per output channel: [M] -> [M, 1, ...] */
		int64_t ax[IR_MAX_RANK];
		for (int i = 0; i < rx - 2; i++)
			ax[i] = i + 1;
		Value *uin[2] = { ws, onnx_const_i64(imp, g, ax, rx - 2, 1) };
		ws = aux_node(g, OP_Unsqueeze, uin, 2, loc)->out[0];
	}
	Value *m = binop(g, OP_Div, binop(g, OP_Mul, on->in[1], ws, loc), on->in[6], loc);
	Value *r = binop(g, OP_Mul, cast_to(g, cv->out[0], DT_F64, loc), cast_to(g, m, DT_F64, loc), loc);
	r = binop(g, OP_Add, r, cast_to(g, yz, DT_F64, loc), loc);
	r = aux_node(g, OP_Round, &r, 1, loc)->out[0];
	r = binop(g, OP_Max, r, onnx_const_scalar(imp, g, DT_F64, qt == DT_U8 ? 0 : -128), loc);
	r = binop(g, OP_Min, r, onnx_const_scalar(imp, g, DT_F64, qt == DT_U8 ? 255 : 127), loc);
	const char *yname = on->outnames[0];
	Node *y = ir_add_node(g, OP_Cast, &r, 1, &yname, 1, loc);
	ir_set_attr_str(y, "to", rt_dtype_name(qt));
	onnx_define(imp, yname, y->out[0]);
	return 0;
}

/* BatchNormalization {training_mode=1} (opset 14+) with its running statistics:
 * mean, var := ReduceMean(X), ReduceMean((X-mean)^2) over every axis but 1 (population
 * variance), Y := BatchNormalization(X, scale, B, mean, var), running_mean := input_mean *
 * momentum + mean * (1-momentum), the same for var (the ONNX reference implementation). */
static int convert_bn_training(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	int r = on->in[0] ? onnx_known_rank(imp, on->in[0]) : -1;
	if (r < 2 || on->nin != 5 || !on->in[1] || !on->in[2] || !on->in[3] || !on->in[4]) {
		diag_error(on->loc, "BatchNormalization in training mode needs X's rank at import and 5 inputs");
		return -1;
	}
	const Onnx__AttributeProto *mo = find_attr(on, "momentum"), *ep = find_attr(on, "epsilon");
	double m = mo ? mo->f : 0.9;
	int64_t ax[IR_MAX_RANK];
	int na = 0;
	for (int i = 0; i < r; i++)
		if (i != 1)
			ax[na++] = i;
	Value *axes = onnx_const_i64(imp, g, ax, na, 1), *x = on->in[0];
	Value *in[2] = { x, axes };
	Node *mk = aux_node(g, OP_ReduceMean, in, 2, on->loc);
	Value *d = binop(g, OP_Sub, x, mk->out[0], on->loc);
	in[0] = binop(g, OP_Mul, d, d, on->loc);
	Node *vk = aux_node(g, OP_ReduceMean, in, 2, on->loc);
	in[0] = mk->out[0];
	Value *mean = aux_node(g, OP_Squeeze, in, 2, on->loc)->out[0];
	in[0] = vk->out[0];
	Value *var = aux_node(g, OP_Squeeze, in, 2, on->loc)->out[0];
	DType dt = on->in[3]->type.dt != DT_INVALID ? on->in[3]->type.dt : DT_F32;
	Value *km = onnx_const_scalar(imp, g, dt, m), *k1 = onnx_const_scalar(imp, g, dt, 1 - m);
	Value *bn_in[5] = { x, on->in[1], on->in[2], mean, var };
	const char *yname = on->outnames[0] ? on->outnames[0] : ir_fresh_name(g, "unused");
	Node *bn = ir_add_node(g, OP_BatchNormalization, bn_in, 5, &yname, 1, on->loc);
	ir_set_attr_float(bn, "epsilon", ep ? ep->f : 1e-5);
	if (on->outnames[0])
		onnx_define(imp, on->outnames[0], bn->out[0]);
	Value *stat[2] = { mean, var };
	for (int i = 1; i < on->nout && i < 3; i++) {
		Value *run = binop(g, OP_Add, binop(g, OP_Mul, on->in[2 + i], km, on->loc),
				   binop(g, OP_Mul, stat[i - 1], k1, on->loc), on->loc);
		if (on->outnames[i]) {
			Value *idin = run;
			const char *nm = on->outnames[i];
			Node *id = ir_add_node(g, OP_Identity, &idin, 1, &nm, 1, on->loc);
			onnx_define(imp, nm, id->out[0]);
		}
	}
	return 0;
}

/* Attention (opset 24) input 6, nonpad_kv_seqlen [batch]: key/value positions at or past it
 * are padding.  Becomes a bool mask Range(0, total_kv) < nonpad[b] of shape [B, 1, 1, kv],
 * combined with attn_mask (And for a bool mask, Where(m, mask, -inf) for an additive one). */
static int attention_nonpad(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	Value *np = on->in[6], *k = on->in[1], *mask = on->nin > 3 ? on->in[3] : NULL;
	int rk = onnx_known_rank(imp, k);
	if (rk != 3 && rk != 4) {
		diag_error(on->loc, "nonpad_kv_seqlen needs K's rank (3 or 4) at import");
		return -1;
	}
	int64_t ax = rk == 4 ? 2 : 1, zero = 0, one = 1, axes[3] = { 1, 2, 3 };
	Node *shp = aux_node(g, OP_Shape, &k, 1, on->loc);
	Value *gin[2] = { shp->out[0], onnx_const_i64(imp, g, &ax, 1, 0) };
	Value *skv = aux_node(g, OP_Gather, gin, 2, on->loc)->out[0];
	Value *rin[3] = { onnx_const_i64(imp, g, &zero, 1, 0), skv, onnx_const_i64(imp, g, &one, 1, 0) };
	Value *pos = aux_node(g, OP_Range, rin, 3, on->loc)->out[0];
	Value *uin[2] = { np, onnx_const_i64(imp, g, axes, 3, 1) };
	Value *lim = aux_node(g, OP_Unsqueeze, uin, 2, on->loc)->out[0];
	Value *m = binop(g, OP_Less, pos, lim, on->loc);
	if (mask && mask->type.dt == DT_BOOL) {
		m = binop(g, OP_And, mask, m, on->loc);
	} else if (mask) {
		DType dt = mask->type.dt != DT_INVALID ? mask->type.dt : DT_F32;
		Value *win[3] = { m, mask, onnx_const_scalar(imp, g, dt, -INFINITY) };
		m = aux_node(g, OP_Where, win, 3, on->loc)->out[0];
	}
	set_input(on, 3, m);
	on->in[6] = NULL;
	on->nin = 6;
	return 0;
}

int onnx_convert_node(OnnxImp *imp, Graph *g, OnnxNode *on)
{
	const char *op = on->np->op_type;
	if (strcmp(op, "Attention") == 0 && on->nin > 6 && on->in[6] && attention_nonpad(imp, g, on) < 0)
		return -1;
	if (strcmp(op, "If") == 0)
		return convert_if(imp, g, on);
	if (strcmp(op, "ConvInteger") == 0)
		return convert_convinteger(imp, g, on);
	if (strcmp(op, "QLinearConv") == 0)
		return convert_qlinearconv(imp, g, on);
	if (strcmp(op, "RoiAlign") == 0)
		return convert_roialign(imp, g, on);
	if (strcmp(op, "Scan") == 0)
		return onnx_unroll_scan(imp, g, on);
	const Onnx__AttributeProto *tm = find_attr(on, "training_mode");
	if (strcmp(op, "BatchNormalization") == 0 && tm && tm->i)
		return convert_bn_training(imp, g, on);
	if (strcmp(op, "LessOrEqual") == 0)
		return rewrite_cmp_or_equal(imp, g, on, OP_Less);
	if (strcmp(op, "GreaterOrEqual") == 0)
		return rewrite_cmp_or_equal(imp, g, on, OP_Greater);
	if (strcmp(op, "Upsample") == 0 || (strcmp(op, "Resize") == 0 && on->opset < 11))
		return rewrite_upsample(imp, g, on);
	Op o = strcmp(op, "Scatter") == 0 ? OP_ScatterElements : ir_op_lookup(op);   /* Scatter: opsets 9-10 */
	if (o == OP_COUNT || o == OP_Call || o == OP_Constant) {
		const char *s = ir_op_suggest(op);
		if (is_onnx_op(op))
			diag_error(on->loc, "unsupported operator '%s': aicc does not implement this ONNX "
				   "operator", op);
		else if (s && o == OP_COUNT && strcmp(s, op) != 0)
			diag_error(on->loc, "unknown operator '%s' (did you mean '%s'?)", op, s);
		else
			diag_error(on->loc, "unknown operator '%s'", op);
		return -1;
	}
	if (o == OP_GroupNormalization && on->opset < 21) {
		diag_error(on->loc, "GroupNormalization before opset 21 (per-group scale and bias) "
			   "is not supported; re-export with opset 21");
		return -1;
	}
	if (normalise_inputs(imp, g, on, op) < 0)
		return -1;
	if ((o == OP_Softmax || o == OP_LogSoftmax) && on->opset < 13)
		return rewrite_old_softmax(imp, g, on, o);
	if (o == OP_BatchNormalization)
		drop_attr(on, "spatial");
	drop_attr(on, "consumed_inputs");      /* opsets < 6: an optimisation hint */
	if (on->opset < 7 && legacy_broadcast(imp, g, on, o) < 0)
		return -1;
	if (o == OP_Cast)
		drop_attr(on, "to");
	if (o == OP_QuantizeLinear)
		drop_attr(on, "output_dtype");
	if (check_arity(o, on) < 0)
		return -1;
	Node *n = emit(imp, g, on, o);
	if (o == OP_ConstantOfShape && constofshape_attrs(imp, n, on) < 0)
		return -1;
	if (o == OP_Cast) {
		if (!find_attr(on, "to")) {
			diag_error(on->loc, "attribute 'to' is required");
			return -1;
		}
		if (dtype_attr(n, on, "to") < 0)
			return -1;
	}
	if (o == OP_QuantizeLinear && dtype_attr(n, on, "output_dtype") < 0)
		return -1;
	return copy_attrs(n, on);
}
