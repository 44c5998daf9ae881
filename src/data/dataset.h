/* src/data/dataset.h: a LeRobotDataset (v3.0, v2.1 and v2.0) read from a local folder.
 *
 * What it does (facts in ../shared/spec/dataset.md; LeRobot's behaviour in lerobot.md §3):
 *
 *  - Metadata: meta/info.json (version, fps, features, path templates), tasks
 *    (meta/tasks.parquet, or meta/tasks.jsonl), episodes (meta/episodes/chunk-NNN/file-NNN.parquet,
 *    or meta/episodes.jsonl), stats (meta/stats.json, or for v2.1 the aggregate of
 *    meta/episodes_stats.jsonl computed the way LeRobot's aggregate_stats does). JSON files are
 *    untrusted: sizes are bounded and nesting is checked before json-glib sees them.
 *
 *  - Frames: the numeric columns of the selected episodes (rt_dataset_options.episodes) are read
 *    from the data Parquet files into memory when the dataset opens, and checked (episode_index,
 *    frame_index, contiguous index, timestamps 1/fps apart within the tolerance). Camera frames
 *    are decoded on demand, by an rt_dataset_reader: videos through src/data/video.h at
 *    from_timestamp + timestamp, inline images (dtype "image") through src/data/png-decode.h.
 *
 *  - Items: dataset item i (0 .. num_frames - 1, over the selected episodes in file order) is
 *    frame i's value of every feature (strings excepted), with temporal windows where delta
 *    indices were requested (rt_dataset_set_delta_indices(); ACT asks for action 0..chunk-1):
 *    offset k reads frame clamp(f + k, 0, length - 1) of the same episode and sets
 *    <key>_is_pad[k] when f + k falls outside. Items are written into a preallocated rt_batch
 *    (one block of memory, one field per key), so filling a batch allocates nothing.
 *
 * Threads: an rt_dataset is read-only once rt_dataset_set_delta_indices() calls are done and a
 * layout was made; many rt_dataset_readers (one per thread) can then fill items in parallel. */
#ifndef ROBOTRAIN_DATA_DATASET_H
#define ROBOTRAIN_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include <robotrain/tensor.h>

G_BEGIN_DECLS

typedef struct rt_dataset rt_dataset;

/* ImageNet statistics LeRobot puts in place of every camera's mean and std when
 * use_imagenet_stats is true (its default). */
extern const double rt_imagenet_mean[3];
extern const double rt_imagenet_std[3];

/* How a feature is stored. */
typedef enum {
    RT_FEATURE_NUMERIC, /* a column of the data Parquet files: float32, int64, bool, ... */
    RT_FEATURE_VIDEO,   /* frames in mp4 files (dtype "video") */
    RT_FEATURE_IMAGE,   /* PNG bytes inline in the data files (dtype "image") */
    RT_FEATURE_STRING,  /* text (dtype "string" or "language"): listed, never loaded */
} rt_feature_kind;

/* What LeRobot's dataset_to_policy_features makes of a feature: cameras are VISUAL, the key
 * observation.environment_state is ENV, other observation.* keys STATE, action* keys ACTION;
 * everything else (timestamp, index, next.reward, ...) is no policy feature. */
typedef enum {
    RT_FEATURE_TYPE_NONE,
    RT_FEATURE_TYPE_VISUAL,
    RT_FEATURE_TYPE_STATE,
    RT_FEATURE_TYPE_ACTION,
    RT_FEATURE_TYPE_ENV,
} rt_dataset_feature_type;

/* Items and batches hold values as the core's rt_dtype (robotrain/tensor.h): RT_F32 for float32
 * features and camera frames (float in [0, 1]), RT_F64 for float64, RT_I64 for every integer
 * dtype (int8 .. int64, uint8 .. uint32), RT_BOOL (one byte, 0 or 1) for bool features and
 * <key>_is_pad; so a batch field can be handed to an rt_input of the same dtype as it is. */

#define RT_FEATURE_MAX_DIMS 5

/* One entry of info.json's "features". Owned by the dataset. */
typedef struct {
    const char *name;  /* "observation.state" */
    const char *dtype; /* as info.json writes it: "float32", "video", ... */
    rt_feature_kind kind;
    rt_dataset_feature_type type;
    rt_dtype storage; /* how values are held in items (NUMERIC); F32 for cameras */
    int ndim;         /* info.json's shape */
    int64_t shape[RT_FEATURE_MAX_DIMS];
    int64_t numel; /* values per frame: product of shape (cameras: channels x height x width) */
    /* cameras (VIDEO, IMAGE): the frame an item holds, channel-major */
    int channels, height, width;
    /* VIDEO: info.json's "info" ("video.codec", ...), NULL where absent */
    const char *video_codec;
    const char *video_pix_fmt;
    double video_fps;
    gboolean is_depth_map;
} rt_feature;

/* One episode of the dataset (all of them are listed, selected or not). Owned by the dataset. */
typedef struct {
    int64_t episode_index;
    int64_t length;                /* frames */
    int64_t from_index, to_index;  /* global frame index range [from, to) */
    int64_t data_chunk, data_file; /* v3: where its rows are (v2: chunk = index / chunks_size) */
    const char *const *tasks;      /* NULL-terminated task strings */
} rt_episode;

/* Statistics of one feature from stats.json (or aggregated). Each present stat holds `numel`
 * doubles: a feature's numel for vectors, its channels for cameras (LeRobot's (3,1,1)).
 * A stat that the file lacks is NULL. Owned by the dataset. */
typedef enum {
    RT_STAT_MIN,
    RT_STAT_MAX,
    RT_STAT_MEAN,
    RT_STAT_STD,
    RT_STAT_Q01,
    RT_STAT_Q10,
    RT_STAT_Q50,
    RT_STAT_Q90,
    RT_STAT_Q99,
    RT_STAT_COUNT_, /* number of stats above */
} rt_stat;

typedef struct {
    const char *feature;
    int64_t numel;
    int64_t count; /* frames (cameras: sampled frames) the stats were computed from; -1 if absent */
    const double *values[RT_STAT_COUNT_];
} rt_feature_stats;

/* "min", "max", "mean", "std", "q01", ... Returns (transfer none). */
const char *rt_stat_name(rt_stat stat);

/* Options of rt_dataset_open(). Start from rt_dataset_options_init(). */
typedef struct {
    /* Episodes to use (LeRobot's --dataset.episodes), any order, duplicates ignored; NULL (or
     * n_episodes 0 with episodes NULL) for all. Only their data and video files must exist. */
    const int64_t *episodes;
    size_t n_episodes;
    /* Put ImageNet's mean and std in place of every (non-depth) camera's stats (LeRobot's
     * --dataset.use_imagenet_stats, default TRUE). */
    gboolean use_imagenet_stats;
    /* LeRobot's tolerance_s (1e-4): timestamps in the data files must be 1/fps apart within it,
     * and a decoded frame must lie within it of the requested time. */
    double tolerance_s;
    /* FALSE: read the metadata only (rt_dataset_info and friends work; items do not). */
    gboolean load_frames;
} rt_dataset_options;

void rt_dataset_options_init(rt_dataset_options *options);

/* The option rows of LeRobot's dataset flags this layer reads, relative to their group:
 * "episodes" (a list of episode indices, null = all) and "use_imagenet_stats" (true). A command
 * adds them with rt_config_add_options(cfg, "dataset", rows, n, ...) to accept
 * --dataset.episodes=[0,1] and --dataset.use_imagenet_stats=false. Returns (transfer none). */
struct rt_option;
struct rt_config;
const struct rt_option *rt_dataset_option_rows(size_t *n);

/* Options from those flags (keys under prefix, e.g. "dataset"), the rest at their defaults.
 * *episodes receives the episode list the options point to (free it with g_free after
 * rt_dataset_open(); NULL for all). */
void rt_dataset_options_from_config(const struct rt_config *cfg, const char *prefix,
                                    rt_dataset_options *options, int64_t **episodes);

/* Opens the dataset in folder `root`. Fails (RT_ERROR_NOT_FOUND, RT_ERROR_FORMAT,
 * RT_ERROR_UNSUPPORTED, RT_ERROR_INVALID_ARG for a bad episode selection) with a message that
 * names the file and what is wrong. Returns (transfer full): free with rt_dataset_free(). */
rt_dataset *rt_dataset_open(const char *root, const rt_dataset_options *options, GError **error);
void rt_dataset_free(rt_dataset *ds);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_dataset, rt_dataset_free)

const char *rt_dataset_root(const rt_dataset *ds);
const char *rt_dataset_version(const rt_dataset *ds);    /* "v3.0", "v2.1" */
const char *rt_dataset_robot_type(const rt_dataset *ds); /* NULL when info.json has none */
double rt_dataset_fps(const rt_dataset *ds);
double rt_dataset_tolerance_s(const rt_dataset *ds);
/* info.json's total_frames and total_episodes (of the whole dataset). */
int64_t rt_dataset_total_frames(const rt_dataset *ds);

int rt_dataset_num_features(const rt_dataset *ds);
const rt_feature *rt_dataset_feature(const rt_dataset *ds, int i);
/* The feature called name, or NULL. */
const rt_feature *rt_dataset_find_feature(const rt_dataset *ds, const char *name);
int rt_dataset_feature_index(const rt_dataset *ds, const char *name); /* -1 when absent */

/* Every episode of the dataset, in episode_index order. */
int64_t rt_dataset_num_episodes(const rt_dataset *ds);
const rt_episode *rt_dataset_episode(const rt_dataset *ds, int64_t i);

/* The selected episodes: i-th selected episode's position in rt_dataset_episode(). */
int64_t rt_dataset_num_selected_episodes(const rt_dataset *ds);
int64_t rt_dataset_selected_episode(const rt_dataset *ds, int64_t i);

/* Tasks in the order of the tasks table. */
int64_t rt_dataset_num_tasks(const rt_dataset *ds);
const char *rt_dataset_task(const rt_dataset *ds, int64_t i, int64_t *task_index);
/* The task of a task_index, or NULL. */
const char *rt_dataset_task_by_index(const rt_dataset *ds, int64_t task_index);

/* Stats of a feature (after the ImageNet replacement when it was asked for), or NULL. */
const rt_feature_stats *rt_dataset_stats(const rt_dataset *ds, const char *feature);
int rt_dataset_num_stats(const rt_dataset *ds);
const rt_feature_stats *rt_dataset_stats_at(const rt_dataset *ds, int i);

/* ---------------------------------------------------------------- frames and items */

/* Frames of the selected episodes: the number of items. */
int64_t rt_dataset_num_frames(const rt_dataset *ds);

/* Where item `item` lives: its selected-episode number (0 .. selected - 1) and its frame in
 * that episode. */
void rt_dataset_locate(const rt_dataset *ds, int64_t item, int64_t *selected_episode, int64_t *frame);

/* The stored values of a NUMERIC feature for item `item`: numel values of the feature's storage
 * type (float, double, int64_t or uint8_t). Returns (transfer none) a pointer into the
 * dataset's memory, or NULL for another kind of feature. */
const void *rt_dataset_frame_values(const rt_dataset *ds, int feature, int64_t item);

/* Requests a temporal window for `key` (a feature name): item i then holds frames
 * f + deltas[0], ..., f + deltas[n-1] of that feature, clamped to its episode, plus a
 * <key>_is_pad field. n = 0 removes the window. Must be called before layouts are made.
 * Fails (RT_ERROR_INVALID_ARG) for an unknown or string feature, or n > 4096. */
gboolean rt_dataset_set_delta_indices(rt_dataset *ds, const char *key, const int64_t *deltas, size_t n,
                                      GError **error);

/* The same from seconds (LeRobot's delta_timestamps): each must be a multiple of 1/fps within
 * the tolerance, and becomes round(d x fps). */
gboolean rt_dataset_set_delta_timestamps(rt_dataset *ds, const char *key, const double *seconds, size_t n,
                                         GError **error);

/* ACT's request: action frames 0 .. chunk_size - 1. */
gboolean rt_dataset_set_action_chunk(rt_dataset *ds, int64_t chunk_size, GError **error);

/* ---------------------------------------------------------------- batches */

/* One tensor of a batch: `capacity` samples of `shape`, back to back, at data + offset. */
typedef struct {
    const char *key; /* "observation.state", "action", "action_is_pad", "observation.images.top" */
    int feature;     /* the feature it comes from (rt_dataset_feature()) */
    gboolean is_pad; /* the <key>_is_pad field of a window */
    rt_dtype dtype;
    int ndim; /* per sample: [] for shape-[1] features, [D], [T, D], [C, H, W], [T, C, H, W] */
    int64_t shape[RT_FEATURE_MAX_DIMS + 1];
    int64_t numel; /* elements per sample */
    size_t sample_bytes;
    size_t offset; /* of sample 0 in the batch block (64-byte aligned) */
} rt_batch_field;

/* The fields every batch of a dataset has, in feature order (a window's _is_pad right after
 * its feature). Made once, after the delta indices are set. Returns (transfer full): free with
 * rt_batch_layout_free(). */
typedef struct rt_batch_layout rt_batch_layout;
rt_batch_layout *rt_batch_layout_new(const rt_dataset *ds, int64_t capacity);
void rt_batch_layout_free(rt_batch_layout *layout);
int rt_batch_layout_num_fields(const rt_batch_layout *layout);
const rt_batch_field *rt_batch_layout_field(const rt_batch_layout *layout, int i);
int rt_batch_layout_find(const rt_batch_layout *layout, const char *key); /* -1 when absent */
int64_t rt_batch_layout_capacity(const rt_batch_layout *layout);
/* Bytes of one batch block (a multiple of 4096). */
size_t rt_batch_layout_bytes(const rt_batch_layout *layout);

/* A batch: one block of memory with every field, plus per-sample bookkeeping. */
typedef struct {
    const rt_batch_layout *layout;
    int64_t capacity;   /* samples the block holds */
    int64_t size;       /* samples filled: capacity, or less for a short last batch */
    int64_t epoch;      /* position in the sampler's sequence, for resume */
    int64_t batch;      /* batch number within the epoch (this rank's count) */
    void *data;         /* rt_batch_layout_bytes() bytes */
    int64_t *items;     /* [capacity] dataset item of each sample */
    const char **tasks; /* [capacity] task string of each sample (owned by the dataset) */
    gboolean owns_data;
} rt_batch;

/* A batch for `layout`. With `data` NULL the block is allocated (page-aligned, zeroed) and freed
 * with the batch; else `data` (rt_batch_layout_bytes() bytes, e.g. pinned host memory) is
 * borrowed. Returns (transfer full): free with rt_batch_free(). */
rt_batch *rt_batch_new(const rt_batch_layout *layout, void *data);
void rt_batch_free(rt_batch *batch);
/* Sample 0 of field i. */
void *rt_batch_field_data(const rt_batch *batch, int field);

/* Per-thread decoding state: open video decoders (a few per camera, least recently used
 * closed first), Parquet handles for inline images, scratch buffers. */
typedef struct rt_dataset_reader rt_dataset_reader;

/* `decoder_threads`: threads of each video decoder (0 = 1). Returns (transfer full): free with
 * rt_dataset_reader_free(). The dataset must outlive it. */
rt_dataset_reader *rt_dataset_reader_new(const rt_dataset *ds, int decoder_threads);
void rt_dataset_reader_free(rt_dataset_reader *reader);

/* Writes item `item` into sample `slot` of batch. Fails with the decoder's error (the message
 * names the file, the episode and the frame) when a camera frame cannot be decoded. */
gboolean rt_dataset_reader_fill(rt_dataset_reader *reader, int64_t item, rt_batch *batch, int64_t slot,
                                GError **error);

G_END_DECLS

#endif
