/* The optimizer as ops: step count, global gradient norm, clipping and AdamW, appended after
 * the backward pass so that they run where the parameters live. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/loss-scale-private.h"
#include "core/ops-common.h"
#include "core/ops-decl.h"

/* input i, when present, is the f64 scaler state (robotrain/loss-scale.h) */
static bool scaler_ok(rt_graph *g, rt_node *node, int i)
{
    if (node->n_src <= i || !node->src[i])
        return true;
    if (node->src[i]->dtype != RT_F64 || rt_tensor_numel(node->src[i]) != RT_AMP_STATE_LEN) {
        rt_graph_fail(g, node, "input %d must be the scaler state, f64[%d]", i, RT_AMP_STATE_LEN);
        return false;
    }
    return true;
}

bool op_infer_step_inc(rt_graph *g, rt_node *node)
{
    return rt_need_src(g, node, 0, "step") && scaler_ok(g, node, 1);
}

bool op_infer_grad_norm(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "gradients"))
        return false;
    return rt_node_output(g, node, 0, node->src[0]->dtype, 0, NULL) != NULL;
}

bool op_infer_clip_grad(rt_graph *g, rt_node *node)
{
    return rt_need_float(g, node, 0, "gradients") && rt_need_float(g, node, 1, "norm") &&
           rt_need_src(g, node, 2, "hyper-parameters");
}

bool op_infer_adamw(rt_graph *g, rt_node *node)
{
    static const char *names[4] = {"param", "grad", "exp_avg", "exp_avg_sq"};
    for (int i = 0; i < 4; i++)
        if (!rt_need_float(g, node, i, names[i]) ||
            !rt_need_same_dtype(g, node, 0, i, "param", names[i]))
            return false;
    return rt_need_src(g, node, 4, "hyper-parameters") && rt_need_src(g, node, 5, "step") &&
           scaler_ok(g, node, 6);
}

/* A tensor at a fixed place of a blob (a whole-blob or whole-group view). */
static rt_tensor *blob_tensor(rt_graph *g, rt_dtype dtype, rt_storage storage, size_t offset,
                              int64_t numel)
{
    rt_tensor *t = rt_tensor_new_leaf(g, NULL, dtype, 1, &numel, 0);
    if (!t)
        return NULL;
    t->storage = storage;
    t->offset = offset;
    RT_IMPL(t)->fixed = true;
    return t;
}

static size_t align_up(size_t n)
{
    return (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
}

gboolean rt_graph_add_adamw(rt_graph *g, const rt_adamw_group *groups, int n_groups,
                            double max_grad_norm, GError **error)
{
    if (!rt_graph_check(g, error))
        return FALSE;
    if (!g->backward_done || g->optimizer_done || g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_add_adamw: call it once, after rt_graph_backward and before "
                    "rt_graph_plan");
        return FALSE;
    }
    if (n_groups < 1 || !groups) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_add_adamw: %d parameter groups; give at least one", n_groups);
        return FALSE;
    }
    for (int i = 0; i < n_groups; i++) {
        const rt_adamw_group *p = &groups[i];
        if (!(p->lr >= 0) || !(p->beta1 >= 0 && p->beta1 < 1) || !(p->beta2 >= 0 && p->beta2 < 1) ||
            !(p->eps >= 0) || !(p->weight_decay >= 0)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "AdamW group %d: lr %g, betas (%g, %g), eps %g, weight_decay %g: lr, eps "
                        "and weight_decay must be >= 0 and the betas in [0, 1)", i, p->lr,
                        p->beta1, p->beta2, p->eps, p->weight_decay);
            return FALSE;
        }
    }
    for (guint i = 0; i < g->params->len; i++) {
        rt_tensor *p = g_ptr_array_index(g->params, i);
        if (RT_IMPL(p)->group >= n_groups) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "parameter '%s' is in optimizer group %d but only %d groups were given",
                        p->name, RT_IMPL(p)->group, n_groups);
            return FALSE;
        }
    }
    if (g->params->len == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_add_adamw: the graph has no trainable parameters");
        return FALSE;
    }
    if (!rt_graph_layout(g, error))
        return FALSE;

    rt_dtype dtype = ((rt_tensor *)g_ptr_array_index(g->params, 0))->dtype;
    size_t esize = rt_dtype_size(dtype);
    g->n_groups = n_groups;
    g->groups = g_memdup2(groups, sizeof *groups * (size_t)n_groups);
    g->max_grad_norm = max_grad_norm;

    size_t state = 0;
    g->hyper = blob_tensor(g, RT_F64, RT_STORAGE_STATE, state, n_groups * RT_HYPER_PER_GROUP + 1);
    state = align_up(state + rt_tensor_nbytes(g->hyper));
    g->step = blob_tensor(g, RT_F64, RT_STORAGE_STATE, state, 1);
    state = align_up(state + 8);

    int64_t n_flat = (int64_t)(g->storage_size[RT_STORAGE_GRAD] / esize);
    rt_tensor *grads = blob_tensor(g, dtype, RT_STORAGE_GRAD, 0, n_flat);
    /* loss scaling: unscale first (the norm and clipping see true gradients), and a step
     * whose gradients overflowed neither counts nor updates */
    if (g->amp_state && !rt_loss_scale_add_unscale(g, grads))
        return rt_graph_check(g, error);
    rt_tensor *inc_src[2] = {g->step, g->amp_state};
    rt_node *inc = rt_node_make(g, RT_OP_STEP_INC, inc_src, g->amp_state ? 2 : 1, NULL, 0, NULL, 0);
    rt_node *norm = rt_node_make(g, RT_OP_GRAD_NORM, &grads, 1, NULL, 0, NULL, 0);
    if (!inc || !norm)
        return rt_graph_check(g, error);
    g->grad_norm = norm->out[0];
    g->grad_norm->storage = RT_STORAGE_STATE;
    g->grad_norm->offset = state;
    RT_IMPL(g->grad_norm)->fixed = true;
    state = align_up(state + esize);
    if (g->amp_state)
        state = align_up(rt_loss_scale_place(g, state));
    g->storage_size[RT_STORAGE_STATE] = state;
    rt_graph_output(g, "grad_norm", g->grad_norm);
    rt_tensor *clip_src[3] = {grads, g->grad_norm, g->hyper};
    if (!rt_node_make(g, RT_OP_CLIP_GRAD, clip_src, 3, NULL, 0, NULL, 0))
        return rt_graph_check(g, error);

    /* one update per group over its contiguous range of parameters that have gradients */
    for (int grp = 0; grp < n_groups; grp++) {
        size_t begin = SIZE_MAX, end = 0;
        for (guint i = 0; i < g->params->len; i++) {
            rt_tensor *p = g_ptr_array_index(g->params, i);
            if (RT_IMPL(p)->group != grp || !RT_IMPL(p)->grad)
                continue;
            begin = MIN(begin, p->offset);
            end = MAX(end, p->offset + rt_tensor_nbytes(p));
        }
        if (begin >= end)
            continue;
        int64_t n = (int64_t)((end - begin) / esize);
        rt_tensor *src[7] = {
            blob_tensor(g, dtype, RT_STORAGE_PARAM, begin, n),
            blob_tensor(g, dtype, RT_STORAGE_GRAD, begin, n),
            blob_tensor(g, dtype, RT_STORAGE_ADAM_M, begin, n),
            blob_tensor(g, dtype, RT_STORAGE_ADAM_V, begin, n),
            g->hyper,
            g->step,
            g->amp_state,
        };
        int64_t ip[1] = {grp};
        if (!rt_node_make(g, RT_OP_ADAMW, src, g->amp_state ? 7 : 6, ip, 1, NULL, 0))
            return rt_graph_check(g, error);
    }
    if (g->amp_state && !rt_loss_scale_add_update(g))
        return rt_graph_check(g, error);
    g->optimizer_done = true;
    return rt_graph_check(g, error);
}

/* Writes bytes of a planned storage. */
static gboolean write_state(rt_graph *g, rt_tensor *t, size_t byte_offset, const void *data,
                            size_t n, GError **error)
{
    if (!g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the graph is not planned yet: call rt_graph_plan first");
        return FALSE;
    }
    return g->backend->copy_to_device(g->dev, &g->buf[t->storage], t->offset + byte_offset, data,
                                      n, error);
}

static gboolean need_optimizer(rt_graph *g, const char *what, GError **error)
{
    if (!g->optimizer_done) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: the graph has no optimizer (rt_graph_add_adamw)", what);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_graph_set_lr(rt_graph *g, int group, double lr, GError **error)
{
    if (!need_optimizer(g, "rt_graph_set_lr", error))
        return FALSE;
    if (group < 0 || group >= g->n_groups || !(lr >= 0)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_set_lr: group %d, lr %g: the group must be 0..%d and lr >= 0",
                    group, lr, g->n_groups - 1);
        return FALSE;
    }
    return write_state(g, g->hyper, (size_t)(group * RT_HYPER_PER_GROUP + RT_HYPER_LR) * 8, &lr,
                       8, error);
}

gboolean rt_graph_set_max_grad_norm(rt_graph *g, double max_norm, GError **error)
{
    if (!need_optimizer(g, "rt_graph_set_max_grad_norm", error))
        return FALSE;
    return write_state(g, g->hyper, (size_t)(g->n_groups * RT_HYPER_PER_GROUP) * 8, &max_norm, 8,
                       error);
}

gboolean rt_graph_set_step(rt_graph *g, double step, GError **error)
{
    if (!need_optimizer(g, "rt_graph_set_step", error))
        return FALSE;
    if (!(step >= 0) || step != floor(step)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_set_step: %g is not a count of steps", step);
        return FALSE;
    }
    return write_state(g, g->step, 0, &step, 8, error);
}

gboolean rt_graph_get_step(rt_graph *g, double *step, GError **error)
{
    if (!need_optimizer(g, "rt_graph_get_step", error))
        return FALSE;
    if (!g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the graph is not planned yet: call rt_graph_plan first");
        return FALSE;
    }
    return g->backend->copy_to_host(g->dev, step, &g->buf[RT_STORAGE_STATE], g->step->offset, 8,
                                    error);
}

/* The initial contents of the state storage (called once allocated). */
gboolean rt_optim_write_initial_state(rt_graph *g, GError **error)
{
    if (!g->optimizer_done)
        return TRUE;
    int n = g->n_groups * RT_HYPER_PER_GROUP + 1;
    double *h = g_new0(double, n);
    for (int i = 0; i < g->n_groups; i++) {
        h[i * RT_HYPER_PER_GROUP + RT_HYPER_LR] = g->groups[i].lr;
        h[i * RT_HYPER_PER_GROUP + RT_HYPER_BETA1] = g->groups[i].beta1;
        h[i * RT_HYPER_PER_GROUP + RT_HYPER_BETA2] = g->groups[i].beta2;
        h[i * RT_HYPER_PER_GROUP + RT_HYPER_EPS] = g->groups[i].eps;
        h[i * RT_HYPER_PER_GROUP + RT_HYPER_WD] = g->groups[i].weight_decay;
    }
    h[n - 1] = g->max_grad_norm;
    gboolean ok = write_state(g, g->hyper, 0, h, (size_t)n * 8, error) &&
                  rt_loss_scale_write_initial(g, error);
    g_free(h);
    return ok;
}
