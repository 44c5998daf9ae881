/* The run folder on disk: run.json (the run and how far sending got), wandb-history.jsonl (every
 * line, in order), the lock that keeps two processes from sending the same folder, and the
 * latest-run link that lets --resume find the run id. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "net/wandb-private.h"

char *wb_run_dir(const char *output_dir, const char *id)
{
    g_autofree char *name = g_strconcat("run-", id, NULL);
    return g_build_filename(output_dir, "wandb", name, NULL);
}

/* ---------------------------------------------------------------- run.json */

void wb_state_clear(wb_state *st)
{
    g_free(st->id);
    g_free(st->project);
    g_free(st->entity);
    g_free(st->storage_id);
    g_free(st->display_name);
    g_free(st->notes);
    g_strfreev(st->tags);
    g_free(st->config);
    g_free(st->host);
    memset(st, 0, sizeof *st);
}

static void add_string(JsonBuilder *b, const char *key, const char *value)
{
    json_builder_set_member_name(b, key);
    if (value)
        json_builder_add_string_value(b, value);
    else
        json_builder_add_null_value(b);
}

gboolean wb_state_save(const wb_state *st, const char *dir, GError **error)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "format");
    json_builder_add_int_value(b, 1);
    add_string(b, "id", st->id);
    add_string(b, "project", st->project);
    add_string(b, "entity", st->entity);
    add_string(b, "storage_id", st->storage_id);
    add_string(b, "display_name", st->display_name);
    add_string(b, "notes", st->notes);
    json_builder_set_member_name(b, "tags");
    json_builder_begin_array(b);
    for (size_t i = 0; st->tags && st->tags[i]; i++)
        json_builder_add_string_value(b, st->tags[i]);
    json_builder_end_array(b);
    add_string(b, "config", st->config);
    add_string(b, "host", st->host);
    add_string(b, "mode", rt_wandb_mode_name(st->mode));
    json_builder_set_member_name(b, "history_base");
    if (st->history_base >= 0)
        json_builder_add_int_value(b, st->history_base);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "history_sent");
    json_builder_add_int_value(b, st->history_sent);
    json_builder_set_member_name(b, "runtime");
    json_builder_add_double_value(b, st->runtime);
    json_builder_set_member_name(b, "exitcode");
    if (st->finished)
        json_builder_add_int_value(b, st->exitcode);
    else
        json_builder_add_null_value(b);
    json_builder_set_member_name(b, "complete_sent");
    json_builder_add_boolean_value(b, st->complete_sent);
    json_builder_end_object(b);

    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    json_generator_set_pretty(gen, TRUE);
    gsize len;
    g_autofree char *text = json_generator_to_data(gen, &len);
    g_autofree char *path = g_build_filename(dir, WB_STATE_FILE, NULL);
    g_autoptr(GError) io_error = NULL;
    if (!g_file_set_contents_full(path, text, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT, 0644, &io_error)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write the W&B run state %s: %s", path,
                    io_error->message);
        return FALSE;
    }
    return TRUE;
}

/* Reads member key of o as a string (NULL for null or absent when optional). */
static gboolean get_string(JsonObject *o, const char *key, gboolean optional, char **out, const char *path,
                           GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if ((!n || JSON_NODE_HOLDS_NULL(n)) && optional) {
        *out = NULL;
        return TRUE;
    }
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: \"%s\" is %s: expected a string", path, key,
                    n ? "not a string" : "missing");
        return FALSE;
    }
    *out = g_strdup(json_node_get_string(n));
    return TRUE;
}

static gboolean get_int(JsonObject *o, const char *key, gboolean nullable, gint64 *out, const char *path,
                        GError **error)
{
    JsonNode *n = json_object_get_member(o, key);
    if (n && JSON_NODE_HOLDS_NULL(n) && nullable) {
        *out = -1;
        return TRUE;
    }
    if (!n || !JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64 ||
        json_node_get_int(n) < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: \"%s\" is %s: expected a count (an integer >= 0)",
                    path, key, n ? "not a count" : "missing");
        return FALSE;
    }
    *out = json_node_get_int(n);
    return TRUE;
}

gboolean wb_state_load(wb_state *st, const char *dir, GError **error)
{
    memset(st, 0, sizeof *st);
    st->history_base = -1;
    g_autofree char *path = g_build_filename(dir, WB_STATE_FILE, NULL);
    g_autofree char *text = NULL;
    gsize len;
    g_autoptr(GError) io_error = NULL;
    if (!g_file_get_contents(path, &text, &len, &io_error)) {
        if (g_error_matches(io_error, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "%s is not a W&B run folder of robotrain: it has no " WB_STATE_FILE, dir);
        else
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", path, io_error->message);
        return FALSE;
    }
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) parse_error = NULL;
    if (!json_parser_load_from_data(parser, text, (gssize)len, &parse_error) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s is not a JSON object: %s", path,
                    parse_error ? parse_error->message : "the top level is not {...}");
        return FALSE;
    }
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    g_autofree char *mode = NULL;
    gint64 exitcode = -1;
    gboolean ok = get_string(o, "id", FALSE, &st->id, path, error) &&
                  get_string(o, "project", FALSE, &st->project, path, error) &&
                  get_string(o, "entity", TRUE, &st->entity, path, error) &&
                  get_string(o, "storage_id", TRUE, &st->storage_id, path, error) &&
                  get_string(o, "display_name", TRUE, &st->display_name, path, error) &&
                  get_string(o, "notes", TRUE, &st->notes, path, error) &&
                  get_string(o, "config", FALSE, &st->config, path, error) &&
                  get_string(o, "host", TRUE, &st->host, path, error) &&
                  get_string(o, "mode", FALSE, &mode, path, error) &&
                  get_int(o, "history_base", TRUE, &st->history_base, path, error) &&
                  get_int(o, "history_sent", FALSE, &st->history_sent, path, error);
    if (ok && !wb_check_run_id(st->id, "the id in " WB_STATE_FILE, error))
        ok = FALSE;
    if (ok) {
        if (strcmp(mode, "online") == 0)
            st->mode = RT_WANDB_MODE_ONLINE;
        else if (strcmp(mode, "offline") == 0)
            st->mode = RT_WANDB_MODE_OFFLINE;
        else {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: \"mode\" is '%s': expected online or offline",
                        path, mode);
            ok = FALSE;
        }
    }
    if (ok) {
        JsonNode *n = json_object_get_member(o, "exitcode");
        if (n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64) {
            exitcode = json_node_get_int(n);
            st->finished = TRUE;
            st->exitcode = (int)CLAMP(exitcode, G_MININT, G_MAXINT);
        }
        st->complete_sent = wb_json_true(o, "complete_sent");
        JsonNode *rt = json_object_get_member(o, "runtime");
        if (rt && JSON_NODE_HOLDS_VALUE(rt) &&
            (json_node_get_value_type(rt) == G_TYPE_DOUBLE || json_node_get_value_type(rt) == G_TYPE_INT64))
            st->runtime = json_node_get_double(rt);
        JsonArray *tags = wb_json_array(o, "tags");
        if (tags) {
            GPtrArray *v = g_ptr_array_new();
            for (guint i = 0; i < json_array_get_length(tags); i++) {
                JsonNode *t = json_array_get_element(tags, i);
                if (JSON_NODE_HOLDS_VALUE(t) && json_node_get_value_type(t) == G_TYPE_STRING)
                    g_ptr_array_add(v, g_strdup(json_node_get_string(t)));
            }
            g_ptr_array_add(v, NULL);
            st->tags = (char **)g_ptr_array_free(v, FALSE);
        }
    }
    if (!ok)
        wb_state_clear(st);
    return ok;
}

/* ---------------------------------------------------------------- wandb-history.jsonl */

static gboolean pread_all(int fd, void *buf, size_t len, gint64 offset, size_t *got)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(offset + (gint64)done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return FALSE;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    *got = done;
    return TRUE;
}

gboolean wb_history_open(wb_history *h, const char *dir, GError **error)
{
    memset(h, 0, sizeof *h);
    h->path = g_build_filename(dir, WB_HISTORY_FILE, NULL);
    h->fd = g_open(h->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (h->fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot open the W&B history %s: %s", h->path,
                    g_strerror(e));
        g_clear_pointer(&h->path, g_free);
        return FALSE;
    }
    /* Count the complete lines; a line cut short by a crash is dropped. */
    char buf[65536];
    gint64 offset = 0, last_end = 0;
    for (;;) {
        size_t got;
        if (!pread_all(h->fd, buf, sizeof buf, offset, &got)) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read the W&B history %s: %s", h->path,
                        g_strerror(e));
            wb_history_close(h);
            return FALSE;
        }
        for (size_t i = 0; i < got; i++) {
            if (buf[i] == '\n') {
                h->lines++;
                last_end = offset + (gint64)i + 1;
            }
        }
        offset += (gint64)got;
        if (got < sizeof buf)
            break;
    }
    if (offset > last_end) {
        g_warning("%s ends with an incomplete line (%" G_GINT64_FORMAT " bytes, from an interrupted run): "
                  "it is removed",
                  h->path, offset - last_end);
        if (ftruncate(h->fd, (off_t)last_end) != 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot truncate the W&B history %s: %s", h->path,
                        g_strerror(e));
            wb_history_close(h);
            return FALSE;
        }
    }
    h->bytes = last_end;
    return TRUE;
}

void wb_history_close(wb_history *h)
{
    if (h->fd >= 0 && h->path)
        close(h->fd);
    g_free(h->path);
    memset(h, 0, sizeof *h);
    h->fd = -1;
}

gboolean wb_history_append(wb_history *h, const char *text, gsize len, GError **error)
{
    gsize done = 0;
    while (done < len) {
        ssize_t w = write(h->fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            /* Take back a partial line so that the file stays whole lines. */
            if (done > 0 && ftruncate(h->fd, (off_t)h->bytes) != 0)
                g_warning("cannot truncate %s after a failed write: %s", h->path, g_strerror(errno));
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot append to the W&B history %s: %s", h->path,
                        g_strerror(e));
            return FALSE;
        }
        done += (gsize)w;
    }
    for (gsize i = 0; i < len; i++)
        if (text[i] == '\n')
            h->lines++;
    h->bytes += (gint64)len;
    return TRUE;
}

gboolean wb_history_offset_of_line(const wb_history *h, gint64 line, gint64 *out, GError **error)
{
    if (line <= 0 || line >= h->lines) {
        *out = line <= 0 ? 0 : h->bytes;
        return TRUE;
    }
    char buf[65536];
    gint64 offset = 0, seen = 0;
    while (offset < h->bytes) {
        size_t got;
        size_t want = (size_t)MIN((gint64)sizeof buf, h->bytes - offset);
        if (!pread_all(h->fd, buf, want, offset, &got) || got == 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read the W&B history %s: %s", h->path,
                        got == 0 ? "it is shorter than expected" : g_strerror(e));
            return FALSE;
        }
        for (size_t i = 0; i < got; i++) {
            if (buf[i] == '\n' && ++seen == line) {
                *out = offset + (gint64)i + 1;
                return TRUE;
            }
        }
        offset += (gint64)got;
    }
    *out = h->bytes;
    return TRUE;
}

gboolean wb_history_read(const wb_history *h, gint64 offset, gint64 end, GString *buf, GError **error)
{
    g_string_set_size(buf, (gsize)(end - offset));
    size_t got;
    if (!pread_all(h->fd, buf->str, (size_t)(end - offset), offset, &got) || got != (size_t)(end - offset)) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read the W&B history %s: %s", h->path,
                    got != (size_t)(end - offset) ? "it is shorter than expected" : g_strerror(e));
        g_string_truncate(buf, 0);
        return FALSE;
    }
    return TRUE;
}

/* ---------------------------------------------------------------- lock and latest-run */

int wb_folder_lock(const char *dir, GError **error)
{
    g_autofree char *path = g_build_filename(dir, WB_LOCK_FILE, NULL);
    int fd = g_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create %s: %s", path, g_strerror(e));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            g_set_error(
                error, RT_ERROR, RT_ERROR_IO,
                "the W&B run folder %s is in use by another run or sync (%s is locked): wait until it ends",
                dir, path);
        else
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot lock the W&B run folder %s (%s): %s", dir, path,
                        g_strerror(e));
        return -1;
    }
    return fd;
}

void wb_folder_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}

gboolean wb_set_latest_run(const char *wandb_dir, const char *id, GError **error)
{
    g_autofree char *target = g_strconcat("run-", id, NULL);
    g_autofree char *link = g_build_filename(wandb_dir, "latest-run", NULL);
    g_autofree char *tmp = g_strdup_printf("%s.%d.tmp", link, (int)getpid());
    g_unlink(tmp);
    if (symlink(target, tmp) != 0 || g_rename(tmp, link) != 0) {
        int e = errno;
        g_unlink(tmp);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot point %s at %s: %s", link, target, g_strerror(e));
        return FALSE;
    }
    return TRUE;
}

char *wb_find_latest_run_id(const char *wandb_dir)
{
    g_autofree char *link = g_build_filename(wandb_dir, "latest-run", NULL);
    /* LeRobot (the W&B SDK) keeps latest-run/run-<id>.wandb. */
    g_autoptr(GDir) d = g_dir_open(link, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        if (g_str_has_prefix(name, "run-") && g_str_has_suffix(name, ".wandb") && strlen(name) > 10) {
            char *id = g_strndup(name + 4, strlen(name) - 10);
            if (wb_check_run_id(id, "", NULL))
                return id;
            g_free(id);
        }
    }
    g_autofree char *target = g_file_read_link(link, NULL);
    if (target) {
        g_autofree char *base = g_path_get_basename(target);
        if (g_str_has_prefix(base, "run-") && wb_check_run_id(base + 4, "", NULL))
            return g_strdup(base + 4);
    }
    return NULL;
}

gboolean wb_history_last_step(const wb_history *h, gint64 *step, double *runtime)
{
    if (h->lines == 0)
        return FALSE;
    /* The last line starts after the newline before the final one; read back in growing blocks. */
    g_autoptr(GString) buf = g_string_new(NULL);
    for (gint64 block = 4096;; block *= 4) {
        gint64 from = MAX(0, h->bytes - block);
        if (!wb_history_read(h, from, h->bytes, buf, NULL))
            return FALSE;
        gsize start = buf->len - 1; /* the final '\n' */
        while (start > 0 && buf->str[start - 1] != '\n')
            start--;
        if (start == 0 && from > 0)
            continue;
        rt_wandb_summary summary;
        rt_wandb_summary_init(&summary);
        gboolean ok = rt_wandb_summary_merge(&summary, buf->str + start, buf->len - 1 - start);
        const char *s = ok ? rt_wandb_summary_lookup(&summary, "_step") : NULL;
        const char *r = ok ? rt_wandb_summary_lookup(&summary, "_runtime") : NULL;
        char *end = NULL;
        if (s)
            *step = g_ascii_strtoll(s, &end, 10);
        ok = s && end && *end == '\0';
        *runtime = r ? g_ascii_strtod(r, NULL) : 0.0;
        rt_wandb_summary_clear(&summary);
        return ok;
    }
}
