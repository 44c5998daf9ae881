/* thrift-compact.h: a read-only, bounds-checked decoder for the Thrift compact protocol.
 *
 * Parquet stores its footer (FileMetaData) and every page header as Thrift structs in the
 * compact protocol. This decoder reads from a byte range it never leaves; any malformed input
 * (a varint that runs off the end, a length past the end, a nesting deeper than
 * RT_THRIFT_MAX_DEPTH, an unknown type) sets a sticky error flag and makes every later call
 * return zeros, so callers check rt_thrift_failed() once at the end of a struct instead of
 * after every read. Nothing here allocates.
 *
 * Reading a struct:
 *
 *     int16_t id = 0; rt_thrift_type type;
 *     rt_thrift_struct_begin(&r);
 *     while (rt_thrift_next_field(&r, &id, &type)) {
 *         if (id == 1 && type == RT_THRIFT_I32) x = rt_thrift_read_i32(&r);
 *         else rt_thrift_skip(&r, type);
 *     }
 *     rt_thrift_struct_end(&r);
 *
 * rt_thrift_next_field() returns FALSE at the end of the struct (or on error). Field ids are
 * tracked per nesting level, as the compact protocol encodes them as deltas. */
#ifndef ROBOTRAIN_THRIFT_COMPACT_H
#define ROBOTRAIN_THRIFT_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

/* Wire types of the compact protocol (the low nibble of a field header). Booleans carry their
 * value in the type: a field of type TRUE or FALSE has no payload. */
typedef enum {
    RT_THRIFT_STOP = 0,
    RT_THRIFT_TRUE = 1,
    RT_THRIFT_FALSE = 2,
    RT_THRIFT_I8 = 3,
    RT_THRIFT_I16 = 4,
    RT_THRIFT_I32 = 5,
    RT_THRIFT_I64 = 6,
    RT_THRIFT_DOUBLE = 7,
    RT_THRIFT_BINARY = 8,
    RT_THRIFT_LIST = 9,
    RT_THRIFT_SET = 10,
    RT_THRIFT_MAP = 11,
    RT_THRIFT_STRUCT = 12,
} rt_thrift_type;

/* Deeper nesting than this is rejected: no Parquet struct nests more than ~8 levels, and the
 * limit bounds the recursion of rt_thrift_skip() on hostile input. */
#define RT_THRIFT_MAX_DEPTH 64

typedef struct {
    const uint8_t *pos;
    const uint8_t *end;
    const uint8_t *start;
    int depth;
    int16_t last_id[RT_THRIFT_MAX_DEPTH];
    const char *error; /* static text of the first error, NULL while all is well */
} rt_thrift_reader;

void rt_thrift_init(rt_thrift_reader *r, const void *data, size_t len);

/* TRUE once anything went wrong; rt_thrift_error() says what ("truncated varint", ...). */
static inline gboolean rt_thrift_failed(const rt_thrift_reader *r)
{
    return r->error != NULL;
}
static inline const char *rt_thrift_error(const rt_thrift_reader *r)
{
    return r->error;
}
/* Bytes consumed so far (the size of a page header once it has been read). */
static inline size_t rt_thrift_consumed(const rt_thrift_reader *r)
{
    return (size_t)(r->pos - r->start);
}
/* Marks the reader failed with a static message (for semantic errors found by the caller). */
void rt_thrift_fail(rt_thrift_reader *r, const char *static_message);

void rt_thrift_struct_begin(rt_thrift_reader *r);
void rt_thrift_struct_end(rt_thrift_reader *r);
/* Reads the next field header. FALSE at the struct's STOP byte or on error. For boolean
 * fields, *type is RT_THRIFT_TRUE or RT_THRIFT_FALSE and there is nothing more to read. */
gboolean rt_thrift_next_field(rt_thrift_reader *r, int16_t *id, rt_thrift_type *type);

int8_t rt_thrift_read_i8(rt_thrift_reader *r);
int16_t rt_thrift_read_i16(rt_thrift_reader *r);
int32_t rt_thrift_read_i32(rt_thrift_reader *r);
int64_t rt_thrift_read_i64(rt_thrift_reader *r);
double rt_thrift_read_double(rt_thrift_reader *r);
/* A binary/string field: returns a pointer into the input (not NUL-terminated) and its
 * length, or NULL on error. */
const uint8_t *rt_thrift_read_binary(rt_thrift_reader *r, size_t *len);
/* A list or set header: the element count (checked to fit in the remaining bytes, as every
 * element takes at least one byte) and the element type. -1 on error. */
int64_t rt_thrift_read_list_header(rt_thrift_reader *r, rt_thrift_type *elem_type);
/* A boolean inside a list (one byte; 1 is true). */
gboolean rt_thrift_read_list_bool(rt_thrift_reader *r);

/* Skips a value of the given type, whatever it contains (unknown fields, statistics...). */
void rt_thrift_skip(rt_thrift_reader *r, rt_thrift_type type);

/* ULEB128 and zig-zag helpers, shared with the Parquet page decoders. */
gboolean rt_thrift_read_uleb128(const uint8_t **pos, const uint8_t *end, uint64_t *out);

G_END_DECLS

#endif
