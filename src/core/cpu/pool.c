/* src/core/cpu/pool.c: 2-D max pooling (NCHW) with PyTorch's semantics: padding counts as
 * -inf, the first maximum of a window wins, and a NaN in the window is the result. */
#include "config.h"

#include <glib.h>
#include <math.h>
#include <string.h>

#include "core/cpu/cpu-internal.h"
#include "core/cpu/kernels.h"

void rt_cpu_maxpool2d_forward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k,
                                  int64_t stride, int64_t pad, int64_t h_out, int64_t w_out,
                                  const float *x, float *y, int32_t *argmax)
{
    g_return_if_fail(k > 0 && stride > 0 && pad >= 0 && h * w <= INT32_MAX);
    const int64_t planes = n * c;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static)")
    for (int64_t p = 0; p < planes; p++) {
        const float *in = x + p * h * w;
        float *out = y + p * h_out * w_out;
        int32_t *arg = argmax + p * h_out * w_out;
        for (int64_t oh = 0; oh < h_out; oh++) {
            int64_t h0 = oh * stride - pad, h1 = h0 + k;
            if (h0 < 0)
                h0 = 0;
            if (h1 > h)
                h1 = h;
            for (int64_t ow = 0; ow < w_out; ow++) {
                int64_t w0 = ow * stride - pad, w1 = w0 + k;
                if (w0 < 0)
                    w0 = 0;
                if (w1 > w)
                    w1 = w;
                float best = -INFINITY;
                int64_t best_at = h0 * w + w0;
                for (int64_t ih = h0; ih < h1; ih++)
                    for (int64_t iw = w0; iw < w1; iw++) {
                        float v = in[ih * w + iw];
                        if (v > best || isnan(v)) {
                            best = v;
                            best_at = ih * w + iw;
                            if (isnan(v))
                                goto done;
                        }
                    }
            done:
                out[oh * w_out + ow] = best;
                arg[oh * w_out + ow] = (int32_t)best_at;
            }
        }
    }
}

void rt_cpu_maxpool2d_backward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                   int64_t w_out, const float *dy, const int32_t *argmax, float *dx,
                                   bool accumulate)
{
    const int64_t planes = n * c;
    CPU_OMP("omp parallel for num_threads(cpu_threads()) schedule(static)")
    for (int64_t p = 0; p < planes; p++) {
        float *grad = dx + p * h * w;
        const float *g = dy + p * h_out * w_out;
        const int32_t *arg = argmax + p * h_out * w_out;
        if (!accumulate)
            memset(grad, 0, (size_t)(h * w) * sizeof *grad);
        for (int64_t i = 0; i < h_out * w_out; i++)
            grad[arg[i]] += g[i];
    }
}
