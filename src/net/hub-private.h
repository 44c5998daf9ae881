/* src/net/hub-private.h: what the files of the Hub client share (not installed). */
#ifndef ROBOTRAIN_NET_HUB_PRIVATE_H
#define ROBOTRAIN_NET_HUB_PRIVATE_H

#include <curl/curl.h>
#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/hub.h>

/* Largest JSON answer kept in memory (a tree page, repo info, a batch answer). */
#define HUB_MAX_JSON_BYTES (64u << 20)

struct rt_hub {
    rt_hub_config *config;
    CURL *curl; /* reused between requests (keeps connections alive) */
    rt_hub_progress_func progress;
    void *progress_data;
    guint n_requests;
    /* the file being transferred, for progress reports */
    const char *progress_repo;
    guint progress_index, progress_count;
    rt_hub_repo_type push_type; /* of the push under way, for messages */
};

/* ---- hub-http.c ---------------------------------------------------------------------- */

/* curl_global_init, once per process (a GOnce). */
#include "net/net-init.h" /* rt_net_global_init: libcurl's once-per-process setup */

typedef struct hub_http_request {
    const char *method; /* "GET", "HEAD", "POST", "PUT" */
    const char *url;
    gboolean auth;              /* send Authorization: Bearer <token> (when there is one) */
    gboolean follow;            /* follow redirects */
    gboolean lfs_json;          /* Accept + Content-Type: application/vnd.git-lfs+json */
    const char *content_type;   /* of the request body; NULL: none */
    const char *const *headers; /* more "Name: value" lines, NULL-terminated; may be NULL */
    const void *body;           /* request body from memory (body_len bytes), or */
    size_t body_len;
    int upload_fd;         /* >= 0: the body is upload_len bytes of this file from */
    goffset upload_offset; /* upload_offset (read with pread) */
    goffset upload_len;
    int sink_fd;         /* >= 0: a 2xx body is appended to this file, else memory */
    GChecksum *sink_sum; /* fed with the bytes appended to sink_fd (may be NULL) */
    guint64 range_from;  /* > 0: "Range: bytes=<range_from>-" is sent; a 200 answer
                            (range ignored) truncates sink_fd, resets sink_sum and
                            feeds it sum_prefix first; a 206 must start there */
    const void *sum_prefix;
    gsize sum_prefix_len;
    gboolean metadata;         /* whole request limited to etag_timeout_s */
    const char *progress_path; /* report progress for this repository file */
    guint64 progress_base;     /* bytes of the file done before this request */
    guint64 progress_total;
} hub_http_request;

/* Fills the fields every request has: sink_fd = upload_fd = -1. */
void hub_http_request_init(hub_http_request *request, const char *method, const char *url);

typedef struct hub_http_response {
    long status;         /* 0 when no answer came */
    GHashTable *headers; /* lower-case name -> value (of the last response when redirected) */
    GByteArray *body;    /* memory bodies (also error bodies when sink_fd is set), capped */
    guint64 sunk;        /* bytes appended to sink_fd */
    gboolean restarted;  /* a ranged request got the whole file: sink_fd starts at 0 */
    char *effective_url;
} hub_http_response;

void hub_http_response_init(hub_http_response *response);
void hub_http_response_clear(hub_http_response *response);
/* A header of the answer (lower-case name), or NULL. */
const char *hub_http_header(const hub_http_response *response, const char *name);

/* One attempt. FALSE when no HTTP answer came (connection, timeout, cut-off body, write error,
 * cancel): error says so and *transient says whether trying again may help. Any HTTP status
 * returns TRUE. */
gboolean hub_http_once(rt_hub *hub, const hub_http_request *request, hub_http_response *response,
                       gboolean *transient, GError **error);
/* Attempts until an answer whose status is not retryable, or max_retries more attempts were
 * made (with back-off between them). FALSE only for a transport failure on the last attempt;
 * a final retryable status returns TRUE with that status. *attempts (may be NULL) receives the
 * number of attempts made. Memory bodies only (sink_fd < 0). */
gboolean hub_http_perform(rt_hub *hub, const hub_http_request *request, hub_http_response *response,
                          int max_retries, int *attempts, GError **error);
/* 408, 429, 500, 502, 503, 504 */
gboolean hub_http_status_retryable(long status);
/* Sleeps before attempt number attempt + 1 (attempt >= 1): Retry-After of response when it has
 * one (capped at 300 s), else retry_base_s * 2^(attempt-1) capped at retry_max_s. */
void hub_http_backoff(rt_hub *hub, int attempt, const hub_http_response *response);

/* ---- hub-errors.c -------------------------------------------------------------------- */

/* What a request was about, for messages. Any field may be NULL. */
typedef struct hub_target {
    rt_hub_repo_type type;
    const char *repo_id;
    const char *revision;
    const char *path;
} hub_target;

/* Sets error for an answer that is not 2xx: 401/403 (token, gated), 404 (which name is wrong,
 * from X-Error-Code), 5xx (after attempts), others; the code is RT_ERROR_NOT_FOUND for 404 and
 * RT_ERROR_NETWORK else. */
void hub_status_error(GError **error, const rt_hub *hub, const hub_http_response *response,
                      const char *method, const char *url, const hub_target *target, int attempts);
/* Prefixes a transport error with what could not be done and how to go offline. */
void hub_transport_error(GError **error, GError *cause, const rt_hub *hub, const hub_target *target,
                         int attempts);
/* The offline miss: the file (or revision, when path is NULL) is not cached; n_more other files
 * are missing too. */
void hub_offline_error(GError **error, const rt_hub *hub, const hub_target *target, const char *cache_folder,
                       const char *why, guint n_more);
/* "dataset 'lerobot/pusht'" (transfer full). */
char *hub_describe_repo(rt_hub_repo_type type, const char *repo_id);
/* {endpoint}/{prefix}{repo_id} (transfer full). */
char *hub_repo_url(const rt_hub *hub, rt_hub_repo_type type, const char *repo_id);

/* ---- hub-api.c: URLs and JSON --------------------------------------------------------- */

const char *hub_url_prefix(rt_hub_repo_type type); /* "", "datasets/", "spaces/" */
/* A revision percent-encoded with no safe characters (refs/pr/1 -> refs%2Fpr%2F1). */
char *hub_quote_revision(const char *revision);
/* A repository path percent-encoded keeping '/'. */
char *hub_quote_path(const char *path);
/* Checks revision: non-empty, no "..", no empty or '.' component, no leading '/', no control
 * characters (it becomes a folder under refs/). */
gboolean hub_check_revision(const char *revision, GError **error);
/* Checks a file path of a repository: relative, no "..", no empty component. */
gboolean hub_check_repo_path(const char *path, GError **error);

/* GET/POST returning parsed JSON (retried). On a non-2xx status the error is set with target.
 * Returns (transfer full) the root node: json_node_unref(). link_next (may be NULL) receives the
 * rel="next" URL of a Link header (transfer full) or NULL. status_out (may be NULL) gets the
 * final status; with allow_status non-zero that status is also returned (the node then may be
 * NULL) without error. */
JsonNode *hub_api_json(rt_hub *hub, const char *method, const char *url, const char *body, size_t body_len,
                       const char *content_type, gboolean lfs_json, int max_retries, const hub_target *target,
                       long allow_status, long *status_out, char **link_next, GError **error);
/* The rel="next" target of a Link header value, or NULL (transfer full). */
char *hub_link_next(const char *link);

/* How a request for metadata failed, which decides what to try next. */
typedef enum hub_failure {
    HUB_FAIL_FINAL,     /* 404, a malformed name: report it */
    HUB_FAIL_TRY_CACHE, /* 401/403, not a Hub: the cache may have it, else report it */
    HUB_FAIL_TRANSIENT, /* connection, timeout, 5xx/429: the cache, else try again */
} hub_failure;

/* Like rt_hub_resolve_revision but not falling back to the cache; *failure (may be NULL) says
 * how it failed. */
char *hub_fetch_commit(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                       int max_retries, hub_failure *failure, GError **error);

/* GET /api/<type>s/<repo>/refs with max_retries; *failure (may be NULL) says how it failed. */
rt_hub_refs *hub_list_refs(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, int max_retries,
                           hub_failure *failure, GError **error);

/* ---- hub-cache.c: the cache layout ----------------------------------------------------- */

/* <cache>/<type>s--owner--name (transfer full). */
char *hub_storage_folder(const char *cache_dir, rt_hub_repo_type type, const char *repo_id);
/* <storage>/snapshots/<commit>/<path> (transfer full). */
char *hub_pointer_path(const char *storage, const char *commit, const char *path);
/* The commit of refs/<revision> (transfer full), or NULL when absent. */
char *hub_read_ref(const char *storage, const char *revision);
/* Writes refs/<revision> = commit atomically when it differs; nothing when revision is the
 * commit itself. */
gboolean hub_write_ref(const char *storage, const char *revision, const char *commit, GError **error);
/* Points pointer at blob with a relative symlink (replacing what is there), copying the blob
 * where the file system has no symlinks. */
gboolean hub_link_pointer(const char *blob, const char *pointer, GError **error);
/* Creates the parents of path. */
gboolean hub_make_parents(const char *path, GError **error);
/* Writes contents to path through a temporary file and a rename. */
gboolean hub_write_atomic(const char *path, const void *contents, gsize len, GError **error);

/* trees/<commit>.json: the listing of a commit, as huggingface_hub writes it. */
GPtrArray *hub_read_tree_cache(const char *tree_folder, const char *commit);
gboolean hub_write_tree_cache(const char *tree_folder, const char *commit, const GPtrArray *entries,
                              GError **error);
/* Marks path as absent at commit (.no_exist/<commit>/<path>). Best effort. */
void hub_mark_no_exist(const char *storage, const char *commit, const char *path);

/* An exclusive flock on <cache>/.locks/<folder>/<name>.lock, shared with huggingface_hub.
 * Returns the descriptor to give to hub_unlock(), or -1 with error. */
int hub_lock(const char *lock_path, GError **error);
void hub_unlock(int fd);

/* Lower-case hex of the git blob sha1 / sha256 of a file (transfer full), NULL with error. */
char *hub_file_git_sha1(const char *path, guint64 *size_out, GError **error);
char *hub_file_sha256(const char *path, GError **error);
/* TRUE when s is exactly n lower-case hex digits. */
gboolean hub_is_hex(const char *s, size_t n);

/* ---- hub-download.c ------------------------------------------------------------------- */

/* Downloads one file known to exist at commit (from a listing) into the cache or local_dir
 * (exactly one of storage and local_dir is non-NULL). revision: what the user asked (refs/).
 * Returns (transfer full) the pointer or local path. */
char *hub_fetch_file(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                     const char *commit, const char *path, const char *cache_dir, const char *local_dir,
                     GError **error);

#endif
