/* robotrain/ops.h: the operations a policy builds its forward pass from.
 *
 * Every constructor records a node in g and returns its result tensor; nothing is computed
 * until rt_graph_compute(). On a bad argument it returns NULL and keeps the error in the graph
 * (see robotrain/graph.h); a NULL input makes it return NULL. Shapes follow PyTorch: the last
 * axis is the fastest, binary ops broadcast like NumPy, negative axes count from the end.
 * Float ops take f32 or f64 tensors (the same dtype for all float inputs). Gradients exist for
 * every float input except where noted; integer and boolean inputs get none.
 *
 * The op ids and their inline parameters (rt_node.ip/.fp) are what a backend reads. */
#ifndef ROBOTRAIN_OPS_H
#define ROBOTRAIN_OPS_H

#include <stdint.h>

#include <glib.h>

#include <robotrain/graph.h>
#include <robotrain/tensor.h>

G_BEGIN_DECLS

/* Op ids. In brackets: inputs -> outputs; ip[]/fp[] meaning. "cd" = compute dtype (rt_dtype). */
typedef enum {
    RT_OP_FILL,          /* () -> y; fp0 value */
    RT_OP_CAST,          /* (x) -> y of dtype ip0 */
    RT_OP_CONTIGUOUS,    /* (x) -> dense copy of a view */
    RT_OP_RESHAPE,       /* view (x contiguous) */
    RT_OP_PERMUTE,       /* view; ip0..ip(n-1) = source axis of each output axis */
    RT_OP_SLICE,         /* view; ip0 axis, ip1 start, ip2 length */
    RT_OP_EXPAND,        /* view with stride 0 on broadcast axes */
    RT_OP_PAD,           /* (x) -> zeros around x; ip0 axis, ip1 before, ip2 after */
    RT_OP_CONCAT,        /* (x0..xn) -> y; ip0 axis */
    RT_OP_ADD,           /* (a, b) -> a + b, broadcasting */
    RT_OP_SUB,
    RT_OP_MUL,
    RT_OP_DIV,
    RT_OP_SCALE,         /* (x) -> fp0 * x + fp1 */
    RT_OP_RELU,
    RT_OP_RELU_BACKWARD, /* (dy, y) -> dx */
    RT_OP_GELU,          /* exact (erf) GELU, PyTorch's default */
    RT_OP_GELU_BACKWARD, /* (dy, x) -> dx */
    RT_OP_EXP,
    RT_OP_GLU,           /* (x) -> first half * sigmoid(second half) along axis ip0 */
    RT_OP_GLU_BACKWARD,  /* (dy, x) -> dx; ip0 axis */
    RT_OP_SUM,           /* (x) -> fp0 * sum over the axes in bit mask ip0; ip1 keepdim */
    RT_OP_MATMUL,        /* (a[...,M,K], b[...,K,N]) -> [...,M,N]; ip0 trans_a, ip1 trans_b, ip2 cd */
    RT_OP_LINEAR,        /* (x[...,K], w[N,K], b[N]?) -> x w^T + b; ip2 cd */
    RT_OP_CONV2D,        /* (x NCHW, w OIHW, b?) -> y; ip0-5 stride h/w, pad h/w, dilation h/w; ip6 cd */
    RT_OP_CONV2D_BACKWARD_DATA,   /* (dy, w) -> dx; ip as conv2d, ip7-10 input n,c,h,w */
    RT_OP_CONV2D_BACKWARD_WEIGHT, /* (x, dy) -> dw; ip as conv2d, ip7-8 kernel h,w */
    RT_OP_FROZEN_BATCH_NORM,      /* (x, weight, bias?, mean?, var) -> per channel (axis 1)
                                     affine; fp0 eps. weight..var get no gradient */
    RT_OP_MAX_POOL2D,             /* (x) -> y, argmax (i32); ip0 kernel, ip1 stride, ip2 pad */
    RT_OP_MAX_POOL2D_BACKWARD,    /* (dy, argmax) -> dx; ip3-6 input n,c,h,w */
    RT_OP_LAYER_NORM,             /* (x, w?, b?) -> y, stats[rows,2] (mean, 1/std); fp0 eps */
    RT_OP_LAYER_NORM_BACKWARD,    /* (dy, x, w?, stats) -> dx, dw?, db?; ip0 has bias */
    RT_OP_SOFTMAX,                /* over the last axis */
    RT_OP_SOFTMAX_BACKWARD,       /* (dy, y) -> dx */
    RT_OP_ATTENTION,              /* (q, k, v, key_padding_mask?, rng?) -> out, probs[B,H,L,S];
                                     ip0 heads, ip1 batch_first, ip2 cd, ip3 rng id;
                                     fp0 dropout p, fp1 logit scale */
    RT_OP_ATTENTION_BACKWARD,     /* (dout, q, k, v, probs, rng?) -> dq, dk, dv; ip/fp as forward */
    RT_OP_EMBEDDING,              /* (weight[N,D], idx i64[...]) -> [..., D] */
    RT_OP_EMBEDDING_BACKWARD,     /* (dy, idx) -> dweight[N, D]; ip0 N */
    RT_OP_DROPOUT,                /* (x, rng) -> y; fp0 p; ip0 rng id, ip1 batch axis */
    RT_OP_RAND_UNIFORM,           /* (rng) -> U(fp0, fp1); ip0 rng id, ip1 batch axis */
    RT_OP_RAND_NORMAL,            /* (rng) -> N(fp0, fp1^2); ip0 rng id, ip1 batch axis */
    RT_OP_L1_LOSS,                /* (pred, target, pad_mask?) -> scalar; ip0 rt_l1_reduction */
    RT_OP_L1_LOSS_BACKWARD,       /* (dloss, pred, target, pad_mask?) -> dpred */
    RT_OP_KL_LOSS,                /* (mu[B,...], logvar) -> scalar */
    RT_OP_KL_LOSS_BACKWARD,       /* (dloss, mu, logvar) -> dmu, dlogvar */
    RT_OP_STEP_INC,               /* (step f64[1]) -> step += 1, in place */
    RT_OP_GRAD_NORM,              /* (grads flat) -> L2 norm f32 scalar */
    RT_OP_CLIP_GRAD,              /* (grads flat, norm, hyper) -> grads scaled in place */
    RT_OP_ADAMW,                  /* (param, grad, m, v, hyper, step, scaler?) -> updated in
                                     place; ip0 group index into hyper. With the scaler state
                                     (robotrain/loss-scale.h): nothing when its found-inf is set
                                     (step_inc likewise: (step, scaler?)) */
    RT_OP_AMP_UNSCALE,            /* (grads flat, scaler f64[4]) -> found-inf = any non-finite
                                     grad, then grads *= 1/scale, in place */
    RT_OP_AMP_UPDATE,             /* (scaler) -> GradScaler.update() in place; ip0 growth
                                     interval; fp0 growth, fp1 backoff factor */
    RT_OP_ALLREDUCE,              /* (grads) -> averaged over the processes of the run, in place,
                                     by the graph's collective (rt_graph_set_collective);
                                     ip0 bucket index */
    RT_OP_COUNT
} rt_op;

/* "add", "layer_norm", ...; NULL for a bad id. */
const char *rt_op_name(rt_op op);
/* Number of ops in the table (RT_OP_COUNT). */
int rt_op_count(void);
/* TRUE when the op's output aliases its input (nothing to compute). */
gboolean rt_op_is_view(rt_op op);
/* TRUE when gradients flow through the op to at least one of its inputs. */
gboolean rt_op_is_differentiable(rt_op op);

/* Axis masks for rt_sum/rt_mean: bit i = axis i. */
#define RT_AXIS(i) (1u << (i))
#define RT_ALL_AXES 0xffffffffu

/* ---- element-wise, broadcasting */
rt_tensor *rt_add(rt_graph *g, rt_tensor *a, rt_tensor *b);
rt_tensor *rt_sub(rt_graph *g, rt_tensor *a, rt_tensor *b);
rt_tensor *rt_mul(rt_graph *g, rt_tensor *a, rt_tensor *b);
rt_tensor *rt_div(rt_graph *g, rt_tensor *a, rt_tensor *b);
/* s * x + c */
rt_tensor *rt_scale(rt_graph *g, rt_tensor *x, double s, double c);
rt_tensor *rt_relu(rt_graph *g, rt_tensor *x);
rt_tensor *rt_gelu(rt_graph *g, rt_tensor *x);
rt_tensor *rt_exp(rt_graph *g, rt_tensor *x);
/* PyTorch's F.glu: halves a, b of axis; a * sigmoid(b). */
rt_tensor *rt_glu(rt_graph *g, rt_tensor *x, int axis);
/* Converts between any dtypes (floats round to nearest even; to bool: x != 0). Gradients flow
 * between float dtypes. */
rt_tensor *rt_cast(rt_graph *g, rt_tensor *x, rt_dtype dtype);
/* A tensor of the given shape filled with value. */
rt_tensor *rt_fill(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape, double value);

/* ---- reductions */
rt_tensor *rt_sum(rt_graph *g, rt_tensor *x, uint32_t axes, gboolean keepdim);
rt_tensor *rt_mean(rt_graph *g, rt_tensor *x, uint32_t axes, gboolean keepdim);

/* ---- shapes: reshape, permute, transpose, slice and expand are views (no copy) */
/* One entry of shape may be -1 (inferred). */
rt_tensor *rt_reshape(rt_graph *g, rt_tensor *x, int ndim, const int64_t *shape);
/* Output axis i is input axis perm[i]. */
rt_tensor *rt_permute(rt_graph *g, rt_tensor *x, const int *perm);
rt_tensor *rt_transpose(rt_graph *g, rt_tensor *x, int axis0, int axis1);
/* Elements start..start+length-1 of axis. */
rt_tensor *rt_slice(rt_graph *g, rt_tensor *x, int axis, int64_t start, int64_t length);
/* Broadcast to shape (size-1 axes and new leading axes repeat). */
rt_tensor *rt_expand(rt_graph *g, rt_tensor *x, int ndim, const int64_t *shape);
/* Zeros before and after x along axis. */
rt_tensor *rt_pad(rt_graph *g, rt_tensor *x, int axis, int64_t before, int64_t after);
/* Joins n (<= RT_MAX_SRC) tensors along axis. */
rt_tensor *rt_concat(rt_graph *g, rt_tensor *const *xs, int n, int axis);
rt_tensor *rt_contiguous(rt_graph *g, rt_tensor *x);

/* ---- linear algebra and convolution (rounded to the graph's compute dtype) */
/* op(a) @ op(b) with op = transpose of the last two axes when asked. Leading (batch) axes of
 * a and b must be equal, or b is 2-D and shared. */
rt_tensor *rt_matmul(rt_graph *g, rt_tensor *a, rt_tensor *b, gboolean trans_a,
                     gboolean trans_b);
/* nn.Linear: x[..., in] @ weight[out, in]^T + bias[out] (bias may be NULL). */
rt_tensor *rt_linear(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias);
/* nn.Conv2d (groups 1): x[N,C,H,W], weight[O,C,kh,kw], bias[O] or NULL. */
rt_tensor *rt_conv2d(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias,
                     int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w);
/* FrozenBatchNorm2d: x * scale + shift per channel (axis 1), scale = weight * (var + eps)^-1/2,
 * shift = bias - mean * scale. The four statistics get no gradient. */
rt_tensor *rt_frozen_batch_norm(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias,
                                rt_tensor *running_mean, rt_tensor *running_var, double eps);
/* nn.MaxPool2d(kernel, stride, padding) on NCHW. */
rt_tensor *rt_max_pool2d(rt_graph *g, rt_tensor *x, int kernel, int stride, int pad);

/* ---- normalisation, attention */
/* nn.LayerNorm over the last axis; weight, bias [D] or NULL. */
rt_tensor *rt_layer_norm(rt_graph *g, rt_tensor *x, rt_tensor *weight, rt_tensor *bias,
                         double eps);
rt_tensor *rt_softmax(rt_graph *g, rt_tensor *x);
/* Scaled dot-product attention over heads, on projected inputs: q[L,B,E], k and v [S,B,E]
 * (batch_first: [B,L,E], [B,S,E]); head h uses channels h*E/heads..; logits scaled by
 * 1/sqrt(E/heads); key_padding_mask bool [B,S] (TRUE = ignore that key) or NULL; dropout on
 * the probabilities (training graphs only). Returns the heads' outputs concatenated, q's shape. */
rt_tensor *rt_attention(rt_graph *g, rt_tensor *q, rt_tensor *k, rt_tensor *v,
                        rt_tensor *key_padding_mask, int n_heads, double dropout_p,
                        gboolean batch_first);

/* The weights of one nn.MultiheadAttention: in_proj_weight [3E, E] packs W_q; W_k; W_v,
 * in_proj_bias [3E] likewise, out_proj [E, E] and [E]; biases may be NULL. */
typedef struct rt_mha_weights {
    rt_tensor *in_proj_weight;
    rt_tensor *in_proj_bias;
    rt_tensor *out_proj_weight;
    rt_tensor *out_proj_bias;
} rt_mha_weights;

/* nn.MultiheadAttention(E, n_heads, dropout)(query, key, value, key_padding_mask)[0], sequence
 * first (query [L,B,E], key/value [S,B,E]). */
rt_tensor *rt_multihead_attention(rt_graph *g, const rt_mha_weights *w, rt_tensor *query,
                                  rt_tensor *key, rt_tensor *value,
                                  rt_tensor *key_padding_mask, int n_heads, double dropout_p);
/* Rows of weight[N, D] picked by i64 indices[...] -> [..., D]. */
rt_tensor *rt_embedding(rt_graph *g, rt_tensor *weight, rt_tensor *indices);

/* ---- randomness (counter-based; see rt_graph_set_rng) */
/* Zeroes each element with probability p and scales the rest by 1/(1-p); the identity in
 * graphs without RT_GRAPH_TRAIN or with p = 0. */
rt_tensor *rt_dropout(rt_graph *g, rt_tensor *x, double p);
/* batch_axis: as for rt_input (-1: none). */
rt_tensor *rt_rand_uniform(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape,
                           int batch_axis, double lo, double hi);
rt_tensor *rt_rand_normal(rt_graph *g, rt_dtype dtype, int ndim, const int64_t *shape,
                          int batch_axis, double mean, double std);
/* N(0, 1) with x's shape, dtype and batch axis (torch.randn_like). */
rt_tensor *rt_randn_like(rt_graph *g, rt_tensor *x);

/* ---- losses (scalar results) */
typedef enum {
    RT_L1_MEAN_ALL = 0,   /* sum of masked |pred - target| / numel (LeRobot <= 0.5) */
    RT_L1_MEAN_VALID = 1, /* sum / max(1, valid elements) (LeRobot >= 0.6) */
} rt_l1_reduction;

/* pad_mask (bool) has the leading axes of pred (e.g. [B,T] for pred [B,T,A]) and marks the
 * elements to ignore (TRUE = padding); NULL: none. target gets a gradient too. */
rt_tensor *rt_masked_l1_loss(rt_graph *g, rt_tensor *pred, rt_tensor *target,
                             rt_tensor *pad_mask, rt_l1_reduction reduction);
/* The VAE KL term: mean over axis 0 of the sum over the other axes of
 * -0.5 * (1 + logvar - mu^2 - exp(logvar)). */
rt_tensor *rt_kl_loss(rt_graph *g, rt_tensor *mu, rt_tensor *logvar);

G_END_DECLS

#endif
