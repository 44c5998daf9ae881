/* src/core/loss-scale-private.h: what autodiff, the optimizer builder, the planner and the
 * CPU kernels share about dynamic loss scaling (robotrain/loss-scale.h). */
#ifndef ROBOTRAIN_CORE_LOSS_SCALE_PRIVATE_H
#define ROBOTRAIN_CORE_LOSS_SCALE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/graph-internal.h"

/* The scaler state, f64[RT_AMP_STATE_LEN] in the state storage. Ops reading it: amp_unscale
 * (writes FOUND_INF), step_inc and adamw (their optional last input: do nothing when
 * FOUND_INF), amp_update (SCALE, TRACKER, SKIPPED). */
enum {
    RT_AMP_SCALE,     /* float32 value */
    RT_AMP_TRACKER,   /* GradScaler's _growth_tracker */
    RT_AMP_FOUND_INF, /* 1 when this step's scaled gradients had inf or NaN */
    RT_AMP_SKIPPED,   /* steps skipped so far */
    RT_AMP_STATE_LEN
};

/* The seed of the backward pass: the scale, with the loss's dtype and shape. */
rt_tensor *rt_loss_scale_seed(rt_graph *g, const rt_tensor *loss);
/* Puts the state at offset of the state storage; returns the offset after it. */
size_t rt_loss_scale_place(rt_graph *g, size_t offset);
/* The unscale of the flat gradients (before the gradient norm), and the scale update (last). */
bool rt_loss_scale_add_unscale(rt_graph *g, rt_tensor *grads);
bool rt_loss_scale_add_update(rt_graph *g);
/* The initial state (init_scale), once the storages exist. */
gboolean rt_loss_scale_write_initial(rt_graph *g, GError **error);
/* GradScaler.update() on a state array (the amp_update kernel and the host check). */
void rt_loss_scale_update_values(double *state, int64_t growth_interval, double growth, double backoff);

/* For kernels of ops whose last input may be the scaler state: TRUE when the step is skipped. */
static inline bool rt_loss_scale_skips(const double *state)
{
    return state && state[RT_AMP_FOUND_INF] != 0;
}

#endif
