/* Worker output with a rank prefix on each line (robotrain launch --prefix_output). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "dist/launcher.h"

struct rt_line_prefixer {
    char *prefix;
    size_t prefix_len;
    int fd;
    gboolean broken; /* a write failed: drop the rest */
    GString *line;   /* prefix + the line being assembled */
};

rt_line_prefixer *rt_line_prefixer_new(const char *prefix, int out_fd)
{
    g_return_val_if_fail(prefix != NULL && out_fd >= 0, NULL);
    rt_line_prefixer *p = g_new0(rt_line_prefixer, 1);
    p->prefix = g_strdup(prefix);
    p->prefix_len = strlen(prefix);
    p->fd = out_fd;
    p->line = g_string_sized_new(p->prefix_len + 256);
    g_string_append(p->line, prefix);
    return p;
}

static void write_all(rt_line_prefixer *p, const char *data, size_t size)
{
    while (size > 0 && !p->broken) {
        ssize_t n = write(p->fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            p->broken = TRUE; /* EPIPE, EIO: nobody reads the output any more */
            return;
        }
        data += n;
        size -= (size_t)n;
    }
}

/* Writes the assembled line (adding the newline) and starts the next one. */
static void emit(rt_line_prefixer *p)
{
    if (p->line->str[p->line->len - 1] != '\n')
        g_string_append_c(p->line, '\n');
    write_all(p, p->line->str, p->line->len);
    g_string_truncate(p->line, p->prefix_len);
}

void rt_line_prefixer_feed(rt_line_prefixer *p, const char *data, size_t size)
{
    g_return_if_fail(p != NULL && (data != NULL || size == 0));
    while (size > 0) {
        size_t room = RT_LINE_PREFIXER_MAX - (p->line->len - p->prefix_len);
        const char *nl = memchr(data, '\n', MIN(size, room));
        size_t take = nl ? (size_t)(nl - data) + 1 : MIN(size, room);
        g_string_append_len(p->line, data, (gssize)take);
        data += take;
        size -= take;
        if (nl || p->line->len - p->prefix_len == RT_LINE_PREFIXER_MAX)
            emit(p);
    }
}

void rt_line_prefixer_flush(rt_line_prefixer *p)
{
    g_return_if_fail(p != NULL);
    if (p->line->len > p->prefix_len)
        emit(p);
}

void rt_line_prefixer_free(rt_line_prefixer *p)
{
    if (!p)
        return;
    rt_line_prefixer_flush(p);
    g_string_free(p->line, TRUE);
    g_free(p->prefix);
    g_free(p);
}
