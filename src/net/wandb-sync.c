/* Sending run folders later (`robotrain wandb sync DIR`): runs written offline, or whose lines
 * were left behind by an outage. The run is created or updated with the folder's saved settings;
 * the server's history line count and the folder's record of acknowledged lines decide where
 * sending starts, so running it twice sends nothing twice. */
#include "config.h"

#include <string.h>

#include "net/wandb-private.h"

/* Runs one request until it succeeds, retrying transient failures a few times with backoff. */
typedef wb_result (*request_fn)(wb_stream *s, wb_http *http, gint64 lines, gint64 bytes, GError **error);

static wb_result with_retries(const wb_server *srv, wb_stream *s, wb_http *http, request_fn fn, gint64 lines,
                              gint64 bytes, GError **error)
{
    guint wait_ms = srv->retry_min_ms;
    for (int attempt = 1;; attempt++) {
        GError *err = NULL;
        wb_result r = fn(s, http, lines, bytes, &err);
        if (r != WB_RETRY || attempt == 5) {
            if (err)
                g_propagate_error(error, err);
            return r;
        }
        g_message("%s; trying again in %.1f s", err->message, wait_ms / 1000.0);
        g_error_free(err);
        g_usleep((gulong)wait_ms * 1000);
        wait_ms = MIN(wait_ms * 2, srv->retry_max_ms);
    }
}

static wb_result upsert_fn(wb_stream *s, wb_http *http, gint64 lines, gint64 bytes, GError **error)
{
    wb_bucket bucket;
    wb_result r = wb_graphql_upsert_run(http, s->st, &bucket, error);
    if (r == WB_OK && !wb_stream_connected(s, &bucket, error))
        r = WB_FATAL;
    wb_bucket_clear(&bucket);
    return r;
}

static wb_result finish_fn(wb_stream *s, wb_http *http, gint64 lines, gint64 bytes, GError **error)
{
    return wb_stream_send_finish(s, http, error);
}

/* *sent: whether the folder had anything the server lacked. */
static gboolean sync_one(const char *dir, const wb_server *srv, gboolean *sent, GError **error)
{
    *sent = FALSE;
    int lock = wb_folder_lock(dir, error);
    if (lock < 0)
        return FALSE;
    wb_state st;
    wb_history hist = {.fd = -1};
    wb_stream stream = {0};
    wb_http *http = NULL;
    gboolean ok = wb_state_load(&st, dir, error);
    if (!ok)
        goto out_unlock;
    ok = wb_history_open(&hist, dir, error) && wb_stream_init(&stream, &st, &hist, error);
    if (!ok)
        goto out;
    if (st.storage_id && st.history_sent == hist.lines && (!st.finished || st.complete_sent))
        goto out; /* the server has it all */
    *sent = TRUE;
    http = wb_http_new(srv, NULL);
    ok = with_retries(srv, &stream, http, upsert_fn, 0, 0, error) == WB_OK && wb_state_save(&st, dir, error);
    while (ok && st.history_sent < hist.lines)
        ok = with_retries(srv, &stream, http, wb_stream_send_lines, hist.lines, hist.bytes, error) == WB_OK &&
             wb_state_save(&st, dir, error);
    if (ok && st.finished && !st.complete_sent)
        ok = with_retries(srv, &stream, http, finish_fn, 0, 0, error) == WB_OK &&
             wb_state_save(&st, dir, error);
out:
    wb_http_free(http);
    wb_stream_clear(&stream);
    if (hist.path)
        wb_history_close(&hist);
    wb_state_clear(&st);
out_unlock:
    wb_folder_unlock(lock);
    if (!ok)
        g_prefix_error(error, "cannot sync the W&B run folder %s (run it again later to continue): ", dir);
    return ok;
}

static gboolean is_run_dir(const char *dir)
{
    g_autofree char *state = g_build_filename(dir, WB_STATE_FILE, NULL);
    return g_file_test(state, G_FILE_TEST_IS_REGULAR);
}

static gint compare_paths(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The run-* folders (holding run.json) directly in dir, sorted by name. */
static void collect_runs(const char *dir, GPtrArray *out)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    g_autoptr(GPtrArray) found = g_ptr_array_new_with_free_func(g_free);
    while (d && (name = g_dir_read_name(d))) {
        if (!g_str_has_prefix(name, "run-"))
            continue;
        char *path = g_build_filename(dir, name, NULL);
        if (is_run_dir(path) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK))
            g_ptr_array_add(found, path);
        else
            g_free(path);
    }
    g_ptr_array_sort(found, compare_paths);
    for (guint i = 0; i < found->len; i++)
        g_ptr_array_add(out, g_strdup(found->pdata[i]));
}

gboolean rt_wandb_sync(const char *dir, const rt_wandb_settings *settings, guint *n_synced, GError **error)
{
    g_return_val_if_fail(dir != NULL, FALSE);
    if (n_synced)
        *n_synced = 0;
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s is not a folder: give a W&B run folder "
                    "(OUTPUT_DIR/wandb/run-ID) or a folder holding them",
                    dir);
        return FALSE;
    }
    g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func(g_free);
    if (is_run_dir(dir)) {
        g_ptr_array_add(runs, g_strdup(dir));
    } else {
        collect_runs(dir, runs);
        g_autofree char *wandb_dir = g_build_filename(dir, "wandb", NULL);
        collect_runs(wandb_dir, runs);
    }
    if (runs->len == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s holds no W&B run folder of robotrain (run-ID/" WB_STATE_FILE
                    ", or wandb/run-ID/" WB_STATE_FILE "): give OUTPUT_DIR, OUTPUT_DIR/wandb or a run folder",
                    dir);
        return FALSE;
    }
    wb_server srv;
    if (!wb_server_resolve(&srv, settings, TRUE, error))
        return FALSE;
    gboolean ok = TRUE;
    for (guint i = 0; ok && i < runs->len; i++) {
        gboolean sent;
        ok = sync_one(runs->pdata[i], &srv, &sent, error);
        if (ok && sent && n_synced)
            (*n_synced)++;
    }
    wb_server_clear(&srv);
    return ok;
}

gboolean rt_wandb_viewer(const rt_wandb_settings *settings, char **entity, GError **error)
{
    wb_server srv;
    if (!wb_server_resolve(&srv, settings, TRUE, error))
        return FALSE;
    wb_http *http = wb_http_new(&srv, NULL);
    wb_result r = wb_graphql_viewer(http, entity, error);
    wb_http_free(http);
    wb_server_clear(&srv);
    return r == WB_OK;
}
