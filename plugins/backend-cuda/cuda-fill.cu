/* plugins/backend-cuda/cuda-fill.cu: sets device memory to a byte value.
 *
 * memset_device runs this kernel rather than cudaMemsetAsync so that every memset exercises the
 * module's own device code, and the test checks it; it is as fast, being bound by memory
 * bandwidth either way. The range is split into an unaligned head (< 16 bytes), a body of
 * 16-byte aligned stores in a grid-stride loop, which coalesce into full memory transactions,
 * and a tail (< 16 bytes). */
#include <stdint.h>

#include "cuda-fill.h"

namespace
{

constexpr unsigned kThreads = 256;
/* Enough blocks to fill every SM of any current GPU; the grid-stride loop covers the rest. */
constexpr size_t kMaxBlocks = 4096;

__global__ void fill_kernel(unsigned char *dst, size_t size, size_t head, size_t n_vectors,
                            unsigned char value)
{
    const size_t thread = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    const uint32_t word = 0x01010101u * value;
    const uint4 vector = make_uint4(word, word, word, word);
    uint4 *body = reinterpret_cast<uint4 *>(dst + head);
    for (size_t i = thread; i < n_vectors; i += stride)
        body[i] = vector;

    const size_t tail = head + n_vectors * sizeof(uint4);
    if (thread < head)
        dst[thread] = value;
    if (thread < size - tail)
        dst[tail + thread] = value;
}

} // namespace

extern "C" cudaError_t rt_cuda_fill(void *dst, size_t size, unsigned char value, cudaStream_t stream)
{
    if (size == 0)
        return cudaSuccess;
    const uintptr_t address = reinterpret_cast<uintptr_t>(dst);
    size_t head = (sizeof(uint4) - address % sizeof(uint4)) % sizeof(uint4);
    if (head > size)
        head = size;
    const size_t n_vectors = (size - head) / sizeof(uint4);

    /* At least one block: its first 16 threads write the head and the tail. */
    size_t blocks = (n_vectors + kThreads - 1) / kThreads;
    if (blocks < 1)
        blocks = 1;
    if (blocks > kMaxBlocks)
        blocks = kMaxBlocks;
    fill_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(static_cast<unsigned char *>(dst),
                                                                        size, head, n_vectors, value);
    return cudaGetLastError();
}

extern "C" cudaError_t rt_cuda_fill_probe(void)
{
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, fill_kernel);
}
