/* plugins/backend-cuda/cuda-copy.cu: copies between strided layouts (contiguous, pad, concat),
 * casts between any two dtypes, rounding to bf16/f16 for mixed precision, and fills. Twins:
 * copy_into, cast_row and cpu_fill in src/core/backend-cpu-ew.c; the conversions are the CPU's
 * bit for bit (cuda-common.cuh), so casts agree exactly. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

template <typename E> __global__ void copy_kernel(rt_cuda_iter it, E *y, const E *x)
{
    RT_GRID_STRIDE(i, it.n)
    {
        int64_t off[2];
        iter_offsets<2>(it, i, off);
        y[off[0]] = x[off[1]];
    }
}

/* rt_cast: through double, which holds every value of every dtype but the largest i64s, and
 * an i64 -> i64 cast keeps all bits */
__device__ double load_any(int d, const char *p)
{
    switch (d) {
    case RT_CUDA_F32:
        return *reinterpret_cast<const float *>(p);
    case RT_CUDA_F64:
        return *reinterpret_cast<const double *>(p);
    case RT_CUDA_BF16:
        return bf16_to_f32(*reinterpret_cast<const uint16_t *>(p));
    case RT_CUDA_F16:
        return f16_to_f32(*reinterpret_cast<const uint16_t *>(p));
    case RT_CUDA_I64:
        return static_cast<double>(*reinterpret_cast<const int64_t *>(p));
    case RT_CUDA_I32:
        return *reinterpret_cast<const int32_t *>(p);
    case RT_CUDA_U8:
        return *reinterpret_cast<const uint8_t *>(p);
    case RT_CUDA_BOOL:
        return *reinterpret_cast<const uint8_t *>(p) != 0;
    default:
        return 0;
    }
}

RT_HD uint64_t value_bits(int d, double v)
{
    switch (d) {
    case RT_CUDA_F32:
        return f32_bits(static_cast<float>(v));
    case RT_CUDA_F64: {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        return u;
    }
    case RT_CUDA_BF16:
        return bf16_from_f32(static_cast<float>(v));
    case RT_CUDA_F16:
        return f16_from_f32(static_cast<float>(v));
    case RT_CUDA_I64:
        return static_cast<uint64_t>(static_cast<int64_t>(v));
    case RT_CUDA_I32:
        return static_cast<uint32_t>(static_cast<int32_t>(v));
    case RT_CUDA_U8:
        return static_cast<uint8_t>(static_cast<int64_t>(v));
    case RT_CUDA_BOOL:
        return v != 0;
    default:
        return 0;
    }
}

__device__ void store_bits(int d, char *p, uint64_t bits)
{
    switch (d) {
    case RT_CUDA_F64:
    case RT_CUDA_I64:
        *reinterpret_cast<uint64_t *>(p) = bits;
        break;
    case RT_CUDA_F32:
    case RT_CUDA_I32:
        *reinterpret_cast<uint32_t *>(p) = static_cast<uint32_t>(bits);
        break;
    case RT_CUDA_BF16:
    case RT_CUDA_F16:
        *reinterpret_cast<uint16_t *>(p) = static_cast<uint16_t>(bits);
        break;
    default:
        *reinterpret_cast<uint8_t *>(p) = static_cast<uint8_t>(bits);
        break;
    }
}

RT_HD size_t dtype_size(int d)
{
    switch (d) {
    case RT_CUDA_F64:
    case RT_CUDA_I64:
        return 8;
    case RT_CUDA_F32:
    case RT_CUDA_I32:
        return 4;
    case RT_CUDA_BF16:
    case RT_CUDA_F16:
        return 2;
    default:
        return 1;
    }
}

__global__ void cast_kernel(rt_cuda_iter it, int from, int to, char *y, const char *x)
{
    const int64_t ey = static_cast<int64_t>(dtype_size(to)), ex = static_cast<int64_t>(dtype_size(from));
    RT_GRID_STRIDE(i, it.n)
    {
        int64_t off[2];
        iter_offsets<2>(it, i, off);
        const char *src = x + off[1] * ex;
        char *dst = y + off[0] * ey;
        if (from == RT_CUDA_I64 && to == RT_CUDA_I64)
            *reinterpret_cast<int64_t *>(dst) = *reinterpret_cast<const int64_t *>(src);
        else
            store_bits(to, dst, value_bits(to, load_any(from, src)));
    }
}

/* the mixed-precision paths, contiguous */
__global__ void to_bf16_kernel(int64_t n, const float *x, uint16_t *y)
{
    RT_GRID_STRIDE(i, n)
    {
        y[i] = bf16_from_f32(x[i]);
    }
}

__global__ void to_f16_kernel(int64_t n, const float *x, uint16_t *y)
{
    RT_GRID_STRIDE(i, n)
    {
        y[i] = f16_from_f32(x[i]);
    }
}

__global__ void round_f32_kernel(int64_t n, int cd, const float *x, float *y)
{
    RT_GRID_STRIDE(i, n)
    {
        y[i] = round_to(x[i], cd);
    }
}

template <typename E> __global__ void fill_kernel(int64_t n, E value, E *y)
{
    RT_GRID_STRIDE(i, n)
    {
        y[i] = value;
    }
}

template <typename E> cudaError_t fill_as(int64_t n, uint64_t bits, void *y, cudaStream_t stream)
{
    fill_kernel<E><<<blocks_for(n), kThreads, 0, stream>>>(n, static_cast<E>(bits), static_cast<E *>(y));
    return launched();
}

} // namespace

extern "C" cudaError_t rt_cuda_copy(size_t esize, const rt_cuda_iter *it, void *y, const void *x,
                                    cudaStream_t stream)
{
    if (it->n <= 0)
        return it->n == 0 ? cudaSuccess : cudaErrorInvalidValue;
    const unsigned blocks = blocks_for(it->n);
    switch (esize) {
    case 1:
        copy_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(*it, static_cast<uint8_t *>(y),
                                                              static_cast<const uint8_t *>(x));
        break;
    case 2:
        copy_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(*it, static_cast<uint16_t *>(y),
                                                               static_cast<const uint16_t *>(x));
        break;
    case 4:
        copy_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(*it, static_cast<uint32_t *>(y),
                                                               static_cast<const uint32_t *>(x));
        break;
    case 8:
        copy_kernel<uint64_t><<<blocks, kThreads, 0, stream>>>(*it, static_cast<uint64_t *>(y),
                                                               static_cast<const uint64_t *>(x));
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return launched();
}

extern "C" cudaError_t rt_cuda_cast(int from, int to, const rt_cuda_iter *it, void *y, const void *x,
                                    cudaStream_t stream)
{
    if (from < 0 || from > RT_CUDA_BOOL || to < 0 || to > RT_CUDA_BOOL || it->n < 0)
        return cudaErrorInvalidValue;
    if (it->n == 0)
        return cudaSuccess;
    cast_kernel<<<blocks_for(it->n), kThreads, 0, stream>>>(*it, from, to, static_cast<char *>(y),
                                                            static_cast<const char *>(x));
    return launched();
}

extern "C" cudaError_t rt_cuda_round(int to, int round_to, int64_t n, const float *x, void *y,
                                     cudaStream_t stream)
{
    if (n < 0)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    const unsigned blocks = blocks_for(n);
    if (to == RT_CUDA_BF16)
        to_bf16_kernel<<<blocks, kThreads, 0, stream>>>(n, x, static_cast<uint16_t *>(y));
    else if (to == RT_CUDA_F16)
        to_f16_kernel<<<blocks, kThreads, 0, stream>>>(n, x, static_cast<uint16_t *>(y));
    else if (to == RT_CUDA_F32 && (round_to == RT_CUDA_BF16 || round_to == RT_CUDA_F16))
        round_f32_kernel<<<blocks, kThreads, 0, stream>>>(n, round_to, x, static_cast<float *>(y));
    else
        return cudaErrorInvalidValue;
    return launched();
}

extern "C" uint64_t rt_cuda_value_bits(int dtype, double value)
{
    return value_bits(dtype, value);
}

extern "C" cudaError_t rt_cuda_fill_value(int dtype, int64_t n, double value, void *y, cudaStream_t stream)
{
    if (dtype < 0 || dtype > RT_CUDA_BOOL || n < 0)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    const uint64_t bits = value_bits(dtype, value);
    switch (dtype_size(dtype)) {
    case 8:
        return fill_as<uint64_t>(n, bits, y, stream);
    case 4:
        return fill_as<uint32_t>(n, bits, y, stream);
    case 2:
        return fill_as<uint16_t>(n, bits, y, stream);
    default:
        return fill_as<uint8_t>(n, bits, y, stream);
    }
}
