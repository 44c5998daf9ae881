/* Generated help, option listings and value listings, all from the declared rows. */
#include "config.h"

#include <string.h>

#include "core/options-private.h"

#define HELP_COLUMN 32 /* where help text starts */
#define HELP_WIDTH 79  /* where it wraps */

/* The group an entry is listed under: for flags everything before the last dot
 * ("dataset.image_transforms"), for key files the first component ("launch"); "" for none.
 * Returns (transfer full). */
static char *group_of(const opt_entry *e, rt_help_style style)
{
    const char *dot = style == RT_HELP_STYLE_KEYFILE ? strchr(e->key, '.') : strrchr(e->key, '.');
    return dot ? g_strndup(e->key, (gsize)(dot - e->key)) : g_strdup("");
}

/* The option as users write it: "--policy.chunk_size" or "chunk_size" (inside [policy]).
 * Returns (transfer full). */
static char *name_of(const opt_entry *e, rt_help_style style)
{
    if (style == RT_HELP_STYLE_KEYFILE) {
        const char *dot = strchr(e->key, '.');
        return g_strdup(dot ? dot + 1 : e->key);
    }
    return g_strconcat("--", e->key, NULL);
}

/* Groups in order of their first option. Returns (transfer full) a strv. */
static char **ordered_groups(const rt_config *cfg, rt_help_style style)
{
    GPtrArray *groups = g_ptr_array_new();
    for (guint i = 0; i < cfg->entries->len; i++) {
        char *g = group_of(g_ptr_array_index(cfg->entries, i), style);
        gboolean seen = FALSE;
        for (guint j = 0; j < groups->len && !seen; j++)
            seen = strcmp(g_ptr_array_index(groups, j), g) == 0;
        if (seen || (style == RT_HELP_STYLE_KEYFILE && !g[0]))
            g_free(g); /* ungrouped options cannot be in a key file */
        else
            g_ptr_array_add(groups, g);
    }
    /* ungrouped flags first */
    for (guint j = 1; j < groups->len; j++)
        if (!((char *)g_ptr_array_index(groups, j))[0]) {
            gpointer empty = g_ptr_array_steal_index(groups, j);
            g_ptr_array_insert(groups, 0, empty);
        }
    g_ptr_array_add(groups, NULL);
    return (char **)g_ptr_array_free(groups, FALSE);
}

static void wrap(FILE *out, const char *text, size_t column, size_t width)
{
    g_auto(GStrv) words = g_strsplit(text, " ", -1);
    size_t col = column;
    gboolean line_empty = TRUE;
    for (size_t i = 0; words[i]; i++) {
        size_t len = strlen(words[i]);
        if (len == 0)
            continue;
        if (!line_empty && col + 1 + len > width) {
            fprintf(out, "\n%*s", (int)column, "");
            col = column;
            line_empty = TRUE;
        }
        fprintf(out, "%s%s", line_empty ? "" : " ", words[i]);
        col += len + (line_empty ? 0 : 1);
        line_empty = FALSE;
    }
    fputc('\n', out);
}

/* The help text of an entry with what is allowed and the default. Returns (transfer full). */
static char *details(const rt_option *row)
{
    GString *s = g_string_new(row->help);
    g_autofree char *metavar = opt_metavar(row);
    gboolean numeric_range = (row->flags & RT_OPT_RANGE) != 0;
    gboolean hidden_choices = strcmp(metavar, "CHOICE") == 0 || strcmp(metavar, "[CHOICE,...]") == 0;
    if (numeric_range || hidden_choices || row->type == RT_OPT_LIST || (row->flags & RT_OPT_NULLABLE)) {
        g_autofree char *allowed = opt_describe_allowed(row);
        g_string_append_printf(s, " Allowed: %s.", allowed);
    }
    if (row->flags & RT_OPT_REQUIRED) {
        g_string_append(s, " Required.");
    } else if (row->default_value && !row->default_value[0]) {
        g_string_append(s, " Default: \"\" (empty).");
    } else {
        g_autofree char *def = opt_describe_default(row); /* "null" when the default is unset */
        g_string_append_printf(s, " Default: %s.", def);
    }
    return g_string_free(s, FALSE);
}

void rt_config_print_help(const rt_config *cfg, rt_help_style style, FILE *out)
{
    g_return_if_fail(cfg != NULL && out != NULL);
    g_auto(GStrv) groups = ordered_groups(cfg, style);
    for (size_t g = 0; groups[g]; g++) {
        if (g)
            fputc('\n', out);
        if (style == RT_HELP_STYLE_KEYFILE)
            fprintf(out, "[%s]\n", groups[g]);
        else if (!groups[g][0])
            fprintf(out, "options:\n");
        else
            fprintf(out, "%s options (--%s.*):\n", groups[g], groups[g]);
        for (guint i = 0; i < cfg->entries->len; i++) {
            opt_entry *e = g_ptr_array_index(cfg->entries, i);
            g_autofree char *group = group_of(e, style);
            if (strcmp(group, groups[g]) != 0)
                continue;
            g_autofree char *name = name_of(e, style);
            g_autofree char *metavar = opt_metavar(e->row);
            g_autofree char *lead = style == RT_HELP_STYLE_FLAGS && e->row->type == RT_OPT_BOOL
                                        ? g_strdup_printf("  %s[=%s]", name, metavar)
                                        : g_strdup_printf("  %s=%s", name, metavar);
            size_t len = strlen(lead);
            if (len + 2 <= HELP_COLUMN)
                fprintf(out, "%s%*s", lead, (int)(HELP_COLUMN - len), "");
            else
                fprintf(out, "%s\n%*s", lead, HELP_COLUMN, "");
            g_autofree char *text = details(e->row);
            wrap(out, text, HELP_COLUMN, HELP_WIDTH);
        }
    }
}

void rt_config_print_options(const rt_config *cfg, rt_help_style style, FILE *out)
{
    g_return_if_fail(cfg != NULL && out != NULL);
    for (guint i = 0; i < cfg->entries->len; i++) {
        opt_entry *e = g_ptr_array_index(cfg->entries, i);
        g_autofree char *group = group_of(e, style);
        g_autofree char *name = name_of(e, style);
        g_autofree char *def = opt_describe_default(e->row);
        if (style == RT_HELP_STYLE_KEYFILE) {
            if (!group[0])
                continue;
            fprintf(out, "[%s] %s\t%s\t%s\n", group, name, rt_option_type_name(e->row->type), def);
        } else {
            fprintf(out, "%s\t%s\t%s\n", name, rt_option_type_name(e->row->type), def);
        }
    }
}

static const char *source_word(rt_value_source source)
{
    switch (source) {
    case RT_SOURCE_DEFAULT:
        return "default";
    case RT_SOURCE_FILE:
        return "file";
    case RT_SOURCE_ARGS:
        return "command line";
    case RT_SOURCE_PROGRAM:
        return "program";
    }
    return "?";
}

void rt_config_print_values(const rt_config *cfg, rt_help_style style, FILE *out)
{
    g_return_if_fail(cfg != NULL && out != NULL);
    g_auto(GStrv) groups = ordered_groups(cfg, style);
    for (size_t g = 0; groups[g]; g++) {
        if (style == RT_HELP_STYLE_KEYFILE)
            fprintf(out, "%s[%s]\n", g ? "\n" : "", groups[g]);
        for (guint i = 0; i < cfg->entries->len; i++) {
            opt_entry *e = g_ptr_array_index(cfg->entries, i);
            g_autofree char *group = group_of(e, style);
            if (strcmp(group, groups[g]) != 0)
                continue;
            g_autofree char *value = style == RT_HELP_STYLE_KEYFILE ? opt_value_to_keyfile(e->row, e->value)
                                                                    : opt_value_to_text(e->row, e->value);
            g_autofree char *line =
                style == RT_HELP_STYLE_KEYFILE
                    ? g_strdup_printf("%s=%s", e->key + strlen(group) + 1, value ? value : "")
                    : g_strdup_printf("%s=%s", e->key, value ? value : "(unset)");
            size_t len = strlen(line);
            fprintf(out, "%s%*s # %s\n", line, len < 40 ? (int)(40 - len) : 0, "", source_word(e->source));
        }
    }
}

char *rt_config_synopsis(const rt_config *cfg)
{
    g_return_val_if_fail(cfg != NULL, NULL);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < cfg->entries->len; i++) {
        opt_entry *e = g_ptr_array_index(cfg->entries, i);
        g_autofree char *metavar = opt_metavar(e->row);
        gboolean required = (e->row->flags & RT_OPT_REQUIRED) != 0;
        g_string_append_printf(s, "%s%s--%s%s%s%s%s", s->len ? " " : "", required ? "" : "[", e->key,
                               e->row->type == RT_OPT_BOOL ? "[=" : "=", metavar,
                               e->row->type == RT_OPT_BOOL ? "]" : "", required ? "" : "]");
    }
    return g_string_free(s, FALSE);
}

gboolean rt_config_handle_help(const rt_config *cfg, const char *usage, FILE *out)
{
    g_return_val_if_fail(cfg != NULL && out != NULL, FALSE);
    switch (cfg->help) {
    case RT_HELP_NONE:
        return FALSE;
    case RT_HELP_DUMP:
        rt_config_print_options(cfg, RT_HELP_STYLE_FLAGS, out);
        return TRUE;
    case RT_HELP_TEXT:
        break;
    }
    if (usage)
        fprintf(out, "%s\n\n", usage);
    rt_config_print_help(cfg, RT_HELP_STYLE_FLAGS, out);
    return TRUE;
}
