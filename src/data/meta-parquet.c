/* v3 metadata tables: meta/tasks.parquet and meta/episodes/chunk-NNN/file-NNN.parquet. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"
#include "data/parquet.h"

static int need_column(rt_parquet_file *f, const char *name, GError **error)
{
    int c = rt_parquet_file_find_column(f, name);
    if (c < 0)
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: no column \"%s\"; is this a LeRobot v3 table?",
                    rt_parquet_file_path(f), name);
    return c;
}

static gboolean no_nulls(rt_parquet_file *f, const rt_parquet_array *a, const char *name, GError **error)
{
    if (a->null_count == 0 && a->null_list_count == 0)
        return TRUE;
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: column \"%s\" has null values",
                rt_parquet_file_path(f), name);
    return FALSE;
}

gboolean rt_meta_read_int64_column(rt_parquet_file *f, const char *name, int64_t first, int64_t n,
                                   int64_t *out, GError **error)
{
    int c = need_column(f, name, error);
    if (c < 0)
        return FALSE;
    const rt_parquet_column *col = rt_parquet_file_column(f, c);
    if (col->shape != RT_PARQUET_SCALAR ||
        (col->physical != RT_PARQUET_INT64 && col->physical != RT_PARQUET_INT32)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: column \"%s\" is not an integer column",
                    rt_parquet_file_path(f), name);
        return FALSE;
    }
    rt_parquet_batch *b = rt_parquet_file_read(f, &c, 1, first, n, error);
    if (!b)
        return FALSE;
    gboolean ok = no_nulls(f, &b->arrays[0], name, error);
    for (int64_t i = 0; ok && i < n; i++)
        out[i] = col->physical == RT_PARQUET_INT64 ? ((const int64_t *)b->arrays[0].values)[i]
                                                   : ((const int32_t *)b->arrays[0].values)[i];
    rt_parquet_batch_free(b);
    return ok;
}

static gboolean read_double_column(rt_parquet_file *f, const char *name, int64_t n, double *out,
                                   GError **error)
{
    int c = need_column(f, name, error);
    if (c < 0)
        return FALSE;
    const rt_parquet_column *col = rt_parquet_file_column(f, c);
    if (col->shape != RT_PARQUET_SCALAR ||
        (col->physical != RT_PARQUET_DOUBLE && col->physical != RT_PARQUET_FLOAT)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: column \"%s\" is not a floating-point column",
                    rt_parquet_file_path(f), name);
        return FALSE;
    }
    rt_parquet_batch *b = rt_parquet_file_read(f, &c, 1, 0, n, error);
    if (!b)
        return FALSE;
    gboolean ok = no_nulls(f, &b->arrays[0], name, error);
    for (int64_t i = 0; ok && i < n; i++)
        out[i] = col->physical == RT_PARQUET_DOUBLE ? ((const double *)b->arrays[0].values)[i]
                                                    : ((const float *)b->arrays[0].values)[i];
    rt_parquet_batch_free(b);
    return ok;
}

static char *slot_string(const rt_parquet_array *a, int64_t i)
{
    return g_strndup((const char *)a->data + a->offsets[i], (gsize)(a->offsets[i + 1] - a->offsets[i]));
}

rt_meta_tasks *rt_meta_tasks_parquet_read(const char *path, GError **error)
{
    rt_parquet_file *f = rt_parquet_file_open(path, error);
    if (!f)
        return NULL;
    rt_meta_tasks *t = NULL;
    int64_t n = rt_parquet_file_num_rows(f);
    /* the task text is the one string column, whatever pandas named it ("task" or
     * "__index_level_0__") */
    int text = -1;
    for (int c = 0; c < rt_parquet_file_num_columns(f); c++) {
        const rt_parquet_column *col = rt_parquet_file_column(f, c);
        if (col->physical == RT_PARQUET_BYTE_ARRAY && col->shape == RT_PARQUET_SCALAR) {
            if (text >= 0) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                            "%s: more than one string column (%s, %s); which one holds the tasks?", path,
                            rt_parquet_file_column(f, text)->path, col->path);
                goto out;
            }
            text = c;
        }
    }
    if (text < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: no string column holds the tasks", path);
        goto out;
    }
    if (n > (1 << 20)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %" G_GINT64_FORMAT " tasks is more than supported",
                    path, n);
        goto out;
    }
    t = rt_meta_tasks_new();
    g_array_set_size(t->task_index, (guint)n);
    if (!rt_meta_read_int64_column(f, "task_index", 0, n, (int64_t *)(void *)t->task_index->data, error)) {
        g_clear_pointer(&t, rt_meta_tasks_free);
        goto out;
    }
    rt_parquet_batch *b = rt_parquet_file_read(f, &text, 1, 0, n, error);
    if (!b || !no_nulls(f, &b->arrays[0], rt_parquet_file_column(f, text)->path, error)) {
        rt_parquet_batch_free(b);
        g_clear_pointer(&t, rt_meta_tasks_free);
        goto out;
    }
    for (int64_t i = 0; i < n; i++)
        g_ptr_array_add(t->task, slot_string(&b->arrays[0], i));
    rt_parquet_batch_free(b);
    GHashTable *seen = g_hash_table_new(g_int64_hash, g_int64_equal);
    for (guint i = 0; t && i < t->task_index->len; i++) {
        int64_t *k = &g_array_index(t->task_index, int64_t, i);
        if (!g_hash_table_add(seen, k)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: task_index %" G_GINT64_FORMAT " is listed twice", path, *k);
            g_clear_pointer(&t, rt_meta_tasks_free);
        }
    }
    g_hash_table_destroy(seen);
out:
    rt_parquet_file_free(f);
    return t;
}

/* ---------------------------------------------------------------- episodes */

static gint compare_strings(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir that start with prefix and end with suffix. Returns (transfer full). */
static GPtrArray *list_dir(const char *dir, const char *prefix, const char *suffix, GError **error)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    if (!d) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s: no such folder; a v3.0 dataset lists its episodes "
                    "in meta/episodes/chunk-NNN/file-NNN.parquet",
                    dir);
        g_ptr_array_free(names, TRUE);
        return NULL;
    }
    const char *n;
    while ((n = g_dir_read_name(d)))
        if (g_str_has_prefix(n, prefix) && g_str_has_suffix(n, suffix))
            g_ptr_array_add(names, g_strdup(n));
    g_dir_close(d);
    g_ptr_array_sort(names, compare_strings);
    return names;
}

static gboolean read_episode_file(rt_meta_episodes *eps, const char *root, const char *path,
                                  const rt_meta_info *info, const int *cameras, GError **error)
{
    rt_parquet_file *f = rt_parquet_file_open(path, error);
    if (!f)
        return FALSE;
    int64_t n = rt_parquet_file_num_rows(f);
    gboolean ok = TRUE;
    if (n < 0 || (int64_t)eps->episodes->len + n > RT_META_MAX_EPISODES) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: too many episodes", path);
        rt_parquet_file_free(f);
        return FALSE;
    }
    guint base = eps->episodes->len;
    guint source = eps->sources->len;
    g_ptr_array_add(eps->sources, g_strdup(path));
    g_array_set_size(eps->episodes, base + (guint)n);
    int64_t *tmp = g_new0(int64_t, n ? n : 1);
    double *dtmp = g_new0(double, n ? n : 1);
#define EP(i) (&g_array_index(eps->episodes, rt_meta_episode, base + (guint)(i)))
    for (int64_t i = 0; i < n; i++) {
        EP(i)->tasks = NULL;
        EP(i)->source = source;
        if (eps->n_cameras > 0) {
            EP(i)->video_chunk = g_new0(int64_t, eps->n_cameras);
            EP(i)->video_file = g_new0(int64_t, eps->n_cameras);
            EP(i)->video_from = g_new0(double, eps->n_cameras);
            EP(i)->video_to = g_new0(double, eps->n_cameras);
        }
    }
    static const char *const int_cols[] = {"episode_index",    "length",           "dataset_from_index",
                                           "dataset_to_index", "data/chunk_index", "data/file_index"};
    for (size_t k = 0; ok && k < G_N_ELEMENTS(int_cols); k++) {
        ok = rt_meta_read_int64_column(f, int_cols[k], 0, n, tmp, error);
        for (int64_t i = 0; ok && i < n; i++) {
            rt_meta_episode *e = EP(i);
            int64_t *dst[] = {&e->episode_index, &e->length,     &e->from_index,
                              &e->to_index,      &e->data_chunk, &e->data_file};
            *dst[k] = tmp[i];
        }
    }
    for (int c = 0; ok && c < eps->n_cameras; c++) {
        const rt_feature *cam = g_ptr_array_index(info->features, cameras[c]);
        g_autofree char *chunk = g_strdup_printf("videos/%s/chunk_index", cam->name);
        g_autofree char *file = g_strdup_printf("videos/%s/file_index", cam->name);
        g_autofree char *from = g_strdup_printf("videos/%s/from_timestamp", cam->name);
        g_autofree char *to = g_strdup_printf("videos/%s/to_timestamp", cam->name);
        /* the camera's name comes from info.json: a table without its columns may as well
         * mean a damaged info.json, so the message names both */
        const char *const need[] = {chunk, file, from};
        for (size_t k = 0; ok && k < G_N_ELEMENTS(need); k++)
            if (rt_parquet_file_find_column(f, need[k]) < 0) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                            "%s: no column \"%s\" for the camera %s that %s/meta/info.json lists; is "
                            "this a LeRobot v3 table?",
                            path, need[k], cam->name, root);
                ok = FALSE;
            }
        ok = ok && rt_meta_read_int64_column(f, chunk, 0, n, tmp, error);
        for (int64_t i = 0; ok && i < n; i++)
            EP(i)->video_chunk[c] = tmp[i];
        ok = ok && rt_meta_read_int64_column(f, file, 0, n, tmp, error);
        for (int64_t i = 0; ok && i < n; i++)
            EP(i)->video_file[c] = tmp[i];
        ok = ok && read_double_column(f, from, n, dtmp, error);
        for (int64_t i = 0; ok && i < n; i++)
            EP(i)->video_from[c] = dtmp[i];
        if (ok && rt_parquet_file_find_column(f, to) >= 0) {
            ok = read_double_column(f, to, n, dtmp, error);
            for (int64_t i = 0; ok && i < n; i++)
                EP(i)->video_to[c] = dtmp[i];
        }
    }
    /* tasks: list<string>, optional */
    int tc = rt_parquet_file_find_column(f, "tasks");
    if (ok && tc >= 0) {
        const rt_parquet_column *col = rt_parquet_file_column(f, tc);
        if (col->shape != RT_PARQUET_LIST || col->physical != RT_PARQUET_BYTE_ARRAY) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: column \"tasks\" is not a list of strings",
                        path);
            ok = FALSE;
        } else {
            rt_parquet_batch *b = rt_parquet_file_read(f, &tc, 1, 0, n, error);
            ok = b && no_nulls(f, &b->arrays[0], "tasks", error);
            for (int64_t i = 0; ok && i < n; i++) {
                const rt_parquet_array *a = &b->arrays[0];
                int64_t s = a->list_offsets[i], e = a->list_offsets[i + 1];
                char **list = g_new0(char *, (gsize)(e - s) + 1);
                for (int64_t j = s; j < e; j++)
                    list[j - s] = slot_string(a, j);
                EP(i)->tasks = list;
            }
            rt_parquet_batch_free(b);
        }
    }
    for (int64_t i = 0; i < n; i++)
        if (!EP(i)->tasks)
            EP(i)->tasks = g_new0(char *, 1);
#undef EP
    g_free(tmp);
    g_free(dtmp);
    rt_parquet_file_free(f);
    return ok;
}

rt_meta_episodes *rt_meta_episodes_parquet_read(const char *root, const rt_meta_info *info, GError **error)
{
    int n_cameras = 0;
    int *cameras = g_new0(int, info->features->len + 1);
    for (guint i = 0; i < info->features->len; i++)
        if (((const rt_feature *)g_ptr_array_index(info->features, i))->kind == RT_FEATURE_VIDEO)
            cameras[n_cameras++] = (int)i;
    rt_meta_episodes *eps = rt_meta_episodes_new(n_cameras);
    g_autofree char *dir = g_build_filename(root, "meta", "episodes", NULL);
    GPtrArray *chunks = list_dir(dir, "chunk-", "", error);
    gboolean ok = chunks != NULL;
    for (guint c = 0; ok && c < chunks->len; c++) {
        g_autofree char *cdir = g_build_filename(dir, (const char *)g_ptr_array_index(chunks, c), NULL);
        GPtrArray *files = list_dir(cdir, "file-", ".parquet", error);
        ok = files != NULL;
        for (guint k = 0; ok && k < files->len; k++) {
            g_autofree char *path = g_build_filename(cdir, (const char *)g_ptr_array_index(files, k), NULL);
            ok = read_episode_file(eps, root, path, info, cameras, error);
        }
        if (files)
            g_ptr_array_free(files, TRUE);
    }
    if (chunks)
        g_ptr_array_free(chunks, TRUE);
    g_free(cameras);
    if (ok && eps->episodes->len == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND, "%s: no episode files (chunk-NNN/file-NNN.parquet)",
                    dir);
        ok = FALSE;
    }
    if (!ok) {
        rt_meta_episodes_free(eps);
        return NULL;
    }
    return eps;
}
