/* src/data/png-decode.h: image features stored inline as PNG bytes (LeRobot `dtype: image`,
 * a parquet struct {bytes, path}), decoded with libpng to what LeRobot hands a policy.
 *
 * LeRobot opens the bytes with PIL and converts them with torchvision's ToTensor: the stored
 * 8-bit samples, divided by 255, channel-major. We decode to the same values: no gamma or colour
 * management (PIL ignores gAMA/iCCP), palettes expanded, greyscale replicated to three channels,
 * alpha and tRNS dropped (PIL's convert("RGB")), 16-bit samples reduced to their high byte (as
 * PIL unpacks 16-bit RGB), 1/2/4-bit greyscale scaled to 0..255.
 *
 * The caller says which size it expects (the feature's shape in meta/info.json) and provides the
 * output; a PNG of another size is refused before any pixel buffer is allocated, so a damaged or
 * hostile header cannot make us allocate more than the caller's frame. */
#ifndef ROBOTRAIN_DATA_PNG_DECODE_H
#define ROBOTRAIN_DATA_PNG_DECODE_H

#include <stddef.h>

#include <glib.h>

G_BEGIN_DECLS

/* Reads width and height from the PNG signature and IHDR chunk (no decoding). `what` names the
 * image in error messages (e.g. "observation.images.top of row 12"). Fails with
 * RT_ERROR_FORMAT when the bytes are not a PNG. */
gboolean rt_png_get_size(const void *data, size_t size, const char *what, int *width,
                         int *height, GError **error);

/* Decodes the PNG in data[0..size) into chw_out: 3 x height x width floats (caller-owned), R
 * plane, then G, then B, values sample / 255. Fails with RT_ERROR_FORMAT (the message names
 * `what` and says what libpng found wrong: bad signature, CRC error, truncated data, ...) or
 * when the image is not width x height. Thread-safe. */
gboolean rt_png_decode(const void *data, size_t size, const char *what, int width, int height,
                       float *chw_out, GError **error);

G_END_DECLS

#endif
