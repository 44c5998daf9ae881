/* Gradients of every differentiable op against central finite differences in f64, on random
 * shapes with broadcasting, masks, strided views and dropout; then the f32 kernels' gradients
 * against the f64 ones. The op table is iterated: a differentiable op without a case here
 * fails the test. */
#include "config.h"

#include "graph-test.h"

typedef struct grad_case grad_case;
/* Builds the op under test in dtype dt from parameters (the inputs that get gradients) and
 * inputs; returns its result. */
typedef rt_tensor *(*build_fn)(rt_graph *g, rt_dtype dt, const grad_case *c);
/* Writes the inputs (masks, indices) of a planned graph. */
typedef gboolean (*feed_fn)(rt_graph *g, const grad_case *c);

struct grad_case {
    const char *name;
    rt_op op;
    build_fn build;
    feed_fn feed;
    int variant;
    double h;        /* finite-difference step; 0: 1e-6 */
    double f32_tol;  /* relative tolerance of the f32 gradients; 0: 2e-3 */
};

static rt_tensor *param(rt_graph *g, const char *name, rt_dtype dt, int nd, const int64_t *shape,
                        double lo, double hi)
{
    return rt_param(g, name, dt, nd, shape, rt_init_uniform(lo, hi));
}

#define P(name, ...) param(g, name, dt, G_N_ELEMENTS(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__}, -1, 1)

/* ---- the cases */

static rt_tensor *b_binary(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *a = P("a", 2, 3, 4);
    rt_tensor *b = c->variant == 0 ? P("b", 3, 1) : param(g, "b", dt, 3, (int64_t[]){2, 1, 4}, 0.5, 1.5);
    switch (c->op) {
    case RT_OP_ADD: return rt_add(g, a, b);
    case RT_OP_SUB: return rt_sub(g, b, a); /* broadcast on the left operand */
    case RT_OP_MUL: return rt_mul(g, a, b);
    default: return rt_div(g, a, b);
    }
}

static rt_tensor *b_unary(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    if (c->op == RT_OP_GLU)
        return rt_glu(g, P("x", 3, 4, 6), c->variant ? -1 : 1);
    rt_tensor *x = P("x", 3, 4, 5);
    /* through a transposed view, to exercise strided inputs */
    rt_tensor *v = rt_transpose(g, x, 0, 2);
    switch (c->op) {
    case RT_OP_SCALE: return rt_scale(g, v, 2.5, 0.3);
    case RT_OP_RELU: return rt_relu(g, v);
    case RT_OP_GELU: return rt_gelu(g, v);
    case RT_OP_EXP: return rt_exp(g, v);
    default: return rt_contiguous(g, v);
    }
}

static rt_tensor *b_cast(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *x = P("x", 4, 3);
    return rt_cast(g, rt_scale(g, rt_cast(g, x, RT_F32), 3.0, 0.0), dt);
}

static rt_tensor *b_views(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    if (c->op == RT_OP_EXPAND)
        return rt_expand(g, P("y", 3, 1), 3, (int64_t[]){2, 3, 4});
    rt_tensor *x = P("x", 2, 3, 4);
    switch (c->op) {
    case RT_OP_RESHAPE: return rt_reshape(g, rt_transpose(g, x, 1, 2), 2, (int64_t[]){4, -1});
    case RT_OP_PERMUTE: return rt_permute(g, x, (int[]){1, 2, 0});
    case RT_OP_SLICE:
        /* overlapping slices, and slices that tile the axis (one concat) */
        if (c->variant == 0)
            return rt_add(g, rt_slice(g, x, 2, 1, 2), rt_slice(g, x, 2, 0, 2));
        return rt_concat(g, (rt_tensor *[]){rt_scale(g, rt_slice(g, x, 1, 2, 1), 2, 0),
                                            rt_slice(g, x, 1, 0, 2)}, 2, 1);
    case RT_OP_PAD: return rt_pad(g, x, 1, 1, 2);
    default: { /* concat of a view, a tensor and a broadcast */
        rt_tensor *y = P("y", 2, 1, 4), *z = P("z", 1, 4);
        rt_tensor *xv = rt_permute(g, rt_permute(g, x, (int[]){2, 1, 0}), (int[]){1, 2, 0});
        return rt_concat(g, (rt_tensor *[]){rt_permute(g, xv, (int[]){1, 0, 2}), y,
                                            rt_expand(g, z, 3, (int64_t[]){2, 1, 4})}, 3, 1);
    }
    }
}

static rt_tensor *b_sum(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *x = P("x", 2, 3, 4);
    switch (c->variant) {
    case 0: return rt_sum(g, x, RT_AXIS(0) | RT_AXIS(2), TRUE);
    case 1: return rt_mean(g, x, RT_AXIS(1), FALSE);
    case 2: return rt_sum(g, x, RT_AXIS(0) | RT_AXIS(1), FALSE);
    default: return rt_mean(g, x, RT_ALL_AXES, FALSE);
    }
}

static rt_tensor *b_matmul(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    bool ta = c->variant & 1, tb = c->variant & 2, shared = c->variant & 4;
    rt_tensor *a = ta ? P("a", 2, 4, 3) : P("a", 2, 3, 4);
    rt_tensor *b = shared ? (tb ? P("b", 5, 4) : P("b", 4, 5)) : (tb ? P("b", 2, 5, 4) : P("b", 2, 4, 5));
    return rt_matmul(g, a, b, ta, tb);
}

static rt_tensor *b_linear(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *x = P("x", 2, 3, 5), *w = P("w", 4, 5);
    return rt_linear(g, x, w, c->variant ? NULL : P("b", 4));
}

static rt_tensor *b_conv(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    if (c->variant == 0) {
        rt_tensor *x = P("x", 2, 3, 7, 6), *w = P("w", 4, 3, 3, 2);
        return rt_conv2d(g, x, w, P("b", 4), 2, 1, 1, 0, 1, 2);
    }
    rt_tensor *x = P("x", 1, 2, 5, 5), *w = P("w", 3, 2, 3, 3);
    return rt_conv2d(g, x, w, NULL, 1, 1, 1, 1, 1, 1);
}

static rt_tensor *b_bn(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    int64_t ch = 3;
    rt_tensor *x = P("x", 2, 3, 4, 5);
    rt_tensor *w = rt_buffer(g, "w", dt, 1, &ch, rt_init_uniform(0.5, 1.5));
    rt_tensor *b = rt_buffer(g, "b", dt, 1, &ch, rt_init_uniform(-1, 1));
    rt_tensor *m = rt_buffer(g, "m", dt, 1, &ch, rt_init_uniform(-1, 1));
    rt_tensor *v = rt_buffer(g, "v", dt, 1, &ch, rt_init_uniform(0.5, 2));
    return rt_frozen_batch_norm(g, x, w, b, m, v, 1e-5);
}

static rt_tensor *b_pool(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *x = P("x", 2, 2, 7, 6);
    return rt_max_pool2d(g, x, 3, 2, 1);
}

static rt_tensor *b_ln(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *x = P("x", 3, 4, 6);
    if (c->variant)
        return rt_layer_norm(g, x, NULL, NULL, 1e-5);
    return rt_layer_norm(g, x, P("w", 6), P("b", 6), 1e-5);
}

static rt_tensor *b_softmax(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    return rt_softmax(g, param(g, "x", dt, 2, (int64_t[]){3, 5}, -2, 2));
}

static rt_tensor *attention_mask(rt_graph *g)
{
    return rt_input(g, "mask", RT_BOOL, 2, (int64_t[]){2, 5}, 0);
}

static gboolean feed_mask(rt_graph *g, const grad_case *c)
{
    uint8_t mask[10] = {0, 0, 1, 0, 1, 0, 0, 0, 0, 1};
    rt_tensor *t = rt_graph_find(g, "mask");
    return !t || rt_graph_write(g, t, mask, sizeof mask, NULL);
}

static rt_tensor *b_attention(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    bool bf = c->variant & 1;
    int64_t L = 4, S = 5, B = 2, E = 6;
    double p = c->variant & 2 ? 0.3 : 0.0;
    if (c->variant & 4) { /* nn.MultiheadAttention: packed projections, q = k input */
        rt_mha_weights w = {P("in_w", 3 * E, E), P("in_b", 3 * E), P("out_w", E, E), P("out_b", E)};
        rt_tensor *x = P("x", L, B, E), *m = P("m", S, B, E);
        return rt_multihead_attention(g, &w, x, rt_add(g, m, m), m, attention_mask(g), 3, p);
    }
    rt_tensor *q = bf ? P("q", B, L, E) : P("q", L, B, E);
    rt_tensor *k = bf ? P("k", B, S, E) : P("k", S, B, E);
    rt_tensor *v = bf ? P("v", B, S, E) : P("v", S, B, E);
    return rt_attention(g, q, k, v, attention_mask(g), c->variant & 8 ? 1 : 2, p, bf);
}

static rt_tensor *b_embedding(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *w = P("w", 5, 3);
    rt_tensor *idx = rt_input(g, "idx", RT_I64, 2, (int64_t[]){2, 4}, 0);
    return rt_embedding(g, w, idx);
}

static gboolean feed_embedding(rt_graph *g, const grad_case *c)
{
    int64_t idx[8] = {4, 0, 2, 2, 1, 4, 4, 3}; /* repeated rows accumulate */
    return rt_graph_write(g, rt_graph_find(g, "idx"), idx, sizeof idx, NULL);
}

static rt_tensor *b_dropout(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *x = rt_input(g, "x0", dt, 2, (int64_t[]){3, 8}, 0);
    rt_tensor *w = P("w", 3, 8);
    return rt_dropout(g, rt_add(g, x, w), 0.4);
}

static rt_tensor *b_l1(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    rt_tensor *pred = P("pred", 2, 3, 4), *target = P("target", 2, 3, 4);
    rt_tensor *mask = c->variant & 2 ? NULL : rt_input(g, "mask", RT_BOOL, 2, (int64_t[]){2, 3}, 0);
    return rt_masked_l1_loss(g, pred, target, mask, c->variant & 1 ? RT_L1_MEAN_VALID : RT_L1_MEAN_ALL);
}

static gboolean feed_l1(rt_graph *g, const grad_case *c)
{
    uint8_t mask[6] = {0, 1, 0, 0, 0, 1};
    rt_tensor *t = rt_graph_find(g, "mask");
    return !t || rt_graph_write(g, t, mask, sizeof mask, NULL);
}

static rt_tensor *b_kl(rt_graph *g, rt_dtype dt, const grad_case *c)
{
    return rt_kl_loss(g, P("mu", 3, 4), P("logvar", 3, 4));
}

static const grad_case cases[] = {
    {"add broadcast", RT_OP_ADD, b_binary, NULL, 0, 0, 0},
    {"sub broadcast", RT_OP_SUB, b_binary, NULL, 0, 0, 0},
    {"mul broadcast", RT_OP_MUL, b_binary, NULL, 0, 0, 0},
    {"div broadcast", RT_OP_DIV, b_binary, NULL, 1, 0, 0},
    {"scale (strided)", RT_OP_SCALE, b_unary, NULL, 0, 0, 0},
    {"relu (strided)", RT_OP_RELU, b_unary, NULL, 0, 0, 0},
    {"gelu (strided)", RT_OP_GELU, b_unary, NULL, 0, 0, 0},
    {"exp (strided)", RT_OP_EXP, b_unary, NULL, 0, 0, 0},
    {"contiguous", RT_OP_CONTIGUOUS, b_unary, NULL, 0, 0, 0},
    {"glu axis 1", RT_OP_GLU, b_unary, NULL, 0, 0, 0},
    {"glu last axis", RT_OP_GLU, b_unary, NULL, 2, 0, 0},
    {"cast through f32", RT_OP_CAST, b_cast, NULL, 0, 1e-2, 0},
    {"reshape of a transposed view", RT_OP_RESHAPE, b_views, NULL, 0, 0, 0},
    {"permute", RT_OP_PERMUTE, b_views, NULL, 0, 0, 0},
    {"overlapping slices", RT_OP_SLICE, b_views, NULL, 0, 0, 0},
    {"tiling slices", RT_OP_SLICE, b_views, NULL, 1, 0, 0},
    {"expand", RT_OP_EXPAND, b_views, NULL, 0, 0, 0},
    {"pad", RT_OP_PAD, b_views, NULL, 0, 0, 0},
    {"concat of views", RT_OP_CONCAT, b_views, NULL, 0, 0, 0},
    {"sum keepdim", RT_OP_SUM, b_sum, NULL, 0, 0, 0},
    {"mean axis 1", RT_OP_SUM, b_sum, NULL, 1, 0, 0},
    {"sum leading axes", RT_OP_SUM, b_sum, NULL, 2, 0, 0},
    {"mean of all", RT_OP_SUM, b_sum, NULL, 3, 0, 0},
    {"matmul batched", RT_OP_MATMUL, b_matmul, NULL, 0, 0, 0},
    {"matmul trans_a", RT_OP_MATMUL, b_matmul, NULL, 1, 0, 0},
    {"matmul trans_b", RT_OP_MATMUL, b_matmul, NULL, 2, 0, 0},
    {"matmul both", RT_OP_MATMUL, b_matmul, NULL, 3, 0, 0},
    {"matmul shared b", RT_OP_MATMUL, b_matmul, NULL, 4, 0, 0},
    {"matmul shared b, trans_a", RT_OP_MATMUL, b_matmul, NULL, 5, 0, 0},
    {"matmul shared b, trans_b", RT_OP_MATMUL, b_matmul, NULL, 6, 0, 0},
    {"matmul shared b, both", RT_OP_MATMUL, b_matmul, NULL, 7, 0, 0},
    {"linear with bias", RT_OP_LINEAR, b_linear, NULL, 0, 0, 0},
    {"linear without bias", RT_OP_LINEAR, b_linear, NULL, 1, 0, 0},
    {"conv2d stride/pad/dilation, bias", RT_OP_CONV2D, b_conv, NULL, 0, 0, 0},
    {"conv2d 3x3 pad 1, no bias", RT_OP_CONV2D, b_conv, NULL, 1, 0, 0},
    {"frozen batch norm", RT_OP_FROZEN_BATCH_NORM, b_bn, NULL, 0, 0, 0},
    {"max-pool 3x3/2 pad 1", RT_OP_MAX_POOL2D, b_pool, NULL, 0, 0, 0},
    {"layer norm affine", RT_OP_LAYER_NORM, b_ln, NULL, 0, 0, 0},
    {"layer norm plain", RT_OP_LAYER_NORM, b_ln, NULL, 1, 0, 0},
    {"softmax", RT_OP_SOFTMAX, b_softmax, NULL, 0, 0, 0},
    {"attention, key padding mask", RT_OP_ATTENTION, b_attention, feed_mask, 0, 0, 0},
    {"attention batch first", RT_OP_ATTENTION, b_attention, feed_mask, 1, 0, 0},
    {"attention dropout", RT_OP_ATTENTION, b_attention, feed_mask, 2, 0, 0},
    {"attention one head", RT_OP_ATTENTION, b_attention, feed_mask, 8, 0, 0},
    {"multihead attention (packed)", RT_OP_ATTENTION, b_attention, feed_mask, 4, 0, 0},
    {"multihead attention, dropout", RT_OP_ATTENTION, b_attention, feed_mask, 6, 0, 0},
    {"embedding", RT_OP_EMBEDDING, b_embedding, feed_embedding, 0, 0, 0},
    {"dropout", RT_OP_DROPOUT, b_dropout, NULL, 0, 0, 0},
    {"masked L1 mean all", RT_OP_L1_LOSS, b_l1, feed_l1, 0, 0, 0},
    {"masked L1 mean valid", RT_OP_L1_LOSS, b_l1, feed_l1, 1, 0, 0},
    {"L1 no mask", RT_OP_L1_LOSS, b_l1, feed_l1, 2, 0, 0},
    {"KL", RT_OP_KL_LOSS, b_kl, NULL, 0, 0, 0},
};

/* ---- the harness */

typedef struct built {
    rt_graph *g;
    rt_tensor *y, *loss;
} built;

/* loss = sum(y * R) with fixed random weights R, so every output element matters */
static gboolean build_loss(const grad_case *c, rt_dtype dt, built *b)
{
    GError *error = NULL;
    b->g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_init_seed(b->g, 99);
    b->y = c->build(b->g, dt, c);
    if (!b->y) {
        printf("# build failed: %s\n", rt_graph_error(b->g) ? rt_graph_error(b->g)->message : "?");
        return FALSE;
    }
    int64_t n = rt_tensor_numel(b->y);
    double *r = g_new(double, n);
    rt_test_rng rng = {777};
    rt_test_fill(&rng, r, n, -1, 1);
    rt_tensor *rt = rt_const(b->g, RT_F64, b->y->ndim, b->y->shape, r);
    g_free(r);
    b->loss = rt_sum(b->g, rt_mul(b->g, b->y, rt_cast(b->g, rt, dt)), RT_ALL_AXES, FALSE);
    b->y = rt_contiguous(b->g, b->y);
    rt_graph_output(b->g, "result", b->y);
    rt_set_loss(b->g, b->loss);
    if (!rt_graph_backward(b->g, &error)) {
        printf("# backward: %s\n", error->message);
        g_error_free(error);
        return FALSE;
    }
    if (!rt_test_plan(b->g))
        return FALSE;
    /* a non-trivial value for an input "x0" (dropout case) */
    rt_tensor *x0 = rt_graph_find(b->g, "x0");
    if (x0) {
        double v[64];
        rt_test_rng r2 = {5};
        rt_test_fill(&r2, v, rt_tensor_numel(x0), -1, 1);
        rt_test_write(b->g, x0, v);
    }
    if (c->feed && !c->feed(b->g, c))
        return FALSE;
    return rt_graph_set_rng(b->g, 1234, 5, 3, NULL);
}

static gboolean loss_of(built *b, double *loss)
{
    return rt_test_run(b->g) && rt_graph_read_scalar(b->g, b->loss, loss, NULL);
}

static int check_case(const grad_case *c)
{
    double h = c->h ? c->h : 1e-6;
    built b;
    OK(build_loss(c, RT_F64, &b));
    double l0;
    OK(loss_of(&b, &l0));
    int n_params = rt_graph_n_params(b.g), checked = 0;
    double **grads = g_new0(double *, n_params), **values = g_new0(double *, n_params);
    for (int i = 0; i < n_params; i++) {
        rt_tensor *p = rt_graph_param(b.g, i), *gr = rt_graph_grad(b.g, p);
        OK1(gr != NULL, "every parameter of the case gets a gradient");
        int64_t n = rt_tensor_numel(p);
        grads[i] = g_new(double, n);
        values[i] = g_new(double, n);
        OK(rt_test_read(b.g, gr, grads[i]));
        OK(rt_test_read(b.g, p, values[i]));
    }
    for (int i = 0; i < n_params; i++) {
        rt_tensor *p = rt_graph_param(b.g, i);
        int64_t n = rt_tensor_numel(p);
        int64_t step = n > 48 ? n / 48 + 1 : 1;
        double *fd = g_new(double, n), *an = g_new(double, n);
        int64_t m = 0;
        for (int64_t e = 0; e < n; e += step) {
            double x = values[i][e], lp, lm;
            values[i][e] = x + h;
            OK(rt_test_write(b.g, p, values[i]) && loss_of(&b, &lp));
            values[i][e] = x - h;
            OK(rt_test_write(b.g, p, values[i]) && loss_of(&b, &lm));
            values[i][e] = x;
            fd[m] = (lp - lm) / (2 * h);
            an[m++] = grads[i][e];
        }
        OK(rt_test_write(b.g, p, values[i]) && loss_of(&b, &l0));
        int64_t worst = 0;
        double close = rt_test_closeness(an, fd, m, 1e-6, 1e-5, &worst);
        RT_TEST_REPORT(close <= 1, "%s: d loss / d %s (%lld elements) analytic %.9g vs finite "
                       "difference %.9g at [%lld]", c->name, p->name, (long long)m, an[worst],
                       fd[worst], (long long)(worst * step));
        g_free(fd);
        g_free(an);
        if (close > 1)
            return -1;
        checked++;
    }
    OK(checked > 0);

    /* the f32 kernels, from the same values, against the f64 gradients */
    built b32;
    OK(build_loss(c, RT_F32, &b32));
    for (int i = 0; i < n_params; i++)
        OK(rt_test_write(b32.g, rt_graph_param(b32.g, i), values[i]));
    OK(rt_test_run(b32.g));
    double tol = c->f32_tol ? c->f32_tol : 2e-3;
    int64_t ny = rt_tensor_numel(b.y);
    double *y64 = g_new(double, ny), *y32 = g_new(double, ny);
    OK(rt_test_read(b.g, b.y, y64) && rt_test_read(b32.g, rt_graph_find(b32.g, "result"), y32));
    int64_t worst = 0;
    double close = rt_test_closeness(y32, y64, ny, 1e-5, tol, &worst);
    RT_TEST_REPORT(close <= 1, "%s: f32 result vs f64 at [%lld]: %.7g vs %.7g", c->name,
                   (long long)worst, y32[worst], y64[worst]);
    if (close > 1)
        return -1;
    for (int i = 0; i < n_params; i++) {
        rt_tensor *p = rt_graph_param(b32.g, i);
        int64_t n = rt_tensor_numel(p);
        double *g32 = g_new(double, n);
        OK(rt_test_read(b32.g, rt_graph_grad(b32.g, p), g32));
        close = rt_test_closeness(g32, grads[i], n, 1e-4, tol, &worst);
        RT_TEST_REPORT(close <= 1, "%s: f32 gradient of %s vs f64 at [%lld]: %.7g vs %.7g",
                       c->name, p->name, (long long)worst, g32[worst], grads[i][worst]);
        g_free(g32);
        if (close > 1)
            return -1;
    }
    g_free(y64);
    g_free(y32);
    for (int i = 0; i < n_params; i++) {
        g_free(grads[i]);
        g_free(values[i]);
    }
    g_free(grads);
    g_free(values);
    rt_graph_free(b.g);
    rt_graph_free(b32.g);
    return 0;
}

DEF_TEST(gradients)
{
    int failed = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        printf("# case: %s\n", cases[i].name);
        if (check_case(&cases[i]) != 0)
            failed++;
    }
    EXPECT_EQ_INT(0, failed);
    return 0;
}

/* every op of the table that has a backward builder has a case above */
DEF_TEST(every_differentiable_op_is_checked)
{
    for (int op = 0; op < rt_op_count(); op++) {
        OK1(rt_op_name((rt_op)op) != NULL, "every op has a row with a name");
        if (!rt_op_is_differentiable((rt_op)op))
            continue;
        bool found = false;
        for (size_t i = 0; i < G_N_ELEMENTS(cases) && !found; i++)
            found = cases[i].op == (rt_op)op;
        RT_TEST_REPORT(found, "op %s has a gradient case", rt_op_name((rt_op)op));
        if (!found)
            return -1;
    }
    return 0;
}

int main(void)
{
    RUN_TEST(every_differentiable_op_is_checked);
    RUN_TEST(gradients);
    END_TEST;
}
