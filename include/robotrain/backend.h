/* robotrain/backend.h: the compute-backend interface.
 *
 * A backend owns devices, device memory and the kernels that execute a planned graph. The CPU
 * backend is built into librobotrain; others (CUDA) are modules of kind RT_PLUGIN_BACKEND whose
 * descriptor's vtable points at a struct rt_backend_i. All slots after struct_size are required
 * unless marked (optional); the core checks struct_size before it uses a slot added later. */
#ifndef ROBOTRAIN_BACKEND_H
#define ROBOTRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

typedef struct rt_device_info {
    char name[128];         /* e.g. "NVIDIA H200" or the CPU model */
    size_t total_bytes;     /* device memory */
    size_t free_bytes;      /* at the time of the query */
    int compute_major;      /* compute capability (CUDA), 0 elsewhere */
    int compute_minor;
    int multiprocessors;    /* SMs (CUDA) or cores (CPU) */
} rt_device_info;

/* An open device: the backend's per-device state (streams, handles, allocator). Opaque. */
typedef struct rt_backend_device rt_backend_device;

/* A block of device memory. ptr is a device address, never dereferenced by the core. */
typedef struct rt_backend_buffer {
    void *ptr;
    size_t size;
    void *priv; /* backend's bookkeeping */
} rt_backend_buffer;

struct rt_graph; /* robotrain/graph.h */
struct rt_node;

typedef struct rt_backend_i {
    uint32_t struct_size; /* sizeof(struct rt_backend_i) the backend was built with */
    const char *device_type; /* the --policy.device prefix it serves: "cpu", "cuda" */

    /* Number of usable devices; 0 when none (no driver, no GPU) with no error set.
     * -1 with error set when the runtime itself is broken. */
    int (*device_count)(GError **error);
    gboolean (*device_info)(int index, rt_device_info *info, GError **error);

    /* Opens device index. Returns (transfer full) state freed with close(). */
    rt_backend_device *(*open)(int index, GError **error);
    void (*close)(rt_backend_device *dev);

    /* Device memory. buffer_alloc fills *buf; buffer_free releases it and zeroes *buf. */
    gboolean (*buffer_alloc)(rt_backend_device *dev, size_t size, rt_backend_buffer *buf, GError **error);
    void (*buffer_free)(rt_backend_device *dev, rt_backend_buffer *buf);
    /* Copies are complete when they return (synchronous); offsets and sizes are in bytes and
     * must lie inside the buffer (an error otherwise). */
    gboolean (*copy_to_device)(rt_backend_device *dev, rt_backend_buffer *dst, size_t dst_offset,
                               const void *src, size_t size, GError **error);
    gboolean (*copy_to_host)(rt_backend_device *dev, void *dst, const rt_backend_buffer *src,
                             size_t src_offset, size_t size, GError **error);
    gboolean (*copy_on_device)(rt_backend_device *dev, rt_backend_buffer *dst, size_t dst_offset,
                               const rt_backend_buffer *src, size_t src_offset, size_t size,
                               GError **error);
    gboolean (*memset_device)(rt_backend_device *dev, rt_backend_buffer *dst, size_t offset,
                              int value, size_t size, GError **error);
    /* Waits for all work queued on the device. */
    gboolean (*synchronize)(rt_backend_device *dev, GError **error);

    /* Graph execution (the compute core fills these in; a backend that cannot run a node says
     * so in supports_op and the core places that node elsewhere). (optional) */
    gboolean (*supports_op)(rt_backend_device *dev, const struct rt_node *node);
    /* Runs every node of rt_graph_exec_node() in order, with the storages of
     * rt_graph_storage_buffer(); returns FALSE with error set when a kernel finds bad data
     * (an index out of range) or the device fails. No host callbacks: capturable as a whole. */
    gboolean (*graph_compute)(rt_backend_device *dev, struct rt_graph *graph, GError **error);
    /* Scratch bytes the backend's kernel for node needs; the planner reserves them in the
     * arena (rt_node.workspace_offset), live during that node only. (optional: NULL = none) */
    size_t (*node_workspace_size)(rt_backend_device *dev, const struct rt_node *node);

    /* What a backend keeps per planned graph (library descriptors, algorithm choices, captured
     * work). graph_prepare runs at the end of rt_graph_plan, once every storage is allocated and
     * filled, so tensor addresses are final; FALSE with error set fails the plan. graph_release
     * runs in rt_graph_free, before the storages are freed, for every graph whose graph_prepare
     * succeeded. (optional: NULL = nothing kept) */
    gboolean (*graph_prepare)(rt_backend_device *dev, struct rt_graph *graph, GError **error);
    void (*graph_release)(rt_backend_device *dev, struct rt_graph *graph);

    void *reserved[6];
} rt_backend_i;

G_END_DECLS

#endif
