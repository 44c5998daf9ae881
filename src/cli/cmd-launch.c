/* robotrain launch: start the workers of a (distributed) run and supervise them, as accelerate
 * launch and torchrun do (robotrain-launch(1)). The work is done in src/dist/launcher*.c. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <robotrain/robotrain.h>
#include <robotrain/launch-config.h>

#include "cli/commands.h"
#include "dist/launcher.h"

/* The [launch] keys that are also flags, as accelerate launch has them. */
static const char *const launch_keys[] = {
    "num_processes",     "num_machines", "machine_rank",    "main_process_ip",
    "main_process_port", "gpu_ids",      "mixed_precision", "num_cpu_threads_per_process",
};

static const rt_option own_options[] = {
    {.key = "multi_gpu",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Run one process per GPU, communicating with NCCL (distributed_type multi-gpu); without "
             "--num_processes, one per visible GPU (or per GPU of --gpu_ids)."},
    {.key = "cpu",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Run on CPUs only: the workers see no GPU (CUDA_VISIBLE_DEVICES is empty) and, with two "
             "or more processes, communicate with Gloo (distributed_type multi-cpu)."},
    {.key = "config_file",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "The launch configuration whose values the flags override; without it, "
             "$XDG_CONFIG_HOME/robotrain/launch.conf when that file exists."},
    {.key = "prefix_output",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Prefix every line the workers write to stdout and stderr with their rank, \"[rank 3] \" "
             "(their output then reaches a pipe, not the terminal)."},
    {.key = "verbose",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Let every worker of robotrain train print its log lines, marked \"[rank N] \" "
             "(ROBOTRAIN_VERBOSE=1 in their environment); by default only rank 0 prints."},
    {.key = "grace_period",
     .type = RT_OPT_FLOAT,
     .default_value = "30",
     .min = 0,
     .max = 86400,
     .flags = RT_OPT_RANGE,
     .help = "Seconds the workers get to stop after SIGTERM (or a forwarded signal) before they are sent "
             "SIGKILL."},
};

static rt_config *launch_flags(void)
{
    rt_config *cfg = rt_config_new("robotrain launch");
    GError *error = NULL;
    gboolean ok = rt_config_add_options(cfg, NULL, own_options, 2, &error);
    for (size_t i = 0; ok && i < G_N_ELEMENTS(launch_keys); i++) {
        g_autofree char *key = g_strconcat("launch.", launch_keys[i], NULL);
        ok = rt_config_add_options(cfg, NULL, rt_launch_config_option(key), 1, &error);
    }
    if (ok)
        ok = rt_config_add_options(cfg, NULL, own_options + 2, G_N_ELEMENTS(own_options) - 2, &error);
    if (!ok)
        g_error("robotrain launch: the option table is malformed: %s", error->message); /* a bug */
    rt_config_set_stop_at_positional(cfg, TRUE);
    return cfg;
}

static void print_error(const char *message)
{
    g_auto(GStrv) lines = g_strsplit(message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain launch: %s\n", lines[i]);
}

static int usage_error(const char *message)
{
    print_error(message);
    fprintf(stderr, "See 'robotrain launch --help'.\n");
    return RT_EXIT_USAGE;
}

static const char help_text[] =
    "usage: robotrain launch [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Start the workers of a run on this machine, as accelerate launch and torchrun do: one process\n"
    "per local rank, each running PROGRAM (any executable, looked up in PATH) with RANK, LOCAL_RANK,\n"
    "WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, ROBOTRAIN_MIXED_PRECISION,\n"
    "OMP_NUM_THREADS and CUDA_VISIBLE_DEVICES in its environment; host the rendezvous on machine\n"
    "rank 0; stop every worker when one fails, and pass SIGINT, SIGTERM and SIGHUP on to them.\n"
    "Values come from the flags, then the launch configuration (see 'robotrain config'), then the\n"
    "defaults. The first argument that is not an option (or everything after --) is the program.\n"
    "\n"
    "  robotrain launch --multi_gpu --num_processes=2 --mixed_precision=bf16 -- \\\n"
    "      robotrain train --dataset.repo_id=lerobot/pusht --policy.type=act\n"
    "\n"
    "Exit status: 0 when every worker exits with 0; the status of the first worker that failed\n"
    "(128 + N when killed by signal N); 128 + N after the launcher got signal N; 1 when the run\n"
    "cannot start; 2 for a usage error. See robotrain-launch(1).";

/* The launch configuration: the key file, then the flags. NULL after printing the problem. */
static rt_config *effective_config(const rt_config *flags)
{
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    const char *given = rt_config_get_string(flags, "config_file");
    if (!rt_launch_config_load(lc, given, &error)) {
        if (given || !g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND)) {
            print_error(error->message);
            return NULL;
        }
        g_clear_error(&error); /* no default file: every value is the default */
    }
    for (size_t i = 0; i < G_N_ELEMENTS(launch_keys); i++) {
        if (rt_config_get_source(flags, launch_keys[i]) != RT_SOURCE_ARGS)
            continue;
        g_autofree char *key = g_strconcat("launch.", launch_keys[i], NULL);
        g_autofree char *text = rt_config_get_text(flags, launch_keys[i]);
        g_autofree char *flag = g_strconcat("--", launch_keys[i], NULL);
        if (!rt_launch_config_set_flag(lc, key, text, flag, &error)) {
            print_error(error->message);
            return NULL;
        }
    }
    if (rt_config_get_bool(flags, "multi_gpu") &&
        !rt_launch_config_set_flag(lc, "launch.distributed_type", "multi-gpu", "--multi_gpu", &error)) {
        print_error(error->message);
        return NULL;
    }
    return g_steal_pointer(&lc);
}

int rt_cmd_launch(int argc, char **argv)
{
    g_autoptr(rt_config) flags = launch_flags();
    g_autoptr(GError) error = NULL;
    g_auto(GStrv) program = NULL;
    if (!rt_config_parse_args(flags, argc, argv, &program, &error))
        return usage_error(error->message);
    if (rt_config_handle_help(flags, help_text, stdout))
        return RT_EXIT_OK;
    if (!program[0])
        return usage_error("give the program to launch, e.g. robotrain launch --num_processes=2 -- robotrain "
                           "train --policy.type=act ...");
    if (rt_config_get_bool(flags, "multi_gpu") && rt_config_get_bool(flags, "cpu"))
        return usage_error("--multi_gpu and --cpu exclude each other: choose GPUs or CPUs");

    if (rt_config_get_bool(flags, "verbose"))
        g_setenv("ROBOTRAIN_VERBOSE", "1", TRUE); /* the workers inherit it */

    g_autofree char *path = rt_launcher_find_program(program[0], &error);
    if (!path) {
        print_error(error->message);
        return RT_EXIT_FAILURE;
    }
    g_autoptr(rt_config) lc = effective_config(flags);
    if (!lc)
        return RT_EXIT_FAILURE;
    /* The key file's [core] plugin_path folders, where the GPU probe looks for the CUDA module. */
    g_auto(GStrv) plugin_folders = rt_config_get_string_list(lc, "core.plugin_path");
    g_autoptr(rt_launch_plan) plan = rt_launch_plan_new(lc, rt_config_get_bool(flags, "cpu"),
                                                        rt_launcher_probe_gpus, plugin_folders, NULL, &error);
    if (!plan) {
        print_error(error->message);
        return RT_EXIT_FAILURE;
    }
    for (size_t i = 0; plan->notes[i]; i++)
        fprintf(stderr, "robotrain launch: %s\n", plan->notes[i]);

    rt_store_server *store = NULL;
    if (!rt_launcher_host_store(plan, &store, &error)) {
        print_error(error->message);
        return RT_EXIT_FAILURE;
    }
    g_autofree char *description = rt_launch_plan_describe(plan);
    fprintf(stderr, "robotrain launch: %s\n", description);

    rt_launch_options options = {
        .grace_period_s = rt_config_get_double(flags, "grace_period"),
        .prefix_output = rt_config_get_bool(flags, "prefix_output"),
        .log = stderr,
    };
    rt_launch_result result;
    gboolean ran = rt_launcher_run(plan, path, program, &options, &result, &error);
    rt_store_server_free(store); /* after the workers: they may use it until they exit */
    if (!ran) {
        print_error(error->message);
        return RT_EXIT_FAILURE;
    }
    if (result.exit_status != 0)
        fprintf(stderr, "robotrain launch: the run failed: %s\n", result.summary);
    int status = result.exit_status;
    g_free(result.summary);
    return status;
}
