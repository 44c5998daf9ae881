/* Page decompression for the Parquet reader: SNAPPY (raw blocks, libsnappy), GZIP (zlib,
 * one or more concatenated members), ZSTD (libzstd, one or more frames). Every codec must
 * produce exactly the page's declared uncompressed size; more or less is an error, and no
 * codec is ever asked to write past the buffer the caller sized from that declaration. */
#include "config.h"

#include "data/parquet-private.h"

#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

const char *pq_codec_name(int codec)
{
    switch (codec) {
    case PQ_CODEC_UNCOMPRESSED:
        return "UNCOMPRESSED";
    case PQ_CODEC_SNAPPY:
        return "SNAPPY";
    case PQ_CODEC_GZIP:
        return "GZIP";
    case PQ_CODEC_LZO:
        return "LZO";
    case PQ_CODEC_BROTLI:
        return "BROTLI";
    case PQ_CODEC_LZ4:
        return "LZ4";
    case PQ_CODEC_ZSTD:
        return "ZSTD";
    case PQ_CODEC_LZ4_RAW:
        return "LZ4_RAW";
    default:
        return "unknown";
    }
}

static gboolean inflate_members(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                                const char **why)
{
    z_stream zs = {0};
    /* 15 + 32: accept a gzip or a zlib header */
    if (inflateInit2(&zs, 15 + 32) != Z_OK) {
        *why = "zlib could not start";
        return FALSE;
    }
    gboolean ok = FALSE;
    zs.next_in = (Bytef *)src;
    zs.next_out = dst;
    /* zlib counts in uInt: pages are below 2^31 bytes (page sizes are i32) */
    zs.avail_in = (uInt)src_len;
    zs.avail_out = (uInt)dst_len;
    for (;;) {
        int rc = inflate(&zs, Z_FINISH);
        if (rc == Z_STREAM_END) {
            if (zs.avail_in == 0) {
                ok = zs.avail_out == 0;
                if (!ok)
                    *why = "GZIP data is shorter than the page's uncompressed size";
                break;
            }
            /* another member follows (parquet-mr writes several per page) */
            if (inflateReset(&zs) != Z_OK) {
                *why = "zlib could not restart for the next member";
                break;
            }
            continue;
        }
        if (rc == Z_BUF_ERROR || rc == Z_OK)
            *why = zs.avail_out == 0 ? "GZIP data is longer than the page's uncompressed size"
                                     : "GZIP data is truncated";
        else
            *why = "GZIP data is corrupt";
        break;
    }
    inflateEnd(&zs);
    return ok;
}

gboolean pq_decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                       void **zstd_ctx, const char **why)
{
    switch (codec) {
    case PQ_CODEC_UNCOMPRESSED:
        if (src_len != dst_len) {
            *why = "uncompressed page sizes disagree";
            return FALSE;
        }
        memcpy(dst, src, dst_len);
        return TRUE;
    case PQ_CODEC_SNAPPY: {
        size_t n = 0;
        if (snappy_uncompressed_length((const char *)src, src_len, &n) != SNAPPY_OK) {
            *why = "SNAPPY data is corrupt";
            return FALSE;
        }
        if (n != dst_len) {
            *why = "SNAPPY data does not decompress to the page's uncompressed size";
            return FALSE;
        }
        size_t out = dst_len;
        if (snappy_uncompress((const char *)src, src_len, (char *)dst, &out) != SNAPPY_OK || out != dst_len) {
            *why = "SNAPPY data is corrupt";
            return FALSE;
        }
        return TRUE;
    }
    case PQ_CODEC_GZIP:
        if (src_len > UINT32_MAX || dst_len > UINT32_MAX) {
            *why = "GZIP page is too large";
            return FALSE;
        }
        return inflate_members(src, src_len, dst, dst_len, why);
    case PQ_CODEC_ZSTD: {
        if (!*zstd_ctx)
            *zstd_ctx = ZSTD_createDCtx();
        if (!*zstd_ctx) {
            *why = "zstd could not start";
            return FALSE;
        }
        size_t n = ZSTD_decompressDCtx(*zstd_ctx, dst, dst_len, src, src_len);
        if (ZSTD_isError(n)) {
            *why = ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall
                       ? "ZSTD data is longer than the page's uncompressed size"
                       : "ZSTD data is corrupt";
            return FALSE;
        }
        if (n != dst_len) {
            *why = "ZSTD data is shorter than the page's uncompressed size";
            return FALSE;
        }
        return TRUE;
    }
    default:
        *why = "codec not supported";
        return FALSE;
    }
}

void pq_decompress_free(void *zstd_ctx)
{
    if (zstd_ctx)
        ZSTD_freeDCtx(zstd_ctx);
}
