/* src/core/plugin-path.h: the module search path from its parts (internal; for tests).
 *
 * rt_plugin_search_path() (robotrain/plugin-loader.h) calls this with the environment, the
 * XDG data folder and RT_PLUGINDIR; tests call it with values of their own. */
#ifndef ROBOTRAIN_CORE_PLUGIN_PATH_H
#define ROBOTRAIN_CORE_PLUGIN_PATH_H

#include <glib.h>

G_BEGIN_DECLS

/* The search path from flag_value and env_value (colon-separated lists, each may be NULL),
 * keyfile_folders (a NULL-terminated list, or NULL), then user_data_dir/robotrain/plugins and
 * plugindir (each may be NULL), with the rules of rt_plugin_search_path(). Returns (transfer
 * full) for g_strfreev(), or NULL with error when a folder of flag_value is not a folder. */
char **rt_plugin_search_path_from(const char *flag_value, const char *env_value,
                                  const char *const *keyfile_folders, const char *user_data_dir,
                                  const char *plugindir, GError **error);

G_END_DECLS

#endif
