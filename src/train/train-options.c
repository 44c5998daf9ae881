/* The options of `robotrain train` (LeRobot's TrainPipelineConfig), their validation, and the
 * choice of optimizer and schedule. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include <robotrain/error.h>

#include <robotrain/policy.h>

#include "core/options-private.h"
#include "train/train-dist.h"
#include "train/train-options.h"

/* ---------------------------------------------------------------- rows */

static const char *const optimizer_types[] = {"adamw", NULL};
static const char *const scheduler_types[] = {"none", "diffuser", "cosine_decay_with_warmup", NULL};
static const char *const diffuser_names[] = {
    "constant", "constant_with_warmup", "linear", "cosine", "cosine_with_restarts", "polynomial", NULL,
};
static const char *const wandb_modes[] = {"online", "offline", "disabled", NULL};

/* LeRobot's TrainPipelineConfig fields, in its order (lerobot/configs/train.py, default.py,
 * optim/optimizers.py, optim/schedulers.py), with its defaults. */
static const rt_option train_rows[] = {
    {.key = "dataset.repo_id",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_REQUIRED,
     .help = "The dataset: a Hugging Face Hub repository (user/name), downloaded into the LeRobot cache "
             "unless --dataset.root names a local copy."},
    {.key = "dataset.root",
     .type = RT_OPT_PATH,
     .flags = RT_OPT_NULLABLE,
     .help = "A local folder holding the dataset (meta/info.json ...); null: $HF_LEROBOT_HOME/REPO_ID."},
    {.key = "dataset.episodes",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_INT,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 16777215,
     .null_text = "all",
     .help = "The episodes to train on (their episode_index), e.g. [0,1,2]; null: all of them."},
    {.key = "dataset.revision",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "The Hub revision (branch, tag or commit) of the dataset; null: the dataset's version tag."},
    {.key = "dataset.use_imagenet_stats",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Normalize cameras with ImageNet's mean and std instead of the dataset's own."},
    {.key = "policy.path",
     .type = RT_OPT_PATH,
     .flags = RT_OPT_NULLABLE,
     .help = "Fine-tune a pretrained policy: a folder with config.json and model.safetensors (other "
             "--policy.* flags override its config)."},
    {.key = "output_dir",
     .type = RT_OPT_PATH,
     .flags = RT_OPT_NULLABLE,
     .help = "Where the run writes checkpoints and logs; must not exist unless --resume=true; null: "
             "outputs/train/DATE/TIME_JOBNAME."},
    {.key = "job_name",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "Name of the run (W&B run name, default output folder); null: the policy type."},
    {.key = "resume",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Continue the run whose checkpoint --config_path names."},
    {.key = "config_path",
     .type = RT_OPT_PATH,
     .flags = RT_OPT_NULLABLE,
     .help = "A train_config.json (or a folder holding one) whose values are loaded before the other "
             "flags; with --resume=true, the checkpoint to continue (CHECKPOINT/pretrained_model/"
             "train_config.json)."},
    {.key = "seed",
     .type = RT_OPT_INT,
     .default_value = "1000",
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 9007199254740991.0,
     .help = "Seed of parameter initialization, dropout, VAE noise and data order (the same on every "
             "process); null: a random seed, printed at start."},
    {.key = "num_workers",
     .type = RT_OPT_INT,
     .default_value = "4",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1024,
     .help = "Loader threads per process decoding batches ahead of training; 0: in the training thread."},
    {.key = "batch_size",
     .type = RT_OPT_INT,
     .default_value = "8",
     .flags = RT_OPT_RANGE,
     .min = 1,
     .max = 1048576,
     .help = "Samples per optimizer step on each process (the effective batch is this times the number "
             "of processes)."},
    {.key = "steps",
     .type = RT_OPT_INT,
     .default_value = "100000",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1e15,
     .help = "Optimizer steps of the whole run (a resumed run continues up to this count)."},
    {.key = "log_freq",
     .type = RT_OPT_INT,
     .default_value = "200",
     .help = "Print the averages of the last log_freq steps every log_freq steps; <= 0: never."},
    {.key = "tolerance_s",
     .type = RT_OPT_FLOAT,
     .default_value = "0.0001",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1,
     .help = "Tolerance in seconds when matching frame timestamps to 1/fps."},
    {.key = "save_checkpoint",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Write checkpoints (every save_freq steps and after the last step)."},
    {.key = "save_freq",
     .type = RT_OPT_INT,
     .default_value = "20000",
     .help = "Write a checkpoint every save_freq steps; <= 0: only after the last step."},
    {.key = "use_policy_training_preset",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Use the policy's optimizer and schedule (ACT: AdamW, lr --policy.optimizer_lr); flags "
             "given on the command line still win over it."},
    {.key = "optimizer.type",
     .type = RT_OPT_ENUM,
     .default_value = "adamw",
     .choices = optimizer_types,
     .help = "The optimizer (torch.optim.AdamW)."},
    {.key = "optimizer.lr",
     .type = RT_OPT_FLOAT,
     .default_value = "0.001",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1e6,
     .help = "Learning rate of the first parameter group (before any schedule)."},
    {.key = "optimizer.weight_decay",
     .type = RT_OPT_FLOAT,
     .default_value = "0.01",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1e6,
     .help = "Decoupled weight decay of every parameter group."},
    {.key = "optimizer.grad_clip_norm",
     .type = RT_OPT_FLOAT,
     .default_value = "10.0",
     .help = "Clip the total gradient L2 norm to this; <= 0: no clipping (the norm is still logged)."},
    {.key = "optimizer.betas",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_FLOAT,
     .default_value = "[0.9,0.999]",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1,
     .help = "AdamW's beta1 and beta2, each in [0, 1)."},
    {.key = "optimizer.eps",
     .type = RT_OPT_FLOAT,
     .default_value = "1e-08",
     .flags = RT_OPT_RANGE,
     .min = 0,
     .max = 1,
     .help = "AdamW's epsilon."},
    {.key = "scheduler.type",
     .type = RT_OPT_ENUM,
     .default_value = "none",
     .choices = scheduler_types,
     .help = "Learning-rate schedule: none (constant), diffuser (diffusers' schedules, see "
             "--scheduler.name) or cosine_decay_with_warmup (pi0's)."},
    {.key = "scheduler.num_warmup_steps",
     .type = RT_OPT_INT,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 1e15,
     .help = "Steps of linear warmup (diffuser and cosine_decay_with_warmup)."},
    {.key = "scheduler.name",
     .type = RT_OPT_ENUM,
     .default_value = "cosine",
     .choices = diffuser_names,
     .help = "The diffuser schedule."},
    {.key = "scheduler.num_decay_steps",
     .type = RT_OPT_INT,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 1,
     .max = 1e15,
     .help = "cosine_decay_with_warmup: steps of the cosine decay (scaled down when --steps is smaller)."},
    {.key = "scheduler.peak_lr",
     .type = RT_OPT_FLOAT,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 1e6,
     .help = "cosine_decay_with_warmup: the peak learning rate (the decay ends at decay_lr/peak_lr times "
             "the optimizer's lr)."},
    {.key = "scheduler.decay_lr",
     .type = RT_OPT_FLOAT,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 1e6,
     .help = "cosine_decay_with_warmup: the final learning rate."},
    {.key = "wandb.enable",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Log the run to Weights & Biases (rank 0 only)."},
    {.key = "wandb.disable_artifact",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Do not upload checkpoints to W&B as artifacts."},
    {.key = "wandb.project",
     .type = RT_OPT_STRING,
     .default_value = "lerobot",
     .flags = RT_OPT_NULLABLE,
     .help = "W&B project of the run."},
    {.key = "wandb.entity",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "W&B entity (user or team) owning the project."},
    {.key = "wandb.notes",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "Notes shown with the run in W&B."},
    {.key = "wandb.run_id",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "W&B run id; a resumed run continues the run of this id."},
    {.key = "wandb.mode",
     .type = RT_OPT_ENUM,
     .choices = wandb_modes,
     .flags = RT_OPT_NULLABLE,
     .help = "online, offline or disabled; null: online."},
    {.key = "wandb.add_tags",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Tag the run with the policy type, seed and dataset."},
};

/* PreTrainedConfig's fields (lerobot/configs/policies.py), relative to "policy". */
static const rt_option policy_base_rows[] = {
    {.key = "type",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "Train a new policy of this type (an installed policy module: robotrain plugins)."},
    {.key = "n_obs_steps",
     .type = RT_OPT_INT,
     .default_value = "1",
     .flags = RT_OPT_RANGE,
     .min = 1,
     .max = 1024,
     .help = "Observation frames the policy sees (the current one and earlier ones)."},
    {.key = "input_features",
     .type = RT_OPT_STRING,
     .default_value = "{}",
     .help = "The policy's inputs as LeRobot's config.json has them, JSON text ({\"observation.state\": "
             "{\"type\": \"STATE\", \"shape\": [14]}, ...}); {} takes them from the dataset."},
    {.key = "output_features",
     .type = RT_OPT_STRING,
     .default_value = "{}",
     .help = "The policy's outputs, JSON text ({\"action\": {\"type\": \"ACTION\", \"shape\": [14]}}); {} "
             "takes them from the dataset."},
    {.key = "device",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .null_text = "auto",
     .help = "cpu, cuda (the process's GPU: LOCAL_RANK under robotrain launch) or cuda:N; auto: cuda "
             "when a GPU is usable, else cpu."},
    {.key = "use_amp",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Mixed precision (autocast): matmul, linear, conv2d and attention inputs in bf16 on the CPU, "
             "fp16 with dynamic loss scaling on CUDA; ROBOTRAIN_MIXED_PRECISION (robotrain launch "
             "--mixed_precision) decides the dtype when set, and contradicting it is an error."},
    {.key = "use_peft",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Whether the policy was trained with PEFT adapters (not supported: must be false)."},
    {.key = "push_to_hub",
     .type = RT_OPT_BOOL,
     .default_value = "true",
     .help = "Upload the trained policy to the Hub at the end (needs --policy.repo_id)."},
    {.key = "repo_id",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "The Hub model repository (user/name) to push the policy to."},
    {.key = "private",
     .type = RT_OPT_BOOL,
     .flags = RT_OPT_NULLABLE,
     .help = "Create that repository private."},
    {.key = "tags",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "Extra tags of the model on the Hub."},
    {.key = "license",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "License of the model on the Hub; null: apache-2.0."},
    {.key = "pretrained_path",
     .type = RT_OPT_PATH,
     .flags = RT_OPT_NULLABLE,
     .help = "The pretrained_model folder the weights were loaded from (set by --policy.path and "
             "--resume)."},
    {.key = "pretrained_revision",
     .type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "The Hub revision of a pretrained policy."},
};

const rt_option *rt_train_option_rows(size_t *n)
{
    *n = G_N_ELEMENTS(train_rows);
    return train_rows;
}

const rt_option *rt_train_policy_base_rows(size_t *n)
{
    *n = G_N_ELEMENTS(policy_base_rows);
    return policy_base_rows;
}

/* Declares the rows whose keys cfg does not have yet. */
static gboolean add_missing(rt_config *cfg, const char *prefix, const rt_option *rows, size_t n,
                            GError **error)
{
    for (size_t i = 0; i < n; i++) {
        g_autofree char *key = prefix ? g_strconcat(prefix, ".", rows[i].key, NULL) : g_strdup(rows[i].key);
        if (rt_config_lookup(cfg, key))
            continue;
        if (!rt_config_add_options(cfg, prefix, &rows[i], 1, error))
            return FALSE;
    }
    return TRUE;
}

gboolean rt_train_add_options(rt_config *cfg, GError **error)
{
    g_return_val_if_fail(cfg != NULL, FALSE);
    return add_missing(cfg, NULL, train_rows, G_N_ELEMENTS(train_rows), error);
}

gboolean rt_train_add_policy_options(rt_config *cfg, const rt_option *rows, size_t n, GError **error)
{
    g_return_val_if_fail(cfg != NULL, FALSE);
    if (n > 0 && !rt_config_add_options(cfg, "policy", rows, n, error))
        return FALSE;
    return add_missing(cfg, "policy", policy_base_rows, G_N_ELEMENTS(policy_base_rows), error);
}

/* ---------------------------------------------------------------- validation */

void rt_train_settings_clear(rt_train_settings *settings)
{
    if (!settings)
        return;
    g_clear_pointer(&settings->checkpoint_dir, g_free);
    g_clear_pointer(&settings->device_type, g_free);
    settings->device_index = -1;
}

static void note(GPtrArray *notes, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void note(GPtrArray *notes, const char *format, ...)
{
    if (!notes)
        return;
    va_list ap;
    va_start(ap, format);
    g_ptr_array_add(notes, g_strdup_vprintf(format, ap));
    va_end(ap);
}

/* Sets a declared option from program code (a value that must be valid). */
static gboolean set_value(rt_config *cfg, const char *key, const char *text, GError **error)
{
    if (!rt_config_lookup(cfg, key))
        return TRUE;
    return rt_config_set(cfg, key, text, error);
}

static gboolean from_args(const rt_config *cfg, const char *key)
{
    return rt_config_lookup(cfg, key) && rt_config_get_source(cfg, key) == RT_SOURCE_ARGS;
}

/* --resume: find the checkpoint from config_path (LeRobot's _resolve_resume_checkpoint). */
static gboolean resolve_resume(rt_config *cfg, rt_train_settings *settings, GError **error)
{
    const char *config_path = rt_config_get_string(cfg, "config_path");
    if (!config_path) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "A config_path is expected when resuming a run. Please specify path to " RT_TRAIN_CONFIG_NAME
            ": --resume=true "
            "--config_path=OUTPUT_DIR/checkpoints/last/pretrained_model/" RT_TRAIN_CONFIG_NAME);
        return FALSE;
    }
    if (!g_file_test(config_path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "--config_path=%s does not exist: to resume, give the checkpoint's " RT_TRAIN_CONFIG_NAME
                    " (OUTPUT_DIR/checkpoints/last/pretrained_model/" RT_TRAIN_CONFIG_NAME ")",
                    config_path);
        return FALSE;
    }
    g_autofree char *policy_dir = g_file_test(config_path, G_FILE_TEST_IS_DIR)
                                      ? g_strdup(config_path)
                                      : g_path_get_dirname(config_path);
    g_autofree char *checkpoint_dir = g_path_get_dirname(policy_dir);
    g_autofree char *state_dir = g_build_filename(checkpoint_dir, "training_state", NULL);
    if (!g_file_test(state_dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_NOT_FOUND,
            "%s: no training_state folder beside %s, so there is nothing to resume: --config_path must be "
            "CHECKPOINT/pretrained_model/" RT_TRAIN_CONFIG_NAME " of a checkpoint written by training",
            state_dir, policy_dir);
        return FALSE;
    }
    if (!set_value(cfg, "policy.pretrained_path", policy_dir, error))
        return FALSE;
    g_free(settings->checkpoint_dir);
    settings->checkpoint_dir = g_steal_pointer(&checkpoint_dir);
    return TRUE;
}

static gboolean parse_device(const char *device, rt_train_settings *settings, GError **error)
{
    if (!device)
        return TRUE;
    if (strcmp(device, "cpu") == 0) {
        settings->device_type = g_strdup("cpu");
        settings->device_index = -1;
        return TRUE;
    }
    if (strcmp(device, "cuda") == 0) {
        settings->device_type = g_strdup("cuda");
        settings->device_index = 0;
        return TRUE;
    }
    if (g_str_has_prefix(device, "cuda:")) {
        const char *digits = device + 5;
        char *end = NULL;
        errno = 0;
        gint64 index = g_ascii_strtoll(digits, &end, 10);
        if (*digits && g_ascii_isdigit(*digits) && end && *end == '\0' && errno == 0 && index >= 0 &&
            index < 1024) {
            settings->device_type = g_strdup("cuda");
            settings->device_index = (int)index;
            return TRUE;
        }
    }
    g_set_error(error, RT_ERROR, strcmp(device, "mps") == 0 ? RT_ERROR_UNSUPPORTED : RT_ERROR_INVALID_ARG,
                "--policy.device=%s: %s; use cpu, cuda or cuda:N (or auto)", device,
                strcmp(device, "mps") == 0 ? "Apple's Metal (mps) is not supported" : "not a device");
    return FALSE;
}

static const char *const scheduler_fields[] = {
    "scheduler.num_warmup_steps", "scheduler.name",     "scheduler.num_decay_steps",
    "scheduler.peak_lr",          "scheduler.decay_lr",
};

/* Whether scheduler type `type` reads field `key`. */
static gboolean scheduler_uses(const char *type, const char *key)
{
    if (strcmp(type, "diffuser") == 0)
        return strcmp(key, "scheduler.num_warmup_steps") == 0 || strcmp(key, "scheduler.name") == 0;
    if (strcmp(type, "cosine_decay_with_warmup") == 0)
        return strcmp(key, "scheduler.name") != 0;
    return FALSE;
}

/* A scheduler.* field given on the command line that the scheduler type does not read. */
static gboolean check_scheduler_fields(const rt_config *cfg, GError **error)
{
    const char *type = rt_config_get_string(cfg, "scheduler.type");
    for (guint i = 0; i < G_N_ELEMENTS(scheduler_fields); i++) {
        const char *key = scheduler_fields[i];
        if (!from_args(cfg, key) || scheduler_uses(type ? type : "none", key))
            continue;
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "--%s has no effect with scheduler.type %s: add --scheduler.type=%s", key,
                    type ? type : "none",
                    strcmp(key, "scheduler.name") == 0 ? "diffuser" : "diffuser or cosine_decay_with_warmup");
        return FALSE;
    }
    return TRUE;
}

gboolean rt_train_validate(rt_config *cfg, GDateTime *now, rt_train_settings *settings, GPtrArray *notes,
                           GError **error)
{
    g_return_val_if_fail(cfg != NULL && settings != NULL, FALSE);
    settings->device_index = -1;

    /* a policy: fresh (--policy.type) or pretrained (--policy.path) */
    const char *type = rt_config_lookup(cfg, "policy.type") ? rt_config_get_string(cfg, "policy.type") : NULL;
    const char *path = rt_config_get_string(cfg, "policy.path");
    if (from_args(cfg, "policy.type") && from_args(cfg, "policy.path")) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "--policy.type=%s and --policy.path=%s cannot be combined: --policy.path already says the "
            "type (in its " RT_POLICY_CONFIG_NAME ")",
            type ? type : "null", path ? path : "null");
        return FALSE;
    }
    if (!type) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "Policy is not configured: give --policy.type=act for a new policy, or --policy.path=DIR for a "
            "pretrained one");
        return FALSE;
    }
    if (path && !set_value(cfg, "policy.pretrained_path", path, error))
        return FALSE;

    if (rt_config_get_bool(cfg, "resume") && !resolve_resume(cfg, settings, error))
        return FALSE;

    if (rt_config_is_null(cfg, "job_name")) {
        if (!rt_config_set(cfg, "job_name", type, error))
            return FALSE;
        note(notes, "job_name: %s (the policy type)", type);
    }
    const char *job_name = rt_config_get_string(cfg, "job_name");

    const char *output_dir = rt_config_get_string(cfg, "output_dir");
    gboolean resume = rt_config_get_bool(cfg, "resume");
    /* only rank 0 checks: the other ranks of a run may already see the folder it creates */
    if (output_dir && !resume && rt_train_dist_env_is_main() && g_file_test(output_dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_INVALID_ARG,
            "Output directory %s already exists and resume is False. Please change your output directory so "
            "that %s is not overwritten (or continue that run with --resume=true --config_path=%s/"
            "checkpoints/last/pretrained_model/" RT_TRAIN_CONFIG_NAME ")",
            output_dir, output_dir, output_dir);
        return FALSE;
    }
    if (!output_dir) {
        g_autoptr(GDateTime) local = now ? g_date_time_to_local(now) : g_date_time_new_now_local();
        g_autofree char *stamp = g_date_time_format(local, "%Y-%m-%d/%H-%M-%S");
        g_autofree char *dir = g_strdup_printf("outputs/train/%s_%s", stamp, job_name);
        if (!rt_config_set(cfg, "output_dir", dir, error))
            return FALSE;
        note(notes, "output_dir: %s", dir);
    }

    if (rt_config_lookup(cfg, "policy.push_to_hub") && rt_config_get_bool(cfg, "policy.push_to_hub") &&
        rt_config_is_null(cfg, "policy.repo_id")) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "'repo_id' argument missing. Please specify it to push the model to the hub: "
                    "--policy.repo_id=USER/NAME, or --policy.push_to_hub=false to keep the policy local");
        return FALSE;
    }

    /* robotrain's own checks */
    if (rt_config_lookup(cfg, "policy.use_peft") && rt_config_get_bool(cfg, "policy.use_peft")) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "policy.use_peft is true: PEFT adapters are not supported by robotrain");
        return FALSE;
    }
    if (rt_config_lookup(cfg, "policy.device") &&
        !parse_device(rt_config_get_string(cfg, "policy.device"), settings, error))
        return FALSE;
    size_t n_betas = 0;
    g_autofree double *betas = rt_config_get_double_list(cfg, "optimizer.betas", &n_betas);
    if (n_betas != 2 || !(betas[0] < 1) || !(betas[1] < 1)) {
        g_autofree char *origin = rt_config_describe_origin(cfg, "optimizer.betas");
        g_autofree char *text = rt_config_get_text(cfg, "optimizer.betas");
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s is %s: AdamW takes two betas, each in [0, 1), e.g. --optimizer.betas=[0.9,0.999]",
                    origin, text ? text : "null");
        return FALSE;
    }
    return check_scheduler_fields(cfg, error);
}

/* ---------------------------------------------------------------- optimizer */

static double get_double_or(const rt_config *cfg, const char *key, double fallback)
{
    if (!rt_config_lookup(cfg, key) || rt_config_is_null(cfg, key))
        return fallback;
    return rt_config_get_double(cfg, key);
}

void rt_train_preset_act(const rt_config *cfg, rt_train_preset *preset)
{
    memset(preset, 0, sizeof *preset);
    preset->policy_type = "act";
    /* ACTConfig's defaults, for a module table without these fields */
    preset->lr = get_double_or(cfg, "policy.optimizer_lr", 1e-5);
    preset->lr_key = "policy.optimizer_lr";
    preset->weight_decay = get_double_or(cfg, "policy.optimizer_weight_decay", 1e-4);
    preset->weight_decay_key = "policy.optimizer_weight_decay";
    /* AdamWConfig's defaults */
    preset->beta1 = 0.9;
    preset->beta2 = 0.999;
    preset->eps = 1e-8;
    preset->grad_clip_norm = 10.0;
    preset->n_extra_groups = 1;
    preset->group_name[0] = "backbone";
    preset->group_prefix[0] = "model.backbone";
    preset->group_lr[0] = get_double_or(cfg, "policy.optimizer_lr_backbone", 1e-5);
    preset->group_lr_key[0] = "policy.optimizer_lr_backbone";
}

void rt_train_preset_from_policy(const rt_config *cfg, const char *policy_type,
                                 const rt_policy_optimizer *opt, rt_train_preset *preset)
{
    memset(preset, 0, sizeof *preset);
    preset->policy_type = policy_type;
    const rt_adamw_group *g0 = &opt->groups[0];
    preset->lr = g0->lr;
    preset->weight_decay = g0->weight_decay;
    preset->beta1 = g0->beta1;
    preset->beta2 = g0->beta2;
    preset->eps = g0->eps;
    preset->grad_clip_norm = opt->grad_clip_norm;
    preset->lr_key = rt_config_lookup(cfg, "policy.optimizer_lr") ? "policy.optimizer_lr" : NULL;
    preset->weight_decay_key =
        rt_config_lookup(cfg, "policy.optimizer_weight_decay") ? "policy.optimizer_weight_decay" : NULL;
    preset->n_extra_groups = MIN(opt->n_groups, RT_TRAIN_MAX_GROUPS) - 1;
    for (int i = 0; i < preset->n_extra_groups; i++) {
        const char *name = opt->group_names[i + 1];
        preset->group_name[i] = name;
        preset->group_lr[i] = opt->groups[i + 1].lr;
        if (name) {
            g_autofree char *key = g_strdup_printf("policy.optimizer_lr_%s", name);
            const rt_option *row = rt_config_lookup(cfg, key);
            /* a static name: the row's own key is "optimizer_lr_<name>" under "policy" */
            preset->group_lr_key[i] = row ? g_intern_string(key) : NULL;
        }
    }
}

static char *format_double(double v)
{
    return opt_format_double(v);
}

/* Puts the preset's value into key unless the command line gave one; notes what was applied. */
static gboolean apply_preset_value(rt_config *cfg, const char *key, double value, const char *origin,
                                   const rt_train_preset *preset, GString *applied, GPtrArray *notes,
                                   GError **error)
{
    g_autofree char *text = format_double(value);
    const char *name = strchr(key, '.') + 1;
    if (from_args(cfg, key)) {
        g_autofree char *given = rt_config_get_text(cfg, key);
        note(notes,
             "--%s=%s given on the command line replaces the %s preset's %s %s%s%s%s; LeRobot ignores this "
             "flag "
             "while use_policy_training_preset is true",
             key, given, preset->policy_type, name, text, origin ? " (--" : "", origin ? origin : "",
             origin ? ")" : "");
        return TRUE;
    }
    g_string_append_printf(applied, "%s%s %s", applied->len ? ", " : "", name, text);
    return rt_config_set(cfg, key, text, error);
}

gboolean rt_train_resolve_optimizer(rt_config *cfg, const rt_train_preset *preset, rt_train_optim *optim,
                                    GPtrArray *notes, GError **error)
{
    g_return_val_if_fail(cfg != NULL && optim != NULL, FALSE);
    memset(optim, 0, sizeof *optim);
    gboolean use_preset = rt_config_get_bool(cfg, "use_policy_training_preset") && preset;
    gboolean resume = rt_config_get_bool(cfg, "resume");

    if (use_preset && !resume) {
        g_autoptr(GString) applied = g_string_new(NULL);
        if (!from_args(cfg, "optimizer.type") && !rt_config_set(cfg, "optimizer.type", "adamw", error))
            return FALSE;
        if (!apply_preset_value(cfg, "optimizer.lr", preset->lr, preset->lr_key, preset, applied, notes,
                                error) ||
            !apply_preset_value(cfg, "optimizer.weight_decay", preset->weight_decay, preset->weight_decay_key,
                                preset, applied, notes, error) ||
            !apply_preset_value(cfg, "optimizer.eps", preset->eps, NULL, preset, applied, notes, error) ||
            !apply_preset_value(cfg, "optimizer.grad_clip_norm", preset->grad_clip_norm, NULL, preset,
                                applied, notes, error))
            return FALSE;
        if (from_args(cfg, "optimizer.betas")) {
            g_autofree char *given = rt_config_get_text(cfg, "optimizer.betas");
            g_autofree char *b1 = format_double(preset->beta1), *b2 = format_double(preset->beta2);
            note(notes,
                 "--optimizer.betas=%s given on the command line replaces the %s preset's betas [%s, %s]; "
                 "LeRobot "
                 "ignores this flag while use_policy_training_preset is true",
                 given, preset->policy_type, b1, b2);
        } else {
            g_autofree char *b1 = format_double(preset->beta1), *b2 = format_double(preset->beta2);
            g_autofree char *text = g_strdup_printf("[%s,%s]", b1, b2);
            if (!rt_config_set(cfg, "optimizer.betas", text, error))
                return FALSE;
            g_string_append_printf(applied, ", betas [%s, %s]", b1, b2);
        }
        if (from_args(cfg, "scheduler.type")) {
            note(notes,
                 "--scheduler.type=%s given on the command line replaces the %s preset's schedule (none)",
                 rt_config_get_string(cfg, "scheduler.type"), preset->policy_type);
        } else {
            if (!rt_config_set(cfg, "scheduler.type", "none", error))
                return FALSE;
            g_string_append(applied, "; scheduler none");
        }
        if (applied->len)
            note(notes, "optimizer: the %s preset: AdamW %s", preset->policy_type, applied->str);
    } else if (rt_config_get_bool(cfg, "use_policy_training_preset") && !preset) {
        note(notes, "optimizer: the policy has no preset; using the --optimizer.* and --scheduler.* values");
    }

    size_t n_betas = 0;
    g_autofree double *betas = rt_config_get_double_list(cfg, "optimizer.betas", &n_betas);
    if (n_betas != 2) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "optimizer.betas has %zu values: AdamW takes two (beta1, beta2)", n_betas);
        return FALSE;
    }
    rt_adamw_group base = {
        .lr = rt_config_get_double(cfg, "optimizer.lr"),
        .beta1 = betas[0],
        .beta2 = betas[1],
        .eps = rt_config_get_double(cfg, "optimizer.eps"),
        .weight_decay = rt_config_get_double(cfg, "optimizer.weight_decay"),
    };
    optim->grad_clip_norm = rt_config_get_double(cfg, "optimizer.grad_clip_norm");
    optim->lr_from_args = from_args(cfg, "optimizer.lr");
    optim->n_groups = 1;
    optim->groups[0] = base;
    optim->group_prefix[0] = NULL;
    /* the policy's groups whenever presets are on (LeRobot's get_optim_params), resume included */
    if (use_preset) {
        for (int i = 0; i < preset->n_extra_groups && optim->n_groups < RT_TRAIN_MAX_GROUPS; i++) {
            rt_adamw_group group = base;
            group.lr = preset->group_lr[i];
            optim->groups[optim->n_groups] = group;
            optim->group_prefix[optim->n_groups] = preset->group_prefix[i];
            optim->n_groups++;
            if (!resume && optim->lr_from_args) {
                g_autofree char *lr = format_double(group.lr);
                note(notes, "optimizer: group %d (%s) keeps lr %s%s%s%s", optim->n_groups - 1,
                     preset->group_name[i] ? preset->group_name[i] : "the policy's", lr,
                     preset->group_lr_key[i] ? " (--" : " (the preset's)",
                     preset->group_lr_key[i] ? preset->group_lr_key[i] : "",
                     preset->group_lr_key[i] ? ")" : "");
            }
        }
    }

    g_autofree char *schedule_note = NULL;
    if (!rt_lr_schedule_from_config(cfg, rt_config_get_int(cfg, "steps"), base.lr, &optim->schedule,
                                    &schedule_note, error))
        return FALSE;
    if (schedule_note)
        note(notes, "%s", schedule_note);
    return TRUE;
}
