/* Feature normalization as LeRobot's NormalizerProcessorStep computes it. */
#include "config.h"

/* Each float32 operation must round once, as torch's separate kernels do: no fused
 * multiply-adds, whatever the target or the compiler's default. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <string.h>

#include <robotrain/error.h>

#include "data/normalize.h"

static const char *const mode_names[] = {"IDENTITY", "MEAN_STD", "MIN_MAX", "QUANTILES", "QUANTILE10"};

const char *rt_norm_mode_name(rt_norm_mode mode)
{
    return mode <= RT_NORM_QUANTILE10 ? mode_names[mode] : "?";
}

gboolean rt_norm_mode_from_name(const char *name, rt_norm_mode *mode)
{
    for (size_t i = 0; i < G_N_ELEMENTS(mode_names); i++)
        if (strcmp(name, mode_names[i]) == 0) {
            *mode = (rt_norm_mode)i;
            return TRUE;
        }
    return FALSE;
}

void rt_norm_map_act(rt_norm_map *map)
{
    memset(map, 0, sizeof *map);
    map->mode[RT_FEATURE_TYPE_VISUAL] = RT_NORM_MEAN_STD;
    map->mode[RT_FEATURE_TYPE_STATE] = RT_NORM_MEAN_STD;
    map->mode[RT_FEATURE_TYPE_ACTION] = RT_NORM_MEAN_STD;
}

typedef struct {
    rt_norm_mode mode;
    int64_t n;      /* stats per frame: numel, or channels */
    int64_t repeat; /* values each stat covers in a frame: 1, or height x width for cameras */
    float *shift;   /* mean, min or the low quantile */
    float *other;   /* std, max or the high quantile */
    float *denom;   /* MEAN_STD: std + eps; others: the range, 1e-8 where it is zero */
} feature_norm;

struct rt_normalizer {
    const rt_dataset *ds;
    int n;
    feature_norm *f;
};

void rt_normalizer_free(rt_normalizer *norm)
{
    if (!norm)
        return;
    for (int i = 0; i < norm->n; i++) {
        g_free(norm->f[i].shift);
        g_free(norm->f[i].other);
        g_free(norm->f[i].denom);
    }
    g_free(norm->f);
    g_free(norm);
}

static float *to_f32(const double *v, int64_t n)
{
    float *out = g_new(float, n);
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)v[i];
    return out;
}

rt_normalizer *rt_normalizer_new(const rt_dataset *ds, const rt_norm_map *map, GError **error)
{
    rt_normalizer *norm = g_new0(rt_normalizer, 1);
    norm->ds = ds;
    norm->n = rt_dataset_num_features(ds);
    norm->f = g_new0(feature_norm, norm->n);
    for (int i = 0; i < norm->n; i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        feature_norm *fn = &norm->f[i];
        rt_norm_mode mode = f->type == RT_FEATURE_TYPE_NONE ? RT_NORM_IDENTITY : map->mode[f->type];
        const rt_feature_stats *st = rt_dataset_stats(ds, f->name);
        if (mode == RT_NORM_IDENTITY || !st || (f->storage != RT_F32 && f->storage != RT_F64))
            continue;
        gboolean camera = f->kind == RT_FEATURE_VIDEO || f->kind == RT_FEATURE_IMAGE;
        rt_stat lo, hi;
        switch (mode) {
        case RT_NORM_MEAN_STD:
            lo = RT_STAT_MEAN, hi = RT_STAT_STD;
            break;
        case RT_NORM_MIN_MAX:
            lo = RT_STAT_MIN, hi = RT_STAT_MAX;
            break;
        case RT_NORM_QUANTILES:
            lo = RT_STAT_Q01, hi = RT_STAT_Q99;
            break;
        case RT_NORM_QUANTILE10:
        default:
            lo = RT_STAT_Q10, hi = RT_STAT_Q90;
            break;
        }
        if (!st->values[lo] || !st->values[hi]) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "%s normalization of \"%s\" needs its %s and %s, which the dataset's stats do not have; "
                "recompute the stats or choose another normalization mode",
                rt_norm_mode_name(mode), f->name, rt_stat_name(lo), rt_stat_name(hi));
            rt_normalizer_free(norm);
            return NULL;
        }
        fn->mode = mode;
        fn->n = st->numel;
        fn->repeat = camera ? (int64_t)f->height * f->width : 1;
        fn->shift = to_f32(st->values[lo], st->numel);
        fn->other = to_f32(st->values[hi], st->numel);
        fn->denom = g_new(float, st->numel);
        for (int64_t j = 0; j < st->numel; j++) {
            if (mode == RT_NORM_MEAN_STD) {
                fn->denom[j] = fn->other[j] + RT_NORM_EPS; /* float32 + float32, as torch adds eps */
            } else {
                float d = fn->other[j] - fn->shift[j];
                fn->denom[j] = d == 0 ? RT_NORM_EPS : d;
            }
        }
    }
    return norm;
}

rt_norm_mode rt_normalizer_mode(const rt_normalizer *norm, int feature)
{
    g_return_val_if_fail(feature >= 0 && feature < norm->n, RT_NORM_IDENTITY);
    return norm->f[feature].mode;
}

/* LeRobot's float32 expressions, operation by operation. */
static inline float fwd_f32(rt_norm_mode mode, float x, float shift, float denom)
{
    if (mode == RT_NORM_MEAN_STD)
        return (x - shift) / denom;
    float t = 2.0f * (x - shift);
    return t / denom - 1.0f;
}

static inline float inv_f32(rt_norm_mode mode, float y, float shift, float scale, float denom)
{
    if (mode == RT_NORM_MEAN_STD)
        return y * scale + shift;
    if (mode == RT_NORM_MIN_MAX)
        return (y + 1.0f) / 2.0f * denom + shift;
    return (y + 1.0f) * denom / 2.0f + shift;
}

/* The forward transform over n values with one stat, four lanes at a time (GCC/clang vector
 * extensions; each lane rounds exactly as the scalar expression, so the result is the same). */
typedef float v4sf __attribute__((vector_size(16)));

static void forward_run(rt_norm_mode mode, float *p, int64_t n, float s, float d)
{
    v4sf vs = {s, s, s, s}, vd = {d, d, d, d}, two = {2, 2, 2, 2}, one = {1, 1, 1, 1};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4sf x;
        memcpy(&x, p + i, sizeof x);
        if (mode == RT_NORM_MEAN_STD)
            x = (x - vs) / vd;
        else
            x = two * (x - vs) / vd - one;
        memcpy(p + i, &x, sizeof x);
    }
    for (; i < n; i++)
        p[i] = fwd_f32(mode, p[i], s, d);
}

void rt_normalizer_apply_f32(const rt_normalizer *norm, int feature, float *x, size_t frames,
                             gboolean inverse)
{
    g_return_if_fail(feature >= 0 && feature < norm->n);
    const feature_norm *fn = &norm->f[feature];
    if (fn->mode == RT_NORM_IDENTITY)
        return;
    for (size_t fr = 0; fr < frames; fr++)
        for (int64_t j = 0; j < fn->n; j++) {
            float s = fn->shift[j], d = fn->denom[j], sc = fn->other[j];
            float *p = x + ((size_t)fr * (size_t)fn->n + (size_t)j) * (size_t)fn->repeat;
            if (inverse)
                for (int64_t r = 0; r < fn->repeat; r++)
                    p[r] = inv_f32(fn->mode, p[r], s, sc, d);
            else if (fn->repeat >= 4)
                forward_run(fn->mode, p, fn->repeat, s, d); /* a camera channel */
            else
                for (int64_t r = 0; r < fn->repeat; r++)
                    p[r] = fwd_f32(fn->mode, p[r], s, d);
        }
}

void rt_normalizer_apply_f64(const rt_normalizer *norm, int feature, double *x, size_t frames,
                             gboolean inverse)
{
    g_return_if_fail(feature >= 0 && feature < norm->n);
    const feature_norm *fn = &norm->f[feature];
    if (fn->mode == RT_NORM_IDENTITY)
        return;
    /* a float64 tensor: LeRobot widens the float32 stats and computes in double */
    for (size_t fr = 0; fr < frames; fr++)
        for (int64_t j = 0; j < fn->n; j++) {
            double s = fn->shift[j], o = fn->other[j], d;
            if (fn->mode == RT_NORM_MEAN_STD) {
                d = o + 1e-8;
            } else {
                d = o - s;
                d = d == 0 ? 1e-8 : d;
            }
            double *p = x + ((size_t)fr * (size_t)fn->n + (size_t)j) * (size_t)fn->repeat;
            for (int64_t r = 0; r < fn->repeat; r++) {
                if (!inverse)
                    p[r] = fn->mode == RT_NORM_MEAN_STD ? (p[r] - s) / d : 2.0 * (p[r] - s) / d - 1.0;
                else if (fn->mode == RT_NORM_MEAN_STD)
                    p[r] = p[r] * o + s;
                else if (fn->mode == RT_NORM_MIN_MAX)
                    p[r] = (p[r] + 1.0) / 2.0 * d + s;
                else
                    p[r] = (p[r] + 1.0) * d / 2.0 + s;
            }
        }
}

void rt_normalizer_apply_batch(const rt_normalizer *norm, rt_batch *batch)
{
    const rt_batch_layout *l = batch->layout;
    for (int i = 0; i < rt_batch_layout_num_fields(l); i++) {
        const rt_batch_field *bf = rt_batch_layout_field(l, i);
        if (bf->is_pad || norm->f[bf->feature].mode == RT_NORM_IDENTITY)
            continue;
        const feature_norm *fn = &norm->f[bf->feature];
        size_t per_frame = (size_t)(fn->n * fn->repeat);
        size_t frames = (size_t)bf->numel / per_frame * (size_t)batch->size;
        void *data = rt_batch_field_data(batch, i);
        if (bf->dtype == RT_F32)
            rt_normalizer_apply_f32(norm, bf->feature, data, frames, FALSE);
        else if (bf->dtype == RT_F64)
            rt_normalizer_apply_f64(norm, bf->feature, data, frames, FALSE);
    }
}
