/* src/core/cpu/gemm.c: f32 GEMM through OpenBLAS, single and batched. */
#include "config.h"

#include <cblas.h>
#include <glib.h>
#include <limits.h>
#include <string.h>

#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

/* Below this many multiply-adds per matrix, a batch is split over our threads with a
 * single-threaded BLAS inside: OpenBLAS's own threading does not pay for small matrices
 * (attention's per-head products), and one level of threads never oversubscribes. */
#define BATCH_SPLIT_MAX_MACS (256.0 * 256.0 * 256.0)

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

void rt_cpu_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                     int64_t ldc)
{
    if (!gemm_args_ok(trans_a, trans_b, M, N, K, lda, ldb, ldc))
        return;
    cpu_threads(); /* BLAS thread count initialised */
    cpu_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
    double macs = (double)M * (double)N * (double)K;
    /* stride_c = 0 sums the products into one C (beta = 1): that must stay sequential */
    if (threads > 1 && batch >= threads && macs <= BATCH_SPLIT_MAX_MACS && stride_c != 0) {
        int saved = cpu_blas_threads_set(1);
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t i = 0; i < batch; i++)
            cpu_sgemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b,
                      ldb, beta, C + i * stride_c, ldc);
        cpu_blas_threads_set(saved);
        return;
    }
    for (int64_t i = 0; i < batch; i++)
        cpu_sgemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb,
                  beta, C + i * stride_c, ldc);
}
