/* The checks a module's descriptor must pass before the core uses it. */
#include "config.h"

#include "core/plugin-check.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

/* The advice at the end of every message about a descriptor's content. */
#define FIX_IT "fix the module's RT_PLUGIN_DEFINE and rebuild it (see robotrain-plugin(7))"

gboolean rt_plugin_names_equal(const char *a, const char *b)
{
    for (;; a++, b++) {
        char ca = *a == '-' ? '_' : *a;
        char cb = *b == '-' ? '_' : *b;
        if (ca != cb)
            return FALSE;
        if (!ca)
            return TRUE;
    }
}

gboolean rt_plugin_desc_check_abi(const rt_plugin_desc *desc, const char *path, GError **error)
{
    if (desc->abi_major != RT_PLUGIN_ABI_MAJOR || desc->abi_minor > RT_PLUGIN_ABI_MINOR) {
        char accepted[64];
        if (RT_PLUGIN_ABI_MINOR == 0)
            g_snprintf(accepted, sizeof accepted, "only modules built for ABI %d.0", RT_PLUGIN_ABI_MAJOR);
        else
            g_snprintf(accepted, sizeof accepted, "modules built for ABI %d.0 to %d.%d",
                       RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: built for plugin ABI %u.%u, but this robotrain (%s) has plugin ABI %d.%d "
                    "and loads %s; rebuild the module against this robotrain",
                    path, (unsigned)desc->abi_major, (unsigned)desc->abi_minor, RT_VERSION,
                    RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR, accepted);
        return FALSE;
    }
    if (desc->struct_size < RT_PLUGIN_DESC_MIN_SIZE) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor is %u bytes long, shorter than the %u bytes of plugin ABI "
                    "%u.%u that it declares; rebuild the module against this robotrain (and fill "
                    "the descriptor with RT_PLUGIN_DEFINE, which sets struct_size)",
                    path, (unsigned)desc->struct_size, (unsigned)RT_PLUGIN_DESC_MIN_SIZE,
                    (unsigned)desc->abi_major, (unsigned)desc->abi_minor);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_plugin_desc_check_fields(const rt_plugin_desc *desc, const char *path,
                                     rt_plugin_kind file_kind, const char *file_name, GError **error)
{
    const char *kind = rt_plugin_kind_to_string((rt_plugin_kind)desc->kind);
    const char *file_kind_name = rt_plugin_kind_to_string(file_kind);
    if (!kind) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor has kind %u, which is none of RT_PLUGIN_POLICY, "
                    "RT_PLUGIN_BACKEND, RT_PLUGIN_COMM; " FIX_IT,
                    path, (unsigned)desc->kind);
        return FALSE;
    }
    if ((rt_plugin_kind)desc->kind != file_kind) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor says it is a %s module, but its file name says %s; "
                    "rename the file to %s-%s.la, or " FIX_IT,
                    path, kind, file_kind_name, kind, file_name);
        return FALSE;
    }
    if (!desc->name || !*desc->name) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN, "%s: its descriptor has no name; " FIX_IT, path);
        return FALSE;
    }
    if (!rt_plugin_names_equal(desc->name, file_name)) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor is named '%s', but its file is named for '%s'; rename the "
                    "file to %s-%s.la, or " FIX_IT,
                    path, desc->name, file_name, kind, desc->name);
        return FALSE;
    }
    if (!desc->vtable) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor has no vtable (the %s interface, its last field); " FIX_IT,
                    path, kind);
        return FALSE;
    }
    uint32_t vtable_size;
    memcpy(&vtable_size, desc->vtable, sizeof vtable_size);
    if (vtable_size == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its vtable's struct_size is 0; set it to the size of the %s interface "
                    "struct the module fills in, and rebuild the module",
                    path, kind);
        return FALSE;
    }
    return rt_plugin_options_check(desc->options, desc->n_options, path, error);
}

static gboolean option_error(GError **error, const char *path, size_t index, const rt_option *row,
                             const char *what)
{
    g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                "%s: option %zu (%s) %s; fix the module's option table and rebuild it", path,
                index + 1, row->key && *row->key ? row->key : "without a key", what);
    return FALSE;
}

gboolean rt_plugin_options_check(const rt_option *options, size_t n_options, const char *path,
                                 GError **error)
{
    if (n_options == 0)
        return TRUE;
    if (!options) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor declares %zu options but no option table; " FIX_IT, path,
                    n_options);
        return FALSE;
    }
    if (n_options > RT_PLUGIN_MAX_OPTIONS) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor declares %zu options, more than the %d a module may have "
                    "(is n_options G_N_ELEMENTS of the table?); " FIX_IT,
                    path, n_options, RT_PLUGIN_MAX_OPTIONS);
        return FALSE;
    }
    GHashTable *keys = g_hash_table_new(g_str_hash, g_str_equal);
    gboolean ok = TRUE;
    for (size_t i = 0; i < n_options && ok; i++) {
        const rt_option *row = &options[i];
        if (!row->key || !*row->key)
            ok = option_error(error, path, i, row, "has no key");
        else if (!g_hash_table_add(keys, (gpointer)row->key))
            ok = option_error(error, path, i, row, "is declared twice");
        else if ((unsigned)row->type > RT_OPT_PATH)
            ok = option_error(error, path, i, row, "has an unknown type");
        else if (row->type == RT_OPT_ENUM && (!row->choices || !row->choices[0]))
            ok = option_error(error, path, i, row, "is an enum without choices");
        else if (row->type == RT_OPT_LIST && row->item_type != RT_OPT_INT &&
                 row->item_type != RT_OPT_FLOAT && row->item_type != RT_OPT_STRING)
            ok = option_error(error, path, i, row, "is a list whose item type is not int, float or string");
        else if ((row->flags & RT_OPT_RANGE) && !(row->min <= row->max))
            ok = option_error(error, path, i, row, "has a range whose minimum is above its maximum");
    }
    g_hash_table_unref(keys);
    return ok;
}
