/* src/core/cpu/conv-internal.h: the convolution implementations behind kernels.h's conv
 * functions, callable one by one so that tests and benchmarks can compare them. */
#ifndef ROBOTRAIN_CPU_CONV_INTERNAL_H
#define ROBOTRAIN_CPU_CONV_INTERNAL_H

#include "core/cpu/kernels.h"

/* CPU_CONV_WITH_DNNL: conv-dnnl.c is built (configure found oneDNN). */

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
size_t cpu_conv_dnnl_workspace_size(const rt_conv2d_shape *s);
bool cpu_conv_dnnl_forward(const rt_conv2d_shape *s, const float *x, const float *w,
                           const float *bias, float *y, void *workspace);
bool cpu_conv_dnnl_backward_data(const rt_conv2d_shape *s, const float *dy, const float *w,
                                 float *dx, bool accumulate, void *workspace);
bool cpu_conv_dnnl_backward_weight(const rt_conv2d_shape *s, const float *x, const float *dy,
                                   float *dw, float *dbias, bool accumulate, void *workspace);
#endif

#endif
