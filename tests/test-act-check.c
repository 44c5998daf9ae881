/* The machinery of `robotrain policy check` (src/core/policy-check.c) on case files written here
 * in the act-golden-v1 format: a small ACT configuration's own run, with its backbone kernels as
 * int8 codes in a backbone file. The unchanged case matches; a perturbed gradient, an unknown
 * reference tensor, a missing or foreign weight, a missing backbone file are each reported, by
 * name. (The golden cases, computed by LeRobot itself, are checked by tests/policy-check.sh.) */
#include "config.h"

#include <glib/gstdio.h>

#include "core/policy-check.h"
#include "graph-test.h"

#define B 2
static const char config_json[] =
    "{\"type\": \"act\", \"chunk_size\": 4, \"n_action_steps\": 4, \"dim_model\": 16, \"n_heads\": 2, "
    "\"dim_feedforward\": 24, \"n_encoder_layers\": 1, \"n_decoder_layers\": 1, \"n_vae_encoder_layers\": 1, "
    "\"latent_dim\": 4, \"dropout\": 0.0, \"pretrained_backbone_weights\": null, \"input_features\": "
    "{\"observation.state\": {\"type\": \"STATE\", \"shape\": [3]}, \"observation.images.cam\": "
    "{\"type\": \"VISUAL\", \"shape\": [3, 32, 32]}}, \"output_features\": {\"action\": {\"type\": "
    "\"ACTION\", \"shape\": [2]}}}";

static rt_plugin_registry *registry(void)
{
    static rt_plugin_registry *r;
    if (!r) {
        GError *error = NULL;
        char **folders = rt_plugin_search_path(NULL, NULL, &error);
        r = folders ? rt_plugin_registry_new((const char *const *)folders, &error) : NULL;
        g_strfreev(folders);
        if (!r) {
            printf("# %s\n", error->message);
            exit(99);
        }
    }
    return r;
}

/* A tensor of the reference run, kept on the host. */
typedef struct ref {
    char *name;
    rt_st_dtype dtype;
    int rank;
    int64_t shape[RT_MAX_DIMS];
    void *data;
} ref;

static void ref_free(gpointer p)
{
    ref *r = p;
    g_free(r->name);
    g_free(r->data);
    g_free(r);
}

static ref *add_ref(GPtrArray *refs, const char *name, rt_st_dtype dtype, int rank, const int64_t *shape,
                    const void *data, size_t bytes)
{
    ref *r = g_new0(ref, 1);
    r->name = g_strdup(name);
    r->dtype = dtype;
    r->rank = rank;
    memcpy(r->shape, shape, sizeof(int64_t) * (size_t)rank);
    r->data = g_memdup2(data, bytes);
    g_ptr_array_add(refs, r);
    return r;
}

/* a planned f32 (or bool) tensor of g, as a reference under name */
static void add_graph_ref(GPtrArray *refs, rt_graph *g, const rt_tensor *t, const char *name)
{
    size_t bytes = rt_tensor_nbytes(t);
    void *v = g_malloc(bytes);
    GError *error = NULL;
    if (!rt_graph_read(g, t, v, bytes, &error)) {
        printf("# %s: %s\n", name, error->message);
        exit(99);
    }
    int64_t one = 1;
    add_ref(refs, name, t->dtype == RT_BOOL ? RT_ST_BOOL : RT_ST_F32, t->ndim ? t->ndim : 1,
            t->ndim ? t->shape : &one, v, bytes);
    g_free(v);
}

typedef struct run {
    GPtrArray *refs;     /* the case's tensors */
    GPtrArray *backbone; /* the backbone file's */
    GPtrArray *kernels;  /* the backbone kernels as plain F32 tensors */
} run;

/* The reference run: the policy's own numbers, backbone kernels set to int8 codes x 2^-9. */
static int reference_run(run *out)
{
    GError *error = NULL;
    const rt_plugin_module *m = rt_policy_find_module(registry(), "act", &error);
    g_autoptr(rt_config) cfg = rt_config_new("test");
    OK(m && rt_policy_add_options(cfg, m->desc, &error) &&
       rt_policy_config_load_json(cfg, config_json, strlen(config_json), "config", &error));
    g_autoptr(rt_policy) p = rt_policy_new(m->desc, cfg, &error);
    EXPECT_NO_ERROR(error);
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(B);
    args.flags = RT_POLICY_BUILD_INTERMEDIATES | RT_POLICY_BUILD_NOISE_INPUTS;
    rt_policy_losses losses;
    OK(rt_policy_build_train(p, g, &args, &losses, &error) && rt_graph_backward(g, &error));
    OK(rt_test_plan(g));
    out->refs = g_ptr_array_new_with_free_func(ref_free);
    out->backbone = g_ptr_array_new_with_free_func(ref_free);
    out->kernels = g_ptr_array_new_with_free_func(ref_free);
    rt_test_rng r = {2024};
    for (int i = 0; i < rt_graph_n_params(g); i++) {
        rt_tensor *t = rt_graph_param(g, i);
        if (!g_str_has_prefix(t->name, "model.backbone.") || t->ndim != 4)
            continue;
        int64_t n = rt_tensor_numel(t);
        int8_t *codes = g_new(int8_t, n);
        float *v = g_new(float, n);
        for (int64_t k = 0; k < n; k++) {
            codes[k] = (int8_t)floor(rt_test_uniform(&r, -127, 128));
            v[k] = codes[k] * (1.0f / 512);
        }
        OK(rt_graph_write(g, t, v, (size_t)n * 4, &error));
        g_autofree char *q8 = g_strconcat("q8.", t->name, NULL);
        g_autofree char *scale = g_strconcat("q8scale.", t->name, NULL);
        float s = 1.0f / 512;
        add_ref(out->backbone, q8, RT_ST_I8, 4, t->shape, codes, (size_t)n);
        add_ref(out->backbone, scale, RT_ST_F32, 1, (int64_t[]){1}, &s, 4);
        add_ref(out->kernels, t->name, RT_ST_F32, 4, t->shape, v, (size_t)n * 4);
        g_free(codes);
        g_free(v);
    }
    /* the batch and the noise */
    for (int i = 0; i < rt_graph_n_tensors(g); i++) {
        rt_tensor *t = rt_graph_tensor(g, i);
        if (!(t->flags & RT_TENSOR_INPUT) || !t->name)
            continue;
        int64_t n = rt_tensor_numel(t);
        if (t->dtype == RT_BOOL) {
            uint8_t pad[B * 4] = {0, 0, 0, 1, 0, 0, 0, 0}; /* the first sample's last step is padding */
            OK(n == B * 4 && rt_graph_write(g, t, pad, sizeof pad, &error));
        } else {
            double *x = g_new(double, n);
            rt_test_fill(&r, x, n, -1, 1);
            OK(rt_test_write(g, t, x));
            g_free(x);
        }
        add_graph_ref(out->refs, g, t, t->name);
    }
    OK(rt_test_run(g));
    for (int list = 0; list < 2; list++) {
        int n = list ? rt_graph_n_buffers(g) : rt_graph_n_params(g);
        for (int i = 0; i < n; i++) {
            rt_tensor *t = list ? rt_graph_buffer(g, i) : rt_graph_param(g, i);
            gboolean kernel = g_str_has_prefix(t->name, "model.backbone.") && t->ndim == 4;
            if (!kernel)
                add_graph_ref(g_str_has_prefix(t->name, "model.backbone.") ? out->backbone : out->refs, g, t,
                              t->name);
            if (!kernel && g_str_has_prefix(t->name, "model.backbone."))
                add_graph_ref(out->refs, g, t, t->name); /* FrozenBN buffers in both files */
            if (list || !rt_graph_grad(g, t))
                continue;
            rt_tensor *gr = rt_graph_grad(g, t);
            g_autofree char *gname = g_strconcat("grad.", t->name, NULL);
            if (rt_tensor_numel(gr) <= 40000) {
                add_graph_ref(out->refs, g, gr, gname);
                continue;
            }
            /* large kernels: 16 samples and the statistics */
            int64_t n_el = rt_tensor_numel(gr);
            float *v = g_new(float, n_el);
            OK(rt_graph_read(g, gr, v, (size_t)n_el * 4, &error));
            int64_t idx[16];
            float sample[16];
            for (int k = 0; k < 16; k++) {
                idx[k] = k * (n_el / 16);
                sample[k] = v[idx[k]];
            }
            double stat[3] = {0, 0, 0};
            for (int64_t k = 0; k < n_el; k++) {
                stat[0] += v[k];
                stat[1] += fabs(v[k]);
                stat[2] += (double)v[k] * v[k];
            }
            stat[2] = sqrt(stat[2]);
            g_autofree char *sname = g_strconcat("gradsample.", t->name, NULL);
            g_autofree char *iname = g_strconcat("gradsample_idx.", t->name, NULL);
            g_autofree char *tname = g_strconcat("gradstat.", t->name, NULL);
            add_ref(out->refs, sname, RT_ST_F32, 1, (int64_t[]){16}, sample, sizeof sample);
            add_ref(out->refs, iname, RT_ST_I64, 1, (int64_t[]){16}, idx, sizeof idx);
            add_ref(out->refs, tname, RT_ST_F64, 1, (int64_t[]){3}, stat, sizeof stat);
            g_free(v);
        }
    }
    add_graph_ref(out->refs, g, rt_graph_loss(g), "loss.total");
    add_graph_ref(out->refs, g, losses.values[0], "loss.l1");
    add_graph_ref(out->refs, g, losses.values[1], "loss.kld");
    for (int i = 0; i < rt_graph_n_tensors(g); i++) {
        rt_tensor *t = rt_graph_tensor(g, i);
        if ((t->flags & RT_TENSOR_OUTPUT) && t->name && (g_str_has_prefix(t->name, "inter.") ||
                                                         g_str_has_prefix(t->name, "out.")))
            add_graph_ref(out->refs, g, t, t->name);
    }
    /* inference on the same weights */
    rt_graph *eg = rt_graph_new_sharing(g, 0);
    rt_tensor *chunk;
    args.flags = RT_POLICY_BUILD_INTERMEDIATES;
    OK(rt_policy_build_infer(p, eg, &args, &chunk, &error));
    OK(rt_test_plan(eg));
    for (guint i = 0; i < out->refs->len; i++) {
        ref *x = g_ptr_array_index(out->refs, i);
        rt_tensor *t = rt_graph_find(eg, x->name);
        if (t && (t->flags & RT_TENSOR_INPUT))
            OK(rt_graph_write(eg, t, x->data, rt_tensor_nbytes(t), &error));
    }
    OK(rt_test_run(eg));
    for (int i = 0; i < rt_graph_n_tensors(eg); i++) {
        rt_tensor *t = rt_graph_tensor(eg, i);
        if ((t->flags & RT_TENSOR_OUTPUT) && t->name && g_str_has_prefix(t->name, "inter.")) {
            g_autofree char *name = g_strconcat("infer.", t->name, NULL);
            add_graph_ref(out->refs, eg, t, name);
        }
    }
    add_graph_ref(out->refs, eg, chunk, "infer.actions");
    float c[B * 4 * 2], first[B * 2];
    OK(rt_graph_read(eg, chunk, c, sizeof c, &error));
    for (int b = 0; b < B; b++)
        for (int k = 0; k < 2; k++)
            first[b * 2 + k] = c[b * 4 * 2 + k];
    add_ref(out->refs, "infer.select_action", RT_ST_F32, 2, (int64_t[]){B, 2}, first, sizeof first);
    rt_graph_free(eg);
    rt_graph_free(g);
    return 0;
}

/* How a case is altered. */
typedef struct variant {
    const char *drop;    /* leave this tensor out */
    const char *perturb; /* add 1e-3 x its max |value| to its first value */
    const char *extra;   /* add a tensor of this name (one float) */
    gboolean no_backbone_file;
    gboolean kernels_in_case; /* plain kernels in the case, and no backbone file */
} variant;

static GPtrArray *the_run_kernels(void);

static gboolean write_file(GPtrArray *refs, const char *path, const variant *v, gboolean is_case,
                           const char *backbone)
{
    rt_safetensors_writer *w = rt_safetensors_writer_new();
    GError *error = NULL;
    gboolean ok = TRUE;
    GPtrArray *copies = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < refs->len && ok; i++) {
        ref *r = g_ptr_array_index(refs, i);
        if (v && v->drop && strcmp(r->name, v->drop) == 0)
            continue;
        const void *data = r->data;
        if (v && v->perturb && strcmp(r->name, v->perturb) == 0) {
            /* far beyond every limit: 1% of max(1, max |value|) */
            int64_t n = 1;
            for (int d = 0; d < r->rank; d++)
                n *= r->shape[d];
            size_t size = r->dtype == RT_ST_F64 ? 8 : 4;
            void *copy = g_memdup2(r->data, (size_t)n * size);
            double max = 1;
            for (int64_t k = 0; k < n; k++)
                max = fmax(max, size == 8 ? fabs(((double *)copy)[k]) : fabsf(((float *)copy)[k]));
            if (size == 8)
                ((double *)copy)[0] += 1e-2 * max;
            else
                ((float *)copy)[0] += (float)(1e-2 * max);
            g_ptr_array_add(copies, copy);
            data = copy;
        }
        ok = rt_safetensors_writer_add(w, r->name, r->dtype, r->rank, r->shape, data, &error);
    }
    for (guint i = 0; ok && v && v->kernels_in_case && i < the_run_kernels()->len; i++) {
        ref *r = g_ptr_array_index(the_run_kernels(), i);
        ok = rt_safetensors_writer_add(w, r->name, r->dtype, r->rank, r->shape, r->data, &error);
    }
    static const float one = 1;
    if (ok && v && v->extra)
        ok = rt_safetensors_writer_add(w, v->extra, RT_ST_F32, 1, (int64_t[]){1}, &one, &error);
    g_autofree char *quoted = backbone ? g_strdup_printf("\"%s\"", backbone) : g_strdup("null");
    g_autofree char *harness = g_strdup_printf("{\"batch_size\": %d, \"backbone_file\": %s}", B, quoted);
    if (ok && is_case)
        ok = rt_safetensors_writer_set_metadata(w, "format", "act-golden-v1", &error) &&
             rt_safetensors_writer_set_metadata(w, "config", config_json, &error) &&
             rt_safetensors_writer_set_metadata(w, "harness", harness, &error);
    else if (ok)
        ok = rt_safetensors_writer_set_metadata(w, "format", "act-golden-v1-backbone", &error);
    ok = ok && rt_safetensors_writer_write(w, path, &error);
    if (!ok)
        printf("# %s\n", error->message);
    g_clear_error(&error);
    g_ptr_array_unref(copies);
    rt_safetensors_writer_free(w);
    return ok;
}

static run the_run;
static char *dir;

static GPtrArray *the_run_kernels(void)
{
    return the_run.kernels;
}

/* Writes the case (altered by v) beside the backbone file and checks it. */
static gboolean check_variant(const variant *v, rt_policy_check_result *res, GError **error)
{
    g_autofree char *path = g_build_filename(dir, "case.safetensors", NULL);
    const char *bb = v->kernels_in_case ? NULL : v->no_backbone_file ? "gone.safetensors" : "bb.safetensors";
    if (!write_file(the_run.refs, path, v, TRUE, bb))
        return FALSE;
    rt_policy_check_options opt = {1.0, RT_F32, NULL};
    gboolean ran = rt_policy_check_case(registry(), path, &opt, res, error);
    g_unlink(path);
    return ran;
}

DEF_TEST(own_run_matches)
{
    OK(reference_run(&the_run) == 0);
    g_autofree char *bb = g_build_filename(dir, "bb.safetensors", NULL);
    OK(write_file(the_run.backbone, bb, NULL, FALSE, NULL));
    GError *error = NULL;
    rt_policy_check_result res;
    variant v = {0};
    OK(check_variant(&v, &res, &error));
    EXPECT_NO_ERROR(error);
    printf("# %d compared, worst %s at %g of its limit\n", res.n_compared, res.worst_name, res.worst);
    EXPECT_EQ_INT(0, res.n_failed);
    EXPECT_EQ_INT(0, res.n_missing);
    OK(res.n_compared > 100);
    OK(res.worst < 0.01); /* the same computation twice */
    /* every kind of reference tensor was compared: inputs and weights are not */
    int n_refs = 0;
    for (guint i = 0; i < the_run.refs->len; i++) {
        const char *name = ((ref *)g_ptr_array_index(the_run.refs, i))->name;
        n_refs += g_str_has_prefix(name, "loss.") || g_str_has_prefix(name, "out.") ||
                  g_str_has_prefix(name, "inter.") || g_str_has_prefix(name, "grad.") ||
                  g_str_has_prefix(name, "gradsample.") || g_str_has_prefix(name, "gradstat.") ||
                  g_str_has_prefix(name, "infer.");
    }
    EXPECT_EQ_INT(n_refs, res.n_compared);
    /* the kernels may come with the case itself (harness.backbone_file null) */
    variant in_case = {.kernels_in_case = TRUE};
    OK(check_variant(&in_case, &res, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(0, res.n_failed);
    EXPECT_EQ_INT(0, res.n_missing);
    EXPECT_EQ_INT(n_refs, res.n_compared);
    return 0;
}

DEF_TEST(mismatches_are_found)
{
    GError *error = NULL;
    rt_policy_check_result res;
    static const char *const perturbed[] = {
        "grad.model.encoder.layers.0.linear1.weight", "gradsample.model.backbone.layer4.1.conv2.weight",
        "inter.encoder.out", "loss.kld", "infer.actions", "infer.select_action",
        "gradstat.model.backbone.layer3.1.conv1.weight",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(perturbed); i++) {
        variant v = {.perturb = perturbed[i]};
        OK(check_variant(&v, &res, &error));
        EXPECT_NO_ERROR(error);
        EXPECT_EQ_INT(1, res.n_failed);
        EXPECT_EQ_STR(perturbed[i], res.worst_name);
    }
    variant unknown = {.extra = "inter.something_else"};
    OK(check_variant(&unknown, &res, &error));
    EXPECT_EQ_INT(0, res.n_failed);
    EXPECT_EQ_INT(1, res.n_missing);
    variant unknown_kind = {.extra = "velocity.x"};
    OK(check_variant(&unknown_kind, &res, &error));
    EXPECT_EQ_INT(1, res.n_missing);
    return 0;
}

DEF_TEST(broken_cases_are_errors)
{
    GError *error = NULL;
    rt_policy_check_result res;
    variant no_weight = {.drop = "model.encoder.layers.0.norm2.bias"};
    OK(!check_variant(&no_weight, &res, &error));
    EXPECT_ERROR(error, "no tensor 'model.encoder.layers.0.norm2.bias' (nor q8 codes for it in");
    variant foreign = {.extra = "model.encoder.layers.7.norm2.bias"};
    OK(!check_variant(&foreign, &res, &error));
    EXPECT_ERROR(error, "the case holds 'model.encoder.layers.7.norm2.bias', which the policy its config "
                        "describes does not have");
    variant no_input = {.drop = "observation.state"};
    OK(!check_variant(&no_input, &res, &error));
    EXPECT_ERROR(error, "no tensor for the input 'observation.state' (f32[2,3]) the policy reads");
    variant no_noise = {.drop = "vae.eps"};
    OK(!check_variant(&no_noise, &res, &error));
    EXPECT_ERROR(error, "input 'vae.eps'");
    variant no_backbone = {.no_backbone_file = TRUE};
    OK(!check_variant(&no_backbone, &res, &error));
    EXPECT_ERROR(error, "gone.safetensors");
    variant no_idx = {.drop = "gradsample_idx.model.backbone.layer4.1.conv2.weight"};
    OK(!check_variant(&no_idx, &res, &error));
    EXPECT_ERROR(error, "'gradsample.model.backbone.layer4.1.conv2.weight' has no matching 'gradsample_idx.");
    return 0;
}

int main(void)
{
    rt_cpu_set_num_threads(1);
    dir = g_dir_make_tmp("test-act-check-XXXXXX", NULL);
    RUN_TEST(own_run_matches);
    RUN_TEST(mismatches_are_found);
    RUN_TEST(broken_cases_are_errors);
    g_autofree char *bb = g_build_filename(dir, "bb.safetensors", NULL);
    g_unlink(bb);
    g_rmdir(dir);
    g_free(dir);
    if (the_run.refs) {
        g_ptr_array_unref(the_run.refs);
        g_ptr_array_unref(the_run.backbone);
        g_ptr_array_unref(the_run.kernels);
    }
    END_TEST;
}
