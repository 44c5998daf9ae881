/* ACTPolicy.select_action between chunks, on the host: the action queue (the first
 * n_action_steps actions of each chunk, one per call) or, with temporal_ensemble_coeff,
 * ACTTemporalEnsembler's online weighted average of the overlapping chunks. The arithmetic is
 * float32 in PyTorch's order, so the averages match LeRobot's bit for bit up to libm's exp. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "act.h"

typedef struct act_selector {
    int64_t batch, chunk, dim; /* B, T, A */
    int64_t n_action_steps;
    gboolean ensemble;
    /* queue: steps [head, head + queued) of queue ([T][B][A]) */
    float *queue;
    int64_t head, queued;
    /* ensembler: the running averages of the next `pending` steps ([T][B][A]) and how many
     * chunks each has seen; weights exp(-coeff * i) and their cumulative sums */
    float *avg;
    int64_t *count;
    int64_t n_avg;
    float *weights, *cumsum;
    gboolean ready; /* a chunk was pushed and its action not popped yet */
} act_selector;

void *act_selector_new(const act_config *c, int64_t batch_size, GError **error)
{
    (void)error;
    act_selector *s = g_new0(act_selector, 1);
    s->batch = batch_size;
    s->chunk = c->chunk_size;
    s->dim = c->action_dim;
    s->n_action_steps = c->n_action_steps;
    s->ensemble = c->temporal_ensemble;
    size_t step = (size_t)(s->batch * s->dim);
    if (s->ensemble) {
        s->avg = g_new0(float, step * (size_t)s->chunk);
        s->count = g_new0(int64_t, s->chunk);
        s->weights = g_new(float, s->chunk);
        s->cumsum = g_new(float, s->chunk);
        /* torch.exp(-coeff * torch.arange(T)) in float32, then torch.cumsum */
        float neg = (float)-c->temporal_ensemble_coeff, sum = 0;
        for (int64_t i = 0; i < s->chunk; i++) {
            s->weights[i] = expf(neg * (float)i);
            sum += s->weights[i];
            s->cumsum[i] = sum;
        }
    } else {
        s->queue = g_new0(float, step * (size_t)s->n_action_steps);
    }
    return s;
}

void act_selector_free(void *selector)
{
    act_selector *s = selector;
    if (!s)
        return;
    g_free(s->queue);
    g_free(s->avg);
    g_free(s->count);
    g_free(s->weights);
    g_free(s->cumsum);
    g_free(s);
}

void act_selector_reset(void *selector)
{
    act_selector *s = selector;
    s->head = s->queued = 0;
    s->n_avg = 0;
    s->ready = FALSE;
}

gboolean act_selector_needs_chunk(void *selector)
{
    act_selector *s = selector;
    return s->ensemble ? !s->ready : s->queued == 0;
}

/* ACTTemporalEnsembler.update without the final "consume": fold chunk into the averages */
static void ensemble_update(act_selector *s, const float *chunk)
{
    const int64_t B = s->batch, T = s->chunk, A = s->dim, step = B * A;
    float *chunk_t = s->avg; /* avg as [t][b][a]; the chunk is [b][t][a] */
    if (s->n_avg == 0) {
        for (int64_t t = 0; t < T; t++) {
            for (int64_t b = 0; b < B; b++)
                memcpy(chunk_t + t * step + b * A, chunk + (b * T + t) * A, (size_t)A * sizeof(float));
            s->count[t] = 1;
        }
        s->n_avg = T;
        return;
    }
    /* the T - 1 pending steps meet steps 0..T-2 of the new chunk */
    for (int64_t t = 0; t < s->n_avg; t++) {
        int64_t n = s->count[t];
        float keep = s->cumsum[n - 1], w = s->weights[n], total = s->cumsum[n];
        for (int64_t b = 0; b < B; b++)
            for (int64_t a = 0; a < A; a++) {
                float *v = &s->avg[t * step + b * A + a];
                float x = *v * keep;
                x = x + chunk[(b * T + t) * A + a] * w;
                *v = x / total;
            }
        s->count[t] = MIN(n + 1, T);
    }
    /* the chunk's last step starts its own average */
    for (int64_t b = 0; b < B; b++)
        memcpy(s->avg + s->n_avg * step + b * A, chunk + (b * T + T - 1) * A, (size_t)A * sizeof(float));
    s->count[s->n_avg] = 1;
    s->n_avg++;
}

gboolean act_selector_push_chunk(void *selector, const float *chunk, size_t n, GError **error)
{
    act_selector *s = selector;
    size_t want = (size_t)(s->batch * s->chunk * s->dim);
    if (n != want) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "ACT select_action: the chunk has %zu values; expected %zu ([%" G_GINT64_FORMAT
                    ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]: batch, chunk_size, action_dim)",
                    n, want, s->batch, s->chunk, s->dim);
        return FALSE;
    }
    if (!act_selector_needs_chunk(s)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "ACT select_action: a chunk was pushed while %s; pop an action first",
                    s->ensemble ? "the ensembled action of the previous chunk is waiting"
                                : "the action queue still holds actions");
        return FALSE;
    }
    if (s->ensemble) {
        ensemble_update(s, chunk);
        s->ready = TRUE;
        return TRUE;
    }
    /* the first n_action_steps of the chunk, step-major: actions.transpose(0, 1) */
    const int64_t B = s->batch, T = s->chunk, A = s->dim;
    for (int64_t t = 0; t < s->n_action_steps; t++)
        for (int64_t b = 0; b < B; b++)
            memcpy(s->queue + (t * B + b) * A, chunk + (b * T + t) * A, (size_t)A * sizeof(float));
    s->head = 0;
    s->queued = s->n_action_steps;
    return TRUE;
}

gboolean act_selector_pop(void *selector, float *action, size_t n, GError **error)
{
    act_selector *s = selector;
    const int64_t step = s->batch * s->dim;
    if (n != (size_t)step) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "ACT select_action: the action buffer has %zu values; expected %" G_GINT64_FORMAT
                    " ([%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]: batch, action_dim)",
                    n, step, s->batch, s->dim);
        return FALSE;
    }
    if (act_selector_needs_chunk(s)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "ACT select_action: no action to pop; push the chunk the policy predicts for this "
                    "observation first");
        return FALSE;
    }
    if (s->ensemble) {
        memcpy(action, s->avg, (size_t)step * sizeof(float));
        memmove(s->avg, s->avg + step, (size_t)((s->n_avg - 1) * step) * sizeof(float));
        memmove(s->count, s->count + 1, (size_t)(s->n_avg - 1) * sizeof(int64_t));
        s->n_avg--;
        s->ready = FALSE;
        return TRUE;
    }
    memcpy(action, s->queue + s->head * step, (size_t)step * sizeof(float));
    s->head++;
    s->queued--;
    return TRUE;
}
