/* A strict JSON tokenizer for safetensors headers: see safetensors-json.h for why. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>

#include "core/safetensors-json.h"

void st_json_init(st_json *json, const char *text, size_t length)
{
    json->start = text;
    json->p = text;
    json->end = text + length;
    json->text = g_string_sized_new(64);
}

void st_json_clear(st_json *json)
{
    if (json->text)
        g_string_free(json->text, TRUE);
    json->text = NULL;
}

static size_t position(const st_json *json)
{
    return (size_t)(json->p - json->start);
}

/* Describes the character at the cursor for a message: 'x', byte 0x07, or the end. */
static void describe_here(const st_json *json, char *buf, size_t size)
{
    if (json->p >= json->end) {
        g_strlcpy(buf, "the end of the header", size);
        return;
    }
    unsigned char c = (unsigned char)*json->p;
    if (c >= 0x20 && c < 0x7f)
        g_snprintf(buf, size, "'%c'", c);
    else
        g_snprintf(buf, size, "byte 0x%02x", c);
}

G_GNUC_PRINTF(3, 4)
static gboolean syntax_error(const st_json *json, GError **error, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *what = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "invalid header JSON at byte %zu: %s", position(json),
                what);
    g_free(what);
    return FALSE;
}

static void skip_whitespace(st_json *json)
{
    while (json->p < json->end &&
           (*json->p == ' ' || *json->p == '\t' || *json->p == '\n' || *json->p == '\r'))
        json->p++;
}

st_json_kind st_json_peek(st_json *json)
{
    skip_whitespace(json);
    if (json->p >= json->end)
        return ST_JSON_END;
    switch (*json->p) {
    case '{':
        return ST_JSON_OBJECT;
    case '[':
        return ST_JSON_ARRAY;
    case '"':
        return ST_JSON_STRING;
    case 't':
    case 'f':
        return ST_JSON_BOOL;
    case 'n':
        return ST_JSON_NULL;
    case '-':
        return ST_JSON_NUMBER;
    default:
        return g_ascii_isdigit(*json->p) ? ST_JSON_NUMBER : ST_JSON_INVALID;
    }
}

const char *st_json_kind_name(st_json_kind kind)
{
    switch (kind) {
    case ST_JSON_OBJECT:
        return "an object";
    case ST_JSON_ARRAY:
        return "an array";
    case ST_JSON_STRING:
        return "a string";
    case ST_JSON_NUMBER:
        return "a number";
    case ST_JSON_BOOL:
        return "a boolean";
    case ST_JSON_NULL:
        return "null";
    case ST_JSON_END:
        return "nothing (the header ends)";
    case ST_JSON_INVALID:
        break;
    }
    return "not a JSON value";
}

gboolean st_json_accept(st_json *json, char c)
{
    skip_whitespace(json);
    if (json->p < json->end && *json->p == c) {
        json->p++;
        return TRUE;
    }
    return FALSE;
}

gboolean st_json_expect(st_json *json, char c, const char *what, GError **error)
{
    if (st_json_accept(json, c))
        return TRUE;
    char here[32];
    describe_here(json, here, sizeof here);
    return syntax_error(json, error, "expected %s, found %s", what, here);
}

gboolean st_json_next(st_json *json, char close, gboolean *more, GError **error)
{
    if (st_json_accept(json, ',')) {
        *more = TRUE;
        return TRUE;
    }
    if (st_json_accept(json, close)) {
        *more = FALSE;
        return TRUE;
    }
    char here[32];
    describe_here(json, here, sizeof here);
    return syntax_error(json, error, "expected ',' or '%c', found %s", close, here);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Reads the 4 hex digits after "\u"; json->p is on the first digit. */
static gboolean read_hex4(st_json *json, uint32_t *unit, GError **error)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = json->p < json->end ? hex_value(*json->p) : -1;
        if (d < 0)
            return syntax_error(json, error, "\\u must be followed by 4 hex digits");
        v = v * 16 + (uint32_t)d;
        json->p++;
    }
    *unit = v;
    return TRUE;
}

static gboolean read_escape(st_json *json, GError **error)
{
    /* json->p is on the character after the backslash */
    if (json->p >= json->end)
        return syntax_error(json, error, "unterminated string");
    char c = *json->p++;
    switch (c) {
    case '"':
    case '\\':
    case '/':
        g_string_append_c(json->text, c);
        return TRUE;
    case 'b':
        g_string_append_c(json->text, '\b');
        return TRUE;
    case 'f':
        g_string_append_c(json->text, '\f');
        return TRUE;
    case 'n':
        g_string_append_c(json->text, '\n');
        return TRUE;
    case 'r':
        g_string_append_c(json->text, '\r');
        return TRUE;
    case 't':
        g_string_append_c(json->text, '\t');
        return TRUE;
    case 'u':
        break;
    default:
        json->p--;
        return syntax_error(json, error, "invalid escape '\\%c' in a string", g_ascii_isprint(c) ? c : '?');
    }

    uint32_t unit;
    if (!read_hex4(json, &unit, error))
        return FALSE;
    if (unit >= 0xdc00 && unit <= 0xdfff)
        return syntax_error(json, error, "lone low surrogate \\u%04x in a string", unit);
    if (unit >= 0xd800 && unit <= 0xdbff) {
        uint32_t low;
        if (json->end - json->p < 2 || json->p[0] != '\\' || json->p[1] != 'u')
            return syntax_error(json, error, "high surrogate \\u%04x not followed by a low one", unit);
        json->p += 2;
        if (!read_hex4(json, &low, error))
            return FALSE;
        if (low < 0xdc00 || low > 0xdfff)
            return syntax_error(json, error,
                                "high surrogate \\u%04x followed by \\u%04x, not a low surrogate", unit, low);
        unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
    }
    if (unit == 0)
        return syntax_error(json, error, "a string contains \\u0000, which robotrain cannot represent");
    g_string_append_unichar(json->text, (gunichar)unit);
    return TRUE;
}

gboolean st_json_string(st_json *json, GError **error)
{
    skip_whitespace(json);
    if (json->p >= json->end || *json->p != '"') {
        char here[32];
        describe_here(json, here, sizeof here);
        return syntax_error(json, error, "expected a string, found %s", here);
    }
    json->p++;
    g_string_truncate(json->text, 0);
    for (;;) {
        const char *run = json->p;
        /* copy the run of plain bytes in one go (the header is valid UTF-8 already) */
        while (json->p < json->end && *json->p != '"' && *json->p != '\\' && (unsigned char)*json->p >= 0x20)
            json->p++;
        g_string_append_len(json->text, run, json->p - run);
        if (json->p >= json->end)
            return syntax_error(json, error, "unterminated string");
        char c = *json->p;
        if (c == '"') {
            json->p++;
            return TRUE;
        }
        if (c != '\\')
            return syntax_error(json, error, "control character 0x%02x inside a string (must be escaped)",
                                (unsigned)c);
        json->p++;
        if (!read_escape(json, error))
            return FALSE;
    }
}

gboolean st_json_uint(st_json *json, uint64_t *value, GError **error)
{
    skip_whitespace(json);
    const char *begin = json->p;
    gboolean negative = FALSE;
    if (json->p < json->end && *json->p == '-') {
        negative = TRUE;
        json->p++;
    }
    if (json->p >= json->end || !g_ascii_isdigit(*json->p)) {
        char here[32];
        describe_here(json, here, sizeof here);
        return syntax_error(json, error, "expected a number, found %s", here);
    }
    if (*json->p == '0' && json->p + 1 < json->end && g_ascii_isdigit(json->p[1]))
        return syntax_error(json, error, "numbers must not have leading zeros");

    uint64_t v = 0;
    gboolean overflow = FALSE;
    while (json->p < json->end && g_ascii_isdigit(*json->p)) {
        unsigned digit = (unsigned)(*json->p - '0');
        if (v > (UINT64_MAX - digit) / 10)
            overflow = TRUE;
        else
            v = v * 10 + digit;
        json->p++;
    }
    gboolean fraction = FALSE;
    if (json->p < json->end && *json->p == '.') {
        fraction = TRUE;
        json->p++;
        if (json->p >= json->end || !g_ascii_isdigit(*json->p))
            return syntax_error(json, error, "a digit must follow the decimal point");
        while (json->p < json->end && g_ascii_isdigit(*json->p))
            json->p++;
    }
    if (json->p < json->end && (*json->p == 'e' || *json->p == 'E')) {
        fraction = TRUE;
        json->p++;
        if (json->p < json->end && (*json->p == '+' || *json->p == '-'))
            json->p++;
        if (json->p >= json->end || !g_ascii_isdigit(*json->p))
            return syntax_error(json, error, "a digit must follow the exponent");
        while (json->p < json->end && g_ascii_isdigit(*json->p))
            json->p++;
    }

    ptrdiff_t total = json->p - begin;
    int length = (int)MIN(total, 40);
    if (fraction) {
        json->p = begin;
        return syntax_error(json, error, "%.*s is not an integer", length, begin);
    }
    if (negative && v != 0) {
        json->p = begin;
        return syntax_error(json, error, "%.*s is negative", length, begin);
    }
    if (overflow) {
        json->p = begin;
        return syntax_error(json, error, "%.*s%s is too large (more than 2^64 - 1)", length, begin,
                            total > 40 ? "..." : "");
    }
    *value = v;
    return TRUE;
}

gboolean st_json_finish(st_json *json, GError **error)
{
    skip_whitespace(json);
    if (json->p < json->end) {
        char here[32];
        describe_here(json, here, sizeof here);
        return syntax_error(json, error, "unexpected %s after the header object (only spaces may follow)",
                            here);
    }
    return TRUE;
}
