/* src/train/metrics.h: training metrics as LeRobot tracks and prints them, plus metrics.jsonl
 * and a progress bar (../shared/spec/lerobot.md §4.5; lerobot/utils/logging_utils.py).
 *
 * Meters average the values given since the last log step (LeRobot's AverageMeter); the
 * tracker counts steps, samples (steps x batch_size x processes), episodes (samples / average
 * episode length) and epochs (samples / frames) from the initial step, as MetricsTracker does.
 * The console line is LeRobot v0.6's:
 *
 *   step:200 smpl:2K ep:3 epch:0.08 loss:1.234 grdn:12.345 lr:1.0e-05 updt_s:0.123 data_s:0.012
 *   smp/s:61 [mem_gb:1.23] l1_loss:0.456 kld_loss:0.078
 *
 * with step, smpl and ep abbreviated as format_big_number does (no decimals, K/M/B/T/Q for
 * thousands), epch with two decimals, and each meter in its own format (loss .3f, lr .1e,
 * smp/s .0f, mem_gb .2f, the policy's sub-losses .3f). */
#ifndef ROBOTRAIN_TRAIN_METRICS_H
#define ROBOTRAIN_TRAIN_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include <glib.h>

G_BEGIN_DECLS

/* LeRobot's format_big_number(num) (precision 0): "200", "2K", "1M". Appends to out. */
void rt_format_big_number(GString *out, double num);

/* One averaged value. */
typedef struct rt_meter {
    const char *key;   /* "loss", "grad_norm", ... : metrics.jsonl and W&B */
    const char *label; /* "loss", "grdn", ... : the console line */
    char style;        /* how the average is printed: 'f' (fixed) or 'e' (exponent) ... */
    int precision;     /* ... with this many decimals: loss 'f' 3, lr 'e' 1 */
    double val, sum, count, avg;
} rt_meter;

typedef struct rt_metrics rt_metrics;

/* A tracker for a run with these numbers, counting from initial_step (a resumed run's).
 * gpu_mem adds the mem_gb meter (LeRobot does when CUDA is available).
 * Returns (transfer full): free with rt_metrics_free(). */
rt_metrics *rt_metrics_new(int64_t batch_size, int world_size, int64_t num_frames, int64_t num_episodes,
                           int64_t initial_step, gboolean gpu_mem);
void rt_metrics_free(rt_metrics *m);

/* Adds a value to the meter key. The standard meters are loss, grad_norm, lr, update_s,
 * dataloading_s, samples_per_s and gpu_mem_gb; any other key (a policy's l1_loss, kld_loss) gets
 * a meter of its own at its first value, labelled with its key, format %.3f, placed after the
 * standard ones in order of arrival. Non-finite values are averaged like others. */
void rt_metrics_update(rt_metrics *m, const char *key, double value);

/* Declares the meter key with its console label and format, placed after those already there
 * (a key already declared keeps its own). For meters not averaged by rt_metrics_update's
 * default %.3f, such as counts. */
void rt_metrics_add_meter(rt_metrics *m, const char *key, const char *label, char style, int precision);

/* Replaces the average of meter key (a value reduced over the processes of a run); no-op when
 * the meter has no value yet. */
void rt_metrics_set_average(rt_metrics *m, const char *key, double avg);
/* One optimizer step done: steps, samples, episodes and epochs advance. */
void rt_metrics_step(rt_metrics *m);

/* Before printing a log step: samples_per_s = effective batch / (update_s + dataloading_s
 * averages), when that sum is positive. */
void rt_metrics_finish_window(rt_metrics *m);

/* Resets every meter (after a log step). */
void rt_metrics_reset(rt_metrics *m);

int64_t rt_metrics_steps(const rt_metrics *m);
int64_t rt_metrics_samples(const rt_metrics *m);
double rt_metrics_episodes(const rt_metrics *m);
double rt_metrics_epochs(const rt_metrics *m);
/* The meter of key, or NULL when it has none. Returns (transfer none). */
const rt_meter *rt_metrics_meter(const rt_metrics *m, const char *key);

/* The console line. Returns (transfer full) a string to g_free. */
char *rt_metrics_format_line(const rt_metrics *m);

/* One line of metrics.jsonl (no newline): {"steps", "samples", "episodes", "epochs", every
 * meter's average by key, "time": unix seconds}; non-finite averages as null.
 * Returns (transfer full) a string to g_free. */
char *rt_metrics_to_json(const rt_metrics *m, double unix_time);

/* The record prefix of LeRobot's console logger: "INFO 2026-12-01 09:30:05 <last 15 characters
 * of file:line, right-aligned> ". Appends to out. */
void rt_log_prefix(GString *out, const char *level, GDateTime *when, const char *file, int line);

/* ---------------------------------------------------------------- metrics.jsonl */

typedef struct rt_metrics_log rt_metrics_log;

/* Opens OUTPUT_DIR/metrics.jsonl for appending (a resumed run adds to it), creating the folder.
 * Returns (transfer full): close with rt_metrics_log_close(); NULL with RT_ERROR_IO naming the
 * file. */
rt_metrics_log *rt_metrics_log_open(const char *output_dir, GError **error);
/* Appends the line of rt_metrics_to_json() and flushes it, so that a crash loses nothing. */
gboolean rt_metrics_log_write(rt_metrics_log *log, const rt_metrics *m, double unix_time, GError **error);
void rt_metrics_log_close(rt_metrics_log *log);

/* ---------------------------------------------------------------- progress bar */

/* tqdm's line for `n` of `total` steps after `elapsed` seconds at `rate` steps/s (<= 0:
 * unknown), `width` columns wide: "Training:  12%|█▏        | 1200/10000 [01:02<07:40,
 * 19.30step/s]". Returns (transfer full) a string to g_free. */
char *rt_progress_format(const char *desc, int64_t n, int64_t total, double elapsed, double rate, int width);

typedef struct rt_progress rt_progress;

/* A bar on out for steps [start, total), drawn only when out is a terminal and SLURM_JOB_ID is
 * unset (as LeRobot's tqdm); otherwise every call does nothing.
 * Returns (transfer full): free with rt_progress_free(). */
rt_progress *rt_progress_new(FILE *out, int64_t start, int64_t total);
void rt_progress_free(rt_progress *p);
gboolean rt_progress_enabled(const rt_progress *p);
/* Step n is done: redraws the bar (at most ten times a second). */
void rt_progress_update(rt_progress *p, int64_t n);
/* Prints line (a log line, with its newline) above the bar. */
void rt_progress_print(rt_progress *p, const char *line);

G_END_DECLS

#endif
