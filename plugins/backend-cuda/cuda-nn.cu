/* plugins/backend-cuda/cuda-nn.cu: frozen batch norm, 2-D max pooling and embeddings, f32 and
 * f64. Twins: src/core/backend-cpu-nn.c and src/core/cpu/pool.c. The backward passes gather
 * instead of scattering: each gradient element is the work of one thread, which adds its
 * contributions in the order the CPU adds them, from 0; without atomics the results are
 * deterministic and equal the CPU's bit for bit. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

/* torchvision's FrozenBatchNorm2d: scale = w * rsqrt(var + eps), shift = b - mean * scale */
template <typename T>
__global__ void frozen_bn_kernel(int64_t planes, int64_t c, int64_t inner, T eps, const T *x, const T *w,
                                 const T *b, const T *mean, const T *var, T *y)
{
    RT_GRID_STRIDE(e, planes * inner)
    {
        const int64_t ch = (e / inner) % c;
        const T scale = w[ch] * (T(1) / dsqrt(var[ch] + eps));
        const T shift = (b ? b[ch] : T(0)) - (mean ? mean[ch] : T(0)) * scale;
        y[e] = x[e] * scale + shift;
    }
}

/* PyTorch's rules: padding is -inf, the first maximum of the window wins, a NaN is the result */
template <typename T>
__global__ void max_pool_kernel(int64_t planes, int64_t h, int64_t w, int64_t k, int64_t s, int64_t p,
                                int64_t ho, int64_t wo, const T *x, T *y, int32_t *arg)
{
    RT_GRID_STRIDE(o, planes * ho * wo)
    {
        const int64_t plane = o / (ho * wo), oh = (o / wo) % ho, ow = o % wo;
        const T *in = x + plane * h * w;
        int64_t h0 = oh * s - p, h1 = h0 + k, w0 = ow * s - p, w1 = w0 + k;
        h0 = h0 < 0 ? 0 : h0;
        h1 = h1 > h ? h : h1;
        w0 = w0 < 0 ? 0 : w0;
        w1 = w1 > w ? w : w1;
        T best = -INFINITY;
        int64_t best_at = h0 * w + w0;
        bool nan = false;
        for (int64_t ih = h0; ih < h1 && !nan; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                const T v = in[ih * w + iw];
                if (v > best || isnan(v)) {
                    best = v;
                    best_at = ih * w + iw;
                    if (isnan(v)) {
                        nan = true;
                        break;
                    }
                }
            }
        y[o] = best;
        arg[o] = static_cast<int32_t>(best_at);
    }
}

/* dx at (plane, ih, iw): the dy of every output whose arg-max is this element; only outputs
 * whose window holds it can name it, visited in increasing output index as the CPU does */
template <typename T>
__global__ void max_pool_backward_kernel(int64_t planes, int64_t h, int64_t w, int64_t k, int64_t s,
                                         int64_t p, int64_t ho, int64_t wo, const T *dy, const int32_t *arg,
                                         T *dx)
{
    RT_GRID_STRIDE(e, planes * h * w)
    {
        const int64_t plane = e / (h * w), ih = (e / w) % h, iw = e % w;
        const int32_t at = static_cast<int32_t>(ih * w + iw);
        /* oh * s - p <= ih <= oh * s - p + k - 1 */
        const int64_t lo_h = ih + p - k + 1 <= 0 ? 0 : (ih + p - k + 1 + s - 1) / s;
        const int64_t lo_w = iw + p - k + 1 <= 0 ? 0 : (iw + p - k + 1 + s - 1) / s;
        int64_t hi_h = (ih + p) / s, hi_w = (iw + p) / s;
        hi_h = hi_h < ho - 1 ? hi_h : ho - 1;
        hi_w = hi_w < wo - 1 ? hi_w : wo - 1;
        const int32_t *a = arg + plane * ho * wo;
        const T *g = dy + plane * ho * wo;
        T acc = T(0);
        for (int64_t oh = lo_h; oh <= hi_h; oh++)
            for (int64_t ow = lo_w; ow <= hi_w; ow++)
                if (a[oh * wo + ow] == at)
                    acc += g[oh * wo + ow];
        dx[e] = acc;
    }
}

__device__ __forceinline__ int64_t block_min_i64(int64_t v)
{
    __shared__ int64_t part[32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        int64_t u = __shfl_xor_sync(0xffffffffu, v, o);
        v = u < v ? u : v;
    }
    __syncthreads();
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    int64_t t = lane < n_warps ? part[lane] : INT64_MAX;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        int64_t u = __shfl_xor_sync(0xffffffffu, t, o);
        t = u < t ? u : t;
    }
    return t;
}

/* one block: the first bad index, in element order, as the CPU reports it */
__global__ void check_indices_kernel(const int64_t *idx, int64_t n, int64_t rows, int node,
                                     rt_cuda_status *status)
{
    for (int64_t base = 0; base < n; base += blockDim.x) {
        const int64_t e = base + threadIdx.x;
        int64_t bad = INT64_MAX;
        if (e < n && (idx[e] < 0 || idx[e] >= rows))
            bad = e;
        bad = block_min_i64(bad);
        if (bad == INT64_MAX)
            continue;
        if (threadIdx.x == 0) {
            volatile rt_cuda_status *st = status;
            if (st->code == RT_CUDA_STATUS_OK) {
                st->node = node;
                st->value = idx[bad];
                st->element = bad;
                st->limit = rows - 1;
                __threadfence_system();
                st->code = RT_CUDA_STATUS_BAD_INDEX;
                __threadfence_system();
            }
        }
        return; /* uniform: every thread saw the same bad */
    }
}

template <typename E>
__global__ void embedding_kernel(int64_t n, int64_t d, int64_t rows, const int64_t *idx, const E *w, E *y)
{
    RT_GRID_STRIDE(e, n * d)
    {
        const int64_t i = e / d, c = e % d, r = idx[i];
        y[e] = r >= 0 && r < rows ? w[r * d + c] : E(0);
    }
}

/* one thread per column: zero it, then add the rows of dy in index order */
template <typename T>
__global__ void embedding_backward_kernel(int64_t n, int64_t d, int64_t rows, const int64_t *idx, const T *dy,
                                          T *dw)
{
    RT_GRID_STRIDE(c, d)
    {
        for (int64_t r = 0; r < rows; r++)
            dw[r * d + c] = T(0);
        for (int64_t i = 0; i < n; i++) {
            const int64_t r = idx[i];
            if (r >= 0 && r < rows)
                dw[r * d + c] += dy[i * d + c];
        }
    }
}

} // namespace

extern "C" cudaError_t rt_cuda_frozen_batch_norm(int dtype, int64_t planes, int64_t c, int64_t inner,
                                                 double eps, const void *x, const void *w, const void *b,
                                                 const void *mean, const void *var, void *y,
                                                 cudaStream_t stream)
{
    if (planes < 1 || c < 1 || inner < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      frozen_bn_kernel<T><<<blocks_for(planes * inner), kThreads, 0, stream>>>(
                          planes, c, inner, static_cast<T>(eps), static_cast<const T *>(x),
                          static_cast<const T *>(w), static_cast<const T *>(b), static_cast<const T *>(mean),
                          static_cast<const T *>(var), static_cast<T *>(y));
                      return launched());
}

extern "C" cudaError_t rt_cuda_max_pool2d(int dtype, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                                          int64_t stride, int64_t pad, int64_t ho, int64_t wo, const void *x,
                                          void *y, int32_t *argmax, cudaStream_t stream)
{
    if (n < 1 || c < 1 || h < 1 || w < 1 || k < 1 || stride < 1 || pad < 0 || ho < 1 || wo < 1 ||
        h * w > INT32_MAX)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(
        dtype, T,
        max_pool_kernel<T><<<blocks_for(n * c * ho * wo), kThreads, 0, stream>>>(
            n * c, h, w, k, stride, pad, ho, wo, static_cast<const T *>(x), static_cast<T *>(y), argmax);
        return launched());
}

extern "C" cudaError_t rt_cuda_max_pool2d_backward(int dtype, int64_t n, int64_t c, int64_t h, int64_t w,
                                                   int64_t k, int64_t stride, int64_t pad, int64_t ho,
                                                   int64_t wo, const void *dy, const int32_t *argmax,
                                                   void *dx, cudaStream_t stream)
{
    if (n < 1 || c < 1 || h < 1 || w < 1 || k < 1 || stride < 1 || pad < 0 || ho < 1 || wo < 1 ||
        h * w > INT32_MAX)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(
        dtype, T,
        max_pool_backward_kernel<T><<<blocks_for(n * c * h * w), kThreads, 0, stream>>>(
            n * c, h, w, k, stride, pad, ho, wo, static_cast<const T *>(dy), argmax, static_cast<T *>(dx));
        return launched());
}

extern "C" cudaError_t rt_cuda_check_indices(const int64_t *idx, int64_t n, int64_t rows, int node,
                                             rt_cuda_status *status, cudaStream_t stream)
{
    if (n < 0 || rows < 1 || status == NULL)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    check_indices_kernel<<<1, 1024, 0, stream>>>(idx, n, rows, node, status);
    return launched();
}

extern "C" cudaError_t rt_cuda_embedding(size_t esize, int64_t n, int64_t d, int64_t rows, const int64_t *idx,
                                         const void *w, void *y, cudaStream_t stream)
{
    if (n < 0 || d < 1 || rows < 1)
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    const unsigned blocks = blocks_for(n * d);
    if (esize == 4)
        embedding_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(
            n, d, rows, idx, static_cast<const uint32_t *>(w), static_cast<uint32_t *>(y));
    else if (esize == 8)
        embedding_kernel<uint64_t><<<blocks, kThreads, 0, stream>>>(
            n, d, rows, idx, static_cast<const uint64_t *>(w), static_cast<uint64_t *>(y));
    else
        return cudaErrorInvalidValue;
    return launched();
}

extern "C" cudaError_t rt_cuda_embedding_backward(int dtype, int64_t n, int64_t d, int64_t rows,
                                                  const int64_t *idx, const void *dy, void *dw,
                                                  cudaStream_t stream)
{
    if (n < 0 || d < 1 || rows < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      embedding_backward_kernel<T><<<blocks_for(d), kThreads, 0, stream>>>(
                          n, d, rows, idx, static_cast<const T *>(dy), static_cast<T *>(dw));
                      return launched());
}
