/* Checkpoints: LeRobot's file names, JSON keys and values, safetensors names, shapes and dtypes
 * (../shared/spec/lerobot.md §3.2, §4.6), the AdamW moments against their definition after one
 * step, a resume that continues bit for bit, errors that name the file and key, and saves that
 * fail or are killed half way leaving the previous checkpoint intact. */
#include "config.h"

#include <glib/gstdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-glib/json-glib.h>

#include <robotrain/safetensors.h>

#include "graph-test.h"
#include "train/checkpoint.h"
#include "train/train-options.h"

enum { B = 4, IN = 3, HID = 4, OUT = 2, TOTAL_STEPS = 10 };

static char *tmpdir;

typedef struct net {
    rt_graph *g;
    rt_tensor *x, *t, *loss;
    rt_param_order *order;
} net;

static const rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 1e-4}, {5e-3, 0.9, 0.999, 1e-8, 1e-4}};

/* Five parameters (LeRobot-like names; one without a gradient) and a buffer. unused_len changes
 * one shape, extra adds a parameter, drop_unused leaves one out (for the error tests). */
static gboolean build(net *m, uint64_t init_seed, int unused_len, gboolean extra, gboolean drop_unused)
{
    GError *error = NULL;
    rt_graph *g = m->g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_init_seed(g, init_seed);
    m->x = rt_input(g, "x", RT_F32, 2, (int64_t[]){B, IN}, 0);
    m->t = rt_input(g, "target", RT_F32, 2, (int64_t[]){B, OUT}, 0);
    rt_tensor *w = rt_param(g, "model.encoder.linear.weight", RT_F32, 2, (int64_t[]){HID, IN},
                            rt_init_uniform(-0.5, 0.5));
    rt_tensor *b =
        rt_param(g, "model.encoder.linear.bias", RT_F32, 1, (int64_t[]){HID}, rt_init_uniform(-0.5, 0.5));
    rt_tensor *c = rt_param(g, "model.backbone.conv.weight", RT_F32, 2, (int64_t[]){HID, IN},
                            rt_init_uniform(-0.5, 0.5));
    rt_tensor *h =
        rt_param(g, "model.head.weight", RT_F32, 2, (int64_t[]){OUT, HID}, rt_init_uniform(-0.5, 0.5));
    if (!drop_unused)
        rt_param(g, "model.unused.weight", RT_F32, 1, (int64_t[]){unused_len}, rt_init_constant(0.25));
    if (extra)
        rt_param(g, "model.extra.weight", RT_F32, 1, (int64_t[]){2}, rt_init_constant(1));
    rt_tensor *bn =
        rt_buffer(g, "model.backbone.bn1.running_mean", RT_F32, 1, (int64_t[]){HID}, rt_init_constant(0.5));
    rt_tensor *z = rt_add(g, rt_linear(g, m->x, w, b), rt_linear(g, m->x, c, NULL));
    z = rt_relu(g, rt_sub(g, z, bn));
    rt_tensor *y = rt_linear(g, z, h, NULL);
    rt_tensor *d = rt_sub(g, y, m->t);
    m->loss = rt_mean(g, rt_mul(g, d, d), RT_ALL_AXES, FALSE);
    rt_set_loss(g, m->loss);
    rt_graph_set_group_by_prefix(g, "model.backbone", 1);
    m->order = rt_param_order_new(g, 2);
    if (!rt_graph_backward(g, &error) || !rt_graph_add_adamw(g, groups, 2, 1e9, &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    return rt_test_plan(g);
}

static void destroy(net *m)
{
    rt_param_order_free(m->order);
    rt_graph_free(m->g);
}

/* One optimizer step on batch `step` (a fixed function of the step). */
static gboolean step_once(net *m, int step, double *loss)
{
    float x[B * IN], t[B * OUT];
    for (int i = 0; i < B * IN; i++)
        x[i] = (float)sin(0.7 * i + step);
    for (int i = 0; i < B * OUT; i++)
        t[i] = (float)cos(0.3 * i - step);
    GError *error = NULL;
    gboolean ok = rt_graph_write(m->g, m->x, x, sizeof x, &error) &&
                  rt_graph_write(m->g, m->t, t, sizeof t, &error) &&
                  rt_graph_set_rng(m->g, 1000, (uint64_t)step, 0, &error) && rt_graph_compute(m->g, &error) &&
                  rt_graph_read_scalar(m->g, m->loss, loss, &error);
    if (!ok) {
        printf("# step: %s\n", error->message);
        g_error_free(error);
    }
    return ok;
}

static const char *const modes[] = {"MEAN_STD", "MIN_MAX", "IDENTITY", NULL};
static const rt_option norm_rows[] = {
    {.key = "normalization_mapping.VISUAL",
     .type = RT_OPT_ENUM,
     .default_value = "MEAN_STD",
     .choices = modes,
     .help = "Cameras."},
    {.key = "normalization_mapping.STATE",
     .type = RT_OPT_ENUM,
     .default_value = "MEAN_STD",
     .choices = modes,
     .help = "State."},
    {.key = "normalization_mapping.ACTION",
     .type = RT_OPT_ENUM,
     .default_value = "MEAN_STD",
     .choices = modes,
     .help = "Actions."},
};

static rt_config *train_config(void)
{
    rt_config *cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    if (!rt_train_add_options(cfg, &error) ||
        !rt_train_add_policy_options(cfg, norm_rows, G_N_ELEMENTS(norm_rows), &error) ||
        !rt_config_set(cfg, "policy.input_features",
                       "{\"observation.state\": {\"type\": \"STATE\", \"shape\": [3]}}", &error) ||
        !rt_config_set(cfg, "policy.output_features", "{\"action\": {\"type\": \"ACTION\", \"shape\": [2]}}",
                       &error) ||
        !rt_config_set(cfg, "dataset.repo_id", "user/tiny", &error) ||
        !rt_config_set(cfg, "policy.type", "act", &error) ||
        !rt_config_set(cfg, "policy.device", "cpu", &error) || !rt_config_set(cfg, "steps", "10", &error)) {
        printf("# %s\n", error->message);
        g_error_free(error);
    }
    return cfg;
}

static const double state_mean[3] = {0.5, -1.25, 3.0}, state_std[3] = {0.1, 0.2, 0.30000001192092896};
static const double action_mean[2] = {1.0 / 3.0, 2.0}, count_values[1] = {40};

static const rt_ckpt_stat stats[] = {
    {"observation.state", "mean", 1, {3}, state_mean},
    {"observation.state", "std", 1, {3}, state_std},
    {"action", "mean", 1, {2}, action_mean},
    {"action", "count", 1, {1}, count_values},
};

typedef struct {
    const char *stop_at;
    gboolean crash; /* _exit instead of failing */
} hook_ctx;

static gboolean stop_hook(const char *name, void *user, GError **error)
{
    hook_ctx *h = user;
    if (h->stop_at && strcmp(name, h->stop_at) == 0) {
        if (h->crash)
            _exit(0);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "test: no space left while writing %s", name);
        return FALSE;
    }
    return TRUE;
}

static gboolean save(net *m, rt_config *cfg, const char *out, int64_t step, hook_ctx *hook, char **dir,
                     GError **error)
{
    rt_ckpt_sampler sampler = {.epoch = 1,
                               .batch = 2,
                               .batches_per_epoch = 5,
                               .num_items = 40,
                               .batch_size = B,
                               .world_size = 1,
                               .shuffle = TRUE,
                               .drop_last = FALSE};
    rt_checkpoint_save_info info = {
        .output_dir = out,
        .step = step,
        .total_steps = TOTAL_STEPS,
        .graph = m->g,
        .order = m->order,
        .groups = groups,
        .cfg = cfg,
        .stats = stats,
        .n_stats = G_N_ELEMENTS(stats),
        .num_processes = 1,
        .batch_size = B,
        .has_seed = TRUE,
        .seed = 1000,
        .sampler = &sampler,
        .before_file = hook ? stop_hook : NULL,
        .user = hook,
    };
    return rt_checkpoint_save(&info, dir, error);
}

static char *read_text(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return g_strdup("(missing)");
    return text;
}

static int compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in a folder, joined by spaces. */
static char *list_dir(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (!d)
        return g_strdup("(no folder)");
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    const char *n;
    while ((n = g_dir_read_name(d)))
        g_ptr_array_add(names, g_strdup(n));
    g_dir_close(d);
    g_ptr_array_sort(names, compare_names);
    g_ptr_array_add(names, NULL);
    char *joined = g_strjoinv(" ", (char **)names->pdata);
    g_ptr_array_unref(names);
    return joined;
}

static gboolean read_param(net *m, const char *name, rt_storage storage, float *out, size_t n)
{
    rt_tensor t = *rt_graph_find(m->g, name);
    t.storage = storage;
    return rt_graph_read(m->g, &t, out, n * sizeof(float), NULL);
}

DEF_TEST(step_names_and_order)
{
    g_autofree char *a = rt_checkpoint_step_name(0, 100000);
    g_autofree char *b = rt_checkpoint_step_name(20000, 100000);
    g_autofree char *c = rt_checkpoint_step_name(100000, 100000);
    g_autofree char *d = rt_checkpoint_step_name(5, 1234567);
    EXPECT_EQ_STR("000000", a);
    EXPECT_EQ_STR("020000", b);
    EXPECT_EQ_STR("100000", c);
    EXPECT_EQ_STR("0000005", d);

    net m;
    OK(build(&m, 7, 3, FALSE, FALSE));
    /* group 0 in creation order, then the backbone: PyTorch's state indices */
    EXPECT_EQ_INT(5, m.order->n_params);
    EXPECT_EQ_INT(0, m.order->index[0]); /* encoder weight */
    EXPECT_EQ_INT(1, m.order->index[1]); /* encoder bias */
    EXPECT_EQ_INT(4, m.order->index[2]); /* backbone conv: group 1 */
    EXPECT_EQ_INT(2, m.order->index[3]); /* head */
    EXPECT_EQ_INT(3, m.order->index[4]); /* unused */
    EXPECT_EQ_INT(1, m.order->group[2]);
    EXPECT_EQ_INT(4, m.order->group_len[0]);
    EXPECT_EQ_INT(1, m.order->group_len[1]);
    EXPECT_EQ_INT(2, m.order->param_at[4]);
    destroy(&m);
    return 0;
}

DEF_TEST(layout_and_contents)
{
    net m;
    OK(build(&m, 7, 3, FALSE, FALSE));
    double loss;
    OK(step_once(&m, 0, &loss));
    g_autoptr(rt_config) cfg = train_config();
    g_autofree char *out = g_build_filename(tmpdir, "layout", NULL);
    GError *error = NULL;
    g_autofree char *dir = NULL;
    OK(save(&m, cfg, out, 1, NULL, &dir, &error));
    EXPECT_NO_ERROR(error);
    g_autofree char *expect_dir = g_build_filename(out, "checkpoints", "000001", NULL);
    EXPECT_EQ_STR(expect_dir, dir);

    g_autofree char *checkpoints = g_build_filename(out, "checkpoints", NULL);
    g_autofree char *top = list_dir(checkpoints);
    EXPECT_EQ_STR("000001 last", top);
    g_autofree char *last = g_build_filename(checkpoints, "last", NULL);
    g_autofree char *target = g_file_read_link(last, NULL);
    EXPECT_EQ_STR("000001", target); /* relative */
    g_autofree char *top_ck = list_dir(dir);
    EXPECT_EQ_STR("pretrained_model training_state", top_ck);
    g_autofree char *pm = g_build_filename(dir, "pretrained_model", NULL);
    g_autofree char *ts = g_build_filename(dir, "training_state", NULL);
    g_autofree char *pm_files = list_dir(pm);
    g_autofree char *ts_files = list_dir(ts);
    EXPECT_EQ_STR("config.json model.safetensors policy_postprocessor.json "
                  "policy_postprocessor_step_0_unnormalizer_processor.safetensors policy_preprocessor.json "
                  "policy_preprocessor_step_3_normalizer_processor.safetensors train_config.json",
                  pm_files);
    EXPECT_EQ_STR(
        "optimizer_param_groups.json optimizer_state.safetensors rng_state.safetensors robotrain_state.json "
        "training_step.json",
        ts_files);

    /* model.safetensors: every parameter and buffer by name, float32, metadata format pt */
    g_autofree char *model_path = g_build_filename(pm, "model.safetensors", NULL);
    rt_safetensors *st = rt_safetensors_open(model_path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(6, rt_safetensors_n_tensors(st));
    EXPECT_EQ_STR("pt", rt_safetensors_metadata(st, "format"));
    OK(rt_safetensors_expect(st, "model.encoder.linear.weight", RT_ST_F32, 2, (int64_t[]){HID, IN}, &error));
    OK(rt_safetensors_expect(st, "model.encoder.linear.bias", RT_ST_F32, 1, (int64_t[]){HID}, &error));
    OK(rt_safetensors_expect(st, "model.backbone.conv.weight", RT_ST_F32, 2, (int64_t[]){HID, IN}, &error));
    OK(rt_safetensors_expect(st, "model.head.weight", RT_ST_F32, 2, (int64_t[]){OUT, HID}, &error));
    OK(rt_safetensors_expect(st, "model.unused.weight", RT_ST_F32, 1, (int64_t[]){3}, &error));
    const rt_st_tensor *bn =
        rt_safetensors_expect(st, "model.backbone.bn1.running_mean", RT_ST_F32, 1, (int64_t[]){HID}, &error);
    OK(bn && ((const float *)bn->data)[3] == 0.5f);
    float w[HID * IN], wf[HID * IN];
    OK(read_param(&m, "model.encoder.linear.weight", RT_STORAGE_PARAM, w, HID * IN));
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "model.encoder.linear.weight"), wf, HID * IN,
                               &error));
    OK(memcmp(w, wf, sizeof w) == 0);
    rt_safetensors_close(st);

    /* optimizer state: PyTorch's keys; after one step from zero, m = (1 - b1) g, v = (1 - b2) g^2 */
    g_autofree char *opt_path = g_build_filename(ts, "optimizer_state.safetensors", NULL);
    st = rt_safetensors_open(opt_path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(12, rt_safetensors_n_tensors(st)); /* 4 parameters with a gradient x 3 */
    OK(rt_safetensors_metadata_keys(st)[0] == NULL);
    for (int i = 0; i < 5; i++) {
        g_autofree char *ks = g_strdup_printf("state/%d/step", i);
        OK((i == 3) == (rt_safetensors_find(st, ks) == NULL)); /* 3: model.unused.weight, no gradient */
    }
    const rt_st_tensor *s0 = rt_safetensors_expect(st, "state/0/step", RT_ST_F32, 0, NULL, &error);
    OK(s0 && ((const float *)s0->data)[0] == 1.0f);
    OK(rt_safetensors_expect(st, "state/4/exp_avg", RT_ST_F32, 2, (int64_t[]){HID, IN},
                             &error)); /* the backbone */
    OK(rt_safetensors_expect(st, "state/2/exp_avg_sq", RT_ST_F32, 2, (int64_t[]){OUT, HID}, &error));
    float g[HID * IN], mv[HID * IN], vv[HID * IN];
    OK(read_param(&m, "model.backbone.conv.weight", RT_STORAGE_GRAD, g, HID * IN));
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "state/4/exp_avg"), mv, HID * IN, &error));
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "state/4/exp_avg_sq"), vv, HID * IN, &error));
    double gmax = 0;
    for (int i = 0; i < HID * IN; i++) {
        EXPECT_NEAR(0.1 * g[i], mv[i], 1e-7 * fabs(g[i]) + 1e-12);
        EXPECT_NEAR(0.001 * g[i] * g[i], vv[i], 1e-6 * g[i] * g[i] + 1e-15);
        gmax = MAX(gmax, fabs(g[i]));
    }
    OK(gmax > 1e-3); /* the gradients are not all zero */
    rt_safetensors_close(st);

    /* JSON files, byte for byte as Python's json.dump writes them */
    g_autofree char *step_json = read_text(ts, "training_step.json");
    EXPECT_EQ_STR("{\n    \"step\": 1,\n    \"num_processes\": 1,\n    \"batch_size\": 4\n}", step_json);
    g_autofree char *groups_json = read_text(ts, "optimizer_param_groups.json");
    EXPECT_EQ_STR(
        "[\n"
        "    {\n"
        "        \"lr\": 0.01,\n"
        "        \"betas\": [\n            0.9,\n            0.999\n        ],\n"
        "        \"eps\": 1e-08,\n"
        "        \"weight_decay\": 0.0001,\n"
        "        \"amsgrad\": false,\n"
        "        \"maximize\": false,\n"
        "        \"foreach\": null,\n"
        "        \"capturable\": false,\n"
        "        \"differentiable\": false,\n"
        "        \"fused\": null,\n"
        "        \"decoupled_weight_decay\": true,\n"
        "        \"params\": [\n            0,\n            1,\n            2,\n            3\n        ]\n"
        "    },\n"
        "    {\n"
        "        \"lr\": 0.005,\n"
        "        \"betas\": [\n            0.9,\n            0.999\n        ],\n"
        "        \"eps\": 1e-08,\n"
        "        \"weight_decay\": 0.0001,\n"
        "        \"amsgrad\": false,\n"
        "        \"maximize\": false,\n"
        "        \"foreach\": null,\n"
        "        \"capturable\": false,\n"
        "        \"differentiable\": false,\n"
        "        \"fused\": null,\n"
        "        \"decoupled_weight_decay\": true,\n"
        "        \"params\": [\n            4\n        ]\n"
        "    }\n"
        "]",
        groups_json);
    g_autofree char *pre = read_text(pm, "policy_preprocessor.json");
    EXPECT_EQ_STR(
        "{\n"
        "  \"name\": \"policy_preprocessor\",\n"
        "  \"steps\": [\n"
        "    {\n"
        "      \"registry_name\": \"rename_observations_processor\",\n"
        "      \"config\": {\n        \"rename_map\": {}\n      }\n"
        "    },\n"
        "    {\n"
        "      \"registry_name\": \"to_batch_processor\",\n"
        "      \"config\": {}\n"
        "    },\n"
        "    {\n"
        "      \"registry_name\": \"device_processor\",\n"
        "      \"config\": {\n        \"device\": \"cpu\",\n        \"float_dtype\": null\n      }\n"
        "    },\n"
        "    {\n"
        "      \"registry_name\": \"normalizer_processor\",\n"
        "      \"config\": {\n"
        "        \"eps\": 1e-08,\n"
        "        \"features\": {\n"
        "          \"observation.state\": {\n"
        "            \"type\": \"STATE\",\n"
        "            \"shape\": [\n              3\n            ]\n"
        "          },\n"
        "          \"action\": {\n"
        "            \"type\": \"ACTION\",\n"
        "            \"shape\": [\n              2\n            ]\n"
        "          }\n"
        "        },\n"
        "        \"norm_map\": {\n"
        "          \"VISUAL\": \"MEAN_STD\",\n"
        "          \"STATE\": \"MEAN_STD\",\n"
        "          \"ACTION\": \"MEAN_STD\"\n"
        "        }\n"
        "      },\n"
        "      \"state_file\": \"policy_preprocessor_step_3_normalizer_processor.safetensors\"\n"
        "    }\n"
        "  ]\n"
        "}",
        pre);
    g_autofree char *post = read_text(pm, "policy_postprocessor.json");
    OK(g_str_has_prefix(post, "{\n  \"name\": \"policy_postprocessor\",\n  \"steps\": [\n    {\n"
                              "      \"registry_name\": \"unnormalizer_processor\",\n"));
    OK(strstr(post, "        \"features\": {\n          \"action\": {\n")); /* outputs only */
    OK(!strstr(post, "observation.state"));
    OK(strstr(post,
              "      \"state_file\": \"policy_postprocessor_step_0_unnormalizer_processor.safetensors\"\n"));
    OK(g_str_has_suffix(post,
                        "      \"registry_name\": \"device_processor\",\n"
                        "      \"config\": {\n        \"device\": \"cpu\",\n        \"float_dtype\": null\n"
                        "      }\n    }\n  ]\n}"));

    /* the stats, float32, "<feature>.<stat>", in both state files */
    const char *state_files[2] = {"policy_preprocessor_step_3_normalizer_processor.safetensors",
                                  "policy_postprocessor_step_0_unnormalizer_processor.safetensors"};
    for (int k = 0; k < 2; k++) {
        g_autofree char *path = g_build_filename(pm, state_files[k], NULL);
        st = rt_safetensors_open(path, &error);
        EXPECT_NO_ERROR(error);
        EXPECT_EQ_INT(4, rt_safetensors_n_tensors(st));
        const rt_st_tensor *sm =
            rt_safetensors_expect(st, "observation.state.mean", RT_ST_F32, 1, (int64_t[]){3}, &error);
        OK(sm && ((const float *)sm->data)[1] == -1.25f);
        const rt_st_tensor *am =
            rt_safetensors_expect(st, "action.mean", RT_ST_F32, 1, (int64_t[]){2}, &error);
        OK(am && ((const float *)am->data)[0] == (float)(1.0 / 3.0));
        const rt_st_tensor *cnt =
            rt_safetensors_expect(st, "action.count", RT_ST_F32, 1, (int64_t[]){1}, &error);
        OK(cnt && ((const float *)cnt->data)[0] == 40.0f);
        OK(rt_safetensors_expect(st, "observation.state.std", RT_ST_F32, 1, (int64_t[]){3}, &error));
        rt_safetensors_close(st);
    }

    /* config.json and train_config.json */
    g_autofree char *config = read_text(pm, "config.json");
    OK(g_str_has_prefix(config,
                        "{\n    \"type\": \"act\",\n    \"n_obs_steps\": 1,\n    \"input_features\": {\n"));
    OK(strstr(config, "    \"device\": \"cpu\",\n"));
    g_autofree char *train = read_text(pm, "train_config.json");
    OK(strstr(train, "\"repo_id\": \"user/tiny\""));
    OK(strstr(train, "    \"steps\": 10,\n"));
    g_autofree char *ours = read_text(ts, "robotrain_state.json");
    OK(strstr(ours, "\"seed\": 1000,"));
    OK(strstr(ours, "\"epoch\": 1,\n        \"batch\": 2,"));

    /* reading back */
    g_autoptr(rt_checkpoint) ck = rt_checkpoint_open(dir, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, rt_checkpoint_step(ck));
    EXPECT_EQ_INT(1, rt_checkpoint_num_processes(ck));
    EXPECT_EQ_INT(B, rt_checkpoint_batch_size(ck));
    EXPECT_EQ_INT(2, rt_checkpoint_n_groups(ck));
    EXPECT_NEAR(5e-3, rt_checkpoint_group(ck, 1)->lr, 0);
    EXPECT_NEAR(0.999, rt_checkpoint_group(ck, 0)->beta2, 0);
    OK(isnan(rt_checkpoint_initial_lr(ck, 0)));
    EXPECT_EQ_INT(-1, rt_checkpoint_scheduler_step(ck));
    uint64_t seed = 0;
    OK(rt_checkpoint_get_seed(ck, &seed));
    EXPECT_EQ_INT(1000, seed);
    rt_ckpt_sampler sampler;
    OK(rt_checkpoint_get_sampler(ck, &sampler));
    EXPECT_EQ_INT(2, sampler.batch);
    EXPECT_EQ_INT(5, sampler.batches_per_epoch);
    destroy(&m);
    return 0;
}

DEF_TEST(resume_is_bit_exact)
{
    /* run A: 3 steps, save, 2 more; run B: a different init, resumed from the save, 2 steps */
    net a, b;
    OK(build(&a, 7, 3, FALSE, FALSE));
    double loss_a = 0, loss_b = 0;
    for (int s = 0; s < 3; s++)
        OK(step_once(&a, s, &loss_a));
    g_autoptr(rt_config) cfg = train_config();
    g_autofree char *out = g_build_filename(tmpdir, "resume", NULL);
    GError *error = NULL;
    g_autofree char *dir = NULL;
    OK(save(&a, cfg, out, 3, NULL, &dir, &error));
    EXPECT_NO_ERROR(error);
    for (int s = 3; s < 5; s++)
        OK(step_once(&a, s, &loss_a));

    OK(build(&b, 99, 3, FALSE, FALSE));
    g_autofree char *pm = g_build_filename(dir, "pretrained_model", NULL);
    OK(rt_checkpoint_load_model(pm, b.g, &error));
    EXPECT_NO_ERROR(error);
    g_autoptr(rt_checkpoint) ck = rt_checkpoint_open(dir, &error);
    OK(ck && rt_checkpoint_load_optimizer(ck, b.g, b.order, &error));
    EXPECT_NO_ERROR(error);
    for (int s = 3; s < 5; s++)
        OK(step_once(&b, s, &loss_b));
    OK(loss_a == loss_b);
    const char *names[] = {"model.encoder.linear.weight", "model.backbone.conv.weight", "model.head.weight"};
    for (guint k = 0; k < G_N_ELEMENTS(names); k++) {
        float pa[HID * IN], pb[HID * IN], ma[HID * IN], mb[HID * IN];
        size_t n = k == 2 ? OUT * HID : HID * IN;
        OK(read_param(&a, names[k], RT_STORAGE_PARAM, pa, n) &&
           read_param(&b, names[k], RT_STORAGE_PARAM, pb, n));
        OK(read_param(&a, names[k], RT_STORAGE_ADAM_V, ma, n) &&
           read_param(&b, names[k], RT_STORAGE_ADAM_V, mb, n));
        OK1(memcmp(pa, pb, n * sizeof(float)) == 0, names[k]);
        OK1(memcmp(ma, mb, n * sizeof(float)) == 0, names[k]);
    }
    destroy(&a);
    destroy(&b);
    return 0;
}

DEF_TEST(load_errors)
{
    net a;
    OK(build(&a, 7, 3, FALSE, FALSE));
    double loss;
    OK(step_once(&a, 0, &loss));
    g_autoptr(rt_config) cfg = train_config();
    g_autofree char *out = g_build_filename(tmpdir, "errors", NULL);
    GError *error = NULL;
    g_autofree char *dir = NULL;
    OK(save(&a, cfg, out, 1, NULL, &dir, &error));
    g_autofree char *model = g_build_filename(dir, "pretrained_model", "model.safetensors", NULL);

    net b; /* a parameter the file lacks */
    OK(build(&b, 7, 3, TRUE, FALSE));
    OK(!rt_checkpoint_load_model(model, b.g, &error));
    EXPECT_EQ_INT(RT_ERROR_NOT_FOUND, error ? error->code : -1);
    g_autofree char *e1 = g_strdup_printf("%s: no tensor 'model.extra.weight' in the file", model);
    EXPECT_ERROR(error, e1);
    destroy(&b);

    OK(build(&b, 7, 5, FALSE, FALSE)); /* a shape that differs */
    OK(!rt_checkpoint_load_model(model, b.g, &error));
    g_autofree char *e2 =
        g_strdup_printf("%s: tensor 'model.unused.weight' is F32 [3], expected F32 [5]", model);
    EXPECT_ERROR(error, e2);
    destroy(&b);

    OK(build(&b, 7, 3, FALSE, TRUE)); /* the file holds one more */
    OK(!rt_checkpoint_load_model(model, b.g, &error));
    g_autofree char *e3 = g_strdup_printf(
        "%s: tensor 'model.unused.weight' is not a parameter or buffer of this policy", model);
    EXPECT_ERROR(error, e3);

    /* optimizer state with another grouping */
    g_autoptr(rt_checkpoint) ck = rt_checkpoint_open(dir, &error);
    OK(ck);
    rt_param_order one_group = {0};
    one_group.n_groups = 1;
    rt_param_order *one = &one_group;
    OK(!rt_checkpoint_load_optimizer(ck, a.g, one, &error));
    EXPECT_ERROR(error, "optimizer_param_groups.json: 2 parameter groups, but this run has 1 (was "
                        "use_policy_training_preset changed?)");
    /* a policy whose groups hold other parameters */
    OK(!rt_checkpoint_load_optimizer(ck, b.g, b.order, &error));
    EXPECT_ERROR(error,
                 "optimizer_param_groups.json: group 0: \"params\" has 4 indices, but this policy's group 0 "
                 "has 3 parameters, 0 to 2");
    destroy(&b);

    /* damaged training state files */
    g_autofree char *step_file = g_build_filename(dir, "training_state", "training_step.json", NULL);
    OK(g_file_set_contents(step_file, "{\"step\": -3}", -1, NULL));
    OK(!rt_checkpoint_open(dir, &error));
    g_autofree char *e4 = g_strdup_printf("%s: \"step\" must be an integer >= 0", step_file);
    EXPECT_ERROR(error, e4);
    OK(g_file_set_contents(step_file, "{\"step\": 1, \"batch_size\": \"8\"}", -1, NULL));
    OK(!rt_checkpoint_open(dir, &error));
    EXPECT_ERROR(error, "\"batch_size\" must be an integer >= 1");
    OK(g_file_set_contents(step_file, "{\"step\": 1}", -1, NULL)); /* LeRobot v0.5: only the step */
    g_autoptr(rt_checkpoint) old = rt_checkpoint_open(dir, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(-1, rt_checkpoint_num_processes(old));

    g_autofree char *groups_file =
        g_build_filename(dir, "training_state", "optimizer_param_groups.json", NULL);
    g_autofree char *groups_text = read_text(dir, "training_state/optimizer_param_groups.json");
    char *ams = strstr(groups_text, "\"amsgrad\": false");
    OK(ams);
    memcpy(ams, "\"amsgrad\": true ", 16);
    OK(g_file_set_contents(groups_file, groups_text, -1, NULL));
    OK(!rt_checkpoint_open(dir, &error));
    EXPECT_EQ_INT(RT_ERROR_UNSUPPORTED, error ? error->code : -1);
    EXPECT_ERROR(error,
                 "optimizer_param_groups.json: group 0: \"amsgrad\" is not false: robotrain's AdamW has no "
                 "amsgrad");
    OK(g_unlink(groups_file) == 0);
    OK(!rt_checkpoint_open(dir, &error));
    g_autofree char *e5 = g_strdup_printf("%s: no such file: the checkpoint is incomplete", groups_file);
    EXPECT_ERROR(error, e5);

    /* step counts that differ between parameters */
    OK(save(&a, cfg, out, 1, NULL, NULL, &error));
    g_autofree char *opt = g_build_filename(dir, "training_state", "optimizer_state.safetensors", NULL);
    rt_safetensors *st = rt_safetensors_open(opt, &error);
    OK(st);
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    float two = 2;
    for (size_t i = 0; i < rt_safetensors_n_tensors(st); i++) {
        const rt_st_tensor *t = rt_safetensors_tensor_at(st, i);
        gboolean bump = strcmp(t->name, "state/2/step") == 0;
        OK(rt_safetensors_writer_add(w, t->name, t->dtype, t->rank, t->shape, bump ? (void *)&two : t->data,
                                     &error));
    }
    g_autofree char *opt2 = g_strdup_printf("%s.new", opt);
    OK(rt_safetensors_writer_write(w, opt2, &error));
    rt_safetensors_writer_free(w);
    rt_safetensors_close(st);
    OK(g_rename(opt2, opt) == 0);
    g_autoptr(rt_checkpoint) ck2 = rt_checkpoint_open(dir, &error);
    OK(ck2 && !rt_checkpoint_load_optimizer(ck2, a.g, a.order, &error));
    EXPECT_ERROR(error, "optimizer_state.safetensors: 'state/2/step' is 2 but earlier parameters' step is 1: "
                        "robotrain keeps one step count for all parameters");
    OK(!rt_checkpoint_open(tmpdir, &error));
    EXPECT_ERROR(error, "is not a checkpoint written by training");
    destroy(&a);
    return 0;
}

DEF_TEST(interrupted_saves)
{
    net m;
    OK(build(&m, 7, 3, FALSE, FALSE));
    double loss;
    OK(step_once(&m, 0, &loss));
    g_autoptr(rt_config) cfg = train_config();
    g_autofree char *out = g_build_filename(tmpdir, "atomic", NULL);
    g_autofree char *checkpoints = g_build_filename(out, "checkpoints", NULL);
    g_autofree char *last = g_build_filename(checkpoints, "last", NULL);
    GError *error = NULL;
    OK(save(&m, cfg, out, 3, NULL, NULL, &error));
    g_autofree char *before = read_text(checkpoints, "000003/training_state/training_step.json");

    /* a save that fails half way (disk full) */
    hook_ctx fail = {"training_state/optimizer_state.safetensors", FALSE};
    OK(!save(&m, cfg, out, 6, &fail, NULL, &error));
    EXPECT_ERROR(error, "test: no space left while writing training_state/optimizer_state.safetensors");
    g_autofree char *after_fail = list_dir(checkpoints);
    EXPECT_EQ_STR("000003 last", after_fail); /* no partial folder left */
    g_autofree char *t1 = g_file_read_link(last, NULL);
    EXPECT_EQ_STR("000003", t1);

    /* a save killed half way (the process dies) */
    pid_t pid = fork();
    OK(pid >= 0);
    if (pid == 0) {
        hook_ctx crash = {"pretrained_model/train_config.json", TRUE};
        save(&m, cfg, out, 7, &crash, NULL, NULL);
        _exit(1); /* not reached */
    }
    int status = 0;
    OK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_autofree char *after_crash = list_dir(checkpoints);
    OK1(g_str_has_prefix(after_crash, ".rt-partial-000007-") && g_str_has_suffix(after_crash, " 000003 last"),
        after_crash);
    g_autofree char *t2 = g_file_read_link(last, NULL);
    EXPECT_EQ_STR("000003", t2);
    g_autofree char *still = read_text(checkpoints, "000003/training_state/training_step.json");
    EXPECT_EQ_STR(before, still);
    g_autoptr(rt_checkpoint) ck = rt_checkpoint_open(last, &error);
    OK(ck && rt_checkpoint_step(ck) == 3);

    /* the next save cleans up and moves `last` */
    OK(save(&m, cfg, out, 7, NULL, NULL, &error));
    EXPECT_NO_ERROR(error);
    g_autofree char *after_save = list_dir(checkpoints);
    EXPECT_EQ_STR("000003 000007 last", after_save);
    g_autofree char *t3 = g_file_read_link(last, NULL);
    EXPECT_EQ_STR("000007", t3);
    /* saving the same step again replaces it */
    OK(save(&m, cfg, out, 7, NULL, NULL, &error));
    g_autofree char *again = list_dir(checkpoints);
    EXPECT_EQ_STR("000003 000007 last", again);
    destroy(&m);
    return 0;
}

/* Mixed precision: mixed_precision.json with GradScaler's state, read back; the optimizer's own
 * step count (skipped fp16 steps) in optimizer_state.safetensors; bad files named. */
static gboolean save_precision(net *m, rt_config *cfg, const char *out, const rt_ckpt_precision *p,
                               double optimizer_step, char **dir, GError **error)
{
    rt_checkpoint_save_info info = {
        .output_dir = out,
        .step = 5,
        .total_steps = TOTAL_STEPS,
        .graph = m->g,
        .order = m->order,
        .groups = groups,
        .cfg = cfg,
        .stats = stats,
        .n_stats = G_N_ELEMENTS(stats),
        .num_processes = 1,
        .batch_size = B,
        .precision = p,
        .has_optimizer_step = optimizer_step >= 0,
        .optimizer_step = optimizer_step,
    };
    return rt_checkpoint_save(&info, dir, error);
}

static gboolean write_file(const char *dir, const char *name, const char *text)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    return g_file_set_contents(path, text, -1, NULL);
}

DEF_TEST(mixed_precision_state)
{
    net a, b;
    OK(build(&a, 7, 3, FALSE, FALSE));
    double loss;
    OK(step_once(&a, 0, &loss));
    g_autoptr(rt_config) cfg = train_config();
    g_autofree char *out = g_build_filename(tmpdir, "amp", NULL);
    GError *error = NULL;
    g_autofree char *dir = NULL;
    rt_ckpt_precision p = {
        .mixed_precision = "fp16",
        .has_scaler = TRUE,
        .scaler_config = {65536, 2, 0.5, 2000},
        .scaler = {.scale = 16384, .growth_tracker = 3, .skipped = 2},
    };
    /* 5 training steps, 2 of them skipped: AdamW stepped 3 times */
    OK(save_precision(&a, cfg, out, &p, 3, &dir, &error));
    EXPECT_NO_ERROR(error);
    g_autofree char *text = read_text(dir, "training_state/mixed_precision.json");
    EXPECT_EQ_STR("{\n    \"mixed_precision\": \"fp16\",\n    \"scaler\": {\n        \"scale\": 16384.0,\n"
                  "        \"growth_factor\": 2.0,\n        \"backoff_factor\": 0.5,\n        \"growth_interval\": 2000,\n"
                  "        \"_growth_tracker\": 3,\n        \"skipped_steps\": 2\n    }\n}",
                  text);
    g_autoptr(rt_checkpoint) ck = rt_checkpoint_open(dir, &error);
    OK(ck);
    rt_ckpt_precision q;
    OK(rt_checkpoint_get_precision(ck, &q));
    OK(strcmp(q.mixed_precision, "fp16") == 0 && q.has_scaler && q.scaler.scale == 16384 &&
       q.scaler.growth_tracker == 3 && q.scaler.skipped == 2 && q.scaler_config.growth_factor == 2 &&
       q.scaler_config.backoff_factor == 0.5 && q.scaler_config.growth_interval == 2000);
    EXPECT_EQ_INT(5, (int)rt_checkpoint_step(ck));
    OK(build(&b, 99, 3, FALSE, FALSE));
    OK(rt_checkpoint_load_optimizer(ck, b.g, b.order, &error));
    EXPECT_NO_ERROR(error);
    double step = -1;
    OK(rt_graph_get_step(b.g, &step, &error));
    EXPECT_NEAR(3, step, 0);
    destroy(&b);

    /* bf16: the precision only; float32: no file */
    g_autofree char *out2 = g_build_filename(tmpdir, "amp-bf16", NULL);
    g_autofree char *dir2 = NULL;
    rt_ckpt_precision bf = {.mixed_precision = "bf16"};
    OK(save_precision(&a, cfg, out2, &bf, -1, &dir2, &error));
    g_autofree char *text2 = read_text(dir2, "training_state/mixed_precision.json");
    EXPECT_EQ_STR("{\n    \"mixed_precision\": \"bf16\"\n}", text2);
    g_autofree char *out3 = g_build_filename(tmpdir, "amp-f32", NULL);
    g_autofree char *dir3 = NULL;
    OK(save_precision(&a, cfg, out3, NULL, -1, &dir3, &error));
    g_autofree char *path3 = g_build_filename(dir3, "training_state", "mixed_precision.json", NULL);
    OK(!g_file_test(path3, G_FILE_TEST_EXISTS));
    g_autoptr(rt_checkpoint) ck3 = rt_checkpoint_open(dir3, &error);
    OK(ck3 && !rt_checkpoint_get_precision(ck3, &q));

    /* damaged files are refused, naming the file and the key */
    g_autofree char *file = g_build_filename(dir, "training_state", "mixed_precision.json", NULL);
    static const struct {
        const char *text, *message;
    } bad[] = {
        {"{\"mixed_precision\": \"fp8\"}", "expected an object with \"mixed_precision\": \"fp16\" or \"bf16\""},
        {"{\"mixed_precision\": \"fp16\", \"scaler\": {\"scale\": 0, \"growth_factor\": 2, "
         "\"backoff_factor\": 0.5, \"growth_interval\": 2000, \"_growth_tracker\": 0}}",
         "scaler: scale 0, growth_factor 2, backoff_factor 0.5: the scale must be a positive float32"},
        {"{\"mixed_precision\": \"fp16\", \"scaler\": {\"scale\": 8, \"growth_factor\": 2, "
         "\"backoff_factor\": 0.5, \"growth_interval\": 2000}}",
         "scaler:  has no \"_growth_tracker\""},
        {"{\"mixed_precision\": \"fp16\", \"scaler\": 3}", "\"scaler\" must be an object"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        OK(write_file(dir, "training_state/mixed_precision.json", bad[i].text));
        OK(!rt_checkpoint_open(dir, &error));
        g_autofree char *want = g_strdup_printf("%s: %s", file, bad[i].message);
        EXPECT_ERROR(error, want);
    }
    destroy(&a);
    return 0;
}

int main(void)
{
    tmpdir = g_dir_make_tmp("test-train-checkpoint-XXXXXX", NULL);
    RUN_TEST(step_names_and_order);
    RUN_TEST(layout_and_contents);
    RUN_TEST(resume_is_bit_exact);
    RUN_TEST(load_errors);
    RUN_TEST(interrupted_saves);
    RUN_TEST(mixed_precision_state);
    g_autofree char *rm = g_strdup_printf("rm -rf '%s'", tmpdir);
    if (system(rm) != 0)
        printf("# could not remove %s\n", tmpdir);
    g_free(tmpdir);
    END_TEST;
}
