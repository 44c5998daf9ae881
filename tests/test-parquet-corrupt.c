/* Corrupted copies of every Parquet fixture: truncated at many points, with the data area
 * cut short under an intact footer, with the footer cut short, and with bytes flipped all
 * over the file. Every outcome must be a successful read or an RT_ERROR whose message starts
 * with the file's name; run under AddressSanitizer or valgrind, nothing may be touched out of
 * bounds or leaked. A few corruptions have one right answer, asserted exactly. */
#include "config.h"

#include "testing.h"

#include <robotrain/error.h>

#include "data/parquet.h"

static const char *const fixtures[] = {
    "tiny-v3/data-file-000.parquet",
    "tiny-v3/data-zstd-pagev2.parquet",
    "tiny-v3/data-plain-uncompressed.parquet",
    "tiny-v3/data-duckdb.parquet",
    "tiny-v3/tasks.parquet",
    "tiny-v3/episodes-file-000.parquet",
    "real-v2.1/episode_000029.parquet",
    "parquet-testing/alltypes_dictionary.parquet",
    "parquet-testing/alltypes_plain.parquet",
    "parquet-testing/alltypes_plain.snappy.parquet",
    "parquet-testing/byte_stream_split.zstd.parquet",
    "parquet-testing/concatenated_gzip_members.parquet",
    "parquet-testing/datapage_v1-snappy-compressed-checksum.parquet",
    "parquet-testing/datapage_v2.snappy.parquet",
    "parquet-testing/datapage_v2_empty_datapage.snappy.parquet",
    "parquet-testing/delta_length_byte_array.parquet",
    "parquet-testing/dict-page-offset-zero.parquet",
    "parquet-testing/int32_with_null_pages.parquet",
    "parquet-testing/list_columns.parquet",
    "parquet-testing/nan_in_stats.parquet",
    "parquet-testing/nested_lists.snappy.parquet",
    "parquet-testing/null_list.parquet",
    "parquet-testing/nulls.snappy.parquet",
    "parquet-testing/old_list_structure.parquet",
    "parquet-testing/page_v2_empty_compressed.parquet",
    "parquet-testing/plain-dict-uncompressed-checksum.parquet",
    "parquet-testing/rle-dict-snappy-checksum.parquet",
    "parquet-testing/single_nan.parquet",
    "parquet-testing/sort_columns.parquet",
};

typedef struct {
    int opened, read_ok, failed, bad;
} outcome;

/* TRUE when err is a well-formed error about `name`. */
static gboolean clean_error(const GError *err, const char *name)
{
    size_t n = strlen(name);
    return err && err->domain == RT_ERROR && strncmp(err->message, name, n) == 0 &&
           strncmp(err->message + n, ": ", 2) == 0 && strlen(err->message) > n + 12;
}

/* Opens bytes as `name` and reads every readable column, whole and as a window; tallies the
 * outcome, printing the first bad one. */
static void try_bytes(const uint8_t *data, size_t len, const char *name, outcome *o)
{
    GError *err = NULL;
    rt_parquet_file *f = rt_parquet_file_open_bytes(data, len, name, &err);
    if (!f) {
        if (clean_error(err, name)) {
            o->failed++;
        } else if (o->bad++ == 0) {
            printf("# bad open error: %s\n", err ? err->message : "(none)");
        }
        g_clear_error(&err);
        return;
    }
    o->opened++;
    /* what a hostile file can make us allocate stays small */
    rt_parquet_file_set_max_alloc(f, 64 << 20);
    int n = rt_parquet_file_num_columns(f), cols[128], k = 0;
    for (int i = 0; i < n && k < 128; i++)
        if (rt_parquet_file_column(f, i)->shape != RT_PARQUET_NESTED)
            cols[k++] = i;
    int64_t rows = rt_parquet_file_num_rows(f);
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, k, 0, rows, &err);
    if (b) {
        o->read_ok++;
        rt_parquet_batch_free(b);
        b = rt_parquet_file_read(f, cols, k, rows / 2, rows - rows / 2, &err);
        rt_parquet_batch_free(b);
    }
    if (err) {
        if (clean_error(err, name))
            o->failed++;
        else if (o->bad++ == 0)
            printf("# bad read error: %s\n", err->message);
        g_clear_error(&err);
    }
    rt_parquet_file_free(f);
}

static uint8_t *load(const char *rel, size_t *len)
{
    char *rel_path = g_strconcat("data/parquet/", rel, NULL);
    char *path = rt_test_srcfile(rel_path);
    char *data = NULL;
    gsize n = 0;
    if (!g_file_get_contents(path, &data, &n, NULL))
        data = NULL;
    g_free(path);
    g_free(rel_path);
    *len = n;
    return (uint8_t *)data;
}

static uint8_t *dup_bytes(const uint8_t *data, size_t len)
{
    uint8_t *copy = g_malloc(len);
    memcpy(copy, data, len);
    return copy;
}

static size_t data_end_of(const uint8_t *data, size_t len)
{
    uint32_t footer = (uint32_t)data[len - 8] | (uint32_t)data[len - 7] << 8 | (uint32_t)data[len - 6] << 16 |
                      (uint32_t)data[len - 5] << 24;
    return len - 8 - footer;
}

/* Under valgrind everything is ~50x slower: try fewer corruptions there. */
static int density(void)
{
    const char *v = g_getenv("VALGRIND");
    return v && *v ? 40 : 400;
}

DEF_TEST(corruptions_have_one_answer)
{
    for (size_t i = 0; i < G_N_ELEMENTS(fixtures); i++) {
        size_t len;
        uint8_t *data = load(fixtures[i], &len);
        OK1(data != NULL, fixtures[i]);
        const char *name = fixtures[i];
        GError *err = NULL;
        uint8_t *copy = dup_bytes(data, len);

        OK(rt_parquet_file_open_bytes(data, len - 1, name, &err) == NULL);
        OK1(clean_error(err, name), name);
        EXPECT_ERROR(err, "not a Parquet file, or a truncated one: it does not end with PAR1");
        OK(rt_parquet_file_open_bytes(data, 11, name, &err) == NULL);
        EXPECT_ERROR(err, "not a Parquet file: it has 11 bytes, fewer than the 12");
        copy[0] ^= 0xff;
        OK(rt_parquet_file_open_bytes(copy, len, name, &err) == NULL);
        EXPECT_ERROR(err, "not a Parquet file: it does not start with PAR1");
        copy[0] = data[0];
        copy[len - 5] ^= 0x80; /* the footer length's top byte */
        OK(rt_parquet_file_open_bytes(copy, len, name, &err) == NULL);
        EXPECT_ERROR(err, "does not fit in the file");
        g_free(copy);
        g_free(data);
    }
    /* a byte inside the first page of column a of a CRC-protected file (the page's header
     * takes bytes 4..25, its 734 bytes of payload follow) */
    size_t len;
    uint8_t *data = load("parquet-testing/datapage_v1-snappy-compressed-checksum.parquet", &len);
    OK(data != NULL);
    data[200] ^= 0x01;
    GError *err = NULL;
    rt_parquet_file *f = rt_parquet_file_open_bytes(data, len, "crc.parquet", &err);
    EXPECT_NO_ERROR(err);
    int col = 0;
    OK(rt_parquet_file_read(f, &col, 1, 0, 5120, &err) == NULL);
    EXPECT_ERROR(err, "crc.parquet: row group 0, column 'a': the page at byte 0 of the chunk "
                      "fails its CRC check (stored fd7a33d0, computed ");
    col = 1; /* the other column is intact */
    rt_parquet_batch *b = rt_parquet_file_read(f, &col, 1, 0, 5120, &err);
    EXPECT_NO_ERROR(err);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    g_free(data);
    return 0;
}

DEF_TEST(truncated_copies)
{
    for (size_t i = 0; i < G_N_ELEMENTS(fixtures); i++) {
        size_t len;
        uint8_t *data = load(fixtures[i], &len);
        OK1(data != NULL, fixtures[i]);
        outcome o = {0};
        size_t step = MAX(1, len / (size_t)density());
        for (size_t cut = 0; cut < len; cut += step)
            try_bytes(data, cut, fixtures[i], &o);
        for (size_t cut = len > 64 ? len - 64 : 0; cut < len; cut++)
            try_bytes(data, cut, fixtures[i], &o);
        EXPECT_EQ_INT(0, o.bad);
        EXPECT_EQ_INT(0, o.opened); /* no truncated file is taken for a whole one */

        /* the data area cut short, the footer kept: offsets now point past the data */
        size_t end = data_end_of(data, len), tail = len - end;
        outcome od = {0};
        uint8_t *buf = g_malloc(len);
        for (size_t cut = 4; cut < end; cut += MAX(1, end / (size_t)density())) {
            memcpy(buf, data, cut);
            memcpy(buf + cut, data + end, tail);
            try_bytes(buf, cut + tail, fixtures[i], &od);
        }
        EXPECT_EQ_INT(0, od.bad);
        OK1(od.failed > 0, fixtures[i]);

        /* the footer cut short, its length and magic rewritten */
        outcome of = {0};
        size_t footer = tail - 8;
        for (size_t k = 0; k < footer; k += MAX(1, footer / (size_t)density())) {
            memcpy(buf, data, end + k);
            buf[end + k] = (uint8_t)k;
            buf[end + k + 1] = (uint8_t)(k >> 8);
            buf[end + k + 2] = (uint8_t)(k >> 16);
            buf[end + k + 3] = (uint8_t)(k >> 24);
            memcpy(buf + end + k + 4, "PAR1", 4);
            try_bytes(buf, end + k + 8, fixtures[i], &of);
        }
        EXPECT_EQ_INT(0, of.bad);
        EXPECT_EQ_INT(0, of.opened);
        g_free(buf);
        g_free(data);
    }
    return 0;
}

DEF_TEST(flipped_bytes)
{
    static const uint8_t patterns[] = {0xff, 0x01, 0x80, 0x10, 0x7f};
    for (size_t i = 0; i < G_N_ELEMENTS(fixtures); i++) {
        size_t len;
        uint8_t *data = load(fixtures[i], &len);
        OK1(data != NULL, fixtures[i]);
        uint8_t *copy = dup_bytes(data, len);
        outcome o = {0};
        size_t end = data_end_of(data, len);
        /* everywhere, and densely in the footer, where one byte changes the most */
        size_t step = MAX(1, len / (size_t)density());
        size_t fstep = MAX(1, (len - end) / (size_t)density());
        int n = 0;
        for (size_t pos = 0; pos < len; pos += pos >= end ? fstep : step, n++) {
            copy[pos] ^= patterns[n % G_N_ELEMENTS(patterns)];
            try_bytes(copy, len, fixtures[i], &o);
            copy[pos] = data[pos];
        }
        OK1(o.bad == 0, fixtures[i]);
        OK1(o.failed > 0, fixtures[i]);
        printf("# %s: %d corruptions: %d read, %d refused\n", fixtures[i], n, o.read_ok, o.failed);
        g_free(copy);
        g_free(data);
    }
    return 0;
}

int main(void)
{
    RUN_TEST(corruptions_have_one_answer);
    RUN_TEST(truncated_copies);
    RUN_TEST(flipped_bytes);
    END_TEST;
}
