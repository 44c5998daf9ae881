/* libFuzzer target for the dataset metadata parsers (src/data/dataset-meta.h): the input is
 * given to each of them as info.json, stats.json (checked against a fixed info.json and, when
 * the input parses as one, against itself), episodes.jsonl, tasks.jsonl, episodes_stats.jsonl
 * and as a path template. Every call must return a value or an error, never crash, leak or
 * read out of bounds. Built and run by tests/fuzz/run-metadata-fuzz.sh, not by make. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "data/dataset-meta.h"

static const char fixed_info[] =
    "{\"codebase_version\": \"v2.1\", \"fps\": 10, \"total_episodes\": 2, \"total_frames\": 40,"
    " \"data_path\": \"data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet\","
    " \"video_path\": \"videos/{video_key}/{episode_index}.mp4\", \"features\": {"
    " \"observation.state\": {\"dtype\": \"float32\", \"shape\": [2]},"
    " \"action\": {\"dtype\": \"float32\", \"shape\": [2]},"
    " \"observation.images.cam\": {\"dtype\": \"video\", \"shape\": [96, 96, 3]},"
    " \"timestamp\": {\"dtype\": \"float32\", \"shape\": [1]},"
    " \"frame_index\": {\"dtype\": \"int64\", \"shape\": [1]},"
    " \"episode_index\": {\"dtype\": \"int64\", \"shape\": [1]},"
    " \"index\": {\"dtype\": \"int64\", \"shape\": [1]},"
    " \"task_index\": {\"dtype\": \"int64\", \"shape\": [1]}}}";

static rt_meta_info *info_of_fixed;

static void quiet_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer user)
{
    (void)domain, (void)level, (void)message, (void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!info_of_fixed) {
        g_log_set_default_handler(quiet_log, NULL);
        info_of_fixed = rt_meta_info_parse(fixed_info, strlen(fixed_info), "fixed", NULL);
        if (!info_of_fixed)
            __builtin_trap();
    }
    const char *text = (const char *)data;
    GError *error = NULL;

    rt_meta_info *info = rt_meta_info_parse(text, size, "info.json", &error);
    g_clear_error(&error);

    rt_meta_stats *st = rt_meta_stats_parse(text, size, info_of_fixed, "stats.json", &error);
    rt_meta_stats_free(st);
    g_clear_error(&error);
    if (info) {
        st = rt_meta_stats_parse(text, size, info, "stats.json", &error);
        rt_meta_stats_free(st);
        g_clear_error(&error);
    }

    rt_meta_episodes *eps = rt_meta_episodes_jsonl_parse(text, size, 2, "episodes.jsonl", &error);
    rt_meta_episodes_free(eps);
    g_clear_error(&error);

    rt_meta_tasks *tasks = rt_meta_tasks_jsonl_parse(text, size, "tasks.jsonl", &error);
    rt_meta_tasks_free(tasks);
    g_clear_error(&error);

    st =
        rt_meta_episodes_stats_parse(text, size, info ? info : info_of_fixed, "episodes_stats.jsonl", &error);
    rt_meta_stats_free(st);
    g_clear_error(&error);

    /* a template: the first line, as a C string */
    size_t n = 0;
    while (n < size && n < 4096 && data[n] != '\n' && data[n] != '\0')
        n++;
    char *tmpl = g_strndup(text, n);
    static const char *const names[] = {"chunk_index", "file_index"};
    static const int64_t ints[] = {7, INT64_MIN};
    char *path = rt_dataset_file_path("/root", tmpl, names, ints, 2, "observation.images.cam", &error);
    g_free(path);
    g_clear_error(&error);
    g_free(tmpl);

    rt_meta_info_free(info);
    return 0;
}
