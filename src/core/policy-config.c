/* Policy options: the rows every policy shares (LeRobot's PreTrainedConfig), their declaration
 * beside a module's own rows, and LeRobot's flat policy config.json. */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/policy.h>

#define FEATURES_HELP_TAIL                                                                         \
    " as in LeRobot's config.json: a JSON object mapping each key to {\"type\": ..., \"shape\": "  \
    "[...]}"

static const rt_option common_options[] = {
    {.key = "type", .type = RT_OPT_STRING, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "The policy: the name of a policy module ('robotrain plugins' lists them), e.g. act."},
    {.key = "input_features", .type = RT_OPT_STRING, .default_value = "{}",
     .help = "The policy's inputs" FEATURES_HELP_TAIL
             " ({\"observation.state\": {\"type\": \"STATE\", \"shape\": [14]}, ...}); {} takes them "
             "from the dataset. Cameras are used in this order."},
    {.key = "output_features", .type = RT_OPT_STRING, .default_value = "{}",
     .help = "The policy's outputs" FEATURES_HELP_TAIL
             " ({\"action\": {\"type\": \"ACTION\", \"shape\": [14]}}); {} takes them from the dataset."},
    {.key = "device", .type = RT_OPT_STRING, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "Where the policy runs: cpu, cuda or cuda:N; null picks cuda when a GPU is present, "
             "else cpu."},
    {.key = "use_amp", .type = RT_OPT_BOOL, .default_value = "false",
     .help = "Mixed precision (autocast): matmul, linear, conv2d and attention inputs in bf16 on the CPU, "
             "fp16 with dynamic loss scaling on CUDA; ROBOTRAIN_MIXED_PRECISION (robotrain launch "
             "--mixed_precision) decides the dtype when set, and contradicting it is an error."},
    {.key = "use_peft", .type = RT_OPT_BOOL, .default_value = "false",
     .help = "Whether the policy is trained through PEFT adapters, as LeRobot's flag of that name."},
    {.key = "push_to_hub", .type = RT_OPT_BOOL, .default_value = "true",
     .help = "Upload the final checkpoint to the Hugging Face Hub (needs --policy.repo_id)."},
    {.key = "repo_id", .type = RT_OPT_STRING, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "The Hub repository (owner/name) the checkpoint is pushed to."},
    {.key = "private", .type = RT_OPT_BOOL, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "Create the Hub repository as private; null keeps the Hub's default."},
    {.key = "tags", .type = RT_OPT_LIST, .item_type = RT_OPT_STRING, .default_value = NULL,
     .flags = RT_OPT_NULLABLE, .help = "Tags for the model card of the pushed checkpoint."},
    {.key = "license", .type = RT_OPT_STRING, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "License of the model card of the pushed checkpoint (an SPDX identifier)."},
    {.key = "pretrained_path", .type = RT_OPT_PATH, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "A pretrained policy (a folder with config.json and model.safetensors) to start from."},
    {.key = "pretrained_revision", .type = RT_OPT_STRING, .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "The revision (branch, tag or commit) of a pretrained policy on the Hub."},
};

/* the common keys that hold features: JSON objects in config.json, JSON text in the options */
static const char *const feature_keys[] = {"input_features", "output_features"};

const rt_option *rt_policy_common_options(size_t *n)
{
    if (n)
        *n = G_N_ELEMENTS(common_options);
    return common_options;
}

gboolean rt_policy_add_options(rt_config *cfg, const rt_plugin_desc *desc, GError **error)
{
    g_return_val_if_fail(cfg != NULL && desc != NULL && desc->name != NULL, FALSE);
    if (!rt_config_add_options(cfg, "policy", common_options, G_N_ELEMENTS(common_options), error))
        return FALSE;
    if (desc->n_options) {
        g_autoptr(GError) local = NULL;
        if (!rt_config_add_options(cfg, "policy", desc->options, desc->n_options, &local)) {
            g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                        "the options of policy module '%s': %s (a module must not declare the "
                        "options every policy has, such as type, device or input_features)",
                        desc->name, local->message);
            return FALSE;
        }
    }
    return rt_config_set(cfg, "policy.type", desc->name, error);
}

rt_policy_features *rt_policy_config_features(const rt_config *cfg, const char *key, GError **error)
{
    const char *text = rt_config_get_string(cfg, key);
    g_autofree char *origin = rt_config_describe_origin(cfg, key);
    return rt_policy_features_parse(text ? text : "{}", origin, error);
}

/* The root object of a config.json, or NULL with error. (transfer full) */
static JsonNode *parse_object(const char *data, gsize length, const char *name, GError **error)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) json_error = NULL;
    if (!json_parser_load_from_data(parser, data, (gssize)length, &json_error)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: not valid JSON (%s)", name, json_error->message);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: a policy config holds one JSON object ({\"type\": \"act\", ...})", name);
        return NULL;
    }
    return json_node_copy(root);
}

char *rt_policy_config_json_type(const char *data, gsize length, const char *name, GError **error)
{
    g_return_val_if_fail(data != NULL && name != NULL, NULL);
    JsonNode *root = parse_object(data, length, name, error);
    if (!root)
        return NULL;
    JsonNode *type = json_object_get_member(json_node_get_object(root), "type");
    char *result = NULL;
    if (type && JSON_NODE_HOLDS_VALUE(type) && json_node_get_value_type(type) == G_TYPE_STRING)
        result = g_strdup(json_node_get_string(type));
    else
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: the policy config has no \"type\" (the policy's name, such as \"act\")", name);
    json_node_unref(root);
    return result;
}

gboolean rt_policy_config_load_json(rt_config *cfg, const char *data, gsize length, const char *name,
                                    GError **error)
{
    g_return_val_if_fail(cfg != NULL && data != NULL && name != NULL, FALSE);
    g_autofree char *type = rt_policy_config_json_type(data, length, name, error);
    if (!type)
        return FALSE;
    const char *want = rt_config_get_string(cfg, "policy.type");
    if (!want || strcmp(type, want) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: the config is for policy type '%s', not '%s'", name, type, want ? want : "(none)");
        return FALSE;
    }
    JsonNode *root = parse_object(data, length, name, error);
    if (!root)
        return FALSE;
    JsonObject *o = json_node_get_object(root);
    /* features become the JSON text their options hold */
    for (size_t i = 0; i < G_N_ELEMENTS(feature_keys); i++) {
        JsonNode *f = json_object_get_member(o, feature_keys[i]);
        if (f && (JSON_NODE_HOLDS_OBJECT(f) || JSON_NODE_HOLDS_NULL(f))) {
            char *text = JSON_NODE_HOLDS_NULL(f) ? g_strdup("{}") : json_to_string(f, FALSE);
            json_object_set_string_member(o, feature_keys[i], text);
            g_free(text);
        }
    }
    JsonObject *wrapper = json_object_new();
    json_object_set_object_member(wrapper, "policy", json_object_ref(o));
    JsonNode *wrapped = json_node_init_object(json_node_alloc(), wrapper);
    char *text = json_to_string(wrapped, FALSE);
    gboolean ok = rt_config_load_json_data(cfg, text, strlen(text), name, error);
    g_free(text);
    json_node_unref(wrapped);
    json_object_unref(wrapper);
    json_node_unref(root);
    return ok;
}

/* ---- writing: the flat object, nested groups for dotted keys, indented like json.dump(indent=4) */

static void indent(GString *s, int depth)
{
    for (int i = 0; i < depth * 4; i++)
        g_string_append_c(s, ' ');
}

static void append_string(GString *s, const char *text)
{
    JsonNode *n = json_node_init_string(json_node_alloc(), text);
    char *quoted = json_to_string(n, FALSE);
    g_string_append(s, quoted);
    g_free(quoted);
    json_node_unref(n);
}

static gboolean is_feature_key(const char *relative)
{
    for (size_t i = 0; i < G_N_ELEMENTS(feature_keys); i++)
        if (strcmp(relative, feature_keys[i]) == 0)
            return TRUE;
    return FALSE;
}

static void append_value(GString *s, const rt_config *cfg, const char *key, const char *relative)
{
    const rt_option *row = rt_config_lookup(cfg, key);
    if (rt_config_is_null(cfg, key)) {
        g_string_append(s, "null");
        return;
    }
    switch (row->type) {
    case RT_OPT_BOOL:
        g_string_append(s, rt_config_get_bool(cfg, key) ? "true" : "false");
        return;
    case RT_OPT_INT:
    case RT_OPT_FLOAT: {
        g_autofree char *text = rt_config_get_text(cfg, key); /* Python's repr of the number */
        g_string_append(s, text);
        return;
    }
    case RT_OPT_LIST:
        if (row->item_type == RT_OPT_INT || row->item_type == RT_OPT_FLOAT) {
            g_autofree char *text = rt_config_get_text(cfg, key);
            g_string_append(s, text);
        } else {
            g_auto(GStrv) items = rt_config_get_string_list(cfg, key);
            g_string_append_c(s, '[');
            for (size_t i = 0; items && items[i]; i++) {
                if (i)
                    g_string_append(s, ", ");
                append_string(s, items[i]);
            }
            g_string_append_c(s, ']');
        }
        return;
    default: {
        const char *text = rt_config_get_string(cfg, key);
        g_autoptr(rt_policy_features) features =
            is_feature_key(relative) ? rt_policy_features_parse(text, key, NULL) : NULL;
        if (features) {
            g_autofree char *json = rt_policy_features_to_json(features);
            g_string_append(s, json);
        } else {
            append_string(s, text);
        }
        return;
    }
    }
}

/* Emits the keys of rel (relative to "policy.", in order) that start with prefix, as an object. */
static void append_object(GString *s, const rt_config *cfg, char **rel, const char *prefix, int depth)
{
    size_t plen = strlen(prefix);
    GPtrArray *done_groups = g_ptr_array_new_with_free_func(g_free);
    gboolean first = TRUE;
    g_string_append_c(s, '{');
    for (size_t i = 0; rel[i]; i++) {
        if (strncmp(rel[i], prefix, plen) != 0)
            continue;
        const char *rest = rel[i] + plen;
        const char *dot = strchr(rest, '.');
        char *group = dot ? g_strndup(rest, (gsize)(dot - rest)) : NULL;
        if (group) {
            gboolean seen = FALSE;
            for (guint k = 0; k < done_groups->len && !seen; k++)
                seen = strcmp(g_ptr_array_index(done_groups, k), group) == 0;
            if (seen) {
                g_free(group);
                continue;
            }
            g_ptr_array_add(done_groups, group);
        }
        g_string_append(s, first ? "\n" : ",\n");
        first = FALSE;
        indent(s, depth + 1);
        append_string(s, group ? group : rest);
        g_string_append(s, ": ");
        if (group) {
            g_autofree char *sub = g_strconcat(prefix, group, ".", NULL);
            append_object(s, cfg, rel, sub, depth + 1);
        } else {
            g_autofree char *key = g_strconcat("policy.", rel[i], NULL);
            append_value(s, cfg, key, rel[i]);
        }
    }
    if (!first) {
        g_string_append_c(s, '\n');
        indent(s, depth);
    }
    g_string_append_c(s, '}');
    g_ptr_array_unref(done_groups);
}

char *rt_policy_config_to_json(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    g_auto(GStrv) keys = rt_config_list_keys(cfg);
    GPtrArray *rel = g_ptr_array_new();
    /* "type" first, as LeRobot writes it */
    for (size_t i = 0; keys[i]; i++)
        if (strcmp(keys[i], "policy.type") == 0)
            g_ptr_array_add(rel, keys[i] + strlen("policy."));
    for (size_t i = 0; keys[i]; i++)
        if (g_str_has_prefix(keys[i], "policy.") && strcmp(keys[i], "policy.type") != 0)
            g_ptr_array_add(rel, keys[i] + strlen("policy."));
    g_ptr_array_add(rel, NULL);
    GString *s = g_string_new(NULL);
    append_object(s, cfg, (char **)rel->pdata, "", 0);
    g_string_append_c(s, '\n');
    g_ptr_array_unref(rel);
    return g_string_free(s, FALSE);
}
