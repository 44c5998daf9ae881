/* plugins/backend-cuda/cuda-attention.cu: the row kernels of attention, between its GEMMs
 * (cuda-exec.c runs those through cuBLASLt): key-padding mask, softmax and dropout on the
 * probabilities, the dropout mask again in the backward pass, and the softmax backward. One
 * block per row of S keys; rows are (b, h, l) of the [B, H, L, S] probabilities. Twin:
 * ATT_KERNELS in src/core/backend-cpu-nn.c. Dropout draws element (h * L + l) * S + s of sample
 * state[2] + b, as the CPU does, so the masks agree bit for bit. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

/* v stored as dtype d (T itself, or f32 rounded into bf16/f16 storage) */
template <typename T> __device__ __forceinline__ void store_as(int d, void *base, int64_t i, T v)
{
    switch (d) {
    case RT_CUDA_F32:
        static_cast<float *>(base)[i] = static_cast<float>(v);
        break;
    case RT_CUDA_F64:
        static_cast<double *>(base)[i] = static_cast<double>(v);
        break;
    case RT_CUDA_BF16:
        static_cast<uint16_t *>(base)[i] = bf16_from_f32(static_cast<float>(v));
        break;
    default:
        static_cast<uint16_t *>(base)[i] = f16_from_f32(static_cast<float>(v));
        break;
    }
}

struct dropper {
    rng_stream s;
    uint32_t threshold;
    int64_t sample0;
    bool on;
};

__device__ __forceinline__ dropper dropper_make(const rt_cuda_att &a)
{
    dropper d;
    d.on = a.dropout != 0;
    d.threshold = drop_threshold(a.p);
    if (d.on) {
        d.s = rng_stream_make(a.rng.state, a.rng.node);
        d.sample0 = a.rng.state[2];
    } else {
        d.s = rng_stream{0, 0, 0, 0};
        d.sample0 = 0;
    }
    return d;
}

/* keep or zero element s of row (b, hl) */
__device__ __forceinline__ bool kept(const dropper &d, int64_t b, int64_t hl, int64_t S, int64_t s)
{
    return rng_word(d.s, static_cast<uint64_t>(d.sample0 + b), static_cast<uint64_t>(hl * S + s)) >=
           d.threshold;
}

template <typename T>
__global__ void att_softmax_kernel(rt_cuda_att a, T *probs, int pd_dtype, void *pd, T keep_scale)
{
    const int64_t rows = a.B * a.H * a.L, S = a.S;
    const dropper dr = dropper_make(a);
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t b = r / (a.H * a.L), hl = r % (a.H * a.L);
        T *p = probs + r * S;
        const uint8_t *mask = a.mask ? a.mask + b * S : NULL;
        T m = -INFINITY;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            const T v = mask && mask[s] ? T(-INFINITY) : p[s];
            m = v > m ? v : m;
        }
        m = block_max(m, T(-INFINITY));
        double sum = 0;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            const T v = mask && mask[s] ? T(-INFINITY) : p[s];
            sum += static_cast<double>(dexp(v - m));
        }
        sum = block_sum(sum);
        const T inv = static_cast<T>(1.0 / sum);
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            const T v = mask && mask[s] ? T(-INFINITY) : p[s];
            const T prob = dexp(v - m) * inv;
            p[s] = prob;
            if (pd)
                store_as(pd_dtype, pd, r * S + s,
                         dr.on ? (kept(dr, b, hl, S, s) ? prob * keep_scale : T(0)) : prob);
        }
    }
}

template <typename T>
__global__ void att_redrop_kernel(rt_cuda_att a, const T *probs, int pd_dtype, void *pd, T keep_scale)
{
    const int64_t S = a.S, n = a.B * a.H * a.L * S;
    const dropper dr = dropper_make(a);
    RT_GRID_STRIDE(e, n)
    {
        const int64_t r = e / S, s = e % S, b = r / (a.H * a.L), hl = r % (a.H * a.L);
        const T prob = probs[e];
        store_as(pd_dtype, pd, e, dr.on ? (kept(dr, b, hl, S, s) ? prob * keep_scale : T(0)) : prob);
    }
}

/* dp (gradient of the dropped-out probabilities) -> gradient of the scores */
template <typename T>
__global__ void att_dscores_kernel(rt_cuda_att a, const T *probs, T *dp_, int ds_dtype, void *ds,
                                   T keep_scale)
{
    const int64_t rows = a.B * a.H * a.L, S = a.S;
    const dropper dr = dropper_make(a);
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const int64_t b = r / (a.H * a.L), hl = r % (a.H * a.L);
        const T *p = probs + r * S;
        T *dp = dp_ + r * S;
        double dot = 0;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            T g = dp[s];
            if (dr.on) {
                g = kept(dr, b, hl, S, s) ? g * keep_scale : T(0);
                dp[s] = g;
            }
            dot += static_cast<double>(g) * p[s];
        }
        const T tdot = static_cast<T>(block_sum(dot));
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            const T v = p[s] * (dp[s] - tdot);
            dp[s] = v;
            if (ds)
                store_as(ds_dtype, ds, r * S + s, v);
        }
    }
}

bool valid(const rt_cuda_att *a)
{
    return a->B >= 1 && a->H >= 1 && a->L >= 1 && a->S >= 1 && (!a->dropout || (a->p >= 0 && a->p < 1));
}

unsigned att_blocks(const rt_cuda_att *a)
{
    const int64_t rows = a->B * a->H * a->L;
    return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

double keep_scale_of(const rt_cuda_att *a)
{
    return a->dropout ? 1.0 / (1.0 - a->p) : 1.0;
}

} // namespace

extern "C" cudaError_t rt_cuda_att_softmax(int dtype, const rt_cuda_att *a, void *probs, int pd_dtype,
                                           void *pd, cudaStream_t stream)
{
    if (!valid(a))
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      att_softmax_kernel<T><<<att_blocks(a), row_threads(a->S), 0, stream>>>(
                          *a, static_cast<T *>(probs), pd_dtype, pd, static_cast<T>(keep_scale_of(a)));
                      return launched());
}

extern "C" cudaError_t rt_cuda_att_redrop(int dtype, const rt_cuda_att *a, const void *probs, int pd_dtype,
                                          void *pd, cudaStream_t stream)
{
    if (!valid(a))
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      att_redrop_kernel<T><<<blocks_for(a->B * a->H * a->L * a->S), kThreads, 0, stream>>>(
                          *a, static_cast<const T *>(probs), pd_dtype, pd, static_cast<T>(keep_scale_of(a)));
                      return launched());
}

extern "C" cudaError_t rt_cuda_att_dscores(int dtype, const rt_cuda_att *a, const void *probs, void *dp,
                                           int ds_dtype, void *ds, cudaStream_t stream)
{
    if (!valid(a))
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      att_dscores_kernel<T><<<att_blocks(a), row_threads(a->S), 0, stream>>>(
                          *a, static_cast<const T *>(probs), static_cast<T *>(dp), ds_dtype, ds,
                          static_cast<T>(keep_scale_of(a)));
                      return launched());
}
