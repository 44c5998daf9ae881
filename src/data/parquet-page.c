/* Parquet page headers (PageHeader in parquet.thrift): the page type, sizes, CRC and the
 * header of a data page v1, v2 or dictionary page, with its required fields checked. */
#include "config.h"

#include "data/parquet-private.h"
#include "data/thrift-compact.h"

#include <string.h>

enum {
    PH_TYPE = 1 << 0,
    PH_USIZE = 1 << 1,
    PH_CSIZE = 1 << 2,
    PH_NUM_VALUES = 1 << 3,
    PH_ENCODING = 1 << 4,
    PH_DEF_ENC = 1 << 5,
    PH_REP_ENC = 1 << 6,
    PH_NUM_ROWS = 1 << 7,
    PH_DEF_LEN = 1 << 8,
    PH_REP_LEN = 1 << 9,
    PH_V1 = 1 << 10,
    PH_V2 = 1 << 11,
    PH_DICT = 1 << 12,
};

static void read_data_header(rt_thrift_reader *r, pq_page_header *h)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I32) {
            h->num_values = rt_thrift_read_i32(r);
            h->seen |= PH_NUM_VALUES;
        } else if (id == 2 && t == RT_THRIFT_I32) {
            h->encoding = rt_thrift_read_i32(r);
            h->seen |= PH_ENCODING;
        } else if (id == 3 && t == RT_THRIFT_I32) {
            h->def_encoding = rt_thrift_read_i32(r);
            h->seen |= PH_DEF_ENC;
        } else if (id == 4 && t == RT_THRIFT_I32) {
            h->rep_encoding = rt_thrift_read_i32(r);
            h->seen |= PH_REP_ENC;
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void read_dict_header(rt_thrift_reader *r, pq_page_header *h)
{
    int16_t id = 0;
    rt_thrift_type t;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I32) {
            h->num_values = rt_thrift_read_i32(r);
            h->seen |= PH_NUM_VALUES;
        } else if (id == 2 && t == RT_THRIFT_I32) {
            h->encoding = rt_thrift_read_i32(r);
            h->seen |= PH_ENCODING;
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

static void read_v2_header(rt_thrift_reader *r, pq_page_header *h)
{
    int16_t id = 0;
    rt_thrift_type t;
    h->is_compressed = TRUE;
    rt_thrift_struct_begin(r);
    while (rt_thrift_next_field(r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I32) {
            h->num_values = rt_thrift_read_i32(r);
            h->seen |= PH_NUM_VALUES;
        } else if (id == 3 && t == RT_THRIFT_I32) {
            h->num_rows = rt_thrift_read_i32(r);
            h->seen |= PH_NUM_ROWS;
        } else if (id == 4 && t == RT_THRIFT_I32) {
            h->encoding = rt_thrift_read_i32(r);
            h->seen |= PH_ENCODING;
        } else if (id == 5 && t == RT_THRIFT_I32) {
            h->def_len = rt_thrift_read_i32(r);
            h->seen |= PH_DEF_LEN;
        } else if (id == 6 && t == RT_THRIFT_I32) {
            h->rep_len = rt_thrift_read_i32(r);
            h->seen |= PH_REP_LEN;
        } else if (id == 7 && (t == RT_THRIFT_TRUE || t == RT_THRIFT_FALSE)) {
            h->is_compressed = t == RT_THRIFT_TRUE;
        } else {
            rt_thrift_skip(r, t);
        }
    }
    rt_thrift_struct_end(r);
}

/* See parquet-private.h. */
size_t pq_read_page_header(const uint8_t *p, size_t avail, pq_page_header *h, const char **why)
{
    rt_thrift_reader r;
    int16_t id = 0;
    rt_thrift_type t;
    memset(h, 0, sizeof *h);
    rt_thrift_init(&r, p, avail);
    rt_thrift_struct_begin(&r);
    while (rt_thrift_next_field(&r, &id, &t)) {
        if (id == 1 && t == RT_THRIFT_I32) {
            h->type = rt_thrift_read_i32(&r);
            h->seen |= PH_TYPE;
        } else if (id == 2 && t == RT_THRIFT_I32) {
            h->uncompressed_size = rt_thrift_read_i32(&r);
            h->seen |= PH_USIZE;
        } else if (id == 3 && t == RT_THRIFT_I32) {
            h->compressed_size = rt_thrift_read_i32(&r);
            h->seen |= PH_CSIZE;
        } else if (id == 4 && t == RT_THRIFT_I32) {
            h->crc = (uint32_t)rt_thrift_read_i32(&r);
            h->has_crc = TRUE;
        } else if (id == 5 && t == RT_THRIFT_STRUCT && !(h->seen & PH_V1)) {
            read_data_header(&r, h);
            h->seen |= PH_V1;
        } else if (id == 7 && t == RT_THRIFT_STRUCT && !(h->seen & PH_DICT)) {
            read_dict_header(&r, h);
            h->seen |= PH_DICT;
        } else if (id == 8 && t == RT_THRIFT_STRUCT && !(h->seen & PH_V2)) {
            read_v2_header(&r, h);
            h->seen |= PH_V2;
        } else {
            rt_thrift_skip(&r, t);
        }
    }
    rt_thrift_struct_end(&r);
    if (rt_thrift_failed(&r)) {
        *why = rt_thrift_error(&r);
        return 0;
    }
    unsigned need = PH_TYPE | PH_USIZE | PH_CSIZE;
    if (h->type == PQ_PAGE_DATA)
        need |= PH_V1 | PH_NUM_VALUES | PH_ENCODING | PH_DEF_ENC | PH_REP_ENC;
    else if (h->type == PQ_PAGE_DATA_V2)
        need |= PH_V2 | PH_NUM_VALUES | PH_NUM_ROWS | PH_ENCODING | PH_DEF_LEN | PH_REP_LEN;
    else if (h->type == PQ_PAGE_DICTIONARY)
        need |= PH_DICT | PH_NUM_VALUES | PH_ENCODING;
    if ((h->seen & need) != need) {
        *why = "the page header lacks a required field";
        return 0;
    }
    if (h->uncompressed_size < 0 || h->compressed_size < 0) {
        *why = "the page header has a negative size";
        return 0;
    }
    return rt_thrift_consumed(&r);
}

const char *pq_encoding_name(int encoding)
{
    switch (encoding) {
    case PQ_ENC_PLAIN:
        return "PLAIN";
    case PQ_ENC_PLAIN_DICTIONARY:
        return "PLAIN_DICTIONARY";
    case PQ_ENC_RLE:
        return "RLE";
    case PQ_ENC_BIT_PACKED:
        return "BIT_PACKED";
    case PQ_ENC_DELTA_BINARY_PACKED:
        return "DELTA_BINARY_PACKED";
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        return "DELTA_LENGTH_BYTE_ARRAY";
    case PQ_ENC_DELTA_BYTE_ARRAY:
        return "DELTA_BYTE_ARRAY";
    case PQ_ENC_RLE_DICTIONARY:
        return "RLE_DICTIONARY";
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return "BYTE_STREAM_SPLIT";
    default:
        return "unknown";
    }
}
