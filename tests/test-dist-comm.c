/* tests/test-dist-comm.c: choosing and loading comm modules, and what the core adds around
 * them: argument checks before a module is called, a communicator that failed once refusing
 * further use, abort, the blocking fallback of the stream-ordered calls, and the errors for a
 * missing module, a defective one and buffers in the wrong memory. Uses the fake modules of
 * tests/dist-comm-fake.c, and comm-gloo / comm-nccl from the build tree when they were built. */
#include "config.h"

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

#include "testing.h"

static rt_plugin_registry *registry;
static rt_world world;
static rt_store *store;

static rt_comm *open_comm(const char *backend, int device, GError **error)
{
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.device = device;
    config.timeout_ms = 5000;
    return rt_comm_new(registry, backend, &world, store, &config, error);
}

static gboolean built(const char *backend)
{
    GError *error = NULL;
    const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_COMM, backend, &error);
    if (!m)
        printf("# comm-%s is not built here: %s\n", backend, error->message);
    g_clear_error(&error);
    return m != NULL;
}

DEF_TEST(dtypes_and_defaults)
{
    EXPECT_EQ_INT(4, rt_comm_dtype_size(RT_COMM_F32));
    EXPECT_EQ_INT(2, rt_comm_dtype_size(RT_COMM_BF16));
    EXPECT_EQ_INT(2, rt_comm_dtype_size(RT_COMM_F16));
    EXPECT_EQ_INT(0, rt_comm_dtype_size(RT_COMM_N_DTYPES));
    EXPECT_EQ_STR("bf16", rt_comm_dtype_name(RT_COMM_BF16));
    OK(rt_comm_dtype_name((rt_comm_dtype)9) == NULL);
    EXPECT_EQ_STR("gloo", rt_comm_default_backend(-1));
    EXPECT_EQ_STR("nccl", rt_comm_default_backend(0));
    EXPECT_EQ_STR("nccl", rt_comm_default_backend(3));
    return 0;
}

DEF_TEST(module_errors)
{
    GError *error = NULL;
    OK(open_comm("mpi", -1, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "comm backend 'mpi': ");
    OK(open_comm("incomplete", -1, &error) == NULL);
    OK(error && error->code == RT_ERROR_PLUGIN);
    EXPECT_ERROR(error, "comm-incomplete.la: its comm interface is incomplete (struct_size 56, at least 64 needed");
    /* A host module for device buffers, and the reverse. */
    OK(open_comm("fake", 0, &error) == NULL);
    EXPECT_ERROR(error, "comm backend 'fake' works on host memory, but the buffers are on cuda:0: use the 'nccl' "
                        "backend for CUDA tensors");
    if (built("gloo")) {
        OK(open_comm("gloo", 1, &error) == NULL);
        EXPECT_ERROR(error, "comm backend 'gloo' works on host memory, but the buffers are on cuda:1");
    }
    if (built("nccl")) {
        OK(open_comm("nccl", -1, &error) == NULL);
        EXPECT_ERROR(error, "comm backend 'nccl' works on cuda memory and needs a device: set the device (cuda:N), "
                            "or use the 'gloo' backend for CPU tensors");
    }
    return 0;
}

DEF_TEST(core_checks_and_failed_state)
{
    GError *error = NULL;
    rt_comm *comm = open_comm("fake", -1, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("fake", rt_comm_get_backend(comm));
    EXPECT_EQ_STR("host", rt_comm_get_memory(comm));
    float v[16] = { 0 };
    OK(rt_comm_allreduce(comm, v, 16, RT_COMM_F32, RT_COMM_AVG, &error));
    EXPECT_NEAR(42.0, v[0], 0);

    /* Bad arguments never reach the module (it would write 42). */
    v[0] = 0;
    OK(!rt_comm_allreduce(comm, v, 16, RT_COMM_F32, (rt_comm_op)5, &error));
    EXPECT_ERROR(error, "allreduce: 5 is not a reduction (sum or avg)");
    OK(!rt_comm_allreduce(comm, v, SIZE_MAX / 2, RT_COMM_F32, RT_COMM_SUM, &error));
    EXPECT_ERROR(error, "allreduce: 9223372036854775807 f32 elements overflow the address space");
    OK(!rt_comm_broadcast(comm, v, 16, RT_COMM_F32, -1, &error));
    EXPECT_ERROR(error, "broadcast: root -1 is not a rank of this world (0..0)");
    EXPECT_NEAR(0.0, v[0], 0);

    /* Without stream-ordered slots, the async calls run at once and the waits are no-ops. */
    OK(rt_comm_allreduce_async(comm, v, 16, RT_COMM_F32, RT_COMM_SUM, NULL, &error));
    EXPECT_NEAR(42.0, v[0], 0);
    OK(rt_comm_broadcast_async(comm, v, 16, RT_COMM_F32, 0, NULL, &error));
    OK(rt_comm_wait_stream(comm, NULL, &error));
    OK(rt_comm_synchronize(comm, &error));
    EXPECT_NO_ERROR(error);

    /* A module that fails without an error still yields one, and the communicator is done. */
    OK(!rt_comm_allreduce(comm, v, 13, RT_COMM_F32, RT_COMM_SUM, &error));
    EXPECT_ERROR(error, "allreduce: the fake module failed without saying why");
    OK(!rt_comm_barrier(comm, &error));
    EXPECT_ERROR(error, "barrier: rank 0: the fake communicator failed earlier and cannot be used again (allreduce: "
                        "the fake module failed without saying why)");
    v[0] = 0;
    OK(!rt_comm_allreduce(comm, v, 16, RT_COMM_F32, RT_COMM_SUM, &error));
    g_clear_error(&error);
    EXPECT_NEAR(0.0, v[0], 0);
    rt_comm_free(comm);

    comm = open_comm("fake", -1, &error);
    rt_comm_abort(comm);
    rt_comm_abort(comm);
    OK(!rt_comm_synchronize(comm, &error));
    EXPECT_ERROR(error, "synchronize: rank 0: the fake communicator was aborted");
    rt_comm_free(comm);
    rt_comm_free(NULL);
    return 0;
}

DEF_TEST(default_backend_for_host_buffers_is_gloo)
{
    if (!built("gloo"))
        return 0;
    GError *error = NULL;
    rt_comm *comm = rt_comm_new(registry, NULL, &world, store, NULL, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("gloo", rt_comm_get_backend(comm));
    /* Alone, the average is the data, bit for bit, for every dtype. */
    float f[3] = { 1.5f, -2.25f, 1e-30f };
    OK(rt_comm_allreduce(comm, f, 3, RT_COMM_F32, RT_COMM_AVG, &error));
    OK(f[0] == 1.5f && f[1] == -2.25f && f[2] == 1e-30f);
    uint16_t h[3] = { 0x3c01, 0x0001, 0xfbff };
    OK(rt_comm_allreduce(comm, h, 3, RT_COMM_F16, RT_COMM_AVG, &error));
    OK(h[0] == 0x3c01 && h[1] == 0x0001 && h[2] == 0xfbff);
    OK(rt_comm_barrier(comm, &error));
    EXPECT_NO_ERROR(error);
    rt_comm_free(comm);
    return 0;
}

DEF_TEST(gloo_socket_address)
{
    if (!built("gloo"))
        return 0;
    GError *error = NULL;
    /* GLOO_SOCKET_IFNAME names the interface, as in PyTorch. */
    g_setenv("GLOO_SOCKET_IFNAME", "lo", TRUE);
    rt_comm *comm = open_comm("gloo", -1, &error);
    EXPECT_NO_ERROR(error);
    rt_comm_free(comm);
    g_setenv("GLOO_SOCKET_IFNAME", "no-such-if0", TRUE);
    OK(open_comm("gloo", -1, &error) == NULL);
    EXPECT_ERROR(error, "rank 0 of 1: GLOO_SOCKET_IFNAME=no-such-if0: no such network interface on this host");
    g_unsetenv("GLOO_SOCKET_IFNAME");
    /* Without it, the address is the one that reaches MASTER_ADDR; a master that does not
     * resolve leaves none. */
    rt_world far = world;
    far.world_size = 2;
    far.local_world_size = 2;
    far.rank = 1;
    far.local_rank = 1;
    g_strlcpy(far.master_addr, "no-such-host.invalid", sizeof far.master_addr);
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.timeout_ms = 2000;
    OK(rt_comm_new(registry, "gloo", &far, store, &config, &error) == NULL);
    EXPECT_ERROR(error, "rank 1 of 2: cannot find a local address that reaches MASTER_ADDR=no-such-host.invalid: set "
                        "GLOO_SOCKET_IFNAME to the network interface to use");
    return 0;
}

int main(void)
{
    GError *error = NULL;
    const char *built_modules = g_getenv("ROBOTRAIN_PLUGIN_PATH");
    const char *folders[] = { RT_TEST_DIST_PLUGINS, built_modules ? built_modules : "plugins", NULL };
    registry = rt_plugin_registry_new(folders, &error);
    rt_world_init_single(&world);
    store = rt_store_open(&world, 5000, &error);
    if (!registry || !store) {
        printf("# setup: %s\n", error ? error->message : "?");
        return 99;
    }
    RUN_TEST(dtypes_and_defaults);
    RUN_TEST(module_errors);
    RUN_TEST(core_checks_and_failed_state);
    RUN_TEST(default_backend_for_host_buffers_is_gloo);
    RUN_TEST(gloo_socket_address);
    rt_store_free(store);
    rt_plugin_registry_free(registry);
    END_TEST;
}
