/* src/train/train-wandb.h: robotrain train's --wandb.* (LeRobot's WandBLogger, spec lerobot.md
 * §4.9) on top of robotrain/wandb.h.
 *
 * The main process creates the run (or resumes it: --resume with the run id of the config or of
 * OUTPUT_DIR/wandb/latest-run), named --job_name, tagged policy:<type>, seed:<seed>,
 * dataset:<repo id> (--wandb.add_tags), with the whole training config; the run id is written into
 * the config (wandb.run_id) before the first checkpoint so that every train_config.json carries it.
 * Each log step sends LeRobot's train/ keys (steps, samples, episodes, epochs, loss, grad_norm, lr,
 * update_s, dataloading_s, samples_per_s and the policy's sub-losses) with the optimizer step,
 * through the client's bounded queue and background thread: logging never waits for the network.
 * Other processes, and --wandb.enable=false or --wandb.mode=disabled, do nothing. */
#ifndef ROBOTRAIN_TRAIN_TRAIN_WANDB_H
#define ROBOTRAIN_TRAIN_TRAIN_WANDB_H

#include <stdint.h>

#include <glib.h>

#include <robotrain/option.h>

#include "train/metrics.h"

G_BEGIN_DECLS

typedef struct rt_train_wandb rt_train_wandb;

/* Starts the run described by cfg's wandb.* (on the main process only; is_main FALSE gives a
 * logger that does nothing) and sets cfg's wandb.run_id. notes (may be NULL) receives lines for
 * the log (where the run is, what is not uploaded). Fails on the errors of rt_wandb_run_start()
 * (a bad setting, no or a refused API key, an unwritable run folder): the messages say what to
 * do (set WANDB_API_KEY, or --wandb.mode=offline). Returns (transfer full):
 * rt_train_wandb_free(). */
rt_train_wandb *rt_train_wandb_start(rt_config *cfg, gboolean is_main, GPtrArray *notes, GError **error);

/* TRUE when the logger sends or writes anything. */
gboolean rt_train_wandb_active(const rt_train_wandb *w);

/* Queues the metrics of this log step (their averages, as metrics.jsonl has them), prefixed
 * "train/", at the optimizer step. Never waits for the network; a value the client refuses is
 * reported once in *warning (transfer full, g_free; may be NULL) and the run goes on. */
void rt_train_wandb_log(rt_train_wandb *w, const rt_metrics *m, int64_t step, char **warning);

/* After a checkpoint (checkpoint_dir: OUTPUT_DIR/checkpoints/<step>), unless
 * --wandb.disable_artifact: queues LeRobot's "model" artifact, <tags joined by "-">-<step> holding
 * pretrained_model/model.safetensors, alias "latest" (uploaded in the background, see
 * rt_wandb_run_log_artifact()). Returns a line for the log (transfer full, g_free), or NULL: what
 * is uploaded, why it cannot be (once for an offline run), or a problem (the run goes on). */
char *rt_train_wandb_checkpoint(rt_train_wandb *w, const char *checkpoint_dir);

/* Sends what is left and marks the run finished with exitcode, waiting at most timeout_ms.
 * Returns a line for the log (transfer full, g_free; NULL when inactive): where the run is, or
 * that lines are kept on disk for `robotrain wandb sync DIR`. */
char *rt_train_wandb_finish(rt_train_wandb *w, int exitcode, guint timeout_ms);

/* Frees the logger (an unfinished run keeps its lines on disk). NULL is allowed. */
void rt_train_wandb_free(rt_train_wandb *w);

G_END_DECLS

#endif
