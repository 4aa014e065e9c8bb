/* ir/shape.c: PLACEHOLDER until the shape-inference work lands. */
#include "ir/ir.h"
#include "ir/diag.h"

int shape_argmax(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_attention(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_batchnorm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_bcast(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_call(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_cast(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_castlike(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_clip(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_combine(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_compare(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_concat(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_constant(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_constofshape(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_conv(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_cumsum(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_dequantize(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_dispatch(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_dropout(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_dynquant(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_einsum(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_embedding(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_expand(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_flatten(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_gather(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_gatherel(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_gemm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_globalpool(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_groupedmm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_groupnorm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_layernorm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_logical(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_matmul(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_pad(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_pool(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_pow(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_qlinearmm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_quant(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_quantize(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_range(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_reduce(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_reshape(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_rmsnorm(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_rotary(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_router(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_shape(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_size(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_slice(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_softmax(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_split(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_squeeze(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_tile(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_topk(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_transpose(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_unary(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_unsqueeze(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_vbcast(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int shape_where(ShapeCtx *c, Node *n) { (void)c; diag_error(n->loc, "shape rule not implemented"); return -1; }
int ir_infer_shapes(Module *m) { (void)m; return 0; }
const RtTensor *ir_const_data(Value *v) { (void)v; return 0; }
int ir_topo_sort(Graph *g) { (void)g; return 0; }
