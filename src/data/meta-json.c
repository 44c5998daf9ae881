/* Bounded JSON for dataset metadata: size limits, a nesting pre-scan, typed member access. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"

char *rt_meta_read_file(const char *path, gsize max_bytes, gsize *length, GError **error)
{
    GStatBuf st;
    if (g_stat(path, &st) != 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, e == ENOENT ? RT_ERROR_NOT_FOUND : RT_ERROR_IO, "%s: %s", path,
                    g_strerror(e));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: not a regular file", path);
        return NULL;
    }
    if ((guint64)st.st_size > max_bytes) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: the file has %" G_GUINT64_FORMAT " bytes, more than the %" G_GSIZE_FORMAT
                    " a metadata file may have; is it really LeRobot metadata?",
                    path, (guint64)st.st_size, max_bytes);
        return NULL;
    }
    char *data = NULL;
    gsize n = 0;
    GError *local = NULL;
    if (!g_file_get_contents(path, &data, &n, &local)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s", local->message);
        g_error_free(local);
        return NULL;
    }
    if (n > max_bytes) { /* grew since the stat */
        g_free(data);
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: the file is larger than %" G_GSIZE_FORMAT " bytes",
                    path, max_bytes);
        return NULL;
    }
    *length = n;
    return data;
}

static void set_where(GString *s, const char *name, guint line)
{
    g_string_append(s, name);
    if (line)
        g_string_append_printf(s, " line %u", line);
}

gboolean rt_meta_check_depth(const char *data, gsize length, const char *name, guint line, GError **error)
{
    int depth = 0;
    gboolean in_string = FALSE;
    guint at_line = line ? line : 1;
    for (gsize i = 0; i < length; i++) {
        char c = data[i];
        if (in_string) {
            if (c == '\\')
                i++; /* the escaped character cannot end the string */
            else if (c == '"')
                in_string = FALSE;
            continue;
        }
        if (c == '"')
            in_string = TRUE;
        else if (c == '\n')
            at_line++;
        else if (c == '[' || c == '{') {
            if (++depth > RT_META_MAX_DEPTH) {
                GString *w = g_string_new(NULL);
                set_where(w, name, at_line);
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                            "%s: arrays and objects nest more than %d deep; LeRobot metadata nests at most "
                            "5 deep, so the file is damaged",
                            w->str, RT_META_MAX_DEPTH);
                g_string_free(w, TRUE);
                return FALSE;
            }
        } else if (c == ']' || c == '}') {
            if (depth > 0)
                depth--;
        }
    }
    return TRUE;
}

JsonParser *rt_meta_parse_object(const char *data, gsize length, const char *name, guint line, GError **error)
{
    if (!rt_meta_check_depth(data, length, name, line, error))
        return NULL;
    if (length > G_MAXSSIZE) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: too large", name);
        return NULL;
    }
    JsonParser *parser = json_parser_new_immutable();
    GError *local = NULL;
    if (!json_parser_load_from_data(parser, data, (gssize)length, &local)) {
        GString *w = g_string_new(NULL);
        set_where(w, name, line);
        /* json-glib says "<data>:LINE:COL: Parse error: ..."; keep its position */
        const char *msg = local->message;
        if (g_str_has_prefix(msg, "<data>:"))
            msg += strlen("<data>:");
        /* json-glib reports where it stopped; a text cut short is the likely cause when the
         * object is never closed, so say so */
        gsize end = length;
        while (end > 0 && g_ascii_isspace(data[end - 1]))
            end--;
        gboolean unclosed = end == 0 || data[end - 1] != '}';
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: not valid JSON: %s%s", w->str, msg,
                    unclosed ? " (the text ends before the object's closing '}': is the file truncated?)"
                             : "");
        g_string_free(w, TRUE);
        g_error_free(local);
        g_object_unref(parser);
        return NULL;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        GString *w = g_string_new(NULL);
        set_where(w, name, line);
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: expected a JSON object%s", w->str,
                    !root && line == 0 ? ", but the file is empty (truncated?)" : "");
        g_string_free(w, TRUE);
        g_object_unref(parser);
        return NULL;
    }
    return parser;
}

gboolean rt_meta_foreach_line(const char *data, gsize length, const char *name, rt_meta_line_func func,
                              gpointer user, GError **error)
{
    guint line = 0;
    gsize pos = 0;
    while (pos < length) {
        line++;
        const char *start = data + pos;
        const char *nl = memchr(start, '\n', length - pos);
        gsize n = nl ? (gsize)(nl - start) : length - pos;
        pos += n + (nl ? 1 : 0);
        gsize k = 0;
        while (k < n && g_ascii_isspace(start[k]))
            k++;
        if (k == n)
            continue; /* blank line (also the one after a final newline) */
        if (n > RT_META_MAX_LINE_BYTES) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s line %u: the line has %" G_GSIZE_FORMAT " bytes, more than %" G_GSIZE_FORMAT,
                        name, line, n, RT_META_MAX_LINE_BYTES);
            return FALSE;
        }
        JsonParser *parser = rt_meta_parse_object(start, n, name, line, error);
        if (!parser)
            return FALSE;
        gboolean ok = func(json_node_get_object(json_parser_get_root(parser)), name, line, user, error);
        g_object_unref(parser);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- members */

static JsonNode *member(JsonObject *o, const char *key, gboolean required, const char *name,
                        const char *where, GError **error, gboolean *missing)
{
    JsonNode *node = json_object_get_member(o, key);
    *missing = node == NULL;
    if (!node && required)
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s has no \"%s\"", name, where, key);
    return node;
}

static const char *json_kind(JsonNode *node)
{
    switch (JSON_NODE_TYPE(node)) {
    case JSON_NODE_OBJECT:
        return "an object";
    case JSON_NODE_ARRAY:
        return "a list";
    case JSON_NODE_NULL:
        return "null";
    case JSON_NODE_VALUE:
        break;
    }
    GType t = json_node_get_value_type(node);
    if (t == G_TYPE_STRING)
        return "a string";
    if (t == G_TYPE_BOOLEAN)
        return "a boolean";
    if (t == G_TYPE_DOUBLE)
        return "a fractional number";
    return "a number";
}

gboolean rt_meta_get_int(JsonObject *o, const char *key, gboolean required, int64_t *out, const char *name,
                         const char *where, GError **error)
{
    gboolean missing;
    JsonNode *node = member(o, key, required, name, where, error, &missing);
    if (missing)
        return !required;
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_INT64) {
        *out = json_node_get_int(node);
        return TRUE;
    }
    /* 30.0 for an integer is what some converters write */
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_DOUBLE) {
        double v = json_node_get_double(node);
        /* the range first: converting an out-of-range value (1e999 is inf) is undefined */
        if (v > -9.2e18 && v < 9.2e18 && v == (double)(int64_t)v) {
            *out = (int64_t)v;
            return TRUE;
        }
    }
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s: \"%s\" is %s, expected an integer", name, where,
                key, json_kind(node));
    return FALSE;
}

gboolean rt_meta_get_number(JsonObject *o, const char *key, gboolean required, double *out, const char *name,
                            const char *where, GError **error)
{
    gboolean missing;
    JsonNode *node = member(o, key, required, name, where, error, &missing);
    if (missing)
        return !required;
    if (JSON_NODE_HOLDS_VALUE(node)) {
        GType t = json_node_get_value_type(node);
        if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE) {
            *out = json_node_get_double(node);
            return TRUE;
        }
    }
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s: \"%s\" is %s, expected a number", name, where, key,
                json_kind(node));
    return FALSE;
}

gboolean rt_meta_get_string(JsonObject *o, const char *key, gboolean required, const char **out,
                            const char *name, const char *where, GError **error)
{
    gboolean missing;
    JsonNode *node = member(o, key, required, name, where, error, &missing);
    if (missing)
        return !required;
    if (JSON_NODE_HOLDS_NULL(node) && !required) {
        *out = NULL;
        return TRUE;
    }
    if (JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == G_TYPE_STRING) {
        *out = json_node_get_string(node);
        return TRUE;
    }
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s: \"%s\" is %s, expected a string", name, where, key,
                json_kind(node));
    return FALSE;
}
