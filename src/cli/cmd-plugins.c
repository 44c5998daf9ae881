/* robotrain plugins: list the modules found in the search path, or show one of them.
 *
 * The flags are parsed here by hand (there are three); the command will move to the shared
 * option tables once they exist. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <robotrain/robotrain.h>
#include <robotrain/plugin-loader.h>

#include "cli/commands.h"

typedef struct plugins_args {
    const char *action;      /* "list" (default) or "show" */
    const char *name;        /* show's module */
    const char *plugin_path; /* --plugin_path, or NULL */
    gboolean verbose;
} plugins_args;

static void print_help(FILE *out)
{
    char *user_folder = g_build_filename(g_get_user_data_dir(), "robotrain", "plugins", NULL);
    fprintf(out,
            "usage: robotrain plugins [list] [--verbose] [--plugin_path=DIR[:DIR...]]\n"
            "       robotrain plugins show NAME [--plugin_path=DIR[:DIR...]]\n"
            "\n"
            "List the modules robotrain finds (policies, compute backends, comm backends), with\n"
            "their version, plugin ABI, file and description, and why any of them cannot be\n"
            "used; or show one module's descriptor and options. NAME is a module's name (act)\n"
            "or its file name without extension (policy-act).\n"
            "\n"
            "  --plugin_path=DIR[:DIR...]  search these folders first\n"
            "  --verbose, -v               also print the search path and the shadowed modules\n"
            "  --help, -h                  print this help\n"
            "\n"
            "Folders are searched in this order, and the first module of a name wins:\n"
            "--plugin_path, $ROBOTRAIN_PLUGIN_PATH, the configuration file's plugin_path,\n"
            "%s, %s.\n"
            "\n"
            "Exit status: 0 when the list (or the module) was printed, even if some modules\n"
            "were refused; 1 when the module to show is missing or refused; 2 on a usage error.\n"
            "See robotrain-plugins(1) and robotrain-plugin(7).\n",
            user_folder, RT_PLUGINDIR);
    g_free(user_folder);
}

static int usage_error(const char *message)
{
    fprintf(stderr, "robotrain plugins: %s\nSee 'robotrain plugins --help'.\n", message);
    return RT_EXIT_USAGE;
}

G_GNUC_PRINTF(1, 2) static int usage_error_about(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    usage_error(message);
    g_free(message);
    return RT_EXIT_USAGE;
}

/* Fills args from argv; returns -1 to go on, or the exit status to return now. */
static int parse_args(int argc, char **argv, plugins_args *args)
{
    static const char path_flag[] = "--plugin_path";
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(stdout);
            return RT_EXIT_OK;
        } else if (strcmp(arg, "--verbose") == 0 || strcmp(arg, "-v") == 0) {
            args->verbose = TRUE;
        } else if (strncmp(arg, path_flag, strlen(path_flag)) == 0 && arg[strlen(path_flag)] == '=') {
            args->plugin_path = arg + strlen(path_flag) + 1;
        } else if (strcmp(arg, path_flag) == 0) {
            if (i + 1 >= argc)
                return usage_error("--plugin_path needs a value: --plugin_path=DIR[:DIR...]");
            args->plugin_path = argv[++i];
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return usage_error_about("unknown option '%s'.", arg);
        } else if (!args->action) {
            args->action = arg;
        } else if (!args->name) {
            args->name = arg;
        } else {
            return usage_error_about("unexpected argument '%s'.", arg);
        }
    }
    if (!args->action)
        args->action = "list";
    if (strcmp(args->action, "list") == 0) {
        if (args->name)
            return usage_error_about("unexpected argument '%s': 'list' takes no module name.", args->name);
    } else if (strcmp(args->action, "show") == 0) {
        if (!args->name)
            return usage_error("show needs a module name: robotrain plugins show NAME");
    } else {
        fprintf(stderr,
                "robotrain plugins: '%s' is neither 'list' nor 'show'. To see a module, run\n"
                "'robotrain plugins show %s'.\nSee 'robotrain plugins --help'.\n",
                args->action, args->action);
        return RT_EXIT_USAGE;
    }
    return -1;
}

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
    g_string_append_printf(line, "%-8s %-*s  %-*s  %-5s  %-8s  %s", kind, name_width, name,
                           version_width, version, abi, status, description);
    while (line->len && line->str[line->len - 1] == ' ')
        g_string_truncate(line, line->len - 1);
    printf("%s\n", line->str);
    g_string_free(line, TRUE);
}

static void print_list(rt_plugin_registry *registry, gboolean verbose)
{
    const char *const *folders = rt_plugin_registry_get_folders(registry);
    if (verbose) {
        printf("search path:\n");
        for (const char *const *f = folders; *f; f++)
            printf("  %s%s\n", *f, g_file_test(*f, G_FILE_TEST_IS_DIR) ? "" : "  (not a folder)");
        printf("\n");
    }

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
        return;
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
}

static const char *type_name(const rt_option *o, char *buf, size_t size)
{
    static const char *const names[] = {
        [RT_OPT_BOOL] = "bool", [RT_OPT_INT] = "int",   [RT_OPT_FLOAT] = "float", [RT_OPT_STRING] = "string",
        [RT_OPT_ENUM] = "enum", [RT_OPT_LIST] = "list", [RT_OPT_PATH] = "path",
    };
    const char *name = (unsigned)o->type < G_N_ELEMENTS(names) ? names[o->type] : "?";
    if (o->type != RT_OPT_LIST)
        return name;
    const char *item = (unsigned)o->item_type < G_N_ELEMENTS(names) ? names[o->item_type] : "?";
    g_snprintf(buf, size, "list[%s]", item);
    return buf;
}

static void append_number(GString *s, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.15g", v));
}

/* What values the option accepts. Returns (transfer full). */
static char *allowed_values(const rt_option *o)
{
    GString *s = g_string_new(NULL);
    if (o->type == RT_OPT_BOOL) {
        g_string_append(s, "true|false");
    } else if (o->type == RT_OPT_ENUM) {
        for (const char *const *c = o->choices; c && *c; c++)
            g_string_append_printf(s, "%s%s", c == o->choices ? "" : "|", *c);
    } else if (o->flags & RT_OPT_RANGE) {
        g_string_append(s, o->type == RT_OPT_LIST ? "items in [" : "[");
        append_number(s, o->min);
        g_string_append(s, ", ");
        append_number(s, o->max);
        g_string_append(s, "]");
    } else {
        static const char *const any[] = {
            [RT_OPT_INT] = "any integer", [RT_OPT_FLOAT] = "any number", [RT_OPT_STRING] = "any text",
            [RT_OPT_LIST] = "any list",   [RT_OPT_PATH] = "a path",
        };
        if ((unsigned)o->type < G_N_ELEMENTS(any) && any[o->type])
            g_string_append(s, any[o->type]);
    }
    if (o->flags & RT_OPT_NULLABLE)
        g_string_append(s, s->len ? " or null" : "null");
    if (!s->len)
        g_string_append(s, "-");
    return g_string_free(s, FALSE);
}

static const char *default_text(const rt_option *o)
{
    if (o->flags & RT_OPT_REQUIRED)
        return "(required)";
    return o->default_value ? (*o->default_value ? o->default_value : "\"\"") : "null";
}

static void print_options(const rt_plugin_desc *desc)
{
    if (desc->n_options == 0) {
        printf("\nno options\n");
        return;
    }
    if (desc->kind == RT_PLUGIN_POLICY)
        printf("\noptions (give them as --policy.KEY=VALUE):\n");
    else
        printf("\noptions:\n");

    size_t n = desc->n_options;
    char **types = g_new0(char *, n), **allowed = g_new0(char *, n);
    int key_w = 3, type_w = 4, default_w = 7, allowed_w = 7;
    for (size_t i = 0; i < n; i++) {
        const rt_option *o = &desc->options[i];
        char buf[32];
        types[i] = g_strdup(type_name(o, buf, sizeof buf));
        allowed[i] = allowed_values(o);
        key_w = MAX(key_w, (int)strlen(o->key));
        type_w = MAX(type_w, (int)strlen(types[i]));
        default_w = MAX(default_w, (int)strlen(default_text(o)));
        allowed_w = MAX(allowed_w, (int)strlen(allowed[i]));
    }
    printf("  %-*s  %-*s  %-*s  %-*s  %s\n", key_w, "KEY", type_w, "TYPE", default_w, "DEFAULT",
           allowed_w, "ALLOWED", "HELP");
    for (size_t i = 0; i < n; i++) {
        const rt_option *o = &desc->options[i];
        printf("  %-*s  %-*s  %-*s  %-*s  %s\n", key_w, o->key, type_w, types[i], default_w,
               default_text(o), allowed_w, allowed[i], o->help ? o->help : "");
        g_free(types[i]);
        g_free(allowed[i]);
    }
    g_free(types);
    g_free(allowed);
}

static void print_module(const rt_plugin_module *m)
{
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
    print_options(d);
}

int rt_cmd_plugins(int argc, char **argv)
{
    plugins_args args = { 0 };
    int status = parse_args(argc, argv, &args);
    if (status >= 0)
        return status;

    GError *error = NULL;
    /* The configuration file's plugin_path joins here once the key-file reader exists. */
    char **folders = rt_plugin_search_path(args.plugin_path, NULL, &error);
    if (!folders) {
        fprintf(stderr, "robotrain plugins: %s\n", error->message);
        g_error_free(error);
        return RT_EXIT_USAGE;
    }
    rt_plugin_registry *registry = rt_plugin_registry_new((const char *const *)folders, &error);
    g_strfreev(folders);
    if (!registry) {
        fprintf(stderr, "robotrain plugins: %s\n", error->message);
        g_error_free(error);
        return RT_EXIT_FAILURE;
    }

    status = RT_EXIT_OK;
    if (strcmp(args.action, "show") == 0) {
        const rt_plugin_module *m = rt_plugin_registry_find(registry, RT_PLUGIN_ANY, args.name, &error);
        if (m) {
            print_module(m);
        } else {
            fprintf(stderr, "robotrain plugins: %s\n", error->message);
            g_error_free(error);
            status = RT_EXIT_FAILURE;
        }
    } else {
        print_list(registry, args.verbose);
    }
    rt_plugin_registry_free(registry);
    return status;
}
