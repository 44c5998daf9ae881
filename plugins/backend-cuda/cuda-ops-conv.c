/* plugins/backend-cuda/cuda-ops-conv.c: conv2d forward, backward data and backward weight
 * through cuDNN's convolution API (NCHW, f32, groups 1, PyTorch's cross-correlation).
 *
 * Algorithms are chosen once per shape, when the memory is planned (node_workspace_size), from
 * cuDNN's heuristics: the first deterministic one that fits in 1 GiB; the choice is kept per
 * device and reused by every graph of that shape. Math: full f32 FMA (CUDNN_FMA_MATH) unless
 * TF32 is allowed. Mixed precision: inputs rounded to bf16/f16 values in f32 storage, then TF32
 * tensor cores, which hold bf16 and f16 values exactly and accumulate in f32: the CPU's "round
 * the inputs, f32 convolution" (backend-cpu-nn.c) at tensor-core speed. The planner does not
 * tell node_workspace_size whether the graph allows TF32, so it reserves the larger of both
 * choices. */
#include "config.h"

#include <limits.h>
#include <string.h>

#include <robotrain/error.h>

#include "cuda-error.h"
#include "cuda-exec.h"

#ifdef HAVE_CUDNN

/* 1 GiB: more than any convolution of the ResNet backbones needs */
#define CONV_MAX_WORKSPACE ((size_t)1 << 30)

typedef struct conv_shape {
    int n, c, h, w; /* input */
    int o, kh, kw;  /* weight */
    int ho, wo;     /* output */
    int sh, sw, ph, pw, dh, dw;
} conv_shape;

/* the key of a choice: no padding bytes, so memcmp and hashing see only the values */
typedef struct conv_key {
    int32_t op, tf32;
    conv_shape s;
} conv_key;

typedef struct conv_choice {
    int algo; /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
    size_t bytes;
    cudnnMathType_t math;
} conv_choice;

static gboolean fits_int(int64_t v)
{
    return v >= 0 && v <= INT_MAX;
}

/* the convolution of each of the three nodes, as node_conv_shape in backend-cpu-nn.c */
static gboolean shape_of(const rt_node *node, conv_shape *s)
{
    const int64_t *x, *ks;
    int64_t c_out, kh, kw, in[4];
    switch ((rt_op)node->op) {
    case RT_OP_CONV2D:
        x = node->src[0]->shape;
        ks = node->src[1]->shape;
        c_out = ks[0];
        kh = ks[2];
        kw = ks[3];
        break;
    case RT_OP_CONV2D_BACKWARD_DATA:
        x = node->ip + 7;
        ks = node->src[1]->shape;
        c_out = ks[0];
        kh = ks[2];
        kw = ks[3];
        break;
    default:
        x = node->src[0]->shape;
        c_out = node->src[1]->shape[1];
        kh = node->ip[7];
        kw = node->ip[8];
        break;
    }
    memcpy(in, x, sizeof in);
    int64_t eh = node->ip[4] * (kh - 1) + 1, ew = node->ip[5] * (kw - 1) + 1;
    int64_t ho = (in[2] + 2 * node->ip[2] - eh) / node->ip[0] + 1;
    int64_t wo = (in[3] + 2 * node->ip[3] - ew) / node->ip[1] + 1;
    int64_t v[15] = {in[0], in[1],       in[2],       in[3],       c_out,       kh,          kw,         ho,
                     wo,    node->ip[0], node->ip[1], node->ip[2], node->ip[3], node->ip[4], node->ip[5]};
    for (int i = 0; i < 15; i++)
        if (!fits_int(v[i]))
            return FALSE;
    /* cuDNN indexes with int: every tensor must have fewer than 2^31 elements */
    if (in[0] * in[1] * in[2] * in[3] > INT_MAX || c_out * in[1] * kh * kw > INT_MAX ||
        in[0] * c_out * ho * wo > INT_MAX)
        return FALSE;
    memset(s, 0, sizeof *s);
    s->n = (int)in[0];
    s->c = (int)in[1];
    s->h = (int)in[2];
    s->w = (int)in[3];
    s->o = (int)c_out;
    s->kh = (int)kh;
    s->kw = (int)kw;
    s->ho = (int)ho;
    s->wo = (int)wo;
    s->sh = (int)node->ip[0];
    s->sw = (int)node->ip[1];
    s->ph = (int)node->ip[2];
    s->pw = (int)node->ip[3];
    s->dh = (int)node->ip[4];
    s->dw = (int)node->ip[5];
    return TRUE;
}

static gboolean conv_supports(const rt_node *node)
{
    conv_shape s;
    return node->src[0]->dtype == RT_F32 && node->src[1]->dtype == RT_F32 && shape_of(node, &s);
}

typedef struct conv_descs {
    cudnnTensorDescriptor_t x, y, bias;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} conv_descs;

static void descs_free(conv_descs *d)
{
    if (d->x)
        cudnnDestroyTensorDescriptor(d->x);
    if (d->y)
        cudnnDestroyTensorDescriptor(d->y);
    if (d->bias)
        cudnnDestroyTensorDescriptor(d->bias);
    if (d->w)
        cudnnDestroyFilterDescriptor(d->w);
    if (d->conv)
        cudnnDestroyConvolutionDescriptor(d->conv);
    memset(d, 0, sizeof *d);
}

static gboolean descs_make(const conv_shape *s, gboolean bias, cudnnMathType_t math, conv_descs *d,
                           const char *what, GError **error)
{
    memset(d, 0, sizeof *d);
    if (!rt_cudnn_check(cudnnCreateTensorDescriptor(&d->x), error, "%s: cudnnCreateTensorDescriptor", what) ||
        !rt_cudnn_check(cudnnCreateTensorDescriptor(&d->y), error, "%s: cudnnCreateTensorDescriptor", what) ||
        !rt_cudnn_check(cudnnCreateFilterDescriptor(&d->w), error, "%s: cudnnCreateFilterDescriptor", what) ||
        !rt_cudnn_check(cudnnCreateConvolutionDescriptor(&d->conv), error,
                        "%s: cudnnCreateConvolutionDescriptor", what) ||
        !rt_cudnn_check(
            cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->n, s->c, s->h, s->w),
            error, "%s: describing the input", what) ||
        !rt_cudnn_check(
            cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->n, s->o, s->ho, s->wo),
            error, "%s: describing the output", what) ||
        !rt_cudnn_check(
            cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s->o, s->c, s->kh, s->kw),
            error, "%s: describing the weight", what) ||
        !rt_cudnn_check(cudnnSetConvolution2dDescriptor(d->conv, s->ph, s->pw, s->sh, s->sw, s->dh, s->dw,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                        error, "%s: describing the convolution", what) ||
        !rt_cudnn_check(cudnnSetConvolutionMathType(d->conv, math), error, "%s: setting the math type", what))
        goto fail;
    if (bias && (!rt_cudnn_check(cudnnCreateTensorDescriptor(&d->bias), error,
                                 "%s: cudnnCreateTensorDescriptor", what) ||
                 !rt_cudnn_check(
                     cudnnSetTensor4dDescriptor(d->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, s->o, 1, 1),
                     error, "%s: describing the bias", what)))
        goto fail;
    return TRUE;
fail:
    descs_free(d);
    return FALSE;
}

/* acceptable math for a result: never a down-conversion to f16; tensor ops only with TF32 */
static gboolean math_ok(cudnnMathType_t math, gboolean tf32)
{
    if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        return FALSE;
    return tf32 || math == CUDNN_FMA_MATH;
}

/* the first deterministic result that fits, else the first that fits */
#define PICK(results, n, tf32, out)                                                                          \
    do {                                                                                                     \
        int pick_ = -1;                                                                                      \
        for (int pass_ = 0; pass_ < 2 && pick_ < 0; pass_++)                                                 \
            for (int i_ = 0; i_ < (n) && pick_ < 0; i_++)                                                    \
                if ((results)[i_].status == CUDNN_STATUS_SUCCESS &&                                          \
                    (results)[i_].memory <= CONV_MAX_WORKSPACE && math_ok((results)[i_].mathType, (tf32)) && \
                    (pass_ == 1 || (results)[i_].determinism == CUDNN_DETERMINISTIC))                        \
                    pick_ = i_;                                                                              \
        if (pick_ >= 0) {                                                                                    \
            (out)->algo = (int)(results)[pick_].algo;                                                        \
            (out)->bytes = (results)[pick_].memory;                                                          \
            (out)->math = (results)[pick_].mathType;                                                         \
        }                                                                                                    \
        found = pick_ >= 0;                                                                                  \
    } while (0)

static gboolean choose(rt_backend_device *dev, const conv_key *key, conv_choice *out, GError **error)
{
    char what[96];
    g_snprintf(what, sizeof what, "cuda:%d: choosing the cuDNN algorithm of a %s", dev->index,
               rt_op_name((rt_op)key->op));
    conv_descs d;
    cudnnMathType_t math = key->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    if (!descs_make(&key->s, FALSE, math, &d, what, error))
        return FALSE;
    gboolean ok = FALSE, found = FALSE;
    int n = 0;
    if (key->op == RT_OP_CONV2D) {
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        ok = rt_cudnn_check(cudnnGetConvolutionForwardAlgorithm_v7(dev->dnn, d.x, d.w, d.conv, d.y,
                                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, r),
                            error, "%s", what);
        if (ok)
            PICK(r, n, key->tf32, out);
    } else if (key->op == RT_OP_CONV2D_BACKWARD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        ok =
            rt_cudnn_check(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                               dev->dnn, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, r),
                           error, "%s", what);
        if (ok)
            PICK(r, n, key->tf32, out);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        ok = rt_cudnn_check(
            cudnnGetConvolutionBackwardFilterAlgorithm_v7(dev->dnn, d.x, d.y, d.conv, d.w,
                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, r),
            error, "%s", what);
        if (ok)
            PICK(r, n, key->tf32, out);
    }
    descs_free(&d);
    if (ok && !found) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "%s: none of cuDNN's %d algorithms for input [%d,%d,%d,%d], weight [%d,%d,%d,%d] "
                    "works within %zu bytes of scratch memory; try --policy.device=cpu and report it",
                    what, n, key->s.n, key->s.c, key->s.h, key->s.w, key->s.o, key->s.c, key->s.kh, key->s.kw,
                    CONV_MAX_WORKSPACE);
        ok = FALSE;
    }
    return ok;
}

static guint key_hash(gconstpointer p)
{
    const guint8 *b = p;
    guint h = 2166136261u;
    for (size_t i = 0; i < sizeof(conv_key); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(conv_key)) == 0;
}

/* the choice for key, made once per device */
static const conv_choice *choice_for(rt_backend_device *dev, const conv_key *key, GError **error)
{
    if (!dev->conv_choices)
        dev->conv_choices = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
    conv_choice *c = g_hash_table_lookup(dev->conv_choices, key);
    if (c)
        return c;
    conv_choice found;
    if (!rt_cuda_make_current(dev, error) || !choose(dev, key, &found, error))
        return NULL;
    c = g_memdup2(&found, sizeof found);
    g_hash_table_insert(dev->conv_choices, g_memdup2(key, sizeof *key), c);
    return c;
}

static void key_of(const rt_node *node, gboolean tf32, conv_key *key)
{
    memset(key, 0, sizeof *key);
    key->op = node->op;
    key->tf32 = tf32;
    shape_of(node, &key->s);
}

static gboolean rounds(const rt_node *node)
{
    return rt_cuda_rounds(node, 6);
}

/* the two inputs a node rounds: (x, w), (dy, w) or (x, dy) */
static size_t rounded_bytes(const rt_node *node, int i)
{
    return rounds(node) ? rt_cuda_align((size_t)rt_tensor_numel(node->src[i]) * sizeof(float)) : 0;
}

static size_t conv_workspace(rt_backend_device *dev, const rt_node *node)
{
    conv_key key;
    size_t bytes = 0;
    /* rounded inputs always run with TF32; otherwise the graph decides, unknown here */
    for (int tf32 = rounds(node) ? 1 : 0; tf32 < 2; tf32++) {
        key_of(node, tf32, &key);
        GError *error = NULL;
        const conv_choice *c = choice_for(dev, &key, &error);
        if (!c) { /* graph_prepare asks again and reports it */
            g_debug("%s", error->message);
            g_error_free(error);
            continue;
        }
        bytes = MAX(bytes, c->bytes);
    }
    return rounded_bytes(node, 0) + rounded_bytes(node, 1) + rt_cuda_align(bytes);
}

typedef struct conv_priv {
    conv_descs d;
    conv_choice choice;
    uint8_t *rounded[2];
    uint8_t *scratch;
} conv_priv;

static void conv_release(void *p)
{
    conv_priv *c = p;
    if (!c)
        return;
    descs_free(&c->d);
    g_free(c);
}

static gboolean conv_prepare(rt_cuda_ctx *ctx, const rt_node *node, void **priv, GError **error)
{
    char label[96];
    rt_cuda_node_label(ctx, node, label, sizeof label);
    conv_key key;
    key_of(node, rounds(node) || ctx->tf32, &key);
    const conv_choice *choice = choice_for(ctx->dev, &key, error);
    if (!choice)
        return FALSE;
    size_t need = rounded_bytes(node, 0) + rounded_bytes(node, 1) + rt_cuda_align(choice->bytes);
    if (need > node->workspace_size) {
        g_set_error(error, RT_ERROR, RT_ERROR_DEVICE,
                    "%s: its cuDNN algorithm needs %zu bytes of scratch memory but %zu were planned: this "
                    "is a bug, please report it",
                    label, need, node->workspace_size);
        return FALSE;
    }
    conv_priv *c = g_new0(conv_priv, 1);
    c->choice = *choice;
    if (!descs_make(&key.s, node->op == RT_OP_CONV2D && node->src[2], choice->math, &c->d, label, error)) {
        g_free(c);
        return FALSE;
    }
    uint8_t *ws = rt_cuda_ws(ctx, node);
    if (rounds(node)) {
        c->rounded[0] = ws;
        ws += rounded_bytes(node, 0);
        c->rounded[1] = ws;
        ws += rounded_bytes(node, 1);
    }
    c->scratch = choice->bytes ? ws : NULL;
    *priv = c;
    return TRUE;
}

static gboolean conv_run(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    conv_priv *c = priv;
    char label[96];
    rt_cuda_node_label(ctx, node, label, sizeof label);
    const void *in[2];
    for (int i = 0; i < 2; i++) {
        in[i] = rt_cuda_ptr(ctx, node->src[i]);
        if (c->rounded[i]) {
            if (!rt_cuda_launched(ctx, node,
                                  rt_cuda_round(RT_F32, (int)node->ip[6], rt_tensor_numel(node->src[i]),
                                                in[i], c->rounded[i], ctx->stream),
                                  error))
                return FALSE;
            in[i] = c->rounded[i];
        }
    }
    const float one = 1.0f, zero = 0.0f;
    void *out = rt_cuda_ptr(ctx, node->out[0]);
    cudnnHandle_t h = ctx->dev->dnn;
    switch ((rt_op)node->op) {
    case RT_OP_CONV2D:
        if (!rt_cudnn_check(cudnnConvolutionForward(h, &one, c->d.x, in[0], c->d.w, in[1], c->d.conv,
                                                    (cudnnConvolutionFwdAlgo_t)c->choice.algo, c->scratch,
                                                    c->choice.bytes, &zero, c->d.y, out),
                            error, "%s: cudnnConvolutionForward", label))
            return FALSE;
        if (node->src[2])
            return rt_cudnn_check(
                cudnnAddTensor(h, &one, c->d.bias, rt_cuda_ptr(ctx, node->src[2]), &one, c->d.y, out), error,
                "%s: adding the bias (cudnnAddTensor)", label);
        return TRUE;
    case RT_OP_CONV2D_BACKWARD_DATA: /* (dy, w) -> dx */
        return rt_cudnn_check(cudnnConvolutionBackwardData(h, &one, c->d.w, in[1], c->d.y, in[0], c->d.conv,
                                                           (cudnnConvolutionBwdDataAlgo_t)c->choice.algo,
                                                           c->scratch, c->choice.bytes, &zero, c->d.x, out),
                              error, "%s: cudnnConvolutionBackwardData", label);
    default: /* (x, dy) -> dw */
        return rt_cudnn_check(cudnnConvolutionBackwardFilter(h, &one, c->d.x, in[0], c->d.y, in[1], c->d.conv,
                                                             (cudnnConvolutionBwdFilterAlgo_t)c->choice.algo,
                                                             c->scratch, c->choice.bytes, &zero, c->d.w, out),
                              error, "%s: cudnnConvolutionBackwardFilter", label);
    }
}

const rt_cuda_op rt_cuda_op_conv2d = {conv_supports, conv_workspace, conv_prepare, conv_release, conv_run};
const rt_cuda_op rt_cuda_op_conv2d_backward_data = {conv_supports, conv_workspace, conv_prepare, conv_release,
                                                    conv_run};
const rt_cuda_op rt_cuda_op_conv2d_backward_weight = {conv_supports, conv_workspace, conv_prepare,
                                                      conv_release, conv_run};

#else /* built without cuDNN: the backend declines convolutions */

const rt_cuda_op rt_cuda_op_conv2d = {NULL, NULL, NULL, NULL, NULL};
const rt_cuda_op rt_cuda_op_conv2d_backward_data = {NULL, NULL, NULL, NULL, NULL};
const rt_cuda_op rt_cuda_op_conv2d_backward_weight = {NULL, NULL, NULL, NULL, NULL};

#endif
