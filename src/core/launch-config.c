/* The launch configuration (robotrain.conf(5)): its table, its file and the rules between keys. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/launch-config.h>

#include "core/options-private.h"

static const char *const compute_environments[] = {"LOCAL_MACHINE", NULL};
static const char *const distributed_types[] = {"no", "multi-cpu", "multi-gpu", NULL};
static const char *const precisions[] = {"no", "fp16", "bf16", NULL};

/* [launch]: accelerate's default_config.yaml keys that robotrain's launcher uses. */
static const rt_option launch_options[] = {
    {.key = "compute_environment",
     .type = RT_OPT_ENUM,
     .default_value = "LOCAL_MACHINE",
     .choices = compute_environments,
     .help = "Where the processes run: LOCAL_MACHINE is this machine and, with num_machines > 1, "
             "the machines that reach main_process_ip (accelerate's AMAZON_SAGEMAKER is not supported)."},
    {.key = "distributed_type",
     .type = RT_OPT_ENUM,
     .default_value = "no",
     .choices = distributed_types,
     .help = "How the processes share the work: no (a single process), multi-cpu (data-parallel "
             "processes on CPUs, with Gloo) or multi-gpu (one process per GPU, with NCCL)."},
    {.key = "num_machines",
     .type = RT_OPT_INT,
     .default_value = "1",
     .min = 1,
     .max = 65536,
     .flags = RT_OPT_RANGE,
     .help = "Number of machines taking part in the run."},
    {.key = "machine_rank",
     .type = RT_OPT_INT,
     .default_value = "0",
     .min = 0,
     .max = 65535,
     .flags = RT_OPT_RANGE,
     .help = "Rank of this machine, from 0 to num_machines - 1; machine 0 hosts the rendezvous."},
    {.key = "main_process_ip",
     .type = RT_OPT_STRING,
     .default_value = NULL,
     .flags = RT_OPT_NULLABLE,
     .help = "Host name or IP address of machine rank 0, needed when num_machines > 1; null means "
             "127.0.0.1 (a single machine)."},
    {.key = "main_process_port",
     .type = RT_OPT_INT,
     .default_value = "29500",
     .min = 0,
     .max = 65535,
     .flags = RT_OPT_RANGE,
     .help = "TCP port of the rendezvous on machine rank 0; 0 picks a free port."},
    {.key = "num_processes",
     .type = RT_OPT_INT,
     .default_value = "1",
     .min = 1,
     .max = 65536,
     .flags = RT_OPT_RANGE,
     .help = "Total number of worker processes over all machines; each machine runs "
             "num_processes / num_machines of them."},
    {.key = "gpu_ids",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_INT,
     .default_value = NULL,
     .null_text = "all",
     .min = 0,
     .max = 1023,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .help = "CUDA devices the workers of this machine may use (they become CUDA_VISIBLE_DEVICES), "
             "e.g. 0,1; all means every visible GPU."},
    {.key = "mixed_precision",
     .type = RT_OPT_ENUM,
     .default_value = "no",
     .choices = precisions,
     .help = "Precision of matrix products and convolutions: no (fp32), fp16 (with dynamic loss "
             "scaling) or bf16; parameters stay fp32. Workers see it as ROBOTRAIN_MIXED_PRECISION."},
    {.key = "num_cpu_threads_per_process",
     .type = RT_OPT_INT,
     .default_value = NULL,
     .null_text = "auto",
     .min = 1,
     .max = 4096,
     .flags = RT_OPT_NULLABLE | RT_OPT_RANGE,
     .help = "CPU threads of each worker (its OMP_NUM_THREADS); auto means the launcher's "
             "OMP_NUM_THREADS, else 1."},
};

/* [core]: settings of robotrain itself. */
static const rt_option core_options[] = {
    {.key = "plugin_path",
     .type = RT_OPT_LIST,
     .item_type = RT_OPT_PATH,
     .default_value = "[]",
     .help = "Folders searched for modules after --plugin_path and ROBOTRAIN_PLUGIN_PATH, and "
             "before $XDG_DATA_HOME/robotrain/plugins and the built-in folder."},
};

static const char *const groups[] = {"launch", "core", NULL};

const char *const *rt_launch_config_groups(void)
{
    return groups;
}

const rt_option *rt_launch_config_options(const char *group, size_t *n)
{
    g_return_val_if_fail(n != NULL, NULL);
    if (group && strcmp(group, "launch") == 0) {
        *n = G_N_ELEMENTS(launch_options);
        return launch_options;
    }
    if (group && strcmp(group, "core") == 0) {
        *n = G_N_ELEMENTS(core_options);
        return core_options;
    }
    *n = 0;
    return NULL;
}

const rt_option *rt_launch_config_option(const char *key)
{
    g_return_val_if_fail(key != NULL, NULL);
    const char *dot = strchr(key, '.');
    if (!dot)
        return NULL;
    g_autofree char *group = g_strndup(key, (gsize)(dot - key));
    size_t n;
    const rt_option *rows = rt_launch_config_options(group, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].key, dot + 1) == 0)
            return &rows[i];
    return NULL;
}

rt_config *rt_launch_config_new(void)
{
    rt_config *lc = rt_config_new("robotrain config");
    for (size_t g = 0; groups[g]; g++) {
        size_t n;
        const rt_option *rows = rt_launch_config_options(groups[g], &n);
        GError *error = NULL;
        if (!rt_config_add_options(lc, groups[g], rows, n, &error))
            g_error("the launch configuration table is malformed: %s", error->message); /* a bug */
    }
    return lc;
}

char *rt_launch_config_default_path(void)
{
    return g_build_filename(g_get_user_config_dir(), "robotrain", RT_LAUNCH_CONFIG_FILE, NULL);
}

/* ---------------------------------------------------------------- rules between keys */

typedef struct {
    const rt_config *lc;
    GString *problems;
} rules;

/* Reports a problem about key (named with its origin: file and group, flag or default). */
static void problem(rules *r, const char *key, const char *format, ...) G_GNUC_PRINTF(3, 4);

static void problem(rules *r, const char *key, const char *format, ...)
{
    g_autofree char *origin = rt_config_describe_origin(r->lc, key);
    if (r->problems->len)
        g_string_append_c(r->problems, '\n');
    g_string_append_printf(r->problems, "%s: ", origin);
    va_list ap;
    va_start(ap, format);
    g_string_append_vprintf(r->problems, format, ap);
    va_end(ap);
}

/* Of two keys that disagree, the one to blame: the one set explicitly, else the first. */
static const char *blame(const rt_config *lc, const char *a, const char *b)
{
    return !rt_config_is_set_explicitly(lc, a) && rt_config_is_set_explicitly(lc, b) ? b : a;
}

/* "2 (the default)", "2 (from --num_machines)", "2 (from launch.conf)". Returns (transfer full). */
static char *value_from(const rt_config *lc, const char *key)
{
    g_autofree char *text = rt_config_get_text(lc, key);
    switch (rt_config_get_source(lc, key)) {
    case RT_SOURCE_DEFAULT:
        return g_strdup_printf("%s, the default", text);
    case RT_SOURCE_FILE:
        return g_strdup_printf("%s, from %s", text, rt_config_get_source_file(lc, key));
    case RT_SOURCE_ARGS: {
        g_autofree char *flag = rt_config_describe_origin(lc, key);
        return g_strdup_printf("%s, from %s", text, flag);
    }
    case RT_SOURCE_PROGRAM:
        break;
    }
    return g_strdup_printf("%s, set by the program", text);
}

gboolean rt_launch_config_validate(const rt_config *lc, GError **error)
{
    g_return_val_if_fail(lc != NULL, FALSE);
    rules r = {lc, g_string_new(NULL)};
    gint64 machines = rt_config_get_int(lc, "launch.num_machines");
    gint64 rank = rt_config_get_int(lc, "launch.machine_rank");
    gint64 processes = rt_config_get_int(lc, "launch.num_processes");
    const char *type = rt_config_get_string(lc, "launch.distributed_type");
    gboolean single = strcmp(type, "no") == 0;

    if (rank >= machines) {
        g_autofree char *m = value_from(lc, "launch.num_machines");
        problem(&r, blame(lc, "launch.machine_rank", "launch.num_machines"),
                "machine_rank = %" G_GINT64_FORMAT
                " must be less than num_machines (%s); machine ranks count from 0",
                rank, m);
    }
    if (single && processes > 1) {
        g_autofree char *p = value_from(lc, "launch.num_processes");
        g_autofree char *t = value_from(lc, "launch.distributed_type");
        problem(&r, blame(lc, "launch.distributed_type", "launch.num_processes"),
                "distributed_type (%s) runs a single process, but num_processes is %s; set distributed_type "
                "to multi-gpu or multi-cpu, or num_processes to 1",
                t, p);
    }
    if (single && machines > 1) {
        g_autofree char *m = value_from(lc, "launch.num_machines");
        g_autofree char *t = value_from(lc, "launch.distributed_type");
        problem(&r, blame(lc, "launch.distributed_type", "launch.num_machines"),
                "distributed_type (%s) runs on one machine, but num_machines is %s; set distributed_type "
                "to multi-gpu or multi-cpu",
                t, m);
    }
    if (!single && processes < 2) {
        g_autofree char *p = value_from(lc, "launch.num_processes");
        problem(&r, blame(lc, "launch.distributed_type", "launch.num_processes"),
                "distributed_type %s needs at least 2 processes, but num_processes is %s; set num_processes "
                "(one per GPU), or distributed_type to no",
                type, p);
    }
    if (processes % machines != 0) {
        g_autofree char *m = value_from(lc, "launch.num_machines");
        problem(&r, blame(lc, "launch.num_processes", "launch.num_machines"),
                "num_processes = %" G_GINT64_FORMAT " is the total over all machines and must be a multiple "
                "of num_machines (%s)",
                processes, m);
    }
    const char *ip = rt_config_get_string(lc, "launch.main_process_ip");
    if (machines > 1 && !ip)
        problem(&r, "launch.num_machines",
                "num_machines = %" G_GINT64_FORMAT " needs main_process_ip, the address of machine rank 0",
                machines);
    if (ip) {
        gboolean blank = ip[0] == '\0';
        for (const char *p = ip; *p && !blank; p++)
            blank = g_ascii_isspace(*p) || g_ascii_iscntrl(*p);
        if (blank || strlen(ip) > 253)
            problem(&r, "launch.main_process_ip",
                    "'%s' is not a host name or IP address (it must be 1 to 253 characters without blanks)",
                    ip);
    }
    size_t n_ids = 0;
    g_autofree gint64 *ids = rt_config_get_int_list(lc, "launch.gpu_ids", &n_ids);
    if (ids && n_ids == 0)
        problem(&r, "launch.gpu_ids", "the list is empty; list the GPUs to use (e.g. 0,1), or write all");
    for (size_t i = 0; ids && i < n_ids; i++)
        for (size_t j = 0; j < i; j++)
            if (ids[i] == ids[j]) {
                problem(&r, "launch.gpu_ids", "GPU %" G_GINT64_FORMAT " is listed twice", ids[i]);
                i = n_ids; /* once is enough */
                break;
            }
    gint64 per_machine = processes / machines;
    if (ids && n_ids > 0 && strcmp(type, "multi-gpu") == 0 && (gint64)n_ids < per_machine)
        problem(&r, blame(lc, "launch.gpu_ids", "launch.num_processes"),
                "%zu GPU(s) listed in gpu_ids for %" G_GINT64_FORMAT
                " processes per machine (num_processes = %" G_GINT64_FORMAT " over %" G_GINT64_FORMAT
                " machine(s)); multi-gpu runs one process per GPU",
                n_ids, per_machine, processes, machines);

    gboolean ok = r.problems->len == 0;
    if (!ok)
        g_set_error_literal(error, RT_ERROR, RT_ERROR_INVALID_ARG, r.problems->str);
    g_string_free(r.problems, TRUE);
    return ok;
}

gboolean rt_launch_config_set_flag(rt_config *lc, const char *key, const char *text, const char *flag,
                                   GError **error)
{
    g_return_val_if_fail(lc != NULL && key != NULL && text != NULL && flag != NULL, FALSE);
    opt_entry *e = opt_lookup(lc, key);
    g_return_val_if_fail(e != NULL, FALSE);
    GString *why = g_string_new(NULL);
    JsonNode *value = opt_value_from_text(e->row, text, why);
    if (!value) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s: %s", flag, why->str);
        g_string_free(why, TRUE);
        return FALSE;
    }
    g_string_free(why, TRUE);
    opt_entry_assign(e, value, RT_SOURCE_ARGS, flag, FALSE);
    return TRUE;
}

/* ---------------------------------------------------------------- files */

gboolean rt_launch_config_load(rt_config *lc, const char *path, GError **error)
{
    g_return_val_if_fail(lc != NULL, FALSE);
    g_autofree char *default_path = path ? NULL : rt_launch_config_default_path();
    const char *file = path ? path : default_path;
    if (!rt_config_load_keyfile(lc, file, error))
        return FALSE;
    return rt_launch_config_validate(lc, error);
}

gboolean rt_launch_config_save(const rt_config *lc, const char *path, gboolean overwrite, GError **error)
{
    g_return_val_if_fail(lc != NULL, FALSE);
    g_autofree char *default_path = path ? NULL : rt_launch_config_default_path();
    return rt_config_save_keyfile(
        lc, path ? path : default_path,
        "robotrain launch configuration: see robotrain.conf(5).\n"
        "Check it with 'robotrain config check'; show it with 'robotrain config show'.",
        overwrite, error);
}

/* ---------------------------------------------------------------- this machine */

static gboolean is_device_entry(const char *s)
{
    if (g_str_has_prefix(s, "GPU-") || g_str_has_prefix(s, "MIG-"))
        return s[4] != '\0';
    if (!s[0])
        return FALSE;
    for (const char *p = s; *p; p++)
        if (!g_ascii_isdigit(*p))
            return FALSE;
    return TRUE;
}

guint rt_launch_count_visible_gpus(void)
{
    const char *env = g_getenv("CUDA_VISIBLE_DEVICES");
    if (!env)
        return 0;
    g_auto(GStrv) entries = g_strsplit(env, ",", -1);
    guint n = 0;
    for (; entries[n]; n++) {
        g_strstrip(entries[n]);
        if (!is_device_entry(entries[n]))
            break; /* CUDA ignores an invalid entry and everything after it */
    }
    return n;
}

gboolean rt_launch_config_set_machine_defaults(rt_config *lc, guint n_gpus, GError **error)
{
    g_return_val_if_fail(lc != NULL, FALSE);
    g_autofree char *processes = g_strdup_printf("%u", MAX(n_gpus, 1u));
    return rt_config_set(lc, "launch.num_processes", processes, error) &&
           rt_config_set(lc, "launch.distributed_type", n_gpus >= 2 ? "multi-gpu" : "no", error);
}
