/* Parquet files: opening (framing and footer), metadata accessors, bounded reads. The page
 * reader is in parquet-read.c, the footer decoder in parquet-footer.c. */
#include "config.h"

#include "data/parquet-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void pq_error(GError **error, const rt_parquet_file *f, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, RT_ERROR, code, "%s: %s", f->path, what);
    g_free(what);
}

gboolean pq_read_at(rt_parquet_file *f, int64_t offset, size_t len, uint8_t *buf, GError **error)
{
    if (offset < 0 || (uint64_t)offset > f->size || len > f->size - (uint64_t)offset) {
        pq_error(error, f, RT_ERROR_FORMAT,
                 "bytes [%" G_GINT64_FORMAT ", +%zu) lie outside the file (%" G_GUINT64_FORMAT " bytes)",
                 offset, len, f->size);
        return FALSE;
    }
    f->bytes_read += (int64_t)len;
    if (f->fd < 0) {
        memcpy(buf, f->mem + offset, len);
        return TRUE;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(f->fd, buf + done, len - done, (off_t)(offset + (int64_t)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            pq_error(error, f, RT_ERROR_IO, "cannot read: %s", g_strerror(errno));
            return FALSE;
        }
        if (n == 0) {
            pq_error(error, f, RT_ERROR_IO,
                     "the file ended early (it shrank while open?) at byte %" G_GINT64_FORMAT,
                     offset + (int64_t)done);
            return FALSE;
        }
        done += (size_t)n;
    }
    return TRUE;
}

/* Checks the PAR1 framing and decodes the footer. */
static gboolean open_common(rt_parquet_file *f, GError **error)
{
    uint8_t head[4], tail[8];
    if (f->size < 12) {
        pq_error(error, f, RT_ERROR_FORMAT,
                 "not a Parquet file: it has %" G_GUINT64_FORMAT " bytes, fewer than the 12 of an empty one",
                 f->size);
        return FALSE;
    }
    if (!pq_read_at(f, 0, 4, head, error) || !pq_read_at(f, (int64_t)f->size - 8, 8, tail, error))
        return FALSE;
    if (memcmp(head, "PAR1", 4) != 0) {
        pq_error(error, f, RT_ERROR_FORMAT, "not a Parquet file: it does not start with PAR1");
        return FALSE;
    }
    if (memcmp(tail + 4, "PARE", 4) == 0) {
        pq_error(error, f, RT_ERROR_UNSUPPORTED,
                 "the footer is encrypted (PARE), which this reader does not support");
        return FALSE;
    }
    if (memcmp(tail + 4, "PAR1", 4) != 0) {
        pq_error(error, f, RT_ERROR_FORMAT,
                 "not a Parquet file, or a truncated one: it does not end with PAR1");
        return FALSE;
    }
    uint32_t footer_len =
        (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
    if (footer_len == 0 || footer_len > f->size - 12) {
        pq_error(error, f, RT_ERROR_FORMAT,
                 "the footer length %u does not fit in the file (%" G_GUINT64_FORMAT
                 " bytes); the file is truncated or corrupt",
                 footer_len, f->size);
        return FALSE;
    }
    f->data_end = (int64_t)(f->size - 8 - footer_len);
    uint8_t *footer = g_try_malloc(footer_len);
    if (!footer) {
        pq_error(error, f, RT_ERROR_FORMAT, "cannot allocate %u bytes for the footer", footer_len);
        return FALSE;
    }
    gboolean ok = pq_read_at(f, f->data_end, footer_len, footer, error) &&
                  pq_parse_footer(f, footer, footer_len, error);
    g_free(footer);
    if (!ok)
        return FALSE;
    f->pages_decoded = g_new0(int64_t, f->n_leaves ? f->n_leaves : 1);
    const char *arrow = rt_parquet_file_metadata(f, "ARROW:schema");
    if (arrow)
        pq_apply_arrow_schema(f, arrow);
    return TRUE;
}

static rt_parquet_file *file_new(const char *name)
{
    rt_parquet_file *f = g_new0(rt_parquet_file, 1);
    f->path = g_strdup(name);
    f->fd = -1;
    f->max_alloc = PQ_DEFAULT_MAX_ALLOC;
    return f;
}

rt_parquet_file *rt_parquet_file_open(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    rt_parquet_file *f = file_new(path);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        int e = errno;
        pq_error(error, f, e == ENOENT ? RT_ERROR_NOT_FOUND : RT_ERROR_IO, "cannot open: %s", g_strerror(e));
        rt_parquet_file_free(f);
        return NULL;
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        pq_error(error, f, RT_ERROR_IO, "not a regular file");
        rt_parquet_file_free(f);
        return NULL;
    }
    f->size = (uint64_t)st.st_size;
    if (!open_common(f, error)) {
        rt_parquet_file_free(f);
        return NULL;
    }
    return f;
}

rt_parquet_file *rt_parquet_file_open_bytes(const void *data, size_t size, const char *name, GError **error)
{
    g_return_val_if_fail(data != NULL || size == 0, NULL);
    rt_parquet_file *f = file_new(name ? name : "(memory)");
    f->mem = data;
    f->size = size;
    if (!open_common(f, error)) {
        rt_parquet_file_free(f);
        return NULL;
    }
    return f;
}

void rt_parquet_file_free(rt_parquet_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    for (int i = 0; i < f->n_leaves; i++) {
        g_free(f->leaves[i].path);
        g_free(f->leaves[i].name);
    }
    g_free(f->leaves);
    for (int i = 0; i < f->n_row_groups; i++)
        g_free(f->row_groups[i].chunks);
    g_free(f->row_groups);
    for (int i = 0; i < f->n_kv; i++) {
        g_free(f->kv_keys[i]);
        g_free(f->kv_values[i]);
    }
    g_free(f->kv_keys);
    g_free(f->kv_values);
    g_free(f->pages_decoded);
    g_free(f->created_by);
    g_free(f->path);
    g_free(f);
}

void rt_parquet_file_set_max_alloc(rt_parquet_file *f, size_t bytes)
{
    g_return_if_fail(f != NULL);
    f->max_alloc = bytes;
}

const char *rt_parquet_file_path(const rt_parquet_file *f)
{
    return f->path;
}
int64_t rt_parquet_file_num_rows(const rt_parquet_file *f)
{
    return f->num_rows;
}
int rt_parquet_file_num_row_groups(const rt_parquet_file *f)
{
    return f->n_row_groups;
}
const char *rt_parquet_file_created_by(const rt_parquet_file *f)
{
    return f->created_by;
}
int rt_parquet_file_num_columns(const rt_parquet_file *f)
{
    return f->n_leaves;
}
int rt_parquet_file_num_metadata(const rt_parquet_file *f)
{
    return f->n_kv;
}
int64_t rt_parquet_file_bytes_read(const rt_parquet_file *f)
{
    return f->bytes_read;
}

int64_t rt_parquet_file_row_group_num_rows(const rt_parquet_file *f, int row_group)
{
    g_return_val_if_fail(row_group >= 0 && row_group < f->n_row_groups, -1);
    return f->row_groups[row_group].num_rows;
}

int64_t rt_parquet_file_row_group_first_row(const rt_parquet_file *f, int row_group)
{
    g_return_val_if_fail(row_group >= 0 && row_group < f->n_row_groups, -1);
    return f->row_groups[row_group].first_row;
}

const rt_parquet_column *rt_parquet_file_column(const rt_parquet_file *f, int column)
{
    g_return_val_if_fail(column >= 0 && column < f->n_leaves, NULL);
    return &f->leaves[column].pub;
}

int rt_parquet_file_find_column(const rt_parquet_file *f, const char *name)
{
    g_return_val_if_fail(f != NULL && name != NULL, -1);
    int by_field = -1, fields = 0;
    for (int i = 0; i < f->n_leaves; i++) {
        if (strcmp(f->leaves[i].path, name) == 0)
            return i;
        if (strcmp(f->leaves[i].name, name) == 0) {
            by_field = i;
            fields++;
        }
    }
    return fields == 1 ? by_field : -1;
}

const char *rt_parquet_file_metadata_key(const rt_parquet_file *f, int i)
{
    g_return_val_if_fail(i >= 0 && i < f->n_kv, NULL);
    return f->kv_keys[i];
}

const char *rt_parquet_file_metadata_value(const rt_parquet_file *f, int i)
{
    g_return_val_if_fail(i >= 0 && i < f->n_kv, NULL);
    return f->kv_values[i];
}

const char *rt_parquet_file_metadata(const rt_parquet_file *f, const char *key)
{
    g_return_val_if_fail(f != NULL && key != NULL, NULL);
    for (int i = 0; i < f->n_kv; i++)
        if (f->kv_keys[i] && strcmp(f->kv_keys[i], key) == 0)
            return f->kv_values[i];
    return NULL;
}

int64_t rt_parquet_file_pages_decoded(const rt_parquet_file *f, int column)
{
    g_return_val_if_fail(column >= 0 && column < f->n_leaves, -1);
    return f->pages_decoded[column];
}
