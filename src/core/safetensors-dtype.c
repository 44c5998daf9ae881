/* safetensors dtypes: names, sizes, and float16/bfloat16 conversions. */
#include "config.h"

#include <string.h>

#include <robotrain/safetensors.h>

#include "core/safetensors-private.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[RT_ST_N_DTYPES] = {
    [RT_ST_BOOL] = {"BOOL", 1},       [RT_ST_U8] = {"U8", 1},           [RT_ST_I8] = {"I8", 1},
    [RT_ST_F8_E5M2] = {"F8_E5M2", 1}, [RT_ST_F8_E4M3] = {"F8_E4M3", 1}, [RT_ST_I16] = {"I16", 2},
    [RT_ST_U16] = {"U16", 2},         [RT_ST_F16] = {"F16", 2},         [RT_ST_BF16] = {"BF16", 2},
    [RT_ST_I32] = {"I32", 4},         [RT_ST_U32] = {"U32", 4},         [RT_ST_F32] = {"F32", 4},
    [RT_ST_F64] = {"F64", 8},         [RT_ST_I64] = {"I64", 8},         [RT_ST_U64] = {"U64", 8},
};

const char *rt_st_dtype_name(rt_st_dtype dtype)
{
    if ((unsigned)dtype >= RT_ST_N_DTYPES)
        return NULL;
    return dtype_table[dtype].name;
}

gboolean rt_st_dtype_from_name(const char *name, rt_st_dtype *dtype)
{
    g_return_val_if_fail(name != NULL && dtype != NULL, FALSE);
    for (int i = 0; i < RT_ST_N_DTYPES; i++) {
        if (strcmp(name, dtype_table[i].name) == 0) {
            *dtype = (rt_st_dtype)i;
            return TRUE;
        }
    }
    return FALSE;
}

size_t rt_st_dtype_size(rt_st_dtype dtype)
{
    if ((unsigned)dtype >= RT_ST_N_DTYPES)
        return 0;
    return dtype_table[dtype].size;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float rt_st_f16_to_f32(uint16_t bits)
{
    uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
    uint32_t exponent = (bits >> 10) & 0x1fu;
    uint32_t mantissa = bits & 0x3ffu;

    if (exponent == 0x1f) /* infinity or NaN (payload kept) */
        return bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) /* normal: rebias 15 -> 127 */
        return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    /* zero or subnormal: mantissa * 2^-24, exact in float32 */
    float magnitude = (float)mantissa * 0x1p-24f;
    return sign ? -magnitude : magnitude;
}

uint16_t rt_st_f32_to_f16(float value)
{
    uint32_t x = float_bits(value);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t magnitude = x & 0x7fffffffu;

    if (magnitude > 0x7f800000u) /* NaN: quiet, keep the top of the payload */
        return sign | 0x7e00u | (uint16_t)((magnitude >> 13) & 0x3ffu);
    if (magnitude >= 0x477ff000u) /* >= 65520 rounds past 65504: infinity (and inf itself) */
        return sign | 0x7c00u;
    if (magnitude >= 0x38800000u) {            /* >= 2^-14: a normal half */
        uint32_t v = magnitude - (112u << 23); /* rebias 127 -> 15 */
        v += 0xfffu + ((v >> 13) & 1u);        /* round the 13 dropped bits to nearest even */
        return sign | (uint16_t)(v >> 13);     /* a mantissa carry bumps the exponent, as it should */
    }
    if (magnitude <= 0x33000000u) /* <= 2^-25 (half the smallest subnormal, a tie): zero */
        return sign;
    /* subnormal half: count units of 2^-24, rounding to nearest even */
    uint32_t exponent = magnitude >> 23; /* 102..112 here */
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent; /* 14..24 */
    uint32_t units = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (units & 1u)))
        units++; /* may reach 0x400, the smallest normal: still the right bits */
    return sign | (uint16_t)units;
}

float rt_st_bf16_to_f32(uint16_t bits)
{
    return bits_float((uint32_t)bits << 16);
}

uint16_t rt_st_f32_to_bf16(float value)
{
    uint32_t x = float_bits(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: quiet, keep sign and top payload */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even; overflow gives infinity */
    return (uint16_t)(x >> 16);
}

void rt_st_f16_to_f32_n(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = rt_st_f16_to_f32(src[i]);
}

void rt_st_f32_to_f16_n(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = rt_st_f32_to_f16(src[i]);
}

void rt_st_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = rt_st_bf16_to_f32(src[i]);
}

void rt_st_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = rt_st_f32_to_bf16(src[i]);
}

void st_append_shape(GString *out, int rank, const int64_t *shape)
{
    g_string_append_c(out, '[');
    for (int i = 0; i < rank; i++)
        g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? ", " : "", shape[i]);
    g_string_append_c(out, ']');
}

gboolean st_tensor_size(rt_st_dtype dtype, int rank, const int64_t *shape, int64_t *n_elements,
                        uint64_t *n_bytes)
{
    /* the reference library folds left with checked multiplication; so do we */
    uint64_t count = 1;
    for (int i = 0; i < rank; i++) {
        uint64_t dim = (uint64_t)shape[i];
        if (dim != 0 && count > (uint64_t)INT64_MAX / dim)
            return FALSE;
        count *= dim;
    }
    uint64_t size = rt_st_dtype_size(dtype);
    if (size == 0 || count > (uint64_t)INT64_MAX / size)
        return FALSE;
    *n_elements = (int64_t)count;
    *n_bytes = count * size;
    return TRUE;
}
