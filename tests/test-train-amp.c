/* Which precision robotrain train picks (src/train/amp.h): ROBOTRAIN_MIXED_PRECISION against
 * --policy.use_amp, the device's autocast default, the refusals, a resumed checkpoint's
 * precision and scaler, what goes into checkpoints and log lines. */
#include "config.h"

#include <stdarg.h>
#include <string.h>

#include <robotrain/robotrain.h>

#include "testing.h"
#include "train/amp.h"
#include "train/train-options.h"

static rt_config *config_with(const char *flag)
{
    rt_config *cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    char *argv[4] = {(char *)"train", (char *)"--dataset.repo_id=x/y", (char *)flag, NULL};
    if (!rt_train_add_options(cfg, &error) || !rt_train_add_policy_options(cfg, NULL, 0, &error) ||
        !rt_config_parse_args(cfg, flag ? 3 : 2, argv, NULL, &error)) {
        printf("# %s\n", error->message);
        g_clear_error(&error);
    }
    return cfg;
}

static gboolean has_note(GPtrArray *notes, const char *text)
{
    for (guint i = 0; i < notes->len; i++)
        if (strstr(g_ptr_array_index(notes, i), text))
            return TRUE;
    for (guint i = 0; i < notes->len; i++)
        printf("# note: %s\n", (char *)g_ptr_array_index(notes, i));
    return FALSE;
}

DEF_TEST(names)
{
    rt_precision p;
    OK(rt_precision_from_name("bf16", &p) && p == RT_PRECISION_BF16);
    OK(rt_precision_from_name("no", &p) && p == RT_PRECISION_NO);
    OK(!rt_precision_from_name("fp8", &p) && !rt_precision_from_name(NULL, &p));
    EXPECT_EQ_STR("fp16", rt_precision_name(RT_PRECISION_FP16));
    return 0;
}

DEF_TEST(checks)
{
    GError *error = NULL;
    g_autoptr(rt_config) plain = config_with(NULL);
    g_autoptr(rt_config) amp_on = config_with("--policy.use_amp=true");
    g_autoptr(rt_config) amp_off = config_with("--policy.use_amp=false");
    OK(rt_train_amp_check(plain, &(rt_amp_env){NULL, NULL}, &error));
    OK(!rt_train_amp_check(plain, &(rt_amp_env){"fp8", NULL}, &error));
    EXPECT_ERROR(error, "ROBOTRAIN_MIXED_PRECISION=fp8: robotrain trains in no (float32), fp16 or bf16");
    OK(!rt_train_amp_check(plain, &(rt_amp_env){NULL, "0"}, &error));
    EXPECT_ERROR(error, "ROBOTRAIN_AMP_INIT_SCALE=0: the initial loss scale must be a positive number");
    OK(!rt_train_amp_check(plain, &(rt_amp_env){NULL, "1e39"}, &error)); /* beyond float32 */
    EXPECT_ERROR(error, "ROBOTRAIN_AMP_INIT_SCALE=1e39");
    /* the variable alone decides over use_amp's default; explicit flags must agree with it */
    OK(rt_train_amp_check(plain, &(rt_amp_env){"bf16", NULL}, &error));
    OK(rt_train_amp_check(amp_on, &(rt_amp_env){"fp16", NULL}, &error));
    OK(rt_train_amp_check(amp_off, &(rt_amp_env){"no", NULL}, &error));
    OK(!rt_train_amp_check(amp_on, &(rt_amp_env){"no", NULL}, &error));
    EXPECT_ERROR(error, "--policy.use_amp=true conflicts with ROBOTRAIN_MIXED_PRECISION=no");
    OK(!rt_train_amp_check(amp_off, &(rt_amp_env){"bf16", NULL}, &error));
    EXPECT_ERROR(error, "--policy.use_amp=false conflicts with ROBOTRAIN_MIXED_PRECISION=bf16");
    return 0;
}

DEF_TEST(decisions)
{
    GError *error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    rt_train_amp amp;

    g_autoptr(rt_config) plain = config_with(NULL);
    OK(rt_train_amp_resolve(&amp, plain, &(rt_amp_env){NULL, NULL}, FALSE, TRUE, NULL, notes, &error));
    OK(amp.mode == RT_PRECISION_NO && !amp.scaling && notes->len == 0);
    OK(!rt_config_get_bool(plain, "policy.use_amp"));
    rt_ckpt_precision storage;
    OK(rt_train_amp_checkpoint(&amp, &storage) == NULL);
    rt_train_amp_clear(&amp);

    /* use_amp alone: autocast's default, bf16 on the CPU */
    g_autoptr(rt_config) on = config_with("--policy.use_amp=true");
    OK(rt_train_amp_resolve(&amp, on, &(rt_amp_env){NULL, NULL}, FALSE, TRUE, NULL, notes, &error));
    OK(amp.mode == RT_PRECISION_BF16 && !amp.scaling);
    OK(has_note(notes, "Mixed precision: bf16"));
    OK(has_note(notes, "autocast's default on the CPU"));
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_train_amp_begin_graph(&amp, g);
    OK(rt_graph_compute_dtype(g) == RT_BF16);
    rt_graph_free(g);
    const rt_ckpt_precision *p = rt_train_amp_checkpoint(&amp, &storage);
    OK(p && strcmp(p->mixed_precision, "bf16") == 0 && !p->has_scaler);
    rt_train_amp_clear(&amp);

    /* ... fp16 on CUDA, refused when its backend cannot scale losses (CUDA's, for now) */
    OK(!rt_train_amp_resolve(&amp, on, &(rt_amp_env){NULL, NULL}, TRUE, FALSE, NULL, notes, &error));
    EXPECT_ERROR(error, "mixed precision fp16 (policy.use_amp=true without ROBOTRAIN_MIXED_PRECISION: "
                        "autocast's default on CUDA) on CUDA: its backend cannot run dynamic loss scaling");
    rt_train_amp_clear(&amp);
    OK(rt_train_amp_resolve(&amp, on, &(rt_amp_env){NULL, NULL}, TRUE, TRUE, NULL, notes, &error));
    OK(amp.mode == RT_PRECISION_FP16 && amp.scaling);
    rt_train_amp_clear(&amp);

    /* the variable: bf16 on CUDA; fp16 with the scaler's defaults and the initial-scale knob */
    g_ptr_array_set_size(notes, 0);
    g_autoptr(rt_config) dflt = config_with(NULL);
    OK(rt_train_amp_resolve(&amp, dflt, &(rt_amp_env){"bf16", NULL}, TRUE, FALSE, NULL, notes, &error));
    OK(amp.mode == RT_PRECISION_BF16);
    OK(rt_config_get_bool(dflt, "policy.use_amp")); /* train_config.json says autocast ran */
    OK(has_note(notes,
                "policy.use_amp=false (from the default) gives way to ROBOTRAIN_MIXED_PRECISION=bf16"));
    rt_train_amp_clear(&amp);
    OK(rt_train_amp_resolve(&amp, dflt, &(rt_amp_env){"fp16", "1024"}, FALSE, TRUE, NULL, notes, &error));
    OK(amp.mode == RT_PRECISION_FP16 && amp.scaling && !amp.restore);
    OK(amp.scaler.init_scale == 1024 && amp.scaler.growth_factor == 2 && amp.scaler.backoff_factor == 0.5 &&
       amp.scaler.growth_interval == 2000);
    OK(has_note(notes, "Loss scaling: initial scale 1024, growth factor 2 every 2000 steps"));
    rt_train_amp_clear(&amp);
    return 0;
}

DEF_TEST(resume)
{
    GError *error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    rt_train_amp amp;
    rt_ckpt_precision saved = {
        .mixed_precision = "fp16",
        .has_scaler = TRUE,
        .scaler_config = {512, 3, 0.25, 50},
        .scaler = {.scale = 512, .growth_tracker = 7, .skipped = 3},
    };
    /* use_amp alone would pick bf16 on the CPU: the checkpoint's fp16 and scaler continue */
    g_autoptr(rt_config) on = config_with("--policy.use_amp=true");
    OK(rt_train_amp_resolve(&amp, on, &(rt_amp_env){NULL, NULL}, FALSE, TRUE, &saved, notes, &error));
    OK(amp.mode == RT_PRECISION_FP16 && amp.scaling && amp.restore);
    OK(amp.scaler.growth_factor == 3 && amp.scaler.backoff_factor == 0.25 &&
       amp.scaler.growth_interval == 50);
    OK(amp.restored_state.scale == 512 && amp.restored_state.growth_tracker == 7 &&
       amp.restored_state.skipped == 3);
    OK(has_note(notes, "policy.use_amp=true, as the checkpoint trained"));
    OK(has_note(
        notes,
        "loss scaler from the checkpoint: scale 512, 7 step(s) since it last changed, 3 step(s) skipped"));
    rt_train_amp_clear(&amp);
    /* the variable says bf16: it wins, and the log says the run no longer continues exactly */
    g_ptr_array_set_size(notes, 0);
    OK(rt_train_amp_resolve(&amp, on, &(rt_amp_env){"bf16", NULL}, FALSE, TRUE, &saved, notes, &error));
    OK(amp.mode == RT_PRECISION_BF16 && !amp.scaling);
    OK(has_note(
        notes, "the checkpoint trained in fp16; this run continues in bf16 (ROBOTRAIN_MIXED_PRECISION=bf16), "
               "so it does not continue the run bit for bit"));
    rt_train_amp_clear(&amp);
    return 0;
}

DEF_TEST(log_meters)
{
    rt_train_amp amp = {.mode = RT_PRECISION_FP16, .scaling = TRUE};
    amp.state = (rt_loss_scale_state){.scale = 512, .skipped = 2};
    rt_metrics *m = rt_metrics_new(2, 1, 100, 2, 0, FALSE);
    rt_metrics_step(m);
    rt_metrics_update(m, "loss", 1.5);
    rt_train_amp_log(&amp, m);
    g_autofree char *line = rt_metrics_format_line(m);
    OK(g_str_has_suffix(line, " lscale:512 skip:2"));
    printf("# %s\n", line);
    rt_metrics_reset(m);
    amp.state.skipped = 3; /* one more skip since the last line */
    amp.state.scale = 256;
    rt_train_amp_log(&amp, m);
    g_autofree char *json = rt_metrics_to_json(m, 0);
    OK(strstr(json, "\"loss_scale\": 256.0, \"skipped_steps\": 1.0") != NULL);
    printf("# %s\n", json);
    rt_metrics_free(m);
    return 0;
}

/* the CPU backend runs every op of loss scaling */
DEF_TEST(backend_probe)
{
    GError *error = NULL;
    rt_backend_device *dev = rt_backend_cpu()->open(0, &error);
    OK(dev && rt_train_amp_backend_scales(rt_backend_cpu(), dev));
    if (dev)
        rt_backend_cpu()->close(dev);
    return 0;
}

int main(void)
{
    g_unsetenv(RT_AMP_ENV);
    RUN_TEST(backend_probe);
    RUN_TEST(names);
    RUN_TEST(checks);
    RUN_TEST(decisions);
    RUN_TEST(resume);
    RUN_TEST(log_meters);
    END_TEST;
}
