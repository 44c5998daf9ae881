/* JSON configs in the shape of LeRobot's train_config.json: options nested by dotted path. */
#include "config.h"

#include <string.h>

#include "core/json-write.h"
#include "core/options-private.h"

/* ---------------------------------------------------------------- loading */

typedef struct {
    const rt_config *cfg;
    const char *name; /* the file, for messages */
    opt_problems problems;
    GPtrArray *staged;
} json_load;

static void load_object(json_load *ld, GNode *group, JsonObject *object, const char *prefix)
{
    GList *members = json_object_get_members(object); /* in file order */
    for (GList *m = members; m; m = m->next) {
        const char *member = m->data;
        JsonNode *node = json_object_get_member(object, member);
        g_autofree char *key = prefix ? g_strconcat(prefix, ".", member, NULL) : g_strdup(member);
        GNode *child = opt_child_named(group, member);
        if (!child) {
            const char *near = opt_suggest_key(ld->cfg, key);
            opt_problems_add(&ld->problems, RT_ERROR_UNKNOWN_OPTION, ld->name, "unknown key '%s'%s%s%s", key,
                             near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
            continue;
        }
        opt_entry *e = ((opt_node *)child->data)->entry;
        if (!e) {
            if (!JSON_NODE_HOLDS_OBJECT(node)) {
                opt_problems_add(&ld->problems, RT_ERROR_INVALID_ARG, ld->name,
                                 "%s: expected an object holding the options %s.*, not %s", key, key,
                                 JSON_NODE_HOLDS_ARRAY(node)  ? "an array"
                                 : JSON_NODE_HOLDS_NULL(node) ? "null"
                                                              : "a single value");
                continue;
            }
            load_object(ld, child, json_node_get_object(node), key);
            continue;
        }
        if (e->row->flags & RT_OPT_CONFIG_FILE) {
            opt_problems_add(&ld->problems, RT_ERROR_INVALID_ARG, ld->name,
                             "%s names a config file and cannot be set inside one; give it as --%s", key,
                             key);
            continue;
        }
        GString *problem = g_string_new(NULL);
        JsonNode *value = opt_value_from_json(e->row, node, problem);
        if (value)
            opt_staged_add(ld->staged, e, value);
        else
            opt_problems_add(&ld->problems, RT_ERROR_INVALID_ARG, ld->name, "%s: %s", key, problem->str);
        g_string_free(problem, TRUE);
    }
    g_list_free(members);
}

gboolean rt_config_load_json_data(rt_config *cfg, const char *data, gsize length, const char *name,
                                  GError **error)
{
    g_return_val_if_fail(cfg != NULL && data != NULL && name != NULL, FALSE);
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) json_error = NULL;
    GString *overflow = g_string_new(NULL);
    if (!opt_json_check_integers(data, length, overflow)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s", name, overflow->str);
        g_string_free(overflow, TRUE);
        return FALSE;
    }
    g_string_free(overflow, TRUE);
    if (!json_parser_load_from_data(parser, data, (gssize)length, &json_error)) {
        /* json-glib says "<data>:LINE:COL: Parse error: ..." */
        const char *msg = json_error->message;
        if (g_str_has_prefix(msg, "<data>:"))
            msg += strlen("<data>:");
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s:%s (not valid JSON)", name, msg);
        return FALSE;
    }
    JsonNode *root = json_parser_get_root(parser);
    if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: a config file holds one JSON object ({\"key\": value, ...}), not %s", name,
                    !root                         ? "nothing"
                    : JSON_NODE_HOLDS_ARRAY(root) ? "an array"
                                                  : "a single value");
        return FALSE;
    }
    json_load ld = {cfg, name, {NULL, 0}, opt_staged_new()};
    load_object(&ld, cfg->root, json_node_get_object(root), NULL);
    gboolean ok = opt_problems_finish(&ld.problems, error);
    if (ok)
        opt_staged_apply(ld.staged, RT_SOURCE_FILE, name, FALSE);
    g_ptr_array_unref(ld.staged);
    return ok;
}

gboolean rt_config_load_json(rt_config *cfg, const char *path, GError **error)
{
    g_return_val_if_fail(cfg != NULL && path != NULL, FALSE);
    /* LeRobot's --config_path also takes the folder of a saved train_config.json */
    g_autofree char *file = g_file_test(path, G_FILE_TEST_IS_DIR)
                                ? g_build_filename(path, "train_config.json", NULL)
                                : g_strdup(path);
    gsize length = 0;
    g_autofree char *data = opt_read_config_file(file, &length, error);
    if (!data)
        return FALSE;
    return rt_config_load_json_data(cfg, data, length, file, error);
}

/* ---------------------------------------------------------------- writing
 * Indented like Python's json.dump(indent=4), which LeRobot uses: one member or item a line. */

static void indent_to(GString *s, int depth)
{
    for (int i = 0; i < depth * 4; i++)
        g_string_append_c(s, ' ');
}

/* Values as Python's json.dump(indent=4) writes them, so the file reads like LeRobot's. */
static void emit_value(GString *s, JsonNode *v, int depth)
{
    rt_json_append_at(s, v, 4, depth);
}

/* Whether a subtree has anything to write. */
static gboolean writable(GNode *node)
{
    opt_node *on = node->data;
    if (on->entry)
        return on->entry->value && !(on->entry->row->flags & RT_OPT_CONFIG_FILE);
    for (GNode *c = node->children; c; c = c->next)
        if (writable(c))
            return TRUE;
    return FALSE;
}

static void emit_group(GString *s, GNode *group, int depth)
{
    gboolean first = TRUE;
    g_string_append_c(s, '{');
    for (GNode *c = group->children; c; c = c->next) {
        if (!writable(c))
            continue;
        opt_node *on = c->data;
        g_string_append(s, first ? "\n" : ",\n");
        first = FALSE;
        indent_to(s, depth + 1);
        rt_json_append_string(s, on->name);
        g_string_append(s, ": ");
        if (on->entry)
            emit_value(s, on->entry->value, depth + 1);
        else
            emit_group(s, c, depth + 1);
    }
    if (!first) {
        g_string_append_c(s, '\n');
        indent_to(s, depth);
    }
    g_string_append_c(s, '}');
}

char *rt_config_to_json(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    GString *s = g_string_new(NULL);
    emit_group(s, cfg->root, 0);
    g_string_append_c(s, '\n');
    return g_string_free(s, FALSE);
}

gboolean rt_config_save_json(const rt_config *cfg, const char *path, GError **error)
{
    g_return_val_if_fail(cfg != NULL && path != NULL, FALSE);
    g_autofree char *text = rt_config_to_json(cfg);
    return opt_write_file_atomic(path, text, strlen(text), TRUE, error);
}
