/* The ACT policy module through robotrain/policy.h: its options (LeRobot's ACTConfig defaults),
 * config.json in and out, the validation errors, the state dict it declares, its
 * initialisation, pretrained backbone files, action selection (the queue and temporal
 * ensembling against hand-computed values) and a few training steps. The golden reference runs
 * are checked by tests/policy-check.sh. */
#include "config.h"

#include <glib/gstdio.h>

#include "graph-test.h"

static rt_plugin_registry *registry; /* freed at the end of main */

static const rt_plugin_module *act_module(void)
{
    static const rt_plugin_module *m;
    if (!m) {
        GError *error = NULL;
        char **folders = rt_plugin_search_path(NULL, NULL, &error);
        registry = folders ? rt_plugin_registry_new((const char *const *)folders, &error) : NULL;
        m = registry ? rt_policy_find_module(registry, "act", &error) : NULL;
        g_strfreev(folders);
        if (!m) {
            printf("# cannot load the act module: %s\n", error->message);
            exit(99);
        }
    }
    return m;
}

/* A configuration of ACT: the defaults, then "key=value" settings given as --policy.key=value
 * flags (so that messages name the flags). */
static rt_config *act_config(const char *const *settings)
{
    rt_config *cfg = rt_config_new("test-act");
    GError *error = NULL;
    if (!rt_policy_add_options(cfg, act_module()->desc, &error)) {
        printf("# %s\n", error->message);
        exit(99);
    }
    GPtrArray *argv = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(argv, g_strdup("test-act"));
    for (size_t i = 0; settings && settings[i]; i++)
        g_ptr_array_add(argv, g_strconcat("--policy.", settings[i], NULL));
    int argc = (int)argv->len;
    g_ptr_array_add(argv, NULL);
    if (!rt_config_parse_args(cfg, argc, (char **)argv->pdata, NULL, &error)) {
        printf("# %s\n", error->message);
        exit(99);
    }
    g_ptr_array_unref(argv);
    return cfg;
}

#define SMALL_FEATURES                                                                             \
    "input_features={\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [3, 32, 32]}, " \
    "\"observation.state\": {\"type\": \"STATE\", \"shape\": [3]}}",                               \
        "output_features={\"action\": {\"type\": \"ACTION\", \"shape\": [2]}}"
#define SMALL_MODEL                                                                                \
    "dim_model=16", "n_heads=2", "dim_feedforward=24", "n_encoder_layers=1", "n_decoder_layers=1", \
        "n_vae_encoder_layers=1", "latent_dim=4", "chunk_size=5", "n_action_steps=5",               \
        "pretrained_backbone_weights=null"

static rt_policy *act_policy(const char *const *settings, GError **error)
{
    g_autoptr(rt_config) cfg = act_config(settings);
    return rt_policy_new(act_module()->desc, cfg, error);
}

/* every ACTConfig field is an option with LeRobot's default (configuration_act.py) */
DEF_TEST(options_are_lerobots)
{
    const rt_plugin_desc *d = act_module()->desc;
    static const char *const expect[][2] = {
        {"n_obs_steps", "1"}, {"chunk_size", "100"}, {"n_action_steps", "100"},
        {"normalization_mapping.VISUAL", "MEAN_STD"}, {"normalization_mapping.STATE", "MEAN_STD"},
        {"normalization_mapping.ACTION", "MEAN_STD"}, {"vision_backbone", "resnet18"},
        {"pretrained_backbone_weights", "ResNet18_Weights.IMAGENET1K_V1"},
        {"replace_final_stride_with_dilation", "false"}, {"pre_norm", "false"}, {"dim_model", "512"},
        {"n_heads", "8"}, {"dim_feedforward", "3200"}, {"feedforward_activation", "relu"},
        {"n_encoder_layers", "4"}, {"n_decoder_layers", "1"}, {"use_vae", "true"}, {"latent_dim", "32"},
        {"n_vae_encoder_layers", "4"}, {"temporal_ensemble_coeff", NULL}, {"dropout", "0.1"},
        {"kl_weight", "10.0"}, {"optimizer_lr", "1e-05"}, {"optimizer_weight_decay", "0.0001"},
        {"optimizer_lr_backbone", "1e-05"},
    };
    EXPECT_EQ_INT(G_N_ELEMENTS(expect), d->n_options);
    for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
        EXPECT_EQ_STR(expect[i][0], d->options[i].key);
        EXPECT_EQ_STR(expect[i][1], d->options[i].default_value);
    }
    /* and as flags, beside the options every policy has */
    g_autoptr(rt_config) cfg = act_config(NULL);
    GError *error = NULL;
    char *argv[] = {"x", "--policy.chunk_size=20", "--policy.n_action_steps", "7", "--policy.use_vae=false",
                    "--policy.temporal_ensemble_coeff=0.01", "--policy.device=cpu", NULL};
    OK(rt_config_parse_args(cfg, 7, argv, NULL, &error));
    EXPECT_EQ_INT(20, rt_config_get_int(cfg, "policy.chunk_size"));
    EXPECT_EQ_INT(7, rt_config_get_int(cfg, "policy.n_action_steps"));
    OK(!rt_config_get_bool(cfg, "policy.use_vae"));
    EXPECT_NEAR(0.01, rt_config_get_double(cfg, "policy.temporal_ensemble_coeff"), 0);
    EXPECT_EQ_STR("act", rt_config_get_string(cfg, "policy.type"));
    EXPECT_EQ_STR("cpu", rt_config_get_string(cfg, "policy.device"));
    OK(rt_config_get_bool(cfg, "policy.push_to_hub"));
    char *bad[] = {"x", "--policy.chunk_sise=3", NULL};
    OK(!rt_config_parse_args(cfg, 2, bad, NULL, &error));
    EXPECT_ERROR(error, "policy.chunk_size");
    return 0;
}

/* a LeRobot config.json (the golden cases' metadata) in, and out again */
DEF_TEST(config_json)
{
    static const char json[] =
        "{\"chunk_size\": 10, \"device\": \"cpu\", \"dim_feedforward\": 128, \"dim_model\": 64, "
        "\"dropout\": 0.0, \"feedforward_activation\": \"relu\", \"input_features\": "
        "{\"observation.images.top\": {\"shape\": [3, 64, 64], \"type\": \"VISUAL\"}, "
        "\"observation.images.wrist\": {\"shape\": [3, 64, 64], \"type\": \"VISUAL\"}, "
        "\"observation.state\": {\"shape\": [6], \"type\": \"STATE\"}}, \"kl_weight\": 10.0, \"latent_dim\": 8, "
        "\"license\": null, \"n_action_steps\": 10, \"n_decoder_layers\": 1, \"n_encoder_layers\": 2, "
        "\"n_heads\": 4, \"n_obs_steps\": 1, \"n_vae_encoder_layers\": 2, \"normalization_mapping\": "
        "{\"ACTION\": \"MEAN_STD\", \"STATE\": \"MIN_MAX\", \"VISUAL\": \"MEAN_STD\"}, \"optimizer_lr\": 1e-05, "
        "\"optimizer_lr_backbone\": 1e-05, \"optimizer_weight_decay\": 0.0001, \"output_features\": "
        "{\"action\": {\"shape\": [6], \"type\": \"ACTION\"}}, \"pre_norm\": false, "
        "\"pretrained_backbone_weights\": null, \"pretrained_path\": null, \"pretrained_revision\": null, "
        "\"private\": null, \"push_to_hub\": true, \"replace_final_stride_with_dilation\": false, "
        "\"repo_id\": null, \"tags\": null, \"temporal_ensemble_coeff\": null, \"type\": \"act\", "
        "\"use_amp\": false, \"use_peft\": false, \"use_vae\": false, \"vision_backbone\": \"resnet18\"}";
    GError *error = NULL;
    g_autoptr(rt_config) cfg = act_config(NULL);
    g_autofree char *type = rt_policy_config_json_type(json, strlen(json), "case", &error);
    EXPECT_EQ_STR("act", type);
    OK(rt_policy_config_load_json(cfg, json, strlen(json), "case", &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(64, rt_config_get_int(cfg, "policy.dim_model"));
    EXPECT_EQ_STR("MIN_MAX", rt_config_get_string(cfg, "policy.normalization_mapping.STATE"));
    OK(rt_config_is_null(cfg, "policy.pretrained_backbone_weights"));
    g_autoptr(rt_policy_features) in = rt_policy_config_features(cfg, "policy.input_features", &error);
    OK(in != NULL);
    EXPECT_EQ_INT(3, in->n);
    EXPECT_EQ_STR("observation.images.wrist", in->items[1].name);
    EXPECT_EQ_INT(RT_FEATURE_VISUAL, in->items[1].type);
    EXPECT_EQ_INT(64, in->items[1].shape[2]);
    EXPECT_EQ_INT(6, rt_policy_feature_numel(&in->items[2]));

    /* out: a flat object with type first; reading it back gives the same values */
    g_autofree char *out = rt_policy_config_to_json(cfg);
    OK(g_str_has_prefix(out, "{\n    \"type\": \"act\",\n"));
    OK(strstr(out, "\"normalization_mapping\": {\n        \"VISUAL\": \"MEAN_STD\",\n        \"STATE\": \"MIN_MAX\""));
    OK(strstr(out, "\"input_features\": {\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [3, 64, 64]}, "));
    OK(strstr(out, "\"optimizer_lr\": 1e-05"));
    OK(strstr(out, "\"temporal_ensemble_coeff\": null"));
    g_autoptr(rt_config) again = act_config(NULL);
    OK(rt_policy_config_load_json(again, out, strlen(out), "round trip", &error));
    EXPECT_NO_ERROR(error);
    g_autofree char *out2 = rt_policy_config_to_json(again);
    OK(strcmp(out, out2) == 0);

    /* errors name the file and the key */
    static const char wrong_type[] = "{\"type\": \"diffusion\"}";
    OK(!rt_policy_config_load_json(cfg, wrong_type, strlen(wrong_type), "other.json", &error));
    EXPECT_ERROR(error, "other.json: the config is for policy type 'diffusion', not 'act'");
    static const char unknown[] = "{\"type\": \"act\", \"chunk_sise\": 3}";
    OK(!rt_policy_config_load_json(cfg, unknown, strlen(unknown), "typo.json", &error));
    EXPECT_ERROR(error, "typo.json: unknown key 'policy.chunk_sise' (did you mean 'policy.chunk_size'?)");
    static const char not_json[] = "{\"type\": ";
    OK(!rt_policy_config_load_json(cfg, not_json, strlen(not_json), "cut.json", &error));
    EXPECT_ERROR(error, "cut.json: not valid JSON (");
    static const char list[] = "[1, 2]";
    OK(!rt_policy_config_load_json(cfg, list, strlen(list), "list.json", &error));
    EXPECT_ERROR(error, "list.json: a policy config holds one JSON object");
    static const char no_type[] = "{\"chunk_size\": 3}";
    OK(!rt_policy_config_load_json(cfg, no_type, strlen(no_type), "untyped.json", &error));
    EXPECT_ERROR(error, "untyped.json: the policy config has no \"type\"");
    return 0;
}

DEF_TEST(feature_errors)
{
    GError *error = NULL;
    OK(!rt_policy_features_parse("{\"a\": ", "--policy.input_features", &error));
    EXPECT_ERROR(error, "--policy.input_features is not valid JSON (");
    OK(!rt_policy_features_parse("[1]", "--policy.input_features", &error));
    EXPECT_ERROR(error, "--policy.input_features is a list; expected an object");
    OK(!rt_policy_features_parse("{\"a\": {\"type\": \"PIXELS\", \"shape\": [3]}}", "f", &error));
    EXPECT_ERROR(error, "f: feature 'a': \"type\" is 'PIXELS'; expected one of STATE, VISUAL");
    OK(!rt_policy_features_parse("{\"a\": {\"type\": \"STATE\", \"shape\": [0]}}", "f", &error));
    EXPECT_ERROR(error, "feature 'a': size 0 of \"shape\" is not a positive integer");
    OK(!rt_policy_features_parse("{\"a\": {\"type\": \"STATE\"}}", "f", &error));
    EXPECT_ERROR(error, "feature 'a': it has no \"shape\"");
    OK(!rt_policy_features_parse("{\"a\": {\"type\": \"STATE\", \"shape\": [1], \"dtype\": 1}}", "f", &error));
    EXPECT_ERROR(error, "unknown member \"dtype\"");
    OK(!rt_policy_features_parse("{\"a\": {\"type\": \"VISUAL\", \"shape\": [1, 2, 3, 4]}}", "f", &error));
    EXPECT_ERROR(error, "\"shape\" has 4 sizes; a feature has 1 to 3");
    g_autoptr(rt_policy_features) f =
        rt_policy_features_parse("{\"b\": {\"type\": \"ENV\", \"shape\": [4]}, \"a\": {\"type\": \"ACTION\", "
                                 "\"shape\": [2, 3]}}", "f", &error);
    OK(f && f->n == 2);
    g_autofree char *text = rt_policy_features_to_json(f);
    EXPECT_EQ_STR("{\"b\": {\"type\": \"ENV\", \"shape\": [4]}, \"a\": {\"type\": \"ACTION\", \"shape\": [2, 3]}}",
                  text);
    OK(rt_policy_features_find(f, "a") == &f->items[1]);
    OK(rt_policy_features_find(f, "c") == NULL);
    return 0;
}

/* LeRobot's validation rules, and what PyTorch would refuse later, as errors naming the options */
DEF_TEST(validation_errors)
{
    GError *error = NULL;
    static const struct {
        const char *settings[4];
        const char *message;
    } cases[] = {
        {{"n_action_steps=101"}, "The chunk size is the upper bound for the number of action steps per model "
                                 "invocation: --policy.n_action_steps is 101 but the default of "
                                 "policy.chunk_size is 100"},
        {{"temporal_ensemble_coeff=0.01"}, "`n_action_steps` must be 1 when using temporal ensembling "
                                           "(--policy.temporal_ensemble_coeff)"},
        {{"n_obs_steps=2"}, "Multiple observation steps not handled yet: --policy.n_obs_steps is 2"},
        {{"input_features={}"}, "You must provide at least one image or the environment state among the "
                                "inputs: --policy.input_features has no VISUAL or ENV feature"},
        {{"output_features={}"}, "ACT predicts the output feature 'action'"},
        {{"n_heads=7"}, "embed_dim must be divisible by num_heads: the default of policy.dim_model is 512 "
                        "and --policy.n_heads is 7"},
        {{"dim_model=18", "n_heads=2"}, "--policy.dim_model is 18: with cameras it must be a multiple of 4"},
        {{"feedforward_activation=glu"}, "--policy.feedforward_activation is glu, which cannot run"},
        {{"replace_final_stride_with_dilation=true"}, "\"Dilation > 1 not supported in BasicBlock\""},
        {{"dropout=1"}, "a dropout of 1 zeroes every activation"},
        {{"input_features={\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [1, 32, 32]}}"},
         "--policy.input_features: camera 'observation.images.top' has shape [1, 32, 32]; the ResNet backbone "
         "takes RGB images of shape [3, height, width]"},
        {{"input_features={\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [3, 32, 32]}, "
          "\"observation.state\": {\"type\": \"STATE\", \"shape\": [2, 3]}}"},
         "the robot state 'observation.state' has 2 axes; ACT takes a vector"},
        {{"input_features={\"observation.environment_state\": {\"type\": \"ENV\", \"shape\": [2, 3]}}"},
         "the environment state 'observation.environment_state' has 2 axes"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *settings[8] = {SMALL_FEATURES};
        for (int k = 0; k < 4 && cases[i].settings[k]; k++)
            settings[2 + k] = cases[i].settings[k];
        g_autoptr(rt_config) cfg = act_config(settings);
        OK(rt_policy_new(act_module()->desc, cfg, &error) == NULL);
        EXPECT_ERROR(error, cases[i].message);
    }
    /* valid: temporal ensembling with one action step; dilation with a Bottleneck ResNet */
    const char *ok1[] = {SMALL_FEATURES, "temporal_ensemble_coeff=0.01", "n_action_steps=1", NULL};
    rt_policy *p = act_policy(ok1, &error);
    EXPECT_NO_ERROR(error);
    rt_policy_free(p);
    const char *ok2[] = {SMALL_FEATURES, "vision_backbone=resnet50", "replace_final_stride_with_dilation=true",
                         NULL};
    p = act_policy(ok2, &error);
    EXPECT_NO_ERROR(error);
    rt_policy_free(p);
    /* the environment state alone is enough */
    const char *ok3[] = {"input_features={\"observation.environment_state\": {\"type\": \"ENV\", \"shape\": [5]}}",
                         "output_features={\"action\": {\"type\": \"ACTION\", \"shape\": [2]}}", NULL};
    p = act_policy(ok3, &error);
    EXPECT_NO_ERROR(error);
    rt_policy_free(p);
    return 0;
}

/* the frames a sample needs and the optimizer preset (LeRobot's get_optim_params) */
DEF_TEST(data_needs_and_optimizer)
{
    GError *error = NULL;
    const char *s[] = {SMALL_FEATURES, SMALL_MODEL, "optimizer_lr=0.002", "optimizer_lr_backbone=0.0003",
                       "optimizer_weight_decay=0.05", NULL};
    g_autoptr(rt_policy) p = act_policy(s, &error);
    EXPECT_NO_ERROR(error);
    rt_policy_delta_indices d;
    rt_policy_get_delta_indices(p, &d);
    EXPECT_EQ_INT(5, d.n_action);
    EXPECT_EQ_INT(0, d.action[0]);
    EXPECT_EQ_INT(4, d.action[4]);
    OK(d.observation == NULL && d.n_observation == 0 && d.reward == NULL);
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(2);
    rt_policy_losses losses;
    OK(rt_policy_build_train(p, g, &args, &losses, &error));
    EXPECT_EQ_INT(2, losses.n);
    EXPECT_EQ_STR("l1_loss", losses.names[0]);
    EXPECT_EQ_STR("kld_loss", losses.names[1]);
    OK(rt_graph_find(g, "kld_loss") == losses.values[1]);
    rt_policy_optimizer opt;
    OK(rt_policy_optimizer_preset(p, g, &opt, &error));
    EXPECT_EQ_INT(2, opt.n_groups);
    EXPECT_NEAR(0.002, opt.groups[0].lr, 0);
    EXPECT_NEAR(0.0003, opt.groups[1].lr, 0);
    EXPECT_NEAR(0.05, opt.groups[0].weight_decay, 0);
    EXPECT_NEAR(0.05, opt.groups[1].weight_decay, 0);
    EXPECT_NEAR(0.9, opt.groups[1].beta1, 0);
    EXPECT_NEAR(0.999, opt.groups[1].beta2, 0);
    EXPECT_NEAR(1e-8, opt.groups[1].eps, 0);
    EXPECT_NEAR(10, opt.grad_clip_norm, 0);
    int n_backbone = 0;
    for (int i = 0; i < rt_graph_n_params(g); i++) {
        rt_tensor *t = rt_graph_param(g, i);
        gboolean bb = g_str_has_prefix(t->name, "model.backbone.");
        n_backbone += bb;
        EXPECT_EQ_INT(bb ? 1 : 0, rt_param_group(t));
    }
    EXPECT_EQ_INT(20, n_backbone);
    rt_graph_free(g);
    return 0;
}

/* the fixed positional tables (spec/lerobot.md §1.7 test vectors) and PyTorch's initialisation */
DEF_TEST(initialisation)
{
    GError *error = NULL;
    const char *s[] = {"input_features={\"observation.images.top\": {\"type\": \"VISUAL\", \"shape\": [3, 32, 32]},"
                       " \"observation.state\": {\"type\": \"STATE\", \"shape\": [14]}}",
                       "output_features={\"action\": {\"type\": \"ACTION\", \"shape\": [14]}}", "n_encoder_layers=1",
                       "n_vae_encoder_layers=1", "dim_feedforward=64", NULL};
    g_autoptr(rt_policy) p = act_policy(s, &error);
    EXPECT_NO_ERROR(error);
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(1);
    rt_policy_losses losses;
    OK(rt_policy_build_train(p, g, &args, &losses, &error));
    OK(rt_test_plan(g));
    rt_tensor *pos = rt_graph_find(g, "model.vae_encoder_pos_enc");
    OK(pos && pos->shape[1] == 102 && pos->shape[2] == 512);
    float *table = g_new(float, 102 * 512);
    OK(rt_graph_read(g, pos, table, 102 * 512 * 4, &error));
    EXPECT_NEAR(0, table[0], 0);
    EXPECT_NEAR(1, table[1], 0);
    EXPECT_NEAR(0.841470957, table[512], 1e-9);
    EXPECT_NEAR(0.540302277, table[513], 1e-9);
    EXPECT_NEAR(0.821856201, table[514], 1e-9);
    EXPECT_NEAR(0.569694996, table[515], 1e-9);
    EXPECT_NEAR(0.913046598, table[50 * 512 + 100], 1e-9);
    EXPECT_NEAR(0.010469802, table[101 * 512 + 510], 1e-9);
    EXPECT_NEAR(0.999945164, table[101 * 512 + 511], 1e-9);
    g_free(table);
    /* Xavier on the transformer encoder, PyTorch's Linear default on the VAE encoder's layers,
     * N(0, 1) embeddings, LayerNorm 1 and 0, zero attention biases, unit frozen batch norms */
    static const struct {
        const char *name;
        double bound; /* |w| <= bound, and max |w| close to it */
    } uniform[] = {
        {"model.encoder.layers.0.linear1.weight", 0.1020620726}, /* sqrt(6 / (512 + 64)) */
        {"model.encoder.layers.0.self_attn.out_proj.weight", 0.0765465545}, /* sqrt(6 / 1024) */
        {"model.encoder.layers.0.self_attn.in_proj_weight", 0.0541265877}, /* sqrt(6 / 2048) */
        {"model.vae_encoder.layers.0.linear1.weight", 0.0441941738}, /* 1 / sqrt(512) */
        {"model.vae_encoder.layers.0.self_attn.out_proj.weight", 0.0441941738},
        {"model.encoder_latent_input_proj.bias", 0.1767766953}, /* 1 / sqrt(32) */
        {"model.encoder_img_feat_input_proj.weight", 0.0441941738}, /* fan_in 512 */
        {"model.encoder_robot_state_input_proj.weight", 0.267261242}, /* 1 / sqrt(14) */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(uniform); i++) {
        rt_tensor *t = rt_graph_find(g, uniform[i].name);
        int64_t n = rt_tensor_numel(t);
        float *v = g_new(float, n);
        OK(rt_graph_read(g, t, v, (size_t)n * 4, &error));
        double max = 0;
        for (int64_t k = 0; k < n; k++)
            max = MAX(max, fabs(v[k]));
        printf("# %s: max |w| %.6f, bound %.6f\n", uniform[i].name, max, uniform[i].bound);
        OK(max <= uniform[i].bound && max > 0.9 * uniform[i].bound);
        g_free(v);
    }
    static const struct {
        const char *name;
        double mean, std;
    } stats[] = {
        {"model.decoder_pos_embed.weight", 0, 1},
        {"model.encoder.layers.0.norm1.weight", 1, 0},
        {"model.encoder.layers.0.norm1.bias", 0, 0},
        {"model.decoder.layers.0.multihead_attn.in_proj_bias", 0, 0},
        {"model.backbone.layer1.0.bn1.running_var", 1, 0},
        {"model.backbone.layer4.1.conv2.weight", 0, 0.0208333333}, /* kaiming fan_out: sqrt(2 / 4608) */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(stats); i++) {
        rt_tensor *t = rt_graph_find(g, stats[i].name);
        int64_t n = rt_tensor_numel(t);
        float *v = g_new(float, n);
        OK(rt_graph_read(g, t, v, (size_t)n * 4, &error));
        double sum = 0, s2 = 0;
        for (int64_t k = 0; k < n; k++) {
            sum += v[k];
            s2 += (double)v[k] * v[k];
        }
        double mean = sum / n, std = sqrt(MAX(0, s2 / n - mean * mean));
        printf("# %s: mean %.5f std %.5f\n", stats[i].name, mean, std);
        EXPECT_NEAR(stats[i].mean, mean, stats[i].std ? 5 * stats[i].std / sqrt((double)n) : 0);
        EXPECT_NEAR(stats[i].std, std, stats[i].std ? 0.05 * stats[i].std : 0);
        g_free(v);
    }
    rt_graph_free(g);
    return 0;
}

/* ---- pretrained backbone files */

/* Writes the backbone of planned g as a torchvision state dict (keys without "model.backbone."),
 * value i of each tensor = seed + i / 1000, leaving out `skip` and giving `reshape` the shape
 * [64, 3, 5, 5]; plus an fc.weight torchvision has and the policy ignores. */
static gboolean write_backbone(rt_graph *g, const char *path, const char *skip, const char *reshape)
{
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    GPtrArray *data = g_ptr_array_new_with_free_func(g_free);
    GError *error = NULL;
    gboolean ok = TRUE;
    for (int list = 0; list < 2; list++) {
        int n = list ? rt_graph_n_buffers(g) : rt_graph_n_params(g);
        for (int i = 0; i < n; i++) {
            rt_tensor *t = list ? rt_graph_buffer(g, i) : rt_graph_param(g, i);
            if (!g_str_has_prefix(t->name, "model.backbone."))
                continue;
            const char *key = t->name + strlen("model.backbone.");
            if (skip && strcmp(key, skip) == 0)
                continue;
            int64_t shape[4];
            memcpy(shape, t->shape, sizeof shape);
            if (reshape && strcmp(key, reshape) == 0)
                shape[2] = shape[3] = 5;
            int64_t count = 1;
            for (int d = 0; d < t->ndim; d++)
                count *= shape[d];
            float *v = g_new(float, count);
            for (int64_t k = 0; k < count; k++)
                v[k] = (float)(i + list * 1000) + (float)k / 1000.0f;
            g_ptr_array_add(data, v);
            ok = ok && rt_safetensors_writer_add(w, key, RT_ST_F32, t->ndim, shape, v, &error);
        }
    }
    static const float fc[2] = {1, 2};
    ok = ok && rt_safetensors_writer_add(w, "fc.weight", RT_ST_F32, 2, (int64_t[]){1, 2}, fc, &error) &&
         rt_safetensors_writer_write(w, path, &error);
    if (!ok)
        printf("# %s\n", error->message);
    g_clear_error(&error);
    rt_safetensors_writer_free(w);
    g_ptr_array_unref(data);
    return ok;
}

DEF_TEST(pretrained_backbone)
{
    GError *error = NULL;
    g_autofree char *dir = g_dir_make_tmp("test-act-XXXXXX", &error);
    g_autofree char *good = g_build_filename(dir, "resnet18.safetensors", NULL);
    g_autofree char *missing = g_build_filename(dir, "missing.safetensors", NULL);
    g_autofree char *misshaped = g_build_filename(dir, "misshaped.safetensors", NULL);
    g_autofree char *folder = g_build_filename(dir, "hub-snapshot", NULL);
    g_autofree char *in_folder = g_build_filename(folder, "model.safetensors", NULL);
    /* Hub ids are looked up in an empty cache, offline: no test goes to the network */
    g_autofree char *hub_cache = g_build_filename(dir, "hub-cache", NULL);
    g_setenv("HF_HUB_OFFLINE", "1", TRUE);
    g_setenv("HF_HUB_CACHE", hub_cache, TRUE);
    const char *s[] = {SMALL_FEATURES, SMALL_MODEL, NULL};
    g_autoptr(rt_policy) p0 = act_policy(s, &error);
    rt_graph *g = rt_graph_new(0);
    rt_tensor *chunk;
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(1);
    OK(rt_policy_build_infer(p0, g, &args, &chunk, &error));
    OK(rt_test_plan(g));
    OK(write_backbone(g, good, NULL, NULL));
    OK(write_backbone(g, missing, "layer1.0.bn2.running_var", NULL));
    OK(write_backbone(g, misshaped, NULL, "conv1.weight"));
    OK(g_mkdir(folder, 0700) == 0 && write_backbone(g, in_folder, NULL, NULL));

    static const struct {
        const char *value; /* NULL: good */
        const char *message; /* NULL: loads */
    } cases[] = {
        {NULL, NULL},
        {"FOLDER", NULL},
        {"MISSING", "no tensor 'layer1.0.bn2.running_var', which the policy's buffer "
                    "'model.backbone.layer1.0.bn2.running_var' needs"},
        {"MISSHAPED", "tensor 'conv1.weight' has shape [64,3,5,5], but the policy's parameter "
                      "'model.backbone.conv1.weight' is [64,3,7,7]"},
        {"lerobot/resnet18-imagenet", "--policy.pretrained_backbone_weights=lerobot/resnet18-imagenet: "},
        {"lerobot/resnet18-imagenet", "or pass null (none) for a randomly initialised backbone"},
        {"ResNet18_Weights.IMAGENET1K_V1", "--policy.pretrained_backbone_weights=ResNet18_Weights.IMAGENET1K_V1 "
                                           "(torchvision's weights, published as timm/resnet18.tv_in1k): "},
        {"ResNet18_Weights.IMAGENET1K_V1", "HF_HUB_OFFLINE"},
        {"no/such/file.safetensors", "--policy.pretrained_backbone_weights=no/such/file.safetensors: no such file"},
        {"EMPTYDIR", "is a folder without model.safetensors; name the safetensors file itself"},
        {"GARBAGE", "--policy.pretrained_backbone_weights: "},
    };
    g_autofree char *empty_dir = g_build_filename(dir, "empty", NULL);
    g_autofree char *garbage = g_build_filename(dir, "garbage.safetensors", NULL);
    OK(g_mkdir(empty_dir, 0700) == 0 && g_file_set_contents(garbage, "not a safetensors file", -1, &error));
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *v = cases[i].value;
        g_autofree char *value = g_strdup(!v ? good : strcmp(v, "FOLDER") == 0 ? folder
                                              : strcmp(v, "MISSING") == 0   ? missing
                                              : strcmp(v, "MISSHAPED") == 0 ? misshaped
                                              : strcmp(v, "EMPTYDIR") == 0  ? empty_dir
                                              : strcmp(v, "GARBAGE") == 0   ? garbage
                                                                            : v);
        g_autofree char *setting = g_strconcat("pretrained_backbone_weights=", value, NULL);
        const char *s2[] = {SMALL_FEATURES, SMALL_MODEL, setting, NULL};
        g_autoptr(rt_policy) p = act_policy(s2, &error);
        EXPECT_NO_ERROR(error);
        rt_graph *tg = rt_graph_new(RT_GRAPH_TRAIN);
        rt_policy_losses losses;
        OK(rt_policy_build_train(p, tg, &args, &losses, &error));
        OK(rt_test_plan(tg));
        gboolean loaded = rt_policy_init_weights(p, tg, &error);
        if (cases[i].message) {
            OK(!loaded);
            EXPECT_ERROR(error, cases[i].message);
        } else {
            EXPECT_NO_ERROR(error);
            /* layer2.0.downsample.0.weight is the parameter declared 8th; its element 5 */
            float w[128 * 64], mean[128];
            OK(rt_graph_read(tg, rt_graph_find(tg, "model.backbone.layer2.0.downsample.0.weight"), w, sizeof w,
                             &error));
            EXPECT_NEAR(7 + 5 / 1000.0, w[5], 1e-6);
            OK(rt_graph_read(tg, rt_graph_find(tg, "model.backbone.layer2.0.downsample.1.running_mean"), mean,
                             sizeof mean, &error));
            OK(mean[3] > 1000);
            /* the rest of the model keeps its initialisation */
            float head[2 * 16];
            OK(rt_graph_read(tg, rt_graph_find(tg, "model.action_head.weight"), head, sizeof head, &error));
            OK(fabsf(head[0]) <= 0.25f);
        }
        rt_graph_free(tg);
    }
    rt_graph_free(g);
    g_unlink(good);
    g_unlink(missing);
    g_unlink(misshaped);
    g_unlink(in_folder);
    g_unlink(garbage);
    g_rmdir(empty_dir);
    g_rmdir(folder);
    g_rmdir(hub_cache); /* an offline miss creates nothing, or at most the empty folder */
    g_rmdir(dir);
    g_unsetenv("HF_HUB_OFFLINE");
    g_unsetenv("HF_HUB_CACHE");
    return 0;
}

/* ---- action selection */

static rt_policy *selector_policy; /* of the last selector() */

static rt_action_selector *selector(const char *const *extra, int64_t batch)
{
    const char *s[16] = {SMALL_FEATURES, SMALL_MODEL};
    for (int i = 0; extra && extra[i]; i++)
        s[12 + i] = extra[i];
    GError *error = NULL;
    rt_policy_free(selector_policy);
    rt_policy *p = selector_policy = act_policy(s, &error);
    if (!p) {
        printf("# %s\n", error->message);
        return NULL;
    }
    return rt_policy_selector_new(p, batch, &error);
}

/* the queue: the first n_action_steps actions of each chunk, one per call (chunk 5, 3 steps) */
DEF_TEST(select_action_queue)
{
    GError *error = NULL;
    const char *extra[] = {"n_action_steps=3", NULL};
    rt_action_selector *s = selector(extra, 2);
    OK(s != NULL);
    float chunk[2 * 5 * 2], a[4];
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 5; t++)
            for (int k = 0; k < 2; k++)
                chunk[(b * 5 + t) * 2 + k] = (float)(100 * b + 10 * t + k);
    OK(!rt_action_selector_pop(s, a, 4, &error));
    EXPECT_ERROR(error, "no action to pop; push the chunk");
    OK(rt_action_selector_needs_chunk(s));
    OK(rt_action_selector_push_chunk(s, chunk, G_N_ELEMENTS(chunk), &error));
    for (int t = 0; t < 3; t++) {
        OK(!rt_action_selector_needs_chunk(s));
        OK(rt_action_selector_pop(s, a, 4, &error));
        EXPECT_NEAR(10 * t, a[0], 0);
        EXPECT_NEAR(10 * t + 1, a[1], 0);
        EXPECT_NEAR(100 + 10 * t, a[2], 0);
        EXPECT_NEAR(100 + 10 * t + 1, a[3], 0);
        if (t == 0) {
            OK(!rt_action_selector_push_chunk(s, chunk, G_N_ELEMENTS(chunk), &error));
            EXPECT_ERROR(error, "the action queue still holds actions");
        }
    }
    OK(rt_action_selector_needs_chunk(s));
    OK(!rt_action_selector_push_chunk(s, chunk, 7, &error));
    EXPECT_ERROR(error, "the chunk has 7 values; expected 20 ([2, 5, 2]: batch, chunk_size, action_dim)");
    OK(rt_action_selector_push_chunk(s, chunk, G_N_ELEMENTS(chunk), &error));
    OK(!rt_action_selector_pop(s, a, 2, &error));
    EXPECT_ERROR(error, "the action buffer has 2 values; expected 4");
    rt_action_selector_reset(s);
    OK(rt_action_selector_needs_chunk(s));
    rt_action_selector_free(s);
    return 0;
}

/* ACTTemporalEnsembler with coeff ln 2 (weights 1, 1/2, 1/4, ...) on a chunk of 3: by hand,
 *   chunks [1 2 3], [10 20 30], [100 200 300], [1000 2000 3000] give
 *   1, (2 + 10/2) / 1.5, (3 + 20/2 + 100/4) / 1.75, (30 + 200/2 + 1000/4) / 1.75 */
DEF_TEST(select_action_temporal_ensembling)
{
    GError *error = NULL;
    const char *extra[] = {"chunk_size=3", "n_action_steps=1", "temporal_ensemble_coeff=0.6931471805599453", NULL};
    rt_action_selector *s = selector(extra, 1);
    OK(s != NULL);
    const double expect[4] = {1, 7 / 1.5, 38 / 1.75, 380 / 1.75};
    for (int step = 0; step < 4; step++) {
        float scale = powf(10, (float)step), chunk[6], a[2];
        for (int t = 0; t < 3; t++)
            for (int k = 0; k < 2; k++)
                chunk[t * 2 + k] = scale * (float)(t + 1) * (k ? -1.0f : 1.0f);
        OK(rt_action_selector_needs_chunk(s));
        OK(rt_action_selector_push_chunk(s, chunk, 6, &error));
        OK(!rt_action_selector_needs_chunk(s));
        OK(!rt_action_selector_push_chunk(s, chunk, 6, &error));
        EXPECT_ERROR(error, "the ensembled action of the previous chunk is waiting");
        OK(rt_action_selector_pop(s, a, 2, &error));
        EXPECT_NEAR(expect[step], a[0], 2e-6 * expect[step]);
        EXPECT_NEAR(-expect[step], a[1], 2e-6 * expect[step]);
    }
    /* reset: the next chunk starts a new episode */
    rt_action_selector_reset(s);
    float chunk[6] = {5, 5, 6, 6, 7, 7}, a[2];
    OK(rt_action_selector_push_chunk(s, chunk, 6, &error) && rt_action_selector_pop(s, a, 2, &error));
    EXPECT_NEAR(5, a[0], 0);
    rt_action_selector_free(s);
    return 0;
}

/* ---- training: a few AdamW steps on one batch lower the loss; dropout and noise are drawn */
DEF_TEST(training_steps)
{
    GError *error = NULL;
    const char *s[] = {SMALL_FEATURES, SMALL_MODEL, "optimizer_lr=0.001", "optimizer_lr_backbone=0.0001", NULL};
    g_autoptr(rt_policy) p = act_policy(s, &error);
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(2);
    rt_policy_losses losses;
    rt_policy_optimizer opt;
    OK(rt_policy_build_train(p, g, &args, &losses, &error) && rt_graph_backward(g, &error) &&
       rt_policy_optimizer_preset(p, g, &opt, &error) &&
       rt_graph_add_adamw(g, opt.groups, opt.n_groups, opt.grad_clip_norm, &error));
    EXPECT_NO_ERROR(error);
    OK(rt_test_plan(g));
    OK(rt_policy_init_weights(p, g, &error));
    rt_test_rng r = {99};
    double x[2 * 3 * 32 * 32];
    rt_test_fill(&r, x, G_N_ELEMENTS(x), -1, 1);
    OK(rt_test_write(g, rt_graph_find(g, "observation.images.top"), x));
    rt_test_fill(&r, x, 6, -1, 1);
    OK(rt_test_write(g, rt_graph_find(g, "observation.state"), x));
    rt_test_fill(&r, x, 20, -1, 1);
    OK(rt_test_write(g, rt_graph_find(g, "action"), x));
    uint8_t pad[10] = {0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    OK(rt_graph_write(g, rt_graph_find(g, "action_is_pad"), pad, sizeof pad, &error));
    double first = 0, last = 0, kld = 0;
    for (int step = 0; step < 12; step++) {
        OK(rt_graph_set_rng(g, 1000, (uint64_t)step, 0, &error) && rt_test_run(g));
        OK(rt_graph_read_scalar(g, losses.values[0], &last, &error));
        OK(rt_graph_read_scalar(g, losses.values[1], &kld, &error));
        OK(isfinite(last) && isfinite(kld));
        if (step == 0)
            first = last;
    }
    printf("# l1 %.4f -> %.4f, kld %.4f\n", first, last, kld);
    OK(last < 0.8 * first);
    rt_graph_free(g);
    return 0;
}


/* ---- configurations beyond the golden cases build, run and give finite numbers: pre-norm,
 * gelu, cameras of two sizes, the environment state, many cameras, a dilated resnet50, no
 * transformer layers at all */
static int run_configuration(const char *const *settings, const char *feature_map, int64_t fh, int64_t fw,
                             gboolean all_grads)
{
    GError *error = NULL;
    g_autoptr(rt_policy) p = act_policy(settings, &error);
    EXPECT_NO_ERROR(error);
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(2);
    args.flags = RT_POLICY_BUILD_INTERMEDIATES;
    rt_policy_losses losses;
    OK(rt_policy_build_train(p, g, &args, &losses, &error) && rt_graph_backward(g, &error));
    EXPECT_NO_ERROR(error);
    OK(rt_test_plan(g));
    rt_test_rng r = {7};
    for (int i = 0; i < rt_graph_n_tensors(g); i++) {
        rt_tensor *t = rt_graph_tensor(g, i);
        if (!(t->flags & RT_TENSOR_INPUT) || !t->name)
            continue;
        int64_t n = rt_tensor_numel(t);
        if (t->dtype == RT_BOOL) {
            uint8_t *pad = g_new0(uint8_t, n);
            pad[n - 1] = 1;
            OK(rt_graph_write(g, t, pad, (size_t)n, &error));
            g_free(pad);
            continue;
        }
        double *x = g_new(double, n);
        rt_test_fill(&r, x, n, -1, 1);
        OK(rt_test_write(g, t, x));
        g_free(x);
    }
    OK(rt_graph_set_rng(g, 1, 0, 0, &error) && rt_test_run(g));
    double loss;
    OK(rt_graph_read_scalar(g, losses.loss, &loss, &error));
    printf("# loss %.5f\n", loss);
    OK(isfinite(loss) && loss > 0);
    if (feature_map) {
        rt_tensor *f = rt_graph_find(g, feature_map);
        OK(f && f->shape[2] == fh && f->shape[3] == fw);
    }
    /* every parameter the loss depends on has a finite gradient */
    for (int i = 0; i < rt_graph_n_params(g); i++) {
        rt_tensor *gr = rt_graph_grad(g, rt_graph_param(g, i));
        if (!all_grads && !gr)
            continue;
        OK1(gr != NULL, rt_graph_param(g, i)->name);
        int64_t n = rt_tensor_numel(gr);
        float *v = g_new(float, n);
        OK(rt_graph_read(g, gr, v, (size_t)n * 4, &error));
        gboolean finite = TRUE;
        for (int64_t k = 0; k < n; k++)
            finite &= isfinite(v[k]);
        g_free(v);
        OK1(finite, rt_graph_param(g, i)->name);
    }
    rt_graph *eg = rt_graph_new_sharing(g, 0);
    rt_tensor *chunk;
    OK(rt_policy_build_infer(p, eg, &args, &chunk, &error));
    OK(rt_test_plan(eg));
    for (int i = 0; i < rt_graph_n_tensors(eg); i++) {
        rt_tensor *t = rt_graph_tensor(eg, i);
        if ((t->flags & RT_TENSOR_INPUT) && t->name) {
            int64_t n = rt_tensor_numel(t);
            double *x = g_new(double, n);
            rt_test_fill(&r, x, n, -1, 1);
            OK(rt_test_write(eg, t, x));
            g_free(x);
        }
    }
    OK(rt_test_run(eg));
    int64_t n = rt_tensor_numel(chunk);
    float *v = g_new(float, n);
    OK(rt_graph_read(eg, chunk, v, (size_t)n * 4, &error));
    gboolean finite = TRUE;
    for (int64_t k = 0; k < n; k++)
        finite &= isfinite(v[k]);
    g_free(v);
    OK(finite);
    rt_graph_free(eg);
    rt_graph_free(g);
    return 0;
}

#define OUT2 "output_features={\"action\": {\"type\": \"ACTION\", \"shape\": [2]}}"

DEF_TEST(configurations)
{
    const char *a[] = {"input_features={\"observation.images.a\": {\"type\": \"VISUAL\", \"shape\": [3, 32, 32]}, "
                       "\"observation.state\": {\"type\": \"STATE\", \"shape\": [3]}, "
                       "\"observation.environment_state\": {\"type\": \"ENV\", \"shape\": [4]}, "
                       "\"observation.images.b\": {\"type\": \"VISUAL\", \"shape\": [3, 32, 48]}}",
                       OUT2, SMALL_MODEL, "pre_norm=true", "feedforward_activation=gelu", "dropout=0.2",
                       "n_encoder_layers=2", NULL};
    printf("# pre-norm, gelu, dropout, cameras of two sizes, state and environment state\n");
    OK(run_configuration(a, "inter.backbone.observation.images.b.feature_map", 1, 2, TRUE) == 0);
    const char *b[] = {"input_features={\"observation.environment_state\": {\"type\": \"ENV\", \"shape\": [5]}}",
                       OUT2, SMALL_MODEL, NULL};
    printf("# the environment state alone, with the VAE\n");
    OK(run_configuration(b, NULL, 0, 0, TRUE) == 0);
    GString *nine = g_string_new("input_features={");
    for (int i = 0; i < 9; i++)
        g_string_append_printf(nine, "%s\"observation.images.c%d\": {\"type\": \"VISUAL\", \"shape\": [3, 16, 16]}",
                               i ? ", " : "", i);
    g_string_append_c(nine, '}');
    const char *c[] = {nine->str, OUT2, SMALL_MODEL, "use_vae=false", NULL};
    printf("# nine cameras, no state, no VAE\n");
    int rc = run_configuration(c, "inter.backbone.observation.images.c8.feature_map", 1, 1, TRUE);
    g_string_free(nine, TRUE);
    OK(rc == 0);
    const char *d[] = {SMALL_FEATURES, SMALL_MODEL, "vision_backbone=resnet50", "replace_final_stride_with_dilation=true",
                       NULL};
    printf("# resnet50 with a dilated last stage: 32x32 -> 2x2 instead of 1x1\n");
    OK(run_configuration(d, "inter.backbone.observation.images.top.feature_map", 2, 2, TRUE) == 0);
    const char *e[] = {SMALL_FEATURES, SMALL_MODEL, "n_encoder_layers=0", "n_decoder_layers=0",
                       "n_vae_encoder_layers=0", "vision_backbone=resnet34", NULL};
    /* the decoder is then its final norm of zero queries: nothing before it gets a gradient, as
     * in PyTorch */
    printf("# no transformer layers (the final norms only), resnet34\n");
    OK(run_configuration(e, "inter.backbone.observation.images.top.feature_map", 1, 1, FALSE) == 0);
    return 0;
}

/* ---- the policy interface's own checks */
DEF_TEST(interface_errors)
{
    GError *error = NULL;
    rt_policy_i iface = *(const rt_policy_i *)act_module()->desc->vtable;
    rt_plugin_desc desc = *act_module()->desc;
    desc.name = "fake";
    desc.vtable = &iface;
    iface.build_infer = NULL;
    OK(rt_policy_interface(&desc, &error) == NULL);
    EXPECT_ERROR(error, "policy module 'fake': its interface has no build_infer (a required slot");
    iface = *(const rt_policy_i *)act_module()->desc->vtable;
    iface.struct_size = 8;
    OK(rt_policy_interface(&desc, &error) == NULL);
    EXPECT_ERROR(error, "policy module 'fake': its interface is 8 bytes, shorter than the");
    desc.kind = RT_PLUGIN_BACKEND;
    OK(rt_policy_interface(&desc, &error) == NULL);
    EXPECT_ERROR(error, "module 'fake' is a backend module, not a policy");
    /* a module may not declare a common option */
    static const rt_option clash[] = {
        {.key = "device", .type = RT_OPT_STRING, .default_value = "cpu", .help = "Where."},
    };
    desc = *act_module()->desc;
    desc.name = "fake";
    desc.options = clash;
    desc.n_options = 1;
    g_autoptr(rt_config) cfg = rt_config_new("test");
    OK(!rt_policy_add_options(cfg, &desc, &error));
    EXPECT_ERROR(error, "the options of policy module 'fake': ");
    /* the type of the options must be the module's */
    g_autoptr(rt_config) act_cfg = act_config(NULL);
    OK(rt_config_set(act_cfg, "policy.type", "diffusion", &error));
    OK(rt_policy_new(act_module()->desc, act_cfg, &error) == NULL);
    EXPECT_ERROR(error, "--policy.type is 'diffusion', but the options are those of policy 'act'");
    /* the core's checks around the module's calls */
    const char *s[] = {SMALL_FEATURES, SMALL_MODEL, NULL};
    g_autoptr(rt_policy) p = act_policy(s, &error);
    rt_graph *g = rt_graph_new(0);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(2);
    rt_policy_losses losses;
    OK(!rt_policy_build_train(p, g, &args, &losses, &error));
    EXPECT_ERROR(error, "policy act: the training forward pass needs a graph made with RT_GRAPH_TRAIN");
    rt_graph_free(g);
    g = rt_graph_new(RT_GRAPH_TRAIN);
    args.batch_size = 0;
    OK(!rt_policy_build_train(p, g, &args, &losses, &error));
    EXPECT_ERROR(error, "ACT: the build arguments need a batch size of at least 1");
    rt_graph_free(g);
    OK(rt_policy_selector_new(p, 0, &error) == NULL);
    EXPECT_ERROR(error, "an action selector needs a batch size of at least 1, not 0");
    return 0;
}

/* ---- weights by name: rt_policy_load_tensor(s) */
DEF_TEST(loading_errors)
{
    GError *error = NULL;
    g_autofree char *dir = g_dir_make_tmp("test-act-load-XXXXXX", &error);
    g_autofree char *path = g_build_filename(dir, "w.safetensors", NULL);
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    static const int64_t ints[6] = {1, 2, 3, 4, 5, 6};
    static const double wide[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
    static const float extra[1] = {0};
    OK(rt_safetensors_writer_add(w, "m.ints", RT_ST_I64, 2, (int64_t[]){2, 3}, ints, &error) &&
       rt_safetensors_writer_add(w, "m.w", RT_ST_F64, 2, (int64_t[]){2, 3}, wide, &error) &&
       rt_safetensors_writer_add(w, "other", RT_ST_F32, 1, (int64_t[]){1}, extra, &error) &&
       rt_safetensors_writer_write(w, path, &error));
    rt_safetensors_writer_free(w);
    rt_safetensors *st = rt_safetensors_open(path, &error);
    OK(st != NULL);
    rt_graph *g = rt_graph_new(0);
    rt_tensor *p = rt_param(g, "m.w", RT_F32, 2, (int64_t[]){2, 3}, rt_init_constant(0));
    rt_tensor *x = rt_input(g, "x", RT_F32, 2, (int64_t[]){2, 3}, 0);
    rt_graph_output(g, "y", rt_mul(g, x, p));
    OK(rt_test_plan(g));
    int n = 0;
    OK(rt_policy_load_tensors(g, st, "m.", "m.", 0, &n, &error));
    EXPECT_EQ_INT(1, n);
    float got[6];
    OK(rt_graph_read(g, p, got, sizeof got, &error));
    EXPECT_NEAR(5.5, got[5], 0);
    OK(!rt_policy_load_tensors(g, st, "m.", "m.", RT_POLICY_LOAD_STRICT, NULL, &error));
    EXPECT_ERROR(error, "w.safetensors: 1 tensor that the policy does not have: 'm.ints'");
    OK(!rt_policy_load_tensors(g, st, "m.", "model.", 0, NULL, &error));
    EXPECT_ERROR(error, "no tensor 'model.w', which the policy's parameter 'm.w' needs");
    OK(!rt_policy_load_tensor(g, p, st, rt_safetensors_find(st, "m.ints"), &error));
    EXPECT_ERROR(error, "tensor 'm.ints' is I64; the policy's 'm.w' needs floating-point values");
    OK(!rt_policy_load_tensor(g, p, st, rt_safetensors_find(st, "other"), &error));
    EXPECT_ERROR(error, "tensor 'other' has shape [1], but the policy's parameter 'm.w' is [2,3]");
    OK(!rt_policy_load_tensor(g, x, st, rt_safetensors_find(st, "m.w"), &error));
    EXPECT_ERROR(error, "'x' is not an f32 or f64 parameter or buffer of the graph");
    rt_graph_free(g);
    rt_safetensors_close(st);
    g_unlink(path);
    g_rmdir(dir);
    return 0;
}

int main(void)
{
    rt_cpu_set_num_threads(1);
    RUN_TEST(options_are_lerobots);
    RUN_TEST(config_json);
    RUN_TEST(feature_errors);
    RUN_TEST(validation_errors);
    RUN_TEST(data_needs_and_optimizer);
    RUN_TEST(initialisation);
    RUN_TEST(pretrained_backbone);
    RUN_TEST(select_action_queue);
    RUN_TEST(select_action_temporal_ensembling);
    RUN_TEST(training_steps);
    RUN_TEST(configurations);
    RUN_TEST(interface_errors);
    RUN_TEST(loading_errors);
    rt_policy_free(selector_policy);
    rt_plugin_registry_free(registry);
    END_TEST;
}
