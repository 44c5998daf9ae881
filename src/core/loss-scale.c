/* Dynamic loss scaling as graph ops (see robotrain/loss-scale.h): the scaled seed of the
 * backward pass, the unscale with its found-inf check, and GradScaler's update rule. The CPU
 * kernels are in backend-cpu-amp.c. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/loss-scale.h>

#include "core/loss-scale-private.h"
#include "core/ops-common.h"
#include "core/ops-decl.h"

gboolean rt_graph_enable_loss_scaling(rt_graph *g, const rt_loss_scale_config *c, GError **error)
{
    g_return_val_if_fail(g && c, FALSE);
    if (!rt_graph_check(g, error))
        return FALSE;
    if (g->amp_state || g->backward_done || g->share_src) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_enable_loss_scaling: call it once, on a graph that is trained, "
                    "before rt_graph_backward");
        return FALSE;
    }
    if (!(c->init_scale > 0) || isinf(c->init_scale) || !((float)c->init_scale > 0) ||
        !(c->growth_factor > 1) || isinf(c->growth_factor) || !(c->backoff_factor > 0) ||
        !(c->backoff_factor < 1) || c->growth_interval < 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "loss scaling: init_scale %g, growth_factor %g, backoff_factor %g, "
                    "growth_interval %" G_GINT64_FORMAT ": the scale must be a positive float32, "
                    "the growth factor > 1, the backoff factor in (0, 1) and the interval >= 1",
                    c->init_scale, c->growth_factor, c->backoff_factor, (gint64)c->growth_interval);
        return FALSE;
    }
    int64_t n = RT_AMP_STATE_LEN;
    rt_tensor *t = rt_tensor_new_leaf(g, NULL, RT_F64, 1, &n, 0);
    if (!t)
        return rt_graph_check(g, error);
    t->storage = RT_STORAGE_STATE; /* its offset is fixed with the optimizer's state */
    RT_IMPL(t)->fixed = true;
    g->amp_state = t;
    g->amp_config = *c;
    /* a float32 scale, as GradScaler keeps it */
    g->amp_config.init_scale = (float)c->init_scale;
    return TRUE;
}

gboolean rt_graph_has_loss_scaling(const rt_graph *g)
{
    return g && g->amp_state != NULL;
}

/* The scale as the loss's dtype and shape: what scaler.scale(loss).backward() seeds. */
rt_tensor *rt_loss_scale_seed(rt_graph *g, const rt_tensor *loss)
{
    rt_tensor *scale = rt_slice(g, g->amp_state, 0, RT_AMP_SCALE, 1);
    return rt_reshape(g, rt_cast(g, scale, loss->dtype), loss->ndim, loss->shape);
}

size_t rt_loss_scale_place(rt_graph *g, size_t offset)
{
    g->amp_state->offset = offset;
    return offset + RT_AMP_STATE_LEN * sizeof(double);
}

bool rt_loss_scale_add_unscale(rt_graph *g, rt_tensor *grads)
{
    rt_tensor *src[2] = {grads, g->amp_state};
    return rt_node_make(g, RT_OP_AMP_UNSCALE, src, 2, NULL, 0, NULL, 0) != NULL;
}

bool rt_loss_scale_add_update(rt_graph *g)
{
    int64_t ip[1] = {g->amp_config.growth_interval};
    double fp[2] = {g->amp_config.growth_factor, g->amp_config.backoff_factor};
    return rt_node_make(g, RT_OP_AMP_UPDATE, &g->amp_state, 1, ip, 1, fp, 2) != NULL;
}

bool op_infer_amp_unscale(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "gradients") || !rt_need_src(g, node, 1, "scaler state"))
        return false;
    if (node->src[1]->dtype != RT_F64 || rt_tensor_numel(node->src[1]) != RT_AMP_STATE_LEN) {
        rt_graph_fail(g, node, "the scaler state must be f64[%d]", RT_AMP_STATE_LEN);
        return false;
    }
    return true;
}

bool op_infer_amp_update(rt_graph *g, rt_node *node)
{
    if (!rt_need_src(g, node, 0, "scaler state"))
        return false;
    if (node->src[0]->dtype != RT_F64 || rt_tensor_numel(node->src[0]) != RT_AMP_STATE_LEN) {
        rt_graph_fail(g, node, "the scaler state must be f64[%d]", RT_AMP_STATE_LEN);
        return false;
    }
    if (node->ip[0] < 1 || !(node->fp[0] > 1) || !(node->fp[1] > 0 && node->fp[1] < 1)) {
        rt_graph_fail(g, node,
                      "growth interval %" G_GINT64_FORMAT ", factors %g and %g: the "
                      "interval must be >= 1, growth > 1 and backoff in (0, 1)",
                      (gint64)node->ip[0], node->fp[0], node->fp[1]);
        return false;
    }
    return true;
}

void rt_loss_scale_update_values(double *state, int64_t growth_interval, double growth, double backoff)
{
    /* torch's _amp_update_scale_: the scale is a float32 tensor, the tracker an int32 one */
    float scale = (float)state[RT_AMP_SCALE];
    if (state[RT_AMP_FOUND_INF] != 0) {
        scale = (float)((double)scale * backoff); /* float * double, stored as float */
        state[RT_AMP_TRACKER] = 0;
        state[RT_AMP_SKIPPED] += 1;
    } else {
        double successful = state[RT_AMP_TRACKER] + 1;
        if (successful >= (double)growth_interval) {
            float grown = (float)((double)scale * growth);
            if (isfinite(grown))
                scale = grown;
            state[RT_AMP_TRACKER] = 0;
        } else {
            state[RT_AMP_TRACKER] = successful;
        }
    }
    state[RT_AMP_SCALE] = scale;
}

void rt_loss_scale_update(const rt_loss_scale_config *c, rt_loss_scale_state *s, gboolean found_inf)
{
    double v[RT_AMP_STATE_LEN] = {s->scale, (double)s->growth_tracker, found_inf ? 1 : 0, (double)s->skipped};
    rt_loss_scale_update_values(v, c->growth_interval, c->growth_factor, c->backoff_factor);
    s->scale = v[RT_AMP_SCALE];
    s->growth_tracker = (int64_t)v[RT_AMP_TRACKER];
    s->found_inf = found_inf;
    s->skipped = (int64_t)v[RT_AMP_SKIPPED];
}

static gboolean need_planned(rt_graph *g, const char *what, GError **error)
{
    if (!g->amp_state || !g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %s", what,
                    !g->amp_state ? "the graph has no loss scaling (rt_graph_enable_loss_scaling)"
                                  : "the graph is not planned yet: call rt_graph_plan first");
        return FALSE;
    }
    return TRUE;
}

static gboolean write_values(rt_graph *g, const double *v, GError **error)
{
    return g->backend->copy_to_device(g->dev, &g->buf[RT_STORAGE_STATE], g->amp_state->offset, v,
                                      RT_AMP_STATE_LEN * sizeof(double), error);
}

gboolean rt_loss_scale_write_initial(rt_graph *g, GError **error)
{
    if (!g->amp_state)
        return TRUE;
    double v[RT_AMP_STATE_LEN] = {[RT_AMP_SCALE] = g->amp_config.init_scale};
    return write_values(g, v, error);
}

gboolean rt_graph_get_loss_scale(rt_graph *g, rt_loss_scale_state *state, GError **error)
{
    if (!need_planned(g, "rt_graph_get_loss_scale", error))
        return FALSE;
    double v[RT_AMP_STATE_LEN];
    if (!g->backend->copy_to_host(g->dev, v, &g->buf[RT_STORAGE_STATE], g->amp_state->offset, sizeof v,
                                  error))
        return FALSE;
    state->scale = v[RT_AMP_SCALE];
    state->growth_tracker = (int64_t)v[RT_AMP_TRACKER];
    state->found_inf = v[RT_AMP_FOUND_INF] != 0;
    state->skipped = (int64_t)v[RT_AMP_SKIPPED];
    return TRUE;
}

gboolean rt_graph_set_loss_scale(rt_graph *g, const rt_loss_scale_state *state, GError **error)
{
    if (!need_planned(g, "rt_graph_set_loss_scale", error))
        return FALSE;
    if (!(state->scale > 0) || isinf(state->scale) || !((float)state->scale > 0) ||
        isinf((float)state->scale) || state->growth_tracker < 0 || state->skipped < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "loss scale %g, growth tracker %" G_GINT64_FORMAT ": the scale must be a "
                    "positive finite float32 and the tracker >= 0",
                    state->scale, (gint64)state->growth_tracker);
        return FALSE;
    }
    double v[RT_AMP_STATE_LEN] = {
        [RT_AMP_SCALE] = (float)state->scale,
        [RT_AMP_TRACKER] = (double)state->growth_tracker,
        [RT_AMP_SKIPPED] = (double)state->skipped,
    };
    return write_values(g, v, error);
}
