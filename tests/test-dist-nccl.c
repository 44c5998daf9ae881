/* tests/test-dist-nccl.c: the NCCL comm module.
 *
 * On any machine: the module loads through the plugin loader with a complete interface (the
 * stream-ordered slots included), and without a GPU asking for a communicator fails with an
 * error that says so. The rest needs a GPU (exit 77 without one): a real communicator of one
 * process (allreduce sum and avg of f32, bf16 and f16 buffers, broadcast, barrier, the
 * stream-ordered path fenced against a caller's stream, a second communicator of the same name,
 * abort), a device that does not exist, and a world of two in which the second rank never
 * starts: initialisation must fail at the timeout instead of hanging. */
#include "config.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <robotrain/comm.h>
#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

#include "testing.h"

#define N_F32 ((size_t)1 << 20)
#define N_HALF 1000

static rt_plugin_registry *registry;
static int n_devices;

static rt_plugin_registry *test_registry(void)
{
    const char *dir = g_getenv("ROBOTRAIN_PLUGIN_PATH");
    const char *folders[] = { dir ? dir : "plugins", NULL };
    return rt_plugin_registry_new(folders, NULL);
}

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { 0 };
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return 0;
    close(fd);
    return ntohs(a.sin_port);
}

static rt_comm *open_single(rt_store **store, int device, unsigned timeout_ms, GError **error)
{
    rt_world world;
    rt_world_init_single(&world);
    *store = rt_store_open(&world, 5000, error);
    if (!*store)
        return NULL;
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.device = device;
    config.timeout_ms = timeout_ms;
    return rt_comm_new(registry, "nccl", &world, *store, &config, error);
}

DEF_TEST(module_has_a_complete_interface)
{
    GError *error = NULL;
    registry = test_registry();
    OK(registry != NULL);
    const rt_plugin_module *module = rt_plugin_registry_find(registry, RT_PLUGIN_COMM, "nccl", &error);
    EXPECT_NO_ERROR(error);
    OK(module->desc->kind == RT_PLUGIN_COMM);
    const rt_comm_i *iface = module->desc->vtable;
    EXPECT_EQ_INT(sizeof(rt_comm_i), iface->struct_size);
    EXPECT_EQ_STR("cuda", iface->memory);
    OK(iface->init && iface->allreduce && iface->broadcast && iface->barrier && iface->abort && iface->destroy);
    OK1(iface->allreduce_async && iface->broadcast_async && iface->wait_stream && iface->synchronize,
        "the stream-ordered slots are filled");
    return 0;
}

DEF_TEST(without_a_gpu_the_error_says_so)
{
    if (n_devices > 0) {
        printf("# %d GPU(s): skipped\n", n_devices);
        return 0;
    }
    GError *error = NULL;
    rt_store *store = NULL;
    rt_comm *comm = open_single(&store, 0, 2000, &error);
    OK(comm == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "nccl init: rank 0 of 1 on cuda:0: no CUDA device is visible to this process");
    rt_store_free(store);
    return 0;
}

static gboolean device_equals(const void *device, const void *host, size_t bytes)
{
    void *back = g_malloc(bytes);
    gboolean same = cudaMemcpy(back, device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess &&
                    memcmp(back, host, bytes) == 0;
    g_free(back);
    return same;
}

DEF_TEST(one_process_communicator)
{
    GError *error = NULL;
    rt_store *store = NULL;
    rt_comm *comm = open_single(&store, 0, 20000, &error);
    EXPECT_NO_ERROR(error);
    OK(comm != NULL);
    EXPECT_EQ_STR("cuda", rt_comm_get_memory(comm));
    EXPECT_EQ_INT(1, rt_comm_get_size(comm));

    /* Alone, sum and average return the data: every bit must come back. */
    float *host = g_new(float, N_F32);
    for (size_t i = 0; i < N_F32; i++)
        host[i] = (float)i * 0.25f - 7.0f;
    float *dev = NULL;
    OK(cudaMalloc((void **)&dev, N_F32 * sizeof(float)) == cudaSuccess);
    OK(cudaMemcpy(dev, host, N_F32 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    OK(rt_comm_allreduce(comm, dev, N_F32, RT_COMM_F32, RT_COMM_AVG, &error));
    EXPECT_NO_ERROR(error);
    OK1(device_equals(dev, host, N_F32 * sizeof(float)), "f32 average of one rank is the data");
    OK(rt_comm_allreduce(comm, dev, N_F32, RT_COMM_F32, RT_COMM_SUM, &error));
    OK1(device_equals(dev, host, N_F32 * sizeof(float)), "f32 sum of one rank is the data");
    OK(rt_comm_broadcast(comm, dev, N_F32, RT_COMM_F32, 0, &error));
    OK1(device_equals(dev, host, N_F32 * sizeof(float)), "broadcast from rank 0");

    uint16_t halves[N_HALF];
    for (int i = 0; i < N_HALF; i++)
        halves[i] = (uint16_t)(0x3c00 + i); /* f16 1.0 upwards; as bf16, 2^-7 upwards */
    uint16_t *dev16 = NULL;
    OK(cudaMalloc((void **)&dev16, sizeof halves) == cudaSuccess);
    OK(cudaMemcpy(dev16, halves, sizeof halves, cudaMemcpyHostToDevice) == cudaSuccess);
    OK(rt_comm_allreduce(comm, dev16, N_HALF, RT_COMM_F16, RT_COMM_AVG, &error));
    OK1(device_equals(dev16, halves, sizeof halves), "f16 average");
    OK(rt_comm_allreduce(comm, dev16, N_HALF, RT_COMM_BF16, RT_COMM_AVG, &error));
    OK1(device_equals(dev16, halves, sizeof halves), "bf16 average");
    OK(rt_comm_barrier(comm, &error));
    EXPECT_NO_ERROR(error);

    /* Stream-ordered: data written on the caller's stream, reduced, read back on that stream;
     * nothing waits on the host until the final synchronisation. */
    cudaStream_t stream = NULL;
    OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    for (size_t i = 0; i < N_F32; i++)
        host[i] = (float)(N_F32 - i);
    float *pinned = NULL;
    OK(cudaMallocHost((void **)&pinned, N_F32 * sizeof(float)) == cudaSuccess);
    OK(cudaMemcpyAsync(dev, host, N_F32 * sizeof(float), cudaMemcpyHostToDevice, stream) == cudaSuccess);
    OK(rt_comm_allreduce_async(comm, dev, N_F32, RT_COMM_F32, RT_COMM_AVG, stream, &error));
    OK(rt_comm_broadcast_async(comm, dev, N_F32, RT_COMM_F32, 0, stream, &error));
    OK(rt_comm_wait_stream(comm, stream, &error));
    OK(cudaMemcpyAsync(pinned, dev, N_F32 * sizeof(float), cudaMemcpyDeviceToHost, stream) == cudaSuccess);
    OK(cudaStreamSynchronize(stream) == cudaSuccess);
    OK(rt_comm_synchronize(comm, &error));
    EXPECT_NO_ERROR(error);
    OK1(memcmp(pinned, host, N_F32 * sizeof(float)) == 0, "the stream-ordered result is the data");

    /* Abort: later calls fail and say why. */
    rt_comm_abort(comm);
    OK(!rt_comm_barrier(comm, &error));
    EXPECT_ERROR(error, "barrier: rank 0: the nccl communicator was aborted");
    rt_comm_free(comm);

    /* A second communicator of the same name bootstraps from fresh keys. */
    rt_world world;
    rt_world_init_single(&world);
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.device = 0;
    config.timeout_ms = 20000;
    comm = rt_comm_new(registry, "nccl", &world, store, &config, &error);
    EXPECT_NO_ERROR(error);
    OK(rt_comm_barrier(comm, &error));
    rt_comm_free(comm);

    cudaFreeHost(pinned);
    cudaStreamDestroy(stream);
    cudaFree(dev16);
    cudaFree(dev);
    g_free(host);
    rt_store_free(store);
    return 0;
}

DEF_TEST(a_device_that_does_not_exist)
{
    GError *error = NULL;
    rt_store *store = NULL;
    OK(open_single(&store, n_devices, 5000, &error) == NULL);
    char *expect = g_strdup_printf("nccl init: rank 0 of 1 on cuda:%d: no such device: %d CUDA device(s) are "
                                   "visible",
                                   n_devices, n_devices);
    EXPECT_ERROR(error, expect);
    g_free(expect);
    rt_store_free(store);
    return 0;
}

DEF_TEST(a_peer_that_never_joins_ends_in_an_error)
{
    GError *error = NULL;
    rt_world world;
    rt_world_init_single(&world);
    world.world_size = 2;
    world.local_world_size = 2;
    world.store_port = free_port();
    rt_store *store = rt_store_open(&world, 5000, &error);
    EXPECT_NO_ERROR(error);
    rt_comm_config config = RT_COMM_CONFIG_INIT;
    config.device = 0;
    config.timeout_ms = 3000;
    gint64 t0 = g_get_monotonic_time();
    rt_comm *comm = rt_comm_new(registry, "nccl", &world, store, &config, &error);
    double waited = (g_get_monotonic_time() - t0) / 1e6;
    OK(comm == NULL);
    printf("# gave up after %.2f s: %s\n", waited, error ? error->message : "");
    EXPECT_ERROR(error, "nccl ncclCommInitRankConfig: rank 0 of 2 on cuda:0: did not finish within 3.0 s");
    OK1(waited >= 2.5 && waited < 15.0, "it waited for the timeout, and not much longer");
    rt_store_free(store);
    return 0;
}

int main(void)
{
    cudaError_t status = cudaGetDeviceCount(&n_devices);
    if (status != cudaSuccess) {
        printf("# cudaGetDeviceCount: %s\n", cudaGetErrorString(status));
        n_devices = 0;
    }
    RUN_TEST(module_has_a_complete_interface);
    RUN_TEST(without_a_gpu_the_error_says_so);
    if (rt_test_failures == 0 && n_devices == 0) {
        rt_plugin_registry_free(registry);
        SKIP_ALL("no CUDA device (%s): the NCCL communicator checks need a GPU", cudaGetErrorString(status));
    }
    RUN_TEST(one_process_communicator);
    RUN_TEST(a_device_that_does_not_exist);
    RUN_TEST(a_peer_that_never_joins_ends_in_an_error);
    rt_plugin_registry_free(registry);
    END_TEST;
}
