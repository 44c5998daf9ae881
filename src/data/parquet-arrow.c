/* Arrow type recovery: the `ARROW:schema` footer entry that pyarrow and arrow-rs write is the
 * base64 of an Arrow IPC message holding the Arrow Schema (a flatbuffer, see Schema.fbs and
 * Message.fbs in apache/arrow). It is the only place that says a list column is a
 * FixedSizeList<D> (LeRobot's state and action vectors); the Parquet schema itself only says
 * LIST. We read just that: for every top-level field of type FixedSizeList, its listSize.
 *
 * Flatbuffer layout used here: a table starts with an int32 offset back to its vtable; the
 * vtable holds uint16 sizes then one uint16 offset per field (0 = absent); reference fields
 * hold a uint32 offset forward to the referenced table, vector or string. Every read is
 * bounds-checked, and malformed metadata only means "no fixed sizes found". */
#include "config.h"

#include "data/parquet-private.h"

#include <string.h>

typedef struct {
    const uint8_t *buf;
    size_t len;
} fbuf;

static gboolean fb_u32(const fbuf *b, size_t pos, uint32_t *out)
{
    if (pos > b->len || b->len - pos < 4)
        return FALSE;
    *out = (uint32_t)b->buf[pos] | (uint32_t)b->buf[pos + 1] << 8 | (uint32_t)b->buf[pos + 2] << 16 |
           (uint32_t)b->buf[pos + 3] << 24;
    return TRUE;
}

static gboolean fb_u16(const fbuf *b, size_t pos, uint16_t *out)
{
    if (pos > b->len || b->len - pos < 2)
        return FALSE;
    *out = (uint16_t)(b->buf[pos] | b->buf[pos + 1] << 8);
    return TRUE;
}

/* Position of field `slot` of the table at `table`, or 0 when absent or malformed. */
static size_t fb_field(const fbuf *b, size_t table, int slot)
{
    uint32_t soff;
    uint16_t vt_size, off;
    if (!fb_u32(b, table, &soff))
        return 0;
    int64_t vtable = (int64_t)table - (int32_t)soff;
    if (vtable < 0 || (uint64_t)vtable >= b->len)
        return 0;
    if (!fb_u16(b, (size_t)vtable, &vt_size) || (size_t)(4 + 2 * slot + 2) > vt_size)
        return 0;
    if (!fb_u16(b, (size_t)vtable + 4 + 2 * (size_t)slot, &off) || off == 0)
        return 0;
    if (table + off >= b->len)
        return 0;
    return table + off;
}

/* Follows the uint32 forward offset stored at pos; 0 when out of range. */
static size_t fb_deref(const fbuf *b, size_t pos)
{
    uint32_t off;
    if (!pos || !fb_u32(b, pos, &off) || off == 0 || pos + off >= b->len)
        return 0;
    return pos + off;
}

static gboolean fb_string(const fbuf *b, size_t pos, const char **s, size_t *len)
{
    uint32_t n;
    if (!pos || !fb_u32(b, pos, &n) || n > b->len - pos - 4)
        return FALSE;
    *s = (const char *)b->buf + pos + 4;
    *len = n;
    return TRUE;
}

enum {
    MESSAGE_HEADER_TYPE = 1, /* Message: version, header_type, header, bodyLength, ... */
    MESSAGE_HEADER = 2,
    SCHEMA_FIELDS = 1, /* Schema: endianness, fields, ... */
    FIELD_NAME = 0,    /* Field: name, nullable, type_type, type, dictionary, children */
    FIELD_TYPE_TYPE = 2,
    FIELD_TYPE = 3,
    HEADER_SCHEMA = 1,
    TYPE_FIXED_SIZE_LIST = 16,
};

static void apply_field(rt_parquet_file *f, const fbuf *b, size_t field)
{
    const char *name;
    size_t name_len;
    size_t tt = fb_field(b, field, FIELD_TYPE_TYPE);
    if (!tt || b->buf[tt] != TYPE_FIXED_SIZE_LIST)
        return;
    if (!fb_string(b, fb_deref(b, fb_field(b, field, FIELD_NAME)), &name, &name_len))
        return;
    size_t type = fb_deref(b, fb_field(b, field, FIELD_TYPE));
    uint32_t size;
    if (!type || !fb_u32(b, fb_field(b, type, 0), &size) || (int32_t)size < 0)
        return;
    for (int i = 0; i < f->n_leaves; i++) {
        pq_leaf *leaf = &f->leaves[i];
        if (leaf->pub.shape == RT_PARQUET_LIST && strlen(leaf->name) == name_len &&
            memcmp(leaf->name, name, name_len) == 0)
            leaf->pub.fixed_size = (int32_t)size;
    }
}

void pq_apply_arrow_schema(rt_parquet_file *f, const char *base64)
{
    gsize len = 0;
    guchar *raw = g_base64_decode(base64, &len);
    fbuf b = {raw, len};
    size_t root = 0;
    uint32_t word;
    /* an encapsulated IPC message: 0xFFFFFFFF continuation (since Arrow 0.15), length */
    if (fb_u32(&b, 0, &word) && word == UINT32_MAX)
        root = 8;
    else
        root = 4;
    if (root >= b.len)
        goto out;
    b.buf += root;
    b.len -= root;
    uint32_t message_off;
    if (!fb_u32(&b, 0, &message_off) || message_off == 0 || message_off >= b.len)
        goto out;
    size_t message = message_off;
    size_t ht = fb_field(&b, message, MESSAGE_HEADER_TYPE);
    if (!ht || b.buf[ht] != HEADER_SCHEMA)
        goto out;
    size_t schema = fb_deref(&b, fb_field(&b, message, MESSAGE_HEADER));
    size_t fields = fb_deref(&b, fb_field(&b, schema, SCHEMA_FIELDS));
    uint32_t n;
    if (!schema || !fields || !fb_u32(&b, fields, &n) || n > (b.len - fields - 4) / 4)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        size_t field = fb_deref(&b, fields + 4 + 4 * (size_t)i);
        if (field)
            apply_field(f, &b, field);
    }
out:
    g_free(raw);
}
