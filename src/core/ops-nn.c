/* Network ops: matmul, linear, conv2d, frozen batch norm, max-pool, layer norm, softmax,
 * attention and embedding, with their hand-written backward passes. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/ops-common.h"
#include "core/ops-decl.h"

/* ---- matmul: ip0 trans_a, ip1 trans_b, ip2 compute dtype */

static rt_tensor *matmul_cd(rt_graph *g, rt_tensor *a, rt_tensor *b, bool ta, bool tb, int64_t cd)
{
    rt_tensor *src[2] = {a, b};
    int64_t ip[3] = {ta, tb, cd};
    return rt_node_make1(g, RT_OP_MATMUL, src, 2, ip, 3, NULL, 0);
}

rt_tensor *rt_matmul(rt_graph *g, rt_tensor *a, rt_tensor *b, gboolean trans_a, gboolean trans_b)
{
    return matmul_cd(g, a, b, trans_a, trans_b, g->compute_dtype);
}

bool op_infer_matmul(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "a") || !rt_need_float(g, node, 1, "b") ||
        !rt_need_same_dtype(g, node, 0, 1, "a", "b"))
        return false;
    rt_tensor *a = node->src[0], *b = node->src[1];
    bool ta = node->ip[0], tb = node->ip[1];
    char da[80], db[80];
    if (a->ndim < 2 || b->ndim < 2 || (b->ndim != 2 && b->ndim != a->ndim)) {
        rt_graph_fail(g, node, "a is %s and b is %s: both need 2 or more axes, and b the same "
                      "number as a or exactly 2", RT_DESC(a, da), RT_DESC(b, db));
        return false;
    }
    for (int i = 0; b->ndim > 2 && i < a->ndim - 2; i++)
        if (a->shape[i] != b->shape[i]) {
            rt_graph_fail(g, node, "a is %s and b is %s: their batch axes differ", RT_DESC(a, da),
                          RT_DESC(b, db));
            return false;
        }
    int64_t M = a->shape[a->ndim - (ta ? 1 : 2)], K = a->shape[a->ndim - (ta ? 2 : 1)];
    int64_t Kb = b->shape[b->ndim - (tb ? 1 : 2)], N = b->shape[b->ndim - (tb ? 2 : 1)];
    if (K != Kb) {
        rt_graph_fail(g, node, "a is %s%s and b is %s%s: the inner sizes %" G_GINT64_FORMAT
                      " and %" G_GINT64_FORMAT " differ", RT_DESC(a, da), ta ? " (transposed)" : "",
                      RT_DESC(b, db), tb ? " (transposed)" : "", K, Kb);
        return false;
    }
    int64_t shape[RT_MAX_DIMS];
    memcpy(shape, a->shape, sizeof shape);
    shape[a->ndim - 2] = M;
    shape[a->ndim - 1] = N;
    rt_tensor *y = rt_node_output(g, node, 0, a->dtype, a->ndim, shape);
    if (!y)
        return false;
    y->batch_axis = a->batch_axis < a->ndim - 2 ? a->batch_axis : -1;
    return true;
}

/* sum over every axis but the last two */
static rt_tensor *sum_batch(rt_graph *g, rt_tensor *t)
{
    uint32_t axes = 0;
    for (int i = 0; i < t->ndim - 2; i++)
        axes |= 1u << i;
    return axes ? rt_sum(g, t, axes, FALSE) : t;
}

/* [..., R, C] -> [prod(...) * R, C] */
static rt_tensor *fold_rows(rt_graph *g, rt_tensor *t)
{
    int64_t shape[2] = {rt_tensor_numel(t) / t->shape[t->ndim - 1], t->shape[t->ndim - 1]};
    return rt_reshape(g, t, 2, shape);
}

void op_backward_matmul(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *a = node->src[0], *b = node->src[1], *dy = dout[0];
    bool ta = node->ip[0], tb = node->ip[1];
    int64_t cd = node->ip[2];
    bool shared_b = b->ndim == 2 && a->ndim > 2;
    if (rt_ad_needs(ad, a)) {
        rt_tensor *da;
        if (!ta)
            da = matmul_cd(g, dy, b, false, !tb, cd);
        else
            da = rt_contiguous(g, rt_transpose(g, matmul_cd(g, dy, b, false, !tb, cd), -1, -2));
        rt_ad_add(ad, a, da);
    }
    if (rt_ad_needs(ad, b)) {
        rt_tensor *dbt;
        if (!shared_b) /* same batch axes */
            dbt = tb ? matmul_cd(g, dy, a, true, ta, cd) : matmul_cd(g, a, dy, !ta, false, cd);
        else if (!ta) /* fold the batch into the rows */
            dbt = tb ? matmul_cd(g, fold_rows(g, dy), fold_rows(g, a), true, false, cd)
                     : matmul_cd(g, fold_rows(g, a), fold_rows(g, dy), true, false, cd);
        else
            dbt = sum_batch(g, tb ? matmul_cd(g, dy, a, true, true, cd)
                                  : matmul_cd(g, a, dy, false, false, cd));
        rt_ad_add(ad, b, dbt);
    }
}

/* ---- linear: ip2 compute dtype */

rt_tensor *rt_linear(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias)
{
    rt_tensor *src[3] = {x, weight, bias};
    int64_t ip[3] = {0, 0, g->compute_dtype};
    return rt_node_make1(g, RT_OP_LINEAR, src, 3, ip, 3, NULL, 0);
}

bool op_infer_linear(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_float(g, node, 1, "weight") ||
        !rt_need_same_dtype(g, node, 0, 1, "x", "weight") ||
        !rt_need_same_dtype(g, node, 0, 2, "x", "bias"))
        return false;
    rt_tensor *x = node->src[0], *w = node->src[1];
    char dx[80], dw[80];
    if (x->ndim < 1 || w->ndim != 2 || w->shape[1] != x->shape[x->ndim - 1]) {
        rt_graph_fail(g, node, "x is %s and weight is %s: weight must be [out, in] with in = "
                      "the last size of x", RT_DESC(x, dx), RT_DESC(w, dw));
        return false;
    }
    if (!rt_need_vector(g, node, 2, w->shape[0], "bias"))
        return false;
    int64_t shape[RT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = w->shape[0];
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, x->ndim, shape);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis < x->ndim - 1 ? x->batch_axis : -1;
    return true;
}

void op_backward_linear(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0], *w = node->src[1], *b = node->src[2];
    int64_t cd = node->ip[2];
    rt_tensor *dy2 = fold_rows(g, dout[0]);
    if (rt_ad_needs(ad, x))
        rt_ad_add(ad, x, rt_reshape(g, matmul_cd(g, dy2, w, false, false, cd), x->ndim, x->shape));
    if (rt_ad_needs(ad, w))
        rt_ad_add(ad, w, matmul_cd(g, dy2, fold_rows(g, x), true, false, cd));
    if (b && rt_ad_needs(ad, b))
        rt_ad_add(ad, b, rt_sum(g, dy2, RT_AXIS(0), FALSE));
}

/* ---- conv2d: ip0 stride_h, ip1 stride_w, ip2 pad_h, ip3 pad_w, ip4 dil_h, ip5 dil_w, ip6 cd */

rt_tensor *rt_conv2d(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias, int stride_h,
                     int stride_w, int pad_h, int pad_w, int dil_h, int dil_w)
{
    rt_tensor *src[3] = {x, weight, bias};
    int64_t ip[7] = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, g->compute_dtype};
    return rt_node_make1(g, RT_OP_CONV2D, src, 3, ip, 7, NULL, 0);
}

static int64_t conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil)
{
    int64_t span = in + 2 * pad - dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

static bool conv_params_ok(rt_graph *g, rt_node *node)
{
    for (int i = 0; i < 6; i++) {
        bool is_pad = i == 2 || i == 3;
        if (node->ip[i] < (is_pad ? 0 : 1)) {
            static const char *names[6] = {"stride_h", "stride_w", "pad_h", "pad_w", "dil_h",
                                           "dil_w"};
            rt_graph_fail(g, node, "%s = %" G_GINT64_FORMAT ": strides and dilations must be >= "
                          "1, padding >= 0", names[i], node->ip[i]);
            return false;
        }
    }
    return true;
}

bool op_infer_conv2d(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_float(g, node, 1, "weight") ||
        !rt_need_same_dtype(g, node, 0, 1, "x", "weight") ||
        !rt_need_same_dtype(g, node, 0, 2, "x", "bias") ||
        !rt_need_ndim(g, node, 0, 4, "x", "N, C, H, W") ||
        !rt_need_ndim(g, node, 1, 4, "weight", "out, in, kh, kw") || !conv_params_ok(g, node))
        return false;
    rt_tensor *x = node->src[0], *w = node->src[1];
    char dx[80], dw[80];
    if (w->shape[1] != x->shape[1]) {
        rt_graph_fail(g, node, "x is %s but weight is %s: weight's axis 1 must be x's channels",
                      RT_DESC(x, dx), RT_DESC(w, dw));
        return false;
    }
    if (!rt_need_vector(g, node, 2, w->shape[0], "bias"))
        return false;
    int64_t ho = conv_out(x->shape[2], w->shape[2], node->ip[0], node->ip[2], node->ip[4]);
    int64_t wo = conv_out(x->shape[3], w->shape[3], node->ip[1], node->ip[3], node->ip[5]);
    if (ho <= 0 || wo <= 0) {
        rt_graph_fail(g, node, "x is %s and weight %s: the output would be empty (kernel larger "
                      "than the padded input)", RT_DESC(x, dx), RT_DESC(w, dw));
        return false;
    }
    int64_t shape[4] = {x->shape[0], w->shape[0], ho, wo};
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, 4, shape);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis == 0 ? 0 : -1;
    return true;
}

/* (dy, w) -> dx; ip7..10 = input n, c, h, w */
bool op_infer_conv2d_backward_data(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dy") || !rt_need_float(g, node, 1, "weight"))
        return false;
    return rt_node_output(g, node, 0, node->src[0]->dtype, 4, node->ip + 7) != NULL;
}

/* (x, dy) -> dw; ip7..8 = kernel h, w */
bool op_infer_conv2d_backward_weight(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_float(g, node, 1, "dy"))
        return false;
    int64_t shape[4] = {node->src[1]->shape[1], node->src[0]->shape[1], node->ip[7], node->ip[8]};
    return rt_node_output(g, node, 0, node->src[0]->dtype, 4, shape) != NULL;
}

void op_backward_conv2d(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0], *w = node->src[1], *b = node->src[2], *dy = dout[0];
    int64_t ip[11];
    memcpy(ip, node->ip, 7 * sizeof(int64_t));
    if (rt_ad_needs(ad, x)) {
        memcpy(ip + 7, x->shape, 4 * sizeof(int64_t));
        rt_tensor *src[2] = {dy, w};
        rt_ad_add(ad, x, rt_node_make1(g, RT_OP_CONV2D_BACKWARD_DATA, src, 2, ip, 11, NULL, 0));
    }
    if (rt_ad_needs(ad, w)) {
        ip[7] = w->shape[2];
        ip[8] = w->shape[3];
        rt_tensor *src[2] = {x, dy};
        rt_ad_add(ad, w, rt_node_make1(g, RT_OP_CONV2D_BACKWARD_WEIGHT, src, 2, ip, 9, NULL, 0));
    }
    if (b && rt_ad_needs(ad, b))
        rt_ad_add(ad, b, rt_sum(g, dy, RT_AXIS(0) | RT_AXIS(2) | RT_AXIS(3), FALSE));
}

/* ---- frozen batch norm: (x, weight, bias?, mean?, var); fp0 eps */

rt_tensor *rt_frozen_batch_norm(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias,
                                rt_tensor *running_mean, rt_tensor *running_var, double eps)
{
    rt_tensor *src[5] = {x, weight, bias, running_mean, running_var};
    return rt_node_make1(g, RT_OP_FROZEN_BATCH_NORM, src, 5, NULL, 0, &eps, 1);
}

bool op_infer_frozen_batch_norm(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_float(g, node, 1, "weight") ||
        !rt_need_float(g, node, 4, "running_var"))
        return false;
    rt_tensor *x = node->src[0];
    if (x->ndim < 2) {
        char d[80];
        rt_graph_fail(g, node, "x is %s; it needs a channel axis (axis 1)", RT_DESC(x, d));
        return false;
    }
    static const char *names[5] = {"x", "weight", "bias", "running_mean", "running_var"};
    for (int i = 1; i < 5; i++)
        if (!rt_need_same_dtype(g, node, 0, i, "x", names[i]) ||
            !rt_need_vector(g, node, i, x->shape[1], names[i]))
            return false;
    return infer_like(g, node, node->src[0]);
}

void op_backward_frozen_batch_norm(rt_autodiff *ad, rt_graph *g, rt_node *node,
                                   rt_tensor *const *dout)
{
    /* dx = dy * scale: the same op without the shift */
    rt_ad_add(ad, node->src[0], rt_frozen_batch_norm(g, dout[0], node->src[1], NULL, NULL,
                                                     node->src[4], node->fp[0]));
}

/* ---- max-pool: ip0 kernel, ip1 stride, ip2 pad; backward ip3..6 = input n, c, h, w */

rt_tensor *rt_max_pool2d(rt_graph *g, rt_tensor *x, int kernel, int stride, int pad)
{
    int64_t ip[3] = {kernel, stride, pad};
    return rt_node_make1(g, RT_OP_MAX_POOL2D, &x, 1, ip, 3, NULL, 0);
}

bool op_infer_max_pool2d(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_ndim(g, node, 0, 4, "x", "N, C, H, W"))
        return false;
    rt_tensor *x = node->src[0];
    int64_t k = node->ip[0], s = node->ip[1], p = node->ip[2];
    if (k < 1 || s < 1 || p < 0 || 2 * p > k) {
        rt_graph_fail(g, node, "kernel %" G_GINT64_FORMAT ", stride %" G_GINT64_FORMAT ", padding %"
                      G_GINT64_FORMAT ": kernel and stride must be >= 1 and the padding at most "
                      "half the kernel (as in PyTorch)", k, s, p);
        return false;
    }
    int64_t ho = conv_out(x->shape[2], k, s, p, 1), wo = conv_out(x->shape[3], k, s, p, 1);
    if (ho <= 0 || wo <= 0) {
        char d[80];
        rt_graph_fail(g, node, "x is %s: a %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " window does "
                      "not fit", RT_DESC(x, d), k, k);
        return false;
    }
    int64_t shape[4] = {x->shape[0], x->shape[1], ho, wo};
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, 4, shape);
    if (!y || !rt_node_output(g, node, 1, RT_I32, 4, shape))
        return false;
    y->batch_axis = x->batch_axis == 0 ? 0 : -1;
    return true;
}

bool op_infer_max_pool2d_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dy") || !rt_need_src(g, node, 1, "argmax"))
        return false;
    return rt_node_output(g, node, 0, node->src[0]->dtype, 4, node->ip + 3) != NULL;
}

void op_backward_max_pool2d(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0];
    int64_t ip[7];
    memcpy(ip, node->ip, 3 * sizeof(int64_t));
    memcpy(ip + 3, x->shape, 4 * sizeof(int64_t));
    rt_tensor *src[2] = {dout[0], node->out[1]};
    rt_ad_add(ad, x, rt_node_make1(g, RT_OP_MAX_POOL2D_BACKWARD, src, 2, ip, 7, NULL, 0));
}

/* ---- layer norm: (x, w?, b?) -> y, stats; fp0 eps */

rt_tensor *rt_layer_norm(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias, double eps)
{
    rt_tensor *src[3] = {x, weight, bias};
    return rt_node_make1(g, RT_OP_LAYER_NORM, src, 3, NULL, 0, &eps, 1);
}

bool op_infer_layer_norm(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_same_dtype(g, node, 0, 1, "x", "weight") ||
        !rt_need_same_dtype(g, node, 0, 2, "x", "bias"))
        return false;
    rt_tensor *x = node->src[0];
    if (x->ndim < 1) {
        rt_graph_fail(g, node, "x is a scalar; it needs an axis to normalise");
        return false;
    }
    int64_t d = x->shape[x->ndim - 1];
    if (!rt_need_vector(g, node, 1, d, "weight") || !rt_need_vector(g, node, 2, d, "bias"))
        return false;
    if (!infer_like(g, node, x))
        return false;
    int64_t stats[2] = {rt_tensor_numel(x) / d, 2};
    return rt_node_output(g, node, 1, x->dtype, 2, stats) != NULL;
}

/* (dy, x, w?, stats) -> dx, dw?, db?; ip0 = has bias */
bool op_infer_layer_norm_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dy") || !rt_need_float(g, node, 1, "x") ||
        !rt_need_src(g, node, 3, "stats"))
        return false;
    rt_tensor *x = node->src[1];
    int64_t d = x->shape[x->ndim - 1];
    if (!rt_node_output(g, node, 0, x->dtype, x->ndim, x->shape))
        return false;
    if (node->src[2] && !rt_node_output(g, node, 1, x->dtype, 1, &d))
        return false;
    if (node->ip[0] && !rt_node_output(g, node, 2, x->dtype, 1, &d))
        return false;
    node->n_out = 3;
    return true;
}

void op_backward_layer_norm(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0], *w = node->src[1], *b = node->src[2];
    rt_tensor *src[4] = {dout[0], x, w, node->out[1]};
    int64_t ip[1] = {b != NULL};
    rt_node *bw = rt_node_make(g, RT_OP_LAYER_NORM_BACKWARD, src, 4, ip, 1, NULL, 0);
    if (!bw)
        return;
    rt_ad_add(ad, x, bw->out[0]);
    if (w && rt_ad_needs(ad, w))
        rt_ad_add(ad, w, bw->out[1]);
    if (b && rt_ad_needs(ad, b))
        rt_ad_add(ad, b, bw->out[2]);
}

/* ---- softmax over the last axis */

rt_tensor *rt_softmax(rt_graph *g, rt_tensor *x)
{
    return rt_node_make1(g, RT_OP_SOFTMAX, &x, 1, NULL, 0, NULL, 0);
}

bool op_infer_softmax(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x"))
        return false;
    if (node->src[0]->ndim < 1) {
        rt_graph_fail(g, node, "x is a scalar; softmax needs an axis");
        return false;
    }
    return infer_like(g, node, node->src[0]);
}

void op_backward_softmax(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[2] = {dout[0], node->out[0]};
    rt_ad_add(ad, node->src[0], rt_node_make1(g, RT_OP_SOFTMAX_BACKWARD, src, 2, NULL, 0, NULL, 0));
}

/* ---- attention: (q, k, v, mask?, rng?) -> out, probs; ip0 heads, ip1 batch_first, ip2 cd,
 * ip3 rng id; fp0 dropout p, fp1 logit scale */

rt_tensor *rt_attention(rt_graph *g, rt_tensor *q, rt_tensor *k, rt_tensor *v,
                        rt_tensor *key_padding_mask, int n_heads, double dropout_p,
                        gboolean batch_first)
{
    if (!(dropout_p >= 0.0 && dropout_p < 1.0)) {
        rt_graph_fail(g, NULL, "op attention: dropout p = %g; it must lie in [0, 1)", dropout_p);
        return NULL;
    }
    if (!rt_graph_is_training(g))
        dropout_p = 0.0;
    rt_tensor *src[5] = {q, k, v, key_padding_mask, dropout_p > 0 ? rt_graph_rng_tensor(g) : NULL};
    int64_t ip[4] = {n_heads, batch_first ? 1 : 0, g->compute_dtype,
                     dropout_p > 0 ? g->next_rng_id++ : -1};
    double fp[2] = {dropout_p, 0};
    return rt_node_make1(g, RT_OP_ATTENTION, src, 5, ip, 4, fp, 2);
}

bool op_infer_attention(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "q") || !rt_need_float(g, node, 1, "k") ||
        !rt_need_float(g, node, 2, "v") || !rt_need_same_dtype(g, node, 0, 1, "q", "k") ||
        !rt_need_same_dtype(g, node, 0, 2, "q", "v") ||
        !rt_need_ndim(g, node, 0, 3, "q", "L, B, E or B, L, E") ||
        !rt_need_ndim(g, node, 1, 3, "k", "S, B, E or B, S, E") ||
        !rt_need_ndim(g, node, 2, 3, "v", "S, B, E or B, S, E"))
        return false;
    rt_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2], *mask = node->src[3];
    bool bf = node->ip[1] != 0;
    int64_t heads = node->ip[0];
    int64_t B = q->shape[bf ? 0 : 1], L = q->shape[bf ? 1 : 0], E = q->shape[2];
    int64_t S = k->shape[bf ? 1 : 0];
    char dq[80], dk[80], dv[80];
    if (!rt_shape_equal(k, v) || k->shape[bf ? 0 : 1] != B || k->shape[2] != E) {
        rt_graph_fail(g, node, "q is %s, k %s, v %s: k and v must have one shape, with q's batch "
                      "and embedding sizes", RT_DESC(q, dq), RT_DESC(k, dk), RT_DESC(v, dv));
        return false;
    }
    if (heads < 1 || E % heads != 0) {
        rt_graph_fail(g, node, "%" G_GINT64_FORMAT " heads do not divide the embedding size %"
                      G_GINT64_FORMAT, heads, E);
        return false;
    }
    if (mask && (mask->ndim != 2 || mask->shape[0] != B || mask->shape[1] != S ||
                 (mask->dtype != RT_BOOL && mask->dtype != RT_U8))) {
        char dm[80];
        rt_graph_fail(g, node, "key_padding_mask is %s; expected bool[%" G_GINT64_FORMAT ",%"
                      G_GINT64_FORMAT "] (batch, keys; TRUE = ignore)", RT_DESC(mask, dm), B, S);
        return false;
    }
    node->fp[1] = 1.0 / sqrt((double)(E / heads));
    rt_tensor *y = rt_node_output(g, node, 0, q->dtype, 3, q->shape);
    int64_t probs[4] = {B, heads, L, S};
    if (!y || !rt_node_output(g, node, 1, q->dtype, 4, probs))
        return false;
    y->batch_axis = q->batch_axis == (bf ? 0 : 1) ? q->batch_axis : -1;
    node->out[1]->batch_axis = y->batch_axis >= 0 ? 0 : -1;
    return true;
}

/* (dout, q, k, v, probs, rng?) -> dq, dk, dv */
bool op_infer_attention_backward(rt_graph *g, rt_node *node)
{
    for (int i = 0; i < 5; i++)
        if (!rt_need_float(g, node, i, "an input"))
            return false;
    for (int i = 0; i < 3; i++) {
        rt_tensor *t = node->src[1 + i];
        if (!rt_node_output(g, node, i, t->dtype, t->ndim, t->shape))
            return false;
    }
    return true;
}

void op_backward_attention(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[6] = {dout[0], node->src[0], node->src[1], node->src[2], node->out[1],
                         node->src[4]};
    rt_node *bw = rt_node_make(g, RT_OP_ATTENTION_BACKWARD, src, 6, node->ip, 4, node->fp, 2);
    if (!bw)
        return;
    for (int i = 0; i < 3; i++)
        if (rt_ad_needs(ad, node->src[i]))
            rt_ad_add(ad, node->src[i], bw->out[i]);
}

/* PyTorch's F.multi_head_attention_forward: q, k, v projected by the row blocks of the packed
 * in-projection, attention over heads, then the output projection. */
rt_tensor *rt_multihead_attention(rt_graph *g, const rt_mha_weights *w, rt_tensor *query,
                                  rt_tensor *key, rt_tensor *value, rt_tensor *key_padding_mask,
                                  int n_heads, double dropout_p)
{
    if (!w || !w->in_proj_weight || !w->out_proj_weight)
        return rt_null_arg(g, "multihead_attention", "a projection weight");
    if (!query || !key || !value)
        return rt_null_arg(g, "multihead_attention", "query, key or value");
    int64_t E = w->in_proj_weight->shape[w->in_proj_weight->ndim - 1];
    if (w->in_proj_weight->ndim != 2 || w->in_proj_weight->shape[0] != 3 * E) {
        char d[80];
        rt_graph_fail(g, NULL, "op multihead_attention: in_proj_weight is %s; expected [3E, E]",
                      RT_DESC(w->in_proj_weight, d));
        return NULL;
    }
    rt_tensor *proj[3];
    rt_tensor *in[3] = {query, key, value};
    for (int i = 0; i < 3; i++) {
        rt_tensor *wi = rt_slice(g, w->in_proj_weight, 0, i * E, E);
        rt_tensor *bi = w->in_proj_bias ? rt_slice(g, w->in_proj_bias, 0, i * E, E) : NULL;
        proj[i] = rt_linear(g, in[i], wi, bi);
    }
    rt_tensor *att = rt_attention(g, proj[0], proj[1], proj[2], key_padding_mask, n_heads,
                                  dropout_p, FALSE);
    return rt_linear(g, att, w->out_proj_weight, w->out_proj_bias);
}

/* ---- embedding: (weight[N,D], idx) -> [..., D]; backward ip0 = N */

rt_tensor *rt_embedding(rt_graph *g, rt_tensor *weight, rt_tensor *indices)
{
    rt_tensor *src[2] = {weight, indices};
    return rt_node_make1(g, RT_OP_EMBEDDING, src, 2, NULL, 0, NULL, 0);
}

bool op_infer_embedding(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "weight") || !rt_need_src(g, node, 1, "indices"))
        return false;
    rt_tensor *w = node->src[0], *idx = node->src[1];
    char dw[80], di[80];
    if (w->ndim != 2 || idx->dtype != RT_I64 || idx->ndim >= RT_MAX_DIMS) {
        rt_graph_fail(g, node, "weight is %s and indices %s: expected weight [N, D] and i64 "
                      "indices of at most %d axes", RT_DESC(w, dw), RT_DESC(idx, di),
                      RT_MAX_DIMS - 1);
        return false;
    }
    int64_t shape[RT_MAX_DIMS];
    memcpy(shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    shape[idx->ndim] = w->shape[1];
    rt_tensor *y = rt_node_output(g, node, 0, w->dtype, idx->ndim + 1, shape);
    if (!y)
        return false;
    y->batch_axis = idx->batch_axis;
    return true;
}

bool op_infer_embedding_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dy") || !rt_need_src(g, node, 1, "indices"))
        return false;
    rt_tensor *dy = node->src[0];
    int64_t shape[2] = {node->ip[0], dy->shape[dy->ndim - 1]};
    return rt_node_output(g, node, 0, dy->dtype, 2, shape) != NULL;
}

void op_backward_embedding(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[2] = {dout[0], node->src[1]};
    int64_t ip[1] = {node->src[0]->shape[0]};
    rt_ad_add(ad, node->src[0],
              rt_node_make1(g, RT_OP_EMBEDDING_BACKWARD, src, 2, ip, 1, NULL, 0));
}
