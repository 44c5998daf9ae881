/* Option tables, command-line parsing, JSON configs: every type, every error message. */
#include "config.h"

#include <glib/gstdio.h>

#include <robotrain/robotrain.h>

#include "testing.h"

/* ---------------------------------------------------------------- a LeRobot-like train table */

static const char *const video_backends[] = {"pyav", "torchcodec", NULL};

static const rt_option train_rows[] = {
    {.key = "output_dir", .type = RT_OPT_PATH, .flags = RT_OPT_NULLABLE, .help = "Where the run writes."},
    {.key = "job_name", .type = RT_OPT_STRING, .flags = RT_OPT_NULLABLE, .help = "Name of the run."},
    {.key = "resume", .type = RT_OPT_BOOL, .default_value = "false", .help = "Continue a run."},
    {.key = "seed", .type = RT_OPT_INT, .default_value = "1000", .flags = RT_OPT_NULLABLE, .help = "Seed."},
    {.key = "steps",
     .type = RT_OPT_INT,
     .default_value = "100000",
     .min = 1,
     .max = 1e9,
     .flags = RT_OPT_RANGE,
     .help = "Training steps."},
    {.key = "config_path",
     .type = RT_OPT_PATH,
     .flags = RT_OPT_NULLABLE | RT_OPT_CONFIG_FILE,
     .help = "A train_config.json to start from."},
    {.key = "dataset.root", .type = RT_OPT_PATH, .flags = RT_OPT_NULLABLE, .help = "Local dataset."},
    {.key = "dataset.episodes",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_INT,
     .min = 0,
     .max = 1e6,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .help = "Episodes to use."},
    {.key = "dataset.video_backend",
     .type = RT_OPT_ENUM,
     .default_value = "pyav",
     .choices = video_backends,
     .help = "Video decoder."},
    {.key = "dataset.image_transforms.enable",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Augment images."},
    {.key = "optimizer.lr",
     .type = RT_OPT_FLOAT,
     .default_value = "1e-5",
     .min = 0,
     .max = 1,
     .flags = RT_OPT_RANGE,
     .help = "Learning rate."},
    {.key = "optimizer.betas",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_FLOAT,
     .default_value = "[0.9,0.999]",
     .help = "Adam betas."},
};

/* A policy plugin's table: relative keys, prefixed with "policy" by the core. */
static const rt_option act_rows[] = {
    {.key = "chunk_size",
     .type = RT_OPT_INT,
     .default_value = "100",
     .min = 1,
     .max = 10000,
     .flags = RT_OPT_RANGE,
     .help = "Actions per chunk."},
    {.key = "kl_weight", .type = RT_OPT_FLOAT, .default_value = "10.0", .help = "KL loss weight."},
    {.key = "tags",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_STRING,
     .flags = RT_OPT_NULLABLE,
     .help = "Hub tags."},
    {.key = "use_vae", .type = RT_OPT_BOOL, .default_value = "true", .help = "Train with the VAE."},
};

static rt_config *new_train_config(void)
{
    rt_config *cfg = rt_config_new("robotrain train");
    GError *error = NULL;
    if (!rt_config_add_options(cfg, NULL, train_rows, G_N_ELEMENTS(train_rows), &error) ||
        !rt_config_add_options(cfg, "policy", act_rows, G_N_ELEMENTS(act_rows), &error)) {
        printf("# cannot declare the test tables: %s\n", error->message);
        exit(99);
    }
    return cfg;
}

/* Parses a NULL-terminated argument list (argv[0] is "train"). */
static gboolean parse(rt_config *cfg, char ***rest, GError **error, ...) G_GNUC_NULL_TERMINATED;

static gboolean parse(rt_config *cfg, char ***rest, GError **error, ...)
{
    GPtrArray *args = g_ptr_array_new();
    g_ptr_array_add(args, "train");
    va_list ap;
    va_start(ap, error);
    for (const char *a; (a = va_arg(ap, const char *));)
        g_ptr_array_add(args, (gpointer)a);
    va_end(ap);
    gboolean ok = rt_config_parse_args(cfg, (int)args->len, (char **)args->pdata, rest, error);
    g_ptr_array_free(args, TRUE);
    return ok;
}

/* Text printed by fn into a temporary stream. Returns (transfer full). */
static char *capture(void (*fn)(const rt_config *, rt_help_style, FILE *), const rt_config *cfg,
                     rt_help_style style)
{
    FILE *f = tmpfile();
    fn(cfg, style, f);
    long size = ftell(f);
    rewind(f);
    char *text = g_malloc0((gsize)size + 1);
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
    fclose(f);
    return text;
}

static char *tmp_dir(void)
{
    GError *error = NULL;
    char *dir = g_dir_make_tmp("test-options-XXXXXX", &error);
    if (!dir) {
        printf("# %s\n", error->message);
        exit(99);
    }
    return dir;
}

static void write_file(const char *path, const char *text)
{
    if (!g_file_set_contents(path, text, -1, NULL))
        exit(99);
}

/* ---------------------------------------------------------------- declaring */

DEF_TEST(defaults_and_prefix)
{
    g_autoptr(rt_config) cfg = new_train_config();
    EXPECT_EQ_INT(100000, rt_config_get_int(cfg, "steps"));
    EXPECT_NEAR(1e-5, rt_config_get_double(cfg, "optimizer.lr"), 0);
    EXPECT_EQ_STR("pyav", rt_config_get_string(cfg, "dataset.video_backend"));
    OK(!rt_config_get_bool(cfg, "resume"));
    OK(rt_config_is_null(cfg, "output_dir"));
    OK(rt_config_is_null(cfg, "dataset.episodes"));
    OK(!rt_config_is_set_explicitly(cfg, "steps"));
    EXPECT_EQ_INT(RT_SOURCE_DEFAULT, rt_config_get_source(cfg, "steps"));
    size_t n = 0;
    g_autofree double *betas = rt_config_get_double_list(cfg, "optimizer.betas", &n);
    EXPECT_EQ_INT(2, n);
    EXPECT_NEAR(0.9, betas[0], 0);
    EXPECT_NEAR(0.999, betas[1], 0);
    /* the plugin's rows under the prefix, the same row objects */
    OK(rt_config_lookup(cfg, "policy.chunk_size") == &act_rows[0]);
    OK(rt_config_lookup(cfg, "chunk_size") == NULL);
    EXPECT_EQ_INT(100, rt_config_get_int(cfg, "policy.chunk_size"));
    OK(rt_config_get_bool(cfg, "policy.use_vae"));
    g_auto(GStrv) keys = rt_config_list_keys(cfg);
    EXPECT_EQ_INT(G_N_ELEMENTS(train_rows) + G_N_ELEMENTS(act_rows), g_strv_length(keys));
    EXPECT_EQ_STR("output_dir", keys[0]);
    EXPECT_EQ_STR("policy.use_vae", keys[g_strv_length(keys) - 1]);
    return 0;
}

DEF_TEST(malformed_tables)
{
    static const rt_option dup[] = {
        {.key = "a", .type = RT_OPT_INT, .default_value = "1", .help = "A."},
        {.key = "a", .type = RT_OPT_INT, .default_value = "2", .help = "A again."},
    };
    static const rt_option leaf_and_group[] = {
        {.key = "dataset", .type = RT_OPT_STRING, .default_value = "x", .help = "Clash."},
    };
    static const rt_option under_leaf[] = {
        {.key = "steps.max", .type = RT_OPT_INT, .default_value = "1", .help = "Clash."},
    };
    static const rt_option bad_default[] = {
        {.key = "fine", .type = RT_OPT_INT, .default_value = "1", .help = "Fine."},
        {.key = "n", .type = RT_OPT_INT, .default_value = "abc", .help = "Bad default."},
    };
    static const rt_option no_choices[] = {
        {.key = "e", .type = RT_OPT_ENUM, .default_value = "x", .help = "E."}};
    static const rt_option bad_key[] = {
        {.key = "a..b", .type = RT_OPT_BOOL, .default_value = "true", .help = "K."}};
    static const rt_option reserved[] = {
        {.key = "help", .type = RT_OPT_BOOL, .default_value = "true", .help = "H."}};
    static const rt_option null_default[] = {{.key = "s", .type = RT_OPT_STRING, .help = "S."}};
    static const rt_option out_of_range_default[] = {
        {.key = "r",
         .type = RT_OPT_INT,
         .default_value = "0",
         .min = 1,
         .max = 2,
         .flags = RT_OPT_RANGE,
         .help = "R."},
    };
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    OK(!rt_config_add_options(cfg, "x", dup, G_N_ELEMENTS(dup), &error));
    EXPECT_ERROR(error, "option 'x.a' cannot be declared: it is declared twice");
    OK(!rt_config_add_options(cfg, NULL, leaf_and_group, 1, &error));
    EXPECT_ERROR(error, "option 'dataset' cannot be declared: it is already a group of options");
    OK(!rt_config_add_options(cfg, NULL, under_leaf, 1, &error));
    EXPECT_ERROR(error, "option 'steps.max' cannot be declared: an option of that name is declared");
    OK(!rt_config_add_options(cfg, NULL, bad_default, 2, &error));
    EXPECT_ERROR(error, "option 'n' is malformed: its default: 'abc' is not an integer");
    OK(rt_config_lookup(cfg, "fine") == NULL); /* nothing of a bad table is added */
    OK(!rt_config_add_options(cfg, NULL, no_choices, 1, &error));
    EXPECT_ERROR(error, "option 'e' is malformed: an enum needs choices");
    OK(!rt_config_add_options(cfg, NULL, bad_key, 1, &error));
    EXPECT_ERROR(error, "option 'a..b' is malformed: the key must be dotted components");
    OK(!rt_config_add_options(cfg, NULL, reserved, 1, &error));
    EXPECT_ERROR(error, "option 'help' is malformed: the key is reserved");
    OK(!rt_config_add_options(cfg, NULL, null_default, 1, &error));
    EXPECT_ERROR(error, "option 's' is malformed: a null default needs RT_OPT_NULLABLE");
    OK(!rt_config_add_options(cfg, NULL, out_of_range_default, 1, &error));
    EXPECT_ERROR(error, "option 'r' is malformed: its default: 0 is out of range");
    return 0;
}

/* ---------------------------------------------------------------- parsing values */

DEF_TEST(every_type_with_equals)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    g_auto(GStrv) rest = NULL;
    OK(parse(cfg, &rest, &error, "--steps=10", "--optimizer.lr=3e-4", "--resume=true",
             "--dataset.video_backend=torchcodec", "--dataset.episodes=[0,1,5]",
             "--policy.tags=[\"a\",\"b c\"]", "--output_dir=~/out", "--job_name=act", "--seed=-3",
             "--dataset.image_transforms.enable=True", "--policy.use_vae=0", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(0, g_strv_length(rest));
    EXPECT_EQ_INT(10, rt_config_get_int(cfg, "steps"));
    EXPECT_NEAR(3e-4, rt_config_get_double(cfg, "optimizer.lr"), 0);
    OK(rt_config_get_bool(cfg, "resume"));
    OK(rt_config_get_bool(cfg, "dataset.image_transforms.enable"));
    OK(!rt_config_get_bool(cfg, "policy.use_vae"));
    EXPECT_EQ_STR("torchcodec", rt_config_get_string(cfg, "dataset.video_backend"));
    EXPECT_EQ_INT(-3, rt_config_get_int(cfg, "seed"));
    EXPECT_EQ_STR("act", rt_config_get_string(cfg, "job_name"));
    g_autofree char *home_out = g_build_filename(g_get_home_dir(), "out", NULL);
    EXPECT_EQ_STR(home_out, rt_config_get_string(cfg, "output_dir"));
    size_t n = 0;
    g_autofree gint64 *episodes = rt_config_get_int_list(cfg, "dataset.episodes", &n);
    EXPECT_EQ_INT(3, n);
    EXPECT_EQ_INT(5, episodes[2]);
    g_auto(GStrv) tags = rt_config_get_string_list(cfg, "policy.tags");
    EXPECT_EQ_INT(2, g_strv_length(tags));
    EXPECT_EQ_STR("b c", tags[1]);
    EXPECT_EQ_INT(RT_SOURCE_ARGS, rt_config_get_source(cfg, "steps"));
    OK(rt_config_is_set_explicitly(cfg, "steps"));
    OK(!rt_config_is_set_explicitly(cfg, "policy.chunk_size"));
    g_autofree char *origin = rt_config_describe_origin(cfg, "steps");
    EXPECT_EQ_STR("--steps", origin);
    g_autofree char *dflt = rt_config_describe_origin(cfg, "policy.chunk_size");
    EXPECT_EQ_STR("the default of policy.chunk_size", dflt);
    return 0;
}

DEF_TEST(space_form_bools_null_and_lists)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    g_auto(GStrv) rest = NULL;
    /* --key value; a bare bool is true and leaves a following positional alone; --bool false */
    OK(parse(cfg, &rest, &error, "--steps", "20", "--policy.chunk_size", "50", "--seed", "-5", "--resume",
             "extra", "--policy.use_vae", "false", "--output_dir", "runs/a", "--job_name=null",
             "--dataset.episodes", "0,2", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(20, rt_config_get_int(cfg, "steps"));
    EXPECT_EQ_INT(50, rt_config_get_int(cfg, "policy.chunk_size"));
    EXPECT_EQ_INT(-5, rt_config_get_int(cfg, "seed"));
    OK(rt_config_get_bool(cfg, "resume"));
    OK(!rt_config_get_bool(cfg, "policy.use_vae"));
    EXPECT_EQ_STR("runs/a", rt_config_get_string(cfg, "output_dir")); /* relative stays relative */
    OK(rt_config_is_null(cfg, "job_name"));
    EXPECT_EQ_INT(2, rt_config_get_list_length(cfg, "dataset.episodes"));
    EXPECT_EQ_INT(1, g_strv_length(rest));
    EXPECT_EQ_STR("extra", rest[0]);

    g_autoptr(rt_config) cfg2 = new_train_config();
    OK(parse(cfg2, NULL, &error, "--seed=null", "--dataset.episodes=[]", "--policy.tags=a,b", NULL));
    EXPECT_NO_ERROR(error);
    OK(rt_config_is_null(cfg2, "seed"));
    OK(!rt_config_is_null(cfg2, "dataset.episodes"));
    EXPECT_EQ_INT(0, rt_config_get_list_length(cfg2, "dataset.episodes"));
    g_auto(GStrv) tags = rt_config_get_string_list(cfg2, "policy.tags");
    EXPECT_EQ_STR("b", tags[1]);
    /* the last of repeated flags wins */
    OK(parse(cfg2, NULL, &error, "--steps=3", "--steps=4", NULL));
    EXPECT_EQ_INT(4, rt_config_get_int(cfg2, "steps"));
    return 0;
}

DEF_TEST(double_dash_positional_and_launcher_mode)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    g_auto(GStrv) rest = NULL;
    OK(parse(cfg, &rest, &error, "a", "--steps=5", "b", "--", "--policy.bogus", "x", "--help", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_HELP_NONE, rt_config_help_requested(cfg)); /* --help after -- is not ours */
    EXPECT_EQ_INT(5, rt_config_get_int(cfg, "steps"));
    EXPECT_EQ_INT(5, g_strv_length(rest));
    EXPECT_EQ_STR("a", rest[0]);
    EXPECT_EQ_STR("b", rest[1]);
    EXPECT_EQ_STR("--policy.bogus", rest[2]);
    EXPECT_EQ_STR("--help", rest[4]);

    /* without rest, a positional argument is an error naming it */
    OK(!parse(cfg, NULL, &error, "--steps=5", "stray", NULL));
    EXPECT_ERROR(error, "unexpected argument 'stray': robotrain train takes options only");

    /* a launcher: the first positional ends the options */
    g_autoptr(rt_config) launcher = new_train_config();
    rt_config_set_stop_at_positional(launcher, TRUE);
    g_auto(GStrv) command = NULL;
    OK(parse(launcher, &command, &error, "--steps=5", "robotrain", "train", "--steps=7", "--help", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_HELP_NONE, rt_config_help_requested(launcher));
    EXPECT_EQ_INT(5, rt_config_get_int(launcher, "steps"));
    EXPECT_EQ_INT(4, g_strv_length(command));
    EXPECT_EQ_STR("--steps=7", command[2]);
    return 0;
}

DEF_TEST(help_anywhere)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    g_auto(GStrv) rest = NULL;
    /* --help wins over a bad flag before it */
    OK(parse(cfg, &rest, &error, "--bogus=1", "--steps", "x", "--help", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(RT_HELP_TEXT, rt_config_help_requested(cfg));
    OK(parse(cfg, NULL, &error, "-h", NULL));
    EXPECT_EQ_INT(RT_HELP_TEXT, rt_config_help_requested(cfg));
    OK(parse(cfg, NULL, &error, "--dump-options", NULL));
    EXPECT_EQ_INT(RT_HELP_DUMP, rt_config_help_requested(cfg));
    OK(parse(cfg, NULL, &error, "--job_name", "-h", NULL)); /* a value, not a request */
    EXPECT_EQ_INT(RT_HELP_NONE, rt_config_help_requested(cfg));
    EXPECT_EQ_STR("-h", rt_config_get_string(cfg, "job_name"));

    g_autofree char *help = capture(rt_config_print_help, cfg, RT_HELP_STYLE_FLAGS);
    OK(g_str_has_prefix(help, "options:\n  --output_dir=PATH"));
    OK(strstr(help, "\n  --steps=INT                   Training steps. Allowed: an integer from 1 to\n"
                    "                                1000000000. Default: 100000.\n"));
    OK(strstr(help, "  --resume[=true|false]         Continue a run. Default: false.\n"));
    OK(strstr(help, "\npolicy options (--policy.*):\n  --policy.chunk_size=INT"));
    OK(strstr(help, "\ndataset.image_transforms options (--dataset.image_transforms.*):\n"
                    "  --dataset.image_transforms.enable[=true|false]\n"
                    "                                Augment images. Default: false.\n"));
    /* a nullable option without a default says that its default is null */
    OK(strstr(help, "\n  --job_name=TEXT               Name of the run. Allowed: text, or null.\n"
                    "                                Default: null.\n"));
    OK(strstr(help, "--dataset.video_backend={pyav,torchcodec}"));
    OK(strstr(help, "--dataset.episodes=[INT,...]"));

    /* an empty default is shown as such, not as "Default: ." */
    static const rt_option empty_row[] = {
        {.key = "tag", .type = RT_OPT_STRING, .default_value = "", .help = "A tag."},
    };
    g_autoptr(rt_config) with_empty = rt_config_new(NULL);
    OK(rt_config_add_options(with_empty, NULL, empty_row, G_N_ELEMENTS(empty_row), &error));
    g_autofree char *empty_help = capture(rt_config_print_help, with_empty, RT_HELP_STYLE_FLAGS);
    EXPECT_EQ_STR("options:\n  --tag=TEXT                    A tag. Default: \"\" (empty).\n", empty_help);

    g_autofree char *dump = capture(rt_config_print_options, cfg, RT_HELP_STYLE_FLAGS);
    OK(g_str_has_prefix(dump, "--output_dir\tpath\tnull\n--job_name\tstring\tnull\n--resume\tbool\tfalse\n"));
    OK(strstr(dump, "\n--policy.chunk_size\tint\t100\n"));
    g_autofree char *synopsis = rt_config_synopsis(cfg);
    OK(g_str_has_prefix(synopsis,
                        "[--output_dir=PATH] [--job_name=TEXT] [--resume[=true|false]] [--seed=INT]"));
    return 0;
}

/* ---------------------------------------------------------------- parse errors */

/* Parses one argument into a fresh config and checks the error code and message. */
static int expect_parse_error(const char *arg, int code, const char *message)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    char *argv[] = {"train", (char *)arg, NULL};
    gboolean ok = rt_config_parse_args(cfg, 2, argv, NULL, &error);
    OK1(!ok, arg);
    OK1(error && error->domain == RT_ERROR && error->code == code, "error code");
    EXPECT_ERROR(error, message);
    return 0;
}

#define PARSE_ERROR(arg, code, message)                                                                      \
    do {                                                                                                     \
        if (expect_parse_error(arg, code, message) != 0)                                                     \
            return -1;                                                                                       \
    } while (0)

DEF_TEST(unknown_flags_suggest)
{
    PARSE_ERROR("--policy.chunk_sise=5", RT_ERROR_UNKNOWN_OPTION,
                "unknown option '--policy.chunk_sise'. Did you mean '--policy.chunk_size'? "
                "See 'robotrain train --help' for the options.");
    /* only the last component of a long key mistyped */
    PARSE_ERROR("--dataset.image_transforms.enabel", RT_ERROR_UNKNOWN_OPTION,
                "Did you mean '--dataset.image_transforms.enable'?");
    /* a wrong or missing group */
    PARSE_ERROR("--dataset.chunk_size=5", RT_ERROR_UNKNOWN_OPTION, "Did you mean '--policy.chunk_size'?");
    PARSE_ERROR("--kl_weight=5", RT_ERROR_UNKNOWN_OPTION, "Did you mean '--policy.kl_weight'?");
    /* case and dashes */
    PARSE_ERROR("--output-dir=x", RT_ERROR_UNKNOWN_OPTION, "Did you mean '--output_dir'?");
    PARSE_ERROR("--policy=act", RT_ERROR_UNKNOWN_OPTION,
                "'--policy' is a group of options, not an option: give one of its keys, such as "
                "--policy.chunk_size.");
    PARSE_ERROR("-x", RT_ERROR_UNKNOWN_OPTION, "unknown option '-x': options start with two dashes.");
    {
        g_autoptr(rt_config) cfg = new_train_config();
        GError *error = NULL;
        char *argv[] = {"train", "--zzzzzzzz=1", NULL};
        OK(!rt_config_parse_args(cfg, 2, argv, NULL, &error));
        OK(error && !strstr(error->message, "Did you mean")); /* nothing close: no guess */
        EXPECT_ERROR(error, "unknown option '--zzzzzzzz'.");
    }
    return 0;
}

DEF_TEST(bad_values)
{
    PARSE_ERROR("--steps=abc", RT_ERROR_INVALID_ARG,
                "--steps: 'abc' is not an integer; expected an integer from 1 to 1000000000");
    PARSE_ERROR("--steps=10x", RT_ERROR_INVALID_ARG, "--steps: '10x' is not an integer");
    PARSE_ERROR("--steps=1.5", RT_ERROR_INVALID_ARG, "--steps: '1.5' is not an integer");
    PARSE_ERROR("--steps= 7", RT_ERROR_INVALID_ARG, "--steps: ' 7' is not an integer");
    PARSE_ERROR("--steps=", RT_ERROR_INVALID_ARG, "--steps: '' is not an integer");
    PARSE_ERROR(
        "--seed=99999999999999999999", RT_ERROR_INVALID_ARG,
        "--seed: '99999999999999999999' does not fit in a 64-bit integer; expected an integer, or null");
    PARSE_ERROR("--steps=0", RT_ERROR_INVALID_ARG,
                "--steps: 0 is out of range; expected an integer from 1 to 1000000000");
    PARSE_ERROR("--optimizer.lr=fast", RT_ERROR_INVALID_ARG,
                "--optimizer.lr: 'fast' is not a number; expected a number from 0.0 to 1.0");
    PARSE_ERROR("--optimizer.lr=2", RT_ERROR_INVALID_ARG, "--optimizer.lr: 2.0 is out of range");
    PARSE_ERROR("--policy.kl_weight=inf", RT_ERROR_INVALID_ARG,
                "--policy.kl_weight: 'inf' is not a finite number");
    PARSE_ERROR("--policy.kl_weight=1e999", RT_ERROR_INVALID_ARG,
                "--policy.kl_weight: '1e999' is not a finite number; expected a number");
    PARSE_ERROR("--policy.kl_weight=0x10", RT_ERROR_INVALID_ARG, "'0x10' is not a number");
    PARSE_ERROR("--dataset.video_backend=av", RT_ERROR_INVALID_ARG,
                "--dataset.video_backend: 'av' is not allowed; expected one of pyav, torchcodec");
    PARSE_ERROR("--dataset.video_backend=pyavv", RT_ERROR_INVALID_ARG,
                "'pyavv' is not allowed (did you mean 'pyav'?); expected one of pyav, torchcodec");
    PARSE_ERROR("--resume=maybe", RT_ERROR_INVALID_ARG,
                "--resume: 'maybe' is not a boolean; expected true or false");
    PARSE_ERROR("--dataset.episodes=[0,1", RT_ERROR_INVALID_ARG,
                "--dataset.episodes: '[0,1' is not a valid JSON list (");
    PARSE_ERROR(
        "--dataset.episodes=[0,\"a\"]", RT_ERROR_INVALID_ARG,
        "--dataset.episodes: '[0,\"a\"]': item 2: the string \"a\" is not an integer; expected a list of "
        "integers from 0 to 1000000");
    PARSE_ERROR("--dataset.episodes=0,x", RT_ERROR_INVALID_ARG,
                "--dataset.episodes: '0,x': item 2: 'x' is not an integer; expected a list of integers");
    PARSE_ERROR("--dataset.episodes=[-1]", RT_ERROR_INVALID_ARG, "item 1: -1 is out of range");
    PARSE_ERROR("--dataset.episodes=[99999999999999999999]", RT_ERROR_INVALID_ARG,
                "the integer 99999999999999999999 does not fit in a 64-bit integer");
    PARSE_ERROR("--dataset.episodes={\"a\":1}", RT_ERROR_INVALID_ARG,
                "item 1: '{\"a\":1}' is not an integer");
    PARSE_ERROR("--policy.tags=[1]", RT_ERROR_INVALID_ARG, "item 1: the integer 1 is not a string");
    PARSE_ERROR("--steps=null", RT_ERROR_INVALID_ARG,
                "--steps: null is not allowed; expected an integer from 1 to 1000000000");
    PARSE_ERROR("--dataset.video_backend=null", RT_ERROR_INVALID_ARG,
                "--dataset.video_backend: null is not allowed; expected one of pyav, torchcodec");
    PARSE_ERROR("--output_dir=", RT_ERROR_INVALID_ARG, "--output_dir: an empty path is not allowed");
    PARSE_ERROR("--job_name=\xff", RT_ERROR_INVALID_ARG, "--job_name: the value is not valid UTF-8");
    /* missing values: at the end, or followed by another flag */
    PARSE_ERROR(
        "--steps", RT_ERROR_INVALID_ARG,
        "--steps needs a value (an integer from 1 to 1000000000): write --steps=VALUE or --steps VALUE");
    {
        g_autoptr(rt_config) cfg = new_train_config();
        GError *error = NULL;
        OK(!parse(cfg, NULL, &error, "--job_name", "--steps=4", NULL));
        EXPECT_ERROR(error, "--job_name needs a value (text, or null)");
    }
    return 0;
}

DEF_TEST(required_and_set)
{
    static const rt_option rows[] = {
        {.key = "dataset.repo_id", .type = RT_OPT_STRING, .flags = RT_OPT_REQUIRED, .help = "Hub dataset."},
        {.key = "n", .type = RT_OPT_INT, .default_value = "1", .help = "N."},
    };
    g_autoptr(rt_config) cfg = rt_config_new(NULL);
    GError *error = NULL;
    OK(rt_config_add_options(cfg, NULL, rows, G_N_ELEMENTS(rows), &error));
    OK(rt_config_is_null(cfg, "dataset.repo_id"));
    g_autofree char *unset = rt_config_get_text(cfg, "dataset.repo_id");
    OK(unset == NULL);
    g_autofree char *json = rt_config_to_json(cfg);
    EXPECT_EQ_STR("{\n    \"n\": 1\n}\n", json); /* unset options are left out */
    OK(!parse(cfg, NULL, &error, "--n=2", NULL));
    EXPECT_ERROR(error, "--dataset.repo_id is required: give text");
    OK(parse(cfg, NULL, &error, "--dataset.repo_id=lerobot/pusht", NULL));
    EXPECT_EQ_STR("lerobot/pusht", rt_config_get_string(cfg, "dataset.repo_id"));

    OK(rt_config_set(cfg, "n", "7", &error));
    EXPECT_EQ_INT(7, rt_config_get_int(cfg, "n"));
    EXPECT_EQ_INT(RT_SOURCE_PROGRAM, rt_config_get_source(cfg, "n"));
    OK(!rt_config_set(cfg, "n", "seven", &error));
    EXPECT_ERROR(error, "n: 'seven' is not an integer; expected an integer");
    OK(!rt_config_set(cfg, "m", "1", &error));
    EXPECT_ERROR(error, "unknown option 'm' (did you mean 'n'?)");
    return 0;
}

DEF_TEST(peek)
{
    char *argv[] = {"train", "--steps=3", "--policy.type", "act", "--", "--policy.type=diffusion", NULL};
    g_autofree char *type = rt_config_peek_arg(6, argv, "policy.type");
    EXPECT_EQ_STR("act", type);
    g_autofree char *steps = rt_config_peek_arg(6, argv, "steps");
    EXPECT_EQ_STR("3", steps);
    g_autofree char *none = rt_config_peek_arg(6, argv, "dataset.root");
    OK(none == NULL);
    return 0;
}

DEF_TEST(suggest)
{
    const char *const commands[] = {"config", "plugins", "train", "launch"};
    EXPECT_EQ_STR("plugins", rt_suggest_nearest("plugns", commands, 4));
    EXPECT_EQ_STR("config", rt_suggest_nearest("cofnig", commands, 4)); /* a swap is one edit */
    EXPECT_EQ_STR("train", rt_suggest_nearest("TRAIN", commands, 4));
    OK(rt_suggest_nearest("xyz", commands, 4) == NULL);
    OK(rt_suggest_nearest("", commands, 4) == NULL);
    const char *const keys[] = {"num_processes", "num_machines"};
    EXPECT_EQ_STR("num_processes", rt_suggest_nearest("num-processes", keys, 2));
    EXPECT_EQ_STR("num_machines", rt_suggest_nearest("num_machine", keys, 2));
    return 0;
}

/* ---------------------------------------------------------------- numbers as text */

DEF_TEST(float_text)
{
    /* Python's repr of the same doubles (what LeRobot writes into train_config.json) */
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"1e-5", "1e-05"},    {"0.1", "0.1"},
        {"10", "10.0"},       {"100000", "100000.0"},
        {"1e16", "1e+16"},    {"1.5e-7", "1.5e-07"},
        {"0.0001", "0.0001"}, {"123456789.125", "123456789.125"},
        {"-2.5", "-2.5"},     {"0.3", "0.3"},
        {"1e22", "1e+22"},    {"9999999999999998", "9999999999999998.0"},
        {"-0", "-0.0"},       {"2.2250738585072014e-308", "2.2250738585072014e-308"},
    };
    g_autoptr(rt_config) cfg = new_train_config();
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *error = NULL;
        OK(rt_config_set(cfg, "policy.kl_weight", cases[i].in, &error));
        g_autofree char *text = rt_config_get_text(cfg, "policy.kl_weight");
        EXPECT_EQ_STR(cases[i].out, text);
        EXPECT_NEAR(g_ascii_strtod(cases[i].in, NULL), rt_config_get_double(cfg, "policy.kl_weight"), 0);
    }
    return 0;
}

/* ---------------------------------------------------------------- JSON */

/* Written by hand in the shape of LeRobot's train_config.json (json.dump, indent=4). */
static const char expected_json[] = "{\n"
                                    "    \"output_dir\": \"outputs/train/act\",\n"
                                    "    \"job_name\": \"act \\\"pusht\\\"\",\n"
                                    "    \"resume\": false,\n"
                                    "    \"seed\": null,\n"
                                    "    \"steps\": 200,\n"
                                    "    \"dataset\": {\n"
                                    "        \"root\": null,\n"
                                    "        \"episodes\": [\n"
                                    "            0,\n"
                                    "            1\n"
                                    "        ],\n"
                                    "        \"video_backend\": \"pyav\",\n"
                                    "        \"image_transforms\": {\n"
                                    "            \"enable\": true\n"
                                    "        }\n"
                                    "    },\n"
                                    "    \"optimizer\": {\n"
                                    "        \"lr\": 1e-05,\n"
                                    "        \"betas\": [\n"
                                    "            0.9,\n"
                                    "            0.999\n"
                                    "        ]\n"
                                    "    },\n"
                                    "    \"policy\": {\n"
                                    "        \"chunk_size\": 50,\n"
                                    "        \"kl_weight\": 10.0,\n"
                                    "        \"tags\": [\n"
                                    "            \"a\",\n"
                                    "            \"b\"\n"
                                    "        ],\n"
                                    "        \"use_vae\": true\n"
                                    "    }\n"
                                    "}\n";

DEF_TEST(json_round_trip)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    OK(parse(cfg, NULL, &error, "--output_dir=outputs/train/act", "--job_name=act \"pusht\"", "--seed=null",
             "--steps", "200", "--dataset.episodes=[0,1]", "--dataset.image_transforms.enable",
             "--policy.chunk_size=50", "--policy.tags=[\"a\",\"b\"]", NULL));
    EXPECT_NO_ERROR(error);
    g_autofree char *json = rt_config_to_json(cfg);
    EXPECT_EQ_STR(expected_json, json); /* config_path is never written */

    g_autofree char *dir = tmp_dir();
    g_autofree char *path = g_build_filename(dir, "run", "train_config.json", NULL);
    OK(rt_config_save_json(cfg, path, &error)); /* creates the folder */
    EXPECT_NO_ERROR(error);
    g_autofree char *saved = NULL;
    OK(g_file_get_contents(path, &saved, NULL, NULL));
    EXPECT_EQ_STR(expected_json, saved);

    g_autoptr(rt_config) back = new_train_config();
    g_autofree char *run_dir = g_path_get_dirname(path);
    OK(rt_config_load_json(back, run_dir, &error)); /* a folder means FOLDER/train_config.json */
    EXPECT_NO_ERROR(error);
    g_auto(GStrv) keys = rt_config_list_keys(cfg);
    for (size_t i = 0; keys[i]; i++) {
        g_autofree char *a = rt_config_get_text(cfg, keys[i]);
        g_autofree char *b = rt_config_get_text(back, keys[i]);
        EXPECT_EQ_STR(a, b);
        if (strcmp(keys[i], "config_path") != 0)
            EXPECT_EQ_INT(RT_SOURCE_FILE, rt_config_get_source(back, keys[i]));
    }
    EXPECT_EQ_STR(path, rt_config_get_source_file(back, "steps"));
    g_autofree char *origin = rt_config_describe_origin(back, "policy.chunk_size");
    g_autofree char *want = g_strdup_printf("%s: policy.chunk_size", path);
    EXPECT_EQ_STR(want, origin);
    g_autofree char *again = rt_config_to_json(back);
    EXPECT_EQ_STR(expected_json, again);

    g_unlink(path);
    g_rmdir(run_dir);
    g_rmdir(dir);
    return 0;
}

static int expect_json_error(const char *text, int code, const char *message)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    OK1(!rt_config_load_json_data(cfg, text, strlen(text), "cfg.json", &error), text);
    OK1(error && error->domain == RT_ERROR && error->code == code, "error code");
    EXPECT_ERROR(error, message);
    EXPECT_EQ_INT(100000, rt_config_get_int(cfg, "steps")); /* nothing applied */
    EXPECT_EQ_INT(RT_SOURCE_DEFAULT, rt_config_get_source(cfg, "steps"));
    return 0;
}

#define JSON_ERROR(text, code, message)                                                                      \
    do {                                                                                                     \
        if (expect_json_error(text, code, message) != 0)                                                     \
            return -1;                                                                                       \
    } while (0)

DEF_TEST(json_errors)
{
    JSON_ERROR("{\"steps\": 5, \"policy\": {\"chunk_sise\": 5}}", RT_ERROR_UNKNOWN_OPTION,
               "cfg.json: unknown key 'policy.chunk_sise' (did you mean 'policy.chunk_size'?)");
    JSON_ERROR("{\"bogus\": {\"x\": 1}}", RT_ERROR_UNKNOWN_OPTION, "cfg.json: unknown key 'bogus'");
    JSON_ERROR(
        "{\"steps\": \"10\"}", RT_ERROR_INVALID_ARG,
        "cfg.json: steps: the string \"10\" is not an integer; expected an integer from 1 to 1000000000");
    JSON_ERROR("{\"steps\": 2.5}", RT_ERROR_INVALID_ARG, "cfg.json: steps: the number 2.5 is not an integer");
    JSON_ERROR("{\"steps\": 0}", RT_ERROR_INVALID_ARG, "cfg.json: steps: 0 is out of range");
    JSON_ERROR("{\"steps\": null}", RT_ERROR_INVALID_ARG, "cfg.json: steps: null is not allowed");
    JSON_ERROR("{\"resume\": \"true\"}", RT_ERROR_INVALID_ARG,
               "cfg.json: resume: the string \"true\" is not a boolean; expected true or false");
    JSON_ERROR("{\"policy\": 5}", RT_ERROR_INVALID_ARG,
               "cfg.json: policy: expected an object holding the options policy.*, not a single value");
    JSON_ERROR("{\"policy\": {\"chunk_size\": {}}}", RT_ERROR_INVALID_ARG,
               "cfg.json: policy.chunk_size: an object is not an integer");
    JSON_ERROR("{\"dataset\": {\"video_backend\": \"av\"}}", RT_ERROR_INVALID_ARG,
               "cfg.json: dataset.video_backend: 'av' is not allowed; expected one of pyav, torchcodec");
    JSON_ERROR("{\"dataset\": {\"episodes\": [0, 1.5]}}", RT_ERROR_INVALID_ARG,
               "cfg.json: dataset.episodes: item 2: the number 1.5 is not an integer");
    JSON_ERROR("{\"dataset\": {\"episodes\": \"0,1\"}}", RT_ERROR_INVALID_ARG,
               "cfg.json: dataset.episodes: the string \"0,1\" is not a list");
    JSON_ERROR("{\"optimizer\": {\"lr\": 1e999}}", RT_ERROR_INVALID_ARG,
               "cfg.json: optimizer.lr: the number is not finite");
    JSON_ERROR("{\n\"seed\": 99999999999999999999}", RT_ERROR_FORMAT,
               "cfg.json: line 2: the integer 99999999999999999999 does not fit in a 64-bit integer");
    JSON_ERROR("{\"config_path\": \"x.json\"}", RT_ERROR_INVALID_ARG,
               "cfg.json: config_path names a config file and cannot be set inside one");
    JSON_ERROR("{\"steps\": 5,\n \"policy\": [1,", RT_ERROR_FORMAT, "cfg.json:2:");
    JSON_ERROR("[1, 2]", RT_ERROR_FORMAT,
               "cfg.json: a config file holds one JSON object ({\"key\": value, ...}), not an array");
    JSON_ERROR("", RT_ERROR_FORMAT, "cfg.json: a config file holds one JSON object");
    /* every problem of a file, one line each */
    JSON_ERROR("{\"steps\": -1, \"resume\": 3}", RT_ERROR_INVALID_ARG,
               "cfg.json: steps: -1 is out of range; expected an integer from 1 to 1000000000\n"
               "cfg.json: resume: the integer 3 is not a boolean");

    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    OK(!rt_config_load_json(cfg, "/nonexistent/robotrain/cfg.json", &error));
    OK(error && error->code == RT_ERROR_NOT_FOUND);
    EXPECT_ERROR(error, "/nonexistent/robotrain/cfg.json: No such file or directory");
    return 0;
}

DEF_TEST(config_path_then_flags)
{
    g_autofree char *dir = tmp_dir();
    g_autofree char *path = g_build_filename(dir, "train_config.json", NULL);
    write_file(path, "{\"steps\": 5, \"job_name\": \"from_file\", \"policy\": {\"chunk_size\": 20}}");
    g_autofree char *flag = g_strdup_printf("--config_path=%s", path);

    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    /* flags override the file wherever they stand */
    OK(parse(cfg, NULL, &error, "--steps=7", flag, "--policy.kl_weight=2", NULL));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_INT(7, rt_config_get_int(cfg, "steps"));
    EXPECT_EQ_INT(RT_SOURCE_ARGS, rt_config_get_source(cfg, "steps"));
    EXPECT_EQ_INT(20, rt_config_get_int(cfg, "policy.chunk_size"));
    EXPECT_EQ_INT(RT_SOURCE_FILE, rt_config_get_source(cfg, "policy.chunk_size"));
    EXPECT_EQ_STR("from_file", rt_config_get_string(cfg, "job_name"));
    EXPECT_NEAR(2.0, rt_config_get_double(cfg, "policy.kl_weight"), 0);
    EXPECT_EQ_INT(RT_SOURCE_DEFAULT, rt_config_get_source(cfg, "resume"));
    EXPECT_EQ_STR(path, rt_config_get_string(cfg, "config_path"));

    /* a bad file fails the parse, naming the file and the key */
    write_file(path, "{\"steps\": \"many\"}");
    g_autoptr(rt_config) cfg2 = new_train_config();
    OK(!parse(cfg2, NULL, &error, flag, NULL));
    g_autofree char *want = g_strdup_printf("%s: steps: the string \"many\" is not an integer", path);
    EXPECT_ERROR(error, want);
    g_unlink(path);
    g_rmdir(dir);
    return 0;
}

/* ---------------------------------------------------------------- key files (generic) */

DEF_TEST(keyfile_generic)
{
    g_autoptr(rt_config) cfg = new_train_config();
    GError *error = NULL;
    OK(parse(cfg, NULL, &error, "--policy.tags=[\"x;y\",\" lead\"]", "--dataset.episodes=3,4", NULL));
    g_autofree char *text = rt_config_to_keyfile(cfg, "a header\nsecond line");
    OK(g_str_has_prefix(text, "# a header\n# second line\n\n[dataset]\n"));
    OK(strstr(text, "\n[policy]\n# Actions per chunk. Allowed: an integer from 1 to 10000. Default: "
                    "100.\nchunk_size=100\n"));
    OK(strstr(text, "\ntags=x\\;y;\\slead;\n")); /* GLib's list syntax and escapes */
    OK(strstr(text, "\nepisodes=3;4;\n"));
    OK(strstr(text, "\n[dataset]\n"));
    OK(!strstr(text, "steps=")); /* ungrouped options have no place in a key file */

    g_autofree char *dir = tmp_dir();
    g_autofree char *path = g_build_filename(dir, "x.conf", NULL);
    OK(rt_config_save_keyfile(cfg, path, NULL, FALSE, &error));
    EXPECT_NO_ERROR(error);
    g_autoptr(rt_config) back = new_train_config();
    OK(rt_config_load_keyfile(back, path, &error));
    EXPECT_NO_ERROR(error);
    g_auto(GStrv) tags = rt_config_get_string_list(back, "policy.tags");
    EXPECT_EQ_STR("x;y", tags[0]);
    EXPECT_EQ_STR(" lead", tags[1]);
    g_autofree char *origin = rt_config_describe_origin(back, "policy.tags");
    g_autofree char *want = g_strdup_printf("%s: [policy] tags", path);
    EXPECT_EQ_STR(want, origin);
    g_autofree char *values = capture(rt_config_print_values, back, RT_HELP_STYLE_KEYFILE);
    OK(strstr(values, "[policy]\nchunk_size=100                           # file\n"));
    g_autofree char *flags = capture(rt_config_print_values, cfg, RT_HELP_STYLE_FLAGS);
    OK(strstr(flags, "steps=100000                             # default\n"));
    OK(strstr(flags, "dataset.episodes=[3,4]                   # command line\n"));
    /* trailing blanks: meaningless after numbers and choices, kept in paths */
    write_file(path, "[dataset]\nroot=p \nepisodes = 1 ; 2 \nvideo_backend = torchcodec \n");
    OK(rt_config_load_keyfile(back, path, &error));
    EXPECT_NO_ERROR(error);
    EXPECT_EQ_STR("p ", rt_config_get_string(back, "dataset.root"));
    g_autofree char *episodes = rt_config_get_text(back, "dataset.episodes");
    EXPECT_EQ_STR("[1,2]", episodes);
    EXPECT_EQ_STR("torchcodec", rt_config_get_string(back, "dataset.video_backend"));
    g_unlink(path);
    g_rmdir(dir);
    return 0;
}

int main(void)
{
    RUN_TEST(defaults_and_prefix);
    RUN_TEST(malformed_tables);
    RUN_TEST(every_type_with_equals);
    RUN_TEST(space_form_bools_null_and_lists);
    RUN_TEST(double_dash_positional_and_launcher_mode);
    RUN_TEST(help_anywhere);
    RUN_TEST(unknown_flags_suggest);
    RUN_TEST(bad_values);
    RUN_TEST(required_and_set);
    RUN_TEST(peek);
    RUN_TEST(suggest);
    RUN_TEST(float_text);
    RUN_TEST(json_round_trip);
    RUN_TEST(json_errors);
    RUN_TEST(config_path_then_flags);
    RUN_TEST(keyfile_generic);
    END_TEST;
}
