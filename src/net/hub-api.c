/* The Hub's JSON API: URLs, names, revisions -> commits, refs, the paged tree listing. */
#include "config.h"

#include <string.h>

#include "net/hub-json.h"
#include "net/hub-private.h"

/* A listing longer than this many pages is taken as a server loop. */
#define MAX_TREE_PAGES 100000

const char *hub_url_prefix(rt_hub_repo_type type)
{
    switch (type) {
    case RT_HUB_DATASET:
        return "datasets/";
    case RT_HUB_SPACE:
        return "spaces/";
    case RT_HUB_MODEL:
    default:
        return "";
    }
}

char *hub_quote_revision(const char *revision)
{
    return g_uri_escape_string(revision, NULL, FALSE);
}

char *hub_quote_path(const char *path)
{
    return g_uri_escape_string(path, "/", FALSE);
}

static gboolean has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return TRUE;
    return FALSE;
}

/* Relative, no empty / "." / ".." component, no backslash: a path that stays inside a folder. */
static const char *bad_relative(const char *s)
{
    if (!s || !*s)
        return "it is empty";
    if (s[0] == '/')
        return "it starts with '/'";
    if (has_control(s))
        return "it contains control characters";
    if (strchr(s, '\\'))
        return "it contains '\\'";
    const char *why = NULL;
    char **parts = g_strsplit(s, "/", -1);
    for (char **p = parts; *p && !why; p++) {
        if (!**p)
            why = "it has an empty component (\"//\" or a trailing '/')";
        else if (strcmp(*p, ".") == 0 || strcmp(*p, "..") == 0)
            why = "it has a '.' or '..' component";
    }
    g_strfreev(parts);
    return why;
}

gboolean hub_check_revision(const char *revision, GError **error)
{
    const char *why = bad_relative(revision);
    if (why) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "'%s' is not a revision (%s): give a branch, a tag or a commit sha",
                    revision ? revision : "", why);
        return FALSE;
    }
    return TRUE;
}

gboolean hub_check_repo_path(const char *path, GError **error)
{
    const char *why = bad_relative(path);
    if (why) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "'%s' is not a file path inside a repository (%s)",
                    path ? path : "", why);
        return FALSE;
    }
    return TRUE;
}

char *hub_link_next(const char *link)
{
    if (!link)
        return NULL;
    const char *p = link;
    while ((p = strchr(p, '<')) != NULL) {
        const char *end = strchr(p, '>');
        if (!end)
            return NULL;
        const char *params = end + 1;
        const char *stop = strchr(params, '<');
        size_t plen = stop ? (size_t)(stop - params) : strlen(params);
        char *par = g_strndup(params, plen);
        char *lower = g_ascii_strdown(par, -1);
        gboolean next = strstr(lower, "rel=\"next\"") != NULL || strstr(lower, "rel=next") != NULL;
        g_free(lower);
        g_free(par);
        if (next)
            return g_strndup(p + 1, (size_t)(end - p - 1));
        p = end + 1;
    }
    return NULL;
}

JsonNode *hub_api_json(rt_hub *hub, const char *method, const char *url, const char *body, size_t body_len,
                       const char *content_type, gboolean lfs_json, int max_retries, const hub_target *target,
                       long allow_status, long *status_out, char **link_next, GError **error)
{
    hub_http_request req;
    hub_http_response resp;
    int attempts = 0;

    if (link_next)
        *link_next = NULL;
    hub_http_request_init(&req, method, url);
    req.auth = TRUE;
    req.follow = TRUE;
    req.body = body;
    req.body_len = body_len;
    req.content_type = content_type;
    req.lfs_json = lfs_json;
    hub_http_response_init(&resp);
    if (!hub_http_perform(hub, &req, &resp, max_retries, &attempts, error)) {
        GError *cause = error ? *error : NULL;
        if (error) {
            *error = NULL;
            hub_transport_error(error, cause, hub, target, attempts);
        }
        hub_http_response_clear(&resp);
        return NULL;
    }
    if (status_out)
        *status_out = resp.status;
    gboolean ok = resp.status >= 200 && resp.status < 300;
    if (!ok && !(allow_status && resp.status == allow_status)) {
        hub_status_error(error, hub, &resp, method, url, target, attempts);
        hub_http_response_clear(&resp);
        return NULL;
    }
    JsonNode *root = NULL;
    if (resp.body->len > 0) {
        JsonParser *parser = json_parser_new();
        GError *local = NULL;
        if (json_parser_load_from_data(parser, (const char *)resp.body->data, (gssize)resp.body->len,
                                       &local)) {
            root = json_parser_steal_root(parser);
        } else if (ok) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "%s %s: the answer is not JSON (%s): is HF_ENDPOINT (%s) a Hugging Face "
                        "Hub?",
                        method, url, local->message, hub->config->endpoint);
            g_error_free(local);
            g_object_unref(parser);
            hub_http_response_clear(&resp);
            return NULL;
        }
        g_clear_error(&local);
        g_object_unref(parser);
    }
    if (ok && link_next)
        *link_next = hub_link_next(hub_http_header(&resp, "link"));
    hub_http_response_clear(&resp);
    if (ok && !root)
        root = json_node_init_object(json_node_alloc(), json_object_new());
    return root;
}

static char *api_url(const rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *tail)
{
    return g_strdup_printf("%s/api/%ss/%s%s", hub->config->endpoint, rt_hub_repo_type_name(type), repo_id,
                           tail ? tail : "");
}

char *hub_fetch_commit(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                       int max_retries, hub_failure *failure, GError **error)
{
    char *qrev = hub_quote_revision(revision);
    char *tail = g_strconcat("/revision/", qrev, NULL);
    char *url = api_url(hub, type, repo_id, tail);
    hub_target target = {type, repo_id, revision, NULL};
    long status = 0;
    GError *local = NULL;
    char *sha = NULL;

    JsonNode *root =
        hub_api_json(hub, "GET", url, NULL, 0, NULL, FALSE, max_retries, &target, 0, &status, NULL, &local);
    hub_failure how = HUB_FAIL_FINAL;
    if (root) {
        const char *s = hub_json_str(root, "sha");
        if (rt_hub_is_commit_sha(s)) {
            sha = g_strdup(s);
        } else {
            how = HUB_FAIL_TRY_CACHE;
            g_set_error(&local, RT_ERROR, RT_ERROR_NETWORK,
                        "GET %s: the answer has no commit sha (\"sha\"): is HF_ENDPOINT (%s) a "
                        "Hugging Face Hub?",
                        url, hub->config->endpoint);
        }
        json_node_unref(root);
    } else if (status == 0 || hub_http_status_retryable(status)) {
        how = HUB_FAIL_TRANSIENT;
    } else if (status != 404) {
        how = HUB_FAIL_TRY_CACHE; /* a refused token: the cache may still know the revision */
    }
    if (failure)
        *failure = how;
    if (local)
        g_propagate_error(error, local);
    g_free(url);
    g_free(tail);
    g_free(qrev);
    return sha;
}

char *rt_hub_resolve_revision(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                              const char *cache_dir, GError **error)
{
    if (!revision)
        revision = "main";
    if (!rt_hub_check_repo_id(repo_id, error) || !hub_check_revision(revision, error))
        return NULL;
    if (rt_hub_is_commit_sha(revision))
        return g_strdup(revision);
    char *storage = hub_storage_folder(cache_dir ? cache_dir : hub->config->hub_cache, type, repo_id);
    hub_target target = {type, repo_id, revision, NULL};
    char *sha = NULL;
    if (hub->config->offline) {
        sha = hub_read_ref(storage, revision);
        if (!sha)
            hub_offline_error(error, hub, &target, storage, "HF_HUB_OFFLINE is set", 0);
        g_free(storage);
        return sha;
    }
    hub_failure how = HUB_FAIL_FINAL;
    GError *first = NULL;
    sha = hub_fetch_commit(hub, type, repo_id, revision, 0, &how, &first);
    if (!sha && how != HUB_FAIL_FINAL)
        sha = hub_read_ref(storage, revision);
    if (!sha && how == HUB_FAIL_TRANSIENT) {
        g_clear_error(&first);
        sha = hub_fetch_commit(hub, type, repo_id, revision, hub->config->max_retries, NULL, &first);
    }
    if (sha)
        g_clear_error(&first);
    else
        g_propagate_error(error, first);
    g_free(storage);
    return sha;
}

static void ref_free(gpointer p)
{
    rt_hub_ref *r = p;
    g_free(r->name);
    g_free(r->ref);
    g_free(r->target_commit);
    g_free(r);
}

void rt_hub_refs_free(rt_hub_refs *refs)
{
    if (!refs)
        return;
    g_ptr_array_unref(refs->branches);
    g_ptr_array_unref(refs->tags);
    g_free(refs);
}

static void collect_refs(JsonNode *root, const char *member, GPtrArray *out)
{
    JsonArray *a = hub_json_array(root, member);
    guint n = a ? json_array_get_length(a) : 0;
    for (guint i = 0; i < n; i++) {
        JsonNode *e = json_array_get_element(a, i);
        const char *name = hub_json_str(e, "name");
        if (!name)
            continue;
        rt_hub_ref *r = g_new0(rt_hub_ref, 1);
        r->name = g_strdup(name);
        r->ref = g_strdup(hub_json_str(e, "ref"));
        r->target_commit = g_strdup(hub_json_str(e, "targetCommit"));
        g_ptr_array_add(out, r);
    }
}

rt_hub_refs *hub_list_refs(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, int max_retries,
                           hub_failure *failure, GError **error)
{
    hub_target target = {type, repo_id, NULL, NULL};
    long status = 0;
    char *url = api_url(hub, type, repo_id, "/refs");
    JsonNode *root =
        hub_api_json(hub, "GET", url, NULL, 0, NULL, FALSE, max_retries, &target, 0, &status, NULL, error);
    g_free(url);
    if (failure)
        *failure = root                                                 ? HUB_FAIL_FINAL
                   : (status == 0 || hub_http_status_retryable(status)) ? HUB_FAIL_TRANSIENT
                   : status != 404                                      ? HUB_FAIL_TRY_CACHE
                                                                        : HUB_FAIL_FINAL;
    if (!root)
        return NULL;
    rt_hub_refs *refs = g_new0(rt_hub_refs, 1);
    refs->branches = g_ptr_array_new_with_free_func(ref_free);
    refs->tags = g_ptr_array_new_with_free_func(ref_free);
    collect_refs(root, "branches", refs->branches);
    collect_refs(root, "tags", refs->tags);
    json_node_unref(root);
    return refs;
}

rt_hub_refs *rt_hub_list_refs(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, GError **error)
{
    if (!rt_hub_check_repo_id(repo_id, error))
        return NULL;
    if (hub->config->offline) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "cannot list the branches and tags of %s%s: HF_HUB_OFFLINE is set", hub_url_prefix(type),
                    repo_id);
        return NULL;
    }
    return hub_list_refs(hub, type, repo_id, hub->config->max_retries, NULL, error);
}

void rt_hub_entry_free(rt_hub_entry *entry)
{
    if (!entry)
        return;
    g_free(entry->path);
    g_free(entry->blob_id);
    g_free(entry->lfs_sha256);
    g_free(entry->xet_hash);
    g_free(entry);
}

/* A next-page link must stay on the endpoint (it receives the token). */
static char *next_url(const rt_hub *hub, const char *link, GError **error)
{
    const char *endpoint = hub->config->endpoint;
    if (link[0] == '/')
        return g_strconcat(endpoint, link, NULL);
    size_t n = strlen(endpoint);
    if (strncmp(link, endpoint, n) == 0 && link[n] == '/')
        return g_strdup(link);
    g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                "the Hub's next-page link %s leaves the endpoint %s: refusing to send the token "
                "there",
                link, endpoint);
    return NULL;
}

GPtrArray *rt_hub_list_files(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                             GError **error)
{
    if (!revision)
        revision = "main";
    if (!rt_hub_check_repo_id(repo_id, error) || !hub_check_revision(revision, error))
        return NULL;
    hub_target target = {type, repo_id, revision, NULL};
    if (hub->config->offline) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "cannot list the files of %s%s at '%s': HF_HUB_OFFLINE is set", hub_url_prefix(type),
                    repo_id, revision);
        return NULL;
    }
    char *qrev = hub_quote_revision(revision);
    char *tail = g_strconcat("/tree/", qrev, "?recursive=true&expand=false", NULL);
    char *url = api_url(hub, type, repo_id, tail);
    g_free(tail);
    g_free(qrev);

    GPtrArray *entries = g_ptr_array_new_with_free_func((GDestroyNotify)rt_hub_entry_free);
    GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int page = 0; url; page++) {
        if (page >= MAX_TREE_PAGES || g_hash_table_contains(seen, url)) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "the file listing of %s%s loops (page link %s seen twice)", hub_url_prefix(type),
                        repo_id, url);
            goto fail;
        }
        g_hash_table_add(seen, g_strdup(url));
        char *link = NULL;
        JsonNode *root = hub_api_json(hub, "GET", url, NULL, 0, NULL, FALSE, hub->config->max_retries,
                                      &target, 0, NULL, &link, error);
        if (!root)
            goto fail;
        if (!JSON_NODE_HOLDS_ARRAY(root)) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "GET %s: the file listing is not a JSON array",
                        url);
            json_node_unref(root);
            g_free(link);
            goto fail;
        }
        JsonArray *a = json_node_get_array(root);
        for (guint i = 0; i < json_array_get_length(a); i++) {
            JsonNode *e = json_array_get_element(a, i);
            const char *kind = hub_json_str(e, "type");
            const char *path = hub_json_str(e, "path");
            if (!kind || strcmp(kind, "file") != 0)
                continue;
            guint64 size = 0;
            if (!path || !hub_json_uint(e, "size", &size)) {
                g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "GET %s: a file entry lacks its path or size",
                            url);
                json_node_unref(root);
                g_free(link);
                goto fail;
            }
            rt_hub_entry *entry = g_new0(rt_hub_entry, 1);
            entry->path = g_strdup(path);
            entry->size = size;
            entry->blob_id = g_strdup(hub_json_str(e, "oid"));
            JsonNode *lfs = hub_json_member(e, "lfs");
            if (lfs && JSON_NODE_HOLDS_OBJECT(lfs))
                entry->lfs_sha256 = g_strdup(hub_json_str(lfs, "oid"));
            entry->xet_hash = g_strdup(hub_json_str(e, "xetHash"));
            g_ptr_array_add(entries, entry);
        }
        json_node_unref(root);
        g_free(url);
        url = NULL;
        if (link) {
            url = next_url(hub, link, error);
            g_free(link);
            if (!url)
                goto fail;
        }
    }
    g_hash_table_unref(seen);
    return entries;

fail:
    g_free(url);
    g_hash_table_unref(seen);
    g_ptr_array_unref(entries);
    return NULL;
}
