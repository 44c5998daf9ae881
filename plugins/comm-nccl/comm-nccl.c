/* plugins/comm-nccl/comm-nccl.c: the NCCL comm module, for buffers on CUDA devices.
 *
 * Bootstrap: rank 0 calls ncclGetUniqueId and publishes the id in the run's rendezvous store;
 * the others read it from there (within the timeout). The communicator is created
 * non-blocking (ncclConfig_t.blocking = 0), so no NCCL call ever blocks the host: after each
 * one this module polls ncclCommGetAsyncError until the call has finished, and gives up at the
 * configured timeout with ncclCommAbort. A peer that never joins therefore ends in an error
 * naming the timeout, never a hang.
 *
 * Collectives run on the module's own non-blocking stream. The stream-ordered variants fence
 * it against the caller's stream with events in both directions (the caller's work before the
 * collective, the collective before the caller's later work), never with the host; the blocking
 * variants queue on the module's stream and wait for it. Waiting polls the completion event and
 * NCCL's asynchronous error, so a peer that dies mid-collective or a collective that never ends
 * aborts the communicator at the timeout. Counts are always elements (NCCL's convention too);
 * the barrier all-reduces one float, in a buffer of one float.
 *
 * RT_COMM_AVG is ncclAvg (NCCL >= 2.10); bf16 needs NCCL >= 2.10 as well; non-blocking creation
 * needs NCCL >= 2.14. */
#include "config.h"

#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/plugin.h>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "comm-nccl needs NCCL 2.14 or newer (non-blocking communicators, ncclAvg, bf16)"
#endif

struct rt_comm_ctx {
    int rank, size, device;
    unsigned timeout_ms;
    char where[96];        /* "rank R of N on cuda:D" */
    ncclComm_t comm;       /* NULL once aborted or destroyed */
    cudaStream_t stream;   /* the module's stream: every collective runs here */
    cudaEvent_t ready;     /* recorded on a caller's stream, waited for by ours */
    cudaEvent_t done;      /* recorded on ours after each collective */
    gboolean queued;       /* done has been recorded at least once */
    float *one;            /* device scratch for the barrier: one float */
    /* Aborting from another thread: while a call is in progress (busy), abort only asks
     * (abort_asked) and the calling thread, which polls, aborts at once; otherwise abort ends the
     * communicator itself. So the communicator is never freed under a thread that uses it. */
    GMutex lock;
    gboolean busy;
    gint abort_asked;
    gboolean aborted;
};

/* ---------------------------------------------------------------- errors */

static gboolean cuda_ok(rt_comm_ctx *ctx, cudaError_t status, const char *what, GError **error)
{
    if (status == cudaSuccess)
        return TRUE;
    g_set_error(error, RT_ERROR, RT_ERROR_DEVICE, "nccl %s: %s: %s (%s)", what, ctx->where, cudaGetErrorName(status),
                cudaGetErrorString(status));
    (void)cudaGetLastError(); /* clear a non-sticky error */
    return FALSE;
}

/* Ends the communicator at once (NCCL frees it); safe to call twice. Only the thread that owns
 * the call in progress, or any thread when none is, may call it. */
static void abort_comm(rt_comm_ctx *ctx)
{
    if (!ctx->aborted && ctx->comm) {
        ncclCommAbort(ctx->comm);
        ctx->comm = NULL;
    }
    ctx->aborted = TRUE;
}

/* Another thread asked for an abort during the call in progress: do it, and fail. */
static gboolean abort_if_asked(rt_comm_ctx *ctx, const char *what, GError **error)
{
    if (!g_atomic_int_get(&ctx->abort_asked))
        return FALSE;
    abort_comm(ctx);
    g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "nccl %s: %s: aborted", what, ctx->where);
    return TRUE;
}

static void set_nccl_error(rt_comm_ctx *ctx, ncclResult_t rc, const char *what, GError **error)
{
    const char *detail = ctx->comm ? ncclGetLastError(ctx->comm) : ncclGetLastError(NULL);
    g_set_error(error, RT_ERROR, rc == ncclRemoteError || rc == ncclSystemError ? RT_ERROR_NETWORK : RT_ERROR_DEVICE,
                "nccl %s: %s: %s%s%s%s", what, ctx->where, ncclGetErrorString(rc), detail && *detail ? " (" : "",
                detail && *detail ? detail : "",
                detail && *detail ? ")" : "");
}

/* Waits until the call that returned rc has finished (non-blocking communicators return
 * ncclInProgress), polling its state until deadline. On failure or timeout the communicator is
 * aborted. */
static gboolean settle(rt_comm_ctx *ctx, ncclResult_t rc, const char *what, gint64 deadline, GError **error)
{
    gulong nap_us = 20;
    while (rc == ncclInProgress) {
        if (abort_if_asked(ctx, what, error))
            return FALSE;
        if (g_get_monotonic_time() > deadline) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "nccl %s: %s: did not finish within %.1f s: another rank has not joined, failed or hangs "
                        "(NCCL_DEBUG=INFO shows more); the communicator was aborted",
                        what, ctx->where, ctx->timeout_ms / 1000.0);
            abort_comm(ctx);
            return FALSE;
        }
        g_usleep(nap_us);
        nap_us = MIN(nap_us * 2, 1000);
        ncclResult_t state = ncclSuccess;
        ncclResult_t query = ncclCommGetAsyncError(ctx->comm, &state);
        rc = query != ncclSuccess ? query : state;
    }
    if (rc != ncclSuccess) {
        set_nccl_error(ctx, rc, what, error);
        abort_comm(ctx);
        return FALSE;
    }
    return TRUE;
}

static gint64 deadline_from_now(const rt_comm_ctx *ctx)
{
    return g_get_monotonic_time() + (gint64)ctx->timeout_ms * 1000;
}

/* Blocks the host until every collective queued so far is complete, watching for NCCL's
 * asynchronous errors; aborts at the timeout. */
static gboolean wait_done(rt_comm_ctx *ctx, const char *what, GError **error)
{
    if (!ctx->queued)
        return TRUE;
    gint64 deadline = deadline_from_now(ctx);
    gulong nap_us = 10;
    for (;;) {
        if (abort_if_asked(ctx, what, error))
            return FALSE;
        cudaError_t status = cudaEventQuery(ctx->done);
        if (status == cudaSuccess)
            return TRUE;
        if (status != cudaErrorNotReady) {
            cuda_ok(ctx, status, what, error);
            abort_comm(ctx);
            return FALSE;
        }
        ncclResult_t state = ncclSuccess;
        ncclResult_t query = ncclCommGetAsyncError(ctx->comm, &state);
        if (query != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
            set_nccl_error(ctx, query != ncclSuccess ? query : state, what, error);
            abort_comm(ctx);
            return FALSE;
        }
        if (g_get_monotonic_time() > deadline) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "nccl %s: %s: the collectives did not complete within %.1f s: another rank failed or "
                        "hangs (NCCL_DEBUG=INFO shows more); the communicator was aborted",
                        what, ctx->where, ctx->timeout_ms / 1000.0);
            abort_comm(ctx);
            return FALSE;
        }
        g_usleep(nap_us);
        nap_us = MIN(nap_us * 2, 500);
    }
}

/* ---------------------------------------------------------------- life cycle */

static void nccl_destroy(rt_comm_ctx *ctx)
{
    if (!ctx)
        return;
    GError *error = NULL;
    if (ctx->stream)
        cudaSetDevice(ctx->device);
    if (ctx->comm && !ctx->aborted) {
        /* Finish what is queued, then leave in an orderly way; both within the timeout. */
        if (wait_done(ctx, "destroy", &error) &&
            settle(ctx, ncclCommFinalize(ctx->comm), "finalize", deadline_from_now(ctx), &error)) {
            ncclCommDestroy(ctx->comm);
            ctx->comm = NULL;
        }
        if (error) {
            g_warning("%s", error->message);
            g_clear_error(&error);
        }
    }
    abort_comm(ctx); /* whatever is left after a failed finalize */
    if (ctx->one)
        cudaFree(ctx->one);
    if (ctx->done)
        cudaEventDestroy(ctx->done);
    if (ctx->ready)
        cudaEventDestroy(ctx->ready);
    if (ctx->stream)
        cudaStreamDestroy(ctx->stream);
    g_mutex_clear(&ctx->lock);
    g_free(ctx);
}

/* The unique id of this communicator: made by rank 0, read by the others from the store. */
static gboolean share_unique_id(rt_comm_ctx *ctx, rt_store *store, const char *name, ncclUniqueId *id,
                                GError **error)
{
    /* Each process counts its communicators of this name, so a second one gets a fresh key. */
    char *counter = g_strdup_printf("comm/nccl/%s/created/%d", name, ctx->rank);
    int64_t generation = 0;
    gboolean ok = rt_store_add(store, counter, 1, &generation, error);
    g_free(counter);
    if (!ok)
        return FALSE;
    char *key = g_strdup_printf("comm/nccl/%s/%" G_GINT64_FORMAT "/unique-id", name, generation);
    if (ctx->rank == 0) {
        ncclResult_t rc = ncclGetUniqueId(id);
        if (rc != ncclSuccess) {
            set_nccl_error(ctx, rc, "ncclGetUniqueId", error);
            ok = FALSE;
        } else {
            ok = rt_store_set(store, key, id, sizeof *id, error);
        }
    } else {
        GBytes *value = rt_store_get(store, key, ctx->timeout_ms, error);
        ok = value != NULL;
        if (ok && g_bytes_get_size(value) != sizeof *id) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "nccl bootstrap: %s: the unique id in the store at %s (key '%s') has %zu bytes, not %zu: "
                        "do all ranks run the same NCCL?",
                        ctx->where, rt_store_get_address(store), key, g_bytes_get_size(value), sizeof *id);
            ok = FALSE;
        } else if (ok) {
            memcpy(id, g_bytes_get_data(value, NULL), sizeof *id);
        }
        if (value)
            g_bytes_unref(value);
    }
    if (!ok)
        g_prefix_error(error, "nccl bootstrap: %s: ", ctx->where);
    g_free(key);
    return ok;
}

static rt_comm_ctx *nccl_init(const rt_world *world, rt_store *store, const rt_comm_config *config, GError **error)
{
    rt_comm_ctx *ctx = g_new0(rt_comm_ctx, 1);
    g_mutex_init(&ctx->lock);
    ctx->rank = world->rank;
    ctx->size = world->world_size;
    ctx->device = config->device;
    ctx->timeout_ms = config->timeout_ms;
    g_snprintf(ctx->where, sizeof ctx->where, "rank %d of %d on cuda:%d", ctx->rank, ctx->size, ctx->device);

    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver || (status == cudaSuccess && count == 0)) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "nccl init: %s: no CUDA device is visible to this process (%s); check nvidia-smi and "
                    "CUDA_VISIBLE_DEVICES, or use the gloo backend on the CPU",
                    ctx->where, status == cudaSuccess ? "none found" : cudaGetErrorString(status));
        (void)cudaGetLastError();
        nccl_destroy(ctx);
        return NULL;
    }
    if (!cuda_ok(ctx, status, "cudaGetDeviceCount", error)) {
        nccl_destroy(ctx);
        return NULL;
    }
    if (ctx->device >= count) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "nccl init: %s: no such device: %d CUDA device(s) are visible (cuda:0 to cuda:%d); check "
                    "CUDA_VISIBLE_DEVICES and the local rank",
                    ctx->where, count, count - 1);
        nccl_destroy(ctx);
        return NULL;
    }
    ncclUniqueId id;
    if (!cuda_ok(ctx, cudaSetDevice(ctx->device), "cudaSetDevice", error) ||
        !cuda_ok(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), "cudaStreamCreate", error) ||
        !cuda_ok(ctx, cudaEventCreateWithFlags(&ctx->ready, cudaEventDisableTiming), "cudaEventCreate", error) ||
        !cuda_ok(ctx, cudaEventCreateWithFlags(&ctx->done, cudaEventDisableTiming), "cudaEventCreate", error) ||
        !cuda_ok(ctx, cudaMalloc((void **)&ctx->one, sizeof(float)), "cudaMalloc of the barrier's float", error) ||
        !share_unique_id(ctx, store, config->name, &id, error)) {
        nccl_destroy(ctx);
        return NULL;
    }

    ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
    nccl_config.blocking = 0;
    ncclResult_t rc = ncclCommInitRankConfig(&ctx->comm, ctx->size, id, ctx->rank, &nccl_config);
    if (ctx->comm == NULL && rc != ncclSuccess) {
        set_nccl_error(ctx, rc, "ncclCommInitRankConfig", error);
        nccl_destroy(ctx);
        return NULL;
    }
    if (!settle(ctx, rc, "ncclCommInitRankConfig", deadline_from_now(ctx), error)) {
        nccl_destroy(ctx);
        return NULL;
    }
    g_debug("nccl: %s joined", ctx->where);
    return ctx;
}

/* ---------------------------------------------------------------- collectives */

static ncclDataType_t nccl_type(rt_comm_dtype dtype)
{
    switch (dtype) {
    case RT_COMM_BF16: return ncclBfloat16;
    case RT_COMM_F16: return ncclFloat16;
    default: return ncclFloat32;
    }
}

/* Makes our stream wait for the work queued on stream so far (no host wait). */
static gboolean fence_after(rt_comm_ctx *ctx, void *stream, const char *what, GError **error)
{
    return cuda_ok(ctx, cudaEventRecord(ctx->ready, (cudaStream_t)stream), what, error) &&
           cuda_ok(ctx, cudaStreamWaitEvent(ctx->stream, ctx->ready, 0), what, error);
}

/* Queues one collective on our stream (op_kind 'a': allreduce, 'b': broadcast). */
static gboolean enqueue(rt_comm_ctx *ctx, char op_kind, void *data, size_t count, rt_comm_dtype dtype,
                        rt_comm_op op, int root, const char *what, GError **error)
{
    ncclResult_t rc = op_kind == 'a' ? ncclAllReduce(data, data, count, nccl_type(dtype),
                                                     op == RT_COMM_AVG ? ncclAvg : ncclSum, ctx->comm, ctx->stream)
                                     : ncclBroadcast(data, data, count, nccl_type(dtype), root, ctx->comm, ctx->stream);
    if (!settle(ctx, rc, what, deadline_from_now(ctx), error))
        return FALSE;
    if (!cuda_ok(ctx, cudaEventRecord(ctx->done, ctx->stream), what, error))
        return FALSE;
    ctx->queued = TRUE;
    return TRUE;
}

/* Starts a call from the core: fails when the communicator was aborted; marks it busy and makes
 * its device current. Every begin_call is paired with end_call. */
static gboolean begin_call(rt_comm_ctx *ctx, const char *what, GError **error)
{
    g_mutex_lock(&ctx->lock);
    gboolean usable = !ctx->aborted && ctx->comm && !g_atomic_int_get(&ctx->abort_asked);
    ctx->busy = TRUE;
    g_mutex_unlock(&ctx->lock);
    if (!usable) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "nccl %s: %s: the communicator was aborted", what, ctx->where);
        return FALSE;
    }
    return cuda_ok(ctx, cudaSetDevice(ctx->device), what, error);
}

/* Ends a call; carries out an abort another thread asked for meanwhile. Returns ok. */
static gboolean end_call(rt_comm_ctx *ctx, gboolean ok)
{
    g_mutex_lock(&ctx->lock);
    ctx->busy = FALSE;
    if (g_atomic_int_get(&ctx->abort_asked))
        abort_comm(ctx);
    g_mutex_unlock(&ctx->lock);
    return ok;
}

static char *describe(const char *op, size_t count, rt_comm_dtype dtype)
{
    return g_strdup_printf("%s of %zu %s elements", op, count, rt_comm_dtype_name(dtype));
}

static char *describe_reduce(rt_comm_op op, size_t count, rt_comm_dtype dtype)
{
    return describe(op == RT_COMM_AVG ? "allreduce (avg)" : "allreduce (sum)", count, dtype);
}

static gboolean nccl_allreduce(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                               GError **error)
{
    char *what = describe_reduce(op, count, dtype);
    gboolean ok = begin_call(ctx, what, error) && enqueue(ctx, 'a', data, count, dtype, op, 0, what, error) &&
                  wait_done(ctx, what, error);
    g_free(what);
    return end_call(ctx, ok);
}

static gboolean nccl_broadcast(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, int root,
                               GError **error)
{
    char *what = describe("broadcast", count, dtype);
    gboolean ok = begin_call(ctx, what, error) &&
                  enqueue(ctx, 'b', data, count, dtype, RT_COMM_SUM, root, what, error) && wait_done(ctx, what, error);
    g_free(what);
    return end_call(ctx, ok);
}

static gboolean nccl_barrier(rt_comm_ctx *ctx, GError **error)
{
    gboolean ok = begin_call(ctx, "barrier", error) &&
                  enqueue(ctx, 'a', ctx->one, 1, RT_COMM_F32, RT_COMM_SUM, 0, "barrier", error) &&
                  wait_done(ctx, "barrier", error);
    return end_call(ctx, ok);
}

static gboolean nccl_allreduce_async(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                                     void *stream, GError **error)
{
    char *what = describe_reduce(op, count, dtype);
    gboolean ok = begin_call(ctx, what, error) && fence_after(ctx, stream, what, error) &&
                  enqueue(ctx, 'a', data, count, dtype, op, 0, what, error);
    g_free(what);
    return end_call(ctx, ok);
}

static gboolean nccl_broadcast_async(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, int root,
                                     void *stream, GError **error)
{
    char *what = describe("broadcast", count, dtype);
    gboolean ok = begin_call(ctx, what, error) && fence_after(ctx, stream, what, error) &&
                  enqueue(ctx, 'b', data, count, dtype, RT_COMM_SUM, root, what, error);
    g_free(what);
    return end_call(ctx, ok);
}

/* Makes stream wait (on the device) for every collective queued so far. */
static gboolean nccl_wait_stream(rt_comm_ctx *ctx, void *stream, GError **error)
{
    gboolean ok = begin_call(ctx, "wait_stream", error) &&
                  (!ctx->queued ||
                   cuda_ok(ctx, cudaStreamWaitEvent((cudaStream_t)stream, ctx->done, 0), "wait_stream", error));
    return end_call(ctx, ok);
}

static gboolean nccl_synchronize(rt_comm_ctx *ctx, GError **error)
{
    gboolean ok = begin_call(ctx, "synchronize", error) && wait_done(ctx, "synchronize", error);
    return end_call(ctx, ok);
}

static void nccl_abort(rt_comm_ctx *ctx)
{
    g_mutex_lock(&ctx->lock);
    g_atomic_int_set(&ctx->abort_asked, 1);
    if (!ctx->busy)
        abort_comm(ctx);
    g_mutex_unlock(&ctx->lock);
}

static const rt_comm_i nccl_iface = {
    .struct_size = sizeof(rt_comm_i),
    .memory = "cuda",
    .init = nccl_init,
    .allreduce = nccl_allreduce,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .abort = nccl_abort,
    .destroy = nccl_destroy,
    .allreduce_async = nccl_allreduce_async,
    .broadcast_async = nccl_broadcast_async,
    .wait_stream = nccl_wait_stream,
    .synchronize = nccl_synchronize,
};

RT_PLUGIN_DEFINE(nccl, RT_PLUGIN_COMM, PACKAGE_VERSION, "Apache-2.0",
                 "NCCL collectives for CUDA tensors: allreduce, broadcast, barrier, stream-ordered", NULL, 0,
                 &nccl_iface)
