/* Every op's forward result against a naive reference written here (loops in double), in f32
 * and f64: element-wise with broadcasting, casts and rounding, shape ops, reductions, matmul,
 * linear, conv2d, frozen batch norm, max-pool, layer norm, softmax, attention exactly as
 * nn.MultiheadAttention, embedding, losses, and the random ops against the documented counter
 * mapping recomputed from Philox here. */
#include "config.h"

#include "graph-test.h"

#include "core/graph-internal.h" /* rt_philox4x32_10 */

/* ---- harness: inputs are rt_input tensors filled with random values */

typedef struct op_graph {
    rt_graph *g;
    rt_tensor *in[8];
    double *data[8];
    int n_in;
    rt_tensor *y;
} op_graph;

static rt_tensor *add_in(op_graph *o, rt_dtype dt, int nd, const int64_t *shape, double lo, double hi)
{
    char name[16];
    snprintf(name, sizeof name, "in%d", o->n_in);
    rt_tensor *t = rt_input(o->g, name, dt, nd, shape, nd > 0 ? 0 : -1);
    int64_t n = rt_shape_numel(nd, shape);
    o->data[o->n_in] = g_new(double, n);
    rt_test_rng r = {(uint64_t)(1000 + 17 * o->n_in)};
    rt_test_fill(&r, o->data[o->n_in], n, lo, hi);
    o->in[o->n_in++] = t;
    return t;
}

#define IN(o, dt, ...) add_in((o), (dt), G_N_ELEMENTS(((int64_t[]){__VA_ARGS__})), (int64_t[]){__VA_ARGS__}, -1, 1)

/* the values the graph sees (rounded to f32 for an f32 input) */
static double *vals(op_graph *o, int i)
{
    if (o->in[i]->dtype == RT_F32)
        for (int64_t e = 0; e < rt_tensor_numel(o->in[i]); e++)
            o->data[i][e] = (float)o->data[i][e];
    return o->data[i];
}

static gboolean run(op_graph *o, rt_tensor *y, double *out)
{
    if (!y) {
        printf("# build: %s\n", rt_graph_error(o->g)->message);
        return FALSE;
    }
    o->y = rt_contiguous(o->g, y);
    rt_graph_output(o->g, "y", o->y);
    if (!rt_test_plan(o->g))
        return FALSE;
    for (int i = 0; i < o->n_in; i++)
        if (rt_dtype_is_float(o->in[i]->dtype) && !rt_test_write(o->g, o->in[i], vals(o, i)))
            return FALSE;
    return rt_test_run(o->g) && rt_test_read(o->g, o->y, out);
}

static void op_free(op_graph *o)
{
    for (int i = 0; i < o->n_in; i++)
        g_free(o->data[i]);
    rt_graph_free(o->g);
    memset(o, 0, sizeof *o);
}

static double tol_of(rt_dtype dt)
{
    return dt == RT_F32 ? 2e-6 : 1e-12;
}

static const rt_dtype float_types[2] = {RT_F32, RT_F64};

/* ---- element-wise */

DEF_TEST(binary_broadcast)
{
    for (int t = 0; t < 2; t++)
        for (int op = 0; op < 4; op++) {
            rt_dtype dt = float_types[t];
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *a = IN(&o, dt, 2, 1, 4);
            rt_tensor *b = add_in(&o, dt, 2, (int64_t[]){3, 1}, 0.5, 2);
            rt_tensor *y = op == 0 ? rt_add(o.g, a, b) : op == 1 ? rt_sub(o.g, a, b)
                         : op == 2 ? rt_mul(o.g, a, b) : rt_div(o.g, a, b);
            double out[24], ref[24];
            OK(run(&o, y, out));
            const double *A = o.data[0], *B = o.data[1];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    for (int k = 0; k < 4; k++) {
                        double x = A[i * 4 + k], z = B[j];
                        ref[(i * 3 + j) * 4 + k] = op == 0 ? x + z : op == 1 ? x - z : op == 2 ? x * z : x / z;
                    }
            EXPECT_EQ_INT(3, o.y->ndim);
            EXPECT_CLOSE(out, ref, 24, 1e-300, tol_of(dt));
            op_free(&o);
        }
    return 0;
}

DEF_TEST(unary)
{
    for (int t = 0; t < 2; t++)
        for (int op = 0; op < 4; op++) {
            rt_dtype dt = float_types[t];
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *x = add_in(&o, dt, 2, (int64_t[]){5, 7}, -3, 3);
            rt_tensor *v = rt_transpose(o.g, x, 0, 1); /* strided input */
            rt_tensor *y = op == 0 ? rt_scale(o.g, v, -1.5, 0.25) : op == 1 ? rt_relu(o.g, v)
                         : op == 2 ? rt_gelu(o.g, v) : rt_exp(o.g, v);
            double out[35], ref[35];
            OK(run(&o, y, out));
            for (int i = 0; i < 7; i++)
                for (int j = 0; j < 5; j++) {
                    double a = o.data[0][j * 7 + i];
                    ref[i * 5 + j] = op == 0 ? -1.5 * a + 0.25 : op == 1 ? (a > 0 ? a : 0)
                                   : op == 2 ? 0.5 * a * (1 + erf(a / sqrt(2))) : exp(a);
                }
            EXPECT_CLOSE(out, ref, 35, dt == RT_F32 ? 1e-7 : 1e-300, dt == RT_F32 ? 4e-6 : 1e-13);
            op_free(&o);
        }
    return 0;
}

DEF_TEST(glu)
{
    for (int t = 0; t < 2; t++) {
        rt_dtype dt = float_types[t];
        op_graph o = {.g = rt_graph_new(0)};
        rt_tensor *x = IN(&o, dt, 2, 4, 3);
        double out[12], ref[12];
        OK(run(&o, rt_glu(o.g, x, 1), out));
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                for (int k = 0; k < 3; k++) {
                    double a = o.data[0][(i * 4 + j) * 3 + k], b = o.data[0][(i * 4 + j + 2) * 3 + k];
                    ref[(i * 2 + j) * 3 + k] = a / (1 + exp(-b));
                }
        EXPECT_CLOSE(out, ref, 12, 1e-300, dt == RT_F32 ? 4e-6 : 1e-13);
        op_free(&o);
    }
    return 0;
}

/* round-to-nearest-even to bf16, by bit manipulation (independent of the library) */
static float ref_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
        return f;
    u = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

DEF_TEST(cast)
{
    /* f32 -> bf16 -> f32 rounds to nearest even; f32 -> i64 truncates; -> bool tests != 0 */
    float src[8] = {1.00390625f, 1.01171875f, -2.5f, 3.14159265f, 65504.f, 1e-3f, -0.0f, 7.9f};
    rt_graph *g = rt_graph_new(0);
    rt_tensor *x = rt_input(g, "x", RT_F32, 1, (int64_t[]){8}, -1);
    rt_tensor *via16 = rt_cast(g, rt_cast(g, x, RT_BF16), RT_F32);
    rt_tensor *viah = rt_cast(g, rt_cast(g, x, RT_F16), RT_F32);
    rt_tensor *ints = rt_cast(g, x, RT_I64), *bools = rt_cast(g, x, RT_BOOL);
    rt_tensor *back = rt_cast(g, ints, RT_F64);
    rt_graph_output(g, "bf16", via16);
    rt_graph_output(g, "f16", viah);
    rt_graph_output(g, "i64", ints);
    rt_graph_output(g, "bool", bools);
    rt_graph_output(g, "back", back);
    OK(rt_test_plan(g));
    OK(rt_graph_write(g, x, src, sizeof src, NULL));
    OK(rt_test_run(g));
    float b16[8], h16[8];
    int64_t iv[8];
    uint8_t bv[8];
    double dv[8];
    OK(rt_graph_read(g, via16, b16, sizeof b16, NULL));
    OK(rt_graph_read(g, viah, h16, sizeof h16, NULL));
    OK(rt_graph_read(g, ints, iv, sizeof iv, NULL));
    OK(rt_graph_read(g, bools, bv, sizeof bv, NULL));
    OK(rt_graph_read(g, back, dv, sizeof dv, NULL));
    EXPECT_NEAR(1.0, b16[0], 0);        /* tie: rounds to even */
    EXPECT_NEAR(1.015625, b16[1], 0);   /* tie: rounds up to even */
    for (int i = 0; i < 8; i++)
        EXPECT_NEAR(ref_bf16(src[i]), b16[i], 0);
    EXPECT_NEAR(65504.0, h16[4], 0);    /* largest f16 */
    EXPECT_NEAR(3.140625, h16[3], 0);
    EXPECT_NEAR(0.0010004043579101562, h16[5], 0);
    long long expect_i[8] = {1, 1, -2, 3, 65504, 0, 0, 7};
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ_INT(expect_i[i], iv[i]);
        EXPECT_NEAR((double)expect_i[i], dv[i], 0);
        EXPECT_EQ_INT(src[i] != 0, bv[i]);
    }
    rt_graph_free(g);
    return 0;
}

DEF_TEST(fill)
{
    rt_graph *g = rt_graph_new(0);
    rt_tensor *a = rt_fill(g, RT_F32, 2, (int64_t[]){2, 3}, 2.5);
    rt_tensor *b = rt_fill(g, RT_I64, 1, (int64_t[]){3}, 7);
    rt_graph_output(g, "a", a);
    rt_graph_output(g, "b", b);
    OK(rt_test_plan(g) && rt_test_run(g));
    float av[6];
    int64_t bv[3];
    OK(rt_graph_read(g, a, av, sizeof av, NULL) && rt_graph_read(g, b, bv, sizeof bv, NULL));
    for (int i = 0; i < 6; i++)
        EXPECT_NEAR(2.5, av[i], 0);
    for (int i = 0; i < 3; i++)
        EXPECT_EQ_INT(7, bv[i]);
    rt_graph_free(g);
    return 0;
}

/* ---- shapes */

DEF_TEST(views_and_copies)
{
    op_graph o = {.g = rt_graph_new(0)};
    rt_tensor *x = IN(&o, RT_F64, 2, 3, 4);
    double out[64], ref[64];
    /* permute [2,3,4] -> [4,2,3] */
    OK(run(&o, rt_permute(o.g, x, (int[]){2, 0, 1}), out));
    const double *X = o.data[0];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                ref[(k * 2 + i) * 3 + j] = X[(i * 3 + j) * 4 + k];
    EXPECT_CLOSE(out, ref, 24, 0, 0);
    op_free(&o);

    /* slice of axis 2, then reshape (through a copy) */
    o = (op_graph){.g = rt_graph_new(0)};
    x = IN(&o, RT_F64, 2, 3, 4);
    OK(run(&o, rt_reshape(o.g, rt_slice(o.g, x, 2, 1, 2), 2, (int64_t[]){3, -1}), out));
    X = o.data[0];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++)
                ref[(i * 3 + j) * 2 + k] = X[(i * 3 + j) * 4 + 1 + k];
    EXPECT_CLOSE(out, ref, 12, 0, 0);
    EXPECT_EQ_INT(3, o.y->shape[0]);
    EXPECT_EQ_INT(4, o.y->shape[1]);
    op_free(&o);

    /* expand [3,1] -> [2,3,4], pad axis 1 by (1, 2) */
    o = (op_graph){.g = rt_graph_new(0)};
    x = IN(&o, RT_F64, 3, 1);
    OK(run(&o, rt_pad(o.g, rt_expand(o.g, x, 3, (int64_t[]){2, 3, 4}), 1, 1, 2), out));
    X = o.data[0];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 6; j++)
            for (int k = 0; k < 4; k++)
                ref[(i * 6 + j) * 4 + k] = j >= 1 && j < 4 ? X[j - 1] : 0;
    EXPECT_CLOSE(out, ref, 48, 0, 0);
    op_free(&o);

    /* concat along axis 1 of a tensor, a transposed view and another tensor */
    o = (op_graph){.g = rt_graph_new(0)};
    rt_tensor *a = IN(&o, RT_F32, 2, 1, 3), *b = IN(&o, RT_F32, 3, 2), *c = IN(&o, RT_F32, 2, 2, 3);
    rt_tensor *bt = rt_reshape(o.g, rt_transpose(o.g, b, 0, 1), 3, (int64_t[]){2, 1, 3});
    OK(run(&o, rt_concat(o.g, (rt_tensor *[]){a, bt, c}, 3, 1), out));
    double *A = vals(&o, 0), *Bv = vals(&o, 1), *C = vals(&o, 2);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++)
                ref[(i * 4 + j) * 3 + k] = j == 0 ? A[i * 3 + k] : j == 1 ? Bv[k * 2 + i]
                                                                          : C[(i * 2 + j - 2) * 3 + k];
    EXPECT_CLOSE(out, ref, 24, 0, 0);
    op_free(&o);
    return 0;
}

DEF_TEST(reductions)
{
    static const uint32_t masks[5] = {RT_AXIS(0), RT_AXIS(1), RT_AXIS(0) | RT_AXIS(2),
                                      RT_AXIS(0) | RT_AXIS(1), RT_ALL_AXES};
    for (int t = 0; t < 2; t++)
        for (int m = 0; m < 5; m++)
            for (int mean = 0; mean < 2; mean++) {
                rt_dtype dt = float_types[t];
                op_graph o = {.g = rt_graph_new(0)};
                rt_tensor *x = IN(&o, dt, 3, 4, 5);
                rt_tensor *y = mean ? rt_mean(o.g, x, masks[m], TRUE) : rt_sum(o.g, x, masks[m], TRUE);
                double out[60], ref[60] = {0};
                int64_t count[60] = {0};
                OK(run(&o, y, out));
                const double *X = o.data[0];
                uint32_t mask = masks[m];
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 4; j++)
                        for (int k = 0; k < 5; k++) {
                            int oi = (mask & 1) ? 0 : i, oj = (mask & 2) ? 0 : j, ok = (mask & 4) ? 0 : k;
                            int dj = (mask & 2) ? 1 : 4, dk = (mask & 4) ? 1 : 5;
                            int at = (oi * dj + oj) * dk + ok;
                            ref[at] += X[(i * 4 + j) * 5 + k];
                            count[at]++;
                        }
                int64_t n = rt_tensor_numel(o.y);
                for (int64_t i = 0; i < n; i++)
                    if (mean)
                        ref[i] /= (double)count[i];
                EXPECT_CLOSE(out, ref, n, 1e-6, tol_of(dt) * 4);
                op_free(&o);
            }
    return 0;
}

/* ---- linear algebra */

static void ref_matmul(const double *a, const double *b, double *c, int64_t M, int64_t N,
                       int64_t K, bool ta, bool tb)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += (ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
            c[i * N + j] = s;
        }
}

DEF_TEST(matmul)
{
    for (int t = 0; t < 2; t++)
        for (int v = 0; v < 8; v++) {
            rt_dtype dt = float_types[t];
            bool ta = v & 1, tb = v & 2, shared = v & 4;
            int64_t M = 5, N = 6, K = 7;
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *a = ta ? IN(&o, dt, 3, K, M) : IN(&o, dt, 3, M, K);
            rt_tensor *b = shared ? (tb ? IN(&o, dt, N, K) : IN(&o, dt, K, N))
                                  : (tb ? IN(&o, dt, 3, N, K) : IN(&o, dt, 3, K, N));
            double out[90], ref[90];
            OK(run(&o, rt_matmul(o.g, a, b, ta, tb), out));
            for (int i = 0; i < 3; i++)
                ref_matmul(o.data[0] + i * M * K, o.data[1] + (shared ? 0 : i * K * N),
                           ref + i * M * N, M, N, K, ta, tb);
            EXPECT_CLOSE(out, ref, 90, 1e-6, tol_of(dt) * 4);
            op_free(&o);
        }
    return 0;
}

DEF_TEST(linear)
{
    for (int t = 0; t < 2; t++)
        for (int bias = 0; bias < 2; bias++) {
            rt_dtype dt = float_types[t];
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *x = IN(&o, dt, 2, 3, 5), *w = IN(&o, dt, 4, 5), *b = bias ? IN(&o, dt, 4) : NULL;
            double out[24], ref[24];
            OK(run(&o, rt_linear(o.g, x, w, b), out));
            ref_matmul(o.data[0], o.data[1], ref, 6, 4, 5, false, true);
            for (int i = 0; bias && i < 24; i++)
                ref[i] += o.data[2][i % 4];
            EXPECT_CLOSE(out, ref, 24, 1e-6, tol_of(dt) * 4);
            op_free(&o);
        }
    return 0;
}

/* mixed precision: inputs rounded to bf16, products accumulated in f32 */
DEF_TEST(linear_bf16)
{
    op_graph o = {.g = rt_graph_new(0)};
    rt_graph_set_compute_dtype(o.g, RT_BF16);
    rt_tensor *x = IN(&o, RT_F32, 8, 64), *w = IN(&o, RT_F32, 16, 64), *b = IN(&o, RT_F32, 16);
    double out[128], ref[128], exact[128];
    OK(run(&o, rt_linear(o.g, x, w, b), out));
    double xr[512], wr[1024];
    for (int i = 0; i < 512; i++)
        xr[i] = ref_bf16((float)o.data[0][i]);
    for (int i = 0; i < 1024; i++)
        wr[i] = ref_bf16((float)o.data[1][i]);
    ref_matmul(xr, wr, ref, 8, 16, 64, false, true);
    ref_matmul(o.data[0], o.data[1], exact, 8, 16, 64, false, true);
    for (int i = 0; i < 128; i++) {
        ref[i] += o.data[2][i % 16];
        exact[i] += o.data[2][i % 16];
    }
    EXPECT_CLOSE(out, ref, 128, 1e-6, 1e-5);
    /* and the rounding is visible: f32 inputs would give a different result */
    OK(rt_test_closeness(out, exact, 128, 1e-6, 1e-5, NULL) > 1);
    op_free(&o);
    return 0;
}

/* round-to-nearest-even to f16 for normal f16 values (|x| in [2^-14, 65504]) */
static float ref_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0xfffu + ((u >> 13) & 1)) & ~0x1fffu;
    memcpy(&f, &u, 4);
    return f;
}

DEF_TEST(matmul_f16)
{
    op_graph o = {.g = rt_graph_new(0)};
    rt_graph_set_compute_dtype(o.g, RT_F16);
    rt_tensor *a = add_in(&o, RT_F32, 2, (int64_t[]){6, 40}, 0.1, 1);
    rt_tensor *b = add_in(&o, RT_F32, 2, (int64_t[]){40, 7}, 0.1, 1);
    double out[42], ref[42], exact[42], ar[240], br[280];
    OK(run(&o, rt_matmul(o.g, a, b, FALSE, FALSE), out));
    for (int i = 0; i < 240; i++)
        ar[i] = ref_f16((float)o.data[0][i]);
    for (int i = 0; i < 280; i++)
        br[i] = ref_f16((float)o.data[1][i]);
    ref_matmul(ar, br, ref, 6, 7, 40, false, false);
    ref_matmul(o.data[0], o.data[1], exact, 6, 7, 40, false, false);
    EXPECT_CLOSE(out, ref, 42, 1e-6, 1e-6);
    OK(rt_test_closeness(out, exact, 42, 1e-6, 1e-6, NULL) > 1);
    op_free(&o);
    return 0;
}

static void ref_conv(const double *x, const double *w, const double *b, double *y, int n, int c,
                     int h, int wd, int o, int kh, int kw, int sh, int sw, int ph, int pw, int dh,
                     int dw, int ho, int wo)
{
    for (int in = 0; in < n; in++)
        for (int io = 0; io < o; io++)
            for (int i = 0; i < ho; i++)
                for (int j = 0; j < wo; j++) {
                    double s = b ? b[io] : 0;
                    for (int ic = 0; ic < c; ic++)
                        for (int p = 0; p < kh; p++)
                            for (int q = 0; q < kw; q++) {
                                int y0 = i * sh - ph + p * dh, x0 = j * sw - pw + q * dw;
                                if (y0 >= 0 && y0 < h && x0 >= 0 && x0 < wd)
                                    s += x[((in * c + ic) * h + y0) * wd + x0] *
                                         w[((io * c + ic) * kh + p) * kw + q];
                            }
                    y[((in * o + io) * ho + i) * wo + j] = s;
                }
}

DEF_TEST(conv2d)
{
    struct { int n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, bias; } cfg[] = {
        {2, 3, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},
        {1, 3, 14, 13, 5, 7, 7, 2, 2, 3, 3, 1, 1, 0}, /* resnet conv1 shape */
        {2, 4, 8, 8, 3, 1, 1, 2, 2, 0, 0, 1, 1, 0},   /* 1x1 stride 2 downsample */
        {1, 2, 9, 10, 3, 3, 2, 2, 1, 2, 1, 2, 3, 1},  /* dilation */
    };
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < G_N_ELEMENTS(cfg); i++) {
            rt_dtype dt = float_types[t];
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *x = IN(&o, dt, cfg[i].n, cfg[i].c, cfg[i].h, cfg[i].w);
            rt_tensor *w = IN(&o, dt, cfg[i].o, cfg[i].c, cfg[i].kh, cfg[i].kw);
            rt_tensor *b = cfg[i].bias ? IN(&o, dt, cfg[i].o) : NULL;
            rt_tensor *y = rt_conv2d(o.g, x, w, b, cfg[i].sh, cfg[i].sw, cfg[i].ph, cfg[i].pw,
                                     cfg[i].dh, cfg[i].dw);
            OK(y != NULL);
            int ho = (int)y->shape[2], wo = (int)y->shape[3];
            int64_t n = rt_tensor_numel(y);
            double *out = g_new(double, n), *ref = g_new(double, n);
            OK(run(&o, y, out));
            ref_conv(o.data[0], o.data[1], b ? o.data[2] : NULL, ref, cfg[i].n, cfg[i].c, cfg[i].h,
                     cfg[i].w, cfg[i].o, cfg[i].kh, cfg[i].kw, cfg[i].sh, cfg[i].sw, cfg[i].ph,
                     cfg[i].pw, cfg[i].dh, cfg[i].dw, ho, wo);
            EXPECT_CLOSE(out, ref, n, 1e-5, tol_of(dt) * 8);
            g_free(out);
            g_free(ref);
            op_free(&o);
        }
    return 0;
}

DEF_TEST(conv2d_bf16)
{
    op_graph o = {.g = rt_graph_new(0)};
    rt_graph_set_compute_dtype(o.g, RT_BF16);
    rt_tensor *x = IN(&o, RT_F32, 2, 3, 6, 6), *w = IN(&o, RT_F32, 4, 3, 3, 3);
    rt_tensor *y = rt_conv2d(o.g, x, w, NULL, 1, 1, 1, 1, 1, 1);
    double out[288], ref[288], exact[288], xr[216], wr[108];
    OK(run(&o, y, out));
    for (int i = 0; i < 216; i++)
        xr[i] = ref_bf16((float)o.data[0][i]);
    for (int i = 0; i < 108; i++)
        wr[i] = ref_bf16((float)o.data[1][i]);
    ref_conv(xr, wr, NULL, ref, 2, 3, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 6, 6);
    ref_conv(o.data[0], o.data[1], NULL, exact, 2, 3, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 6, 6);
    EXPECT_CLOSE(out, ref, 288, 1e-6, 1e-5);
    OK(rt_test_closeness(out, exact, 288, 1e-6, 1e-5, NULL) > 1);
    op_free(&o);
    return 0;
}

DEF_TEST(frozen_batch_norm)
{
    for (int t = 0; t < 2; t++) {
        rt_dtype dt = float_types[t];
        op_graph o = {.g = rt_graph_new(0)};
        rt_tensor *x = IN(&o, dt, 2, 3, 2, 2);
        rt_tensor *w = IN(&o, dt, 3), *b = IN(&o, dt, 3), *m = IN(&o, dt, 3);
        rt_tensor *v = add_in(&o, dt, 1, (int64_t[]){3}, 0.1, 2);
        double out[24], ref[24];
        OK(run(&o, rt_frozen_batch_norm(o.g, x, w, b, m, v, 1e-5), out));
        for (int i = 0; i < 24; i++) {
            int c = (i / 4) % 3;
            double scale = o.data[1][c] / sqrt(o.data[4][c] + 1e-5);
            ref[i] = o.data[0][i] * scale + (o.data[2][c] - o.data[3][c] * scale);
        }
        EXPECT_CLOSE(out, ref, 24, 1e-6, tol_of(dt) * 4);
        op_free(&o);
    }
    return 0;
}

DEF_TEST(max_pool2d)
{
    for (int t = 0; t < 2; t++) {
        rt_dtype dt = float_types[t];
        op_graph o = {.g = rt_graph_new(0)};
        rt_tensor *x = IN(&o, dt, 2, 3, 9, 8);
        double out[2 * 3 * 5 * 4], ref[2 * 3 * 5 * 4];
        OK(run(&o, rt_max_pool2d(o.g, x, 3, 2, 1), out));
        EXPECT_EQ_INT(5, o.y->shape[2]);
        EXPECT_EQ_INT(4, o.y->shape[3]);
        for (int p = 0; p < 6; p++)
            for (int i = 0; i < 5; i++)
                for (int j = 0; j < 4; j++) {
                    double m = -INFINITY;
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++) {
                            int yy = i * 2 - 1 + a, xx = j * 2 - 1 + b;
                            if (yy >= 0 && yy < 9 && xx >= 0 && xx < 8)
                                m = MAX(m, o.data[0][p * 72 + yy * 8 + xx]);
                        }
                    ref[(p * 5 + i) * 4 + j] = m;
                }
        EXPECT_CLOSE(out, ref, 120, 0, 0);
        op_free(&o);
    }
    return 0;
}

/* ---- normalisation */

DEF_TEST(layer_norm)
{
    for (int t = 0; t < 2; t++)
        for (int affine = 0; affine < 2; affine++) {
            rt_dtype dt = float_types[t];
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *x = add_in(&o, dt, 3, (int64_t[]){2, 3, 16}, -3, 5);
            rt_tensor *w = affine ? IN(&o, dt, 16) : NULL, *b = affine ? IN(&o, dt, 16) : NULL;
            double out[96], ref[96];
            OK(run(&o, rt_layer_norm(o.g, x, w, b, 1e-5), out));
            for (int r = 0; r < 6; r++) {
                const double *xr = o.data[0] + r * 16;
                double mean = 0, var = 0;
                for (int i = 0; i < 16; i++)
                    mean += xr[i] / 16;
                for (int i = 0; i < 16; i++)
                    var += (xr[i] - mean) * (xr[i] - mean) / 16;
                for (int i = 0; i < 16; i++) {
                    double h = (xr[i] - mean) / sqrt(var + 1e-5);
                    ref[r * 16 + i] = affine ? h * o.data[1][i] + o.data[2][i] : h;
                }
            }
            EXPECT_CLOSE(out, ref, 96, 1e-6, tol_of(dt) * 4);
            op_free(&o);
        }
    return 0;
}

DEF_TEST(softmax)
{
    for (int t = 0; t < 2; t++) {
        rt_dtype dt = float_types[t];
        op_graph o = {.g = rt_graph_new(0)};
        rt_tensor *x = add_in(&o, dt, 2, (int64_t[]){4, 9}, -20, 20);
        double out[36], ref[36];
        OK(run(&o, rt_softmax(o.g, x), out));
        for (int r = 0; r < 4; r++) {
            double m = -INFINITY, s = 0;
            for (int i = 0; i < 9; i++)
                m = MAX(m, o.data[0][r * 9 + i]);
            for (int i = 0; i < 9; i++)
                s += exp(o.data[0][r * 9 + i] - m);
            for (int i = 0; i < 9; i++)
                ref[r * 9 + i] = exp(o.data[0][r * 9 + i] - m) / s;
        }
        EXPECT_CLOSE(out, ref, 36, 1e-7, tol_of(dt) * 4);
        op_free(&o);
    }
    return 0;
}

/* nn.MultiheadAttention(E, H)(q, k, v, key_padding_mask)[0], batch_first=False, written out
 * as torch.nn.functional.multi_head_attention_forward does it */
static void ref_mha(const double *q, const double *k, const double *v, const uint8_t *mask,
                    const double *in_w, const double *in_b, const double *out_w,
                    const double *out_b, int L, int S, int B, int E, int H, double *out)
{
    int d = E / H;
    double *Q = g_new(double, L * B * E), *K = g_new(double, S * B * E), *V = g_new(double, S * B * E);
    double *O = g_new(double, L * B * E);
    for (int r = 0; r < L * B; r++)
        for (int e = 0; e < E; e++) {
            double s = in_b[e];
            for (int i = 0; i < E; i++)
                s += q[r * E + i] * in_w[e * E + i];
            Q[r * E + e] = s;
        }
    for (int r = 0; r < S * B; r++)
        for (int e = 0; e < E; e++) {
            double sk = in_b[E + e], sv = in_b[2 * E + e];
            for (int i = 0; i < E; i++) {
                sk += k[r * E + i] * in_w[(E + e) * E + i];
                sv += v[r * E + i] * in_w[(2 * E + e) * E + i];
            }
            K[r * E + e] = sk;
            V[r * E + e] = sv;
        }
    double *p = g_new(double, S);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++) {
                double m = -INFINITY, sum = 0;
                for (int s = 0; s < S; s++) {
                    double dot = 0;
                    for (int c = 0; c < d; c++)
                        dot += Q[(l * B + b) * E + h * d + c] / sqrt(d) * K[(s * B + b) * E + h * d + c];
                    p[s] = mask && mask[b * S + s] ? -INFINITY : dot;
                    m = MAX(m, p[s]);
                }
                for (int s = 0; s < S; s++)
                    sum += p[s] = exp(p[s] - m);
                for (int c = 0; c < d; c++) {
                    double acc = 0;
                    for (int s = 0; s < S; s++)
                        acc += p[s] / sum * V[(s * B + b) * E + h * d + c];
                    O[(l * B + b) * E + h * d + c] = acc;
                }
            }
    for (int r = 0; r < L * B; r++)
        for (int e = 0; e < E; e++) {
            double s = out_b[e];
            for (int i = 0; i < E; i++)
                s += O[r * E + i] * out_w[e * E + i];
            out[r * E + e] = s;
        }
    g_free(p);
    g_free(Q);
    g_free(K);
    g_free(V);
    g_free(O);
}

DEF_TEST(multihead_attention)
{
    const int L = 5, S = 7, B = 3, E = 8, H = 2;
    uint8_t mask[21] = {0};
    mask[3] = mask[6] = 1;                          /* batch 0 ignores keys 3 and 6 */
    mask[7 + 0] = mask[7 + 1] = mask[7 + 2] = 1;    /* batch 1 ignores the first three */
    for (int t = 0; t < 2; t++) {
        rt_dtype dt = float_types[t];
        op_graph o = {.g = rt_graph_new(0)};
        rt_tensor *q = IN(&o, dt, L, B, E), *k = IN(&o, dt, S, B, E), *v = IN(&o, dt, S, B, E);
        rt_mha_weights w = {IN(&o, dt, 3 * E, E), IN(&o, dt, 3 * E), IN(&o, dt, E, E), IN(&o, dt, E)};
        rt_tensor *m = rt_input(o.g, "mask", RT_BOOL, 2, (int64_t[]){B, S}, 0);
        rt_tensor *y = rt_multihead_attention(o.g, &w, q, k, v, m, H, 0.1); /* eval graph */
        OK(y != NULL);
        rt_graph_output(o.g, "y", o.y = rt_contiguous(o.g, y));
        OK(rt_test_plan(o.g));
        for (int i = 0; i < o.n_in; i++)
            OK(rt_test_write(o.g, o.in[i], vals(&o, i)));
        OK(rt_graph_write(o.g, m, mask, sizeof mask, NULL));
        OK(rt_test_run(o.g));
        double out[5 * 3 * 8], ref[5 * 3 * 8];
        OK(rt_test_read(o.g, o.y, out));
        ref_mha(o.data[0], o.data[1], o.data[2], mask, o.data[3], o.data[4], o.data[5], o.data[6],
                L, S, B, E, H, ref);
        EXPECT_CLOSE(out, ref, L * B * E, 1e-6, tol_of(dt) * 10);
        op_free(&o);
    }
    return 0;
}

DEF_TEST(embedding)
{
    rt_graph *g = rt_graph_new(0);
    rt_tensor *w = rt_input(g, "w", RT_F32, 2, (int64_t[]){4, 3}, -1);
    rt_tensor *idx = rt_input(g, "idx", RT_I64, 2, (int64_t[]){2, 2}, 0);
    rt_tensor *y = rt_embedding(g, w, idx);
    rt_graph_output(g, "y", y);
    OK(rt_test_plan(g));
    float wv[12];
    for (int i = 0; i < 12; i++)
        wv[i] = (float)i;
    int64_t iv[4] = {3, 0, 3, 1};
    OK(rt_graph_write(g, w, wv, sizeof wv, NULL) && rt_graph_write(g, idx, iv, sizeof iv, NULL));
    OK(rt_test_run(g));
    float out[12];
    OK(rt_graph_read(g, y, out, sizeof out, NULL));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            EXPECT_NEAR(wv[iv[i] * 3 + j], out[i * 3 + j], 0);
    rt_graph_free(g);
    return 0;
}

/* ---- losses */

DEF_TEST(losses)
{
    uint8_t pad[6] = {0, 0, 1, 0, 1, 1}; /* [B=2, T=3]; TRUE = padding */
    for (int t = 0; t < 2; t++)
        for (int red = 0; red < 2; red++) {
            rt_dtype dt = float_types[t];
            op_graph o = {.g = rt_graph_new(0)};
            rt_tensor *p = IN(&o, dt, 2, 3, 4), *tg = IN(&o, dt, 2, 3, 4);
            rt_tensor *m = rt_input(o.g, "pad", RT_BOOL, 2, (int64_t[]){2, 3}, 0);
            rt_tensor *mu = IN(&o, dt, 2, 5), *lv = IN(&o, dt, 2, 5);
            rt_tensor *l1 = rt_masked_l1_loss(o.g, p, tg, m, red ? RT_L1_MEAN_VALID : RT_L1_MEAN_ALL);
            rt_tensor *kl = rt_kl_loss(o.g, mu, lv);
            rt_graph_output(o.g, "l1", l1);
            rt_graph_output(o.g, "kl", kl);
            OK(rt_test_plan(o.g));
            for (int i = 0; i < o.n_in; i++)
                OK(rt_test_write(o.g, o.in[i], vals(&o, i)));
            OK(rt_graph_write(o.g, m, pad, sizeof pad, NULL) && rt_test_run(o.g));
            double l1v, klv, s = 0, k = 0;
            OK(rt_graph_read_scalar(o.g, l1, &l1v, NULL) && rt_graph_read_scalar(o.g, kl, &klv, NULL));
            int valid = 0;
            for (int i = 0; i < 24; i++)
                if (!pad[i / 4]) {
                    s += fabs(o.data[0][i] - o.data[1][i]);
                    valid++;
                }
            for (int i = 0; i < 10; i++)
                k += -0.5 * (1 + o.data[3][i] - o.data[2][i] * o.data[2][i] - exp(o.data[3][i]));
            EXPECT_NEAR(s / (red ? valid : 24), l1v, 1e-6);
            EXPECT_NEAR(k / 2, klv, 1e-6);
            op_free(&o);
        }
    return 0;
}

/* ---- randomness: the documented mapping, recomputed from Philox here */

static uint32_t ref_word(uint64_t seed, uint32_t step, uint32_t node, uint64_t sample, uint64_t e)
{
    uint32_t ctr[4] = {(uint32_t)(e / 4), (uint32_t)sample, node, step}, key[2] = {(uint32_t)seed,
                                                                                   (uint32_t)(seed >> 32)};
    uint32_t out[4];
    rt_philox4x32_10(ctr, key, out);
    return out[e % 4];
}

DEF_TEST(random_ops_follow_the_counter_mapping)
{
    const uint64_t seed = 0x1234567890abcdefull;
    const uint32_t step = 77;
    const int64_t offset = 10;
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    /* [T=3, B=4, D=5] sequence-first with batch axis 1 */
    rt_tensor *x = rt_input(g, "x", RT_F64, 3, (int64_t[]){3, 4, 5}, 1);
    rt_tensor *d = rt_dropout(g, x, 0.3);                        /* rng id 0 */
    rt_tensor *u = rt_rand_uniform(g, RT_F64, 2, (int64_t[]){4, 6}, 0, -2, 3);  /* id 1 */
    rt_tensor *n = rt_rand_normal(g, RT_F64, 1, (int64_t[]){7}, -1, 1, 2);      /* id 2 */
    rt_graph_output(g, "d", d);
    rt_graph_output(g, "u", u);
    rt_graph_output(g, "n", n);
    OK(rt_test_plan(g));
    double xv[60];
    for (int i = 0; i < 60; i++)
        xv[i] = i + 1;
    OK(rt_graph_write(g, x, xv, sizeof xv, NULL));
    OK(rt_graph_set_rng(g, seed, step, offset, NULL) && rt_test_run(g));
    double dv[60], uv[24], nv[7];
    OK(rt_test_read(g, d, dv) && rt_test_read(g, u, uv) && rt_test_read(g, n, nv));
    uint32_t threshold = (uint32_t)(0.3 * 4294967296.0);
    int dropped = 0;
    for (int t = 0; t < 3; t++)
        for (int b = 0; b < 4; b++)
            for (int i = 0; i < 5; i++) {
                int e = (t * 4 + b) * 5 + i;
                uint32_t w = ref_word(seed, step, 0, (uint64_t)(b + offset), (uint64_t)(t * 5 + i));
                double expect = w >= threshold ? xv[e] / 0.7 : 0;
                dropped += w < threshold;
                EXPECT_NEAR(expect, dv[e], 1e-12);
            }
    OK(dropped > 5 && dropped < 35);
    for (int b = 0; b < 4; b++)
        for (int i = 0; i < 6; i++) {
            uint32_t w = ref_word(seed, step, 1, (uint64_t)(b + offset), (uint64_t)i);
            EXPECT_NEAR(-2 + 5 * ((w >> 8) * (1.0 / 16777216.0)), uv[b * 6 + i], 1e-12);
        }
    for (int i = 0; i < 7; i++) {
        int pair = i & ~1;
        uint32_t w0 = ref_word(seed, step, 2, 0, (uint64_t)(i / 4 * 4 + (pair % 4)));
        uint32_t w1 = ref_word(seed, step, 2, 0, (uint64_t)(i / 4 * 4 + (pair % 4) + 1));
        double r = sqrt(-2 * log((w0 + 0.5) / 4294967296.0)), th = 2 * M_PI * (w1 + 0.5) / 4294967296.0;
        EXPECT_NEAR(1 + 2 * ((i & 1) ? r * sin(th) : r * cos(th)), nv[i], 1e-12);
    }
    rt_graph_free(g);
    return 0;
}

int main(void)
{
    RUN_TEST(binary_broadcast);
    RUN_TEST(unary);
    RUN_TEST(glu);
    RUN_TEST(cast);
    RUN_TEST(fill);
    RUN_TEST(views_and_copies);
    RUN_TEST(reductions);
    RUN_TEST(matmul);
    RUN_TEST(linear);
    RUN_TEST(linear_bf16);
    RUN_TEST(conv2d);
    RUN_TEST(conv2d_bf16);
    RUN_TEST(matmul_f16);
    RUN_TEST(frozen_batch_norm);
    RUN_TEST(max_pool2d);
    RUN_TEST(layer_norm);
    RUN_TEST(softmax);
    RUN_TEST(multihead_attention);
    RUN_TEST(embedding);
    RUN_TEST(losses);
    RUN_TEST(random_ops_follow_the_counter_mapping);
    END_TEST;
}
