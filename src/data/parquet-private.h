/* parquet-private.h: what the parts of the Parquet reader share (not for other code). */
#ifndef ROBOTRAIN_DATA_PARQUET_PRIVATE_H
#define ROBOTRAIN_DATA_PARQUET_PRIVATE_H

#include "data/parquet.h"

#include <robotrain/error.h>

/* Enum values of parquet.thrift used across files. */
enum {
    PQ_REQUIRED = 0,
    PQ_OPTIONAL = 1,
    PQ_REPEATED = 2,
};
enum {
    PQ_CODEC_UNCOMPRESSED = 0,
    PQ_CODEC_SNAPPY = 1,
    PQ_CODEC_GZIP = 2,
    PQ_CODEC_LZO = 3,
    PQ_CODEC_BROTLI = 4,
    PQ_CODEC_LZ4 = 5,
    PQ_CODEC_ZSTD = 6,
    PQ_CODEC_LZ4_RAW = 7,
};
enum {
    PQ_ENC_PLAIN = 0,
    PQ_ENC_PLAIN_DICTIONARY = 2,
    PQ_ENC_RLE = 3,
    PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5,
    PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
    PQ_ENC_BYTE_STREAM_SPLIT = 9,
};
enum {
    PQ_PAGE_DATA = 0,
    PQ_PAGE_INDEX = 1,
    PQ_PAGE_DICTIONARY = 2,
    PQ_PAGE_DATA_V2 = 3,
};

/* Schema nesting deeper than this is rejected (levels then fit in a byte). */
#define PQ_MAX_SCHEMA_DEPTH 32

#define PQ_DEFAULT_MAX_ALLOC ((size_t)1 << 30)

/* Sane limits on what a footer may describe (a LeRobot file has ~10-100 columns and one row
 * group per episode); they keep the footer's decoded form within ~100 bytes per footer byte
 * even for hostile input. */
#define PQ_MAX_SCHEMA_ELEMENTS (1 << 20)
#define PQ_MAX_COLUMN_CHUNKS (1 << 22)

/* One column chunk: a leaf column inside a row group. */
typedef struct {
    int codec;
    int64_t num_values;
    int64_t start; /* byte range of the chunk's pages in the file, checked at open */
    int64_t end;
} pq_chunk;

typedef struct {
    int64_t num_rows;
    int64_t first_row;
    pq_chunk *chunks; /* one per leaf column */
} pq_row_group;

typedef struct {
    rt_parquet_column pub;
    char *path;
    char *name;
    /* LIST: definition level of the repeated node (an entry at or above it is a list
     * element) and of its parent (at or above it the list exists, perhaps empty). */
    int element_def;
    int list_def;
} pq_leaf;

struct rt_parquet_file {
    char *path; /* for messages */
    int fd;     /* -1 for an in-memory file */
    const uint8_t *mem;
    uint64_t size;
    int64_t data_end; /* where the footer starts: pages lie in [4, data_end) */
    size_t max_alloc;

    int64_t num_rows;
    char *created_by;
    pq_leaf *leaves;
    int n_leaves;
    pq_row_group *row_groups;
    int n_row_groups;
    char **kv_keys;
    char **kv_values;
    int n_kv;

    int64_t *pages_decoded; /* per leaf */
    int64_t bytes_read;
};

/* Sets an RT_ERROR whose message starts with the file's path. */
void pq_error(GError **error, const rt_parquet_file *f, int code, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* Reads len bytes at offset into buf (checked against the file size). */
gboolean pq_read_at(rt_parquet_file *f, int64_t offset, size_t len, uint8_t *buf, GError **error);

/* A page header; which fields are set depends on the type. */
typedef struct {
    int type;
    int32_t uncompressed_size;
    int32_t compressed_size;
    gboolean has_crc;
    uint32_t crc;
    int32_t num_values;
    int encoding;
    int def_encoding;
    int rep_encoding;
    int32_t num_rows; /* v2 */
    int32_t def_len;  /* v2 */
    int32_t rep_len;  /* v2 */
    gboolean is_compressed;
    unsigned seen;
} pq_page_header;

/* Decodes the PageHeader at the start of p[0 .. avail). Returns the header's size, or 0 with
 * *why set to a static description. */
size_t pq_read_page_header(const uint8_t *p, size_t avail, pq_page_header *h, const char **why);

/* Footer: decodes FileMetaData into f (schema, leaves, row groups, metadata). */
gboolean pq_parse_footer(rt_parquet_file *f, const uint8_t *footer, size_t len, GError **error);

/* ARROW:schema: sets fixed_size of LIST leaves whose field is a FixedSizeList. Malformed
 * Arrow metadata is ignored (the Parquet schema stays authoritative). */
void pq_apply_arrow_schema(rt_parquet_file *f, const char *base64);

/* Decompresses src into exactly dst_len bytes. On failure returns FALSE and sets *why to a
 * static description. zstd_ctx: a ZSTD_DCtx* kept by the caller (created on first use). */
gboolean pq_decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                       void **zstd_ctx, const char **why);
void pq_decompress_free(void *zstd_ctx);
const char *pq_codec_name(int codec);
const char *pq_encoding_name(int encoding);

/* Level and index decoders (exported with the rt_ prefix for their unit tests).
 * RLE/bit-packed hybrid: decodes exactly count values of bit_width bits (0..32) from
 * [*pos, end) into out; *pos moves past the runs consumed. FALSE (with *why) on malformed
 * or short input. */
gboolean rt_parquet_decode_hybrid(const uint8_t **pos, const uint8_t *end, int bit_width, uint32_t *out,
                                  int64_t count, const char **why);
/* Deprecated BIT_PACKED levels (most significant bit first). */
gboolean rt_parquet_decode_bit_packed(const uint8_t **pos, const uint8_t *end, int bit_width, uint32_t *out,
                                      int64_t count, const char **why);
/* Bits needed for values 0..max_value. */
int pq_bit_width(uint32_t max_value);

#endif
