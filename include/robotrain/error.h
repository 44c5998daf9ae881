/* robotrain/error.h: the error domain of librobotrain.
 *
 * Recoverable failures (bad input, I/O, a module that will not load, a device that fails) are
 * reported through a GError in RT_ERROR with one of the codes below; the message says what was
 * wrong (naming the file, flag, key or tensor) and what to do. Library code never exits. */
#ifndef ROBOTRAIN_ERROR_H
#define ROBOTRAIN_ERROR_H

#include <glib.h>

G_BEGIN_DECLS

#define RT_ERROR (rt_error_quark())
GQuark rt_error_quark(void);

typedef enum {
    RT_ERROR_FAILED,         /* none of the below */
    RT_ERROR_INVALID_ARG,    /* a flag, option, key or argument has a bad value */
    RT_ERROR_UNKNOWN_OPTION, /* a flag or key that nothing declares */
    RT_ERROR_IO,             /* reading or writing a file failed */
    RT_ERROR_FORMAT,         /* a file is malformed: truncated, bad header, bad offsets */
    RT_ERROR_NOT_FOUND,      /* a file, module, tensor or device that does not exist */
    RT_ERROR_PLUGIN,         /* a module exists but cannot be used (ABI, symbol, dependency) */
    RT_ERROR_UNSUPPORTED,    /* valid, but not supported by this build or device */
    RT_ERROR_DEVICE,         /* a GPU or runtime call failed */
    RT_ERROR_NETWORK,        /* a transfer failed */
} rt_error_code;

G_END_DECLS

#endif
