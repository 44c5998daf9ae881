/* robotrain/plugin-loader.h: finding and loading modules.
 *
 * A registry is built from an ordered list of folders (usually rt_plugin_search_path()). It
 * scans them once for module files named <kind>-<name>.la or <kind>-<name>.so; when two folders
 * hold a module with the same file name, the earlier folder wins and the later one is reported
 * as shadowed, never loaded. Modules are opened on demand: rt_plugin_registry_find() opens the
 * one asked for, rt_plugin_registry_list() opens them all. A module that cannot be used (it will
 * not load, lacks its entry symbol, or its descriptor fails the checks of robotrain/plugin.h) is
 * kept in the registry as refused, with the reason.
 *
 * Loaded modules are resident: they are never unloaded, so a descriptor (and everything it
 * points to) stays valid until the process exits, even after the registry is freed.
 *
 * A registry may be used from several threads. */
#ifndef ROBOTRAIN_PLUGIN_LOADER_H
#define ROBOTRAIN_PLUGIN_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include <robotrain/plugin.h>

G_BEGIN_DECLS

typedef enum {
    RT_PLUGIN_LOADED = 1, /* usable: desc is its descriptor */
    RT_PLUGIN_REFUSED,    /* cannot be used: reason says why */
    RT_PLUGIN_SHADOWED,   /* a module with the same file name comes earlier in the path */
} rt_plugin_status;

/* One module file found in the search path. Owned by its registry; read-only; valid until
 * rt_plugin_registry_free(). */
typedef struct rt_plugin_module {
    rt_plugin_kind kind;        /* from the file name */
    const char *name;           /* from the file name: "act" for policy-act.la */
    const char *path;           /* the file found: "<folder>/policy-act.la" (or .so) */
    rt_plugin_status status;
    /* The module's descriptor. LOADED: always. REFUSED: when the descriptor was found and its
     * ABI fields are compatible (it was refused for its content), else NULL. SHADOWED: NULL. */
    const rt_plugin_desc *desc;
    /* The ABI the module declares; 0.0 when unknown (it did not load, or has no entry symbol). */
    uint32_t abi_major, abi_minor;
    const char *reason;      /* REFUSED: what is wrong, naming the file, and what to do; else NULL */
    const char *shadowed_by; /* SHADOWED: the path of the module used instead; else NULL */
} rt_plugin_module;

/* A set of modules found in a search path. Opaque. */
typedef struct rt_plugin_registry rt_plugin_registry;

/* The folders to search, in robotrain's order:
 *   1. flag_value: the --plugin_path flag (colon-separated; NULL when not given);
 *   2. $ROBOTRAIN_PLUGIN_PATH (colon-separated);
 *   3. keyfile_folders: [core] plugin_path of the launch configuration (robotrain.conf(5)), as
 *      rt_config_get_string_list() returns it: a NULL-terminated list of folders, each taken
 *      whole (a ':' in it is part of the name); NULL for none;
 *   4. $XDG_DATA_HOME/robotrain/plugins (g_get_user_data_dir());
 *   5. the plugin folder this robotrain was built with (RT_PLUGINDIR, see robotrain.pc).
 * Empty entries are dropped, a leading ~ is expanded, relative folders are made absolute
 * (against the current folder) and a folder listed twice keeps its first place. A folder named
 * in flag_value must exist (a typo there would otherwise go unnoticed); the others may not.
 * Returns (transfer full) a NULL-terminated list to free with g_strfreev(), or NULL with error
 * (RT_ERROR_INVALID_ARG, naming the folder). */
char **rt_plugin_search_path(const char *flag_value, const char *const *keyfile_folders, GError **error);

/* Scans folders (a NULL-terminated list, searched in order; folders that do not exist are
 * skipped) for module files. Opens none of them.
 * Returns (transfer full) a registry to free with rt_plugin_registry_free(), or NULL with error
 * when the dynamic loader itself cannot be initialised. */
rt_plugin_registry *rt_plugin_registry_new(const char *const *folders, GError **error);

/* Frees the registry and its rt_plugin_module records. Loaded modules stay loaded, and their
 * descriptors valid. NULL is a no-op. */
void rt_plugin_registry_free(rt_plugin_registry *registry);

/* The folders the registry searched, in order. Owned by the registry (NULL-terminated). */
const char *const *rt_plugin_registry_get_folders(const rt_plugin_registry *registry);

/* The module of the given kind and name, opened (and checked) if it was not yet. '-' and '_'
 * are the same character in name. With kind RT_PLUGIN_ANY, name may also be a file name
 * without extension, "<kind>-<name>" ("backend-cuda"); a name that several kinds use is then an
 * error that lists them.
 * Returns (transfer none) the LOADED module, owned by the registry, or NULL with error:
 * RT_ERROR_NOT_FOUND (the message names what was asked for, lists the modules found and the
 * folders searched), RT_ERROR_PLUGIN (the module was refused; the message is its reason) or
 * RT_ERROR_INVALID_ARG (an RT_PLUGIN_ANY name that several kinds use). */
const rt_plugin_module *rt_plugin_registry_find(rt_plugin_registry *registry, rt_plugin_kind kind,
                                                const char *name, GError **error);

/* Every module found, in search order (folder by folder, by name within a folder): loaded,
 * refused and shadowed ones. Opens every module that was not yet opened, which runs their
 * initialisers. n_modules (may be NULL) receives the count.
 * Returns (transfer none) a NULL-terminated array owned by the registry, valid until
 * rt_plugin_registry_free(). */
const rt_plugin_module *const *rt_plugin_registry_list(rt_plugin_registry *registry,
                                                       size_t *n_modules);

/* "policy", "backend" or "comm"; NULL for any other value (including RT_PLUGIN_ANY).
 * Returns (transfer none) a static string. */
const char *rt_plugin_kind_to_string(rt_plugin_kind kind);

/* The kind that name ("policy", "backend", "comm") denotes, or RT_PLUGIN_ANY for none. */
rt_plugin_kind rt_plugin_kind_from_string(const char *name);

G_END_DECLS

#endif
