/* Every CUDA kernel against its CPU twin. Each case builds the same small graph twice, plans one
 * copy on the CPU and one on cuda:0, fills both with the same random inputs and parameters,
 * runs them and compares every named output, every parameter gradient (cases with a backward
 * pass: loss = sum of output * random weights) and, for the optimizer case, the parameters
 * after three AdamW steps. Float results agree within tolerances per dtype and compute dtype
 * (f32, f64; bf16 and f16 mixed precision); copies, casts, pooling, embeddings, dropout masks
 * and uniform draws agree bit for bit.
 *
 * Without a GPU the program only checks its coverage, then skips: every op of the op table
 * must be claimed by a case (or listed as CPU-only, none are), so a new op without a CUDA test
 * fails `make check` here. On a GPU each case's CUDA graph must really contain the ops it
 * claims, and the CUDA backend must accept every node (supports_op). Also on the GPU: a bad
 * embedding index and an f64 convolution give errors that name the node. */
#include "config.h"

#include "cuda-test.h"

/* ---- cases */

enum { MAX_IO = 24 };
enum { IN_FLOAT, IN_INDEX, IN_MASK };

typedef struct io {
    rt_graph *g;
    rt_dtype dt; /* the case's float dtype */
    int n_in;
    rt_tensor *in[MAX_IO];
    int kind[MAX_IO];
    double lo[MAX_IO], hi[MAX_IO];
    int64_t rows[MAX_IO];
    int n_out;
    rt_tensor *out[MAX_IO];
    int n_param;
} io;

typedef struct cuda_case {
    const char *name;
    void (*build)(io *o);
    int ops[12];        /* the ops it runs on the GPU; RT_OP_COUNT ends the list */
    uint32_t flags;     /* rt_graph_new flags */
    gboolean backward;  /* loss = sum(out * r), gradients compared */
    gboolean optimizer; /* AdamW appended, three steps, parameters compared */
    gboolean exact;     /* bit for bit */
    gboolean f32_only;  /* no f64 run (the CUDA backend's convolutions are f32) */
    gboolean mixed;     /* also run with compute dtype bf16 and f16 */
    double scale_tol;   /* tolerances times this (0: 1) */
} cuda_case;

#define SHAPE(...)                                                                                           \
    G_N_ELEMENTS(((int64_t[]){__VA_ARGS__})), (int64_t[])                                                    \
    {                                                                                                        \
        __VA_ARGS__                                                                                          \
    }

static rt_tensor *add_input(io *o, const char *prefix, int kind, rt_dtype dtype, int nd, const int64_t *shape,
                            double lo, double hi, int64_t rows, gboolean param)
{
    char name[32];
    g_snprintf(name, sizeof name, "%s%d", prefix, o->n_in);
    rt_tensor *t = param ? rt_param(o->g, name, dtype, nd, shape, rt_init_constant(0))
                         : rt_input(o->g, name, dtype, nd, shape, nd > 0 ? 0 : -1);
    g_assert(o->n_in < MAX_IO);
    o->in[o->n_in] = t;
    o->kind[o->n_in] = kind;
    o->lo[o->n_in] = lo;
    o->hi[o->n_in] = hi;
    o->rows[o->n_in] = rows;
    o->n_in++;
    return t;
}

/* a float input in [lo, hi) */
static rt_tensor *x_in(io *o, double lo, double hi, int nd, const int64_t *shape)
{
    return add_input(o, "x", IN_FLOAT, o->dt, nd, shape, lo, hi, 0, FALSE);
}
/* a trainable parameter in [lo, hi) */
static rt_tensor *p_in(io *o, double lo, double hi, int nd, const int64_t *shape)
{
    o->n_param++;
    return add_input(o, "p", IN_FLOAT, o->dt, nd, shape, lo, hi, 0, TRUE);
}
/* i64 indices in 0..rows-1 */
static rt_tensor *idx_in(io *o, int64_t rows, int nd, const int64_t *shape)
{
    return add_input(o, "i", IN_INDEX, RT_I64, nd, shape, 0, 0, rows, FALSE);
}
/* bool mask, about 30% TRUE, never the first element of the last axis */
static rt_tensor *mask_in(io *o, int nd, const int64_t *shape)
{
    return add_input(o, "m", IN_MASK, RT_BOOL, nd, shape, 0, 0, 0, FALSE);
}

#define X(o, lo, hi, ...) x_in((o), (lo), (hi), SHAPE(__VA_ARGS__))
#define P(o, ...) p_in((o), -1, 1, SHAPE(__VA_ARGS__))
#define PR(o, lo, hi, ...) p_in((o), (lo), (hi), SHAPE(__VA_ARGS__))
#define IDX(o, rows, ...) idx_in((o), (rows), SHAPE(__VA_ARGS__))
#define MASK(o, ...) mask_in((o), SHAPE(__VA_ARGS__))

static void out(io *o, rt_tensor *t)
{
    char name[16];
    g_snprintf(name, sizeof name, "y%d", o->n_out);
    t = rt_contiguous(o->g, t);
    rt_graph_output(o->g, name, t);
    g_assert(o->n_out < MAX_IO);
    o->out[o->n_out++] = t;
}

/* ---- the cases' graphs */

static void build_casts(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = X(o, -6, 6, 3, 5);
    out(o, rt_cast(g, x, RT_BF16));
    out(o, rt_cast(g, x, RT_F16));
    out(o, rt_cast(g, x, RT_I64));
    out(o, rt_cast(g, x, RT_I32));
    out(o, rt_cast(g, x, RT_BOOL));
    out(o, rt_cast(g, x, RT_U8));
    out(o, rt_cast(g, rt_transpose(g, x, 0, 1), RT_BF16)); /* strided source */
    out(o, rt_cast(g, rt_cast(g, x, RT_BF16), RT_F64));
    out(o, rt_cast(g, rt_cast(g, x, RT_F16), RT_F32));
    rt_tensor *i = IDX(o, 1000, 4, 3);
    out(o, rt_cast(g, i, RT_F32));
    out(o, rt_cast(g, i, RT_F16));
    out(o, rt_cast(g, rt_cast(g, i, RT_I32), RT_I64));
    out(o, rt_fill(g, RT_I64, SHAPE(2, 3), 7.9));
    out(o, rt_fill(g, RT_BF16, SHAPE(5), 1.0 / 3.0));
    out(o, rt_fill(g, RT_BOOL, SHAPE(3), -2));
    out(o, rt_fill(g, o->dt, SHAPE(4, 2), -0.1));
}

static void build_copies(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = X(o, -1, 1, 4, 6, 5);
    out(o, rt_transpose(g, x, 0, 2));
    out(o, rt_slice(g, x, 1, 2, 3));
    out(o, rt_expand(g, X(o, -1, 1, 1, 6, 1), SHAPE(4, 6, 5)));
    out(o, rt_reshape(g, x, SHAPE(24, -1)));
    out(o, rt_pad(g, x, 2, 1, 2));
    out(o, rt_pad(g, rt_transpose(g, x, 0, 1), 0, 2, 0));
    rt_tensor *parts[3] = {x, rt_slice(g, x, 1, 1, 2), x};
    out(o, rt_concat(g, parts, 3, 1));
    rt_tensor *xb = rt_cast(g, x, RT_BF16); /* 2-byte elements */
    rt_tensor *pb[2] = {xb, rt_transpose(g, xb, 0, 2)};
    out(o, rt_concat(g, pb, 1, 0));
    out(o, rt_pad(g, pb[1], 1, 1, 1));
    rt_tensor *i = IDX(o, 50, 3, 4); /* 8-byte elements */
    out(o, rt_pad(g, i, 0, 1, 1));
    rt_tensor *m = MASK(o, 3, 4); /* 1-byte elements */
    rt_tensor *pm[2] = {m, m};
    out(o, rt_concat(g, pm, 2, 1));
}

static void build_binary(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *a = P(o, 2, 1, 4), *b = P(o, 3, 1), *c = P(o, 4, 3), *d = PR(o, 0.5, 2, 3, 4);
    out(o, rt_add(g, a, b));
    out(o, rt_sub(g, b, a));
    out(o, rt_mul(g, a, rt_transpose(g, c, 0, 1))); /* strided operand */
    out(o, rt_div(g, a, d));
    out(o, rt_div(g, c, rt_transpose(g, d, 0, 1)));
}

static void build_unary(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = PR(o, -3, 3, 5, 7);
    rt_tensor *v = rt_transpose(g, x, 0, 1);
    out(o, rt_scale(g, v, -1.5, 0.25));
    out(o, rt_relu(g, v));
    out(o, rt_gelu(g, v));
    out(o, rt_exp(g, v));
}

static void build_glu(io *o)
{
    rt_graph *g = o->g;
    out(o, rt_glu(o->g, P(o, 2, 6, 3), 1));
    out(o, rt_glu(g, PR(o, -3, 3, 5, 8), -1));
}

static void build_sums(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = P(o, 3, 4, 5, 2);
    out(o, rt_sum(g, x, RT_AXIS(0), FALSE));
    out(o, rt_sum(g, x, RT_AXIS(1) | RT_AXIS(3), FALSE));
    out(o, rt_mean(g, x, RT_AXIS(3), TRUE));
    out(o, rt_sum(g, x, RT_ALL_AXES, FALSE));
    out(o, rt_mean(g, x, RT_AXIS(0) | RT_AXIS(1), FALSE));
    out(o, rt_sum(g, P(o, 2, 3000), RT_AXIS(1), FALSE)); /* long rows: a block per output */
    out(o, rt_sum(g, P(o, 700, 33), RT_AXIS(0), FALSE)); /* column sums over 11 row chunks */
}

static void build_matmul(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *a = P(o, 2, 3, 4, 5), *b = P(o, 2, 3, 5, 6);
    out(o, rt_matmul(g, a, b, FALSE, FALSE));
    out(o, rt_matmul(g, a, P(o, 2, 3, 6, 5), FALSE, TRUE));
    out(o, rt_matmul(g, P(o, 2, 3, 5, 4), b, TRUE, FALSE));
    out(o, rt_matmul(g, P(o, 7, 4), P(o, 9, 7), TRUE, TRUE));
    out(o, rt_matmul(g, a, P(o, 5, 6), FALSE, FALSE));               /* shared b: folded rows */
    out(o, rt_matmul(g, P(o, 2, 3, 5, 4), P(o, 5, 6), TRUE, FALSE)); /* shared b: batch stride 0 */
}

static void build_linear(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *w = P(o, 5, 8), *b = P(o, 5);
    out(o, rt_linear(g, P(o, 2, 3, 8), w, b));
    out(o, rt_linear(g, P(o, 4, 8), w, NULL));
    out(o, rt_linear(g, P(o, 33, 64), P(o, 40, 64), P(o, 40)));
}

static void build_conv(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = P(o, 2, 3, 9, 8);
    out(o, rt_conv2d(g, x, P(o, 4, 3, 3, 3), P(o, 4), 1, 1, 1, 1, 1, 1));
    out(o, rt_conv2d(g, x, P(o, 5, 3, 3, 2), NULL, 2, 1, 0, 1, 1, 2));
    out(o, rt_conv2d(g, x, P(o, 6, 3, 1, 1), P(o, 6), 1, 1, 0, 0, 1, 1));
    out(o, rt_conv2d(g, P(o, 1, 8, 16, 16), P(o, 8, 8, 3, 3), NULL, 2, 2, 1, 1, 1, 1));
}

static void build_frozen_bn(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = P(o, 2, 3, 4, 5);
    rt_tensor *w = X(o, 0.5, 1.5, 3), *b = X(o, -1, 1, 3), *mean = X(o, -1, 1, 3), *var = X(o, 0.5, 2, 3);
    out(o, rt_frozen_batch_norm(g, x, w, b, mean, var, 1e-5));
    out(o, rt_frozen_batch_norm(g, x, w, NULL, NULL, var, 1e-3));
}

static void build_max_pool(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = P(o, 2, 3, 9, 7);
    out(o, rt_max_pool2d(g, x, 3, 2, 1)); /* overlapping windows */
    out(o, rt_max_pool2d(g, x, 2, 2, 0));
    out(o, rt_max_pool2d(g, P(o, 1, 2, 5, 5), 3, 1, 1));
}

static void build_layer_norm(io *o)
{
    rt_graph *g = o->g;
    out(o, rt_layer_norm(g, P(o, 6, 10), P(o, 10), P(o, 10), 1e-5));
    out(o, rt_layer_norm(g, P(o, 3, 2, 40), NULL, NULL, 1e-5));
    out(o, rt_layer_norm(g, P(o, 4, 1500), P(o, 1500), NULL, 1e-6));
    out(o, rt_layer_norm(g, P(o, 200, 16), NULL, P(o, 16), 1e-5)); /* several row chunks */
}

static void build_softmax(io *o)
{
    rt_graph *g = o->g;
    out(o, rt_softmax(g, PR(o, -3, 3, 5, 7)));
    out(o, rt_softmax(g, P(o, 2, 3, 1100)));
}

static void build_attention(io *o)
{
    rt_graph *g = o->g;
    double p = rt_graph_is_training(g) ? 0.3 : 0.0;
    /* sequence first with a key padding mask: all B * H heads in one GEMM batch */
    rt_tensor *q = P(o, 5, 2, 8), *k = P(o, 7, 2, 8), *v = P(o, 7, 2, 8);
    out(o, rt_attention(g, q, k, v, MASK(o, 2, 7), 2, p, FALSE));
    /* batch first: one GEMM batch per batch element */
    out(o, rt_attention(g, P(o, 3, 4, 8), P(o, 3, 6, 8), P(o, 3, 6, 8), NULL, 4, p, TRUE));
}

static void build_embedding(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *w = P(o, 10, 6);
    out(o, rt_embedding(g, w, IDX(o, 10, 3, 4)));
    out(o, rt_embedding(g, w, IDX(o, 10, 7)));
}

static void build_dropout(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *x = P(o, 4, 6, 5);
    out(o, rt_dropout(g, x, 0.4));
    out(o, rt_dropout(g, rt_transpose(g, x, 0, 2), 0.25)); /* strided */
    out(o, rt_dropout(g, P(o, 3, 3000), 0.1));
    /* inputs have a batch axis: the sample index counts from the offset of rt_graph_set_rng */
    out(o, rt_mul(g, rt_dropout(g, X(o, -1, 1, 5, 3, 2), 0.5), P(o, 5, 3, 2)));
}

static void build_rand_uniform(io *o)
{
    rt_graph *g = o->g;
    out(o, rt_rand_uniform(g, o->dt, SHAPE(5, 7), 0, -2, 3));
    out(o, rt_rand_uniform(g, o->dt, SHAPE(3, 2, 5), 1, 0, 1));
    out(o, rt_rand_uniform(g, o->dt, SHAPE(9), -1, 10, 11));
}

static void build_rand_normal(io *o)
{
    rt_graph *g = o->g;
    out(o, rt_rand_normal(g, o->dt, SHAPE(5, 7), 0, 1, 0.5));
    out(o, rt_rand_normal(g, o->dt, SHAPE(3, 2, 5), 1, 0, 2));
    out(o, rt_randn_like(g, X(o, -1, 1, 4, 3)));
    out(o, rt_rand_normal(g, o->dt, SHAPE(7), -1, 0, 1)); /* a partial last block */
}

static void build_l1(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *pred = P(o, 4, 5, 3), *target = P(o, 4, 5, 3), *mask = MASK(o, 4, 5);
    out(o, rt_masked_l1_loss(g, pred, target, mask, RT_L1_MEAN_VALID));
    out(o, rt_masked_l1_loss(g, pred, target, NULL, RT_L1_MEAN_ALL));
    out(o, rt_masked_l1_loss(g, pred, target, mask, RT_L1_MEAN_ALL));
    out(o, rt_masked_l1_loss(g, P(o, 3, 20000), P(o, 3, 20000), NULL, RT_L1_MEAN_VALID)); /* 4 chunks */
}

static void build_kl(io *o)
{
    out(o, rt_kl_loss(o->g, P(o, 4, 6), P(o, 4, 6)));
    out(o, rt_kl_loss(o->g, P(o, 3, 7000), PR(o, -2, 1, 3, 7000)));
}

/* a small network for the optimizer: the loss also depends on one frozen parameter group */
static void build_optimizer(io *o)
{
    rt_graph *g = o->g;
    rt_tensor *h = rt_gelu(g, rt_linear(g, X(o, -1, 1, 6, 5), P(o, 8, 5), P(o, 8)));
    out(o, rt_layer_norm(g, h, P(o, 8), P(o, 8), 1e-5));
}

static const cuda_case cases[] = {
    {"casts", build_casts, {RT_OP_CAST, RT_OP_FILL, RT_OP_PERMUTE, RT_OP_COUNT}, .exact = TRUE},
    {"copies",
     build_copies,
     {RT_OP_CONTIGUOUS, RT_OP_RESHAPE, RT_OP_PERMUTE, RT_OP_SLICE, RT_OP_EXPAND, RT_OP_PAD, RT_OP_CONCAT,
      RT_OP_CAST, RT_OP_COUNT},
     .exact = TRUE},
    {"binary",
     build_binary,
     {RT_OP_ADD, RT_OP_SUB, RT_OP_MUL, RT_OP_DIV, RT_OP_SUM, RT_OP_COUNT},
     .backward = TRUE},
    {"unary",
     build_unary,
     {RT_OP_SCALE, RT_OP_RELU, RT_OP_RELU_BACKWARD, RT_OP_GELU, RT_OP_GELU_BACKWARD, RT_OP_EXP, RT_OP_COUNT},
     .backward = TRUE},
    {"glu", build_glu, {RT_OP_GLU, RT_OP_GLU_BACKWARD, RT_OP_COUNT}, .backward = TRUE},
    {"sums", build_sums, {RT_OP_SUM, RT_OP_COUNT}, .backward = TRUE},
    {"matmul", build_matmul, {RT_OP_MATMUL, RT_OP_COUNT}, .backward = TRUE, .mixed = TRUE},
    {"linear",
     build_linear,
     {RT_OP_LINEAR, RT_OP_MATMUL, RT_OP_SUM, RT_OP_COUNT},
     .backward = TRUE,
     .mixed = TRUE},
    {"linear_tf32",
     build_linear,
     {RT_OP_LINEAR, RT_OP_MATMUL, RT_OP_COUNT},
     .flags = RT_GRAPH_TF32,
     .backward = TRUE,
     .f32_only = TRUE,
     .scale_tol = 100},
    {"conv2d",
     build_conv,
     {RT_OP_CONV2D, RT_OP_CONV2D_BACKWARD_DATA, RT_OP_CONV2D_BACKWARD_WEIGHT, RT_OP_COUNT},
     .backward = TRUE,
     .f32_only = TRUE,
     .mixed = TRUE},
    {"conv2d_tf32",
     build_conv,
     {RT_OP_CONV2D, RT_OP_COUNT},
     .flags = RT_GRAPH_TF32,
     .backward = TRUE,
     .f32_only = TRUE,
     .scale_tol = 100},
    {"frozen_batch_norm", build_frozen_bn, {RT_OP_FROZEN_BATCH_NORM, RT_OP_COUNT}, .backward = TRUE},
    {"max_pool2d",
     build_max_pool,
     {RT_OP_MAX_POOL2D, RT_OP_MAX_POOL2D_BACKWARD, RT_OP_COUNT},
     .backward = TRUE,
     .exact = TRUE},
    {"layer_norm",
     build_layer_norm,
     {RT_OP_LAYER_NORM, RT_OP_LAYER_NORM_BACKWARD, RT_OP_COUNT},
     .backward = TRUE},
    {"softmax", build_softmax, {RT_OP_SOFTMAX, RT_OP_SOFTMAX_BACKWARD, RT_OP_COUNT}, .backward = TRUE},
    {"attention",
     build_attention,
     {RT_OP_ATTENTION, RT_OP_ATTENTION_BACKWARD, RT_OP_COUNT},
     .backward = TRUE,
     .mixed = TRUE},
    {"attention_dropout",
     build_attention,
     {RT_OP_ATTENTION, RT_OP_ATTENTION_BACKWARD, RT_OP_COUNT},
     .flags = RT_GRAPH_TRAIN,
     .backward = TRUE,
     .mixed = TRUE},
    {"embedding",
     build_embedding,
     {RT_OP_EMBEDDING, RT_OP_EMBEDDING_BACKWARD, RT_OP_COUNT},
     .backward = TRUE,
     .exact = TRUE},
    {"dropout",
     build_dropout,
     {RT_OP_DROPOUT, RT_OP_COUNT},
     .flags = RT_GRAPH_TRAIN,
     .backward = TRUE,
     .exact = TRUE},
    {"rand_uniform",
     build_rand_uniform,
     {RT_OP_RAND_UNIFORM, RT_OP_COUNT},
     .flags = RT_GRAPH_TRAIN,
     .exact = TRUE},
    {"rand_normal", build_rand_normal, {RT_OP_RAND_NORMAL, RT_OP_COUNT}, .flags = RT_GRAPH_TRAIN},
    {"l1_loss",
     build_l1,
     {RT_OP_L1_LOSS, RT_OP_L1_LOSS_BACKWARD, RT_OP_SCALE, RT_OP_COUNT},
     .backward = TRUE},
    {"kl_loss", build_kl, {RT_OP_KL_LOSS, RT_OP_KL_LOSS_BACKWARD, RT_OP_COUNT}, .backward = TRUE},
    {"optimizer",
     build_optimizer,
     {RT_OP_STEP_INC, RT_OP_GRAD_NORM, RT_OP_CLIP_GRAD, RT_OP_ADAMW, RT_OP_COUNT},
     .backward = TRUE,
     .optimizer = TRUE},
};

/* Ops with no CPU-twin case here: dynamic loss scaling (fp16 mixed precision,
 * tests/test-loss-scale.c), which the CUDA backend refuses at planning for now; and allreduce
 * (data-parallel gradient averaging), whose CUDA row only hands the bucket to the graph's
 * collective (NCCL, from the trainer) on the step's stream: nothing to compare with the CPU in
 * one process. */
static const int cpu_only_ops[] = {RT_OP_AMP_UNSCALE, RT_OP_AMP_UPDATE, RT_OP_ALLREDUCE, RT_OP_COUNT};

/* ---- coverage, without a GPU */

static gboolean claimed(int op)
{
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++)
        for (int k = 0; cases[c].ops[k] != RT_OP_COUNT; k++)
            if (cases[c].ops[k] == op)
                return TRUE;
    for (size_t k = 0; cpu_only_ops[k] != RT_OP_COUNT; k++)
        if (cpu_only_ops[k] == op)
            return TRUE;
    return FALSE;
}

DEF_TEST(every_op_has_a_cuda_case)
{
    for (int op = 0; op < rt_op_count(); op++) {
        int ok = claimed(op);
        RT_TEST_REPORT(ok, "op %s has a CUDA case here or is listed as CPU-only", rt_op_name((rt_op)op));
        if (!ok)
            return -1;
    }
    return 0;
}

/* ---- running a case */

static uint64_t seed_of(const char *s, int i)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return (h ^ (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull) | 1;
}

static gboolean fill_inputs(const cuda_case *c, io *o)
{
    GError *error = NULL;
    for (int i = 0; i < o->n_in; i++) {
        rt_tensor *t = o->in[i];
        int64_t n = rt_tensor_numel(t);
        rt_test_rng r = {seed_of(c->name, i)};
        gboolean ok;
        if (o->kind[i] == IN_FLOAT) {
            double *v = g_new(double, n);
            rt_test_fill(&r, v, n, o->lo[i], o->hi[i]);
            ok = rt_test_write(o->g, t, v);
            g_free(v);
            if (!ok)
                return FALSE;
            continue;
        }
        if (o->kind[i] == IN_INDEX) {
            int64_t *v = g_new(int64_t, n);
            for (int64_t e = 0; e < n; e++)
                v[e] = (int64_t)(rt_test_uniform(&r, 0, 1) * (double)o->rows[i]) % o->rows[i];
            ok = rt_graph_write(o->g, t, v, (size_t)n * 8, &error);
            g_free(v);
        } else {
            uint8_t *v = g_new(uint8_t, n);
            int64_t last = t->ndim ? t->shape[t->ndim - 1] : 1;
            for (int64_t e = 0; e < n; e++)
                v[e] = e % last != 0 && rt_test_uniform(&r, 0, 1) < 0.3;
            ok = rt_graph_write(o->g, t, v, (size_t)n, &error);
            g_free(v);
        }
        if (!ok) {
            printf("# rt_graph_write: %s\n", error->message);
            g_error_free(error);
            return FALSE;
        }
    }
    return TRUE;
}

/* Builds the case into o->g (dtype dt, compute dtype cd), with its loss, backward pass and
 * optimizer. */
static gboolean build_case(const cuda_case *c, rt_dtype dt, rt_dtype cd, io *o)
{
    memset(o, 0, sizeof *o);
    o->g = rt_graph_new(c->flags);
    o->dt = dt;
    rt_graph_set_compute_dtype(o->g, cd);
    c->build(o);
    GError *error = NULL;
    if (c->backward) {
        rt_tensor *loss = NULL;
        int n_out = o->n_out;
        for (int k = 0; k < n_out; k++) {
            rt_tensor *y = o->out[k];
            if (!rt_dtype_is_float(y->dtype))
                continue;
            rt_tensor *r = x_in(o, -1, 1, y->ndim, y->shape);
            rt_tensor *term = rt_cast(o->g, rt_sum(o->g, rt_mul(o->g, y, r), RT_ALL_AXES, FALSE), dt);
            loss = loss ? rt_add(o->g, loss, term) : term;
        }
        rt_set_loss(o->g, loss);
        if (!rt_graph_backward(o->g, &error)) {
            printf("# %s: rt_graph_backward: %s\n", c->name, error->message);
            g_error_free(error);
            return FALSE;
        }
    }
    if (c->optimizer) {
        rt_graph_set_group_by_prefix(o->g, "p2", 1);
        rt_adamw_group groups[2] = {{1e-2, 0.9, 0.999, 1e-8, 1e-2}, {5e-3, 0.8, 0.99, 1e-6, 0}};
        if (!rt_graph_add_adamw(o->g, groups, 2, 0.5, &error)) {
            printf("# %s: rt_graph_add_adamw: %s\n", c->name, error->message);
            g_error_free(error);
            return FALSE;
        }
    }
    if (!rt_graph_check(o->g, &error)) {
        printf("# %s: building: %s\n", c->name, error->message);
        g_error_free(error);
        return FALSE;
    }
    return TRUE;
}

/* Plans, fills and runs. Three steps with an optimizer; on the GPU also three otherwise, all
 * with the same inputs: the warm-up runs eagerly, the second step is captured and launched, the
 * third replays, and the last one's results are compared. */
static gboolean run_case(const cuda_case *c, io *o, const rt_backend_i *backend, rt_backend_device *dev)
{
    if (!rt_cuda_test_plan(o->g, backend, dev) || !fill_inputs(c, o))
        return FALSE;
    gboolean gpu = backend != rt_backend_cpu();
    int steps = c->optimizer || gpu ? 3 : 1;
    GError *error = NULL;
    for (int s = 0; s < steps; s++)
        if (!rt_graph_set_rng(o->g, 1234, 7 + (c->optimizer ? (uint64_t)s : 0), 3, &error) ||
            !rt_graph_compute(o->g, &error)) {
            printf("# %s on %s: %s\n", c->name, backend->device_type, error->message);
            g_error_free(error);
            return FALSE;
        }
    return TRUE;
}

static gboolean ops_seen[RT_OP_COUNT];

/* t on the GPU against t on the CPU */
static int compare(const cuda_case *c, const char *what, rt_graph *gc, const rt_tensor *tc, rt_graph *gg,
                   const rt_tensor *tg, double atol, double rtol)
{
    int64_t n = rt_tensor_numel(tc);
    if (c->exact || !rt_dtype_is_float(tc->dtype)) {
        guint8 *a = rt_cuda_test_read_bytes(gg, tg), *b = rt_cuda_test_read_bytes(gc, tc);
        OK(a && b);
        size_t es = rt_dtype_size(tc->dtype);
        int64_t first = -1;
        for (int64_t i = 0; i < n && first < 0; i++)
            if (memcmp(a + i * es, b + i * es, es) != 0)
                first = i;
        double *va = rt_cuda_test_read_any(gg, tg), *vb = rt_cuda_test_read_any(gc, tc);
        RT_TEST_REPORT(first < 0,
                       "%s: %s %s bit for bit (%lld elements; first difference [%lld] %.9g vs %.9g)", c->name,
                       what, rt_dtype_name(tc->dtype), (long long)n, (long long)first,
                       first >= 0 ? va[first] : 0.0, first >= 0 ? vb[first] : 0.0);
        g_free(a);
        g_free(b);
        g_free(va);
        g_free(vb);
        return first < 0 ? 0 : -1;
    }
    double *a = rt_cuda_test_read_any(gg, tg), *b = rt_cuda_test_read_any(gc, tc);
    OK(a && b);
    int64_t worst = 0;
    double e = rt_test_closeness(a, b, n, atol, rtol, &worst);
    RT_TEST_REPORT(e <= 1.0,
                   "%s: %s %s within atol %g rtol %g (%lld elements; worst [%lld] %.9g vs %.9g, %.3g)",
                   c->name, what, rt_dtype_name(tc->dtype), atol, rtol, (long long)n, (long long)worst,
                   a[worst], b[worst], e);
    g_free(a);
    g_free(b);
    return e <= 1.0 ? 0 : -1;
}

static void tolerance(const cuda_case *c, rt_dtype dt, rt_dtype cd, double *atol, double *rtol)
{
    if (dt == RT_F64) {
        *atol = 1e-11;
        *rtol = 1e-9;
    } else if (cd == RT_BF16) {
        *atol = 1e-2;
        *rtol = 3e-2;
    } else if (cd == RT_F16) {
        *atol = 2e-3;
        *rtol = 5e-3;
    } else {
        *atol = 2e-5;
        *rtol = 2e-4;
    }
    if (c->scale_tol > 0) {
        *atol *= c->scale_tol;
        *rtol *= c->scale_tol;
    }
}

static int run_one(const cuda_case *c, rt_dtype dt, rt_dtype cd, rt_backend_device *gpu)
{
    const rt_backend_i *cuda = rt_cuda_test_load();
    printf("# %s: %s, compute %s\n", c->name, rt_dtype_name(dt), rt_dtype_name(cd));
    io oc, og;
    OK(build_case(c, dt, cd, &oc) && build_case(c, dt, cd, &og));
    OK(run_case(c, &oc, rt_backend_cpu(), rt_test_cpu()));
    OK(run_case(c, &og, cuda, gpu)); /* the plan fails if the backend declines a node */
    /* the case runs the ops it claims */
    gboolean here[RT_OP_COUNT] = {FALSE};
    int n = rt_graph_n_exec_nodes(og.g);
    for (int i = 0; i < n; i++) {
        const rt_node *node = rt_graph_exec_node(og.g, i);
        here[node->op] = ops_seen[node->op] = TRUE;
    }
    for (int k = 0; c->ops[k] != RT_OP_COUNT; k++)
        OK1(here[c->ops[k]], rt_op_name((rt_op)c->ops[k]));
    double atol, rtol;
    tolerance(c, dt, cd, &atol, &rtol);
    int rc = 0;
    for (int k = 0; k < oc.n_out && rc == 0; k++) {
        char what[32];
        g_snprintf(what, sizeof what, "output y%d", k);
        rc = compare(c, what, oc.g, oc.out[k], og.g, og.out[k], atol, rtol);
    }
    for (int i = 0; i < oc.n_in && rc == 0; i++) {
        rt_tensor *pc = oc.in[i], *pg = og.in[i];
        if (!(pc->flags & RT_TENSOR_PARAM))
            continue;
        char what[64];
        if (c->optimizer) {
            g_snprintf(what, sizeof what, "parameter %s after 3 steps", pc->name);
            rc = compare(c, what, oc.g, pc, og.g, pg, atol, rtol);
        } else if (c->backward && rt_graph_grad(oc.g, pc)) {
            g_snprintf(what, sizeof what, "gradient of %s", pc->name);
            rc = compare(c, what, oc.g, rt_graph_grad(oc.g, pc), og.g, rt_graph_grad(og.g, pg), atol, rtol);
        }
    }
    if (c->optimizer && rc == 0)
        rc = compare(c, "grad_norm", oc.g, rt_graph_find(oc.g, "grad_norm"), og.g,
                     rt_graph_find(og.g, "grad_norm"), atol, rtol);
    rt_graph_free(oc.g);
    rt_graph_free(og.g);
    return rc;
}

static rt_backend_device *gpu;

DEF_TEST(every_kernel_matches_its_cpu_twin)
{
    static const rt_dtype cds[3] = {RT_F32, RT_BF16, RT_F16};
    int failed = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const cuda_case *c = &cases[i];
        for (int t = 0; t < (c->f32_only ? 1 : 2); t++)
            for (int k = 0; k < (c->mixed && t == 0 ? 3 : 1); k++)
                if (run_one(c, t == 0 ? RT_F32 : RT_F64, cds[k], gpu) != 0)
                    failed++;
    }
    EXPECT_EQ_INT(0, failed);
    return 0;
}

DEF_TEST(every_op_ran_on_the_gpu)
{
    for (int op = 0; op < rt_op_count(); op++) {
        gboolean cpu_only = FALSE;
        for (size_t k = 0; cpu_only_ops[k] != RT_OP_COUNT; k++)
            cpu_only = cpu_only || cpu_only_ops[k] == op;
        if (cpu_only)
            continue;
        RT_TEST_REPORT(ops_seen[op], "op %s ran on the GPU in some case", rt_op_name((rt_op)op));
        if (!ops_seen[op])
            return -1;
    }
    return 0;
}

/* ---- errors on the GPU */

static rt_graph *embedding_graph(rt_tensor **idx)
{
    rt_graph *g = rt_graph_new(0);
    rt_tensor *w = rt_param(g, "w", RT_F32, 2, (int64_t[]){4, 3}, rt_init_uniform(-1, 1));
    *idx = rt_input(g, "idx", RT_I64, 1, (int64_t[]){5}, 0);
    rt_graph_output(g, "y", rt_embedding(g, w, *idx));
    return g;
}

static int bad_index_on(rt_backend_device *dev, const char *mode)
{
    GError *error = NULL;
    rt_tensor *idx;
    rt_graph *g = embedding_graph(&idx);
    OK(rt_cuda_test_plan(g, rt_cuda_test_load(), dev));
    /* two good steps first: with CUDA graphs the bad one below is then a replay */
    int64_t v[5] = {0, 3, 2, 0, 1};
    OK(rt_graph_write(g, idx, v, sizeof v, &error));
    OK(rt_graph_compute(g, &error) && rt_graph_compute(g, &error));
    EXPECT_NO_ERROR(error);
    v[2] = 4;
    v[3] = 9;
    OK(rt_graph_write(g, idx, v, sizeof v, &error));
    int id = -1;
    for (int i = 0; i < rt_graph_n_exec_nodes(g); i++)
        if (rt_graph_exec_node(g, i)->op == RT_OP_EMBEDDING)
            id = rt_graph_exec_node(g, i)->id;
    char *expect =
        g_strdup_printf("cuda:0: node %d (op embedding) failed: index 4 (element 2 of the indices) is "
                        "outside 0..3 of the embedding table",
                        id);
    printf("# %s\n", mode);
    OK(!rt_graph_compute(g, &error));
    EXPECT_ERROR(error, expect);
    /* the next step with good indices runs: the record was reset */
    v[2] = 2;
    v[3] = 0;
    OK(rt_graph_write(g, idx, v, sizeof v, &error));
    OK(rt_graph_compute(g, &error));
    EXPECT_NO_ERROR(error);
    g_free(expect);
    rt_graph_free(g);
    return 0;
}

DEF_TEST(bad_embedding_index_names_the_node)
{
    OK(bad_index_on(gpu, "CUDA graph") == 0);
    rt_backend_device *eager = rt_cuda_test_open("0");
    OK(bad_index_on(eager, "eager") == 0);
    rt_cuda_test_load()->close(eager);
    g_setenv("ROBOTRAIN_CUDA_SYNC", "1", TRUE);
    rt_backend_device *synced = rt_cuda_test_open("1");
    g_unsetenv("ROBOTRAIN_CUDA_SYNC");
    OK(bad_index_on(synced, "a wait after every node") == 0);
    rt_cuda_test_load()->close(synced);
    return 0;
}

DEF_TEST(unsupported_node_fails_the_plan)
{
    GError *error = NULL;
    rt_graph *g = rt_graph_new(0);
    rt_tensor *x = rt_input(g, "x", RT_F64, 4, (int64_t[]){1, 2, 5, 5}, 0);
    rt_tensor *w = rt_param(g, "w", RT_F64, 4, (int64_t[]){3, 2, 3, 3}, rt_init_uniform(-1, 1));
    rt_tensor *y = rt_conv2d(g, x, w, NULL, 1, 1, 0, 0, 1, 1);
    rt_graph_output(g, "y", y);
    OK(!rt_graph_plan(g, rt_cuda_test_load(), gpu, &error));
    char *expect =
        g_strdup_printf("the cuda backend cannot run node %d (op conv2d): use another device", y->node->id);
    EXPECT_ERROR(error, expect);
    g_free(expect);
    rt_graph_free(g);
    return 0;
}

int main(void)
{
    RUN_TEST(every_op_has_a_cuda_case);
    if (rt_test_failures)
        END_TEST;
    rt_cuda_test_need_gpu();
    gpu = rt_cuda_test_open("1");
    RUN_TEST(every_kernel_matches_its_cpu_twin);
    RUN_TEST(every_op_ran_on_the_gpu);
    RUN_TEST(bad_embedding_index_names_the_node);
    RUN_TEST(unsupported_node_fails_the_plan);
    rt_cuda_test_load()->close(gpu);
    END_TEST;
}
