/* robotrain/launch-config.h: the launch configuration, robotrain.conf(5).
 *
 * A GLib key file, by default $XDG_CONFIG_HOME/robotrain/launch.conf, holding what accelerate's
 * default_config.yaml holds for `accelerate launch`: group [launch] (compute environment,
 * distributed type, machines, processes, GPU ids, mixed precision, rendezvous address and port,
 * CPU threads) and group [core] (plugin_path). Its keys are rt_option rows, so parsing,
 * validation, --help, the file's comments and the man-page check come from one table; the
 * launcher can add the [launch] rows as flags (--num_processes) with the same rules.
 *
 * A launch configuration is an rt_config whose keys are "launch.num_processes",
 * "core.plugin_path", ...: query it with rt_config_get_int() and friends. */
#ifndef ROBOTRAIN_LAUNCH_CONFIG_H
#define ROBOTRAIN_LAUNCH_CONFIG_H

#include <robotrain/option.h>

G_BEGIN_DECLS

/* The file name inside $XDG_CONFIG_HOME/robotrain/. */
#define RT_LAUNCH_CONFIG_FILE "launch.conf"

/* The rows of one group of the file ("launch" or "core"), with keys relative to the group.
 * Returns (transfer none) a static table, or NULL (and *n = 0) for another group. */
const rt_option *rt_launch_config_options(const char *group, size_t *n);

/* The groups of the file in order. Returns (transfer none) a static NULL-terminated vector. */
const char *const *rt_launch_config_groups(void);

/* The row of a full key such as "launch.mixed_precision", or NULL. Returns (transfer none). */
const rt_option *rt_launch_config_option(const char *key);

/* A launch configuration holding the defaults.
 * Returns (transfer full): free with rt_config_free(). */
rt_config *rt_launch_config_new(void);

/* $XDG_CONFIG_HOME/robotrain/launch.conf (g_get_user_config_dir()).
 * Returns (transfer full) a string to g_free. */
char *rt_launch_config_default_path(void);

/* Loads path (NULL: the default path) on top of lc's values, then checks the rules between keys
 * (rt_launch_config_validate()). RT_ERROR_NOT_FOUND when the file does not exist (lc is then
 * unchanged: a missing default file means "all defaults"). Every other problem (malformed file,
 * unknown group or key, bad value, inconsistent keys) is reported, one line each, naming the
 * file, the group, the key and what is allowed. */
gboolean rt_launch_config_load(rt_config *lc, const char *path, GError **error);

/* The rules between keys, which each key's own row cannot express:
 *   machine_rank < num_machines;
 *   distributed_type no: one process on one machine; multi-cpu or multi-gpu: at least two;
 *   num_processes is a multiple of num_machines;
 *   num_machines > 1 needs main_process_ip and a distributed_type;
 *   gpu_ids: distinct, and (multi-gpu) at least one per process of a machine;
 *   main_process_ip: a host name or address without blanks.
 * Errors name the keys with where their values came from (file and group, flag, default). */
gboolean rt_launch_config_validate(const rt_config *lc, GError **error);

/* Sets key ("launch.num_processes") from text as a command-line flag does: the value is
 * validated like the flag, its source becomes RT_SOURCE_ARGS, and messages about it (those of
 * rt_launch_config_validate() included) name flag, the spelling the user wrote ("--num_processes",
 * or "--multi_gpu" for a flag that sets another key). Errors (RT_ERROR_INVALID_ARG) name flag,
 * the value and what is allowed. */
gboolean rt_launch_config_set_flag(rt_config *lc, const char *key, const char *text, const char *flag,
                                   GError **error);

/* Writes lc to path (NULL: the default path) atomically, with every key and a comment about it;
 * the folder is created. With overwrite FALSE an existing file is left alone (RT_ERROR_IO). */
gboolean rt_launch_config_save(const rt_config *lc, const char *path, gboolean overwrite, GError **error);

/* The GPUs CUDA_VISIBLE_DEVICES names: the entries before the first invalid one (CUDA's rule),
 * without checking that they exist; 0 without the variable. robotrain config uses it when the
 * variable is set (to write a file for another machine), and otherwise asks the CUDA backend
 * module, as robotrain launch always does (rt_launcher_probe_gpus() in src/dist/launcher.h). */
guint rt_launch_count_visible_gpus(void);

/* Sets what `robotrain config default` writes for a machine with n_gpus GPUs: one process per
 * GPU (num_processes = max(1, n_gpus)), distributed_type multi-gpu for two or more, else no. */
gboolean rt_launch_config_set_machine_defaults(rt_config *lc, guint n_gpus, GError **error);

G_END_DECLS

#endif
