/* src/data/dataset-meta.h: the metadata files of a LeRobot dataset, parsed from bytes (so the
 * fuzz target and the tests can feed them directly). Private to src/data.
 *
 * Every parser treats its input as untrusted: files are read up to a size bound, JSON nesting
 * is checked before json-glib parses (json-glib 1.6 recurses without a limit and overflows the
 * stack on deeply nested input), every member is type-checked, and every error names the file
 * (and line, for JSON lines), the key and what was expected. */
#ifndef ROBOTRAIN_DATA_DATASET_META_H
#define ROBOTRAIN_DATA_DATASET_META_H

#include <json-glib/json-glib.h>

#include "data/dataset.h"

G_BEGIN_DECLS

/* Bounds. A metadata JSON file (info.json, stats.json, tasks.jsonl) is at most 64 MiB, a JSON
 * lines file of episodes at most 1 GiB with lines of at most 16 MiB, nesting at most 32 deep
 * (LeRobot's deepest is 5: stats of cameras). */
#define RT_META_MAX_JSON_BYTES ((gsize)64 << 20)
#define RT_META_MAX_JSONL_BYTES ((gsize)1 << 30)
#define RT_META_MAX_LINE_BYTES ((gsize)16 << 20)
#define RT_META_MAX_DEPTH 32
/* Numbers of things a file may declare: features, dimensions per feature, episodes, tasks. */
#define RT_META_MAX_FEATURES 4096
#define RT_META_MAX_NUMEL ((int64_t)1 << 31)
#define RT_META_MAX_EPISODES ((int64_t)1 << 24)

/* ---------------------------------------------------------------- bounded JSON (meta-json.c) */

/* Reads a whole file of at most max_bytes. Returns (transfer full) bytes to g_free, NUL
 * terminated (*length excludes the NUL), or NULL with RT_ERROR_NOT_FOUND / RT_ERROR_IO /
 * RT_ERROR_FORMAT (too large) naming the path. */
char *rt_meta_read_file(const char *path, gsize max_bytes, gsize *length, GError **error);

/* Fails (RT_ERROR_FORMAT) when arrays and objects nest deeper than RT_META_MAX_DEPTH outside
 * strings, naming `name`, the line and the limit. */
gboolean rt_meta_check_depth(const char *data, gsize length, const char *name, guint line, GError **error);

/* Checks the depth, then parses one JSON document whose root must be an object. `line` (0 for a
 * whole file) goes into messages. Returns (transfer full) the parser that owns the root. */
JsonParser *rt_meta_parse_object(const char *data, gsize length, const char *name, guint line,
                                 GError **error);

/* Calls `func` on each non-blank line of a JSON lines text, parsed as an object; stops at the
 * first error. Lines are numbered from 1. */
typedef gboolean (*rt_meta_line_func)(JsonObject *object, const char *name, guint line, gpointer user,
                                      GError **error);
gboolean rt_meta_foreach_line(const char *data, gsize length, const char *name, rt_meta_line_func func,
                              gpointer user, GError **error);

/* Typed members. `where` describes the object for messages ("features.action", "line 3"). A
 * missing member fails only when required (else the call returns TRUE leaving *out alone). */
gboolean rt_meta_get_int(JsonObject *o, const char *member, gboolean required, int64_t *out, const char *name,
                         const char *where, GError **error);
gboolean rt_meta_get_number(JsonObject *o, const char *member, gboolean required, double *out,
                            const char *name, const char *where, GError **error);
/* *out is borrowed from the parser's tree; NULL for a JSON null when not required. */
gboolean rt_meta_get_string(JsonObject *o, const char *member, gboolean required, const char **out,
                            const char *name, const char *where, GError **error);

/* ---------------------------------------------------------------- info.json (meta-info.c) */

typedef struct {
    char *version; /* "v3.0" */
    int version_major, version_minor;
    char *robot_type; /* or NULL */
    double fps;
    int64_t total_episodes, total_frames, total_tasks, chunks_size;
    char *data_path;       /* the template */
    char *video_path;      /* or NULL */
    GPtrArray *features;   /* rt_feature *, in the file's order */
    GStringChunk *strings; /* the features' strings */
} rt_meta_info;

/* Parses info.json. Supported: codebase_version v2.0, v2.1, v3.0. Returns (transfer full):
 * free with rt_meta_info_free(). */
rt_meta_info *rt_meta_info_parse(const char *data, gsize length, const char *name, GError **error);
void rt_meta_info_free(rt_meta_info *info);
/* Index of the feature called name, or -1. */
int rt_meta_info_find(const rt_meta_info *info, const char *name);

/* ---------------------------------------------------------------- stats (meta-stats.c) */

/* A list of rt_feature_stats whose arrays it owns. */
typedef struct {
    GPtrArray *items; /* rt_feature_stats *, freed with the list */
} rt_meta_stats;

rt_meta_stats *rt_meta_stats_new(void);
void rt_meta_stats_free(rt_meta_stats *stats);
/* The entry of feature, or NULL. */
rt_feature_stats *rt_meta_stats_find(const rt_meta_stats *stats, const char *feature);
/* Adds (or replaces) `stat` of feature with numel values; creates the entry. */
void rt_meta_stats_set(rt_meta_stats *stats, const char *feature, rt_stat stat, const double *values,
                       int64_t numel);

/* The number of values a feature's stats hold: channels for cameras, numel otherwise. */
int64_t rt_meta_stats_numel(const rt_feature *feature);

/* Parses a stats object (stats.json's root, or the "stats" member of an episodes_stats line):
 * feature -> {min, max, mean, std, count, q01 ...}, each a (nested) list of numbers. Entries
 * of features that `info` declares must have the feature's stat size; others are kept as they
 * are. Unknown stat names are ignored. */
rt_meta_stats *rt_meta_stats_from_object(JsonObject *root, const rt_meta_info *info, const char *name,
                                         const char *where, GError **error);
/* stats.json from bytes. */
rt_meta_stats *rt_meta_stats_parse(const char *data, gsize length, const rt_meta_info *info, const char *name,
                                   GError **error);

/* LeRobot's aggregate_stats over per-episode stats: for each feature present in any of them,
 * min and max element-wise, mean weighted by count, std from the pooled variance
 * sum(count_e x (std_e^2 + (mean_e - mean)^2)) / sum(count_e), count summed; quantiles (when
 * every episode has them) take the minimum over episodes up to q50 and the maximum above.
 * Fails when the episodes disagree on a feature's size or lack mean, std or count. */
rt_meta_stats *rt_meta_stats_aggregate(rt_meta_stats *const *episodes, size_t n, const char *name,
                                       GError **error);

/* meta/episodes_stats.jsonl: parses every line ({"episode_index": i, "stats": {...}}) and
 * aggregates them. */
rt_meta_stats *rt_meta_episodes_stats_parse(const char *data, gsize length, const rt_meta_info *info,
                                            const char *name, GError **error);

/* ---------------------------------------------------------------- JSON lines (meta-jsonl.c) */

/* One episode as the metadata lists it; v3 fills the file and video fields. */
typedef struct {
    int64_t episode_index;
    int64_t length;
    int64_t from_index, to_index; /* -1 when the file does not say (v2) */
    int64_t data_chunk, data_file;
    guint source; /* the file that lists it: rt_meta_episodes.sources[source] */
    char **tasks; /* NULL-terminated, owned */
    /* per camera (VIDEO features in feature order) */
    int64_t *video_chunk, *video_file;
    double *video_from, *video_to;
} rt_meta_episode;

typedef struct {
    GArray *episodes; /* rt_meta_episode, sorted by episode_index, unique */
    int n_cameras;
    GPtrArray *sources; /* char *: the files the episodes come from, for messages */
} rt_meta_episodes;

rt_meta_episodes *rt_meta_episodes_new(int n_cameras);
void rt_meta_episodes_free(rt_meta_episodes *eps);
/* The file that lists episode e (as its parser was given it). Returns (transfer none). */
const char *rt_meta_episode_source(const rt_meta_episodes *eps, const rt_meta_episode *e);

/* meta/episodes.jsonl (v2): {"episode_index": i, "tasks": [...], "length": n} per line. The
 * episodes must be unique; they are sorted by index, and from/to are the running sums of the
 * lengths in that order. */
rt_meta_episodes *rt_meta_episodes_jsonl_parse(const char *data, gsize length, int n_cameras,
                                               const char *name, GError **error);

typedef struct {
    GArray *task_index; /* int64_t, in file order, unique */
    GPtrArray *task;    /* char *, owned */
} rt_meta_tasks;

rt_meta_tasks *rt_meta_tasks_new(void);
void rt_meta_tasks_free(rt_meta_tasks *tasks);
/* meta/tasks.jsonl (v2): {"task_index": i, "task": "..."} per line. */
rt_meta_tasks *rt_meta_tasks_jsonl_parse(const char *data, gsize length, const char *name, GError **error);

/* ---------------------------------------------------------------- v3 tables (meta-parquet.c) */

struct rt_parquet_file;
/* Reads column `name` of rows [first, first + n) of f as int64 (INT32 or INT64 scalars, no
 * nulls) into out. Fails naming the file and column. */
gboolean rt_meta_read_int64_column(struct rt_parquet_file *f, const char *name, int64_t first, int64_t n,
                                   int64_t *out, GError **error);

/* meta/tasks.parquet: the task_index column and the table's single string column. */
rt_meta_tasks *rt_meta_tasks_parquet_read(const char *path, GError **error);
/* Every meta/episodes/chunk-NNN/file-NNN.parquet under root, in file order; cameras are the
 * VIDEO features of info. */
rt_meta_episodes *rt_meta_episodes_parquet_read(const char *root, const rt_meta_info *info, GError **error);

/* ---------------------------------------------------------------- paths (dataset-path.c) */

/* Expands a LeRobot path template ("data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"):
 * {name} and {name:0Nd} / {name:d} with the integer `ints[i]` of names[i], or {video_key} with
 * video_key. Fails (RT_ERROR_FORMAT) naming the template for an unknown field, a format
 * other than these, or an unbalanced brace. Returns (transfer full) a string to g_free. */
char *rt_dataset_expand_template(const char *template_, const char *const *names, const int64_t *ints,
                                 size_t n, const char *video_key, GError **error);

/* The file a template names below root. Fails (RT_ERROR_FORMAT) like the above (the message
 * then starts with root/meta/info.json), and when the result is absolute or has a ".."
 * component (a path outside the dataset).
 * Returns (transfer full) a string to g_free. */
char *rt_dataset_file_path(const char *root, const char *template_, const char *const *names,
                           const int64_t *ints, size_t n, const char *video_key, GError **error);

G_END_DECLS

#endif
