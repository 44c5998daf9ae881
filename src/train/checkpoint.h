/* src/train/checkpoint.h: checkpoints in LeRobot's layout (../shared/spec/lerobot.md §3.2, §4.6).
 *
 *   OUTPUT/checkpoints/<step>/            <step> zero-padded to max(6, digits of --steps)
 *       pretrained_model/
 *           config.json                   the policy config ("type": "act", ...), indent 4
 *           model.safetensors             the state dict: every parameter and buffer of the graph
 *                                         by its LeRobot name (metadata {"format": "pt"})
 *           train_config.json             the whole train configuration, indent 4
 *           policy_preprocessor.json      rename -> to_batch -> device -> normalizer, indent 2
 *           policy_preprocessor_step_3_normalizer_processor.safetensors
 *           policy_postprocessor.json     unnormalizer -> device (cpu), indent 2
 *           policy_postprocessor_step_0_unnormalizer_processor.safetensors
 *                                         both: the dataset's stats as "<feature>.<stat>", float32
 *       training_state/
 *           training_step.json            {"step": S, "num_processes": N, "batch_size": B}
 *           optimizer_state.safetensors   PyTorch's optimizer state_dict()["state"] flattened with
 *                                         "/": state/<i>/step (0-d float32), state/<i>/exp_avg,
 *                                         state/<i>/exp_avg_sq; i = the parameter's index in the
 *                                         param groups (group 0's parameters in creation order,
 *                                         then group 1's, ...); parameters without a gradient
 *                                         have no state, as in PyTorch
 *           optimizer_param_groups.json   one object per group: lr, betas, eps, weight_decay,
 *                                         amsgrad, maximize, foreach, capturable, differentiable,
 *                                         fused, decoupled_weight_decay (torch >= 2.7's AdamW),
 *                                         initial_lr (with a scheduler), params
 *           scheduler_state.json          with a scheduler: LambdaLR's state_dict()
 *           robotrain_state.json          ours: the seed and the sampler position, so that a
 *                                         resumed run draws the same batches and random numbers
 *           mixed_precision.json          ours, mixed precision runs: {"mixed_precision": "fp16"
 *                                         or "bf16", "scaler": GradScaler.state_dict() (fp16:
 *                                         scale, growth_factor, backoff_factor, growth_interval,
 *                                         _growth_tracker) plus "skipped_steps"}
 *   OUTPUT/checkpoints/last -> <step>     relative symlink, replaced atomically
 *
 * LeRobot's rng_state.safetensors (Python, NumPy and torch generator states) is not written:
 * robotrain's randomness is a pure function of (seed, step) and needs no saved state.
 *
 * Saving is atomic: everything is written into OUTPUT/checkpoints/.rt-partial-<step>-XXXXXX,
 * each file synced, then the folder is renamed to <step> and `last` is replaced; a save that
 * fails or is killed leaves the previous checkpoints and `last` as they were. Leftover partial
 * folders are removed by the next save. */
#ifndef ROBOTRAIN_TRAIN_CHECKPOINT_H
#define ROBOTRAIN_TRAIN_CHECKPOINT_H

#include <stdint.h>

#include <json-glib/json-glib.h>

#include <robotrain/graph.h>
#include <robotrain/loss-scale.h>
#include <robotrain/option.h>

#include "train/lr-schedule.h"

G_BEGIN_DECLS

#define RT_CHECKPOINTS_DIR "checkpoints"
#define RT_LAST_CHECKPOINT_LINK "last"
#define RT_PRETRAINED_MODEL_DIR "pretrained_model"
#define RT_TRAINING_STATE_DIR "training_state"
#define RT_MODEL_FILE "model.safetensors"
#define RT_TRAINING_STEP_FILE "training_step.json"
#define RT_OPTIMIZER_STATE_FILE "optimizer_state.safetensors"
#define RT_OPTIMIZER_GROUPS_FILE "optimizer_param_groups.json"
#define RT_SCHEDULER_STATE_FILE "scheduler_state.json"
#define RT_ROBOTRAIN_STATE_FILE "robotrain_state.json"
#define RT_MIXED_PRECISION_FILE "mixed_precision.json"
#define RT_PREPROCESSOR_FILE "policy_preprocessor.json"
#define RT_POSTPROCESSOR_FILE "policy_postprocessor.json"
#define RT_NORMALIZER_FILE "policy_preprocessor_step_3_normalizer_processor.safetensors"
#define RT_UNNORMALIZER_FILE "policy_postprocessor_step_0_unnormalizer_processor.safetensors"

/* LeRobot's name of a checkpoint folder: step zero-padded to max(6, digits of total_steps).
 * Returns (transfer full) a string to g_free. */
char *rt_checkpoint_step_name(int64_t step, int64_t total_steps);

/* ---------------------------------------------------------------- parameter order */

/* How the graph's parameters map to PyTorch's optimizer state indices. */
typedef struct rt_param_order {
    int n_params; /* the graph's trainable parameters */
    int n_groups;
    int *group;     /* [n_params] group of graph parameter p */
    int *index;     /* [n_params] state index of graph parameter p */
    int *param_at;  /* [n_params] graph parameter at state index i */
    int *group_len; /* [n_groups] parameters in each group */
} rt_param_order;

/* The order of g's parameters as PyTorch numbers their optimizer state: group 0's parameters
 * (rt_param_group()) in the graph's creation order (LeRobot's named_parameters() order), then
 * group 1's, and so on, for n_groups groups. Call after the groups are assigned.
 * Returns (transfer full): free with rt_param_order_free(); NULL (with a critical warning) when
 * a parameter's group is n_groups or more. */
rt_param_order *rt_param_order_new(rt_graph *g, int n_groups);
void rt_param_order_free(rt_param_order *order);

/* ---------------------------------------------------------------- saving */

/* One statistic of a feature as the normalizer saves it: "<feature>.<stat>", float32 of shape. */
typedef struct rt_ckpt_stat {
    const char *feature; /* "observation.state" */
    const char *stat;    /* "mean", "std", "min", "max", "count", "q01", ... */
    int ndim;
    int64_t shape[4];     /* vectors (D), cameras (3,1,1), count (1) */
    const double *values; /* product of shape values */
} rt_ckpt_stat;

/* Where the sampler stands: the next batch a resumed run draws (src/data/sampler.h). */
typedef struct rt_ckpt_sampler {
    int64_t epoch, batch;      /* next batch */
    int64_t batches_per_epoch; /* of this rank */
    int64_t num_items, batch_size;
    int world_size;
    gboolean shuffle, drop_last;
} rt_ckpt_sampler;

/* The precision a run trained in, and its loss scaler (fp16). */
typedef struct rt_ckpt_precision {
    const char *mixed_precision; /* "fp16" or "bf16" */
    gboolean has_scaler;
    rt_loss_scale_config scaler_config;
    rt_loss_scale_state scaler; /* scale, growth_tracker, skipped */
} rt_ckpt_precision;

typedef struct rt_checkpoint_save_info {
    const char *output_dir;
    int64_t step;        /* optimizer steps done */
    int64_t total_steps; /* --steps: names the folder */
    rt_graph *graph;     /* planned, with its optimizer */
    const rt_param_order *order;
    const rt_adamw_group *groups;   /* order->n_groups: the learning rates now (after the schedule) */
    const double *initial_lr;       /* with a scheduler: each group's base lr; NULL without */
    const rt_lr_schedule *schedule; /* NULL or RT_LR_NONE: no scheduler_state.json */
    const rt_config *cfg;           /* train_config.json, config.json, and the processors'
                                       features (policy.input_features, output_features,
                                       normalization_mapping.*) and device (policy.device) */
    const rt_ckpt_stat *stats;      /* the dataset's stats for the processors */
    size_t n_stats;
    int num_processes;  /* training_step.json (world size) */
    int64_t batch_size; /* training_step.json (per process) */
    gboolean has_seed;
    uint64_t seed;
    const rt_ckpt_sampler *sampler; /* NULL: not recorded */
    const rt_ckpt_precision *precision; /* NULL: float32, no mixed_precision.json */
    gboolean has_optimizer_step;        /* the optimizer's own step count (state/<i>/step), */
    double optimizer_step;              /* when loss scaling skipped steps; else step */
    /* For tests: called before each file is written, with its path relative to the checkpoint
     * folder ("training_state/optimizer_state.safetensors"); FALSE (setting error) stops the
     * save there, as a failure would. */
    gboolean (*before_file)(const char *name, void *user, GError **error);
    void *user;
} rt_checkpoint_save_info;

/* Writes the checkpoint of info->step and points `last` at it. *dir (may be NULL) receives the
 * checkpoint folder (transfer full, g_free). Errors (RT_ERROR_IO, RT_ERROR_INVALID_ARG) name the
 * file; nothing is left behind but the previous checkpoints. */
gboolean rt_checkpoint_save(const rt_checkpoint_save_info *info, char **dir, GError **error);

/* The processor JSON files on their own (for tests and `robotrain push`): the text of
 * policy_preprocessor.json / policy_postprocessor.json for cfg's policy (input_features,
 * output_features, normalization_mapping.*, device), with or without a state file.
 * Returns (transfer full) a string to g_free. */
char *rt_checkpoint_preprocessor_json(const rt_config *cfg, gboolean with_state);
char *rt_checkpoint_postprocessor_json(const rt_config *cfg, gboolean with_state);

/* ---------------------------------------------------------------- loading */

/* Loads model.safetensors (a file, or a pretrained_model folder holding it) into the graph's
 * parameters and buffers: every one must be there with its dtype and shape, and the file must
 * hold nothing else. Errors (RT_ERROR_NOT_FOUND, RT_ERROR_FORMAT) name the file and the tensor. */
gboolean rt_checkpoint_load_model(const char *path, rt_graph *g, GError **error);

typedef struct rt_checkpoint rt_checkpoint;

/* Reads a checkpoint folder's training_state (training_step.json, optimizer_param_groups.json,
 * scheduler_state.json and robotrain_state.json when present) and checks it. Errors name the
 * file and the key. Returns (transfer full): free with rt_checkpoint_free(). */
rt_checkpoint *rt_checkpoint_open(const char *checkpoint_dir, GError **error);
void rt_checkpoint_free(rt_checkpoint *ck);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_checkpoint, rt_checkpoint_free)

const char *rt_checkpoint_dir(const rt_checkpoint *ck);
int64_t rt_checkpoint_step(const rt_checkpoint *ck);
/* training_step.json's num_processes and batch_size; -1 when absent (LeRobot before v0.6). */
int rt_checkpoint_num_processes(const rt_checkpoint *ck);
int64_t rt_checkpoint_batch_size(const rt_checkpoint *ck);
/* The saved parameter groups: hyper-parameters (the lr in force when saved) and, with a
 * scheduler, initial_lr (NAN when absent). */
int rt_checkpoint_n_groups(const rt_checkpoint *ck);
const rt_adamw_group *rt_checkpoint_group(const rt_checkpoint *ck, int group);
double rt_checkpoint_initial_lr(const rt_checkpoint *ck, int group);
/* scheduler_state.json's last_epoch, or -1 without one. */
int64_t rt_checkpoint_scheduler_step(const rt_checkpoint *ck);
/* robotrain_state.json: FALSE when the checkpoint has none (LeRobot wrote it). */
gboolean rt_checkpoint_get_seed(const rt_checkpoint *ck, uint64_t *seed);
gboolean rt_checkpoint_get_sampler(const rt_checkpoint *ck, rt_ckpt_sampler *sampler);
/* mixed_precision.json: FALSE when the checkpoint has none (a float32 run, or LeRobot's).
 * precision->mixed_precision belongs to ck. */
gboolean rt_checkpoint_get_precision(const rt_checkpoint *ck, rt_ckpt_precision *precision);

/* Puts the optimizer state into the planned graph: exp_avg and exp_avg_sq of every parameter
 * with state, the step count, and the saved learning rates and hyper-parameters of each group.
 * The groups must match order (their number and every group's parameter indices), the
 * tensors their parameters' shapes (float32), and every state's step must equal the others
 * (robotrain keeps one count). Errors name the file and the key. */
gboolean rt_checkpoint_load_optimizer(const rt_checkpoint *ck, rt_graph *g, const rt_param_order *order,
                                      GError **error);

G_END_DECLS

#endif
