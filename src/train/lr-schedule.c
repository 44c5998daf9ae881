/* Learning-rate schedules: LeRobot's scheduler configs as pure functions of the step. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/error.h>
#include <robotrain/option.h>

#include "train/lr-schedule.h"

static double warmup(int64_t step, int64_t warmup_steps)
{
    return (double)step / (double)MAX(1, warmup_steps);
}

static double diffuser_factor(const rt_lr_schedule *s, int64_t step)
{
    int64_t w = s->warmup_steps, total = s->training_steps;
    if (s->name == RT_LR_DIFFUSER_CONSTANT)
        return 1.0;
    if (step < w)
        return warmup(step, w);
    switch (s->name) {
    case RT_LR_DIFFUSER_CONSTANT_WITH_WARMUP:
        return 1.0;
    case RT_LR_DIFFUSER_LINEAR:
        return MAX(0.0, (double)(total - step) / (double)MAX(1, total - w));
    case RT_LR_DIFFUSER_COSINE: {
        double progress = (double)(step - w) / (double)MAX(1, total - w);
        /* num_cycles 0.5: half a period, from 1 down to 0 */
        return MAX(0.0, 0.5 * (1.0 + cos(M_PI * 0.5 * 2.0 * progress)));
    }
    case RT_LR_DIFFUSER_COSINE_WITH_RESTARTS: {
        double progress = (double)(step - w) / (double)MAX(1, total - w);
        if (progress >= 1.0)
            return 0.0;
        return MAX(0.0, 0.5 * (1.0 + cos(M_PI * fmod(1.0 * progress, 1.0))));
    }
    case RT_LR_DIFFUSER_POLYNOMIAL: {
        const double lr_end = 1e-7, power = 1.0;
        double lr_init = s->base_lr;
        if (step > total)
            return lr_end / lr_init;
        double pct_remaining = 1.0 - (double)(step - w) / (double)(total - w);
        return ((lr_init - lr_end) * pow(pct_remaining, power) + lr_end) / lr_init;
    }
    case RT_LR_DIFFUSER_CONSTANT:
    default:
        return 1.0;
    }
}

static double cosine_decay_factor(const rt_lr_schedule *s, int64_t step)
{
    int64_t w = s->warmup_steps, d = s->decay_steps;
    if (step < w) {
        if (step <= 0)
            return 1.0 / (double)(w + 1);
        double frac = 1.0 - (double)step / (double)w;
        return (1.0 / (double)(w + 1) - 1.0) * frac + 1.0;
    }
    int64_t t = MIN(step, d);
    double cosine = 0.5 * (1.0 + cos(M_PI * (double)t / (double)d));
    double alpha = s->decay_lr / s->peak_lr;
    return (1.0 - alpha) * cosine + alpha;
}

double rt_lr_schedule_factor(const rt_lr_schedule *schedule, int64_t step)
{
    g_return_val_if_fail(schedule != NULL, 1.0);
    switch (schedule->kind) {
    case RT_LR_DIFFUSER:
        return diffuser_factor(schedule, step);
    case RT_LR_COSINE_DECAY_WITH_WARMUP:
        return cosine_decay_factor(schedule, step);
    case RT_LR_NONE:
    default:
        return 1.0;
    }
}

const char *rt_lr_kind_name(rt_lr_kind kind)
{
    switch (kind) {
    case RT_LR_DIFFUSER:
        return "diffuser";
    case RT_LR_COSINE_DECAY_WITH_WARMUP:
        return "cosine_decay_with_warmup";
    case RT_LR_NONE:
    default:
        return "none";
    }
}

static const char *const diffuser_names[] = {
    "constant", "constant_with_warmup", "linear", "cosine", "cosine_with_restarts", "polynomial",
};

const char *rt_lr_diffuser_name_str(rt_lr_diffuser_name name)
{
    return (unsigned)name < G_N_ELEMENTS(diffuser_names) ? diffuser_names[name] : "constant";
}

/* An int option that must be set (not null) and >= lo. */
static gboolean need_int(const rt_config *cfg, const char *key, const char *why, gint64 lo, gint64 *out,
                         GError **error)
{
    if (rt_config_is_null(cfg, key)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s needs --%s (an integer >= %" G_GINT64_FORMAT ")", why, key, lo);
        return FALSE;
    }
    *out = rt_config_get_int(cfg, key);
    if (*out < lo) {
        g_autofree char *origin = rt_config_describe_origin(cfg, key);
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s needs %s >= %" G_GINT64_FORMAT ", but %s is %" G_GINT64_FORMAT, why, key, lo, origin,
                    *out);
        return FALSE;
    }
    return TRUE;
}

static gboolean need_float(const rt_config *cfg, const char *key, const char *why, double *out,
                           GError **error)
{
    if (rt_config_is_null(cfg, key)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s needs --%s (a number > 0)", why, key);
        return FALSE;
    }
    *out = rt_config_get_double(cfg, key);
    if (!(*out > 0)) {
        g_autofree char *origin = rt_config_describe_origin(cfg, key);
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s needs %s > 0, but %s is %g", why, key, origin,
                    *out);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_lr_schedule_from_config(const rt_config *cfg, int64_t total_steps, double base_lr,
                                    rt_lr_schedule *schedule, char **note, GError **error)
{
    g_return_val_if_fail(cfg != NULL && schedule != NULL, FALSE);
    memset(schedule, 0, sizeof *schedule);
    schedule->training_steps = total_steps;
    schedule->base_lr = base_lr;
    if (note)
        *note = NULL;
    const char *type = rt_config_get_string(cfg, "scheduler.type");
    if (!type || strcmp(type, "none") == 0) {
        schedule->kind = RT_LR_NONE;
        return TRUE;
    }
    if (strcmp(type, "diffuser") == 0) {
        schedule->kind = RT_LR_DIFFUSER;
        const char *name = rt_config_get_string(cfg, "scheduler.name");
        gboolean found = FALSE;
        for (guint i = 0; name && i < G_N_ELEMENTS(diffuser_names); i++)
            if (strcmp(name, diffuser_names[i]) == 0) {
                schedule->name = (rt_lr_diffuser_name)i;
                found = TRUE;
            }
        if (!found) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "scheduler.name '%s' is not a diffusers schedule", name ? name : "null");
            return FALSE;
        }
        if (schedule->name == RT_LR_DIFFUSER_CONSTANT)
            return TRUE;
        g_autofree char *why = g_strdup_printf("the diffuser schedule '%s'", name);
        gint64 w = 0;
        if (!need_int(cfg, "scheduler.num_warmup_steps", why, 0, &w, error))
            return FALSE;
        schedule->warmup_steps = w;
        if (schedule->name == RT_LR_DIFFUSER_POLYNOMIAL) {
            if (w >= total_steps) {
                g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                            "the diffuser schedule 'polynomial' decays over steps - num_warmup_steps steps: "
                            "scheduler.num_warmup_steps (%" G_GINT64_FORMAT
                            ") must be less than --steps (%" G_GINT64_FORMAT ")",
                            w, (gint64)total_steps);
                return FALSE;
            }
            if (!(base_lr > 1e-7)) {
                g_set_error(
                    error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "the diffuser schedule 'polynomial' decays to 1e-07: the optimizer's lr (%g) must be "
                    "larger",
                    base_lr);
                return FALSE;
            }
        }
        return TRUE;
    }
    if (strcmp(type, "cosine_decay_with_warmup") == 0) {
        schedule->kind = RT_LR_COSINE_DECAY_WITH_WARMUP;
        const char *why = "the schedule cosine_decay_with_warmup";
        gint64 w = 0, d = 0;
        if (!need_int(cfg, "scheduler.num_warmup_steps", why, 0, &w, error) ||
            !need_int(cfg, "scheduler.num_decay_steps", why, 1, &d, error) ||
            !need_float(cfg, "scheduler.peak_lr", why, &schedule->peak_lr, error) ||
            !need_float(cfg, "scheduler.decay_lr", why, &schedule->decay_lr, error))
            return FALSE;
        schedule->warmup_steps = w;
        schedule->decay_steps = d;
        if (total_steps < d) {
            /* LeRobot fits the schedule into a shorter run: int(W x steps / D), and D = steps */
            double scale = (double)total_steps / (double)d;
            schedule->warmup_steps = (int64_t)((double)w * scale);
            schedule->decay_steps = MAX(total_steps, 1);
            if (note)
                *note = g_strdup_printf(
                    "scheduler: --steps (%" G_GINT64_FORMAT ") < num_decay_steps (%" G_GINT64_FORMAT
                    "): warmup scaled %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT ", decay %" G_GINT64_FORMAT
                    " -> %" G_GINT64_FORMAT " (scale factor %.3f)",
                    (gint64)total_steps, d, w, (gint64)schedule->warmup_steps, d,
                    (gint64)schedule->decay_steps, scale);
        }
        return TRUE;
    }
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "scheduler.type '%s' is not a known schedule", type);
    return FALSE;
}
