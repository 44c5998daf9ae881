/* GLib key files: group [g], key k holds option "g.k". Values are written as on the command
 * line; lists may also use the key-file list syntax (a;b;c). */
#include "config.h"

#include <string.h>

#include "core/options-private.h"

/* ---------------------------------------------------------------- loading */

/* Keys below a group node, relative to the group ("num_processes", "sub.key"). */
static void collect_keys(GNode *node, size_t skip, GPtrArray *out)
{
    opt_node *on = node->data;
    if (on->entry) {
        g_ptr_array_add(out, on->entry->key + skip);
        return;
    }
    for (GNode *c = node->children; c; c = c->next)
        collect_keys(c, skip, out);
}

static char *join_groups(const rt_config *cfg, GPtrArray *names)
{
    GString *s = g_string_new(NULL);
    for (GNode *c = cfg->root->children; c; c = c->next) {
        opt_node *on = c->data;
        if (on->entry)
            continue; /* an ungrouped option has no place in a key file */
        g_string_append_printf(s, "%s[%s]", s->len ? ", " : "", on->name);
        g_ptr_array_add(names, on->name);
    }
    return g_string_free(s, FALSE);
}

/* Whether raw key-file text holds a list separator (an unescaped ';'). */
static gboolean has_separator(const char *raw)
{
    for (const char *p = raw; *p; p++) {
        if (*p == '\\' && p[1])
            p++;
        else if (*p == ';')
            return TRUE;
    }
    return FALSE;
}

/* Text and paths may end in blanks; numbers, booleans and choices never do. */
static gboolean keeps_blanks(rt_option_type type)
{
    return type == RT_OPT_STRING || type == RT_OPT_PATH;
}

static JsonNode *read_value(GKeyFile *kf, const char *group, const char *key, const rt_option *row,
                            GString *problem)
{
    g_autofree char *raw = g_key_file_get_value(kf, group, key, NULL);
    g_autoptr(GError) kf_error = NULL;
    if (row->type == RT_OPT_LIST && raw && has_separator(raw)) {
        g_auto(GStrv) items = g_key_file_get_string_list(kf, group, key, NULL, &kf_error);
        if (!items || kf_error) {
            g_string_append_printf(problem, "'%s' cannot be read as a list (a bad escape sequence?)", raw);
            return NULL;
        }
        for (size_t i = 0; !keeps_blanks(row->item_type) && items[i]; i++)
            g_strstrip(items[i]);
        return opt_value_from_items(row, items, problem);
    }
    /* GKeyFile may return text and an error together (an unknown escape is kept as it is) */
    g_autofree char *text = g_key_file_get_string(kf, group, key, &kf_error);
    if (!text || kf_error) {
        g_string_append_printf(problem, "'%s' cannot be read (a bad escape sequence or invalid UTF-8?)",
                               raw ? raw : "");
        return NULL;
    }
    if (!keeps_blanks(row->type == RT_OPT_LIST ? row->item_type : row->type))
        g_strchomp(text); /* GKeyFile keeps trailing blanks; they mean nothing after a number */
    return opt_value_from_text(row, text, problem);
}

gboolean rt_config_load_keyfile(rt_config *cfg, const char *path, GError **error)
{
    g_return_val_if_fail(cfg != NULL && path != NULL, FALSE);
    gsize length = 0;
    g_autofree char *data = opt_read_config_file(path, &length, error);
    if (!data)
        return FALSE;
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(GError) kf_error = NULL;
    if (!g_key_file_load_from_data(kf, data, length, G_KEY_FILE_NONE, &kf_error)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: not a valid key file: %s", path,
                    kf_error->message);
        return FALSE;
    }

    opt_problems problems = {NULL, 0};
    g_autoptr(GPtrArray) staged = opt_staged_new();
    g_autoptr(GPtrArray) group_names = g_ptr_array_new();
    g_autofree char *groups_text = join_groups(cfg, group_names);
    g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
    for (size_t g = 0; groups[g]; g++) {
        GNode *group = opt_child_named(cfg->root, groups[g]);
        if (!group || ((opt_node *)group->data)->entry) {
            const char *near =
                rt_suggest_nearest(groups[g], (const char *const *)group_names->pdata, group_names->len);
            opt_problems_add(&problems, RT_ERROR_UNKNOWN_OPTION, path,
                             "unknown group [%s]%s%s%s; the groups are %s", groups[g],
                             near ? " (did you mean [" : "", near ? near : "", near ? "]?)" : "",
                             groups_text[0] ? groups_text : "(none)");
            continue;
        }
        size_t skip = strlen(groups[g]) + 1;
        g_autoptr(GPtrArray) known = g_ptr_array_new();
        collect_keys(group, skip, known);
        g_auto(GStrv) keys = g_key_file_get_keys(kf, groups[g], NULL, NULL);
        for (size_t k = 0; keys && keys[k]; k++) {
            g_autofree char *full = g_strconcat(groups[g], ".", keys[k], NULL);
            opt_entry *e = opt_lookup(cfg, full);
            if (!e) {
                const char *near = rt_suggest_nearest(keys[k], (const char *const *)known->pdata, known->len);
                GString *all = g_string_new(NULL);
                for (guint i = 0; i < known->len; i++)
                    g_string_append_printf(all, "%s%s", i ? ", " : "", (char *)g_ptr_array_index(known, i));
                opt_problems_add(&problems, RT_ERROR_UNKNOWN_OPTION, path,
                                 "[%s] %s: unknown key%s%s%s; the keys of [%s] are %s", groups[g], keys[k],
                                 near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "",
                                 groups[g], all->str);
                g_string_free(all, TRUE);
                continue;
            }
            GString *problem = g_string_new(NULL);
            JsonNode *value = read_value(kf, groups[g], keys[k], e->row, problem);
            if (value)
                opt_staged_add(staged, e, value);
            else
                opt_problems_add(&problems, RT_ERROR_INVALID_ARG, path, "[%s] %s: %s", groups[g], keys[k],
                                 problem->str);
            g_string_free(problem, TRUE);
        }
    }
    if (!opt_problems_finish(&problems, error))
        return FALSE;
    opt_staged_apply(staged, RT_SOURCE_FILE, path, TRUE);
    return TRUE;
}

/* ---------------------------------------------------------------- writing */

char *opt_value_to_keyfile(const rt_option *row, JsonNode *value)
{
    if (!value)
        return NULL;
    /* let GKeyFile escape it (leading blanks, newlines, backslashes, ';' in list items) */
    g_autoptr(GKeyFile) scratch = g_key_file_new();
    if (row->type == RT_OPT_LIST && !JSON_NODE_HOLDS_NULL(value)) {
        g_auto(GStrv) items = opt_value_to_items(row, value);
        g_key_file_set_string_list(scratch, "g", "k", (const char *const *)items, g_strv_length(items));
    } else {
        g_autofree char *text = opt_value_to_text(row, value);
        g_key_file_set_string(scratch, "g", "k", text);
    }
    return g_key_file_get_value(scratch, "g", "k", NULL);
}

/* Appends text as '#' comment lines of at most width columns. */
static void append_comment(GString *s, const char *text, size_t width)
{
    g_auto(GStrv) words = g_strsplit(text, " ", -1);
    size_t col = 0;
    for (size_t i = 0; words[i]; i++) {
        size_t len = strlen(words[i]);
        if (len == 0)
            continue;
        if (col == 0) {
            g_string_append(s, "#");
            col = 1;
        } else if (col + 1 + len > width) {
            g_string_append(s, "\n#");
            col = 1;
        }
        g_string_append_printf(s, " %s", words[i]);
        col += 1 + len;
    }
    if (col)
        g_string_append_c(s, '\n');
}

char *opt_describe_default(const rt_option *row)
{
    if (row->flags & RT_OPT_REQUIRED)
        return g_strdup("none (required)");
    if (!row->default_value)
        return g_strdup(row->null_text ? row->null_text : "null");
    return g_strdup(row->default_value);
}

static void write_group(GString *s, GNode *node, size_t skip, gboolean *first)
{
    opt_node *on = node->data;
    if (!on->entry) {
        for (GNode *c = node->children; c; c = c->next)
            write_group(s, c, skip, first);
        return;
    }
    opt_entry *e = on->entry;
    if (!e->value)
        return;
    g_autofree char *allowed = opt_describe_allowed(e->row);
    g_autofree char *def = opt_describe_default(e->row);
    g_autofree char *about = g_strdup_printf("%s Allowed: %s. Default: %s.", e->row->help, allowed, def);
    g_autofree char *raw = opt_value_to_keyfile(e->row, e->value);
    if (!*first)
        g_string_append_c(s, '\n');
    *first = FALSE;
    append_comment(s, about, 78);
    g_string_append_printf(s, "%s=%s\n", e->key + skip, raw);
}

char *rt_config_to_keyfile(const rt_config *cfg, const char *header)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    GString *s = g_string_new(NULL);
    if (header) {
        g_auto(GStrv) lines = g_strsplit(header, "\n", -1);
        for (size_t i = 0; lines[i]; i++)
            g_string_append_printf(s, "#%s%s\n", lines[i][0] ? " " : "", lines[i]);
    }
    for (GNode *c = cfg->root->children; c; c = c->next) {
        opt_node *on = c->data;
        if (on->entry)
            continue;
        g_string_append_printf(s, "%s[%s]\n", s->len ? "\n" : "", on->name);
        gboolean first = TRUE;
        write_group(s, c, strlen(on->name) + 1, &first);
    }
    return g_string_free(s, FALSE);
}

gboolean rt_config_save_keyfile(const rt_config *cfg, const char *path, const char *header,
                                gboolean overwrite, GError **error)
{
    g_return_val_if_fail(cfg != NULL && path != NULL, FALSE);
    g_autofree char *text = rt_config_to_keyfile(cfg, header);
    return opt_write_file_atomic(path, text, strlen(text), overwrite, error);
}
