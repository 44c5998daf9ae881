/* tests/cuda-test.h: what the CUDA graph tests share (on top of tests/graph-test.h): the CUDA
 * backend module loaded from the build tree as the plugin loader loads it, devices opened with
 * the module's environment settings, and graphs planned, filled and read on either backend.
 * Without a GPU, rt_cuda_test_device() exits 77 (SKIP) naming the reason. */
#ifndef ROBOTRAIN_CUDA_TEST_H
#define ROBOTRAIN_CUDA_TEST_H

#include <ltdl.h>

#include <robotrain/plugin.h>

#include "graph-test.h"

static const rt_backend_i *rt_cuda_test_backend;

/* The module's backend vtable; exits 99 when the module does not load (a build error). */
static inline const rt_backend_i *rt_cuda_test_load(void)
{
    if (rt_cuda_test_backend)
        return rt_cuda_test_backend;
    if (lt_dlinit() != 0) {
        printf("# lt_dlinit: %s\n", lt_dlerror());
        exit(99);
    }
    lt_dlhandle h = lt_dlopenext(RT_TEST_CUDA_MODULE);
    if (!h) {
        printf("# lt_dlopenext(%s): %s\n", RT_TEST_CUDA_MODULE, lt_dlerror());
        exit(99);
    }
    rt_plugin_get_desc_fn get = (rt_plugin_get_desc_fn)lt_dlsym(h, "rt_plugin_cuda_get_desc");
    const rt_plugin_desc *desc = get ? get() : NULL;
    if (!desc || !desc->vtable) {
        printf("# %s: no rt_plugin_cuda_get_desc or no vtable\n", RT_TEST_CUDA_MODULE);
        exit(99);
    }
    rt_cuda_test_backend = desc->vtable;
    return rt_cuda_test_backend; /* the module stays loaded until exit */
}

/* Skips the program (exit 77) when there is no usable GPU, naming why. */
static inline void rt_cuda_test_need_gpu(void)
{
    const char *preload = g_getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        SKIP_ALL("the CUDA runtime does not run under valgrind; use compute-sanitizer on a GPU machine");
    const rt_backend_i *b = rt_cuda_test_load();
    GError *error = NULL;
    int n = b->device_count(&error);
    if (n < 0) {
        printf("# device_count: %s\n", error->message);
        exit(99);
    }
    if (n == 0)
        SKIP_ALL("no CUDA device visible (no GPU or no NVIDIA driver); these tests compare every CUDA kernel "
                 "with its CPU twin and run on a GPU machine (bench/gpu-check.sh)");
}

/* Opens cuda:0 with ROBOTRAIN_CUDA_GRAPH set to graphs ("1": capture and replay, "0": eager).
 * (transfer full): close with the backend's close(); exits 99 on failure. */
static inline rt_backend_device *rt_cuda_test_open(const char *graphs)
{
    g_setenv("ROBOTRAIN_CUDA_GRAPH", graphs, TRUE);
    GError *error = NULL;
    rt_backend_device *dev = rt_cuda_test_load()->open(0, &error);
    g_unsetenv("ROBOTRAIN_CUDA_GRAPH");
    if (!dev) {
        printf("# opening cuda:0: %s\n", error->message);
        exit(99);
    }
    return dev;
}

/* Plans g on (backend, dev); prints the error and returns FALSE on failure. */
static inline gboolean rt_cuda_test_plan(rt_graph *g, const rt_backend_i *backend, rt_backend_device *dev)
{
    GError *error = NULL;
    if (!rt_graph_plan(g, backend, dev, &error)) {
        printf("# rt_graph_plan on %s: %s\n", backend->device_type, error->message);
        g_error_free(error);
        return FALSE;
    }
    return TRUE;
}

/* A planned tensor's elements as doubles, whatever its dtype (transfer full: g_free). */
static inline double *rt_cuda_test_read_any(rt_graph *g, const rt_tensor *t)
{
    int64_t n = rt_tensor_numel(t);
    size_t bytes = rt_tensor_nbytes(t);
    guint8 *raw = g_malloc(bytes);
    GError *error = NULL;
    if (!rt_graph_read(g, t, raw, bytes, &error)) {
        printf("# rt_graph_read: %s\n", error->message);
        g_error_free(error);
        g_free(raw);
        return NULL;
    }
    double *v = g_new(double, n > 0 ? n : 1);
    for (int64_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case RT_F32:
            v[i] = ((float *)raw)[i];
            break;
        case RT_F64:
            v[i] = ((double *)raw)[i];
            break;
        case RT_BF16: {
            uint32_t u = (uint32_t)((uint16_t *)raw)[i] << 16;
            float f;
            memcpy(&f, &u, sizeof f);
            v[i] = f;
            break;
        }
        case RT_F16: {
            uint16_t h = ((uint16_t *)raw)[i];
            int e = (h >> 10) & 0x1f, m = h & 0x3ff;
            double mag = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
            v[i] = (h & 0x8000) ? -mag : mag;
            break;
        }
        case RT_I64:
            v[i] = (double)((int64_t *)raw)[i];
            break;
        case RT_I32:
            v[i] = ((int32_t *)raw)[i];
            break;
        default:
            v[i] = ((uint8_t *)raw)[i];
            break;
        }
    }
    g_free(raw);
    return v;
}

/* The bytes of a planned tensor (transfer full: g_free). */
static inline guint8 *rt_cuda_test_read_bytes(rt_graph *g, const rt_tensor *t)
{
    size_t bytes = rt_tensor_nbytes(t);
    guint8 *raw = g_malloc(bytes ? bytes : 1);
    GError *error = NULL;
    if (!rt_graph_read(g, t, raw, bytes, &error)) {
        printf("# rt_graph_read: %s\n", error->message);
        g_error_free(error);
        g_free(raw);
        return NULL;
    }
    return raw;
}

#endif
