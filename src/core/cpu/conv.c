/* src/core/cpu/conv.c: 2-D convolution (NCHW, OIHW) forward and both backward passes.
 * The always-available path is im2col + OpenBLAS GEMM, one image at a time; a 1x1 kernel
 * with stride 1 and no padding needs no im2col at all (the image is already the column
 * matrix). With oneDNN (HAVE_DNNL) the shapes it handles go to conv-dnnl.c instead. */
#include "config.h"

#include <glib.h>
#include <string.h>

#include "core/cpu/conv-internal.h"
#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

bool rt_cpu_conv2d_shape_init(rt_conv2d_shape *s)
{
    g_return_val_if_fail(s != NULL, false);
    if (s->n <= 0 || s->c_in <= 0 || s->h <= 0 || s->w <= 0 || s->c_out <= 0 || s->kh <= 0 ||
        s->kw <= 0 || s->stride_h <= 0 || s->stride_w <= 0 || s->pad_h < 0 || s->pad_w < 0 ||
        s->dil_h <= 0 || s->dil_w <= 0)
        return false;
    int64_t span_h = s->dil_h * (s->kh - 1) + 1, span_w = s->dil_w * (s->kw - 1) + 1;
    int64_t room_h = s->h + 2 * s->pad_h - span_h, room_w = s->w + 2 * s->pad_w - span_w;
    if (room_h < 0 || room_w < 0)
        return false;
    s->h_out = room_h / s->stride_h + 1;
    s->w_out = room_w / s->stride_w + 1;
    return true;
}

bool cpu_conv_is_pointwise(const rt_conv2d_shape *s)
{
    return s->kh == 1 && s->kw == 1 && s->stride_h == 1 && s->stride_w == 1 && s->pad_h == 0 &&
           s->pad_w == 0;
}

size_t cpu_conv_im2col_workspace_size(const rt_conv2d_shape *s)
{
    if (cpu_conv_is_pointwise(s))
        return 0;
    return (size_t)(s->c_in * s->kh * s->kw) * (size_t)(s->h_out * s->w_out) * sizeof(float);
}

size_t rt_cpu_conv2d_workspace_size(const rt_conv2d_shape *s)
{
    size_t size = cpu_conv_im2col_workspace_size(s);
#ifdef CPU_CONV_WITH_DNNL
    size_t dnnl = cpu_conv_dnnl_workspace_size(s);
    if (dnnl > size)
        size = dnnl;
#endif
    return size;
}

/* col[(c*kh + i)*kw + j][oh*w_out + ow] = x[c][oh*sh - ph + i*dh][ow*sw - pw + j*dw] (0 outside) */
static void im2col(const rt_conv2d_shape *s, const float *x, float *col)
{
    const int64_t rows = s->c_in * s->kh * s->kw, hw_out = s->h_out * s->w_out;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t c = r / (s->kh * s->kw), i = r / s->kw % s->kh, j = r % s->kw;
        const float *plane = x + c * s->h * s->w;
        float *out = col + r * hw_out;
        for (int64_t oh = 0; oh < s->h_out; oh++) {
            int64_t ih = oh * s->stride_h - s->pad_h + i * s->dil_h;
            float *orow = out + oh * s->w_out;
            if (ih < 0 || ih >= s->h) {
                memset(orow, 0, (size_t)s->w_out * sizeof *orow);
                continue;
            }
            const float *irow = plane + ih * s->w;
            int64_t off = j * s->dil_w - s->pad_w;
            for (int64_t ow = 0; ow < s->w_out; ow++) {
                int64_t iw = ow * s->stride_w + off;
                orow[ow] = (iw >= 0 && iw < s->w) ? irow[iw] : 0.0f;
            }
        }
    }
}

/* dx[c][ih][iw] += col[(c, i, j)][oh, ow]: the adjoint of im2col. Parallel over channels,
 * which own disjoint planes of dx. */
static void col2im_add(const rt_conv2d_shape *s, const float *col, float *dx)
{
    const int64_t hw_out = s->h_out * s->w_out;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static)
    for (int64_t c = 0; c < s->c_in; c++) {
        float *plane = dx + c * s->h * s->w;
        for (int64_t i = 0; i < s->kh; i++)
            for (int64_t j = 0; j < s->kw; j++) {
                const float *in = col + ((c * s->kh + i) * s->kw + j) * hw_out;
                int64_t off = j * s->dil_w - s->pad_w;
                for (int64_t oh = 0; oh < s->h_out; oh++) {
                    int64_t ih = oh * s->stride_h - s->pad_h + i * s->dil_h;
                    if (ih < 0 || ih >= s->h)
                        continue;
                    float *drow = plane + ih * s->w;
                    const float *irow = in + oh * s->w_out;
                    for (int64_t ow = 0; ow < s->w_out; ow++) {
                        int64_t iw = ow * s->stride_w + off;
                        if (iw >= 0 && iw < s->w)
                            drow[iw] += irow[ow];
                    }
                }
            }
    }
}

void cpu_conv_im2col_forward(const rt_conv2d_shape *s, const float *x, const float *w,
                             const float *bias, float *y, void *workspace)
{
    const int64_t ckk = s->c_in * s->kh * s->kw, hw_in = s->h * s->w,
                  hw_out = s->h_out * s->w_out;
    const bool pointwise = cpu_conv_is_pointwise(s);
    float *col = workspace;
    for (int64_t n = 0; n < s->n; n++) {
        const float *xn = x + n * s->c_in * hw_in;
        float *yn = y + n * s->c_out * hw_out;
        if (!pointwise)
            im2col(s, xn, col);
        float beta = 0.0f;
        if (bias) {
            for (int64_t o = 0; o < s->c_out; o++)
                for (int64_t p = 0; p < hw_out; p++)
                    yn[o * hw_out + p] = bias[o];
            beta = 1.0f;
        }
        cpu_sgemm(false, false, s->c_out, hw_out, ckk, 1.0f, w, ckk, pointwise ? xn : col,
                  hw_out, beta, yn, hw_out);
    }
}

void cpu_conv_im2col_backward_data(const rt_conv2d_shape *s, const float *dy, const float *w,
                                   float *dx, bool accumulate, void *workspace)
{
    const int64_t ckk = s->c_in * s->kh * s->kw, hw_in = s->h * s->w,
                  hw_out = s->h_out * s->w_out;
    const bool pointwise = cpu_conv_is_pointwise(s);
    float *col = workspace;
    for (int64_t n = 0; n < s->n; n++) {
        const float *dyn = dy + n * s->c_out * hw_out;
        float *dxn = dx + n * s->c_in * hw_in;
        if (pointwise) {
            cpu_sgemm(true, false, ckk, hw_out, s->c_out, 1.0f, w, ckk, dyn, hw_out,
                      accumulate ? 1.0f : 0.0f, dxn, hw_out);
            continue;
        }
        cpu_sgemm(true, false, ckk, hw_out, s->c_out, 1.0f, w, ckk, dyn, hw_out, 0.0f, col,
                  hw_out);
        if (!accumulate)
            memset(dxn, 0, (size_t)(s->c_in * hw_in) * sizeof *dxn);
        col2im_add(s, col, dxn);
    }
}

void cpu_conv_im2col_backward_weight(const rt_conv2d_shape *s, const float *x, const float *dy,
                                     float *dw, float *dbias, bool accumulate, void *workspace)
{
    const int64_t ckk = s->c_in * s->kh * s->kw, hw_in = s->h * s->w,
                  hw_out = s->h_out * s->w_out;
    const bool pointwise = cpu_conv_is_pointwise(s);
    float *col = workspace;
    for (int64_t n = 0; n < s->n; n++) {
        const float *xn = x + n * s->c_in * hw_in;
        const float *dyn = dy + n * s->c_out * hw_out;
        if (!pointwise)
            im2col(s, xn, col);
        cpu_sgemm(false, true, s->c_out, ckk, hw_out, 1.0f, dyn, hw_out, pointwise ? xn : col,
                  hw_out, (accumulate || n > 0) ? 1.0f : 0.0f, dw, ckk);
    }
    if (dbias)
        cpu_conv_bias_grad(s, dy, dbias, accumulate);
}

void cpu_conv_bias_grad(const rt_conv2d_shape *s, const float *dy, float *dbias, bool accumulate)
{
    const int64_t hw_out = s->h_out * s->w_out;
#pragma omp parallel for num_threads(cpu_threads()) schedule(static)
    for (int64_t o = 0; o < s->c_out; o++) {
        double sum = 0.0; /* many terms (n * h_out * w_out): accumulate in double */
        for (int64_t n = 0; n < s->n; n++) {
            const float *p = dy + (n * s->c_out + o) * hw_out;
            float part = 0.0f;
            for (int64_t i = 0; i < hw_out; i++)
                part += p[i];
            sum += part;
        }
        dbias[o] = accumulate ? (float)(dbias[o] + sum) : (float)sum;
    }
}

void rt_cpu_conv2d_forward_f32(const rt_conv2d_shape *s, const float *x, const float *w,
                               const float *bias, float *y, void *workspace)
{
    g_return_if_fail(s != NULL && s->h_out > 0 && s->w_out > 0);
#ifdef CPU_CONV_WITH_DNNL
    if (cpu_conv_dnnl_forward(s, x, w, bias, y, workspace))
        return;
#endif
    cpu_conv_im2col_forward(s, x, w, bias, y, workspace);
}

void rt_cpu_conv2d_backward_data_f32(const rt_conv2d_shape *s, const float *dy, const float *w,
                                     float *dx, bool accumulate, void *workspace)
{
    g_return_if_fail(s != NULL && s->h_out > 0 && s->w_out > 0);
#ifdef CPU_CONV_WITH_DNNL
    if (cpu_conv_dnnl_backward_data(s, dy, w, dx, accumulate, workspace))
        return;
#endif
    cpu_conv_im2col_backward_data(s, dy, w, dx, accumulate, workspace);
}

void rt_cpu_conv2d_backward_weight_f32(const rt_conv2d_shape *s, const float *x, const float *dy,
                                       float *dw, float *dbias, bool accumulate, void *workspace)
{
    g_return_if_fail(s != NULL && s->h_out > 0 && s->w_out > 0);
#ifdef CPU_CONV_WITH_DNNL
    if (cpu_conv_dnnl_backward_weight(s, x, dy, dw, dbias, accumulate, workspace))
        return;
#endif
    cpu_conv_im2col_backward_weight(s, x, dy, dw, dbias, accumulate, workspace);
}
