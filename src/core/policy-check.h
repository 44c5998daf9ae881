/* src/core/policy-check.h: checking a policy against reference tensors, and describing its
 * state dict (`robotrain policy check` and `robotrain policy info`). Not installed; the
 * functions are exported from librobotrain for the program and the tests.
 *
 * A case file is a safetensors file in the act-golden-v1 format (../shared/golden/README.md):
 * its metadata holds the policy's config.json ("config") and the harness's facts ("harness":
 * batch_size, backbone_file); its tensors are the batch, the model's state dict (model.*), the
 * VAE noise (vae.eps) and what the reference computed: losses (loss.total, loss.<x> for the
 * sub-loss "<x>_loss"), outputs and intermediates (out.*, inter.*), gradients (grad.<param>,
 * or gradsample.<param> at gradsample_idx.<param>, and gradstat.<param> = [sum, sum |g|,
 * sqrt(sum g^2)]) and the inference results (infer.actions, infer.select_action,
 * infer.inter.*). Parameters the case lacks come from its backbone file (harness.backbone_file,
 * beside the case): plain tensors, or int8 codes q8.<name> times the power of two
 * q8scale.<name>. */
#ifndef ROBOTRAIN_CORE_POLICY_CHECK_H
#define ROBOTRAIN_CORE_POLICY_CHECK_H

#include <stdio.h>

#include <robotrain/policy.h>

G_BEGIN_DECLS

typedef struct rt_policy_check_options {
    double tolerance; /* multiplies every limit of the reference's tolerance table (1: as is) */
    rt_dtype dtype;   /* RT_F32, or RT_F64 to run the model in double precision */
    FILE *out;        /* one line per compared tensor, then a summary; NULL: silent */
} rt_policy_check_options;

typedef struct rt_policy_check_result {
    int n_compared;      /* tensors compared */
    int n_failed;        /* of them, outside their limits */
    int n_missing;       /* reference tensors the policy did not produce */
    double worst;        /* the largest error / limit */
    char worst_name[128];
    int64_t n_params;    /* trainable values of the policy */
} rt_policy_check_result;

/* Runs the case at path: builds the policy its config describes (the module from registry),
 * loads the weights, feeds the batch and the recorded noise, runs the training forward and
 * backward passes and the inference pass and action selection, and compares every reference
 * tensor. Returns FALSE with error when the check cannot run (an unreadable or malformed case,
 * a missing weight, an unknown policy); TRUE otherwise, with *result saying whether every
 * tensor matched (n_failed == 0 && n_missing == 0). */
gboolean rt_policy_check_case(rt_plugin_registry *registry, const char *path,
                              const rt_policy_check_options *options, rt_policy_check_result *result,
                              GError **error);

/* Prints the parameter counts of policy (total, per optimizer group, buffers), and with
 * with_keys every state-dict key as a tab-separated line: key, shape (AxB), dtype (float32),
 * param or buffer, optimizer group and index in the optimizer's state ('-' for buffers), the
 * layout of spec/act-state-dict.tsv. batch_size sizes the graph it builds to find them. */
gboolean rt_policy_print_info(rt_policy *policy, FILE *out, gboolean with_keys, GError **error);

G_END_DECLS

#endif
