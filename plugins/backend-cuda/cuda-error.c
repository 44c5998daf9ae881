/* plugins/backend-cuda/cuda-error.c: turns CUDA, cuBLAS and cuDNN status codes into GErrors
 * that name the call, the status and what to do about it. */
#include "config.h"

#include "cuda-error.h"

#include <robotrain/error.h>

const char *rt_cuda_error_hint(cudaError_t status)
{
    switch (status) {
    case cudaErrorMemoryAllocation:
        return "the GPU is out of memory: lower the batch size, or stop the other processes on it "
               "(nvidia-smi lists them)";
    case cudaErrorInsufficientDriver:
        return "the NVIDIA driver is missing or older than the CUDA runtime robotrain was built with: "
               "install or update the driver";
    case cudaErrorNoDevice:
        return "no CUDA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES";
    case cudaErrorInvalidDevice:
        return "the device index is not below the number of visible GPUs: check nvidia-smi and "
               "CUDA_VISIBLE_DEVICES";
    case cudaErrorDevicesUnavailable:
        return "the GPU is busy or in exclusive-process mode: check nvidia-smi";
    case cudaErrorStubLibrary:
        return "the libcuda.so.1 that was loaded is the toolkit's stub: put the NVIDIA driver's "
               "library first in the library path";
    case cudaErrorSystemDriverMismatch:
        return "the NVIDIA driver's user-space library does not match its kernel module: reboot or "
               "reinstall the driver";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx:
        return "this build has no code for this GPU: reconfigure with --with-cuda-arch naming its "
               "architecture (sm_80 for compute capability 8.0, sm_90a for 9.0)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
        return "a kernel faulted and this process can no longer use the GPU: run it under "
               "compute-sanitizer to find the kernel, and report it";
    case cudaErrorLaunchTimeout:
        return "a kernel ran longer than the display watchdog allows: use a GPU that drives no display";
    case cudaErrorECCUncorrectable:
        return "the GPU reported an uncorrectable memory error: check nvidia-smi -q and the kernel log";
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidResourceHandle:
        return "robotrain passed the CUDA runtime a bad argument: this is a bug, please report it "
               "with this message";
    default:
        return "check nvidia-smi and the kernel log (dmesg) for driver errors";
    }
}

static const char *cublas_hint(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "cuBLAS could not start: the GPU may be out of memory or the driver unusable "
               "(check nvidia-smi)";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "the GPU is out of memory: lower the batch size";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "this GPU lacks a feature the operation needs: use a newer GPU";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "a cuBLAS kernel failed on the GPU: check nvidia-smi and the kernel log";
    default:
        return "robotrain called cuBLAS wrongly: this is a bug, please report it with this message";
    }
}

static void set_device_error(GError **error, const char *context_format, va_list args, const char *name,
                             const char *description, const char *hint)
{
    char *context = g_strdup_vprintf(context_format, args);
    g_set_error(error, RT_ERROR, RT_ERROR_DEVICE, "%s failed: %s (%s); %s", context, name, description, hint);
    g_free(context);
}

gboolean rt_cuda_check(cudaError_t status, GError **error, const char *context_format, ...)
{
    if (status == cudaSuccess)
        return TRUE;
    /* Clear the runtime's record of a non-sticky error, so that a later launch check does not
     * report this failure a second time. */
    (void)cudaGetLastError();
    va_list args;
    va_start(args, context_format);
    set_device_error(error, context_format, args, cudaGetErrorName(status), cudaGetErrorString(status),
                     rt_cuda_error_hint(status));
    va_end(args);
    return FALSE;
}

gboolean rt_cublas_check(cublasStatus_t status, GError **error, const char *context_format, ...)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return TRUE;
    va_list args;
    va_start(args, context_format);
    set_device_error(error, context_format, args, cublasGetStatusName(status), cublasGetStatusString(status),
                     cublas_hint(status));
    va_end(args);
    return FALSE;
}

#ifdef HAVE_CUDNN
static const char *cudnn_hint(cudnnStatus_t status)
{
    switch (status) {
    case CUDNN_STATUS_NOT_INITIALIZED:
    case CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED:
    case CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH:
    case CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE:
        return "cuDNN could not load its parts: check that the libcudnn_*.so.9 beside libcudnn.so.9 "
               "all come from one cuDNN release";
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER:
    case CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART:
        return "this cuDNN needs a newer NVIDIA driver or CUDA runtime: update the driver";
    case CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH:
        return "this cuDNN does not support this GPU: install a cuDNN release that does";
    case CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED:
    case CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED:
        return "out of memory: lower the batch size";
    default:
        break;
    }
    if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_EXECUTION_FAILED)
        return "a cuDNN kernel failed on the GPU: check nvidia-smi and the kernel log";
    return "robotrain called cuDNN wrongly: this is a bug, please report it with this message";
}

gboolean rt_cudnn_check(cudnnStatus_t status, GError **error, const char *context_format, ...)
{
    if (status == CUDNN_STATUS_SUCCESS)
        return TRUE;
    /* cuDNN 9 keeps a detailed message for the last failure of this thread. */
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    va_list args;
    va_start(args, context_format);
    set_device_error(error, context_format, args, cudnnGetErrorString(status),
                     detail[0] ? detail : "no details", cudnn_hint(status));
    va_end(args);
    return FALSE;
}
#endif
