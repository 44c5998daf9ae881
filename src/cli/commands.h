/* src/cli/commands.h: the subcommand table of the robotrain program.
 *
 * Each subcommand lives in src/cli/cmd-<name>.c and exports one function, rt_cmd_<name>, that
 * receives argv starting at the subcommand's own name and returns the process exit status
 * (0 success, 1 failure, 2 usage error). Subcommands parse with the option tables of
 * robotrain/option.h, print, and call the library: no logic worth testing lives here. */
#ifndef ROBOTRAIN_CLI_COMMANDS_H
#define ROBOTRAIN_CLI_COMMANDS_H

typedef struct rt_cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary; /* one line for `robotrain --help` */
} rt_cli_command;

/* Exit statuses. */
enum { RT_EXIT_OK = 0, RT_EXIT_FAILURE = 1, RT_EXIT_USAGE = 2 };

int rt_cmd_plugins(int argc, char **argv);
int rt_cmd_config(int argc, char **argv);
int rt_cmd_dataset(int argc, char **argv);
int rt_cmd_launch(int argc, char **argv);
int rt_cmd_policy(int argc, char **argv);
int rt_cmd_train(int argc, char **argv);
int rt_cmd_push(int argc, char **argv);
int rt_cmd_wandb(int argc, char **argv);

#endif
