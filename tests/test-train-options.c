/* The train configuration: LeRobot's defaults, train_config.json in and out (a file in the shape
 * LeRobot v0.6.1 writes, and our own round trip), validation messages, and the choice of
 * optimizer between the policy preset and explicit flags. */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/option.h>

#include "testing.h"
#include "train/train-options.h"

/* ACTConfig's own fields (lerobot/policies/act/configuration_act.py) as the ACT module declares
 * them (normalization_mapping as a group of options). */
static const char *const activations[] = {"relu", "gelu", "glu", NULL};
static const char *const modes[] = {"MEAN_STD", "MIN_MAX", "IDENTITY", NULL};
#define NORM(t)                                                                                              \
    {                                                                                                        \
        .key = "normalization_mapping." t, .type = RT_OPT_ENUM, .default_value = "MEAN_STD",                 \
        .choices = modes, .help = "Normalization."                                                           \
    }
static const rt_option act_rows[] = {
    {.key = "n_obs_steps", .type = RT_OPT_INT, .default_value = "1", .help = "Observation steps."},
    {.key = "chunk_size", .type = RT_OPT_INT, .default_value = "100", .help = "Action chunk length."},
    {.key = "n_action_steps", .type = RT_OPT_INT, .default_value = "100", .help = "Actions per chunk used."},
    NORM("VISUAL"),
    NORM("STATE"),
    NORM("ACTION"),
    {.key = "vision_backbone", .type = RT_OPT_STRING, .default_value = "resnet18", .help = "Backbone."},
    {.key = "pretrained_backbone_weights",
     .type = RT_OPT_STRING,
     .default_value = "ResNet18_Weights.IMAGENET1K_V1",
     .flags = RT_OPT_NULLABLE,
     .help = "Backbone weights."},
    {.key = "replace_final_stride_with_dilation",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Dilation."},
    {.key = "pre_norm", .type = RT_OPT_BOOL, .default_value = "false", .help = "Pre-norm layers."},
    {.key = "dim_model", .type = RT_OPT_INT, .default_value = "512", .help = "Model width."},
    {.key = "n_heads", .type = RT_OPT_INT, .default_value = "8", .help = "Attention heads."},
    {.key = "dim_feedforward", .type = RT_OPT_INT, .default_value = "3200", .help = "Feed-forward width."},
    {.key = "feedforward_activation",
     .type = RT_OPT_ENUM,
     .default_value = "relu",
     .choices = activations,
     .help = "Activation."},
    {.key = "n_encoder_layers", .type = RT_OPT_INT, .default_value = "4", .help = "Encoder layers."},
    {.key = "n_decoder_layers", .type = RT_OPT_INT, .default_value = "1", .help = "Decoder layers."},
    {.key = "use_vae", .type = RT_OPT_BOOL, .default_value = "true", .help = "VAE objective."},
    {.key = "latent_dim", .type = RT_OPT_INT, .default_value = "32", .help = "Latent size."},
    {.key = "n_vae_encoder_layers", .type = RT_OPT_INT, .default_value = "4", .help = "VAE encoder layers."},
    {.key = "temporal_ensemble_coeff", .type = RT_OPT_FLOAT, .flags = RT_OPT_NULLABLE, .help = "Ensembling."},
    {.key = "dropout", .type = RT_OPT_FLOAT, .default_value = "0.1", .help = "Dropout."},
    {.key = "kl_weight", .type = RT_OPT_FLOAT, .default_value = "10.0", .help = "KL weight."},
    {.key = "optimizer_lr", .type = RT_OPT_FLOAT, .default_value = "1e-05", .help = "Preset lr."},
    {.key = "optimizer_weight_decay",
     .type = RT_OPT_FLOAT,
     .default_value = "0.0001",
     .help = "Preset decay."},
    {.key = "optimizer_lr_backbone", .type = RT_OPT_FLOAT, .default_value = "1e-05", .help = "Backbone lr."},
};

static char *tmpdir;

static rt_config *act_config(void)
{
    rt_config *cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    if (!rt_train_add_options(cfg, &error) ||
        !rt_train_add_policy_options(cfg, act_rows, G_N_ELEMENTS(act_rows), &error)) {
        printf("# %s\n", error->message);
        g_clear_error(&error);
    }
    return cfg;
}

/* Parses a NULL-terminated list of flags (after the command name). */
static gboolean parse(rt_config *cfg, GError **error, ...)
{
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (char *)"train");
    va_list ap;
    va_start(ap, error);
    for (const char *a; (a = va_arg(ap, const char *));)
        g_ptr_array_add(argv, (char *)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    gboolean ok = rt_config_parse_args(cfg, (int)argv->len - 1, (char **)argv->pdata, NULL, error);
    g_ptr_array_free(argv, TRUE);
    return ok;
}

static char *text_of(rt_config *cfg, const char *key)
{
    static char *last;
    g_free(last);
    last = rt_config_get_text(cfg, key);
    return last;
}

static gboolean has_note(GPtrArray *notes, const char *text)
{
    for (guint i = 0; i < notes->len; i++)
        if (strcmp(g_ptr_array_index(notes, i), text) == 0)
            return TRUE;
    for (guint i = 0; i < notes->len; i++)
        printf("# note: %s\n", (char *)g_ptr_array_index(notes, i));
    return FALSE;
}

static JsonObject *parse_object(const char *text)
{
    JsonParser *parser = json_parser_new();
    JsonObject *object = NULL;
    if (json_parser_load_from_data(parser, text, -1, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)))
        object = json_object_ref(json_node_get_object(json_parser_get_root(parser)));
    g_object_unref(parser);
    return object;
}

static JsonObject *member_object(JsonObject *object, const char *name)
{
    JsonNode *node = json_object_get_member(object, name);
    return node && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

DEF_TEST(lerobot_defaults)
{
    g_autoptr(rt_config) cfg = act_config();
    /* TrainPipelineConfig (v0.6.1) */
    EXPECT_EQ_STR("1000", text_of(cfg, "seed"));
    EXPECT_EQ_STR("4", text_of(cfg, "num_workers"));
    EXPECT_EQ_STR("8", text_of(cfg, "batch_size"));
    EXPECT_EQ_STR("100000", text_of(cfg, "steps"));
    EXPECT_EQ_STR("200", text_of(cfg, "log_freq"));
    EXPECT_EQ_STR("20000", text_of(cfg, "save_freq"));
    EXPECT_EQ_STR("true", text_of(cfg, "save_checkpoint"));
    EXPECT_EQ_STR("false", text_of(cfg, "resume"));
    EXPECT_EQ_STR("true", text_of(cfg, "use_policy_training_preset"));
    EXPECT_EQ_STR("0.0001", text_of(cfg, "tolerance_s"));
    EXPECT_EQ_STR("null", text_of(cfg, "output_dir"));
    EXPECT_EQ_STR("null", text_of(cfg, "job_name"));
    /* DatasetConfig */
    EXPECT_EQ_STR("true", text_of(cfg, "dataset.use_imagenet_stats"));
    EXPECT_EQ_STR("null", text_of(cfg, "dataset.root"));
    EXPECT_EQ_STR("all", text_of(cfg, "dataset.episodes")); /* null, written as users write it */
    EXPECT_EQ_STR("null", text_of(cfg, "dataset.revision"));
    OK(rt_config_lookup(cfg, "dataset.repo_id")->flags & RT_OPT_REQUIRED);
    /* AdamWConfig */
    EXPECT_EQ_STR("adamw", text_of(cfg, "optimizer.type"));
    EXPECT_EQ_STR("0.001", text_of(cfg, "optimizer.lr"));
    EXPECT_EQ_STR("[0.9,0.999]", text_of(cfg, "optimizer.betas"));
    EXPECT_EQ_STR("1e-08", text_of(cfg, "optimizer.eps"));
    EXPECT_EQ_STR("0.01", text_of(cfg, "optimizer.weight_decay"));
    EXPECT_EQ_STR("10.0", text_of(cfg, "optimizer.grad_clip_norm"));
    EXPECT_EQ_STR("none", text_of(cfg, "scheduler.type"));
    EXPECT_EQ_STR("cosine", text_of(cfg, "scheduler.name"));
    /* PreTrainedConfig */
    EXPECT_EQ_STR("true", text_of(cfg, "policy.push_to_hub"));
    EXPECT_EQ_STR("false", text_of(cfg, "policy.use_amp"));
    EXPECT_EQ_STR("auto", text_of(cfg, "policy.device"));
    EXPECT_EQ_STR("null", text_of(cfg, "policy.repo_id"));
    /* WandBConfig */
    EXPECT_EQ_STR("false", text_of(cfg, "wandb.enable"));
    EXPECT_EQ_STR("lerobot", text_of(cfg, "wandb.project"));
    EXPECT_EQ_STR("null", text_of(cfg, "wandb.mode"));
    /* the module declared n_obs_steps itself: no second row */
    EXPECT_EQ_STR("1", text_of(cfg, "policy.n_obs_steps"));
    EXPECT_EQ_STR("{}", text_of(cfg, "policy.input_features")); /* from the dataset */
    EXPECT_EQ_STR("null", text_of(cfg, "policy.type"));
    return 0;
}

DEF_TEST(other_layers_rows_win)
{
    /* a layer that declared its rows first (the dataset's) keeps them */
    static const rt_option dataset_episodes = {.key = "episodes",
                                               .type = RT_OPT_LIST,
                                               .item_type = RT_OPT_INT,
                                               .flags = RT_OPT_NULLABLE,
                                               .help = "The dataset layer's own row."};
    g_autoptr(rt_config) cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    OK(rt_config_add_options(cfg, "dataset", &dataset_episodes, 1, &error));
    OK(rt_train_add_options(cfg, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("The dataset layer's own row.", rt_config_lookup(cfg, "dataset.episodes")->help);
    return 0;
}

DEF_TEST(lerobot_file_loads)
{
    g_autofree char *path = rt_test_srcfile("data/train/lerobot-act-train_config.json");
    GError *error = NULL;
    g_autoptr(rt_train_file) file = rt_train_file_load(path, &error);
    EXPECT_NO_ERROR(error);
    OK(file != NULL);
    EXPECT_EQ_STR("act", rt_train_file_policy_type(file));
    g_autoptr(rt_config) cfg = act_config();
    OK(rt_train_file_apply(file, cfg, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("lerobot/aloha_sim_insertion_human", text_of(cfg, "dataset.repo_id"));
    EXPECT_EQ_STR("outputs/train/act_aloha_insertion", text_of(cfg, "output_dir"));
    EXPECT_EQ_STR("cuda", text_of(cfg, "policy.device"));
    EXPECT_EQ_STR("user/act_aloha_insertion", text_of(cfg, "policy.repo_id"));
    EXPECT_EQ_STR("1e-05", text_of(cfg, "optimizer.lr"));
    EXPECT_EQ_STR("none", text_of(cfg, "scheduler.type")); /* "scheduler": null */
    EXPECT_EQ_STR("k3x9q2ab", text_of(cfg, "wandb.run_id"));
    EXPECT_EQ_STR("true", text_of(cfg, "wandb.enable"));
    EXPECT_EQ_STR("MEAN_STD", text_of(cfg, "policy.normalization_mapping.VISUAL"));
    EXPECT_EQ_INT(RT_SOURCE_FILE, rt_config_get_source(cfg, "steps"));
    g_autofree char *origin = rt_config_describe_origin(cfg, "steps");
    OK(g_str_has_suffix(origin, "lerobot-act-train_config.json: steps"));
    /* the features: JSON text in the option, in file order */
    EXPECT_EQ_STR("{\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [3, 480, 640]}, "
                  "\"observation.state\": {\"type\": \"STATE\", \"shape\": [14]}}",
                  text_of(cfg, "policy.input_features"));
    EXPECT_EQ_STR("{\"action\": {\"type\": \"ACTION\", \"shape\": [14]}}",
                  text_of(cfg, "policy.output_features"));
    return 0;
}

/* A copy of the LeRobot file with one member replaced (a JSON value). */
static char *lerobot_text_with(const char *search, const char *replace)
{
    g_autofree char *path = rt_test_srcfile("data/train/lerobot-act-train_config.json");
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    char *at = strstr(text, search);
    if (!at)
        return NULL;
    return g_strdup_printf("%.*s%s%s", (int)(at - text), text, replace, at + strlen(search));
}

DEF_TEST(lerobot_fields_we_do_not_do)
{
    GError *error = NULL;
    g_autofree char *t1 =
        lerobot_text_with("\"env\": null", "\"env\": {\"type\": \"aloha\", \"task\": \"x\"}");
    OK(t1);
    OK(!rt_train_file_load_data(t1, strlen(t1), "t1.json", FALSE, &error));
    EXPECT_EQ_INT(RT_ERROR_UNSUPPORTED, error ? error->code : -1);
    EXPECT_ERROR(error,
                 "t1.json: env is {\"type\": \"aloha\", \"task\": \"x\"}: robotrain does not run simulation "
                 "environments (evaluate with LeRobot); remove it from the file");

    /* every problem is reported, one per line */
    g_autofree char *t2a =
        lerobot_text_with("\"enable\": false,\n            \"max", "\"enable\": true,\n            \"max");
    OK(t2a);
    g_autofree char *t2 = NULL;
    {
        char *at = strstr(t2a, "\"rename_map\": {}");
        OK(at);
        t2 = g_strdup_printf("%.*s\"rename_map\": {\"a\": \"b\"}%s", (int)(at - t2a), t2a,
                             at + strlen("\"rename_map\": {}"));
    }
    OK(!rt_train_file_load_data(t2, strlen(t2), "t2.json", FALSE, &error));
    OK(error &&
       strstr(error->message, "t2.json: rename_map is {\"a\": \"b\"}: renaming observation keys is not "
                              "supported; remove it from the file\n"));
    EXPECT_ERROR(error, "t2.json: dataset.image_transforms is {\"enable\": true, \"max_num_transforms\": 3, "
                        "\"random_order\": false, \"tfs\": {\"bri...: image augmentation "
                        "(dataset.image_transforms) is not supported");

    g_autofree char *t3 = lerobot_text_with("\"target\": null", "\"target\": \"a10g-small\"");
    OK(!rt_train_file_load_data(t3, strlen(t3), "t3.json", FALSE, &error));
    EXPECT_ERROR(error, "t3.json: job.target is \"a10g-small\": Hugging Face Jobs are not supported");

    /* a typo is an unknown key with a suggestion, when the file is applied */
    g_autofree char *t4 = lerobot_text_with("\"batch_size\": 8,", "\"bacth_size\": 8,");
    g_autoptr(rt_train_file) f4 = rt_train_file_load_data(t4, strlen(t4), "t4.json", FALSE, &error);
    EXPECT_NO_ERROR(error);
    g_autoptr(rt_config) cfg = act_config();
    OK(!rt_train_file_apply(f4, cfg, &error));
    EXPECT_ERROR(error, "t4.json: unknown key 'bacth_size' (did you mean 'batch_size'?)");

    /* a scheduler robotrain does not have */
    g_autofree char *t5 = lerobot_text_with("\"scheduler\": null", "\"scheduler\": {\"type\": \"vqbet\"}");
    g_autoptr(rt_train_file) f5 = rt_train_file_load_data(t5, strlen(t5), "t5.json", FALSE, &error);
    OK(!rt_train_file_apply(f5, cfg, &error));
    EXPECT_ERROR(error, "t5.json: scheduler.type:");

    OK(!rt_train_file_load_data("[1]", 3, "t6.json", FALSE, &error));
    EXPECT_ERROR(error,
                 "t6.json: train_config.json holds one JSON object ({\"key\": value, ...}), not an array");
    OK(!rt_train_file_load_data("{\"a\": ", 6, "t7.json", FALSE, &error));
    EXPECT_ERROR(error, "t7.json:1:");
    g_autofree char *missing = g_build_filename(tmpdir, "nothing-here", NULL);
    OK(!rt_train_file_load(missing, &error));
    EXPECT_EQ_INT(RT_ERROR_NOT_FOUND, error ? error->code : -1);
    EXPECT_ERROR(error, "nothing-here");
    return 0;
}

DEF_TEST(round_trip)
{
    /* a LeRobot file read and written again: LeRobot's fields, its order, our values */
    g_autofree char *path = rt_test_srcfile("data/train/lerobot-act-train_config.json");
    GError *error = NULL;
    g_autoptr(rt_train_file) file = rt_train_file_load(path, &error);
    g_autoptr(rt_config) cfg = act_config();
    OK(file && rt_train_file_apply(file, cfg, &error));
    g_autofree char *first = rt_train_config_to_json(cfg);

    JsonObject *root = parse_object(first);
    OK(root != NULL);
    GList *keys = json_object_get_members(root);
    EXPECT_EQ_STR("dataset", keys->data);
    EXPECT_EQ_STR("policy", keys->next->data);
    EXPECT_EQ_STR("output_dir", keys->next->next->data);
    g_list_free(keys);
    OK(!json_object_has_member(root, "config_path")); /* command-line only */
    OK(JSON_NODE_HOLDS_NULL(json_object_get_member(root, "scheduler")));
    JsonObject *policy = member_object(root, "policy");
    GList *pkeys = json_object_get_members(policy);
    EXPECT_EQ_STR("type", pkeys->data);
    EXPECT_EQ_STR("n_obs_steps", pkeys->next->data);
    EXPECT_EQ_STR("input_features", pkeys->next->next->data);
    g_list_free(pkeys);
    OK(!json_object_has_member(policy, "path"));
    EXPECT_EQ_STR("act", json_object_get_string_member(policy, "type"));
    EXPECT_EQ_INT(100, json_object_get_int_member(policy, "chunk_size"));
    OK(member_object(member_object(policy, "input_features"), "observation.state") != NULL);
    JsonObject *optimizer = member_object(root, "optimizer");
    EXPECT_EQ_STR("adamw", json_object_get_string_member(optimizer, "type"));
    EXPECT_NEAR(1e-5, json_object_get_double_member(optimizer, "lr"), 0);
    json_object_unref(root);
    /* Python's json.dump(indent=4): "key": value, floats as repr, no newline at the end */
    OK(strstr(first, "{\n    \"dataset\": {\n        \"repo_id\": \"lerobot/aloha_sim_insertion_human\",\n"));
    OK(strstr(first, "        \"betas\": [\n            0.9,\n            0.999\n        ],\n"));
    OK(strstr(first, "\"optimizer_weight_decay\": 0.0001,"));
    OK(strstr(first, "\"kl_weight\": 10.0,"));
    OK(strstr(first, "\"scheduler\": null,"));
    OK(first[strlen(first) - 1] == '}');

    /* our file read back gives the same values and the same text */
    g_autoptr(rt_train_file) again =
        rt_train_file_load_data(first, strlen(first), "ours.json", FALSE, &error);
    g_autoptr(rt_config) cfg2 = act_config();
    OK(again && rt_train_file_apply(again, cfg2, &error));
    EXPECT_NO_ERROR(error);
    g_autofree char *second = rt_train_config_to_json(cfg2);
    EXPECT_EQ_STR(first, second);

    /* config.json: the policy object alone */
    g_autofree char *policy_json = rt_train_policy_config_to_json(cfg);
    OK(g_str_has_prefix(policy_json,
                        "{\n    \"type\": \"act\",\n    \"n_obs_steps\": 1,\n    \"input_features\": {\n"));
    g_autoptr(rt_train_file) pfile =
        rt_train_file_load_data(policy_json, strlen(policy_json), "config.json", TRUE, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("act", rt_train_file_policy_type(pfile));
    /* the features written as objects, the mapping as LeRobot's dictionary */
    OK(strstr(
        first,
        "        \"output_features\": {\n            \"action\": {\n                \"type\": \"ACTION\",\n"
        "                \"shape\": [\n                    14\n                ]\n"));
    OK(strstr(first, "        \"normalization_mapping\": {\n            \"VISUAL\": \"MEAN_STD\",\n"));
    return 0;
}

DEF_TEST(scheduler_written_as_lerobot)
{
    g_autoptr(rt_config) cfg = act_config();
    GError *error = NULL;
    OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--scheduler.type=diffuser",
             "--scheduler.num_warmup_steps=500", NULL));
    g_autofree char *text = rt_train_config_to_json(cfg);
    OK(strstr(text,
              "    \"scheduler\": {\n        \"type\": \"diffuser\",\n        \"num_warmup_steps\": 500,\n"
              "        \"name\": \"cosine\"\n    },\n"));
    OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--scheduler.type=cosine_decay_with_warmup",
             "--scheduler.num_warmup_steps=1000", "--scheduler.num_decay_steps=30000",
             "--scheduler.peak_lr=2.5e-05", "--scheduler.decay_lr=2.5e-06", NULL));
    g_free(text);
    text = rt_train_config_to_json(cfg);
    OK(strstr(text, "    \"scheduler\": {\n        \"type\": \"cosine_decay_with_warmup\",\n"
                    "        \"num_warmup_steps\": 1000,\n        \"num_decay_steps\": 30000,\n"
                    "        \"peak_lr\": 2.5e-05,\n        \"decay_lr\": 2.5e-06\n    },\n"));
    /* and read back */
    g_autoptr(rt_train_file) f = rt_train_file_load_data(text, strlen(text), "s.json", FALSE, &error);
    g_autoptr(rt_config) cfg2 = act_config();
    OK(f && rt_train_file_apply(f, cfg2, &error));
    EXPECT_EQ_STR("cosine_decay_with_warmup", text_of(cfg2, "scheduler.type"));
    EXPECT_EQ_STR("2.5e-06", text_of(cfg2, "scheduler.decay_lr"));
    /* without a policy type: "policy": null */
    g_autoptr(rt_config) bare = act_config();
    OK(parse(bare, &error, "--dataset.repo_id=x/y", NULL));
    g_autofree char *bare_text = rt_train_config_to_json(bare);
    OK(strstr(bare_text, "\n    \"policy\": null,\n"));
    OK(rt_train_policy_config_to_json(bare) == NULL);
    EXPECT_NO_ERROR(error);
    return 0;
}

static GDateTime *fixed_time(void)
{
    return g_date_time_new_utc(2026, 12, 1, 9, 30, 5);
}

DEF_TEST(validation)
{
    GError *error = NULL;
    g_autoptr(GDateTime) now = fixed_time();
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    rt_train_settings settings = {0};

    /* defaults LeRobot fills in */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.push_to_hub=false",
                 NULL));
        OK(rt_train_validate(cfg, now, &settings, notes, &error));
        EXPECT_NO_ERROR(error);
        EXPECT_EQ_STR("act", text_of(cfg, "job_name"));
        EXPECT_EQ_STR("outputs/train/2026-12-01/09-30-05_act", text_of(cfg, "output_dir"));
        OK(has_note(notes, "output_dir: outputs/train/2026-12-01/09-30-05_act"));
        OK(has_note(notes, "job_name: act (the policy type)"));
        OK(settings.device_type == NULL); /* auto */
        OK(settings.checkpoint_dir == NULL);
        rt_train_settings_clear(&settings);
    }
    /* no policy */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", NULL));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(error, "Policy is not configured: give --policy.type=act for a new policy, or "
                            "--policy.path=DIR for a pretrained one");
    }
    /* both policy sources on the command line */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.path=/tmp/p", NULL));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(error, "--policy.type=act and --policy.path=/tmp/p cannot be combined");
    }
    /* push_to_hub (true by default) needs a repo id */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", NULL));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(error,
                     "'repo_id' argument missing. Please specify it to push the model to the hub: "
                     "--policy.repo_id=USER/NAME, or --policy.push_to_hub=false to keep the policy local");
    }
    /* an existing output folder without --resume */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.repo_id=u/m", NULL));
        OK(rt_config_set(cfg, "output_dir", tmpdir, &error));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        g_autofree char *expect =
            g_strdup_printf("Output directory %s already exists and resume is False. Please "
                            "change your output directory so that %s is not overwritten",
                            tmpdir, tmpdir);
        EXPECT_ERROR(error, expect);
    }
    /* --resume without a config path; with one that has no training state; with a checkpoint */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.push_to_hub=false",
                 "--resume=true", NULL));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(
            error, "A config_path is expected when resuming a run. Please specify path to train_config.json");

        g_autofree char *policy_dir =
            g_build_filename(tmpdir, "run", "checkpoints", "000010", "pretrained_model", NULL);
        OK(g_mkdir_with_parents(policy_dir, 0755) == 0);
        g_autofree char *config = g_build_filename(policy_dir, "train_config.json", NULL);
        OK(g_file_set_contents(config, "{}", 2, NULL));
        OK(rt_config_set(cfg, "config_path", config, &error));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(error, "no training_state folder beside");

        g_autofree char *checkpoint = g_build_filename(tmpdir, "run", "checkpoints", "000010", NULL);
        g_autofree char *state = g_build_filename(checkpoint, "training_state", NULL);
        OK(g_mkdir_with_parents(state, 0755) == 0);
        g_autofree char *run = g_build_filename(tmpdir, "run", NULL);
        OK(rt_config_set(cfg, "output_dir", run, &error)); /* exists: fine when resuming */
        OK(rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_NO_ERROR(error);
        EXPECT_EQ_STR(checkpoint, settings.checkpoint_dir);
        EXPECT_EQ_STR(policy_dir, text_of(cfg, "policy.pretrained_path"));
        rt_train_settings_clear(&settings);
    }
    /* devices */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.push_to_hub=false",
                 "--policy.device=cuda:3", NULL));
        OK(rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_EQ_STR("cuda", settings.device_type);
        EXPECT_EQ_INT(3, settings.device_index);
        rt_train_settings_clear(&settings);
        OK(rt_config_set(cfg, "output_dir", "null", &error));
        OK(rt_config_set(cfg, "policy.device", "cpu", &error));
        OK(rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_EQ_STR("cpu", settings.device_type);
        EXPECT_EQ_INT(-1, settings.device_index);
        rt_train_settings_clear(&settings);
        OK(rt_config_set(cfg, "policy.device", "mps", &error));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_EQ_INT(RT_ERROR_UNSUPPORTED, error ? error->code : -1);
        EXPECT_ERROR(error,
                     "--policy.device=mps: Apple's Metal (mps) is not supported; use cpu, cuda or cuda:N");
        rt_train_settings_clear(&settings);
        OK(rt_config_set(cfg, "policy.device", "cuda:x", &error));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(error, "--policy.device=cuda:x: not a device; use cpu, cuda or cuda:N (or auto)");
        rt_train_settings_clear(&settings);
    }
    /* betas, scheduler fields without their scheduler */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.push_to_hub=false",
                 "--optimizer.betas=[0.9,0.99,0.9]", NULL));
        OK(!rt_train_validate(cfg, now, &settings, NULL, &error));
        EXPECT_ERROR(error, "--optimizer.betas is [0.9,0.99,0.9]: AdamW takes two betas, each in [0, 1)");
        rt_train_settings_clear(&settings);
        g_autoptr(rt_config) cfg2 = act_config();
        OK(parse(cfg2, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.push_to_hub=false",
                 "--scheduler.num_warmup_steps=100", NULL));
        OK(!rt_train_validate(cfg2, now, &settings, NULL, &error));
        EXPECT_ERROR(error, "--scheduler.num_warmup_steps has no effect with scheduler.type none: add "
                            "--scheduler.type=diffuser or cosine_decay_with_warmup");
        rt_train_settings_clear(&settings);
    }
    return 0;
}

DEF_TEST(preset_and_flags)
{
    GError *error = NULL;
    rt_train_preset preset;
    rt_train_optim optim;

    /* nothing given: the ACT preset, two groups, no schedule */
    {
        g_autoptr(rt_config) cfg = act_config();
        g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", NULL));
        rt_train_preset_act(cfg, &preset);
        OK(rt_train_resolve_optimizer(cfg, &preset, &optim, notes, &error));
        EXPECT_NO_ERROR(error);
        EXPECT_EQ_INT(2, optim.n_groups);
        EXPECT_NEAR(1e-5, optim.groups[0].lr, 0);
        EXPECT_NEAR(1e-4, optim.groups[0].weight_decay, 0);
        EXPECT_NEAR(0.9, optim.groups[0].beta1, 0);
        EXPECT_NEAR(0.999, optim.groups[0].beta2, 0);
        EXPECT_NEAR(1e-8, optim.groups[0].eps, 0);
        EXPECT_NEAR(1e-5, optim.groups[1].lr, 0);
        EXPECT_NEAR(1e-4, optim.groups[1].weight_decay, 0);
        EXPECT_EQ_STR("model.backbone", optim.group_prefix[1]);
        OK(optim.group_prefix[0] == NULL);
        EXPECT_NEAR(10.0, optim.grad_clip_norm, 0);
        EXPECT_EQ_INT(RT_LR_NONE, optim.schedule.kind);
        OK(!optim.lr_from_args);
        OK(has_note(notes, "optimizer: the act preset: AdamW lr 1e-05, weight_decay 0.0001, eps 1e-08, "
                           "grad_clip_norm 10.0, betas [0.9, 0.999]; scheduler none"));
        /* recorded in the config, so train_config.json says what ran */
        EXPECT_EQ_STR("1e-05", text_of(cfg, "optimizer.lr"));
        EXPECT_EQ_STR("0.0001", text_of(cfg, "optimizer.weight_decay"));
    }
    /* --optimizer.lr on the command line wins; the backbone group keeps its lr */
    {
        g_autoptr(rt_config) cfg = act_config();
        g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--optimizer.lr=2e-4", NULL));
        rt_train_preset_act(cfg, &preset);
        OK(rt_train_resolve_optimizer(cfg, &preset, &optim, notes, &error));
        EXPECT_NEAR(2e-4, optim.groups[0].lr, 0);
        EXPECT_NEAR(1e-5, optim.groups[1].lr, 0);
        EXPECT_NEAR(1e-4, optim.groups[0].weight_decay, 0); /* not given: the preset's */
        OK(optim.lr_from_args);
        OK(has_note(notes,
                    "--optimizer.lr=0.0002 given on the command line replaces the act preset's lr 1e-05 "
                    "(--policy.optimizer_lr); LeRobot ignores this flag while use_policy_training_preset "
                    "is true"));
        OK(has_note(notes, "optimizer: group 1 (backbone) keeps lr 1e-05 (--policy.optimizer_lr_backbone)"));
        OK(has_note(notes,
                    "optimizer: the act preset: AdamW weight_decay 0.0001, eps 1e-08, grad_clip_norm 10.0, "
                    "betas [0.9, 0.999]; scheduler none"));
        EXPECT_EQ_STR("0.0002", text_of(cfg, "optimizer.lr"));
    }
    /* the preset follows --policy.optimizer_lr, and replaces a config file's optimizer values */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(rt_config_load_json_data(cfg, "{\"optimizer\": {\"lr\": 0.5}}", 26, "f.json", &error));
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--policy.optimizer_lr=3e-5",
                 "--policy.optimizer_lr_backbone=1e-6", NULL));
        rt_train_preset_act(cfg, &preset);
        OK(rt_train_resolve_optimizer(cfg, &preset, &optim, NULL, &error));
        EXPECT_NEAR(3e-5, optim.groups[0].lr, 0);
        EXPECT_NEAR(1e-6, optim.groups[1].lr, 0);
    }
    /* presets off: the flags, one group (LeRobot optimizes policy.parameters()) */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act",
                 "--use_policy_training_preset=false", "--optimizer.weight_decay=0.05",
                 "--scheduler.type=diffuser", "--scheduler.num_warmup_steps=10", "--steps=110", NULL));
        rt_train_preset_act(cfg, &preset);
        OK(rt_train_resolve_optimizer(cfg, &preset, &optim, NULL, &error));
        EXPECT_NO_ERROR(error);
        EXPECT_EQ_INT(1, optim.n_groups);
        EXPECT_NEAR(1e-3, optim.groups[0].lr, 0); /* AdamWConfig's default */
        EXPECT_NEAR(0.05, optim.groups[0].weight_decay, 0);
        EXPECT_EQ_INT(RT_LR_DIFFUSER, optim.schedule.kind);
        EXPECT_NEAR(0.5, rt_lr_schedule_factor(&optim.schedule, 60), 1e-15);
    }
    /* resuming: the saved values stay (no preset), groups as the preset says */
    {
        g_autoptr(rt_config) cfg = act_config();
        OK(rt_config_load_json_data(cfg, "{\"optimizer\": {\"lr\": 0.25}}", 27, "saved.json", &error));
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--resume=true", NULL));
        rt_train_preset_act(cfg, &preset);
        OK(rt_train_resolve_optimizer(cfg, &preset, &optim, NULL, &error));
        EXPECT_NEAR(0.25, optim.groups[0].lr, 0);
        EXPECT_EQ_INT(2, optim.n_groups);
    }
    /* an explicit scheduler flag replaces the preset's none */
    {
        g_autoptr(rt_config) cfg = act_config();
        g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
        OK(parse(cfg, &error, "--dataset.repo_id=x/y", "--policy.type=act", "--scheduler.type=diffuser",
                 NULL));
        rt_train_preset_act(cfg, &preset);
        OK(!rt_train_resolve_optimizer(cfg, &preset, &optim, notes, &error));
        EXPECT_ERROR(error, "the diffuser schedule 'cosine' needs --scheduler.num_warmup_steps");
        OK(has_note(notes,
                    "--scheduler.type=diffuser given on the command line replaces the act preset's schedule "
                    "(none)"));
    }
    return 0;
}

int main(void)
{
    g_setenv("TZ", "UTC", TRUE);
    tzset();
    tmpdir = g_dir_make_tmp("test-train-options-XXXXXX", NULL);
    RUN_TEST(lerobot_defaults);
    RUN_TEST(other_layers_rows_win);
    RUN_TEST(lerobot_file_loads);
    RUN_TEST(lerobot_fields_we_do_not_do);
    RUN_TEST(round_trip);
    RUN_TEST(scheduler_written_as_lerobot);
    RUN_TEST(validation);
    RUN_TEST(preset_and_flags);
    g_autofree char *rm = g_strdup_printf("rm -rf '%s'", tmpdir);
    if (system(rm) != 0)
        printf("# could not remove %s\n", tmpdir);
    g_free(tmpdir);
    END_TEST;
}
