/* robotrain train's W&B logger (see train-wandb.h). */
#include "config.h"

#include <math.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/wandb.h>

#include "train/train-options.h"
#include "train/train-wandb.h"

struct rt_train_wandb {
    rt_wandb_run *run; /* NULL: inactive */
    gboolean disable_artifact;
    gboolean artifact_noted;
    char **tags; /* the run's, which name LeRobot's artifacts */
    gboolean log_warned;
};

static const char *string_or_null(const rt_config *cfg, const char *key)
{
    return rt_config_is_null(cfg, key) ? NULL : rt_config_get_string(cfg, key);
}

rt_train_wandb *rt_train_wandb_start(rt_config *cfg, gboolean is_main, GPtrArray *notes, GError **error)
{
    rt_train_wandb *w = g_new0(rt_train_wandb, 1);
    if (!is_main || !rt_config_get_bool(cfg, "wandb.enable"))
        return w;
    rt_wandb_settings s;
    rt_wandb_settings_init(&s);
    rt_wandb_settings_from_config(&s, cfg, "wandb");
    s.output_dir = rt_config_get_string(cfg, "output_dir");
    s.display_name = string_or_null(cfg, "job_name");
    s.resume = rt_config_get_bool(cfg, "resume");
    g_auto(GStrv) tags = NULL;
    if (!rt_config_lookup(cfg, "wandb.add_tags") || rt_config_get_bool(cfg, "wandb.add_tags"))
        tags = rt_wandb_lerobot_tags(string_or_null(cfg, "policy.type"),
                                     rt_config_is_null(cfg, "seed") ? 0 : rt_config_get_int(cfg, "seed"),
                                     string_or_null(cfg, "dataset.repo_id"), NULL);
    s.tags = (const char *const *)tags;
    g_autofree char *config_json = rt_train_config_to_json(cfg);
    s.config_json = config_json;
    w->disable_artifact = s.disable_artifact;
    w->tags = g_strdupv(tags);
    w->run = rt_wandb_run_start(&s, error);
    if (!w->run) {
        g_free(w);
        return NULL;
    }
    if (rt_wandb_run_get_mode(w->run) == RT_WANDB_MODE_DISABLED) {
        g_clear_pointer(&w->run, rt_wandb_run_free);
        return w;
    }
    /* every train_config.json written from now on names the run, so --resume continues it */
    if (!rt_config_set(cfg, "wandb.run_id", rt_wandb_run_get_id(w->run), error)) {
        rt_train_wandb_free(w);
        return NULL;
    }
    if (notes) {
        g_autofree char *url = rt_wandb_run_get_url(w->run);
        if (rt_wandb_run_get_mode(w->run) == RT_WANDB_MODE_OFFLINE)
            g_ptr_array_add(
                notes, g_strdup_printf("W&B offline run %s in %s (send it with: robotrain wandb sync %s)",
                                       rt_wandb_run_get_id(w->run), rt_wandb_run_get_dir(w->run),
                                       rt_wandb_run_get_dir(w->run)));
        else
            g_ptr_array_add(notes,
                            g_strdup_printf("Track this run --> %s (W&B run %s, kept in %s)",
                                            url ? url : "(the server was not reached yet)",
                                            rt_wandb_run_get_id(w->run), rt_wandb_run_get_dir(w->run)));
    }
    return w;
}

gboolean rt_train_wandb_active(const rt_train_wandb *w)
{
    return w && w->run;
}

void rt_train_wandb_log(rt_train_wandb *w, const rt_metrics *m, int64_t step, char **warning)
{
    if (warning)
        *warning = NULL;
    if (!rt_train_wandb_active(w))
        return;
    /* metrics.jsonl's line holds exactly what LeRobot's MetricsTracker.to_dict() gives W&B */
    g_autofree char *line = rt_metrics_to_json(m, 0);
    g_autoptr(JsonParser) parser = json_parser_new();
    if (!json_parser_load_from_data(parser, line, -1, NULL))
        return;
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    GList *keys = json_object_get_members(o);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GArray *values = g_array_new(FALSE, FALSE, sizeof(double));
    for (GList *k = keys; k; k = k->next) {
        const char *key = k->data;
        JsonNode *n = json_object_get_member(o, key);
        if (strcmp(key, "time") == 0 || !JSON_NODE_HOLDS_VALUE(n))
            continue; /* LeRobot skips what is not a number; non-finite averages are null here */
        GType t = json_node_get_value_type(n);
        double v = t == G_TYPE_INT64    ? (double)json_node_get_int(n)
                   : t == G_TYPE_DOUBLE ? json_node_get_double(n)
                                        : NAN;
        if (isnan(v) && t != G_TYPE_DOUBLE)
            continue;
        g_ptr_array_add(names, g_strconcat("train/", key, NULL));
        g_array_append_val(values, v);
    }
    g_list_free(keys);
    g_autoptr(GError) error = NULL;
    if (names->len > 0 && !rt_wandb_log(w->run, step, (const char *const *)names->pdata,
                                        (const double *)values->data, names->len, &error)) {
        if (!w->log_warned && warning)
            *warning = g_strdup_printf("W&B: step %" G_GINT64_FORMAT " not logged: %s", (gint64)step,
                                       error->message);
        w->log_warned = TRUE;
    } else {
        rt_wandb_commit(w->run);
    }
    g_ptr_array_unref(names);
    g_array_unref(values);
}

char *rt_train_wandb_checkpoint(rt_train_wandb *w, const char *checkpoint_dir)
{
    if (!rt_train_wandb_active(w) || w->disable_artifact || !checkpoint_dir)
        return NULL;
    /* LeRobot's log_policy: the pretrained_model's weights as a "model" artifact named after the
     * run's tags and the step folder; wandb's log_artifact gives it the alias "latest" */
    g_autofree char *base = g_path_get_basename(checkpoint_dir);
    g_autofree char *name = rt_wandb_artifact_name((const char *const *)w->tags, base);
    g_autofree char *weights = g_build_filename(checkpoint_dir, "pretrained_model", "model.safetensors", NULL);
    const char *paths[] = {weights, NULL};
    const char *aliases[] = {"latest", NULL};
    g_autoptr(GError) error = NULL;
    if (rt_wandb_run_log_artifact(w->run, name, "model", aliases, paths, NULL, &error))
        return g_strdup_printf("W&B: uploading %s as the \"model\" artifact %s", weights, name);
    if (g_error_matches(error, RT_ERROR, RT_ERROR_UNSUPPORTED)) {
        if (w->artifact_noted)
            return NULL;
        w->artifact_noted = TRUE;
        return g_strdup_printf("W&B: %s; the checkpoints stay in %s (--wandb.disable_artifact=true silences "
                               "this note)",
                               error->message, checkpoint_dir);
    }
    return g_strdup_printf("W&B: %s; training goes on", error->message);
}

char *rt_train_wandb_finish(rt_train_wandb *w, int exitcode, guint timeout_ms)
{
    if (!rt_train_wandb_active(w))
        return NULL;
    g_autoptr(GError) error = NULL;
    rt_wandb_stats st;
    gboolean ok = rt_wandb_run_finish(w->run, exitcode, timeout_ms, &error);
    rt_wandb_run_get_stats(w->run, &st);
    if (!ok)
        return g_strdup_printf("W&B: %s", error->message);
    rt_wandb_artifact_stats as;
    rt_wandb_run_get_artifact_stats(w->run, &as);
    if (rt_wandb_run_get_mode(w->run) == RT_WANDB_MODE_OFFLINE)
        return g_strdup_printf("W&B: %" G_GUINT64_FORMAT
                               " history lines kept offline in %s: send them with robotrain "
                               "wandb sync %s",
                               st.lines_written, rt_wandb_run_get_dir(w->run), rt_wandb_run_get_dir(w->run));
    g_autofree char *url = rt_wandb_run_get_url(w->run);
    g_autofree char *artifacts =
        as.queued ? g_strdup_printf(", %u of %u artifact(s) uploaded", as.committed, as.queued) : g_strdup("");
    return g_strdup_printf("W&B: run %s finished, %" G_GUINT64_FORMAT " history lines sent%s%s%s",
                           rt_wandb_run_get_id(w->run), st.lines_sent, artifacts, url ? ": " : "", url ? url : "");
}

void rt_train_wandb_free(rt_train_wandb *w)
{
    if (!w)
        return;
    rt_wandb_run_free(w->run);
    g_strfreev(w->tags);
    g_free(w);
}
