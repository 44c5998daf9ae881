/* robotrain/world.h: who this process is in a distributed run.
 *
 * A worker learns its place from the environment its launcher gives it. Three launchers are
 * recognised, in this order (the first whose variables are present wins):
 *
 *   1. robotrain launch, torchrun, accelerate launch: RANK, WORLD_SIZE, LOCAL_RANK,
 *      LOCAL_WORLD_SIZE, GROUP_RANK (the node), GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
 *   2. Open MPI's mpirun: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK,
 *      OMPI_COMM_WORLD_LOCAL_SIZE;
 *   3. Slurm's srun, inside a job step (SLURM_STEP_ID names a task step): SLURM_PROCID,
 *      SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_TASKS_PER_NODE or
 *      SLURM_TASKS_PER_NODE ("2(x3),1"), SLURM_STEP_NUM_NODES or SLURM_NNODES. In an sbatch
 *      script outside srun these variables describe the allocation, not this process, and
 *      are ignored.
 *
 * With none of them the process is alone (world size 1). mpirun and srun do not say where rank
 * 0 runs: with more than one node, MASTER_ADDR must be set (for srun, e.g.
 * `export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)`); on one
 * node it defaults to 127.0.0.1. MASTER_PORT defaults to 29500, as in PyTorch.
 *
 * The rendezvous store (robotrain/store.h) listens on ROBOTRAIN_STORE_PORT, by default
 * MASTER_PORT, or MASTER_PORT + 1 under torchrun's own agent store
 * (TORCHELASTIC_USE_AGENT_STORE=True), which already holds MASTER_PORT. Rank 0 hosts it unless
 * ROBOTRAIN_STORE_HOSTED=1 says that the launcher does (robotrain launch sets it). The run id
 * (ROBOTRAIN_RUN_ID, else TORCHELASTIC_RUN_ID, else slurm-<job>.<step>, else "default") keeps
 * a store left over from another run from being mistaken for this run's.
 *
 * Local ranks and the node rank are derived when a launcher does not give them: a missing
 * local rank and local size mean one node; a missing node rank is
 * (rank - local rank) / local size. */
#ifndef ROBOTRAIN_WORLD_H
#define ROBOTRAIN_WORLD_H

#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

#define RT_WORLD_DEFAULT_PORT 29500
#define RT_WORLD_ADDR_MAX 256  /* bytes of master_addr, with the terminating NUL */
#define RT_WORLD_RUN_ID_MAX 128 /* bytes of run_id, with the terminating NUL */

typedef enum {
    RT_LAUNCHER_NONE = 0, /* no launcher variables: a single process */
    RT_LAUNCHER_ENV,      /* RANK/WORLD_SIZE: robotrain launch, torchrun, accelerate launch */
    RT_LAUNCHER_MPI,      /* OMPI_COMM_WORLD_*: Open MPI's mpirun */
    RT_LAUNCHER_SLURM,    /* SLURM_* in a job step: srun */
} rt_launcher;

/* A plain value: copy it freely, nothing to free. */
typedef struct rt_world {
    int rank;             /* 0 .. world_size - 1 */
    int world_size;       /* >= 1 */
    int local_rank;       /* rank on this node: 0 .. local_world_size - 1 (the GPU index) */
    int local_world_size; /* processes on this node */
    int node_rank;        /* this node: 0 .. n_nodes - 1 */
    int n_nodes;          /* >= 1 */
    char master_addr[RT_WORLD_ADDR_MAX]; /* the host that runs rank 0 (and the store) */
    uint16_t master_port;
    uint16_t store_port;   /* where the rendezvous store listens, on master_addr */
    gboolean store_hosted; /* the launcher hosts the store, so rank 0 must not */
    char run_id[RT_WORLD_RUN_ID_MAX];
    rt_launcher launcher; /* whose variables these values came from */
} rt_world;

/* Fills world for a process alone: rank 0 of 1 on 127.0.0.1:29500, run id "default". */
void rt_world_init_single(rt_world *world);

/* Reads the world from envp, an environment block in the form of g_get_environ() ("NAME=value"
 * strings, NULL-terminated), or from this process's environment when envp is NULL.
 * Returns FALSE with error (RT_ERROR_INVALID_ARG) when a value is not a number, out of range or
 * inconsistent with another; the message names the variable and its value. world is only
 * written on success. */
gboolean rt_world_from_environ(rt_world *world, const char *const *envp, GError **error);

/* rt_world_from_environ(world, NULL, error). */
gboolean rt_world_from_env(rt_world *world, GError **error);

/* "none", "torchrun/robotrain launch", "mpirun", "srun". Returns (transfer none) a static string. */
const char *rt_launcher_name(rt_launcher launcher);

/* One line for logs: "rank 1 of 4 (local 1 of 2 on node 0 of 2), master 10.0.0.1:29500,
 * store port 29500, run default, from torchrun/robotrain launch variables".
 * Returns (transfer full) a string to g_free(). */
char *rt_world_describe(const rt_world *world);

G_END_DECLS

#endif
