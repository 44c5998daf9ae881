/* Dtypes and shapes. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/graph-internal.h"

static const struct {
    const char *name;
    size_t size;
} dtype_info[RT_DTYPE_COUNT] = {
    [RT_F32] = {"f32", 4}, [RT_F64] = {"f64", 8}, [RT_BF16] = {"bf16", 2}, [RT_F16] = {"f16", 2},
    [RT_I64] = {"i64", 8}, [RT_I32] = {"i32", 4}, [RT_U8] = {"u8", 1},     [RT_BOOL] = {"bool", 1},
};

size_t rt_dtype_size(rt_dtype dtype)
{
    return (unsigned)dtype < RT_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

const char *rt_dtype_name(rt_dtype dtype)
{
    return (unsigned)dtype < RT_DTYPE_COUNT ? dtype_info[dtype].name : NULL;
}

gboolean rt_dtype_from_name(const char *name, rt_dtype *dtype)
{
    for (int i = 0; i < RT_DTYPE_COUNT; i++)
        if (name && strcmp(name, dtype_info[i].name) == 0) {
            *dtype = (rt_dtype)i;
            return TRUE;
        }
    return FALSE;
}

gboolean rt_dtype_is_float(rt_dtype dtype)
{
    return dtype == RT_F32 || dtype == RT_F64 || dtype == RT_BF16 || dtype == RT_F16;
}

int64_t rt_shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

int64_t rt_tensor_numel(const rt_tensor *t)
{
    return rt_shape_numel(t->ndim, t->shape);
}

void rt_shape_strides(int ndim, const int64_t *shape, int64_t *stride)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= shape[i];
    }
}

gboolean rt_tensor_is_contiguous(const rt_tensor *t)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s)
            return FALSE;
        s *= t->shape[i];
    }
    return TRUE;
}

size_t rt_tensor_nbytes(const rt_tensor *t)
{
    return (size_t)rt_tensor_numel(t) * rt_dtype_size(t->dtype);
}

bool rt_shape_equal(const rt_tensor *a, const rt_tensor *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

int rt_axis(int axis, int ndim)
{
    if (axis < 0)
        axis += ndim;
    return axis >= 0 && axis < ndim ? axis : -1;
}

bool rt_broadcast_shape(const rt_tensor *a, const rt_tensor *b, int *ndim, int64_t *shape)
{
    int n = MAX(a->ndim, b->ndim);
    for (int i = 0; i < n; i++) {
        int ia = i - (n - a->ndim), ib = i - (n - b->ndim);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return false;
        shape[i] = sa == 1 ? sb : sa;
    }
    *ndim = n;
    return true;
}

void rt_broadcast_strides(const rt_tensor *t, int out_ndim, const int64_t *out_shape, int64_t *stride)
{
    for (int i = 0; i < out_ndim; i++) {
        int j = i - (out_ndim - t->ndim);
        if (j < 0 || (t->shape[j] == 1 && out_shape[i] != 1))
            stride[i] = 0;
        else
            stride[i] = t->shape[j] == 1 ? 0 : t->stride[j];
    }
}

char *rt_shape_describe(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, size - used, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" G_GINT64_FORMAT, i ? "," : "",
                                 shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

char *rt_tensor_describe(const rt_tensor *t, char *buf, size_t size)
{
    char shape[96];
    snprintf(buf, size, "%s%s", rt_dtype_name(t->dtype) ? rt_dtype_name(t->dtype) : "?",
             rt_shape_describe(t->ndim, t->shape, shape, sizeof shape));
    return buf;
}
