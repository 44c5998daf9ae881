/* robotrain/loss-scale.h: dynamic loss scaling for f16 mixed precision, built into the
 * training graph as torch.cuda.amp.GradScaler does it around a step.
 *
 * f16 has 5 exponent bits: small gradients underflow to zero. The scaler multiplies the loss's
 * gradient (the backward pass's seed) by a scale S, so every gradient of the backward pass is S
 * times larger; before the gradient norm, clipping and AdamW the parameters' gradients are
 * multiplied by 1/S again. When any of them is inf or NaN (S was too large: an f16 product
 * overflowed) the step is skipped: no AdamW update and no step count increment, and S is
 * halved. After growth_interval steps in a row without overflow S doubles.
 *
 *     rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
 *     rt_graph_set_compute_dtype(g, RT_F16);
 *     ... the policy builds its forward pass and loss ...
 *     rt_loss_scale_config ls = RT_LOSS_SCALE_CONFIG_INIT;
 *     rt_graph_enable_loss_scaling(g, &ls, &error);       before rt_graph_backward
 *     rt_graph_backward(g, &error);
 *     rt_graph_add_adamw(g, ...);                          appends unscale, skip and update ops
 *     rt_graph_plan(g, ...);
 *     each step: rt_graph_compute(g, &error); rt_graph_get_loss_scale(g, &state, &error);
 *
 * All of it runs as graph ops where the gradients live (amp_unscale, amp_update; step_inc
 * and adamw read the found-inf flag), so nothing is copied to the host to decide a skip. */
#ifndef ROBOTRAIN_LOSS_SCALE_H
#define ROBOTRAIN_LOSS_SCALE_H

#include <stdint.h>

#include <glib.h>

#include <robotrain/graph.h>

G_BEGIN_DECLS

/* GradScaler's constructor arguments. */
typedef struct rt_loss_scale_config {
    double init_scale;       /* > 0 */
    double growth_factor;    /* > 1 */
    double backoff_factor;   /* in (0, 1) */
    int64_t growth_interval; /* >= 1 */
} rt_loss_scale_config;

/* torch.cuda.amp.GradScaler()'s defaults */
#define RT_LOSS_SCALE_CONFIG_INIT                                                                            \
    {                                                                                                        \
        65536.0, 2.0, 0.5, 2000                                                                              \
    }

/* The scaler's state. scale and growth_tracker are GradScaler.state_dict()'s "scale" and
 * "_growth_tracker"; the rest describe the last step. */
typedef struct rt_loss_scale_state {
    double scale;           /* the scale of the next step (a float32 value) */
    int64_t growth_tracker; /* steps without overflow since the scale last changed */
    gboolean found_inf;     /* the last step's gradients had inf or NaN: it was skipped */
    int64_t skipped;        /* steps skipped since the graph was planned (or the state set) */
} rt_loss_scale_state;

/* Turns dynamic loss scaling on: the backward pass is seeded with the scale, and
 * rt_graph_add_adamw (which must follow) appends the unscale, the conditional skip and the
 * scale update. Call once, after the loss is set and before rt_graph_backward. Fails
 * (RT_ERROR_INVALID_ARG) on a bad config or when called out of order. */
gboolean rt_graph_enable_loss_scaling(rt_graph *g, const rt_loss_scale_config *config, GError **error);
/* Whether rt_graph_enable_loss_scaling succeeded on g. */
gboolean rt_graph_has_loss_scaling(const rt_graph *g);

/* After rt_graph_plan: the state (after the last step), and setting it (for resume; found_inf
 * is ignored, skipped is taken as given). scale must be finite and > 0, growth_tracker >= 0. */
gboolean rt_graph_get_loss_scale(rt_graph *g, rt_loss_scale_state *state, GError **error);
gboolean rt_graph_set_loss_scale(rt_graph *g, const rt_loss_scale_state *state, GError **error);

/* GradScaler.update() on the host, for checks: the state after a step whose gradients had
 * (found_inf) or had not an inf or NaN, computed in float32 as torch's _amp_update_scale_. */
void rt_loss_scale_update(const rt_loss_scale_config *config, rt_loss_scale_state *state, gboolean found_inf);

G_END_DECLS

#endif
