/* Mixed precision for robotrain train: the decision and the hooks into the run (see amp.h). */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/error.h>
#include <robotrain/ops.h>

#include "train/amp.h"

static const char *const precision_names[] = {"no", "fp16", "bf16"};

const char *rt_precision_name(rt_precision p)
{
    return (unsigned)p < G_N_ELEMENTS(precision_names) ? precision_names[p] : NULL;
}

gboolean rt_precision_from_name(const char *name, rt_precision *p)
{
    for (guint i = 0; name && i < G_N_ELEMENTS(precision_names); i++)
        if (strcmp(name, precision_names[i]) == 0) {
            *p = (rt_precision)i;
            return TRUE;
        }
    return FALSE;
}

void rt_amp_env_from_process(rt_amp_env *env)
{
    env->mixed_precision = g_getenv(RT_AMP_ENV);
    env->init_scale = g_getenv(RT_AMP_INIT_SCALE_ENV);
}

static gboolean env_set(const char *value)
{
    return value && *value;
}

/* the variable's precision; FALSE (with error) for a bad value */
static gboolean env_precision(const rt_amp_env *env, rt_precision *p, GError **error)
{
    if (rt_precision_from_name(env->mixed_precision, p))
        return TRUE;
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                RT_AMP_ENV "=%s: robotrain trains in no (float32), fp16 or bf16; set one of them "
                           "(robotrain launch --mixed_precision=...) or unset it",
                env->mixed_precision);
    return FALSE;
}

static gboolean init_scale_of(const rt_amp_env *env, double *scale, GError **error)
{
    *scale = 65536.0;
    if (!env_set(env->init_scale))
        return TRUE;
    char *end = NULL;
    double v = g_ascii_strtod(env->init_scale, &end);
    if (!end || *end || !(v > 0) || isinf((float)v) || !((float)v > 0)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    RT_AMP_INIT_SCALE_ENV "=%s: the initial loss scale must be a positive number that "
                                          "float32 holds (1 to 3.4e38; the default is 65536)",
                    env->init_scale);
        return FALSE;
    }
    *scale = v;
    return TRUE;
}

gboolean rt_train_amp_check(const rt_config *cfg, const rt_amp_env *env, GError **error)
{
    double scale;
    if (!init_scale_of(env, &scale, error))
        return FALSE;
    if (!env_set(env->mixed_precision))
        return TRUE;
    rt_precision p;
    if (!env_precision(env, &p, error))
        return FALSE;
    if (rt_config_get_source(cfg, "policy.use_amp") != RT_SOURCE_ARGS)
        return TRUE;
    gboolean use_amp = rt_config_get_bool(cfg, "policy.use_amp");
    if (use_amp && p == RT_PRECISION_NO) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "--policy.use_amp=true conflicts with " RT_AMP_ENV "=no (robotrain launch "
                    "--mixed_precision=no, its default): give robotrain launch --mixed_precision=bf16 or "
                    "fp16, or drop --policy.use_amp=true");
        return FALSE;
    }
    if (!use_amp && p != RT_PRECISION_NO) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "--policy.use_amp=false conflicts with " RT_AMP_ENV "=%s (robotrain launch "
                    "--mixed_precision=%s): drop one of them",
                    env->mixed_precision, env->mixed_precision);
        return FALSE;
    }
    return TRUE;
}

static void note(GPtrArray *notes, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void note(GPtrArray *notes, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    char *text = g_strdup_vprintf(format, ap);
    va_end(ap);
    if (notes)
        g_ptr_array_add(notes, text);
    else
        g_free(text);
}

static const char *what(rt_precision p)
{
    switch (p) {
    case RT_PRECISION_FP16:
        return "fp16 (matmul, linear, conv2d and attention inputs rounded to float16, float32 "
               "accumulation and weights; dynamic loss scaling)";
    case RT_PRECISION_BF16:
        return "bf16 (matmul, linear, conv2d and attention inputs rounded to bfloat16, float32 "
               "accumulation and weights)";
    case RT_PRECISION_NO:
    default:
        return "float32";
    }
}

gboolean rt_train_amp_backend_scales(const rt_backend_i *backend, rt_backend_device *dev)
{
    if (!backend->supports_op)
        return TRUE;
    /* the nodes rt_graph_add_adamw appends with loss scaling, on small f32 tensors */
    rt_tensor flat = {.dtype = RT_F32, .ndim = 1, .shape = {256}, .stride = {1}, .batch_axis = -1};
    rt_tensor state = {.dtype = RT_F64, .ndim = 1, .shape = {4}, .stride = {1}, .batch_axis = -1};
    rt_tensor step = {.dtype = RT_F64, .ndim = 1, .shape = {1}, .stride = {1}, .batch_axis = -1};
    rt_tensor hyper = {.dtype = RT_F64, .ndim = 1, .shape = {6}, .stride = {1}, .batch_axis = -1};
    rt_node nodes[4] = {
        {.op = RT_OP_AMP_UNSCALE, .n_src = 2, .src = {&flat, &state}},
        {.op = RT_OP_STEP_INC, .n_src = 2, .src = {&step, &state}},
        {.op = RT_OP_ADAMW, .n_src = 7, .src = {&flat, &flat, &flat, &flat, &hyper, &step, &state}},
        {.op = RT_OP_AMP_UPDATE, .n_src = 1, .src = {&state}, .ip = {2000}, .fp = {2, 0.5}},
    };
    for (guint i = 0; i < G_N_ELEMENTS(nodes); i++)
        if (!backend->supports_op(dev, &nodes[i]))
            return FALSE;
    return TRUE;
}

gboolean rt_train_amp_resolve(rt_train_amp *amp, rt_config *cfg, const rt_amp_env *env, gboolean on_cuda,
                              gboolean backend_scales, const rt_ckpt_precision *saved, GPtrArray *notes,
                              GError **error)
{
    memset(amp, 0, sizeof *amp);
    if (!rt_train_amp_check(cfg, env, error))
        return FALSE;
    gboolean use_amp = rt_config_get_bool(cfg, "policy.use_amp");
    const char *device = on_cuda ? "CUDA" : "the CPU";
    rt_precision mode = RT_PRECISION_NO;
    g_autofree char *why = NULL;
    gboolean by_default = FALSE;
    if (env_set(env->mixed_precision)) {
        env_precision(env, &mode, NULL);
        why = g_strdup_printf(RT_AMP_ENV "=%s", env->mixed_precision);
        if (use_amp != (mode != RT_PRECISION_NO))
            note(notes, "policy.use_amp=%s (from %s) gives way to " RT_AMP_ENV "=%s",
                 use_amp ? "true" : "false",
                 rt_config_get_source(cfg, "policy.use_amp") == RT_SOURCE_FILE ? "the config file"
                                                                               : "the default",
                 env->mixed_precision);
    } else if (use_amp) {
        /* torch.autocast's default dtype on the device, as LeRobot v0.6.1 autocasts */
        mode = on_cuda ? RT_PRECISION_FP16 : RT_PRECISION_BF16;
        by_default = TRUE;
        why = g_strdup_printf("policy.use_amp=true without " RT_AMP_ENV ": autocast's default on %s", device);
    }
    rt_precision saved_mode = RT_PRECISION_NO;
    gboolean has_saved = saved && rt_precision_from_name(saved->mixed_precision, &saved_mode);
    if (has_saved && saved_mode != mode) {
        if (by_default) {
            mode = saved_mode;
            g_free(why);
            why = g_strdup_printf("policy.use_amp=true, as the checkpoint trained");
        } else {
            note(notes,
                 "the checkpoint trained in %s; this run continues in %s (%s), so it does not continue "
                 "the run bit for bit",
                 saved_mode == RT_PRECISION_NO ? "float32" : rt_precision_name(saved_mode),
                 mode == RT_PRECISION_NO ? "float32" : rt_precision_name(mode),
                 why ? why : "policy.use_amp=false");
        }
    }
    if (mode == RT_PRECISION_FP16 && !backend_scales) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "mixed precision fp16 (%s) on %s: its backend cannot run dynamic loss scaling (the "
                    "amp_unscale and amp_update ops) yet; use bf16 (" RT_AMP_ENV "=bf16, robotrain launch "
                    "--mixed_precision=bf16) or --policy.device=cpu",
                    why, device);
        return FALSE;
    }
    amp->mode = mode;
    amp->mixed_precision_name = g_strdup(rt_precision_name(mode));
    if (mode == RT_PRECISION_FP16) {
        amp->scaling = TRUE;
        amp->scaler = (rt_loss_scale_config)RT_LOSS_SCALE_CONFIG_INIT;
        if (!init_scale_of(env, &amp->scaler.init_scale, error))
            return FALSE;
        if (has_saved && saved_mode == RT_PRECISION_FP16 && saved->has_scaler) {
            amp->scaler = saved->scaler_config;
            amp->restore = TRUE;
            amp->restored_state = saved->scaler;
            note(notes,
                 "loss scaler from the checkpoint: scale %g, %" G_GINT64_FORMAT
                 " step(s) since it last changed, %" G_GINT64_FORMAT " step(s) skipped so far",
                 saved->scaler.scale, (gint64)saved->scaler.growth_tracker, (gint64)saved->scaler.skipped);
        } else if (has_saved) {
            note(notes, "the checkpoint has no loss scaler state: it starts afresh at %g",
                 amp->scaler.init_scale);
        }
    }
    if (mode != RT_PRECISION_NO)
        note(notes, "Mixed precision: %s; %s", what(mode), why);
    if (mode == RT_PRECISION_FP16)
        note(notes,
             "Loss scaling: initial scale %g, growth factor %g every %" G_GINT64_FORMAT
             " steps without overflow, backoff %g; steps whose gradients overflow are skipped",
             amp->restore ? amp->restored_state.scale : amp->scaler.init_scale, amp->scaler.growth_factor,
             (gint64)amp->scaler.growth_interval, amp->scaler.backoff_factor);
    /* train_config.json records whether autocast ran, as LeRobot's use_amp */
    return rt_config_set(cfg, "policy.use_amp", mode != RT_PRECISION_NO ? "true" : "false", error);
}

void rt_train_amp_clear(rt_train_amp *amp)
{
    g_clear_pointer(&amp->mixed_precision_name, g_free);
}

void rt_train_amp_begin_graph(const rt_train_amp *amp, rt_graph *g)
{
    rt_graph_set_compute_dtype(g, amp->mode == RT_PRECISION_FP16   ? RT_F16
                                  : amp->mode == RT_PRECISION_BF16 ? RT_BF16
                                                                   : RT_F32);
}

gboolean rt_train_amp_before_backward(const rt_train_amp *amp, rt_graph *g, GError **error)
{
    return !amp->scaling || rt_graph_enable_loss_scaling(g, &amp->scaler, error);
}

gboolean rt_train_amp_after_plan(rt_train_amp *amp, rt_graph *g, GError **error)
{
    if (!amp->scaling)
        return TRUE;
    if (amp->restore && !rt_graph_set_loss_scale(g, &amp->restored_state, error))
        return FALSE;
    if (!rt_graph_get_loss_scale(g, &amp->state, error))
        return FALSE;
    amp->skipped_at_log = amp->state.skipped;
    return TRUE;
}

gboolean rt_train_amp_after_step(rt_train_amp *amp, rt_graph *g, GError **error)
{
    return !amp->scaling || rt_graph_get_loss_scale(g, &amp->state, error);
}

void rt_train_amp_log(rt_train_amp *amp, rt_metrics *m)
{
    if (!amp->scaling)
        return;
    rt_metrics_add_meter(m, "loss_scale", "lscale", 'f', 0);
    rt_metrics_add_meter(m, "skipped_steps", "skip", 'f', 0);
    rt_metrics_update(m, "loss_scale", amp->state.scale);
    rt_metrics_update(m, "skipped_steps", (double)(amp->state.skipped - amp->skipped_at_log));
    amp->skipped_at_log = amp->state.skipped;
}

const rt_ckpt_precision *rt_train_amp_checkpoint(const rt_train_amp *amp, rt_ckpt_precision *storage)
{
    if (amp->mode == RT_PRECISION_NO)
        return NULL;
    memset(storage, 0, sizeof *storage);
    storage->mixed_precision = amp->mixed_precision_name;
    storage->has_scaler = amp->scaling;
    storage->scaler_config = amp->scaler;
    storage->scaler = amp->state;
    return storage;
}
