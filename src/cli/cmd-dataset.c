/* robotrain dataset: summarize a LeRobot dataset, or print its rows, robotrain-dataset(1). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/robotrain.h>

#include <robotrain/hub.h>

#include "cli/commands.h"
#include "train/train-hub.h"
#include "data/dataset.h"

static const rt_option info_options[] = {
    {.key = "json",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Print the summary as one JSON object instead of text."},
    {.key = "stats",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Add each feature's statistics (min, max, mean, std, count) from the dataset's stats."},
};

static const rt_option show_options[] = {
    {.key = "episode",
     .type = RT_OPT_INT,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 9.0e15,
     .null_text = "all",
     .help = "Show frames of this episode (its episode_index); --frames then counts within it."},
    {.key = "frames",
     .type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .null_text = "all",
     .help = "Frames A:B (A included, B not; either may be left out), counted in the episode, or in the "
             "dataset without --episode."},
    {.key = "columns",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .null_text = "all",
     .help = "The columns to print, comma-separated; all non-video columns by default."},
};

static const rt_option download_options[] = {
    {.key = "revision",
     .type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .null_text = "auto",
     .help = "Branch, tag or commit to download; auto: the version tag LeRobot's codebase reads (v3.0, "
             "else the newest older minor), as LeRobot picks it."},
    {.key = "root",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .null_text = "cache",
     .help = "Write the files straight into this folder (LeRobot's --dataset.root); cache: LeRobot's "
             "cache, $HF_LEROBOT_HOME/hub/datasets--OWNER--NAME (~/.cache/huggingface/lerobot/hub)."},
    {.key = "episodes",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_INT,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .min = 0,
     .max = 16777215,
     .null_text = "all",
     .help = "Only the metadata and the data and video files of these episodes (their episode_index, "
             "e.g. [0,1,2]), as LeRobot downloads for --dataset.episodes."},
};

typedef struct subcommand {
    const char *name;
    const char *operand; /* what the one positional argument is */
    const char *operand_help;
    const char *summary;
    const rt_option *options;
    size_t n_options;
    int (*run)(const char *root, const rt_config *flags);
} subcommand;

static int run_info(const char *root, const rt_config *flags);
static int run_show(const char *root, const rt_config *flags);
static int run_download(const char *repo_id, const rt_config *flags);

static const subcommand subcommands[] = {
    {"info", "ROOT", "one dataset folder (ROOT, the folder holding meta/info.json)",
     "print what a dataset holds: version, fps, episodes, frames, features, cameras, tasks", info_options,
     G_N_ELEMENTS(info_options), run_info},
    {"show", "ROOT", "one dataset folder (ROOT, the folder holding meta/info.json)",
     "print the non-video columns of frames as JSON lines, in full precision", show_options,
     G_N_ELEMENTS(show_options), run_show},
    {"download", "REPO_ID", "one Hub dataset id (REPO_ID, owner/name)",
     "download a dataset from the Hugging Face Hub into LeRobot's cache (or --root), and print its folder",
     download_options, G_N_ELEMENTS(download_options), run_download},
};

static void print_error(const GError *error)
{
    g_auto(GStrv) lines = g_strsplit(error->message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain dataset: %s\n", lines[i]);
}

static rt_config *subcommand_flags(const subcommand *sub)
{
    g_autofree char *command = g_strdup_printf("robotrain dataset %s", sub->name);
    rt_config *cfg = rt_config_new(command);
    GError *error = NULL;
    if (!rt_config_add_options(cfg, NULL, sub->options, sub->n_options, &error))
        g_error("robotrain dataset: the option table is malformed: %s", error->message); /* a bug */
    return cfg;
}

static char *usage_of(const subcommand *sub, const rt_config *flags)
{
    g_autofree char *synopsis = rt_config_synopsis(flags);
    return g_strdup_printf("robotrain dataset %s %s %s", sub->name, sub->operand, synopsis);
}

static void print_usage(FILE *out, gboolean full)
{
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i]);
        g_autofree char *usage = usage_of(&subcommands[i], flags);
        fprintf(out, "%s %s\n", i ? "   or:" : "usage:", usage);
    }
    fprintf(out, "\nLooks into a LeRobot dataset (v3.0, v2.1 or v2.0) in the folder ROOT, the one holding\n"
                 "meta/info.json, or downloads one from the Hub by its id.\n\nsubcommands:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    if (!full) {
        fprintf(out, "\nSee 'robotrain dataset --help' for the options.\n");
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i]);
        fprintf(out, "\nrobotrain dataset %s ", subcommands[i].name);
        rt_config_print_help(flags, RT_HELP_STYLE_FLAGS, out);
    }
}

/* ---------------------------------------------------------------- info */

static const char *kind_name(const rt_feature *f)
{
    return f->kind == RT_FEATURE_NUMERIC ? "numeric"
           : f->kind == RT_FEATURE_VIDEO ? "video"
           : f->kind == RT_FEATURE_IMAGE ? "image"
                                         : "text";
}

static const char *type_name(rt_dataset_feature_role t)
{
    static const char *const names[] = {NULL, "VISUAL", "STATE", "ACTION", "ENV"};
    return t <= RT_FEATURE_TYPE_ENV ? names[t] : NULL;
}

static char *shape_text(const rt_feature *f)
{
    GString *s = g_string_new("[");
    for (int d = 0; d < f->ndim; d++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "", f->shape[d]);
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

static void builder_doubles(JsonBuilder *b, const double *v, int64_t n)
{
    json_builder_begin_array(b);
    for (int64_t i = 0; i < n; i++)
        json_builder_add_double_value(b, v[i]);
    json_builder_end_array(b);
}

static int info_json(const rt_dataset *ds, gboolean with_stats)
{
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "root");
    json_builder_add_string_value(b, rt_dataset_root(ds));
    json_builder_set_member_name(b, "codebase_version");
    json_builder_add_string_value(b, rt_dataset_version(ds));
    json_builder_set_member_name(b, "robot_type");
    if (rt_dataset_robot_type(ds))
        json_builder_add_string_value(b, rt_dataset_robot_type(ds));
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "fps");
    json_builder_add_double_value(b, rt_dataset_fps(ds));
    json_builder_set_member_name(b, "total_episodes");
    json_builder_add_int_value(b, rt_dataset_num_episodes(ds));
    json_builder_set_member_name(b, "total_frames");
    json_builder_add_int_value(b, rt_dataset_total_frames(ds));
    json_builder_set_member_name(b, "features");
    json_builder_begin_array(b);
    for (int i = 0; i < rt_dataset_num_features(ds); i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "name");
        json_builder_add_string_value(b, f->name);
        json_builder_set_member_name(b, "dtype");
        json_builder_add_string_value(b, f->dtype);
        json_builder_set_member_name(b, "shape");
        json_builder_begin_array(b);
        for (int d = 0; d < f->ndim; d++)
            json_builder_add_int_value(b, f->shape[d]);
        json_builder_end_array(b);
        json_builder_set_member_name(b, "kind");
        json_builder_add_string_value(b, kind_name(f));
        json_builder_set_member_name(b, "policy_type");
        if (type_name(f->type))
            json_builder_add_string_value(b, type_name(f->type));
        else
            json_builder_add_null_value(b);
        if (f->kind == RT_FEATURE_VIDEO || f->kind == RT_FEATURE_IMAGE) {
            json_builder_set_member_name(b, "channels");
            json_builder_add_int_value(b, f->channels);
            json_builder_set_member_name(b, "height");
            json_builder_add_int_value(b, f->height);
            json_builder_set_member_name(b, "width");
            json_builder_add_int_value(b, f->width);
        }
        if (f->kind == RT_FEATURE_VIDEO) {
            json_builder_set_member_name(b, "codec");
            f->video_codec ? json_builder_add_string_value(b, f->video_codec)
                           : json_builder_add_null_value(b);
            json_builder_set_member_name(b, "pix_fmt");
            f->video_pix_fmt ? json_builder_add_string_value(b, f->video_pix_fmt)
                             : json_builder_add_null_value(b);
            json_builder_set_member_name(b, "is_depth_map");
            json_builder_add_boolean_value(b, f->is_depth_map);
        }
        const rt_feature_stats *st = with_stats ? rt_dataset_stats(ds, f->name) : NULL;
        if (st) {
            json_builder_set_member_name(b, "stats");
            json_builder_begin_object(b);
            for (int k = 0; k < RT_STAT_COUNT_; k++)
                if (st->values[k]) {
                    json_builder_set_member_name(b, rt_stat_name((rt_stat)k));
                    builder_doubles(b, st->values[k], st->numel);
                }
            if (st->count >= 0) {
                json_builder_set_member_name(b, "count");
                json_builder_add_int_value(b, st->count);
            }
            json_builder_end_object(b);
        }
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "episodes");
    json_builder_begin_array(b);
    for (int64_t e = 0; e < rt_dataset_num_episodes(ds); e++) {
        const rt_episode *ep = rt_dataset_episode(ds, e);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "episode_index");
        json_builder_add_int_value(b, ep->episode_index);
        json_builder_set_member_name(b, "length");
        json_builder_add_int_value(b, ep->length);
        json_builder_set_member_name(b, "from_index");
        json_builder_add_int_value(b, ep->from_index);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_set_member_name(b, "tasks");
    json_builder_begin_array(b);
    for (int64_t t = 0; t < rt_dataset_num_tasks(ds); t++) {
        int64_t index = 0;
        const char *task = rt_dataset_task(ds, t, &index);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "task_index");
        json_builder_add_int_value(b, index);
        json_builder_set_member_name(b, "task");
        json_builder_add_string_value(b, task);
        json_builder_end_object(b);
    }
    json_builder_end_array(b);
    json_builder_end_object(b);
    JsonGenerator *gen = json_generator_new();
    JsonNode *root = json_builder_get_root(b);
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    printf("%s\n", text);
    json_node_unref(root);
    g_object_unref(gen);
    g_object_unref(b);
    return RT_EXIT_OK;
}

static void print_stat_line(const char *label, const double *v, int64_t n)
{
    printf("      %-5s", label);
    for (int64_t i = 0; i < n && i < 8; i++)
        printf(" %.6g", v[i]);
    if (n > 8)
        printf(" ... (%" G_GINT64_FORMAT " values)", n);
    printf("\n");
}

static int info_text(const rt_dataset *ds, gboolean with_stats)
{
    int64_t n_eps = rt_dataset_num_episodes(ds);
    int64_t frames = 0, shortest = n_eps ? INT64_MAX : 0, longest = 0;
    for (int64_t e = 0; e < n_eps; e++) {
        int64_t len = rt_dataset_episode(ds, e)->length;
        frames += len;
        shortest = MIN(shortest, len);
        longest = MAX(longest, len);
    }
    printf("dataset   %s\n", rt_dataset_root(ds));
    printf("version   %s\n", rt_dataset_version(ds));
    printf("robot     %s\n", rt_dataset_robot_type(ds) ? rt_dataset_robot_type(ds) : "(not given)");
    printf("fps       %g\n", rt_dataset_fps(ds));
    printf("episodes  %" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " to %" G_GINT64_FORMAT " frames each)\n",
           n_eps, shortest, longest);
    printf("frames    %" G_GINT64_FORMAT " (%.1f s)", frames, (double)frames / rt_dataset_fps(ds));
    if (frames != rt_dataset_total_frames(ds))
        printf("; info.json says %" G_GINT64_FORMAT, rt_dataset_total_frames(ds));
    printf("\n");
    int n_cams = 0;
    for (int i = 0; i < rt_dataset_num_features(ds); i++)
        n_cams += rt_dataset_feature(ds, i)->kind == RT_FEATURE_VIDEO ||
                  rt_dataset_feature(ds, i)->kind == RT_FEATURE_IMAGE;
    printf("cameras   %d\n", n_cams);
    for (int i = 0; i < rt_dataset_num_features(ds); i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        if (f->kind == RT_FEATURE_VIDEO)
            printf("  %-32s video %dx%d, %s, %s, %g fps%s\n", f->name, f->width, f->height,
                   f->video_codec ? f->video_codec : "codec not given",
                   f->video_pix_fmt ? f->video_pix_fmt : "pixel format not given", f->video_fps,
                   f->is_depth_map ? ", depth" : "");
        else if (f->kind == RT_FEATURE_IMAGE)
            printf("  %-32s images %dx%d, inline in the data files\n", f->name, f->width, f->height);
    }
    printf("features  %d\n", rt_dataset_num_features(ds));
    for (int i = 0; i < rt_dataset_num_features(ds); i++) {
        const rt_feature *f = rt_dataset_feature(ds, i);
        g_autofree char *shape = shape_text(f);
        if (type_name(f->type))
            printf("  %-32s %-8s %-14s %s\n", f->name, f->dtype, shape, type_name(f->type));
        else
            printf("  %-32s %-8s %s\n", f->name, f->dtype, shape);
        const rt_feature_stats *st = with_stats ? rt_dataset_stats(ds, f->name) : NULL;
        if (st) {
            for (int k = 0; k < RT_STAT_COUNT_; k++)
                if (st->values[k])
                    print_stat_line(rt_stat_name((rt_stat)k), st->values[k], st->numel);
            if (st->count >= 0)
                printf("      count %" G_GINT64_FORMAT "\n", st->count);
        }
    }
    printf("tasks     %" G_GINT64_FORMAT "\n", rt_dataset_num_tasks(ds));
    for (int64_t t = 0; t < rt_dataset_num_tasks(ds); t++) {
        int64_t index = 0;
        const char *task = rt_dataset_task(ds, t, &index);
        printf("  %4" G_GINT64_FORMAT "  %s\n", index, task);
    }
    return RT_EXIT_OK;
}

static int run_info(const char *root, const rt_config *flags)
{
    rt_dataset_options o;
    rt_dataset_options_init(&o);
    o.load_frames = FALSE;
    o.use_imagenet_stats = FALSE; /* the dataset's own stats */
    g_autoptr(GError) error = NULL;
    g_autoptr(rt_dataset) ds = rt_dataset_open(root, &o, &error);
    if (!ds) {
        print_error(error);
        return RT_EXIT_FAILURE;
    }
    gboolean with_stats = rt_config_get_bool(flags, "stats");
    return rt_config_get_bool(flags, "json") ? info_json(ds, with_stats) : info_text(ds, with_stats);
}

/* ---------------------------------------------------------------- show */

/* "A:B", ":B", "A:", ":" (B exclusive). */
static gboolean parse_range(const char *text, int64_t *a, int64_t *b, GError **error)
{
    const char *colon = strchr(text, ':');
    *a = 0;
    *b = -1;
    if (!colon)
        goto bad;
    for (int side = 0; side < 2; side++) {
        const char *s = side ? colon + 1 : text;
        size_t len = side ? strlen(s) : (size_t)(colon - text);
        if (len == 0)
            continue;
        g_autofree char *part = g_strndup(s, len);
        char *end = NULL;
        errno = 0;
        long long v = strtoll(part, &end, 10);
        if (errno || *end || v < 0 || !g_ascii_isdigit(part[0]))
            goto bad;
        *(side ? b : a) = v;
    }
    if (*b >= 0 && *b < *a)
        goto bad;
    return TRUE;
bad:
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "--frames=%s: expected A:B with 0 <= A <= B (B excluded; either may be left out), e.g. 0:10",
                text);
    return FALSE;
}

static void print_value(const rt_feature *f, const void *values, int64_t i)
{
    switch (f->storage) {
    case RT_F32: {
        double v = ((const float *)values)[i];
        if (isfinite(v))
            printf("%.9g", v);
        else
            printf("%s", isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity");
        break;
    }
    case RT_F64: {
        double v = ((const double *)values)[i];
        if (isfinite(v))
            printf("%.17g", v);
        else
            printf("%s", isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity");
        break;
    }
    case RT_I64:
        printf("%" G_GINT64_FORMAT, ((const int64_t *)values)[i]);
        break;
    case RT_BOOL:
        printf("%s", ((const uint8_t *)values)[i] ? "true" : "false");
        break;
    default: /* the dataset stores no other dtype */
        printf("null");
        break;
    }
}

static int run_show(const char *root, const rt_config *flags)
{
    g_autoptr(GError) error = NULL;
    rt_dataset_options o;
    rt_dataset_options_init(&o);
    o.use_imagenet_stats = FALSE;
    gboolean one_episode = !rt_config_is_null(flags, "episode");
    int64_t episode = one_episode ? rt_config_get_int(flags, "episode") : 0;
    if (one_episode) {
        o.episodes = &episode;
        o.n_episodes = 1;
    }
    int64_t a = 0, b = -1;
    const char *frames = rt_config_get_string(flags, "frames");
    if (frames && !parse_range(frames, &a, &b, &error)) {
        print_error(error);
        return RT_EXIT_USAGE;
    }
    g_autoptr(rt_dataset) ds = rt_dataset_open(root, &o, &error);
    if (!ds) {
        print_error(error);
        return RT_EXIT_FAILURE;
    }
    /* the columns: all numeric features, or those asked for, in the order asked */
    GArray *cols = g_array_new(FALSE, FALSE, sizeof(int));
    g_auto(GStrv) wanted = rt_config_get_string_list(flags, "columns");
    if (wanted) {
        const char **names = g_new0(const char *, rt_dataset_num_features(ds) + 1);
        for (int i = 0; i < rt_dataset_num_features(ds); i++)
            names[i] = rt_dataset_feature(ds, i)->name;
        for (size_t k = 0; wanted[k]; k++) {
            int i = rt_dataset_feature_index(ds, wanted[k]);
            if (i < 0 || rt_dataset_feature(ds, i)->kind != RT_FEATURE_NUMERIC) {
                if (i >= 0)
                    fprintf(stderr,
                            "robotrain dataset: --columns: %s is a %s feature; show prints numeric columns "
                            "only.\n",
                            wanted[k], kind_name(rt_dataset_feature(ds, i)));
                else {
                    const char *near =
                        rt_suggest_nearest(wanted[k], names, (size_t)rt_dataset_num_features(ds));
                    fprintf(stderr, "robotrain dataset: --columns: the dataset has no column '%s'.",
                            wanted[k]);
                    if (near)
                        fprintf(stderr, " Did you mean '%s'?", near);
                    fprintf(stderr, "\nSee 'robotrain dataset info %s' for its features.\n", root);
                }
                g_free(names);
                g_array_free(cols, TRUE);
                return RT_EXIT_USAGE;
            }
            g_array_append_val(cols, i);
        }
        g_free(names);
    } else {
        for (int i = 0; i < rt_dataset_num_features(ds); i++)
            if (rt_dataset_feature(ds, i)->kind == RT_FEATURE_NUMERIC)
                g_array_append_val(cols, i);
    }
    int64_t n = rt_dataset_num_frames(ds);
    if (b < 0 || b > n)
        b = n;
    if (a > n) {
        if (one_episode)
            fprintf(stderr,
                    "robotrain dataset: --frames=%s starts after the end of episode %" G_GINT64_FORMAT
                    " (%" G_GINT64_FORMAT " frames).\n",
                    frames, episode, n);
        else
            fprintf(stderr,
                    "robotrain dataset: --frames=%s starts after the end of the dataset (%" G_GINT64_FORMAT
                    " frames).\n",
                    frames, n);
        g_array_free(cols, TRUE);
        return RT_EXIT_USAGE;
    }
    for (int64_t item = a; item < b; item++) {
        printf("{");
        for (guint c = 0; c < cols->len; c++) {
            int fi = g_array_index(cols, int, c);
            const rt_feature *f = rt_dataset_feature(ds, fi);
            const void *v = rt_dataset_frame_values(ds, fi, item);
            g_autofree char *key = g_strescape(f->name, NULL);
            printf("%s\"%s\": ", c ? ", " : "", key);
            gboolean scalar = f->ndim == 1 && f->shape[0] == 1;
            if (!scalar)
                printf("[");
            for (int64_t j = 0; j < f->numel; j++) {
                if (j)
                    printf(", ");
                print_value(f, v, j);
            }
            if (!scalar)
                printf("]");
        }
        printf("}\n");
    }
    g_array_free(cols, TRUE);
    return fflush(stdout) == 0 ? RT_EXIT_OK : RT_EXIT_FAILURE;
}

/* ---------------------------------------------------------------- dispatch */

/* ---------------------------------------------------------------- download */

static int run_download(const char *repo_id, const rt_config *flags)
{
    g_autoptr(GError) error = NULL;
    if (!rt_hub_check_repo_id(repo_id, &error)) {
        print_error(error);
        return RT_EXIT_USAGE;
    }
    const char *revision = rt_config_is_null(flags, "revision") ? NULL : rt_config_get_string(flags, "revision");
    const char *root = rt_config_is_null(flags, "root") ? NULL : rt_config_get_string(flags, "root");
    size_t n_episodes = 0;
    g_autofree gint64 *episodes = rt_config_get_int_list(flags, "episodes", &n_episodes);
    g_autofree char *folder = rt_train_hub_download_dataset(repo_id, revision, root, (const int64_t *)episodes,
                                                            n_episodes, FALSE, stderr, &error);
    if (!folder) {
        print_error(error);
        return RT_EXIT_FAILURE;
    }
    printf("%s\n", folder);
    return RT_EXIT_OK;
}

int rt_cmd_dataset(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr, FALSE);
        return RT_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout, TRUE);
        return RT_EXIT_OK;
    }
    const subcommand *sub = NULL;
    const char *names[G_N_ELEMENTS(subcommands)];
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        names[i] = subcommands[i].name;
        if (strcmp(name, subcommands[i].name) == 0)
            sub = &subcommands[i];
    }
    if (!sub) {
        if (name[0] == '-') {
            fprintf(stderr, "robotrain dataset: give a subcommand (info, show or download) before '%s'.\n", name);
        } else {
            const char *near = rt_suggest_nearest(name, names, G_N_ELEMENTS(names));
            fprintf(stderr, "robotrain dataset: '%s' is not a subcommand of dataset.", name);
            if (near)
                fprintf(stderr, " Did you mean '%s'?", near);
            fprintf(stderr, "\n");
        }
        fprintf(stderr, "See 'robotrain dataset --help'.\n");
        return RT_EXIT_USAGE;
    }
    g_autoptr(rt_config) flags = subcommand_flags(sub);
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) rest = NULL;
    if (!rt_config_parse_args(flags, argc - 1, argv + 1, &rest, &error)) {
        print_error(error);
        return RT_EXIT_USAGE;
    }
    g_autofree char *usage = usage_of(sub, flags);
    g_autofree char *usage_line =
        g_strdup_printf("usage: %s\n\n%c%s.", usage, g_ascii_toupper(sub->summary[0]), sub->summary + 1);
    if (rt_config_handle_help(flags, usage_line, stdout))
        return RT_EXIT_OK;
    if (!rest || !rest[0] || rest[1]) {
        fprintf(
            stderr,
            "robotrain dataset %s: give %s%s%s.\n"
            "usage: %s\n",
            sub->name, sub->operand_help, rest && rest[0] ? "; got also " : "", rest && rest[0] && rest[1] ? rest[1] : "",
            usage);
        return RT_EXIT_USAGE;
    }
    return sub->run(rest[0], flags);
}
