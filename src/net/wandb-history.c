/* History lines: a row of named values at one step as one flat JSON object, and the summary
 * (the last value of every key), kept as the tokens the lines hold so that reading a line back
 * never changes a value. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "net/wandb-private.h"

const char *rt_wandb_format_number(double value, char buf[32])
{
    if (isnan(value) || isinf(value)) {
        g_strlcpy(buf, isnan(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity", 32);
        return buf;
    }
    if (value == floor(value) && fabs(value) < 1e15)
        return g_ascii_formatd(buf, 32, "%.0f", value);
    /* The fewest digits that read back as the same double, as Python's repr() writes. */
    for (int digits = 1; digits <= 17; digits++) {
        char format[8];
        g_snprintf(format, sizeof format, "%%.%dg", digits);
        g_ascii_formatd(buf, 32, format, value);
        if (g_ascii_strtod(buf, NULL) == value)
            break;
    }
    return buf;
}

void rt_wandb_append_json_string(GString *out, const char *text, gssize len)
{
    if (len < 0)
        len = (gssize)strlen(text);
    g_string_append_c(out, '"');
    for (gssize i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        switch (c) {
        case '"':
            g_string_append(out, "\\\"");
            break;
        case '\\':
            g_string_append(out, "\\\\");
            break;
        case '\n':
            g_string_append(out, "\\n");
            break;
        case '\r':
            g_string_append(out, "\\r");
            break;
        case '\t':
            g_string_append(out, "\\t");
            break;
        default:
            if (c < 0x20 || c == 0x7f)
                g_string_append_printf(out, "\\u%04x", c);
            else
                g_string_append_c(out, (char)c);
        }
    }
    g_string_append_c(out, '"');
}

/* ---------------------------------------------------------------- rows */

void rt_wandb_row_init(rt_wandb_row *row)
{
    memset(row, 0, sizeof *row);
    row->names = g_string_sized_new(256);
    row->offsets = g_array_sized_new(FALSE, FALSE, sizeof(guint), 16);
    row->values = g_array_sized_new(FALSE, FALSE, sizeof(double), 16);
}

void rt_wandb_row_clear(rt_wandb_row *row)
{
    if (row->names)
        g_string_free(row->names, TRUE);
    if (row->offsets)
        g_array_unref(row->offsets);
    if (row->values)
        g_array_unref(row->values);
    memset(row, 0, sizeof *row);
}

void rt_wandb_row_reset(rt_wandb_row *row)
{
    g_string_truncate(row->names, 0);
    g_array_set_size(row->offsets, 0);
    g_array_set_size(row->values, 0);
    row->step = 0;
    row->timestamp = row->runtime = 0;
}

void rt_wandb_row_set(rt_wandb_row *row, const char *name, double value)
{
    for (guint i = 0; i < row->offsets->len; i++) {
        if (strcmp(row->names->str + g_array_index(row->offsets, guint, i), name) == 0) {
            g_array_index(row->values, double, i) = value;
            return;
        }
    }
    guint offset = (guint)row->names->len;
    g_string_append_len(row->names, name, (gssize)strlen(name) + 1);
    g_array_append_val(row->offsets, offset);
    g_array_append_val(row->values, value);
}

void rt_wandb_row_format(const rt_wandb_row *row, GString *out)
{
    char buf[32];
    g_string_append_c(out, '{');
    for (guint i = 0; i < row->offsets->len; i++) {
        rt_wandb_append_json_string(out, row->names->str + g_array_index(row->offsets, guint, i), -1);
        g_string_append_c(out, ':');
        g_string_append(out, rt_wandb_format_number(g_array_index(row->values, double, i), buf));
        g_string_append_c(out, ',');
    }
    g_string_append_printf(out, "\"_step\":%" G_GINT64_FORMAT, row->step);
    g_string_append(out, ",\"_runtime\":");
    g_string_append(out, rt_wandb_format_number(row->runtime, buf));
    g_string_append(out, ",\"_timestamp\":");
    g_string_append(out, rt_wandb_format_number(row->timestamp, buf));
    g_string_append(out, "}\n");
}

/* ---------------------------------------------------------------- the summary */

void rt_wandb_summary_init(rt_wandb_summary *s)
{
    s->index = g_hash_table_new(g_str_hash, g_str_equal);
    s->keys = g_ptr_array_new_with_free_func(g_free);
    s->values = g_ptr_array_new_with_free_func(g_free);
}

void rt_wandb_summary_clear(rt_wandb_summary *s)
{
    if (s->index)
        g_hash_table_destroy(s->index);
    if (s->keys)
        g_ptr_array_unref(s->keys);
    if (s->values)
        g_ptr_array_unref(s->values);
    memset(s, 0, sizeof *s);
}

static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* The end of the JSON string starting at p ('"'), or NULL. */
static const char *string_end(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
        else if ((unsigned char)*p < 0x20)
            return NULL;
    }
    return NULL;
}

/* The end of a scalar value token at p (number, NaN, Infinity, true, false, null), or NULL. */
static const char *scalar_end(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && (g_ascii_isalnum(*q) || *q == '-' || *q == '+' || *q == '.'))
        q++;
    if (q == p)
        return NULL;
    g_autofree char *tok = g_strndup(p, (gsize)(q - p));
    if (strcmp(tok, "true") == 0 || strcmp(tok, "false") == 0 || strcmp(tok, "null") == 0 ||
        strcmp(tok, "NaN") == 0 || strcmp(tok, "Infinity") == 0 || strcmp(tok, "-Infinity") == 0)
        return q;
    char *num_end;
    g_ascii_strtod(tok, &num_end);
    return *num_end == '\0' && (g_ascii_isdigit(tok[0]) || tok[0] == '-') ? q : NULL;
}

gboolean rt_wandb_summary_merge(rt_wandb_summary *s, const char *line, gsize len)
{
    const char *end = line + len;
    const char *p = skip_blanks(line, end);
    if (p == end || *p != '{')
        return FALSE;
    /* First check the whole line, so that a bad line changes nothing. */
    GArray *spans = g_array_new(FALSE, FALSE, sizeof(const char *));
    p = skip_blanks(p + 1, end);
    gboolean ok = TRUE;
    if (p < end && *p == '}') {
        p++;
    } else {
        for (;;) {
            const char *k = p, *k_end = p < end && *p == '"' ? string_end(p, end) : NULL;
            if (!k_end) {
                ok = FALSE;
                break;
            }
            p = skip_blanks(k_end, end);
            if (p == end || *p != ':') {
                ok = FALSE;
                break;
            }
            const char *v = skip_blanks(p + 1, end);
            const char *v_end = v < end && *v == '"' ? string_end(v, end) : scalar_end(v, end);
            if (!v_end) {
                ok = FALSE;
                break;
            }
            g_array_append_val(spans, k);
            g_array_append_val(spans, k_end);
            g_array_append_val(spans, v);
            g_array_append_val(spans, v_end);
            p = skip_blanks(v_end, end);
            if (p < end && *p == ',') {
                p = skip_blanks(p + 1, end);
                continue;
            }
            if (p < end && *p == '}') {
                p++;
                break;
            }
            ok = FALSE;
            break;
        }
    }
    ok = ok && skip_blanks(p, end) == end;
    for (guint i = 0; ok && i < spans->len; i += 4) {
        const char **sp = &g_array_index(spans, const char *, i);
        char *key = g_strndup(sp[0], (gsize)(sp[1] - sp[0]));
        if (strcmp(key, "\"_timestamp\"") == 0) {
            g_free(key);
            continue;
        }
        char *value = g_strndup(sp[2], (gsize)(sp[3] - sp[2]));
        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(s->index, key));
        if (at) {
            g_free(key);
            g_free(s->values->pdata[at - 1]);
            s->values->pdata[at - 1] = value;
        } else {
            g_ptr_array_add(s->keys, key);
            g_ptr_array_add(s->values, value);
            g_hash_table_insert(s->index, key, GUINT_TO_POINTER(s->keys->len));
        }
    }
    g_array_unref(spans);
    return ok;
}

void rt_wandb_summary_format(const rt_wandb_summary *s, GString *out)
{
    g_string_append_c(out, '{');
    for (guint i = 0; i < s->keys->len; i++) {
        if (i)
            g_string_append_c(out, ',');
        g_string_append(out, s->keys->pdata[i]);
        g_string_append_c(out, ':');
        g_string_append(out, s->values->pdata[i]);
    }
    g_string_append_c(out, '}');
}

const char *rt_wandb_summary_lookup(const rt_wandb_summary *s, const char *key)
{
    g_autoptr(GString) raw = g_string_new(NULL);
    rt_wandb_append_json_string(raw, key, -1);
    guint at = GPOINTER_TO_UINT(g_hash_table_lookup(s->index, raw->str));
    return at ? s->values->pdata[at - 1] : NULL;
}
