/* The dataset against known values: the generated v3.0 dataset's closed-form rows, windows,
 * padding and video colours (tests/data/dataset/tiny-v3, see its README), and the real v2.1
 * episode in ../shared/data/real-v2.1-g1 against the stats LeRobot wrote for it. */
#include "config.h"

#include <inttypes.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/option.h>

#include "data/dataset.h"
#include "testing.h"

static rt_dataset *open_tiny(const int64_t *episodes, size_t n, gboolean imagenet, GError **error)
{
    g_autofree char *root = rt_test_srcfile("data/dataset/tiny-v3");
    rt_dataset_options o;
    rt_dataset_options_init(&o);
    o.episodes = episodes;
    o.n_episodes = n;
    o.use_imagenet_stats = imagenet;
    return rt_dataset_open(root, &o, error);
}

static const float *f32_at(const rt_dataset *ds, const char *name, int64_t item)
{
    return rt_dataset_frame_values(ds, rt_dataset_feature_index(ds, name), item);
}

static int64_t i64_at(const rt_dataset *ds, const char *name, int64_t item)
{
    return *(const int64_t *)rt_dataset_frame_values(ds, rt_dataset_feature_index(ds, name), item);
}

DEF_TEST(tiny_metadata)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(NULL, 0, FALSE, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("v3.0", rt_dataset_version(ds));
    EXPECT_EQ_STR("tiny_sim", rt_dataset_robot_type(ds));
    EXPECT_NEAR(10, rt_dataset_fps(ds), 0);
    EXPECT_EQ_INT(40, rt_dataset_total_frames(ds));
    EXPECT_EQ_INT(40, rt_dataset_num_frames(ds));
    /* features in the file's order, with LeRobot's policy types */
    static const char *const names[] = {"observation.state",
                                        "action",
                                        "observation.images.cam",
                                        "timestamp",
                                        "frame_index",
                                        "episode_index",
                                        "index",
                                        "task_index"};
    static const rt_dataset_feature_type types[] = {
        RT_FEATURE_TYPE_STATE, RT_FEATURE_TYPE_ACTION, RT_FEATURE_TYPE_VISUAL, RT_FEATURE_TYPE_NONE,
        RT_FEATURE_TYPE_NONE,  RT_FEATURE_TYPE_NONE,   RT_FEATURE_TYPE_NONE,   RT_FEATURE_TYPE_NONE};
    EXPECT_EQ_INT(8, rt_dataset_num_features(ds));
    for (int i = 0; i < 8; i++) {
        EXPECT_EQ_STR(names[i], rt_dataset_feature(ds, i)->name);
        EXPECT_EQ_INT(types[i], rt_dataset_feature(ds, i)->type);
    }
    const rt_feature *cam = rt_dataset_find_feature(ds, "observation.images.cam");
    EXPECT_EQ_INT(RT_FEATURE_VIDEO, cam->kind);
    EXPECT_EQ_INT(96, cam->height);
    EXPECT_EQ_INT(96, cam->width);
    EXPECT_EQ_INT(3, cam->channels);
    EXPECT_EQ_STR("av1", cam->video_codec);
    EXPECT_EQ_STR("yuv420p", cam->video_pix_fmt);
    const rt_feature *state = rt_dataset_find_feature(ds, "observation.state");
    EXPECT_EQ_INT(RT_F32, state->storage);
    EXPECT_EQ_INT(2, state->numel);
    EXPECT_EQ_INT(RT_I64, rt_dataset_find_feature(ds, "index")->storage);
    /* episodes and tasks */
    EXPECT_EQ_INT(2, rt_dataset_num_episodes(ds));
    for (int e = 0; e < 2; e++) {
        const rt_episode *ep = rt_dataset_episode(ds, e);
        EXPECT_EQ_INT(e, ep->episode_index);
        EXPECT_EQ_INT(20, ep->length);
        EXPECT_EQ_INT(20 * e, ep->from_index);
        EXPECT_EQ_INT(20 * e + 20, ep->to_index);
        EXPECT_EQ_STR("Move the block to the target.", ep->tasks[0]);
        OK(ep->tasks[1] == NULL);
    }
    EXPECT_EQ_INT(1, rt_dataset_num_tasks(ds));
    int64_t ti = -1;
    EXPECT_EQ_STR("Move the block to the target.", rt_dataset_task(ds, 0, &ti));
    EXPECT_EQ_INT(0, ti);
    EXPECT_EQ_STR("Move the block to the target.", rt_dataset_task_by_index(ds, 0));
    OK(rt_dataset_task_by_index(ds, 1) == NULL);
    /* stats.json against the closed form: state = (100e + f/4, -(100e + f/2)), e in 0..1,
     * f in 0..19; population std = sqrt(within + between) */
    const rt_feature_stats *st = rt_dataset_stats(ds, "observation.state");
    OK(st != NULL);
    EXPECT_EQ_INT(2, st->numel);
    EXPECT_EQ_INT(40, st->count);
    EXPECT_NEAR(52.375, st->values[RT_STAT_MEAN][0], 1e-12);
    EXPECT_NEAR(-54.75, st->values[RT_STAT_MEAN][1], 1e-12);
    EXPECT_NEAR(sqrt(0.0625 * 33.25 + 2500), st->values[RT_STAT_STD][0], 1e-9);
    EXPECT_NEAR(sqrt(0.25 * 33.25 + 2500), st->values[RT_STAT_STD][1], 1e-9);
    EXPECT_NEAR(0, st->values[RT_STAT_MIN][0], 0);
    EXPECT_NEAR(-109.5, st->values[RT_STAT_MIN][1], 0);
    EXPECT_NEAR(104.75, st->values[RT_STAT_MAX][0], 0);
    OK(st->values[RT_STAT_Q99] != NULL);
    /* camera stats: one value per channel, from the file when ImageNet is not asked for */
    const rt_feature_stats *cs = rt_dataset_stats(ds, "observation.images.cam");
    EXPECT_EQ_INT(3, cs->numel);
    EXPECT_NEAR(0.48529411764705876, cs->values[RT_STAT_MEAN][0], 1e-15);
    EXPECT_NEAR(0.1973426624633076, cs->values[RT_STAT_STD][2], 1e-15);
    rt_dataset_free(ds);

    ds = open_tiny(NULL, 0, TRUE, &error);
    EXPECT_NO_ERROR(error);
    cs = rt_dataset_stats(ds, "observation.images.cam");
    EXPECT_NEAR(0.485, cs->values[RT_STAT_MEAN][0], 0);
    EXPECT_NEAR(0.456, cs->values[RT_STAT_MEAN][1], 0);
    EXPECT_NEAR(0.406, cs->values[RT_STAT_MEAN][2], 0);
    EXPECT_NEAR(0.229, cs->values[RT_STAT_STD][0], 0);
    EXPECT_NEAR(0.225, cs->values[RT_STAT_STD][2], 0);
    /* min/max stay the file's */
    EXPECT_NEAR(0.023529411764705882, cs->values[RT_STAT_MIN][0], 0);
    rt_dataset_free(ds);
    return 0;
}

DEF_TEST(tiny_every_row)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(NULL, 0, TRUE, &error);
    EXPECT_NO_ERROR(error);
    int bad = 0;
    for (int64_t i = 0; i < 40; i++) {
        int64_t e = i / 20, f = i % 20;
        const float *s = f32_at(ds, "observation.state", i), *a = f32_at(ds, "action", i);
        float ts = *f32_at(ds, "timestamp", i);
        float x = (float)(100 * e) + 0.25f * (float)f, y = -((float)(100 * e) + 0.5f * (float)f);
        if (s[0] != x || s[1] != y || a[0] != x + 0.125f || a[1] != y - 0.125f ||
            ts != (float)((double)f / 10) || i64_at(ds, "frame_index", i) != f ||
            i64_at(ds, "episode_index", i) != e || i64_at(ds, "index", i) != i ||
            i64_at(ds, "task_index", i) != 0) {
            if (bad++ < 3)
                printf("# item %" PRId64 ": state (%.9g, %.9g) action (%.9g, %.9g) ts %.9g\n", i, s[0], s[1],
                       a[0], a[1], ts);
        }
        int64_t k, frame;
        rt_dataset_locate(ds, i, &k, &frame);
        if (k != e || frame != f)
            bad++;
    }
    EXPECT_EQ_INT(0, bad);
    /* two values written out, independent of the loop */
    EXPECT_NEAR(104.75, f32_at(ds, "observation.state", 39)[0], 0);
    EXPECT_NEAR(-109.625, f32_at(ds, "action", 39)[1], 0);
    OK(rt_dataset_frame_values(ds, rt_dataset_feature_index(ds, "observation.images.cam"), 0) == NULL);
    rt_dataset_free(ds);
    return 0;
}

/* Fills a one-sample batch with item i. */
static rt_batch *item_batch(rt_dataset *ds, rt_batch_layout **layout, rt_dataset_reader **reader, int64_t i,
                            GError **error)
{
    if (!*layout)
        *layout = rt_batch_layout_new(ds, 1);
    if (!*reader)
        *reader = rt_dataset_reader_new(ds, 1);
    rt_batch *b = rt_batch_new(*layout, NULL);
    if (!rt_dataset_reader_fill(*reader, i, b, 0, error)) {
        rt_batch_free(b);
        return NULL;
    }
    b->size = 1;
    return b;
}

DEF_TEST(tiny_action_chunks_and_padding)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(NULL, 0, TRUE, &error);
    EXPECT_NO_ERROR(error);
    /* ACT's request with its default chunk of 100: longer than the episodes */
    OK(rt_dataset_set_action_chunk(ds, 100, &error));
    rt_batch_layout *layout = rt_batch_layout_new(ds, 3);
    int fa = rt_batch_layout_find(layout, "action"), fp = rt_batch_layout_find(layout, "action_is_pad");
    int fs = rt_batch_layout_find(layout, "observation.state"), fi = rt_batch_layout_find(layout, "index");
    OK(fa >= 0 && fp == fa + 1 && fs >= 0 && fi >= 0);
    const rt_batch_field *af = rt_batch_layout_field(layout, fa);
    EXPECT_EQ_INT(2, af->ndim);
    EXPECT_EQ_INT(100, af->shape[0]);
    EXPECT_EQ_INT(2, af->shape[1]);
    EXPECT_EQ_INT(RT_BOOL, rt_batch_layout_field(layout, fp)->dtype);
    EXPECT_EQ_INT(100, rt_batch_layout_field(layout, fp)->shape[0]);
    EXPECT_EQ_INT(0, rt_batch_layout_field(layout, fi)->ndim); /* shape-[1] columns are 0-d */
    EXPECT_EQ_INT(1, rt_batch_layout_field(layout, fs)->ndim);
    const rt_batch_field *cf =
        rt_batch_layout_field(layout, rt_batch_layout_find(layout, "observation.images.cam"));
    EXPECT_EQ_INT(3, cf->ndim);
    EXPECT_EQ_INT(3 * 96 * 96, cf->numel);
    OK(rt_batch_layout_bytes(layout) % 4096 == 0);
    for (int i = 0; i < rt_batch_layout_num_fields(layout); i++)
        OK(rt_batch_layout_field(layout, i)->offset % 64 == 0);

    rt_dataset_reader *reader = rt_dataset_reader_new(ds, 1);
    rt_batch *b = rt_batch_new(layout, NULL);
    /* items 0 (start of episode 0), 18 (two frames before its end), 39 (last frame of episode 1) */
    static const int64_t items[] = {0, 18, 39};
    for (int s = 0; s < 3; s++)
        OK(rt_dataset_reader_fill(reader, items[s], b, s, &error));
    EXPECT_NO_ERROR(error);
    int bad = 0;
    for (int s = 0; s < 3; s++) {
        int64_t e = items[s] / 20, f = items[s] % 20;
        const float *act = (const float *)rt_batch_field_data(b, fa) + (size_t)s * 200;
        const uint8_t *pad = (const uint8_t *)rt_batch_field_data(b, fp) + (size_t)s * 100;
        for (int t = 0; t < 100; t++) {
            int64_t q = MIN(f + t, 19); /* clamped to the episode's last frame */
            float x = (float)(100 * e) + 0.25f * (float)q + 0.125f;
            float y = -((float)(100 * e) + 0.5f * (float)q) - 0.125f;
            if (act[2 * t] != x || act[2 * t + 1] != y || pad[t] != (f + t > 19))
                bad++;
        }
        const float *st = (const float *)rt_batch_field_data(b, fs) + (size_t)s * 2;
        if (st[0] != (float)(100 * e) + 0.25f * (float)f)
            bad++;
        EXPECT_EQ_INT(items[s], ((const int64_t *)rt_batch_field_data(b, fi))[s]);
        EXPECT_EQ_INT(items[s], b->items[s]);
        EXPECT_EQ_STR("Move the block to the target.", b->tasks[s]);
    }
    EXPECT_EQ_INT(0, bad);
    /* spot checks: item 18 has frames 18, 19 real, then padding */
    const uint8_t *pad18 = (const uint8_t *)rt_batch_field_data(b, fp) + 100;
    EXPECT_EQ_INT(0, pad18[0]);
    EXPECT_EQ_INT(0, pad18[1]);
    EXPECT_EQ_INT(1, pad18[2]);
    EXPECT_EQ_INT(1, pad18[99]);
    const float *act39 = (const float *)rt_batch_field_data(b, fa) + 400;
    EXPECT_NEAR(104.875, act39[0], 0);
    EXPECT_NEAR(104.875, act39[198], 0);
    rt_batch_free(b);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);
    return 0;
}

DEF_TEST(tiny_delta_timestamps)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(NULL, 0, TRUE, &error);
    EXPECT_NO_ERROR(error);
    /* one frame back and one ahead, as seconds (0.1 s = 1 frame at 10 fps) */
    static const double secs[] = {-0.1, 0, 0.1};
    OK(rt_dataset_set_delta_timestamps(ds, "observation.state", secs, 3, &error));
    static const double bad_secs[] = {0.05};
    OK(!rt_dataset_set_delta_timestamps(ds, "observation.state", bad_secs, 1, &error));
    EXPECT_ERROR(error,
                 "delta timestamp 0.05 s for \"observation.state\" is not a multiple of 1/fps = 0.1 s");
    OK(!rt_dataset_set_delta_indices(ds, "no.such", NULL, 0, &error));
    EXPECT_ERROR(error, "delta indices were requested for \"no.such\", which is no feature of the dataset");
    rt_batch_layout *layout = NULL;
    rt_dataset_reader *reader = NULL;
    /* item 20 is frame 0 of episode 1: the frame before is padding (a copy of frame 0) */
    rt_batch *b = item_batch(ds, &layout, &reader, 20, &error);
    EXPECT_NO_ERROR(error);
    int fs = rt_batch_layout_find(layout, "observation.state");
    const float *s = rt_batch_field_data(b, fs);
    const uint8_t *pad = rt_batch_field_data(b, fs + 1);
    EXPECT_EQ_STR("observation.state_is_pad", rt_batch_layout_field(layout, fs + 1)->key);
    EXPECT_NEAR(100, s[0], 0);
    EXPECT_NEAR(100, s[2], 0);
    EXPECT_NEAR(100.25, s[4], 0);
    EXPECT_NEAR(-100.5, s[5], 0);
    EXPECT_EQ_INT(1, pad[0]);
    EXPECT_EQ_INT(0, pad[1]);
    EXPECT_EQ_INT(0, pad[2]);
    rt_batch_free(b);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);
    return 0;
}

/* Mean of channel c over rows r0..r1-1, cols c0..c1-1 of a CHW frame, in 0..255 levels. */
static double region_mean(const float *chw, int h, int w, int c, int r0, int r1, int c0, int c1)
{
    double sum = 0;
    for (int y = r0; y < r1; y++)
        for (int x = c0; x < c1; x++)
            sum += chw[(size_t)c * h * w + (size_t)y * w + x];
    return 255.0 * sum / ((r1 - r0) * (c1 - c0));
}

DEF_TEST(tiny_video_colours)
{
    GError *error = NULL;
    rt_dataset *ds = open_tiny(NULL, 0, TRUE, &error);
    EXPECT_NO_ERROR(error);
    /* a window on the camera too: frames f and f + 1 */
    static const int64_t cam_deltas[] = {0, 1};
    OK(rt_dataset_set_delta_indices(ds, "observation.images.cam", cam_deltas, 2, &error));
    rt_batch_layout *layout = rt_batch_layout_new(ds, 1);
    rt_dataset_reader *reader = rt_dataset_reader_new(ds, 1);
    rt_batch *b = rt_batch_new(layout, NULL);
    int fc = rt_batch_layout_find(layout, "observation.images.cam");
    EXPECT_EQ_INT(4, rt_batch_layout_field(layout, fc)->ndim);
    int bad = 0;
    double worst = 0;
    /* every item, in a shuffled order so the decoder seeks both ways */
    for (int n = 0; n < 40; n++) {
        int64_t i = (n * 17) % 40;
        if (!rt_dataset_reader_fill(reader, i, b, 0, &error))
            break;
        int64_t e = i / 20, f = i % 20;
        const float *frames = rt_batch_field_data(b, fc);
        const uint8_t *pad = rt_batch_field_data(b, fc + 1);
        for (int t = 0; t < 2; t++) {
            int64_t q = MIN(f + t, 19);
            const float *chw = frames + (size_t)t * 3 * 96 * 96;
            double want[3] = {6 + 12.0 * q, 60 + 120.0 * e, 200 - 8.0 * q};
            for (int c = 0; c < 3; c++) {
                double d = fabs(region_mean(chw, 96, 96, c, 8, 40, 8, 88) - want[c]);
                worst = MAX(worst, d);
                if (d > 6)
                    bad++;
            }
            /* the white square at rows 64..79, cols 4q..4q+15 (inner part, away from its edges) */
            for (int c = 0; c < 3; c++)
                if (region_mean(chw, 96, 96, c, 67, 77, 4 * (int)q + 3, 4 * (int)q + 13) < 255 - 12)
                    bad++;
            if (pad[t] != (f + t > 19))
                bad++;
        }
    }
    EXPECT_NO_ERROR(error);
    printf("# largest background colour error: %.2f levels (limit 6)\n", worst);
    EXPECT_EQ_INT(0, bad);
    rt_batch_free(b);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);
    return 0;
}

DEF_TEST(tiny_episode_selection)
{
    GError *error = NULL;
    static const int64_t second[] = {1, 1};
    rt_dataset *ds = open_tiny(second, 2, TRUE, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(20, rt_dataset_num_frames(ds));
    EXPECT_EQ_INT(1, rt_dataset_num_selected_episodes(ds));
    EXPECT_EQ_INT(1, rt_dataset_selected_episode(ds, 0));
    EXPECT_EQ_INT(2, rt_dataset_num_episodes(ds)); /* the table still lists both */
    EXPECT_NEAR(100, f32_at(ds, "observation.state", 0)[0], 0);
    EXPECT_EQ_INT(20, i64_at(ds, "index", 0));
    EXPECT_EQ_INT(39, i64_at(ds, "index", 19));
    /* the camera frame of the selection's item 5 is episode 1's frame 5 */
    rt_batch_layout *layout = NULL;
    rt_dataset_reader *reader = NULL;
    rt_batch *b = item_batch(ds, &layout, &reader, 5, &error);
    EXPECT_NO_ERROR(error);
    const float *chw = rt_batch_field_data(b, rt_batch_layout_find(layout, "observation.images.cam"));
    EXPECT_NEAR(60 + 120, region_mean(chw, 96, 96, 1, 8, 40, 8, 88), 6);
    EXPECT_NEAR(6 + 60, region_mean(chw, 96, 96, 0, 8, 40, 8, 88), 6);
    rt_batch_free(b);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);

    /* both, given in reverse order: items follow the file */
    static const int64_t both[] = {1, 0};
    ds = open_tiny(both, 2, TRUE, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(40, rt_dataset_num_frames(ds));
    EXPECT_EQ_INT(0, i64_at(ds, "episode_index", 0));
    rt_dataset_free(ds);

    static const int64_t missing[] = {0, 7};
    OK(open_tiny(missing, 2, TRUE, &error) == NULL);
    OK(error && error->code == RT_ERROR_INVALID_ARG);
    EXPECT_ERROR(error, "episode 7 is not in the dataset");
    OK(open_tiny(missing, 2, TRUE, &error) == NULL);
    EXPECT_ERROR(error, "tiny-v3: its 2 episodes are numbered 0 to 1");
    return 0;
}

DEF_TEST(dataset_flags)
{
    /* LeRobot's --dataset.episodes and --dataset.use_imagenet_stats, as a train command parses them */
    GError *error = NULL;
    rt_config *cfg = rt_config_new("robotrain train");
    size_t n = 0;
    const rt_option *rows = rt_dataset_option_rows(&n);
    OK(rt_config_add_options(cfg, "dataset", rows, n, &error));
    char *argv[] = {"train", "--dataset.episodes=[1]", "--dataset.use_imagenet_stats=false", NULL};
    OK(rt_config_parse_args(cfg, 3, argv, NULL, &error));
    EXPECT_NO_ERROR(error);
    rt_dataset_options o;
    int64_t *episodes = NULL;
    rt_dataset_options_from_config(cfg, "dataset", &o, &episodes);
    EXPECT_EQ_INT(1, o.n_episodes);
    EXPECT_EQ_INT(0, o.use_imagenet_stats);
    g_autofree char *root = rt_test_srcfile("data/dataset/tiny-v3");
    rt_dataset *ds = rt_dataset_open(root, &o, &error);
    g_free(episodes);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(20, rt_dataset_num_frames(ds));
    EXPECT_NEAR(0.48529411764705876, rt_dataset_stats(ds, "observation.images.cam")->values[RT_STAT_MEAN][0],
                0);
    rt_dataset_free(ds);
    /* the defaults: every episode, ImageNet stats */
    rt_config_free(cfg);
    cfg = rt_config_new("robotrain train");
    OK(rt_config_add_options(cfg, "dataset", rows, n, &error));
    rt_dataset_options_from_config(cfg, "dataset", &o, &episodes);
    OK(o.episodes == NULL && episodes == NULL);
    EXPECT_EQ_INT(1, o.use_imagenet_stats);
    char *bad[] = {"train", "--dataset.episodes=[-1]", NULL};
    OK(!rt_config_parse_args(cfg, 2, bad, NULL, &error));
    EXPECT_ERROR(error, "--dataset.episodes");
    rt_config_free(cfg);
    return 0;
}

DEF_TEST(open_errors)
{
    GError *error = NULL;
    OK(rt_dataset_open("/nonexistent/dataset", NULL, &error) == NULL);
    EXPECT_ERROR(error, "/nonexistent/dataset: no such folder; give the root of a LeRobot dataset");
    g_autofree char *dir = g_dir_make_tmp("rt-dataset-XXXXXX", NULL);
    OK(rt_dataset_open(dir, NULL, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "meta/info.json: No such file or directory");
    g_rmdir(dir);
    return 0;
}

/* ---------------------------------------------------------------- inline images */

DEF_TEST(image_dataset)
{
    /* tests/data/dataset/image-v3: PNGs in a {bytes, path} column, float64, bool, two tasks */
    g_autofree char *root = rt_test_srcfile("data/dataset/image-v3");
    GError *error = NULL;
    rt_dataset *ds = rt_dataset_open(root, NULL, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(8, rt_dataset_num_frames(ds));
    const rt_feature *img = rt_dataset_find_feature(ds, "observation.image");
    EXPECT_EQ_INT(RT_FEATURE_IMAGE, img->kind);
    EXPECT_EQ_INT(8, img->height);
    EXPECT_EQ_INT(12, img->width);
    const rt_feature *env = rt_dataset_find_feature(ds, "observation.environment_state");
    EXPECT_EQ_INT(RT_FEATURE_TYPE_ENV, env->type);
    EXPECT_EQ_INT(RT_F64, env->storage);
    EXPECT_EQ_INT(RT_BOOL, rt_dataset_find_feature(ds, "next.done")->storage);
    /* tasks.parquet names its text column __index_level_0__, as pandas does */
    EXPECT_EQ_STR("Place the cube.", rt_dataset_task_by_index(ds, 1));
    /* ImageNet stats for the image feature, which has none in stats.json */
    const rt_feature_stats *is = rt_dataset_stats(ds, "observation.image");
    OK(is != NULL && is->values[RT_STAT_MEAN] && is->values[RT_STAT_MIN] == NULL);
    static const int64_t prev[] = {-1, 0};
    OK(rt_dataset_set_delta_indices(ds, "observation.image", prev, 2, &error));
    rt_batch_layout *layout = rt_batch_layout_new(ds, 1);
    rt_dataset_reader *reader = rt_dataset_reader_new(ds, 1);
    rt_batch *b = rt_batch_new(layout, NULL);
    int fi = rt_batch_layout_find(layout, "observation.image"),
        fe = rt_batch_layout_find(layout, "observation.environment_state");
    int fd = rt_batch_layout_find(layout, "next.done");
    int bad = 0;
    for (int64_t i = 0; i < 8; i++) {
        if (!rt_dataset_reader_fill(reader, i, b, 0, &error))
            break;
        int64_t e = i / 4, f = i % 4;
        const float *chw = rt_batch_field_data(b, fi);
        const uint8_t *pad = rt_batch_field_data(b, fi + 1);
        for (int t = 0; t < 2; t++) {
            int64_t q = MAX(f - 1 + t, 0);
            bad += pad[t] != (f - 1 + t < 0);
            for (int y = 0; y < 8; y++)
                for (int x = 0; x < 12; x++) {
                    const float *p = chw + (size_t)t * 3 * 96 + (size_t)y * 12 + (size_t)x;
                    /* PNG is lossless: exactly v / 255 */
                    bad += p[0] != (float)(20 * q + 5 * x) / 255.0f;
                    bad += p[96] != (float)(40 * e + 10 * y) / 255.0f;
                    bad += p[192] != (float)(250 - 30 * q - e) / 255.0f;
                }
        }
        const double *ev = rt_batch_field_data(b, fe);
        bad += ev[0] != (double)e + (double)f / 3 || ev[1] != 1e-300;
        bad += *(const uint8_t *)rt_batch_field_data(b, fd) != (f == 3);
        if (strcmp(b->tasks[0], e ? "Place the cube." : "Pick the cube.") != 0)
            bad++;
    }
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(0, bad);
    rt_batch_free(b);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);
    rt_dataset_free(ds);
    return 0;
}

/* ---------------------------------------------------------------- real v2.1 */

static JsonObject *episode_stats_line(JsonParser *parser, const char *path, int64_t episode)
{
    gchar *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_free(text);
    for (size_t i = 0; lines[i]; i++) {
        if (!lines[i][0] || !json_parser_load_from_data(parser, lines[i], -1, NULL))
            continue;
        JsonObject *o = json_node_get_object(json_parser_get_root(parser));
        if (json_object_get_int_member(o, "episode_index") == episode)
            return json_object_get_object_member(o, "stats");
    }
    return NULL;
}

DEF_TEST(real_v21_episode)
{
    g_autofree char *root = rt_test_sharedfile("data/real-v2.1-g1");
    if (!root) {
        printf("# SKIP ../shared/data/real-v2.1-g1 is absent\n");
        return 0;
    }
    GError *error = NULL;
    /* the folder holds episode 29 only: all episodes cannot be read, and the error says so */
    OK(rt_dataset_open(root, NULL, &error) == NULL);
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "episode_000000.mp4: no such file (camera observation.images.cam_high of episode 0)");

    rt_dataset_options o;
    rt_dataset_options_init(&o);
    static const int64_t ep29[] = {29};
    o.episodes = ep29;
    o.n_episodes = 1;
    o.use_imagenet_stats = FALSE;
    rt_dataset *ds = rt_dataset_open(root, &o, &error);
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("v2.1", rt_dataset_version(ds));
    EXPECT_EQ_INT(100, rt_dataset_num_episodes(ds));
    EXPECT_EQ_INT(35965, rt_dataset_total_frames(ds));
    EXPECT_EQ_INT(221, rt_dataset_num_frames(ds));
    const rt_episode *e = rt_dataset_episode(ds, rt_dataset_selected_episode(ds, 0));
    EXPECT_EQ_INT(29, e->episode_index);
    EXPECT_EQ_INT(10640, e->from_index); /* the lengths of episodes 0..28 add up to 10640 */
    EXPECT_EQ_STR("Pick up the yellow bottle on the table.", rt_dataset_task_by_index(ds, 0));
    const rt_feature *cam = rt_dataset_find_feature(ds, "observation.images.cam_high");
    EXPECT_EQ_INT(480, cam->height);
    EXPECT_EQ_INT(640, cam->width); /* names say "channel": [H, W, C] */
    int bad = 0;
    for (int64_t f = 0; f < 221; f++) {
        if (i64_at(ds, "index", f) != 10640 + f || i64_at(ds, "frame_index", f) != f ||
            i64_at(ds, "episode_index", f) != 29 || *f32_at(ds, "timestamp", f) != (float)((double)f / 30))
            bad++;
    }
    EXPECT_EQ_INT(0, bad);
    /* the rows against the stats LeRobot computed for this episode */
    g_autofree char *stats_path = g_build_filename(root, "meta", "episodes_stats.jsonl", NULL);
    JsonParser *parser = json_parser_new();
    JsonObject *st = episode_stats_line(parser, stats_path, 29);
    OK(st != NULL);
    static const char *const vectors[] = {"observation.state", "action"};
    for (int v = 0; v < 2; v++) {
        JsonObject *fs = json_object_get_object_member(st, vectors[v]);
        JsonArray *mins = json_object_get_array_member(fs, "min"),
                  *maxs = json_object_get_array_member(fs, "max"),
                  *means = json_object_get_array_member(fs, "mean");
        EXPECT_EQ_INT(26, json_array_get_length(mins));
        int mismatches = 0;
        for (guint j = 0; j < 26; j++) {
            double lo = INFINITY, hi = -INFINITY, sum = 0;
            for (int64_t f = 0; f < 221; f++) {
                double x = f32_at(ds, vectors[v], f)[j];
                lo = MIN(lo, x);
                hi = MAX(hi, x);
                sum += x;
            }
            if (lo != json_array_get_double_element(mins, j) ||
                hi != json_array_get_double_element(maxs, j) ||
                fabs(sum / 221 - json_array_get_double_element(means, j)) > 1e-5)
                mismatches++;
        }
        EXPECT_EQ_INT(0, mismatches);
    }
    /* camera: the channel means of every 20th frame against LeRobot's (sampled, downscaled) */
    JsonArray *cmean = json_object_get_array_member(
        json_object_get_object_member(st, "observation.images.cam_high"), "mean");
    rt_batch_layout *layout = NULL;
    rt_dataset_reader *reader = NULL;
    double sums[3] = {0, 0, 0};
    int n = 0;
    for (int64_t f = 0; f < 221; f += 20, n++) {
        rt_batch *b = item_batch(ds, &layout, &reader, f, &error);
        EXPECT_NO_ERROR(error);
        const float *chw =
            rt_batch_field_data(b, rt_batch_layout_find(layout, "observation.images.cam_high"));
        for (int c = 0; c < 3; c++)
            sums[c] += region_mean(chw, 480, 640, c, 0, 480, 0, 640) / 255;
        rt_batch_free(b);
    }
    for (int c = 0; c < 3; c++) {
        double want = json_array_get_double_element(
            json_array_get_array_element(json_array_get_array_element(cmean, (guint)c), 0), 0);
        EXPECT_NEAR(want, sums[c] / n, 0.02);
    }
    g_object_unref(parser);
    rt_dataset_reader_free(reader);
    rt_batch_layout_free(layout);

    /* the aggregate over the 100 episodes' stats: counts add up to the dataset's frames */
    const rt_feature_stats *agg = rt_dataset_stats(ds, "observation.state");
    OK(agg != NULL);
    EXPECT_EQ_INT(35965, agg->count);
    EXPECT_EQ_INT(26, agg->numel);
    const rt_feature_stats *cagg = rt_dataset_stats(ds, "observation.images.cam_high");
    EXPECT_EQ_INT(3, cagg->numel);
    rt_dataset_free(ds);
    return 0;
}

int main(void)
{
    RUN_TEST(tiny_metadata);
    RUN_TEST(tiny_every_row);
    RUN_TEST(tiny_action_chunks_and_padding);
    RUN_TEST(tiny_delta_timestamps);
    RUN_TEST(tiny_video_colours);
    RUN_TEST(tiny_episode_selection);
    RUN_TEST(dataset_flags);
    RUN_TEST(open_errors);
    RUN_TEST(image_dataset);
    RUN_TEST(real_v21_episode);
    END_TEST;
}
