/* The dynamic-loading layer: libltdl, plus plain dlopen() where the platform has it.
 *
 * libltdl binds lazily (RTLD_LAZY) and, when a module cannot be loaded, often reports only "file
 * not found", even for an unresolved symbol or a missing dependency. So where <dlfcn.h> exists we
 * first open the shared object ourselves with RTLD_NOW: a module that would fail on its first
 * call fails here instead, and the dynamic linker's own message (which names the missing symbol
 * or library) reaches the user. libltdl then opens the same, already mapped object and keeps the
 * handle. We never call lt_dlexit(): the modules' memory is referenced until the process ends. */
#include "config.h"

#include "core/dl.h"

#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <ltdl.h>
#ifdef HAVE_DLFCN_H
#include <dlfcn.h>
#endif

#include <robotrain/error.h>

#ifndef LT_MODULE_EXT
#define LT_MODULE_EXT ".so"
#endif
#ifndef LT_OBJDIR
#define LT_OBJDIR ".libs/"
#endif

/* A .la file is a few dozen lines; anything bigger is not one. */
#define LA_FILE_MAX_BYTES (256 * 1024)

struct rt_dl_handle {
    lt_dlhandle module;
    char *filename; /* the shared object */
};

/* libltdl and dlerror() keep global state: every call into them holds this lock. */
static GMutex dl_lock;
static gboolean dl_ready;
static char *dl_init_error; /* set once when lt_dlinit() failed; never freed */

static gboolean dl_init_locked(GError **error)
{
    if (!dl_ready && !dl_init_error) {
        if (lt_dlinit() == 0) {
            dl_ready = TRUE;
        } else {
            const char *why = lt_dlerror();
            dl_init_error = g_strdup(why ? why : "unknown error");
        }
    }
    if (dl_init_error) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "cannot initialise libltdl, so no module can be loaded: %s", dl_init_error);
        return FALSE;
    }
    return TRUE;
}

static gboolean is_regular_file(const char *path)
{
    return g_file_test(path, G_FILE_TEST_IS_REGULAR);
}

/* The value of `key=value` or `key='value'` in the text of a .la file, or NULL.
 * Returns (transfer full): g_free(). */
static char *la_value(char *const *lines, const char *key)
{
    size_t key_len = strlen(key);
    for (char *const *l = lines; *l; l++) {
        const char *line = *l;
        if (strncmp(line, key, key_len) != 0 || line[key_len] != '=')
            continue;
        const char *value = line + key_len + 1;
        size_t len = strlen(value);
        if (len >= 2 && value[0] == '\'' && value[len - 1] == '\'')
            return g_strndup(value + 1, len - 2);
        return g_strdup(value);
    }
    return NULL;
}

/* The shared object that a libtool .la file describes, looked for where libltdl looks for it:
 * the installed libdir, then (uninstalled) <dir>/.libs, then the .la's own folder.
 * Returns (transfer full) a path to g_free(), or NULL with error. */
static char *shared_object_of_la(const char *la, GError **error)
{
    GStatBuf st;
    if (g_stat(la, &st) != 0 || st.st_size > LA_FILE_MAX_BYTES) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: not a libtool library file (it is larger than %d bytes or unreadable); "
                    "remove it from the plugin folder",
                    la, LA_FILE_MAX_BYTES);
        return NULL;
    }
    char *text = NULL;
    GError *local = NULL;
    if (!g_file_get_contents(la, &text, NULL, &local)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", la, local->message);
        g_error_free(local);
        return NULL;
    }
    char **lines = g_strsplit(text, "\n", -1);
    g_free(text);
    char *dlname = la_value(lines, "dlname");
    char *installed = la_value(lines, "installed");
    char *libdir = la_value(lines, "libdir");
    g_strfreev(lines);

    char *found = NULL;
    if (!dlname || !*dlname) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: this libtool library has no shared object (its dlname is empty); "
                    "build the module with -module -shared (see robotrain-plugin(7))",
                    la);
    } else {
        gboolean is_installed = installed && strcmp(installed, "yes") == 0;
        char *dir = g_path_get_dirname(la);
        char *candidates[3] = { NULL, NULL, NULL };
        int n = 0;
        if (is_installed && libdir && *libdir)
            candidates[n++] = g_build_filename(libdir, dlname, NULL);
        if (!is_installed)
            candidates[n++] = g_build_filename(dir, LT_OBJDIR, dlname, NULL);
        candidates[n++] = g_build_filename(dir, dlname, NULL);
        for (int i = 0; i < n && !found; i++)
            if (is_regular_file(candidates[i]))
                found = g_strdup(candidates[i]);
        if (!found) {
            char *tried = g_strjoinv(", ", candidates);
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "%s: its shared object %s is in none of: %s; reinstall the module "
                        "(or rebuild it, if it is in a build tree)",
                        la, dlname, tried);
            g_free(tried);
        }
        for (int i = 0; i < n; i++)
            g_free(candidates[i]);
        g_free(dir);
    }
    g_free(dlname);
    g_free(installed);
    g_free(libdir);
    return found;
}

/* The module file to open for file: file itself, or for a name without extension, its .la,
 * else its shared object. Returns (transfer full), or NULL with error. */
static char *module_file_of(const char *file, GError **error)
{
    if (is_regular_file(file))
        return g_strdup(file);
    char *la = g_strconcat(file, ".la", NULL);
    if (is_regular_file(la))
        return la;
    char *so = g_strconcat(file, LT_MODULE_EXT, NULL);
    if (is_regular_file(so)) {
        g_free(la);
        return so;
    }
    g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                "%s: no such module (neither it nor %s nor %s is a file)", file, la, so);
    g_free(la);
    g_free(so);
    return NULL;
}

rt_dl_handle *rt_dl_open(const char *file, GError **error)
{
    g_return_val_if_fail(file != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    char *module_file = module_file_of(file, error);
    if (!module_file)
        return NULL;
    char *shared_object = g_str_has_suffix(module_file, ".la")
                              ? shared_object_of_la(module_file, error)
                              : g_strdup(module_file);
    if (!shared_object) {
        g_free(module_file);
        return NULL;
    }

    rt_dl_handle *handle = NULL;
    g_mutex_lock(&dl_lock);
    if (!dl_init_locked(error))
        goto out;

#ifdef HAVE_DLFCN_H
    int flags = RTLD_NOW | RTLD_LOCAL;
#ifdef RTLD_NODELETE
    flags |= RTLD_NODELETE;
#endif
    dlerror();
    void *bound = dlopen(shared_object, flags);
    if (!bound) {
        const char *why = dlerror();
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: cannot be loaded: %s; check its dependencies with ldd(1): ldd -r %s",
                    module_file, why ? why : "unknown dynamic-linker error", shared_object);
        goto out;
    }
#endif

    lt_dladvise advise;
    lt_dlhandle module = NULL;
    if (lt_dladvise_init(&advise) == 0) {
        if (lt_dladvise_ext(&advise) == 0 && lt_dladvise_local(&advise) == 0 &&
            lt_dladvise_resident(&advise) == 0)
            module = lt_dlopenadvise(shared_object, advise);
        lt_dladvise_destroy(&advise);
    }
#ifdef HAVE_DLFCN_H
    /* libltdl holds its own reference now (and RTLD_NODELETE keeps the object mapped anyway). */
    dlclose(bound);
#endif
    if (!module) {
        const char *why = lt_dlerror();
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "%s: cannot be loaded: %s; check its dependencies with ldd(1): ldd -r %s",
                    module_file, why ? why : "unknown libltdl error", shared_object);
        goto out;
    }
    handle = g_new0(rt_dl_handle, 1);
    handle->module = module;
    handle->filename = shared_object;
    shared_object = NULL;

out:
    g_mutex_unlock(&dl_lock);
    g_free(shared_object);
    g_free(module_file);
    return handle;
}

void *rt_dl_lookup(rt_dl_handle *handle, const char *symbol)
{
    g_return_val_if_fail(handle != NULL && symbol != NULL, NULL);
    g_mutex_lock(&dl_lock);
    void *address = lt_dlsym(handle->module, symbol);
    g_mutex_unlock(&dl_lock);
    return address;
}

const char *rt_dl_filename(const rt_dl_handle *handle)
{
    g_return_val_if_fail(handle != NULL, NULL);
    return handle->filename;
}

void rt_dl_close(rt_dl_handle *handle)
{
    if (!handle)
        return;
    g_mutex_lock(&dl_lock);
    /* The module is resident: this only drops libltdl's reference count (and libltdl notes,
     * harmlessly, that it refused to unload a resident module). */
    lt_dlclose(handle->module);
    g_mutex_unlock(&dl_lock);
    g_free(handle->filename);
    g_free(handle);
}

static int collect_name(const char *filename, void *data)
{
    g_ptr_array_add(data, g_strdup(filename));
    return 0; /* go on */
}

void rt_dl_foreach(const char *folder, rt_dl_file_fn fn, gpointer user_data)
{
    g_return_if_fail(folder != NULL && fn != NULL);
    /* lt_dlforeachfile takes a path list: a name with the separator in it cannot be searched. */
    if (!*folder || strchr(folder, LT_PATHSEP_CHAR))
        return;
    char *dir = g_strdup(folder);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') /* libltdl asserts on a trailing slash */
        dir[--len] = '\0';

    /* Collect first and call fn after unlocking, so that fn may open what it is given. libltdl
     * strips extensions and sorts and de-duplicates the names, which collapses .la/.so pairs. */
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    g_mutex_lock(&dl_lock);
    if (dl_init_locked(NULL))
        lt_dlforeachfile(dir, collect_name, names);
    g_mutex_unlock(&dl_lock);
    g_free(dir);

    for (guint i = 0; i < names->len; i++) {
        const char *base = g_ptr_array_index(names, i);
        char *la = g_strconcat(base, ".la", NULL);
        char *so = g_strconcat(base, LT_MODULE_EXT, NULL);
        if (is_regular_file(la))
            fn(la, user_data);
        else if (is_regular_file(so))
            fn(so, user_data);
        g_free(la);
        g_free(so);
    }
    g_ptr_array_unref(names);
}
