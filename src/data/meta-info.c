/* meta/info.json: version, fps, counters, path templates and the features table. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"

void rt_meta_info_free(rt_meta_info *info)
{
    if (!info)
        return;
    g_free(info->version);
    g_free(info->robot_type);
    g_free(info->data_path);
    g_free(info->video_path);
    if (info->features)
        g_ptr_array_free(info->features, TRUE);
    if (info->strings)
        g_string_chunk_free(info->strings);
    g_free(info);
}

int rt_meta_info_find(const rt_meta_info *info, const char *name)
{
    for (guint i = 0; i < info->features->len; i++) {
        const rt_feature *f = g_ptr_array_index(info->features, i);
        if (strcmp(f->name, name) == 0)
            return (int)i;
    }
    return -1;
}

/* Numeric dtypes LeRobot writes (numpy names) and how items hold them. */
static const struct {
    const char *dtype;
    rt_dtype storage;
} numeric_dtypes[] = {
    {"float32", RT_F32}, {"float64", RT_F64}, {"int64", RT_I64},  {"int32", RT_I64},  {"int16", RT_I64},
    {"int8", RT_I64},    {"uint8", RT_I64},   {"uint16", RT_I64}, {"uint32", RT_I64}, {"bool", RT_BOOL},
};

static gboolean is_channel_name(JsonArray *names, guint i)
{
    if (!names || i >= json_array_get_length(names))
        return FALSE;
    JsonNode *n = json_array_get_element(names, i);
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING)
        return FALSE;
    const char *s = json_node_get_string(n);
    return strcmp(s, "channel") == 0 || strcmp(s, "channels") == 0;
}

static rt_dataset_feature_type policy_type(const char *name, rt_feature_kind kind)
{
    if (kind == RT_FEATURE_VIDEO || kind == RT_FEATURE_IMAGE)
        return RT_FEATURE_TYPE_VISUAL;
    if (kind == RT_FEATURE_STRING)
        return RT_FEATURE_TYPE_NONE;
    if (strcmp(name, "observation.environment_state") == 0)
        return RT_FEATURE_TYPE_ENV;
    if (g_str_has_prefix(name, "observation"))
        return RT_FEATURE_TYPE_STATE;
    if (g_str_has_prefix(name, "action"))
        return RT_FEATURE_TYPE_ACTION;
    return RT_FEATURE_TYPE_NONE;
}

static gboolean parse_shape(JsonObject *fo, rt_feature *f, const char *name, const char *where,
                            GError **error)
{
    JsonNode *node = json_object_get_member(fo, "shape");
    if (!node || !JSON_NODE_HOLDS_ARRAY(node)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s: \"shape\" must be a list of integers", name,
                    where);
        return FALSE;
    }
    JsonArray *a = json_node_get_array(node);
    guint n = json_array_get_length(a);
    if (n < 1 || n > RT_FEATURE_MAX_DIMS) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: %s: \"shape\" has %u dimensions; 1 to %d are supported", name, where, n,
                    RT_FEATURE_MAX_DIMS);
        return FALSE;
    }
    int64_t numel = 1;
    for (guint i = 0; i < n; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_INT64 ||
            json_node_get_int(e) < 1 || json_node_get_int(e) > RT_META_MAX_NUMEL) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: %s: \"shape\" item %u must be an integer from 1 to %" G_GINT64_FORMAT, name,
                        where, i, RT_META_MAX_NUMEL);
            return FALSE;
        }
        f->shape[i] = json_node_get_int(e);
        numel *= f->shape[i];
        if (numel > RT_META_MAX_NUMEL) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: %s: \"shape\" holds more than %" G_GINT64_FORMAT " values per frame", name,
                        where, RT_META_MAX_NUMEL);
            return FALSE;
        }
    }
    f->ndim = (int)n;
    f->numel = numel;
    return TRUE;
}

/* Camera geometry: [H, W, C] (names end in "channel(s)", or no names) or [C, H, W]. */
static gboolean parse_camera(JsonObject *fo, rt_feature *f, GStringChunk *strings, const char *name,
                             const char *where, GError **error)
{
    if (f->ndim != 3) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: %s: a camera needs a shape of 3 dimensions (height, width, channels), not %d", name,
                    where, f->ndim);
        return FALSE;
    }
    JsonNode *nn = json_object_get_member(fo, "names");
    JsonArray *names = nn && JSON_NODE_HOLDS_ARRAY(nn) ? json_node_get_array(nn) : NULL;
    if (is_channel_name(names, 0) && !is_channel_name(names, 2)) {
        f->channels = (int)f->shape[0];
        f->height = (int)f->shape[1];
        f->width = (int)f->shape[2];
    } else {
        f->height = (int)f->shape[0];
        f->width = (int)f->shape[1];
        f->channels = (int)f->shape[2];
    }
    if (f->channels != 3) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "%s: %s: cameras with %d channels are not supported (only RGB, 3 channels)", name, where,
                    f->channels);
        return FALSE;
    }
    JsonNode *in = json_object_get_member(fo, "info");
    if (in && JSON_NODE_HOLDS_OBJECT(in)) {
        JsonObject *io = json_node_get_object(in);
        g_autofree char *iw = g_strdup_printf("%s.info", where);
        const char *s = NULL;
        if (!rt_meta_get_string(io, "video.codec", FALSE, &s, name, iw, error))
            return FALSE;
        f->video_codec = s ? g_string_chunk_insert(strings, s) : NULL;
        s = NULL;
        if (!rt_meta_get_string(io, "video.pix_fmt", FALSE, &s, name, iw, error))
            return FALSE;
        f->video_pix_fmt = s ? g_string_chunk_insert(strings, s) : NULL;
        f->video_fps = 0;
        if (!rt_meta_get_number(io, "video.fps", FALSE, &f->video_fps, name, iw, error))
            return FALSE;
        for (int k = 0; k < 2; k++) {
            JsonNode *d = json_object_get_member(io, k ? "video.is_depth_map" : "is_depth_map");
            if (d && JSON_NODE_HOLDS_VALUE(d) && json_node_get_value_type(d) == G_TYPE_BOOLEAN &&
                json_node_get_boolean(d))
                f->is_depth_map = TRUE;
        }
    }
    return TRUE;
}

static gboolean parse_feature(rt_meta_info *info, const char *key, JsonNode *node, const char *name,
                              GError **error)
{
    g_autofree char *where = g_strdup_printf("features.%s", key);
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s must be an object with dtype and shape", name,
                    where);
        return FALSE;
    }
    JsonObject *fo = json_node_get_object(node);
    rt_feature *f = g_new0(rt_feature, 1);
    g_ptr_array_add(info->features, f);
    f->name = g_string_chunk_insert(info->strings, key);
    const char *dtype = NULL;
    if (!rt_meta_get_string(fo, "dtype", TRUE, &dtype, name, where, error))
        return FALSE;
    f->dtype = g_string_chunk_insert(info->strings, dtype);
    if (!parse_shape(fo, f, name, where, error))
        return FALSE;
    if (strcmp(dtype, "video") == 0 || strcmp(dtype, "image") == 0) {
        f->kind = strcmp(dtype, "video") == 0 ? RT_FEATURE_VIDEO : RT_FEATURE_IMAGE;
        f->storage = RT_F32;
        if (!parse_camera(fo, f, info->strings, name, where, error))
            return FALSE;
    } else if (strcmp(dtype, "string") == 0 || strcmp(dtype, "language") == 0) {
        f->kind = RT_FEATURE_STRING;
    } else {
        gboolean known = FALSE;
        for (size_t i = 0; i < G_N_ELEMENTS(numeric_dtypes); i++)
            if (strcmp(dtype, numeric_dtypes[i].dtype) == 0) {
                f->storage = numeric_dtypes[i].storage;
                known = TRUE;
            }
        if (!known) {
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "%s: %s: dtype \"%s\" is not supported (float32, float64, int8 .. int64, uint8 .. "
                        "uint32, bool, video, image, string)",
                        name, where, dtype);
            return FALSE;
        }
        f->kind = RT_FEATURE_NUMERIC;
    }
    f->type = policy_type(key, f->kind);
    return TRUE;
}

/* The five columns every LeRobot frame has, and what they must be. */
static gboolean check_default_features(const rt_meta_info *info, const char *name, GError **error)
{
    static const char *const keys[] = {"timestamp", "frame_index", "episode_index", "index", "task_index"};
    for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
        int k = rt_meta_info_find(info, keys[i]);
        if (k < 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: features has no \"%s\"; every LeRobot dataset has timestamp, frame_index, "
                        "episode_index, index and task_index",
                        name, keys[i]);
            return FALSE;
        }
        const rt_feature *f = g_ptr_array_index(info->features, k);
        rt_dtype want = i == 0 ? RT_F32 : RT_I64;
        if (f->kind != RT_FEATURE_NUMERIC || f->numel != 1 || (f->storage != want && i != 0) ||
            (i == 0 && f->storage != RT_F32 && f->storage != RT_F64)) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_FORMAT,
                "%s: features.%s must be a scalar (shape [1]) of dtype %s; it is %s with %" G_GINT64_FORMAT
                " values",
                name, keys[i], i == 0 ? "float32" : "int64", f->dtype, f->numel);
            return FALSE;
        }
    }
    return TRUE;
}

rt_meta_info *rt_meta_info_parse(const char *data, gsize length, const char *name, GError **error)
{
    JsonParser *parser = rt_meta_parse_object(data, length, name, 0, error);
    if (!parser)
        return NULL;
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    rt_meta_info *info = g_new0(rt_meta_info, 1);
    info->features = g_ptr_array_new_with_free_func(g_free);
    info->strings = g_string_chunk_new(256);
    info->chunks_size = 1000;
    info->total_tasks = -1;
    const char *s = NULL;
    gboolean ok = rt_meta_get_string(root, "codebase_version", TRUE, &s, name, "the root", error);
    if (ok) {
        info->version = g_strdup(s);
        int major = 0, minor = 0;
        char tail = 0;
        if (sscanf(s, "v%d.%d%c", &major, &minor, &tail) != 2 || major < 0 || minor < 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: codebase_version \"%s\" is not of the form vMAJOR.MINOR", name, s);
            ok = FALSE;
        } else if (!(major == 3 || (major == 2 && (minor == 0 || minor == 1)))) {
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "%s: codebase_version %s is not supported (v2.0, v2.1 and v3.x are); convert the "
                        "dataset with LeRobot's conversion scripts first",
                        name, s);
            ok = FALSE;
        }
        info->version_major = major;
        info->version_minor = minor;
    }
    ok = ok && rt_meta_get_number(root, "fps", TRUE, &info->fps, name, "the root", error);
    if (ok && !(isfinite(info->fps) && info->fps > 0 && info->fps <= 1e6)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: fps %g is not a frame rate (0 < fps <= 1e6)", name,
                    info->fps);
        ok = FALSE;
    }
    ok = ok &&
         rt_meta_get_int(root, "total_episodes", TRUE, &info->total_episodes, name, "the root", error) &&
         rt_meta_get_int(root, "total_frames", TRUE, &info->total_frames, name, "the root", error) &&
         rt_meta_get_int(root, "total_tasks", FALSE, &info->total_tasks, name, "the root", error) &&
         rt_meta_get_int(root, "chunks_size", FALSE, &info->chunks_size, name, "the root", error);
    if (ok && (info->total_episodes < 0 || info->total_frames < 0 || info->chunks_size < 1)) {
        g_set_error(
            error, RT_ERROR, RT_ERROR_FORMAT,
            "%s: total_episodes, total_frames must be >= 0 and chunks_size >= 1 (got %" G_GINT64_FORMAT
            ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")",
            name, info->total_episodes, info->total_frames, info->chunks_size);
        ok = FALSE;
    }
    s = NULL;
    ok = ok && rt_meta_get_string(root, "robot_type", FALSE, &s, name, "the root", error);
    if (ok && s)
        info->robot_type = g_strdup(s);
    s = NULL;
    ok = ok && rt_meta_get_string(root, "data_path", TRUE, &s, name, "the root", error);
    if (ok)
        info->data_path = g_strdup(s);
    s = NULL;
    ok = ok && rt_meta_get_string(root, "video_path", FALSE, &s, name, "the root", error);
    if (ok && s)
        info->video_path = g_strdup(s);
    if (ok) {
        JsonNode *fn = json_object_get_member(root, "features");
        if (!fn || !JSON_NODE_HOLDS_OBJECT(fn)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: \"features\" must be an object", name);
            ok = FALSE;
        } else {
            JsonObject *fo = json_node_get_object(fn);
            GList *members = json_object_get_members(fo); /* in file order */
            if (g_list_length(members) > RT_META_MAX_FEATURES) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: more than %d features", name,
                            RT_META_MAX_FEATURES);
                ok = FALSE;
            }
            for (GList *l = members; ok && l; l = l->next)
                ok = parse_feature(info, l->data, json_object_get_member(fo, l->data), name, error);
            g_list_free(members);
        }
    }
    ok = ok && check_default_features(info, name, error);
    if (ok && !info->video_path) {
        for (guint i = 0; i < info->features->len; i++) {
            const rt_feature *f = g_ptr_array_index(info->features, i);
            if (f->kind == RT_FEATURE_VIDEO) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                            "%s: feature %s is a video but \"video_path\" is missing or null", name, f->name);
                ok = FALSE;
                break;
            }
        }
    }
    g_object_unref(parser);
    if (!ok) {
        rt_meta_info_free(info);
        return NULL;
    }
    return info;
}
