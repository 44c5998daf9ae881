/* Reading safetensors files: map, check the header strictly, look tensors up. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <robotrain/error.h>
#include <robotrain/safetensors.h>

#include "core/safetensors-json.h"
#include "core/safetensors-private.h"

struct rt_safetensors {
    char *path;
    GBytes *bytes;         /* the whole file (mapped) */
    rt_st_tensor *tensors; /* in data order */
    size_t n_tensors;
    int64_t *shapes;          /* every tensor's dimensions, one after the other */
    GStringChunk *strings;    /* names, metadata keys and values */
    GHashTable *by_name;      /* name -> rt_st_tensor * */
    GHashTable *metadata;     /* key -> value */
    GPtrArray *metadata_keys; /* header order, NULL-terminated */
};

/* A tensor while the header is read: shape_at indexes the shape pool, which may still move. */
typedef struct {
    const char *name;
    rt_st_dtype dtype;
    int rank;
    size_t shape_at;
    uint64_t begin, end;
    size_t header_index;
} pending_tensor;

typedef struct {
    rt_safetensors *st;
    st_json json;
    GArray *pending; /* pending_tensor */
    GArray *shapes;  /* int64_t */
    gboolean have_metadata;
} reader;

/* Prefixes an error from the tokenizer with the file (and what was being read). */
G_GNUC_PRINTF(3, 4)
static gboolean prefix_error(GError **error, const rt_safetensors *st, const char *format, ...)
{
    if (error && *error) {
        va_list args;
        va_start(args, format);
        char *context = g_strdup_vprintf(format, args);
        va_end(args);
        g_prefix_error(error, "%s: %s", st->path, context);
        g_free(context);
    }
    return FALSE;
}

G_GNUC_PRINTF(3, 4)
static gboolean format_error(GError **error, const rt_safetensors *st, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *what = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s", st->path, what);
    g_free(what);
    return FALSE;
}

/* The next value must be of kind want; otherwise say what it is (in tensor name, if any). */
static gboolean expect_kind(reader *r, const char *name, st_json_kind want, const char *subject,
                            const char *expected, GError **error)
{
    st_json_kind kind = st_json_peek(&r->json);
    if (kind == want)
        return TRUE;
    if (name)
        return format_error(error, r->st, "tensor '%s': %s is %s, expected %s", name, subject,
                            st_json_kind_name(kind), expected);
    return format_error(error, r->st, "%s is %s, expected %s", subject, st_json_kind_name(kind), expected);
}

/* "BOOL, U8, ..." from the dtype table. Returns (transfer full) a string to g_free(). */
static char *known_dtypes(void)
{
    GString *names = g_string_new(NULL);
    for (int i = 0; i < RT_ST_N_DTYPES; i++)
        g_string_append_printf(names, "%s%s", i ? ", " : "", rt_st_dtype_name((rt_st_dtype)i));
    return g_string_free(names, FALSE);
}

static gboolean read_shape(reader *r, const char *name, pending_tensor *t, GError **error)
{
    char subject[64];
    if (!expect_kind(r, name, ST_JSON_ARRAY, "its \"shape\"", "an array of dimensions such as [2, 3]", error))
        return FALSE;
    st_json_accept(&r->json, '[');
    t->shape_at = r->shapes->len;
    t->rank = 0;
    gboolean more = !st_json_accept(&r->json, ']');
    while (more) {
        g_snprintf(subject, sizeof subject, "\"shape\" element %d", t->rank);
        if (!expect_kind(r, name, ST_JSON_NUMBER, subject, "an integer >= 0", error))
            return FALSE;
        uint64_t dim;
        if (!st_json_uint(&r->json, &dim, error))
            return prefix_error(error, r->st, "tensor '%s': %s: ", name, subject);
        if (dim > (uint64_t)INT64_MAX)
            return format_error(error, r->st, "tensor '%s': %s (%" G_GUINT64_FORMAT ") is too large", name,
                                subject, dim);
        int64_t value = (int64_t)dim;
        g_array_append_val(r->shapes, value);
        t->rank++; /* cannot overflow: each dimension takes 2 bytes of a header < 2^31 bytes */
        if (!st_json_next(&r->json, ']', &more, error))
            return prefix_error(error, r->st, "tensor '%s': \"shape\": ", name);
    }
    return TRUE;
}

static gboolean read_offsets(reader *r, const char *name, pending_tensor *t, GError **error)
{
    if (!expect_kind(r, name, ST_JSON_ARRAY, "its \"data_offsets\"", "an array [begin, end]", error))
        return FALSE;
    st_json_accept(&r->json, '[');
    uint64_t values[2];
    int count = 0;
    gboolean more = !st_json_accept(&r->json, ']');
    while (more) {
        char subject[64];
        g_snprintf(subject, sizeof subject, "\"data_offsets\" element %d", count);
        if (count == 2)
            return format_error(error, r->st,
                                "tensor '%s': \"data_offsets\" has more than 2 elements, "
                                "expected exactly [begin, end]",
                                name);
        if (!expect_kind(r, name, ST_JSON_NUMBER, subject, "an integer >= 0", error))
            return FALSE;
        if (!st_json_uint(&r->json, &values[count], error))
            return prefix_error(error, r->st, "tensor '%s': %s: ", name, subject);
        count++;
        if (!st_json_next(&r->json, ']', &more, error))
            return prefix_error(error, r->st, "tensor '%s': \"data_offsets\": ", name);
    }
    if (count != 2)
        return format_error(error, r->st,
                            "tensor '%s': \"data_offsets\" has %d element%s, expected exactly "
                            "[begin, end]",
                            name, count, count == 1 ? "" : "s");
    t->begin = values[0];
    t->end = values[1];
    return TRUE;
}

static gboolean read_tensor(reader *r, const char *name, GError **error)
{
    if (g_hash_table_contains(r->st->by_name, name))
        return format_error(error, r->st, "tensor '%s' appears twice in the header", name);
    g_hash_table_insert(r->st->by_name, (gpointer)name, NULL);

    if (!expect_kind(r, name, ST_JSON_OBJECT, "its entry",
                     "an object with \"dtype\", \"shape\" and \"data_offsets\"", error))
        return FALSE;
    st_json_accept(&r->json, '{');

    pending_tensor t = {.name = name, .header_index = r->pending->len};
    gboolean have_dtype = FALSE, have_shape = FALSE, have_offsets = FALSE;
    gboolean more = !st_json_accept(&r->json, '}');
    while (more) {
        if (!st_json_string(&r->json, error) || !st_json_expect(&r->json, ':', "':' after a key", error))
            return prefix_error(error, r->st, "tensor '%s': ", name);
        const char *key = r->json.text->str;
        gboolean *seen = strcmp(key, "dtype") == 0          ? &have_dtype
                         : strcmp(key, "shape") == 0        ? &have_shape
                         : strcmp(key, "data_offsets") == 0 ? &have_offsets
                                                            : NULL;
        if (!seen)
            return format_error(error, r->st,
                                "tensor '%s': unexpected key \"%s\" (an entry holds only "
                                "\"dtype\", \"shape\" and \"data_offsets\")",
                                name, key);
        if (*seen)
            return format_error(error, r->st, "tensor '%s': key \"%s\" appears twice", name, key);
        *seen = TRUE;

        if (seen == &have_dtype) {
            if (!expect_kind(r, name, ST_JSON_STRING, "its \"dtype\"", "a string such as \"F32\"", error))
                return FALSE;
            if (!st_json_string(&r->json, error))
                return prefix_error(error, r->st, "tensor '%s': ", name);
            if (!rt_st_dtype_from_name(r->json.text->str, &t.dtype)) {
                char *known = known_dtypes();
                format_error(error, r->st, "tensor '%s': unknown dtype \"%s\" (known: %s)", name,
                             r->json.text->str, known);
                g_free(known);
                return FALSE;
            }
        } else if (seen == &have_shape) {
            if (!read_shape(r, name, &t, error))
                return FALSE;
        } else if (!read_offsets(r, name, &t, error)) {
            return FALSE;
        }
        if (!st_json_next(&r->json, '}', &more, error))
            return prefix_error(error, r->st, "tensor '%s': ", name);
    }
    const char *missing = !have_dtype     ? "dtype"
                          : !have_shape   ? "shape"
                          : !have_offsets ? "data_offsets"
                                          : NULL;
    if (missing)
        return format_error(error, r->st, "tensor '%s': its entry has no \"%s\"", name, missing);
    g_array_append_val(r->pending, t);
    return TRUE;
}

static gboolean read_metadata(reader *r, GError **error)
{
    rt_safetensors *st = r->st;
    if (r->have_metadata)
        return format_error(error, st, "\"__metadata__\" appears twice in the header");
    r->have_metadata = TRUE;
    if (!expect_kind(r, NULL, ST_JSON_OBJECT, "\"__metadata__\"", "an object of strings", error))
        return FALSE;
    st_json_accept(&r->json, '{');
    gboolean more = !st_json_accept(&r->json, '}');
    while (more) {
        if (!st_json_string(&r->json, error) || !st_json_expect(&r->json, ':', "':' after a key", error))
            return prefix_error(error, st, "\"__metadata__\": ");
        if (g_hash_table_contains(st->metadata, r->json.text->str))
            return format_error(error, st, "\"__metadata__\" key \"%s\" appears twice", r->json.text->str);
        char *key = g_string_chunk_insert(st->strings, r->json.text->str);
        char subject[256];
        g_snprintf(subject, sizeof subject, "\"__metadata__\" value of \"%s\"", key);
        if (!expect_kind(r, NULL, ST_JSON_STRING, subject, "a string (metadata values must be strings)",
                         error))
            return FALSE;
        if (!st_json_string(&r->json, error))
            return prefix_error(error, st, "%s: ", subject);
        char *value = g_string_chunk_insert(st->strings, r->json.text->str);
        g_hash_table_insert(st->metadata, key, value);
        g_ptr_array_add(st->metadata_keys, key);
        if (!st_json_next(&r->json, '}', &more, error))
            return prefix_error(error, st, "\"__metadata__\": ");
    }
    return TRUE;
}

static gboolean read_header(reader *r, GError **error)
{
    rt_safetensors *st = r->st;
    st_json_kind kind = st_json_peek(&r->json);
    if (kind != ST_JSON_OBJECT)
        return format_error(error, st, "the header is %s, not a JSON object", st_json_kind_name(kind));
    st_json_accept(&r->json, '{');
    gboolean more = !st_json_accept(&r->json, '}');
    while (more) {
        if (!st_json_string(&r->json, error) || !st_json_expect(&r->json, ':', "':' after a key", error))
            return prefix_error(error, st, "%s", "");
        if (strcmp(r->json.text->str, "__metadata__") == 0) {
            if (!read_metadata(r, error))
                return FALSE;
        } else {
            const char *name = g_string_chunk_insert(st->strings, r->json.text->str);
            if (!read_tensor(r, name, error))
                return FALSE;
        }
        if (!st_json_next(&r->json, '}', &more, error))
            return prefix_error(error, st, "%s", "");
    }
    if (!st_json_finish(&r->json, error))
        return prefix_error(error, st, "%s", "");
    return TRUE;
}

/* Each tensor alone: offsets in order and inside the data, and as long as shape x dtype. */
static gboolean check_tensor(reader *r, const pending_tensor *t, uint64_t data_size, GError **error)
{
    const int64_t *shape = &g_array_index(r->shapes, int64_t, t->shape_at);
    int64_t n_elements;
    uint64_t n_bytes;
    if (t->begin > t->end)
        return format_error(error, r->st,
                            "tensor '%s': data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                            "] end before they begin",
                            t->name, t->begin, t->end);
    if (!st_tensor_size(t->dtype, t->rank, shape, &n_elements, &n_bytes)) {
        GString *s = g_string_new(NULL);
        st_append_shape(s, t->rank, shape);
        format_error(error, r->st, "tensor '%s': shape %s of %s overflows: its size does not fit in 63 bits",
                     t->name, s->str, rt_st_dtype_name(t->dtype));
        g_string_free(s, TRUE);
        return FALSE;
    }
    if (t->end > data_size)
        return format_error(error, r->st,
                            "tensor '%s': data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                            "] reach past the end of the data (%" G_GUINT64_FORMAT " bytes): the file is "
                            "truncated or its header is wrong",
                            t->name, t->begin, t->end, data_size);
    if (n_bytes != t->end - t->begin) {
        GString *s = g_string_new(NULL);
        st_append_shape(s, t->rank, shape);
        format_error(error, r->st,
                     "tensor '%s': shape %s of %s needs %" G_GUINT64_FORMAT " bytes but "
                     "data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "] hold %" G_GUINT64_FORMAT,
                     t->name, s->str, rt_st_dtype_name(t->dtype), n_bytes, t->begin, t->end,
                     t->end - t->begin);
        g_string_free(s, TRUE);
        return FALSE;
    }
    return TRUE;
}

static int compare_offsets(const void *a, const void *b)
{
    const pending_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->header_index < y->header_index ? -1 : x->header_index > y->header_index;
}

/* All tensors together: sorted by offset they must tile [0, data_size) exactly, as the
 * reference library requires (no overlap, no hole, nothing after the last tensor). */
static gboolean check_layout(reader *r, uint64_t data_size, GError **error)
{
    pending_tensor *t = (pending_tensor *)(void *)r->pending->data;
    size_t n = r->pending->len;
    if (n > 1)
        qsort(t, n, sizeof *t, compare_offsets);
    uint64_t covered = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].begin < covered) {
            const pending_tensor *prev = &t[i - 1]; /* i > 0: covered starts at 0 */
            return format_error(error, r->st,
                                "tensor '%s' (data_offsets [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                                "]) overlaps tensor '%s' ([%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "])",
                                t[i].name, t[i].begin, t[i].end, prev->name, prev->begin, prev->end);
        }
        if (t[i].begin > covered)
            return format_error(error, r->st,
                                "data bytes [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT ") belong "
                                "to no tensor (a hole before tensor '%s'); safetensors requires the tensors "
                                "to cover the data exactly",
                                covered, t[i].begin, t[i].name);
        covered = t[i].end;
    }
    if (covered < data_size)
        return format_error(error, r->st,
                            "the last %" G_GUINT64_FORMAT " bytes of the data (from offset %" G_GUINT64_FORMAT
                            ") belong to no tensor: trailing bytes or a damaged header",
                            data_size - covered, covered);
    return TRUE;
}

/* Moves the checked tensors into the file, in data order. */
static void finish_tensors(reader *r, const guint8 *data)
{
    rt_safetensors *st = r->st;
    st->n_tensors = r->pending->len;
    st->tensors = g_new0(rt_st_tensor, MAX(st->n_tensors, 1));
    st->shapes = (int64_t *)(void *)g_array_free(r->shapes, FALSE);
    r->shapes = NULL;
    for (size_t i = 0; i < st->n_tensors; i++) {
        const pending_tensor *p = &g_array_index(r->pending, pending_tensor, i);
        rt_st_tensor *t = &st->tensors[i];
        uint64_t n_bytes;
        t->name = p->name;
        t->dtype = p->dtype;
        t->rank = p->rank;
        t->shape = p->rank ? st->shapes + p->shape_at : NULL;
        st_tensor_size(p->dtype, p->rank, t->shape, &t->n_elements, &n_bytes); /* checked before */
        t->n_bytes = (size_t)n_bytes;
        t->offset = p->begin;
        t->data = data + p->begin;
        g_hash_table_insert(st->by_name, (gpointer)t->name, t);
    }
}

static gboolean parse(rt_safetensors *st, GError **error)
{
    gsize size;
    const guint8 *bytes = g_bytes_get_data(st->bytes, &size);
    if (size < 8)
        return format_error(error, st,
                            "the file is %" G_GSIZE_FORMAT " bytes long, too short for a safetensors "
                            "file (8-byte header length, then the header)",
                            size);
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; i--)
        header_size = header_size << 8 | bytes[i];
    if (header_size > RT_SAFETENSORS_MAX_HEADER)
        return format_error(error, st,
                            "header length %" G_GUINT64_FORMAT " is over the limit of %u bytes: "
                            "not a safetensors file, or a damaged one",
                            header_size, RT_SAFETENSORS_MAX_HEADER);
    if (header_size > size - 8)
        return format_error(error, st,
                            "header length %" G_GUINT64_FORMAT
                            " runs past the end of the file (%" G_GSIZE_FORMAT
                            " bytes): the file is truncated or not safetensors",
                            header_size, size);
    if (header_size == 0)
        return format_error(error, st, "the header is empty (length 0), expected a JSON object");

    const char *header = (const char *)bytes + 8;
    const char *bad;
    if (!g_utf8_validate(header, (gssize)header_size, &bad))
        return format_error(error, st, "the header is not valid UTF-8 (at header byte %td)", bad - header);

    reader r = {.st = st};
    st_json_init(&r.json, header, header_size);
    r.pending = g_array_new(FALSE, FALSE, sizeof(pending_tensor));
    r.shapes = g_array_new(FALSE, FALSE, sizeof(int64_t));
    uint64_t data_size = size - 8 - header_size;
    gboolean ok = read_header(&r, error);
    for (guint i = 0; ok && i < r.pending->len; i++)
        ok = check_tensor(&r, &g_array_index(r.pending, pending_tensor, i), data_size, error);
    ok = ok && check_layout(&r, data_size, error);
    if (ok)
        finish_tensors(&r, bytes + 8 + header_size);
    g_ptr_array_add(st->metadata_keys, NULL);
    st_json_clear(&r.json);
    g_array_free(r.pending, TRUE);
    if (r.shapes)
        g_array_free(r.shapes, TRUE);
    return ok;
}

rt_safetensors *rt_safetensors_open_bytes(GBytes *bytes, const char *name, GError **error)
{
    g_return_val_if_fail(bytes != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    rt_safetensors *st = g_new0(rt_safetensors, 1);
    st->path = g_strdup(name ? name : "(memory)");
    st->bytes = g_bytes_ref(bytes);
    st->strings = g_string_chunk_new(4096);
    st->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    st->metadata = g_hash_table_new(g_str_hash, g_str_equal);
    st->metadata_keys = g_ptr_array_new();
    if (!parse(st, error)) {
        rt_safetensors_close(st);
        return NULL;
    }
    return st;
}

rt_safetensors *rt_safetensors_open(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, e == ENOENT ? RT_ERROR_NOT_FOUND : RT_ERROR_IO, "cannot open %s: %s",
                    path, g_strerror(e));
        return NULL;
    }
    struct stat info;
    const char *problem = NULL;
    if (fstat(fd, &info) != 0)
        problem = g_strerror(errno);
    else if (S_ISDIR(info.st_mode))
        problem = "it is a folder";
    else if (!S_ISREG(info.st_mode))
        problem = "it is not a regular file";
    if (problem) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", path, problem);
        close(fd);
        return NULL;
    }
    GBytes *bytes;
    if (info.st_size == 0) {
        bytes = g_bytes_new_static("", 0); /* mmap() refuses empty files */
    } else {
        GError *map_error = NULL;
        GMappedFile *map = g_mapped_file_new_from_fd(fd, FALSE, &map_error);
        if (!map) {
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot map %s: %s", path, map_error->message);
            g_error_free(map_error);
            close(fd);
            return NULL;
        }
        bytes = g_mapped_file_get_bytes(map);
        g_mapped_file_unref(map);
    }
    close(fd); /* the mapping stays valid */
    rt_safetensors *st = rt_safetensors_open_bytes(bytes, path, error);
    g_bytes_unref(bytes);
    return st;
}

void rt_safetensors_close(rt_safetensors *st)
{
    if (!st)
        return;
    g_free(st->tensors);
    g_free(st->shapes);
    g_hash_table_destroy(st->by_name);
    g_hash_table_destroy(st->metadata);
    g_ptr_array_free(st->metadata_keys, TRUE);
    g_string_chunk_free(st->strings);
    g_bytes_unref(st->bytes);
    g_free(st->path);
    g_free(st);
}

const char *rt_safetensors_path(const rt_safetensors *st)
{
    g_return_val_if_fail(st != NULL, NULL);
    return st->path;
}

size_t rt_safetensors_n_tensors(const rt_safetensors *st)
{
    g_return_val_if_fail(st != NULL, 0);
    return st->n_tensors;
}

const rt_st_tensor *rt_safetensors_tensor_at(const rt_safetensors *st, size_t index)
{
    g_return_val_if_fail(st != NULL, NULL);
    return index < st->n_tensors ? &st->tensors[index] : NULL;
}

const rt_st_tensor *rt_safetensors_find(const rt_safetensors *st, const char *name)
{
    g_return_val_if_fail(st != NULL && name != NULL, NULL);
    return g_hash_table_lookup(st->by_name, name);
}

const rt_st_tensor *rt_safetensors_expect(const rt_safetensors *st, const char *name, rt_st_dtype dtype,
                                          int rank, const int64_t *shape, GError **error)
{
    g_return_val_if_fail(st != NULL && name != NULL, NULL);
    g_return_val_if_fail(rank <= 0 || shape != NULL, NULL);
    const rt_st_tensor *t = rt_safetensors_find(st, name);
    if (!t) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "%s: no tensor '%s' in the file (it holds %" G_GSIZE_FORMAT " tensors)", st->path, name,
                    st->n_tensors);
        return NULL;
    }
    gboolean same = t->dtype == dtype;
    if (same && rank >= 0) {
        same = t->rank == rank;
        for (int i = 0; same && i < rank; i++)
            same = t->shape[i] == shape[i];
    }
    if (same)
        return t;
    GString *found = g_string_new(rt_st_dtype_name(t->dtype));
    g_string_append_c(found, ' ');
    st_append_shape(found, t->rank, t->shape);
    GString *expected = g_string_new(rt_st_dtype_name(dtype) ? rt_st_dtype_name(dtype) : "?");
    if (rank >= 0) {
        g_string_append_c(expected, ' ');
        st_append_shape(expected, rank, shape);
    }
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: tensor '%s' is %s, expected %s", st->path, name,
                found->str, expected->str);
    g_string_free(found, TRUE);
    g_string_free(expected, TRUE);
    return NULL;
}

static uint16_t load_u16(const guint8 *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

gboolean rt_safetensors_copy_f32(const rt_safetensors *st, const rt_st_tensor *tensor, float *dst, size_t n,
                                 GError **error)
{
    g_return_val_if_fail(st != NULL && tensor != NULL && (dst != NULL || n == 0), FALSE);
    if (n != (size_t)tensor->n_elements) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: tensor '%s' has %" G_GINT64_FORMAT " elements, "
                    "expected %" G_GSIZE_FORMAT,
                    st->path, tensor->name, tensor->n_elements, n);
        return FALSE;
    }
    const guint8 *src = tensor->data;
    switch (tensor->dtype) {
    case RT_ST_F32:
        for (size_t i = 0; i < n; i++) {
            guint32 bits;
            memcpy(&bits, src + 4 * i, 4);
            bits = GUINT32_FROM_LE(bits);
            memcpy(&dst[i], &bits, 4);
        }
        return TRUE;
    case RT_ST_F16:
        for (size_t i = 0; i < n; i++)
            dst[i] = rt_st_f16_to_f32(load_u16(src + 2 * i));
        return TRUE;
    case RT_ST_BF16:
        for (size_t i = 0; i < n; i++)
            dst[i] = rt_st_bf16_to_f32(load_u16(src + 2 * i));
        return TRUE;
    case RT_ST_F64:
        for (size_t i = 0; i < n; i++) {
            guint64 bits;
            double d;
            memcpy(&bits, src + 8 * i, 8);
            bits = GUINT64_FROM_LE(bits);
            memcpy(&d, &bits, 8);
            dst[i] = (float)d;
        }
        return TRUE;
    default:
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: tensor '%s' is %s, not a floating-point type "
                    "robotrain converts to F32 (F32, F16, BF16, F64)",
                    st->path, tensor->name, rt_st_dtype_name(tensor->dtype));
        return FALSE;
    }
}

const char *rt_safetensors_metadata(const rt_safetensors *st, const char *key)
{
    g_return_val_if_fail(st != NULL && key != NULL, NULL);
    return g_hash_table_lookup(st->metadata, key);
}

const char *const *rt_safetensors_metadata_keys(const rt_safetensors *st)
{
    g_return_val_if_fail(st != NULL, NULL);
    return (const char *const *)st->metadata_keys->pdata;
}
