/* src/data/dataset-private.h: the dataset's insides, shared by dataset*.c. */
#ifndef ROBOTRAIN_DATA_DATASET_PRIVATE_H
#define ROBOTRAIN_DATA_DATASET_PRIVATE_H

#include "data/dataset-meta.h"
#include "data/dataset.h"

#define RT_DATASET_MAX_DELTAS 4096

struct rt_dataset {
    char *root;
    double tolerance;
    rt_meta_info *info;
    int n_features;
    rt_meta_episodes *meta_eps;
    rt_episode *episodes; /* public view of meta_eps */
    int64_t n_episodes;
    rt_meta_tasks *tasks;
    char *tasks_path;          /* the file they come from, for messages */
    GHashTable *task_by_index; /* int64_t -> const char * */
    rt_meta_stats *stats;
    /* cameras: VIDEO features, numbered in feature order */
    int n_cameras;
    int *camera_feature; /* camera -> feature */
    int *feature_camera; /* feature -> camera, or -1 */
    int ts_feature, task_feature;
    /* the selection: positions in episodes[] */
    int64_t n_selected;
    int64_t *selected;
    int64_t *sel_start; /* [n_selected + 1]: first item of each selected episode */
    /* frames, once loaded */
    gboolean loaded;
    void **columns;        /* per NUMERIC feature: num_frames x numel values of its storage type */
    char **sel_data_path;  /* per selected episode: its data file */
    int64_t *sel_data_row; /* ... and the file row of its first frame */
    char **sel_video_path; /* [selected x camera] */
    double *sel_video_from;
    /* windows */
    int64_t **deltas; /* per feature, or NULL */
    size_t *n_deltas;
};

/* Where a file path of selected episode k comes from, for messages naming the files that could
 * be at fault: "by the data_path of ROOT/meta/info.json and the data chunk and file index of
 * SOURCE" (kind "data", v3), "by the data_path and chunks_size of ROOT/meta/info.json" (v2), or
 * the same for "video". Returns (transfer full) a string to g_free. */
char *rt_dataset_path_origin(const rt_dataset *ds, int64_t k, const char *kind);

/* The file that lists selected episode k (meta/episodes.jsonl, or a v3 episodes table).
 * Returns (transfer none). */
const char *rt_dataset_episode_source(const rt_dataset *ds, int64_t k);

/* Reads the numeric columns of the selected episodes and checks them (dataset-load.c). */
gboolean rt_dataset_load_frames(rt_dataset *ds, GError **error);

#endif
