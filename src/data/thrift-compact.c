/* Thrift compact protocol decoder (read-only). See thrift-compact.h. */
#include "config.h"

#include "data/thrift-compact.h"

#include <string.h>

void rt_thrift_init(rt_thrift_reader *r, const void *data, size_t len)
{
    r->start = data;
    r->pos = data;
    r->end = r->pos + len;
    r->depth = 0;
    r->last_id[0] = 0;
    r->error = NULL;
}

void rt_thrift_fail(rt_thrift_reader *r, const char *static_message)
{
    if (!r->error)
        r->error = static_message;
    r->pos = r->end; /* every later read sees an empty input */
}

gboolean rt_thrift_read_uleb128(const uint8_t **pos, const uint8_t *end, uint64_t *out)
{
    uint64_t value = 0;
    const uint8_t *p = *pos;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return FALSE;
        uint8_t byte = *p++;
        /* the tenth byte may only hold the top bit of a 64-bit value */
        if (shift == 63 && (byte & 0x7e))
            return FALSE;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *pos = p;
            *out = value;
            return TRUE;
        }
    }
    return FALSE;
}

static uint64_t read_varint(rt_thrift_reader *r)
{
    uint64_t value = 0;
    if (r->error)
        return 0;
    if (!rt_thrift_read_uleb128(&r->pos, r->end, &value)) {
        rt_thrift_fail(r, "truncated or overlong varint");
        return 0;
    }
    return value;
}

static int64_t zigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

void rt_thrift_struct_begin(rt_thrift_reader *r)
{
    if (r->error)
        return;
    if (r->depth + 1 >= RT_THRIFT_MAX_DEPTH) {
        rt_thrift_fail(r, "structs nested too deeply");
        return;
    }
    r->depth++;
    r->last_id[r->depth] = 0;
}

void rt_thrift_struct_end(rt_thrift_reader *r)
{
    if (r->depth > 0)
        r->depth--;
}

gboolean rt_thrift_next_field(rt_thrift_reader *r, int16_t *id, rt_thrift_type *type)
{
    if (r->error)
        return FALSE;
    if (r->pos >= r->end) {
        rt_thrift_fail(r, "struct runs past the end of its bytes");
        return FALSE;
    }
    uint8_t byte = *r->pos++;
    if (byte == 0)
        return FALSE;
    int t = byte & 0x0f;
    int delta = byte >> 4;
    if (t > RT_THRIFT_STRUCT) {
        rt_thrift_fail(r, "unknown Thrift field type");
        return FALSE;
    }
    int64_t field_id;
    if (delta)
        field_id = (int64_t)r->last_id[r->depth] + delta;
    else
        field_id = zigzag(read_varint(r));
    if (r->error)
        return FALSE;
    if (field_id < INT16_MIN || field_id > INT16_MAX) {
        rt_thrift_fail(r, "Thrift field id out of range");
        return FALSE;
    }
    r->last_id[r->depth] = (int16_t)field_id;
    *id = (int16_t)field_id;
    *type = (rt_thrift_type)t;
    return TRUE;
}

int8_t rt_thrift_read_i8(rt_thrift_reader *r)
{
    if (r->error)
        return 0;
    if (r->pos >= r->end) {
        rt_thrift_fail(r, "truncated byte");
        return 0;
    }
    return (int8_t)*r->pos++;
}

int16_t rt_thrift_read_i16(rt_thrift_reader *r)
{
    int64_t v = zigzag(read_varint(r));
    if (v < INT16_MIN || v > INT16_MAX) {
        rt_thrift_fail(r, "i16 out of range");
        return 0;
    }
    return (int16_t)v;
}

int32_t rt_thrift_read_i32(rt_thrift_reader *r)
{
    int64_t v = zigzag(read_varint(r));
    if (v < INT32_MIN || v > INT32_MAX) {
        rt_thrift_fail(r, "i32 out of range");
        return 0;
    }
    return (int32_t)v;
}

int64_t rt_thrift_read_i64(rt_thrift_reader *r)
{
    return zigzag(read_varint(r));
}

double rt_thrift_read_double(rt_thrift_reader *r)
{
    double d = 0;
    if (r->error)
        return 0;
    if (r->end - r->pos < 8) {
        rt_thrift_fail(r, "truncated double");
        return 0;
    }
    uint64_t bits = 0;
    for (int i = 7; i >= 0; i--)
        bits = (bits << 8) | r->pos[i];
    memcpy(&d, &bits, sizeof d);
    r->pos += 8;
    return d;
}

const uint8_t *rt_thrift_read_binary(rt_thrift_reader *r, size_t *len)
{
    uint64_t n = read_varint(r);
    *len = 0;
    if (r->error)
        return NULL;
    if (n > (uint64_t)(r->end - r->pos)) {
        rt_thrift_fail(r, "binary field runs past the end");
        return NULL;
    }
    const uint8_t *p = r->pos;
    r->pos += n;
    *len = (size_t)n;
    return p;
}

int64_t rt_thrift_read_list_header(rt_thrift_reader *r, rt_thrift_type *elem_type)
{
    if (r->error)
        return -1;
    if (r->pos >= r->end) {
        rt_thrift_fail(r, "truncated list header");
        return -1;
    }
    uint8_t byte = *r->pos++;
    uint64_t n = byte >> 4;
    int t = byte & 0x0f;
    if (n == 15)
        n = read_varint(r);
    if (r->error)
        return -1;
    if (t == RT_THRIFT_STOP || t > RT_THRIFT_STRUCT) {
        rt_thrift_fail(r, "unknown list element type");
        return -1;
    }
    /* every element takes at least one byte: a larger count cannot be genuine */
    if (n > (uint64_t)(r->end - r->pos)) {
        rt_thrift_fail(r, "list longer than its bytes");
        return -1;
    }
    *elem_type = (rt_thrift_type)t;
    return (int64_t)n;
}

gboolean rt_thrift_read_list_bool(rt_thrift_reader *r)
{
    return rt_thrift_read_i8(r) == 1;
}

static void skip_depth(rt_thrift_reader *r, rt_thrift_type type, int depth)
{
    if (r->error)
        return;
    if (depth > RT_THRIFT_MAX_DEPTH) {
        rt_thrift_fail(r, "values nested too deeply");
        return;
    }
    switch (type) {
    case RT_THRIFT_TRUE:
    case RT_THRIFT_FALSE:
        /* a boolean field carries its value in the type; inside a list it is one byte, which
         * the list case skips itself */
        break;
    case RT_THRIFT_I8:
        (void)rt_thrift_read_i8(r);
        break;
    case RT_THRIFT_I16:
    case RT_THRIFT_I32:
    case RT_THRIFT_I64:
        (void)read_varint(r);
        break;
    case RT_THRIFT_DOUBLE:
        (void)rt_thrift_read_double(r);
        break;
    case RT_THRIFT_BINARY: {
        size_t len;
        (void)rt_thrift_read_binary(r, &len);
        break;
    }
    case RT_THRIFT_LIST:
    case RT_THRIFT_SET: {
        rt_thrift_type et;
        int64_t n = rt_thrift_read_list_header(r, &et);
        for (int64_t i = 0; i < n && !r->error; i++) {
            if (et == RT_THRIFT_TRUE || et == RT_THRIFT_FALSE)
                (void)rt_thrift_read_i8(r);
            else
                skip_depth(r, et, depth + 1);
        }
        break;
    }
    case RT_THRIFT_MAP: {
        uint64_t n = read_varint(r);
        if (r->error || n == 0)
            break;
        if (r->pos >= r->end || n > (uint64_t)(r->end - r->pos)) {
            rt_thrift_fail(r, "map longer than its bytes");
            break;
        }
        uint8_t kv = *r->pos++;
        rt_thrift_type kt = (rt_thrift_type)(kv >> 4), vt = (rt_thrift_type)(kv & 0x0f);
        if (kt == RT_THRIFT_STOP || kt > RT_THRIFT_STRUCT || vt == RT_THRIFT_STOP || vt > RT_THRIFT_STRUCT) {
            rt_thrift_fail(r, "unknown map element type");
            break;
        }
        for (uint64_t i = 0; i < n && !r->error; i++) {
            if (kt == RT_THRIFT_TRUE || kt == RT_THRIFT_FALSE)
                (void)rt_thrift_read_i8(r);
            else
                skip_depth(r, kt, depth + 1);
            if (vt == RT_THRIFT_TRUE || vt == RT_THRIFT_FALSE)
                (void)rt_thrift_read_i8(r);
            else
                skip_depth(r, vt, depth + 1);
        }
        break;
    }
    case RT_THRIFT_STRUCT: {
        int16_t id;
        rt_thrift_type ft;
        rt_thrift_struct_begin(r);
        while (rt_thrift_next_field(r, &id, &ft))
            skip_depth(r, ft, depth + 1);
        rt_thrift_struct_end(r);
        break;
    }
    default:
        rt_thrift_fail(r, "unknown Thrift type");
        break;
    }
}

void rt_thrift_skip(rt_thrift_reader *r, rt_thrift_type type)
{
    skip_depth(r, type, r->depth);
}
