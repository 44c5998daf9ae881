/* src/cli/cmd-policy.h: what the files of `robotrain policy` share (cmd-policy.c holds check
 * and info, cmd-policy-bench.c the benchmark). */
#ifndef ROBOTRAIN_CLI_CMD_POLICY_H
#define ROBOTRAIN_CLI_CMD_POLICY_H

#include <glib.h>

#include <robotrain/robotrain.h>

/* The --plugin_path row every subcommand has. */
extern const rt_option rt_cli_policy_plugin_path_option;

/* The registry of the search path: plugin_path (--plugin_path, may be NULL),
 * $ROBOTRAIN_PLUGIN_PATH, [core] plugin_path of the default launch configuration (when the file
 * exists), the user's and the installed folder. Returns (transfer full) a registry to free with
 * rt_plugin_registry_free(), or NULL with error. */
rt_plugin_registry *rt_cli_policy_registry(const char *plugin_path, GError **error);

/* Finds policy type's module in the registry of plugin_path (rt_cli_policy_registry) and adds
 * its --policy.* options to flags. Returns (transfer full, rt_plugin_registry_free) the registry
 * that holds *module, or NULL with error. */
rt_plugin_registry *rt_cli_policy_add_module(rt_config *flags, const char *type, const char *plugin_path,
                                             const rt_plugin_module **module, GError **error);

/* Prints each line of message as "robotrain policy: LINE" on stderr. */
void rt_cli_policy_print_error(const char *message);

/* `robotrain policy bench`; argv[0] is "bench". Returns the exit status. */
int rt_cmd_policy_bench(int argc, char **argv);

#endif
