/* Weights from safetensors files into a planned graph, by name. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/policy.h>

static char *describe_shape(int rank, const int64_t *shape)
{
    GString *s = g_string_new("[");
    for (int i = 0; i < rank; i++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "", shape[i]);
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

gboolean rt_policy_load_tensor(rt_graph *g, const rt_tensor *t, const rt_safetensors *st,
                               const rt_st_tensor *src, GError **error)
{
    g_return_val_if_fail(g && t && st && src, FALSE);
    const char *file = rt_safetensors_path(st);
    if (!(t->flags & (RT_TENSOR_PARAM | RT_TENSOR_BUFFER)) || (t->dtype != RT_F32 && t->dtype != RT_F64)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "'%s' is not an f32 or f64 parameter or buffer of the graph", t->name);
        return FALSE;
    }
    gboolean same = src->rank == t->ndim;
    for (int i = 0; same && i < t->ndim; i++)
        same = src->shape[i] == t->shape[i];
    if (!same) {
        g_autofree char *found = describe_shape(src->rank, src->shape);
        g_autofree char *want = describe_shape(t->ndim, t->shape);
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: tensor '%s' has shape %s, but the policy's %s '%s' is %s: the file was "
                    "made for another configuration",
                    file, src->name, found, t->flags & RT_TENSOR_PARAM ? "parameter" : "buffer", t->name,
                    want);
        return FALSE;
    }
    if (src->dtype != RT_ST_F32 && src->dtype != RT_ST_F16 && src->dtype != RT_ST_BF16 &&
        src->dtype != RT_ST_F64) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: tensor '%s' is %s; the policy's '%s' needs floating-point values (F32, F16, "
                    "BF16 or F64)",
                    file, src->name, rt_st_dtype_name(src->dtype), t->name);
        return FALSE;
    }
    size_t n = (size_t)src->n_elements;
    gboolean ok;
    if (t->dtype == RT_F64) {
        double *host = g_new(double, MAX(n, 1));
        if (src->dtype == RT_ST_F64) {
            memcpy(host, src->data, n * sizeof(double));
            ok = TRUE;
        } else {
            float *f = g_new(float, MAX(n, 1));
            ok = rt_safetensors_copy_f32(st, src, f, n, error);
            for (size_t i = 0; ok && i < n; i++)
                host[i] = f[i];
            g_free(f);
        }
        ok = ok && rt_graph_write(g, t, host, n * sizeof(double), error);
        g_free(host);
    } else {
        float *host = g_new(float, MAX(n, 1));
        ok = rt_safetensors_copy_f32(st, src, host, n, error) &&
             rt_graph_write(g, t, host, n * sizeof(float), error);
        g_free(host);
    }
    return ok;
}

gboolean rt_policy_load_tensors(rt_graph *g, const rt_safetensors *st, const char *graph_prefix,
                                const char *file_prefix, uint32_t flags, int *n_loaded, GError **error)
{
    g_return_val_if_fail(g && st && graph_prefix && file_prefix, FALSE);
    const char *file = rt_safetensors_path(st);
    GHashTable *used = g_hash_table_new(g_str_hash, g_str_equal);
    int loaded = 0;
    gboolean ok = TRUE;
    for (int list = 0; list < 2 && ok; list++) {
        int n = list == 0 ? rt_graph_n_params(g) : rt_graph_n_buffers(g);
        for (int i = 0; i < n && ok; i++) {
            rt_tensor *t = list == 0 ? rt_graph_param(g, i) : rt_graph_buffer(g, i);
            if (!g_str_has_prefix(t->name, graph_prefix))
                continue;
            g_autofree char *key = g_strconcat(file_prefix, t->name + strlen(graph_prefix), NULL);
            const rt_st_tensor *src = rt_safetensors_find(st, key);
            if (!src) {
                g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                            "%s: no tensor '%s', which the policy's %s '%s' needs: the file does "
                            "not hold the weights of this configuration",
                            file, key, list == 0 ? "parameter" : "buffer", t->name);
                ok = FALSE;
                break;
            }
            ok = rt_policy_load_tensor(g, t, st, src, error);
            if (ok) {
                g_hash_table_add(used, (gpointer)src->name);
                loaded++;
            }
        }
    }
    if (ok && (flags & RT_POLICY_LOAD_STRICT)) {
        GString *extra = NULL;
        size_t n_extra = 0;
        for (size_t i = 0; i < rt_safetensors_n_tensors(st); i++) {
            const rt_st_tensor *src = rt_safetensors_tensor_at(st, i);
            if (!g_str_has_prefix(src->name, file_prefix) || g_hash_table_contains(used, src->name))
                continue;
            if (!extra)
                extra = g_string_new(NULL);
            if (n_extra < 5)
                g_string_append_printf(extra, "%s'%s'", n_extra ? ", " : "", src->name);
            n_extra++;
        }
        if (extra) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: %zu tensor%s that the policy does not have: %s%s (the file was made "
                        "for another configuration)",
                        file, n_extra, n_extra == 1 ? "" : "s", extra->str, n_extra > 5 ? ", ..." : "");
            g_string_free(extra, TRUE);
            ok = FALSE;
        }
    }
    g_hash_table_unref(used);
    if (n_loaded)
        *n_loaded = loaded;
    return ok;
}
