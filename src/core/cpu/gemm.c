/* src/core/cpu/gemm.c: f32 GEMM through OpenBLAS, single and batched. */
#include "config.h"

#include <cblas.h>
#include <glib.h>
#include <limits.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

/* Threads: OpenBLAS always runs single-threaded, and we split the work over our own OpenMP
 * threads (by output tiles, or by matrices of a batch). One pool of threads then serves our
 * loops, the GEMMs and oneDNN: two pools that spin-wait in turn on the same cores (OpenBLAS's
 * pthreads and OpenMP's) slow each other down, badly on a busy machine. Splitting the output
 * never splits a sum, so the result does not depend on the thread count.
 *
 * cpu_gemm_set_blas_threads (benchmarks only) switches back to OpenBLAS's own threading, to
 * compare the two. */
static bool use_blas_threads;

void cpu_gemm_set_blas_threads(bool on)
{
    use_blas_threads = on;
}

/* Below this many multiply-adds a product is not worth a fork/join. */
#define SPLIT_MIN_MACS (64.0 * 64.0 * 64.0)

static bool fits_blasint(int64_t v)
{
    return v >= 0 && v <= INT_MAX;
}

/* C = beta * C for the degenerate products (K = 0 or alpha = 0) that BLAS need not touch. */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        float *row = C + i * ldc;
        if (beta == 0.0f)
            memset(row, 0, (size_t)N * sizeof *row);
        else if (beta != 1.0f)
            for (int64_t j = 0; j < N; j++)
                row[j] *= beta;
    }
}

void cpu_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
               int64_t ldc)
{
    if (M == 0 || N == 0)
        return;
    if (K == 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    if (beta == 0.0f)
        scale_c(M, N, 0.0f, C, ldc); /* BLAS may compute 0 * C: NaN in C must not survive */
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N, (blasint)K, alpha, A,
                (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

static bool gemm_args_ok(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                         int64_t lda, int64_t ldb, int64_t ldc)
{
    g_return_val_if_fail(fits_blasint(M) && fits_blasint(N) && fits_blasint(K), false);
    g_return_val_if_fail(lda >= (trans_a ? (M > 1 ? M : 1) : (K > 1 ? K : 1)), false);
    g_return_val_if_fail(ldb >= (trans_b ? (K > 1 ? K : 1) : (N > 1 ? N : 1)), false);
    g_return_val_if_fail(ldc >= (N > 1 ? N : 1), false);
    g_return_val_if_fail(fits_blasint(lda) && fits_blasint(ldb) && fits_blasint(ldc), false);
    return true;
}

/* C = alpha op(A) op(B) + beta C on `threads` threads: thread t takes a slab of C's columns
 * (in multiples of 16, a cache line) or, when C is tall and narrow, of its rows. */
static void gemm_split(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc, int threads)
{
    const bool by_cols = N >= 16 * threads && (N >= M || M < 4 * threads);
    const int64_t unit = by_cols ? 16 : 4, units = ((by_cols ? N : M) + unit - 1) / unit;
    if (threads > units)
        threads = (int)units;
    if (threads <= 1 || (double)M * (double)N * (double)K < SPLIT_MIN_MACS) {
        cpu_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    CPU_OMP("omp parallel num_threads(threads)")
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int64_t u0, u1;
        cpu_split(units, threads, t, &u0, &u1);
        if (by_cols) {
            int64_t j0 = u0 * unit, j1 = u1 * unit < N ? u1 * unit : N;
            if (j1 > j0)
                cpu_sgemm(ta, tb, M, j1 - j0, K, alpha, A, lda, tb ? B + j0 * ldb : B + j0, ldb,
                          beta, C + j0, ldc);
        } else {
            int64_t i0 = u0 * unit, i1 = u1 * unit < M ? u1 * unit : M;
            if (i1 > i0)
                cpu_sgemm(ta, tb, i1 - i0, N, K, alpha, ta ? A + i0 : A + i0 * lda, lda, B, ldb,
                          beta, C + i0 * ldc, ldc);
        }
    }
}

void cpu_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    int threads = cpu_threads();
    if (use_blas_threads) {
        cpu_blas_threads_set(threads);
        cpu_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        cpu_blas_threads_set(1);
        return;
    }
    gemm_split(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads);
}

void rt_cpu_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                     int64_t ldc)
{
    if (!gemm_args_ok(trans_a, trans_b, M, N, K, lda, ldb, ldc))
        return;
    cpu_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void rt_cpu_gemm_batched_f32(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                             int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                             const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                             int64_t ldc, int64_t stride_c)
{
    if (!gemm_args_ok(trans_a, trans_b, M, N, K, lda, ldb, ldc))
        return;
    g_return_if_fail(batch >= 0);
    int threads = cpu_threads();
    /* whole matrices per thread when the batch divides evenly or is long enough for the
     * imbalance not to matter; stride_c = 0 sums the products into one C: sequential */
    bool by_matrix = threads > 1 && stride_c != 0 && !use_blas_threads &&
                     (batch % threads == 0 || batch >= 4 * threads);
    if (by_matrix) {
        CPU_OMP("omp parallel for num_threads(threads) schedule(static)")
        for (int64_t i = 0; i < batch; i++)
            cpu_sgemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b,
                      ldb, beta, C + i * stride_c, ldc);
        return;
    }
    for (int64_t i = 0; i < batch; i++)
        cpu_gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb,
                 beta, C + i * stride_c, ldc);
}
