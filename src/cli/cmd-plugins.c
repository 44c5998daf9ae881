/* robotrain plugins: list the modules found in the search path, or show one of them. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>
#include <robotrain/launch-config.h>
#include <robotrain/plugin-loader.h>

#include "cli/commands.h"

static const rt_option plugin_path_option[] = {
    {.key = "plugin_path",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "Folders to search before all others, separated by ':' as in $PATH; each must exist."},
};

static const rt_option verbose_option[] = {
    {.key = "verbose",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Also print the launch configuration read, the search path, and the modules that a "
             "module of the same name in an earlier folder shadows."},
};

static const rt_option config_file_option[] = {
    {.key = "config_file",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "The launch configuration whose [core] plugin_path is searched (robotrain.conf(5)). "
             "Without it: $XDG_CONFIG_HOME/robotrain/launch.conf, if that exists."},
};

typedef struct subcommand {
    const char *name;
    const char *operands; /* after the name in the usage line */
    const char *summary;
    gboolean verbose; /* takes --verbose */
} subcommand;

static const subcommand subcommands[] = {
    {"list", "", "list every module of the search path, loaded or refused (the default)", TRUE},
    {"show", " NAME", "print one module's descriptor and options", FALSE},
};
#define LIST (&subcommands[0])
#define SHOW (&subcommands[1])

/* Prints a (possibly multi-line) error, each line prefixed. */
static void print_error(const char *message)
{
    g_auto(GStrv) lines = g_strsplit(message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain plugins: %s\n", lines[i]);
}

static const subcommand *find_subcommand(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        if (strcmp(name, subcommands[i].name) == 0)
            return &subcommands[i];
    return NULL;
}

/* The flags of a subcommand. command names it in messages ("robotrain plugins show").
 * Returns (transfer full). */
static rt_config *subcommand_flags(const subcommand *sub, const char *command)
{
    rt_config *cfg = rt_config_new(command);
    GError *error = NULL;
    gboolean ok =
        rt_config_add_options(cfg, NULL, plugin_path_option, G_N_ELEMENTS(plugin_path_option), &error);
    if (ok && sub->verbose)
        ok = rt_config_add_options(cfg, NULL, verbose_option, G_N_ELEMENTS(verbose_option), &error);
    if (ok)
        ok = rt_config_add_options(cfg, NULL, config_file_option, G_N_ELEMENTS(config_file_option), &error);
    if (!ok)
        g_error("robotrain plugins: the option table is malformed: %s", error->message); /* a bug */
    return cfg;
}

/* "robotrain plugins show NAME [--plugin_path=PATH] ..." (list: "[list]").
 * Returns (transfer full). */
static char *usage_of(const subcommand *sub, const rt_config *flags)
{
    g_autofree char *synopsis = rt_config_synopsis(flags);
    if (sub == LIST)
        return g_strdup_printf("robotrain plugins [list] %s", synopsis);
    return g_strdup_printf("robotrain plugins %s%s %s", sub->name, sub->operands, synopsis);
}

static void print_search_order(FILE *out)
{
    g_autofree char *user_folder = g_build_filename(g_get_user_data_dir(), "robotrain", "plugins", NULL);
    fprintf(out,
            "\nFolders are searched in this order; the first module of a name wins:\n"
            "  1. --plugin_path\n"
            "  2. $ROBOTRAIN_PLUGIN_PATH\n"
            "  3. [core] plugin_path of the launch configuration (--config_file)\n"
            "  4. %s\n"
            "  5. %s\n",
            user_folder, RT_PLUGINDIR);
}

static void print_usage(FILE *out)
{
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i], NULL);
        g_autofree char *usage = usage_of(&subcommands[i], flags);
        fprintf(out, "%s %s\n", i ? "   or:" : "usage:", usage);
    }
    fprintf(out, "\n"
                 "Lists the modules robotrain finds (policies, compute backends, comm backends), with\n"
                 "their version, plugin ABI, file and description, and why any of them cannot be\n"
                 "used; or shows one module's descriptor and options. NAME is a module's name (act)\n"
                 "or its file name without extension (policy-act).\n"
                 "\nsubcommands:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        fprintf(out, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i], NULL);
        fprintf(out, "\nrobotrain plugins %s ", subcommands[i].name);
        rt_config_print_help(flags, RT_HELP_STYLE_FLAGS, out);
    }
    print_search_order(out);
    fprintf(out, "\n"
                 "Exit status: 0 when the list (or the module) was printed, even if some modules\n"
                 "were refused; 1 when the module to show is missing or refused, or the launch\n"
                 "configuration is invalid; 2 on a usage error.\n"
                 "See robotrain-plugins(1) and robotrain-plugin(7).\n");
}

/* ---------------------------------------------------------------- the search path */

typedef struct search {
    char *config_file;      /* the launch configuration looked at */
    gboolean config_exists; /* FALSE: the default file is missing, and every key is its default */
    char **folders;         /* the search path */
} search;

static void search_clear(search *s)
{
    g_free(s->config_file);
    g_strfreev(s->folders);
}

/* Reads the launch configuration for its [core] plugin_path and builds the search path.
 * Returns -1 on success, else the exit status (after printing why). */
static int search_init(search *s, const rt_config *flags)
{
    const char *given = rt_config_get_string(flags, "config_file");
    s->config_file = given ? g_strdup(given) : rt_launch_config_default_path();
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    s->config_exists = rt_launch_config_load(lc, s->config_file, &error);
    if (!s->config_exists) {
        gboolean missing = g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND);
        if (missing && !given) /* no file: every key has its default */
            g_clear_error(&error);
        else if (missing) {
            print_error(error->message);
            fprintf(stderr,
                    "robotrain plugins: --config_file names a file that does not exist; write it with\n"
                    "'robotrain config default --config_file=%s', or leave the flag out.\n",
                    s->config_file);
            return RT_EXIT_USAGE;
        } else {
            print_error(error->message);
            fprintf(stderr, "robotrain plugins: its [core] plugin_path is part of the search path: fix the\n"
                            "file (robotrain.conf(5)), or name another with --config_file.\n");
            return RT_EXIT_FAILURE;
        }
    }
    g_auto(GStrv) keyfile_folders = rt_config_get_string_list(lc, "core.plugin_path");
    s->folders = rt_plugin_search_path(rt_config_get_string(flags, "plugin_path"),
                                       (const char *const *)keyfile_folders, &error);
    if (!s->folders) {
        print_error(error->message);
        return RT_EXIT_USAGE;
    }
    return -1;
}

/* ---------------------------------------------------------------- list */

static const char *status_name(rt_plugin_status status)
{
    switch (status) {
    case RT_PLUGIN_LOADED:
        return "loaded";
    case RT_PLUGIN_REFUSED:
        return "refused";
    case RT_PLUGIN_SHADOWED:
        return "shadowed";
    }
    return "?";
}

/* The reason without its leading "<path>: ", which the listing prints on the line above. */
static const char *reason_after_path(const rt_plugin_module *m)
{
    size_t len = strlen(m->path);
    if (strncmp(m->reason, m->path, len) == 0 && m->reason[len] == ':' && m->reason[len + 1] == ' ')
        return m->reason + len + 2;
    return m->reason;
}

/* One line of the listing, without trailing blanks when the description is empty. */
static void print_row(int name_width, int version_width, const char *kind, const char *name,
                      const char *version, const char *abi, const char *status, const char *description)
{
    GString *line = g_string_new(NULL);
    g_string_append_printf(line, "%-8s %-*s  %-*s  %-5s  %-8s  %s", kind, name_width, name, version_width,
                           version, abi, status, description);
    while (line->len && line->str[line->len - 1] == ' ')
        g_string_truncate(line, line->len - 1);
    printf("%s\n", line->str);
    g_string_free(line, TRUE);
}

static void print_search(const search *s)
{
    printf("launch configuration: %s%s\n", s->config_file, s->config_exists ? "" : "  (does not exist)");
    printf("search path:\n");
    for (char **f = s->folders; *f; f++)
        printf("  %s%s\n", *f, g_file_test(*f, G_FILE_TEST_IS_DIR) ? "" : "  (not a folder)");
    printf("\n");
}

static int run_list(rt_plugin_registry *registry, const search *s, gboolean verbose)
{
    if (verbose)
        print_search(s);

    size_t n = 0;
    const rt_plugin_module *const *modules = rt_plugin_registry_list(registry, &n);
    int name_width = (int)strlen("NAME"), version_width = (int)strlen("VERSION");
    size_t loaded = 0, refused = 0, shadowed = 0;
    for (size_t i = 0; i < n; i++) {
        const rt_plugin_module *m = modules[i];
        loaded += m->status == RT_PLUGIN_LOADED;
        refused += m->status == RT_PLUGIN_REFUSED;
        shadowed += m->status == RT_PLUGIN_SHADOWED;
        name_width = MAX(name_width, (int)strlen(m->name));
        if (m->desc && m->desc->version)
            version_width = MAX(version_width, (int)strlen(m->desc->version));
    }
    if (loaded + refused == 0 && (!verbose || shadowed == 0)) {
        printf("no modules found in the search path%s\n",
               verbose ? " above" : " (robotrain plugins --verbose prints it)");
        return RT_EXIT_OK;
    }

    const int indent = 9; /* under NAME */
    print_row(name_width, version_width, "KIND", "NAME", "VERSION", "ABI", "STATUS", "DESCRIPTION");
    for (size_t i = 0; i < n; i++) {
        const rt_plugin_module *m = modules[i];
        if (m->status == RT_PLUGIN_SHADOWED && !verbose)
            continue;
        char abi[32] = "-";
        if (m->abi_major || m->abi_minor)
            g_snprintf(abi, sizeof abi, "%u.%u", (unsigned)m->abi_major, (unsigned)m->abi_minor);
        const char *version = m->desc && m->desc->version ? m->desc->version : "-";
        const char *description = m->desc && m->desc->description ? m->desc->description : "";
        print_row(name_width, version_width, rt_plugin_kind_to_string(m->kind), m->name, version, abi,
                  status_name(m->status), description);
        printf("%*s%s\n", indent, "", m->path);
        if (m->status == RT_PLUGIN_REFUSED)
            printf("%*srefused: %s\n", indent, "", reason_after_path(m));
        else if (m->status == RT_PLUGIN_SHADOWED)
            printf("%*sshadowed by %s\n", indent, "", m->shadowed_by);
    }
    printf("\n%zu loaded, %zu refused", loaded, refused);
    if (verbose)
        printf(", %zu shadowed", shadowed);
    printf(" (plugin ABI %d.%d)\n", RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
    return RT_EXIT_OK;
}

/* ---------------------------------------------------------------- show */

/* The module's options in the format of --help. A policy's are shown as the flags users type
 * (--policy.chunk_size=INT). */
static gboolean print_options(const rt_plugin_desc *d, GError **error)
{
    if (d->n_options == 0) {
        printf("\nno options\n");
        return TRUE;
    }
    g_autoptr(rt_config) cfg = rt_config_new(NULL);
    const char *prefix = d->kind == RT_PLUGIN_POLICY ? "policy" : NULL;
    if (!rt_config_add_options(cfg, prefix, d->options, d->n_options, error))
        return FALSE;
    printf("\n");
    rt_config_print_help(cfg, RT_HELP_STYLE_FLAGS, stdout);
    return TRUE;
}

static int run_show(rt_plugin_registry *registry, const char *name)
{
    GError *error = NULL;
    const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_ANY, name, &error);
    if (!m) {
        print_error(error->message);
        g_error_free(error);
        return RT_EXIT_FAILURE;
    }
    const rt_plugin_desc *d = m->desc;
    const uint32_t *vtable_size = d->vtable;
    printf("%s-%s\n", rt_plugin_kind_to_string(m->kind), m->name);
    printf("  %-12s %s\n", "name", d->name);
    printf("  %-12s %s\n", "kind", rt_plugin_kind_to_string(m->kind));
    printf("  %-12s %s\n", "version", d->version ? d->version : "-");
    printf("  %-12s %s\n", "license", d->license ? d->license : "-");
    printf("  %-12s %s\n", "description", d->description ? d->description : "-");
    printf("  %-12s %u.%u (this robotrain loads %d.%d)\n", "plugin ABI", (unsigned)d->abi_major,
           (unsigned)d->abi_minor, RT_PLUGIN_ABI_MAJOR, RT_PLUGIN_ABI_MINOR);
    printf("  %-12s %u bytes, vtable %u bytes\n", "descriptor", (unsigned)d->struct_size,
           (unsigned)*vtable_size);
    printf("  %-12s %s\n", "file", m->path);
    if (!print_options(d, &error)) { /* the loader checks the table with the same rules */
        fflush(stdout);
        fprintf(stderr, "robotrain plugins: %s: its option table: %s\n", m->path, error->message);
        g_error_free(error);
        return RT_EXIT_FAILURE;
    }
    return RT_EXIT_OK;
}

/* ---------------------------------------------------------------- dispatch */

static int not_a_subcommand(const char *word)
{
    const char *names[G_N_ELEMENTS(subcommands)];
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        names[i] = subcommands[i].name;
    const char *near = rt_suggest_nearest(word, names, G_N_ELEMENTS(names));
    fprintf(stderr, "robotrain plugins: '%s' is neither 'list' nor 'show'.", word);
    if (near)
        fprintf(stderr, " Did you mean '%s'?\nTo see a module, run 'robotrain plugins show %s'.\n", near,
                word);
    else
        fprintf(stderr, " To see a module, run\n'robotrain plugins show %s'.\n", word);
    fprintf(stderr, "See 'robotrain plugins --help'.\n");
    return RT_EXIT_USAGE;
}

/* Parses argv (argv[0] is skipped) with sub's flags; *rest receives the operands.
 * Returns -1 to go on, else the exit status. */
static int parse(const subcommand *sub, const char *command, int argc, char **argv, rt_config **flags,
                 char ***rest)
{
    *flags = subcommand_flags(sub, command);
    g_autoptr(GError) error = NULL;
    if (!rt_config_parse_args(*flags, argc, argv, rest, &error)) {
        print_error(error->message);
        return RT_EXIT_USAGE;
    }
    return -1;
}

int rt_cmd_plugins(int argc, char **argv)
{
    /* "robotrain plugins show NAME ..." or "robotrain plugins [list] ...": the subcommand comes
     * first, or after the flags, or not at all (list). */
    const subcommand *sub = argc >= 2 ? find_subcommand(argv[1]) : NULL;
    gboolean named_first = sub != NULL;
    if (named_first) {
        argc--;
        argv++;
    } else {
        sub = LIST;
    }
    g_autofree char *command =
        named_first ? g_strdup_printf("robotrain plugins %s", sub->name) : g_strdup("robotrain plugins");
    g_autoptr(rt_config) flags = NULL;
    g_auto(GStrv) rest = NULL;
    int status = parse(sub, command, argc, argv, &flags, &rest);
    if (status >= 0)
        return status;

    rt_help_request help = rt_config_help_requested(flags);
    if (help == RT_HELP_TEXT && !named_first) {
        print_usage(stdout);
        return RT_EXIT_OK;
    }
    g_autofree char *usage = usage_of(sub, flags);
    g_autofree char *usage_line =
        g_strdup_printf("usage: %s\n\n%c%s.", usage, g_ascii_toupper(sub->summary[0]), sub->summary + 1);
    if (rt_config_handle_help(flags, usage_line, stdout)) {
        if (help == RT_HELP_TEXT)
            print_search_order(stdout);
        return RT_EXIT_OK;
    }

    char **operands = rest;
    if (!named_first && rest[0]) {
        /* a subcommand after the flags: parse again with its own flags */
        sub = find_subcommand(rest[0]);
        if (!sub)
            return not_a_subcommand(rest[0]);
        g_clear_pointer(&flags, rt_config_free);
        g_clear_pointer(&rest, g_strfreev);
        g_free(command);
        command = g_strdup_printf("robotrain plugins %s", sub->name);
        status = parse(sub, command, argc, argv, &flags, &rest);
        if (status >= 0)
            return status;
        operands = rest + 1; /* rest[0] is the subcommand */
    }

    if (sub == LIST && operands[0]) {
        fprintf(stderr,
                "robotrain plugins: unexpected argument '%s': 'list' takes no module name.\n"
                "See 'robotrain plugins --help'.\n",
                operands[0]);
        return RT_EXIT_USAGE;
    }
    if (sub == SHOW && (!operands[0] || operands[1])) {
        if (!operands[0])
            fprintf(stderr, "robotrain plugins: show needs a module name: robotrain plugins show NAME\n");
        else
            fprintf(stderr, "robotrain plugins: unexpected argument '%s': show takes one module name.\n",
                    operands[1]);
        fprintf(stderr, "See 'robotrain plugins show --help'.\n");
        return RT_EXIT_USAGE;
    }

    search s = {0};
    status = search_init(&s, flags);
    if (status >= 0) {
        search_clear(&s);
        return status;
    }
    GError *error = NULL;
    rt_plugin_registry *registry = rt_plugin_registry_new((const char *const *)s.folders, &error);
    if (!registry) {
        print_error(error->message);
        g_error_free(error);
        search_clear(&s);
        return RT_EXIT_FAILURE;
    }
    status = sub == SHOW ? run_show(registry, operands[0])
                         : run_list(registry, &s, rt_config_get_bool(flags, "verbose"));
    rt_plugin_registry_free(registry);
    search_clear(&s);
    return status;
}
