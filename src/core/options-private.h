/* src/core/options-private.h: what the option files of librobotrain share (not installed).
 *
 * An rt_config is a tree (GNode) whose leaves are options and whose inner nodes are groups
 * ("policy", "dataset.image_transforms"); a hash indexes the leaves by full dotted key. Each
 * value is a JsonNode of a fixed shape per type: boolean, int64, double, string (STRING, ENUM,
 * PATH), array of items (LIST), or null. Internal names start with opt_ and are not exported
 * (the library exports ^rt_ only). */
#ifndef ROBOTRAIN_CORE_OPTIONS_PRIVATE_H
#define ROBOTRAIN_CORE_OPTIONS_PRIVATE_H

#include <json-glib/json-glib.h>

#include <robotrain/error.h>
#include <robotrain/option.h>

/* Config files larger than this are refused before they are read. */
#define OPT_MAX_FILE_SIZE (16u << 20)

typedef struct opt_entry {
    char *key;            /* full dotted key */
    const rt_option *row; /* borrowed from the caller's static table */
    JsonNode *value;      /* NULL: unset (a required option not given yet) */
    rt_value_source source;
    char *source_file;     /* with RT_SOURCE_FILE */
    gboolean from_keyfile; /* with RT_SOURCE_FILE: a key file (else JSON) */
} opt_entry;

typedef struct opt_node {
    char *name;       /* this component ("chunk_size"), NULL for the root */
    opt_entry *entry; /* a leaf's option; NULL for a group */
} opt_node;

struct rt_config {
    char *command;      /* "robotrain train", or NULL */
    GNode *root;        /* of opt_node, owned */
    GHashTable *by_key; /* full key -> opt_entry (owned by the tree) */
    GPtrArray *entries; /* opt_entry in declaration order (borrowed) */
    gboolean stop_at_positional;
    rt_help_request help;
};

/* A value to apply once a whole file or command line has been checked. */
typedef struct opt_staged {
    opt_entry *entry;
    JsonNode *value; /* owned */
} opt_staged;

/* Problems found in a file, one line each ("FILE: ..."), reported together. */
typedef struct opt_problems {
    GString *text;  /* NULL until the first problem */
    int first_code; /* RT_ERROR_* of the first problem: the code of the whole error */
} opt_problems;

/* ---- options.c */
void opt_problems_add(opt_problems *p, int code, const char *file, const char *format, ...)
    G_GNUC_PRINTF(4, 5);
/* Moves the problems into error (when there are any) and returns TRUE when there were none. */
gboolean opt_problems_finish(opt_problems *p, GError **error);
opt_entry *opt_lookup(const rt_config *cfg, const char *key);
/* The child of a tree node with that component name, or NULL. */
GNode *opt_child_named(GNode *parent, const char *name);
/* The group node at a dotted path ("policy"), or NULL when it is no group. */
GNode *opt_find_group(const rt_config *cfg, const char *path);
/* Replaces entry's value (takes ownership of value) and records its origin. */
void opt_entry_assign(opt_entry *entry, JsonNode *value, rt_value_source source, const char *file,
                      gboolean from_keyfile);
/* The nearest declared key to name (full-key edit distance, then the last component alone).
 * Returns (transfer none) or NULL. */
const char *opt_suggest_key(const rt_config *cfg, const char *name);
/* Stages: a GPtrArray of opt_staged, freed with g_ptr_array_unref (values included). */
GPtrArray *opt_staged_new(void);
void opt_staged_add(GPtrArray *staged, opt_entry *entry, JsonNode *value);
void opt_staged_apply(GPtrArray *staged, rt_value_source source, const char *file, gboolean from_keyfile);
/* Checks a row before it is declared; key is the full key for messages. */
gboolean opt_check_row(const rt_option *row, const char *key, GError **error);

/* ---- option-value.c: values from text or JSON, and back.
 * The from_* functions return a new value (transfer full) or NULL after appending to problem
 * a description of what is wrong and what is allowed ("'abc' is not an integer; expected an
 * integer from 1 to 10"). */
JsonNode *opt_value_from_text(const rt_option *row, const char *text, GString *problem);
JsonNode *opt_value_from_json(const rt_option *row, JsonNode *node, GString *problem);
/* A LIST from separate item texts (a key file's a;b;c). */
JsonNode *opt_value_from_items(const rt_option *row, char **items, GString *problem);
/* Command-line text of a value. Returns (transfer full). */
char *opt_value_to_text(const rt_option *row, JsonNode *value);
/* Items of a LIST value as text (for key files). Returns (transfer full) a strv. */
char **opt_value_to_items(const rt_option *row, JsonNode *value);
/* "an integer from 1 to 10, or null". Returns (transfer full). */
char *opt_describe_allowed(const rt_option *row);
/* The metavar of --help: "INT", "PATH", "{no,fp16,bf16}", "[INT,...]". Returns (transfer full). */
char *opt_metavar(const rt_option *row);
/* Whether text is one of the words that mean null for row ("null", row->null_text). */
gboolean opt_is_null_word(const rt_option *row, const char *text);
/* Shortest text that reads back as v, in Python's repr style ("0.1", "1e-05", "100.0").
 * Returns (transfer full). */
char *opt_format_double(double v);
/* Fails, describing the first one, when JSON text holds an integer that does not fit in 64 bits
 * (json-glib would wrap it silently). */
gboolean opt_json_check_integers(const char *text, gsize length, GString *problem);
/* A boolean word: 1 true, 0 false, -1 neither. */
int opt_parse_bool_word(const char *text);

/* ---- config-keyfile.c */
/* A value as key-file text, escaped (lists as a;b;). Returns (transfer full), NULL when unset. */
char *opt_value_to_keyfile(const rt_option *row, JsonNode *value);
/* The default as users write it: "29500", "all", "null", "none (required)". Returns (transfer full). */
char *opt_describe_default(const rt_option *row);

/* ---- config-write.c */
/* Writes data to path through a temporary file in the same folder (flushed to disk, then
 * renamed; with overwrite FALSE linked, so an existing file is never replaced). Creates the
 * folder when missing. */
gboolean opt_write_file_atomic(const char *path, const char *data, gsize length, gboolean overwrite,
                               GError **error);
/* Reads a whole config file, refusing files over OPT_MAX_FILE_SIZE. Errors name the file:
 * RT_ERROR_NOT_FOUND, RT_ERROR_IO, RT_ERROR_FORMAT (too large). Returns (transfer full). */
char *opt_read_config_file(const char *path, gsize *length, GError **error);

#endif
