/* src/core/cpu-pool.h: the CPU backend's worker threads. One parallel loop at a time; the
 * caller's thread takes part. Dispatching allocates nothing. */
#ifndef ROBOTRAIN_CPU_POOL_H
#define ROBOTRAIN_CPU_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rt_cpu_pool rt_cpu_pool;

/* fn(arg, begin, end) handles indices [begin, end). */
typedef void (*rt_cpu_range_fn)(void *arg, int64_t begin, int64_t end);

/* Returns (transfer full) a pool of n_threads (>= 1, counting the caller): free with
 * rt_cpu_pool_free(). NULL when threads cannot be started. */
rt_cpu_pool *rt_cpu_pool_new(int n_threads);
void rt_cpu_pool_free(rt_cpu_pool *pool);
int rt_cpu_pool_size(const rt_cpu_pool *pool);

/* Splits [0, n) into at most one contiguous chunk per thread, none smaller than min_chunk
 * (except the last), and waits for all of them. */
void rt_cpu_pool_run(rt_cpu_pool *pool, int64_t n, int64_t min_chunk, rt_cpu_range_fn fn, void *arg);

#endif
