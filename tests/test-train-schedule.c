/* Learning-rate schedules against values computed by hand from the formulas of LeRobot's
 * schedulers.py and diffusers' optimization.py. */
#include "config.h"

#include <robotrain/error.h>
#include <robotrain/option.h>

#include "testing.h"
#include "train/lr-schedule.h"
#include "train/train-options.h"

static rt_config *train_config(void)
{
    rt_config *cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    if (!rt_train_add_options(cfg, &error)) {
        printf("# %s\n", error->message);
        g_clear_error(&error);
    }
    return cfg;
}

static gboolean set(rt_config *cfg, const char *key, const char *value)
{
    GError *error = NULL;
    gboolean ok = rt_config_set(cfg, key, value, &error);
    if (!ok) {
        printf("# %s\n", error->message);
        g_clear_error(&error);
    }
    return ok;
}

DEF_TEST(none_is_constant)
{
    g_autoptr(rt_config) cfg = train_config();
    rt_lr_schedule s;
    GError *error = NULL;
    OK(rt_lr_schedule_from_config(cfg, 100000, 1e-5, &s, NULL, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_LR_NONE, s.kind);
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 0), 0);
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 99999), 0);
    EXPECT_EQ_STR("none", rt_lr_kind_name(s.kind));
    return 0;
}

DEF_TEST(diffuser_cosine)
{
    g_autoptr(rt_config) cfg = train_config();
    OK(set(cfg, "scheduler.type", "diffuser"));
    OK(set(cfg, "scheduler.num_warmup_steps", "10"));
    rt_lr_schedule s;
    GError *error = NULL;
    OK(rt_lr_schedule_from_config(cfg, 110, 1e-4, &s, NULL, &error));
    EXPECT_EQ_INT(RT_LR_DIFFUSER_COSINE, s.name); /* the default name */
    /* warmup: step / 10 */
    EXPECT_NEAR(0.0, rt_lr_schedule_factor(&s, 0), 1e-15);
    EXPECT_NEAR(0.5, rt_lr_schedule_factor(&s, 5), 1e-15);
    /* then 0.5 (1 + cos(pi progress)), progress = (step - 10) / 100 */
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 10), 1e-15);
    EXPECT_NEAR(0.853553390593274, rt_lr_schedule_factor(&s, 35), 1e-13);
    EXPECT_NEAR(0.5, rt_lr_schedule_factor(&s, 60), 1e-15);
    EXPECT_NEAR(0.0, rt_lr_schedule_factor(&s, 110), 1e-15);
    /* past the end the cosine rises again, as in diffusers */
    EXPECT_NEAR(0.0244717418524232, rt_lr_schedule_factor(&s, 120), 1e-13);
    return 0;
}

DEF_TEST(diffuser_other_names)
{
    g_autoptr(rt_config) cfg = train_config();
    OK(set(cfg, "scheduler.type", "diffuser"));
    rt_lr_schedule s;
    GError *error = NULL;

    OK(set(cfg, "scheduler.name", "constant"));
    OK(rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error)); /* no warmup needed */
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 0), 0);

    OK(set(cfg, "scheduler.num_warmup_steps", "4"));
    OK(set(cfg, "scheduler.name", "constant_with_warmup"));
    OK(rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error));
    EXPECT_NEAR(0.25, rt_lr_schedule_factor(&s, 1), 1e-15);
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 4), 1e-15);
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 1000), 1e-15);

    OK(set(cfg, "scheduler.num_warmup_steps", "10"));
    OK(set(cfg, "scheduler.name", "linear"));
    OK(rt_lr_schedule_from_config(cfg, 110, 1e-4, &s, NULL, &error));
    EXPECT_NEAR(0.3, rt_lr_schedule_factor(&s, 3), 1e-15);
    EXPECT_NEAR(0.5, rt_lr_schedule_factor(&s, 60), 1e-15);  /* (110 - 60) / 100 */
    EXPECT_NEAR(0.0, rt_lr_schedule_factor(&s, 120), 1e-15); /* clamped at 0 */

    OK(set(cfg, "scheduler.num_warmup_steps", "0"));
    OK(set(cfg, "scheduler.name", "cosine_with_restarts"));
    OK(rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error));
    EXPECT_NEAR(1.0, rt_lr_schedule_factor(&s, 0), 1e-15);
    EXPECT_NEAR(0.853553390593274, rt_lr_schedule_factor(&s, 25), 1e-13);
    EXPECT_NEAR(0.0, rt_lr_schedule_factor(&s, 100), 0);

    OK(set(cfg, "scheduler.name", "polynomial"));
    OK(rt_lr_schedule_from_config(cfg, 100, 1e-3, &s, NULL, &error));
    /* ((lr - 1e-7) x (1 - 50/100) + 1e-7) / lr */
    EXPECT_NEAR(0.50005, rt_lr_schedule_factor(&s, 50), 1e-12);
    EXPECT_NEAR(1e-4, rt_lr_schedule_factor(&s, 150), 1e-15); /* lr_end / lr after the end */
    EXPECT_NO_ERROR(error);
    return 0;
}

DEF_TEST(cosine_decay_with_warmup)
{
    g_autoptr(rt_config) cfg = train_config();
    /* pi0's values */
    OK(set(cfg, "scheduler.type", "cosine_decay_with_warmup"));
    OK(set(cfg, "scheduler.num_warmup_steps", "1000"));
    OK(set(cfg, "scheduler.num_decay_steps", "30000"));
    OK(set(cfg, "scheduler.peak_lr", "2.5e-5"));
    OK(set(cfg, "scheduler.decay_lr", "2.5e-6"));
    rt_lr_schedule s;
    char *note = NULL;
    GError *error = NULL;
    OK(rt_lr_schedule_from_config(cfg, 30000, 2.5e-5, &s, &note, &error));
    OK(note == NULL); /* steps >= num_decay_steps: nothing scaled */
    EXPECT_EQ_INT(1000, s.warmup_steps);
    /* warmup from 1/(W+1): (1/1001 - 1)(1 - step/1000) + 1 */
    EXPECT_NEAR(1.0 / 1001.0, rt_lr_schedule_factor(&s, 0), 1e-15);
    EXPECT_NEAR(0.5004995004995005, rt_lr_schedule_factor(&s, 500), 1e-13);
    /* cosine from 1 to alpha = 0.1: 0.9 x 0.5 (1 + cos(pi t / 30000)) + 0.1 */
    EXPECT_NEAR(0.997534852915723, rt_lr_schedule_factor(&s, 1000), 1e-13);
    EXPECT_NEAR(0.55, rt_lr_schedule_factor(&s, 15000), 1e-12);
    EXPECT_NEAR(0.1, rt_lr_schedule_factor(&s, 30000), 1e-12);
    EXPECT_NEAR(0.1, rt_lr_schedule_factor(&s, 40000), 1e-12); /* flat after the decay */

    /* a shorter run scales both: W = int(1000 x 0.1) = 100, D = 3000 */
    OK(rt_lr_schedule_from_config(cfg, 3000, 2.5e-5, &s, &note, &error));
    EXPECT_EQ_INT(100, s.warmup_steps);
    EXPECT_EQ_INT(3000, s.decay_steps);
    EXPECT_EQ_STR(
        "scheduler: --steps (3000) < num_decay_steps (30000): warmup scaled 1000 -> 100, decay 30000 -> "
        "3000 (scale factor 0.100)",
        note);
    g_free(note);
    EXPECT_NEAR(0.504950495049505, rt_lr_schedule_factor(&s, 50), 1e-13);
    EXPECT_NEAR(0.55, rt_lr_schedule_factor(&s, 1500), 1e-12);
    EXPECT_NO_ERROR(error);
    return 0;
}

DEF_TEST(incomplete_schedules)
{
    g_autoptr(rt_config) cfg = train_config();
    rt_lr_schedule s;
    GError *error = NULL;
    OK(set(cfg, "scheduler.type", "diffuser"));
    OK(!rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error));
    EXPECT_ERROR(error,
                 "the diffuser schedule 'cosine' needs --scheduler.num_warmup_steps (an integer >= 0)");

    OK(set(cfg, "scheduler.name", "polynomial"));
    OK(set(cfg, "scheduler.num_warmup_steps", "100"));
    OK(!rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error));
    EXPECT_ERROR(error, "scheduler.num_warmup_steps (100) must be less than --steps (100)");

    OK(set(cfg, "scheduler.type", "cosine_decay_with_warmup"));
    OK(set(cfg, "scheduler.num_decay_steps", "1000"));
    OK(!rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error));
    EXPECT_ERROR(error, "the schedule cosine_decay_with_warmup needs --scheduler.peak_lr (a number > 0)");
    OK(set(cfg, "scheduler.peak_lr", "1e-4"));
    OK(set(cfg, "scheduler.decay_lr", "0"));
    OK(!rt_lr_schedule_from_config(cfg, 100, 1e-4, &s, NULL, &error));
    EXPECT_ERROR(error, "needs scheduler.decay_lr > 0, but scheduler.decay_lr (set by the program) is 0");
    return 0;
}

int main(void)
{
    RUN_TEST(none_is_constant);
    RUN_TEST(diffuser_cosine);
    RUN_TEST(diffuser_other_names);
    RUN_TEST(cosine_decay_with_warmup);
    RUN_TEST(incomplete_schedules);
    END_TEST;
}
