/* src/dist/store-protocol.h: the rendezvous store's wire format (private to src/dist).
 *
 * A message is a frame: a u32 payload length, then the payload. Integers are little-endian;
 * a byte string is a u32 length and its bytes. Frames longer than RT_WIRE_MAX_FRAME are
 * refused before anything is allocated for them.
 *
 * Requests (first byte: the operation)           Replies (first byte: the status)
 *   HELLO  u32 magic, u32 version, str run_id      OK u32 version, str run_id | ERROR str text
 *   SET    str key, str value                      OK
 *   GET    str key, u32 timeout_ms                 OK str value | TIMEOUT
 *   ADD    str key, i64 delta                      OK i64 sum | ERROR str text
 *   WAIT   u32 timeout_ms, u32 n, n x str key      OK | TIMEOUT str first_missing, u32 n_missing
 *   CHECK  u32 n, n x str key                      OK u8 all_set
 *   DELETE str key                                 OK u8 existed
 * Any request may also be answered ERROR str text (bad request, store full); after an ERROR to
 * HELLO or a malformed frame the server closes the connection. A client sends one request at a
 * time and waits for its reply. Version 1. */
#ifndef RT_DIST_STORE_PROTOCOL_H
#define RT_DIST_STORE_PROTOCOL_H

#include <stdint.h>
#include <string.h>

#include <glib.h>

#include <robotrain/store.h>

#define RT_WIRE_MAGIC 0x54535452u /* "RTST" read as little-endian bytes */
#define RT_WIRE_VERSION 1u

/* The largest payload: a WAIT or CHECK with the most keys, or a SET with the largest value,
 * plus headers. */
#define RT_WIRE_MAX_FRAME (RT_STORE_MAX_KEYS * (RT_STORE_MAX_KEY + 4u) + RT_STORE_MAX_VALUE + 64u)

enum {
    RT_WIRE_HELLO = 1,
    RT_WIRE_SET = 2,
    RT_WIRE_GET = 3,
    RT_WIRE_ADD = 4,
    RT_WIRE_WAIT = 5,
    RT_WIRE_CHECK = 6,
    RT_WIRE_DELETE = 7,
};

enum {
    RT_WIRE_OK = 0,
    RT_WIRE_TIMEOUT = 1,
    RT_WIRE_ERROR = 2,
};

/* ---- writing: append to a GByteArray that starts with a 4-byte length placeholder */

static inline GByteArray *rt_wire_begin(uint8_t first)
{
    GByteArray *b = g_byte_array_sized_new(64);
    uint8_t head[5] = { 0, 0, 0, 0, first };
    g_byte_array_append(b, head, sizeof head);
    return b;
}

static inline void rt_wire_put_u32(GByteArray *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    g_byte_array_append(b, x, 4);
}

static inline void rt_wire_put_u8(GByteArray *b, uint8_t v)
{
    g_byte_array_append(b, &v, 1);
}

static inline void rt_wire_put_u64(GByteArray *b, uint64_t v)
{
    rt_wire_put_u32(b, (uint32_t)v);
    rt_wire_put_u32(b, (uint32_t)(v >> 32));
}

static inline void rt_wire_put_bytes(GByteArray *b, const void *data, size_t size)
{
    rt_wire_put_u32(b, (uint32_t)size);
    if (size)
        g_byte_array_append(b, data, (guint)size);
}

static inline void rt_wire_put_str(GByteArray *b, const char *s)
{
    rt_wire_put_bytes(b, s, strlen(s));
}

/* Writes the payload length into the placeholder; the frame is then b->data, b->len. */
static inline void rt_wire_finish(GByteArray *b)
{
    uint32_t n = b->len - 4;
    b->data[0] = (uint8_t)n;
    b->data[1] = (uint8_t)(n >> 8);
    b->data[2] = (uint8_t)(n >> 16);
    b->data[3] = (uint8_t)(n >> 24);
}

static inline uint32_t rt_wire_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- reading: a cursor over one payload; any read past its end sets bad */

typedef struct {
    const uint8_t *p;
    size_t left;
    gboolean bad;
} rt_wire_reader;

static inline void rt_wire_reader_init(rt_wire_reader *r, const uint8_t *p, size_t n)
{
    r->p = p;
    r->left = n;
    r->bad = FALSE;
}

static inline gboolean rt_wire_take(rt_wire_reader *r, size_t n, const uint8_t **out)
{
    if (r->bad || r->left < n) {
        r->bad = TRUE;
        return FALSE;
    }
    *out = r->p;
    r->p += n;
    r->left -= n;
    return TRUE;
}

static inline uint8_t rt_wire_u8(rt_wire_reader *r)
{
    const uint8_t *p;
    return rt_wire_take(r, 1, &p) ? p[0] : 0;
}

static inline uint32_t rt_wire_u32(rt_wire_reader *r)
{
    const uint8_t *p;
    return rt_wire_take(r, 4, &p) ? rt_wire_get_le32(p) : 0;
}

static inline uint64_t rt_wire_u64(rt_wire_reader *r)
{
    uint64_t lo = rt_wire_u32(r);
    uint64_t hi = rt_wire_u32(r);
    return lo | hi << 32;
}

/* A byte string of at most max bytes (longer sets bad). *data points into the payload. */
static inline gboolean rt_wire_bytes(rt_wire_reader *r, size_t max, const uint8_t **data, size_t *size)
{
    uint32_t n = rt_wire_u32(r);
    if (r->bad || n > max) {
        r->bad = TRUE;
        return FALSE;
    }
    *size = n;
    return rt_wire_take(r, n, data);
}

/* A byte string as a new NUL-terminated string; bad (and NULL) when it holds a NUL or is longer
 * than max. Returns (transfer full) a string to g_free(). */
static inline char *rt_wire_strdup(rt_wire_reader *r, size_t max)
{
    const uint8_t *data;
    size_t n;
    if (!rt_wire_bytes(r, max, &data, &n))
        return NULL;
    if (memchr(data, 0, n)) {
        r->bad = TRUE;
        return NULL;
    }
    return g_strndup((const char *)data, n);
}

#endif
