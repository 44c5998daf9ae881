/* plugins/backend-cuda/cuda-loss.cu: the masked L1 loss and the VAE KL term, forward and
 * backward, f32 and f64. Twins: src/core/backend-cpu-reduce.c. A loss is two kernels: partial
 * sums in double over fixed chunks, then one block adds them in order and divides, so the
 * scalar never leaves the device. The backward kernels read the incoming gradient from device
 * memory too. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

constexpr int64_t kChunk = 16384;

inline int64_t n_chunks(int64_t n)
{
    return (n + kChunk - 1) / kChunk;
}

template <typename T>
__global__ void l1_partials_kernel(int64_t n, int64_t inner, const uint8_t *mask, const T *p, const T *t,
                                   double *partial)
{
    const int64_t e0 = static_cast<int64_t>(blockIdx.x) * kChunk;
    const int64_t e1 = e0 + kChunk < n ? e0 + kChunk : n;
    double acc = 0;
    for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
        if (!mask || !mask[e / inner])
            acc += static_cast<double>(dabs(p[e] - t[e]));
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

/* the reduction's denominator (rt_l1_reduction): numel, or the valid elements (at least 1) */
__device__ double l1_denominator(int64_t n, int64_t inner, const uint8_t *mask, int reduction)
{
    if (reduction == RT_CUDA_L1_MEAN_ALL || !mask)
        return static_cast<double>(n);
    const int64_t n_mask = n / inner;
    double kept = 0;
    for (int64_t i = threadIdx.x; i < n_mask; i += blockDim.x)
        kept += mask[i] == 0 ? 1.0 : 0.0;
    const double valid = block_sum(kept) * static_cast<double>(inner);
    return valid > 1 ? valid : 1.0;
}

template <typename T>
__global__ void l1_finish_kernel(int64_t n, int64_t inner, const uint8_t *mask, int reduction,
                                 const double *partial, int64_t n_partial, T *loss)
{
    double acc = 0;
    for (int64_t i = threadIdx.x; i < n_partial; i += blockDim.x)
        acc += partial[i];
    acc = block_sum(acc);
    const double denom = l1_denominator(n, inner, mask, reduction);
    if (threadIdx.x == 0)
        *loss = static_cast<T>(acc / denom);
}

template <typename T>
__global__ void l1_scale_kernel(int64_t n, int64_t inner, const uint8_t *mask, int reduction, const T *dloss,
                                double *scale)
{
    const double denom = l1_denominator(n, inner, mask, reduction);
    if (threadIdx.x == 0)
        *scale = static_cast<double>(*dloss) / denom;
}

template <typename T>
__global__ void l1_backward_kernel(int64_t n, int64_t inner, const uint8_t *mask, const T *p, const T *t,
                                   const double *scale, T *dx)
{
    const T s = static_cast<T>(*scale);
    RT_GRID_STRIDE(e, n)
    {
        const T diff = p[e] - t[e];
        const T sign = diff > T(0) ? T(1) : diff < T(0) ? T(-1) : T(0);
        dx[e] = (mask && mask[e / inner]) ? T(0) : s * sign;
    }
}

template <typename T> __global__ void kl_partials_kernel(int64_t n, const T *mu, const T *lv, double *partial)
{
    const int64_t e0 = static_cast<int64_t>(blockIdx.x) * kChunk;
    const int64_t e1 = e0 + kChunk < n ? e0 + kChunk : n;
    double acc = 0;
    for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x)
        acc += -0.5 * static_cast<double>(T(1) + lv[e] - mu[e] * mu[e] - dexp(lv[e]));
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

template <typename T>
__global__ void kl_finish_kernel(int64_t batch, const double *partial, int64_t n_partial, T *loss)
{
    double acc = 0;
    for (int64_t i = threadIdx.x; i < n_partial; i += blockDim.x)
        acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        *loss = static_cast<T>(acc / static_cast<double>(batch));
}

template <typename T>
__global__ void kl_backward_kernel(int64_t n, int64_t batch, const T *dloss, const T *mu, const T *lv, T *dmu,
                                   T *dlv)
{
    const T s = *dloss / static_cast<T>(batch);
    RT_GRID_STRIDE(e, n)
    {
        dmu[e] = s * mu[e];
        dlv[e] = s * T(0.5) * (dexp(lv[e]) - T(1));
    }
}

} // namespace

extern "C" size_t rt_cuda_loss_workspace(int64_t n)
{
    return static_cast<size_t>(n_chunks(n) + 1) * sizeof(double);
}

extern "C" cudaError_t rt_cuda_l1_loss(int dtype, int64_t n, int64_t inner, const uint8_t *mask,
                                       int reduction, const void *pred, const void *target, void *loss,
                                       void *workspace, cudaStream_t stream)
{
    if (n < 1 || inner < 1 || n % inner != 0)
        return cudaErrorInvalidValue;
    const int64_t nc = n_chunks(n);
    double *partial = static_cast<double *>(workspace);
    RT_FLOAT_DISPATCH(dtype, T, {
        l1_partials_kernel<T><<<static_cast<unsigned>(nc), kThreads, 0, stream>>>(
            n, inner, mask, static_cast<const T *>(pred), static_cast<const T *>(target), partial);
        l1_finish_kernel<T>
            <<<1, 1024, 0, stream>>>(n, inner, mask, reduction, partial, nc, static_cast<T *>(loss));
        return launched();
    });
}

extern "C" cudaError_t rt_cuda_l1_loss_backward(int dtype, int64_t n, int64_t inner, const uint8_t *mask,
                                                int reduction, const void *dloss, const void *pred,
                                                const void *target, void *dpred, void *workspace,
                                                cudaStream_t stream)
{
    if (n < 1 || inner < 1 || n % inner != 0)
        return cudaErrorInvalidValue;
    double *scale = static_cast<double *>(workspace);
    RT_FLOAT_DISPATCH(dtype, T, {
        l1_scale_kernel<T>
            <<<1, 1024, 0, stream>>>(n, inner, mask, reduction, static_cast<const T *>(dloss), scale);
        l1_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
            n, inner, mask, static_cast<const T *>(pred), static_cast<const T *>(target), scale,
            static_cast<T *>(dpred));
        return launched();
    });
}

extern "C" cudaError_t rt_cuda_kl_loss(int dtype, int64_t n, int64_t batch, const void *mu,
                                       const void *logvar, void *loss, void *workspace, cudaStream_t stream)
{
    if (n < 1 || batch < 1)
        return cudaErrorInvalidValue;
    const int64_t nc = n_chunks(n);
    double *partial = static_cast<double *>(workspace);
    RT_FLOAT_DISPATCH(dtype, T, {
        kl_partials_kernel<T><<<static_cast<unsigned>(nc), kThreads, 0, stream>>>(
            n, static_cast<const T *>(mu), static_cast<const T *>(logvar), partial);
        kl_finish_kernel<T><<<1, 1024, 0, stream>>>(batch, partial, nc, static_cast<T *>(loss));
        return launched();
    });
}

extern "C" cudaError_t rt_cuda_kl_loss_backward(int dtype, int64_t n, int64_t batch, const void *dloss,
                                                const void *mu, const void *logvar, void *dmu, void *dlogvar,
                                                cudaStream_t stream)
{
    if (n < 1 || batch < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      kl_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
                          n, batch, static_cast<const T *>(dloss), static_cast<const T *>(mu),
                          static_cast<const T *>(logvar), static_cast<T *>(dmu), static_cast<T *>(dlogvar));
                      return launched());
}
