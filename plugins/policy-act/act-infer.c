/* The inference forward pass (predict_action_chunk: ACT in eval mode): no VAE encoder, the
 * latent is zero, dropout is off; the output "action" is the normalized chunk [B, T, A]. */
#include "config.h"

#include "act.h"

gboolean act_build_infer(const act_config *c, rt_graph *g, const rt_policy_build_args *args,
                         rt_tensor **actions, GError **error)
{
    const int64_t B = args->batch_size;
    act_model m;
    act_model_declare(&m, g, c, args->dtype, args->flags, FALSE);
    rt_tensor *state, *env, **images = g_new0(rt_tensor *, MAX(c->n_cameras, 1));
    act_model_inputs(&m, B, &state, &env, images);
    rt_tensor *latent = rt_fill(g, args->dtype, 2, (int64_t[]){B, c->latent_dim}, 0);
    act_intermediate(&m, latent, "inter.latent_sample");
    rt_tensor *chunk = act_model_forward(&m, latent, state, env, images, B);
    g_free(images);
    rt_graph_output(g, c->action_key, chunk);
    act_model_clear(&m);
    if (!rt_graph_check(g, error))
        return FALSE;
    *actions = chunk;
    return TRUE;
}
