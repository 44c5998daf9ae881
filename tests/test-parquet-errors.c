/* The Parquet reader on malformed and hostile input, built byte by byte here: every error
 * path named in parquet.h (bad magic, truncated or garbled footer, offsets out of range,
 * impossible sizes, decompression failures, CRC mismatches, unsupported features) must give
 * an RT_ERROR whose message starts with the file name and says what is wrong, and never
 * allocate what the file merely claims.
 *
 * The files are one OPTIONAL INT32 column "x" of three rows unless a test says otherwise;
 * tests/test-parquet-writer.h produces their footers and page headers. */
#include "config.h"

#include "testing.h"

#include <glib/gstdio.h>
#include <robotrain/error.h>
#include <zlib.h>

#include "data/parquet.h"
#include "test-parquet-writer.h"

typedef struct {
    int codec;
    int64_t rows;      /* row group rows (3) */
    int64_t file_rows; /* -1: rows */
    int64_t chunk_values;
    int64_t data_page_offset; /* -1: 4 */
    int64_t total_compressed; /* -1: the pages' size */
    int root_children;
    const char *path;
    int chunk_type;
    const page_spec *pages;
    int n_pages;
    const char *tail_magic; /* NULL: PAR1 */
    int64_t footer_len_delta;
} file_spec;

/* Three rows [7, null, 9]: definition levels 1,0,1 (bit-packed), then PLAIN 7 and 9. */
static const uint8_t plain_payload[] = {2, 0, 0, 0, 0x03, 0x05, 7, 0, 0, 0, 9, 0, 0, 0};
static const page_spec plain_page = {.type = PAGE_DATA,
                                     .num_values = 3,
                                     .encoding = 0,
                                     .payload = plain_payload,
                                     .len = sizeof plain_payload,
                                     .uncompressed = -1,
                                     .compressed = -1,
                                     .crc_value = -1};

static file_spec default_spec(void)
{
    file_spec s = {.codec = 0,
                   .rows = 3,
                   .file_rows = -1,
                   .chunk_values = 3,
                   .data_page_offset = -1,
                   .total_compressed = -1,
                   .root_children = 1,
                   .path = "x",
                   .chunk_type = 1,
                   .pages = &plain_page,
                   .n_pages = 1};
    return s;
}

/* Returns (transfer full) the bytes of the file described by s. */
static GByteArray *build_file(const file_spec *s)
{
    GByteArray *out = g_byte_array_new();
    g_byte_array_append(out, (const uint8_t *)"PAR1", 4);
    for (int i = 0; i < s->n_pages; i++)
        put_page(out, &s->pages[i]);
    int64_t pages_len = (int64_t)out->len - 4;
    guint footer_start = out->len;
    tw w = {.b = out};
    tw_open(&w);
    tw_i32(&w, 1, 1);
    tw_list(&w, 2, 12, 2);
    put_schema_element(&w, "schema", -1, -1, s->root_children, -1);
    put_schema_element(&w, "x", 1, 1, 0, -1); /* OPTIONAL INT32 */
    tw_i64(&w, 3, s->file_rows >= 0 ? s->file_rows : s->rows);
    tw_list(&w, 4, 12, 1);
    tw_open(&w);
    tw_list(&w, 1, 12, 1);
    put_column_chunk(&w, s->chunk_type, &s->path, 1, s->codec, s->chunk_values,
                     s->total_compressed >= 0 ? s->total_compressed : pages_len,
                     s->data_page_offset >= 0 ? s->data_page_offset : 4);
    tw_i64(&w, 2, pages_len);
    tw_i64(&w, 3, s->rows);
    tw_close(&w); /* RowGroup */
    tw_list(&w, 5, 12, 2);
    tw_open(&w);
    tw_str(&w, 1, "k");
    tw_str(&w, 2, "v");
    tw_close(&w);
    tw_open(&w);
    tw_str(&w, 1, "novalue");
    tw_close(&w);
    tw_str(&w, 6, "robotrain test-parquet-errors");
    tw_close(&w);
    put_tail(out, footer_start, s->footer_len_delta, s->tail_magic);
    return out;
}

static rt_parquet_file *open_spec(const file_spec *s, GByteArray **keep, GError **error)
{
    *keep = build_file(s);
    return rt_parquet_file_open_bytes((*keep)->data, (*keep)->len, "built.parquet", error);
}

/* Opens and reads the whole column; returns the error (or NULL). */
static GError *open_and_read(const file_spec *s, rt_parquet_batch **out)
{
    GByteArray *bytes;
    GError *error = NULL;
    rt_parquet_file *f = open_spec(s, &bytes, &error);
    rt_parquet_batch *b = NULL;
    if (f) {
        int col = 0;
        b = rt_parquet_file_read(f, &col, 1, 0, rt_parquet_file_num_rows(f), &error);
    }
    if (out)
        *out = b;
    else
        rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    g_byte_array_unref(bytes);
    return error;
}

#define EXPECT_FILE_ERROR(spec, code_, text)                                                                 \
    do {                                                                                                     \
        GError *e_ = open_and_read(&(spec), NULL);                                                           \
        OK1(e_ && e_->domain == RT_ERROR && e_->code == (code_) &&                                           \
                g_str_has_prefix(e_->message, "built.parquet: "),                                            \
            e_ ? e_->message : "no error");                                                                  \
        EXPECT_ERROR(e_, text);                                                                              \
    } while (0)

/* ---------------------------------------------------------------- tests */

DEF_TEST(built_file_reads)
{
    file_spec s = default_spec();
    GByteArray *bytes;
    GError *error = NULL;
    rt_parquet_file *f = open_spec(&s, &bytes, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(3, rt_parquet_file_num_rows(f));
    EXPECT_EQ_STR("robotrain test-parquet-errors", rt_parquet_file_created_by(f));
    EXPECT_EQ_INT(2, rt_parquet_file_num_metadata(f));
    EXPECT_EQ_STR("v", rt_parquet_file_metadata(f, "k"));
    EXPECT_EQ_STR("novalue", rt_parquet_file_metadata_key(f, 1));
    OK(rt_parquet_file_metadata_value(f, 1) == NULL);
    int col = 0;
    rt_parquet_batch *b = rt_parquet_file_read(f, &col, 1, 0, 3, &error);
    EXPECT_NO_ERROR(error);
    const int32_t *v = b->arrays[0].values;
    EXPECT_EQ_INT(7, v[0]);
    EXPECT_EQ_INT(0, v[1]);
    EXPECT_EQ_INT(9, v[2]);
    OK(b->arrays[0].valid && b->arrays[0].valid[0] && !b->arrays[0].valid[1]);
    EXPECT_EQ_INT(1, b->arrays[0].null_count);
    rt_parquet_batch_free(b);

    /* misuse of the API: named, and RT_ERROR_INVALID_ARG */
    col = 7;
    OK(rt_parquet_file_read(f, &col, 1, 0, 3, &error) == NULL);
    OK(error && error->code == RT_ERROR_INVALID_ARG);
    EXPECT_ERROR(error, "built.parquet: column index 7 is out of range (the file has 1 columns)");
    col = 0;
    OK(rt_parquet_file_read(f, &col, 1, 2, 5, &error) == NULL);
    EXPECT_ERROR(error, "rows [2, +5) are outside the file's 3 rows");
    OK(rt_parquet_file_read(f, &col, 1, -1, 1, &error) == NULL);
    EXPECT_ERROR(error, "are outside the file's 3 rows");
    rt_parquet_file_free(f);
    g_byte_array_unref(bytes);

    /* the same bytes through a real file descriptor */
    char *dir = g_dir_make_tmp("test-parquet-XXXXXX", &error);
    EXPECT_NO_ERROR(error);
    char *path = g_build_filename(dir, "x.parquet", NULL);
    bytes = build_file(&s);
    OK(g_file_set_contents(path, (const char *)bytes->data, bytes->len, NULL));
    f = rt_parquet_file_open(path, &error);
    EXPECT_NO_ERROR(error);
    b = rt_parquet_file_read(f, &col, 1, 0, 3, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(9, ((const int32_t *)b->arrays[0].values)[2]);
    /* head, tail, footer, then the one chunk: every byte once, none twice */
    EXPECT_EQ_INT(bytes->len, rt_parquet_file_bytes_read(f));
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    /* a truncated copy on disk: the path leads the message */
    OK(g_file_set_contents(path, (const char *)bytes->data, bytes->len - 3, NULL));
    OK(rt_parquet_file_open(path, &error) == NULL);
    OK(error && g_str_has_prefix(error->message, path));
    EXPECT_ERROR(error, "not a Parquet file, or a truncated one: it does not end with PAR1");
    g_unlink(path);
    OK(rt_parquet_file_open(path, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "x.parquet: cannot open: No such file or directory");
    OK(rt_parquet_file_open(dir, &error) == NULL);
    EXPECT_ERROR(error, "not a regular file");
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    g_byte_array_unref(bytes);
    return 0;
}

DEF_TEST(framing_errors)
{
    GError *error = NULL;
    OK(rt_parquet_file_open_bytes("PAR1PAR1", 8, "tiny.parquet", &error) == NULL);
    OK(error && error->code == RT_ERROR_FORMAT);
    EXPECT_ERROR(error, "tiny.parquet: not a Parquet file: it has 8 bytes, fewer than the 12 of "
                        "an empty one");

    file_spec s = default_spec();
    GByteArray *bytes = build_file(&s);
    bytes->data[1] = 'X';
    OK(rt_parquet_file_open_bytes(bytes->data, bytes->len, "built.parquet", &error) == NULL);
    EXPECT_ERROR(error, "built.parquet: not a Parquet file: it does not start with PAR1");
    g_byte_array_unref(bytes);

    s.tail_magic = "PARE";
    EXPECT_FILE_ERROR(s, RT_ERROR_UNSUPPORTED, "the footer is encrypted (PARE)");
    s = default_spec();
    s.footer_len_delta = 100000;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "does not fit in the file");
    s.footer_len_delta = -10; /* the footer appears to start inside itself */
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "malformed footer:");

    /* garbage where the footer should be */
    s = default_spec();
    bytes = build_file(&s);
    for (guint i = 60; i < bytes->len - 8; i++)
        bytes->data[i] = 0xee;
    OK(rt_parquet_file_open_bytes(bytes->data, bytes->len, "built.parquet", &error) == NULL);
    EXPECT_ERROR(error, "built.parquet: malformed footer: ");
    g_byte_array_unref(bytes);
    return 0;
}

DEF_TEST(schema_and_chunk_metadata_errors)
{
    file_spec s = default_spec();
    s.root_children = 2;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "malformed schema: the schema root declares 2 children but only 1 "
                      "elements follow");
    s = default_spec();
    s.path = "y";
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "row group 0, column 'x': its path_in_schema does not match the schema");
    s = default_spec();
    s.chunk_type = 2;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "its physical type differs from the schema's");
    s = default_spec();
    s.file_rows = 5;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "malformed footer: the file says 5 rows but its row groups hold 3");
    s = default_spec();
    s.chunk_values = 4;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "the column chunk holds 4 values in 31 bytes for 3 rows");
    /* offsets out of range: past the data, inside the magic, sizes past the footer */
    s = default_spec();
    s.data_page_offset = 100000;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "row group 0, column 'x': column chunk bytes [100000, +31) lie outside "
                      "the data area [4, 35)");
    s.data_page_offset = 2;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "column chunk bytes [2, +31) lie outside");
    s = default_spec();
    s.total_compressed = (int64_t)1 << 40;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "column chunk bytes [4, +1099511627776) lie outside");
    s.total_compressed = INT64_MAX;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "lie outside the data area");
    return 0;
}

DEF_TEST(page_errors)
{
    /* a page larger than its chunk */
    page_spec p = plain_page;
    p.compressed = 1000;
    file_spec s = default_spec();
    s.pages = &p;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "row group 0, column 'x': the page at byte 0 of the chunk claims 1000 "
                      "bytes, only 14 remain");
    /* more values in the page than in the chunk */
    p = plain_page;
    p.num_values = 5;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a page holds 5 values, more than the 3 the chunk has left");
    /* fewer: the chunk's pages end early */
    p = plain_page;
    p.num_values = 2;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "the column chunk's pages end after 2 of its 3 values");
    /* uncompressed sizes that disagree */
    p = plain_page;
    p.uncompressed = 99;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "an uncompressed page says 99 bytes uncompressed but holds 14");
    /* definition levels that do not fit their bit width */
    static const uint8_t wide_levels[] = {2, 0, 0, 0, 0x06, 0x02, 7, 0, 0, 0};
    p = plain_page;
    p.payload = wide_levels;
    p.len = sizeof wide_levels;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "definition levels: RLE run value is wider than the bit width");
    /* definition levels whose length runs past the page */
    static const uint8_t long_levels[] = {200, 0, 0, 0, 0x06, 0x01};
    p.payload = long_levels;
    p.len = sizeof long_levels;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "the definition levels claim 200 bytes, the page has 2 left");
    /* two present values but PLAIN data for one */
    static const uint8_t short_values[] = {2, 0, 0, 0, 0x06, 0x01, 7, 0, 0, 0};
    p.payload = short_values;
    p.len = sizeof short_values;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "3 PLAIN values of 4 bytes do not fit in 4 bytes");
    /* a v2 page whose level lengths exceed the page */
    p = plain_page;
    p.type = PAGE_DATA_V2;
    p.v2_def_len = 50;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a v2 page's level lengths (0 + 50) exceed its size (14)");
    /* a v2 page: levels without their length prefix, then the values */
    static const uint8_t v2_payload[] = {0x03, 0x05, 7, 0, 0, 0, 9, 0, 0, 0};
    p.payload = v2_payload;
    p.len = sizeof v2_payload;
    p.v2_def_len = 2;
    rt_parquet_batch *b = NULL;
    GError *v2_error = open_and_read(&s, &b);
    EXPECT_NO_ERROR(v2_error);
    const int32_t *v = b->arrays[0].values;
    OK(v[0] == 7 && v[2] == 9 && b->arrays[0].null_count == 1 && !b->arrays[0].valid[1]);
    rt_parquet_batch_free(b);
    /* ... whose row count must agree with its values (rows are skipped by it) */
    p.v2_rows = 2;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a v2 page says 2 rows for 3 values of a flat column");
    /* an encoding that is no encoding */
    p = plain_page;
    p.encoding = 42;
    EXPECT_FILE_ERROR(s, RT_ERROR_UNSUPPORTED, "values use encoding unknown (42)");
    /* a CRC that does not match: the file is corrupt */
    p = plain_page;
    p.crc = TRUE;
    p.crc_value = 1;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "the page at byte 0 of the chunk fails its CRC check (stored 00000001, "
                      "computed ");
    p.crc_value = -1; /* the right CRC reads */
    GError *e = open_and_read(&s, NULL);
    EXPECT_NO_ERROR(e);
    return 0;
}

DEF_TEST(dictionary_errors)
{
    static const uint8_t dict_values[] = {10, 0, 0, 0, 20, 0, 0, 0};
    /* levels all 1 (RLE run of 3), then index bit width 1 and indices 1, 0, 1 bit-packed */
    static const uint8_t indices[] = {2, 0, 0, 0, 0x06, 0x01, 1, 0x03, 0x05};
    page_spec pages[2] = {
        {.type = PAGE_DICT,
         .num_values = 2,
         .payload = dict_values,
         .len = sizeof dict_values,
         .uncompressed = -1,
         .compressed = -1,
         .crc_value = -1},
        {.type = PAGE_DATA,
         .num_values = 3,
         .encoding = 8,
         .payload = indices,
         .len = sizeof indices,
         .uncompressed = -1,
         .compressed = -1,
         .crc_value = -1},
    };
    file_spec s = default_spec();
    s.pages = pages;
    s.n_pages = 2;
    rt_parquet_batch *b = NULL;
    GError *e = open_and_read(&s, &b);
    EXPECT_NO_ERROR(e);
    const int32_t *v = b->arrays[0].values;
    OK(v[0] == 20 && v[1] == 10 && v[2] == 20 && b->arrays[0].valid == NULL);
    rt_parquet_batch_free(b);

    /* an index past the dictionary's end: bit width 2, RLE run of 3 threes */
    static const uint8_t bad_index[] = {2, 0, 0, 0, 0x06, 0x01, 2, 0x06, 0x03};
    pages[1].payload = bad_index;
    pages[1].len = sizeof bad_index;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "dictionary index 3 is out of range (the dictionary has 2 entries)");
    /* an index bit width above 32 */
    static const uint8_t bad_width[] = {2, 0, 0, 0, 0x06, 0x01, 40, 0x06, 0x03};
    pages[1].payload = bad_width;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "dictionary indices: bit width is above 32");
    /* a dictionary claiming more values than its bytes hold */
    pages[1].payload = indices;
    pages[0].num_values = 1000;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "1000 PLAIN values of 4 bytes do not fit in 8 bytes");
    /* a second dictionary page */
    page_spec three[3] = {pages[0], pages[0], pages[1]};
    three[0].num_values = three[1].num_values = 2;
    s.pages = three;
    s.n_pages = 3;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a dictionary page follows another dictionary page");
    /* dictionary-encoded data without a dictionary */
    s.pages = &pages[1];
    s.n_pages = 1;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a dictionary-encoded page has no dictionary page before it");
    return 0;
}

DEF_TEST(decompression_errors)
{
    static const uint8_t garbage[] = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04};
    page_spec p = plain_page;
    p.payload = garbage;
    p.len = sizeof garbage;
    p.uncompressed = sizeof plain_payload;
    file_spec s = default_spec();
    s.pages = &p;
    s.codec = 1;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "row group 0, column 'x': a SNAPPY page does not decompress: SNAPPY data");
    s.codec = 2;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a GZIP page does not decompress: GZIP data is corrupt");
    s.codec = 6;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "a ZSTD page does not decompress: ZSTD data is corrupt");
    s.codec = 4;
    EXPECT_FILE_ERROR(s, RT_ERROR_UNSUPPORTED,
                      "compression codec BROTLI (4) is not supported (SNAPPY, GZIP, ZSTD and "
                      "UNCOMPRESSED are)");
    s.codec = 77;
    EXPECT_FILE_ERROR(s, RT_ERROR_UNSUPPORTED, "compression codec unknown (77)");

    /* a real GZIP stream whose declared uncompressed size is wrong, both ways */
    uint8_t gz[128];
    uLongf gz_len = sizeof gz;
    OK(compress2(gz, &gz_len, plain_payload, sizeof plain_payload, 9) == Z_OK);
    p.payload = gz;
    p.len = gz_len;
    s.codec = 2;
    p.uncompressed = sizeof plain_payload + 5;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "GZIP data is shorter than the page's uncompressed size");
    p.uncompressed = sizeof plain_payload - 5;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT, "GZIP data is longer than the page's uncompressed size");
    p.uncompressed = sizeof plain_payload;
    rt_parquet_batch *b = NULL;
    GError *e = open_and_read(&s, &b);
    EXPECT_NO_ERROR(e);
    EXPECT_EQ_INT(9, ((const int32_t *)b->arrays[0].values)[2]);
    rt_parquet_batch_free(b);
    return 0;
}

/* A file may claim any number of rows in a few bytes (one RLE run of nulls): the reader
 * refuses to allocate what it cannot afford instead of trying. */
DEF_TEST(impossible_sizes_are_bounded)
{
    const int32_t n = INT32_MAX;
    /* definition levels: one RLE run of n zeros */
    uint8_t levels[16] = {0};
    size_t k = 4;
    uint64_t h = (uint64_t)n << 1;
    while (h >= 0x80) {
        levels[k++] = (uint8_t)((h & 0x7f) | 0x80);
        h >>= 7;
    }
    levels[k++] = (uint8_t)h;
    levels[k++] = 0x00;
    levels[0] = (uint8_t)(k - 4);
    page_spec p = plain_page;
    p.num_values = n;
    p.payload = levels;
    p.len = k;
    file_spec s = default_spec();
    s.pages = &p;
    s.rows = n;
    s.chunk_values = n;
    EXPECT_FILE_ERROR(s, RT_ERROR_FORMAT,
                      "2147483647 values would need more than the limit of 1073741824 bytes");

    GByteArray *bytes;
    GError *error = NULL;
    rt_parquet_file *f = open_spec(&s, &bytes, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(n, rt_parquet_file_num_rows(f));
    int col = 0;
    /* ten rows: but the page's levels alone would take 8 GiB */
    OK(rt_parquet_file_read(f, &col, 1, 0, 10, &error) == NULL);
    EXPECT_ERROR(error, "row group 0, column 'x': definition levels would need 8589934588 bytes, "
                        "more than the limit of 1073741824");
    /* a tighter limit set by the caller */
    rt_parquet_file_set_max_alloc(f, 4096);
    OK(rt_parquet_file_read(f, &col, 1, 0, 2000, &error) == NULL);
    EXPECT_ERROR(error, "2000 values would need more than the limit of 4096 bytes");
    rt_parquet_file_free(f);
    g_byte_array_unref(bytes);
    return 0;
}

/* A long group name above many leaves: each leaf's path repeats it, so a 240 KB footer
 * would expand to 4 GB of path strings; the reader refuses instead. */
DEF_TEST(schema_path_bomb_is_bounded)
{
    const int leaves = 20000;
    GByteArray *out = g_byte_array_new();
    g_byte_array_append(out, (const uint8_t *)"PAR1", 4);
    tw w = {.b = out};
    char *long_name = g_strnfill(100000, 'A');
    tw_open(&w);
    tw_i32(&w, 1, 1);
    tw_list(&w, 2, 12, leaves + 2);
    tw_open(&w);
    tw_str(&w, 4, "schema");
    tw_i32(&w, 5, 1);
    tw_close(&w);
    tw_open(&w);
    tw_i32(&w, 3, 1);
    tw_str(&w, 4, long_name);
    tw_i32(&w, 5, leaves);
    tw_close(&w);
    for (int i = 0; i < leaves; i++) {
        tw_open(&w);
        tw_i32(&w, 1, 1);
        tw_i32(&w, 3, 1);
        tw_str(&w, 4, "b");
        tw_close(&w);
    }
    tw_i64(&w, 3, 0);
    tw_list(&w, 4, 12, 0);
    tw_close(&w);
    uint32_t footer_len = out->len - 4;
    uint8_t tail[8] = {footer_len & 0xff,
                       footer_len >> 8 & 0xff,
                       footer_len >> 16 & 0xff,
                       footer_len >> 24,
                       'P',
                       'A',
                       'R',
                       '1'};
    g_byte_array_append(out, tail, 8);
    GError *error = NULL;
    OK(rt_parquet_file_open_bytes(out->data, out->len, "bomb.parquet", &error) == NULL);
    EXPECT_ERROR(error, "bomb.parquet: malformed schema: its column paths would take more than");
    g_byte_array_unref(out);
    g_free(long_name);
    return 0;
}

int main(void)
{
    RUN_TEST(built_file_reads);
    RUN_TEST(framing_errors);
    RUN_TEST(schema_and_chunk_metadata_errors);
    RUN_TEST(page_errors);
    RUN_TEST(dictionary_errors);
    RUN_TEST(decompression_errors);
    RUN_TEST(impossible_sizes_are_bounded);
    RUN_TEST(schema_path_bomb_is_bounded);
    END_TEST;
}
