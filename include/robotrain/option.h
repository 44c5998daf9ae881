/* robotrain/option.h: typed option tables and the configurations they describe.
 *
 * Every option is declared once, in a table of rt_option rows; that table drives command-line
 * parsing (LeRobot's dotted flags: --policy.chunk_size=100), --help, JSON config files, GLib key
 * files, defaults, validation, and the man-page check. The core's own commands and every policy
 * plugin use the same rows: a plugin's table is relative to its group ("chunk_size"), the core
 * prefixes it ("policy.chunk_size").
 *
 * Values are held in an rt_config: a tree of typed values keyed by dotted path, filled from the
 * defaults, then from a file (JSON or key file), then from flags. A typical command:
 *
 *     g_autoptr(rt_config) cfg = rt_config_new("robotrain train");
 *     if (!rt_config_add_options(cfg, NULL, train_options, G_N_ELEMENTS(train_options), &error) ||
 *         !rt_config_parse_args(cfg, argc, argv, NULL, &error))
 *         ... print error->message, exit 2 ...
 *     if (rt_config_handle_help(cfg, "usage: robotrain train [--option=value ...]", stdout))
 *         ... exit 0 ...
 *     gint64 steps = rt_config_get_int(cfg, "steps");
 *
 * Text syntax of values, on the command line and in key files (robotrain(1), OPTION SYNTAX):
 *   bool    true/false (also yes/no, 1/0; any case); a bare --flag means true
 *   int     a decimal 64-bit integer; float: a finite decimal number (1e-5 allowed)
 *   enum    exactly one of choices[]
 *   list    a JSON array ([0,1] or ["a","b"]) or items separated by commas (0,1); in key files
 *           also GLib's list syntax (0;1;)
 *   path    text; a leading ~ is the home folder; a relative path stays relative (to the cwd)
 *   null    "null" (or the row's null_text, e.g. "all"), only for RT_OPT_NULLABLE rows */
#ifndef ROBOTRAIN_OPTION_H
#define ROBOTRAIN_OPTION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    RT_OPT_BOOL,   /* true/false */
    RT_OPT_INT,    /* 64-bit signed */
    RT_OPT_FLOAT,  /* double, finite */
    RT_OPT_STRING, /* any text */
    RT_OPT_ENUM,   /* one of choices[] */
    RT_OPT_LIST,   /* an array of item_type values: [0,1,2] or ["a","b"] */
    RT_OPT_PATH,   /* a file-system path (a leading ~ is expanded) */
} rt_option_type;

enum {
    RT_OPT_NULLABLE = 1u << 0,    /* "null" is a valid value (Python's None); default_value NULL means null */
    RT_OPT_REQUIRED = 1u << 1,    /* must be given: no usable default (default_value is NULL) */
    RT_OPT_RANGE = 1u << 2,       /* numeric value (or list items) must lie in [min, max] */
    RT_OPT_CONFIG_FILE = 1u << 3, /* RT_OPT_PATH only: names a JSON file holding a whole config that
                                   * rt_config_parse_args() loads before applying the other flags
                                   * (LeRobot's --config_path); never read from or written to JSON */
};

typedef struct rt_option {
    const char *key; /* dotted name without "--", e.g. "dataset.root" or "chunk_size";
                      * components are [A-Za-z0-9_-]+ */
    rt_option_type type;
    const char *default_value;  /* as it would be written on the command line; NULL = null (or unset
                                 * with RT_OPT_REQUIRED) */
    const char *help;           /* one sentence for --help, key-file comments and the man page */
    const char *const *choices; /* RT_OPT_ENUM, or a list of RT_OPT_ENUM: NULL-terminated choices */
    rt_option_type item_type;   /* RT_OPT_LIST: type of each item (INT, FLOAT, STRING, ENUM or PATH) */
    double min, max;            /* with RT_OPT_RANGE (for INT, FLOAT and lists of them) */
    uint32_t flags;             /* RT_OPT_* flags above */
    const char *null_text;      /* with RT_OPT_NULLABLE: the word users write for null, e.g. "all" or
                                 * "auto" (also accepted: "null"); NULL means "null" */
    const void *reserved[2];    /* zero: room for fields added in later ABI minors */
} rt_option;

/* The name of a type as --help and the man pages write it: "bool", "int", "float", "string",
 * "enum", "list", "path". Returns (transfer none) a static string. */
const char *rt_option_type_name(rt_option_type type);

/* ---------------------------------------------------------------- the configuration */

/* A set of option values. Opaque; created with rt_config_new(). */
typedef struct rt_config rt_config;

/* Where a value came from. */
typedef enum {
    RT_SOURCE_DEFAULT, /* the row's default_value (or unset, for a required option not given) */
    RT_SOURCE_FILE,    /* a JSON or key file; rt_config_get_source_file() names it */
    RT_SOURCE_ARGS,    /* a command-line flag */
    RT_SOURCE_PROGRAM, /* rt_config_set() */
} rt_value_source;

/* A new configuration without options. command names the program in messages, e.g.
 * "robotrain train" ("See 'robotrain train --help'"); it may be NULL.
 * Returns (transfer full): free with rt_config_free(). */
rt_config *rt_config_new(const char *command);

/* Frees cfg and every value it holds. NULL is allowed. */
void rt_config_free(rt_config *cfg);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_config, rt_config_free)

/* Declares n options of a table. With a prefix ("policy"), row key "chunk_size" becomes
 * "policy.chunk_size"; prefix NULL or "" keeps the keys as they are. Each value starts at its
 * default. The rows are borrowed: they must outlive cfg (static tables, or a resident module's).
 * Fails (RT_ERROR_INVALID_ARG, nothing added) when a row is malformed (bad key, enum without
 * choices, a default that is not a valid value) or a key is declared twice or is both an option
 * and a group ("policy" and "policy.type"): the message names the key. */
gboolean rt_config_add_options(rt_config *cfg, const char *prefix, const rt_option *rows, size_t n,
                               GError **error);

/* With TRUE, the first positional argument ends option parsing (it and everything after it go
 * to rest untouched), as a launcher needs: `robotrain launch --num_processes=2 robotrain train
 * --steps=10`. The default (FALSE) collects positional arguments anywhere. */
void rt_config_set_stop_at_positional(rt_config *cfg, gboolean stop);

/* Parses argv[1..argc-1] (argv[0] is the command's name and is skipped):
 *   --key=value, --key value, --bool_key (true), --bool_key false;
 *   -- ends the options: what follows goes to rest, unparsed;
 *   --help or -h anywhere (before --) makes rt_config_help_requested() return RT_HELP_TEXT, and
 *   --dump-options (a machine-readable listing, for tests and completion) RT_HELP_DUMP; the
 *   other arguments are then not parsed and the call succeeds.
 * A flag with RT_OPT_CONFIG_FILE loads that JSON file first (rt_config_load_json()); the other
 * flags override it, in order (the last of repeated flags wins). Then required options are
 * checked.
 * rest receives the positional arguments and everything after --, as a NULL-terminated vector
 * (transfer full: free with g_strfreev()); with rest NULL a positional argument is an error.
 * Errors (RT_ERROR_UNKNOWN_OPTION with the nearest known flag suggested, RT_ERROR_INVALID_ARG
 * for a bad or missing value) name the flag, the bad value and what is allowed. On failure
 * values may be partly applied and *rest is left NULL. */
gboolean rt_config_parse_args(rt_config *cfg, int argc, char **argv, char ***rest, GError **error);

typedef enum {
    RT_HELP_NONE, /* a normal run */
    RT_HELP_TEXT, /* --help or -h was given */
    RT_HELP_DUMP, /* --dump-options was given */
} rt_help_request;

/* What the last rt_config_parse_args() saw of --help / --dump-options. */
rt_help_request rt_config_help_requested(const rt_config *cfg);

/* How help and listings show keys: as flags (--policy.chunk_size=INT) or as the keys of a
 * GLib key file ([policy] then chunk_size=INT): the group is the first component of the key. */
typedef enum {
    RT_HELP_STYLE_FLAGS,
    RT_HELP_STYLE_KEYFILE,
} rt_help_style;

/* Prints the generated help: one entry per option, grouped by prefix (options without a prefix
 * first, then each group in order of declaration), with type, help text, choices, range and
 * default. */
void rt_config_print_help(const rt_config *cfg, rt_help_style style, FILE *out);

/* Prints one line per option, tab-separated: the name as users write it ("--policy.chunk_size"
 * or "[policy] chunk_size"), the type name, the default as text. For tests and completion. */
void rt_config_print_options(const rt_config *cfg, rt_help_style style, FILE *out);

/* Prints every key with its effective value and where it came from ("default", "file",
 * "command line", "program"), for `robotrain config show` and run logs. */
void rt_config_print_values(const rt_config *cfg, rt_help_style style, FILE *out);

/* A one-line synopsis of the options for a usage line: "[--config_file=PATH] [--force[=true|false]]"
 * (a required option without brackets). Returns (transfer full) a string to g_free. */
char *rt_config_synopsis(const rt_config *cfg);

/* When --help or --dump-options was given, prints usage (a line such as "usage: robotrain
 * config show [--config_file=PATH]"; may be NULL) and the help, or the listing, to out and
 * returns TRUE: the command then exits 0. Otherwise prints nothing and returns FALSE. */
gboolean rt_config_handle_help(const rt_config *cfg, const char *usage, FILE *out);

/* Fails (RT_ERROR_INVALID_ARG) naming every RT_OPT_REQUIRED option that has no value. */
gboolean rt_config_check_required(const rt_config *cfg, GError **error);

/* The value of --key in argv (the last one given; before --), without parsing anything else: for
 * a command that must pick its tables first (--policy.type=act decides the policy's options).
 * Returns (transfer full) a string to g_free, or NULL when the flag is absent or has no value. */
char *rt_config_peek_arg(int argc, char **argv, const char *key);

/* Sets key from its text form (the command-line syntax), validated like a flag; the value's
 * source becomes RT_SOURCE_PROGRAM. Errors name the key, the value and what is allowed. */
gboolean rt_config_set(rt_config *cfg, const char *key, const char *text, GError **error);

/* ---------------------------------------------------------------- files */

/* Loads a JSON config (LeRobot's train_config.json shape: {"policy": {"chunk_size": 100}}) on
 * top of the current values. A folder means FOLDER/train_config.json. Values are validated with
 * the flags' rules; an unknown key, a value of the wrong JSON type and a bad value are errors
 * (RT_ERROR_UNKNOWN_OPTION, RT_ERROR_INVALID_ARG; RT_ERROR_NOT_FOUND, RT_ERROR_IO,
 * RT_ERROR_FORMAT for the file itself) naming the file and the dotted key path; every problem
 * of the file is reported, one per line. On failure no value is changed. */
gboolean rt_config_load_json(rt_config *cfg, const char *path, GError **error);

/* The same from text already in memory; name stands for the file in messages. */
gboolean rt_config_load_json_data(rt_config *cfg, const char *data, gsize length, const char *name,
                                  GError **error);

/* Every option (RT_OPT_CONFIG_FILE ones excepted) as indented JSON, nested by dotted path in
 * declaration order, ending with a newline; unset required options are left out.
 * Returns (transfer full) a string to g_free. */
char *rt_config_to_json(const rt_config *cfg);

/* Writes rt_config_to_json() to path atomically (a temporary file in the same folder, flushed,
 * then renamed over path), creating the folder when missing. */
gboolean rt_config_save_json(const rt_config *cfg, const char *path, GError **error);

/* Loads a GLib key file on top of the current values: group [g] key k sets option "g.k". An
 * unknown group or key, a malformed file and every bad value are errors naming the file, the
 * group, the key and what is allowed; every problem is reported, one per line. RT_ERROR_NOT_FOUND
 * when the file does not exist. On failure no value is changed. */
gboolean rt_config_load_keyfile(rt_config *cfg, const char *path, GError **error);

/* Every grouped option as key-file text, each key preceded by a comment with its help, allowed
 * values and default. header (may be NULL) becomes the comment at the top.
 * Returns (transfer full) a string to g_free. */
char *rt_config_to_keyfile(const rt_config *cfg, const char *header);

/* Writes rt_config_to_keyfile() to path atomically (temporary file + rename, folder created).
 * With overwrite FALSE an existing file is left alone (checked atomically, by linking the
 * temporary file into place) and the call fails with RT_ERROR_IO saying the file exists. */
gboolean rt_config_save_keyfile(const rt_config *cfg, const char *path, const char *header,
                                gboolean overwrite, GError **error);

/* ---------------------------------------------------------------- queries
 * key is the full dotted key. Asking for an undeclared key, or with the getter of another type,
 * is a programmer error (a critical warning; the getter returns 0, NULL or FALSE). */

/* The row that declared key, or NULL. Returns (transfer none). */
const rt_option *rt_config_lookup(const rt_config *cfg, const char *key);

/* Every declared key in declaration order. Returns (transfer full): free with g_strfreev(). */
char **rt_config_list_keys(const rt_config *cfg);

gboolean rt_config_is_null(const rt_config *cfg, const char *key);           /* null, or unset */
gboolean rt_config_is_set_explicitly(const rt_config *cfg, const char *key); /* not the default */
rt_value_source rt_config_get_source(const rt_config *cfg, const char *key);

/* The file a RT_SOURCE_FILE value came from, else NULL. Returns (transfer none). */
const char *rt_config_get_source_file(const rt_config *cfg, const char *key);

/* Where key's value came from, in words for messages: "--num_processes", "launch.conf: [launch]
 * num_processes", "cfg.json: policy.chunk_size" or "the default of num_processes".
 * Returns (transfer full) a string to g_free. */
char *rt_config_describe_origin(const rt_config *cfg, const char *key);

gboolean rt_config_get_bool(const rt_config *cfg, const char *key);
gint64 rt_config_get_int(const rt_config *cfg, const char *key);
double rt_config_get_double(const rt_config *cfg, const char *key); /* FLOAT (or INT) options */

/* STRING, ENUM and PATH options; NULL when null. Returns (transfer none): valid until the value
 * changes or cfg is freed. */
const char *rt_config_get_string(const rt_config *cfg, const char *key);

/* Items of a LIST option (0 when null). */
size_t rt_config_get_list_length(const rt_config *cfg, const char *key);

/* Items of a LIST of INT (or FLOAT) options; *n receives the count. NULL when null.
 * Returns (transfer full) an array to g_free (non-NULL, possibly empty, when not null). */
gint64 *rt_config_get_int_list(const rt_config *cfg, const char *key, size_t *n);
double *rt_config_get_double_list(const rt_config *cfg, const char *key, size_t *n);

/* Items of a LIST of STRING, ENUM or PATH. NULL when null.
 * Returns (transfer full) a NULL-terminated vector to g_strfreev(). */
char **rt_config_get_string_list(const rt_config *cfg, const char *key);

/* The value as it would be written on the command line ("100", "1e-05", "[0,1]", "null").
 * Returns (transfer full) a string to g_free; NULL for an unset required option. */
char *rt_config_get_text(const rt_config *cfg, const char *key);

/* ---------------------------------------------------------------- suggestions */

/* The candidate nearest to word by edit distance (insertions, deletions, substitutions and
 * swaps of neighbours; case and '-' vs '_' do not count), or NULL when none is close enough to
 * be a likely typo (about one edit per four characters). Returns (transfer none) one of
 * candidates. */
const char *rt_suggest_nearest(const char *word, const char *const *candidates, size_t n);

G_END_DECLS

#endif
