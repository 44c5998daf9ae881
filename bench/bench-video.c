/* bench-video: random-access frame decoding throughput of rt_video_decode_at().
 *
 *   bench-video [--threads=N] [--decoder-threads=N] [--seconds=S] [--sequential] FILE.mp4
 *
 * Each of N threads opens its own decoder on FILE (as loader threads do) and requests frames at
 * uniformly random frame times k/fps (or consecutive ones with --sequential) for S seconds,
 * converting each to float CHW. Prints frames per second in total and per thread (wall clock:
 * with one thread per idle core, frames per second per core), and frames per CPU-second of
 * the whole process (the per-core figure that holds on a busy, shared machine too). */
#include "config.h"

#include "data/video.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <glib.h>

typedef struct {
    const char *path;
    int decoder_threads;
    double seconds;
    gboolean sequential;
    guint32 seed;
    /* results */
    guint64 frames;
    double elapsed, open_ms;
    rt_video_stats stats;
    char *error;
} worker;

/* CPU seconds the process has used, decoder threads included: on a shared machine, frames
 * per CPU-second is the honest per-core measure. */
static double process_cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static gpointer run_worker(gpointer data)
{
    worker *w = data;
    GError *error = NULL;
    gint64 t0 = g_get_monotonic_time();
    rt_video_decoder *dec = rt_video_decoder_open(w->path, w->decoder_threads, &error);
    w->open_ms = (g_get_monotonic_time() - t0) / 1e3;
    if (!dec) {
        w->error = g_strdup(error->message);
        g_error_free(error);
        return NULL;
    }
    int64_t count = rt_video_decoder_frame_count(dec);
    double fps = rt_video_decoder_fps(dec);
    if (count <= 0 || fps <= 0) {
        w->error = g_strdup("the video does not declare its frame count and rate");
        rt_video_decoder_free(dec);
        return NULL;
    }
    float *chw = g_new(float, rt_video_decoder_frame_floats(dec));
    GRand *rand = g_rand_new_with_seed(w->seed);
    gint64 start = g_get_monotonic_time(), end = start + (gint64)(w->seconds * 1e6), now = start;
    int64_t k = 0;
    while (now < end) {
        for (int i = 0; i < 16; i++) {
            k = w->sequential ? (k + 1) % count : g_rand_int_range(rand, 0, (gint32)count);
            if (!rt_video_decode_at(dec, k / fps, RT_VIDEO_DEFAULT_TOLERANCE_S, chw, &error)) {
                w->error = g_strdup(error->message);
                g_error_free(error);
                goto done;
            }
            w->frames++;
        }
        now = g_get_monotonic_time();
    }
done:
    w->elapsed = (g_get_monotonic_time() - start) / 1e6;
    rt_video_decoder_get_stats(dec, &w->stats);
    g_rand_free(rand);
    g_free(chw);
    rt_video_decoder_free(dec);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 1, decoder_threads = 1;
    double seconds = 3;
    gboolean sequential = FALSE;
    GOptionEntry entries[] = {
        {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "loader threads, one decoder each", "N"},
        {"decoder-threads", 0, 0, G_OPTION_ARG_INT, &decoder_threads, "threads per decoder", "N"},
        {"seconds", 0, 0, G_OPTION_ARG_DOUBLE, &seconds, "how long each thread runs", "S"},
        {"sequential", 0, 0, G_OPTION_ARG_NONE, &sequential, "consecutive frames, not random", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    GOptionContext *ctx = g_option_context_new("FILE.mp4 - video random-access benchmark");
    g_option_context_add_main_entries(ctx, entries, NULL);
    GError *error = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 2 || threads < 1 ||
        decoder_threads < 1 || !(seconds > 0)) {
        fprintf(stderr, "bench-video: %s\nusage: bench-video [--threads=N] [--decoder-threads=N] "
                        "[--seconds=S] [--sequential] FILE.mp4\n",
                error ? error->message : "bad arguments");
        return 2;
    }
    g_option_context_free(ctx);

    double cpu_start = process_cpu_seconds();
    worker *workers = g_new0(worker, threads);
    GThread **handles = g_new(GThread *, threads);
    for (int i = 0; i < threads; i++) {
        workers[i] = (worker){.path = argv[1], .decoder_threads = decoder_threads,
                              .seconds = seconds, .sequential = sequential, .seed = 1234u + i};
        handles[i] = g_thread_new("bench-video", run_worker, &workers[i]);
    }
    double total = 0, open_ms = 0;
    guint64 frames = 0, decoded = 0, seeks = 0;
    int status = 0;
    for (int i = 0; i < threads; i++) {
        g_thread_join(handles[i]);
        worker *w = &workers[i];
        if (w->error) {
            fprintf(stderr, "bench-video: thread %d: %s\n", i, w->error);
            status = 1;
            continue;
        }
        total += w->frames / w->elapsed;
        frames += w->frames;
        decoded += w->stats.frames_decoded;
        seeks += w->stats.seeks;
        open_ms += w->open_ms;
    }
    double cpu = process_cpu_seconds() - cpu_start;
    if (status == 0)
        printf("%s access, %d thread(s) x %d decoder thread(s): %.0f frames/s total (wall "
               "clock), %.0f per thread; %.0f frames per CPU-second; %.2f frames "
               "decoded and %.2f seeks per request; open %.1f ms\n",
               sequential ? "sequential" : "random", threads, decoder_threads, total,
               total / threads, frames / cpu, (double)decoded / frames,
               (double)seeks / frames, open_ms / threads);
    g_free(handles);
    g_free(workers);
    return status;
}
