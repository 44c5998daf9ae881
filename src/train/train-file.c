/* LeRobot's train_config.json and config.json: reading them into the train options and writing
 * them back in LeRobot's shape (see train-options.h). */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "core/options-private.h"
#include "core/json-write.h"
#include "train/train-options.h"

struct rt_train_file {
    char *path;
    JsonNode *root; /* in the shape of the options */
    char *policy_type;
};

/* What a LeRobot field robotrain does not act on may hold. */
typedef enum {
    FK_IGNORE,       /* anything: it changes nothing robotrain does */
    FK_NULL,         /* null */
    FK_FALSE,        /* false (or null) */
    FK_ZERO,         /* 0 (or null) */
    FK_EMPTY,        /* null, {} or [] */
    FK_LOCAL,        /* null or "local" */
    FK_DATASET_REPO, /* "dataset" */
    FK_TRANSFORMS,   /* null, or an object whose "enable" is false */
} foreign_rule;

typedef struct {
    const char *key; /* dotted path in train_config.json */
    foreign_rule rule;
    const char *why; /* what robotrain does not do, for refusals */
} foreign_key;

/* In order: a rule on a child (job.target) runs before its parent is dropped (job). */
static const foreign_key foreign_keys[] = {
    {"env", FK_NULL, "robotrain does not run simulation environments (evaluate with LeRobot)"},
    {"reward_model", FK_NULL, "robotrain trains policies, not reward models"},
    {"peft", FK_NULL, "PEFT adapters are not supported"},
    {"sample_weighting", FK_NULL, "sample weighting (RA-BC) is not supported"},
    {"use_rabc", FK_FALSE, "sample weighting (RA-BC) is not supported"},
    {"rabc_progress_path", FK_IGNORE, NULL},
    {"rabc_kappa", FK_IGNORE, NULL},
    {"rabc_epsilon", FK_IGNORE, NULL},
    {"rabc_head_mode", FK_IGNORE, NULL},
    {"rename_map", FK_EMPTY, "renaming observation keys is not supported"},
    {"save_checkpoint_to_hub", FK_FALSE, "pushing every checkpoint during training is not supported"},
    {"eval_steps", FK_ZERO, "the held-out evaluation loss (eval_steps) is not supported"},
    {"max_eval_samples", FK_IGNORE, NULL},
    {"eval_freq", FK_IGNORE, NULL},     /* only with an env, which must be null */
    {"env_eval_freq", FK_IGNORE, NULL}, /* the same, v0.6 name */
    {"eval", FK_IGNORE, NULL},
    {"job.target", FK_LOCAL, "Hugging Face Jobs are not supported: robotrain runs here"},
    {"job", FK_IGNORE, NULL},
    {"cudnn_deterministic", FK_IGNORE, NULL}, /* PyTorch's cuDNN autotuning */
    {"prefetch_factor", FK_IGNORE, NULL},     /* PyTorch DataLoader knobs */
    {"persistent_workers", FK_IGNORE, NULL},
    {"dataloader_multiprocessing_context", FK_IGNORE, NULL},
    {"checkpoint_path", FK_IGNORE, NULL}, /* derived from config_path */
    {"dataset.image_transforms", FK_TRANSFORMS,
     "image augmentation (dataset.image_transforms) is not supported"},
    {"dataset.video_backend", FK_IGNORE, NULL}, /* robotrain decodes with FFmpeg */
    {"dataset.streaming", FK_FALSE, "streaming datasets are not supported"},
    {"dataset.repo_type", FK_DATASET_REPO, "only Hub dataset repositories are supported"},
    {"dataset.return_uint8", FK_IGNORE, NULL},
    {"dataset.depth_output_unit", FK_IGNORE, NULL},
    {"dataset.eval_split", FK_ZERO, "held-out evaluation episodes (dataset.eval_split) are not supported"},
};

/* The policy dictionaries the options hold as JSON text. */
static const char *const feature_keys[] = {"input_features", "output_features"};

static gboolean is_number_zero(JsonNode *node)
{
    if (!JSON_NODE_HOLDS_VALUE(node))
        return FALSE;
    GType t = json_node_get_value_type(node);
    if (t == G_TYPE_INT64)
        return json_node_get_int(node) == 0;
    if (t == G_TYPE_DOUBLE)
        return json_node_get_double(node) == 0;
    return FALSE;
}

static gboolean is_value_type(JsonNode *node, GType type)
{
    return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == type;
}

static gboolean rule_accepts(foreign_rule rule, JsonNode *node)
{
    gboolean null = JSON_NODE_HOLDS_NULL(node);
    switch (rule) {
    case FK_IGNORE:
        return TRUE;
    case FK_NULL:
        return null;
    case FK_FALSE:
        return null || (is_value_type(node, G_TYPE_BOOLEAN) && !json_node_get_boolean(node));
    case FK_ZERO:
        return null || is_number_zero(node);
    case FK_EMPTY:
        return null ||
               (JSON_NODE_HOLDS_OBJECT(node) && json_object_get_size(json_node_get_object(node)) == 0) ||
               (JSON_NODE_HOLDS_ARRAY(node) && json_array_get_length(json_node_get_array(node)) == 0);
    case FK_LOCAL:
        return null ||
               (is_value_type(node, G_TYPE_STRING) && strcmp(json_node_get_string(node), "local") == 0);
    case FK_DATASET_REPO:
        return is_value_type(node, G_TYPE_STRING) && strcmp(json_node_get_string(node), "dataset") == 0;
    case FK_TRANSFORMS: {
        if (null)
            return TRUE;
        if (!JSON_NODE_HOLDS_OBJECT(node))
            return FALSE;
        JsonNode *enable = json_object_get_member(json_node_get_object(node), "enable");
        return !enable || JSON_NODE_HOLDS_NULL(enable) ||
               (is_value_type(enable, G_TYPE_BOOLEAN) && !json_node_get_boolean(enable));
    }
    }
    return FALSE;
}

/* The value at a dotted path and the object holding it, or NULL. */
static JsonNode *find_member(JsonObject *root, const char *key, JsonObject **parent, const char **member)
{
    g_auto(GStrv) parts = g_strsplit(key, ".", -1);
    JsonObject *object = root;
    guint n = g_strv_length(parts);
    for (guint i = 0; i + 1 < n; i++) {
        JsonNode *child = json_object_get_member(object, parts[i]);
        if (!child || !JSON_NODE_HOLDS_OBJECT(child))
            return NULL;
        object = json_node_get_object(child);
    }
    JsonNode *node = json_object_get_member(object, parts[n - 1]);
    if (node) {
        *parent = object;
        *member = key + strlen(key) - strlen(parts[n - 1]);
    }
    return node;
}

/* Puts the file into the shape of the options; collects what robotrain refuses. */
static void normalise(rt_train_file *f, JsonObject *root, opt_problems *problems)
{
    for (guint i = 0; i < G_N_ELEMENTS(foreign_keys); i++) {
        const foreign_key *fk = &foreign_keys[i];
        JsonObject *parent = NULL;
        const char *member = NULL;
        JsonNode *node = find_member(root, fk->key, &parent, &member);
        if (!node)
            continue;
        if (!rule_accepts(fk->rule, node)) {
            g_autofree char *value = rt_json_to_text(node, -1, FALSE);
            if (strlen(value) > 80)
                strcpy(value + 77, "...");
            opt_problems_add(problems, RT_ERROR_UNSUPPORTED, f->path, "%s is %s: %s; remove it from the file",
                             fk->key, value, fk->why);
            continue;
        }
        json_object_remove_member(parent, member);
    }

    /* "scheduler": null is no scheduler; "optimizer": null and "policy": null say nothing */
    JsonNode *scheduler = json_object_get_member(root, "scheduler");
    if (scheduler && JSON_NODE_HOLDS_NULL(scheduler)) {
        JsonObject *none = json_object_new();
        json_object_set_string_member(none, "type", "none");
        json_object_set_object_member(root, "scheduler", none);
    }
    static const char *const nullable_groups[] = {"optimizer", "policy"};
    for (guint i = 0; i < G_N_ELEMENTS(nullable_groups); i++) {
        JsonNode *node = json_object_get_member(root, nullable_groups[i]);
        if (node && JSON_NODE_HOLDS_NULL(node))
            json_object_remove_member(root, nullable_groups[i]);
    }
    JsonNode *policy = json_object_get_member(root, "policy");
    if (policy && JSON_NODE_HOLDS_OBJECT(policy)) {
        JsonObject *po = json_node_get_object(policy);
        JsonNode *type = json_object_get_member(po, "type");
        if (type && is_value_type(type, G_TYPE_STRING))
            f->policy_type = g_strdup(json_node_get_string(type));
        /* the features: objects in the file, JSON text in the options (null: take them from
         * the dataset, as {} does) */
        for (guint i = 0; i < G_N_ELEMENTS(feature_keys); i++) {
            JsonNode *fn = json_object_get_member(po, feature_keys[i]);
            if (!fn || !(JSON_NODE_HOLDS_OBJECT(fn) || JSON_NODE_HOLDS_NULL(fn)))
                continue; /* a string is already text; anything else the option refuses */
            g_autofree char *text =
                JSON_NODE_HOLDS_NULL(fn) ? g_strdup("{}") : rt_json_to_text(fn, -1, FALSE);
            json_object_set_string_member(po, feature_keys[i], text);
        }
    }
}

void rt_train_file_free(rt_train_file *file)
{
    if (!file)
        return;
    g_free(file->path);
    if (file->root)
        json_node_unref(file->root);
    g_free(file->policy_type);
    g_free(file);
}

rt_train_file *rt_train_file_load_data(const char *text, gsize length, const char *name, gboolean policy_only,
                                       GError **error)
{
    g_return_val_if_fail(text != NULL && name != NULL, NULL);
    GString *overflow = g_string_new(NULL);
    if (!opt_json_check_integers(text, length, overflow)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s", name, overflow->str);
        g_string_free(overflow, TRUE);
        return NULL;
    }
    g_string_free(overflow, TRUE);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) json_error = NULL;
    if (!json_parser_load_from_data(parser, text, (gssize)length, &json_error)) {
        const char *msg = json_error->message;
        if (g_str_has_prefix(msg, "<data>:"))
            msg += strlen("<data>:");
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s:%s (not valid JSON)", name, msg);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: %s holds one JSON object ({\"key\": value, ...}), not %s", name,
                    policy_only ? RT_POLICY_CONFIG_NAME : RT_TRAIN_CONFIG_NAME,
                    !root                         ? "nothing"
                    : JSON_NODE_HOLDS_ARRAY(root) ? "an array"
                                                  : "a single value");
        return NULL;
    }
    rt_train_file *f = g_new0(rt_train_file, 1);
    f->path = g_strdup(name);
    f->root = json_parser_steal_root(parser);
    if (policy_only) {
        JsonObject *wrapper = json_object_new();
        json_object_set_member(wrapper, "policy", f->root);
        f->root = json_node_init_object(json_node_alloc(), wrapper);
        json_object_unref(wrapper);
    }
    opt_problems problems = {NULL, 0};
    normalise(f, json_node_get_object(f->root), &problems);
    if (!opt_problems_finish(&problems, error)) {
        rt_train_file_free(f);
        return NULL;
    }
    return f;
}

static rt_train_file *load_file(const char *path, const char *default_name, gboolean policy_only,
                                GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autofree char *file =
        g_file_test(path, G_FILE_TEST_IS_DIR) ? g_build_filename(path, default_name, NULL) : g_strdup(path);
    gsize length = 0;
    g_autofree char *text = opt_read_config_file(file, &length, error);
    if (!text)
        return NULL;
    return rt_train_file_load_data(text, length, file, policy_only, error);
}

rt_train_file *rt_train_file_load(const char *path, GError **error)
{
    return load_file(path, RT_TRAIN_CONFIG_NAME, FALSE, error);
}

rt_train_file *rt_train_file_load_policy(const char *path, GError **error)
{
    return load_file(path, RT_POLICY_CONFIG_NAME, TRUE, error);
}

const char *rt_train_file_path(const rt_train_file *file)
{
    return file->path;
}

const char *rt_train_file_policy_type(const rt_train_file *file)
{
    return file->policy_type;
}

gboolean rt_train_file_apply(const rt_train_file *file, rt_config *cfg, GError **error)
{
    g_return_val_if_fail(file != NULL && cfg != NULL, FALSE);
    g_autofree char *text = rt_json_to_text(file->root, -1, FALSE);
    return rt_config_load_json_data(cfg, text, strlen(text), file->path, error);
}

/* ---------------------------------------------------------------- writing */

/* A copy of object with the members named in `first` first (those it has), then the others in
 * their order. */
static JsonObject *reordered(JsonObject *object, const char *const *first, size_t n_first)
{
    JsonObject *out = json_object_new();
    for (size_t i = 0; i < n_first; i++)
        if (json_object_has_member(object, first[i]))
            json_object_set_member(out, first[i], json_object_dup_member(object, first[i]));
    GList *members = json_object_get_members(object);
    for (GList *m = members; m; m = m->next)
        if (!json_object_has_member(out, m->data))
            json_object_set_member(out, m->data, json_object_dup_member(object, m->data));
    g_list_free(members);
    return out;
}

/* LeRobot's order: TrainPipelineConfig's fields, PreTrainedConfig's fields. */
static const char *const top_order[] = {
    "dataset",
    "env",
    "policy",
    "output_dir",
    "job_name",
    "resume",
    "seed",
    "num_workers",
    "batch_size",
    "steps",
    "log_freq",
    "tolerance_s",
    "save_checkpoint",
    "save_freq",
    "use_policy_training_preset",
    "optimizer",
    "scheduler",
    "eval",
    "wandb",
};
static const char *const policy_order[] = {
    "type",
    "n_obs_steps",
    "input_features",
    "output_features",
    "device",
    "use_amp",
    "use_peft",
    "push_to_hub",
    "repo_id",
    "private",
    "tags",
    "license",
    "pretrained_path",
    "pretrained_revision",
    "normalization_mapping",
};

/* The "policy" object as LeRobot writes it, or NULL without a policy type. (transfer full) */
static JsonObject *policy_object(JsonObject *root)
{
    JsonNode *node = json_object_get_member(root, "policy");
    if (!node || !JSON_NODE_HOLDS_OBJECT(node))
        return NULL;
    JsonObject *policy = json_node_get_object(node);
    JsonNode *type = json_object_get_member(policy, "type");
    if (!type || JSON_NODE_HOLDS_NULL(type))
        return NULL;
    json_object_remove_member(policy, "path"); /* a command-line argument of LeRobot, not a field */
    for (guint i = 0; i < G_N_ELEMENTS(feature_keys); i++) {
        JsonNode *fn = json_object_get_member(policy, feature_keys[i]);
        if (!fn || !JSON_NODE_HOLDS_VALUE(fn) || json_node_get_value_type(fn) != G_TYPE_STRING)
            continue;
        g_autoptr(JsonParser) parser = json_parser_new();
        if (json_parser_load_from_data(parser, json_node_get_string(fn), -1, NULL))
            json_object_set_member(policy, feature_keys[i], json_parser_steal_root(parser));
    }
    return reordered(policy, policy_order, G_N_ELEMENTS(policy_order));
}

/* The scheduler as LeRobot writes it: null, or the chosen type's fields. (transfer full) */
static JsonNode *scheduler_node(JsonObject *root)
{
    JsonNode *node = json_object_get_member(root, "scheduler");
    JsonObject *scheduler = node && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
    const char *type =
        scheduler ? json_object_get_string_member_with_default(scheduler, "type", "none") : "none";
    if (strcmp(type, "none") == 0)
        return json_node_new(JSON_NODE_NULL);
    static const char *const diffuser[] = {"num_warmup_steps", "name"};
    static const char *const cosine[] = {"num_warmup_steps", "num_decay_steps", "peak_lr", "decay_lr"};
    gboolean is_diffuser = strcmp(type, "diffuser") == 0;
    const char *const *fields = is_diffuser ? diffuser : cosine;
    size_t n = is_diffuser ? G_N_ELEMENTS(diffuser) : G_N_ELEMENTS(cosine);
    JsonObject *out = json_object_new();
    json_object_set_string_member(out, "type", type);
    for (size_t i = 0; i < n; i++)
        if (json_object_has_member(scheduler, fields[i]))
            json_object_set_member(out, fields[i], json_object_dup_member(scheduler, fields[i]));
    JsonNode *result = json_node_init_object(json_node_alloc(), out);
    json_object_unref(out);
    return result;
}

/* cfg's values as a JSON tree. (transfer full) */
static JsonNode *config_tree(const rt_config *cfg)
{
    g_autofree char *text = rt_config_to_json(cfg);
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, text, -1, NULL))
        g_return_val_if_reached(NULL); /* our own writer's output */
    return json_parser_steal_root(parser);
}

char *rt_train_config_to_json(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    JsonNode *tree = config_tree(cfg);
    JsonObject *root = json_node_get_object(tree);
    json_object_remove_member(root, "config_path");
    JsonObject *policy = policy_object(root);
    if (policy)
        json_object_set_object_member(root, "policy", policy);
    else if (json_object_has_member(root, "policy"))
        json_object_set_null_member(root, "policy");
    if (json_object_has_member(root, "scheduler"))
        json_object_set_member(root, "scheduler", scheduler_node(root));
    JsonObject *ordered = reordered(root, top_order, G_N_ELEMENTS(top_order));
    JsonNode *out = json_node_init_object(json_node_alloc(), ordered);
    char *text = rt_json_to_text(out, 4, FALSE);
    json_object_unref(ordered);
    json_node_unref(out);
    json_node_unref(tree);
    return text;
}

char *rt_train_policy_config_to_json(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    JsonNode *tree = config_tree(cfg);
    JsonObject *policy = policy_object(json_node_get_object(tree));
    char *text = NULL;
    if (policy) {
        JsonNode *out = json_node_init_object(json_node_alloc(), policy);
        text = rt_json_to_text(out, 4, FALSE);
        json_node_unref(out);
        json_object_unref(policy);
    }
    json_node_unref(tree);
    return text;
}
