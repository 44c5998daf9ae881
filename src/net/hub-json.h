/* src/net/hub-json.h: reading members of Hub JSON answers without trusting their types. */
#ifndef ROBOTRAIN_NET_HUB_JSON_H
#define ROBOTRAIN_NET_HUB_JSON_H

#include <json-glib/json-glib.h>

/* The member of an object node, or NULL (node NULL, not an object, or no such member). */
static inline JsonNode *hub_json_member(JsonNode *node, const char *name)
{
    if (!node || !JSON_NODE_HOLDS_OBJECT(node))
        return NULL;
    JsonObject *o = json_node_get_object(node);
    return json_object_has_member(o, name) ? json_object_get_member(o, name) : NULL;
}

/* A string member (transfer none), or NULL when absent or not a string. */
static inline const char *hub_json_str(JsonNode *node, const char *name)
{
    JsonNode *m = hub_json_member(node, name);
    if (!m || !JSON_NODE_HOLDS_VALUE(m) || json_node_get_value_type(m) != G_TYPE_STRING)
        return NULL;
    return json_node_get_string(m);
}

/* A non-negative integer member; FALSE when absent or not one. */
static inline gboolean hub_json_uint(JsonNode *node, const char *name, guint64 *out)
{
    JsonNode *m = hub_json_member(node, name);
    if (!m || !JSON_NODE_HOLDS_VALUE(m) || json_node_get_value_type(m) != G_TYPE_INT64)
        return FALSE;
    gint64 v = json_node_get_int(m);
    if (v < 0)
        return FALSE;
    *out = (guint64)v;
    return TRUE;
}

/* A boolean member, or fallback. */
static inline gboolean hub_json_bool(JsonNode *node, const char *name, gboolean fallback)
{
    JsonNode *m = hub_json_member(node, name);
    if (!m || !JSON_NODE_HOLDS_VALUE(m) || json_node_get_value_type(m) != G_TYPE_BOOLEAN)
        return fallback;
    return json_node_get_boolean(m);
}

/* An array member, or NULL. */
static inline JsonArray *hub_json_array(JsonNode *node, const char *name)
{
    JsonNode *m = hub_json_member(node, name);
    return m && JSON_NODE_HOLDS_ARRAY(m) ? json_node_get_array(m) : NULL;
}

/* Compact JSON text of a node (transfer full). */
static inline char *hub_json_to_string(JsonNode *node)
{
    JsonGenerator *g = json_generator_new();
    json_generator_set_root(g, node);
    char *text = json_generator_to_data(g, NULL);
    g_object_unref(g);
    return text;
}

#endif
