/* Parquet's integer run encodings: the RLE/bit-packed hybrid (levels, dictionary indices,
 * RLE booleans) and the deprecated BIT_PACKED level encoding. Encodings.md in
 * apache/parquet-format describes both. */
#include "config.h"

#include "data/parquet-private.h"
#include "data/thrift-compact.h"

int pq_bit_width(uint32_t max_value)
{
    int bits = 0;
    while (max_value) {
        bits++;
        max_value >>= 1;
    }
    return bits;
}

/* n values of bw bits packed from the least significant bit of each byte; the caller has
 * checked that ceil(n * bw / 8) bytes are there. */
static void unpack_lsb_first(const uint8_t *p, int bw, uint32_t *out, int64_t n)
{
    uint64_t buf = 0;
    int bits = 0;
    uint32_t mask = bw == 32 ? UINT32_MAX : ((uint32_t)1 << bw) - 1;
    if (bw == 0) {
        for (int64_t i = 0; i < n; i++)
            out[i] = 0;
        return;
    }
    int64_t i = 0;
    if (bw <= 8) {
        /* levels and small dictionaries: 8 values at a time from one little-endian word */
        for (; i + 8 <= n; i += 8, p += bw) {
            uint64_t word = 0;
            for (int k = 0; k < bw; k++)
                word |= (uint64_t)p[k] << (8 * k);
            for (int k = 0; k < 8; k++)
                out[i + k] = (uint32_t)(word >> (k * bw)) & mask;
        }
    }
    for (; i < n; i++) {
        while (bits < bw) {
            buf |= (uint64_t)*p++ << bits;
            bits += 8;
        }
        out[i] = (uint32_t)buf & mask;
        buf >>= bw;
        bits -= bw;
    }
}

gboolean rt_parquet_decode_hybrid(const uint8_t **pos, const uint8_t *end, int bit_width, uint32_t *out,
                                  int64_t count, const char **why)
{
    const uint8_t *p = *pos;
    int64_t done = 0;
    int value_bytes = (bit_width + 7) / 8;

    if (bit_width < 0 || bit_width > 32) {
        *why = "bit width is above 32";
        return FALSE;
    }
    while (done < count) {
        uint64_t header;
        if (!rt_thrift_read_uleb128(&p, end, &header)) {
            *why = "runs end before all values are decoded";
            return FALSE;
        }
        if (header & 1) {
            uint64_t groups = header >> 1;
            if (groups > ((uint64_t)1 << 28)) {
                *why = "bit-packed run is longer than 2^31 values";
                return FALSE;
            }
            uint64_t take = groups * 8;
            if (take > (uint64_t)(count - done))
                take = (uint64_t)(count - done);
            uint64_t need = (take * (uint64_t)bit_width + 7) / 8;
            uint64_t avail = (uint64_t)(end - p);
            if (need > avail) {
                *why = "bit-packed run runs past the end of its bytes";
                return FALSE;
            }
            unpack_lsb_first(p, bit_width, out + done, (int64_t)take);
            /* the last run may stop short of its padding; never step past the end */
            uint64_t full = groups * (uint64_t)bit_width;
            p += full < avail ? full : avail;
            done += (int64_t)take;
        } else {
            uint64_t run = header >> 1;
            if (end - p < value_bytes) {
                *why = "RLE run value runs past the end of its bytes";
                return FALSE;
            }
            uint32_t value = 0;
            for (int i = 0; i < value_bytes; i++)
                value |= (uint32_t)p[i] << (8 * i);
            p += value_bytes;
            if (bit_width < 32 && (value >> bit_width) != 0) {
                *why = "RLE run value is wider than the bit width";
                return FALSE;
            }
            uint64_t take = run;
            if (take > (uint64_t)(count - done))
                take = (uint64_t)(count - done);
            for (uint64_t i = 0; i < take; i++)
                out[done + (int64_t)i] = value;
            done += (int64_t)take;
        }
    }
    *pos = p;
    return TRUE;
}

gboolean rt_parquet_decode_bit_packed(const uint8_t **pos, const uint8_t *end, int bit_width, uint32_t *out,
                                      int64_t count, const char **why)
{
    if (bit_width < 0 || bit_width > 32) {
        *why = "bit width is above 32";
        return FALSE;
    }
    uint64_t need = ((uint64_t)count * (uint64_t)bit_width + 7) / 8;
    if (need > (uint64_t)(end - *pos)) {
        *why = "BIT_PACKED levels run past the end of their bytes";
        return FALSE;
    }
    const uint8_t *p = *pos;
    uint64_t bit = 0;
    for (int64_t i = 0; i < count; i++) {
        uint32_t v = 0;
        for (int b = 0; b < bit_width; b++, bit++)
            v = (v << 1) | ((p[bit >> 3] >> (7 - (bit & 7))) & 1u);
        out[i] = v;
    }
    *pos = p + need;
    return TRUE;
}
