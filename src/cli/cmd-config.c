/* robotrain config: write the launch configuration, robotrain.conf(5), by asking questions (as
 * accelerate config does) or without (default); show it; check it. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <robotrain/robotrain.h>
#include <robotrain/launch-config.h>

#include "cli/commands.h"
#include "dist/launcher.h"

static const rt_option config_file_option[] = {
    {.key = "config_file",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "The launch configuration file; without it, $XDG_CONFIG_HOME/robotrain/launch.conf."},
};

static const rt_option force_option[] = {
    {.key = "force",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Replace the file when it exists already."},
};

typedef struct subcommand {
    const char *name;
    const char *summary;
    gboolean writes; /* takes --mixed_precision and --force */
    int (*run)(const struct subcommand *sub, const rt_config *flags);
} subcommand;

static int run_default(const subcommand *sub, const rt_config *flags);
static int run_show(const subcommand *sub, const rt_config *flags);
static int run_check(const subcommand *sub, const rt_config *flags);

static const subcommand subcommands[] = {
    {"default", "write a launch configuration for this machine, without questions", TRUE, run_default},
    {"show", "print every key of the effective configuration and where its value comes from", FALSE,
     run_show},
    {"check", "validate a launch configuration file; exit 1 naming every problem", FALSE, run_check},
};

/* Prints a (possibly multi-line) error, each line prefixed. */
static void print_error(const GError *error)
{
    g_auto(GStrv) lines = g_strsplit(error->message, "\n", -1);
    for (size_t i = 0; lines[i]; i++)
        fprintf(stderr, "robotrain config: %s\n", lines[i]);
}

/* The flags of a subcommand: --config_file for all; --mixed_precision (the same row as the
 * [launch] key) and --force for those that write. Returns (transfer full). */
static rt_config *subcommand_flags(const subcommand *sub)
{
    g_autofree char *command = g_strdup_printf("robotrain config %s", sub->name);
    rt_config *cfg = rt_config_new(command);
    GError *error = NULL;
    gboolean ok =
        rt_config_add_options(cfg, NULL, config_file_option, G_N_ELEMENTS(config_file_option), &error);
    if (ok && sub->writes)
        ok = rt_config_add_options(cfg, NULL, rt_launch_config_option("launch.mixed_precision"), 1, &error) &&
             rt_config_add_options(cfg, NULL, force_option, G_N_ELEMENTS(force_option), &error);
    if (!ok)
        g_error("robotrain config: the option table is malformed: %s", error->message); /* a bug */
    return cfg;
}

static char *usage_of(const subcommand *sub, const rt_config *flags)
{
    g_autofree char *synopsis = rt_config_synopsis(flags);
    return g_strdup_printf("robotrain config %s %s", sub->name, synopsis);
}

/* The file to use: --config_file, else the default. Returns (transfer full). */
static char *file_of(const rt_config *flags)
{
    const char *path = rt_config_get_string(flags, "config_file");
    return path ? g_strdup(path) : rt_launch_config_default_path();
}

static rt_config *questionnaire_flags(void);

static void print_usage(FILE *out, gboolean full)
{
    g_autoptr(rt_config) questions = questionnaire_flags();
    g_autofree char *synopsis = rt_config_synopsis(questions);
    fprintf(out, "usage: robotrain config %s\n", synopsis);
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i]);
        g_autofree char *usage = usage_of(&subcommands[i], flags);
        fprintf(out, "   or: %s\n", usage);
    }
    g_autofree char *path = rt_launch_config_default_path();
    fprintf(out,
            "\nWrites, shows or checks the launch configuration that 'robotrain launch' reads: a\n"
            "key file, by default %s (see robotrain.conf(5)).\n"
            "Without a subcommand, asks questions about this machine and the run (reading the\n"
            "answers from standard input, a terminal or a pipe) and writes the file.\n\nsubcommands:\n",
            path);
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++)
        fprintf(out, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    if (!full) {
        fprintf(out, "\nSee 'robotrain config --help' for the options and the keys of the file.\n");
        return;
    }
    fprintf(out, "\nrobotrain config (the questions) ");
    rt_config_print_help(questions, RT_HELP_STYLE_FLAGS, out);
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        g_autoptr(rt_config) flags = subcommand_flags(&subcommands[i]);
        fprintf(out, "\nrobotrain config %s ", subcommands[i].name);
        rt_config_print_help(flags, RT_HELP_STYLE_FLAGS, out);
    }
    g_autoptr(rt_config) lc = rt_launch_config_new();
    fprintf(out, "\nkeys of the file (robotrain.conf(5)):\n");
    rt_config_print_help(lc, RT_HELP_STYLE_KEYFILE, out);
}

/* The GPUs of this machine for the defaults: CUDA_VISIBLE_DEVICES when it is set (so that a file
 * for another machine can be written: CUDA_VISIBLE_DEVICES=0,1,2,3 robotrain config default),
 * else as the CUDA backend counts them. */
static guint count_gpus(void)
{
    if (g_getenv("CUDA_VISIBLE_DEVICES"))
        return rt_launch_count_visible_gpus();
    rt_launch_gpus gpus = {0, 0, NULL};
    rt_launcher_probe_gpus(&gpus, NULL);
    rt_launch_gpus_clear(&gpus);
    return (guint)MAX(gpus.visible, 0);
}

/* ---------------------------------------------------------------- subcommands */

static int run_default(const subcommand *sub, const rt_config *flags)
{
    (void)sub;
    g_autofree char *path = file_of(flags);
    gboolean force = rt_config_get_bool(flags, "force");
    if (!force && g_file_test(path, G_FILE_TEST_EXISTS)) {
        fprintf(stderr,
                "robotrain config: %s already exists; it was left as it is.\n"
                "Use --force to replace it, or --config_file=PATH to write another file.\n",
                path);
        return RT_EXIT_FAILURE;
    }
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    guint gpus = count_gpus();
    if (!rt_launch_config_set_machine_defaults(lc, gpus, &error) ||
        !rt_config_set(lc, "launch.mixed_precision", rt_config_get_string(flags, "mixed_precision"),
                       &error) ||
        !rt_launch_config_validate(lc, &error) || !rt_launch_config_save(lc, path, force, &error)) {
        print_error(error);
        return RT_EXIT_FAILURE;
    }
    printf("robotrain config: wrote %s (distributed_type=%s, num_processes=%" G_GINT64_FORMAT
           ", mixed_precision=%s)\n",
           path, rt_config_get_string(lc, "launch.distributed_type"),
           rt_config_get_int(lc, "launch.num_processes"), rt_config_get_string(lc, "launch.mixed_precision"));
    return RT_EXIT_OK;
}

static int run_show(const subcommand *sub, const rt_config *flags)
{
    (void)sub;
    g_autofree char *path = file_of(flags);
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    gboolean found = TRUE;
    if (!rt_launch_config_load(lc, path, &error)) {
        if (!g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND)) {
            print_error(error);
            return RT_EXIT_FAILURE;
        }
        found = FALSE;
    }
    printf("# %s%s\n", path, found ? "" : " does not exist: every value is the default");
    rt_config_print_values(lc, RT_HELP_STYLE_KEYFILE, stdout);
    return RT_EXIT_OK;
}

static int run_check(const subcommand *sub, const rt_config *flags)
{
    (void)sub;
    g_autofree char *path = file_of(flags);
    g_autoptr(rt_config) lc = rt_launch_config_new();
    g_autoptr(GError) error = NULL;
    if (!rt_launch_config_load(lc, path, &error)) {
        print_error(error);
        if (g_error_matches(error, RT_ERROR, RT_ERROR_NOT_FOUND))
            fprintf(stderr, "robotrain config: write one with 'robotrain config default'.\n");
        return RT_EXIT_FAILURE;
    }
    printf("robotrain config: %s is valid\n", path);
    return RT_EXIT_OK;
}

/* ---------------------------------------------------------------- the questions */

/* Answers longer than this are refused (the rest of the line is read and dropped). */
#define MAX_ANSWER 4096

static const rt_option questionnaire_options[] = {
    {.key = "config_file",
     .type = RT_OPT_PATH,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "The file to write; without it, $XDG_CONFIG_HOME/robotrain/launch.conf."},
    {.key = "force",
     .type = RT_OPT_BOOL,
     .default_value = "false",
     .help = "Replace the file when it exists already, without asking."},
};

static rt_config *questionnaire_flags(void)
{
    rt_config *cfg = rt_config_new("robotrain config");
    GError *error = NULL;
    if (!rt_config_add_options(cfg, NULL, questionnaire_options, G_N_ELEMENTS(questionnaire_options), &error))
        g_error("robotrain config: the option table is malformed: %s", error->message); /* a bug */
    return cfg;
}

typedef struct {
    FILE *in, *out;
    gboolean echo; /* the answers come from a pipe or a file: repeat each after its prompt */
} dialog;

/* One line of input without its end of line. Returns (transfer full) the line, or NULL when the
 * input ended before any character. *too_long: the line had more than MAX_ANSWER bytes. */
static char *read_line(dialog *d, gboolean *too_long)
{
    GString *line = g_string_new(NULL);
    gboolean any = FALSE;
    int c;
    *too_long = FALSE;
    while ((c = getc(d->in)) != EOF) {
        any = TRUE;
        if (c == '\n')
            break;
        if (line->len < MAX_ANSWER)
            g_string_append_c(line, (char)c);
        else
            *too_long = TRUE;
    }
    if (!any) {
        g_string_free(line, TRUE);
        return NULL;
    }
    if (line->len && line->str[line->len - 1] == '\r')
        g_string_truncate(line, line->len - 1);
    return g_string_free(line, FALSE);
}

typedef struct question question;

/* Checks an answer (stripped, not empty). On success sets *value (transfer full), the text to
 * store; otherwise says why in why. */
typedef gboolean (*check_fn)(const question *q, const char *answer, char **value, GString *why);

struct question {
    const char *text;           /* the question */
    const char *const *choices; /* a menu: "name", "description", ..., NULL (choice questions) */
    const char *default_answer; /* what an empty answer means; NULL: an answer is needed */
    check_fn check;
    const rt_config *lc; /* the answers so far */
    const char *key;     /* the key the answer sets (for its row's rules), or NULL */
};

/* Asks q until the answer passes its check. Returns (transfer full) the value, or NULL with
 * error when the input ends first. */
static char *ask(dialog *d, const question *q, GError **error)
{
    fprintf(d->out, "\n%s\n", q->text);
    size_t n_choices = 0;
    for (size_t i = 0; q->choices && q->choices[i]; i += 2, n_choices++)
        fprintf(d->out, "  %zu. %-12s %s\n", n_choices + 1, q->choices[i], q->choices[i + 1]);
    for (;;) {
        if (n_choices == 1)
            fprintf(d->out, "Answer 1, or the name");
        else if (n_choices)
            fprintf(d->out, "Answer 1 to %zu, or a name", n_choices);
        else
            fprintf(d->out, "Answer");
        if (q->default_answer)
            fprintf(d->out, " [%s]", q->default_answer);
        fprintf(d->out, ": ");
        fflush(d->out);
        gboolean too_long;
        g_autofree char *line = read_line(d, &too_long);
        if (!line) {
            if (d->echo)
                fprintf(d->out, "\n");
            g_set_error(error, RT_ERROR, RT_ERROR_IO,
                        "the input ended before this question was answered: %s\nNothing was written.",
                        q->text);
            return NULL;
        }
        if (d->echo)
            fprintf(d->out, "%s\n", line);
        g_strstrip(line);
        g_autoptr(GString) why = g_string_new(NULL);
        char *value = NULL;
        if (too_long)
            g_string_printf(why, "the answer is longer than %d characters", MAX_ANSWER);
        else if (!*line && !q->default_answer)
            g_string_assign(why, "an answer is needed here (there is no default)");
        else if (q->check(q, *line ? line : q->default_answer, &value, why))
            return value;
        fprintf(d->out, "  Not a valid answer: %s. Please answer again.\n", why->str);
    }
}

/* Whether answer names choice: the same word, in any case, with '_' for '-' (accelerate writes
 * MULTI_GPU). */
static gboolean names_choice(const char *answer, const char *choice)
{
    size_t n = strlen(choice);
    if (strlen(answer) != n)
        return FALSE;
    for (size_t i = 0; i < n; i++) {
        char a = g_ascii_tolower(answer[i]) == '_' ? '-' : g_ascii_tolower(answer[i]);
        char c = g_ascii_tolower(choice[i]) == '_' ? '-' : g_ascii_tolower(choice[i]);
        if (a != c)
            return FALSE;
    }
    return TRUE;
}

static gboolean check_choice(const question *q, const char *answer, char **value, GString *why)
{
    size_t n = 0;
    for (size_t i = 0; q->choices[i]; i += 2, n++)
        if (names_choice(answer, q->choices[i]) ||
            (g_ascii_isdigit(answer[0]) && strtoul(answer, NULL, 10) == n + 1 &&
             strspn(answer, "0123456789") == strlen(answer))) {
            *value = g_strdup(q->choices[i]);
            return TRUE;
        }
    g_string_printf(why, "'%s' is none of the choices; answer a number from 1 to %zu, or one of", answer, n);
    for (size_t i = 0; q->choices[i]; i += 2)
        g_string_append_printf(why, "%s %s", i ? "," : "", q->choices[i]);
    return FALSE;
}

static gboolean check_environment(const question *q, const char *answer, char **value, GString *why)
{
    if (check_choice(q, answer, value, why))
        return TRUE;
    if (g_ascii_strncasecmp(answer, "amazon", 6) == 0 || g_ascii_strncasecmp(answer, "aws", 3) == 0 ||
        g_ascii_strcasecmp(answer, "sagemaker") == 0) {
        g_string_printf(why, "Amazon SageMaker (accelerate's AMAZON_SAGEMAKER) is not supported: robotrain "
                             "runs on this machine and the machines it reaches (answer 1, LOCAL_MACHINE)");
    }
    return FALSE;
}

static gboolean check_yes_no(const question *q, const char *answer, char **value, GString *why)
{
    (void)q;
    if (!g_ascii_strcasecmp(answer, "y") || !g_ascii_strcasecmp(answer, "yes")) {
        *value = g_strdup("yes");
        return TRUE;
    }
    if (!g_ascii_strcasecmp(answer, "n") || !g_ascii_strcasecmp(answer, "no")) {
        *value = g_strdup("no");
        return TRUE;
    }
    g_string_printf(why, "'%s' is neither yes nor no (y or n)", answer);
    return FALSE;
}

/* The answer as a value of q->key: its row decides (type, range, null word). */
static gboolean check_value(const question *q, const char *answer, char **value, GString *why)
{
    g_autoptr(rt_config) scratch = rt_launch_config_new();
    GError *error = NULL;
    if (!rt_config_set(scratch, q->key, answer, &error)) {
        const char *text = error->message;
        if (g_str_has_prefix(text, q->key) && text[strlen(q->key)] == ':')
            text += strlen(q->key) + 2; /* the key means nothing to someone answering */
        g_string_assign(why, text);
        g_error_free(error);
        return FALSE;
    }
    *value = rt_config_get_text(scratch, q->key);
    return TRUE;
}

static gint64 int_answer(const char *value)
{
    return g_ascii_strtoll(value, NULL, 10);
}

static gboolean check_machine_rank(const question *q, const char *answer, char **value, GString *why)
{
    if (!check_value(q, answer, value, why))
        return FALSE;
    gint64 machines = rt_config_get_int(q->lc, "launch.num_machines");
    if (int_answer(*value) < machines)
        return TRUE;
    g_string_printf(
        why, "machine ranks count from 0: with %" G_GINT64_FORMAT " machines, give 0 to %" G_GINT64_FORMAT,
        machines, machines - 1);
    g_clear_pointer(value, g_free);
    return FALSE;
}

static gboolean check_address(const question *q, const char *answer, char **value, GString *why)
{
    for (const char *p = answer; *p; p++)
        if (g_ascii_isspace(*p) || g_ascii_iscntrl(*p)) {
            g_string_printf(why, "'%s' is not a host name or IP address: it has blanks", answer);
            return FALSE;
        }
    if (strlen(answer) > 253 || !g_ascii_strcasecmp(answer, "null")) {
        g_string_printf(why, "'%s' is not a host name or IP address", answer);
        return FALSE;
    }
    return check_value(q, answer, value, why);
}

static gboolean check_port(const question *q, const char *answer, char **value, GString *why)
{
    if (!check_value(q, answer, value, why))
        return FALSE;
    if (int_answer(*value) != 0 || rt_config_get_int(q->lc, "launch.num_machines") == 1)
        return TRUE;
    g_string_assign(why,
                    "0 would pick a free port on machine 0, which the other machines cannot know: give a "
                    "fixed port, such as 29500");
    g_clear_pointer(value, g_free);
    return FALSE;
}

static gboolean check_processes(const question *q, const char *answer, char **value, GString *why)
{
    if (!check_value(q, answer, value, why))
        return FALSE;
    gint64 n = int_answer(*value), machines = rt_config_get_int(q->lc, "launch.num_machines");
    if (n < 2)
        g_string_printf(why, "a %s run has 2 processes at least (for one, answer 'no' to the kind of run)",
                        rt_config_get_string(q->lc, "launch.distributed_type"));
    else if (n % machines != 0)
        g_string_printf(why,
                        "%" G_GINT64_FORMAT " is the total over the %" G_GINT64_FORMAT " machines, which "
                        "each run as many: give a multiple of %" G_GINT64_FORMAT,
                        n, machines, machines);
    else
        return TRUE;
    g_clear_pointer(value, g_free);
    return FALSE;
}

static gboolean check_gpu_ids(const question *q, const char *answer, char **value, GString *why)
{
    if (!check_value(q, answer, value, why))
        return FALSE;
    g_autoptr(rt_config) scratch = rt_launch_config_new();
    rt_config_set(scratch, "launch.gpu_ids", *value, NULL);
    size_t n = 0;
    g_autofree gint64 *ids = rt_config_get_int_list(scratch, "launch.gpu_ids", &n);
    gint64 per_machine =
        rt_config_get_int(q->lc, "launch.num_processes") / rt_config_get_int(q->lc, "launch.num_machines");
    gboolean multi_gpu = strcmp(rt_config_get_string(q->lc, "launch.distributed_type"), "multi-gpu") == 0;
    if (!ids)
        return TRUE; /* all */
    if (n == 0) {
        g_string_assign(why, "the list is empty: list GPUs (such as 0,1), or answer all");
    } else {
        for (size_t i = 0; i < n && !why->len; i++)
            for (size_t j = 0; j < i; j++)
                if (ids[i] == ids[j]) {
                    g_string_printf(why, "GPU %" G_GINT64_FORMAT " is listed twice", ids[i]);
                    break;
                }
        if (!why->len && multi_gpu && (gint64)n < per_machine)
            g_string_printf(why,
                            "each machine runs %" G_GINT64_FORMAT
                            " processes, one per GPU: list %" G_GINT64_FORMAT " GPUs at least, or answer all",
                            per_machine, per_machine);
    }
    if (!why->len)
        return TRUE;
    g_clear_pointer(value, g_free);
    return FALSE;
}

/* Asks q and sets q->key to the answer. */
static gboolean ask_key(dialog *d, question *q, rt_config *lc, GError **error)
{
    q->lc = lc;
    g_autofree char *value = ask(d, q, error);
    return value && rt_config_set(lc, q->key, value, error);
}

static const char *const environments[] = {
    "LOCAL_MACHINE", "this machine, and with several machines the others that reach it", NULL};
static const char *const kinds[] = {"no",        "a single process: no distributed training",
                                    "multi-cpu", "several processes on CPUs, communicating with Gloo",
                                    "multi-gpu", "one process per GPU, communicating with NCCL",
                                    NULL};
static const char *const precisions[] = {
    "no",   "fp32 everywhere",
    "fp16", "float16 matrix products and convolutions, with dynamic loss scaling",
    "bf16", "bfloat16 matrix products and convolutions",
    NULL};

/* The questions of accelerate config that apply to robotrain, in its order. */
static gboolean ask_all(dialog *d, rt_config *lc, guint gpus, GError **error)
{
    question q = {"In which compute environment are you running?",
                  environments,
                  "LOCAL_MACHINE",
                  check_environment,
                  NULL,
                  "launch.compute_environment"};
    if (!ask_key(d, &q, lc, error))
        return FALSE;

    q = (question){"Which kind of run is this?", kinds, gpus >= 2 ? "multi-gpu" : "no", check_choice, NULL,
                   "launch.distributed_type"};
    if (!ask_key(d, &q, lc, error))
        return FALSE;
    const char *kind = rt_config_get_string(lc, "launch.distributed_type");
    gboolean distributed = strcmp(kind, "no") != 0;
    gboolean multi_gpu = strcmp(kind, "multi-gpu") == 0;

    if (distributed) {
        q = (question){"How many machines will take part in the run (more than 1 for a multi-machine run)?",
                       NULL,
                       "1",
                       check_value,
                       NULL,
                       "launch.num_machines"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
    }
    gint64 machines = rt_config_get_int(lc, "launch.num_machines");
    if (machines > 1) {
        q = (question){"What is the rank of this machine (0 for the machine that hosts the rendezvous)?",
                       NULL,
                       "0",
                       check_machine_rank,
                       NULL,
                       "launch.machine_rank"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
        q = (question){"What is the IP address or host name of the machine of rank 0 (as the other machines "
                       "reach it)?",
                       NULL,
                       NULL,
                       check_address,
                       NULL,
                       "launch.main_process_ip"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
        q = (question){"Which TCP port will the rendezvous use on the machine of rank 0?",
                       NULL,
                       "29500",
                       check_port,
                       NULL,
                       "launch.main_process_port"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
    }

    if (distributed) {
        gint64 per_machine = multi_gpu && gpus >= 1 ? gpus : 2;
        g_autofree char *processes = g_strdup_printf("%" G_GINT64_FORMAT, MAX(per_machine * machines, 2));
        q = (question){multi_gpu ? "How many processes in total, one per GPU, over all the machines?"
                                 : "How many processes in total over all the machines?",
                       NULL,
                       processes,
                       check_processes,
                       NULL,
                       "launch.num_processes"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
    }
    if (multi_gpu || (!distributed && gpus >= 1)) {
        q = (question){multi_gpu
                           ? "Which GPUs (by id, as nvidia-smi lists them) should the processes of this "
                             "machine use, as a comma-separated list?"
                           : "Which GPU (by id, as nvidia-smi lists them) should the process use?",
                       NULL,
                       "all",
                       check_gpu_ids,
                       NULL,
                       "launch.gpu_ids"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
    }
    if (strcmp(kind, "multi-cpu") == 0) {
        q = (question){"How many CPU threads should each process use (its OMP_NUM_THREADS)?",
                       NULL,
                       "auto",
                       check_value,
                       NULL,
                       "launch.num_cpu_threads_per_process"};
        if (!ask_key(d, &q, lc, error))
            return FALSE;
    }
    q = (question){"Do you wish to use mixed precision?",
                   precisions,
                   "no",
                   check_choice,
                   NULL,
                   "launch.mixed_precision"};
    return ask_key(d, &q, lc, error);
}

static int run_questionnaire(int argc, char **argv)
{
    g_autoptr(rt_config) flags = questionnaire_flags();
    g_autoptr(GError) error = NULL;
    if (!rt_config_parse_args(flags, argc, argv, NULL, &error)) {
        print_error(error);
        fprintf(stderr, "See 'robotrain config --help'.\n");
        return RT_EXIT_USAGE;
    }
    g_autofree char *synopsis = rt_config_synopsis(flags);
    g_autofree char *usage =
        g_strdup_printf("usage: robotrain config %s\n\nAsk about this machine and the run, "
                        "and write the launch configuration.",
                        synopsis);
    if (rt_config_handle_help(flags, usage, stdout))
        return RT_EXIT_OK;

    dialog d = {stdin, stdout, !isatty(STDIN_FILENO)};
    g_autofree char *path = file_of(flags);
    gboolean overwrite = rt_config_get_bool(flags, "force");
    if (!overwrite && g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_autofree char *text = g_strdup_printf("%s exists already. Replace it?", path);
        question q = {text, NULL, "no", check_yes_no, NULL, NULL};
        g_autofree char *answer = ask(&d, &q, &error);
        if (!answer) {
            print_error(error);
            return RT_EXIT_FAILURE;
        }
        if (strcmp(answer, "yes") != 0) {
            fprintf(stderr, "robotrain config: %s was left as it is.\n", path);
            return RT_EXIT_FAILURE;
        }
        overwrite = TRUE;
    }

    g_autoptr(rt_config) lc = rt_launch_config_new();
    guint gpus = count_gpus();
    fprintf(d.out,
            "Answer each question, or press Enter for the value in brackets. %u GPU(s) visible on this "
            "machine.\n",
            gpus);
    if (!ask_all(&d, lc, gpus, &error) || !rt_launch_config_validate(lc, &error) ||
        !rt_launch_config_save(lc, path, overwrite, &error)) {
        print_error(error);
        return RT_EXIT_FAILURE;
    }
    printf("\nrobotrain config: wrote %s\nShow it with 'robotrain config show'; robotrain launch reads it.\n",
           path);
    return RT_EXIT_OK;
}

/* ---------------------------------------------------------------- dispatch */

int rt_cmd_config(int argc, char **argv)
{
    const char *name = argc >= 2 ? argv[1] : "";
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout, TRUE);
        return RT_EXIT_OK;
    }
    if (strcmp(name, "--dump-options") == 0) { /* what 'config' checks: the keys of the file */
        g_autoptr(rt_config) lc = rt_launch_config_new();
        rt_config_print_options(lc, RT_HELP_STYLE_KEYFILE, stdout);
        return RT_EXIT_OK;
    }
    if (argc < 2 || name[0] == '-')
        return run_questionnaire(argc, argv);
    const subcommand *sub = NULL;
    const char *names[G_N_ELEMENTS(subcommands)];
    for (size_t i = 0; i < G_N_ELEMENTS(subcommands); i++) {
        names[i] = subcommands[i].name;
        if (strcmp(name, subcommands[i].name) == 0)
            sub = &subcommands[i];
    }
    if (!sub) {
        const char *near = rt_suggest_nearest(name, names, G_N_ELEMENTS(names));
        fprintf(stderr, "robotrain config: '%s' is not a subcommand of config.", name);
        if (near)
            fprintf(stderr, " Did you mean '%s'?", near);
        fprintf(stderr, "\nSee 'robotrain config --help'.\n");
        return RT_EXIT_USAGE;
    }

    g_autoptr(rt_config) flags = subcommand_flags(sub);
    g_autoptr(GError) error = NULL;
    if (!rt_config_parse_args(flags, argc - 1, argv + 1, NULL, &error)) {
        print_error(error);
        return RT_EXIT_USAGE;
    }
    g_autofree char *usage = usage_of(sub, flags);
    g_autofree char *usage_line =
        g_strdup_printf("usage: %s\n\n%c%s.", usage, g_ascii_toupper(sub->summary[0]), sub->summary + 1);
    if (rt_config_handle_help(flags, usage_line, stdout))
        return RT_EXIT_OK;
    return sub->run(sub, flags);
}
