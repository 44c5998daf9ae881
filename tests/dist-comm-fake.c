/* tests/dist-comm-fake.c: a comm module for tests/test-dist-comm.c, which checks what the core
 * adds around every module (argument checks, the failed and aborted states, the blocking
 * fallback of the stream-ordered calls). Built twice:
 *   comm-fake.la        host memory, no stream-ordered slots; allreduce writes 42 into the
 *                       first f32 element, and fails without setting an error when given 13
 *                       elements (a module bug the core must still report);
 *   comm-incomplete.la  (INCOMPLETE) a vtable whose struct_size stops before destroy. */
#include <stdlib.h>

#include <robotrain/comm.h>
#include <robotrain/plugin.h>

struct rt_comm_ctx {
    int rank;
};

static rt_comm_ctx *fake_init(const rt_world *world, rt_store *store, const rt_comm_config *config, GError **error)
{
    rt_comm_ctx *ctx = g_new0(rt_comm_ctx, 1);
    ctx->rank = world->rank;
    return ctx;
}

static gboolean fake_allreduce(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, rt_comm_op op,
                               GError **error)
{
    if (count == 13)
        return FALSE;
    if (dtype == RT_COMM_F32 && count > 0)
        ((float *)data)[0] = 42.0f;
    return TRUE;
}

static gboolean fake_broadcast(rt_comm_ctx *ctx, void *data, size_t count, rt_comm_dtype dtype, int root,
                               GError **error)
{
    return TRUE;
}

static gboolean fake_barrier(rt_comm_ctx *ctx, GError **error)
{
    return TRUE;
}

static void fake_abort(rt_comm_ctx *ctx)
{
}

static void fake_destroy(rt_comm_ctx *ctx)
{
    g_free(ctx);
}

static const rt_comm_i fake_iface = {
#ifdef INCOMPLETE
    .struct_size = offsetof(rt_comm_i, destroy),
#else
    .struct_size = sizeof(rt_comm_i),
#endif
    .memory = "host",
    .init = fake_init,
    .allreduce = fake_allreduce,
    .broadcast = fake_broadcast,
    .barrier = fake_barrier,
    .abort = fake_abort,
    .destroy = fake_destroy,
};

#ifdef INCOMPLETE
RT_PLUGIN_DEFINE(incomplete, RT_PLUGIN_COMM, "0", "Apache-2.0", "a comm vtable that is too short", NULL, 0, &fake_iface)
#else
RT_PLUGIN_DEFINE(fake, RT_PLUGIN_COMM, "0", "Apache-2.0", "a comm module for tests", NULL, 0, &fake_iface)
#endif
