/* `robotrain policy info`: a policy's parameter counts and its state-dict keys, from the
 * training graph it builds (not planned: nothing is allocated). */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/policy.h>

#include "core/policy-check.h"

/* 51613582 -> "51,613,582" */
static void thousands(char *buf, size_t size, int64_t n)
{
    char digits[32];
    g_snprintf(digits, sizeof digits, "%" G_GINT64_FORMAT, n);
    size_t len = strlen(digits), o = 0;
    for (size_t i = 0; i < len && o + 2 < size; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

gboolean rt_policy_print_info(rt_policy *policy, FILE *out, gboolean with_keys, GError **error)
{
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(1);
    rt_policy_losses losses;
    rt_policy_optimizer opt;
    if (!rt_policy_build_train(policy, g, &args, &losses, error) ||
        !rt_policy_optimizer_preset(policy, g, &opt, error)) {
        rt_graph_free(g);
        return FALSE;
    }
    int64_t total = 0, buffers = 0, group_values[RT_POLICY_MAX_GROUPS] = {0};
    int group_tensors[RT_POLICY_MAX_GROUPS] = {0}, n_buffers = 0;
    for (int i = 0; i < rt_graph_n_params(g); i++) {
        rt_tensor *p = rt_graph_param(g, i);
        int grp = CLAMP(rt_param_group(p), 0, RT_POLICY_MAX_GROUPS - 1);
        total += rt_tensor_numel(p);
        group_values[grp] += rt_tensor_numel(p);
        group_tensors[grp]++;
    }
    for (int i = 0; i < rt_graph_n_buffers(g); i++) {
        buffers += rt_tensor_numel(rt_graph_buffer(g, i));
        n_buffers++;
    }
    char num[40];
    thousands(num, sizeof num, total);
    fprintf(out, "policy %s: %s parameters (%.1fM) in %d tensors\n", rt_policy_type(policy), num, total / 1e6,
            rt_graph_n_params(g));
    for (int k = 0; k < opt.n_groups; k++) {
        thousands(num, sizeof num, group_values[k]);
        fprintf(out, "  optimizer group %d (%s): %s in %d tensors, lr %g, weight decay %g\n", k,
                opt.group_names[k] ? opt.group_names[k] : "-", num, group_tensors[k], opt.groups[k].lr,
                opt.groups[k].weight_decay);
    }
    thousands(num, sizeof num, buffers);
    fprintf(out, "  buffers: %s values in %d tensors\n", num, n_buffers);
    fprintf(out, "  state dict: %d keys\n", rt_graph_n_params(g) + n_buffers);
    if (with_keys) {
        /* the optimizer's state follows its groups: group 0's parameters in order, then group 1's */
        int base[RT_POLICY_MAX_GROUPS] = {0}, next[RT_POLICY_MAX_GROUPS] = {0};
        for (int k = 1; k < RT_POLICY_MAX_GROUPS; k++)
            base[k] = base[k - 1] + group_tensors[k - 1];
        for (int i = 0; i < rt_graph_n_tensors(g); i++) { /* creation order: the state dict's */
            rt_tensor *t = rt_graph_tensor(g, i);
            gboolean param = (t->flags & RT_TENSOR_PARAM) != 0;
            if (!param && !(t->flags & RT_TENSOR_BUFFER))
                continue;
            GString *shape = g_string_new(NULL);
            for (int d = 0; d < t->ndim; d++)
                g_string_append_printf(shape, "%s%" G_GINT64_FORMAT, d ? "x" : "", t->shape[d]);
            if (param) {
                int grp = CLAMP(rt_param_group(t), 0, RT_POLICY_MAX_GROUPS - 1);
                fprintf(out, "%s\t%s\tfloat32\tparam\t%d\t%d\n", t->name, shape->str, grp, base[grp] + next[grp]++);
            } else {
                fprintf(out, "%s\t%s\tfloat32\tbuffer\t-\t-\n", t->name, shape->str);
            }
            g_string_free(shape, TRUE);
        }
    }
    rt_graph_free(g);
    return TRUE;
}
