/* The data-parallel side of robotrain train (see train-dist.h). */
#include "config.h"

#include <string.h>

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/store.h>

#include "train/train-dist.h"

#define DEFAULT_BUCKET_MB 25.0
#define DEFAULT_TIMEOUT_S 1800.0

struct rt_train_dist {
    rt_world world;
    size_t bucket_bytes;
    unsigned timeout_ms;
    gboolean verbose;
    rt_store *store;
    rt_comm *comm;
    /* time spent in collectives, for the summary at the end */
    double grad_seconds, small_seconds;
    int64_t grad_calls;
    size_t grad_bytes;
};

/* A positive number from the environment, or fallback when unset. */
static gboolean env_number(const char *name, double fallback, double max, double *out, GError **error)
{
    const char *text = g_getenv(name);
    *out = fallback;
    if (!text || !*text)
        return TRUE;
    char *end = NULL;
    double v = g_ascii_strtod(text, &end);
    if (end == text || *end || !(v > 0) || v > max) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s=%s: give a positive number up to %g (unset: %g)", name, text, max, fallback);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

rt_train_dist *rt_train_dist_new(GError **error)
{
    rt_train_dist *d = g_new0(rt_train_dist, 1);
    double mb = 0, timeout_s = 0;
    if (!rt_world_from_env(&d->world, error) ||
        !env_number("ROBOTRAIN_DDP_BUCKET_MB", DEFAULT_BUCKET_MB, 1 << 16, &mb, error) ||
        !env_number("ROBOTRAIN_DDP_TIMEOUT", DEFAULT_TIMEOUT_S, 4e6, &timeout_s, error)) {
        g_free(d);
        return NULL;
    }
    d->bucket_bytes = (size_t)(mb * 1024 * 1024);
    if (d->bucket_bytes < 4)
        d->bucket_bytes = 4;
    d->timeout_ms = (unsigned)(timeout_s * 1000);
    if (d->timeout_ms == 0)
        d->timeout_ms = 1;
    const char *v = g_getenv("ROBOTRAIN_VERBOSE");
    d->verbose = v && *v && strcmp(v, "0") != 0;
    return d;
}

void rt_train_dist_free(rt_train_dist *d)
{
    if (!d)
        return;
    rt_comm_free(d->comm);
    rt_store_free(d->store); /* rank 0's stops a store it hosts: everyone passed the last barrier */
    g_free(d);
}

gboolean rt_train_dist_env_is_main(void)
{
    rt_world world;
    return !rt_world_from_env(&world, NULL) || world.rank == 0;
}

const rt_world *rt_train_dist_world(const rt_train_dist *d)
{
    return &d->world;
}

gboolean rt_train_dist_active(const rt_train_dist *d)
{
    return d->world.world_size > 1;
}

gboolean rt_train_dist_is_main(const rt_train_dist *d)
{
    return d->world.rank == 0;
}

gboolean rt_train_dist_prints(const rt_train_dist *d)
{
    return d->world.rank == 0 || d->verbose;
}

size_t rt_train_dist_bucket_bytes(const rt_train_dist *d)
{
    return d->bucket_bytes;
}

int rt_train_dist_cuda_index(const rt_train_dist *d, int given)
{
    if (given >= 0)
        return given;
    return rt_train_dist_active(d) ? d->world.local_rank : 0;
}

gboolean rt_train_dist_join(rt_train_dist *d, GError **error)
{
    if (!rt_train_dist_active(d) || d->store)
        return TRUE;
    d->store = rt_store_open(&d->world, d->timeout_ms, error);
    if (!d->store) {
        g_prefix_error(error,
                       "rank %d of %d: joining the run's rendezvous store (ROBOTRAIN_DDP_TIMEOUT=%gs): ",
                       d->world.rank, d->world.world_size, d->timeout_ms / 1000.0);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_train_dist_share_u64(rt_train_dist *d, const char *name, uint64_t *value, GError **error)
{
    if (!rt_train_dist_active(d))
        return TRUE;
    if (!rt_train_dist_join(d, error))
        return FALSE;
    g_autofree char *key = g_strdup_printf("train/share/%s", name);
    if (d->world.rank == 0)
        return rt_store_set(d->store, key, value, sizeof *value, error);
    GBytes *b = rt_store_get(d->store, key, RT_STORE_DEFAULT_TIMEOUT, error);
    if (!b)
        return FALSE;
    gsize n = 0;
    const void *data = g_bytes_get_data(b, &n);
    gboolean ok = n == sizeof *value;
    if (ok)
        memcpy(value, data, sizeof *value);
    else
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "rank %d: the store's %s holds %zu bytes, not 8",
                    d->world.rank, key, (size_t)n);
    g_bytes_unref(b);
    return ok;
}

/* The value is "1" when rank 0 succeeded, "0" when it failed. */
gboolean rt_train_dist_wait_main(void *user_data, gboolean main_ok, GError **error)
{
    rt_train_dist *d = user_data;
    if (!rt_train_dist_active(d))
        return TRUE;
    if (!rt_train_dist_join(d, error))
        return FALSE;
    static guint64 round; /* the same sequence on every rank */
    round++;
    g_autofree char *key = g_strdup_printf("train/main-done/%" G_GUINT64_FORMAT, round);
    if (d->world.rank == 0) {
        const char *text = main_ok ? "1" : "0";
        return rt_store_set(d->store, key, text, strlen(text), error);
    }
    GBytes *b = rt_store_get(d->store, key, RT_STORE_DEFAULT_TIMEOUT, error);
    if (!b) {
        g_prefix_error(error, "rank %d: waiting for rank 0: ", d->world.rank);
        return FALSE;
    }
    gsize n = 0;
    const char *text = g_bytes_get_data(b, &n);
    gboolean ok = n >= 1 && text[0] == '1';
    if (!ok)
        g_set_error(error, RT_ERROR, RT_ERROR_IO,
                    "rank %d: rank 0 failed at the step the others wait for (its log says why)", d->world.rank);
    g_bytes_unref(b);
    return ok;
}

gboolean rt_train_dist_connect(rt_train_dist *d, rt_plugin_registry *registry, int cuda_device,
                               GError **error)
{
    if (!rt_train_dist_active(d) || d->comm)
        return TRUE;
    if (!rt_train_dist_join(d, error))
        return FALSE;
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.device = cuda_device;
    config.timeout_ms = d->timeout_ms;
    config.name = "train";
    d->comm = rt_comm_new(registry, NULL, &d->world, d->store, &config, error);
    if (!d->comm) {
        g_prefix_error(error, "rank %d of %d: setting up the %s communicator: ", d->world.rank,
                       d->world.world_size, rt_comm_default_backend(cuda_device));
        return FALSE;
    }
    return TRUE;
}

static gboolean comm_dtype(rt_dtype dtype, rt_comm_dtype *out, GError **error)
{
    switch (dtype) {
    case RT_F32:
        *out = RT_COMM_F32;
        return TRUE;
    case RT_BF16:
        *out = RT_COMM_BF16;
        return TRUE;
    case RT_F16:
        *out = RT_COMM_F16;
        return TRUE;
    default:
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "gradients of dtype %s cannot be averaged across processes (f32, bf16 or f16 only)",
                    rt_dtype_name(dtype));
        return FALSE;
    }
}

/* The graph's collective: one bucket of gradients, averaged in place. */
static gboolean average_bucket(void *user_data, void *data, size_t count, rt_dtype dtype, void *stream,
                               GError **error)
{
    rt_train_dist *d = user_data;
    rt_comm_dtype cd;
    if (!comm_dtype(dtype, &cd, error))
        return FALSE;
    gint64 t0 = g_get_monotonic_time();
    gboolean ok = !stream ? rt_comm_allreduce(d->comm, data, count, cd, RT_COMM_AVG, error)
                          : rt_comm_allreduce_async(d->comm, data, count, cd, RT_COMM_AVG, stream, error) &&
                                rt_comm_wait_stream(d->comm, stream, error);
    d->grad_seconds += (double)(g_get_monotonic_time() - t0) / 1e6; /* on CUDA: queueing only */
    d->grad_calls++;
    d->grad_bytes += count * rt_comm_dtype_size(cd);
    return ok;
}

/* A whole storage from rank 0: a byte copy, so its dtypes do not matter (sizes are aligned). */
static gboolean broadcast_storage(rt_train_dist *d, rt_graph *g, rt_storage storage, const char *what,
                                  GError **error)
{
    size_t size = rt_graph_storage_size(g, storage);
    void *ptr = rt_graph_storage_buffer(g, storage)->ptr;
    if (!size || !ptr)
        return TRUE;
    if (!rt_comm_broadcast(d->comm, ptr, size / 4, RT_COMM_F32, 0, error)) {
        g_prefix_error(error, "broadcasting rank 0's %s (%zu bytes): ", what, size);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_train_dist_attach(rt_train_dist *d, rt_graph *g, GError **error)
{
    if (!rt_train_dist_active(d))
        return TRUE;
    rt_graph_set_collective(g, average_bucket, d);
    return broadcast_storage(d, g, RT_STORAGE_PARAM, "parameters", error) &&
           broadcast_storage(d, g, RT_STORAGE_BUFFER, "buffers", error);
}

/* Small host vectors through the communicator: f32 on the host for Gloo; a CUDA communicator
 * needs device memory, which the caller does not have here, so these go through the store
 * there. Both give every rank the same numbers. */
static gboolean host_comm(const rt_train_dist *d)
{
    return strcmp(rt_comm_get_memory(d->comm), "host") == 0;
}

/* Every rank's vector of n doubles, through the store: rows[r * n + i]. */
static gboolean gather_store(rt_train_dist *d, const char *what, const double *values, int n, double *rows,
                             GError **error)
{
    static guint64 round; /* the same sequence on every rank */
    round++;
    g_autofree char *key = g_strdup_printf("train/%s/%" G_GUINT64_FORMAT "/%d", what, round, d->world.rank);
    if (!rt_store_set(d->store, key, values, sizeof(double) * (size_t)n, error))
        return FALSE;
    if (round > 2) {
        /* every rank has set its key of the last round, so all have read this rank's key of the
         * round before: the store stays small over a long run */
        g_autofree char *old =
            g_strdup_printf("train/%s/%" G_GUINT64_FORMAT "/%d", what, round - 2, d->world.rank);
        if (rt_store_delete(d->store, old, error) < 0)
            return FALSE;
    }
    for (int r = 0; r < d->world.world_size; r++) {
        g_autofree char *k = g_strdup_printf("train/%s/%" G_GUINT64_FORMAT "/%d", what, round, r);
        GBytes *b = rt_store_get(d->store, k, RT_STORE_DEFAULT_TIMEOUT, error);
        if (!b)
            return FALSE;
        gsize size = 0;
        const void *p = g_bytes_get_data(b, &size);
        if (size != sizeof(double) * (size_t)n) {
            g_bytes_unref(b);
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "rank %d sent %zu bytes for %s, not %zu", r,
                        (size_t)size, what, sizeof(double) * (size_t)n);
            return FALSE;
        }
        memcpy(rows + (size_t)r * (size_t)n, p, size);
        g_bytes_unref(b);
    }
    return TRUE;
}

static gboolean sum(rt_train_dist *d, double *values, int n, GError **error);

gboolean rt_train_dist_sum(rt_train_dist *d, double *values, int n, GError **error)
{
    if (!rt_train_dist_active(d) || n <= 0)
        return TRUE;
    gint64 t0 = g_get_monotonic_time();
    gboolean ok = sum(d, values, n, error);
    d->small_seconds += (double)(g_get_monotonic_time() - t0) / 1e6;
    return ok;
}

static gboolean sum(rt_train_dist *d, double *values, int n, GError **error)
{
    if (host_comm(d)) {
        float *f = g_new(float, n);
        for (int i = 0; i < n; i++)
            f[i] = (float)values[i];
        gboolean ok = rt_comm_allreduce(d->comm, f, (size_t)n, RT_COMM_F32, RT_COMM_SUM, error);
        for (int i = 0; ok && i < n; i++)
            values[i] = f[i];
        g_free(f);
        return ok;
    }
    double *rows = g_new(double, (size_t)n *(size_t)d->world.world_size);
    gboolean ok = gather_store(d, "sum", values, n, rows, error);
    for (int i = 0; ok && i < n; i++) {
        values[i] = 0;
        for (int r = 0; r < d->world.world_size; r++)
            values[i] += rows[r * n + i];
    }
    g_free(rows);
    return ok;
}

gboolean rt_train_dist_reduce_log(rt_train_dist *d, double *mean, int n_mean, double *max, int n_max,
                                  GError **error)
{
    if (!rt_train_dist_active(d))
        return TRUE;
    int n = n_mean + n_max, N = d->world.world_size;
    double *mine = g_new(double, n), *rows = g_new(double, (size_t)n *(size_t)N);
    memcpy(mine, mean, sizeof(double) * (size_t)n_mean);
    memcpy(mine + n_mean, max, sizeof(double) * (size_t)n_max);
    gboolean ok = TRUE;
    if (host_comm(d)) {
        /* no max in the comm interface: each rank's vector is broadcast once (a few numbers,
         * every log_freq steps) */
        float *f = g_new(float, n);
        for (int r = 0; r < N && ok; r++) {
            for (int i = 0; i < n; i++)
                f[i] = (float)mine[i];
            ok = rt_comm_broadcast(d->comm, f, (size_t)n, RT_COMM_F32, r, error);
            for (int i = 0; ok && i < n; i++)
                rows[r * n + i] = f[i];
        }
        g_free(f);
    } else {
        ok = gather_store(d, "log", mine, n, rows, error);
    }
    for (int i = 0; ok && i < n; i++) {
        double acc = rows[i];
        for (int r = 1; r < N; r++)
            acc = i < n_mean ? acc + rows[r * n + i] : MAX(acc, rows[r * n + i]);
        if (i < n_mean)
            mean[i] = acc / N;
        else
            max[i - n_mean] = acc;
    }
    g_free(mine);
    g_free(rows);
    return ok;
}

gboolean rt_train_dist_barrier(rt_train_dist *d, GError **error)
{
    if (!rt_train_dist_active(d))
        return TRUE;
    return rt_comm_barrier(d->comm, error);
}

char *rt_train_dist_summary(const rt_train_dist *d, int64_t steps)
{
    if (!rt_train_dist_active(d) || steps <= 0 || d->grad_calls == 0)
        return NULL;
    return g_strdup_printf("Data parallel (%s): averaging gradients took %.2f ms per step (%.1f MB in %.1f "
                           "all-reduce(s) per step), per-step counts and stop flags %.2f ms per step",
                           rt_comm_get_backend(d->comm), 1e3 * d->grad_seconds / (double)steps,
                           (double)d->grad_bytes / (double)steps / 1e6, (double)d->grad_calls / (double)steps,
                           1e3 * d->small_seconds / (double)steps);
}
