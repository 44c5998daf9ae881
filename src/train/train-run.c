/* The training loop of robotrain train (see train-run.h). */
#include "config.h"

#include <math.h>
#include <signal.h>
#include <string.h>

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/graph.h>
#include <robotrain/policy.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "data/normalize.h"
#include "data/sampler.h"
#include "train/amp.h"
#include "train/checkpoint.h"
#include "core/json-write.h"
#include "train/metrics.h"
#include "train/stop.h"
#include "train/train-dist.h"
#include "train/train-hub.h"
#include "train/train-run.h"
#include "train/train-wandb.h"

#define MAX_INPUTS 64

typedef struct run {
    const rt_train_run_args *a;
    rt_config *cfg;
    rt_progress *bar;
    int64_t start, step, total;
    uint64_t seed;
    /* data */
    rt_dataset *ds;
    int64_t *episodes;
    rt_normalizer *norm;
    rt_sampler *sampler;      /* the loader's */
    rt_sampler *fill_sampler; /* ours: completes a short last batch */
    rt_dataset_reader *reader;
    rt_loader *loader;
    /* model */
    rt_policy *policy;
    rt_graph *g;
    const rt_backend_i *backend;
    rt_backend_device *dev;
    char *device_name;
    int dev_index; /* N of cuda:N */
    rt_policy_losses losses;
    rt_tensor *grad_norm;
    int n_inputs;
    int input_field[MAX_INPUTS];
    rt_tensor *input[MAX_INPUTS];
    /* optimizer */
    rt_train_optim optim;
    rt_param_order *order;
    double base_lr[RT_TRAIN_MAX_GROUPS];
    rt_checkpoint *ck;
    rt_train_amp amp; /* mixed precision (amp.h) */
    /* checkpoints and logs */
    int64_t saved_step;    /* of the last checkpoint written, -1 before */
    GArray *stats;         /* rt_ckpt_stat */
    GPtrArray *stat_store; /* the values they point to */
    rt_metrics *metrics;
    rt_metrics_log *mlog;
    char *last_checkpoint;
    /* data-parallel (train-dist.h; inactive for a process alone) */
    rt_train_dist *dist;
    rt_train_wandb *wandb; /* --wandb.*: train-wandb.h */
} run;

/* ---------------------------------------------------------------- logging */

static void log_line(run *r, int line, const char *format, ...) G_GNUC_PRINTF(3, 4);
static void log_line(run *r, int line, const char *format, ...)
{
    if (r->dist && !rt_train_dist_prints(r->dist))
        return;
    g_autoptr(GDateTime) now = g_date_time_new_now_local();
    GString *s = g_string_new(NULL);
    rt_log_prefix(s, "INFO", now, "train-run.c", line);
    if (r->dist && !rt_train_dist_is_main(r->dist)) /* ROBOTRAIN_VERBOSE=1 */
        g_string_append_printf(s, "[rank %d] ", rt_train_dist_world(r->dist)->rank);
    va_list ap;
    va_start(ap, format);
    g_string_append_vprintf(s, format, ap);
    va_end(ap);
    g_string_append_c(s, '\n');
    rt_progress_print(r->bar, s->str);
    g_string_free(s, TRUE);
}

#define LOG(r, ...) log_line((r), __LINE__, __VA_ARGS__)

static char *big_number(double v)
{
    GString *s = g_string_new(NULL);
    rt_format_big_number(s, v);
    return g_string_free(s, FALSE);
}

char *rt_train_lerobot_home(void)
{
    const char *home = g_getenv("HF_LEROBOT_HOME");
    if (home && *home)
        return g_strdup(home);
    const char *hf = g_getenv("HF_HOME");
    if (hf && *hf)
        return g_build_filename(hf, "lerobot", NULL);
    return g_build_filename(g_get_user_cache_dir(), "huggingface", "lerobot", NULL);
}

/* ---------------------------------------------------------------- data */

static gboolean open_dataset(run *r, GError **error)
{
    const char *root = rt_config_get_string(r->cfg, "dataset.root");
    const char *repo_id = rt_config_get_string(r->cfg, "dataset.repo_id");
    /* a local copy, else a download from the Hub (train-hub.h); multi-process runs pass their
     * rank and a barrier here */
    gboolean several = rt_train_dist_active(r->dist);
    g_autofree char *folder =
        rt_train_hub_dataset_folder(r->cfg, rt_train_dist_is_main(r->dist), several ? rt_train_dist_wait_main : NULL,
                                    several ? r->dist : NULL, r->a->out, error);
    if (!folder)
        return FALSE;
    if (!root || strcmp(folder, root) != 0)
        LOG(r, "Dataset %s: %s", repo_id, folder);
    rt_dataset_options o;
    rt_dataset_options_from_config(r->cfg, "dataset", &o, &r->episodes);
    o.tolerance_s = rt_config_get_double(r->cfg, "tolerance_s");
    r->ds = rt_dataset_open(folder, &o, error);
    if (!r->ds)
        return FALSE;
    if (!rt_config_is_null(r->cfg, "dataset.revision") && root && strcmp(folder, root) == 0)
        LOG(r, "dataset.revision is ignored for the local copy at %s", folder);
    return TRUE;
}

static const char *policy_type_name(rt_dataset_feature_role type)
{
    switch (type) {
    case RT_FEATURE_TYPE_VISUAL:
        return "VISUAL";
    case RT_FEATURE_TYPE_STATE:
        return "STATE";
    case RT_FEATURE_TYPE_ACTION:
        return "ACTION";
    case RT_FEATURE_TYPE_ENV:
        return "ENV";
    case RT_FEATURE_TYPE_NONE:
    default:
        return NULL;
    }
}

static gboolean is_empty_features(const rt_config *cfg, const char *key)
{
    if (rt_config_is_null(cfg, key))
        return TRUE;
    const char *text = rt_config_get_string(cfg, key);
    while (*text == ' ')
        text++;
    return strcmp(text, "{}") == 0;
}

/* LeRobot's dataset_to_policy_features: cameras (C, H, W), every other feature as info.json has
 * it; ACTION features are outputs, the others inputs. */
static gboolean features_from_dataset(run *r, GError **error)
{
    if (!is_empty_features(r->cfg, "policy.input_features") ||
        !is_empty_features(r->cfg, "policy.output_features"))
        return TRUE; /* a pretrained policy's, or the user's */
    JsonObject *inputs = json_object_new(), *outputs = json_object_new();
    for (int i = 0; i < rt_dataset_num_features(r->ds); i++) {
        const rt_feature *f = rt_dataset_feature(r->ds, i);
        const char *type = policy_type_name(f->type);
        if (!type)
            continue;
        JsonObject *fo = json_object_new();
        json_object_set_string_member(fo, "type", type);
        JsonArray *shape = json_array_new();
        if (f->kind == RT_FEATURE_VIDEO || f->kind == RT_FEATURE_IMAGE) {
            json_array_add_int_element(shape, f->channels);
            json_array_add_int_element(shape, f->height);
            json_array_add_int_element(shape, f->width);
        } else {
            for (int d = 0; d < f->ndim; d++)
                json_array_add_int_element(shape, f->shape[d]);
        }
        json_object_set_array_member(fo, "shape", shape);
        json_object_set_object_member(f->type == RT_FEATURE_TYPE_ACTION ? outputs : inputs, f->name, fo);
    }
    JsonNode *in = json_node_init_object(json_node_alloc(), inputs),
             *out = json_node_init_object(json_node_alloc(), outputs);
    g_autofree char *in_text = rt_json_to_text(in, -1, FALSE);
    g_autofree char *out_text = rt_json_to_text(out, -1, FALSE);
    json_object_unref(inputs);
    json_object_unref(outputs);
    json_node_unref(in);
    json_node_unref(out);
    return rt_config_set(r->cfg, "policy.input_features", in_text, error) &&
           rt_config_set(r->cfg, "policy.output_features", out_text, error);
}

/* The frames the policy needs: observation deltas for its inputs, action deltas for its outputs. */
static gboolean request_frames(run *r, GError **error)
{
    rt_policy_delta_indices d = {0};
    rt_policy_get_delta_indices(r->policy, &d);
    const char *keys[2] = {"policy.input_features", "policy.output_features"};
    for (int k = 0; k < 2; k++) {
        const int64_t *deltas = k == 0 ? d.observation : d.action;
        size_t n = k == 0 ? d.n_observation : d.n_action;
        if (!deltas || n == 0)
            continue;
        g_autoptr(rt_policy_features) features = rt_policy_config_features(r->cfg, keys[k], error);
        if (!features)
            return FALSE;
        for (size_t i = 0; i < features->n; i++)
            if (!rt_dataset_set_delta_indices(r->ds, features->items[i].name, deltas, n, error))
                return FALSE;
    }
    return TRUE;
}

static gboolean make_normalizer(run *r, GError **error)
{
    rt_norm_map map;
    rt_norm_map_act(&map);
    static const struct {
        const char *key;
        rt_dataset_feature_role type;
    } types[] = {
        {"policy.normalization_mapping.VISUAL", RT_FEATURE_TYPE_VISUAL},
        {"policy.normalization_mapping.STATE", RT_FEATURE_TYPE_STATE},
        {"policy.normalization_mapping.ACTION", RT_FEATURE_TYPE_ACTION},
        {"policy.normalization_mapping.ENV", RT_FEATURE_TYPE_ENV},
    };
    for (guint i = 0; i < G_N_ELEMENTS(types); i++) {
        if (!rt_config_lookup(r->cfg, types[i].key))
            continue;
        const char *name = rt_config_get_string(r->cfg, types[i].key);
        rt_norm_mode mode;
        if (!name || !rt_norm_mode_from_name(name, &mode)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "--%s=%s is not a normalization mode",
                        types[i].key, name ? name : "null");
            return FALSE;
        }
        map.mode[types[i].type] = mode;
    }
    r->norm = rt_normalizer_new(r->ds, &map, error);
    return r->norm != NULL;
}

/* The dataset's stats as the processors save them: every stat of every feature, float32,
 * cameras (C, 1, 1), count (1). */
static void collect_stats(run *r)
{
    r->stats = g_array_new(FALSE, TRUE, sizeof(rt_ckpt_stat));
    r->stat_store = g_ptr_array_new_with_free_func(g_free);
    for (int i = 0; i < rt_dataset_num_stats(r->ds); i++) {
        const rt_feature_stats *fs = rt_dataset_stats_at(r->ds, i);
        const rt_feature *f = rt_dataset_find_feature(r->ds, fs->feature);
        gboolean camera = f && (f->kind == RT_FEATURE_VIDEO || f->kind == RT_FEATURE_IMAGE);
        for (int s = 0; s < RT_STAT_COUNT_; s++) {
            if (!fs->values[s])
                continue;
            rt_ckpt_stat st = {
                .feature = fs->feature, .stat = rt_stat_name((rt_stat)s), .values = fs->values[s]};
            if (camera) {
                st.ndim = 3;
                st.shape[0] = fs->numel;
                st.shape[1] = st.shape[2] = 1;
            } else {
                st.ndim = 1;
                st.shape[0] = fs->numel;
            }
            g_array_append_val(r->stats, st);
        }
        if (fs->count >= 0) {
            double *count = g_new(double, 1);
            *count = (double)fs->count;
            g_ptr_array_add(r->stat_store, count);
            rt_ckpt_stat st = {
                .feature = fs->feature, .stat = "count", .ndim = 1, .shape = {1}, .values = count};
            g_array_append_val(r->stats, st);
        }
    }
}

static gboolean start_loader(run *r, GError **error)
{
    rt_sampler_options so;
    rt_sampler_options_init(&so);
    so.num_items = rt_dataset_num_frames(r->ds);
    so.batch_size = rt_config_get_int(r->cfg, "batch_size");
    so.seed = r->seed;
    so.world_size = rt_train_dist_world(r->dist)->world_size;
    so.rank = rt_train_dist_world(r->dist)->rank;
    r->sampler = rt_sampler_new(&so, error);
    r->fill_sampler = r->sampler ? rt_sampler_new(&so, error) : NULL;
    if (!r->fill_sampler)
        return FALSE;
    int64_t epoch = 0, batch = 0;
    rt_sampler_position(r->sampler, r->start, &epoch, &batch);
    rt_loader_options lo;
    rt_loader_options_init(&lo);
    lo.num_workers = (int)rt_config_get_int(r->cfg, "num_workers");
    lo.start_epoch = epoch;
    lo.start_batch = batch;
    lo.normalizer = r->norm;
    r->reader = rt_dataset_reader_new(r->ds, 0);
    r->loader = rt_loader_new(r->ds, r->sampler, &lo, error);
    return r->loader != NULL;
}

/* A single process's last batch of an epoch is short; the graph's batch is fixed, so the rest
 * is filled from the start of the epoch's order, as accelerate completes the last round of a
 * multi-process run (even_batches). */
static gboolean complete_batch(run *r, rt_batch *b, GError **error)
{
    int64_t n_items = rt_dataset_num_frames(r->ds);
    const rt_batch_layout *layout = b->layout;
    for (int64_t slot = b->size, k = 0; slot < b->capacity; slot++, k++) {
        int64_t item = rt_sampler_item(r->fill_sampler, b->epoch, k % n_items);
        if (!rt_dataset_reader_fill(r->reader, item, b, slot, error))
            return FALSE;
        b->items[slot] = item;
    }
    for (int i = 0; i < rt_batch_layout_num_fields(layout); i++) {
        const rt_batch_field *field = rt_batch_layout_field(layout, i);
        if (field->is_pad || (field->dtype != RT_F32 && field->dtype != RT_F64))
            continue;
        const rt_feature *f = rt_dataset_feature(r->ds, field->feature);
        size_t frames_per_sample = (size_t)(field->numel / MAX(f->numel, 1));
        char *first = (char *)rt_batch_field_data(b, i) + (size_t)b->size * field->sample_bytes;
        size_t frames = (size_t)(b->capacity - b->size) * frames_per_sample;
        if (field->dtype == RT_F32)
            rt_normalizer_apply_f32(r->norm, field->feature, (float *)first, frames, FALSE);
        else
            rt_normalizer_apply_f64(r->norm, field->feature, (double *)first, frames, FALSE);
    }
    return TRUE;
}

/* ---------------------------------------------------------------- device and graph */

static gboolean open_device(run *r, GError **error)
{
    const rt_train_settings *s = r->a->settings;
    const char *type = s->device_type;
    int index = rt_train_dist_cuda_index(r->dist, s->device_index);
    if (!type || strcmp(type, "cuda") == 0) {
        g_autoptr(GError) local = NULL;
        const rt_plugin_module *m =
            r->a->registry ? rt_plugin_registry_find(r->a->registry, RT_PLUGIN_BACKEND, "cuda", &local)
                           : NULL;
        const rt_backend_i *cuda = m ? m->desc->vtable : NULL;
        int count = cuda ? cuda->device_count(type ? error : NULL) : 0;
        if (cuda && count > index) {
            r->backend = cuda;
            r->dev_index = index;
            r->dev = cuda->open(index, error);
            if (!r->dev)
                return FALSE;
            r->device_name = index ? g_strdup_printf("cuda:%d", index) : g_strdup("cuda");
            return rt_config_set(r->cfg, "policy.device", r->device_name, error);
        }
        if (type) {
            if (error && *error)
                return FALSE;
            const char *device = rt_config_get_string(r->cfg, "policy.device");
            if (!cuda)
                g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                            "--policy.device=%s: %s; use --policy.device=cpu", device,
                            local ? local->message : "no CUDA backend module");
            else
                g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                            "--policy.device=%s: %d CUDA device(s) usable; use --policy.device=cpu", device,
                            count);
            return FALSE;
        }
    }
    r->backend = rt_backend_cpu();
    r->dev = r->backend->open(0, error);
    if (!r->dev)
        return FALSE;
    r->device_name = g_strdup("cpu");
    return rt_config_set(r->cfg, "policy.device", "cpu", error);
}

/* The optimizer: the module's preset (which puts the parameters in groups), the flags, and a
 * checkpoint's hyper-parameters when resuming. */
static gboolean choose_optimizer(run *r, GError **error)
{
    rt_policy_optimizer opt = {0};
    if (!rt_policy_optimizer_preset(r->policy, r->g, &opt, error))
        return FALSE;
    rt_train_preset preset;
    rt_train_preset_from_policy(r->cfg, rt_policy_type(r->policy), &opt, &preset);
    GPtrArray *notes = g_ptr_array_new_with_free_func(g_free);
    gboolean ok = rt_train_resolve_optimizer(r->cfg, &preset, &r->optim, notes, error);
    for (guint i = 0; i < notes->len; i++)
        LOG(r, "%s", (char *)g_ptr_array_index(notes, i));
    g_ptr_array_unref(notes);
    if (!ok)
        return FALSE;
    if (r->optim.n_groups == 1)
        for (int i = 0; i < rt_graph_n_params(r->g); i++)
            rt_param_set_group(r->g, rt_graph_param(r->g, i), 0); /* LeRobot: policy.parameters() */
    for (int k = 0; k < r->optim.n_groups; k++)
        r->base_lr[k] = r->optim.groups[k].lr;
    if (r->ck && rt_checkpoint_n_groups(r->ck) == r->optim.n_groups) {
        /* PyTorch's load_state_dict puts the saved hyper-parameters back */
        gboolean scheduled = r->optim.schedule.kind != RT_LR_NONE;
        for (int k = 0; k < r->optim.n_groups; k++) {
            const rt_adamw_group *saved = rt_checkpoint_group(r->ck, k);
            double initial = rt_checkpoint_initial_lr(r->ck, k);
            r->optim.groups[k] = *saved;
            r->base_lr[k] = scheduled && isfinite(initial) ? initial : saved->lr;
        }
        if (r->optim.lr_from_args) {
            r->base_lr[0] = rt_config_get_double(r->cfg, "optimizer.lr");
            LOG(r, "--optimizer.lr=%g given on the command line replaces the checkpoint's lr", r->base_lr[0]);
        }
    }
    if (rt_train_dist_active(r->dist) &&
        rt_graph_add_grad_sync(r->g, rt_train_dist_bucket_bytes(r->dist), error) < 0)
        return FALSE;
    return rt_graph_add_adamw(r->g, r->optim.groups, r->optim.n_groups, r->optim.grad_clip_norm, error);
}

/* Pairs the graph's named inputs with the batch's fields. */
static gboolean bind_inputs(run *r, GError **error)
{
    const rt_batch_layout *layout = rt_loader_layout(r->loader);
    int64_t capacity = rt_batch_layout_capacity(layout);
    for (int i = 0; i < rt_batch_layout_num_fields(layout); i++) {
        const rt_batch_field *field = rt_batch_layout_field(layout, i);
        rt_tensor *t = rt_graph_find(r->g, field->key);
        if (!t || !(t->flags & RT_TENSOR_INPUT))
            continue;
        size_t bytes = (size_t)capacity * field->sample_bytes;
        if (t->dtype != field->dtype || rt_tensor_nbytes(t) != bytes) {
            char desc[96];
            rt_tensor_describe(t, desc, sizeof desc);
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "the policy reads '%s' as %s, but the dataset gives %" G_GINT64_FORMAT
                        " samples of %" G_GINT64_FORMAT
                        " %s values: are --policy.input_features and the dataset's features the same?",
                        field->key, desc, (gint64)capacity, (gint64)field->numel,
                        rt_dtype_name(field->dtype));
            return FALSE;
        }
        if (r->n_inputs == MAX_INPUTS) {
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED, "the policy reads more than %d inputs",
                        MAX_INPUTS);
            return FALSE;
        }
        r->input_field[r->n_inputs] = i;
        r->input[r->n_inputs++] = t;
    }
    /* every named input of the graph must come from the batch */
    for (int i = 0; i < rt_graph_n_tensors(r->g); i++) {
        rt_tensor *t = rt_graph_tensor(r->g, i);
        if (!(t->flags & RT_TENSOR_INPUT) || !t->name)
            continue;
        gboolean bound = FALSE;
        for (int k = 0; k < r->n_inputs && !bound; k++)
            bound = r->input[k] == t;
        for (int k = 0; k < r->losses.n_counts && !bound; k++)
            bound = r->losses.counts[k].weight == t; /* written by rt_train_dist_count_weights */
        if (!bound) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "the policy reads '%s', which the dataset at %s does not have", t->name,
                        rt_dataset_root(r->ds));
            return FALSE;
        }
    }
    return TRUE;
}

/* Mixed precision from ROBOTRAIN_MIXED_PRECISION, --policy.use_amp, the device and a resumed
 * checkpoint (amp.h). */
static gboolean choose_precision(run *r, GError **error)
{
    rt_amp_env env;
    rt_amp_env_from_process(&env);
    rt_ckpt_precision saved;
    gboolean has_saved = r->ck && rt_checkpoint_get_precision(r->ck, &saved);
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    if (!rt_train_amp_resolve(&r->amp, r->cfg, &env, strcmp(r->device_name, "cpu") != 0,
                              rt_train_amp_backend_scales(r->backend, r->dev), has_saved ? &saved : NULL,
                              notes, error))
        return FALSE;
    for (guint i = 0; i < notes->len; i++)
        LOG(r, "%s", (const char *)g_ptr_array_index(notes, i));
    return TRUE;
}

static gboolean build_graph(run *r, GError **error)
{
    r->g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_init_seed(r->g, r->seed);
    rt_train_amp_begin_graph(&r->amp, r->g);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(rt_config_get_int(r->cfg, "batch_size"));
    if (rt_train_dist_active(r->dist))
        args.flags |= RT_POLICY_BUILD_GLOBAL_COUNTS;
    if (!rt_policy_build_train(r->policy, r->g, &args, &r->losses, error) ||
        !rt_train_amp_before_backward(&r->amp, r->g, error) || !rt_graph_backward(r->g, error) ||
        !choose_optimizer(r, error) || !rt_graph_plan(r->g, r->backend, r->dev, error) ||
        !rt_train_amp_after_plan(&r->amp, r->g, error))
        return FALSE;
    r->grad_norm = rt_graph_find(r->g, "grad_norm");
    r->order = rt_param_order_new(r->g, r->optim.n_groups);
    return r->order != NULL;
}

static gboolean load_weights(run *r, GError **error)
{
    if (r->ck) {
        g_autofree char *pm = g_build_filename(rt_checkpoint_dir(r->ck), RT_PRETRAINED_MODEL_DIR, NULL);
        return rt_checkpoint_load_model(pm, r->g, error) &&
               rt_checkpoint_load_optimizer(r->ck, r->g, r->order, error);
    }
    const char *pretrained = rt_config_get_string(r->cfg, "policy.pretrained_path");
    if (pretrained) {
        LOG(r, "Loading the weights of %s", pretrained);
        return rt_checkpoint_load_model(pretrained, r->g, error);
    }
    return rt_policy_init_weights(r->policy, r->g, error);
}

/* ---------------------------------------------------------------- steps */

static gboolean set_learning_rates(run *r, int64_t step, GError **error)
{
    double factor = rt_lr_schedule_factor(&r->optim.schedule, step);
    for (int k = 0; k < r->optim.n_groups; k++)
        if (!rt_graph_set_lr(r->g, k, r->base_lr[k] * factor, error))
            return FALSE;
    return TRUE;
}

static gboolean save_checkpoint(run *r, GError **error)
{
    rt_adamw_group groups[RT_TRAIN_MAX_GROUPS];
    double initial[RT_TRAIN_MAX_GROUPS];
    double factor = rt_lr_schedule_factor(&r->optim.schedule, r->step);
    for (int k = 0; k < r->optim.n_groups; k++) {
        groups[k] = r->optim.groups[k];
        groups[k].lr = r->base_lr[k] * factor;
        initial[k] = r->base_lr[k];
    }
    int64_t epoch = 0, batch = 0;
    rt_sampler_position(r->fill_sampler, r->step, &epoch, &batch);
    const rt_sampler_options *so = rt_sampler_get_options(r->fill_sampler);
    rt_ckpt_sampler sampler = {
        .epoch = epoch,
        .batch = batch,
        .batches_per_epoch = rt_sampler_batches_per_epoch(r->fill_sampler),
        .num_items = so->num_items,
        .batch_size = so->batch_size,
        .world_size = so->world_size,
        .shuffle = so->shuffle,
        .drop_last = so->drop_last,
    };
    rt_checkpoint_save_info info = {
        .output_dir = rt_config_get_string(r->cfg, "output_dir"),
        .step = r->step,
        .total_steps = r->total,
        .graph = r->g,
        .order = r->order,
        .groups = groups,
        .initial_lr = initial,
        .schedule = &r->optim.schedule,
        .cfg = r->cfg,
        .stats = (const rt_ckpt_stat *)(void *)r->stats->data,
        .n_stats = r->stats->len,
        .num_processes = rt_train_dist_world(r->dist)->world_size,
        .batch_size = rt_config_get_int(r->cfg, "batch_size"),
        .has_seed = TRUE,
        .seed = r->seed,
        .sampler = &sampler,
    };
    rt_ckpt_precision precision;
    info.precision = rt_train_amp_checkpoint(&r->amp, &precision);
    /* loss scaling: skipped steps did not advance AdamW's own count */
    info.has_optimizer_step = r->amp.scaling;
    if (info.has_optimizer_step && !rt_graph_get_step(r->g, &info.optimizer_step, error))
        return FALSE;
    LOG(r, "Checkpoint policy after step %" G_GINT64_FORMAT, (gint64)r->step);
    g_free(r->last_checkpoint);
    r->last_checkpoint = NULL;
    /* only rank 0 writes; the others wait for it, as LeRobot's ranks do */
    if (rt_train_dist_is_main(r->dist) && !rt_checkpoint_save(&info, &r->last_checkpoint, error))
        return FALSE;
    if (!rt_train_dist_barrier(r->dist, error))
        return FALSE;
    r->saved_step = r->step;
    g_autofree char *note = rt_train_wandb_checkpoint(r->wandb, r->last_checkpoint);
    if (note)
        LOG(r, "%s", note);
    return TRUE;
}

static gboolean one_step(run *r, GError **error)
{
    gint64 t0 = g_get_monotonic_time();
    rt_batch *b = rt_loader_next(r->loader, error);
    if (!b)
        return FALSE;
    int64_t b_capacity = b->capacity;
    gboolean ok = (b->size == b->capacity || complete_batch(r, b, error)) &&
                  rt_train_dist_count_weights(r->dist, r->g, &r->losses, b, error);
    for (int i = 0; ok && i < r->n_inputs; i++) {
        const rt_batch_field *field = rt_batch_layout_field(b->layout, r->input_field[i]);
        ok = rt_graph_write(r->g, r->input[i], rt_batch_field_data(b, r->input_field[i]),
                            (size_t)b->capacity * field->sample_bytes, error);
    }
    rt_loader_release(r->loader, b);
    if (!ok)
        return FALSE;
    gint64 t1 = g_get_monotonic_time();
    double loss = 0, grad_norm = 0;
    if ((r->optim.schedule.kind != RT_LR_NONE || r->step == r->start) &&
        !set_learning_rates(r, r->step, error))
        return FALSE;
    /* random numbers keyed by the global sample index: rank k's first sample is k * batch */
    int64_t sample_offset = (int64_t)rt_train_dist_world(r->dist)->rank * b_capacity;
    if (!rt_graph_set_rng(r->g, r->seed, (uint64_t)r->step, sample_offset, error) ||
        !rt_graph_compute(r->g, error) ||
        !rt_graph_read_scalar(r->g, r->losses.loss, &loss, error) ||
        (r->grad_norm && !rt_graph_read_scalar(r->g, r->grad_norm, &grad_norm, error)) ||
        !rt_train_amp_after_step(&r->amp, r->g, error))
        return FALSE;
    double sub[RT_POLICY_MAX_LOSSES];
    for (int i = 0; i < r->losses.n; i++)
        if (!rt_graph_read_scalar(r->g, r->losses.values[i], &sub[i], error))
            return FALSE;
    gint64 t2 = g_get_monotonic_time();
    r->step++;
    rt_metrics_step(r->metrics);
    rt_metrics_update(r->metrics, "loss", loss);
    rt_metrics_update(r->metrics, "grad_norm", grad_norm);
    rt_metrics_update(r->metrics, "lr", r->base_lr[0] * rt_lr_schedule_factor(&r->optim.schedule, r->step));
    rt_metrics_update(r->metrics, "update_s", (double)(t2 - t1) / 1e6);
    rt_metrics_update(r->metrics, "dataloading_s", (double)(t1 - t0) / 1e6);
    for (int i = 0; i < r->losses.n; i++)
        rt_metrics_update(r->metrics, r->losses.names[i], sub[i]);
    return TRUE;
}

static gboolean log_step(run *r, GError **error)
{
    if (!rt_train_dist_reduce_metrics(r->dist, r->metrics, &r->losses, error))
        return FALSE;
    rt_train_amp_log(&r->amp, r->metrics);
    rt_metrics_finish_window(r->metrics);
    g_autofree char *line = rt_metrics_format_line(r->metrics);
    LOG(r, "%s", line);
    gboolean ok = !r->mlog || rt_metrics_log_write(r->mlog, r->metrics, (double)g_get_real_time() / 1e6, error);
    g_autofree char *warning = NULL;
    rt_train_wandb_log(r->wandb, r->metrics, r->step, &warning);
    if (warning)
        LOG(r, "%s", warning);
    rt_metrics_reset(r->metrics);
    return ok;
}

static gboolean loop(run *r, rt_train_result *result, GError **error)
{
    int64_t log_freq = rt_config_get_int(r->cfg, "log_freq");
    int64_t save_freq = rt_config_get_int(r->cfg, "save_freq");
    gboolean save = rt_config_get_bool(r->cfg, "save_checkpoint");
    while (r->step < r->total) {
        int sig = 0;
        if (!rt_train_dist_agree_on_stop(r->dist, &sig, error))
            return FALSE;
        if (sig) {
            result->stop_signal = sig;
            break;
        }
        if (!one_step(r, error))
            return FALSE;
        if (rt_train_dist_is_main(r->dist))
            rt_progress_update(r->bar, r->step);
        if (log_freq > 0 && r->step % log_freq == 0 && !log_step(r, error))
            return FALSE;
        if (save && ((save_freq > 0 && r->step % save_freq == 0) || r->step == r->total) &&
            !save_checkpoint(r, error))
            return FALSE;
    }
    if (!result->stop_signal && !rt_train_dist_active(r->dist) && rt_train_stop_requested() &&
        r->step < r->total)
        result->stop_signal = rt_train_stop_requested();
    if (result->stop_signal) {
        LOG(r, "Stopped by %s at step %" G_GINT64_FORMAT,
            result->stop_signal == SIGINT ? "SIGINT" : "SIGTERM", (gint64)r->step);
        if (save && r->saved_step != r->step && r->step > r->start && !save_checkpoint(r, error))
            return FALSE;
    } else {
        LOG(r, "End of training");
    }
    g_autofree char *summary = rt_train_dist_summary(r->dist, r->step - r->start);
    if (summary)
        LOG(r, "%s", summary);
    return rt_train_dist_barrier(r->dist, error); /* rank 0 (the store's host) ends last */
}

/* ---------------------------------------------------------------- the run */

static void run_free(run *r)
{
    rt_loader_free(r->loader);
    rt_dataset_reader_free(r->reader);
    rt_sampler_free(r->sampler);
    rt_sampler_free(r->fill_sampler);
    rt_normalizer_free(r->norm);
    rt_param_order_free(r->order);
    rt_graph_free(r->g);
    if (r->dev)
        r->backend->close(r->dev);
    rt_policy_free(r->policy);
    rt_dataset_free(r->ds);
    g_free(r->episodes);
    g_free(r->device_name);
    rt_checkpoint_free(r->ck);
    rt_train_amp_clear(&r->amp);
    if (r->stats)
        g_array_unref(r->stats);
    if (r->stat_store)
        g_ptr_array_unref(r->stat_store);
    rt_metrics_free(r->metrics);
    rt_metrics_log_close(r->mlog);
    rt_progress_free(r->bar);
    g_free(r->last_checkpoint);
    rt_train_dist_free(r->dist);
    rt_train_wandb_free(r->wandb);
}

static gboolean prepare(run *r, GError **error)
{
    const rt_train_settings *s = r->a->settings;
    if ((!r->dist && !(r->dist = rt_train_dist_new(error))) || !rt_train_dist_join(r->dist, error))
        return FALSE;
    if (s->checkpoint_dir) {
        r->ck = rt_checkpoint_open(s->checkpoint_dir, error);
        if (!r->ck)
            return FALSE;
        r->start = rt_checkpoint_step(r->ck);
        LOG(r, "Resuming from %s at step %" G_GINT64_FORMAT, s->checkpoint_dir, (gint64)r->start);
        uint64_t saved_seed = 0;
        if (rt_checkpoint_get_seed(r->ck, &saved_seed) && !rt_config_is_null(r->cfg, "seed") &&
            saved_seed != (uint64_t)rt_config_get_int(r->cfg, "seed"))
            LOG(r,
                "--seed %" G_GINT64_FORMAT " differs from the checkpoint's %" G_GUINT64_FORMAT
                ": data order and random numbers do not continue the run's",
                rt_config_get_int(r->cfg, "seed"), saved_seed);
        g_autofree char *note = rt_train_dist_resume_note(r->dist, rt_checkpoint_batch_size(r->ck),
                                                          rt_checkpoint_num_processes(r->ck),
                                                          rt_config_get_int(r->cfg, "batch_size"));
        if (note)
            LOG(r, "%s", note);
    }
    r->step = r->start;
    if (rt_config_is_null(r->cfg, "seed")) {
        r->seed = g_random_int() & 0x7fffffff;
        /* one seed for the whole run: rank 0's */
        if (!rt_train_dist_share_u64(r->dist, "seed", &r->seed, error))
            return FALSE;
        g_autofree char *text = g_strdup_printf("%" G_GUINT64_FORMAT, r->seed);
        if (!rt_config_set(r->cfg, "seed", text, error))
            return FALSE;
        LOG(r, "seed: %s (--seed was null: a random one, recorded in train_config.json)", text);
    } else {
        r->seed = (uint64_t)rt_config_get_int(r->cfg, "seed");
    }
    if (!open_dataset(r, error) || !features_from_dataset(r, error))
        return FALSE;
    r->policy = rt_policy_new(r->a->policy, r->cfg, error);
    if (!r->policy || !request_frames(r, error) || !make_normalizer(r, error) || !start_loader(r, error) ||
        !open_device(r, error) || !choose_precision(r, error) ||
        !rt_train_dist_connect(r->dist, r->a->registry, r->backend == rt_backend_cpu() ? -1 : r->dev_index,
                               error) ||
        !build_graph(r, error) || !bind_inputs(r, error) || !load_weights(r, error) ||
        !rt_train_dist_attach(r->dist, r->g, error))
        return FALSE;
    collect_stats(r);
    const char *output_dir = rt_config_get_string(r->cfg, "output_dir");
    if (rt_train_dist_is_main(r->dist) && !(r->mlog = rt_metrics_log_open(output_dir, error)))
        return FALSE;
    g_autoptr(GPtrArray) wandb_notes = g_ptr_array_new_with_free_func(g_free);
    r->wandb = rt_train_wandb_start(r->cfg, rt_train_dist_is_main(r->dist), wandb_notes, error);
    if (!r->wandb)
        return FALSE;
    for (guint i = 0; i < wandb_notes->len; i++)
        LOG(r, "%s", (char *)wandb_notes->pdata[i]);
    r->metrics = rt_metrics_new(rt_config_get_int(r->cfg, "batch_size"), rt_train_dist_world(r->dist)->world_size,
                                rt_dataset_num_frames(r->ds),
                                rt_dataset_num_selected_episodes(r->ds), r->start, FALSE);
    return TRUE;
}

static void log_start(run *r)
{
    int64_t n_params = 0;
    for (int i = 0; i < rt_graph_n_params(r->g); i++)
        n_params += rt_tensor_numel(rt_graph_param(r->g, i));
    int64_t batch = rt_config_get_int(r->cfg, "batch_size");
    g_autofree char *steps = big_number((double)r->total);
    g_autofree char *frames = big_number((double)rt_dataset_num_frames(r->ds));
    g_autofree char *params = big_number((double)n_params);
    LOG(r, "Output dir: %s", rt_config_get_string(r->cfg, "output_dir"));
    LOG(r, "Device: %s", r->device_name);
    LOG(r, "cfg.steps=%" G_GINT64_FORMAT " (%s)", (gint64)r->total, steps);
    LOG(r, "dataset.num_frames=%" G_GINT64_FORMAT " (%s)", (gint64)rt_dataset_num_frames(r->ds), frames);
    LOG(r, "dataset.num_episodes=%" G_GINT64_FORMAT, (gint64)rt_dataset_num_selected_episodes(r->ds));
    int world = rt_train_dist_world(r->dist)->world_size;
    if (world > 1) {
        const rt_world *w = rt_train_dist_world(r->dist);
        LOG(r,
            "Data parallel: %d processes on %d machine(s), gradients averaged in %d bucket(s) of about %.0f "
            "MiB",
            world, w->n_nodes, rt_graph_n_grad_buckets(r->g),
            rt_train_dist_bucket_bytes(r->dist) / 1048576.0);
    }
    LOG(r, "Effective batch size: %" G_GINT64_FORMAT " x %d = %" G_GINT64_FORMAT, (gint64)batch, world,
        (gint64)batch * world);
    /* frozen layers are buffers here, as in PyTorch, so every parameter learns */
    LOG(r, "num_learnable_params=%" G_GINT64_FORMAT " (%s)", (gint64)n_params, params);
    LOG(r, "num_total_params=%" G_GINT64_FORMAT " (%s)", (gint64)n_params, params);
    LOG(r, "Start offline training on a fixed dataset, with effective batch size: %" G_GINT64_FORMAT,
        (gint64)batch * world);
}

gboolean rt_train_run(const rt_train_run_args *args, rt_train_result *result, GError **error)
{
    g_return_val_if_fail(args && args->cfg && args->settings && args->policy && result, FALSE);
    memset(result, 0, sizeof *result);
    run r = {0};
    r.saved_step = -1;
    r.a = args;
    r.cfg = args->cfg;
    r.total = rt_config_get_int(r.cfg, "steps");
    r.bar = rt_progress_new(args->out ? args->out : stdout, 0, r.total);
    r.dist = rt_train_dist_new(error);
    if (!r.dist) {
        run_free(&r);
        return FALSE;
    }
    for (guint i = 0; args->notes && i < args->notes->len; i++)
        LOG(&r, "%s", (char *)g_ptr_array_index(args->notes, i));
    gboolean ok = prepare(&r, error);
    if (ok) {
        rt_progress_free(r.bar); /* nothing drawn yet: start it at the first step of this run */
        r.bar = rt_progress_new(args->out ? args->out : stdout, r.start, r.total);
        log_start(&r);
        ok = loop(&r, result, error);
    }
    /* W&B's exit code: 0, 1 for a failed run, 128 + N for one stopped by signal N */
    int wandb_exit = !ok ? 1 : result->stop_signal ? 128 + result->stop_signal : 0;
    g_autofree char *wandb_end = rt_train_wandb_finish(r.wandb, wandb_exit, 30000);
    if (wandb_end)
        LOG(&r, "%s", wandb_end);
    result->step = r.step;
    result->last_checkpoint = g_steal_pointer(&r.last_checkpoint);
    run_free(&r);
    return ok;
}
