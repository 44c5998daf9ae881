/* The VAE encoder of ACT (training with use_vae): it reads [cls, robot state, action_0..T-1],
 * ignores padded actions as keys, and its cls output gives the posterior's mean and log
 * variance; the latent is their reparameterized sample. */
#include "config.h"

#include "act.h"

rt_tensor *act_vae_forward(act_model *m, rt_tensor *state, rt_tensor *action, rt_tensor *action_is_pad,
                           int64_t batch, rt_tensor **mu, rt_tensor **log_sigma_x2)
{
    const act_config *c = m->cfg;
    rt_graph *g = m->g;
    const int64_t D = c->dim_model, L = c->latent_dim, T = c->chunk_size;
    rt_tensor *pieces[3];
    int n = 0;
    /* cls: the embedding's only row for every sample, [1, B, D] */
    pieces[n++] = rt_expand(g, rt_reshape(g, m->vae_encoder_cls_embed, 3, (int64_t[]){1, 1, D}), 3,
                            (int64_t[]){1, batch, D});
    if (state) {
        rt_tensor *s = rt_linear(g, state, m->vae_encoder_robot_state_input_proj.weight,
                                 m->vae_encoder_robot_state_input_proj.bias);
        pieces[n++] = rt_reshape(g, s, 3, (int64_t[]){1, batch, D});
    }
    /* actions [B, T, A] -> [B, T, D] -> [T, B, D] */
    rt_tensor *a = rt_linear(g, action, m->vae_encoder_action_input_proj.weight,
                             m->vae_encoder_action_input_proj.bias);
    pieces[n++] = rt_transpose(g, a, 0, 1);
    rt_tensor *tokens = rt_concat(g, pieces, n, 0); /* [S, B, D], S = T + 1 or 2 */
    int64_t S = T + n - 1;
    rt_tensor *pos = rt_reshape(g, m->vae_encoder_pos_enc, 3, (int64_t[]){S, 1, D});
    /* key padding: False for cls (and state), then action_is_pad */
    uint8_t *zeros = g_new0(uint8_t, batch * (n - 1));
    rt_tensor *keep = rt_const(g, RT_BOOL, 2, (int64_t[]){batch, n - 1}, zeros);
    g_free(zeros);
    rt_tensor *mask = rt_concat(g, (rt_tensor *[]){keep, action_is_pad}, 2, 1);
    act_intermediate(m, tokens, "inter.vae_encoder.in");
    act_intermediate(m, pos, "inter.vae_encoder.pos");
    act_intermediate(m, mask, "inter.vae_encoder.key_padding_mask");
    rt_tensor *out = act_encoder_forward(m, &m->vae_encoder, tokens, pos, mask);
    act_intermediate(m, out, "inter.vae_encoder.out");
    rt_tensor *cls = rt_reshape(g, rt_slice(g, out, 0, 0, 1), 2, (int64_t[]){batch, D});
    rt_tensor *params = rt_linear(g, cls, m->vae_encoder_latent_output_proj.weight,
                                  m->vae_encoder_latent_output_proj.bias); /* [B, 2L] */
    *mu = rt_slice(g, params, 1, 0, L);
    *log_sigma_x2 = rt_slice(g, params, 1, L, L);
    rt_tensor *eps;
    if (m->flags & RT_POLICY_BUILD_NOISE_INPUTS)
        eps = rt_input(g, "vae.eps", m->dtype, 2, (int64_t[]){batch, L}, 0);
    else
        eps = rt_rand_normal(g, m->dtype, 2, (int64_t[]){batch, L}, 0, 0, 1); /* torch.randn_like(mu) */
    /* mu + exp(log_sigma_x2 / 2) * eps */
    return rt_add(g, *mu, rt_mul(g, rt_exp(g, rt_scale(g, *log_sigma_x2, 0.5, 0)), eps));
}
