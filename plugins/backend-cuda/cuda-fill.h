/* plugins/backend-cuda/cuda-fill.h: the fill kernel (cuda-fill.cu), callable from C. */
#ifndef RT_CUDA_FILL_H
#define RT_CUDA_FILL_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sets the size bytes at dst to value, whatever dst's alignment. The work is queued on stream;
 * the return value reports a failed launch only (a fault surfaces at the next synchronization). */
cudaError_t rt_cuda_fill(void *dst, size_t size, unsigned char value, cudaStream_t stream);

/* Whether this build holds code the current device can run: cudaSuccess, or the runtime's error
 * (cudaErrorNoKernelImageForDevice when --with-cuda-arch missed the GPU). */
cudaError_t rt_cuda_fill_probe(void);

#ifdef __cplusplus
}
#endif

#endif
