/* tests/test-cuda-error.c: the CUDA backend's error messages (plugins/backend-cuda/cuda-error.c).
 *
 * Feeds status codes of the CUDA runtime, cuBLAS and cuDNN to the checks and asserts the whole
 * message: the context, the status name, the library's description and the hint. Needs no GPU:
 * the names and descriptions are tables inside the libraries. */
#include "config.h"

#include <robotrain/error.h>

#include "backend-cuda/cuda-error.h"
#include "testing.h"

DEF_TEST(success_sets_nothing)
{
    GError *error = NULL;
    OK(rt_cuda_check(cudaSuccess, &error, "cuda:%d: cudaMalloc", 0));
    OK(rt_cublas_check(CUBLAS_STATUS_SUCCESS, &error, "cublasCreate"));
#ifdef HAVE_CUDNN
    OK(rt_cudnn_check(CUDNN_STATUS_SUCCESS, &error, "cudnnCreate"));
#endif
    EXPECT_NO_ERROR(error);
    return 0;
}

DEF_TEST(cuda_runtime_errors)
{
    GError *error = NULL;
    OK(!rt_cuda_check(cudaErrorMemoryAllocation, &error, "cuda:%d: cudaMalloc of %s", 1, "2.0 GiB"));
    OK(error && error->domain == RT_ERROR && error->code == RT_ERROR_DEVICE);
    EXPECT_ERROR(error,
                 "cuda:1: cudaMalloc of 2.0 GiB failed: cudaErrorMemoryAllocation (out of memory); the GPU "
                 "is out of memory: lower the batch size, or stop the other processes on it");
    OK(!rt_cuda_check(cudaErrorNoKernelImageForDevice, &error, "cuda:0: loading the kernels"));
    EXPECT_ERROR(error, "cuda:0: loading the kernels failed: cudaErrorNoKernelImageForDevice (");
    OK(!rt_cuda_check(cudaErrorNoKernelImageForDevice, &error, "x"));
    EXPECT_ERROR(error, "); this build has no code for this GPU: reconfigure with --with-cuda-arch");
    OK(!rt_cuda_check(cudaErrorIllegalAddress, &error, "cudaStreamSynchronize"));
    EXPECT_ERROR(error, "cudaStreamSynchronize failed: cudaErrorIllegalAddress (an illegal memory access was "
                        "encountered); a kernel faulted");
    OK(!rt_cuda_check(cudaErrorInsufficientDriver, &error, "cudaGetDeviceCount"));
    EXPECT_ERROR(error, "install or update the driver");
    /* A code without its own hint still gets one. */
    OK(!rt_cuda_check(cudaErrorNotPermitted, &error, "cudaX"));
    EXPECT_ERROR(error, "cudaX failed: cudaErrorNotPermitted (");
    OK(!rt_cuda_check(cudaErrorNotPermitted, &error, "cudaX"));
    EXPECT_ERROR(error, "); check nvidia-smi and the kernel log (dmesg) for driver errors");
    /* A NULL error is allowed, as everywhere in GLib. */
    OK(!rt_cuda_check(cudaErrorInvalidValue, NULL, "cudaX"));
    return 0;
}

DEF_TEST(cublas_errors)
{
    GError *error = NULL;
    OK(!rt_cublas_check(CUBLAS_STATUS_ALLOC_FAILED, &error, "cuda:%d: cublasLtCreate", 0));
    OK(error && error->code == RT_ERROR_DEVICE);
    EXPECT_ERROR(error, "cuda:0: cublasLtCreate failed: CUBLAS_STATUS_ALLOC_FAILED (");
    OK(!rt_cublas_check(CUBLAS_STATUS_ALLOC_FAILED, &error, "x"));
    EXPECT_ERROR(error, "); the GPU is out of memory: lower the batch size");
    OK(!rt_cublas_check(CUBLAS_STATUS_INVALID_VALUE, &error, "cublasSetStream"));
    EXPECT_ERROR(error, "robotrain called cuBLAS wrongly: this is a bug");
    return 0;
}

#ifdef HAVE_CUDNN
DEF_TEST(cudnn_errors)
{
    GError *error = NULL;
    OK(!rt_cudnn_check(CUDNN_STATUS_NOT_INITIALIZED, &error, "cuda:%d: cudnnCreate", 2));
    OK(error && error->code == RT_ERROR_DEVICE);
    EXPECT_ERROR(error, "cuda:2: cudnnCreate failed: CUDNN_STATUS_NOT_INITIALIZED (");
    OK(!rt_cudnn_check(CUDNN_STATUS_NOT_INITIALIZED, &error, "x"));
    EXPECT_ERROR(error, "cuDNN could not load its parts");
    /* The hint follows the status's category when the code itself has none. */
    OK(!rt_cudnn_check(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS, &error, "x"));
    EXPECT_ERROR(error, "a cuDNN kernel failed on the GPU");
    OK(!rt_cudnn_check(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, &error, "x"));
    EXPECT_ERROR(error, "robotrain called cuDNN wrongly");
    return 0;
}
#endif

int main(void)
{
    RUN_TEST(success_sets_nothing);
    RUN_TEST(cuda_runtime_errors);
    RUN_TEST(cublas_errors);
#ifdef HAVE_CUDNN
    RUN_TEST(cudnn_errors);
#endif
    END_TEST;
}
