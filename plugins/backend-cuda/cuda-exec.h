/* plugins/backend-cuda/cuda-exec.h: the graph executor and the per-op table it dispatches on.
 *
 * rt_graph_plan asks supports_op and node_workspace_size for every node, allocates the
 * storages (one arena holds activations and each node's scratch space), then calls
 * graph_prepare: each op that needs library state (cuBLASLt plans, cuDNN descriptors and
 * algorithms) builds it once there, from the final addresses. A step then queues every node in
 * order on the device's stream (eager), or replays the CUDA graph captured from that queueing
 * (after one eager warm-up step); either way the host waits once, at the end, and checks the data errors the
 * kernels recorded. */
#ifndef RT_CUDA_EXEC_H
#define RT_CUDA_EXEC_H

#include <robotrain/graph.h>
#include <robotrain/ops.h>

#include "cuda-device.h"
#include "cuda-kernels.h"

/* What a node's functions see. */
typedef struct rt_cuda_ctx {
    rt_backend_device *dev;
    cudaStream_t stream;
    rt_graph *graph;
    uint8_t *base[RT_STORAGE_COUNT]; /* device address of each storage */
    rt_cuda_status *status;          /* where kernels record bad data */
    gboolean tf32;                   /* the graph allows TF32 (RT_GRAPH_TF32) */
} rt_cuda_ctx;

static inline void *rt_cuda_ptr(const rt_cuda_ctx *ctx, const rt_tensor *t)
{
    return t ? ctx->base[t->storage] + t->offset : NULL;
}

/* the node's scratch space in the arena (node_workspace_size bytes) */
static inline uint8_t *rt_cuda_ws(const rt_cuda_ctx *ctx, const rt_node *node)
{
    return ctx->base[RT_STORAGE_ARENA] + node->workspace_offset;
}

/* One row per op. supports: whether the kernels handle this node (dtypes, sizes); NULL =
 * never. workspace, prepare, release: optional. run queues the node's work, or fails with error
 * set (a launch or library failure, named with the node). */
typedef struct rt_cuda_op {
    gboolean (*supports)(const rt_node *node);
    size_t (*workspace)(rt_backend_device *dev, const rt_node *node);
    gboolean (*prepare)(rt_cuda_ctx *ctx, const rt_node *node, void **priv, GError **error);
    void (*release)(void *priv);
    gboolean (*run)(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error);
} rt_cuda_op;

/* The row of op (cuda-ops.c), NULL for a bad id. */
const rt_cuda_op *rt_cuda_op_for(int op);

/* The rows defined in cuda-ops-gemm.c (matmul, linear, attention) and cuda-ops-conv.c. */
extern const rt_cuda_op rt_cuda_op_matmul, rt_cuda_op_linear, rt_cuda_op_attention,
    rt_cuda_op_attention_backward, rt_cuda_op_conv2d, rt_cuda_op_conv2d_backward_data,
    rt_cuda_op_conv2d_backward_weight;

/* "cuda:0: node 12 (op add)": the context of a node's error messages, in buf. */
const char *rt_cuda_node_label(const rt_cuda_ctx *ctx, const rt_node *node, char *buf, size_t size);
/* rt_cuda_check for the launch status of node's kernels. */
gboolean rt_cuda_launched(const rt_cuda_ctx *ctx, const rt_node *node, cudaError_t status, GError **error);

/* 256-byte steps through a node's workspace */
static inline size_t rt_cuda_align(size_t n)
{
    return (n + 255) / 256 * 256;
}

/* Rounds src (f32) to the compute dtype cd: into bf16/f16 storage (for cuBLASLt) */
gboolean rt_cuda_round_input(const rt_cuda_ctx *ctx, const rt_node *node, const rt_tensor *src, int cd,
                             void *dst, GError **error);

/* Whether a matmul, linear, conv or attention node rounds its f32 inputs to ip[cd_index] */
static inline gboolean rt_cuda_rounds(const rt_node *node, int cd_index)
{
    int64_t cd = node->ip[cd_index];
    return node->src[0]->dtype == RT_F32 && (cd == RT_BF16 || cd == RT_F16);
}

/* The vtable slots (cuda-exec.c). */
gboolean rt_cuda_supports_op(rt_backend_device *dev, const rt_node *node);
size_t rt_cuda_node_workspace_size(rt_backend_device *dev, const rt_node *node);
gboolean rt_cuda_graph_prepare(rt_backend_device *dev, rt_graph *graph, GError **error);
void rt_cuda_graph_release(rt_backend_device *dev, rt_graph *graph);
gboolean rt_cuda_graph_compute(rt_backend_device *dev, rt_graph *graph, GError **error);
/* Frees what is left of the graphs' states when a device closes. */
void rt_cuda_exec_close(rt_backend_device *dev);

#endif
