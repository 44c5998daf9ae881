/* Pushing to the Hub as huggingface_hub's create_repo + upload_folder do: create, preupload,
 * LFS batch upload (basic or multipart, then verify), one NDJSON commit. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "net/hub-json.h"
#include "net/hub-private.h"

#define CHUNK_FILES 256               /* files per preupload call, objects per batch call */
#define SAMPLE_BYTES 512              /* what preupload sees of each file */
#define MAX_REGULAR_BYTES (64u << 20) /* inlined in the commit (base64) */
#define MAX_PARTS 100000

/* One file to push. */
typedef struct push_item {
    char *repo_path;
    char *local_path;   /* NULL for a blob */
    const guint8 *data; /* a blob's bytes (borrowed) */
    guint64 size;
    char sha256[65];
    char git_sha1[41];
    guint8 sample[SAMPLE_BYTES];
    gsize sample_len;
    gboolean lfs;
    gboolean ignore;
    gboolean unchanged;
} push_item;

static void push_item_free(gpointer p)
{
    push_item *it = p;
    g_free(it->repo_path);
    g_free(it->local_path);
    g_free(it);
}

/* sha256, git sha1 and the first bytes of a file, in one pass. */
static gboolean hash_local(push_item *it, GError **error)
{
    GChecksum *sha256 = g_checksum_new(G_CHECKSUM_SHA256);
    GChecksum *sha1 = g_checksum_new(G_CHECKSUM_SHA1);
    char head[64];
    gboolean ok = TRUE;
    if (it->local_path) {
        int fd = g_open(it->local_path, O_RDONLY | O_CLOEXEC, 0);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", it->local_path, g_strerror(e));
            if (fd >= 0)
                close(fd);
            ok = FALSE;
            goto out;
        }
        it->size = (guint64)st.st_size;
        int n = g_snprintf(head, sizeof head, "blob %" G_GUINT64_FORMAT, it->size);
        g_checksum_update(sha1, (const guchar *)head, (gssize)n + 1);
        guchar *buf = g_malloc(1u << 20);
        guint64 total = 0;
        for (;;) {
            ssize_t got = read(fd, buf, 1u << 20);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                int e = errno;
                g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", it->local_path,
                            g_strerror(e));
                ok = FALSE;
                break;
            }
            if (got == 0)
                break;
            if (it->sample_len < SAMPLE_BYTES) {
                gsize take = MIN((gsize)got, SAMPLE_BYTES - it->sample_len);
                memcpy(it->sample + it->sample_len, buf, take);
                it->sample_len += take;
            }
            g_checksum_update(sha256, buf, got);
            g_checksum_update(sha1, buf, got);
            total += (guint64)got;
        }
        g_free(buf);
        close(fd);
        if (ok && total != it->size) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s changed while it was read", it->local_path);
            ok = FALSE;
        }
    } else {
        int n = g_snprintf(head, sizeof head, "blob %" G_GUINT64_FORMAT, it->size);
        g_checksum_update(sha1, (const guchar *)head, (gssize)n + 1);
        g_checksum_update(sha1, it->data, (gssize)it->size);
        g_checksum_update(sha256, it->data, (gssize)it->size);
        it->sample_len = (gsize)MIN(it->size, (guint64)SAMPLE_BYTES);
        memcpy(it->sample, it->data, it->sample_len);
    }
    if (ok) {
        g_strlcpy(it->sha256, g_checksum_get_string(sha256), sizeof it->sha256);
        g_strlcpy(it->git_sha1, g_checksum_get_string(sha1), sizeof it->git_sha1);
    }
out:
    g_checksum_free(sha256);
    g_checksum_free(sha1);
    return ok;
}

/* Always left out of an upload, as huggingface_hub's DEFAULT_IGNORE_PATTERNS. */
static gboolean skipped_dir(const char *rel)
{
    return strcmp(rel, ".git") == 0 || g_str_has_suffix(rel, "/.git") ||
           strcmp(rel, ".cache/huggingface") == 0 || g_str_has_suffix(rel, "/.cache/huggingface");
}

static gboolean walk(const char *root, const char *rel, const rt_hub_push_options *o, GPtrArray *items,
                     GError **error)
{
    char *dir_path = rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
    GError *local = NULL;
    GDir *dir = g_dir_open(dir_path, 0, &local);
    if (!dir) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read the folder to push %s: %s", dir_path,
                    local->message);
        g_error_free(local);
        g_free(dir_path);
        return FALSE;
    }
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL)
        g_ptr_array_add(names, g_strdup(name));
    g_dir_close(dir);
    g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
    gboolean ok = TRUE;
    for (guint i = 0; i < names->len && ok; i++) {
        const char *n = *(const char **)&names->pdata[i];
        char *child_rel = rel ? g_strconcat(rel, "/", n, NULL) : g_strdup(n);
        char *child = g_build_filename(root, child_rel, NULL);
        GStatBuf lst, st;
        if (g_lstat(child, &lst) == 0 && S_ISDIR(lst.st_mode)) {
            if (!skipped_dir(child_rel))
                ok = walk(root, child_rel, o, items, error);
        } else if (g_stat(child, &st) == 0 && S_ISREG(st.st_mode)) {
            /* symlinks to files are followed; to folders, not (no loops) */
            if (rt_hub_match_patterns(child_rel, o->allow_patterns, o->ignore_patterns)) {
                push_item *it = g_new0(push_item, 1);
                it->local_path = g_strdup(child);
                it->repo_path = o->path_in_repo ? g_strconcat(o->path_in_repo, "/", child_rel, NULL)
                                                : g_strdup(child_rel);
                g_ptr_array_add(items, it);
            }
        }
        g_free(child);
        g_free(child_rel);
    }
    g_ptr_array_unref(names);
    g_free(dir_path);
    return ok;
}

static char *json_text(JsonBuilder *b)
{
    JsonNode *root = json_builder_get_root(b);
    char *text = hub_json_to_string(root);
    json_node_unref(root);
    return text;
}

static char *api(const rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *what,
                 const char *revision)
{
    char *qrev = hub_quote_revision(revision);
    char *url = g_strdup_printf("%s/api/%ss/%s/%s/%s", hub->config->endpoint, rt_hub_repo_type_name(type),
                                repo_id, what, qrev);
    g_free(qrev);
    return url;
}

/* ---- create_repo -------------------------------------------------------------------- */

static gboolean repo_readable(rt_hub *hub, rt_hub_repo_type type, const char *repo_id)
{
    char *url = g_strdup_printf("%s/api/%ss/%s", hub->config->endpoint, rt_hub_repo_type_name(type), repo_id);
    hub_target t = {type, repo_id, NULL, NULL};
    JsonNode *root = hub_api_json(hub, "GET", url, NULL, 0, NULL, FALSE, hub->config->max_retries, &t, 0,
                                  NULL, NULL, NULL);
    g_free(url);
    if (root)
        json_node_unref(root);
    return root != NULL;
}

gboolean rt_hub_create_repo(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, gboolean private_repo,
                            char **url_out, GError **error)
{
    if (url_out)
        *url_out = NULL;
    if (!rt_hub_check_repo_id(repo_id, error))
        return FALSE;
    if (hub->config->offline) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "cannot create the repository '%s': HF_HUB_OFFLINE is set", repo_id);
        return FALSE;
    }
    const char *slash = strchr(repo_id, '/');
    char *owner = slash ? g_strndup(repo_id, (gsize)(slash - repo_id)) : NULL;
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, slash ? slash + 1 : repo_id);
    json_builder_set_member_name(b, "organization");
    if (owner)
        json_builder_add_string_value(b, owner);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "visibility");
    json_builder_add_string_value(b, private_repo ? "private" : "public");
    if (type != RT_HUB_MODEL) {
        json_builder_set_member_name(b, "type");
        json_builder_add_string_value(b, rt_hub_repo_type_name(type));
    }
    json_builder_end_object(b);
    char *body = json_text(b);
    g_object_unref(b);
    g_free(owner);

    char *url = g_strconcat(hub->config->endpoint, "/api/repos/create", NULL);
    hub_target t = {type, repo_id, NULL, NULL};
    gboolean ok = FALSE;
    for (int attempt = 1;; attempt++) {
        hub_http_request req;
        hub_http_response resp;
        int tries = 0;
        hub_http_request_init(&req, "POST", url);
        req.auth = TRUE;
        req.body = body;
        req.body_len = strlen(body);
        req.content_type = "application/json";
        hub_http_response_init(&resp);
        GError *cause = NULL;
        if (!hub_http_perform(hub, &req, &resp, hub->config->max_retries, &tries, &cause)) {
            hub_transport_error(error, cause, hub, &t, tries);
            hub_http_response_clear(&resp);
            break;
        }
        long s = resp.status;
        char *text = g_strndup((const char *)resp.body->data, resp.body->len);
        if (s == 409 && strstr(text, "another conflicting operation is in progress") &&
            attempt <= hub->config->max_retries) {
            g_free(text);
            hub_http_backoff(hub, attempt, &resp);
            hub_http_response_clear(&resp);
            continue;
        }
        if (s >= 200 && s < 300) {
            ok = TRUE;
            if (url_out) {
                JsonParser *p = json_parser_new();
                if (json_parser_load_from_data(p, text, -1, NULL))
                    *url_out = g_strdup(hub_json_str(json_parser_get_root(p), "url"));
                g_object_unref(p);
            }
        } else if (s == 409) {
            ok = TRUE; /* exists */
        } else if ((s == 401 || s == 402 || s == 403) && repo_readable(hub, type, repo_id)) {
            ok = TRUE; /* no right to create, but it is there */
        } else {
            hub_status_error(error, hub, &resp, "POST", url, &t, tries);
        }
        g_free(text);
        hub_http_response_clear(&resp);
        break;
    }
    if (ok && url_out && !*url_out)
        *url_out = hub_repo_url(hub, type, repo_id);
    g_free(url);
    g_free(body);
    return ok;
}

/* ---- preupload ---------------------------------------------------------------------- */

static gboolean preupload(rt_hub *hub, const rt_hub_push_options *o, const char *revision, GPtrArray *items,
                          GError **error)
{
    char *url = api(hub, o->type, o->repo_id, "preupload", revision);
    hub_target t = {o->type, o->repo_id, revision, NULL};
    gboolean ok = TRUE;
    for (guint start = 0; start < items->len && ok; start += CHUNK_FILES) {
        guint end = MIN(items->len, start + CHUNK_FILES);
        JsonBuilder *b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "files");
        json_builder_begin_array(b);
        for (guint i = start; i < end; i++) {
            push_item *it = items->pdata[i];
            char *sample = g_base64_encode(it->sample, it->sample_len);
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "path");
            json_builder_add_string_value(b, it->repo_path);
            json_builder_set_member_name(b, "sample");
            json_builder_add_string_value(b, sample);
            json_builder_set_member_name(b, "size");
            json_builder_add_int_value(b, (gint64)it->size);
            json_builder_end_object(b);
            g_free(sample);
        }
        json_builder_end_array(b);
        json_builder_end_object(b);
        char *body = json_text(b);
        g_object_unref(b);
        JsonNode *root = hub_api_json(hub, "POST", url, body, strlen(body), "application/json", FALSE,
                                      hub->config->max_retries, &t, 0, NULL, NULL, error);
        g_free(body);
        if (!root) {
            ok = FALSE;
            break;
        }
        JsonArray *files = hub_json_array(root, "files");
        for (guint i = start; i < end && ok; i++) {
            push_item *it = items->pdata[i];
            JsonNode *found = NULL;
            for (guint k = 0; files && k < json_array_get_length(files) && !found; k++) {
                JsonNode *f = json_array_get_element(files, k);
                const char *p = hub_json_str(f, "path");
                if (p && strcmp(p, it->repo_path) == 0)
                    found = f;
            }
            const char *mode = hub_json_str(found, "uploadMode");
            if (!mode || (strcmp(mode, "lfs") != 0 && strcmp(mode, "regular") != 0)) {
                g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                            "POST %s: the answer gives no upload mode (lfs or regular) for '%s'%s%s", url,
                            it->repo_path, mode ? ": it says " : "", mode ? mode : "");
                ok = FALSE;
                break;
            }
            /* empty files cannot go through LFS storage */
            it->lfs = strcmp(mode, "lfs") == 0 && it->size > 0;
            it->ignore = hub_json_bool(found, "shouldIgnore", FALSE);
            const char *remote = hub_json_str(found, "oid");
            it->unchanged = remote && strcmp(remote, it->lfs ? it->sha256 : it->git_sha1) == 0;
        }
        json_node_unref(root);
    }
    g_free(url);
    return ok;
}

/* ---- LFS ---------------------------------------------------------------------------- */

/* huggingface_hub's fix_hf_endpoint_in_url: hrefs naming huggingface.co go to the endpoint. */
static char *fix_endpoint(const rt_hub *hub, const char *href)
{
    static const char hf[] = "https://huggingface.co";
    if (g_str_has_prefix(href, hf) && (href[sizeof hf - 1] == '/' || !href[sizeof hf - 1]) &&
        strcmp(hub->config->endpoint, hf) != 0)
        return g_strconcat(hub->config->endpoint, href + sizeof hf - 1, NULL);
    return g_strdup(href);
}

static gboolean same_host_as_endpoint(const rt_hub *hub, const char *url)
{
    size_t n = strlen(hub->config->endpoint);
    return strncmp(url, hub->config->endpoint, n) == 0 && (url[n] == '/' || url[n] == '\0');
}

/* PUT bytes [offset, offset+len) of the item to url (pre-signed: no token). Returns the answer's
 * ETag (transfer full) when etag_out is given. */
static gboolean put_bytes(rt_hub *hub, const push_item *it, const char *url, guint64 offset, guint64 len,
                          guint64 progress_base, char **etag_out, GError **error)
{
    hub_http_request req;
    hub_http_response resp;
    int fd = -1, attempts = 0;
    gboolean ok = FALSE;
    hub_target t = {hub->push_type, hub->progress_repo, NULL, it->repo_path};
    hub_http_request_init(&req, "PUT", url);
    if (it->local_path) {
        fd = g_open(it->local_path, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", it->local_path, g_strerror(e));
            return FALSE;
        }
        req.upload_fd = fd;
        req.upload_offset = (goffset)offset;
        req.upload_len = (goffset)len;
    } else {
        req.body = len ? it->data + offset : (const guint8 *)"";
        req.body_len = (size_t)len;
    }
    req.progress_path = it->repo_path;
    req.progress_base = progress_base;
    req.progress_total = it->size;
    hub_http_response_init(&resp);
    GError *cause = NULL;
    if (!hub_http_perform(hub, &req, &resp, hub->config->max_retries, &attempts, &cause)) {
        hub_transport_error(error, cause, hub, &t, attempts);
    } else if (resp.status < 200 || resp.status >= 300) {
        /* a pre-signed storage URL, not the Hub: no token advice */
        const char *xmsg = hub_http_header(&resp, "x-error-message");
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "PUT %s: HTTP %ld%s%s%s after %d attempt%s: the storage refused the bytes of "
                    "'%s'; run the push again (it asks for fresh upload URLs)",
                    url, resp.status, xmsg ? " (the storage says: " : "", xmsg ? xmsg : "", xmsg ? ")" : "",
                    attempts, attempts == 1 ? "" : "s", it->repo_path);
    } else if (etag_out) {
        const char *etag = hub_http_header(&resp, "etag");
        if (!etag || !*etag) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "PUT %s: the storage gave no ETag for this part of '%s'", url, it->repo_path);
        } else {
            *etag_out = g_strdup(etag);
            ok = TRUE;
        }
    } else {
        ok = TRUE;
    }
    hub_http_response_clear(&resp);
    if (fd >= 0)
        close(fd);
    return ok;
}

static gboolean post_json(rt_hub *hub, const char *url, JsonBuilder *b, gboolean auth, gboolean lfs_json,
                          const hub_target *t, GError **error)
{
    char *body = json_text(b);
    hub_http_request req;
    hub_http_response resp;
    int attempts = 0;
    gboolean ok = FALSE;
    hub_http_request_init(&req, "POST", url);
    req.auth = auth;
    req.body = body;
    req.body_len = strlen(body);
    req.lfs_json = lfs_json;
    req.content_type = lfs_json ? NULL : "application/json";
    hub_http_response_init(&resp);
    GError *cause = NULL;
    if (!hub_http_perform(hub, &req, &resp, hub->config->max_retries, &attempts, &cause))
        hub_transport_error(error, cause, hub, t, attempts);
    else if (resp.status < 200 || resp.status >= 300)
        hub_status_error(error, hub, &resp, "POST", url, t, attempts);
    else
        ok = TRUE;
    hub_http_response_clear(&resp);
    g_free(body);
    return ok;
}

static gint compare_part(gconstpointer a, gconstpointer b)
{
    guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
    return x < y ? -1 : x > y;
}

static gboolean upload_multipart(rt_hub *hub, const push_item *it, JsonNode *header, guint64 chunk,
                                 const char *complete_url, GError **error)
{
    /* the part URLs are the header's keys "1", "2", ... */
    JsonObject *h = json_node_get_object(header);
    GList *members = json_object_get_members(h);
    GArray *numbers = g_array_new(FALSE, FALSE, sizeof(guint64));
    for (GList *l = members; l; l = l->next) {
        const char *k = l->data;
        gboolean digits = *k != '\0';
        for (const char *c = k; *c; c++)
            digits = digits && g_ascii_isdigit(*c);
        if (digits) {
            guint64 num = g_ascii_strtoull(k, NULL, 10);
            g_array_append_val(numbers, num);
        }
    }
    g_list_free(members);
    g_array_sort(numbers, compare_part);
    guint64 expect = (it->size + chunk - 1) / chunk;
    hub_target t = {hub->push_type, hub->progress_repo, NULL, it->repo_path};
    gboolean ok = TRUE;
    if (numbers->len != expect || expect > MAX_PARTS) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "the Hub's multipart upload of '%s' gives %u part URLs, but %" G_GUINT64_FORMAT
                    " bytes in parts of %" G_GUINT64_FORMAT " need %" G_GUINT64_FORMAT,
                    it->repo_path, numbers->len, it->size, chunk, expect);
        ok = FALSE;
    }
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "oid");
    json_builder_add_string_value(b, it->sha256);
    json_builder_set_member_name(b, "parts");
    json_builder_begin_array(b);
    for (guint i = 0; i < numbers->len && ok; i++) {
        char key[32];
        g_snprintf(key, sizeof key, "%" G_GUINT64_FORMAT, g_array_index(numbers, guint64, i));
        const char *href = hub_json_str(header, key);
        if (!href) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "the Hub's multipart upload of '%s': part %s has no URL", it->repo_path, key);
            ok = FALSE;
            break;
        }
        char *part_url = fix_endpoint(hub, href);
        guint64 off = (guint64)i * chunk;
        char *etag = NULL;
        ok = put_bytes(hub, it, part_url, off, MIN(chunk, it->size - off), off, &etag, error);
        g_free(part_url);
        if (ok) {
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "partNumber");
            json_builder_add_int_value(b, (gint64)i + 1);
            json_builder_set_member_name(b, "etag");
            json_builder_add_string_value(b, etag);
            json_builder_end_object(b);
        }
        g_free(etag);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    if (ok)
        ok = post_json(hub, complete_url, b, FALSE, TRUE, &t, error);
    g_object_unref(b);
    g_array_unref(numbers);
    return ok;
}

/* One object of a batch answer. *uploaded: bytes were sent. */
static gboolean upload_object(rt_hub *hub, const push_item *it, JsonNode *obj, gboolean *uploaded,
                              GError **error)
{
    *uploaded = FALSE;
    JsonNode *err = hub_json_member(obj, "error");
    if (err) {
        guint64 code = 0;
        hub_json_uint(err, "code", &code);
        const char *msg = hub_json_str(err, "message");
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "the Hub refused the LFS upload of '%s' (sha256 %s): %" G_GUINT64_FORMAT " %s",
                    it->repo_path, it->sha256, code, msg ? msg : "");
        return FALSE;
    }
    JsonNode *actions = hub_json_member(obj, "actions");
    if (!actions)
        return TRUE; /* the Hub has these bytes already */
    JsonNode *upload = hub_json_member(actions, "upload");
    JsonNode *verify = hub_json_member(actions, "verify");
    const char *href = hub_json_str(upload, "href");
    if (!href) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the Hub's LFS answer for '%s' has no upload URL",
                    it->repo_path);
        return FALSE;
    }
    char *url = fix_endpoint(hub, href);
    JsonNode *header = hub_json_member(upload, "header");
    JsonNode *chunk_node =
        header && JSON_NODE_HOLDS_OBJECT(header) ? hub_json_member(header, "chunk_size") : NULL;
    gboolean ok;
    if (chunk_node) {
        guint64 chunk = 0;
        const char *text = hub_json_str(header, "chunk_size");
        if (text)
            chunk = g_ascii_strtoull(text, NULL, 10);
        else
            hub_json_uint(header, "chunk_size", &chunk);
        if (chunk == 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "the Hub's multipart upload of '%s' has a bad chunk_size", it->repo_path);
            ok = FALSE;
        } else {
            ok = upload_multipart(hub, it, header, chunk, url, error);
        }
    } else {
        ok = put_bytes(hub, it, url, 0, it->size, 0, NULL, error);
    }
    g_free(url);
    if (ok && verify) {
        const char *vhref = hub_json_str(verify, "href");
        if (!vhref) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "the Hub's LFS verify action for '%s' has no URL",
                        it->repo_path);
            return FALSE;
        }
        char *vurl = fix_endpoint(hub, vhref);
        hub_target t = {hub->push_type, hub->progress_repo, NULL, it->repo_path};
        JsonBuilder *b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "oid");
        json_builder_add_string_value(b, it->sha256);
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, (gint64)it->size);
        json_builder_end_object(b);
        /* the token goes only to the Hub itself */
        ok = post_json(hub, vurl, b, same_host_as_endpoint(hub, vurl), FALSE, &t, error);
        g_object_unref(b);
        g_free(vurl);
    }
    *uploaded = ok;
    return ok;
}

static gboolean upload_lfs(rt_hub *hub, const rt_hub_push_options *o, const char *revision,
                           GPtrArray *lfs_items, guint *n_uploaded, GError **error)
{
    const char *prefix = hub_url_prefix(o->type);
    char *url =
        g_strdup_printf("%s/%s%s.git/info/lfs/objects/batch", hub->config->endpoint, prefix, o->repo_id);
    hub_target t = {o->type, o->repo_id, revision, NULL};
    gboolean ok = TRUE;
    for (guint start = 0; start < lfs_items->len && ok; start += CHUNK_FILES) {
        guint end = MIN(lfs_items->len, start + CHUNK_FILES);
        JsonBuilder *b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "operation");
        json_builder_add_string_value(b, "upload");
        json_builder_set_member_name(b, "transfers");
        json_builder_begin_array(b);
        json_builder_add_string_value(b, "basic");
        json_builder_add_string_value(b, "multipart");
        json_builder_end_array(b);
        json_builder_set_member_name(b, "objects");
        json_builder_begin_array(b);
        for (guint i = start; i < end; i++) {
            push_item *it = lfs_items->pdata[i];
            json_builder_begin_object(b);
            json_builder_set_member_name(b, "oid");
            json_builder_add_string_value(b, it->sha256);
            json_builder_set_member_name(b, "size");
            json_builder_add_int_value(b, (gint64)it->size);
            json_builder_end_object(b);
        }
        json_builder_end_array(b);
        json_builder_set_member_name(b, "hash_algo");
        json_builder_add_string_value(b, "sha256");
        json_builder_set_member_name(b, "ref");
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "name");
        json_builder_add_string_value(b, revision);
        json_builder_end_object(b);
        json_builder_end_object(b);
        char *body = json_text(b);
        g_object_unref(b);
        JsonNode *root = hub_api_json(hub, "POST", url, body, strlen(body), NULL, TRUE,
                                      hub->config->max_retries, &t, 0, NULL, NULL, error);
        g_free(body);
        if (!root) {
            ok = FALSE;
            break;
        }
        const char *transfer = hub_json_str(root, "transfer");
        JsonArray *objects = hub_json_array(root, "objects");
        if (transfer && strcmp(transfer, "basic") != 0 && strcmp(transfer, "multipart") != 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "POST %s: the Hub chose the '%s' transfer, robotrain speaks basic and "
                        "multipart LFS only",
                        url, transfer);
            ok = FALSE;
        } else if (!objects) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "POST %s: the LFS batch answer has no \"objects\"",
                        url);
            ok = FALSE;
        }
        for (guint i = start; i < end && ok; i++) {
            push_item *it = lfs_items->pdata[i];
            JsonNode *obj = NULL;
            for (guint k = 0; k < json_array_get_length(objects) && !obj; k++) {
                JsonNode *e = json_array_get_element(objects, k);
                const char *oid = hub_json_str(e, "oid");
                if (oid && strcmp(oid, it->sha256) == 0)
                    obj = e;
            }
            if (!obj) {
                g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                            "POST %s: the LFS batch answer lacks '%s' (sha256 %s)", url, it->repo_path,
                            it->sha256);
                ok = FALSE;
                break;
            }
            hub->progress_index = i + 1;
            gboolean uploaded = FALSE;
            ok = upload_object(hub, it, obj, &uploaded, error);
            if (uploaded)
                (*n_uploaded)++;
        }
        json_node_unref(root);
    }
    g_free(url);
    return ok;
}

/* ---- commit ------------------------------------------------------------------------- */

static void ndjson_line(GString *out, JsonBuilder *b)
{
    char *text = json_text(b);
    g_string_append(out, text);
    g_string_append_c(out, '\n');
    g_free(text);
}

static gboolean read_regular(const push_item *it, guint8 **data, gsize *len, GError **error)
{
    if (!it->local_path) {
        *data = g_malloc((gsize)it->size + 1);
        if (it->size)
            memcpy(*data, it->data, (gsize)it->size);
        *len = (gsize)it->size;
        return TRUE;
    }
    GError *local = NULL;
    char *contents = NULL;
    if (!g_file_get_contents(it->local_path, &contents, len, &local)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", it->local_path, local->message);
        g_error_free(local);
        return FALSE;
    }
    if (*len != it->size) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s changed while it was pushed", it->local_path);
        g_free(contents);
        return FALSE;
    }
    *data = (guint8 *)contents;
    return TRUE;
}

static JsonNode *commit(rt_hub *hub, const rt_hub_push_options *o, const char *revision, GPtrArray *items,
                        GError **error)
{
    GString *payload = g_string_new(NULL);
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "key");
    json_builder_add_string_value(b, "header");
    json_builder_set_member_name(b, "value");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "summary");
    json_builder_add_string_value(b, o->commit_message ? o->commit_message : "Upload folder using robotrain");
    json_builder_set_member_name(b, "description");
    json_builder_add_string_value(b, o->commit_description ? o->commit_description : "");
    if (o->parent_commit) {
        json_builder_set_member_name(b, "parentCommit");
        json_builder_add_string_value(b, o->parent_commit);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    ndjson_line(payload, b);
    g_object_unref(b);

    for (guint i = 0; i < items->len; i++) {
        push_item *it = items->pdata[i];
        b = json_builder_new();
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "key");
        json_builder_add_string_value(b, it->lfs ? "lfsFile" : "file");
        json_builder_set_member_name(b, "value");
        json_builder_begin_object(b);
        if (it->lfs) {
            json_builder_set_member_name(b, "path");
            json_builder_add_string_value(b, it->repo_path);
            json_builder_set_member_name(b, "algo");
            json_builder_add_string_value(b, "sha256");
            json_builder_set_member_name(b, "oid");
            json_builder_add_string_value(b, it->sha256);
            json_builder_set_member_name(b, "size");
            json_builder_add_int_value(b, (gint64)it->size);
        } else {
            guint8 *data = NULL;
            gsize len = 0;
            if (!read_regular(it, &data, &len, error)) {
                g_object_unref(b);
                g_string_free(payload, TRUE);
                return NULL;
            }
            char *b64 = g_base64_encode(data, len);
            g_free(data);
            json_builder_set_member_name(b, "content");
            json_builder_add_string_value(b, b64);
            json_builder_set_member_name(b, "path");
            json_builder_add_string_value(b, it->repo_path);
            json_builder_set_member_name(b, "encoding");
            json_builder_add_string_value(b, "base64");
            g_free(b64);
        }
        json_builder_end_object(b);
        json_builder_end_object(b);
        ndjson_line(payload, b);
        g_object_unref(b);
    }
    char *url = api(hub, o->type, o->repo_id, "commit", revision);
    hub_target t = {o->type, o->repo_id, revision, NULL};
    JsonNode *root = hub_api_json(hub, "POST", url, payload->str, payload->len, "application/x-ndjson", FALSE,
                                  hub->config->max_retries, &t, 0, NULL, NULL, error);
    g_free(url);
    g_string_free(payload, TRUE);
    return root;
}

void rt_hub_commit_free(rt_hub_commit *c)
{
    if (!c)
        return;
    g_free(c->repo_url);
    g_free(c->commit_url);
    g_free(c->commit_oid);
    g_free(c);
}

rt_hub_commit *rt_hub_push_folder(rt_hub *hub, const rt_hub_push_options *o, GError **error)
{
    g_return_val_if_fail(hub != NULL && o != NULL, NULL);
    const char *revision = o->revision ? o->revision : "main";
    if (!rt_hub_check_repo_id(o->repo_id, error) || !hub_check_revision(revision, error) ||
        (o->path_in_repo && !hub_check_repo_path(o->path_in_repo, error)))
        return NULL;
    if (hub->config->offline) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "cannot push to '%s': HF_HUB_OFFLINE is set (unset it to push)", o->repo_id);
        return NULL;
    }
    if (!hub->config->token) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "pushing to '%s' needs a Hugging Face token with write access: set HF_TOKEN "
                    "(create one at https://huggingface.co/settings/tokens) or write it to %s",
                    o->repo_id, hub->config->token_path);
        return NULL;
    }

    GPtrArray *items = g_ptr_array_new_with_free_func(push_item_free);
    GPtrArray *lfs = g_ptr_array_new();
    GPtrArray *kept = g_ptr_array_new();
    GHashTable *paths = g_hash_table_new(g_str_hash, g_str_equal);
    rt_hub_commit *result = NULL;
    JsonNode *answer = NULL;
    char *repo_url = NULL;

    if (o->folder && !walk(o->folder, NULL, o, items, error))
        goto out;
    for (size_t i = 0; i < o->n_blobs; i++) {
        const rt_hub_push_blob *bl = &o->blobs[i];
        if (!hub_check_repo_path(bl->path_in_repo, error))
            goto out;
        push_item *it = g_new0(push_item, 1);
        it->repo_path = g_strdup(bl->path_in_repo);
        it->data = bl->data;
        it->size = bl->size;
        g_ptr_array_add(items, it);
    }
    if (items->len == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "nothing to push to '%s': %s%s has no file that the patterns select", o->repo_id,
                    o->folder ? "the folder " : "", o->folder ? o->folder : "the push");
        goto out;
    }
    for (guint i = 0; i < items->len; i++) {
        push_item *it = items->pdata[i];
        if (g_hash_table_contains(paths, it->repo_path)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "'%s' would be pushed twice (from the folder and from memory)", it->repo_path);
            goto out;
        }
        g_hash_table_add(paths, it->repo_path);
        if (!hash_local(it, error))
            goto out;
    }

    if (!rt_hub_create_repo(hub, o->type, o->repo_id, o->private_repo, &repo_url, error))
        goto out;
    hub->progress_repo = o->repo_id;
    hub->push_type = o->type;
    if (!preupload(hub, o, revision, items, error))
        goto out;

    result = g_new0(rt_hub_commit, 1);
    result->repo_url = g_steal_pointer(&repo_url);
    GHashTable *lfs_oids = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < items->len; i++) {
        push_item *it = items->pdata[i];
        if (it->ignore)
            continue;
        if (it->unchanged) {
            result->n_unchanged++;
            continue;
        }
        if (!it->lfs && it->size > MAX_REGULAR_BYTES) {
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "the Hub wants '%s' (%" G_GUINT64_FORMAT " bytes) committed inline, "
                        "robotrain inlines files up to %u MiB: add it to the repository's "
                        ".gitattributes as an LFS file",
                        it->repo_path, it->size, MAX_REGULAR_BYTES >> 20);
            g_hash_table_unref(lfs_oids);
            g_clear_pointer(&result, rt_hub_commit_free);
            goto out;
        }
        g_ptr_array_add(kept, it);
        if (it->lfs) {
            result->n_lfs++;
            if (!g_hash_table_contains(lfs_oids, it->sha256)) {
                g_hash_table_add(lfs_oids, it->sha256);
                g_ptr_array_add(lfs, it);
            }
        }
    }
    g_hash_table_unref(lfs_oids);
    result->n_files = kept->len;
    if (kept->len == 0)
        goto out; /* nothing changed: no commit, as huggingface_hub */

    hub->progress_count = lfs->len;
    if (!upload_lfs(hub, o, revision, lfs, &result->n_uploaded, error) ||
        !(answer = commit(hub, o, revision, kept, error))) {
        g_clear_pointer(&result, rt_hub_commit_free);
        goto out;
    }
    result->commit_url = g_strdup(hub_json_str(answer, "commitUrl"));
    result->commit_oid = g_strdup(hub_json_str(answer, "commitOid"));
    if (!result->commit_oid) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "the Hub's answer to the commit on '%s' has no commitOid", o->repo_id);
        g_clear_pointer(&result, rt_hub_commit_free);
    }
out:
    hub->progress_repo = NULL;
    hub->progress_index = hub->progress_count = 0;
    if (answer)
        json_node_unref(answer);
    g_free(repo_url);
    g_hash_table_unref(paths);
    g_ptr_array_unref(kept);
    g_ptr_array_unref(lfs);
    g_ptr_array_unref(items);
    return result;
}

gboolean rt_hub_create_tag(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *tag,
                           const char *revision, const char *message, GError **error)
{
    if (!revision)
        revision = "main";
    if (!rt_hub_check_repo_id(repo_id, error) || !hub_check_revision(revision, error) ||
        !hub_check_revision(tag, error))
        return FALSE;
    if (hub->config->offline) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK, "cannot tag '%s': HF_HUB_OFFLINE is set", repo_id);
        return FALSE;
    }
    char *url = api(hub, type, repo_id, "tag", revision);
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "tag");
    json_builder_add_string_value(b, tag);
    if (message) {
        json_builder_set_member_name(b, "message");
        json_builder_add_string_value(b, message);
    }
    json_builder_end_object(b);
    char *body = json_text(b);
    g_object_unref(b);
    hub_target t = {type, repo_id, revision, NULL};
    long status = 0;
    GError *local = NULL;
    JsonNode *root = hub_api_json(hub, "POST", url, body, strlen(body), "application/json", FALSE,
                                  hub->config->max_retries, &t, 0, &status, NULL, &local);
    if (!root && status == 409) {
        g_clear_error(&local);
        char *what = hub_describe_repo(type, repo_id);
        g_set_error(&local, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "POST %s: the tag '%s' exists already in %s: choose another name", url, tag, what);
        g_free(what);
    }
    if (root)
        json_node_unref(root);
    if (local)
        g_propagate_error(error, local);
    g_free(body);
    g_free(url);
    return root != NULL;
}
