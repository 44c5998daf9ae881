/* libFuzzer target for the Parquet reader (src/data/parquet.h): any byte string is opened as
 * a Parquet file; when it opens, every metadata string is touched and every readable column
 * is read whole, as a window and per row group. The reader must return an error or data,
 * never crash, read out of bounds, leak, or allocate more than its limit.
 *
 * Built and run by tests/fuzz/run-parquet-fuzz.sh (clang -fsanitize=fuzzer,address,undefined);
 * not part of `make` or `make check`. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "data/parquet.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t touch(const char *s)
{
    return s ? strlen(s) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    rt_parquet_file *f = rt_parquet_file_open_bytes(data, size, "fuzz.parquet", &error);
    if (!f) {
        g_clear_error(&error);
        return 0;
    }
    /* a hostile file may claim anything: keep what it can make us allocate small */
    rt_parquet_file_set_max_alloc(f, 16u << 20);
    size_t sum = touch(rt_parquet_file_created_by(f));
    for (int i = 0; i < rt_parquet_file_num_metadata(f); i++)
        sum += touch(rt_parquet_file_metadata_key(f, i)) + touch(rt_parquet_file_metadata_value(f, i));
    int n = rt_parquet_file_num_columns(f), k = 0;
    int *cols = g_new(int, n ? n : 1);
    for (int i = 0; i < n; i++) {
        const rt_parquet_column *c = rt_parquet_file_column(f, i);
        sum += touch(c->path) + touch(c->name);
        if (c->shape != RT_PARQUET_NESTED)
            cols[k++] = i;
    }
    int64_t rows = rt_parquet_file_num_rows(f);
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, k, 0, rows, &error);
    g_clear_error(&error);
    rt_parquet_batch_free(b);
    b = rt_parquet_file_read(f, cols, k, rows / 3, rows / 3, &error);
    g_clear_error(&error);
    rt_parquet_batch_free(b);
    for (int g = 0; g < rt_parquet_file_num_row_groups(f) && g < 8; g++) {
        b = rt_parquet_file_read_row_group(f, g, cols, k, &error);
        g_clear_error(&error);
        rt_parquet_batch_free(b);
    }
    g_free(cols);
    rt_parquet_file_free(f);
    return sum == (size_t)-1; /* keeps the touches */
}
