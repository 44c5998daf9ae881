/* robotrain/comm.h: collective communication between the processes of a run.
 *
 * A comm backend is a module of kind RT_PLUGIN_COMM (comm-gloo for buffers in host memory,
 * comm-nccl for buffers on CUDA devices) whose descriptor's vtable points at a struct
 * rt_comm_i. Both bootstrap from the run's rendezvous store (robotrain/store.h). Callers use
 * the rt_comm_* functions at the end of this file, which load the module, check arguments and
 * keep a failed communicator from being used again; module authors implement rt_comm_i.
 *
 * Conventions of every collective:
 *   - count is a number of ELEMENTS of dtype, never bytes; the buffer holds
 *     count * rt_comm_dtype_size(dtype) bytes. All ranks pass the same count, dtype, op, root.
 *   - Collectives work in place: allreduce leaves the result in data on every rank; broadcast
 *     copies root's data into every other rank's data.
 *   - RT_COMM_AVG is the sum divided by the world size (NCCL's ncclAvg; Gloo sums, then
 *     divides). bf16 and f16 may be reduced through f32 (Gloo does), which rounds once at the
 *     end instead of at every step.
 *   - Nothing waits forever: bootstrap and each collective end within the configured timeout,
 *     and a peer that dies makes the others fail (RT_ERROR_NETWORK or RT_ERROR_DEVICE) naming
 *     the collective and the timeout. After a failure the communicator is unusable: abort or
 *     free it.
 *   - A communicator is used by one thread at a time.
 *
 * Stream-ordered collectives (optional slots; NCCL has them): on CUDA the compute stream must
 * not wait on the host for communication. allreduce_async(stream) records an event on stream,
 * makes the communicator's own stream wait on it, queues the collective there and returns at
 * once; wait_stream(stream) makes stream wait (an event again, not the host) for everything
 * queued so far, so later kernels on stream see the result; synchronize() blocks the host until
 * all queued collectives are done, watching for errors and the timeout. A stream is a
 * cudaStream_t passed as void * (NULL: the legacy default stream). Until wait_stream or
 * synchronize, the buffer belongs to the communicator. For modules without these slots
 * (Gloo), rt_comm_allreduce_async() runs the collective at once and rt_comm_wait_stream() does
 * nothing, so callers need no second code path. */
#ifndef ROBOTRAIN_COMM_H
#define ROBOTRAIN_COMM_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include <robotrain/plugin-loader.h>
#include <robotrain/store.h>
#include <robotrain/world.h>

G_BEGIN_DECLS

typedef enum {
    RT_COMM_F32 = 0,
    RT_COMM_BF16 = 1,
    RT_COMM_F16 = 2,
    RT_COMM_N_DTYPES
} rt_comm_dtype;

typedef enum {
    RT_COMM_SUM = 0,
    RT_COMM_AVG = 1, /* sum / world size */
    RT_COMM_N_OPS
} rt_comm_op;

/* Bytes per element (4 or 2), or 0 when dtype is not an rt_comm_dtype. */
size_t rt_comm_dtype_size(rt_comm_dtype dtype);
/* "f32", "bf16", "f16", or NULL. Returns (transfer none) a static string. */
const char *rt_comm_dtype_name(rt_comm_dtype dtype);

#define RT_COMM_DEFAULT_TIMEOUT_MS 1800000u /* 30 minutes, PyTorch's default */

/* How to set up a communicator. Start from RT_COMM_CONFIG_INIT; fields are only ever appended,
 * and modules read a field only when struct_size covers it. */
typedef struct rt_comm_config {
    uint32_t struct_size; /* sizeof(rt_comm_config) the caller was built with */
    int device;           /* the CUDA device (cuda:N) the buffers live on, -1 for host memory */
    unsigned timeout_ms;  /* bootstrap and each collective; 0: RT_COMM_DEFAULT_TIMEOUT_MS */
    const char *name;     /* tells communicators of one run apart in the store; NULL: "default" */
} rt_comm_config;

#define RT_COMM_CONFIG_INIT { sizeof(rt_comm_config), -1, 0, NULL }

/* ---------------------------------------------------------------- the module interface */

/* A module's communicator. Opaque to the core. */
typedef struct rt_comm_ctx rt_comm_ctx;

/* All slots up to and including destroy are required; the later ones are optional (NULL). The
 * core checks struct_size before it uses a slot added later. Every gboolean call returns TRUE
 * on success, or FALSE with error set. The core has checked the arguments (dtype, op, root in
 * range, data non-NULL when count > 0) before it calls a slot, and never calls one again on a
 * communicator after a call failed (except abort and destroy). */
typedef struct rt_comm_i {
    uint32_t struct_size; /* sizeof(struct rt_comm_i) the module was built with */
    const char *memory;   /* where buffers must live: "host" or "cuda" */

    /* Joins the communicator of all world->world_size processes through store (which stays
     * valid until destroy). config is complete (defaults filled in, timeout_ms > 0).
     * Returns (transfer full) the module's state, freed with destroy(). */
    rt_comm_ctx *(*init)(const rt_world *world, rt_store *store, const rt_comm_config *config, GError **error);
    gboolean (*allreduce)(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                          GError **error);
    gboolean (*broadcast)(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, int root,
                          GError **error);
    gboolean (*barrier)(rt_comm_ctx *ctx, GError **error);
    /* Ends pending and future collectives of this communicator now, from any thread, without
     * waiting for peers; afterwards only destroy may be called. */
    void (*abort)(rt_comm_ctx *ctx);
    /* Frees the state; pending collectives are completed or aborted first. NULL is a no-op. */
    void (*destroy)(rt_comm_ctx *ctx);

    /* Stream-ordered variants (see the top of this file); optional. */
    gboolean (*allreduce_async)(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                                void *stream, GError **error);
    gboolean (*broadcast_async)(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, int root,
                                void *stream, GError **error);
    gboolean (*wait_stream)(rt_comm_ctx *ctx, void *stream, GError **error);
    gboolean (*synchronize)(rt_comm_ctx *ctx, GError **error);

    void *reserved[8];
} rt_comm_i;

/* ---------------------------------------------------------------- the caller's API */

/* A communicator: a loaded comm module and its state. Opaque. */
typedef struct rt_comm rt_comm;

/* The module for buffers on device: "nccl" for a CUDA device (device >= 0), else "gloo".
 * Returns (transfer none) a static string. */
const char *rt_comm_default_backend(int device);

/* Loads comm module backend ("gloo", "nccl"; NULL: rt_comm_default_backend(config->device))
 * from registry (NULL: the default search path, see rt_plugin_search_path()) and joins the
 * run's communicator. config may be NULL (host memory, default timeout). Every rank calls this
 * with the same backend and config->name.
 * Returns (transfer full) a communicator to free with rt_comm_free(), or NULL with error
 * (RT_ERROR_NOT_FOUND or RT_ERROR_PLUGIN for the module, else the module's error). */
rt_comm *rt_comm_new(rt_plugin_registry *registry, const char *backend, const rt_world *world, rt_store *store,
                     const rt_comm_config *config, GError **error);

const char *rt_comm_get_backend(const rt_comm *comm); /* "gloo"; transfer none */
const char *rt_comm_get_memory(const rt_comm *comm);  /* "host" or "cuda"; transfer none */
int rt_comm_get_rank(const rt_comm *comm);
int rt_comm_get_size(const rt_comm *comm);

/* The collectives, blocking: the result is in data when they return. On CUDA, data must be
 * ready (the stream that wrote it synchronized). */
gboolean rt_comm_allreduce(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                           GError **error);
gboolean rt_comm_broadcast(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, int root,
                           GError **error);
gboolean rt_comm_barrier(rt_comm *comm, GError **error);

/* Stream-ordered collectives (see the top of this file); blocking for modules without them. */
gboolean rt_comm_allreduce_async(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                                 void *stream, GError **error);
gboolean rt_comm_broadcast_async(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, int root,
                                 void *stream, GError **error);
gboolean rt_comm_wait_stream(rt_comm *comm, void *stream, GError **error);
gboolean rt_comm_synchronize(rt_comm *comm, GError **error);

/* Ends the communicator's collectives (e.g. when another rank is known to have died); later
 * calls fail. May be called from another thread than one blocked in a collective, which then
 * fails: at once with NCCL, at the latest at its timeout with Gloo. */
void rt_comm_abort(rt_comm *comm);

/* Frees the communicator (the module stays loaded). NULL is a no-op. */
void rt_comm_free(rt_comm *comm);

G_END_DECLS

#endif
