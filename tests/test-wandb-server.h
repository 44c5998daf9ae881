/* test-wandb-server.h: helpers of the W&B tests: a private temporary folder, the stand-in server
 * tests/servers/wandb-server.py (started on 127.0.0.1, a free port), its records and state, and
 * a log writer that keeps the client's warnings for checks. */
#ifndef ROBOTRAIN_TEST_WANDB_SERVER_H
#define ROBOTRAIN_TEST_WANDB_SERVER_H

#include <errno.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include <robotrain/wandb.h>

/* ---------------------------------------------------------------- folders */

static inline void wbt_remove_tree(const char *path)
{
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
        GDir *d = g_dir_open(path, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
            char *child = g_build_filename(path, name, NULL);
            wbt_remove_tree(child);
            g_free(child);
        }
        if (d)
            g_dir_close(d);
        g_rmdir(path);
    } else {
        g_unlink(path);
    }
}

/* Lines of a text file (without their newlines); NULL when it cannot be read.
 * Returns (transfer full): g_strfreev(). */
/* A new empty folder name under root. Returns (transfer full) its path. */
static inline char *wbt_new_dir(const char *root, const char *name)
{
    char *dir = g_build_filename(root, name, NULL);
    wbt_remove_tree(dir);
    g_mkdir_with_parents(dir, 0755);
    return dir;
}

/* Settings for a run against url with key, its folder in out: short intervals so the tests are
 * quick; retries from 50 ms up to retry_max_ms. */
static inline void wbt_settings(rt_wandb_settings *s, const char *url, const char *out, const char *key,
                                unsigned retry_max_ms)
{
    rt_wandb_settings_init(s);
    s->base_url = url;
    s->api_key = key;
    s->output_dir = out;
    s->project = "proj";
    s->entity = "ent";
    s->mode = RT_WANDB_MODE_ONLINE;
    s->send_interval_ms = 0;
    s->heartbeat_ms = 60000;
    s->retry_min_ms = 50;
    s->retry_max_ms = retry_max_ms;
    s->request_timeout_ms = 5000;
}

static inline char **wbt_read_lines(const char *path)
{
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    size_t len = strlen(text);
    if (len && text[len - 1] == '\n')
        text[len - 1] = '\0';
    char **lines = len ? g_strsplit(text, "\n", -1) : g_new0(char *, 1);
    g_free(text);
    return lines;
}

static inline JsonNode *wbt_parse(const char *text)
{
    JsonParser *p = json_parser_new();
    JsonNode *n =
        json_parser_load_from_data(p, text, -1, NULL) ? json_node_copy(json_parser_get_root(p)) : NULL;
    g_object_unref(p);
    return n;
}

/* The environment, changed only while no run (and so no sending thread) exists; GLib's
 * g_setenv() warns as soon as any thread was ever created. */
static inline void wbt_setenv(const char *name, const char *value, gboolean overwrite)
{
    setenv(name, value, overwrite);
}

static inline void wbt_unsetenv(const char *name)
{
    unsetenv(name);
}

/* ---------------------------------------------------------------- captured warnings */

static GMutex wbt_log_lock;
static GString *wbt_log_text;

static inline GLogWriterOutput wbt_log_writer(GLogLevelFlags level, const GLogField *fields, gsize n,
                                              gpointer data)
{
    for (gsize i = 0; i < n; i++) {
        if (strcmp(fields[i].key, "MESSAGE") == 0) {
            g_mutex_lock(&wbt_log_lock);
            if (!wbt_log_text)
                wbt_log_text = g_string_new(NULL);
            g_string_append_printf(wbt_log_text, "%s\n", (const char *)fields[i].value);
            g_mutex_unlock(&wbt_log_lock);
            printf("# log: %s\n", (const char *)fields[i].value);
            fflush(stdout);
        }
    }
    return G_LOG_WRITER_HANDLED;
}

static inline void wbt_log_capture(void)
{
    g_log_set_writer_func(wbt_log_writer, NULL, NULL);
}

/* Whether a message logged since the last wbt_log_clear() contains text. */
static inline gboolean wbt_log_contains(const char *text)
{
    g_mutex_lock(&wbt_log_lock);
    gboolean found = wbt_log_text && strstr(wbt_log_text->str, text) != NULL;
    g_mutex_unlock(&wbt_log_lock);
    return found;
}

static inline void wbt_log_clear(void)
{
    g_mutex_lock(&wbt_log_lock);
    if (wbt_log_text)
        g_string_truncate(wbt_log_text, 0);
    g_mutex_unlock(&wbt_log_lock);
}

/* ---------------------------------------------------------------- the server */

/* Servers still running when the test exits early (a failed check) are stopped at exit. */
static GPid wbt_running[32];

static inline void wbt_stop_leftovers(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(wbt_running); i++) {
        if (wbt_running[i] > 0) {
            kill(wbt_running[i], SIGTERM);
            waitpid(wbt_running[i], NULL, 0);
            wbt_running[i] = 0;
        }
    }
}

static inline void wbt_track(GPid pid, gboolean running)
{
    static gboolean registered;
    if (!registered) {
        atexit(wbt_stop_leftovers);
        registered = TRUE;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(wbt_running); i++) {
        if (running ? wbt_running[i] == 0 : wbt_running[i] == pid) {
            wbt_running[i] = running ? pid : 0;
            return;
        }
    }
}

typedef struct {
    GPid pid;
    int port;
    char *dir; /* holds the server's files */
    char *record, *state, *control, *port_file;
    char *url; /* http://127.0.0.1:PORT */
} wbt_server;

/* Starts the server with extra arguments (NULL-terminated; may be NULL); waits until it has a
 * port. FALSE (and a message) when it does not start: a test failure, not a skip. */
static inline gboolean wbt_server_start(wbt_server *s, const char *dir, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    s->dir = g_build_filename(dir, "server", NULL);
    g_mkdir_with_parents(s->dir, 0755);
    s->record = g_build_filename(s->dir, "requests.jsonl", NULL);
    s->state = g_build_filename(s->dir, "state.json", NULL);
    s->control = g_build_filename(s->dir, "control.json", NULL);
    s->port_file = g_build_filename(s->dir, "port", NULL);
    g_unlink(s->port_file);
    char *script = rt_test_srcfile("servers/wandb-server.py");
    GPtrArray *argv = g_ptr_array_new();
    const char *fixed[] = {"python3", script,   "--port-file", s->port_file, "--record", s->record,
                           "--state", s->state, "--control",   s->control,   NULL};
    for (size_t i = 0; fixed[i]; i++)
        g_ptr_array_add(argv, (gpointer)fixed[i]);
    for (size_t i = 0; extra && extra[i]; i++)
        g_ptr_array_add(argv, (gpointer)extra[i]);
    g_ptr_array_add(argv, NULL);
    GError *err = NULL;
    gboolean ok = g_spawn_async(NULL, (char **)argv->pdata, NULL,
                                G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &s->pid, &err);
    g_ptr_array_free(argv, TRUE);
    g_free(script);
    if (!ok) {
        printf("# cannot start python3 tests/servers/wandb-server.py: %s\n", err->message);
        g_error_free(err);
        return FALSE;
    }
    wbt_track(s->pid, TRUE);
    for (int i = 0; i < 300; i++) { /* 15 s */
        char *text = NULL;
        if (g_file_get_contents(s->port_file, &text, NULL, NULL)) {
            s->port = atoi(text);
            g_free(text);
            s->url = g_strdup_printf("http://127.0.0.1:%d", s->port);
            return s->port > 0;
        }
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            printf("# the W&B test server exited at start (status %d)\n", status);
            wbt_track(s->pid, FALSE);
            s->pid = 0;
            return FALSE;
        }
        g_usleep(50000);
    }
    printf("# the W&B test server did not write its port within 15 s\n");
    return FALSE;
}

static inline void wbt_server_stop(wbt_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        int status;
        waitpid(s->pid, &status, 0);
        wbt_track(s->pid, FALSE);
        g_spawn_close_pid(s->pid);
    }
    g_free(s->dir);
    g_free(s->record);
    g_free(s->state);
    g_free(s->control);
    g_free(s->port_file);
    g_free(s->url);
    memset(s, 0, sizeof *s);
}

/* Rewrites the control file (a JSON object such as {"down": true}). */
static inline void wbt_server_control(wbt_server *s, const char *json)
{
    char *tmp = g_strconcat(s->control, ".tmp", NULL);
    g_file_set_contents(tmp, json, -1, NULL);
    g_rename(tmp, s->control);
    g_free(tmp);
    g_usleep(150000); /* the server looks every 50 ms */
}

/* The requests received so far, one parsed JSON object each.
 * Returns (transfer full): g_ptr_array_unref() (elements are JsonNode, freed with it). */
static inline GPtrArray *wbt_server_records(wbt_server *s)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
    char **lines = wbt_read_lines(s->record);
    for (size_t i = 0; lines && lines[i]; i++) {
        JsonNode *n = wbt_parse(lines[i]);
        if (n)
            g_ptr_array_add(out, n);
    }
    g_strfreev(lines);
    return out;
}

/* The server's run "entity/project/name" (a copy of its state), or NULL.
 * Returns (transfer full): json_node_unref(). */
static inline JsonNode *wbt_server_run(wbt_server *s, const char *key)
{
    char *text = NULL;
    if (!g_file_get_contents(s->state, &text, NULL, NULL))
        return NULL;
    JsonNode *root = wbt_parse(text);
    g_free(text);
    JsonNode *run = NULL;
    if (root && JSON_NODE_HOLDS_OBJECT(root)) {
        JsonObject *runs = json_object_get_object_member(json_node_get_object(root), "runs");
        if (runs && json_object_has_member(runs, key))
            run = json_node_copy(json_object_get_member(runs, key));
    }
    if (root)
        json_node_unref(root);
    return run;
}

static inline gint64 wbt_run_int(JsonNode *run, const char *member)
{
    return run ? json_object_get_int_member_with_default(json_node_get_object(run), member, -1) : -1;
}

static inline guint wbt_run_history_length(JsonNode *run)
{
    JsonArray *h = run ? json_object_get_array_member(json_node_get_object(run), "history") : NULL;
    return h ? json_array_get_length(h) : 0;
}

/* Waits (up to timeout_ms) until run key holds at least n history lines; returns the count. */
static inline guint wbt_wait_lines(wbt_server *s, const char *key, guint n, guint timeout_ms)
{
    guint have = 0;
    for (guint waited = 0;; waited += 20) {
        JsonNode *run = wbt_server_run(s, key);
        have = wbt_run_history_length(run);
        if (run)
            json_node_unref(run);
        if (have >= n || waited >= timeout_ms)
            return have;
        g_usleep(20000);
    }
}

#endif
