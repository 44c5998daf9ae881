/* The cache layout huggingface_hub writes (see robotrain/hub.h): folders, refs, snapshot
 * symlinks, the tree-listing cache, locks and content hashes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "net/hub-json.h"
#include "net/hub-private.h"

#define TREE_FORMAT_VERSION 1
#define HASH_BUFFER (1u << 20)

char *hub_storage_folder(const char *cache_dir, rt_hub_repo_type type, const char *repo_id)
{
    char *name = rt_hub_repo_folder_name(type, repo_id);
    char *folder = g_build_filename(cache_dir, name, NULL);
    g_free(name);
    return folder;
}

char *hub_pointer_path(const char *storage, const char *commit, const char *path)
{
    return g_build_filename(storage, "snapshots", commit, path, NULL);
}

char *hub_read_ref(const char *storage, const char *revision)
{
    char *file = g_build_filename(storage, "refs", revision, NULL);
    char *contents = NULL;
    char *sha = NULL;
    if (g_file_get_contents(file, &contents, NULL, NULL)) {
        g_strstrip(contents);
        if (rt_hub_is_commit_sha(contents))
            sha = g_strdup(contents);
    }
    g_free(contents);
    g_free(file);
    return sha;
}

gboolean hub_make_parents(const char *path, GError **error)
{
    char *dir = g_path_get_dirname(path);
    gboolean ok = g_mkdir_with_parents(dir, 0777) == 0;
    if (!ok) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create the folder %s: %s", dir, g_strerror(e));
    }
    g_free(dir);
    return ok;
}

gboolean hub_write_atomic(const char *path, const void *contents, gsize len, GError **error)
{
    GError *local = NULL;
    if (!hub_make_parents(path, error))
        return FALSE;
    if (!g_file_set_contents(path, contents, (gssize)len, &local)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write %s: %s", path, local->message);
        g_error_free(local);
        return FALSE;
    }
    return TRUE;
}

gboolean hub_write_ref(const char *storage, const char *revision, const char *commit, GError **error)
{
    if (strcmp(revision, commit) == 0)
        return TRUE;
    char *old = hub_read_ref(storage, revision);
    gboolean same = old && strcmp(old, commit) == 0;
    g_free(old);
    if (same)
        return TRUE; /* leave a read-only cache alone */
    char *file = g_build_filename(storage, "refs", revision, NULL);
    /* No newline: huggingface_hub reads the file whole. */
    gboolean ok = hub_write_atomic(file, commit, strlen(commit), error);
    g_free(file);
    return ok;
}

/* The path of target relative to the folder from (both absolute, symlinks not resolved, as
 * Python's os.path.relpath). */
static char *relative_path(const char *target, const char *from)
{
    char *t = g_canonicalize_filename(target, NULL);
    char *f = g_canonicalize_filename(from, NULL);
    char **tp = g_strsplit(t, "/", -1);
    char **fp = g_strsplit(f, "/", -1);
    guint common = 0;
    while (tp[common] && fp[common] && strcmp(tp[common], fp[common]) == 0)
        common++;
    GString *s = g_string_new(NULL);
    for (guint i = common; fp[i]; i++)
        if (*fp[i])
            g_string_append(s, "../");
    for (guint i = common; tp[i]; i++) {
        if (!*tp[i])
            continue;
        g_string_append(s, tp[i]);
        if (tp[i + 1])
            g_string_append_c(s, '/');
    }
    g_strfreev(tp);
    g_strfreev(fp);
    g_free(t);
    g_free(f);
    return g_string_free(s, FALSE);
}

static gboolean copy_file(const char *from, const char *to, GError **error)
{
    GFile *src = g_file_new_for_path(from);
    char *tmp = g_strdup_printf("%s.%08x.tmp", to, g_random_int());
    GFile *dst = g_file_new_for_path(tmp);
    GError *local = NULL;
    gboolean ok = g_file_copy(src, dst, G_FILE_COPY_OVERWRITE, NULL, NULL, NULL, &local);
    if (ok && g_rename(tmp, to) != 0) {
        int e = errno;
        g_set_error(&local, G_IO_ERROR, g_io_error_from_errno(e), "rename: %s", g_strerror(e));
        ok = FALSE;
    }
    if (!ok) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot copy %s to %s: %s", from, to, local->message);
        g_error_free(local);
        g_unlink(tmp);
    }
    g_object_unref(src);
    g_object_unref(dst);
    g_free(tmp);
    return ok;
}

gboolean hub_link_pointer(const char *blob, const char *pointer, GError **error)
{
    if (!hub_make_parents(pointer, error))
        return FALSE;
    char *dir = g_path_get_dirname(pointer);
    char *target = relative_path(blob, dir);
    char *tmp = g_strdup_printf("%s.%08x.tmp", pointer, g_random_int());
    gboolean ok = TRUE;
    if (symlink(target, tmp) == 0) {
        /* rename replaces an old pointer atomically: readers never see it missing */
        if (g_rename(tmp, pointer) != 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create the cache entry %s: %s", pointer,
                        g_strerror(e));
            g_unlink(tmp);
            ok = FALSE;
        }
    } else if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS) {
        /* No symlinks on this file system: the snapshot holds a copy, as huggingface_hub does. */
        ok = copy_file(blob, pointer, error);
    } else {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create the symlink %s -> %s: %s", pointer, target,
                    g_strerror(e));
        ok = FALSE;
    }
    g_free(tmp);
    g_free(target);
    g_free(dir);
    return ok;
}

static char *tree_cache_path(const char *tree_folder, const char *commit)
{
    char *name = g_strconcat(commit, ".json", NULL);
    char *path = g_build_filename(tree_folder, "trees", name, NULL);
    g_free(name);
    return path;
}

GPtrArray *hub_read_tree_cache(const char *tree_folder, const char *commit)
{
    char *path = tree_cache_path(tree_folder, commit);
    JsonParser *parser = json_parser_new();
    GPtrArray *entries = NULL;
    if (json_parser_load_from_file(parser, path, NULL)) {
        JsonNode *root = json_parser_get_root(parser);
        guint64 version = 0;
        JsonNode *files = hub_json_member(root, "files");
        if (hub_json_uint(root, "format_version", &version) && version == TREE_FORMAT_VERSION && files &&
            JSON_NODE_HOLDS_OBJECT(files)) {
            entries = g_ptr_array_new_with_free_func((GDestroyNotify)rt_hub_entry_free);
            JsonObject *o = json_node_get_object(files);
            GList *names = json_object_get_members(o);
            for (GList *l = names; l; l = l->next) {
                JsonNode *info = json_object_get_member(o, l->data);
                rt_hub_entry *e = g_new0(rt_hub_entry, 1);
                e->path = g_strdup(l->data);
                if (!hub_json_uint(info, "size", &e->size)) {
                    rt_hub_entry_free(e);
                    g_clear_pointer(&entries, g_ptr_array_unref);
                    break;
                }
                e->blob_id = g_strdup(hub_json_str(info, "blob_id"));
                e->lfs_sha256 = g_strdup(hub_json_str(info, "lfs_sha256"));
                e->xet_hash = g_strdup(hub_json_str(info, "xet_hash"));
                g_ptr_array_add(entries, e);
            }
            g_list_free(names);
        }
    }
    g_object_unref(parser);
    g_free(path);
    return entries;
}

static gint compare_entry_path(gconstpointer a, gconstpointer b)
{
    const rt_hub_entry *x = *(rt_hub_entry *const *)a, *y = *(rt_hub_entry *const *)b;
    return strcmp(x->path, y->path);
}

gboolean hub_write_tree_cache(const char *tree_folder, const char *commit, const GPtrArray *entries,
                              GError **error)
{
    GPtrArray *sorted = g_ptr_array_new();
    for (guint i = 0; i < entries->len; i++)
        g_ptr_array_add(sorted, entries->pdata[i]);
    g_ptr_array_sort(sorted, compare_entry_path);

    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "format_version");
    json_builder_add_int_value(b, TREE_FORMAT_VERSION);
    json_builder_set_member_name(b, "files");
    json_builder_begin_object(b);
    for (guint i = 0; i < sorted->len; i++) {
        const rt_hub_entry *e = sorted->pdata[i];
        json_builder_set_member_name(b, e->path);
        json_builder_begin_object(b);
        json_builder_set_member_name(b, "size");
        json_builder_add_int_value(b, (gint64)e->size);
        json_builder_set_member_name(b, "blob_id");
        json_builder_add_string_value(b, e->blob_id ? e->blob_id : "");
        if (e->lfs_sha256) {
            json_builder_set_member_name(b, "lfs_sha256");
            json_builder_add_string_value(b, e->lfs_sha256);
            json_builder_set_member_name(b, "lfs_size");
            json_builder_add_int_value(b, (gint64)e->size);
        }
        if (e->xet_hash) {
            json_builder_set_member_name(b, "xet_hash");
            json_builder_add_string_value(b, e->xet_hash);
        }
        json_builder_end_object(b);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
    JsonNode *root = json_builder_get_root(b);
    JsonGenerator *g = json_generator_new();
    json_generator_set_pretty(g, TRUE);
    json_generator_set_indent(g, 1);
    json_generator_set_root(g, root);
    gsize len = 0;
    char *text = json_generator_to_data(g, &len);
    char *path = tree_cache_path(tree_folder, commit);
    gboolean ok = hub_write_atomic(path, text, len, error);
    g_free(path);
    g_free(text);
    g_object_unref(g);
    json_node_unref(root);
    g_object_unref(b);
    g_ptr_array_unref(sorted);
    return ok;
}

void hub_mark_no_exist(const char *storage, const char *commit, const char *path)
{
    char *marker = g_build_filename(storage, ".no_exist", commit, path, NULL);
    if (hub_make_parents(marker, NULL)) {
        int fd = g_open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        if (fd >= 0)
            close(fd);
    }
    g_free(marker);
}

int hub_lock(const char *lock_path, GError **error)
{
    if (!hub_make_parents(lock_path, error))
        return -1;
    int fd = g_open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot open the lock file %s: %s", lock_path,
                    g_strerror(e));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        /* A file system without flock (some network mounts): go on unlocked, as filelock's
         * "weak" lock does; downloads still land atomically. */
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS)
            break;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot lock %s: %s", lock_path, g_strerror(e));
        close(fd);
        return -1;
    }
    return fd;
}

void hub_unlock(int fd)
{
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
}

static gboolean hash_file(const char *path, GChecksum *sum, guint64 *size_out, GError **error)
{
    int fd = g_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot open %s: %s", path, g_strerror(e));
        return FALSE;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s is not a regular file", path);
        close(fd);
        return FALSE;
    }
    if (size_out) {
        /* git hashes "blob <size>\0" before the bytes */
        char head[64];
        int n = g_snprintf(head, sizeof head, "blob %" G_GUINT64_FORMAT, (guint64)st.st_size);
        g_checksum_update(sum, (const guchar *)head, (gssize)n + 1);
        *size_out = (guint64)st.st_size;
    }
    guchar *buf = g_malloc(HASH_BUFFER);
    guint64 total = 0;
    gboolean ok = TRUE;
    for (;;) {
        ssize_t got = read(fd, buf, HASH_BUFFER);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot read %s: %s", path, g_strerror(e));
            ok = FALSE;
            break;
        }
        if (got == 0)
            break;
        g_checksum_update(sum, buf, got);
        total += (guint64)got;
    }
    if (ok && size_out && total != *size_out) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s changed size while it was hashed", path);
        ok = FALSE;
    }
    g_free(buf);
    close(fd);
    return ok;
}

char *hub_file_git_sha1(const char *path, guint64 *size_out, GError **error)
{
    GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA1);
    guint64 size = 0;
    char *hex = hash_file(path, sum, &size, error) ? g_strdup(g_checksum_get_string(sum)) : NULL;
    if (size_out)
        *size_out = size;
    g_checksum_free(sum);
    return hex;
}

char *hub_file_sha256(const char *path, GError **error)
{
    GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
    char *hex = hash_file(path, sum, NULL, error) ? g_strdup(g_checksum_get_string(sum)) : NULL;
    g_checksum_free(sum);
    return hex;
}
