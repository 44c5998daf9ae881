/* `robotrain policy check`: a policy against a reference run stored in a case file (see
 * policy-check.h), with the tolerances of the reference's README:
 *   forward tensors  max|c - r| <= 1e-4 max(1, max|r|)
 *   losses           |c - r| <= 1e-5 |r| + 1e-6
 *   gradients        max|c - r| <= 1e-4 max|r|  and  ||c - r||_2 <= 1e-4 ||r||_2
 *   gradient samples max|c[idx] - r| <= 1e-4 max|r|
 *   gradient stats   |d sum| <= 1e-4 l1, |d l1| <= 1e-4 l1, |d l2| <= 1e-4 l2
 *   boolean masks    exact */
#include "config.h"

#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/policy.h>

#include "core/policy-check.h"

#define CASE_FORMAT "act-golden-v1"

typedef struct check {
    const rt_policy_check_options *opt;
    rt_policy_check_result *res;
    const rt_safetensors *st;
    const char *path;
    rt_backend_device *dev; /* the CPU */
} check;

/* ---------------------------------------------------------------- reading tensors as doubles */

static double *case_values(const rt_st_tensor *t)
{
    size_t n = (size_t)t->n_elements;
    double *v = g_new(double, MAX(n, 1));
    for (size_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case RT_ST_F32: {
            float f;
            memcpy(&f, (const char *)t->data + 4 * i, 4);
            v[i] = f;
            break;
        }
        case RT_ST_F64:
            memcpy(&v[i], (const char *)t->data + 8 * i, 8);
            break;
        case RT_ST_I64: {
            int64_t x;
            memcpy(&x, (const char *)t->data + 8 * i, 8);
            v[i] = (double)x;
            break;
        }
        case RT_ST_BOOL:
        case RT_ST_U8:
            v[i] = ((const uint8_t *)t->data)[i];
            break;
        case RT_ST_I8:
            v[i] = ((const int8_t *)t->data)[i];
            break;
        default:
            v[i] = NAN;
        }
    }
    return v;
}

/* A planned tensor of g (f32, f64 or bool) as doubles; NULL with error. */
static double *graph_values(rt_graph *g, const rt_tensor *t, GError **error)
{
    size_t n = (size_t)rt_tensor_numel(t), bytes = rt_tensor_nbytes(t);
    void *raw = g_malloc(MAX(bytes, 1));
    if (!rt_graph_read(g, t, raw, bytes, error)) {
        g_free(raw);
        return NULL;
    }
    double *v = g_new(double, MAX(n, 1));
    for (size_t i = 0; i < n; i++)
        v[i] = t->dtype == RT_F32 ? ((float *)raw)[i]
               : t->dtype == RT_F64 ? ((double *)raw)[i]
                                    : (double)((uint8_t *)raw)[i];
    g_free(raw);
    return v;
}

static gboolean same_shape(const rt_tensor *t, const rt_st_tensor *r)
{
    if (rt_tensor_numel(t) != r->n_elements)
        return FALSE;
    /* scalars are stored with shape [1] */
    if (r->rank == 1 && r->shape[0] == 1 && rt_tensor_numel(t) == 1)
        return TRUE;
    if (t->ndim != r->rank)
        return FALSE;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] != r->shape[i])
            return FALSE;
    return TRUE;
}

/* ---------------------------------------------------------------- verdicts */

static void verdict(check *c, const char *name, gboolean ok, double ratio, const char *detail)
{
    c->res->n_compared++;
    if (!ok)
        c->res->n_failed++;
    if (ratio > c->res->worst || (!ok && c->res->worst < 1)) {
        c->res->worst = ok ? ratio : MAX(ratio, 1.0);
        g_strlcpy(c->res->worst_name, name, sizeof c->res->worst_name);
    }
    if (c->opt->out)
        fprintf(c->opt->out, "%-4s %-64s %s\n", ok ? "ok" : "FAIL", name, detail);
}

static void missing(check *c, const char *name, const char *why)
{
    c->res->n_missing++;
    if (c->opt->out)
        fprintf(c->opt->out, "%-4s %-64s %s\n", "MISS", name, why);
}

static double ratio_of(double err, double limit)
{
    return limit > 0 ? err / limit : err > 0 ? INFINITY : 0;
}

/* forward tensors; exact for boolean ones */
static void compare_forward(check *c, const char *name, const double *v, const double *r, size_t n,
                            gboolean exact)
{
    double err = 0, ref_max = 0;
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(v[i] - r[i]);
        if (!(d <= err))
            err = isnan(d) ? INFINITY : d;
        ref_max = MAX(ref_max, fabs(r[i]));
        wrong += v[i] != r[i];
    }
    char detail[200];
    if (exact) {
        g_snprintf(detail, sizeof detail, "%zu of %zu values differ (exact match required)", wrong, n);
        verdict(c, name, wrong == 0, wrong ? INFINITY : 0, detail);
        return;
    }
    double scale = MAX(1.0, ref_max), limit = 1e-4 * c->opt->tolerance * scale;
    g_snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  (limit %.1e)", err, err / scale, limit);
    verdict(c, name, err <= limit, ratio_of(err, limit), detail);
}

static void compare_loss(check *c, const char *name, double v, double r)
{
    double err = fabs(v - r), limit = c->opt->tolerance * (1e-5 * fabs(r) + 1e-6);
    if (isnan(err))
        err = INFINITY;
    char detail[200];
    g_snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  (limit %.1e; %.9g vs %.9g)", err,
               r != 0 ? err / fabs(r) : err, limit, v, r);
    verdict(c, name, err <= limit, ratio_of(err, limit), detail);
}

static void compare_grad(check *c, const char *name, const double *v, const double *r, size_t n)
{
    double err = 0, ref_max = 0, d2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(v[i] - r[i]);
        if (!(d <= err))
            err = isnan(d) ? INFINITY : d;
        ref_max = MAX(ref_max, fabs(r[i]));
        d2 += d * d;
        r2 += r[i] * r[i];
    }
    double l2 = sqrt(d2), ref_l2 = sqrt(r2), t = 1e-4 * c->opt->tolerance;
    double ratio = MAX(ratio_of(err, t * ref_max), ratio_of(l2, t * ref_l2));
    gboolean ok = err <= t * ref_max && l2 <= t * ref_l2;
    char detail[200];
    g_snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  rel_l2 %.3e  (limit %.1e)", err,
               ref_max > 0 ? err / ref_max : err, ref_l2 > 0 ? l2 / ref_l2 : l2, t);
    verdict(c, name, ok, ratio, detail);
}

static void compare_gradsample(check *c, const char *name, const double *grad, size_t n, const double *r,
                               const double *idx, size_t k)
{
    double err = 0, ref_max = 0;
    for (size_t i = 0; i < k; i++) {
        if (!(idx[i] >= 0 && idx[i] < (double)n)) {
            err = INFINITY;
            break;
        }
        double d = fabs(grad[(size_t)idx[i]] - r[i]);
        if (!(d <= err))
            err = isnan(d) ? INFINITY : d;
        ref_max = MAX(ref_max, fabs(r[i]));
    }
    double limit = 1e-4 * c->opt->tolerance * ref_max;
    char detail[200];
    g_snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  (limit %.1e, %zu samples)", err,
               ref_max > 0 ? err / ref_max : err, limit, k);
    verdict(c, name, err <= limit, ratio_of(err, limit), detail);
}

static void compare_gradstat(check *c, const char *name, const double *grad, size_t n, const double *r)
{
    double sum = 0, l1 = 0, l2 = 0;
    for (size_t i = 0; i < n; i++) {
        sum += grad[i];
        l1 += fabs(grad[i]);
        l2 += grad[i] * grad[i];
    }
    l2 = sqrt(l2);
    double t = 1e-4 * c->opt->tolerance;
    double ds = fabs(sum - r[0]), d1 = fabs(l1 - r[1]), d2 = fabs(l2 - r[2]);
    double ratio = MAX(MAX(ratio_of(ds, t * r[1]), ratio_of(d1, t * r[1])), ratio_of(d2, t * r[2]));
    gboolean ok = ds <= t * r[1] && d1 <= t * r[1] && d2 <= t * r[2];
    char detail[200];
    g_snprintf(detail, sizeof detail, "max_abs %.3e  rel %.3e  (sum, l1, l2 off by %.1e %.1e %.1e)",
               MAX(ds, MAX(d1, d2)), r[1] > 0 ? MAX(ds, d1) / r[1] : 0, ds, d1, d2);
    verdict(c, name, ok, ratio, detail);
}

/* ---------------------------------------------------------------- the case */

static const char *metadata(const rt_safetensors *st, const char *key, const char *path, GError **error)
{
    const char *v = rt_safetensors_metadata(st, key);
    if (!v)
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: no __metadata__ entry '%s': not a policy case file (format " CASE_FORMAT ")", path,
                    key);
    return v;
}

typedef struct harness {
    int64_t batch_size;
    char *backbone_file; /* NULL: none */
} harness;

static gboolean read_harness(const char *json, const char *path, harness *h, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, json, -1, NULL) || !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: __metadata__ 'harness' is not a JSON object", path);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    JsonNode *b = json_object_get_member(o, "batch_size");
    if (!b || !JSON_NODE_HOLDS_VALUE(b) || json_node_get_value_type(b) != G_TYPE_INT64 || json_node_get_int(b) < 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: __metadata__ 'harness' has no positive batch_size", path);
        return FALSE;
    }
    h->batch_size = json_node_get_int(b);
    JsonNode *f = json_object_get_member(o, "backbone_file");
    h->backbone_file = f && JSON_NODE_HOLDS_VALUE(f) && json_node_get_value_type(f) == G_TYPE_STRING
                           ? g_strdup(json_node_get_string(f))
                           : NULL;
    return TRUE;
}

/* The values of parameter or buffer t: from the case, else from the backbone file (plain, or int8
 * codes times their scale). */
static gboolean load_weight(rt_graph *g, const rt_tensor *t, const rt_safetensors *st, const rt_safetensors *bb,
                            GHashTable *used, GError **error)
{
    const rt_st_tensor *src = rt_safetensors_find(st, t->name);
    if (src) {
        g_hash_table_add(used, (gpointer)src->name);
        return rt_policy_load_tensor(g, t, st, src, error);
    }
    if (bb && (src = rt_safetensors_find(bb, t->name)))
        return rt_policy_load_tensor(g, t, bb, src, error);
    g_autofree char *q8_name = g_strconcat("q8.", t->name, NULL);
    g_autofree char *scale_name = g_strconcat("q8scale.", t->name, NULL);
    const rt_st_tensor *q8 = bb ? rt_safetensors_find(bb, q8_name) : NULL;
    const rt_st_tensor *scale = bb ? rt_safetensors_find(bb, scale_name) : NULL;
    if (!q8 || !scale) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s: no tensor '%s'%s%s%s, which the policy's %s needs", rt_safetensors_path(st), t->name,
                    bb ? " (nor q8 codes for it in " : "", bb ? rt_safetensors_path(bb) : "", bb ? ")" : "",
                    t->flags & RT_TENSOR_PARAM ? "parameter" : "buffer");
        return FALSE;
    }
    if (q8->dtype != RT_ST_I8 || scale->dtype != RT_ST_F32 || scale->n_elements != 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: '%s' must be I8 and '%s' one F32 value",
                    rt_safetensors_path(bb), q8_name, scale_name);
        return FALSE;
    }
    gboolean same = q8->rank == t->ndim;
    for (int i = 0; same && i < t->ndim; i++)
        same = q8->shape[i] == t->shape[i];
    if (!same) {
        char want[80];
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: '%s' does not have the shape of the policy's parameter '%s' (%s)",
                    rt_safetensors_path(bb), q8_name, t->name, rt_tensor_describe(t, want, sizeof want));
        return FALSE;
    }
    float s;
    memcpy(&s, scale->data, 4);
    size_t n = (size_t)q8->n_elements;
    gboolean ok;
    if (t->dtype == RT_F64) {
        double *v = g_new(double, MAX(n, 1));
        for (size_t i = 0; i < n; i++)
            v[i] = (double)((float)((const int8_t *)q8->data)[i] * s);
        ok = rt_graph_write(g, t, v, n * 8, error);
        g_free(v);
    } else {
        float *v = g_new(float, MAX(n, 1));
        for (size_t i = 0; i < n; i++)
            v[i] = (float)((const int8_t *)q8->data)[i] * s; /* exact: a power-of-two scale */
        ok = rt_graph_write(g, t, v, n * 4, error);
        g_free(v);
    }
    return ok;
}

static gboolean load_weights(rt_graph *g, const rt_safetensors *st, const rt_safetensors *bb, GError **error)
{
    GHashTable *used = g_hash_table_new(g_str_hash, g_str_equal);
    gboolean ok = TRUE;
    for (int i = 0; ok && i < rt_graph_n_params(g); i++)
        ok = load_weight(g, rt_graph_param(g, i), st, bb, used, error);
    for (int i = 0; ok && i < rt_graph_n_buffers(g); i++)
        ok = load_weight(g, rt_graph_buffer(g, i), st, bb, used, error);
    /* every weight of the case must belong to the policy: else it describes another model */
    for (size_t i = 0; ok && i < rt_safetensors_n_tensors(st); i++) {
        const rt_st_tensor *t = rt_safetensors_tensor_at(st, i);
        if (g_str_has_prefix(t->name, "model.") && !g_hash_table_contains(used, t->name)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: the case holds '%s', which the policy its config describes does not have",
                        rt_safetensors_path(st), t->name);
            ok = FALSE;
        }
    }
    g_hash_table_unref(used);
    return ok;
}

/* Writes every named input of g from the case tensor of that name. */
static gboolean write_inputs(rt_graph *g, const rt_safetensors *st, GError **error)
{
    for (int i = 0; i < rt_graph_n_tensors(g); i++) {
        rt_tensor *t = rt_graph_tensor(g, i);
        if (!(t->flags & RT_TENSOR_INPUT) || !t->name)
            continue;
        const rt_st_tensor *src = rt_safetensors_find(st, t->name);
        char d[80];
        if (!src || !same_shape(t, src)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s input '%s' (%s) the policy reads",
                        rt_safetensors_path(st), src ? "the shape differs from the" : "no tensor for the",
                        t->name, rt_tensor_describe(t, d, sizeof d));
            return FALSE;
        }
        double *v = case_values(src);
        size_t n = (size_t)src->n_elements;
        gboolean ok;
        if (t->dtype == RT_BOOL) {
            uint8_t *b = g_new(uint8_t, MAX(n, 1));
            for (size_t k = 0; k < n; k++)
                b[k] = v[k] != 0;
            ok = rt_graph_write(g, t, b, n, error);
            g_free(b);
        } else if (t->dtype == RT_F64) {
            ok = rt_graph_write(g, t, v, n * 8, error);
        } else {
            float *f = g_new(float, MAX(n, 1));
            for (size_t k = 0; k < n; k++)
                f[k] = (float)v[k];
            ok = rt_graph_write(g, t, f, n * 4, error);
            g_free(f);
        }
        g_free(v);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

static gboolean is_graph_input(rt_graph *g, const char *name)
{
    rt_tensor *t = rt_graph_find(g, name);
    return t && (t->flags & RT_TENSOR_INPUT);
}

/* Compares one forward tensor of graph g. */
static gboolean compare_output(check *c, rt_graph *g, const char *name, const char *graph_name,
                               const rt_st_tensor *ref, GError **error)
{
    rt_tensor *t = rt_graph_find(g, graph_name);
    if (!t) {
        missing(c, name, "the policy names no such output");
        return TRUE;
    }
    if (!same_shape(t, ref)) {
        char d[80];
        g_autofree char *why = g_strdup_printf("the policy's tensor is %s", rt_tensor_describe(t, d, sizeof d));
        missing(c, name, why);
        return TRUE;
    }
    double *v = graph_values(g, t, error);
    if (!v)
        return FALSE;
    double *r = case_values(ref);
    compare_forward(c, name, v, r, (size_t)ref->n_elements, ref->dtype == RT_ST_BOOL);
    g_free(v);
    g_free(r);
    return TRUE;
}

/* The gradient of parameter pname as doubles, or NULL (missing() was reported) */
static double *gradient_of(check *c, rt_graph *g, const char *name, const char *pname, size_t *n, GError **error)
{
    rt_tensor *p = rt_graph_find(g, pname);
    rt_tensor *gr = p && (p->flags & RT_TENSOR_PARAM) ? rt_graph_grad(g, p) : NULL;
    if (!gr) {
        missing(c, name, p ? "the parameter has no gradient" : "the policy has no such parameter");
        return NULL;
    }
    *n = (size_t)rt_tensor_numel(gr);
    return graph_values(g, gr, error);
}

static gboolean compare_train(check *c, rt_graph *g, const rt_st_tensor *ref, GError **error)
{
    const char *name = ref->name;
    if (strcmp(name, "loss.total") == 0 || g_str_has_prefix(name, "loss.")) {
        rt_tensor *t;
        if (strcmp(name, "loss.total") == 0) {
            t = rt_graph_loss(g);
        } else {
            g_autofree char *out = g_strconcat(name + strlen("loss."), "_loss", NULL);
            t = rt_graph_find(g, out);
        }
        if (!t) {
            missing(c, name, "the policy has no such loss");
            return TRUE;
        }
        double v, r[1];
        if (!rt_graph_read_scalar(g, t, &v, error))
            return FALSE;
        double *rv = case_values(ref);
        r[0] = rv[0];
        g_free(rv);
        compare_loss(c, name, v, r[0]);
        return TRUE;
    }
    if (g_str_has_prefix(name, "out.") || g_str_has_prefix(name, "inter."))
        return compare_output(c, g, name, name, ref, error);
    size_t n = 0;
    if (g_str_has_prefix(name, "grad.")) {
        double *v = gradient_of(c, g, name, name + strlen("grad."), &n, error);
        if (!v)
            return error == NULL || *error == NULL;
        if ((size_t)ref->n_elements != n) {
            missing(c, name, "the gradient's shape differs");
        } else {
            double *r = case_values(ref);
            compare_grad(c, name, v, r, n);
            g_free(r);
        }
        g_free(v);
        return TRUE;
    }
    if (g_str_has_prefix(name, "gradsample.")) {
        const char *pname = name + strlen("gradsample.");
        g_autofree char *idx_name = g_strconcat("gradsample_idx.", pname, NULL);
        const rt_st_tensor *idx = rt_safetensors_find(c->st, idx_name);
        if (!idx || idx->n_elements != ref->n_elements) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: '%s' has no matching '%s'", c->path, name, idx_name);
            return FALSE;
        }
        double *v = gradient_of(c, g, name, pname, &n, error);
        if (!v)
            return error == NULL || *error == NULL;
        double *r = case_values(ref), *ix = case_values(idx);
        compare_gradsample(c, name, v, n, r, ix, (size_t)ref->n_elements);
        g_free(r);
        g_free(ix);
        g_free(v);
        return TRUE;
    }
    if (g_str_has_prefix(name, "gradstat.")) {
        if (ref->n_elements != 3) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: '%s' must hold 3 values", c->path, name);
            return FALSE;
        }
        double *v = gradient_of(c, g, name, name + strlen("gradstat."), &n, error);
        if (!v)
            return error == NULL || *error == NULL;
        double *r = case_values(ref);
        compare_gradstat(c, name, v, n, r);
        g_free(r);
        g_free(v);
        return TRUE;
    }
    missing(c, name, "robotrain does not know what this reference tensor is");
    return TRUE;
}

/* Builds, plans and runs the inference graph; compares infer.* (infer.inter.X is the graph's
 * inter.X, infer.actions its chunk, infer.select_action the selector's first action). */
static gboolean run_infer(check *c, rt_policy *policy, rt_graph *train, int64_t batch, GError **error)
{
    rt_graph *g = rt_graph_new_sharing(train, 0);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(batch);
    args.flags = RT_POLICY_BUILD_INTERMEDIATES;
    args.dtype = c->opt->dtype;
    rt_tensor *chunk;
    rt_action_selector *sel = NULL;
    double *first = NULL;
    gboolean ok = rt_policy_build_infer(policy, g, &args, &chunk, error) &&
                  rt_graph_plan(g, rt_backend_cpu(), c->dev, error) &&
                  write_inputs(g, c->st, error) && rt_graph_compute(g, error);
    size_t n_chunk = ok ? (size_t)rt_tensor_numel(chunk) : 0;
    float *chunk_f = NULL;
    if (ok) {
        double *v = graph_values(g, chunk, error);
        ok = v != NULL;
        chunk_f = g_new(float, MAX(n_chunk, 1));
        for (size_t i = 0; ok && i < n_chunk; i++)
            chunk_f[i] = (float)v[i];
        g_free(v);
    }
    if (ok) {
        size_t n_action = (size_t)(chunk->shape[0] * chunk->shape[2]);
        sel = rt_policy_selector_new(policy, batch, error);
        float *a = g_new(float, MAX(n_action, 1));
        ok = sel && rt_action_selector_needs_chunk(sel) &&
             rt_action_selector_push_chunk(sel, chunk_f, n_chunk, error) &&
             rt_action_selector_pop(sel, a, n_action, error);
        first = g_new(double, MAX(n_action, 1));
        for (size_t i = 0; ok && i < n_action; i++)
            first[i] = a[i];
        g_free(a);
    }
    for (size_t i = 0; ok && i < rt_safetensors_n_tensors(c->st); i++) {
        const rt_st_tensor *ref = rt_safetensors_tensor_at(c->st, i);
        if (!g_str_has_prefix(ref->name, "infer."))
            continue;
        if (g_str_has_prefix(ref->name, "infer.inter.")) {
            ok = compare_output(c, g, ref->name, ref->name + strlen("infer."), ref, error);
        } else if (strcmp(ref->name, "infer.actions") == 0) {
            ok = compare_output(c, g, ref->name, chunk->name, ref, error);
        } else if (strcmp(ref->name, "infer.select_action") == 0) {
            double *r = case_values(ref);
            if ((size_t)ref->n_elements != (size_t)(chunk->shape[0] * chunk->shape[2]))
                missing(c, ref->name, "the selected action's shape differs");
            else
                compare_forward(c, ref->name, first, r, (size_t)ref->n_elements, FALSE);
            g_free(r);
        } else {
            missing(c, ref->name, "robotrain does not know what this reference tensor is");
        }
    }
    g_free(first);
    g_free(chunk_f);
    rt_action_selector_free(sel);
    rt_graph_free(g);
    return ok;
}

gboolean rt_policy_check_case(rt_plugin_registry *registry, const char *path, const rt_policy_check_options *options,
                              rt_policy_check_result *result, GError **error)
{
    g_return_val_if_fail(registry && path && options && result, FALSE);
    memset(result, 0, sizeof *result);
    rt_safetensors *st = rt_safetensors_open(path, error);
    if (!st)
        return FALSE;
    rt_backend_device *dev = rt_backend_cpu()->open(0, error);
    if (!dev) {
        rt_safetensors_close(st);
        return FALSE;
    }
    rt_safetensors *bb = NULL;
    rt_config *cfg = NULL;
    rt_policy *policy = NULL;
    rt_graph *g = NULL;
    harness h = {0};
    char *what = NULL, *type = NULL;
    check c = {options, result, st, path, dev};
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(1);
    rt_policy_losses losses;
    gboolean ok = FALSE;
    const char *format = metadata(st, "format", path, error);
    const char *config = format ? metadata(st, "config", path, error) : NULL;
    const char *hjson = config ? metadata(st, "harness", path, error) : NULL;
    if (!hjson)
        goto out;
    if (strcmp(format, CASE_FORMAT) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: format '%s'; this robotrain reads " CASE_FORMAT " cases",
                    path, format);
        goto out;
    }
    if (!read_harness(hjson, path, &h, error))
        goto out;
    if (h.backbone_file) {
        g_autofree char *dir = g_path_get_dirname(path);
        g_autofree char *bpath = g_build_filename(dir, h.backbone_file, NULL);
        g_autoptr(GError) local = NULL;
        bb = rt_safetensors_open(bpath, &local);
        if (!bb) {
            g_set_error(error, RT_ERROR, local->code, "the backbone file of %s: %s (it is looked for beside the "
                        "case)", path, local->message);
            goto out;
        }
        const char *bformat = rt_safetensors_metadata(bb, "format");
        if (bformat && strcmp(bformat, CASE_FORMAT "-backbone") != 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: format '%s'; this robotrain reads " CASE_FORMAT
                        "-backbone files", bpath, bformat);
            goto out;
        }
    }
    /* the policy its config describes */
    what = g_strdup_printf("%s: __metadata__ config", path);
    type = rt_policy_config_json_type(config, strlen(config), what, error);
    if (!type)
        goto out;
    const rt_plugin_module *m = rt_policy_find_module(registry, type, error);
    if (!m)
        goto out;
    cfg = rt_config_new("robotrain policy check");
    if (!rt_policy_add_options(cfg, m->desc, error) ||
        !rt_policy_config_load_json(cfg, config, strlen(config), what, error))
        goto out;
    policy = rt_policy_new(m->desc, cfg, error);
    if (!policy)
        goto out;

    /* training: forward, loss, backward */
    g = rt_graph_new(RT_GRAPH_TRAIN);
    args.batch_size = h.batch_size;
    args.flags = RT_POLICY_BUILD_INTERMEDIATES | RT_POLICY_BUILD_NOISE_INPUTS;
    args.dtype = options->dtype;
    if (!rt_policy_build_train(policy, g, &args, &losses, error) || !rt_graph_backward(g, error) ||
        !rt_graph_plan(g, rt_backend_cpu(), dev, error) ||
        !load_weights(g, st, bb, error) || !write_inputs(g, st, error) || !rt_graph_set_rng(g, 0, 0, 0, error) ||
        !rt_graph_compute(g, error))
        goto out;
    for (int i = 0; i < rt_graph_n_params(g); i++)
        result->n_params += rt_tensor_numel(rt_graph_param(g, i));
    if (options->out)
        fprintf(options->out, "# %s: policy %s, %" G_GINT64_FORMAT " parameters, batch %" G_GINT64_FORMAT ", %s\n",
                path, type, result->n_params, h.batch_size, rt_dtype_name(options->dtype));
    for (size_t i = 0; i < rt_safetensors_n_tensors(st); i++) {
        const rt_st_tensor *ref = rt_safetensors_tensor_at(st, i);
        if (g_str_has_prefix(ref->name, "model.") || g_str_has_prefix(ref->name, "gradsample_idx.") ||
            g_str_has_prefix(ref->name, "infer.") || is_graph_input(g, ref->name))
            continue;
        if (!compare_train(&c, g, ref, error))
            goto out;
    }
    /* inference, with the same weights */
    ok = run_infer(&c, policy, g, h.batch_size, error);
    if (ok && options->out)
        fprintf(options->out, "# %d tensors compared: %d outside their limits, %d not produced; worst %s at %.3g of "
                "its limit\n", result->n_compared, result->n_failed, result->n_missing,
                result->worst_name[0] ? result->worst_name : "-", result->worst);
out:
    rt_graph_free(g);
    rt_policy_free(policy);
    rt_config_free(cfg);
    g_free(what);
    g_free(type);
    g_free(h.backbone_file);
    rt_backend_cpu()->close(dev);
    rt_safetensors_close(bb);
    rt_safetensors_close(st);
    return ok;
}
