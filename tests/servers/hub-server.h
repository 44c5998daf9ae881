/* tests/servers/hub-server.h: running tests/servers/hub-server.py (the loopback Hub stand-in)
 * from a C test, and reading what it received.
 *
 *   hub_server s;
 *   int rc = hub_server_start(&s, config_json);  0: running; 77: python3 missing; -1: failed
 *   ... s.endpoint is "http://127.0.0.1:<port>" ...
 *   hub_server_faults(&s, "[{\"match\": \"...\", \"status\": 500}]");
 *   GPtrArray *log = hub_server_log(&s);          JsonNode * per request, in order
 *   hub_server_stop(&s);                          the port then refuses connections
 *   hub_server_free(&s);                          also removes s.dir */
#ifndef ROBOTRAIN_TESTS_HUB_SERVER_H
#define ROBOTRAIN_TESTS_HUB_SERVER_H

#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "../testing.h"

typedef struct hub_server {
    char *dir; /* private temporary folder: config, log, port file, anything the test puts */
    char *config_path, *log_path, *port_path;
    GPid pid;
    gboolean running;
    int port, storage_port;
    char *endpoint;         /* http://127.0.0.1:<port> */
    char *storage_endpoint; /* the signed-URL host */
} hub_server;

static inline void hub_rm_rf(const char *path)
{
    GStatBuf st;
    if (g_lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        GDir *d = g_dir_open(path, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d)) != NULL) {
            char *child = g_build_filename(path, name, NULL);
            hub_rm_rf(child);
            g_free(child);
        }
        if (d)
            g_dir_close(d);
        g_chmod(path, 0755);
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

/* A fresh temporary folder for a test (transfer full; remove with hub_rm_rf). */
static inline char *hub_tmpdir(void)
{
    return g_dir_make_tmp("robotrain-hub-XXXXXX", NULL);
}

static inline char *hub_server_script(void)
{
    return rt_test_srcfile("servers/hub-server.py");
}

/* Servers still running when the test exits (a check failed and its test returned early). */
static GPid hub_server_pids[64];

static void hub_server_kill_all(void)
{
    for (guint i = 0; i < G_N_ELEMENTS(hub_server_pids); i++)
        if (hub_server_pids[i] > 0) {
            kill(hub_server_pids[i], SIGTERM);
            waitpid(hub_server_pids[i], NULL, 0);
            hub_server_pids[i] = 0;
        }
}

static void hub_server_track(GPid pid, gboolean add)
{
    static gboolean registered;
    if (!registered) {
        atexit(hub_server_kill_all);
        registered = TRUE;
    }
    for (guint i = 0; i < G_N_ELEMENTS(hub_server_pids); i++)
        if (add ? hub_server_pids[i] == 0 : hub_server_pids[i] == pid) {
            hub_server_pids[i] = add ? pid : 0;
            return;
        }
}

/* Writes config_json, starts the server and waits for its ports (up to 30 s). */
static inline int hub_server_start(hub_server *s, const char *config_json)
{
    memset(s, 0, sizeof *s);
    char *python = g_find_program_in_path("python3");
    if (!python) {
        printf("# python3 not found: the Hub tests need it for their local server\n");
        return 77;
    }
    s->dir = hub_tmpdir();
    s->config_path = g_build_filename(s->dir, "server-config.json", NULL);
    s->log_path = g_build_filename(s->dir, "server-log.jsonl", NULL);
    s->port_path = g_build_filename(s->dir, "server-ports", NULL);
    if (!s->dir || !g_file_set_contents(s->config_path, config_json, -1, NULL)) {
        printf("# cannot write the server configuration\n");
        g_free(python);
        return -1;
    }
    char *script = hub_server_script();
    char *argv[] = {python,        script,       "--config", s->config_path, "--log", s->log_path,
                    "--port-file", s->port_path, NULL};
    GError *err = NULL;
    gboolean ok = g_spawn_async(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &s->pid, &err);
    g_free(script);
    g_free(python);
    if (!ok) {
        printf("# cannot start the Hub stand-in: %s\n", err->message);
        g_error_free(err);
        return -1;
    }
    s->running = TRUE;
    hub_server_track(s->pid, TRUE);
    for (int i = 0; i < 3000; i++) {
        char *text = NULL;
        if (g_file_get_contents(s->port_path, &text, NULL, NULL) &&
            sscanf(text, "%d %d", &s->port, &s->storage_port) == 2) {
            g_free(text);
            s->endpoint = g_strdup_printf("http://127.0.0.1:%d", s->port);
            s->storage_endpoint = g_strdup_printf("http://127.0.0.1:%d", s->storage_port);
            return 0;
        }
        g_free(text);
        int status = 0;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->running = FALSE;
            hub_server_track(s->pid, FALSE);
            printf("# the Hub stand-in exited before listening (status %d)\n", status);
            return -1;
        }
        g_usleep(10 * 1000);
    }
    printf("# the Hub stand-in did not write its ports in 30 s\n");
    return -1;
}

static inline void hub_server_stop(hub_server *s)
{
    if (!s->running)
        return;
    kill(s->pid, SIGTERM);
    int status = 0;
    for (int i = 0; i < 500; i++) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid)
            break;
        if (i == 499) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
        g_usleep(10 * 1000);
    }
    g_spawn_close_pid(s->pid);
    hub_server_track(s->pid, FALSE);
    s->running = FALSE;
}

static inline void hub_server_free(hub_server *s)
{
    hub_server_stop(s);
    if (s->dir)
        hub_rm_rf(s->dir);
    g_free(s->dir);
    g_free(s->config_path);
    g_free(s->log_path);
    g_free(s->port_path);
    g_free(s->endpoint);
    g_free(s->storage_endpoint);
    memset(s, 0, sizeof *s);
}

static size_t hub_server_sink(char *p, size_t size, size_t n, void *user)
{
    g_byte_array_append(user, (const guint8 *)p, (guint)(size * n));
    return size * n;
}

/* A control request; returns the HTTP status (0: no answer). body may be NULL (POST empty). */
static inline long hub_server_control(hub_server *s, const char *path, const char *body)
{
    CURL *c = curl_easy_init();
    char *url = g_strconcat(s->endpoint, path, NULL);
    GByteArray *answer = g_byte_array_new();
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hub_server_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    g_byte_array_unref(answer);
    g_free(url);
    return status;
}

static inline gboolean hub_server_faults(hub_server *s, const char *rules_json)
{
    return hub_server_control(s, "/_control/faults", rules_json) == 200;
}

/* Forgets the faults and empties the log. */
static inline gboolean hub_server_reset(hub_server *s)
{
    return hub_server_control(s, "/_control/reset", NULL) == 200;
}

/* A file of a repository as the stand-in stores it (transfer full), or NULL. */
static inline GBytes *hub_server_file(hub_server *s, const char *type, const char *repo, const char *rev,
                                      const char *path)
{
    char *q_repo = g_uri_escape_string(repo, NULL, FALSE);
    char *q_path = g_uri_escape_string(path, NULL, FALSE);
    char *url = g_strdup_printf("%s/_control/file?type=%s&repo=%s&rev=%s&path=%s", s->endpoint, type, q_repo,
                                rev, q_path);
    CURL *c = curl_easy_init();
    GByteArray *answer = g_byte_array_new();
    long status = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hub_server_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    g_free(url);
    g_free(q_path);
    g_free(q_repo);
    if (status != 200) {
        g_byte_array_unref(answer);
        return NULL;
    }
    return g_byte_array_free_to_bytes(answer);
}

/* The requests received so far (transfer full: an array of JsonNode * that frees them). */
static inline GPtrArray *hub_server_log(hub_server *s)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
    char *text = NULL;
    if (!g_file_get_contents(s->log_path, &text, NULL, NULL))
        return out;
    char **lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (!**l)
            continue;
        JsonParser *p = json_parser_new();
        if (json_parser_load_from_data(p, *l, -1, NULL))
            g_ptr_array_add(out, json_node_copy(json_parser_get_root(p)));
        g_object_unref(p);
    }
    g_strfreev(lines);
    g_free(text);
    return out;
}

static inline const char *hub_log_str(JsonNode *entry, const char *member)
{
    JsonObject *o = json_node_get_object(entry);
    return json_object_has_member(o, member) ? json_object_get_string_member(o, member) : NULL;
}

/* A request header (lower-case name), or NULL. */
static inline const char *hub_log_header(JsonNode *entry, const char *name)
{
    JsonObject *h = json_object_get_object_member(json_node_get_object(entry), "headers");
    return json_object_has_member(h, name) ? json_object_get_string_member(h, name) : NULL;
}

static inline gint64 hub_log_status(JsonNode *entry)
{
    return json_object_get_int_member(json_node_get_object(entry), "status");
}

/* The request body (transfer full). */
static inline GBytes *hub_log_body(JsonNode *entry)
{
    gsize len = 0;
    guchar *data = g_base64_decode(hub_log_str(entry, "body_b64"), &len);
    return g_bytes_new_take(data, len);
}

/* Does "METHOD path" of entry match the regex (and port, when not NULL)? */
static inline gboolean hub_log_matches(JsonNode *entry, const char *regex, const char *port)
{
    char *key = g_strdup_printf("%s %s", hub_log_str(entry, "method"), hub_log_str(entry, "path"));
    gboolean m =
        g_regex_match_simple(regex, key, 0, 0) && (!port || strcmp(port, hub_log_str(entry, "port")) == 0);
    g_free(key);
    return m;
}

static inline guint hub_log_count(GPtrArray *log, const char *regex, const char *port)
{
    guint n = 0;
    for (guint i = 0; i < log->len; i++)
        n += hub_log_matches(log->pdata[i], regex, port);
    return n;
}

/* The first (or, last = TRUE, the last) entry matching, or NULL (transfer none). */
static inline JsonNode *hub_log_find(GPtrArray *log, const char *regex, const char *port, gboolean last)
{
    JsonNode *found = NULL;
    for (guint i = 0; i < log->len; i++)
        if (hub_log_matches(log->pdata[i], regex, port)) {
            found = log->pdata[i];
            if (!last)
                break;
        }
    return found;
}

/* ---- fixture helpers ------------------------------------------------------------------ */

static inline gboolean hub_write(const char *dir, const char *rel, const void *data, gssize len)
{
    char *path = g_build_filename(dir, rel, NULL);
    char *parent = g_path_get_dirname(path);
    g_mkdir_with_parents(parent, 0755);
    gboolean ok = g_file_set_contents(path, data, len, NULL);
    g_free(parent);
    g_free(path);
    return ok;
}

/* Reproducible pseudo-random bytes (transfer full). */
static inline guint8 *hub_bytes(gsize n, guint32 seed)
{
    guint8 *b = g_malloc(n ? n : 1);
    GRand *r = g_rand_new_with_seed(seed);
    for (gsize i = 0; i < n; i++)
        b[i] = (guint8)g_rand_int_range(r, 0, 256);
    g_rand_free(r);
    return b;
}

static inline char *hub_sha256_hex(const void *data, gsize len)
{
    return g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, len);
}

/* git's blob id: sha1 of "blob <len>\0" + data (transfer full). */
static inline char *hub_git_sha1_hex(const void *data, gsize len)
{
    GChecksum *c = g_checksum_new(G_CHECKSUM_SHA1);
    char head[64];
    int n = g_snprintf(head, sizeof head, "blob %" G_GSIZE_FORMAT, len);
    g_checksum_update(c, (const guchar *)head, n + 1);
    g_checksum_update(c, data, (gssize)len);
    char *hex = g_strdup(g_checksum_get_string(c));
    g_checksum_free(c);
    return hex;
}

static inline GBytes *hub_read(const char *path)
{
    char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &data, &len, NULL))
        return NULL;
    return g_bytes_new_take(data, len);
}

static inline gboolean hub_same_bytes(GBytes *a, const void *data, gsize len)
{
    gsize n = 0;
    const void *p = a ? g_bytes_get_data(a, &n) : NULL;
    return a && n == len && (len == 0 || memcmp(p, data, len) == 0);
}

#endif
