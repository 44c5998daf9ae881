/* Checkpoints in LeRobot's layout: reading them back for resume and fine-tuning (see
 * checkpoint.h). Every file is untrusted: sizes are bounded and every value is checked before
 * use; errors name the file and the key. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/error.h>
#include <robotrain/safetensors.h>

#include "train/checkpoint-private.h"

/* JSON files of a training state are small; anything larger is not one. */
#define CKPT_MAX_JSON (16u << 20)

struct rt_checkpoint {
    char *dir;
    int64_t step;
    int num_processes;
    int64_t batch_size;
    int n_groups;
    rt_adamw_group *groups;
    double *initial_lr;
    int64_t **params; /* [n_groups] the state indices of each group */
    int *n_params;
    int64_t scheduler_step;
    gboolean has_seed;
    uint64_t seed;
    gboolean has_sampler;
    rt_ckpt_sampler sampler;
    gboolean has_precision;
    char *mixed_precision;
    rt_ckpt_precision precision;
};

/* ---------------------------------------------------------------- JSON helpers */

static JsonNode *load_json(const char *path, gboolean required, GError **error)
{
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        if (required)
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND, "%s: no such file: the checkpoint is incomplete",
                        path);
        return NULL;
    }
    g_autofree char *text = NULL;
    gsize length = 0;
    g_autoptr(GError) io = NULL;
    if (!g_file_get_contents(path, &text, &length, &io)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: %s", path, io->message);
        return NULL;
    }
    if (length > CKPT_MAX_JSON) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: %" G_GSIZE_FORMAT " bytes is too large for this file", path, length);
        return NULL;
    }
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) json_error = NULL;
    if (!json_parser_load_from_data(parser, text, (gssize)length, &json_error)) {
        const char *msg = json_error->message;
        if (g_str_has_prefix(msg, "<data>:"))
            msg += strlen("<data>:");
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s:%s (not valid JSON)", path, msg);
        return NULL;
    }
    return json_parser_steal_root(parser);
}

static gboolean is_number(JsonNode *n)
{
    if (!n || !JSON_NODE_HOLDS_VALUE(n))
        return FALSE;
    GType t = json_node_get_value_type(n);
    return t == G_TYPE_INT64 || t == G_TYPE_DOUBLE;
}

static double number_of(JsonNode *n)
{
    return json_node_get_value_type(n) == G_TYPE_INT64 ? (double)json_node_get_int(n)
                                                       : json_node_get_double(n);
}

static gboolean is_int(JsonNode *n)
{
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64;
}

/* An integer member >= lo; absent: *out untouched and FALSE without error when optional. */
static gboolean get_int(JsonObject *o, const char *key, const char *file, const char *where, gint64 lo,
                        gboolean required, gint64 *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n) {
        if (required)
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s has no \"%s\"", file, where, key);
        return FALSE;
    }
    if (!is_int(n) || json_node_get_int(n) < lo) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s\"%s\" must be an integer >= %" G_GINT64_FORMAT,
                    file, where, key, lo);
        return FALSE;
    }
    *out = json_node_get_int(n);
    return TRUE;
}

static gboolean get_number(JsonObject *o, const char *key, const char *file, const char *where, double *out,
                           GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!is_number(n) || !isfinite(number_of(n))) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s\"%s\" must be a number", file, where, key);
        return FALSE;
    }
    *out = number_of(n);
    return TRUE;
}

/* A boolean member that must be false (or absent / null) for robotrain to follow it. */
static gboolean need_false(JsonObject *o, const char *key, const char *file, const char *where,
                           GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n || JSON_NODE_HOLDS_NULL(n))
        return TRUE;
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
        !json_node_get_boolean(n))
        return TRUE;
    g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                "%s: %s\"%s\" is not false: robotrain's AdamW has no %s", file, where, key, key);
    return FALSE;
}

/* ---------------------------------------------------------------- the training state */

void rt_checkpoint_free(rt_checkpoint *ck)
{
    if (!ck)
        return;
    for (int i = 0; i < ck->n_groups; i++)
        g_free(ck->params[i]);
    g_free(ck->params);
    g_free(ck->n_params);
    g_free(ck->groups);
    g_free(ck->initial_lr);
    g_free(ck->dir);
    g_free(ck->mixed_precision);
    g_free(ck);
}

static gboolean read_step(rt_checkpoint *ck, const char *state_dir, GError **error)
{
    g_autofree char *path = g_build_filename(state_dir, RT_TRAINING_STEP_FILE, NULL);
    JsonNode *root = load_json(path, TRUE, error);
    if (!root)
        return FALSE;
    gboolean ok = FALSE;
    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: expected an object {\"step\": N}", path);
    } else {
        JsonObject *o = json_node_get_object(root);
        gint64 v = -1;
        GError *local = NULL;
        ok = get_int(o, "step", path, "", 0, TRUE, &ck->step, error);
        /* v0.6 adds the world size and batch size; older checkpoints lack them */
        if (ok && get_int(o, "num_processes", path, "", 1, FALSE, &v, &local))
            ck->num_processes = (int)MIN(v, G_MAXINT);
        if (ok && !local)
            get_int(o, "batch_size", path, "", 1, FALSE, &ck->batch_size, &local);
        if (local) {
            g_propagate_error(error, local);
            ok = FALSE;
        }
    }
    json_node_unref(root);
    return ok;
}

static gboolean read_groups(rt_checkpoint *ck, const char *state_dir, GError **error)
{
    g_autofree char *path = g_build_filename(state_dir, RT_OPTIMIZER_GROUPS_FILE, NULL);
    JsonNode *root = load_json(path, TRUE, error);
    if (!root)
        return FALSE;
    gboolean ok = TRUE;
    JsonArray *groups = JSON_NODE_HOLDS_ARRAY(root) ? json_node_get_array(root) : NULL;
    guint n = groups ? json_array_get_length(groups) : 0;
    if (!groups || n == 0 || n > 64) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: expected a list of 1 to 64 parameter groups",
                    path);
        json_node_unref(root);
        return FALSE;
    }
    ck->n_groups = (int)n;
    ck->groups = g_new0(rt_adamw_group, n);
    ck->initial_lr = g_new(double, n);
    ck->params = g_new0(int64_t *, n);
    ck->n_params = g_new0(int, n);
    for (guint i = 0; ok && i < n; i++) {
        g_autofree char *where = g_strdup_printf("group %u: ", i);
        JsonNode *gn = json_array_get_element(groups, i);
        if (!JSON_NODE_HOLDS_OBJECT(gn)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: group %u is not an object", path, i);
            ok = FALSE;
            break;
        }
        JsonObject *g = json_node_get_object(gn);
        rt_adamw_group *h = &ck->groups[i];
        ok = get_number(g, "lr", path, where, &h->lr, error) &&
             get_number(g, "eps", path, where, &h->eps, error) &&
             get_number(g, "weight_decay", path, where, &h->weight_decay, error) &&
             need_false(g, "amsgrad", path, where, error) && need_false(g, "maximize", path, where, error);
        if (!ok)
            break;
        JsonNode *betas = json_object_get_member(g, "betas");
        JsonArray *ba = betas && JSON_NODE_HOLDS_ARRAY(betas) ? json_node_get_array(betas) : NULL;
        if (!ba || json_array_get_length(ba) != 2 || !is_number(json_array_get_element(ba, 0)) ||
            !is_number(json_array_get_element(ba, 1))) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s\"betas\" must be a list of two numbers",
                        path, where);
            ok = FALSE;
            break;
        }
        h->beta1 = number_of(json_array_get_element(ba, 0));
        h->beta2 = number_of(json_array_get_element(ba, 1));
        ck->initial_lr[i] = NAN;
        JsonNode *initial = json_object_get_member(g, "initial_lr");
        if (initial && !get_number(g, "initial_lr", path, where, &ck->initial_lr[i], error)) {
            ok = FALSE;
            break;
        }
        JsonNode *params = json_object_get_member(g, "params");
        JsonArray *pa = params && JSON_NODE_HOLDS_ARRAY(params) ? json_node_get_array(params) : NULL;
        if (!pa || json_array_get_length(pa) > (1u << 24)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: %s\"params\" must be a list of parameter indices", path, where);
            ok = FALSE;
            break;
        }
        ck->n_params[i] = (int)json_array_get_length(pa);
        ck->params[i] = g_new(int64_t, MAX(ck->n_params[i], 1));
        for (int k = 0; k < ck->n_params[i]; k++) {
            JsonNode *e = json_array_get_element(pa, (guint)k);
            if (!is_int(e) || json_node_get_int(e) < 0) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s\"params\"[%d] is not a parameter index",
                            path, where, k);
                ok = FALSE;
                break;
            }
            ck->params[i][k] = json_node_get_int(e);
        }
    }
    json_node_unref(root);
    return ok;
}

static gboolean read_scheduler(rt_checkpoint *ck, const char *state_dir, GError **error)
{
    g_autofree char *path = g_build_filename(state_dir, RT_SCHEDULER_STATE_FILE, NULL);
    ck->scheduler_step = -1;
    GError *local = NULL;
    JsonNode *root = load_json(path, FALSE, &local);
    if (!root) {
        if (local)
            g_propagate_error(error, local);
        return local == NULL;
    }
    gboolean ok = JSON_NODE_HOLDS_OBJECT(root) && get_int(json_node_get_object(root), "last_epoch", path, "",
                                                          0, TRUE, &ck->scheduler_step, error);
    if (!ok && error && !*error)
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: expected LambdaLR's state (an object)", path);
    json_node_unref(root);
    return ok;
}

static gboolean read_robotrain_state(rt_checkpoint *ck, const char *state_dir, GError **error)
{
    g_autofree char *path = g_build_filename(state_dir, RT_ROBOTRAIN_STATE_FILE, NULL);
    GError *local = NULL;
    JsonNode *root = load_json(path, FALSE, &local);
    if (!root) {
        if (local)
            g_propagate_error(error, local);
        return local == NULL; /* a LeRobot checkpoint has none */
    }
    gboolean ok = TRUE;
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    gint64 format = 0, v = 0;
    if (!o || !get_int(o, "format", path, "", 1, TRUE, &format, error)) {
        if (error && !*error)
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: expected an object with \"format\": 1", path);
        ok = FALSE;
    } else if (format != 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "%s: \"format\" %" G_GINT64_FORMAT " is newer than this robotrain (1): update robotrain",
                    path, format);
        ok = FALSE;
    }
    if (ok && json_object_has_member(o, "seed") && !JSON_NODE_HOLDS_NULL(json_object_get_member(o, "seed"))) {
        ok = get_int(o, "seed", path, "", 0, TRUE, &v, error);
        ck->has_seed = ok;
        ck->seed = (uint64_t)v;
    }
    JsonNode *sn = ok ? json_object_get_member(o, "sampler") : NULL;
    if (sn && JSON_NODE_HOLDS_OBJECT(sn)) {
        JsonObject *s = json_node_get_object(sn);
        rt_ckpt_sampler *out = &ck->sampler;
        gint64 ws = 1;
        ok = get_int(s, "epoch", path, "sampler: ", 0, TRUE, &out->epoch, error) &&
             get_int(s, "batch", path, "sampler: ", 0, TRUE, &out->batch, error) &&
             get_int(s, "batches_per_epoch", path, "sampler: ", 1, TRUE, &out->batches_per_epoch, error) &&
             get_int(s, "num_items", path, "sampler: ", 1, TRUE, &out->num_items, error) &&
             get_int(s, "batch_size", path, "sampler: ", 1, TRUE, &out->batch_size, error) &&
             get_int(s, "world_size", path, "sampler: ", 1, TRUE, &ws, error);
        if (ok) {
            out->world_size = (int)MIN(ws, G_MAXINT);
            out->shuffle = json_object_get_boolean_member_with_default(s, "shuffle", TRUE);
            out->drop_last = json_object_get_boolean_member_with_default(s, "drop_last", FALSE);
            ck->has_sampler = TRUE;
        }
    }
    json_node_unref(root);
    return ok;
}

/* mixed_precision.json (optional): the precision and, for fp16, the scaler's state */
static gboolean read_precision(rt_checkpoint *ck, const char *state_dir, GError **error)
{
    g_autofree char *path = g_build_filename(state_dir, RT_MIXED_PRECISION_FILE, NULL);
    GError *local = NULL;
    JsonNode *root = load_json(path, FALSE, &local);
    if (!root) {
        if (local)
            g_propagate_error(error, local);
        return local == NULL; /* a float32 run */
    }
    JsonObject *o = JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
    const char *mode = o ? json_object_get_string_member_with_default(o, "mixed_precision", NULL) : NULL;
    gboolean ok = mode && (strcmp(mode, "fp16") == 0 || strcmp(mode, "bf16") == 0);
    if (!ok)
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: expected an object with \"mixed_precision\": \"fp16\" or \"bf16\"", path);
    rt_ckpt_precision *p = &ck->precision;
    JsonNode *sn = ok && o ? json_object_get_member(o, "scaler") : NULL;
    if (ok && sn && !JSON_NODE_HOLDS_NULL(sn)) {
        JsonObject *s = JSON_NODE_HOLDS_OBJECT(sn) ? json_node_get_object(sn) : NULL;
        gint64 interval = 0, tracker = 0, skipped = 0;
        ok = s && get_number(s, "scale", path, "scaler: ", &p->scaler.scale, error) &&
             get_number(s, "growth_factor", path, "scaler: ", &p->scaler_config.growth_factor, error) &&
             get_number(s, "backoff_factor", path, "scaler: ", &p->scaler_config.backoff_factor, error) &&
             get_int(s, "growth_interval", path, "scaler: ", 1, TRUE, &interval, error) &&
             get_int(s, "_growth_tracker", path, "scaler: ", 0, TRUE, &tracker, error);
        if (ok && json_object_has_member(s, "skipped_steps"))
            ok = get_int(s, "skipped_steps", path, "scaler: ", 0, TRUE, &skipped, error);
        if (!s && error && !*error)
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: \"scaler\" must be an object", path);
        if (ok && (!(p->scaler.scale > 0) || !((float)p->scaler.scale > 0) || isinf((float)p->scaler.scale) ||
                   !(p->scaler_config.growth_factor > 1) || !(p->scaler_config.backoff_factor > 0) ||
                   !(p->scaler_config.backoff_factor < 1))) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: scaler: scale %g, growth_factor %g, backoff_factor %g: the scale must be a "
                        "positive float32, growth_factor > 1 and backoff_factor in (0, 1)",
                        path, p->scaler.scale, p->scaler_config.growth_factor, p->scaler_config.backoff_factor);
            ok = FALSE;
        }
        p->has_scaler = ok;
        p->scaler_config.init_scale = p->scaler.scale;
        p->scaler_config.growth_interval = interval;
        p->scaler.growth_tracker = tracker;
        p->scaler.skipped = skipped;
    }
    if (ok) {
        ck->mixed_precision = g_strdup(mode);
        p->mixed_precision = ck->mixed_precision;
        ck->has_precision = TRUE;
    }
    json_node_unref(root);
    return ok;
}

rt_checkpoint *rt_checkpoint_open(const char *checkpoint_dir, GError **error)
{
    g_return_val_if_fail(checkpoint_dir != NULL, NULL);
    g_autofree char *state_dir = g_build_filename(checkpoint_dir, RT_TRAINING_STATE_DIR, NULL);
    if (!g_file_test(state_dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_NOT_FOUND,
            "%s: no such folder: %s is not a checkpoint written by training (it needs pretrained_model/ and "
            "training_state/)",
            state_dir, checkpoint_dir);
        return NULL;
    }
    rt_checkpoint *ck = g_new0(rt_checkpoint, 1);
    ck->dir = g_strdup(checkpoint_dir);
    ck->num_processes = -1;
    ck->batch_size = -1;
    if (!read_step(ck, state_dir, error) || !read_groups(ck, state_dir, error) ||
        !read_scheduler(ck, state_dir, error) || !read_robotrain_state(ck, state_dir, error) ||
        !read_precision(ck, state_dir, error)) {
        rt_checkpoint_free(ck);
        return NULL;
    }
    return ck;
}

const char *rt_checkpoint_dir(const rt_checkpoint *ck)
{
    return ck->dir;
}

int64_t rt_checkpoint_step(const rt_checkpoint *ck)
{
    return ck->step;
}

int rt_checkpoint_num_processes(const rt_checkpoint *ck)
{
    return ck->num_processes;
}

int64_t rt_checkpoint_batch_size(const rt_checkpoint *ck)
{
    return ck->batch_size;
}

int rt_checkpoint_n_groups(const rt_checkpoint *ck)
{
    return ck->n_groups;
}

const rt_adamw_group *rt_checkpoint_group(const rt_checkpoint *ck, int group)
{
    g_return_val_if_fail(group >= 0 && group < ck->n_groups, NULL);
    return &ck->groups[group];
}

double rt_checkpoint_initial_lr(const rt_checkpoint *ck, int group)
{
    g_return_val_if_fail(group >= 0 && group < ck->n_groups, NAN);
    return ck->initial_lr[group];
}

int64_t rt_checkpoint_scheduler_step(const rt_checkpoint *ck)
{
    return ck->scheduler_step;
}

gboolean rt_checkpoint_get_seed(const rt_checkpoint *ck, uint64_t *seed)
{
    if (ck->has_seed && seed)
        *seed = ck->seed;
    return ck->has_seed;
}

gboolean rt_checkpoint_get_sampler(const rt_checkpoint *ck, rt_ckpt_sampler *sampler)
{
    if (ck->has_sampler && sampler)
        *sampler = ck->sampler;
    return ck->has_sampler;
}

gboolean rt_checkpoint_get_precision(const rt_checkpoint *ck, rt_ckpt_precision *precision)
{
    if (ck->has_precision && precision)
        *precision = ck->precision;
    return ck->has_precision;
}

/* ---------------------------------------------------------------- tensors */

/* Writes a file tensor into a planned tensor (or a storage view of one) after checking it. */
static gboolean load_tensor(rt_graph *g, const rt_safetensors *st, const char *key, const rt_tensor *t,
                            const char *what, GError **error)
{
    rt_st_dtype dtype;
    if (!ckpt_st_dtype(t->dtype, &dtype)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s has a dtype safetensors cannot hold", key);
        return FALSE;
    }
    const rt_st_tensor *ft = rt_safetensors_expect(st, key, dtype, t->ndim, t->shape, error);
    if (!ft) {
        if (what && error && *error)
            g_prefix_error(error, "%s: ", what);
        return FALSE;
    }
    return rt_graph_write(g, t, ft->data, ft->n_bytes, error);
}

gboolean rt_checkpoint_load_model(const char *path, rt_graph *g, GError **error)
{
    g_return_val_if_fail(path != NULL && g != NULL, FALSE);
    g_autofree char *file =
        g_file_test(path, G_FILE_TEST_IS_DIR) ? g_build_filename(path, RT_MODEL_FILE, NULL) : g_strdup(path);
    rt_safetensors *st = rt_safetensors_open(file, error);
    if (!st)
        return FALSE;
    gboolean ok = TRUE;
    GHashTable *known = g_hash_table_new(g_str_hash, g_str_equal);
    for (int list = 0; ok && list < 2; list++) {
        int n = list == 0 ? rt_graph_n_params(g) : rt_graph_n_buffers(g);
        for (int i = 0; ok && i < n; i++) {
            const rt_tensor *t = list == 0 ? rt_graph_param(g, i) : rt_graph_buffer(g, i);
            g_hash_table_add(known, (gpointer)t->name);
            ok = load_tensor(g, st, t->name, t, NULL, error);
        }
    }
    for (size_t i = 0; ok && i < rt_safetensors_n_tensors(st); i++) {
        const rt_st_tensor *ft = rt_safetensors_tensor_at(st, i);
        if (g_hash_table_contains(known, ft->name))
            continue;
        gboolean old_format =
            g_str_has_prefix(ft->name, "normalize_") || g_str_has_prefix(ft->name, "unnormalize_");
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: tensor '%s' is not a parameter or buffer of this policy%s", file, ft->name,
                    old_format
                        ? " (a LeRobot v0.3 checkpoint keeps normalization statistics in the model: convert "
                          "it with LeRobot's migrate_policy_normalization.py)"
                        : " (a checkpoint of another policy type or configuration?)");
        ok = FALSE;
    }
    g_hash_table_unref(known);
    rt_safetensors_close(st);
    return ok;
}

/* A 0-d (or one-element) float step count. */
static gboolean read_step_value(const rt_safetensors *st, const char *key, double *value, GError **error)
{
    const rt_st_tensor *t = rt_safetensors_find(st, key);
    if (!t) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND, "%s: no tensor '%s'", rt_safetensors_path(st), key);
        return FALSE;
    }
    float f = 0;
    if (t->n_elements != 1 || !rt_safetensors_copy_f32(st, t, &f, 1, NULL)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: '%s' must be one float (the step count)",
                    rt_safetensors_path(st), key);
        return FALSE;
    }
    *value = f;
    return TRUE;
}

gboolean rt_checkpoint_load_optimizer(const rt_checkpoint *ck, rt_graph *g, const rt_param_order *order,
                                      GError **error)
{
    g_return_val_if_fail(ck != NULL && g != NULL && order != NULL, FALSE);
    g_autofree char *groups_file =
        g_build_filename(ck->dir, RT_TRAINING_STATE_DIR, RT_OPTIMIZER_GROUPS_FILE, NULL);
    if (ck->n_groups != order->n_groups) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: %d parameter groups, but this run has %d (was use_policy_training_preset changed?)",
                    groups_file, ck->n_groups, order->n_groups);
        return FALSE;
    }
    for (int k = 0, next = 0; k < ck->n_groups; k++) {
        gboolean same = ck->n_params[k] == order->group_len[k];
        for (int i = 0; same && i < ck->n_params[k]; i++)
            same = ck->params[k][i] == next + i;
        if (!same) {
            g_autofree char *expect = g_strdup_printf("%d parameters, %d to %d", order->group_len[k], next,
                                                      next + order->group_len[k] - 1);
            g_set_error(
                error, RT_ERROR, RT_ERROR_FORMAT,
                "%s: group %d: \"params\" has %d indices, but this policy's group %d has %s (a checkpoint of "
                "another policy configuration?)",
                groups_file, k, ck->n_params[k], k, expect);
            return FALSE;
        }
        next += order->group_len[k];
    }

    g_autofree char *state_file =
        g_build_filename(ck->dir, RT_TRAINING_STATE_DIR, RT_OPTIMIZER_STATE_FILE, NULL);
    rt_safetensors *st = rt_safetensors_open(state_file, error);
    if (!st)
        return FALSE;
    gboolean ok = TRUE, have_step = FALSE;
    double step = 0;
    for (size_t i = 0; ok && i < rt_safetensors_n_tensors(st); i++) {
        /* every key is state/<index>/<name> with an index of this policy */
        const char *name = rt_safetensors_tensor_at(st, i)->name;
        char *end = NULL;
        gint64 index = g_str_has_prefix(name, "state/") ? g_ascii_strtoll(name + 6, &end, 10) : -1;
        if (index < 0 || index >= order->n_params || !end || *end != '/' || end == name + 6) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: tensor '%s' is not state/<i>/<name> with i a parameter index below %d",
                        state_file, name, order->n_params);
            ok = FALSE;
        }
    }
    for (int i = 0; ok && i < order->n_params; i++) {
        const rt_tensor *p = rt_graph_param(g, order->param_at[i]);
        if (!rt_graph_grad(g, p))
            continue;
        g_autofree char *km = g_strdup_printf("state/%d/exp_avg", i);
        g_autofree char *kv = g_strdup_printf("state/%d/exp_avg_sq", i);
        g_autofree char *ks = g_strdup_printf("state/%d/step", i);
        g_autofree char *what = g_strdup_printf("state of parameter %d (%s)", i, p->name);
        rt_tensor m = ckpt_param_view(p, RT_STORAGE_ADAM_M), v = ckpt_param_view(p, RT_STORAGE_ADAM_V);
        double s = 0;
        ok = load_tensor(g, st, km, &m, what, error) && load_tensor(g, st, kv, &v, what, error) &&
             read_step_value(st, ks, &s, error);
        if (ok && have_step && s != step) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                "%s: '%s' is %g but earlier parameters' step is %g: robotrain keeps one step count for all "
                "parameters",
                state_file, ks, s, step);
            ok = FALSE;
        }
        step = s;
        have_step = TRUE;
    }
    rt_safetensors_close(st);
    if (!ok)
        return FALSE;
    if (have_step && !rt_graph_set_step(g, step, error))
        return FALSE;
    for (int k = 0; k < ck->n_groups; k++)
        if (!rt_graph_set_lr(g, k, ck->groups[k].lr, error))
            return FALSE;
    return TRUE;
}
