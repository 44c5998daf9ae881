/* robotrain/wandb.h: the Weights & Biases client (what LeRobot's --wandb.* flags do).
 *
 * Only rank 0 uses it. A run is created, or resumed with the same run id, through W&B's GraphQL
 * mutation upsertBucket (project, entity, run id, display name = job name, notes, tags, job type
 * "train_eval", and the whole training config). The trainer logs named values with the optimizer
 * step; each step becomes one line of the run's history, {"train/loss":0.53,...,"_step":200,
 * "_runtime":12.5,"_timestamp":1766000000.1}, streamed to W&B's file_stream endpoint with the
 * summary (the last value of every key).
 *
 * Logging never waits for the network. rt_wandb_log() copies the values into a bounded in-memory
 * queue; a background thread appends the queued lines to the run folder's
 * wandb-history.jsonl and sends what the server has not acknowledged, in order, each line once:
 * a request carries the line number of its first line (file_stream's offset), and the count of
 * acknowledged lines is kept in the folder's run.json. When the queue is full (the thread is
 * stuck in a slow request), rt_wandb_log() writes the oldest queued line to the file itself
 * instead of dropping it. When the service is unreachable, lines wait in the file and are sent
 * when it answers again (retries back off from 2 s to 60 s). In offline mode nothing is sent;
 * rt_wandb_sync() sends such a folder later (`robotrain wandb sync DIR`). The calls on one run
 * come from one thread (the training loop's); the sending thread is the library's own.
 *
 * The run folder is OUTPUT_DIR/wandb/run-<id>/ (OUTPUT_DIR/wandb/latest-run points to it):
 *   run.json               the run (project, entity, config, ...) and how much the server has
 *   wandb-history.jsonl    every history line, in order, one JSON object per line
 *   .lock                  held while a process uses the folder
 *
 * Settings come from the caller (the --wandb.* flags), then the environment, then defaults:
 *   project   --wandb.project, WANDB_PROJECT, "lerobot"
 *   entity    --wandb.entity, WANDB_ENTITY, else the API key's default entity
 *   run id    --wandb.run_id, WANDB_RUN_ID, when resuming the id in OUTPUT_DIR/wandb/latest-run
 *             (also LeRobot's latest-run/run-<id>.wandb), else 8 random letters and digits
 *   mode      --wandb.mode, WANDB_MODE, "online"
 *   server    WANDB_BASE_URL, https://api.wandb.ai
 *   API key   WANDB_API_KEY, else the ~/.netrc (or $NETRC) entry of the server's host
 *             (machine api.wandb.ai login user password KEY); sent as HTTP Basic "api:KEY"
 *             and never printed.
 *
 * Artifacts (rt_wandb_run_log_artifact(), LeRobot's checkpoint "model" artifacts) are uploaded
 * the way the W&B SDK does it: createArtifact (with the manifest digest), createArtifactManifest,
 * createArtifactFiles (signed upload URLs), a PUT of each file with its Content-MD5,
 * updateArtifactManifest and the manifest's PUT, commitArtifact; on a thread of their own, so that
 * neither training nor metrics wait for them. Offline runs upload no artifacts. */
#ifndef ROBOTRAIN_WANDB_H
#define ROBOTRAIN_WANDB_H

#include <stddef.h>

#include <glib.h>

#include <robotrain/option.h>

G_BEGIN_DECLS

typedef enum {
    RT_WANDB_MODE_DEFAULT = 0, /* not chosen: WANDB_MODE, else online */
    RT_WANDB_MODE_ONLINE,      /* create the run on the server and stream to it */
    RT_WANDB_MODE_OFFLINE,     /* write the run folder only; rt_wandb_sync() sends it later */
    RT_WANDB_MODE_DISABLED,    /* do nothing: every call succeeds and has no effect */
} rt_wandb_mode;

/* The mode's name ("online", "offline", "disabled"; "default" for RT_WANDB_MODE_DEFAULT).
 * Returns (transfer none) a static string. */
const char *rt_wandb_mode_name(rt_wandb_mode mode);

/* What the caller chooses. Strings are borrowed: rt_wandb_run_start() copies what it keeps, so
 * they only need to live through that call. NULL means "not given" (the environment or the
 * default applies, see the top of this file). Fill with rt_wandb_settings_init() first. */
typedef struct rt_wandb_settings {
    gboolean enable;           /* --wandb.enable; FALSE makes the run a disabled one */
    const char *project;       /* --wandb.project */
    const char *entity;        /* --wandb.entity */
    const char *notes;         /* --wandb.notes */
    const char *run_id;        /* --wandb.run_id: [A-Za-z0-9_-.], at most 64 characters */
    rt_wandb_mode mode;        /* --wandb.mode */
    gboolean disable_artifact; /* --wandb.disable_artifact: the trainer uploads no checkpoints */

    const char *output_dir;   /* --output_dir: the run folder goes in OUTPUT_DIR/wandb/ (required
                               * unless disabled) */
    const char *display_name; /* --job_name: the run's name in the W&B interface */
    const char *const *tags;  /* NULL-terminated, e.g. rt_wandb_lerobot_tags(); may be NULL */
    const char *config_json;  /* the full training config as a JSON object ({"policy": {...},
                               * "batch_size": 8, ...}); may be NULL */
    gboolean resume;          /* --resume: continue the run with the same id */

    const char *base_url; /* NULL: WANDB_BASE_URL, else https://api.wandb.ai */
    const char *api_key;  /* NULL: WANDB_API_KEY, else ~/.netrc */

    /* Tuning; rt_wandb_settings_init() sets W&B's own values, tests make them short. */
    guint queue_rows;         /* lines the in-memory queue holds before spilling (1 to 65536); 256 */
    guint send_interval_ms;   /* at most one metrics request per interval; 15000 */
    guint heartbeat_ms;       /* an empty request after this long without one; 30000 */
    guint retry_min_ms;       /* first wait after a failed request; doubles up to retry_max_ms; 2000 */
    guint retry_max_ms;       /* 60000 */
    guint request_timeout_ms; /* one HTTP request, connecting included; 60000 */
} rt_wandb_settings;

/* Sets every field to "not given" / W&B's defaults (enable TRUE, mode DEFAULT). */
void rt_wandb_settings_init(rt_wandb_settings *settings);

/* The --wandb.* rows, keys relative to the group "wandb" ("enable", "project", ...), with
 * LeRobot's defaults: enable false, disable_artifact false, project "lerobot", entity, notes,
 * run_id and mode null, add_tags true (LeRobot 0.4's key). *n receives the count.
 * Returns (transfer none) a static table: add it with rt_config_add_options(cfg, "wandb", ...). */
const rt_option *rt_wandb_options(size_t *n);

/* Fills the settings' --wandb.* fields from cfg's "<prefix>.enable", ... (prefix NULL means
 * "wandb"); a null value leaves the field NULL. The strings are borrowed from cfg (they live
 * until its values change or it is freed). The other fields are left as they are. */
void rt_wandb_settings_from_config(rt_wandb_settings *settings, const rt_config *cfg, const char *prefix);

/* LeRobot's run tags: "policy:<type>", "seed:<seed>", "dataset:<repo id>" and, when env_type is
 * not NULL, "env:<type>", each cut to 64 characters (as LeRobot does). policy_type and
 * dataset may be NULL (that tag is left out). Returns (transfer full): free with g_strfreev(). */
char **rt_wandb_lerobot_tags(const char *policy_type, gint64 seed, const char *dataset, const char *env_type);

/* LeRobot's name for the "model" artifact of a checkpoint: the tags joined by "-", then "-" and
 * the checkpoint folder's name (e.g. "020000"), with every ':' and '/' replaced by '_'.
 * tags may be NULL. Returns (transfer full) a string to g_free. */
char *rt_wandb_artifact_name(const char *const *tags, const char *step_dir);

/* ---------------------------------------------------------------- runs */

typedef struct rt_wandb_run rt_wandb_run;

/* Creates the run (or resumes it, with settings->resume or a known run id), creates its folder
 * and starts the sending thread. Resuming continues the server's history after the lines it
 * has, and the folder's (when OUTPUT_DIR is the same) after its last step; resuming an id the
 * server does not know creates that run with a warning (the W&B SDK's resume="must" would fail). Online, the
 * run is created on the server before this returns; when the server cannot be reached (or answers 429 / 5xx)
 * a warning says so and the thread keeps trying while lines wait in the folder. Fails (a folder created by
 * this call is removed again) on: a bad setting (RT_ERROR_INVALID_ARG, naming the flag or variable), no API
 * key online, a key the server refuses (RT_ERROR_NETWORK; the message says to set WANDB_API_KEY or to run
 * with
 * --wandb.mode=offline, and never shows the key), another error from the server (its message),
 * a folder that cannot be written or is in use by another process (RT_ERROR_IO).
 * A disabled run (mode disabled, or enable FALSE) touches nothing.
 * Returns (transfer full): end with rt_wandb_run_finish() and free with rt_wandb_run_free(). */
rt_wandb_run *rt_wandb_run_start(const rt_wandb_settings *settings, GError **error);

/* The run id (the trainer writes it to train_config.json as wandb.run_id so that --resume
 * continues the same run). Returns (transfer none): valid until the run is freed. */
const char *rt_wandb_run_get_id(const rt_wandb_run *run);

/* The effective mode (never RT_WANDB_MODE_DEFAULT). */
rt_wandb_mode rt_wandb_run_get_mode(const rt_wandb_run *run);

/* The run folder, or NULL for a disabled run. Returns (transfer none). */
const char *rt_wandb_run_get_dir(const rt_wandb_run *run);

/* The run's page, e.g. https://wandb.ai/<entity>/<project>/runs/<id>, or NULL while the entity is
 * not known (offline, disabled, or the server was not reached yet).
 * Returns (transfer full) a string to g_free. */
char *rt_wandb_run_get_url(rt_wandb_run *run);

/* Logs n named values at an optimizer step; names are flat keys such as "train/loss" (not empty,
 * not starting with '_'). Values of the same step are merged into one history line (a later
 * value of a name replaces the earlier one), as W&B does; the line is queued when a larger step
 * is logged, by rt_wandb_commit(), or at finish. Non-finite values are written as NaN, Infinity
 * and -Infinity (as Python's json module does). Never waits for the network. Fails
 * (RT_ERROR_INVALID_ARG, nothing logged) when step is lower than the step of the last queued
 * line (W&B needs increasing steps) or a name is invalid; the message names the step or key. */
gboolean rt_wandb_log(rt_wandb_run *run, gint64 step, const char *const *names, const double *values,
                      size_t n, GError **error);

/* Queues the current step's line now (for a step that gets no more values); no-op when none. */
void rt_wandb_commit(rt_wandb_run *run);

/* Counters, for progress messages and tests. */
typedef struct rt_wandb_stats {
    guint64 lines_logged;  /* lines queued (committed) by this process */
    guint64 lines_spilled; /* of those, written to the file by rt_wandb_log() because the queue was full */
    guint64 lines_written; /* lines in wandb-history.jsonl (earlier sessions included) */
    guint64 lines_sent;    /* lines of the file the server acknowledged */
    guint64 requests;      /* HTTP requests answered with success */
    guint64 failures;      /* requests that failed (refused, timed out, 429, 5xx, ...) */
    gboolean connected;    /* the run exists on the server */
} rt_wandb_stats;

void rt_wandb_run_get_stats(rt_wandb_run *run, rt_wandb_stats *stats);

/* Logs files as an artifact of the run (W&B's run.log_artifact): name (no ':' or '/'), type
 * (e.g. "model"), aliases (NULL-terminated, e.g. {"latest", NULL}; may be NULL), paths of the
 * files (NULL-terminated) and their names in the artifact (NULL: the base names). Checks the
 * arguments and that the files exist, then queues the upload and returns: it never waits for the
 * network. The upload reads the files later, so they must stay as they are until it is done
 * (rt_wandb_run_finish() waits for it). A failed upload is a warning (g_warning) naming the
 * artifact; the run goes on. A disabled run does nothing; an offline run fails with
 * RT_ERROR_UNSUPPORTED (its artifacts are not kept for rt_wandb_sync()). */
gboolean rt_wandb_run_log_artifact(rt_wandb_run *run, const char *name, const char *type,
                                   const char *const *aliases, const char *const *paths,
                                   const char *const *names, GError **error);

/* Counters of the artifacts of this process. */
typedef struct rt_wandb_artifact_stats {
    guint queued;    /* accepted by rt_wandb_run_log_artifact() */
    guint committed; /* uploaded and committed (or already on the server with the same digest) */
    guint failed;    /* given up (a warning said why) or stopped at the end */
} rt_wandb_artifact_stats;

void rt_wandb_run_get_artifact_stats(rt_wandb_run *run, rt_wandb_artifact_stats *stats);

/* TRUE once the server answered that the run was stopped from the W&B interface. */
gboolean rt_wandb_run_stop_requested(rt_wandb_run *run);

/* Waits for the artifacts still being uploaded, then queues the current line, sends everything
 * left and marks the run finished with exitcode (file_stream's complete/exitcode), waiting at most
 * timeout_ms in all (artifacts left when it runs out are given up with a warning). Offline, records the exit code
 * in the folder (rt_wandb_sync() sends it). When the time runs out (service down) or the server
 * refused the run, fails (RT_ERROR_NETWORK) saying how many lines were not sent and where they
 * are kept ("robotrain wandb sync DIR" sends them); when lines could not be written to the
 * folder (disk full), fails with RT_ERROR_IO. Either way the run is closed: call it once. */
gboolean rt_wandb_run_finish(rt_wandb_run *run, int exitcode, guint timeout_ms, GError **error);

/* Frees the run. An unfinished run is stopped first without waiting for the network (its lines
 * stay in the folder, the run is not marked finished). NULL is allowed. */
void rt_wandb_run_free(rt_wandb_run *run);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_wandb_run, rt_wandb_run_free)

/* ---------------------------------------------------------------- folders */

/* Sends what the server lacks of run folders written offline or left after an outage: dir is a
 * run folder (holding run.json) or a folder of them (OUTPUT_DIR/wandb, or OUTPUT_DIR). Each run
 * is created or updated with its saved settings, its history lines the server does not have are
 * sent (the server's line count and the folder's record decide which), and a finished run is
 * marked finished; a folder the server has entirely is left alone. Transient failures are retried
 * a few times (from retry_min_ms on). settings gives the server and key (base_url, api_key,
 * request_timeout_ms, retry_min_ms, retry_max_ms; NULL: the environment and defaults).
 * *n_synced (may be NULL) receives the number of runs that had something to send. Fails on the first run that
 * cannot be sent (the message names its folder); running it again continues where it stopped. */
gboolean rt_wandb_sync(const char *dir, const rt_wandb_settings *settings, guint *n_synced, GError **error);

/* Asks the server who owns the API key (GraphQL viewer). *entity (may be NULL) receives the key's
 * default entity (transfer full: g_free). Fails like rt_wandb_run_start() on a missing or
 * refused key. */
gboolean rt_wandb_viewer(const rt_wandb_settings *settings, char **entity, GError **error);

G_END_DECLS

#endif
