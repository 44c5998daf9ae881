/* A strict JSON tokenizer for safetensors headers (internal).
 *
 * The header is untrusted input of up to 100 MB. json-glib 1.6 is unfit for it: its recursive
 * parser overflows the stack on deeply nested arrays, it keeps only the last of duplicate keys,
 * wraps integers above 2^63, truncates strings at \u0000 and accepts comments, hex and
 * single-quoted names. The header has a fixed shape (objects of strings and integer arrays,
 * never nested deeper than three levels), so the reader walks it with this tokenizer instead:
 * RFC 8259 syntax exactly, no recursion, no allocation besides one reused string buffer.
 *
 * Errors are RT_ERROR_FORMAT with "invalid header JSON at byte N: ..."; the caller prefixes the
 * file and the tensor or key it was reading. */
#ifndef ROBOTRAIN_SAFETENSORS_JSON_H
#define ROBOTRAIN_SAFETENSORS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

typedef enum {
    ST_JSON_OBJECT,
    ST_JSON_ARRAY,
    ST_JSON_STRING,
    ST_JSON_NUMBER,
    ST_JSON_BOOL,
    ST_JSON_NULL,
    ST_JSON_INVALID, /* a character no JSON value starts with */
    ST_JSON_END,     /* nothing but whitespace left */
} st_json_kind;

typedef struct st_json {
    const char *start; /* the header */
    const char *p;     /* the next character */
    const char *end;
    GString *text; /* the last string read, decoded (valid UTF-8, no NUL) */
} st_json;

/* text must be valid UTF-8 (the caller checked). The lexer owns json->text: st_json_clear(). */
void st_json_init(st_json *json, const char *text, size_t length);
void st_json_clear(st_json *json);

/* Skips whitespace and says what comes next, without consuming it. */
st_json_kind st_json_peek(st_json *json);
/* "an object", "a number", ... for messages. */
const char *st_json_kind_name(st_json_kind kind);

/* Skips whitespace; consumes c when it comes next and returns TRUE, else returns FALSE and
 * consumes nothing. */
gboolean st_json_accept(st_json *json, char c);
/* Skips whitespace and consumes c, or fails saying that what was expected is missing. */
gboolean st_json_expect(st_json *json, char c, const char *what, GError **error);
/* After a member or element: consumes ',' (TRUE, *more = TRUE) or close (TRUE, *more = FALSE),
 * else fails. */
gboolean st_json_next(st_json *json, char close, gboolean *more, GError **error);
/* Reads a string into json->text. */
gboolean st_json_string(st_json *json, GError **error);
/* Reads a number that must be an integer in [0, 2^64 - 1]; a negative, fractional or too large
 * number is an error that says so. */
gboolean st_json_uint(st_json *json, uint64_t *value, GError **error);
/* Fails unless only whitespace remains. */
gboolean st_json_finish(st_json *json, GError **error);

#endif
