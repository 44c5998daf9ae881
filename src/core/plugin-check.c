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
            g_snprintf(accepted, sizeof accepted, "modules built for ABI %d.0 to %d.%d", RT_PLUGIN_ABI_MAJOR,
                       RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
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

gboolean rt_plugin_desc_check_fields(const rt_plugin_desc *desc, const char *path, rt_plugin_kind file_kind,
                                     const char *file_name, GError **error)
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
                    "%s: its descriptor has no vtable (the %s interface, its last field); " FIX_IT, path,
                    kind);
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

gboolean rt_plugin_options_check(const rt_option *options, size_t n_options, const char *path, GError **error)
{
    if (n_options == 0)
        return TRUE;
    if (!options) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor declares %zu options but no option table; " FIX_IT, path, n_options);
        return FALSE;
    }
    if (n_options > RT_PLUGIN_MAX_OPTIONS) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: its descriptor declares %zu options, more than the %d a module may have "
                    "(is n_options G_N_ELEMENTS of the table?); " FIX_IT,
                    path, n_options, RT_PLUGIN_MAX_OPTIONS);
        return FALSE;
    }
    for (size_t i = 0; i < n_options; i++) {
        if (!options[i].key || !*options[i].key) {
            g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                        "%s: option %zu of its table has no key; fix the module's option table and "
                        "rebuild it (see robotrain-plugin(7))",
                        path, i + 1);
            return FALSE;
        }
    }
    /* The rules of the option parser itself (robotrain/option.h), so that every table the
     * loader accepts is one that --policy.* flags, config files and --help can use. */
    rt_config *trial = rt_config_new(NULL);
    GError *problem = NULL;
    gboolean ok = rt_config_add_options(trial, NULL, options, n_options, &problem);
    rt_config_free(trial);
    if (!ok) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: %s; fix the module's option table and rebuild it (see robotrain-plugin(7))", path,
                    problem->message);
        g_error_free(problem);
    }
    return ok;
}
