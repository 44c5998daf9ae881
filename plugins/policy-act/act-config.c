/* ACTConfig from the options: the values, LeRobot's validation (__post_init__,
 * validate_features) and what PyTorch and torchvision would refuse later, said up front. */
#include "config.h"

#include <string.h>

#include "act.h"

static const struct {
    const char *name;
    act_block_kind block;
    int blocks[4];
} resnets[] = {
    {"resnet18", ACT_BASIC_BLOCK, {2, 2, 2, 2}},  {"resnet34", ACT_BASIC_BLOCK, {3, 4, 6, 3}},
    {"resnet50", ACT_BOTTLENECK, {3, 4, 6, 3}},   {"resnet101", ACT_BOTTLENECK, {3, 4, 23, 3}},
    {"resnet152", ACT_BOTTLENECK, {3, 8, 36, 3}},
};

void act_config_free(act_config *c)
{
    if (!c)
        return;
    g_free(c->vision_backbone);
    g_free(c->pretrained_backbone_weights);
    g_free(c->state_key);
    g_free(c->env_key);
    g_free(c->action_key);
    for (int i = 0; i < c->n_cameras; i++)
        g_free(c->cameras[i].key);
    g_free(c->cameras);
    g_free(c->action_delta);
    g_free(c);
}

/* "--policy.chunk_size" or "cfg.json: policy.chunk_size": where the user set it */
static char *origin(const rt_config *cfg, const char *key)
{
    g_autofree char *full = g_strconcat("policy.", key, NULL);
    return rt_config_describe_origin(cfg, full);
}

static gint64 get_int(const rt_config *cfg, const char *key)
{
    g_autofree char *full = g_strconcat("policy.", key, NULL);
    return rt_config_get_int(cfg, full);
}

static double get_double(const rt_config *cfg, const char *key)
{
    g_autofree char *full = g_strconcat("policy.", key, NULL);
    return rt_config_get_double(cfg, full);
}

static gboolean get_bool(const rt_config *cfg, const char *key)
{
    g_autofree char *full = g_strconcat("policy.", key, NULL);
    return rt_config_get_bool(cfg, full);
}

static const char *get_string(const rt_config *cfg, const char *key)
{
    g_autofree char *full = g_strconcat("policy.", key, NULL);
    return rt_config_get_string(cfg, full);
}

static gboolean is_null(const rt_config *cfg, const char *key)
{
    g_autofree char *full = g_strconcat("policy.", key, NULL);
    return rt_config_is_null(cfg, full);
}

static gboolean fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, RT_ERROR, RT_ERROR_INVALID_ARG, msg);
    g_free(msg);
    return FALSE;
}

/* LeRobot's robot_state_feature, env_state_feature, image_features and action_feature. */
static gboolean read_features(act_config *c, const rt_config *cfg, GError **error)
{
    g_autoptr(rt_policy_features) in = rt_policy_config_features(cfg, "policy.input_features", error);
    if (!in)
        return FALSE;
    g_autoptr(rt_policy_features) out = rt_policy_config_features(cfg, "policy.output_features", error);
    if (!out)
        return FALSE;
    g_autofree char *in_origin = origin(cfg, "input_features");
    g_autofree char *out_origin = origin(cfg, "output_features");
    c->cameras = g_new0(act_camera, MAX(in->n, 1));
    for (size_t i = 0; i < in->n; i++) {
        const rt_policy_feature *f = &in->items[i];
        if (f->type == RT_FEATURE_STATE && strcmp(f->name, "observation.state") == 0 && !c->state_key) {
            if (f->ndim != 1)
                return fail(error, "%s: the robot state 'observation.state' has %d axes; ACT takes a "
                            "vector ({\"type\": \"STATE\", \"shape\": [N]})", in_origin, f->ndim);
            c->state_key = g_strdup(f->name);
            c->state_dim = f->shape[0];
        } else if (f->type == RT_FEATURE_ENV && !c->env_key) {
            if (f->ndim != 1)
                return fail(error, "%s: the environment state '%s' has %d axes; ACT takes a vector "
                            "({\"type\": \"ENV\", \"shape\": [N]})", in_origin, f->name, f->ndim);
            c->env_key = g_strdup(f->name);
            c->env_dim = f->shape[0];
        } else if (f->type == RT_FEATURE_VISUAL) {
            if (f->ndim != 3 || f->shape[0] != 3) {
                GString *shape = g_string_new("[");
                for (int d = 0; d < f->ndim; d++)
                    g_string_append_printf(shape, "%s%" G_GINT64_FORMAT, d ? ", " : "", f->shape[d]);
                g_string_append_c(shape, ']');
                fail(error, "%s: camera '%s' has shape %s; the ResNet backbone takes RGB images of "
                     "shape [3, height, width] (channels first)", in_origin, f->name, shape->str);
                g_string_free(shape, TRUE);
                return FALSE;
            }
            act_camera *cam = &c->cameras[c->n_cameras++];
            cam->key = g_strdup(f->name);
            cam->c = f->shape[0];
            cam->h = f->shape[1];
            cam->w = f->shape[2];
        }
    }
    if (c->n_cameras == 0 && !c->env_key)
        return fail(error, "You must provide at least one image or the environment state among the "
                    "inputs: %s has no VISUAL or ENV feature (an empty {} is filled from the dataset; "
                    "give it as --policy.input_features='{\"observation.images.top\": {\"type\": "
                    "\"VISUAL\", \"shape\": [3, 480, 640]}, ...}' when there is none)", in_origin);
    const rt_policy_feature *action = rt_policy_features_find(out, "action");
    if (!action || action->type != RT_FEATURE_ACTION || action->ndim != 1)
        return fail(error, "%s: ACT predicts the output feature 'action', of type ACTION and shape "
                    "[action_dim]; %s (for example --policy.output_features='{\"action\": {\"type\": "
                    "\"ACTION\", \"shape\": [14]}}')", out_origin,
                    !action ? "there is none" : action->type != RT_FEATURE_ACTION ? "it has another type"
                                                                                 : "it is not a vector");
    c->action_key = g_strdup("action");
    c->action_dim = action->shape[0];
    return TRUE;
}

static gboolean read_backbone(act_config *c, const rt_config *cfg, GError **error)
{
    c->vision_backbone = g_strdup(get_string(cfg, "vision_backbone"));
    for (size_t i = 0; i < G_N_ELEMENTS(resnets); i++)
        if (strcmp(resnets[i].name, c->vision_backbone) == 0) {
            c->block = resnets[i].block;
            memcpy(c->blocks, resnets[i].blocks, sizeof c->blocks);
        }
    c->feature_channels = c->block == ACT_BASIC_BLOCK ? 512 : 2048;
    c->dilation = get_bool(cfg, "replace_final_stride_with_dilation");
    c->pretrained_backbone_weights = g_strdup(get_string(cfg, "pretrained_backbone_weights"));
    if (c->dilation && c->block == ACT_BASIC_BLOCK && c->n_cameras > 0) {
        g_autofree char *o = origin(cfg, "replace_final_stride_with_dilation");
        g_autofree char *ob = origin(cfg, "vision_backbone");
        return fail(error, "%s=true with %s=%s: torchvision's BasicBlock does not support dilation "
                    "(\"Dilation > 1 not supported in BasicBlock\"), so only resnet50, resnet101 and "
                    "resnet152 can replace the final stride with dilation", o, ob, c->vision_backbone);
    }
    return TRUE;
}

act_config *act_config_new(const rt_config *cfg, GError **error)
{
    act_config *c = g_new0(act_config, 1);
    c->n_obs_steps = get_int(cfg, "n_obs_steps");
    c->chunk_size = get_int(cfg, "chunk_size");
    c->n_action_steps = get_int(cfg, "n_action_steps");
    c->pre_norm = get_bool(cfg, "pre_norm");
    c->dim_model = get_int(cfg, "dim_model");
    c->n_heads = get_int(cfg, "n_heads");
    c->dim_feedforward = get_int(cfg, "dim_feedforward");
    const char *act = get_string(cfg, "feedforward_activation");
    c->activation = strcmp(act, "gelu") == 0 ? ACT_GELU : strcmp(act, "glu") == 0 ? ACT_GLU : ACT_RELU;
    c->n_encoder_layers = get_int(cfg, "n_encoder_layers");
    c->n_decoder_layers = get_int(cfg, "n_decoder_layers");
    c->use_vae = get_bool(cfg, "use_vae");
    c->latent_dim = get_int(cfg, "latent_dim");
    c->n_vae_encoder_layers = get_int(cfg, "n_vae_encoder_layers");
    c->temporal_ensemble = !is_null(cfg, "temporal_ensemble_coeff");
    c->temporal_ensemble_coeff = c->temporal_ensemble ? get_double(cfg, "temporal_ensemble_coeff") : 0;
    c->dropout = get_double(cfg, "dropout");
    c->kl_weight = get_double(cfg, "kl_weight");
    c->optimizer_lr = get_double(cfg, "optimizer_lr");
    c->optimizer_weight_decay = get_double(cfg, "optimizer_weight_decay");
    c->optimizer_lr_backbone = get_double(cfg, "optimizer_lr_backbone");

    gboolean ok = TRUE;
    /* ACTConfig.__post_init__, in its order (vision_backbone is an enum of ResNets here) */
    if (c->temporal_ensemble && c->n_action_steps > 1) {
        g_autofree char *o = origin(cfg, "temporal_ensemble_coeff");
        g_autofree char *on = origin(cfg, "n_action_steps");
        ok = fail(error, "`n_action_steps` must be 1 when using temporal ensembling (%s): the policy "
                  "needs to be queried every step to compute the ensembled action; %s is %" G_GINT64_FORMAT,
                  o, on, c->n_action_steps);
    } else if (c->n_action_steps > c->chunk_size) {
        g_autofree char *on = origin(cfg, "n_action_steps");
        g_autofree char *oc = origin(cfg, "chunk_size");
        ok = fail(error, "The chunk size is the upper bound for the number of action steps per model "
                  "invocation: %s is %" G_GINT64_FORMAT " but %s is %" G_GINT64_FORMAT, on,
                  c->n_action_steps, oc, c->chunk_size);
    } else if (c->n_obs_steps != 1) {
        g_autofree char *o = origin(cfg, "n_obs_steps");
        ok = fail(error, "Multiple observation steps not handled yet: %s is %" G_GINT64_FORMAT
                  "; ACT takes 1", o, c->n_obs_steps);
    }
    /* validate_features, and the features' shapes */
    ok = ok && read_features(c, cfg, error) && read_backbone(c, cfg, error);
    /* what PyTorch would refuse at construction or on the first forward pass */
    if (ok && c->dim_model % c->n_heads != 0) {
        g_autofree char *od = origin(cfg, "dim_model");
        g_autofree char *oh = origin(cfg, "n_heads");
        ok = fail(error, "embed_dim must be divisible by num_heads: %s is %" G_GINT64_FORMAT
                  " and %s is %" G_GINT64_FORMAT, od, c->dim_model, oh, c->n_heads);
    }
    if (ok && c->n_cameras > 0 && c->dim_model % 4 != 0) {
        g_autofree char *od = origin(cfg, "dim_model");
        ok = fail(error, "%s is %" G_GINT64_FORMAT ": with cameras it must be a multiple of 4, since "
                  "the 2-D sinusoidal embedding of the image tokens interleaves sines and cosines "
                  "over dim_model / 2 channels per axis", od, c->dim_model);
    }
    if (ok && c->activation == ACT_GLU) {
        g_autofree char *o = origin(cfg, "feedforward_activation");
        ok = fail(error, "%s is glu, which cannot run: LeRobot's ACT applies F.glu to linear1's "
                  "dim_feedforward outputs, halving them, while linear2 takes dim_feedforward inputs, "
                  "so PyTorch fails on the first forward pass (mat1 and mat2 shapes cannot be "
                  "multiplied); robotrain refuses it for the same reason. Use relu or gelu", o);
    }
    if (ok && c->dropout >= 1.0) {
        g_autofree char *o = origin(cfg, "dropout");
        ok = fail(error, "%s is %g: a dropout of 1 zeroes every activation; give a value below 1", o,
                  c->dropout);
    }
    if (!ok) {
        act_config_free(c);
        return NULL;
    }
    c->action_delta = g_new(int64_t, c->chunk_size);
    for (int64_t i = 0; i < c->chunk_size; i++)
        c->action_delta[i] = i;
    return c;
}
