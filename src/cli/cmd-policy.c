/* robotrain policy: check a policy against a reference run (check), or describe one (info); the
 * benchmark (bench) is in cmd-policy-bench.c. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>

#include "cli/cmd-policy.h"
#include "cli/commands.h"
#include "core/policy-check.h"

static const char *const dtypes[] = {"f32", "f64", NULL};

static const rt_option check_options[] = {
    {.key = "case", .type = RT_OPT_PATH, .default_value = NULL, .flags = RT_OPT_REQUIRED,
     .help = "The case file: a safetensors file in the act-golden-v1 format (its metadata holds the "
             "policy's config; its backbone file, if it names one, lies beside it)."},
    {.key = "tolerance", .type = RT_OPT_FLOAT, .default_value = "1.0", .min = 1e-6, .max = 1e6,
     .flags = RT_OPT_RANGE,
     .help = "Multiplies every limit of the reference's tolerance table: 1 checks the limits as "
             "documented, 0.1 ten times tighter."},
    {.key = "dtype", .type = RT_OPT_ENUM, .default_value = "f32", .choices = dtypes,
     .help = "Precision the policy runs in: f32 as in training, or f64 (the reference is float32, "
             "so f64 shows how far float32 rounding alone goes)."},
};

static const rt_option info_options[] = {
    {.key = "config_path", .type = RT_OPT_PATH, .default_value = NULL, .flags = RT_OPT_NULLABLE,
     .help = "A policy's config.json (as LeRobot saves it beside model.safetensors) to start from; "
             "the --policy.* flags override it. Its type chooses the policy."},
    {.key = "keys", .type = RT_OPT_BOOL, .default_value = "false",
     .help = "Also list every state-dict key: key, shape, dtype, param or buffer, optimizer group "
             "and index in the optimizer's state, tab-separated."},
};

const rt_option rt_cli_policy_plugin_path_option = {
    .key = "plugin_path", .type = RT_OPT_PATH, .default_value = NULL, .flags = RT_OPT_NULLABLE,
    .help = "Folders to search for policy modules before all others, separated by ':'; each must exist."};

typedef struct subcommand {
    const char *name;
    const char *summary;
    const rt_option *options;
    size_t n_options;
} subcommand;

static const subcommand subcommands[] = {
    {"check", "compare a policy with a reference run stored in a case file", check_options,
     G_N_ELEMENTS(check_options)},
    {"info", "print a policy's parameter counts and state-dict keys", info_options, G_N_ELEMENTS(info_options)},
    {"bench", "time training steps of a policy on random inputs", NULL, 0},
};

void rt_cli_policy_print_error(const char *message)
{
    g_auto(GStrv) lines = g_strsplit(message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain policy: %s\n", lines[i]);
}

static int fail(GError *error, int status)
{
    rt_cli_policy_print_error(error->message);
    g_error_free(error);
    return status;
}

static void print_usage(FILE *out)
{
    fprintf(out, "usage: robotrain policy check --case=FILE [--tolerance=FLOAT] [--dtype=f32|f64]\n"
                 "   or: robotrain policy info --policy.type=NAME [--policy.KEY=VALUE ...] [--keys]\n"
                 "   or: robotrain policy bench --policy.type=NAME [--policy.KEY=VALUE ...] [--cameras=N] "
                 "[--image_shape=CxHxW]\n"
                 "                              [--state_dim=N] [--action_dim=N] [--batch_size=N] [--steps=N] "
                 "[--warmup=N] [--threads=N]\n"
                 "\nsubcommands:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        fprintf(out, "  %-6s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nSee 'robotrain policy <subcommand> --help' and robotrain-policy(1).\n");
}

rt_plugin_registry *rt_cli_policy_registry(const char *plugin_path, GError **error)
{
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autofree char *lc_path = rt_launch_config_default_path();
    g_autoptr(GError) local = NULL;
    if (!rt_launch_config_load(lc, lc_path, &local) && !g_error_matches(local, RT_ERROR, RT_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    g_auto(GStrv) keyfile_folders = rt_config_get_string_list(lc, "core.plugin_path");
    g_auto(GStrv) folders = rt_plugin_search_path(plugin_path, (const char *const *)keyfile_folders, error);
    if (!folders)
        return NULL;
    return rt_plugin_registry_new((const char *const *)folders, error);
}

rt_plugin_registry *rt_cli_policy_add_module(rt_config *flags, const char *type, const char *plugin_path,
                                             const rt_plugin_module **module, GError **error)
{
    rt_plugin_registry *registry = rt_cli_policy_registry(plugin_path, error);
    *module = registry ? rt_policy_find_module(registry, type, error) : NULL;
    if (!*module || !rt_policy_add_options(flags, (*module)->desc, error)) {
        rt_plugin_registry_free(registry);
        return NULL;
    }
    return registry;
}

static int run_check(const rt_config *flags)
{
    GError *error = NULL;
    rt_plugin_registry *registry = rt_cli_policy_registry(rt_config_get_string(flags, "plugin_path"), &error);
    if (!registry)
        return fail(error, RT_EXIT_FAILURE);
    rt_policy_check_options opt = {
        .tolerance = rt_config_get_double(flags, "tolerance"),
        .dtype = strcmp(rt_config_get_string(flags, "dtype"), "f64") == 0 ? RT_F64 : RT_F32,
        .out = stdout,
    };
    rt_policy_check_result res;
    gboolean ran = rt_policy_check_case(registry, rt_config_get_string(flags, "case"), &opt, &res, &error);
    rt_plugin_registry_free(registry);
    fflush(stdout);
    if (!ran)
        return fail(error, RT_EXIT_FAILURE);
    if (res.n_failed || res.n_missing) {
        fprintf(stderr, "robotrain policy: %s does not match: %d of %d tensors outside their limits, %d not "
                "produced\n", rt_config_get_string(flags, "case"), res.n_failed, res.n_compared, res.n_missing);
        return RT_EXIT_FAILURE;
    }
    printf("all %d tensors within their limits\n", res.n_compared);
    return RT_EXIT_OK;
}

/* info: the policy options come from the module that --policy.type (or the config file's type)
 * names, so they are declared before the flags are parsed. */
static int run_info(int argc, char **argv)
{
    g_autoptr(rt_config) flags = rt_config_new("robotrain policy info");
    GError *error = NULL;
    if (!rt_config_add_options(flags, NULL, &rt_cli_policy_plugin_path_option, 1, &error) ||
        !rt_config_add_options(flags, NULL, info_options, G_N_ELEMENTS(info_options), &error))
        g_error("robotrain policy: the option table is malformed: %s", error->message); /* a bug */
    g_autofree char *type = rt_config_peek_arg(argc, argv, "policy.type");
    g_autofree char *config_path = rt_config_peek_arg(argc, argv, "config_path");
    g_autofree char *plugin_path = rt_config_peek_arg(argc, argv, "plugin_path");
    g_autofree char *config_text = NULL;
    gsize config_len = 0;
    if (config_path) {
        if (!g_file_get_contents(config_path, &config_text, &config_len, &error))
            return fail(error, RT_EXIT_FAILURE);
        g_autofree char *file_type = rt_policy_config_json_type(config_text, config_len, config_path, &error);
        if (!file_type)
            return fail(error, RT_EXIT_FAILURE);
        if (!type)
            type = g_steal_pointer(&file_type);
    }
    rt_plugin_registry *registry = NULL;
    const rt_plugin_module *m = NULL;
    if (type) {
        registry = rt_cli_policy_add_module(flags, type, plugin_path, &m, &error);
        if (!registry)
            return fail(error, RT_EXIT_USAGE);
        if (config_text && !rt_policy_config_load_json(flags, config_text, config_len, config_path, &error)) {
            rt_plugin_registry_free(registry);
            return fail(error, RT_EXIT_FAILURE);
        }
    }
    int status = RT_EXIT_OK;
    if (!rt_config_parse_args(flags, argc, argv, NULL, &error)) {
        status = fail(error, RT_EXIT_USAGE);
    } else if (rt_config_handle_help(flags, "usage: robotrain policy info --policy.type=NAME [--policy.KEY=VALUE "
                                            "...] [--keys] [--config_path=FILE] [--plugin_path=PATH]\n\n"
                                            "Prints a policy's parameter counts and state-dict keys; give "
                                            "--policy.type=act to see its options.",
                                     stdout)) {
        status = RT_EXIT_OK;
    } else if (!m) {
        fprintf(stderr, "robotrain policy: info needs a policy: --policy.type=NAME (such as act) or "
                        "--config_path=config.json\nSee 'robotrain policy info --help'.\n");
        status = RT_EXIT_USAGE;
    } else {
        rt_policy *policy = rt_policy_new(m->desc, flags, &error);
        if (!policy || !rt_policy_print_info(policy, stdout, rt_config_get_bool(flags, "keys"), &error))
            status = fail(error, RT_EXIT_FAILURE);
        rt_policy_free(policy);
    }
    rt_plugin_registry_free(registry);
    return status;
}

int rt_cmd_policy(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? RT_EXIT_USAGE : RT_EXIT_OK;
    }
    const subcommand *sub = NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            sub = &subcommands[i];
    if (!sub) {
        const char *names[G_N_ELEMENTS(subcommands)];
        for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
            names[i] = subcommands[i].name;
        const char *near = rt_suggest_nearest(argv[1], names, G_N_ELEMENTS(names));
        fprintf(stderr, "robotrain policy: '%s' is not 'check', 'info' or 'bench'.", argv[1]);
        if (near)
            fprintf(stderr, " Did you mean '%s'?", near);
        fprintf(stderr, "\nSee 'robotrain policy --help'.\n");
        return RT_EXIT_USAGE;
    }
    if (sub == &subcommands[1])
        return run_info(argc - 1, argv + 1);
    if (sub == &subcommands[2])
        return rt_cmd_policy_bench(argc - 1, argv + 1);
    g_autoptr(rt_config) flags = rt_config_new("robotrain policy check");
    GError *error = NULL;
    if (!rt_config_add_options(flags, NULL, check_options, G_N_ELEMENTS(check_options), &error) ||
        !rt_config_add_options(flags, NULL, &rt_cli_policy_plugin_path_option, 1, &error))
        g_error("robotrain policy: the option table is malformed: %s", error->message); /* a bug */
    if (!rt_config_parse_args(flags, argc - 1, argv + 1, NULL, &error))
        return fail(error, RT_EXIT_USAGE);
    if (rt_config_handle_help(flags, "usage: robotrain policy check --case=FILE [--tolerance=FLOAT] "
                                     "[--dtype=f32|f64] [--plugin_path=PATH]\n\nCompares a policy with a "
                                     "reference run: the losses, outputs and intermediates, every gradient "
                                     "and the inference results; exit status 0 when all lie within their "
                                     "limits.",
                              stdout))
        return RT_EXIT_OK;
    return run_check(flags);
}
