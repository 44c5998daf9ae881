/* A W&B run: the training thread's side (rows merged per step, committed into a bounded ring)
 * and the sending thread (ring -> wandb-history.jsonl -> file_stream).
 *
 * Order and exactly-once come from the file: every committed line is appended to it in commit
 * order (by the sending thread when it drains the ring, or by the training thread when the ring
 * is full and it spills the oldest line), and the sending thread sends the file's lines in
 * order from the count the server acknowledged, at their line offsets. The ring, the file's
 * counters and the flags below are guarded by `lock`; the run state (st, stream, http) belongs
 * to the sending thread while it runs. Only disk writes happen under the lock, never network. */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "net/wandb-private.h"

struct rt_wandb_run {
    rt_wandb_mode mode;
    char *id;
    char *dir; /* NULL when disabled */
    wb_server server;
    guint send_interval_ms, heartbeat_ms;
    int lock_fd;
    gboolean resume;
    gboolean finished;

    /* The training thread's side. */
    rt_wandb_row pending; /* the current step's values */
    gboolean pending_open;
    gint64 last_step; /* of the last committed line (or the folder's last line) */
    gboolean have_last_step;
    double runtime_base; /* _runtime at the start of this session */
    gint64 start_mono;

    /* Shared, under lock. */
    GMutex lock;
    GCond wake;    /* the sending thread waits on it */
    GCond done_cv; /* finish waits on it */
    rt_wandb_row *ring;
    guint cap, head, count;
    wb_history hist;
    GString *text;    /* lines being appended */
    gboolean closing; /* finish was called: send everything, then complete */
    int exitcode;     /* with closing */
    gboolean done;    /* the sending thread ended */
    gint abort;       /* atomic: stop now (checked during transfers too) */
    gboolean fatal;   /* the server refused the run: no more requests */
    rt_wandb_stats stats;
    char *entity; /* for the URL, once known */
    char *project;
    gboolean stop_requested;
    GError *write_error; /* the first line that could not be written */
    GError *net_error;   /* the last failed request */

    /* The sending thread's. */
    wb_state st;
    wb_stream stream;
    gboolean stream_ready;
    wb_http *http;
    gboolean registered;
    guint backoff_ms;
    gint64 retry_at;
    GThread *thread;

    wb_artifacts *artifacts; /* online runs: the artifact uploader (wandb-artifact.c) */
    rt_wandb_artifact_stats artifact_stats; /* its counters, once it is stopped */
};

static double now_unix(void)
{
    return (double)g_get_real_time() / 1e6;
}

static double run_runtime(const rt_wandb_run *run)
{
    return run->runtime_base + (double)(g_get_monotonic_time() - run->start_mono) / 1e6;
}

/* ---------------------------------------------------------------- the ring */

/* Appends run->text to the file; on failure the lines are lost, which is reported (a warning
 * now, an error at finish). Called with the lock held. */
static void write_text_locked(rt_wandb_run *run, guint n_lines)
{
    if (run->text->len == 0)
        return;
    GError *err = NULL;
    if (!wb_history_append(&run->hist, run->text->str, run->text->len, &err)) {
        if (!run->write_error) {
            g_warning("%s; %u W&B history line(s) are lost", err->message, n_lines);
            run->write_error = err;
        } else {
            g_error_free(err);
        }
    }
    run->stats.lines_written = (guint64)run->hist.lines;
    g_string_truncate(run->text, 0);
}

static void drain_locked(rt_wandb_run *run)
{
    guint n = run->count;
    while (run->count > 0) {
        rt_wandb_row *row = &run->ring[run->head];
        rt_wandb_row_format(row, run->text);
        rt_wandb_row_reset(row);
        run->head = (run->head + 1) % run->cap;
        run->count--;
    }
    write_text_locked(run, n);
}

/* Moves the pending row into the ring; a full ring first spills its oldest line to the file. */
static void commit_pending(rt_wandb_run *run)
{
    if (!run->pending_open)
        return;
    g_mutex_lock(&run->lock);
    if (run->count == run->cap) {
        rt_wandb_row *oldest = &run->ring[run->head];
        rt_wandb_row_format(oldest, run->text);
        rt_wandb_row_reset(oldest);
        run->head = (run->head + 1) % run->cap;
        run->count--;
        write_text_locked(run, 1);
        run->stats.lines_spilled++;
    }
    rt_wandb_row *slot = &run->ring[(run->head + run->count) % run->cap];
    rt_wandb_row spare = *slot; /* swap buffers: nothing is allocated */
    *slot = run->pending;
    run->pending = spare;
    run->count++;
    run->stats.lines_logged++;
    g_cond_signal(&run->wake);
    g_mutex_unlock(&run->lock);

    run->last_step = slot->step;
    run->have_last_step = TRUE;
    run->pending_open = FALSE;
}

/* ---------------------------------------------------------------- the sending thread */

typedef enum { WORK_NONE, WORK_UPSERT, WORK_LINES, WORK_HEARTBEAT, WORK_FINISH } work_kind;

/* upsertBucket, then line the file up with the server's history. */
static wb_result connect_run(rt_wandb_run *run, gboolean resume, GError **error)
{
    wb_bucket bucket;
    wb_result r = wb_graphql_upsert_run(run->http, &run->st, &bucket, error);
    if (r != WB_OK)
        return r;
    if (resume && bucket.inserted)
        g_warning("W&B run %s did not exist in project %s: a new run with this id was created", run->st.id,
                  run->st.project);
    gboolean ok = wb_stream_connected(&run->stream, &bucket, error);
    wb_bucket_clear(&bucket);
    if (!ok)
        return WB_FATAL;
    run->registered = TRUE;
    GError *save_error = NULL;
    if (!wb_state_save(&run->st, run->dir, &save_error)) {
        g_warning("%s", save_error->message);
        g_error_free(save_error);
    }
    g_mutex_lock(&run->lock);
    g_free(run->entity);
    run->entity = g_strdup(run->st.entity);
    run->stats.connected = TRUE;
    run->stats.lines_sent = (guint64)run->st.history_sent;
    g_mutex_unlock(&run->lock);
    return WB_OK;
}

static wb_result do_work(rt_wandb_run *run, work_kind work, gint64 lines, gint64 bytes, GError **error)
{
    switch (work) {
    case WORK_UPSERT:
        return connect_run(run, run->resume, error);
    case WORK_LINES: {
        wb_result r = wb_stream_send_lines(&run->stream, run->http, lines, bytes, error);
        if (r == WB_OK) {
            GError *save_error = NULL;
            if (!wb_state_save(&run->st, run->dir, &save_error)) {
                g_warning("%s", save_error->message);
                g_error_free(save_error);
            }
        }
        return r;
    }
    case WORK_HEARTBEAT:
        return wb_stream_send_heartbeat(&run->stream, run->http, error);
    case WORK_FINISH:
        return wb_stream_send_finish(&run->stream, run->http, error);
    case WORK_NONE:
    default:
        return WB_OK;
    }
}

static gpointer sender_main(gpointer data)
{
    rt_wandb_run *run = data;
    gint64 last_request = g_get_monotonic_time();
    gboolean outage = run->retry_at != 0, stop_announced = FALSE;

    g_mutex_lock(&run->lock);
    for (;;) {
        drain_locked(run);
        if (g_atomic_int_get(&run->abort))
            break;
        gint64 now = g_get_monotonic_time();
        gint64 lines = run->hist.lines, bytes = run->hist.bytes;
        gint64 wake = G_MAXINT64;
        work_kind work = WORK_NONE;
        if (run->closing) {
            run->st.finished = TRUE;
            run->st.exitcode = run->exitcode;
        }
        if (run->mode != RT_WANDB_MODE_ONLINE || run->fatal) {
            if (run->closing)
                break;
        } else if (now < run->retry_at) {
            wake = run->retry_at;
        } else if (!run->registered) {
            work = WORK_UPSERT;
        } else if (run->st.history_sent < lines) {
            gint64 due = last_request + (gint64)run->send_interval_ms * 1000;
            if (run->closing || now >= due)
                work = WORK_LINES;
            else
                wake = due;
        } else if (run->closing) {
            work = WORK_FINISH;
        } else {
            gint64 due = last_request + (gint64)run->heartbeat_ms * 1000;
            if (now >= due)
                work = WORK_HEARTBEAT;
            else
                wake = due;
        }
        if (work == WORK_NONE) {
            if (wake == G_MAXINT64)
                g_cond_wait(&run->wake, &run->lock);
            else
                g_cond_wait_until(&run->wake, &run->lock, wake);
            continue;
        }
        g_mutex_unlock(&run->lock);
        GError *err = NULL;
        wb_result r = do_work(run, work, lines, bytes, &err);

        /* Messages are logged without the lock: a slow stderr must not hold up rt_wandb_log(). */
        last_request = g_get_monotonic_time();
        if (r == WB_OK) {
            if (outage)
                g_message("W&B answers again: sending the metrics kept in %s", run->dir);
            outage = FALSE;
            run->backoff_ms = 0;
            run->retry_at = 0;
            if (run->stream.stopped && !stop_announced) {
                g_message("W&B run %s was stopped from the W&B interface", run->id);
                stop_announced = TRUE;
            }
        } else if (r == WB_RETRY) {
            run->backoff_ms = run->backoff_ms ? MIN(run->backoff_ms * 2, run->server.retry_max_ms)
                                              : run->server.retry_min_ms;
            run->retry_at = last_request + (gint64)run->backoff_ms * 1000;
            if (!outage)
                g_warning("%s; the run's metrics are kept in %s and sent when W&B answers again",
                          err->message, run->dir);
            outage = TRUE;
        } else if (r != WB_ABORTED) {
            g_warning("%s; no more metrics are sent, they are kept in %s", err->message, run->dir);
        }

        g_mutex_lock(&run->lock);
        if (r == WB_OK) {
            run->stats.requests++;
            run->stats.lines_sent = (guint64)run->st.history_sent;
            run->stop_requested = run->stream.stopped;
            g_clear_error(&run->net_error);
            if (work == WORK_FINISH)
                break;
        } else if (r == WB_ABORTED) {
            g_clear_error(&err);
            break;
        } else {
            run->stats.failures++;
            run->fatal = r != WB_RETRY;
            g_clear_error(&run->net_error);
            run->net_error = err;
        }
    }
    drain_locked(run);
    run->done = TRUE;
    g_cond_broadcast(&run->done_cv);
    g_mutex_unlock(&run->lock);
    return NULL;
}

/* ---------------------------------------------------------------- start */

static rt_wandb_run *run_new(rt_wandb_mode mode)
{
    rt_wandb_run *run = g_new0(rt_wandb_run, 1);
    run->mode = mode;
    run->lock_fd = -1;
    run->hist.fd = -1;
    g_mutex_init(&run->lock);
    g_cond_init(&run->wake);
    g_cond_init(&run->done_cv);
    rt_wandb_row_init(&run->pending);
    run->start_mono = g_get_monotonic_time();
    return run;
}

static gboolean check_project(const char *project, const char *what, GError **error)
{
    if (!*project || strpbrk(project, "/\\#?%:") || strlen(project) > 128) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s '%s' is not a W&B project name: use 1 to 128 characters without / \\ # ? %% :", what,
                    project);
        return FALSE;
    }
    return TRUE;
}

/* The run id: given, from the environment, found in OUTPUT_DIR/wandb when resuming, or new. */
static char *choose_run_id(const rt_wandb_settings *s, GError **error)
{
    if (s->run_id && *s->run_id)
        return wb_check_run_id(s->run_id, "--wandb.run_id", error) ? g_strdup(s->run_id) : NULL;
    const char *env = g_getenv("WANDB_RUN_ID");
    if (env && *env)
        return wb_check_run_id(env, "WANDB_RUN_ID", error) ? g_strdup(env) : NULL;
    if (s->resume && s->output_dir) {
        g_autofree char *wandb_dir = g_build_filename(s->output_dir, "wandb", NULL);
        char *id = wb_find_latest_run_id(wandb_dir);
        if (id)
            return id;
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "cannot resume the W&B run: no run id was given and %s/latest-run does not name one; pass "
            "--wandb.run_id=ID (the checkpoint's train_config.json has it as wandb.run_id)",
            wandb_dir);
        return NULL;
    }
    return rt_wandb_new_run_id();
}

/* The run description: the folder's run.json when it exists (resuming), updated with what was
 * given now; else a new one. */
static gboolean prepare_state(rt_wandb_run *run, const rt_wandb_settings *s, GError **error)
{
    wb_state *st = &run->st;
    const char *project = s->project && *s->project ? s->project : NULL;
    const char *project_what = "--wandb.project";
    if (!project && g_getenv("WANDB_PROJECT") && *g_getenv("WANDB_PROJECT")) {
        project = g_getenv("WANDB_PROJECT");
        project_what = "WANDB_PROJECT";
    }
    const char *entity = s->entity && *s->entity ? s->entity : NULL;
    const char *entity_what = "--wandb.entity";
    if (!entity && g_getenv("WANDB_ENTITY") && *g_getenv("WANDB_ENTITY")) {
        entity = g_getenv("WANDB_ENTITY");
        entity_what = "WANDB_ENTITY";
    }
    if (project && !check_project(project, project_what, error))
        return FALSE;
    if (entity && !check_project(entity, entity_what, error))
        return FALSE;
    g_autofree char *config = NULL;
    if (s->config_json && !(config = rt_wandb_config_to_wandb(s->config_json, error)))
        return FALSE;

    g_autoptr(GError) load_error = NULL;
    if (wb_state_load(st, run->dir, &load_error)) {
        if (strcmp(st->id, run->id) != 0 || (project && strcmp(project, st->project) != 0) ||
            (entity && st->entity && strcmp(entity, st->entity) != 0)) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "%s holds W&B run %s of %s/%s, not of %s/%s: pass the same --wandb.project and "
                "--wandb.entity to resume it, or another --wandb.run_id (or --output_dir) for a new run",
                run->dir, st->id, st->entity ? st->entity : "(default entity)", st->project,
                entity       ? entity
                : st->entity ? st->entity
                             : "(default entity)",
                project ? project : st->project);
            wb_state_clear(st);
            return FALSE;
        }
        if (entity && !st->entity)
            st->entity = g_strdup(entity);
        st->finished = FALSE;
        st->complete_sent = FALSE;
    } else if (g_error_matches(load_error, RT_ERROR, RT_ERROR_NOT_FOUND)) {
        st->id = g_strdup(run->id);
        st->project = g_strdup(project ? project : WB_DEFAULT_PROJECT);
        st->entity = g_strdup(entity);
        st->host = g_strdup(g_get_host_name());
        st->history_base = -1;
        if (!config)
            config = g_strdup("{}");
    } else {
        g_propagate_error(error, g_steal_pointer(&load_error));
        return FALSE;
    }
    /* What was given now replaces what the folder had. */
    if (s->display_name) {
        g_free(st->display_name);
        st->display_name = g_strdup(s->display_name);
    }
    if (s->notes) {
        g_free(st->notes);
        st->notes = g_strdup(s->notes);
    }
    if (s->tags) {
        g_strfreev(st->tags);
        st->tags = g_strdupv((char **)s->tags);
    }
    if (config) {
        g_free(st->config);
        st->config = g_steal_pointer(&config);
    }
    st->mode = run->mode;
    return TRUE;
}

rt_wandb_run *rt_wandb_run_start(const rt_wandb_settings *s, GError **error)
{
    g_return_val_if_fail(s != NULL, NULL);
    rt_wandb_mode mode;
    if (!wb_mode_resolve(s, &mode, error))
        return NULL;
    if (mode == RT_WANDB_MODE_DISABLED) {
        rt_wandb_run *run = run_new(mode);
        run->id = s->run_id && *s->run_id ? g_strdup(s->run_id) : rt_wandb_new_run_id();
        return run;
    }
    if (!s->output_dir || !*s->output_dir) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "W&B logging needs --output_dir: the run's metrics are kept in OUTPUT_DIR/wandb until sent");
        return NULL;
    }
    g_autoptr(rt_wandb_run) run = run_new(mode);
    if (!wb_server_resolve(&run->server, s, mode == RT_WANDB_MODE_ONLINE, error))
        return NULL;
    if (!(run->id = choose_run_id(s, error)))
        return NULL;
    run->resume = s->resume;
    run->send_interval_ms = s->send_interval_ms;
    run->heartbeat_ms = s->heartbeat_ms ? s->heartbeat_ms : 30000;
    run->cap = s->queue_rows ? MIN(s->queue_rows, 65536u) : 256;
    run->ring = g_new0(rt_wandb_row, run->cap);
    for (guint i = 0; i < run->cap; i++)
        rt_wandb_row_init(&run->ring[i]);
    run->text = g_string_sized_new(4096);

    /* The folder, locked; a folder created now is removed again when starting fails. */
    run->dir = wb_run_dir(s->output_dir, run->id);
    gboolean existed = g_file_test(run->dir, G_FILE_TEST_IS_DIR);
    if (g_mkdir_with_parents(run->dir, 0755) != 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create the W&B run folder %s: %s", run->dir,
                    g_strerror(e));
        return NULL;
    }
    if ((run->lock_fd = wb_folder_lock(run->dir, error)) < 0)
        return NULL;
    gboolean ok = prepare_state(run, s, error) && wb_history_open(&run->hist, run->dir, error);
    if (ok && mode == RT_WANDB_MODE_ONLINE) {
        ok = wb_stream_init(&run->stream, &run->st, &run->hist, error);
        run->stream_ready = TRUE;
    }
    if (ok && mode == RT_WANDB_MODE_ONLINE) {
        /* The first attempt happens now, so that a refused key stops the run at once. */
        run->http = wb_http_new(&run->server, &run->abort);
        g_autoptr(GError) net_error = NULL;
        wb_result r = connect_run(run, run->resume, &net_error);
        if (r == WB_RETRY) {
            g_warning("%s; the run's metrics are kept in %s and sent when W&B answers", net_error->message,
                      run->dir);
            run->stats.failures++;
            run->backoff_ms = run->server.retry_min_ms;
            run->retry_at = g_get_monotonic_time() + (gint64)run->backoff_ms * 1000;
            run->net_error = g_steal_pointer(&net_error);
        } else if (r != WB_OK) {
            g_propagate_error(error, g_steal_pointer(&net_error));
            ok = FALSE;
        }
    }
    if (!ok) {
        if (!existed) {
            /* Leave nothing behind: the folder is new and holds only what was just created. */
            const char *names[] = {WB_HISTORY_FILE, WB_STATE_FILE, WB_LOCK_FILE};
            for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
                g_autofree char *path = g_build_filename(run->dir, names[i], NULL);
                g_unlink(path);
            }
            g_rmdir(run->dir);
        }
        return NULL;
    }
    gint64 last_step;
    double last_runtime;
    if (wb_history_last_step(&run->hist, &last_step, &last_runtime)) {
        run->last_step = last_step;
        run->have_last_step = TRUE;
        run->runtime_base = MAX(run->st.runtime, last_runtime);
    } else {
        run->runtime_base = run->st.runtime;
    }
    run->stats.lines_written = (guint64)run->hist.lines;
    run->stats.lines_sent = (guint64)run->st.history_sent;
    run->project = g_strdup(run->st.project);
    if (!wb_state_save(&run->st, run->dir, error))
        return NULL;
    g_autofree char *wandb_dir = g_path_get_dirname(run->dir);
    GError *link_error = NULL;
    if (!wb_set_latest_run(wandb_dir, run->id, &link_error)) {
        g_warning("%s (resuming will need --wandb.run_id=%s)", link_error->message, run->id);
        g_error_free(link_error);
    }
    run->thread = g_thread_try_new("wandb-sender", sender_main, run, error);
    if (!run->thread)
        return NULL;
    if (mode == RT_WANDB_MODE_ONLINE && !(run->artifacts = wb_artifacts_new(&run->server, run->dir, error)))
        return NULL;
    return g_steal_pointer(&run);
}

/* ---------------------------------------------------------------- logging */

gboolean rt_wandb_log(rt_wandb_run *run, gint64 step, const char *const *names, const double *values,
                      size_t n, GError **error)
{
    g_return_val_if_fail(run != NULL && (n == 0 || (names && values)), FALSE);
    g_return_val_if_fail(!run->finished, FALSE);
    if (run->mode == RT_WANDB_MODE_DISABLED)
        return TRUE;
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !*names[i] || names[i][0] == '_' || !g_utf8_validate(names[i], -1, NULL)) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "W&B metric name '%s' is not allowed: a name is UTF-8 text, not empty and not starting "
                "with '_' (W&B keeps those for _step, _runtime and _timestamp); nothing was logged",
                names[i] && g_utf8_validate(names[i], -1, NULL) ? names[i] : "(invalid)");
            return FALSE;
        }
    }
    if (step < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "W&B step %" G_GINT64_FORMAT " is negative: steps count from 0; nothing was logged",
                    step);
        return FALSE;
    }
    if ((run->have_last_step && step <= run->last_step) || (run->pending_open && step < run->pending.step)) {
        gint64 last = run->pending_open ? run->pending.step : run->last_step;
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "W&B step %" G_GINT64_FORMAT " is not after step %" G_GINT64_FORMAT
                    ", the last one logged in W&B run %s: steps must increase; nothing was logged",
                    step, last, run->id);
        return FALSE;
    }
    if (run->pending_open && step > run->pending.step)
        commit_pending(run);
    rt_wandb_row *row = &run->pending;
    row->step = step;
    row->timestamp = now_unix();
    row->runtime = run_runtime(run);
    for (size_t i = 0; i < n; i++)
        rt_wandb_row_set(row, names[i], values[i]);
    run->pending_open = TRUE;
    return TRUE;
}

void rt_wandb_commit(rt_wandb_run *run)
{
    g_return_if_fail(run != NULL);
    if (run->mode != RT_WANDB_MODE_DISABLED && !run->finished)
        commit_pending(run);
}

gboolean rt_wandb_run_log_artifact(rt_wandb_run *run, const char *name, const char *type,
                                   const char *const *aliases, const char *const *paths,
                                   const char *const *names, GError **error)
{
    g_return_val_if_fail(run != NULL, FALSE);
    g_return_val_if_fail(!run->finished, FALSE);
    if (run->mode == RT_WANDB_MODE_DISABLED)
        return TRUE;
    if (!run->artifacts) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "W&B artifact %s is not logged: the run is offline and robotrain wandb sync does not "
                    "upload artifacts",
                    name ? name : "");
        return FALSE;
    }
    g_mutex_lock(&run->lock);
    g_autofree char *entity = g_strdup(run->entity);
    g_mutex_unlock(&run->lock);
    return wb_artifacts_push(run->artifacts, entity, run->project, run->id, name, type, aliases, paths, names,
                             error);
}

void rt_wandb_run_get_artifact_stats(rt_wandb_run *run, rt_wandb_artifact_stats *stats)
{
    g_return_if_fail(run != NULL && stats != NULL);
    if (run->artifacts)
        wb_artifacts_get_stats(run->artifacts, stats);
    else
        *stats = run->artifact_stats;
}

/* Waits for the artifacts until deadline, then stops the uploader (what is left is given up). */
static void stop_artifacts(rt_wandb_run *run, gint64 deadline)
{
    if (!run->artifacts)
        return;
    guint left = wb_artifacts_wait(run->artifacts, deadline ? deadline : g_get_monotonic_time());
    wb_artifacts_get_stats(run->artifacts, &run->artifact_stats);
    if (left > 0)
        g_warning("%u W&B artifact(s) of run %s were not uploaded in time and are given up", left, run->id);
    g_clear_pointer(&run->artifacts, wb_artifacts_free);
    run->artifact_stats.failed += left;
}

/* ---------------------------------------------------------------- queries */

const char *rt_wandb_run_get_id(const rt_wandb_run *run)
{
    g_return_val_if_fail(run != NULL, NULL);
    return run->id;
}

rt_wandb_mode rt_wandb_run_get_mode(const rt_wandb_run *run)
{
    g_return_val_if_fail(run != NULL, RT_WANDB_MODE_DISABLED);
    return run->mode;
}

const char *rt_wandb_run_get_dir(const rt_wandb_run *run)
{
    g_return_val_if_fail(run != NULL, NULL);
    return run->dir;
}

char *rt_wandb_run_get_url(rt_wandb_run *run)
{
    g_return_val_if_fail(run != NULL, NULL);
    if (run->mode != RT_WANDB_MODE_ONLINE)
        return NULL;
    g_mutex_lock(&run->lock);
    char *url =
        run->entity ? rt_wandb_run_url(run->server.base_url, run->entity, run->project, run->id) : NULL;
    g_mutex_unlock(&run->lock);
    return url;
}

void rt_wandb_run_get_stats(rt_wandb_run *run, rt_wandb_stats *stats)
{
    g_return_if_fail(run != NULL && stats != NULL);
    g_mutex_lock(&run->lock);
    *stats = run->stats;
    g_mutex_unlock(&run->lock);
}

gboolean rt_wandb_run_stop_requested(rt_wandb_run *run)
{
    g_return_val_if_fail(run != NULL, FALSE);
    g_mutex_lock(&run->lock);
    gboolean stop = run->stop_requested;
    g_mutex_unlock(&run->lock);
    return stop;
}

/* ---------------------------------------------------------------- the end */

/* Stops the sending thread: tells it to finish (exitcode), waits up to deadline (monotonic; 0:
 * do not wait), then makes it stop. Writes what is left to the file and saves run.json. */
static void stop_sender(rt_wandb_run *run, int exitcode, gboolean finishing, gint64 deadline)
{
    if (run->thread) {
        g_mutex_lock(&run->lock);
        run->closing = TRUE;
        run->exitcode = exitcode;
        if (!finishing)
            g_atomic_int_set(&run->abort, 1);
        g_cond_signal(&run->wake);
        while (!run->done && finishing)
            if (!g_cond_wait_until(&run->done_cv, &run->lock, deadline))
                break;
        if (!run->done) {
            g_atomic_int_set(&run->abort, 1); /* a transfer in progress stops within about a second */
            g_cond_signal(&run->wake);
        }
        g_mutex_unlock(&run->lock);
        g_thread_join(run->thread);
        run->thread = NULL;
    }
    g_mutex_lock(&run->lock);
    drain_locked(run);
    g_mutex_unlock(&run->lock);
    run->st.finished = finishing;
    run->st.exitcode = exitcode;
    run->st.runtime = run_runtime(run);
    GError *err = NULL;
    if (!wb_state_save(&run->st, run->dir, &err)) {
        g_warning("%s", err->message);
        g_error_free(err);
    }
}

gboolean rt_wandb_run_finish(rt_wandb_run *run, int exitcode, guint timeout_ms, GError **error)
{
    g_return_val_if_fail(run != NULL, FALSE);
    g_return_val_if_fail(!run->finished, FALSE);
    if (run->mode == RT_WANDB_MODE_DISABLED) {
        run->finished = TRUE;
        return TRUE;
    }
    commit_pending(run);
    gint64 started = g_get_monotonic_time();
    /* artifacts first: W&B counts a run's outputs until it is finished */
    stop_artifacts(run, started + (gint64)timeout_ms * 1000);
    stop_sender(run, exitcode, TRUE, started + (gint64)timeout_ms * 1000);
    run->finished = TRUE;
    wb_folder_unlock(run->lock_fd);
    run->lock_fd = -1;

    if (run->write_error) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s; some W&B history lines of run %s are lost",
                    run->write_error->message, run->id);
        return FALSE;
    }
    if (run->mode != RT_WANDB_MODE_ONLINE)
        return TRUE;
    gint64 unsent = run->hist.lines - run->st.history_sent;
    if (unsent == 0 && run->st.complete_sent)
        return TRUE;
    g_autofree char *why = NULL;
    if (run->fatal)
        why = g_strdup_printf("W&B refused the run (%s)", run->net_error ? run->net_error->message : "?");
    else
        why = g_strdup_printf("W&B did not take them within %.1f s%s%s%s", (double)timeout_ms / 1000,
                              run->net_error ? " (" : "", run->net_error ? run->net_error->message : "",
                              run->net_error ? ")" : "");
    if (unsent > 0)
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "%" G_GINT64_FORMAT
                    " W&B history line(s) of run %s were not sent: %s; they are kept in %s: "
                    "send them with 'robotrain wandb sync %s'",
                    unsent, run->id, why, run->dir, run->dir);
    else
        g_set_error(error, RT_ERROR, RT_ERROR_NETWORK,
                    "W&B was not told that run %s finished: %s; 'robotrain wandb sync %s' tells it", run->id,
                    why, run->dir);
    return FALSE;
}

void rt_wandb_run_free(rt_wandb_run *run)
{
    if (!run)
        return;
    stop_artifacts(run, 0);
    if (run->thread) {
        commit_pending(run); /* to the folder, at least */
        stop_sender(run, 0, FALSE, 0);
    }
    wb_folder_unlock(run->lock_fd);
    if (run->stream_ready)
        wb_stream_clear(&run->stream);
    wb_http_free(run->http);
    if (run->hist.path)
        wb_history_close(&run->hist);
    wb_state_clear(&run->st);
    wb_server_clear(&run->server);
    rt_wandb_row_clear(&run->pending);
    for (guint i = 0; run->ring && i < run->cap; i++)
        rt_wandb_row_clear(&run->ring[i]);
    g_free(run->ring);
    if (run->text)
        g_string_free(run->text, TRUE);
    g_clear_error(&run->write_error);
    g_clear_error(&run->net_error);
    g_free(run->entity);
    g_free(run->project);
    g_free(run->id);
    g_free(run->dir);
    g_mutex_clear(&run->lock);
    g_cond_clear(&run->wake);
    g_cond_clear(&run->done_cv);
    g_free(run);
}
