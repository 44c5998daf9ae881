/* LeRobot's path templates: the subset of Python's str.format that info.json uses. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"

char *rt_dataset_expand_template(const char *template_, const char *const *names, const int64_t *ints,
                                 size_t n, const char *video_key, GError **error)
{
    GString *out = g_string_new(NULL);
    for (const char *p = template_; *p; p++) {
        if (*p == '}' && p[1] == '}') { /* Python's escaped braces */
            g_string_append_c(out, '}');
            p++;
            continue;
        }
        if (*p != '{') {
            if (*p == '}')
                goto bad;
            g_string_append_c(out, *p);
            continue;
        }
        if (p[1] == '{') {
            g_string_append_c(out, '{');
            p++;
            continue;
        }
        const char *close = strchr(p, '}');
        if (!close)
            goto bad;
        g_autofree char *field = g_strndup(p + 1, (gsize)(close - p - 1));
        char *spec = strchr(field, ':');
        if (spec)
            *spec++ = '\0';
        if (strcmp(field, "video_key") == 0 && video_key && (!spec || !*spec || strcmp(spec, "s") == 0)) {
            g_string_append(out, video_key);
            p = close;
            continue;
        }
        size_t k = 0;
        while (k < n && strcmp(names[k], field) != 0)
            k++;
        if (k == n) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "path template \"%s\" uses {%s}, which is not a field LeRobot defines here",
                        template_, field);
            g_string_free(out, TRUE);
            return NULL;
        }
        int width = 0;
        if (spec && *spec) {
            /* "0Nd", "Nd" or "d" */
            const char *s = spec;
            gboolean zero = *s == '0';
            if (zero)
                s++;
            while (g_ascii_isdigit(*s) && width < 100)
                width = width * 10 + (*s++ - '0');
            if (strcmp(s, "d") != 0 || width > 32)
                goto bad;
            if (zero && width > 0) {
                g_string_append_printf(out, "%0*" G_GINT64_FORMAT, width, ints[k]);
                p = close;
                continue;
            }
        }
        g_string_append_printf(out, "%*" G_GINT64_FORMAT, width, ints[k]);
        p = close;
    }
    return g_string_free(out, FALSE);
bad:
    g_set_error(
        error, RT_ERROR, RT_ERROR_FORMAT,
        "path template \"%s\" is malformed: only {name}, {name:d} and {name:0Nd} fields are supported",
        template_);
    g_string_free(out, TRUE);
    return NULL;
}

char *rt_dataset_file_path(const char *root, const char *template_, const char *const *names,
                           const int64_t *ints, size_t n, const char *video_key, GError **error)
{
    char *rel = rt_dataset_expand_template(template_, names, ints, n, video_key, error);
    if (!rel) {
        g_prefix_error(error, "%s/meta/info.json: ", root); /* where the template comes from */
        return NULL;
    }
    gboolean escapes = g_path_is_absolute(rel);
    char **parts = g_strsplit(rel, "/", -1);
    for (size_t i = 0; parts[i] && !escapes; i++)
        escapes = strcmp(parts[i], "..") == 0;
    g_strfreev(parts);
    if (escapes) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s/meta/info.json: the path template \"%s\" gives \"%s\", which is outside the dataset",
                    root, template_, rel);
        g_free(rel);
        return NULL;
    }
    char *path = g_build_filename(root, rel, NULL);
    g_free(rel);
    return path;
}
