/* v2 metadata in JSON lines: meta/episodes.jsonl and meta/tasks.jsonl. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"

static void episode_clear(gpointer p)
{
    rt_meta_episode *e = p;
    g_strfreev(e->tasks);
    g_free(e->video_chunk);
    g_free(e->video_file);
    g_free(e->video_from);
    g_free(e->video_to);
}

rt_meta_episodes *rt_meta_episodes_new(int n_cameras)
{
    rt_meta_episodes *eps = g_new0(rt_meta_episodes, 1);
    eps->episodes = g_array_new(FALSE, TRUE, sizeof(rt_meta_episode));
    g_array_set_clear_func(eps->episodes, episode_clear);
    eps->n_cameras = n_cameras;
    eps->sources = g_ptr_array_new_with_free_func(g_free);
    return eps;
}

const char *rt_meta_episode_source(const rt_meta_episodes *eps, const rt_meta_episode *e)
{
    return e->source < eps->sources->len ? g_ptr_array_index(eps->sources, e->source) : "the episodes table";
}

void rt_meta_episodes_free(rt_meta_episodes *eps)
{
    if (!eps)
        return;
    g_array_free(eps->episodes, TRUE);
    g_ptr_array_free(eps->sources, TRUE);
    g_free(eps);
}

static gint compare_episodes(gconstpointer a, gconstpointer b)
{
    int64_t x = ((const rt_meta_episode *)a)->episode_index, y = ((const rt_meta_episode *)b)->episode_index;
    return x < y ? -1 : x > y;
}

/* A list of strings, or NULL with an error. */
static char **string_list(JsonObject *o, const char *key, const char *name, guint line, GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (!n) {
        return g_new0(char *, 1);
    }
    if (!JSON_NODE_HOLDS_ARRAY(n)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s line %u: \"%s\" must be a list of strings", name,
                    line, key);
        return NULL;
    }
    JsonArray *a = json_node_get_array(n);
    guint len = json_array_get_length(a);
    char **out = g_new0(char *, len + 1);
    for (guint i = 0; i < len; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s line %u: \"%s\" item %u is not a string", name,
                        line, key, i);
            g_strfreev(out);
            return NULL;
        }
        out[i] = g_strdup(json_node_get_string(e));
    }
    return out;
}

static gboolean episodes_line(JsonObject *o, const char *name, guint line, gpointer user, GError **error)
{
    rt_meta_episodes *eps = user;
    g_autofree char *where = g_strdup_printf("line %u", line);
    rt_meta_episode e = {0};
    if (!rt_meta_get_int(o, "episode_index", TRUE, &e.episode_index, name, where, error) ||
        !rt_meta_get_int(o, "length", TRUE, &e.length, name, where, error))
        return FALSE;
    if (e.episode_index < 0 || e.episode_index >= RT_META_MAX_EPISODES || e.length < 0 ||
        e.length > ((int64_t)1 << 40)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s line %u: episode_index %" G_GINT64_FORMAT " or length %" G_GINT64_FORMAT
                    " is out of range",
                    name, line, e.episode_index, e.length);
        return FALSE;
    }
    if (eps->episodes->len >= RT_META_MAX_EPISODES) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: more than %" G_GINT64_FORMAT " episodes", name,
                    RT_META_MAX_EPISODES);
        return FALSE;
    }
    e.tasks = string_list(o, "tasks", name, line, error);
    if (!e.tasks)
        return FALSE;
    e.from_index = e.to_index = -1;
    if (eps->n_cameras > 0) {
        e.video_chunk = g_new0(int64_t, eps->n_cameras);
        e.video_file = g_new0(int64_t, eps->n_cameras);
        e.video_from = g_new0(double, eps->n_cameras);
        e.video_to = g_new0(double, eps->n_cameras);
    }
    g_array_append_val(eps->episodes, e);
    return TRUE;
}

rt_meta_episodes *rt_meta_episodes_jsonl_parse(const char *data, gsize length, int n_cameras,
                                               const char *name, GError **error)
{
    rt_meta_episodes *eps = rt_meta_episodes_new(n_cameras);
    g_ptr_array_add(eps->sources, g_strdup(name)); /* source 0 of every episode */
    if (!rt_meta_foreach_line(data, length, name, episodes_line, eps, error)) {
        rt_meta_episodes_free(eps);
        return NULL;
    }
    g_array_sort(eps->episodes, compare_episodes);
    int64_t at = 0;
    for (guint i = 0; i < eps->episodes->len; i++) {
        rt_meta_episode *e = &g_array_index(eps->episodes, rt_meta_episode, i);
        if (i > 0 && e[-1].episode_index == e->episode_index) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: episode %" G_GINT64_FORMAT " is listed twice",
                        name, e->episode_index);
            rt_meta_episodes_free(eps);
            return NULL;
        }
        /* v2 has no index ranges: LeRobot sums the lengths in episode order */
        e->from_index = at;
        at += e->length;
        e->to_index = at;
    }
    return eps;
}

/* ---------------------------------------------------------------- tasks */

rt_meta_tasks *rt_meta_tasks_new(void)
{
    rt_meta_tasks *t = g_new0(rt_meta_tasks, 1);
    t->task_index = g_array_new(FALSE, FALSE, sizeof(int64_t));
    t->task = g_ptr_array_new_with_free_func(g_free);
    return t;
}

void rt_meta_tasks_free(rt_meta_tasks *tasks)
{
    if (!tasks)
        return;
    g_array_free(tasks->task_index, TRUE);
    g_ptr_array_free(tasks->task, TRUE);
    g_free(tasks);
}

typedef struct {
    rt_meta_tasks *tasks;
    GHashTable *seen; /* task_index */
} tasks_parse;

static gboolean tasks_line(JsonObject *o, const char *name, guint line, gpointer user, GError **error)
{
    tasks_parse *p = user;
    rt_meta_tasks *t = p->tasks;
    g_autofree char *where = g_strdup_printf("line %u", line);
    int64_t index = -1;
    const char *task = NULL;
    if (!rt_meta_get_int(o, "task_index", TRUE, &index, name, where, error) ||
        !rt_meta_get_string(o, "task", TRUE, &task, name, where, error))
        return FALSE;
    if (g_hash_table_contains(p->seen, &index)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s line %u: task_index %" G_GINT64_FORMAT " is listed twice", name, line, index);
        return FALSE;
    }
    if (t->task_index->len >= 1u << 20) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: more than %u tasks", name, 1u << 20);
        return FALSE;
    }
    g_array_append_val(t->task_index, index);
    g_ptr_array_add(t->task, g_strdup(task));
    g_hash_table_add(p->seen, g_memdup2(&index, sizeof index));
    return TRUE;
}

rt_meta_tasks *rt_meta_tasks_jsonl_parse(const char *data, gsize length, const char *name, GError **error)
{
    tasks_parse p = {rt_meta_tasks_new(), g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL)};
    gboolean ok = rt_meta_foreach_line(data, length, name, tasks_line, &p, error);
    g_hash_table_destroy(p.seen);
    if (!ok) {
        rt_meta_tasks_free(p.tasks);
        return NULL;
    }
    return p.tasks;
}
