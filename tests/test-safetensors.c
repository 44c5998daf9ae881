/* Tests of robotrain/safetensors.h: dtypes and float16/bfloat16 rounding, reading files written
 * by other writers (a Python stdlib writer's fixtures, the golden files), writing bytes identical
 * to the reference writer's, round trips of every dtype, atomic replacement, every malformed-input
 * error, and a mutation fuzz loop. */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <robotrain/error.h>
#include <robotrain/safetensors.h>

#include "testing.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static char *scratch_dir(void)
{
    char *dir = g_dir_make_tmp("rt-safetensors-XXXXXX", NULL);
    g_assert(dir != NULL);
    return dir;
}

static void remove_tree(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (d) {
        const char *entry;
        while ((entry = g_dir_read_name(d))) {
            char *p = g_build_filename(dir, entry, NULL);
            if (g_file_test(p, G_FILE_TEST_IS_DIR))
                remove_tree(p);
            else
                g_unlink(p);
            g_free(p);
        }
        g_dir_close(d);
    }
    g_rmdir(dir);
}

static int count_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;
    if (!d)
        return -1;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    return n;
}

/* A file: u64 length, the header as given, then data_size bytes 0, 1, 2, ... */
static GBytes *make_file(const char *header, size_t data_size)
{
    size_t n = strlen(header);
    guint8 *buf = g_malloc(8 + n + data_size + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (guint8)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, header, n);
    for (size_t i = 0; i < data_size; i++)
        buf[8 + n + i] = (guint8)i;
    return g_bytes_new_take(buf, 8 + n + data_size);
}

static GBytes *bytes_with_length(uint64_t length, const char *rest)
{
    size_t n = strlen(rest);
    guint8 *buf = g_malloc(8 + n + 1);
    for (int i = 0; i < 8; i++)
        buf[i] = (guint8)(length >> (8 * i));
    memcpy(buf + 8, rest, n);
    return g_bytes_new_take(buf, 8 + n);
}

static gboolean file_equals(const char *path, const void *data, size_t size)
{
    char *contents = NULL;
    gsize length = 0;
    if (!g_file_get_contents(path, &contents, &length, NULL))
        return FALSE;
    gboolean same = length == size && memcmp(contents, data, size) == 0;
    g_free(contents);
    return same;
}

static gboolean shape_is(const rt_st_tensor *t, int rank, const int64_t *shape)
{
    if (t->rank != rank)
        return FALSE;
    for (int i = 0; i < rank; i++)
        if (t->shape[i] != shape[i])
            return FALSE;
    return TRUE;
}

static float f32_at(const rt_st_tensor *t, size_t i)
{
    float v;
    memcpy(&v, (const guint8 *)t->data + 4 * i, 4);
    return v;
}

static uint16_t u16_at(const rt_st_tensor *t, size_t i)
{
    uint16_t v;
    memcpy(&v, (const guint8 *)t->data + 2 * i, 2);
    return v;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- dtypes ----------------------------------------------------------------------------- */

DEF_TEST(dtype_table)
{
    static const struct {
        const char *name;
        rt_st_dtype dtype;
        size_t size;
    } expected[] = {
        {"BOOL", RT_ST_BOOL, 1},       {"U8", RT_ST_U8, 1},           {"I8", RT_ST_I8, 1},
        {"F8_E5M2", RT_ST_F8_E5M2, 1}, {"F8_E4M3", RT_ST_F8_E4M3, 1}, {"I16", RT_ST_I16, 2},
        {"U16", RT_ST_U16, 2},         {"F16", RT_ST_F16, 2},         {"BF16", RT_ST_BF16, 2},
        {"I32", RT_ST_I32, 4},         {"U32", RT_ST_U32, 4},         {"F32", RT_ST_F32, 4},
        {"F64", RT_ST_F64, 8},         {"I64", RT_ST_I64, 8},         {"U64", RT_ST_U64, 8},
    };
    EXPECT_EQ_INT(RT_ST_N_DTYPES, G_N_ELEMENTS(expected));
    for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
        rt_st_dtype d = RT_ST_N_DTYPES;
        OK(rt_st_dtype_from_name(expected[i].name, &d));
        EXPECT_EQ_INT(expected[i].dtype, d);
        EXPECT_EQ_STR(expected[i].name, rt_st_dtype_name(expected[i].dtype));
        EXPECT_EQ_INT(expected[i].size, rt_st_dtype_size(expected[i].dtype));
        /* the enum is in the reference's increasing-alignment order */
        if (i > 0)
            OK(expected[i - 1].size <= expected[i].size);
    }
    rt_st_dtype d = RT_ST_U8;
    OK(!rt_st_dtype_from_name("f32", &d)); /* case matters */
    OK(!rt_st_dtype_from_name("F128", &d));
    OK(!rt_st_dtype_from_name("", &d));
    EXPECT_EQ_INT(RT_ST_U8, d);
    OK(rt_st_dtype_name(RT_ST_N_DTYPES) == NULL);
    OK(rt_st_dtype_name((rt_st_dtype)-1) == NULL);
    EXPECT_EQ_INT(0, rt_st_dtype_size(RT_ST_N_DTYPES));
    return 0;
}

/* ---- float16 / bfloat16 ----------------------------------------------------------------- */

DEF_TEST(f16_known_values)
{
    static const struct {
        float value;
        uint16_t bits;
    } exact[] = {
        {0.0f, 0x0000},      {1.0f, 0x3c00},          {-2.0f, 0xc000},    {0.5f, 0x3800},
        {65504.0f, 0x7bff},  {0x1p-14f, 0x0400},      {0x1p-24f, 0x0001}, {0x1.ff8p-15f, 0x03ff},
        {-0x1p-24f, 0x8001}, {1.0009765625f, 0x3c01}, {INFINITY, 0x7c00}, {-INFINITY, 0xfc00},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(exact); i++) {
        EXPECT_EQ_INT(exact[i].bits, rt_st_f32_to_f16(exact[i].value));
        EXPECT_EQ_INT(float_bits(exact[i].value), float_bits(rt_st_f16_to_f32(exact[i].bits)));
    }
    EXPECT_EQ_INT(0x8000, rt_st_f32_to_f16(-0.0f));
    /* rounding: ties go to the even neighbour */
    EXPECT_EQ_INT(0x3c00, rt_st_f32_to_f16(1.0f + 0x1p-11f));     /* tie between 0x3c00 and 0x3c01 */
    EXPECT_EQ_INT(0x3c02, rt_st_f32_to_f16(1.0f + 3 * 0x1p-11f)); /* tie between 0x3c01 and 0x3c02 */
    EXPECT_EQ_INT(0x3c01, rt_st_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f));
    EXPECT_EQ_INT(0x7bff, rt_st_f32_to_f16(65519.99f));
    EXPECT_EQ_INT(0x7c00, rt_st_f32_to_f16(65520.0f)); /* tie with 65536: even is infinity */
    EXPECT_EQ_INT(0xfc00, rt_st_f32_to_f16(-1e10f));
    EXPECT_EQ_INT(0x0000, rt_st_f32_to_f16(0x1p-25f)); /* tie between 0 and the smallest subnormal */
    EXPECT_EQ_INT(0x0001, rt_st_f32_to_f16(0x1.000002p-25f));
    EXPECT_EQ_INT(0x0002, rt_st_f32_to_f16(0x1.8p-24f));   /* 1.5 units: a tie, goes to 2 */
    EXPECT_EQ_INT(0x0400, rt_st_f32_to_f16(0x1.ffcp-15f)); /* rounds up out of the subnormals */
    EXPECT_EQ_INT(0x0000, rt_st_f32_to_f16(1e-30f));
    /* NaN stays NaN, quiet, with its sign */
    uint16_t nan = rt_st_f32_to_f16(NAN);
    OK((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0 && (nan & 0x200));
    OK(rt_st_f32_to_f16(-NAN) & 0x8000);
    OK((rt_st_f32_to_f16(bits_float(0x7f800001)) & 0x3ff) != 0); /* signalling, tiny payload */
    OK(isnan(rt_st_f16_to_f32(0x7e00)) && isnan(rt_st_f16_to_f32(0xfc01)));
    return 0;
}

/* Every half converts to float and back to itself; and every float converts to the nearest half
 * (ties to even), checked at the rounding boundaries: the midpoint of every pair of neighbouring
 * halves and the floats just either side of it. */
DEF_TEST(f16_exhaustive)
{
    int failures = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = rt_st_f16_to_f32((uint16_t)h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            failures += !isnan(f);
            continue;
        }
        failures += rt_st_f32_to_f16(f) != h;
    }
    EXPECT_EQ_INT(0, failures);

    for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
        for (uint32_t h = 0; h < 0x7bff; h++) {
            uint16_t lo = (uint16_t)(sign | h), hi = (uint16_t)(sign | (h + 1));
            double mid = ((double)rt_st_f16_to_f32(lo) + (double)rt_st_f16_to_f32(hi)) / 2;
            float m = (float)mid; /* exact: 12 significant bits */
            uint16_t even = (h & 1) ? hi : lo;
            failures += rt_st_f32_to_f16(m) != even;
            failures += rt_st_f32_to_f16(nextafterf(m, 0.0f)) != lo;
            failures += rt_st_f32_to_f16(nextafterf(m, sign ? -INFINITY : INFINITY)) != hi;
        }
    }
    EXPECT_EQ_INT(0, failures);

#ifdef __FLT16_MAX__
    /* The compiler's own conversion (IEEE, round to nearest even) on a spread of floats. */
    for (uint64_t u = 0; u <= 0xffffffffu; u += 40503) {
        float f = bits_float((uint32_t)u);
        if (isnan(f))
            continue;
        _Float16 ref = (_Float16)f;
        uint16_t ref_bits;
        memcpy(&ref_bits, &ref, 2);
        failures += rt_st_f32_to_f16(f) != ref_bits;
    }
    EXPECT_EQ_INT(0, failures);
#else
    printf("# no _Float16 in this compiler: skipped the comparison with it\n");
#endif
    return 0;
}

DEF_TEST(bf16)
{
    EXPECT_EQ_INT(0x3f80, rt_st_f32_to_bf16(1.0f));
    EXPECT_EQ_INT(0xc049, rt_st_f32_to_bf16(-3.140625f));
    EXPECT_EQ_INT(0x4049, rt_st_f32_to_bf16(3.14159265f)); /* 3.140625 is nearer than 3.15625 */
    EXPECT_EQ_INT(0x7f80, rt_st_f32_to_bf16(INFINITY));
    EXPECT_EQ_INT(0x7f80, rt_st_f32_to_bf16(FLT_MAX)); /* beyond the last midpoint */
    EXPECT_EQ_INT(0x8000, rt_st_f32_to_bf16(-0.0f));
    EXPECT_EQ_INT(0x0001, rt_st_f32_to_bf16(bits_float(0x00010000))); /* subnormals are kept */
    uint16_t nan = rt_st_f32_to_bf16(bits_float(0xff800001));         /* a NaN whose top half is -inf */
    OK((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0 && (nan & 0x8000));
    EXPECT_EQ_INT(float_bits(-3.140625f), float_bits(rt_st_bf16_to_f32(0xc049)));

    /* nearest-even at the boundaries of every positive and negative bfloat16 below infinity */
    int failures = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7f80) == 0x7f80)
            continue;
        uint32_t lo = h << 16;
        float mid = bits_float(lo | 0x8000);
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        failures += rt_st_f32_to_bf16(mid) != even;
        failures += rt_st_f32_to_bf16(bits_float(lo | 0x7fff)) != h;
        failures += rt_st_f32_to_bf16(bits_float(lo | 0x8001)) != (uint16_t)(h + 1);
        failures += rt_st_f32_to_bf16(rt_st_bf16_to_f32((uint16_t)h)) != h;
    }
    EXPECT_EQ_INT(0, failures);

    float src[3] = {1.0f, -2.0f, 0.5f}, back[3];
    uint16_t mid[3];
    rt_st_f32_to_bf16_n(src, mid, 3);
    rt_st_bf16_to_f32_n(mid, back, 3);
    OK(memcmp(src, back, sizeof src) == 0);
    rt_st_f32_to_f16_n(src, mid, 3);
    EXPECT_EQ_INT(0xc000, mid[1]);
    rt_st_f16_to_f32_n(mid, back, 3);
    OK(memcmp(src, back, sizeof src) == 0);
    return 0;
}

/* ---- reading other writers' files ------------------------------------------------------- */

DEF_TEST(read_reference_layout)
{
    char *path = rt_test_srcfile("data/safetensors/reference-layout.safetensors");
    GError *error = NULL;
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR(path, rt_safetensors_path(st));
    EXPECT_EQ_INT(17, rt_safetensors_n_tensors(st));

    /* data order = the reference writer's order: descending alignment, then name */
    static const char *const order[] = {"ulong", "steps", "scale", "bias",   "empty",  "weight",
                                        "uint",  "int",   "brain", "half",   "ushort", "short",
                                        "fp8a",  "fp8b",  "codes", "pixels", "mask"};
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++) {
        const rt_st_tensor *t = rt_safetensors_tensor_at(st, i);
        EXPECT_EQ_STR(order[i], t->name);
        OK(rt_safetensors_find(st, order[i]) == t);
        OK((uintptr_t)t->data % rt_st_dtype_size(t->dtype) == 0); /* the mapping is page aligned */
    }
    OK(rt_safetensors_tensor_at(st, 17) == NULL);
    OK(rt_safetensors_find(st, "nope") == NULL);
    OK(rt_safetensors_find(st, "__metadata__") == NULL);

    const rt_st_tensor *t = rt_safetensors_find(st, "weight");
    static const int64_t shape23[] = {2, 3};
    EXPECT_EQ_INT(RT_ST_F32, t->dtype);
    OK(shape_is(t, 2, shape23));
    EXPECT_EQ_INT(6, t->n_elements);
    EXPECT_EQ_INT(24, t->n_bytes);
    EXPECT_EQ_INT(44, t->offset);
    for (int i = 0; i < 6; i++)
        EXPECT_NEAR(-1.0 + 0.5 * i, f32_at(t, (size_t)i), 0);

    t = rt_safetensors_find(st, "scale");
    EXPECT_EQ_INT(RT_ST_F64, t->dtype);
    EXPECT_EQ_INT(0, t->rank);
    OK(t->shape == NULL);
    EXPECT_EQ_INT(1, t->n_elements);
    double pi;
    memcpy(&pi, t->data, 8);
    EXPECT_NEAR(3.141592653589793, pi, 0);

    t = rt_safetensors_find(st, "empty");
    static const int64_t shape03[] = {0, 3};
    OK(shape_is(t, 2, shape03));
    EXPECT_EQ_INT(0, t->n_elements);
    EXPECT_EQ_INT(0, t->n_bytes);

    t = rt_safetensors_find(st, "steps");
    int64_t steps[2];
    memcpy(steps, t->data, 16);
    EXPECT_EQ_INT(-2, steps[0]);
    EXPECT_EQ_INT(INT64_C(1) << 40, steps[1]);

    t = rt_safetensors_find(st, "half");
    EXPECT_EQ_INT(0x3c00, u16_at(t, 0));
    EXPECT_EQ_INT(0xc100, u16_at(t, 1));
    EXPECT_EQ_INT(0x7bff, u16_at(t, 2));
    EXPECT_EQ_INT(0x0001, u16_at(t, 3));
    float f[4];
    OK(rt_safetensors_copy_f32(st, t, f, 4, &error));
    EXPECT_NEAR(-2.5, f[1], 0);
    EXPECT_NEAR(0x1p-24, f[3], 0);

    t = rt_safetensors_find(st, "brain");
    OK(rt_safetensors_copy_f32(st, t, f, 3, &error));
    EXPECT_NEAR(-3.140625, f[1], 0);
    EXPECT_NEAR(256, f[2], 0);

    t = rt_safetensors_find(st, "mask");
    EXPECT_EQ_INT(RT_ST_BOOL, t->dtype);
    OK(memcmp(t->data, "\1\0\0\1", 4) == 0);
    t = rt_safetensors_find(st, "ulong");
    OK(memcmp(t->data, "\xff\xff\xff\xff\xff\xff\xff\xff", 8) == 0);
    t = rt_safetensors_find(st, "fp8a");
    EXPECT_EQ_INT(RT_ST_F8_E4M3, t->dtype);
    OK(memcmp(t->data, "\x38\xb8", 2) == 0);

    EXPECT_EQ_STR("pt", rt_safetensors_metadata(st, "format"));
    EXPECT_EQ_STR("two\nlines, \"quoted\", caf\xc3\xa9", rt_safetensors_metadata(st, "note"));
    OK(rt_safetensors_metadata(st, "missing") == NULL);
    const char *const *keys = rt_safetensors_metadata_keys(st);
    EXPECT_EQ_STR("format", keys[0]);
    EXPECT_EQ_STR("note", keys[1]);
    OK(keys[2] == NULL);

    /* expect() and copy_f32() errors name the file, the tensor and the mismatch */
    OK(rt_safetensors_expect(st, "weight", RT_ST_F32, 2, shape23, &error) != NULL);
    OK(rt_safetensors_expect(st, "weight", RT_ST_F32, -1, NULL, &error) != NULL);
    EXPECT_NO_ERROR(error);
    OK(rt_safetensors_expect(st, "weight", RT_ST_F16, 2, shape23, &error) == NULL);
    EXPECT_ERROR(error, "reference-layout.safetensors: tensor 'weight' is F32 [2, 3], expected F16 [2, 3]");
    static const int64_t shape32[] = {3, 2};
    OK(rt_safetensors_expect(st, "weight", RT_ST_F32, 2, shape32, &error) == NULL);
    EXPECT_ERROR(error, "tensor 'weight' is F32 [2, 3], expected F32 [3, 2]");
    OK(rt_safetensors_expect(st, "scale", RT_ST_F64, 1, shape32, &error) == NULL);
    EXPECT_ERROR(error, "tensor 'scale' is F64 [], expected F64 [3]");
    OK(rt_safetensors_expect(st, "wieght", RT_ST_F32, -1, NULL, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "reference-layout.safetensors: no tensor 'wieght' in the file (it holds 17 tensors)");
    OK(!rt_safetensors_copy_f32(st, rt_safetensors_find(st, "weight"), f, 4, &error));
    EXPECT_ERROR(error, "tensor 'weight' has 6 elements, expected 4");
    OK(!rt_safetensors_copy_f32(st, rt_safetensors_find(st, "steps"), f, 2, &error));
    EXPECT_ERROR(error, "tensor 'steps' is I64, not a floating-point type");

    rt_safetensors_close(st);
    g_free(path);
    return 0;
}

DEF_TEST(read_foreign_layout)
{
    char *path = rt_test_srcfile("data/safetensors/foreign-layout.safetensors");
    GError *error = NULL;
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(6, rt_safetensors_n_tensors(st));
    /* data order; the two empty tensors at offset 11 keep their header order */
    static const char *const order[] = {
        "codes", "values", "empty.b", "empty.a", "caf\xc3\xa9 \xf0\x9f\xa4\x96\n", "scalar"};
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++)
        EXPECT_EQ_STR(order[i], rt_safetensors_tensor_at(st, i)->name);

    const rt_st_tensor *t = rt_safetensors_find(st, "values");
    EXPECT_EQ_INT(3, t->offset);
    float v[2];
    OK(rt_safetensors_copy_f32(st, t, v, 2, &error)); /* unaligned F32 */
    EXPECT_NEAR(1.5, v[0], 0);
    EXPECT_NEAR(-2.0, v[1], 0);
    t = rt_safetensors_find(st, "caf\xc3\xa9 \xf0\x9f\xa4\x96\n");
    OK(t != NULL);
    OK(rt_safetensors_copy_f32(st, t, v, 1, &error));
    EXPECT_NEAR(0.5, v[0], 0);
    t = rt_safetensors_find(st, "scalar");
    EXPECT_EQ_INT(0, t->rank);
    int32_t s;
    memcpy(&s, t->data, 4);
    EXPECT_EQ_INT(-5, s);
    t = rt_safetensors_find(st, "empty.b");
    static const int64_t shape20[] = {2, 0};
    OK(shape_is(t, 2, shape20) && t->n_bytes == 0 && t->dtype == RT_ST_BOOL);
    OK(memcmp(rt_safetensors_find(st, "codes")->data, "\1\2\3", 3) == 0);

    const char *const *keys = rt_safetensors_metadata_keys(st);
    EXPECT_EQ_STR("z", keys[0]);
    EXPECT_EQ_STR("a", keys[1]);
    OK(keys[2] == NULL);
    EXPECT_EQ_STR("first", rt_safetensors_metadata(st, "a"));
    rt_safetensors_close(st);
    g_free(path);
    return 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* The fixture's tensors (see make-fixtures.py), added in a scrambled order. */
static rt_safetensors_writer *fixture_writer(void)
{
    static const float weight[] = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}, bias[] = {0.25f, -0.125f, 3.0f};
    static const double scale = 3.141592653589793;
    static const int64_t steps[] = {-2, INT64_C(1) << 40};
    static const uint16_t half[] = {0x3c00, 0xc100, 0x7bff, 0x0001}, brain[] = {0x3f80, 0xc049, 0x4380};
    static const guint8 mask[] = {1, 0, 0, 1}, pixels[] = {0, 255}, fp8a[] = {0x38, 0xb8}, fp8b[] = {0x3c};
    static const int8_t codes[] = {-128, 0, 127};
    static const int16_t shorts[] = {-32768, 12345};
    static const uint16_t ushorts[] = {65535};
    static const int32_t ints[] = {-7, 2147483647};
    static const uint32_t uints[] = {4294967295u};
    static const uint64_t ulongs[] = {UINT64_MAX};
    static const int64_t s23[] = {2, 3}, s3[] = {3}, s03[] = {0, 3}, s2[] = {2}, s22[] = {2, 2}, s4[] = {4},
                         s1[] = {1};
    static const struct {
        const char *name;
        rt_st_dtype dtype;
        int rank;
        const int64_t *shape;
        const void *data;
    } rows[] = {
        {"mask", RT_ST_BOOL, 1, s4, mask},     {"weight", RT_ST_F32, 2, s23, weight},
        {"fp8b", RT_ST_F8_E5M2, 1, s1, fp8b},  {"steps", RT_ST_I64, 1, s2, steps},
        {"half", RT_ST_F16, 2, s22, half},     {"empty", RT_ST_F32, 2, s03, NULL},
        {"brain", RT_ST_BF16, 1, s3, brain},   {"codes", RT_ST_I8, 1, s3, codes},
        {"scale", RT_ST_F64, 0, NULL, &scale}, {"pixels", RT_ST_U8, 1, s2, pixels},
        {"short", RT_ST_I16, 1, s2, shorts},   {"ushort", RT_ST_U16, 1, s1, ushorts},
        {"int", RT_ST_I32, 1, s2, ints},       {"uint", RT_ST_U32, 1, s1, uints},
        {"ulong", RT_ST_U64, 1, s1, ulongs},   {"fp8a", RT_ST_F8_E4M3, 1, s2, fp8a},
        {"bias", RT_ST_F32, 1, s3, bias},
    };
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++)
        g_assert(rt_safetensors_writer_add(w, rows[i].name, rows[i].dtype, rows[i].rank, rows[i].shape,
                                           rows[i].data, NULL));
    g_assert(rt_safetensors_writer_set_metadata(w, "note", "two\nlines, \"quoted\", caf\xc3\xa9", NULL));
    g_assert(rt_safetensors_writer_set_metadata(w, "format", "pt", NULL));
    return w;
}

DEF_TEST(write_matches_reference_layout)
{
    char *fixture = rt_test_srcfile("data/safetensors/reference-layout.safetensors");
    char *expected = NULL;
    gsize expected_size = 0;
    OK(g_file_get_contents(fixture, &expected, &expected_size, NULL));

    char *dir = scratch_dir();
    char *path = g_build_filename(dir, "model.safetensors", NULL);
    rt_safetensors_writer *w = fixture_writer();
    GError *error = NULL;
    OK(rt_safetensors_writer_write(w, path, &error));
    EXPECT_NO_ERROR(error);
    OK(file_equals(path, expected, expected_size));
    EXPECT_EQ_INT(1, count_entries(dir)); /* no temporary file left */

    /* the mode follows the umask like any new file (mkstemp's 0600 would not) */
    mode_t old = umask(022);
    OK(rt_safetensors_writer_write(w, path, &error));
    umask(old);
    struct stat info;
    OK(g_stat(path, &info) == 0);
    EXPECT_EQ_INT(0644, info.st_mode & 0777);

    rt_safetensors_writer_free(w);
    remove_tree(dir);
    g_free(path);
    g_free(dir);
    g_free(expected);
    g_free(fixture);
    return 0;
}

/* Byte layouts the reference Rust writer produces (its own unit tests pin the same bytes). */
DEF_TEST(write_reference_bytes)
{
    char *dir = scratch_dir();
    char *path = g_build_filename(dir, "t.safetensors", NULL);
    GError *error = NULL;

    /* no tensors, no metadata: "{}" padded to 8 */
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    OK(rt_safetensors_writer_write(w, path, &error));
    OK(file_equals(path, "\x08\0\0\0\0\0\0\0{}      ", 16));
    /* metadata only: 35 bytes of JSON + 5 spaces */
    OK(rt_safetensors_writer_set_metadata(w, "framework", "pt", &error));
    OK(rt_safetensors_writer_write(w, path, &error));
    OK(file_equals(path, "\x28\0\0\0\0\0\0\0{\"__metadata__\":{\"framework\":\"pt\"}}     ", 48));
    rt_safetensors_writer_free(w);

    /* one F32 [1, 2, 3]: exactly 64 bytes of JSON, so no padding */
    static const float values[] = {0, 1, 2, 3, 4, 5};
    static const int64_t shape[] = {1, 2, 3};
    w = rt_safetensors_writer_new();
    OK(rt_safetensors_writer_add(w, "attn.0", RT_ST_F32, 3, shape, values, &error));
    OK(rt_safetensors_writer_write(w, path, &error));
    static const char header[] = "{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}";
    guint8 expected[8 + 64 + 24] = {64};
    memcpy(expected + 8, header, 64);
    memcpy(expected + 72, values, 24);
    EXPECT_EQ_INT(64, strlen(header));
    OK(file_equals(path, expected, sizeof expected));
    rt_safetensors_writer_free(w);

    /* control characters and quotes are escaped as serde_json does */
    w = rt_safetensors_writer_new();
    OK(rt_safetensors_writer_set_metadata(w, "k", "a\"b\\c\x01\x1f\x7f/\t", &error));
    OK(rt_safetensors_writer_write(w, path, &error));
    static const char escaped[] =
        "\x30\0\0\0\0\0\0\0{\"__metadata__\":{\"k\":\"a\\\"b\\\\c\\u0001\\u001f\x7f/\\t\"}}";
    OK(file_equals(path, escaped, sizeof escaped - 1));
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("a\"b\\c\x01\x1f\x7f/\t", rt_safetensors_metadata(st, "k"));
    rt_safetensors_close(st);
    rt_safetensors_writer_free(w);

    remove_tree(dir);
    g_free(path);
    g_free(dir);
    return 0;
}

/* Every dtype, a scalar and empty tensors survive write -> read, each aligned in the file. */
DEF_TEST(round_trip)
{
    char *dir = scratch_dir();
    char *path = g_build_filename(dir, "all.safetensors", NULL);
    GError *error = NULL;
    guint8 payload[RT_ST_N_DTYPES][8 * 7 * 3];
    int64_t shapes[RT_ST_N_DTYPES][3];
    char names[RT_ST_N_DTYPES][16];
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    for (int d = 0; d < RT_ST_N_DTYPES; d++) {
        shapes[d][0] = 1 + d % 3;
        shapes[d][1] = 7;
        shapes[d][2] = 1 + d % 2;
        for (size_t i = 0; i < sizeof payload[d]; i++)
            payload[d][i] = (guint8)(i * 31 + (size_t)d * 7 + 1);
        if (d == RT_ST_BOOL)
            for (size_t i = 0; i < sizeof payload[d]; i++)
                payload[d][i] &= 1;
        g_snprintf(names[d], sizeof names[d], "t.%s", rt_st_dtype_name((rt_st_dtype)d));
        OK(rt_safetensors_writer_add(w, names[d], (rt_st_dtype)d, 3, shapes[d], payload[d], &error));
    }
    static const int64_t zero[] = {0}, four_zero[] = {4, 0};
    uint32_t scalar = 0xdeadbeef;
    OK(rt_safetensors_writer_add(w, "scalar", RT_ST_U32, 0, NULL, &scalar, &error));
    OK(rt_safetensors_writer_add(w, "empty", RT_ST_F64, 1, zero, NULL, &error));
    OK(rt_safetensors_writer_add(w, "empty2", RT_ST_I8, 2, four_zero, "", &error));
    OK(rt_safetensors_writer_set_metadata(w, "k", "v1", &error));
    OK(rt_safetensors_writer_set_metadata(w, "k", "v2", &error)); /* replaces */
    OK(rt_safetensors_writer_set_metadata(w, "", "", &error));
    EXPECT_NO_ERROR(error);
    OK(rt_safetensors_writer_write(w, path, &error));
    EXPECT_NO_ERROR(error);

    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_ST_N_DTYPES + 3, rt_safetensors_n_tensors(st));
    for (int d = 0; d < RT_ST_N_DTYPES; d++) {
        const rt_st_tensor *t = rt_safetensors_find(st, names[d]);
        OK(t != NULL);
        EXPECT_EQ_INT(d, t->dtype);
        OK(shape_is(t, 3, shapes[d]));
        size_t n = (size_t)(shapes[d][0] * shapes[d][1] * shapes[d][2]) * rt_st_dtype_size((rt_st_dtype)d);
        EXPECT_EQ_INT(n, t->n_bytes);
        OK(memcmp(t->data, payload[d], n) == 0);
        OK((uintptr_t)t->data % rt_st_dtype_size(t->dtype) == 0);
    }
    /* descending alignment in data order: element sizes never grow along the file */
    for (size_t i = 1; i < rt_safetensors_n_tensors(st); i++)
        OK(rt_st_dtype_size(rt_safetensors_tensor_at(st, i)->dtype) <=
           rt_st_dtype_size(rt_safetensors_tensor_at(st, i - 1)->dtype));
    EXPECT_EQ_STR("t.U64", rt_safetensors_tensor_at(st, 0)->name);
    EXPECT_EQ_STR("t.BOOL", rt_safetensors_tensor_at(st, rt_safetensors_n_tensors(st) - 1)->name);
    const rt_st_tensor *t = rt_safetensors_find(st, "scalar");
    OK(t->rank == 0 && t->n_elements == 1 && t->n_bytes == 4 && memcmp(t->data, &scalar, 4) == 0);
    t = rt_safetensors_find(st, "empty");
    OK(t->rank == 1 && t->shape[0] == 0 && t->n_elements == 0 && t->n_bytes == 0);
    t = rt_safetensors_find(st, "empty2");
    OK(shape_is(t, 2, four_zero) && t->n_bytes == 0);
    EXPECT_EQ_STR("v2", rt_safetensors_metadata(st, "k"));
    EXPECT_EQ_STR("", rt_safetensors_metadata(st, ""));
    rt_safetensors_close(st);

    /* F16/BF16 written from converted floats come back as the same floats */
    float src[5] = {1.0f, -0.333251953125f, 65504.0f, 0x1p-24f, 0.0f}, back[5];
    uint16_t half[5], brain[5];
    rt_st_f32_to_f16_n(src, half, 5);
    rt_st_f32_to_bf16_n(src, brain, 5);
    static const int64_t five[] = {5};
    rt_safetensors_writer_free(w);
    w = rt_safetensors_writer_new();
    OK(rt_safetensors_writer_add(w, "h", RT_ST_F16, 1, five, half, &error));
    OK(rt_safetensors_writer_add(w, "b", RT_ST_BF16, 1, five, brain, &error));
    OK(rt_safetensors_writer_write(w, path, &error));
    st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "h"), back, 5, &error));
    OK(memcmp(src, back, sizeof src) == 0);
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "b"), back, 5, &error));
    EXPECT_NEAR(-0.333984375, back[1], 0); /* bf16 keeps 8 bits: -0.33325 rounds to -0.33398 */
    EXPECT_NEAR(65536, back[2], 0);
    rt_safetensors_close(st);

    rt_safetensors_writer_free(w);
    remove_tree(dir);
    g_free(path);
    g_free(dir);
    return 0;
}

DEF_TEST(writer_errors)
{
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    GError *error = NULL;
    static const int64_t s2[] = {2}, negative[] = {2, -1}, huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
    static const int64_t big[] = {INT64_C(1) << 61};
    float data[2] = {1, 2};
    OK(rt_safetensors_writer_add(w, "a", RT_ST_F32, 1, s2, data, &error));
    OK(!rt_safetensors_writer_add(w, "a", RT_ST_F32, 1, s2, data, &error));
    EXPECT_ERROR(error, "tensor 'a' is added twice");
    OK(!rt_safetensors_writer_add(w, "__metadata__", RT_ST_F32, 1, s2, data, &error));
    EXPECT_ERROR(error, "\"__metadata__\" is reserved");
    OK(!rt_safetensors_writer_add(w, "bad\xff", RT_ST_F32, 1, s2, data, &error));
    EXPECT_ERROR(error, "tensor name is not valid UTF-8");
    OK(!rt_safetensors_writer_add(w, "b", RT_ST_N_DTYPES, 1, s2, data, &error));
    EXPECT_ERROR(error, "tensor 'b' has an unknown dtype");
    OK(!rt_safetensors_writer_add(w, "b", RT_ST_F32, 2, negative, data, &error));
    EXPECT_ERROR(error, "tensor 'b': dimension 1 is negative (-1)");
    OK(!rt_safetensors_writer_add(w, "b", RT_ST_F32, 2, huge, data, &error));
    EXPECT_ERROR(error, "tensor 'b': shape [1099511627776, 1099511627776] of F32 is too large");
    OK(!rt_safetensors_writer_add(w, "b", RT_ST_F64, 1, big, data, &error)); /* 2^64 bytes */
    EXPECT_ERROR(error, "of F64 is too large");
    OK(!rt_safetensors_writer_add(w, "b", RT_ST_F32, 1, s2, NULL, &error));
    EXPECT_ERROR(error, "tensor 'b' has 8 bytes but no data");
    OK(!rt_safetensors_writer_set_metadata(w, "k", "\xc3", &error));
    EXPECT_ERROR(error, "metadata key or value is not valid UTF-8 (key 'k')");
    /* the failed calls added nothing */
    char *dir = scratch_dir();
    char *path = g_build_filename(dir, "x.safetensors", NULL);
    OK(rt_safetensors_writer_write(w, path, &error));
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, rt_safetensors_n_tensors(st));
    OK(rt_safetensors_metadata_keys(st)[0] == NULL);
    rt_safetensors_close(st);
    rt_safetensors_writer_free(w);
    remove_tree(dir);
    g_free(path);
    g_free(dir);
    return 0;
}

/* A write that fails part-way leaves the old file as it was and no temporary file behind. */
DEF_TEST(atomic_write)
{
    char *dir = scratch_dir();
    char *path = g_build_filename(dir, "model.safetensors", NULL);
    GError *error = NULL;
    static const int64_t s1[] = {1};
    float old_value = 42.0f;
    rt_safetensors_writer *old = rt_safetensors_writer_new();
    OK(rt_safetensors_writer_add(old, "w", RT_ST_F32, 1, s1, &old_value, &error));
    OK(rt_safetensors_writer_write(old, path, &error));
    char *before = NULL;
    gsize before_size = 0;
    OK(g_file_get_contents(path, &before, &before_size, NULL));

    /* 1. the disk fills up in the middle of the data: simulated with a file-size limit, which
     * binds root too */
    size_t n = 1 << 18;
    float *big = g_new0(float, n);
    int64_t shape[] = {(int64_t)n};
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    OK(rt_safetensors_writer_add(w, "w", RT_ST_F32, 1, shape, big, &error));
    struct rlimit saved;
    OK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    struct rlimit small = saved;
    small.rlim_cur = 64 * 1024;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    OK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    gboolean ok = rt_safetensors_writer_write(w, path, &error);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    OK(!ok);
    OK(error && error->code == RT_ERROR_IO);
    EXPECT_ERROR(error, "model.safetensors: could not write it: File too large");
    OK(file_equals(path, before, before_size));
    EXPECT_EQ_INT(1, count_entries(dir));

    /* 2. the target is a folder: the rename fails after a complete temporary file */
    char *folder = g_build_filename(dir, "taken", NULL);
    char *inside = g_build_filename(folder, "keep", NULL);
    OK(g_mkdir(folder, 0755) == 0);
    OK(g_file_set_contents(inside, "x", 1, NULL));
    OK(!rt_safetensors_writer_write(old, folder, &error));
    EXPECT_ERROR(error, "taken: could not move it into place");
    EXPECT_EQ_INT(2, count_entries(dir));
    EXPECT_EQ_INT(1, count_entries(folder));

    /* 3. the folder does not exist */
    char *nowhere = g_build_filename(dir, "no", "such", "x.safetensors", NULL);
    OK(!rt_safetensors_writer_write(old, nowhere, &error));
    EXPECT_ERROR(error, "x.safetensors: could not create a temporary file in its folder: No such file");

    /* 4. a read-only folder (root may write anyway: then there is nothing to test) */
    char *locked = g_build_filename(dir, "locked", NULL);
    char *locked_file = g_build_filename(locked, "m.safetensors", NULL);
    OK(g_mkdir(locked, 0755) == 0);
    OK(rt_safetensors_writer_write(old, locked_file, &error));
    OK(g_chmod(locked, 0555) == 0);
    if (access(locked, W_OK) == 0) {
        printf("# running as root: the read-only folder case cannot fail, skipped\n");
    } else {
        OK(!rt_safetensors_writer_write(w, locked_file, &error));
        EXPECT_ERROR(error, "could not create a temporary file in its folder: Permission denied");
        OK(file_equals(locked_file, before, before_size));
        EXPECT_EQ_INT(1, count_entries(locked));
    }
    g_chmod(locked, 0755);

    /* and a write that succeeds replaces the file */
    OK(rt_safetensors_writer_write(w, path, &error));
    EXPECT_NO_ERROR(error);
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(n * 4, rt_safetensors_find(st, "w")->n_bytes);
    rt_safetensors_close(st);

    rt_safetensors_writer_free(w);
    rt_safetensors_writer_free(old);
    g_free(big);
    g_free(before);
    remove_tree(dir);
    g_free(locked_file);
    g_free(locked);
    g_free(nowhere);
    g_free(inside);
    g_free(folder);
    g_free(path);
    g_free(dir);
    return 0;
}

/* ---- malformed input -------------------------------------------------------------------- */

#define T1(dtype, shape, offsets) "{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offsets "}"

static const struct {
    const char *header;
    size_t data_size;
    const char *message;
} bad_headers[] = {
    /* not an object */
    {"[1,2]", 0, "the header is an array, not a JSON object"},
    {"\"x\"", 0, "the header is a string, not a JSON object"},
    {"   ", 0, "the header is nothing (the header ends), not a JSON object"},
    {"x", 0, "the header is not a JSON value, not a JSON object"},
    /* JSON syntax */
    {"{\"a\" 1}", 0, "invalid header JSON at byte 5: expected ':' after a key, found '1'"},
    {"{\"a\":" T1("F32", "[1]", "[0,4]") ",}", 4,
     "invalid header JSON at byte 54: expected a string, found '}'"},
    {"{\"a\":" T1("F32", "[1]", "[0,4]") " x", 4, "expected ',' or '}', found 'x'"},
    {"{} x", 0, "unexpected 'x' after the header object (only spaces may follow)"},
    {"{}{}", 0, "unexpected '{' after the header object"},
    {"{/*c*/}", 0, "expected a string, found '/'"},
    {"{'a':1}", 0, "expected a string, found '''"},
    {"{", 0, "expected a string, found the end of the header"},
    {"{\"a", 0, "unterminated string"},
    {"{\"a\tb\":1}", 0, "control character 0x09 inside a string (must be escaped)"},
    {"{\"a\\u0000\":1}", 0, "a string contains \\u0000, which robotrain cannot represent"},
    {"{\"\\ud800\":1}", 0, "high surrogate \\ud800 not followed by a low one"},
    {"{\"\\ud800\\u0041\":1}", 0, "high surrogate \\ud800 followed by \\u0041, not a low surrogate"},
    {"{\"\\udc00\":1}", 0, "lone low surrogate \\udc00"},
    {"{\"\\x\":1}", 0, "invalid escape '\\x' in a string"},
    {"{\"\\u12g4\":1}", 0, "\\u must be followed by 4 hex digits"},
    {"{\"\xff\":1}", 0, "the header is not valid UTF-8 (at header byte 2)"},
    {"{\"\xc0\x80\":1}", 0, "the header is not valid UTF-8"}, /* overlong NUL */
    /* entries */
    {"{\"a\":1}", 0, "tensor 'a': its entry is a number, expected an object with \"dtype\", \"shape\""},
    {"{\"a\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': unknown dtype \"F31\" (known: BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, "
     "U32, F32, F64, I64, U64)"},
    {"{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': unknown dtype \"f32\""},
    {"{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': its \"dtype\" is a number, expected a string such as \"F32\""},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":0}}", 4,
     "tensor 'a': unexpected key \"extra\" (an entry holds only \"dtype\", \"shape\" and \"data_offsets\")"},
    {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'a': key \"dtype\" appears twice"},
    {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'a': its entry has no \"shape\""},
    {"{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': its entry has no \"dtype\""},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'a': its entry has no \"data_offsets\""},
    {"{\"a\":{}}", 0, "tensor 'a': its entry has no \"dtype\""},
    {"{\"a\":" T1("F32", "[1]", "[0,4]") ",\"a\":" T1("F32", "[1]", "[4,8]") "}", 8,
     "tensor 'a' appears twice in the header"},
    /* shapes */
    {"{\"a\":" T1("F32", "5", "[0,4]") "}", 4, "tensor 'a': its \"shape\" is a number, expected an array"},
    {"{\"a\":" T1("F32", "[-1]", "[0,4]") "}", 4,
     "tensor 'a': \"shape\" element 0: invalid header JSON at "
     "byte 29: -1 is negative"},
    {"{\"a\":" T1("F32", "[1.5]", "[0,4]") "}", 4,
     "\"shape\" element 0: invalid header JSON at byte 29: 1.5 is "
     "not an integer"},
    {"{\"a\":" T1("F32", "[1e2]", "[0,4]") "}", 4, "1e2 is not an integer"},
    {"{\"a\":" T1("F32", "[01]", "[0,4]") "}", 4, "numbers must not have leading zeros"},
    {"{\"a\":" T1("F32", "[1.]", "[0,4]") "}", 4, "a digit must follow the decimal point"},
    {"{\"a\":" T1("F32", "[\"2\"]", "[0,4]") "}", 4,
     "tensor 'a': \"shape\" element 0 is a string, expected an integer >= 0"},
    {"{\"a\":" T1("F32", "[null]", "[0,4]") "}", 4, "\"shape\" element 0 is null, expected an integer"},
    {"{\"a\":" T1("F32", "[[1]]", "[0,4]") "}", 4, "\"shape\" element 0 is an array, expected an integer"},
    {"{\"a\":" T1("F32", "[1,]", "[0,4]") "}", 4, "\"shape\" element 1 is not a JSON value"},
    {"{\"a\":" T1("F32", "[1 2]", "[0,4]") "}", 4,
     "tensor 'a': \"shape\": invalid header JSON at byte 31: "
     "expected ',' or ']', found '2'"},
    {"{\"a\":" T1("F32", "[18446744073709551616]", "[0,4]") "}", 4,
     "18446744073709551616 is too large (more than 2^64 - 1)"},
    {"{\"a\":" T1("F32", "[9223372036854775808]", "[0,4]") "}", 4,
     "tensor 'a': \"shape\" element 0 (9223372036854775808) is too large"},
    {"{\"a\":" T1("F32", "[4294967296,4294967296]", "[0,4]") "}", 4,
     "tensor 'a': shape [4294967296, 4294967296] of F32 overflows: its size does not fit in 63 bits"},
    {"{\"a\":" T1("I8", "[3037000500,3037000500]", "[0,4]") "}", 4, "of I8 overflows"},
    {"{\"a\":" T1("F64", "[1152921504606846976]", "[0,8]") "}", 8, "of F64 overflows"},
    /* offsets */
    {"{\"a\":" T1("F32", "[1]", "4") "}", 4,
     "tensor 'a': its \"data_offsets\" is a number, expected an array"},
    {"{\"a\":" T1("F32", "[1]", "[0]") "}", 4,
     "tensor 'a': \"data_offsets\" has 1 element, expected exactly [begin, end]"},
    {"{\"a\":" T1("F32", "[1]", "[]") "}", 4, "\"data_offsets\" has 0 elements"},
    {"{\"a\":" T1("F32", "[1]", "[0,4,8]") "}", 8, "\"data_offsets\" has more than 2 elements"},
    {"{\"a\":" T1("F32", "[1]", "[0,-4]") "}", 4,
     "\"data_offsets\" element 1: invalid header JSON at byte "
     "50: -4 is negative"},
    {"{\"a\":" T1("F32", "[1]", "[0,\"4\"]") "}", 4,
     "\"data_offsets\" element 1 is a string, expected an "
     "integer >= 0"},
    {"{\"a\":" T1("F32", "[1]", "[8,4]") "}", 8, "tensor 'a': data_offsets [8, 4] end before they begin"},
    {"{\"a\":" T1("F32", "[2]", "[0,8]") "}", 4,
     "tensor 'a': data_offsets [0, 8] reach past the end of the data (4 bytes): the file is truncated"},
    {"{\"a\":" T1("F32", "[2]", "[0,18446744073709551615]") "}", 4, "reach past the end of the data"},
    {"{\"a\":" T1("F32", "[2]", "[0,4]") "}", 4,
     "tensor 'a': shape [2] of F32 needs 8 bytes but data_offsets [0, 4] hold 4"},
    {"{\"a\":" T1("F32", "[]", "[0,8]") "}", 8,
     "tensor 'a': shape [] of F32 needs 4 bytes but data_offsets "
     "[0, 8] hold 8"},
    {"{\"a\":" T1("F32", "[2]", "[0,8]") ",\"b\":" T1("F32", "[2]", "[4,12]") "}", 12,
     "tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a' ([0, 8])"},
    {"{\"a\":" T1("F32", "[2]", "[0,8]") ",\"b\":" T1("F32", "[2]", "[0,8]") "}", 8,
     "tensor 'b' (data_offsets [0, 8]) overlaps tensor 'a' ([0, 8])"},
    {"{\"a\":" T1("F32", "[2]", "[0,8]") ",\"e\":" T1("F32", "[0]", "[4,4]") "}", 8,
     "tensor 'e' (data_offsets [4, 4]) overlaps tensor 'a' ([0, 8])"},
    {"{\"a\":" T1("F32", "[1]", "[0,4]") ",\"b\":" T1("F32", "[1]", "[8,12]") "}", 12,
     "data bytes [4, 8) belong to no tensor (a hole before tensor 'b'); safetensors requires the tensors to "
     "cover the data exactly"},
    {"{\"a\":" T1("F32", "[1]", "[4,8]") "}", 8,
     "data bytes [0, 4) belong to no tensor (a hole before tensor 'a')"},
    {"{\"a\":" T1("F32", "[1]", "[0,4]") "}", 8,
     "the last 4 bytes of the data (from offset 4) belong to no tensor: trailing bytes or a damaged header"},
    {"{}", 3, "the last 3 bytes of the data (from offset 0) belong to no tensor"},
    /* metadata */
    {"{\"__metadata__\":{\"k\":1}}", 0,
     "\"__metadata__\" value of \"k\" is a number, expected a string (metadata values must be strings)"},
    {"{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", 0,
     "\"__metadata__\" value of \"k\" is an object, expected a string"},
    {"{\"__metadata__\":{\"k\":null}}", 0, "\"__metadata__\" value of \"k\" is null"},
    {"{\"__metadata__\":\"x\"}", 0, "\"__metadata__\" is a string, expected an object of strings"},
    {"{\"__metadata__\":[]}", 0, "\"__metadata__\" is an array, expected an object of strings"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "\"__metadata__\" appears twice in the header"},
    {"{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "\"__metadata__\" key \"k\" appears twice"},
    {"{\"__metadata__\":{\"k\" \"a\"}}", 0,
     "\"__metadata__\": invalid header JSON at byte 21: expected ':' after "
     "a key, found '\"'"},
    {"{\"__metadata__\":{\"k\":\"a\\q\"}}", 0,
     "\"__metadata__\" value of \"k\": invalid header JSON at byte 24: "
     "invalid escape '\\q'"},
};

static gboolean expect_open_fails(GBytes *bytes, const char *message)
{
    GError *error = NULL;
    rt_safetensors *st = rt_safetensors_open_bytes(bytes, "bad.safetensors", &error);
    gboolean ok = st == NULL && error && error->domain == RT_ERROR && error->code == RT_ERROR_FORMAT &&
                  g_str_has_prefix(error->message, "bad.safetensors: ") && strstr(error->message, message) &&
                  !strstr(error->message + 1, "bad.safetensors"); /* named once */
    RT_TEST_REPORT(ok, "rejected with \"%s\": got \"%s\"", message, error ? error->message : "(accepted)");
    rt_safetensors_close(st);
    g_clear_error(&error);
    return ok;
}

DEF_TEST(malformed_headers)
{
    for (size_t i = 0; i < G_N_ELEMENTS(bad_headers); i++) {
        GBytes *bytes = make_file(bad_headers[i].header, bad_headers[i].data_size);
        gboolean ok = expect_open_fails(bytes, bad_headers[i].message);
        g_bytes_unref(bytes);
        if (!ok)
            return -1;
    }
    return 0;
}

DEF_TEST(malformed_framing)
{
    GBytes *b = g_bytes_new_static("", 0);
    OK(expect_open_fails(b, "the file is 0 bytes long, too short for a safetensors file"));
    g_bytes_unref(b);
    b = g_bytes_new_static("\x02\0\0\0\0", 5);
    OK(expect_open_fails(b, "the file is 5 bytes long"));
    g_bytes_unref(b);
    b = bytes_with_length(0, "");
    OK(expect_open_fails(b, "the header is empty (length 0), expected a JSON object"));
    g_bytes_unref(b);
    b = bytes_with_length(100000001, "{}");
    OK(expect_open_fails(b, "header length 100000001 is over the limit of 100000000 bytes"));
    g_bytes_unref(b);
    b = bytes_with_length(UINT64_MAX, "{}");
    OK(expect_open_fails(b, "header length 18446744073709551615 is over the limit"));
    g_bytes_unref(b);
    b = bytes_with_length(3, "{}");
    OK(expect_open_fails(b,
                         "header length 3 runs past the end of the file (10 bytes): the file is truncated"));
    g_bytes_unref(b);
    /* a NUL byte inside the header */
    b = g_bytes_new_static("\x04\0\0\0\0\0\0\0{\0} ", 12);
    OK(expect_open_fails(b, "the header is not valid UTF-8 (at header byte 1)"));
    g_bytes_unref(b);

    /* deep nesting that crashes recursive parsers is one clean error here */
    size_t depth = 200000;
    GString *deep = g_string_new("{\"a\":");
    for (size_t i = 0; i < depth; i++)
        g_string_append_c(deep, '[');
    for (size_t i = 0; i < depth; i++)
        g_string_append_c(deep, ']');
    g_string_append_c(deep, '}');
    b = make_file(deep->str, 0);
    OK(expect_open_fails(b, "tensor 'a': its entry is an array"));
    g_bytes_unref(b);
    g_string_free(deep, TRUE);

    /* a valid file truncated by one byte */
    char *path = rt_test_srcfile("data/safetensors/reference-layout.safetensors");
    char *contents;
    gsize size;
    OK(g_file_get_contents(path, &contents, &size, NULL));
    b = g_bytes_new(contents, size - 1);
    OK(expect_open_fails(
        b, "tensor 'mask': data_offsets [108, 112] reach past the end of the data (111 bytes)"));
    g_bytes_unref(b);
    g_free(contents);
    g_free(path);
    return 0;
}

DEF_TEST(open_errors)
{
    GError *error = NULL;
    char *dir = scratch_dir();
    char *missing = g_build_filename(dir, "missing.safetensors", NULL);
    OK(rt_safetensors_open(missing, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "cannot open");
    OK(rt_safetensors_open(missing, &error) == NULL);
    EXPECT_ERROR(error, "missing.safetensors: No such file or directory");
    OK(rt_safetensors_open(dir, &error) == NULL);
    EXPECT_ERROR(error, ": it is a folder");
    char *empty = g_build_filename(dir, "empty.safetensors", NULL);
    OK(g_file_set_contents(empty, "", 0, NULL));
    OK(rt_safetensors_open(empty, &error) == NULL);
    OK(error && error->code == RT_ERROR_FORMAT);
    EXPECT_ERROR(error, "empty.safetensors: the file is 0 bytes long");
    OK(rt_safetensors_open("/dev/null", &error) == NULL);
    EXPECT_ERROR(error, "cannot read /dev/null: it is not a regular file");
    remove_tree(dir);
    g_free(empty);
    g_free(missing);
    g_free(dir);
    return 0;
}

/* Random damage to the valid fixtures: every result is either a file whose tensors all lie
 * inside the data, or a clean RT_ERROR naming the file. Under ASan any stray read fails the test.
 * ROBOTRAIN_FUZZ_ITERATIONS and ROBOTRAIN_FUZZ_SEED make longer or other runs. */
static void set_header_length(guint8 *buf, uint64_t n)
{
    for (int i = 0; i < 8; i++)
        buf[i] = (guint8)(n >> (8 * i));
}

DEF_TEST(fuzz)
{
    static const char *const fixtures[] = {"data/safetensors/reference-layout.safetensors",
                                           "data/safetensors/foreign-layout.safetensors"};
    char *original[2];
    gsize size[2];
    for (int f = 0; f < 2; f++) {
        char *path = rt_test_srcfile(fixtures[f]);
        OK(g_file_get_contents(path, &original[f], &size[f], NULL));
        g_free(path);
    }
    const char *env = g_getenv("ROBOTRAIN_FUZZ_ITERATIONS");
    int iterations = env ? atoi(env) : 10000;
    env = g_getenv("ROBOTRAIN_FUZZ_SEED");
    GRand *rng = g_rand_new_with_seed(env ? (guint32)atoi(env) : 20261201);
    static const char json_chars[] = "{}[]\",:-.eE0123456789 \\u";
    int accepted = 0, rejected = 0, bad = 0;
    for (int it = 0; it < iterations && bad == 0; it++) {
        int f = it % 2;
        /* room for insertions */
        guint8 *buf = g_malloc(size[f] + 8);
        memcpy(buf, original[f], size[f]);
        size_t len = size[f];
        size_t header_end = 8 + (size_t)(guint8)original[f][0] + ((size_t)(guint8)original[f][1] << 8);
        int kind = g_rand_int_range(rng, 0, 7);
        int edits = g_rand_int_range(rng, 1, 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)g_rand_int_range(rng, 8, (gint32)header_end);
            switch (kind) {
            case 0: /* flip a bit */
                buf[at] ^= (guint8)(1u << g_rand_int_range(rng, 0, 8));
                break;
            case 1: /* a JSON-significant character */
                buf[at] = (guint8)json_chars[g_rand_int_range(rng, 0, sizeof json_chars - 1)];
                break;
            case 2: /* a digit inside a number (offsets, shapes) */
                if (g_ascii_isdigit(buf[at]))
                    buf[at] = (guint8)('0' + g_rand_int_range(rng, 0, 10));
                else
                    buf[at] = (guint8)g_rand_int_range(rng, 0, 256);
                break;
            case 3: /* the length field */
                buf[g_rand_int_range(rng, 0, 8)] = (guint8)g_rand_int_range(rng, 0, 256);
                break;
            case 4: /* a header byte removed, the length kept consistent */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                header_end--;
                set_header_length(buf, header_end - 8);
                break;
            case 5: /* a JSON character inserted, the length kept consistent */
                if (len < size[f] + 8) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = (guint8)json_chars[g_rand_int_range(rng, 0, sizeof json_chars - 1)];
                    len++;
                    header_end++;
                    set_header_length(buf, header_end - 8);
                }
                break;
            default: /* truncation */
                len = (size_t)g_rand_int_range(rng, 0, (gint32)len);
                break;
            }
        }
        /* exactly len bytes, so that ASan sees any read past the end */
        GBytes *bytes = g_bytes_new_take(g_realloc(buf, MAX(len, 1)), len);
        GError *error = NULL;
        rt_safetensors *st = rt_safetensors_open_bytes(bytes, "fuzz.safetensors", &error);
        if (st) {
            accepted++;
            gsize total;
            const guint8 *base = g_bytes_get_data(bytes, &total);
            unsigned sum = 0;
            for (size_t i = 0; i < rt_safetensors_n_tensors(st); i++) {
                const rt_st_tensor *t = rt_safetensors_tensor_at(st, i);
                const guint8 *p = t->data;
                if (t->n_bytes && (p < base || p + t->n_bytes > base + total))
                    bad++;
                for (size_t j = 0; j < t->n_bytes; j++)
                    sum += p[j];
                bad += rt_safetensors_find(st, t->name) != t;
            }
            for (const char *const *k = rt_safetensors_metadata_keys(st); *k; k++)
                sum += (unsigned)strlen(rt_safetensors_metadata(st, *k));
            (void)sum;
            rt_safetensors_close(st);
        } else {
            rejected++;
            if (!error || error->domain != RT_ERROR ||
                !g_str_has_prefix(error->message, "fuzz.safetensors: ")) {
                printf("# iteration %d: bad error %s\n", it, error ? error->message : "(none)");
                bad++;
            }
            g_clear_error(&error);
        }
        g_bytes_unref(bytes);
    }
    printf("# fuzz: %d mutated files, %d accepted, %d rejected\n", iterations, accepted, rejected);
    EXPECT_EQ_INT(0, bad);
    OK(rejected > iterations / 2);
    OK(accepted > 0); /* some mutations (inside strings and data) keep the file valid */
    g_rand_free(rng);
    g_free(original[0]);
    g_free(original[1]);
    return 0;
}

/* ---- the golden files (written by the project's Python generator) ------------------------- */

typedef struct {
    char *name;
    char *dtype;
    int rank;
    int64_t shape[8];
} manifest_row;

/* Parses the "| `name` | DTYPE | [a, b] |" rows of one file's section of MANIFEST.md. */
static GArray *manifest_rows(const char *manifest, const char *file, char **sha256)
{
    GArray *rows = g_array_new(FALSE, TRUE, sizeof(manifest_row));
    char *heading = g_strdup_printf("## %s\n", file);
    const char *p = strstr(manifest, heading);
    g_free(heading);
    *sha256 = NULL;
    if (!p)
        return rows;
    const char *end = strstr(p + 3, "\n## ");
    char *section = end ? g_strndup(p, (gsize)(end - p)) : g_strdup(p);
    char **lines = g_strsplit(section, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (g_str_has_prefix(*l, "- sha256: `"))
            *sha256 = g_strndup(*l + 11, 64);
        if (!g_str_has_prefix(*l, "| `"))
            continue;
        char **cells = g_strsplit(*l, "|", -1);
        if (g_strv_length(cells) < 5)
            continue;
        manifest_row row = {0};
        char *name = g_strstrip(cells[1]);
        row.name = g_strndup(name + 1, strlen(name) - 2);
        row.dtype = g_strdup(g_strstrip(cells[2]));
        char *shape = g_strstrip(cells[3]);
        shape[strlen(shape) - 1] = '\0';
        char **dims = g_strsplit(shape + 1, ",", -1);
        for (char **d = dims; *d && row.rank < 8; d++)
            if (*g_strstrip(*d))
                row.shape[row.rank++] = g_ascii_strtoll(*d, NULL, 10);
        g_strfreev(dims);
        g_strfreev(cells);
        g_array_append_val(rows, row);
    }
    g_strfreev(lines);
    g_free(section);
    return rows;
}

static int check_against_manifest(const char *manifest, const char *file, size_t expected_count)
{
    char *relative = g_build_filename("golden", file, NULL);
    char *path = rt_test_sharedfile(relative);
    g_free(relative);
    OK(path != NULL);
    char *sha256;
    GArray *rows = manifest_rows(manifest, file, &sha256);
    EXPECT_EQ_INT(expected_count, rows->len);

    GError *error = NULL;
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(rows->len, rt_safetensors_n_tensors(st));
    int mismatches = 0;
    for (guint i = 0; i < rows->len; i++) {
        const manifest_row *row = &g_array_index(rows, manifest_row, i);
        const rt_st_tensor *t = rt_safetensors_tensor_at(st, i); /* the manifest lists data order */
        if (strcmp(t->name, row->name) != 0 || strcmp(rt_st_dtype_name(t->dtype), row->dtype) != 0 ||
            !shape_is(t, row->rank, row->shape)) {
            if (mismatches++ < 5)
                printf("# %s: row %u: manifest says %s %s, file has %s %s\n", file, i, row->name, row->dtype,
                       t->name, rt_st_dtype_name(t->dtype));
        }
    }
    EXPECT_EQ_INT(0, mismatches);

    /* the file is the one the manifest describes */
    char *contents;
    gsize size;
    OK(g_file_get_contents(path, &contents, &size, NULL));
    char *digest = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)contents, size);
    EXPECT_EQ_STR(sha256, digest);
    g_free(digest);
    g_free(contents);

    rt_safetensors_close(st);
    for (guint i = 0; i < rows->len; i++) {
        g_free(g_array_index(rows, manifest_row, i).name);
        g_free(g_array_index(rows, manifest_row, i).dtype);
    }
    g_array_free(rows, TRUE);
    g_free(sha256);
    g_free(path);
    return 0;
}

DEF_TEST(golden_files)
{
    char *path = rt_test_sharedfile("golden/act_small_vae_1cam.safetensors");
    if (!path) {
        printf("# ok - SKIP: the golden files (../shared/golden) are absent in this build\n");
        return 0;
    }
    GError *error = NULL;
    rt_safetensors *st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);

    /* a few rows copied from MANIFEST.md */
    EXPECT_EQ_INT(334, rt_safetensors_n_tensors(st));
    EXPECT_EQ_STR("observation.state", rt_safetensors_tensor_at(st, 0)->name);
    static const int64_t state[] = {4, 6}, image[] = {4, 3, 64, 64}, pad[] = {4, 10}, pos[] = {1, 12, 64};
    static const int64_t in_proj[] = {192, 64}, one[] = {1}, three[] = {3};
    OK(rt_safetensors_expect(st, "observation.state", RT_ST_F32, 2, state, &error));
    OK(rt_safetensors_expect(st, "observation.images.top", RT_ST_F32, 4, image, &error));
    OK(rt_safetensors_expect(st, "model.vae_encoder.layers.0.self_attn.in_proj_weight", RT_ST_F32, 2, in_proj,
                             &error));
    OK(rt_safetensors_expect(st, "loss.total", RT_ST_F32, 1, one, &error));
    OK(rt_safetensors_expect(st, "gradstat.model.backbone.conv1.weight", RT_ST_F64, 1, three, &error));
    EXPECT_NO_ERROR(error);

    /* the data are where the offsets say: values with a known meaning */
    const rt_st_tensor *t = rt_safetensors_expect(st, "action_is_pad", RT_ST_BOOL, 2, pad, &error);
    EXPECT_NO_ERROR(error);
    static const int tail[4] = {0, 3, 0, 7}; /* padded tail steps per sample (README) */
    const guint8 *mask = t->data;
    int wrong = 0;
    for (int b = 0; b < 4; b++)
        for (int s = 0; s < 10; s++)
            wrong += mask[b * 10 + s] != (s >= 10 - tail[b]);
    EXPECT_EQ_INT(0, wrong);

    /* model.vae_encoder_pos_enc: sin/cos table of positions 0..11, D = 64 (README formula) */
    t = rt_safetensors_expect(st, "model.vae_encoder_pos_enc", RT_ST_F32, 3, pos, &error);
    EXPECT_NO_ERROR(error);
    float table[12 * 64];
    OK(rt_safetensors_copy_f32(st, t, table, 12 * 64, &error));
    double worst = 0;
    for (int p = 0; p < 12; p++)
        for (int j = 0; j < 64; j++) {
            double angle = p / pow(10000.0, 2.0 * (j / 2) / 64.0);
            double want = (j % 2) ? cos(angle) : sin(angle);
            worst = fmax(worst, fabs(want - table[p * 64 + j]));
        }
    EXPECT_NEAR(0, worst, 1e-7);

    /* loss.total = l1 + kl_weight * kld, kl_weight 10 */
    float l1, kld, total;
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "loss.l1"), &l1, 1, &error));
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "loss.kld"), &kld, 1, &error));
    OK(rt_safetensors_copy_f32(st, rt_safetensors_find(st, "loss.total"), &total, 1, &error));
    EXPECT_NEAR(l1 + 10.0 * kld, total, 1e-5 * fabs(total) + 1e-6);
    OK(l1 > 0 && kld > 0);

    EXPECT_EQ_STR("act-golden-v1", rt_safetensors_metadata(st, "format"));
    const char *config = rt_safetensors_metadata(st, "config");
    OK(config && strstr(config, "\"chunk_size\": 10") && strstr(config, "\"use_vae\": true"));
    rt_safetensors_close(st);
    g_free(path);

    /* the backbone: I8 codes and a power-of-two scale per kernel */
    path = rt_test_sharedfile("golden/resnet18_backbone_s7.safetensors");
    OK(path != NULL);
    st = rt_safetensors_open(path, &error);
    EXPECT_NO_ERROR(error);
    static const int64_t conv1[] = {64, 3, 7, 7};
    t = rt_safetensors_expect(st, "q8.model.backbone.conv1.weight", RT_ST_I8, 4, conv1, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(9408, t->n_bytes);
    float scale;
    t = rt_safetensors_expect(st, "q8scale.model.backbone.conv1.weight", RT_ST_F32, 1, one, &error);
    OK(t && rt_safetensors_copy_f32(st, t, &scale, 1, &error));
    int exponent;
    OK(scale > 0 && frexpf(scale, &exponent) == 0.5f);
    rt_safetensors_close(st);
    g_free(path);

    /* every row of the manifest, in order, and the files' sha256 */
    char *manifest_path = rt_test_sharedfile("golden/MANIFEST.md");
    OK(manifest_path != NULL);
    char *manifest;
    OK(g_file_get_contents(manifest_path, &manifest, NULL, NULL));
    int rc = check_against_manifest(manifest, "act_small_vae_1cam.safetensors", 334);
    rc = rc ? rc : check_against_manifest(manifest, "act_small_novae_2cam.safetensors", 266);
    rc = rc ? rc : check_against_manifest(manifest, "resnet18_backbone_s7.safetensors", 120);
    g_free(manifest);
    g_free(manifest_path);
    return rc;
}

int main(void)
{
    RUN_TEST(dtype_table);
    RUN_TEST(f16_known_values);
    RUN_TEST(f16_exhaustive);
    RUN_TEST(bf16);
    RUN_TEST(read_reference_layout);
    RUN_TEST(read_foreign_layout);
    RUN_TEST(write_matches_reference_layout);
    RUN_TEST(write_reference_bytes);
    RUN_TEST(round_trip);
    RUN_TEST(writer_errors);
    RUN_TEST(atomic_write);
    RUN_TEST(malformed_headers);
    RUN_TEST(malformed_framing);
    RUN_TEST(open_errors);
    RUN_TEST(fuzz);
    RUN_TEST(golden_files);
    END_TEST;
}
