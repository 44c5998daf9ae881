/* LeRobot datasets on the Hub: the version tag a codebase version maps to, and the download
 * into LeRobot's cache (or its --dataset.root). */
#include "config.h"

#include <string.h>

#include "net/hub-private.h"

#define MAX_VERSION_PARTS 8

typedef struct version {
    int n;
    guint64 part[MAX_VERSION_PARTS];
} version;

/* "v3.0", "3.0.1", "V2": an optional v, then dot-separated numbers (the release part of PEP
 * 440, which is what dataset tags use). */
static gboolean parse_version(const char *s, version *v)
{
    memset(v, 0, sizeof *v);
    if (*s == 'v' || *s == 'V')
        s++;
    while (TRUE) {
        if (!g_ascii_isdigit(*s) || v->n == MAX_VERSION_PARTS)
            return FALSE;
        char *end = NULL;
        v->part[v->n++] = g_ascii_strtoull(s, &end, 10);
        s = end;
        if (*s == '\0')
            return TRUE;
        if (*s != '.')
            return FALSE;
        s++;
    }
}

/* Compares releases as PEP 440 does (missing parts are 0: 3.0 == 3.0.0). */
static int compare_versions(const version *a, const version *b)
{
    int n = MAX(a->n, b->n);
    for (int i = 0; i < n; i++) {
        guint64 x = i < a->n ? a->part[i] : 0, y = i < b->n ? b->part[i] : 0;
        if (x != y)
            return x < y ? -1 : 1;
    }
    return 0;
}

static guint64 part(const version *v, int i)
{
    return i < v->n ? v->part[i] : 0;
}

/* The best name for one wanted version among names, or NULL. */
static const char *pick_one(const char *wanted, GPtrArray *names)
{
    version target;
    for (guint i = 0; i < names->len; i++)
        if (strcmp(names->pdata[i], wanted) == 0)
            return names->pdata[i];
    if (!parse_version(wanted, &target))
        return NULL;
    const char *best = NULL;
    version best_v = {0};
    for (guint i = 0; i < names->len; i++) {
        version v;
        if (!parse_version(names->pdata[i], &v))
            continue;
        if (compare_versions(&v, &target) == 0)
            return names->pdata[i];
        if (part(&v, 0) == part(&target, 0) && part(&v, 1) <= part(&target, 1) &&
            (!best || compare_versions(&v, &best_v) > 0)) {
            best = names->pdata[i];
            best_v = v;
        }
    }
    return best;
}

/* The tags and branches recorded under refs/ of a cached repository (top level only: version
 * tags have no '/'). */
static GPtrArray *cached_ref_names(const char *storage)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    char *refs = g_build_filename(storage, "refs", NULL);
    GDir *dir = g_dir_open(refs, 0, NULL);
    const char *name;
    while (dir && (name = g_dir_read_name(dir)) != NULL) {
        char *file = g_build_filename(refs, name, NULL);
        if (g_file_test(file, G_FILE_TEST_IS_REGULAR))
            g_ptr_array_add(names, g_strdup(name));
        g_free(file);
    }
    if (dir)
        g_dir_close(dir);
    g_free(refs);
    return names;
}

char *rt_hub_dataset_pick_version(rt_hub *hub, const char *repo_id, const char *const *wanted,
                                  const char *cache_dir, GError **error)
{
    static const char *const default_wanted[] = {RT_HUB_LEROBOT_CODEBASE_VERSION, "v2.1", NULL};
    if (!wanted || !wanted[0])
        wanted = default_wanted;
    if (!rt_hub_check_repo_id(repo_id, error))
        return NULL;
    char *lerobot_cache = rt_hub_config_lerobot_cache(hub->config);
    char *storage = hub_storage_folder(cache_dir ? cache_dir : lerobot_cache, RT_HUB_DATASET, repo_id);
    GPtrArray *names = NULL;
    const char *where = "on the Hub";
    char *result = NULL;

    if (!hub->config->offline) {
        GError *local = NULL;
        hub_failure how = HUB_FAIL_FINAL;
        rt_hub_refs *refs = hub_list_refs(hub, RT_HUB_DATASET, repo_id, 0, &how, &local);
        if (!refs && how != HUB_FAIL_FINAL) {
            /* the Hub did not answer: the versions cached before, else try again */
            names = cached_ref_names(storage);
            if (names->len > 0) {
                g_clear_error(&local);
                where = "in the cache";
            } else if (how == HUB_FAIL_TRANSIENT) {
                g_clear_error(&local);
                refs = hub_list_refs(hub, RT_HUB_DATASET, repo_id, hub->config->max_retries, NULL, &local);
            }
        }
        if (refs) {
            g_clear_pointer(&names, g_ptr_array_unref);
            names = g_ptr_array_new_with_free_func(g_free);
            for (guint i = 0; i < refs->branches->len; i++)
                g_ptr_array_add(names, g_strdup(((rt_hub_ref *)refs->branches->pdata[i])->name));
            for (guint i = 0; i < refs->tags->len; i++)
                g_ptr_array_add(names, g_strdup(((rt_hub_ref *)refs->tags->pdata[i])->name));
            rt_hub_refs_free(refs);
        } else if (local) {
            g_propagate_error(error, local);
            goto out;
        }
    } else {
        names = cached_ref_names(storage);
        where = "in the cache";
        if (names->len == 0) {
            hub_target t = {RT_HUB_DATASET, repo_id, wanted[0], NULL};
            hub_offline_error(error, hub, &t, storage, "HF_HUB_OFFLINE is set", 0);
            goto out;
        }
    }
    for (const char *const *w = wanted; *w && !result; w++) {
        const char *found = pick_one(*w, names);
        if (found)
            result = g_strdup(found);
    }
    if (!result) {
        GString *have = g_string_new(NULL);
        for (guint i = 0; i < names->len; i++) {
            version v;
            if (parse_version(names->pdata[i], &v))
                g_string_append_printf(have, "%s%s", have->len ? ", " : "", (const char *)names->pdata[i]);
        }
        char *want = g_strjoinv(", ", (char **)wanted);
        if (have->len == 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "dataset repository '%s' has no version tag (such as %s) %s: it was not "
                        "written by LeRobot, or pass --dataset.revision=<branch, tag or commit>",
                        repo_id, wanted[0], where);
        } else {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "dataset repository '%s' has the versions %s %s, none of which robotrain "
                        "reads (%s, or an older minor of the same major): convert the dataset "
                        "with LeRobot, or pass --dataset.revision=<branch, tag or commit>",
                        repo_id, have->str, where, want);
        }
        g_free(want);
        g_string_free(have, TRUE);
    }
out:
    if (names)
        g_ptr_array_unref(names);
    g_free(storage);
    g_free(lerobot_cache);
    return result;
}

char *rt_hub_dataset_download(rt_hub *hub, const char *repo_id, const char *revision,
                              const char *const *allow_patterns, const char *root, char **revision_out,
                              GError **error)
{
    if (revision_out)
        *revision_out = NULL;
    char *lerobot_cache = rt_hub_config_lerobot_cache(hub->config);
    /* LeRobot passes its own cache_dir only without root; with root huggingface_hub keeps its
     * refs in the generic cache. */
    const char *cache_dir = root ? hub->config->hub_cache : lerobot_cache;
    char *picked = NULL;
    char *folder = NULL;
    if (!revision) {
        picked = rt_hub_dataset_pick_version(hub, repo_id, NULL, cache_dir, error);
        if (!picked)
            goto out;
        revision = picked;
    }
    rt_hub_snapshot_options o = {
        .type = RT_HUB_DATASET,
        .repo_id = repo_id,
        .revision = revision,
        .allow_patterns = allow_patterns,
        .cache_dir = cache_dir,
        .local_dir = root,
    };
    folder = rt_hub_snapshot_download(hub, &o, error);
    if (folder && revision_out)
        *revision_out = g_strdup(revision);
out:
    g_free(picked);
    g_free(lerobot_cache);
    return folder;
}
