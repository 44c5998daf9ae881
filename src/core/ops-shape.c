/* Shape ops: the views (reshape, permute, slice, expand), pad, concat and sum/mean. */
#include "config.h"

#include <string.h>

#include "core/ops-common.h"
#include "core/ops-decl.h"

/* ---- reshape: ip0 ndim, ip1.. shape */

rt_tensor *rt_reshape(rt_graph *g, rt_tensor *x, int ndim, const int64_t *shape)
{
    if (!x)
        return rt_null_arg(g, "reshape", "x");
    if (ndim < 0 || ndim > RT_MAX_DIMS) {
        rt_graph_fail(g, NULL, "op reshape: %d dimensions; tensors have 0 to %d", ndim,
                      RT_MAX_DIMS);
        return NULL;
    }
    int64_t ip[1 + RT_MAX_DIMS] = {ndim};
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        ip[1 + i] = shape[i];
        if (shape[i] == -1 && infer < 0)
            infer = i;
        else
            known *= shape[i];
    }
    if (infer >= 0 && known > 0 && rt_tensor_numel(x) % known == 0)
        ip[1 + infer] = rt_tensor_numel(x) / known;
    if (x->ndim == ndim && memcmp(x->shape, ip + 1, sizeof(int64_t) * (size_t)ndim) == 0 &&
        rt_tensor_is_contiguous(x))
        return x;
    return rt_node_make1(g, RT_OP_RESHAPE, &x, 1, ip, 1 + ndim, NULL, 0);
}

bool op_infer_reshape(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    int ndim = (int)node->ip[0];
    const int64_t *shape = node->ip + 1;
    if (rt_shape_numel(ndim, shape) != rt_tensor_numel(x) ||
        (ndim > 0 && rt_shape_numel(ndim, shape) <= 0)) {
        char d[80], s[80];
        rt_graph_fail(g, node, "cannot view %s as %s: the element counts differ", RT_DESC(x, d),
                      rt_shape_describe(ndim, shape, s, sizeof s));
        return false;
    }
    int64_t stride[RT_MAX_DIMS];
    rt_shape_strides(ndim, shape, stride);
    rt_tensor *y = rt_node_view(g, node, x, ndim, shape, stride, 0);
    if (!y)
        return false;
    /* the batch axis survives when the elements before it and its size are unchanged */
    if (x->batch_axis >= 0) {
        int64_t before = rt_shape_numel(x->batch_axis, x->shape), acc = 1;
        for (int i = 0; i < ndim; i++) {
            if (acc == before && shape[i] == x->shape[x->batch_axis]) {
                y->batch_axis = i;
                break;
            }
            acc *= shape[i];
        }
    }
    return true;
}

void op_backward_reshape(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0];
    rt_ad_add(ad, x, rt_reshape(g, dout[0], x->ndim, x->shape));
}

/* ---- permute: ip[i] = source axis of output axis i */

rt_tensor *rt_permute(rt_graph *g, rt_tensor *x, const int *perm)
{
    if (!x)
        return rt_null_arg(g, "permute", "x");
    int64_t ip[RT_MAX_DIMS];
    bool identity = true;
    for (int i = 0; i < x->ndim; i++) {
        ip[i] = perm[i];
        identity = identity && perm[i] == i;
    }
    if (identity)
        return x;
    return rt_node_make1(g, RT_OP_PERMUTE, &x, 1, ip, x->ndim, NULL, 0);
}

rt_tensor *rt_transpose(rt_graph *g, rt_tensor *x, int axis0, int axis1)
{
    if (!x)
        return rt_null_arg(g, "transpose", "x");
    int a = rt_axis(axis0, x->ndim), b = rt_axis(axis1, x->ndim);
    if (a < 0 || b < 0) {
        char d[80];
        rt_graph_fail(g, NULL, "op transpose: axes %d and %d of %s do not both exist", axis0,
                      axis1, RT_DESC(x, d));
        return NULL;
    }
    int perm[RT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return rt_permute(g, x, perm);
}

bool op_infer_permute(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    bool seen[RT_MAX_DIMS] = {0};
    int64_t shape[RT_MAX_DIMS], stride[RT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) {
        int64_t p = node->ip[i];
        if (p < 0 || p >= x->ndim || seen[p]) {
            char d[80];
            rt_graph_fail(g, node, "the axes given for %s are not a permutation of 0..%d",
                          RT_DESC(x, d), x->ndim - 1);
            return false;
        }
        seen[p] = true;
        shape[i] = x->shape[p];
        stride[i] = x->stride[p];
    }
    rt_tensor *y = rt_node_view(g, node, x, x->ndim, shape, stride, 0);
    if (!y)
        return false;
    for (int i = 0; i < x->ndim; i++)
        if (node->ip[i] == x->batch_axis)
            y->batch_axis = i;
    return true;
}

void op_backward_permute(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    int inverse[RT_MAX_DIMS];
    for (int i = 0; i < node->src[0]->ndim; i++)
        inverse[node->ip[i]] = i;
    rt_ad_add(ad, node->src[0], rt_permute(g, dout[0], inverse));
}

/* ---- slice: ip0 axis, ip1 start, ip2 length */

rt_tensor *rt_slice(rt_graph *g, rt_tensor *x, int axis, int64_t start, int64_t length)
{
    int64_t ip[3] = {axis, start, length};
    if (!x)
        return rt_null_arg(g, "slice", "x");
    int a = rt_axis(axis, x->ndim);
    if (a >= 0 && start == 0 && length == x->shape[a])
        return x;
    return rt_node_make1(g, RT_OP_SLICE, &x, 1, ip, 3, NULL, 0);
}

bool op_infer_slice(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    int axis = rt_axis((int)node->ip[0], x->ndim);
    int64_t start = node->ip[1], len = node->ip[2];
    if (axis < 0 || start < 0 || len <= 0 || start + len > x->shape[axis]) {
        char d[80];
        rt_graph_fail(g, node, "elements %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT " of axis %d "
                      "are not inside %s", start, start + len - 1, (int)node->ip[0],
                      RT_DESC(x, d));
        return false;
    }
    node->ip[0] = axis;
    int64_t shape[RT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] = len;
    rt_tensor *y = rt_node_view(g, node, x, x->ndim, shape, x->stride, start * x->stride[axis]);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis == axis ? -1 : x->batch_axis;
    return true;
}

void op_backward_slice(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_ad_add_slice(ad, node->src[0], (int)node->ip[0], node->ip[1], dout[0]);
}

/* ---- expand: ip0 ndim, ip1.. shape */

rt_tensor *rt_expand(rt_graph *g, rt_tensor *x, int ndim, const int64_t *shape)
{
    if (!x)
        return rt_null_arg(g, "expand", "x");
    if (ndim < 0 || ndim > RT_MAX_DIMS) {
        rt_graph_fail(g, NULL, "op expand: %d dimensions; tensors have 0 to %d", ndim, RT_MAX_DIMS);
        return NULL;
    }
    if (x->ndim == ndim && memcmp(x->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0)
        return x;
    int64_t ip[1 + RT_MAX_DIMS] = {ndim};
    memcpy(ip + 1, shape, sizeof(int64_t) * (size_t)ndim);
    return rt_node_make1(g, RT_OP_EXPAND, &x, 1, ip, 1 + ndim, NULL, 0);
}

bool op_infer_expand(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    int ndim = (int)node->ip[0];
    const int64_t *shape = node->ip + 1;
    bool ok = ndim >= x->ndim;
    for (int i = 0; ok && i < x->ndim; i++) {
        int64_t s = x->shape[i], t = shape[i + ndim - x->ndim];
        ok = s == t || s == 1;
    }
    if (!ok) {
        char d[80], s[80];
        rt_graph_fail(g, node, "cannot broadcast %s to %s (sizes must match or be 1)",
                      RT_DESC(x, d), rt_shape_describe(ndim, shape, s, sizeof s));
        return false;
    }
    int64_t stride[RT_MAX_DIMS];
    rt_broadcast_strides(x, ndim, shape, stride);
    rt_tensor *y = rt_node_view(g, node, x, ndim, shape, stride, 0);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis >= 0 ? x->batch_axis + ndim - x->ndim : -1;
    return true;
}

void op_backward_expand(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_ad_add(ad, node->src[0], rt_ad_unbroadcast(g, dout[0], node->src[0]));
}

/* ---- pad: ip0 axis, ip1 before, ip2 after */

rt_tensor *rt_pad(rt_graph *g, rt_tensor *x, int axis, int64_t before, int64_t after)
{
    int64_t ip[3] = {axis, before, after};
    return rt_node_make1(g, RT_OP_PAD, &x, 1, ip, 3, NULL, 0);
}

bool op_infer_pad(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    int axis = rt_axis((int)node->ip[0], x->ndim);
    if (axis < 0 || node->ip[1] < 0 || node->ip[2] < 0) {
        char d[80];
        rt_graph_fail(g, node, "axis %d of %s with padding %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                      ": the axis must exist and the padding be >= 0", (int)node->ip[0],
                      RT_DESC(x, d), node->ip[1], node->ip[2]);
        return false;
    }
    node->ip[0] = axis;
    int64_t shape[RT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[axis] += node->ip[1] + node->ip[2];
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, x->ndim, shape);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis == axis ? -1 : x->batch_axis;
    return true;
}

void op_backward_pad(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0];
    int axis = (int)node->ip[0];
    rt_ad_add(ad, x, rt_slice(g, dout[0], axis, node->ip[1], x->shape[axis]));
}

/* ---- concat: ip0 axis */

rt_tensor *rt_concat(rt_graph *g, rt_tensor *const *xs, int n, int axis)
{
    if (n < 1 || n > RT_MAX_SRC) {
        rt_graph_fail(g, NULL, "op concat: %d inputs; it joins 1 to %d (nest concats for more)",
                      n, RT_MAX_SRC);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!xs[i])
            return rt_null_arg(g, "concat", "an input");
    if (n == 1)
        return xs[0];
    int64_t ip[1] = {axis};
    return rt_node_make1(g, RT_OP_CONCAT, xs, n, ip, 1, NULL, 0);
}

bool op_infer_concat(rt_graph *g, rt_node *node)
{
    rt_tensor *x0 = node->src[0];
    int axis = rt_axis((int)node->ip[0], x0->ndim);
    if (axis < 0) {
        char d[80];
        rt_graph_fail(g, node, "axis %d does not exist in %s", (int)node->ip[0], RT_DESC(x0, d));
        return false;
    }
    node->ip[0] = axis;
    int64_t shape[RT_MAX_DIMS];
    memcpy(shape, x0->shape, sizeof shape);
    shape[axis] = 0;
    for (int i = 0; i < node->n_src; i++) {
        rt_tensor *x = node->src[i];
        bool ok = x->dtype == x0->dtype && x->ndim == x0->ndim;
        for (int d = 0; ok && d < x0->ndim; d++)
            ok = d == axis || x->shape[d] == x0->shape[d];
        if (!ok) {
            char a[80], b[80];
            rt_graph_fail(g, node, "input %d is %s but input 0 is %s: dtypes and every size but "
                          "axis %d's must match", i, RT_DESC(x, a), RT_DESC(x0, b), axis);
            return false;
        }
        shape[axis] += x->shape[axis];
    }
    rt_tensor *y = rt_node_output(g, node, 0, x0->dtype, x0->ndim, shape);
    if (!y)
        return false;
    /* the samples' axis of any input that has one (a learned token prepended to per-sample ones
     * must not make the result lose it: random ops key their numbers by it) */
    y->batch_axis = -1;
    for (int i = 0; i < node->n_src && y->batch_axis < 0; i++)
        if (node->src[i]->batch_axis >= 0 && node->src[i]->batch_axis != axis)
            y->batch_axis = node->src[i]->batch_axis;
    return true;
}

void op_backward_concat(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    int axis = (int)node->ip[0];
    int64_t offset = 0;
    for (int i = 0; i < node->n_src; i++) {
        rt_tensor *x = node->src[i];
        if (rt_ad_needs(ad, x))
            rt_ad_add(ad, x, rt_slice(g, dout[0], axis, offset, x->shape[axis]));
        offset += x->shape[axis];
    }
}

/* ---- sum / mean: ip0 axis mask, ip1 keepdim; fp0 scale */

static rt_tensor *reduce(rt_graph *g, rt_tensor *x, uint32_t axes, gboolean keepdim, bool mean)
{
    if (!x)
        return rt_null_arg(g, mean ? "mean" : "sum", "x");
    uint32_t all = x->ndim >= 32 ? 0xffffffffu : ((1u << x->ndim) - 1);
    if (axes != RT_ALL_AXES && (axes & ~all)) {
        char d[80];
        rt_graph_fail(g, NULL, "op %s: the axis mask 0x%x names an axis that %s does not have",
                      mean ? "mean" : "sum", axes, RT_DESC(x, d));
        return NULL;
    }
    axes &= all;
    int64_t count = 1;
    for (int i = 0; i < x->ndim; i++)
        if (axes & (1u << i))
            count *= x->shape[i];
    int64_t ip[2] = {axes, keepdim ? 1 : 0};
    double fp[1] = {mean ? 1.0 / (double)count : 1.0};
    return rt_node_make1(g, RT_OP_SUM, &x, 1, ip, 2, fp, 1);
}

rt_tensor *rt_sum(rt_graph *g, rt_tensor *x, uint32_t axes, gboolean keepdim)
{
    return reduce(g, x, axes, keepdim, false);
}

rt_tensor *rt_mean(rt_graph *g, rt_tensor *x, uint32_t axes, gboolean keepdim)
{
    return reduce(g, x, axes, keepdim, true);
}

bool op_infer_sum(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    uint32_t axes = (uint32_t)node->ip[0];
    bool keepdim = node->ip[1] != 0;
    int64_t shape[RT_MAX_DIMS];
    int ndim = 0, batch = -1;
    for (int i = 0; i < x->ndim; i++) {
        bool reduced = (axes & (1u << i)) != 0;
        if (reduced && !keepdim)
            continue;
        if (i == x->batch_axis && !reduced)
            batch = ndim;
        shape[ndim++] = reduced ? 1 : x->shape[i];
    }
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, ndim, shape);
    if (!y)
        return false;
    y->batch_axis = batch;
    return true;
}

void op_backward_sum(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0], *dy = dout[0];
    uint32_t axes = (uint32_t)node->ip[0];
    int64_t kept[RT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        kept[i] = (axes & (1u << i)) ? 1 : x->shape[i];
    dy = rt_reshape(g, dy, x->ndim, kept);
    if (node->fp[0] != 1.0)
        dy = rt_scale(g, dy, node->fp[0], 0.0);
    rt_ad_add(ad, x, rt_expand(g, dy, x->ndim, x->shape));
}
