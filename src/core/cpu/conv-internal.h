/* src/core/cpu/conv-internal.h: the convolution implementations behind kernels.h's conv
 * functions, callable one by one so that tests and benchmarks can compare them. */
#ifndef ROBOTRAIN_CPU_CONV_INTERNAL_H
#define ROBOTRAIN_CPU_CONV_INTERNAL_H

#include "core/cpu/kernels.h"

/* CPU_CONV_WITH_DNNL: conv-dnnl.c is in use: configure found oneDNN, and it speaks the
 * oneDNN 2.x C API that file is written for (3.x replaced the operation descriptors). */
#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl_version.h>
#if DNNL_VERSION_MAJOR == 2
#define CPU_CONV_WITH_DNNL 1
#endif
#endif

bool cpu_conv_is_pointwise(const rt_conv2d_shape *s);
void cpu_conv_bias_grad(const rt_conv2d_shape *s, const float *dy, float *dbias, bool accumulate);

/* im2col + GEMM: always available. */
size_t cpu_conv_im2col_workspace_size(const rt_conv2d_shape *s);
void cpu_conv_im2col_forward(const rt_conv2d_shape *s, const float *x, const float *w,
                             const float *bias, float *y, void *workspace);
void cpu_conv_im2col_backward_data(const rt_conv2d_shape *s, const float *dy, const float *w,
                                   float *dx, bool accumulate, void *workspace);
void cpu_conv_im2col_backward_weight(const rt_conv2d_shape *s, const float *x, const float *dy,
                                     float *dw, float *dbias, bool accumulate, void *workspace);

#ifdef CPU_CONV_WITH_DNNL
/* oneDNN: each returns false (doing nothing) when it does not take the shape. */
enum {
    CPU_DNNL_FORMATS_AUTO,    /* per shape and pass, from measurements (conv-dnnl.c) */
    CPU_DNNL_FORMATS_BLOCKED, /* oneDNN picks every layout; activations are reordered */
    CPU_DNNL_FORMATS_PLAIN,   /* activations stay NCHW, oneDNN picks the weights' layout */
    CPU_DNNL_FORMATS_DEFAULT = CPU_DNNL_FORMATS_AUTO,
};
/* For tests: whether the public conv functions use oneDNN (they do by default). */
void cpu_conv_set_dnnl(bool enabled);
/* For benchmarks and tests: the layout policy of the plans made from now on. */
void cpu_conv_dnnl_set_formats(int policy);
/* The oneDNN implementation chosen for shape s and pass 0/1/2 (fwd, bwd data, bwd weight),
 * or NULL when oneDNN does not take it. Returns (transfer none). */
const char *cpu_conv_dnnl_impl(const rt_conv2d_shape *s, int pass);
size_t cpu_conv_dnnl_workspace_size(const rt_conv2d_shape *s);
bool cpu_conv_dnnl_forward(const rt_conv2d_shape *s, const float *x, const float *w,
                           const float *bias, float *y, void *workspace);
bool cpu_conv_dnnl_backward_data(const rt_conv2d_shape *s, const float *dy, const float *w,
                                 float *dx, bool accumulate, void *workspace);
bool cpu_conv_dnnl_backward_weight(const rt_conv2d_shape *s, const float *x, const float *dy,
                                   float *dw, float *dbias, bool accumulate, void *workspace);
#endif

#endif
