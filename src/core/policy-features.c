/* Policy features: LeRobot's {"name": {"type": "STATE", "shape": [14]}} objects. */
#include "config.h"

#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/policy.h>

static const char *const type_names[RT_FEATURE_N_TYPES] = {
    [RT_FEATURE_STATE] = "STATE",   [RT_FEATURE_VISUAL] = "VISUAL", [RT_FEATURE_ENV] = "ENV",
    [RT_FEATURE_ACTION] = "ACTION", [RT_FEATURE_REWARD] = "REWARD", [RT_FEATURE_LANGUAGE] = "LANGUAGE",
};

/* A sample's feature leaves room for the batch and the frame axes. */
#define MAX_FEATURE_DIMS (RT_MAX_DIMS - 2)

const char *rt_feature_type_name(rt_feature_type type)
{
    return (unsigned)type < RT_FEATURE_N_TYPES ? type_names[type] : NULL;
}

gboolean rt_feature_type_from_name(const char *name, rt_feature_type *type)
{
    for (int i = 0; name && i < RT_FEATURE_N_TYPES; i++)
        if (strcmp(name, type_names[i]) == 0) {
            *type = (rt_feature_type)i;
            return TRUE;
        }
    return FALSE;
}

void rt_policy_features_free(rt_policy_features *features)
{
    if (!features)
        return;
    for (size_t i = 0; i < features->n; i++)
        g_free((char *)features->items[i].name);
    g_free(features->items);
    g_free(features);
}

const rt_policy_feature *rt_policy_features_find(const rt_policy_features *features, const char *name)
{
    for (size_t i = 0; features && name && i < features->n; i++)
        if (strcmp(features->items[i].name, name) == 0)
            return &features->items[i];
    return NULL;
}

int64_t rt_policy_feature_numel(const rt_policy_feature *feature)
{
    int64_t n = 1;
    for (int i = 0; i < feature->ndim; i++)
        n *= feature->shape[i];
    return n;
}

static const char *json_kind(JsonNode *node)
{
    if (JSON_NODE_HOLDS_OBJECT(node))
        return "an object";
    if (JSON_NODE_HOLDS_ARRAY(node))
        return "a list";
    if (JSON_NODE_HOLDS_NULL(node))
        return "null";
    GType t = json_node_get_value_type(node);
    if (t == G_TYPE_STRING)
        return "a string";
    if (t == G_TYPE_BOOLEAN)
        return "a boolean";
    return "a number";
}

static gboolean parse_shape(JsonNode *node, rt_policy_feature *f, GString *problem)
{
    if (!JSON_NODE_HOLDS_ARRAY(node)) {
        g_string_printf(problem, "\"shape\" is %s; expected a list of sizes such as [3, 480, 640]",
                        json_kind(node));
        return FALSE;
    }
    JsonArray *a = json_node_get_array(node);
    guint n = json_array_get_length(a);
    if (n < 1 || n > MAX_FEATURE_DIMS) {
        g_string_printf(problem, "\"shape\" has %u sizes; a feature has 1 to %d", n, MAX_FEATURE_DIMS);
        return FALSE;
    }
    f->ndim = (int)n;
    for (guint i = 0; i < n; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64 ||
            json_node_get_int(e) < 1 || json_node_get_int(e) > ((gint64)1 << 31)) {
            g_string_printf(problem, "size %u of \"shape\" is not a positive integer", i);
            return FALSE;
        }
        f->shape[i] = json_node_get_int(e);
    }
    return TRUE;
}

static gboolean parse_feature(const char *name, JsonNode *node, rt_policy_feature *f, GString *problem)
{
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_string_printf(problem, "it is %s; expected {\"type\": \"STATE\", \"shape\": [14]}", json_kind(node));
        return FALSE;
    }
    JsonObject *o = json_node_get_object(node);
    JsonNode *type = json_object_get_member(o, "type"), *shape = json_object_get_member(o, "shape");
    if (!type || !shape) {
        g_string_printf(problem, "it has no \"%s\"; expected {\"type\": \"STATE\", \"shape\": [14]}",
                        type ? "shape" : "type");
        return FALSE;
    }
    const char *tname = JSON_NODE_HOLDS_VALUE(type) && json_node_get_value_type(type) == G_TYPE_STRING
                            ? json_node_get_string(type)
                            : NULL;
    if (!rt_feature_type_from_name(tname, &f->type)) {
        g_string_printf(problem, "\"type\" is %s%s%s; expected one of STATE, VISUAL, ENV, ACTION, "
                        "REWARD, LANGUAGE", tname ? "'" : "", tname ? tname : json_kind(type),
                        tname ? "'" : "");
        return FALSE;
    }
    if (!parse_shape(shape, f, problem))
        return FALSE;
    GList *members = json_object_get_members(o);
    for (GList *m = members; m; m = m->next)
        if (strcmp(m->data, "type") != 0 && strcmp(m->data, "shape") != 0) {
            g_string_printf(problem, "unknown member \"%s\" (a feature has \"type\" and \"shape\")",
                            (const char *)m->data);
            g_list_free(members);
            return FALSE;
        }
    g_list_free(members);
    f->name = g_strdup(name);
    return TRUE;
}

rt_policy_features *rt_policy_features_parse(const char *json, const char *what, GError **error)
{
    g_return_val_if_fail(json != NULL && what != NULL, NULL);
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) json_error = NULL;
    if (!json_parser_load_from_data(parser, json, -1, &json_error)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s is not valid JSON (%s); expected an object "
                    "such as {\"observation.state\": {\"type\": \"STATE\", \"shape\": [14]}}",
                    what, json_error->message);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s is %s; expected an object such as "
                    "{\"observation.state\": {\"type\": \"STATE\", \"shape\": [14]}}",
                    what, root ? json_kind(root) : "empty");
        return NULL;
    }
    JsonObject *o = json_node_get_object(root);
    GList *members = json_object_get_members(o); /* in the text's order */
    rt_policy_features *features = g_new0(rt_policy_features, 1);
    features->items = g_new0(rt_policy_feature, MAX(1, g_list_length(members)));
    GString *problem = g_string_new(NULL);
    gboolean ok = TRUE;
    for (GList *m = members; m && ok; m = m->next) {
        const char *name = m->data;
        ok = *name && parse_feature(name, json_object_get_member(o, name), &features->items[features->n], problem);
        if (ok)
            features->n++;
        else
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: feature '%s': %s", what, name,
                        *name ? problem->str : "a feature needs a name");
    }
    g_list_free(members);
    g_string_free(problem, TRUE);
    if (!ok) {
        rt_policy_features_free(features);
        return NULL;
    }
    return features;
}

static void append_json_string(GString *s, const char *text)
{
    JsonNode *n = json_node_init_string(json_node_alloc(), text);
    char *quoted = json_to_string(n, FALSE);
    g_string_append(s, quoted);
    g_free(quoted);
    json_node_unref(n);
}

char *rt_policy_features_to_json(const rt_policy_features *features)
{
    GString *s = g_string_new("{");
    for (size_t i = 0; features && i < features->n; i++) {
        const rt_policy_feature *f = &features->items[i];
        if (i)
            g_string_append(s, ", ");
        append_json_string(s, f->name);
        g_string_append_printf(s, ": {\"type\": \"%s\", \"shape\": [", rt_feature_type_name(f->type));
        for (int d = 0; d < f->ndim; d++)
            g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "", f->shape[d]);
        g_string_append(s, "]}");
    }
    g_string_append_c(s, '}');
    return g_string_free(s, FALSE);
}
