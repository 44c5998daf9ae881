/* Checkpoints in LeRobot's layout: writing them atomically (see checkpoint.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <robotrain/error.h>
#include <robotrain/safetensors.h>

#include "train/checkpoint-private.h"
#include "train/rng-state.h"
#include "core/json-write.h"
#include "train/train-options.h"

char *rt_checkpoint_step_name(int64_t step, int64_t total_steps)
{
    g_autofree char *total = g_strdup_printf("%" G_GINT64_FORMAT, (gint64)total_steps);
    int digits = MAX(6, (int)strlen(total));
    return g_strdup_printf("%0*" G_GINT64_FORMAT, digits, (gint64)step);
}

/* ---------------------------------------------------------------- parameter order */

rt_param_order *rt_param_order_new(rt_graph *g, int n_groups)
{
    g_return_val_if_fail(g != NULL && n_groups >= 1, NULL);
    rt_param_order *o = g_new0(rt_param_order, 1);
    o->n_params = rt_graph_n_params(g);
    o->n_groups = n_groups;
    o->group = g_new0(int, MAX(o->n_params, 1));
    o->index = g_new0(int, MAX(o->n_params, 1));
    o->param_at = g_new0(int, MAX(o->n_params, 1));
    o->group_len = g_new0(int, n_groups);
    for (int p = 0; p < o->n_params; p++) {
        int group = rt_param_group(rt_graph_param(g, p));
        if (group < 0 || group >= n_groups) {
            g_critical("rt_param_order_new: parameter '%s' is in group %d of %d", rt_graph_param(g, p)->name,
                       group, n_groups);
            rt_param_order_free(o);
            return NULL;
        }
        o->group[p] = group;
        o->group_len[group]++;
    }
    int next = 0;
    for (int k = 0; k < n_groups; k++)
        for (int p = 0; p < o->n_params; p++)
            if (o->group[p] == k) {
                o->index[p] = next;
                o->param_at[next] = p;
                next++;
            }
    return o;
}

void rt_param_order_free(rt_param_order *order)
{
    if (!order)
        return;
    g_free(order->group);
    g_free(order->index);
    g_free(order->param_at);
    g_free(order->group_len);
    g_free(order);
}

/* ---------------------------------------------------------------- helpers */

gboolean ckpt_st_dtype(rt_dtype dtype, rt_st_dtype *out)
{
    switch (dtype) {
    case RT_F32:
        *out = RT_ST_F32;
        return TRUE;
    case RT_F64:
        *out = RT_ST_F64;
        return TRUE;
    case RT_BF16:
        *out = RT_ST_BF16;
        return TRUE;
    case RT_F16:
        *out = RT_ST_F16;
        return TRUE;
    case RT_I64:
        *out = RT_ST_I64;
        return TRUE;
    case RT_I32:
        *out = RT_ST_I32;
        return TRUE;
    case RT_U8:
        *out = RT_ST_U8;
        return TRUE;
    case RT_BOOL:
        *out = RT_ST_BOOL;
        return TRUE;
    default:
        return FALSE;
    }
}

/* A copy of param that addresses the same offset in another of the four parameter-shaped
 * storages (robotrain/tensor.h: PARAM, GRAD, ADAM_M and ADAM_V share one layout). */
rt_tensor ckpt_param_view(const rt_tensor *param, rt_storage storage)
{
    rt_tensor view = *param;
    view.storage = storage;
    return view;
}

typedef struct {
    const rt_checkpoint_save_info *info;
    char *root;         /* the partial folder */
    GPtrArray *buffers; /* host copies the safetensors writers borrow */
} save_ctx;

static gboolean hook(save_ctx *c, const char *name, GError **error)
{
    if (c->info->before_file && !c->info->before_file(name, c->info->user, error)) {
        if (error && !*error)
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "writing %s was stopped", name);
        return FALSE;
    }
    return TRUE;
}

static gboolean fsync_path(const char *path, gboolean directory, GError **error)
{
    int fd = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot sync to disk: %s", path, g_strerror(e));
        return FALSE;
    }
    close(fd);
    return TRUE;
}

/* Writes text to ROOT/name and syncs it. */
static gboolean write_text(save_ctx *c, const char *name, const char *text, GError **error)
{
    if (!hook(c, name, error))
        return FALSE;
    g_autofree char *path = g_build_filename(c->root, name, NULL);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot create: %s", path, g_strerror(errno));
        return FALSE;
    }
    size_t length = strlen(text), done = 0;
    while (done < length) {
        ssize_t n = write(fd, text + done, length - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = errno;
            close(fd);
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot write: %s", path, g_strerror(e));
            return FALSE;
        }
        done += (size_t)n;
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot sync to disk: %s", path, g_strerror(e));
        return FALSE;
    }
    if (close(fd) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot write: %s", path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static gboolean write_json(save_ctx *c, const char *name, JsonNode *node, int indent, GError **error)
{
    g_autofree char *text = rt_json_to_text(node, indent, FALSE);
    return write_text(c, name, text, error);
}

static gboolean write_safetensors(save_ctx *c, const char *name, rt_safetensors_writer *w, GError **error)
{
    if (!hook(c, name, error))
        return FALSE;
    g_autofree char *path = g_build_filename(c->root, name, NULL);
    return rt_safetensors_writer_write(w, path, error);
}

/* A host copy of a planned tensor (kept until the save ends). */
static void *read_tensor(save_ctx *c, const rt_tensor *t, GError **error)
{
    size_t n = rt_tensor_nbytes(t);
    void *data = g_malloc(MAX(n, 1));
    g_ptr_array_add(c->buffers, data);
    if (!rt_graph_read(c->info->graph, t, data, n, error))
        return NULL;
    return data;
}

static gboolean add_tensor(save_ctx *c, rt_safetensors_writer *w, const char *name, const rt_tensor *t,
                           const void *data, GError **error)
{
    rt_st_dtype dtype;
    if (!ckpt_st_dtype(t->dtype, &dtype)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "tensor '%s' has a dtype safetensors cannot hold",
                    name);
        return FALSE;
    }
    (void)c;
    return rt_safetensors_writer_add(w, name, dtype, t->ndim, t->shape, data, error);
}

/* ---------------------------------------------------------------- pretrained_model */

static gboolean save_model(save_ctx *c, GError **error)
{
    rt_graph *g = c->info->graph;
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    gboolean ok = rt_safetensors_writer_set_metadata(w, "format", "pt", error);
    for (int i = 0; ok && i < rt_graph_n_params(g); i++) {
        const rt_tensor *t = rt_graph_param(g, i);
        const void *data = read_tensor(c, t, error);
        ok = data && add_tensor(c, w, t->name, t, data, error);
    }
    for (int i = 0; ok && i < rt_graph_n_buffers(g); i++) {
        const rt_tensor *t = rt_graph_buffer(g, i);
        const void *data = read_tensor(c, t, error);
        ok = data && add_tensor(c, w, t->name, t, data, error);
    }
    ok = ok && write_safetensors(c, RT_PRETRAINED_MODEL_DIR "/" RT_MODEL_FILE, w, error);
    rt_safetensors_writer_free(w);
    return ok;
}

static JsonNode *object_node(JsonObject *object)
{
    JsonNode *node = json_node_init_object(json_node_alloc(), object);
    json_object_unref(object);
    return node;
}

static JsonNode *string_node(const char *s)
{
    return s ? json_node_init_string(json_node_alloc(), s) : json_node_new(JSON_NODE_NULL);
}

/* A policy feature option (JSON text) as an object, or NULL. (transfer full) */
static JsonNode *features_of(const rt_config *cfg, const char *key)
{
    if (!rt_config_lookup(cfg, key) || rt_config_is_null(cfg, key))
        return NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, rt_config_get_string(cfg, key), -1, NULL))
        return NULL;
    JsonNode *root = json_parser_steal_root(parser);
    if (root && !JSON_NODE_HOLDS_OBJECT(root)) {
        json_node_unref(root);
        return NULL;
    }
    return root;
}

/* The module's normalization_mapping.* options as LeRobot's norm_map, in declaration order. */
static JsonObject *norm_map_of(const rt_config *cfg)
{
    static const char prefix[] = "policy.normalization_mapping.";
    JsonObject *map = json_object_new();
    g_auto(GStrv) keys = rt_config_list_keys(cfg);
    for (size_t i = 0; keys[i]; i++) {
        if (!g_str_has_prefix(keys[i], prefix) || strchr(keys[i] + strlen(prefix), '.'))
            continue;
        const char *mode = rt_config_get_string(cfg, keys[i]);
        if (mode)
            json_object_set_string_member(map, keys[i] + strlen(prefix), mode);
    }
    return map;
}

/* {"registry_name": name, "config": config} (+ "state_file") */
static JsonNode *step_entry(const char *registry_name, JsonObject *config, const char *state_file)
{
    JsonObject *step = json_object_new();
    json_object_set_string_member(step, "registry_name", registry_name);
    json_object_set_object_member(step, "config", config);
    if (state_file)
        json_object_set_string_member(step, "state_file", state_file);
    return object_node(step);
}

static JsonObject *device_config(const char *device)
{
    JsonObject *config = json_object_new();
    json_object_set_member(config, "device", string_node(device));
    json_object_set_null_member(config, "float_dtype");
    return config;
}

/* The normalizer's config: eps, features {name: {type, shape}} (inputs then outputs), norm_map. */
static JsonObject *normalizer_config(const rt_config *cfg, gboolean with_inputs)
{
    JsonObject *config = json_object_new();
    json_object_set_member(config, "eps", json_node_init_double(json_node_alloc(), 1e-8));
    JsonObject *features = json_object_new();
    const char *groups[2] = {"policy.input_features", "policy.output_features"};
    for (int k = with_inputs ? 0 : 1; k < 2; k++) {
        JsonNode *node = features_of(cfg, groups[k]);
        if (!node)
            continue;
        JsonObject *group = json_node_get_object(node);
        GList *names = json_object_get_members(group);
        for (GList *n = names; n; n = n->next) {
            JsonNode *f = json_object_get_member(group, n->data);
            if (!JSON_NODE_HOLDS_OBJECT(f))
                continue;
            JsonObject *fo = json_node_get_object(f), *out = json_object_new();
            /* LeRobot writes {"type", "shape"} in this order */
            if (json_object_has_member(fo, "type"))
                json_object_set_member(out, "type", rt_json_deep_copy(json_object_get_member(fo, "type")));
            if (json_object_has_member(fo, "shape"))
                json_object_set_member(out, "shape", rt_json_deep_copy(json_object_get_member(fo, "shape")));
            json_object_set_object_member(features, n->data, out);
        }
        g_list_free(names);
        json_node_unref(node);
    }
    json_object_set_object_member(config, "features", features);
    json_object_set_object_member(config, "norm_map", norm_map_of(cfg));
    return config;
}

char *rt_checkpoint_preprocessor_json(const rt_config *cfg, gboolean with_state)
{
    const char *device =
        rt_config_lookup(cfg, "policy.device") ? rt_config_get_string(cfg, "policy.device") : NULL;
    JsonObject *root = json_object_new();
    json_object_set_string_member(root, "name", "policy_preprocessor");
    JsonArray *steps = json_array_new();
    JsonObject *rename = json_object_new();
    json_object_set_object_member(rename, "rename_map", json_object_new());
    json_array_add_element(steps, step_entry("rename_observations_processor", rename, NULL));
    json_array_add_element(steps, step_entry("to_batch_processor", json_object_new(), NULL));
    json_array_add_element(steps,
                           step_entry("device_processor", device_config(device ? device : "cpu"), NULL));
    json_array_add_element(steps, step_entry("normalizer_processor", normalizer_config(cfg, TRUE),
                                             with_state ? RT_NORMALIZER_FILE : NULL));
    json_object_set_array_member(root, "steps", steps);
    JsonNode *node = object_node(root);
    char *text = rt_json_to_text(node, 2, FALSE);
    json_node_unref(node);
    return text;
}

char *rt_checkpoint_postprocessor_json(const rt_config *cfg, gboolean with_state)
{
    JsonObject *root = json_object_new();
    json_object_set_string_member(root, "name", "policy_postprocessor");
    JsonArray *steps = json_array_new();
    json_array_add_element(steps, step_entry("unnormalizer_processor", normalizer_config(cfg, FALSE),
                                             with_state ? RT_UNNORMALIZER_FILE : NULL));
    json_array_add_element(steps, step_entry("device_processor", device_config("cpu"), NULL));
    json_object_set_array_member(root, "steps", steps);
    JsonNode *node = object_node(root);
    char *text = rt_json_to_text(node, 2, FALSE);
    json_node_unref(node);
    return text;
}

static gboolean save_processors(save_ctx *c, GError **error)
{
    const rt_checkpoint_save_info *info = c->info;
    gboolean with_state = info->n_stats > 0;
    g_autofree char *pre = rt_checkpoint_preprocessor_json(info->cfg, with_state);
    g_autofree char *post = rt_checkpoint_postprocessor_json(info->cfg, with_state);
    if (!write_text(c, RT_PRETRAINED_MODEL_DIR "/" RT_PREPROCESSOR_FILE, pre, error) ||
        !write_text(c, RT_PRETRAINED_MODEL_DIR "/" RT_POSTPROCESSOR_FILE, post, error))
        return FALSE;
    if (!with_state)
        return TRUE;
    /* both state files hold every statistic of the dataset, float32 (LeRobot's to_tensor) */
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    gboolean ok = TRUE;
    for (size_t i = 0; ok && i < info->n_stats; i++) {
        const rt_ckpt_stat *s = &info->stats[i];
        int64_t n = 1;
        for (int d = 0; d < s->ndim; d++)
            n *= s->shape[d];
        float *values = g_new(float, MAX(n, 1));
        g_ptr_array_add(c->buffers, values);
        for (int64_t k = 0; k < n; k++)
            values[k] = (float)s->values[k];
        g_autofree char *name = g_strdup_printf("%s.%s", s->feature, s->stat);
        ok = rt_safetensors_writer_add(w, name, RT_ST_F32, s->ndim, s->shape, values, error);
    }
    ok = ok && write_safetensors(c, RT_PRETRAINED_MODEL_DIR "/" RT_NORMALIZER_FILE, w, error) &&
         write_safetensors(c, RT_PRETRAINED_MODEL_DIR "/" RT_UNNORMALIZER_FILE, w, error);
    rt_safetensors_writer_free(w);
    return ok;
}

static gboolean save_pretrained(save_ctx *c, GError **error)
{
    const rt_checkpoint_save_info *info = c->info;
    g_autofree char *policy = rt_train_policy_config_to_json(info->cfg);
    if (!policy) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "no policy type is set: nothing to write as config.json");
        return FALSE;
    }
    g_autofree char *train = rt_train_config_to_json(info->cfg);
    return write_text(c, RT_PRETRAINED_MODEL_DIR "/config.json", policy, error) && save_model(c, error) &&
           write_text(c, RT_PRETRAINED_MODEL_DIR "/" RT_TRAIN_CONFIG_NAME, train, error) &&
           save_processors(c, error);
}

/* ---------------------------------------------------------------- training_state */

static JsonNode *double_node(double v)
{
    return json_node_init_double(json_node_alloc(), v);
}

static JsonNode *int_node(gint64 v)
{
    return json_node_init_int(json_node_alloc(), v);
}

static JsonNode *bool_node(gboolean v)
{
    return json_node_init_boolean(json_node_alloc(), v);
}

static gboolean save_optimizer(save_ctx *c, GError **error)
{
    const rt_checkpoint_save_info *info = c->info;
    const rt_param_order *o = info->order;
    rt_graph *g = info->graph;
    if (o->n_params != rt_graph_n_params(g)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the parameter order has %d parameters but the graph %d: make it from this graph",
                    o->n_params, rt_graph_n_params(g));
        return FALSE;
    }
    /* state/<i>/{exp_avg, exp_avg_sq, step}, PyTorch's state_dict flattened with "/" */
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    float *step = g_new(float, 1);
    g_ptr_array_add(c->buffers, step);
    *step = (float)(info->has_optimizer_step ? info->optimizer_step : (double)info->step);
    gboolean ok = TRUE;
    for (int i = 0; ok && i < o->n_params; i++) {
        const rt_tensor *p = rt_graph_param(g, o->param_at[i]);
        if (!rt_graph_grad(g, p))
            continue; /* PyTorch keeps no state for a parameter that never had a gradient */
        rt_tensor m = ckpt_param_view(p, RT_STORAGE_ADAM_M), v = ckpt_param_view(p, RT_STORAGE_ADAM_V);
        const void *md = read_tensor(c, &m, error);
        const void *vd = md ? read_tensor(c, &v, error) : NULL;
        g_autofree char *kstep = g_strdup_printf("state/%d/step", i);
        g_autofree char *km = g_strdup_printf("state/%d/exp_avg", i);
        g_autofree char *kv = g_strdup_printf("state/%d/exp_avg_sq", i);
        ok = vd && rt_safetensors_writer_add(w, kstep, RT_ST_F32, 0, NULL, step, error) &&
             add_tensor(c, w, km, p, md, error) && add_tensor(c, w, kv, p, vd, error);
    }
    ok = ok && write_safetensors(c, RT_TRAINING_STATE_DIR "/" RT_OPTIMIZER_STATE_FILE, w, error);
    rt_safetensors_writer_free(w);
    if (!ok)
        return FALSE;

    /* param_groups, with torch >= 2.7's AdamW defaults as state_dict() lists them */
    gboolean scheduled = info->schedule && info->schedule->kind != RT_LR_NONE && info->initial_lr;
    JsonArray *groups = json_array_new();
    for (int k = 0, next = 0; k < o->n_groups; k++) {
        const rt_adamw_group *gr = &info->groups[k];
        JsonObject *obj = json_object_new();
        json_object_set_member(obj, "lr", double_node(gr->lr));
        JsonArray *betas = json_array_new();
        json_array_add_element(betas, double_node(gr->beta1));
        json_array_add_element(betas, double_node(gr->beta2));
        json_object_set_array_member(obj, "betas", betas);
        json_object_set_member(obj, "eps", double_node(gr->eps));
        json_object_set_member(obj, "weight_decay", double_node(gr->weight_decay));
        json_object_set_member(obj, "amsgrad", bool_node(FALSE));
        json_object_set_member(obj, "maximize", bool_node(FALSE));
        json_object_set_null_member(obj, "foreach");
        json_object_set_member(obj, "capturable", bool_node(FALSE));
        json_object_set_member(obj, "differentiable", bool_node(FALSE));
        json_object_set_null_member(obj, "fused");
        json_object_set_member(obj, "decoupled_weight_decay", bool_node(TRUE));
        if (scheduled)
            json_object_set_member(obj, "initial_lr", double_node(info->initial_lr[k]));
        JsonArray *params = json_array_new();
        for (int n = 0; n < o->group_len[k]; n++)
            json_array_add_element(params, int_node(next++));
        json_object_set_array_member(obj, "params", params);
        json_array_add_element(groups, object_node(obj));
    }
    JsonNode *node = json_node_init_array(json_node_alloc(), groups);
    json_array_unref(groups);
    ok = write_json(c, RT_TRAINING_STATE_DIR "/" RT_OPTIMIZER_GROUPS_FILE, node, 4, error);
    json_node_unref(node);
    return ok;
}

/* LambdaLR.state_dict() (torch 2.x): the schedule itself is code, so lr_lambdas are null. */
static gboolean save_scheduler(save_ctx *c, GError **error)
{
    const rt_checkpoint_save_info *info = c->info;
    if (!info->schedule || info->schedule->kind == RT_LR_NONE || !info->initial_lr)
        return TRUE;
    int n = info->order->n_groups;
    JsonObject *obj = json_object_new();
    JsonArray *base = json_array_new(), *last = json_array_new(), *lambdas = json_array_new();
    for (int k = 0; k < n; k++) {
        json_array_add_element(base, double_node(info->initial_lr[k]));
        json_array_add_element(last, double_node(info->groups[k].lr));
        json_array_add_null_element(lambdas);
    }
    json_object_set_array_member(obj, "base_lrs", base);
    json_object_set_member(obj, "last_epoch", int_node(info->step));
    json_object_set_member(obj, "verbose", bool_node(FALSE));
    json_object_set_member(obj, "_step_count", int_node(info->step + 1));
    json_object_set_member(obj, "_get_lr_called_within_step", bool_node(FALSE));
    json_object_set_array_member(obj, "_last_lr", last);
    json_object_set_array_member(obj, "lr_lambdas", lambdas);
    JsonNode *node = object_node(obj);
    gboolean ok = write_json(c, RT_TRAINING_STATE_DIR "/" RT_SCHEDULER_STATE_FILE, node, 4, error);
    json_node_unref(node);
    return ok;
}

/* LeRobot's generator states (rng-state.h), so that LeRobot can resume this checkpoint. */
static gboolean save_rng_state(save_ctx *c, GError **error)
{
    const rt_checkpoint_save_info *info = c->info;
    rt_lerobot_rng_state *state = g_new(rt_lerobot_rng_state, 1);
    g_ptr_array_add(c->buffers, state);
    rt_lerobot_rng_state_seed(state, (uint32_t)(info->seed + (uint64_t)info->step));
    const char *device = info->cfg && rt_config_lookup(info->cfg, "policy.device")
                             ? rt_config_get_string(info->cfg, "policy.device")
                             : NULL;
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    gboolean ok = rt_lerobot_rng_state_add(state, device && g_str_has_prefix(device, "cuda"), w, error) &&
                  write_safetensors(c, RT_TRAINING_STATE_DIR "/" RT_RNG_STATE_FILE, w, error);
    rt_safetensors_writer_free(w);
    return ok;
}

/* mixed_precision.json: the precision, and GradScaler.state_dict()'s keys for fp16 */
static gboolean save_precision(save_ctx *c, GError **error)
{
    const rt_ckpt_precision *p = c->info->precision;
    if (!p)
        return TRUE;
    JsonObject *obj = json_object_new();
    json_object_set_string_member(obj, "mixed_precision", p->mixed_precision);
    if (p->has_scaler) {
        JsonObject *s = json_object_new();
        json_object_set_double_member(s, "scale", p->scaler.scale);
        json_object_set_double_member(s, "growth_factor", p->scaler_config.growth_factor);
        json_object_set_double_member(s, "backoff_factor", p->scaler_config.backoff_factor);
        json_object_set_member(s, "growth_interval", int_node(p->scaler_config.growth_interval));
        json_object_set_member(s, "_growth_tracker", int_node(p->scaler.growth_tracker));
        json_object_set_member(s, "skipped_steps", int_node(p->scaler.skipped));
        json_object_set_object_member(obj, "scaler", s);
    }
    JsonNode *node = object_node(obj);
    gboolean ok = write_json(c, RT_TRAINING_STATE_DIR "/" RT_MIXED_PRECISION_FILE, node, 4, error);
    json_node_unref(node);
    return ok;
}

static gboolean save_training_state(save_ctx *c, GError **error)
{
    const rt_checkpoint_save_info *info = c->info;
    JsonObject *step = json_object_new();
    json_object_set_member(step, "step", int_node(info->step));
    if (info->num_processes > 0)
        json_object_set_member(step, "num_processes", int_node(info->num_processes));
    if (info->batch_size > 0)
        json_object_set_member(step, "batch_size", int_node(info->batch_size));
    JsonNode *node = object_node(step);
    gboolean ok = write_json(c, RT_TRAINING_STATE_DIR "/" RT_TRAINING_STEP_FILE, node, 4, error);
    json_node_unref(node);
    if (!ok || !save_optimizer(c, error) || !save_scheduler(c, error) || !save_rng_state(c, error))
        return FALSE;

    JsonObject *state = json_object_new();
    json_object_set_member(state, "format", int_node(1));
    json_object_set_member(state, "step", int_node(info->step));
    if (info->has_seed)
        json_object_set_member(state, "seed", int_node((gint64)info->seed));
    else
        json_object_set_null_member(state, "seed");
    json_object_set_string_member(state, "rng", "philox4x32-10 (seed, step, node, element)");
    if (info->sampler) {
        const rt_ckpt_sampler *s = info->sampler;
        JsonObject *sampler = json_object_new();
        json_object_set_string_member(sampler, "order", "rt-sampler v1");
        json_object_set_member(sampler, "epoch", int_node(s->epoch));
        json_object_set_member(sampler, "batch", int_node(s->batch));
        json_object_set_member(sampler, "batches_per_epoch", int_node(s->batches_per_epoch));
        json_object_set_member(sampler, "num_items", int_node(s->num_items));
        json_object_set_member(sampler, "batch_size", int_node(s->batch_size));
        json_object_set_member(sampler, "world_size", int_node(s->world_size));
        json_object_set_member(sampler, "shuffle", bool_node(s->shuffle));
        json_object_set_member(sampler, "drop_last", bool_node(s->drop_last));
        json_object_set_object_member(state, "sampler", sampler);
    }
    node = object_node(state);
    ok = write_json(c, RT_TRAINING_STATE_DIR "/" RT_ROBOTRAIN_STATE_FILE, node, 4, error);
    json_node_unref(node);
    return ok && save_precision(c, error);
}

/* ---------------------------------------------------------------- the folder */

gboolean ckpt_remove_tree(const char *path, GError **error)
{
    GStatBuf st;
    if (g_lstat(path, &st) != 0)
        return errno == ENOENT
                   ? TRUE
                   : (g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: %s", path, g_strerror(errno)), FALSE);
    if (S_ISDIR(st.st_mode)) {
        GDir *dir = g_dir_open(path, 0, error);
        if (!dir)
            return FALSE;
        const char *name;
        gboolean ok = TRUE;
        while (ok && (name = g_dir_read_name(dir))) {
            g_autofree char *child = g_build_filename(path, name, NULL);
            ok = ckpt_remove_tree(child, error);
        }
        g_dir_close(dir);
        if (!ok)
            return FALSE;
        if (g_rmdir(path) != 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot remove: %s", path, g_strerror(errno));
            return FALSE;
        }
        return TRUE;
    }
    if (g_unlink(path) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot remove: %s", path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

/* Removes what interrupted saves left in the checkpoints folder. */
static void remove_leftovers(const char *checkpoints)
{
    GDir *dir = g_dir_open(checkpoints, 0, NULL);
    if (!dir)
        return;
    const char *name;
    GPtrArray *stale = g_ptr_array_new_with_free_func(g_free);
    while ((name = g_dir_read_name(dir)))
        if (g_str_has_prefix(name, ".rt-partial-") || g_str_has_prefix(name, ".rt-old-") ||
            g_str_has_prefix(name, ".rt-last-"))
            g_ptr_array_add(stale, g_build_filename(checkpoints, name, NULL));
    g_dir_close(dir);
    for (guint i = 0; i < stale->len; i++)
        ckpt_remove_tree(g_ptr_array_index(stale, i), NULL);
    g_ptr_array_unref(stale);
}

static gboolean make_dirs(save_ctx *c, GError **error)
{
    const char *subdirs[] = {RT_PRETRAINED_MODEL_DIR, RT_TRAINING_STATE_DIR};
    for (guint i = 0; i < G_N_ELEMENTS(subdirs); i++) {
        g_autofree char *path = g_build_filename(c->root, subdirs[i], NULL);
        if (g_mkdir(path, 0755) != 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot create: %s", path, g_strerror(errno));
            return FALSE;
        }
    }
    return TRUE;
}

/* Points checkpoints/last at name: a new symlink renamed over the old one. */
static gboolean update_last(const char *checkpoints, const char *name, GError **error)
{
    g_autofree char *tmp = g_strdup_printf("%s/.rt-last-%d", checkpoints, (int)getpid());
    g_autofree char *last = g_build_filename(checkpoints, RT_LAST_CHECKPOINT_LINK, NULL);
    g_unlink(tmp);
    if (symlink(name, tmp) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot create the symlink: %s", tmp,
                    g_strerror(errno));
        return FALSE;
    }
    if (g_rename(tmp, last) != 0) {
        int e = errno;
        g_unlink(tmp);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot replace it: %s", last, g_strerror(e));
        return FALSE;
    }
    return TRUE;
}

gboolean rt_checkpoint_save(const rt_checkpoint_save_info *info, char **dir, GError **error)
{
    g_return_val_if_fail(info && info->output_dir && info->graph && info->order && info->groups && info->cfg,
                         FALSE);
    if (dir)
        *dir = NULL;
    g_autofree char *checkpoints = g_build_filename(info->output_dir, RT_CHECKPOINTS_DIR, NULL);
    if (g_mkdir_with_parents(checkpoints, 0755) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot create: %s", checkpoints, g_strerror(errno));
        return FALSE;
    }
    remove_leftovers(checkpoints);
    g_autofree char *name = rt_checkpoint_step_name(info->step, info->total_steps);
    g_autofree char *final = g_build_filename(checkpoints, name, NULL);
    g_autofree char *template = g_strdup_printf("%s/.rt-partial-%s-XXXXXX", checkpoints, name);
    if (!g_mkdtemp_full(template, 0755)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot create a folder: %s", checkpoints,
                    g_strerror(errno));
        return FALSE;
    }
    save_ctx c = {info, template, g_ptr_array_new_with_free_func(g_free)};
    gboolean ok = make_dirs(&c, error) && save_pretrained(&c, error) && save_training_state(&c, error);
    g_ptr_array_unref(c.buffers);
    if (ok) {
        g_autofree char *pm = g_build_filename(template, RT_PRETRAINED_MODEL_DIR, NULL);
        g_autofree char *ts = g_build_filename(template, RT_TRAINING_STATE_DIR, NULL);
        ok = fsync_path(pm, TRUE, error) && fsync_path(ts, TRUE, error) && fsync_path(template, TRUE, error);
    }
    /* a checkpoint of this step already there (a resumed run saving the step it resumed at) goes
     * aside first, and away once the new one is in place */
    g_autofree char *old = NULL;
    if (ok && g_file_test(final, G_FILE_TEST_EXISTS)) {
        old = g_strdup_printf("%s/.rt-old-%s-%d", checkpoints, name, (int)getpid());
        if (g_rename(final, old) != 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot move the old checkpoint aside: %s", final,
                        g_strerror(errno));
            ok = FALSE;
        }
    }
    if (ok && g_rename(template, final) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot rename %s to it: %s", final, template,
                    g_strerror(errno));
        ok = FALSE;
        if (old)
            g_rename(old, final);
    }
    if (!ok) {
        ckpt_remove_tree(template, NULL);
        return FALSE;
    }
    if (old)
        ckpt_remove_tree(old, NULL);
    if (!update_last(checkpoints, name, error) || !fsync_path(checkpoints, TRUE, error))
        return FALSE;
    if (dir)
        *dir = g_steal_pointer(&final);
    return TRUE;
}
