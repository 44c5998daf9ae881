/* The world (rank, sizes, master address) from the launcher's environment variables. */
#include "config.h"

#include <string.h>

#include <robotrain/error.h>
#include <robotrain/world.h>

#define MAX_PROCESSES (1 << 20) /* a bound on sizes read from the environment */

/* Slurm's reserved step ids (batch script, extern, interactive, pending...) sit at the top of
 * the 32-bit range; a task step started by srun has a small one. */
#define SLURM_FIRST_SPECIAL_STEP 0xfffffff0u

/* The variables one launcher sets. NULL: this launcher has no such variable. */
typedef struct {
    rt_launcher launcher;
    const char *rank, *size, *local_rank, *local_size, *node_rank, *n_nodes;
} launcher_vars;

static const launcher_vars env_vars = {
    RT_LAUNCHER_ENV, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
};
static const launcher_vars mpi_vars = {
    RT_LAUNCHER_MPI,         "OMPI_COMM_WORLD_RANK",       "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", NULL, NULL,
};
/* Slurm's local size and node count are read separately (they have alternative names). */
static const launcher_vars slurm_vars = {
    RT_LAUNCHER_SLURM, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, "SLURM_NODEID", NULL,
};

/* The values read so far; -1 where a launcher gave none. */
typedef struct {
    int rank, size, local_rank, local_size, node_rank, n_nodes;
} raw_world;

static const char *get(const char *const *envp, const char *name)
{
    return name ? g_environ_getenv((char **)envp, name) : NULL;
}

/* Parses variable name as a whole number in [min, max] into *out; leaves *out alone when the
 * variable is absent. */
static gboolean read_int(const char *const *envp, const char *name, int min, int max, int *out,
                         GError **error)
{
    const char *text = get(envp, name);
    if (text == NULL)
        return TRUE;
    guint64 value = 0;
    if (!g_ascii_string_to_unsigned(text, 10, (guint64)min, (guint64)max, &value, NULL)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s='%s' is not valid: the launcher must set it to a whole number from %d to %d", name,
                    text, min, max);
        return FALSE;
    }
    *out = (int)value;
    return TRUE;
}

static gboolean read_port(const char *const *envp, const char *name, uint16_t *out, GError **error)
{
    int port = -1;
    if (!read_int(envp, name, 1, 65535, &port, error))
        return FALSE;
    if (port > 0)
        *out = (uint16_t)port;
    return TRUE;
}

/* A yes/no variable; absent or empty is no. */
static gboolean read_flag(const char *const *envp, const char *name, gboolean *out, GError **error)
{
    const char *text = get(envp, name);
    if (text == NULL || *text == '\0') {
        *out = FALSE;
        return TRUE;
    }
    if (!g_ascii_strcasecmp(text, "1") || !g_ascii_strcasecmp(text, "true") || !g_ascii_strcasecmp(text, "yes")) {
        *out = TRUE;
        return TRUE;
    }
    if (!g_ascii_strcasecmp(text, "0") || !g_ascii_strcasecmp(text, "false") || !g_ascii_strcasecmp(text, "no")) {
        *out = FALSE;
        return TRUE;
    }
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s='%s' is not valid: use 1 or 0", name, text);
    return FALSE;
}

static gboolean read_raw(const char *const *envp, const launcher_vars *vars, raw_world *raw, GError **error)
{
    return read_int(envp, vars->rank, 0, MAX_PROCESSES - 1, &raw->rank, error) &&
           read_int(envp, vars->size, 1, MAX_PROCESSES, &raw->size, error) &&
           read_int(envp, vars->local_rank, 0, MAX_PROCESSES - 1, &raw->local_rank, error) &&
           read_int(envp, vars->local_size, 1, MAX_PROCESSES, &raw->local_size, error) &&
           read_int(envp, vars->node_rank, 0, MAX_PROCESSES - 1, &raw->node_rank, error) &&
           read_int(envp, vars->n_nodes, 1, MAX_PROCESSES, &raw->n_nodes, error);
}

/* One entry of Slurm's task-count list, "2(x3),1" = 2,2,2,1: the count of node node_id, and the
 * number of nodes the list covers. */
static gboolean parse_tasks_per_node(const char *name, const char *text, int node_id, int *count,
                                     int *n_nodes, GError **error)
{
    int node = 0;
    *count = -1;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        guint64 tasks = g_ascii_strtoull(p, &end, 10);
        guint64 repeat = 1;
        if (end == p || tasks == 0 || tasks > MAX_PROCESSES)
            goto bad;
        p = end;
        if (g_str_has_prefix(p, "(x")) {
            p += 2;
            repeat = g_ascii_strtoull(p, &end, 10);
            if (end == p || repeat == 0 || repeat > MAX_PROCESSES || *end != ')')
                goto bad;
            p = end + 1;
        }
        if (node_id >= node && (guint64)node_id < node + repeat)
            *count = (int)tasks;
        node += (int)repeat;
        if (node > MAX_PROCESSES)
            goto bad;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            goto bad;
    }
    if (node == 0)
        goto bad;
    *n_nodes = node;
    if (*count < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s='%s' lists %d node(s), but SLURM_NODEID=%d is not among them", name, text, node, node_id);
        return FALSE;
    }
    return TRUE;
bad:
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "%s='%s' is not valid: expected task counts per node such as '2(x3),1'", name, text);
    return FALSE;
}

/* Slurm's local size and node count, which have two names each. */
static gboolean read_slurm_extra(const char *const *envp, raw_world *raw, GError **error)
{
    const char *n_nodes_name = get(envp, "SLURM_STEP_NUM_NODES") ? "SLURM_STEP_NUM_NODES" : "SLURM_NNODES";
    if (!read_int(envp, n_nodes_name, 1, MAX_PROCESSES, &raw->n_nodes, error))
        return FALSE;
    const char *tpn_name = get(envp, "SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
    const char *tpn = get(envp, tpn_name);
    if (tpn == NULL) {
        if (raw->local_rank >= 0 && raw->n_nodes != 1) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "SLURM_LOCALID is set but neither SLURM_STEP_TASKS_PER_NODE nor SLURM_TASKS_PER_NODE "
                        "is, so the number of tasks on this node is unknown: start the workers with srun");
            return FALSE;
        }
        return TRUE;
    }
    int node = raw->node_rank >= 0 ? raw->node_rank : 0;
    int listed_nodes = 0;
    if (!parse_tasks_per_node(tpn_name, tpn, node, &raw->local_size, &listed_nodes, error))
        return FALSE;
    if (raw->n_nodes < 0)
        raw->n_nodes = listed_nodes;
    return TRUE;
}

/* Fills the derived fields and checks that the values agree with each other. */
static gboolean complete(const launcher_vars *vars, raw_world *raw, GError **error)
{
    const char *local_size_name = vars->local_size ? vars->local_size : "SLURM_TASKS_PER_NODE";
    if (raw->rank >= raw->size) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s=%d is not below %s=%d: every rank must lie in 0..%d", vars->rank, raw->rank,
                    vars->size, raw->size, raw->size - 1);
        return FALSE;
    }
    if ((raw->local_rank < 0) != (raw->local_size < 0)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s is set but %s is not: a launcher sets both, or neither for a single node",
                    raw->local_rank >= 0 ? vars->local_rank : local_size_name,
                    raw->local_rank >= 0 ? local_size_name : vars->local_rank);
        return FALSE;
    }
    if (raw->local_rank < 0) {
        raw->local_rank = raw->rank;
        raw->local_size = raw->size;
    }
    if (raw->local_size > raw->size) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s=%d exceeds %s=%d", local_size_name,
                    raw->local_size, vars->size, raw->size);
        return FALSE;
    }
    if (raw->local_rank >= raw->local_size) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s=%d is not below %s=%d", vars->local_rank,
                    raw->local_rank, local_size_name, raw->local_size);
        return FALSE;
    }
    if (raw->local_rank > raw->rank) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s=%d exceeds %s=%d: a process's rank on its node cannot exceed its global rank",
                    vars->local_rank, raw->local_rank, vars->rank, raw->rank);
        return FALSE;
    }
    if (raw->n_nodes < 0)
        raw->n_nodes = (raw->size + raw->local_size - 1) / raw->local_size;
    if (raw->node_rank < 0)
        raw->node_rank = (raw->rank - raw->local_rank) / raw->local_size;
    if (raw->node_rank >= raw->n_nodes) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "%s=%d is not below the number of nodes, %d%s%s%s",
                    vars->node_rank ? vars->node_rank : "the node rank", raw->node_rank, raw->n_nodes,
                    vars->n_nodes ? " (" : "", vars->n_nodes ? vars->n_nodes : "", vars->n_nodes ? ")" : "");
        return FALSE;
    }
    if (raw->n_nodes > raw->size) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG, "%s=%d nodes exceed %s=%d processes",
                    vars->n_nodes ? vars->n_nodes : "the node count", raw->n_nodes, vars->size, raw->size);
        return FALSE;
    }
    return TRUE;
}

static gboolean valid_run_id(const char *id)
{
    if (*id == '\0' || strlen(id) >= RT_WORLD_RUN_ID_MAX)
        return FALSE;
    for (const char *p = id; *p; p++)
        if (!g_ascii_isalnum(*p) && !strchr("._:-", *p))
            return FALSE;
    return TRUE;
}

static gboolean read_run_id(const char *const *envp, rt_launcher launcher, char *out, GError **error)
{
    const char *names[] = { "ROBOTRAIN_RUN_ID", "TORCHELASTIC_RUN_ID" };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        const char *id = get(envp, names[i]);
        if (id == NULL)
            continue;
        if (!valid_run_id(id)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "%s='%s' is not valid: a run id is 1 to %d letters, digits and . _ : -", names[i], id,
                        RT_WORLD_RUN_ID_MAX - 1);
            return FALSE;
        }
        g_strlcpy(out, id, RT_WORLD_RUN_ID_MAX);
        return TRUE;
    }
    const char *job = get(envp, "SLURM_JOB_ID");
    const char *step = get(envp, "SLURM_STEP_ID");
    if (launcher == RT_LAUNCHER_SLURM && job && step) {
        char *id = g_strdup_printf("slurm-%s.%s", job, step);
        gboolean ok = valid_run_id(id);
        if (ok)
            g_strlcpy(out, id, RT_WORLD_RUN_ID_MAX);
        g_free(id);
        if (ok)
            return TRUE;
    }
    g_strlcpy(out, "default", RT_WORLD_RUN_ID_MAX);
    return TRUE;
}

/* Where rank 0 and the store are. */
static gboolean read_rendezvous(const char *const *envp, rt_world *world, GError **error)
{
    const char *addr = get(envp, "MASTER_ADDR");
    if (addr != NULL) {
        gboolean ok = *addr != '\0' && strlen(addr) < RT_WORLD_ADDR_MAX;
        for (const char *p = addr; ok && *p; p++)
            ok = g_ascii_isgraph(*p);
        if (!ok) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "MASTER_ADDR='%s' is not valid: give the host name or IP address of the node that "
                        "runs rank 0",
                        addr);
            return FALSE;
        }
        g_strlcpy(world->master_addr, addr, sizeof world->master_addr);
    } else if (world->n_nodes > 1) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "MASTER_ADDR is not set, and the %d processes run on %d nodes: set MASTER_ADDR to the "
                    "address of the node that runs rank 0 (under srun: export MASTER_ADDR=$(scontrol show "
                    "hostnames \"$SLURM_JOB_NODELIST\" | head -n 1))",
                    world->world_size, world->n_nodes);
        return FALSE;
    }
    if (!read_port(envp, "MASTER_PORT", &world->master_port, error))
        return FALSE;

    world->store_port = world->master_port;
    if (get(envp, "ROBOTRAIN_STORE_PORT")) {
        if (!read_port(envp, "ROBOTRAIN_STORE_PORT", &world->store_port, error))
            return FALSE;
    } else if (world->launcher == RT_LAUNCHER_ENV) {
        /* torchrun's agent serves its own (PyTorch) store on MASTER_PORT. */
        gboolean agent_store = FALSE;
        const char *v = get(envp, "TORCHELASTIC_USE_AGENT_STORE");
        agent_store = v && (!g_ascii_strcasecmp(v, "true") || !strcmp(v, "1"));
        if (agent_store) {
            if (world->master_port == 65535) {
                g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                            "MASTER_PORT=65535 is held by torchrun's store and leaves no port above it for "
                            "robotrain's: set ROBOTRAIN_STORE_PORT");
                return FALSE;
            }
            world->store_port = (uint16_t)(world->master_port + 1);
        }
    }
    return read_flag(envp, "ROBOTRAIN_STORE_HOSTED", &world->store_hosted, error);
}

/* Whether Slurm's variables describe this process: it runs in an srun task step. */
static gboolean in_slurm_step(const char *const *envp)
{
    if (!get(envp, "SLURM_PROCID"))
        return FALSE;
    const char *step = get(envp, "SLURM_STEP_ID");
    if (!step)
        step = get(envp, "SLURM_STEPID");
    guint64 id = 0;
    return step && g_ascii_string_to_unsigned(step, 10, 0, G_MAXUINT32, &id, NULL) &&
           id < SLURM_FIRST_SPECIAL_STEP;
}

void rt_world_init_single(rt_world *world)
{
    g_return_if_fail(world != NULL);
    memset(world, 0, sizeof *world);
    world->world_size = 1;
    world->local_world_size = 1;
    world->n_nodes = 1;
    g_strlcpy(world->master_addr, "127.0.0.1", sizeof world->master_addr);
    world->master_port = RT_WORLD_DEFAULT_PORT;
    world->store_port = RT_WORLD_DEFAULT_PORT;
    g_strlcpy(world->run_id, "default", sizeof world->run_id);
    world->launcher = RT_LAUNCHER_NONE;
}

gboolean rt_world_from_environ(rt_world *world, const char *const *envp, GError **error)
{
    g_return_val_if_fail(world != NULL, FALSE);
    char **own_env = NULL;
    if (envp == NULL)
        envp = (const char *const *)(own_env = g_get_environ());

    const launcher_vars *vars = NULL;
    if (get(envp, "RANK") || get(envp, "WORLD_SIZE"))
        vars = &env_vars;
    else if (get(envp, "OMPI_COMM_WORLD_RANK") || get(envp, "OMPI_COMM_WORLD_SIZE"))
        vars = &mpi_vars;
    else if (in_slurm_step(envp))
        vars = &slurm_vars;

    rt_world w;
    rt_world_init_single(&w);
    raw_world raw = { -1, -1, -1, -1, -1, -1 };
    gboolean ok = TRUE;
    if (vars == NULL) {
        /* A lone LOCAL_RANK is a launcher half-configured, not a single process. */
        const char *local = get(envp, "LOCAL_RANK");
        if (local) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "LOCAL_RANK='%s' is set but RANK and WORLD_SIZE are not: a launcher sets all three "
                        "(unset LOCAL_RANK to run a single process)",
                        local);
            ok = FALSE;
        }
        raw.rank = 0;
        raw.size = 1;
    } else {
        w.launcher = vars->launcher;
        ok = read_raw(envp, vars, &raw, error);
        if (ok && (raw.rank < 0 || raw.size < 0)) {
            g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                        "%s is set but %s is not: a launcher sets both", raw.rank >= 0 ? vars->rank : vars->size,
                        raw.rank >= 0 ? vars->size : vars->rank);
            ok = FALSE;
        }
        if (ok && vars == &slurm_vars)
            ok = read_slurm_extra(envp, &raw, error);
    }
    static const launcher_vars none_vars = { RT_LAUNCHER_NONE, "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                             "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE" };
    ok = ok && complete(vars ? vars : &none_vars, &raw, error);
    if (ok) {
        w.rank = raw.rank;
        w.world_size = raw.size;
        w.local_rank = raw.local_rank;
        w.local_world_size = raw.local_size;
        w.node_rank = raw.node_rank;
        w.n_nodes = raw.n_nodes;
        ok = read_rendezvous(envp, &w, error) && read_run_id(envp, w.launcher, w.run_id, error);
    }
    g_strfreev(own_env);
    if (ok)
        *world = w;
    return ok;
}

gboolean rt_world_from_env(rt_world *world, GError **error)
{
    return rt_world_from_environ(world, NULL, error);
}

const char *rt_launcher_name(rt_launcher launcher)
{
    switch (launcher) {
    case RT_LAUNCHER_NONE: return "none";
    case RT_LAUNCHER_ENV: return "torchrun/robotrain launch";
    case RT_LAUNCHER_MPI: return "mpirun";
    case RT_LAUNCHER_SLURM: return "srun";
    }
    return "unknown";
}

char *rt_world_describe(const rt_world *world)
{
    g_return_val_if_fail(world != NULL, NULL);
    return g_strdup_printf("rank %d of %d (local %d of %d on node %d of %d), master %s:%u, store port %u%s, "
                           "run %s, %s",
                           world->rank, world->world_size, world->local_rank, world->local_world_size,
                           world->node_rank, world->n_nodes, world->master_addr, world->master_port,
                           world->store_port, world->store_hosted ? " (hosted by the launcher)" : "",
                           world->run_id,
                           world->launcher == RT_LAUNCHER_NONE
                               ? "single process"
                               : (world->launcher == RT_LAUNCHER_ENV ? "from torchrun/robotrain launch variables"
                                  : world->launcher == RT_LAUNCHER_MPI ? "from mpirun variables"
                                                                        : "from srun variables"));
}
