/* ACTEncoder(Layer) and ACTDecoder(Layer): post-norm (the default) or pre-norm transformer
 * layers on sequence-first tokens [S, B, D], with the positional embedding added to queries and
 * keys (never to values), as LeRobot's modeling_act.py computes them. */
#include "config.h"

#include "act.h"

/* nn.MultiheadAttention(D, heads): in_proj Xavier, biases 0, out_proj.weight as a Linear unless
 * the stack is re-initialised with Xavier (ACT._reset_parameters) */
static rt_mha_weights mha(act_model *m, const char *prefix, gboolean xavier)
{
    const int64_t D = m->cfg->dim_model;
    rt_mha_weights w;
    w.in_proj_weight = act_param(m, act_init_xavier(D, 3 * D), 2, (int64_t[]){3 * D, D}, "%s.in_proj_weight",
                                 prefix);
    w.in_proj_bias = act_param(m, rt_init_constant(0), 1, (int64_t[]){3 * D}, "%s.in_proj_bias", prefix);
    w.out_proj_weight = act_param(m, xavier ? act_init_xavier(D, D) : act_init_fan_in(D), 2, (int64_t[]){D, D},
                                  "%s.out_proj.weight", prefix);
    w.out_proj_bias = act_param(m, rt_init_constant(0), 1, (int64_t[]){D}, "%s.out_proj.bias", prefix);
    return w;
}

static act_linear linear(act_model *m, const char *prefix, const char *name, int64_t in, int64_t out,
                         gboolean xavier)
{
    act_linear l;
    l.weight = act_param(m, xavier ? act_init_xavier(in, out) : act_init_fan_in(in), 2, (int64_t[]){out, in},
                         "%s.%s.weight", prefix, name);
    l.bias = act_param(m, act_init_fan_in(in), 1, (int64_t[]){out}, "%s.%s.bias", prefix, name);
    return l;
}

static act_norm layer_norm(act_model *m, const char *prefix, const char *name)
{
    const int64_t shape[1] = {m->cfg->dim_model};
    act_norm n;
    n.weight = act_param(m, rt_init_constant(1), 1, shape, "%s.%s.weight", prefix, name);
    n.bias = act_param(m, rt_init_constant(0), 1, shape, "%s.%s.bias", prefix, name);
    return n;
}

void act_stack_declare(act_model *m, act_stack *s, const char *prefix, int n_layers, gboolean decoder,
                       gboolean xavier, gboolean final_norm)
{
    const act_config *c = m->cfg;
    s->n = n_layers;
    s->layers = g_new0(act_layer, MAX(n_layers, 1));
    for (int i = 0; i < n_layers; i++) {
        act_layer *l = &s->layers[i];
        g_autofree char *p = g_strdup_printf("%s.layers.%d", prefix, i);
        g_autofree char *sa = g_strdup_printf("%s.self_attn", p);
        l->self_attn = mha(m, sa, xavier);
        if (decoder) {
            g_autofree char *ca = g_strdup_printf("%s.multihead_attn", p);
            l->cross_attn = mha(m, ca, xavier);
        }
        l->linear1 = linear(m, p, "linear1", c->dim_model, c->dim_feedforward, xavier);
        l->linear2 = linear(m, p, "linear2", c->dim_feedforward, c->dim_model, xavier);
        for (int k = 0; k < (decoder ? 3 : 2); k++) {
            char name[8];
            g_snprintf(name, sizeof name, "norm%d", k + 1);
            l->norm[k] = layer_norm(m, p, name);
        }
    }
    if (final_norm)
        s->norm = layer_norm(m, prefix, "norm");
}

#define LN_EPS 1e-5

static rt_tensor *norm(act_model *m, rt_tensor *x, const act_norm *n)
{
    return rt_layer_norm(m->g, x, n->weight, n->bias, LN_EPS);
}

static rt_tensor *add_pos(rt_graph *g, rt_tensor *x, rt_tensor *pos)
{
    return pos ? rt_add(g, x, pos) : x;
}

/* linear2(dropout(activation(linear1(x)))) */
static rt_tensor *feed_forward(act_model *m, const act_layer *l, rt_tensor *x)
{
    rt_graph *g = m->g;
    rt_tensor *h = rt_linear(g, x, l->linear1.weight, l->linear1.bias);
    h = m->cfg->activation == ACT_GELU ? rt_gelu(g, h) : rt_relu(g, h);
    h = rt_dropout(g, h, m->dropout);
    return rt_linear(g, h, l->linear2.weight, l->linear2.bias);
}

static rt_tensor *attention(act_model *m, const rt_mha_weights *w, rt_tensor *q, rt_tensor *k, rt_tensor *v,
                            rt_tensor *mask)
{
    return rt_multihead_attention(m->g, w, q, k, v, mask, (int)m->cfg->n_heads, m->dropout);
}

static rt_tensor *encoder_layer(act_model *m, const act_layer *l, rt_tensor *x, rt_tensor *pos, rt_tensor *mask)
{
    rt_graph *g = m->g;
    const double p = m->dropout;
    if (m->cfg->pre_norm) {
        rt_tensor *skip = x;
        x = norm(m, x, &l->norm[0]);
        rt_tensor *qk = add_pos(g, x, pos);
        x = rt_add(g, skip, rt_dropout(g, attention(m, &l->self_attn, qk, qk, x, mask), p));
        skip = x;
        x = norm(m, x, &l->norm[1]);
        return rt_add(g, skip, rt_dropout(g, feed_forward(m, l, x), p));
    }
    rt_tensor *qk = add_pos(g, x, pos);
    x = norm(m, rt_add(g, x, rt_dropout(g, attention(m, &l->self_attn, qk, qk, x, mask), p)), &l->norm[0]);
    return norm(m, rt_add(g, x, rt_dropout(g, feed_forward(m, l, x), p)), &l->norm[1]);
}

rt_tensor *act_encoder_forward(act_model *m, const act_stack *s, rt_tensor *x, rt_tensor *pos,
                               rt_tensor *key_padding_mask)
{
    for (int i = 0; i < s->n; i++)
        x = encoder_layer(m, &s->layers[i], x, pos, key_padding_mask);
    return s->norm.weight ? norm(m, x, &s->norm) : x;
}

static rt_tensor *decoder_layer(act_model *m, const act_layer *l, rt_tensor *x, rt_tensor *memory,
                                rt_tensor *memory_keys, rt_tensor *pos)
{
    rt_graph *g = m->g;
    const double p = m->dropout;
    if (m->cfg->pre_norm) {
        rt_tensor *skip = x;
        x = norm(m, x, &l->norm[0]);
        rt_tensor *qk = add_pos(g, x, pos);
        x = rt_add(g, skip, rt_dropout(g, attention(m, &l->self_attn, qk, qk, x, NULL), p));
        skip = x;
        x = norm(m, x, &l->norm[1]);
        x = rt_add(g, skip, rt_dropout(g, attention(m, &l->cross_attn, add_pos(g, x, pos), memory_keys, memory,
                                                    NULL), p));
        skip = x;
        x = norm(m, x, &l->norm[2]);
        return rt_add(g, skip, rt_dropout(g, feed_forward(m, l, x), p));
    }
    rt_tensor *qk = add_pos(g, x, pos);
    x = norm(m, rt_add(g, x, rt_dropout(g, attention(m, &l->self_attn, qk, qk, x, NULL), p)), &l->norm[0]);
    x = norm(m, rt_add(g, x, rt_dropout(g, attention(m, &l->cross_attn, add_pos(g, x, pos), memory_keys, memory,
                                                     NULL), p)), &l->norm[1]);
    return norm(m, rt_add(g, x, rt_dropout(g, feed_forward(m, l, x), p)), &l->norm[2]);
}

rt_tensor *act_decoder_forward(act_model *m, const act_stack *s, rt_tensor *x, rt_tensor *memory,
                               rt_tensor *decoder_pos, rt_tensor *memory_pos)
{
    /* the keys of every cross-attention: memory + its positional embedding, computed once */
    rt_tensor *memory_keys = s->n > 0 ? add_pos(m->g, memory, memory_pos) : NULL;
    for (int i = 0; i < s->n; i++)
        x = decoder_layer(m, &s->layers[i], x, memory, memory_keys, decoder_pos);
    return norm(m, x, &s->norm);
}
