/* plugins/backend-cuda/cuda-gemm.c: row-major GEMMs on cuBLASLt (see cuda-gemm.h).
 *
 * cuBLASLt is column-major. A row-major [R, C] matrix with leading dimension ld is the
 * column-major [C, R] matrix with the same ld, so C = op(A) op(B) is computed as
 * C^T = op(B)^T op(A)^T: cuBLASLt's first operand is our B, its second our A, m = N, n = M. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/tensor.h>

#include "cuda-error.h"
#include "cuda-gemm.h"

struct rt_cuda_gemm {
    rt_cuda_gemm_desc d;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t first, second, out; /* cuBLASLt's A (our B), B (our A), C = D */
    cublasLtMatmulAlgo_t algo;
    union {
        float f;
        double d;
    } alpha, beta;
};

static cudaDataType_t cuda_type(int dtype)
{
    switch (dtype) {
    case RT_F64:
        return CUDA_R_64F;
    case RT_BF16:
        return CUDA_R_16BF;
    case RT_F16:
        return CUDA_R_16F;
    default:
        return CUDA_R_32F;
    }
}

/* The largest power of two (at most 256) dividing the address and every byte step from it. */
static uint32_t alignment_of(const void *p, int64_t s1, int64_t s2, size_t esize)
{
    uint64_t x = (uint64_t)(uintptr_t)p | (uint64_t)s1 * esize | (uint64_t)s2 * esize | 256u;
    return (uint32_t)(x & (~x + 1));
}

void rt_cuda_gemm_free(rt_cuda_gemm *g)
{
    if (!g)
        return;
    if (g->first)
        cublasLtMatrixLayoutDestroy(g->first);
    if (g->second)
        cublasLtMatrixLayoutDestroy(g->second);
    if (g->out)
        cublasLtMatrixLayoutDestroy(g->out);
    if (g->op)
        cublasLtMatmulDescDestroy(g->op);
    g_free(g);
}

static gboolean make_layout(cublasLtMatrixLayout_t *layout, cudaDataType_t type, int64_t rows, int64_t cols,
                            int64_t ld, int64_t batch, int64_t stride, const char *what, GError **error)
{
    if (!rt_cublas_check(cublasLtMatrixLayoutCreate(layout, type, (uint64_t)rows, (uint64_t)cols, ld), error,
                         "%s: cublasLtMatrixLayoutCreate", what))
        return FALSE;
    if (batch == 1)
        return TRUE;
    int32_t count = (int32_t)batch;
    return rt_cublas_check(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                            &count, sizeof count),
                           error, "%s: setting the batch count", what) &&
           rt_cublas_check(cublasLtMatrixLayoutSetAttribute(
                               *layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                           error, "%s: setting the batch stride", what);
}

static gboolean check_desc(const rt_cuda_gemm_desc *d, const char *what, GError **error)
{
    gboolean types = (d->c_dtype == RT_F32 &&
                      (d->ab_dtype == RT_F32 || d->ab_dtype == RT_BF16 || d->ab_dtype == RT_F16)) ||
                     (d->c_dtype == RT_F64 && d->ab_dtype == RT_F64);
    if (!types || d->M < 1 || d->N < 1 || d->K < 1 || d->batch < 1 || d->batch > INT32_MAX ||
        d->lda < (d->ta ? d->M : d->K) || d->ldb < (d->tb ? d->K : d->N) || d->ldc < d->N) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: a GEMM of %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                    " (batch %" G_GINT64_FORMAT ", leading dimensions %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                    ", %" G_GINT64_FORMAT ", dtypes %d/%d) is not one cuBLASLt "
                    "can run: this is a bug, please report it",
                    what, d->M, d->N, d->K, d->batch, d->lda, d->ldb, d->ldc, d->ab_dtype, d->c_dtype);
        return FALSE;
    }
    return TRUE;
}

rt_cuda_gemm *rt_cuda_gemm_plan(rt_backend_device *dev, const rt_cuda_gemm_desc *d, const void *a,
                                const void *b, const void *c, const char *what, GError **error)
{
    if (!check_desc(d, what, error))
        return NULL;
    rt_cuda_gemm *g = g_new0(rt_cuda_gemm, 1);
    g->d = *d;
    cublasLtMatmulPreference_t pref = NULL;
    gboolean f64 = d->c_dtype == RT_F64;
    cublasComputeType_t compute = f64                                ? CUBLAS_COMPUTE_64F
                                  : d->tf32 && d->ab_dtype == RT_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                     : CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = f64 ? CUDA_R_64F : CUDA_R_32F;
    cudaDataType_t ab = cuda_type(d->ab_dtype), ct = cuda_type(d->c_dtype);
    size_t ab_size = rt_dtype_size((rt_dtype)d->ab_dtype), c_size = rt_dtype_size((rt_dtype)d->c_dtype);
    if (f64) {
        g->alpha.d = d->alpha;
        g->beta.d = d->beta;
    } else {
        g->alpha.f = (float)d->alpha;
        g->beta.f = (float)d->beta;
    }

    /* cuBLASLt's A is our B: stored [K, N] (or [N, K] when tb) row-major = [N, K] (or [K, N])
     * column-major; its B is our A likewise */
    cublasOperation_t op_first = d->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_second = d->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!rt_cublas_check(cublasLtMatmulDescCreate(&g->op, compute, scale), error,
                         "%s: cublasLtMatmulDescCreate", what) ||
        !rt_cublas_check(
            cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first),
            error, "%s: setting TRANSA", what) ||
        !rt_cublas_check(
            cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second),
            error, "%s: setting TRANSB", what))
        goto fail;
    if (!make_layout(&g->first, ab, d->tb ? d->K : d->N, d->tb ? d->N : d->K, d->ldb, d->batch, d->sb, what,
                     error) ||
        !make_layout(&g->second, ab, d->ta ? d->M : d->K, d->ta ? d->K : d->M, d->lda, d->batch, d->sa, what,
                     error) ||
        !make_layout(&g->out, ct, d->N, d->M, d->ldc, d->batch, d->sc, what, error))
        goto fail;

    uint64_t ws = RT_CUDA_GEMM_WORKSPACE;
    uint32_t align_first = alignment_of(b, d->batch > 1 ? d->sb : 0, d->outer_b, ab_size);
    uint32_t align_second = alignment_of(a, d->batch > 1 ? d->sa : 0, d->outer_a, ab_size);
    uint32_t align_out = alignment_of(c, d->batch > 1 ? d->sc : 0, d->outer_c, c_size);
    if (!rt_cublas_check(cublasLtMatmulPreferenceCreate(&pref), error, "%s: cublasLtMatmulPreferenceCreate",
                         what) ||
        !rt_cublas_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                              &ws, sizeof ws),
                         error, "%s: setting the workspace size", what) ||
        !rt_cublas_check(cublasLtMatmulPreferenceSetAttribute(pref,
                                                              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                              &align_first, sizeof align_first),
                         error, "%s: setting an alignment", what) ||
        !rt_cublas_check(cublasLtMatmulPreferenceSetAttribute(pref,
                                                              CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                              &align_second, sizeof align_second),
                         error, "%s: setting an alignment", what) ||
        !rt_cublas_check(cublasLtMatmulPreferenceSetAttribute(
                             pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_out, sizeof align_out),
                         error, "%s: setting an alignment", what) ||
        !rt_cublas_check(cublasLtMatmulPreferenceSetAttribute(
                             pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_out, sizeof align_out),
                         error, "%s: setting an alignment", what))
        goto fail;

    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    memset(&result, 0, sizeof result);
    if (!rt_cublas_check(cublasLtMatmulAlgoGetHeuristic(dev->blaslt, g->op, g->first, g->second, g->out,
                                                        g->out, pref, 1, &result, &found),
                         error, "%s: cublasLtMatmulAlgoGetHeuristic", what))
        goto fail;
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "%s: cuBLASLt has no algorithm for a %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT
                    " x %" G_GINT64_FORMAT " GEMM (batch %" G_GINT64_FORMAT ") with these dtypes "
                    "and alignments (%u, %u, %u bytes); try --policy.device=cpu and report it",
                    what, d->M, d->N, d->K, d->batch, align_second, align_first, align_out);
        goto fail;
    }
    g->algo = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
    return g;

fail:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    rt_cuda_gemm_free(g);
    return NULL;
}

gboolean rt_cuda_gemm_run(rt_backend_device *dev, const rt_cuda_gemm *g, const void *a, const void *b,
                          void *c, void *workspace, const char *what, GError **error)
{
    return rt_cublas_check(cublasLtMatmul(dev->blaslt, g->op, &g->alpha, b, g->first, a, g->second, &g->beta,
                                          c, g->out, c, g->out, &g->algo, workspace, RT_CUDA_GEMM_WORKSPACE,
                                          dev->stream),
                           error, "%s: cublasLtMatmul", what);
}
