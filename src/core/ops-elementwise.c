/* Element-wise ops: fill, cast, copy, arithmetic with broadcasting, activations, and the
 * random ops (dropout, uniform, normal). Constructors, shape inference and backward builders. */
#include "config.h"

#include <math.h>

#include "core/ops-common.h"
#include "core/ops-decl.h"

/* ---- fill */

rt_tensor *rt_fill(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape, double value)
{
    if (ndim < 0 || ndim > RT_MAX_DIMS) {
        rt_graph_fail(g, NULL, "op fill: %d dimensions; tensors have 0 to %d", ndim, RT_MAX_DIMS);
        return NULL;
    }
    int64_t ipx[2 + RT_MAX_DIMS] = {ndim, dtype};
    for (int i = 0; i < ndim; i++)
        ipx[2 + i] = shape[i];
    return rt_node_make1(g, RT_OP_FILL, NULL, 0, ipx, 2 + ndim, &value, 1);
}

/* ip0 ndim, ip1 dtype, ip2.. shape (the fill value is fp0) */
bool op_infer_fill(rt_graph *g, rt_node *node)
{
    rt_dtype dtype = (rt_dtype)node->ip[1];
    if ((unsigned)dtype >= RT_DTYPE_COUNT) {
        rt_graph_fail(g, node, "dtype %d is not an rt_dtype", (int)dtype);
        return false;
    }
    return rt_node_output(g, node, 0, dtype, (int)node->ip[0], node->ip + 2) != NULL;
}

/* ---- cast and contiguous copy */

rt_tensor *rt_cast(rt_graph *g, rt_tensor *x, rt_dtype dtype)
{
    if (x && x->dtype == dtype)
        return x;
    int64_t ip[1] = {dtype};
    return rt_node_make1(g, RT_OP_CAST, &x, 1, ip, 1, NULL, 0);
}

static bool infer_same_shape(rt_graph *g, rt_node *node, rt_dtype dtype)
{
    rt_tensor *x = node->src[0];
    rt_tensor *y = rt_node_output(g, node, 0, dtype, x->ndim, x->shape);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis;
    return true;
}

bool op_infer_cast(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "x"))
        return false;
    rt_dtype dtype = (rt_dtype)node->ip[0];
    if ((unsigned)dtype >= RT_DTYPE_COUNT) {
        rt_graph_fail(g, node, "target dtype %d is not an rt_dtype", (int)dtype);
        return false;
    }
    return infer_same_shape(g, node, dtype);
}

void op_backward_cast(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *x = node->src[0];
    if (rt_dtype_is_float(x->dtype) && rt_dtype_is_float(node->out[0]->dtype))
        rt_ad_add(ad, x, rt_cast(g, dout[0], x->dtype));
}

rt_tensor *rt_contiguous(rt_graph *g, rt_tensor *x)
{
    if (x && rt_tensor_is_contiguous(x))
        return x;
    return rt_node_make1(g, RT_OP_CONTIGUOUS, &x, 1, NULL, 0, NULL, 0);
}

bool op_infer_contiguous(rt_graph *g, rt_node *node)
{
    return rt_need_src(g, node, 0, "x") && infer_same_shape(g, node, node->src[0]->dtype);
}

void op_backward_identity(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_ad_add(ad, node->src[0], dout[0]);
}

/* ---- binary arithmetic with broadcasting */

static rt_tensor *binary(rt_graph *g, rt_op op, rt_tensor *a, rt_tensor *b)
{
    rt_tensor *src[2] = {a, b};
    return rt_node_make1(g, op, src, 2, NULL, 0, NULL, 0);
}

rt_tensor *rt_add(rt_graph *g, rt_tensor *a, rt_tensor *b) { return binary(g, RT_OP_ADD, a, b); }
rt_tensor *rt_sub(rt_graph *g, rt_tensor *a, rt_tensor *b) { return binary(g, RT_OP_SUB, a, b); }
rt_tensor *rt_mul(rt_graph *g, rt_tensor *a, rt_tensor *b) { return binary(g, RT_OP_MUL, a, b); }
rt_tensor *rt_div(rt_graph *g, rt_tensor *a, rt_tensor *b) { return binary(g, RT_OP_DIV, a, b); }

/* the batch axis of an input, moved to the output's axes */
static int batch_axis_in(const rt_tensor *x, int out_ndim)
{
    return x->batch_axis >= 0 ? x->batch_axis + (out_ndim - x->ndim) : -1;
}

bool op_infer_binary(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "a") || !rt_need_float(g, node, 1, "b") ||
        !rt_need_same_dtype(g, node, 0, 1, "a", "b"))
        return false;
    rt_tensor *a = node->src[0], *b = node->src[1];
    int ndim;
    int64_t shape[RT_MAX_DIMS];
    if (!rt_broadcast_shape(a, b, &ndim, shape)) {
        char da[80], db[80];
        rt_graph_fail(g, node, "shapes %s and %s do not broadcast (sizes must match or be 1, "
                      "aligned from the last axis)", RT_DESC(a, da), RT_DESC(b, db));
        return false;
    }
    rt_tensor *y = rt_node_output(g, node, 0, a->dtype, ndim, shape);
    if (!y)
        return false;
    y->batch_axis = batch_axis_in(a, ndim) >= 0 ? batch_axis_in(a, ndim) : batch_axis_in(b, ndim);
    return true;
}

void op_backward_binary(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *a = node->src[0], *b = node->src[1], *dy = dout[0], *y = node->out[0];
    switch ((rt_op)node->op) {
    case RT_OP_ADD:
        if (rt_ad_needs(ad, a))
            rt_ad_add(ad, a, rt_ad_unbroadcast(g, dy, a));
        if (rt_ad_needs(ad, b))
            rt_ad_add(ad, b, rt_ad_unbroadcast(g, dy, b));
        break;
    case RT_OP_SUB:
        if (rt_ad_needs(ad, a))
            rt_ad_add(ad, a, rt_ad_unbroadcast(g, dy, a));
        if (rt_ad_needs(ad, b))
            rt_ad_add(ad, b, rt_scale(g, rt_ad_unbroadcast(g, dy, b), -1.0, 0.0));
        break;
    case RT_OP_MUL:
        if (rt_ad_needs(ad, a))
            rt_ad_add(ad, a, rt_ad_unbroadcast(g, rt_mul(g, dy, b), a));
        if (rt_ad_needs(ad, b))
            rt_ad_add(ad, b, rt_ad_unbroadcast(g, rt_mul(g, dy, a), b));
        break;
    case RT_OP_DIV:
        if (rt_ad_needs(ad, a))
            rt_ad_add(ad, a, rt_ad_unbroadcast(g, rt_div(g, dy, b), a));
        if (rt_ad_needs(ad, b)) /* d(a/b)/db = -y/b */
            rt_ad_add(ad, b, rt_ad_unbroadcast(g, rt_scale(g, rt_div(g, rt_mul(g, dy, y), b),
                                                           -1.0, 0.0), b));
        break;
    default:
        g_assert_not_reached();
    }
}

/* ---- unary */

static rt_tensor *unary(rt_graph *g, rt_op op, rt_tensor *x, const double *fp, int n_fp)
{
    return rt_node_make1(g, op, &x, 1, NULL, 0, fp, n_fp);
}

rt_tensor *rt_scale(rt_graph *g, rt_tensor *x, double s, double c)
{
    double fp[2] = {s, c};
    return unary(g, RT_OP_SCALE, x, fp, 2);
}

rt_tensor *rt_relu(rt_graph *g, rt_tensor *x) { return unary(g, RT_OP_RELU, x, NULL, 0); }
rt_tensor *rt_gelu(rt_graph *g, rt_tensor *x) { return unary(g, RT_OP_GELU, x, NULL, 0); }
rt_tensor *rt_exp(rt_graph *g, rt_tensor *x) { return unary(g, RT_OP_EXP, x, NULL, 0); }

bool op_infer_unary(rt_graph *g, rt_node *node)
{
    return rt_need_float(g, node, 0, "x") && infer_same_shape(g, node, node->src[0]->dtype);
}

/* (dy, saved) -> dx: relu_backward and gelu_backward */
bool op_infer_unary_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dy") || !rt_need_float(g, node, 1, "x") ||
        !rt_need_same_dtype(g, node, 0, 1, "dy", "x"))
        return false;
    if (!rt_shape_equal(node->src[0], node->src[1])) {
        char a[80], b[80];
        rt_graph_fail(g, node, "dy is %s but x is %s", RT_DESC(node->src[0], a),
                      RT_DESC(node->src[1], b));
        return false;
    }
    return rt_node_output(g, node, 0, node->src[0]->dtype, node->src[0]->ndim,
                          node->src[0]->shape) != NULL;
}

void op_backward_scale(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_ad_add(ad, node->src[0], rt_scale(g, dout[0], node->fp[0], 0.0));
}

void op_backward_relu(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    /* y > 0 exactly where x > 0: the output is the saved tensor */
    rt_tensor *src[2] = {dout[0], node->out[0]};
    rt_ad_add(ad, node->src[0], rt_node_make1(g, RT_OP_RELU_BACKWARD, src, 2, NULL, 0, NULL, 0));
}

void op_backward_gelu(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[2] = {dout[0], node->src[0]};
    rt_ad_add(ad, node->src[0], rt_node_make1(g, RT_OP_GELU_BACKWARD, src, 2, NULL, 0, NULL, 0));
}

void op_backward_exp(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_ad_add(ad, node->src[0], rt_mul(g, dout[0], node->out[0]));
}

/* ---- glu */

rt_tensor *rt_glu(rt_graph *g, rt_tensor *x, int axis)
{
    int64_t ip[1] = {axis};
    return rt_node_make1(g, RT_OP_GLU, &x, 1, ip, 1, NULL, 0);
}

bool op_infer_glu(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x"))
        return false;
    rt_tensor *x = node->src[0];
    int axis = rt_axis((int)node->ip[0], x->ndim);
    if (axis < 0 || x->shape[axis] % 2 != 0) {
        char d[80];
        rt_graph_fail(g, node, "x is %s: axis %d must exist and have an even size", RT_DESC(x, d),
                      (int)node->ip[0]);
        return false;
    }
    node->ip[0] = axis;
    int64_t shape[RT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++)
        shape[i] = i == axis ? x->shape[i] / 2 : x->shape[i];
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, x->ndim, shape);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis == axis ? -1 : x->batch_axis;
    return true;
}

bool op_infer_glu_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dy") || !rt_need_float(g, node, 1, "x"))
        return false;
    rt_tensor *x = node->src[1];
    return rt_node_output(g, node, 0, x->dtype, x->ndim, x->shape) != NULL;
}

void op_backward_glu(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[2] = {dout[0], node->src[0]};
    rt_ad_add(ad, node->src[0],
              rt_node_make1(g, RT_OP_GLU_BACKWARD, src, 2, node->ip, 1, NULL, 0));
}

/* ---- randomness */

rt_tensor *rt_dropout(rt_graph *g, rt_tensor *x, double p)
{
    if (!x)
        return rt_null_arg(g, "dropout", "x");
    if (!(p >= 0.0 && p < 1.0)) {
        rt_graph_fail(g, NULL, "op dropout: p = %g; it must lie in [0, 1)", p);
        return NULL;
    }
    if (p == 0.0 || !rt_graph_is_training(g))
        return x;
    rt_tensor *src[2] = {x, rt_graph_rng_tensor(g)};
    int64_t ip[2] = {g->next_rng_id++, x->batch_axis};
    return rt_node_make1(g, RT_OP_DROPOUT, src, 2, ip, 2, &p, 1);
}

bool op_infer_dropout(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "x") || !rt_need_src(g, node, 1, "rng state"))
        return false;
    return infer_same_shape(g, node, node->src[0]->dtype);
}

void op_backward_dropout(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    /* the same stream (rng id, batch axis) regenerates the same mask */
    rt_tensor *src[2] = {dout[0], node->src[1]};
    rt_ad_add(ad, node->src[0], rt_node_make1(g, RT_OP_DROPOUT, src, 2, node->ip, 2, node->fp, 1));
}

static rt_tensor *random_op(rt_graph *g, rt_op op, rt_dtype dtype, int ndim, const int64_t *shape,
                            int batch_axis, double a, double b)
{
    if (rt_graph_failed(g))
        return NULL;
    if (ndim < 0 || ndim > RT_MAX_DIMS || batch_axis < -1 || batch_axis >= ndim) {
        rt_graph_fail(g, NULL, "op %s: %d dimensions with batch axis %d", rt_op_name(op), ndim,
                      batch_axis);
        return NULL;
    }
    rt_tensor *rng = rt_graph_rng_tensor(g);
    int64_t ip[3 + RT_MAX_DIMS] = {g->next_rng_id++, batch_axis, dtype};
    ip[3] = ndim;
    for (int i = 0; i < ndim; i++)
        ip[4 + i] = shape[i];
    double fp[2] = {a, b};
    return rt_node_make1(g, op, &rng, 1, ip, 4 + ndim, fp, 2);
}

rt_tensor *rt_rand_uniform(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape,
                           int batch_axis, double lo, double hi)
{
    return random_op(g, RT_OP_RAND_UNIFORM, dtype, ndim, shape, batch_axis, lo, hi);
}

rt_tensor *rt_rand_normal(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape,
                          int batch_axis, double mean, double std)
{
    return random_op(g, RT_OP_RAND_NORMAL, dtype, ndim, shape, batch_axis, mean, std);
}

rt_tensor *rt_randn_like(rt_graph *g, rt_tensor *x)
{
    if (!x)
        return rt_null_arg(g, "rand_normal", "x");
    return rt_rand_normal(g, x->dtype, x->ndim, x->shape, x->batch_axis, 0.0, 1.0);
}

/* ip0 rng id, ip1 batch axis, ip2 dtype, ip3 ndim, ip4.. shape */
bool op_infer_random(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "rng state"))
        return false;
    rt_dtype dtype = (rt_dtype)node->ip[2];
    if (!rt_is_compute_float(dtype)) {
        rt_graph_fail(g, node, "dtype %s: random numbers are drawn as f32 or f64",
                      rt_dtype_name(dtype) ? rt_dtype_name(dtype) : "?");
        return false;
    }
    rt_tensor *y = rt_node_output(g, node, 0, dtype, (int)node->ip[3], node->ip + 4);
    if (!y)
        return false;
    y->batch_axis = (int32_t)node->ip[1];
    return true;
}
