/* Unit tests of the Parquet reader's decoders on hand-made bytes: the Thrift compact protocol
 * (thrift-compact.h) and the level/index run encodings. The expected values come from the
 * byte examples in apache/parquet-format's Encodings.md and the Thrift compact protocol
 * specification (field header = delta << 4 | type, zig-zag varints). */
#include "config.h"

#include "testing.h"

#include "data/parquet-private.h"
#include "data/thrift-compact.h"

/* ---------------------------------------------------------------- Thrift */

DEF_TEST(thrift_reads_every_type)
{
    static const uint8_t bytes[] = {
        0x15, 0x05,                   /* 1: i32 -3 */
        0x11,                         /* 2: bool true */
        0x06, 0xc8, 0x01, 0xd8, 0x04, /* 100 (long form): i64 300 */
        0x18, 0x02, 'h', 'i',         /* 101: binary "hi" */
        0x19, 0x35, 0x02, 0x04, 0x06, /* 102: list<i32> [1, 2, 3] */
        0x1c,                         /* 103: struct { */
        0x17, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, /*   1: double 1.5 */
        0x00,                         /* } */
        0x1b, 0x01, 0x51, 0x02, 0x01, /* 104: map<i32, bool> {1: true} */
        0x12,                         /* 105: bool false */
        0x00,
    };
    rt_thrift_reader r;
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_init(&r, bytes, sizeof bytes);
    rt_thrift_struct_begin(&r);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(1, id);
    EXPECT_EQ_INT(RT_THRIFT_I32, t);
    EXPECT_EQ_INT(-3, rt_thrift_read_i32(&r));
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(2, id);
    EXPECT_EQ_INT(RT_THRIFT_TRUE, t);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(100, id);
    EXPECT_EQ_INT(300, rt_thrift_read_i64(&r));
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(101, id);
    size_t len;
    const uint8_t *s = rt_thrift_read_binary(&r, &len);
    OK(s && len == 2 && memcmp(s, "hi", 2) == 0);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(102, id);
    rt_thrift_type et;
    EXPECT_EQ_INT(3, rt_thrift_read_list_header(&r, &et));
    EXPECT_EQ_INT(RT_THRIFT_I32, et);
    for (int i = 1; i <= 3; i++)
        EXPECT_EQ_INT(i, rt_thrift_read_i32(&r));
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(103, id);
    rt_thrift_struct_begin(&r);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(1, id); /* field ids restart inside a nested struct */
    EXPECT_NEAR(1.5, rt_thrift_read_double(&r), 0);
    OK(!rt_thrift_next_field(&r, &id, &t));
    rt_thrift_struct_end(&r);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(104, id); /* ... and continue from the outer struct's last id after it */
    rt_thrift_skip(&r, t);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(105, id);
    EXPECT_EQ_INT(RT_THRIFT_FALSE, t);
    OK(!rt_thrift_next_field(&r, &id, &t));
    rt_thrift_struct_end(&r);
    OK(!rt_thrift_failed(&r));
    EXPECT_EQ_INT(sizeof bytes, rt_thrift_consumed(&r));

    /* skipping the whole struct consumes exactly the same bytes */
    rt_thrift_init(&r, bytes, sizeof bytes);
    rt_thrift_skip(&r, RT_THRIFT_STRUCT);
    OK(!rt_thrift_failed(&r));
    EXPECT_EQ_INT(sizeof bytes, rt_thrift_consumed(&r));
    return 0;
}

static const char *skip_error(const uint8_t *bytes, size_t len)
{
    static rt_thrift_reader r;
    rt_thrift_init(&r, bytes, len);
    rt_thrift_skip(&r, RT_THRIFT_STRUCT);
    return rt_thrift_failed(&r) ? rt_thrift_error(&r) : "(no error)";
}

DEF_TEST(thrift_rejects_malformed_input)
{
    static const uint8_t truncated_varint[] = {0x15, 0x80};
    EXPECT_EQ_STR("truncated or overlong varint", skip_error(truncated_varint, 2));
    static const uint8_t overlong_varint[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff,
                                              0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
    EXPECT_EQ_STR("truncated or overlong varint", skip_error(overlong_varint, 13));
    static const uint8_t i32_range[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00};
    rt_thrift_reader r;
    int16_t id;
    rt_thrift_type t;
    rt_thrift_init(&r, i32_range, sizeof i32_range);
    rt_thrift_struct_begin(&r);
    OK(rt_thrift_next_field(&r, &id, &t));
    (void)rt_thrift_read_i32(&r);
    EXPECT_EQ_STR("i32 out of range", rt_thrift_error(&r));
    static const uint8_t long_list[] = {0x19, 0xf5, 0x64, 0x02, 0x00}; /* 100 elements */
    EXPECT_EQ_STR("list longer than its bytes", skip_error(long_list, 5));
    static const uint8_t long_binary[] = {0x18, 0x10, 'a', 0x00};
    EXPECT_EQ_STR("binary field runs past the end", skip_error(long_binary, 4));
    static const uint8_t bad_type[] = {0x1d, 0x00};
    EXPECT_EQ_STR("unknown Thrift field type", skip_error(bad_type, 2));
    static const uint8_t no_stop[] = {0x15, 0x02};
    EXPECT_EQ_STR("struct runs past the end of its bytes", skip_error(no_stop, 2));
    static const uint8_t bad_map[] = {0x1b, 0x01, 0xd5, 0x00};
    EXPECT_EQ_STR("unknown map element type", skip_error(bad_map, 4));
    /* a struct nested 200 deep is refused, not recursed into */
    uint8_t deep[201];
    memset(deep, 0x1c, 200);
    deep[200] = 0x00;
    EXPECT_EQ_STR("structs nested too deeply", skip_error(deep, sizeof deep));
    /* lists nested 200 deep likewise */
    uint8_t deep_list[202];
    deep_list[0] = 0x19;
    memset(deep_list + 1, 0x19, 200); /* each: one element of type list */
    deep_list[201] = 0x00;
    EXPECT_EQ_STR("values nested too deeply", skip_error(deep_list, sizeof deep_list));
    /* an error is sticky: later reads return zeros */
    rt_thrift_init(&r, truncated_varint, 2);
    rt_thrift_struct_begin(&r);
    OK(rt_thrift_next_field(&r, &id, &t));
    EXPECT_EQ_INT(0, rt_thrift_read_i32(&r));
    OK(rt_thrift_failed(&r));
    EXPECT_EQ_INT(0, rt_thrift_read_i64(&r));
    OK(!rt_thrift_next_field(&r, &id, &t));
    return 0;
}

/* ---------------------------------------------------------------- run encodings */

static int decode(const uint8_t *bytes, size_t len, int bw, uint32_t *out, int64_t n,
                  const char **why)
{
    const uint8_t *p = bytes;
    *why = "(no error)";
    if (!rt_parquet_decode_hybrid(&p, bytes + len, bw, out, n, why))
        return -1;
    return (int)(p - bytes);
}

DEF_TEST(hybrid_decoder)
{
    uint32_t out[64];
    const char *why;
    /* Encodings.md: 0..7 with bit width 3, bit-packed, is 10001000 11000110 11111010 */
    static const uint8_t packed[] = {0x03, 0x88, 0xc6, 0xfa};
    EXPECT_EQ_INT(4, decode(packed, 4, 3, out, 8, &why));
    for (uint32_t i = 0; i < 8; i++)
        EXPECT_EQ_INT(i, out[i]);
    /* fewer values than the run holds: the run is still consumed whole */
    EXPECT_EQ_INT(4, decode(packed, 4, 3, out, 5, &why));
    EXPECT_EQ_INT(4, out[4]);
    /* an RLE run of 12 fives, then a bit-packed run; bit width 9 takes two value bytes */
    static const uint8_t mixed[] = {0x18, 0x05, 0x01, 0x03, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ_INT(13, decode(mixed, sizeof mixed, 9, out, 20, &why));
    EXPECT_EQ_INT(261, out[0]); /* 0x0105 */
    EXPECT_EQ_INT(261, out[11]);
    EXPECT_EQ_INT(511, out[12]);
    EXPECT_EQ_INT(0, out[13]);
    /* bit width 0: all zeros from a run header alone */
    static const uint8_t zeros[] = {0x40};
    EXPECT_EQ_INT(1, decode(zeros, 1, 0, out, 32, &why));
    EXPECT_EQ_INT(0, out[31]);
    /* 32-bit values */
    static const uint8_t wide[] = {0x02, 0x78, 0x56, 0x34, 0x12};
    EXPECT_EQ_INT(5, decode(wide, 5, 32, out, 1, &why));
    EXPECT_EQ_INT(0x12345678, out[0]);
    /* a last bit-packed run that stops short of its padding is accepted */
    static const uint8_t short_tail[] = {0x03, 0x88};
    EXPECT_EQ_INT(2, decode(short_tail, 2, 3, out, 2, &why));
    EXPECT_EQ_INT(1, out[1]);

    EXPECT_EQ_INT(-1, decode(short_tail, 2, 3, out, 8, &why));
    EXPECT_EQ_STR("bit-packed run runs past the end of its bytes", why);
    EXPECT_EQ_INT(-1, decode(packed, 4, 3, out, 9, &why));
    EXPECT_EQ_STR("runs end before all values are decoded", why);
    static const uint8_t too_wide[] = {0x02, 0x07};
    EXPECT_EQ_INT(-1, decode(too_wide, 2, 2, out, 1, &why));
    EXPECT_EQ_STR("RLE run value is wider than the bit width", why);
    static const uint8_t no_value[] = {0x02, 0x07};
    EXPECT_EQ_INT(-1, decode(no_value, 2, 9, out, 1, &why));
    EXPECT_EQ_STR("RLE run value runs past the end of its bytes", why);
    EXPECT_EQ_INT(-1, decode(packed, 4, 33, out, 1, &why));
    EXPECT_EQ_STR("bit width is above 32", why);
    static const uint8_t huge_run[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    EXPECT_EQ_INT(-1, decode(huge_run, 5, 1, out, 64, &why));
    EXPECT_EQ_STR("bit-packed run is longer than 2^31 values", why);
    return 0;
}

DEF_TEST(bit_packed_levels)
{
    /* Encodings.md: 0..7 with bit width 3, deprecated MSB-first packing: 00000101 00111001
     * 01110111 */
    static const uint8_t bytes[] = {0x05, 0x39, 0x77};
    uint32_t out[8];
    const uint8_t *p = bytes;
    const char *why = NULL;
    OK(rt_parquet_decode_bit_packed(&p, bytes + 3, 3, out, 8, &why));
    EXPECT_EQ_INT(3, p - bytes);
    for (uint32_t i = 0; i < 8; i++)
        EXPECT_EQ_INT(i, out[i]);
    p = bytes;
    OK(!rt_parquet_decode_bit_packed(&p, bytes + 2, 3, out, 8, &why));
    EXPECT_EQ_STR("BIT_PACKED levels run past the end of their bytes", why);
    return 0;
}

int main(void)
{
    RUN_TEST(thrift_reads_every_type);
    RUN_TEST(thrift_rejects_malformed_input);
    RUN_TEST(hybrid_decoder);
    RUN_TEST(bit_packed_levels);
    END_TEST;
}
