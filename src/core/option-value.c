/* Option values: parsing text (flags, key files) and JSON nodes into checked values, and writing
 * them back as text. Every failure describes the bad value and what the row allows. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/json-write.h"
#include "core/options-private.h"

/* ---------------------------------------------------------------- descriptions */

static gboolean is_numeric(rt_option_type type)
{
    return type == RT_OPT_INT || type == RT_OPT_FLOAT;
}

/* "1", "0.5" */
static char *format_bound(rt_option_type type, double v)
{
    if (type == RT_OPT_INT)
        return g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v);
    return opt_format_double(v);
}

static void append_range(GString *s, const rt_option *row, rt_option_type type)
{
    if (!(row->flags & RT_OPT_RANGE))
        return;
    g_autofree char *lo = format_bound(type, row->min);
    g_autofree char *hi = format_bound(type, row->max);
    g_string_append_printf(s, " from %s to %s", lo, hi);
}

static void append_choices(GString *s, const char *const *choices)
{
    for (size_t i = 0; choices && choices[i]; i++)
        g_string_append_printf(s, "%s%s", i ? ", " : "", choices[i]);
}

/* What one item (or a scalar) of type may be, singular ("an integer") or plural ("integers"). */
static void append_kind(GString *s, const rt_option *row, rt_option_type type, gboolean plural)
{
    switch (type) {
    case RT_OPT_BOOL:
        g_string_append(s, plural ? "booleans (true or false)" : "true or false");
        return;
    case RT_OPT_INT:
        g_string_append(s, plural ? "integers" : "an integer");
        append_range(s, row, type);
        return;
    case RT_OPT_FLOAT:
        g_string_append(s, plural ? "numbers" : "a number");
        append_range(s, row, type);
        return;
    case RT_OPT_STRING:
        g_string_append(s, plural ? "strings" : "text");
        return;
    case RT_OPT_PATH:
        g_string_append(s, plural ? "paths" : "a path");
        return;
    case RT_OPT_ENUM:
        g_string_append(s, plural ? "values among " : "one of ");
        append_choices(s, row->choices);
        return;
    case RT_OPT_LIST:
        break;
    }
    g_string_append(s, "a list");
}

static const char *null_word(const rt_option *row)
{
    return row->null_text ? row->null_text : "null";
}

char *opt_describe_allowed(const rt_option *row)
{
    GString *s = g_string_new(NULL);
    if (row->type == RT_OPT_LIST) {
        g_string_append(s, "a list of ");
        append_kind(s, row, row->item_type, TRUE);
        g_string_append(s, " (a JSON array such as ");
        g_string_append(s, row->item_type == RT_OPT_INT || row->item_type == RT_OPT_FLOAT
                               ? "[0,1], or 0,1)"
                               : "[\"a\",\"b\"], or a,b)");
    } else {
        append_kind(s, row, row->type, FALSE);
    }
    if (row->flags & RT_OPT_NULLABLE)
        g_string_append_printf(s, ", or %s", null_word(row));
    return g_string_free(s, FALSE);
}

char *opt_metavar(const rt_option *row)
{
    switch (row->type) {
    case RT_OPT_BOOL:
        return g_strdup("true|false");
    case RT_OPT_INT:
        return g_strdup("INT");
    case RT_OPT_FLOAT:
        return g_strdup("FLOAT");
    case RT_OPT_STRING:
        return g_strdup("TEXT");
    case RT_OPT_PATH:
        return g_strdup("PATH");
    case RT_OPT_ENUM: {
        GString *s = g_string_new("{");
        for (size_t i = 0; row->choices && row->choices[i]; i++)
            g_string_append_printf(s, "%s%s", i ? "," : "", row->choices[i]);
        g_string_append_c(s, '}');
        if (s->len > 28) { /* long choice lists go into the help text only */
            g_string_free(s, TRUE);
            return g_strdup("CHOICE");
        }
        return g_string_free(s, FALSE);
    }
    case RT_OPT_LIST: {
        rt_option item = *row;
        item.type = row->item_type;
        g_autofree char *inner = opt_metavar(&item);
        if (inner[0] == '{')
            return g_strdup("[CHOICE,...]");
        return g_strdup_printf("[%s,...]", inner);
    }
    }
    return g_strdup("VALUE");
}

/* ---------------------------------------------------------------- numbers */

char *opt_format_double(double v)
{
    if (isnan(v))
        return g_strdup("NaN");
    if (isinf(v))
        return g_strdup(v < 0 ? "-Infinity" : "Infinity");
    if (v == 0)
        return g_strdup(signbit(v) ? "-0.0" : "0.0");

    /* shortest %e form that reads back exactly */
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int precision = 1; precision <= 17; precision++) {
        char format[16];
        g_snprintf(format, sizeof format, "%%.%de", precision - 1);
        g_ascii_formatd(buf, sizeof buf, format, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    /* buf is [-]D[.DDD]e[+-]XX: split into sign, digits and decimal exponent */
    gboolean negative = buf[0] == '-';
    const char *p = buf + (negative ? 1 : 0);
    char digits[32];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (g_ascii_isdigit(*p) && nd < sizeof digits - 1)
            digits[nd++] = *p;
    digits[nd] = '\0';
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = '\0';
    int exponent = *p == 'e' ? atoi(p + 1) : 0;

    GString *s = g_string_new(negative ? "-" : "");
    if (exponent >= -4 && exponent < 16) { /* positional, as Python's repr */
        if (exponent >= 0) {
            for (int i = 0; i <= exponent; i++)
                g_string_append_c(s, (size_t)i < nd ? digits[i] : '0');
            g_string_append_c(s, '.');
            if ((size_t)exponent + 1 < nd)
                g_string_append(s, digits + exponent + 1);
            else
                g_string_append_c(s, '0');
        } else {
            g_string_append(s, "0.");
            for (int i = 0; i < -exponent - 1; i++)
                g_string_append_c(s, '0');
            g_string_append(s, digits);
        }
    } else {
        g_string_append_c(s, digits[0]);
        if (nd > 1)
            g_string_append_printf(s, ".%s", digits + 1);
        g_string_append_printf(s, "e%c%02d", exponent < 0 ? '-' : '+', ABS(exponent));
    }
    return g_string_free(s, FALSE);
}

/* Strict decimal integer: no blanks, no junk, no overflow. */
static gboolean parse_int(const char *text, gint64 *out, GString *problem)
{
    if (text[0] == '\0' || g_ascii_isspace(text[0])) {
        g_string_append_printf(problem, "'%s' is not an integer", text);
        return FALSE;
    }
    char *end = NULL;
    errno = 0;
    gint64 v = g_ascii_strtoll(text, &end, 10);
    if (end == text || *end != '\0') {
        g_string_append_printf(problem, "'%s' is not an integer", text);
        return FALSE;
    }
    if (errno == ERANGE) {
        g_string_append_printf(problem, "'%s' does not fit in a 64-bit integer", text);
        return FALSE;
    }
    *out = v;
    return TRUE;
}

/* Strict finite decimal number (no hex, no inf/nan, no blanks). */
static gboolean parse_float(const char *text, double *out, GString *problem)
{
    if (text[0] == '\0' || g_ascii_isspace(text[0]) || strpbrk(text, "xX")) {
        g_string_append_printf(problem, "'%s' is not a number", text);
        return FALSE;
    }
    char *end = NULL;
    errno = 0;
    double v = g_ascii_strtod(text, &end);
    if (end == text || *end != '\0') {
        g_string_append_printf(problem, "'%s' is not a number", text);
        return FALSE;
    }
    if (!isfinite(v) || (errno == ERANGE && fabs(v) > 1.0)) {
        g_string_append_printf(problem, "'%s' is not a finite number", text);
        return FALSE;
    }
    *out = v; /* an underflow to a tiny or zero value is accepted */
    return TRUE;
}

static gboolean check_range(const rt_option *row, rt_option_type type, double v, GString *problem)
{
    if (!(row->flags & RT_OPT_RANGE) || (v >= row->min && v <= row->max))
        return TRUE;
    g_autofree char *shown = format_bound(type, v);
    g_string_append_printf(problem, "%s is out of range", shown);
    return FALSE;
}

int opt_parse_bool_word(const char *text)
{
    static const char *const yes[] = {"true", "yes", "1"};
    static const char *const no[] = {"false", "no", "0"};
    for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
        if (g_ascii_strcasecmp(text, yes[i]) == 0)
            return 1;
        if (g_ascii_strcasecmp(text, no[i]) == 0)
            return 0;
    }
    return -1;
}

gboolean opt_is_null_word(const rt_option *row, const char *text)
{
    return strcmp(text, "null") == 0 || (row->null_text && strcmp(text, row->null_text) == 0);
}

/* ---------------------------------------------------------------- scalars */

static void append_expected(GString *problem, const rt_option *row)
{
    g_autofree char *allowed = opt_describe_allowed(row);
    g_string_append_printf(problem, "; expected %s", allowed);
}

static char *expand_path(const char *text)
{
    if (text[0] == '~' && (text[1] == '\0' || text[1] == '/'))
        return g_build_filename(g_get_home_dir(), text + 1, NULL);
    return g_strdup(text);
}

/* One scalar of type (the row's type, or a list's item type) from text; range and choices are
 * the row's. Appends only the specific problem (no "expected"). */
static JsonNode *scalar_from_text(const rt_option *row, rt_option_type type, const char *text,
                                  GString *problem)
{
    switch (type) {
    case RT_OPT_BOOL: {
        int b = opt_parse_bool_word(text);
        if (b < 0) {
            g_string_append_printf(problem, "'%s' is not a boolean", text);
            return NULL;
        }
        return json_node_init_boolean(json_node_alloc(), b);
    }
    case RT_OPT_INT: {
        gint64 v;
        if (!parse_int(text, &v, problem) || !check_range(row, type, (double)v, problem))
            return NULL;
        return json_node_init_int(json_node_alloc(), v);
    }
    case RT_OPT_FLOAT: {
        double v;
        if (!parse_float(text, &v, problem) || !check_range(row, type, v, problem))
            return NULL;
        return json_node_init_double(json_node_alloc(), v);
    }
    case RT_OPT_ENUM: {
        for (size_t i = 0; row->choices && row->choices[i]; i++)
            if (strcmp(text, row->choices[i]) == 0)
                return json_node_init_string(json_node_alloc(), text);
        size_t n = row->choices ? g_strv_length((char **)row->choices) : 0;
        const char *near = rt_suggest_nearest(text, row->choices, n);
        g_string_append_printf(problem, "'%s' is not allowed", text);
        if (near)
            g_string_append_printf(problem, " (did you mean '%s'?)", near);
        return NULL;
    }
    case RT_OPT_STRING:
    case RT_OPT_PATH:
        if (!g_utf8_validate(text, -1, NULL)) {
            g_string_append(problem, "the value is not valid UTF-8");
            return NULL;
        }
        if (type == RT_OPT_PATH) {
            if (text[0] == '\0') {
                g_string_append(problem, "an empty path is not allowed");
                return NULL;
            }
            g_autofree char *expanded = expand_path(text);
            return json_node_init_string(json_node_alloc(), expanded);
        }
        return json_node_init_string(json_node_alloc(), text);
    case RT_OPT_LIST:
        break;
    }
    g_string_append(problem, "lists cannot nest");
    return NULL;
}

/* Short description of a JSON value for messages: a string ("x"), a number (1.5), an object. */
static char *describe_json(JsonNode *node)
{
    switch (JSON_NODE_TYPE(node)) {
    case JSON_NODE_OBJECT:
        return g_strdup("an object");
    case JSON_NODE_ARRAY:
        return g_strdup("an array");
    case JSON_NODE_NULL:
        return g_strdup("null");
    case JSON_NODE_VALUE:
        break;
    }
    GType t = json_node_get_value_type(node);
    if (t == G_TYPE_BOOLEAN)
        return g_strdup(json_node_get_boolean(node) ? "true" : "false");
    if (t == G_TYPE_INT64)
        return g_strdup_printf("the integer %" G_GINT64_FORMAT, json_node_get_int(node));
    if (t == G_TYPE_DOUBLE) {
        g_autofree char *d = opt_format_double(json_node_get_double(node));
        return g_strdup_printf("the number %s", d);
    }
    if (t == G_TYPE_STRING)
        return g_strdup_printf("the string \"%s\"", json_node_get_string(node));
    return g_strdup("a value");
}

static gboolean json_is(JsonNode *node, GType type)
{
    return JSON_NODE_HOLDS_VALUE(node) && json_node_get_value_type(node) == type;
}

/* One scalar of type from a JSON node: JSON types must match (no "100" for an integer). */
static JsonNode *scalar_from_json(const rt_option *row, rt_option_type type, JsonNode *node, GString *problem)
{
    switch (type) {
    case RT_OPT_BOOL:
        if (json_is(node, G_TYPE_BOOLEAN))
            return json_node_copy(node);
        break;
    case RT_OPT_INT:
        if (json_is(node, G_TYPE_INT64)) {
            if (!check_range(row, type, (double)json_node_get_int(node), problem))
                return NULL;
            return json_node_copy(node);
        }
        break;
    case RT_OPT_FLOAT:
        if (json_is(node, G_TYPE_INT64) || json_is(node, G_TYPE_DOUBLE)) {
            double v = json_node_get_double(node); /* converts an int64 */
            if (!isfinite(v)) {                    /* json-glib reads 1e999 as infinity */
                g_string_append(problem, "the number is not finite");
                return NULL;
            }
            if (!check_range(row, type, v, problem))
                return NULL;
            return json_node_init_double(json_node_alloc(), v);
        }
        break;
    case RT_OPT_STRING:
    case RT_OPT_PATH:
    case RT_OPT_ENUM:
        if (json_is(node, G_TYPE_STRING))
            return scalar_from_text(row, type, json_node_get_string(node), problem);
        break;
    case RT_OPT_LIST:
        break;
    }
    g_autofree char *got = describe_json(node);
    g_string_append_printf(problem, "%s is not %s", got,
                           type == RT_OPT_BOOL    ? "a boolean"
                           : type == RT_OPT_INT   ? "an integer"
                           : type == RT_OPT_FLOAT ? "a number"
                           : type == RT_OPT_LIST  ? "a list"
                                                  : "a string");
    return NULL;
}

/* json-glib wraps integers that overflow 64 bits without a word, so the text is checked first:
 * every integer token outside strings must fit. */
gboolean opt_json_check_integers(const char *text, gsize length, GString *problem)
{
    guint line = 1;
    const char *end = text + length;
    for (const char *p = text; p < end; p++) {
        if (*p == '\n') {
            line++;
        } else if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && p + 1 < end)
                    p++;
        } else if (*p == '-' || g_ascii_isdigit(*p)) {
            const char *start = p;
            if (*p == '-')
                p++;
            while (p < end && g_ascii_isdigit(*p))
                p++;
            gboolean integer = !(p < end && (*p == '.' || *p == 'e' || *p == 'E'));
            while (p < end && (g_ascii_isdigit(*p) || strchr(".eE+-", *p)))
                p++;
            gsize n = (gsize)(p - start);
            p--;
            if (!integer || n < 19)
                continue;
            char token[32];
            gboolean overflow = n >= sizeof token;
            if (!overflow) {
                memcpy(token, start, n);
                token[n] = '\0';
                errno = 0;
                (void)g_ascii_strtoll(token, NULL, 10);
                overflow = errno == ERANGE;
            }
            if (overflow) {
                g_string_append_printf(problem,
                                       "line %u: the integer %.*s%s does not fit in a 64-bit integer", line,
                                       (int)MIN(n, 24), start, n > 24 ? "..." : "");
                return FALSE;
            }
        }
    }
    return TRUE;
}

/* ---------------------------------------------------------------- lists */

static JsonNode *list_from_json_array(const rt_option *row, JsonArray *array, const char *shown,
                                      GString *problem)
{
    JsonArray *out = json_array_sized_new(json_array_get_length(array));
    for (guint i = 0; i < json_array_get_length(array); i++) {
        GString *item_problem = g_string_new(NULL);
        JsonNode *item =
            scalar_from_json(row, row->item_type, json_array_get_element(array, i), item_problem);
        if (!item) {
            if (shown)
                g_string_append_printf(problem, "'%s': ", shown);
            g_string_append_printf(problem, "item %u: %s", i + 1, item_problem->str);
            g_string_free(item_problem, TRUE);
            json_array_unref(out);
            return NULL;
        }
        g_string_free(item_problem, TRUE);
        json_array_add_element(out, item);
    }
    JsonNode *node = json_node_init_array(json_node_alloc(), out); /* takes its own reference */
    json_array_unref(out);
    return node;
}

JsonNode *opt_value_from_items(const rt_option *row, char **items, GString *problem)
{
    JsonArray *out = json_array_new();
    for (guint i = 0; items && items[i]; i++) {
        GString *item_problem = g_string_new(NULL);
        JsonNode *item = scalar_from_text(row, row->item_type, items[i], item_problem);
        if (!item) {
            g_string_append_printf(problem, "item %u: %s", i + 1, item_problem->str);
            append_expected(problem, row);
            g_string_free(item_problem, TRUE);
            json_array_unref(out);
            return NULL;
        }
        g_string_free(item_problem, TRUE);
        json_array_add_element(out, item);
    }
    JsonNode *node = json_node_init_array(json_node_alloc(), out);
    json_array_unref(out);
    return node;
}

static JsonNode *list_from_text(const rt_option *row, const char *text, GString *problem)
{
    const char *p = text;
    while (g_ascii_isspace(*p))
        p++;
    if (*p == '[') {
        g_autoptr(JsonParser) parser = json_parser_new_immutable();
        g_autoptr(GError) json_error = NULL;
        GString *overflow = g_string_new(NULL);
        if (!opt_json_check_integers(text, strlen(text), overflow)) {
            g_string_append_printf(problem, "'%s': %s", text, overflow->str + strlen("line 1: "));
            g_string_free(overflow, TRUE);
            append_expected(problem, row);
            return NULL;
        }
        g_string_free(overflow, TRUE);
        if (!json_parser_load_from_data(parser, text, -1, &json_error)) {
            const char *msg = json_error->message;
            if (g_str_has_prefix(msg, "<data>:"))
                msg += strlen("<data>:");
            g_string_append_printf(problem, "'%s' is not a valid JSON list (%s)", text, msg);
            append_expected(problem, row);
            return NULL;
        }
        JsonNode *root = json_parser_get_root(parser);
        if (!root || !JSON_NODE_HOLDS_ARRAY(root)) {
            g_string_append_printf(problem, "'%s' is not a valid JSON list", text);
            append_expected(problem, row);
            return NULL;
        }
        JsonNode *node = list_from_json_array(row, json_node_get_array(root), text, problem);
        if (!node) {
            append_expected(problem, row);
            return NULL;
        }
        return node;
    }
    /* items separated by commas; an empty text is the empty list */
    g_auto(GStrv) items = text[0] ? g_strsplit(text, ",", -1) : g_new0(char *, 1);
    GString *inner = g_string_new(NULL);
    JsonNode *node = opt_value_from_items(row, items, inner);
    if (!node)
        g_string_append_printf(problem, "'%s': %s", text, inner->str);
    g_string_free(inner, TRUE);
    return node;
}

/* ---------------------------------------------------------------- entry points */

JsonNode *opt_value_from_text(const rt_option *row, const char *text, GString *problem)
{
    /* an enum choice or a plain string that happens to be a null word stays itself when the
     * option is not nullable: only "null" on a non-nullable row is refused */
    if (opt_is_null_word(row, text) && (row->flags & RT_OPT_NULLABLE))
        return json_node_init_null(json_node_alloc());
    if (strcmp(text, "null") == 0) {
        g_string_append(problem, "null is not allowed");
        append_expected(problem, row);
        return NULL;
    }
    if (row->type == RT_OPT_LIST)
        return list_from_text(row, text, problem);
    JsonNode *node = scalar_from_text(row, row->type, text, problem);
    if (!node)
        append_expected(problem, row);
    return node;
}

JsonNode *opt_value_from_json(const rt_option *row, JsonNode *node, GString *problem)
{
    if (JSON_NODE_HOLDS_NULL(node)) {
        if (row->flags & RT_OPT_NULLABLE)
            return json_node_init_null(json_node_alloc());
        g_string_append(problem, "null is not allowed");
        append_expected(problem, row);
        return NULL;
    }
    JsonNode *value;
    if (row->type == RT_OPT_LIST) {
        if (!JSON_NODE_HOLDS_ARRAY(node)) {
            g_autofree char *got = describe_json(node);
            g_string_append_printf(problem, "%s is not a list", got);
            append_expected(problem, row);
            return NULL;
        }
        value = list_from_json_array(row, json_node_get_array(node), NULL, problem);
    } else {
        value = scalar_from_json(row, row->type, node, problem);
    }
    if (!value)
        append_expected(problem, row);
    return value;
}

/* Items as text; strings stay raw. */
static char *item_to_text(JsonNode *item)
{
    if (json_is(item, G_TYPE_STRING))
        return g_strdup(json_node_get_string(item));
    if (json_is(item, G_TYPE_INT64))
        return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(item));
    if (json_is(item, G_TYPE_DOUBLE))
        return opt_format_double(json_node_get_double(item));
    if (json_is(item, G_TYPE_BOOLEAN))
        return g_strdup(json_node_get_boolean(item) ? "true" : "false");
    return g_strdup("null");
}

char **opt_value_to_items(const rt_option *row, JsonNode *value)
{
    (void)row;
    JsonArray *array = json_node_get_array(value);
    guint n = json_array_get_length(array);
    char **items = g_new0(char *, n + 1);
    for (guint i = 0; i < n; i++)
        items[i] = item_to_text(json_array_get_element(array, i));
    return items;
}

char *opt_value_to_text(const rt_option *row, JsonNode *value)
{
    if (!value)
        return NULL;
    if (JSON_NODE_HOLDS_NULL(value))
        return g_strdup(null_word(row));
    if (row->type != RT_OPT_LIST)
        return item_to_text(value);
    /* a list as compact JSON, which reads back through the same parser */
    JsonArray *array = json_node_get_array(value);
    GString *s = g_string_new("[");
    for (guint i = 0; i < json_array_get_length(array); i++) {
        JsonNode *item = json_array_get_element(array, i);
        if (i)
            g_string_append_c(s, ',');
        if (json_is(item, G_TYPE_STRING)) {
            rt_json_append_string(s, json_node_get_string(item));
        } else {
            g_autofree char *t = item_to_text(item);
            g_string_append(s, t);
        }
    }
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------- rows */

static gboolean check_key(const char *key)
{
    if (!key || !key[0])
        return FALSE;
    gboolean at_start = TRUE;
    for (const char *p = key; *p; p++) {
        if (*p == '.') {
            if (at_start)
                return FALSE;
            at_start = TRUE;
        } else if (g_ascii_isalnum(*p) || *p == '_' || *p == '-') {
            at_start = FALSE;
        } else {
            return FALSE;
        }
    }
    return !at_start;
}

gboolean opt_check_row(const rt_option *row, const char *key, GError **error)
{
    const char *what = NULL;
    if (!check_key(key))
        what = "the key must be dotted components of letters, digits, '_' and '-'";
    else if (strcmp(key, "help") == 0 || strcmp(key, "dump-options") == 0)
        what = "the key is reserved for --help and --dump-options";
    else if ((unsigned)row->type > RT_OPT_PATH)
        what = "the type is not an rt_option_type";
    else if (!row->help || !row->help[0])
        what = "the option has no help text";
    else if ((row->type == RT_OPT_ENUM || (row->type == RT_OPT_LIST && row->item_type == RT_OPT_ENUM)) &&
             (!row->choices || !row->choices[0]))
        what = "an enum needs choices";
    else if (row->type == RT_OPT_LIST && row->item_type != RT_OPT_INT && row->item_type != RT_OPT_FLOAT &&
             row->item_type != RT_OPT_STRING && row->item_type != RT_OPT_ENUM &&
             row->item_type != RT_OPT_PATH)
        what = "list items must be INT, FLOAT, STRING, ENUM or PATH";
    else if ((row->flags & RT_OPT_RANGE) &&
             !(is_numeric(row->type) || (row->type == RT_OPT_LIST && is_numeric(row->item_type))))
        what = "RT_OPT_RANGE needs a numeric option";
    else if ((row->flags & RT_OPT_RANGE) && !(row->min <= row->max))
        what = "the range is empty (min > max)";
    else if ((row->flags & RT_OPT_CONFIG_FILE) && row->type != RT_OPT_PATH)
        what = "RT_OPT_CONFIG_FILE needs a path option";
    else if (row->null_text && !(row->flags & RT_OPT_NULLABLE))
        what = "null_text needs RT_OPT_NULLABLE";
    else if (!row->default_value && !(row->flags & (RT_OPT_NULLABLE | RT_OPT_REQUIRED)))
        what = "a null default needs RT_OPT_NULLABLE (or RT_OPT_REQUIRED)";
    else if (row->default_value && (row->flags & RT_OPT_REQUIRED))
        what = "a required option has no default";
    if (what) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "option '%s' is malformed: %s",
                    key ? key : "(null)", what);
        return FALSE;
    }
    if (row->default_value) {
        GString *problem = g_string_new(NULL);
        JsonNode *v = opt_value_from_text(row, row->default_value, problem);
        if (!v) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "option '%s' is malformed: its default: %s",
                        key, problem->str);
            g_string_free(problem, TRUE);
            return FALSE;
        }
        json_node_unref(v);
        g_string_free(problem, TRUE);
    }
    return TRUE;
}
