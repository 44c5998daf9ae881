/* wandb-private.h: what the parts of the W&B client share (not for other code).
 *
 * wandb-config.c    settings + environment + ~/.netrc -> a resolved server and run description
 * wandb-history.c   history lines: formatting a row, the summary (last value of every key)
 * wandb-store.c     the run folder: run.json, wandb-history.jsonl, latest-run, the lock
 * wandb-http.c      one libcurl client per thread: POST JSON with auth, timeouts, abort
 * wandb-graphql.c   upsertBucket and viewer
 * wandb-stream.c    file_stream requests: history chunks at their line offsets, heartbeat, finish
 * wandb-run.c       the run: the queue, the sending thread, the public run API
 * wandb-artifact.c  artifacts: manifest and digest, the upload flow, its own thread
 * wandb-sync.c      sending a folder later
 *
 * Functions named rt_wandb_* here are internal but exported so that the unit tests can reach
 * them; they are not part of the installed API. */
#ifndef ROBOTRAIN_NET_WANDB_PRIVATE_H
#define ROBOTRAIN_NET_WANDB_PRIVATE_H

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/wandb.h>

G_BEGIN_DECLS

/* Members of a JSON object of the given type, or NULL (no warning) when absent or of another
 * type: answers from a server are not trusted to have the expected shape. o may be NULL. */
static inline JsonObject *wb_json_object(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n) : NULL;
}
static inline JsonArray *wb_json_array(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_ARRAY(n) ? json_node_get_array(n) : NULL;
}
static inline const char *wb_json_string(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
               ? json_node_get_string(n)
               : NULL;
}
static inline gboolean wb_json_true(JsonObject *o, const char *key)
{
    JsonNode *n = o ? json_object_get_member(o, key) : NULL;
    return n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_BOOLEAN &&
           json_node_get_boolean(n);
}

#define WB_DEFAULT_BASE_URL "https://api.wandb.ai"
#define WB_DEFAULT_PROJECT "lerobot"
#define WB_JOB_TYPE "train_eval"
#define WB_STATE_FILE "run.json"
#define WB_HISTORY_FILE "wandb-history.jsonl"
#define WB_LOCK_FILE ".lock"
#define WB_MAX_RESPONSE (16u << 20) /* bytes of a response body we accept */
#define WB_CHUNK_LINES 1000         /* history lines per request at most ... */
#define WB_CHUNK_BYTES (4u << 20)   /* ... and bytes (W&B splits requests above ~10 MB) */

/* ---------------------------------------------------------------- wandb-config.c */

/* Where requests go and how they authenticate. */
typedef struct wb_server {
    char *base_url;         /* scheme://host[:port][/path], no trailing '/' */
    char *host;             /* the URL's host, for ~/.netrc and the app URL */
    char *api_key;          /* secret: never put in a message; NULL when none was found */
    const char *key_origin; /* static words for messages: "WANDB_API_KEY", "~/.netrc", ... */
    guint request_timeout_ms;
    guint retry_min_ms, retry_max_ms;
} wb_server;

/* Resolves base URL and key from settings (may be NULL) and the environment. need_key: fail
 * when no key is found (RT_ERROR_INVALID_ARG, saying how to provide one). */
gboolean wb_server_resolve(wb_server *srv, const rt_wandb_settings *settings, gboolean need_key,
                           GError **error);
void wb_server_clear(wb_server *srv);

/* The effective mode: settings (enable FALSE = disabled), else WANDB_MODE, else online. */
gboolean wb_mode_resolve(const rt_wandb_settings *settings, rt_wandb_mode *mode, GError **error);

/* Checks a run id given by the user; what names the source ("--wandb.run_id"). */
gboolean wb_check_run_id(const char *id, const char *what, GError **error);

/* The password of host's entry (or of the "default" entry) in the text of a netrc file, or NULL.
 * Returns (transfer full) a string to g_free. */
char *rt_wandb_netrc_find(const char *text, const char *host);

/* 8 random lowercase letters and digits, like the W&B SDK's run ids.
 * Returns (transfer full) a string to g_free. */
char *rt_wandb_new_run_id(void);

/* The training config (a JSON object) in W&B's form: a JSON string whose top level maps each key
 * to {"value": v, "desc": null}. NULL or "" gives "{}". Fails (RT_ERROR_INVALID_ARG) when json is
 * not a JSON object. Returns (transfer full) a string to g_free. */
char *rt_wandb_config_to_wandb(const char *json, GError **error);

/* The page of a run: https://wandb.ai/... for the public server, else under base_url.
 * Returns (transfer full) a string to g_free. */
char *rt_wandb_run_url(const char *base_url, const char *entity, const char *project, const char *id);

/* ---------------------------------------------------------------- wandb-history.c */

/* The shortest text that reads back as the same double ("0.1", "1e-05", "200"); integral
 * values below 1e15 without exponent; NaN, Infinity, -Infinity. buf holds 32 bytes. */
const char *rt_wandb_format_number(double value, char buf[32]);

/* Appends text as a JSON string literal (quotes included, control characters escaped). */
void rt_wandb_append_json_string(GString *out, const char *text, gssize len);

/* One history row being built: values of one step. Buffers are kept when the row is reset, so a
 * reused row allocates nothing once it has grown. */
typedef struct rt_wandb_row {
    gint64 step;
    double timestamp; /* Unix seconds of the last value */
    double runtime;   /* seconds since the run started */
    GString *names;   /* each name followed by '\0' */
    GArray *offsets;  /* guint: where each name starts in names */
    GArray *values;   /* double, one per name */
} rt_wandb_row;

void rt_wandb_row_init(rt_wandb_row *row);
void rt_wandb_row_clear(rt_wandb_row *row);
void rt_wandb_row_reset(rt_wandb_row *row);
/* Sets name's value (replacing an earlier value of the same name). */
void rt_wandb_row_set(rt_wandb_row *row, const char *name, double value);
/* Appends the row as one JSON line with its newline: the values in the order they were first
 * set, then _step, _runtime, _timestamp. */
void rt_wandb_row_format(const rt_wandb_row *row, GString *out);

/* The run's summary: the last value of every key of the history (tokens kept as written). */
typedef struct rt_wandb_summary {
    GHashTable *index; /* raw key token -> position + 1 */
    GPtrArray *keys;   /* raw key tokens, quotes included, in order of first appearance */
    GPtrArray *values; /* raw value tokens */
} rt_wandb_summary;

void rt_wandb_summary_init(rt_wandb_summary *summary);
void rt_wandb_summary_clear(rt_wandb_summary *summary);
/* Merges one history line (a flat JSON object, as rt_wandb_row_format() writes: string keys,
 * values that are numbers, NaN/Infinity, strings, true, false or null). _timestamp is left out
 * of the summary. FALSE (summary unchanged) when the line is not such an object. */
gboolean rt_wandb_summary_merge(rt_wandb_summary *summary, const char *line, gsize len);
/* Appends the summary as one JSON object (no newline). */
void rt_wandb_summary_format(const rt_wandb_summary *summary, GString *out);
/* The raw value token of key (unquoted name, e.g. "_step"), or NULL. Returns (transfer none). */
const char *rt_wandb_summary_lookup(const rt_wandb_summary *summary, const char *key);

/* ---------------------------------------------------------------- wandb-store.c */

/* run.json: everything needed to create the run on the server later, and the sending progress. */
typedef struct wb_state {
    char *id; /* the run id (upsertBucket name) */
    char *project;
    char *entity;       /* NULL until known (given, or returned by the server) */
    char *storage_id;   /* bucket.id once the server created the run */
    char *display_name; /* may be NULL */
    char *notes;        /* may be NULL */
    char **tags;        /* may be NULL */
    char *config;       /* W&B-form config JSON string */
    char *host;
    rt_wandb_mode mode;  /* ONLINE or OFFLINE */
    gint64 history_base; /* server line number of the file's first line; -1: not known yet */
    gint64 history_sent; /* lines of the file the server acknowledged */
    double runtime;      /* _runtime at the end of the last session */
    gboolean finished;   /* the run ended; exitcode is valid */
    int exitcode;
    gboolean complete_sent; /* the server was told (complete/exitcode) */
} wb_state;

void wb_state_clear(wb_state *st);
/* Loads dir/run.json. RT_ERROR_NOT_FOUND when absent; RT_ERROR_FORMAT naming the file and key. */
gboolean wb_state_load(wb_state *st, const char *dir, GError **error);
/* Writes dir/run.json atomically. */
gboolean wb_state_save(const wb_state *st, const char *dir, GError **error);

/* dir/wandb-history.jsonl opened for appending; lines and bytes count complete lines (a line cut
 * by a crash is removed when the file is opened). */
typedef struct wb_history {
    char *path;
    int fd;
    gint64 lines;
    gint64 bytes;
} wb_history;

gboolean wb_history_open(wb_history *h, const char *dir, GError **error);
void wb_history_close(wb_history *h);
/* Appends whole lines (text ends with '\n'), counting them. */
gboolean wb_history_append(wb_history *h, const char *text, gsize len, GError **error);
/* The byte offset where line number `line` starts (0 <= line <= lines), by reading the file. */
gboolean wb_history_offset_of_line(const wb_history *h, gint64 line, gint64 *offset, GError **error);
/* Reads [offset, end) into buf (replacing its contents). */
gboolean wb_history_read(const wb_history *h, gint64 offset, gint64 end, GString *buf, GError **error);

/* Holds dir/.lock (an exclusive flock) until wb_folder_unlock(): another process using the
 * folder makes it fail with RT_ERROR_IO. Returns the descriptor, or -1. */
int wb_folder_lock(const char *dir, GError **error);
void wb_folder_unlock(int fd);

/* Points OUTPUT_DIR/wandb/latest-run at run-<id> (replacing the old link atomically). */
gboolean wb_set_latest_run(const char *wandb_dir, const char *id, GError **error);
/* The run id OUTPUT_DIR/wandb/latest-run names (its target run-<id>, or LeRobot's
 * latest-run/run-<id>.wandb), or NULL. Returns (transfer full) a string to g_free. */
char *wb_find_latest_run_id(const char *wandb_dir);

/* ---------------------------------------------------------------- wandb-http.c */

typedef enum {
    WB_OK,      /* 2xx */
    WB_RETRY,   /* refused, timed out, 429, 5xx: try again later */
    WB_AUTH,    /* 401 / 403: the key is wrong */
    WB_FATAL,   /* another answer that trying again will not change */
    WB_ABORTED, /* the abort flag was raised */
} wb_result;

typedef struct wb_http wb_http;

/* A client for one thread. srv is borrowed and must outlive it; abort_flag (may be NULL) is read
 * during transfers: when it becomes non-zero the request stops with WB_ABORTED.
 * Returns (transfer full): free with wb_http_free(). */
wb_http *wb_http_new(const wb_server *srv, const gint *abort_flag);
void wb_http_free(wb_http *http);

/* POSTs a JSON body to base_url + path. On WB_OK *reply (may be NULL) receives the body
 * (transfer full, g_free; NUL-terminated). Otherwise error says what failed, naming the URL; the
 * message of WB_AUTH tells how to fix the key. The key never appears in a message. */
wb_result wb_http_post(wb_http *http, const char *path, const char *body, gsize len, char **reply,
                       GError **error);

/* ---------------------------------------------------------------- wandb-graphql.c */

/* What upsertBucket returned. */
typedef struct wb_bucket {
    char *storage_id;
    char *name;
    char *project;
    char *entity;
    gint64 history_line_count;
    gboolean inserted;
} wb_bucket;

void wb_bucket_clear(wb_bucket *b);
/* Creates or updates the run st describes (its id, project, entity, names, notes, tags,
 * config; st->storage_id when known). */
/* POSTs request (a finished {"query", "variables"} object) to /graphql and returns the answer's
 * "data" object; *parser (transfer full, g_object_unref) owns it. An "errors" answer or one
 * without data is WB_FATAL with the message naming what; transport failures as wb_http_post. */
wb_result wb_graphql_send(wb_http *http, JsonBuilder *request, const char *what, JsonParser **parser,
                          JsonObject **data, GError **error);
wb_result wb_graphql_upsert_run(wb_http *http, const wb_state *st, wb_bucket *bucket, GError **error);
/* The key's default entity. */
wb_result wb_graphql_viewer(wb_http *http, char **entity, GError **error);

/* ---------------------------------------------------------------- wandb-stream.c */

/* The sending side of a run folder: which lines the server has. */
typedef struct wb_stream {
    wb_state *st;       /* borrowed */
    wb_history *hist;   /* borrowed */
    char *path;         /* /files/<entity>/<project>/<id>/file_stream, once the entity is known */
    gint64 send_offset; /* byte offset of line st->history_sent */
    rt_wandb_summary summary;
    GString *chunk, *body;
    gboolean stopped; /* the server said {"stopped": true} */
} wb_stream;

/* Prepares sending st's history hist: finds where the unsent lines start and rebuilds the summary
 * of the sent ones. */
gboolean wb_stream_init(wb_stream *s, wb_state *st, wb_history *hist, GError **error);
void wb_stream_clear(wb_stream *s);
/* After upsertBucket: takes the entity and storage id and lines up the file with the server's
 * history (server_lines = historyLineCount), so that lines the server has are not sent again. */
gboolean wb_stream_connected(wb_stream *s, const wb_bucket *bucket, GError **error);
/* Sends the next chunk of lines in [history_sent, lines) of the file (whose first `lines` lines
 * are complete; bytes is their end), with the summary. */
wb_result wb_stream_send_lines(wb_stream *s, wb_http *http, gint64 lines, gint64 bytes, GError **error);
/* An empty request (keeps the run alive in the interface). */
wb_result wb_stream_send_heartbeat(wb_stream *s, wb_http *http, GError **error);
/* The last request: complete, with st->exitcode. */
wb_result wb_stream_send_finish(wb_stream *s, wb_http *http, GError **error);

/* The folder of a run, OUTPUT_DIR/wandb/run-<id>. Returns (transfer full). */
char *wb_run_dir(const char *output_dir, const char *id);

/* The _step and _runtime of the file's last line (FALSE when it has none). */
gboolean wb_history_last_step(const wb_history *h, gint64 *step, double *runtime);

/* ---------------------------------------------------------------- wandb-artifact.c */

/* One file of an artifact. */
typedef struct rt_wandb_artifact_entry {
    char *name;              /* its path inside the artifact, e.g. "model.safetensors" */
    char *path;              /* where it is on disk */
    char *md5;               /* base64 of its MD5 (the manifest's "digest") */
    gint64 size;             /* bytes */
    char *birth_artifact_id; /* createArtifactFiles' artifact.id, or NULL */
} rt_wandb_artifact_entry;

/* The base64 MD5 and the size of a file, read in blocks. *b64_md5 is (transfer full). */
gboolean rt_wandb_file_md5(const char *path, char **b64_md5, gint64 *size, GError **error);
/* W&B's artifact digest (MANIFEST_MD5): the hex MD5 of "wandb-artifact-manifest-v1\n" followed by
 * "<name>:<base64 md5>\n" for each entry sorted by name. Returns (transfer full). */
char *rt_wandb_artifact_digest(const rt_wandb_artifact_entry *entries, size_t n);
/* The manifest (wandb_manifest.json): {"version": 1, "storagePolicy": "wandb-storage-policy-v1",
 * "storagePolicyConfig": {}, "contents": {name: {"digest", "birthArtifactID"?, "size"}}}, entries
 * sorted by name. Returns (transfer full). */
char *rt_wandb_artifact_manifest(const rt_wandb_artifact_entry *entries, size_t n);

/* The artifact uploader of a run: its own thread, one artifact at a time. srv is borrowed and
 * must outlive it; run_dir receives each artifact's manifest. Returns (transfer full). */
typedef struct wb_artifacts wb_artifacts;
wb_artifacts *wb_artifacts_new(const wb_server *srv, const char *run_dir, GError **error);
/* Queues an artifact of paths (NULL-terminated; names: their names in the artifact, NULL for
 * their base names). entity NULL: the key's default entity (asked with viewer). Checks the name
 * and that the files exist; never waits for the network. */
gboolean wb_artifacts_push(wb_artifacts *a, const char *entity, const char *project, const char *run_id,
                           const char *name, const char *type, const char *const *aliases,
                           const char *const *paths, const char *const *names, GError **error);
/* Waits until every queued artifact is done or deadline (monotonic) passed; returns how many are
 * left. */
guint wb_artifacts_wait(wb_artifacts *a, gint64 deadline);
void wb_artifacts_get_stats(wb_artifacts *a, rt_wandb_artifact_stats *stats);
/* Stops (an upload in progress within about a second; queued ones are dropped) and frees. */
void wb_artifacts_free(wb_artifacts *a);

G_END_DECLS

#endif
