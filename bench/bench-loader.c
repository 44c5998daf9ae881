/* bench-loader: training samples per second the loader delivers, as an ACT run asks for them.
 *
 *   bench-loader [--workers=N] [--batch-size=B] [--chunk-size=C] [--seconds=S]
 *                [--episodes=E,...] [--no-normalize] ROOT
 *
 * Opens the dataset at ROOT, asks for ACT's action chunk (C, default 100), normalizes as ACT
 * (MEAN_STD, ImageNet stats for cameras), samples shuffled batches of B (default 8) and takes
 * them from a loader with N threads (default 1; 0 = in the caller) as fast as they come, for S
 * seconds after a first batch. The consumer does no work, so this is the loader's ceiling:
 * training is fed without waiting as long as it needs more time per batch than shown here.
 * Prints samples per second (wall clock), the mean wait per batch (LeRobot's data_s for an
 * infinitely fast model), and samples per CPU-second of the whole process (the per-core figure
 * that holds on a busy, shared machine too). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/normalize.h"
#include "data/sampler.h"

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_seconds(void)
{
    return (double)g_get_monotonic_time() / 1e6;
}

int main(int argc, char **argv)
{
    int workers = 1, batch_size = 8, chunk = 100;
    double seconds = 5;
    gboolean no_normalize = FALSE;
    char *episodes_arg = NULL;
    GOptionEntry entries[] = {
        {"workers", 0, 0, G_OPTION_ARG_INT, &workers, "Loader threads (0: in the caller)", "N"},
        {"batch-size", 0, 0, G_OPTION_ARG_INT, &batch_size, "Samples per batch", "B"},
        {"chunk-size", 0, 0, G_OPTION_ARG_INT, &chunk, "ACT's action chunk", "C"},
        {"seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "How long to measure", "S"},
        {"episodes", 0, 0, G_OPTION_ARG_STRING, &episodes_arg, "Episodes to use (comma-separated)", "E,..."},
        {"no-normalize", 0, 0, G_OPTION_ARG_NONE, &no_normalize, "Skip normalization", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    GOptionContext *ctx = g_option_context_new("ROOT");
    g_option_context_add_main_entries(ctx, entries, NULL);
    GError *error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 2) {
        fprintf(stderr, "bench-loader: %s\n", error ? error->message : "give one dataset folder");
        return 2;
    }
    g_option_context_free(ctx);

    rt_dataset_options o;
    rt_dataset_options_init(&o);
    GArray *eps = g_array_new(FALSE, FALSE, sizeof(int64_t));
    if (episodes_arg) {
        g_auto(GStrv) parts = g_strsplit(episodes_arg, ",", -1);
        for (size_t i = 0; parts[i]; i++) {
            int64_t e = g_ascii_strtoll(parts[i], NULL, 10);
            g_array_append_val(eps, e);
        }
        o.episodes = (const int64_t *)(void *)eps->data;
        o.n_episodes = eps->len;
    }
    double t0 = wall_seconds();
    rt_dataset *ds = rt_dataset_open(argv[1], &o, &error);
    if (!ds || !rt_dataset_set_action_chunk(ds, chunk, &error)) {
        fprintf(stderr, "bench-loader: %s\n", error->message);
        return 1;
    }
    double open_s = wall_seconds() - t0;
    rt_norm_map map;
    rt_norm_map_act(&map);
    rt_normalizer *norm = no_normalize ? NULL : rt_normalizer_new(ds, &map, &error);
    if (!no_normalize && !norm) {
        fprintf(stderr, "bench-loader: %s\n", error->message);
        return 1;
    }
    rt_sampler_options so;
    rt_sampler_options_init(&so);
    so.num_items = rt_dataset_num_frames(ds);
    so.batch_size = batch_size;
    rt_sampler *sampler = rt_sampler_new(&so, &error);
    rt_loader_options lo;
    rt_loader_options_init(&lo);
    lo.num_workers = workers;
    lo.normalizer = norm;
    rt_loader *loader = sampler ? rt_loader_new(ds, sampler, &lo, &error) : NULL;
    if (!loader) {
        fprintf(stderr, "bench-loader: %s\n", error->message);
        return 1;
    }
    int cams = 0;
    for (int i = 0; i < rt_dataset_num_features(ds); i++)
        cams += rt_dataset_feature(ds, i)->kind == RT_FEATURE_VIDEO;

    /* the first batch opens the decoders: not part of the steady state */
    rt_batch *b = rt_loader_next(loader, &error);
    if (!b) {
        fprintf(stderr, "bench-loader: %s\n", error->message);
        return 1;
    }
    rt_loader_release(loader, b);
    rt_loader_stats before;
    rt_loader_get_stats(loader, &before);
    double w0 = wall_seconds(), c0 = cpu_seconds();
    int64_t samples = 0, batches = 0;
    while (wall_seconds() - w0 < seconds) {
        b = rt_loader_next(loader, &error);
        if (!b) {
            fprintf(stderr, "bench-loader: %s\n", error->message);
            return 1;
        }
        samples += b->size;
        batches++;
        rt_loader_release(loader, b);
    }
    double wall = wall_seconds() - w0, cpu = cpu_seconds() - c0;
    rt_loader_stats after;
    rt_loader_get_stats(loader, &after);
    printf("workers %d, batch %d, %d camera(s), chunk %d%s: %.1f samples/s (%.2f batches/s), "
           "wait %.1f ms/batch, %.1f samples per CPU-second; %" G_GINT64_FORMAT " frames, opened in %.2f s\n",
           workers, batch_size, cams, chunk, norm ? ", normalized" : "", (double)samples / wall,
           (double)batches / wall, 1e3 * (after.wait_s - before.wait_s) / (double)batches,
           (double)samples / cpu, rt_dataset_num_frames(ds), open_s);
    rt_loader_free(loader);
    rt_sampler_free(sampler);
    rt_normalizer_free(norm);
    rt_dataset_free(ds);
    g_array_free(eps, TRUE);
    g_free(episodes_arg);
    return 0;
}
