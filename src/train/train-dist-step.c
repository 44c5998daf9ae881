/* The data-parallel parts of a training step (see train-dist.h): global loss counts, the
 * agreement on stopping, the reduction of logged metrics, the note on resuming. */
#include "config.h"

#include <signal.h>
#include <string.h>

#include <robotrain/error.h>

#include "train/stop.h"
#include "train/train-dist.h"

gboolean rt_train_dist_count_weights(rt_train_dist *d, rt_graph *g, const rt_policy_losses *losses,
                                     const rt_batch *b, GError **error)
{
    int n = losses->n_counts;
    if (n == 0)
        return TRUE;
    double local[RT_POLICY_MAX_LOSSES], global[RT_POLICY_MAX_LOSSES];
    for (int k = 0; k < n; k++) {
        const char *mask = losses->counts[k].mask;
        int field = -1;
        for (int i = 0; i < rt_batch_layout_num_fields(b->layout) && field < 0; i++)
            if (strcmp(rt_batch_layout_field(b->layout, i)->key, mask) == 0)
                field = i;
        if (field < 0) {
            g_set_error(
                error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "the policy averages a loss over the valid entries of '%s', which the batch does not have",
                mask);
            return FALSE;
        }
        const rt_batch_field *f = rt_batch_layout_field(b->layout, field);
        const uint8_t *pad = rt_batch_field_data(b, field);
        int64_t entries = b->capacity * f->numel, valid = 0;
        for (int64_t i = 0; i < entries; i++)
            valid += pad[i] == 0;
        local[k] = global[k] = (double)(valid * losses->counts[k].per_entry);
    }
    if (!rt_train_dist_sum(d, global, n, error))
        return FALSE;
    int world = rt_train_dist_world(d)->world_size;
    for (int k = 0; k < n; k++) {
        rt_tensor *w = losses->counts[k].weight;
        double v = MAX(1.0, local[k]) * world / MAX(1.0, global[k]);
        float f = (float)v;
        gboolean ok = w->dtype == RT_F64 ? rt_graph_write(g, w, &v, sizeof v, error)
                                         : rt_graph_write(g, w, &f, sizeof f, error);
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

gboolean rt_train_dist_agree_on_stop(rt_train_dist *d, int *sig, GError **error)
{
    *sig = rt_train_stop_requested();
    if (!rt_train_dist_active(d))
        return TRUE;
    double v[2] = {*sig == SIGINT, *sig == SIGTERM};
    if (!rt_train_dist_sum(d, v, 2, error))
        return FALSE;
    *sig = v[0] > 0 ? SIGINT : v[1] > 0 ? SIGTERM : 0;
    return TRUE;
}

gboolean rt_train_dist_reduce_metrics(rt_train_dist *d, rt_metrics *m, const rt_policy_losses *losses,
                                      GError **error)
{
    if (!rt_train_dist_active(d))
        return TRUE;
    const char *mean_keys[1 + RT_POLICY_MAX_LOSSES] = {"loss"};
    static const char *max_keys[2] = {"update_s", "dataloading_s"};
    int n_mean = 1;
    for (int i = 0; i < losses->n; i++)
        mean_keys[n_mean++] = losses->names[i];
    double mean[1 + RT_POLICY_MAX_LOSSES], max[2];
    for (int i = 0; i < n_mean; i++) {
        const rt_meter *meter = rt_metrics_meter(m, mean_keys[i]);
        mean[i] = meter ? meter->avg : 0;
    }
    for (int i = 0; i < 2; i++) {
        const rt_meter *meter = rt_metrics_meter(m, max_keys[i]);
        max[i] = meter ? meter->avg : 0;
    }
    if (!rt_train_dist_reduce_log(d, mean, n_mean, max, 2, error))
        return FALSE;
    for (int i = 0; i < n_mean; i++)
        rt_metrics_set_average(m, mean_keys[i], mean[i]);
    for (int i = 0; i < 2; i++)
        rt_metrics_set_average(m, max_keys[i], max[i]);
    return TRUE;
}

char *rt_train_dist_resume_note(const rt_train_dist *d, int64_t saved_batch, int saved_processes,
                                int64_t batch)
{
    int saved_n = MAX(saved_processes, 1), n = rt_train_dist_world(d)->world_size;
    if (saved_batch <= 0 || (saved_batch == batch && saved_n == n))
        return NULL;
    if (saved_batch * saved_n == batch * n)
        return g_strdup_printf("the checkpoint was written with --batch_size %" G_GINT64_FORMAT
                               " on %d process(es): the global batch is unchanged (%" G_GINT64_FORMAT
                               " x %d = %" G_GINT64_FORMAT
                               " x %d), so the data order continues sample for sample",
                               (gint64)saved_batch, saved_n, (gint64)saved_batch, saved_n, (gint64)batch, n);
    return g_strdup_printf("WARNING: the checkpoint's global batch is %" G_GINT64_FORMAT
                           " x %d = %" G_GINT64_FORMAT " and this run's %" G_GINT64_FORMAT
                           " x %d = %" G_GINT64_FORMAT ": the data order does not continue sample for sample",
                           (gint64)saved_batch, saved_n, (gint64)(saved_batch * saved_n), (gint64)batch, n,
                           (gint64)(batch * n));
}
