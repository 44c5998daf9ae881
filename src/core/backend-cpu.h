/* src/core/backend-cpu.h: what the CPU kernels (backend-cpu-*.c) share with the executor. */
#ifndef ROBOTRAIN_BACKEND_CPU_H
#define ROBOTRAIN_BACKEND_CPU_H

#include <stdio.h>

#include "core/cpu-pool.h"
#include "core/graph-internal.h"

struct rt_cpu_ctx {
    uint8_t *base[RT_STORAGE_COUNT]; /* host address of each storage */
    rt_cpu_pool *pool;
    rt_graph *graph;                 /* the graph being run (for its collective) */
    char message[256];               /* a kernel's reason for failing */
};

static inline void *cpu_ptr(const rt_cpu_ctx *ctx, const rt_tensor *t)
{
    return ctx->base[t->storage] + t->offset;
}

static inline void *cpu_workspace(const rt_cpu_ctx *ctx, const rt_node *node)
{
    return ctx->base[RT_STORAGE_ARENA] + node->workspace_offset;
}

static inline void cpu_parallel(rt_cpu_ctx *ctx, int64_t n, int64_t min_chunk, rt_cpu_range_fn fn,
                                void *arg)
{
    rt_cpu_pool_run(ctx->pool, n, min_chunk, fn, arg);
}

/* Parallel loops aim at this much work (elements) per chunk, below which threads cost more
 * than they save. */
#define CPU_GRAIN 16384

/* Rounds n floats in place to the compute dtype cd (no-op for f32). */
void cpu_round_to(float *x, size_t n, int64_t cd);

#define CPU_FAIL(ctx, ...) (snprintf((ctx)->message, sizeof (ctx)->message, __VA_ARGS__), false)

#endif
