/* robotrain train: LeRobot's lerobot-train (flags, train_config.json, checkpoints, resume). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>

#include "cli/commands.h"
#include "train/amp.h"
#include "train/stop.h"
#include "train/train-hub.h"
#include "train/train-options.h"
#include "train/train-run.h"

static const char usage[] =
    "usage: robotrain train --dataset.repo_id=REPO --policy.type=act [--OPTION=VALUE ...]\n"
    "   or: robotrain train --config_path=OUTPUT/checkpoints/last/pretrained_model/train_config.json "
    "--resume=true\n\n"
    "Trains a policy on a LeRobot dataset with LeRobot's flags, and writes LeRobot's checkpoints.\n"
    "Give --policy.type=NAME (or --policy.path, --config_path) to see the policy's options.";

static void print_error(const char *message)
{
    g_auto(GStrv) lines = g_strsplit(message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain train: %s\n", lines[i]);
}

static int fail(GError *error, int status)
{
    print_error(error->message);
    g_error_free(error);
    return status;
}

/* The registry of the search path: $ROBOTRAIN_PLUGIN_PATH, [core] plugin_path of the launch
 * configuration, the user's and the installed folder. */
static rt_plugin_registry *open_registry(GError **error)
{
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autofree char *lc_path = rt_launch_config_default_path();
    g_autoptr(GError) local = NULL;
    if (!rt_launch_config_load(lc, lc_path, &local) &&
        !g_error_matches(local, RT_ERROR, RT_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    g_auto(GStrv) keyfile_folders = rt_config_get_string_list(lc, "core.plugin_path");
    g_auto(GStrv) folders = rt_plugin_search_path(NULL, (const char *const *)keyfile_folders, error);
    if (!folders)
        return NULL;
    return rt_plugin_registry_new((const char *const *)folders, error);
}

/* Settings that contradict each other, refused before anything starts: --policy.use_amp
 * against the launcher's ROBOTRAIN_MIXED_PRECISION. */
static gboolean check_supported(const rt_config *cfg, GError **error)
{
    rt_amp_env amp_env;
    rt_amp_env_from_process(&amp_env);
    return rt_train_amp_check(cfg, &amp_env, error);
}

/* After the options are declared: sources, validation, the run. */
static int train(rt_config *cfg, rt_train_file *file, rt_train_file *policy_file,
                 const rt_plugin_module *module, rt_plugin_registry *registry, int argc, char **argv)
{
    GError *error = NULL;
    /* LeRobot's order: the config file, the pretrained policy's config, then the flags */
    if ((file && !rt_train_file_apply(file, cfg, &error)) ||
        (policy_file && !rt_train_file_apply(policy_file, cfg, &error)))
        return fail(error, RT_EXIT_FAILURE);
    if (!rt_config_parse_args(cfg, argc, argv, NULL, &error))
        return fail(error, RT_EXIT_USAGE);
    if (rt_config_handle_help(cfg, usage, stdout))
        return RT_EXIT_OK;

    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    rt_train_settings settings = {0};
    int status = RT_EXIT_OK;
    if (!rt_train_validate(cfg, NULL, &settings, notes, &error) || !check_supported(cfg, &error)) {
        status = fail(error, RT_EXIT_USAGE);
    } else if (!module) {
        fprintf(stderr, "robotrain train: no policy: give --policy.type=act (or --policy.path=DIR)\n");
        status = RT_EXIT_USAGE;
    } else if (!rt_train_stop_install(&error)) {
        status = fail(error, RT_EXIT_FAILURE);
    } else {
        rt_train_run_args args = {
            .cfg = cfg,
            .settings = &settings,
            .policy = module->desc,
            .registry = registry,
            .out = stdout,
            .notes = notes,
        };
        rt_train_result result;
        gboolean ok = rt_train_run(&args, &result, &error);
        rt_train_stop_uninstall();
        fflush(stdout);
        if (!ok)
            status = fail(error, RT_EXIT_FAILURE);
        else if (result.stop_signal)
            status = 128 + result.stop_signal; /* as a shell reports a process killed by it */
        else if (rt_train_is_main_process() && /* LeRobot pushes at the end, from the main process */
                 !rt_train_hub_push_at_end(cfg, result.last_checkpoint, stdout, &error))
            status = fail(error, RT_EXIT_FAILURE);
        g_free(result.last_checkpoint);
    }
    rt_train_settings_clear(&settings);
    return status;
}

int rt_cmd_train(int argc, char **argv)
{
    g_autoptr(rt_config) cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    if (!rt_train_add_options(cfg, &error))
        g_error("robotrain train: the option table is malformed: %s", error->message); /* a bug */

    /* the policy decides the options: --policy.type, else --policy.path's config.json, else
     * --config_path's train_config.json */
    g_autofree char *config_path = rt_config_peek_arg(argc, argv, "config_path");
    g_autofree char *policy_path = rt_config_peek_arg(argc, argv, "policy.path");
    g_autofree char *type = rt_config_peek_arg(argc, argv, "policy.type");
    g_autoptr(rt_train_file) file = NULL;
    g_autoptr(rt_train_file) policy_file = NULL;
    if (config_path && !(file = rt_train_file_load(config_path, &error)))
        return fail(error, RT_EXIT_FAILURE);
    if (policy_path && !(policy_file = rt_train_file_load_policy(policy_path, &error)))
        return fail(error, RT_EXIT_FAILURE);
    if (!type && policy_file && rt_train_file_policy_type(policy_file))
        type = g_strdup(rt_train_file_policy_type(policy_file));
    if (!type && file && rt_train_file_policy_type(file))
        type = g_strdup(rt_train_file_policy_type(file));

    rt_plugin_registry *registry = open_registry(&error);
    if (!registry)
        return fail(error, RT_EXIT_FAILURE);
    const rt_plugin_module *module = NULL;
    int status = RT_EXIT_OK;
    if (type) {
        module = rt_policy_find_module(registry, type, &error);
        if (!module || !rt_policy_add_options(cfg, module->desc, &error)) {
            rt_plugin_registry_free(registry);
            return fail(error, RT_EXIT_USAGE);
        }
    }
    if (!rt_train_add_policy_options(cfg, NULL, 0, &error))
        g_error("robotrain train: the option table is malformed: %s", error->message); /* a bug */

    status = train(cfg, file, policy_file, module, registry, argc, argv);
    rt_plugin_registry_free(registry);
    return status;
}
