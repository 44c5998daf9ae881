/* Policies: finding a policy module, creating a policy, and the checked calls into its
 * interface (robotrain/policy.h). */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/policy.h>

struct rt_policy {
    const rt_plugin_desc *desc;
    const rt_policy_i *iface;
    void *self;
};

struct rt_action_selector {
    rt_policy *policy;
    void *self;
};

/* the last slot every module must fill */
#define RT_POLICY_I_MIN_SIZE (offsetof(rt_policy_i, selector_pop) + sizeof(void *))

const rt_policy_i *rt_policy_interface(const rt_plugin_desc *desc, GError **error)
{
    g_return_val_if_fail(desc != NULL, NULL);
    if (desc->kind != RT_PLUGIN_POLICY) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN, "module '%s' is a %s module, not a policy",
                    desc->name, rt_plugin_kind_to_string((rt_plugin_kind)desc->kind));
        return NULL;
    }
    const rt_policy_i *iface = desc->vtable;
    if (!iface || iface->struct_size < RT_POLICY_I_MIN_SIZE) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "policy module '%s': its interface is %u bytes, shorter than the %zu bytes of "
                    "the slots every policy fills (robotrain/policy.h); rebuild it against this "
                    "robotrain",
                    desc->name, iface ? (unsigned)iface->struct_size : 0u, (size_t)RT_POLICY_I_MIN_SIZE);
        return NULL;
    }
    const void *slots[] = {
        (const void *)iface->create,           (const void *)iface->destroy,
        (const void *)iface->delta_indices,    (const void *)iface->build_train,
        (const void *)iface->build_infer,      (const void *)iface->optimizer_preset,
        (const void *)iface->selector_new,     (const void *)iface->selector_free,
        (const void *)iface->selector_reset,   (const void *)iface->selector_needs_chunk,
        (const void *)iface->selector_push_chunk, (const void *)iface->selector_pop,
    };
    static const char *const slot_names[] = {
        "create", "destroy", "delta_indices", "build_train", "build_infer", "optimizer_preset",
        "selector_new", "selector_free", "selector_reset", "selector_needs_chunk",
        "selector_push_chunk", "selector_pop",
    };
    G_STATIC_ASSERT(G_N_ELEMENTS(slots) == G_N_ELEMENTS(slot_names));
    for (size_t i = 0; i < G_N_ELEMENTS(slots); i++)
        if (!slots[i]) {
            g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                        "policy module '%s': its interface has no %s (a required slot of "
                        "robotrain/policy.h)", desc->name, slot_names[i]);
            return NULL;
        }
    return iface;
}

const rt_plugin_module *rt_policy_find_module(rt_plugin_registry *registry, const char *type, GError **error)
{
    g_return_val_if_fail(registry != NULL && type != NULL, NULL);
    const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_POLICY, type, error);
    if (!m)
        return NULL;
    GError *local = NULL;
    if (!rt_policy_interface(m->desc, &local)) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN, "%s: %s", m->path, local->message);
        g_error_free(local);
        return NULL;
    }
    return m;
}

rt_policy *rt_policy_new(const rt_plugin_desc *desc, const rt_config *cfg, GError **error)
{
    g_return_val_if_fail(desc != NULL && cfg != NULL, NULL);
    const rt_policy_i *iface = rt_policy_interface(desc, error);
    if (!iface)
        return NULL;
    const char *type = rt_config_get_string(cfg, "policy.type");
    if (!type || strcmp(type, desc->name) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "--policy.type is '%s', but the options are those of policy '%s'; give one "
                    "policy type", type ? type : "null", desc->name);
        return NULL;
    }
    void *self = iface->create(cfg, error);
    if (!self)
        return NULL;
    rt_policy *p = g_new0(rt_policy, 1);
    p->desc = desc;
    p->iface = iface;
    p->self = self;
    return p;
}

void rt_policy_free(rt_policy *policy)
{
    if (!policy)
        return;
    policy->iface->destroy(policy->self);
    g_free(policy);
}

const char *rt_policy_type(const rt_policy *policy)
{
    return policy->desc->name;
}

const rt_policy_i *rt_policy_get_interface(const rt_policy *policy)
{
    return policy->iface;
}

void rt_policy_get_delta_indices(rt_policy *policy, rt_policy_delta_indices *out)
{
    memset(out, 0, sizeof *out);
    policy->iface->delta_indices(policy->self, out);
}

gboolean rt_policy_build_train(rt_policy *policy, rt_graph *g, const rt_policy_build_args *args,
                               rt_policy_losses *losses, GError **error)
{
    g_return_val_if_fail(policy && g && args && losses, FALSE);
    memset(losses, 0, sizeof *losses);
    if (!rt_graph_is_training(g)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "policy %s: the training forward pass needs a graph made with RT_GRAPH_TRAIN",
                    policy->desc->name);
        return FALSE;
    }
    if (!policy->iface->build_train(policy->self, g, args, losses, error))
        return FALSE;
    if (!rt_graph_check(g, error))
        return FALSE;
    if (!losses->loss || rt_graph_loss(g) != losses->loss || losses->n < 0 ||
        losses->n > RT_POLICY_MAX_LOSSES) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "policy %s: its training forward pass did not set the graph's loss (a bug of "
                    "the module)", policy->desc->name);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_policy_build_infer(rt_policy *policy, rt_graph *g, const rt_policy_build_args *args,
                               rt_tensor **actions, GError **error)
{
    g_return_val_if_fail(policy && g && args && actions, FALSE);
    *actions = NULL;
    if (!policy->iface->build_infer(policy->self, g, args, actions, error))
        return FALSE;
    if (!rt_graph_check(g, error))
        return FALSE;
    if (!*actions) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "policy %s: its inference forward pass returned no action chunk (a bug of the "
                    "module)", policy->desc->name);
        return FALSE;
    }
    return TRUE;
}

gboolean rt_policy_optimizer_preset(rt_policy *policy, rt_graph *g, rt_policy_optimizer *out, GError **error)
{
    g_return_val_if_fail(policy && g && out, FALSE);
    memset(out, 0, sizeof *out);
    if (!policy->iface->optimizer_preset(policy->self, g, out, error))
        return FALSE;
    if (out->n_groups < 1 || out->n_groups > RT_POLICY_MAX_GROUPS) {
        g_set_error(error, RT_ERROR, RT_ERROR_PLUGIN,
                    "policy %s: its optimizer preset has %d groups; 1 to %d are allowed (a bug of "
                    "the module)", policy->desc->name, out->n_groups, RT_POLICY_MAX_GROUPS);
        return FALSE;
    }
    return rt_graph_check(g, error);
}

gboolean rt_policy_init_weights(rt_policy *policy, rt_graph *g, GError **error)
{
    g_return_val_if_fail(policy && g, FALSE);
    const rt_policy_i *i = policy->iface;
    if (i->struct_size < offsetof(rt_policy_i, init_weights) + sizeof(void *) || !i->init_weights)
        return TRUE;
    return i->init_weights(policy->self, g, error);
}

rt_action_selector *rt_policy_selector_new(rt_policy *policy, int64_t batch_size, GError **error)
{
    g_return_val_if_fail(policy != NULL, NULL);
    if (batch_size < 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "an action selector needs a batch size of at least 1, not %" G_GINT64_FORMAT,
                    batch_size);
        return NULL;
    }
    void *self = policy->iface->selector_new(policy->self, batch_size, error);
    if (!self)
        return NULL;
    rt_action_selector *s = g_new0(rt_action_selector, 1);
    s->policy = policy;
    s->self = self;
    return s;
}

void rt_action_selector_free(rt_action_selector *selector)
{
    if (!selector)
        return;
    selector->policy->iface->selector_free(selector->self);
    g_free(selector);
}

void rt_action_selector_reset(rt_action_selector *selector)
{
    selector->policy->iface->selector_reset(selector->self);
}

gboolean rt_action_selector_needs_chunk(rt_action_selector *selector)
{
    return selector->policy->iface->selector_needs_chunk(selector->self);
}

gboolean rt_action_selector_push_chunk(rt_action_selector *selector, const float *chunk, size_t n,
                                       GError **error)
{
    g_return_val_if_fail(selector && chunk, FALSE);
    return selector->policy->iface->selector_push_chunk(selector->self, chunk, n, error);
}

gboolean rt_action_selector_pop(rt_action_selector *selector, float *action, size_t n, GError **error)
{
    g_return_val_if_fail(selector && action, FALSE);
    return selector->policy->iface->selector_pop(selector->self, action, n, error);
}
