/* The LeRobotDataset: metadata, the episode selection, frames in memory, delta indices. Items
 * and batches are in dataset-item.c. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"
#include "data/dataset-private.h"
#include "data/parquet.h"

const double rt_imagenet_mean[3] = {0.485, 0.456, 0.406};
const double rt_imagenet_std[3] = {0.229, 0.224, 0.225};

void rt_dataset_options_init(rt_dataset_options *options)
{
    memset(options, 0, sizeof *options);
    options->use_imagenet_stats = TRUE;
    options->tolerance_s = 1e-4;
    options->load_frames = TRUE;
}

void rt_dataset_free(rt_dataset *ds)
{
    if (!ds)
        return;
    g_free(ds->root);
    rt_meta_info_free(ds->info);
    rt_meta_episodes_free(ds->meta_eps);
    rt_meta_tasks_free(ds->tasks);
    g_free(ds->tasks_path);
    rt_meta_stats_free(ds->stats);
    if (ds->task_by_index)
        g_hash_table_destroy(ds->task_by_index);
    g_free(ds->episodes);
    g_free(ds->camera_feature);
    g_free(ds->feature_camera);
    g_free(ds->selected);
    g_free(ds->sel_start);
    if (ds->columns) {
        for (int i = 0; i < ds->n_features; i++)
            g_free(ds->columns[i]);
        g_free(ds->columns);
    }
    if (ds->sel_data_path) {
        for (int64_t k = 0; k < ds->n_selected; k++)
            g_free(ds->sel_data_path[k]);
        g_free(ds->sel_data_path);
    }
    g_free(ds->sel_data_row);
    if (ds->sel_video_path) {
        for (int64_t k = 0; k < ds->n_selected * ds->n_cameras; k++)
            g_free(ds->sel_video_path[k]);
        g_free(ds->sel_video_path);
    }
    g_free(ds->sel_video_from);
    if (ds->deltas) {
        for (int i = 0; i < ds->n_features; i++)
            g_free(ds->deltas[i]);
        g_free(ds->deltas);
    }
    g_free(ds->n_deltas);
    g_free(ds);
}

/* ---------------------------------------------------------------- accessors */

const char *rt_dataset_root(const rt_dataset *ds)
{
    return ds->root;
}
const char *rt_dataset_version(const rt_dataset *ds)
{
    return ds->info->version;
}
const char *rt_dataset_robot_type(const rt_dataset *ds)
{
    return ds->info->robot_type;
}
double rt_dataset_fps(const rt_dataset *ds)
{
    return ds->info->fps;
}
double rt_dataset_tolerance_s(const rt_dataset *ds)
{
    return ds->tolerance;
}
int64_t rt_dataset_total_frames(const rt_dataset *ds)
{
    return ds->info->total_frames;
}
int rt_dataset_num_features(const rt_dataset *ds)
{
    return ds->n_features;
}
const rt_feature *rt_dataset_feature(const rt_dataset *ds, int i)
{
    g_return_val_if_fail(i >= 0 && i < ds->n_features, NULL);
    return g_ptr_array_index(ds->info->features, i);
}
int rt_dataset_feature_index(const rt_dataset *ds, const char *name)
{
    return rt_meta_info_find(ds->info, name);
}
const rt_feature *rt_dataset_find_feature(const rt_dataset *ds, const char *name)
{
    int i = rt_meta_info_find(ds->info, name);
    return i < 0 ? NULL : rt_dataset_feature(ds, i);
}
int64_t rt_dataset_num_episodes(const rt_dataset *ds)
{
    return ds->n_episodes;
}
const rt_episode *rt_dataset_episode(const rt_dataset *ds, int64_t i)
{
    g_return_val_if_fail(i >= 0 && i < ds->n_episodes, NULL);
    return &ds->episodes[i];
}
int64_t rt_dataset_num_selected_episodes(const rt_dataset *ds)
{
    return ds->n_selected;
}
int64_t rt_dataset_selected_episode(const rt_dataset *ds, int64_t i)
{
    g_return_val_if_fail(i >= 0 && i < ds->n_selected, -1);
    return ds->selected[i];
}
int64_t rt_dataset_num_tasks(const rt_dataset *ds)
{
    return ds->tasks->task->len;
}
const char *rt_dataset_task(const rt_dataset *ds, int64_t i, int64_t *task_index)
{
    g_return_val_if_fail(i >= 0 && i < (int64_t)ds->tasks->task->len, NULL);
    if (task_index)
        *task_index = g_array_index(ds->tasks->task_index, int64_t, i);
    return g_ptr_array_index(ds->tasks->task, i);
}
const char *rt_dataset_task_by_index(const rt_dataset *ds, int64_t task_index)
{
    return g_hash_table_lookup(ds->task_by_index, &task_index);
}
const rt_feature_stats *rt_dataset_stats(const rt_dataset *ds, const char *feature)
{
    return rt_meta_stats_find(ds->stats, feature);
}
int rt_dataset_num_stats(const rt_dataset *ds)
{
    return (int)ds->stats->items->len;
}
const rt_feature_stats *rt_dataset_stats_at(const rt_dataset *ds, int i)
{
    g_return_val_if_fail(i >= 0 && i < (int)ds->stats->items->len, NULL);
    return g_ptr_array_index(ds->stats->items, i);
}
int64_t rt_dataset_num_frames(const rt_dataset *ds)
{
    return ds->loaded ? ds->sel_start[ds->n_selected] : 0;
}

void rt_dataset_locate(const rt_dataset *ds, int64_t item, int64_t *selected_episode, int64_t *frame)
{
    /* the last selected episode whose first item is <= item */
    int64_t lo = 0, hi = ds->n_selected - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (ds->sel_start[mid] <= item)
            lo = mid;
        else
            hi = mid - 1;
    }
    *selected_episode = lo;
    *frame = item - ds->sel_start[lo];
}

const void *rt_dataset_frame_values(const rt_dataset *ds, int feature, int64_t item)
{
    g_return_val_if_fail(feature >= 0 && feature < ds->n_features, NULL);
    g_return_val_if_fail(item >= 0 && item < rt_dataset_num_frames(ds), NULL);
    const rt_feature *f = rt_dataset_feature(ds, feature);
    if (f->kind != RT_FEATURE_NUMERIC)
        return NULL;
    return (const char *)ds->columns[feature] + (size_t)item * (size_t)f->numel * rt_dtype_size(f->storage);
}

/* ---------------------------------------------------------------- delta indices */

gboolean rt_dataset_set_delta_indices(rt_dataset *ds, const char *key, const int64_t *deltas, size_t n,
                                      GError **error)
{
    int i = rt_meta_info_find(ds->info, key);
    if (i < 0 || rt_dataset_feature(ds, i)->kind == RT_FEATURE_STRING) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s: delta indices were requested for \"%s\", which is %s of the dataset", ds->root, key,
                    i < 0 ? "no feature" : "a text feature");
        return FALSE;
    }
    if (n > RT_DATASET_MAX_DELTAS) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%zu delta indices for \"%s\" are more than %d", n,
                    key, RT_DATASET_MAX_DELTAS);
        return FALSE;
    }
    for (size_t k = 0; k < n; k++)
        if (deltas[k] < -(INT64_C(1) << 40) || deltas[k] > (INT64_C(1) << 40)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "delta index %" G_GINT64_FORMAT " for \"%s\" is out of range", deltas[k], key);
            return FALSE;
        }
    g_free(ds->deltas[i]);
    ds->deltas[i] = n ? g_memdup2(deltas, n * sizeof *deltas) : NULL;
    ds->n_deltas[i] = n;
    return TRUE;
}

gboolean rt_dataset_set_delta_timestamps(rt_dataset *ds, const char *key, const double *seconds, size_t n,
                                         GError **error)
{
    if (n > RT_DATASET_MAX_DELTAS)
        return rt_dataset_set_delta_indices(ds, key, NULL, n, error);
    int64_t *deltas = g_new0(int64_t, n ? n : 1);
    double fps = ds->info->fps;
    for (size_t k = 0; k < n; k++) {
        double frames = seconds[k] * fps;
        /* LeRobot's check_delta_timestamps: |d * fps - round(d * fps)| / fps <= tolerance_s */
        if (!isfinite(frames) || fabs(frames - round(frames)) / fps > ds->tolerance || fabs(frames) > 1e12) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "delta timestamp %g s for \"%s\" is not a multiple of 1/fps = %g s within the tolerance "
                "%g s",
                seconds[k], key, 1.0 / fps, ds->tolerance);
            g_free(deltas);
            return FALSE;
        }
        deltas[k] = (int64_t)round(frames);
    }
    gboolean ok = rt_dataset_set_delta_indices(ds, key, deltas, n, error);
    g_free(deltas);
    return ok;
}

gboolean rt_dataset_set_action_chunk(rt_dataset *ds, int64_t chunk_size, GError **error)
{
    if (chunk_size < 1 || chunk_size > RT_DATASET_MAX_DELTAS) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "chunk_size %" G_GINT64_FORMAT " must be 1 to %d",
                    chunk_size, RT_DATASET_MAX_DELTAS);
        return FALSE;
    }
    int64_t *d = g_new(int64_t, chunk_size);
    for (int64_t k = 0; k < chunk_size; k++)
        d[k] = k;
    gboolean ok = rt_dataset_set_delta_indices(ds, "action", d, (size_t)chunk_size, error);
    g_free(d);
    return ok;
}

/* ---------------------------------------------------------------- opening */

static gboolean load_tasks(rt_dataset *ds, GError **error)
{
    g_autofree char *pq = g_build_filename(ds->root, "meta", "tasks.parquet", NULL);
    g_autofree char *jl = g_build_filename(ds->root, "meta", "tasks.jsonl", NULL);
    if (ds->info->version_major >= 3 ||
        (g_file_test(pq, G_FILE_TEST_EXISTS) && !g_file_test(jl, G_FILE_TEST_EXISTS))) {
        ds->tasks = rt_meta_tasks_parquet_read(pq, error);
        ds->tasks_path = g_steal_pointer(&pq);
    } else {
        ds->tasks_path = g_strdup(jl);
        gsize len = 0;
        g_autofree char *data = rt_meta_read_file(jl, RT_META_MAX_JSON_BYTES, &len, error);
        if (data)
            ds->tasks = rt_meta_tasks_jsonl_parse(data, len, jl, error);
    }
    if (!ds->tasks)
        return FALSE;
    ds->task_by_index = g_hash_table_new(g_int64_hash, g_int64_equal);
    for (guint i = 0; i < ds->tasks->task->len; i++)
        g_hash_table_insert(ds->task_by_index, &g_array_index(ds->tasks->task_index, int64_t, i),
                            g_ptr_array_index(ds->tasks->task, i));
    return TRUE;
}

static gboolean load_episodes(rt_dataset *ds, GError **error)
{
    if (ds->info->version_major >= 3) {
        ds->meta_eps = rt_meta_episodes_parquet_read(ds->root, ds->info, error);
    } else {
        g_autofree char *jl = g_build_filename(ds->root, "meta", "episodes.jsonl", NULL);
        gsize len = 0;
        g_autofree char *data = rt_meta_read_file(jl, RT_META_MAX_JSONL_BYTES, &len, error);
        if (data)
            ds->meta_eps = rt_meta_episodes_jsonl_parse(data, len, ds->n_cameras, jl, error);
    }
    if (!ds->meta_eps)
        return FALSE;
    GArray *a = ds->meta_eps->episodes;
    /* A lost file of meta/episodes/ (or lines of episodes.jsonl) would otherwise drop its
     * episodes without a word: the table must list what info.json counts. */
    if ((int64_t)a->len != ds->info->total_episodes) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s/meta: the episodes table lists %u episodes but info.json has total_episodes=%" G_GINT64_FORMAT
                    "; a file of %s is missing or damaged: download the dataset again",
                    ds->root, a->len, ds->info->total_episodes,
                    ds->info->version_major >= 3 ? "meta/episodes/" : "meta/episodes.jsonl");
        return FALSE;
    }
    ds->n_episodes = a->len;
    ds->episodes = g_new0(rt_episode, a->len ? a->len : 1);
    for (guint i = 0; i < a->len; i++) {
        rt_meta_episode *m = &g_array_index(a, rt_meta_episode, i);
        const char *source = rt_meta_episode_source(ds->meta_eps, m);
        if (i > 0 && m->episode_index <= m[-1].episode_index) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: episode %" G_GINT64_FORMAT " follows episode %" G_GINT64_FORMAT
                        "%s%s; episodes must be listed once, in order",
                        source, m->episode_index, m[-1].episode_index,
                        m[-1].source != m->source ? " of " : "",
                        m[-1].source != m->source ? rt_meta_episode_source(ds->meta_eps, &m[-1]) : "");
            return FALSE;
        }
        if (m->length < 0 || m->from_index < 0 || m->to_index - m->from_index != m->length) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: episode %" G_GINT64_FORMAT " has length %" G_GINT64_FORMAT
                        " but index range [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
                        source, m->episode_index, m->length, m->from_index, m->to_index);
            return FALSE;
        }
        rt_episode *e = &ds->episodes[i];
        e->episode_index = m->episode_index;
        e->length = m->length;
        e->from_index = m->from_index;
        e->to_index = m->to_index;
        if (ds->info->version_major >= 3) {
            e->data_chunk = m->data_chunk;
            e->data_file = m->data_file;
        } else {
            e->data_chunk = m->episode_index / ds->info->chunks_size;
            e->data_file = m->episode_index;
        }
        e->tasks = (const char *const *)m->tasks;
    }
    return TRUE;
}

static void put_imagenet_stats(rt_dataset *ds)
{
    for (int i = 0; i < ds->n_features; i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        if ((f->kind == RT_FEATURE_VIDEO || f->kind == RT_FEATURE_IMAGE) && !f->is_depth_map) {
            rt_meta_stats_set(ds->stats, f->name, RT_STAT_MEAN, rt_imagenet_mean, 3);
            rt_meta_stats_set(ds->stats, f->name, RT_STAT_STD, rt_imagenet_std, 3);
        }
    }
}

static gboolean load_stats(rt_dataset *ds, gboolean use_imagenet, GError **error)
{
    g_autofree char *stats_json = g_build_filename(ds->root, "meta", "stats.json", NULL);
    g_autofree char *eps_jsonl = g_build_filename(ds->root, "meta", "episodes_stats.jsonl", NULL);
    gboolean v21 = ds->info->version_major == 2 && ds->info->version_minor >= 1;
    gsize len = 0;
    if (v21 && g_file_test(eps_jsonl, G_FILE_TEST_EXISTS)) {
        g_autofree char *data = rt_meta_read_file(eps_jsonl, RT_META_MAX_JSONL_BYTES, &len, error);
        if (!data)
            return FALSE;
        ds->stats = rt_meta_episodes_stats_parse(data, len, ds->info, eps_jsonl, error);
    } else if (g_file_test(stats_json, G_FILE_TEST_EXISTS)) {
        g_autofree char *data = rt_meta_read_file(stats_json, RT_META_MAX_JSON_BYTES, &len, error);
        if (!data)
            return FALSE;
        ds->stats = rt_meta_stats_parse(data, len, ds->info, stats_json, error);
    } else {
        ds->stats = rt_meta_stats_new(); /* no stats: normalization will say what is missing */
    }
    if (!ds->stats)
        return FALSE;
    if (use_imagenet)
        put_imagenet_stats(ds);
    return TRUE;
}

static gint compare_int64(gconstpointer a, gconstpointer b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static gboolean select_episodes(rt_dataset *ds, const rt_dataset_options *opt, GError **error)
{
    if (!opt->episodes) {
        ds->n_selected = ds->n_episodes;
        ds->selected = g_new(int64_t, ds->n_episodes ? ds->n_episodes : 1);
        for (int64_t i = 0; i < ds->n_episodes; i++)
            ds->selected[i] = i;
        return TRUE;
    }
    int64_t *want = g_new(int64_t, opt->n_episodes ? opt->n_episodes : 1);
    memcpy(want, opt->episodes, opt->n_episodes * sizeof *want);
    qsort(want, opt->n_episodes, sizeof *want, compare_int64);
    ds->selected = g_new(int64_t, opt->n_episodes ? opt->n_episodes : 1);
    ds->n_selected = 0;
    for (size_t k = 0; k < opt->n_episodes; k++) {
        if (k > 0 && want[k] == want[k - 1])
            continue;
        /* binary search: episodes are sorted by episode_index */
        int64_t lo = 0, hi = ds->n_episodes - 1, at = -1;
        while (lo <= hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (ds->episodes[mid].episode_index == want[k]) {
                at = mid;
                break;
            }
            if (ds->episodes[mid].episode_index < want[k])
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        if (at < 0) {
            /* the table's name too: a damaged one can lose episodes */
            g_autofree char *table = ds->info->version_major >= 3
                                         ? g_build_filename(ds->root, "meta", "episodes", NULL)
                                         : g_build_filename(ds->root, "meta", "episodes.jsonl", NULL);
            if (ds->n_episodes > 0)
                g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                            "episode %" G_GINT64_FORMAT " is not in the dataset %s: its %" G_GINT64_FORMAT
                            " episodes are numbered %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT " (in %s)",
                            want[k], ds->root, ds->n_episodes, ds->episodes[0].episode_index,
                            ds->episodes[ds->n_episodes - 1].episode_index, table);
            else
                g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                            "episode %" G_GINT64_FORMAT
                            " is not in the dataset %s: it has no episodes (in %s)",
                            want[k], ds->root, table);
            g_free(want);
            return FALSE;
        }
        ds->selected[ds->n_selected++] = at;
    }
    g_free(want);
    return TRUE;
}

const char *rt_dataset_episode_source(const rt_dataset *ds, int64_t k)
{
    const rt_meta_episode *m = &g_array_index(ds->meta_eps->episodes, rt_meta_episode, ds->selected[k]);
    return rt_meta_episode_source(ds->meta_eps, m);
}

char *rt_dataset_path_origin(const rt_dataset *ds, int64_t k, const char *kind)
{
    if (ds->info->version_major >= 3)
        return g_strdup_printf("by the %s_path of %s/meta/info.json and the %s chunk and file index of %s",
                               kind, ds->root, kind, rt_dataset_episode_source(ds, k));
    return g_strdup_printf("by the %s_path and chunks_size of %s/meta/info.json", kind, ds->root);
}

/* The video file of selected episode k and camera c, and where the episode starts in it. */
static gboolean locate_videos(rt_dataset *ds, GError **error)
{
    ds->sel_video_path = g_new0(char *, ds->n_selected * ds->n_cameras + 1);
    ds->sel_video_from = g_new0(double, ds->n_selected * ds->n_cameras + 1);
    for (int64_t k = 0; k < ds->n_selected; k++) {
        const rt_episode *e = &ds->episodes[ds->selected[k]];
        const rt_meta_episode *m = &g_array_index(ds->meta_eps->episodes, rt_meta_episode, ds->selected[k]);
        for (int c = 0; c < ds->n_cameras; c++) {
            const rt_feature *cam = rt_dataset_feature(ds, ds->camera_feature[c]);
            char *path;
            if (ds->info->version_major >= 3) {
                static const char *const names[] = {"chunk_index", "file_index"};
                int64_t ints[] = {m->video_chunk[c], m->video_file[c]};
                path = rt_dataset_file_path(ds->root, ds->info->video_path, names, ints, 2, cam->name, error);
                ds->sel_video_from[k * ds->n_cameras + c] = m->video_from[c];
            } else {
                static const char *const names[] = {"episode_chunk", "episode_index"};
                int64_t ints[] = {e->data_chunk, e->episode_index};
                path = rt_dataset_file_path(ds->root, ds->info->video_path, names, ints, 2, cam->name, error);
            }
            if (!path)
                return FALSE;
            ds->sel_video_path[k * ds->n_cameras + c] = path;
            if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
                g_autofree char *origin = rt_dataset_path_origin(ds, k, "video");
                g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                            "%s: no such file (camera %s of episode %" G_GINT64_FORMAT
                            "); download the dataset's "
                            "videos, or select the episodes you have with --dataset.episodes (the path "
                            "is %s)",
                            path, cam->name, e->episode_index, origin);
                return FALSE;
            }
        }
    }
    return TRUE;
}

rt_dataset *rt_dataset_open(const char *root, const rt_dataset_options *options, GError **error)
{
    rt_dataset_options defaults;
    if (!options) {
        rt_dataset_options_init(&defaults);
        options = &defaults;
    }
    if (!g_file_test(root, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s: no such folder; give the root of a LeRobot dataset "
                    "(the folder holding meta/info.json)",
                    root);
        return NULL;
    }
    rt_dataset *ds = g_new0(rt_dataset, 1);
    ds->root = g_strdup(root);
    ds->tolerance = options->tolerance_s > 0 ? options->tolerance_s : 1e-4;
    g_autofree char *info_path = g_build_filename(root, "meta", "info.json", NULL);
    gsize len = 0;
    char *data = rt_meta_read_file(info_path, RT_META_MAX_JSON_BYTES, &len, error);
    if (!data)
        goto fail;
    ds->info = rt_meta_info_parse(data, len, info_path, error);
    g_free(data);
    if (!ds->info)
        goto fail;
    ds->n_features = (int)ds->info->features->len;
    ds->camera_feature = g_new0(int, ds->n_features);
    ds->feature_camera = g_new0(int, ds->n_features);
    for (int i = 0; i < ds->n_features; i++) {
        ds->feature_camera[i] = -1;
        if (rt_dataset_feature(ds, i)->kind == RT_FEATURE_VIDEO) {
            ds->feature_camera[i] = ds->n_cameras;
            ds->camera_feature[ds->n_cameras++] = i;
        }
    }
    ds->deltas = g_new0(int64_t *, ds->n_features);
    ds->n_deltas = g_new0(size_t, ds->n_features);
    ds->ts_feature = rt_meta_info_find(ds->info, "timestamp");
    ds->task_feature = rt_meta_info_find(ds->info, "task_index");
    if (!load_tasks(ds, error) || !load_episodes(ds, error) ||
        !load_stats(ds, options->use_imagenet_stats, error))
        goto fail;
    if (!select_episodes(ds, options, error))
        goto fail;
    if (options->load_frames) {
        if (!locate_videos(ds, error) || !rt_dataset_load_frames(ds, error))
            goto fail;
        ds->loaded = TRUE;
    }
    return ds;
fail:
    rt_dataset_free(ds);
    return NULL;
}
