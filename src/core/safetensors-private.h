/* Helpers shared by the safetensors reader and writer (internal). */
#ifndef ROBOTRAIN_SAFETENSORS_PRIVATE_H
#define ROBOTRAIN_SAFETENSORS_PRIVATE_H

#include <robotrain/safetensors.h>

/* Appends "[2, 3]" (Python's list spelling, as error messages show shapes). */
void st_append_shape(GString *out, int rank, const int64_t *shape);

/* Product of the dimensions and the byte size for dtype; FALSE when either exceeds INT64_MAX
 * (no dimension may be negative: the caller checked). */
gboolean st_tensor_size(rt_st_dtype dtype, int rank, const int64_t *shape, int64_t *n_elements,
                        uint64_t *n_bytes);

#endif
