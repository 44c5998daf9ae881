/* Training metrics, LeRobot's console line, metrics.jsonl and a progress bar (see metrics.h). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <robotrain/error.h>

#include "core/json-write.h"
#include "train/metrics.h"

#define MAX_METERS 32

struct rt_metrics {
    int64_t batch_size;
    int world_size;
    int64_t num_frames;
    double avg_samples_per_episode;
    int64_t steps, samples;
    double episodes, epochs;
    int n_meters;
    rt_meter meters[MAX_METERS];
    char *owned_keys[MAX_METERS]; /* keys of meters registered on the fly */
};

/* LeRobot v0.6.1's meters, in its order (lerobot_train.py). */
static const rt_meter standard_meters[] = {
    {"loss", "loss", 'f', 3, 0, 0, 0, 0},
    {"grad_norm", "grdn", 'f', 3, 0, 0, 0, 0},
    {"lr", "lr", 'e', 1, 0, 0, 0, 0},
    {"update_s", "updt_s", 'f', 3, 0, 0, 0, 0},
    {"dataloading_s", "data_s", 'f', 3, 0, 0, 0, 0},
    {"samples_per_s", "smp/s", 'f', 0, 0, 0, 0, 0},
    {"gpu_mem_gb", "mem_gb", 'f', 2, 0, 0, 0, 0},
};

void rt_format_big_number(GString *out, double num)
{
    static const char *const suffixes[] = {"", "K", "M", "B", "T", "Q"};
    for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        if (fabs(num) < 1000.0) {
            g_string_append_printf(out, "%.0f%s", num, suffixes[i]);
            return;
        }
        num /= 1000.0;
    }
    rt_json_append_double(out, num); /* past Q LeRobot returns the float itself */
}

rt_metrics *rt_metrics_new(int64_t batch_size, int world_size, int64_t num_frames, int64_t num_episodes,
                           int64_t initial_step, gboolean gpu_mem)
{
    rt_metrics *m = g_new0(rt_metrics, 1);
    m->batch_size = batch_size;
    m->world_size = MAX(world_size, 1);
    m->num_frames = MAX(num_frames, 1);
    m->avg_samples_per_episode = (double)m->num_frames / (double)MAX(num_episodes, 1);
    m->steps = initial_step;
    m->samples = initial_step * batch_size * m->world_size;
    m->episodes = (double)m->samples / m->avg_samples_per_episode;
    m->epochs = (double)m->samples / (double)m->num_frames;
    for (guint i = 0; i < G_N_ELEMENTS(standard_meters); i++) {
        if (!gpu_mem && strcmp(standard_meters[i].key, "gpu_mem_gb") == 0)
            continue;
        m->meters[m->n_meters++] = standard_meters[i];
    }
    return m;
}

void rt_metrics_free(rt_metrics *m)
{
    if (!m)
        return;
    for (int i = 0; i < MAX_METERS; i++)
        g_free(m->owned_keys[i]);
    g_free(m);
}

static rt_meter *find_meter(const rt_metrics *m, const char *key)
{
    for (int i = 0; i < m->n_meters; i++)
        if (strcmp(m->meters[i].key, key) == 0)
            return (rt_meter *)&m->meters[i];
    return NULL;
}

const rt_meter *rt_metrics_meter(const rt_metrics *m, const char *key)
{
    return find_meter(m, key);
}

void rt_metrics_update(rt_metrics *m, const char *key, double value)
{
    rt_meter *meter = find_meter(m, key);
    if (!meter) {
        if (m->n_meters == MAX_METERS) {
            g_warning("metrics: no room for a meter '%s' (%d meters)", key, MAX_METERS);
            return;
        }
        int i = m->n_meters++;
        m->owned_keys[i] = g_strdup(key);
        m->meters[i] = (rt_meter){m->owned_keys[i], m->owned_keys[i], 'f', 3, 0, 0, 0, 0};
        meter = &m->meters[i];
    }
    meter->val = value;
    meter->sum += value;
    meter->count += 1;
    meter->avg = meter->sum / meter->count;
}

void rt_metrics_add_meter(rt_metrics *m, const char *key, const char *label, char style, int precision)
{
    if (find_meter(m, key))
        return;
    if (m->n_meters == MAX_METERS) {
        g_warning("metrics: no room for a meter '%s' (%d meters)", key, MAX_METERS);
        return;
    }
    int i = m->n_meters++;
    /* key and label in one owned string: "key\0label" */
    size_t nk = strlen(key), nl = strlen(label);
    char *both = g_malloc(nk + nl + 2);
    memcpy(both, key, nk + 1);
    memcpy(both + nk + 1, label, nl + 1);
    m->owned_keys[i] = both;
    m->meters[i] = (rt_meter){both, both + nk + 1, style, precision, 0, 0, 0, 0};
}

void rt_metrics_step(rt_metrics *m)
{
    m->steps++;
    m->samples += m->batch_size * m->world_size;
    m->episodes = (double)m->samples / m->avg_samples_per_episode;
    m->epochs = (double)m->samples / (double)m->num_frames;
}

void rt_metrics_set_average(rt_metrics *m, const char *key, double avg)
{
    rt_meter *meter = find_meter(m, key);
    if (!meter || meter->count <= 0)
        return;
    meter->avg = avg;
    meter->sum = avg * meter->count;
}

void rt_metrics_finish_window(rt_metrics *m)
{
    rt_meter *u = find_meter(m, "update_s"), *d = find_meter(m, "dataloading_s");
    double step_time = u->avg + d->avg;
    if (step_time > 0)
        rt_metrics_update(m, "samples_per_s", (double)(m->batch_size * m->world_size) / step_time);
}

void rt_metrics_reset(rt_metrics *m)
{
    for (int i = 0; i < m->n_meters; i++)
        m->meters[i].val = m->meters[i].sum = m->meters[i].count = m->meters[i].avg = 0;
}

int64_t rt_metrics_steps(const rt_metrics *m)
{
    return m->steps;
}

int64_t rt_metrics_samples(const rt_metrics *m)
{
    return m->samples;
}

double rt_metrics_episodes(const rt_metrics *m)
{
    return m->episodes;
}

double rt_metrics_epochs(const rt_metrics *m)
{
    return m->epochs;
}

/* printf of a double as Python's format would print it: "nan", "inf", "-inf" for non-finite */
static void append_formatted(GString *out, char style, int precision, double v)
{
    if (isnan(v))
        g_string_append(out, "nan");
    else if (isinf(v))
        g_string_append(out, v < 0 ? "-inf" : "inf");
    else if (style == 'e')
        g_string_append_printf(out, "%.*e", precision, v);
    else
        g_string_append_printf(out, "%.*f", precision, v);
}

char *rt_metrics_format_line(const rt_metrics *m)
{
    GString *s = g_string_new("step:");
    rt_format_big_number(s, (double)m->steps);
    g_string_append(s, " smpl:");
    rt_format_big_number(s, (double)m->samples);
    g_string_append(s, " ep:");
    rt_format_big_number(s, m->episodes);
    g_string_append(s, " epch:");
    append_formatted(s, 'f', 2, m->epochs);
    for (int i = 0; i < m->n_meters; i++) {
        g_string_append_printf(s, " %s:", m->meters[i].label);
        append_formatted(s, m->meters[i].style, m->meters[i].precision, m->meters[i].avg);
    }
    return g_string_free(s, FALSE);
}

static void append_json_number(GString *s, double v)
{
    if (isfinite(v))
        rt_json_append_double(s, v);
    else
        g_string_append(s, "null");
}

char *rt_metrics_to_json(const rt_metrics *m, double unix_time)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(
        s, "{\"steps\": %" G_GINT64_FORMAT ", \"samples\": %" G_GINT64_FORMAT ", \"episodes\": ",
        (gint64)m->steps, (gint64)m->samples);
    append_json_number(s, m->episodes);
    g_string_append(s, ", \"epochs\": ");
    append_json_number(s, m->epochs);
    for (int i = 0; i < m->n_meters; i++) {
        g_string_append(s, ", ");
        rt_json_append_string(s, m->meters[i].key);
        g_string_append(s, ": ");
        append_json_number(s, m->meters[i].avg);
    }
    g_string_append(s, ", \"time\": ");
    g_string_append_printf(s, "%.3f", unix_time);
    g_string_append_c(s, '}');
    return g_string_free(s, FALSE);
}

void rt_log_prefix(GString *out, const char *level, GDateTime *when, const char *file, int line)
{
    g_autofree char *stamp = g_date_time_format(when, "%Y-%m-%d %H:%M:%S");
    g_autofree char *location = g_strdup_printf("%s:%d", file, line);
    size_t n = strlen(location);
    g_string_append_printf(out, "%s %s %15s ", level, stamp, n > 15 ? location + n - 15 : location);
}

/* ---------------------------------------------------------------- metrics.jsonl */

struct rt_metrics_log {
    FILE *file;
    char *path;
};

rt_metrics_log *rt_metrics_log_open(const char *output_dir, GError **error)
{
    if (g_mkdir_with_parents(output_dir, 0755) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot create: %s", output_dir, g_strerror(errno));
        return NULL;
    }
    g_autofree char *path = g_build_filename(output_dir, "metrics.jsonl", NULL);
    FILE *f = g_fopen(path, "ae");
    if (!f) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot open for appending: %s", path,
                    g_strerror(errno));
        return NULL;
    }
    rt_metrics_log *log = g_new0(rt_metrics_log, 1);
    log->file = f;
    log->path = g_steal_pointer(&path);
    return log;
}

gboolean rt_metrics_log_write(rt_metrics_log *log, const rt_metrics *m, double unix_time, GError **error)
{
    g_autofree char *line = rt_metrics_to_json(m, unix_time);
    if (fputs(line, log->file) < 0 || fputc('\n', log->file) < 0 || fflush(log->file) != 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: cannot write: %s", log->path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

void rt_metrics_log_close(rt_metrics_log *log)
{
    if (!log)
        return;
    fclose(log->file);
    g_free(log->path);
    g_free(log);
}

/* ---------------------------------------------------------------- progress bar */

/* tqdm's format_interval: MM:SS, or H:MM:SS from an hour on */
static void append_interval(GString *s, double seconds)
{
    gint64 t = (gint64)MAX(0, seconds);
    gint64 h = t / 3600, mnt = t / 60 % 60, sec = t % 60;
    if (h)
        g_string_append_printf(s, "%" G_GINT64_FORMAT ":%02" G_GINT64_FORMAT ":%02" G_GINT64_FORMAT, h, mnt,
                               sec);
    else
        g_string_append_printf(s, "%02" G_GINT64_FORMAT ":%02" G_GINT64_FORMAT, mnt, sec);
}

char *rt_progress_format(const char *desc, int64_t n, int64_t total, double elapsed, double rate, int width)
{
    double frac = total > 0 ? (double)n / (double)total : 0;
    frac = CLAMP(frac, 0, 1);
    GString *left = g_string_new(NULL);
    g_string_append_printf(left, "%s: %3.0f%%|", desc, frac * 100);
    GString *right = g_string_new(NULL);
    g_string_append_printf(right, "| %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT " [", (gint64)n, (gint64)total);
    append_interval(right, elapsed);
    g_string_append_c(right, '<');
    if (rate > 0)
        append_interval(right, (double)(total - n) / rate);
    else
        g_string_append_c(right, '?');
    g_string_append(right, ", ");
    if (rate > 0 && 1.0 / rate > 1)
        g_string_append_printf(right, "%5.2fs/step]", 1.0 / rate);
    else if (rate > 0)
        g_string_append_printf(right, "%5.2fstep/s]", rate);
    else
        g_string_append(right, "?step/s]");
    /* the bar fills what is left, in eighths of a cell */
    int cells = width - (int)g_utf8_strlen(left->str, -1) - (int)right->len;
    if (cells < 1)
        cells = 10;
    static const char *const eighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    int filled8 = (int)(frac * cells * 8);
    int full = filled8 / 8, part = filled8 % 8;
    for (int i = 0; i < full; i++)
        g_string_append(left, "█");
    int used = full;
    if (full < cells && part) {
        g_string_append(left, eighths[part]);
        used++;
    }
    for (int i = used; i < cells; i++)
        g_string_append_c(left, ' ');
    g_string_append(left, right->str);
    g_string_free(right, TRUE);
    return g_string_free(left, FALSE);
}

struct rt_progress {
    FILE *out;
    gboolean enabled;
    int64_t start, total, n;
    gint64 t0, last_draw;
    gboolean drawn;
};

rt_progress *rt_progress_new(FILE *out, int64_t start, int64_t total)
{
    rt_progress *p = g_new0(rt_progress, 1);
    p->out = out;
    p->enabled = out && isatty(fileno(out)) && !g_getenv("SLURM_JOB_ID");
    p->start = p->n = start;
    p->total = total;
    p->t0 = g_get_monotonic_time();
    return p;
}

void rt_progress_free(rt_progress *p)
{
    if (!p)
        return;
    if (p->enabled && p->drawn)
        fputc('\n', p->out);
    g_free(p);
}

gboolean rt_progress_enabled(const rt_progress *p)
{
    return p->enabled;
}

static int terminal_width(FILE *out)
{
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 80;
}

static void draw(rt_progress *p)
{
    double elapsed = (double)(g_get_monotonic_time() - p->t0) / 1e6;
    double rate = elapsed > 0 && p->n > p->start ? (double)(p->n - p->start) / elapsed : 0;
    g_autofree char *line =
        rt_progress_format("Training", p->n, p->total, elapsed, rate, terminal_width(p->out) - 1);
    fprintf(p->out, "\r%s\033[K", line);
    fflush(p->out);
    p->drawn = TRUE;
    p->last_draw = g_get_monotonic_time();
}

void rt_progress_update(rt_progress *p, int64_t n)
{
    p->n = n;
    if (!p->enabled)
        return;
    if (n < p->total && g_get_monotonic_time() - p->last_draw < 100000)
        return;
    draw(p);
}

void rt_progress_print(rt_progress *p, const char *line)
{
    if (p->enabled && p->drawn)
        fputs("\r\033[K", p->out);
    fputs(line, p->out);
    if (p->enabled && p->drawn)
        draw(p);
    else
        fflush(p->out);
}
