/* A one-line transfer display for a terminal: "Fetching 3/12 data/chunk-000/file-000.parquet
 * 45% 1.2/2.6 MB", redrawn in place, ended with a newline when the client is done. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "net/hub-private.h"

struct rt_hub_tty_progress {
    rt_hub *hub;
    FILE *out;
    gboolean drawn;
};

static void human_size(char *buf, size_t len, guint64 n)
{
    if (n < 1000)
        g_snprintf(buf, len, "%" G_GUINT64_FORMAT " B", n);
    else if (n < 1000000)
        g_snprintf(buf, len, "%.1f kB", n / 1e3);
    else if (n < 1000000000)
        g_snprintf(buf, len, "%.1f MB", n / 1e6);
    else
        g_snprintf(buf, len, "%.2f GB", n / 1e9);
}

static gboolean report(const rt_hub_progress *p, void *user_data)
{
    rt_hub_tty_progress *tp = user_data;
    char done[32], total[32];
    human_size(done, sizeof done, p->done);
    human_size(total, sizeof total, p->total);
    /* the path is cut from the left so that the line stays within 80 columns */
    const char *path = p->path ? p->path : "";
    size_t len = strlen(path);
    const char *shown = len > 40 ? path + len - 40 : path;
    fprintf(tp->out, "\r\033[K%s %u/%u %s%s", p->upload ? "Uploading" : "Fetching", p->file_index, p->n_files,
            len > 40 ? "..." : "", shown);
    if (p->total > 0)
        fprintf(tp->out, " %3.0f%% %s/%s", 100.0 * (double)p->done / (double)p->total, done, total);
    else
        fprintf(tp->out, " %s", done);
    fflush(tp->out);
    tp->drawn = TRUE;
    return TRUE;
}

rt_hub_tty_progress *rt_hub_tty_progress_attach(rt_hub *hub, FILE *out)
{
    if (!hub || !out || !isatty(fileno(out)))
        return NULL;
    rt_hub_tty_progress *tp = g_new0(rt_hub_tty_progress, 1);
    tp->hub = hub;
    tp->out = out;
    rt_hub_set_progress(hub, report, tp);
    return tp;
}

void rt_hub_tty_progress_detach(rt_hub_tty_progress *tp)
{
    if (!tp)
        return;
    rt_hub_set_progress(tp->hub, NULL, NULL);
    if (tp->drawn) {
        fputs("\r\033[K", tp->out);
        fflush(tp->out);
    }
    g_free(tp);
}
