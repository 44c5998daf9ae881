/* Frames of the selected episodes: the numeric columns of the data files, read into memory and
 * checked against the episodes table the way LeRobot's loaders assume them to be. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-private.h"
#include "data/parquet.h"

/* The Parquet column of a NUMERIC feature, checked against info.json. */
static int feature_column(rt_parquet_file *f, const rt_feature *feat, GError **error)
{
    const char *path = rt_parquet_file_path(f);
    int c = rt_parquet_file_find_column(f, feat->name);
    if (c < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: no column for feature \"%s\" of meta/info.json",
                    path, feat->name);
        return -1;
    }
    const rt_parquet_column *col = rt_parquet_file_column(f, c);
    gboolean type_ok;
    switch (feat->storage) {
    case RT_F32:
        type_ok = col->physical == RT_PARQUET_FLOAT;
        break;
    case RT_F64:
        type_ok = col->physical == RT_PARQUET_DOUBLE;
        break;
    case RT_I64:
        type_ok = col->physical == RT_PARQUET_INT64 || col->physical == RT_PARQUET_INT32;
        break;
    case RT_BOOL:
    default:
        type_ok = col->physical == RT_PARQUET_BOOLEAN;
        break;
    }
    if (!type_ok) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: column \"%s\" does not hold %s values as meta/info.json says (dtype %s)", path,
                    col->path, rt_dtype_name(feat->storage), feat->dtype);
        return -1;
    }
    if (feat->ndim > 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "%s: feature \"%s\" has a %d-dimensional shape; only scalars and vectors are supported",
                    path, feat->name, feat->ndim);
        return -1;
    }
    if (col->shape == RT_PARQUET_NESTED || (col->shape == RT_PARQUET_SCALAR && feat->numel != 1)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: column \"%s\" is not a list of %" G_GINT64_FORMAT " values as meta/info.json says",
                    path, col->path, feat->numel);
        return -1;
    }
    return c;
}

/* Copies rows of array a (num_rows x numel) into dst, converting INT32 to int64. */
static gboolean copy_values(rt_parquet_file *f, const rt_parquet_array *a, const rt_feature *feat, void *dst,
                            GError **error)
{
    const rt_parquet_column *col = rt_parquet_file_column(f, a->column);
    if (a->null_count || a->null_list_count) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: column \"%s\" has null values",
                    rt_parquet_file_path(f), col->path);
        return FALSE;
    }
    if (col->shape == RT_PARQUET_LIST && a->list_size != feat->numel) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_FORMAT,
            "%s: column \"%s\" has lists of %s length, not %" G_GINT64_FORMAT " as meta/info.json says",
            rt_parquet_file_path(f), col->path, a->list_size > 0 ? "another" : "varying", feat->numel);
        return FALSE;
    }
    size_t n = (size_t)a->num_rows * (size_t)feat->numel;
    if (col->physical == RT_PARQUET_INT32) {
        const int32_t *src = a->values;
        int64_t *out = dst;
        for (size_t i = 0; i < n; i++)
            out[i] = src[i];
    } else {
        memcpy(dst, a->values, n * rt_dtype_size(feat->storage));
    }
    return TRUE;
}

/* Reads rows [row, row + n) of every numeric feature into the columns at item `item`. */
static gboolean read_rows(rt_dataset *ds, rt_parquet_file *f, const int *cols, const int *feats, int n_cols,
                          int64_t row, int64_t n, int64_t item, GError **error)
{
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, n_cols, row, n, error);
    if (!b)
        return FALSE;
    gboolean ok = TRUE;
    for (int k = 0; ok && k < n_cols; k++) {
        const rt_feature *feat = rt_dataset_feature(ds, feats[k]);
        char *dst =
            (char *)ds->columns[feats[k]] + (size_t)item * (size_t)feat->numel * rt_dtype_size(feat->storage);
        ok = copy_values(f, &b->arrays[k], feat, dst, error);
    }
    rt_parquet_batch_free(b);
    return ok;
}

static const int64_t *int_column(const rt_dataset *ds, const char *name)
{
    return ds->columns[rt_meta_info_find(ds->info, name)];
}

/* What LeRobot assumes of every episode's rows. */
static gboolean check_episode(rt_dataset *ds, int64_t k, GError **error)
{
    const rt_episode *e = &ds->episodes[ds->selected[k]];
    int64_t base = ds->sel_start[k];
    const int64_t *ep = int_column(ds, "episode_index"), *fi = int_column(ds, "frame_index"),
                  *ix = int_column(ds, "index"), *ti = int_column(ds, "task_index");
    const char *file = ds->sel_data_path[k];
    for (int64_t f = 0; f < e->length; f++) {
        int64_t i = base + f;
        const char *what = NULL;
        int64_t got = 0, want = 0;
        if (ep[i] != e->episode_index)
            what = "episode_index", got = ep[i], want = e->episode_index;
        else if (fi[i] != f)
            what = "frame_index", got = fi[i], want = f;
        else if (ix[i] != e->from_index + f)
            what = "index", got = ix[i], want = e->from_index + f;
        if (what) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: frame %" G_GINT64_FORMAT " of episode %" G_GINT64_FORMAT
                        " has %s %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT " from %s",
                        file, f, e->episode_index, what, got, want, rt_dataset_episode_source(ds, k));
            return FALSE;
        }
        if (!g_hash_table_contains(ds->task_by_index, &ti[i])) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: frame %" G_GINT64_FORMAT " of episode %" G_GINT64_FORMAT
                        " has task_index %" G_GINT64_FORMAT ", which is not in %s",
                        file, f, e->episode_index, ti[i], ds->tasks_path);
            return FALSE;
        }
    }
    /* LeRobot's check_timestamps_sync: consecutive timestamps are 1/fps apart within tolerance_s */
    const rt_feature *tsf = rt_dataset_feature(ds, ds->ts_feature);
    const void *ts = ds->columns[ds->ts_feature];
    double period = 1.0 / ds->info->fps;
    for (int64_t f = 1; f < e->length; f++) {
        int64_t i = base + f;
        double a = tsf->storage == RT_F32 ? ((const float *)ts)[i - 1] : ((const double *)ts)[i - 1];
        double b = tsf->storage == RT_F32 ? ((const float *)ts)[i] : ((const double *)ts)[i];
        if (!(fabs(b - a - period) <= ds->tolerance)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: timestamps of episode %" G_GINT64_FORMAT
                        " jump from %.9g s (frame %" G_GINT64_FORMAT
                        ") to %.9g s, not 1/fps = %.9g s apart within the tolerance %g s (fps %g, from "
                        "%s/meta/info.json)",
                        file, e->episode_index, a, f - 1, b, period, ds->tolerance, ds->info->fps, ds->root);
            return FALSE;
        }
    }
    return TRUE;
}

/* The data file of selected episode k. */
static char *data_file_of(rt_dataset *ds, int64_t k, GError **error)
{
    const rt_episode *e = &ds->episodes[ds->selected[k]];
    const char *tmpl = ds->info->data_path;
    if (ds->info->version_major >= 3) {
        static const char *const names[] = {"chunk_index", "file_index"};
        int64_t ints[] = {e->data_chunk, e->data_file};
        return rt_dataset_file_path(ds->root, tmpl, names, ints, 2, NULL, error);
    }
    static const char *const names[] = {"episode_chunk", "episode_index"};
    int64_t ints[] = {e->data_chunk, e->episode_index};
    return rt_dataset_file_path(ds->root, tmpl, names, ints, 2, NULL, error);
}

/* Reads the rows of selected episodes [k0, k1), which share one data file. */
static gboolean load_file(rt_dataset *ds, int64_t k0, int64_t k1, const int *feats, int n_feats,
                          GError **error)
{
    const char *path = ds->sel_data_path[k0];
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        g_autofree char *origin = rt_dataset_path_origin(ds, k0, "data");
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s: no such file (data of episode %" G_GINT64_FORMAT
                    "); download the dataset's data files, "
                    "or select the episodes you have with --dataset.episodes (the path is %s)",
                    path, ds->episodes[ds->selected[k0]].episode_index, origin);
        return FALSE;
    }
    rt_parquet_file *f = rt_parquet_file_open(path, error);
    if (!f)
        return FALSE;
    gboolean ok = TRUE;
    int *cols = g_new(int, n_feats);
    for (int i = 0; ok && i < n_feats; i++) {
        cols[i] = feature_column(f, rt_dataset_feature(ds, feats[i]), error);
        ok = cols[i] >= 0;
    }
    int64_t rows = rt_parquet_file_num_rows(f);
    int64_t *index = NULL;
    if (ok) {
        index = g_try_new(int64_t, rows ? rows : 1);
        if (!index) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: %" G_GINT64_FORMAT " rows do not fit in memory", path, rows);
            ok = FALSE;
        }
    }
    ok = ok && rt_meta_read_int64_column(f, "index", 0, rows, index, error);
    /* where each episode's rows are: rows are ordered by index, the episode's are contiguous */
    for (int64_t k = k0; ok && k < k1; k++) {
        const rt_episode *e = &ds->episodes[ds->selected[k]];
        int64_t r = rows > 0 ? e->from_index - index[0] : -1;
        if (!(r >= 0 && r < rows && index[r] == e->from_index)) {
            r = -1;
            for (int64_t i = 0; i < rows && r < 0; i++)
                if (index[i] == e->from_index)
                    r = i;
        }
        if (e->length > 0 && (r < 0 || r + e->length > rows)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: the rows of episode %" G_GINT64_FORMAT " (index %" G_GINT64_FORMAT
                        " to %" G_GINT64_FORMAT ", from %s) are not in the file",
                        path, e->episode_index, e->from_index, e->to_index - 1,
                        rt_dataset_episode_source(ds, k));
            ok = FALSE;
            break;
        }
        ds->sel_data_row[k] = r < 0 ? 0 : r;
    }
    /* one read per run of episodes that follow each other in the file */
    for (int64_t k = k0; ok && k < k1;) {
        int64_t run_end = k + 1;
        int64_t n = ds->episodes[ds->selected[k]].length;
        while (run_end < k1 && ds->sel_data_row[run_end] == ds->sel_data_row[k] + n) {
            n += ds->episodes[ds->selected[run_end]].length;
            run_end++;
        }
        if (n > 0)
            ok = read_rows(ds, f, cols, feats, n_feats, ds->sel_data_row[k], n, ds->sel_start[k], error);
        k = run_end;
    }
    g_free(index);
    g_free(cols);
    rt_parquet_file_free(f);
    return ok;
}

gboolean rt_dataset_load_frames(rt_dataset *ds, GError **error)
{
    ds->sel_start = g_new0(int64_t, ds->n_selected + 1);
    for (int64_t k = 0; k < ds->n_selected; k++) {
        ds->sel_start[k + 1] = ds->sel_start[k] + ds->episodes[ds->selected[k]].length;
        if (ds->sel_start[k + 1] > (INT64_C(1) << 36)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s/meta: the selected episodes hold more than 2^36 frames", ds->root);
            return FALSE;
        }
    }
    int64_t frames = ds->sel_start[ds->n_selected];
    int *feats = g_new(int, ds->n_features);
    int n_feats = 0;
    ds->columns = g_new0(void *, ds->n_features);
    for (int i = 0; i < ds->n_features; i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        if (f->kind != RT_FEATURE_NUMERIC)
            continue;
        size_t bytes = (size_t)frames * (size_t)f->numel * rt_dtype_size(f->storage);
        ds->columns[i] = g_try_malloc0(bytes ? bytes : 1);
        if (!ds->columns[i]) {
            g_set_error(error, RT_ERROR, RT_ERROR_FAILED,
                        "%s: %" G_GINT64_FORMAT " frames of \"%s\" (%zu bytes) do "
                        "not fit in memory; select fewer episodes",
                        ds->root, frames, f->name, bytes);
            g_free(feats);
            return FALSE;
        }
        feats[n_feats++] = i;
    }
    ds->sel_data_path = g_new0(char *, ds->n_selected + 1);
    ds->sel_data_row = g_new0(int64_t, ds->n_selected + 1);
    gboolean ok = TRUE;
    for (int64_t k = 0; ok && k < ds->n_selected; k++) {
        ds->sel_data_path[k] = data_file_of(ds, k, error);
        ok = ds->sel_data_path[k] != NULL;
    }
    /* runs of selected episodes in the same file */
    for (int64_t k = 0; ok && k < ds->n_selected;) {
        int64_t end = k + 1;
        while (end < ds->n_selected && strcmp(ds->sel_data_path[end], ds->sel_data_path[k]) == 0)
            end++;
        ok = load_file(ds, k, end, feats, n_feats, error);
        k = end;
    }
    g_free(feats);
    for (int64_t k = 0; ok && k < ds->n_selected; k++)
        ok = check_episode(ds, k, error);
    return ok;
}
