/* bench/bench-kernels.c: the CPU kernels' speed at ACT's shapes, against this machine's
 * measured f32 peak.
 *
 *   bench/bench-kernels [--threads N] [--reps R] [--filter TEXT] [--impl NAME] [--tsv FILE]
 *
 * It first measures the peak with a loop of independent FMAs (AVX2 and, where the CPU has
 * it, AVX-512; one core and N threads), then times each GEMM and convolution R times after
 * one warm-up run and prints the median time, the GFLOP/s it means, the percentage of the
 * N-thread peak of the widest ISA, the GFLOP/s of the fastest run, and the spread
 * (max - min) / median as a noise gauge. The implementations of one shape run interleaved,
 * so that they see the same load. --tsv writes the same numbers for
 * bench/compare-torch.sh. Built by `make`, never run by `make check`. */
#include "config.h"

#include <glib.h>
#include <errno.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/cpu/conv-internal.h"
#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

static int opt_threads = 0, opt_reps = 5;
static const char *opt_filter = NULL, *opt_impl = NULL;
static FILE *tsv = NULL;
static double peak_gflops = 0; /* the N-thread peak of the widest ISA */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct timing {
    double median, min, max;
} timing;

static timing summarize(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    timing r = {n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0], t[n - 1]};
    return r;
}

/* ------------------------------------------------------------------ peak */

/* 16 independent chains, spelled out so that they live in registers: enough to cover FMA
 * latency (4 cycles) on two FMA ports. */
#define CHAINS 16
#define FMA_LOOP(T, SET1, FMADD, ADD)                                                         \
    T m = SET1(0.999999f), b = SET1(1e-6f);                                                  \
    T a0 = SET1(0.f), a1 = SET1(1.f), a2 = SET1(2.f), a3 = SET1(3.f), a4 = SET1(4.f);        \
    T a5 = SET1(5.f), a6 = SET1(6.f), a7 = SET1(7.f), a8 = SET1(8.f), a9 = SET1(9.f);        \
    T a10 = SET1(10.f), a11 = SET1(11.f), a12 = SET1(12.f), a13 = SET1(13.f);                \
    T a14 = SET1(14.f), a15 = SET1(15.f);                                                    \
    for (int64_t it = 0; it < iters; it++) {                                                 \
        a0 = FMADD(a0, m, b), a1 = FMADD(a1, m, b), a2 = FMADD(a2, m, b);                    \
        a3 = FMADD(a3, m, b), a4 = FMADD(a4, m, b), a5 = FMADD(a5, m, b);                    \
        a6 = FMADD(a6, m, b), a7 = FMADD(a7, m, b), a8 = FMADD(a8, m, b);                    \
        a9 = FMADD(a9, m, b), a10 = FMADD(a10, m, b), a11 = FMADD(a11, m, b);                \
        a12 = FMADD(a12, m, b), a13 = FMADD(a13, m, b), a14 = FMADD(a14, m, b);              \
        a15 = FMADD(a15, m, b);                                                              \
    }                                                                                        \
    T s = ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))),             \
              ADD(ADD(ADD(a8, a9), ADD(a10, a11)), ADD(ADD(a12, a13), ADD(a14, a15))))

__attribute__((target("avx512f"))) static float fma_avx512(int64_t iters)
{
    FMA_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static float fma_avx2(int64_t iters)
{
    FMA_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

static volatile float sink;

/* GFLOP/s of `threads` threads each running the FMA loop for about 50 ms: the best of 15
 * runs, since a peak is a capability and the machine may be busy; *median_out gets the
 * median, a measure of how busy. */
static double measure_peak(bool avx512, int threads, double *median_out)
{
    const int64_t iters = avx512 ? 2000000 : 4000000;
    const double flops = (double)iters * CHAINS * (avx512 ? 16 : 8) * 2.0 * threads;
    double t[15];
    for (int r = 0; r < 15; r++) {
        double t0 = now();
        CPU_OMP("omp parallel num_threads(threads)")
        {
            float v = avx512 ? fma_avx512(iters) : fma_avx2(iters);
            sink = v;
        }
        t[r] = now() - t0;
    }
    timing s = summarize(t, 15);
    *median_out = flops / s.median * 1e-9;
    return flops / s.min * 1e-9;
}

/* ------------------------------------------------------------------ reporting */

static bool wanted(const char *key, const char *impl)
{
    if (opt_filter && !strstr(key, opt_filter))
        return false;
    if (opt_impl && strcmp(opt_impl, impl) != 0)
        return false;
    return true;
}

/* Runs implementation `impl` (an index into the case's names) once. */
typedef void (*bench_fn)(void *ctx, int impl);

#define MAX_IMPLS 4

/* Times the wanted implementations of one case. The repetitions are interleaved (A B C A B
 * C ...) so that a change in the machine's load hits them all alike. */
static void run_case(const char *key, double flops, const char *const *names, int n_impls,
                     bench_fn fn, void *ctx)
{
    int use[MAX_IMPLS], n_use = 0;
    for (int i = 0; i < n_impls; i++)
        if (wanted(key, names[i]))
            use[n_use++] = i;
    if (n_use == 0)
        return;
    for (int u = 0; u < n_use; u++)
        fn(ctx, use[u]); /* warm-up: plans, page faults, caches */
    double *t = g_new(double, (size_t)(opt_reps * n_use));
    for (int r = 0; r < opt_reps; r++)
        for (int u = 0; u < n_use; u++) {
            double t0 = now();
            fn(ctx, use[u]);
            t[u * opt_reps + r] = now() - t0;
        }
    for (int u = 0; u < n_use; u++) {
        timing s = summarize(t + u * opt_reps, opt_reps);
        double gflops = flops / s.median * 1e-9, best = flops / s.min * 1e-9;
        printf("%-46s %-12s %9.2f %8.1f %6.1f%% %8.1f %6.1f%%\n", key, names[use[u]],
               s.median * 1e3, gflops, 100.0 * gflops / peak_gflops, best,
               100.0 * (s.max - s.min) / s.median);
        if (tsv)
            fprintf(tsv, "%s\t%s\t%.4f\t%.2f\t%.2f\n", key, names[use[u]], s.median * 1e3,
                    gflops, best);
    }
    fflush(stdout);
    if (tsv)
        fflush(tsv);
    g_free(t);
}

static float *random_floats(size_t n)
{
    float *p = g_malloc(n * sizeof *p);
    uint32_t x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)(x >> 8) * (1.0f / 16777216.0f) - 0.5f;
    }
    return p;
}

/* ------------------------------------------------------------------ GEMM */

typedef struct gemm_ctx {
    bool ta, tb;
    int64_t M, N, K, batch;
    const float *A, *B;
    float *C;
} gemm_ctx;

static const char *const gemm_impls[] = {"public", "blas-threads"};

/* impl 0: rt_cpu_gemm as the graph calls it (OpenBLAS single-threaded on each of our threads'
 * tiles); 1: the same call with OpenBLAS threading each product itself. */
static void gemm_run(void *p, int impl)
{
    gemm_ctx *g = p;
    int64_t lda = g->ta ? g->M : g->K, ldb = g->tb ? g->K : g->N;
    cpu_gemm_set_blas_threads(impl == 1);
    if (g->batch == 1)
        rt_cpu_gemm_f32(g->ta, g->tb, g->M, g->N, g->K, 1.0f, g->A, lda, g->B, ldb, 0.0f, g->C, g->N);
    else
        rt_cpu_gemm_batched_f32(g->ta, g->tb, g->batch, g->M, g->N, g->K, 1.0f, g->A, lda,
                                g->M * g->K, g->B, ldb, g->K * g->N, 0.0f, g->C, g->N, g->M * g->N);
    cpu_gemm_set_blas_threads(false);
}

static void bench_gemm(const char *key, bool ta, bool tb, int64_t batch, int64_t M, int64_t N,
                       int64_t K)
{
    if (!wanted(key, gemm_impls[0]) && !wanted(key, gemm_impls[1]))
        return;
    gemm_ctx g = {ta, tb, M, N, K, batch, NULL, NULL, NULL};
    float *A = random_floats((size_t)(batch * M * K)), *B = random_floats((size_t)(batch * K * N));
    float *C = random_floats((size_t)(batch * M * N));
    g.A = A, g.B = B, g.C = C;
    run_case(key, 2.0 * batch * M * N * K, gemm_impls, 2, gemm_run, &g);
    g_free(A), g_free(B), g_free(C);
}

static void bench_transformer(void)
{
    const int64_t tokens = 8 * 302; /* batch 8, 302 tokens */
    const struct {
        int64_t in, out;
    } lin[] = {{512, 512}, {512, 3200}, {3200, 512}};
    char key[128];
    for (size_t i = 0; i < G_N_ELEMENTS(lin); i++) {
        int64_t in = lin[i].in, out = lin[i].out;
        /* y[M, out] = x[M, in] W[out, in]^T; dx = dy W; dW = dy^T x */
        snprintf(key, sizeof key, "linear %lld->%lld fwd (M=%lld)", (long long)in, (long long)out,
                 (long long)tokens);
        bench_gemm(key, false, true, 1, tokens, out, in);
        snprintf(key, sizeof key, "linear %lld->%lld bwd-data", (long long)in, (long long)out);
        bench_gemm(key, false, false, 1, tokens, in, out);
        snprintf(key, sizeof key, "linear %lld->%lld bwd-weight", (long long)in, (long long)out);
        bench_gemm(key, true, false, 1, out, in, tokens);
    }
    /* attention per head (8 heads of 64, batch 8): scores = Q K^T, out = P V */
    bench_gemm("attention QK^T 64x(302x302x64)", false, true, 64, 302, 302, 64);
    bench_gemm("attention PV 64x(302x64x302)", false, false, 64, 302, 64, 302);
}

/* ------------------------------------------------------------------ convolution */

typedef struct conv_ctx {
    rt_conv2d_shape s;
    int pass; /* 0 fwd, 1 bwd data, 2 bwd weight */
    const char *key;
    float *x, *w, *b, *y, *dx, *dw, *db;
    void *ws;
} conv_ctx;

static const char *const conv_impls[] = {"public", "im2col", "dnnl-blocked", "dnnl-plain"};

static void conv_run(void *p, int impl)
{
    conv_ctx *c = p;
    if (impl == 1) {
        if (c->pass == 0)
            cpu_conv_im2col_forward(&c->s, c->x, c->w, c->b, c->y, c->ws);
        else if (c->pass == 1)
            cpu_conv_im2col_backward_data(&c->s, c->y, c->w, c->dx, false, c->ws);
        else
            cpu_conv_im2col_backward_weight(&c->s, c->x, c->y, c->dw, c->db, false, c->ws);
        return;
    }
#ifdef CPU_CONV_WITH_DNNL
    if (impl >= 2) {
        cpu_conv_dnnl_set_formats(impl == 2 ? CPU_DNNL_FORMATS_BLOCKED : CPU_DNNL_FORMATS_PLAIN);
        bool ok;
        if (c->pass == 0)
            ok = cpu_conv_dnnl_forward(&c->s, c->x, c->w, c->b, c->y, c->ws);
        else if (c->pass == 1)
            ok = cpu_conv_dnnl_backward_data(&c->s, c->y, c->w, c->dx, false, c->ws);
        else
            ok = cpu_conv_dnnl_backward_weight(&c->s, c->x, c->y, c->dw, c->db, false, c->ws);
        cpu_conv_dnnl_set_formats(CPU_DNNL_FORMATS_DEFAULT);
        if (!ok) {
            fprintf(stderr, "bench-kernels: oneDNN declined %s\n", c->key);
            exit(1);
        }
        return;
    }
#endif
    if (c->pass == 0)
        rt_cpu_conv2d_forward_f32(&c->s, c->x, c->w, c->b, c->y, c->ws);
    else if (c->pass == 1)
        rt_cpu_conv2d_backward_data_f32(&c->s, c->y, c->w, c->dx, false, c->ws);
    else
        rt_cpu_conv2d_backward_weight_f32(&c->s, c->x, c->y, c->dw, c->db, false, c->ws);
}

#ifdef CPU_CONV_WITH_DNNL
static const int n_conv_impls = 4;
#else
static const int n_conv_impls = 2;
#endif

static void bench_conv(const char *name, int64_t n, int64_t c_in, int64_t h, int64_t w,
                       int64_t c_out, int64_t k, int64_t stride, int64_t pad)
{
    conv_ctx c;
    memset(&c, 0, sizeof c);
    c.s = (rt_conv2d_shape){.n = n, .c_in = c_in, .h = h, .w = w, .c_out = c_out, .kh = k,
                            .kw = k, .stride_h = stride, .stride_w = stride, .pad_h = pad,
                            .pad_w = pad, .dil_h = 1, .dil_w = 1};
    if (!rt_cpu_conv2d_shape_init(&c.s))
        return;
    const char *pass_names[3] = {"fwd", "bwd-data", "bwd-weight"};
    char keys[3][160];
    bool any = false;
    for (int pass = 0; pass < 3; pass++) {
        snprintf(keys[pass], sizeof keys[pass], "%s %lldx%lld %lld->%lld k%lld/%lld %s", name,
                 (long long)h, (long long)w, (long long)c_in, (long long)c_out, (long long)k,
                 (long long)stride, pass_names[pass]);
        for (int i = 0; i < n_conv_impls; i++)
            any = any || wanted(keys[pass], conv_impls[i]);
    }
    if (!any)
        return;
    size_t nx = (size_t)(n * c_in * h * w), nw = (size_t)(c_out * c_in * k * k);
    size_t ny = (size_t)(n * c_out * c.s.h_out * c.s.w_out);
    c.x = random_floats(nx), c.w = random_floats(nw), c.b = random_floats((size_t)c_out);
    c.y = random_floats(ny), c.dx = random_floats(nx), c.dw = random_floats(nw);
    c.db = random_floats((size_t)c_out);
    size_t ws = cpu_conv_im2col_workspace_size(&c.s);
#ifdef CPU_CONV_WITH_DNNL
    for (int policy = 0; policy <= CPU_DNNL_FORMATS_PLAIN; policy++) {
        cpu_conv_dnnl_set_formats(policy);
        size_t d = cpu_conv_dnnl_workspace_size(&c.s);
        ws = d > ws ? d : ws;
    }
    cpu_conv_dnnl_set_formats(CPU_DNNL_FORMATS_DEFAULT);
#endif
    size_t pub = rt_cpu_conv2d_workspace_size(&c.s);
    ws = pub > ws ? pub : ws;
    c.ws = g_malloc(ws ? ws : 1);
    double flops = 2.0 * (double)n * (double)c_out * (double)(c.s.h_out * c.s.w_out) *
                   (double)(c_in * k * k);
    for (int pass = 0; pass < 3; pass++) {
        c.pass = pass;
        c.key = keys[pass];
        run_case(keys[pass], flops, conv_impls, n_conv_impls, conv_run, &c);
    }
    g_free(c.x), g_free(c.w), g_free(c.b), g_free(c.y), g_free(c.dx), g_free(c.dw), g_free(c.db);
    g_free(c.ws);
}

/* Every distinct convolution of ResNet-18 for an h x w image, batch 8. */
static void bench_resnet18(const char *tag, int64_t h, int64_t w)
{
    const int64_t n = 8;
    char name[64];
    snprintf(name, sizeof name, "%s stem", tag);
    bench_conv(name, n, 3, h, w, 64, 7, 2, 3);
    int64_t sh = (h + 6 - 7) / 2 + 1, sw = (w + 6 - 7) / 2 + 1; /* stem output */
    sh = (sh + 2 - 3) / 2 + 1, sw = (sw + 2 - 3) / 2 + 1;       /* 3x3/2 max pool */
    snprintf(name, sizeof name, "%s layer1", tag);
    bench_conv(name, n, 64, sh, sw, 64, 3, 1, 1);
    int64_t c = 64;
    for (int layer = 2; layer <= 4; layer++) {
        int64_t oh = (sh + 2 - 3) / 2 + 1, ow = (sw + 2 - 3) / 2 + 1;
        snprintf(name, sizeof name, "%s layer%d.0", tag, layer);
        bench_conv(name, n, c, sh, sw, 2 * c, 3, 2, 1);
        snprintf(name, sizeof name, "%s layer%d.ds", tag, layer);
        bench_conv(name, n, c, sh, sw, 2 * c, 1, 2, 0);
        snprintf(name, sizeof name, "%s layer%d", tag, layer);
        bench_conv(name, n, 2 * c, oh, ow, 2 * c, 3, 1, 1);
        sh = oh, sw = ow, c *= 2;
    }
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fprintf(stderr, "usage: bench-kernels [--threads N] [--reps R] [--filter TEXT] "
                    "[--impl public|blas-threads|im2col|dnnl-blocked|dnnl-plain] [--tsv FILE]\n");
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads") && v)
            opt_threads = atoi(v), i++;
        else if (!strcmp(a, "--reps") && v)
            opt_reps = atoi(v), i++;
        else if (!strcmp(a, "--filter") && v)
            opt_filter = v, i++;
        else if (!strcmp(a, "--impl") && v)
            opt_impl = v, i++;
        else if (!strcmp(a, "--tsv") && v) {
            tsv = fopen(v, "w");
            if (!tsv) {
                fprintf(stderr, "bench-kernels: cannot write %s: %s\n", v, g_strerror(errno));
                return 1;
            }
            i++;
        } else {
            usage();
            return 2;
        }
    }
    if (opt_reps < 1 || opt_threads < 0) {
        usage();
        return 2;
    }
    rt_cpu_set_num_threads(opt_threads);
    int threads = cpu_threads(); /* 1 when built without OpenMP */
    bool has512 = __builtin_cpu_supports("avx512f"), has2 = __builtin_cpu_supports("avx2") &&
                                                            __builtin_cpu_supports("fma");
    printf("# robotrain CPU kernels benchmark: %d thread(s), median of %d runs after a warm-up\n",
           threads, opt_reps);
    double med1, medn;
    const char *isa = has512 ? "AVX-512" : "AVX2";
    if (has2) {
        double p1 = measure_peak(false, 1, &med1), pn = measure_peak(false, threads, &medn);
        printf("# peak f32 FMA AVX2:    %7.1f GFLOP/s on 1 core, %7.1f on %d threads "
               "(medians %.1f, %.1f)\n",
               p1, pn, threads, med1, medn);
        peak_gflops = p1 * threads;
    }
    if (has512) {
        double p1 = measure_peak(true, 1, &med1), pn = measure_peak(true, threads, &medn);
        printf("# peak f32 FMA AVX-512: %7.1f GFLOP/s on 1 core, %7.1f on %d threads "
               "(medians %.1f, %.1f)\n",
               p1, pn, threads, med1, medn);
        peak_gflops = p1 * threads;
    }
    /* the 1-core figure is the steadier one on a shared machine: the machine peak is taken
     * as threads x that (cores that other processes keep busy do not lower it) */
    printf("# %%peak is against %d x the 1-core %s peak = %.1f GFLOP/s\n", threads, isa,
           peak_gflops);
    if (tsv)
        fprintf(tsv, "#peak\t%s\t%d\t%.2f\n", isa, threads, peak_gflops);
    printf("%-46s %-12s %9s %8s %7s %8s %7s\n", "shape (batch 8)", "impl", "median ms",
           "GFLOP/s", "%peak", "best", "spread");
    bench_transformer();
    bench_resnet18("r18@96", 96, 96);
    bench_resnet18("r18@480", 480, 640);
    if (tsv)
        fclose(tsv);
    return 0;
}
