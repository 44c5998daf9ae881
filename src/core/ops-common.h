/* src/core/ops-common.h: checks shared by the shape-inference functions of the op table. */
#ifndef ROBOTRAIN_OPS_COMMON_H
#define ROBOTRAIN_OPS_COMMON_H

#include "core/graph-internal.h"

/* "f32[2,3]" of t, in a caller's buffer */
#define RT_DESC(t, buf) rt_tensor_describe((t), (buf), sizeof(buf))

static inline bool rt_is_compute_float(rt_dtype d) { return d == RT_F32 || d == RT_F64; }

/* A constructor was given NULL: keep the first error (a failed op) or record this one. */
static inline rt_tensor *rt_null_arg(rt_graph *g, const char *op, const char *what)
{
    rt_graph_fail(g, NULL, "op %s: %s is NULL", op, what);
    return NULL;
}

/* input i present */
static inline bool rt_need_src(rt_graph *g, rt_node *node, int i, const char *what)
{
    if (!node->src[i]) {
        rt_graph_fail(g, node, "%s is missing", what);
        return false;
    }
    return true;
}

/* input i present and f32/f64 */
static inline bool rt_need_float(rt_graph *g, rt_node *node, int i, const char *what)
{
    if (!rt_need_src(g, node, i, what))
        return false;
    if (!rt_is_compute_float(node->src[i]->dtype)) {
        char d[80];
        rt_graph_fail(g, node, "%s is %s; this op computes in f32 or f64 (cast it first)", what,
                      RT_DESC(node->src[i], d));
        return false;
    }
    return true;
}

/* input i (if present) has the dtype of input j */
static inline bool rt_need_same_dtype(rt_graph *g, rt_node *node, int i, int j, const char *what_i,
                                      const char *what_j)
{
    rt_tensor *a = node->src[i], *b = node->src[j];
    if (a && b && a->dtype != b->dtype) {
        char da[80], db[80];
        rt_graph_fail(g, node, "%s is %s but %s is %s: they must have the same dtype", what_i,
                      RT_DESC(a, da), what_j, RT_DESC(b, db));
        return false;
    }
    return true;
}

/* input i (if present) is 1-D with n elements */
static inline bool rt_need_vector(rt_graph *g, rt_node *node, int i, int64_t n, const char *what)
{
    rt_tensor *t = node->src[i];
    if (t && (t->ndim != 1 || t->shape[0] != n)) {
        char d[80];
        rt_graph_fail(g, node, "%s is %s; expected a vector of %" G_GINT64_FORMAT " elements",
                      what, RT_DESC(t, d), n);
        return false;
    }
    return true;
}

/* input i has exactly ndim dimensions */
static inline bool rt_need_ndim(rt_graph *g, rt_node *node, int i, int ndim, const char *what,
                                const char *layout)
{
    rt_tensor *t = node->src[i];
    if (t->ndim != ndim) {
        char d[80];
        rt_graph_fail(g, node, "%s is %s; expected %d dimensions (%s)", what, RT_DESC(t, d), ndim,
                      layout);
        return false;
    }
    return true;
}

/* output 0 with x's dtype, shape and batch axis */
static inline bool infer_like(rt_graph *g, rt_node *node, const rt_tensor *x)
{
    rt_tensor *y = rt_node_output(g, node, 0, x->dtype, x->ndim, x->shape);
    if (!y)
        return false;
    y->batch_axis = x->batch_axis;
    return true;
}

#endif
