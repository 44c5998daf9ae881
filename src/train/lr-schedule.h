/* src/train/lr-schedule.h: learning-rate schedules as LeRobot builds them.
 *
 * A schedule is a pure function of the number of optimizer steps already taken, returning the
 * factor PyTorch's LambdaLR multiplies every group's base learning rate by. LeRobot steps its
 * scheduler once after each optimizer step (step_scheduler_with_optimizer=False, one scheduler
 * step per update), so the update that turns step s into s + 1 uses base_lr x factor(s), and the
 * lr logged at step s (read after the scheduler stepped) is base_lr x factor(s) too. Being pure,
 * a schedule resumes from the step count alone.
 *
 * Types (LeRobot's --scheduler.type; src/lerobot/optim/schedulers.py):
 *   none                      no scheduler (ACT's preset): factor 1.
 *   diffuser                  diffusers' get_scheduler(name, num_warmup_steps, num_training_steps
 *                             = --steps); names: constant, constant_with_warmup, linear, cosine
 *                             (half a cosine from 1 to 0 after a linear warmup from 0),
 *                             cosine_with_restarts (one cycle), polynomial (power 1, lr_end 1e-7).
 *   cosine_decay_with_warmup  Physical Intelligence's schedule (pi0): a linear warmup from
 *                             1/(W+1) to 1 over W steps, then a cosine from 1 down to
 *                             decay_lr/peak_lr over D steps, flat after; when --steps < D both
 *                             W and D are scaled by steps/D (W rounded down) as LeRobot does. */
#ifndef ROBOTRAIN_TRAIN_LR_SCHEDULE_H
#define ROBOTRAIN_TRAIN_LR_SCHEDULE_H

#include <stdint.h>

#include <glib.h>

struct rt_config;

G_BEGIN_DECLS

typedef enum {
    RT_LR_NONE,
    RT_LR_DIFFUSER,
    RT_LR_COSINE_DECAY_WITH_WARMUP,
} rt_lr_kind;

typedef enum {
    RT_LR_DIFFUSER_CONSTANT,
    RT_LR_DIFFUSER_CONSTANT_WITH_WARMUP,
    RT_LR_DIFFUSER_LINEAR,
    RT_LR_DIFFUSER_COSINE,
    RT_LR_DIFFUSER_COSINE_WITH_RESTARTS,
    RT_LR_DIFFUSER_POLYNOMIAL,
} rt_lr_diffuser_name;

typedef struct rt_lr_schedule {
    rt_lr_kind kind;
    rt_lr_diffuser_name name; /* RT_LR_DIFFUSER */
    int64_t warmup_steps;     /* as applied (after cosine_decay_with_warmup's scaling) */
    int64_t decay_steps;      /* RT_LR_COSINE_DECAY_WITH_WARMUP, as applied */
    int64_t training_steps;   /* RT_LR_DIFFUSER: --steps */
    double peak_lr, decay_lr; /* RT_LR_COSINE_DECAY_WITH_WARMUP */
    double base_lr;           /* RT_LR_DIFFUSER polynomial: the optimizer's lr (lr_init) */
} rt_lr_schedule;

/* The factor for the update after `step` optimizer steps (step >= 0). */
double rt_lr_schedule_factor(const rt_lr_schedule *schedule, int64_t step);

/* The name LeRobot's config uses: "none" (null in train_config.json), "diffuser",
 * "cosine_decay_with_warmup". Returns (transfer none). */
const char *rt_lr_kind_name(rt_lr_kind kind);
/* "cosine", "linear", ... Returns (transfer none). */
const char *rt_lr_diffuser_name_str(rt_lr_diffuser_name name);

/* Builds the schedule from the scheduler.* options of cfg for a run of total_steps steps, with
 * base_lr the optimizer's lr (group 0). note (may be NULL) receives a line saying what was scaled
 * (cosine_decay_with_warmup with steps < num_decay_steps), or NULL (transfer full, g_free).
 * Fails (RT_ERROR_INVALID_ARG) naming the flag that is missing or out of range. */
gboolean rt_lr_schedule_from_config(const struct rt_config *cfg, int64_t total_steps, double base_lr,
                                    rt_lr_schedule *schedule, char **note, GError **error);

G_END_DECLS

#endif
