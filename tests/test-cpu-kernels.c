/* tests/test-cpu-kernels.c: the CPU dense kernels (src/core/cpu/kernels.h) against naive
 * references computed in double.
 *
 * Tolerances: an f32 sum of K products has a worst-case rounding error of about
 * K * u * sum|a_i * b_i| (u = 2^-24, Higham's gamma_K bound), whatever order BLAS or oneDNN
 * sums in. Every check uses 2 * (K + 2) * u * (the sum of absolute terms, computed by the
 * reference alongside the result): it cannot fail from legitimate reordering, while any
 * indexing, transpose or stride mistake changes the result by O(its magnitude), far above it.
 * The convolutions are also checked without a reference, by the adjoint identities
 * <conv(x, w), dy> = <x, backward_data(dy, w)> = <w, backward_weight(x, dy)>. */
#include "config.h"

#include <float.h>
#include <stdint.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#include "core/cpu/conv-internal.h"
#include "core/cpu/kernels.h"
#include "testing.h"

#define U_F32 (1.0 / 16777216.0)

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* uniform in [-1, 1) */
static float rng_float(void)
{
    return (float)((double)(rng_next() >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static float *random_floats(size_t n)
{
    float *p = g_new(float, n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_float();
    return p;
}

static float *copy_floats(const float *x, size_t n)
{
    return g_memdup2(x, (n ? n : 1) * sizeof *x);
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Index of the first element where got differs from want by more than 2 * (terms + 2) * u *
 * mag (mag: sum of absolute terms of that element), or -1. */
static int64_t first_bad(const float *got, const double *want, const double *mag, size_t n,
                         double terms)
{
    for (size_t i = 0; i < n; i++) {
        double tol = 2.0 * (terms + 2.0) * U_F32 * mag[i] + 1e-30;
        if (!(fabs((double)got[i] - want[i]) <= tol))
            return (int64_t)i;
    }
    return -1;
}

#define EXPECT_CLOSE_ARRAY(got, want, mag, n, terms, what)                                  \
    do {                                                                                   \
        int64_t bad_ = first_bad((got), (want), (mag), (n), (terms));                      \
        if (bad_ >= 0)                                                                     \
            printf("# %s: element %lld is %.9g, expected %.9g (mag %.3g)\n", (what),       \
                   (long long)bad_, (double)(got)[bad_], (want)[bad_], (mag)[bad_]);       \
        OK1(bad_ < 0, (what));                                                             \
    } while (0)

/* ------------------------------------------------------------------ GEMM */

/* want = alpha * op(A) op(B) + beta * C in double, mag = the matching sum of |terms| */
static void gemm_ref(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                     const float *C, int64_t ldc, double *want, double *mag)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k];
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
                m += fabs(a * b);
            }
            double c = beta == 0.0f ? 0.0 : (double)beta * C[i * ldc + j];
            want[i * N + j] = alpha * s + c;
            mag[i * N + j] = fabs(alpha) * m + fabs(c);
        }
}

typedef struct gemm_case {
    bool ta, tb;
    int64_t M, N, K, pad_a, pad_b, pad_c; /* leading dimension = columns + pad */
    float alpha, beta;
} gemm_case;

static const gemm_case gemm_cases[] = {
    {false, false, 1, 1, 1, 0, 0, 0, 1.0f, 0.0f},
    {false, false, 7, 5, 3, 0, 0, 0, 1.0f, 0.0f},
    {true, false, 13, 17, 19, 2, 0, 1, 0.5f, 1.0f},
    {false, true, 33, 9, 65, 0, 3, 0, -1.0f, 0.25f},
    {true, true, 31, 47, 29, 5, 1, 7, 2.0f, -1.0f},
    {false, false, 302, 96, 64, 0, 11, 3, 1.0f, 0.0f},
    {true, false, 64, 200, 150, 1, 0, 0, 1.0f, 1.0f},
    {false, true, 129, 131, 257, 3, 3, 3, 0.125f, 0.0f},
    {false, false, 4, 6, 0, 0, 0, 0, 1.0f, 0.5f},  /* K = 0: C = beta * C */
    {false, false, 4, 6, 5, 0, 0, 0, 0.0f, -2.0f}, /* alpha = 0 */
};

static int check_gemm_case(const gemm_case *g)
{
    int64_t a_rows = g->ta ? g->K : g->M, a_cols = g->ta ? g->M : g->K;
    int64_t b_rows = g->tb ? g->N : g->K, b_cols = g->tb ? g->K : g->N;
    int64_t lda = a_cols + g->pad_a, ldb = b_cols + g->pad_b, ldc = g->N + g->pad_c;
    if (lda < 1)
        lda = 1;
    float *A = random_floats((size_t)(a_rows * lda));
    float *B = random_floats((size_t)(b_rows * ldb));
    float *C = random_floats((size_t)(g->M * ldc));
    if (g->beta == 0.0f) /* beta = 0 must ignore C, NaN included */
        for (int64_t i = 0; i < g->M * ldc; i++)
            C[i] = NAN;
    double *want = g_new(double, g->M * g->N + 1), *mag = g_new(double, g->M * g->N + 1);
    gemm_ref(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, lda, B, ldb, g->beta, C, ldc, want, mag);
    float *C0 = copy_floats(C, (size_t)(g->M * ldc));
    rt_cpu_gemm_f32(g->ta, g->tb, g->M, g->N, g->K, g->alpha, A, lda, B, ldb, g->beta, C, ldc);
    int rc = 0;
    for (int64_t i = 0; i < g->M && rc == 0; i++)
        for (int64_t j = 0; j < g->N; j++) {
            double tol = 2.0 * (g->K + 2) * U_F32 * mag[i * g->N + j] + 1e-30;
            if (!(fabs(C[i * ldc + j] - want[i * g->N + j]) <= tol)) {
                printf("# C[%lld][%lld] = %.9g, expected %.9g\n", (long long)i, (long long)j,
                       C[i * ldc + j], want[i * g->N + j]);
                rc = -1;
                break;
            }
        }
    /* the padding between rows of C is not written */
    for (int64_t i = 0; i < g->M && rc == 0; i++)
        for (int64_t j = g->N; j < ldc; j++)
            if (bits_of(C[i * ldc + j]) != bits_of(C0[i * ldc + j])) {
                printf("# padding C[%lld][%lld] was overwritten\n", (long long)i, (long long)j);
                rc = -1;
                break;
            }
    g_free(A);
    g_free(B);
    g_free(C);
    g_free(C0);
    g_free(want);
    g_free(mag);
    return rc;
}

DEF_TEST(gemm)
{
    for (size_t t = 0; t < G_N_ELEMENTS(gemm_cases); t++) {
        const gemm_case *g = &gemm_cases[t];
        int rc = check_gemm_case(g);
        RT_TEST_REPORT(rc == 0, "gemm %s%s M=%lld N=%lld K=%lld alpha=%g beta=%g", g->ta ? "T" : "N",
                       g->tb ? "T" : "N", (long long)g->M, (long long)g->N, (long long)g->K,
                       g->alpha, g->beta);
        if (rc)
            return -1;
    }
    return 0;
}

/* batch with broadcast operands, in both the sequential and the split-over-batch paths */
static int check_batched(int threads, bool ta, bool tb, int64_t batch, int64_t M, int64_t N,
                         int64_t K, bool bcast_a, bool bcast_b, bool sum_c)
{
    rt_cpu_set_num_threads(threads);
    int64_t lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
    int64_t sa = bcast_a ? 0 : (ta ? K : M) * lda + 5, sb = bcast_b ? 0 : (tb ? N : K) * ldb + 1;
    int64_t sc = sum_c ? 0 : M * ldc + 4;
    float *A = random_floats((size_t)((bcast_a ? 1 : batch) * ((ta ? K : M) * lda + 5)));
    float *B = random_floats((size_t)((bcast_b ? 1 : batch) * ((tb ? N : K) * ldb + 1)));
    size_t c_len = (size_t)((sum_c ? 1 : batch) * (M * ldc + 4));
    float *C = random_floats(c_len);
    float beta = sum_c ? 1.0f : 0.5f, alpha = 0.75f;
    float *C0 = copy_floats(C, c_len);
    rt_cpu_gemm_batched_f32(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
    double *want = g_new(double, M * N), *mag = g_new(double, M * N);
    double *acc = g_new0(double, M * N), *accmag = g_new0(double, M * N);
    int rc = 0;
    for (int64_t b = 0; b < batch && rc == 0; b++) {
        if (sum_c) { /* C = C0 + sum_b alpha * A_b B_b */
            gemm_ref(ta, tb, M, N, K, alpha, A + b * sa, lda, B + b * sb, ldb, 0.0f, C0, ldc, want,
                     mag);
            for (int64_t i = 0; i < M * N; i++) {
                acc[i] += want[i];
                accmag[i] += mag[i];
            }
            continue;
        }
        gemm_ref(ta, tb, M, N, K, alpha, A + b * sa, lda, B + b * sb, ldb, beta, C0 + b * sc, ldc,
                 want, mag);
        for (int64_t i = 0; i < M && rc == 0; i++)
            for (int64_t j = 0; j < N; j++) {
                double tol = 2.0 * (K + 2) * U_F32 * mag[i * N + j] + 1e-30;
                if (!(fabs(C[b * sc + i * ldc + j] - want[i * N + j]) <= tol)) {
                    printf("# batch %lld C[%lld][%lld] = %.9g, expected %.9g\n", (long long)b,
                           (long long)i, (long long)j, C[b * sc + i * ldc + j], want[i * N + j]);
                    rc = -1;
                    break;
                }
            }
    }
    if (sum_c)
        for (int64_t i = 0; i < M && rc == 0; i++)
            for (int64_t j = 0; j < N; j++) {
                double w = acc[i * N + j] + C0[i * ldc + j];
                double tol = 2.0 * (batch * K + 2) * U_F32 * (accmag[i * N + j] + fabs(w));
                if (!(fabs(C[i * ldc + j] - w) <= tol)) {
                    printf("# summed C[%lld][%lld] = %.9g, expected %.9g\n", (long long)i,
                           (long long)j, C[i * ldc + j], w);
                    rc = -1;
                    break;
                }
            }
    g_free(A);
    g_free(B);
    g_free(C);
    g_free(C0);
    g_free(want);
    g_free(mag);
    g_free(acc);
    g_free(accmag);
    rt_cpu_set_num_threads(1);
    return rc;
}

DEF_TEST(gemm_batched)
{
    OK1(check_batched(1, false, false, 3, 5, 7, 9, false, false, false) == 0, "batched, 1 thread");
    OK1(check_batched(2, true, false, 5, 17, 13, 11, false, false, false) == 0,
        "batched split over 2 threads");
    OK1(check_batched(2, false, true, 4, 9, 33, 21, true, false, false) == 0,
        "batched, A broadcast (stride 0)");
    OK1(check_batched(2, true, true, 6, 12, 10, 8, false, true, false) == 0,
        "batched, B broadcast (stride 0)");
    OK1(check_batched(2, false, false, 4, 300, 300, 300, false, false, false) == 0,
        "batched, large matrices (BLAS threads)");
    OK1(check_batched(2, false, false, 5, 6, 7, 8, false, false, true) == 0,
        "batched, C stride 0 with beta 1 sums the products");
    return 0;
}

/* ------------------------------------------------------------------ threads */

DEF_TEST(threads)
{
    rt_cpu_set_num_threads(2);
    EXPECT_EQ_INT(2, rt_cpu_get_num_threads());
    g_setenv("OMP_NUM_THREADS", "3", TRUE);
    rt_cpu_set_num_threads(0);
    EXPECT_EQ_INT(3, rt_cpu_get_num_threads());
    g_setenv("OMP_NUM_THREADS", "2,1", TRUE); /* nested list: the first level is ours */
    rt_cpu_set_num_threads(0);
    EXPECT_EQ_INT(2, rt_cpu_get_num_threads());
    g_setenv("OMP_NUM_THREADS", "garbage", TRUE);
    rt_cpu_set_num_threads(0);
    EXPECT_EQ_INT((long long)g_get_num_processors(), rt_cpu_get_num_threads());
    g_setenv("OMP_NUM_THREADS", "1", TRUE);
    rt_cpu_set_num_threads(0);
    EXPECT_EQ_INT(1, rt_cpu_get_num_threads());
    return 0;
}

/* ------------------------------------------------------------------ convolution */

static int64_t x_len(const rt_conv2d_shape *s)
{
    return s->n * s->c_in * s->h * s->w;
}
static int64_t w_len(const rt_conv2d_shape *s)
{
    return s->c_out * s->c_in * s->kh * s->kw;
}
static int64_t y_len(const rt_conv2d_shape *s)
{
    return s->n * s->c_out * s->h_out * s->w_out;
}

/* Visits every (output, input, weight) triple of the direct convolution; the three reference
 * passes are three accumulations over it. */
#define FOR_EACH_TAP(s, body)                                                                \
    for (int64_t n = 0; n < (s)->n; n++)                                                     \
        for (int64_t o = 0; o < (s)->c_out; o++)                                             \
            for (int64_t oh = 0; oh < (s)->h_out; oh++)                                      \
                for (int64_t ow = 0; ow < (s)->w_out; ow++)                                  \
                    for (int64_t c = 0; c < (s)->c_in; c++)                                  \
                        for (int64_t i = 0; i < (s)->kh; i++)                                \
                            for (int64_t j = 0; j < (s)->kw; j++) {                          \
                                int64_t ih = oh * (s)->stride_h - (s)->pad_h + i * (s)->dil_h; \
                                int64_t iw = ow * (s)->stride_w - (s)->pad_w + j * (s)->dil_w; \
                                if (ih < 0 || ih >= (s)->h || iw < 0 || iw >= (s)->w)        \
                                    continue;                                                \
                                int64_t yi = ((n * (s)->c_out + o) * (s)->h_out + oh) * (s)->w_out + ow; \
                                int64_t xi = ((n * (s)->c_in + c) * (s)->h + ih) * (s)->w + iw; \
                                int64_t wi = ((o * (s)->c_in + c) * (s)->kh + i) * (s)->kw + j; \
                                body                                                         \
                            }

typedef enum { PATH_PUBLIC, PATH_IM2COL, PATH_DNNL } conv_path;

static void conv_fwd(conv_path p, const rt_conv2d_shape *s, const float *x, const float *w,
                     const float *b, float *y, void *ws)
{
    if (p == PATH_IM2COL)
        cpu_conv_im2col_forward(s, x, w, b, y, ws);
#ifdef CPU_CONV_WITH_DNNL
    else if (p == PATH_DNNL)
        g_assert(cpu_conv_dnnl_forward(s, x, w, b, y, ws));
#endif
    else
        rt_cpu_conv2d_forward_f32(s, x, w, b, y, ws);
}
static void conv_bwd_data(conv_path p, const rt_conv2d_shape *s, const float *dy, const float *w,
                          float *dx, bool acc, void *ws)
{
    if (p == PATH_IM2COL)
        cpu_conv_im2col_backward_data(s, dy, w, dx, acc, ws);
#ifdef CPU_CONV_WITH_DNNL
    else if (p == PATH_DNNL)
        g_assert(cpu_conv_dnnl_backward_data(s, dy, w, dx, acc, ws));
#endif
    else
        rt_cpu_conv2d_backward_data_f32(s, dy, w, dx, acc, ws);
}
static void conv_bwd_weight(conv_path p, const rt_conv2d_shape *s, const float *x, const float *dy,
                            float *dw, float *db, bool acc, void *ws)
{
    if (p == PATH_IM2COL)
        cpu_conv_im2col_backward_weight(s, x, dy, dw, db, acc, ws);
#ifdef CPU_CONV_WITH_DNNL
    else if (p == PATH_DNNL)
        g_assert(cpu_conv_dnnl_backward_weight(s, x, dy, dw, db, acc, ws));
#endif
    else
        rt_cpu_conv2d_backward_weight_f32(s, x, dy, dw, db, acc, ws);
}

typedef struct conv_case {
    int64_t n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 11, 13, 4, 7, 7, 2, 2, 3, 3, 1, 1},   /* the 7x7/2 stem, odd sizes */
    {2, 5, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1},     /* 3x3 same */
    {1, 4, 10, 7, 3, 3, 3, 2, 2, 1, 1, 1, 1},    /* 3x3 stride 2 */
    {3, 8, 5, 6, 7, 1, 1, 1, 1, 0, 0, 1, 1},     /* 1x1 pointwise (no im2col) */
    {2, 6, 9, 9, 5, 1, 1, 2, 2, 0, 0, 1, 1},     /* 1x1/2 downsample */
    {1, 3, 12, 11, 4, 3, 3, 1, 1, 2, 2, 2, 2},   /* dilation 2 */
    {2, 3, 8, 9, 2, 3, 2, 2, 1, 0, 1, 1, 2},     /* rectangular kernel, mixed stride/pad/dil */
    {2, 32, 14, 14, 64, 3, 3, 2, 2, 1, 1, 1, 1}, /* ResNet-like channel counts */
    {1, 64, 6, 6, 64, 3, 3, 1, 1, 1, 1, 1, 1},
    {2, 16, 7, 7, 32, 1, 1, 2, 2, 0, 0, 1, 1},
    {3, 2, 15, 15, 3, 3, 3, 1, 1, 1, 1, 1, 1},   /* im2col groups of 2 images + 1 left over */
    {2, 4, 24, 24, 5, 1, 1, 1, 1, 0, 0, 1, 1},   /* pointwise, one image per GEMM (direct) */
    {2, 3, 25, 23, 4, 3, 3, 1, 1, 1, 1, 1, 1},   /* one image per GEMM through im2col */
    {1, 2, 9, 10, 3, 5, 5, 3, 2, 4, 0, 1, 1},    /* padding larger than the stride reaches */
};

static rt_conv2d_shape shape_of(const conv_case *c)
{
    rt_conv2d_shape s = {.n = c->n, .c_in = c->c_in, .h = c->h, .w = c->w, .c_out = c->c_out,
                         .kh = c->kh, .kw = c->kw, .stride_h = c->sh, .stride_w = c->sw,
                         .pad_h = c->ph, .pad_w = c->pw, .dil_h = c->dh, .dil_w = c->dw};
    return s;
}

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static double abs_dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += fabs((double)a[i] * b[i]);
    return s;
}

static int check_conv_case(conv_path path, const conv_case *cc)
{
    rt_conv2d_shape s = shape_of(cc);
    OK(rt_cpu_conv2d_shape_init(&s));
    size_t ws_size = path == PATH_IM2COL ? cpu_conv_im2col_workspace_size(&s)
                                         : rt_cpu_conv2d_workspace_size(&s);
#ifdef CPU_CONV_WITH_DNNL
    if (path == PATH_DNNL) {
        /* oneDNN takes every shape of this list, in all three passes */
        for (int pass = 0; pass < 3; pass++) {
            const char *impl = cpu_conv_dnnl_impl(&s, pass);
            printf("# oneDNN pass %d: %s\n", pass, impl ? impl : "(declined)");
            OK(impl != NULL);
        }
        ws_size = cpu_conv_dnnl_workspace_size(&s);
    }
#endif
    void *ws = ws_size ? g_malloc(ws_size) : NULL; /* exact size: ASan sees any overrun */
    int64_t nx = x_len(&s), nw = w_len(&s), ny = y_len(&s);
    float *x = random_floats(nx), *w = random_floats(nw), *b = random_floats(s.c_out);
    float *dy = random_floats(ny);
    double *y_ref = g_new0(double, ny), *y_mag = g_new0(double, ny);
    double *dx_ref = g_new0(double, nx), *dx_mag = g_new0(double, nx);
    double *dw_ref = g_new0(double, nw), *dw_mag = g_new0(double, nw);
    double *db_ref = g_new0(double, s.c_out), *db_mag = g_new0(double, s.c_out);
    FOR_EACH_TAP(&s, {
        y_ref[yi] += (double)x[xi] * w[wi];
        y_mag[yi] += fabs((double)x[xi] * w[wi]);
        dx_ref[xi] += (double)dy[yi] * w[wi];
        dx_mag[xi] += fabs((double)dy[yi] * w[wi]);
        dw_ref[wi] += (double)dy[yi] * x[xi];
        dw_mag[wi] += fabs((double)dy[yi] * x[xi]);
    });
    int64_t hw_out = s.h_out * s.w_out;
    for (int64_t i = 0; i < ny; i++) {
        int64_t o = i / hw_out % s.c_out;
        y_ref[i] += b[o];
        y_mag[i] += fabs(b[o]);
        db_ref[o] += dy[i];
        db_mag[o] += fabs(dy[i]);
    }
    double k_fwd = (double)(s.c_in * s.kh * s.kw + 1), k_bwd_data = (double)(s.c_out * s.kh * s.kw);
    double k_bwd_w = (double)(s.n * hw_out);

    /* forward, with and without bias */
    float *y = random_floats(ny);
    conv_fwd(path, &s, x, w, b, y, ws);
    EXPECT_CLOSE_ARRAY(y, y_ref, y_mag, ny, k_fwd, "forward with bias");
    float *y_nb = random_floats(ny);
    conv_fwd(path, &s, x, w, NULL, y_nb, ws);
    for (int64_t i = 0; i < ny; i++) {
        int64_t o = i / hw_out % s.c_out;
        y_ref[i] -= b[o];
    }
    EXPECT_CLOSE_ARRAY(y_nb, y_ref, y_mag, ny, k_fwd, "forward without bias");

    /* backward data: overwrite (old contents NaN), then accumulate onto known values */
    float *dx = g_new(float, nx);
    for (int64_t i = 0; i < nx; i++)
        dx[i] = NAN;
    conv_bwd_data(path, &s, dy, w, dx, false, ws);
    EXPECT_CLOSE_ARRAY(dx, dx_ref, dx_mag, nx, k_bwd_data, "backward data");
    float *dx_base = random_floats(nx), *dx_acc = copy_floats(dx_base, nx);
    conv_bwd_data(path, &s, dy, w, dx_acc, true, ws);
    for (int64_t i = 0; i < nx; i++) {
        dx_ref[i] += dx_base[i];
        dx_mag[i] += fabs(dx_base[i]);
    }
    EXPECT_CLOSE_ARRAY(dx_acc, dx_ref, dx_mag, nx, k_bwd_data + 1, "backward data, accumulate");

    /* backward weight and bias */
    float *dw = g_new(float, nw), *db = g_new(float, s.c_out);
    for (int64_t i = 0; i < nw; i++)
        dw[i] = NAN;
    for (int64_t i = 0; i < s.c_out; i++)
        db[i] = NAN;
    conv_bwd_weight(path, &s, x, dy, dw, db, false, ws);
    EXPECT_CLOSE_ARRAY(dw, dw_ref, dw_mag, nw, k_bwd_w, "backward weight");
    EXPECT_CLOSE_ARRAY(db, db_ref, db_mag, s.c_out, k_bwd_w, "backward bias");
    float *dw_base = random_floats(nw), *dw_acc = copy_floats(dw_base, nw);
    float *db_base = random_floats(s.c_out), *db_acc = copy_floats(db_base, s.c_out);
    conv_bwd_weight(path, &s, x, dy, dw_acc, db_acc, true, ws);
    for (int64_t i = 0; i < nw; i++) {
        dw_ref[i] += dw_base[i];
        dw_mag[i] += fabs(dw_base[i]);
    }
    for (int64_t i = 0; i < s.c_out; i++) {
        db_ref[i] += db_base[i];
        db_mag[i] += fabs(db_base[i]);
    }
    EXPECT_CLOSE_ARRAY(dw_acc, dw_ref, dw_mag, nw, k_bwd_w + 1, "backward weight, accumulate");
    EXPECT_CLOSE_ARRAY(db_acc, db_ref, db_mag, s.c_out, k_bwd_w + 1, "backward bias, accumulate");
    float *dw_only = copy_floats(dw_base, nw);
    conv_bwd_weight(path, &s, x, dy, dw_only, NULL, false, ws); /* no bias gradient asked */
    for (int64_t i = 0; i < nw; i++)
        dw_ref[i] -= dw_base[i];
    EXPECT_CLOSE_ARRAY(dw_only, dw_ref, dw_mag, nw, k_bwd_w + 1, "backward weight, no dbias");

    /* adjoint identities, independent of the reference: y_nb = conv(x, w) without bias */
    double lhs = dot(y_nb, dy, ny), rhs_x = dot(x, dx, nx), rhs_w = dot(w, dw, nw);
    double scale = abs_dot(y_nb, dy, ny) + abs_dot(x, dx, nx) + abs_dot(w, dw, nw);
    double terms = k_fwd + k_bwd_data + k_bwd_w + (double)(nx + ny + nw);
    double tol = 4.0 * terms * U_F32 * scale;
    EXPECT_NEAR(lhs, rhs_x, tol);
    EXPECT_NEAR(lhs, rhs_w, tol);

    g_free(ws);
    g_free(x), g_free(w), g_free(b), g_free(dy), g_free(y), g_free(y_nb), g_free(dx);
    g_free(dx_base), g_free(dx_acc), g_free(dw), g_free(db), g_free(dw_base), g_free(dw_acc);
    g_free(db_base), g_free(db_acc), g_free(dw_only);
    g_free(y_ref), g_free(y_mag), g_free(dx_ref), g_free(dx_mag), g_free(dw_ref), g_free(dw_mag);
    g_free(db_ref), g_free(db_mag);
    return 0;
}

static int conv_all(conv_path path)
{
    for (size_t t = 0; t < G_N_ELEMENTS(conv_cases); t++) {
        const conv_case *c = &conv_cases[t];
        printf("# conv n=%lld c=%lld %lldx%lld -> %lld, k %lldx%lld s %lld,%lld p %lld,%lld "
               "d %lld,%lld\n",
               (long long)c->n, (long long)c->c_in, (long long)c->h, (long long)c->w,
               (long long)c->c_out, (long long)c->kh, (long long)c->kw, (long long)c->sh,
               (long long)c->sw, (long long)c->ph, (long long)c->pw, (long long)c->dh,
               (long long)c->dw);
        if (check_conv_case(path, c) != 0)
            return -1;
    }
    return 0;
}

DEF_TEST(conv_im2col)
{
    rt_cpu_set_num_threads(1);
    return conv_all(PATH_IM2COL);
}

#ifdef CPU_CONV_WITH_DNNL
DEF_TEST(conv_dnnl_blocked)
{
    rt_cpu_set_num_threads(2);
    cpu_conv_dnnl_set_formats(CPU_DNNL_FORMATS_BLOCKED);
    int rc = conv_all(PATH_DNNL);
    cpu_conv_dnnl_set_formats(CPU_DNNL_FORMATS_DEFAULT);
    rt_cpu_set_num_threads(1);
    return rc;
}

DEF_TEST(conv_dnnl_plain)
{
    cpu_conv_dnnl_set_formats(CPU_DNNL_FORMATS_PLAIN);
    int rc = conv_all(PATH_DNNL);
    cpu_conv_dnnl_set_formats(CPU_DNNL_FORMATS_DEFAULT);
    return rc;
}
#endif

DEF_TEST(conv_public)
{
#ifdef CPU_CONV_WITH_DNNL
    printf("# the public functions use oneDNN where it takes the shape\n");
#endif
    rt_cpu_set_num_threads(2);
    int rc = conv_all(PATH_PUBLIC);
    rt_cpu_set_num_threads(1);
    return rc;
}

DEF_TEST(conv_shape)
{
    rt_conv2d_shape s = {.n = 8, .c_in = 3, .h = 96, .w = 96, .c_out = 64, .kh = 7, .kw = 7,
                         .stride_h = 2, .stride_w = 2, .pad_h = 3, .pad_w = 3, .dil_h = 1,
                         .dil_w = 1};
    OK(rt_cpu_conv2d_shape_init(&s));
    EXPECT_EQ_INT(48, s.h_out);
    EXPECT_EQ_INT(48, s.w_out);
    s.h = 480, s.w = 640;
    OK(rt_cpu_conv2d_shape_init(&s));
    EXPECT_EQ_INT(240, s.h_out);
    EXPECT_EQ_INT(320, s.w_out);
    /* (5 + 2*1 - 2*(3-1) - 1) / 2 + 1 = 2 */
    rt_conv2d_shape d = {.n = 1, .c_in = 1, .h = 5, .w = 5, .c_out = 1, .kh = 3, .kw = 3,
                         .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .dil_h = 2,
                         .dil_w = 2};
    OK(rt_cpu_conv2d_shape_init(&d));
    EXPECT_EQ_INT(2, d.h_out);
    rt_conv2d_shape bad = d;
    bad.h = 2, bad.pad_h = 0; /* kernel span 5 > 2 */
    OK(!rt_cpu_conv2d_shape_init(&bad));
    bad = d;
    bad.stride_w = 0;
    OK(!rt_cpu_conv2d_shape_init(&bad));
    bad = d;
    bad.c_in = 0;
    OK(!rt_cpu_conv2d_shape_init(&bad));
    return 0;
}

/* ------------------------------------------------------------------ max pooling */

static int check_maxpool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t st,
                         int64_t pad, bool ceil_mode, bool specials)
{
    int64_t h_out = (h + 2 * pad - k + (ceil_mode ? st - 1 : 0)) / st + 1;
    int64_t w_out = (w + 2 * pad - k + (ceil_mode ? st - 1 : 0)) / st + 1;
    if (ceil_mode) { /* PyTorch: the last window must start inside the input or left padding */
        if ((h_out - 1) * st >= h + pad)
            h_out--;
        if ((w_out - 1) * st >= w + pad)
            w_out--;
    }
    int64_t nx = n * c * h * w, ny = n * c * h_out * w_out;
    float *x = random_floats(nx);
    for (int64_t i = 0; i < nx; i++) /* coarse values: many ties, the first maximum must win */
        x[i] = floorf(x[i] * 3.0f);
    if (specials) {
        x[1] = NAN;
        x[nx / 2] = INFINITY;
        x[nx - 1] = -INFINITY;
    }
    float *y = g_new(float, ny);
    int32_t *arg = g_new(int32_t, ny);
    rt_cpu_maxpool2d_forward_f32(n, c, h, w, k, st, pad, h_out, w_out, x, y, arg);
    float *dy = random_floats(ny);
    double *dx_ref = g_new0(double, nx);
    for (int64_t p = 0; p < n * c; p++)
        for (int64_t oh = 0; oh < h_out; oh++)
            for (int64_t ow = 0; ow < w_out; ow++) {
                float best = -INFINITY;
                int64_t at = -1;
                for (int64_t i = 0; i < k; i++)
                    for (int64_t j = 0; j < k; j++) {
                        int64_t ih = oh * st - pad + i, iw = ow * st - pad + j;
                        if (ih < 0 || ih >= h || iw < 0 || iw >= w)
                            continue;
                        float v = x[p * h * w + ih * w + iw];
                        if (at < 0 || (!isnan(best) && (v > best || isnan(v)))) {
                            best = v;
                            at = ih * w + iw;
                        }
                    }
                int64_t yi = (p * h_out + oh) * w_out + ow;
                int ok = (bits_of(y[yi]) == bits_of(best) || (isnan(y[yi]) && isnan(best))) &&
                         arg[yi] == at;
                if (!ok) {
                    printf("# pool plane %lld (%lld, %lld): got %g at %d, expected %g at %lld\n",
                           (long long)p, (long long)oh, (long long)ow, y[yi], arg[yi], best,
                           (long long)at);
                    return -1;
                }
                dx_ref[p * h * w + at] += dy[yi];
            }
    float *dx = g_new(float, nx);
    for (int64_t i = 0; i < nx; i++)
        dx[i] = NAN;
    rt_cpu_maxpool2d_backward_f32(n, c, h, w, h_out, w_out, dy, arg, dx, false);
    /* a position is the maximum of at most ceil(k/st)^2 windows: those few terms are exact
     * to within k*k roundings */
    for (int64_t i = 0; i < nx; i++)
        if (!(fabs(dx[i] - dx_ref[i]) <= 2.0 * (double)(k * k) * U_F32 * 4.0)) {
            printf("# pool dx[%lld] = %g, expected %g\n", (long long)i, dx[i], dx_ref[i]);
            return -1;
        }
    float *base = random_floats(nx), *acc = copy_floats(base, nx);
    rt_cpu_maxpool2d_backward_f32(n, c, h, w, h_out, w_out, dy, arg, acc, true);
    for (int64_t i = 0; i < nx; i++)
        if (!(fabs(acc[i] - (dx_ref[i] + base[i])) <= 2.0 * (double)(k * k + 1) * U_F32 * 8.0)) {
            printf("# pool accumulate dx[%lld] = %g, expected %g\n", (long long)i, acc[i],
                   dx_ref[i] + base[i]);
            return -1;
        }
    g_free(x), g_free(y), g_free(arg), g_free(dy), g_free(dx_ref), g_free(dx), g_free(base);
    g_free(acc);
    return 0;
}

DEF_TEST(maxpool)
{
    OK1(check_maxpool(2, 3, 12, 12, 3, 2, 1, false, false) == 0, "3x3/2 pad 1 (ResNet stem)");
    OK1(check_maxpool(1, 2, 11, 9, 3, 2, 1, false, true) == 0, "odd sizes, NaN and inf");
    OK1(check_maxpool(2, 2, 8, 7, 2, 2, 0, false, false) == 0, "2x2/2");
    OK1(check_maxpool(1, 3, 10, 11, 3, 2, 0, true, false) == 0, "ceil mode (partial windows)");
    OK1(check_maxpool(1, 1, 5, 5, 3, 1, 1, false, true) == 0, "3x3/1 overlapping windows");
    rt_cpu_set_num_threads(2);
    int rc = check_maxpool(3, 5, 13, 9, 3, 2, 1, false, true);
    rt_cpu_set_num_threads(1);
    OK1(rc == 0, "2 threads");
    /* hand-computed: one plane [[1, 5], [3, 2]], 2x2 window: 5 at index 1 */
    float x[4] = {1, 5, 3, 2}, y = 0, dx[4];
    int32_t a = -1;
    rt_cpu_maxpool2d_forward_f32(1, 1, 2, 2, 2, 2, 0, 1, 1, x, &y, &a);
    EXPECT_NEAR(5.0, y, 0.0);
    EXPECT_EQ_INT(1, a);
    float g = 7.0f;
    rt_cpu_maxpool2d_backward_f32(1, 1, 2, 2, 1, 1, &g, &a, dx, false);
    OK(dx[0] == 0 && dx[1] == 7 && dx[2] == 0 && dx[3] == 0);
    return 0;
}

/* ------------------------------------------------------------------ 16-bit rounding */

typedef struct bits_case {
    uint32_t in;
    uint16_t out;
    const char *what;
} bits_case;

static const bits_case bf16_cases[] = {
    {0x3f800000u, 0x3f80, "1.0"},
    {0x80000000u, 0x8000, "-0"},
    {0x3f808000u, 0x3f80, "tie, even below"},
    {0x3f818000u, 0x3f82, "tie, even above"},
    {0x3f808001u, 0x3f81, "just above a tie"},
    {0x3f807fffu, 0x3f80, "just below a tie"},
    {0xbf818000u, 0xbf82, "negative tie"},
    {0x7f800000u, 0x7f80, "+inf"},
    {0xff800000u, 0xff80, "-inf"},
    {0x7f7fffffu, 0x7f80, "FLT_MAX rounds to inf"},
    {0x7f7f7fffu, 0x7f7f, "largest value that stays finite"},
    {0x7f7f8000u, 0x7f80, "tie at the top rounds to even = inf"},
    {0x00000001u, 0x0000, "smallest f32 subnormal"},
    {0x00008000u, 0x0000, "subnormal tie to even (0)"},
    {0x00018000u, 0x0002, "subnormal tie to even (2)"},
    {0x00010000u, 0x0001, "bf16 subnormal, exact"},
    {0x807fffffu, 0x8080, "largest subnormal rounds to -min normal"},
};

static const bits_case f16_cases[] = {
    {0x3f800000u, 0x3c00, "1.0"},
    {0x80000000u, 0x8000, "-0"},
    {0x477fe000u, 0x7bff, "65504 = f16 max"},
    {0x477fefffu, 0x7bff, "just below 65520"},
    {0x477ff000u, 0x7c00, "65520 overflows to inf"},
    {0x49742400u, 0x7c00, "1e6 overflows"},
    {0xc9742400u, 0xfc00, "-1e6 overflows to -inf"},
    {0x7f800000u, 0x7c00, "+inf"},
    {0xff800000u, 0xfc00, "-inf"},
    {0x38800000u, 0x0400, "2^-14, the smallest normal"},
    {0x33800000u, 0x0001, "2^-24, the smallest subnormal"},
    {0x33000000u, 0x0000, "2^-25: tie to even (0)"},
    {0x33000001u, 0x0001, "just above 2^-25"},
    {0x33c00000u, 0x0002, "3 * 2^-25: tie to even (2)"},
    {0x34200000u, 0x0002, "5 * 2^-25: tie to even (2)"},
    {0x34400000u, 0x0003, "3 * 2^-24, exact"},
    {0x387fc000u, 0x03ff, "largest subnormal"},
    {0x387fe000u, 0x0400, "tie between largest subnormal and min normal: even"},
    {0x3f801000u, 0x3c00, "1 + 2^-11: tie to even"},
    {0x3f803000u, 0x3c02, "1 + 3 * 2^-11: tie to even"},
    {0x3f801001u, 0x3c01, "just above a tie"},
    {0x00000001u, 0x0000, "f32 subnormal"},
    {0x32ffffffu, 0x0000, "just below 2^-25"},
    {0xb3800000u, 0x8001, "-2^-24"},
};

static int check_bits(const bits_case *cases, size_t n, bool f16)
{
    for (size_t i = 0; i < n; i++) {
        float x = float_of(cases[i].in), r = x;
        uint16_t h = 0;
        if (f16) {
            rt_cpu_f32_to_f16(&x, &h, 1);
            rt_cpu_round_f16(&r, 1);
        } else {
            rt_cpu_f32_to_bf16(&x, &h, 1);
            rt_cpu_round_bf16(&r, 1);
        }
        float back = 0;
        if (f16)
            rt_cpu_f16_to_f32(&h, &back, 1);
        else
            rt_cpu_bf16_to_f32(&h, &back, 1);
        RT_TEST_REPORT(h == cases[i].out && bits_of(r) == bits_of(back),
                       "%s %s: 0x%08x -> 0x%04x (expected 0x%04x), round = 0x%08x (widened 0x%08x)",
                       f16 ? "f16" : "bf16", cases[i].what, cases[i].in, h, cases[i].out,
                       bits_of(r), bits_of(back));
        if (h != cases[i].out || bits_of(r) != bits_of(back))
            return -1;
    }
    return 0;
}

DEF_TEST(round_special_values)
{
    OK(check_bits(bf16_cases, G_N_ELEMENTS(bf16_cases), false) == 0);
    OK(check_bits(f16_cases, G_N_ELEMENTS(f16_cases), true) == 0);
    /* NaNs stay NaN, including signalling ones whose payload sits in the dropped bits */
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu};
    for (size_t i = 0; i < G_N_ELEMENTS(nans); i++) {
        float x = float_of(nans[i]), rb = x, rh = x;
        uint16_t b, h;
        rt_cpu_f32_to_bf16(&x, &b, 1);
        rt_cpu_f32_to_f16(&x, &h, 1);
        rt_cpu_round_bf16(&rb, 1);
        rt_cpu_round_f16(&rh, 1);
        OK((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0);
        OK((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
        OK(isnan(rb) && isnan(rh));
        OK((b >> 15) == (nans[i] >> 31) && (h >> 15) == (nans[i] >> 31)); /* sign kept */
    }
    return 0;
}

/* Every 16-bit pattern: widening is exact, so narrowing it again gives the same pattern. */
DEF_TEST(round_trip_all_patterns)
{
    uint16_t *in = g_new(uint16_t, 65536), *out = g_new(uint16_t, 65536);
    float *f = g_new(float, 65536);
    for (int fmt = 0; fmt < 2; fmt++) {
        for (uint32_t i = 0; i < 65536; i++)
            in[i] = (uint16_t)i;
        if (fmt) {
            rt_cpu_f16_to_f32(in, f, 65536);
            rt_cpu_f32_to_f16(f, out, 65536);
        } else {
            rt_cpu_bf16_to_f32(in, f, 65536);
            rt_cpu_f32_to_bf16(f, out, 65536);
        }
        uint32_t bad = 65536;
        for (uint32_t i = 0; i < 65536 && bad == 65536; i++) {
            bool nan = fmt ? ((i & 0x7c00) == 0x7c00 && (i & 0x3ff)) : ((i & 0x7f80) == 0x7f80 && (i & 0x7f));
            if (nan ? !isnan(f[i]) : (out[i] != in[i]))
                bad = i;
            /* widening must also be the exact value: compare with ldexp arithmetic */
            if (!nan && bad == 65536) {
                double v;
                if (fmt) {
                    int e = (int)((i >> 10) & 0x1f), m = (int)(i & 0x3ff);
                    v = e == 0x1f ? INFINITY : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
                } else {
                    int e = (int)((i >> 7) & 0xff), m = (int)(i & 0x7f);
                    v = e == 0xff ? INFINITY : e ? ldexp(128 + m, e - 134) : ldexp(m, -133);
                }
                if (i & (fmt ? 0x8000u : 0x8000u))
                    v = -v;
                if ((double)f[i] != v)
                    bad = i;
            }
        }
        RT_TEST_REPORT(bad == 65536, "%s: all 65536 patterns round-trip exactly (first bad 0x%04x)",
                       fmt ? "f16" : "bf16", bad);
        if (bad != 65536)
            return -1;
    }
    g_free(in), g_free(out), g_free(f);
    return 0;
}

/* Random f32 values against a reference that picks the nearer of the two neighbouring
 * 16-bit values in double arithmetic (ties to the even one). */
static uint16_t ref_round(float x, bool f16)
{
    /* the two candidates: truncation toward zero and the next value away from zero */
    double ax = fabs((double)x);
    int sign = signbit(x) ? 1 : 0;
    int mant_bits = f16 ? 10 : 7, min_exp = f16 ? -14 : -126, bias = f16 ? 15 : 127;
    int e;
    frexp(ax, &e); /* ax = f * 2^e, f in [0.5, 1) */
    int exp2 = e - 1; /* ax in [2^exp2, 2^(exp2+1)) */
    if (exp2 < min_exp)
        exp2 = min_exp; /* subnormal range: fixed quantum */
    double quantum = ldexp(1.0, exp2 - mant_bits);
    double lo = floor(ax / quantum) * quantum, hi = lo + quantum;
    double pick;
    if (ax - lo < hi - ax)
        pick = lo;
    else if (ax - lo > hi - ax)
        pick = hi;
    else
        pick = fmod(lo / quantum, 2.0) == 0.0 ? lo : hi;
    double max_finite = f16 ? 65504.0 : ldexp(2.0 - ldexp(1.0, -7), 127);
    uint16_t mag;
    if (pick > max_finite) {
        mag = f16 ? 0x7c00 : 0x7f80;
    } else if (pick < ldexp(1.0, min_exp)) {
        mag = (uint16_t)(pick / ldexp(1.0, min_exp - mant_bits));
    } else {
        int pe;
        double fr = frexp(pick, &pe); /* pick = fr * 2^pe */
        int biased = pe - 1 + bias;
        uint16_t m = (uint16_t)((fr * 2.0 - 1.0) * (double)(1 << mant_bits));
        mag = (uint16_t)((biased << mant_bits) | m);
    }
    return (uint16_t)((sign << 15) | mag);
}

DEF_TEST(round_random_values)
{
    enum { N = 200000 };
    float *x = g_new(float, N);
    uint16_t *b = g_new(uint16_t, N), *h = g_new(uint16_t, N);
    for (int i = 0; i < N; i++) {
        /* random bit patterns over the whole finite range, and dense near f16's range */
        uint32_t u = (uint32_t)rng_next();
        if (i % 2)
            u = (u & 0x807fffffu) | ((uint32_t)(96 + rng_next() % 48) << 23);
        if ((u & 0x7f800000u) == 0x7f800000u)
            u &= 0xbfffffffu;
        x[i] = float_of(u);
    }
    rt_cpu_f32_to_bf16(x, b, N);
    rt_cpu_f32_to_f16(x, h, N);
    int bad_b = -1, bad_h = -1;
    for (int i = 0; i < N; i++) {
        if (bad_b < 0 && b[i] != ref_round(x[i], false))
            bad_b = i;
        if (bad_h < 0 && h[i] != ref_round(x[i], true))
            bad_h = i;
    }
    if (bad_b >= 0)
        printf("# bf16 of 0x%08x: 0x%04x, reference 0x%04x\n", bits_of(x[bad_b]), b[bad_b],
               ref_round(x[bad_b], false));
    if (bad_h >= 0)
        printf("# f16 of 0x%08x: 0x%04x, reference 0x%04x\n", bits_of(x[bad_h]), h[bad_h],
               ref_round(x[bad_h], true));
    OK1(bad_b < 0, "bf16 matches the double reference on 200000 values");
    OK1(bad_h < 0, "f16 matches the double reference on 200000 values");
    /* in-place rounding equals narrowing then widening */
    float *r = copy_floats(x, N), *w = g_new(float, N);
    rt_cpu_round_bf16(r, N);
    rt_cpu_bf16_to_f32(b, w, N);
    OK1(memcmp(r, w, N * sizeof *r) == 0, "round_bf16 = bf16_to_f32(f32_to_bf16)");
    memcpy(r, x, N * sizeof *r);
    rt_cpu_round_f16(r, N);
    rt_cpu_f16_to_f32(h, w, N);
    OK1(memcmp(r, w, N * sizeof *r) == 0, "round_f16 = f16_to_f32(f32_to_f16)");
    /* odd lengths and unaligned starts (vector loops and their tails): only [1, len] changes */
    for (size_t len = 0; len < 40; len++) {
        float buf[48];
        memcpy(buf, x + 3, sizeof buf);
        rt_cpu_round_bf16(buf + 1, len);
        for (size_t i = 0; i < 48; i++) {
            float want = x[3 + i];
            if (i >= 1 && i <= len)
                rt_cpu_bf16_to_f32(&b[3 + i], &want, 1);
            if (bits_of(buf[i]) != bits_of(want)) {
                printf("# round_bf16 length %zu, element %zu\n", len, i);
                OK(0);
            }
        }
        memcpy(buf, x + 3, sizeof buf);
        rt_cpu_round_f16(buf + 1, len);
        for (size_t i = 0; i < 48; i++) {
            float want = x[3 + i];
            if (i >= 1 && i <= len)
                rt_cpu_f16_to_f32(&h[3 + i], &want, 1);
            if (bits_of(buf[i]) != bits_of(want)) {
                printf("# round_f16 length %zu, element %zu\n", len, i);
                OK(0);
            }
        }
    }
    OK1(1, "rounding touches exactly the given range, for lengths 0..39");
    g_free(x), g_free(b), g_free(h), g_free(r), g_free(w);
    return 0;
}

/* ------------------------------------------------------------------ 1 vs 2 threads */

/* |a - b| within twice the rounding bound of each (both are within it of the exact value) */
static int64_t first_apart(const float *a, const float *b, const double *mag, int64_t n,
                           double terms)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)a[i] - b[i]) <= 4.0 * (terms + 2.0) * U_F32 * mag[i] + 1e-30))
            return i;
    return -1;
}

#define EXPECT_SAME_RESULTS(a, b, mag, n, terms, what)                                       \
    do {                                                                                    \
        int64_t bad_ = first_apart((a), (b), (mag), (n), (terms));                          \
        if (bad_ >= 0)                                                                      \
            printf("# %s: element %lld is %.9g with 1 thread, %.9g with 2\n", (what),        \
                   (long long)bad_, (double)(a)[bad_], (double)(b)[bad_]);                  \
        OK1(bad_ < 0, (what));                                                              \
        printf("# %s: %s\n", (what),                                                        \
               memcmp((a), (b), (size_t)(n) * sizeof *(a)) ? "differs in rounding only"     \
                                                            : "bitwise equal");             \
    } while (0)

/* The kernels at shapes big enough to be split, with 1 and 2 threads. Our own splits (GEMM
 * tiles, im2col rows, pooling planes) never split a sum, and with AVX-512 OpenBLAS and oneDNN
 * give bitwise equal results too (printed); the check allows the rounding differences that
 * other kernels (AVX2 OpenBLAS, a thread-split oneDNN reduction) may bring. */
static int check_threads(conv_path path)
{
    const int64_t M = 301, N = 257, K = 190;
    float *A = random_floats(M * K), *B = random_floats(N * K);
    double *gmag = g_new(double, M * N), *gwant = g_new(double, M * N);
    gemm_ref(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, NULL, N, gwant, gmag);
    rt_conv2d_shape s = {.n = 2, .c_in = 16, .h = 20, .w = 18, .c_out = 32, .kh = 3, .kw = 3,
                         .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1, .dil_h = 1,
                         .dil_w = 1};
    OK(rt_cpu_conv2d_shape_init(&s));
    int64_t nx = x_len(&s), nw = w_len(&s), ny = y_len(&s);
    size_t ws = path == PATH_IM2COL ? cpu_conv_im2col_workspace_size(&s)
                                    : rt_cpu_conv2d_workspace_size(&s);
    void *work = g_malloc(ws ? ws : 1);
    float *x = random_floats(nx), *w = random_floats(nw), *dy = random_floats(ny);
    double *ymag = g_new0(double, ny), *dxmag = g_new0(double, nx), *dwmag = g_new0(double, nw);
    double *dbmag = g_new0(double, s.c_out);
    FOR_EACH_TAP(&s, {
        ymag[yi] += fabs((double)x[xi] * w[wi]);
        dxmag[xi] += fabs((double)dy[yi] * w[wi]);
        dwmag[wi] += fabs((double)dy[yi] * x[xi]);
    });
    for (int64_t i = 0; i < ny; i++)
        dbmag[i / (s.h_out * s.w_out) % s.c_out] += fabs(dy[i]);
    float *C[2], *out[2][4];
    for (int t = 0; t < 2; t++) {
        rt_cpu_set_num_threads(t + 1);
        C[t] = g_new(float, M * N);
        rt_cpu_gemm_f32(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, C[t], N);
        out[t][0] = g_new(float, ny);
        out[t][1] = g_new(float, nx);
        out[t][2] = g_new(float, nw);
        out[t][3] = g_new(float, s.c_out);
        conv_fwd(path, &s, x, w, NULL, out[t][0], work);
        conv_bwd_data(path, &s, dy, w, out[t][1], false, work);
        conv_bwd_weight(path, &s, x, dy, out[t][2], out[t][3], false, work);
    }
    rt_cpu_set_num_threads(1);
    int64_t hw = s.h_out * s.w_out;
    EXPECT_SAME_RESULTS(C[0], C[1], gmag, M * N, K, "gemm");
    EXPECT_SAME_RESULTS(out[0][0], out[1][0], ymag, ny, s.c_in * 9, "conv forward");
    EXPECT_SAME_RESULTS(out[0][1], out[1][1], dxmag, nx, s.c_out * 9, "conv backward data");
    EXPECT_SAME_RESULTS(out[0][2], out[1][2], dwmag, nw, s.n * hw, "conv backward weight");
    EXPECT_SAME_RESULTS(out[0][3], out[1][3], dbmag, s.c_out, s.n * hw, "conv bias grad");
    for (int t = 0; t < 2; t++) {
        g_free(C[t]);
        for (int i = 0; i < 4; i++)
            g_free(out[t][i]);
    }
    g_free(A), g_free(B), g_free(gmag), g_free(gwant), g_free(work), g_free(x), g_free(w);
    g_free(dy), g_free(ymag), g_free(dxmag), g_free(dwmag), g_free(dbmag);
    return 0;
}

DEF_TEST(threads_same_results)
{
    printf("# the public functions\n");
    if (check_threads(PATH_PUBLIC) != 0)
        return -1;
    printf("# im2col\n");
    return check_threads(PATH_IM2COL);
}

int main(void)
{
    rt_cpu_set_num_threads(1);
#ifdef CPU_CONV_WITH_DNNL
    /* oneDNN's JIT kernels read a few bytes past their own buffers, which memcheck reports
     * (and cannot attribute: the code has no symbols). Under valgrind the public functions
     * run im2col, which is ours; ASan builds test oneDNN. */
    bool test_dnnl = !RUNNING_ON_VALGRIND;
    if (!test_dnnl) {
        printf("# under valgrind: oneDNN is not tested\n");
        cpu_conv_set_dnnl(false);
    }
#endif
    RUN_TEST(threads);
    RUN_TEST(gemm);
    RUN_TEST(gemm_batched);
    RUN_TEST(conv_shape);
    RUN_TEST(conv_im2col);
#ifdef CPU_CONV_WITH_DNNL
    if (test_dnnl) {
        RUN_TEST(conv_dnnl_blocked);
        RUN_TEST(conv_dnnl_plain);
    }
#else
    printf("# oneDNN is not built in: only im2col is tested\n");
#endif
    RUN_TEST(conv_public);
    RUN_TEST(maxpool);
    RUN_TEST(round_special_values);
    RUN_TEST(round_trip_all_patterns);
    RUN_TEST(round_random_values);
    RUN_TEST(threads_same_results);
    END_TEST;
}
