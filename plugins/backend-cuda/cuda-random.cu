/* plugins/backend-cuda/cuda-random.cu: dropout and random fills with the CPU's counter-based
 * mapping (src/core/philox.h, backend-cpu-ew.c): element e's word is a pure function of (seed,
 * step, random node, sample, index within the sample), so each thread draws its own element
 * independently. Dropout masks and uniform values equal the CPU's bit for bit (integer
 * compares, and the uniform's arithmetic without fused multiply-adds); normals go through the
 * device's log, sin and cos, which may differ from glibc's in the last bit of a double. */
#include "cuda-common.cuh"

using namespace rtcuda;

namespace
{

template <typename T>
__global__ void dropout_kernel(rt_cuda_iter it, rt_cuda_rng rng, uint32_t threshold, T scale, T *y,
                               const T *x)
{
    const rng_stream s = rng_stream_make(rng.state, rng.node);
    const int64_t offset = rng.state[2];
    RT_GRID_STRIDE(i, it.n)
    {
        int64_t off[2];
        iter_offsets<2>(it, i, off);
        uint64_t sample, within;
        rng_position(i, rng.batch, rng.post, offset, &sample, &within);
        y[off[0]] = rng_word(s, sample, within) >= threshold ? x[off[1]] * scale : T(0);
    }
}

template <typename T>
__global__ void rand_kernel(int64_t n, rt_cuda_rng rng, int normal, double a, double b, T *y)
{
    const rng_stream s = rng_stream_make(rng.state, rng.node);
    const int64_t offset = rng.state[2];
    RT_GRID_STRIDE(e, n)
    {
        uint64_t sample, within;
        rng_position(e, rng.batch, rng.post, offset, &sample, &within);
        uint32_t w[4];
        rng_block(s, sample, within, w);
        const unsigned at = static_cast<unsigned>(within % 4);
        double v;
        if (normal) {
            /* Box-Muller on the word pair of the element's half block */
            double z0, z1;
            normal2(w[at & ~1u], w[at | 1u], &z0, &z1);
            v = affine(a, b, (at & 1u) ? z1 : z0);
        } else {
            v = uniform_from(w[at], a, b);
        }
        y[e] = static_cast<T>(v);
    }
}

} // namespace

extern "C" cudaError_t rt_cuda_dropout(int dtype, const rt_cuda_iter *it, const rt_cuda_rng *rng, double p,
                                       void *y, const void *x, cudaStream_t stream)
{
    if (it->n < 0 || !(p >= 0 && p < 1) || (rng->post > 0 && rng->batch < 1))
        return cudaErrorInvalidValue;
    if (it->n == 0)
        return cudaSuccess;
    const uint32_t threshold = drop_threshold(p);
    const double scale = 1.0 / (1.0 - p);
    RT_FLOAT_DISPATCH(
        dtype, T,
        dropout_kernel<T><<<blocks_for(it->n), kThreads, 0, stream>>>(
            *it, *rng, threshold, static_cast<T>(scale), static_cast<T *>(y), static_cast<const T *>(x));
        return launched());
}

extern "C" cudaError_t rt_cuda_rand(int dtype, int normal, int64_t n, const rt_cuda_rng *rng, double a,
                                    double b, void *y, cudaStream_t stream)
{
    if (n < 0 || (rng->post > 0 && rng->batch < 1))
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    RT_FLOAT_DISPATCH(dtype, T,
                      rand_kernel<T>
                      <<<blocks_for(n), kThreads, 0, stream>>>(n, *rng, normal, a, b, static_cast<T *>(y));
                      return launched());
}
