/* plugins/backend-cuda/cuda-ops-gemm.c: the ops built on GEMMs: matmul (batched), linear and
 * attention forward and backward, through cuBLASLt plans made when the graph is prepared.
 *
 * Mixed precision as on the CPU (backend-cpu-nn.c): an f32 node whose compute dtype is bf16 or
 * f16 rounds its inputs to it (here into 16-bit copies in its workspace, which cuBLASLt reads
 * with f32 accumulation and f32 output; the CPU rounds in f32 storage, the same values) and,
 * in attention, rounds the probabilities and score gradients before the GEMMs that read them.
 * Attention keeps the CPU's layout: head h of q is columns h*d.. of each position, so the heads
 * of one batch element are one strided batch of GEMMs; sequence-first inputs (and a batch of
 * one) put all B * H heads in one batch. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "cuda-error.h"
#include "cuda-exec.h"
#include "cuda-gemm.h"

static gboolean float_in(const rt_node *node)
{
    rt_dtype d = node->src[0]->dtype;
    return d == RT_F32 || d == RT_F64;
}

/* the dtype cuBLASLt reads A and B in */
static int ab_dtype(const rt_node *node, int cd_index)
{
    return rt_cuda_rounds(node, cd_index) ? (int)node->ip[cd_index] : (int)node->src[0]->dtype;
}

/* bytes of a 16-bit rounded copy of t, when node rounds */
static size_t rounded_bytes(const rt_node *node, int cd_index, const rt_tensor *t)
{
    return rt_cuda_rounds(node, cd_index) ? rt_cuda_align((size_t)rt_tensor_numel(t) * 2) : 0;
}

static const char *label_of(const rt_cuda_ctx *ctx, const rt_node *node, char *buf, size_t size)
{
    return rt_cuda_node_label(ctx, node, buf, size);
}

/* ---- matmul: (a[..., M, K], b[..., K, N]) with ip0 trans_a, ip1 trans_b, ip2 cd */

typedef struct matmul_priv {
    rt_cuda_gemm *gemm;
    uint8_t *a, *b;  /* rounded copies (NULL: the inputs themselves) */
    uint8_t *cublas; /* cuBLASLt's workspace */
} matmul_priv;

static size_t ws_matmul(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    return rounded_bytes(node, 2, node->src[0]) + rounded_bytes(node, 2, node->src[1]) +
           RT_CUDA_GEMM_WORKSPACE;
}

static void matmul_desc(const rt_node *node, rt_cuda_gemm_desc *d)
{
    const rt_tensor *a = node->src[0], *b = node->src[1], *y = node->out[0];
    memset(d, 0, sizeof *d);
    d->c_dtype = y->dtype;
    d->ab_dtype = ab_dtype(node, 2);
    d->ta = node->ip[0] != 0;
    d->tb = node->ip[1] != 0;
    d->M = y->shape[y->ndim - 2];
    d->N = y->shape[y->ndim - 1];
    d->K = a->shape[a->ndim - (d->ta ? 2 : 1)];
    d->batch = rt_tensor_numel(y) / (d->M * d->N);
    d->lda = d->ta ? d->M : d->K;
    d->ldb = d->tb ? d->K : d->N;
    d->ldc = d->N;
    d->sa = d->M * d->K;
    d->sb = b->ndim == 2 ? 0 : d->K * d->N;
    d->sc = d->M * d->N;
    d->alpha = 1.0;
    if (d->batch > 1 && d->sb == 0 && !d->ta) { /* a shared b: the batch is more rows of a */
        d->M *= d->batch;
        d->batch = 1;
        d->sa = d->sc = 0;
    }
}

static void matmul_release(void *p)
{
    matmul_priv *m = p;
    if (m)
        rt_cuda_gemm_free(m->gemm);
    g_free(m);
}

static gboolean matmul_prepare(rt_cuda_ctx *ctx, const rt_node *node, void **priv, GError **error)
{
    rt_cuda_gemm_desc d;
    matmul_desc(node, &d);
    d.tf32 = ctx->tf32;
    matmul_priv *m = g_new0(matmul_priv, 1);
    uint8_t *ws = rt_cuda_ws(ctx, node);
    if (rt_cuda_rounds(node, 2)) {
        m->a = ws;
        ws += rounded_bytes(node, 2, node->src[0]);
        m->b = ws;
        ws += rounded_bytes(node, 2, node->src[1]);
    }
    m->cublas = ws;
    char label[96];
    m->gemm = rt_cuda_gemm_plan(ctx->dev, &d, m->a ? m->a : rt_cuda_ptr(ctx, node->src[0]),
                                m->b ? m->b : rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->out[0]),
                                label_of(ctx, node, label, sizeof label), error);
    if (!m->gemm) {
        matmul_release(m);
        return FALSE;
    }
    *priv = m;
    return TRUE;
}

static gboolean matmul_run(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    matmul_priv *m = priv;
    int cd = (int)node->ip[2];
    if (m->a && (!rt_cuda_round_input(ctx, node, node->src[0], cd, m->a, error) ||
                 !rt_cuda_round_input(ctx, node, node->src[1], cd, m->b, error)))
        return FALSE;
    char label[96];
    return rt_cuda_gemm_run(ctx->dev, m->gemm, m->a ? m->a : rt_cuda_ptr(ctx, node->src[0]),
                            m->b ? m->b : rt_cuda_ptr(ctx, node->src[1]), rt_cuda_ptr(ctx, node->out[0]),
                            m->cublas, label_of(ctx, node, label, sizeof label), error);
}

const rt_cuda_op rt_cuda_op_matmul = {float_in, ws_matmul, matmul_prepare, matmul_release, matmul_run};

/* ---- linear: x[..., K] w[N, K]^T + b; as the CPU, y starts as the bias rows, then the GEMM
 * adds (beta = 1) */

static gboolean linear_prepare(rt_cuda_ctx *ctx, const rt_node *node, void **priv, GError **error)
{
    const rt_tensor *x = node->src[0], *w = node->src[1], *y = node->out[0];
    rt_cuda_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.c_dtype = y->dtype;
    d.ab_dtype = ab_dtype(node, 2);
    d.tb = TRUE;
    d.N = w->shape[0];
    d.K = w->shape[1];
    d.M = rt_tensor_numel(x) / d.K;
    d.batch = 1;
    d.lda = d.K;
    d.ldb = d.K;
    d.ldc = d.N;
    d.alpha = 1.0;
    d.beta = node->src[2] ? 1.0 : 0.0;
    d.tf32 = ctx->tf32;
    matmul_priv *m = g_new0(matmul_priv, 1);
    uint8_t *ws = rt_cuda_ws(ctx, node);
    if (rt_cuda_rounds(node, 2)) {
        m->a = ws;
        ws += rounded_bytes(node, 2, x);
        m->b = ws;
        ws += rounded_bytes(node, 2, w);
    }
    m->cublas = ws;
    char label[96];
    m->gemm =
        rt_cuda_gemm_plan(ctx->dev, &d, m->a ? m->a : rt_cuda_ptr(ctx, x), m->b ? m->b : rt_cuda_ptr(ctx, w),
                          rt_cuda_ptr(ctx, y), label_of(ctx, node, label, sizeof label), error);
    if (!m->gemm) {
        matmul_release(m);
        return FALSE;
    }
    *priv = m;
    return TRUE;
}

static gboolean linear_run(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    matmul_priv *m = priv;
    const rt_tensor *x = node->src[0], *w = node->src[1], *b = node->src[2], *y = node->out[0];
    if (b) { /* every row of y = b */
        int64_t N = w->shape[0], M = rt_tensor_numel(x) / w->shape[1];
        int64_t shape[2] = {M, N}, sy[2] = {N, 1}, sb[2] = {0, 1};
        const int64_t *strides[2] = {sy, sb};
        rt_cuda_iter it;
        rt_cuda_iter_init(&it, 2, shape, 2, strides);
        if (!rt_cuda_launched(ctx, node,
                              rt_cuda_copy(rt_dtype_size(y->dtype), &it, rt_cuda_ptr(ctx, y),
                                           rt_cuda_ptr(ctx, b), ctx->stream),
                              error))
            return FALSE;
    }
    int cd = (int)node->ip[2];
    if (m->a && (!rt_cuda_round_input(ctx, node, x, cd, m->a, error) ||
                 !rt_cuda_round_input(ctx, node, w, cd, m->b, error)))
        return FALSE;
    char label[96];
    return rt_cuda_gemm_run(ctx->dev, m->gemm, m->a ? m->a : rt_cuda_ptr(ctx, x),
                            m->b ? m->b : rt_cuda_ptr(ctx, w), rt_cuda_ptr(ctx, y), m->cublas,
                            label_of(ctx, node, label, sizeof label), error);
}

const rt_cuda_op rt_cuda_op_linear = {float_in, ws_matmul, linear_prepare, matmul_release, linear_run};

/* ---- attention. Forward (q, k, v, mask?, rng?) -> out, probs; backward (dout, q, k, v, probs,
 * rng?) -> dq, dk, dv. ip0 heads, ip1 batch_first, ip2 cd, ip3 rng id; fp0 dropout p, fp1 the
 * logit scale. */

typedef struct att_dims {
    int64_t L, S, B, E, H, d;
    int64_t rs_q, rs_k; /* element distance between consecutive positions */
    int64_t ob_q, ob_k; /* element offset from one batch element to the next */
    gboolean merged;    /* all B * H heads in one GEMM batch */
} att_dims;

static void att_dims_of(const rt_node *node, const rt_tensor *q, const rt_tensor *k, att_dims *a)
{
    gboolean bf = node->ip[1] != 0;
    a->B = q->shape[bf ? 0 : 1];
    a->L = q->shape[bf ? 1 : 0];
    a->S = k->shape[bf ? 1 : 0];
    a->E = q->shape[2];
    a->H = node->ip[0];
    a->d = a->E / a->H;
    a->rs_q = bf ? a->E : a->B * a->E;
    a->rs_k = bf ? a->E : a->B * a->E;
    a->ob_q = bf ? a->L * a->E : a->E;
    a->ob_k = bf ? a->S * a->E : a->E;
    /* head j = b * H + h sits at b * ob + h * d: one stride d when ob = H * d = E */
    a->merged = !bf || a->B == 1;
}

/* one GEMM of a head batch; x for the probabilities-shaped operand, q/k for the others */
static void att_gemm(const att_dims *a, rt_cuda_gemm_desc *d, int c_dtype, int ab, gboolean ta, gboolean tb,
                     int64_t M, int64_t N, int64_t K, int64_t lda, int64_t sa, int64_t oa, int64_t ldb,
                     int64_t sb, int64_t ob, int64_t ldc, int64_t sc, int64_t oc, double alpha)
{
    memset(d, 0, sizeof *d);
    d->c_dtype = c_dtype;
    d->ab_dtype = ab;
    d->ta = ta;
    d->tb = tb;
    d->M = M;
    d->N = N;
    d->K = K;
    d->batch = a->merged ? a->B * a->H : a->H;
    d->lda = lda;
    d->ldb = ldb;
    d->ldc = ldc;
    d->sa = sa;
    d->sb = sb;
    d->sc = sc;
    d->alpha = alpha;
    d->outer_a = a->merged ? 0 : oa;
    d->outer_b = a->merged ? 0 : ob;
    d->outer_c = a->merged ? 0 : oc;
}

enum { ATT_MAX_GEMMS = 4 };

typedef struct att_priv {
    att_dims a;
    rt_cuda_gemm *gemm[ATT_MAX_GEMMS];
    int64_t outer[ATT_MAX_GEMMS][3]; /* per batch element: element offsets of A, B, C */
    size_t esize[ATT_MAX_GEMMS][3];  /* their element sizes */
    uint8_t *rounded[4];             /* 16-bit copies of the inputs (NULL: none) */
    uint8_t *pd;                     /* dropped-out / rounded probabilities (and later dS) */
    uint8_t *dp;                     /* backward: dP, then dS */
    uint8_t *cublas;
    gboolean rounds, dropout;
    int cd, pd_dtype;
} att_priv;

static void att_release(void *p)
{
    att_priv *m = p;
    if (!m)
        return;
    for (int i = 0; i < ATT_MAX_GEMMS; i++)
        rt_cuda_gemm_free(m->gemm[i]);
    g_free(m);
}

static gboolean att_dropout(const rt_node *node)
{
    return node->fp[0] > 0 && node->src[node->op == RT_OP_ATTENTION ? 4 : 5] != NULL;
}

static size_t probs_bytes(const att_dims *a, size_t esize)
{
    return rt_cuda_align((size_t)(a->B * a->H * a->L * a->S) * esize);
}

static size_t ws_attention(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    att_dims a;
    att_dims_of(node, node->src[0], node->src[1], &a);
    gboolean rounds = rt_cuda_rounds(node, 2);
    size_t n = 0;
    for (int i = 0; i < 3; i++)
        n += rounded_bytes(node, 2, node->src[i]);
    if (rounds || att_dropout(node))
        n += probs_bytes(&a, rounds ? 2 : rt_dtype_size(node->src[0]->dtype));
    return n + RT_CUDA_GEMM_WORKSPACE;
}

static size_t ws_attention_backward(rt_backend_device *dev, const rt_node *node)
{
    (void)dev;
    att_dims a;
    att_dims_of(node, node->src[1], node->src[2], &a);
    gboolean rounds = rt_cuda_rounds(node, 2);
    size_t n = 0, es = rt_dtype_size(node->src[0]->dtype);
    for (int i = 0; i < 4; i++)
        n += rounded_bytes(node, 2, node->src[i]);
    return n + probs_bytes(&a, rounds ? 2 : es) + probs_bytes(&a, es) + RT_CUDA_GEMM_WORKSPACE;
}

/* the address of operand j of GEMM i for batch element b */
static void *att_operand(const att_priv *m, int i, int j, void *base, int64_t b)
{
    return (uint8_t *)base + b * m->outer[i][j] * (int64_t)m->esize[i][j];
}

static gboolean att_plan(rt_cuda_ctx *ctx, const rt_node *node, att_priv *m, int i, rt_cuda_gemm_desc *d,
                         const void *A, const void *B, const void *C, GError **error)
{
    char label[96];
    d->tf32 = ctx->tf32;
    m->outer[i][0] = d->outer_a;
    m->outer[i][1] = d->outer_b;
    m->outer[i][2] = d->outer_c;
    m->esize[i][0] = m->esize[i][1] = rt_dtype_size((rt_dtype)d->ab_dtype);
    m->esize[i][2] = rt_dtype_size((rt_dtype)d->c_dtype);
    m->gemm[i] = rt_cuda_gemm_plan(ctx->dev, d, A, B, C, label_of(ctx, node, label, sizeof label), error);
    return m->gemm[i] != NULL;
}

/* GEMM i over every batch element (one call when the heads are merged) */
static gboolean att_run_gemm(rt_cuda_ctx *ctx, const rt_node *node, const att_priv *m, int i, void *A,
                             void *B, void *C, GError **error)
{
    char label[96];
    int64_t calls = m->a.merged ? 1 : m->a.B;
    for (int64_t b = 0; b < calls; b++)
        if (!rt_cuda_gemm_run(ctx->dev, m->gemm[i], att_operand(m, i, 0, A, b), att_operand(m, i, 1, B, b),
                              att_operand(m, i, 2, C, b), m->cublas, label_of(ctx, node, label, sizeof label),
                              error))
            return FALSE;
    return TRUE;
}

static rt_cuda_att att_rows(const rt_cuda_ctx *ctx, const rt_node *node, const att_priv *m,
                            const rt_tensor *mask, const rt_tensor *rng)
{
    rt_cuda_att r;
    memset(&r, 0, sizeof r);
    r.B = m->a.B;
    r.H = m->a.H;
    r.L = m->a.L;
    r.S = m->a.S;
    r.mask = mask ? rt_cuda_ptr(ctx, mask) : NULL;
    r.dropout = m->dropout;
    r.p = node->fp[0];
    r.rng.state = m->dropout ? rt_cuda_ptr(ctx, rng) : NULL;
    r.rng.node = node->ip[3];
    r.rng.batch = m->a.B;
    return r;
}

/* the common part of both directions: dims, rounding, dropout and the copies */
static att_priv *att_new(const rt_node *node, const rt_tensor *q, const rt_tensor *k)
{
    att_priv *m = g_new0(att_priv, 1);
    att_dims_of(node, q, k, &m->a);
    m->rounds = rt_cuda_rounds(node, 2);
    m->dropout = att_dropout(node);
    m->cd = (int)node->ip[2];
    m->pd_dtype = m->rounds ? m->cd : (int)q->dtype;
    return m;
}

static gboolean att_prepare(rt_cuda_ctx *ctx, const rt_node *node, void **priv, GError **error)
{
    const rt_tensor *q = node->src[0], *k = node->src[1], *v = node->src[2];
    att_priv *m = att_new(node, q, k);
    const att_dims *a = &m->a;
    uint8_t *ws = rt_cuda_ws(ctx, node);
    const void *in[3];
    for (int i = 0; i < 3; i++) {
        in[i] = rt_cuda_ptr(ctx, node->src[i]);
        if (m->rounds) {
            m->rounded[i] = ws;
            in[i] = ws;
            ws += rounded_bytes(node, 2, node->src[i]);
        }
    }
    const void *pv_a = rt_cuda_ptr(ctx, node->out[1]);
    if (m->rounds || m->dropout) {
        m->pd = ws;
        pv_a = ws;
        ws += probs_bytes(a, rt_dtype_size((rt_dtype)m->pd_dtype));
    }
    m->cublas = ws;
    int t = q->dtype, ab = m->rounds ? m->cd : t;
    int64_t LS = a->L * a->S, hls = a->H * LS;
    rt_cuda_gemm_desc d;
    /* scores = scale * Q K^T -> probs [B, H, L, S] */
    att_gemm(a, &d, t, ab, FALSE, TRUE, a->L, a->S, a->d, a->rs_q, a->d, a->ob_q, a->rs_k, a->d, a->ob_k,
             a->S, LS, hls, node->fp[1]);
    if (!att_plan(ctx, node, m, 0, &d, in[0], in[1], rt_cuda_ptr(ctx, node->out[1]), error))
        goto fail;
    /* out = Pd V */
    att_gemm(a, &d, t, ab, FALSE, FALSE, a->L, a->d, a->S, a->S, LS, hls, a->rs_k, a->d, a->ob_k, a->rs_q,
             a->d, a->ob_q, 1.0);
    if (!att_plan(ctx, node, m, 1, &d, pv_a, in[2], rt_cuda_ptr(ctx, node->out[0]), error))
        goto fail;
    (void)v;
    *priv = m;
    return TRUE;
fail:
    att_release(m);
    return FALSE;
}

static gboolean att_run(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    att_priv *m = priv;
    void *in[3];
    for (int i = 0; i < 3; i++) {
        in[i] = m->rounds ? m->rounded[i] : rt_cuda_ptr(ctx, node->src[i]);
        if (m->rounds && !rt_cuda_round_input(ctx, node, node->src[i], m->cd, m->rounded[i], error))
            return FALSE;
    }
    void *probs = rt_cuda_ptr(ctx, node->out[1]);
    if (!att_run_gemm(ctx, node, m, 0, in[0], in[1], probs, error))
        return FALSE;
    rt_cuda_att rows = att_rows(ctx, node, m, node->src[3], node->src[4]);
    if (!rt_cuda_launched(
            ctx, node,
            rt_cuda_att_softmax(node->src[0]->dtype, &rows, probs, m->pd_dtype, m->pd, ctx->stream), error))
        return FALSE;
    return att_run_gemm(ctx, node, m, 1, m->pd ? (void *)m->pd : probs, in[2], rt_cuda_ptr(ctx, node->out[0]),
                        error);
}

const rt_cuda_op rt_cuda_op_attention = {float_in, ws_attention, att_prepare, att_release, att_run};

enum { G_DV, G_DP, G_DQ, G_DK };

static gboolean att_backward_prepare(rt_cuda_ctx *ctx, const rt_node *node, void **priv, GError **error)
{
    const rt_tensor *q = node->src[1], *k = node->src[2];
    att_priv *m = att_new(node, q, k);
    const att_dims *a = &m->a;
    uint8_t *ws = rt_cuda_ws(ctx, node);
    const void *in[4]; /* dO, Q, K, V */
    for (int i = 0; i < 4; i++) {
        in[i] = rt_cuda_ptr(ctx, node->src[i]);
        if (m->rounds) {
            m->rounded[i] = ws;
            in[i] = ws;
            ws += rounded_bytes(node, 2, node->src[i]);
        }
    }
    size_t es = rt_dtype_size(q->dtype);
    m->pd = ws;
    ws += probs_bytes(a, m->rounds ? 2 : es);
    m->dp = ws;
    ws += probs_bytes(a, es);
    m->cublas = ws;
    /* without rounding or dropout, pd is the saved probabilities */
    const void *pd = m->rounds || m->dropout ? (const void *)m->pd : rt_cuda_ptr(ctx, node->src[4]);
    const void *ds = m->rounds ? (const void *)m->pd : m->dp;
    int t = q->dtype, ab = m->rounds ? m->cd : t;
    int64_t LS = a->L * a->S, hls = a->H * LS;
    double scale = node->fp[1];
    rt_cuda_gemm_desc d;
    /* dV = Pd^T dO */
    att_gemm(a, &d, t, ab, TRUE, FALSE, a->S, a->d, a->L, a->S, LS, hls, a->rs_q, a->d, a->ob_q, a->rs_k,
             a->d, a->ob_k, 1.0);
    if (!att_plan(ctx, node, m, G_DV, &d, pd, in[0], rt_cuda_ptr(ctx, node->out[2]), error))
        goto fail;
    /* dPd = dO V^T (output in T, not rounded) */
    att_gemm(a, &d, t, ab, FALSE, TRUE, a->L, a->S, a->d, a->rs_q, a->d, a->ob_q, a->rs_k, a->d, a->ob_k,
             a->S, LS, hls, 1.0);
    if (!att_plan(ctx, node, m, G_DP, &d, in[0], in[3], m->dp, error))
        goto fail;
    /* dQ = scale dS K */
    att_gemm(a, &d, t, ab, FALSE, FALSE, a->L, a->d, a->S, a->S, LS, hls, a->rs_k, a->d, a->ob_k, a->rs_q,
             a->d, a->ob_q, scale);
    if (!att_plan(ctx, node, m, G_DQ, &d, ds, in[2], rt_cuda_ptr(ctx, node->out[0]), error))
        goto fail;
    /* dK = scale dS^T Q */
    att_gemm(a, &d, t, ab, TRUE, FALSE, a->S, a->d, a->L, a->S, LS, hls, a->rs_q, a->d, a->ob_q, a->rs_k,
             a->d, a->ob_k, scale);
    if (!att_plan(ctx, node, m, G_DK, &d, ds, in[1], rt_cuda_ptr(ctx, node->out[1]), error))
        goto fail;
    *priv = m;
    return TRUE;
fail:
    att_release(m);
    return FALSE;
}

static gboolean att_backward_run(rt_cuda_ctx *ctx, const rt_node *node, void *priv, GError **error)
{
    att_priv *m = priv;
    void *in[4];
    for (int i = 0; i < 4; i++) {
        in[i] = m->rounds ? m->rounded[i] : rt_cuda_ptr(ctx, node->src[i]);
        if (m->rounds && !rt_cuda_round_input(ctx, node, node->src[i], m->cd, m->rounded[i], error))
            return FALSE;
    }
    int t = node->src[1]->dtype;
    void *probs = rt_cuda_ptr(ctx, node->src[4]);
    rt_cuda_att rows = att_rows(ctx, node, m, NULL, node->src[5]);
    void *pd = probs;
    if (m->rounds || m->dropout) {
        pd = m->pd;
        if (!rt_cuda_launched(ctx, node, rt_cuda_att_redrop(t, &rows, probs, m->pd_dtype, m->pd, ctx->stream),
                              error))
            return FALSE;
    }
    if (!att_run_gemm(ctx, node, m, G_DV, pd, in[0], rt_cuda_ptr(ctx, node->out[2]), error) ||
        !att_run_gemm(ctx, node, m, G_DP, in[0], in[3], m->dp, error))
        return FALSE;
    /* dS into dp (T), and rounded into the pd buffer, which dV no longer needs */
    if (!rt_cuda_launched(
            ctx, node,
            rt_cuda_att_dscores(t, &rows, probs, m->dp, m->cd, m->rounds ? m->pd : NULL, ctx->stream), error))
        return FALSE;
    void *ds = m->rounds ? (void *)m->pd : m->dp;
    return att_run_gemm(ctx, node, m, G_DQ, ds, in[2], rt_cuda_ptr(ctx, node->out[0]), error) &&
           att_run_gemm(ctx, node, m, G_DK, ds, in[1], rt_cuda_ptr(ctx, node->out[1]), error);
}

const rt_cuda_op rt_cuda_op_attention_backward = {float_in, ws_attention_backward, att_backward_prepare,
                                                  att_release, att_backward_run};
