/* CPU kernels of dynamic loss scaling (loss-scale.c): the found-inf check with the unscale,
 * and the scale update. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "core/backend-cpu.h"
#include "core/loss-scale-private.h"
#include "core/ops-decl.h"

/* fixed blocks: each records whether it saw a non-finite value, so no thread shares a flag */
#define AMP_BLOCK 16384

typedef struct unscale_job {
    void *g;
    int64_t n;
    bool f64;
    double inv; /* f32 grads: a float32 value */
    uint8_t *found;
} unscale_job;

static void unscale_blocks(void *arg, int64_t begin, int64_t end)
{
    const unscale_job *j = arg;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t e0 = blk * AMP_BLOCK, e1 = MIN(e0 + AMP_BLOCK, j->n);
        bool bad = false;
        /* torch's _amp_foreach_non_finite_check_and_unscale_: check the scaled value, then
         * multiply (unless the inverse is exactly 1) */
        if (j->f64) {
            double *g = (double *)j->g;
            for (int64_t e = e0; e < e1; e++) {
                bad |= !isfinite(g[e]);
                if (j->inv != 1.0)
                    g[e] *= j->inv;
            }
        } else {
            float *g = (float *)j->g, inv = (float)j->inv;
            for (int64_t e = e0; e < e1; e++) {
                bad |= !isfinite(g[e]);
                if (inv != 1.0f)
                    g[e] *= inv;
            }
        }
        j->found[blk] = bad;
    }
}

static int64_t n_blocks(int64_t n)
{
    return (n + AMP_BLOCK - 1) / AMP_BLOCK;
}

size_t cpu_ws_amp_unscale(const rt_node *node)
{
    return (size_t)n_blocks(rt_tensor_numel(node->src[0]));
}

bool cpu_amp_unscale(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *g = node->src[0];
    double *state = cpu_ptr(ctx, node->src[1]);
    double scale = state[RT_AMP_SCALE];
    /* scale.double().reciprocal().float() */
    double inv = g->dtype == RT_F32 ? (double)(float)(1.0 / scale) : 1.0 / scale;
    unscale_job j = {.g = cpu_ptr(ctx, g),
                     .n = rt_tensor_numel(g),
                     .f64 = g->dtype == RT_F64,
                     .inv = inv,
                     .found = cpu_workspace(ctx, node)};
    int64_t nb = n_blocks(j.n);
    cpu_parallel(ctx, nb, 1, unscale_blocks, &j);
    bool found = false;
    for (int64_t b = 0; b < nb; b++)
        found |= j.found[b] != 0;
    state[RT_AMP_FOUND_INF] = found ? 1.0 : 0.0;
    return true;
}

bool cpu_amp_update(rt_cpu_ctx *ctx, const rt_node *node)
{
    rt_loss_scale_update_values(cpu_ptr(ctx, node->src[0]), node->ip[0], node->fp[0], node->fp[1]);
    return true;
}
