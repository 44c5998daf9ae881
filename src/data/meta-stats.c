/* Feature statistics: meta/stats.json, and v2.1's meta/episodes_stats.jsonl aggregated the way
 * LeRobot's compute_stats.aggregate_stats does. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <robotrain/error.h>

#include "data/dataset-meta.h"

static const char *const stat_names[RT_STAT_COUNT_] = {"min", "max", "mean", "std", "q01",
                                                       "q10", "q50", "q90",  "q99"};

const char *rt_stat_name(rt_stat stat)
{
    return stat >= 0 && stat < RT_STAT_COUNT_ ? stat_names[stat] : "?";
}

static void feature_stats_free(gpointer p)
{
    rt_feature_stats *fs = p;
    for (int k = 0; k < RT_STAT_COUNT_; k++)
        g_free((double *)fs->values[k]);
    g_free((char *)fs->feature);
    g_free(fs);
}

rt_meta_stats *rt_meta_stats_new(void)
{
    rt_meta_stats *s = g_new0(rt_meta_stats, 1);
    s->items = g_ptr_array_new_with_free_func(feature_stats_free);
    return s;
}

void rt_meta_stats_free(rt_meta_stats *stats)
{
    if (!stats)
        return;
    g_ptr_array_free(stats->items, TRUE);
    g_free(stats);
}

rt_feature_stats *rt_meta_stats_find(const rt_meta_stats *stats, const char *feature)
{
    for (guint i = 0; i < stats->items->len; i++) {
        rt_feature_stats *fs = g_ptr_array_index(stats->items, i);
        if (strcmp(fs->feature, feature) == 0)
            return fs;
    }
    return NULL;
}

static rt_feature_stats *find_or_add(rt_meta_stats *stats, const char *feature, int64_t numel)
{
    rt_feature_stats *fs = rt_meta_stats_find(stats, feature);
    if (!fs) {
        fs = g_new0(rt_feature_stats, 1);
        fs->feature = g_strdup(feature);
        fs->numel = numel;
        fs->count = -1;
        g_ptr_array_add(stats->items, fs);
    }
    return fs;
}

void rt_meta_stats_set(rt_meta_stats *stats, const char *feature, rt_stat stat, const double *values,
                       int64_t numel)
{
    rt_feature_stats *fs = find_or_add(stats, feature, numel);
    if (fs->numel != numel) { /* a new size replaces every stat of the old one */
        for (int k = 0; k < RT_STAT_COUNT_; k++)
            g_clear_pointer((double **)&fs->values[k], g_free);
        fs->numel = numel;
    }
    g_free((double *)fs->values[stat]);
    fs->values[stat] = g_memdup2(values, (gsize)numel * sizeof(double));
}

int64_t rt_meta_stats_numel(const rt_feature *feature)
{
    if (feature->kind == RT_FEATURE_VIDEO || feature->kind == RT_FEATURE_IMAGE)
        return feature->channels;
    return feature->numel;
}

/* Appends the numbers of a (nested) list, or a lone number, to out. */
static gboolean flatten(JsonNode *node, GArray *out, int depth, GString *problem)
{
    if (JSON_NODE_HOLDS_VALUE(node)) {
        GType t = json_node_get_value_type(node);
        if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE) {
            double v = json_node_get_double(node);
            g_array_append_val(out, v);
            return TRUE;
        }
        g_string_append(problem, "holds something other than numbers");
        return FALSE;
    }
    if (!JSON_NODE_HOLDS_ARRAY(node) || depth > 4) {
        g_string_append(problem, depth > 4 ? "nests lists more than 4 deep" : "is not a list of numbers");
        return FALSE;
    }
    JsonArray *a = json_node_get_array(node);
    for (guint i = 0; i < json_array_get_length(a); i++)
        if (!flatten(json_array_get_element(a, i), out, depth + 1, problem))
            return FALSE;
    return TRUE;
}

static gboolean parse_feature_stats(rt_meta_stats *stats, const char *key, JsonNode *node,
                                    const rt_meta_info *info, const char *name, const char *where,
                                    GError **error)
{
    if (!JSON_NODE_HOLDS_OBJECT(node)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s%s: expected an object of stats", name, where,
                    key);
        return FALSE;
    }
    JsonObject *o = json_node_get_object(node);
    int fi = info ? rt_meta_info_find(info, key) : -1;
    const rt_feature *feature = fi >= 0 ? g_ptr_array_index(info->features, fi) : NULL;
    int64_t expect = feature ? rt_meta_stats_numel(feature) : -1;
    GArray *values = g_array_new(FALSE, FALSE, sizeof(double));
    GString *problem = g_string_new(NULL);
    gboolean ok = TRUE;
    rt_feature_stats *fs = NULL;
    for (int k = -1; ok && k < RT_STAT_COUNT_; k++) { /* k = -1: count */
        const char *stat = k < 0 ? "count" : stat_names[k];
        JsonNode *sn = json_object_get_member(o, stat);
        if (!sn)
            continue;
        g_array_set_size(values, 0);
        if (!flatten(sn, values, 0, problem)) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %s%s.%s %s", name, where, key, stat,
                        problem->str);
            ok = FALSE;
            break;
        }
        if (k < 0) {
            double c = values->len == 1 ? g_array_index(values, double, 0) : -1;
            if (values->len != 1 || !(c >= 0 && c <= 9e15) || c != floor(c)) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                            "%s: %s%s.count must be one non-negative integer ([N])", name, where, key);
                ok = FALSE;
                break;
            }
            int64_t numel = expect >= 0 ? expect : 0;
            fs = find_or_add(stats, key, numel);
            fs->count = (int64_t)c;
            continue;
        }
        int64_t n = values->len;
        if ((expect >= 0 && n != expect) || n == 0 || n > RT_META_MAX_NUMEL) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_FORMAT,
                "%s: %s%s.%s has %" G_GINT64_FORMAT " values; the feature has %" G_GINT64_FORMAT " (%s)",
                name, where, key, stat, n, expect,
                feature && feature->kind != RT_FEATURE_NUMERIC ? "one per channel" : "its shape's product");
            ok = FALSE;
            break;
        }
        if (fs && fs->numel == 0)
            fs->numel = n;
        if (fs && fs->numel != n) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: %s%s.%s has %" G_GINT64_FORMAT
                        " values but the feature's other stats have %" G_GINT64_FORMAT,
                        name, where, key, stat, n, fs->numel);
            ok = FALSE;
            break;
        }
        rt_meta_stats_set(stats, key, (rt_stat)k, (const double *)(void *)values->data, n);
        fs = rt_meta_stats_find(stats, key);
    }
    g_string_free(problem, TRUE);
    g_array_free(values, TRUE);
    return ok;
}

rt_meta_stats *rt_meta_stats_from_object(JsonObject *root, const rt_meta_info *info, const char *name,
                                         const char *where, GError **error)
{
    rt_meta_stats *stats = rt_meta_stats_new();
    GList *members = json_object_get_members(root);
    gboolean ok = TRUE;
    if (g_list_length(members) > RT_META_MAX_FEATURES) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: %sstats of more than %d features", name, where,
                    RT_META_MAX_FEATURES);
        ok = FALSE;
    }
    for (GList *l = members; ok && l; l = l->next)
        ok = parse_feature_stats(stats, l->data, json_object_get_member(root, l->data), info, name, where,
                                 error);
    g_list_free(members);
    if (!ok) {
        rt_meta_stats_free(stats);
        return NULL;
    }
    return stats;
}

rt_meta_stats *rt_meta_stats_parse(const char *data, gsize length, const rt_meta_info *info, const char *name,
                                   GError **error)
{
    JsonParser *parser = rt_meta_parse_object(data, length, name, 0, error);
    if (!parser)
        return NULL;
    rt_meta_stats *stats =
        rt_meta_stats_from_object(json_node_get_object(json_parser_get_root(parser)), info, name, "", error);
    g_object_unref(parser);
    return stats;
}

/* ---------------------------------------------------------------- aggregation */

static gboolean aggregate_feature(rt_meta_stats *out, const char *key, rt_feature_stats *const *eps, size_t n,
                                  const char *name, GError **error)
{
    int64_t d = eps[0]->numel;
    for (size_t e = 0; e < n; e++) {
        static const rt_stat needed[] = {RT_STAT_MIN, RT_STAT_MAX, RT_STAT_MEAN, RT_STAT_STD};
        for (size_t k = 0; k < G_N_ELEMENTS(needed); k++)
            if (!eps[e]->values[needed[k]]) {
                g_set_error(
                    error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s: the stats of %s in episode entry %zu have no %s (min, max, mean, std and count "
                    "are needed)",
                    name, key, e + 1, stat_names[needed[k]]);
                return FALSE;
            }
        if (eps[e]->count < 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: the stats of %s in episode entry %zu have no count", name, key, e + 1);
            return FALSE;
        }
        if (eps[e]->numel != d) {
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "%s: the stats of %s have %" G_GINT64_FORMAT
                        " values in episode entry %zu but %" G_GINT64_FORMAT " in the first",
                        name, key, eps[e]->numel, e + 1, d);
            return FALSE;
        }
    }
    int64_t total = 0;
    for (size_t e = 0; e < n; e++)
        total += eps[e]->count;
    double *mean = g_new0(double, d), *var = g_new0(double, d), *lo = g_new(double, d),
           *hi = g_new(double, d);
    /* numpy: (means * counts).sum(axis=0) / total, adding episode by episode */
    for (size_t e = 0; e < n; e++)
        for (int64_t j = 0; j < d; j++)
            mean[j] += eps[e]->values[RT_STAT_MEAN][j] * (double)eps[e]->count;
    for (int64_t j = 0; j < d; j++)
        mean[j] /= (double)total;
    for (size_t e = 0; e < n; e++)
        for (int64_t j = 0; j < d; j++) {
            double s = eps[e]->values[RT_STAT_STD][j];
            double delta = eps[e]->values[RT_STAT_MEAN][j] - mean[j];
            var[j] += (s * s + delta * delta) * (double)eps[e]->count;
        }
    for (int64_t j = 0; j < d; j++)
        var[j] = sqrt(var[j] / (double)total);
    for (int64_t j = 0; j < d; j++) {
        lo[j] = eps[0]->values[RT_STAT_MIN][j];
        hi[j] = eps[0]->values[RT_STAT_MAX][j];
        for (size_t e = 1; e < n; e++) {
            lo[j] = fmin(lo[j], eps[e]->values[RT_STAT_MIN][j]);
            hi[j] = fmax(hi[j], eps[e]->values[RT_STAT_MAX][j]);
        }
    }
    rt_meta_stats_set(out, key, RT_STAT_MIN, lo, d);
    rt_meta_stats_set(out, key, RT_STAT_MAX, hi, d);
    rt_meta_stats_set(out, key, RT_STAT_MEAN, mean, d);
    rt_meta_stats_set(out, key, RT_STAT_STD, var, d);
    rt_meta_stats_find(out, key)->count = total;
    /* quantiles: an envelope (min up to q50, max above), only when every episode has them */
    for (int k = RT_STAT_Q01; k <= RT_STAT_Q99; k++) {
        gboolean all = TRUE;
        for (size_t e = 0; e < n && all; e++)
            all = eps[e]->values[k] != NULL;
        if (!all)
            continue;
        gboolean upper = k > RT_STAT_Q50;
        for (int64_t j = 0; j < d; j++) {
            lo[j] = eps[0]->values[k][j];
            for (size_t e = 1; e < n; e++)
                lo[j] = upper ? fmax(lo[j], eps[e]->values[k][j]) : fmin(lo[j], eps[e]->values[k][j]);
        }
        rt_meta_stats_set(out, key, (rt_stat)k, lo, d);
    }
    g_free(mean);
    g_free(var);
    g_free(lo);
    g_free(hi);
    return TRUE;
}

rt_meta_stats *rt_meta_stats_aggregate(rt_meta_stats *const *episodes, size_t n, const char *name,
                                       GError **error)
{
    rt_meta_stats *out = rt_meta_stats_new();
    GPtrArray *with_key = g_ptr_array_new();
    gboolean ok = TRUE;
    /* features in order of first appearance */
    for (size_t e = 0; ok && e < n; e++) {
        for (guint i = 0; ok && i < episodes[e]->items->len; i++) {
            const rt_feature_stats *fs = g_ptr_array_index(episodes[e]->items, i);
            if (rt_meta_stats_find(out, fs->feature))
                continue;
            g_ptr_array_set_size(with_key, 0);
            for (size_t k = e; k < n; k++) {
                rt_feature_stats *x = rt_meta_stats_find(episodes[k], fs->feature);
                if (x)
                    g_ptr_array_add(with_key, x);
            }
            ok = aggregate_feature(out, fs->feature, (rt_feature_stats *const *)with_key->pdata,
                                   with_key->len, name, error);
        }
    }
    g_ptr_array_free(with_key, TRUE);
    if (!ok) {
        rt_meta_stats_free(out);
        return NULL;
    }
    return out;
}

typedef struct {
    const rt_meta_info *info;
    GPtrArray *episodes; /* rt_meta_stats * */
    GHashTable *seen;    /* episode_index */
} episodes_stats_parse;

static gboolean episodes_stats_line(JsonObject *o, const char *name, guint line, gpointer user,
                                    GError **error)
{
    episodes_stats_parse *p = user;
    g_autofree char *where = g_strdup_printf("line %u", line);
    int64_t index = -1;
    if (!rt_meta_get_int(o, "episode_index", TRUE, &index, name, where, error))
        return FALSE;
    if (g_hash_table_contains(p->seen, &index)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "%s line %u: episode %" G_GINT64_FORMAT " is listed twice", name, line, index);
        return FALSE;
    }
    if (p->episodes->len >= RT_META_MAX_EPISODES) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s: more than %" G_GINT64_FORMAT " episodes", name,
                    RT_META_MAX_EPISODES);
        return FALSE;
    }
    JsonNode *sn = json_object_get_member(o, "stats");
    if (!sn || !JSON_NODE_HOLDS_OBJECT(sn)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "%s line %u: \"stats\" must be an object", name, line);
        return FALSE;
    }
    g_autofree char *prefix = g_strdup_printf("line %u: stats.", line);
    rt_meta_stats *s = rt_meta_stats_from_object(json_node_get_object(sn), p->info, name, prefix, error);
    if (!s)
        return FALSE;
    g_ptr_array_add(p->episodes, s);
    int64_t *key = g_new(int64_t, 1);
    *key = index;
    g_hash_table_add(p->seen, key);
    return TRUE;
}

rt_meta_stats *rt_meta_episodes_stats_parse(const char *data, gsize length, const rt_meta_info *info,
                                            const char *name, GError **error)
{
    episodes_stats_parse p = {info, g_ptr_array_new_with_free_func((GDestroyNotify)rt_meta_stats_free),
                              g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL)};
    rt_meta_stats *out = NULL;
    if (rt_meta_foreach_line(data, length, name, episodes_stats_line, &p, error)) {
        if (p.episodes->len == 0)
            out = rt_meta_stats_new();
        else
            out = rt_meta_stats_aggregate((rt_meta_stats *const *)p.episodes->pdata, p.episodes->len, name,
                                          error);
    }
    g_ptr_array_free(p.episodes, TRUE);
    g_hash_table_destroy(p.seen);
    return out;
}
