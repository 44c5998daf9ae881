/* The plugin registry: scan the search path, open modules on demand, check their descriptors. */
#include "config.h"

#include <robotrain/plugin-loader.h>

#include <string.h>

#include <robotrain/error.h>

#include "core/dl.h"
#include "core/plugin-check.h"

typedef struct plugin_entry {
    rt_plugin_module pub; /* what callers see; its strings point at the fields below */
    char *name;
    char *path;
    char *reason;
    char *shadowed_by;
    char *key;            /* "<kind>-<name>" with '_' for '-': modules with equal keys shadow */
    gboolean opened;      /* open_entry() ran: status, desc and reason are final */
    rt_dl_handle *handle; /* NULL when it did not load */
} plugin_entry;

struct rt_plugin_registry {
    char **folders;
    GPtrArray *entries;            /* plugin_entry *, in search order; fixed after the scan */
    const rt_plugin_module **list; /* entries' pub, NULL-terminated */
    GHashTable *by_key;            /* key -> the first plugin_entry with it (not owned) */
    GMutex lock;                   /* guards opening entries */
};

static const char *const kind_names[] = {
    [RT_PLUGIN_POLICY] = "policy",
    [RT_PLUGIN_BACKEND] = "backend",
    [RT_PLUGIN_COMM] = "comm",
};

const char *rt_plugin_kind_to_string(rt_plugin_kind kind)
{
    if ((unsigned)kind >= G_N_ELEMENTS(kind_names))
        return NULL;
    return kind_names[kind];
}

rt_plugin_kind rt_plugin_kind_from_string(const char *name)
{
    for (size_t k = 0; name && k < G_N_ELEMENTS(kind_names); k++)
        if (kind_names[k] && strcmp(kind_names[k], name) == 0)
            return (rt_plugin_kind)k;
    return RT_PLUGIN_ANY;
}

/* Splits "<kind>-<name>" into its kind and (transfer full) name; FALSE when it is not a
 * module's file name. */
static gboolean parse_file_name(const char *base, rt_plugin_kind *kind, char **name)
{
    const char *dash = strchr(base, '-');
    if (!dash || !dash[1])
        return FALSE;
    char *kind_name = g_strndup(base, (gsize)(dash - base));
    *kind = rt_plugin_kind_from_string(kind_name);
    g_free(kind_name);
    if (*kind == RT_PLUGIN_ANY)
        return FALSE;
    *name = g_strdup(dash + 1);
    return TRUE;
}

static char *canonical_key(rt_plugin_kind kind, const char *name)
{
    char *cname = g_strdelimit(g_strdup(name), "-", '_');
    char *key = g_strdup_printf("%s-%s", rt_plugin_kind_to_string(kind), cname);
    g_free(cname);
    return key;
}

static void on_module_file(const char *file, gpointer user_data)
{
    rt_plugin_registry *registry = user_data;
    char *base = g_path_get_basename(file);
    char *dot = strrchr(base, '.');
    if (dot)
        *dot = '\0';
    rt_plugin_kind kind;
    char *name;
    if (!parse_file_name(base, &kind, &name)) {
        g_free(base); /* some other library (a module's helper, say): not ours */
        return;
    }
    g_free(base);

    plugin_entry *e = g_new0(plugin_entry, 1);
    e->name = name;
    e->path = g_strdup(file);
    e->key = canonical_key(kind, name);
    e->pub.kind = kind;
    e->pub.name = e->name;
    e->pub.path = e->path;
    plugin_entry *first = g_hash_table_lookup(registry->by_key, e->key);
    if (first) {
        e->opened = TRUE; /* never opened */
        e->pub.status = RT_PLUGIN_SHADOWED;
        e->shadowed_by = g_strdup(first->path);
        e->pub.shadowed_by = e->shadowed_by;
    } else {
        g_hash_table_insert(registry->by_key, e->key, e);
    }
    g_ptr_array_add(registry->entries, e);
}

static void refuse(plugin_entry *e, char *reason /* transfer full */)
{
    e->pub.status = RT_PLUGIN_REFUSED;
    e->reason = reason;
    e->pub.reason = reason;
}

/* Opens the module of e and checks its descriptor; sets status, desc and reason. Called with
 * the registry's lock held. */
static void open_entry(plugin_entry *e)
{
    if (e->opened)
        return;
    e->opened = TRUE;

    GError *error = NULL;
    e->handle = rt_dl_open(e->path, &error);
    if (!e->handle) {
        refuse(e, g_strdup(error->message));
        g_error_free(error);
        return;
    }
    char *cname = g_strdelimit(g_strdup(e->name), "-", '_');
    char *symbol = g_strdup_printf("rt_plugin_%s_get_desc", cname);
    const char *used = symbol;
    void *address = rt_dl_lookup(e->handle, symbol);
    if (!address) {
        used = "rt_plugin_get_desc";
        address = rt_dl_lookup(e->handle, used);
    }
    if (!address) {
        refuse(e, g_strdup_printf("%s: not a robotrain module: it exports neither %s nor "
                                  "rt_plugin_get_desc; define its entry point with "
                                  "RT_PLUGIN_DEFINE(%s, ...) and link it with "
                                  "-export-symbols-regex '^rt_plugin_' (see robotrain-plugin(7))",
                                  e->path, symbol, cname));
        g_free(symbol);
        g_free(cname);
        return;
    }
    g_free(cname);
    rt_plugin_get_desc_fn get_desc;
    memcpy(&get_desc, &address, sizeof get_desc); /* object to function pointer, without a cast */
    const rt_plugin_desc *desc = get_desc();
    if (!desc) {
        refuse(e, g_strdup_printf("%s: its entry point %s returned NULL instead of a descriptor; "
                                  "define it with RT_PLUGIN_DEFINE (see robotrain-plugin(7))",
                                  e->path, used));
        g_free(symbol);
        return;
    }
    g_free(symbol);
    e->pub.abi_major = desc->abi_major;
    e->pub.abi_minor = desc->abi_minor;
    if (!rt_plugin_desc_check_abi(desc, e->path, &error)) {
        refuse(e, g_strdup(error->message));
        g_error_free(error);
        return;
    }
    e->pub.desc = desc; /* readable from here on, even if refused below */
    if (!rt_plugin_desc_check_fields(desc, e->path, e->pub.kind, e->name, &error)) {
        refuse(e, g_strdup(error->message));
        g_error_free(error);
        return;
    }
    e->pub.status = RT_PLUGIN_LOADED;
}

static void entry_free(gpointer data)
{
    plugin_entry *e = data;
    rt_dl_close(e->handle);
    g_free(e->name);
    g_free(e->path);
    g_free(e->reason);
    g_free(e->shadowed_by);
    g_free(e->key);
    g_free(e);
}

rt_plugin_registry *rt_plugin_registry_new(const char *const *folders, GError **error)
{
    g_return_val_if_fail(folders != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    rt_plugin_registry *registry = g_new0(rt_plugin_registry, 1);
    registry->folders = g_strdupv((char **)folders);
    registry->entries = g_ptr_array_new_with_free_func(entry_free);
    registry->by_key = g_hash_table_new(g_str_hash, g_str_equal);
    g_mutex_init(&registry->lock);
    for (const char *const *f = folders; *f; f++)
        rt_dl_foreach(*f, on_module_file, registry);
    registry->list = g_new0(const rt_plugin_module *, registry->entries->len + 1);
    for (guint i = 0; i < registry->entries->len; i++)
        registry->list[i] = &((plugin_entry *)g_ptr_array_index(registry->entries, i))->pub;
    return registry;
}

void rt_plugin_registry_free(rt_plugin_registry *registry)
{
    if (!registry)
        return;
    g_hash_table_unref(registry->by_key);
    g_ptr_array_unref(registry->entries);
    g_free(registry->list);
    g_strfreev(registry->folders);
    g_mutex_clear(&registry->lock);
    g_free(registry);
}

const char *const *rt_plugin_registry_get_folders(const rt_plugin_registry *registry)
{
    g_return_val_if_fail(registry != NULL, NULL);
    return (const char *const *)registry->folders;
}

/* The unshadowed entries that kind and name select, into matches. */
static void collect_matches(rt_plugin_registry *registry, rt_plugin_kind kind, const char *name,
                            GPtrArray *matches)
{
    for (guint i = 0; i < registry->entries->len; i++) {
        plugin_entry *e = g_ptr_array_index(registry->entries, i);
        if (e->pub.status != RT_PLUGIN_SHADOWED && (kind == RT_PLUGIN_ANY || e->pub.kind == kind) &&
            rt_plugin_names_equal(e->name, name))
            g_ptr_array_add(matches, e);
    }
}

/* "a, b, c" of the unshadowed modules of kind (with their kind for RT_PLUGIN_ANY), or "none".
 * Returns (transfer full). */
static char *describe_found(rt_plugin_registry *registry, rt_plugin_kind kind)
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < registry->entries->len; i++) {
        plugin_entry *e = g_ptr_array_index(registry->entries, i);
        if (e->pub.status == RT_PLUGIN_SHADOWED || (kind != RT_PLUGIN_ANY && e->pub.kind != kind))
            continue;
        if (s->len)
            g_string_append(s, ", ");
        if (kind == RT_PLUGIN_ANY)
            g_string_append_printf(s, "%s-", rt_plugin_kind_to_string(e->pub.kind));
        g_string_append(s, e->name);
    }
    if (!s->len)
        g_string_append(s, "none");
    return g_string_free(s, FALSE);
}

static void set_not_found(rt_plugin_registry *registry, rt_plugin_kind kind, const char *name,
                          GError **error)
{
    char *found = describe_found(registry, kind);
    char *searched = g_strjoinv(":", registry->folders);
    const char *kind_name = rt_plugin_kind_to_string(kind);
    if (kind_name)
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "no %s module named '%s' (a file %s-%s.la or %s-%s.so); %s modules found: %s; "
                    "searched: %s; add the folder that holds it with --plugin_path or "
                    "ROBOTRAIN_PLUGIN_PATH (see robotrain-plugins(1))",
                    kind_name, name, kind_name, name, kind_name, name, kind_name, found,
                    *searched ? searched : "no folders");
    else
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "no module named '%s'; modules found: %s; searched: %s; add the folder that "
                    "holds it with --plugin_path or ROBOTRAIN_PLUGIN_PATH (see robotrain-plugins(1))",
                    name, found, *searched ? searched : "no folders");
    g_free(searched);
    g_free(found);
}

const rt_plugin_module *rt_plugin_registry_find(rt_plugin_registry *registry, rt_plugin_kind kind,
                                                const char *name, GError **error)
{
    g_return_val_if_fail(registry != NULL && name != NULL, NULL);
    g_return_val_if_fail(kind == RT_PLUGIN_ANY || rt_plugin_kind_to_string(kind) != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    g_mutex_lock(&registry->lock);
    GPtrArray *matches = g_ptr_array_new();
    collect_matches(registry, kind, name, matches);
    rt_plugin_kind file_kind;
    char *file_name = NULL;
    if (matches->len == 0 && kind == RT_PLUGIN_ANY && parse_file_name(name, &file_kind, &file_name))
        collect_matches(registry, file_kind, file_name, matches);
    g_free(file_name);

    const rt_plugin_module *module = NULL;
    if (matches->len == 0) {
        set_not_found(registry, kind, name, error);
    } else if (matches->len > 1) {
        GString *which = g_string_new(NULL);
        for (guint i = 0; i < matches->len; i++) {
            plugin_entry *e = g_ptr_array_index(matches, i);
            g_string_append_printf(which, "%s%s-%s", i ? ", " : "", rt_plugin_kind_to_string(e->pub.kind),
                                   e->name);
        }
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "'%s' names %u modules: %s; ask for one of them by that full name", name,
                    matches->len, which->str);
        g_string_free(which, TRUE);
    } else {
        plugin_entry *e = g_ptr_array_index(matches, 0);
        open_entry(e);
        if (e->pub.status == RT_PLUGIN_LOADED)
            module = &e->pub;
        else
            g_set_error_literal(error, RT_ERROR, RT_ERROR_PLUGIN, e->reason);
    }
    g_ptr_array_unref(matches);
    g_mutex_unlock(&registry->lock);
    return module;
}

const rt_plugin_module *const *rt_plugin_registry_list(rt_plugin_registry *registry, size_t *n_modules)
{
    g_return_val_if_fail(registry != NULL, NULL);
    g_mutex_lock(&registry->lock);
    for (guint i = 0; i < registry->entries->len; i++)
        open_entry(g_ptr_array_index(registry->entries, i));
    g_mutex_unlock(&registry->lock);
    if (n_modules)
        *n_modules = registry->entries->len;
    return registry->list;
}
