/* snapshot_download: one commit, its listing filtered by patterns, every selected file
 * downloaded (or found in the cache), offline answers from the cache. */
#include "config.h"

#include <string.h>

#include "net/hub-private.h"

/* ---- patterns (Python's fnmatch.fnmatchcase: '*' matches '/' too) ---------------------- */

/* Matches a [...] set at p against c; *end receives the character after ']'. Returns -1 when
 * the set is not closed (then '[' is literal). */
static int match_set(const char *p, char c, const char **end)
{
    const char *q = p + 1;
    gboolean negate = FALSE;
    if (*q == '!') {
        negate = TRUE;
        q++;
    }
    const char *start = q;
    gboolean hit = FALSE;
    while (*q && (*q != ']' || q == start)) {
        char lo = *q;
        if (q[1] == '-' && q[2] && q[2] != ']') {
            char hi = q[2];
            if (lo <= c && c <= hi)
                hit = TRUE;
            q += 3;
        } else {
            if (lo == c)
                hit = TRUE;
            q++;
        }
    }
    if (*q != ']')
        return -1;
    *end = q + 1;
    return hit != negate;
}

static gboolean glob_match(const char *p, const char *s)
{
    /* Iterative '*' backtracking: at most O(len(p) * len(s)). */
    const char *star_p = NULL, *star_s = NULL;
    while (*s) {
        if (*p == '*') {
            while (*p == '*')
                p++;
            if (!*p)
                return TRUE;
            star_p = p;
            star_s = s;
            continue;
        }
        if (*p == '?') {
            p++;
            s++;
            continue;
        }
        if (*p == '[') {
            const char *end = NULL;
            int m = match_set(p, *s, &end);
            if (m == 1) {
                p = end;
                s++;
                continue;
            }
            if (m == -1 && *s == '[') {
                p++;
                s++;
                continue;
            }
        } else if (*p && *p == *s) {
            p++;
            s++;
            continue;
        }
        if (!star_p)
            return FALSE;
        p = star_p;
        s = ++star_s;
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

/* A pattern ending in '/' means the folder's content (huggingface_hub appends '*'). */
static gboolean pattern_match(const char *pattern, const char *path)
{
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '/') {
        char *full = g_strconcat(pattern, "*", NULL);
        gboolean m = glob_match(full, path);
        g_free(full);
        return m;
    }
    return glob_match(pattern, path);
}

gboolean rt_hub_match_patterns(const char *path, const char *const *allow, const char *const *ignore)
{
    if (allow) {
        gboolean any = FALSE;
        for (const char *const *a = allow; *a && !any; a++)
            any = pattern_match(*a, path);
        if (!any)
            return FALSE;
    }
    for (const char *const *i = ignore; i && *i; i++)
        if (pattern_match(*i, path))
            return FALSE;
    return TRUE;
}

static gboolean is_literal(const char *pattern)
{
    size_t n = strlen(pattern);
    return n > 0 && pattern[n - 1] != '/' && !strpbrk(pattern, "*?[");
}

/* ---- the cached snapshot --------------------------------------------------------------- */

/* Files the patterns select that folder lacks: from the cached listing when there is one, and
 * the literal names among the allow patterns. Returns (transfer full) a string array. */
static GPtrArray *missing_files(const char *folder, const GPtrArray *listing,
                                const rt_hub_snapshot_options *o)
{
    GPtrArray *missing = g_ptr_array_new_with_free_func(g_free);
    GHashTable *asked = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; listing && i < listing->len; i++) {
        const rt_hub_entry *e = listing->pdata[i];
        if (rt_hub_match_patterns(e->path, o->allow_patterns, o->ignore_patterns))
            g_hash_table_add(asked, e->path);
    }
    for (const char *const *a = o->allow_patterns; a && *a; a++)
        if (is_literal(*a) && rt_hub_match_patterns(*a, NULL, o->ignore_patterns))
            g_hash_table_add(asked, (gpointer)*a);
    GList *paths = g_list_sort(g_hash_table_get_keys(asked), (GCompareFunc)strcmp);
    for (GList *l = paths; l; l = l->next) {
        char *file = g_build_filename(folder, (const char *)l->data, NULL);
        if (!g_file_test(file, G_FILE_TEST_IS_REGULAR))
            g_ptr_array_add(missing, g_strdup(l->data));
        g_free(file);
    }
    g_list_free(paths);
    g_hash_table_unref(asked);
    return missing;
}

typedef enum { CACHE_ABSENT, CACHE_PARTIAL, CACHE_COMPLETE } cache_state;

/* Looks at the cached snapshot of commit. *folder_out: the folder when COMPLETE; when PARTIAL,
 * *missing_out is the first missing file and *n_more the number of others. */
static cache_state look_in_cache(const char *storage, const char *tree_folder, const char *commit,
                                 const rt_hub_snapshot_options *o, char **folder_out, char **missing_out,
                                 guint *n_more)
{
    *folder_out = NULL;
    *missing_out = NULL;
    *n_more = 0;
    if (!commit && o->local_dir) {
        /* a local folder nobody recorded a revision for: used as it is (huggingface_hub does
         * the same), as long as the files asked for by name are there */
        GDir *d = g_dir_open(o->local_dir, 0, NULL);
        gboolean filled = d && g_dir_read_name(d) != NULL;
        if (d)
            g_dir_close(d);
        if (!filled)
            return CACHE_ABSENT;
        GPtrArray *missing = missing_files(o->local_dir, NULL, o);
        cache_state state = missing->len ? CACHE_PARTIAL : CACHE_COMPLETE;
        if (missing->len) {
            *missing_out = g_strdup(missing->pdata[0]);
            *n_more = missing->len - 1;
        } else {
            *folder_out = g_strdup(o->local_dir);
        }
        g_ptr_array_unref(missing);
        return state;
    }
    if (!commit)
        return CACHE_ABSENT;
    char *folder =
        o->local_dir ? g_strdup(o->local_dir) : g_build_filename(storage, "snapshots", commit, NULL);
    if (!g_file_test(folder, G_FILE_TEST_IS_DIR)) {
        g_free(folder);
        return CACHE_ABSENT;
    }
    GPtrArray *listing = hub_read_tree_cache(tree_folder, commit);
    GPtrArray *missing = missing_files(folder, listing, o);
    cache_state state = CACHE_COMPLETE;
    if (missing->len > 0) {
        state = CACHE_PARTIAL;
        *missing_out = g_strdup(missing->pdata[0]);
        *n_more = missing->len - 1;
        g_free(folder);
    } else {
        *folder_out = folder;
    }
    g_ptr_array_unref(missing);
    if (listing)
        g_ptr_array_unref(listing);
    return state;
}

/* ---- snapshot_download ------------------------------------------------------------------ */

static char *download_listed(rt_hub *hub, const rt_hub_snapshot_options *o, const char *revision,
                             const char *commit, const char *cache_dir, const char *storage,
                             const char *tree_folder, GError **error)
{
    GPtrArray *listing = hub_read_tree_cache(tree_folder, commit);
    if (!listing) {
        listing = rt_hub_list_files(hub, o->type, o->repo_id, commit, error);
        if (!listing)
            return NULL;
        GError *ignored = NULL;
        if (!hub_write_tree_cache(tree_folder, commit, listing, &ignored)) {
            g_debug("not caching the listing: %s", ignored->message);
            g_error_free(ignored);
        }
    }
    /* A file asked for by name that the commit lacks is a mistake worth stopping for. */
    for (const char *const *a = o->allow_patterns; a && *a; a++) {
        if (!is_literal(*a))
            continue;
        gboolean found = FALSE;
        for (guint i = 0; i < listing->len && !found; i++)
            found = strcmp(((rt_hub_entry *)listing->pdata[i])->path, *a) == 0;
        if (!found) {
            char *what = hub_describe_repo(o->type, o->repo_id);
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "file '%s' does not exist in %s at revision '%s' (commit %s): a "
                        "misspelled path, or the wrong revision?",
                        *a, what, revision, commit);
            g_free(what);
            g_ptr_array_unref(listing);
            return NULL;
        }
    }
    GPtrArray *wanted = g_ptr_array_new();
    for (guint i = 0; i < listing->len; i++) {
        rt_hub_entry *e = listing->pdata[i];
        if (rt_hub_match_patterns(e->path, o->allow_patterns, o->ignore_patterns))
            g_ptr_array_add(wanted, e);
    }
    GError *ignored = NULL;
    if (!hub_write_ref(storage, revision, commit, &ignored)) {
        g_debug("not recording refs/%s: %s", revision, ignored->message);
        g_error_free(ignored);
    }
    gboolean ok = TRUE;
    hub->progress_repo = o->repo_id;
    hub->progress_count = wanted->len;
    for (guint i = 0; i < wanted->len && ok; i++) {
        rt_hub_entry *e = wanted->pdata[i];
        GError *local = NULL;
        if (!hub_check_repo_path(e->path, &local)) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "the Hub lists a file that cannot be stored safely: %s", local->message);
            g_error_free(local);
            ok = FALSE;
            break;
        }
        hub->progress_index = i + 1;
        char *file = hub_fetch_file(hub, o->type, o->repo_id, revision, commit, e->path, cache_dir,
                                    o->local_dir, error);
        ok = file != NULL;
        g_free(file);
    }
    hub->progress_repo = NULL;
    hub->progress_index = hub->progress_count = 0;
    g_ptr_array_unref(wanted);
    g_ptr_array_unref(listing);
    if (!ok)
        return NULL;
    return o->local_dir ? g_strdup(o->local_dir) : g_build_filename(storage, "snapshots", commit, NULL);
}

char *rt_hub_snapshot_download(rt_hub *hub, const rt_hub_snapshot_options *o, GError **error)
{
    g_return_val_if_fail(hub != NULL && o != NULL, NULL);
    const char *revision = o->revision ? o->revision : "main";
    if (!rt_hub_check_repo_id(o->repo_id, error) || !hub_check_revision(revision, error))
        return NULL;
    const char *cache_dir = o->cache_dir ? o->cache_dir : hub->config->hub_cache;
    char *storage = hub_storage_folder(cache_dir, o->type, o->repo_id);
    char *tree_folder =
        o->local_dir ? g_build_filename(o->local_dir, ".cache", "huggingface", NULL) : g_strdup(storage);
    hub_target t = {o->type, o->repo_id, revision, NULL};
    char *commit = rt_hub_is_commit_sha(revision) ? g_strdup(revision) : NULL;
    char *result = NULL, *folder = NULL, *missing = NULL;
    guint n_more = 0;
    GError *api_error = NULL;
    hub_failure how = HUB_FAIL_FINAL;

    if (!commit && !hub->config->offline) {
        commit = hub_fetch_commit(hub, o->type, o->repo_id, revision, 0, &how, &api_error);
        if (!commit && how == HUB_FAIL_FINAL) {
            g_propagate_error(error, api_error);
            goto out;
        }
    }
    if (!commit || hub->config->offline) {
        /* Offline, or the Hub did not answer: what does the cache have? */
        if (!commit)
            commit = hub_read_ref(storage, revision);
        cache_state state = look_in_cache(storage, tree_folder, commit, o, &folder, &missing, &n_more);
        if (state == CACHE_COMPLETE) {
            result = g_steal_pointer(&folder);
            g_clear_error(&api_error);
            goto out;
        }
        if (hub->config->offline) {
            t.path = missing;
            hub_offline_error(error, hub, &t, storage, "HF_HUB_OFFLINE is set", n_more);
            goto out;
        }
        if (how != HUB_FAIL_TRANSIENT) {
            g_propagate_error(error, api_error); /* a refused token: say so */
            api_error = NULL;
            goto out;
        }
        /* Not cached and the Hub was unreachable: try again, with the retries. */
        g_clear_error(&api_error);
        g_clear_pointer(&commit, g_free);
        commit = hub_fetch_commit(hub, o->type, o->repo_id, revision, hub->config->max_retries, NULL, error);
        if (!commit)
            goto out;
    }
    result = download_listed(hub, o, revision, commit, cache_dir, storage, tree_folder, error);
out:
    g_free(missing);
    g_free(folder);
    g_free(commit);
    g_free(tree_folder);
    g_free(storage);
    return result;
}
