/* robotrain policy bench: times full training steps of a policy (forward, backward, gradient
 * clipping, AdamW) on random inputs held in memory, so that the figure is the model's alone,
 * without data loading. The graph is built as robotrain train builds it (robotrain/policy.h:
 * build_train, backward, the policy's optimizer preset, plan on the CPU); the weights are the
 * policy's random initialisation (no --policy.pretrained_backbone_weights file is read: the
 * values do not change the time). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>

#include "cli/cmd-policy.h"
#include "cli/commands.h"
#include "core/cpu/kernels.h"

#define USAGE                                                                                                \
    "usage: robotrain policy bench --policy.type=NAME [--policy.KEY=VALUE ...] [--cameras=N] "                \
    "[--image_shape=CxHxW]\n"                                                                                \
    "         [--state_dim=N] [--action_dim=N] [--batch_size=N] [--steps=N] [--warmup=N] [--threads=N] "       \
    "[--seed=N]\n\n"                                                                                         \
    "Times full training steps of a policy (forward, backward, gradient clipping, AdamW) on random inputs\n" \
    "in memory, on the CPU, and prints the median, fastest and slowest seconds per step and the samples\n"    \
    "per second; give --policy.type=act to see its options."

static const rt_option bench_options[] = {
    {.key = "cameras", .type = RT_OPT_INT, .default_value = "1", .min = 0, .max = 64, .flags = RT_OPT_RANGE,
     .help = "Camera inputs (observation.images.cam0, cam1, ...), each of --image_shape."},
    {.key = "image_shape", .type = RT_OPT_STRING, .default_value = "3x96x96",
     .help = "Shape of each camera image: channels x height x width, such as 3x480x640."},
    {.key = "state_dim", .type = RT_OPT_INT, .default_value = "2", .min = 0, .max = 1e6, .flags = RT_OPT_RANGE,
     .help = "Size of observation.state; 0: no state input."},
    {.key = "action_dim", .type = RT_OPT_INT, .default_value = "2", .min = 1, .max = 1e6, .flags = RT_OPT_RANGE,
     .help = "Size of each action."},
    {.key = "batch_size", .type = RT_OPT_INT, .default_value = "8", .min = 1, .max = 1e6, .flags = RT_OPT_RANGE,
     .help = "Samples per step."},
    {.key = "steps", .type = RT_OPT_INT, .default_value = "10", .min = 1, .max = 1e9, .flags = RT_OPT_RANGE,
     .help = "Timed training steps."},
    {.key = "warmup", .type = RT_OPT_INT, .default_value = "2", .min = 0, .max = 1e9, .flags = RT_OPT_RANGE,
     .help = "Untimed training steps first (caches, the thread pool, first-touch memory)."},
    {.key = "threads", .type = RT_OPT_INT, .default_value = "0", .min = 0, .max = 4096, .flags = RT_OPT_RANGE,
     .help = "CPU threads of the kernels; 0: OMP_NUM_THREADS, else every CPU."},
    {.key = "seed", .type = RT_OPT_INT, .default_value = "1000", .min = 0, .max = 2147483647.0,
     .flags = RT_OPT_RANGE,
     .help = "Seed of the weights, the inputs and the dropout masks."},
};

static int fail(GError *error, int status)
{
    rt_cli_policy_print_error(error->message);
    g_error_free(error);
    return status;
}

/* "3x96x96" -> 3, 96, 96: three positive sizes separated by 'x'. */
static gboolean parse_image_shape(const char *text, int64_t shape[3], GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, "x", -1);
    gboolean ok = g_strv_length(parts) == 3;
    for (int i = 0; ok && i < 3; i++) {
        char *end = NULL;
        if (!g_ascii_isdigit(parts[i][0])) {
            ok = FALSE;
            break;
        }
        gint64 v = g_ascii_strtoll(parts[i], &end, 10);
        ok = *end == '\0' && v > 0 && v <= 1 << 20;
        shape[i] = v;
    }
    if (!ok)
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "--image_shape=%s: expected CHANNELSxHEIGHTxWIDTH, three positive sizes such as 3x96x96",
                    text);
    return ok;
}

/* The benchmark's features as the policy's options: the cameras, observation.state, action. */
static gboolean set_features(rt_config *flags, const int64_t shape[3], GError **error)
{
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "policy.output_features" : "policy.input_features";
        if (rt_config_is_set_explicitly(flags, key)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "--%s: the benchmark makes the features from --cameras, --image_shape, "
                        "--state_dim and --action_dim; give those instead",
                        key);
            return FALSE;
        }
    }
    int64_t cameras = rt_config_get_int(flags, "cameras"), state = rt_config_get_int(flags, "state_dim");
    GString *in = g_string_new("{");
    for (int64_t i = 0; i < cameras; i++)
        g_string_append_printf(in,
                               "%s\"observation.images.cam%" G_GINT64_FORMAT "\": {\"type\": \"VISUAL\", "
                               "\"shape\": [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]}",
                               i ? ", " : "", (gint64)i, (gint64)shape[0], (gint64)shape[1], (gint64)shape[2]);
    if (state > 0)
        g_string_append_printf(in, "%s\"observation.state\": {\"type\": \"STATE\", \"shape\": [%" G_GINT64_FORMAT "]}",
                               cameras ? ", " : "", (gint64)state);
    g_string_append_c(in, '}');
    g_autofree char *out = g_strdup_printf("{\"action\": {\"type\": \"ACTION\", \"shape\": [%" G_GINT64_FORMAT "]}}",
                                           (gint64)rt_config_get_int(flags, "action_dim"));
    gboolean ok = rt_config_set(flags, "policy.input_features", in->str, error) &&
                  rt_config_set(flags, "policy.output_features", out, error) &&
                  rt_config_set(flags, "policy.device", "cpu", error);
    g_string_free(in, TRUE);
    return ok;
}

/* Random contents for every input of g: floats N(0, 1) (images too: the values do not change
 * the time), booleans FALSE (no padded action step), integers 0. */
typedef struct bench_inputs {
    int n;
    rt_tensor **tensors;
    void **data;
} bench_inputs;

static void bench_inputs_fill(bench_inputs *in, rt_graph *g, uint64_t seed)
{
    GRand *rand = g_rand_new_with_seed((guint32)seed);
    in->n = 0;
    in->tensors = g_new0(rt_tensor *, rt_graph_n_tensors(g) + 1);
    in->data = g_new0(void *, rt_graph_n_tensors(g) + 1);
    for (int i = 0; i < rt_graph_n_tensors(g); i++) {
        rt_tensor *t = rt_graph_tensor(g, i);
        if (!(t->flags & RT_TENSOR_INPUT))
            continue;
        size_t n = (size_t)rt_tensor_numel(t);
        void *data = g_malloc0(MAX(rt_tensor_nbytes(t), 1));
        for (size_t k = 0; k < n; k++) {
            /* Box-Muller: one normal value per uniform pair */
            double u = 1.0 - g_rand_double(rand), v = g_rand_double(rand);
            double z = sqrt(-2.0 * log(u)) * cos(2 * G_PI * v);
            if (t->dtype == RT_F32)
                ((float *)data)[k] = (float)z;
            else if (t->dtype == RT_F64)
                ((double *)data)[k] = z;
        }
        in->tensors[in->n] = t;
        in->data[in->n++] = data;
    }
    g_rand_free(rand);
}

static void bench_inputs_clear(bench_inputs *in)
{
    for (int i = 0; i < in->n; i++)
        g_free(in->data[i]);
    g_free(in->data);
    g_free(in->tensors);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of_sorted(const double *v, size_t n)
{
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Builds, plans and runs the benchmark; prints its report on stdout. */
static gboolean run_bench(const rt_plugin_desc *desc, const rt_config *flags, const int64_t shape[3], GError **error)
{
    int64_t batch = rt_config_get_int(flags, "batch_size"), steps = rt_config_get_int(flags, "steps"),
            warmup = rt_config_get_int(flags, "warmup");
    uint64_t seed = (uint64_t)rt_config_get_int(flags, "seed");
    rt_cpu_set_num_threads((int)rt_config_get_int(flags, "threads"));

    rt_policy *policy = rt_policy_new(desc, flags, error);
    if (!policy)
        return FALSE;
    const rt_backend_i *backend = rt_backend_cpu();
    rt_backend_device *dev = NULL;
    rt_graph *g = rt_graph_new(RT_GRAPH_TRAIN);
    rt_graph_set_init_seed(g, seed);
    rt_policy_build_args args = RT_POLICY_BUILD_ARGS_INIT(batch);
    rt_policy_losses losses;
    rt_policy_optimizer opt = {0};
    bench_inputs in = {0};
    double *times = g_new0(double, steps);
    double first_loss = NAN, last_loss = NAN;
    gboolean ok = rt_policy_build_train(policy, g, &args, &losses, error) && rt_graph_backward(g, error) &&
                  rt_policy_optimizer_preset(policy, g, &opt, error) &&
                  rt_graph_add_adamw(g, opt.groups, opt.n_groups, opt.grad_clip_norm, error) &&
                  (dev = backend->open(0, error)) != NULL && rt_graph_plan(g, backend, dev, error);
    if (ok) {
        bench_inputs_fill(&in, g, seed);
        int64_t n_params = 0;
        for (int i = 0; i < rt_graph_n_params(g); i++)
            n_params += rt_tensor_numel(rt_graph_param(g, i));
        int64_t cameras = rt_config_get_int(flags, "cameras");
        printf("policy: %s, %" G_GINT64_FORMAT " parameters (%.1fM)\n", rt_policy_type(policy), (gint64)n_params,
               n_params / 1e6);
        printf("batch: %" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT " camera(s) %" G_GINT64_FORMAT
               "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ", state %" G_GINT64_FORMAT ", action %" G_GINT64_FORMAT
               "\n",
               (gint64)batch, (gint64)cameras, (gint64)shape[0], (gint64)shape[1], (gint64)shape[2],
               (gint64)rt_config_get_int(flags, "state_dim"), (gint64)rt_config_get_int(flags, "action_dim"));
        printf("threads: %d\n", rt_cpu_get_num_threads());
        fflush(stdout);
    }
    for (int64_t s = 0; ok && s < warmup + steps; s++) {
        for (int i = 0; ok && i < in.n; i++)
            ok = rt_graph_write(g, in.tensors[i], in.data[i], rt_tensor_nbytes(in.tensors[i]), error);
        double loss = NAN;
        gint64 t0 = g_get_monotonic_time();
        ok = ok && rt_graph_set_rng(g, seed, (uint64_t)s, 0, error) && rt_graph_compute(g, error) &&
             rt_graph_read_scalar(g, losses.loss, &loss, error);
        gint64 t1 = g_get_monotonic_time();
        if (!ok)
            break;
        if (s == 0)
            first_loss = loss;
        last_loss = loss;
        if (s >= warmup)
            times[s - warmup] = (double)(t1 - t0) / 1e6;
    }
    if (ok) {
        qsort(times, (size_t)steps, sizeof *times, compare_doubles);
        double median = median_of_sorted(times, (size_t)steps);
        printf("steps: %" G_GINT64_FORMAT " timed after %" G_GINT64_FORMAT " warm-up\n", (gint64)steps,
               (gint64)warmup);
        printf("loss: %.6g at the first step, %.6g at the last\n", first_loss, last_loss);
        printf("s/step: median %.4f, min %.4f, max %.4f\n", median, times[0], times[steps - 1]);
        printf("samples/s: %.2f (batch / median)\n", (double)batch / median);
    }
    bench_inputs_clear(&in);
    g_free(times);
    rt_graph_free(g);
    if (dev)
        backend->close(dev);
    rt_policy_free(policy);
    return ok;
}

int rt_cmd_policy_bench(int argc, char **argv)
{
    g_autoptr(rt_config) flags = rt_config_new("robotrain policy bench");
    GError *error = NULL;
    if (!rt_config_add_options(flags, NULL, &rt_cli_policy_plugin_path_option, 1, &error) ||
        !rt_config_add_options(flags, NULL, bench_options, G_N_ELEMENTS(bench_options), &error))
        g_error("robotrain policy: the option table is malformed: %s", error->message); /* a bug */
    g_autofree char *type = rt_config_peek_arg(argc, argv, "policy.type");
    g_autofree char *plugin_path = rt_config_peek_arg(argc, argv, "plugin_path");
    rt_plugin_registry *registry = NULL;
    const rt_plugin_module *m = NULL;
    if (type) {
        registry = rt_cli_policy_add_module(flags, type, plugin_path, &m, &error);
        if (!registry)
            return fail(error, RT_EXIT_USAGE);
    }
    int status = RT_EXIT_OK;
    int64_t shape[3] = {0};
    if (!rt_config_parse_args(flags, argc, argv, NULL, &error)) {
        status = fail(error, RT_EXIT_USAGE);
    } else if (rt_config_handle_help(flags, USAGE, stdout)) {
        status = RT_EXIT_OK;
    } else if (!m) {
        fprintf(stderr, "robotrain policy: bench needs a policy: --policy.type=NAME (such as act)\n"
                        "See 'robotrain policy bench --help'.\n");
        status = RT_EXIT_USAGE;
    } else if (!parse_image_shape(rt_config_get_string(flags, "image_shape"), shape, &error) ||
               !set_features(flags, shape, &error)) {
        status = fail(error, RT_EXIT_USAGE);
    } else if (!run_bench(m->desc, flags, shape, &error)) {
        status = fail(error, RT_EXIT_FAILURE);
    }
    rt_plugin_registry_free(registry);
    return status;
}
