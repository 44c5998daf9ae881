/* Normalization (against LeRobot's formulas written out here) and the loader threads (the same
 * batches whatever the thread count, in the sampler's order, resumable, errors reported). */
#include "config.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include <robotrain/error.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/normalize.h"
#include "data/sampler.h"
#include "testing.h"

static const char *const tiny_files[] = {
    "meta/info.json",
    "meta/stats.json",
    "meta/tasks.parquet",
    "meta/episodes/chunk-000/file-000.parquet",
    "data/chunk-000/file-000.parquet",
    "videos/observation.images.cam/chunk-000/file-000.mp4",
};

/* A copy of the tiny dataset in a new temporary folder; `edit` may change a file's bytes.
 * Returns (transfer full) the folder. */
static char *copy_tiny(void (*edit)(const char *rel, GString *bytes))
{
    g_autofree char *src = rt_test_srcfile("data/dataset/tiny-v3");
    char *dst = g_dir_make_tmp("rt-loader-XXXXXX", NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(tiny_files); i++) {
        g_autofree char *from = g_build_filename(src, tiny_files[i], NULL);
        g_autofree char *to = g_build_filename(dst, tiny_files[i], NULL);
        g_autofree char *dir = g_path_get_dirname(to);
        char *data = NULL;
        gsize len = 0;
        g_assert(g_file_get_contents(from, &data, &len, NULL));
        GString *bytes = g_string_new_len(data, (gssize)len);
        g_free(data);
        if (edit)
            edit(tiny_files[i], bytes);
        g_mkdir_with_parents(dir, 0755);
        g_assert(g_file_set_contents(to, bytes->str, (gssize)bytes->len, NULL));
        g_string_free(bytes, TRUE);
    }
    return dst;
}

static void remove_tree(const char *dir)
{
    for (size_t i = 0; i < G_N_ELEMENTS(tiny_files); i++) {
        g_autofree char *p = g_build_filename(dir, tiny_files[i], NULL);
        g_unlink(p);
    }
    static const char *const dirs[] = {"videos/observation.images.cam/chunk-000",
                                       "videos/observation.images.cam",
                                       "videos",
                                       "data/chunk-000",
                                       "data",
                                       "meta/episodes/chunk-000",
                                       "meta/episodes",
                                       "meta"};
    for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
        g_autofree char *p = g_build_filename(dir, dirs[i], NULL);
        g_rmdir(p);
    }
    g_rmdir(dir);
}

static rt_dataset *open_root(const char *root, GError **error)
{
    rt_dataset_options o;
    rt_dataset_options_init(&o);
    return rt_dataset_open(root, &o, error);
}

static rt_dataset *open_tiny(GError **error)
{
    g_autofree char *root = rt_test_srcfile("data/dataset/tiny-v3");
    return open_root(root, error);
}

/* ---------------------------------------------------------------- normalization */

DEF_TEST(mean_std_as_lerobot)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(&error);
    EXPECT_NO_ERROR(error);
    OK(rt_dataset_set_action_chunk(ds, 4, &error));
    rt_norm_map map;
    rt_norm_map_act(&map);
    rt_normalizer *norm = rt_normalizer_new(ds, &map, &error);
    EXPECT_NO_ERROR(error);
    int fs = rt_dataset_feature_index(ds, "observation.state"),
        fc = rt_dataset_feature_index(ds, "observation.images.cam");
    EXPECT_EQ_INT(RT_NORM_MEAN_STD, rt_normalizer_mode(norm, fs));
    EXPECT_EQ_INT(RT_NORM_MEAN_STD, rt_normalizer_mode(norm, fc));
    EXPECT_EQ_INT(RT_NORM_IDENTITY, rt_normalizer_mode(norm, rt_dataset_feature_index(ds, "timestamp")));

    rt_batch_layout *layout = rt_batch_layout_new(ds, 2);
    rt_dataset_reader *reader = rt_dataset_reader_new(ds, 1);
    rt_batch *raw = rt_batch_new(layout, NULL), *b = rt_batch_new(layout, NULL);
    for (int s = 0; s < 2; s++) {
        OK(rt_dataset_reader_fill(reader, s ? 39 : 5, raw, s, &error));
        OK(rt_dataset_reader_fill(reader, s ? 39 : 5, b, s, &error));
    }
    raw->size = b->size = 2;
    rt_normalizer_apply_batch(norm, b);
    /* state: (x - mean) / (std + 1e-8) in float32, with stats.json's numbers rounded to float32 */
    int ls = rt_batch_layout_find(layout, "observation.state");
    const float *xs = rt_batch_field_data(raw, ls), *ys = rt_batch_field_data(b, ls);
    const float mean[2] = {52.375f, -54.75f};
    const float stdv[2] = {(float)50.02077693319047, (float)50.083056016980436};
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        float want = (xs[i] - mean[i % 2]) / (stdv[i % 2] + 1e-8f);
        bad += ys[i] != want;
    }
    EXPECT_EQ_INT(0, bad);
    EXPECT_NEAR((104.75 - 52.375) / 50.02077693319047, ys[2], 1e-6);
    /* the action window: every step with the action's stats, padded steps too */
    int la = rt_batch_layout_find(layout, "action");
    const float *xa = rt_batch_field_data(raw, la), *ya = rt_batch_field_data(b, la);
    for (int i = 0; i < 16; i++)
        bad += ya[i] != (xa[i] - (i % 2 ? -54.875f : 52.5f)) /
                            ((float)(i % 2 ? 50.083056016980436 : 50.02077693319047) + 1e-8f);
    EXPECT_EQ_INT(0, bad);
    /* the camera with ImageNet's stats, per channel */
    int lc = rt_batch_layout_find(layout, "observation.images.cam");
    const float *xc = rt_batch_field_data(raw, lc), *yc = rt_batch_field_data(b, lc);
    static const float im_mean[3] = {0.485f, 0.456f, 0.406f}, im_std[3] = {0.229f, 0.224f, 0.225f};
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < 96 * 96; p += 97) {
                size_t i = (size_t)s * 3 * 96 * 96 + (size_t)c * 96 * 96 + (size_t)p;
                bad += yc[i] != (xc[i] - im_mean[c]) / (im_std[c] + 1e-8f);
            }
    EXPECT_EQ_INT(0, bad);
    /* integers and pads are left alone */
    int li = rt_batch_layout_find(layout, "index");
    EXPECT_EQ_INT(39, ((const int64_t *)rt_batch_field_data(b, li))[1]);
    EXPECT_EQ_INT(1, ((const uint8_t *)rt_batch_field_data(b, la + 1))[7]);
    /* the inverse gives the action back (LeRobot's unnormalizer: y * std + mean) */
    float back[16];
    memcpy(back, ya, sizeof back);
    rt_normalizer_apply_f32(norm, rt_dataset_feature_index(ds, "action"), back, 8, TRUE);
    for (int i = 0; i < 16; i++)
        bad += fabsf(back[i] - xa[i]) > 1e-4f;
    EXPECT_EQ_INT(0, bad);
    rt_batch_free(raw);
    rt_batch_free(b);
    rt_normalizer_free(norm);

    /* MIN_MAX: the state's extremes map to -1 and 1 */
    map.mode[RT_FEATURE_TYPE_STATE] = RT_NORM_MIN_MAX;
    norm = rt_normalizer_new(ds, &map, &error);
    EXPECT_NO_ERROR(error);
    float st[4] = {0, -109.5f, 104.75f, 0};
    rt_normalizer_apply_f32(norm, fs, st, 2, FALSE);
    EXPECT_NEAR(-1, st[0], 0);
    EXPECT_NEAR(-1, st[1], 0);
    EXPECT_NEAR(1, st[2], 0);
    EXPECT_NEAR(1, st[3], 0);
    rt_normalizer_free(norm);
    /* QUANTILES with q01/q99 from stats.json */
    map.mode[RT_FEATURE_TYPE_STATE] = RT_NORM_QUANTILES;
    norm = rt_normalizer_new(ds, &map, &error);
    EXPECT_NO_ERROR(error);
    float q[2] = {(float)-1e-10, (float)-109.5000000001};
    rt_normalizer_apply_f32(norm, fs, q, 1, FALSE);
    EXPECT_NEAR(-1, q[0], 1e-6);
    rt_normalizer_free(norm);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);

    rt_norm_mode m;
    OK(rt_norm_mode_from_name("QUANTILE10", &m) && m == RT_NORM_QUANTILE10);
    OK(!rt_norm_mode_from_name("mean_std", &m));
    EXPECT_EQ_STR("MEAN_STD", rt_norm_mode_name(RT_NORM_MEAN_STD));
    return 0;
}

/* stats.json without any quantile */
static void drop_quantiles(const char *rel, GString *bytes)
{
    if (strcmp(rel, "meta/stats.json") != 0)
        return;
    JsonParser *p = json_parser_new();
    g_assert(json_parser_load_from_data(p, bytes->str, (gssize)bytes->len, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(p));
    GList *features = json_object_get_members(root);
    for (GList *l = features; l; l = l->next) {
        JsonObject *o = json_object_get_object_member(root, l->data);
        static const char *const q[] = {"q01", "q10", "q50", "q90", "q99"};
        for (size_t i = 0; i < G_N_ELEMENTS(q); i++)
            json_object_remove_member(o, q[i]);
    }
    g_list_free(features);
    g_autofree char *text = json_to_string(json_parser_get_root(p), FALSE);
    g_string_assign(bytes, text);
    g_object_unref(p);
}

DEF_TEST(missing_stats_are_named)
{
    g_autofree char *root = copy_tiny(drop_quantiles);
    GError *error = NULL;
    rt_dataset *ds = open_root(root, &error);
    EXPECT_NO_ERROR(error);
    rt_norm_map map;
    rt_norm_map_act(&map);
    map.mode[RT_FEATURE_TYPE_ACTION] = RT_NORM_QUANTILE10;
    OK(rt_normalizer_new(ds, &map, &error) == NULL);
    EXPECT_ERROR(error,
                 "QUANTILE10 normalization of \"action\" needs its q10 and q90, which the dataset's stats "
                 "do not have");
    rt_dataset_free(ds);
    remove_tree(root);
    return 0;
}

/* ---------------------------------------------------------------- the loader */

typedef struct {
    int allocs, frees;
} counting;

static void *count_alloc(size_t bytes, void *user)
{
    ((counting *)user)->allocs++;
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
}

static void count_free(void *block, void *user)
{
    ((counting *)user)->frees++;
    free(block);
}

/* Runs `steps` batches with `workers` threads; returns (transfer full) their blocks, back to
 * back, and checks each against the sampler and the closed form. */
static guint8 *run_loader(int workers, int64_t start_epoch, int64_t start_batch, int steps, int *bad)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(&error);
    g_assert_no_error(error);
    g_assert(rt_dataset_set_action_chunk(ds, 10, &error));
    rt_sampler_options so;
    rt_sampler_options_init(&so);
    so.num_items = rt_dataset_num_frames(ds);
    so.batch_size = 6; /* 40 items: 7 batches per epoch, the last of 4 */
    rt_sampler *sampler = rt_sampler_new(&so, &error);
    rt_sampler *check = rt_sampler_new(&so, &error);
    rt_norm_map map;
    rt_norm_map_act(&map);
    rt_normalizer *norm = rt_normalizer_new(ds, &map, &error);
    counting c = {0, 0};
    rt_loader_options lo;
    rt_loader_options_init(&lo);
    lo.num_workers = workers;
    lo.start_epoch = start_epoch;
    lo.start_batch = start_batch;
    lo.normalizer = norm;
    lo.alloc = count_alloc;
    lo.free = count_free;
    lo.alloc_user = &c;
    rt_loader *l = rt_loader_new(ds, sampler, &lo, &error);
    g_assert_no_error(error);
    const rt_batch_layout *layout = rt_loader_layout(l);
    size_t bytes = rt_batch_layout_bytes(layout);
    guint8 *out = g_malloc0(bytes * (size_t)steps);
    int ls = rt_batch_layout_find(layout, "observation.state");
    for (int k = 0; k < steps; k++) {
        rt_batch *b = rt_loader_next(l, &error);
        g_assert_no_error(error);
        int64_t pos = start_batch + k, e = start_epoch + pos / 7, bn = pos % 7;
        int64_t want[6];
        int64_t n = rt_sampler_batch(check, e, bn, want);
        *bad += b->epoch != e || b->batch != bn || b->size != n;
        for (int64_t i = 0; i < n; i++) {
            *bad += b->items[i] != want[i];
            /* the normalized state of the item, from the closed form */
            int64_t ep = want[i] / 20, f = want[i] % 20;
            float x = (float)(100 * ep) + 0.25f * (float)f;
            float y = (x - 52.375f) / ((float)50.02077693319047 + 1e-8f);
            *bad += ((const float *)rt_batch_field_data(b, ls))[2 * i] != y;
        }
        memcpy(out + bytes * (size_t)k, b->data, bytes);
        rt_loader_release(l, b);
    }
    rt_loader_stats st;
    rt_loader_get_stats(l, &st);
    *bad += st.batches != steps || st.wait_s < 0 || st.last_wait_s < 0 || st.fill_s <= 0;
    int depth = c.allocs;
    rt_loader_free(l);
    *bad += c.frees != depth || depth != MAX(2, 2 * workers);
    rt_normalizer_free(norm);
    rt_sampler_free(sampler);
    rt_sampler_free(check);
    rt_dataset_free(ds);
    return out;
}

DEF_TEST(loader_same_batches_for_any_thread_count)
{
    int bad = 0;
    const int steps = 16; /* more than two epochs */
    guint8 *sync = run_loader(0, 0, 0, steps, &bad);
    EXPECT_EQ_INT(0, bad);
    guint8 *one = run_loader(1, 0, 0, steps, &bad);
    EXPECT_EQ_INT(0, bad);
    guint8 *two = run_loader(2, 0, 0, steps, &bad);
    EXPECT_EQ_INT(0, bad);
    guint8 *three = run_loader(3, 0, 0, steps, &bad);
    EXPECT_EQ_INT(0, bad);
    GError *error = NULL;
    rt_dataset *ds = open_tiny(&error);
    g_assert(rt_dataset_set_action_chunk(ds, 10, &error));
    rt_batch_layout *layout = rt_batch_layout_new(ds, 6);
    size_t bytes = rt_batch_layout_bytes(layout);
    OK(memcmp(sync, one, bytes * steps) == 0);
    OK(memcmp(sync, two, bytes * steps) == 0);
    OK(memcmp(sync, three, bytes * steps) == 0);
    /* resumed at epoch 1, batch 2 (step 9): the same blocks as steps 9.. of the full run */
    guint8 *resumed = run_loader(2, 1, 2, steps - 9, &bad);
    EXPECT_EQ_INT(0, bad);
    OK(memcmp(resumed, sync + bytes * 9, bytes * (steps - 9)) == 0);
    g_free(sync);
    g_free(one);
    g_free(two);
    g_free(three);
    g_free(resumed);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);
    return 0;
}

DEF_TEST(loader_holds_at_most_depth)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(&error);
    rt_sampler_options so;
    rt_sampler_options_init(&so);
    so.num_items = 40;
    rt_sampler *sampler = rt_sampler_new(&so, &error);
    rt_loader_options lo;
    rt_loader_options_init(&lo);
    lo.num_workers = 1;
    lo.depth = 2;
    rt_loader *l = rt_loader_new(ds, sampler, &lo, &error);
    EXPECT_NO_ERROR(error);
    rt_batch *a = rt_loader_next(l, &error), *b = rt_loader_next(l, &error);
    OK(a && b && a != b);
    OK(rt_loader_next(l, &error) == NULL);
    EXPECT_ERROR(error, "all 2 batches of the loader are held; release one before asking for the next");
    rt_loader_release(l, a);
    rt_batch *c = rt_loader_next(l, &error);
    EXPECT_NO_ERROR(error);
    OK(c == a); /* the block is recycled */
    EXPECT_EQ_INT(2, c->batch);
    rt_loader_release(l, b);
    rt_loader_release(l, c);
    rt_loader_free(l);
    /* a sampler for another dataset size */
    so.num_items = 41;
    rt_sampler *wrong = rt_sampler_new(&so, &error);
    OK(rt_loader_new(ds, wrong, &lo, &error) == NULL);
    EXPECT_ERROR(error, "the sampler draws from 41 items but the dataset has 40");
    rt_sampler_free(wrong);
    rt_sampler_free(sampler);
    rt_dataset_free(ds);
    return 0;
}

/* The mp4 cut short after its header: episode 1's frames are gone. */
static void truncate_video(const char *rel, GString *bytes)
{
    if (g_str_has_suffix(rel, ".mp4"))
        g_string_truncate(bytes, bytes->len / 2);
}

DEF_TEST(loader_reports_decode_errors)
{
    g_autofree char *root = copy_tiny(truncate_video);
    GError *error = NULL;
    rt_dataset *ds = open_root(root, &error);
    EXPECT_NO_ERROR(error);
    rt_sampler_options so;
    rt_sampler_options_init(&so);
    so.num_items = 40;
    so.batch_size = 40;
    so.shuffle = FALSE;
    rt_sampler *sampler = rt_sampler_new(&so, &error);
    for (int workers = 0; workers <= 2; workers += 2) {
        rt_loader_options lo;
        rt_loader_options_init(&lo);
        lo.num_workers = workers;
        rt_loader *l = rt_loader_new(ds, sampler, &lo, &error);
        EXPECT_NO_ERROR(error);
        OK(rt_loader_next(l, &error) == NULL);
        OK(error != NULL);
        printf("# %s\n", error->message);
        OK(strstr(error->message, "camera observation.images.cam") != NULL);
        OK(strstr(error->message, "file-000.mp4") != NULL);
        g_clear_error(&error);
        OK(rt_loader_next(l, &error) == NULL); /* and stays failed */
        EXPECT_ERROR(error, "camera observation.images.cam");
        rt_loader_free(l);
    }
    rt_sampler_free(sampler);
    rt_dataset_free(ds);
    remove_tree(root);
    return 0;
}

int main(void)
{
    RUN_TEST(mean_std_as_lerobot);
    RUN_TEST(missing_stats_are_named);
    RUN_TEST(loader_same_batches_for_any_thread_count);
    RUN_TEST(loader_holds_at_most_depth);
    RUN_TEST(loader_reports_decode_errors);
    END_TEST;
}
