/* plugins/backend-cuda/cuda-ew.cu: element-wise ops with broadcasting (add, sub, mul, div, the
 * ReLU and GELU backward passes, scale, relu, gelu, exp) and GLU, in f32 and f64. One thread per
 * output element over a strided walk (rt_cuda_iter), whose merged axes make the common cases a
 * flat loop. Twins: src/core/backend-cpu-ew.c. The formulas are the CPU's; the compiler may fuse
 * a multiply and an add, and erf/exp differ from glibc's by an ulp or so. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

template <typename T> struct op_add {
    __device__ T operator()(T x, T z) const
    {
        return x + z;
    }
};
template <typename T> struct op_sub {
    __device__ T operator()(T x, T z) const
    {
        return x - z;
    }
};
template <typename T> struct op_mul {
    __device__ T operator()(T x, T z) const
    {
        return x * z;
    }
};
template <typename T> struct op_div {
    __device__ T operator()(T x, T z) const
    {
        return x / z;
    }
};
/* x = dy, z = the forward output (relu) or input (gelu) */
template <typename T> struct op_relu_bw {
    __device__ T operator()(T x, T z) const
    {
        return z > T(0) ? x : T(0);
    }
};
template <typename T> struct op_gelu_bw {
    __device__ T operator()(T x, T z) const
    {
        const T sqrt1_2 = T(0.70710678118654752440),
                c = T(0.5 * 1.12837916709551257390 * 0.70710678118654752440);
        return x * (T(0.5) * (T(1) + derf(z * sqrt1_2)) + z * dexp(T(-0.5) * z * z) * c);
    }
};

template <typename T> struct op_scale {
    T s, c;
    __device__ T operator()(T x) const
    {
        return s * x + c;
    }
};
template <typename T> struct op_relu {
    __device__ T operator()(T x) const
    {
        return x > T(0) ? x : T(0);
    }
};
template <typename T> struct op_gelu {
    __device__ T operator()(T x) const
    {
        return T(0.5) * x * (T(1) + derf(x * T(0.70710678118654752440)));
    }
};
template <typename T> struct op_exp {
    __device__ T operator()(T x) const
    {
        return dexp(x);
    }
};

template <typename T, typename F>
__global__ void binary_kernel(rt_cuda_iter it, T *y, const T *a, const T *b, F f)
{
    RT_GRID_STRIDE(i, it.n)
    {
        int64_t off[3];
        iter_offsets<3>(it, i, off);
        y[off[0]] = f(a[off[1]], b[off[2]]);
    }
}

template <typename T, typename F> __global__ void unary_kernel(rt_cuda_iter it, T *y, const T *x, F f)
{
    RT_GRID_STRIDE(i, it.n)
    {
        int64_t off[2];
        iter_offsets<2>(it, i, off);
        y[off[0]] = f(x[off[1]]);
    }
}

template <typename T, typename F>
cudaError_t run_binary(const rt_cuda_iter *it, void *y, const void *a, const void *b, F f,
                       cudaStream_t stream)
{
    binary_kernel<T, F><<<blocks_for(it->n), kThreads, 0, stream>>>(
        *it, static_cast<T *>(y), static_cast<const T *>(a), static_cast<const T *>(b), f);
    return launched();
}

template <typename T, typename F>
cudaError_t run_unary(const rt_cuda_iter *it, void *y, const void *x, F f, cudaStream_t stream)
{
    unary_kernel<T, F>
        <<<blocks_for(it->n), kThreads, 0, stream>>>(*it, static_cast<T *>(y), static_cast<const T *>(x), f);
    return launched();
}

template <typename T>
cudaError_t binary_typed(int op, const rt_cuda_iter *it, void *y, const void *a, const void *b,
                         cudaStream_t stream)
{
    switch (op) {
    case RT_CUDA_ADD:
        return run_binary<T>(it, y, a, b, op_add<T>(), stream);
    case RT_CUDA_SUB:
        return run_binary<T>(it, y, a, b, op_sub<T>(), stream);
    case RT_CUDA_MUL:
        return run_binary<T>(it, y, a, b, op_mul<T>(), stream);
    case RT_CUDA_DIV:
        return run_binary<T>(it, y, a, b, op_div<T>(), stream);
    case RT_CUDA_RELU_BW:
        return run_binary<T>(it, y, a, b, op_relu_bw<T>(), stream);
    case RT_CUDA_GELU_BW:
        return run_binary<T>(it, y, a, b, op_gelu_bw<T>(), stream);
    default:
        return cudaErrorInvalidValue;
    }
}

template <typename T>
cudaError_t unary_typed(int op, const rt_cuda_iter *it, void *y, const void *x, double s, double c,
                        cudaStream_t stream)
{
    switch (op) {
    case RT_CUDA_SCALE:
        return run_unary<T>(it, y, x, op_scale<T>{T(s), T(c)}, stream);
    case RT_CUDA_RELU:
        return run_unary<T>(it, y, x, op_relu<T>(), stream);
    case RT_CUDA_GELU:
        return run_unary<T>(it, y, x, op_gelu<T>(), stream);
    case RT_CUDA_EXP:
        return run_unary<T>(it, y, x, op_exp<T>(), stream);
    default:
        return cudaErrorInvalidValue;
    }
}

/* y [pre, h, post] from x [pre, 2h, post]: r = p * h + i */
template <typename T> __global__ void glu_kernel(int64_t pre, int64_t h, int64_t post, const T *x, T *y)
{
    const int64_t n = pre * h * post;
    RT_GRID_STRIDE(e, n)
    {
        int64_t r = e / post, q = e % post, p = r / h, i = r % h;
        const T *a = x + (p * 2 * h + i) * post;
        y[e] = a[q] / (T(1) + dexp(-a[h * post + q]));
    }
}

template <typename T>
__global__ void glu_backward_kernel(int64_t pre, int64_t h, int64_t post, const T *dy, const T *x, T *dx)
{
    const int64_t n = pre * h * post;
    RT_GRID_STRIDE(e, n)
    {
        int64_t r = e / post, q = e % post, p = r / h, i = r % h;
        int64_t ia = (p * 2 * h + i) * post + q, ib = ia + h * post;
        T a = x[ia], sg = T(1) / (T(1) + dexp(-x[ib]));
        dx[ia] = dy[e] * sg;
        dx[ib] = dy[e] * a * sg * (T(1) - sg);
    }
}

} // namespace

extern "C" cudaError_t rt_cuda_binary(int op, int dtype, const rt_cuda_iter *it, void *y, const void *a,
                                      const void *b, cudaStream_t stream)
{
    if (it->n <= 0)
        return it->n == 0 ? cudaSuccess : cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T, return binary_typed<T>(op, it, y, a, b, stream));
}

extern "C" cudaError_t rt_cuda_unary(int op, int dtype, const rt_cuda_iter *it, void *y, const void *x,
                                     double s, double c, cudaStream_t stream)
{
    if (it->n <= 0)
        return it->n == 0 ? cudaSuccess : cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T, return unary_typed<T>(op, it, y, x, s, c, stream));
}

extern "C" cudaError_t rt_cuda_glu(int dtype, int64_t pre, int64_t h, int64_t post, const void *x, void *y,
                                   cudaStream_t stream)
{
    if (pre < 1 || h < 1 || post < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(dtype, T,
                      glu_kernel<T><<<blocks_for(pre * h * post), kThreads, 0, stream>>>(
                          pre, h, post, static_cast<const T *>(x), static_cast<T *>(y));
                      return launched());
}

extern "C" cudaError_t rt_cuda_glu_backward(int dtype, int64_t pre, int64_t h, int64_t post, const void *dy,
                                            const void *x, void *dx, cudaStream_t stream)
{
    if (pre < 1 || h < 1 || post < 1)
        return cudaErrorInvalidValue;
    RT_FLOAT_DISPATCH(
        dtype, T,
        glu_backward_kernel<T><<<blocks_for(pre * h * post), kThreads, 0, stream>>>(
            pre, h, post, static_cast<const T *>(dy), static_cast<const T *>(x), static_cast<T *>(dx));
        return launched());
}
