/* The op table: one row per op with its name, arity, flags, differentiable inputs, shape
 * inference, backward builder and CPU kernel. Other backends keep their own kernel table
 * indexed by the same ids. */
#include "config.h"

#include <assert.h>

#include "core/ops-decl.h"

#define V RT_OPF_VIEW
#define S RT_OPF_STRIDED
#define FX RT_OPF_SIDE_EFFECT
#define R RT_OPF_RANDOM

#define ROW(id, nm, mn, mx, fl, diff, inf, bw, cpu, ws) \
    [RT_OP_##id] = {RT_OP_##id, nm, mn, mx, fl, diff, op_infer_##inf, bw, cpu, ws}

const rt_op_row rt_op_table[RT_OP_COUNT] = {
    ROW(FILL, "fill", 0, 0, 0, 0, fill, NULL, cpu_fill, NULL),
    ROW(CAST, "cast", 1, 1, S, 0x1, cast, op_backward_cast, cpu_cast, NULL),
    ROW(CONTIGUOUS, "contiguous", 1, 1, S, 0x1, contiguous, op_backward_identity, cpu_copy, NULL),
    ROW(RESHAPE, "reshape", 1, 1, V, 0x1, reshape, op_backward_reshape, NULL, NULL),
    ROW(PERMUTE, "permute", 1, 1, V | S, 0x1, permute, op_backward_permute, NULL, NULL),
    ROW(SLICE, "slice", 1, 1, V | S, 0x1, slice, op_backward_slice, NULL, NULL),
    ROW(EXPAND, "expand", 1, 1, V | S, 0x1, expand, op_backward_expand, NULL, NULL),
    ROW(PAD, "pad", 1, 1, S, 0x1, pad, op_backward_pad, cpu_pad, NULL),
    ROW(CONCAT, "concat", 1, RT_MAX_SRC, S, 0xff, concat, op_backward_concat, cpu_concat, NULL),
    ROW(ADD, "add", 2, 2, S, 0x3, binary, op_backward_binary, cpu_binary, NULL),
    ROW(SUB, "sub", 2, 2, S, 0x3, binary, op_backward_binary, cpu_binary, NULL),
    ROW(MUL, "mul", 2, 2, S, 0x3, binary, op_backward_binary, cpu_binary, NULL),
    ROW(DIV, "div", 2, 2, S, 0x3, binary, op_backward_binary, cpu_binary, NULL),
    ROW(SCALE, "scale", 1, 1, S, 0x1, unary, op_backward_scale, cpu_scale, NULL),
    ROW(RELU, "relu", 1, 1, S, 0x1, unary, op_backward_relu, cpu_relu, NULL),
    ROW(RELU_BACKWARD, "relu_backward", 2, 2, S, 0, unary_backward, NULL, cpu_relu_backward, NULL),
    ROW(GELU, "gelu", 1, 1, S, 0x1, unary, op_backward_gelu, cpu_gelu, NULL),
    ROW(GELU_BACKWARD, "gelu_backward", 2, 2, S, 0, unary_backward, NULL, cpu_gelu_backward, NULL),
    ROW(EXP, "exp", 1, 1, S, 0x1, unary, op_backward_exp, cpu_exp, NULL),
    ROW(GLU, "glu", 1, 1, 0, 0x1, glu, op_backward_glu, cpu_glu, NULL),
    ROW(GLU_BACKWARD, "glu_backward", 2, 2, 0, 0, glu_backward, NULL, cpu_glu_backward, NULL),
    ROW(SUM, "sum", 1, 1, 0, 0x1, sum, op_backward_sum, cpu_sum, NULL),
    ROW(MATMUL, "matmul", 2, 2, 0, 0x3, matmul, op_backward_matmul, cpu_matmul, cpu_ws_matmul),
    ROW(LINEAR, "linear", 2, 3, 0, 0x7, linear, op_backward_linear, cpu_linear, cpu_ws_linear),
    ROW(CONV2D, "conv2d", 2, 3, 0, 0x7, conv2d, op_backward_conv2d, cpu_conv2d, cpu_ws_conv2d),
    ROW(CONV2D_BACKWARD_DATA, "conv2d_backward_data", 2, 2, 0, 0, conv2d_backward_data, NULL,
        cpu_conv2d_backward_data, cpu_ws_conv2d_backward_data),
    ROW(CONV2D_BACKWARD_WEIGHT, "conv2d_backward_weight", 2, 2, 0, 0, conv2d_backward_weight, NULL,
        cpu_conv2d_backward_weight, cpu_ws_conv2d_backward_weight),
    ROW(FROZEN_BATCH_NORM, "frozen_batch_norm", 2, 5, 0, 0x1, frozen_batch_norm,
        op_backward_frozen_batch_norm, cpu_frozen_batch_norm, NULL),
    ROW(MAX_POOL2D, "max_pool2d", 1, 1, 0, 0x1, max_pool2d, op_backward_max_pool2d,
        cpu_max_pool2d, NULL),
    ROW(MAX_POOL2D_BACKWARD, "max_pool2d_backward", 2, 2, 0, 0, max_pool2d_backward, NULL,
        cpu_max_pool2d_backward, NULL),
    ROW(LAYER_NORM, "layer_norm", 1, 3, 0, 0x7, layer_norm, op_backward_layer_norm,
        cpu_layer_norm, NULL),
    ROW(LAYER_NORM_BACKWARD, "layer_norm_backward", 4, 4, 0, 0, layer_norm_backward, NULL,
        cpu_layer_norm_backward, NULL),
    ROW(SOFTMAX, "softmax", 1, 1, 0, 0x1, softmax, op_backward_softmax, cpu_softmax, NULL),
    ROW(SOFTMAX_BACKWARD, "softmax_backward", 2, 2, 0, 0, unary_backward, NULL,
        cpu_softmax_backward, NULL),
    ROW(ATTENTION, "attention", 3, 5, R, 0x7, attention, op_backward_attention, cpu_attention,
        cpu_ws_attention),
    ROW(ATTENTION_BACKWARD, "attention_backward", 5, 6, R, 0, attention_backward, NULL,
        cpu_attention_backward, cpu_ws_attention_backward),
    ROW(EMBEDDING, "embedding", 2, 2, 0, 0x1, embedding, op_backward_embedding, cpu_embedding,
        NULL),
    ROW(EMBEDDING_BACKWARD, "embedding_backward", 2, 2, 0, 0, embedding_backward, NULL,
        cpu_embedding_backward, NULL),
    ROW(DROPOUT, "dropout", 2, 2, S | R, 0x1, dropout, op_backward_dropout, cpu_dropout, NULL),
    ROW(RAND_UNIFORM, "rand_uniform", 1, 1, R, 0, random, NULL, cpu_rand_uniform, NULL),
    ROW(RAND_NORMAL, "rand_normal", 1, 1, R, 0, random, NULL, cpu_rand_normal, NULL),
    ROW(L1_LOSS, "l1_loss", 2, 3, 0, 0x3, l1_loss, op_backward_l1_loss, cpu_l1_loss,
        cpu_ws_l1_loss),
    ROW(L1_LOSS_BACKWARD, "l1_loss_backward", 3, 4, 0, 0, l1_loss_backward, NULL,
        cpu_l1_loss_backward, NULL),
    ROW(KL_LOSS, "kl_loss", 2, 2, 0, 0x3, kl_loss, op_backward_kl_loss, cpu_kl_loss, NULL),
    ROW(KL_LOSS_BACKWARD, "kl_loss_backward", 3, 3, 0, 0, kl_loss_backward, NULL,
        cpu_kl_loss_backward, NULL),
    ROW(STEP_INC, "step_inc", 1, 2, FX, 0, step_inc, NULL, cpu_step_inc, NULL),
    ROW(GRAD_NORM, "grad_norm", 1, 1, 0, 0, grad_norm, NULL, cpu_grad_norm, cpu_ws_grad_norm),
    ROW(CLIP_GRAD, "clip_grad", 3, 3, FX, 0, clip_grad, NULL, cpu_clip_grad, NULL),
    ROW(ADAMW, "adamw", 6, 7, FX, 0, adamw, NULL, cpu_adamw, NULL),
    ROW(AMP_UNSCALE, "amp_unscale", 2, 2, FX, 0, amp_unscale, NULL, cpu_amp_unscale,
        cpu_ws_amp_unscale),
    ROW(AMP_UPDATE, "amp_update", 1, 1, FX, 0, amp_update, NULL, cpu_amp_update, NULL),
    ROW(ALLREDUCE, "allreduce", 1, 1, FX, 0, allreduce, NULL, cpu_allreduce, NULL),
};

/* a new op needs a row (and its tests: test-autodiff iterates this table) */
static_assert(sizeof rt_op_table / sizeof rt_op_table[0] == RT_OP_COUNT,
              "rt_op_table needs one row per rt_op");
static_assert(RT_OP_ALLREDUCE + 1 == RT_OP_COUNT, "the last row of rt_op_table is allreduce");

const char *rt_op_name(rt_op op)
{
    return (unsigned)op < RT_OP_COUNT ? rt_op_table[op].name : NULL;
}

int rt_op_count(void)
{
    return RT_OP_COUNT;
}

gboolean rt_op_is_view(rt_op op)
{
    return (unsigned)op < RT_OP_COUNT && (rt_op_table[op].flags & RT_OPF_VIEW);
}

gboolean rt_op_is_differentiable(rt_op op)
{
    return (unsigned)op < RT_OP_COUNT && rt_op_table[op].backward != NULL;
}
