/* Writing safetensors files: the reference writer's layout, replaced atomically. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <robotrain/error.h>
#include <robotrain/safetensors.h>

#include "core/safetensors-private.h"

typedef struct {
    char *name;
    rt_st_dtype dtype;
    int rank;
    int64_t *shape;
    uint64_t n_bytes;
    const void *data; /* borrowed */
} writer_tensor;

struct rt_safetensors_writer {
    GPtrArray *tensors;   /* writer_tensor *, in the order added */
    GHashTable *names;    /* set of tensor names (owned by the tensors) */
    GHashTable *metadata; /* key -> value, both owned */
    uint64_t data_bytes;  /* sum of n_bytes */
};

static void writer_tensor_free(gpointer p)
{
    writer_tensor *t = p;
    g_free(t->name);
    g_free(t->shape);
    g_free(t);
}

rt_safetensors_writer *rt_safetensors_writer_new(void)
{
    rt_safetensors_writer *w = g_new0(rt_safetensors_writer, 1);
    w->tensors = g_ptr_array_new_with_free_func(writer_tensor_free);
    w->names = g_hash_table_new(g_str_hash, g_str_equal);
    w->metadata = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return w;
}

void rt_safetensors_writer_free(rt_safetensors_writer *writer)
{
    if (!writer)
        return;
    g_hash_table_destroy(writer->names);
    g_ptr_array_free(writer->tensors, TRUE);
    g_hash_table_destroy(writer->metadata);
    g_free(writer);
}

gboolean rt_safetensors_writer_add(rt_safetensors_writer *writer, const char *name, rt_st_dtype dtype,
                                   int rank, const int64_t *shape, const void *data, GError **error)
{
    g_return_val_if_fail(writer != NULL && name != NULL, FALSE);
    g_return_val_if_fail(rank >= 0 && (rank == 0 || shape != NULL), FALSE);

    if (!g_utf8_validate(name, -1, NULL)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "safetensors: tensor name is not valid UTF-8");
        return FALSE;
    }
    if (strcmp(name, "__metadata__") == 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "safetensors: \"__metadata__\" is reserved and cannot name a tensor");
        return FALSE;
    }
    if (g_hash_table_contains(writer->names, name)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "safetensors: tensor '%s' is added twice", name);
        return FALSE;
    }
    if (!rt_st_dtype_name(dtype)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "safetensors: tensor '%s' has an unknown dtype (%d)", name, (int)dtype);
        return FALSE;
    }
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "safetensors: tensor '%s': dimension %d is negative (%" G_GINT64_FORMAT ")", name, i,
                        shape[i]);
            return FALSE;
        }
    }
    int64_t n_elements;
    uint64_t n_bytes;
    if (!st_tensor_size(dtype, rank, shape, &n_elements, &n_bytes) || n_bytes > G_MAXSIZE ||
        n_bytes > (uint64_t)INT64_MAX - writer->data_bytes) {
        GString *s = g_string_new(NULL);
        st_append_shape(s, rank, shape);
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "safetensors: tensor '%s': shape %s of %s is too large", name, s->str,
                    rt_st_dtype_name(dtype));
        g_string_free(s, TRUE);
        return FALSE;
    }
    if (n_bytes > 0 && data == NULL) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "safetensors: tensor '%s' has %" G_GUINT64_FORMAT " bytes but no data", name, n_bytes);
        return FALSE;
    }

    writer_tensor *t = g_new0(writer_tensor, 1);
    t->name = g_strdup(name);
    t->dtype = dtype;
    t->rank = rank;
    t->shape = rank ? g_new(int64_t, rank) : NULL;
    if (rank)
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
    t->n_bytes = n_bytes;
    t->data = data;
    g_ptr_array_add(writer->tensors, t);
    g_hash_table_add(writer->names, t->name);
    writer->data_bytes += n_bytes;
    return TRUE;
}

gboolean rt_safetensors_writer_set_metadata(rt_safetensors_writer *writer, const char *key, const char *value,
                                            GError **error)
{
    g_return_val_if_fail(writer != NULL && key != NULL && value != NULL, FALSE);
    if (!g_utf8_validate(key, -1, NULL) || !g_utf8_validate(value, -1, NULL)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "safetensors: metadata key or value is not valid UTF-8 (key '%s')",
                    g_utf8_validate(key, -1, NULL) ? key : "?");
        return FALSE;
    }
    g_hash_table_replace(writer->metadata, g_strdup(key), g_strdup(value));
    return TRUE;
}

/* JSON string as serde_json (the reference writer) spells it: UTF-8 kept, '"' and '\' escaped,
 * control characters as \b \t \n \f \r or \u00xx. */
static void append_json_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            g_string_append(out, "\\\"");
            break;
        case '\\':
            g_string_append(out, "\\\\");
            break;
        case '\b':
            g_string_append(out, "\\b");
            break;
        case '\t':
            g_string_append(out, "\\t");
            break;
        case '\n':
            g_string_append(out, "\\n");
            break;
        case '\f':
            g_string_append(out, "\\f");
            break;
        case '\r':
            g_string_append(out, "\\r");
            break;
        default:
            if (*p < 0x20)
                g_string_append_printf(out, "\\u%04x", *p);
            else
                g_string_append_c(out, (char)*p);
        }
    }
    g_string_append_c(out, '"');
}

/* The reference order: descending dtype alignment (the enum's order), then name, byte-wise. */
static int compare_layout(const void *a, const void *b)
{
    const writer_tensor *x = *(writer_tensor *const *)a, *y = *(writer_tensor *const *)b;
    if (x->dtype != y->dtype)
        return x->dtype > y->dtype ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The padded header, with the tensors in file order in *order (transfer container). */
static GString *build_header(const rt_safetensors_writer *w, writer_tensor ***order)
{
    size_t n = w->tensors->len;
    writer_tensor **sorted = g_new(writer_tensor *, MAX(n, 1));
    if (n)
        memcpy(sorted, w->tensors->pdata, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, compare_layout);

    GString *h = g_string_new("{");
    guint n_keys = 0;
    const char **keys = (const char **)g_hash_table_get_keys_as_array(w->metadata, &n_keys);
    if (n_keys) {
        qsort(keys, n_keys, sizeof *keys, compare_strings);
        g_string_append(h, "\"__metadata__\":{");
        for (guint i = 0; i < n_keys; i++) {
            if (i)
                g_string_append_c(h, ',');
            append_json_string(h, keys[i]);
            g_string_append_c(h, ':');
            append_json_string(h, g_hash_table_lookup(w->metadata, keys[i]));
        }
        g_string_append_c(h, '}');
    }
    g_free(keys);

    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const writer_tensor *t = sorted[i];
        if (i || n_keys)
            g_string_append_c(h, ',');
        append_json_string(h, t->name);
        g_string_append_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", rt_st_dtype_name(t->dtype));
        for (int d = 0; d < t->rank; d++)
            g_string_append_printf(h, "%s%" G_GINT64_FORMAT, d ? "," : "", t->shape[d]);
        g_string_append_printf(h, "],\"data_offsets\":[%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "]}", offset,
                               offset + t->n_bytes);
        offset += t->n_bytes;
    }
    g_string_append_c(h, '}');
    while (h->len % 8)
        g_string_append_c(h, ' ');
    *order = sorted;
    return h;
}

static gboolean write_all(int fd, const void *data, uint64_t size)
{
    const guint8 *p = data;
    while (size > 0) {
        size_t chunk = (size_t)MIN(size, (uint64_t)1 << 30);
        ssize_t done = write(fd, p, chunk);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            if (done == 0)
                errno = EIO;
            return FALSE;
        }
        p += done;
        size -= (uint64_t)done;
    }
    return TRUE;
}

/* Makes the rename durable. File systems that cannot sync a folder say EINVAL: nothing to do. */
static gboolean sync_folder(const char *folder)
{
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return FALSE;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc == 0 || e == EINVAL;
}

gboolean rt_safetensors_writer_write(const rt_safetensors_writer *writer, const char *path, GError **error)
{
    g_return_val_if_fail(writer != NULL && path != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    writer_tensor **order = NULL;
    GString *header = build_header(writer, &order);
    if (header->len > RT_SAFETENSORS_MAX_HEADER) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "cannot write %s: its header would be %" G_GSIZE_FORMAT
                    " bytes, over the %u bytes readers accept (too many tensors or too much metadata)",
                    path, header->len, RT_SAFETENSORS_MAX_HEADER);
        g_string_free(header, TRUE);
        g_free(order);
        return FALSE;
    }

    /* The temporary file lives beside the target: rename() is atomic only within a file system. */
    char *folder = g_path_get_dirname(path);
    char *base = g_path_get_basename(path);
    char *temp_name = g_strdup_printf(".%s.tmp-XXXXXX", base);
    char *temp = g_build_filename(folder, temp_name, NULL);
    const char *step = "create a temporary file in its folder";
    gboolean ok = FALSE, created = FALSE;
    int fd = g_mkstemp_full(temp, O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) {
        created = TRUE;
        guint8 length[8];
        for (int i = 0; i < 8; i++)
            length[i] = (guint8)((uint64_t)header->len >> (8 * i));
        step = "write it";
        ok = write_all(fd, length, sizeof length) && write_all(fd, header->str, header->len);
        for (guint i = 0; ok && i < writer->tensors->len; i++)
            ok = write_all(fd, order[i]->data, order[i]->n_bytes);
        if (ok) {
            step = "flush it to disk";
            ok = fsync(fd) == 0;
        }
        int e = errno;
        if (close(fd) != 0 && ok) {
            e = errno;
            ok = FALSE;
        }
        if (ok) {
            step = "move it into place";
            ok = g_rename(temp, path) == 0;
            e = errno;
            if (ok)
                created = FALSE;
        }
        if (ok) {
            step = "sync its folder";
            ok = sync_folder(folder);
            e = errno;
        }
        errno = e;
    }
    if (!ok) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write %s: could not %s: %s", path, step,
                    g_strerror(e));
        if (created)
            g_unlink(temp);
    }
    g_free(temp);
    g_free(temp_name);
    g_free(base);
    g_free(folder);
    g_string_free(header, TRUE);
    g_free(order);
    return ok;
}
