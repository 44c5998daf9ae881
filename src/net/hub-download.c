/* Downloading one file: the metadata HEAD, the resumable GET into <etag>.incomplete with size
 * and hash checks, the move into blobs/ and the snapshot symlink (or, in local-folder mode, the
 * file itself and its .metadata). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "net/hub-private.h"

#define MAX_RELATIVE_REDIRECTS 10
#define MAX_HTTP_DOWNLOAD_BYTES G_GUINT64_CONSTANT(50000000000) /* huggingface_hub's limit */

/* What the HEAD of a resolve URL says about a file. */
typedef struct file_meta {
    char *commit;
    char *etag;
    guint64 size;
    char *url;          /* what to GET */
    gboolean send_auth; /* FALSE for a pre-signed URL on another host */
} file_meta;

static void file_meta_clear(file_meta *m)
{
    g_free(m->commit);
    g_free(m->etag);
    g_free(m->url);
    memset(m, 0, sizeof *m);
}

static char *resolve_url(const rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                         const char *path)
{
    char *qrev = hub_quote_revision(revision);
    char *qpath = hub_quote_path(path);
    char *url = g_strdup_printf("%s/%s%s/resolve/%s/%s", hub->config->endpoint, hub_url_prefix(type), repo_id,
                                qrev, qpath);
    g_free(qpath);
    g_free(qrev);
    return url;
}

/* huggingface_hub's _normalize_etag: drop a leading W/ and the quotes (transfer full). */
static char *normalize_etag(const char *etag)
{
    while (*etag == 'W' || *etag == '/')
        etag++;
    char *e = g_strdup(etag);
    size_t n = strlen(e);
    while (n > 0 && e[n - 1] == '"')
        e[--n] = '\0';
    size_t start = 0;
    while (e[start] == '"')
        start++;
    memmove(e, e + start, n - start + 1);
    return e;
}

static char *host_of(const char *url)
{
    GUri *u = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);
    if (!u)
        return NULL;
    char *host = g_strdup_printf("%s://%s:%d", g_uri_get_scheme(u),
                                 g_uri_get_host(u) ? g_uri_get_host(u) : "", g_uri_get_port(u));
    g_uri_unref(u);
    return host;
}

/* HEAD the resolve URL, following only relative redirects (a renamed repository); an absolute
 * one is the storage URL to GET. *failure says how it failed. */
static gboolean head_file(rt_hub *hub, const hub_target *t, const char *storage, int max_retries,
                          file_meta *out, hub_failure *failure, GError **error)
{
    char *url = resolve_url(hub, t->type, t->repo_id, t->revision, t->path);
    static const char *const identity[] = {"Accept-Encoding: identity", NULL};
    hub_http_response resp;
    gboolean ok = FALSE;
    int attempts = 0;

    *failure = HUB_FAIL_FINAL;
    hub_http_response_init(&resp);
    for (int hop = 0;; hop++) {
        hub_http_request req;
        hub_http_request_init(&req, "HEAD", url);
        req.auth = TRUE;
        req.metadata = TRUE;
        req.headers = identity;
        GError *cause = NULL;
        if (!hub_http_perform(hub, &req, &resp, max_retries, &attempts, &cause)) {
            *failure = HUB_FAIL_TRANSIENT;
            hub_transport_error(error, cause, hub, t, attempts);
            goto done;
        }
        const char *location = hub_http_header(&resp, "location");
        if (resp.status >= 300 && resp.status < 400 && location && hop < MAX_RELATIVE_REDIRECTS) {
            GUri *loc = g_uri_parse(location, G_URI_FLAGS_NONE, NULL);
            gboolean relative = loc == NULL || g_uri_get_host(loc) == NULL;
            if (loc)
                g_uri_unref(loc);
            if (relative) {
                char *next = g_uri_resolve_relative(url, location, G_URI_FLAGS_NONE, NULL);
                if (!next)
                    break;
                g_free(url);
                url = next;
                continue;
            }
        }
        break;
    }

    long s = resp.status;
    if (s >= 400) {
        const char *code = hub_http_header(&resp, "x-error-code");
        const char *commit = hub_http_header(&resp, "x-repo-commit");
        if (s == 404 && code && strcmp(code, "EntryNotFound") == 0 && storage && rt_hub_is_commit_sha(commit))
            hub_mark_no_exist(storage, commit, t->path);
        *failure = hub_http_status_retryable(s) ? HUB_FAIL_TRANSIENT
                   : s != 404                   ? HUB_FAIL_TRY_CACHE
                                                : HUB_FAIL_FINAL;
        hub_status_error(error, hub, &resp, "HEAD", url, t, attempts);
        goto done;
    }
    const char *commit = hub_http_header(&resp, "x-repo-commit");
    const char *etag = hub_http_header(&resp, "x-linked-etag");
    if (!etag)
        etag = hub_http_header(&resp, "etag");
    const char *size = hub_http_header(&resp, "x-linked-size");
    if (!size && !(s >= 300 && s < 400))
        size = hub_http_header(&resp, "content-length");
    const char *location = hub_http_header(&resp, "location");
    if (!rt_hub_is_commit_sha(commit)) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "HEAD %s: the answer has no X-Repo-Commit header, so %s is not a Hugging "
                    "Face Hub (check HF_ENDPOINT, a proxy or a firewall)",
                    url, hub->config->endpoint);
        *failure = HUB_FAIL_TRY_CACHE;
        goto done;
    }
    char *tag = etag ? normalize_etag(etag) : NULL;
    if (!tag || !*tag || strchr(tag, '/') || strcmp(tag, "..") == 0 || strcmp(tag, ".") == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "HEAD %s: the answer has no usable ETag (%s), so the file cannot be checked "
                    "or cached",
                    url, etag ? etag : "none");
        g_free(tag);
        goto done;
    }
    char *end = NULL;
    guint64 bytes = size ? g_ascii_strtoull(size, &end, 10) : 0;
    if (!size || !end || *end || !g_ascii_isdigit(size[0])) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "HEAD %s: the answer does not give the file's size (X-Linked-Size or "
                    "Content-Length)",
                    url);
        g_free(tag);
        goto done;
    }
    if (bytes > MAX_HTTP_DOWNLOAD_BYTES) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "HEAD %s: '%s' is %" G_GUINT64_FORMAT " bytes; the Hub serves files above 50 GB "
                    "through its Xet protocol only, and robotrain downloads over plain HTTP",
                    url, t->path, bytes);
        g_free(tag);
        goto done;
    }
    out->commit = g_strdup(commit);
    out->etag = tag;
    out->size = bytes;
    out->send_auth = TRUE;
    if (s >= 300 && s < 400 && location) {
        out->url = g_uri_resolve_relative(url, location, G_URI_FLAGS_NONE, NULL);
        if (!out->url)
            out->url = g_strdup(location);
        /* A pre-signed URL on another host must not receive the token. */
        char *a = host_of(url), *b = host_of(out->url);
        out->send_auth = a && b && strcmp(a, b) == 0;
        g_free(a);
        g_free(b);
    } else {
        out->url = g_strdup(url);
    }
    ok = TRUE;
done:
    hub_http_response_clear(&resp);
    g_free(url);
    return ok;
}

static gboolean feed_existing(int fd, guint64 have, GChecksum *sum, GError **error)
{
    if (!sum || have == 0)
        return TRUE;
    guchar *buf = g_malloc(1u << 20);
    guint64 off = 0;
    gboolean ok = TRUE;
    while (off < have) {
        size_t want = (size_t)MIN((guint64)(1u << 20), have - off);
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            int e = got < 0 ? errno : EIO;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read the partial download: %s", g_strerror(e));
            ok = FALSE;
            break;
        }
        g_checksum_update(sum, buf, got);
        off += (guint64)got;
    }
    g_free(buf);
    return ok;
}

/* GETs meta->url into incomplete (resuming what is there), checks size and hash, renames it to
 * dest. A transfer that fails leaves incomplete for the next call to resume; a wrong hash
 * deletes it. */
static gboolean download_to(rt_hub *hub, const hub_target *t, const file_meta *meta, const char *incomplete,
                            const char *dest, GError **error)
{
    const rt_hub_config *cfg = hub->config;
    if (!hub_make_parents(incomplete, error) || !hub_make_parents(dest, error))
        return FALSE;
    int fd = g_open(incomplete, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create %s: %s", incomplete, g_strerror(e));
        return FALSE;
    }
    struct stat st;
    guint64 have = fstat(fd, &st) == 0 ? (guint64)st.st_size : 0;
    if (have > meta->size) {
        if (ftruncate(fd, 0) != 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot truncate %s: %s", incomplete, g_strerror(e));
            close(fd);
            return FALSE;
        }
        have = 0;
    }

    /* The etag names the content: sha256 (LFS, Xet) or the git blob sha1. */
    GChecksum *sum = NULL;
    char prefix[64];
    gsize prefix_len = 0;
    const char *algo = NULL;
    if (hub_is_hex(meta->etag, 64)) {
        sum = g_checksum_new(G_CHECKSUM_SHA256);
        algo = "sha256";
    } else if (hub_is_hex(meta->etag, 40)) {
        sum = g_checksum_new(G_CHECKSUM_SHA1);
        prefix_len = (gsize)g_snprintf(prefix, sizeof prefix, "blob %" G_GUINT64_FORMAT, meta->size) + 1;
        g_checksum_update(sum, (const guchar *)prefix, (gssize)prefix_len);
        algo = "git sha1";
    }
    gboolean ok = feed_existing(fd, have, sum, error) && lseek(fd, (off_t)have, SEEK_SET) == (off_t)have;
    int budget = cfg->max_retries;
    int attempt = 0;
    while (ok && have < meta->size) {
        hub_http_request req;
        hub_http_response resp;
        gboolean transient = FALSE;
        GError *local = NULL;
        hub_http_request_init(&req, "GET", meta->url);
        req.auth = meta->send_auth;
        req.follow = TRUE;
        req.sink_fd = fd;
        req.sink_sum = sum;
        req.range_from = have;
        req.sum_prefix = prefix;
        req.sum_prefix_len = prefix_len;
        req.progress_path = t->path;
        req.progress_base = have;
        req.progress_total = meta->size;
        hub_http_response_init(&resp);
        attempt++;
        gboolean answered = hub_http_once(hub, &req, &resp, &transient, &local);
        if (resp.restarted)
            have = 0;
        have += resp.sunk;
        gboolean progressed = resp.sunk > 0;
        if (answered && resp.status >= 200 && resp.status < 300) {
            if (have < meta->size) {
                /* a short body without an error: resume */
                transient = TRUE;
                g_set_error(&local, RT_ERROR, RT_ERROR_NETWORK,
                            "GET %s: the body ended after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                            " bytes",
                            meta->url, have, meta->size);
            }
        } else if (answered && resp.status == 416) {
            /* our partial file does not fit the server's: start over */
            if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
                int e = errno;
                g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot truncate %s: %s", incomplete,
                            g_strerror(e));
                hub_http_response_clear(&resp);
                ok = FALSE;
                break;
            }
            have = 0;
            if (sum) {
                g_checksum_reset(sum);
                if (prefix_len)
                    g_checksum_update(sum, (const guchar *)prefix, (gssize)prefix_len);
            }
            transient = TRUE;
            g_set_error(&local, RT_ERROR, RT_ERROR_NETWORK, "GET %s: HTTP 416", meta->url);
        } else if (answered) {
            if (!hub_http_status_retryable(resp.status) || budget <= 0) {
                hub_status_error(error, hub, &resp, "GET", meta->url, t, attempt);
                ok = FALSE;
            } else {
                budget--;
                hub_http_backoff(hub, attempt, &resp);
            }
            hub_http_response_clear(&resp);
            continue;
        }
        hub_http_response_clear(&resp);
        if (!local)
            continue; /* complete */
        if (progressed)
            budget = cfg->max_retries; /* data came: a fresh budget, as huggingface_hub */
        if (!transient) {
            g_propagate_error(error, local); /* cancelled, disk full, TLS refused, ... */
            ok = FALSE;
            break;
        }
        if (budget <= 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                        "%s (%d attempt%s): the download of '%s' stopped at %" G_GUINT64_FORMAT
                        " of %" G_GUINT64_FORMAT " bytes; run again to resume it",
                        local->message, attempt, attempt == 1 ? "" : "s", t->path, have, meta->size);
            g_error_free(local);
            ok = FALSE;
            break;
        }
        g_debug("%s; resuming at byte %" G_GUINT64_FORMAT, local->message, have);
        g_clear_error(&local);
        budget--;
        hub_http_backoff(hub, progressed ? 1 : attempt, NULL);
    }

    if (ok && have != meta->size) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "GET %s: received %" G_GUINT64_FORMAT
                    " bytes of '%s', the Hub announced %" G_GUINT64_FORMAT
                    ": run again to download it afresh",
                    meta->url, have, t->path, meta->size);
        g_unlink(incomplete);
        ok = FALSE;
    }
    if (ok && sum && strcmp(g_checksum_get_string(sum), meta->etag) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "GET %s: the %s of the received '%s' is %s, its ETag says %s: the transfer "
                    "was corrupted (the partial file was deleted; run again)",
                    meta->url, algo, t->path, g_checksum_get_string(sum), meta->etag);
        g_unlink(incomplete);
        ok = FALSE;
    }
    if (ok && fdatasync(fd) != 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot flush %s: %s", incomplete, g_strerror(e));
        ok = FALSE;
    }
    if (sum)
        g_checksum_free(sum);
    close(fd);
    if (ok && g_rename(incomplete, dest) != 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot move %s to %s: %s", incomplete, dest,
                    g_strerror(e));
        ok = FALSE;
    }
    return ok;
}

/* Cache mode, metadata known: blob (downloaded under its lock when absent) + pointer + ref. */
static char *fetch_to_cache(rt_hub *hub, const hub_target *t, const char *cache_dir, const char *storage,
                            const char *revision, const file_meta *meta, GError **error)
{
    char *pointer = hub_pointer_path(storage, meta->commit, t->path);
    if (!hub_write_ref(storage, revision, meta->commit, error))
        goto fail;
    if (g_file_test(pointer, G_FILE_TEST_EXISTS))
        return pointer;

    char *blobs = g_build_filename(storage, "blobs", NULL);
    char *blob = g_build_filename(blobs, meta->etag, NULL);
    char *incomplete = g_strconcat(blob, ".incomplete", NULL);
    char *folder = g_path_get_basename(storage);
    char *lock_name = g_strconcat(meta->etag, ".lock", NULL);
    char *lock_path = g_build_filename(cache_dir, ".locks", folder, lock_name, NULL);
    gboolean ok = FALSE;
    int lock = hub_lock(lock_path, error);
    if (lock >= 0) {
        ok = g_file_test(blob, G_FILE_TEST_IS_REGULAR) || download_to(hub, t, meta, incomplete, blob, error);
        ok = ok && hub_link_pointer(blob, pointer, error);
        hub_unlock(lock);
    }
    g_free(lock_path);
    g_free(lock_name);
    g_free(folder);
    g_free(incomplete);
    g_free(blob);
    g_free(blobs);
    if (ok)
        return pointer;
fail:
    g_free(pointer);
    return NULL;
}

/* ---- local-folder mode (<dir>/.cache/huggingface/download/<path>.metadata) ------------- */

typedef struct local_meta {
    char *commit;
    char *etag;
} local_meta;

static char *local_meta_path(const char *local_dir, const char *path, const char *suffix)
{
    char *name = g_strconcat(path, suffix, NULL);
    char *p = g_build_filename(local_dir, ".cache", "huggingface", "download", name, NULL);
    g_free(name);
    return p;
}

/* The metadata of a local file, when it is still valid (the file not modified since). */
static gboolean read_local_meta(const char *local_dir, const char *path, local_meta *out)
{
    char *meta_path = local_meta_path(local_dir, path, ".metadata");
    char *file = g_build_filename(local_dir, path, NULL);
    char *contents = NULL;
    gboolean ok = FALSE;
    GStatBuf st;
    if (g_file_get_contents(meta_path, &contents, NULL, NULL) && g_stat(file, &st) == 0) {
        char **lines = g_strsplit(contents, "\n", 4);
        if (g_strv_length(lines) >= 3) {
            double stamp = g_ascii_strtod(g_strstrip(lines[2]), NULL);
            if ((double)st.st_mtime - 1 <= stamp) {
                out->commit = g_strdup(g_strstrip(lines[0]));
                out->etag = g_strdup(g_strstrip(lines[1]));
                ok = TRUE;
            }
        }
        g_strfreev(lines);
    }
    g_free(contents);
    g_free(file);
    g_free(meta_path);
    return ok;
}

static gboolean write_local_meta(const char *local_dir, const char *path, const char *commit,
                                 const char *etag, GError **error)
{
    char *meta_path = local_meta_path(local_dir, path, ".metadata");
    char stamp[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_dtostr(stamp, sizeof stamp, (double)g_get_real_time() / G_USEC_PER_SEC);
    char *text = g_strdup_printf("%s\n%s\n%s\n", commit, etag, stamp);
    gboolean ok = hub_write_atomic(meta_path, text, strlen(text), error);
    g_free(text);
    g_free(meta_path);
    /* huggingface_hub keeps its bookkeeping out of git */
    char *ignore = g_build_filename(local_dir, ".cache", "huggingface", ".gitignore", NULL);
    if (ok && !g_file_test(ignore, G_FILE_TEST_EXISTS))
        ok = hub_write_atomic(ignore, "*", 1, error);
    g_free(ignore);
    return ok;
}

static char *fetch_to_local_dir(rt_hub *hub, const hub_target *t, const char *storage, const char *local_dir,
                                const file_meta *meta, GError **error)
{
    char *file = g_build_filename(local_dir, t->path, NULL);
    local_meta lm = {0};
    gboolean have_meta = read_local_meta(local_dir, t->path, &lm);
    gboolean done = FALSE, ok = TRUE;

    if (g_file_test(file, G_FILE_TEST_IS_REGULAR)) {
        if (have_meta && strcmp(lm.etag, meta->etag) == 0) {
            done = TRUE;
        } else if (!have_meta && hub_is_hex(meta->etag, 64)) {
            char *sha = hub_file_sha256(file, NULL);
            done = sha && strcmp(sha, meta->etag) == 0;
            g_free(sha);
        }
    }
    if (!done) {
        char *lock_path = local_meta_path(local_dir, t->path, ".lock");
        int lock = hub_lock(lock_path, error);
        ok = lock >= 0;
        if (ok) {
            char *cached = hub_pointer_path(storage, meta->commit, t->path);
            if (g_file_test(cached, G_FILE_TEST_IS_REGULAR)) {
                GFile *src = g_file_new_for_path(cached), *dst = g_file_new_for_path(file);
                GError *local = NULL;
                ok = hub_make_parents(file, error) &&
                     g_file_copy(src, dst, G_FILE_COPY_OVERWRITE, NULL, NULL, NULL, &local);
                if (local) {
                    g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot copy %s to %s: %s", cached, file,
                                local->message);
                    g_error_free(local);
                }
                g_object_unref(src);
                g_object_unref(dst);
            } else {
                char *base = g_path_get_basename(t->path);
                char *dir = g_path_get_dirname(lock_path);
                char *name = g_strdup_printf("%s.%s.incomplete", base, meta->etag);
                char *incomplete = g_build_filename(dir, name, NULL);
                ok = download_to(hub, t, meta, incomplete, file, error);
                g_free(incomplete);
                g_free(name);
                g_free(dir);
                g_free(base);
            }
            g_free(cached);
            hub_unlock(lock);
        }
        g_free(lock_path);
    }
    ok = ok && write_local_meta(local_dir, t->path, meta->commit, meta->etag, error);
    g_free(lm.commit);
    g_free(lm.etag);
    if (!ok)
        g_clear_pointer(&file, g_free);
    return file;
}

char *hub_fetch_file(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                     const char *commit, const char *path, const char *cache_dir, const char *local_dir,
                     GError **error)
{
    char *storage = hub_storage_folder(cache_dir, type, repo_id);
    hub_target t = {type, repo_id, commit, path};
    file_meta meta = {0};
    hub_failure how;
    char *result = NULL;

    if (local_dir) {
        char *file = g_build_filename(local_dir, path, NULL);
        local_meta lm = {0};
        if (g_file_test(file, G_FILE_TEST_IS_REGULAR) && read_local_meta(local_dir, path, &lm) &&
            strcmp(lm.commit, commit) == 0)
            result = g_strdup(file);
        g_free(lm.commit);
        g_free(lm.etag);
        g_free(file);
    } else {
        char *pointer = hub_pointer_path(storage, commit, path);
        if (g_file_test(pointer, G_FILE_TEST_EXISTS))
            result = g_steal_pointer(&pointer);
        g_free(pointer);
    }
    if (!result && head_file(hub, &t, storage, hub->config->max_retries, &meta, &how, error)) {
        result = local_dir ? fetch_to_local_dir(hub, &t, storage, local_dir, &meta, error)
                           : fetch_to_cache(hub, &t, cache_dir, storage, revision, &meta, error);
    }
    file_meta_clear(&meta);
    g_free(storage);
    return result;
}

/* The cached copy of path at revision (a commit, or refs/<revision>), or NULL. *known_absent:
 * .no_exist says the file is not in that commit. */
static char *cached_file(const char *storage, const char *revision, const char *path, gboolean *known_absent)
{
    char *commit = rt_hub_is_commit_sha(revision) ? g_strdup(revision) : hub_read_ref(storage, revision);
    char *found = NULL;
    *known_absent = FALSE;
    if (commit) {
        char *pointer = hub_pointer_path(storage, commit, path);
        if (g_file_test(pointer, G_FILE_TEST_EXISTS)) {
            found = pointer;
        } else {
            g_free(pointer);
            char *marker = g_build_filename(storage, ".no_exist", commit, path, NULL);
            *known_absent = g_file_test(marker, G_FILE_TEST_EXISTS);
            g_free(marker);
        }
    }
    g_free(commit);
    return found;
}

char *rt_hub_download_file(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                           const char *path, const char *cache_dir, GError **error)
{
    if (!revision)
        revision = "main";
    if (!rt_hub_check_repo_id(repo_id, error) || !hub_check_revision(revision, error) ||
        !hub_check_repo_path(path, error))
        return NULL;
    if (!cache_dir)
        cache_dir = hub->config->hub_cache;
    char *storage = hub_storage_folder(cache_dir, type, repo_id);
    hub_target t = {type, repo_id, revision, path};
    gboolean absent = FALSE;
    hub_failure how = HUB_FAIL_FINAL;
    file_meta meta = {0};
    char *result = NULL;
    GError *first = NULL;

    hub->progress_repo = repo_id;
    hub->progress_index = hub->progress_count = 1;
    if (rt_hub_is_commit_sha(revision) && (result = cached_file(storage, revision, path, &absent)))
        goto done;
    if (hub->config->offline) {
        result = cached_file(storage, revision, path, &absent);
        if (!result)
            hub_offline_error(
                error, hub, &t, storage,
                absent ? "the cache records that it does not exist there" : "HF_HUB_OFFLINE is set", 0);
        goto done;
    }
    /* First try without retries: when the Hub is down the cache answers at once. */
    if (!head_file(hub, &t, storage, 0, &meta, &how, &first)) {
        if (how != HUB_FAIL_FINAL && (result = cached_file(storage, revision, path, &absent))) {
            g_clear_error(&first);
            goto done;
        }
        if (how != HUB_FAIL_TRANSIENT) {
            g_propagate_error(error, first);
            goto done;
        }
        g_clear_error(&first);
        file_meta_clear(&meta);
        if (!head_file(hub, &t, storage, hub->config->max_retries, &meta, &how, error))
            goto done;
    }
    result = fetch_to_cache(hub, &t, cache_dir, storage, revision, &meta, error);
done:
    hub->progress_repo = NULL;
    file_meta_clear(&meta);
    g_free(storage);
    return result;
}
