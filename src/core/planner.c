/* The memory planner: prunes nodes nothing needs, fixes the execution order, and packs every
 * activation (and each node's scratch space) into one arena so that tensors whose lifetimes do
 * not overlap share bytes. Greedy by size (largest first, lowest free offset), which is
 * near-optimal on training graphs; the step then allocates nothing. */
#include "config.h"

#include <string.h>

#include "core/graph-internal.h"

typedef struct plan_item {
    int first, last;  /* execution indices during which the bytes are live */
    size_t size;
    size_t offset;
    rt_tensor *tensor; /* NULL: node workspace */
    rt_node *node;
} plan_item;

static size_t align_up(size_t n)
{
    return (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
}

static rt_tensor *root_of(rt_tensor *t)
{
    return t->view_of ? t->view_of : t;
}

static bool is_arena(const rt_tensor *t)
{
    return !t->view_of && !RT_IMPL(t)->fixed && !(t->flags & (RT_TENSOR_PARAM | RT_TENSOR_BUFFER |
                                                              RT_TENSOR_INPUT | RT_TENSOR_CONST));
}

static int by_size_desc(gconstpointer a, gconstpointer b)
{
    const plan_item *x = *(plan_item *const *)a, *y = *(plan_item *const *)b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static int by_offset(gconstpointer a, gconstpointer b)
{
    const plan_item *x = *(plan_item *const *)a, *y = *(plan_item *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Lowest offset where item fits between the already placed items that are live at the same
 * time. */
static size_t find_offset(const plan_item *item, GPtrArray *placed, GPtrArray *scratch)
{
    g_ptr_array_set_size(scratch, 0);
    for (guint i = 0; i < placed->len; i++) {
        plan_item *p = g_ptr_array_index(placed, i);
        if (p->first <= item->last && item->first <= p->last)
            g_ptr_array_add(scratch, p);
    }
    g_ptr_array_sort(scratch, by_offset);
    size_t offset = 0;
    for (guint i = 0; i < scratch->len; i++) {
        plan_item *p = g_ptr_array_index(scratch, i);
        if (p->offset >= offset + item->size)
            break;
        offset = MAX(offset, p->offset + p->size);
    }
    return offset;
}

bool rt_graph_plan_memory(rt_graph *g, size_t (*workspace)(rt_backend_device *, const rt_node *),
                          rt_backend_device *dev, GError **error)
{
    int n_tensors = (int)g->tensors->len, n_nodes = (int)g->nodes->len;

    /* liveness: a node runs when it has side effects, produces something the host reads or a
     * gradient, or feeds a node that runs */
    bool *used = g_new0(bool, n_tensors);
    bool *live = g_new0(bool, n_nodes);
    for (int i = n_nodes - 1; i >= 0; i--) {
        rt_node *node = g_ptr_array_index(g->nodes, i);
        bool keep = (rt_op_table[node->op].flags & RT_OPF_SIDE_EFFECT) != 0;
        for (int k = 0; k < node->n_out && !keep; k++) {
            rt_tensor *t = node->out[k];
            keep = t && (used[t->id] || (t->flags & (RT_TENSOR_OUTPUT | RT_TENSOR_GRAD)));
        }
        if (!keep)
            continue;
        live[i] = true;
        for (int s = 0; s < node->n_src; s++)
            if (node->src[s])
                used[node->src[s]->id] = true;
    }
    if (g->exec)
        g_ptr_array_unref(g->exec);
    g->exec = g_ptr_array_new();
    for (int i = 0; i < n_nodes; i++)
        if (live[i])
            g_ptr_array_add(g->exec, g_ptr_array_index(g->nodes, i));
    g_free(used);
    g_free(live);

    /* lifetimes of the arena tensors, in execution indices */
    int n_exec = (int)g->exec->len;
    int *first = g_new(int, n_tensors), *last = g_new(int, n_tensors);
    for (int i = 0; i < n_tensors; i++)
        first[i] = last[i] = -1;
    GArray *items = g_array_new(FALSE, TRUE, sizeof(plan_item));
    for (int i = 0; i < n_exec; i++) {
        rt_node *node = g_ptr_array_index(g->exec, i);
        for (int s = 0; s < node->n_src; s++) {
            rt_tensor *t = node->src[s];
            if (t && is_arena(root_of(t)))
                last[root_of(t)->id] = MAX(last[root_of(t)->id], i);
        }
        for (int k = 0; k < node->n_out; k++) {
            rt_tensor *t = node->out[k];
            if (!t)
                continue;
            if (t->flags & RT_TENSOR_OUTPUT)
                last[root_of(t)->id] = n_exec;
            if (is_arena(t)) {
                first[t->id] = i;
                last[t->id] = MAX(last[t->id], i);
            }
        }
        size_t ws = rt_op_table[node->op].flags & RT_OPF_VIEW ? 0 : workspace(dev, node);
        node->workspace_size = ws;
        node->workspace_offset = 0;
        if (ws) {
            plan_item it = {.first = i, .last = i, .size = align_up(ws), .node = node};
            g_array_append_val(items, it);
        }
    }
    for (int i = 0; i < n_tensors; i++) {
        rt_tensor *t = g_ptr_array_index(g->tensors, i);
        if (first[i] < 0)
            continue;
        plan_item it = {.first = first[i], .last = last[i], .size = align_up(rt_tensor_nbytes(t)),
                        .tensor = t};
        g_array_append_val(items, it);
    }
    g_free(first);
    g_free(last);

    GPtrArray *order = g_ptr_array_new(), *placed = g_ptr_array_new(), *scratch = g_ptr_array_new();
    for (guint i = 0; i < items->len; i++)
        g_ptr_array_add(order, &g_array_index(items, plan_item, i));
    g_ptr_array_sort(order, by_size_desc);
    size_t arena = 0;
    for (guint i = 0; i < order->len; i++) {
        plan_item *it = g_ptr_array_index(order, i);
        it->offset = find_offset(it, placed, scratch);
        arena = MAX(arena, it->offset + it->size);
        g_ptr_array_add(placed, it);
        if (it->tensor) {
            it->tensor->storage = RT_STORAGE_ARENA;
            it->tensor->offset = it->offset;
        } else {
            it->node->workspace_offset = it->offset;
        }
    }
    g->storage_size[RT_STORAGE_ARENA] = arena;
    g_ptr_array_unref(order);
    g_ptr_array_unref(placed);
    g_ptr_array_unref(scratch);
    g_array_unref(items);

    /* views take their root's place */
    for (int i = 0; i < n_tensors; i++) {
        rt_tensor *t = g_ptr_array_index(g->tensors, i);
        if (t->view_of) {
            t->storage = t->view_of->storage;
            t->offset = t->view_of->storage == RT_STORAGE_NONE ? 0
                                                               : t->view_of->offset + t->view_offset;
        }
    }
    (void)error;
    return true;
}
