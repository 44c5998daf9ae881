/* plugins/backend-cuda/cuda-backend.c: the CUDA compute backend's devices and device memory.
 *
 * One rt_backend_device per opened GPU holds a non-blocking stream and the library handles that
 * the kernels use (cuBLASLt, cuBLAS, cuDNN). Every call first makes the device current on the
 * calling thread, because the CUDA runtime keeps the current device per thread. Copies queue on
 * the device's stream and wait for it, so they are complete when they return and run after any
 * work queued before them; memset_device only queues. Graphs run through cuda-exec.c: every op
 * of the op table has a kernel here (supports_op says which dtypes), a planned graph's step is
 * captured as a CUDA graph and replayed.
 *
 * Environment, read when a device is opened: ROBOTRAIN_CUDA_GRAPH=0 runs steps eagerly, node by
 * node (the same kernels; for debugging and profiling); ROBOTRAIN_CUDA_SYNC=1 also waits after
 * every node so that a failing kernel is named. */
#include "config.h"

#include <string.h>

#include <robotrain/backend.h>
#include <robotrain/error.h>
#include <robotrain/plugin.h>

#include "cuda-device.h"
#include "cuda-error.h"
#include "cuda-exec.h"
#include "cuda-fill.h"

/* A failed cudaGetDeviceCount that only means "no GPU here". */
static gboolean means_no_device(cudaError_t status)
{
    return status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver;
}

static int cuda_device_count(GError **error)
{
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (means_no_device(status)) {
        g_debug("CUDA backend: no device: cudaGetDeviceCount: %s (%s)", cudaGetErrorName(status),
                cudaGetErrorString(status));
        (void)cudaGetLastError();
        return 0;
    }
    if (!rt_cuda_check(status, error, "cudaGetDeviceCount"))
        return -1;
    return count;
}

/* Checks that index names a visible device (RT_ERROR_NOT_FOUND otherwise). */
static gboolean check_index(int index, GError **error)
{
    int count = cuda_device_count(error);
    if (count < 0)
        return FALSE;
    if (index >= 0 && index < count)
        return TRUE;
    if (count == 0)
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "cuda:%d: no CUDA device is visible to this process (no GPU, or no NVIDIA driver); "
                    "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --policy.device=cpu",
                    index);
    else
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "cuda:%d: no such device: %d CUDA device(s) are visible (cuda:0 to cuda:%d); "
                    "check CUDA_VISIBLE_DEVICES",
                    index, count, count - 1);
    return FALSE;
}

static gboolean cuda_device_info(int index, rt_device_info *info, GError **error)
{
    g_return_val_if_fail(info != NULL, FALSE);
    if (!check_index(index, error))
        return FALSE;

    struct cudaDeviceProp prop;
    if (!rt_cuda_check(cudaGetDeviceProperties(&prop, index), error, "cuda:%d: cudaGetDeviceProperties",
                       index))
        return FALSE;

    /* Free memory is only known inside the device's context: borrow the calling thread's
     * current device and give it back. */
    int previous = 0;
    if (!rt_cuda_check(cudaGetDevice(&previous), error, "cudaGetDevice"))
        return FALSE;
    if (!rt_cuda_check(cudaSetDevice(index), error, "cuda:%d: cudaSetDevice", index))
        return FALSE;
    size_t free_bytes = 0, total_bytes = 0;
    gboolean ok =
        rt_cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), error, "cuda:%d: cudaMemGetInfo", index);
    if (!rt_cuda_check(cudaSetDevice(previous), ok ? error : NULL, "cuda:%d: cudaSetDevice", previous))
        ok = FALSE;
    if (!ok)
        return FALSE;

    memset(info, 0, sizeof *info);
    g_strlcpy(info->name, prop.name, sizeof info->name);
    info->total_bytes = total_bytes;
    info->free_bytes = free_bytes;
    info->compute_major = prop.major;
    info->compute_minor = prop.minor;
    info->multiprocessors = prop.multiProcessorCount;
    return TRUE;
}

gboolean rt_cuda_make_current(const rt_backend_device *dev, GError **error)
{
    return rt_cuda_check(cudaSetDevice(dev->index), error, "cuda:%d: cudaSetDevice", dev->index);
}

/* Where a cleanup step reports its failure: the first one is kept, later ones are dropped. */
static GError **first_error(GError **error)
{
    return *error ? NULL : error;
}

/* Releases what open() created; each field may still be unset. Reports a failure as a warning,
 * since the caller can do nothing about it. */
static void cuda_close(rt_backend_device *dev)
{
    if (dev == NULL)
        return;
    GError *error = NULL;
    rt_cuda_exec_close(dev);
    if (dev->conv_choices)
        g_hash_table_destroy(dev->conv_choices);
    if (rt_cuda_make_current(dev, &error)) {
        if (dev->stream)
            rt_cuda_check(cudaStreamSynchronize(dev->stream), &error,
                          "cuda:%d: cudaStreamSynchronize at close", dev->index);
#ifdef HAVE_CUDNN
        if (dev->dnn)
            rt_cudnn_check(cudnnDestroy(dev->dnn), first_error(&error), "cuda:%d: cudnnDestroy", dev->index);
#endif
        if (dev->blas)
            rt_cublas_check(cublasDestroy(dev->blas), first_error(&error), "cuda:%d: cublasDestroy",
                            dev->index);
        if (dev->blaslt)
            rt_cublas_check(cublasLtDestroy(dev->blaslt), first_error(&error), "cuda:%d: cublasLtDestroy",
                            dev->index);
        if (dev->stream)
            rt_cuda_check(cudaStreamDestroy(dev->stream), first_error(&error), "cuda:%d: cudaStreamDestroy",
                          dev->index);
    }
    if (error) {
        g_warning("closing the CUDA device: %s", error->message);
        g_error_free(error);
    }
    g_free(dev);
}

/* Whether variable name is set to a true value (want TRUE: 1, yes, true, on) or a false one
 * (want FALSE: 0, no, false, off). */
static gboolean env_says(const char *name, gboolean want)
{
    const char *v = g_getenv(name);
    if (!v)
        return FALSE;
    static const char *yes[] = {"1", "yes", "true", "on"}, *no[] = {"0", "no", "false", "off"};
    const char **list = want ? yes : no;
    for (int i = 0; i < 4; i++)
        if (g_ascii_strcasecmp(v, list[i]) == 0)
            return TRUE;
    return FALSE;
}

static rt_backend_device *cuda_open(int index, GError **error)
{
    if (!check_index(index, error))
        return NULL;

    rt_backend_device *dev = g_new0(rt_backend_device, 1);
    dev->index = index;
    dev->use_graphs = !env_says("ROBOTRAIN_CUDA_GRAPH", FALSE);
    dev->sync_each_node = env_says("ROBOTRAIN_CUDA_SYNC", TRUE);
    if (!rt_cuda_make_current(dev, error))
        goto fail;

    /* Catch a build without code for this GPU now, with its compute capability in the message,
     * rather than at the first kernel. */
    cudaError_t probe = rt_cuda_fill_probe();
    if (probe != cudaSuccess) {
        int major = 0, minor = 0; /* best effort: only for the message */
        (void)cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index);
        (void)cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index);
        rt_cuda_check(probe, error, "cuda:%d: loading the kernels for compute capability %d.%d", index, major,
                      minor);
        goto fail;
    }

    if (!rt_cuda_check(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking), error,
                       "cuda:%d: cudaStreamCreateWithFlags", index))
        goto fail;
    if (!rt_cublas_check(cublasLtCreate(&dev->blaslt), error, "cuda:%d: cublasLtCreate", index))
        goto fail;
    if (!rt_cublas_check(cublasCreate(&dev->blas), error, "cuda:%d: cublasCreate", index))
        goto fail;
    if (!rt_cublas_check(cublasSetStream(dev->blas, dev->stream), error, "cuda:%d: cublasSetStream", index))
        goto fail;
#ifdef HAVE_CUDNN
    if (!rt_cudnn_check(cudnnCreate(&dev->dnn), error, "cuda:%d: cudnnCreate", index))
        goto fail;
    if (!rt_cudnn_check(cudnnSetStream(dev->dnn, dev->stream), error, "cuda:%d: cudnnSetStream", index))
        goto fail;
#endif
    return dev;

fail:
    cuda_close(dev);
    return NULL;
}

static gboolean cuda_buffer_alloc(rt_backend_device *dev, size_t size, rt_backend_buffer *buf, GError **error)
{
    g_return_val_if_fail(dev != NULL && buf != NULL, FALSE);
    memset(buf, 0, sizeof *buf);
    if (!rt_cuda_make_current(dev, error))
        return FALSE;
    void *ptr = NULL;
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status != cudaSuccess) {
        char *want = g_format_size_full(size, G_FORMAT_SIZE_IEC_UNITS);
        size_t free_bytes = 0, total_bytes = 0;
        if (status == cudaErrorMemoryAllocation && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
            char *free_text = g_format_size_full(free_bytes, G_FORMAT_SIZE_IEC_UNITS);
            char *total_text = g_format_size_full(total_bytes, G_FORMAT_SIZE_IEC_UNITS);
            rt_cuda_check(status, error, "cuda:%d: cudaMalloc of %s (%zu bytes; %s of %s free)", dev->index,
                          want, size, free_text, total_text);
            g_free(free_text);
            g_free(total_text);
        } else {
            rt_cuda_check(status, error, "cuda:%d: cudaMalloc of %s (%zu bytes)", dev->index, want, size);
        }
        g_free(want);
        return FALSE;
    }
    buf->ptr = ptr;
    buf->size = size;
    buf->priv = dev; /* the owner, checked when the buffer is freed */
    return TRUE;
}

static void cuda_buffer_free(rt_backend_device *dev, rt_backend_buffer *buf)
{
    g_return_if_fail(dev != NULL && buf != NULL);
    if (buf->ptr == NULL && buf->size == 0)
        return;
    g_return_if_fail(buf->priv == dev);
    GError *error = NULL;
    if (!rt_cuda_make_current(dev, &error) ||
        !rt_cuda_check(cudaFree(buf->ptr), &error, "cuda:%d: cudaFree of %zu bytes", dev->index, buf->size)) {
        g_warning("freeing device memory: %s", error->message);
        g_error_free(error);
    }
    memset(buf, 0, sizeof *buf);
}

/* Checks that [offset, offset + size) lies inside a buffer of buffer_size bytes. */
static gboolean check_range(const rt_backend_device *dev, const char *operation, const char *which,
                            size_t offset, size_t size, size_t buffer_size, GError **error)
{
    if (offset <= buffer_size && size <= buffer_size - offset)
        return TRUE;
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "cuda:%d: %s: the %s range of %zu bytes at offset %zu ends past the end of the %zu-byte "
                "buffer; the caller computed a wrong size or offset",
                dev->index, operation, which, size, offset, buffer_size);
    return FALSE;
}

/* Queues one copy on the device's stream and waits for it. */
static gboolean copy_and_wait(rt_backend_device *dev, void *dst, const void *src, size_t size,
                              enum cudaMemcpyKind kind, const char *operation, GError **error)
{
    if (size == 0)
        return TRUE;
    if (!rt_cuda_make_current(dev, error))
        return FALSE;
    if (!rt_cuda_check(cudaMemcpyAsync(dst, src, size, kind, dev->stream), error,
                       "cuda:%d: %s: cudaMemcpyAsync of %zu bytes", dev->index, operation, size))
        return FALSE;
    return rt_cuda_check(cudaStreamSynchronize(dev->stream), error,
                         "cuda:%d: %s: cudaStreamSynchronize after a copy of %zu bytes", dev->index,
                         operation, size);
}

static gboolean cuda_copy_to_device(rt_backend_device *dev, rt_backend_buffer *dst, size_t dst_offset,
                                    const void *src, size_t size, GError **error)
{
    g_return_val_if_fail(dev != NULL && dst != NULL && (src != NULL || size == 0), FALSE);
    if (!check_range(dev, "copy_to_device", "destination", dst_offset, size, dst->size, error))
        return FALSE;
    return copy_and_wait(dev, (char *)dst->ptr + dst_offset, src, size, cudaMemcpyHostToDevice,
                         "copy_to_device", error);
}

static gboolean cuda_copy_to_host(rt_backend_device *dev, void *dst, const rt_backend_buffer *src,
                                  size_t src_offset, size_t size, GError **error)
{
    g_return_val_if_fail(dev != NULL && src != NULL && (dst != NULL || size == 0), FALSE);
    if (!check_range(dev, "copy_to_host", "source", src_offset, size, src->size, error))
        return FALSE;
    return copy_and_wait(dev, dst, (const char *)src->ptr + src_offset, size, cudaMemcpyDeviceToHost,
                         "copy_to_host", error);
}

static gboolean cuda_copy_on_device(rt_backend_device *dev, rt_backend_buffer *dst, size_t dst_offset,
                                    const rt_backend_buffer *src, size_t src_offset, size_t size,
                                    GError **error)
{
    g_return_val_if_fail(dev != NULL && dst != NULL && src != NULL, FALSE);
    if (!check_range(dev, "copy_on_device", "source", src_offset, size, src->size, error) ||
        !check_range(dev, "copy_on_device", "destination", dst_offset, size, dst->size, error))
        return FALSE;
    /* cudaMemcpyDefault lets unified addressing find each side, so a buffer of another GPU
     * works too (a peer copy). */
    return copy_and_wait(dev, (char *)dst->ptr + dst_offset, (const char *)src->ptr + src_offset, size,
                         cudaMemcpyDefault, "copy_on_device", error);
}

static gboolean cuda_memset_device(rt_backend_device *dev, rt_backend_buffer *dst, size_t offset, int value,
                                   size_t size, GError **error)
{
    g_return_val_if_fail(dev != NULL && dst != NULL, FALSE);
    if (!check_range(dev, "memset_device", "destination", offset, size, dst->size, error))
        return FALSE;
    if (size == 0)
        return TRUE;
    if (!rt_cuda_make_current(dev, error))
        return FALSE;
    /* As memset(3): value is converted to unsigned char. */
    return rt_cuda_check(rt_cuda_fill((char *)dst->ptr + offset, size, (unsigned char)value, dev->stream),
                         error, "cuda:%d: memset_device: launching the fill kernel on %zu bytes", dev->index,
                         size);
}

static gboolean cuda_synchronize(rt_backend_device *dev, GError **error)
{
    g_return_val_if_fail(dev != NULL, FALSE);
    if (!rt_cuda_make_current(dev, error))
        return FALSE;
    return rt_cuda_check(cudaStreamSynchronize(dev->stream), error, "cuda:%d: cudaStreamSynchronize",
                         dev->index);
}

static const rt_backend_i cuda_backend = {
    .struct_size = sizeof(rt_backend_i),
    .device_type = "cuda",
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .open = cuda_open,
    .close = cuda_close,
    .buffer_alloc = cuda_buffer_alloc,
    .buffer_free = cuda_buffer_free,
    .copy_to_device = cuda_copy_to_device,
    .copy_to_host = cuda_copy_to_host,
    .copy_on_device = cuda_copy_on_device,
    .memset_device = cuda_memset_device,
    .synchronize = cuda_synchronize,
    .supports_op = rt_cuda_supports_op,
    .graph_compute = rt_cuda_graph_compute,
    .node_workspace_size = rt_cuda_node_workspace_size,
    .graph_prepare = rt_cuda_graph_prepare,
    .graph_release = rt_cuda_graph_release,
};

RT_PLUGIN_DEFINE(cuda, RT_PLUGIN_BACKEND, PACKAGE_VERSION, "Apache-2.0",
                 "NVIDIA GPUs through the CUDA runtime, cuBLAS and cuDNN", NULL, 0, &cuda_backend)
