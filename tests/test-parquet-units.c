/* Unit tests of the Parquet reader on hand-made bytes: the Thrift compact protocol
 * (thrift-compact.h), the level/index run encodings, and the assembly of definition levels
 * into values for a nested struct column. The expected values come from the byte examples
 * in apache/parquet-format's Encodings.md, the Thrift compact protocol specification (field
 * header = delta << 4 | type, zig-zag varints) and the Dremel level rules in the Parquet
 * README (a leaf under k optional nodes has definition levels 0..k). */
#include "config.h"

#include "testing.h"

#include "data/parquet-private.h"
#include "data/thrift-compact.h"
#include "test-parquet-writer.h"

/* ---------------------------------------------------------------- Thrift */

DEF_TEST(thrift_reads_every_type)
{
    /* clang-format off */
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
    /* clang-format on */
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
    /* ten 0xff continuation bytes: more than a 64-bit value can need */
    static const uint8_t overlong_varint[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                              0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
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

static int decode(const uint8_t *bytes, size_t len, int bw, uint32_t *out, int64_t n, const char **why)
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

/* An inline image column as LeRobot writes it (HF datasets' Image feature):
 *   optional group img { optional binary bytes; optional binary path (UTF8) }
 * Rows: {PNG signature, "frame-000000.png"}, null, {null, "x"}. Definition levels count the
 * optional nodes present: 2 = value, 1 = struct present but field null, 0 = struct null. */
DEF_TEST(image_struct_column)
{
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    /* bytes: levels 2, 0, 1 bit-packed at width 2 (0b00_01_00_10 = 0x12), one value */
    uint8_t bytes_page[32] = {3, 0, 0, 0, 0x03, 0x12, 0x00, 8, 0, 0, 0};
    memcpy(bytes_page + 11, png, 8);
    /* path: levels 2, 0, 2 (0b00_10_00_10 = 0x22), two values */
    /* clang-format off */
    static const uint8_t path_page[] = {
        3, 0, 0, 0, 0x03, 0x22, 0x00,
        16, 0, 0, 0, 'f', 'r', 'a', 'm', 'e', '-', '0', '0', '0', '0', '0', '0', '.', 'p', 'n', 'g',
        1, 0, 0, 0, 'x'};
    /* clang-format on */
    page_spec pages[2] = {
        {.type = PAGE_DATA,
         .num_values = 3,
         .encoding = 0,
         .payload = bytes_page,
         .len = 19,
         .uncompressed = -1,
         .compressed = -1,
         .crc = TRUE,
         .crc_value = -1},
        {.type = PAGE_DATA,
         .num_values = 3,
         .encoding = 0,
         .payload = path_page,
         .len = sizeof path_page,
         .uncompressed = -1,
         .compressed = -1,
         .crc_value = -1},
    };
    GByteArray *out = g_byte_array_new();
    g_byte_array_append(out, (const uint8_t *)"PAR1", 4);
    put_page(out, &pages[0]);
    int64_t second = out->len;
    put_page(out, &pages[1]);
    guint footer_start = out->len;
    tw w = {.b = out};
    tw_open(&w);
    tw_i32(&w, 1, 1);
    tw_list(&w, 2, 12, 4);
    put_schema_element(&w, "schema", -1, -1, 1, -1);
    put_schema_element(&w, "img", -1, 1, 2, -1);
    put_schema_element(&w, "bytes", 6, 1, 0, -1);
    put_schema_element(&w, "path", 6, 1, 0, 0);
    tw_i64(&w, 3, 3);
    tw_list(&w, 4, 12, 1);
    tw_open(&w);
    tw_list(&w, 1, 12, 2);
    static const char *const bytes_path[] = {"img", "bytes"}, *const path_path[] = {"img", "path"};
    put_column_chunk(&w, 6, bytes_path, 2, 0, 3, second - 4, 4);
    put_column_chunk(&w, 6, path_path, 2, 0, 3, footer_start - second, second);
    tw_i64(&w, 2, footer_start - 4);
    tw_i64(&w, 3, 3);
    tw_close(&w);
    tw_close(&w);
    put_tail(out, footer_start, 0, NULL);

    GError *error = NULL;
    rt_parquet_file *f = rt_parquet_file_open_bytes(out->data, out->len, "img.parquet", &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(2, rt_parquet_file_num_columns(f));
    EXPECT_EQ_INT(-1, rt_parquet_file_find_column(f, "img")); /* two leaves: ambiguous */
    int cols[2] = {rt_parquet_file_find_column(f, "img.bytes"), rt_parquet_file_find_column(f, "img.path")};
    EXPECT_EQ_INT(0, cols[0]);
    EXPECT_EQ_INT(1, cols[1]);
    const rt_parquet_column *c = rt_parquet_file_column(f, 1);
    EXPECT_EQ_STR("img", c->name);
    EXPECT_EQ_INT(RT_PARQUET_SCALAR, c->shape);
    EXPECT_EQ_INT(2, c->max_definition_level);
    EXPECT_EQ_INT(RT_PARQUET_LOGICAL_STRING, c->logical);
    EXPECT_EQ_INT(RT_PARQUET_LOGICAL_NONE, rt_parquet_file_column(f, 0)->logical);
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, 2, 0, 3, &error);
    EXPECT_NO_ERROR(error);
    const rt_parquet_array *img = &b->arrays[0], *path = &b->arrays[1];
    OK(img->values == NULL && img->valid != NULL);
    EXPECT_EQ_INT(2, img->null_count);
    OK(img->valid[0] && !img->valid[1] && !img->valid[2]);
    EXPECT_EQ_INT(8, img->offsets[1]);
    EXPECT_EQ_INT(8, img->offsets[3]);
    OK(memcmp(img->data, png, 8) == 0);
    EXPECT_EQ_INT(1, path->null_count);
    OK(path->valid[0] && !path->valid[1] && path->valid[2]);
    OK(memcmp(path->data + path->offsets[0], "frame-000000.png", 16) == 0);
    EXPECT_EQ_INT(16, path->offsets[2]);
    EXPECT_EQ_INT(17, path->offsets[3]);
    OK(path->data[16] == 'x');
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    g_byte_array_unref(out);
    return 0;
}

/* Builds a one-row-group file of leaf columns described by (schema elements written by
 * `schema`, one v1 page per leaf). Returns (transfer full) the bytes. */
static GByteArray *build_columns(void (*schema)(tw *w), int n_schema, const char *const *const *paths,
                                 const int *depths, const page_spec *pages, int n_leaves, int64_t rows)
{
    GByteArray *out = g_byte_array_new();
    int64_t offsets[8];
    g_byte_array_append(out, (const uint8_t *)"PAR1", 4);
    for (int i = 0; i < n_leaves; i++) {
        offsets[i] = out->len;
        put_page(out, &pages[i]);
    }
    offsets[n_leaves] = out->len;
    guint footer_start = out->len;
    tw w = {.b = out};
    tw_open(&w);
    tw_i32(&w, 1, 1);
    tw_list(&w, 2, 12, n_schema);
    schema(&w);
    tw_i64(&w, 3, rows);
    tw_list(&w, 4, 12, 1);
    tw_open(&w);
    tw_list(&w, 1, 12, n_leaves);
    for (int i = 0; i < n_leaves; i++)
        put_column_chunk(&w, 1, paths[i], depths[i], 0, pages[i].num_values, offsets[i + 1] - offsets[i],
                         offsets[i]);
    tw_i64(&w, 2, footer_start - 4);
    tw_i64(&w, 3, rows);
    tw_close(&w);
    tw_close(&w);
    put_tail(out, footer_start, 0, NULL);
    return out;
}

static void repeated_schema(tw *w)
{
    put_schema_element(w, "schema", -1, -1, 2, -1);
    put_schema_element(w, "r", 1, 2, 0, -1);     /* repeated int32 r */
    put_schema_element(w, "a", -1, 1, 1, 3);     /* optional group a (LIST) { */
    put_schema_element(w, "array", 1, 2, 0, -1); /* repeated int32 array } */
}

/* Lists without the 3-level LIST structure: a bare repeated field (levels: the list is never
 * null, an entry with def 1 is an element) and a legacy 2-level list (def 0 = null list,
 * 1 = empty, 2 = element). Rows: r = [1, 2], [], [3]; a = [5], null, []. */
DEF_TEST(repeated_fields_without_3_level_lists)
{
    /* r: rep 0,1,0,0 (bit-packed 0b0010), def 1,1,0,1 (0b1011), values 1, 2, 3 */
    static const uint8_t r_page[] = {2, 0, 0, 0, 0x03, 0x02, 2, 0, 0, 0, 0x03, 0x0b,
                                     1, 0, 0, 0, 2,    0,    0, 0, 3, 0, 0,    0};
    /* a: rep 0,0,0 (one RLE run), def 2,0,1 at width 2 (0b01_00_10), value 5 */
    static const uint8_t a_page[] = {2, 0, 0, 0, 0x06, 0x00, 2, 0, 0, 0, 0x03, 0x12, 5, 0, 0, 0};
    page_spec pages[2] = {
        {.type = PAGE_DATA,
         .num_values = 4,
         .payload = r_page,
         .len = sizeof r_page,
         .uncompressed = -1,
         .compressed = -1,
         .crc_value = -1},
        {.type = PAGE_DATA,
         .num_values = 3,
         .payload = a_page,
         .len = sizeof a_page,
         .uncompressed = -1,
         .compressed = -1,
         .crc_value = -1},
    };
    static const char *const r_path[] = {"r"}, *const a_path[] = {"a", "array"};
    static const char *const *const paths[] = {r_path, a_path};
    static const int depths[] = {1, 2};
    GByteArray *bytes = build_columns(repeated_schema, 4, paths, depths, pages, 2, 3);
    GError *error = NULL;
    rt_parquet_file *f = rt_parquet_file_open_bytes(bytes->data, bytes->len, "lists.parquet", &error);
    EXPECT_NO_ERROR(error);
    const rt_parquet_column *r = rt_parquet_file_column(f, 0), *a = rt_parquet_file_column(f, 1);
    EXPECT_EQ_INT(RT_PARQUET_LIST, r->shape);
    OK(!r->nullable && !r->list_nullable);
    EXPECT_EQ_INT(RT_PARQUET_LIST, a->shape);
    OK(!a->nullable && a->list_nullable);
    EXPECT_EQ_INT(2, a->max_definition_level);
    int cols[2] = {0, 1};
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, 2, 0, 3, &error);
    EXPECT_NO_ERROR(error);
    const rt_parquet_array *ra = &b->arrays[0], *aa = &b->arrays[1];
    static const int64_t r_offsets[] = {0, 2, 2, 3};
    for (int i = 0; i < 4; i++)
        EXPECT_EQ_INT(r_offsets[i], ra->list_offsets[i]);
    OK(ra->list_valid == NULL && ra->valid == NULL);
    const int32_t *rv = ra->values;
    OK(rv[0] == 1 && rv[1] == 2 && rv[2] == 3);
    static const int64_t a_offsets[] = {0, 1, 1, 1};
    for (int i = 0; i < 4; i++)
        EXPECT_EQ_INT(a_offsets[i], aa->list_offsets[i]);
    OK(aa->list_valid && aa->list_valid[0] && !aa->list_valid[1] && aa->list_valid[2]);
    EXPECT_EQ_INT(1, aa->null_list_count);
    EXPECT_EQ_INT(5, ((const int32_t *)aa->values)[0]);
    rt_parquet_batch_free(b);
    /* the last row alone: the window starts in the middle of the page */
    b = rt_parquet_file_read(f, cols, 1, 2, 1, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, b->arrays[0].num_values);
    EXPECT_EQ_INT(3, ((const int32_t *)b->arrays[0].values)[0]);
    EXPECT_EQ_INT(1, b->arrays[0].list_size);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    g_byte_array_unref(bytes);
    return 0;
}

int main(void)
{
    RUN_TEST(thrift_reads_every_type);
    RUN_TEST(thrift_rejects_malformed_input);
    RUN_TEST(hybrid_decoder);
    RUN_TEST(bit_packed_levels);
    RUN_TEST(image_struct_column);
    RUN_TEST(repeated_fields_without_3_level_lists);
    END_TEST;
}
