/* The GPUs of this machine, as the CUDA backend module counts them.
 *
 * The launcher itself links no CUDA library: it asks the module that the workers will use, so
 * the answer is CUDA's own (driver, containers, WSL) and a robotrain built without CUDA says
 * that it has none. Counting initialises the CUDA driver in the launcher but creates no context,
 * so no GPU memory is taken. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <robotrain/backend.h>
#include <robotrain/error.h>
#include <robotrain/plugin-loader.h>

#include "dist/launcher.h"

/* Whether entry is a device number below n, or a GPU-/MIG- identifier (which only CUDA can
 * check: it is counted). */
static gboolean names_a_gpu(const char *entry, int n)
{
    if (g_str_has_prefix(entry, "GPU-") || g_str_has_prefix(entry, "MIG-"))
        return entry[4] != '\0';
    if (!g_ascii_isdigit(entry[0]))
        return FALSE;
    char *end = NULL;
    guint64 index = g_ascii_strtoull(entry, &end, 10);
    return *end == '\0' && index < (guint64)n;
}

/* The GPUs CUDA_VISIBLE_DEVICES leaves of n: the entries before the first invalid one. */
static int count_visible(const char *cvd, int n)
{
    if (!cvd)
        return n;
    g_auto(GStrv) entries = g_strsplit(cvd, ",", -1);
    int visible = 0;
    for (; entries[visible]; visible++) {
        g_strstrip(entries[visible]);
        if (!names_a_gpu(entries[visible], n))
            break;
    }
    return MIN(visible, n);
}

void rt_launcher_probe_gpus(rt_launch_gpus *gpus, gpointer data)
{
    g_return_if_fail(gpus != NULL);
    const char *const *keyfile_folders = data; /* [core] plugin_path, NULL-terminated, or NULL */
    gpus->machine = gpus->visible = 0;
    g_clear_pointer(&gpus->why_none, g_free);

    GError *error = NULL;
    g_auto(GStrv) folders = rt_plugin_search_path(NULL, keyfile_folders, &error);
    rt_plugin_registry *registry =
        folders ? rt_plugin_registry_new((const char *const *)folders, &error) : NULL;
    const rt_plugin_module *module =
        registry ? rt_plugin_registry_find(registry, RT_PLUGIN_BACKEND, "cuda", &error) : NULL;
    if (!module) {
        gpus->why_none = g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND)
                             ? g_strdup("this robotrain has no CUDA backend (module backend-cuda not found)")
                             : g_strdup_printf("the CUDA backend cannot be used: %s", error->message);
        g_clear_error(&error);
        rt_plugin_registry_free(registry);
        return;
    }
    const rt_backend_i *backend = module->desc->vtable;
    rt_plugin_registry_free(registry); /* the module stays loaded */

    /* gpu_ids number every GPU of the machine: count them without CUDA_VISIBLE_DEVICES. CUDA
     * reads the variable once, when it initialises, which is this call. */
    char *cvd = g_strdup(g_getenv("CUDA_VISIBLE_DEVICES"));
    if (cvd)
        g_unsetenv("CUDA_VISIBLE_DEVICES");
    int n = backend->device_count(&error);
    if (cvd)
        g_setenv("CUDA_VISIBLE_DEVICES", cvd, TRUE);
    if (n < 0) {
        gpus->why_none = g_strdup_printf("CUDA fails: %s", error->message);
        g_clear_error(&error);
        n = 0;
    } else if (n == 0) {
        gpus->why_none = g_strdup("CUDA reports no device (no NVIDIA GPU, or no driver)");
    }
    gpus->machine = n;
    gpus->visible = count_visible(cvd, n);
    g_free(cvd);
}
