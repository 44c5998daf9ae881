/* robotrain: git-style dispatch to the subcommands in src/cli/cmd-*.c. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>

#include "cli/commands.h"

static const rt_cli_command commands[] = {
    { "config", rt_cmd_config, "write, show or check the launch configuration (robotrain.conf)" },
    { "dataset", rt_cmd_dataset, "summarize a LeRobot dataset, print its rows, or download one from the Hub" },
    { "launch", rt_cmd_launch, "start and supervise the workers of a (multi-GPU, multi-machine) run" },
    { "plugins", rt_cmd_plugins, "list the installed modules, or show one module's options" },
    { "policy", rt_cmd_policy, "check a policy against a reference run, list its parameters, time its training step" },
    { "push", rt_cmd_push, "upload a trained policy (a checkpoint) to the Hugging Face Hub" },
    { "train", rt_cmd_train, "train a policy on a LeRobot dataset (LeRobot's flags and checkpoints)" },
    { "wandb", rt_cmd_wandb, "send W&B runs kept offline to the server (wandb sync DIR)" },
};

static void print_usage(FILE *out)
{
    fprintf(out, "usage: robotrain [--version] [--help] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "  %-10s %s\n", "help", "show the help of a command: robotrain help <command>");
    fprintf(out, "\nSee 'robotrain <command> --help' and robotrain(1).\n");
}

static const rt_cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int run_command(const char *name, int argc, char **argv)
{
    const rt_cli_command *cmd = find_command(name);
    if (!cmd) {
        const char *names[G_N_ELEMENTS(commands)];
        for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
            names[i] = commands[i].name;
        const char *near = rt_suggest_nearest(name, names, G_N_ELEMENTS(names));
        fprintf(stderr, "robotrain: '%s' is not a robotrain command.", name);
        if (near)
            fprintf(stderr, " Did you mean '%s'?", near);
        fprintf(stderr, "\nSee 'robotrain --help' for the list of commands.\n");
        return RT_EXIT_USAGE;
    }
    return cmd->run(argc, argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return RT_EXIT_USAGE;
    }
    const char *arg = argv[1];
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "version") == 0) {
        printf("robotrain %s (plugin ABI %d.%d)\n", RT_VERSION, RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
        return RT_EXIT_OK;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        print_usage(stdout);
        return RT_EXIT_OK;
    }
    if (strcmp(arg, "help") == 0) {
        if (argc < 3) {
            print_usage(stdout);
            return RT_EXIT_OK;
        }
        char *help_argv[] = { argv[2], (char *)"--help", NULL };
        return run_command(argv[2], 2, help_argv);
    }
    if (arg[0] == '-') {
        fprintf(stderr, "robotrain: unknown option '%s' before the command.\nSee 'robotrain --help'.\n", arg);
        return RT_EXIT_USAGE;
    }
    return run_command(arg, argc - 1, argv + 1);
}
