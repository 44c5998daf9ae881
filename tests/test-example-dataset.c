/* The bundled example dataset (data/example, written by data/make-example.mjs with arrow-rs and
 * SVT-AV1): every Parquet value against the task's closed form (restated here from
 * data/README, not taken from the generator), the video decoded with our decoder against our
 * own rendering of each frame, info.json and stats.json against the data (stats recomputed by
 * LeRobot's rules), and the layout against the shared tiny-lerobot-v3 fixture.
 *
 * ROBOTRAIN_EXAMPLE_DIR points the test at another copy (an installed one, a regenerated one). */
#include "config.h"

#include <json-glib/json-glib.h>

#include "data/parquet.h"
#include "data/video.h"
#include "testing.h"

/* ------------------------------------------------------------------ the closed form */

enum { EPISODES = 8, FRAMES = 340, FPS = 10, SIZE = 64, MOVE_FRAMES = 24, NSTATS = 10 };
#define TASK "reach the target"
#define CAMERA "observation.images.top"

static int episode_length(int e)
{
    return 32 + 4 * ((3 * e) % 7);
}

static int episode_first(int e)
{
    int n = 0;
    for (int k = 0; k < e; k++)
        n += episode_length(k);
    return n;
}

static void compass(int k, double scale, double out[2])
{
    double h = sqrt(0.5);
    static const int sign[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    for (int d = 0; d < 2; d++) {
        double c = (k % 2) ? sign[k][d] * h : sign[k][d];
        out[d] = scale * c;
    }
}

static double progress(int f)
{
    double u = (f < MOVE_FRAMES ? f : MOVE_FRAMES) / (double)MOVE_FRAMES;
    return u * u * u * (10 - 15 * u + 6 * u * u);
}

/* Position of episode e at frame f, float32, as observation.state (action: frame f + 1). */
static void position(int e, int f, float out[2])
{
    double a[2], b[2], s = progress(f);
    compass((3 * e + 5) % 8, 0.8, a);
    compass((3 * e) % 8, 0.6, b);
    for (int d = 0; d < 2; d++)
        out[d] = (float)(a[d] + (b[d] - a[d]) * s);
}

/* Centre of a disc in 1/256 pixels: column, row (y points up, rows down). */
static void subpixel(const float p[2], long out[2])
{
    out[0] = (long)floor((p[0] + 1.0) * 8064 + 0.5);
    out[1] = (long)floor((1.0 - p[1]) * 8064 + 0.5);
}

static int coverage(int col, int row, const long c[2], long r)
{
    int n = 0;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            long dx = col * 256L - 96 + 64 * i - c[0], dy = row * 256L - 96 + 64 * j - c[1];
            n += dx * dx + dy * dy <= r * r;
        }
    return n;
}

static int mix(int under, int over, int k)
{
    return (under * (16 - k) + over * k + 8) >> 4;
}

static void target_subpixel(int e, long out[2])
{
    double t[2];
    compass((3 * e) % 8, 0.6, t);
    float tf[2] = {(float)t[0], (float)t[1]};
    subpixel(tf, out);
}

/* The camera frame of episode e, frame f: SIZE x SIZE x 3 bytes, row-major RGB. */
static void render(int e, int f, uint8_t *rgb)
{
    static const int bg[3] = {32, 36, 48}, target[3] = {60, 200, 90}, robot[3] = {250, 130, 40};
    long t[2], r[2];
    float p[2];
    target_subpixel(e, t);
    position(e, f, p);
    subpixel(p, r);
    for (int row = 0; row < SIZE; row++)
        for (int col = 0; col < SIZE; col++) {
            int kt = coverage(col, row, t, 5 * 256), kr = coverage(col, row, r, 896);
            for (int c = 0; c < 3; c++)
                rgb[(row * SIZE + col) * 3 + c] = (uint8_t)mix(mix(bg[c], target[c], kt), robot[c], kr);
        }
}

/* ------------------------------------------------------------------ LeRobot's statistics */

/* min, max, mean, std, then q01, q10, q50, q90, q99 (count is kept apart). */
typedef struct {
    double v[9];
} col_stats;

static const char *const stat_names[NSTATS] = {"min", "max", "mean", "std", "count",
                                               "q01", "q10", "q50",  "q90", "q99"};
static const double quantiles[5] = {0.01, 0.10, 0.50, 0.90, 0.99};

/* The slot of stat_names[k] in col_stats.v, or -1 for count. */
static int stat_slot(int k)
{
    return k < 4 ? k : k == 4 ? -1 : k - 1;
}

/* compute_stats.py's RunningQuantileStats after one update of n values, in float64. */
static col_stats column_stats(const double *x, size_t n)
{
    enum { BINS = 5000 };
    double min = INFINITY, max = -INFINITY, sum = 0, sumsq = 0;
    for (size_t i = 0; i < n; i++) {
        min = fmin(min, x[i]);
        max = fmax(max, x[i]);
        sum += x[i];
        sumsq += x[i] * x[i];
    }
    double mean = sum / (double)n;
    col_stats s = {{min, max, mean, sqrt(fmax(0, sumsq / (double)n - mean * mean))}};
    double lo = min - 1e-10, hi = max + 1e-10, step = (hi - lo) / BINS;
    double *edges = g_new(double, BINS + 1), *cum = g_new0(double, BINS);
    for (int i = 0; i < BINS; i++)
        edges[i] = i * step + lo;
    edges[BINS] = hi;
    for (size_t k = 0; k < n; k++) { /* bin i: edges[i] <= x < edges[i + 1], the last closed */
        int i = (int)fmin(BINS - 1, fmax(0, floor((x[k] - lo) / step)));
        while (i > 0 && x[k] < edges[i])
            i--;
        while (i < BINS - 1 && x[k] >= edges[i + 1])
            i++;
        cum[i] += 1;
    }
    for (int i = 1; i < BINS; i++)
        cum[i] += cum[i - 1];
    for (int q = 0; q < 5; q++) {
        double goal = quantiles[q] * (double)n, value;
        int idx = 0;
        while (idx < BINS && cum[idx] < goal)
            idx++;
        if (idx == 0)
            value = edges[0];
        else if (idx >= BINS)
            value = edges[BINS];
        else {
            double before = cum[idx - 1], in_bin = cum[idx] - before;
            value = in_bin == 0 ? edges[idx]
                                : edges[idx] + (goal - before) / in_bin * (edges[idx + 1] - edges[idx]);
        }
        s.v[4 + q] = value;
    }
    g_free(edges);
    g_free(cum);
    return s;
}

/* aggregate_feature_stats() over the episodes for one dimension. */
static col_stats aggregate(const col_stats *per, const int *counts, int n)
{
    double total = 0, mean = 0, var = 0;
    for (int e = 0; e < n; e++)
        total += counts[e];
    for (int e = 0; e < n; e++)
        mean += per[e].v[2] * counts[e];
    mean /= total;
    for (int e = 0; e < n; e++) {
        double d = per[e].v[2] - mean;
        var += (per[e].v[3] * per[e].v[3] + d * d) * counts[e];
    }
    col_stats s = per[0];
    s.v[2] = mean;
    s.v[3] = sqrt(var / total);
    for (int e = 1; e < n; e++) {
        s.v[0] = fmin(s.v[0], per[e].v[0]);
        s.v[1] = fmax(s.v[1], per[e].v[1]);
        for (int q = 0; q < 5; q++)
            s.v[4 + q] =
                quantiles[q] <= 0.5 ? fmin(s.v[4 + q], per[e].v[4 + q]) : fmax(s.v[4 + q], per[e].v[4 + q]);
    }
    return s;
}

/* The features in info.json order, with their dimension count. */
static const struct {
    const char *name;
    int dims;
    gboolean is_int;
} features[] = {
    {"observation.state", 2, FALSE}, {"action", 2, FALSE},       {CAMERA, 3, FALSE}, {"timestamp", 1, FALSE},
    {"frame_index", 1, TRUE},        {"episode_index", 1, TRUE}, {"index", 1, TRUE}, {"task_index", 1, TRUE},
};
enum { NFEATURES = G_N_ELEMENTS(features) };

/* Per-episode stats of every feature and dimension, from the closed form and our rendering
 * (images: per channel, in 0..1 like LeRobot's). */
static col_stats episode_stats[EPISODES][NFEATURES][3];

static void compute_episode_stats(void)
{
    uint8_t *rgb = g_malloc(SIZE * SIZE * 3);
    for (int e = 0; e < EPISODES; e++) {
        int len = episode_length(e);
        size_t plane = (size_t)SIZE * SIZE, values = (size_t)len * plane;
        double *x = g_new(double, values);
        for (int k = 0; k < NFEATURES; k++)
            for (int d = 0; d < features[k].dims; d++) {
                if (k == 2) {
                    for (int f = 0; f < len; f++) {
                        render(e, f, rgb);
                        for (size_t p = 0; p < plane; p++)
                            x[f * plane + p] = rgb[p * 3 + d];
                    }
                    col_stats s = column_stats(x, values);
                    for (int i = 0; i < 9; i++)
                        s.v[i] /= 255.0;
                    episode_stats[e][k][d] = s;
                    continue;
                }
                for (int f = 0; f < len; f++) {
                    float p[2];
                    position(e, k == 1 ? f + 1 : f, p);
                    double v[] = {p[d], p[d], 0, (float)(f / (double)FPS), f, e, episode_first(e) + f, 0};
                    x[f] = v[k];
                }
                episode_stats[e][k][d] = column_stats(x, (size_t)len);
            }
        g_free(x);
    }
    g_free(rgb);
}

static gboolean near_rel(double expect, double actual)
{
    return fabs(expect - actual) <= 1e-9 * fmax(1.0, fabs(expect));
}

/* ------------------------------------------------------------------ files */

static char *example_dir;

/* Path of a file of the example dataset (transfer full: g_free). */
static char *example_file(const char *relative)
{
    return g_build_filename(example_dir, relative, NULL);
}

static rt_parquet_file *open_example_parquet(const char *relative)
{
    char *path = example_file(relative);
    GError *error = NULL;
    rt_parquet_file *f = rt_parquet_file_open(path, &error);
    if (!f)
        printf("# %s\n", error->message);
    g_clear_error(&error);
    g_free(path);
    return f;
}

/* Parsed JSON of a file (transfer full: json_node_unref), NULL when unreadable. */
static JsonNode *load_json(const char *path)
{
    JsonParser *parser = json_parser_new();
    GError *error = NULL;
    JsonNode *root = NULL;
    if (json_parser_load_from_file(parser, path, &error))
        root = json_node_copy(json_parser_get_root(parser));
    else
        printf("# %s: %s\n", path, error->message);
    g_clear_error(&error);
    g_object_unref(parser);
    return root;
}

static JsonNode *load_example_json(const char *relative)
{
    char *path = example_file(relative);
    JsonNode *root = load_json(path);
    g_free(path);
    return root;
}

/* Reads whole columns by name; a missing name makes the read fail. */
static rt_parquet_batch *read_columns(rt_parquet_file *f, const char *const *names, int n)
{
    int cols[32];
    g_assert(n <= 32);
    for (int i = 0; i < n; i++) {
        cols[i] = rt_parquet_file_find_column(f, names[i]);
        if (cols[i] < 0) {
            printf("# no column %s in %s\n", names[i], rt_parquet_file_path(f));
            return NULL;
        }
    }
    GError *error = NULL;
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, n, 0, rt_parquet_file_num_rows(f), &error);
    if (!b)
        printf("# %s\n", error->message);
    g_clear_error(&error);
    return b;
}

static const int64_t *int64s(const rt_parquet_array *a)
{
    return a->values;
}

static const double *doubles(const rt_parquet_array *a)
{
    return a->values;
}

static gboolean string_is(const rt_parquet_array *a, int64_t slot, const char *expect)
{
    size_t len = (size_t)(a->offsets[slot + 1] - a->offsets[slot]);
    return len == strlen(expect) && memcmp(a->data + a->offsets[slot], expect, len) == 0;
}

/* The from_timestamp of every episode as LeRobot computes it: the previous episode's
 * to_timestamp, to = from + duration of the episode's own mp4 (frames x 1024 ticks of the
 * MP4 muxer's 1/10240 s time base at 10 fps). */
static double video_from(int e)
{
    double t = 0;
    for (int k = 0; k < e; k++)
        t = t + (double)(episode_length(k) * 1024) / 10240;
    return t;
}

/* ------------------------------------------------------------------ data file */

DEF_TEST(data_file_values)
{
    rt_parquet_file *f = open_example_parquet("data/chunk-000/file-000.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(FRAMES, rt_parquet_file_num_rows(f));
    EXPECT_EQ_INT(7, rt_parquet_file_num_columns(f));
    /* row groups of 100 rows, not one per episode (see data/README) */
    EXPECT_EQ_INT(4, rt_parquet_file_num_row_groups(f));
    EXPECT_EQ_INT(100, rt_parquet_file_row_group_num_rows(f, 0));
    EXPECT_EQ_INT(40, rt_parquet_file_row_group_num_rows(f, 3));
    OK(rt_parquet_file_metadata(f, "ARROW:schema") != NULL);
    OK(g_str_has_prefix(rt_parquet_file_created_by(f), "parquet-wasm 0.8.0 (arrow-rs)"));

    static const char *const names[] = {"observation.state", "action", "timestamp", "frame_index",
                                        "episode_index",     "index",  "task_index"};
    for (int i = 0; i < 7; i++)
        EXPECT_EQ_INT(i, rt_parquet_file_find_column(f, names[i]));
    /* the ARROW:schema says FixedSizeList[2]<float32> */
    EXPECT_EQ_INT(2, rt_parquet_file_column(f, 0)->fixed_size);
    EXPECT_EQ_INT(2, rt_parquet_file_column(f, 1)->fixed_size);
    EXPECT_EQ_INT(RT_PARQUET_FLOAT, rt_parquet_file_column(f, 0)->physical);
    EXPECT_EQ_INT(RT_PARQUET_FLOAT, rt_parquet_file_column(f, 2)->physical);
    for (int i = 3; i < 7; i++)
        EXPECT_EQ_INT(RT_PARQUET_INT64, rt_parquet_file_column(f, i)->physical);

    rt_parquet_batch *b = read_columns(f, names, 7);
    OK(b != NULL);
    EXPECT_EQ_INT(2, b->arrays[0].list_size);
    EXPECT_EQ_INT(2, b->arrays[1].list_size);
    const float *state = b->arrays[0].values, *action = b->arrays[1].values, *ts = b->arrays[2].values;
    int bad = 0;
    for (int e = 0, row = 0; e < EPISODES && !bad; e++)
        for (int f_ = 0; f_ < episode_length(e) && !bad; f_++, row++) {
            float p[2], q[2];
            position(e, f_, p);
            position(e, f_ + 1, q);
            for (int d = 0; d < 2; d++) {
                bad += fabs(state[2 * row + d] - p[d]) > 1e-6;
                bad += fabs(action[2 * row + d] - q[d]) > 1e-6;
            }
            bad += ts[row] != (float)(f_ / (double)FPS);
            bad += int64s(&b->arrays[3])[row] != f_;
            bad += int64s(&b->arrays[4])[row] != e;
            bad += int64s(&b->arrays[5])[row] != row;
            bad += int64s(&b->arrays[6])[row] != 0;
            if (bad)
                printf("# row %d (episode %d frame %d) differs from the closed form\n", row, e, f_);
        }
    EXPECT_EQ_INT(0, bad);
    /* spot values: the first state is the start 0.8 x (-h, -h); the robot then rests on the
     * target 0.6 x (1, 0) */
    EXPECT_NEAR(-0.8 * sqrt(0.5), state[0], 1e-7);
    EXPECT_NEAR(0.6, state[2 * 31], 1e-7);
    EXPECT_NEAR(0.0, state[2 * 31 + 1], 1e-7);
    rt_parquet_batch_free(b);

    /* the huggingface key: the datasets features of the columns */
    JsonParser *parser = json_parser_new();
    OK(json_parser_load_from_data(parser, rt_parquet_file_metadata(f, "huggingface"), -1, NULL));
    JsonObject *hf = json_object_get_object_member(
        json_object_get_object_member(json_node_get_object(json_parser_get_root(parser)), "info"),
        "features");
    EXPECT_EQ_INT(7, json_object_get_size(hf));
    JsonObject *st = json_object_get_object_member(hf, "observation.state");
    EXPECT_EQ_STR("List", json_object_get_string_member(st, "_type"));
    EXPECT_EQ_INT(2, json_object_get_int_member(st, "length"));
    EXPECT_EQ_STR("int64",
                  json_object_get_string_member(json_object_get_object_member(hf, "index"), "dtype"));
    g_object_unref(parser);
    rt_parquet_file_free(f);
    return 0;
}

/* ------------------------------------------------------------------ tasks and episodes */

DEF_TEST(tasks_table)
{
    rt_parquet_file *f = open_example_parquet("meta/tasks.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(1, rt_parquet_file_num_rows(f));
    static const char *const names[] = {"task_index", "task"};
    rt_parquet_batch *b = read_columns(f, names, 2);
    OK(b != NULL);
    EXPECT_EQ_INT(0, int64s(&b->arrays[0])[0]);
    EXPECT_EQ_INT(RT_PARQUET_LOGICAL_STRING, rt_parquet_file_column(f, 1)->logical);
    OK(string_is(&b->arrays[1], 0, TASK));
    const char *pandas = rt_parquet_file_metadata(f, "pandas");
    OK(pandas && strstr(pandas, "\"index_columns\":[\"task\"]"));
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

DEF_TEST(episodes_table)
{
    rt_parquet_file *f = open_example_parquet("meta/episodes/chunk-000/file-000.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(EPISODES, rt_parquet_file_num_rows(f));
    static const char *const names[] = {"episode_index",
                                        "tasks",
                                        "length",
                                        "data/chunk_index",
                                        "data/file_index",
                                        "dataset_from_index",
                                        "dataset_to_index",
                                        "videos/" CAMERA "/chunk_index",
                                        "videos/" CAMERA "/file_index",
                                        "videos/" CAMERA "/from_timestamp",
                                        "videos/" CAMERA "/to_timestamp",
                                        "stats/" CAMERA "/count",
                                        "meta/episodes/chunk_index",
                                        "meta/episodes/file_index"};
    rt_parquet_batch *b = read_columns(f, names, G_N_ELEMENTS(names));
    OK(b != NULL);
    EXPECT_EQ_INT(1, b->arrays[1].list_size);
    for (int e = 0; e < EPISODES; e++) {
        EXPECT_EQ_INT(e, int64s(&b->arrays[0])[e]);
        OK(string_is(&b->arrays[1], e, TASK));
        EXPECT_EQ_INT(episode_length(e), int64s(&b->arrays[2])[e]);
        EXPECT_EQ_INT(episode_first(e), int64s(&b->arrays[5])[e]);
        EXPECT_EQ_INT(episode_first(e) + episode_length(e), int64s(&b->arrays[6])[e]);
        EXPECT_NEAR(video_from(e), doubles(&b->arrays[9])[e], 0);
        EXPECT_NEAR(video_from(e + 1), doubles(&b->arrays[10])[e], 0);
        EXPECT_EQ_INT(episode_length(e), int64s(&b->arrays[11])[e]);
        for (int i = 3; i <= 13; i++)
            if (i != 5 && i != 6 && i != 9 && i != 10 && i != 11)
                EXPECT_EQ_INT(0, int64s(&b->arrays[i])[e]);
    }
    rt_parquet_batch_free(b);

    /* per-episode stats of every non-image feature, LeRobot's rules recomputed */
    int checked = 0;
    for (int k = 0; k < NFEATURES; k++)
        for (int s = 0; s < NSTATS; s++) {
            char *name = g_strdup_printf("stats/%s/%s", features[k].name, stat_names[s]);
            int col = rt_parquet_file_find_column(f, name);
            OK1(col >= 0, name);
            const rt_parquet_column *c = rt_parquet_file_column(f, col);
            gboolean int_stat = s == 4 || (features[k].is_int && s < 2);
            EXPECT_EQ_INT(int_stat ? RT_PARQUET_INT64 : RT_PARQUET_DOUBLE, c->physical);
            if (k == 2 && s != 4) { /* (3, 1, 1) lists of lists: not readable here */
                EXPECT_EQ_INT(RT_PARQUET_NESTED, c->shape);
                EXPECT_EQ_INT(3, c->max_repetition_level);
                g_free(name);
                continue;
            }
            GError *error = NULL;
            rt_parquet_batch *sb = rt_parquet_file_read(f, &col, 1, 0, EPISODES, &error);
            EXPECT_NO_ERROR(error);
            const rt_parquet_array *a = &sb->arrays[0];
            int dims = s == 4 ? 1 : features[k].dims;
            EXPECT_EQ_INT(dims, a->list_size);
            for (int e = 0; e < EPISODES; e++)
                for (int d = 0; d < dims; d++) {
                    double expect = s == 4 ? episode_length(e) : episode_stats[e][k][d].v[stat_slot(s)];
                    double got = int_stat ? (double)int64s(a)[e * dims + d] : doubles(a)[e * dims + d];
                    if (!near_rel(expect, got)) {
                        printf("# %s episode %d dim %d: %.17g, expected %.17g\n", name, e, d, got, expect);
                        OK1(FALSE, name);
                    }
                    checked++;
                }
            rt_parquet_batch_free(sb);
            g_free(name);
        }
    /* per episode: state and action 9 stats x 2 dims + count, the image's count, 5 scalars x 10 */
    EXPECT_EQ_INT(EPISODES * ((9 * 2 + 1) * 2 + 1 + 5 * 10), checked);
    rt_parquet_file_free(f);
    return 0;
}

/* ------------------------------------------------------------------ info.json, stats.json */

/* Replaces {name} and {name:03d} in a LeRobot path template. Returns (transfer full). */
static char *expand_template(const char *tmpl, const char *video_key, int chunk, int file)
{
    GString *out = g_string_new(NULL);
    for (const char *p = tmpl; *p;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        if (!close) {
            g_string_append_c(out, *p++);
            continue;
        }
        char *field = g_strndup(p + 1, (gsize)(close - p - 1));
        char *colon = strchr(field, ':');
        if (colon)
            *colon = '\0';
        if (strcmp(field, "video_key") == 0)
            g_string_append(out, video_key);
        else
            g_string_append_printf(out, colon ? "%03d" : "%d",
                                   strcmp(field, "chunk_index") == 0 ? chunk : file);
        g_free(field);
        p = close + 1;
    }
    return g_string_free(out, FALSE);
}

DEF_TEST(info_json)
{
    JsonNode *root = load_example_json("meta/info.json");
    OK(root != NULL);
    JsonObject *info = json_node_get_object(root);
    EXPECT_EQ_STR("v3.0", json_object_get_string_member(info, "codebase_version"));
    EXPECT_EQ_INT(FPS, json_object_get_int_member(info, "fps"));
    EXPECT_EQ_INT(EPISODES, json_object_get_int_member(info, "total_episodes"));
    EXPECT_EQ_INT(FRAMES, json_object_get_int_member(info, "total_frames"));
    EXPECT_EQ_INT(1, json_object_get_int_member(info, "total_tasks"));
    EXPECT_EQ_INT(1000, json_object_get_int_member(info, "chunks_size"));
    EXPECT_EQ_STR("point2d_sim", json_object_get_string_member(info, "robot_type"));
    EXPECT_EQ_STR("0:8",
                  json_object_get_string_member(json_object_get_object_member(info, "splits"), "train"));

    /* the templates lead to the files */
    char *data = expand_template(json_object_get_string_member(info, "data_path"), NULL, 0, 0);
    char *video = expand_template(json_object_get_string_member(info, "video_path"), CAMERA, 0, 0);
    EXPECT_EQ_STR("data/chunk-000/file-000.parquet", data);
    EXPECT_EQ_STR("videos/" CAMERA "/chunk-000/file-000.mp4", video);
    g_free(data);
    g_free(video);

    JsonObject *feats = json_object_get_object_member(info, "features");
    EXPECT_EQ_INT(NFEATURES, json_object_get_size(feats));
    GList *members = json_object_get_members(feats);
    int k = 0;
    for (GList *l = members; l; l = l->next, k++) {
        EXPECT_EQ_STR(features[k].name, (const char *)l->data);
        JsonObject *ft = json_object_get_object_member(feats, l->data);
        JsonArray *shape = json_object_get_array_member(ft, "shape");
        const char *dtype = json_object_get_string_member(ft, "dtype");
        if (k == 2) {
            EXPECT_EQ_STR("video", dtype);
            EXPECT_EQ_INT(3, json_array_get_length(shape));
            EXPECT_EQ_INT(SIZE, json_array_get_int_element(shape, 0));
            EXPECT_EQ_INT(SIZE, json_array_get_int_element(shape, 1));
            EXPECT_EQ_INT(3, json_array_get_int_element(shape, 2));
        } else {
            EXPECT_EQ_STR(features[k].is_int ? "int64" : "float32", dtype);
            EXPECT_EQ_INT(1, json_array_get_length(shape));
            EXPECT_EQ_INT(k < 2 ? 2 : 1, json_array_get_int_element(shape, 0));
        }
    }
    g_list_free(members);

    /* the video facts agree with the file */
    JsonObject *vi = json_object_get_object_member(json_object_get_object_member(feats, CAMERA), "info");
    char *path = example_file("videos/" CAMERA "/chunk-000/file-000.mp4");
    GError *error = NULL;
    rt_video_decoder *dec = rt_video_decoder_open(path, 1, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(rt_video_decoder_height(dec), json_object_get_int_member(vi, "video.height"));
    EXPECT_EQ_INT(rt_video_decoder_width(dec), json_object_get_int_member(vi, "video.width"));
    EXPECT_NEAR(rt_video_decoder_fps(dec), (double)json_object_get_int_member(vi, "video.fps"), 1e-9);
    EXPECT_EQ_STR("av1", json_object_get_string_member(vi, "video.codec"));
    EXPECT_EQ_STR("yuv420p", json_object_get_string_member(vi, "video.pix_fmt"));
    EXPECT_EQ_INT(2, json_object_get_int_member(vi, "video.g"));
    EXPECT_EQ_INT(30, json_object_get_int_member(vi, "video.crf"));
    rt_video_decoder_free(dec);
    g_free(path);

    /* the totals agree with the tables */
    rt_parquet_file *f = open_example_parquet("data/chunk-000/file-000.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(json_object_get_int_member(info, "total_frames"), rt_parquet_file_num_rows(f));
    rt_parquet_file_free(f);
    f = open_example_parquet("meta/episodes/chunk-000/file-000.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(json_object_get_int_member(info, "total_episodes"), rt_parquet_file_num_rows(f));
    rt_parquet_file_free(f);
    f = open_example_parquet("meta/tasks.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(json_object_get_int_member(info, "total_tasks"), rt_parquet_file_num_rows(f));
    rt_parquet_file_free(f);
    json_node_unref(root);
    return 0;
}

/* Element d of a stats.json value: a flat list, or for images [[[c0]], [[c1]], [[c2]]]. */
static JsonNode *stat_element(JsonArray *a, int d, gboolean image)
{
    JsonNode *n = json_array_get_element(a, (guint)d);
    if (image) {
        JsonArray *inner = json_node_get_array(n);
        if (json_array_get_length(inner) != 1)
            return NULL;
        inner = json_array_get_array_element(inner, 0);
        if (json_array_get_length(inner) != 1)
            return NULL;
        n = json_array_get_element(inner, 0);
    }
    return n;
}

DEF_TEST(stats_json)
{
    JsonNode *root = load_example_json("meta/stats.json");
    OK(root != NULL);
    JsonObject *stats = json_node_get_object(root);
    EXPECT_EQ_INT(NFEATURES, json_object_get_size(stats));
    int counts[EPISODES];
    for (int e = 0; e < EPISODES; e++)
        counts[e] = episode_length(e);
    int checked = 0;
    for (int k = 0; k < NFEATURES; k++) {
        JsonObject *fs = json_object_get_object_member(stats, features[k].name);
        OK1(fs != NULL, features[k].name);
        EXPECT_EQ_INT(NSTATS, json_object_get_size(fs));
        gboolean image = k == 2;
        for (int s = 0; s < NSTATS; s++) {
            JsonArray *a = json_object_get_array_member(fs, stat_names[s]);
            OK1(a != NULL, stat_names[s]);
            if (s == 4) { /* count: frames (images: sampled frames, all of them here) */
                EXPECT_EQ_INT(1, json_array_get_length(a));
                EXPECT_EQ_INT(FRAMES, json_array_get_int_element(a, 0));
                continue;
            }
            EXPECT_EQ_INT(features[k].dims, json_array_get_length(a));
            for (int d = 0; d < features[k].dims; d++) {
                col_stats per[EPISODES];
                for (int e = 0; e < EPISODES; e++)
                    per[e] = episode_stats[e][k][d];
                col_stats agg = aggregate(per, counts, EPISODES);
                JsonNode *n = stat_element(a, d, image);
                OK(n != NULL && JSON_NODE_HOLDS_VALUE(n));
                /* int features keep integer min/max, as the episodes table has them */
                if (features[k].is_int && s < 2)
                    EXPECT_EQ_INT(G_TYPE_INT64, json_node_get_value_type(n));
                double got = json_node_get_value_type(n) == G_TYPE_INT64 ? (double)json_node_get_int(n)
                                                                         : json_node_get_double(n);
                double expect = agg.v[stat_slot(s)];
                if (!near_rel(expect, got)) {
                    printf("# stats.json %s/%s[%d] = %.17g, expected %.17g\n", features[k].name,
                           stat_names[s], d, got, expect);
                    OK(FALSE);
                }
                checked++;
            }
        }
    }
    EXPECT_EQ_INT(9 * (2 + 2 + 3 + 5), checked);
    /* sanity of the recomputation itself: the pixels' background and colours bound them */
    JsonArray *img_min = json_object_get_array_member(json_object_get_object_member(stats, CAMERA), "min");
    EXPECT_NEAR(32 / 255.0, json_node_get_double(stat_element(img_min, 0, TRUE)), 1e-12);
    json_node_unref(root);
    return 0;
}

/* ------------------------------------------------------------------ video */

/* Centroid (col, row) of the pixels of a CHW frame that `is_colour` accepts; FALSE if none. */
static gboolean centroid(const float *chw, gboolean (*is_colour)(double r, double g, double b), double out[2])
{
    size_t plane = (size_t)SIZE * SIZE;
    double sx = 0, sy = 0, n = 0;
    for (int row = 0; row < SIZE; row++)
        for (int col = 0; col < SIZE; col++) {
            size_t p = (size_t)row * SIZE + col;
            if (is_colour(chw[p] * 255, chw[plane + p] * 255, chw[2 * plane + p] * 255)) {
                sx += col;
                sy += row;
                n++;
            }
        }
    if (n == 0)
        return FALSE;
    out[0] = sx / n;
    out[1] = sy / n;
    return TRUE;
}

static gboolean is_robot(double r, double g, double b)
{
    return r > 140 && b < 110 && r > g + 40;
}

static gboolean is_target(double r, double g, double b)
{
    return g > 120 && g > r + 50 && b < 140;
}

DEF_TEST(video_frames)
{
    char *path = example_file("videos/" CAMERA "/chunk-000/file-000.mp4");
    GError *error = NULL;
    rt_video_decoder *dec = rt_video_decoder_open(path, 1, &error);
    g_free(path);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("libdav1d", rt_video_decoder_codec_name(dec));
    EXPECT_EQ_INT(SIZE, rt_video_decoder_width(dec));
    EXPECT_EQ_INT(SIZE, rt_video_decoder_height(dec));
    EXPECT_NEAR(FPS, rt_video_decoder_fps(dec), 1e-9);
    EXPECT_EQ_INT(FRAMES, rt_video_decoder_frame_count(dec));
    EXPECT_NEAR(video_from(EPISODES), rt_video_decoder_duration(dec), 1e-9);

    size_t floats = rt_video_decoder_frame_floats(dec), plane = (size_t)SIZE * SIZE;
    float *frames = g_new(float, floats * 56);
    uint8_t *rgb = g_malloc(plane * 3);
    double worst_mae = 0, worst_robot = 0, worst_target = 0;
    int worst_frame = -1;
    for (int e = 0; e < EPISODES; e++) {
        int len = episode_length(e);
        double times[56];
        /* LeRobot's query: from_timestamp + the row's float32 timestamp */
        for (int f = 0; f < len; f++)
            times[f] = video_from(e) + (double)(float)(f / (double)FPS);
        OK(rt_video_decode_batch(dec, times, (size_t)len, RT_VIDEO_DEFAULT_TOLERANCE_S, frames, &error));
        for (int f = 0; f < len; f++) {
            const float *chw = frames + (size_t)f * floats;
            render(e, f, rgb);
            double sum = 0;
            for (int c = 0; c < 3; c++)
                for (size_t p = 0; p < plane; p++)
                    sum += fabs(chw[c * plane + p] * 255.0 - rgb[p * 3 + c]);
            double mae = sum / (3.0 * plane);
            if (mae > worst_mae) {
                worst_mae = mae;
                worst_frame = episode_first(e) + f;
            }
            /* where the robot and the target are seen, against where they were drawn */
            float p[2];
            long r[2], t[2];
            position(e, f, p);
            subpixel(p, r);
            target_subpixel(e, t);
            double seen[2];
            if (hypot((double)(r[0] - t[0]), (double)(r[1] - t[1])) > 10 * 256.0) { /* apart */
                OK(centroid(chw, is_robot, seen));
                worst_robot = fmax(worst_robot, hypot(seen[0] - r[0] / 256.0, seen[1] - r[1] / 256.0));
                OK(centroid(chw, is_target, seen));
                worst_target = fmax(worst_target, hypot(seen[0] - t[0] / 256.0, seen[1] - t[1] / 256.0));
            }
        }
    }
    printf("# worst mean |decoded - drawn| %.3f levels (frame %d); centroid errors: robot %.3f px, "
           "target %.3f px\n",
           worst_mae, worst_frame, worst_robot, worst_target);
    OK(worst_mae < 3.0);
    OK(worst_robot < 1.0);
    OK(worst_target < 0.75);

    /* a frame between two episodes' times is refused, as LeRobot's tolerance check does */
    OK(!rt_video_decode_at(dec, video_from(1) - 0.05, RT_VIDEO_DEFAULT_TOLERANCE_S, frames, &error));
    EXPECT_ERROR(error, "tolerance");
    g_free(frames);
    g_free(rgb);
    rt_video_decoder_free(dec);
    return 0;
}

/* ------------------------------------------------------------------ layout vs the fixture */

/* Appends to `out` the paths, relative to root, of the files under root/rel (`skip`: a
 * folder, relative to root, to leave out). The strings are g_strdup'ed for out to free. */
static void list_files(const char *root, const char *rel, const char *skip, GPtrArray *out)
{
    char *dir = rel ? g_build_filename(root, rel, NULL) : g_strdup(root);
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        char *child = rel ? g_build_filename(rel, name, NULL) : g_strdup(name);
        char *full = g_build_filename(root, child, NULL);
        if (skip && strcmp(child, skip) == 0)
            g_free(child);
        else if (g_file_test(full, G_FILE_TEST_IS_DIR)) {
            list_files(root, child, skip, out);
            g_free(child);
        } else
            g_ptr_array_add(out, child);
        g_free(full);
    }
    if (d)
        g_dir_close(d);
    g_free(dir);
}

/* s with every `from` replaced by `to` (g_string_replace needs GLib 2.68; we require 2.66).
 * Returns (transfer full): g_free. */
static char *replace_all(const char *s, const char *from, const char *to)
{
    GString *out = g_string_new(NULL);
    for (const char *hit; (hit = strstr(s, from)); s = hit + strlen(from)) {
        g_string_append_len(out, s, hit - s);
        g_string_append(out, to);
    }
    g_string_append(out, s);
    return g_string_free(out, FALSE);
}

/* A name of the fixture with its camera renamed to ours. Returns (transfer full). */
static char *ours(const char *fixture_name)
{
    return replace_all(fixture_name, "observation.images.cam", CAMERA);
}

static int compare_strings(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "path: json-type" lines for every member of a JSON tree (array elements share the path of
 * their list, so lists of different lengths compare equal), sorted and deduplicated. */
static void json_shape(JsonNode *n, const char *path, GPtrArray *out)
{
    static const char *const kinds[] = {"object", "array", "value", "null"};
    const char *kind = kinds[json_node_get_node_type(n)];
    if (JSON_NODE_HOLDS_VALUE(n))
        kind = json_node_get_value_type(n) == G_TYPE_STRING    ? "string"
               : json_node_get_value_type(n) == G_TYPE_BOOLEAN ? "boolean"
                                                               : "number";
    g_ptr_array_add(out, g_strdup_printf("%s: %s", path, kind));
    if (JSON_NODE_HOLDS_OBJECT(n)) {
        GList *members = json_object_get_members(json_node_get_object(n));
        for (GList *l = members; l; l = l->next) {
            char *key = ours(l->data), *child = g_strdup_printf("%s/%s", path, key);
            json_shape(json_object_get_member(json_node_get_object(n), l->data), child, out);
            g_free(key);
            g_free(child);
        }
        g_list_free(members);
    } else if (JSON_NODE_HOLDS_ARRAY(n)) {
        JsonArray *a = json_node_get_array(n);
        char *child = g_strdup_printf("%s[]", path);
        for (guint i = 0; i < json_array_get_length(a); i++)
            json_shape(json_array_get_element(a, i), child, out);
        g_free(child);
    }
}

static GPtrArray *json_shape_of(const char *file)
{
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
    JsonNode *root = load_json(file);
    if (!root)
        return lines;
    json_shape(root, "", lines);
    json_node_unref(root);
    g_ptr_array_sort(lines, compare_strings);
    for (guint i = 1; i < lines->len;) /* deduplicate */
        if (strcmp(lines->pdata[i], lines->pdata[i - 1]) == 0)
            g_ptr_array_remove_index(lines, i);
        else
            i++;
    return lines;
}

/* The first line where two sorted string lists differ, printed; TRUE if none. */
static gboolean same_lines(GPtrArray *want, GPtrArray *got, const char *what)
{
    for (guint i = 0; i < MAX(want->len, got->len); i++) {
        const char *w = i < want->len ? want->pdata[i] : "(end)", *g = i < got->len ? got->pdata[i] : "(end)";
        if (strcmp(w, g) != 0) {
            printf("# %s: the fixture has \"%s\" where the example has \"%s\"\n", what, w, g);
            return FALSE;
        }
    }
    return TRUE;
}

/* A Parquet file's structure as lines: columns with types, levels, shapes; metadata keys. */
static GPtrArray *parquet_shape(const char *file)
{
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
    rt_parquet_file *f = rt_parquet_file_open(file, NULL);
    if (!f)
        return lines;
    for (int i = 0; i < rt_parquet_file_num_columns(f); i++) {
        const rt_parquet_column *c = rt_parquet_file_column(f, i);
        char *path = ours(c->path);
        g_ptr_array_add(lines, g_strdup_printf("column %03d %s: type %d logical %d shape %d def %d rep %d "
                                               "nullable %d fixed %s",
                                               i, path, c->physical, c->logical, c->shape,
                                               c->max_definition_level, c->max_repetition_level, c->nullable,
                                               c->fixed_size > 0 ? "yes" : "no"));
        g_free(path);
    }
    for (int i = 0; i < rt_parquet_file_num_metadata(f); i++)
        g_ptr_array_add(lines, g_strdup_printf("metadata %d: %s", i, rt_parquet_file_metadata_key(f, i)));
    rt_parquet_file_free(f);
    return lines;
}

DEF_TEST(layout_matches_fixture)
{
    char *fixture = rt_test_sharedfile("data/tiny-lerobot-v3");
    if (!fixture) {
        printf("# skipped: ../shared/data/tiny-lerobot-v3 is absent (a tarball build)\n");
        return 0;
    }
    GPtrArray *want = g_ptr_array_new_with_free_func(g_free), *got = g_ptr_array_new_with_free_func(g_free);
    list_files(fixture, NULL, "variants", want); /* variants/: extra copies for reader tests */
    list_files(example_dir, NULL, NULL, got);
    for (guint i = 0; i < want->len; i++) {
        char *name = ours(want->pdata[i]);
        g_free(want->pdata[i]);
        want->pdata[i] = name;
    }
    g_ptr_array_sort(want, compare_strings);
    g_ptr_array_sort(got, compare_strings);
    EXPECT_EQ_INT(6, want->len);
    OK(same_lines(want, got, "files"));

    for (guint i = 0; i < got->len; i++) {
        const char *rel = got->pdata[i];
        char *theirs = NULL;
        for (guint j = 0; j < want->len; j++) /* the fixture's own name of the same file */
            if (strcmp(want->pdata[j], rel) == 0) {
                char *name = replace_all(rel, CAMERA, "observation.images.cam");
                theirs = g_build_filename(fixture, name, NULL);
                g_free(name);
            }
        char *mine = example_file(rel);
        GPtrArray *a = NULL, *b = NULL;
        if (g_str_has_suffix(rel, ".json")) {
            a = json_shape_of(theirs);
            b = json_shape_of(mine);
        } else if (g_str_has_suffix(rel, ".parquet")) {
            a = parquet_shape(theirs);
            b = parquet_shape(mine);
        }
        if (a) {
            OK1(a->len > 0, rel);
            OK1(same_lines(a, b, rel), rel);
            g_ptr_array_unref(a);
            g_ptr_array_unref(b);
        }
        g_free(theirs);
        g_free(mine);
    }
    g_ptr_array_unref(want);
    g_ptr_array_unref(got);
    g_free(fixture);
    return 0;
}

int main(void)
{
    const char *dir = g_getenv("ROBOTRAIN_EXAMPLE_DIR");
    example_dir = dir ? g_strdup(dir) : rt_test_srcfile("../data/example");
    printf("# example dataset: %s\n", example_dir);
    compute_episode_stats();
    RUN_TEST(data_file_values);
    RUN_TEST(tasks_table);
    RUN_TEST(episodes_table);
    RUN_TEST(info_json);
    RUN_TEST(stats_json);
    RUN_TEST(video_frames);
    RUN_TEST(layout_matches_fixture);
    g_free(example_dir);
    END_TEST;
}
