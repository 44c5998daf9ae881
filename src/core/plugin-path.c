/* The module search path: flag, environment, configuration file, user folder, built-in folder. */
#include "config.h"

#include "core/plugin-path.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

/* folder as an absolute, tidy path: ~ expanded, relative to the current folder.
 * Returns (transfer full). */
static char *absolute_folder(const char *folder)
{
    char *expanded = NULL;
    if (folder[0] == '~' && (folder[1] == '\0' || folder[1] == '/'))
        expanded = g_build_filename(g_get_home_dir(), folder + 1, NULL);
    char *absolute = g_canonicalize_filename(expanded ? expanded : folder, NULL);
    g_free(expanded);
    return absolute;
}

/* Appends folder (transfer full) unless it is already listed. */
static void add_unique(GPtrArray *folders, char *folder)
{
    for (guint i = 0; i < folders->len; i++) {
        if (strcmp(g_ptr_array_index(folders, i), folder) == 0) {
            g_free(folder);
            return;
        }
    }
    g_ptr_array_add(folders, folder);
}

/* Appends entries (NULL-terminated; NULL is none) to folders, skipping empty entries and
 * folders already present. With must_exist, an entry that is not a folder is an error. */
static gboolean add_folders(GPtrArray *folders, const char *const *entries, gboolean must_exist,
                            GError **error)
{
    gboolean ok = TRUE;
    for (const char *const *e = entries; e && *e && ok; e++) {
        if (!**e)
            continue;
        char *folder = absolute_folder(*e);
        if (must_exist && !g_file_test(folder, G_FILE_TEST_IS_DIR)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "--plugin_path: '%s' is not a folder; give folders that hold robotrain "
                        "modules (.la or .so files), separated by ':'",
                        *e);
            ok = FALSE;
            g_free(folder);
        } else {
            add_unique(folders, folder);
        }
    }
    return ok;
}

/* The same for a colon-separated list (NULL is none). */
static gboolean add_list(GPtrArray *folders, const char *list, gboolean must_exist, GError **error)
{
    if (!list)
        return TRUE;
    char **entries = g_strsplit(list, G_SEARCHPATH_SEPARATOR_S, -1);
    gboolean ok = add_folders(folders, (const char *const *)entries, must_exist, error);
    g_strfreev(entries);
    return ok;
}

char **rt_plugin_search_path_from(const char *flag_value, const char *env_value,
                                  const char *const *keyfile_folders, const char *user_data_dir,
                                  const char *plugindir, GError **error)
{
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    GPtrArray *folders = g_ptr_array_new_with_free_func(g_free);
    char *user_folder = user_data_dir && *user_data_dir
                            ? g_build_filename(user_data_dir, "robotrain", "plugins", NULL)
                            : NULL;
    /* Key-file entries and the user and built-in folders are whole folders: never split at ':'. */
    gboolean ok = add_list(folders, flag_value, TRUE, error) && add_list(folders, env_value, FALSE, NULL) &&
                  add_folders(folders, keyfile_folders, FALSE, NULL);
    if (ok) {
        const char *singles[] = {user_folder, plugindir};
        for (size_t i = 0; i < G_N_ELEMENTS(singles); i++) {
            if (singles[i] && *singles[i])
                add_unique(folders, absolute_folder(singles[i]));
        }
    }
    g_free(user_folder);
    if (!ok) {
        g_ptr_array_unref(folders);
        return NULL;
    }
    g_ptr_array_add(folders, NULL);
    return (char **)g_ptr_array_free(folders, FALSE);
}

char **rt_plugin_search_path(const char *flag_value, const char *const *keyfile_folders, GError **error)
{
    return rt_plugin_search_path_from(flag_value, g_getenv("ROBOTRAIN_PLUGIN_PATH"), keyfile_folders,
                                      g_get_user_data_dir(), RT_PLUGINDIR, error);
}
