/* plugins/backend-cuda/cuda-ops.c: the CUDA op table, and the ops whose work is the module's
 * own kernels: copies and casts, element-wise ops, reductions, normalisations, pooling,
 * embeddings, randomness, losses and the optimizer. Each reads the node exactly as its CPU twin
 * in src/core/backend-cpu-*.c does (same inline parameters, same derived sizes) and hands the
 * kernel plain sizes and device addresses. matmul, linear and attention are in
 * cuda-ops-gemm.c, the convolutions in cuda-ops-conv.c. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "core/graph-internal.h" /* RT_HYPER_PER_GROUP: the layout of the optimizer state */
#include "cuda-error.h"
#include "cuda-exec.h"

/* the two enums must agree (compared as ints: they are distinct enum types) */
#define SAME(a, b) ((int)(a) == (int)(b))
G_STATIC_ASSERT(SAME(RT_CUDA_F32, RT_F32) && SAME(RT_CUDA_F64, RT_F64) && SAME(RT_CUDA_BF16, RT_BF16) &&
                SAME(RT_CUDA_F16, RT_F16) && SAME(RT_CUDA_I64, RT_I64) && SAME(RT_CUDA_I32, RT_I32) &&
                SAME(RT_CUDA_U8, RT_U8) && SAME(RT_CUDA_BOOL, RT_BOOL) && RT_DTYPE_COUNT == 8);
G_STATIC_ASSERT(SAME(RT_CUDA_L1_MEAN_ALL, RT_L1_MEAN_ALL) && SAME(RT_CUDA_L1_MEAN_VALID, RT_L1_MEAN_VALID));
G_STATIC_ASSERT(RT_CUDA_MAX_DIMS == RT_MAX_DIMS);
G_STATIC_ASSERT(RT_HYPER_PER_GROUP == 5 && RT_HYPER_LR == 0 && RT_HYPER_WD == 4);

static gboolean is_float(rt_dtype d)
{
    return d == RT_F32 || d == RT_F64;
}

/* ---- supports */

static gboolean any_dtype(const rt_node *node)
{
    (void)node;
    return TRUE;
}

/* output 0 is f32 or f64 (the core checked the inputs against it) */
static gboolean float_out(const rt_node *node)
{
    return node->out[0] && is_float(node->out[0]->dtype);
}

static gboolean float_src0(const rt_node *node)
{
    return node->src[0] && is_float(node->src[0]->dtype);
}

static gboolean step_is_f64(const rt_node *node)
{
    return node->src[0]->dtype == RT_F64 && rt_tensor_numel(node->src[0]) == 1;
}

/* step_inc and adamw with the loss scaler's state as last input skip overflowed steps, which
 * these kernels do not do yet */
static gboolean step_unscaled(const rt_node *node)
{
    return node->n_src == 1 && step_is_f64(node);
}

static gboolean adamw_unscaled(const rt_node *node)
{
    return (node->n_src == 6 || !node->src[6]) && float_src0(node);
}

/* ---- helpers */

/* t's strides when read as out_shape (0 on broadcast axes), as rt_broadcast_strides */
static void broadcast_strides(const rt_tensor *t, int out_ndim, const int64_t *out_shape, int64_t *stride)
{
    for (int i = 0; i < out_ndim; i++) {
        int j = i - (out_ndim - t->ndim);
        stride[i] = j < 0 || t->shape[j] == 1 ? 0 : t->stride[j];
    }
}

/* a walk over y's shape with y's strides and a, b broadcast onto it (a, b may be NULL) */
static void walk_of(rt_cuda_iter *it, const rt_tensor *y, const rt_tensor *a, const rt_tensor *b)
{
    int64_t sa[RT_MAX_DIMS] = {0}, sb[RT_MAX_DIMS] = {0};
    const int64_t *strides[3] = {y->stride, sa, sb};
    if (a)
        broadcast_strides(a, y->ndim, y->shape, sa);
    if (b)
        broadcast_strides(b, y->ndim, y->shape, sb);
    rt_cuda_iter_init(it, y->ndim, y->shape, b ? 3 : a ? 2 : 1, strides);
}

const char *rt_cuda_node_label(const rt_cuda_ctx *ctx, const rt_node *node, char *buf, size_t size)
{
    g_snprintf(buf, size, "cuda:%d: node %d (op %s)", ctx->dev->index, node->id, rt_op_name((rt_op)node->op));
    return buf;
}

gboolean rt_cuda_launched(const rt_cuda_ctx *ctx, const rt_node *node, cudaError_t status, GError **error)
{
    if (status == cudaSuccess)
        return TRUE;
    char label[96];
    return rt_cuda_check(status, error, "%s: launching its kernels",
                         rt_cuda_node_label(ctx, node, label, sizeof label));
}

gboolean rt_cuda_round_input(const rt_cuda_ctx *ctx, const rt_node *node, const rt_tensor *src, int cd,
                             void *dst, GError **error)
{
    return rt_cuda_launched(
        ctx, node, rt_cuda_round(cd, cd, rt_tensor_numel(src), rt_cuda_ptr(ctx, src), dst, ctx->stream),
        error);
}

#define LAUNCH(call) rt_cuda_launched(ctx, node, (call), error)

/* x (any strides) into the region of y that starts at element y_offset, with y's strides */
static gboolean copy_into(rt_cuda_ctx *ctx, const rt_node *node, const rt_tensor *x, const rt_tensor *y,
                          int64_t y_offset, GError **error)
{
    rt_cuda_iter it;
    const int64_t *strides[2] = {y->stride, x->stride};
    rt_cuda_iter_init(&it, x->ndim, x->shape, 2, strides);
    size_t es = rt_dtype_size(x->dtype);
    return LAUNCH(rt_cuda_copy(es, &it, (uint8_t *)rt_cuda_ptr(ctx, y) + y_offset * (int64_t)es,
                               rt_cuda_ptr(ctx, x), ctx->stream));
}

/* ---- fill, cast, copies */

static gboolean run_fill(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    return LAUNCH(
        rt_cuda_fill_value(y->dtype, rt_tensor_numel(y), node->fp[0], rt_cuda_ptr(ctx, y), ctx->stream));
}

static gboolean run_cast(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    rt_cuda_iter it;
    walk_of(&it, node->out[0], node->src[0], NULL);
    return LAUNCH(rt_cuda_cast(node->src[0]->dtype, node->out[0]->dtype, &it, rt_cuda_ptr(ctx, node->out[0]),
                               rt_cuda_ptr(ctx, node->src[0]), ctx->stream));
}

static gboolean run_contiguous(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    return copy_into(ctx, node, node->src[0], node->out[0], 0, error);
}

static gboolean run_pad(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    char label[96];
    if (!rt_cuda_check(cudaMemsetAsync(rt_cuda_ptr(ctx, y), 0, rt_tensor_nbytes(y), ctx->stream), error,
                       "%s: cudaMemsetAsync", rt_cuda_node_label(ctx, node, label, sizeof label)))
        return FALSE;
    int axis = (int)node->ip[0];
    return copy_into(ctx, node, node->src[0], y, node->ip[1] * y->stride[axis], error);
}

static gboolean run_concat(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    int axis = (int)node->ip[0];
    int64_t at = 0;
    for (int i = 0; i < node->n_src; i++) {
        if (!copy_into(ctx, node, node->src[i], y, at * y->stride[axis], error))
            return FALSE;
        at += node->src[i]->shape[axis];
    }
    return TRUE;
}

/* ---- element-wise */

static int binary_code(rt_op op)
{
    switch (op) {
    case RT_OP_ADD:
        return RT_CUDA_ADD;
    case RT_OP_SUB:
        return RT_CUDA_SUB;
    case RT_OP_MUL:
        return RT_CUDA_MUL;
    case RT_OP_DIV:
        return RT_CUDA_DIV;
    case RT_OP_RELU_BACKWARD:
        return RT_CUDA_RELU_BW;
    default:
        return RT_CUDA_GELU_BW;
    }
}

static gboolean run_binary(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    rt_cuda_iter it;
    walk_of(&it, y, node->src[0], node->src[1]);
    return LAUNCH(rt_cuda_binary(binary_code((rt_op)node->op), y->dtype, &it, rt_cuda_ptr(ctx, y),
                                 rt_cuda_ptr(ctx, node->src[0]), rt_cuda_ptr(ctx, node->src[1]),
                                 ctx->stream));
}

static gboolean run_unary(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    int code = node->op == RT_OP_SCALE  ? RT_CUDA_SCALE
               : node->op == RT_OP_RELU ? RT_CUDA_RELU
               : node->op == RT_OP_GELU ? RT_CUDA_GELU
                                        : RT_CUDA_EXP;
    rt_cuda_iter it;
    walk_of(&it, y, node->src[0], NULL);
    return LAUNCH(rt_cuda_unary(code, y->dtype, &it, rt_cuda_ptr(ctx, y), rt_cuda_ptr(ctx, node->src[0]),
                                node->fp[0], node->fp[1], ctx->stream));
}

/* x [pre, 2h, post] around axis */
static void glu_dims(const rt_tensor *x, int axis, int64_t *pre, int64_t *h, int64_t *post)
{
    *pre = 1;
    for (int i = 0; i < axis; i++)
        *pre *= x->shape[i];
    *h = x->shape[axis] / 2;
    *post = 1;
    for (int i = axis + 1; i < x->ndim; i++)
        *post *= x->shape[i];
}

static gboolean run_glu(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    int64_t pre, h, post;
    glu_dims(node->src[0], (int)node->ip[0], &pre, &h, &post);
    return LAUNCH(rt_cuda_glu(node->src[0]->dtype, pre, h, post, rt_cuda_ptr(ctx, node->src[0]),
                              rt_cuda_ptr(ctx, node->out[0]), ctx->stream));
}

static gboolean run_glu_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    int64_t pre, h, post;
    glu_dims(node->src[1], (int)node->ip[0], &pre, &h, &post);
    return LAUNCH(rt_cuda_glu_backward(node->src[1]->dtype, pre, h, post, rt_cuda_ptr(ctx, node->src[0]),
                                       rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->out[0]),
                                       ctx->stream));
}

/* ---- sum: runs of adjacent axes of one kind merged, as cpu_sum does; [rows, cols] with the
 * rows reduced gets the column kernel */

typedef struct sum_plan {
    gboolean rows_case;
    int64_t rows, cols;
    rt_cuda_sum general;
} sum_plan;

static void plan_sum(const rt_node *node, sum_plan *p)
{
    const rt_tensor *x = node->src[0], *y = node->out[0];
    uint32_t axes = (uint32_t)node->ip[0];
    int64_t size[RT_MAX_DIMS], stride[RT_MAX_DIMS];
    gboolean red[RT_MAX_DIMS];
    int n = 0;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < x->ndim; i++) {
        gboolean r = (axes & (1u << i)) != 0;
        if (x->shape[i] == 1)
            continue;
        if (n > 0 && red[n - 1] == r) {
            size[n - 1] *= x->shape[i];
            stride[n - 1] = x->stride[i];
            continue;
        }
        size[n] = x->shape[i];
        stride[n] = x->stride[i];
        red[n] = r;
        n++;
    }
    if (n == 2 && red[0] && !red[1]) {
        p->rows_case = TRUE;
        p->rows = size[0];
        p->cols = size[1];
        return;
    }
    rt_cuda_sum *s = &p->general;
    for (int i = 0; i < n; i++) {
        if (red[i]) {
            s->red_size[s->n_red] = size[i];
            s->red_stride[s->n_red++] = stride[i];
        } else {
            s->kept_size[s->n_kept] = size[i];
            s->kept_stride[s->n_kept++] = stride[i];
        }
    }
    if (s->n_red == 0) {
        s->red_size[0] = 1;
        s->red_stride[0] = 1;
        s->n_red = 1;
    }
    s->n_out = rt_tensor_numel(y);
    s->n_red_total = 1;
    for (int i = 0; i < s->n_red; i++)
        s->n_red_total *= s->red_size[i];
    s->scale = node->fp[0];
}

static size_t ws_sum(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    sum_plan p;
    plan_sum(node, &p);
    return p.rows_case ? rt_cuda_sum_rows_workspace(p.rows, p.cols) : 0;
}

static gboolean run_sum(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    sum_plan p;
    plan_sum(node, &p);
    const rt_tensor *x = node->src[0];
    if (p.rows_case)
        return LAUNCH(rt_cuda_sum_rows(x->dtype, p.rows, p.cols, node->fp[0], rt_cuda_ptr(ctx, x),
                                       rt_cuda_ptr(ctx, node->out[0]), rt_cuda_ws(ctx, node), ctx->stream));
    return LAUNCH(rt_cuda_sum_general(x->dtype, &p.general, rt_cuda_ptr(ctx, x),
                                      rt_cuda_ptr(ctx, node->out[0]), ctx->stream));
}

/* ---- rows: softmax, layer norm */

static int64_t last_dim(const rt_tensor *t)
{
    return t->ndim ? t->shape[t->ndim - 1] : 1;
}

static gboolean run_softmax(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *x = node->src[0];
    int64_t d = last_dim(x);
    return LAUNCH(rt_cuda_softmax(x->dtype, rt_tensor_numel(x) / d, d, rt_cuda_ptr(ctx, x),
                                  rt_cuda_ptr(ctx, node->out[0]), ctx->stream));
}

static gboolean run_softmax_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->src[1];
    int64_t d = last_dim(y);
    return LAUNCH(rt_cuda_softmax_backward(y->dtype, rt_tensor_numel(y) / d, d,
                                           rt_cuda_ptr(ctx, node->src[0]), rt_cuda_ptr(ctx, y),
                                           rt_cuda_ptr(ctx, node->out[0]), ctx->stream));
}

static gboolean run_layer_norm(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *x = node->src[0];
    int64_t d = last_dim(x);
    return LAUNCH(rt_cuda_layer_norm(x->dtype, rt_tensor_numel(x) / d, d, node->fp[0], rt_cuda_ptr(ctx, x),
                                     rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->src[2]),
                                     rt_cuda_ptr(ctx, node->out[0]), rt_cuda_ptr(ctx, node->out[1]),
                                     ctx->stream));
}

static size_t ws_layer_norm_backward(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    const rt_tensor *x = node->src[1];
    int64_t d = last_dim(x);
    return node->out[1] || node->out[2] ? rt_cuda_layer_norm_backward_workspace(rt_tensor_numel(x) / d, d)
                                        : 0;
}

static gboolean run_layer_norm_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *x = node->src[1];
    int64_t d = last_dim(x);
    return LAUNCH(rt_cuda_layer_norm_backward(
        x->dtype, rt_tensor_numel(x) / d, d, rt_cuda_ptr(ctx, node->src[0]), rt_cuda_ptr(ctx, x),
        rt_cuda_ptr(ctx, node->src[2]), rt_cuda_ptr(ctx, node->src[3]), rt_cuda_ptr(ctx, node->out[0]),
        rt_cuda_ptr(ctx, node->out[1]), rt_cuda_ptr(ctx, node->out[2]), rt_cuda_ws(ctx, node), ctx->stream));
}

/* ---- frozen batch norm, pooling, embedding */

static gboolean run_frozen_batch_norm(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *x = node->src[0];
    int64_t planes = x->shape[0] * x->shape[1];
    return LAUNCH(rt_cuda_frozen_batch_norm(
        x->dtype, planes, x->shape[1], rt_tensor_numel(x) / planes, node->fp[0], rt_cuda_ptr(ctx, x),
        rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->src[2]), rt_cuda_ptr(ctx, node->src[3]),
        rt_cuda_ptr(ctx, node->src[4]), rt_cuda_ptr(ctx, node->out[0]), ctx->stream));
}

static gboolean run_max_pool2d(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *x = node->src[0], *y = node->out[0];
    return LAUNCH(rt_cuda_max_pool2d(x->dtype, x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                                     node->ip[0], node->ip[1], node->ip[2], y->shape[2], y->shape[3],
                                     rt_cuda_ptr(ctx, x), rt_cuda_ptr(ctx, y), rt_cuda_ptr(ctx, node->out[1]),
                                     ctx->stream));
}

static gboolean run_max_pool2d_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *dy = node->src[0];
    return LAUNCH(rt_cuda_max_pool2d_backward(
        dy->dtype, node->ip[3], node->ip[4], node->ip[5], node->ip[6], node->ip[0], node->ip[1], node->ip[2],
        dy->shape[2], dy->shape[3], rt_cuda_ptr(ctx, dy), rt_cuda_ptr(ctx, node->src[1]),
        rt_cuda_ptr(ctx, node->out[0]), ctx->stream));
}

static gboolean run_embedding(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *w = node->src[0], *ix = node->src[1];
    int64_t n = rt_tensor_numel(ix);
    return LAUNCH(rt_cuda_check_indices(rt_cuda_ptr(ctx, ix), n, w->shape[0], node->id, ctx->status,
                                        ctx->stream)) &&
           LAUNCH(rt_cuda_embedding(rt_dtype_size(w->dtype), n, w->shape[1], w->shape[0],
                                    rt_cuda_ptr(ctx, ix), rt_cuda_ptr(ctx, w), rt_cuda_ptr(ctx, node->out[0]),
                                    ctx->stream));
}

static gboolean run_embedding_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *dy = node->src[0], *ix = node->src[1];
    int64_t n = rt_tensor_numel(ix), rows = node->ip[0];
    return LAUNCH(rt_cuda_check_indices(rt_cuda_ptr(ctx, ix), n, rows, node->id, ctx->status, ctx->stream)) &&
           LAUNCH(rt_cuda_embedding_backward(dy->dtype, n, last_dim(dy), rows, rt_cuda_ptr(ctx, ix),
                                             rt_cuda_ptr(ctx, dy), rt_cuda_ptr(ctx, node->out[0]),
                                             ctx->stream));
}

/* ---- randomness */

/* the stream of a random node: rng id ip0, batch axis ip1 of y */
static rt_cuda_rng rng_of(const rt_cuda_ctx *ctx, const rt_node *node, const rt_tensor *state,
                          const rt_tensor *y)
{
    rt_cuda_rng r = {rt_cuda_ptr(ctx, state), node->ip[0], 1, 0};
    int axis = (int)node->ip[1];
    if (axis >= 0 && axis < y->ndim) {
        r.batch = y->shape[axis];
        r.post = 1;
        for (int i = axis + 1; i < y->ndim; i++)
            r.post *= y->shape[i];
    }
    return r;
}

static gboolean run_dropout(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    rt_cuda_rng rng = rng_of(ctx, node, node->src[1], y);
    rt_cuda_iter it;
    walk_of(&it, y, node->src[0], NULL);
    return LAUNCH(rt_cuda_dropout(y->dtype, &it, &rng, node->fp[0], rt_cuda_ptr(ctx, y),
                                  rt_cuda_ptr(ctx, node->src[0]), ctx->stream));
}

static gboolean run_random(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *y = node->out[0];
    rt_cuda_rng rng = rng_of(ctx, node, node->src[0], y);
    return LAUNCH(rt_cuda_rand(y->dtype, node->op == RT_OP_RAND_NORMAL, rt_tensor_numel(y), &rng, node->fp[0],
                               node->fp[1], rt_cuda_ptr(ctx, y), ctx->stream));
}

/* ---- losses */

static size_t ws_loss(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    return rt_cuda_loss_workspace(rt_tensor_numel(node->src[0]));
}

static size_t ws_scalar(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    (void)node;
    return rt_cuda_loss_workspace(1);
}

/* elements of pred per mask entry */
static int64_t mask_inner(const rt_tensor *pred, const rt_tensor *mask)
{
    return mask ? rt_tensor_numel(pred) / rt_tensor_numel(mask) : 1;
}

static gboolean run_l1_loss(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *pred = node->src[0], *mask = node->src[2];
    return LAUNCH(rt_cuda_l1_loss(pred->dtype, rt_tensor_numel(pred), mask_inner(pred, mask),
                                  rt_cuda_ptr(ctx, mask), (int)node->ip[0], rt_cuda_ptr(ctx, pred),
                                  rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->out[0]),
                                  rt_cuda_ws(ctx, node), ctx->stream));
}

static gboolean run_l1_loss_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *pred = node->src[1], *mask = node->src[3];
    return LAUNCH(rt_cuda_l1_loss_backward(
        pred->dtype, rt_tensor_numel(pred), mask_inner(pred, mask), rt_cuda_ptr(ctx, mask), (int)node->ip[0],
        rt_cuda_ptr(ctx, node->src[0]), rt_cuda_ptr(ctx, pred), rt_cuda_ptr(ctx, node->src[2]),
        rt_cuda_ptr(ctx, node->out[0]), rt_cuda_ws(ctx, node), ctx->stream));
}

static gboolean run_kl_loss(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *mu = node->src[0];
    return LAUNCH(rt_cuda_kl_loss(mu->dtype, rt_tensor_numel(mu), mu->shape[0], rt_cuda_ptr(ctx, mu),
                                  rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->out[0]),
                                  rt_cuda_ws(ctx, node), ctx->stream));
}

static gboolean run_kl_loss_backward(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *mu = node->src[1];
    return LAUNCH(rt_cuda_kl_loss_backward(mu->dtype, rt_tensor_numel(mu), mu->shape[0],
                                           rt_cuda_ptr(ctx, node->src[0]), rt_cuda_ptr(ctx, mu),
                                           rt_cuda_ptr(ctx, node->src[2]), rt_cuda_ptr(ctx, node->out[0]),
                                           rt_cuda_ptr(ctx, node->out[1]), ctx->stream));
}

/* ---- optimizer */

static gboolean run_step_inc(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    return LAUNCH(rt_cuda_step_inc(rt_cuda_ptr(ctx, node->src[0]), ctx->stream));
}

static size_t ws_grad_norm(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    return rt_cuda_grad_norm_workspace(rt_tensor_numel(node->src[0]));
}

static gboolean run_grad_norm(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *g = node->src[0];
    return LAUNCH(rt_cuda_grad_norm(g->dtype, rt_tensor_numel(g), rt_cuda_ptr(ctx, g),
                                    rt_cuda_ptr(ctx, node->out[0]), rt_cuda_ws(ctx, node), ctx->stream));
}

static gboolean run_clip_grad(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *g = node->src[0];
    return LAUNCH(rt_cuda_clip_grad(g->dtype, rt_tensor_numel(g), rt_cuda_ptr(ctx, g),
                                    rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->src[2]),
                                    rt_tensor_numel(node->src[2]), ctx->stream));
}

/* Gradient averaging: the graph's collective (the trainer's comm module, NCCL for CUDA) queues
 * the all-reduce of the bucket on this stream, stream-ordered, without the host waiting. */
static gboolean run_allreduce(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    return rt_graph_run_collective(ctx->graph, node, rt_cuda_ptr(ctx, node->src[0]), ctx->stream, error);
}

static size_t ws_adamw(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    (void)node;
    return rt_cuda_adamw_workspace();
}

static gboolean run_adamw(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    (void)priv;
    const rt_tensor *p = node->src[0];
    const double *hyper = (const double *)rt_cuda_ptr(ctx, node->src[4]) + node->ip[0] * RT_HYPER_PER_GROUP;
    return LAUNCH(rt_cuda_adamw(p->dtype, rt_tensor_numel(p), rt_cuda_ptr(ctx, p),
                                rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->src[2]),
                                rt_cuda_ptr(ctx, node->src[3]), hyper, rt_cuda_ptr(ctx, node->src[5]),
                                rt_cuda_ws(ctx, node), ctx->stream));
}

/* ---- the table (views compute nothing: they only need to be supported). matmul, linear,
 * attention and the convolutions have their rows in other files: rt_cuda_op_for. */

#define ROW(id, sup, ws, fn) [RT_OP_##id] = {.supports = sup, .workspace = ws, .run = fn}
#define VIEW(id) [RT_OP_##id] = {.supports = any_dtype}

static const rt_cuda_op table[] = {
    ROW(FILL, any_dtype, NULL, run_fill),
    ROW(CAST, any_dtype, NULL, run_cast),
    ROW(CONTIGUOUS, any_dtype, NULL, run_contiguous),
    VIEW(RESHAPE),
    VIEW(PERMUTE),
    VIEW(SLICE),
    VIEW(EXPAND),
    ROW(PAD, any_dtype, NULL, run_pad),
    ROW(CONCAT, any_dtype, NULL, run_concat),
    ROW(ADD, float_out, NULL, run_binary),
    ROW(SUB, float_out, NULL, run_binary),
    ROW(MUL, float_out, NULL, run_binary),
    ROW(DIV, float_out, NULL, run_binary),
    ROW(SCALE, float_out, NULL, run_unary),
    ROW(RELU, float_out, NULL, run_unary),
    ROW(RELU_BACKWARD, float_out, NULL, run_binary),
    ROW(GELU, float_out, NULL, run_unary),
    ROW(GELU_BACKWARD, float_out, NULL, run_binary),
    ROW(EXP, float_out, NULL, run_unary),
    ROW(GLU, float_out, NULL, run_glu),
    ROW(GLU_BACKWARD, float_out, NULL, run_glu_backward),
    ROW(SUM, float_out, ws_sum, run_sum),
    [RT_OP_MATMUL] = {NULL, NULL, NULL, NULL, NULL},
    [RT_OP_LINEAR] = {NULL, NULL, NULL, NULL, NULL},
    [RT_OP_CONV2D] = {NULL, NULL, NULL, NULL, NULL},
    [RT_OP_CONV2D_BACKWARD_DATA] = {NULL, NULL, NULL, NULL, NULL},
    [RT_OP_CONV2D_BACKWARD_WEIGHT] = {NULL, NULL, NULL, NULL, NULL},
    ROW(FROZEN_BATCH_NORM, float_out, NULL, run_frozen_batch_norm),
    ROW(MAX_POOL2D, float_out, NULL, run_max_pool2d),
    ROW(MAX_POOL2D_BACKWARD, float_out, NULL, run_max_pool2d_backward),
    ROW(LAYER_NORM, float_out, NULL, run_layer_norm),
    ROW(LAYER_NORM_BACKWARD, float_out, ws_layer_norm_backward, run_layer_norm_backward),
    ROW(SOFTMAX, float_out, NULL, run_softmax),
    ROW(SOFTMAX_BACKWARD, float_out, NULL, run_softmax_backward),
    [RT_OP_ATTENTION] = {NULL, NULL, NULL, NULL, NULL},
    [RT_OP_ATTENTION_BACKWARD] = {NULL, NULL, NULL, NULL, NULL},
    ROW(EMBEDDING, float_out, NULL, run_embedding),
    ROW(EMBEDDING_BACKWARD, float_out, NULL, run_embedding_backward),
    ROW(DROPOUT, float_out, NULL, run_dropout),
    ROW(RAND_UNIFORM, float_out, NULL, run_random),
    ROW(RAND_NORMAL, float_out, NULL, run_random),
    ROW(L1_LOSS, float_out, ws_loss, run_l1_loss),
    ROW(L1_LOSS_BACKWARD, float_out, ws_scalar, run_l1_loss_backward),
    ROW(KL_LOSS, float_out, ws_loss, run_kl_loss),
    ROW(KL_LOSS_BACKWARD, float_out, NULL, run_kl_loss_backward),
    ROW(STEP_INC, step_unscaled, NULL, run_step_inc),
    ROW(GRAD_NORM, float_src0, ws_grad_norm, run_grad_norm),
    ROW(CLIP_GRAD, float_src0, NULL, run_clip_grad),
    ROW(ADAMW, adamw_unscaled, ws_adamw, run_adamw),
    /* dynamic loss scaling (f16 mixed precision): no kernels yet, so such graphs are refused
     * at planning, naming the op */
    [RT_OP_AMP_UNSCALE] = {NULL, NULL, NULL, NULL, NULL},
    [RT_OP_AMP_UPDATE] = {NULL, NULL, NULL, NULL, NULL},
    ROW(ALLREDUCE, float_src0, NULL, run_allreduce),
};

/* a new op gets a row here (or in the files below) and a case in tests/test-cuda-ops.c */
G_STATIC_ASSERT(G_N_ELEMENTS(table) == RT_OP_COUNT);

const rt_cuda_op *rt_cuda_op_for(int op)
{
    switch (op) {
    case RT_OP_MATMUL:
        return &rt_cuda_op_matmul;
    case RT_OP_LINEAR:
        return &rt_cuda_op_linear;
    case RT_OP_ATTENTION:
        return &rt_cuda_op_attention;
    case RT_OP_ATTENTION_BACKWARD:
        return &rt_cuda_op_attention_backward;
    case RT_OP_CONV2D:
        return &rt_cuda_op_conv2d;
    case RT_OP_CONV2D_BACKWARD_DATA:
        return &rt_cuda_op_conv2d_backward_data;
    case RT_OP_CONV2D_BACKWARD_WEIGHT:
        return &rt_cuda_op_conv2d_backward_weight;
    default:
        return (unsigned)op < RT_OP_COUNT ? &table[op] : NULL;
    }
}
