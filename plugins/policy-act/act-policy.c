/* policy-act: the Action Chunking Transformer as LeRobot's ACTPolicy computes it. This file holds
 * the module's interface (robotrain/policy.h) and descriptor. */
#include "config.h"

#include "act.h"

static void *act_create(const rt_config *cfg, GError **error)
{
    return act_config_new(cfg, error);
}

static void act_destroy(void *self)
{
    act_config_free(self);
}

/* observation_delta_indices None, action_delta_indices range(chunk_size), reward None */
static void act_delta_indices(void *self, rt_policy_delta_indices *out)
{
    const act_config *c = self;
    out->action = c->action_delta;
    out->n_action = (size_t)c->chunk_size;
}

static gboolean check_args(const rt_policy_build_args *args, GError **error)
{
    if (!args || args->struct_size < sizeof(rt_policy_build_args) || args->batch_size < 1 ||
        (args->dtype != RT_F32 && args->dtype != RT_F64)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "ACT: the build arguments need a batch size of at least 1 and dtype f32 or f64");
        return FALSE;
    }
    return TRUE;
}

static gboolean act_train(void *self, rt_graph *g, const rt_policy_build_args *args, rt_policy_losses *losses,
                          GError **error)
{
    return check_args(args, error) && act_build_train(self, g, args, losses, error);
}

static gboolean act_infer(void *self, rt_graph *g, const rt_policy_build_args *args, rt_tensor **actions,
                          GError **error)
{
    return check_args(args, error) && act_build_infer(self, g, args, actions, error);
}

/* get_optimizer_preset (AdamW: lr, weight decay, betas 0.9/0.999, eps 1e-8, clip 10) and
 * get_optim_params: the backbone ("model.backbone*") in a group of its own learning rate */
static gboolean act_optimizer(void *self, rt_graph *g, rt_policy_optimizer *out, GError **error)
{
    const act_config *c = self;
    rt_graph_set_group_by_prefix(g, "model.backbone", 1);
    out->n_groups = 2;
    out->groups[0] = (rt_adamw_group){c->optimizer_lr, 0.9, 0.999, 1e-8, c->optimizer_weight_decay};
    out->groups[1] = (rt_adamw_group){c->optimizer_lr_backbone, 0.9, 0.999, 1e-8, c->optimizer_weight_decay};
    out->group_names[0] = "default";
    out->group_names[1] = "backbone";
    out->grad_clip_norm = 10.0;
    return rt_graph_check(g, error);
}

static gboolean act_init_weights(void *self, rt_graph *g, GError **error)
{
    return act_load_pretrained_backbone(self, g, error);
}

static void *act_selector_create(void *self, int64_t batch_size, GError **error)
{
    return act_selector_new(self, batch_size, error);
}

static const rt_policy_i act_policy = {
    .struct_size = sizeof(rt_policy_i),
    .create = act_create,
    .destroy = act_destroy,
    .delta_indices = act_delta_indices,
    .build_train = act_train,
    .build_infer = act_infer,
    .optimizer_preset = act_optimizer,
    .init_weights = act_init_weights,
    .selector_new = act_selector_create,
    .selector_free = act_selector_free,
    .selector_reset = act_selector_reset,
    .selector_needs_chunk = act_selector_needs_chunk,
    .selector_push_chunk = act_selector_push_chunk,
    .selector_pop = act_selector_pop,
};

RT_PLUGIN_DEFINE(act, RT_PLUGIN_POLICY, PACKAGE_VERSION, "Apache-2.0",
                 "Action Chunking Transformer (LeRobot's ACT: ResNet backbone, transformer, optional VAE)",
                 act_options, ACT_N_OPTIONS, &act_policy)
