/* robotrain config: write, show or check the launch configuration, robotrain.conf(5). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <robotrain/robotrain.h>
#include <robotrain/launch-config.h>

#include "cli/commands.h"

static const rt_option config_file_option[] = {
    {.key = "config_file",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "The launch configuration file; without it, $XDG_CONFIG_HOME/robotrain/launch.conf."},
};

static const rt_option force_option[] = {
    {.key = "force",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Replace the file when it exists already."},
};

typedef struct subcommand {
    const char *name;
    const char *summary;
    gboolean writes; /* takes --mixed_precision and --force */
    int (*run)(const struct subcommand *sub, const rt_config *flags);
} subcommand;

static int run_default(const subcommand *sub, const rt_config *flags);
static int run_show(const subcommand *sub, const rt_config *flags);
static int run_check(const subcommand *sub, const rt_config *flags);

static const subcommand subcommands[] = {
    {"default", "write a launch configuration for this machine, without questions", TRUE, run_default},
    {"show", "print every key of the effective configuration and where its value comes from", FALSE,
     run_show},
    {"check", "validate a launch configuration file; exit 1 naming every problem", FALSE, run_check},
};

/* Prints a (possibly multi-line) error, each line prefixed. */
static void print_error(const GError *error)
{
    g_auto(GStrv) lines = g_strsplit(error->message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain config: %s\n", lines[i]);
}

/* The flags of a subcommand: --config_file for all; --mixed_precision (the same row as the
 * [launch] key) and --force for those that write. Returns (transfer full). */
static rt_config *subcommand_flags(const subcommand *sub)
{
    g_autofree char *command = g_strdup_printf("robotrain config %s", sub->name);
    rt_config *cfg = rt_config_new(command);
    GError *error = NULL;
    gboolean ok =
        rt_config_add_options(cfg, NULL, config_file_option, G_N_ELEMENTS(config_file_option), &error);
    if (ok && sub->writes)
        ok = rt_config_add_options(cfg, NULL, rt_launch_config_option("launch.mixed_precision"), 1, &error) &&
             rt_config_add_options(cfg, NULL, force_option, G_N_ELEMENTS(force_option), &error);
    if (!ok)
        g_error("robotrain config: the option table is malformed: %s", error->message); /* a bug */
    return cfg;
}

static char *usage_of(const subcommand *sub, const rt_config *flags)
{
    g_autofree char *synopsis = rt_config_synopsis(flags);
    return g_strdup_printf("robotrain config %s %s", sub->name, synopsis);
}

/* The file to use: --config_file, else the default. Returns (transfer full). */
static char *file_of(const rt_config *flags)
{
    const char *path = rt_config_get_string(flags, "config_file");
    return path ? g_strdup(path) : rt_launch_config_default_path();
}

static void print_usage(FILE *out, gboolean full)
{
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i]);
        g_autofree char *usage = usage_of(&subcommands[i], flags);
        fprintf(out, "%s %s\n", i ? "   or:" : "usage:", usage);
    }
    g_autofree char *path = rt_launch_config_default_path();
    fprintf(out,
            "\nWrites, shows or checks the launch configuration that 'robotrain launch' reads: a\n"
            "key file, by default %s (see robotrain.conf(5)).\n\nsubcommands:\n",
            path);
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        fprintf(out, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    if (!full) {
        fprintf(out, "\nSee 'robotrain config --help' for the options and the keys of the file.\n");
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i]);
        fprintf(out, "\nrobotrain config %s ", subcommands[i].name);
        rt_config_print_help(flags, RT_HELP_STYLE_FLAGS, out);
    }
    g_autoptr(rt_config) lc = rt_launch_config_new();
    fprintf(out, "\nkeys of the file (robotrain.conf(5)):\n");
    rt_config_print_help(lc, RT_HELP_STYLE_KEYFILE, out);
}

/* ---------------------------------------------------------------- subcommands */

static int run_default(const subcommand *sub, const rt_config *flags)
{
    (void)sub;
    g_autofree char *path = file_of(flags);
    gboolean force = rt_config_get_bool(flags, "force");
    if (!force && g_file_test(path, G_FILE_TEST_EXISTS)) {
        fprintf(stderr,
                "robotrain config: %s already exists; it was left as it is.\n"
                "Use --force to replace it, or --config_file=PATH to write another file.\n",
                path);
        return RT_EXIT_FAILURE;
    }
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    guint gpus = rt_launch_count_visible_gpus();
    if (!rt_launch_config_set_machine_defaults(lc, gpus, &error) ||
        !rt_config_set(lc, "launch.mixed_precision", rt_config_get_string(flags, "mixed_precision"),
                       &error) ||
        !rt_launch_config_validate(lc, &error) || !rt_launch_config_save(lc, path, force, &error)) {
        print_error(error);
        return RT_EXIT_FAILURE;
    }
    printf("robotrain config: wrote %s (distributed_type=%s, num_processes=%" G_GINT64_FORMAT
           ", mixed_precision=%s)\n",
           path, rt_config_get_string(lc, "launch.distributed_type"),
           rt_config_get_int(lc, "launch.num_processes"), rt_config_get_string(lc, "launch.mixed_precision"));
    return RT_EXIT_OK;
}

static int run_show(const subcommand *sub, const rt_config *flags)
{
    (void)sub;
    g_autofree char *path = file_of(flags);
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    gboolean found = TRUE;
    if (!rt_launch_config_load(lc, path, &error)) {
        if (!g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND)) {
            print_error(error);
            return RT_EXIT_FAILURE;
        }
        found = FALSE;
    }
    printf("# %s%s\n", path, found ? "" : " does not exist: every value is the default");
    rt_config_print_values(lc, RT_HELP_STYLE_KEYFILE, stdout);
    return RT_EXIT_OK;
}

static int run_check(const subcommand *sub, const rt_config *flags)
{
    (void)sub;
    g_autofree char *path = file_of(flags);
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    if (!rt_launch_config_load(lc, path, &error)) {
        print_error(error);
        if (g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND))
            fprintf(stderr, "robotrain config: write one with 'robotrain config default'.\n");
        return RT_EXIT_FAILURE;
    }
    printf("robotrain config: %s is valid\n", path);
    return RT_EXIT_OK;
}

/* ---------------------------------------------------------------- dispatch */

int rt_cmd_config(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr, FALSE);
        return RT_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout, TRUE);
        return RT_EXIT_OK;
    }
    if (strcmp(name, "--dump-options") == 0) { /* what 'config' checks: the keys of the file */
        g_autoptr(rt_config) lc = rt_launch_config_new();
        rt_config_print_options(lc, RT_HELP_STYLE_KEYFILE, stdout);
        return RT_EXIT_OK;
    }
    const subcommand *sub = NULL;
    const char *names[G_N_ELEMENTS(subcommands)];
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        names[i] = subcommands[i].name;
        if (strcmp(name, subcommands[i].name) == 0)
            sub = &subcommands[i];
    }
    if (!sub) {
        if (name[0] == '-') {
            fprintf(stderr, "robotrain config: give a subcommand (default, show or check) before '%s'.\n",
                    name);
        } else {
            const char *near = rt_suggest_nearest(name, names, G_N_ELEMENTS(names));
            fprintf(stderr, "robotrain config: '%s' is not a subcommand of config.", name);
            if (near)
                fprintf(stderr, " Did you mean '%s'?", near);
            fprintf(stderr, "\n");
        }
        fprintf(stderr, "See 'robotrain config --help'.\n");
        return RT_EXIT_USAGE;
    }

    g_autoptr(rt_config) flags = subcommand_flags(sub);
    g_autoptr(GError) error = NULL;
    if (!rt_config_parse_args(flags, argc - 1, argv + 1, NULL, &error)) {
        print_error(error);
        return RT_EXIT_USAGE;
    }
    g_autofree char *usage = usage_of(sub, flags);
    g_autofree char *usage_line =
        g_strdup_printf("usage: %s\n\n%c%s.", usage, g_ascii_toupper(sub->summary[0]), sub->summary + 1);
    if (rt_config_handle_help(flags, usage_line, stdout))
        return RT_EXIT_OK;
    return sub->run(sub, flags);
}
