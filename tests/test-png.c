/* Inline PNG images: fixtures written by ffmpeg's PNG encoder (not libpng) in every colour type
 * LeRobot's PIL path can meet, decoded to the closed-form pixel values; an Adam7-interlaced
 * image written here with libpng; and damaged data. */
#include "config.h"

#include "data/png-decode.h"
#include "testing.h"

#include <png.h>
#include <setjmp.h>
#include <zlib.h>

#include <robotrain/error.h>

#define W 5
#define H 3

/* tests/data/video/README: pixel (x, y) of the 5x3 fixtures. */
static int px_r(int x, int y) { return 50 * x + 7 * y; }
static int px_g(int x, int y) { return 250 - 30 * x - 50 * y; }
static int px_b(int x, int y) { return (37 * x * y + 11) % 256; }

static GBytes *load_fixture(const char *name)
{
    char *rel = g_build_filename("data", "video", name, NULL);
    char *path = rt_test_srcfile(rel);
    char *data = NULL;
    gsize size = 0;
    if (!g_file_get_contents(path, &data, &size, NULL))
        g_error("cannot read the fixture %s", path);
    g_free(rel);
    g_free(path);
    return g_bytes_new_take(data, size);
}

typedef int (*pixel_fn)(int x, int y, int c);

/* Every decoded sample is exactly the expected value / 255 (as LeRobot's ToTensor gives). */
static int check_pixels(const char *name, const float *chw, pixel_fn expect)
{
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                float got = chw[(c * H + y) * W + x];
                float want = (float)expect(x, y, c) / 255.0f;
                if (got != want) {
                    RT_TEST_REPORT(0, "%s: channel %d at (%d, %d) = %.6f, expected %d/255", name,
                                   c, x, y, got, expect(x, y, c));
                    return -1;
                }
            }
    RT_TEST_REPORT(1, "%s: all %d samples exact", name, 3 * W * H);
    return 0;
}

static int colour(int x, int y, int c) { return c == 0 ? px_r(x, y) : c == 1 ? px_g(x, y) : px_b(x, y); }
static int grey(int x, int y, int c) { return px_r(x, y); }
static int checker(int x, int y, int c) { return (x + y) % 2 ? 255 : 0; }

static int decode_fixture(const char *name, pixel_fn expect)
{
    GBytes *bytes = load_fixture(name);
    gsize size;
    const void *data = g_bytes_get_data(bytes, &size);
    GError *error = NULL;
    int width = 0, height = 0;
    OK(rt_png_get_size(data, size, name, &width, &height, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(W, width);
    EXPECT_EQ_INT(H, height);
    float chw[3 * W * H];
    OK(rt_png_decode(data, size, name, W, H, chw, &error));
    EXPECT_NO_ERROR(error);
    g_bytes_unref(bytes);
    return check_pixels(name, chw, expect);
}

DEF_TEST(colour_types)
{
    /* RGB; alpha dropped; greyscale replicated; 16-bit reduced to its high byte (ffmpeg's own
     * rgb48 -> rgb24 rounds instead: the fixture's low bytes make the two differ); 1-bit
     * scaled to 0/255; a palette with a transparent entry expanded, transparency dropped */
    if (decode_fixture("image-rgb.png", colour) || decode_fixture("image-rgba.png", colour) ||
        decode_fixture("image-gray.png", grey) || decode_fixture("image-gray-alpha.png", grey) ||
        decode_fixture("image-rgb16.png", colour) || decode_fixture("image-1bit.png", checker) ||
        decode_fixture("image-palette.png", colour))
        return -1;
    return 0;
}

/* An interlaced PNG, written with libpng's full API into memory. */
static void append_bytes(png_structp png, png_bytep data, size_t n)
{
    g_byte_array_append(png_get_io_ptr(png), data, (guint)n);
}

static void flush_nothing(png_structp png) {}

static GByteArray *write_interlaced(void)
{
    GByteArray *out = g_byte_array_new();
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png)))
        g_error("libpng failed to write the test image");
    png_set_write_fn(png, out, append_bytes, flush_nothing);
    png_set_IHDR(png, info, W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    static png_byte pixels[H][3 * W];
    png_bytep rows[H];
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                pixels[y][3 * x + c] = (png_byte)colour(x, y, c);
        rows[y] = pixels[y];
    }
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return out;
}

DEF_TEST(interlaced)
{
    GByteArray *bytes = write_interlaced();
    OK(bytes->len > 8 && bytes->data[28] == 1); /* IHDR interlace method: Adam7 */
    GError *error = NULL;
    float chw[3 * W * H];
    OK(rt_png_decode(bytes->data, bytes->len, "interlaced", W, H, chw, &error));
    EXPECT_NO_ERROR(error);
    g_byte_array_unref(bytes);
    return check_pixels("interlaced", chw, colour);
}

DEF_TEST(errors)
{
    GBytes *bytes = load_fixture("image-rgb.png");
    gsize size;
    const guint8 *png = g_bytes_get_data(bytes, &size);
    GError *error = NULL;
    float chw[3 * 8 * 8];
    int w, h;

    /* the feature's shape disagrees with the image */
    OK(!rt_png_decode(png, size, "observation.images.top of row 3", 4, 3, chw, &error));
    OK(error && error->code == RT_ERROR_FORMAT);
    EXPECT_ERROR(error, "image observation.images.top of row 3 is 5x3 pixels, but the dataset's "
                        "feature shape says 4x3");

    /* not a PNG at all: JPEG's first bytes, and nothing */
    static const guint8 jpeg[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0, 1};
    OK(!rt_png_decode(jpeg, sizeof jpeg, "cam0", W, H, chw, &error));
    EXPECT_ERROR(error, "image cam0 is not a PNG (12 bytes without the PNG signature)");
    OK(!rt_png_get_size(jpeg, 0, "cam0", &w, &h, &error));
    EXPECT_ERROR(error, "is not a PNG (0 bytes");

    /* a signature with no IHDR after it */
    guint8 *damaged = g_malloc(size);
    memcpy(damaged, png, size);
    damaged[12] = 'X';
    OK(!rt_png_get_size(damaged, size, "cam1", &w, &h, &error));
    EXPECT_ERROR(error, "image cam1 is a damaged PNG: no IHDR header chunk");

    /* cut inside the image data */
    memcpy(damaged, png, size);
    OK(!rt_png_decode(damaged, size - 30, "cam2", W, H, chw, &error));
    EXPECT_ERROR(error, "image cam2 is a damaged PNG: the data ends early (truncated PNG) (libpng)");

    /* the IDAT chunk's CRC changed: libpng's check */
    size_t idat = 0;
    for (size_t i = 8; i + 8 <= size; i++)
        if (memcmp(damaged + i, "IDAT", 4) == 0) {
            idat = i;
            break;
        }
    OK(idat > 0);
    size_t idat_length = (size_t)damaged[idat - 4] << 24 | (size_t)damaged[idat - 3] << 16 |
                         (size_t)damaged[idat - 2] << 8 | damaged[idat - 1];
    OK(idat + 4 + idat_length + 4 <= size);
    damaged[idat + 4 + idat_length] ^= 0x01;
    OK(!rt_png_decode(damaged, size, "cam3", W, H, chw, &error));
    EXPECT_ERROR(error, "image cam3 is a damaged PNG: IDAT: CRC error (libpng)");

    /* a damaged zlib header inside IDAT, with the chunk's CRC recomputed: zlib's complaint */
    memcpy(damaged, png, size);
    damaged[idat + 4] = 0x78;
    damaged[idat + 5] = 0x00; /* FCHECK wrong: (0x78 << 8 | 0x00) is not a multiple of 31 */
    uLong crc = crc32(crc32(0L, Z_NULL, 0), damaged + idat, (uInt)(4 + idat_length));
    for (int i = 0; i < 4; i++)
        damaged[idat + 4 + idat_length + i] = (guint8)(crc >> (24 - 8 * i));
    OK(!rt_png_decode(damaged, size, "cam5", W, H, chw, &error));
    EXPECT_ERROR(error, "image cam5 is a damaged PNG: IDAT: incorrect header check (libpng)");

    /* a header claiming 0x0 pixels */
    memcpy(damaged, png, size);
    memset(damaged + 16, 0, 8);
    OK(!rt_png_get_size(damaged, size, "cam4", &w, &h, &error));
    EXPECT_ERROR(error, "its header says 0x0 pixels");
    g_free(damaged);
    g_bytes_unref(bytes);
    return 0;
}

int main(void)
{
    RUN_TEST(colour_types);
    RUN_TEST(interlaced);
    RUN_TEST(errors);
    END_TEST;
}
