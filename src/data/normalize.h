/* src/data/normalize.h: LeRobot's feature normalization (processor/normalize_processor.py).
 *
 * Each feature is normalized by the mode its policy type maps to (ACT: VISUAL, STATE and ACTION
 * MEAN_STD), with the dataset's stats (ImageNet mean/std for cameras when the dataset was
 * opened with use_imagenet_stats). Stats are rounded to float32 first, as LeRobot stores them,
 * and the arithmetic follows LeRobot's float32 expressions operation by operation:
 *   MEAN_STD    y = (x - mean) / (std + 1e-8)                  inverse x = y * std + mean
 *   MIN_MAX     y = 2 (x - min) / d - 1, d = max - min         inverse x = (y + 1) / 2 * d + min
 *   QUANTILES   as MIN_MAX with q01, q99; QUANTILE10 with q10, q90
 *   IDENTITY    y = x
 * where a zero d is replaced by 1e-8. A feature with no stats passes through unchanged (as in
 * LeRobot); one whose stats lack what its mode needs is an error when the normalizer is made.
 * Vectors use one stat per element (broadcast over a window's time steps); cameras one per
 * channel. */
#ifndef ROBOTRAIN_DATA_NORMALIZE_H
#define ROBOTRAIN_DATA_NORMALIZE_H

#include <glib.h>

#include "data/dataset.h"

G_BEGIN_DECLS

typedef enum {
    RT_NORM_IDENTITY,
    RT_NORM_MEAN_STD,
    RT_NORM_MIN_MAX,
    RT_NORM_QUANTILES,
    RT_NORM_QUANTILE10,
} rt_norm_mode;

/* LeRobot's names: "IDENTITY", "MEAN_STD", "MIN_MAX", "QUANTILES", "QUANTILE10". */
const char *rt_norm_mode_name(rt_norm_mode mode);
gboolean rt_norm_mode_from_name(const char *name, rt_norm_mode *mode);

/* The mode of each policy feature type (indexed by rt_dataset_feature_type; NONE is always identity). */
typedef struct {
    rt_norm_mode mode[RT_FEATURE_TYPE_ENV + 1];
} rt_norm_map;

/* ACT's normalization_mapping: VISUAL, STATE, ACTION -> MEAN_STD; ENV -> IDENTITY. */
void rt_norm_map_act(rt_norm_map *map);

typedef struct rt_normalizer rt_normalizer;

#define RT_NORM_EPS 1e-8f

/* Prepares the normalization of every feature of ds. Fails (RT_ERROR_INVALID_ARG) naming the
 * feature, its mode and the missing stat. Returns (transfer full): free with
 * rt_normalizer_free(). ds must outlive it. */
rt_normalizer *rt_normalizer_new(const rt_dataset *ds, const rt_norm_map *map, GError **error);
void rt_normalizer_free(rt_normalizer *norm);

/* The mode applied to a feature (IDENTITY when it has no stats). */
rt_norm_mode rt_normalizer_mode(const rt_normalizer *norm, int feature);

/* Normalizes (inverse FALSE) or un-normalizes `frames` frames of a float32 feature in place:
 * x holds frames x numel values (numel = the feature's, or channels x height x width). */
void rt_normalizer_apply_f32(const rt_normalizer *norm, int feature, float *x, size_t frames,
                             gboolean inverse);
void rt_normalizer_apply_f64(const rt_normalizer *norm, int feature, double *x, size_t frames,
                             gboolean inverse);

/* Normalizes every feature field of the batch's first batch->size samples (the _is_pad fields
 * and integer fields are left alone). */
void rt_normalizer_apply_batch(const rt_normalizer *norm, rt_batch *batch);

G_END_DECLS

#endif
