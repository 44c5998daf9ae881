/* Choosing, loading and calling a comm module: argument checks and the failed state live here,
 * so that every module gets the same checks and no module is called again after it failed. */
#include "config.h"

#include <string.h>

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

/* The slots every module must fill: struct_size up to and including destroy. */
#define RT_COMM_I_MIN_SIZE (offsetof(rt_comm_i, destroy) + sizeof(void (*)(void)))

struct rt_comm {
    const rt_comm_i *iface;
    rt_comm_ctx *ctx;
    char *backend;
    rt_world world;
    unsigned timeout_ms;
    gint aborted;
    char *failure; /* the first failed call's message, or NULL */
};

size_t rt_comm_dtype_size(rt_comm_dtype dtype)
{
    switch (dtype) {
    case RT_COMM_F32: return 4;
    case RT_COMM_BF16:
    case RT_COMM_F16: return 2;
    case RT_COMM_N_DTYPES: break;
    }
    return 0;
}

const char *rt_comm_dtype_name(rt_comm_dtype dtype)
{
    switch (dtype) {
    case RT_COMM_F32: return "f32";
    case RT_COMM_BF16: return "bf16";
    case RT_COMM_F16: return "f16";
    case RT_COMM_N_DTYPES: break;
    }
    return NULL;
}

const char *rt_comm_default_backend(int device)
{
    return device >= 0 ? "nccl" : "gloo";
}

/* Whether the module provides the slot at offset (struct_size covers it and it is set). */
#define HAS_SLOT(iface, slot)                                                                      \
    ((iface)->struct_size >= offsetof(rt_comm_i, slot) + sizeof((iface)->slot) && (iface)->slot != NULL)

static const rt_comm_i *check_iface(const rt_plugin_module *module, GError **error)
{
    const rt_comm_i *iface = module->desc->vtable;
    if (iface->struct_size < RT_COMM_I_MIN_SIZE || !iface->memory || !iface->init || !iface->allreduce ||
        !iface->broadcast || !iface->barrier || !iface->abort || !iface->destroy) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its comm interface is incomplete (struct_size %u, at least %zu needed, and memory, "
                    "init, allreduce, broadcast, barrier, abort and destroy must be set); rebuild the module "
                    "against this robotrain's robotrain/comm.h",
                    module->path, (unsigned)iface->struct_size, (size_t)RT_COMM_I_MIN_SIZE);
        return NULL;
    }
    return iface;
}

rt_comm *rt_comm_new(rt_plugin_registry *registry, const char *backend, const rt_world *world, rt_store *store,
                     const rt_comm_config *config, GError **error)
{
    g_return_val_if_fail(world != NULL, NULL);
    g_return_val_if_fail(store != NULL, NULL);
    rt_comm_config full = RT_COMM_CONFIG_INIT;
    if (config) {
        g_return_val_if_fail(config->struct_size >= offsetof(rt_comm_config, name) + sizeof(char *), NULL);
        full.device = config->device;
        full.timeout_ms = config->timeout_ms;
        full.name = config->name;
    }
    if (full.timeout_ms == 0)
        full.timeout_ms = RT_COMM_DEFAULT_TIMEOUT_MS;
    if (full.name == NULL)
        full.name = "default";
    if (backend == NULL)
        backend = rt_comm_default_backend(full.device);

    rt_plugin_registry *own = NULL;
    if (registry == NULL) {
        char **path = rt_plugin_search_path(NULL, NULL, error);
        if (!path)
            return NULL;
        own = registry = rt_plugin_registry_new((const char *const *)path, error);
        g_strfreev(path);
        if (!registry)
            return NULL;
    }
    const rt_plugin_module *module = rt_plugin_registry_find(registry, RT_PLUGIN_COMM, backend, error);
    const rt_comm_i *iface = module ? check_iface(module, error) : NULL;
    /* Modules stay resident, so the vtable outlives the registry. */
    rt_plugin_registry_free(own);
    if (!iface) {
        g_prefix_error(error, "comm backend '%s': ", backend);
        return NULL;
    }
    if (full.device >= 0 && strcmp(iface->memory, "cuda") != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "comm backend '%s' works on %s memory, but the buffers are on cuda:%d: use the 'nccl' "
                    "backend for CUDA tensors",
                    backend, iface->memory, full.device);
        return NULL;
    }
    if (full.device < 0 && strcmp(iface->memory, "host") != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "comm backend '%s' works on %s memory and needs a device: set the device (cuda:N), or use "
                    "the 'gloo' backend for CPU tensors",
                    backend, iface->memory);
        return NULL;
    }
    rt_comm_ctx *ctx = iface->init(world, store, &full, error);
    if (!ctx)
        return NULL;
    rt_comm *comm = g_new0(rt_comm, 1);
    comm->iface = iface;
    comm->ctx = ctx;
    comm->backend = g_strdup(backend);
    comm->world = *world;
    comm->timeout_ms = full.timeout_ms;
    return comm;
}

const char *rt_comm_get_backend(const rt_comm *comm)
{
    g_return_val_if_fail(comm != NULL, NULL);
    return comm->backend;
}

const char *rt_comm_get_memory(const rt_comm *comm)
{
    g_return_val_if_fail(comm != NULL, NULL);
    return comm->iface->memory;
}

int rt_comm_get_rank(const rt_comm *comm)
{
    g_return_val_if_fail(comm != NULL, -1);
    return comm->world.rank;
}

int rt_comm_get_size(const rt_comm *comm)
{
    g_return_val_if_fail(comm != NULL, -1);
    return comm->world.world_size;
}

/* FALSE with error when comm may not be used any more. */
static gboolean usable(rt_comm *comm, const char *what, GError **error)
{
    if (comm->failure) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED,
                    "%s: rank %d: the %s communicator failed earlier and cannot be used again (%s)", what,
                    comm->world.rank, comm->backend, comm->failure);
        return FALSE;
    }
    if (g_atomic_int_get(&comm->aborted)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "%s: rank %d: the %s communicator was aborted", what,
                    comm->world.rank, comm->backend);
        return FALSE;
    }
    return TRUE;
}

static gboolean check_buffer(rt_comm *comm, const char *what, const void *data, size_t count, rt_comm_dtype dtype,
                             GError **error)
{
    size_t size = rt_comm_dtype_size(dtype);
    if (size == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %d is not a comm dtype (f32, bf16 or f16)", what,
                    (int)dtype);
        return FALSE;
    }
    if (count > SIZE_MAX / size) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %zu %s elements overflow the address space", what,
                    count, rt_comm_dtype_name(dtype));
        return FALSE;
    }
    if (count > 0 && data == NULL) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: the buffer of %zu %s elements is NULL", what,
                    count, rt_comm_dtype_name(dtype));
        return FALSE;
    }
    return usable(comm, what, error);
}

static gboolean check_op(const char *what, rt_comm_op op, GError **error)
{
    if (op != RT_COMM_SUM && op != RT_COMM_AVG) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %d is not a reduction (sum or avg)", what, (int)op);
        return FALSE;
    }
    return TRUE;
}

static gboolean check_root(rt_comm *comm, const char *what, int root, GError **error)
{
    if (root < 0 || root >= comm->world.world_size) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: root %d is not a rank of this world (0..%d)", what,
                    root, comm->world.world_size - 1);
        return FALSE;
    }
    return TRUE;
}

/* Hands on a module call's result: a failure makes the communicator unusable. */
static gboolean finish(rt_comm *comm, const char *what, gboolean ok, GError *local, GError **error)
{
    if (ok) {
        g_clear_error(&local);
        return TRUE;
    }
    if (local == NULL)
        local = g_error_new(RT_ERROR, RT_ERROR_FAILED, "%s: the %s module failed without saying why", what,
                            comm->backend);
    if (comm->failure == NULL)
        comm->failure = g_strdup(local->message);
    g_propagate_error(error, local);
    return FALSE;
}

gboolean rt_comm_allreduce(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                           GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!check_op("allreduce", op, error) || !check_buffer(comm, "allreduce", data, count, dtype, error))
        return FALSE;
    GError *local = NULL;
    gboolean ok = comm->iface->allreduce(comm->ctx, data, count, dtype, op, &local);
    return finish(comm, "allreduce", ok, local, error);
}

gboolean rt_comm_broadcast(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, int root,
                           GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!check_root(comm, "broadcast", root, error) || !check_buffer(comm, "broadcast", data, count, dtype, error))
        return FALSE;
    GError *local = NULL;
    gboolean ok = comm->iface->broadcast(comm->ctx, data, count, dtype, root, &local);
    return finish(comm, "broadcast", ok, local, error);
}

gboolean rt_comm_barrier(rt_comm *comm, GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!usable(comm, "barrier", error))
        return FALSE;
    GError *local = NULL;
    gboolean ok = comm->iface->barrier(comm->ctx, &local);
    return finish(comm, "barrier", ok, local, error);
}

gboolean rt_comm_allreduce_async(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                                 void *stream, GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!HAS_SLOT(comm->iface, allreduce_async))
        return rt_comm_allreduce(comm, data, count, dtype, op, error);
    if (!check_op("allreduce", op, error) || !check_buffer(comm, "allreduce", data, count, dtype, error))
        return FALSE;
    GError *local = NULL;
    gboolean ok = comm->iface->allreduce_async(comm->ctx, data, count, dtype, op, stream, &local);
    return finish(comm, "allreduce", ok, local, error);
}

gboolean rt_comm_broadcast_async(rt_comm *comm, void *data, size_t count, rt_comm_dtype dtype, int root,
                                 void *stream, GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!HAS_SLOT(comm->iface, broadcast_async))
        return rt_comm_broadcast(comm, data, count, dtype, root, error);
    if (!check_root(comm, "broadcast", root, error) || !check_buffer(comm, "broadcast", data, count, dtype, error))
        return FALSE;
    GError *local = NULL;
    gboolean ok = comm->iface->broadcast_async(comm->ctx, data, count, dtype, root, stream, &local);
    return finish(comm, "broadcast", ok, local, error);
}

gboolean rt_comm_wait_stream(rt_comm *comm, void *stream, GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!usable(comm, "wait_stream", error))
        return FALSE;
    if (!HAS_SLOT(comm->iface, wait_stream))
        return TRUE;
    GError *local = NULL;
    gboolean ok = comm->iface->wait_stream(comm->ctx, stream, &local);
    return finish(comm, "wait_stream", ok, local, error);
}

gboolean rt_comm_synchronize(rt_comm *comm, GError **error)
{
    g_return_val_if_fail(comm != NULL, FALSE);
    if (!usable(comm, "synchronize", error))
        return FALSE;
    if (!HAS_SLOT(comm->iface, synchronize))
        return TRUE;
    GError *local = NULL;
    gboolean ok = comm->iface->synchronize(comm->ctx, &local);
    return finish(comm, "synchronize", ok, local, error);
}

void rt_comm_abort(rt_comm *comm)
{
    if (comm == NULL)
        return;
    if (g_atomic_int_compare_and_exchange(&comm->aborted, 0, 1))
        comm->iface->abort(comm->ctx);
}

void rt_comm_free(rt_comm *comm)
{
    if (comm == NULL)
        return;
    comm->iface->destroy(comm->ctx);
    g_free(comm->backend);
    g_free(comm->failure);
    g_free(comm);
}
