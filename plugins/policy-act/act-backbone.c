/* The image backbone: torchvision's ResNet up to layer4 (IntermediateLayerGetter returning
 * "feature_map"), every batch norm a FrozenBatchNorm2d whose statistics are buffers. The
 * convolution kernels are trainable; they carry torchvision's names under "model.backbone.". */
#include "config.h"

#include <math.h>

#include "act.h"

#define BN_EPS 1e-5

/* FrozenBatchNorm2d(channels): weight 1, bias 0, running_mean 0, running_var 1 */
static act_bn frozen_bn(act_model *m, int64_t channels, const char *name)
{
    act_bn bn;
    const int64_t shape[1] = {channels};
    bn.weight = act_buffer(m, rt_init_constant(1), 1, shape, "model.backbone.%s.weight", name);
    bn.bias = act_buffer(m, rt_init_constant(0), 1, shape, "model.backbone.%s.bias", name);
    bn.running_mean = act_buffer(m, rt_init_constant(0), 1, shape, "model.backbone.%s.running_mean", name);
    bn.running_var = act_buffer(m, rt_init_constant(1), 1, shape, "model.backbone.%s.running_var", name);
    return bn;
}

/* torchvision's init: kaiming_normal_(mode="fan_out", nonlinearity="relu") */
static rt_tensor *conv(act_model *m, int64_t out, int64_t in, int64_t k, const char *name)
{
    double std = sqrt(2.0 / (double)(out * k * k));
    return act_param(m, rt_init_normal(0, std), 4, (int64_t[]){out, in, k, k}, "model.backbone.%s.weight",
                     name);
}

void act_backbone_declare(act_model *m)
{
    const act_config *c = m->cfg;
    act_backbone *b = &m->backbone;
    const int expansion = c->block == ACT_BASIC_BLOCK ? 1 : 4;
    b->n_blocks = c->blocks[0] + c->blocks[1] + c->blocks[2] + c->blocks[3];
    b->blocks = g_new0(act_block, b->n_blocks);
    b->conv1 = conv(m, 64, 3, 7, "conv1");
    b->bn1 = frozen_bn(m, 64, "bn1");
    int64_t inplanes = 64;
    int dilation = 1, k = 0;
    for (int layer = 0; layer < 4; layer++) {
        int64_t planes = 64 << layer;
        int stride = layer == 0 ? 1 : 2;
        int previous_dilation = dilation;
        if (layer == 3 && c->dilation) { /* replace_stride_with_dilation = [False, False, True] */
            dilation *= stride;
            stride = 1;
        }
        for (int i = 0; i < c->blocks[layer]; i++, k++) {
            act_block *blk = &b->blocks[k];
            char name[64];
            int s = i == 0 ? stride : 1;
            blk->stride = s;
            blk->dilation = i == 0 ? previous_dilation : dilation;
            if (c->block == ACT_BASIC_BLOCK) {
                blk->n_convs = 2;
                g_snprintf(name, sizeof name, "layer%d.%d.conv1", layer + 1, i);
                blk->conv[0] = conv(m, planes, inplanes, 3, name);
                g_snprintf(name, sizeof name, "layer%d.%d.bn1", layer + 1, i);
                blk->bn[0] = frozen_bn(m, planes, name);
                g_snprintf(name, sizeof name, "layer%d.%d.conv2", layer + 1, i);
                blk->conv[1] = conv(m, planes, planes, 3, name);
                g_snprintf(name, sizeof name, "layer%d.%d.bn2", layer + 1, i);
                blk->bn[1] = frozen_bn(m, planes, name);
            } else {
                blk->n_convs = 3;
                const int64_t kernels[3] = {1, 3, 1};
                const int64_t outs[3] = {planes, planes, planes * 4}, ins[3] = {inplanes, planes, planes};
                for (int j = 0; j < 3; j++) {
                    g_snprintf(name, sizeof name, "layer%d.%d.conv%d", layer + 1, i, j + 1);
                    blk->conv[j] = conv(m, outs[j], ins[j], kernels[j], name);
                    g_snprintf(name, sizeof name, "layer%d.%d.bn%d", layer + 1, i, j + 1);
                    blk->bn[j] = frozen_bn(m, outs[j], name);
                }
            }
            if (i == 0 && (stride != 1 || inplanes != planes * expansion)) {
                g_snprintf(name, sizeof name, "layer%d.0.downsample.0", layer + 1);
                blk->down_conv = conv(m, planes * expansion, inplanes, 1, name);
                g_snprintf(name, sizeof name, "layer%d.0.downsample.1", layer + 1);
                blk->down_bn = frozen_bn(m, planes * expansion, name);
                blk->down_stride = stride;
            }
            inplanes = planes * expansion;
        }
    }
}

static rt_tensor *bn(act_model *m, rt_tensor *x, const act_bn *p)
{
    return rt_frozen_batch_norm(m->g, x, p->weight, p->bias, p->running_mean, p->running_var, BN_EPS);
}

static rt_tensor *block_forward(act_model *m, const act_block *blk, rt_tensor *x)
{
    rt_graph *g = m->g;
    rt_tensor *y;
    if (blk->n_convs == 2) { /* BasicBlock: conv3x3(stride) bn relu conv3x3 bn */
        y = rt_relu(g, bn(m, rt_conv2d(g, x, blk->conv[0], NULL, blk->stride, blk->stride, 1, 1, 1, 1),
                          &blk->bn[0]));
        y = bn(m, rt_conv2d(g, y, blk->conv[1], NULL, 1, 1, 1, 1, 1, 1), &blk->bn[1]);
    } else { /* Bottleneck: conv1x1 bn relu conv3x3(stride, dilation) bn relu conv1x1 bn */
        int d = blk->dilation;
        y = rt_relu(g, bn(m, rt_conv2d(g, x, blk->conv[0], NULL, 1, 1, 0, 0, 1, 1), &blk->bn[0]));
        y = rt_relu(g, bn(m, rt_conv2d(g, y, blk->conv[1], NULL, blk->stride, blk->stride, d, d, d, d),
                          &blk->bn[1]));
        y = bn(m, rt_conv2d(g, y, blk->conv[2], NULL, 1, 1, 0, 0, 1, 1), &blk->bn[2]);
    }
    rt_tensor *identity = x;
    if (blk->down_conv)
        identity = bn(m, rt_conv2d(g, x, blk->down_conv, NULL, blk->down_stride, blk->down_stride, 0, 0, 1, 1),
                      &blk->down_bn);
    return rt_relu(g, rt_add(g, y, identity));
}

rt_tensor *act_backbone_forward(act_model *m, rt_tensor *x)
{
    rt_graph *g = m->g;
    const act_backbone *b = &m->backbone;
    x = rt_relu(g, bn(m, rt_conv2d(g, x, b->conv1, NULL, 2, 2, 3, 3, 1, 1), &b->bn1));
    x = rt_max_pool2d(g, x, 3, 2, 1);
    for (int k = 0; k < b->n_blocks; k++)
        x = block_forward(m, &b->blocks[k], x);
    return x;
}

static int64_t conv_out(int64_t n, int k, int stride, int pad, int dilation)
{
    return (n + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
}

void act_backbone_output_size(const act_config *c, int64_t h, int64_t w, int64_t *oh, int64_t *ow)
{
    /* conv1 7x7/2 pad 3, max-pool 3x3/2 pad 1, then stride 2 at layers 2, 3 and (without dilation) 4;
     * the downsampling convolutions are 1x1 with the same stride, pad 0 */
    int64_t s[2] = {h, w};
    for (int a = 0; a < 2; a++) {
        s[a] = conv_out(s[a], 7, 2, 3, 1);
        s[a] = conv_out(s[a], 3, 2, 1, 1);
        for (int layer = 1; layer < 4; layer++)
            if (!(layer == 3 && c->dilation))
                s[a] = conv_out(s[a], 3, 2, 1, 1);
    }
    *oh = s[0];
    *ow = s[1];
}
