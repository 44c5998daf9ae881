/* Reading and atomically writing the small text files that hold configurations. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "core/options-private.h"

char *opt_read_config_file(const char *path, gsize *length, GError **error)
{
    GStatBuf st;
    if (g_stat(path, &st) != 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, e == ENOENT ? RT_ERROR_NOT_FOUND : RT_ERROR_IO, "%s: %s", path,
                    g_strerror(e));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s: not a regular file", path);
        return NULL;
    }
    if ((guint64)st.st_size > OPT_MAX_FILE_SIZE) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: %" G_GUINT64_FORMAT " bytes is too large for a config file (the limit is %u MiB)",
                    path, (guint64)st.st_size, OPT_MAX_FILE_SIZE >> 20);
        return NULL;
    }
    char *data = NULL;
    g_autoptr(GError) file_error = NULL;
    if (!g_file_get_contents(path, &data, length, &file_error)) {
        g_set_error_literal(error, RT_ERROR, RT_ERROR_IO, file_error->message); /* names the file */
        return NULL;
    }
    if (*length > OPT_MAX_FILE_SIZE) { /* it grew between stat and read */
        g_free(data);
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: too large for a config file", path);
        return NULL;
    }
    return data;
}

static gboolean write_all(int fd, const char *data, gsize length)
{
    while (length > 0) {
        ssize_t n = write(fd, data, length);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return FALSE;
        }
        data += n;
        length -= (gsize)n;
    }
    return TRUE;
}

/* So that the rename itself survives a crash. Best effort: some file systems refuse. */
static void sync_folder(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

gboolean opt_write_file_atomic(const char *path, const char *data, gsize length, gboolean overwrite,
                               GError **error)
{
    g_autofree char *dir = g_path_get_dirname(path);
    if (g_mkdir_with_parents(dir, 0755) != 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create the folder %s for %s: %s", dir, path,
                    g_strerror(e));
        return FALSE;
    }
    if (!overwrite && g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s already exists; it was left as it is", path);
        return FALSE;
    }
    g_autofree char *tmp = g_strconcat(path, ".XXXXXX", NULL);
    int fd = g_mkstemp_full(tmp, O_RDWR | O_CLOEXEC, 0666); /* the umask applies */
    if (fd < 0) {
        int e = errno;
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create a temporary file beside %s: %s", path,
                    g_strerror(e));
        return FALSE;
    }
    if (!write_all(fd, data, length) || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        g_unlink(tmp);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write %s: %s", tmp, g_strerror(e));
        return FALSE;
    }
    if (close(fd) != 0) {
        int e = errno;
        g_unlink(tmp);
        g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot write %s: %s", tmp, g_strerror(e));
        return FALSE;
    }
    if (overwrite) {
        if (g_rename(tmp, path) != 0) {
            int e = errno;
            g_unlink(tmp);
            g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot rename %s to %s: %s", tmp, path, g_strerror(e));
            return FALSE;
        }
    } else {
        /* link() refuses to replace a file that appeared since the check above */
        if (link(tmp, path) != 0) {
            int e = errno;
            gboolean no_links = e == EPERM || e == ENOTSUP || e == EXDEV || e == ENOSYS;
            if (no_links && g_rename(tmp, path) == 0) { /* a file system without hard links */
                sync_folder(dir);
                return TRUE;
            }
            g_unlink(tmp);
            if (e == EEXIST)
                g_set_error(error, RT_ERROR, RT_ERROR_IO, "%s already exists; it was left as it is", path);
            else
                g_set_error(error, RT_ERROR, RT_ERROR_IO, "cannot create %s: %s", path, g_strerror(e));
            return FALSE;
        }
        g_unlink(tmp);
    }
    sync_folder(dir);
    return TRUE;
}
