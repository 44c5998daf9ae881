/* src/train/train-run.h: the training loop of `robotrain train` (../shared/spec/lerobot.md §4).
 *
 * One device per process; started by a launcher with several processes, the run is data
 * parallel (train-dist.h: sharded batches, gradients averaged in the graph, rank 0 writes). In
 * LeRobot's order: open the dataset (a local copy, else a download from the Hub: train-hub.h),
 * take the policy's features from it when
 * --policy.input_features is {}, create the policy, ask the dataset for the frames it needs,
 * build the training graph, choose the optimizer (rt_train_resolve_optimizer: the policy's preset
 * with explicit flags winning), plan on the device (--policy.device, or CUDA when a GPU is
 * usable), load weights (a checkpoint when resuming, --policy.path when fine-tuning, else the
 * policy's own initialisation), then run steps [start, --steps):
 *
 *   next batch (data_s) -> inputs -> learning rates of the schedule -> one graph step (forward,
 *   backward, pre-clip grad norm, clipping, AdamW) -> loss, sub-losses, grdn (updt_s)
 *   -> step + 1 -> log every log_freq steps (console, metrics.jsonl) -> checkpoint every
 *   save_freq steps and after the last -> stop (with a checkpoint) after SIGINT or SIGTERM.
 *
 * With --wandb.enable the main process also sends each log step to W&B (train-wandb.h).
 *
 * The random numbers of step s are Philox(seed, s) keyed by global sample index, and batch s is
 * the sampler's s-th, so a resumed run draws exactly what the uninterrupted run would have, on
 * any number of processes sharing the same global batch. */
#ifndef ROBOTRAIN_TRAIN_TRAIN_RUN_H
#define ROBOTRAIN_TRAIN_TRAIN_RUN_H

#include <stdint.h>
#include <stdio.h>

#include <robotrain/option.h>
#include <robotrain/plugin-loader.h>
#include <robotrain/plugin.h>

#include "train/train-options.h"

G_BEGIN_DECLS

typedef struct rt_train_run_args {
    rt_config *cfg;                    /* parsed and validated (rt_train_validate), with the
                                          policy module's options; the run writes its decisions
                                          into it (features, optimizer, device, seed) */
    const rt_train_settings *settings; /* from rt_train_validate */
    const rt_plugin_desc *policy;      /* the policy module */
    rt_plugin_registry *registry;      /* where the CUDA backend module is looked for */
    FILE *out;                         /* the log lines (and the progress bar on a terminal) */
    GPtrArray *notes;                  /* lines printed first (validation's), may be NULL */
} rt_train_run_args;

typedef struct rt_train_result {
    int64_t step;          /* optimizer steps done when the run ended */
    int stop_signal;       /* SIGINT or SIGTERM when a signal stopped it, else 0 */
    char *last_checkpoint; /* the last checkpoint written, or NULL (g_free) */
} rt_train_result;

/* Runs the training. Returns FALSE with error (naming the file, flag or tensor) when it cannot
 * start or a step fails; a run stopped by a signal returns TRUE with result->stop_signal set,
 * after its checkpoint. The caller frees result->last_checkpoint. */
gboolean rt_train_run(const rt_train_run_args *args, rt_train_result *result, GError **error);

/* LeRobot's home of datasets: $HF_LEROBOT_HOME, else $HF_HOME/lerobot, else
 * $XDG_CACHE_HOME/huggingface/lerobot (~/.cache/huggingface/lerobot).
 * Returns (transfer full) a string to g_free. */
char *rt_train_lerobot_home(void);

G_END_DECLS

#endif
