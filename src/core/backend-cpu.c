/* The CPU backend: host memory, worker threads, and the executor that runs a planned graph by
 * calling each op's CPU kernel (backend-cpu-*.c, and src/core/cpu/kernels.h for GEMM, conv and
 * pooling). Kernels use the pool's threads or BLAS's, never both at once, so the machine is
 * never oversubscribed. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/backend-cpu.h"
#include "core/cpu/kernels.h"

struct rt_backend_device {
    rt_cpu_pool *pool;
};

void cpu_round_to(float *x, size_t n, int64_t cd)
{
    if (cd == RT_BF16)
        rt_cpu_round_bf16(x, n);
    else if (cd == RT_F16)
        rt_cpu_round_f16(x, n);
}

static int cpu_device_count(GError **error)
{
    (void)error;
    return 1;
}

static gboolean cpu_device_info(int index, rt_device_info *info, GError **error)
{
    if (index != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "there is one CPU device (cpu:0); cpu:%d does not exist", index);
        return FALSE;
    }
    memset(info, 0, sizeof *info);
    g_strlcpy(info->name, "CPU", sizeof info->name);
    char *text = NULL;
    if (g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL)) {
        char *line = strstr(text, "model name");
        char *colon = line ? strchr(line, ':') : NULL;
        if (colon) {
            char *end = strchr(colon, '\n');
            if (end)
                *end = '\0';
            g_strlcpy(info->name, g_strstrip(colon + 1), sizeof info->name);
        }
        g_free(text);
    }
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    info->total_bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    info->free_bytes = avail > 0 && page > 0 ? (size_t)avail * (size_t)page : 0;
    info->multiprocessors = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return TRUE;
}

static rt_backend_device *cpu_open(int index, GError **error)
{
    if (index != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "there is one CPU device (cpu:0); cpu:%d does not exist", index);
        return NULL;
    }
    rt_backend_device *dev = g_new0(rt_backend_device, 1);
    dev->pool = rt_cpu_pool_new(rt_cpu_get_num_threads());
    return dev;
}

static void cpu_close(rt_backend_device *dev)
{
    if (!dev)
        return;
    rt_cpu_pool_free(dev->pool);
    g_free(dev);
}

static gboolean cpu_buffer_alloc(rt_backend_device *dev, size_t size, rt_backend_buffer *buf,
                                 GError **error)
{
    (void)dev;
    void *p = NULL;
    if (posix_memalign(&p, RT_ALIGN, size ? size : RT_ALIGN) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_DEVICE,
                    "cannot allocate %zu bytes of host memory for a graph: use a smaller batch "
                    "or free memory", size);
        return FALSE;
    }
    buf->ptr = p;
    buf->size = size;
    buf->priv = NULL;
    return TRUE;
}

static void cpu_buffer_free(rt_backend_device *dev, rt_backend_buffer *buf)
{
    (void)dev;
    free(buf->ptr);
    memset(buf, 0, sizeof *buf);
}

static gboolean check_range(const rt_backend_buffer *buf, size_t offset, size_t size,
                            const char *what, GError **error)
{
    if (offset > buf->size || size > buf->size - offset) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: bytes %zu..%zu lie outside a buffer of %zu bytes", what, offset,
                    offset + size, buf->size);
        return FALSE;
    }
    return TRUE;
}

static gboolean cpu_copy_to_device(rt_backend_device *dev, rt_backend_buffer *dst, size_t dst_offset,
                                   const void *src, size_t size, GError **error)
{
    (void)dev;
    if (!check_range(dst, dst_offset, size, "copy to device", error))
        return FALSE;
    if (size)
        memcpy((char *)dst->ptr + dst_offset, src, size);
    return TRUE;
}

static gboolean cpu_copy_to_host(rt_backend_device *dev, void *dst, const rt_backend_buffer *src,
                                 size_t src_offset, size_t size, GError **error)
{
    (void)dev;
    if (!check_range(src, src_offset, size, "copy to host", error))
        return FALSE;
    if (size)
        memcpy(dst, (const char *)src->ptr + src_offset, size);
    return TRUE;
}

static gboolean cpu_copy_on_device(rt_backend_device *dev, rt_backend_buffer *dst,
                                   size_t dst_offset, const rt_backend_buffer *src,
                                   size_t src_offset, size_t size, GError **error)
{
    (void)dev;
    if (!check_range(dst, dst_offset, size, "copy on device", error) ||
        !check_range(src, src_offset, size, "copy on device", error))
        return FALSE;
    if (size)
        memmove((char *)dst->ptr + dst_offset, (const char *)src->ptr + src_offset, size);
    return TRUE;
}

static gboolean cpu_memset_device(rt_backend_device *dev, rt_backend_buffer *dst, size_t offset,
                                  int value, size_t size, GError **error)
{
    (void)dev;
    if (!check_range(dst, offset, size, "memset", error))
        return FALSE;
    if (size)
        memset((char *)dst->ptr + offset, value, size);
    return TRUE;
}

static gboolean cpu_synchronize(rt_backend_device *dev, GError **error)
{
    (void)dev;
    (void)error;
    return TRUE;
}

static gboolean cpu_supports_op(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    const rt_op_row *row = &rt_op_table[node->op];
    return (row->flags & RT_OPF_VIEW) || row->cpu != NULL;
}

static size_t cpu_node_workspace_size(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    rt_workspace_fn fn = rt_op_table[node->op].cpu_workspace;
    return fn ? fn(node) : 0;
}

static gboolean cpu_graph_compute(rt_backend_device *dev, rt_graph *graph, GError **error)
{
    int want = rt_cpu_get_num_threads();
    if (rt_cpu_pool_size(dev->pool) != want) { /* only when the thread count changed */
        rt_cpu_pool_free(dev->pool);
        dev->pool = rt_cpu_pool_new(want);
    }
    rt_cpu_ctx ctx;
    ctx.pool = dev->pool;
    ctx.graph = graph;
    ctx.message[0] = '\0';
    for (int s = 0; s < RT_STORAGE_COUNT; s++)
        ctx.base[s] = rt_graph_storage_buffer(graph, (rt_storage)s)->ptr;
    int n = rt_graph_n_exec_nodes(graph);
    for (int i = 0; i < n; i++) {
        const rt_node *node = rt_graph_exec_node(graph, i);
        const rt_op_row *row = &rt_op_table[node->op];
        if (row->flags & RT_OPF_VIEW)
            continue;
        if (!row->cpu(&ctx, node)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "node %d (op %s) failed: %s",
                        node->id, row->name, ctx.message);
            return FALSE;
        }
    }
    return TRUE;
}

static const rt_backend_i cpu_backend = {
    .struct_size = sizeof(rt_backend_i),
    .device_type = "cpu",
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .open = cpu_open,
    .close = cpu_close,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .copy_to_device = cpu_copy_to_device,
    .copy_to_host = cpu_copy_to_host,
    .copy_on_device = cpu_copy_on_device,
    .memset_device = cpu_memset_device,
    .synchronize = cpu_synchronize,
    .supports_op = cpu_supports_op,
    .graph_compute = cpu_graph_compute,
    .node_workspace_size = cpu_node_workspace_size,
};

const rt_backend_i *rt_backend_cpu(void)
{
    return &cpu_backend;
}
