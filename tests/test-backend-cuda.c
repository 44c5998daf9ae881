/* tests/test-backend-cuda.c: the CUDA backend module, loaded from the build tree the way the
 * plugin loader loads it.
 *
 * On any machine: the module loads with every symbol resolved (dlopen RTLD_NOW, which fails if
 * it needs a library it does not link, such as the C++ runtime), exports only its entry point,
 * and its descriptor and vtable are well-formed. Without a GPU the test then skips (exit 77).
 * With one, it moves a pseudo-random pattern host -> device -> device -> host, fills ranges
 * with the module's fill kernel at unaligned offsets, and compares every byte with the same
 * operations done by memcpy/memset on the host; it also checks that bad offsets, sizes and
 * device indices give errors that name them. */
#include "config.h"

#include <dlfcn.h>
#include <stdint.h>

#include <ltdl.h>

#include <robotrain/backend.h>
#include <robotrain/error.h>
#include <robotrain/plugin.h>

#include "testing.h"

#define BUFFER_SIZE ((size_t)64 << 20)

static void *so_handle;
static lt_dlhandle la_handle;
static const rt_plugin_desc *desc;
static const rt_backend_i *backend;
static int n_devices;
static rt_backend_device *dev;
static char *skip_reason;
static char *no_device_reason;

/* The module says why it counts no device in a debug message; keep it for the skip line. */
static void capture_debug(const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
    if (no_device_reason == NULL && strstr(message, "no device"))
        no_device_reason = g_strdup(message);
}

DEF_TEST(module_loads_with_every_symbol_resolved)
{
    char *dir = g_path_get_dirname(RT_TEST_CUDA_MODULE);
    char *so_path = g_build_filename(dir, LT_OBJDIR, "backend-cuda" LT_MODULE_EXT, NULL);
    g_free(dir);
    so_handle = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (so_handle == NULL) {
        const char *why = dlerror();
        /* The module links only the CUDA runtime, which opens the driver when first called;
         * a missing driver library here means something it links wants it. */
        if (why && strstr(why, "libcuda.so")) {
            skip_reason = g_strdup_printf("the NVIDIA driver library is not installed, and %s needs it "
                                          "at load time: %s",
                                          so_path, why);
            g_free(so_path);
            return 0;
        }
        printf("# dlopen(%s, RTLD_NOW): %s\n", so_path, why ? why : "(no message)");
    }
    OK1(so_handle != NULL, "dlopen of the module with RTLD_NOW resolves every symbol");
    g_free(so_path);

    OK(lt_dlinit() == 0);
    la_handle = lt_dlopenext(RT_TEST_CUDA_MODULE);
    if (la_handle == NULL)
        printf("# lt_dlopenext(%s): %s\n", RT_TEST_CUDA_MODULE, lt_dlerror());
    OK1(la_handle != NULL, "lt_dlopenext finds the module through its .la file");
    rt_plugin_get_desc_fn get_desc = (rt_plugin_get_desc_fn)lt_dlsym(la_handle, "rt_plugin_cuda_get_desc");
    OK(get_desc != NULL);
    desc = get_desc();
    OK(desc != NULL);
    /* -export-symbols-regex keeps the module's own helpers private. */
    OK1(lt_dlsym(la_handle, "rt_cuda_fill") == NULL, "the fill kernel's launcher is not exported");
    OK1(lt_dlsym(la_handle, "rt_cuda_check") == NULL, "the error helper is not exported");
    return 0;
}

DEF_TEST(descriptor_is_well_formed)
{
    EXPECT_EQ_INT(RT_PLUGIN_ABI_MAJOR, desc->abi_major);
    OK(desc->abi_minor <= RT_PLUGIN_ABI_MINOR);
    EXPECT_EQ_INT(sizeof(rt_plugin_desc), desc->struct_size);
    EXPECT_EQ_INT(RT_PLUGIN_BACKEND, desc->kind);
    EXPECT_EQ_STR("cuda", desc->name);
    EXPECT_EQ_STR(PACKAGE_VERSION, desc->version);
    EXPECT_EQ_STR("Apache-2.0", desc->license);
    OK(desc->description != NULL && desc->description[0] != '\0');
    OK(desc->options == NULL && desc->n_options == 0);
    for (size_t i = 0; i < G_N_ELEMENTS(desc->reserved); i++)
        OK(desc->reserved[i] == NULL);

    backend = desc->vtable;
    OK(backend != NULL);
    EXPECT_EQ_INT(sizeof(rt_backend_i), backend->struct_size);
    EXPECT_EQ_STR("cuda", backend->device_type);
    OK(backend->device_count && backend->device_info && backend->open && backend->close);
    OK(backend->buffer_alloc && backend->buffer_free);
    OK(backend->copy_to_device && backend->copy_to_host && backend->copy_on_device);
    OK(backend->memset_device && backend->synchronize && backend->supports_op);
    OK(backend->graph_compute && backend->node_workspace_size);
    OK1(backend->graph_prepare && backend->graph_release, "graphs get per-graph state");
    return 0;
}

DEF_TEST(device_count_sets_no_error)
{
    GError *error = NULL;
    n_devices = backend->device_count(&error);
    EXPECT_NO_ERROR(error);
    OK(n_devices >= 0);
    printf("# %d CUDA device(s)\n", n_devices);
    return 0;
}

/* Without a device, asking for one is an error that says why, not a crash. */
DEF_TEST(no_device_errors)
{
    GError *error = NULL;
    rt_device_info info;
    OK(!backend->device_info(0, &info, &error));
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "cuda:0: no CUDA device is visible to this process (no GPU, or no NVIDIA driver); "
                        "check nvidia-smi");
    OK(backend->open(0, &error) == NULL);
    EXPECT_ERROR(error, "cuda:0: no CUDA device is visible");
    return 0;
}

DEF_TEST(device_info_describes_every_device)
{
    for (int i = 0; i < n_devices; i++) {
        GError *error = NULL;
        rt_device_info info;
        OK(backend->device_info(i, &info, &error));
        EXPECT_NO_ERROR(error);
        printf("# cuda:%d: %s, compute capability %d.%d, %d SMs, %zu of %zu bytes free\n", i, info.name,
               info.compute_major, info.compute_minor, info.multiprocessors, info.free_bytes,
               info.total_bytes);
        OK(info.name[0] != '\0');
        OK(info.free_bytes > 0);
        OK(info.total_bytes >= info.free_bytes);
        OK(info.compute_major >= 5);
        OK(info.multiprocessors > 0);
    }
    return 0;
}

DEF_TEST(bad_device_index_is_an_error)
{
    GError *error = NULL;
    rt_device_info info;
    char *expect =
        g_strdup_printf("cuda:%d: no such device: %d CUDA device(s) are visible", n_devices, n_devices);
    OK(!backend->device_info(n_devices, &info, &error));
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, expect);
    OK(backend->open(n_devices, &error) == NULL);
    EXPECT_ERROR(error, expect);
    g_free(expect);
    OK(backend->open(-1, &error) == NULL);
    EXPECT_ERROR(error, "cuda:-1: no such device");
    return 0;
}

DEF_TEST(open_device_0)
{
    GError *error = NULL;
    dev = backend->open(0, &error);
    EXPECT_NO_ERROR(error);
    OK(dev != NULL);
    OK1(!backend->supports_op(dev, NULL), "supports_op declines a NULL node");
    return 0;
}

/* Deterministic bytes (xorshift32), so a failure can be reproduced. */
static void fill_pattern(unsigned char *bytes, size_t size)
{
    uint32_t state = 0x9e3779b9u;
    for (size_t i = 0; i < size; i++) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        bytes[i] = (unsigned char)(state >> 24);
    }
}

/* Every byte equal; on a mismatch prints the first differing offset and both values. */
static int same_bytes(const unsigned char *expect, const unsigned char *actual, size_t size, const char *what)
{
    for (size_t i = 0; i < size; i++) {
        if (expect[i] != actual[i]) {
            printf("# %s: first difference at byte %zu: expected 0x%02x, got 0x%02x\n", what, i, expect[i],
                   actual[i]);
            return 0;
        }
    }
    return 1;
}

/* One memset, done on the device and on the host reference. */
static gboolean memset_both(rt_backend_buffer *buf, unsigned char *reference, size_t offset, int value,
                            size_t size, GError **error)
{
    memset(reference + offset, value, size);
    return backend->memset_device(dev, buf, offset, value, size, error);
}

DEF_TEST(pattern_survives_copies_and_fills)
{
    GError *error = NULL;
    rt_backend_buffer a, b;
    unsigned char *pattern = g_malloc(BUFFER_SIZE);
    unsigned char *reference = g_malloc(BUFFER_SIZE);
    unsigned char *result = g_malloc(BUFFER_SIZE);
    fill_pattern(pattern, BUFFER_SIZE);

    OK(backend->buffer_alloc(dev, BUFFER_SIZE, &a, &error));
    EXPECT_NO_ERROR(error);
    OK(backend->buffer_alloc(dev, BUFFER_SIZE, &b, &error));
    EXPECT_NO_ERROR(error);
    OK(a.ptr != NULL && a.size == BUFFER_SIZE && b.ptr != NULL && b.size == BUFFER_SIZE);

    OK(backend->copy_to_device(dev, &a, 0, pattern, BUFFER_SIZE, &error));
    EXPECT_NO_ERROR(error);

    /* The whole of b (aligned, 64 MiB: the vector path), then a copy from a at unaligned
     * offsets on both sides, then fills over parts of it: unaligned inside the copy, within one
     * 16-byte word (head only), across one word boundary (head and tail), at the very end, and
     * an empty one at the end. Each runs after the previous one on the device's stream. */
    OK(memset_both(&b, reference, 0, 0x5a, BUFFER_SIZE, &error));
    const size_t src_offset = 1000003, dst_offset = 4099, n_copy = ((size_t)16 << 20) + 7;
    memcpy(reference + dst_offset, pattern + src_offset, n_copy);
    OK(backend->copy_on_device(dev, &b, dst_offset, &a, src_offset, n_copy, &error));
    EXPECT_NO_ERROR(error);
    OK(memset_both(&b, reference, 7777777, -1, ((size_t)3 << 20) + 13, &error));
    OK(memset_both(&b, reference, 33, 0x11, 5, &error));
    OK(memset_both(&b, reference, 100, 0x22, 16, &error));
    OK(memset_both(&b, reference, 200001, 0x33, 1, &error));
    OK(memset_both(&b, reference, BUFFER_SIZE - 21, 0xc3, 21, &error));
    OK(memset_both(&b, reference, BUFFER_SIZE, 0x44, 0, &error));
    EXPECT_NO_ERROR(error);
    OK(backend->synchronize(dev, &error));
    EXPECT_NO_ERROR(error);

    OK(backend->copy_to_host(dev, result, &b, 0, BUFFER_SIZE, &error));
    EXPECT_NO_ERROR(error);
    OK1(same_bytes(reference, result, BUFFER_SIZE, "b"), "every byte of b matches the host reference");

    const size_t read_offset = 12345, n_read = (size_t)1 << 20;
    OK(backend->copy_to_host(dev, result, &a, read_offset, n_read, &error));
    EXPECT_NO_ERROR(error);
    OK1(same_bytes(pattern + read_offset, result, n_read, "a"), "a still holds the pattern");

    backend->buffer_free(dev, &a);
    backend->buffer_free(dev, &b);
    OK1(a.ptr == NULL && a.size == 0 && a.priv == NULL, "buffer_free zeroes the buffer");
    g_free(pattern);
    g_free(reference);
    g_free(result);
    return 0;
}

DEF_TEST(out_of_range_errors_name_the_sizes)
{
    GError *error = NULL;
    rt_backend_buffer a, b;
    unsigned char host[16] = {0};
    OK(backend->buffer_alloc(dev, BUFFER_SIZE, &a, &error));
    OK(backend->buffer_alloc(dev, 4096, &b, &error));
    EXPECT_NO_ERROR(error);

    OK(!backend->copy_to_device(dev, &a, BUFFER_SIZE - 10, host, 11, &error));
    OK(error && error->code == RT_ERROR_INVALID_ARG);
    EXPECT_ERROR(error,
                 "cuda:0: copy_to_device: the destination range of 11 bytes at offset 67108854 ends past "
                 "the end of the 67108864-byte buffer");
    OK(!backend->copy_to_host(dev, host, &b, 1, 4096, &error));
    EXPECT_ERROR(error, "copy_to_host: the source range of 4096 bytes at offset 1 ends past the end of the "
                        "4096-byte buffer");
    OK(!backend->copy_on_device(dev, &b, 0, &a, BUFFER_SIZE, 1, &error));
    EXPECT_ERROR(error, "copy_on_device: the source range of 1 bytes at offset 67108864");
    OK(!backend->copy_on_device(dev, &b, 0, &a, 0, 4097, &error));
    EXPECT_ERROR(error,
                 "copy_on_device: the destination range of 4097 bytes at offset 0 ends past the end of "
                 "the 4096-byte buffer");
    /* offset + size wraps around: still refused. */
    OK(!backend->memset_device(dev, &b, SIZE_MAX, 0, 2, &error));
    EXPECT_ERROR(error, "memset_device: the destination range of 2 bytes at offset 18446744073709551615");

    /* More memory than any GPU has: the runtime's error, named, with what is free. */
    rt_backend_buffer huge;
    OK(!backend->buffer_alloc(dev, (size_t)1 << 50, &huge, &error));
    OK(error && error->code == RT_ERROR_DEVICE);
    OK(error && strstr(error->message, "free)") != NULL);
    EXPECT_ERROR(error, "cuda:0: cudaMalloc of 1.0 PiB (1125899906842624 bytes; ");
    OK(!backend->buffer_alloc(dev, (size_t)1 << 50, &huge, &error));
    EXPECT_ERROR(error, "failed: cudaErrorMemoryAllocation (out of memory); the GPU is out of memory");
    OK(huge.ptr == NULL && huge.size == 0);

    /* The refused calls left the device usable. */
    memset(host, 0x7e, sizeof host);
    OK(backend->copy_to_device(dev, &b, 4096 - sizeof host, host, sizeof host, &error));
    EXPECT_NO_ERROR(error);
    unsigned char back[16] = {0};
    OK(backend->copy_to_host(dev, back, &b, 4096 - sizeof back, sizeof back, &error));
    EXPECT_NO_ERROR(error);
    OK(memcmp(host, back, sizeof host) == 0);
    backend->buffer_free(dev, &a);
    backend->buffer_free(dev, &b);
    return 0;
}

DEF_TEST(close_device)
{
    GError *error = NULL;
    backend->close(dev);
    dev = NULL;
    backend->close(NULL); /* like free(NULL) */
    /* Opening again after a close works (the handles were released, not leaked). */
    dev = backend->open(0, &error);
    EXPECT_NO_ERROR(error);
    OK(dev != NULL);
    backend->close(dev);
    dev = NULL;
    return 0;
}

int main(void)
{
    /* The CUDA runtime under memcheck reports thousands of false errors; compute-sanitizer is
     * the tool for device code. */
    const char *preload = g_getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        SKIP_ALL("the CUDA runtime does not run under valgrind; use compute-sanitizer on a GPU machine");

    g_log_set_handler("robotrain", G_LOG_LEVEL_DEBUG, capture_debug, NULL);

    RUN_TEST(module_loads_with_every_symbol_resolved);
    if (skip_reason)
        SKIP_ALL("%s", skip_reason);
    if (rt_test_failures)
        END_TEST;
    RUN_TEST(descriptor_is_well_formed);
    if (rt_test_failures)
        END_TEST;
    RUN_TEST(device_count_sets_no_error);
    if (rt_test_failures)
        END_TEST;
    if (n_devices == 0) {
        RUN_TEST(no_device_errors);
        if (rt_test_failures)
            END_TEST;
        SKIP_ALL("no CUDA device (%s); the module loads, its descriptor is valid and asking for a device "
                 "fails cleanly",
                 no_device_reason ? no_device_reason : "device_count() returned 0");
    }

    RUN_TEST(device_info_describes_every_device);
    RUN_TEST(bad_device_index_is_an_error);
    RUN_TEST(open_device_0);
    if (dev) {
        RUN_TEST(pattern_survives_copies_and_fills);
        RUN_TEST(out_of_range_errors_name_the_sizes);
        RUN_TEST(close_device);
    }
    /* The modules stay loaded until exit: the CUDA runtime tears itself down at exit. */
    END_TEST;
}
