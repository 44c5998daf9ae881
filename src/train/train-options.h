/* src/train/train-options.h: the configuration of `robotrain train`, LeRobot's
 * TrainPipelineConfig (../shared/spec/lerobot.md §2.2, §5; lerobot/configs/train.py).
 *
 * Options. The rows below are LeRobot's fields with LeRobot's defaults (--dataset.*, --policy.*,
 * --output_dir, --steps, --optimizer.*, --scheduler.*, --wandb.*, ...). A policy module's own
 * rows (ACT's chunk_size, optimizer_lr, ...) go under "policy" together with the fields every
 * LeRobot policy config has (PreTrainedConfig: device, use_amp, push_to_hub, repo_id, ...).
 *
 * Files. train_config.json and config.json are LeRobot's (draccus) JSON. A few things in them
 * are not options, and are handled here:
 *   - "policy.input_features" and "policy.output_features" are dictionaries (feature name ->
 *     {"type", "shape"}); the options hold them as JSON text (as robotrain/policy.h's do) and
 *     the files as objects; "policy.normalization_mapping" ({"VISUAL": "MEAN_STD", ...}) is the
 *     module's group of options normalization_mapping.*;
 *   - "scheduler": null is scheduler.type none; "optimizer": null and "policy": null leave the
 *     defaults;
 *   - fields LeRobot has and robotrain does not act on are accepted when their value changes
 *     nothing we do (performance knobs of PyTorch's DataLoader, evaluation settings used only
 *     with a simulation env, ...) and refused, naming the key, when it would (a non-null env,
 *     peft, reward_model; image transforms enabled; a non-empty rename_map; ...).
 * Everything else is checked by the option rows (unknown keys and bad values are errors naming
 * the file and key). We write back only fields LeRobot knows, so LeRobot reads our files.
 *
 * Typical use, in the order LeRobot applies sources (file, then pretrained config, then flags):
 *
 *     rt_config *cfg = rt_config_new("robotrain train");
 *     rt_train_add_options(cfg, &error);
 *     rt_train_file *file = config_path ? rt_train_file_load(config_path, &error) : NULL;
 *     ... pick the policy module from rt_train_file_policy_type() or --policy.type ...
 *     rt_policy_add_options(cfg, module_desc, &error);   (robotrain/policy.h)
 *     rt_train_add_policy_options(cfg, NULL, 0, &error);  (what the module layer left out)
 *     rt_train_file_apply(file, cfg, &error);
 *     rt_config_parse_args(cfg, argc, argv, NULL, &error);
 *     rt_train_validate(cfg, &settings, notes, &error);
 *     rt_train_resolve_optimizer(cfg, &preset, &optim, notes, &error); */
#ifndef ROBOTRAIN_TRAIN_TRAIN_OPTIONS_H
#define ROBOTRAIN_TRAIN_TRAIN_OPTIONS_H

#include <stddef.h>

#include <json-glib/json-glib.h>

#include <robotrain/graph.h>
#include <robotrain/option.h>

#include "train/lr-schedule.h"

G_BEGIN_DECLS

/* The name of the saved configuration, and of the policy's. */
#define RT_TRAIN_CONFIG_NAME "train_config.json"
#define RT_POLICY_CONFIG_NAME "config.json"

/* ---------------------------------------------------------------- options */

/* Declares every train option but the policy's (policy.path excepted), in LeRobot's order. A
 * key some other layer already declared in cfg (the dataset's, W&B's) is left as it is, so those
 * layers may add their own rows first. Fails only on a programming error. */
gboolean rt_train_add_options(rt_config *cfg, GError **error);

/* Declares the policy module's rows under "policy", then the PreTrainedConfig fields not yet
 * declared (type, n_obs_steps, input_features, output_features, device, use_amp, use_peft,
 * push_to_hub, repo_id, private, tags, license, pretrained_path, pretrained_revision): after
 * rt_policy_add_options() that is none of them but n_obs_steps of a module without it. rows may
 * be NULL (n 0). */
gboolean rt_train_add_policy_options(rt_config *cfg, const rt_option *rows, size_t n, GError **error);

/* The rows of rt_train_add_options() and of the PreTrainedConfig fields (keys relative to
 * "policy"), for the man-page check and `--help`. Returns (transfer none). */
const rt_option *rt_train_option_rows(size_t *n);
const rt_option *rt_train_policy_base_rows(size_t *n);

/* ---------------------------------------------------------------- files */

typedef struct rt_train_file rt_train_file;

/* Reads a train_config.json (a folder means FOLDER/train_config.json) and puts it into the shape
 * the options expect (see above); no option is changed yet. Fails with RT_ERROR_NOT_FOUND,
 * RT_ERROR_IO, RT_ERROR_FORMAT (not JSON; not an object) or RT_ERROR_UNSUPPORTED (every LeRobot
 * field set to something robotrain does not do, one per line), naming the file and the key.
 * Returns (transfer full): free with rt_train_file_free(). */
rt_train_file *rt_train_file_load(const char *path, GError **error);

/* The same for a policy's config.json (a folder means FOLDER/config.json, as --policy.path):
 * its fields become policy.*. */
rt_train_file *rt_train_file_load_policy(const char *path, GError **error);

/* The same from text in memory; name stands for the file in messages. policy_only: the text is a
 * config.json. */
rt_train_file *rt_train_file_load_data(const char *text, gsize length, const char *name, gboolean policy_only,
                                       GError **error);

void rt_train_file_free(rt_train_file *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_train_file, rt_train_file_free)

/* The file's path (a folder resolved to the file in it). Returns (transfer none). */
const char *rt_train_file_path(const rt_train_file *file);

/* The policy's "type" in the file ("act"), or NULL. Returns (transfer none). */
const char *rt_train_file_policy_type(const rt_train_file *file);

/* Applies the file's values on top of cfg's (source RT_SOURCE_FILE). Fails as
 * rt_config_load_json() does (every bad key and value, one per line, naming the file); then
 * nothing is changed. */
gboolean rt_train_file_apply(const rt_train_file *file, rt_config *cfg, GError **error);

/* LeRobot's train_config.json for cfg (indent 4, no trailing newline, as draccus writes it):
 * the options nested by dotted path; "policy" with "type" first, then the PreTrainedConfig
 * fields in LeRobot's order (the features as objects), then the module's; "scheduler": null
 * for none and only the chosen scheduler's fields otherwise; no config_path or policy.path
 * (LeRobot's command-line-only arguments); "policy": null without a policy type.
 * Returns (transfer full) a string to g_free. */
char *rt_train_config_to_json(const rt_config *cfg);

/* LeRobot's config.json: the "policy" object of the above, on its own (indent 4). Returns
 * (transfer full) a string to g_free, or NULL when no policy type is set. */
char *rt_train_policy_config_to_json(const rt_config *cfg);

/* ---------------------------------------------------------------- validation */

/* What validation decided beyond option values. */
typedef struct rt_train_settings {
    char *checkpoint_dir; /* resume: OUTPUT/checkpoints/<step>, the folder holding
                             pretrained_model/ and training_state/ (NULL otherwise) */
    int device_index;     /* N of cuda:N (0 for "cuda"); -1 for cpu or not chosen */
    char *device_type;    /* "cpu", "cuda", or NULL when --policy.device is null (auto) */
} rt_train_settings;

void rt_train_settings_clear(rt_train_settings *settings);

/* LeRobot's TrainPipelineConfig.validate(), plus robotrain's checks. In LeRobot's order:
 *   - a policy is needed (--policy.type or --policy.path), not both of them on the command line;
 *   - --resume=true needs --config_path (the checkpoint's train_config.json or its
 *     pretrained_model folder); policy.pretrained_path becomes that pretrained_model folder and
 *     settings->checkpoint_dir its parent, which must hold training_state/;
 *   - job_name defaults to the policy type;
 *   - without --resume an existing output_dir is an error ("Output directory D already exists
 *     and resume is False. ..."); a null output_dir becomes
 *     outputs/train/YYYY-MM-DD/HH-MM-SS_<job_name> at time `now` (local time; NULL: the clock);
 *   - policy.push_to_hub needs policy.repo_id;
 *   - robotrain: --policy.device is cpu, cuda or cuda:N (mps and others refused); optimizer.betas
 *     has two values in [0, 1); use_peft is false; a --scheduler.* field given without a
 *     --scheduler.type that uses it is an error.
 * notes (a GPtrArray of strings to g_free, may be NULL) receives a line for each default
 * validation filled in. Values it sets have source RT_SOURCE_PROGRAM. */
gboolean rt_train_validate(rt_config *cfg, GDateTime *now, rt_train_settings *settings, GPtrArray *notes,
                           GError **error);

/* ---------------------------------------------------------------- optimizer */

#define RT_TRAIN_MAX_GROUPS 8

/* What a policy proposes (LeRobot's get_optimizer_preset(), get_scheduler_preset() and
 * get_optim_params()). ACT: AdamW with lr policy.optimizer_lr and weight_decay
 * policy.optimizer_weight_decay, the AdamW defaults for betas, eps and grad_clip_norm, no
 * scheduler, and a second group "model.backbone" with lr policy.optimizer_lr_backbone. */
typedef struct rt_train_preset {
    const char *policy_type; /* for messages: "act" */
    double lr, weight_decay, beta1, beta2, eps, grad_clip_norm;
    const char *lr_key;           /* where lr comes from, for messages: "policy.optimizer_lr" */
    const char *weight_decay_key; /* "policy.optimizer_weight_decay" */
    int n_extra_groups;
    const char *group_name[RT_TRAIN_MAX_GROUPS - 1];   /* for messages: "backbone" */
    const char *group_prefix[RT_TRAIN_MAX_GROUPS - 1]; /* parameters whose names start with it;
                                                          NULL: the module assigned the groups */
    double group_lr[RT_TRAIN_MAX_GROUPS - 1];
    const char *group_lr_key[RT_TRAIN_MAX_GROUPS - 1]; /* "policy.optimizer_lr_backbone" */
    /* no scheduler in any preset robotrain has (ACT's is None) */
} rt_train_preset;

/* ACT's preset from the policy.* options of cfg (optimizer_lr, optimizer_weight_decay,
 * optimizer_lr_backbone; the defaults of ACTConfig where the module declares none). */
void rt_train_preset_act(const rt_config *cfg, rt_train_preset *preset);

struct rt_policy_optimizer;
/* The preset a policy module proposed (rt_policy_optimizer_preset(), which also put the graph's
 * parameters in their groups). The options named in messages are LeRobot's convention:
 * policy.optimizer_lr, policy.optimizer_weight_decay, policy.optimizer_lr_<group name>, when
 * cfg declares them. */
void rt_train_preset_from_policy(const rt_config *cfg, const char *policy_type,
                                 const struct rt_policy_optimizer *opt, rt_train_preset *preset);

/* The optimizer as it will run. */
typedef struct rt_train_optim {
    int n_groups;
    rt_adamw_group groups[RT_TRAIN_MAX_GROUPS];    /* base learning rates (before the schedule) */
    const char *group_prefix[RT_TRAIN_MAX_GROUPS]; /* [0] NULL: every other parameter; NULL
                                                      for all when the module assigned groups */
    double grad_clip_norm;                         /* <= 0: no clipping (the norm is still logged) */
    rt_lr_schedule schedule;
    gboolean lr_from_args; /* --optimizer.lr was given on the command line (it then wins over a
                              checkpoint's saved learning rates on resume too) */
} rt_train_optim;

/* Decides the optimizer and scheduler, and writes them into cfg's optimizer.* and scheduler.*
 * (so that train_config.json records what ran):
 *   - use_policy_training_preset true and not resuming: LeRobot replaces the whole optimizer
 *     and scheduler with the policy's preset, silently dropping --optimizer.* flags. robotrain
 *     takes the preset too, but a value given on the command line (--optimizer.lr=2e-4) wins,
 *     and notes say which preset values were applied and which flag replaced which; values from
 *     a config file are replaced by the preset, as in LeRobot. Parameter groups: the preset's.
 *   - use_policy_training_preset false: the --optimizer.* and --scheduler.* values, one group
 *     (LeRobot then optimizes policy.parameters()).
 *   - resuming: the values of the saved train_config.json (plus flags), presets not applied;
 *     groups as the preset says; the checkpoint's saved learning rates apply later unless
 *     --optimizer.lr was given.
 * preset may be NULL for a policy without one (then as use_policy_training_preset false).
 * Fails (RT_ERROR_INVALID_ARG) when the schedule is incomplete (rt_lr_schedule_from_config()). */
gboolean rt_train_resolve_optimizer(rt_config *cfg, const rt_train_preset *preset, rt_train_optim *optim,
                                    GPtrArray *notes, GError **error);

G_END_DECLS

#endif
