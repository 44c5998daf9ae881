/* LeRobot's ACT module: its parameters and buffers, declared in state-dict order with PyTorch's
 * initialisation (ACT._reset_parameters: Xavier on the transformer encoder and decoder), and the
 * part of ACT.forward after the latent: encoder tokens, encoder, decoder, action head. */
#include "config.h"

#include <math.h>
#include <stdarg.h>

#include "act.h"

rt_init act_init_fan_in(int64_t fan_in)
{
    double bound = 1.0 / sqrt((double)fan_in);
    return rt_init_uniform(-bound, bound);
}

rt_init act_init_xavier(int64_t fan_in, int64_t fan_out)
{
    double bound = sqrt(6.0 / (double)(fan_in + fan_out));
    return rt_init_uniform(-bound, bound);
}

static rt_tensor *leaf(act_model *m, gboolean buffer, rt_init init, int ndim, const int64_t *shape,
                       const char *fmt, va_list ap)
{
    char *name = g_strdup_vprintf(fmt, ap);
    rt_tensor *t = buffer ? rt_buffer(m->g, name, m->dtype, ndim, shape, init)
                          : rt_param(m->g, name, m->dtype, ndim, shape, init);
    g_free(name);
    return t;
}

rt_tensor *act_param(act_model *m, rt_init init, int ndim, const int64_t *shape, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_tensor *t = leaf(m, FALSE, init, ndim, shape, fmt, ap);
    va_end(ap);
    return t;
}

rt_tensor *act_buffer(act_model *m, rt_init init, int ndim, const int64_t *shape, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_tensor *t = leaf(m, TRUE, init, ndim, shape, fmt, ap);
    va_end(ap);
    return t;
}

rt_tensor *act_intermediate(act_model *m, rt_tensor *t, const char *fmt, ...)
{
    if (!(m->flags & RT_POLICY_BUILD_INTERMEDIATES) || !t)
        return t;
    va_list ap;
    va_start(ap, fmt);
    char *name = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    /* the host reads outputs as dense arrays */
    rt_graph_output(m->g, name, rt_contiguous(m->g, t));
    g_free(name);
    return t;
}

/* nn.Linear(in, out) with PyTorch's initialisation */
static act_linear linear(act_model *m, const char *name, int64_t in, int64_t out)
{
    act_linear l;
    l.weight = act_param(m, act_init_fan_in(in), 2, (int64_t[]){out, in}, "%s.weight", name);
    l.bias = act_param(m, act_init_fan_in(in), 1, (int64_t[]){out}, "%s.bias", name);
    return l;
}

/* nn.Embedding(n, dim).weight: N(0, 1) */
static rt_tensor *embedding(act_model *m, const char *name, int64_t n, int64_t dim)
{
    return act_param(m, rt_init_normal(0, 1), 2, (int64_t[]){n, dim}, "%s.weight", name);
}

void act_model_declare(act_model *m, rt_graph *g, const act_config *c, rt_dtype dtype, uint32_t flags,
                       gboolean train)
{
    memset(m, 0, sizeof *m);
    m->g = g;
    m->cfg = c;
    m->dtype = dtype;
    m->flags = flags;
    m->vae = train && c->use_vae;
    m->dropout = train && rt_graph_is_training(g) ? c->dropout : 0.0;
    const int64_t D = c->dim_model;
    if (m->vae) {
        /* the buffer of ACT itself comes first in the state dict */
        int64_t n_tokens = 1 + c->chunk_size + (c->state_key ? 1 : 0);
        float *table = g_new(float, n_tokens * D);
        act_sinusoid_1d(n_tokens, D, table);
        rt_init init = rt_init_data(table);
        if (dtype == RT_F64) {
            double *wide = g_new(double, n_tokens * D);
            for (int64_t i = 0; i < n_tokens * D; i++)
                wide[i] = table[i];
            g_free(table);
            table = (float *)wide;
            init = rt_init_data(wide);
        }
        m->vae_encoder_pos_enc =
            act_buffer(m, init, 3, (int64_t[]){1, n_tokens, D}, "model.vae_encoder_pos_enc");
        g_free(table);
        act_stack_declare(m, &m->vae_encoder, "model.vae_encoder", (int)c->n_vae_encoder_layers, FALSE,
                          FALSE, c->pre_norm);
        m->vae_encoder_cls_embed = embedding(m, "model.vae_encoder_cls_embed", 1, D);
        if (c->state_key)
            m->vae_encoder_robot_state_input_proj =
                linear(m, "model.vae_encoder_robot_state_input_proj", c->state_dim, D);
        m->vae_encoder_action_input_proj = linear(m, "model.vae_encoder_action_input_proj", c->action_dim, D);
        m->vae_encoder_latent_output_proj =
            linear(m, "model.vae_encoder_latent_output_proj", D, 2 * c->latent_dim);
    }
    if (c->n_cameras > 0)
        act_backbone_declare(m);
    act_stack_declare(m, &m->encoder, "model.encoder", (int)c->n_encoder_layers, FALSE, TRUE, c->pre_norm);
    act_stack_declare(m, &m->decoder, "model.decoder", (int)c->n_decoder_layers, TRUE, TRUE, TRUE);
    if (c->state_key)
        m->encoder_robot_state_input_proj = linear(m, "model.encoder_robot_state_input_proj", c->state_dim, D);
    if (c->env_key)
        m->encoder_env_state_input_proj = linear(m, "model.encoder_env_state_input_proj", c->env_dim, D);
    m->encoder_latent_input_proj = linear(m, "model.encoder_latent_input_proj", c->latent_dim, D);
    if (c->n_cameras > 0) {
        /* nn.Conv2d(feature_channels, D, kernel_size=1): fan_in = feature_channels */
        int64_t fc = c->feature_channels;
        m->encoder_img_feat_input_proj.weight = act_param(m, act_init_fan_in(fc), 4, (int64_t[]){D, fc, 1, 1},
                                                          "model.encoder_img_feat_input_proj.weight");
        m->encoder_img_feat_input_proj.bias = act_param(m, act_init_fan_in(fc), 1, (int64_t[]){D},
                                                        "model.encoder_img_feat_input_proj.bias");
    }
    int64_t n_1d = 1 + (c->state_key ? 1 : 0) + (c->env_key ? 1 : 0);
    m->encoder_1d_feature_pos_embed = embedding(m, "model.encoder_1d_feature_pos_embed", n_1d, D);
    m->decoder_pos_embed = embedding(m, "model.decoder_pos_embed", c->chunk_size, D);
    m->action_head = linear(m, "model.action_head", D, c->action_dim);
}

void act_model_clear(act_model *m)
{
    g_free(m->vae_encoder.layers);
    g_free(m->encoder.layers);
    g_free(m->decoder.layers);
    g_free(m->backbone.blocks);
    memset(m, 0, sizeof *m);
}

void act_model_inputs(act_model *m, int64_t batch, rt_tensor **state, rt_tensor **env, rt_tensor **images)
{
    const act_config *c = m->cfg;
    *state = c->state_key ? rt_input(m->g, c->state_key, m->dtype, 2, (int64_t[]){batch, c->state_dim}, 0)
                          : NULL;
    *env = c->env_key ? rt_input(m->g, c->env_key, m->dtype, 2, (int64_t[]){batch, c->env_dim}, 0) : NULL;
    for (int i = 0; i < c->n_cameras; i++) {
        const act_camera *cam = &c->cameras[i];
        images[i] = rt_input(m->g, cam->key, m->dtype, 4, (int64_t[]){batch, cam->c, cam->h, cam->w}, 0);
    }
}

/* concat of any number of pieces along axis 0 (the op joins up to RT_MAX_SRC) */
static rt_tensor *concat0(rt_graph *g, rt_tensor **pieces, int n)
{
    while (n > RT_MAX_SRC) {
        int out = 0;
        for (int i = 0; i < n; i += RT_MAX_SRC) {
            int k = MIN(RT_MAX_SRC, n - i);
            pieces[out++] = rt_concat(g, pieces + i, k, 0);
        }
        n = out;
    }
    return rt_concat(g, pieces, n, 0);
}

/* [B, D] -> one token [1, B, D] */
static rt_tensor *token(rt_graph *g, rt_tensor *x)
{
    return x ? rt_reshape(g, x, 3, (int64_t[]){1, x->shape[0], x->shape[1]}) : NULL;
}

/* The image tokens of every camera ([h*w, B, D] each, pixel-major as einops "b c h w -> (h w) b c")
 * and their positional embeddings ([h*w, 1, D]). Cameras of one size share one backbone pass. */
static void image_tokens(act_model *m, rt_tensor *const *images, int64_t batch, rt_tensor **tokens,
                         rt_tensor **pos)
{
    const act_config *c = m->cfg;
    rt_graph *g = m->g;
    const int64_t D = c->dim_model;
    gboolean same = TRUE;
    for (int i = 1; i < c->n_cameras; i++)
        same &= c->cameras[i].h == c->cameras[0].h && c->cameras[i].w == c->cameras[0].w;
    int n_groups = same ? 1 : c->n_cameras;
    for (int grp = 0; grp < n_groups; grp++) {
        int first = same ? 0 : grp, n = same ? c->n_cameras : 1;
        rt_tensor **pieces = g_new(rt_tensor *, n);
        for (int i = 0; i < n; i++)
            pieces[i] = images[first + i];
        rt_tensor *x = concat0(g, pieces, n); /* [n * B, 3, H, W] */
        g_free(pieces);
        rt_tensor *features = act_backbone_forward(m, x);
        rt_tensor *proj = rt_conv2d(g, features, m->encoder_img_feat_input_proj.weight,
                                    m->encoder_img_feat_input_proj.bias, 1, 1, 0, 0, 1, 1);
        int64_t h, w;
        act_backbone_output_size(c, c->cameras[first].h, c->cameras[first].w, &h, &w);
        /* the 2-D embedding: a constant [1, D, h, w], read as tokens [h*w, 1, D] */
        float *table = g_new(float, D * h * w);
        act_sinusoid_2d(D, h, w, table);
        rt_tensor *cam_pos;
        if (m->dtype == RT_F64) {
            double *wide = g_new(double, D * h * w);
            for (int64_t i = 0; i < D * h * w; i++)
                wide[i] = table[i];
            cam_pos = rt_const(g, RT_F64, 4, (int64_t[]){1, D, h, w}, wide);
            g_free(wide);
        } else {
            cam_pos = rt_const(g, RT_F32, 4, (int64_t[]){1, D, h, w}, table);
        }
        g_free(table);
        if (grp == 0)
            act_intermediate(m, cam_pos, "inter.cam_pos_embed");
        rt_tensor *pos_tokens =
            rt_permute(g, rt_reshape(g, cam_pos, 3, (int64_t[]){1, D, h * w}), (int[]){2, 0, 1});
        for (int i = 0; i < n; i++) {
            const char *key = c->cameras[first + i].key;
            rt_tensor *f = n == 1 ? features : rt_slice(g, features, 0, i * batch, batch);
            rt_tensor *p = n == 1 ? proj : rt_slice(g, proj, 0, i * batch, batch);
            act_intermediate(m, f, "inter.backbone.%s.feature_map", key);
            act_intermediate(m, p, "inter.img_feat_proj.%s", key);
            /* [B, D, h, w] -> [h*w, B, D] */
            tokens[first + i] =
                rt_permute(g, rt_reshape(g, p, 3, (int64_t[]){batch, D, h * w}), (int[]){2, 0, 1});
            pos[first + i] = pos_tokens;
        }
    }
}

rt_tensor *act_model_forward(act_model *m, rt_tensor *latent, rt_tensor *state, rt_tensor *env,
                             rt_tensor *const *images, int64_t batch)
{
    const act_config *c = m->cfg;
    rt_graph *g = m->g;
    const int64_t D = c->dim_model;
    int n_pieces = 3 + c->n_cameras, n = 0;
    rt_tensor **tok = g_new0(rt_tensor *, n_pieces), **pos = g_new0(rt_tensor *, n_pieces);
    /* 1-D tokens: latent, robot state, environment state; their embeddings are rows of
     * encoder_1d_feature_pos_embed */
    int64_t n_1d = m->encoder_1d_feature_pos_embed ? m->encoder_1d_feature_pos_embed->shape[0] : 0;
    tok[n++] = token(g, rt_linear(g, latent, m->encoder_latent_input_proj.weight,
                                  m->encoder_latent_input_proj.bias));
    if (state)
        tok[n++] = token(g, rt_linear(g, state, m->encoder_robot_state_input_proj.weight,
                                      m->encoder_robot_state_input_proj.bias));
    if (env)
        tok[n++] = token(g, rt_linear(g, env, m->encoder_env_state_input_proj.weight,
                                      m->encoder_env_state_input_proj.bias));
    pos[0] = rt_reshape(g, m->encoder_1d_feature_pos_embed, 3, (int64_t[]){n_1d, 1, D});
    int n_pos = 1;
    if (c->n_cameras > 0) {
        image_tokens(m, images, batch, tok + n, pos + n_pos);
        n += c->n_cameras;
        n_pos += c->n_cameras;
    }
    rt_tensor *enc_in = concat0(g, tok, n);
    rt_tensor *enc_pos = concat0(g, pos, n_pos);
    g_free(tok);
    g_free(pos);
    act_intermediate(m, enc_in, "inter.encoder.in");
    act_intermediate(m, enc_pos, "inter.encoder.pos");
    rt_tensor *enc_out = act_encoder_forward(m, &m->encoder, enc_in, enc_pos, NULL);
    act_intermediate(m, enc_out, "inter.encoder.out");

    /* decoder: queries start at zero, learned query embeddings */
    rt_tensor *dec_pos = rt_reshape(g, m->decoder_pos_embed, 3, (int64_t[]){c->chunk_size, 1, D});
    act_intermediate(m, dec_pos, "inter.decoder.pos");
    rt_tensor *dec_in = rt_fill(g, m->dtype, 3, (int64_t[]){c->chunk_size, batch, D}, 0);
    if (dec_in)
        dec_in->batch_axis = 1; /* per-sample zeros: the decoder's dropout draws by sample */
    rt_tensor *dec_out = act_decoder_forward(m, &m->decoder, dec_in, enc_out, dec_pos, enc_pos);
    act_intermediate(m, dec_out, "inter.decoder.out");
    /* the head on [T, B, D] (row by row, as on the transposed tensor), then [B, T, A] */
    rt_tensor *actions = rt_linear(g, dec_out, m->action_head.weight, m->action_head.bias);
    return rt_contiguous(g, rt_transpose(g, actions, 0, 1));
}
