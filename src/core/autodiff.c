/* Reverse-mode autodiff: walks the forward nodes backwards, asking each op's backward builder
 * (the op table) to record the nodes that compute its inputs' gradients, sums the
 * contributions per tensor, and writes each parameter's gradient into the gradient blob. */
#include "config.h"

#include <string.h>

#include "core/loss-scale-private.h"
#include "core/ops-common.h"

typedef struct slice_grad {
    int axis;
    int64_t start;
    rt_tensor *grad;
} slice_grad;

struct rt_autodiff {
    rt_graph *g;
    int n;            /* tensors that existed before the backward pass */
    uint8_t *needs;   /* per tensor: depends on a trainable parameter */
    GPtrArray **sum;  /* per tensor: gradient contributions of its full shape (or NULL) */
    GArray **slices;  /* per tensor: contributions to slices of it (or NULL) */
};

bool rt_ad_needs(const rt_autodiff *ad, const rt_tensor *x)
{
    return x && x->id < ad->n && ad->needs[x->id];
}

void rt_ad_add(rt_autodiff *ad, rt_tensor *x, rt_tensor *grad)
{
    if (!grad || !rt_ad_needs(ad, x))
        return;
    if (!rt_shape_equal(grad, x) || grad->dtype != x->dtype) {
        char dg[80], dx[80];
        rt_graph_fail(ad->g, x->node, "internal error: a gradient %s was built for a tensor %s",
                      RT_DESC(grad, dg), RT_DESC(x, dx));
        return;
    }
    if (!ad->sum[x->id])
        ad->sum[x->id] = g_ptr_array_new();
    g_ptr_array_add(ad->sum[x->id], grad);
}

void rt_ad_add_slice(rt_autodiff *ad, rt_tensor *x, int axis, int64_t start, rt_tensor *grad)
{
    if (!grad || !rt_ad_needs(ad, x))
        return;
    if (!ad->slices[x->id])
        ad->slices[x->id] = g_array_new(FALSE, FALSE, sizeof(slice_grad));
    slice_grad s = {axis, start, grad};
    g_array_append_val(ad->slices[x->id], s);
}

rt_tensor *rt_ad_unbroadcast(rt_graph *g, rt_tensor *grad, const rt_tensor *x)
{
    if (!grad)
        return NULL;
    if (rt_shape_equal(grad, x))
        return grad;
    uint32_t axes = 0;
    int lead = grad->ndim - x->ndim;
    for (int i = 0; i < grad->ndim; i++) {
        int j = i - lead;
        if (j < 0 || (x->shape[j] == 1 && grad->shape[i] != 1))
            axes |= 1u << i;
    }
    rt_tensor *s = axes ? rt_sum(g, grad, axes, TRUE) : grad;
    return rt_reshape(g, s, x->ndim, x->shape);
}

static int compare_slices(gconstpointer a, gconstpointer b)
{
    const slice_grad *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* When the slice gradients tile the tensor along one axis (the packed q/k/v projection,
 * mu/logvar halves), one concat replaces padding each to full size and adding. */
static rt_tensor *tile_slices(rt_graph *g, rt_tensor *x, GArray *slices)
{
    if (slices->len > RT_MAX_SRC)
        return NULL;
    g_array_sort(slices, compare_slices);
    rt_tensor *parts[RT_MAX_SRC];
    int axis = g_array_index(slices, slice_grad, 0).axis;
    int64_t next = 0;
    for (guint i = 0; i < slices->len; i++) {
        slice_grad *s = &g_array_index(slices, slice_grad, i);
        if (s->axis != axis || s->start != next)
            return NULL;
        next += s->grad->shape[axis];
        parts[i] = s->grad;
    }
    if (next != x->shape[axis])
        return NULL;
    return rt_concat(g, parts, (int)slices->len, axis);
}

/* The total gradient of x (NULL when nothing flows into it); consumes its contributions. */
static rt_tensor *take(rt_autodiff *ad, rt_tensor *x)
{
    GPtrArray *sum = ad->sum[x->id];
    GArray *slices = ad->slices[x->id];
    ad->sum[x->id] = NULL;
    ad->slices[x->id] = NULL;
    rt_graph *g = ad->g;
    GPtrArray *parts = sum ? sum : g_ptr_array_new();
    if (slices) {
        rt_tensor *tiled = tile_slices(g, x, slices);
        if (tiled)
            g_ptr_array_add(parts, tiled);
        else
            for (guint i = 0; i < slices->len; i++) {
                slice_grad *s = &g_array_index(slices, slice_grad, i);
                int64_t len = s->grad->shape[s->axis];
                g_ptr_array_add(parts, rt_pad(g, s->grad, s->axis, s->start,
                                              x->shape[s->axis] - s->start - len));
            }
        g_array_unref(slices);
    }
    rt_tensor *total = NULL;
    for (guint i = 0; i < parts->len; i++) {
        rt_tensor *p = g_ptr_array_index(parts, i);
        total = total ? rt_add(g, total, p) : p;
    }
    g_ptr_array_unref(parts);
    return total;
}

static void autodiff_free(rt_autodiff *ad)
{
    for (int i = 0; i < ad->n; i++) {
        if (ad->sum[i])
            g_ptr_array_unref(ad->sum[i]);
        if (ad->slices[i])
            g_array_unref(ad->slices[i]);
    }
    g_free(ad->sum);
    g_free(ad->slices);
    g_free(ad->needs);
}

/* Makes grad the parameter's gradient tensor, copying when it cannot be written in place
 * (a view, a forward tensor, one already used for another parameter). */
static rt_tensor *claim_gradient(rt_autodiff *ad, rt_tensor *param, rt_tensor *grad)
{
    bool direct = grad->node && !grad->view_of && grad->id >= ad->n && !RT_IMPL(grad)->grad_of &&
                  !rt_op_is_view((rt_op)grad->node->op) && rt_tensor_is_contiguous(grad) &&
                  !(grad->flags & RT_TENSOR_OUTPUT);
    if (!direct)
        grad = rt_node_make1(ad->g, RT_OP_CONTIGUOUS, &grad, 1, NULL, 0, NULL, 0);
    if (!grad)
        return NULL;
    RT_IMPL(grad)->grad_of = param;
    RT_IMPL(grad)->fixed = true; /* placed in the gradient blob by the layout */
    grad->flags |= RT_TENSOR_GRAD;
    return grad;
}

gboolean rt_graph_backward(rt_graph *g, GError **error)
{
    if (!rt_graph_check(g, error))
        return FALSE;
    if (g->backward_done || g->layout_done) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_backward: call it once, before rt_graph_add_adamw and rt_graph_plan");
        return FALSE;
    }
    if (g->share_src) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_backward: this graph shares another graph's weights and cannot be "
                    "trained; differentiate the source graph");
        return FALSE;
    }
    if (!g->loss) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_backward: the graph has no loss; call rt_set_loss first");
        return FALSE;
    }
    rt_autodiff ad = {.g = g, .n = (int)g->tensors->len};
    ad.needs = g_new0(uint8_t, ad.n);
    ad.sum = g_new0(GPtrArray *, ad.n);
    ad.slices = g_new0(GArray *, ad.n);

    for (guint i = 0; i < g->params->len; i++) {
        rt_tensor *p = g_ptr_array_index(g->params, i);
        ad.needs[p->id] = 1;
    }
    int n_nodes = (int)g->nodes->len;
    for (int i = 0; i < n_nodes; i++) {
        rt_node *node = g_ptr_array_index(g->nodes, i);
        const rt_op_row *row = &rt_op_table[node->op];
        bool needs = false;
        for (int s = 0; s < node->n_src; s++)
            if ((row->diff_src & (1u << s)) && rt_ad_needs(&ad, node->src[s]))
                needs = true;
        if (!needs || !row->backward)
            continue;
        for (int k = 0; k < node->n_out; k++)
            if (node->out[k] && rt_dtype_is_float(node->out[k]->dtype)) {
                ad.needs[node->out[k]->id] = 1;
                node->out[k]->flags |= RT_TENSOR_NEEDS_GRAD;
            }
    }
    for (int i = 0; i < ad.n; i++)
        if (ad.needs[i])
            ((rt_tensor *)g_ptr_array_index(g->tensors, i))->flags |= RT_TENSOR_NEEDS_GRAD;

    gboolean ok = FALSE;
    rt_tensor *loss = g->loss;
    if (!ad.needs[loss->id]) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_backward: the loss does not depend on any trainable parameter "
                    "(declare the weights with rt_param)");
        goto out;
    }
    /* scaler.scale(loss).backward(): with loss scaling the seed is the scale, not 1 */
    rt_ad_add(&ad, loss, g->amp_state ? rt_loss_scale_seed(g, loss)
                                      : rt_fill(g, loss->dtype, loss->ndim, loss->shape, 1.0));

    for (int i = n_nodes - 1; i >= 0 && !rt_graph_failed(g); i--) {
        rt_node *node = g_ptr_array_index(g->nodes, i);
        const rt_op_row *row = &rt_op_table[node->op];
        if (!row->backward)
            continue;
        rt_tensor *dout[RT_MAX_OUT] = {0};
        bool any = false;
        for (int k = 0; k < node->n_out; k++)
            if (node->out[k] && rt_ad_needs(&ad, node->out[k])) {
                dout[k] = take(&ad, node->out[k]);
                any = any || dout[k];
            }
        if (any)
            row->backward(&ad, g, node, dout);
    }
    for (guint i = 0; i < g->params->len && !rt_graph_failed(g); i++) {
        rt_tensor *p = g_ptr_array_index(g->params, i);
        rt_tensor *grad = take(&ad, p);
        if (grad)
            RT_IMPL(p)->grad = claim_gradient(&ad, p, grad);
    }
    if (!rt_graph_check(g, error))
        goto out;
    g->n_forward_nodes = n_nodes;
    g->backward_done = true;
    ok = TRUE;
out:
    autodiff_free(&ad);
    return ok;
}
