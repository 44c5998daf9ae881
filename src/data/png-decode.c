/* PNG image features to float CHW with libpng; see png-decode.h for what values come out. */
#include "config.h"

#include "data/png-decode.h"

#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <png.h>

#include <robotrain/error.h>

static const guint8 png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/* What one decode shares with libpng's callbacks. run_libpng() keeps everything that changes
 * after its setjmp in here, outside its own stack frame, so a longjmp loses nothing. */
typedef struct {
    const guint8 *data;
    size_t size, pos;
    int want_width, want_height;
    png_uint_32 width, height;
    guint8 *pixels; /* height rows of 3 x width bytes, g_free */
    guint8 **rows;  /* g_free */
    char message[200];
} png_job;

static void on_error(png_structp png, png_const_charp message)
{
    png_job *job = png_get_error_ptr(png);
    g_strlcpy(job->message, message, sizeof job->message);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp message)
{
    /* Warnings (e.g. a bad CRC in an ancillary chunk, which libpng then skips) do not change
     * the pixels; PIL does not report them either. */
}

static void read_bytes(png_structp png, png_bytep out, size_t n)
{
    png_job *job = png_get_io_ptr(png);
    if (n > job->size - job->pos)
        png_error(png, "the data ends early (truncated PNG)");
    memcpy(out, job->data + job->pos, n);
    job->pos += n;
}

/* Returns 0 with job->pixels filled, 1 when the size differs from the wanted one, -1 on a
 * libpng error (job->message says which). */
static int run_libpng(png_job *job)
{
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, job, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        g_strlcpy(job->message, "out of memory", sizeof job->message);
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_set_read_fn(png, job, read_bytes);
    png_read_info(png, info);

    int depth, color, interlace;
    png_get_IHDR(png, info, &job->width, &job->height, &depth, &color, &interlace, NULL, NULL);
    if (job->width != (png_uint_32)job->want_width || job->height != (png_uint_32)job->want_height) {
        png_destroy_read_struct(&png, &info, NULL);
        return 1;
    }
    /* The raw samples as PIL's convert("RGB") sees them; no png_set_gamma: no colour management. */
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16)
        png_set_strip_16(png);
    png_set_strip_alpha(png); /* alpha channels, and the alpha a palette's tRNS expands to */
    if (!(color & PNG_COLOR_MASK_COLOR))
        png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    size_t row_bytes = png_get_rowbytes(png, info);
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
        row_bytes != (size_t)3 * job->width)
        png_error(png, "unexpected sample layout after conversion to RGB");

    job->pixels = g_try_malloc(row_bytes * job->height);
    job->rows = g_try_new(guint8 *, job->height);
    if (!job->pixels || !job->rows)
        png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < job->height; y++)
        job->rows[y] = job->pixels + y * row_bytes;
    png_read_image(png, job->rows);
    /* Like PIL, stop after the pixels: what follows the image data (text, IEND) is not read. */
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}

gboolean rt_png_get_size(const void *data, size_t size, const char *what, int *width,
                         int *height, GError **error)
{
    g_return_val_if_fail(data != NULL || size == 0, FALSE);
    const guint8 *p = data;
    /* signature, then the first chunk: length 13, "IHDR", width, height (big-endian) */
    if (size < 8 || memcmp(p, png_signature, 8) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "image %s is not a PNG (%zu bytes without the PNG signature): LeRobot image "
                    "features hold PNG bytes", what, size);
        return FALSE;
    }
    if (size < 24 || memcmp(p + 12, "IHDR", 4) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "image %s is a damaged PNG: no IHDR header chunk after the signature", what);
        return FALSE;
    }
    uint32_t w = (uint32_t)p[16] << 24 | (uint32_t)p[17] << 16 | (uint32_t)p[18] << 8 | p[19];
    uint32_t h = (uint32_t)p[20] << 24 | (uint32_t)p[21] << 16 | (uint32_t)p[22] << 8 | p[23];
    if (w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "image %s is a damaged PNG: its header says %ux%u pixels", what, w, h);
        return FALSE;
    }
    *width = (int)w;
    *height = (int)h;
    return TRUE;
}

gboolean rt_png_decode(const void *data, size_t size, const char *what, int width, int height,
                       float *chw_out, GError **error)
{
    g_return_val_if_fail(width > 0 && height > 0 && chw_out != NULL, FALSE);
    int header_width, header_height;
    if (!rt_png_get_size(data, size, what, &header_width, &header_height, error))
        return FALSE;

    png_job job = {.data = data, .size = size, .want_width = width, .want_height = height};
    int status = run_libpng(&job);
    if (status == 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "image %s is %ux%u pixels, but the dataset's feature shape says %dx%d "
                    "(width x height): the PNG does not belong to this feature or meta/info.json "
                    "is wrong", what, job.width, job.height, width, height);
    } else if (status < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "image %s is a damaged PNG: %s (libpng)", what, job.message);
    } else {
        float to_unit[256];
        for (int i = 0; i < 256; i++)
            to_unit[i] = (float)i / 255.0f;
        size_t plane = (size_t)width * height;
        for (int y = 0; y < height; y++) {
            const guint8 *row = job.rows[y];
            float *r = chw_out + (size_t)y * width, *g = r + plane, *b = g + plane;
            for (int x = 0; x < width; x++) {
                r[x] = to_unit[row[3 * x]];
                g[x] = to_unit[row[3 * x + 1]];
                b[x] = to_unit[row[3 * x + 2]];
            }
        }
    }
    g_free(job.rows);
    g_free(job.pixels);
    return status == 0;
}
