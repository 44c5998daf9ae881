/* tests/test-parquet-writer.h: a tiny Parquet writer for the reader's tests, to build files
 * byte by byte (well-formed or deliberately not): a Thrift compact protocol writer, page
 * headers, schema elements and column chunk metadata. Test code only. */
#ifndef ROBOTRAIN_TEST_PARQUET_WRITER_H
#define ROBOTRAIN_TEST_PARQUET_WRITER_H

#include <stdint.h>
#include <string.h>

#include <glib.h>
#include <zlib.h>

/* ---------------------------------------------------------------- a Thrift compact writer */

typedef struct {
    GByteArray *b;
    int16_t last[16];
    int depth;
} tw;

static inline void tw_byte(tw *w, unsigned v)
{
    uint8_t byte = (uint8_t)v;
    g_byte_array_append(w->b, &byte, 1);
}

static inline void tw_varint(tw *w, uint64_t v)
{
    while (v >= 0x80) {
        tw_byte(w, (unsigned)(v & 0x7f) | 0x80);
        v >>= 7;
    }
    tw_byte(w, (unsigned)v);
}

static inline uint64_t zz(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline void tw_field(tw *w, int16_t id, int type)
{
    int delta = id - w->last[w->depth];
    if (delta > 0 && delta <= 15) {
        tw_byte(w, (unsigned)(delta << 4 | type));
    } else {
        tw_byte(w, (unsigned)type);
        tw_varint(w, zz(id));
    }
    w->last[w->depth] = id;
}

static inline void tw_i32(tw *w, int16_t id, int64_t v)
{
    tw_field(w, id, 5);
    tw_varint(w, zz(v));
}

static inline void tw_i64(tw *w, int16_t id, int64_t v)
{
    tw_field(w, id, 6);
    tw_varint(w, zz(v));
}

static inline void tw_str(tw *w, int16_t id, const char *s)
{
    tw_field(w, id, 8);
    tw_varint(w, strlen(s));
    g_byte_array_append(w->b, (const uint8_t *)s, (guint)strlen(s));
}

static inline void tw_open(tw *w) /* a struct, as a field (after tw_field) or a list element */
{
    w->depth++;
    w->last[w->depth] = 0;
}

static inline void tw_struct(tw *w, int16_t id)
{
    tw_field(w, id, 12);
    tw_open(w);
}

static inline void tw_close(tw *w)
{
    tw_byte(w, 0);
    w->depth--;
}

static inline void tw_list(tw *w, int16_t id, int elem_type, int n)
{
    tw_field(w, id, 9);
    if (n < 15) {
        tw_byte(w, (unsigned)(n << 4 | elem_type));
    } else {
        tw_byte(w, 0xf0u | (unsigned)elem_type);
        tw_varint(w, (uint64_t)n);
    }
}

/* ---------------------------------------------------------------- test files */

enum { PAGE_DATA = 0, PAGE_DICT = 2, PAGE_DATA_V2 = 3 };

typedef struct {
    int type;
    int32_t num_values;
    int encoding;
    const void *payload;
    size_t len;
    int64_t uncompressed; /* -1: len */
    int64_t compressed;   /* -1: len */
    gboolean crc;
    int64_t crc_value; /* -1: the correct CRC */
    int32_t v2_def_len;
    int32_t v2_rows; /* 0: num_values */
} page_spec;

static inline void put_page(GByteArray *out, const page_spec *p)
{
    tw w = {.b = out};
    tw_open(&w);
    tw_i32(&w, 1, p->type);
    tw_i32(&w, 2, p->uncompressed >= 0 ? p->uncompressed : (int64_t)p->len);
    tw_i32(&w, 3, p->compressed >= 0 ? p->compressed : (int64_t)p->len);
    if (p->crc)
        tw_i32(&w, 4,
               p->crc_value >= 0 ? (int32_t)(uint32_t)p->crc_value
                                 : (int32_t)(uint32_t)crc32(0L, p->payload, (uInt)p->len));
    if (p->type == PAGE_DATA) {
        tw_struct(&w, 5);
        tw_i32(&w, 1, p->num_values);
        tw_i32(&w, 2, p->encoding);
        tw_i32(&w, 3, 3); /* RLE levels */
        tw_i32(&w, 4, 3);
        tw_close(&w);
    } else if (p->type == PAGE_DICT) {
        tw_struct(&w, 7);
        tw_i32(&w, 1, p->num_values);
        tw_i32(&w, 2, 0);
        tw_close(&w);
    } else {
        tw_struct(&w, 8);
        tw_i32(&w, 1, p->num_values);
        tw_i32(&w, 2, 0);
        tw_i32(&w, 3, p->v2_rows ? p->v2_rows : p->num_values);
        tw_i32(&w, 4, p->encoding);
        tw_i32(&w, 5, p->v2_def_len);
        tw_i32(&w, 6, 0);
        tw_close(&w);
    }
    tw_close(&w);
    g_byte_array_append(out, p->payload, (guint)p->len);
}

/* A SchemaElement as a list element: type < 0 makes a group with `children`; converted < 0
 * and repetition < 0 leave those fields out. */
static inline void put_schema_element(tw *w, const char *name, int type, int repetition, int children,
                                      int converted)
{
    tw_open(w);
    if (type >= 0)
        tw_i32(w, 1, type);
    if (repetition >= 0)
        tw_i32(w, 3, repetition);
    tw_str(w, 4, name);
    if (type < 0)
        tw_i32(w, 5, children);
    if (converted >= 0)
        tw_i32(w, 6, converted);
    tw_close(w);
}

/* A ColumnChunk with its ColumnMetaData, as a list element. */
static inline void put_column_chunk(tw *w, int type, const char *const *path, int n_path, int codec,
                                    int64_t num_values, int64_t size, int64_t offset)
{
    tw_open(w);
    tw_i64(w, 2, 0);
    tw_struct(w, 3);
    tw_i32(w, 1, type);
    tw_list(w, 2, 5, 2);
    tw_varint(w, zz(0));
    tw_varint(w, zz(3));
    tw_list(w, 3, 8, n_path);
    for (int i = 0; i < n_path; i++) {
        tw_varint(w, strlen(path[i]));
        g_byte_array_append(w->b, (const uint8_t *)path[i], (guint)strlen(path[i]));
    }
    tw_i32(w, 4, codec);
    tw_i64(w, 5, num_values);
    tw_i64(w, 6, size);
    tw_i64(w, 7, size);
    tw_i64(w, 9, offset);
    tw_close(w); /* ColumnMetaData */
    tw_close(w); /* ColumnChunk */
}

/* Appends the footer's length and the closing magic. */
static inline void put_tail(GByteArray *out, guint footer_start, int64_t len_delta, const char *magic)
{
    uint32_t n = (uint32_t)((int64_t)(out->len - footer_start) + len_delta);
    uint8_t le[4] = {n & 0xff, n >> 8 & 0xff, n >> 16 & 0xff, n >> 24};
    g_byte_array_append(out, le, 4);
    g_byte_array_append(out, (const uint8_t *)(magic ? magic : "PAR1"), 4);
}

#endif
