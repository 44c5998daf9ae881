/* Reading column data: for each requested column and each row group that overlaps the
 * requested rows, walk the column chunk's pages (dictionary, data v1, data v2), decompress
 * them, decode repetition/definition levels and values, and append the rows that fall in
 * the window to the column's output array.
 *
 * Levels -> rows (one repeated level at most):
 *   - a new row starts at every entry with repetition level 0 (at every entry for flat
 *     columns);
 *   - flat column: the value is present iff def == max_def;
 *   - list column: the list exists iff def >= list_def, the entry is an element iff
 *     def >= element_def, and the element is non-null iff def == max_def.
 * Values are stored only for entries with def == max_def, in order.
 *
 * Pages that lie entirely before the window are skipped without being decompressed when
 * their row count is known from the header (flat columns, v2 pages), and reading stops once
 * the window's last row is complete. */
#include "config.h"

#include "data/parquet-private.h"
#include "data/thrift-compact.h"

#include <string.h>
#include <zlib.h>

/* ---------------------------------------------------------------- per-read state */

/* Grow-only scratch buffers, reused across pages, chunks and columns of one read. */
typedef struct {
    uint8_t *chunk;
    size_t chunk_cap;
    uint8_t *page;
    size_t page_cap;
    uint8_t *dict_page;
    size_t dict_page_cap;
    uint32_t *rep;
    size_t rep_cap;
    uint32_t *def;
    size_t def_cap;
    uint32_t *idx;
    size_t idx_cap;
    uint8_t *bools;
    size_t bools_cap;
    const uint8_t **bptr;
    size_t bptr_cap;
    uint32_t *blen;
    size_t blen_cap;
    uint8_t *bss;
    size_t bss_cap;
    /* the chunk's dictionary */
    gboolean have_dict;
    int64_t dict_n;
    const uint8_t *dict_fixed;
    uint8_t *dict_bools;
    size_t dict_bools_cap;
    const uint8_t **dict_ptr;
    size_t dict_ptr_cap;
    uint32_t *dict_len;
    size_t dict_len_cap;
    void *zstd;
} scratch;

/* The output array being filled for one column. */
typedef struct {
    rt_parquet_array *a;
    int width; /* bytes per value slot; 0 for BYTE_ARRAY */
    gboolean list;
    gboolean nullable;
    int64_t slot_cap;
    int64_t data_cap;
    int64_t data_len;
} builder;

/* Where a page's non-null values are: value i is fixed + (index ? index[i] : i) * width, or
 * bptr/blen[index ? index[i] : i] for byte arrays. */
typedef struct {
    const uint8_t *fixed;
    const uint8_t *const *bptr;
    const uint32_t *blen;
    const uint32_t *index;
} value_src;

typedef struct {
    rt_parquet_file *f;
    scratch *s;
    builder *b;
    int row_group;
    int column;
    const pq_leaf *leaf;
    int width;
    GError **error;
} read_ctx;

static void ctx_error(read_ctx *c, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void ctx_error(read_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    pq_error(c->error, c->f, code, "row group %d, column '%s': %s", c->row_group, c->leaf->path, what);
    g_free(what);
}

/* Makes *buf hold at least `need` elements of `elem` bytes (bounded by max_alloc). */
static gboolean reserve(read_ctx *c, void **buf, size_t *cap, uint64_t need, size_t elem, const char *what)
{
    if (need <= *cap && *buf)
        return TRUE;
    if (need == 0)
        need = 1;
    if (need > c->f->max_alloc / elem) {
        ctx_error(c, RT_ERROR_FORMAT, "%s would need %" G_GUINT64_FORMAT " bytes, more than the limit of %zu",
                  what, need * elem, c->f->max_alloc);
        return FALSE;
    }
    uint64_t n = *cap ? *cap : 64;
    while (n < need)
        n = n * 2 > c->f->max_alloc / elem ? need : n * 2;
    void *p = g_try_realloc(*buf, (size_t)(n * elem));
    if (!p) {
        ctx_error(c, RT_ERROR_FORMAT, "cannot allocate %" G_GUINT64_FORMAT " bytes for %s", n * elem, what);
        return FALSE;
    }
    *buf = p;
    *cap = (size_t)n;
    return TRUE;
}

#define RESERVE(c, field, need, what)                                                                        \
    reserve((c), (void **)&(c)->s->field, &(c)->s->field##_cap, (need), sizeof(*(c)->s->field), (what))

static int value_width(const rt_parquet_column *col)
{
    switch (col->physical) {
    case RT_PARQUET_BOOLEAN:
        return 1;
    case RT_PARQUET_INT32:
    case RT_PARQUET_FLOAT:
        return 4;
    case RT_PARQUET_INT64:
    case RT_PARQUET_DOUBLE:
        return 8;
    case RT_PARQUET_INT96:
        return 12;
    case RT_PARQUET_FIXED_LEN_BYTE_ARRAY:
        return col->type_length;
    default:
        return 0;
    }
}

/* ---------------------------------------------------------------- output arrays */

static gboolean grow_slots(read_ctx *c, int64_t need)
{
    builder *b = c->b;
    rt_parquet_array *a = b->a;
    if (need <= b->slot_cap)
        return TRUE;
    int64_t n = b->slot_cap ? b->slot_cap : 64;
    while (n < need)
        n *= 2;
    size_t limit = c->f->max_alloc;
    size_t w = b->width ? (size_t)b->width : sizeof(int64_t);
    if ((uint64_t)n + 1 > limit / w) {
        n = need;
        if ((uint64_t)n + 1 > limit / w) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "%" G_GINT64_FORMAT " values would need more than the limit of %zu bytes", need, limit);
            return FALSE;
        }
    }
    if (b->width) {
        void *p = g_try_realloc(a->values, (size_t)n * (size_t)b->width);
        if (!p)
            goto oom;
        a->values = p;
    } else {
        void *p = g_try_realloc(a->offsets, ((size_t)n + 1) * sizeof(int64_t));
        if (!p)
            goto oom;
        a->offsets = p;
    }
    if (b->nullable) {
        void *p = g_try_realloc(a->valid, (size_t)n);
        if (!p)
            goto oom;
        a->valid = p;
    }
    b->slot_cap = n;
    return TRUE;
oom:
    ctx_error(c, RT_ERROR_FORMAT, "cannot allocate room for %" G_GINT64_FORMAT " values", n);
    return FALSE;
}

static gboolean grow_data(read_ctx *c, uint64_t need)
{
    builder *b = c->b;
    if (need <= (uint64_t)b->data_cap)
        return TRUE;
    uint64_t n = b->data_cap ? (uint64_t)b->data_cap : 256;
    while (n < need)
        n *= 2;
    if (n > c->f->max_alloc)
        n = need;
    if (n > c->f->max_alloc) {
        ctx_error(c, RT_ERROR_FORMAT, "the values need more than the limit of %zu bytes", c->f->max_alloc);
        return FALSE;
    }
    void *p = g_try_realloc(b->a->data, (size_t)n);
    if (!p) {
        ctx_error(c, RT_ERROR_FORMAT, "cannot allocate %" G_GUINT64_FORMAT " bytes", n);
        return FALSE;
    }
    b->a->data = p;
    b->data_cap = (int64_t)n;
    return TRUE;
}

/* Appends the n present values vi .. vi + n - 1 of src to the next n slots. */
static gboolean emit_values(read_ctx *c, const value_src *src, int64_t vi, int64_t n)
{
    builder *b = c->b;
    rt_parquet_array *a = b->a;
    int64_t slot = a->num_values;
    if (slot + n > b->slot_cap && !grow_slots(c, slot + n))
        return FALSE;
    if (b->nullable)
        memset(a->valid + slot, 1, (size_t)n);
    const size_t w = (size_t)b->width;
    if (w) {
        uint8_t *dst = (uint8_t *)a->values + (size_t)slot * w;
        const uint32_t *idx = src->index ? src->index + vi : NULL;
        if (!idx)
            memcpy(dst, src->fixed + (size_t)vi * w, (size_t)n * w);
        else if (w == 4)
            for (int64_t k = 0; k < n; k++)
                memcpy(dst + 4 * k, src->fixed + 4 * (size_t)idx[k], 4);
        else if (w == 8)
            for (int64_t k = 0; k < n; k++)
                memcpy(dst + 8 * k, src->fixed + 8 * (size_t)idx[k], 8);
        else
            for (int64_t k = 0; k < n; k++)
                memcpy(dst + w * (size_t)k, src->fixed + w * (size_t)idx[k], w);
    } else {
        for (int64_t k = 0; k < n; k++) {
            int64_t j = src->index ? src->index[vi + k] : vi + k;
            uint32_t len = src->blen[j];
            if (!grow_data(c, (uint64_t)b->data_len + len))
                return FALSE;
            if (len)
                memcpy(a->data + b->data_len, src->bptr[j], len);
            b->data_len += len;
            a->offsets[slot + k + 1] = b->data_len;
        }
    }
    a->num_values = slot + n;
    return TRUE;
}

/* Appends a null to the next slot. */
static gboolean emit_null(read_ctx *c)
{
    builder *b = c->b;
    rt_parquet_array *a = b->a;
    int64_t slot = a->num_values;
    if (slot + 1 > b->slot_cap && !grow_slots(c, slot + 1))
        return FALSE;
    a->valid[slot] = 0; /* only nullable columns have nulls */
    a->null_count++;
    if (b->width)
        memset((uint8_t *)a->values + (size_t)slot * (size_t)b->width, 0, (size_t)b->width);
    else
        a->offsets[slot + 1] = b->data_len;
    a->num_values = slot + 1;
    return TRUE;
}

/* Starts the next row's list; its first element will be slot `first`. */
static void begin_list(builder *b, int64_t first, gboolean exists)
{
    rt_parquet_array *a = b->a;
    a->list_offsets[a->num_rows] = first;
    if (a->list_valid)
        a->list_valid[a->num_rows] = (uint8_t)exists;
    if (!exists)
        a->null_list_count++;
    a->num_rows++;
}

/* ---------------------------------------------------------------- page payloads */

/* Decompresses a page payload into buffer *dst (grown as needed); uncompressed payloads are
 * used in place. */
static gboolean page_bytes(read_ctx *c, int codec, const uint8_t *src, size_t src_len, size_t dst_len,
                           gboolean for_dict, const uint8_t **out)
{
    if (codec == PQ_CODEC_UNCOMPRESSED) {
        if (src_len != dst_len) {
            ctx_error(c, RT_ERROR_FORMAT, "an uncompressed page says %zu bytes uncompressed but holds %zu",
                      dst_len, src_len);
            return FALSE;
        }
        *out = src;
        return TRUE;
    }
    if (codec != PQ_CODEC_SNAPPY && codec != PQ_CODEC_GZIP && codec != PQ_CODEC_ZSTD) {
        ctx_error(c, RT_ERROR_UNSUPPORTED,
                  "compression codec %s (%d) is not supported (SNAPPY, GZIP, ZSTD and "
                  "UNCOMPRESSED are)",
                  pq_codec_name(codec), codec);
        return FALSE;
    }
    uint8_t *dst;
    if (for_dict) {
        if (!RESERVE(c, dict_page, dst_len, "the dictionary page"))
            return FALSE;
        dst = c->s->dict_page;
    } else {
        if (!RESERVE(c, page, dst_len, "a decompressed page"))
            return FALSE;
        dst = c->s->page;
    }
    const char *why = NULL;
    if (!pq_decompress(codec, src, src_len, dst, dst_len, &c->s->zstd, &why)) {
        ctx_error(c, RT_ERROR_FORMAT, "a %s page does not decompress: %s", pq_codec_name(codec), why);
        return FALSE;
    }
    *out = dst;
    return TRUE;
}

/* PLAIN values of a fixed width, or PLAIN byte arrays: fills src for nv values. */
static gboolean plain_values(read_ctx *c, const uint8_t *p, size_t len, int64_t nv, value_src *src,
                             const uint8_t ***ptrs, uint32_t **lens, size_t *ptr_cap, size_t *len_cap,
                             uint8_t **bools, size_t *bools_cap)
{
    const rt_parquet_column *col = &c->leaf->pub;
    memset(src, 0, sizeof *src);
    if (col->physical == RT_PARQUET_BOOLEAN) {
        if ((uint64_t)(nv + 7) / 8 > len) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "%" G_GINT64_FORMAT " PLAIN booleans need %" G_GINT64_FORMAT " bytes, the page has %zu",
                      nv, (nv + 7) / 8, len);
            return FALSE;
        }
        if (!reserve(c, (void **)bools, bools_cap, (uint64_t)nv, 1, "booleans"))
            return FALSE;
        for (int64_t i = 0; i < nv; i++)
            (*bools)[i] = (p[i >> 3] >> (i & 7)) & 1;
        src->fixed = *bools;
        return TRUE;
    }
    if (c->width) {
        if ((uint64_t)nv > len / (uint64_t)c->width) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "%" G_GINT64_FORMAT " PLAIN values of %d bytes do not fit in %zu bytes", nv, c->width,
                      len);
            return FALSE;
        }
        src->fixed = p;
        return TRUE;
    }
    /* BYTE_ARRAY: a 4-byte length then the bytes, for each value */
    if ((uint64_t)nv > len / 4) {
        ctx_error(c, RT_ERROR_FORMAT, "%" G_GINT64_FORMAT " byte arrays do not fit in %zu bytes", nv, len);
        return FALSE;
    }
    if (!reserve(c, (void **)ptrs, ptr_cap, (uint64_t)nv, sizeof **ptrs, "byte array values") ||
        !reserve(c, (void **)lens, len_cap, (uint64_t)nv, sizeof **lens, "byte array values"))
        return FALSE;
    size_t pos = 0;
    for (int64_t i = 0; i < nv; i++) {
        if (len - pos < 4) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "byte array %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " runs past the end of its page",
                      i, nv);
            return FALSE;
        }
        uint32_t n = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16 |
                     (uint32_t)p[pos + 3] << 24;
        pos += 4;
        if (n > len - pos) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "byte array %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                      " claims %u bytes, only %zu remain",
                      i, nv, n, len - pos);
            return FALSE;
        }
        (*ptrs)[i] = p + pos;
        (*lens)[i] = n;
        pos += n;
    }
    src->bptr = *ptrs;
    src->blen = *lens;
    return TRUE;
}

static gboolean read_dictionary(read_ctx *c, const pq_chunk *ch, const pq_page_header *h,
                                const uint8_t *payload)
{
    scratch *s = c->s;
    if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICTIONARY) {
        ctx_error(c, RT_ERROR_FORMAT, "the dictionary page uses encoding %s, not PLAIN",
                  pq_encoding_name(h->encoding));
        return FALSE;
    }
    if (h->num_values < 0) {
        ctx_error(c, RT_ERROR_FORMAT, "the dictionary page has %d values", h->num_values);
        return FALSE;
    }
    const uint8_t *p;
    if (!page_bytes(c, ch->codec, payload, (size_t)h->compressed_size, (size_t)h->uncompressed_size, TRUE,
                    &p))
        return FALSE;
    value_src src;
    if (!plain_values(c, p, (size_t)h->uncompressed_size, h->num_values, &src,
                      (const uint8_t ***)&s->dict_ptr, &s->dict_len, &s->dict_ptr_cap, &s->dict_len_cap,
                      &s->dict_bools, &s->dict_bools_cap))
        return FALSE;
    s->dict_fixed = src.fixed;
    s->dict_n = h->num_values;
    s->have_dict = TRUE;
    c->f->pages_decoded[c->column]++;
    return TRUE;
}

/* Levels of a v1 page: a 4-byte length + RLE hybrid, or deprecated BIT_PACKED. */
static gboolean v1_levels(read_ctx *c, int encoding, int max_level, const uint8_t **pos, const uint8_t *end,
                          uint32_t *out, int64_t n, const char *kind)
{
    const char *why = NULL;
    int bw = pq_bit_width((uint32_t)max_level);
    if (encoding == PQ_ENC_RLE) {
        if (end - *pos < 4) {
            ctx_error(c, RT_ERROR_FORMAT, "the %s levels' length runs past the end of the page", kind);
            return FALSE;
        }
        uint32_t len = (uint32_t)(*pos)[0] | (uint32_t)(*pos)[1] << 8 | (uint32_t)(*pos)[2] << 16 |
                       (uint32_t)(*pos)[3] << 24;
        const uint8_t *start = *pos + 4;
        if (len > (size_t)(end - start)) {
            ctx_error(c, RT_ERROR_FORMAT, "the %s levels claim %u bytes, the page has %td left", kind, len,
                      end - start);
            return FALSE;
        }
        const uint8_t *q = start;
        if (!rt_parquet_decode_hybrid(&q, start + len, bw, out, n, &why)) {
            ctx_error(c, RT_ERROR_FORMAT, "%s levels: %s", kind, why);
            return FALSE;
        }
        *pos = start + len;
        return TRUE;
    }
    if (encoding == PQ_ENC_BIT_PACKED) {
        if (!rt_parquet_decode_bit_packed(pos, end, bw, out, n, &why)) {
            ctx_error(c, RT_ERROR_FORMAT, "%s levels: %s", kind, why);
            return FALSE;
        }
        return TRUE;
    }
    ctx_error(c, RT_ERROR_UNSUPPORTED, "%s levels use encoding %s (%d), which is not supported", kind,
              pq_encoding_name(encoding), encoding);
    return FALSE;
}

static gboolean decode_values(read_ctx *c, const pq_page_header *h, const uint8_t *p, size_t len, int64_t nv,
                              value_src *src)
{
    scratch *s = c->s;
    const rt_parquet_column *col = &c->leaf->pub;
    const char *why = NULL;
    memset(src, 0, sizeof *src);
    if (nv == 0)
        return TRUE;
    switch (h->encoding) {
    case PQ_ENC_PLAIN:
        return plain_values(c, p, len, nv, src, (const uint8_t ***)&s->bptr, &s->blen, &s->bptr_cap,
                            &s->blen_cap, &s->bools, &s->bools_cap);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
        if (!s->have_dict) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "a dictionary-encoded page has no dictionary page "
                      "before it");
            return FALSE;
        }
        if (len < 1) {
            ctx_error(c, RT_ERROR_FORMAT, "a dictionary-encoded page has no index bit width");
            return FALSE;
        }
        if (!RESERVE(c, idx, (uint64_t)nv, "dictionary indices"))
            return FALSE;
        const uint8_t *q = p + 1;
        if (!rt_parquet_decode_hybrid(&q, p + len, p[0], s->idx, nv, &why)) {
            ctx_error(c, RT_ERROR_FORMAT, "dictionary indices: %s", why);
            return FALSE;
        }
        for (int64_t i = 0; i < nv; i++) {
            if (s->idx[i] >= s->dict_n) {
                ctx_error(c, RT_ERROR_FORMAT,
                          "dictionary index %u is out of range (the dictionary has %" G_GINT64_FORMAT
                          " entries)",
                          s->idx[i], s->dict_n);
                return FALSE;
            }
        }
        src->fixed = s->dict_fixed;
        src->bptr = s->dict_ptr;
        src->blen = s->dict_len;
        src->index = s->idx;
        return TRUE;
    }
    case PQ_ENC_RLE: {
        if (col->physical != RT_PARQUET_BOOLEAN)
            break;
        if (len < 4) {
            ctx_error(c, RT_ERROR_FORMAT, "RLE booleans lack their length");
            return FALSE;
        }
        uint32_t n = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        if (n > len - 4) {
            ctx_error(c, RT_ERROR_FORMAT, "RLE booleans claim %u bytes, the page has %zu", n, len - 4);
            return FALSE;
        }
        if (!RESERVE(c, idx, (uint64_t)nv, "booleans") || !RESERVE(c, bools, (uint64_t)nv, "booleans"))
            return FALSE;
        const uint8_t *q = p + 4;
        if (!rt_parquet_decode_hybrid(&q, p + 4 + n, 1, s->idx, nv, &why)) {
            ctx_error(c, RT_ERROR_FORMAT, "RLE booleans: %s", why);
            return FALSE;
        }
        for (int64_t i = 0; i < nv; i++)
            s->bools[i] = (uint8_t)s->idx[i];
        src->fixed = s->bools;
        return TRUE;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT: {
        if (col->physical == RT_PARQUET_BOOLEAN || c->width == 0)
            break;
        size_t w = (size_t)c->width;
        if ((uint64_t)nv > len / w) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "%" G_GINT64_FORMAT " BYTE_STREAM_SPLIT values do not fit in %zu bytes", nv, len);
            return FALSE;
        }
        if (!RESERVE(c, bss, (uint64_t)nv * w, "BYTE_STREAM_SPLIT values"))
            return FALSE;
        /* byte k of value i is at k * nv + i */
        for (size_t k = 0; k < w; k++)
            for (int64_t i = 0; i < nv; i++)
                s->bss[(size_t)i * w + k] = p[k * (size_t)nv + (size_t)i];
        src->fixed = s->bss;
        return TRUE;
    }
    default:
        break;
    }
    ctx_error(c, RT_ERROR_UNSUPPORTED,
              "values use encoding %s (%d), which this reader does not support for %s columns",
              pq_encoding_name(h->encoding), h->encoding,
              col->physical == RT_PARQUET_BYTE_ARRAY ? "BYTE_ARRAY" : "this type of");
    return FALSE;
}

/* ---------------------------------------------------------------- levels -> rows */

typedef struct {
    int64_t cur_row; /* row (within the row group) of the last entry seen; -1 before any */
    int64_t row_a;   /* window [row_a, row_b) within the row group */
    int64_t row_b;
    int64_t rg_rows;
    gboolean done;
} row_state;

/* Present values are appended in runs (one copy per run instead of per value); a run is
 * flushed before a null and at the end. */
static gboolean assemble(read_ctx *c, const uint32_t *rep, const uint32_t *def, int64_t n,
                         const value_src *src, row_state *st)
{
    const pq_leaf *leaf = c->leaf;
    const uint32_t max_def = (uint32_t)leaf->pub.max_definition_level;
    const uint32_t element_def = (uint32_t)leaf->element_def, list_def = (uint32_t)leaf->list_def;
    const gboolean list = leaf->pub.shape == RT_PARQUET_LIST;
    rt_parquet_array *a = c->b->a;
    int64_t vi = 0, run_vi = 0, run_n = 0;
    gboolean ok = TRUE;
    for (int64_t i = 0; i < n; i++) {
        uint32_t d = def ? def[i] : max_def;
        if (!list || rep[i] == 0) {
            if (st->cur_row + 1 >= st->row_b) {
                if (st->row_b == st->rg_rows) {
                    ctx_error(c, RT_ERROR_FORMAT,
                              "the column chunk holds more rows than its row group's %" G_GINT64_FORMAT,
                              st->rg_rows);
                    ok = FALSE;
                } else {
                    st->done = TRUE;
                }
                break;
            }
            st->cur_row++;
            if (st->cur_row < st->row_a) {
                vi += d == max_def;
                continue;
            }
            if (list)
                begin_list(c->b, a->num_values + run_n, d >= list_def);
            else
                a->num_rows++;
        } else if (st->cur_row < 0) {
            ctx_error(c, RT_ERROR_FORMAT, "the first value continues a list that no row started");
            ok = FALSE;
            break;
        } else if (d < element_def) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "a repeated entry (repetition level %u) holds no list element (definition "
                      "level %u)",
                      rep[i], d);
            ok = FALSE;
            break;
        } else if (st->cur_row < st->row_a) {
            vi += d == max_def;
            continue;
        }
        /* in the window: a value, a null, or (lists) no element at all */
        if (d == max_def) {
            if (run_n == 0)
                run_vi = vi;
            run_n++;
            vi++;
        } else if (!list || d >= element_def) {
            if (run_n && !emit_values(c, src, run_vi, run_n))
                return FALSE;
            run_n = 0;
            if (!emit_null(c))
                return FALSE;
        }
    }
    if (ok && run_n && !emit_values(c, src, run_vi, run_n))
        return FALSE;
    return ok;
}

static gboolean read_data_page(read_ctx *c, const pq_chunk *ch, const pq_page_header *h,
                               const uint8_t *payload, row_state *st)
{
    scratch *s = c->s;
    const rt_parquet_column *col = &c->leaf->pub;
    const int max_def = col->max_definition_level, max_rep = col->max_repetition_level;
    const int64_t n = h->num_values;
    const char *why = NULL;
    const uint8_t *values;
    size_t values_len;

    if ((max_rep && !RESERVE(c, rep, (uint64_t)n, "repetition levels")) ||
        (max_def && !RESERVE(c, def, (uint64_t)n, "definition levels")))
        return FALSE;
    if (h->type == PQ_PAGE_DATA) {
        const uint8_t *p;
        if (!page_bytes(c, ch->codec, payload, (size_t)h->compressed_size, (size_t)h->uncompressed_size,
                        FALSE, &p))
            return FALSE;
        const uint8_t *pos = p, *end = p + h->uncompressed_size;
        if (max_rep && !v1_levels(c, h->rep_encoding, max_rep, &pos, end, s->rep, n, "repetition"))
            return FALSE;
        if (max_def && !v1_levels(c, h->def_encoding, max_def, &pos, end, s->def, n, "definition"))
            return FALSE;
        values = pos;
        values_len = (size_t)(end - pos);
    } else {
        if (h->rep_len < 0 || h->def_len < 0 || (int64_t)h->rep_len + h->def_len > h->compressed_size ||
            (int64_t)h->rep_len + h->def_len > h->uncompressed_size) {
            ctx_error(c, RT_ERROR_FORMAT, "a v2 page's level lengths (%d + %d) exceed its size (%d)",
                      h->rep_len, h->def_len, h->compressed_size);
            return FALSE;
        }
        const uint8_t *q = payload;
        if (max_rep && !rt_parquet_decode_hybrid(&q, payload + h->rep_len, pq_bit_width((uint32_t)max_rep),
                                                 s->rep, n, &why)) {
            ctx_error(c, RT_ERROR_FORMAT, "repetition levels: %s", why);
            return FALSE;
        }
        q = payload + h->rep_len;
        if (max_def &&
            !rt_parquet_decode_hybrid(&q, q + h->def_len, pq_bit_width((uint32_t)max_def), s->def, n, &why)) {
            ctx_error(c, RT_ERROR_FORMAT, "definition levels: %s", why);
            return FALSE;
        }
        const uint8_t *vsrc = payload + h->rep_len + h->def_len;
        size_t vclen = (size_t)h->compressed_size - (size_t)h->rep_len - (size_t)h->def_len;
        size_t vulen = (size_t)h->uncompressed_size - (size_t)h->rep_len - (size_t)h->def_len;
        if (vclen == 0) {
            /* nothing stored (all nulls): an empty input is not a valid compressed stream */
            values = vsrc;
            values_len = 0;
        } else if (h->is_compressed) {
            if (!page_bytes(c, ch->codec, vsrc, vclen, vulen, FALSE, &values))
                return FALSE;
            values_len = vulen;
        } else {
            values = vsrc;
            values_len = vclen;
        }
    }

    int64_t nv = n;
    if (max_def) {
        nv = 0;
        for (int64_t i = 0; i < n; i++) {
            if (s->def[i] > (uint32_t)max_def) {
                ctx_error(c, RT_ERROR_FORMAT, "definition level %u exceeds the maximum %d", s->def[i],
                          max_def);
                return FALSE;
            }
            nv += s->def[i] == (uint32_t)max_def;
        }
    }
    for (int64_t i = 0; max_rep && i < n; i++) {
        if (s->rep[i] > (uint32_t)max_rep) {
            ctx_error(c, RT_ERROR_FORMAT, "repetition level %u exceeds the maximum %d", s->rep[i], max_rep);
            return FALSE;
        }
    }
    if (h->type == PQ_PAGE_DATA_V2 && max_rep) {
        /* v2 pages hold whole rows, and say how many: the row skipping relies on it */
        int64_t starts = 0;
        for (int64_t i = 0; i < n; i++)
            starts += s->rep[i] == 0;
        if ((n > 0 && s->rep[0] != 0) || starts != h->num_rows) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "a v2 page says %d rows but its repetition levels start %" G_GINT64_FORMAT "%s",
                      h->num_rows, starts, n > 0 && s->rep[0] ? ", the first in mid-row" : "");
            return FALSE;
        }
    }
    value_src src;
    if (!decode_values(c, h, values, values_len, nv, &src))
        return FALSE;
    c->f->pages_decoded[c->column]++;
    return assemble(c, max_rep ? s->rep : NULL, max_def ? s->def : NULL, n, &src, st);
}

/* ---------------------------------------------------------------- column chunks */

/* The page CRC, when the writer stored one, covers the page's bytes as stored. Checked only
 * for pages that are decoded. */
static gboolean check_crc(read_ctx *c, const pq_page_header *h, const uint8_t *payload, ptrdiff_t at)
{
    if (!h->has_crc)
        return TRUE;
    uint32_t crc = (uint32_t)crc32(0L, payload, (uInt)h->compressed_size);
    if (crc == h->crc)
        return TRUE;
    ctx_error(c, RT_ERROR_FORMAT,
              "the page at byte %td of the chunk fails its CRC check (stored %08x, computed %08x): the "
              "file is corrupt",
              at, h->crc, crc);
    return FALSE;
}

static gboolean read_chunk(read_ctx *c, const pq_chunk *ch, int64_t row_a, int64_t row_b)
{
    scratch *s = c->s;
    const pq_row_group *rg = &c->f->row_groups[c->row_group];
    const gboolean flat = c->leaf->pub.max_repetition_level == 0;
    row_state st = {.cur_row = -1, .row_a = row_a, .row_b = row_b, .rg_rows = rg->num_rows};

    s->have_dict = FALSE;
    s->dict_n = 0;
    if (ch->num_values == 0)
        return TRUE; /* an empty chunk of an empty row group (checked at open) */
    size_t len = (size_t)(ch->end - ch->start);
    if (!RESERVE(c, chunk, len, "the column chunk") || !pq_read_at(c->f, ch->start, len, s->chunk, c->error))
        return FALSE;
    const uint8_t *base = s->chunk, *p = s->chunk, *end = s->chunk + len;
    int64_t values_seen = 0;
    while (!st.done && values_seen < ch->num_values) {
        pq_page_header h;
        const char *why = NULL;
        if (p >= end) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "the column chunk's pages end after %" G_GINT64_FORMAT " of its %" G_GINT64_FORMAT
                      " values",
                      values_seen, ch->num_values);
            return FALSE;
        }
        size_t hlen = pq_read_page_header(p, (size_t)(end - p), &h, &why);
        if (!hlen) {
            ctx_error(c, RT_ERROR_FORMAT, "malformed page header at byte %td of the chunk: %s", p - base,
                      why);
            return FALSE;
        }
        const uint8_t *payload = p + hlen;
        if ((size_t)h.compressed_size > (size_t)(end - payload)) {
            ctx_error(c, RT_ERROR_FORMAT,
                      "the page at byte %td of the chunk claims %d bytes, only %td remain", p - base,
                      h.compressed_size, end - payload);
            return FALSE;
        }
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (s->have_dict || values_seen > 0) {
                ctx_error(c, RT_ERROR_FORMAT, "a dictionary page follows %s",
                          s->have_dict ? "another dictionary page" : "data pages");
                return FALSE;
            }
            if (!check_crc(c, &h, payload, p - base) || !read_dictionary(c, ch, &h, payload))
                return FALSE;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            if (h.num_values < 0 || h.num_values > ch->num_values - values_seen) {
                ctx_error(c, RT_ERROR_FORMAT,
                          "a page holds %d values, more than the %" G_GINT64_FORMAT " the chunk has left",
                          h.num_values, ch->num_values - values_seen);
                return FALSE;
            }
            if (h.type == PQ_PAGE_DATA_V2 &&
                (h.num_rows < 0 || h.num_rows > h.num_values || (flat && h.num_rows != h.num_values))) {
                ctx_error(c, RT_ERROR_FORMAT, "a v2 page says %d rows for %d values%s", h.num_rows,
                          h.num_values, flat ? " of a flat column" : "");
                return FALSE;
            }
            int64_t page_rows = h.type == PQ_PAGE_DATA_V2 ? h.num_rows : flat ? h.num_values : -1;
            if (page_rows >= 0 && st.cur_row + 1 + page_rows <= row_a) {
                st.cur_row += page_rows; /* entirely before the window: not decoded */
            } else {
                if (!check_crc(c, &h, payload, p - base) || !read_data_page(c, ch, &h, payload, &st))
                    return FALSE;
                if ((flat || h.type == PQ_PAGE_DATA_V2) && st.cur_row + 1 >= row_b && row_b < rg->num_rows)
                    st.done = TRUE;
            }
            values_seen += h.num_values;
        }
        /* INDEX_PAGE and page types from the future are skipped */
        p = payload + h.compressed_size;
    }
    if (!st.done && st.cur_row + 1 != rg->num_rows) {
        ctx_error(c, RT_ERROR_FORMAT,
                  "the column chunk holds %" G_GINT64_FORMAT " rows, its row group %" G_GINT64_FORMAT,
                  st.cur_row + 1, rg->num_rows);
        return FALSE;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- reads */

static void array_clear(rt_parquet_array *a)
{
    g_free(a->values);
    g_free(a->offsets);
    g_free(a->data);
    g_free(a->valid);
    g_free(a->list_offsets);
    g_free(a->list_valid);
}

void rt_parquet_batch_free(rt_parquet_batch *batch)
{
    if (!batch)
        return;
    for (int i = 0; i < batch->n_arrays; i++)
        array_clear(&batch->arrays[i]);
    g_free(batch->arrays);
    g_free(batch);
}

static void scratch_clear(scratch *s)
{
    g_free(s->chunk);
    g_free(s->page);
    g_free(s->dict_page);
    g_free(s->rep);
    g_free(s->def);
    g_free(s->idx);
    g_free(s->bools);
    g_free((gpointer)s->bptr);
    g_free(s->blen);
    g_free(s->bss);
    g_free(s->dict_bools);
    g_free((gpointer)s->dict_ptr);
    g_free(s->dict_len);
    pq_decompress_free(s->zstd);
}

/* Prepares the output of one column for num_rows rows. */
static gboolean builder_init(read_ctx *c, builder *b, rt_parquet_array *a, int64_t num_rows)
{
    const rt_parquet_column *col = &c->leaf->pub;
    memset(b, 0, sizeof *b);
    b->a = a;
    b->width = c->width;
    b->list = col->shape == RT_PARQUET_LIST;
    b->nullable = col->nullable;
    a->column = c->column;
    a->list_size = -1;
    if (!b->width) {
        a->data = g_try_malloc(1);
        if (!a->data) {
            ctx_error(c, RT_ERROR_FORMAT, "cannot allocate");
            return FALSE;
        }
    }
    if (!grow_slots(c, b->list || num_rows == 0 ? 1 : num_rows))
        return FALSE;
    if (!b->width)
        a->offsets[0] = 0;
    if (b->list) {
        if ((uint64_t)num_rows + 1 > c->f->max_alloc / sizeof(int64_t)) {
            ctx_error(c, RT_ERROR_FORMAT, "%" G_GINT64_FORMAT " rows exceed the allocation limit", num_rows);
            return FALSE;
        }
        a->list_offsets = g_try_malloc(((size_t)num_rows + 1) * sizeof(int64_t));
        if (col->list_nullable)
            a->list_valid = g_try_malloc((size_t)num_rows + 1);
        if (!a->list_offsets || (col->list_nullable && !a->list_valid)) {
            ctx_error(c, RT_ERROR_FORMAT, "cannot allocate list offsets for %" G_GINT64_FORMAT " rows",
                      num_rows);
            return FALSE;
        }
        a->list_offsets[0] = 0;
    }
    return TRUE;
}

static void builder_finish(builder *b)
{
    rt_parquet_array *a = b->a;
    if (a->null_count == 0) {
        g_free(a->valid);
        a->valid = NULL;
    }
    if (!b->list)
        return;
    a->list_offsets[a->num_rows] = a->num_values;
    if (a->null_list_count == 0) {
        g_free(a->list_valid);
        a->list_valid = NULL;
    }
    if (a->null_list_count == 0 && a->num_rows > 0) {
        int64_t d = a->list_offsets[1] - a->list_offsets[0];
        for (int64_t r = 1; r < a->num_rows && d >= 0; r++)
            if (a->list_offsets[r + 1] - a->list_offsets[r] != d)
                d = -1;
        a->list_size = d;
    }
}

static gboolean check_columns(rt_parquet_file *f, const int *columns, int n_columns, GError **error)
{
    if (n_columns < 0 || (n_columns > 0 && !columns)) {
        pq_error(error, f, RT_ERROR_INVALID_ARG, "no column list given");
        return FALSE;
    }
    for (int i = 0; i < n_columns; i++) {
        int k = columns[i];
        if (k < 0 || k >= f->n_leaves) {
            pq_error(error, f, RT_ERROR_INVALID_ARG,
                     "column index %d is out of range (the file has %d columns)", k, f->n_leaves);
            return FALSE;
        }
        const rt_parquet_column *col = &f->leaves[k].pub;
        if (col->shape == RT_PARQUET_NESTED) {
            pq_error(error, f, RT_ERROR_UNSUPPORTED,
                     "column '%s' has %d repeated levels (lists of lists); this reader reads "
                     "columns with at most one",
                     col->path, col->max_repetition_level);
            return FALSE;
        }
    }
    return TRUE;
}

rt_parquet_batch *rt_parquet_file_read(rt_parquet_file *f, const int *columns, int n_columns,
                                       int64_t first_row, int64_t num_rows, GError **error)
{
    g_return_val_if_fail(f != NULL, NULL);
    if (!check_columns(f, columns, n_columns, error))
        return NULL;
    if (first_row < 0 || num_rows < 0 || first_row > f->num_rows || num_rows > f->num_rows - first_row) {
        pq_error(error, f, RT_ERROR_INVALID_ARG,
                 "rows [%" G_GINT64_FORMAT ", +%" G_GINT64_FORMAT ") are outside the file's %" G_GINT64_FORMAT
                 " rows",
                 first_row, num_rows, f->num_rows);
        return NULL;
    }
    rt_parquet_batch *batch = g_new0(rt_parquet_batch, 1);
    batch->first_row = first_row;
    batch->num_rows = num_rows;
    batch->n_arrays = n_columns;
    batch->arrays = g_new0(rt_parquet_array, n_columns ? n_columns : 1);
    scratch s = {0};
    const int64_t last = first_row + num_rows;
    gboolean ok = TRUE;
    for (int k = 0; ok && k < n_columns; k++) {
        builder b;
        read_ctx c = {.f = f,
                      .s = &s,
                      .b = &b,
                      .column = columns[k],
                      .leaf = &f->leaves[columns[k]],
                      .error = error,
                      .row_group = -1};
        c.width = value_width(&c.leaf->pub);
        ok = builder_init(&c, &b, &batch->arrays[k], num_rows);
        for (int g = 0; ok && g < f->n_row_groups; g++) {
            const pq_row_group *rg = &f->row_groups[g];
            int64_t lo = MAX(first_row, rg->first_row), hi = MIN(last, rg->first_row + rg->num_rows);
            if (lo >= hi)
                continue;
            c.row_group = g;
            int64_t rows_before = batch->arrays[k].num_rows;
            ok = read_chunk(&c, &rg->chunks[columns[k]], lo - rg->first_row, hi - rg->first_row);
            if (ok && batch->arrays[k].num_rows - rows_before != hi - lo) {
                ctx_error(&c, RT_ERROR_FORMAT,
                          "expected %" G_GINT64_FORMAT " rows, the pages gave %" G_GINT64_FORMAT, hi - lo,
                          batch->arrays[k].num_rows - rows_before);
                ok = FALSE;
            }
        }
        if (ok)
            builder_finish(&b);
    }
    scratch_clear(&s);
    if (!ok) {
        rt_parquet_batch_free(batch);
        return NULL;
    }
    return batch;
}

rt_parquet_batch *rt_parquet_file_read_row_group(rt_parquet_file *f, int row_group, const int *columns,
                                                 int n_columns, GError **error)
{
    g_return_val_if_fail(f != NULL, NULL);
    if (row_group < 0 || row_group >= f->n_row_groups) {
        pq_error(error, f, RT_ERROR_INVALID_ARG, "row group %d is out of range (the file has %d)", row_group,
                 f->n_row_groups);
        return NULL;
    }
    const pq_row_group *rg = &f->row_groups[row_group];
    return rt_parquet_file_read(f, columns, n_columns, rg->first_row, rg->num_rows, error);
}
