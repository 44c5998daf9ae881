/* plugins/backend-cuda/cuda-error.h: CUDA runtime, cuBLAS and cuDNN failures as GErrors.
 *
 * Each check returns TRUE when status is success. Otherwise it sets error (RT_ERROR, code
 * RT_ERROR_DEVICE) to "<context> failed: <status name> (<description>); <hint>", where context
 * is the printf-formatted rest of the arguments and names the device and the call, e.g.
 * "cuda:0: cudaMalloc of 64.0 MiB", and returns FALSE. */
#ifndef RT_CUDA_ERROR_H
#define RT_CUDA_ERROR_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <glib.h>
#ifdef HAVE_CUDNN
#include <cudnn.h>
#endif

gboolean rt_cuda_check(cudaError_t status, GError **error, const char *context_format, ...)
    G_GNUC_PRINTF(3, 4);
gboolean rt_cublas_check(cublasStatus_t status, GError **error, const char *context_format, ...)
    G_GNUC_PRINTF(3, 4);
#ifdef HAVE_CUDNN
gboolean rt_cudnn_check(cudnnStatus_t status, GError **error, const char *context_format, ...)
    G_GNUC_PRINTF(3, 4);
#endif

/* What to do about a CUDA runtime error, in one sentence (static string). */
const char *rt_cuda_error_hint(cudaError_t status);

#endif
