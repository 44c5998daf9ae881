/* src/core/cpu/convert.c: f32 <-> bf16 / f16 with round-to-nearest-even, done on the bit
 * patterns so that the result does not depend on the FPU's rounding mode or on F16C. */
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

static inline uint16_t bf16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep sign and top payload, force quiet */
    /* adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; the carry may
     * run into the exponent, which is right (up to +-inf) */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

static inline uint16_t f16_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, keep the top payload bits */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 = f16 max + half an ulp: rounds to inf (and inf) */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* >= 2^-14: a normal f16; rebias the exponent from 127 to 15 */
        a -= (uint32_t)(127 - 15) << 23;
        a += 0x0fffu + ((a >> 13) & 1u); /* RNE at bit 13; a carry may bump the exponent */
        return (uint16_t)(sign | (a >> 13));
    }
    /* an f16 subnormal (or zero): value = m * 2^(e - 150), f16 unit 2^-24 -> m >> (126 - e) */
    uint32_t e = a >> 23;
    if (e < 102) /* < 2^-25: below half the smallest subnormal (f32 subnormals too) */
        return sign;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14 .. 24 */
    uint32_t q = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u)))
        q++; /* may become 0x400, the smallest normal: correct */
    return (uint16_t)(sign | q);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) /* inf or NaN */
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e != 0)
        return bits_f32(sign | ((e + 127 - 15) << 23) | (m << 13));
    if (m == 0)
        return bits_f32(sign);
    /* subnormal: m * 2^-24, exact in f32 */
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
}

void rt_cpu_round_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = bf16_to_f32(bf16_from_f32(x[i]));
}

void rt_cpu_round_f16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = f16_to_f32(f16_from_f32(x[i]));
}

void rt_cpu_f32_to_bf16(const float *x, uint16_t *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = bf16_from_f32(x[i]);
}

void rt_cpu_bf16_to_f32(const uint16_t *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = bf16_to_f32(x[i]);
}

void rt_cpu_f32_to_f16(const float *x, uint16_t *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = f16_from_f32(x[i]);
}

void rt_cpu_f16_to_f32(const uint16_t *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = f16_to_f32(x[i]);
}
