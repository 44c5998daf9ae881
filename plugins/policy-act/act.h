/* plugins/policy-act/act.h: what the files of the ACT policy module share.
 *
 * The module reproduces LeRobot's ACTPolicy (lerobot/policies/act): configuration_act.py's
 * ACTConfig as options (act-options.c) validated into an act_config (act-config.c); the model
 * declared parameter by parameter in LeRobot's state-dict order (act-model.c), the ResNet
 * backbone with frozen batch norm (act-backbone.c), the transformer layers (act-transformer.c),
 * the VAE encoder (act-vae.c), the training and inference forward passes (act-train.c,
 * act-infer.c), action selection (act-select.c) and weights from files (act-weights.c).
 * Everything here is static to the module except these act_ helpers; the module exports only
 * rt_plugin_act_get_desc (act-policy.c). */
#ifndef ROBOTRAIN_POLICY_ACT_H
#define ROBOTRAIN_POLICY_ACT_H

#include <robotrain/robotrain.h>
#include <robotrain/policy.h>

/* ---------------------------------------------------------------- configuration */

typedef enum { ACT_RELU, ACT_GELU, ACT_GLU } act_activation;
typedef enum { ACT_BASIC_BLOCK, ACT_BOTTLENECK } act_block_kind;

typedef struct act_camera {
    char *key;        /* "observation.images.top" */
    int64_t c, h, w;  /* image size */
} act_camera;

/* ACTConfig, validated, plus what the features decide. */
typedef struct act_config {
    int64_t n_obs_steps, chunk_size, n_action_steps;
    char *vision_backbone;
    act_block_kind block;
    int blocks[4];            /* BasicBlocks or Bottlenecks per layer */
    int64_t feature_channels; /* of layer4: torchvision's fc.in_features */
    char *pretrained_backbone_weights; /* NULL: random initialisation */
    gboolean dilation;        /* replace_final_stride_with_dilation */
    gboolean pre_norm, use_vae;
    int64_t dim_model, n_heads, dim_feedforward;
    act_activation activation;
    int64_t n_encoder_layers, n_decoder_layers, latent_dim, n_vae_encoder_layers;
    gboolean temporal_ensemble;
    double temporal_ensemble_coeff;
    double dropout, kl_weight;
    double optimizer_lr, optimizer_weight_decay, optimizer_lr_backbone;

    /* features: LeRobot's robot_state_feature, env_state_feature, image_features, action_feature */
    char *state_key; /* "observation.state", or NULL */
    int64_t state_dim;
    char *env_key; /* the ENV feature, or NULL */
    int64_t env_dim;
    char *action_key; /* "action" */
    int64_t action_dim;
    int n_cameras;
    act_camera *cameras; /* in input_features order */

    int64_t *action_delta; /* 0 .. chunk_size - 1 */
} act_config;

/* The ACT option rows (relative keys), in ACTConfig's field order. */
#define ACT_N_OPTIONS 25
extern const rt_option act_options[];

/* Reads and validates cfg's "policy.*" options. Returns (transfer full) a config to free with
 * act_config_free(), or NULL with error naming the option(s). */
act_config *act_config_new(const rt_config *cfg, GError **error);
void act_config_free(act_config *c);

/* ---------------------------------------------------------------- model */

typedef struct act_linear {
    rt_tensor *weight, *bias;
} act_linear;

typedef struct act_norm {
    rt_tensor *weight, *bias;
} act_norm;

/* One ACTEncoderLayer or ACTDecoderLayer (cross_attn, norm[2] only in a decoder layer). */
typedef struct act_layer {
    rt_mha_weights self_attn, cross_attn;
    act_linear linear1, linear2;
    act_norm norm[3];
} act_layer;

/* ACTEncoder / ACTDecoder: layers and the final norm (an encoder's only with pre_norm). */
typedef struct act_stack {
    int n;
    act_layer *layers;
    act_norm norm; /* NULL tensors: nn.Identity */
} act_stack;

typedef struct act_bn {
    rt_tensor *weight, *bias, *running_mean, *running_var;
} act_bn;

/* A BasicBlock (2 convolutions) or Bottleneck (3), with its downsample when it has one. */
typedef struct act_block {
    int n_convs;
    rt_tensor *conv[3];
    act_bn bn[3];
    int stride, dilation; /* of its 3x3 convolution (the first of a BasicBlock, the second of a
                           * Bottleneck) */
    rt_tensor *down_conv; /* NULL: the identity shortcut */
    act_bn down_bn;
    int down_stride;
} act_block;

typedef struct act_backbone {
    rt_tensor *conv1;
    act_bn bn1;
    int n_blocks;
    act_block *blocks; /* layer1.0, layer1.1, ..., layer4.N */
} act_backbone;

/* The tensors of one graph's ACT model (LeRobot's ACT module). */
typedef struct act_model {
    rt_graph *g;
    const act_config *cfg;
    rt_dtype dtype;
    uint32_t flags;  /* RT_POLICY_BUILD_* */
    gboolean vae;    /* the VAE encoder is part of this graph */
    double dropout;  /* the configured dropout while training, 0 for inference (eval mode) */
    rt_tensor *vae_encoder_pos_enc;
    act_stack vae_encoder;
    rt_tensor *vae_encoder_cls_embed;
    act_linear vae_encoder_robot_state_input_proj, vae_encoder_action_input_proj,
        vae_encoder_latent_output_proj;
    act_backbone backbone;
    act_stack encoder, decoder;
    act_linear encoder_robot_state_input_proj, encoder_env_state_input_proj, encoder_latent_input_proj,
        encoder_img_feat_input_proj;
    rt_tensor *encoder_1d_feature_pos_embed, *decoder_pos_embed;
    act_linear action_head;
} act_model;

/* Declares every parameter and buffer of the model in g, in LeRobot's state-dict order, with
 * LeRobot's initialisation. train: the training pass (the VAE encoder's weights, dropout);
 * otherwise inference (eval mode: neither). */
void act_model_declare(act_model *m, rt_graph *g, const act_config *cfg, rt_dtype dtype,
                       uint32_t flags, gboolean train);
void act_model_clear(act_model *m);

/* A parameter, buffer or input named by printf; init as rt_param. */
rt_tensor *act_param(act_model *m, rt_init init, int ndim, const int64_t *shape, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
rt_tensor *act_buffer(act_model *m, rt_init init, int ndim, const int64_t *shape, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
/* Names t as an output with RT_POLICY_BUILD_INTERMEDIATES (printf name); returns t. */
rt_tensor *act_intermediate(act_model *m, rt_tensor *t, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* PyTorch's default initialisation of nn.Linear / nn.Conv2d weights and biases: U(+-1/sqrt(fan_in)). */
rt_init act_init_fan_in(int64_t fan_in);
/* nn.init.xavier_uniform_ of a [fan_out, fan_in, ...] weight. */
rt_init act_init_xavier(int64_t fan_in, int64_t fan_out);

/* act-backbone.c */
void act_backbone_declare(act_model *m);
/* x [N, 3, H, W] -> layer4's feature map [N, feature_channels, h, w]. */
rt_tensor *act_backbone_forward(act_model *m, rt_tensor *x);
/* The feature-map size of an H x W image. */
void act_backbone_output_size(const act_config *cfg, int64_t h, int64_t w, int64_t *oh, int64_t *ow);

/* act-transformer.c */
void act_stack_declare(act_model *m, act_stack *s, const char *prefix, int n_layers, gboolean decoder,
                       gboolean xavier, gboolean final_norm);
/* ACTEncoder: x [S, B, D], pos [S, 1, D] or NULL, mask bool [B, S] or NULL. */
rt_tensor *act_encoder_forward(act_model *m, const act_stack *s, rt_tensor *x, rt_tensor *pos,
                               rt_tensor *key_padding_mask);
/* ACTDecoder: x [T, B, D], memory [S, B, D], positional embeddings [T, 1, D] and [S, 1, D]. */
rt_tensor *act_decoder_forward(act_model *m, const act_stack *s, rt_tensor *x, rt_tensor *memory,
                               rt_tensor *decoder_pos, rt_tensor *memory_pos);

/* act-pos.c: LeRobot's create_sinusoidal_pos_embedding (float64, then float32), [n, dim]. */
void act_sinusoid_1d(int64_t n, int64_t dim, float *out);
/* ACTSinusoidalPositionEmbedding2d(dim / 2) of an h x w feature map, computed in float32 as
 * PyTorch does: [dim, h, w]. */
void act_sinusoid_2d(int64_t dim, int64_t h, int64_t w, float *out);

/* act-vae.c: the VAE encoder on a batch; *mu, *log_sigma_x2 [B, L]; returns the latent sample. */
rt_tensor *act_vae_forward(act_model *m, rt_tensor *state, rt_tensor *action, rt_tensor *action_is_pad,
                           int64_t batch, rt_tensor **mu, rt_tensor **log_sigma_x2);

/* act-model.c: the rest of ACT.forward given the latent [B, L]: encoder tokens, encoder, decoder,
 * action head -> [B, T, A]. prefix names intermediates ("inter."). */
rt_tensor *act_model_forward(act_model *m, rt_tensor *latent, rt_tensor *state, rt_tensor *env,
                             rt_tensor *const *images, int64_t batch);
/* The observation inputs of the model: state, env (NULL when not configured), images[n_cameras]. */
void act_model_inputs(act_model *m, int64_t batch, rt_tensor **state, rt_tensor **env, rt_tensor **images);

/* act-train.c, act-infer.c */
gboolean act_build_train(const act_config *cfg, rt_graph *g, const rt_policy_build_args *args,
                         rt_policy_losses *losses, GError **error);
gboolean act_build_infer(const act_config *cfg, rt_graph *g, const rt_policy_build_args *args,
                         rt_tensor **actions, GError **error);

/* act-select.c */
void *act_selector_new(const act_config *cfg, int64_t batch_size, GError **error);
void act_selector_free(void *selector);
void act_selector_reset(void *selector);
gboolean act_selector_needs_chunk(void *selector);
gboolean act_selector_push_chunk(void *selector, const float *chunk, size_t n, GError **error);
gboolean act_selector_pop(void *selector, float *action, size_t n, GError **error);

/* act-weights.c: --policy.pretrained_backbone_weights into a planned graph. */
gboolean act_load_pretrained_backbone(const act_config *cfg, rt_graph *g, GError **error);

#endif
