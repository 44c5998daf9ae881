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

#ifdef CPU_CONV_WITH_DNNL
static bool dnnl_enabled = true;

void cpu_conv_set_dnnl(bool enabled)
{
    dnnl_enabled = enabled;
}
#endif

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

/* Images per GEMM. One image's output plane is the GEMM's N; when it is small (deep layers
 * of small images: 3x3 at 96x96), a GEMM per image re-reads all the weights for a few
 * columns and is bound by memory. Gathering `group` images into one column matrix makes N
 * about GROUP_COLUMNS wide, at the price of a copy of the output (or of dy) between
 * [c_out, group * hw] and NCHW. Depends on the shape only, as the workspace size must. */
#define GROUP_COLUMNS 512

static int64_t image_group(const rt_conv2d_shape *s)
{
    int64_t hw = s->h_out * s->w_out, g = GROUP_COLUMNS / hw;
    if (g < 1)
        g = 1;
    return g < s->n ? g : s->n;
}

size_t cpu_conv_im2col_workspace_size(const rt_conv2d_shape *s)
{
    const int64_t g = image_group(s), cols = g * s->h_out * s->w_out;
    size_t size = 0;
    if (!cpu_conv_is_pointwise(s) || g > 1) /* the column matrix */
        size += (size_t)(s->c_in * s->kh * s->kw) * (size_t)cols;
    if (g > 1) /* the output (forward) or dy (backward) as [c_out, g * hw] */
        size += (size_t)s->c_out * (size_t)cols;
    return size * sizeof(float);
}

size_t rt_cpu_conv2d_workspace_size(const rt_conv2d_shape *s)
{
    size_t size = cpu_conv_im2col_workspace_size(s);
#ifdef CPU_CONV_WITH_DNNL
    size_t dnnl = dnnl_enabled ? cpu_conv_dnnl_workspace_size(s) : 0;
    if (dnnl > size)
        size = dnnl;
#endif
    return size;
}

/* Row r = (c*kh + i)*kw + j of one image's column matrix:
 * out[oh*w_out + ow] = x[c][oh*sh - ph + i*dh][ow*sw - pw + j*dw] (0 outside). */
static void im2col_row(const rt_conv2d_shape *s, const float *x, int64_t r, float *out)
{
    int64_t c = r / (s->kh * s->kw), i = r / s->kw % s->kh, j = r % s->kw;
    const float *plane = x + c * s->h * s->w;
    int64_t off = j * s->dil_w - s->pad_w;
    /* the range of ow whose input column is inside the image: no test in the inner loop */
    int64_t ow0 = off >= 0 ? 0 : (-off + s->stride_w - 1) / s->stride_w;
    int64_t ow1 = s->w - off <= 0 ? 0 : (s->w - off + s->stride_w - 1) / s->stride_w;
    if (ow1 > s->w_out)
        ow1 = s->w_out;
    if (ow0 > ow1)
        ow0 = ow1;
    for (int64_t oh = 0; oh < s->h_out; oh++) {
        int64_t ih = oh * s->stride_h - s->pad_h + i * s->dil_h;
        float *orow = out + oh * s->w_out;
        if (ih < 0 || ih >= s->h) {
            memset(orow, 0, (size_t)s->w_out * sizeof *orow);
            continue;
        }
        const float *irow = plane + ih * s->w;
        for (int64_t ow = 0; ow < ow0; ow++)
            orow[ow] = 0.0f;
        if (s->stride_w == 1 && ow1 > ow0)
            memcpy(orow + ow0, irow + ow0 + off, (size_t)(ow1 - ow0) * sizeof *orow);
        else
            for (int64_t ow = ow0; ow < ow1; ow++)
                orow[ow] = irow[ow * s->stride_w + off];
        for (int64_t ow = ow1; ow < s->w_out; ow++)
            orow[ow] = 0.0f;
    }
}

/* The column matrix of images x[0 .. g-1]: [c_in*kh*kw, g * hw_out], image-major columns. */
static void im2col(const rt_conv2d_shape *s, const float *x, int64_t g, float *col)
{
    const int64_t rows = s->c_in * s->kh * s->kw, hw_out = s->h_out * s->w_out;
    const int64_t hw_in = s->h * s->w;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static) collapse(2)")
    for (int64_t r = 0; r < rows; r++)
        for (int64_t img = 0; img < g; img++)
            im2col_row(s, x + img * s->c_in * hw_in, r, col + (r * g + img) * hw_out);
}

/* dx[c][ih][iw] += col[(c, i, j)][img * hw_out + (oh, ow)] for images 0 .. g-1: the adjoint
 * of im2col. Parallel over (image, channel) planes of dx, which are disjoint. */
static void col2im_add(const rt_conv2d_shape *s, const float *col, int64_t g, float *dx)
{
    const int64_t hw_out = s->h_out * s->w_out, hw_in = s->h * s->w, ld = g * hw_out;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static) collapse(2)")
    for (int64_t img = 0; img < g; img++)
        for (int64_t c = 0; c < s->c_in; c++) {
            float *plane = dx + (img * s->c_in + c) * hw_in;
            for (int64_t i = 0; i < s->kh; i++)
                for (int64_t j = 0; j < s->kw; j++) {
                    const float *in = col + ((c * s->kh + i) * s->kw + j) * ld + img * hw_out;
                    int64_t off = j * s->dil_w - s->pad_w;
                    int64_t ow0 = off >= 0 ? 0 : (-off + s->stride_w - 1) / s->stride_w;
                    int64_t ow1 = s->w - off <= 0 ? 0 : (s->w - off + s->stride_w - 1) / s->stride_w;
                    if (ow1 > s->w_out)
                        ow1 = s->w_out;
                    for (int64_t oh = 0; oh < s->h_out; oh++) {
                        int64_t ih = oh * s->stride_h - s->pad_h + i * s->dil_h;
                        if (ih < 0 || ih >= s->h)
                            continue;
                        float *drow = plane + ih * s->w;
                        const float *irow = in + oh * s->w_out;
                        for (int64_t ow = ow0; ow < ow1; ow++)
                            drow[ow * s->stride_w + off] += irow[ow];
                    }
                }
        }
}

/* [c_out, g*hw] <-> NCHW for images 0 .. g-1 (t = the GEMM-side matrix). */
static void gather_nchw(const rt_conv2d_shape *s, const float *nchw, int64_t g, float *t)
{
    const int64_t hw = s->h_out * s->w_out;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static) collapse(2)")
    for (int64_t o = 0; o < s->c_out; o++)
        for (int64_t img = 0; img < g; img++)
            memcpy(t + (o * g + img) * hw, nchw + (img * s->c_out + o) * hw, (size_t)hw * sizeof *t);
}

static void scatter_nchw(const rt_conv2d_shape *s, const float *t, const float *bias, int64_t g,
                         float *nchw)
{
    const int64_t hw = s->h_out * s->w_out;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static) collapse(2)")
    for (int64_t img = 0; img < g; img++)
        for (int64_t o = 0; o < s->c_out; o++) {
            const float *src = t + (o * g + img) * hw;
            float *dst = nchw + (img * s->c_out + o) * hw;
            float b = bias ? bias[o] : 0.0f;
            for (int64_t p = 0; p < hw; p++)
                dst[p] = src[p] + b;
        }
}

void cpu_conv_im2col_forward(const rt_conv2d_shape *s, const float *x, const float *w,
                             const float *bias, float *y, void *workspace)
{
    const int64_t ckk = s->c_in * s->kh * s->kw, hw_in = s->h * s->w,
                  hw_out = s->h_out * s->w_out, group = image_group(s);
    const bool direct = cpu_conv_is_pointwise(s) && group == 1; /* x is the column matrix */
    float *col = workspace;
    float *t = col + (direct ? 0 : ckk * group * hw_out);
    for (int64_t n0 = 0; n0 < s->n; n0 += group) {
        const int64_t g = s->n - n0 < group ? s->n - n0 : group, cols = g * hw_out;
        const float *xn = x + n0 * s->c_in * hw_in;
        float *yn = y + n0 * s->c_out * hw_out;
        if (!direct)
            im2col(s, xn, g, col);
        if (group > 1) {
            cpu_gemm(false, false, s->c_out, cols, ckk, 1.0f, w, ckk, col, cols, 0.0f, t, cols);
            scatter_nchw(s, t, bias, g, yn);
            continue;
        }
        float beta = 0.0f;
        if (bias) {
            for (int64_t o = 0; o < s->c_out; o++)
                for (int64_t p = 0; p < hw_out; p++)
                    yn[o * hw_out + p] = bias[o];
            beta = 1.0f;
        }
        cpu_gemm(false, false, s->c_out, hw_out, ckk, 1.0f, w, ckk, direct ? xn : col, hw_out,
                 beta, yn, hw_out);
    }
}

void cpu_conv_im2col_backward_data(const rt_conv2d_shape *s, const float *dy, const float *w,
                                   float *dx, bool accumulate, void *workspace)
{
    const int64_t ckk = s->c_in * s->kh * s->kw, hw_in = s->h * s->w,
                  hw_out = s->h_out * s->w_out, group = image_group(s);
    const bool direct = cpu_conv_is_pointwise(s) && group == 1;
    float *col = workspace;
    float *t = col + (direct ? 0 : ckk * group * hw_out);
    for (int64_t n0 = 0; n0 < s->n; n0 += group) {
        const int64_t g = s->n - n0 < group ? s->n - n0 : group, cols = g * hw_out;
        const float *dyn = dy + n0 * s->c_out * hw_out;
        float *dxn = dx + n0 * s->c_in * hw_in;
        if (direct) { /* dx_n = W^T dy_n straight into dx */
            cpu_gemm(true, false, ckk, hw_out, s->c_out, 1.0f, w, ckk, dyn, hw_out,
                     accumulate ? 1.0f : 0.0f, dxn, hw_out);
            continue;
        }
        const float *dyt = dyn;
        if (group > 1) {
            gather_nchw(s, dyn, g, t);
            dyt = t;
        }
        cpu_gemm(true, false, ckk, cols, s->c_out, 1.0f, w, ckk, dyt, cols, 0.0f, col, cols);
        if (!accumulate)
            memset(dxn, 0, (size_t)(g * s->c_in * hw_in) * sizeof *dxn);
        col2im_add(s, col, g, dxn);
    }
}

void cpu_conv_im2col_backward_weight(const rt_conv2d_shape *s, const float *x, const float *dy,
                                     float *dw, float *dbias, bool accumulate, void *workspace)
{
    const int64_t ckk = s->c_in * s->kh * s->kw, hw_in = s->h * s->w,
                  hw_out = s->h_out * s->w_out, group = image_group(s);
    const bool direct = cpu_conv_is_pointwise(s) && group == 1;
    float *col = workspace;
    float *t = col + (direct ? 0 : ckk * group * hw_out);
    for (int64_t n0 = 0; n0 < s->n; n0 += group) {
        const int64_t g = s->n - n0 < group ? s->n - n0 : group, cols = g * hw_out;
        const float *xn = x + n0 * s->c_in * hw_in;
        const float *dyn = dy + n0 * s->c_out * hw_out;
        if (!direct)
            im2col(s, xn, g, col);
        const float *dyt = dyn;
        if (group > 1) {
            gather_nchw(s, dyn, g, t);
            dyt = t;
        }
        cpu_gemm(false, true, s->c_out, ckk, cols, 1.0f, dyt, cols, direct ? xn : col, cols,
                 (accumulate || n0 > 0) ? 1.0f : 0.0f, dw, ckk);
    }
    if (dbias)
        cpu_conv_bias_grad(s, dy, dbias, accumulate);
}

void cpu_conv_bias_grad(const rt_conv2d_shape *s, const float *dy, float *dbias, bool accumulate)
{
    const int64_t hw_out = s->h_out * s->w_out;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static)")
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
    if (dnnl_enabled && cpu_conv_dnnl_forward(s, x, w, bias, y, workspace))
        return;
#endif
    cpu_conv_im2col_forward(s, x, w, bias, y, workspace);
}

void rt_cpu_conv2d_backward_data_f32(const rt_conv2d_shape *s, const float *dy, const float *w,
                                     float *dx, bool accumulate, void *workspace)
{
    g_return_if_fail(s != NULL && s->h_out > 0 && s->w_out > 0);
#ifdef CPU_CONV_WITH_DNNL
    if (dnnl_enabled && cpu_conv_dnnl_backward_data(s, dy, w, dx, accumulate, workspace))
        return;
#endif
    cpu_conv_im2col_backward_data(s, dy, w, dx, accumulate, workspace);
}

void rt_cpu_conv2d_backward_weight_f32(const rt_conv2d_shape *s, const float *x, const float *dy,
                                       float *dw, float *dbias, bool accumulate, void *workspace)
{
    g_return_if_fail(s != NULL && s->h_out > 0 && s->w_out > 0);
#ifdef CPU_CONV_WITH_DNNL
    if (dnnl_enabled && cpu_conv_dnnl_backward_weight(s, x, dy, dw, dbias, accumulate, workspace))
        return;
#endif
    cpu_conv_im2col_backward_weight(s, x, dy, dw, dbias, accumulate, workspace);
}
