/* parquet.h: a small, strict Parquet reader for the files LeRobot datasets are made of.
 *
 * What it reads (see ../shared/spec/dataset.md §9 for why this subset):
 *   - the footer and page headers (Thrift compact protocol), key/value metadata, created_by;
 *   - flat columns (REQUIRED or OPTIONAL leaves, also inside optional structs such as the
 *     {bytes, path} struct of inline images) and columns with one repeated level: the 3-level
 *     LIST of LeRobot's fixed-size float vectors, legacy 2-level lists and bare repeated
 *     fields;
 *   - physical types BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY (strings and binary),
 *     FIXED_LEN_BYTE_ARRAY and INT96 (as raw bytes);
 *   - encodings PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY (with a switch to PLAIN pages inside a
 *     chunk), RLE for booleans, BYTE_STREAM_SPLIT; RLE/bit-packed and BIT_PACKED levels;
 *   - data pages v1 and v2, dictionary pages, page CRCs (checked when present);
 *   - codecs UNCOMPRESSED, SNAPPY, GZIP (also several concatenated members) and ZSTD;
 *   - any number of row groups, read whole or as a row range, one column at a time or any
 *     projection of columns (other column chunks are never read or decompressed);
 *   - from the `ARROW:schema` metadata, the length of FixedSizeList columns.
 * What it does not read (an RT_ERROR_UNSUPPORTED error names the column and the feature):
 *   columns with two or more repeated levels (lists of lists, maps of lists), DELTA_*
 *   encodings, BROTLI/LZ4/LZO codecs, encryption, column data in other files.
 * What it ignores: statistics, page indexes, bloom filters, sorting columns, column orders.
 * It does not convert logical types: INT96, DECIMAL, FLOAT16... come back as stored.
 *
 * Strictness: the file is untrusted input. Every offset and size is checked against the file
 * and the column chunk before it is used, every allocation is bounded by the file's size or by
 * rt_parquet_file_set_max_alloc() (1 GiB by default), and every malformed input is a GError in
 * RT_ERROR (RT_ERROR_FORMAT for malformed data, RT_ERROR_IO for failed reads) whose message
 * starts with the file's path and names the row group and column where one applies.
 *
 * Typical use:
 *
 *     rt_parquet_file *pq = rt_parquet_file_open("data/chunk-000/file-000.parquet", &error);
 *     int cols[2] = { rt_parquet_file_find_column(pq, "observation.state"),
 *                     rt_parquet_file_find_column(pq, "timestamp") };
 *     rt_parquet_batch *b = rt_parquet_file_read(pq, cols, 2, 0,
 *                                                rt_parquet_file_num_rows(pq), &error);
 *     const float *state = b->arrays[0].values;  // num_rows x list_size floats, row-major
 *     ...
 *     rt_parquet_batch_free(b);
 *     rt_parquet_file_free(pq);
 *
 * A file handle is not thread-safe: use one per thread (opening is cheap: one footer read). */
#ifndef ROBOTRAIN_DATA_PARQUET_H
#define ROBOTRAIN_DATA_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

typedef struct rt_parquet_file rt_parquet_file;

/* Physical types; the values are those of parquet.thrift. */
typedef enum {
    RT_PARQUET_BOOLEAN = 0,
    RT_PARQUET_INT32 = 1,
    RT_PARQUET_INT64 = 2,
    RT_PARQUET_INT96 = 3,
    RT_PARQUET_FLOAT = 4,
    RT_PARQUET_DOUBLE = 5,
    RT_PARQUET_BYTE_ARRAY = 6,
    RT_PARQUET_FIXED_LEN_BYTE_ARRAY = 7,
} rt_parquet_physical;

/* Logical annotation of a leaf, from its LogicalType or (older files) its ConvertedType. */
typedef enum {
    RT_PARQUET_LOGICAL_NONE,
    RT_PARQUET_LOGICAL_STRING, /* UTF-8 text in a BYTE_ARRAY */
    RT_PARQUET_LOGICAL_ENUM,
    RT_PARQUET_LOGICAL_JSON,
    RT_PARQUET_LOGICAL_BSON,
    RT_PARQUET_LOGICAL_UUID,
    RT_PARQUET_LOGICAL_FLOAT16,
    RT_PARQUET_LOGICAL_INTEGER, /* see int_bits and int_signed */
    RT_PARQUET_LOGICAL_DECIMAL,
    RT_PARQUET_LOGICAL_DATE,
    RT_PARQUET_LOGICAL_TIME,
    RT_PARQUET_LOGICAL_TIMESTAMP,
    RT_PARQUET_LOGICAL_INTERVAL,
    RT_PARQUET_LOGICAL_OTHER, /* an annotation this reader does not name */
} rt_parquet_logical;

typedef enum {
    RT_PARQUET_SCALAR, /* one value per row (a top-level field or a field of structs) */
    RT_PARQUET_LIST,   /* a list of values per row: exactly one repeated level */
    RT_PARQUET_NESTED, /* two or more repeated levels: described here, but not readable */
} rt_parquet_shape;

/* One leaf column of the schema. Owned by the file; valid until rt_parquet_file_free(). */
typedef struct {
    const char *path; /* dot-separated leaf path: "observation.state.list.element" */
    const char *name; /* the top-level field it belongs to: "observation.state" */
    rt_parquet_physical physical;
    int32_t type_length; /* bytes per value of a FIXED_LEN_BYTE_ARRAY; 12 for INT96; else 0 */
    rt_parquet_logical logical;
    int int_bits;        /* INTEGER: 8, 16, 32 or 64; else 0 */
    gboolean int_signed; /* INTEGER: signedness */
    rt_parquet_shape shape;
    gboolean nullable;      /* a value (a list element for LIST) can be null */
    gboolean list_nullable; /* LIST: a row's list itself can be null */
    int max_definition_level;
    int max_repetition_level;
    /* LIST: the length every list has when the file's ARROW:schema declares the field a
     * FixedSizeList (LeRobot vectors); -1 when unknown or variable. */
    int64_t fixed_size;
} rt_parquet_column;

/* The values of one column for a range of rows.
 *
 * Values sit in `num_values` slots: one per row for SCALAR columns, one per list element for
 * LIST columns. A null value keeps its slot (zeroed) and has valid[i] == 0.
 *   - BOOLEAN: values is uint8_t[num_values], 0 or 1;
 *   - INT32, INT64, FLOAT, DOUBLE: int32_t, int64_t, float, double [num_values];
 *   - FIXED_LEN_BYTE_ARRAY, INT96: type_length raw bytes per slot, back to back;
 *   - BYTE_ARRAY: values is NULL; slot i holds data[offsets[i] .. offsets[i+1]).
 * LIST columns add: row r's elements are slots list_offsets[r] .. list_offsets[r+1]; a null
 * list has list_valid[r] == 0 and no elements. When every row holds exactly D elements and no
 * list is null, list_size is D and `values` is a dense num_rows x D matrix (row-major).
 * valid and list_valid are NULL when nothing in this range is null. */
typedef struct {
    int column; /* index of the column (rt_parquet_file_column()) */
    int64_t num_rows;
    int64_t num_values;
    void *values;
    int64_t *offsets;
    uint8_t *data;
    uint8_t *valid;
    int64_t null_count; /* null values (list elements for LIST) */
    int64_t *list_offsets;
    uint8_t *list_valid;
    int64_t null_list_count;
    int64_t list_size;
} rt_parquet_array;

/* The columns read together for one row range: arrays[i] belongs to the i-th requested
 * column. Free with rt_parquet_batch_free(). */
typedef struct {
    int64_t first_row;
    int64_t num_rows;
    int n_arrays;
    rt_parquet_array *arrays;
} rt_parquet_batch;

/* Opens a Parquet file and reads its footer. Returns (transfer full) a handle to free with
 * rt_parquet_file_free(), or NULL with an error naming the path and what is wrong. */
rt_parquet_file *rt_parquet_file_open(const char *path, GError **error);

/* Same, for a file already in memory. `data` is borrowed and must stay valid and unchanged
 * until rt_parquet_file_free(); `name` is used in error messages. */
rt_parquet_file *rt_parquet_file_open_bytes(const void *data, size_t size, const char *name, GError **error);

void rt_parquet_file_free(rt_parquet_file *f);

/* Upper bound for any single buffer the reader allocates while reading (page buffers,
 * output arrays); a read that would need more fails with RT_ERROR_FORMAT. */
void rt_parquet_file_set_max_alloc(rt_parquet_file *f, size_t bytes);

const char *rt_parquet_file_path(const rt_parquet_file *f);
int64_t rt_parquet_file_num_rows(const rt_parquet_file *f);
int rt_parquet_file_num_row_groups(const rt_parquet_file *f);
int64_t rt_parquet_file_row_group_num_rows(const rt_parquet_file *f, int row_group);
/* The file row of the row group's first row. */
int64_t rt_parquet_file_row_group_first_row(const rt_parquet_file *f, int row_group);
/* "parquet-cpp-arrow version 22.0.0", or NULL when the writer did not say. */
const char *rt_parquet_file_created_by(const rt_parquet_file *f);

int rt_parquet_file_num_columns(const rt_parquet_file *f);
const rt_parquet_column *rt_parquet_file_column(const rt_parquet_file *f, int column);
/* Index of the column whose leaf path is `name`, or whose top-level field is `name` and has
 * a single leaf (so "observation.state" finds "observation.state.list.element"); -1 if none. */
int rt_parquet_file_find_column(const rt_parquet_file *f, const char *name);

/* Key/value metadata of the footer, in file order. Values are NUL-terminated copies of the
 * stored bytes (NULL for a key stored without a value). */
int rt_parquet_file_num_metadata(const rt_parquet_file *f);
const char *rt_parquet_file_metadata_key(const rt_parquet_file *f, int i);
const char *rt_parquet_file_metadata_value(const rt_parquet_file *f, int i);
/* The value of the first entry with this key, or NULL. */
const char *rt_parquet_file_metadata(const rt_parquet_file *f, const char *key);

/* Reads rows [first_row, first_row + num_rows) of the given columns (indices, any order,
 * no duplicates needed). Only the row groups and pages that hold those rows are decoded.
 * Returns (transfer full) a batch to free with rt_parquet_batch_free(), or NULL on error. */
rt_parquet_batch *rt_parquet_file_read(rt_parquet_file *f, const int *columns, int n_columns,
                                       int64_t first_row, int64_t num_rows, GError **error);
/* Reads one whole row group. Returns (transfer full) as above. */
rt_parquet_batch *rt_parquet_file_read_row_group(rt_parquet_file *f, int row_group, const int *columns,
                                                 int n_columns, GError **error);
void rt_parquet_batch_free(rt_parquet_batch *batch);

/* TRUE when value slot i is present (not null). */
static inline gboolean rt_parquet_array_is_valid(const rt_parquet_array *a, int64_t i)
{
    return a->valid == NULL || a->valid[i];
}

/* Counters for tests and statistics: pages of a column decoded (dictionary and data pages,
 * decompressed or not) since the file was opened, and bytes read from the file. */
int64_t rt_parquet_file_pages_decoded(const rt_parquet_file *f, int column);
int64_t rt_parquet_file_bytes_read(const rt_parquet_file *f);

G_END_DECLS

#endif
