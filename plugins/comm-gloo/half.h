/* plugins/comm-gloo/half.h: bf16 and f16 to and from f32, bit-exact and portable (no compiler
 * half-precision types). f32 -> 16 bits rounds to nearest, ties to even; NaN stays a (quiet)
 * NaN, and values beyond the format's range become infinity. */
#ifndef RT_GLOO_HALF_H
#define RT_GLOO_HALF_H

#include <cstdint>
#include <cstring>

namespace rt_gloo {

static inline uint32_t float_bits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    return x;
}

static inline float bits_float(uint32_t x)
{
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}

static inline float bf16_to_f32(uint16_t b)
{
    return bits_float(static_cast<uint32_t>(b) << 16);
}

static inline uint16_t f32_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return bits_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = static_cast<float>(m) * (1.0f / 16777216.0f); /* m x 2^-24, exact */
        return sign ? -v : v;
    }
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t f32_to_f16(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u)
        return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* 65520 and above round to infinity */
        return static_cast<uint16_t>(sign | 0x7c00u);
    uint32_t e = a >> 23;
    uint32_t m, shift, base;
    if (a < 0x38800000u) { /* below 2^-14: an f16 subnormal (or zero), in units of 2^-24 */
        shift = 126u - e;
        if (a == 0 || shift > 24u)
            return sign;
        m = (a & 0x7fffffu) | 0x800000u;
        base = 0;
    } else {
        shift = 13;
        m = a & 0x7fffffu;
        base = (e - 112u) << 10;
    }
    uint32_t kept = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return static_cast<uint16_t>(sign | (base + kept)); /* a carry moves into the exponent */
}

} // namespace rt_gloo

#endif
