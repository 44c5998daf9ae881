/* The Parquet reader against files written by other tools, with values known independently:
 *   - tiny-v3: our LeRobot v3.0 fixture, closed-form values (tests/data/parquet/README), in
 *     four writer variants (arrow-rs SNAPPY v1, ZSTD v2, UNCOMPRESSED, DuckDB);
 *   - real-v2.1: a real LeRobot episode, checked against the stats lerobot computed from it;
 *   - parquet-testing: Apache's conformance files, with the values their documentation and
 *     other readers' test suites give (cited at each test). */
#include "config.h"

#include "testing.h"

#include <inttypes.h>
#include <json-glib/json-glib.h>
#include <robotrain/error.h>

#include "data/parquet.h"

static rt_parquet_file *open_fixture(const char *relative)
{
    char *path = rt_test_srcfile(relative);
    GError *error = NULL;
    rt_parquet_file *f = rt_parquet_file_open(path, &error);
    if (!f) {
        printf("# cannot open %s: %s\n", path, error->message);
        g_clear_error(&error);
    }
    g_free(path);
    return f;
}

/* Reads the named columns (found with rt_parquet_file_find_column) for rows [first, +n). */
static rt_parquet_batch *read_named(rt_parquet_file *f, const char *const *names, int n, int64_t first,
                                    int64_t rows)
{
    int cols[16];
    g_assert(n <= 16);
    for (int i = 0; i < n; i++) {
        cols[i] = rt_parquet_file_find_column(f, names[i]);
        if (cols[i] < 0) {
            printf("# no column %s\n", names[i]);
            return NULL;
        }
    }
    GError *error = NULL;
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, n, first, rows, &error);
    if (!b) {
        printf("# read failed: %s\n", error->message);
        g_clear_error(&error);
    }
    return b;
}

static const float *floats(const rt_parquet_array *a)
{
    return a->values;
}
static const double *doubles(const rt_parquet_array *a)
{
    return a->values;
}
static const int64_t *int64s(const rt_parquet_array *a)
{
    return a->values;
}
static const int32_t *int32s(const rt_parquet_array *a)
{
    return a->values;
}
static const uint8_t *bools(const rt_parquet_array *a)
{
    return a->values;
}

static gboolean string_is(const rt_parquet_array *a, int64_t i, const char *s)
{
    int64_t len = a->offsets[i + 1] - a->offsets[i];
    return rt_parquet_array_is_valid(a, i) && len == (int64_t)strlen(s) &&
           memcmp(a->data + a->offsets[i], s, (size_t)len) == 0;
}

/* ---------------------------------------------------------------- tiny-v3 */

static const char *const tiny_columns[] = {"observation.state", "action", "timestamp", "frame_index",
                                           "episode_index",     "index",  "task_index"};

/* Checks a batch of the 7 tiny_columns against the closed form; returns the number of bad
 * values (printing the first). */
static int tiny_mismatches(const rt_parquet_batch *b)
{
    int bad = 0;
    const rt_parquet_array *st = &b->arrays[0], *ac = &b->arrays[1], *ts = &b->arrays[2];
    if (st->list_size != 2 || ac->list_size != 2 || st->num_values != 2 * b->num_rows) {
        printf("# list sizes %" PRId64 " %" PRId64 "\n", st->list_size, ac->list_size);
        return 1;
    }
    for (int64_t r = 0; r < b->num_rows; r++) {
        int64_t g = b->first_row + r, e = g / 20, f = g % 20;
        float sx = (float)(100 * e + 0.25 * f), sy = (float)-(100 * e + 0.5 * f);
        float want[] = {sx, sy, sx + 0.125f, sy - 0.125f, (float)((double)f / 10.0)};
        float got[] = {floats(st)[2 * r], floats(st)[2 * r + 1], floats(ac)[2 * r], floats(ac)[2 * r + 1],
                       floats(ts)[r]};
        int64_t iwant[] = {f, e, 20 * e + f, 0};
        for (int k = 0; k < 5; k++)
            if (got[k] != want[k] && bad++ == 0)
                printf("# row %" PRId64 " float %d: %.9g, expected %.9g\n", g, k, got[k], want[k]);
        for (int k = 0; k < 4; k++)
            if (int64s(&b->arrays[3 + k])[r] != iwant[k] && bad++ == 0)
                printf("# row %" PRId64 " int %d: %" PRId64 ", expected %" PRId64 "\n", g, k,
                       int64s(&b->arrays[3 + k])[r], iwant[k]);
    }
    for (int k = 0; k < 7; k++)
        if ((b->arrays[k].valid || b->arrays[k].list_valid) && bad++ == 0)
            printf("# column %d has nulls\n", k);
    return bad;
}

DEF_TEST(tiny_v3_schema_and_metadata)
{
    rt_parquet_file *f = open_fixture("data/parquet/tiny-v3/data-file-000.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(40, rt_parquet_file_num_rows(f));
    EXPECT_EQ_INT(2, rt_parquet_file_num_row_groups(f));
    EXPECT_EQ_INT(20, rt_parquet_file_row_group_num_rows(f, 1));
    EXPECT_EQ_INT(20, rt_parquet_file_row_group_first_row(f, 1));
    EXPECT_EQ_INT(7, rt_parquet_file_num_columns(f));
    const rt_parquet_column *state = rt_parquet_file_column(f, 0);
    EXPECT_EQ_STR("observation.state.list.element", state->path);
    EXPECT_EQ_STR("observation.state", state->name);
    EXPECT_EQ_INT(RT_PARQUET_FLOAT, state->physical);
    EXPECT_EQ_INT(RT_PARQUET_LIST, state->shape);
    EXPECT_EQ_INT(3, state->max_definition_level);
    EXPECT_EQ_INT(1, state->max_repetition_level);
    OK(state->nullable && state->list_nullable);
    /* ARROW:schema says FixedSizeList<float>[2] */
    EXPECT_EQ_INT(2, state->fixed_size);
    EXPECT_EQ_INT(0, rt_parquet_file_find_column(f, "observation.state"));
    EXPECT_EQ_INT(0, rt_parquet_file_find_column(f, "observation.state.list.element"));
    EXPECT_EQ_INT(6, rt_parquet_file_find_column(f, "task_index"));
    EXPECT_EQ_INT(-1, rt_parquet_file_find_column(f, "observation"));
    const rt_parquet_column *ts = rt_parquet_file_column(f, 2);
    EXPECT_EQ_INT(RT_PARQUET_SCALAR, ts->shape);
    EXPECT_EQ_INT(-1, ts->fixed_size);
    EXPECT_EQ_INT(RT_PARQUET_INT64, rt_parquet_file_column(f, 3)->physical);
    /* key/value metadata: LeRobot's two keys */
    EXPECT_EQ_INT(2, rt_parquet_file_num_metadata(f));
    EXPECT_EQ_STR("huggingface", rt_parquet_file_metadata_key(f, 0));
    EXPECT_EQ_STR("ARROW:schema", rt_parquet_file_metadata_key(f, 1));
    const char *hf = rt_parquet_file_metadata(f, "huggingface");
    OK(hf && g_str_has_prefix(hf, "{\"info\":{\"features\":{\"observation.state\""));
    OK(g_str_has_prefix(rt_parquet_file_metadata(f, "ARROW:schema"), "/////"));
    OK(rt_parquet_file_metadata(f, "pandas") == NULL);
    OK(g_str_has_prefix(rt_parquet_file_created_by(f), "parquet-wasm/arrow-rs"));
    rt_parquet_file_free(f);
    return 0;
}

DEF_TEST(tiny_v3_closed_form_values)
{
    rt_parquet_file *f = open_fixture("data/parquet/tiny-v3/data-file-000.parquet");
    OK(f != NULL);
    rt_parquet_batch *b = read_named(f, tiny_columns, 7, 0, 40);
    OK(b != NULL);
    EXPECT_EQ_INT(40, b->num_rows);
    EXPECT_EQ_INT(40, b->arrays[0].num_rows);
    EXPECT_EQ_INT(80, b->arrays[0].num_values);
    EXPECT_EQ_INT(0, b->arrays[0].list_offsets[0]);
    EXPECT_EQ_INT(80, b->arrays[0].list_offsets[40]);
    EXPECT_EQ_INT(0, tiny_mismatches(b));
    /* spot values written out, independent of the checker above */
    EXPECT_NEAR(104.75, floats(&b->arrays[0])[78], 0);
    EXPECT_NEAR(-109.5, floats(&b->arrays[0])[79], 0);
    EXPECT_NEAR(104.875, floats(&b->arrays[1])[78], 0);
    EXPECT_NEAR((float)1.9, floats(&b->arrays[2])[39], 0);
    EXPECT_EQ_INT(39, int64s(&b->arrays[5])[39]);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

/* Each variant is read independently and compared value by value with the main file. */
DEF_TEST(tiny_v3_variants_give_identical_rows)
{
    static const char *const variants[] = {"data-zstd-pagev2.parquet", "data-plain-uncompressed.parquet",
                                           "data-duckdb.parquet"};
    rt_parquet_file *main_file = open_fixture("data/parquet/tiny-v3/data-file-000.parquet");
    OK(main_file != NULL);
    rt_parquet_batch *ref = read_named(main_file, tiny_columns, 7, 0, 40);
    OK(ref != NULL);
    for (size_t v = 0; v < G_N_ELEMENTS(variants); v++) {
        char *rel = g_strconcat("data/parquet/tiny-v3/", variants[v], NULL);
        rt_parquet_file *f = open_fixture(rel);
        g_free(rel);
        OK1(f != NULL, variants[v]);
        EXPECT_EQ_INT(40, rt_parquet_file_num_rows(f));
        rt_parquet_batch *b = read_named(f, tiny_columns, 7, 0, 40);
        OK1(b != NULL, variants[v]);
        int same = 1;
        for (int k = 0; k < 7; k++) {
            const rt_parquet_array *x = &ref->arrays[k], *y = &b->arrays[k];
            size_t w = k < 3 ? sizeof(float) : sizeof(int64_t);
            same &= x->num_values == y->num_values && x->num_rows == y->num_rows &&
                    memcmp(x->values, y->values, w * (size_t)x->num_values) == 0;
            if (k < 2)
                same &= memcmp(x->list_offsets, y->list_offsets,
                               sizeof(int64_t) * (size_t)(x->num_rows + 1)) == 0;
        }
        OK1(same, variants[v]);
        EXPECT_EQ_INT(0, tiny_mismatches(b));
        rt_parquet_batch_free(b);
        rt_parquet_file_free(f);
    }
    rt_parquet_batch_free(ref);
    rt_parquet_file_free(main_file);
    return 0;
}

DEF_TEST(tiny_v3_row_ranges_and_row_groups)
{
    static const char *const files[] = {"data/parquet/tiny-v3/data-file-000.parquet",
                                        "data/parquet/tiny-v3/data-zstd-pagev2.parquet",
                                        "data/parquet/tiny-v3/data-duckdb.parquet"};
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        rt_parquet_file *f = open_fixture(files[i]);
        OK(f != NULL);
        /* across the boundary of the two row groups */
        rt_parquet_batch *b = read_named(f, tiny_columns, 7, 15, 10);
        OK1(b != NULL, files[i]);
        EXPECT_EQ_INT(15, b->first_row);
        EXPECT_EQ_INT(10, b->arrays[0].num_rows);
        EXPECT_EQ_INT(20, b->arrays[0].num_values);
        EXPECT_EQ_INT(0, tiny_mismatches(b));
        EXPECT_EQ_INT(15, int64s(&b->arrays[5])[0]);
        rt_parquet_batch_free(b);
        /* the last row alone, and no rows */
        b = read_named(f, tiny_columns, 7, 39, 1);
        OK(b != NULL);
        EXPECT_EQ_INT(0, tiny_mismatches(b));
        EXPECT_EQ_INT(39, int64s(&b->arrays[5])[0]);
        rt_parquet_batch_free(b);
        b = read_named(f, tiny_columns, 7, 40, 0);
        OK(b != NULL);
        EXPECT_EQ_INT(0, b->arrays[0].num_rows);
        EXPECT_EQ_INT(0, b->arrays[3].num_values);
        rt_parquet_batch_free(b);
        rt_parquet_file_free(f);
    }
    /* one whole row group */
    rt_parquet_file *f = open_fixture(files[0]);
    int cols[7];
    for (int k = 0; k < 7; k++)
        cols[k] = rt_parquet_file_find_column(f, tiny_columns[k]);
    GError *error = NULL;
    rt_parquet_batch *b = rt_parquet_file_read_row_group(f, 1, cols, 7, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(20, b->first_row);
    EXPECT_EQ_INT(20, b->num_rows);
    EXPECT_EQ_INT(0, tiny_mismatches(b));
    EXPECT_EQ_INT(1, int64s(&b->arrays[4])[0]);
    rt_parquet_batch_free(b);
    OK(rt_parquet_file_read_row_group(f, 2, cols, 7, &error) == NULL);
    EXPECT_ERROR(error, "row group 2 is out of range (the file has 2)");
    rt_parquet_file_free(f);
    return 0;
}

/* Reading a projection touches no other column: their pages are never decoded. */
DEF_TEST(projection_decodes_only_requested_columns)
{
    rt_parquet_file *f = open_fixture("data/parquet/tiny-v3/data-file-000.parquet");
    OK(f != NULL);
    int64_t after_open = rt_parquet_file_bytes_read(f);
    int ts = rt_parquet_file_find_column(f, "timestamp");
    for (int k = 0; k < rt_parquet_file_num_columns(f); k++)
        EXPECT_EQ_INT(0, rt_parquet_file_pages_decoded(f, k));
    GError *error = NULL;
    rt_parquet_batch *b = rt_parquet_file_read(f, &ts, 1, 0, 40, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_NEAR((float)0.7, floats(&b->arrays[0])[7], 0);
    rt_parquet_batch_free(b);
    /* a dictionary page and a data page in each of the two row groups */
    EXPECT_EQ_INT(4, rt_parquet_file_pages_decoded(f, ts));
    for (int k = 0; k < rt_parquet_file_num_columns(f); k++)
        if (k != ts)
            EXPECT_EQ_INT(0, rt_parquet_file_pages_decoded(f, k));
    /* only the timestamp chunks were read: far less than the file */
    int64_t read = rt_parquet_file_bytes_read(f) - after_open;
    OK(read > 0 && read < 1000);
    rt_parquet_file_free(f);
    return 0;
}

/* Pages wholly before the requested rows are skipped without decoding. parquet-testing's
 * int32_with_null_pages has ten pages of 100 rows (int32_with_null_pages.md). */
DEF_TEST(row_window_skips_pages)
{
    rt_parquet_file *f = open_fixture("data/parquet/parquet-testing/int32_with_null_pages.parquet");
    OK(f != NULL);
    int col = 0;
    GError *error = NULL;
    rt_parquet_batch *tail = rt_parquet_file_read(f, &col, 1, 950, 50, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(1, rt_parquet_file_pages_decoded(f, 0));
    rt_parquet_batch *all = rt_parquet_file_read(f, &col, 1, 0, 1000, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(11, rt_parquet_file_pages_decoded(f, 0));
    int same = 1;
    for (int64_t i = 0; i < 50; i++) {
        same &= rt_parquet_array_is_valid(&tail->arrays[0], i) ==
                rt_parquet_array_is_valid(&all->arrays[0], 950 + i);
        if (rt_parquet_array_is_valid(&tail->arrays[0], i))
            same &= int32s(&tail->arrays[0])[i] == int32s(&all->arrays[0])[950 + i];
    }
    OK(same);
    rt_parquet_batch_free(tail);
    rt_parquet_batch_free(all);
    rt_parquet_file_free(f);
    return 0;
}

DEF_TEST(tiny_v3_tasks_and_episodes)
{
    rt_parquet_file *f = open_fixture("data/parquet/tiny-v3/tasks.parquet");
    OK(f != NULL);
    static const char *const task_cols[] = {"task_index", "task"};
    rt_parquet_batch *b = read_named(f, task_cols, 2, 0, 1);
    OK(b != NULL);
    EXPECT_EQ_INT(0, int64s(&b->arrays[0])[0]);
    EXPECT_EQ_INT(RT_PARQUET_LOGICAL_STRING, rt_parquet_file_column(f, 1)->logical);
    OK(string_is(&b->arrays[1], 0, "Move the block to the target."));
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    f = open_fixture("data/parquet/tiny-v3/episodes-file-000.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(93, rt_parquet_file_num_columns(f));
    static const char *const ep_cols[] = {"episode_index",
                                          "tasks",
                                          "length",
                                          "dataset_from_index",
                                          "dataset_to_index",
                                          "videos/observation.images.cam/from_timestamp",
                                          "videos/observation.images.cam/to_timestamp",
                                          "stats/observation.state/min",
                                          "stats/observation.state/max",
                                          "data/file_index"};
    b = read_named(f, ep_cols, 10, 0, 2);
    OK(b != NULL);
    for (int e = 0; e < 2; e++) {
        EXPECT_EQ_INT(e, int64s(&b->arrays[0])[e]);
        EXPECT_EQ_INT(20, int64s(&b->arrays[2])[e]);
        EXPECT_EQ_INT(20 * e, int64s(&b->arrays[3])[e]);
        EXPECT_EQ_INT(20 * e + 20, int64s(&b->arrays[4])[e]);
        EXPECT_NEAR(2.0 * e, doubles(&b->arrays[5])[e], 0);
        EXPECT_NEAR(2.0 * e + 2, doubles(&b->arrays[6])[e], 0);
        /* per-episode min/max of the closed-form state over f = 0..19 */
        EXPECT_NEAR(100 * e, doubles(&b->arrays[7])[2 * e], 0);
        EXPECT_NEAR(-(100 * e + 9.5), doubles(&b->arrays[7])[2 * e + 1], 0);
        EXPECT_NEAR(100 * e + 4.75, doubles(&b->arrays[8])[2 * e], 0);
        EXPECT_NEAR(-(100 * e), doubles(&b->arrays[8])[2 * e + 1], 0);
        EXPECT_EQ_INT(0, int64s(&b->arrays[9])[e]);
    }
    /* tasks: list<string> with one task per episode */
    const rt_parquet_array *tasks = &b->arrays[1];
    EXPECT_EQ_INT(1, tasks->list_size);
    OK(string_is(tasks, 0, "Move the block to the target."));
    OK(string_is(tasks, 1, "Move the block to the target."));
    rt_parquet_batch_free(b);

    /* the image stats are list<list<list<double>>>: described, refused when read */
    int nested = -1;
    for (int k = 0; k < rt_parquet_file_num_columns(f) && nested < 0; k++)
        if (rt_parquet_file_column(f, k)->shape == RT_PARQUET_NESTED)
            nested = k;
    OK(nested >= 0);
    const rt_parquet_column *nc = rt_parquet_file_column(f, nested);
    OK(g_str_has_prefix(nc->name, "stats/observation.images.cam/"));
    EXPECT_EQ_INT(3, nc->max_repetition_level);
    GError *error = NULL;
    OK(rt_parquet_file_read(f, &nested, 1, 0, 2, &error) == NULL);
    OK(error && error->code == RT_ERROR_UNSUPPORTED && strstr(error->message, nc->path));
    EXPECT_ERROR(error, "has 3 repeated levels (lists of lists)");
    rt_parquet_file_free(f);
    return 0;
}

/* ---------------------------------------------------------------- real v2.1 */

static JsonObject *stats_of(JsonParser *parser, const char *feature)
{
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    return json_object_get_object_member(json_object_get_object_member(root, "stats"), feature);
}

/* Compares per-dimension min/max (exact: both are float32 values) and mean (to 1e-5: lerobot
 * averages in float32) of a D-vector column with lerobot's episode stats. */
static int vector_stats_mismatches(const rt_parquet_array *a, int64_t d, JsonObject *stats)
{
    JsonArray *mins = json_object_get_array_member(stats, "min");
    JsonArray *maxs = json_object_get_array_member(stats, "max");
    JsonArray *means = json_object_get_array_member(stats, "mean");
    int bad = 0;
    if ((int64_t)json_array_get_length(mins) != d)
        return 1;
    for (int64_t j = 0; j < d; j++) {
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        for (int64_t r = 0; r < a->num_rows; r++) {
            double v = floats(a)[r * d + j];
            lo = MIN(lo, v);
            hi = MAX(hi, v);
            sum += v;
        }
        double mean = sum / (double)a->num_rows;
        if (lo != json_array_get_double_element(mins, (guint)j) ||
            hi != json_array_get_double_element(maxs, (guint)j) ||
            fabs(mean - json_array_get_double_element(means, (guint)j)) > 1e-5) {
            if (bad++ == 0)
                printf("# dimension %" PRId64 ": min %.9g max %.9g mean %.9g\n", j, lo, hi, mean);
        }
    }
    return bad;
}

DEF_TEST(real_v21_episode)
{
    rt_parquet_file *f = open_fixture("data/parquet/real-v2.1/episode_000029.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(221, rt_parquet_file_num_rows(f));
    OK(g_str_has_prefix(rt_parquet_file_created_by(f), "parquet-cpp-arrow version 21.0.0"));
    OK(rt_parquet_file_metadata(f, "huggingface") != NULL);
    EXPECT_EQ_INT(26, rt_parquet_file_column(f, 0)->fixed_size);
    rt_parquet_batch *b = read_named(f, tiny_columns, 7, 0, 221);
    OK(b != NULL);
    EXPECT_EQ_INT(26, b->arrays[0].list_size);
    EXPECT_EQ_INT(26, b->arrays[1].list_size);
    int bad = 0;
    for (int64_t r = 0; r < 221; r++) {
        /* frame_index 0..n-1, timestamp = frame_index / fps (30) in float32, index global
         * from 10640 (meta/episodes.jsonl: episodes 0..28 hold 10640 frames) */
        bad += int64s(&b->arrays[3])[r] != r;
        bad += floats(&b->arrays[2])[r] != (float)((double)r / 30.0);
        bad += int64s(&b->arrays[4])[r] != 29;
        bad += int64s(&b->arrays[5])[r] != 10640 + r;
        bad += int64s(&b->arrays[6])[r] != 0;
    }
    EXPECT_EQ_INT(0, bad);

    char *path = rt_test_srcfile("data/parquet/real-v2.1/episode_000029_stats.json");
    JsonParser *parser = json_parser_new();
    GError *error = NULL;
    json_parser_load_from_file(parser, path, &error);
    EXPECT_NO_ERROR(error);
    g_free(path);
    EXPECT_EQ_INT(0, vector_stats_mismatches(&b->arrays[0], 26, stats_of(parser, "observation.state")));
    EXPECT_EQ_INT(0, vector_stats_mismatches(&b->arrays[1], 26, stats_of(parser, "action")));
    /* one value written out: observation.state[0] minimum of the episode */
    double min0 = json_array_get_double_element(
        json_object_get_array_member(stats_of(parser, "observation.state"), "min"), 0);
    EXPECT_NEAR(-0.7866805195808411, min0, 0);
    g_object_unref(parser);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

/* ---------------------------------------------------------------- parquet-testing */

static rt_parquet_file *open_pt(const char *name)
{
    char *rel = g_strconcat("data/parquet/parquet-testing/", name, NULL);
    rt_parquet_file *f = open_fixture(rel);
    g_free(rel);
    return f;
}

static rt_parquet_batch *read_all_columns(rt_parquet_file *f)
{
    int n = rt_parquet_file_num_columns(f);
    int *cols = g_new(int, n);
    for (int i = 0; i < n; i++)
        cols[i] = i;
    GError *error = NULL;
    rt_parquet_batch *b = rt_parquet_file_read(f, cols, n, 0, rt_parquet_file_num_rows(f), &error);
    if (!b) {
        printf("# %s\n", error->message);
        g_clear_error(&error);
    }
    g_free(cols);
    return b;
}

/* INT96 timestamps: nanoseconds of the day (8 bytes LE), then the Julian day (4 bytes LE). */
static int64_t int96_unix_seconds(const rt_parquet_array *a, int64_t i)
{
    const uint8_t *p = (const uint8_t *)a->values + 12 * i;
    uint64_t nanos = 0;
    uint32_t day = 0;
    for (int k = 7; k >= 0; k--)
        nanos = nanos << 8 | p[k];
    for (int k = 11; k >= 8; k--)
        day = day << 8 | p[k];
    return ((int64_t)day - 2440588) * 86400 + (int64_t)(nanos / 1000000000u);
}

/* alltypes_plain*, alltypes_dictionary: rows as listed by DataFusion's and DuckDB's test
 * suites (id, bool, tinyint, smallint, int, bigint, float, double, date_string, string,
 * timestamp): even ids are (true, 0, ..., 0.0, "0"), odd ids (false, 1, 1, 1, 10, 1.1, 10.1,
 * "1"); ids 0,1: 01/01/09, 2,3: 02/01/09, 4,5: 03/01/09, 6,7: 04/01/09; timestamps are that
 * date at 00:00 for even ids and 00:01 for odd ids. */
static int alltypes_mismatches(rt_parquet_file *f, const int32_t *ids, int n)
{
    static const int64_t month_start[] = {1230768000, 1233446400, 1235865600, 1238544000};
    static const char *const dates[] = {"01/01/09", "02/01/09", "03/01/09", "04/01/09"};
    rt_parquet_batch *b = read_all_columns(f);
    if (!b || b->n_arrays != 11 || b->num_rows != n) {
        rt_parquet_batch_free(b);
        return 1;
    }
    int bad = 0;
    for (int r = 0; r < n; r++) {
        int32_t id = ids[r];
        int odd = id & 1;
        bad += int32s(&b->arrays[0])[r] != id;
        bad += bools(&b->arrays[1])[r] != !odd;
        for (int k = 2; k <= 4; k++)
            bad += int32s(&b->arrays[k])[r] != odd;
        bad += int64s(&b->arrays[5])[r] != 10 * odd;
        bad += floats(&b->arrays[6])[r] != (odd ? 1.1f : 0.0f);
        bad += doubles(&b->arrays[7])[r] != (odd ? 10.1 : 0.0);
        bad += !string_is(&b->arrays[8], r, dates[id / 2]);
        bad += !string_is(&b->arrays[9], r, odd ? "1" : "0");
        bad += int96_unix_seconds(&b->arrays[10], r) != month_start[id / 2] + 60 * odd;
        for (int k = 0; k < 11; k++)
            bad += b->arrays[k].valid != NULL;
    }
    rt_parquet_batch_free(b);
    return bad;
}

DEF_TEST(pt_alltypes)
{
    static const int32_t plain_ids[] = {4, 5, 6, 7, 2, 3, 0, 1};
    static const int32_t snappy_ids[] = {6, 7};
    static const int32_t dict_ids[] = {0, 1};
    rt_parquet_file *f = open_pt("alltypes_plain.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(RT_PARQUET_INT96, rt_parquet_file_column(f, 10)->physical);
    EXPECT_EQ_INT(12, rt_parquet_file_column(f, 10)->type_length);
    EXPECT_EQ_INT(0, alltypes_mismatches(f, plain_ids, 8));
    rt_parquet_file_free(f);
    f = open_pt("alltypes_plain.snappy.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(0, alltypes_mismatches(f, snappy_ids, 2));
    rt_parquet_file_free(f);
    f = open_pt("alltypes_dictionary.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(0, alltypes_mismatches(f, dict_ids, 2));
    rt_parquet_file_free(f);
    return 0;
}

/* list_columns: int64_list [[1, 2, 3], [null, 1], [4]], utf8_list [["abc", "efg", "hij"],
 * null, ["efg", null, "hij", "xyz"]] (the JSON the file was made from, as asserted by
 * aloksingh/parquet's ListTypeTest). */
DEF_TEST(pt_list_columns)
{
    rt_parquet_file *f = open_pt("list_columns.parquet");
    OK(f != NULL);
    rt_parquet_batch *b = read_all_columns(f);
    OK(b != NULL);
    const rt_parquet_array *ints = &b->arrays[0], *strs = &b->arrays[1];
    EXPECT_EQ_INT(3, ints->num_rows);
    static const int64_t int_offsets[] = {0, 3, 5, 6};
    for (int r = 0; r <= 3; r++)
        EXPECT_EQ_INT(int_offsets[r], ints->list_offsets[r]);
    OK(ints->list_valid == NULL);
    EXPECT_EQ_INT(-1, ints->list_size);
    EXPECT_EQ_INT(1, ints->null_count);
    static const int64_t int_values[] = {1, 2, 3, 0, 1, 4};
    for (int i = 0; i < 6; i++) {
        EXPECT_EQ_INT(i != 3, rt_parquet_array_is_valid(ints, i));
        EXPECT_EQ_INT(int_values[i], int64s(ints)[i]);
    }
    static const int64_t str_offsets[] = {0, 3, 3, 7};
    for (int r = 0; r <= 3; r++)
        EXPECT_EQ_INT(str_offsets[r], strs->list_offsets[r]);
    OK(strs->list_valid && strs->list_valid[0] && !strs->list_valid[1] && strs->list_valid[2]);
    EXPECT_EQ_INT(1, strs->null_list_count);
    static const char *const str_values[] = {"abc", "efg", "hij", "efg", NULL, "hij", "xyz"};
    for (int i = 0; i < 7; i++)
        OK(str_values[i] ? string_is(strs, i, str_values[i]) : !rt_parquet_array_is_valid(strs, i));
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

/* int32_with_null_pages (parquet-mr, 10 pages): 1000 rows, 275 nulls; values and null
 * positions as asserted by the Julia Parquet2 test suite against a pyarrow oracle. */
DEF_TEST(pt_int32_with_null_pages)
{
    static const int page_nulls[] = {8, 55, 100, 52, 16, 12, 5, 7, 8, 12};
    static const int first_nulls[] = {5, 14, 34, 47, 57, 67, 80, 83, 102, 116};
    rt_parquet_file *f = open_pt("int32_with_null_pages.parquet");
    OK(f != NULL);
    rt_parquet_batch *b = read_all_columns(f);
    OK(b != NULL);
    const rt_parquet_array *a = &b->arrays[0];
    EXPECT_EQ_INT(1000, a->num_values);
    EXPECT_EQ_INT(275, a->null_count);
    int64_t sum = 0, null_pos_sum = 0;
    int nulls_seen = 0, first_ok = 1;
    int per_page[10] = {0};
    for (int64_t i = 0; i < 1000; i++) {
        if (rt_parquet_array_is_valid(a, i)) {
            sum += int32s(a)[i];
            continue;
        }
        null_pos_sum += i + 1;
        per_page[i / 100]++;
        if (nulls_seen < 10)
            first_ok &= first_nulls[nulls_seen] == i + 1;
        nulls_seen++;
    }
    EXPECT_EQ_INT(-12383254597LL, sum);
    EXPECT_EQ_INT(92306, null_pos_sum);
    OK(first_ok);
    for (int p = 0; p < 10; p++)
        EXPECT_EQ_INT(page_nulls[p], per_page[p]);
    EXPECT_EQ_INT(-654807448, int32s(a)[0]);
    EXPECT_EQ_INT(-465559769, int32s(a)[1]);
    EXPECT_EQ_INT(-34563097, int32s(a)[2]);
    EXPECT_EQ_INT(398454479, int32s(a)[3]);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

/* datapage_v1-snappy-compressed-checksum: two required INT32 columns of 5120 values in two
 * SNAPPY pages each, with CRCs (parquet-testing README). Values: the Julia Parquet2 suite's
 * assertions for the same data in the uncompressed sibling file. */
DEF_TEST(pt_datapage_v1_checksum)
{
    rt_parquet_file *f = open_pt("datapage_v1-snappy-compressed-checksum.parquet");
    OK(f != NULL);
    rt_parquet_batch *b = read_all_columns(f);
    OK(b != NULL);
    const rt_parquet_array *a = &b->arrays[0], *c = &b->arrays[1];
    EXPECT_EQ_INT(5120, a->num_values);
    int64_t sa = 0, sb = 0;
    int32_t amin = INT32_MAX, amax = INT32_MIN, bmin = INT32_MAX, bmax = INT32_MIN;
    for (int i = 0; i < 5120; i++) {
        sa += int32s(a)[i];
        sb += int32s(c)[i];
        amin = MIN(amin, int32s(a)[i]);
        amax = MAX(amax, int32s(a)[i]);
        bmin = MIN(bmin, int32s(c)[i]);
        bmax = MAX(bmax, int32s(c)[i]);
    }
    EXPECT_EQ_INT(43118090240LL, sa);
    EXPECT_EQ_INT(129016125440LL, sb);
    EXPECT_EQ_INT(50462976, int32s(a)[0]);
    EXPECT_EQ_INT(252579084, int32s(a)[3]);
    EXPECT_EQ_INT(84281096, int32s(a)[5118]);
    EXPECT_EQ_INT(16909060, int32s(a)[5119]);
    EXPECT_EQ_INT(1734763876, int32s(c)[0]);
    EXPECT_EQ_INT(1802135912, int32s(c)[1]);
    EXPECT_EQ_INT(-1684366952, int32s(c)[5119]);
    EXPECT_EQ_INT(-2122153084, amin);
    EXPECT_EQ_INT(2138996092, amax);
    EXPECT_EQ_INT(-2088599168, bmin);
    EXPECT_EQ_INT(2138996092, bmax);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

/* datapage_v2.snappy (parquet-mr v2 pages): a = abc,abc,abc,null,abc; c = 2,3,4,5,2;
 * d = true,true,true,false,true (RLE booleans); e = [1,2,3], null, null, [1,2,3], [1,2]
 * (Julia Parquet2 suite; arrow-rs's reader tests); b uses DELTA_BINARY_PACKED. */
DEF_TEST(pt_datapage_v2)
{
    rt_parquet_file *f = open_pt("datapage_v2.snappy.parquet");
    OK(f != NULL);
    static const char *const names[] = {"a", "c", "d", "e"};
    rt_parquet_batch *b = read_named(f, names, 4, 0, 5);
    OK(b != NULL);
    for (int r = 0; r < 5; r++)
        OK(r == 3 ? !rt_parquet_array_is_valid(&b->arrays[0], r) : string_is(&b->arrays[0], r, "abc"));
    static const double c[] = {2, 3, 4, 5, 2};
    static const uint8_t d[] = {1, 1, 1, 0, 1};
    for (int r = 0; r < 5; r++) {
        EXPECT_NEAR(c[r], doubles(&b->arrays[1])[r], 0);
        EXPECT_EQ_INT(d[r], bools(&b->arrays[2])[r]);
    }
    const rt_parquet_array *e = &b->arrays[3];
    static const int64_t e_offsets[] = {0, 3, 3, 3, 6, 8};
    static const int32_t e_values[] = {1, 2, 3, 1, 2, 3, 1, 2};
    for (int r = 0; r <= 5; r++)
        EXPECT_EQ_INT(e_offsets[r], e->list_offsets[r]);
    OK(e->list_valid && e->list_valid[0] && !e->list_valid[1] && !e->list_valid[2] && e->list_valid[3] &&
       e->list_valid[4]);
    OK(memcmp(e->values, e_values, sizeof e_values) == 0);
    rt_parquet_batch_free(b);
    int col_b = rt_parquet_file_find_column(f, "b");
    GError *error = NULL;
    OK(rt_parquet_file_read(f, &col_b, 1, 0, 5, &error) == NULL);
    OK(error && error->code == RT_ERROR_UNSUPPORTED);
    EXPECT_ERROR(error, "column 'b': values use encoding DELTA_BINARY_PACKED (5)");
    rt_parquet_file_free(f);
    return 0;
}

/* Single-column files with documented contents (parquet-testing README and its notes, the
 * arrow-rs and Julia suites). */
DEF_TEST(pt_small_files)
{
    GError *error = NULL;
    int col = 0;
    rt_parquet_batch *b;

    /* 513 UINT64 numbers 1..513, GZIP with two concatenated members in one page */
    rt_parquet_file *f = open_pt("concatenated_gzip_members.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(RT_PARQUET_LOGICAL_INTEGER, rt_parquet_file_column(f, 0)->logical);
    EXPECT_EQ_INT(64, rt_parquet_file_column(f, 0)->int_bits);
    OK(!rt_parquet_file_column(f, 0)->int_signed);
    b = read_all_columns(f);
    OK(b != NULL);
    int bad = 0;
    for (int i = 0; i < 513; i++)
        bad += int64s(&b->arrays[0])[i] != i + 1;
    EXPECT_EQ_INT(0, bad);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* dictionary_page_offset = 0 in the metadata: 39 rows of l_partkey 1552 */
    f = open_pt("dict-page-offset-zero.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(39, b->arrays[0].num_values);
    bad = 0;
    for (int i = 0; i < 39; i++)
        bad += int32s(&b->arrays[0])[i] != 1552;
    EXPECT_EQ_INT(0, bad);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* v2 pages whose values are empty: ZSTD that decompresses to nothing (10 nulls), and a
     * SNAPPY page with no data bytes at all (1 null) */
    f = open_pt("page_v2_empty_compressed.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(10, b->arrays[0].num_values);
    EXPECT_EQ_INT(10, b->arrays[0].null_count);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    f = open_pt("datapage_v2_empty_datapage.snappy.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(1, b->arrays[0].null_count);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* pyarrow 0.8: x = [1.0, NaN] */
    f = open_pt("nan_in_stats.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_NEAR(1.0, doubles(&b->arrays[0])[0], 0);
    OK(isnan(doubles(&b->arrays[0])[1]));
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* written from pandas by pyarrow 0.14, which turns NaN into null: one null, as the
     * chunk's own statistics say (null_count 1) */
    f = open_pt("single_nan.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(1, b->arrays[0].null_count);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* {"emptylist": []}: one row holding an empty (not null) list */
    f = open_pt("null_list.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(1, b->arrays[0].num_rows);
    EXPECT_EQ_INT(0, b->arrays[0].num_values);
    OK(b->arrays[0].list_valid == NULL);
    EXPECT_EQ_INT(0, b->arrays[0].list_size);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* 8 rows of a null optional struct b_struct {b_c_int} */
    f = open_pt("nulls.snappy.parquet");
    OK(f != NULL);
    EXPECT_EQ_STR("b_struct.b_c_int", rt_parquet_file_column(f, 0)->path);
    EXPECT_EQ_INT(2, rt_parquet_file_column(f, 0)->max_definition_level);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(8, b->arrays[0].null_count);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* two row groups with the same rows: a INT64 nulls first, descending; b strings
     * ascending (parquet-testing README: sort_columns) */
    f = open_pt("sort_columns.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(2, rt_parquet_file_num_row_groups(f));
    b = read_all_columns(f);
    OK(b != NULL);
    for (int r = 0; r < 6; r++) {
        EXPECT_EQ_INT(r % 3 != 0, rt_parquet_array_is_valid(&b->arrays[0], r));
        if (r % 3)
            EXPECT_EQ_INT(3 - r % 3, int64s(&b->arrays[0])[r]);
        OK(string_is(&b->arrays[1], r, (const char *[]){"a", "b", "c"}[r % 3]));
    }
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* BYTE_STREAM_SPLIT + ZSTD, pyarrow: f32 = np.random.normal(size=300) after
     * np.random.seed(0) (parquet-testing README); numpy's first seed-0 normals are known */
    static const double seed0_normals[] = {1.764052345967664, 0.4001572083672233, 0.9787379841057392,
                                           2.240893199201458, 1.8675579901499675, -0.977277879876411};
    f = open_pt("byte_stream_split.zstd.parquet");
    OK(f != NULL);
    b = read_all_columns(f);
    OK(b != NULL);
    EXPECT_EQ_INT(300, b->arrays[0].num_values);
    for (int i = 0; i < 6; i++)
        EXPECT_NEAR((float)seed0_normals[i], floats(&b->arrays[0])[i], 0);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);

    /* dictionary pages with CRCs (checked), v1 PLAIN_DICTIONARY and v2 RLE_DICTIONARY */
    static const char *const dict_files[] = {"plain-dict-uncompressed-checksum.parquet",
                                             "rle-dict-snappy-checksum.parquet"};
    for (size_t i = 0; i < G_N_ELEMENTS(dict_files); i++) {
        f = open_pt(dict_files[i]);
        OK(f != NULL);
        b = read_all_columns(f);
        OK1(b != NULL, dict_files[i]);
        EXPECT_EQ_INT(1000, b->arrays[1].num_values);
        bad = 0;
        for (int r = 0; r < 1000; r++) /* UUID strings */
            bad += b->arrays[1].offsets[r + 1] - b->arrays[1].offsets[r] != 36 ||
                   b->arrays[1].data[b->arrays[1].offsets[r] + 8] != '-';
        EXPECT_EQ_INT(0, bad);
        rt_parquet_batch_free(b);
        rt_parquet_file_free(f);
    }

    /* features this reader refuses, with the feature named */
    f = open_pt("delta_length_byte_array.parquet");
    OK(f != NULL);
    OK(rt_parquet_file_read(f, &col, 1, 0, 10, &error) == NULL);
    EXPECT_ERROR(error, "values use encoding DELTA_LENGTH_BYTE_ARRAY (6), which this reader "
                        "does not support for BYTE_ARRAY columns");
    rt_parquet_file_free(f);
    f = open_pt("old_list_structure.parquet");
    OK(f != NULL);
    EXPECT_EQ_INT(RT_PARQUET_NESTED, rt_parquet_file_column(f, 0)->shape);
    OK(rt_parquet_file_read(f, &col, 1, 0, 1, &error) == NULL);
    EXPECT_ERROR(error, "column 'a.array.array' has 2 repeated levels");
    rt_parquet_file_free(f);
    /* nested_lists: 'a' is list<list<list<string>>>; the flat column b next to it reads */
    f = open_pt("nested_lists.snappy.parquet");
    OK(f != NULL);
    static const char *const bname[] = {"b"};
    b = read_named(f, bname, 1, 0, 3);
    OK(b != NULL);
    EXPECT_EQ_INT(1, int32s(&b->arrays[0])[2]);
    rt_parquet_batch_free(b);
    rt_parquet_file_free(f);
    return 0;
}

int main(void)
{
    RUN_TEST(tiny_v3_schema_and_metadata);
    RUN_TEST(tiny_v3_closed_form_values);
    RUN_TEST(tiny_v3_variants_give_identical_rows);
    RUN_TEST(tiny_v3_row_ranges_and_row_groups);
    RUN_TEST(projection_decodes_only_requested_columns);
    RUN_TEST(row_window_skips_pages);
    RUN_TEST(tiny_v3_tasks_and_episodes);
    RUN_TEST(real_v21_episode);
    RUN_TEST(pt_alltypes);
    RUN_TEST(pt_list_columns);
    RUN_TEST(pt_int32_with_null_pages);
    RUN_TEST(pt_datapage_v1_checksum);
    RUN_TEST(pt_datapage_v2);
    RUN_TEST(pt_small_files);
    END_TEST;
}
