/* robotrain/option.h: typed option tables.
 *
 * Every option is declared once, in a table of rt_option rows; that table drives command-line
 * parsing (LeRobot's dotted flags: --policy.chunk_size=100), --help, JSON config files, defaults,
 * validation, and the man-page check. The core's own commands and every policy plugin use the
 * same rows: a plugin's table is relative to its group ("chunk_size"), the core prefixes it
 * ("policy.chunk_size").
 *
 * Values are held in an rt_config: a tree of typed values keyed by dotted path, filled from the
 * defaults, then from a JSON file, then from flags. */
#ifndef ROBOTRAIN_OPTION_H
#define ROBOTRAIN_OPTION_H

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
    RT_OPT_BOOL,   /* true/false */
    RT_OPT_INT,    /* 64-bit signed */
    RT_OPT_FLOAT,  /* double */
    RT_OPT_STRING, /* any text */
    RT_OPT_ENUM,   /* one of choices[] */
    RT_OPT_LIST,   /* a JSON array of item_type values: [0,1,2] or ["a","b"] */
    RT_OPT_PATH,   /* a file-system path (expanded: ~ and relative to the cwd) */
} rt_option_type;

enum {
    RT_OPT_NULLABLE = 1u << 0, /* "null" is a valid value (Python's None); default_value NULL means null */
    RT_OPT_REQUIRED = 1u << 1, /* must be given: no usable default */
    RT_OPT_RANGE = 1u << 2,    /* numeric value (or list items) must lie in [min, max] */
};

typedef struct rt_option {
    const char *key;           /* dotted name without "--", e.g. "dataset.root" or "chunk_size" */
    rt_option_type type;
    const char *default_value; /* as it would be written on the command line; NULL = null */
    const char *help;          /* one sentence for --help and the man page */
    const char *const *choices;/* RT_OPT_ENUM: NULL-terminated list of allowed values */
    rt_option_type item_type;  /* RT_OPT_LIST: type of each item (INT, FLOAT or STRING) */
    double min, max;           /* with RT_OPT_RANGE */
    uint32_t flags;            /* RT_OPT_* flags above */
} rt_option;

/* A set of option values. Opaque; created with rt_config_new(). */
typedef struct rt_config rt_config;

G_END_DECLS

#endif
