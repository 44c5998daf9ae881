/* Worker threads for the CPU executor's own loops. With OpenMP (the normal build) they are the
 * same OpenMP threads the dense kernels of src/core/cpu use, so one set of threads serves the
 * whole step and none spins against another; every region uses the full thread count, which
 * lets libgomp reuse its team (no allocation per loop). Without OpenMP: a pthread pool. */
#include "config.h"

#include <stdlib.h>

#include <glib.h>

#include "core/cpu-pool.h"

#ifdef _OPENMP
#include <omp.h>

struct rt_cpu_pool {
    int n_threads;
};

rt_cpu_pool *rt_cpu_pool_new(int n_threads)
{
    rt_cpu_pool *pool = g_new0(rt_cpu_pool, 1);
    pool->n_threads = n_threads < 1 ? 1 : n_threads;
    return pool;
}

void rt_cpu_pool_free(rt_cpu_pool *pool)
{
    g_free(pool);
}

int rt_cpu_pool_size(const rt_cpu_pool *pool)
{
    return pool->n_threads;
}

void rt_cpu_pool_run(rt_cpu_pool *pool, int64_t n, int64_t min_chunk, rt_cpu_range_fn fn, void *arg)
{
    if (n <= 0)
        return;
    if (min_chunk < 1)
        min_chunk = 1;
    int64_t parts = (n + min_chunk - 1) / min_chunk;
    if (parts > pool->n_threads)
        parts = pool->n_threads;
    if (parts <= 1) {
        fn(arg, 0, n);
        return;
    }
    int64_t chunk = (n + parts - 1) / parts;
#pragma omp parallel num_threads(pool->n_threads)
    {
        int64_t begin = (int64_t)omp_get_thread_num() * chunk;
        int64_t end = begin + chunk < n ? begin + chunk : n;
        if (begin < end)
            fn(arg, begin, end);
    }
}

#else /* no OpenMP: a fixed set of pthreads woken per loop */
#include <pthread.h>

struct rt_cpu_pool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t work;
    pthread_cond_t done;
    uint64_t generation;
    int pending;
    bool shutdown;
    rt_cpu_range_fn fn;
    void *arg;
    int64_t n, chunk;
};

typedef struct worker_arg {
    rt_cpu_pool *pool;
    int index;
} worker_arg;

static void run_chunk(rt_cpu_pool *pool, int index)
{
    int64_t begin = (int64_t)index * pool->chunk;
    int64_t end = begin + pool->chunk < pool->n ? begin + pool->chunk : pool->n;
    if (begin < end)
        pool->fn(pool->arg, begin, end);
}

static void *worker_main(void *p)
{
    worker_arg *wa = p;
    rt_cpu_pool *pool = wa->pool;
    int index = wa->index;
    free(wa);
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        while (pool->generation == seen && !pool->shutdown)
            pthread_cond_wait(&pool->work, &pool->lock);
        if (pool->shutdown) {
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
        seen = pool->generation;
        pthread_mutex_unlock(&pool->lock);
        run_chunk(pool, index);
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done);
        pthread_mutex_unlock(&pool->lock);
    }
}

rt_cpu_pool *rt_cpu_pool_new(int n_threads)
{
    rt_cpu_pool *pool = g_new0(rt_cpu_pool, 1);
    pool->n_threads = n_threads < 1 ? 1 : n_threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->threads = g_new0(pthread_t, pool->n_threads);
    for (int i = 1; i < pool->n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        wa->pool = pool;
        wa->index = i;
        if (!wa || pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            pool->n_threads = i; /* keep the ones that started */
            break;
        }
    }
    return pool;
}

void rt_cpu_pool_free(rt_cpu_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->shutdown = true;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; i < pool->n_threads; i++)
        pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->work);
    pthread_cond_destroy(&pool->done);
    g_free(pool->threads);
    g_free(pool);
}

int rt_cpu_pool_size(const rt_cpu_pool *pool)
{
    return pool->n_threads;
}

void rt_cpu_pool_run(rt_cpu_pool *pool, int64_t n, int64_t min_chunk, rt_cpu_range_fn fn, void *arg)
{
    if (n <= 0)
        return;
    if (min_chunk < 1)
        min_chunk = 1;
    int64_t parts = (n + min_chunk - 1) / min_chunk;
    if (parts > pool->n_threads)
        parts = pool->n_threads;
    if (parts <= 1) {
        fn(arg, 0, n);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->chunk = (n + parts - 1) / parts;
    pool->pending = pool->n_threads - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    run_chunk(pool, 0);
    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
#endif
