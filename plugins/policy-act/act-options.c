/* The options of ACT: LeRobot's ACTConfig fields with their defaults, in its order. The options
 * every policy has (input_features, device, ...) come from the core. */
#include "config.h"

#include <float.h>

#include "act.h"

static const char *const normalization_modes[] = {"MEAN_STD", "MIN_MAX", "IDENTITY", "QUANTILES",
                                                  "QUANTILE10", NULL};
static const char *const backbones[] = {"resnet18", "resnet34", "resnet50", "resnet101", "resnet152", NULL};
static const char *const activations[] = {"relu", "gelu", "glu", NULL};

#define COUNT(key_, default_, min_, help_)                                                         \
    {.key = key_, .type = RT_OPT_INT, .default_value = default_, .min = min_, .max = 1e6,         \
     .flags = RT_OPT_RANGE, .help = help_}
#define RATE(key_, default_, help_)                                                                \
    {.key = key_, .type = RT_OPT_FLOAT, .default_value = default_, .min = 0, .max = DBL_MAX,      \
     .flags = RT_OPT_RANGE, .help = help_}
#define NORM(type_)                                                                                \
    {.key = "normalization_mapping." type_, .type = RT_OPT_ENUM, .default_value = "MEAN_STD",      \
     .choices = normalization_modes,                                                               \
     .help = "How " type_ " features are normalized before the model sees them (the dataset "      \
             "pipeline applies it)."}

const rt_option act_options[] = {
    {.key = "n_obs_steps", .type = RT_OPT_INT, .default_value = "1",
     .help = "Observation frames the policy sees (the current one and earlier ones); ACT handles "
             "exactly 1."},
    COUNT("chunk_size", "100", 1, "Length of the predicted action chunk, in environment steps."),
    COUNT("n_action_steps", "100", 1,
          "Actions of each predicted chunk that are executed before the policy is queried again; at "
          "most chunk_size."),
    NORM("VISUAL"),
    NORM("STATE"),
    NORM("ACTION"),
    {.key = "vision_backbone", .type = RT_OPT_ENUM, .default_value = "resnet18", .choices = backbones,
     .help = "The torchvision ResNet that encodes each camera image."},
    {.key = "pretrained_backbone_weights", .type = RT_OPT_STRING,
     .default_value = "ResNet18_Weights.IMAGENET1K_V1", .flags = RT_OPT_NULLABLE,
     .help = "Weights the backbone starts from: a safetensors file (or a folder holding "
             "model.safetensors) with torchvision's key names (conv1.weight, bn1.running_mean, "
             "layer1.0.conv1.weight, ...), a Hub model id (owner/name[@revision]) whose "
             "model.safetensors has them, or a torchvision weights name such as the default, "
             "which means the Hub model holding the same weights (timm/resnet18.tv_in1k); Hub "
             "files come from the Hub cache, downloaded when missing; null starts from "
             "torchvision's random initialisation."},
    {.key = "replace_final_stride_with_dilation", .type = RT_OPT_BOOL, .default_value = "false",
     .help = "Replace the stride of the backbone's last stage with dilation (a feature map twice as "
             "large); torchvision supports it for resnet50 and deeper only."},
    {.key = "pre_norm", .type = RT_OPT_BOOL, .default_value = "false",
     .help = "Layer normalization before each attention and feed-forward block instead of after."},
    COUNT("dim_model", "512", 1, "Width of the transformer's tokens."),
    COUNT("n_heads", "8", 1, "Attention heads of each attention block; they must divide dim_model."),
    COUNT("dim_feedforward", "3200", 1, "Hidden width of the transformer's feed-forward blocks."),
    {.key = "feedforward_activation", .type = RT_OPT_ENUM, .default_value = "relu",
     .choices = activations,
     .help = "Activation of the feed-forward blocks (glu is accepted in files, as LeRobot accepts it, "
             "but cannot run: see robotrain-policy(1))."},
    COUNT("n_encoder_layers", "4", 0, "Layers of the transformer encoder."),
    COUNT("n_decoder_layers", "1", 0, "Layers of the transformer decoder."),
    {.key = "use_vae", .type = RT_OPT_BOOL, .default_value = "true",
     .help = "Train with the variational objective: a VAE encoder summarizes the action chunk into "
             "a latent during training."},
    COUNT("latent_dim", "32", 1, "Size of the VAE's latent."),
    COUNT("n_vae_encoder_layers", "4", 0, "Layers of the VAE encoder."),
    {.key = "temporal_ensemble_coeff", .type = RT_OPT_FLOAT, .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "Temporal ensembling: average the overlapping chunks with weights exp(-coeff * i), "
             "i = 0 for the oldest (the original ACT used 0.01); needs n_action_steps = 1. null: off."},
    {.key = "dropout", .type = RT_OPT_FLOAT, .default_value = "0.1", .min = 0, .max = 1,
     .flags = RT_OPT_RANGE, .help = "Dropout probability in the transformer layers while training."},
    {.key = "kl_weight", .type = RT_OPT_FLOAT, .default_value = "10.0",
     .help = "Weight of the KL-divergence term of the loss (with use_vae)."},
    RATE("optimizer_lr", "1e-05", "Learning rate of the AdamW preset."),
    RATE("optimizer_weight_decay", "0.0001", "Weight decay of the AdamW preset."),
    RATE("optimizer_lr_backbone", "1e-05", "Learning rate of the backbone's parameter group."),
};

/* the descriptor (act-policy.c) needs the count as a constant */
G_STATIC_ASSERT(G_N_ELEMENTS(act_options) == ACT_N_OPTIONS);
