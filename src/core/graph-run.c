/* Running a graph: the layout of the persistent storages, allocation on a backend,
 * initialisation of parameters, host copies and the step itself. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/cpu/kernels.h"
#include "core/graph-internal.h"
#include "core/philox.h"

static size_t align_up(size_t n)
{
    return (n + RT_ALIGN - 1) / RT_ALIGN * RT_ALIGN;
}

/* stable: group first, then parameters with a gradient before those without */
static int compare_params(gconstpointer a, gconstpointer b)
{
    const rt_tensor_impl *x = *(rt_tensor_impl *const *)a, *y = *(rt_tensor_impl *const *)b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    bool gx = x->grad != NULL, gy = y->grad != NULL;
    if (gx != gy)
        return gx ? -1 : 1;
    return x->pub.id < y->pub.id ? -1 : x->pub.id > y->pub.id;
}

static size_t place(GPtrArray *tensors, rt_storage storage, size_t offset)
{
    for (guint i = 0; i < tensors->len; i++) {
        rt_tensor *t = g_ptr_array_index(tensors, i);
        offset = align_up(offset);
        t->storage = storage;
        t->offset = offset;
        RT_IMPL(t)->fixed = true;
        offset += rt_tensor_nbytes(t);
    }
    return align_up(offset);
}

/* a sharing graph's parameters and buffers sit where the source put them */
static bool layout_shared(rt_graph *g, GError **error)
{
    rt_graph *src = g->share_src;
    if (!src->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the graph whose weights this one shares is not planned yet: plan it first");
        return false;
    }
    GPtrArray *lists[2] = {g->params, g->buffers};
    for (int l = 0; l < 2; l++)
        for (guint i = 0; i < lists[l]->len; i++) {
            rt_tensor *t = g_ptr_array_index(lists[l], i), *s = RT_IMPL(t)->shared;
            t->storage = s->storage;
            t->offset = s->offset;
            RT_IMPL(t)->fixed = true;
        }
    g->storage_size[RT_STORAGE_PARAM] = src->storage_size[RT_STORAGE_PARAM];
    g->storage_size[RT_STORAGE_BUFFER] = src->storage_size[RT_STORAGE_BUFFER];
    g->layout_done = true;
    return true;
}

bool rt_graph_layout(rt_graph *g, GError **error)
{
    if (g->layout_done)
        return true;
    if (!rt_graph_check(g, error))
        return false;
    if (g->share_src)
        return layout_shared(g, error);
    GPtrArray *sorted = g_ptr_array_copy(g->params, NULL, NULL);
    g_ptr_array_sort(sorted, compare_params);
    size_t size = place(sorted, RT_STORAGE_PARAM, 0);
    g_ptr_array_unref(sorted);
    g->storage_size[RT_STORAGE_PARAM] = g->storage_size[RT_STORAGE_GRAD] = size;
    /* moments only when an optimizer will need them; set again by rt_graph_add_adamw */
    for (guint i = 0; i < g->params->len; i++) {
        rt_tensor *p = g_ptr_array_index(g->params, i);
        rt_tensor *grad = RT_IMPL(p)->grad;
        if (grad) {
            grad->storage = RT_STORAGE_GRAD;
            grad->offset = p->offset;
        }
    }
    g->layout_done = true;
    return true;
}

/* Buffers, inputs and constants: called by rt_graph_plan once nothing can be added. */
static void layout_rest(rt_graph *g)
{
    if (!g->share_src)
        g->storage_size[RT_STORAGE_BUFFER] = place(g->buffers, RT_STORAGE_BUFFER, 0);
    g->storage_size[RT_STORAGE_INPUT] = place(g->inputs, RT_STORAGE_INPUT, 0);
    GPtrArray *consts = g_ptr_array_new();
    for (guint i = 0; i < g->tensors->len; i++) {
        rt_tensor *t = g_ptr_array_index(g->tensors, i);
        if (t->flags & RT_TENSOR_CONST)
            g_ptr_array_add(consts, t);
    }
    g->storage_size[RT_STORAGE_CONST] = place(consts, RT_STORAGE_CONST, 0);
    g_ptr_array_unref(consts);
    if (g->optimizer_done)
        g->storage_size[RT_STORAGE_ADAM_M] = g->storage_size[RT_STORAGE_ADAM_V] =
            g->storage_size[RT_STORAGE_PARAM];
    if (!g->backward_done)
        g->storage_size[RT_STORAGE_GRAD] = 0;
}

/* FNV-1a: the stream of a parameter's initialiser depends on its name, not on its order. */
static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static void store_value(rt_dtype dtype, void *dst, int64_t i, double v)
{
    switch (dtype) {
    case RT_F32: ((float *)dst)[i] = (float)v; break;
    case RT_F64: ((double *)dst)[i] = v; break;
    case RT_BF16: { float f = (float)v; rt_cpu_f32_to_bf16(&f, (uint16_t *)dst + i, 1); break; }
    case RT_F16: { float f = (float)v; rt_cpu_f32_to_f16(&f, (uint16_t *)dst + i, 1); break; }
    case RT_I64: ((int64_t *)dst)[i] = (int64_t)v; break;
    case RT_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    case RT_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
    case RT_BOOL: ((uint8_t *)dst)[i] = v != 0; break;
    default: break;
    }
}

/* Fills a parameter or buffer from its initialiser. Random streams: key = init seed, counter =
 * (element / 4, name hash, 0xffffffff, 0), disjoint from the training streams' node ids. */
static gboolean init_tensor(rt_graph *g, rt_tensor *t, GError **error)
{
    rt_init init = RT_IMPL(t)->init;
    int64_t n = rt_tensor_numel(t);
    size_t bytes = rt_tensor_nbytes(t);
    if (init.kind == RT_INIT_CONSTANT && init.a == 0.0)
        return TRUE; /* storages start zeroed */
    if (init.kind == RT_INIT_DATA)
        return g->backend->copy_to_device(g->dev, &g->buf[t->storage], t->offset, init.data, bytes,
                                          error);
    void *host = g_malloc(bytes);
    uint32_t h = name_hash(t->name ? t->name : "");
    uint32_t k0 = (uint32_t)g->init_seed, k1 = (uint32_t)(g->init_seed >> 32);
    for (int64_t q = 0; q * 4 < n; q++) {
        uint32_t w[4];
        double v[4];
        if (init.kind != RT_INIT_CONSTANT)
            rt_philox_block((uint32_t)q, h, 0xffffffffu, (uint32_t)((uint64_t)q >> 32), k0, k1, w);
        for (int j = 0; j < 4; j++) {
            if (init.kind == RT_INIT_CONSTANT)
                v[j] = init.a;
            else if (init.kind == RT_INIT_UNIFORM)
                v[j] = init.a + (init.b - init.a) * rt_rng_unit(w[j]);
        }
        if (init.kind == RT_INIT_NORMAL) {
            rt_rng_normal2(w[0], w[1], &v[0], &v[1]);
            rt_rng_normal2(w[2], w[3], &v[2], &v[3]);
            for (int j = 0; j < 4; j++)
                v[j] = init.a + init.b * v[j];
        }
        for (int j = 0; j < 4 && q * 4 + j < n; j++)
            store_value(t->dtype, host, q * 4 + j, v[j]);
    }
    gboolean ok = g->backend->copy_to_device(g->dev, &g->buf[t->storage], t->offset, host, bytes,
                                             error);
    g_free(host);
    return ok;
}

static gboolean allocate(rt_graph *g, GError **error)
{
    for (int s = 1; s < RT_STORAGE_COUNT; s++) {
        size_t size = g->storage_size[s];
        if (rt_graph_borrows(g, (rt_storage)s)) {
            g->buf[s] = g->share_src->buf[s];
            continue;
        }
        if (!size)
            continue;
        if (!g->backend->buffer_alloc(g->dev, size, &g->buf[s], error))
            return FALSE;
        if (!g->backend->memset_device(g->dev, &g->buf[s], 0, 0, size, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean fill_initial(rt_graph *g, GError **error)
{
    GPtrArray *lists[2] = {g->params, g->buffers};
    for (int l = 0; l < 2 && !g->share_src; l++)
        for (guint i = 0; i < lists[l]->len; i++)
            if (!init_tensor(g, g_ptr_array_index(lists[l], i), error))
                return FALSE;
    for (guint i = 0; i < g->tensors->len; i++) {
        rt_tensor *t = g_ptr_array_index(g->tensors, i);
        if ((t->flags & RT_TENSOR_CONST) &&
            !g->backend->copy_to_device(g->dev, &g->buf[t->storage], t->offset,
                                        RT_IMPL(t)->const_data, rt_tensor_nbytes(t), error))
            return FALSE;
    }
    return rt_optim_write_initial_state(g, error);
}

/* Whether a backend built against an older header has the slot ending at byte end. */
static bool has_slot(const rt_backend_i *backend, size_t end)
{
    return backend->struct_size >= end;
}

static size_t workspace_of(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    (void)node;
    return 0;
}

gboolean rt_graph_plan(rt_graph *g, const rt_backend_i *backend, rt_backend_device *dev,
                       GError **error)
{
    g_return_val_if_fail(backend && dev, FALSE);
    if (!rt_graph_check(g, error))
        return FALSE;
    if (g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_plan: the graph is already planned; build a new graph for another "
                    "backend or batch shape");
        return FALSE;
    }
    if (g->backend) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_plan: an earlier rt_graph_plan of this graph failed after "
                    "allocating its memory; build a new graph");
        return FALSE;
    }
    if (backend->struct_size < offsetof(rt_backend_i, node_workspace_size) ||
        !backend->graph_compute) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "the %s backend cannot execute graphs (its interface has no graph_compute)",
                    backend->device_type ? backend->device_type : "(unnamed)");
        return FALSE;
    }
    if (!rt_graph_layout(g, error))
        return FALSE;
    if (g->amp_state && !g->optimizer_done) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_plan: loss scaling needs the optimizer (rt_graph_add_adamw), which "
                    "unscales the gradients");
        return FALSE;
    }
    if (g->share_src && (g->share_src->backend != backend || g->share_src->dev != dev)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_plan: this graph shares weights with a graph planned on another "
                    "backend or device; plan both on the same one");
        return FALSE;
    }
    layout_rest(g);
    size_t (*ws)(rt_backend_device *, const rt_node *) = workspace_of;
    if (backend->struct_size >= offsetof(rt_backend_i, node_workspace_size) +
                                    sizeof backend->node_workspace_size &&
        backend->node_workspace_size)
        ws = backend->node_workspace_size;
    if (!rt_graph_plan_memory(g, ws, dev, error))
        return FALSE;
    if (backend->supports_op)
        for (guint i = 0; i < g->exec->len; i++) {
            const rt_node *node = g_ptr_array_index(g->exec, i);
            if (!backend->supports_op(dev, node)) {
                g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                            "the %s backend cannot run node %d (op %s): use another device "
                            "(--policy.device)", backend->device_type, node->id,
                            rt_op_name((rt_op)node->op));
                return FALSE;
            }
        }
    g->backend = backend;
    g->dev = dev;
    if (!allocate(g, error))
        return FALSE;
    g->planned = true;
    if (!fill_initial(g, error))
        return FALSE;
    if (has_slot(backend, offsetof(rt_backend_i, graph_release) + sizeof backend->graph_release) &&
        backend->graph_prepare && backend->graph_release) {
        if (!backend->graph_prepare(dev, g, error)) {
            g->planned = false; /* rt_graph_compute refuses; rt_graph_free frees the storages */
            return FALSE;
        }
        g->prepared = true;
    }
    return TRUE;
}

gboolean rt_graph_compute(rt_graph *g, GError **error)
{
    if (!g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_compute: the graph is not planned; call rt_graph_plan first");
        return FALSE;
    }
    if (g->backend->graph_compute(g->dev, g, error))
        return TRUE;
    /* a failed collective: its own error (a network error naming the peer), not the backend's
     * wrapper around it */
    GError *collective = rt_graph_take_collective_error(g);
    if (collective) {
        if (error)
            g_clear_error(error);
        g_propagate_error(error, collective);
    }
    return FALSE;
}

/* "'name' (f32[2,3])" or "an unnamed f32[2,3]" */
static const char *tensor_label(const rt_tensor *t, char *buf, size_t size)
{
    char d[80];
    rt_tensor_describe(t, d, sizeof d);
    if (t->name)
        snprintf(buf, size, "'%s' (%s)", t->name, d);
    else
        snprintf(buf, size, "an unnamed %s", d);
    return buf;
}

static gboolean check_io(rt_graph *g, const rt_tensor *t, size_t nbytes, const char *what,
                         GError **error)
{
    char label[200];
    if (!g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: the graph is not planned; call rt_graph_plan first", what);
        return FALSE;
    }
    if (!t) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: the tensor is NULL", what);
        return FALSE;
    }
    if (t->storage == RT_STORAGE_NONE || !rt_tensor_is_contiguous(t)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: tensor %s has no memory of its own the host can access (nothing uses it, "
                    "so it was pruned, or it is a strided view: name it with rt_graph_output)",
                    what, tensor_label(t, label, sizeof label));
        return FALSE;
    }
    if (nbytes != rt_tensor_nbytes(t)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: tensor %s has %zu bytes, but %zu bytes were given", what,
                    tensor_label(t, label, sizeof label), rt_tensor_nbytes(t), nbytes);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_graph_write(rt_graph *g, const rt_tensor *t, const void *data, size_t nbytes,
                        GError **error)
{
    if (!check_io(g, t, nbytes, "rt_graph_write", error))
        return FALSE;
    return g->backend->copy_to_device(g->dev, &g->buf[t->storage], t->offset, data, nbytes, error);
}

gboolean rt_graph_read(rt_graph *g, const rt_tensor *t, void *data, size_t nbytes, GError **error)
{
    if (!check_io(g, t, nbytes, "rt_graph_read", error))
        return FALSE;
    return g->backend->copy_to_host(g->dev, data, &g->buf[t->storage], t->offset, nbytes, error);
}

gboolean rt_graph_read_scalar(rt_graph *g, const rt_tensor *t, double *value, GError **error)
{
    if (t && (rt_tensor_numel(t) != 1 || (t->dtype != RT_F32 && t->dtype != RT_F64))) {
        char label[200];
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_read_scalar: tensor %s is not one f32 or f64 element",
                    tensor_label(t, label, sizeof label));
        return FALSE;
    }
    union {
        float f;
        double d;
    } v;
    if (!rt_graph_read(g, t, &v, t ? rt_tensor_nbytes(t) : 0, error))
        return FALSE;
    *value = t->dtype == RT_F32 ? v.f : v.d;
    return TRUE;
}

gboolean rt_graph_set_rng(rt_graph *g, uint64_t seed, uint64_t step, int64_t sample_offset,
                          GError **error)
{
    if (!g->planned) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_set_rng: the graph is not planned; call rt_graph_plan first");
        return FALSE;
    }
    if (sample_offset < 0 || sample_offset > (int64_t)UINT32_MAX) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "rt_graph_set_rng: sample offset %" G_GINT64_FORMAT " is outside 0..2^32-1",
                    sample_offset);
        return FALSE;
    }
    if (!g->rng)
        return TRUE; /* nothing random in this graph */
    int64_t state[4] = {(int64_t)seed, (int64_t)step, sample_offset, 0};
    return rt_graph_write(g, g->rng, state, sizeof state, error);
}

int rt_graph_n_exec_nodes(const rt_graph *g)
{
    return g->exec ? (int)g->exec->len : 0;
}

const rt_node *rt_graph_exec_node(const rt_graph *g, int i)
{
    g_return_val_if_fail(g->exec && i >= 0 && (guint)i < g->exec->len, NULL);
    return g_ptr_array_index(g->exec, i);
}

size_t rt_graph_storage_size(const rt_graph *g, rt_storage storage)
{
    return (unsigned)storage < RT_STORAGE_COUNT ? g->storage_size[storage] : 0;
}

const rt_backend_buffer *rt_graph_storage_buffer(const rt_graph *g, rt_storage storage)
{
    g_return_val_if_fail((unsigned)storage < RT_STORAGE_COUNT, NULL);
    return &g->buf[storage];
}

void *rt_graph_tensor_address(const rt_graph *g, const rt_tensor *t)
{
    if (!g->planned || t->storage == RT_STORAGE_NONE)
        return NULL;
    return (char *)g->buf[t->storage].ptr + t->offset;
}
