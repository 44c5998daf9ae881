/* The RT_ERROR domain. */
#include "config.h"

#include <robotrain/error.h>

G_DEFINE_QUARK(robotrain-error-quark, rt_error)
