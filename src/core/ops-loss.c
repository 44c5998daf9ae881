/* Losses: masked L1 and the VAE KL term, fused with hand-written backward passes. */
#include "config.h"

#include "core/ops-common.h"
#include "core/ops-decl.h"

/* ---- masked L1: (pred, target, pad_mask?) -> scalar; ip0 rt_l1_reduction */

rt_tensor *rt_masked_l1_loss(rt_graph *g, rt_tensor *pred, rt_tensor *target, rt_tensor *pad_mask,
                             rt_l1_reduction reduction)
{
    rt_tensor *src[3] = {pred, target, pad_mask};
    int64_t ip[1] = {reduction};
    return rt_node_make1(g, RT_OP_L1_LOSS, src, 3, ip, 1, NULL, 0);
}

static bool check_mask(rt_graph *g, rt_node *node, const rt_tensor *pred, const rt_tensor *mask)
{
    bool ok = (mask->dtype == RT_BOOL || mask->dtype == RT_U8) && mask->ndim <= pred->ndim;
    for (int i = 0; ok && i < mask->ndim; i++)
        ok = mask->shape[i] == pred->shape[i];
    if (!ok) {
        char dp[80], dm[80];
        rt_graph_fail(g, node, "pad_mask is %s and pred %s: the mask is bool with pred's leading "
                      "axes", RT_DESC(mask, dm), RT_DESC(pred, dp));
    }
    return ok;
}

bool op_infer_l1_loss(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "pred") || !rt_need_float(g, node, 1, "target") ||
        !rt_need_same_dtype(g, node, 0, 1, "pred", "target"))
        return false;
    rt_tensor *pred = node->src[0], *target = node->src[1];
    if (!rt_shape_equal(pred, target)) {
        char dp[80], dt[80];
        rt_graph_fail(g, node, "pred is %s but target is %s: they must have one shape",
                      RT_DESC(pred, dp), RT_DESC(target, dt));
        return false;
    }
    if (node->src[2] && !check_mask(g, node, pred, node->src[2]))
        return false;
    if (node->ip[0] != RT_L1_MEAN_ALL && node->ip[0] != RT_L1_MEAN_VALID) {
        rt_graph_fail(g, node, "reduction %d is not an rt_l1_reduction", (int)node->ip[0]);
        return false;
    }
    return rt_node_output(g, node, 0, pred->dtype, 0, NULL) != NULL;
}

/* (dloss, pred, target, pad_mask?) -> dpred */
bool op_infer_l1_loss_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dloss") || !rt_need_float(g, node, 1, "pred"))
        return false;
    return infer_like(g, node, node->src[1]);
}

void op_backward_l1_loss(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[4] = {dout[0], node->src[0], node->src[1], node->src[2]};
    rt_tensor *dpred = rt_node_make1(g, RT_OP_L1_LOSS_BACKWARD, src, 4, node->ip, 1, NULL, 0);
    if (rt_ad_needs(ad, node->src[0]))
        rt_ad_add(ad, node->src[0], dpred);
    if (rt_ad_needs(ad, node->src[1]))
        rt_ad_add(ad, node->src[1], rt_scale(g, dpred, -1.0, 0.0));
}

/* ---- KL: (mu, logvar) -> scalar */

rt_tensor *rt_kl_loss(rt_graph *g, rt_tensor *mu, rt_tensor *logvar)
{
    rt_tensor *src[2] = {mu, logvar};
    return rt_node_make1(g, RT_OP_KL_LOSS, src, 2, NULL, 0, NULL, 0);
}

bool op_infer_kl_loss(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "mu") || !rt_need_float(g, node, 1, "logvar") ||
        !rt_need_same_dtype(g, node, 0, 1, "mu", "logvar"))
        return false;
    rt_tensor *mu = node->src[0], *lv = node->src[1];
    if (!rt_shape_equal(mu, lv) || mu->ndim < 1) {
        char dm[80], dl[80];
        rt_graph_fail(g, node, "mu is %s and logvar %s: they need one shape with a batch axis 0",
                      RT_DESC(mu, dm), RT_DESC(lv, dl));
        return false;
    }
    return rt_node_output(g, node, 0, mu->dtype, 0, NULL) != NULL;
}

/* (dloss, mu, logvar) -> dmu, dlogvar */
bool op_infer_kl_loss_backward(rt_graph *g, rt_node *node)
{
    if (!rt_need_float(g, node, 0, "dloss") || !rt_need_float(g, node, 1, "mu") ||
        !rt_need_float(g, node, 2, "logvar"))
        return false;
    rt_tensor *mu = node->src[1];
    return rt_node_output(g, node, 0, mu->dtype, mu->ndim, mu->shape) &&
           rt_node_output(g, node, 1, mu->dtype, mu->ndim, mu->shape);
}

void op_backward_kl_loss(rt_autodiff *ad, rt_graph *g, rt_node *node, rt_tensor *const *dout)
{
    rt_tensor *src[3] = {dout[0], node->src[0], node->src[1]};
    rt_node *bw = rt_node_make(g, RT_OP_KL_LOSS_BACKWARD, src, 3, NULL, 0, NULL, 0);
    if (!bw)
        return;
    if (rt_ad_needs(ad, node->src[0]))
        rt_ad_add(ad, node->src[0], bw->out[0]);
    if (rt_ad_needs(ad, node->src[1]))
        rt_ad_add(ad, node->src[1], bw->out[1]);
}
