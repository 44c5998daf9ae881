/* Graph construction: leaves (parameters, buffers, inputs, constants), nodes, the sticky
 * construction error, the loss and named outputs. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/graph-internal.h"

static void tensor_impl_free(gpointer p)
{
    rt_tensor_impl *t = p;
    g_free(t->const_data);
    g_free(t->init_data);
    g_free(t);
}

rt_graph *rt_graph_new(uint32_t flags)
{
    rt_graph *g = g_new0(rt_graph, 1);
    g->flags = flags;
    g->compute_dtype = RT_F32;
    g->tensors = g_ptr_array_new_with_free_func(tensor_impl_free);
    g->nodes = g_ptr_array_new_with_free_func(g_free);
    g->params = g_ptr_array_new();
    g->buffers = g_ptr_array_new();
    g->inputs = g_ptr_array_new();
    g->outputs = g_ptr_array_new();
    g->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    g->names = g_string_chunk_new(4096);
    g->max_grad_norm = -1;
    return g;
}

rt_graph *rt_graph_new_sharing(rt_graph *source, uint32_t flags)
{
    g_return_val_if_fail(source != NULL, NULL);
    rt_graph *g = rt_graph_new(flags);
    g->share_src = source;
    return g;
}

/* the storages a sharing graph borrows from its source */
bool rt_graph_borrows(const rt_graph *g, rt_storage s)
{
    return g->share_src && (s == RT_STORAGE_PARAM || s == RT_STORAGE_BUFFER);
}

void rt_graph_free(rt_graph *g)
{
    if (!g)
        return;
    if (g->prepared)
        g->backend->graph_release(g->dev, g);
    if (g->backend)
        for (int s = 0; s < RT_STORAGE_COUNT; s++)
            if (g->buf[s].size && !rt_graph_borrows(g, (rt_storage)s))
                g->backend->buffer_free(g->dev, &g->buf[s]);
    if (g->exec)
        g_ptr_array_unref(g->exec);
    g_ptr_array_unref(g->tensors);
    g_ptr_array_unref(g->nodes);
    g_ptr_array_unref(g->params);
    g_ptr_array_unref(g->buffers);
    g_ptr_array_unref(g->inputs);
    g_ptr_array_unref(g->outputs);
    g_hash_table_unref(g->by_name);
    g_string_chunk_free(g->names);
    g_free(g->groups);
    g_clear_error(&g->error);
    g_clear_error(&g->collective_error);
    g_free(g);
}

gboolean rt_graph_is_training(const rt_graph *g)
{
    return (g->flags & RT_GRAPH_TRAIN) != 0;
}

uint32_t rt_graph_flags(const rt_graph *g)
{
    return g->flags;
}

void rt_graph_set_compute_dtype(rt_graph *g, rt_dtype dtype)
{
    g_return_if_fail(dtype == RT_F32 || dtype == RT_BF16 || dtype == RT_F16);
    g->compute_dtype = dtype;
}

rt_dtype rt_graph_compute_dtype(const rt_graph *g)
{
    return g->compute_dtype;
}

const GError *rt_graph_error(const rt_graph *g)
{
    return g->error;
}

gboolean rt_graph_check(const rt_graph *g, GError **error)
{
    if (g->error) {
        g_propagate_error(error, g_error_copy(g->error));
        return FALSE;
    }
    return TRUE;
}

void rt_graph_fail(rt_graph *g, const rt_node *node, const char *fmt, ...)
{
    if (g->error)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (node)
        g->error = g_error_new(RT_ERROR, RT_ERROR_INVALID_ARG, "op %s: %s",
                               rt_op_table[node->op].name, msg);
    else
        g->error = g_error_new_literal(RT_ERROR, RT_ERROR_INVALID_ARG, msg);
    g_free(msg);
}

static bool check_shape(rt_graph *g, const char *what, const char *name, int ndim,
                        const int64_t *shape)
{
    if (ndim < 0 || ndim > RT_MAX_DIMS) {
        rt_graph_fail(g, NULL, "%s '%s': %d dimensions; robotrain tensors have 0 to %d", what,
                      name ? name : "(unnamed)", ndim, RT_MAX_DIMS);
        return false;
    }
    for (int i = 0; i < ndim; i++)
        if (shape[i] <= 0 || shape[i] > ((int64_t)1 << 40)) {
            rt_graph_fail(g, NULL, "%s '%s': size %" G_GINT64_FORMAT " of axis %d is not a positive "
                          "size", what, name ? name : "(unnamed)", shape[i], i);
            return false;
        }
    return true;
}

static rt_tensor_impl *tensor_alloc(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape)
{
    rt_tensor_impl *t = g_new0(rt_tensor_impl, 1);
    t->pub.dtype = dtype;
    t->pub.ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->pub.shape[i] = shape[i];
    rt_shape_strides(ndim, shape, t->pub.stride);
    t->pub.id = (int32_t)g->tensors->len;
    t->pub.batch_axis = -1;
    t->pub.out_index = -1;
    g_ptr_array_add(g->tensors, t);
    return t;
}

static bool register_name(rt_graph *g, rt_tensor *t, const char *name, const char *what)
{
    if (!name || !*name) {
        rt_graph_fail(g, NULL, "a %s needs a name", what);
        return false;
    }
    if (g_hash_table_contains(g->by_name, name)) {
        rt_graph_fail(g, NULL, "the name '%s' is used twice in one graph: %s names must be "
                      "unique", name, what);
        return false;
    }
    t->name = g_string_chunk_insert(g->names, name);
    g_hash_table_insert(g->by_name, (gpointer)t->name, t);
    return true;
}

rt_tensor *rt_tensor_new_leaf(rt_graph *g, const char *name, rt_dtype dtype, int ndim,
                              const int64_t *shape, uint32_t flags)
{
    if (g->error)
        return NULL;
    if ((unsigned)dtype >= RT_DTYPE_COUNT) {
        rt_graph_fail(g, NULL, "tensor '%s': dtype %d is not an rt_dtype", name ? name : "",
                      (int)dtype);
        return NULL;
    }
    if (!check_shape(g, "tensor", name, ndim, shape))
        return NULL;
    if (g->layout_done && (flags & (RT_TENSOR_PARAM | RT_TENSOR_BUFFER | RT_TENSOR_INPUT |
                                    RT_TENSOR_CONST))) {
        rt_graph_fail(g, NULL, "tensor '%s' is created after the graph's memory layout was "
                      "fixed: create parameters, buffers, inputs and constants before "
                      "rt_graph_add_adamw and rt_graph_plan", name ? name : "(unnamed)");
        return NULL;
    }
    rt_tensor_impl *t = tensor_alloc(g, dtype, ndim, shape);
    t->pub.flags = flags;
    if (name && !register_name(g, &t->pub, name, "tensor"))
        return NULL;
    return &t->pub;
}

/* In a sharing graph, a parameter or buffer is the source's tensor of that name. */
static bool link_shared(rt_graph *g, rt_tensor *t, uint32_t kind, const char *what)
{
    if (!g->share_src)
        return true;
    rt_tensor *src = rt_graph_find(g->share_src, t->name);
    char a[80], b[80];
    if (!src || !(src->flags & kind)) {
        rt_graph_fail(g, NULL, "%s '%s' is not a %s of the graph this one shares weights with",
                      what, t->name, what);
        return false;
    }
    if (src->dtype != t->dtype || !rt_shape_equal(src, t)) {
        rt_graph_fail(g, NULL, "%s '%s' is %s here but %s in the graph this one shares weights "
                      "with", what, t->name, rt_tensor_describe(t, a, sizeof a),
                      rt_tensor_describe(src, b, sizeof b));
        return false;
    }
    RT_IMPL(t)->shared = src;
    return true;
}

/* Keeps the initialiser; RT_INIT_DATA values are copied now. */
static bool set_init(rt_graph *g, rt_tensor *t, rt_init init, const char *what)
{
    if ((unsigned)init.kind > RT_INIT_DATA) {
        rt_graph_fail(g, NULL, "%s '%s': initialiser kind %d is not an rt_init_kind", what,
                      t->name, (int)init.kind);
        return false;
    }
    if (init.kind == RT_INIT_DATA) {
        if (!init.data) {
            rt_graph_fail(g, NULL, "%s '%s': rt_init_data needs the values (data is NULL)", what,
                          t->name);
            return false;
        }
        RT_IMPL(t)->init_data = g_memdup2(init.data, rt_tensor_nbytes(t));
        init.data = RT_IMPL(t)->init_data;
    }
    RT_IMPL(t)->init = init;
    return true;
}

static bool leaf_allowed(rt_graph *g, const char *what, const char *name)
{
    if (g->backward_done) {
        rt_graph_fail(g, NULL, "%s '%s' is created after rt_graph_backward: declare every %s "
                      "while building the forward pass", what, name ? name : "", what);
        return false;
    }
    return true;
}

rt_tensor *rt_param(rt_graph *g, const char *name, rt_dtype dtype, int ndim, const int64_t *shape,
                    rt_init init)
{
    if (g->error || !leaf_allowed(g, "parameter", name))
        return NULL;
    if (dtype != RT_F32 && dtype != RT_F64) {
        rt_graph_fail(g, NULL, "parameter '%s' has dtype %s: trainable parameters are f32 (or "
                      "f64); mixed precision rounds them inside the ops", name ? name : "",
                      rt_dtype_name(dtype) ? rt_dtype_name(dtype) : "?");
        return NULL;
    }
    if (g->params->len > 0) {
        rt_tensor *first = g_ptr_array_index(g->params, 0);
        if (first->dtype != dtype) {
            rt_graph_fail(g, NULL, "parameter '%s' is %s but '%s' is %s: the parameters of a "
                          "graph share one dtype (one blob)", name ? name : "",
                          rt_dtype_name(dtype), first->name, rt_dtype_name(first->dtype));
            return NULL;
        }
    }
    if (!name) {
        rt_graph_fail(g, NULL, "a parameter needs a name (its state-dict key)");
        return NULL;
    }
    rt_tensor *t = rt_tensor_new_leaf(g, name, dtype, ndim, shape, RT_TENSOR_PARAM);
    if (!t || !link_shared(g, t, RT_TENSOR_PARAM, "parameter") ||
        !set_init(g, t, init, "parameter"))
        return NULL;
    g_ptr_array_add(g->params, t);
    return t;
}

rt_tensor *rt_buffer(rt_graph *g, const char *name, rt_dtype dtype, int ndim, const int64_t *shape,
                     rt_init init)
{
    if (g->error || !leaf_allowed(g, "buffer", name))
        return NULL;
    if (!name) {
        rt_graph_fail(g, NULL, "a buffer needs a name (its state-dict key)");
        return NULL;
    }
    rt_tensor *t = rt_tensor_new_leaf(g, name, dtype, ndim, shape, RT_TENSOR_BUFFER);
    if (!t || !link_shared(g, t, RT_TENSOR_BUFFER, "buffer") || !set_init(g, t, init, "buffer"))
        return NULL;
    g_ptr_array_add(g->buffers, t);
    return t;
}

rt_tensor *rt_input(rt_graph *g, const char *name, rt_dtype dtype, int ndim, const int64_t *shape,
                    int batch_axis)
{
    if (g->error || !leaf_allowed(g, "input", name))
        return NULL;
    if (!name) {
        rt_graph_fail(g, NULL, "an input needs a name (the batch key it is filled from)");
        return NULL;
    }
    if (batch_axis < -1 || batch_axis >= ndim) {
        rt_graph_fail(g, NULL, "input '%s': batch_axis %d is not -1 or one of its %d axes",
                      name, batch_axis, ndim);
        return NULL;
    }
    rt_tensor *t = rt_tensor_new_leaf(g, name, dtype, ndim, shape, RT_TENSOR_INPUT);
    if (!t)
        return NULL;
    t->batch_axis = batch_axis;
    g_ptr_array_add(g->inputs, t);
    return t;
}

rt_tensor *rt_const(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape, const void *data)
{
    if (g->error)
        return NULL;
    if (!data) {
        rt_graph_fail(g, NULL, "rt_const: data is NULL");
        return NULL;
    }
    rt_tensor *t = rt_tensor_new_leaf(g, NULL, dtype, ndim, shape, RT_TENSOR_CONST);
    if (!t)
        return NULL;
    RT_IMPL(t)->const_data = g_memdup2(data, rt_tensor_nbytes(t));
    return t;
}

rt_tensor *rt_graph_rng_tensor(rt_graph *g)
{
    if (!g->rng) {
        int64_t shape[1] = {4};
        g->rng = rt_tensor_new_leaf(g, NULL, RT_I64, 1, shape, RT_TENSOR_INPUT);
        if (g->rng)
            g_ptr_array_add(g->inputs, g->rng);
    }
    return g->rng;
}

/* Is t a tensor of this graph? Catches tensors passed across graphs. */
static bool owned(const rt_graph *g, const rt_tensor *t)
{
    return t->id >= 0 && (guint)t->id < g->tensors->len && g_ptr_array_index(g->tensors, t->id) == t;
}

rt_node *rt_node_make(rt_graph *g, rt_op op, rt_tensor *const *src, int n_src, const int64_t *ip,
                      int n_ip, const double *fp, int n_fp)
{
    if (g->error)
        return NULL;
    g_return_val_if_fail((unsigned)op < RT_OP_COUNT && n_src <= RT_MAX_SRC &&
                         n_ip <= RT_MAX_IPARAMS && n_fp <= RT_MAX_FPARAMS, NULL);
    const rt_op_row *row = &rt_op_table[op];
    rt_tensor *in[RT_MAX_SRC] = {0};
    for (int i = 0; i < n_src; i++) {
        in[i] = src[i];
        if (!in[i])
            continue;
        if (!owned(g, in[i])) {
            rt_graph_fail(g, NULL, "op %s: input %d belongs to another graph", row->name, i);
            return NULL;
        }
        if (!(row->flags & RT_OPF_STRIDED) && !rt_tensor_is_contiguous(in[i])) {
            in[i] = rt_contiguous(g, in[i]);
            if (!in[i])
                return NULL;
        }
    }
    rt_node *node = g_new0(rt_node, 1);
    node->op = op;
    node->id = (int32_t)g->nodes->len;
    node->n_src = n_src;
    memcpy(node->src, in, sizeof in);
    for (int i = 0; i < n_ip; i++)
        node->ip[i] = ip[i];
    for (int i = 0; i < n_fp; i++)
        node->fp[i] = fp[i];
    g_ptr_array_add(g->nodes, node);
    if (!row->infer(g, node)) {
        if (!g->error)
            rt_graph_fail(g, node, "bad arguments");
        return NULL;
    }
    return node;
}

rt_tensor *rt_node_make1(rt_graph *g, rt_op op, rt_tensor *const *src, int n_src, const int64_t *ip,
                         int n_ip, const double *fp, int n_fp)
{
    rt_node *node = rt_node_make(g, op, src, n_src, ip, n_ip, fp, n_fp);
    return node ? node->out[0] : NULL;
}

rt_tensor *rt_node_output(rt_graph *g, rt_node *node, int k, rt_dtype dtype, int ndim,
                          const int64_t *shape)
{
    if (!check_shape(g, "output of", rt_op_table[node->op].name, ndim, shape))
        return NULL;
    rt_tensor_impl *t = tensor_alloc(g, dtype, ndim, shape);
    t->pub.node = node;
    t->pub.out_index = k;
    node->out[k] = &t->pub;
    if (node->n_out < k + 1)
        node->n_out = k + 1;
    return &t->pub;
}

rt_tensor *rt_node_view(rt_graph *g, rt_node *node, rt_tensor *base, int ndim,
                        const int64_t *shape, const int64_t *stride, int64_t elem_offset)
{
    rt_tensor *t = rt_node_output(g, node, 0, base->dtype, ndim, shape);
    if (!t)
        return NULL;
    for (int i = 0; i < ndim; i++)
        t->stride[i] = stride[i];
    rt_tensor *root = base->view_of ? base->view_of : base;
    t->view_of = root;
    t->view_offset = (base->view_of ? base->view_offset : 0) +
                     (size_t)elem_offset * rt_dtype_size(base->dtype);
    return t;
}

void rt_set_loss(rt_graph *g, rt_tensor *loss)
{
    if (g->error)
        return;
    if (!loss) {
        rt_graph_fail(g, NULL, "rt_set_loss: the loss is NULL (an op building it failed)");
        return;
    }
    if (rt_tensor_numel(loss) != 1 || !rt_dtype_is_float(loss->dtype)) {
        char d[64];
        rt_graph_fail(g, NULL, "rt_set_loss: the loss is %s; it must be a float scalar",
                      rt_tensor_describe(loss, d, sizeof d));
        return;
    }
    if (g->backward_done) {
        rt_graph_fail(g, NULL, "rt_set_loss after rt_graph_backward: set the loss first");
        return;
    }
    rt_tensor *total = loss;
    if (g->loss) {
        rt_tensor *prev = g->loss;
        total = rt_add(g, rt_reshape(g, prev, 0, NULL), rt_reshape(g, loss, 0, NULL));
        if (!total)
            return;
        prev->flags &= ~(uint32_t)RT_TENSOR_LOSS;
    }
    total->flags |= RT_TENSOR_LOSS | RT_TENSOR_OUTPUT;
    g->loss = total;
}

rt_tensor *rt_graph_loss(const rt_graph *g)
{
    return g->loss;
}

void rt_graph_output(rt_graph *g, const char *name, rt_tensor *t)
{
    if (g->error)
        return;
    if (!t) {
        rt_graph_fail(g, NULL, "output '%s' is NULL (an op building it failed)", name ? name : "");
        return;
    }
    if (!name || !*name) {
        rt_graph_fail(g, NULL, "an output needs a name");
        return;
    }
    rt_tensor *other = g_hash_table_lookup(g->by_name, name);
    if (other == t)
        return;
    if (other) {
        rt_graph_fail(g, NULL, "the name '%s' is used twice in one graph: output names must be "
                      "unique", name);
        return;
    }
    const char *stored = g_string_chunk_insert(g->names, name);
    if (!t->name)
        t->name = stored;
    g_hash_table_insert(g->by_name, (gpointer)stored, t);
    t->flags |= RT_TENSOR_OUTPUT;
    g_ptr_array_add(g->outputs, t);
}

rt_tensor *rt_graph_find(const rt_graph *g, const char *name)
{
    return name ? g_hash_table_lookup(g->by_name, name) : NULL;
}

int rt_graph_n_params(const rt_graph *g)
{
    return (int)g->params->len;
}

rt_tensor *rt_graph_param(const rt_graph *g, int i)
{
    g_return_val_if_fail(i >= 0 && (guint)i < g->params->len, NULL);
    return g_ptr_array_index(g->params, i);
}

int rt_graph_n_buffers(const rt_graph *g)
{
    return (int)g->buffers->len;
}

rt_tensor *rt_graph_buffer(const rt_graph *g, int i)
{
    g_return_val_if_fail(i >= 0 && (guint)i < g->buffers->len, NULL);
    return g_ptr_array_index(g->buffers, i);
}

void rt_param_set_group(rt_graph *g, rt_tensor *param, int group)
{
    g_return_if_fail(param && (param->flags & RT_TENSOR_PARAM) && group >= 0);
    if (g->layout_done) {
        rt_graph_fail(g, NULL, "parameter '%s': optimizer groups are fixed once "
                      "rt_graph_add_adamw or rt_graph_plan ran", param->name);
        return;
    }
    RT_IMPL(param)->group = group;
}

int rt_param_group(const rt_tensor *param)
{
    g_return_val_if_fail(param && (param->flags & RT_TENSOR_PARAM), -1);
    return RT_IMPL(param)->group;
}

int rt_graph_set_group_by_prefix(rt_graph *g, const char *prefix, int group)
{
    int n = 0;
    for (guint i = 0; i < g->params->len; i++) {
        rt_tensor *p = g_ptr_array_index(g->params, i);
        if (g_str_has_prefix(p->name, prefix)) {
            rt_param_set_group(g, p, group);
            n++;
        }
    }
    return n;
}

void rt_graph_set_init_seed(rt_graph *g, uint64_t seed)
{
    g->init_seed = seed;
}

rt_tensor *rt_graph_grad(const rt_graph *g, const rt_tensor *param)
{
    return param ? RT_IMPL(param)->grad : NULL;
}

int rt_graph_n_tensors(const rt_graph *g)
{
    return (int)g->tensors->len;
}

rt_tensor *rt_graph_tensor(const rt_graph *g, int i)
{
    g_return_val_if_fail(i >= 0 && (guint)i < g->tensors->len, NULL);
    return g_ptr_array_index(g->tensors, i);
}
