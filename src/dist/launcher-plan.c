/* The launch plan: the launch configuration resolved for this machine, and each worker's
 * environment. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include <robotrain/error.h>
#include <robotrain/launch-config.h>

#include "dist/launcher.h"

void rt_launch_gpus_clear(rt_launch_gpus *gpus)
{
    if (gpus)
        g_clear_pointer(&gpus->why_none, g_free);
}

void rt_launch_plan_free(rt_launch_plan *plan)
{
    if (!plan)
        return;
    g_free(plan->distributed_type);
    g_free(plan->master_addr);
    g_free(plan->run_id);
    g_free(plan->cuda_visible_devices);
    g_free(plan->mixed_precision);
    g_free(plan->cpu_threads);
    g_strfreev(plan->notes);
    g_free(plan);
}

/* The probe, called once when first needed. */
typedef struct {
    rt_launch_gpu_probe probe;
    gpointer data;
    gboolean done;
    rt_launch_gpus gpus;
} gpu_cache;

static const rt_launch_gpus *gpus_of(gpu_cache *c)
{
    if (!c->done) {
        c->done = TRUE;
        if (c->probe)
            c->probe(&c->gpus, c->data);
        if (c->gpus.machine < 0)
            c->gpus.machine = 0;
        c->gpus.visible = CLAMP(c->gpus.visible, 0, c->gpus.machine);
        if (c->gpus.machine == 0 && !c->gpus.why_none)
            c->gpus.why_none = g_strdup("no GPU was found");
    }
    return &c->gpus;
}

static gboolean from_flag(const rt_config *lc, const char *key)
{
    return rt_config_get_source(lc, key) == RT_SOURCE_ARGS;
}

/* Sets key to an inferred value; origin says what it was inferred from. */
static gboolean infer(rt_config *lc, const char *key, const char *text, const char *origin, GError **error)
{
    return rt_launch_config_set_flag(lc, key, text, origin, error);
}

static void note(GPtrArray *notes, const char *format, ...) G_GNUC_PRINTF(2, 3);
static void note(GPtrArray *notes, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_ptr_array_add(notes, g_strdup_vprintf(format, ap));
    va_end(ap);
}

/* Steps 1-3 of rt_launch_plan_new(): distributed_type and num_processes where only other values
 * decide them. */
static gboolean resolve_type(rt_config *lc, gboolean use_cpu, gpu_cache *gpus, GPtrArray *notes,
                             GError **error)
{
    gint64 processes = rt_config_get_int(lc, "launch.num_processes");
    gint64 machines = rt_config_get_int(lc, "launch.num_machines");
    const char *type = rt_config_get_string(lc, "launch.distributed_type");
    gboolean alone = processes == 1 && machines == 1;

    if (use_cpu)
        return infer(lc, "launch.distributed_type", alone ? "no" : "multi-cpu", "--cpu", error);

    if (!from_flag(lc, "launch.distributed_type") &&
        (from_flag(lc, "launch.num_processes") || from_flag(lc, "launch.num_machines"))) {
        g_autofree char *was = rt_config_describe_origin(lc, "launch.distributed_type");
        const char *by = from_flag(lc, "launch.num_processes") ? "--num_processes" : "--num_machines";
        if (alone && strcmp(type, "no") != 0) {
            note(notes, "one process: distributed_type no (instead of %s, %s)", type, was);
            g_autofree char *origin = g_strdup_printf("distributed_type, inferred from %s", by);
            if (!infer(lc, "launch.distributed_type", "no", origin, error))
                return FALSE;
        } else if (!alone && strcmp(type, "no") == 0) {
            int visible = gpus_of(gpus)->visible;
            const char *now = visible >= 2 ? "multi-gpu" : "multi-cpu";
            note(notes,
                 "%" G_GINT64_FORMAT
                 " processes and %d GPU(s) visible: distributed_type %s (instead of no, %s)",
                 processes, visible, now, was);
            g_autofree char *origin = g_strdup_printf("distributed_type, inferred from %s", by);
            if (!infer(lc, "launch.distributed_type", now, origin, error))
                return FALSE;
        }
    }

    type = rt_config_get_string(lc, "launch.distributed_type");
    if (strcmp(type, "multi-gpu") == 0 &&
        rt_config_get_source(lc, "launch.num_processes") == RT_SOURCE_DEFAULT) {
        size_t n_ids = 0;
        g_autofree gint64 *ids = rt_config_get_int_list(lc, "launch.gpu_ids", &n_ids);
        gint64 per_machine = ids ? (gint64)n_ids : gpus_of(gpus)->visible;
        if (per_machine >= 1) {
            g_autofree char *total = g_strdup_printf("%" G_GINT64_FORMAT, per_machine * machines);
            note(notes,
                 "num_processes not given: %s, one per %s GPU of each of the %" G_GINT64_FORMAT " machine(s)",
                 total, ids ? "listed" : "visible", machines);
            if (!infer(lc, "launch.num_processes", total, "num_processes, one per GPU", error))
                return FALSE;
        }
    }
    return TRUE;
}

/* "CUDA_VISIBLE_DEVICES=0,1" or "CUDA_VISIBLE_DEVICES is not set", for messages. */
static char *visible_devices_text(const char *const *envp)
{
    const char *cvd = g_environ_getenv((char **)envp, "CUDA_VISIBLE_DEVICES");
    return cvd ? g_strdup_printf("CUDA_VISIBLE_DEVICES=%s", cvd)
               : g_strdup("CUDA_VISIBLE_DEVICES is not set");
}

static char *join_ids(const gint64 *ids, size_t n)
{
    GString *s = g_string_new(NULL);
    for (size_t i = 0; i < n; i++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "", ids[i]);
    return g_string_free(s, FALSE);
}

/* Whether the workers use GPUs the configuration names or needs: not with --cpu or multi-cpu,
 * where gpu_ids of a key file is not used (the workers see no GPU) and --gpu_ids is an error. */
static gboolean wants_gpus(const rt_config *lc, gboolean use_cpu, GError **error)
{
    const char *type = rt_config_get_string(lc, "launch.distributed_type");
    if (!use_cpu && strcmp(type, "multi-cpu") != 0)
        return !rt_config_is_null(lc, "launch.gpu_ids") || strcmp(type, "multi-gpu") == 0;
    if (!rt_config_is_null(lc, "launch.gpu_ids") && from_flag(lc, "launch.gpu_ids")) {
        size_t n_ids = 0;
        g_autofree gint64 *ids = rt_config_get_int_list(lc, "launch.gpu_ids", &n_ids);
        g_autofree char *ids_text = join_ids(ids, n_ids);
        g_autofree char *why = rt_config_describe_origin(lc, "launch.distributed_type");
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "--gpu_ids=%s: the workers run on CPUs (distributed_type %s, from %s) and use no GPU; "
                    "leave out --gpu_ids, or use --multi_gpu",
                    ids_text, type, why);
    }
    return FALSE;
}

/* Step 5, before the rules between keys: the GPUs named exist, and multi-gpu sees one at least. */
static gboolean check_gpus_exist(const rt_config *lc, gpu_cache *gpus, const char *const *envp,
                                 GError **error)
{
    size_t n_ids = 0;
    g_autofree gint64 *ids = rt_config_get_int_list(lc, "launch.gpu_ids", &n_ids);
    const rt_launch_gpus *g = gpus_of(gpus);
    if (ids) {
        g_autofree char *origin = rt_config_describe_origin(lc, "launch.gpu_ids");
        g_autofree char *text = join_ids(ids, n_ids);
        if (g->machine == 0) {
            g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                        "%s=%s names GPUs, but no GPU is visible on this machine: %s; check nvidia-smi, "
                        "or run on CPUs with --cpu",
                        origin, text, g->why_none);
            return FALSE;
        }
        for (size_t i = 0; i < n_ids; i++)
            if (ids[i] >= g->machine) {
                g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                            "%s=%s: there is no GPU %" G_GINT64_FORMAT ": this machine has %d GPU(s), "
                            "numbered 0 to %d as nvidia-smi lists them",
                            origin, text, ids[i], g->machine, g->machine - 1);
                return FALSE;
            }
        return TRUE;
    }
    if (g->visible > 0)
        return TRUE;
    g_autofree char *origin = rt_config_describe_origin(lc, "launch.distributed_type");
    g_autofree char *why = g->machine == 0 ? g_strdup(g->why_none) : NULL;
    if (!why) {
        g_autofree char *cvd = visible_devices_text(envp);
        why = g_strdup_printf("%s hides its %d GPU(s)", cvd, g->machine);
    }
    g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                "%s: multi-gpu runs one process per GPU, but no GPU is visible on this machine: %s; "
                "check nvidia-smi, or run on CPUs with --cpu",
                origin, why);
    return FALSE;
}

/* Step 5, after the rules: multi-gpu has a visible GPU for each process of this machine (with
 * gpu_ids, the rules checked their number). */
static gboolean check_gpus_enough(const rt_config *lc, gpu_cache *gpus, const char *const *envp,
                                  GError **error)
{
    if (strcmp(rt_config_get_string(lc, "launch.distributed_type"), "multi-gpu") != 0 ||
        !rt_config_is_null(lc, "launch.gpu_ids"))
        return TRUE;
    const rt_launch_gpus *g = gpus_of(gpus);
    gint64 per_machine =
        rt_config_get_int(lc, "launch.num_processes") / rt_config_get_int(lc, "launch.num_machines");
    if (per_machine <= g->visible)
        return TRUE;
    g_autofree char *origin = rt_config_describe_origin(lc, "launch.num_processes");
    g_autofree char *cvd = visible_devices_text(envp);
    g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                "%s: multi-gpu runs %" G_GINT64_FORMAT
                " process(es) on this machine, one per GPU, but %d GPU(s) "
                "%s visible (%s); lower --num_processes, or run on CPUs with --cpu",
                origin, per_machine, g->visible, g->visible == 1 ? "is" : "are", cvd);
    return FALSE;
}

/* A rule of the launcher on top of the file's: every machine must know the port. */
static gboolean check_port(const rt_config *lc, GError **error)
{
    gint64 machines = rt_config_get_int(lc, "launch.num_machines");
    if (machines == 1 || rt_config_get_int(lc, "launch.main_process_port") != 0)
        return TRUE;
    g_autofree char *origin = rt_config_describe_origin(lc, "launch.main_process_port");
    g_set_error(
        error, RT_ERROR, RT_ERROR_INVALID_ARG,
        "%s: main_process_port = 0 picks a free port on machine rank 0, which the other machines cannot "
        "know: give a fixed port for a run over %" G_GINT64_FORMAT " machines",
        origin, machines);
    return FALSE;
}

/* OMP_NUM_THREADS of the workers: the key, else the launcher's own, else 1. */
static char *cpu_threads_of(const rt_config *lc, const char *const *envp)
{
    if (!rt_config_is_null(lc, "launch.num_cpu_threads_per_process"))
        return g_strdup_printf("%" G_GINT64_FORMAT,
                               rt_config_get_int(lc, "launch.num_cpu_threads_per_process"));
    const char *own = g_environ_getenv((char **)envp, "OMP_NUM_THREADS");
    return g_strdup(own && *own ? own : "1");
}

/* The run id: ROBOTRAIN_RUN_ID when given; on one machine a fresh one, so that a store left by
 * another run is never taken for this run's; over several machines the launchers cannot agree
 * on a fresh one, so "default" (set ROBOTRAIN_RUN_ID on every machine to tell runs apart). */
static char *run_id_of(int machines, const char *const *envp)
{
    const char *given = g_environ_getenv((char **)envp, "ROBOTRAIN_RUN_ID");
    if (given && *given)
        return g_strdup(given);
    if (machines > 1)
        return g_strdup("default");
    return g_strdup_printf("launch-%ld-%08x", (long)getpid(), g_random_int());
}

rt_launch_plan *rt_launch_plan_new(rt_config *lc, gboolean use_cpu, rt_launch_gpu_probe probe, gpointer data,
                                   const char *const *envp, GError **error)
{
    g_return_val_if_fail(lc != NULL, NULL);
    g_auto(GStrv) own_env = envp ? NULL : g_get_environ();
    if (!envp)
        envp = (const char *const *)own_env;
    gpu_cache gpus = {probe, data, FALSE, {0, 0, NULL}};
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);

    gboolean ok = resolve_type(lc, use_cpu, &gpus, notes, error);
    if (ok) {
        GError *cpu_error = NULL;
        gboolean gpus_wanted = wants_gpus(lc, use_cpu, &cpu_error);
        if (cpu_error) {
            g_propagate_error(error, cpu_error);
            ok = FALSE;
        } else {
            ok = (!gpus_wanted || check_gpus_exist(lc, &gpus, envp, error)) &&
                 rt_launch_config_validate(lc, error) && check_port(lc, error) &&
                 (!gpus_wanted || check_gpus_enough(lc, &gpus, envp, error));
        }
    }
    rt_launch_gpus_clear(&gpus.gpus);
    if (!ok)
        return NULL;

    rt_launch_plan *plan = g_new0(rt_launch_plan, 1);
    plan->distributed_type = g_strdup(rt_config_get_string(lc, "launch.distributed_type"));
    plan->use_cpu = use_cpu || strcmp(plan->distributed_type, "multi-cpu") == 0;
    plan->num_machines = (int)rt_config_get_int(lc, "launch.num_machines");
    plan->machine_rank = (int)rt_config_get_int(lc, "launch.machine_rank");
    plan->world_size = (int)rt_config_get_int(lc, "launch.num_processes");
    plan->local_world_size = plan->world_size / plan->num_machines;
    plan->first_rank = plan->machine_rank * plan->local_world_size;
    const char *ip = rt_config_get_string(lc, "launch.main_process_ip");
    plan->master_addr = g_strdup(ip ? ip : "127.0.0.1");
    plan->master_port = (uint16_t)rt_config_get_int(lc, "launch.main_process_port");
    plan->host_store = plan->machine_rank == 0 && plan->world_size > 1;
    plan->run_id = run_id_of(plan->num_machines, envp);
    if (plan->use_cpu) {
        plan->cuda_visible_devices = g_strdup("");
    } else {
        size_t n_ids = 0;
        g_autofree gint64 *ids = rt_config_get_int_list(lc, "launch.gpu_ids", &n_ids);
        plan->cuda_visible_devices = ids ? join_ids(ids, n_ids) : NULL;
    }
    plan->mixed_precision = g_strdup(rt_config_get_string(lc, "launch.mixed_precision"));
    plan->cpu_threads = cpu_threads_of(lc, envp);
    g_ptr_array_add(notes, NULL);
    plan->notes = (char **)g_ptr_array_steal(notes, NULL);
    return plan;
}

static char **set_int(char **env, const char *name, int value)
{
    char text[16];
    g_snprintf(text, sizeof text, "%d", value);
    return g_environ_setenv(env, name, text, TRUE);
}

char **rt_launch_plan_worker_environ(const rt_launch_plan *plan, int local_rank, const char *const *base)
{
    g_return_val_if_fail(plan != NULL && local_rank >= 0 && local_rank < plan->local_world_size, NULL);
    char **env = base ? g_strdupv((char **)base) : g_get_environ();
    env = set_int(env, "RANK", plan->first_rank + local_rank);
    env = set_int(env, "LOCAL_RANK", local_rank);
    env = set_int(env, "WORLD_SIZE", plan->world_size);
    env = set_int(env, "LOCAL_WORLD_SIZE", plan->local_world_size);
    env = set_int(env, "GROUP_RANK", plan->machine_rank);
    env = set_int(env, "GROUP_WORLD_SIZE", plan->num_machines);
    env = g_environ_setenv(env, "MASTER_ADDR", plan->master_addr, TRUE);
    env = set_int(env, "MASTER_PORT", plan->master_port);
    /* Said explicitly, so that an inherited ROBOTRAIN_STORE_PORT or torchrun variable cannot
     * send the workers elsewhere. */
    env = set_int(env, "ROBOTRAIN_STORE_PORT", plan->master_port);
    if (plan->world_size > 1)
        env = g_environ_setenv(env, "ROBOTRAIN_STORE_HOSTED", "1", TRUE);
    else
        env = g_environ_unsetenv(env, "ROBOTRAIN_STORE_HOSTED");
    env = g_environ_setenv(env, "ROBOTRAIN_RUN_ID", plan->run_id, TRUE);
    env = g_environ_setenv(env, "ROBOTRAIN_MIXED_PRECISION", plan->mixed_precision, TRUE);
    env = g_environ_setenv(env, "OMP_NUM_THREADS", plan->cpu_threads, TRUE);
    if (plan->cuda_visible_devices)
        env = g_environ_setenv(env, "CUDA_VISIBLE_DEVICES", plan->cuda_visible_devices, TRUE);
    return env;
}

char *rt_launch_plan_describe(const rt_launch_plan *plan)
{
    g_return_val_if_fail(plan != NULL, NULL);
    GString *s = g_string_new(NULL);
    int last = plan->first_rank + plan->local_world_size - 1;
    if (plan->local_world_size == 1)
        g_string_append_printf(s, "1 worker (rank %d of %d)", plan->first_rank, plan->world_size);
    else
        g_string_append_printf(s, "%d workers (ranks %d-%d of %d)", plan->local_world_size, plan->first_rank,
                               last, plan->world_size);
    g_string_append_printf(s, " on machine %d of %d, distributed_type %s", plan->machine_rank,
                           plan->num_machines, plan->distributed_type);
    if (plan->world_size > 1)
        g_string_append_printf(s, ", rendezvous %s %s:%u", plan->host_store ? "hosted at" : "at",
                               plan->master_addr, plan->master_port);
    if (plan->use_cpu)
        g_string_append(s, ", CPUs only");
    else if (plan->cuda_visible_devices)
        g_string_append_printf(s, ", GPUs %s", plan->cuda_visible_devices);
    g_string_append_printf(s, ", mixed precision %s, %s CPU thread(s) each", plan->mixed_precision,
                           plan->cpu_threads);
    return g_string_free(s, FALSE);
}
