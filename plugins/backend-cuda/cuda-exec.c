/* plugins/backend-cuda/cuda-exec.c: runs planned graphs on the GPU (see cuda-exec.h).
 *
 * Per graph, graph_prepare keeps: the executed nodes and each one's prepared state, and a small
 * status record in mapped host memory where kernels report bad data. A step queues every node
 * on the device's one stream with no host synchronisation in between. With CUDA graphs (the
 * default) the first step runs eagerly, as a warm-up (kernels load lazily and libraries set
 * themselves up on first use, which must not happen inside a capture); the second is captured
 * from the same queueing, instantiated once, and from then on every step is one
 * cudaGraphLaunch. Everything a step reads that may change (inputs, the RNG counters, learning
 * rates, the step count) lives in device memory, so the replay sees the new values. The host
 * then waits for the step once and turns a recorded data error into a GError naming the node,
 * as the CPU backend does.
 *
 * ROBOTRAIN_CUDA_GRAPH=0 queues the nodes one by one every step instead (eager; same kernels,
 * same results); ROBOTRAIN_CUDA_SYNC=1 also waits after every node, so a fault names its node. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "cuda-error.h"
#include "cuda-exec.h"

typedef struct graph_state {
    rt_graph *graph;
    int n; /* executed (non-view) nodes */
    const rt_node **nodes;
    void **priv;            /* each node's prepared state */
    rt_cuda_status *status; /* mapped host memory, written by kernels */
    cudaGraph_t captured;
    cudaGraphExec_t exec;
    gboolean warm; /* one step ran eagerly: every kernel and library path is loaded */
    gboolean tf32;
} graph_state;

gboolean rt_cuda_supports_op(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    if (!node)
        return FALSE;
    const rt_cuda_op *row = rt_cuda_op_for(node->op);
    if (!row || !row->supports)
        return FALSE;
    if (!rt_op_is_view((rt_op)node->op) && !row->run)
        return FALSE;
    return row->supports(node);
}

size_t rt_cuda_node_workspace_size(rt_backend_device *dev, const rt_node *node)
{
    const rt_cuda_op *row = rt_cuda_op_for(node->op);
    return row && row->workspace && !rt_op_is_view((rt_op)node->op) ? row->workspace(dev, node) : 0;
}

static void ctx_init(rt_cuda_ctx *ctx, rt_backend_device *dev, rt_graph *graph, graph_state *st)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->dev = dev;
    ctx->stream = dev->stream;
    ctx->graph = graph;
    for (int s = 0; s < RT_STORAGE_COUNT; s++)
        ctx->base[s] = rt_graph_storage_buffer(graph, (rt_storage)s)->ptr;
    ctx->status = st->status;
    ctx->tf32 = st->tf32;
}

static void state_free(rt_backend_device *dev, graph_state *st)
{
    if (!st)
        return;
    GError *error = NULL;
    if (!rt_cuda_make_current(dev, &error)) {
        g_warning("releasing a graph's CUDA state: %s", error->message);
        g_clear_error(&error);
    }
    for (int i = 0; i < st->n; i++) {
        const rt_cuda_op *row = rt_cuda_op_for(st->nodes[i]->op);
        if (st->priv[i] && row->release)
            row->release(st->priv[i]);
    }
    if (st->exec)
        cudaGraphExecDestroy(st->exec);
    if (st->captured)
        cudaGraphDestroy(st->captured);
    if (st->status)
        cudaFreeHost(st->status);
    g_free(st->nodes);
    g_free(st->priv);
    g_free(st);
}

gboolean rt_cuda_graph_prepare(rt_backend_device *dev, rt_graph *graph, GError **error)
{
    if (!rt_cuda_make_current(dev, error))
        return FALSE;
    graph_state *st = g_new0(graph_state, 1);
    st->graph = graph;
    st->tf32 = (rt_graph_flags(graph) & RT_GRAPH_TF32) != 0;
    int n = rt_graph_n_exec_nodes(graph);
    st->nodes = g_new0(const rt_node *, n);
    st->priv = g_new0(void *, n);
    for (int i = 0; i < n; i++) {
        const rt_node *node = rt_graph_exec_node(graph, i);
        if (!rt_op_is_view((rt_op)node->op))
            st->nodes[st->n++] = node;
    }
    /* mapped pinned memory: kernels write it directly, the host reads it after the step */
    void *status = NULL;
    if (!rt_cuda_check(cudaHostAlloc(&status, sizeof(rt_cuda_status), cudaHostAllocMapped), error,
                       "cuda:%d: cudaHostAlloc of the step's status record", dev->index))
        goto fail;
    st->status = status;
    memset(st->status, 0, sizeof *st->status);
    rt_cuda_ctx ctx;
    ctx_init(&ctx, dev, graph, st);
    void *device_status = NULL;
    if (!rt_cuda_check(cudaHostGetDevicePointer(&device_status, status, 0), error,
                       "cuda:%d: cudaHostGetDevicePointer of the status record", dev->index))
        goto fail;
    ctx.status = device_status;
    for (int i = 0; i < st->n; i++) {
        const rt_cuda_op *row = rt_cuda_op_for(st->nodes[i]->op);
        if (row->prepare && !row->prepare(&ctx, st->nodes[i], &st->priv[i], error))
            goto fail;
    }
    if (!dev->graphs)
        dev->graphs = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_insert(dev->graphs, graph, st);
    return TRUE;

fail:
    state_free(dev, st);
    return FALSE;
}

void rt_cuda_graph_release(rt_backend_device *dev, rt_graph *graph)
{
    graph_state *st = dev->graphs ? g_hash_table_lookup(dev->graphs, graph) : NULL;
    if (!st)
        return;
    g_hash_table_remove(dev->graphs, graph);
    state_free(dev, st);
}

void rt_cuda_exec_close(rt_backend_device *dev)
{
    if (!dev->graphs)
        return;
    guint left = g_hash_table_size(dev->graphs);
    if (left)
        g_warning("cuda:%d: closed with %u graph(s) still planned on it; free graphs before their device",
                  dev->index, left);
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, dev->graphs);
    while (g_hash_table_iter_next(&it, &key, &value))
        state_free(dev, value);
    g_hash_table_destroy(dev->graphs);
    dev->graphs = NULL;
}

/* The data error kernels recorded, as the CPU backend words it; FALSE with error set. */
static gboolean check_status(const rt_cuda_ctx *ctx, const graph_state *st, GError **error)
{
    const volatile rt_cuda_status *s = st->status;
    if (s->code == RT_CUDA_STATUS_OK)
        return TRUE;
    const rt_node *node = NULL;
    for (int i = 0; i < st->n && !node; i++)
        if (st->nodes[i]->id == s->node)
            node = st->nodes[i];
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "cuda:%d: node %d (op %s) failed: index %" G_GINT64_FORMAT " (element %" G_GINT64_FORMAT
                " of the indices) is outside 0..%" G_GINT64_FORMAT " of the embedding table",
                ctx->dev->index, (int)s->node, node ? rt_op_name((rt_op)node->op) : "?", (gint64)s->value,
                (gint64)s->element, (gint64)s->limit);
    return FALSE;
}

/* Queues every node; with sync_each_node also waits for each and checks its status. */
static gboolean enqueue(rt_cuda_ctx *ctx, graph_state *st, GError **error)
{
    for (int i = 0; i < st->n; i++) {
        const rt_node *node = st->nodes[i];
        const rt_cuda_op *row = rt_cuda_op_for(node->op);
        if (!row->run(ctx, node, st->priv[i], error))
            return FALSE;
        if (ctx->dev->sync_each_node) {
            char label[96];
            if (!rt_cuda_check(cudaStreamSynchronize(ctx->stream), error, "%s: running it",
                               rt_cuda_node_label(ctx, node, label, sizeof label)) ||
                !check_status(ctx, st, error))
                return FALSE;
        }
    }
    return TRUE;
}

/* Captures the step into st->exec. */
static gboolean capture(rt_cuda_ctx *ctx, graph_state *st, GError **error)
{
    rt_backend_device *dev = ctx->dev;
    if (!rt_cuda_check(cudaStreamBeginCapture(dev->stream, cudaStreamCaptureModeThreadLocal), error,
                       "cuda:%d: cudaStreamBeginCapture of a step", dev->index))
        return FALSE;
    GError *queue_error = NULL;
    gboolean queued = enqueue(ctx, st, &queue_error);
    cudaGraph_t captured = NULL;
    cudaError_t end = cudaStreamEndCapture(dev->stream, &captured); /* always: the stream leaves capture */
    if (!queued) {
        if (captured)
            cudaGraphDestroy(captured);
        (void)cudaGetLastError();
        g_propagate_error(error, queue_error);
        return FALSE;
    }
    if (!rt_cuda_check(end, error, "cuda:%d: cudaStreamEndCapture of a step (%d nodes)", dev->index, st->n))
        return FALSE;
    cudaGraphExec_t exec = NULL;
    if (!rt_cuda_check(cudaGraphInstantiate(&exec, captured, 0), error,
                       "cuda:%d: cudaGraphInstantiate of a step (%d nodes)", dev->index, st->n)) {
        cudaGraphDestroy(captured);
        return FALSE;
    }
    st->captured = captured;
    st->exec = exec;
    return TRUE;
}

gboolean rt_cuda_graph_compute(rt_backend_device *dev, rt_graph *graph, GError **error)
{
    graph_state *st = dev->graphs ? g_hash_table_lookup(dev->graphs, graph) : NULL;
    if (!st) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "cuda:%d: this graph was not prepared on this device: plan it with rt_graph_plan on the "
                    "same device (a librobotrain older than the CUDA module does not prepare graphs)",
                    dev->index);
        return FALSE;
    }
    if (!rt_cuda_make_current(dev, error))
        return FALSE;
    /* the previous step has finished (it was waited for): the record can be reset */
    memset(st->status, 0, sizeof *st->status);
    rt_cuda_ctx ctx;
    ctx_init(&ctx, dev, graph, st);
    void *device_status = NULL;
    if (!rt_cuda_check(cudaHostGetDevicePointer(&device_status, st->status, 0), error,
                       "cuda:%d: cudaHostGetDevicePointer of the status record", dev->index))
        return FALSE;
    ctx.status = device_status;
    /* a step with gradient averaging runs eagerly: the collective module queues its work on its
     * own stream, fenced by events, which a capture of this stream would have to include */
    gboolean capturable = rt_graph_n_grad_buckets(graph) == 0;
    if (dev->use_graphs && !dev->sync_each_node && st->warm && capturable) {
        if (!st->exec && !capture(&ctx, st, error))
            return FALSE;
        if (!rt_cuda_check(cudaGraphLaunch(st->exec, dev->stream), error,
                           "cuda:%d: cudaGraphLaunch of a step", dev->index))
            return FALSE;
    } else if (!enqueue(&ctx, st, error)) {
        return FALSE;
    }
    if (!rt_cuda_check(
            cudaStreamSynchronize(dev->stream), error,
            "cuda:%d: running a step of %d nodes (ROBOTRAIN_CUDA_SYNC=1 names the node that fails)",
            dev->index, st->n))
        return FALSE;
    if (!check_status(&ctx, st, error))
        return FALSE;
    st->warm = TRUE;
    return TRUE;
}
