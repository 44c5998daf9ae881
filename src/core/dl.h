/* src/core/dl.h: the dynamic-loading layer under the plugin loader (internal).
 *
 * Four calls over libltdl, so that the registry above never sees lt_* or dlfcn. Modules opened
 * here are resident: they are never unmapped, so pointers into them (descriptors, vtables,
 * option tables) stay valid for the life of the process. All calls are thread-safe. */
#ifndef ROBOTRAIN_CORE_DL_H
#define ROBOTRAIN_CORE_DL_H

#include <glib.h>

G_BEGIN_DECLS

/* An open module. Opaque. */
typedef struct rt_dl_handle rt_dl_handle;

/* Opens the module in file: a libtool .la, a shared object, or either without its extension
 * (then .la and the platform's module extension are tried, in that order). Every symbol of the
 * module is bound now, so a module with an unresolved symbol fails here instead of aborting the
 * process on its first call; its symbols stay local to it; it stays resident.
 * Returns (transfer full) a handle to free with rt_dl_close(), or NULL with error
 * (RT_ERROR_NOT_FOUND, RT_ERROR_PLUGIN) naming file and the dynamic linker's own reason. */
rt_dl_handle *rt_dl_open(const char *file, GError **error);

/* The address of symbol in the module, or NULL when the module does not define it. */
void *rt_dl_lookup(rt_dl_handle *handle, const char *symbol);

/* The shared object that was loaded (for a .la, the file it names). Owned by the handle. */
const char *rt_dl_filename(const rt_dl_handle *handle);

/* Frees the handle. The module itself stays loaded (modules are resident). NULL is a no-op. */
void rt_dl_close(rt_dl_handle *handle);

/* Calls fn once for each module file in folder, in name order: a .la and a shared object with
 * the same base name count once, as the .la (which is what rt_dl_open would load). Other files,
 * and a folder that does not exist, are silently skipped. file is valid during the call only. */
typedef void (*rt_dl_file_fn)(const char *file, gpointer user_data);
void rt_dl_foreach(const char *folder, rt_dl_file_fn fn, gpointer user_data);

G_END_DECLS

#endif
