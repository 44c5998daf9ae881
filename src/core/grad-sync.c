/* Data-parallel gradient averaging as graph nodes (see rt_graph_add_grad_sync in
 * robotrain/graph.h): buckets over the gradient blob, the allreduce op and its CPU kernel. The
 * communication itself is the caller's (the trainer hands in a comm module's allreduce), so
 * the core knows nothing of Gloo or NCCL. */
#include "config.h"

#include <string.h>

#include "core/backend-cpu.h"
#include "core/ops-common.h"
#include "core/ops-decl.h"

bool op_infer_allreduce(rt_graph *g, rt_node *node)
{
    return rt_need_float(g, node, 0, "gradients");
}

/* params ordered by their place in the blob */
static int by_offset(gconstpointer a, gconstpointer b)
{
    const rt_tensor *x = *(rt_tensor *const *)a, *y = *(rt_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool add_bucket(rt_graph *g, rt_dtype dtype, size_t begin, size_t end)
{
    int64_t n = (int64_t)((end - begin) / rt_dtype_size(dtype));
    rt_tensor *t = rt_tensor_new_leaf(g, NULL, dtype, 1, &n, 0);
    if (!t)
        return false;
    t->storage = RT_STORAGE_GRAD;
    t->offset = begin;
    RT_IMPL(t)->fixed = true;
    int64_t ip[1] = {g->n_grad_buckets};
    if (!rt_node_make(g, RT_OP_ALLREDUCE, &t, 1, ip, 1, NULL, 0))
        return false;
    g->n_grad_buckets++;
    return true;
}

int rt_graph_add_grad_sync(rt_graph *g, size_t bucket_bytes, GError **error)
{
    if (!rt_graph_check(g, error))
        return -1;
    if (!g->backward_done || g->optimizer_done || g->planned || g->n_grad_buckets) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_add_grad_sync: call it once, after rt_graph_backward and before "
                    "rt_graph_add_adamw");
        return -1;
    }
    if (bucket_bytes == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_add_grad_sync: a bucket of 0 bytes; give a positive size");
        return -1;
    }
    if (!rt_graph_layout(g, error))
        return -1;
    GPtrArray *with_grad = g_ptr_array_new();
    for (guint i = 0; i < g->params->len; i++) {
        rt_tensor *p = g_ptr_array_index(g->params, i);
        if (RT_IMPL(p)->grad)
            g_ptr_array_add(with_grad, p);
    }
    if (with_grad->len == 0) {
        g_ptr_array_unref(with_grad);
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_add_grad_sync: no parameter has a gradient");
        return -1;
    }
    g_ptr_array_sort(with_grad, by_offset);
    rt_dtype dtype = ((rt_tensor *)g_ptr_array_index(with_grad, 0))->dtype;
    /* from the last parameter back: a bucket is the contiguous range [begin, end) of the blob;
     * the gaps between parameters (alignment, parameters without gradient) hold zeros on every
     * rank, so averaging them changes nothing */
    size_t end = 0, begin = 0;
    bool open = false, ok = true;
    for (int i = (int)with_grad->len - 1; i >= 0 && ok; i--) {
        rt_tensor *p = g_ptr_array_index(with_grad, i);
        size_t p_end = p->offset + rt_tensor_nbytes(p);
        if (!open) {
            end = p_end;
            open = true;
        }
        begin = p->offset;
        if (end - begin >= bucket_bytes) {
            ok = add_bucket(g, dtype, begin, end);
            open = false;
        }
    }
    if (ok && open)
        ok = add_bucket(g, dtype, begin, end);
    g_ptr_array_unref(with_grad);
    if (!ok || !rt_graph_check(g, error)) {
        rt_graph_check(g, error);
        return -1;
    }
    return g->n_grad_buckets;
}

int rt_graph_n_grad_buckets(const rt_graph *g)
{
    return g->n_grad_buckets;
}

void rt_graph_set_collective(rt_graph *g, rt_graph_collective_fn fn, void *user_data)
{
    g->collective = fn;
    g->collective_data = user_data;
}

gboolean rt_graph_run_collective(rt_graph *g, const rt_node *node, void *data, void *stream, GError **error)
{
    if (!g->collective)
        return TRUE;
    const rt_tensor *t = node->src[0];
    GError *local = NULL;
    if (g->collective(g->collective_data, data, (size_t)rt_tensor_numel(t), t->dtype, stream, &local))
        return TRUE;
    g_prefix_error(&local, "averaging gradient bucket %d of %d: ", (int)node->ip[0], g->n_grad_buckets);
    g_clear_error(&g->collective_error);
    g->collective_error = g_error_copy(local);
    g_propagate_error(error, local);
    return FALSE;
}

/* Takes the collective's error of the last step, if any (transfer full), so that rt_graph_compute
 * reports it with its own domain and code instead of the backend's wrapper. */
GError *rt_graph_take_collective_error(rt_graph *g)
{
    GError *e = g->collective_error;
    g->collective_error = NULL;
    return e;
}

bool cpu_allreduce(rt_cpu_ctx *ctx, const rt_node *node)
{
    GError *error = NULL;
    if (rt_graph_run_collective(ctx->graph, node, cpu_ptr(ctx, node->src[0]), NULL, &error))
        return true;
    snprintf(ctx->message, sizeof ctx->message, "%s", error->message);
    g_error_free(error);
    return false;
}
