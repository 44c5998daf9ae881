/* The training forward pass of ACTPolicy.forward: the batch, the VAE encoder (with use_vae), the
 * model, and the loss: L1 over the valid (non-padded) action steps as LeRobot >= 0.6 averages
 * it, plus kl_weight times the KL divergence of the posterior. */
#include "config.h"

#include "act.h"

gboolean act_build_train(const act_config *c, rt_graph *g, const rt_policy_build_args *args,
                         rt_policy_losses *losses, GError **error)
{
    const int64_t B = args->batch_size, T = c->chunk_size, A = c->action_dim;
    act_model m;
    act_model_declare(&m, g, c, args->dtype, args->flags, TRUE);
    rt_tensor *state, *env, **images = g_new0(rt_tensor *, MAX(c->n_cameras, 1));
    act_model_inputs(&m, B, &state, &env, images);
    rt_tensor *action = rt_input(g, c->action_key, args->dtype, 3, (int64_t[]){B, T, A}, 0);
    rt_tensor *action_is_pad = rt_input(g, "action_is_pad", RT_BOOL, 2, (int64_t[]){B, T}, 0);

    rt_tensor *mu = NULL, *log_sigma_x2 = NULL, *latent;
    if (m.vae)
        latent = act_vae_forward(&m, state, action, action_is_pad, B, &mu, &log_sigma_x2);
    else
        latent = rt_fill(g, args->dtype, 2, (int64_t[]){B, c->latent_dim}, 0);
    act_intermediate(&m, latent, "inter.latent_sample");
    rt_tensor *actions_hat = act_model_forward(&m, latent, state, env, images, B);
    g_free(images);
    act_intermediate(&m, actions_hat, "out.actions_hat");

    rt_tensor *l1 = rt_masked_l1_loss(g, actions_hat, action, action_is_pad, RT_L1_MEAN_VALID);
    if (args->flags & RT_POLICY_BUILD_GLOBAL_COUNTS) {
        /* the mean over the valid steps of the whole batch, not of this process's share */
        rt_tensor *w = rt_input(g, "l1_loss.count_weight", args->dtype, 0, NULL, -1);
        l1 = rt_mul(g, l1, w);
        losses->counts[losses->n_counts].weight = w;
        losses->counts[losses->n_counts].mask = "action_is_pad";
        losses->counts[losses->n_counts++].per_entry = A;
    }
    rt_graph_output(g, "l1_loss", l1);
    losses->names[losses->n] = "l1_loss";
    losses->values[losses->n++] = l1;
    rt_tensor *loss = l1;
    if (m.vae) {
        act_intermediate(&m, mu, "out.mu");
        act_intermediate(&m, log_sigma_x2, "out.log_sigma_x2");
        rt_tensor *kld = rt_kl_loss(g, mu, log_sigma_x2);
        rt_graph_output(g, "kld_loss", kld);
        losses->names[losses->n] = "kld_loss";
        losses->values[losses->n++] = kld;
        loss = rt_add(g, l1, rt_scale(g, kld, c->kl_weight, 0));
    }
    rt_set_loss(g, loss);
    losses->loss = rt_graph_loss(g);
    act_model_clear(&m);
    return rt_graph_check(g, error);
}
