/* JSON text as Python's json.dump writes it (see json-write.h). */
#include "config.h"

#include <string.h>

#include "core/options-private.h"
#include "core/json-write.h"

void rt_json_append_double(GString *out, double value)
{
    g_autofree char *text = opt_format_double(value);
    g_string_append(out, text);
}

void rt_json_append_string(GString *out, const char *text)
{
    g_string_append_c(out, '"');
    for (const char *p = text; *p;) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x80) {
            switch (c) {
            case '"':
                g_string_append(out, "\\\"");
                break;
            case '\\':
                g_string_append(out, "\\\\");
                break;
            case '\n':
                g_string_append(out, "\\n");
                break;
            case '\r':
                g_string_append(out, "\\r");
                break;
            case '\t':
                g_string_append(out, "\\t");
                break;
            case '\b':
                g_string_append(out, "\\b");
                break;
            case '\f':
                g_string_append(out, "\\f");
                break;
            default:
                if (c < 0x20)
                    g_string_append_printf(out, "\\u%04x", c);
                else
                    g_string_append_c(out, (char)c);
            }
            p++;
            continue;
        }
        /* ensure_ascii: every other character as \uXXXX, in UTF-16 */
        gunichar u = g_utf8_get_char_validated(p, -1);
        if (u == (gunichar)-1 || u == (gunichar)-2) {
            g_string_append(out, "\\ufffd"); /* not UTF-8: the replacement character */
            p++;
            continue;
        }
        if (u >= 0x10000) {
            gunichar v = u - 0x10000;
            g_string_append_printf(out, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
        } else {
            g_string_append_printf(out, "\\u%04x", u);
        }
        p = g_utf8_next_char(p);
    }
    g_string_append_c(out, '"');
}

static void newline_indent(GString *out, int indent, int depth)
{
    g_string_append_c(out, '\n');
    for (int i = 0; i < indent * depth; i++)
        g_string_append_c(out, ' ');
}

static void append_node(GString *out, JsonNode *node, int indent, int depth)
{
    if (!node || JSON_NODE_HOLDS_NULL(node)) {
        g_string_append(out, "null");
        return;
    }
    if (JSON_NODE_HOLDS_OBJECT(node)) {
        JsonObject *object = json_node_get_object(node);
        GList *members = json_object_get_members(object);
        if (!members) {
            g_string_append(out, "{}");
            return;
        }
        g_string_append_c(out, '{');
        for (GList *m = members; m; m = m->next) {
            if (m != members)
                g_string_append_c(out, ',');
            if (indent >= 0)
                newline_indent(out, indent, depth + 1);
            else if (m != members)
                g_string_append_c(out, ' ');
            rt_json_append_string(out, m->data);
            g_string_append(out, ": ");
            append_node(out, json_object_get_member(object, m->data), indent, depth + 1);
        }
        g_list_free(members);
        if (indent >= 0)
            newline_indent(out, indent, depth);
        g_string_append_c(out, '}');
        return;
    }
    if (JSON_NODE_HOLDS_ARRAY(node)) {
        JsonArray *array = json_node_get_array(node);
        guint n = json_array_get_length(array);
        if (n == 0) {
            g_string_append(out, "[]");
            return;
        }
        g_string_append_c(out, '[');
        for (guint i = 0; i < n; i++) {
            if (i)
                g_string_append_c(out, ',');
            if (indent >= 0)
                newline_indent(out, indent, depth + 1);
            else if (i)
                g_string_append_c(out, ' ');
            append_node(out, json_array_get_element(array, i), indent, depth + 1);
        }
        if (indent >= 0)
            newline_indent(out, indent, depth);
        g_string_append_c(out, ']');
        return;
    }
    GType type = json_node_get_value_type(node);
    if (type == G_TYPE_BOOLEAN)
        g_string_append(out, json_node_get_boolean(node) ? "true" : "false");
    else if (type == G_TYPE_INT64)
        g_string_append_printf(out, "%" G_GINT64_FORMAT, json_node_get_int(node));
    else if (type == G_TYPE_DOUBLE)
        rt_json_append_double(out, json_node_get_double(node));
    else if (type == G_TYPE_STRING)
        rt_json_append_string(out, json_node_get_string(node));
    else
        g_string_append(out, "null");
}

void rt_json_append(GString *out, JsonNode *node, int indent)
{
    append_node(out, node, indent, 0);
}

void rt_json_append_at(GString *out, JsonNode *node, int indent, int depth)
{
    append_node(out, node, indent, depth);
}

char *rt_json_to_text(JsonNode *node, int indent, gboolean newline)
{
    GString *out = g_string_new(NULL);
    append_node(out, node, indent, 0);
    if (newline)
        g_string_append_c(out, '\n');
    return g_string_free(out, FALSE);
}

JsonNode *rt_json_deep_copy(JsonNode *node)
{
    if (!node)
        return json_node_new(JSON_NODE_NULL);
    if (JSON_NODE_HOLDS_OBJECT(node)) {
        JsonObject *src = json_node_get_object(node), *dst = json_object_new();
        GList *members = json_object_get_members(src);
        for (GList *m = members; m; m = m->next)
            json_object_set_member(dst, m->data, rt_json_deep_copy(json_object_get_member(src, m->data)));
        g_list_free(members);
        JsonNode *out = json_node_init_object(json_node_alloc(), dst);
        json_object_unref(dst);
        return out;
    }
    if (JSON_NODE_HOLDS_ARRAY(node)) {
        JsonArray *src = json_node_get_array(node), *dst = json_array_new();
        for (guint i = 0; i < json_array_get_length(src); i++)
            json_array_add_element(dst, rt_json_deep_copy(json_array_get_element(src, i)));
        JsonNode *out = json_node_init_array(json_node_alloc(), dst);
        json_array_unref(dst);
        return out;
    }
    return json_node_copy(node); /* a value or null: nothing shared */
}
