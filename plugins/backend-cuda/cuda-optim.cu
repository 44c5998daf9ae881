/* plugins/backend-cuda/cuda-optim.cu: the optimizer ops: step count, global gradient norm,
 * clipping and AdamW, f32 and f64 (f32 masters in training). Twins: src/core/backend-cpu-reduce.c
 * and its template. The hyper-parameters and the step count live in device memory and are read
 * by the kernels, so a captured step sees the values rt_graph_set_lr and friends write between
 * steps. AdamW's per-step coefficients are computed once per step by one thread, with the CPU's
 * double arithmetic (no fused multiply-adds). */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

constexpr int64_t kChunk = 16384;

/* hyper layout per group (src/core/graph-internal.h: RT_HYPER_*) */
enum { kLr, kBeta1, kBeta2, kEps, kWeightDecay };

/* AdamW coefficients (adamw_job in backend-cpu-reduce.c) */
enum { kDecay, kW1, kB2, kW2, kBc2Sqrt, kEpsC, kStepSize, kCoefs };

__global__ void step_inc_kernel(double *step)
{
    step[0] += 1.0;
}

template <typename T> __global__ void square_partials_kernel(int64_t n, const T *g, double *partial)
{
    const int64_t e0 = static_cast<int64_t>(blockIdx.x) * kChunk;
    const int64_t e1 = e0 + kChunk < n ? e0 + kChunk : n;
    double acc = 0;
    for (int64_t e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
        const double v = static_cast<double>(g[e]);
        acc += v * v;
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = acc;
}

template <typename T> __global__ void norm_finish_kernel(const double *partial, int64_t n_partial, T *norm)
{
    double acc = 0;
    for (int64_t i = threadIdx.x; i < n_partial; i += blockDim.x)
        acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        *norm = static_cast<T>(sqrt(acc));
}

/* clip_grad_norm_: coef = max / (norm + 1e-6) in the gradients' dtype, applied when below 1 */
__device__ __forceinline__ double clip_coef(float max_norm, float norm)
{
    return max_norm / (norm + 1e-6f);
}

__device__ __forceinline__ double clip_coef(double max_norm, double norm)
{
    return max_norm / (norm + 1e-6);
}

template <typename T>
__global__ void clip_kernel(int64_t n, T *g, const T *norm, const double *hyper, int64_t n_hyper)
{
    const double max_norm = hyper[n_hyper - 1];
    if (!(max_norm > 0) || isinf(max_norm))
        return;
    const double coef = clip_coef(static_cast<T>(max_norm), *norm);
    if (!(coef < 1.0))
        return;
    const T s = static_cast<T>(coef);
    RT_GRID_STRIDE(e, n)
    {
        g[e] *= s;
    }
}

__global__ void adamw_coefs_kernel(const double *h, const double *step, double *c)
{
    const double t = *step;
    const double bc1 = __dsub_rn(1.0, pow(h[kBeta1], t)), bc2 = __dsub_rn(1.0, pow(h[kBeta2], t));
    c[kDecay] = __dsub_rn(1.0, __dmul_rn(h[kLr], h[kWeightDecay]));
    c[kW1] = __dsub_rn(1.0, h[kBeta1]);
    c[kB2] = h[kBeta2];
    c[kW2] = __dsub_rn(1.0, h[kBeta2]);
    c[kBc2Sqrt] = sqrt(bc2);
    c[kEpsC] = h[kEps];
    c[kStepSize] = h[kLr] / bc1;
}

/* torch.optim.AdamW's single-tensor step, operation by operation in T */
template <typename T> __global__ void adamw_kernel(int64_t n, T *p, const T *g, T *m, T *v, const double *c)
{
    const T decay = static_cast<T>(c[kDecay]), w1 = static_cast<T>(c[kW1]);
    const T b2 = static_cast<T>(c[kB2]), w2 = static_cast<T>(c[kW2]);
    const T bc2_sqrt = static_cast<T>(c[kBc2Sqrt]), eps = static_cast<T>(c[kEpsC]);
    const T neg_step = static_cast<T>(-c[kStepSize]);
    RT_GRID_STRIDE(i, n)
    {
        const T pi = p[i] * decay, gi = g[i];
        T mi = m[i];
        mi = dabs(w1) < T(0.5) ? mi + w1 * (gi - mi) : gi - (gi - mi) * (T(1) - w1);
        T vi = v[i] * b2;
        vi = vi + w2 * gi * gi;
        const T denom = dsqrt(vi) / bc2_sqrt + eps;
        p[i] = pi + neg_step * mi / denom;
        m[i] = mi;
        v[i] = vi;
    }
}

inline int64_t n_chunks(int64_t n)
{
    return (n + kChunk - 1) / kChunk;
}

} // namespace

extern "C" cudaError_t rt_cuda_step_inc(double *step, cudaStream_t stream)
{
    step_inc_kernel<<<1, 1, 0, stream>>>(step);
    return launched();
}

extern "C" size_t rt_cuda_grad_norm_workspace(int64_t n)
{
    return static_cast<size_t>(n_chunks(n) + 1) * sizeof(double);
}

extern "C" cudaError_t rt_cuda_grad_norm(int dtype, int64_t n, const void *g, void *norm, void *workspace,
                                         cudaStream_t stream)
{
    if (n < 1)
        return cudaErrorInvalidValue;
    const int64_t nc = n_chunks(n);
    double *partial = static_cast<double *>(workspace);
    RT_FLOAT_DISPATCH(dtype, T, {
        square_partials_kernel<T>
            <<<static_cast<unsigned>(nc), kThreads, 0, stream>>>(n, static_cast<const T *>(g), partial);
        norm_finish_kernel<T><<<1, 1024, 0, stream>>>(partial, nc, static_cast<T *>(norm));
        return launched();
    });
}

extern "C" cudaError_t rt_cuda_clip_grad(int dtype, int64_t n, void *g, const void *norm, const double *hyper,
                                         int64_t n_hyper, cudaStream_t stream)
{
    if (n < 1 || n_hyper < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      clip_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
                          n, static_cast<T *>(g), static_cast<const T *>(norm), hyper, n_hyper);
                      return launched());
}

extern "C" size_t rt_cuda_adamw_workspace(void)
{
    return kCoefs * sizeof(double);
}

extern "C" cudaError_t rt_cuda_adamw(int dtype, int64_t n, void *p, const void *g, void *m, void *v,
                                     const double *group_hyper, const double *step, void *workspace,
                                     cudaStream_t stream)
{
    if (n < 1)
        return cudaErrorInvalidValue;
    double *coefs = static_cast<double *>(workspace);
    RT_FLOAT_DISPATCH(dtype, T, {
        adamw_coefs_kernel<<<1, 1, 0, stream>>>(group_hyper, step, coefs);
        adamw_kernel<T>
            <<<blocks_for(n), kThreads, 0, stream>>>(n, static_cast<T *>(p), static_cast<const T *>(g),
                                                     static_cast<T *>(m), static_cast<T *>(v), coefs);
        return launched();
    });
}
