/* Items and batches: the layout of a batch block, and the per-thread reader that fills a sample
 * (numeric rows with their windows, camera frames from the videos or inline PNGs). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-private.h"
#include "data/parquet.h"
#include "data/png-decode.h"
#include "data/video.h"

#define FIELD_ALIGN 64
#define BLOCK_ALIGN 4096

struct rt_batch_layout {
    const rt_dataset *ds;
    int64_t capacity;
    GArray *fields; /* rt_batch_field */
    GStringChunk *keys;
    size_t bytes;
};

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

rt_batch_layout *rt_batch_layout_new(const rt_dataset *ds, int64_t capacity)
{
    g_return_val_if_fail(ds != NULL && capacity > 0, NULL);
    rt_batch_layout *l = g_new0(rt_batch_layout, 1);
    l->ds = ds;
    l->capacity = capacity;
    l->fields = g_array_new(FALSE, TRUE, sizeof(rt_batch_field));
    l->keys = g_string_chunk_new(256);
    size_t at = 0;
    for (int i = 0; i < ds->n_features; i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        if (f->kind == RT_FEATURE_STRING)
            continue;
        size_t t = ds->n_deltas[i];
        rt_batch_field b = {0};
        b.key = g_string_chunk_insert(l->keys, f->name);
        b.feature = i;
        b.dtype = f->storage;
        if (t)
            b.shape[b.ndim++] = (int64_t)t;
        if (f->kind == RT_FEATURE_NUMERIC) {
            if (!(f->ndim == 1 && f->shape[0] == 1)) /* shape-[1] features are 0-d per sample */
                for (int d = 0; d < f->ndim; d++)
                    b.shape[b.ndim++] = f->shape[d];
        } else {
            b.shape[b.ndim++] = f->channels;
            b.shape[b.ndim++] = f->height;
            b.shape[b.ndim++] = f->width;
        }
        b.numel = 1;
        for (int d = 0; d < b.ndim; d++)
            b.numel *= b.shape[d];
        b.sample_bytes = (size_t)b.numel * rt_dtype_size(b.dtype);
        b.offset = at;
        at = align_up(at + b.sample_bytes * (size_t)capacity, FIELD_ALIGN);
        g_array_append_val(l->fields, b);
        if (t) {
            rt_batch_field p = {0};
            g_autofree char *key = g_strdup_printf("%s_is_pad", f->name);
            p.key = g_string_chunk_insert(l->keys, key);
            p.feature = i;
            p.is_pad = TRUE;
            p.dtype = RT_BOOL;
            p.ndim = 1;
            p.shape[0] = (int64_t)t;
            p.numel = (int64_t)t;
            p.sample_bytes = t;
            p.offset = at;
            at = align_up(at + p.sample_bytes * (size_t)capacity, FIELD_ALIGN);
            g_array_append_val(l->fields, p);
        }
    }
    l->bytes = align_up(at ? at : 1, BLOCK_ALIGN);
    return l;
}

void rt_batch_layout_free(rt_batch_layout *layout)
{
    if (!layout)
        return;
    g_array_free(layout->fields, TRUE);
    g_string_chunk_free(layout->keys);
    g_free(layout);
}

int rt_batch_layout_num_fields(const rt_batch_layout *layout)
{
    return (int)layout->fields->len;
}

const rt_batch_field *rt_batch_layout_field(const rt_batch_layout *layout, int i)
{
    g_return_val_if_fail(i >= 0 && i < (int)layout->fields->len, NULL);
    return &g_array_index(layout->fields, rt_batch_field, i);
}

int rt_batch_layout_find(const rt_batch_layout *layout, const char *key)
{
    for (guint i = 0; i < layout->fields->len; i++)
        if (strcmp(g_array_index(layout->fields, rt_batch_field, i).key, key) == 0)
            return (int)i;
    return -1;
}

int64_t rt_batch_layout_capacity(const rt_batch_layout *layout)
{
    return layout->capacity;
}

size_t rt_batch_layout_bytes(const rt_batch_layout *layout)
{
    return layout->bytes;
}

rt_batch *rt_batch_new(const rt_batch_layout *layout, void *data)
{
    rt_batch *b = g_new0(rt_batch, 1);
    b->layout = layout;
    b->capacity = layout->capacity;
    if (data) {
        b->data = data;
    } else {
        void *p = NULL;
        if (posix_memalign(&p, BLOCK_ALIGN, layout->bytes) != 0)
            g_error("out of memory for a batch of %zu bytes", layout->bytes);
        memset(p, 0, layout->bytes);
        b->data = p;
        b->owns_data = TRUE;
    }
    b->items = g_new0(int64_t, layout->capacity);
    b->tasks = g_new0(const char *, layout->capacity);
    return b;
}

void rt_batch_free(rt_batch *batch)
{
    if (!batch)
        return;
    if (batch->owns_data)
        free(batch->data);
    g_free(batch->items);
    g_free(batch->tasks);
    g_free(batch);
}

void *rt_batch_field_data(const rt_batch *batch, int field)
{
    return (char *)batch->data + rt_batch_layout_field(batch->layout, field)->offset;
}

/* ---------------------------------------------------------------- the reader */

typedef struct {
    const char *path; /* borrowed from the dataset */
    rt_video_decoder *dec;
    uint64_t used;
} open_video;

typedef struct {
    const char *path;
    rt_parquet_file *file;
    uint64_t used;
} open_table;

struct rt_dataset_reader {
    const rt_dataset *ds;
    int decoder_threads;
    open_video *videos;
    int n_videos_max;
    open_table tables[2];
    uint64_t clock;
    double *timestamps; /* [RT_DATASET_MAX_DELTAS] */
    int64_t *rows;      /* [RT_DATASET_MAX_DELTAS] */
};

rt_dataset_reader *rt_dataset_reader_new(const rt_dataset *ds, int decoder_threads)
{
    rt_dataset_reader *r = g_new0(rt_dataset_reader, 1);
    r->ds = ds;
    r->decoder_threads = decoder_threads > 0 ? decoder_threads : 1;
    /* a v3 camera file holds many episodes: two per camera covers an item that straddles two
     * files and the next item's */
    r->n_videos_max = MAX(4, 2 * ds->n_cameras);
    r->videos = g_new0(open_video, r->n_videos_max);
    r->timestamps = g_new(double, RT_DATASET_MAX_DELTAS);
    r->rows = g_new(int64_t, RT_DATASET_MAX_DELTAS);
    return r;
}

void rt_dataset_reader_free(rt_dataset_reader *reader)
{
    if (!reader)
        return;
    for (int i = 0; i < reader->n_videos_max; i++)
        rt_video_decoder_free(reader->videos[i].dec);
    for (size_t i = 0; i < G_N_ELEMENTS(reader->tables); i++)
        rt_parquet_file_free(reader->tables[i].file);
    g_free(reader->videos);
    g_free(reader->timestamps);
    g_free(reader->rows);
    g_free(reader);
}

static rt_video_decoder *get_decoder(rt_dataset_reader *r, const char *path, const rt_feature *cam,
                                     GError **error)
{
    int lru = 0;
    for (int i = 0; i < r->n_videos_max; i++) {
        open_video *v = &r->videos[i];
        if (v->dec && (v->path == path || strcmp(v->path, path) == 0)) {
            v->used = ++r->clock;
            return v->dec;
        }
        if (!v->dec || (r->videos[lru].dec && v->used < r->videos[lru].used))
            lru = i;
    }
    rt_video_decoder *dec = rt_video_decoder_open(path, r->decoder_threads, error);
    if (!dec)
        return NULL;
    if (rt_video_decoder_width(dec) != cam->width || rt_video_decoder_height(dec) != cam->height) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_FORMAT,
            "%s: frames are %dx%d but meta/info.json gives camera %s a shape of %dx%d (width x height)", path,
            rt_video_decoder_width(dec), rt_video_decoder_height(dec), cam->name, cam->width, cam->height);
        rt_video_decoder_free(dec);
        return NULL;
    }
    open_video *v = &r->videos[lru];
    rt_video_decoder_free(v->dec);
    v->path = path;
    v->dec = dec;
    v->used = ++r->clock;
    return dec;
}

static rt_parquet_file *get_table(rt_dataset_reader *r, const char *path, GError **error)
{
    open_table *slot = &r->tables[0];
    for (size_t i = 0; i < G_N_ELEMENTS(r->tables); i++) {
        open_table *t = &r->tables[i];
        if (t->file && strcmp(t->path, path) == 0) {
            t->used = ++r->clock;
            return t->file;
        }
        if (!t->file || (slot->file && t->used < slot->used))
            slot = t;
    }
    rt_parquet_file *f = rt_parquet_file_open(path, error);
    if (!f)
        return NULL;
    rt_parquet_file_free(slot->file);
    slot->path = path;
    slot->file = f;
    slot->used = ++r->clock;
    return f;
}

/* Decodes the inline PNG of `cam` at file row `row` into out. */
static gboolean decode_image(rt_dataset_reader *r, const char *path, int64_t row, const rt_feature *cam,
                             float *out, GError **error)
{
    rt_parquet_file *f = get_table(r, path, error);
    if (!f)
        return FALSE;
    g_autofree char *leaf = g_strdup_printf("%s.bytes", cam->name);
    int c = rt_parquet_file_find_column(f, leaf);
    if (c < 0 || rt_parquet_file_column(f, c)->physical != RT_PARQUET_BYTE_ARRAY) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: no binary column \"%s\" for image feature %s",
                    path, leaf, cam->name);
        return FALSE;
    }
    rt_parquet_batch *b = rt_parquet_file_read(f, &c, 1, row, 1, error);
    if (!b)
        return FALSE;
    const rt_parquet_array *a = &b->arrays[0];
    gboolean ok;
    g_autofree char *what = g_strdup_printf("%s row %" G_GINT64_FORMAT " column %s", path, row, leaf);
    if (!rt_parquet_array_is_valid(a, 0)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: the image is null", what);
        ok = FALSE;
    } else {
        ok = rt_png_decode(a->data + a->offsets[0], (size_t)(a->offsets[1] - a->offsets[0]), what, cam->width,
                           cam->height, out, error);
    }
    rt_parquet_batch_free(b);
    return ok;
}

/* A time the video does not have comes from the metadata: say which files gave it. */
static void explain_times(const rt_dataset *ds, int64_t k, double from, GError **error)
{
    char *m;
    if (ds->info->version_major >= 3)
        m = g_strdup_printf("%s (the times asked are the episode's from_timestamp %.6f s in %s plus the "
                            "frames' timestamps in %s)",
                            (*error)->message, from, rt_dataset_episode_source(ds, k), ds->sel_data_path[k]);
    else
        m = g_strdup_printf("%s (the times asked are the frames' timestamps in %s)", (*error)->message,
                            ds->sel_data_path[k]);
    g_free((*error)->message);
    (*error)->message = m;
}

gboolean rt_dataset_reader_fill(rt_dataset_reader *r, int64_t item, rt_batch *batch, int64_t slot,
                                GError **error)
{
    const rt_dataset *ds = r->ds;
    g_return_val_if_fail(item >= 0 && item < rt_dataset_num_frames(ds), FALSE);
    g_return_val_if_fail(slot >= 0 && slot < batch->capacity, FALSE);
    int64_t k, frame;
    rt_dataset_locate(ds, item, &k, &frame);
    const rt_episode *ep = &ds->episodes[ds->selected[k]];
    int64_t base = ds->sel_start[k], length = ep->length;
    const rt_batch_layout *l = batch->layout;
    for (guint fi = 0; fi < l->fields->len; fi++) {
        const rt_batch_field *bf = &g_array_index(l->fields, rt_batch_field, fi);
        if (bf->is_pad)
            continue; /* written with its feature, just below */
        const rt_feature *f = rt_dataset_feature(ds, bf->feature);
        size_t t_n = ds->n_deltas[bf->feature];
        const int64_t *deltas = ds->deltas[bf->feature];
        size_t n = t_n ? t_n : 1;
        uint8_t *pad = NULL;
        if (t_n) {
            const rt_batch_field *pf = &g_array_index(l->fields, rt_batch_field, fi + 1);
            pad = (uint8_t *)batch->data + pf->offset + (size_t)slot * pf->sample_bytes;
        }
        for (size_t t = 0; t < n; t++) {
            int64_t q = frame + (t_n ? deltas[t] : 0);
            if (pad)
                pad[t] = q < 0 || q >= length;
            r->rows[t] = CLAMP(q, 0, length - 1);
        }
        char *dst = (char *)batch->data + bf->offset + (size_t)slot * bf->sample_bytes;
        if (f->kind == RT_FEATURE_NUMERIC) {
            size_t row_bytes = (size_t)f->numel * rt_dtype_size(f->storage);
            const char *col = ds->columns[bf->feature];
            for (size_t t = 0; t < n; t++)
                memcpy(dst + t * row_bytes, col + (size_t)(base + r->rows[t]) * row_bytes, row_bytes);
        } else if (f->kind == RT_FEATURE_VIDEO) {
            int cam = ds->feature_camera[bf->feature];
            const char *path = ds->sel_video_path[k * ds->n_cameras + cam];
            double from = ds->sel_video_from[k * ds->n_cameras + cam];
            const rt_feature *tsf = rt_dataset_feature(ds, ds->ts_feature);
            for (size_t t = 0; t < n; t++) {
                int64_t i = base + r->rows[t];
                double ts = tsf->storage == RT_F32 ? ((const float *)ds->columns[ds->ts_feature])[i]
                                                   : ((const double *)ds->columns[ds->ts_feature])[i];
                r->timestamps[t] = from + ts;
            }
            rt_video_decoder *dec = get_decoder(r, path, f, error);
            if (!dec ||
                !rt_video_decode_batch(dec, r->timestamps, n, ds->tolerance, (float *)(void *)dst, error)) {
                g_prefix_error(error, "episode %" G_GINT64_FORMAT " frame %" G_GINT64_FORMAT ", camera %s: ",
                               ep->episode_index, frame, f->name);
                if (error && *error && (*error)->code == RT_ERROR_INVALID_ARG)
                    explain_times(ds, k, from, error);
                return FALSE;
            }
        } else { /* IMAGE */
            size_t frame_floats = (size_t)f->channels * (size_t)f->height * (size_t)f->width;
            for (size_t t = 0; t < n; t++)
                if (!decode_image(r, ds->sel_data_path[k], ds->sel_data_row[k] + r->rows[t], f,
                                  (float *)(void *)dst + t * frame_floats, error)) {
                    g_prefix_error(error,
                                   "episode %" G_GINT64_FORMAT " frame %" G_GINT64_FORMAT ", camera %s: ",
                                   ep->episode_index, frame, f->name);
                    return FALSE;
                }
        }
    }
    int64_t task_index = ((const int64_t *)ds->columns[ds->task_feature])[item];
    batch->items[slot] = item;
    batch->tasks[slot] = g_hash_table_lookup(ds->task_by_index, &task_index);
    return TRUE;
}
