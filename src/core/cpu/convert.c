/* src/core/cpu/convert.c: f32 <-> bf16 / f16 with round-to-nearest-even, done on the bit
 * patterns in integers so that the result does not depend on the FPU's rounding mode,
 * denormal flags or F16C. */
#include "config.h"

#include <string.h>

#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Each conversion is branch-free (mask selects instead of ifs) so that the loops below
 * vectorise; they are compiled for AVX-512, AVX2 and baseline x86-64, picked at load time. */

/* cond ? a : b, as arithmetic: the compiler keeps it in vector registers */
static inline uint32_t select_u32(bool cond, uint32_t a, uint32_t b)
{
    uint32_t mask = 0u - (uint32_t)cond;
    return (a & mask) | (b & ~mask);
}

static inline uint16_t bf16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    /* adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; the carry may
     * run into the exponent, which is right (up to +-inf) */
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x0040u; /* NaN: keep sign and top payload, force quiet */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

static inline float bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

static inline uint16_t f16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    /* a normal f16 (a >= 2^-14): rebias the exponent from 127 to 15, round at bit 13 to
     * nearest even; a carry may bump the exponent, up to inf */
    uint32_t an = a - ((uint32_t)(127 - 15) << 23);
    uint32_t normal = (an + 0x0fffu + ((an >> 13) & 1u)) >> 13;
    /* an f16 subnormal (or zero): value = m * 2^(e - 150), f16 unit 2^-24, so the result is
     * m >> (126 - e) rounded to nearest even; below 2^-25 (e < 102) everything rounds to 0,
     * which a shift of 31 gives too (m < 2^24 < half) */
    uint32_t e = a >> 23;
    uint32_t shift = select_u32(e < 102, 31u, 126u - e);
    shift = select_u32(e > 125, 1u, shift); /* normals and inf/NaN: any valid shift will do */
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    /* round up when rest > half, or rest == half and q is odd: rest + (q & 1) > half says
     * both (and vectorises); q may become 0x400, the smallest normal, which is right */
    uint32_t sub = q + select_u32(rest + (q & 1u) > half, 1u, 0u);
    uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu); /* quiet, keep the top payload bits */
    uint32_t h = select_u32(a >= 0x38800000u, normal, sub);
    h = select_u32(a >= 0x477ff000u, 0x7c00u, h); /* >= 65520 = max + half an ulp: inf */
    h = select_u32(a > 0x7f800000u, nan, h);
    return (uint16_t)(sign | h);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    uint32_t normal = ((e + 127 - 15) << 23) | (m << 13);
    uint32_t special = 0x7f800000u | (m << 13);       /* inf, NaN */
    uint32_t sub = f32_bits((float)(int32_t)m * 0x1p-24f); /* exact; m = 0 gives +0 */
    return bits_f32(sign | select_u32(e == 0x1fu, special, select_u32(e == 0, sub, normal)));
}

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define MULTI_ISA __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef MULTI_ISA
#define MULTI_ISA
#endif

MULTI_ISA static void round_bf16_chunk(float *x, size_t n)
{
    CPU_OMP("omp simd")
    for (size_t i = 0; i < n; i++)
        x[i] = bf16_to_f32(bf16_from_f32(x[i]));
}

MULTI_ISA static void round_f16_chunk(float *x, size_t n)
{
    CPU_OMP("omp simd")
    for (size_t i = 0; i < n; i++)
        x[i] = f16_to_f32(f16_from_f32(x[i]));
}

MULTI_ISA static void to_bf16_chunk(const float *x, uint16_t *y, size_t n)
{
    CPU_OMP("omp simd")
    for (size_t i = 0; i < n; i++)
        y[i] = bf16_from_f32(x[i]);
}

MULTI_ISA static void from_bf16_chunk(const uint16_t *x, float *y, size_t n)
{
    CPU_OMP("omp simd")
    for (size_t i = 0; i < n; i++)
        y[i] = bf16_to_f32(x[i]);
}

MULTI_ISA static void to_f16_chunk(const float *x, uint16_t *y, size_t n)
{
    CPU_OMP("omp simd")
    for (size_t i = 0; i < n; i++)
        y[i] = f16_from_f32(x[i]);
}

MULTI_ISA static void from_f16_chunk(const uint16_t *x, float *y, size_t n)
{
    CPU_OMP("omp simd")
    for (size_t i = 0; i < n; i++)
        y[i] = f16_to_f32(x[i]);
}

/* Large arrays are split over the threads (in cache-line multiples); small ones are not
 * worth a fork. */
#define PARALLEL_MIN (1u << 16)

#define SPLIT(n, body)                                                                      \
    do {                                                                                    \
        int threads_ = (n) >= PARALLEL_MIN ? cpu_threads() : 1;                             \
        if (threads_ <= 1) {                                                                \
            size_t begin = 0, len = (n);                                                    \
            body;                                                                           \
            break;                                                                          \
        }                                                                                   \
        int64_t units_ = (int64_t)(((n) + 31) / 32);                                        \
        CPU_OMP("omp parallel for num_threads(threads_) schedule(static)")                  \
        for (int t_ = 0; t_ < threads_; t_++) {                                             \
            int64_t u0_, u1_;                                                               \
            cpu_split(units_, threads_, t_, &u0_, &u1_);                                    \
            size_t begin = (size_t)u0_ * 32, end_ = (size_t)u1_ * 32;                       \
            if (end_ > (n))                                                                 \
                end_ = (n);                                                                 \
            size_t len = end_ > begin ? end_ - begin : 0;                                   \
            body;                                                                           \
        }                                                                                   \
    } while (0)

void rt_cpu_round_bf16(float *x, size_t n)
{
    SPLIT(n, round_bf16_chunk(x + begin, len));
}

void rt_cpu_round_f16(float *x, size_t n)
{
    SPLIT(n, round_f16_chunk(x + begin, len));
}

void rt_cpu_f32_to_bf16(const float *x, uint16_t *y, size_t n)
{
    SPLIT(n, to_bf16_chunk(x + begin, y + begin, len));
}

void rt_cpu_bf16_to_f32(const uint16_t *x, float *y, size_t n)
{
    SPLIT(n, from_bf16_chunk(x + begin, y + begin, len));
}

void rt_cpu_f32_to_f16(const float *x, uint16_t *y, size_t n)
{
    SPLIT(n, to_f16_chunk(x + begin, y + begin, len));
}

void rt_cpu_f16_to_f32(const uint16_t *x, float *y, size_t n)
{
    SPLIT(n, from_f16_chunk(x + begin, y + begin, len));
}
