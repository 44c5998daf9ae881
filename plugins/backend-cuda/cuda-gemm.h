/* plugins/backend-cuda/cuda-gemm.h: row-major (batched) GEMMs through cuBLASLt.
 *
 * C[M,N] = alpha * op(A) op(B) + beta * C for each of batch matrices (A + i * sa, ...), with
 * op(X) = X or X^T and row-major leading dimensions, as the CPU's gemm_batched takes them. A
 * plan is made once, when the graph is prepared and every address is final: descriptors,
 * layouts and the algorithm cuBLASLt's heuristic picks for those shapes, alignments and the
 * workspace; running it only queues the multiplication. A and B may be bf16/f16 copies (mixed
 * precision) with f32 C and f32 accumulation; f32 inputs use TF32 only when the plan says so;
 * f64 computes in f64. */
#ifndef RT_CUDA_GEMM_H
#define RT_CUDA_GEMM_H

#include <stdint.h>

#include <cublasLt.h>
#include <glib.h>

#include "cuda-device.h"

/* Scratch bytes every plan may use (cuBLASLt's workspace). */
#define RT_CUDA_GEMM_WORKSPACE ((size_t)8 << 20)

typedef struct rt_cuda_gemm_desc {
    int c_dtype;  /* RT_F32 or RT_F64 */
    int ab_dtype; /* c_dtype, or RT_BF16 / RT_F16 with an f32 c_dtype */
    gboolean ta, tb;
    int64_t M, N, K, batch;
    int64_t lda, ldb, ldc; /* row-major leading dimensions (elements) */
    int64_t sa, sb, sc;    /* batch strides (elements; 0: the same matrix for every batch) */
    double alpha, beta;
    gboolean tf32; /* f32 inputs may be rounded to TF32 */
    /* element offsets between the calls of an outer loop the caller runs (0 if none): only
     * the alignment the algorithm may assume depends on them */
    int64_t outer_a, outer_b, outer_c;
} rt_cuda_gemm_desc;

typedef struct rt_cuda_gemm rt_cuda_gemm;

/* Returns (transfer full) a plan for desc at these addresses, freed with rt_cuda_gemm_free();
 * NULL with error set (naming what) when cuBLASLt has no algorithm. */
rt_cuda_gemm *rt_cuda_gemm_plan(rt_backend_device *dev, const rt_cuda_gemm_desc *desc, const void *a,
                                const void *b, const void *c, const char *what, GError **error);
/* Queues the GEMM on dev's stream; workspace holds RT_CUDA_GEMM_WORKSPACE bytes. */
gboolean rt_cuda_gemm_run(rt_backend_device *dev, const rt_cuda_gemm *plan, const void *a, const void *b,
                          void *c, void *workspace, const char *what, GError **error);
void rt_cuda_gemm_free(rt_cuda_gemm *plan);

#endif
