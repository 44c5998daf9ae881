/* src/train/train-hub.h: what robotrain train and robotrain push do with the Hugging Face Hub
 * (robotrain/hub.h does the protocol): find or download the dataset of --dataset.repo_id, and
 * push a trained policy (--policy.push_to_hub at the end of training, `robotrain push`).
 *
 * Only the main process of a run talks to the Hub. A data-parallel run passes is_main and a wait
 * function: rank 0 downloads and then calls wait(user_data, ok, ...) to let the others go; the
 * others call wait first (it returns FALSE with an error when rank 0 failed) and then read the
 * same folder from the cache without any request. */
#ifndef ROBOTRAIN_TRAIN_TRAIN_HUB_H
#define ROBOTRAIN_TRAIN_TRAIN_HUB_H

#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include <robotrain/hub.h>
#include <robotrain/option.h>

G_BEGIN_DECLS

/* A barrier between the processes of a run. Rank 0 calls it once its part is done, with main_ok
 * telling whether it succeeded (error is then NULL); the other ranks call it before they go on,
 * and get rank 0's main_ok back: FALSE (with error set) stops them too. */
typedef gboolean (*rt_train_wait_func)(void *user_data, gboolean main_ok, GError **error);

/* TRUE in the main process: rank 0 of the launcher's world (robotrain/world.h: RANK, mpirun's or
 * srun's variables), or a process alone. */
gboolean rt_train_is_main_process(void);

/* The folder of the dataset that cfg names, LeRobot's way:
 *   - --dataset.root holding meta/info.json: that folder, as it is;
 *   - no --dataset.root and $HF_LEROBOT_HOME/REPO_ID holds meta/info.json: that folder (a copy
 *     made by hand or by an older LeRobot);
 *   - else the dataset is downloaded from the Hub (rt_train_hub_download_dataset: --dataset.revision,
 *     else the version tag LeRobot's codebase reads; with --dataset.episodes only the metadata
 *     and those episodes' files) into --dataset.root when given, else into
 *     LeRobot's cache ($HF_LEROBOT_HOME/hub/datasets--OWNER--NAME/snapshots/COMMIT). Offline
 *     (HF_HUB_OFFLINE=1, or the Hub unreachable) the cached snapshot is used without requests.
 * Only is_main downloads; see the top of this file for wait (NULL: one process). progress: a
 * terminal gets a progress line there (NULL: none). Errors name the flag and say what to do.
 * Returns (transfer full) the folder: g_free(). */
char *rt_train_hub_dataset_folder(const rt_config *cfg, gboolean is_main, rt_train_wait_func wait,
                                  void *wait_data, FILE *progress, GError **error);

/* Downloads the dataset repo_id (revision NULL: the version tag LeRobot picks) into root (NULL:
 * LeRobot's cache) as rt_hub_dataset_download() does: every file when episodes is NULL, else,
 * as LeRobot does, meta/ first and then only the data and video files of those n_episodes
 * episodes (by episode_index). offline: no request, the cache only (as with HF_HUB_OFFLINE).
 * Errors are the Hub client's (robotrain/hub.h), or the metadata's. Returns (transfer full) the dataset
 * folder: g_free(). */
char *rt_train_hub_download_dataset(const char *repo_id, const char *revision, const char *root,
                                    const int64_t *episodes, size_t n_episodes, gboolean offline,
                                    FILE *progress, GError **error);

/* The pretrained_model folder of dir: dir itself when it holds config.json and
 * model.safetensors, else dir/pretrained_model (a checkpoint), else
 * dir/checkpoints/last/pretrained_model (an output folder). Returns (transfer full): g_free();
 * NULL with RT_ERROR_NOT_FOUND naming dir. */
char *rt_train_hub_find_pretrained(const char *dir, GError **error);

/* What to push. Strings are borrowed. NULL fields fall back to the folder's train_config.json
 * (policy.private, policy.tags, policy.license), then to LeRobot's defaults. */
typedef struct rt_train_push_args {
    const char *folder;  /* a pretrained_model folder (rt_train_hub_find_pretrained) */
    const char *repo_id; /* the model repository, owner/name */
    const gboolean *private_repo;
    const char *const *tags;    /* NULL-terminated, added to robotics, lerobot and the policy type */
    const char *license;        /* NULL: train_config.json's, else apache-2.0 */
    const char *revision;       /* the branch; NULL: main */
    const char *commit_message; /* NULL: LeRobot's "Upload policy weights, train config and readme" */
    FILE *progress;             /* a progress line when it is a terminal; NULL: none */
} rt_train_push_args;

/* LeRobot's push_model_to_hub in one commit: creates the repository when needed (private as
 * asked) and commits the folder's *.json, *.safetensors, *.yaml and *.md files (config.json,
 * model.safetensors, train_config.json, the processor files) and a README.md model card with
 * LeRobot's metadata (rt_hub_model_card: license, library_name, model_name = policy type,
 * pipeline_tag, tags, datasets = train_config.json's dataset.repo_id). Large files go through
 * the LFS protocol. card_out (may be NULL) receives the README text (transfer full, g_free).
 * Returns (transfer full) the commit: rt_hub_commit_free(). */
rt_hub_commit *rt_train_hub_push(const rt_train_push_args *args, char **card_out, GError **error);

/* --policy.push_to_hub=true at the end of training (call it on the main process only): pushes
 * last_checkpoint's pretrained_model (NULL: OUTPUT_DIR/checkpoints/last) to --policy.repo_id with
 * --policy.private, --policy.tags and --policy.license, and prints where it went on out. Does
 * nothing when push_to_hub is false. */
gboolean rt_train_hub_push_at_end(const rt_config *cfg, const char *last_checkpoint, FILE *out,
                                  GError **error);

G_END_DECLS

#endif
