/* Command-line parsing with LeRobot's dotted flags: --a.b=value, --a.b value, --bool_flag. */
#include "config.h"

#include <string.h>

#include "core/options-private.h"

static gboolean is_dashdash(const char *arg)
{
    return strcmp(arg, "--") == 0;
}

static gboolean looks_like_flag(const char *arg)
{
    return arg[0] == '-' && arg[1] == '-' && arg[2] != '\0';
}

/* "-5" or "-0.5" is a value, not a short option. */
static gboolean looks_like_number(const char *arg)
{
    const char *p = arg[0] == '-' ? arg + 1 : arg;
    return g_ascii_isdigit(p[0]) || (p[0] == '.' && g_ascii_isdigit(p[1]));
}

/* --name=value: returns (transfer full) the name; *value points into arg after '=', or NULL. */
static char *split_flag(const char *arg, const char **value)
{
    const char *start = arg + 2;
    const char *eq = strchr(start, '=');
    *value = eq ? eq + 1 : NULL;
    return eq ? g_strndup(start, (gsize)(eq - start)) : g_strdup(start);
}

/* Whether --name (written without =value) takes the next argument as its value: any argument
 * that is not itself a flag, and for a boolean only a boolean word (so that `--force show`
 * stays a flag and a positional argument). */
static gboolean takes_next(const opt_entry *e, const char *next)
{
    if (!e || !next || is_dashdash(next) || looks_like_flag(next))
        return FALSE;
    if (e->row->type == RT_OPT_BOOL)
        return opt_parse_bool_word(next) >= 0;
    return TRUE;
}

/* Looks for --help, -h or --dump-options where the parser would see an option: before --,
 * not as another flag's value, and (when positional arguments end the options) before the
 * first of them. */
static rt_help_request scan_help(const rt_config *cfg, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_dashdash(a))
            break;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return RT_HELP_TEXT;
        if (strcmp(a, "--dump-options") == 0)
            return RT_HELP_DUMP;
        if (looks_like_flag(a)) {
            const char *value;
            g_autofree char *name = split_flag(a, &value);
            if (!value && i + 1 < argc && takes_next(opt_lookup(cfg, name), argv[i + 1]))
                i++;
            continue;
        }
        if (a[0] == '-' && a[1] != '\0' && !looks_like_number(a))
            continue; /* a bad short option: the parse reports it */
        if (cfg->stop_at_positional)
            break;
    }
    return RT_HELP_NONE;
}

static void append_see_help(GString *s, const rt_config *cfg)
{
    if (cfg->command)
        g_string_append_printf(s, " See '%s --help' for the options.", cfg->command);
    else
        g_string_append(s, " See --help for the options.");
}

/* The first option inside group, as an example. */
static const char *first_key_in(GNode *group)
{
    for (GNode *n = group; n; n = n->children) {
        opt_node *on = n->data;
        if (on->entry)
            return on->entry->key;
    }
    return NULL;
}

static void set_unknown_error(const rt_config *cfg, const char *name, const char *shown, GError **error)
{
    GString *s = g_string_new(NULL);
    GNode *group = opt_find_group(cfg, name);
    const char *example = group ? first_key_in(group) : NULL;
    if (example) {
        g_string_append_printf(
            s, "'%s' is a group of options, not an option: give one of its keys, such as --%s.", shown,
            example);
    } else {
        g_string_append_printf(s, "unknown option '%s'.", shown);
        const char *near = opt_suggest_key(cfg, name);
        if (near)
            g_string_append_printf(s, " Did you mean '--%s'?", near);
    }
    append_see_help(s, cfg);
    g_set_error_literal(error, RT_ERROR, RT_ERROR_UNKNOWN_OPTION, s->str);
    g_string_free(s, TRUE);
}

static char **take_strv(GPtrArray *args)
{
    g_ptr_array_add(args, NULL);
    return (char **)g_ptr_array_free(args, FALSE);
}

gboolean rt_config_parse_args(rt_config *cfg, int argc, char **argv, char ***rest, GError **error)
{
    g_return_val_if_fail(cfg != NULL && argc >= 0 && (argc == 0 || argv != NULL), FALSE);
    if (rest)
        *rest = NULL;

    cfg->help = scan_help(cfg, argc, argv);
    if (cfg->help != RT_HELP_NONE) {
        if (rest)
            *rest = g_new0(char *, 1);
        return TRUE;
    }

    g_autoptr(GPtrArray) staged = opt_staged_new();
    g_autoptr(GPtrArray) positional = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *config_file = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_dashdash(a)) {
            for (int j = i + 1; j < argc; j++)
                g_ptr_array_add(positional, g_strdup(argv[j]));
            break;
        }
        if (looks_like_flag(a)) {
            const char *value;
            g_autofree char *name = split_flag(a, &value);
            g_autofree char *shown = g_strconcat("--", name, NULL);
            opt_entry *e = opt_lookup(cfg, name);
            if (!e) {
                set_unknown_error(cfg, name, shown, error);
                return FALSE;
            }
            if (!value) {
                if (i + 1 < argc && takes_next(e, argv[i + 1])) {
                    value = argv[++i];
                } else if (e->row->type == RT_OPT_BOOL) {
                    value = "true";
                } else {
                    g_autofree char *allowed = opt_describe_allowed(e->row);
                    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                                "%s needs a value (%s): write %s=VALUE or %s VALUE", shown, allowed, shown,
                                shown);
                    return FALSE;
                }
            }
            GString *problem = g_string_new(NULL);
            JsonNode *node = opt_value_from_text(e->row, value, problem);
            if (!node) {
                g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %s", shown, problem->str);
                g_string_free(problem, TRUE);
                return FALSE;
            }
            g_string_free(problem, TRUE);
            if (e->row->flags & RT_OPT_CONFIG_FILE) {
                g_free(config_file);
                config_file = JSON_NODE_HOLDS_NULL(node) ? NULL : g_strdup(json_node_get_string(node));
            }
            opt_staged_add(staged, e, node);
            continue;
        }
        if (a[0] == '-' && a[1] != '\0' && !looks_like_number(a)) {
            GString *s = g_string_new(NULL);
            g_string_append_printf(s, "unknown option '%s': options start with two dashes.", a);
            const char *near = opt_suggest_key(cfg, a + 1);
            if (near)
                g_string_append_printf(s, " Did you mean '--%s'?", near);
            append_see_help(s, cfg);
            g_set_error_literal(error, RT_ERROR, RT_ERROR_UNKNOWN_OPTION, s->str);
            g_string_free(s, TRUE);
            return FALSE;
        }
        if (!rest) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "unexpected argument '%s': %s takes options only (--key=value).", a,
                        cfg->command ? cfg->command : "this command");
            return FALSE;
        }
        if (cfg->stop_at_positional) {
            for (int j = i; j < argc; j++)
                g_ptr_array_add(positional, g_strdup(argv[j]));
            break;
        }
        g_ptr_array_add(positional, g_strdup(a));
    }

    /* the whole config from its file first, then the flags on top, in order */
    if (config_file && !rt_config_load_json(cfg, config_file, error))
        return FALSE;
    opt_staged_apply(staged, RT_SOURCE_ARGS, NULL, FALSE);
    if (!rt_config_check_required(cfg, error))
        return FALSE;
    if (rest)
        *rest = take_strv(g_steal_pointer(&positional));
    return TRUE;
}

char *rt_config_peek_arg(int argc, char **argv, const char *key)
{
    g_return_val_if_fail(key != NULL, NULL);
    const char *found = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_dashdash(a))
            break;
        if (!looks_like_flag(a))
            continue;
        const char *value;
        g_autofree char *name = split_flag(a, &value);
        if (strcmp(name, key) != 0)
            continue;
        if (value)
            found = value;
        else if (i + 1 < argc && !looks_like_flag(argv[i + 1]) && !is_dashdash(argv[i + 1]))
            found = argv[++i];
        else
            found = NULL;
    }
    return g_strdup(found);
}
