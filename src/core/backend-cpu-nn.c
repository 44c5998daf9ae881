/* CPU kernels of matmul, linear, conv2d, frozen batch norm, max-pool, embedding and attention.
 * f32 uses the dense kernels of src/core/cpu/kernels.h (mixed precision: inputs rounded to
 * the compute dtype in the workspace, f32 accumulation); f64 (tests) uses BLAS dgemm and
 * direct loops. GEMMs run on BLAS's threads, the loops between them on the pool's. */
#include "config.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "core/backend-cpu.h"
#include "core/cpu/kernels.h"
#include "core/ops-decl.h"
#include "core/philox.h"

/* ---- GEMM for either float type */

static void gemm_batched(rt_dtype dt, bool ta, bool tb, int64_t batch, int64_t M, int64_t N,
                         int64_t K, double alpha, const void *A, int64_t lda, int64_t sa,
                         const void *B, int64_t ldb, int64_t sb, double beta, void *C,
                         int64_t ldc, int64_t sc)
{
    if (dt == RT_F32) {
        rt_cpu_gemm_batched_f32(ta, tb, batch, M, N, K, (float)alpha, A, lda, sa, B, ldb, sb,
                                (float)beta, C, ldc, sc);
        return;
    }
    for (int64_t i = 0; i < batch; i++)
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)M, (int)N, (int)K, alpha, (const double *)A + i * sa, (int)lda,
                    (const double *)B + i * sb, (int)ldb, beta, (double *)C + i * sc, (int)ldc);
}

static bool rounds(const rt_tensor *t, int64_t cd)
{
    return t->dtype == RT_F32 && (cd == RT_BF16 || cd == RT_F16);
}

/* x, or a copy of it rounded to cd in the workspace at *ws (advanced) */
static const void *rounded(const rt_cpu_ctx *ctx, const rt_tensor *t, int64_t cd, char **ws)
{
    if (!rounds(t, cd))
        return cpu_ptr(ctx, t);
    size_t n = (size_t)rt_tensor_numel(t);
    float *copy = (float *)*ws;
    memcpy(copy, cpu_ptr(ctx, t), n * sizeof(float));
    cpu_round_to(copy, n, cd);
    *ws += (n * sizeof(float) + 63) / 64 * 64;
    return copy;
}

static size_t rounded_size(const rt_tensor *t, int64_t cd)
{
    return rounds(t, cd) ? ((size_t)rt_tensor_numel(t) * sizeof(float) + 63) / 64 * 64 : 0;
}

/* ---- matmul */

size_t cpu_ws_matmul(const rt_node *node)
{
    return rounded_size(node->src[0], node->ip[2]) + rounded_size(node->src[1], node->ip[2]);
}

bool cpu_matmul(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *a = node->src[0], *b = node->src[1], *y = node->out[0];
    bool ta = node->ip[0], tb = node->ip[1];
    int64_t cd = node->ip[2];
    char *ws = cpu_workspace(ctx, node);
    const void *A = rounded(ctx, a, cd, &ws), *B = rounded(ctx, b, cd, &ws);
    int64_t M = y->shape[y->ndim - 2], N = y->shape[y->ndim - 1];
    int64_t K = a->shape[a->ndim - (ta ? 2 : 1)];
    int64_t batch = rt_tensor_numel(y) / (M * N);
    gemm_batched(y->dtype, ta, tb, batch, M, N, K, 1.0, A, ta ? M : K, M * K, B, tb ? K : N,
                 b->ndim == 2 ? 0 : K * N, 0.0, cpu_ptr(ctx, y), N, M * N);
    return true;
}

/* ---- linear */

size_t cpu_ws_linear(const rt_node *node)
{
    return rounded_size(node->src[0], node->ip[2]) + rounded_size(node->src[1], node->ip[2]);
}

typedef struct bias_job {
    void *y;
    const void *b;
    int64_t n;
    bool f64;
} bias_job;

static void bias_rows(void *arg, int64_t begin, int64_t end)
{
    const bias_job *j = arg;
    for (int64_t r = begin; r < end; r++) {
        if (j->f64)
            memcpy((double *)j->y + r * j->n, j->b, (size_t)j->n * sizeof(double));
        else
            memcpy((float *)j->y + r * j->n, j->b, (size_t)j->n * sizeof(float));
    }
}

bool cpu_linear(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[0], *w = node->src[1], *b = node->src[2], *y = node->out[0];
    int64_t cd = node->ip[2];
    int64_t N = w->shape[0], K = w->shape[1], M = rt_tensor_numel(x) / K;
    char *ws = cpu_workspace(ctx, node);
    const void *X = rounded(ctx, x, cd, &ws), *W = rounded(ctx, w, cd, &ws);
    if (b) {
        bias_job j = {cpu_ptr(ctx, y), cpu_ptr(ctx, b), N, y->dtype == RT_F64};
        cpu_parallel(ctx, M, CPU_GRAIN / N + 1, bias_rows, &j);
    }
    gemm_batched(y->dtype, false, true, 1, M, N, K, 1.0, X, K, 0, W, K, 0, b ? 1.0 : 0.0,
                 cpu_ptr(ctx, y), N, 0);
    return true;
}

/* ---- conv2d */

static void conv_shape(const rt_node *node, const int64_t *x_shape, int64_t c_out, int64_t kh,
                       int64_t kw, rt_conv2d_shape *s)
{
    memset(s, 0, sizeof *s);
    s->n = x_shape[0];
    s->c_in = x_shape[1];
    s->h = x_shape[2];
    s->w = x_shape[3];
    s->c_out = c_out;
    s->kh = kh;
    s->kw = kw;
    s->stride_h = node->ip[0];
    s->stride_w = node->ip[1];
    s->pad_h = node->ip[2];
    s->pad_w = node->ip[3];
    s->dil_h = node->ip[4];
    s->dil_w = node->ip[5];
    int64_t eh = s->dil_h * (kh - 1) + 1, ew = s->dil_w * (kw - 1) + 1;
    s->h_out = (s->h + 2 * s->pad_h - eh) / s->stride_h + 1;
    s->w_out = (s->w + 2 * s->pad_w - ew) / s->stride_w + 1;
}

/* the conv shape of each of the three conv nodes */
static void node_conv_shape(const rt_node *node, rt_conv2d_shape *s)
{
    switch ((rt_op)node->op) {
    case RT_OP_CONV2D:
        conv_shape(node, node->src[0]->shape, node->src[1]->shape[0], node->src[1]->shape[2],
                   node->src[1]->shape[3], s);
        break;
    case RT_OP_CONV2D_BACKWARD_DATA:
        conv_shape(node, node->ip + 7, node->src[1]->shape[0], node->src[1]->shape[2],
                   node->src[1]->shape[3], s);
        break;
    default: /* backward weight: (x, dy) */
        conv_shape(node, node->src[0]->shape, node->src[1]->shape[1], node->ip[7], node->ip[8], s);
        break;
    }
}

static size_t conv_ws(const rt_node *node)
{
    rt_conv2d_shape s;
    node_conv_shape(node, &s);
    size_t ws = node->src[0]->dtype == RT_F32 ? rt_cpu_conv2d_workspace_size(&s) : 0;
    return (ws + 63) / 64 * 64 + rounded_size(node->src[0], node->ip[6]) +
           rounded_size(node->src[1], node->ip[6]);
}

size_t cpu_ws_conv2d(const rt_node *node) { return conv_ws(node); }
size_t cpu_ws_conv2d_backward_data(const rt_node *node) { return conv_ws(node); }
size_t cpu_ws_conv2d_backward_weight(const rt_node *node) { return conv_ws(node); }

/* direct f64 convolution: y += sum over taps, one (n, o) plane per task */
typedef struct conv64_job {
    rt_conv2d_shape s;
    const double *x, *w, *bias, *dy;
    double *y;
} conv64_job;

static void conv64_forward(void *arg, int64_t begin, int64_t end)
{
    const conv64_job *j = arg;
    const rt_conv2d_shape *s = &j->s;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / s->c_out, o = t % s->c_out;
        double *y = j->y + t * s->h_out * s->w_out;
        for (int64_t i = 0; i < s->h_out; i++)
            for (int64_t k = 0; k < s->w_out; k++) {
                double acc = j->bias ? j->bias[o] : 0.0;
                for (int64_t c = 0; c < s->c_in; c++)
                    for (int64_t p = 0; p < s->kh; p++) {
                        int64_t ih = i * s->stride_h - s->pad_h + p * s->dil_h;
                        if (ih < 0 || ih >= s->h)
                            continue;
                        for (int64_t q = 0; q < s->kw; q++) {
                            int64_t iw = k * s->stride_w - s->pad_w + q * s->dil_w;
                            if (iw < 0 || iw >= s->w)
                                continue;
                            acc += j->x[((n * s->c_in + c) * s->h + ih) * s->w + iw] *
                                   j->w[((o * s->c_in + c) * s->kh + p) * s->kw + q];
                        }
                    }
                y[i * s->w_out + k] = acc;
            }
    }
}

/* dx for one (n, c) plane */
static void conv64_backward_data(void *arg, int64_t begin, int64_t end)
{
    const conv64_job *j = arg;
    const rt_conv2d_shape *s = &j->s;
    for (int64_t t = begin; t < end; t++) {
        int64_t n = t / s->c_in, c = t % s->c_in;
        double *dx = j->y + t * s->h * s->w;
        memset(dx, 0, sizeof(double) * (size_t)(s->h * s->w));
        for (int64_t o = 0; o < s->c_out; o++)
            for (int64_t i = 0; i < s->h_out; i++)
                for (int64_t k = 0; k < s->w_out; k++) {
                    double g = j->dy[((n * s->c_out + o) * s->h_out + i) * s->w_out + k];
                    for (int64_t p = 0; p < s->kh; p++) {
                        int64_t ih = i * s->stride_h - s->pad_h + p * s->dil_h;
                        if (ih < 0 || ih >= s->h)
                            continue;
                        for (int64_t q = 0; q < s->kw; q++) {
                            int64_t iw = k * s->stride_w - s->pad_w + q * s->dil_w;
                            if (iw >= 0 && iw < s->w)
                                dx[ih * s->w + iw] +=
                                    g * j->w[((o * s->c_in + c) * s->kh + p) * s->kw + q];
                        }
                    }
                }
    }
}

/* dw for one (o, c) kernel */
static void conv64_backward_weight(void *arg, int64_t begin, int64_t end)
{
    const conv64_job *j = arg;
    const rt_conv2d_shape *s = &j->s;
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / s->c_in, c = t % s->c_in;
        for (int64_t p = 0; p < s->kh; p++)
            for (int64_t q = 0; q < s->kw; q++) {
                double acc = 0;
                for (int64_t n = 0; n < s->n; n++)
                    for (int64_t i = 0; i < s->h_out; i++) {
                        int64_t ih = i * s->stride_h - s->pad_h + p * s->dil_h;
                        if (ih < 0 || ih >= s->h)
                            continue;
                        for (int64_t k = 0; k < s->w_out; k++) {
                            int64_t iw = k * s->stride_w - s->pad_w + q * s->dil_w;
                            if (iw >= 0 && iw < s->w)
                                acc += j->dy[((n * s->c_out + o) * s->h_out + i) * s->w_out + k] *
                                       j->x[((n * s->c_in + c) * s->h + ih) * s->w + iw];
                        }
                    }
                j->y[((o * s->c_in + c) * s->kh + p) * s->kw + q] = acc;
            }
    }
}

bool cpu_conv2d(rt_cpu_ctx *ctx, const rt_node *node)
{
    rt_conv2d_shape s;
    node_conv_shape(node, &s);
    const rt_tensor *x = node->src[0], *w = node->src[1], *b = node->src[2];
    if (x->dtype == RT_F64) {
        conv64_job j = {s, cpu_ptr(ctx, x), cpu_ptr(ctx, w), b ? cpu_ptr(ctx, b) : NULL, NULL,
                        cpu_ptr(ctx, node->out[0])};
        cpu_parallel(ctx, s.n * s.c_out, 1, conv64_forward, &j);
        return true;
    }
    char *ws = cpu_workspace(ctx, node);
    void *scratch = ws;
    ws += (rt_cpu_conv2d_workspace_size(&s) + 63) / 64 * 64;
    const float *X = rounded(ctx, x, node->ip[6], &ws), *W = rounded(ctx, w, node->ip[6], &ws);
    rt_cpu_conv2d_forward_f32(&s, X, W, b ? cpu_ptr(ctx, b) : NULL, cpu_ptr(ctx, node->out[0]),
                              scratch);
    return true;
}

bool cpu_conv2d_backward_data(rt_cpu_ctx *ctx, const rt_node *node)
{
    rt_conv2d_shape s;
    node_conv_shape(node, &s);
    const rt_tensor *dy = node->src[0], *w = node->src[1];
    if (dy->dtype == RT_F64) {
        conv64_job j = {s, NULL, cpu_ptr(ctx, w), NULL, cpu_ptr(ctx, dy), cpu_ptr(ctx, node->out[0])};
        cpu_parallel(ctx, s.n * s.c_in, 1, conv64_backward_data, &j);
        return true;
    }
    char *ws = cpu_workspace(ctx, node);
    void *scratch = ws;
    ws += (rt_cpu_conv2d_workspace_size(&s) + 63) / 64 * 64;
    const float *DY = rounded(ctx, dy, node->ip[6], &ws), *W = rounded(ctx, w, node->ip[6], &ws);
    rt_cpu_conv2d_backward_data_f32(&s, DY, W, cpu_ptr(ctx, node->out[0]), false, scratch);
    return true;
}

bool cpu_conv2d_backward_weight(rt_cpu_ctx *ctx, const rt_node *node)
{
    rt_conv2d_shape s;
    node_conv_shape(node, &s);
    const rt_tensor *x = node->src[0], *dy = node->src[1];
    if (x->dtype == RT_F64) {
        conv64_job j = {s, cpu_ptr(ctx, x), NULL, NULL, cpu_ptr(ctx, dy), cpu_ptr(ctx, node->out[0])};
        cpu_parallel(ctx, s.c_out * s.c_in, 1, conv64_backward_weight, &j);
        return true;
    }
    char *ws = cpu_workspace(ctx, node);
    void *scratch = ws;
    ws += (rt_cpu_conv2d_workspace_size(&s) + 63) / 64 * 64;
    const float *X = rounded(ctx, x, node->ip[6], &ws), *DY = rounded(ctx, dy, node->ip[6], &ws);
    rt_cpu_conv2d_backward_weight_f32(&s, X, DY, cpu_ptr(ctx, node->out[0]), NULL, false, scratch);
    return true;
}

/* ---- frozen batch norm: torchvision's scale = w * rsqrt(var + eps), shift = b - mean * scale */

typedef struct bn_job {
    const rt_cpu_ctx *ctx;
    const rt_node *node;
    int64_t c, inner;
} bn_job;

#define BN_KERNEL(T, SFX, SQRT)                                                                \
    static void bn_##SFX(void *arg, int64_t begin, int64_t end)                                \
    {                                                                                          \
        const bn_job *j = arg;                                                                 \
        const rt_node *node = j->node;                                                         \
        const T *x = cpu_ptr(j->ctx, node->src[0]), *w = cpu_ptr(j->ctx, node->src[1]);       \
        const T *b = node->src[2] ? cpu_ptr(j->ctx, node->src[2]) : NULL;                      \
        const T *mean = node->src[3] ? cpu_ptr(j->ctx, node->src[3]) : NULL;                   \
        const T *var = cpu_ptr(j->ctx, node->src[4]);                                          \
        T *y = cpu_ptr(j->ctx, node->out[0]);                                                  \
        for (int64_t plane = begin; plane < end; plane++) {                                    \
            int64_t c = plane % j->c;                                                          \
            T scale = w[c] * ((T)1 / SQRT(var[c] + (T)node->fp[0]));                           \
            T shift = (b ? b[c] : (T)0) - (mean ? mean[c] : (T)0) * scale;                     \
            const T *xp = x + plane * j->inner;                                                \
            T *yp = y + plane * j->inner;                                                      \
            for (int64_t i = 0; i < j->inner; i++)                                             \
                yp[i] = xp[i] * scale + shift;                                                 \
        }                                                                                      \
    }

BN_KERNEL(float, f32, sqrtf)
BN_KERNEL(double, f64, sqrt)

bool cpu_frozen_batch_norm(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[0];
    bn_job j = {ctx, node, x->shape[1], rt_shape_numel(x->ndim - 2, x->shape + 2)};
    cpu_parallel(ctx, x->shape[0] * x->shape[1], CPU_GRAIN / j.inner + 1,
                 x->dtype == RT_F32 ? bn_f32 : bn_f64, &j);
    return true;
}

/* ---- max-pool (f64: direct loops with PyTorch's rules: -inf padding, first maximum, NaN wins) */

bool cpu_max_pool2d(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *x = node->src[0], *y = node->out[0];
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
    int64_t k = node->ip[0], s = node->ip[1], p = node->ip[2], ho = y->shape[2], wo = y->shape[3];
    int32_t *arg = cpu_ptr(ctx, node->out[1]);
    if (x->dtype == RT_F32) {
        rt_cpu_maxpool2d_forward_f32(n, c, h, w, k, s, p, ho, wo, cpu_ptr(ctx, x), cpu_ptr(ctx, y),
                                     arg);
        return true;
    }
    const double *xp = cpu_ptr(ctx, x);
    double *yp = cpu_ptr(ctx, y);
    for (int64_t plane = 0; plane < n * c; plane++)
        for (int64_t i = 0; i < ho; i++)
            for (int64_t j = 0; j < wo; j++) {
                double best = -INFINITY;
                int32_t at = -1;
                for (int64_t a = 0; a < k; a++)
                    for (int64_t b = 0; b < k; b++) {
                        int64_t ih = i * s - p + a, iw = j * s - p + b;
                        if (ih < 0 || ih >= h || iw < 0 || iw >= w)
                            continue;
                        double v = xp[plane * h * w + ih * w + iw];
                        if (v > best || isnan(v) || at < 0) {
                            best = v;
                            at = (int32_t)(ih * w + iw);
                            if (isnan(v))
                                goto found;
                        }
                    }
            found:
                yp[(plane * ho + i) * wo + j] = best;
                arg[(plane * ho + i) * wo + j] = at;
            }
    return true;
}

bool cpu_max_pool2d_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *dy = node->src[0];
    int64_t n = node->ip[3], c = node->ip[4], h = node->ip[5], w = node->ip[6];
    int64_t ho = dy->shape[2], wo = dy->shape[3];
    const int32_t *arg = cpu_ptr(ctx, node->src[1]);
    if (dy->dtype == RT_F32) {
        rt_cpu_maxpool2d_backward_f32(n, c, h, w, ho, wo, cpu_ptr(ctx, dy), arg,
                                      cpu_ptr(ctx, node->out[0]), false);
        return true;
    }
    const double *g = cpu_ptr(ctx, dy);
    double *dx = cpu_ptr(ctx, node->out[0]);
    memset(dx, 0, sizeof(double) * (size_t)(n * c * h * w));
    for (int64_t plane = 0; plane < n * c; plane++)
        for (int64_t i = 0; i < ho * wo; i++)
            dx[plane * h * w + arg[plane * ho * wo + i]] += g[plane * ho * wo + i];
    return true;
}

/* ---- embedding */

static bool check_indices(rt_cpu_ctx *ctx, const int64_t *idx, int64_t n, int64_t rows)
{
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= rows)
            return CPU_FAIL(ctx, "index %" G_GINT64_FORMAT " (element %" G_GINT64_FORMAT " of the "
                            "indices) is outside 0..%" G_GINT64_FORMAT " of the embedding table",
                            idx[i], i, rows - 1);
    return true;
}

bool cpu_embedding(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *w = node->src[0], *ix = node->src[1];
    int64_t n = rt_tensor_numel(ix), d = w->shape[1];
    const int64_t *idx = cpu_ptr(ctx, ix);
    if (!check_indices(ctx, idx, n, w->shape[0]))
        return false;
    size_t row = (size_t)d * rt_dtype_size(w->dtype);
    const char *src = cpu_ptr(ctx, w);
    char *dst = cpu_ptr(ctx, node->out[0]);
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + (size_t)i * row, src + (size_t)idx[i] * row, row);
    return true;
}

typedef struct embed_job {
    const rt_cpu_ctx *ctx;
    const rt_node *node;
    int64_t n, d;
} embed_job;

#define EMBED_BACKWARD(T, SFX)                                                                 \
    static void embed_bw_##SFX(void *arg, int64_t begin, int64_t end)                          \
    {                                                                                          \
        const embed_job *j = arg;                                                              \
        const T *dy = cpu_ptr(j->ctx, j->node->src[0]);                                        \
        const int64_t *idx = cpu_ptr(j->ctx, j->node->src[1]);                                 \
        T *dw = cpu_ptr(j->ctx, j->node->out[0]);                                              \
        int64_t c0 = begin * 64, c1 = MIN(end * 64, j->d);                                     \
        for (int64_t r = 0; r < j->node->ip[0]; r++)                                           \
            for (int64_t c = c0; c < c1; c++)                                                  \
                dw[r * j->d + c] = 0;                                                          \
        for (int64_t i = 0; i < j->n; i++)                                                     \
            for (int64_t c = c0; c < c1; c++)                                                  \
                dw[idx[i] * j->d + c] += dy[i * j->d + c];                                     \
    }

EMBED_BACKWARD(float, f32)
EMBED_BACKWARD(double, f64)

bool cpu_embedding_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *dy = node->src[0], *ix = node->src[1];
    embed_job j = {ctx, node, rt_tensor_numel(ix), dy->shape[dy->ndim - 1]};
    if (!check_indices(ctx, cpu_ptr(ctx, ix), j.n, node->ip[0]))
        return false;
    cpu_parallel(ctx, (j.d + 63) / 64, 1, dy->dtype == RT_F32 ? embed_bw_f32 : embed_bw_f64, &j);
    return true;
}

/* ---- attention. Per batch element b: scores for all heads with one batched GEMM (heads are
 * column blocks of q/k/v, so no copies), mask + softmax (+ dropout) over rows on the pool, then
 * one batched GEMM with v. Probabilities are saved as [B, H, L, S] for the backward pass. */

typedef struct att_dims {
    int64_t L, S, B, E, H, d;
    int64_t rs_q, rs_k; /* element distance between consecutive positions */
    bool bf;
} att_dims;

static void att_dims_of(const rt_node *node, const rt_tensor *q, const rt_tensor *k, att_dims *a)
{
    a->bf = node->ip[1] != 0;
    a->B = q->shape[a->bf ? 0 : 1];
    a->L = q->shape[a->bf ? 1 : 0];
    a->S = k->shape[a->bf ? 1 : 0];
    a->E = q->shape[2];
    a->H = node->ip[0];
    a->d = a->E / a->H;
    a->rs_q = a->bf ? a->E : a->B * a->E;
    a->rs_k = a->bf ? a->E : a->B * a->E;
}

/* element offset of batch b's first position */
static int64_t att_batch_q(const att_dims *a, int64_t b) { return a->bf ? b * a->L * a->E : b * a->E; }
static int64_t att_batch_k(const att_dims *a, int64_t b) { return a->bf ? b * a->S * a->E : b * a->E; }

typedef struct att_job {
    const att_dims *a;
    int64_t b;
    void *p;          /* probabilities of batch b: [H, L, S] */
    void *pd;         /* dropped-out copy (may equal p) */
    void *dp;         /* backward: gradient of pd, then of the scores */
    const uint8_t *mask;
    double keep_scale;
    uint32_t threshold;
    rt_rng_stream rng;
    int64_t sample;   /* global sample index of b */
    bool dropout;
    int64_t cd;
} att_job;

/* Applies the dropout mask of row (h, l) of batch element b (indices (h * L + l) * S + s in the
 * sample) to src -> dst, scaling kept values; dst may equal src. */
#define ATT_DROP_ROW(T, j, row, src, dst)                                                      \
    do {                                                                                       \
        uint32_t w_[RT_RNG_CHUNK];                                                             \
        int64_t S_ = (j)->a->S;                                                                \
        const T ks_ = (T)(j)->keep_scale;                                                      \
        for (int64_t s0 = 0; s0 < S_;) {                                                       \
            uint64_t within = (uint64_t)((row) * S_ + s0);                                     \
            int c_ = rt_rng_chunk(within, S_ - s0);                                            \
            rt_rng_fill(&(j)->rng, (uint64_t)(j)->sample, within, c_, w_);                     \
            for (int k = 0; k < c_; k++)                                                       \
                (dst)[s0 + k] = w_[k] >= (j)->threshold ? (src)[s0 + k] * ks_ : (T)0;          \
            s0 += c_;                                                                          \
        }                                                                                      \
    } while (0)

#define ATT_KERNELS(T, SFX, EXP)                                                               \
    static void att_softmax_##SFX(void *arg, int64_t begin, int64_t end)                       \
    {                                                                                          \
        const att_job *j = arg;                                                                \
        int64_t S = j->a->S;                                                                   \
        for (int64_t row = begin; row < end; row++) {                                          \
            T *p = (T *)j->p + row * S, *pd = (T *)j->pd + row * S;                            \
            if (j->mask)                                                                       \
                for (int64_t s = 0; s < S; s++)                                                \
                    if (j->mask[j->b * S + s])                                                 \
                        p[s] = -INFINITY;                                                      \
            T m = -INFINITY;                                                                   \
            for (int64_t s = 0; s < S; s++)                                                    \
                m = p[s] > m ? p[s] : m;                                                       \
            double sum = 0;                                                                    \
            for (int64_t s = 0; s < S; s++) {                                                  \
                p[s] = EXP(p[s] - m);                                                          \
                sum += p[s];                                                                   \
            }                                                                                  \
            T inv = (T)(1.0 / sum);                                                            \
            for (int64_t s = 0; s < S; s++)                                                    \
                p[s] *= inv;                                                                   \
            if (j->dropout) {                                                                  \
                ATT_DROP_ROW(T, j, row, p, pd);                                                \
            } else if (pd != p) {                                                              \
                memcpy(pd, p, sizeof(T) * (size_t)S);                                          \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* recomputes pd from the saved p (backward) */                                            \
    static void att_redrop_##SFX(void *arg, int64_t begin, int64_t end)                        \
    {                                                                                          \
        const att_job *j = arg;                                                                \
        int64_t S = j->a->S;                                                                   \
        for (int64_t row = begin; row < end; row++) {                                          \
            const T *p = (const T *)j->p + row * S;                                            \
            T *pd = (T *)j->pd + row * S;                                                      \
            if (j->dropout)                                                                    \
                ATT_DROP_ROW(T, j, row, p, pd);                                                \
            else                                                                               \
                memcpy(pd, p, sizeof(T) * (size_t)S);                                          \
        }                                                                                      \
    }                                                                                          \
    /* dp (gradient of pd) -> gradient of the scores: dropout mask, then softmax backward */   \
    static void att_dscores_##SFX(void *arg, int64_t begin, int64_t end)                       \
    {                                                                                          \
        const att_job *j = arg;                                                                \
        int64_t S = j->a->S;                                                                   \
        for (int64_t row = begin; row < end; row++) {                                          \
            const T *p = (const T *)j->p + row * S;                                            \
            T *dp = (T *)j->dp + row * S;                                                      \
            if (j->dropout)                                                                    \
                ATT_DROP_ROW(T, j, row, dp, dp);                                               \
            double dot = 0;                                                                    \
            for (int64_t s = 0; s < S; s++)                                                    \
                dot += (double)dp[s] * p[s];                                                   \
            T tdot = (T)dot;                                                                   \
            for (int64_t s = 0; s < S; s++)                                                    \
                dp[s] = p[s] * (dp[s] - tdot);                                                 \
        }                                                                                      \
    }

ATT_KERNELS(float, f32, expf)
ATT_KERNELS(double, f64, exp)

static void att_job_init(att_job *j, rt_cpu_ctx *ctx, const rt_node *node, const att_dims *a)
{
    memset(j, 0, sizeof *j);
    j->a = a;
    j->cd = node->ip[2];
    double p = node->fp[0];
    j->dropout = p > 0 && node->src[node->op == RT_OP_ATTENTION ? 4 : 5];
    j->keep_scale = j->dropout ? 1.0 / (1.0 - p) : 1.0;
    j->threshold = rt_rng_drop_threshold(p);
    if (j->dropout) {
        const int64_t *state = cpu_ptr(ctx, node->src[node->op == RT_OP_ATTENTION ? 4 : 5]);
        j->rng = rt_rng_stream_make(state, node->ip[3]);
        j->sample = state[2];
    }
}

static size_t att_round_size(const rt_node *node, int first, int count)
{
    size_t n = 0;
    for (int i = first; i < first + count; i++)
        n += rounded_size(node->src[i], node->ip[2]);
    return n;
}

size_t cpu_ws_attention(const rt_node *node)
{
    const rt_tensor *probs = node->out[1];
    int64_t per_b = rt_tensor_numel(probs) / probs->shape[0];
    bool copy = node->fp[0] > 0 || rounds(node->src[0], node->ip[2]);
    return att_round_size(node, 0, 3) +
           (copy ? (size_t)per_b * rt_dtype_size(probs->dtype) + 64 : 0);
}

bool cpu_attention(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2];
    const rt_tensor *probs = node->out[1], *out = node->out[0];
    att_dims a;
    att_dims_of(node, q, k, &a);
    att_job j;
    att_job_init(&j, ctx, node, &a);
    j.mask = node->src[3] ? cpu_ptr(ctx, node->src[3]) : NULL;
    rt_dtype dt = q->dtype;
    size_t es = rt_dtype_size(dt);
    char *ws = cpu_workspace(ctx, node);
    const char *Q = rounded(ctx, q, j.cd, &ws), *K = rounded(ctx, k, j.cd, &ws);
    const char *V = rounded(ctx, v, j.cd, &ws);
    bool copy = j.dropout || rounds(q, j.cd);
    char *O = cpu_ptr(ctx, out);
    int64_t per_b = a.H * a.L * a.S;
    int64_t sample0 = j.sample;
    for (int64_t b = 0; b < a.B; b++) {
        j.b = b;
        j.sample = sample0 + b;
        j.p = (char *)cpu_ptr(ctx, probs) + (size_t)(b * per_b) * es;
        j.pd = copy ? (void *)ws : j.p;
        gemm_batched(dt, false, true, a.H, a.L, a.S, a.d, node->fp[1], Q + att_batch_q(&a, b) * (int64_t)es,
                     a.rs_q, a.d, K + att_batch_k(&a, b) * (int64_t)es, a.rs_k, a.d, 0.0, j.p,
                     a.S, a.L * a.S);
        cpu_parallel(ctx, a.H * a.L, CPU_GRAIN / a.S + 1,
                     dt == RT_F32 ? att_softmax_f32 : att_softmax_f64, &j);
        if (rounds(q, j.cd))
            cpu_round_to(j.pd, (size_t)per_b, j.cd);
        gemm_batched(dt, false, false, a.H, a.L, a.d, a.S, 1.0, j.pd, a.S, a.L * a.S,
                     V + att_batch_k(&a, b) * (int64_t)es, a.rs_k, a.d, 0.0,
                     O + att_batch_q(&a, b) * (int64_t)es, a.rs_q, a.d);
    }
    return true;
}

size_t cpu_ws_attention_backward(const rt_node *node)
{
    const rt_tensor *probs = node->src[4];
    int64_t per_b = rt_tensor_numel(probs) / probs->shape[0];
    return att_round_size(node, 0, 4) + 2 * ((size_t)per_b * rt_dtype_size(probs->dtype) + 64);
}

bool cpu_attention_backward(rt_cpu_ctx *ctx, const rt_node *node)
{
    const rt_tensor *dout = node->src[0], *q = node->src[1], *k = node->src[2], *v = node->src[3];
    const rt_tensor *probs = node->src[4];
    att_dims a;
    att_dims_of(node, q, k, &a);
    att_job j;
    att_job_init(&j, ctx, node, &a);
    rt_dtype dt = q->dtype;
    size_t es = rt_dtype_size(dt);
    char *ws = cpu_workspace(ctx, node);
    const char *DO = rounded(ctx, dout, j.cd, &ws), *Q = rounded(ctx, q, j.cd, &ws);
    const char *K = rounded(ctx, k, j.cd, &ws), *V = rounded(ctx, v, j.cd, &ws);
    int64_t per_b = a.H * a.L * a.S;
    size_t scratch = ((size_t)per_b * es + 63) / 64 * 64;
    j.pd = ws;
    j.dp = ws + scratch;
    char *dQ = cpu_ptr(ctx, node->out[0]), *dK = cpu_ptr(ctx, node->out[1]);
    char *dV = cpu_ptr(ctx, node->out[2]);
    int64_t sample0 = j.sample;
    for (int64_t b = 0; b < a.B; b++) {
        j.b = b;
        j.sample = sample0 + b;
        j.p = (char *)cpu_ptr(ctx, probs) + (size_t)(b * per_b) * es;
        int64_t oq = att_batch_q(&a, b) * (int64_t)es, ok = att_batch_k(&a, b) * (int64_t)es;
        cpu_parallel(ctx, a.H * a.L, CPU_GRAIN / a.S + 1,
                     dt == RT_F32 ? att_redrop_f32 : att_redrop_f64, &j);
        cpu_round_to(j.pd, (size_t)per_b, dt == RT_F32 ? j.cd : RT_F32);
        /* dV = Pd^T dO, dPd = dO V^T */
        gemm_batched(dt, true, false, a.H, a.S, a.d, a.L, 1.0, j.pd, a.S, a.L * a.S, DO + oq, a.rs_q,
                     a.d, 0.0, dV + ok, a.rs_k, a.d);
        gemm_batched(dt, false, true, a.H, a.L, a.S, a.d, 1.0, DO + oq, a.rs_q, a.d, V + ok, a.rs_k,
                     a.d, 0.0, j.dp, a.S, a.L * a.S);
        cpu_parallel(ctx, a.H * a.L, CPU_GRAIN / a.S + 1,
                     dt == RT_F32 ? att_dscores_f32 : att_dscores_f64, &j);
        cpu_round_to(j.dp, (size_t)per_b, dt == RT_F32 ? j.cd : RT_F32);
        /* dQ = scale dS K, dK = scale dS^T Q */
        gemm_batched(dt, false, false, a.H, a.L, a.d, a.S, node->fp[1], j.dp, a.S, a.L * a.S,
                     K + ok, a.rs_k, a.d, 0.0, dQ + oq, a.rs_q, a.d);
        gemm_batched(dt, true, false, a.H, a.S, a.d, a.L, node->fp[1], j.dp, a.S, a.L * a.S,
                     Q + oq, a.rs_q, a.d, 0.0, dK + ok, a.rs_k, a.d);
    }
    return true;
}
