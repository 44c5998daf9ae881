/* file_stream: the run's history goes to POST /files/<entity>/<project>/<id>/file_stream in
 * chunks; each chunk carries the line number of its first line ("offset"), so a chunk sent again
 * after a lost answer replaces the same lines instead of adding them. The summary (one line,
 * replaced every time) rides along at offset 0. The last request says complete + exitcode. */
#include "config.h"

#include <string.h>

#include "net/wandb-private.h"

/* Merges the lines in [from, to) of the file into the summary. */
static gboolean merge_lines(wb_stream *s, gint64 from, gint64 to, GError **error)
{
    g_autoptr(GString) buf = g_string_new(NULL);
    gint64 block = 1 << 20;
    while (from < to) {
        gint64 end = MIN(to, from + block);
        if (!wb_history_read(s->hist, from, end, buf, error))
            return FALSE;
        const char *last = NULL;
        for (gsize i = buf->len; i > 0 && !last; i--)
            if (buf->str[i - 1] == '\n')
                last = buf->str + i - 1;
        if (!last) {
            block *= 2; /* a line longer than the block */
            continue;
        }
        const char *p = buf->str, *stop = last + 1;
        while (p < stop) {
            const char *nl = memchr(p, '\n', (size_t)(stop - p));
            if (!rt_wandb_summary_merge(&s->summary, p, (gsize)(nl - p)))
                g_warning("%s: line %.40s... is not a flat JSON object; the summary leaves it out",
                          s->hist->path, p);
            p = nl + 1;
        }
        from += (gint64)(stop - buf->str);
    }
    return TRUE;
}

gboolean wb_stream_init(wb_stream *s, wb_state *st, wb_history *hist, GError **error)
{
    memset(s, 0, sizeof *s);
    s->st = st;
    s->hist = hist;
    rt_wandb_summary_init(&s->summary);
    s->chunk = g_string_new(NULL);
    s->body = g_string_new(NULL);
    if (st->history_sent > hist->lines) {
        g_warning("%s holds %" G_GINT64_FORMAT " lines but %" G_GINT64_FORMAT
                  " were recorded as sent; continuing after the last line",
                  hist->path, hist->lines, st->history_sent);
        st->history_sent = hist->lines;
    }
    if (!wb_history_offset_of_line(hist, st->history_sent, &s->send_offset, error))
        return FALSE;
    return merge_lines(s, 0, s->send_offset, error);
}

void wb_stream_clear(wb_stream *s)
{
    rt_wandb_summary_clear(&s->summary);
    if (s->chunk)
        g_string_free(s->chunk, TRUE);
    if (s->body)
        g_string_free(s->body, TRUE);
    g_free(s->path);
    memset(s, 0, sizeof *s);
}

static void set_path(wb_stream *s)
{
    g_autofree char *e = g_uri_escape_string(s->st->entity, NULL, FALSE);
    g_autofree char *p = g_uri_escape_string(s->st->project, NULL, FALSE);
    g_autofree char *r = g_uri_escape_string(s->st->id, NULL, FALSE);
    g_free(s->path);
    s->path = g_strdup_printf("/files/%s/%s/%s/file_stream", e, p, r);
}

gboolean wb_stream_connected(wb_stream *s, const wb_bucket *bucket, GError **error)
{
    wb_state *st = s->st;
    g_free(st->entity);
    st->entity = g_strdup(bucket->entity);
    if (bucket->storage_id) {
        g_free(st->storage_id);
        st->storage_id = g_strdup(bucket->storage_id);
    }
    set_path(s);

    gint64 server = bucket->history_line_count, lines = s->hist->lines;
    if (st->history_base < 0) {
        /* A new folder: its first line follows what the server has (0 for a new run). */
        st->history_base = server;
        return TRUE;
    }
    gint64 has = server - st->history_base; /* lines of this file the server holds */
    if (has > lines) {
        g_warning("W&B run %s has %" G_GINT64_FORMAT " history lines, more than %s accounts for; new lines "
                  "continue after them",
                  st->id, server, s->hist->path);
        st->history_base = server - lines;
        has = lines;
    }
    if (has > st->history_sent) {
        /* The server acknowledged lines whose answer was lost (or sent by an earlier process). */
        gint64 from = s->send_offset;
        st->history_sent = has;
        if (!wb_history_offset_of_line(s->hist, has, &s->send_offset, error))
            return FALSE;
        return merge_lines(s, from, s->send_offset, error);
    }
    return TRUE;
}

static void parse_reply(wb_stream *s, const char *reply)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    if (reply && *reply && json_parser_load_from_data(parser, reply, -1, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser)) &&
        wb_json_true(json_node_get_object(json_parser_get_root(parser)), "stopped"))
        s->stopped = TRUE;
}

static wb_result post(wb_stream *s, wb_http *http, GError **error)
{
    g_return_val_if_fail(s->path != NULL, WB_FATAL);
    g_autofree char *reply = NULL;
    wb_result r = wb_http_post(http, s->path, s->body->str, s->body->len, &reply, error);
    if (r == WB_OK)
        parse_reply(s, reply);
    return r;
}

wb_result wb_stream_send_lines(wb_stream *s, wb_http *http, gint64 lines, gint64 bytes, GError **error)
{
    wb_state *st = s->st;
    if (st->history_sent >= lines)
        return WB_OK;
    /* A chunk: whole lines from send_offset, at most WB_CHUNK_LINES and WB_CHUNK_BYTES (a longer
     * single line goes alone). */
    gint64 end = MIN(bytes, s->send_offset + (gint64)WB_CHUNK_BYTES);
    for (;;) {
        if (!wb_history_read(s->hist, s->send_offset, end, s->chunk, error))
            return WB_FATAL;
        if (memchr(s->chunk->str, '\n', s->chunk->len) || end == bytes)
            break;
        end = MIN(bytes, end + (gint64)WB_CHUNK_BYTES);
    }
    g_string_truncate(s->body, 0);
    g_string_append_printf(
        s->body, "{\"files\":{\"" WB_HISTORY_FILE "\":{\"offset\":%" G_GINT64_FORMAT ",\"content\":[",
        st->history_base + st->history_sent);
    const char *p = s->chunk->str, *stop = p + s->chunk->len;
    gint64 n = 0;
    while (p < stop && n < WB_CHUNK_LINES && st->history_sent + n < lines) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        if (!nl)
            break;
        if (n)
            g_string_append_c(s->body, ',');
        rt_wandb_append_json_string(s->body, p, nl - p);
        if (!rt_wandb_summary_merge(&s->summary, p, (gsize)(nl - p)))
            g_warning("%s: line %" G_GINT64_FORMAT " is not a flat JSON object; the summary leaves it out",
                      s->hist->path, st->history_sent + n + 1);
        n++;
        p = nl + 1;
    }
    if (n == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s is damaged: no complete line after byte %" G_GINT64_FORMAT
                    " where line %" G_GINT64_FORMAT " should start",
                    s->hist->path, s->send_offset, st->history_sent + 1);
        return WB_FATAL;
    }
    g_string_append(s->body, "]},\"wandb-summary.json\":{\"offset\":0,\"content\":[");
    g_autoptr(GString) summary = g_string_new(NULL);
    rt_wandb_summary_format(&s->summary, summary);
    rt_wandb_append_json_string(s->body, summary->str, (gssize)summary->len);
    g_string_append(s->body, "]}}}");

    wb_result r = post(s, http, error);
    if (r == WB_OK) {
        st->history_sent += n;
        s->send_offset += (gint64)(p - s->chunk->str);
    }
    return r;
}

wb_result wb_stream_send_heartbeat(wb_stream *s, wb_http *http, GError **error)
{
    g_string_assign(s->body, "{}");
    return post(s, http, error);
}

wb_result wb_stream_send_finish(wb_stream *s, wb_http *http, GError **error)
{
    g_string_printf(s->body, "{\"complete\":true,\"exitcode\":%d}", s->st->exitcode);
    wb_result r = post(s, http, error);
    if (r == WB_OK)
        s->st->complete_sent = TRUE;
    return r;
}
