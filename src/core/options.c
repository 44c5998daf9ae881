/* rt_config: declared options, their values and where each came from. */
#include "config.h"

#include <string.h>

#include "core/options-private.h"

const char *rt_option_type_name(rt_option_type type)
{
    switch (type) {
    case RT_OPT_BOOL:
        return "bool";
    case RT_OPT_INT:
        return "int";
    case RT_OPT_FLOAT:
        return "float";
    case RT_OPT_STRING:
        return "string";
    case RT_OPT_ENUM:
        return "enum";
    case RT_OPT_LIST:
        return "list";
    case RT_OPT_PATH:
        return "path";
    }
    return "unknown";
}

/* ---------------------------------------------------------------- the tree */

static opt_node *node_new(const char *name)
{
    opt_node *n = g_new0(opt_node, 1);
    n->name = g_strdup(name);
    return n;
}

static void entry_free(opt_entry *e)
{
    if (!e)
        return;
    g_free(e->key);
    if (e->value)
        json_node_unref(e->value);
    g_free(e->source_file);
    g_free(e);
}

static gboolean node_free(GNode *gnode, gpointer unused)
{
    (void)unused;
    opt_node *n = gnode->data;
    entry_free(n->entry);
    g_free(n->name);
    g_free(n);
    return FALSE;
}

GNode *opt_child_named(GNode *parent, const char *name)
{
    for (GNode *c = parent->children; c; c = c->next)
        if (strcmp(((opt_node *)c->data)->name, name) == 0)
            return c;
    return NULL;
}

rt_config *rt_config_new(const char *command)
{
    rt_config *cfg = g_new0(rt_config, 1);
    cfg->command = g_strdup(command);
    cfg->root = g_node_new(node_new(NULL));
    cfg->by_key = g_hash_table_new(g_str_hash, g_str_equal);
    cfg->entries = g_ptr_array_new();
    return cfg;
}

void rt_config_free(rt_config *cfg)
{
    if (!cfg)
        return;
    g_node_traverse(cfg->root, G_IN_ORDER, G_TRAVERSE_ALL, -1, node_free, NULL);
    g_node_destroy(cfg->root);
    g_hash_table_unref(cfg->by_key);
    g_ptr_array_unref(cfg->entries);
    g_free(cfg->command);
    g_free(cfg);
}

opt_entry *opt_lookup(const rt_config *cfg, const char *key)
{
    return key ? g_hash_table_lookup(cfg->by_key, key) : NULL;
}

GNode *opt_find_group(const rt_config *cfg, const char *path)
{
    GNode *node = cfg->root;
    if (path && path[0]) {
        g_auto(GStrv) parts = g_strsplit(path, ".", -1);
        for (size_t i = 0; parts[i] && node; i++)
            node = opt_child_named(node, parts[i]);
    }
    if (!node || ((opt_node *)node->data)->entry)
        return NULL;
    return node;
}

/* Where a new key would clash with the tree: a leaf on its path, or a group at its place. */
static const char *conflict(const rt_config *cfg, char **parts)
{
    GNode *node = cfg->root;
    for (size_t i = 0; parts[i]; i++) {
        node = opt_child_named(node, parts[i]);
        if (!node)
            return NULL;
        opt_node *n = node->data;
        if (n->entry)
            return parts[i + 1] ? "an option of that name is declared, so it cannot be a group"
                                : "it is declared twice";
    }
    return "it is already a group of options";
}

static void insert_entry(rt_config *cfg, char **parts, opt_entry *entry)
{
    GNode *node = cfg->root;
    for (size_t i = 0; parts[i]; i++) {
        GNode *child = opt_child_named(node, parts[i]);
        if (!child)
            child = g_node_append_data(node, node_new(parts[i]));
        node = child;
    }
    ((opt_node *)node->data)->entry = entry;
    g_hash_table_insert(cfg->by_key, entry->key, entry);
    g_ptr_array_add(cfg->entries, entry);
}

gboolean rt_config_add_options(rt_config *cfg, const char *prefix, const rt_option *rows, size_t n,
                               GError **error)
{
    g_return_val_if_fail(cfg != NULL, FALSE);
    g_return_val_if_fail(rows != NULL || n == 0, FALSE);
    gboolean has_prefix = prefix && prefix[0];

    /* check the whole table first, so that a bad one adds nothing */
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (size_t i = 0; i < n; i++) {
        g_autofree char *key =
            has_prefix ? g_strconcat(prefix, ".", rows[i].key, NULL) : g_strdup(rows[i].key);
        if (!opt_check_row(&rows[i], key, error))
            return FALSE;
        g_auto(GStrv) parts = g_strsplit(key, ".", -1);
        const char *why = conflict(cfg, parts);
        if (!why) {
            /* against the rest of this table: a key equal to, or a group of, another one */
            GHashTableIter it;
            gpointer other;
            g_hash_table_iter_init(&it, seen);
            while (!why && g_hash_table_iter_next(&it, &other, NULL)) {
                size_t lo = strlen(other), lk = strlen(key);
                if (strcmp(other, key) == 0)
                    why = "it is declared twice";
                else if ((lo < lk && strncmp(other, key, lo) == 0 && key[lo] == '.') ||
                         (lk < lo && strncmp(other, key, lk) == 0 && ((char *)other)[lk] == '.'))
                    why = "it is both an option and a group of options";
            }
        }
        if (why) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "option '%s' cannot be declared: %s", key,
                        why);
            return FALSE;
        }
        g_hash_table_add(seen, g_steal_pointer(&key));
    }

    for (size_t i = 0; i < n; i++) {
        opt_entry *e = g_new0(opt_entry, 1);
        e->key = has_prefix ? g_strconcat(prefix, ".", rows[i].key, NULL) : g_strdup(rows[i].key);
        e->row = &rows[i];
        e->source = RT_SOURCE_DEFAULT;
        if (rows[i].default_value) {
            GString *unused = g_string_new(NULL);
            e->value = opt_value_from_text(&rows[i], rows[i].default_value, unused);
            g_string_free(unused, TRUE);
        } else if (rows[i].flags & RT_OPT_NULLABLE) {
            e->value = json_node_init_null(json_node_alloc());
        }
        g_auto(GStrv) parts = g_strsplit(e->key, ".", -1);
        insert_entry(cfg, parts, e);
    }
    return TRUE;
}

void rt_config_set_stop_at_positional(rt_config *cfg, gboolean stop)
{
    g_return_if_fail(cfg != NULL);
    cfg->stop_at_positional = stop;
}

rt_help_request rt_config_help_requested(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, RT_HELP_NONE);
    return cfg->help;
}

/* ---------------------------------------------------------------- values */

void opt_entry_assign(opt_entry *entry, JsonNode *value, rt_value_source source, const char *file,
                      gboolean from_keyfile)
{
    if (entry->value)
        json_node_unref(entry->value);
    entry->value = value;
    entry->source = source;
    g_free(entry->source_file);
    /* For a flag, file may name the flag as the user wrote it (see rt_launch_config_set_flag()). */
    entry->source_file = source == RT_SOURCE_FILE || source == RT_SOURCE_ARGS ? g_strdup(file) : NULL;
    entry->from_keyfile = source == RT_SOURCE_FILE && from_keyfile;
}

static void staged_free(gpointer p)
{
    opt_staged *s = p;
    if (s->value)
        json_node_unref(s->value);
    g_free(s);
}

GPtrArray *opt_staged_new(void)
{
    return g_ptr_array_new_with_free_func(staged_free);
}

void opt_staged_add(GPtrArray *staged, opt_entry *entry, JsonNode *value)
{
    opt_staged *s = g_new0(opt_staged, 1);
    s->entry = entry;
    s->value = value;
    g_ptr_array_add(staged, s);
}

void opt_staged_apply(GPtrArray *staged, rt_value_source source, const char *file, gboolean from_keyfile)
{
    for (guint i = 0; i < staged->len; i++) {
        opt_staged *s = g_ptr_array_index(staged, i);
        opt_entry_assign(s->entry, g_steal_pointer(&s->value), source, file, from_keyfile);
    }
}

gboolean rt_config_set(rt_config *cfg, const char *key, const char *text, GError **error)
{
    g_return_val_if_fail(cfg != NULL && key != NULL && text != NULL, FALSE);
    opt_entry *e = opt_lookup(cfg, key);
    if (!e) {
        const char *near = opt_suggest_key(cfg, key);
        g_set_error(error, RT_ERROR, RT_ERROR_UNKNOWN_OPTION, "unknown option '%s'%s%s%s", key,
                    near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        return FALSE;
    }
    GString *problem = g_string_new(NULL);
    JsonNode *v = opt_value_from_text(e->row, text, problem);
    if (!v) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %s", key, problem->str);
        g_string_free(problem, TRUE);
        return FALSE;
    }
    g_string_free(problem, TRUE);
    opt_entry_assign(e, v, RT_SOURCE_PROGRAM, NULL, FALSE);
    return TRUE;
}

gboolean rt_config_check_required(const rt_config *cfg, GError **error)
{
    g_return_val_if_fail(cfg != NULL, FALSE);
    GString *missing = NULL;
    for (guint i = 0; i < cfg->entries->len; i++) {
        opt_entry *e = g_ptr_array_index(cfg->entries, i);
        if (e->value)
            continue;
        g_autofree char *allowed = opt_describe_allowed(e->row);
        if (!missing)
            missing = g_string_new(NULL);
        else
            g_string_append_c(missing, '\n');
        g_string_append_printf(missing, "--%s is required: give %s", e->key, allowed);
    }
    if (!missing)
        return TRUE;
    g_set_error_literal(error, RT_ERROR, RT_ERROR_INVALID_ARG, missing->str);
    g_string_free(missing, TRUE);
    return FALSE;
}

void opt_problems_add(opt_problems *p, int code, const char *file, const char *format, ...)
{
    if (!p->text) {
        p->text = g_string_new(NULL);
        p->first_code = code;
    } else {
        g_string_append_c(p->text, '\n');
    }
    g_string_append_printf(p->text, "%s: ", file);
    va_list ap;
    va_start(ap, format);
    g_string_append_vprintf(p->text, format, ap);
    va_end(ap);
}

gboolean opt_problems_finish(opt_problems *p, GError **error)
{
    if (!p->text)
        return TRUE;
    g_set_error_literal(error, RT_ERROR, p->first_code, p->text->str);
    g_string_free(p->text, TRUE);
    p->text = NULL;
    return FALSE;
}

/* ---------------------------------------------------------------- suggestions */

static const char *last_component(const char *key)
{
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

const char *opt_suggest_key(const rt_config *cfg, const char *name)
{
    guint n = cfg->entries->len;
    const char **keys = g_new(const char *, n + 1);
    for (guint i = 0; i < n; i++)
        keys[i] = ((opt_entry *)g_ptr_array_index(cfg->entries, i))->key;
    const char *best = rt_suggest_nearest(name, keys, n);
    if (!best) {
        /* a wrong or missing group with the right name: --chunk_size for --policy.chunk_size */
        const char **lasts = g_new(const char *, n + 1);
        for (guint i = 0; i < n; i++)
            lasts[i] = last_component(keys[i]);
        const char *near = rt_suggest_nearest(last_component(name), lasts, n);
        for (guint i = 0; near && i < n; i++)
            if (lasts[i] == near)
                best = keys[i];
        g_free(lasts);
    }
    g_free(keys);
    return best;
}

/* ---------------------------------------------------------------- queries */

const rt_option *rt_config_lookup(const rt_config *cfg, const char *key)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    opt_entry *e = opt_lookup(cfg, key);
    return e ? e->row : NULL;
}

char **rt_config_list_keys(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    char **keys = g_new0(char *, cfg->entries->len + 1);
    for (guint i = 0; i < cfg->entries->len; i++)
        keys[i] = g_strdup(((opt_entry *)g_ptr_array_index(cfg->entries, i))->key);
    return keys;
}

/* The entry of key, which must be declared (a programmer error otherwise). */
static opt_entry *get_entry(const rt_config *cfg, const char *key, const char *caller)
{
    g_return_val_if_fail(cfg != NULL && key != NULL, NULL);
    opt_entry *e = opt_lookup(cfg, key);
    if (!e)
        g_critical("%s: no option '%s' is declared", caller, key);
    return e;
}

static gboolean type_ok(const opt_entry *e, gboolean ok, const char *caller)
{
    if (!ok)
        g_critical("%s: option '%s' is of type %s", caller, e->key, rt_option_type_name(e->row->type));
    return ok;
}

gboolean rt_config_is_null(const rt_config *cfg, const char *key)
{
    opt_entry *e = get_entry(cfg, key, G_STRFUNC);
    return !e || !e->value || JSON_NODE_HOLDS_NULL(e->value);
}

gboolean rt_config_is_set_explicitly(const rt_config *cfg, const char *key)
{
    opt_entry *e = get_entry(cfg, key, G_STRFUNC);
    return e && e->source != RT_SOURCE_DEFAULT;
}

rt_value_source rt_config_get_source(const rt_config *cfg, const char *key)
{
    opt_entry *e = get_entry(cfg, key, G_STRFUNC);
    return e ? e->source : RT_SOURCE_DEFAULT;
}

const char *rt_config_get_source_file(const rt_config *cfg, const char *key)
{
    opt_entry *e = get_entry(cfg, key, G_STRFUNC);
    return e && e->source == RT_SOURCE_FILE ? e->source_file : NULL;
}

char *rt_config_describe_origin(const rt_config *cfg, const char *key)
{
    opt_entry *e = get_entry(cfg, key, G_STRFUNC);
    if (!e)
        return g_strdup(key);
    switch (e->source) {
    case RT_SOURCE_ARGS:
        return e->source_file ? g_strdup(e->source_file) : g_strdup_printf("--%s", e->key);
    case RT_SOURCE_FILE:
        if (e->from_keyfile) {
            const char *dot = strchr(e->key, '.');
            return g_strdup_printf("%s: [%.*s] %s", e->source_file, (int)(dot - e->key), e->key, dot + 1);
        }
        return g_strdup_printf("%s: %s", e->source_file, e->key);
    case RT_SOURCE_PROGRAM:
        return g_strdup_printf("%s (set by the program)", e->key);
    case RT_SOURCE_DEFAULT:
        break;
    }
    return g_strdup_printf("the default of %s", e->key);
}

static JsonNode *scalar_value(const rt_config *cfg, const char *key, const char *caller,
                              gboolean (*ok)(rt_option_type))
{
    opt_entry *e = get_entry(cfg, key, caller);
    if (!e || !type_ok(e, ok(e->row->type), caller) || !e->value || JSON_NODE_HOLDS_NULL(e->value))
        return NULL;
    return e->value;
}

static gboolean is_bool(rt_option_type t)
{
    return t == RT_OPT_BOOL;
}
static gboolean is_int(rt_option_type t)
{
    return t == RT_OPT_INT;
}
static gboolean is_number(rt_option_type t)
{
    return t == RT_OPT_INT || t == RT_OPT_FLOAT;
}
static gboolean is_text(rt_option_type t)
{
    return t == RT_OPT_STRING || t == RT_OPT_ENUM || t == RT_OPT_PATH;
}
static gboolean is_list(rt_option_type t)
{
    return t == RT_OPT_LIST;
}

gboolean rt_config_get_bool(const rt_config *cfg, const char *key)
{
    JsonNode *v = scalar_value(cfg, key, G_STRFUNC, is_bool);
    return v ? json_node_get_boolean(v) : FALSE;
}

gint64 rt_config_get_int(const rt_config *cfg, const char *key)
{
    JsonNode *v = scalar_value(cfg, key, G_STRFUNC, is_int);
    return v ? json_node_get_int(v) : 0;
}

double rt_config_get_double(const rt_config *cfg, const char *key)
{
    JsonNode *v = scalar_value(cfg, key, G_STRFUNC, is_number);
    return v ? json_node_get_double(v) : 0.0;
}

const char *rt_config_get_string(const rt_config *cfg, const char *key)
{
    JsonNode *v = scalar_value(cfg, key, G_STRFUNC, is_text);
    return v ? json_node_get_string(v) : NULL;
}

size_t rt_config_get_list_length(const rt_config *cfg, const char *key)
{
    JsonNode *v = scalar_value(cfg, key, G_STRFUNC, is_list);
    return v ? json_array_get_length(json_node_get_array(v)) : 0;
}

static JsonArray *list_of(const rt_config *cfg, const char *key, const char *caller,
                          gboolean (*item_ok)(rt_option_type))
{
    opt_entry *e = get_entry(cfg, key, caller);
    if (!e || !type_ok(e, e->row->type == RT_OPT_LIST && item_ok(e->row->item_type), caller) || !e->value ||
        JSON_NODE_HOLDS_NULL(e->value))
        return NULL;
    return json_node_get_array(e->value);
}

gint64 *rt_config_get_int_list(const rt_config *cfg, const char *key, size_t *n)
{
    JsonArray *a = list_of(cfg, key, G_STRFUNC, is_int);
    if (n)
        *n = a ? json_array_get_length(a) : 0;
    if (!a)
        return NULL;
    guint len = json_array_get_length(a);
    gint64 *out = g_new0(gint64, len + 1);
    for (guint i = 0; i < len; i++)
        out[i] = json_array_get_int_element(a, i);
    return out;
}

double *rt_config_get_double_list(const rt_config *cfg, const char *key, size_t *n)
{
    JsonArray *a = list_of(cfg, key, G_STRFUNC, is_number);
    if (n)
        *n = a ? json_array_get_length(a) : 0;
    if (!a)
        return NULL;
    guint len = json_array_get_length(a);
    double *out = g_new0(double, len + 1);
    for (guint i = 0; i < len; i++)
        out[i] = json_node_get_double(json_array_get_element(a, i));
    return out;
}

char **rt_config_get_string_list(const rt_config *cfg, const char *key)
{
    JsonArray *a = list_of(cfg, key, G_STRFUNC, is_text);
    if (!a)
        return NULL;
    guint len = json_array_get_length(a);
    char **out = g_new0(char *, len + 1);
    for (guint i = 0; i < len; i++)
        out[i] = g_strdup(json_array_get_string_element(a, i));
    return out;
}

char *rt_config_get_text(const rt_config *cfg, const char *key)
{
    opt_entry *e = get_entry(cfg, key, G_STRFUNC);
    return e ? opt_value_to_text(e->row, e->value) : NULL;
}
