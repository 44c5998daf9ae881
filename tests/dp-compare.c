/* dp-compare A B [RTOL [ATOL [STOL]]]: whether two safetensors files hold the same tensors
 * (names, dtypes, shapes) with values within |a - b| <= ATOL + RTOL * |b| + STOL * max|b| (max
 * over the tensor; defaults 1e-4, 1e-6, 0), read with the project's safetensors reader. STOL
 * serves sums of rounding noise, such as AdamW moments of gradients that are mathematically
 * zero (an attention key bias): they are tiny next to the tensor's other values. Prints the largest
 * differences; exits 0 when they agree, 1 when they do not, 2 on a usage or read error. The data-parallel
 * tests (train-dp.sh) compare checkpoints of runs with different numbers of processes with it. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <robotrain/safetensors.h>

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 6) {
        fprintf(stderr, "usage: dp-compare A.safetensors B.safetensors [RTOL [ATOL [STOL]]]\n");
        return 2;
    }
    double rtol = argc > 3 ? atof(argv[3]) : 1e-4, atol = argc > 4 ? atof(argv[4]) : 1e-6;
    double stol = argc > 5 ? atof(argv[5]) : 0;
    GError *error = NULL;
    rt_safetensors *a = rt_safetensors_open(argv[1], &error);
    rt_safetensors *b = a ? rt_safetensors_open(argv[2], &error) : NULL;
    if (!b) {
        fprintf(stderr, "dp-compare: %s\n", error->message);
        g_error_free(error);
        rt_safetensors_close(a);
        return 2;
    }
    int status = 0;
    size_t n = rt_safetensors_n_tensors(a);
    if (n != rt_safetensors_n_tensors(b)) {
        printf("%s has %zu tensors, %s %zu\n", argv[1], n, argv[2], rt_safetensors_n_tensors(b));
        status = 1;
    }
    double worst_ratio = 0, worst_abs = 0;
    const char *worst_name = NULL;
    int64_t total = 0, bad_total = 0;
    for (size_t i = 0; i < n; i++) {
        const rt_st_tensor *ta = rt_safetensors_tensor_at(a, i);
        const rt_st_tensor *tb = rt_safetensors_find(b, ta->name);
        gboolean same_shape = tb && tb->dtype == ta->dtype && tb->rank == ta->rank;
        for (int d = 0; same_shape && d < ta->rank; d++)
            same_shape = ta->shape[d] == tb->shape[d];
        if (!same_shape) {
            printf("%s: missing from %s or another dtype or shape\n", ta->name, argv[2]);
            status = 1;
            continue;
        }
        if (ta->dtype != RT_ST_F32 && ta->dtype != RT_ST_F64 && ta->dtype != RT_ST_F16 &&
            ta->dtype != RT_ST_BF16) {
            if (ta->n_bytes != tb->n_bytes || memcmp(ta->data, tb->data, ta->n_bytes) != 0) {
                printf("%s: the %s values differ\n", ta->name, rt_st_dtype_name(ta->dtype));
                status = 1;
            }
            continue;
        }
        size_t m = (size_t)ta->n_elements;
        float *va = g_new(float, m ? m : 1), *vb = g_new(float, m ? m : 1);
        if (!rt_safetensors_copy_f32(a, ta, va, m, &error) ||
            !rt_safetensors_copy_f32(b, tb, vb, m, &error)) {
            fprintf(stderr, "dp-compare: %s\n", error->message);
            g_clear_error(&error);
            status = 2;
        }
        int64_t bad = 0;
        double scale = 0, worst = 0;
        for (size_t k = 0; k < m; k++)
            scale = MAX(scale, fabs(vb[k]));
        for (size_t k = 0; k < m; k++) {
            double x = va[k], y = vb[k], diff = fabs(x - y), bound = atol + rtol * fabs(y) + stol * scale;
            if (!(diff <= bound))
                bad++;
            worst = MAX(worst, diff);
            double ratio = bound > 0 ? diff / bound : diff > 0 ? INFINITY : 0;
            if (!(ratio <= worst_ratio)) {
                worst_ratio = isnan(ratio) ? INFINITY : ratio;
                worst_abs = diff;
                worst_name = ta->name;
            }
        }
        total += (int64_t)m;
        bad_total += bad;
        if (bad) {
            printf("%s: %" G_GINT64_FORMAT " of %zu values differ by more than %g + %g|b| + %g max|b| "
                   "(max|b| %.3g, largest difference %.3g)\n",
                   ta->name, (gint64)bad, m, atol, rtol, stol, scale, worst);
            status = status ? status : 1;
        }
        g_free(va);
        g_free(vb);
    }
    printf("%" G_GINT64_FORMAT " values compared, %" G_GINT64_FORMAT " outside the tolerance; largest "
           "difference relative to it %.3g (%.3g absolute, in %s)\n",
           (gint64)total, (gint64)bad_total, worst_ratio, worst_abs, worst_name ? worst_name : "-");
    rt_safetensors_close(a);
    rt_safetensors_close(b);
    return status;
}
