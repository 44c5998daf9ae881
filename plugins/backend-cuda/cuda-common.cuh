/* plugins/backend-cuda/cuda-common.cuh: what the module's kernels share.
 *
 * The 16-bit conversions and Philox are __host__ __device__ and reproduce the CPU backend's bit
 * for bit (src/core/cpu/convert.c, src/core/philox.h): casts, rounding for mixed precision,
 * dropout masks and random fills then agree with the CPU exactly, and tests/test-cuda-host.cu
 * checks that on the host. Reductions accumulate in double, as the CPU kernels do, and combine
 * partial sums in a fixed order, so results do not depend on timing. */
#ifndef RT_CUDA_COMMON_CUH
#define RT_CUDA_COMMON_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>

#include "cuda-kernels.h"

#define RT_HD __host__ __device__ __forceinline__

namespace rtcuda
{

/* ---- launch geometry */

constexpr unsigned kThreads = 256;
/* Grid-stride loops cover the rest; enough blocks to fill any current GPU many times over. */
constexpr int64_t kMaxBlocks = 65536;

inline unsigned blocks_for(int64_t n, unsigned threads = kThreads)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    if (b > kMaxBlocks)
        b = kMaxBlocks;
    return static_cast<unsigned>(b);
}

/* Threads per row for the row kernels: a power of two from 32 to 1024, about d. */
inline unsigned row_threads(int64_t d)
{
    unsigned t = 32;
    while (t < 1024 && t < d)
        t *= 2;
    return t;
}

#define RT_GRID_STRIDE(i, n)                                                                                 \
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                   \
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)

/* ---- bits */

RT_HD uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

RT_HD float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* f32 -> bf16, round to nearest even; a NaN keeps its sign and top payload and turns quiet */
RT_HD uint16_t bf16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return static_cast<uint16_t>((u >> 16) | 0x0040u);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

RT_HD float bf16_to_f32(uint16_t h)
{
    return bits_f32(static_cast<uint32_t>(h) << 16);
}

/* f32 -> f16, round to nearest even; >= 65520 becomes inf; subnormals rounded likewise */
RT_HD uint16_t f16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, top payload bits */
        return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u)
        return static_cast<uint16_t>(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* a normal f16: rebias 127 -> 15, round at bit 13 */
        uint32_t an = a - (static_cast<uint32_t>(127 - 15) << 23);
        return static_cast<uint16_t>(sign | ((an + 0x0fffu + ((an >> 13) & 1u)) >> 13));
    }
    uint32_t e = a >> 23;
    if (e < 102) /* below 2^-25: rounds to zero */
        return static_cast<uint16_t>(sign);
    /* value = m * 2^(e - 150) and the f16 unit is 2^-24: m >> (126 - e), to nearest even */
    uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    return static_cast<uint16_t>(sign | (q + (rest + (q & 1u) > half ? 1u : 0u)));
}

RT_HD float f16_to_f32(uint16_t h)
{
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu)
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0)
        return bits_f32(sign | f32_bits(static_cast<float>(static_cast<int32_t>(m)) * 0x1p-24f));
    return bits_f32(sign | ((e + 127 - 15) << 23) | (m << 13));
}

/* f32 rounded to cd (RT_CUDA_BF16 / RT_CUDA_F16) and back; other cd: unchanged */
RT_HD float round_to(float x, int cd)
{
    if (cd == RT_CUDA_BF16)
        return bf16_to_f32(bf16_from_f32(x));
    if (cd == RT_CUDA_F16)
        return f16_to_f32(f16_from_f32(x));
    return x;
}

/* ---- Philox 4x32-10, as src/core/philox.h */

RT_HD void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
#ifdef __CUDA_ARCH__
    *hi = __umulhi(a, b);
    *lo = a * b;
#else
    uint64_t p = static_cast<uint64_t>(a) * b;
    *hi = static_cast<uint32_t>(p >> 32);
    *lo = static_cast<uint32_t>(p);
#endif
}

RT_HD void philox_block(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                        uint32_t out[4])
{
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(0xD2511F53u, c0, &hi0, &lo0);
        mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c1 = lo1;
        c3 = lo0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* One random node's draw in one step: element `within` of sample s takes word within % 4 of
 * the block at counter (within / 4, s, node, step) under key seed (rt_rng_stream). */
struct rng_stream {
    uint32_t k0, k1, node, step;
};

RT_HD rng_stream rng_stream_make(const int64_t *state, int64_t node)
{
    uint64_t seed = static_cast<uint64_t>(state[0]);
    rng_stream s = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(node), static_cast<uint32_t>(state[1])};
    return s;
}

RT_HD void rng_block(const rng_stream &s, uint64_t sample, uint64_t within, uint32_t w[4])
{
    philox_block(static_cast<uint32_t>(within / 4), static_cast<uint32_t>(sample), s.node, s.step, s.k0, s.k1,
                 w);
}

RT_HD uint32_t rng_word(const rng_stream &s, uint64_t sample, uint64_t within)
{
    uint32_t w[4];
    rng_block(s, sample, within, w);
    return w[within % 4];
}

/* Output element e of a tensor with a batch axis of size batch and post elements after it:
 * its sample (counting from offset) and index within the sample. post 0: no batch axis. */
RT_HD void rng_position(int64_t e, int64_t batch, int64_t post, int64_t offset, uint64_t *sample,
                        uint64_t *within)
{
    if (post <= 0) {
        *sample = 0;
        *within = static_cast<uint64_t>(e);
        return;
    }
    int64_t blk = e / post;
    *sample = static_cast<uint64_t>(blk % batch + offset);
    *within = static_cast<uint64_t>((blk / batch) * post + e % post);
}

/* rt_rng_drop_threshold: an element is kept when its word is >= this */
RT_HD uint32_t drop_threshold(double p)
{
    double t = p * 4294967296.0;
    return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<uint32_t>(t);
}

/* rt_rng_unit and rt_rng_open01 (exact: a 24- or 32-bit integer times a power of two) */
RT_HD double rng_unit(uint32_t w)
{
    return static_cast<double>(w >> 8) * (1.0 / 16777216.0);
}

RT_HD double rng_open01(uint32_t w)
{
    return (static_cast<double>(w) + 0.5) * (1.0 / 4294967296.0);
}

/* lo + (hi - lo) * u with no fused multiply-add, as the CPU computes it: bit-identical */
RT_HD double uniform_from(uint32_t w, double lo, double hi)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(lo, __dmul_rn(__dsub_rn(hi, lo), rng_unit(w)));
#else
    return lo + (hi - lo) * rng_unit(w);
#endif
}

/* rt_rng_normal2, word pair -> two normals (libm ulps may differ from the host's) */
RT_HD void normal2(uint32_t w0, uint32_t w1, double *z0, double *z1)
{
    double r = sqrt(-2.0 * log(rng_open01(w0)));
    double t = 6.283185307179586476925 * rng_open01(w1);
    *z0 = r * cos(t);
    *z1 = r * sin(t);
}

RT_HD double affine(double mean, double std, double z)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(mean, __dmul_rn(std, z));
#else
    return mean + std * z;
#endif
}

/* ---- strided walks */

/* offsets (elements) of walk element i for the first n_ops operands */
template <int NOPS>
__device__ __forceinline__ void iter_offsets(const rt_cuda_iter &it, int64_t i, int64_t *off)
{
#pragma unroll
    for (int k = 0; k < NOPS; k++)
        off[k] = 0;
    if (it.nd == 1) {
#pragma unroll
        for (int k = 0; k < NOPS; k++)
            off[k] = i * it.st[k][0];
        return;
    }
    for (int d = it.nd - 1; d >= 0; d--) {
        int64_t c = i % it.shape[d];
        i /= it.shape[d];
#pragma unroll
        for (int k = 0; k < NOPS; k++)
            off[k] += c * it.st[k][d];
    }
}

/* ---- reductions within a block (blockDim.x a multiple of 32, at most 1024); every thread of
 * the block calls them and gets the result */

template <typename A> __device__ __forceinline__ A warp_sum(A v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename A> __device__ __forceinline__ A warp_max(A v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        A w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}

template <typename A> __device__ __forceinline__ A block_sum(A v)
{
    __shared__ A part[32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* an earlier call's readers are done with part */
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    A t = lane < n_warps ? part[lane] : A(0);
    return warp_sum(t);
}

template <typename A> __device__ __forceinline__ A block_max(A v, A identity)
{
    __shared__ A part[32];
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    A t = lane < n_warps ? part[lane] : identity;
    return warp_max(t);
}

/* Launches over f32/f64 by dtype: F(float) or F(double), else cudaErrorInvalidValue. */
#define RT_FLOAT_DISPATCH(dtype, T, ...)                                                                     \
    do {                                                                                                     \
        if ((dtype) == RT_CUDA_F32) {                                                                        \
            typedef float T;                                                                                 \
            __VA_ARGS__;                                                                                     \
        } else if ((dtype) == RT_CUDA_F64) {                                                                 \
            typedef double T;                                                                                \
            __VA_ARGS__;                                                                                     \
        } else {                                                                                             \
            return cudaErrorInvalidValue;                                                                    \
        }                                                                                                    \
    } while (0)

/* float/double math by overload */
__device__ __forceinline__ float dexp(float x)
{
    return expf(x);
}
__device__ __forceinline__ double dexp(double x)
{
    return exp(x);
}
__device__ __forceinline__ float derf(float x)
{
    return erff(x);
}
__device__ __forceinline__ double derf(double x)
{
    return erf(x);
}
__device__ __forceinline__ float dsqrt(float x)
{
    return sqrtf(x);
}
__device__ __forceinline__ double dsqrt(double x)
{
    return sqrt(x);
}
__device__ __forceinline__ float dabs(float x)
{
    return fabsf(x);
}
__device__ __forceinline__ double dabs(double x)
{
    return fabs(x);
}

inline cudaError_t launched()
{
    return cudaGetLastError();
}

} // namespace rtcuda

#endif
